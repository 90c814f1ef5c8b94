/*
 * sft_s3_sts.c -- AssumeRoleWithWebIdentity on the loop: the token file
 * read on the thread pool (it may have been rotated since the last
 * fetch), an unsigned form POST to STS through the request layer, the
 * answer's keys installed in place, a timer that fetches them again
 * before they expire, and a doubling wait after a failure while the old
 * keys stay.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_sts.h>
#include <sft_s3_creds.h>


#define sft_s3_sts_text(n)   sft_s3_sts_text_(n)
#define sft_s3_sts_text_(n)  #n

/* a token file holds a token and perhaps a line end (CR LF) */
#define SFT_S3_STS_FILE_MAX  (SFT_S3_STS_TOKEN_MAX + 2)

/* a role ARN STS takes is at most this long; a session name 2 to 64 */
#define SFT_S3_STS_ARN_MAX   2048
#define SFT_S3_STS_NAME_MAX  64


struct sft_s3_sts_read_s {
    sft_s3_sts_t        *m;                /* NULL once stopped */
    sft_pool_t          *pool;             /* the read's own */
    sft_thread_task_t   *task;
    char                *path;
    const char          *failed;           /* what is wrong with the file */
    int                  err;
    size_t               len;
    u_char               token[SFT_S3_STS_FILE_MAX + 1];
};


static const char  sft_s3_sts_too_long[] =
    "is longer than " sft_s3_sts_text(SFT_S3_STS_TOKEN_MAX) " bytes";


static sft_int_t sft_s3_sts_fetch(sft_s3_sts_t *m);
static void sft_s3_sts_read_file(void *data, sft_log_t *log);
static void sft_s3_sts_read_done(sft_event_t *ev);
static sft_int_t sft_s3_sts_request(sft_s3_sts_t *m, u_char *token,
    size_t len);
static u_char *sft_s3_sts_param(u_char *p, const char *name,
    sft_str_t *value);
static void sft_s3_sts_done(sft_s3_request_t *r);
static sft_int_t sft_s3_sts_keys(sft_s3_sts_t *m, sft_s3_request_t *r);
static void sft_s3_sts_failed(sft_s3_sts_t *m);
static void sft_s3_sts_refresh(sft_event_t *ev);
static sft_uint_t sft_s3_sts_name_ok(sft_str_t *s, size_t min, size_t max,
    const char *extra);


