/*
 * sft_ftp_transfer.c -- RETR, STOR, APPE and the listings over the data
 * connection: binary downloads with sendfile(2) from the storage file's
 * descriptor on the event loop; TLS and ASCII downloads, and files without
 * a descriptor, through two chunks of the shared buffer pool (the next
 * read runs while the last chunk is sent: on the event loop when it cannot
 * block, from tmpfs or with RWF_NOWAIT from the page cache, else a VFS
 * read on the thread pool); uploads through a chunk of the buffer pool
 * written via the VFS, or with pwrite(2) on the event loop to tmpfs
 * (committed on the data connection's EOF, aborted otherwise, so no
 * truncated file appears under the name).
 * TYPE A converts LF to CRLF on the way out and CRLF to LF on the way in.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>
#include <sft_asm.h>
#include <sft_xfer.h>
#include <sys/sendfile.h>
#include <sys/vfs.h>
#include <linux/magic.h>


#define SFT_FTP_SENDFILE_MAX  (1024 * 1024)
#define SFT_FTP_SPLICE_PIPE   (1024 * 1024)     /* asked for, not needed */

/* chunks an upload pwrite(2)s to tmpfs before other events get a turn */
#define SFT_FTP_DIRECT_WRITES 4

/* t->direct: how a pooled download reads (an upload writes) a file */
#define SFT_FTP_READ_VFS      0     /* the VFS, maybe on the thread pool */
#define SFT_FTP_READ_MEMORY   1     /* tmpfs: pread(2) (pwrite(2)) on the
                                       event loop */
#define SFT_FTP_READ_NOWAIT   2     /* from the page cache or the VFS */


static void sft_ftp_transfer_open(sft_ftp_session_t *s);
static void sft_ftp_upload_150(sft_ftp_session_t *s, sft_ftp_transfer_t *t);
static void sft_ftp_transfer_opened(sft_ftp_session_t *s);
static void sft_ftp_transfer_io_done(sft_storage_req_t *req);
static void sft_ftp_transfer_wake(sft_event_t *ev);
static void sft_ftp_send_file(sft_ftp_session_t *s);
static void sft_ftp_send_copy(sft_ftp_session_t *s);
static sft_int_t sft_ftp_read_ahead(sft_ftp_session_t *s);
static sft_int_t sft_ftp_read_done(sft_ftp_session_t *s);
static void sft_ftp_read_direct_init(sft_ftp_transfer_t *t);
static ssize_t sft_ftp_read_direct(sft_ftp_transfer_t *t, size_t len);
static void sft_ftp_recv_file(sft_ftp_session_t *s);
static sft_int_t sft_ftp_data_call_failed(sft_ftp_session_t *s,
    sft_event_t *ev, const char *call);
static void sft_ftp_splice_init(sft_ftp_session_t *s, sft_ftp_transfer_t *t);
static void sft_ftp_splice_cleanup(void *data);
static void sft_ftp_recv_splice(sft_ftp_session_t *s);
static void sft_ftp_send_list(sft_ftp_session_t *s);
static sft_int_t sft_ftp_write_direct(sft_ftp_session_t *s);
static void sft_ftp_upload_written(sft_ftp_transfer_t *t);
static sft_int_t sft_ftp_write_done(sft_ftp_session_t *s);
static void sft_ftp_transfer_finish(sft_ftp_session_t *s);
static void sft_ftp_transfer_report(sft_ftp_session_t *s,
    sft_ftp_transfer_t *t);
static void sft_ftp_transfer_closed(sft_ftp_session_t *s);
static void sft_ftp_transfer_release(sft_ftp_session_t *s);


static const char  *sft_ftp_kind_names[] = {
    "", "RETR", "STOR", "APPE", "LIST", "NLST", "MLSD"
};

static sft_uint_t   sft_ftp_stou_count;

