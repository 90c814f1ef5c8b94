/*
 * sft_s3_read.c -- files of the s3 driver open for reading.  The open is
 * what the memo knows of the name (a client's stat just asked), else a
 * peek at its first bytes (sft_s3_peek.c) or a HEAD: its size, mtime,
 * ETag, the stored CRC-32C, which CHECKSUM answers, and a small file's
 * bytes where a peek brought them whole, which reads take without a GET.
 * Other reads are served from one GET per open file that reads
 * ahead: its answer is taken into a small buffer (the GET paused while
 * the buffer is full: the reader's pace is the download's), and reads at
 * increasing offsets take from it, queued in the order they came
 * (pipelined SFTP reads).  A read ahead within what the buffer holds
 * skips to it (a resumed download of a small file the open has whole);
 * one at another offset drops the GET and starts one there.  A
 * sequential open's GET runs to the end of the object, another's over a
 * window; one of the whole object has no Range (Ceph RGW answers a plain
 * GET a third of a millisecond sooner than a ranged one).  The GET names
 * the ETag of the open (If-Match), so a replaced object fails the read
 * rather than mixing two contents.  Reads complete
 * on a posted event, never inside libcurl's callbacks.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>
#include <sft_storage_digest.h>


/* reads queued on one file, the buffer, and the span of a non-sequential
   GET */
#define SFT_S3_READS       32
#define SFT_S3_READ_BUF    (128 * 1024)
#define SFT_S3_READ_WINDOW ((off_t) 16 * 1024 * 1024)

/* what libcurl hands on_data at once: resumed once this much is free */
#define SFT_S3_READ_PIECE  CURL_MAX_WRITE_SIZE


typedef struct {
    sft_s3_storage_conf_t *conf;
    sft_log_t             *log;           /* the session's, of the open */
    sft_str_t              key;
    sft_str_t              etag;
    off_t                  size;
    time_t                 mtime;
    uint32_t               crc32c;        /* the whole object's */

    sft_s3_request_t      *r;             /* the GET, NULL when over */
    off_t                  pos;           /* the offset of buf + start */
    off_t                  get_first;     /* the range the GET asked */
    off_t                  get_last;
    u_char                *buf;
    size_t                 cap;
    size_t                 start;
    size_t                 len;
    sft_storage_err_t      get_err;

    sft_storage_req_t     *queue[SFT_S3_READS];   /* nbytes: filled */
    sft_uint_t             nqueue;
    sft_storage_req_t     *done[SFT_S3_READS];
    sft_uint_t             ndone;
    sft_event_t            ev;

    unsigned               sequential:1;
    unsigned               get_whole:1;    /* the GET has no Range */
    unsigned               crc32c_known:1;
    unsigned               get_over:1;
    unsigned               completing:1;
    unsigned               closed:1;
} sft_s3_reader_t;


static void sft_s3_open_peeked(sft_s3_op_t *op);
static void sft_s3_open_missing(sft_s3_op_t *op);
static void sft_s3_open_headed(sft_s3_op_t *op);
static sft_s3_reader_t *sft_s3_reader_create(sft_s3_op_t *op,
    sft_str_t *etag);
static void sft_s3_reader_free(sft_s3_reader_t *rd);
static void sft_s3_read_serve(sft_s3_reader_t *rd);
static sft_uint_t sft_s3_read_take(sft_s3_reader_t *rd,
    sft_storage_req_t *q);
static void sft_s3_read_done(sft_s3_reader_t *rd, sft_storage_err_t err);
static void sft_s3_read_get(sft_s3_reader_t *rd, off_t offset);
static sft_int_t sft_s3_read_data(sft_s3_request_t *r, u_char *p,
    size_t n);
static const char *sft_s3_read_refuse(sft_s3_reader_t *rd,
    sft_s3_request_t *r);
static void sft_s3_read_got(sft_s3_request_t *r);
static void sft_s3_read_event(sft_event_t *ev);


/* the file the memo knows (a client's stat just asked), else a peek, else
   a HEAD; for a digest, one whose CRC-32C is known, else a HEAD */

