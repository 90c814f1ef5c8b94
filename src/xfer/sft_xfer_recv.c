/*
 * sft_xfer_recv.c -- uploads: a plaintext binary upload to a file with a
 * descriptor, without a rate, goes socket -> pipe -> file with splice(2);
 * everything else fills chunks of the shared buffer pool from the
 * connection (through the line-ending filter in text mode) and writes
 * each while the next one is received, never more into a chunk than the
 * file takes at once (sft_storage_room()).  Every byte is charged to the
 * quota through the VFS before the file sees it.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event.h>
#include <sft_connection.h>
#include <sft_event_openssl.h>
#include <sft_vfs.h>
#include <sft_xfer_eol.h>
#include <sft_xfer_pipe.h>
#include <sft_xfer_stream.h>


/* chunks written at once (tmpfs) before other events get a turn */
#define SFT_XFER_NOW_WRITES    4


static void sft_xfer_recv_copy(sft_xfer_stream_t *x);
static sft_uint_t sft_xfer_recv_room(sft_xfer_stream_t *x);
static void sft_xfer_recv_splice(sft_xfer_stream_t *x);
static void sft_xfer_splice_cleanup(void *data);


void
sft_xfer_recv(sft_xfer_stream_t *x)
{
    if (x->piping) {
        sft_xfer_recv_splice(x);

    } else {
        sft_xfer_recv_copy(x);
    }
}


static void
sft_xfer_recv_copy(sft_xfer_stream_t *x)
{
    size_t             size;
    ssize_t            n;
    sft_int_t          rc;
    sft_uint_t         cr, written;
    sft_connection_t  *c;

    c = x->conn;
    written = 0;

    for ( ;; ) {

        if (x->chunk == NULL) {

            if (x->eof) {
                /* the last chunk is being written (a held CR found room) */
                if (!x->io.busy) {
                    sft_xfer_stream_end(x, SFT_XFER_END_OK, SFT_STORAGE_OK);
                }

                return;
            }

            if (!sft_xfer_recv_room(x)) {
                return;     /* x->wake runs when the file takes more */
            }

            x->chunk = sft_buffer_get(&x->waiter);

            if (x->chunk == NULL) {
                return;     /* x->wake runs when one may be free */
            }

            x->chunk_size = sft_buffer_chunk_size();
            x->out_len = 0;
        }

        if (x->out_len == 0 && (!x->eof || x->cr) && !sft_xfer_recv_room(x)) {
            /* an empty chunk does not wait for the file */
            sft_buffer_put(x->chunk);
            x->chunk = NULL;
            return;
        }

        if (x->eof && x->cr && x->out_len < x->room) {
            /* a CR at the very end is a lone CR */
            x->chunk[x->out_len++] = '\r';
            x->cr = 0;
        }

        if ((x->room && x->out_len + x->cr >= x->room)
            || (x->eof && x->out_len))
        {

            if (x->io.busy) {
                return;     /* the running write's completion runs us */
            }

            rc = sft_xfer_write(&x->io, x->chunk, x->out_len, x->offset);
            x->room = 0;

            if (rc == SFT_AGAIN) {
                /* the next chunk is received while this one is written */
                x->wbuf = x->chunk;
                x->wlen = x->out_len;
                x->chunk = NULL;
                continue;
            }

            if (rc == SFT_ERROR) {
                sft_xfer_stream_end(x, SFT_XFER_END_STORAGE, x->io.err);
                return;
            }

            x->offset += x->out_len;
            x->out_len = 0;

            if (++written == SFT_XFER_NOW_WRITES) {
                /* a client that keeps the socket full: take turns */
                sft_post_event(&x->wake);
                return;
            }

            continue;
        }

        if (x->eof) {
            if (!x->io.busy) {
                sft_xfer_stream_end(x, SFT_XFER_END_OK, SFT_STORAGE_OK);
            }

            return;
        }

        /* a held CR keeps one byte free before the new data */

        size = sft_xfer_stream_allow(x, x->room - x->out_len - x->cr);
        if (size == 0) {
            return;     /* the rate timer comes back */
        }

        n = c->recv(c, x->chunk + x->out_len + x->cr, size);

        if (n == SFT_AGAIN) {
            sft_add_timer(c->read, x->timeout);
            return;
        }

        if (n == 0) {
            x->eof = 1;
            continue;
        }

        if (n == SFT_ERROR) {
            if (c->ssl && c->ssl->truncated) {
                sft_log_error(SFT_LOG_INFO, x->log, 0,
                              "upload cut without TLS close_notify, "
                              "not committed");
            }

            sft_xfer_stream_end(x, SFT_XFER_END_NETWORK, SFT_STORAGE_OK);
            return;
        }

        sft_xfer_stream_moved(x, n);

        if (x->ascii) {
            cr = x->cr;
            x->out_len += sft_xfer_eol_from_crlf(x->chunk + x->out_len,
                                                 x->chunk + x->out_len + cr,
                                                 n, &cr);
            x->cr = cr;

        } else {
            x->out_len += n;
        }
    }
}


