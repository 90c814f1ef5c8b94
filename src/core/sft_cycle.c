/*
 * sft_cycle.c -- building a cycle from the configuration: parse, create the
 * shared zones (reusing the old cycle's where they match), take over or open
 * listening sockets, and only then let go of the old cycle.
 */

#include <sft_config.h>
#include <sft_core.h>


static void sft_cycle_restore_modules(sft_cycle_t *cycle);
static sft_int_t sft_cycle_shared_memory(sft_cycle_t *cycle,
    sft_cycle_t *old_cycle);
static void sft_cycle_release_old(sft_cycle_t *cycle,
    sft_cycle_t *old_cycle);
static void sft_cycle_fail(sft_cycle_t *cycle, sft_cycle_t *old_cycle);
static void sft_cycle_set_log(sft_cycle_t *cycle);
static sft_int_t sft_reopen_file(sft_log_file_t *file, uid_t uid, gid_t gid,
    sft_log_t *log);


volatile sft_cycle_t  *sft_cycle;
sft_uint_t             sft_test_config;
sft_uint_t             sft_dump_config;
sft_uint_t             sft_quiet_mode;
sft_uint_t             sft_signaller;


sft_cycle_t *
sft_init_cycle(sft_cycle_t *old_cycle)
{
    void               *rv;
    sft_uint_t          i;
    sft_log_t          *log;
    sft_conf_t          conf;
    sft_pool_t         *pool;
    sft_cycle_t        *cycle;
    sft_module_t       *module;
    sft_core_module_t  *cmodule;

    log = old_cycle->log;

    pool = sft_create_pool(SFT_CYCLE_POOL_SIZE, log);
    if (pool == NULL) {
        return NULL;
    }

    pool->log = log;

    cycle = sft_pcalloc(pool, sizeof(sft_cycle_t));
    if (cycle == NULL) {
        sft_destroy_pool(pool);
        return NULL;
    }

    cycle->pool = pool;
    cycle->log = log;
    cycle->old_cycle = old_cycle;

    /*
     * copies: the first old cycle's pool is freed once this one works, and
     * its strings were in it (a reload then read freed memory)
     */

    cycle->conf_file.len = old_cycle->conf_file.len;
    cycle->conf_file.data = sft_pstrdup(pool, &old_cycle->conf_file);
    cycle->conf_param.len = old_cycle->conf_param.len;
    cycle->conf_param.data = old_cycle->conf_param.len
                             ? sft_pstrdup(pool, &old_cycle->conf_param)
                             : NULL;
    cycle->prefix.len = old_cycle->prefix.len;
    cycle->prefix.data = sft_pstrdup(pool, &old_cycle->prefix);

    if (cycle->conf_file.data == NULL || cycle->prefix.data == NULL
        || (old_cycle->conf_param.len && cycle->conf_param.data == NULL))
    {
        sft_destroy_pool(pool);
        return NULL;
    }

    if (sft_array_init(&cycle->listening, pool, 4, sizeof(sft_listening_t))
        != SFT_OK
        || sft_array_init(&cycle->shared_memory, pool, 4,
                          sizeof(sft_shm_zone_t *)) != SFT_OK
        || sft_array_init(&cycle->stats, pool, 32, sizeof(sft_stat_t))
           != SFT_OK
        || sft_array_init(&cycle->open_files, pool, 2,
                          sizeof(sft_log_file_t *)) != SFT_OK
        || sft_array_init(&cycle->config_dump, pool, 2,
                          sizeof(sft_conf_dump_t)) != SFT_OK)
    {
        sft_destroy_pool(pool);
        return NULL;
    }

    /* remember the module numbering the old cycle runs with */

    if (old_cycle->modules) {
        old_cycle->saved_ctx_index = sft_palloc(old_cycle->pool,
                                   old_cycle->modules_n * sizeof(sft_uint_t));
        if (old_cycle->saved_ctx_index == NULL) {
            sft_destroy_pool(pool);
            return NULL;
        }

        for (i = 0; i < old_cycle->modules_n; i++) {
            old_cycle->saved_ctx_index[i] = old_cycle->modules[i]->ctx_index;
        }
    }

    if (sft_cycle_modules(cycle) != SFT_OK) {
        sft_destroy_pool(pool);
        return NULL;
    }

    cycle->conf_ctx = sft_pcalloc(pool, sft_max_module * sizeof(void *));
    if (cycle->conf_ctx == NULL) {
        sft_destroy_pool(pool);
        return NULL;
    }

    for (i = 0; cycle->modules[i]; i++) {
        module = cycle->modules[i];

        if (module->type != SFT_CORE_MODULE) {
            continue;
        }

        cmodule = module->ctx;

        if (cmodule->create_conf) {
            rv = cmodule->create_conf(cycle);
            if (rv == NULL) {
                sft_destroy_pool(pool);
                return NULL;
            }
            cycle->conf_ctx[module->index] = rv;
        }
    }

    sft_memzero(&conf, sizeof(sft_conf_t));

    conf.args = sft_array_create(pool, 10, sizeof(sft_str_t));
    if (conf.args == NULL) {
        sft_destroy_pool(pool);
        return NULL;
    }

    conf.temp_pool = sft_create_pool(SFT_CYCLE_POOL_SIZE, log);
    if (conf.temp_pool == NULL) {
        sft_destroy_pool(pool);
        return NULL;
    }

    conf.ctx = cycle->conf_ctx;
    conf.cycle = cycle;
    conf.pool = pool;
    conf.log = log;
    conf.module_type = SFT_CORE_MODULE;
    conf.cmd_type = SFT_MAIN_CONF;

    if (sft_conf_param(&conf) != SFT_CONF_OK
        || sft_conf_parse(&conf, &cycle->conf_file) != SFT_CONF_OK)
    {
        sft_destroy_pool(conf.temp_pool);
        sft_cycle_fail(cycle, old_cycle);
        return NULL;
    }

    sft_destroy_pool(conf.temp_pool);

    for (i = 0; cycle->modules[i]; i++) {
        module = cycle->modules[i];

        if (module->type != SFT_CORE_MODULE) {
            continue;
        }

        cmodule = module->ctx;

        if (cmodule->init_conf) {
            if (cmodule->init_conf(cycle,
                                   cycle->conf_ctx[module->index])
                == SFT_CONF_ERROR)
            {
                sft_cycle_fail(cycle, old_cycle);
                return NULL;
            }
        }
    }

    /* every module has registered its statistics: size their zone */

    if (sft_stats_zone_add(cycle) != SFT_OK) {
        sft_cycle_fail(cycle, old_cycle);
        return NULL;
    }

    if (sft_test_config || sft_signaller) {
        return cycle;
    }

    /* the new error log */

    if (cycle->log_file.name.len == 0) {
        sft_str_set(&cycle->log_file.name, "stderr");
    }

    cycle->log_file.fd = SFT_INVALID_FILE;

    if (sft_log_open_file(&cycle->log_file, log) != SFT_OK) {
        sft_cycle_fail(cycle, old_cycle);
        return NULL;
    }

    cycle->new_log.file = &cycle->log_file;

    if (sft_cycle_shared_memory(cycle, old_cycle) != SFT_OK) {
        sft_cycle_fail(cycle, old_cycle);
        return NULL;
    }

    if (sft_open_listening_sockets(cycle, old_cycle) != SFT_OK) {
        sft_cycle_fail(cycle, old_cycle);
        return NULL;
    }

    if (sft_init_modules(cycle) != SFT_OK) {
        sft_cycle_fail(cycle, old_cycle);
        return NULL;
    }

    /* from here on the new cycle wins */

    cycle->log = &cycle->new_log;
    pool->log = cycle->log;

    sft_cycle_set_log(cycle);

    sft_cycle_release_old(cycle, old_cycle);

    return cycle;
}