sft_int_t
sft_s3_open_read(sft_storage_req_t *req)
{
    sft_int_t     rc;
    sft_uint_t    digest;
    sft_s3_op_t  *op;

    op = sft_s3_op_below(req, SFT_STORAGE_IS_DIR);
    if (op == NULL) {
        return SFT_ERROR;
    }

    digest = (req->flags & SFT_STORAGE_READ_DIGEST) != 0;

    rc = sft_s3_memo_answer(op, sft_s3_open_headed,
                            digest ? SFT_S3_MEMO_CRC : SFT_S3_MEMO_FILE);

    if (rc == SFT_DECLINED) {
        rc = op->conf->peek && !digest
             ? sft_s3_peek(op, sft_s3_open_peeked)
             : sft_s3_op_head(op, &op->key, sft_s3_open_headed);
    }

    return sft_s3_op_again(op, rc);
}


static void
sft_s3_open_peeked(sft_s3_op_t *op)
{
    sft_s3_peek_answered(op, sft_s3_open_headed, sft_s3_open_missing,
                         sft_s3_open_headed);
}


static void
sft_s3_open_missing(sft_s3_op_t *op)
{
    sft_s3_op_finish(op, SFT_STORAGE_NOT_FOUND);
}


static void
sft_s3_open_headed(sft_s3_op_t *op)
{
    uint32_t            crc32c = 0;
    sft_str_t           etag;
    sft_uint_t          crc32c_known;
    sft_s3_request_t   *r;
    sft_s3_reader_t    *rd;
    sft_storage_req_t  *req;

    r = op->r;
    req = op->req;

    if (op->memo_used) {
        etag.data = op->memo.etag;
        etag.len = op->memo.etag_len;
        crc32c = op->memo.crc32c;
        crc32c_known = op->memo.crc32c_known;

    } else {
        if (r->rc != SFT_OK || r->status != 200) {
            sft_s3_op_fail(op, "HeadObject");
            return;
        }

        sft_s3_stat_head(op->conf, &op->key, r, &req->st);
        sft_s3_memo_put(op, SFT_S3_FOUND_FILE, r);

        etag = r->etag;
        crc32c_known = sft_s3_request_crc32c(r, &crc32c) == SFT_OK;
    }

    rd = sft_s3_reader_create(op, &etag);
    if (rd == NULL) {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
        return;
    }

    rd->sequential = (req->flags & SFT_STORAGE_READ_SEQUENTIAL) != 0;
    rd->crc32c_known = crc32c_known;
    rd->crc32c = crc32c;

    req->file->storage = req->storage;
    req->file->data = rd;
    req->file->size = req->st.size;
    req->file->mtime = req->st.mtime;
    req->file->id = req->st.id;

    sft_s3_op_finish(op, SFT_STORAGE_OK);
}


/* a reader of op's file; its buffer holds the file where the memo or a
   peek brought it whole */

static sft_s3_reader_t *
sft_s3_reader_create(sft_s3_op_t *op, sft_str_t *etag)
{
    size_t            elen, whole;
    sft_s3_reader_t  *rd;

    elen = etag->len;
    whole = op->memo_used && op->memo.body ? (size_t) op->req->st.size : 0;

    rd = sft_alloc(sizeof(sft_s3_reader_t) + op->key.len + elen,
                   op->req->log);
    if (rd == NULL) {
        return NULL;
    }

    sft_memzero(rd, sizeof(sft_s3_reader_t));

    rd->cap = sft_max(SFT_S3_READ_BUF, whole);

    rd->buf = sft_alloc(rd->cap, op->req->log);
    if (rd->buf == NULL) {
        sft_free(rd);
        return NULL;
    }

    if (whole) {
        sft_memcpy(rd->buf, op->memo.body, whole);
        rd->len = whole;
    }

    rd->get_over = 1;                      /* no GET yet */
    rd->conf = op->conf;
    rd->log = op->req->log;
    rd->size = op->req->st.size;
    rd->mtime = op->req->st.mtime;
    rd->key.data = (u_char *) (rd + 1);
    rd->key.len = op->key.len;
    sft_memcpy(rd->key.data, op->key.data, op->key.len);
    rd->etag.data = rd->key.data + op->key.len;
    rd->etag.len = elen;
    sft_memcpy(rd->etag.data, etag->data, elen);

    rd->ev.handler = sft_s3_read_event;
    rd->ev.data = rd;
    rd->ev.log = op->conf->log;

    return rd;
}