/* the data path of a TLS transfer, by who sealed its records */
static const sft_uint_t  sft_ftp_tls_paths[] = {
    SFT_XFER_TLS,           /* SFT_SSL_SEALED_OPENSSL (and every upload) */
    SFT_XFER_TLS_SEALED,    /* SFT_SSL_SEALED_SIFTPD */
    SFT_XFER_KTLS           /* SFT_SSL_SEALED_KERNEL */
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

    t->wake.handler = sft_ftp_transfer_wake;
    t->wake.data = s;
    t->wake.log = s->log;
    t->waiter.event = &t->wake;

    t->rate_ev.handler = sft_ftp_transfer_wake;
    t->rate_ev.data = s;
    t->rate_ev.log = s->log;

    if (s->account) {
        sft_xfer_rate_init(&t->rate,
                           (kind == SFT_FTP_RETR)
                           ? s->account->download_rate
                           : (kind == SFT_FTP_STOR || kind == SFT_FTP_APPE)
                             ? s->account->upload_rate : 0,
                           sft_current_msec);
    }

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

    switch (t->kind) {

    case SFT_FTP_RETR:
        t->end = t->file.size;
        t->offset = s->rest;

        if (t->ranged) {
            /* past the end of the file: up to it, or nothing */
            t->end = sft_min(t->range_last + 1, t->end);
            t->offset = sft_min(t->range_start, t->end);
        }

        if (t->offset > t->end) {
            s->rest = 0;
            t->reason = SFT_FTP_END_STORAGE;
            t->err = SFT_STORAGE_INVALID;
            sft_ftp_transfer_finish(s);
            return;
        }

        sft_ftp_reply(s, 150, "Opening %s mode data connection for "
                      "%.*s (%lld bytes).", t->ascii ? "ASCII" : "BINARY",
                      (int) t->path_len, t->path, (long long) t->end);
        break;

    case SFT_FTP_STOR:
    case SFT_FTP_APPE:
        t->offset = (t->kind == SFT_FTP_STOR) ? s->rest : t->file.size;

        /* tmpfs: no thread pool round trip per chunk */
        sft_ftp_read_direct_init(t);

        if (!t->started) {
            sft_ftp_upload_150(s, t);
        }

        break;

    default:
        sft_ftp_reply(s, 150, "Here comes the directory listing.");
        break;
    }

    if (t->kind == SFT_FTP_STOR || t->kind == SFT_FTP_APPE) {
        sft_ftp_splice_init(s, t);
    }

    s->rest = 0;
    t->started = 1;

    sft_ftp_transfer_run(s);
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


static void
sft_ftp_transfer_wake(sft_event_t *ev)
{
    ev->timedout = 0;
    sft_ftp_transfer_run(ev->data);
}


/* the user's rate: how much of want may move now, or 0 and the timer set */

size_t
sft_ftp_rate_allow(sft_ftp_session_t *s, size_t want)
{
    size_t               n;
    sft_msec_t           delay;
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    n = sft_xfer_rate_allow(&t->rate, want, sft_current_msec, &delay);

    if (n == 0 && !t->rate_ev.timer_set) {
        sft_add_timer(&t->rate_ev, delay);
    }

    return n;
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

    switch (t->kind) {

    case SFT_FTP_RETR:
        sft_ftp_send_file(s);
        break;

    case SFT_FTP_STOR:
    case SFT_FTP_APPE:
        if (t->splice) {
            sft_ftp_recv_splice(s);

        } else {
            sft_ftp_recv_file(s);
        }

        break;

    default:
        sft_ftp_send_list(s);
        break;
    }
}


static void
sft_ftp_send_file(sft_ftp_session_t *s)
{
    size_t               size;
    ssize_t              n;
    sft_fd_t             fd;
    sft_connection_t    *dc;
    sft_storage_t       *st;
    sft_ftp_transfer_t  *t;

    t = s->transfer;
    dc = s->data.conn;
    st = t->file.storage;

    if (t->copy) {
        sft_ftp_send_copy(s);
        return;
    }

    fd = st->driver->file_fd ? st->driver->file_fd(&t->file)
                             : SFT_INVALID_FILE;

    /*
     * TLS data goes through the pooled copy, except where the kernel seals
     * the records (kTLS): sendfile(2) then sends TLS records of the file,
     * as OpenSSL's SSL_sendfile() does, once the records OpenSSL wrote
     * through the BIO (session tickets) are out
     */

    t->sealed_by = sft_ssl_sealed_by(dc);

    if (fd == SFT_INVALID_FILE || t->ascii || !s->conf->sendfile
        || (dc->ssl && t->sealed_by != SFT_SSL_SEALED_KERNEL))
    {
        t->copy = 1;
        sft_ftp_read_direct_init(t);
        sft_ftp_send_copy(s);
        return;
    }

    if (dc->ssl && sft_ssl_flush(dc->ssl) != SFT_OK
        && sft_ftp_data_call_failed(s, dc->write, "write()") != SFT_OK)
    {
        return;
    }

    while (t->offset < t->end) {
        size = sft_ftp_rate_allow(s,
                                  (size_t) sft_min(t->end - t->offset,
                                                (off_t) SFT_FTP_SENDFILE_MAX));
        if (size == 0) {
            return;     /* the rate timer comes back */
        }

        n = sendfile(dc->fd, fd, &t->offset, size);

        if (n == -1) {
            if (sft_ftp_data_call_failed(s, dc->write, "sendfile()")
                == SFT_OK)
            {
                continue;
            }

            return;
        }

        if (n == 0) {
            break;      /* the file got shorter */
        }

        sft_xfer_rate_spend(&t->rate, n);
        t->bytes += n;
    }

    sft_ftp_transfer_finish(s);
}

/*
 * The pooled copy: t->rbuf is filled by a VFS read (maybe on the thread
 * pool) while t->chunk, converted or swapped from the last read, is sent.
 */

static void
sft_ftp_send_copy(sft_ftp_session_t *s)
{
    u_char              *tmp;
    size_t               used, size;
    ssize_t              n;
    sft_connection_t    *dc;
    sft_ftp_transfer_t  *t;

    t = s->transfer;
    dc = s->data.conn;

    for ( ;; ) {

        if (sft_ftp_read_ahead(s) != SFT_OK) {
            return;
        }

        while (t->out_pos < t->out_len) {
            size = sft_ftp_rate_allow(s, t->out_len - t->out_pos);
            if (size == 0) {
                return;     /* the rate timer comes back */
            }

            n = dc->send(dc, t->chunk + t->out_pos, size);

            if (n == SFT_AGAIN) {
                sft_add_timer(dc->write, s->conf->data_timeout);
                return;
            }

            if (n == SFT_ERROR) {
                t->reason = SFT_FTP_END_NETWORK;
                sft_ftp_transfer_finish(s);
                return;
            }

            sft_xfer_rate_spend(&t->rate, n);
            t->out_pos += n;
            t->bytes += n;
        }

        t->out_pos = 0;
        t->out_len = 0;

        if (t->rpos < t->rlen) {

            if (!t->ascii) {
                /* the read chunk is sent as it is; the other is read into */
                tmp = t->chunk;
                t->chunk = t->rbuf;
                t->rbuf = tmp;
                t->out_pos = t->rpos;
                t->out_len = t->rlen;
                t->rpos = 0;
                t->rlen = 0;
                continue;
            }

            if (t->chunk == NULL) {
                t->chunk = sft_buffer_get(&t->waiter);

                if (t->chunk == NULL) {
                    return;     /* t->wake runs when one may be free */
                }
            }

            t->out_len = sft_ftp_ascii_to_crlf(t->rbuf + t->rpos,
                                               t->rlen - t->rpos, &used,
                                               t->chunk, t->chunk_size);
            t->rpos += used;
            continue;
        }

        if (t->eof) {
            sft_ftp_transfer_finish(s);
            return;
        }

        /* a read runs or waits for a chunk: its completion runs us */
        return;
    }
}


static sft_int_t
sft_ftp_read_ahead(sft_ftp_session_t *s)
{
    size_t               len;
    ssize_t              n;
    sft_int_t            rc;
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t->reading || t->eof || t->rpos < t->rlen) {
        return SFT_OK;
    }

    if (t->offset >= t->end) {
        t->eof = 1;
        return SFT_OK;
    }

    if (t->rbuf == NULL) {
        t->rbuf = sft_buffer_get(&t->waiter);

        if (t->rbuf == NULL) {
            return SFT_OK;
        }
    }

    t->chunk_size = sft_buffer_chunk_size();
    t->rpos = 0;
    t->rlen = 0;

    len = (size_t) sft_min(t->end - t->offset, (off_t) t->chunk_size);

    if (t->direct != SFT_FTP_READ_VFS) {
        n = sft_ftp_read_direct(t, len);

        if (n >= 0) {
            t->req.err = SFT_STORAGE_OK;
            t->req.nbytes = n;
            return sft_ftp_read_done(s);
        }

        /* not in the page cache, or an error the VFS reports */
    }

    sft_ftp_transfer_req(s, t);

    rc = sft_vfs_read(&s->vfs, &t->req, &t->file, t->rbuf, len, t->offset);

    if (rc == SFT_AGAIN) {
        t->reading = 1;
        s->pending++;
        return SFT_OK;
    }

    if (rc == SFT_OK) {
        t->req.err = SFT_STORAGE_OK;
    }

    return sft_ftp_read_done(s);
}


