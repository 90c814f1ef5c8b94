/*
 * sft_vfs_usage.c -- quotas need to know what a user stores: the first
 * change a quota must see (a new file, an upload, a delete, a rename or a
 * link) after a start counts the user's home once, on the thread pool,
 * and waits for the count; so do the changes behind it.  The count goes
 * to the user's shared usage record, which every session of the user in
 * every worker then keeps current, so the quota is exact across restarts
 * without a file of its own: the disk is the record.  An admin's recount
 * counts the home again and replaces the record, for files changed
 * behind the server's back.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_vfs.h>
#include <sft_usage_lease.h>


typedef struct {
    sft_storage_req_t     req;
    sft_pool_t           *pool;
    sft_vfs_session_t    *vs;        /* NULL once the session ended */
    sft_usage_t          *usage;
    off_t                 max_bytes;  /* the session's quota */
    off_t                 max_files;
    sft_str_t             user;      /* for the log, in pool */
    sft_log_t            *log;       /* the cycle's: outlives sessions */
    sft_storage_req_t    *first;     /* changes waiting for the count */
    sft_storage_req_t   **last;
} sft_vfs_scan_t;


static sft_int_t sft_vfs_scan_start(sft_vfs_session_t *s);
static void sft_vfs_scan_done(sft_storage_req_t *req);
static void sft_vfs_scan_result(sft_vfs_scan_t *scan);


/* the operations that change what the quota counts */

static sft_uint_t
sft_vfs_changes_usage(sft_storage_op_t op)
{
    return op == SFT_STORAGE_OPEN_WRITE || op == SFT_STORAGE_UNLINK
           || op == SFT_STORAGE_RENAME || op == SFT_STORAGE_LINK
           || op == SFT_STORAGE_SYMLINK;
}


/*
 * Runs a prepared operation; a change while the user's usage is not known
 * yet waits for the count (SFT_AGAIN: req->handler is called after it).
 */

sft_int_t
sft_vfs_run(sft_vfs_session_t *s, sft_storage_req_t *req)
{
    sft_int_t         rc;
    sft_vfs_scan_t   *scan;
    sft_vfs_quota_t  *q = s->quota;

    s->missing = 0;

    if (q == NULL || q->usage == NULL
        || (q->max_bytes == 0 && q->max_files == 0)
        || !sft_vfs_changes_usage(req->op))
    {
        return sft_storage_run(req);
    }

    if (sft_usage_known(q->usage) && s->scan == NULL) {
        return sft_vfs_run_leased(s, req);
    }

    if (s->scan == NULL) {
        rc = sft_vfs_scan_start(s);

        if (rc == SFT_OK) {
            return sft_storage_run(req);
        }

        if (rc == SFT_ERROR) {
            req->err = SFT_STORAGE_IO;
            return SFT_ERROR;
        }
    }

    scan = s->scan;

    req->next = NULL;
    *scan->last = req;
    scan->last = &req->next;

    return SFT_AGAIN;
}


/*
 * The session's home counted by the storage's USAGE operation into
 * req->usage; req has its pool, handler, data and log.
 */

sft_int_t
sft_vfs_usage_count(sft_vfs_session_t *s, sft_storage_req_t *req)
{
    req->storage = s->storage;
    req->thread_pool = s->thread_pool;
    req->op = SFT_STORAGE_USAGE;
    req->base_len = s->home.len;
    req->path = (u_char *) sft_pnalloc(req->pool, s->home.len + 2);

    if (req->path == NULL) {
        req->err = SFT_STORAGE_IO;
        return SFT_ERROR;
    }

    if (s->home.len) {
        *sft_cpymem(req->path, s->home.data, s->home.len) = '\0';

    } else {
        req->path[0] = '.';
        req->path[1] = '\0';
    }

    return sft_storage_run(req);
}


/* SFT_OK: counted now; SFT_AGAIN: s->scan counts on the thread pool */

static sft_int_t
sft_vfs_scan_start(sft_vfs_session_t *s)
{
    sft_int_t          rc;
    sft_log_t         *log;
    sft_pool_t        *pool;
    sft_user_t        *u;
    sft_vfs_scan_t    *scan;
    sft_storage_req_t *req;

    log = sft_cycle ? ((sft_cycle_t *) sft_cycle)->log : s->log;

    pool = sft_create_pool(1024, log);
    if (pool == NULL) {
        return SFT_ERROR;
    }

    scan = sft_pcalloc(pool, sizeof(sft_vfs_scan_t));
    if (scan == NULL) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    u = s->account;

    scan->pool = pool;
    scan->log = log;
    scan->vs = s;
    scan->usage = s->quota->usage;
    scan->max_bytes = s->quota->max_bytes;
    scan->max_files = s->quota->max_files;
    scan->last = &scan->first;
    scan->user.data = sft_pstrdup(pool, &u->name);
    scan->user.len = scan->user.data ? u->name.len : 0;

    req = &scan->req;
    req->pool = pool;
    req->handler = sft_vfs_scan_done;
    req->data = scan;
    req->log = log;

    rc = sft_vfs_usage_count(s, req);

    if (rc == SFT_AGAIN) {
        s->scan = scan;
        return SFT_AGAIN;
    }

    sft_vfs_scan_result(scan);
    sft_destroy_pool(pool);

    return rc == SFT_OK ? SFT_OK : SFT_ERROR;
}


