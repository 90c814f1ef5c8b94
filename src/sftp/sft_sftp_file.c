/*
 * sft_sftp_file.c -- the requests on handles other than READ and WRITE:
 * OPEN and OPENDIR, CLOSE (the times FSETSTAT kept, then the close and
 * the commit of an upload), FSTAT, FSETSTAT and READDIR.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>


static sft_int_t sft_sftp_open_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_opendir_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static void sft_sftp_open_complete(sft_sftp_request_t *r);
static void sft_sftp_open_abort(sft_sftp_request_t *r);
static sft_int_t sft_sftp_close_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static void sft_sftp_close_complete(sft_sftp_request_t *r);
static sft_int_t sft_sftp_close_step(sft_sftp_request_t *r);
static sft_int_t sft_sftp_fstat_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static void sft_sftp_fstat_complete(sft_sftp_request_t *r);
static sft_int_t sft_sftp_fsetstat_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_fd_next(sft_sftp_request_t *r);
static sft_int_t sft_sftp_readdir_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static void sft_sftp_readdir_complete(sft_sftp_request_t *r);


const sft_sftp_handler_t  sft_sftp_open_handler = {
    SSH_FXP_OPEN, "open", 0, sft_sftp_open_parse, sft_sftp_open_complete,
    sft_sftp_open_abort, NULL, NULL
};

const sft_sftp_handler_t  sft_sftp_opendir_handler = {
    SSH_FXP_OPENDIR, "opendir", 0, sft_sftp_opendir_parse,
    sft_sftp_open_complete, sft_sftp_open_abort, NULL, NULL
};

const sft_sftp_handler_t  sft_sftp_close_handler = {
    SSH_FXP_CLOSE, "close", 0, sft_sftp_close_parse, sft_sftp_close_complete,
    NULL, NULL, NULL
};

const sft_sftp_handler_t  sft_sftp_fstat_handler = {
    SSH_FXP_FSTAT, "fstat", 0, sft_sftp_fstat_parse, sft_sftp_fstat_complete,
    NULL, NULL, NULL
};

const sft_sftp_handler_t  sft_sftp_fsetstat_handler = {
    SSH_FXP_FSETSTAT, "fsetstat", 1, sft_sftp_fsetstat_parse,
    sft_sftp_fd_complete, NULL, NULL, NULL
};

const sft_sftp_handler_t  sft_sftp_readdir_handler = {
    SSH_FXP_READDIR, "readdir", 0, sft_sftp_readdir_parse,
    sft_sftp_readdir_complete, NULL, NULL, NULL
};


/* a file for reading, or for writing as the flags say how */

static sft_int_t
sft_sftp_open_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    u_char              *path;
    uint32_t             plen, pflags;
    sft_uint_t           flags;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    if (sft_sftp_get_string(b, &path, &plen) != SFT_OK
        || sft_sftp_get_u32(b, &pflags) != SFT_OK)
    {
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

    h = sft_sftp_handle_new(s, path, plen, 0);
    if (h == NULL) {
        sft_sftp_request_done(r);
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Too many handles");
        return SFT_DONE;
    }

    r->handle = h;
    h->busy++;

    if (!(pflags & SSH_FXF_WRITE)) {
        r->req.flags = SFT_STORAGE_READ_SEQUENTIAL;
        sft_sftp_result(r, sft_vfs_open_read(&s->vfs, &r->req, &h->file,
                                             path, plen));
        return SFT_OK;
    }

    h->write = 1;

    if (pflags & SSH_FXF_APPEND) {
        flags = SFT_STORAGE_WRITE_APPEND;

    } else if (pflags & (SSH_FXF_TRUNC|SSH_FXF_EXCL)) {
        flags = SFT_STORAGE_WRITE_REPLACE;

    } else {
        flags = SFT_STORAGE_WRITE_INPLACE;
    }

    if (pflags & SSH_FXF_EXCL) {
        flags |= SFT_STORAGE_WRITE_EXCL;
    }

    sft_sftp_result(r, sft_vfs_open_write(&s->vfs, &r->req, &h->file, path,
                                          plen, flags, 0));

    return SFT_OK;
}


static sft_int_t
sft_sftp_opendir_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd)
{
    u_char              *path;
    uint32_t             plen;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
        return SFT_DECLINED;
    }

    r = sft_sftp_request_new(s, hd, id, SFT_SFTP_SMALL_REPLY);
    if (r == NULL) {
        return SFT_ERROR;
    }

    h = sft_sftp_handle_new(s, path, plen, 1);
    if (h == NULL) {
        sft_sftp_request_done(r);
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Too many handles");
        return SFT_DONE;
    }

    r->handle = h;
    h->busy++;
    sft_sftp_result(r, sft_vfs_opendir(&s->vfs, &r->req, &h->dir, path,
                                       plen));

    return SFT_OK;
}


