/*
 * sft_ftp_transfer.c -- RETR, STOR, APPE and the listings over the data
 * connection.  A file transfer opens the file through the VFS and hands it
 * with the data connection to the transfer engine (src/xfer), which moves
 * the bytes, TYPE A conversion included; an upload is committed on the
 * data connection's EOF and aborted otherwise, so no truncated file
 * appears under the name.  Listings are formatted here and sent as text.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>
#include <sft_xfer.h>


static void sft_ftp_transfer_open(sft_ftp_session_t *s);
static void sft_ftp_upload_150(sft_ftp_session_t *s, sft_ftp_transfer_t *t);
static void sft_ftp_transfer_opened(sft_ftp_session_t *s);
static void sft_ftp_transfer_io_done(sft_storage_req_t *req);
static void sft_ftp_transfer_stream(sft_ftp_session_t *s, off_t offset,
    off_t end);
static void sft_ftp_transfer_moved(sft_xfer_stream_t *x);
static void sft_ftp_send_list(sft_ftp_session_t *s);
static void sft_ftp_transfer_finish(sft_ftp_session_t *s);
static void sft_ftp_transfer_report(sft_ftp_session_t *s,
    sft_ftp_transfer_t *t);
static void sft_ftp_transfer_closed(sft_ftp_session_t *s);
static void sft_ftp_transfer_release(sft_ftp_session_t *s);


static const char  *sft_ftp_kind_names[] = {
    "", "RETR", "STOR", "APPE", "LIST", "NLST", "MLSD"
};

static sft_uint_t   sft_ftp_stou_count;


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
    u_char              *p, *end, uname[SFT_STORAGE_PATH_MAX + 1];
    size_t               len;
    sft_uint_t           unique;
    sft_pool_t          *pool;
    sft_connection_t    *dc;
    sft_ftp_transfer_t  *t;

    if (s->rang && (kind == SFT_FTP_STOR || kind == SFT_FTP_APPE
                    || kind == SFT_FTP_STOU || !s->binary))
    {
        /* draft-bryan-ftp-range: ranges are octets of TYPE I */
        s->rang = 0;
        s->rest = 0;
        sft_ftp_data_close(s);

        if (kind == SFT_FTP_RETR) {
            sft_ftp_reply(s, 551, "RANG needs TYPE I, range reset.");

        } else {
            sft_ftp_reply(s, 504, "RANG applies to RETR and HASH only, "
                                  "range reset.");
        }

        return SFT_OK;
    }

    if (!s->prot_p && s->conf->tls_data == SFT_FTP_TLS_REQUIRED) {
        s->rest = 0;
        sft_ftp_data_close(s);
        sft_ftp_reply(s, 521, "Data connections must be encrypted: "
                              "use PROT P.");
        return SFT_OK;
    }

    if (s->data.tls_refused) {
        s->rest = 0;
        s->data.tls_refused = 0;
        sft_ftp_data_close(s);
        sft_ftp_reply(s, 522, "SSL connection failed: session reuse "
                              "required.");
        return SFT_OK;
    }

    if (s->data.listener == NULL && s->data.conn == NULL) {

        if (!s->data.active) {
            s->rest = 0;
            sft_ftp_reply(s, 425, "Use PORT or PASV first.");
            return SFT_OK;
        }

        if (sft_ftp_active_connect(s) != SFT_OK) {
            s->rest = 0;
            s->data.active = 0;
            sft_ftp_reply(s, 425, "Failed to establish connection.");
            return SFT_OK;
        }
    }

    p = s->arg.data;
    end = p + s->arg.len;

    if (kind == SFT_FTP_LIST || kind == SFT_FTP_NLST || kind == SFT_FTP_MLSD)
    {
        /* "-la" and friends (and MLSD -a) are tolerated and ignored */

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

    unique = 0;

    if (kind == SFT_FTP_STOU) {
        /* a new name: the argument (or "stou") and a suffix; EXCL below */

        kind = SFT_FTP_STOR;
        unique = 1;
        s->rest = 0;

        if (len == 0) {
            p = (u_char *) "stou";
            len = 4;
        }

        if (len > SFT_STORAGE_PATH_MAX - 64) {
            sft_ftp_data_close(s);
            sft_ftp_reply(s, 553, "File name not allowed.");
            return SFT_OK;
        }

        end = sft_slprintf(uname, uname + sizeof(uname) - 1,
                           "%.*s.%ld.%ld.%lu", (int) len, p, (long) sft_pid,
                           (long) time(NULL),
                           (unsigned long) sft_ftp_stou_count++);
        p = uname;
        len = end - uname;
    }

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
    t->begin = sft_current_msec;
    t->ascii = !s->binary && kind <= SFT_FTP_APPE;
    t->unique = unique;

    if (s->rang && kind == SFT_FTP_RETR) {
        s->rang = 0;
        t->ranged = 1;
        t->range_start = s->rang_start;
        t->range_last = s->rang_end;
    }

    t->path = sft_pnalloc(pool, len);
    if (t->path == NULL) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    sft_memcpy(t->path, p, len);
    t->path_len = len;

    s->transfer = t;
    sft_ftp_transfer_req(s, t);

    dc = s->data.conn;

    if (s->prot_p && (kind == SFT_FTP_STOR || kind == SFT_FTP_APPE)
        && (dc == NULL || dc->ssl == NULL || !dc->ssl->handshaked
            || s->data.connecting || s->data.handshaking))
    {
        /*
         * an upload touches no file before the data connection's TLS
         * handshake is done and its session verified: "150" now (clients
         * start the handshake after it), the open in
         * sft_ftp_transfer_connected()
         */

        t->deferred = 1;
        t->started = 1;
        sft_ftp_upload_150(s, t);

        return SFT_OK;
    }

    sft_ftp_transfer_open(s);

    return SFT_OK;
}