static sft_int_t
sft_ftp_read_done(sft_ftp_session_t *s)
{
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t->req.err != SFT_STORAGE_OK || t->req.nbytes < 0) {
        t->reason = SFT_FTP_END_STORAGE;
        t->err = t->req.err ? t->req.err : SFT_STORAGE_IO;
        sft_ftp_transfer_finish(s);
        return SFT_ERROR;
    }

    if (t->req.nbytes == 0) {
        t->eof = 1;     /* the file got shorter */
        return SFT_OK;
    }

    t->rlen = t->req.nbytes;
    t->offset += t->req.nbytes;

    return SFT_OK;
}


/*
 * The pooled download of a file with a descriptor (TLS, TYPE A) reads it
 * on the event loop when that cannot block: always from tmpfs (memory),
 * else with RWF_NOWAIT, which fails with EAGAIN unless the page cache has
 * the data; then, and for storage without a descriptor, a VFS read on the
 * thread pool. A page cache read saves the thread pool round trip per
 * chunk.
 */

static void
sft_ftp_read_direct_init(sft_ftp_transfer_t *t)
{
    sft_fd_t        fd;
    struct statfs   fs;
    sft_storage_t  *st;

    t->direct = SFT_FTP_READ_VFS;

    st = t->file.storage;

    fd = st->driver->file_fd ? st->driver->file_fd(&t->file)
                             : SFT_INVALID_FILE;

    if (fd == SFT_INVALID_FILE) {
        return;
    }

    if (fstatfs(fd, &fs) == 0
        && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC))
    {
        t->direct = SFT_FTP_READ_MEMORY;
        return;
    }

