/*
 * sft_s3_request.c -- one S3 request on the worker's multi handle: signed
 * anew for each attempt (unless its client has no keys, as for STS), its
 * body pulled from the caller's queued buffers (curl paused while there
 * is none), its answer pushed to the caller in pieces (curl paused while
 * the caller cannot take more) or kept for the XML parsers, retried with
 * a doubling wait with jitter after 5xx, 429 and transport errors when
 * it is idempotent and nothing was delivered yet.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_client.h>
#include <sft_s3_stats.h>

#include <openssl/evp.h>


static sft_int_t sft_s3_request_attempt(sft_s3_request_t *r);
static sft_int_t sft_s3_request_headers(sft_s3_request_t *r,
    sft_str_t *path);
static sft_int_t sft_s3_request_sign(sft_s3_request_t *r, sft_str_t *path);
static sft_int_t sft_s3_request_add_header(sft_s3_request_t *r,
    sft_str_t *name, sft_str_t *value);
static void sft_s3_request_done(sft_s3_transfer_t *t, CURLcode rc);
static sft_uint_t sft_s3_request_retryable(sft_s3_request_t *r,
    CURLcode rc);
static void sft_s3_request_retry(sft_event_t *ev);
static void sft_s3_request_finish(sft_s3_request_t *r, sft_int_t rc);
static size_t sft_s3_request_read(char *buf, size_t size, size_t n,
    void *data);
static size_t sft_s3_request_write(char *buf, size_t size, size_t n,
    void *data);
static size_t sft_s3_request_header(char *buf, size_t size, size_t n,
    void *data);
static sft_uint_t sft_s3_header_is(u_char **p, u_char *end,
    const char *name);
static time_t sft_s3_parse_seconds(u_char *p, size_t n);
static sft_int_t sft_s3_request_keep(sft_s3_request_t *r, u_char *p,
    u_char *end, sft_str_t *out);
static sft_uint_t sft_s3_parse_crc(u_char *p, size_t n, uint32_t *crc);
static sft_uint_t sft_s3_parse_range(sft_s3_request_t *r, u_char *p,
    u_char *end);


sft_s3_request_t *
sft_s3_request_create(sft_s3_client_t *cl)
{
    sft_pool_t        *pool;
    sft_s3_request_t  *r;

    pool = sft_create_pool(4096, cl->log);
    if (pool == NULL) {
        return NULL;
    }

    r = sft_pcalloc(pool, sizeof(sft_s3_request_t));
    if (r == NULL) {
        sft_destroy_pool(pool);
        return NULL;
    }

    r->transfer.easy = curl_easy_init();
    if (r->transfer.easy == NULL) {
        sft_destroy_pool(pool);
        return NULL;
    }

    r->transfer.done = sft_s3_request_done;
    r->client = cl;
    r->pool = pool;
    r->max_response = SFT_S3_XML_MAX;
    r->retry.handler = sft_s3_request_retry;
    r->retry.data = r;
    r->retry.log = cl->log;

    return r;
}


sft_int_t
sft_s3_request_start(sft_s3_request_t *r)
{
    if (r->running || r->retry.timer_set || r->method.len == 0
        || r->body_length < 0 || (r->streamed && r->body.len))
    {
        return SFT_ERROR;
    }

    r->attempts = 0;

    return sft_s3_request_attempt(r);
}


static sft_int_t
sft_s3_request_attempt(sft_s3_request_t *r)
{
    u_char           *p;
    CURL             *easy;
    sft_str_t         path, url, query;
    sft_s3_client_t  *cl;

    cl = r->client;
    easy = r->transfer.easy;

    r->attempts++;
    r->status = 0;

    /* never NULL, so that an absent ETag copies as 0 bytes from somewhere */

    sft_str_set(&r->etag, "");
    sft_str_set(&r->content_type, "");
    sft_str_set(&r->disposition, "");
    r->last_modified = 0;
    r->meta_mtime = 0;
    r->crc_s3_known = 0;
    r->crc_composite = 0;
    r->crc_meta_known = 0;
    r->range_known = 0;
    r->headers_ended = 0;
    r->refused = NULL;
    r->response.len = 0;
    r->delivered = 0;
    r->too_long = 0;
    r->read_paused = 0;
    r->write_paused = 0;
    r->curl_error[0] = '\0';
    sft_memzero(&r->error, sizeof(sft_s3_error_t));

    if (!r->streamed) {
        r->first = 0;
        r->nchunks = 0;
        r->ended = 1;

        if (r->body.len) {
            r->chunks[0].data = r->body.data;
            r->chunks[0].len = r->body.len;
            r->nchunks = 1;
        }
    }

    /* the path, unencoded, as signed; the URL with it encoded */

    path.len = cl->prefix.len + 1 + r->key.len;
    path.data = sft_pnalloc(r->pool, path.len);
    if (path.data == NULL) {
        return SFT_ERROR;
    }

    /* an empty prefix or key may have no data at all: memcpy's NULL */

    p = path.data;

    if (cl->prefix.len) {
        p = sft_cpymem(p, cl->prefix.data, cl->prefix.len);
    }

    *p++ = '/';

    if (r->key.len) {
        sft_memcpy(p, r->key.data, r->key.len);
    }

    if (sft_s3_canonical_query(r->query, r->nquery, r->pool, &query)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    url.len = cl->origin.len + sft_s3_uri_encode(NULL, &path, 1) + 1
              + query.len + 1;
    url.data = sft_pnalloc(r->pool, url.len);
    if (url.data == NULL) {
        return SFT_ERROR;
    }

    p = sft_cpymem(url.data, cl->origin.data, cl->origin.len);
    p += sft_s3_uri_encode(p, &path, 1);

    if (query.len) {
        *p++ = '?';
        p = sft_cpymem(p, query.data, query.len);
    }

    *p = '\0';

    if (sft_s3_request_headers(r, &path) != SFT_OK) {
        return SFT_ERROR;
    }

    curl_easy_reset(easy);

    (void) curl_easy_setopt(easy, CURLOPT_URL, (char *) url.data);
    (void) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, r->slist);
    (void) curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    (void) curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    (void) curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    (void) curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, r->curl_error);
    (void) curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long) cl->timeout);
    (void) curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                            (long) cl->connect_timeout);
    (void) curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION,
                            sft_s3_request_write);
    (void) curl_easy_setopt(easy, CURLOPT_WRITEDATA, r);
    (void) curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION,
                            sft_s3_request_header);
    (void) curl_easy_setopt(easy, CURLOPT_HEADERDATA, r);

    if (cl->ca_path) {
        (void) curl_easy_setopt(easy, CURLOPT_CAINFO, cl->ca_path);
    }

    if (cl->insecure) {
        (void) curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
        (void) curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    }

    if (sft_str_eq(&r->method, "HEAD")) {
        (void) curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);

    } else if (sft_str_eq(&r->method, "PUT") || sft_str_eq(&r->method, "POST"))
    {
        /* both through the read callback: one path for every body */
        (void) curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L);
        (void) curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE,
                                (curl_off_t) (r->streamed ? r->body_length
                                                          : (off_t) r->body.len));
        (void) curl_easy_setopt(easy, CURLOPT_READFUNCTION,
                                sft_s3_request_read);
        (void) curl_easy_setopt(easy, CURLOPT_READDATA, r);
    }

    if (!sft_str_eq(&r->method, "GET") && !sft_str_eq(&r->method, "HEAD")
        && !sft_str_eq(&r->method, "PUT"))
    {
        (void) curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST,
                                (char *) r->method.data);
    }

    if (sft_s3_multi_add(&r->transfer) != SFT_OK) {
        return SFT_ERROR;
    }

    r->running = 1;

    return SFT_OK;
}


