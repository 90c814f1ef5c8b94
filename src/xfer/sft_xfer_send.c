/*
 * sft_xfer_send.c -- downloads: a plaintext binary file with a descriptor
 * goes out with sendfile(2) on the event loop, and so does one over TLS
 * whose records the kernel seals (kTLS); everything else (TLS sealed by
 * siftpd or OpenSSL, the line-ending filter, storage without descriptors)
 * is the pooled copy: two chunks of the shared buffer pool, the next one
 * read while the last one is sent.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event.h>
#include <sft_connection.h>
#include <sft_event_openssl.h>
#include <sft_vfs.h>
#include <sft_xfer_eol.h>
#include <sft_xfer_stream.h>
#include <sys/sendfile.h>


#define SFT_XFER_SENDFILE_MAX  (1024 * 1024)


static void sft_xfer_send_decide(sft_xfer_stream_t *x);
static void sft_xfer_send_copy(sft_xfer_stream_t *x);
static sft_int_t sft_xfer_send_read(sft_xfer_stream_t *x);


/* the data path of a TLS download, by who seals its records */
static const sft_uint_t  sft_xfer_tls_paths[] = {
    SFT_XFER_TLS,           /* SFT_SSL_SEALED_OPENSSL */
    SFT_XFER_TLS_SEALED,    /* SFT_SSL_SEALED_SIFTPD */
    SFT_XFER_KTLS           /* SFT_SSL_SEALED_KERNEL */
};


void
sft_xfer_send(sft_xfer_stream_t *x)
{
    size_t             size;
    ssize_t            n;
    sft_connection_t  *c;

    c = x->conn;

    if (!x->decided) {
        sft_xfer_send_decide(x);
    }

    if (x->copy) {
        sft_xfer_send_copy(x);
        return;
    }

    /*
     * kTLS: sendfile(2) sends TLS records of the file, as OpenSSL's
     * SSL_sendfile() does, once the records OpenSSL wrote through the BIO
     * (session tickets) are out
     */

    if (c->ssl && sft_ssl_flush(c->ssl) != SFT_OK
        && sft_xfer_stream_call_failed(x, c->write, "write()") != SFT_OK)
    {
        return;
    }

    while (x->offset < x->end) {
        size = sft_xfer_stream_allow(x,
                                     (size_t) sft_min(x->end - x->offset,
                                         (off_t) SFT_XFER_SENDFILE_MAX));
        if (size == 0) {
            return;     /* the rate timer comes back */
        }

        n = sendfile(c->fd, x->io.fd, &x->offset, size);

        if (n == -1) {
            if (sft_xfer_stream_call_failed(x, c->write, "sendfile()")
                == SFT_OK)
            {
                continue;
            }

            return;
        }

        if (n == 0) {
            break;      /* the file got shorter */
        }

        sft_xfer_stream_moved(x, n);
    }

    sft_xfer_stream_end(x, SFT_XFER_END_OK, SFT_STORAGE_OK);
}


/* on the established connection: sendfile, or the pooled copy */

static void
sft_xfer_send_decide(sft_xfer_stream_t *x)
{
    x->decided = 1;
    x->sealed_by = sft_ssl_sealed_by(x->conn);

    x->copy = (x->io.fd == SFT_INVALID_FILE || x->ascii || !x->conf->sendfile
               || (x->conn->ssl && x->sealed_by != SFT_SSL_SEALED_KERNEL));

    if (x->tls) {
        x->path = sft_xfer_tls_paths[x->sealed_by];

    } else {
        x->path = x->copy ? SFT_XFER_POOLED : SFT_XFER_SENDFILE;
    }
}


/*
 * The pooled copy: x->rbuf is filled by a read (maybe on the thread pool)
 * while x->chunk, filtered or swapped from the last read, is sent.
 */

static void
sft_xfer_send_copy(sft_xfer_stream_t *x)
{
    u_char            *tmp;
    size_t             used, size;
    ssize_t            n;
    sft_connection_t  *c;

    c = x->conn;

    for ( ;; ) {

        if (sft_xfer_send_read(x) != SFT_OK) {
            return;
        }

        while (x->out_pos < x->out_len) {
            size = sft_xfer_stream_allow(x, x->out_len - x->out_pos);
            if (size == 0) {
                return;     /* the rate timer comes back */
            }

            n = c->send(c, x->chunk + x->out_pos, size);

            if (n == SFT_AGAIN) {
                sft_xfer_stream_blocked(x, c->write);
                return;
            }

            if (n == SFT_ERROR) {
                sft_xfer_stream_end(x, SFT_XFER_END_NETWORK, SFT_STORAGE_OK);
                return;
            }

            sft_xfer_stream_moved(x, n);
            x->out_pos += n;
        }

        x->out_pos = 0;
        x->out_len = 0;

        if (x->rpos < x->rlen) {

            if (!x->ascii) {
                /* the read chunk is sent as it is; the other is read into */
                tmp = x->chunk;
                x->chunk = x->rbuf;
                x->rbuf = tmp;
                x->out_pos = x->rpos;
                x->out_len = x->rlen;
                x->rpos = 0;
                x->rlen = 0;
                continue;
            }

            if (x->chunk == NULL) {
                x->chunk = sft_buffer_get(&x->waiter);

                if (x->chunk == NULL) {
                    return;     /* x->wake runs when one may be free */
                }
            }

            x->out_len = sft_xfer_eol_to_crlf(x->rbuf + x->rpos,
                                              x->rlen - x->rpos, &used,
                                              x->chunk, x->chunk_size);
            x->rpos += used;
            continue;
        }

        if (x->eof) {
            sft_xfer_stream_end(x, SFT_XFER_END_OK, SFT_STORAGE_OK);
            return;
        }

        /* a read runs or waits for a chunk: its completion runs us */
        return;
    }
}


/* the next read ahead, if none runs: SFT_ERROR, the stream ended */

static sft_int_t
sft_xfer_send_read(sft_xfer_stream_t *x)
{
    size_t     len;
    sft_int_t  rc;

    if (x->io.busy || x->eof || x->rpos < x->rlen) {
        return SFT_OK;
    }

    if (x->offset >= x->end) {
        x->eof = 1;
        return SFT_OK;
    }

    if (x->rbuf == NULL) {
        x->rbuf = sft_buffer_get(&x->waiter);

        if (x->rbuf == NULL) {
            return SFT_OK;
        }
    }

    x->chunk_size = sft_buffer_chunk_size();
    x->rpos = 0;
    x->rlen = 0;

    len = (size_t) sft_min(x->end - x->offset, (off_t) x->chunk_size);

    rc = sft_xfer_read(&x->io, x->rbuf, len, x->offset);

    if (rc == SFT_AGAIN) {
        return SFT_OK;
    }

    if (rc == SFT_ERROR) {
        sft_xfer_stream_end(x, SFT_XFER_END_STORAGE, x->io.err);
        return SFT_ERROR;
    }

    sft_xfer_send_read_done(x);

    return SFT_OK;
}


void
sft_xfer_send_read_done(sft_xfer_stream_t *x)
{
    if (x->io.nbytes == 0) {
        x->eof = 1;     /* the file got shorter */
        return;
    }

    x->rlen = x->io.nbytes;
    x->offset += x->io.nbytes;
}
