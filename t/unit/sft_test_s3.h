/*
 * sft_test_s3.h -- S3 requests in a test program: a client of BUCKET, a
 * request made on it, started, and waited for on the loop of
 * sft_test_loop.h.
 */

#ifndef _SFT_TEST_S3_H_INCLUDED_
#define _SFT_TEST_S3_H_INCLUDED_


static sft_uint_t      done_n;
static sft_s3_creds_t  creds;           /* moto takes any */


/* a path-style client of moto or a stand-in, BUCKET, retries after 20 ms */

static void
client(sft_s3_client_t *cl, const char *endpoint, sft_msec_t timeout,
    sft_uint_t retries)
{
    sft_memzero(cl, sizeof(sft_s3_client_t));
    cl->endpoint.data = (u_char *) endpoint;
    cl->endpoint.len = strlen(endpoint);
    sft_str_set(&cl->bucket, BUCKET);
    sft_str_set(&cl->region, "us-east-1");
    cl->path_style = 1;
    cl->timeout = timeout;
    cl->connect_timeout = 2000;
    cl->retries = retries;
    cl->backoff = 20;
    cl->creds = &creds;
    cl->log = cycle.log;

    sft_str_set(&creds.access_key, "testing");
    sft_str_set(&creds.secret_key, "testing");
}


static void
on_done(sft_s3_request_t *r)
{
    (void) r;
    done_n++;
}


/* the loop until n more requests are done, at most 60 s */

static sft_uint_t
wait_done(sft_uint_t n)
{
    return spin(60000, &done_n, done_n + n);
}


static sft_s3_request_t *
request(sft_s3_client_t *cl, const char *method, const char *key)
{
    sft_s3_request_t  *r;

    r = sft_s3_request_create(cl);

    r->method.data = (u_char *) method;
    r->method.len = strlen(method);
    r->key.data = (u_char *) key;
    r->key.len = strlen(key);
    r->idempotent = strcmp(method, "POST") != 0;
    r->on_done = on_done;

    return r;
}


/* start one request and wait for it */

static sft_s3_request_t *
run(sft_s3_request_t *r)
{
    if (sft_s3_request_start(r) != SFT_OK || !wait_done(1)) {
        r->rc = SFT_ERROR;
    }

    return r;
}


#endif /* _SFT_TEST_S3_H_INCLUDED_ */