/* the headers of this attempt: Host, the signature's, the caller's */

static sft_int_t
sft_s3_request_headers(sft_s3_request_t *r, sft_str_t *path)
{
    sft_uint_t        i;
    sft_s3_client_t  *cl;

    static sft_str_t  host = sft_string("Host");

    cl = r->client;

    curl_slist_free_all(r->slist);
    r->slist = NULL;

    if (sft_s3_request_add_header(r, &host, &cl->host) != SFT_OK
        || (cl->creds && sft_s3_request_sign(r, path) != SFT_OK))
    {
        return SFT_ERROR;
    }

    for (i = 0; i < r->nheaders; i++) {
        if (sft_s3_request_add_header(r, &r->headers[i].name,
                                      &r->headers[i].value)
            != SFT_OK)
        {
            return SFT_ERROR;
        }
    }

    /* no "Expect: 100-continue" wait before a body */

    r->slist = curl_slist_append(r->slist, "Expect:");

    return r->slist ? SFT_OK : SFT_ERROR;
}


/* the signature of this attempt and the headers it covers */

static sft_int_t
sft_s3_request_sign(sft_s3_request_t *r, sft_str_t *path)
{
    u_char           *hex;
    sft_str_t         date, auth;
    sft_s3_sign_t     s;
    sft_s3_client_t  *cl;

    static sft_str_t  amz_date = sft_string("x-amz-date");
    static sft_str_t  sha256 = sft_string("x-amz-content-sha256");
    static sft_str_t  authorization = sft_string("Authorization");
    static sft_str_t  token = sft_string("x-amz-security-token");

    cl = r->client;

    sft_memzero(&s, sizeof(sft_s3_sign_t));
    s.method = r->method;
    s.host = cl->host;
    s.path = *path;
    s.query = r->query;
    s.nquery = r->nquery;
    s.headers = r->headers;
    s.nheaders = r->nheaders;
    s.region = cl->region;
    sft_str_set(&s.service, "s3");
    s.now = time(NULL);
    s.creds = cl->creds;
    s.cache = &cl->key;

    if (r->streamed) {
        sft_str_set(&s.payload_hash, SFT_S3_UNSIGNED_PAYLOAD);

    } else {
        hex = sft_pnalloc(r->pool, SFT_S3_SHA256_HEX_LEN);
        if (hex == NULL) {
            return SFT_ERROR;
        }

        sft_s3_sha256_hex(r->body.data, r->body.len, hex);
        s.payload_hash.data = hex;
        s.payload_hash.len = SFT_S3_SHA256_HEX_LEN;
    }

    if (sft_s3_sign(&s, r->pool, &date, &auth) != SFT_OK) {
        return SFT_ERROR;
    }

    if (sft_s3_request_add_header(r, &amz_date, &date) != SFT_OK
        || sft_s3_request_add_header(r, &sha256, &s.payload_hash) != SFT_OK
        || sft_s3_request_add_header(r, &authorization, &auth) != SFT_OK
        || (cl->creds->session_token.len
            && sft_s3_request_add_header(r, &token,
                                         &cl->creds->session_token)
               != SFT_OK))
    {
        return SFT_ERROR;
    }

    return SFT_OK;
}