static void
sft_sftp_open_complete(sft_sftp_request_t *r)
{
    sft_storage_err_t    err = r->req.err;
    sft_sftp_handle_t   *h = r->handle;
    sft_sftp_session_t  *s = r->session;

    h->busy--;

    if (err == SFT_STORAGE_OK) {
        h->opened = 1;
        sft_sftp_reply_handle(s, r->id, h);

    } else {
        sft_sftp_storage_status(s, r->id, err);
        sft_sftp_handle_free(s, h);
        r->handle = NULL;
    }

    sft_sftp_finish(r);
}


/* opened for no one, the session gone: closed again, an upload removed */

static void
sft_sftp_open_abort(sft_sftp_request_t *r)
{
    if (r->req.err == SFT_STORAGE_OK) {
        r->handle->opened = 1;
    }
}


static sft_int_t
sft_sftp_close_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    sft_int_t            rc;
    sft_sftp_request_t  *r;

    rc = sft_sftp_handle_request(s, b, id, hd, SFT_SFTP_SMALL_REPLY, &r);
    if (rc != SFT_OK) {
        return rc;
    }

    r->handle->closing = r;

    if (r->handle->busy == 0) {
        sft_sftp_complete(r);
    }

    return SFT_OK;
}


/*
 * step 0: the times an FSETSTAT left for the end (after the last WRITE,
 * kept by the rename of a temporary upload); step 1: the close and
 * commit; step 2: the reply
 */

static void
sft_sftp_close_complete(sft_sftp_request_t *r)
{
    sft_storage_err_t    err;
    sft_sftp_handle_t   *h = r->handle;
    sft_sftp_session_t  *s = r->session;

    if (sft_sftp_close_step(r) == SFT_AGAIN) {
        return;
    }

    if (h->busy) {
        h->busy--;
    }

    h->opened = 0;
    err = r->req.err;

    if (err == SFT_STORAGE_OK && h->write_err != SFT_STORAGE_OK) {
        err = h->write_err;
    }

    if (err == SFT_STORAGE_OK) {
        sft_sftp_status(s, r->id, SSH_FX_OK, "Success");

    } else {
        sft_sftp_storage_status(s, r->id, err);
    }

    if (!h->is_dir) {
        h->closed = (err == SFT_STORAGE_OK);
        sft_sftp_handle_report(s, h);
    }

    sft_sftp_handle_free(s, h);
    r->handle = NULL;

    sft_sftp_finish(r);
}


/* the steps of CLOSE before the reply; SFT_AGAIN: one runs */

static sft_int_t
sft_sftp_close_step(sft_sftp_request_t *r)
{
    sft_int_t            rc;
    sft_sftp_handle_t   *h = r->handle;
    sft_sftp_session_t  *s = r->session;

    if (r->step == 0) {
        r->step = 1;

        if (!h->opened || h->write_err != SFT_STORAGE_OK) {
            h->set_times = 0;
        }

        if (h->set_times) {
            h->busy++;
            rc = sft_vfs_futimes(&s->vfs, &r->req, &h->file,
                                 (time_t) h->atime, (time_t) h->mtime);

            if (rc == SFT_AGAIN) {
                s->pending++;
                return SFT_AGAIN;
            }
        }
    }

    if (r->step == 1) {
        r->step = 2;

        if (h->set_times) {
            h->set_times = 0;
            h->busy--;

            if (r->req.err != SFT_STORAGE_OK) {
                /* as a failed WRITE: not committed */
                sft_log_error(SFT_LOG_INFO, s->log, r->req.sys_err,
                              "times of \"%s\" not set", h->path);
                h->write_err = r->req.err;
            }
        }

        r->req.err = SFT_STORAGE_OK;

        if (h->opened) {
            h->busy++;
            h->opened = 0;

            rc = h->is_dir ? sft_vfs_closedir(&s->vfs, &r->req, &h->dir)
                           : sft_vfs_close(&s->vfs, &r->req, &h->file,
                                           h->write_err == SFT_STORAGE_OK);

            if (rc == SFT_AGAIN) {
                s->pending++;
                return SFT_AGAIN;
            }

            if (rc == SFT_OK) {
                r->req.err = SFT_STORAGE_OK;
            }
        }
    }

    return SFT_OK;
}


static sft_int_t
sft_sftp_fstat_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    sft_int_t            rc;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    rc = sft_sftp_handle_request(s, b, id, hd, SFT_SFTP_SMALL_REPLY, &r);
    if (rc != SFT_OK) {
        return rc;
    }

    /* the completion releases the handle: a CLOSE waits */
    h = r->handle;
    h->busy++;

    /* a file: the open one (an upload's temporary file) */
    rc = h->is_dir ? sft_vfs_stat(&s->vfs, &r->req, h->path, h->path_len)
                   : sft_vfs_fstat(&s->vfs, &r->req, &h->file);
    sft_sftp_result(r, rc);

    return SFT_OK;
}


static void
sft_sftp_fstat_complete(sft_sftp_request_t *r)
{
    r->handle->busy--;

    sft_sftp_attrs_done(r);
}


