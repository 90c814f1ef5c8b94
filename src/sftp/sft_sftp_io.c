/*
 * sft_sftp_io.c -- READ and WRITE of an open file through the transfer
 * engine's chunk I/O: a READ answered at once from the page cache or tmpfs
 * straight into the output, else read into a chunk of the shared buffer
 * pool; a WRITE's bytes copied into a chunk and written from there, the
 * WRITEs of a handle one at a time, in the order they came; the user's
 * download_rate and upload_rate, as a token bucket per direction of the
 * SSH session, which holds back the next READ or WRITE while it is empty.
 * While the pool has no free chunk, the READ or WRITE that needs one stays
 * in the input, and so do the packets behind it.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>


static sft_int_t sft_sftp_read_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_read_now(sft_sftp_session_t *s,
    sft_sftp_handle_t *h, uint32_t id, uint32_t len, uint64_t offset);
static void sft_sftp_read_complete(sft_sftp_request_t *r);
static sft_int_t sft_sftp_write_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static void sft_sftp_write(sft_sftp_request_t *r);
static void sft_sftp_write_complete(sft_sftp_request_t *r);
static void sft_sftp_io_setup(sft_sftp_session_t *s, sft_sftp_handle_t *h,
    sft_xfer_io_t *io, sft_pool_t *pool);
static sft_xfer_io_t *sft_sftp_io_new(sft_sftp_request_t *r);
static void sft_sftp_io_result(sft_sftp_request_t *r, sft_int_t rc);
static void sft_sftp_io_done(sft_xfer_io_t *io);
static void sft_sftp_rate_handler(sft_event_t *ev);


const sft_sftp_handler_t  sft_sftp_read_handler = {
    SSH_FXP_READ, "read", 0, sft_sftp_read_parse, sft_sftp_read_complete,
    NULL, NULL, NULL
};

const sft_sftp_handler_t  sft_sftp_write_handler = {
    SSH_FXP_WRITE, "write", 1, sft_sftp_write_parse,
    sft_sftp_write_complete, NULL, NULL, NULL
};


static sft_int_t
sft_sftp_read_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    u_char              *chunk;
    uint32_t             len;
    uint64_t             offset;
    sft_int_t            rc;
    sft_xfer_io_t       *io;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    rc = sft_sftp_get_open_handle(s, b, id, &h);
    if (rc != SFT_OK) {
        return rc;
    }

    if (sft_sftp_get_u64(b, &offset) != SFT_OK
        || sft_sftp_get_u32(b, &len) != SFT_OK)
    {
        return SFT_DECLINED;
    }

    if (h->is_dir || h->write) {
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Bad handle");
        return SFT_DONE;
    }

    /* clamped, as OpenSSH does */
    len = sft_min(len, (uint32_t) SFT_SFTP_MAX_READ);

    if (sft_sftp_range(s, id, offset, len) != SFT_OK) {
        return SFT_DONE;
    }

    rc = sft_sftp_read_now(s, h, id, len, offset);

    if (rc != SFT_DECLINED) {
        return rc;
    }

    /* none free: the session runs again once one may be */

    chunk = sft_buffer_get(&s->chunk_waiter);
    if (chunk == NULL) {
        return SFT_AGAIN;
    }

    /*
     * the reply's header goes in front of the bytes read, in one chunk: a
     * READ longer than that is answered short, and the client asks for
     * the rest
     */

    len = (uint32_t) sft_min((size_t) len, sft_buffer_chunk_size() - 13);

    r = sft_sftp_request_new(s, hd, id, 13 + len);
    if (r == NULL) {
        sft_buffer_put(chunk);
        return SFT_ERROR;
    }

    r->handle = h;
    r->chunk = chunk;
    r->data = chunk;

    io = sft_sftp_io_new(r);
    if (io == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    /* the loop's try was sft_sftp_read_now()'s */
    io->how = SFT_XFER_IO_VFS;

    h->busy++;
    sft_sftp_io_result(r, sft_xfer_read(io, r->data + 13, len,
                                        (off_t) offset));

    return SFT_OK;
}


/*
 * A READ answered at once, with no request: the file is read straight
 * into the output, behind the reply's header, where that does not wait
 * (tmpfs, the page cache).  SFT_DECLINED: it would, the read goes to
 * the VFS.
 */