sft_int_t
sft_s3_copy_source(sft_s3_request_t *r, sft_str_t *key, sft_str_t *out)
{
    u_char           *p;
    sft_s3_client_t  *cl;

    cl = r->client;

    out->len = 1 + cl->bucket.len + 1 + sft_s3_uri_encode(NULL, key, 1);
    out->data = sft_pnalloc(r->pool, out->len);
    if (out->data == NULL) {
        return SFT_ERROR;
    }

    p = sft_cpymem(out->data, "/", 1);
    p = sft_cpymem(p, cl->bucket.data, cl->bucket.len);
    *p++ = '/';
    (void) sft_s3_uri_encode(p, key, 1);

    return SFT_OK;
}


/* a line break in a name or value would start another header: refused */

static sft_int_t
sft_s3_request_add_header(sft_s3_request_t *r, sft_str_t *name,
    sft_str_t *value)
{
    u_char             *line, *last;
    size_t              len;
    struct curl_slist  *l;

    if (name->len == 0
        || memchr(name->data, ':', name->len)
        || memchr(name->data, '\n', name->len)
        || memchr(name->data, '\r', name->len)
        || memchr(value->data, '\n', value->len)
        || memchr(value->data, '\r', value->len))
    {
        return SFT_ERROR;
    }

    len = name->len + 2 + value->len + 1;
    line = sft_pnalloc(r->pool, len);
    if (line == NULL) {
        return SFT_ERROR;
    }

    last = sft_slprintf(line, line + len, "%.*s: %.*s", SFT_STR_FMT(name),
                        SFT_STR_FMT(value));
    *last = '\0';

    l = curl_slist_append(r->slist, (char *) line);
    if (l == NULL) {
        return SFT_ERROR;
    }

    r->slist = l;

    return SFT_OK;
}