#ifdef RWF_NOWAIT
    t->direct = SFT_FTP_READ_NOWAIT;
#endif
}


/* bytes, or -1: the VFS reads this chunk */

static ssize_t
sft_ftp_read_direct(sft_ftp_transfer_t *t, size_t len)
{
    ssize_t         n;
    sft_fd_t        fd;
    sft_storage_t  *st;
#ifdef RWF_NOWAIT
    struct iovec    iov;
#endif

    st = t->file.storage;
    fd = st->driver->file_fd(&t->file);

    for ( ;; ) {

#ifdef RWF_NOWAIT
        if (t->direct == SFT_FTP_READ_NOWAIT) {
            iov.iov_base = t->rbuf;
            iov.iov_len = len;

            n = preadv2(fd, &iov, 1, t->offset, RWF_NOWAIT);

        } else
#endif
        {
            n = pread(fd, t->rbuf, len, t->offset);
        }

        if (n >= 0) {
            return n;
        }

        if (sft_errno == EINTR) {
            continue;
        }

        if (sft_errno == EOPNOTSUPP) {
            t->direct = SFT_FTP_READ_VFS;   /* no RWF_NOWAIT on this file */
        }

        return -1;
    }
}


/*
 * TYPE A downloads: LF becomes CRLF.  Converts from in while out has room
 * (a LF is never split), sets *used, and returns the bytes in out.
 */

