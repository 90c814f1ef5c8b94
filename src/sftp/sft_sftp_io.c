/*
 * sft_sftp_io.c -- READ and WRITE of an open file: a READ answered at once
 * from the page cache or tmpfs when the probe at OPEN found the file's
 * pages there, else read on the thread pool; the WRITEs of a handle one
 * at a time, in the order they came.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>

#include <sys/uio.h>


/* the probe of a file open for reading: how its READs read */

typedef struct {
    sft_fd_t              fd;
    sft_uint_t            read_now;     /* SFT_SFTP_READ_* */
} sft_sftp_probe_t;


static sft_int_t sft_sftp_read_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_read_now(sft_sftp_session_t *s,
    sft_sftp_handle_t *h, uint32_t id, uint32_t len, uint64_t offset);
static void sft_sftp_read_complete(sft_sftp_request_t *r);
static sft_int_t sft_sftp_write_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static void sft_sftp_write(sft_sftp_request_t *r);
static void sft_sftp_write_complete(sft_sftp_request_t *r);
static void sft_sftp_probe_thread(void *data, sft_log_t *log);
static void sft_sftp_probe_done(sft_event_t *ev);


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

    if (h->read_now != SFT_SFTP_READ_THREAD) {
        rc = sft_sftp_read_now(s, h, id, len, offset);

        if (rc != SFT_DECLINED) {
            return rc;
        }
    }

    r = sft_sftp_request_new(s, hd, id, 13 + len);
    if (r == NULL) {
        return SFT_ERROR;
    }

    r->handle = h;

    /* the reply's header goes in front of the bytes read */

    r->data = sft_pnalloc(r->pool, 13 + len);
    if (r->data == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    h->busy++;
    sft_sftp_result(r, sft_vfs_read(&s->vfs, &r->req, &h->file, r->data + 13,
                                    len, (off_t) offset));

    return SFT_OK;
}


/*
 * A READ answered at once, with no request: the file is read straight
 * into the output, behind the reply's header, if its pages are in memory
 * (see the probe at OPEN).  SFT_DECLINED: they are not,
 * the read goes to the thread pool.
 */

static sft_int_t
sft_sftp_read_now(sft_sftp_session_t *s, sft_sftp_handle_t *h, uint32_t id,
    uint32_t len, uint64_t offset)
{
    u_char        *p;
    ssize_t        n;
    struct iovec   iov;

    p = sft_sftp_reply_space(s, 13 + len);
    if (p == NULL) {
        return SFT_ERROR;
    }

    iov.iov_base = p + 13;
    iov.iov_len = len;

    n = preadv2(sft_storage_file_fd(&h->file), &iov, 1,
                (off_t) offset,
                h->read_now == SFT_SFTP_READ_NOWAIT ? RWF_NOWAIT : 0);

    if (n == -1) {
        if (errno == EOPNOTSUPP) {
            h->read_now = SFT_SFTP_READ_THREAD;
        }

        /* EAGAIN: not cached; any error: the thread pool reports it */
        return SFT_DECLINED;
    }

    /*
     * only part of the range cached (readahead under way): the thread
     * pool reads all of it, rather than a short answer the client must
     * ask again for
     */

    if (h->read_now == SFT_SFTP_READ_NOWAIT && (size_t) n < len
        && (off_t) offset + n < h->file.size)
    {
        return SFT_DECLINED;
    }

    if (n == 0) {
        sft_sftp_status(s, id, SSH_FX_EOF, "End of file");
        return SFT_OK;
    }

    (void) sft_sftp_put_u32(p, 9 + (uint32_t) n);
    p[4] = SSH_FXP_DATA;
    (void) sft_sftp_put_u32(p + 5, id);
    (void) sft_sftp_put_u32(p + 9, (uint32_t) n);

    h->bytes += n;
    s->out_len += 13 + n;

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
        }
    }

    sft_sftp_finish(r);
}