static void
sft_s3_request_done(sft_s3_transfer_t *t, CURLcode rc)
{
    long               status;
    curl_off_t         length;
    sft_msec_t         delay;
    sft_s3_client_t   *cl;
    sft_s3_request_t  *r;

    r = (sft_s3_request_t *) t;
    cl = r->client;

    r->running = 0;

    status = 0;
    length = -1;
    (void) curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    (void) curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
                             &length);
    r->status = status;
    r->content_length = length;

    /*
     * libcurl takes a status line and the connection closed after it, or
     * after some headers, for a whole answer: an answer whose headers
     * never ended is a cut one
     */

    if (rc == CURLE_OK && !r->headers_ended) {
        rc = CURLE_PARTIAL_FILE;
        r->refused = "the answer was cut in its headers";
    }

    /* a HEAD's size is its Content-Length: none (chunked, say), no size */

    if (rc == CURLE_OK && status / 100 == 2 && length < 0
        && sft_str_eq(&r->method, "HEAD"))
    {
        rc = CURLE_PARTIAL_FILE;
        r->refused = "a HEAD answer without Content-Length";
    }

    if (sft_s3_request_retryable(r, rc)) {
        delay = sft_s3_client_backoff(cl, r->attempts);

        sft_log_error(SFT_LOG_INFO, cl->log, 0,
                      "S3 %.*s \"%.*s\": %s %ld, attempt %lu again "
                      "in %lu ms", SFT_STR_FMT(&r->method),
                      SFT_STR_FMT(&r->key),
                      rc == CURLE_OK ? "status" : curl_easy_strerror(rc),
                      status, (unsigned long) r->attempts + 1,
                      (unsigned long) delay);

        sft_s3_stats_retry();
        sft_add_timer(&r->retry, delay);
        return;
    }

    /* at info: whoever handles the failure logs it, with its session */

    if (rc != CURLE_OK || r->too_long || r->refused) {
        sft_log_error(SFT_LOG_INFO, cl->log, 0,
                      "S3 %.*s \"%.*s\" failed after %lu attempts: %s",
                      SFT_STR_FMT(&r->method), SFT_STR_FMT(&r->key),
                      (unsigned long) r->attempts,
                      r->too_long ? "answer too long"
                      : r->refused ? r->refused
                      : r->curl_error[0] ? r->curl_error
                      : curl_easy_strerror(rc));

        sft_s3_request_finish(r, SFT_ERROR);
        return;
    }

    if (status >= 300 && r->response.len) {
        (void) sft_s3_xml_error(r->response.data, r->response.len, r->pool,
                                &r->error);
    }

    sft_s3_request_finish(r, SFT_OK);
}


static sft_uint_t
sft_s3_request_retryable(sft_s3_request_t *r, CURLcode rc)
{
    if (!r->idempotent || r->streamed || r->delivered
        || r->attempts > r->client->retries)
    {
        return 0;
    }

    switch (rc) {

    case CURLE_OK:
        return r->status == 429 || r->status == 500 || r->status == 502
               || r->status == 503 || r->status == 504;

    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_WEIRD_SERVER_REPLY:      /* a malformed length, and */
    case CURLE_UNSUPPORTED_PROTOCOL:    /* ... status line (the scheme was
                                           checked at the start): the
                                           connection is closed, the next
                                           attempt's is new */
        return 1;

    default:
        return 0;
    }
}


