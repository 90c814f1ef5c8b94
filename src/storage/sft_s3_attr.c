/*
 * sft_s3_attr.c -- the times and modes of the s3 driver's names.  S3
 * keeps nothing but an object's metadata, which only a copy changes:
 * SETMTIME copies the object onto itself with a new x-amz-meta-mtime
 * (sft_s3_copy.c: its content type, storage class and encryption kept,
 * and only while it is the object the HEAD saw; one CopyObject that
 * keeps its stored CRC-32C up to s3_copy_threshold, a multipart copy
 * above); directories, prefixes, have no time.  CHMOD, offered only
 * with s3_ignore_chmod on, looks the name up and changes nothing.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>
#include <sft_s3_copy.h>


static void sft_s3_setmtime_probed(sft_s3_op_t *op);
static void sft_s3_setmtime_copied(sft_s3_copy_t *c, sft_int_t rc);
static void sft_s3_setmtime_cleanup(sft_s3_op_t *op);
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
    sft_s3_copy_t          *c;
    sft_s3_request_t       *head;
    sft_storage_req_t      *req;
    sft_s3_copy_conf_t      cc;
    sft_s3_storage_conf_t  *conf;

    req = op->req;
    conf = op->conf;

    if (op->found == SFT_S3_FOUND_NONE) {
        sft_s3_op_finish(op, SFT_STORAGE_NOT_FOUND);
        return;
    }

    if (op->found == SFT_S3_FOUND_DIR) {
        sft_log_error(SFT_LOG_INFO, req->log, 0,
                      "S3 storage \"%.*s\": the time of \"%.*s\" is not "
                      "set: a directory has no time",
                      SFT_STR_FMT(&conf->storage->name),
                      SFT_STR_FMT(&op->key));
        sft_s3_op_finish(op, SFT_STORAGE_UNSUPPORTED);
        return;
    }

    /* the object copied onto itself, while it is the one the HEAD saw */

    head = op->r;

    sft_memzero(&cc, sizeof(sft_s3_copy_conf_t));
    cc.object.client = &conf->client;
    cc.object.key = op->key;
    cc.object.parts_in_flight = sft_min(conf->parts_in_flight,
                                        SFT_S3_IN_FLIGHT_MAX);
    cc.object.storage_class = conf->storage_class;
    cc.object.sse = conf->sse;
    cc.object.kms_key_id = conf->sse_key;
    cc.object.checksum = conf->checksum;
    cc.object.mtime = req->mtime;
    cc.object.content_type = head->content_type;
    cc.source = op->key;
    cc.size = req->st.size;
    cc.etag = head->etag;
    cc.crc32c_known = sft_s3_request_crc32c(head, &cc.crc32c) == SFT_OK;
    cc.threshold = (off_t) conf->copy_threshold;
    cc.on_done = sft_s3_setmtime_copied;
    cc.data = op;

    if (sft_s3_copy_start(&cc, req->log, &c) != SFT_OK) {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
        return;
    }

    /* the copy took what it needs of the HEAD's answer */

    sft_s3_request_free(head);
    op->r = NULL;
    op->data = c;
    op->cleanup = sft_s3_setmtime_cleanup;
}


/* SFT_DECLINED: the object was replaced since the HEAD */

static void
sft_s3_setmtime_copied(sft_s3_copy_t *c, sft_int_t rc)
{
    sft_s3_op_t  *op = c->conf.data;

    op->data = NULL;
    op->cleanup = NULL;

    sft_s3_op_finish(op, rc == SFT_OK ? SFT_STORAGE_OK
                         : rc == SFT_DECLINED ? SFT_STORAGE_BUSY
                         : SFT_STORAGE_IO);
}


/* the op freed before the copy ended: the copy stops */

static void
sft_s3_setmtime_cleanup(sft_s3_op_t *op)
{
    sft_s3_copy_cancel(op->data);

    op->data = NULL;
    op->cleanup = NULL;
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