static sft_int_t
sft_sftp_write_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
{
    u_char              *data;
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

    r = sft_sftp_request_new(s, hd, id, SFT_SFTP_SMALL_REPLY);
    if (r == NULL) {
        return SFT_ERROR;
    }

    r->handle = h;

    r->data = sft_pnalloc(r->pool, len ? len : 1);
    if (r->data == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    sft_memcpy(r->data, data, len);
    r->data_len = len;
    r->offset = offset;
    h->busy++;

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
    sft_int_t            rc;
    sft_sftp_handle_t   *h;
    sft_sftp_session_t  *s;

    s = r->session;
    h = r->handle;

    if (h->write_err != SFT_STORAGE_OK) {
        r->req.err = h->write_err;
        sft_sftp_complete(r);
        return;
    }

    rc = sft_vfs_write(&s->vfs, &r->req, &h->file, r->data, r->data_len,
                       (off_t) r->offset);
    sft_sftp_result(r, rc);
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

    } else if ((size_t) r->req.nbytes != r->req.len) {
        h->write_err = SFT_STORAGE_IO;
        sft_sftp_status(s, r->id, SSH_FX_FAILURE, "Short write");

    } else {
        h->bytes += r->req.len;
        sft_sftp_status(s, r->id, SSH_FX_OK, "Success");
    }

    /* the next WRITE of the handle, once this one is answered */

    h->writes = r->next;

    if (h->writes) {
        sft_sftp_write(h->writes);
    }

    sft_sftp_finish(r);
}


/*
 * The probe of a file open for reading, on the thread pool: a file in
 * memory is read on the loop; one whose file system knows RWF_NOWAIT is
 * read there when its pages are cached; any other on the thread pool.
 */

sft_int_t
sft_sftp_read_probe(sft_sftp_request_t *r)
{
    sft_sftp_probe_t    *ctx;
    sft_thread_task_t   *task;
    sft_sftp_handle_t   *h;
    sft_sftp_session_t  *s;

    s = r->session;
    h = r->handle;

    if (s->thread_pool == NULL) {
        return SFT_DECLINED;
    }

    task = sft_thread_task_alloc(r->pool, sizeof(sft_sftp_probe_t));
    if (task == NULL) {
        return SFT_DECLINED;
    }

    ctx = task->ctx;
    ctx->fd = sft_storage_file_fd(&h->file);
    ctx->read_now = h->file.storage->in_memory ? SFT_SFTP_READ_MEMORY
                                               : SFT_SFTP_READ_THREAD;

    if (ctx->fd == SFT_INVALID_FILE) {
        return SFT_DECLINED;
    }

    r->ctx = ctx;

    task->handler = sft_sftp_probe_thread;
    task->event.handler = sft_sftp_probe_done;
    task->event.data = r;
    task->event.log = s->log;

    if (sft_thread_task_post(s->thread_pool, task) != SFT_OK) {
        return SFT_DECLINED;
    }

    return SFT_AGAIN;
}


static void
sft_sftp_probe_thread(void *data, sft_log_t *log)
{
    u_char             byte;
    struct iovec       iov;
    sft_sftp_probe_t  *ctx = data;

    (void) log;

    iov.iov_base = &byte;
    iov.iov_len = 1;

    /* a storage in memory (in_memory) needs no probe */

    if (ctx->read_now != SFT_SFTP_READ_MEMORY
        && (preadv2(ctx->fd, &iov, 1, 0, RWF_NOWAIT) >= 0
            || errno == EAGAIN))
    {
        ctx->read_now = SFT_SFTP_READ_NOWAIT;
    }
}


static void
sft_sftp_probe_done(sft_event_t *ev)
{
    sft_sftp_request_t  *r = ev->data;
    sft_sftp_probe_t    *ctx = r->ctx;

    r->handle->read_now = ctx->read_now;
    r->req.err = SFT_STORAGE_OK;

    sft_sftp_op_done(&r->req);
}
