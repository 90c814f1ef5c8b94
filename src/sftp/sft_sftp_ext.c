/*
 * sft_sftp_ext.c -- OpenSSH's extensions, a table by name like the one of
 * request types: posix-rename, hardlink, statvfs, fstatvfs, fsync,
 * lsetstat, limits, expand-path, home-directory and users-groups-by-id
 * here; check-file and copy-data in files of their own.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>


static sft_int_t sft_sftp_fstatvfs_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static void sft_sftp_statvfs_complete(sft_sftp_request_t *r);
static sft_int_t sft_sftp_fsync_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_limits_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_expand_path_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_home_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_ids_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);


/* posix-rename: the old name, then the new one */

static const sft_sftp_handler_t  sft_sftp_posix_rename_handler = {
    SSH_FXP_EXTENDED, "posix-rename@openssh.com", 1, sft_sftp_path2_parse,
    sft_sftp_reply_done, NULL, NULL, sft_vfs_rename
};

/* hardlink: the existing file, then the new name */

static const sft_sftp_handler_t  sft_sftp_hardlink_handler = {
    SSH_FXP_EXTENDED, "hardlink@openssh.com", 1, sft_sftp_path2_parse,
    sft_sftp_reply_done, NULL, NULL, sft_vfs_link
};

/* the file system of a path, of a handle's path: as df shows it */

static const sft_sftp_handler_t  sft_sftp_statvfs_handler = {
    SSH_FXP_EXTENDED, "statvfs@openssh.com", 0, sft_sftp_path_parse,
    sft_sftp_statvfs_complete, NULL, sft_vfs_statvfs, NULL
};

static const sft_sftp_handler_t  sft_sftp_fstatvfs_handler = {
    SSH_FXP_EXTENDED, "fstatvfs@openssh.com", 0, sft_sftp_fstatvfs_parse,
    sft_sftp_statvfs_complete, NULL, NULL, NULL
};

static const sft_sftp_handler_t  sft_sftp_fsync_handler = {
    SSH_FXP_EXTENDED, "fsync@openssh.com", 0, sft_sftp_fsync_parse,
    sft_sftp_fd_complete, NULL, NULL, NULL
};

static const sft_sftp_handler_t  sft_sftp_lsetstat_handler = {
    SSH_FXP_EXTENDED, "lsetstat@openssh.com", 1, sft_sftp_setstat_parse,
    sft_sftp_setstat_complete, NULL, NULL, NULL
};

static const sft_sftp_handler_t  sft_sftp_limits_handler = {
    SSH_FXP_EXTENDED, "limits@openssh.com", 0, sft_sftp_limits_parse,
    NULL, NULL, NULL, NULL
};

static const sft_sftp_handler_t  sft_sftp_expand_path_handler = {
    SSH_FXP_EXTENDED, "expand-path@openssh.com", 0,
    sft_sftp_expand_path_parse, NULL, NULL, NULL, NULL
};

static const sft_sftp_handler_t  sft_sftp_home_handler = {
    SSH_FXP_EXTENDED, "home-directory", 0, sft_sftp_home_parse, NULL, NULL,
    NULL, NULL
};

static const sft_sftp_handler_t  sft_sftp_ids_handler = {
    SSH_FXP_EXTENDED, "users-groups-by-id@openssh.com", 0,
    sft_sftp_ids_parse, NULL, NULL, NULL, NULL
};


static const sft_sftp_handler_t  *sft_sftp_extensions[] = {
    &sft_sftp_posix_rename_handler,
    &sft_sftp_hardlink_handler,
    &sft_sftp_statvfs_handler,
    &sft_sftp_fstatvfs_handler,
    &sft_sftp_fsync_handler,
    &sft_sftp_lsetstat_handler,
    &sft_sftp_limits_handler,
    &sft_sftp_expand_path_handler,
    &sft_sftp_home_handler,
    &sft_sftp_ids_handler,
    &sft_sftp_check_name_handler,
    &sft_sftp_check_handle_handler,
    &sft_sftp_copy_data_handler
};


/* EXTENDED: the extension's name, then what it takes */