size_t
sft_ftp_ascii_to_crlf(const u_char *in, size_t len, size_t *used,
    u_char *out, size_t size)
{
    size_t         n;
    u_char        *o, *oend;
    const u_char  *p, *end, *nl;

    p = in;
    end = in + len;
    o = out;
    oend = out + size;

    while (p < end && o < oend) {
        nl = sft_find_newline(p, end - p);

        n = (nl ? nl : end) - p;

        if (n > (size_t) (oend - o)) {
            n = oend - o;
        }

        o = sft_cpymem(o, p, n);
        p += n;

        if (p != nl) {
            continue;
        }

        if (oend - o < 2) {
            break;
        }

        *o++ = '\r';
        *o++ = '\n';
        p++;
    }

    *used = p - in;

    return o - out;
}


/*
 * TYPE A uploads: CRLF becomes LF, a lone CR stays.  The asm kernel
 * sft_find_crlf() finds each pair; the runs between them are moved as
 * they are.  A CR at the end of src is held in *cr until the next call
 * (or the end of the upload) shows what follows it.  dst may be src, or
 * one byte before it when *cr is set; returns the bytes written at dst.
 */

size_t
sft_ftp_ascii_from_crlf(u_char *dst, const u_char *src, size_t len,
    sft_uint_t *cr)
{
    size_t         n;
    u_char        *o;
    const u_char  *p, *end, *c;

    if (len == 0) {
        return 0;
    }

    o = dst;
    p = src;
    end = src + len;

    if (*cr) {
        *cr = 0;

        if (*p != '\n') {
            *o++ = '\r';
        }
    }

    while (p < end) {
        c = sft_find_crlf(p, end - p);

        n = (c ? c : end) - p;

        if (o != p) {
            memmove(o, p, n);
        }

        o += n;
        p += n;

        if (c == NULL) {
            break;
        }

        *o++ = '\n';
        p += 2;
    }

    if (end[-1] == '\r') {
        /* the last CR was moved as data: its LF may be in the next read */
        o--;
        *cr = 1;
    }

    return o - dst;
}


