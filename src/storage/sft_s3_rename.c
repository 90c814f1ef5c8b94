/*
 * sft_s3_rename.c -- RENAME of a file in the s3 driver: S3 has no rename,
 * so the object is copied under the new key by S3 (CopyObject, up to
 * 5 GiB: a larger one is refused) and the old key deleted.  A HEAD of
 * the new key first tells the size a replace frees and refuses it when
 * the protocol asked not to replace.  Directories are not renamed.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>


static void sft_s3_rename_probed(sft_s3_op_t *op);
static void sft_s3_rename_headed(sft_s3_op_t *op);
static void sft_s3_rename_copied(sft_s3_op_t *op);


sft_int_t
sft_s3_rename(sft_storage_req_t *req)
{
    size_t        len;
    sft_s3_op_t  *op;

    op = sft_s3_op_below(req, SFT_STORAGE_PERMISSION);
    if (op == NULL) {
        return SFT_ERROR;
    }

    len = sft_strlen(req->path2);

    if (op->conf->prefix.len + len > SFT_S3_KEY_MAX) {
        sft_s3_op_free(op);
        req->err = SFT_STORAGE_NAME_INVALID;
        return SFT_ERROR;
    }

    op->key2.data = op->key2buf;
    op->key2.len = sft_cpymem(sft_cpymem(op->key2buf, op->conf->prefix.data,
                                         op->conf->prefix.len),
                              req->path2, len)
                   - op->key2buf;

    return sft_s3_op_again(op, sft_s3_probe(op, sft_s3_rename_probed));
}


static void
sft_s3_rename_probed(sft_s3_op_t *op)
{
    sft_storage_req_t  *req;

    req = op->req;

    if (op->found == SFT_S3_FOUND_NONE) {
        sft_s3_op_finish(op, SFT_STORAGE_NOT_FOUND);
        return;
    }

    if (op->found == SFT_S3_FOUND_DIR || req->st.size > SFT_S3_PART_MAX) {
        sft_log_error(SFT_LOG_INFO, req->log, 0,
                      "S3 storage \"%.*s\": \"%.*s\" is not renamed: %s",
                      SFT_STR_FMT(&op->conf->storage->name),
                      SFT_STR_FMT(&op->key),
                      op->found == SFT_S3_FOUND_DIR
                      ? "renaming a directory is not supported"
                      : "an object over 5 GiB cannot be copied at once");
        sft_s3_op_finish(op, SFT_STORAGE_UNSUPPORTED);
        return;
    }

    if (sft_s3_op_request(op, "HEAD", &op->key2, sft_s3_rename_headed)
        != SFT_OK
        || sft_s3_request_start(op->r) != SFT_OK)
    {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
    }
}


/* the new name: free, or an object a replace frees (st for the quota) */

static void
sft_s3_rename_headed(sft_s3_op_t *op)
{
    sft_str_t           src;
    sft_s3_pair_t      *h;
    sft_s3_request_t   *r;
    sft_storage_req_t  *req;

    r = op->r;
    req = op->req;

    sft_memzero(&req->st, sizeof(sft_storage_stat_t));

    if (r->rc == SFT_OK && r->status == 200) {
        if (req->flags & SFT_STORAGE_WRITE_NOREPLACE) {
            sft_s3_op_finish(op, SFT_STORAGE_EXISTS);
            return;
        }

        sft_s3_stat_head(op->conf, &op->key2, r, &req->st);

    } else if (r->rc != SFT_OK || r->status != 404) {
        sft_s3_op_fail(op, "HeadObject");
        return;
    }

    if (sft_s3_op_request(op, "PUT", &op->key2, sft_s3_rename_copied)
        != SFT_OK)
    {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
        return;
    }

    r = op->r;
    h = sft_pcalloc(r->pool, sizeof(sft_s3_pair_t));

    if (h == NULL || sft_s3_copy_source(r, &op->key, &src) != SFT_OK) {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
        return;
    }

    sft_str_set(&h->name, "x-amz-copy-source");
    h->value = src;
    r->headers = h;
    r->nheaders = 1;

    if (sft_s3_request_start(r) != SFT_OK) {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
    }
}


/* a CopyObject's 200 may carry an <Error> that came late */

static void
sft_s3_rename_copied(sft_s3_op_t *op)
{
    sft_s3_error_t     err;
    sft_s3_result_t    res;
    sft_s3_request_t  *r;

    r = op->r;

    if (r->rc != SFT_OK || r->status != 200
        || sft_s3_xml_result(r->response.data, r->response.len, r->pool,
                             &res, &err)
           != SFT_OK)
    {
        sft_s3_op_fail(op, "CopyObject");
        return;
    }

    sft_s3_op_send(op, "DELETE");
}
