/*
 * sft_conf_file.h -- the configuration parser, directive tables and the
 * generic setters ("slots") modules use to fill their configuration.
 */

#ifndef _SFT_CONF_FILE_H_INCLUDED_
#define _SFT_CONF_FILE_H_INCLUDED_


/* argument counts */
#define SFT_CONF_NOARGS      0x00000001
#define SFT_CONF_TAKE1       0x00000002
#define SFT_CONF_TAKE2       0x00000004
#define SFT_CONF_TAKE3       0x00000008
#define SFT_CONF_TAKE4       0x00000010
#define SFT_CONF_TAKE5       0x00000020
#define SFT_CONF_TAKE6       0x00000040
#define SFT_CONF_TAKE7       0x00000080
#define SFT_CONF_MAX_ARGS    8

#define SFT_CONF_TAKE12      (SFT_CONF_TAKE1|SFT_CONF_TAKE2)
#define SFT_CONF_TAKE13      (SFT_CONF_TAKE1|SFT_CONF_TAKE3)
#define SFT_CONF_TAKE23      (SFT_CONF_TAKE2|SFT_CONF_TAKE3)
#define SFT_CONF_TAKE123     (SFT_CONF_TAKE1|SFT_CONF_TAKE2|SFT_CONF_TAKE3)

#define SFT_CONF_ARGS_NUMBER 0x000000ff
#define SFT_CONF_BLOCK       0x00000100
#define SFT_CONF_FLAG        0x00000200
#define SFT_CONF_ANY         0x00000400
#define SFT_CONF_1MORE       0x00000800
#define SFT_CONF_2MORE       0x00001000

/* where a directive is allowed */
#define SFT_DIRECT_CONF      0x00010000
#define SFT_MAIN_CONF        0x01000000
#define SFT_EVENT_CONF       0x02000000
#define SFT_PROTO_MAIN_CONF  0x04000000
#define SFT_PROTO_SRV_CONF   0x08000000
#define SFT_STORAGE_CONF     0x10000000
#define SFT_ANY_CONF         0xFF000000

#define SFT_CONF_UNSET       -1
#define SFT_CONF_UNSET_UINT  (sft_uint_t) -1
#define SFT_CONF_UNSET_PTR   (void *) -1
#define SFT_CONF_UNSET_SIZE  (size_t) -1
#define SFT_CONF_UNSET_MSEC  (sft_msec_t) -1

#define SFT_CONF_OK          NULL
#define SFT_CONF_ERROR       (void *) -1

#define SFT_CONF_BLOCK_START 1
#define SFT_CONF_BLOCK_DONE  2
#define SFT_CONF_FILE_DONE   3

#define SFT_CONF_MAX_FILE_SIZE  (4 * 1024 * 1024)
#define SFT_CONF_MAX_INCLUDE_DEPTH  32


/*
 * What the directive reference (siftpd --directives, docs/directives.md,
 * siftpd.conf(5)) says of a directive; its context comes from the type.
 */
typedef struct {
    const char           *syntax;       /* the arguments: "on | off" */
    const char           *dflt;         /* "" when there is none */
    const char           *text;         /* one sentence */
} sft_command_doc_t;

struct sft_command_s {
    sft_str_t             name;
    sft_uint_t            type;
    char               *(*set)(sft_conf_t *cf, sft_command_t *cmd, void *conf);
    sft_uint_t            conf;
    sft_uint_t            offset;
    void                 *post;
    sft_command_doc_t     doc;
};

#define sft_command_doc(syntax, dflt, text)  { syntax, dflt, text }

#define sft_null_command                                                      \
    { sft_null_string, 0, NULL, 0, 0, NULL, { NULL, NULL, NULL } }


typedef struct sft_conf_file_s  sft_conf_file_t;

struct sft_conf_file_s {
    sft_str_t             name;
    u_char               *start;
    u_char               *pos;
    u_char               *end;
    sft_uint_t            line;
    sft_uint_t            param;     /* "-g" text, not a file */
    sft_conf_file_t      *parent;    /* the file that included this one */
    dev_t                 dev;       /* which file, to find include loops */
    ino_t                 ino;
};


typedef struct {
    sft_str_t             name;
    sft_str_t             content;
} sft_conf_dump_t;