static void
sft_s3_reader_free(sft_s3_reader_t *rd)
{
    if (rd->r) {
        sft_s3_request_free(rd->r);
    }

    if (rd->ev.posted) {
        sft_delete_posted_event(&rd->ev);
    }

    sft_free(rd->buf);
    sft_free(rd);
}


sft_int_t
sft_s3_read(sft_storage_req_t *req)
{
    sft_s3_reader_t  *rd;

    rd = req->file->data;
    req->nbytes = 0;

    if (req->offset >= rd->size || req->len == 0) {
        return SFT_OK;
    }

    /* all of it buffered, nothing queued before it: at once */

    if (rd->nqueue == 0 && req->offset == rd->pos
        && (rd->len >= req->len || rd->pos + (off_t) rd->len == rd->size))
    {
        (void) sft_s3_read_take(rd, req);
        sft_s3_read_serve(rd);
        return SFT_OK;
    }

    if (rd->nqueue == SFT_S3_READS) {
        req->err = SFT_STORAGE_BUSY;
        return SFT_ERROR;
    }

    rd->queue[rd->nqueue++] = req;
    sft_s3_read_serve(rd);

    return SFT_AGAIN;
}


/*
 * The queued reads, in order, from the buffer; a read that wants another
 * offset than the buffer's restarts the GET there.  Finished reads
 * complete on the posted event.
 */

static void
sft_s3_read_serve(sft_s3_reader_t *rd)
{
    off_t               want;
    sft_storage_req_t  *q;

    while (rd->nqueue) {
        q = rd->queue[0];
        want = q->offset + q->nbytes;

        if (want >= rd->size) {
            sft_s3_read_done(rd, SFT_STORAGE_OK);
            continue;
        }

        /* ahead within what the buffer holds: the bytes before it go */

        if (want > rd->pos && want - rd->pos < (off_t) rd->len) {
            rd->start += (size_t) (want - rd->pos);
            rd->len -= (size_t) (want - rd->pos);
            rd->pos = want;
        }

        if (want != rd->pos) {
            sft_s3_read_get(rd, want);
            break;
        }

        if (sft_s3_read_take(rd, q)) {
            sft_s3_read_done(rd, SFT_STORAGE_OK);
            continue;
        }

        if (rd->len || !rd->get_over) {
            break;                  /* the GET brings more */
        }

        if (rd->get_err || q->nbytes) {
            sft_s3_read_done(rd, q->nbytes ? SFT_STORAGE_OK : rd->get_err);
            rd->get_err = SFT_STORAGE_OK;
            continue;
        }

        sft_s3_read_get(rd, want);  /* the window ended */
        break;
    }

    if (rd->r && rd->cap - rd->len >= SFT_S3_READ_PIECE) {
        sft_s3_request_resume(rd->r);
    }
}


/* from the buffer into q; 1 when q is full */

static sft_uint_t
sft_s3_read_take(sft_s3_reader_t *rd, sft_storage_req_t *q)
{
    size_t  n;

    n = sft_min(rd->len, q->len - (size_t) q->nbytes);

    sft_memcpy(q->buf + q->nbytes, rd->buf + rd->start, n);
    q->nbytes += n;
    rd->start += n;
    rd->len -= n;
    rd->pos += n;

    if (rd->len == 0) {
        rd->start = 0;
    }

    return (size_t) q->nbytes == q->len;
}


/* the first queued read is over: it completes on the posted event */

static void
sft_s3_read_done(sft_s3_reader_t *rd, sft_storage_err_t err)
{
    sft_storage_req_t  *q;

    q = rd->queue[0];
    q->err = err;

    rd->nqueue--;
    memmove(rd->queue, rd->queue + 1,
                rd->nqueue * sizeof(sft_storage_req_t *));

    rd->done[rd->ndone++] = q;
    sft_post_event(&rd->ev);
}


/* a GET from offset, the one before it dropped: ranged unless it is of
   the whole object and the open knows the ETag that binds its answer */