static void
sft_ftp_transfer_open(sft_ftp_session_t *s)
{
    u_char              *p, vpath[SFT_STORAGE_PATH_MAX + 1];
    size_t               len, vlen;
    sft_int_t            rc;
    sft_uint_t           flags;
    sft_ftp_transfer_t  *t;

    t = s->transfer;
    p = t->path;
    len = t->path_len;

    switch (t->kind) {

    case SFT_FTP_RETR:
        t->req.flags = s->rest ? 0 : SFT_STORAGE_READ_SEQUENTIAL;
        rc = sft_vfs_open_read(&s->vfs, &t->req, &t->file, p, len);
        break;

    case SFT_FTP_STOR:
        flags = s->rest ? SFT_STORAGE_WRITE_INPLACE : 0;

        if (t->unique) {
            flags = SFT_STORAGE_WRITE_EXCL|SFT_STORAGE_WRITE_NOREPLACE;
        }

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
        return;
    }

    if (rc == SFT_OK) {
        t->req.err = SFT_STORAGE_OK;
    }

    sft_ftp_transfer_opened(s);
}


static void
sft_ftp_upload_150(sft_ftp_session_t *s, sft_ftp_transfer_t *t)
{
    if (t->unique) {
        sft_ftp_reply(s, 150, "FILE: %.*s", (int) t->path_len, t->path);
        return;
    }

    sft_ftp_reply(s, 150, "Ok to send data.");
}