typedef char *(*sft_conf_handler_pt)(sft_conf_t *cf, sft_command_t *dummy,
    void *conf);


struct sft_conf_s {
    char                 *name;
    sft_array_t          *args;

    sft_cycle_t          *cycle;
    sft_pool_t           *pool;
    sft_pool_t           *temp_pool;
    sft_conf_file_t      *conf_file;
    sft_log_t            *log;

    void                 *ctx;
    sft_uint_t            module_type;
    sft_uint_t            cmd_type;

    sft_conf_handler_pt   handler;
    void                 *handler_conf;

    sft_array_t          *param_names;  /* directives given with "-g" */
};


typedef struct {
    sft_str_t             name;
    sft_uint_t            value;
} sft_conf_enum_t;


char *sft_conf_param(sft_conf_t *cf);
char *sft_conf_parse(sft_conf_t *cf, sft_str_t *filename);
char *sft_conf_include(sft_conf_t *cf, sft_command_t *cmd, void *conf);

sft_int_t sft_conf_full_name(sft_cycle_t *cycle, sft_str_t *name);
u_char *sft_conf_load_file(sft_conf_t *cf, sft_str_t *name, size_t max,
    sft_pool_t *pool, size_t *len);

extern char  sft_conf_last_error[];

void sft_conf_log_error(sft_uint_t level, sft_conf_t *cf, sft_err_t err,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));


char *sft_conf_set_flag_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_conf_set_str_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_conf_set_path_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_conf_set_num_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_conf_set_size_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_conf_set_off_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_conf_set_msec_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_conf_set_sec_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_conf_set_enum_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf);


#define sft_conf_init_value(conf, default)                                   \
    if (conf == SFT_CONF_UNSET) {                                            \
        conf = default;                                                      \
    }

#define sft_conf_init_uint_value(conf, default)                              \
    if (conf == SFT_CONF_UNSET_UINT) {                                       \
        conf = default;                                                      \
    }

#define sft_conf_init_size_value(conf, default)                              \
    if (conf == SFT_CONF_UNSET_SIZE) {                                       \
        conf = default;                                                      \
    }

#define sft_conf_init_msec_value(conf, default)                              \
    if (conf == SFT_CONF_UNSET_MSEC) {                                       \
        conf = default;                                                      \
    }

#define sft_conf_merge_value(conf, prev, default)                            \
    if (conf == SFT_CONF_UNSET) {                                            \
        conf = (prev == SFT_CONF_UNSET) ? default : prev;                    \
    }

#define sft_conf_merge_uint_value(conf, prev, default)                       \
    if (conf == SFT_CONF_UNSET_UINT) {                                       \
        conf = (prev == SFT_CONF_UNSET_UINT) ? default : prev;               \
    }

#define sft_conf_merge_msec_value(conf, prev, default)                       \
    if (conf == SFT_CONF_UNSET_MSEC) {                                       \
        conf = (prev == SFT_CONF_UNSET_MSEC) ? default : prev;               \
    }

#define sft_conf_merge_sec_value(conf, prev, default)                        \
    if (conf == SFT_CONF_UNSET) {                                            \
        conf = (prev == SFT_CONF_UNSET) ? default : prev;                    \
    }

#define sft_conf_merge_size_value(conf, prev, default)                       \
    if (conf == SFT_CONF_UNSET_SIZE) {                                       \
        conf = (prev == SFT_CONF_UNSET_SIZE) ? default : prev;               \
    }

#define sft_conf_merge_ptr_value(conf, prev, default)                        \
    if (conf == SFT_CONF_UNSET_PTR) {                                        \
        conf = (prev == SFT_CONF_UNSET_PTR) ? default : prev;                \
    }

#define sft_conf_merge_str_value(conf, prev, default)                        \
    if (conf.data == NULL) {                                                 \
        if (prev.data) {                                                     \
            conf.len = prev.len;                                             \
            conf.data = prev.data;                                           \
        } else {                                                             \
            conf.len = sizeof(default) - 1;                                  \
            conf.data = (u_char *) default;                                  \
        }                                                                    \
    }


#endif /* _SFT_CONF_FILE_H_INCLUDED_ */
