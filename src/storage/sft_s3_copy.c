/*
 * sft_s3_copy.c -- server-side copies, of a key to another or of an
 * object onto itself with a new time: a CopyObject (its 200 may still
 * carry an <Error>), or, above the threshold, an upload object that
 * begins with the source's bytes copied in ranges and is committed with
 * nothing written (sft_s3_upload.c does the multipart upload, its
 * UploadPartCopy requests, its completion and its abort).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_copy.h>


static u_char *sft_s3_copy_keep(u_char *p, sft_str_t *s);
static sft_int_t sft_s3_copy_object(sft_s3_copy_t *c);
static void sft_s3_copy_object_done(sft_s3_request_t *r);
static sft_int_t sft_s3_copy_multipart(sft_s3_copy_t *c);
static void sft_s3_copy_multipart_done(sft_s3_uploader_t *up, sft_int_t rc);


sft_int_t
sft_s3_copy_start(sft_s3_copy_conf_t *conf, sft_log_t *log,
    sft_s3_copy_t **out)
{
    u_char         *p;
    sft_int_t       rc;
    sft_s3_copy_t  *c;

    *out = NULL;

    if (conf->size < 0 || conf->size > SFT_S3_OBJECT_MAX
        || conf->source.len == 0 || conf->object.key.len == 0)
    {
        return SFT_ERROR;
    }

    c = sft_alloc(sizeof(sft_s3_copy_t) + conf->source.len
                  + conf->object.key.len + conf->etag.len
                  + conf->object.content_type.len, log);
    if (c == NULL) {
        return SFT_ERROR;
    }

    sft_memzero(c, sizeof(sft_s3_copy_t));
    c->conf = *conf;
    c->log = log;

    /* the strings live as long as the copy */

    p = sft_s3_copy_keep((u_char *) (c + 1), &c->conf.source);
    p = sft_s3_copy_keep(p, &c->conf.object.key);
    p = sft_s3_copy_keep(p, &c->conf.etag);
    (void) sft_s3_copy_keep(p, &c->conf.object.content_type);

    if (c->conf.threshold <= 0 || c->conf.threshold > SFT_S3_PART_MAX) {
        c->conf.threshold = SFT_S3_PART_MAX;
    }

    rc = c->conf.size > c->conf.threshold ? sft_s3_copy_multipart(c)
                                          : sft_s3_copy_object(c);

    if (rc != SFT_OK) {
        sft_s3_copy_cancel(c);
        return SFT_ERROR;
    }

    *out = c;

    return SFT_OK;
}


/* s, the caller's, copied to p: the end of it */

static u_char *
sft_s3_copy_keep(u_char *p, sft_str_t *s)
{
    if (s->len == 0) {
        s->data = NULL;
        return p;
    }

    sft_memcpy(p, s->data, s->len);
    s->data = p;

    return p + s->len;
}


void
sft_s3_copy_cancel(sft_s3_copy_t *c)
{
    if (c->r) {
        sft_s3_request_free(c->r);
    }

    if (c->up) {
        sft_s3_upload_abort(c->up);
    }

    sft_free(c);
}


/* PUT of the new key with x-amz-copy-source: one request */

