/*
 * test_s3_sts.c -- keys of a role assumed with a web identity token, on a
 * real epoll loop with a thread pool: the configuration checked, the
 * environment read, a token file missing, empty, a directory or too long
 * refused with a line naming it; and, against the moto and the stand-in
 * that t/s3_client.t starts (S3_TEST_ENDPOINT, S3_TEST_FLAKY): keys from
 * moto's STS signing a request to moto's S3, keys refreshed before they
 * expire with the token file read again each time, a failed refresh that
 * keeps the old keys and is tried again, and an STS error logged with its
 * code and leaving no keys.  Its log (stderr) goes to a file it reads.
 */

#include <sft_config.h>
#include <sft_core.h>
#include "sft_tap.h"
#include "sft_test_loop.h"

#include <sft_s3_sts.h>


#define ROLE    "arn:aws:iam::123456789012:role/siftp"


static sft_thread_pool_t   tp;
static char                dir[] = "/tmp/siftpd-test-sts-XXXXXX";
static char                token_path[64], log_path[64];
static sft_uint_t          updates, failures;


static void
on_notify(sft_event_t *ev)
{
    sft_connection_t  *c = ev->data;

    sft_thread_pool_complete(c->data);
}


static void
on_update(sft_s3_sts_t *m, sft_int_t rc)
{
    (void) m;

    sft_test_count(rc, &updates, &failures);
}


static sft_uint_t
is(sft_str_t *s, const char *text)
{
    return s->len == strlen(text) && memcmp(s->data, text, s->len) == 0;
}


/* the token file replaced as Kubernetes rotates it: a new file renamed */

static void
put_token(const char *text)
{
    int   fd;
    char  tmp[80];

    snprintf(tmp, sizeof(tmp), "%s.new", token_path);

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd == -1 || write(fd, text, strlen(text)) != (ssize_t) strlen(text)
        || close(fd) != 0 || rename(tmp, token_path) != 0)
    {
        printf("Bail out! cannot write %s\n", token_path);
        exit(1);
    }
}


/* has the log a line with this text */

static sft_uint_t
logged(const char *text)
{
    int      fd;
    ssize_t  n;
    static char  buf[65536];

    fd = open(log_path, O_RDONLY);
    n = (fd == -1) ? -1 : read(fd, buf, sizeof(buf) - 1);

    if (fd != -1) {
        close(fd);
    }

    if (n < 0) {
        return 0;
    }

    buf[n] = '\0';

    return strstr(buf, text) != NULL;
}


static void
conf_init(sft_s3_sts_conf_t *conf, const char *endpoint, const char *file)
{
    sft_memzero(conf, sizeof(sft_s3_sts_conf_t));
    sft_str_set(&conf->role_arn, ROLE);
    conf->token_file.data = (u_char *) file;
    conf->token_file.len = strlen(file);
    sft_str_set(&conf->region, "us-east-1");

    if (endpoint) {
        conf->endpoint.data = (u_char *) endpoint;
        conf->endpoint.len = strlen(endpoint);
    }
}


static void
sts_init(sft_s3_sts_t *m, sft_s3_sts_conf_t *conf)
{
    sft_memzero(m, sizeof(sft_s3_sts_t));
    m->conf = conf;
    m->thread_pool = &tp;
    m->timeout = 5000;
    m->again = 200;
    m->log = cycle.log;
    m->on_update = on_update;
}


/* a provider on a token file that cannot serve: SFT_ERROR, no keys */

static sft_uint_t
refused(const char *file)
{
    sft_uint_t          ok, before;
    sft_s3_sts_t        m;
    sft_s3_sts_conf_t   conf;

    conf_init(&conf, "http://127.0.0.1:9", file);
    sts_init(&m, &conf);

    before = failures;

    ok = sft_s3_sts_conf_check(&conf, cycle.pool, cycle.log) == SFT_OK
         && sft_s3_sts_start(&m) == SFT_OK
         && spin(10000, &failures, before + 1)
         && m.creds.access_key.len == 0;

    sft_s3_sts_stop(&m);

    return ok;
}


