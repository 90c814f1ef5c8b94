/*
 * sft_ftp_transfer.c -- RETR, STOR, APPE and the listings over the data
 * connection: downloads with sendfile(2) from the storage file's
 * descriptor on the event loop, uploads through a chunk of the shared
 * buffer pool written via the VFS (committed on the data connection's
 * EOF, aborted otherwise, so no truncated file appears under the name).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>
#include <sys/sendfile.h>


#define SFT_FTP_SENDFILE_MAX  (1024 * 1024)


static void sft_ftp_transfer_opened(sft_ftp_session_t *s);
static void sft_ftp_transfer_io_done(sft_storage_req_t *req);
static void sft_ftp_transfer_wake(sft_event_t *ev);
static void sft_ftp_send_file(sft_ftp_session_t *s);
static void sft_ftp_recv_file(sft_ftp_session_t *s);
static void sft_ftp_send_list(sft_ftp_session_t *s);
static sft_int_t sft_ftp_write_done(sft_ftp_session_t *s);
static void sft_ftp_transfer_finish(sft_ftp_session_t *s);
static void sft_ftp_transfer_closed(sft_ftp_session_t *s);
static void sft_ftp_transfer_release(sft_ftp_session_t *s);


static const char  *sft_ftp_kind_names[] = {
    "", "RETR", "STOR", "APPE", "LIST", "NLST", "MLSD"
};


void
sft_ftp_transfer_req(sft_ftp_session_t *s, sft_ftp_transfer_t *t)
{
    sft_memzero(&t->req, sizeof(sft_storage_req_t));
    t->req.pool = t->pool;
    t->req.handler = sft_ftp_transfer_io_done;
    t->req.data = s;
}


sft_int_t
sft_ftp_transfer_start(sft_ftp_session_t *s, sft_uint_t kind)
{
    u_char              *p, *end, vpath[SFT_STORAGE_PATH_MAX + 1];
    size_t               len, vlen;
    sft_int_t            rc;
    sft_uint_t           flags;
    sft_pool_t          *pool;
    sft_ftp_transfer_t  *t;

    if (s->data.listener == NULL && s->data.conn == NULL) {
        s->rest = 0;
        sft_ftp_reply(s, 425, "Use PASV or EPSV first.");
        return SFT_OK;
    }

    p = s->arg.data;
    end = p + s->arg.len;

    if (kind == SFT_FTP_LIST || kind == SFT_FTP_NLST) {
        /* "-la" and friends are tolerated and ignored */

        while (p < end && *p == '-') {
            while (p < end && *p != ' ') {
                p++;
            }

            while (p < end && *p == ' ') {
                p++;
            }
        }
    }

    len = end - p;

    if (len == 0) {
        p = (u_char *) ".";
        len = 1;
    }

    pool = sft_create_pool(4096, s->log);
    if (pool == NULL) {
        return SFT_ERROR;
    }

    t = sft_pcalloc(pool, sizeof(sft_ftp_transfer_t));
    if (t == NULL) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    t->pool = pool;
    t->kind = kind;

    t->path = sft_pnalloc(pool, len);
    if (t->path == NULL) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    sft_memcpy(t->path, p, len);
    t->path_len = len;

    t->wake.handler = sft_ftp_transfer_wake;
    t->wake.data = s;
    t->wake.log = s->log;
    t->waiter.event = &t->wake;

    s->transfer = t;
    sft_ftp_transfer_req(s, t);

    switch (kind) {

    case SFT_FTP_RETR:
        rc = sft_vfs_open_read(&s->vfs, &t->req, &t->file, p, len);
        break;

    case SFT_FTP_STOR:
        flags = s->rest ? SFT_STORAGE_WRITE_INPLACE : 0;
        rc = sft_vfs_open_write(&s->vfs, &t->req, &t->file, p, len, flags,
                                s->rest);
        break;

    case SFT_FTP_APPE:
        rc = sft_vfs_open_write(&s->vfs, &t->req, &t->file, p, len,
                                SFT_STORAGE_WRITE_APPEND, 0);
        break;

    default:
        if (sft_vfs_normalize(s->vfs.cwd, s->vfs.cwd_len, p, len, vpath,
                              &vlen)
            == SFT_STORAGE_OK)
        {
            t->perms = sft_vfs_perms(&s->vfs, vpath, vlen);
        }

        rc = sft_vfs_opendir(&s->vfs, &t->req, &t->dir, p, len);
        break;
    }

    if (rc == SFT_AGAIN) {
        t->io = 1;
        s->pending++;
        s->busy = 1;
        return SFT_OK;
    }

    if (rc == SFT_OK) {
        t->req.err = SFT_STORAGE_OK;
    }

    sft_ftp_transfer_opened(s);

    return SFT_OK;
}


