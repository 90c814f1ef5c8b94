/*
 * sft_module.h -- the module object, module types, the ABI signature a
 * dynamic module must carry, and the registry of a cycle's modules.
 */

#ifndef _SFT_MODULE_H_INCLUDED_
#define _SFT_MODULE_H_INCLUDED_


#define SFT_MODULE_UNSET_INDEX  (sft_uint_t) -1
#define SFT_MAX_DYNAMIC_MODULES 128

#define SFT_CONF_MODULE     1
#define SFT_CORE_MODULE     2
#define SFT_EVENT_MODULE    3
#define SFT_STORAGE_MODULE  4
#define SFT_HTTP_MODULE     5
#define SFT_FTP_MODULE      6
#define SFT_SFTP_MODULE     7


/* the build options a module's structures depend on, as "0"/"1" flags */

#define SFT_SIG_STR_(x)  #x
#define SFT_SIG_STR(x)   SFT_SIG_STR_(x)

#if (SFT_DEBUG)
#define SFT_SIG_DEBUG    "1"
#else
#define SFT_SIG_DEBUG    "0"
#endif

#if (SFT_HAVE_OPENSSL)
#define SFT_SIG_SSL      "1"
#else
#define SFT_SIG_SSL      "0"
#endif

#if (SFT_HAVE_IO_URING)
#define SFT_SIG_URING    "1"
#else
#define SFT_SIG_URING    "0"
#endif

#if (SFT_HAVE_LIBSSH)
#define SFT_SIG_SSH      "1"
#else
#define SFT_SIG_SSH      "0"
#endif

#if (SFT_HAVE_LIBCURL)
#define SFT_SIG_CURL     "1"
#else
#define SFT_SIG_CURL     "0"
#endif

#if (SFT_SANITIZERS)
#define SFT_SIG_SAN      "1"
#else
#define SFT_SIG_SAN      "0"
#endif

#define SFT_MODULE_SIGNATURE                                                  \
    SFT_SIG_STR(SIZEOF_VOID_P) "," SFT_SIG_STR(SIZEOF_OFF_T) ","             \
    SFT_SIG_STR(SIZEOF_TIME_T) ","                                           \
    SFT_SIG_DEBUG SFT_SIG_SSL SFT_SIG_URING SFT_SIG_SSH SFT_SIG_CURL          \
    SFT_SIG_SAN

#define SFT_MODULE_V1                                                         \
    SFT_MODULE_UNSET_INDEX, SFT_MODULE_UNSET_INDEX,                           \
    NULL, 0, 0, SFT_VERSION_NUM, SFT_MODULE_SIGNATURE

/*
 * the hooks after exit_master: process_exited, processes_changed, then six
 * spare ones
 */
#define SFT_MODULE_V1_SPARE    0, 0, 0, 0, 0, 0
#define SFT_MODULE_V1_PADDING  NULL, NULL, SFT_MODULE_V1_SPARE


struct sft_module_s {
    sft_uint_t            ctx_index;
    sft_uint_t            index;

    char                 *name;

    sft_uint_t            spare0;
    sft_uint_t            spare1;

    sft_uint_t            version;
    const char           *signature;

    void                 *ctx;
    sft_command_t        *commands;
    sft_uint_t            type;

    sft_int_t           (*init_master)(sft_log_t *log);
    sft_int_t           (*init_module)(sft_cycle_t *cycle);
    sft_int_t           (*init_process)(sft_cycle_t *cycle);
    void                (*exit_process)(sft_cycle_t *cycle);
    void                (*exit_master)(sft_cycle_t *cycle);

    /*
     * in the master, when a child process has exited and before its slot
     * is refilled: what it held in shared memory is given back
     */
    void                (*process_exited)(sft_cycle_t *cycle,
                                          sft_uint_t slot, pid_t pid);

    /*
     * once workers were started or dead ones replaced or dropped (every
     * slot holds a live process or none): in the sweeper, a short-lived
     * child of the master confined as a worker (src/core/sft_sweeper.c),
     * so that what it reads is never read by the master
     */
    void                (*processes_changed)(sft_cycle_t *cycle);

    uintptr_t             spare_hook2;
    uintptr_t             spare_hook3;
    uintptr_t             spare_hook4;
    uintptr_t             spare_hook5;
    uintptr_t             spare_hook6;
    uintptr_t             spare_hook7;
};


/* the context of SFT_CORE_MODULE modules */

typedef struct {
    sft_str_t             name;
    void               *(*create_conf)(sft_cycle_t *cycle);
    char               *(*init_conf)(sft_cycle_t *cycle, void *conf);
} sft_core_module_t;


sft_int_t sft_preinit_modules(void);
sft_int_t sft_cycle_modules(sft_cycle_t *cycle);
sft_int_t sft_init_modules(sft_cycle_t *cycle);
sft_int_t sft_count_modules(sft_cycle_t *cycle, sft_uint_t type);
sft_int_t sft_add_module(sft_conf_t *cf, sft_str_t *file,
    sft_module_t *module, char **order);
char *sft_load_module(sft_conf_t *cf, sft_command_t *cmd, void *conf);


extern sft_module_t  *sft_modules[];
extern char          *sft_module_names[];
extern sft_uint_t     sft_max_module;


#endif /* _SFT_MODULE_H_INCLUDED_ */
