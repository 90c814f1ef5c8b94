/*
 * test_s3_client.c -- the S3 client on a real epoll loop against moto
 * and two stand-ins that t/s3_client.t starts (S3_TEST_ENDPOINT,
 * S3_TEST_FLAKY): bucket, PUT, ranged GET, HEAD, errors, conditional
 * PUT, ListObjectsV2 paging, multipart upload streamed from paused
 * chunks with UploadPartCopy, abort, a GET paced by the reader, DELETE,
 * retries with their waits (doubled, capped, with jitter), a timeout and
 * a cancel.  Without those variables it skips.
 */

#include <sft_config.h>
#include <sft_core.h>
#include "sft_tap.h"
#include "sft_test_loop.h"

#include <sft_s3_client.h>
#include <sft_s3_imds.h>


#define BUCKET     "siftp-test"
#define KEYS       300
#define PAGE       50
#define PART_SIZE  (5 * 1024 * 1024)
#define CHUNK      (256 * 1024)
#define PARALLEL   16

#include "sft_test_s3.h"




static sft_uint_t
is(sft_str_t *s, const char *text)
{
    return s->len == strlen(text) && memcmp(s->data, text, s->len) == 0;
}


static sft_s3_pair_t *
pair(sft_pool_t *pool, const char *name, const char *value)
{
    sft_s3_pair_t  *p;

    p = sft_palloc(pool, sizeof(sft_s3_pair_t));
    p->name.data = (u_char *) name;
    p->name.len = strlen(name);
    p->value.data = (u_char *) value;
    p->value.len = strlen(value);

    return p;
}


/* ?uploadId=ID, and &partNumber=N unless part is NULL */

static void
upload_query(sft_s3_request_t *r, sft_str_t *upload_id, const char *part)
{
    r->query = sft_palloc(r->pool, 2 * sizeof(sft_s3_pair_t));
    sft_str_set(&r->query[0].name, "uploadId");
    r->query[0].value = *upload_id;
    r->nquery = 1;

    if (part) {
        r->query[1] = *pair(r->pool, "partNumber", part);
        r->nquery = 2;
    }
}


/* a streamed part: CHUNK buffers fed one by one from a 2 ms timer */

typedef struct {
    sft_s3_request_t  *r;
    u_char            *buf;
    size_t             fed;
    sft_uint_t         refused;
    sft_event_t        ev;
} feeder_t;


static void
feed(sft_event_t *ev)
{
    feeder_t  *f = ev->data;

    if (f->fed == PART_SIZE) {
        (void) sft_s3_request_send(f->r, NULL, 0);
        return;
    }

    if (sft_s3_request_send(f->r, f->buf + f->fed, CHUNK) == SFT_OK) {
        f->fed += CHUNK;

    } else {
        f->refused++;
    }

    sft_add_timer(ev, 2);
}


/* a reader that refuses every other piece and comes back 1 ms later */

typedef struct {
    off_t         got;
    sft_uint_t    pauses;
    sft_uint_t    flip;
    sft_uint_t    bad;
    sft_event_t   ev;
} reader_t;


static sft_int_t
read_piece(sft_s3_request_t *r, u_char *p, size_t n)
{
    size_t     i;
    reader_t  *rd = r->data;

    if (rd->flip++ % 2 == 0) {
        rd->pauses++;
        sft_add_timer(&rd->ev, 1);
        return SFT_AGAIN;
    }

    for (i = 0; i < n; i++) {
        if (rd->got + (off_t) i < PART_SIZE
            && p[i] != (u_char) ((rd->got + i) % 251))
        {
            rd->bad++;
            break;
        }
    }

    rd->got += n;

    return SFT_OK;
}


static void
read_resume(sft_event_t *ev)
{
    sft_s3_request_resume(ev->data);
}


static sft_uint_t  imds_updates, imds_failures;


static void
imds_update(sft_s3_imds_t *m, sft_int_t rc)
{
    (void) m;

    sft_test_count(rc, &imds_updates, &imds_failures);
}


static void
cancel_it(sft_event_t *ev)
{
    sft_s3_request_cancel(ev->data);
}


