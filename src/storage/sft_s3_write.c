/*
 * sft_s3_write.c -- files of the s3 driver open for writing, each one
 * S3 upload object (sft_s3_upload.c).  The open is a look at the name
 * (a directory refused, EXCL refused on an existing object, the size of
 * the object an append or a resume at its end goes on from); the new
 * object appears only at a CLOSE that commits, an aborting CLOSE leaves
 * nothing.  An existing object opened in place at no offset (an SFTP
 * open without TRUNC) waits for its first write: at the object's end it
 * is a resume, at 0 a new object that replaces it whole (not a rewrite
 * of its first bytes, as on a disk), anywhere else refused; with no
 * write the object stays.  Writes at increasing offsets and within the
 * upload's window are taken; one behind what was sent or past the
 * window is refused as UNSUPPORTED.  Writes that waited, and the commit,
 * complete on a posted event, never inside the upload's or libcurl's
 * callbacks.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>


typedef struct sft_s3_wreq_s  sft_s3_wreq_t;

/* a write the upload kept (SFT_AGAIN) until it placed it */

struct sft_s3_wreq_s {
    sft_s3_write_t         w;
    sft_storage_req_t     *req;
    sft_s3_wreq_t         *next;
    sft_s3_wreq_t        **prev;
};


typedef struct {
    sft_s3_storage_conf_t *conf;
    sft_s3_uploader_t     *up;            /* NULL: the first write says */
    off_t                  size;          /* the object's at the open */
    sft_uint_t             flags;         /* the open's */
    sft_str_t              key;
    sft_s3_wreq_t         *waiting;       /* kept by the upload */
    sft_s3_wreq_t         *done;          /* to complete, in order */
    uint32_t               crc32c;        /* the object's, stored */
    sft_s3_wreq_t        **done_tail;
    sft_storage_req_t     *close;         /* its commit is over */
    sft_event_t            ev;
    unsigned               completing:1;
    unsigned               closed:1;
    unsigned               crc32c_known:1; /* an append goes on from it */
} sft_s3_writer_t;


static void sft_s3_open_write_probed(sft_s3_op_t *op);
static sft_storage_err_t sft_s3_writer_start(sft_s3_op_t *op,
    off_t append_size, sft_uint_t lazy);
static sft_storage_err_t sft_s3_writer_upload(sft_s3_writer_t *wr,
    sft_log_t *log, off_t append_size);
static sft_storage_err_t sft_s3_writer_decide(sft_s3_writer_t *wr,
    off_t offset, sft_log_t *log);
static void sft_s3_wrote(sft_s3_write_t *w, sft_int_t rc);
static void sft_s3_committed(sft_s3_uploader_t *up, sft_int_t rc);
static void sft_s3_write_event(sft_event_t *ev);
static void sft_s3_writer_free(sft_s3_writer_t *wr);
static sft_storage_err_t sft_s3_upload_error(sft_s3_uploader_t *up);


/* a plain create or replace may take what the memo says is there */

sft_int_t
sft_s3_open_write(sft_storage_req_t *req)
{
    sft_int_t     rc;
    sft_s3_op_t  *op;

    op = sft_s3_op_below(req, SFT_STORAGE_IS_DIR);
    if (op == NULL) {
        return SFT_ERROR;
    }

    rc = SFT_DECLINED;

    if (!(req->flags & (SFT_STORAGE_WRITE_EXCL|SFT_STORAGE_WRITE_APPEND
                        |SFT_STORAGE_WRITE_INPLACE
                        |SFT_STORAGE_WRITE_NOREPLACE)))
    {
        rc = sft_s3_memo_answer(op, sft_s3_open_write_probed,
                                SFT_S3_MEMO_ANY);
    }

    if (rc == SFT_DECLINED) {
        rc = sft_s3_probe(op, sft_s3_open_write_probed);
    }

    return sft_s3_op_again(op, rc);
}


/*
 * What is under the name decides: an object goes on from its end for an
 * append or a resume there (a copy of it is the new object's start), is
 * replaced at the commit otherwise; nothing there is a new object.
 */

