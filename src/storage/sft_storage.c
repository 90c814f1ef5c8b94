/*
 * sft_storage.c -- the "storage NAME { driver ...; }" main-context block,
 * lookup of storages by name, the error vocabulary, and running driver
 * operations either at once or on the worker's thread pool.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_storage.h>


typedef struct {
    sft_array_t            storages;       /* sft_storage_t * */
} sft_storage_main_conf_t;


typedef struct {
    sft_storage_driver_t  *driver;
    sft_thread_pool_t     *thread_pool;
} sft_storage_core_conf_t;


static void *sft_storage_create_main_conf(sft_cycle_t *cycle);
static char *sft_storage_block(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static void *sft_storage_core_create_conf(sft_conf_t *cf);
static char *sft_storage_driver(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_storage_thread_pool(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static void sft_storage_sweep(sft_cycle_t *cycle);
static void sft_storage_set_name(sft_storage_req_t *req);
static void sft_storage_done(sft_storage_req_t *req);
static void sft_storage_thread(void *data, sft_log_t *log);
static void sft_storage_thread_done(sft_event_t *ev);


static sft_command_t  sft_storage_commands[] = {

    { sft_string("storage"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_BLOCK|SFT_CONF_TAKE1,
      sft_storage_block,
      0,
      0,
      NULL,
      sft_command_doc("name { ... }", "",
          "A named storage for the users' homes, with its driver and "
          "settings.") },

    sft_null_command
};


static sft_core_module_t  sft_storage_module_ctx = {
    sft_string("storage"),
    sft_storage_create_main_conf,
    NULL
};


sft_module_t  sft_storage_module = {
    SFT_MODULE_V1,
    &sft_storage_module_ctx,               /* module context */
    sft_storage_commands,                  /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NULL,                                  /* process exited */
    sft_storage_sweep,                     /* processes changed */
    SFT_MODULE_V1_SPARE
};


static sft_command_t  sft_storage_core_commands[] = {

    { sft_string("driver"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_storage_driver,
      offsetof(sft_storage_conf_ctx_t, conf),
      0,
      NULL,
      sft_command_doc("name", "",
          "The storage driver: posix, or one a loaded module adds.") },

    { sft_string("thread_pool"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_storage_thread_pool,
      offsetof(sft_storage_conf_ctx_t, conf),
      0,
      NULL,
      sft_command_doc("name", "default",
          "The thread pool (a \"thread_pool\" of the main context) the "
          "storage's blocking operations run on; an unknown name is "
          "refused.") },

    sft_null_command
};


static sft_storage_module_t  sft_storage_core_module_ctx = {
    NULL,
    sft_storage_core_create_conf,
    NULL
};


sft_module_t  sft_storage_core_module = {
    SFT_MODULE_V1,
    &sft_storage_core_module_ctx,          /* module context */
    sft_storage_core_commands,             /* module directives */
    SFT_STORAGE_MODULE,                    /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static sft_str_t  sft_storage_default_pool = sft_string("default");


static const char  *sft_storage_errors[] = {
    "ok",
    "no such file or directory",
    "file exists",
    "not a directory",
    "is a directory",
    "directory not empty",
    "permission denied",
    "quota exceeded",
    "no space left",
    "invalid file name",
    "invalid argument",
    "too many symbolic links",
    "not supported",
    "input/output error",
    "busy, try again"
};


static void *
sft_storage_create_main_conf(sft_cycle_t *cycle)
{
    sft_storage_main_conf_t  *smcf;

    smcf = sft_pcalloc(cycle->pool, sizeof(sft_storage_main_conf_t));
    if (smcf == NULL) {
        return NULL;
    }

    if (sft_array_init(&smcf->storages, cycle->pool, 4,
                       sizeof(sft_storage_t *)) != SFT_OK)
    {
        return NULL;
    }

    return smcf;
}


static char *
sft_storage_block(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    char                     *rv;
    sft_uint_t                i, n;
    sft_str_t                *value;
    sft_conf_t                pcf;
    sft_module_t             *m;
    sft_storage_t            *st, **stp;
    sft_storage_module_t     *sm;
    sft_storage_conf_ctx_t   *ctx;
    sft_storage_core_conf_t  *sccf;
    sft_storage_main_conf_t  *smcf = conf;

    (void) cmd;

    value = cf->args->elts;

    if (sft_storage_find(cf->cycle, &value[1]) != NULL) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "duplicate storage \"%.*s\"",
                           SFT_STR_FMT(&value[1]));
        return SFT_CONF_ERROR;
    }

    st = sft_pcalloc(cf->pool, sizeof(sft_storage_t));
    ctx = sft_pcalloc(cf->pool, sizeof(sft_storage_conf_ctx_t));
    if (st == NULL || ctx == NULL) {
        return SFT_CONF_ERROR;
    }

    st->name = value[1];
    st->file = cf->conf_file->name;
    st->line = cf->conf_file->line;

    n = sft_count_modules(cf->cycle, SFT_STORAGE_MODULE);

    ctx->conf = sft_pcalloc(cf->pool, (n + 1) * sizeof(void *));
    if (ctx->conf == NULL) {
        return SFT_CONF_ERROR;
    }

    for (i = 0; cf->cycle->modules[i]; i++) {
        m = cf->cycle->modules[i];

        if (m->type != SFT_STORAGE_MODULE) {
            continue;
        }

        sm = m->ctx;

        if (sm->create_conf) {
            ctx->conf[m->ctx_index] = sm->create_conf(cf);
            if (ctx->conf[m->ctx_index] == NULL) {
                return SFT_CONF_ERROR;
            }
        }
    }

    st->conf = ctx->conf;

    pcf = *cf;
    cf->ctx = ctx;
    cf->module_type = SFT_STORAGE_MODULE;
    cf->cmd_type = SFT_STORAGE_CONF;

    rv = sft_conf_parse(cf, NULL);

    *cf = pcf;

    if (rv != SFT_CONF_OK) {
        return rv;
    }

    sccf = ctx->conf[sft_storage_core_module.ctx_index];

    if (sccf->driver == NULL) {
        sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                      "no \"driver\" in storage \"%.*s\" in %.*s:%lu",
                      SFT_STR_FMT(&st->name), SFT_STR_FMT(&st->file),
                      (unsigned long) st->line);
        return SFT_CONF_ERROR;
    }

    st->driver = sccf->driver;
    st->thread_pool = sccf->thread_pool ? sccf->thread_pool
                      : sft_thread_pool_ref(cf, &sft_storage_default_pool);

    if (st->thread_pool == NULL) {
        return SFT_CONF_ERROR;
    }

    for (i = 0; cf->cycle->modules[i]; i++) {
        m = cf->cycle->modules[i];

        if (m->type != SFT_STORAGE_MODULE) {
            continue;
        }

        sm = m->ctx;

        if (sm->init_conf) {
            rv = sm->init_conf(cf, st, ctx->conf[m->ctx_index]);
            if (rv != SFT_CONF_OK) {
                return rv;
            }
        }
    }

    stp = sft_array_push(&smcf->storages);
    if (stp == NULL) {
        return SFT_CONF_ERROR;
    }

    *stp = st;

    return SFT_CONF_OK;
}


static void *
sft_storage_core_create_conf(sft_conf_t *cf)
{
    return sft_pcalloc(cf->pool, sizeof(sft_storage_core_conf_t));
}


static char *
sft_storage_driver(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_uint_t                i;
    sft_str_t                *value;
    sft_module_t             *m;
    sft_storage_module_t     *sm;
    sft_storage_core_conf_t  *sccf = conf;

    (void) cmd;

    if (sccf->driver) {
        return "is duplicate";
    }

    value = cf->args->elts;

    for (i = 0; cf->cycle->modules[i]; i++) {
        m = cf->cycle->modules[i];

        if (m->type != SFT_STORAGE_MODULE) {
            continue;
        }

        sm = m->ctx;

        if (sm->driver
            && sm->driver->name.len == value[1].len
            && sft_strncmp(sm->driver->name.data, value[1].data,
                           value[1].len) == 0)
        {
            sccf->driver = sm->driver;
            return SFT_CONF_OK;
        }
    }

    sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                       "unknown storage driver \"%.*s\"",
                       SFT_STR_FMT(&value[1]));

    return SFT_CONF_ERROR;
}


static char *
sft_storage_thread_pool(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t                *value;
    sft_storage_core_conf_t  *sccf = conf;

    (void) cmd;

    if (sccf->thread_pool) {
        return "is duplicate";
    }

    value = cf->args->elts;

    sccf->thread_pool = sft_thread_pool_ref(cf, &value[1]);

    return sccf->thread_pool ? SFT_CONF_OK : SFT_CONF_ERROR;
}


/* the storages of a cycle: n of them, none without a storage{} block */

sft_storage_t **
sft_storage_all(sft_cycle_t *cycle, sft_uint_t *n)
{
    sft_storage_main_conf_t  *smcf;

    smcf = (sft_storage_main_conf_t *) sft_get_conf(cycle->conf_ctx,
                                                    sft_storage_module);
    if (smcf == NULL) {
        *n = 0;
        return NULL;
    }

    *n = smcf->storages.nelts;

    return smcf->storages.elts;
}


sft_storage_t *
sft_storage_find(sft_cycle_t *cycle, sft_str_t *name)
{
    sft_uint_t       i, n;
    sft_storage_t  **stp;

    stp = sft_storage_all(cycle, &n);

    for (i = 0; i < n; i++) {
        if (stp[i]->name.len == name->len
            && sft_strncmp(stp[i]->name.data, name->data, name->len) == 0)
        {
            return stp[i];
        }
    }

    return NULL;
}


/*
 * In the sweeper process (src/core/sft_sweeper.c), with the master's table
 * of live workers: what workers that died (or of an earlier run) left in
 * the storages is removed.
 */

static void
sft_storage_sweep(sft_cycle_t *cycle)
{
    sft_uint_t       i, n;
    sft_storage_t  **stp;

    stp = sft_storage_all(cycle, &n);

    for (i = 0; i < n; i++) {
        if (stp[i]->driver->sweep) {
            stp[i]->driver->sweep(stp[i], sft_process_is_live, cycle->log);
        }
    }
}


/*
 * Runs one operation.  A blocking driver with a thread pool runs it on a
 * pool thread and completes on the loop; otherwise the driver runs it
 * here (and may itself answer SFT_AGAIN, as a network driver does).
 */

sft_int_t
sft_storage_run(sft_storage_req_t *req)
{
    sft_int_t              rc;
    sft_storage_driver_t  *drv;

    drv = req->storage->driver;

    req->err = SFT_STORAGE_OK;
    req->sys_err = 0;
    req->why = NULL;
    req->nbytes = 0;

    if (req->op == SFT_STORAGE_OPEN_READ
        || req->op == SFT_STORAGE_OPEN_WRITE)
    {
        sft_storage_set_name(req);
    }

    if (drv->ops[req->op] == NULL) {
        req->err = SFT_STORAGE_UNSUPPORTED;
        goto done;
    }

    /* a whole tree's walk is long even in memory: it never runs inline */

    if (drv->blocking && req->thread_pool
        && (!req->storage->in_memory || req->op == SFT_STORAGE_USAGE))
    {

        if (req->task == NULL) {
            req->task = sft_thread_task_alloc(req->pool,
                                              sizeof(sft_storage_req_t *));
            if (req->task == NULL) {
                req->err = SFT_STORAGE_BUSY;
                goto done;
            }

            *(sft_storage_req_t **) req->task->ctx = req;
            req->task->handler = sft_storage_thread;
            req->task->event.handler = sft_storage_thread_done;
            req->task->event.data = req;
            req->task->event.log = req->log;
        }

        if (sft_thread_task_post(req->thread_pool, req->task) != SFT_OK) {
            req->err = SFT_STORAGE_BUSY;
            goto done;
        }

        return SFT_AGAIN;
    }

    rc = drv->ops[req->op](req);

    if (rc == SFT_AGAIN) {
        return SFT_AGAIN;
    }

done:

    sft_storage_done(req);

    return req->err == SFT_STORAGE_OK ? SFT_OK : SFT_ERROR;
}


/* the name an open file's log lines give: the path's last component */

static void
sft_storage_set_name(sft_storage_req_t *req)
{
    u_char  *base;
    size_t   len;

    base = (u_char *) strrchr((char *) req->path, '/');
    base = base ? base + 1 : req->path;
    len = sft_min(sft_strlen(base), SFT_STORAGE_NAME_MAX);

    *sft_cpymem(req->file->name, base, len) = '\0';
}


/* an operation is over, at once or on the loop: then the vfs' accounting */

static void
sft_storage_done(sft_storage_req_t *req)
{
    if ((req->op == SFT_STORAGE_OPEN_READ || req->op == SFT_STORAGE_OPEN_WRITE)
        && req->err == SFT_STORAGE_OK)
    {
        req->file->opened = 1;
    }

    if (req->post) {
        req->post(req);
    }
}


/*
 * On the loop, by the owner of a request that answered SFT_AGAIN and whose
 * result it no longer wants.  SFT_OK: it never ran and never will (a task
 * still queued on the thread pool, or what the driver's cancel stopped),
 * the request and its buffer are the caller's again, err is BUSY, the
 * vfs' accounting has run (a write's charge given back), the handler will
 * not run.  SFT_DECLINED: it is running and completes as usual; the
 * caller keeps its memory until the handler ran and drops the result.
 */

sft_int_t
sft_storage_cancel(sft_storage_req_t *req)
{
    sft_storage_driver_t  *drv;

    drv = req->storage->driver;

    if (drv->blocking) {
        if (req->task == NULL || req->thread_pool == NULL
            || sft_thread_task_cancel(req->thread_pool, req->task) != SFT_OK)
        {
            return SFT_DECLINED;
        }

    } else if (drv->cancel == NULL || drv->cancel(req) != SFT_OK) {
        return SFT_DECLINED;
    }

    req->err = SFT_STORAGE_BUSY;
    req->nbytes = 0;

    if (req->post) {
        req->post(req);
    }

    return SFT_OK;
}


/* on the loop: an operation that answered SFT_AGAIN has finished */

void
sft_storage_complete(sft_storage_req_t *req)
{
    sft_storage_done(req);

    if (req->handler) {
        req->handler(req);
    }
}


static void
sft_storage_thread(void *data, sft_log_t *log)
{
    sft_storage_req_t  *req = *(sft_storage_req_t **) data;

    (void) log;

    (void) req->storage->driver->ops[req->op](req);
}


static void
sft_storage_thread_done(sft_event_t *ev)
{
    sft_storage_complete(ev->data);
}


/* the descriptor of an open file, or SFT_INVALID_FILE: a driver without
   SFT_STORAGE_CAP_FD (s3) has none, and the data moves through chunks */

sft_fd_t
sft_storage_file_fd(sft_storage_file_t *file)
{
    sft_storage_driver_t  *drv;

    drv = file->storage->driver;

    if (!(drv->caps & SFT_STORAGE_CAP_FD)) {
        return SFT_INVALID_FILE;
    }

    return drv->file_fd(file);
}


size_t
sft_storage_room(sft_storage_file_t *file, off_t offset, size_t len,
    sft_event_t *wake)
{
    sft_storage_driver_t  *drv;

    if (!file->opened || file->closed || !file->write) {
        return len;
    }

    drv = file->storage->driver;

    return drv->room ? drv->room(file, offset, len, wake) : len;
}


void
sft_storage_room_forget(sft_storage_file_t *file)
{
    sft_storage_driver_t  *drv;

    if (!file->opened || file->closed || !file->write) {
        return;
    }

    drv = file->storage->driver;

    if (drv->room) {
        (void) drv->room(file, 0, 0, NULL);
    }
}


/* what a capability allows, for the replies refusing it */

const char *
sft_storage_cap_text(sft_uint_t cap)
{
    switch (cap) {

    case SFT_STORAGE_CAP_RANDOM_WRITE:
        return "Writing at an offset";

    case SFT_STORAGE_CAP_APPEND:
        return "Appending";

    case SFT_STORAGE_CAP_RENAME:
        return "Renaming";

    case SFT_STORAGE_CAP_LINKS:
        return "Linking";

    case SFT_STORAGE_CAP_MODES:
        return "Changing modes";

    case SFT_STORAGE_CAP_COPY:
        return "Copying on the server";

    default:
        return "This operation";
    }
}


sft_storage_err_t
sft_storage_map_errno(int err)
{
    switch (err) {

    case 0:
        return SFT_STORAGE_OK;

    case ENOENT:
        return SFT_STORAGE_NOT_FOUND;

    case EEXIST:
        return SFT_STORAGE_EXISTS;

    case ENOTDIR:
        return SFT_STORAGE_NOT_DIR;

    case EISDIR:
        return SFT_STORAGE_IS_DIR;

    case ENOTEMPTY:
        return SFT_STORAGE_NOT_EMPTY;

    case EACCES:
    case EPERM:
    case EROFS:
    case EXDEV:              /* openat2: the path would leave the root */
        return SFT_STORAGE_PERMISSION;

    case EDQUOT:
        return SFT_STORAGE_QUOTA;

    case ENOSPC:
        return SFT_STORAGE_NO_SPACE;

    case ENAMETOOLONG:
        return SFT_STORAGE_NAME_INVALID;

    case EINVAL:
        return SFT_STORAGE_INVALID;

    case ELOOP:
        return SFT_STORAGE_LOOP;

    case ENOSYS:
    case EOPNOTSUPP:
        return SFT_STORAGE_UNSUPPORTED;

    case EBUSY:
    case EAGAIN:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
        return SFT_STORAGE_BUSY;

    default:
        return SFT_STORAGE_IO;
    }
}


const char *
sft_storage_strerror(sft_storage_err_t err)
{
    if ((sft_uint_t) err >= sft_nelems(sft_storage_errors)) {
        return "unknown error";
    }

    return sft_storage_errors[err];
}


void
sft_storage_stat_from_sys(sft_storage_stat_t *st, struct stat *sb)
{
    st->mode = sb->st_mode;
    st->size = sb->st_size;
    st->mtime = sb->st_mtime;
    st->atime = sb->st_atime;
    st->nlink = sb->st_nlink;
    st->uid = sb->st_uid;
    st->gid = sb->st_gid;
    st->id.dev = sb->st_dev;
    st->id.ino = sb->st_ino;
}


sft_uint_t
sft_storage_same_file(const sft_storage_id_t *a, const sft_storage_id_t *b)
{
    return a->ino != 0 && a->ino == b->ino && a->dev == b->dev;
}


sft_uint_t
sft_storage_range_valid(uint64_t offset, uint64_t len)
{
    return offset <= (uint64_t) SFT_STORAGE_OFFSET_MAX
           && len <= (uint64_t) SFT_STORAGE_OFFSET_MAX - offset;
}


/*
 * Whether a relative link target, in a directory depth levels below the
 * root the link must stay in, climbs above that root on its way: a link
 * another program on the host follows would leave the home.
 */

sft_uint_t
sft_storage_link_escapes(size_t depth, const u_char *target, size_t len)
{
    size_t         n;
    const u_char  *p, *t, *end;

    n = 0;                  /* levels below the link's directory */
    end = target + len;

    p = target;

    while (p < end) {
        t = p;

        while (p < end && *p != '/') {
            p++;
        }

        if (p - t == 2 && t[0] == '.' && t[1] == '.') {
            if (n) {
                n--;

            } else if (depth) {
                depth--;

            } else {
                return 1;
            }

        } else if (p - t && !(p - t == 1 && t[0] == '.')) {
            n++;
        }

        if (p < end) {
            p++;
        }
    }

    return 0;
}