/* the count's log line: "counted" or "recounted" */

static void
sft_vfs_usage_log(sft_storage_req_t *req, sft_str_t *user, sft_uint_t level,
    const char *done, const char *failed)
{
    if (req->err != SFT_STORAGE_OK) {
        sft_log_error(SFT_LOG_ERR, req->log, req->sys_err,
                      "the usage of \"%.*s\" (home \"%s\") could not be "
                      "%s", SFT_STR_FMT(user), req->path, failed);
        return;
    }

    sft_log_error(level, req->log, 0,
                  "usage of \"%.*s\" %s: %lld bytes in %lld files",
                  SFT_STR_FMT(user), done, (long long) req->usage.bytes,
                  (long long) req->usage.files);
}


static void
sft_vfs_scan_result(sft_vfs_scan_t *scan)
{
    sft_storage_req_t  *req = &scan->req;

    sft_vfs_usage_log(req, &scan->user, SFT_LOG_INFO, "counted",
                      "counted: changes refused until it can be");

    if (req->err == SFT_STORAGE_OK) {
        sft_usage_set(scan->usage, req->usage.bytes, req->usage.files);
        sft_usage_lease_counted(scan->usage, scan->max_bytes,
                                scan->max_files, req->usage.bytes,
                                req->usage.files, 0);
    }
}


/* on the loop: the waiting changes run, or fail if the count did */

static void
sft_vfs_scan_done(sft_storage_req_t *req)
{
    sft_int_t           rc;
    sft_vfs_scan_t     *scan = req->data;
    sft_storage_req_t  *w, *next;

    sft_vfs_scan_result(scan);

    if (scan->vs) {
        scan->vs->scan = NULL;
    }

    for (w = scan->first; w; w = next) {
        next = w->next;
        w->next = NULL;

        if (req->err == SFT_STORAGE_OK) {
            rc = scan->vs ? sft_vfs_run_leased(scan->vs, w)
                          : sft_storage_run(w);

            if (rc == SFT_AGAIN) {
                continue;
            }

        } else {
            w->err = SFT_STORAGE_IO;
        }

        w->handler(w);
    }

    sft_destroy_pool(scan->pool);
}


/* the session ends: a count in flight finishes without it */

void
sft_vfs_usage_detach(sft_vfs_session_t *s)
{
    sft_vfs_scan_t  *scan = s->scan;

    if (scan) {
        scan->vs = NULL;
        s->scan = NULL;
    }

    sft_vfs_lease_detach(s);
}


static void
sft_vfs_recount_end(sft_vfs_recount_t *rc)
{
    sft_storage_req_t  *req = &rc->req;

    sft_usage_recount_end(rc->usage, req->err == SFT_STORAGE_OK,
                          req->usage.bytes, req->usage.files);

    if (req->err == SFT_STORAGE_OK) {
        sft_usage_lease_counted(rc->usage, rc->max_bytes, rc->max_files,
                                req->usage.bytes, req->usage.files, 1);
    }

    sft_vfs_usage_log(req, &rc->user, SFT_LOG_NOTICE, "recounted",
                      "recounted");
}


static void
sft_vfs_recount_done(sft_storage_req_t *req)
{
    sft_vfs_recount_t  *rc = req->data;

    sft_vfs_recount_end(rc);
    rc->handler(rc);
}


/*
 * The home of u counted again, its count put in the user's shared usage
 * for every worker.  SFT_OK: done now, rc->req.err and rc->req.usage
 * tell; SFT_AGAIN: rc->handler is called on the loop when done;
 * SFT_DECLINED: a recount of the user runs already (here or in another
 * worker); SFT_ERROR: the user has no storage or no usage record.  u
 * must stay valid until the end.
 */

sft_int_t
sft_vfs_usage_recount(sft_vfs_recount_t *rc, sft_user_t *u,
    sft_pool_t *pool, sft_log_t *log)
{
    sft_int_t           n;
    sft_storage_req_t  *req = &rc->req;

    rc->user = u->name;
    rc->max_bytes = u->quota_bytes;
    rc->max_files = (off_t) u->quota_files;

    rc->usage = sft_usage_record(&u->name, log);
    if (rc->usage == NULL) {
        return SFT_ERROR;
    }

    if (sft_vfs_session_for_user(&rc->vs, u, NULL, pool, NULL, NULL, log)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    if (sft_usage_recount_begin(rc->usage) != SFT_OK) {
        return SFT_DECLINED;
    }

    req->pool = pool;
    req->handler = sft_vfs_recount_done;
    req->data = rc;
    req->log = log;

    n = sft_vfs_usage_count(&rc->vs, req);

    if (n == SFT_AGAIN) {
        return SFT_AGAIN;
    }

    sft_vfs_recount_end(rc);

    return SFT_OK;
}