static void
sft_s3_open_write_probed(sft_s3_op_t *op)
{
    off_t               size;
    sft_uint_t          flags, lazy;
    sft_storage_req_t  *req;

    req = op->req;
    flags = req->flags;
    size = 0;

    if (op->found == SFT_S3_FOUND_DIR) {
        sft_s3_op_finish(op, SFT_STORAGE_IS_DIR);
        return;
    }

    if (op->found == SFT_S3_FOUND_FILE) {
        if (flags & SFT_STORAGE_WRITE_EXCL) {
            sft_s3_op_finish(op, SFT_STORAGE_EXISTS);
            return;
        }

        req->file->existed = 1;
        req->file->replaced_size = req->st.size;
        size = req->st.size;
    }

    lazy = (flags & SFT_STORAGE_WRITE_INPLACE) && req->offset == 0
           && size > 0;

    if ((flags & SFT_STORAGE_WRITE_INPLACE) && req->offset != size && !lazy)
    {

        /* a resume anywhere but at the end would rewrite the object */

        sft_log_error(SFT_LOG_INFO, req->log, 0,
                      "S3 storage \"%.*s\": \"%.*s\" can be resumed at its "
                      "end (%lld) only, not at %lld",
                      SFT_STR_FMT(&op->conf->storage->name),
                      SFT_STR_FMT(&op->key), (long long) size,
                      (long long) req->offset);
        sft_s3_op_finish(op, SFT_STORAGE_UNSUPPORTED);
        return;
    }

    if (!(flags & (SFT_STORAGE_WRITE_APPEND|SFT_STORAGE_WRITE_INPLACE))) {
        size = 0;
    }

    sft_s3_op_finish(op, sft_s3_writer_start(op, size, lazy));
}


/* lazy: the upload waits for the first write, size is the object's */

static sft_storage_err_t
sft_s3_writer_start(sft_s3_op_t *op, off_t size, sft_uint_t lazy)
{
    size_t                  need, chunk;
    sft_s3_writer_t        *wr;
    sft_storage_req_t      *req;
    sft_storage_err_t       err;
    sft_s3_storage_conf_t  *conf;

    req = op->req;
    conf = op->conf;

    /* a part is gathered whole: one the pool cannot hold never fills */

    chunk = sft_buffer_chunk_size();
    need = chunk ? (conf->part_size + chunk - 1) / chunk : 0;

    if (chunk == 0 || need > sft_s3_upload_chunks_max(sft_buffer_total())) {
        sft_log_error(SFT_LOG_ERR, req->log, 0,
                      "S3 storage \"%.*s\": upload of \"%.*s\" refused: a "
                      "part of %zu bytes needs %zu chunks, the buffer pool "
                      "lends uploads %zu", SFT_STR_FMT(&conf->storage->name),
                      SFT_STR_FMT(&op->key), conf->part_size, need,
                      sft_s3_upload_chunks_max(sft_buffer_total()));
        return SFT_STORAGE_NO_SPACE;
    }

    wr = sft_alloc(sizeof(sft_s3_writer_t) + op->key.len, req->log);
    if (wr == NULL) {
        return SFT_STORAGE_IO;
    }

    sft_memzero(wr, sizeof(sft_s3_writer_t));

    wr->conf = conf;
    wr->size = size;
    wr->flags = req->flags;
    wr->key.data = (u_char *) (wr + 1);
    wr->key.len = op->key.len;
    sft_memcpy(wr->key.data, op->key.data, op->key.len);
    wr->done_tail = &wr->done;
    wr->ev.handler = sft_s3_write_event;
    wr->ev.data = wr;
    wr->ev.log = conf->log;

    /* the HEAD of the object there: the CRC-32C an append goes on from */

    wr->crc32c_known = size && op->found == SFT_S3_FOUND_FILE
                       && sft_s3_request_crc32c(op->r, &wr->crc32c)
                          == SFT_OK;

    if (!lazy) {
        err = sft_s3_writer_upload(wr, req->log, size);

        if (err != SFT_STORAGE_OK) {
            sft_free(wr);
            return err;
        }
    }

    sft_s3_stat_file(conf, &op->key, size, time(NULL), &req->st);

    req->file->storage = req->storage;
    req->file->write = 1;
    req->file->data = wr;
    req->file->size = size;
    req->file->offset = lazy ? 0 : size;
    req->file->mtime = req->st.mtime;
    req->file->id = req->st.id;

    return SFT_STORAGE_OK;
}


/* the upload: a new object, or one going on from append_size old bytes */

static sft_storage_err_t
sft_s3_writer_upload(sft_s3_writer_t *wr, sft_log_t *log, off_t append_size)
{
    sft_s3_upload_conf_t    uc;
    sft_s3_storage_conf_t  *conf;

    conf = wr->conf;

    sft_memzero(&uc, sizeof(sft_s3_upload_conf_t));

    uc.client = &conf->client;
    uc.key = wr->key;
    uc.part_size = conf->part_size;
    uc.parts_in_flight = conf->parts_in_flight;
    uc.storage_class = conf->storage_class;
    uc.sse = conf->sse;
    uc.kms_key_id = conf->sse_key;
    uc.checksum = conf->checksum;
    uc.no_clobber = (wr->flags & (SFT_STORAGE_WRITE_EXCL
                                  |SFT_STORAGE_WRITE_NOREPLACE)) != 0;
    uc.append_size = append_size;
    uc.copy_part_size = (off_t) conf->copy_threshold;
    uc.append_crc32c_known = append_size && wr->crc32c_known;
    uc.append_crc32c = wr->crc32c;
    uc.on_write = sft_s3_wrote;
    uc.on_done = sft_s3_committed;
    uc.data = wr;

    if (sft_s3_upload_open(&uc, log, &wr->up) != SFT_OK) {
        if (wr->up) {
            sft_s3_upload_abort(wr->up);
            wr->up = NULL;
        }

        return SFT_STORAGE_IO;
    }

    return SFT_STORAGE_OK;
}