sft_int_t
sft_s3_sts_conf_check(sft_s3_sts_conf_t *conf, sft_pool_t *pool,
    sft_log_t *log)
{
    u_char  *p;
    size_t   i;

    if (conf->role_arn.len < 4 || conf->role_arn.len > SFT_S3_STS_ARN_MAX
        || sft_strncmp(conf->role_arn.data, "arn:", 4) != 0)
    {
        sft_log_error(SFT_LOG_EMERG, log, 0,
                      "web identity role \"%.*s\" is not an ARN of at most "
                      sft_s3_sts_text(SFT_S3_STS_ARN_MAX) " bytes",
                      SFT_STR_FMT(&conf->role_arn));
        return SFT_ERROR;
    }

    for (i = 0; i < conf->role_arn.len; i++) {
        if (conf->role_arn.data[i] <= ' ' || conf->role_arn.data[i] >= 0x7f) {
            sft_log_error(SFT_LOG_EMERG, log, 0,
                          "web identity role \"%.*s\" has a blank or a "
                          "control character", SFT_STR_FMT(&conf->role_arn));
            return SFT_ERROR;
        }
    }

    if (conf->token_file.len == 0) {
        sft_log_error(SFT_LOG_EMERG, log, 0,
                      "web identity role \"%.*s\" has no token file",
                      SFT_STR_FMT(&conf->role_arn));
        return SFT_ERROR;
    }

    if (conf->session_name.len == 0) {
        sft_str_set(&conf->session_name, SFT_S3_STS_SESSION_NAME);
    }

    if (!sft_s3_sts_name_ok(&conf->session_name, 2, SFT_S3_STS_NAME_MAX,
                            "+=,.@_-"))
    {
        sft_log_error(SFT_LOG_EMERG, log, 0,
                      "web identity session name \"%.*s\" is not 2 to "
                      sft_s3_sts_text(SFT_S3_STS_NAME_MAX) " letters, "
                      "digits or +=,.@_-", SFT_STR_FMT(&conf->session_name));
        return SFT_ERROR;
    }

    if (conf->duration != 0
        && (conf->duration < SFT_S3_STS_DURATION_MIN
            || conf->duration > SFT_S3_STS_DURATION_MAX))
    {
        sft_log_error(SFT_LOG_EMERG, log, 0,
                      "web identity duration %lus is not between "
                      sft_s3_sts_text(SFT_S3_STS_DURATION_MIN) "s and "
                      sft_s3_sts_text(SFT_S3_STS_DURATION_MAX) "s",
                      (unsigned long) conf->duration);
        return SFT_ERROR;
    }

    if (conf->endpoint.len) {
        if ((conf->endpoint.len > 7
             && sft_strncmp(conf->endpoint.data, "http://", 7) == 0)
            || (conf->endpoint.len > 8
                && sft_strncmp(conf->endpoint.data, "https://", 8) == 0))
        {
            return SFT_OK;
        }

        sft_log_error(SFT_LOG_EMERG, log, 0,
                      "STS endpoint \"%.*s\" is not http:// or https://",
                      SFT_STR_FMT(&conf->endpoint));
        return SFT_ERROR;
    }

    /* AWS's own: https://sts.REGION.amazonaws.com */

    if (!sft_s3_sts_name_ok(&conf->region, 1, SFT_S3_STS_NAME_MAX, "-")) {
        sft_log_error(SFT_LOG_EMERG, log, 0,
                      "web identity without an STS endpoint: the region "
                      "\"%.*s\" is not a name", SFT_STR_FMT(&conf->region));
        return SFT_ERROR;
    }

    conf->endpoint.len = sizeof("https://sts.") - 1 + conf->region.len
                         + sizeof(".amazonaws.com") - 1;
    conf->endpoint.data = sft_pnalloc(pool, conf->endpoint.len);
    if (conf->endpoint.data == NULL) {
        return SFT_ERROR;
    }

    p = sft_cpymem(conf->endpoint.data, "https://sts.", 12);
    p = sft_cpymem(p, conf->region.data, conf->region.len);
    sft_memcpy(p, ".amazonaws.com", 14);

    return SFT_OK;
}


/* letters, digits and the extra characters, min to max of them */

static sft_uint_t
sft_s3_sts_name_ok(sft_str_t *s, size_t min, size_t max, const char *extra)
{
    u_char  c;
    size_t  i;

    if (s->len < min || s->len > max) {
        return 0;
    }

    for (i = 0; i < s->len; i++) {
        c = s->data[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || (c && strchr(extra, c))))
        {
            return 0;
        }
    }

    return 1;
}


sft_int_t
sft_s3_sts_conf_env(sft_s3_sts_conf_t *conf, sft_pool_t *pool)
{
    size_t      i;
    sft_str_t  *to[3];
    const char *v[3];

    v[0] = getenv("AWS_ROLE_ARN");
    v[1] = getenv("AWS_WEB_IDENTITY_TOKEN_FILE");
    v[2] = getenv("AWS_ROLE_SESSION_NAME");

    to[0] = &conf->role_arn;
    to[1] = &conf->token_file;
    to[2] = &conf->session_name;

    if (v[0] == NULL || v[1] == NULL || *v[0] == '\0' || *v[1] == '\0') {
        return SFT_DECLINED;
    }

    for (i = 0; i < 3; i++) {
        if (v[i] == NULL) {
            continue;
        }

        to[i]->len = strlen(v[i]);
        to[i]->data = sft_pnalloc(pool, to[i]->len + 1);
        if (to[i]->data == NULL) {
            return SFT_ERROR;
        }

        sft_memcpy(to[i]->data, v[i], to[i]->len + 1);
    }

    return SFT_OK;
}