static void
sft_s3_read_get(sft_s3_reader_t *rd, off_t offset)
{
    off_t              end;
    u_char            *p;
    sft_s3_pair_t     *h;
    sft_s3_request_t  *r;

    if (rd->r) {
        sft_s3_request_free(rd->r);
        rd->r = NULL;
    }

    rd->pos = offset;
    rd->start = 0;
    rd->len = 0;
    rd->get_over = 1;
    rd->get_err = SFT_STORAGE_IO;

    end = rd->sequential ? rd->size
                         : sft_min(rd->size, offset + SFT_S3_READ_WINDOW);

    r = sft_s3_request_create(&rd->conf->client);
    if (r == NULL) {
        sft_post_event(&rd->ev);
        return;
    }

    rd->get_first = offset;
    rd->get_last = end - 1;
    rd->get_whole = offset == 0 && end == rd->size && rd->etag.len != 0;

    h = sft_pcalloc(r->pool, 2 * sizeof(sft_s3_pair_t));
    p = sft_pnalloc(r->pool, 64);
    if (h == NULL || p == NULL) {
        sft_s3_request_free(r);
        sft_post_event(&rd->ev);
        return;
    }

    sft_str_set(&r->method, "GET");
    r->key = rd->key;
    r->idempotent = 1;
    r->on_data = sft_s3_read_data;
    r->on_done = sft_s3_read_got;
    r->data = rd;
    r->headers = h;

    if (!rd->get_whole) {
        sft_str_set(&h[r->nheaders].name, "Range");
        h[r->nheaders].value.data = p;
        h[r->nheaders].value.len = snprintf((char *) p, 64, "bytes=%lld-%lld",
                                            (long long) offset,
                                            (long long) end - 1);
        r->nheaders++;
    }

    if (rd->etag.len) {
        sft_str_set(&h[r->nheaders].name, "If-Match");
        h[r->nheaders].value = rd->etag;
        r->nheaders++;
    }

    if (sft_s3_request_start(r) != SFT_OK) {
        sft_s3_request_free(r);
        sft_post_event(&rd->ev);
        return;
    }

    rd->r = r;
    rd->get_over = 0;
    rd->get_err = SFT_STORAGE_OK;
}


/* a piece of the answer: taken whole, or the GET pauses */

static sft_int_t
sft_s3_read_data(sft_s3_request_t *r, u_char *p, size_t n)
{
    u_char           *buf;
    sft_s3_reader_t  *rd = r->data;

    if (r->delivered == 0) {
        r->refused = sft_s3_read_refuse(rd, r);
        if (r->refused) {
            return SFT_ERROR;
        }
    }

    if (r->delivered + (off_t) n > rd->get_last - rd->get_first + 1) {
        r->refused = "more bytes than the range asked";
        return SFT_ERROR;
    }

    if (rd->start + rd->len + n > rd->cap && rd->start) {
        memmove(rd->buf, rd->buf + rd->start, rd->len);
        rd->start = 0;
    }

    if (rd->len + n > rd->cap) {
        if (rd->len) {
            return SFT_AGAIN;
        }

        buf = sft_alloc(n, rd->conf->log);
        if (buf == NULL) {
            return SFT_ERROR;
        }

        sft_free(rd->buf);
        rd->buf = buf;
        rd->cap = n;
    }

    sft_memcpy(rd->buf + rd->start + rd->len, p, n);
    rd->len += n;

    sft_post_event(&rd->ev);

    return SFT_OK;
}


/*
 * Bytes are taken only from the answer to the range asked, of the object
 * the open saw: 206, its Content-Range that range of that size (a whole
 * object's: 200, its Content-Length that size where it has one: a server
 * or proxy may send a plain GET's body chunked), its ETag (if any) the
 * open's; anything else is refused before a byte is.  The bytes that
 * come are counted against the range either way: more are refused as
 * they come, fewer fail the read at the end.
 */

static const char *
sft_s3_read_refuse(sft_s3_reader_t *rd, sft_s3_request_t *r)
{
    if (rd->get_whole) {
        if (r->status != 200
            || (r->content_length != -1 && r->content_length != rd->size))
        {
            return "not 200 with the object's Content-Length";
        }

    } else if (!sft_s3_request_range_is(r, rd->get_first, rd->get_last,
                                        rd->size))
    {
        return "not 206 with the Content-Range asked";
    }

    if (r->etag.len && rd->etag.len
        && (r->etag.len != rd->etag.len
            || sft_memcmp(r->etag.data, rd->etag.data, r->etag.len) != 0))
    {
        return "ETag not the open's";
    }

    return NULL;
}