/*
 * The first write to an object opened in place: at its end, a resume
 * that keeps its bytes; at 0, a new object; elsewhere nothing S3 can do.
 */

static sft_storage_err_t
sft_s3_writer_decide(sft_s3_writer_t *wr, off_t offset, sft_log_t *log)
{
    if (offset == wr->size || offset == 0) {
        return sft_s3_writer_upload(wr, log, offset ? wr->size : 0);
    }

    sft_log_error(SFT_LOG_INFO, log, 0,
                  "S3 storage \"%.*s\": \"%.*s\" is written at 0 (a new "
                  "object) or at its end (%lld) only, not at %lld",
                  SFT_STR_FMT(&wr->conf->storage->name),
                  SFT_STR_FMT(&wr->key), (long long) wr->size,
                  (long long) offset);

    return SFT_STORAGE_UNSUPPORTED;
}


sft_int_t
sft_s3_write(sft_storage_req_t *req)
{
    sft_int_t         rc;
    sft_s3_wreq_t    *q;
    sft_s3_writer_t  *wr;

    wr = req->file->data;
    req->nbytes = 0;

    if (req->len == 0) {
        return SFT_OK;
    }

    if (wr->up == NULL) {
        req->err = sft_s3_writer_decide(wr, req->offset, req->log);

        if (req->err != SFT_STORAGE_OK) {
            return SFT_ERROR;
        }
    }

    q = sft_alloc(sizeof(sft_s3_wreq_t), req->log);
    if (q == NULL) {
        req->err = SFT_STORAGE_IO;
        return SFT_ERROR;
    }

    q->w.offset = req->offset;
    q->w.buf = req->buf;
    q->w.len = req->len;
    q->w.data = q;
    q->req = req;

    rc = sft_s3_upload_write(wr->up, &q->w);

    if (rc == SFT_AGAIN) {
        q->next = wr->waiting;
        q->prev = &wr->waiting;
        if (wr->waiting) {
            wr->waiting->prev = &q->next;
        }
        wr->waiting = q;
        return SFT_AGAIN;
    }

    sft_free(q);

    if (rc == SFT_OK) {
        req->nbytes = req->len;
        return SFT_OK;
    }

    req->err = sft_s3_upload_error(wr->up);

    if (rc == SFT_DECLINED) {
        sft_log_error(SFT_LOG_INFO, req->log, 0,
                      "S3 upload of \"%s\": a write at %lld is %s",
                      req->file->name, (long long) req->offset,
                      wr->up->err == SFT_S3_UPLOAD_BEHIND
                      ? "behind what was sent" : "past the write window");
    }

    return SFT_ERROR;
}


/*
 * Room for a write (sft_storage_room()): the upload's answer.  The first
 * write of an object opened in place decides here what the upload is, as
 * the write itself would; one that cannot be is len, refused by it.
 */

size_t
sft_s3_room(sft_storage_file_t *file, off_t offset, size_t len,
    sft_event_t *wake)
{
    sft_s3_writer_t  *wr;

    wr = file->data;

    if (wr == NULL) {
        return len;
    }

    if (wr->up == NULL) {
        if (wake == NULL || len == 0 || (offset != 0 && offset != wr->size)
            || sft_s3_writer_decide(wr, offset, wr->conf->log)
               != SFT_STORAGE_OK)
        {
            return len;
        }
    }

    return sft_s3_upload_room(wr->up, offset, len, wake);
}


/*
 * FSETATTR of an upload: its time goes with the object; a mode is taken
 * and left (s3_ignore_chmod; the vfs asked for modes only then).
 */

sft_int_t
sft_s3_fsetattr(sft_storage_req_t *req)
{
    sft_s3_writer_t  *wr;

    wr = req->file->data;

    if (!req->file->write || wr == NULL || wr->up == NULL) {
        req->err = SFT_STORAGE_UNSUPPORTED;
        return SFT_ERROR;
    }

    if ((req->flags & SFT_STORAGE_SET_MTIME) && req->mtime > 0) {
        sft_s3_upload_mtime(wr->up, req->mtime);
    }

    return SFT_OK;
}


/* a write that waited was placed, or failed: it completes on the event */

