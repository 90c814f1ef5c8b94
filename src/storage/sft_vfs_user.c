/*
 * sft_vfs_user.c -- a user's view of the storage after login, the same for
 * every protocol: the user's storage and home, the permission mask with
 * its per-directory rules, and the user's name filters.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_users.h>
#include <sft_vfs.h>
#include <sft_usage.h>


static int sft_vfs_user_filter(void *data, const u_char *dir,
    size_t dir_len, const u_char *name, size_t len, int kind);


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
    u_char           *p, *e;
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

    /* "/alice/" -> "alice", under the storage root */

    p = u->home.data;
    e = p + u->home.len;

    while (p < e && *p == '/') {
        p++;
    }

    while (e > p && e[-1] == '/') {
        e--;
    }

    home.data = p;
    home.len = e - p;

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
    sft_stat_add(SFT_STAT_LOGINS, 1);

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