static sft_int_t
sft_sftp_read_now(sft_sftp_session_t *s, sft_sftp_handle_t *h, uint32_t id,
    uint32_t len, uint64_t offset)
{
    u_char         *p;
    sft_int_t       rc;
    sft_xfer_io_t   io;

    if (h->read_vfs) {
        return SFT_DECLINED;
    }

    p = sft_sftp_reply_space(s, 13 + len);
    if (p == NULL) {
        return SFT_ERROR;
    }

    sft_sftp_io_setup(s, h, &io, s->pool);

    rc = sft_xfer_read_now(&io, p + 13, len, (off_t) offset);

    /* no RWF_NOWAIT on this file, or no descriptor: the VFS from now on */

    h->read_vfs = (io.how == SFT_XFER_IO_VFS);

    if (rc != SFT_OK) {
        return SFT_DECLINED;
    }

    if (io.nbytes == 0) {
        sft_sftp_status(s, id, SSH_FX_EOF, "End of file");
        return SFT_OK;
    }

    (void) sft_sftp_put_u32(p, 9 + (uint32_t) io.nbytes);
    p[4] = SSH_FXP_DATA;
    (void) sft_sftp_put_u32(p + 5, id);
    (void) sft_sftp_put_u32(p + 9, (uint32_t) io.nbytes);

    h->bytes += io.nbytes;
    s->out_len += 13 + io.nbytes;
    sft_xfer_rate_spend(&s->main->download, (size_t) io.nbytes);

    return SFT_OK;
}


static void
sft_sftp_read_complete(sft_sftp_request_t *r)
{
    u_char              *p;
    size_t               n;
    sft_sftp_handle_t   *h = r->handle;
    sft_sftp_session_t  *s = r->session;

    h->busy--;

    if (r->req.err != SFT_STORAGE_OK) {
        sft_sftp_storage_status(s, r->id, r->req.err);

    } else if (r->req.nbytes <= 0) {
        sft_sftp_status(s, r->id, SSH_FX_EOF, "End of file");

    } else {
        n = (size_t) r->req.nbytes;

        p = sft_sftp_reply_space(s, 13 + n);

        if (p != NULL) {
            (void) sft_sftp_put_u32(r->data, 9 + (uint32_t) n);
            r->data[4] = SSH_FXP_DATA;
            (void) sft_sftp_put_u32(r->data + 5, r->id);
            (void) sft_sftp_put_u32(r->data + 9, (uint32_t) n);

            sft_memcpy(p, r->data, 13 + n);
            s->out_len += 13 + n;
            h->bytes += n;
            sft_xfer_rate_spend(&s->main->download, n);
        }
    }

    sft_sftp_finish(r);
}