static sft_int_t
sft_cycle_shared_memory(sft_cycle_t *cycle, sft_cycle_t *old_cycle)
{
    sft_uint_t       i, n;
    sft_shm_zone_t  *zone, *oz, **zones, **ozones;

    zones = cycle->shared_memory.elts;

    for (i = 0; i < cycle->shared_memory.nelts; i++) {
        zone = zones[i];
        zone->shm.log = cycle->log;

        if (zone->shm.size == 0) {
            sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                          "zero size shared memory zone \"%.*s\"",
                          SFT_STR_FMT(&zone->shm.name));
            return SFT_ERROR;
        }

        if (old_cycle->shared_memory.nelts) {
            ozones = old_cycle->shared_memory.elts;

            for (n = 0; n < old_cycle->shared_memory.nelts; n++) {
                oz = ozones[n];

                if (oz->shm.addr == NULL
                    || zone->shm.name.len != oz->shm.name.len
                    || sft_strncmp(zone->shm.name.data, oz->shm.name.data,
                                   zone->shm.name.len) != 0
                    || zone->tag != oz->tag
                    || zone->shm.size != oz->shm.size)
                {
                    continue;
                }

                zone->shm.addr = oz->shm.addr;

                if (zone->init(zone, oz->data) != SFT_OK) {
                    return SFT_ERROR;
                }

                goto next;
            }
        }

        if (sft_shm_alloc(&zone->shm) != SFT_OK) {
            return SFT_ERROR;
        }

        if (zone->init(zone, NULL) != SFT_OK) {
            return SFT_ERROR;
        }

    next:

        continue;
    }

    return SFT_OK;
}