static void
sft_ftp_recv_file(sft_ftp_session_t *s)
{
    size_t               size;
    ssize_t              n;
    sft_int_t            rc;
    sft_uint_t           cr, written;
    sft_connection_t    *dc;
    sft_ftp_transfer_t  *t;

    t = s->transfer;
    dc = s->data.conn;
    written = 0;

    for ( ;; ) {

        if (t->chunk == NULL) {

            if (t->eof) {
                /* the last chunk is being written (a held CR found room) */
                if (!t->writing) {
                    sft_ftp_transfer_finish(s);
                }

                return;
            }

            t->chunk = sft_buffer_get(&t->waiter);

            if (t->chunk == NULL) {
                return;     /* t->wake runs when one may be free */
            }

            t->chunk_size = sft_buffer_chunk_size();
            t->out_len = 0;
        }

        if (t->eof && t->cr && t->out_len < t->chunk_size) {
            /* a CR at the very end is a lone CR */
            t->chunk[t->out_len++] = '\r';
            t->cr = 0;
        }

        if (t->out_len + t->cr >= t->chunk_size || (t->eof && t->out_len)) {

            if (t->direct == SFT_FTP_READ_MEMORY) {
                if (sft_ftp_write_direct(s) != SFT_OK) {
                    return;
                }

                if (++written == SFT_FTP_DIRECT_WRITES) {
                    /* a client that keeps the socket full: take turns */
                    sft_post_event(&t->wake);
                    return;
                }

                continue;
            }

            if (t->writing) {
                return;     /* the running write's completion runs us */
            }

            sft_ftp_transfer_req(s, t);

            t->wlen = t->out_len;

            rc = sft_vfs_write(&s->vfs, &t->req, &t->file, t->chunk,
                               t->wlen, t->offset);

            if (rc == SFT_AGAIN) {
                /* the next chunk is received while this one is written */
                t->writing = 1;
                s->pending++;
                t->wbuf = t->chunk;
                t->chunk = NULL;
                continue;
            }

            if (rc == SFT_OK) {
                t->req.err = SFT_STORAGE_OK;
            }

            if (sft_ftp_write_done(s) != SFT_OK) {
                return;
            }

            t->out_len = 0;
            continue;
        }

        if (t->eof) {
            if (!t->writing) {
                sft_ftp_transfer_finish(s);
            }

            return;
        }

        /* a held CR keeps one byte free before the new data */

        size = sft_ftp_rate_allow(s, t->chunk_size - t->out_len - t->cr);
        if (size == 0) {
            return;     /* the rate timer comes back */
        }

        n = dc->recv(dc, t->chunk + t->out_len + t->cr, size);

        if (n == SFT_AGAIN) {
            sft_add_timer(dc->read, s->conf->data_timeout);
            return;
        }

        if (n == 0) {
            t->eof = 1;
            continue;
        }

        if (n == SFT_ERROR) {
            if (dc->ssl && dc->ssl->truncated) {
                sft_log_error(SFT_LOG_INFO, s->log, 0,
                              "upload cut without TLS close_notify, "
                              "not committed");
            }

            t->reason = SFT_FTP_END_NETWORK;
            sft_ftp_transfer_finish(s);
            return;
        }

        t->bytes += n;
        sft_xfer_rate_spend(&t->rate, n);

        if (t->ascii) {
            cr = t->cr;
            t->out_len += sft_ftp_ascii_from_crlf(t->chunk + t->out_len,
                                                  t->chunk + t->out_len + cr,
                                                  n, &cr);
            t->cr = cr;

        } else {
            t->out_len += n;
        }
    }
}


/*
 * A kernel copy on the data connection (sendfile, splice) returned -1:
 * SFT_AGAIN, wait for ev; SFT_OK, call again; SFT_ERROR, the transfer ended.
 */

static sft_int_t
sft_ftp_data_call_failed(sft_ftp_session_t *s, sft_event_t *ev,
    const char *call)
{
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        ev->ready = 0;
        sft_add_timer(ev, s->conf->data_timeout);
        return SFT_AGAIN;
    }

    if (errno == EINTR) {
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_INFO, s->log, sft_errno, "%s on the data "
                  "connection failed", call);
    s->transfer->reason = SFT_FTP_END_NETWORK;
    sft_ftp_transfer_finish(s);

    return SFT_ERROR;
}


/*
 * A plaintext binary upload to a storage with descriptors and no rate limit
 * goes socket -> pipe -> file with splice(2), without a copy through user
 * space; without a pipe it is the pooled copy, decided before a byte moves.
 */

static void
sft_ftp_splice_init(sft_ftp_session_t *s, sft_ftp_transfer_t *t)
{
    sft_storage_t       *st;
    sft_pool_cleanup_t  *cln;

    st = t->file.storage;

    /* splice(2) refuses O_APPEND files: APPE takes the pooled copy */

    if (!s->conf->splice || t->ascii || t->rate.rate || (s->tls && s->prot_p)
        || (t->file.flags & SFT_STORAGE_WRITE_APPEND)
        || st->driver->file_fd == NULL
        || st->driver->file_fd(&t->file) == SFT_INVALID_FILE)
    {
        return;
    }

    cln = sft_pool_cleanup_add(t->pool, 0);

    if (cln == NULL || pipe2(t->pipe, O_NONBLOCK|O_CLOEXEC) == -1) {
        sft_log_error(SFT_LOG_WARN, s->log, sft_errno,
                      "pipe2() failed, the upload takes the pooled copy");
        return;
    }

    /* a larger pipe moves more per call; the default works too */
    (void) fcntl(t->pipe[1], F_SETPIPE_SZ, SFT_FTP_SPLICE_PIPE);

    cln->handler = sft_ftp_splice_cleanup;
    cln->data = t;
    t->splice = 1;
}