static sft_int_t
sft_s3_copy_object(sft_s3_copy_t *c)
{
    sft_str_t          v, *key;
    sft_s3_request_t  *r;

    r = sft_s3_request_create(c->conf.object.client);
    if (r == NULL) {
        return SFT_ERROR;
    }

    c->r = r;
    key = &c->conf.object.key;

    sft_str_set(&r->method, "PUT");
    r->key.len = key->len;
    r->key.data = sft_pstrdup(r->pool, key);
    r->headers = sft_pcalloc(r->pool,
                            SFT_S3_OBJECT_HEADERS * sizeof(sft_s3_pair_t));
    r->idempotent = 1;
    r->on_done = sft_s3_copy_object_done;
    r->data = c;

    if (r->key.data == NULL || r->headers == NULL) {
        return SFT_ERROR;
    }

    /* a new time: new metadata; else the source's kept */

    if (c->conf.object.mtime > 0) {
        if (sft_s3_object_restamp(&c->conf.object, r, &c->conf.source,
                                  c->conf.crc32c_known ? &c->conf.crc32c
                                                       : NULL,
                                  &c->conf.etag)
            != SFT_OK)
        {
            return SFT_ERROR;
        }

    } else if (sft_s3_copy_source(r, &c->conf.source, &v) != SFT_OK
               || sft_s3_object_header(r, "x-amz-copy-source", &v) != SFT_OK
               || (c->conf.etag.len
                   && sft_s3_object_header(r, "x-amz-copy-source-if-match",
                                           &c->conf.etag)
                      != SFT_OK)
               || sft_s3_object_headers(&c->conf.object, r, NULL) != SFT_OK)
    {
        return SFT_ERROR;
    }

    return sft_s3_request_start(r);
}


static void
sft_s3_copy_object_done(sft_s3_request_t *r)
{
    sft_int_t        rc;
    sft_str_t        code;
    sft_s3_copy_t   *c = r->data;
    sft_s3_error_t   err;
    sft_s3_result_t  res;

    rc = SFT_ERROR;
    sft_memzero(&err, sizeof(sft_s3_error_t));

    if (r->rc == SFT_OK && r->status == 200) {
        rc = sft_s3_xml_result(r->response.data, r->response.len, r->pool,
                               &res, &err);
        code = err.code;

    } else if (r->rc == SFT_OK && r->status == 412 && c->conf.etag.len) {
        rc = SFT_DECLINED;          /* the source was replaced meanwhile */

    } else {
        code = r->error.code;
    }

    if (rc == SFT_ERROR) {
        if (code.len == 0) {
            sft_str_set(&code, "-");
        }

        sft_log_error(SFT_LOG_ERR, c->log, 0,
                      "S3 CopyObject of \"%.*s\" to \"%.*s\" failed: "
                      "status %ld, %.*s", SFT_STR_FMT(&c->conf.source),
                      SFT_STR_FMT(&r->key), r->status, SFT_STR_FMT(&code));
    }

    c->r = NULL;
    sft_s3_request_free(r);

    c->conf.on_done(c, rc);
    sft_free(c);
}


/*
 * An upload that begins with all the source's bytes, committed at once:
 * parts of the threshold's size, larger where 10,000 would not hold it
 */

static sft_int_t
sft_s3_copy_multipart(sft_s3_copy_t *c)
{
    sft_s3_upload_conf_t  uc;

    uc = c->conf.object;
    uc.append_size = c->conf.size;
    uc.mtime = uc.mtime ? uc.mtime : c->conf.source_mtime;
    uc.append_crc32c_known = 0;
    uc.copy_source = c->conf.source;
    uc.copy_source_etag = c->conf.etag;
    uc.copy_part_size = sft_max(c->conf.threshold,
                                (c->conf.size + SFT_S3_PARTS_MAX - 1)
                                / SFT_S3_PARTS_MAX);
    uc.checksum = SFT_S3_CHECKSUM_OFF;     /* copied parts carry none */
    uc.no_clobber = 0;
    uc.on_write = NULL;
    uc.on_done = sft_s3_copy_multipart_done;
    uc.data = c;

    if (sft_s3_upload_open(&uc, c->log, &c->up) != SFT_OK) {
        return SFT_ERROR;
    }

    return sft_s3_upload_commit(c->up);
}


static void
sft_s3_copy_multipart_done(sft_s3_uploader_t *up, sft_int_t rc)
{
    sft_s3_copy_t  *c = up->conf.data;

    c->up = NULL;
    sft_s3_upload_abort(up);            /* freed once its callback ends */

    c->conf.on_done(c, rc);
    sft_free(c);
}
