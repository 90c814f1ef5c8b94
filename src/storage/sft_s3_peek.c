/*
 * sft_s3_peek.c -- a stat of a name by the first bytes of its object: a
 * GET of its first s3_stat_peek bytes in place of a HEAD.  Its 206 says
 * what a HEAD would (the size in its Content-Range, the mtime, the ETag),
 * and where the object is no larger than the range its bytes come too:
 * kept with the memo, they serve the open for reading that follows (an
 * SFTP get's stat then open, an FTP RETR), which then asks S3 nothing.
 * The bytes are kept only from an answer that names its request: the GET
 * asks S3 to send Content-Disposition as a tag of this GET alone
 * (response-content-disposition, which AWS S3, Ceph RGW and MinIO
 * honour), so an answer made for another request, another key's, is
 * never taken for this one's bytes; where the server does not send it
 * back, the answer is a stat alone and the open's GETs name its ETag, as
 * after a HEAD.  Their CRC-32C, computed here, must be the one S3 sent
 * where it sent one.  An empty object (416), an object S3 keeps but will
 * not serve (403: archived), any other refusal, an answer that ignored
 * the range (200) or is not of the range asked are asked again by HEAD.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>
#include <sft_asm.h>


static sft_int_t sft_s3_peek_answer(sft_s3_op_t *op);


/* the first bytes of op's key asked for, handler when they come */

sft_int_t
sft_s3_peek(sft_s3_op_t *op, sft_s3_op_pt handler)
{
    u_char                 *p, *tag;
    sft_s3_pair_t          *h, *q;
    sft_s3_request_t       *r;
    sft_s3_storage_conf_t  *conf = op->conf;

    if (sft_s3_op_request(op, "GET", &op->key, handler) != SFT_OK) {
        return SFT_ERROR;
    }

    r = op->r;

    h = sft_pcalloc(r->pool, 2 * sizeof(sft_s3_pair_t));
    q = sft_pcalloc(r->pool, sizeof(sft_s3_pair_t));
    p = sft_pnalloc(r->pool, 64);
    tag = sft_pnalloc(r->pool, 64);
    if (h == NULL || q == NULL || p == NULL || tag == NULL) {
        return SFT_ERROR;
    }

    sft_str_set(&h[0].name, "Range");
    h[0].value.data = p;
    h[0].value.len = snprintf((char *) p, 64, "bytes=0-%lu",
                              (unsigned long) conf->peek - 1);

    sft_str_set(&h[1].name, "x-amz-checksum-mode");
    sft_str_set(&h[1].value, "ENABLED");

    sft_str_set(&q->name, "response-content-disposition");
    q->value.data = tag;
    q->value.len = snprintf((char *) tag, 64, "siftp-%016llx-%lu",
                            (unsigned long long)
                                sft_s3_key_hash(op->key.data, op->key.len),
                            (unsigned long) ++conf->peeks);

    r->headers = h;
    r->nheaders = 2;
    r->query = q;
    r->nquery = 1;
    r->max_response = sft_max(conf->peek, 4096);    /* an error's too */

    return sft_s3_request_start(r);
}


/*
 * What the peek answered, where it goes: file(op) for a file, req->st set
 * and op->memo what an open needs (its ETag, its CRC-32C where known, its
 * bytes where they came whole); none(op) for no object (404); a HEAD of
 * the key with handler head where the peek does not say; else the
 * operation fails as GetObject's.
 */

void
sft_s3_peek_answered(sft_s3_op_t *op, sft_s3_op_pt file, sft_s3_op_pt none,
    sft_s3_op_pt head)
{
    switch (sft_s3_peek_answer(op)) {

    case SFT_OK:
        file(op);
        return;

    case SFT_DONE:
        none(op);
        return;

    case SFT_DECLINED:
        if (sft_s3_op_head(op, &op->key, head) != SFT_OK) {
            sft_s3_op_finish(op, SFT_STORAGE_IO);
        }

        return;

    default:
        sft_s3_op_fail(op, "GetObject");
    }
}


/*
 * SFT_OK, a file: req->st set, op->memo filled (its bytes from the answer
 * to this request alone), the memo told; SFT_DONE: no such object;
 * SFT_DECLINED: an answer to ask again by HEAD; SFT_ERROR: a failure.
 */

static sft_int_t
sft_s3_peek_answer(sft_s3_op_t *op)
{
    off_t               total, last;
    uint32_t            crc;
    sft_str_t          *tag;
    sft_s3_memo_t      *m;
    sft_s3_request_t   *r;

    r = op->r;

    if (r->rc != SFT_OK) {
        return r->too_long ? SFT_DECLINED : SFT_ERROR;
    }

    if (r->status == 404) {
        return SFT_DONE;
    }

    /* 416: an empty object; 403: one S3 keeps but does not serve (in an
       archive class, or under a key the GET may not use), whose HEAD
       answers; any other refusal of the GET: the HEAD says */

    if (r->status == 200 || (r->status >= 400 && r->status < 500)) {
        return SFT_DECLINED;
    }

    if (r->status != 206) {
        return SFT_ERROR;
    }

    total = r->range_total;
    last = sft_min(total, (off_t) op->conf->peek) - 1;

    if (!r->range_known || total <= 0
        || !sft_s3_request_range_is(r, 0, last, total)
        || (off_t) r->response.len != last + 1
        || r->etag.len == 0 || r->etag.len > SFT_S3_MEMO_ETAG)
    {
        return SFT_DECLINED;
    }

    sft_s3_stat_file(op->conf, &op->key, total,
                     r->meta_mtime ? r->meta_mtime : r->last_modified,
                     &op->req->st);

    op->found = SFT_S3_FOUND_FILE;
    op->memo_used = 1;
    op->memo.found = SFT_S3_FOUND_FILE;
    op->memo.st = op->req->st;
    sft_memcpy(op->memo.etag, r->etag.data, r->etag.len);
    op->memo.etag_len = r->etag.len;
    op->memo.crc32c_known = sft_s3_request_crc32c(r, &op->memo.crc32c)
                            == SFT_OK;

    m = sft_s3_memo_put(op, SFT_S3_FOUND_FILE, r);

    tag = &r->query[0].value;

    if (last + 1 != total || r->disposition.len != tag->len
        || sft_memcmp(r->disposition.data, tag->data, tag->len) != 0)
    {
        return SFT_OK;                  /* a stat alone */
    }

    crc = sft_crc32c(0, r->response.data, r->response.len);

    if (op->memo.crc32c_known && op->memo.crc32c != crc) {
        sft_log_error(SFT_LOG_WARN, op->req->log, 0,
                      "S3 storage \"%.*s\": GetObject of \"%.*s\" answered "
                      "bytes whose CRC-32C is not the object's",
                      SFT_STR_FMT(&op->conf->storage->name),
                      SFT_STR_FMT(&op->key));
        op->memo.crc32c_known = 0;

        if (m) {
            m->crc32c_known = 0;
        }

        return SFT_OK;
    }

    op->memo.body = sft_alloc(r->response.len, op->conf->log);
    if (op->memo.body) {
        sft_memcpy(op->memo.body, r->response.data, r->response.len);
    }

    op->memo.crc32c = crc;
    op->memo.crc32c_known = 1;

    if (m) {
        sft_s3_memo_body(op->conf, m, r->response.data, crc);
    }

    return SFT_OK;
}
