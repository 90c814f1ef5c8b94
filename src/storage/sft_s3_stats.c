/*
 * sft_s3_stats.c -- S3 requests counted by operation and result, once per
 * request when it ends (after its retries), and the retries themselves.
 * The operation is told from the method, the query and the headers the
 * way S3 tells them apart, so no caller has to name it.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_stats.h>


typedef enum {
    SFT_S3_OP_GET_OBJECT = 0,
    SFT_S3_OP_HEAD_OBJECT,
    SFT_S3_OP_HEAD_BUCKET,
    SFT_S3_OP_PUT_OBJECT,
    SFT_S3_OP_COPY_OBJECT,
    SFT_S3_OP_DELETE_OBJECT,
    SFT_S3_OP_DELETE_OBJECTS,
    SFT_S3_OP_LIST_OBJECTS,
    SFT_S3_OP_CREATE_MULTIPART,
    SFT_S3_OP_UPLOAD_PART,
    SFT_S3_OP_UPLOAD_PART_COPY,
    SFT_S3_OP_COMPLETE_MULTIPART,
    SFT_S3_OP_ABORT_MULTIPART,
    SFT_S3_OP_LIST_MULTIPART,
    SFT_S3_OP_CREATE_BUCKET,
    SFT_S3_OP_OTHER
} sft_s3_op_t;


typedef enum {
    SFT_S3_OUTCOME_OK = 0,
    SFT_S3_OUTCOME_CLIENT_ERROR,
    SFT_S3_OUTCOME_SERVER_ERROR,
    SFT_S3_OUTCOME_FAILED
} sft_s3_outcome_t;


static const char *const  sft_s3_ops[] = {
    "GetObject", "HeadObject", "HeadBucket", "PutObject", "CopyObject",
    "DeleteObject", "DeleteObjects", "ListObjectsV2",
    "CreateMultipartUpload", "UploadPart", "UploadPartCopy",
    "CompleteMultipartUpload", "AbortMultipartUpload",
    "ListMultipartUploads", "CreateBucket", "other", NULL
};

static const char *const  sft_s3_results[] = {
    "ok", "client_error", "server_error", "failed", NULL
};


static sft_uint_t  sft_s3_stat_requests;
static sft_uint_t  sft_s3_stat_retries;


static const sft_stat_def_t  sft_s3_stats[] = {
    { .name = "s3_requests_total", .json = "s3.requests.$1.$2",
      .help = "S3 requests by operation and result (ok: 2xx or 3xx, "
              "client_error: 4xx, server_error: 5xx, failed: no answer), "
              "counted once after their retries.",
      .label = { "operation", "result" },
      .values = { sft_s3_ops, sft_s3_results },
      .index = &sft_s3_stat_requests },
    { .name = "s3_retries_total", .json = "s3.retries",
      .help = "S3 requests sent again after a 429, a 5xx or no answer.",
      .index = &sft_s3_stat_retries },
};


static sft_uint_t sft_s3_stats_has(sft_s3_pair_t *pairs, sft_uint_t n,
    const char *name);


sft_int_t
sft_s3_stats_register(sft_cycle_t *cycle)
{
    return sft_stat_register(cycle, sft_s3_stats, sft_nelems(sft_s3_stats));
}


static sft_s3_op_t
sft_s3_stats_op(sft_s3_request_t *r)
{
    sft_uint_t  q, h;

    q = r->nquery;
    h = r->nheaders;

    switch (r->method.len ? r->method.data[0] : 0) {

    case 'G':
        if (sft_s3_stats_has(r->query, q, "list-type")) {
            return SFT_S3_OP_LIST_OBJECTS;
        }

        if (sft_s3_stats_has(r->query, q, "uploads")) {
            return SFT_S3_OP_LIST_MULTIPART;
        }

        return r->key.len ? SFT_S3_OP_GET_OBJECT : SFT_S3_OP_OTHER;

    case 'H':
        return r->key.len ? SFT_S3_OP_HEAD_OBJECT : SFT_S3_OP_HEAD_BUCKET;

    case 'P':
        if (r->method.len == 4) {                         /* POST */
            if (sft_s3_stats_has(r->query, q, "uploads")) {
                return SFT_S3_OP_CREATE_MULTIPART;
            }

            if (sft_s3_stats_has(r->query, q, "uploadId")) {
                return SFT_S3_OP_COMPLETE_MULTIPART;
            }

            return sft_s3_stats_has(r->query, q, "delete")
                   ? SFT_S3_OP_DELETE_OBJECTS : SFT_S3_OP_OTHER;
        }

        if (!r->key.len) {
            return SFT_S3_OP_CREATE_BUCKET;
        }

        if (sft_s3_stats_has(r->query, q, "partNumber")) {
            return sft_s3_stats_has(r->headers, h, "x-amz-copy-source")
                   ? SFT_S3_OP_UPLOAD_PART_COPY : SFT_S3_OP_UPLOAD_PART;
        }

        return sft_s3_stats_has(r->headers, h, "x-amz-copy-source")
               ? SFT_S3_OP_COPY_OBJECT : SFT_S3_OP_PUT_OBJECT;

    case 'D':
        return sft_s3_stats_has(r->query, q, "uploadId")
               ? SFT_S3_OP_ABORT_MULTIPART : SFT_S3_OP_DELETE_OBJECT;

    default:
        return SFT_S3_OP_OTHER;
    }
}


void
sft_s3_stats_count(sft_s3_request_t *r)
{
    sft_s3_outcome_t  result;

    if (r->rc != SFT_OK) {
        result = SFT_S3_OUTCOME_FAILED;

    } else if (r->status >= 500) {
        result = SFT_S3_OUTCOME_SERVER_ERROR;

    } else if (r->status >= 400) {
        result = SFT_S3_OUTCOME_CLIENT_ERROR;

    } else {
        result = SFT_S3_OUTCOME_OK;
    }

    sft_stat_add(sft_s3_stat_requests
                 + sft_s3_stats_op(r) * (sft_nelems(sft_s3_results) - 1)
                 + result, 1);
}


void
sft_s3_stats_retry(void)
{
    sft_stat_add(sft_s3_stat_retries, 1);
}


static sft_uint_t
sft_s3_stats_has(sft_s3_pair_t *pairs, sft_uint_t n, const char *name)
{
    size_t      len;
    sft_uint_t  i;

    len = sft_strlen(name);

    for (i = 0; i < n; i++) {
        if (pairs[i].name.len == len
            && strncasecmp((char *) pairs[i].name.data, name, len) == 0)
        {
            return 1;
        }
    }

    return 0;
}
