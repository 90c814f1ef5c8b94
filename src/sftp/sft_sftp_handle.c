/*
 * sft_sftp_handle.c -- handles: a 4-byte index into the session's table,
 * the open file or directory behind it, the operations running on it
 * (a CLOSE waits for them), the transfer log at its end, and the release
 * of every handle when the session goes.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>

#include <sft_xfer.h>


sft_sftp_handle_t *
sft_sftp_handle_new(sft_sftp_session_t *s, u_char *path, size_t len,
    sft_uint_t is_dir)
{
    size_t              size;
    sft_uint_t          i;
    sft_sftp_handle_t  *h;

    if (s->nhandles == SFT_SFTP_MAX_HANDLES || len > SFT_STORAGE_PATH_MAX) {
        return NULL;
    }

    for (i = 0; s->handles[i]; i++) { /* void */ }

    /*
     * a directory's batch of entries lives as long as the handle: the
     * READDIRs fill it from a thread long after OPENDIR's pool is gone
     */

    size = sft_align(sizeof(sft_sftp_handle_t) + len + 1, sizeof(void *));

    h = sft_alloc(size + (is_dir ? SFT_STORAGE_DIR_BATCH
                                   * sizeof(sft_storage_dirent_t)
                                   + SFT_STORAGE_PATH_MAX + 1 : 0),
                  s->log);
    if (h == NULL) {
        return NULL;
    }

    sft_memzero(h, sizeof(sft_sftp_handle_t));

    h->index = i;
    h->begin = sft_current_msec;
    h->path = (u_char *) (h + 1);
    sft_memcpy(h->path, path, len);
    h->path[len] = '\0';
    h->path_len = len;

    if (is_dir) {
        h->is_dir = 1;
        h->dir.entries = (sft_storage_dirent_t *) ((u_char *) h + size);
        h->dir.vdir = (u_char *) (h->dir.entries + SFT_STORAGE_DIR_BATCH);
    }

    s->handles[i] = h;
    s->nhandles++;

    return h;
}


void
sft_sftp_handle_free(sft_sftp_session_t *s, sft_sftp_handle_t *h)
{
    s->handles[h->index] = NULL;
    s->nhandles--;

    sft_free(h);
}


sft_int_t
sft_sftp_get_handle(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    sft_sftp_handle_t **h)
{
    u_char    *d;
    uint32_t   len, i;

    if (sft_sftp_get_string(b, &d, &len) != SFT_OK) {
        return SFT_ERROR;
    }

    *h = NULL;

    if (len != 4) {
        return SFT_OK;
    }

    i = ((uint32_t) d[0] << 24) | ((uint32_t) d[1] << 16)
        | ((uint32_t) d[2] << 8) | d[3];

    if (i < SFT_SFTP_MAX_HANDLES && s->handles[i] && s->handles[i]->opened) {
        *h = s->handles[i];
    }

    return SFT_OK;
}


/*
 * A handle a request names that must be open: SFT_OK, SFT_DONE when the
 * client was told it is not (unknown, or being closed), SFT_DECLINED for
 * a malformed packet.
 */

sft_int_t
sft_sftp_get_open_handle(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, sft_sftp_handle_t **h)
{
    if (sft_sftp_get_handle(s, b, h) != SFT_OK) {
        return SFT_DECLINED;
    }

    if (*h == NULL || (*h)->closing) {
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Invalid handle");
        return SFT_DONE;
    }

    return SFT_OK;
}


/*
 * The start of a request on an open handle: the handle read and the
 * request made with it.  SFT_OK with *rp set, else what a parse returns.
 */

sft_int_t
sft_sftp_handle_request(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd, size_t reserve,
    sft_sftp_request_t **rp)
{
    sft_int_t            rc;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    rc = sft_sftp_get_open_handle(s, b, id, &h);
    if (rc != SFT_OK) {
        return rc;
    }

    r = sft_sftp_request_new(s, hd, id, reserve);
    if (r == NULL) {
        return SFT_ERROR;
    }

    r->handle = h;
    *rp = r;

    return SFT_OK;
}


/* an operation on the handle is over: a CLOSE may have waited for it */

void
sft_sftp_handle_idle(sft_sftp_handle_t *h)
{
    h->busy--;

    if (h->busy == 0 && h->closing) {
        sft_sftp_complete(h->closing);
    }
}


/* a file handle's end: the transfer log and counters */

void
sft_sftp_handle_report(sft_sftp_session_t *s, sft_sftp_handle_t *h)
{
    sft_xfer_t  x;

    sft_memzero(&x, sizeof(sft_xfer_t));

    x.service = "sftp";
    x.peer = &s->peer.client;
    x.user = &s->user;
    x.path = h->path;
    x.path_len = h->path_len;
    x.cwd = s->vfs.cwd;
    x.cwd_len = s->vfs.cwd_len;
    x.bytes = h->bytes;
    x.start = h->begin;
    x.direction = h->write ? SFT_XFER_UPLOAD : SFT_XFER_DOWNLOAD;
    x.data_path = SFT_XFER_SFTP;
    x.complete = h->closed;

    sft_xfer_done(&x);
}


/* a closed session: files closed at once, uploads not committed */

void
sft_sftp_handle_release(sft_sftp_session_t *s, sft_sftp_handle_t *h)
{
    sft_storage_req_t  req;

    if (h->busy) {
        h->busy--;
    }

    if (h->busy || !h->released) {
        return;
    }

    if (h->opened) {
        sft_memzero(&req, sizeof(sft_storage_req_t));
        req.pool = s->pool;

        if (h->is_dir) {
            (void) sft_vfs_closedir(&s->vfs, &req, &h->dir);

        } else {
            (void) sft_vfs_close(&s->vfs, &req, &h->file, 0);
            sft_sftp_handle_report(s, h);
        }
    }

    sft_sftp_handle_free(s, h);
}


void
sft_sftp_free_handles(sft_sftp_session_t *s)
{
    sft_uint_t           i;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r, *next;

    /* synchronously from now on: a close is quick */
    s->vfs.thread_pool = NULL;

    for (i = 0; i < SFT_SFTP_MAX_HANDLES; i++) {
        h = s->handles[i];

        if (h == NULL) {
            continue;
        }

        /* a WRITE that waited for room waits no more */
        sft_storage_room_forget(&h->file);

        if (h->closing && h->closing->step == 0) {
            /* a CLOSE that waited */
            sft_sftp_request_done(h->closing);
        }

        if (h->writes) {
            /* the WRITEs that wait behind the one running */
            for (r = h->writes->next; r; r = next) {
                next = r->next;
                h->busy--;
                sft_sftp_request_done(r);
            }

            h->writes->next = NULL;
        }

        /* released by the last operation running on it */
        h->closing = NULL;
        h->released = 1;
        h->busy++;
        sft_sftp_handle_release(s, h);
    }
}
