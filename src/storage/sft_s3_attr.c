/*
 * sft_s3_attr.c -- the times and modes of the s3 driver's names.  S3
 * keeps nothing but an object's metadata, which only a copy changes:
 * SETMTIME copies the object onto itself with a new x-amz-meta-mtime
 * (its content type, stored CRC-32C, storage class and encryption kept,
 * and only while it is the object the HEAD saw), up to the 5 GiB of one
 * CopyObject; directories, prefixes, have no time.  CHMOD, offered only
 * with s3_ignore_chmod on, looks the name up and changes nothing.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>


static void sft_s3_setmtime_probed(sft_s3_op_t *op);
static void sft_s3_setmtime_copied(sft_s3_op_t *op);
static void sft_s3_chmod_probed(sft_s3_op_t *op);


sft_int_t
sft_s3_setmtime(sft_storage_req_t *req)
{
    sft_s3_op_t  *op;

    op = sft_s3_op_below(req, SFT_STORAGE_UNSUPPORTED);
    if (op == NULL) {
        return SFT_ERROR;
    }

    return sft_s3_op_again(op, sft_s3_probe(op, sft_s3_setmtime_probed));
}


static void
sft_s3_setmtime_probed(sft_s3_op_t *op)
{
    uint32_t                crc;
    sft_uint_t              known;
    sft_s3_request_t       *head;
    sft_storage_req_t      *req;
    sft_s3_upload_conf_t    uc;
    sft_s3_storage_conf_t  *conf;

    req = op->req;
    conf = op->conf;

    if (op->found == SFT_S3_FOUND_NONE) {
        sft_s3_op_finish(op, SFT_STORAGE_NOT_FOUND);
        return;
    }

    if (op->found == SFT_S3_FOUND_DIR || req->st.size > SFT_S3_PART_MAX) {
        sft_log_error(SFT_LOG_INFO, req->log, 0,
                      "S3 storage \"%.*s\": the time of \"%.*s\" is not "
                      "set: %s", SFT_STR_FMT(&conf->storage->name),
                      SFT_STR_FMT(&op->key),
                      op->found == SFT_S3_FOUND_DIR
                      ? "a directory has no time"
                      : "an object over 5 GiB cannot be copied at once");
        sft_s3_op_finish(op, SFT_STORAGE_UNSUPPORTED);
        return;
    }

    /* the HEAD's answer stays until the copy took what it needs */

    head = op->r;
    op->r = NULL;
    known = sft_s3_request_crc32c(head, &crc) == SFT_OK;

    sft_memzero(&uc, sizeof(sft_s3_upload_conf_t));
    uc.storage_class = conf->storage_class;
    uc.sse = conf->sse;
    uc.kms_key_id = conf->sse_key;
    uc.checksum = conf->checksum;
    uc.mtime = req->mtime;

    if (sft_s3_op_request(op, "PUT", &op->key, sft_s3_setmtime_copied)
        != SFT_OK
        || (op->r->headers = sft_pcalloc(op->r->pool, SFT_S3_OBJECT_HEADERS
                                                     * sizeof(sft_s3_pair_t)))
           == NULL
        || sft_s3_object_restamp(&uc, op->r, known ? &crc : NULL,
                                 &head->etag, &head->content_type)
           != SFT_OK
        || sft_s3_request_start(op->r) != SFT_OK)
    {
        sft_s3_request_free(head);
        sft_s3_op_finish(op, SFT_STORAGE_IO);
        return;
    }

    sft_s3_request_free(head);
}


/* 412: the object was replaced since the HEAD; a 200 may carry an
   <Error> that came late */

static void
sft_s3_setmtime_copied(sft_s3_op_t *op)
{
    sft_s3_error_t     err;
    sft_s3_result_t    res;
    sft_s3_request_t  *r;

    r = op->r;

    if (r->rc == SFT_OK && r->status == 412) {
        sft_s3_op_finish(op, SFT_STORAGE_BUSY);
        return;
    }

    if (r->rc != SFT_OK || r->status != 200
        || sft_s3_xml_result(r->response.data, r->response.len, r->pool,
                             &res, &err)
           != SFT_OK)
    {
        sft_s3_op_fail(op, "CopyObject");
        return;
    }

    sft_s3_op_finish(op, SFT_STORAGE_OK);
}


/* s3_ignore_chmod on: a name that is there takes any mode, and keeps
   none */

sft_int_t
sft_s3_chmod(sft_storage_req_t *req)
{
    sft_s3_op_t  *op;

    op = sft_s3_op_create(req);
    if (op == NULL) {
        return SFT_ERROR;
    }

    if (op->key.len == op->conf->prefix.len) {
        sft_s3_op_free(op);
        return SFT_OK;
    }

    return sft_s3_op_again(op, sft_s3_probe(op, sft_s3_chmod_probed));
}


static void
sft_s3_chmod_probed(sft_s3_op_t *op)
{
    sft_s3_op_finish(op, op->found == SFT_S3_FOUND_NONE
                         ? SFT_STORAGE_NOT_FOUND : SFT_STORAGE_OK);
}