int
main(void)
{
    int                  fd;
    char                 hang[64], *endpoint, *flaky;
    u_char              *part;
    size_t               i;
    sft_str_t            upload_id, token, etag1, etag2, put_etag;
    sft_uint_t           n, total, pages, ordered, running;
    sft_uint_t           within, differ;
    sft_msec_t           wait, wait_first, base;
    sft_pool_t          *pool;
    sft_s3_list_t        list;
    sft_s3_error_t       err;
    sft_s3_result_t      result;
    sft_s3_client_t      cl, fl, hl;
    sft_s3_object_t     *obj;
    sft_s3_upload_t     *up;
    sft_s3_uploads_t     uploads;
    sft_s3_request_t    *r, *rs[PARALLEL];
    struct sockaddr_in   sin;
    socklen_t            slen;
    feeder_t             feeder;
    reader_t             reader;
    sft_event_t          cancel_ev;
    sft_s3_imds_t        imds;
    static char          keys[KEYS][32];
    char                 complete[512];

    endpoint = getenv("S3_TEST_ENDPOINT");
    flaky = getenv("S3_TEST_FLAKY");

    if (endpoint == NULL || flaky == NULL) {
        printf("1..0 # skip run by t/s3_client.t (S3_TEST_ENDPOINT)\n");
        return 0;
    }

    printf("1..32\n");

    sft_test_loop_init();
    pool = cycle.pool;


    client(&cl, endpoint, 20000, 2);
    ok(sft_s3_client_init(&cl, pool) == SFT_OK, "client made");

    /* the waits before attempts again: doubled, capped, half at random */

    within = 1;
    differ = 0;
    wait_first = sft_s3_client_backoff(&cl, 3);

    for (i = 0; i < 200; i++) {
        for (n = 1; n <= 20; n++) {
            wait = sft_s3_client_backoff(&cl, n);
            base = sft_min(cl.backoff << sft_min(n - 1, 16),
                           SFT_S3_BACKOFF_MAX);
            if (wait < base - base / 2 || wait > base) {
                within = 0;
            }
        }

        if (sft_s3_client_backoff(&cl, 3) != wait_first) {
            differ = 1;
        }
    }

    ok(within, "each wait is between half and all of the backoff doubled "
       "per attempt, at most 20 s");
    ok(differ, "the waits after as many attempts differ: jitter");

    /* bucket and one object */

    r = run(request(&cl, "PUT", ""));
    ok(r->rc == SFT_OK && r->status == 200, "CreateBucket");
    sft_s3_request_free(r);

    r = request(&cl, "PUT", "dir/hello world.txt");
    sft_str_set(&r->body, "hello, s3 world\n");
    run(r);
    put_etag.len = r->etag.len;
    put_etag.data = sft_pnalloc(pool, r->etag.len);
    sft_memcpy(put_etag.data, r->etag.data, r->etag.len);
    ok(r->rc == SFT_OK && r->status == 200 && put_etag.len == 34,
       "PUT with a signed body: 200 and an ETag");
    sft_s3_request_free(r);

    r = request(&cl, "GET", "dir/hello world.txt");
    r->headers = pair(r->pool, "Range", "bytes=7-8");
    r->nheaders = 1;
    run(r);
    ok(r->rc == SFT_OK && r->status == 206 && is(&r->response, "s3"),
       "ranged GET: 206 and the two bytes");
    sft_s3_request_free(r);

    r = run(request(&cl, "HEAD", "dir/hello world.txt"));
    ok(r->rc == SFT_OK && r->status == 200 && r->content_length == 16
       && r->etag.len == put_etag.len
       && memcmp(r->etag.data, put_etag.data, put_etag.len) == 0,
       "HEAD: length and the PUT's ETag");
    sft_s3_request_free(r);

    r = run(request(&cl, "GET", "no/such key"));
    ok(r->rc == SFT_OK && r->status == 404
       && is(&r->error.code, "NoSuchKey") && r->attempts == 1,
       "GET of a missing key: 404 NoSuchKey, not retried");
    sft_s3_request_free(r);

    r = request(&cl, "PUT", "dir/hello world.txt");
    r->headers = pair(r->pool, "If-None-Match", "*");
    r->nheaders = 1;
    sft_str_set(&r->body, "clobber");
    run(r);
    ok(r->rc == SFT_OK && r->status == 412
       && is(&r->error.code, "PreconditionFailed"),
       "PUT If-None-Match on an existing key: 412");
    sft_s3_request_free(r);

    /* many keys, PARALLEL requests at once on the one multi handle */

    total = 0;

    for (i = 0; i < KEYS; i += PARALLEL) {
        running = 0;

        for (n = 0; n < PARALLEL && i + n < KEYS; n++) {
            snprintf(keys[i + n], sizeof(keys[0]), "many/k%03u",
                     (unsigned) (i + n));
            rs[n] = request(&cl, "PUT", keys[i + n]);
            sft_str_set(&rs[n]->body, "x");
            running += (sft_s3_request_start(rs[n]) == SFT_OK);
        }

        (void) wait_done(running);

        for (n = 0; n < PARALLEL && i + n < KEYS; n++) {
            total += (rs[n]->rc == SFT_OK && rs[n]->status == 200);
            sft_s3_request_free(rs[n]);
        }
    }

    ok(total == KEYS, "300 PUTs, 16 at a time");

    /* ListObjectsV2 in pages of PAGE */

    total = 0;
    pages = 0;
    token.len = 0;
    ordered = 1;

    do {
        r = request(&cl, "GET", "");
        r->nquery = token.len ? 4 : 3;
        r->query = sft_palloc(r->pool, 4 * sizeof(sft_s3_pair_t));
        r->query[0] = *pair(r->pool, "list-type", "2");
        r->query[1] = *pair(r->pool, "prefix", "many/");
        r->query[2] = *pair(r->pool, "max-keys", "50");

        if (token.len) {
            r->query[3].name.data = (u_char *) "continuation-token";
            r->query[3].name.len = sizeof("continuation-token") - 1;
            r->query[3].value = token;
        }

        run(r);

        if (r->rc != SFT_OK || r->status != 200
            || sft_s3_xml_list(r->response.data, r->response.len, pool, &list,
                               &err) != SFT_OK)
        {
            sft_s3_request_free(r);
            break;
        }

        obj = list.objects.elts;

        for (n = 0; n < list.objects.nelts; n++) {
            ordered &= (total + n < KEYS
                        && is(&obj[n].key, keys[total + n])
                        && obj[n].size == 1);
        }

        total += list.objects.nelts;
        pages++;
        token = list.next_token;       /* copied into the test's pool */
        sft_s3_request_free(r);

    } while (list.truncated && pages < 100);

    ok(total == KEYS && pages == KEYS / PAGE && !list.truncated,
       "ListObjectsV2: 300 keys in 6 pages of 50");
    ok(ordered, "ListObjectsV2: every key once, in order, with its size");

    /* multipart: create, a streamed part, a copied part, complete */

    r = request(&cl, "POST", "big");
    r->query = pair(r->pool, "uploads", "");
    r->nquery = 1;
    run(r);
    ok(r->rc == SFT_OK && r->status == 200
       && sft_s3_xml_initiate(r->response.data, r->response.len, pool,
                              &upload_id, &err) == SFT_OK,
       "CreateMultipartUpload: an upload id");
    sft_s3_request_free(r);

    part = malloc(PART_SIZE);
    for (i = 0; i < PART_SIZE; i++) {
        part[i] = (u_char) (i % 251);
    }

    r = request(&cl, "PUT", "big");
    upload_query(r, &upload_id, "1");
    r->streamed = 1;
    r->body_length = PART_SIZE;

    sft_memzero(&feeder, sizeof(feeder));
    feeder.r = r;
    feeder.buf = part;
    feeder.ev.handler = feed;
    feeder.ev.data = &feeder;
    feeder.ev.log = cycle.log;

    ok(sft_s3_request_start(r) == SFT_OK, "UploadPart started, no body yet");
    sft_add_timer(&feeder.ev, 5);
    ok(wait_done(1) && r->rc == SFT_OK && r->status == 200 && r->etag.len,
       "UploadPart from 20 chunks fed 2 ms apart: 200 and an ETag");
    etag1.len = r->etag.len;
    etag1.data = sft_pnalloc(pool, r->etag.len);
    sft_memcpy(etag1.data, r->etag.data, r->etag.len);
    sft_del_timer(&feeder.ev);
    sft_s3_request_free(r);

    r = request(&cl, "PUT", "big");
    upload_query(r, &upload_id, "2");
    r->headers = pair(r->pool, "x-amz-copy-source",
                      "/" BUCKET "/dir/hello%20world.txt");
    r->nheaders = 1;
    run(r);
    ok(r->rc == SFT_OK && r->status == 200
       && sft_s3_xml_result(r->response.data, r->response.len, pool,
                            &result, &err) == SFT_OK
       && result.etag.len == put_etag.len
       && memcmp(result.etag.data, put_etag.data, put_etag.len) == 0,
       "UploadPartCopy: the source's ETag");
    etag2 = result.etag;
    sft_s3_request_free(r);

    n = snprintf(complete, sizeof(complete),
                 "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
                 "<ETag>%.*s</ETag></Part><Part><PartNumber>2</PartNumber>"
                 "<ETag>%.*s</ETag></Part></CompleteMultipartUpload>",
                 SFT_STR_FMT(&etag1), SFT_STR_FMT(&etag2));

    r = request(&cl, "POST", "big");
    upload_query(r, &upload_id, NULL);
    r->body.data = (u_char *) complete;
    r->body.len = n;
    run(r);
    ok(r->rc == SFT_OK && r->status == 200
       && sft_s3_xml_result(r->response.data, r->response.len, pool,
                            &result, &err) == SFT_OK
       && result.etag.len > 3
       && memcmp(result.etag.data + result.etag.len - 3, "-2\"", 3) == 0,
       "CompleteMultipartUpload: a two-part ETag");
    sft_s3_request_free(r);

    r = run(request(&cl, "HEAD", "big"));
    ok(r->status == 200 && r->content_length == PART_SIZE + 16,
       "the object is the two parts");
    sft_s3_request_free(r);

    /* a GET the reader paces: paused every other piece */

    sft_memzero(&reader, sizeof(reader));
    r = request(&cl, "GET", "big");
    r->on_data = read_piece;
    r->data = &reader;
    reader.ev.handler = read_resume;
    reader.ev.data = r;
    reader.ev.log = cycle.log;
    run(r);
    ok(r->rc == SFT_OK && r->status == 200
       && reader.got == PART_SIZE + 16 && reader.bad == 0
       && reader.pauses > 1 && r->response.len == 0,
       "a paced GET: every byte, in order, after pauses");
    sft_del_timer(&reader.ev);
    sft_s3_request_free(r);

    /* abort another upload; the listing no longer has it */

    r = request(&cl, "POST", "gone");
    r->query = pair(r->pool, "uploads", "");
    r->nquery = 1;
    run(r);
    (void) sft_s3_xml_initiate(r->response.data, r->response.len, pool,
                               &upload_id, &err);
    sft_s3_request_free(r);

    r = request(&cl, "DELETE", "gone");
    upload_query(r, &upload_id, NULL);
    run(r);
    ok(r->rc == SFT_OK && r->status == 204, "AbortMultipartUpload: 204");
    sft_s3_request_free(r);

    r = request(&cl, "GET", "");
    r->query = pair(r->pool, "uploads", "");
    r->nquery = 1;
    run(r);
    n = 0;
    if (sft_s3_xml_uploads(r->response.data, r->response.len, pool,
                           &uploads, &err) == SFT_OK)
    {
        up = uploads.uploads.elts;
        for (i = 0; i < uploads.uploads.nelts; i++) {
            n += is(&up[i].key, "gone");
        }

    } else {
        n = 1;
    }

    ok(r->status == 200 && n == 0,
       "ListMultipartUploads: the aborted one is gone");
    sft_s3_request_free(r);

    r = run(request(&cl, "DELETE", "dir/hello world.txt"));
    ok(r->rc == SFT_OK && r->status == 204, "DELETE: 204");
    sft_s3_request_free(r);

    r = run(request(&cl, "HEAD", "dir/hello world.txt"));
    ok(r->status == 404, "then HEAD: 404");
    sft_s3_request_free(r);

    /* retries against the stand-in: 503 twice, then 200 */

    client(&fl, flaky, 5000, 2);
    (void) sft_s3_client_init(&fl, pool);

    r = run(request(&fl, "GET", "flaky"));
    ok(r->rc == SFT_OK && r->status == 200 && r->attempts == 3
       && is(&r->response, "ok"),
       "503, 503, 200: retried twice, then the answer");
    sft_s3_request_free(r);

    r = run(request(&fl, "POST", "flaky-post"));
    ok(r->rc == SFT_OK && r->status == 503 && r->attempts == 1
       && is(&r->error.code, "SlowDown"),
       "a POST is not retried: 503 SlowDown");
    sft_s3_request_free(r);

    /* a server that never answers: timed out, then retried, then given up */

    fd = socket(AF_INET, SOCK_STREAM, 0);
    sft_memzero(&sin, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    slen = sizeof(sin);
    (void) bind(fd, (struct sockaddr *) &sin, sizeof(sin));
    (void) listen(fd, 16);
    (void) getsockname(fd, (struct sockaddr *) &sin, &slen);
    snprintf(hang, sizeof(hang), "http://127.0.0.1:%u", ntohs(sin.sin_port));

    client(&hl, hang, 200, 2);
    hl.retries = 1;
    (void) sft_s3_client_init(&hl, pool);

    r = run(request(&hl, "GET", "hang"));
    ok(r->rc == SFT_ERROR && r->attempts == 2
       && strstr(r->curl_error, "imed out") != NULL,
       "no answer: timed out twice (one retry), then an error");
    sft_s3_request_free(r);

    /* cancel: no callback, and the loop goes on */

    hl.timeout = 0;
    r = request(&hl, "GET", "hang");
    sft_memzero(&cancel_ev, sizeof(cancel_ev));
    cancel_ev.handler = cancel_it;
    cancel_ev.data = r;
    cancel_ev.log = cycle.log;
    n = done_n;
    (void) sft_s3_request_start(r);
    sft_add_timer(&cancel_ev, 50);
    spin(300, &done_n, (sft_uint_t) -1);
    ok(done_n == n && !r->running, "cancelled: no callback");
    sft_s3_request_free(r);

    r = run(request(&cl, "HEAD", "big"));
    ok(r->status == 200, "the client still works after the cancel");
    sft_s3_request_free(r);

    ok(cycle.free_connection_n + SFT_S3_MAX_CONNECTS >= cycle.connection_n,
       "curl's sockets are given back (at most the idle ones kept)");

    /* keys from the instance metadata service, refreshed before expiry */

    sft_memzero(&imds, sizeof(imds));
    imds.endpoint.data = (u_char *) flaky;
    imds.endpoint.len = strlen(flaky);
    imds.timeout = 5000;
    imds.log = cycle.log;
    imds.on_update = imds_update;

    ok(sft_s3_imds_start(&imds) == SFT_OK
       && spin(60000, &imds_updates, 1) && imds_failures == 0
       && is(&imds.creds.access_key, "ASIAIMDS1")
       && is(&imds.creds.session_token, "imds-token-1")
       && imds.creds.expires > time(NULL),
       "IMDSv2: token, role, keys with their expiry");

    cl.creds = &imds.creds;
    r = run(request(&cl, "HEAD", "big"));
    ok(r->status == 200, "a request signed with them");
    sft_s3_request_free(r);

    ok(spin(60000, &imds_updates, 2)
       && is(&imds.creds.access_key, "ASIAIMDS2")
       && is(&imds.creds.session_token, "imds-token-2"),
       "refreshed on the loop (halfway through the life of 4 s keys)");

    sft_s3_imds_stop(&imds);

    close(fd);
    free(part);
    sft_s3_multi_done();

    return failed ? 1 : 0;
}
