/*
 * sft_core_module.c -- the main-context directives: processes, pid file,
 * user, the seccomp filter, error log, limits, dynamic modules and the
 * shared buffer pool.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_seccomp.h>
#include <sft_reload.h>


/*
 * A worker inherits one wake-up eventfd per process slot of the buffer
 * pool before it opens anything of its own; below this it could not even
 * create its epoll instance.  A warning, not a refusal: the master copes
 * with a worker that dies at its start (it respawns it after a growing
 * delay), and a limit this low is how the tests make one die.
 */
#define SFT_RLIMIT_NOFILE_MIN  (SFT_MAX_PROCESSES + 64)


static void *sft_core_module_create_conf(sft_cycle_t *cycle);
static char *sft_core_module_init_conf(sft_cycle_t *cycle, void *conf);
static char *sft_set_worker_processes(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_set_user(sft_conf_t *cf, sft_command_t *cmd, void *conf);
static sft_uint_t sft_no_such_name(sft_err_t err);
static char *sft_set_error_log(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);


static sft_command_t  sft_core_commands[] = {

    { sft_string("daemon"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      0,
      offsetof(sft_core_conf_t, daemon),
      NULL,
      sft_command_doc("on | off", "on",
          "Run the master in the background, detached from the terminal.") },

    { sft_string("master_process"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      0,
      offsetof(sft_core_conf_t, master),
      NULL,
      sft_command_doc("on | off", "on",
          "Run a master that forks the workers; off serves in one process, "
          "for debugging.") },

    { sft_string("worker_processes"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_set_worker_processes,
      0,
      0,
      NULL,
      sft_command_doc("number | auto", "1",
          "How many workers serve clients; auto starts one per CPU.") },

    { sft_string("worker_shutdown_timeout"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      0,
      offsetof(sft_core_conf_t, shutdown_timeout),
      NULL,
      sft_command_doc("time", "",
          "How long a worker draining after a reload or quit may keep its "
          "sessions before it closes them; unset waits for the last one.") },

    { sft_string("worker_rlimit_nofile"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      0,
      offsetof(sft_core_conf_t, rlimit_nofile),
      NULL,
      sft_command_doc("number", "",
          "The limit on open files (RLIMIT_NOFILE) of the workers; under "
          "128, the descriptors a worker holds before it serves anyone and "
          "a few connections, is warned about.") },

    { sft_string("seccomp"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_enum_slot,
      0,
      offsetof(sft_core_conf_t, seccomp),
      &sft_seccomp_modes,
      sft_command_doc("on | log | off", "on",
          "Confine each worker to an allow-list of system calls: on refuses "
          "others (ENOSYS, logged), log only logs them.") },

    { sft_string("pid"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_path_slot,
      0,
      offsetof(sft_core_conf_t, pid),
      NULL,
      sft_command_doc("file", "var/siftpd.pid",
          "The file the master writes its process id to; configure's "
          "--pid-path sets the default.") },

    { sft_string("user"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE12,
      sft_set_user,
      0,
      0,
      NULL,
      sft_command_doc("user [group]", "",
          "The user and group the workers switch to when siftpd starts as "
          "root; the group defaults to the user's.") },

    { sft_string("error_log"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE12,
      sft_set_error_log,
      0,
      0,
      NULL,
      sft_command_doc("file | stderr [level]", "stderr error",
          "Where errors are logged, and from which level: debug, info, "
          "notice, warn, error, crit, alert, emerg.") },

    { sft_string("load_module"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_load_module,
      0,
      0,
      NULL,
      sft_command_doc("file", "",
          "Load a dynamic module; only in the main context, before any "
          "block.") },

    { sft_string("buffer_pool_bytes"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_size_slot,
      0,
      offsetof(sft_core_conf_t, buffer_pool_bytes),
      NULL,
      sft_command_doc("size", "64m",
          "The memory shared by all workers for the chunks transfers move "
          "through.") },

    { sft_string("transfer_chunk_bytes"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_size_slot,
      0,
      offsetof(sft_core_conf_t, transfer_chunk_bytes),
      NULL,
      sft_command_doc("size", "256k",
          "The size of one chunk of the shared buffer pool.") },

    sft_null_command
};


static sft_core_module_t  sft_core_module_ctx = {
    sft_string("core"),
    sft_core_module_create_conf,
    sft_core_module_init_conf
};


sft_module_t  sft_core_module = {
    SFT_MODULE_V1,
    &sft_core_module_ctx,                  /* module context */
    sft_core_commands,                     /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static void *
sft_core_module_create_conf(sft_cycle_t *cycle)
{
    sft_core_conf_t  *ccf;

    ccf = sft_pcalloc(cycle->pool, sizeof(sft_core_conf_t));
    if (ccf == NULL) {
        return NULL;
    }

    ccf->daemon = SFT_CONF_UNSET;
    ccf->master = SFT_CONF_UNSET;
    ccf->worker_processes = SFT_CONF_UNSET;
    ccf->shutdown_timeout = SFT_CONF_UNSET_MSEC;
    ccf->rlimit_nofile = SFT_CONF_UNSET;
    ccf->seccomp = SFT_CONF_UNSET_UINT;
    ccf->user = (uid_t) SFT_CONF_UNSET_UINT;
    ccf->group = (gid_t) SFT_CONF_UNSET_UINT;
    ccf->buffer_pool_bytes = SFT_CONF_UNSET_SIZE;
    ccf->transfer_chunk_bytes = SFT_CONF_UNSET_SIZE;

    return ccf;
}


static char *
sft_core_module_init_conf(sft_cycle_t *cycle, void *conf)
{
    sft_core_conf_t  *ccf = conf;

    sft_conf_init_value(ccf->daemon, 1);
    sft_conf_init_value(ccf->master, 1);
    sft_conf_init_value(ccf->worker_processes, 1);
    sft_conf_init_msec_value(ccf->shutdown_timeout, 0);
    sft_conf_init_size_value(ccf->buffer_pool_bytes, 64 * 1024 * 1024);
    sft_conf_init_size_value(ccf->transfer_chunk_bytes, 256 * 1024);

    if (ccf->pid.len == 0) {
        sft_str_set(&ccf->pid, SFT_PID_PATH);

        if (sft_conf_full_name(cycle, &ccf->pid) != SFT_OK) {
            return SFT_CONF_ERROR;
        }
    }

    if (cycle->new_log.log_level == 0) {
        cycle->new_log.log_level = SFT_LOG_ERR;
    }

    if (ccf->transfer_chunk_bytes < 4096
        || ccf->transfer_chunk_bytes % 4096 != 0)
    {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "\"transfer_chunk_bytes\" must be a multiple of 4k");
        return SFT_CONF_ERROR;
    }

    if (ccf->buffer_pool_bytes / ccf->transfer_chunk_bytes < 2) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "\"buffer_pool_bytes\" must hold at least two chunks "
                      "of \"transfer_chunk_bytes\"");
        return SFT_CONF_ERROR;
    }

    if (ccf->rlimit_nofile != SFT_CONF_UNSET
        && ccf->rlimit_nofile < SFT_RLIMIT_NOFILE_MIN)
    {
        sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                      "\"worker_rlimit_nofile\" is under %d: a worker "
                      "holds %d descriptors of the buffer pool before it "
                      "serves anyone and may not start",
                      SFT_RLIMIT_NOFILE_MIN, SFT_MAX_PROCESSES);
    }

    if (sft_core_stats_register(cycle) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    if (sft_buffer_zone_add(cycle, ccf->buffer_pool_bytes,
                            ccf->transfer_chunk_bytes)
        != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    if (!sft_test_config && !sft_signaller
        && sft_reload_zone_add(cycle) != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static char *
sft_set_worker_processes(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    long              n;
    sft_str_t        *value;
    sft_core_conf_t  *ccf = conf;

    (void) cmd;

    if (ccf->worker_processes != SFT_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (sft_str_eq(&value[1], "auto")) {
        n = sysconf(_SC_NPROCESSORS_ONLN);
        ccf->worker_processes = (n > 0) ? n : 1;

        if (ccf->worker_processes > SFT_MAX_PROCESSES / 2) {
            ccf->worker_processes = SFT_MAX_PROCESSES / 2;
        }

        return SFT_CONF_OK;
    }

    ccf->worker_processes = sft_atoi(value[1].data, value[1].len);

    if (ccf->worker_processes == SFT_ERROR || ccf->worker_processes < 1) {
        return "invalid value";
    }

    if (ccf->worker_processes > SFT_MAX_PROCESSES / 2) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "\"worker_processes\" must be at most %d",
                           SFT_MAX_PROCESSES / 2);
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


/*
 * Whether getpwnam() or getgrnam() returning NULL means the name is not in
 * the database: glibc leaves errno alone then, other NSS modules set one of
 * the errors POSIX lists for it.
 */

static sft_uint_t
sft_no_such_name(sft_err_t err)
{
    return err == 0 || err == ENOENT || err == ESRCH || err == EBADF
           || err == EPERM;
}


static char *
sft_set_user(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    char             *group;
    sft_str_t        *value;
    struct group     *grp;
    struct passwd    *pwd;
    sft_core_conf_t  *ccf = conf;

    (void) cmd;

    if (ccf->user != (uid_t) SFT_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;
    ccf->username = value[1];

    if (geteuid() != 0) {
        sft_conf_log_error(SFT_LOG_WARN, cf, 0,
                           "the \"user\" directive makes sense only if the "
                           "master process runs with super-user privileges, "
                           "ignored");
        ccf->user = getuid();
        ccf->group = getgid();
        return SFT_CONF_OK;
    }

    sft_set_errno(0);

    pwd = getpwnam((char *) value[1].data);
    if (pwd == NULL) {
        if (sft_no_such_name(sft_errno)) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "user \"%s\" does not exist", value[1].data);
        } else {
            sft_conf_log_error(SFT_LOG_EMERG, cf, sft_errno,
                               "getpwnam(\"%s\") failed", value[1].data);
        }

        return SFT_CONF_ERROR;
    }

    ccf->user = pwd->pw_uid;
    ccf->group = pwd->pw_gid;

    group = NULL;

    if (cf->args->nelts == 3) {
        group = (char *) value[2].data;
    }

    if (group) {
        sft_set_errno(0);

        grp = getgrnam(group);
        if (grp == NULL) {
            if (sft_no_such_name(sft_errno)) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "group \"%s\" does not exist", group);
            } else {
                sft_conf_log_error(SFT_LOG_EMERG, cf, sft_errno,
                                   "getgrnam(\"%s\") failed", group);
            }

            return SFT_CONF_ERROR;
        }

        ccf->group = grp->gr_gid;
    }

    return SFT_CONF_OK;
}


/*
 * Who the workers of cycle run as: what a root master gives the files and
 * directories the workers must write or re-read; (uid_t) -1 and
 * (gid_t) -1 (chown()'s "unchanged") when no switch happens.
 */

void
sft_core_workers_owner(sft_cycle_t *cycle, uid_t *uid, gid_t *gid)
{
    sft_core_conf_t  *ccf;

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    *uid = (uid_t) -1;
    *gid = (gid_t) -1;

    if (geteuid() == 0 && ccf->username.len) {
        *uid = ccf->user;
        *gid = ccf->group;
    }
}


/*
 * Whether the workers of cycle may read (S_IROTH) or write (S_IWOTH) a file
 * of that status by its permission bits; 1 when no switch happens.
 */

sft_uint_t
sft_core_workers_may(sft_cycle_t *cycle, struct stat *sb, mode_t other)
{
    uid_t  uid;
    gid_t  gid;

    sft_core_workers_owner(cycle, &uid, &gid);

    if (uid == (uid_t) -1) {
        return 1;
    }

    if (sb->st_uid == uid) {
        return (sb->st_mode & (other << 6)) != 0;
    }

    if (sb->st_gid == gid) {
        return (sb->st_mode & (other << 3)) != 0;
    }

    return (sb->st_mode & other) != 0;
}


static char *
sft_set_error_log(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_int_t     level;
    sft_str_t    *value, name;
    sft_cycle_t  *cycle;

    (void) cmd;
    (void) conf;

    cycle = cf->cycle;

    if (cycle->log_file.name.len) {
        return "is duplicate";
    }

    value = cf->args->elts;
    name = value[1];

    if (!sft_str_eq(&name, "stderr")) {
        if (sft_conf_full_name(cycle, &name) != SFT_OK) {
            return SFT_CONF_ERROR;
        }
    }

    level = SFT_LOG_ERR;

    if (cf->args->nelts == 3) {
        level = sft_log_parse_level(&value[2]);

        if (level == SFT_ERROR) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "invalid log level \"%s\"", value[2].data);
            return SFT_CONF_ERROR;
        }
    }

    cycle->log_file.name = name;
    cycle->new_log.log_level = level;

    return SFT_CONF_OK;
}