sft_int_t
sft_s3_sts_start(sft_s3_sts_t *m)
{
    sft_s3_client_t  *cl;

    if (m->conf->endpoint.len == 0 || m->thread_pool == NULL
        || m->pool != NULL)
    {
        return SFT_ERROR;
    }

    m->pool = sft_create_pool(1024, m->log);
    if (m->pool == NULL) {
        return SFT_ERROR;
    }

    cl = &m->client;
    sft_memzero(cl, sizeof(sft_s3_client_t));
    cl->endpoint = m->conf->endpoint;
    cl->region = m->conf->region;
    cl->path_style = 1;
    cl->timeout = m->timeout;
    cl->connect_timeout = m->timeout;
    cl->retries = 2;
    cl->backoff = 200;
    cl->log = m->log;

    m->refresh.handler = sft_s3_sts_refresh;
    m->refresh.data = m;
    m->refresh.log = m->log;

    if (m->again == 0) {
        m->again = SFT_S3_STS_AGAIN;
    }

    m->wait = m->again;

    if (sft_s3_client_init(cl, m->pool) != SFT_OK
        || sft_s3_sts_fetch(m) != SFT_OK)
    {
        sft_s3_sts_stop(m);
        return SFT_ERROR;
    }

    return SFT_OK;
}


void
sft_s3_sts_stop(sft_s3_sts_t *m)
{
    if (m->read) {
        if (sft_thread_task_cancel(m->thread_pool, m->read->task) == SFT_OK) {
            sft_destroy_pool(m->read->pool);

        } else {
            m->read->m = NULL;     /* a thread has it: freed on completion */
        }

        m->read = NULL;
    }

    if (m->request) {
        sft_s3_request_free(m->request);
        m->request = NULL;
    }

    sft_del_timer(&m->refresh);

    if (m->keys_pool) {
        sft_destroy_pool(m->keys_pool);
        m->keys_pool = NULL;
    }

    if (m->pool) {
        sft_destroy_pool(m->pool);
        m->pool = NULL;
    }

    sft_memzero(&m->creds, sizeof(sft_s3_creds_t));
}


/* the token file, read again for each fetch on the thread pool */

static sft_int_t
sft_s3_sts_fetch(sft_s3_sts_t *m)
{
    sft_pool_t          *pool;
    sft_thread_task_t   *task;
    sft_s3_sts_read_t   *rd;

    pool = sft_create_pool(sizeof(sft_s3_sts_read_t) + 4096, m->log);
    if (pool == NULL) {
        return SFT_ERROR;
    }

    task = sft_thread_task_alloc(pool, sizeof(sft_s3_sts_read_t));
    if (task == NULL) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    rd = task->ctx;
    rd->m = m;
    rd->pool = pool;
    rd->task = task;
    rd->path = (char *) sft_pnalloc(pool, m->conf->token_file.len + 1);

    task->handler = sft_s3_sts_read_file;
    task->event.handler = sft_s3_sts_read_done;
    task->event.data = rd;
    task->event.log = m->log;

    if (rd->path == NULL) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    sft_memcpy(rd->path, m->conf->token_file.data, m->conf->token_file.len);
    rd->path[m->conf->token_file.len] = '\0';

    if (sft_thread_task_post(m->thread_pool, task) != SFT_OK) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    m->read = rd;

    return SFT_OK;
}


/*
 * On a thread: the token, a regular file of at most SFT_S3_STS_TOKEN_MAX
 * bytes once trailing blanks and line ends are dropped, read whole.  It may be
 * readable by others (it lives for minutes; Kubernetes mounts it 0644)
 * and a link (Kubernetes swaps the link when it rotates the token).
 */

static void
sft_s3_sts_read_file(void *data, sft_log_t *log)
{
    int                 fd;
    ssize_t             n;
    struct stat         st;
    sft_s3_sts_read_t  *rd = data;

    fd = open(rd->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd == -1) {
        rd->err = errno;
        rd->failed = "cannot be opened";
        return;
    }

    if (fstat(fd, &st) == -1) {
        rd->err = errno;
        rd->failed = "cannot be read";

    } else if (!S_ISREG(st.st_mode)) {
        rd->failed = "is not a regular file";

    } else {
        for ( ;; ) {
            if (rd->len > SFT_S3_STS_FILE_MAX) {
                rd->failed = sft_s3_sts_too_long;
                break;
            }

            n = read(fd, rd->token + rd->len,
                     SFT_S3_STS_FILE_MAX + 1 - rd->len);

            if (n > 0) {
                rd->len += n;
                continue;
            }

            if (n == -1 && errno == EINTR) {
                continue;
            }

            if (n == -1) {
                rd->err = errno;
                rd->failed = "cannot be read";
            }

            break;
        }
    }

    close(fd);

    while (rd->len && (rd->token[rd->len - 1] == '\n'
                       || rd->token[rd->len - 1] == '\r'
                       || rd->token[rd->len - 1] == ' '
                       || rd->token[rd->len - 1] == '\t'))
    {
        rd->len--;
    }

    if (rd->failed == NULL && rd->len > SFT_S3_STS_TOKEN_MAX) {
        rd->failed = sft_s3_sts_too_long;

    } else if (rd->failed == NULL && rd->len == 0) {
        rd->failed = "is empty";
    }
}