static void
sft_ftp_transfer_opened(sft_ftp_session_t *s)
{
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t->req.err != SFT_STORAGE_OK) {
        s->rest = 0;
        t->reason = SFT_FTP_END_STORAGE;
        t->err = t->req.err;
        sft_ftp_transfer_finish(s);
        return;
    }

    t->opened = 1;

    switch (t->kind) {

    case SFT_FTP_RETR:
        t->end = t->file.size;
        t->offset = s->rest;

        if (t->offset > t->end) {
            s->rest = 0;
            t->reason = SFT_FTP_END_STORAGE;
            t->err = SFT_STORAGE_INVALID;
            sft_ftp_transfer_finish(s);
            return;
        }

        sft_ftp_reply(s, 150, "Opening BINARY mode data connection for "
                      "%.*s (%lld bytes).", (int) t->path_len, t->path,
                      (long long) t->end);
        break;

    case SFT_FTP_STOR:
        t->offset = s->rest;
        sft_ftp_reply(s, 150, "Ok to send data.");
        break;

    case SFT_FTP_APPE:
        t->offset = t->file.size;
        sft_ftp_reply(s, 150, "Ok to send data.");
        break;

    default:
        sft_ftp_reply(s, 150, "Here comes the directory listing.");
        break;
    }

    s->rest = 0;
    t->started = 1;

    sft_ftp_transfer_run(s);
}


/* the data connection has been accepted */

void
sft_ftp_transfer_connected(sft_ftp_session_t *s)
{
    if (s->transfer && s->transfer->started) {
        sft_ftp_transfer_run(s);
    }
}


void
sft_ftp_data_event(sft_event_t *ev)
{
    sft_connection_t   *dc;
    sft_ftp_session_t  *s;

    dc = ev->data;
    s = dc->data;

    if (ev->timedout) {
        ev->timedout = 0;
        sft_log_error(SFT_LOG_INFO, s->log, 0, "data connection timed out");

        if (s->transfer) {
            sft_ftp_transfer_abort(s, SFT_FTP_END_NETWORK);

        } else {
            sft_ftp_data_close(s);
        }

        return;
    }

    sft_ftp_transfer_run(s);
}


static void
sft_ftp_transfer_wake(sft_event_t *ev)
{
    sft_ftp_transfer_run(ev->data);
}


void
sft_ftp_transfer_run(sft_ftp_session_t *s)
{
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t == NULL || s->closed || !t->started || t->io || t->finishing
        || s->data.conn == NULL)
    {
        return;
    }

    switch (t->kind) {

    case SFT_FTP_RETR:
        sft_ftp_send_file(s);
        break;

    case SFT_FTP_STOR:
    case SFT_FTP_APPE:
        sft_ftp_recv_file(s);
        break;

    default:
        sft_ftp_send_list(s);
        break;
    }
}


