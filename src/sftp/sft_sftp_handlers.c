/*
 * sft_sftp_handlers.c -- the table of SFTP v3 requests, indexed by type,
 * the dispatch of a packet through it (a request that changes the storage
 * refused at once on a read-only session), and the requests on paths:
 * REALPATH, STAT, LSTAT, SETSTAT, REMOVE, MKDIR, RMDIR, RENAME, READLINK
 * and SYMLINK.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>


static sft_int_t sft_sftp_realpath_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_readlink_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static void sft_sftp_readlink_complete(sft_sftp_request_t *r);


static const sft_sftp_handler_t  sft_sftp_realpath_handler = {
    SSH_FXP_REALPATH, "realpath", 0, sft_sftp_realpath_parse, NULL, NULL,
    NULL, NULL
};

static const sft_sftp_handler_t  sft_sftp_stat_handler = {
    SSH_FXP_STAT, "stat", 0, sft_sftp_path_parse, sft_sftp_attrs_done, NULL,
    sft_vfs_stat, NULL
};

static const sft_sftp_handler_t  sft_sftp_lstat_handler = {
    SSH_FXP_LSTAT, "lstat", 0, sft_sftp_path_parse, sft_sftp_attrs_done,
    NULL, sft_vfs_lstat, NULL
};

const sft_sftp_handler_t  sft_sftp_setstat_handler = {
    SSH_FXP_SETSTAT, "setstat", 1, sft_sftp_setstat_parse,
    sft_sftp_setstat_complete, NULL, NULL, NULL
};

static const sft_sftp_handler_t  sft_sftp_remove_handler = {
    SSH_FXP_REMOVE, "remove", 1, sft_sftp_path_parse, sft_sftp_reply_done,
    NULL, sft_vfs_unlink, NULL
};

static const sft_sftp_handler_t  sft_sftp_mkdir_handler = {
    SSH_FXP_MKDIR, "mkdir", 1, sft_sftp_path_parse, sft_sftp_reply_done,
    NULL, sft_vfs_mkdir, NULL
};

static const sft_sftp_handler_t  sft_sftp_rmdir_handler = {
    SSH_FXP_RMDIR, "rmdir", 1, sft_sftp_path_parse, sft_sftp_reply_done,
    NULL, sft_vfs_rmdir, NULL
};

static const sft_sftp_handler_t  sft_sftp_rename_handler = {
    SSH_FXP_RENAME, "rename", 1, sft_sftp_path2_parse, sft_sftp_reply_done,
    NULL, NULL, sft_vfs_rename
};

static const sft_sftp_handler_t  sft_sftp_readlink_handler = {
    SSH_FXP_READLINK, "readlink", 0, sft_sftp_readlink_parse,
    sft_sftp_readlink_complete, NULL, NULL, NULL
};

static const sft_sftp_handler_t  sft_sftp_symlink_handler = {
    SSH_FXP_SYMLINK, "symlink", 1, sft_sftp_path2_parse,
    sft_sftp_reply_done, NULL, NULL, sft_vfs_symlink
};

static const sft_sftp_handler_t  sft_sftp_extended_handler = {
    SSH_FXP_EXTENDED, "extended", 0, sft_sftp_extended, NULL, NULL, NULL, NULL
};


static const sft_sftp_handler_t  *sft_sftp_handlers[] = {
    [SSH_FXP_OPEN] = &sft_sftp_open_handler,
    [SSH_FXP_CLOSE] = &sft_sftp_close_handler,
    [SSH_FXP_READ] = &sft_sftp_read_handler,
    [SSH_FXP_WRITE] = &sft_sftp_write_handler,
    [SSH_FXP_LSTAT] = &sft_sftp_lstat_handler,
    [SSH_FXP_FSTAT] = &sft_sftp_fstat_handler,
    [SSH_FXP_SETSTAT] = &sft_sftp_setstat_handler,
    [SSH_FXP_FSETSTAT] = &sft_sftp_fsetstat_handler,
    [SSH_FXP_OPENDIR] = &sft_sftp_opendir_handler,
    [SSH_FXP_READDIR] = &sft_sftp_readdir_handler,
    [SSH_FXP_REMOVE] = &sft_sftp_remove_handler,
    [SSH_FXP_MKDIR] = &sft_sftp_mkdir_handler,
    [SSH_FXP_RMDIR] = &sft_sftp_rmdir_handler,
    [SSH_FXP_REALPATH] = &sft_sftp_realpath_handler,
    [SSH_FXP_STAT] = &sft_sftp_stat_handler,
    [SSH_FXP_RENAME] = &sft_sftp_rename_handler,
    [SSH_FXP_READLINK] = &sft_sftp_readlink_handler,
    [SSH_FXP_SYMLINK] = &sft_sftp_symlink_handler,
    [SSH_FXP_EXTENDED] = &sft_sftp_extended_handler
};


/*
 * One packet, its length already checked; SFT_AGAIN: it waits for a
 * buffer pool chunk, SFT_ERROR closes the session.
 */