static void
sft_s3_sts_read_done(sft_event_t *ev)
{
    sft_int_t           rc;
    sft_s3_sts_t       *m;
    sft_s3_sts_read_t  *rd;

    rd = ev->data;
    m = rd->m;

    if (m == NULL) {
        sft_explicit_memzero(rd->token, rd->len);
        sft_destroy_pool(rd->pool);
        return;
    }

    m->read = NULL;

    if (rd->failed) {
        sft_log_error(SFT_LOG_ERR, m->log, rd->err,
                      "web identity token file \"%s\" %s, no keys for "
                      "role \"%.*s\"", rd->path, rd->failed,
                      SFT_STR_FMT(&m->conf->role_arn));
        rc = SFT_ERROR;

    } else {
        rc = sft_s3_sts_request(m, rd->token, rd->len);
    }

    sft_explicit_memzero(rd->token, rd->len);
    sft_destroy_pool(rd->pool);

    if (rc != SFT_OK) {
        sft_s3_sts_failed(m);
    }
}


/* POST / with the form STS takes, unsigned: the token is the proof */

static sft_int_t
sft_s3_sts_request(sft_s3_sts_t *m, u_char *token, size_t len)
{
    u_char             *p;
    size_t              size;
    sft_str_t           tok, duration;
    sft_s3_request_t   *r;
    sft_s3_sts_conf_t  *conf;
    u_char              num[24];

    static sft_str_t  action = sft_string("AssumeRoleWithWebIdentity");
    static sft_str_t  version = sft_string(SFT_S3_STS_VERSION);

    conf = m->conf;
    tok.data = token;
    tok.len = len;

    duration.data = num;
    duration.len = sft_slprintf(num, num + sizeof(num), "%lu",
                                (unsigned long) conf->duration) - num;

    r = sft_s3_request_create(&m->client);
    if (r == NULL) {
        return SFT_ERROR;
    }

    size = sizeof("Action=&DurationSeconds=&RoleArn=&RoleSessionName="
                  "&Version=&WebIdentityToken=")
           + action.len + duration.len + version.len
           + sft_s3_uri_encode(NULL, &conf->role_arn, 0)
           + sft_s3_uri_encode(NULL, &conf->session_name, 0)
           + sft_s3_uri_encode(NULL, &tok, 0);

    r->body.data = sft_pnalloc(r->pool, size);
    r->headers = sft_palloc(r->pool, sizeof(sft_s3_pair_t));

    if (r->body.data == NULL || r->headers == NULL) {
        sft_s3_request_free(r);
        return SFT_ERROR;
    }

    p = sft_s3_sts_param(r->body.data, "Action", &action);

    if (conf->duration) {
        p = sft_s3_sts_param(p, "DurationSeconds", &duration);
    }

    p = sft_s3_sts_param(p, "RoleArn", &conf->role_arn);
    p = sft_s3_sts_param(p, "RoleSessionName", &conf->session_name);
    p = sft_s3_sts_param(p, "Version", &version);
    p = sft_s3_sts_param(p, "WebIdentityToken", &tok);

    r->body.len = p - r->body.data - 1;        /* the last '&' */

    sft_str_set(&r->method, "POST");
    sft_str_set(&r->key, "");                  /* POST / */
    sft_str_set(&r->headers[0].name, "Content-Type");
    sft_str_set(&r->headers[0].value, "application/x-www-form-urlencoded");
    r->nheaders = 1;
    r->idempotent = 1;                         /* a new set of keys each */
    r->max_response = SFT_S3_STS_BODY_MAX;
    r->on_done = sft_s3_sts_done;
    r->data = m;

    if (sft_s3_request_start(r) != SFT_OK) {
        sft_explicit_memzero(r->body.data, r->body.len);
        sft_s3_request_free(r);
        return SFT_ERROR;
    }

    m->request = r;

    return SFT_OK;
}


