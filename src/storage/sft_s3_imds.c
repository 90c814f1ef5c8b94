/*
 * sft_s3_imds.c -- IMDSv2 on the loop: PUT /latest/api/token for a
 * session token, GET the role name, GET the role's keys (JSON), and a
 * timer that fetches them again before they expire.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_imds.h>
#include <sft_s3_creds.h>
#include <sft_s3_xml.h>

#include <jansson.h>


static sft_int_t sft_s3_imds_step(sft_s3_imds_t *m);
static void sft_s3_imds_done(sft_s3_transfer_t *t, CURLcode rc);
static sft_int_t sft_s3_imds_keys(sft_s3_imds_t *m);
static sft_int_t sft_s3_imds_str(sft_pool_t *pool, json_t *obj,
    const char *name, sft_str_t *s);
static void sft_s3_imds_refresh(sft_event_t *ev);
static size_t sft_s3_imds_write(char *buf, size_t size, size_t n,
    void *data);


sft_int_t
sft_s3_imds_start(sft_s3_imds_t *m)
{
    if (m->endpoint.len == 0 || m->endpoint.len > 512) {
        return SFT_ERROR;
    }

    m->transfer.easy = curl_easy_init();
    if (m->transfer.easy == NULL) {
        return SFT_ERROR;
    }

    m->transfer.done = sft_s3_imds_done;
    m->refresh.handler = sft_s3_imds_refresh;
    m->refresh.data = m;
    m->refresh.log = m->log;

    if (sft_s3_multi_init(m->log) != SFT_OK) {
        return SFT_ERROR;
    }

    m->step = 0;

    return sft_s3_imds_step(m);
}


void
sft_s3_imds_stop(sft_s3_imds_t *m)
{
    if (m->running) {
        sft_s3_multi_remove(&m->transfer);
        m->running = 0;
    }

    sft_del_timer(&m->refresh);

    if (m->transfer.easy) {
        curl_easy_cleanup(m->transfer.easy);
        m->transfer.easy = NULL;
    }

    curl_slist_free_all(m->slist);
    m->slist = NULL;

    if (m->pool) {
        sft_destroy_pool(m->pool);
        m->pool = NULL;
    }
}


static sft_int_t
sft_s3_imds_step(sft_s3_imds_t *m)
{
    CURL  *easy;
    char   url[1024], header[sizeof("X-aws-ec2-metadata-token: ")
                              + sizeof(m->token)];

    easy = m->transfer.easy;

    curl_easy_reset(easy);
    curl_slist_free_all(m->slist);
    m->slist = NULL;
    m->len = 0;

    if (m->step == 0) {
        snprintf(url, sizeof(url), "%.*s/latest/api/token",
                 SFT_STR_FMT(&m->endpoint));
        snprintf(header, sizeof(header),
                 "X-aws-ec2-metadata-token-ttl-seconds: 21600");
        (void) curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "PUT");

    } else {
        snprintf(url, sizeof(url),
                 "%.*s/latest/meta-data/iam/security-credentials/%s",
                 SFT_STR_FMT(&m->endpoint),
                 m->step == 2 ? (char *) m->role : "");
        snprintf(header, sizeof(header), "X-aws-ec2-metadata-token: %s",
                 (char *) m->token);
    }

    m->slist = curl_slist_append(NULL, header);
    if (m->slist == NULL) {
        return SFT_ERROR;
    }

    (void) curl_easy_setopt(easy, CURLOPT_URL, url);
    (void) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, m->slist);
    (void) curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    (void) curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    (void) curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long) m->timeout);
    (void) curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, sft_s3_imds_write);
    (void) curl_easy_setopt(easy, CURLOPT_WRITEDATA, m);

    if (sft_s3_multi_add(&m->transfer) != SFT_OK) {
        return SFT_ERROR;
    }

    m->running = 1;

    return SFT_OK;
}


static void
sft_s3_imds_done(sft_s3_transfer_t *t, CURLcode rc)
{
    long            status;
    u_char         *eol;
    sft_s3_imds_t  *m;

    m = (sft_s3_imds_t *) t;
    m->running = 0;

    status = 0;
    (void) curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);

    if (rc != CURLE_OK || status != 200 || m->len == 0) {
        sft_log_error(SFT_LOG_ERR, m->log, 0,
                      "instance metadata service \"%.*s\": step %lu "
                      "failed: %s %ld", SFT_STR_FMT(&m->endpoint),
                      (unsigned long) m->step + 1, curl_easy_strerror(rc),
                      status);
        goto failed;
    }

    m->body[m->len] = '\0';

    switch (m->step) {

    case 0:
        if (m->len >= sizeof(m->token)
            || strpbrk((char *) m->body, "\r\n") != NULL)
        {
            goto failed;
        }

        sft_memcpy(m->token, m->body, m->len + 1);
        break;

    case 1:
        eol = (u_char *) strpbrk((char *) m->body, "\r\n");
        if (eol) {
            *eol = '\0';
        }

        if (strlen((char *) m->body) >= sizeof(m->role)
            || m->body[0] == '\0'
            || strpbrk((char *) m->body, "/?#%") != NULL)
        {
            goto failed;
        }

        sft_memcpy(m->role, m->body, strlen((char *) m->body) + 1);
        break;

    default:
        if (sft_s3_imds_keys(m) != SFT_OK) {
            goto failed;
        }

        m->step = 0;
        m->on_update(m, SFT_OK);
        return;
    }

    m->step++;

    if (sft_s3_imds_step(m) == SFT_OK) {
        return;
    }

failed:

    m->step = 0;
    sft_add_timer(&m->refresh, SFT_S3_IMDS_AGAIN);
    m->on_update(m, SFT_ERROR);
}


/* the role's JSON: the keys into a new pool, the refresh timer set */