static void
sft_s3_read_got(sft_s3_request_t *r)
{
    sft_int_t         status;
    sft_s3_reader_t  *rd = r->data;

    rd->get_over = 1;
    status = rd->get_whole ? 200 : 206;

    /* an answer that ended short of its range without an error */

    if (r->rc == SFT_OK && r->status == status && r->refused == NULL
        && r->delivered != rd->get_last - rd->get_first + 1)
    {
        r->refused = "fewer bytes than the range asked";
        r->rc = SFT_ERROR;
    }

    if (r->rc != SFT_OK || r->status != status) {
        rd->get_err = sft_s3_error(rd->conf, rd->log, r, "GetObject",
                                   &rd->key);
        if (rd->get_err == SFT_STORAGE_OK) {
            rd->get_err = SFT_STORAGE_IO;
        }
    }

    sft_s3_request_free(r);
    rd->r = NULL;

    sft_post_event(&rd->ev);
}


/* serve, then complete what is done; a CLOSE from a handler waits */

static void
sft_s3_read_event(sft_event_t *ev)
{
    sft_storage_req_t  *q;
    sft_s3_reader_t    *rd = ev->data;

    sft_s3_read_serve(rd);

    rd->completing = 1;

    while (rd->ndone && !rd->closed) {
        q = rd->done[0];
        rd->ndone--;
        memmove(rd->done, rd->done + 1,
                    rd->ndone * sizeof(sft_storage_req_t *));

        sft_storage_complete(q);
    }

    rd->completing = 0;

    if (rd->closed) {
        sft_s3_reader_free(rd);
    }
}


sft_int_t
sft_s3_close_read(sft_storage_req_t *req)
{
    sft_s3_reader_t  *rd;

    rd = req->file->data;
    req->file->data = NULL;

    if (rd == NULL) {
        return SFT_OK;
    }

    if (rd->completing) {
        rd->closed = 1;
        return SFT_OK;
    }

    sft_s3_reader_free(rd);

    return SFT_OK;
}


/* what the open saw: S3 objects do not change under a reader */

sft_int_t
sft_s3_fstat(sft_storage_req_t *req)
{
    sft_s3_reader_t  *rd;

    rd = req->file->data;

    if (rd == NULL || req->file->write) {
        req->err = SFT_STORAGE_UNSUPPORTED;
        return SFT_ERROR;
    }

    sft_s3_stat_file(rd->conf, &rd->key, rd->size, rd->mtime, &req->st);

    return SFT_OK;
}


/*
 * CHECKSUM: the whole object's CRC-32C as its HEAD at the open answered
 * it (the same ETag the reads name), at once; any other digest is not
 * kept.
 */

sft_int_t
sft_s3_checksum(sft_storage_req_t *req)
{
    sft_s3_reader_t  *rd;

    rd = req->file->data;

    if (rd == NULL || req->file->write || !rd->crc32c_known
        || req->flags != SFT_DIGEST_CRC32C || req->len < 4)
    {
        req->err = SFT_STORAGE_UNSUPPORTED;
        return SFT_ERROR;
    }

    req->buf[0] = (u_char) (rd->crc32c >> 24);
    req->buf[1] = (u_char) (rd->crc32c >> 16);
    req->buf[2] = (u_char) (rd->crc32c >> 8);
    req->buf[3] = (u_char) rd->crc32c;
    req->nbytes = 4;

    return SFT_OK;
}


/* a read still queued, or done but not completed, is taken back */

sft_int_t
sft_s3_read_cancel(sft_storage_req_t *req)
{
    sft_uint_t        i;
    sft_s3_reader_t  *rd;

    rd = req->file->data;

    if (rd == NULL) {
        return SFT_DECLINED;
    }

    for (i = 0; i < rd->nqueue; i++) {
        if (rd->queue[i] == req) {
            rd->nqueue--;
            memmove(&rd->queue[i], &rd->queue[i + 1],
                        (rd->nqueue - i) * sizeof(sft_storage_req_t *));
            return SFT_OK;
        }
    }

    for (i = 0; i < rd->ndone; i++) {
        if (rd->done[i] == req) {
            rd->ndone--;
            memmove(&rd->done[i], &rd->done[i + 1],
                        (rd->ndone - i) * sizeof(sft_storage_req_t *));
            return SFT_OK;
        }
    }

    return SFT_DECLINED;
}