sft_int_t
sft_sftp_extended(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *extended)
{
    u_char                    *name;
    uint32_t                   nlen;
    sft_int_t                  rc;
    sft_uint_t                 i;
    const sft_sftp_handler_t  *hd;

    if (sft_sftp_get_string(b, &name, &nlen) != SFT_OK) {
        return SFT_DECLINED;
    }

    for (i = 0; i < sizeof(sft_sftp_extensions) / sizeof(void *); i++) {
        hd = sft_sftp_extensions[i];

        if (nlen == sft_strlen(hd->name)
            && sft_strncmp(name, hd->name, nlen) == 0)
        {
            break;
        }
    }

    if (i == sizeof(sft_sftp_extensions) / sizeof(void *)) {
        sft_sftp_status(s, id, SSH_FX_OP_UNSUPPORTED,
                        "Unsupported extension");
        return SFT_DONE;
    }

    rc = sft_sftp_refuse_write(s, id, hd);
    if (rc != SFT_OK) {
        return rc;
    }

    rc = hd->parse(s, b, id, hd);

    if (rc == SFT_DECLINED) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "client sent malformed sftp extension \"%s\"",
                      hd->name);
        return SFT_ERROR;
    }

    return rc;
}


static sft_int_t
sft_sftp_fstatvfs_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd)
{
    sft_int_t            rc;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    rc = sft_sftp_handle_request(s, b, id, hd, SFT_SFTP_SMALL_REPLY, &r);
    if (rc != SFT_OK) {
        return rc;
    }

    /* its path is all it needs: no hold on the handle */
    h = r->handle;
    r->handle = NULL;

    sft_sftp_result(r, sft_vfs_statvfs(&s->vfs, &r->req, h->path,
                                       h->path_len));

    return SFT_OK;
}


static void
sft_sftp_statvfs_complete(sft_sftp_request_t *r)
{
    if (r->req.err == SFT_STORAGE_OK) {
        sft_sftp_reply_statvfs(r->session, r->id, &r->req.vfs);

    } else {
        sft_sftp_storage_status(r->session, r->id, r->req.err);
    }

    sft_sftp_finish(r);
}


/* the handle's file to stable storage: the last step of an FSETSTAT */

static sft_int_t
sft_sftp_fsync_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    sft_int_t            rc;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    rc = sft_sftp_handle_request(s, b, id, hd, SFT_SFTP_SMALL_REPLY, &r);
    if (rc != SFT_OK) {
        return rc;
    }

    h = r->handle;

    if (h->is_dir) {
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Bad handle");
        sft_sftp_request_done(r);
        return SFT_DONE;
    }

    r->step = 3;
    h->busy++;
    sft_sftp_result(r, sft_vfs_fsync(&s->vfs, &r->req, &h->file));

    return SFT_OK;
}


static sft_int_t
sft_sftp_limits_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    sft_sftp_reply_limits(s, id);

    return SFT_DONE;
}


/* the home is the session's "/": "~" and "~/x" are "/" and "/x" */

static sft_int_t
sft_sftp_expand_path_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd)
{
    u_char    *path;
    uint32_t   plen;

    if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
        return SFT_DECLINED;
    }

    if (plen && path[0] == '~') {
        if (plen > 1 && path[1] != '/') {
            sft_sftp_status(s, id, SSH_FX_NO_SUCH_FILE, "No such user");
            return SFT_DONE;
        }

        path[0] = '/';
    }

    sft_sftp_reply_realpath(s, id, path, plen);

    return SFT_DONE;
}


static sft_int_t
sft_sftp_home_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    u_char    *user;
    uint32_t   len;

    if (sft_sftp_get_string(b, &user, &len) != SFT_OK) {
        return SFT_DECLINED;
    }

    if (len
        && (len != s->user.len || sft_strncmp(user, s->user.data, len) != 0))
    {
        sft_sftp_status(s, id, SSH_FX_NO_SUCH_FILE, "No such user");
        return SFT_DONE;
    }

    sft_sftp_reply_realpath(s, id, (u_char *) "/", 1);

    return SFT_DONE;
}


static sft_int_t
sft_sftp_ids_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    u_char    *uids, *gids;
    uint32_t   ulen, glen;

    if (sft_sftp_get_string(b, &uids, &ulen) != SFT_OK
        || sft_sftp_get_string(b, &gids, &glen) != SFT_OK
        || ulen % 4 || glen % 4)
    {
        return SFT_DECLINED;
    }

    if (ulen / 4 > SFT_SFTP_MAX_IDS || glen / 4 > SFT_SFTP_MAX_IDS) {
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Too many ids");
        return SFT_DONE;
    }

    sft_sftp_reply_ids(s, id, uids, ulen, gids, glen);

    return SFT_DONE;
}
