/*
 * sft_xfer_stream.c -- the transfer engine's stream: set up, run by the
 * protocol's connection events and the engine's own (a chunk free again,
 * tokens again), cancelled, and ended once: the chunks go back to the
 * pool and x->done runs when no storage operation is in flight.  The
 * directions are in sft_xfer_send.c and sft_xfer_recv.c.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event.h>
#include <sft_connection.h>
#include <sft_event_openssl.h>
#include <sft_vfs.h>
#include <sft_xfer_stream.h>


static void sft_xfer_stream_wake(sft_event_t *ev);
static void sft_xfer_stream_io_done(sft_xfer_io_t *io);
static void sft_xfer_stream_finish(sft_xfer_stream_t *x);


void
sft_xfer_conf_init(sft_xfer_conf_t *conf)
{
    conf->sendfile = SFT_CONF_UNSET;
    conf->splice = SFT_CONF_UNSET;
}


void
sft_xfer_conf_merge(sft_xfer_conf_t *conf, sft_xfer_conf_t *prev)
{
    sft_conf_merge_value(conf->sendfile, prev->sendfile, 1);
    sft_conf_merge_value(conf->splice, prev->splice, 1);
}


void
sft_xfer_stream_init(sft_xfer_stream_t *x)
{
    x->io.vfs = x->vfs;
    x->io.file = x->file;
    x->io.pool = x->pool;
    x->io.log = x->log;
    x->io.handler = sft_xfer_stream_io_done;
    x->io.data = x;
    x->io.release = sft_buffer_put;
    sft_xfer_io_init(&x->io);

    sft_xfer_rate_init(&x->bucket, x->rate, sft_current_msec);

    x->wake.handler = sft_xfer_stream_wake;
    x->wake.data = x;
    x->wake.log = x->log;
    x->waiter.event = &x->wake;

    x->rate_ev.handler = sft_xfer_stream_wake;
    x->rate_ev.data = x;
    x->rate_ev.log = x->log;

    /* the path as far as it is known before the connection is */

    if (x->direction == SFT_XFER_UPLOAD) {
        sft_xfer_recv_splice_init(x);

        x->path = x->tls ? SFT_XFER_TLS
                         : x->piping ? SFT_XFER_SPLICE : SFT_XFER_POOLED;
        return;
    }

    x->path = x->tls ? SFT_XFER_TLS
              : (x->conf->sendfile && !x->ascii && x->io.fd != SFT_INVALID_FILE)
                ? SFT_XFER_SENDFILE : SFT_XFER_POOLED;
}


void
sft_xfer_stream_run(sft_xfer_stream_t *x)
{
    if (x->ended) {
        return;
    }

    if (x->direction == SFT_XFER_DOWNLOAD) {
        sft_xfer_send(x);

    } else {
        sft_xfer_recv(x);
    }
}


static void
sft_xfer_stream_wake(sft_event_t *ev)
{
    ev->timedout = 0;
    sft_xfer_stream_run(ev->data);
}


/* the protocol stops the stream: x->done runs, maybe before this returns */

void
sft_xfer_stream_cancel(sft_xfer_stream_t *x)
{
    sft_xfer_stream_end(x, SFT_XFER_END_CANCEL, SFT_STORAGE_OK);
}


/* the user's rate: how much of want may move now, or 0 and the timer set */

size_t
sft_xfer_stream_allow(sft_xfer_stream_t *x, size_t want)
{
    size_t      n;
    sft_msec_t  delay;

    n = sft_xfer_rate_allow(&x->bucket, want, sft_current_msec, &delay);

    if (n == 0 && !x->rate_ev.timer_set) {
        sft_add_timer(&x->rate_ev, delay);
    }

    return n;
}


void
sft_xfer_stream_moved(sft_xfer_stream_t *x, size_t n)
{
    sft_xfer_rate_spend(&x->bucket, n);
    sft_xfer_stream_count(x, n);
}


/* the bytes, and the path that moved them, for the sessions table too */

void
sft_xfer_stream_count(sft_xfer_stream_t *x, size_t n)
{
    x->bytes += n;

    if (x->session == NULL) {
        return;
    }

    sft_session_transfer_path(x->session,
                              (x->io.ringed && x->path == SFT_XFER_POOLED)
                              ? SFT_XFER_IO_URING : x->path);

    if (x->direction == SFT_XFER_UPLOAD) {
        sft_session_count(x->session, n, 0);

    } else {
        sft_session_count(x->session, 0, n);
    }
}