static void
offline(void)
{
    int                 fd;
    char                path[80], big[SFT_S3_STS_TOKEN_MAX + 2];
    sft_uint_t          n, never;
    sft_s3_sts_t        m;
    sft_s3_sts_conf_t   conf;

    never = 0;

    conf_init(&conf, NULL, "/run/token");
    ok(sft_s3_sts_conf_check(&conf, cycle.pool, cycle.log) == SFT_OK
       && is(&conf.endpoint, "https://sts.us-east-1.amazonaws.com")
       && is(&conf.session_name, SFT_S3_STS_SESSION_NAME),
       "no endpoint: AWS's for the region; a default session name");

    conf_init(&conf, NULL, "/run/token");
    sft_str_set(&conf.role_arn, "siftp");
    ok(sft_s3_sts_conf_check(&conf, cycle.pool, cycle.log) == SFT_ERROR
       && logged("web identity role \"siftp\" is not an ARN"),
       "a role that is not an ARN: refused");

    conf_init(&conf, NULL, "/run/token");
    sft_str_set(&conf.session_name, "a b");
    ok(sft_s3_sts_conf_check(&conf, cycle.pool, cycle.log) == SFT_ERROR,
       "a session name with a blank: refused");

    conf_init(&conf, NULL, "/run/token");
    conf.duration = 899;
    ok(sft_s3_sts_conf_check(&conf, cycle.pool, cycle.log) == SFT_ERROR
       && logged("web identity duration 899s is not between 900s and "
                 "43200s"),
       "a duration STS does not take: refused");

    conf_init(&conf, "ftp://127.0.0.1", "/run/token");
    ok(sft_s3_sts_conf_check(&conf, cycle.pool, cycle.log) == SFT_ERROR,
       "an endpoint that is not http(s): refused");

    unsetenv("AWS_ROLE_ARN");
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/run/env-token", 1);
    setenv("AWS_ROLE_SESSION_NAME", "from-env", 1);
    sft_memzero(&conf, sizeof(conf));
    ok(sft_s3_sts_conf_env(&conf, cycle.pool) == SFT_DECLINED,
       "environment without AWS_ROLE_ARN: declined");

    setenv("AWS_ROLE_ARN", ROLE, 1);
    ok(sft_s3_sts_conf_env(&conf, cycle.pool) == SFT_OK
       && is(&conf.role_arn, ROLE)
       && is(&conf.token_file, "/run/env-token")
       && is(&conf.session_name, "from-env"),
       "environment: role, token file and session name");

    /* token files that cannot serve, each refused with a line naming it */

    snprintf(path, sizeof(path), "%s/missing", dir);
    ok(refused(path) && logged("web identity token file \"")
       && logged("/missing\" cannot be opened"),
       "a missing token file: refused, logged");

    snprintf(path, sizeof(path), "%s/empty", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    (void) write(fd, "\n", 1);
    close(fd);
    ok(refused(path) && logged("/empty\" is empty"),
       "a token file with only a line end: refused, logged");

    ok(refused(dir) && logged("\" is not a regular file"),
       "a directory: refused, logged");

    snprintf(path, sizeof(path), "%s/big", dir);
    memset(big, 'a', sizeof(big));
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    (void) write(fd, big, SFT_S3_STS_TOKEN_MAX + 1);
    close(fd);
    ok(refused(path) && logged("/big\" is longer than 20000 bytes"),
       "a token file past 20000 bytes: refused, logged");
    unlink(path);

    /* the longest token STS takes is read whole */

    snprintf(path, sizeof(path), "%s/longest", dir);
    big[SFT_S3_STS_TOKEN_MAX] = '\n';
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    (void) write(fd, big, SFT_S3_STS_TOKEN_MAX + 1);
    close(fd);
    ok(refused(path) && !logged("/longest\" is longer")
       && logged("AssumeRoleWithWebIdentity for role \"" ROLE "\" got no "
                 "answer"),
       "a token of 20000 bytes and a line end: read, then sent");

    unlink(path);
    snprintf(path, sizeof(path), "%s/empty", dir);
    unlink(path);

    /* stopped at once, while a thread may have the file: no callback */

    put_token("t");
    conf_init(&conf, "http://127.0.0.1:9", token_path);
    (void) sft_s3_sts_conf_check(&conf, cycle.pool, cycle.log);
    sts_init(&m, &conf);

    n = updates + failures;
    (void) sft_s3_sts_start(&m);
    sft_s3_sts_stop(&m);
    (void) spin(300, &never, 1);
    ok(updates + failures == n && m.read == NULL && m.request == NULL,
       "stopped while the token file is read: no callback");
}


static sft_uint_t  done_n;


static void
on_done(sft_s3_request_t *r)
{
    (void) r;
    done_n++;
}


/* one request with a body in memory, waited for */

static sft_s3_request_t *
run(sft_s3_client_t *cl, const char *method, const char *key,
    const char *body)
{
    sft_uint_t         n;
    sft_s3_request_t  *r;

    r = sft_s3_request_create(cl);
    r->method.data = (u_char *) method;
    r->method.len = strlen(method);
    r->key.data = (u_char *) key;
    r->key.len = strlen(key);
    r->body.data = (u_char *) body;
    r->body.len = strlen(body);
    r->idempotent = 1;
    r->on_done = on_done;

    n = done_n;

    if (sft_s3_request_start(r) != SFT_OK
        || !spin(60000, &done_n, n + 1))
    {
        r->rc = SFT_ERROR;
    }

    return r;
}


static void
online(const char *moto, const char *standin)
{
    u_char              key[32];
    sft_uint_t          n, f, ok1;
    sft_str_t           first;
    sft_s3_sts_t        m;
    sft_s3_client_t     cl;
    sft_s3_request_t   *r;
    sft_s3_sts_conf_t   conf;

    /* moto's STS: keys that sign requests to moto's S3 */

    put_token("moto-token");
    conf_init(&conf, moto, token_path);
    conf.duration = 900;
    (void) sft_s3_sts_conf_check(&conf, cycle.pool, cycle.log);
    sts_init(&m, &conf);

    n = updates;
    ok(sft_s3_sts_start(&m) == SFT_OK
       && spin(60000, &updates, n + 1)
       && m.creds.access_key.len == 20
       && memcmp(m.creds.access_key.data, "ASIA", 4) == 0
       && m.creds.secret_key.len == 40 && m.creds.session_token.len > 100
       && m.creds.expires > time(NULL) + 600,
       "moto's STS: keys, a session token and an expiry 900 s ahead");

    sft_memzero(&cl, sizeof(cl));
    cl.endpoint.data = (u_char *) moto;
    cl.endpoint.len = strlen(moto);
    sft_str_set(&cl.bucket, "siftp-sts");
    sft_str_set(&cl.region, "us-east-1");
    cl.path_style = 1;
    cl.timeout = 20000;
    cl.connect_timeout = 2000;
    cl.creds = &m.creds;
    cl.log = cycle.log;

    ok1 = 0;

    if (sft_s3_client_init(&cl, cycle.pool) == SFT_OK) {
        r = run(&cl, "PUT", "", "");
        ok1 = (r->rc == SFT_OK && r->status == 200);
        sft_s3_request_free(r);

        r = run(&cl, "PUT", "k", "assumed");
        ok1 &= (r->rc == SFT_OK && r->status == 200);
        sft_s3_request_free(r);

        r = run(&cl, "GET", "k", "");
        ok1 &= (r->rc == SFT_OK && r->status == 200
                && is(&r->response, "assumed"));
        sft_s3_request_free(r);
    }

    ok(ok1, "CreateBucket, PUT and GET signed with them: 200, the bytes");

    sft_s3_sts_stop(&m);

    /* the stand-in's STS: 4 s keys, refreshed 2 s on */

    put_token("first");
    conf_init(&conf, standin, token_path);
    (void) sft_s3_sts_conf_check(&conf, cycle.pool, cycle.log);
    sts_init(&m, &conf);

    n = updates;
    ok(sft_s3_sts_start(&m) == SFT_OK
       && spin(60000, &updates, n + 1)
       && is(&m.creds.secret_key, "sts-secret")
       && is(&m.creds.session_token, "sts-session-first"),
       "unsigned AssumeRoleWithWebIdentity with the file's token");

    first.len = sft_min(m.creds.access_key.len, sizeof(key));
    first.data = key;
    sft_memcpy(key, m.creds.access_key.data, first.len);

    f = failures;
    put_token("second");
    ok(spin(60000, &updates, n + 2) && failures == f
       && is(&m.creds.session_token, "sts-session-second")
       && !(m.creds.access_key.len == first.len
            && memcmp(m.creds.access_key.data, key, first.len) == 0),
       "refreshed before they expire, the rotated token file read again");

    put_token("rejected");
    n = failures;
    ok(spin(60000, &failures, n + 1)
       && is(&m.creds.session_token, "sts-session-second")
       && logged("STS \"")
       && logged("\" AssumeRoleWithWebIdentity for role \"" ROLE "\" "
                 "failed: 400 InvalidIdentityToken: Incorrect token "
                 "audience (request id \"standin-sts\")"),
       "a refresh STS refuses: logged with its code, the old keys kept");

    put_token("third");
    n = updates;
    ok(spin(60000, &updates, n + 1)
       && is(&m.creds.session_token, "sts-session-third"),
       "tried again after a wait: new keys");

    sft_s3_sts_stop(&m);

    /* refused from the start: no keys at all */

    put_token("rejected");
    conf_init(&conf, standin, token_path);
    sft_str_set(&conf.role_arn, "arn:aws:iam::123456789012:role/other");
    (void) sft_s3_sts_conf_check(&conf, cycle.pool, cycle.log);
    sts_init(&m, &conf);

    n = failures;
    ok(sft_s3_sts_start(&m) == SFT_OK
       && spin(60000, &failures, n + 1)
       && m.creds.access_key.len == 0 && m.creds.session_token.len == 0,
       "an STS error at the first fetch: no keys");

    ok(logged("for role \"arn:aws:iam::123456789012:role/other\" failed: "
              "400 InvalidIdentityToken"),
       "and one line naming the endpoint, the role and STS's code");

    sft_s3_sts_stop(&m);
}


int
main(void)
{
    char         *moto, *standin;
    sft_uint_t    planned;

    moto = getenv("S3_TEST_ENDPOINT");
    standin = getenv("S3_TEST_FLAKY");

    planned = 13 + ((moto && standin) ? 8 : 0);
    printf("1..%lu\n", (unsigned long) planned);

    if (mkdtemp(dir) == NULL) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }

    snprintf(token_path, sizeof(token_path), "%s/token", dir);
    snprintf(log_path, sizeof(log_path), "%s/log", dir);

    if (freopen(log_path, "w", stderr) == NULL) {
        printf("Bail out! %s\n", log_path);
        return 1;
    }

    sft_test_loop_init();

    sft_str_set(&tp.name, "default");
    tp.threads = 1;
    tp.max_queue = 16;

    if (sft_thread_pool_start(&tp, cycle.log) != SFT_OK
        || sft_event_add_notify(&cycle, tp.notify_fd, on_notify, &tp) == NULL)
    {
        printf("Bail out! no event loop or thread pool\n");
        return 1;
    }

    offline();

    if (moto && standin) {
        online(moto, standin);
    }

    sft_thread_pool_stop(&tp);
    sft_s3_multi_done();

    unlink(token_path);
    unlink(log_path);
    rmdir(dir);

    sft_destroy_pool(cycle.pool);

    return failed ? 1 : 0;
}
