/*
 * sft_xfer_stream.h -- the transfer engine: the bytes of one open storage
 * file to or from one connection.  The protocol fills the stream, calls
 * sft_xfer_stream_init() once the file is open and sft_xfer_stream_run()
 * whenever the connection may be ready; the engine picks the data path
 * (sendfile, kTLS sendfile, splice, or the pooled copy with storage I/O
 * overlapping socket work), applies the rate, counts the bytes, and calls
 * x->done once when it has stopped and holds nothing (no chunk, no running
 * storage operation).
 */

#ifndef _SFT_XFER_STREAM_H_INCLUDED_
#define _SFT_XFER_STREAM_H_INCLUDED_


#include <sft_xfer.h>
#include <sft_xfer_io.h>
#include <sft_xfer_rate.h>
#include <sft_session.h>


typedef struct sft_xfer_stream_s  sft_xfer_stream_t;

/* the kernel paths a protocol's server block allows (default on) */

typedef struct {
    sft_flag_t                    sendfile;    /* binary downloads */
    sft_flag_t                    splice;      /* binary uploads */
} sft_xfer_conf_t;

/*
 * "sendfile on|off;" and "splice on|off;" in the protocol's srv conf, off
 * being where its sft_xfer_conf_t is:
 *
 *     SFT_XFER_COMMANDS(offsetof(sft_ftp_srv_conf_t, xfer)),
 */

#define SFT_XFER_CMD(name, field, off, doc)                                   \
    { sft_string(name),                                                       \
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_FLAG,                   \
      sft_conf_set_flag_slot, SFT_PROTO_SRV_CONF_OFFSET,                      \
      (off) + offsetof(sft_xfer_conf_t, field), NULL, doc }

#define SFT_XFER_COMMANDS(off)                                                \
    SFT_XFER_CMD("sendfile", sendfile, off,                                   \
                 sft_command_doc("on | off", "on",                            \
                     "Send plaintext downloads with sendfile(2).")),          \
    SFT_XFER_CMD("splice", splice, off,                                       \
                 sft_command_doc("on | off", "on",                            \
                     "Receive plaintext uploads with splice(2)."))

typedef void (*sft_xfer_stream_handler_pt)(sft_xfer_stream_t *x);


/* x->reason: how a stream ended */
#define SFT_XFER_END_OK        0    /* all bytes moved */
#define SFT_XFER_END_NETWORK   1    /* the connection failed */
#define SFT_XFER_END_STORAGE   2    /* x->err */
#define SFT_XFER_END_CANCEL    3    /* sft_xfer_stream_cancel() */

/*
 * At most this much of a download waits unsent in the data socket once a
 * send has blocked: the worker is woken to write more instead of queueing
 * megabytes that the peer's acknowledgements then push out from the
 * peer's side. In flight data (the congestion window) is not limited.
 * 1 GiB on loopback, 2 cores: FTP 1345-1559 -> 2077-2237 MB/s at 0.25
 * instead of 0.7 server CPU-s; FTPS 750-765 -> 810-1030 MB/s with a third
 * less client CPU.
 */
#define SFT_XFER_NOTSENT_LOWAT  (64 * 1024)


struct sft_xfer_stream_s {
    /* set by the protocol before sft_xfer_stream_init() */
    sft_connection_t             *conn;        /* before the first run */
    sft_vfs_session_t            *vfs;
    sft_storage_file_t           *file;
    sft_pool_t                   *pool;        /* lives as long as x */
    sft_log_t                    *log;
    sft_uint_t                    direction;   /* SFT_XFER_DOWNLOAD, _UPLOAD */
    off_t                         offset;      /* the first file byte */
    off_t                         end;         /* download: after the last */
    off_t                         rate;        /* bytes/s, 0: unlimited */
    sft_msec_t                    timeout;     /* the connection idle */
    sft_xfer_conf_t              *conf;
    sft_xfer_stream_handler_pt    done;
    void                         *data;
    sft_session_t                *session;     /* its bytes and path go
                                                  there; NULL: nowhere */
    unsigned                      ascii:1;     /* the line-ending filter */
    unsigned                      tls:1;       /* conn will be TLS */

    /* the results */
    off_t                         bytes;       /* over the connection */
    sft_uint_t                    path;        /* sft_xfer_path_e */
    sft_uint_t                    reason;      /* SFT_XFER_END_* */
    sft_storage_err_t             err;

    /* the engine's */
    sft_xfer_io_t                 io;
    sft_xfer_rate_t               bucket;
    sft_buffer_waiter_t           waiter;
    sft_event_t                   wake;        /* a chunk, a turn */
    sft_event_t                   rate_ev;     /* tokens again */

    u_char                       *chunk;       /* to send, or filling */
    size_t                        chunk_size;
    size_t                        out_len;
    size_t                        out_pos;
    size_t                        room;        /* upload: the file takes
                                                  this much of the chunk
                                                  filling, 0: to ask */
    u_char                       *rbuf;        /* download: read ahead */
    size_t                        rlen;
    size_t                        rpos;
    u_char                       *wbuf;        /* upload: being written */
    size_t                        wlen;
    int                           pipe[2];     /* splice */
    size_t                        piped;       /* bytes in the pipe */

    unsigned                      copy:1;      /* download: pooled */
    unsigned                      piping:1;    /* upload: splice(2) */
    unsigned                      decided:1;   /* the path is chosen */
    unsigned                      lowat:1;     /* TCP_NOTSENT_LOWAT set */
    unsigned                      eof:1;
    unsigned                      cr:1;        /* upload: a CR held back */
    unsigned                      ended:1;
    unsigned                      sealed_by:2; /* SFT_SSL_SEALED_* */
};


void sft_xfer_conf_init(sft_xfer_conf_t *conf);
void sft_xfer_conf_merge(sft_xfer_conf_t *conf, sft_xfer_conf_t *prev);
void sft_xfer_stream_init(sft_xfer_stream_t *x);
void sft_xfer_stream_run(sft_xfer_stream_t *x);
void sft_xfer_stream_cancel(sft_xfer_stream_t *x);

/* for the engine's own files */
void sft_xfer_send(sft_xfer_stream_t *x);
void sft_xfer_send_read_done(sft_xfer_stream_t *x);
void sft_xfer_recv(sft_xfer_stream_t *x);
void sft_xfer_recv_splice_init(sft_xfer_stream_t *x);
void sft_xfer_recv_written(sft_xfer_stream_t *x);
size_t sft_xfer_stream_allow(sft_xfer_stream_t *x, size_t want);
void sft_xfer_stream_moved(sft_xfer_stream_t *x, size_t n);
void sft_xfer_stream_count(sft_xfer_stream_t *x, size_t n);
void sft_xfer_stream_end(sft_xfer_stream_t *x, sft_uint_t reason,
    sft_storage_err_t err);
void sft_xfer_stream_blocked(sft_xfer_stream_t *x, sft_event_t *ev);
sft_int_t sft_xfer_stream_call_failed(sft_xfer_stream_t *x, sft_event_t *ev,
    const char *call);


#endif /* _SFT_XFER_STREAM_H_INCLUDED_ */