static void
sft_s3_request_retry(sft_event_t *ev)
{
    sft_s3_request_t  *r;

    r = ev->data;

    if (sft_s3_request_attempt(r) != SFT_OK) {
        sft_s3_request_finish(r, SFT_ERROR);
    }
}


static void
sft_s3_request_finish(sft_s3_request_t *r, sft_int_t rc)
{
    r->rc = rc;
    sft_s3_stats_count(r);
    r->on_done(r);
}


sft_int_t
sft_s3_request_send(sft_s3_request_t *r, u_char *p, size_t n)
{
    sft_uint_t  last;

    if (!r->streamed || r->ended) {
        return SFT_ERROR;
    }

    if (p == NULL) {
        r->ended = 1;

    } else if (n == 0) {
        return SFT_OK;

    } else if (r->nchunks == SFT_S3_CHUNKS) {
        return SFT_AGAIN;

    } else {
        last = (r->first + r->nchunks) % SFT_S3_CHUNKS;
        r->chunks[last].data = p;
        r->chunks[last].len = n;
        r->nchunks++;
    }

    if (r->read_paused && r->running && !r->in_callback) {
        r->read_paused = 0;
        (void) curl_easy_pause(r->transfer.easy,
                               r->write_paused ? CURLPAUSE_RECV
                                               : CURLPAUSE_CONT);
    }

    return SFT_OK;
}


void
sft_s3_request_resume(sft_s3_request_t *r)
{
    if (!r->write_paused || !r->running || r->in_callback) {
        return;
    }

    r->write_paused = 0;
    (void) curl_easy_pause(r->transfer.easy,
                           r->read_paused ? CURLPAUSE_SEND : CURLPAUSE_CONT);
}


void
sft_s3_request_cancel(sft_s3_request_t *r)
{
    if (r->running) {
        sft_s3_multi_remove(&r->transfer);
        r->running = 0;
    }

    sft_del_timer(&r->retry);
}


void
sft_s3_request_free(sft_s3_request_t *r)
{
    sft_s3_request_cancel(r);

    curl_easy_cleanup(r->transfer.easy);
    curl_slist_free_all(r->slist);
    sft_destroy_pool(r->pool);
}


static size_t
sft_s3_request_read(char *buf, size_t size, size_t n, void *data)
{
    size_t             len;
    sft_s3_chunk_t    *ch;
    sft_s3_request_t  *r = data;

    if (r->nchunks == 0) {
        if (r->ended) {
            return 0;
        }

        r->read_paused = 1;
        return CURL_READFUNC_PAUSE;
    }

    ch = &r->chunks[r->first];
    len = sft_min(size * n, ch->len);

    sft_memcpy(buf, ch->data, len);
    ch->data += len;
    ch->len -= len;

    if (ch->len == 0) {
        r->first = (r->first + 1) % SFT_S3_CHUNKS;
        r->nchunks--;

        if (r->streamed && r->on_sent) {
            r->in_callback = 1;
            r->on_sent(r);
            r->in_callback = 0;
        }
    }

    return len;
}