sft_int_t
sft_sftp_dispatch(sft_sftp_session_t *s, u_char *p, size_t len)
{
    u_char                     type;
    uint32_t                   id, version;
    sft_int_t                  rc;
    sft_sftp_buf_t             b;
    const sft_sftp_handler_t  *hd;

    b.pos = p;
    b.last = p + len;

    (void) sft_sftp_get_u8(&b, &type);

    if (type == SSH_FXP_INIT) {
        if (s->inited || sft_sftp_get_u32(&b, &version) != SFT_OK) {
            goto bad;
        }

        s->inited = 1;
        sft_sftp_reply_version(s);
        return SFT_OK;
    }

    if (!s->inited || sft_sftp_get_u32(&b, &id) != SFT_OK) {
        goto bad;
    }

    hd = type < sizeof(sft_sftp_handlers) / sizeof(sft_sftp_handlers[0])
         ? sft_sftp_handlers[type] : NULL;

    if (hd == NULL) {
        sft_sftp_status(s, id, SSH_FX_OP_UNSUPPORTED, "Unsupported request");
        return SFT_OK;
    }

    if (sft_sftp_refuse_write(s, id, hd) != SFT_OK) {
        return SFT_OK;
    }

    rc = hd->parse(s, &b, id, hd);

    if (rc == SFT_DECLINED) {
        goto bad;
    }

    return (rc == SFT_ERROR || rc == SFT_AGAIN) ? rc : SFT_OK;

bad:

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "client sent malformed sftp packet of type %u",
                  (unsigned) type);

    return SFT_ERROR;
}


/* SFT_DONE: a change asked of a session that may change nothing, refused */

sft_int_t
sft_sftp_refuse_write(sft_sftp_session_t *s, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    if (!hd->write || !sft_vfs_read_only(&s->vfs)) {
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "permission denied: %s in a read-only session", hd->name);
    sft_sftp_status(s, id, SSH_FX_PERMISSION_DENIED, "Permission denied");

    return SFT_DONE;
}


static sft_int_t
sft_sftp_realpath_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd)
{
    u_char    *path;
    uint32_t   plen;

    if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
        return SFT_DECLINED;
    }

    sft_sftp_reply_realpath(s, id, path, plen);

    return SFT_DONE;
}


/* a path (MKDIR: and attributes, ignored) and hd->path_op on it */

sft_int_t
sft_sftp_path_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    u_char              *path;
    uint32_t             plen;
    sft_sftp_request_t  *r;

    if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
        return SFT_DECLINED;
    }

    r = sft_sftp_request_new(s, hd, id, SFT_SFTP_SMALL_REPLY);
    if (r == NULL) {
        return SFT_ERROR;
    }

    if (hd->type == SSH_FXP_MKDIR && sft_sftp_get_attrs(b, r) != SFT_OK) {
        sft_sftp_request_done(r);
        return SFT_DECLINED;
    }

    sft_sftp_result(r, hd->path_op(&s->vfs, &r->req, path, plen));

    return SFT_OK;
}


/*
 * two paths and hd->path2_op on them; SYMLINK has them in OpenSSH's
 * order, the draft's swapped: the target, then the link
 */

sft_int_t
sft_sftp_path2_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    u_char              *p[2];
    uint32_t             n[2];
    sft_uint_t           swap;
    sft_sftp_request_t  *r;

    swap = (hd->type == SSH_FXP_SYMLINK);

    if (sft_sftp_get_string(b, &p[swap], &n[swap]) != SFT_OK
        || sft_sftp_get_string(b, &p[!swap], &n[!swap]) != SFT_OK)
    {
        return SFT_DECLINED;
    }

    r = sft_sftp_request_new(s, hd, id, SFT_SFTP_SMALL_REPLY);
    if (r == NULL) {
        return SFT_ERROR;
    }

    sft_sftp_result(r, hd->path2_op(&s->vfs, &r->req, p[0], n[0], p[1],
                                    n[1]));

    return SFT_OK;
}