static void
sft_s3_wrote(sft_s3_write_t *w, sft_int_t rc)
{
    sft_s3_wreq_t    *q = w->data;
    sft_s3_writer_t  *wr;

    wr = q->req->file->data;

    *q->prev = q->next;
    if (q->next) {
        q->next->prev = q->prev;
    }

    q->req->err = rc == SFT_OK ? SFT_STORAGE_OK : sft_s3_upload_error(wr->up);
    q->req->nbytes = rc == SFT_OK ? (ssize_t) q->req->len : 0;

    q->next = NULL;
    *wr->done_tail = q;
    wr->done_tail = &q->next;

    sft_post_event(&wr->ev);
}


static void
sft_s3_committed(sft_s3_uploader_t *up, sft_int_t rc)
{
    sft_s3_writer_t  *wr = up->conf.data;

    sft_s3_memo_changed(wr->conf, &wr->key);

    if (wr->close == NULL) {
        return;
    }

    wr->close->err = rc == SFT_OK ? SFT_STORAGE_OK : sft_s3_upload_error(up);

    if (rc == SFT_OK) {
        wr->close->file->size = up->size;
    }

    wr->closed = 1;

    sft_post_event(&wr->ev);
}


/*
 * The commit with commit set, else the abort: nothing of it is left.  An
 * abort ends the writes still waiting in an error before the close.
 */

sft_int_t
sft_s3_close_write(sft_storage_req_t *req)
{
    sft_int_t         rc;
    sft_s3_wreq_t    *q;
    sft_s3_writer_t  *wr;

    wr = req->file->data;

    if (wr == NULL) {
        return SFT_OK;
    }

    wr->close = req;

    if (wr->up) {
        (void) sft_s3_upload_room(wr->up, 0, 0, NULL);
    }

    if (wr->up == NULL) {
        req->file->data = NULL;             /* no write: the object stays */
        sft_s3_writer_free(wr);
        return SFT_OK;
    }

    if (req->commit && wr->waiting == NULL) {
        rc = sft_s3_upload_commit(wr->up);

        if (rc == SFT_OK) {
            return SFT_AGAIN;
        }

        req->err = rc == SFT_DECLINED ? SFT_STORAGE_INVALID
                                      : sft_s3_upload_error(wr->up);

    } else if (req->commit) {
        req->err = SFT_STORAGE_BUSY;
    }

    sft_s3_upload_abort(wr->up);
    wr->up = NULL;

    while ((q = wr->waiting) != NULL) {
        wr->waiting = q->next;
        q->req->err = SFT_STORAGE_IO;
        q->next = NULL;
        *wr->done_tail = q;
        wr->done_tail = &q->next;
    }

    req->file->data = NULL;

    if (wr->done == NULL) {

        /*
         * Over now.  Called from a write's completion (its handler let
         * the file go: a session ending closes with a request of its
         * own that does not outlive the call), the writer is still in
         * sft_s3_write_event(), which frees it when it returns.
         */

        if (wr->completing) {
            wr->close = NULL;
            wr->closed = 1;

        } else {
            sft_s3_writer_free(wr);
        }

        return req->err == SFT_STORAGE_OK ? SFT_OK : SFT_ERROR;
    }

    /* the writes that ended complete first, then this close */

    wr->closed = 1;
    sft_post_event(&wr->ev);

    return SFT_AGAIN;
}


/* writes that waited complete in order, then a close that is over */

static void
sft_s3_write_event(sft_event_t *ev)
{
    sft_s3_wreq_t      *q;
    sft_storage_req_t  *req;
    sft_s3_writer_t    *wr = ev->data;

    wr->completing = 1;

    while ((q = wr->done) != NULL) {
        wr->done = q->next;
        if (wr->done == NULL) {
            wr->done_tail = &wr->done;
        }

        req = q->req;
        sft_free(q);

        sft_storage_complete(req);
    }

    wr->completing = 0;

    if (!wr->closed) {
        return;
    }

    req = wr->close;

    sft_s3_writer_free(wr);

    if (req) {
        req->file->data = NULL;
        sft_storage_complete(req);
    }
}


static void
sft_s3_writer_free(sft_s3_writer_t *wr)
{
    if (wr->up) {
        sft_s3_upload_abort(wr->up);      /* committed: only freed */
    }

    if (wr->ev.posted) {
        sft_delete_posted_event(&wr->ev);
    }

    sft_free(wr);
}


/* why the upload refused, in the storage's words */

static sft_storage_err_t
sft_s3_upload_error(sft_s3_uploader_t *up)
{
    switch (up->err) {

    case SFT_S3_UPLOAD_BEHIND:
    case SFT_S3_UPLOAD_BEYOND:
        return SFT_STORAGE_UNSUPPORTED;

    case SFT_S3_UPLOAD_EXISTS:
        return SFT_STORAGE_EXISTS;

    case SFT_S3_UPLOAD_HOLE:
        return SFT_STORAGE_INVALID;

    default:
        return SFT_STORAGE_IO;
    }
}