/*
 * What the file takes of the chunk about to fill (after the one being
 * written): the chunk is filled no further, so it is written at once and
 * never waits for the file's memory (an S3 part gathering).  0: the file
 * takes nothing now (or only the byte a held CR needs), x->wake runs when
 * it may.
 */

static sft_uint_t
sft_xfer_recv_room(sft_xfer_stream_t *x)
{
    if (x->room) {
        return 1;
    }

    x->room = sft_storage_room(x->file, x->offset + (off_t) x->wlen,
                               sft_buffer_chunk_size(), &x->wake);

    if (x->room <= x->cr) {
        x->room = 0;
        return 0;
    }

    return 1;
}


/* a pooled upload's chunk is written: the next to fill, or back */

void
sft_xfer_recv_written(sft_xfer_stream_t *x)
{
    x->offset += x->wlen;
    x->wlen = 0;

    if (x->chunk == NULL) {
        x->chunk = x->wbuf;
        x->out_len = 0;

    } else {
        sft_buffer_put(x->wbuf);
    }

    x->wbuf = NULL;
}


/*
 * splice(2) where it serves; without a pipe it is the pooled copy, decided
 * before a byte moves.  splice(2) refuses O_APPEND files: appends take the
 * pooled copy.  The pipe is one of the worker's spares, given back at the
 * end when nothing is left in it (x->piped counts every byte in it).
 */

void
sft_xfer_recv_splice_init(sft_xfer_stream_t *x)
{
    sft_pool_cleanup_t  *cln;

    if (!x->conf->splice || x->ascii || x->rate || x->tls
        || (x->file->flags & SFT_STORAGE_WRITE_APPEND)
        || x->io.fd == SFT_INVALID_FILE)
    {
        return;
    }

    cln = sft_pool_cleanup_add(x->pool, 0);

    if (cln == NULL || sft_xfer_pipe_get(x->pipe) != SFT_OK) {
        sft_log_error(SFT_LOG_WARN, x->log, sft_errno,
                      "pipe2() failed, the upload takes the pooled copy");
        return;
    }

    cln->handler = sft_xfer_splice_cleanup;
    cln->data = x;
    x->piping = 1;
}


static void
sft_xfer_splice_cleanup(void *data)
{
    sft_xfer_stream_t  *x = data;

    sft_xfer_pipe_put(x->pipe, x->piped);
}


/*
 * Each pass empties the pipe into the file, then fills it from the socket;
 * the bytes are charged to the quota while in the pipe, before the file
 * sees them.  Writes to the file run on the loop, as the page cache takes
 * them; the socket side never blocks.
 */

static void
sft_xfer_recv_splice(sft_xfer_stream_t *x)
{
    ssize_t            n;
    sft_connection_t  *c;

    c = x->conn;

    for ( ;; ) {

        while (x->piped) {
            n = splice(x->pipe[0], NULL, x->io.fd, &x->offset, x->piped,
                       SPLICE_F_MOVE);

            if (n == -1 && errno == EINTR) {
                continue;
            }

            if (n <= 0) {
                sft_log_error(SFT_LOG_ERR, x->log, sft_errno,
                              "splice() to \"%s\" failed", x->file->name);
                sft_xfer_stream_end(x, SFT_XFER_END_STORAGE,
                                    (n == -1) ? sft_storage_map_errno(errno)
                                              : SFT_STORAGE_IO);
                return;
            }

            x->piped -= n;
        }

        if (x->eof) {
            sft_xfer_stream_end(x, SFT_XFER_END_OK, SFT_STORAGE_OK);
            return;
        }

        if (!c->read->ready) {
            return;     /* the socket was drained: its read event comes */
        }

        n = splice(c->fd, NULL, x->pipe[1], NULL, SFT_XFER_PIPE_SIZE,
                   SPLICE_F_MOVE|SPLICE_F_NONBLOCK);

        if (n == 0) {
            c->read->ready = 0;
            x->eof = 1;
            continue;
        }

        if (n == -1) {
            if (sft_xfer_stream_call_failed(x, c->read, "splice()")
                == SFT_OK)
            {
                continue;
            }

            return;
        }

        x->piped = n;

        if (sft_vfs_charge_write(x->vfs, x->file, x->offset, n) != SFT_OK) {
            sft_log_error(SFT_LOG_INFO, x->log, 0,
                          "quota exceeded: upload of \"%s\" stopped",
                          x->file->name);
            sft_xfer_stream_end(x, SFT_XFER_END_STORAGE, SFT_STORAGE_QUOTA);
            return;
        }

        sft_xfer_stream_count(x, n);
    }
}