static void
sft_ftp_transfer_opened(sft_ftp_session_t *s)
{
    off_t                offset, end;
    sft_int_t            rc;
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t->req.err == SFT_STORAGE_NOT_DIR && !t->single
        && (t->kind == SFT_FTP_LIST || t->kind == SFT_FTP_NLST))
    {
        /* LIST or NLST of one file: its stat, one entry */

        t->single = 1;
        sft_ftp_transfer_req(s, t);

        rc = sft_vfs_stat(&s->vfs, &t->req, t->path, t->path_len);

        if (rc == SFT_AGAIN) {
            t->io = 1;
            s->pending++;
            s->busy = 1;
            return;
        }

        if (rc == SFT_OK) {
            t->req.err = SFT_STORAGE_OK;
        }
    }

    if (t->req.err != SFT_STORAGE_OK) {
        s->rest = 0;
        t->reason = SFT_FTP_END_STORAGE;
        t->err = t->req.err;
        sft_ftp_transfer_finish(s);
        return;
    }

    if (t->single) {
        t->out = sft_pnalloc(t->pool, t->path_len + SFT_FTP_LIST_ENTRY_MAX);
        if (t->out == NULL) {
            s->rest = 0;
            t->reason = SFT_FTP_END_STORAGE;
            t->err = SFT_STORAGE_IO;
            sft_ftp_transfer_finish(s);
            return;
        }

        t->out_len = sft_ftp_list_format(s, t->kind, t->out,
                                         t->out + t->path_len
                                         + SFT_FTP_LIST_ENTRY_MAX,
                                         t->path, t->path_len, &t->req.st,
                                         0)
                     - t->out;
        t->out_pos = 0;
        t->eof = 1;

    } else {
        t->opened = 1;
    }

    if (s->data.listener == NULL && s->data.conn == NULL) {
        /* the passive wait timed out or the active connect failed */
        s->rest = 0;
        t->reason = SFT_FTP_END_NOCONN;
        sft_ftp_transfer_finish(s);
        return;
    }

    offset = 0;
    end = 0;

    switch (t->kind) {

    case SFT_FTP_RETR:
        end = t->file.size;
        offset = s->rest;

        if (t->ranged) {
            /* past the end of the file: up to it, or nothing */
            end = sft_min(t->range_last + 1, end);
            offset = sft_min(t->range_start, end);
        }

        if (offset > end) {
            s->rest = 0;
            t->reason = SFT_FTP_END_STORAGE;
            t->err = SFT_STORAGE_INVALID;
            sft_ftp_transfer_finish(s);
            return;
        }

        sft_ftp_reply(s, 150, "Opening %s mode data connection for "
                      "%.*s (%lld bytes).", t->ascii ? "ASCII" : "BINARY",
                      (int) t->path_len, t->path, (long long) end);
        break;

    case SFT_FTP_STOR:
    case SFT_FTP_APPE:
        offset = (t->kind == SFT_FTP_STOR) ? s->rest : t->file.size;

        if (!t->started) {
            sft_ftp_upload_150(s, t);
        }

        break;

    default:
        sft_ftp_reply(s, 150, "Here comes the directory listing.");
        break;
    }

    if (t->kind <= SFT_FTP_APPE) {
        sft_ftp_transfer_stream(s, offset, end);
    }

    s->rest = 0;
    t->started = 1;

    sft_ftp_transfer_run(s);
}


/* the open file and, once it is there, the data connection go to xfer */

static void
sft_ftp_transfer_stream(sft_ftp_session_t *s, off_t offset, off_t end)
{
    size_t               n;
    sft_xfer_stream_t   *x;
    sft_ftp_transfer_t  *t;
    u_char               name[SFT_STORAGE_PATH_MAX + 1];

    t = s->transfer;
    x = &t->stream;

    x->vfs = &s->vfs;
    x->file = &t->file;
    x->pool = t->pool;
    x->log = s->log;
    x->offset = offset;
    x->end = end;
    x->timeout = s->conf->data_timeout;
    x->done = sft_ftp_transfer_moved;
    x->data = s;
    x->ascii = t->ascii;
    x->tls = s->tls && s->prot_p;
    x->conf = &s->conf->xfer;
    x->session = &s->session;

    if (t->kind == SFT_FTP_RETR) {
        x->direction = SFT_XFER_DOWNLOAD;
        x->rate = s->account ? s->account->download_rate : 0;

    } else {
        x->direction = SFT_XFER_UPLOAD;
        x->rate = s->account ? s->account->upload_rate : 0;
    }

    sft_xfer_stream_init(x);

    n = sft_xfer_user_path(s->vfs.cwd, s->vfs.cwd_len, t->path, t->path_len,
                           name);
    name[n] = '\0';
    sft_session_transfer(&s->session, x->direction, x->path, (char *) name);

    /* the session outlives the stream: x->done comes */
    t->streaming = 1;
    t->streamed = 1;
    s->pending++;
}


/* the stream has stopped and holds nothing: the file is closed next */

static void
sft_ftp_transfer_moved(sft_xfer_stream_t *x)
{
    sft_ftp_session_t   *s = x->data;
    sft_ftp_transfer_t  *t;

    t = s->transfer;
    t->streaming = 0;
    t->bytes = x->bytes;
    s->pending--;
    sft_session_transfer_done(&s->session);

    if (s->closed) {
        sft_ftp_transfer_release(s);

        if (s->pending == 0) {
            sft_ftp_session_free(s);
        }

        return;
    }

    if (!t->aborted) {
        switch (x->reason) {
        case SFT_XFER_END_OK: t->reason = SFT_FTP_END_OK; break;
        case SFT_XFER_END_NETWORK: t->reason = SFT_FTP_END_NETWORK; break;
        default: t->reason = SFT_FTP_END_STORAGE; t->err = x->err; break;
        }
    }

    sft_ftp_transfer_finish(s);
}