/*
 * The connection took or gave nothing: the stream waits for ev.  The first
 * time a send fills the socket, the unsent bytes the kernel keeps queued
 * are capped (TCP_NOTSENT_LOWAT), so that writability comes while the
 * send buffer still holds enough to keep the line busy but no more: a
 * file that fits at once (most small ones) never pays the system call.
 */

void
sft_xfer_stream_blocked(sft_xfer_stream_t *x, sft_event_t *ev)
{
    int  lowat;

    if (ev->write && !x->lowat) {
        x->lowat = 1;
        lowat = SFT_XFER_NOTSENT_LOWAT;

        if (setsockopt(x->conn->fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat,
                       sizeof(int))
            == -1)
        {
            sft_log_error(SFT_LOG_WARN, x->log, sft_errno,
                          "setsockopt(TCP_NOTSENT_LOWAT) failed");
        }
    }

    sft_add_timer(ev, x->timeout);
}


/*
 * A kernel copy on the connection (sendfile, splice) returned -1:
 * SFT_AGAIN, wait for ev; SFT_OK, call again; SFT_ERROR, the stream ended.
 */

sft_int_t
sft_xfer_stream_call_failed(sft_xfer_stream_t *x, sft_event_t *ev,
    const char *call)
{
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        ev->ready = 0;
        sft_xfer_stream_blocked(x, ev);
        return SFT_AGAIN;
    }

    if (errno == EINTR) {
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_INFO, x->log, sft_errno, "%s on the data "
                  "connection failed", call);
    sft_xfer_stream_end(x, SFT_XFER_END_NETWORK, SFT_STORAGE_OK);

    return SFT_ERROR;
}


static void
sft_xfer_stream_io_done(sft_xfer_io_t *io)
{
    sft_xfer_stream_t  *x = io->data;

    if (x->ended) {
        sft_xfer_stream_finish(x);
        return;
    }

    if (io->err != SFT_STORAGE_OK) {
        sft_xfer_stream_end(x, SFT_XFER_END_STORAGE, io->err);
        return;
    }

    if (x->direction == SFT_XFER_DOWNLOAD) {
        sft_xfer_send_read_done(x);

    } else {
        sft_xfer_recv_written(x);
    }

    sft_xfer_stream_run(x);
}


/* the stream stops moving bytes; the caller returns without touching x */

void
sft_xfer_stream_end(sft_xfer_stream_t *x, sft_uint_t reason,
    sft_storage_err_t err)
{
    sft_int_t  rc;

    if (x->ended) {
        return;
    }

    x->ended = 1;
    x->reason = reason;
    x->err = err;

    if (x->rate_ev.timer_set) {
        sft_del_timer(&x->rate_ev);
    }

    sft_buffer_cancel(&x->waiter);

    if (x->direction == SFT_XFER_UPLOAD && x->file) {
        sft_storage_room_forget(x->file);
    }

    if (x->wake.posted) {
        sft_delete_posted_event(&x->wake);
    }

    rc = sft_xfer_io_cancel(&x->io);

    if (rc == SFT_AGAIN) {
        return;     /* the running read's or write's completion ends it */
    }

    if (rc == SFT_DONE) {
        /* the ring gives the chunk back to the pool when the kernel is done */
        if (x->rbuf == x->io.ring.buf) {
            x->rbuf = NULL;

        } else {
            x->wbuf = NULL;
        }
    }

    sft_xfer_stream_finish(x);
}


static void
sft_xfer_stream_finish(sft_xfer_stream_t *x)
{
    u_char  **bufs[3];
    size_t    i;

    bufs[0] = &x->chunk;
    bufs[1] = &x->rbuf;
    bufs[2] = &x->wbuf;

    for (i = 0; i < 3; i++) {
        if (*bufs[i]) {
            sft_buffer_put(*bufs[i]);
            *bufs[i] = NULL;
        }
    }

    if (x->io.ringed && x->path == SFT_XFER_POOLED) {
        x->path = SFT_XFER_IO_URING;
    }

    x->done(x);
}