static void
sft_ftp_splice_cleanup(void *data)
{
    sft_ftp_transfer_t  *t = data;

    close(t->pipe[0]);
    close(t->pipe[1]);
}


/*
 * Each pass empties the pipe into the file, then fills it from the socket;
 * the bytes are charged to the quota while in the pipe, before the file
 * sees them.  Writes to the file run on the loop, as the page cache takes
 * them; the socket side never blocks.
 */

static void
sft_ftp_recv_splice(sft_ftp_session_t *s)
{
    ssize_t              n;
    sft_fd_t             fd;
    sft_connection_t    *dc;
    sft_ftp_transfer_t  *t;

    t = s->transfer;
    dc = s->data.conn;
    fd = t->file.storage->driver->file_fd(&t->file);

    for ( ;; ) {

        while (t->piped) {
            n = splice(t->pipe[0], NULL, fd, &t->offset, t->piped,
                       SPLICE_F_MOVE);

            if (n == -1 && errno == EINTR) {
                continue;
            }

            if (n <= 0) {
                sft_log_error(SFT_LOG_ERR, s->log, sft_errno,
                              "splice() to \"%s\" failed", t->file.name);
                t->reason = SFT_FTP_END_STORAGE;
                t->err = (n == -1) ? sft_storage_map_errno(errno)
                                   : SFT_STORAGE_IO;
                sft_ftp_transfer_finish(s);
                return;
            }

            t->piped -= n;
        }

        if (t->eof) {
            sft_ftp_transfer_finish(s);
            return;
        }

        n = splice(dc->fd, NULL, t->pipe[1], NULL, SFT_FTP_SPLICE_PIPE,
                   SPLICE_F_MOVE|SPLICE_F_NONBLOCK);

        if (n == 0) {
            dc->read->ready = 0;
            t->eof = 1;
            continue;
        }

        if (n == -1) {
            if (sft_ftp_data_call_failed(s, dc->read, "splice()") == SFT_OK) {
                continue;
            }

            return;
        }

        if (sft_vfs_charge_write(&s->vfs, &t->file, t->offset, n)
            != SFT_OK)
        {
            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "quota exceeded: upload of \"%s\" stopped",
                          t->file.name);
            t->reason = SFT_FTP_END_STORAGE;
            t->err = SFT_STORAGE_QUOTA;
            sft_ftp_transfer_finish(s);
            return;
        }

        t->bytes += n;
        t->piped = n;
    }
}


/* a chunk of an upload to tmpfs, charged to the quota like a VFS write */

static sft_int_t
sft_ftp_write_direct(sft_ftp_session_t *s)
{
    size_t               done;
    ssize_t              n;
    sft_fd_t             fd;
    sft_ftp_transfer_t  *t;

    t = s->transfer;
    fd = t->file.storage->driver->file_fd(&t->file);

    t->req.err = SFT_STORAGE_OK;

    if (sft_vfs_charge_write(&s->vfs, &t->file, t->offset, t->out_len)
        != SFT_OK)
    {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "quota exceeded: upload of \"%s\" stopped",
                      t->file.name);
        t->req.err = SFT_STORAGE_QUOTA;
    }

    for (done = 0; t->req.err == SFT_STORAGE_OK && done < t->out_len;
         done += n)
    {
        n = pwrite(fd, t->chunk + done, t->out_len - done, t->offset + done);

        if (n == -1) {
            if (sft_errno == EINTR) {
                n = 0;
                continue;
            }

            t->req.err = sft_storage_map_errno(sft_errno);
            sft_log_error(SFT_LOG_ERR, s->log, sft_errno,
                          "pwrite() \"%s\" failed", t->file.name);
            break;
        }
    }

    t->req.nbytes = done;
    t->wlen = t->out_len;

    if (sft_ftp_write_done(s) != SFT_OK) {
        return SFT_ERROR;
    }

    t->out_len = 0;

    return SFT_OK;
}