/* name=value& with the value URI-encoded */

static u_char *
sft_s3_sts_param(u_char *p, const char *name, sft_str_t *value)
{
    p = sft_cpymem(p, name, strlen(name));
    *p++ = '=';
    p += sft_s3_uri_encode(p, value, 0);
    *p++ = '&';

    return p;
}


static void
sft_s3_sts_done(sft_s3_request_t *r)
{
    sft_int_t      rc;
    sft_s3_sts_t  *m;

    m = r->data;
    m->request = NULL;

    sft_explicit_memzero(r->body.data, r->body.len);

    if (r->rc != SFT_OK) {
        sft_log_error(SFT_LOG_ERR, m->log, 0,
                      "STS \"%.*s\" AssumeRoleWithWebIdentity for role "
                      "\"%.*s\" got no answer: %s",
                      SFT_STR_FMT(&m->conf->endpoint),
                      SFT_STR_FMT(&m->conf->role_arn),
                      r->curl_error[0] ? r->curl_error : "failed");
        rc = SFT_ERROR;

    } else if (r->status != 200) {
        sft_log_error(SFT_LOG_ERR, m->log, 0,
                      "STS \"%.*s\" AssumeRoleWithWebIdentity for role "
                      "\"%.*s\" failed: %ld %.*s: %.*s (request id \"%.*s\")",
                      SFT_STR_FMT(&m->conf->endpoint),
                      SFT_STR_FMT(&m->conf->role_arn), r->status,
                      SFT_STR_FMT(&r->error.code),
                      SFT_STR_FMT(&r->error.message),
                      SFT_STR_FMT(&r->error.request_id));
        rc = SFT_ERROR;

    } else {
        rc = sft_s3_sts_keys(m, r);
    }

    sft_s3_request_free(r);

    if (rc != SFT_OK) {
        sft_s3_sts_failed(m);
        return;
    }

    m->wait = m->again;
    m->on_update(m, SFT_OK);
}


/* the answer's keys into a pool of their own, the refresh timer set */

static sft_int_t
sft_s3_sts_keys(sft_s3_sts_t *m, sft_s3_request_t *r)
{
    sft_int_t        rc;
    sft_pool_t      *pool;
    sft_s3_creds_t   creds;
    sft_s3_error_t   err;

    pool = sft_create_pool(1024, m->log);
    if (pool == NULL) {
        return SFT_ERROR;
    }

    sft_memzero(&err, sizeof(sft_s3_error_t));

    rc = sft_s3_xml_sts(r->response.data, r->response.len, pool, &creds,
                        &err);

    if (rc != SFT_OK) {
        sft_log_error(SFT_LOG_ERR, m->log, 0,
                      "STS \"%.*s\" AssumeRoleWithWebIdentity for role "
                      "\"%.*s\" answered 200 %s%.*s",
                      SFT_STR_FMT(&m->conf->endpoint),
                      SFT_STR_FMT(&m->conf->role_arn),
                      rc == SFT_DECLINED ? "with the error " : "without keys",
                      (int) (rc == SFT_DECLINED ? err.code.len : 0),
                      err.code.data);
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    if (m->keys_pool) {
        sft_destroy_pool(m->keys_pool);
    }

    m->keys_pool = pool;
    m->creds = creds;

    sft_add_timer(&m->refresh,
                  sft_s3_creds_refresh_in(creds.expires, time(NULL)));

    return SFT_OK;
}


/* tried again after a wait that doubles; the old keys, if any, stay */

static void
sft_s3_sts_failed(sft_s3_sts_t *m)
{
    sft_add_timer(&m->refresh, m->wait);
    m->wait = sft_min(2 * m->wait, SFT_S3_STS_AGAIN_MAX);

    m->on_update(m, SFT_ERROR);
}


static void
sft_s3_sts_refresh(sft_event_t *ev)
{
    sft_s3_sts_t  *m;

    m = ev->data;

    if (sft_s3_sts_fetch(m) != SFT_OK) {
        sft_s3_sts_failed(m);
    }
}