static sft_int_t
sft_sftp_write_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    u_char              *data, *chunk;
    uint32_t             len;
    uint64_t             offset;
    sft_int_t            rc;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    rc = sft_sftp_get_open_handle(s, b, id, &h);
    if (rc != SFT_OK) {
        return rc;
    }

    if (sft_sftp_get_u64(b, &offset) != SFT_OK
        || sft_sftp_get_string(b, &data, &len) != SFT_OK)
    {
        return SFT_DECLINED;
    }

    if (!h->write) {
        sft_sftp_status(s, id, SSH_FX_PERMISSION_DENIED,
                        "Not open for writing");
        return SFT_DONE;
    }

    if (sft_sftp_range(s, id, offset, len) != SFT_OK) {
        return SFT_DONE;
    }

    /*
     * the bytes are copied into a chunk; only those of a WRITE larger than
     * a chunk (transfer_chunk_bytes below the largest packet, which
     * limits@openssh.com tells the client) go to the request's own memory
     */

    chunk = NULL;

    /*
     * nor while the file cannot take them yet (an S3 part gathers its
     * memory): the packet and those behind it stay in the input, which
     * is parsed again when the file says it may take more, so no chunk
     * of a WRITE waits for the storage's own
     */

    if (len && sft_storage_room(&h->file, (off_t) offset, len,
                                s->chunk_waiter.event)
               < len)
    {
        return SFT_AGAIN;
    }

    if (len && len <= sft_buffer_chunk_size()) {
        chunk = sft_buffer_get(&s->chunk_waiter);
        if (chunk == NULL) {
            return SFT_AGAIN;
        }
    }

    r = sft_sftp_request_new(s, hd, id, SFT_SFTP_SMALL_REPLY);
    if (r == NULL) {
        if (chunk) {
            sft_buffer_put(chunk);
        }

        return SFT_ERROR;
    }

    r->handle = h;
    r->chunk = chunk;
    r->data = chunk ? chunk : sft_pnalloc(r->pool, len ? len : 1);

    if (r->data == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    sft_memcpy(r->data, data, len);
    r->data_len = len;
    r->offset = offset;

    if (sft_sftp_io_new(r) == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    h->busy++;
    sft_xfer_rate_spend(&s->main->upload, len);

    if (h->writes) {
        /* after the WRITEs before it */
        *h->writes_last = r;
        h->writes_last = &r->next;
        return SFT_OK;
    }

    h->writes = r;
    h->writes_last = &r->next;
    sft_sftp_write(r);

    return SFT_OK;
}


/*
 * A handle's WRITEs run one at a time, in the order they came: replies
 * then go out in that order too, which clients that pipeline WRITEs and
 * take their replies in turn (paramiko) rely on; an earlier failure
 * fails the rest unwritten.
 */

static void
sft_sftp_write(sft_sftp_request_t *r)
{
    sft_sftp_handle_t  *h = r->handle;

    if (h->write_err != SFT_STORAGE_OK) {
        r->req.err = h->write_err;
        sft_sftp_complete(r);
        return;
    }

    sft_sftp_io_result(r, sft_xfer_write(r->ctx, r->data, r->data_len,
                                         (off_t) r->offset));
}


static void
sft_sftp_write_complete(sft_sftp_request_t *r)
{
    sft_storage_err_t    err = r->req.err;
    sft_sftp_handle_t   *h = r->handle;
    sft_sftp_session_t  *s = r->session;

    h->busy--;

    if (err != SFT_STORAGE_OK) {
        if (h->write_err == SFT_STORAGE_OK) {
            h->write_err = err;
        }

        sft_sftp_storage_status(s, r->id, err);

    } else {
        h->bytes += r->data_len;
        sft_sftp_status(s, r->id, SSH_FX_OK, "Success");
    }

    /* the next WRITE of the handle, once this one is answered */

    h->writes = r->next;

    if (h->writes) {
        sft_sftp_write(h->writes);
    }

    sft_sftp_finish(r);
}


/* a READ's or WRITE's chunk I/O on the handle's file */

static void
sft_sftp_io_setup(sft_sftp_session_t *s, sft_sftp_handle_t *h,
    sft_xfer_io_t *io, sft_pool_t *pool)
{
    io->vfs = &s->vfs;
    io->file = &h->file;
    io->pool = pool;
    io->log = s->log;
    io->handler = sft_sftp_io_done;
    io->data = NULL;
    io->release = NULL;

    sft_xfer_io_init(io);

    /* a short answer would make the client ask again for the rest */
    io->whole = 1;

    if (h->read_vfs) {
        io->how = SFT_XFER_IO_VFS;
    }
}


static sft_xfer_io_t *
sft_sftp_io_new(sft_sftp_request_t *r)
{
    sft_xfer_io_t  *io;

    io = sft_palloc(r->pool, sizeof(sft_xfer_io_t));
    if (io == NULL) {
        return NULL;
    }

    sft_sftp_io_setup(r->session, r->handle, io, r->pool);
    io->data = r;
    r->ctx = io;

    /*
     * a ring operation cancelled as the worker exits (no handler runs
     * then) gives its chunk back once the kernel is done with it
     */

    if (r->chunk) {
        io->release = sft_buffer_put;
    }

    return io;
}


/* the chunk I/O's results as the request's storage operation's */

static void
sft_sftp_io_result(sft_sftp_request_t *r, sft_int_t rc)
{
    sft_xfer_io_t  *io = r->ctx;

    if (rc != SFT_AGAIN) {
        r->req.err = io->err;
        r->req.nbytes = io->nbytes;
    }

    sft_sftp_result(r, rc);
}


static void
sft_sftp_io_done(sft_xfer_io_t *io)
{
    sft_sftp_request_t  *r = io->data;

    r->req.err = io->err;
    r->req.nbytes = io->nbytes;

    sft_sftp_op_done(&r->req);
}


/*
 * The rates, checked before a READ or a WRITE is taken from the input:
 * while the direction's bucket is empty the packet stays there (so do
 * the ones behind it, in their order) and a timer runs the session
 * again; the bytes are spent as they move.  1: wait.
 */

void
sft_sftp_rate_init(sft_sftp_session_t *s)
{
    sft_xfer_rate_init(&s->download, s->account->download_rate,
                       sft_current_msec);
    sft_xfer_rate_init(&s->upload, s->account->upload_rate,
                       sft_current_msec);

    s->rate_ev.handler = sft_sftp_rate_handler;
    s->rate_ev.data = s;
    s->rate_ev.log = s->log;
}


sft_uint_t
sft_sftp_rate_wait(sft_sftp_session_t *s, u_char type)
{
    sft_msec_t        delay;
    sft_xfer_rate_t  *bucket;

    if (type == SSH_FXP_READ) {
        bucket = &s->main->download;

    } else if (type == SSH_FXP_WRITE) {
        bucket = &s->main->upload;

    } else {
        return 0;
    }

    if (sft_xfer_rate_allow(bucket, 1, sft_current_msec, &delay) != 0) {
        return 0;
    }

    if (!s->main->rate_ev.timer_set) {
        sft_add_timer(&s->main->rate_ev, delay);
    }

    return 1;
}


static void
sft_sftp_rate_handler(sft_event_t *ev)
{
    sft_sftp_session_t  *s = ev->data;

    ev->timedout = 0;

    sft_sftp_resume(s);
}