static sft_int_t
sft_sftp_readlink_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd)
{
    u_char              *path;
    uint32_t             plen;
    sft_sftp_request_t  *r;

    if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
        return SFT_DECLINED;
    }

    r = sft_sftp_request_new(s, hd, id,
                             SFT_SFTP_SMALL_REPLY + 2 * SFT_STORAGE_PATH_MAX);
    if (r == NULL) {
        return SFT_ERROR;
    }

    r->data = sft_pnalloc(r->pool, SFT_STORAGE_PATH_MAX);
    if (r->data == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    sft_sftp_result(r, sft_vfs_readlink(&s->vfs, &r->req, path, plen,
                                        r->data, SFT_STORAGE_PATH_MAX));

    return SFT_OK;
}


static void
sft_sftp_readlink_complete(sft_sftp_request_t *r)
{
    if (r->req.err == SFT_STORAGE_OK) {
        sft_sftp_reply_name(r->session, r->id, r->data,
                            (size_t) r->req.nbytes);

    } else {
        sft_sftp_storage_status(r->session, r->id, r->req.err);
    }

    sft_sftp_finish(r);
}


/* SETSTAT, lsetstat@openssh.com: a path and the attributes to set */

sft_int_t
sft_sftp_setstat_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd)
{
    u_char              *path;
    uint32_t             plen;
    sft_sftp_request_t  *r;

    if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
        return SFT_DECLINED;
    }

    r = sft_sftp_request_new(s, hd, id, SFT_SFTP_SMALL_REPLY);
    if (r == NULL) {
        return SFT_ERROR;
    }

    if (sft_sftp_get_attrs(b, r) != SFT_OK) {
        sft_sftp_request_done(r);
        return SFT_DECLINED;
    }

    return sft_sftp_setstat_start(r, path, plen);
}


/* the path kept for the steps, which run from the completion */

sft_int_t
sft_sftp_setstat_start(sft_sftp_request_t *r, u_char *path, size_t len)
{
    r->path = sft_pnalloc(r->pool, len ? len : 1);
    if (r->path == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    sft_memcpy(r->path, path, len);
    r->path_len = len;

    r->req.err = SFT_STORAGE_OK;
    sft_sftp_complete(r);

    return SFT_OK;
}


/* step 0: chmod; step 1: the times; step 2: the reply */

void
sft_sftp_setstat_complete(sft_sftp_request_t *r)
{
    sft_int_t            rc;
    sft_sftp_session_t  *s = r->session;

    if (r->req.err == SFT_STORAGE_OK
        && (r->attr_flags & SSH_FILEXFER_ATTR_SIZE))
    {
        sft_sftp_status(s, r->id, SSH_FX_OP_UNSUPPORTED,
                        "Changing the size is not supported");
        sft_sftp_finish(r);
        return;
    }

    while (r->req.err == SFT_STORAGE_OK && r->step < 2) {
        r->step++;

        if (r->step == 1 && (r->attr_flags & SSH_FILEXFER_ATTR_PERMISSIONS)) {
            rc = sft_vfs_chmod(&s->vfs, &r->req, r->path, r->path_len,
                               (mode_t) r->perm);

        } else if (r->step == 2
                   && (r->attr_flags & SSH_FILEXFER_ATTR_ACMODTIME))
        {
            rc = sft_vfs_settimes(&s->vfs, &r->req, r->path, r->path_len,
                                  (time_t) r->atime, (time_t) r->mtime);

        } else {
            continue;
        }

        if (rc == SFT_AGAIN) {
            s->pending++;
            return;
        }

        if (rc == SFT_OK) {
            r->req.err = SFT_STORAGE_OK;
        }
    }

    sft_sftp_reply_done(r);
}


/* the reply of an operation that has no result but its status */

void
sft_sftp_reply_done(sft_sftp_request_t *r)
{
    if (r->req.err == SFT_STORAGE_OK) {
        sft_sftp_status(r->session, r->id, SSH_FX_OK, "Success");

    } else {
        sft_sftp_storage_why(r->session, r->id, r->req.err, r->req.why);
    }

    sft_sftp_finish(r);
}


/* STAT, LSTAT, FSTAT: the attributes */

void
sft_sftp_attrs_done(sft_sftp_request_t *r)
{
    if (r->req.err == SFT_STORAGE_OK) {
        sft_sftp_reply_attrs(r->session, r->id, &r->req.st);

    } else {
        sft_sftp_storage_status(r->session, r->id, r->req.err);
    }

    sft_sftp_finish(r);
}
