/*
 * sft_s3_sweep.c -- the multipart uploads a worker or a crash left behind:
 * ListMultipartUploads under a prefix, page by page, and an
 * AbortMultipartUpload of each one initiated more than an age ago, one
 * request at a time on the loop.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_upload.h>


static void sft_s3_sweep_list(sft_s3_sweep_t *s);
static void sft_s3_sweep_listed(sft_s3_request_t *r);
static void sft_s3_sweep_next(sft_s3_sweep_t *s);
static void sft_s3_sweep_aborted(sft_s3_request_t *r);
static void sft_s3_sweep_end(sft_s3_sweep_t *s, sft_int_t rc);
static sft_s3_request_t *sft_s3_sweep_request(sft_s3_sweep_t *s,
    const char *method, sft_s3_handler_pt on_done, sft_uint_t nquery);
static void sft_s3_sweep_pair(sft_s3_request_t *r, const char *name,
    sft_str_t *value);


sft_int_t
sft_s3_sweep_start(sft_s3_sweep_t *s)
{
    if (s->age < 0 || s->pool) {
        return SFT_ERROR;
    }

    s->pool = sft_create_pool(4096, s->client->log);
    if (s->pool == NULL) {
        return SFT_ERROR;
    }

    s->aborted = 0;
    s->before = time(NULL) - s->age;
    sft_memzero(&s->page, sizeof(sft_s3_uploads_t));

    sft_s3_sweep_list(s);

    return SFT_OK;
}


void
sft_s3_sweep_cancel(sft_s3_sweep_t *s)
{
    if (s->r) {
        sft_s3_request_free(s->r);
        s->r = NULL;
    }

    if (s->pool) {
        sft_destroy_pool(s->pool);
        s->pool = NULL;
    }
}


/* GET /?uploads&prefix=P[&key-marker=K&upload-id-marker=U] */

static void
sft_s3_sweep_list(sft_s3_sweep_t *s)
{
    sft_s3_request_t  *r;
    static sft_str_t   empty = sft_null_string;

    r = sft_s3_sweep_request(s, "GET", sft_s3_sweep_listed, 5);
    if (r == NULL) {
        sft_s3_sweep_end(s, SFT_ERROR);
        return;
    }

    sft_s3_sweep_pair(r, "uploads", &empty);
    sft_s3_sweep_pair(r, "prefix", &s->prefix);
    sft_s3_sweep_pair(r, "encoding-type", NULL);

    if (s->page.truncated) {
        sft_s3_sweep_pair(r, "key-marker", &s->page.next_key_marker);
        sft_s3_sweep_pair(r, "upload-id-marker",
                          &s->page.next_upload_id_marker);
    }

    if (sft_s3_request_start(r) != SFT_OK) {
        sft_s3_sweep_end(s, SFT_ERROR);
    }
}


static void
sft_s3_sweep_listed(sft_s3_request_t *r)
{
    sft_s3_sweep_t  *s;
    sft_s3_error_t   err;

    s = r->data;

    if (r->rc != SFT_OK || r->status != 200
        || sft_s3_xml_uploads(r->response.data, r->response.len, s->pool,
                              &s->page, &err) != SFT_OK)
    {
        sft_log_error(SFT_LOG_ERR, s->client->log, 0,
                      "S3 sweep of \"%.*s\": ListMultipartUploads failed: "
                      "%ld", SFT_STR_FMT(&s->prefix), r->status);
        sft_s3_sweep_end(s, SFT_ERROR);
        return;
    }

    sft_s3_request_free(r);
    s->r = NULL;
    s->next = 0;

    sft_s3_sweep_next(s);
}


/* the next old upload of the page aborted, or the next page */

static void
sft_s3_sweep_next(sft_s3_sweep_t *s)
{
    sft_s3_upload_t   *up;
    sft_s3_request_t  *r;

    up = s->page.uploads.elts;

    while (s->next < s->page.uploads.nelts
           && up[s->next].initiated > s->before)
    {
        s->next++;
    }

    if (s->next == s->page.uploads.nelts) {
        if (s->page.truncated) {
            sft_s3_sweep_list(s);

        } else {
            sft_s3_sweep_end(s, SFT_OK);
        }

        return;
    }

    up = &up[s->next++];

    r = sft_s3_sweep_request(s, "DELETE", sft_s3_sweep_aborted, 1);
    if (r == NULL) {
        sft_s3_sweep_end(s, SFT_ERROR);
        return;
    }

    r->key = up->key;
    sft_s3_sweep_pair(r, "uploadId", &up->upload_id);

    if (sft_s3_request_start(r) != SFT_OK) {
        sft_s3_sweep_end(s, SFT_ERROR);
    }
}


static void
sft_s3_sweep_aborted(sft_s3_request_t *r)
{
    sft_s3_sweep_t  *s;

    s = r->data;

    if (r->rc != SFT_OK || (r->status != 204 && r->status != 404)) {
        sft_log_error(SFT_LOG_ERR, s->client->log, 0,
                      "S3 sweep: AbortMultipartUpload of \"%.*s\" failed: "
                      "%ld", SFT_STR_FMT(&r->key), r->status);
        sft_s3_sweep_end(s, SFT_ERROR);
        return;
    }

    sft_log_error(SFT_LOG_INFO, s->client->log, 0,
                  "S3 sweep: aborted the upload of \"%.*s\" left behind",
                  SFT_STR_FMT(&r->key));

    s->aborted++;

    sft_s3_request_free(r);
    s->r = NULL;

    sft_s3_sweep_next(s);
}


static void
sft_s3_sweep_end(sft_s3_sweep_t *s, sft_int_t rc)
{
    sft_s3_sweep_cancel(s);
    s->on_done(s, rc);
}


static sft_s3_request_t *
sft_s3_sweep_request(sft_s3_sweep_t *s, const char *method,
    sft_s3_handler_pt on_done, sft_uint_t nquery)
{
    sft_s3_request_t  *r;

    r = sft_s3_request_create(s->client);
    if (r == NULL) {
        return NULL;
    }

    s->r = r;

    r->query = sft_pcalloc(r->pool, nquery * sizeof(sft_s3_pair_t));
    if (r->query == NULL) {
        return NULL;
    }

    r->method.data = (u_char *) method;
    r->method.len = sft_strlen(method);
    sft_str_set(&r->key, "");                  /* the bucket */
    r->idempotent = 1;
    r->on_done = on_done;
    r->data = s;

    return r;
}


/* the value is the sweep's or the page's: both outlive the request */

static void
sft_s3_sweep_pair(sft_s3_request_t *r, const char *name, sft_str_t *value)
{
    sft_s3_pair_t  *q;

    q = &r->query[r->nquery++];
    q->name.data = (u_char *) name;
    q->name.len = sft_strlen(name);

    if (value) {
        q->value = *value;

    } else {
        sft_str_set(&q->value, "url");
    }
}
