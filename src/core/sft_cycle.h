/*
 * sft_cycle.h -- a cycle is one parsed configuration with everything built
 * from it: modules, listening sockets, shared zones.  A reload builds a new
 * cycle beside the running one and drops whichever loses.
 */

#ifndef _SFT_CYCLE_H_INCLUDED_
#define _SFT_CYCLE_H_INCLUDED_


#define SFT_CYCLE_POOL_SIZE  (16 * 1024)


struct sft_cycle_s {
    void                ****conf_ctx;
    sft_pool_t             *pool;

    sft_log_t              *log;
    sft_log_t               new_log;
    sft_log_file_t          log_file;

    sft_module_t          **modules;
    sft_uint_t              modules_n;
    sft_uint_t              modules_used;
    sft_uint_t             *saved_ctx_index;   /* restored on a failed reload */

    sft_array_t             listening;         /* sft_listening_t */
    sft_array_t             shared_memory;     /* sft_shm_zone_t * */
    sft_array_t             stats;             /* sft_stat_t, registered */
    sft_uint_t              stat_values;       /* values in a stats slot */
    sft_array_t             config_dump;       /* sft_conf_dump_t */
    sft_array_t             open_files;        /* sft_log_file_t *, besides
                                                  the error log: reopened
                                                  on USR1 */

    sft_connection_t       *connections;
    sft_connection_t       *free_connections;
    sft_uint_t              free_connection_n;
    sft_uint_t              connection_n;
    sft_event_t            *read_events;
    sft_event_t            *write_events;

    sft_cycle_t            *old_cycle;

    sft_str_t               conf_file;
    sft_str_t               conf_param;
    sft_str_t               prefix;
};


typedef struct {
    sft_flag_t              daemon;
    sft_flag_t              master;
    sft_int_t               worker_processes;
    sft_msec_t              shutdown_timeout;
    sft_int_t               rlimit_nofile;

    sft_uint_t              seccomp;

    sft_str_t               pid;
    sft_str_t               username;
    uid_t                   user;
    gid_t                   group;

    size_t                  buffer_pool_bytes;
    size_t                  transfer_chunk_bytes;
    sft_shm_zone_t         *buffer_pool_zone;
} sft_core_conf_t;


#define sft_get_conf(conf_ctx, module)  conf_ctx[module.index]


sft_cycle_t *sft_init_cycle(sft_cycle_t *old_cycle);
sft_int_t sft_create_pidfile(sft_str_t *name, sft_log_t *log);
void sft_delete_pidfile(sft_cycle_t *cycle);
sft_int_t sft_signal_process(sft_cycle_t *cycle, char *sig);
void sft_reopen_files(sft_cycle_t *cycle);
void sft_core_workers_owner(sft_cycle_t *cycle, uid_t *uid, gid_t *gid);
sft_uint_t sft_core_workers_may(sft_cycle_t *cycle, struct stat *sb,
    mode_t other);


extern volatile sft_cycle_t  *sft_cycle;
extern sft_uint_t             sft_test_config;
extern sft_uint_t             sft_dump_config;
extern sft_uint_t             sft_quiet_mode;
extern sft_uint_t             sft_signaller;
extern sft_module_t           sft_core_module;


#endif /* _SFT_CYCLE_H_INCLUDED_ */