static void
sft_ftp_send_file(sft_ftp_session_t *s)
{
    ssize_t              n;
    sft_fd_t             fd;
    sft_connection_t    *dc;
    sft_storage_t       *st;
    sft_ftp_transfer_t  *t;

    t = s->transfer;
    dc = s->data.conn;
    st = t->file.storage;

    fd = st->driver->file_fd ? st->driver->file_fd(&t->file)
                             : SFT_INVALID_FILE;

    if (fd == SFT_INVALID_FILE) {
        /* the pooled copy for downloads comes with the s3 driver */
        t->reason = SFT_FTP_END_STORAGE;
        t->err = SFT_STORAGE_UNSUPPORTED;
        sft_ftp_transfer_finish(s);
        return;
    }

    while (t->offset < t->end) {
        n = sendfile(dc->fd, fd, &t->offset,
                     (size_t) sft_min(t->end - t->offset,
                                      (off_t) SFT_FTP_SENDFILE_MAX));

        if (n == -1) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                dc->write->ready = 0;
                sft_add_timer(dc->write, s->conf->data_timeout);
                return;
            }

            if (errno == EINTR) {
                continue;
            }

            sft_log_error(SFT_LOG_INFO, s->log, sft_errno,
                          "sendfile() failed");
            t->reason = SFT_FTP_END_NETWORK;
            sft_ftp_transfer_finish(s);
            return;
        }

        if (n == 0) {
            break;      /* the file got shorter */
        }

        sft_stat_add(SFT_STAT_BYTES_SENT, n);
        t->bytes += n;
    }

    sft_ftp_transfer_finish(s);
}


static void
sft_ftp_recv_file(sft_ftp_session_t *s)
{
    ssize_t              n;
    sft_int_t            rc;
    sft_connection_t    *dc;
    sft_ftp_transfer_t  *t;

    t = s->transfer;
    dc = s->data.conn;

    for ( ;; ) {

        if (t->chunk == NULL) {
            t->chunk = sft_buffer_get(&t->waiter);

            if (t->chunk == NULL) {
                return;     /* t->wake runs when one may be free */
            }

            t->chunk_size = sft_buffer_chunk_size();
            t->out_len = 0;
        }

        if (t->out_len == t->chunk_size || (t->eof && t->out_len)) {
            sft_ftp_transfer_req(s, t);

            rc = sft_vfs_write(&s->vfs, &t->req, &t->file, t->chunk,
                               t->out_len, t->offset);

            if (rc == SFT_AGAIN) {
                t->io = 1;
                s->pending++;
                return;
            }

            if (rc == SFT_OK) {
                t->req.err = SFT_STORAGE_OK;
            }

            if (sft_ftp_write_done(s) != SFT_OK) {
                return;
            }

            continue;
        }

        if (t->eof) {
            sft_ftp_transfer_finish(s);
            return;
        }

        n = sft_recv(dc, t->chunk + t->out_len, t->chunk_size - t->out_len);

        if (n == SFT_AGAIN) {
            sft_add_timer(dc->read, s->conf->data_timeout);
            return;
        }

        if (n == 0) {
            t->eof = 1;
            continue;
        }

        if (n == SFT_ERROR) {
            t->reason = SFT_FTP_END_NETWORK;
            sft_ftp_transfer_finish(s);
            return;
        }

        t->out_len += n;
        t->bytes += n;
    }
}


static sft_int_t
sft_ftp_write_done(sft_ftp_session_t *s)
{
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t->req.err != SFT_STORAGE_OK
        || t->req.nbytes != (ssize_t) t->out_len)
    {
        t->reason = SFT_FTP_END_STORAGE;
        t->err = t->req.err ? t->req.err : SFT_STORAGE_IO;
        sft_ftp_transfer_finish(s);
        return SFT_ERROR;
    }

    t->offset += t->out_len;
    t->out_len = 0;

    return SFT_OK;
}