/*
 * FSETSTAT of a file open for writing: the mode and the size go to the
 * open file now (a temporary upload keeps them through its rename), the
 * times wait for CLOSE, after the last WRITE could change them; a size is
 * range-checked here, before the VFS does any arithmetic with it.  Of any
 * other handle: SETSTAT of its path.
 */

static sft_int_t
sft_sftp_fsetstat_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd)
{
    sft_int_t            rc;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    rc = sft_sftp_handle_request(s, b, id, hd, SFT_SFTP_SMALL_REPLY, &r);
    if (rc != SFT_OK) {
        return rc;
    }

    h = r->handle;

    if (sft_sftp_get_attrs(b, r) != SFT_OK) {
        sft_sftp_request_done(r);
        return SFT_DECLINED;
    }

    if (!h->write) {
        r->handler = &sft_sftp_setstat_handler;
        r->handle = NULL;
        return sft_sftp_setstat_start(r, h->path, h->path_len);
    }

    if ((r->attr_flags & SSH_FILEXFER_ATTR_SIZE)
        && sft_sftp_range(s, id, r->size, 0) != SFT_OK)
    {
        sft_sftp_request_done(r);
        return SFT_DONE;
    }

    h->busy++;

    r->req.err = SFT_STORAGE_OK;
    sft_sftp_complete(r);

    return SFT_OK;
}


/*
 * The steps on an open file that FSETSTAT's attributes ask for, each when
 * the one before it succeeded: 1 the mode (refused: nothing changes), 2
 * the times kept for CLOSE, 3 the size; fsync@openssh.com starts at 3,
 * done.  SFT_AGAIN: a step runs.
 */

static sft_int_t
sft_sftp_fd_next(sft_sftp_request_t *r)
{
    sft_int_t            rc;
    sft_sftp_handle_t   *h = r->handle;
    sft_sftp_session_t  *s = r->session;

    while (r->req.err == SFT_STORAGE_OK && r->step < 3) {
        r->step++;

        if (r->step == 1 && (r->attr_flags & SSH_FILEXFER_ATTR_PERMISSIONS)) {
            rc = sft_vfs_fchmod(&s->vfs, &r->req, &h->file, h->path,
                                h->path_len, (mode_t) r->perm);

        } else if (r->step == 2
                   && (r->attr_flags & SSH_FILEXFER_ATTR_ACMODTIME))
        {
            h->atime = r->atime;
            h->mtime = r->mtime;
            h->set_times = 1;
            continue;

        } else if (r->step == 3 && (r->attr_flags & SSH_FILEXFER_ATTR_SIZE)) {
            rc = sft_vfs_truncate(&s->vfs, &r->req, &h->file,
                                  (off_t) r->size);

        } else {
            continue;
        }

        if (rc == SFT_AGAIN) {
            s->pending++;
            return SFT_AGAIN;
        }

        if (rc == SFT_OK) {
            r->req.err = SFT_STORAGE_OK;
        }
    }

    return SFT_OK;
}


/* FSETSTAT of a file open for writing, fsync@openssh.com */

void
sft_sftp_fd_complete(sft_sftp_request_t *r)
{
    if (sft_sftp_fd_next(r) == SFT_AGAIN) {
        return;
    }

    r->handle->busy--;

    sft_sftp_reply_done(r);
}


static sft_int_t
sft_sftp_readdir_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd)
{
    sft_int_t            rc;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    rc = sft_sftp_handle_request(s, b, id, hd, SFT_SFTP_DIR_REPLY, &r);
    if (rc != SFT_OK) {
        return rc;
    }

    h = r->handle;

    if (!h->is_dir) {
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Bad handle");
        sft_sftp_request_done(r);
        return SFT_DONE;
    }

    if (h->dir_read && h->entry < h->dir.nentries) {
        r->req.err = SFT_STORAGE_OK;
        sft_sftp_complete(r);
        return SFT_OK;
    }

    if (h->dir.eof) {
        sft_sftp_status(s, id, SSH_FX_EOF, "End of file");
        sft_sftp_request_done(r);
        return SFT_OK;
    }

    h->busy++;
    sft_sftp_result(r, sft_vfs_readdir(&s->vfs, &r->req, &h->dir));

    return SFT_OK;
}


/* the rest of the batch read, or a new batch */

static void
sft_sftp_readdir_complete(sft_sftp_request_t *r)
{
    sft_sftp_handle_t   *h = r->handle;
    sft_sftp_session_t  *s = r->session;

    if (r->req.op == SFT_STORAGE_READDIR) {
        h->busy--;
        r->req.op = SFT_STORAGE_NOPS;

        if (r->req.err != SFT_STORAGE_OK) {
            sft_sftp_storage_status(s, r->id, r->req.err);
            sft_sftp_finish(r);
            return;
        }

        h->dir_read = 1;
        h->entry = 0;

        if (h->dir.nentries == 0) {
            sft_sftp_status(s, r->id, SSH_FX_EOF, "End of file");
            sft_sftp_finish(r);
            return;
        }
    }

    sft_sftp_reply_names(r);
    sft_sftp_finish(r);
}