static size_t
sft_s3_request_write(char *buf, size_t size, size_t n, void *data)
{
    long               status;
    curl_off_t         length;
    u_char            *p;
    size_t             len, want;
    sft_int_t          rc;
    sft_s3_request_t  *r = data;

    len = size * n;
    status = 0;
    (void) curl_easy_getinfo(r->transfer.easy, CURLINFO_RESPONSE_CODE,
                             &status);

    if (r->on_data && status >= 200 && status < 300) {
        r->status = status;             /* on_data looks at the answer */

        if (r->delivered == 0) {
            length = -1;
            (void) curl_easy_getinfo(r->transfer.easy,
                                     CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
                                     &length);
            r->content_length = length;
        }

        r->in_callback = 1;
        rc = r->on_data(r, (u_char *) buf, len);
        r->in_callback = 0;

        if (rc == SFT_AGAIN) {
            r->write_paused = 1;
            return CURL_WRITEFUNC_PAUSE;
        }

        if (rc != SFT_OK) {
            return 0;
        }

        r->delivered += len;
        return len;
    }

    if (len > r->max_response - r->response.len) {
        r->too_long = 1;
        return 0;
    }

    if (r->response.len + len > r->response_size) {
        want = sft_max(2 * r->response_size, r->response.len + len);
        want = sft_max(want, 4096);
        want = sft_min(want, r->max_response);

        p = sft_pnalloc(r->pool, want);
        if (p == NULL) {
            return 0;
        }

        if (r->response.len) {
            sft_memcpy(p, r->response.data, r->response.len);
        }

        r->response.data = p;
        r->response_size = want;
    }

    sft_memcpy(r->response.data + r->response.len, buf, len);
    r->response.len += len;

    return len;
}


/*
 * A new status line starts over (100 Continue); ETag, Last-Modified,
 * Content-Type, Content-Disposition, x-amz-meta-mtime (the seconds a client set) and the
 * object's CRC-32C (S3's checksum and its type, x-amz-meta-crc32c) are
 * kept.
 */

