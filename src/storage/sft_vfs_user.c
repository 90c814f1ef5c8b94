/*
 * sft_vfs_user.c -- a user's view of the storage after login, the same for
 * every protocol: the user's storage and home, the permission mask with
 * its per-directory rules, and the user's name filters; and the home
 * "siftpd user add" makes.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_users.h>
#include <sft_auth_stats.h>
#include <sft_vfs.h>
#include <sft_usage.h>


static void sft_vfs_user_home(sft_user_t *u, sft_str_t *home);
static int sft_vfs_user_filter(void *data, const u_char *dir,
    size_t dir_len, const u_char *name, size_t len, int kind);


/* "/alice/" -> "alice", under the storage root; "" for the root itself */

static void
sft_vfs_user_home(sft_user_t *u, sft_str_t *home)
{
    u_char  *p, *e;

    p = u->home.data;
    e = p + u->home.len;

    while (p < e && *p == '/') {
        p++;
    }

    while (e > p && e[-1] == '/') {
        e--;
    }

    home->data = p;
    home->len = e - p;
}


/*
 * rules and nrules_alloc keep the rule array of an earlier login on the
 * same connection (FTP's REIN), so logins do not grow the pool; NULL if
 * the protocol logs in once.
 */

sft_int_t
sft_vfs_session_for_user(sft_vfs_session_t *vs, sft_user_t *u,
    sft_storage_t *storage, sft_pool_t *pool, sft_vfs_rule_t **rules,
    sft_uint_t *nrules_alloc, sft_log_t *log)
{
    sft_str_t         home, root;
    sft_uint_t        i, n;
    sft_vfs_rule_t   *vr;
    sft_user_rule_t  *r;

    if (u->storage.len) {
        storage = sft_storage_find((sft_cycle_t *) sft_cycle, &u->storage);
    }

    if (storage == NULL) {
        sft_log_error(SFT_LOG_ERR, log, 0,
                      "user \"%.*s\" has no storage (\"%.*s\")",
                      SFT_STR_FMT(&u->name), SFT_STR_FMT(&u->storage));
        return SFT_ERROR;
    }

    sft_vfs_user_home(u, &home);

    sft_str_set(&root, "/");

    sft_vfs_session_init(vs, storage, &home, sft_user_perms(u, &root), log);

    vs->filter = sft_vfs_user_filter;
    vs->filter_data = vs;
    vs->account = u;

    r = u->rules.elts;
    n = 0;

    for (i = 0; i < u->rules.nelts; i++) {
        if (r[i].perms != -1) {
            n++;
        }
    }

    if (n == 0) {
        return SFT_OK;
    }

    if (rules && *rules && n <= *nrules_alloc) {
        vr = *rules;
        sft_memzero(vr, n * sizeof(sft_vfs_rule_t));

    } else {
        vr = sft_pcalloc(pool, n * sizeof(sft_vfs_rule_t));
        if (vr == NULL) {
            return SFT_ERROR;
        }

        if (rules) {
            *rules = vr;
            *nrules_alloc = n;
        }
    }

    vs->rules = vr;

    for (i = 0; i < u->rules.nelts; i++) {
        if (r[i].perms != -1) {
            vr->path = r[i].path;
            vr->perms = (uint32_t) r[i].perms;
            vr++;
            vs->nrules++;
        }
    }

    return SFT_OK;
}


/* the user's deny and hide patterns for names in a directory */

static int
sft_vfs_user_filter(void *data, const u_char *dir, size_t dir_len,
    const u_char *name, size_t len, int kind)
{
    sft_str_t           d, n;
    sft_user_t         *u;
    sft_vfs_session_t  *vs = data;

    u = vs->account;

    if (u == NULL) {
        return 0;
    }

    d.data = (u_char *) dir;
    d.len = dir_len;
    n.data = (u_char *) name;
    n.len = len;

    if (kind == SFT_VFS_FILTER_DENY) {
        return sft_user_name_denied(u, &d, &n) ? 1 : 0;
    }

    return sft_user_name_hidden(u, &d, &n) ? 1 : 0;
}


/*
 * After sft_vfs_session_for_user(): the session counts against the user's
 * max_sessions across all workers (SFT_DECLINED: too many), and changes
 * are charged to the user's shared usage, against the quota if any.
 */

sft_int_t
sft_vfs_user_open(sft_vfs_session_t *vs)
{
    sft_int_t     rc;
    sft_user_t   *u = vs->account;
    sft_usage_t  *usage;

    rc = sft_usage_session_open(&u->name, u->max_sessions, &usage, vs->log);

    if (rc != SFT_OK) {
        if (rc == SFT_DECLINED) {
            sft_log_error(SFT_LOG_INFO, vs->log, 0,
                          "max_sessions (%lu) of \"%.*s\" reached",
                          (unsigned long) u->max_sessions,
                          SFT_STR_FMT(&u->name));
        }

        return rc;
    }

    vs->session_open = 1;
    sft_stat_add(sft_auth_stat_logins, 1);

    vs->user_quota.max_bytes = u->quota_bytes;
    vs->user_quota.max_files = (off_t) u->quota_files;
    vs->user_quota.usage = usage;
    vs->quota = &vs->user_quota;

    return SFT_OK;
}


void
sft_vfs_user_close(sft_vfs_session_t *vs)
{
    sft_vfs_usage_detach(vs);

    /* the quota stays: operations in flight are still charged */

    if (vs->session_open) {
        sft_usage_session_close(vs->user_quota.usage);
        vs->session_open = 0;
    }
}


/*
 * "siftpd user add": the home made in storage one directory at a time,
 * synchronously (no thread pool); SFT_DECLINED if it already existed.  A
 * failure is logged by the driver, with the errno and the path.
 */

sft_int_t
sft_vfs_user_make_home(sft_user_t *u, sft_storage_t *storage,
    sft_pool_t *pool, sft_log_t *log)
{
    size_t             i;
    sft_str_t          home;
    sft_storage_req_t  req;
    u_char             path[SFT_STORAGE_PATH_MAX + 1];

    sft_vfs_user_home(u, &home);

    if (home.len == 0) {
        return SFT_DECLINED;
    }

    if (home.len > SFT_STORAGE_PATH_MAX) {
        sft_log_error(SFT_LOG_ERR, log, 0, "home of \"%.*s\" is too long",
                      SFT_STR_FMT(&u->name));
        return SFT_ERROR;
    }

    sft_memcpy(path, home.data, home.len);
    path[home.len] = '\0';

    sft_memzero(&req, sizeof(sft_storage_req_t));
    req.op = SFT_STORAGE_MKDIR;
    req.storage = storage;
    req.pool = pool;
    req.log = log;
    req.path = path;

    for (i = 1; i <= home.len; i++) {
        if (i < home.len && path[i] != '/') {
            continue;
        }

        path[i] = '\0';

        if (sft_storage_run(&req) != SFT_OK
            && req.err != SFT_STORAGE_EXISTS)
        {
            return SFT_ERROR;
        }

        if (i < home.len) {
            path[i] = '/';
        }
    }

    return req.err == SFT_STORAGE_EXISTS ? SFT_DECLINED : SFT_OK;
}