static sft_int_t
sft_s3_imds_keys(sft_s3_imds_t *m)
{
    time_t           expires;
    json_t          *root;
    sft_int_t        rc;
    sft_str_t        expiration;
    sft_pool_t      *pool;
    sft_s3_creds_t   creds;
    json_error_t     err;

    root = json_loadb((char *) m->body, m->len, JSON_REJECT_DUPLICATES, &err);
    if (root == NULL || !json_is_object(root)) {
        json_decref(root);
        return SFT_ERROR;
    }

    pool = sft_create_pool(1024, m->log);
    if (pool == NULL) {
        json_decref(root);
        return SFT_ERROR;
    }

    sft_memzero(&creds, sizeof(sft_s3_creds_t));

    rc = sft_s3_imds_str(pool, root, "AccessKeyId", &creds.access_key);
    if (rc == SFT_OK) {
        rc = sft_s3_imds_str(pool, root, "SecretAccessKey",
                             &creds.secret_key);
    }
    if (rc == SFT_OK) {
        rc = sft_s3_imds_str(pool, root, "Token", &creds.session_token);
    }
    if (rc == SFT_OK) {
        rc = sft_s3_imds_str(pool, root, "Expiration", &expiration);
    }

    json_decref(root);

    expires = (rc == SFT_OK)
              ? sft_s3_parse_time(expiration.data, expiration.len) : -1;

    if (expires < 0 || creds.secret_key.len > SFT_S3_SECRET_MAX) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    creds.expires = expires;

    if (m->pool) {
        sft_destroy_pool(m->pool);
    }

    m->pool = pool;
    m->creds = creds;

    sft_add_timer(&m->refresh, sft_s3_creds_refresh_in(expires, time(NULL)));

    return SFT_OK;
}


static sft_int_t
sft_s3_imds_str(sft_pool_t *pool, json_t *obj, const char *name,
    sft_str_t *s)
{
    size_t       len;
    const char  *v;

    v = json_string_value(json_object_get(obj, name));
    if (v == NULL) {
        return SFT_ERROR;
    }

    len = strlen(v);
    if (len == 0) {
        return SFT_ERROR;
    }

    s->data = sft_pnalloc(pool, len);
    if (s->data == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(s->data, v, len);
    s->len = len;

    return SFT_OK;
}


static void
sft_s3_imds_refresh(sft_event_t *ev)
{
    sft_s3_imds_t  *m;

    m = ev->data;
    m->step = 0;

    if (sft_s3_imds_step(m) != SFT_OK) {
        sft_add_timer(&m->refresh, SFT_S3_IMDS_AGAIN);
    }
}


static size_t
sft_s3_imds_write(char *buf, size_t size, size_t n, void *data)
{
    size_t          len;
    sft_s3_imds_t  *m = data;

    len = size * n;

    if (len >= SFT_S3_IMDS_BODY_MAX - m->len) {
        return 0;
    }

    sft_memcpy(m->body + m->len, buf, len);
    m->len += len;

    return len;
}