static void
sft_ftp_send_list(sft_ftp_session_t *s)
{
    ssize_t              n;
    sft_int_t            rc;
    sft_connection_t    *dc;
    sft_ftp_transfer_t  *t;

    t = s->transfer;
    dc = s->data.conn;

    for ( ;; ) {

        while (t->out_pos < t->out_len) {
            n = sft_send(dc, t->out + t->out_pos, t->out_len - t->out_pos);

            if (n == SFT_AGAIN) {
                sft_add_timer(dc->write, s->conf->data_timeout);
                return;
            }

            if (n == SFT_ERROR) {
                t->reason = SFT_FTP_END_NETWORK;
                sft_ftp_transfer_finish(s);
                return;
            }

            t->out_pos += n;
            t->bytes += n;
        }

        if (t->eof) {
            sft_ftp_transfer_finish(s);
            return;
        }

        rc = sft_ftp_list_fill(s, t);

        if (rc == SFT_AGAIN) {
            return;
        }

        if (rc == SFT_ERROR) {
            t->reason = SFT_FTP_END_STORAGE;
            t->err = t->req.err ? t->req.err : SFT_STORAGE_IO;
            sft_ftp_transfer_finish(s);
            return;
        }
    }
}


static void
sft_ftp_transfer_io_done(sft_storage_req_t *req)
{
    sft_ftp_session_t   *s = req->data;
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    s->pending--;
    t->io = 0;

    if (s->closed) {
        if ((req->op == SFT_STORAGE_OPEN_READ
             || req->op == SFT_STORAGE_OPEN_WRITE
             || req->op == SFT_STORAGE_OPENDIR)
            && req->err == SFT_STORAGE_OK)
        {
            t->opened = 1;
        }

        if (req->op == SFT_STORAGE_CLOSE) {
            t->opened = 0;
        }

        sft_ftp_transfer_release(s);

        if (s->pending == 0) {
            sft_ftp_session_free(s);
        }

        return;
    }

    switch (req->op) {

    case SFT_STORAGE_OPEN_READ:
    case SFT_STORAGE_OPEN_WRITE:
    case SFT_STORAGE_OPENDIR:
        s->busy = 0;
        sft_ftp_transfer_opened(s);
        break;

    case SFT_STORAGE_CLOSE:
        sft_ftp_transfer_closed(s);
        break;

    case SFT_STORAGE_WRITE:
        if (t->aborted) {
            sft_ftp_transfer_finish(s);
            break;
        }

        if (sft_ftp_write_done(s) == SFT_OK) {
            sft_ftp_transfer_run(s);
        }

        break;

    default:   /* READDIR */
        if (t->aborted) {
            sft_ftp_transfer_finish(s);
            break;
        }

        if (req->err != SFT_STORAGE_OK) {
            t->reason = SFT_FTP_END_STORAGE;
            t->err = req->err;
            sft_ftp_transfer_finish(s);
            break;
        }

        t->entry = 0;
        sft_ftp_transfer_run(s);
        break;
    }

    sft_ftp_resume(s);
}


/* ABOR (1), no data connection (2), a timeout, or the session went (0) */

void
sft_ftp_transfer_abort(sft_ftp_session_t *s, sft_uint_t reason)
{
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t->finishing) {
        return;
    }

    t->aborted = 1;

    switch (reason) {
    case 0: t->reason = SFT_FTP_END_CLOSED; break;
    case 1: t->reason = SFT_FTP_END_ABOR; break;
    case 2: t->reason = SFT_FTP_END_NOCONN; break;
    default: t->reason = reason; break;
    }

    sft_ftp_data_close(s);

    if (t->io) {
        return;     /* the running operation finishes it */
    }

    sft_ftp_transfer_finish(s);
}