static sft_uint_t
sft_cycle_zone_kept(sft_cycle_t *cycle, sft_shm_zone_t *oz)
{
    sft_uint_t       i;
    sft_shm_zone_t **zones;

    zones = cycle->shared_memory.elts;

    for (i = 0; i < cycle->shared_memory.nelts; i++) {
        if (zones[i]->shm.addr == oz->shm.addr) {
            return 1;
        }
    }

    return 0;
}


/*
 * The old cycle's zones and sockets that the new one does not use are let
 * go in this process; workers of the old cycle hold their own mappings and
 * descriptors and keep serving until they exit.
 */

static void
sft_cycle_release_old(sft_cycle_t *cycle, sft_cycle_t *old_cycle)
{
    sft_uint_t        i;
    sft_shm_zone_t  **ozones;

    ozones = old_cycle->shared_memory.elts;

    for (i = 0; i < old_cycle->shared_memory.nelts; i++) {
        if (ozones[i]->shm.addr == NULL
            || sft_cycle_zone_kept(cycle, ozones[i]))
        {
            continue;
        }

        if (ozones[i]->fini) {
            ozones[i]->fini(ozones[i]);
        }

        sft_shm_free(&ozones[i]->shm);
    }

    sft_close_unused_listening(cycle, old_cycle);

    if (old_cycle->log_file.fd != SFT_INVALID_FILE
        && old_cycle->log_file.fd != STDERR_FILENO
        && old_cycle->log_file.fd != cycle->log_file.fd)
    {
        close(old_cycle->log_file.fd);
        old_cycle->log_file.fd = SFT_INVALID_FILE;
    }

    if (old_cycle->pool) {
        sft_destroy_pool(old_cycle->pool);
    }

    cycle->old_cycle = NULL;
}


/* what was built while the old cycle's log was in use now logs to ours */

static void
sft_cycle_set_log(sft_cycle_t *cycle)
{
    sft_uint_t        i;
    sft_listening_t  *ls;
    sft_shm_zone_t  **zones;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {
        ls[i].log = cycle->log;
    }

    zones = cycle->shared_memory.elts;

    for (i = 0; i < cycle->shared_memory.nelts; i++) {
        zones[i]->shm.log = cycle->log;
    }
}


static void
sft_cycle_fail(sft_cycle_t *cycle, sft_cycle_t *old_cycle)
{
    sft_uint_t        i;
    sft_shm_zone_t  **zones;

    zones = cycle->shared_memory.elts;

    for (i = 0; i < cycle->shared_memory.nelts; i++) {
        if (zones[i]->shm.addr == NULL) {
            continue;
        }

        if (old_cycle->shared_memory.nelts
            && sft_cycle_zone_kept(old_cycle, zones[i]))
        {
            continue;
        }

        if (zones[i]->fini) {
            zones[i]->fini(zones[i]);
        }

        sft_shm_free(&zones[i]->shm);
    }

    /*
     * the new zones' init hooks pointed their modules at memory just
     * freed: they are pointed back at the running zones, before a worker
     * respawned later inherits the pointers or the master reclaims a dead
     * worker's share through them
     */

    zones = old_cycle->shared_memory.elts;

    for (i = 0; i < old_cycle->shared_memory.nelts; i++) {
        if (zones[i]->shm.addr != NULL && zones[i]->data != NULL) {
            (void) zones[i]->init(zones[i], zones[i]->data);
        }
    }

    sft_close_new_listening(cycle);

    if (cycle->log_file.fd != SFT_INVALID_FILE
        && cycle->log_file.fd != STDERR_FILENO
        && cycle->log_file.fd != 0)
    {
        close(cycle->log_file.fd);
    }

    sft_cycle_restore_modules(old_cycle);
    sft_stat_restore(old_cycle);

    sft_destroy_pool(cycle->pool);
}