static size_t
sft_s3_request_header(char *buf, size_t size, size_t n, void *data)
{
    u_char            *p, *end;
    size_t             len;
    sft_s3_request_t  *r = data;

    len = size * n;
    p = (u_char *) buf;
    end = p + len;

    if (len >= 5 && sft_strncmp(p, "HTTP/", 5) == 0) {
        r->headers_ended = 0;
        r->etag.len = 0;
        r->last_modified = 0;
        r->meta_mtime = 0;
        r->content_type.len = 0;
        r->disposition.len = 0;
        r->crc_s3_known = 0;
        r->crc_composite = 0;
        r->crc_meta_known = 0;
        r->range_known = 0;
        return len;
    }

    while (end > p && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
    {
        end--;
    }

    if (len <= 2 && end == p) {
        r->headers_ended = 1;           /* the blank line */
        return len;
    }

    if (sft_s3_header_is(&p, end, "last-modified:")) {
        r->last_modified = sft_s3_parse_http_time(p, end - p);

    } else if (sft_s3_header_is(&p, end, "x-amz-meta-mtime:")) {
        r->meta_mtime = sft_s3_parse_seconds(p, end - p);

    } else if (sft_s3_header_is(&p, end, "x-amz-checksum-crc32c:")) {
        r->crc_s3_known = sft_s3_parse_crc(p, end - p, &r->crc_s3);

    } else if (sft_s3_header_is(&p, end, "x-amz-checksum-type:")) {
        r->crc_composite = (end - p == 9
                            && strncasecmp((char *) p, "COMPOSITE", 9) == 0);

    } else if (sft_s3_header_is(&p, end, "content-range:")) {
        r->range_known = sft_s3_parse_range(r, p, end);

    } else if (sft_s3_header_is(&p, end, "x-amz-meta-crc32c:")) {
        r->crc_meta_known = sft_s3_parse_crc(p, end - p, &r->crc_meta);

    } else if (sft_s3_header_is(&p, end, "content-type:")) {
        return sft_s3_request_keep(r, p, end, &r->content_type) == SFT_OK
               ? len : 0;

    } else if (sft_s3_header_is(&p, end, "content-disposition:")) {
        return sft_s3_request_keep(r, p, end, &r->disposition) == SFT_OK
               ? len : 0;

    } else if (sft_s3_header_is(&p, end, "etag:")) {
        return sft_s3_request_keep(r, p, end, &r->etag) == SFT_OK ? len : 0;
    }

    return len;
}


/* a header's value copied into the request's pool, NUL-terminated */

static sft_int_t
sft_s3_request_keep(sft_s3_request_t *r, u_char *p, u_char *end,
    sft_str_t *out)
{
    out->data = sft_pnalloc(r->pool, end - p + 1);
    if (out->data == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(out->data, p, end - p);
    out->len = end - p;
    out->data[out->len] = '\0';

    return SFT_OK;
}


sft_int_t
sft_s3_request_crc32c(sft_s3_request_t *r, uint32_t *crc)
{
    if (r->crc_meta_known) {
        *crc = r->crc_meta;
        return SFT_OK;
    }

    if (r->crc_s3_known && !r->crc_composite) {
        *crc = r->crc_s3;
        return SFT_OK;
    }

    return SFT_DECLINED;
}


sft_uint_t
sft_s3_request_range_is(sft_s3_request_t *r, off_t first, off_t last,
    off_t total)
{
    return r->status == 206 && r->range_known && r->range_first == first
           && r->range_last == last && r->range_total == total;
}


/*
 * A CRC-32C as S3 writes it (base64 of its 4 bytes, "AAAAAA==": a
 * checksum of parts has "-N" after it) or as x-amz-meta-crc32c keeps it
 * (8 hex digits): 1 and *crc, else 0.
 */

static sft_uint_t
sft_s3_parse_crc(u_char *p, size_t n, uint32_t *crc)
{
    u_char     c, b[6];
    size_t     i;
    uint32_t   v;

    if (n == 8 && p[6] == '=' && p[7] == '=') {
        if (EVP_DecodeBlock(b, p, 8) != 6) {
            return 0;
        }

        *crc = ((uint32_t) b[0] << 24) | ((uint32_t) b[1] << 16)
               | ((uint32_t) b[2] << 8) | b[3];
        return 1;
    }

    if (n != 8) {
        return 0;
    }

    v = 0;

    for (i = 0; i < n; i++) {
        c = p[i] | 0x20;

        if (c >= '0' && c <= '9') {
            v = (v << 4) | (uint32_t) (c - '0');

        } else if (c >= 'a' && c <= 'f') {
            v = (v << 4) | (uint32_t) (c - 'a' + 10);

        } else {
            return 0;
        }
    }

    *crc = v;

    return 1;
}


/* "bytes FIRST-LAST/TOTAL", each a decimal that fits: 1, else 0 */

static sft_uint_t
sft_s3_parse_range(sft_s3_request_t *r, u_char *p, u_char *end)
{
    off_t       v[3];
    sft_uint_t  i, digits;

    if (end - p < 6 || sft_strncmp(p, "bytes ", 6) != 0) {
        return 0;
    }

    p += 6;

    for (i = 0; i < 3; i++) {
        v[i] = 0;

        for (digits = 0; p < end && *p >= '0' && *p <= '9'; p++) {
            if (++digits > 18) {
                return 0;
            }

            v[i] = v[i] * 10 + (*p - '0');
        }

        if (digits == 0 || (i < 2 && (p == end || *p++ != "-/"[i]))) {
            return 0;
        }
    }

    if (p != end || v[0] > v[1] || v[1] >= v[2]) {
        return 0;
    }

    r->range_first = v[0];
    r->range_last = v[1];
    r->range_total = v[2];

    return 1;
}


/* a header of that name (lower case, with its colon): *p at its value */

static sft_uint_t
sft_s3_header_is(u_char **p, u_char *end, const char *name)
{
    u_char  *v;
    size_t   n;

    n = sft_strlen(name);

    if ((size_t) (end - *p) < n || strncasecmp((char *) *p, name, n) != 0) {
        return 0;
    }

    for (v = *p + n; v < end && (*v == ' ' || *v == '\t'); v++) {
        /* void */
    }

    *p = v;

    return 1;
}


/* decimal seconds since the epoch, 0 when not that */

static time_t
sft_s3_parse_seconds(u_char *p, size_t n)
{
    time_t  t;
    size_t  i;

    if (n == 0 || n > 12) {
        return 0;
    }

    t = 0;

    for (i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return 0;
        }

        t = t * 10 + (p[i] - '0');
    }

    return t;
}