/* the data connection has been accepted */

void
sft_ftp_transfer_connected(sft_ftp_session_t *s)
{
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t == NULL || !t->started) {
        return;
    }

    if (t->deferred) {
        t->deferred = 0;
        sft_ftp_transfer_open(s);
        return;
    }

    sft_ftp_transfer_run(s);
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


void
sft_ftp_transfer_run(sft_ftp_session_t *s)
{
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t == NULL || s->closed || !t->started || t->deferred || t->io
        || t->finishing || s->data.conn == NULL || s->data.connecting
        || s->data.handshaking)
    {
        return;
    }

    if (t->kind >= SFT_FTP_LIST) {
        sft_ftp_send_list(s);
        return;
    }

    if (t->streaming) {
        t->stream.conn = s->data.conn;
        sft_xfer_stream_run(&t->stream);
    }
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
            n = dc->send(dc, t->out + t->out_pos, t->out_len - t->out_pos);

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
    case SFT_STORAGE_STAT:     /* LIST of one file */
        s->busy = 0;
        sft_ftp_transfer_opened(s);
        break;

    case SFT_STORAGE_CLOSE:
        sft_ftp_transfer_closed(s);
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
        /* an ABOR that came as the transfer ended is answered after it */
        t->abor_late |= (reason == 1);
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

    if (t->streaming) {
        /* the stream's done handler finishes it, maybe right now: the
           session stays until this returns */
        s->pending++;
        sft_xfer_stream_cancel(&t->stream);
        s->pending--;
        return;
    }

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

    /*
     * the data connection's close is the end of a download for the client;
     * over TLS a good transfer ends with close_notify
     */

    if (t->reason == SFT_FTP_END_OK) {
        sft_ftp_data_finish(s);

    } else {
        sft_ftp_data_close(s);
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


/*
 * The transfer log and counters of a file transfer that started: which
 * data path served it; also when the session went first (incomplete).
 */

static void
sft_ftp_transfer_report(sft_ftp_session_t *s, sft_ftp_transfer_t *t)
{
    sft_xfer_t  x;

    if (t->kind >= SFT_FTP_LIST || !t->started) {
        return;
    }

    sft_memzero(&x, sizeof(sft_xfer_t));

    x.service = "ftp";
    x.peer = &s->peer.client;
    x.user = &s->user;
    x.path = t->path;
    x.path_len = t->path_len;
    x.cwd = s->vfs.cwd;
    x.cwd_len = s->vfs.cwd_len;
    x.bytes = t->bytes;
    x.start = t->begin;
    x.direction = (t->kind == SFT_FTP_RETR) ? SFT_XFER_DOWNLOAD
                                            : SFT_XFER_UPLOAD;
    x.ascii = t->ascii;
    x.complete = (t->reason == SFT_FTP_END_OK);

    if (t->streamed) {
        x.data_path = t->stream.path;

    } else {
        /* an upload that failed to open after its TLS handshake */
        x.data_path = (s->tls && s->prot_p) ? SFT_XFER_TLS : SFT_XFER_POOLED;
    }

    sft_xfer_done(&x);
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

    sft_ftp_transfer_report(s, t);

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
        s->broke = 1;
        break;

    case SFT_FTP_END_TLS:
        sft_ftp_reply(s, 522, "SSL connection failed: session reuse "
                              "required.");
        break;

    default:
        t->req.err = t->err;
        sft_ftp_reply_storage_error(s, &t->req);
        break;
    }

    if (t->abor_late) {
        sft_ftp_reply(s, 226, "Abort successful.");
    }

    sft_ftp_data_close(s);
    s->data.active = 0;     /* a PORT is good for one transfer */

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

    sft_ftp_transfer_report(s, t);

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "ftp %s \"%.*s\" %lld bytes, aborted: session closed",
                  sft_ftp_kind_names[t->kind], (int) t->path_len, t->path,
                  (long long) t->bytes);

    s->transfer = NULL;
    sft_destroy_pool(t->pool);
}