static void
sft_cycle_restore_modules(sft_cycle_t *cycle)
{
    sft_uint_t  i;

    if (cycle->modules == NULL || cycle->saved_ctx_index == NULL) {
        return;
    }

    for (i = 0; i < cycle->modules_n; i++) {
        cycle->modules[i]->ctx_index = cycle->saved_ctx_index[i];
        cycle->modules[i]->index = i;
    }
}


sft_int_t
sft_create_pidfile(sft_str_t *name, sft_log_t *log)
{
    int      fd;
    u_char   buf[32], *p;

    fd = open((char *) name->data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
              0644);
    if (fd == -1) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno,
                      "open() \"%s\" failed", name->data);
        return SFT_ERROR;
    }

    p = sft_slprintf(buf, buf + sizeof(buf), "%d\n", (int) getpid());

    if (write(fd, buf, p - buf) != p - buf) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno,
                      "write() \"%s\" failed", name->data);
        close(fd);
        return SFT_ERROR;
    }

    close(fd);

    return SFT_OK;
}


void
sft_delete_pidfile(sft_cycle_t *cycle)
{
    sft_core_conf_t  *ccf;

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    if (ccf->pid.len && unlink((char *) ccf->pid.data) == -1) {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "unlink() \"%s\" failed", ccf->pid.data);
    }
}


/*
 * "siftpd -s reload|stop|quit|reopen|upgrade": signal the master named in
 * the pid file
 */

sft_int_t
sft_signal_process(sft_cycle_t *cycle, char *sig)
{
    int               fd, signo;
    char              buf[32];
    ssize_t           n;
    long              pid;
    sft_core_conf_t  *ccf;

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    fd = open((char *) ccf->pid.data, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        sft_log_stderr(sft_errno, "[error] open() \"%s\" failed",
                       ccf->pid.data);
        return 1;
    }

    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);

    if (n <= 0) {
        sft_log_stderr(0, "[error] invalid PID in \"%s\"", ccf->pid.data);
        return 1;
    }

    buf[n] = '\0';
    pid = strtol(buf, NULL, 10);

    if (pid <= 0) {
        sft_log_stderr(0, "[error] invalid PID in \"%s\"", ccf->pid.data);
        return 1;
    }

    if (strcmp(sig, "reload") == 0) {
        signo = SIGHUP;
    } else if (strcmp(sig, "stop") == 0) {
        signo = SIGTERM;
    } else if (strcmp(sig, "quit") == 0) {
        signo = SIGQUIT;
    } else if (strcmp(sig, "reopen") == 0) {
        signo = SIGUSR1;
    } else if (strcmp(sig, "upgrade") == 0) {
        signo = SIGUSR2;
    } else {
        return 1;
    }

    if (kill((pid_t) pid, signo) == -1) {
        sft_log_stderr(sft_errno, "[error] kill(%ld, %d) failed", pid, signo);
        return 1;
    }

    return 0;
}


/*
 * The master reopens first and gives the files to the workers' user, so
 * the workers, signalled next, can open them too (as nginx does).
 */

static sft_int_t
sft_reopen_file(sft_log_file_t *file, uid_t uid, gid_t gid, sft_log_t *log)
{
    if (sft_log_open_file(file, log) != SFT_OK) {
        return SFT_ERROR;
    }

    if (file->fd != STDERR_FILENO && fchown(file->fd, uid, gid) == -1) {
        sft_log_error(SFT_LOG_ALERT, log, sft_errno, "fchown(\"%s\") failed",
                      file->name.data);
    }

    return SFT_OK;
}


void
sft_reopen_files(sft_cycle_t *cycle)
{
    uid_t             uid;
    gid_t             gid;
    sft_uint_t        i;
    sft_log_t        *log;
    sft_log_file_t  **files;

    log = cycle->log;

    sft_core_workers_owner(cycle, &uid, &gid);

    files = cycle->open_files.elts;

    for (i = 0; i < cycle->open_files.nelts; i++) {
        (void) sft_reopen_file(files[i], uid, gid, log);
    }

    if (sft_str_eq(&cycle->log_file.name, "stderr")) {
        return;
    }

    if (sft_reopen_file(&cycle->log_file, uid, gid, log) != SFT_OK) {
        return;
    }

    sft_log_error(SFT_LOG_NOTICE, log, 0, "reopened \"%s\"",
                  cycle->log_file.name.data);
}