static void
sft_ftp_transfer_finish(sft_ftp_session_t *s)
{
    sft_int_t            rc;
    sft_uint_t           commit;
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (s->closed) {
        sft_ftp_transfer_release(s);
        return;
    }

    t->finishing = 1;

    /* the data connection's close is the end of a download for the client */
    sft_ftp_data_close(s);

    sft_buffer_cancel(&t->waiter);

    if (t->wake.posted) {
        sft_delete_posted_event(&t->wake);
    }

    if (t->chunk) {
        sft_buffer_put(t->chunk);
        t->chunk = NULL;
    }

    if (!t->opened) {
        sft_ftp_transfer_closed(s);
        return;
    }

    if (t->kind >= SFT_FTP_LIST) {
        sft_ftp_transfer_req(s, t);
        (void) sft_vfs_closedir(&s->vfs, &t->req, &t->dir);
        t->opened = 0;
        sft_ftp_transfer_closed(s);
        return;
    }

    commit = (t->kind == SFT_FTP_STOR || t->kind == SFT_FTP_APPE)
             && t->reason == SFT_FTP_END_OK;

    sft_ftp_transfer_req(s, t);

    rc = sft_vfs_close(&s->vfs, &t->req, &t->file, commit);

    if (rc == SFT_AGAIN) {
        t->io = 1;
        s->pending++;
        return;
    }

    if (rc == SFT_OK) {
        t->req.err = SFT_STORAGE_OK;
    }

    sft_ftp_transfer_closed(s);
}


static void
sft_ftp_transfer_closed(sft_ftp_session_t *s)
{
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t->opened && t->req.op == SFT_STORAGE_CLOSE) {
        t->opened = 0;

        if (t->reason == SFT_FTP_END_OK && t->req.err != SFT_STORAGE_OK) {
            t->reason = SFT_FTP_END_STORAGE;
            t->err = t->req.err;
        }
    }

    t->opened = 0;

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "ftp %s \"%.*s\" %lld bytes, %s",
                  sft_ftp_kind_names[t->kind], (int) t->path_len, t->path,
                  (long long) t->bytes,
                  t->reason == SFT_FTP_END_OK ? "complete" : "failed");

    switch (t->reason) {

    case SFT_FTP_END_OK:
        sft_ftp_reply(s, 226, "Transfer complete.");
        break;

    case SFT_FTP_END_ABOR:
        sft_ftp_reply(s, 426, "Connection closed; transfer aborted.");
        sft_ftp_reply(s, 226, "Abort successful.");
        break;

    case SFT_FTP_END_NOCONN:
        sft_ftp_reply(s, 425, "Can't open data connection.");
        break;

    case SFT_FTP_END_NETWORK:
        sft_ftp_reply(s, 426, "Connection closed; transfer aborted.");
        break;

    default:
        t->req.err = t->err;
        sft_ftp_reply_storage_error(s, &t->req);
        break;
    }

    sft_ftp_data_close(s);

    s->transfer = NULL;
    sft_destroy_pool(t->pool);

    sft_ftp_resume(s);
}


/* the session is gone: close what is open, no reply */

static void
sft_ftp_transfer_release(sft_ftp_session_t *s)
{
    sft_int_t            rc;
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    sft_buffer_cancel(&t->waiter);

    if (t->wake.posted) {
        sft_delete_posted_event(&t->wake);
    }

    if (t->chunk) {
        sft_buffer_put(t->chunk);
        t->chunk = NULL;
    }

    if (t->opened) {
        t->opened = 0;
        sft_ftp_transfer_req(s, t);

        if (t->kind >= SFT_FTP_LIST) {
            (void) sft_vfs_closedir(&s->vfs, &t->req, &t->dir);

        } else {
            rc = sft_vfs_close(&s->vfs, &t->req, &t->file, 0);

            if (rc == SFT_AGAIN) {
                t->io = 1;
                s->pending++;
                return;
            }
        }
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "ftp %s \"%.*s\" %lld bytes, aborted: session closed",
                  sft_ftp_kind_names[t->kind], (int) t->path_len, t->path,
                  (long long) t->bytes);

    s->transfer = NULL;
    sft_destroy_pool(t->pool);
}