/* a pooled upload's written chunk: the next to fill, or back to the pool */

static void
sft_ftp_upload_written(sft_ftp_transfer_t *t)
{
    if (t->wbuf == NULL) {
        return;
    }

    if (t->chunk == NULL) {
        t->chunk = t->wbuf;
        t->out_len = 0;

    } else {
        sft_buffer_put(t->wbuf);
    }

    t->wbuf = NULL;
}


static sft_int_t
sft_ftp_write_done(sft_ftp_session_t *s)
{
    sft_ftp_transfer_t  *t;

    t = s->transfer;

    if (t->req.err != SFT_STORAGE_OK
        || t->req.nbytes != (ssize_t) t->wlen)
    {
        t->reason = SFT_FTP_END_STORAGE;
        t->err = t->req.err ? t->req.err : SFT_STORAGE_IO;
        sft_ftp_transfer_finish(s);
        return SFT_ERROR;
    }

    t->offset += t->wlen;
    t->wlen = 0;

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

    if (req->op == SFT_STORAGE_READ) {
        t->reading = 0;

    } else if (req->op == SFT_STORAGE_WRITE) {
        t->writing = 0;
        sft_ftp_upload_written(t);

    } else {
        t->io = 0;
    }

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

    case SFT_STORAGE_READ:
        if (t->aborted || t->finishing) {
            sft_ftp_transfer_finish(s);
            break;
        }

        if (sft_ftp_read_done(s) == SFT_OK) {
            sft_ftp_transfer_run(s);
        }

        break;

    case SFT_STORAGE_WRITE:
        if (t->aborted || t->finishing) {
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

    if (t->io || t->reading || t->writing) {
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

    if (t->rate_ev.timer_set) {
        sft_del_timer(&t->rate_ev);
    }

    /*
     * the data connection's close is the end of a download for the client;
     * over TLS a good transfer ends with close_notify
     */

    if (t->reason == SFT_FTP_END_OK) {
        sft_ftp_data_finish(s);

    } else {
        sft_ftp_data_close(s);
    }

    if (t->reading || t->writing) {
        return;     /* the read's or write's completion finishes it */
    }

    sft_buffer_cancel(&t->waiter);

    if (t->wake.posted) {
        sft_delete_posted_event(&t->wake);
    }

    if (t->chunk) {
        sft_buffer_put(t->chunk);
        t->chunk = NULL;
    }

    if (t->rbuf) {
        sft_buffer_put(t->rbuf);
        t->rbuf = NULL;
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

    if (s->tls && s->prot_p) {
        x.data_path = sft_ftp_tls_paths[t->sealed_by];

    } else if (t->kind == SFT_FTP_RETR && !t->copy) {
        x.data_path = SFT_XFER_SENDFILE;

    } else if (t->splice) {
        x.data_path = SFT_XFER_SPLICE;

    } else {
        x.data_path = SFT_XFER_POOLED;
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

    if (t->rate_ev.timer_set) {
        sft_del_timer(&t->rate_ev);
    }

    if (t->reading) {
        return;     /* the read's completion comes back here */
    }

    sft_buffer_cancel(&t->waiter);

    if (t->wake.posted) {
        sft_delete_posted_event(&t->wake);
    }

    if (t->chunk) {
        sft_buffer_put(t->chunk);
        t->chunk = NULL;
    }

    if (t->rbuf) {
        sft_buffer_put(t->rbuf);
        t->rbuf = NULL;
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

    sft_ftp_transfer_report(s, t);

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "ftp %s \"%.*s\" %lld bytes, aborted: session closed",
                  sft_ftp_kind_names[t->kind], (int) t->path_len, t->path,
                  (long long) t->bytes);

    s->transfer = NULL;
    sft_destroy_pool(t->pool);
}
