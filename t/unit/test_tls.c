/*
 * test_tls.c -- the non-blocking TLS layer against an OpenSSL client in
 * the same process over loopback TCP, driven by poll(): handshake, 1 MiB
 * echo with random partial reads and writes, close_notify, session
 * resumption and the FTPS data-connection identity check, protocol
 * restrictions, garbage instead of a ClientHello, and client certificates
 * (made with the openssl CLI) mapped to user names by each rule; data
 * connections made without session tickets, and a client that offers the
 * newest session it was given (curl) resuming data connection after data
 * connection; records sealed by siftpd
 * (SFT_SSL_SEAL) with each AEAD of TLS 1.3 and 1.2, a KeyUpdate refused.
 * The server side runs as siftpd does (siftp's AES-GCM provider where the
 * CPU has the kernel); the client keeps OpenSSL's default provider.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event_openssl.h>
#include <poll.h>
#include <sys/time.h>
#include "sft_tap.h"


#define ECHO_BYTES  (1024 * 1024)


typedef struct {
    sft_connection_t   c;
    sft_event_t        rev;
    sft_event_t        wev;
    int                done;      /* the handler was called */

    /* echo state */
    u_char            *buf;
    size_t             len;
    size_t             pos;
    size_t             last;      /* size of a send that said AGAIN */
    int                eof;
    int                failed;
    int                shutdown;  /* 1: started, 2: done */
} tconn_t;


static sft_log_t       tlog;
static sft_log_file_t  tlog_file;
static char            tlog_path[PATH_MAX];
static char            tmpdir[] = "/tmp/sft_tls.XXXXXX";
static sft_uint_t      hs_flags;      /* handshake()'s extra flags */
static int             tickets;       /* NewSessionTickets a client got */


static double
now(void)
{
    struct timeval  tv;

    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec / 1e6;
}


static int
tcp_pair(int *cfd, int *sfd)
{
    int                 ls, fl;
    socklen_t           len;
    struct sockaddr_in  sin;

    ls = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    if (bind(ls, (struct sockaddr *) &sin, sizeof(sin)) == -1
        || listen(ls, 4) == -1)
    {
        close(ls);
        return -1;
    }

    len = sizeof(sin);
    getsockname(ls, (struct sockaddr *) &sin, &len);

    *cfd = socket(AF_INET, SOCK_STREAM, 0);

    if (connect(*cfd, (struct sockaddr *) &sin, sizeof(sin)) == -1) {
        close(ls);
        return -1;
    }

    *sfd = accept(ls, NULL, NULL);
    close(ls);

    fl = fcntl(*cfd, F_GETFL);
    fcntl(*cfd, F_SETFL, fl | O_NONBLOCK);
    fl = fcntl(*sfd, F_GETFL);
    fcntl(*sfd, F_SETFL, fl | O_NONBLOCK);

    return *sfd == -1 ? -1 : 0;
}


static void
handler_done(sft_connection_t *c)
{
    tconn_t  *t = (tconn_t *) c;

    t->done = 1;
}


static void
tconn_init(tconn_t *t, int fd)
{
    memset(t, 0, sizeof(tconn_t));

    t->c.read = &t->rev;
    t->c.write = &t->wev;
    t->rev.data = &t->c;
    t->wev.data = &t->c;
    t->wev.write = 1;
    t->rev.log = &tlog;
    t->wev.log = &tlog;
    t->c.fd = fd;
    t->c.log = &tlog;
    t->c.recv = sft_recv;
    t->c.send = sft_send;
    t->c.addr_text.data = (u_char *) "127.0.0.1:test";
    t->c.addr_text.len = sizeof("127.0.0.1:test") - 1;
    t->rev.ready = 1;
    t->wev.ready = 1;
}


static void
tconn_free(tconn_t *t)
{
    sft_ssl_free_connection(&t->c);
    close(t->c.fd);
    free(t->buf);
}


/* what epoll would do: post the events poll() reports */

static void
deliver(tconn_t *t, int ms)
{
    struct pollfd  pfd;

    pfd.fd = t->c.fd;
    pfd.events = POLLIN | POLLOUT;

    if (poll(&pfd, 1, ms) <= 0) {
        return;
    }

    if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
        t->rev.ready = 1;
        t->rev.handler(&t->rev);
    }

    if ((pfd.revents & POLLOUT) && t->wev.handler) {
        t->wev.ready = 1;
        t->wev.handler(&t->wev);
    }
}


/* both handshakes; rc of the server's: SFT_OK or SFT_ERROR */

static sft_int_t
handshake(sft_ssl_t *ssl, tconn_t *t, SSL *cl, int *client_rc)
{
    int        n, err, cdone;
    double     deadline;
    sft_int_t  rc;

    if (sft_ssl_create_connection(ssl, &t->c, SFT_SSL_SERVER|hs_flags)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    t->c.ssl->handler = handler_done;

    rc = sft_ssl_handshake(&t->c);
    cdone = 0;
    *client_rc = 0;
    deadline = now() + 3;

    while (now() < deadline) {
        if (!cdone) {
            n = SSL_do_handshake(cl);
            err = SSL_get_error(cl, n);

            if (n == 1) {
                cdone = 1;
                *client_rc = 1;

            } else if (err != SSL_ERROR_WANT_READ
                       && err != SSL_ERROR_WANT_WRITE)
            {
                cdone = 1;
                *client_rc = -1;
                ERR_clear_error();
            }
        }

        if (rc == SFT_AGAIN && t->done) {
            rc = t->c.ssl->handshaked ? SFT_OK : SFT_ERROR;
        }

        if (rc != SFT_AGAIN && cdone) {
            return rc;
        }

        if (rc == SFT_AGAIN) {
            deliver(t, 1);
        }
    }

    return SFT_AGAIN;
}


/* the server's echo: read into a buffer, send it back, shut down at EOF */

static void
echo_handler(sft_event_t *ev)
{
    size_t             n, want;
    ssize_t            r;
    tconn_t           *t;
    sft_connection_t  *c;

    c = ev->data;
    t = (tconn_t *) c;

    for ( ;; ) {
        if (t->pos < t->len) {
            want = t->len - t->pos;
            n = 1 + random() % (64 * 1024);

            if (t->last) {
                n = t->last;          /* the contract after SFT_AGAIN */
            }

            if (n > want) {
                n = want;
            }

            r = c->send(c, t->buf + t->pos, n);

            if (r == SFT_AGAIN) {
                t->last = n;
                return;
            }

            if (r < 0) {
                t->failed = 1;
                return;
            }

            t->last = ((size_t) r < n) ? n - r : 0;
            t->pos += r;
            continue;
        }

        if (t->eof) {
            return;
        }

        if (!c->read->ready) {
            return;
        }

        t->len = 0;
        t->pos = 0;
        r = c->recv(c, t->buf, 1 + random() % (64 * 1024));

        if (r == SFT_AGAIN) {
            return;
        }

        if (r == 0) {
            t->eof = 1;
            return;
        }

        if (r < 0) {
            t->failed = 1;
            return;
        }

        t->len = r;
    }
}


/* the client sends "total" random bytes and checks the echo */

static int
echo(tconn_t *t, SSL *cl, size_t total)
{
    int       n, err;
    size_t    sent, got, want, wlen;
    u_char   *out, *in;
    double    deadline;

    out = malloc(total);
    in = malloc(total);
    free(t->buf);                     /* a connection may echo again */
    t->buf = malloc(64 * 1024);

    for (sent = 0; sent < total; sent++) {
        out[sent] = (u_char) random();
    }

    t->rev.handler = echo_handler;
    t->wev.handler = echo_handler;

    sent = 0;
    got = 0;
    wlen = 0;
    deadline = now() + 5;

    while (got < total && now() < deadline && !t->failed) {
        if (sent < total) {
            want = total - sent;

            if (wlen == 0) {
                wlen = 1 + random() % (48 * 1024);
            }

            if (wlen > want) {
                wlen = want;
            }

            n = SSL_write(cl, out + sent, wlen);

            if (n > 0) {
                sent += n;
                wlen = 0;

            } else {
                err = SSL_get_error(cl, n);
                if (err != SSL_ERROR_WANT_WRITE && err != SSL_ERROR_WANT_READ)
                {
                    break;
                }
            }
        }

        n = SSL_read(cl, in + got, total - got);

        if (n > 0) {
            got += n;

        } else {
            err = SSL_get_error(cl, n);
            if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
                break;
            }
        }

        deliver(t, 0);
    }

    n = (got == total && memcmp(in, out, total) == 0);

    free(out);
    free(in);

    return n;
}


static void
shutdown_handler(sft_event_t *ev)
{
    tconn_t  *t = (tconn_t *) ev->data;

    (void) t;
}


static SSL *
client_new(SSL_CTX *cctx, int fd, SSL_SESSION *sess)
{
    SSL  *cl;

    cl = SSL_new(cctx);
    SSL_set_fd(cl, fd);
    SSL_set_connect_state(cl);
    SSL_set_tlsext_host_name(cl, "localhost");

    if (sess) {
        SSL_set_session(cl, sess);
    }

    return cl;
}


static int
log_has(const char *s)
{
    int     found;
    char    buf[65536];
    FILE   *f;
    size_t  n;

    f = fopen(tlog_path, "r");
    if (f == NULL) {
        return 0;
    }

    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);

    found = strstr(buf, s) != NULL;

    return found;
}


static SSL_CTX *
client_ctx(int max_version)
{
    SSL_CTX  *cctx;

    cctx = SSL_CTX_new_ex(NULL, "?provider=default", TLS_client_method());
    SSL_CTX_set_mode(cctx, SSL_MODE_ENABLE_PARTIAL_WRITE
                           | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_session_cache_mode(cctx, SSL_SESS_CACHE_CLIENT);

    if (max_version) {
        SSL_CTX_set_max_proto_version(cctx, max_version);
    }

    return cctx;
}


/* a "control" connection with an echo, then data connections resuming */

static void
resumption(sft_ssl_t *ssl, int max_version, const char *what)
{
    int           cfd[4], sfd[4], crc, i;
    char          name[128];
    SSL          *cl[4];
    SSL_CTX      *cctx;
    tconn_t       t[4];
    SSL_SESSION  *sess, *other;

    cctx = client_ctx(max_version);

    for (i = 0; i < 4; i++) {
        tcp_pair(&cfd[i], &sfd[i]);
        tconn_init(&t[i], sfd[i]);
    }

    /* 0: the control connection */
    cl[0] = client_new(cctx, cfd[0], NULL);
    handshake(ssl, &t[0], cl[0], &crc);
    ok(echo(&t[0], cl[0], 1000), "control connection echo");
    sess = SSL_get1_session(cl[0]);

    snprintf(name, sizeof(name), "%s: fresh control connection not reused",
             what);
    ok(!sft_ssl_session_reused(&t[0].c), name);

    /* 1: a data connection resuming the control session */
    cl[1] = client_new(cctx, cfd[1], sess);
    handshake(ssl, &t[1], cl[1], &crc);

    snprintf(name, sizeof(name), "%s: data connection resumed (%s)", what,
             sft_ssl_protocol(&t[1].c));
    ok(sft_ssl_session_reused(&t[1].c) == 1 && SSL_session_reused(cl[1]),
       name);

    snprintf(name, sizeof(name), "%s: same session as the control", what);
    ok(sft_ssl_same_session(&t[1].c, &t[0].c) == 1, name);

    /* 2: a fresh data connection, 3: another client's resumed session */
    cl[2] = client_new(cctx, cfd[2], NULL);
    handshake(ssl, &t[2], cl[2], &crc);
    (void) echo(&t[2], cl[2], 10);
    other = SSL_get1_session(cl[2]);

    snprintf(name, sizeof(name), "%s: fresh connection not reused", what);
    ok(sft_ssl_session_reused(&t[2].c) == 0
       && sft_ssl_same_session(&t[2].c, &t[0].c) == 0, name);

    cl[3] = client_new(cctx, cfd[3], other);
    handshake(ssl, &t[3], cl[3], &crc);

    snprintf(name, sizeof(name),
             "%s: other client's session resumed but refused", what);
    ok(sft_ssl_session_reused(&t[3].c) == 1
       && sft_ssl_same_session(&t[3].c, &t[0].c) == 0
       && sft_ssl_same_session(&t[3].c, &t[2].c) == 1, name);

    SSL_SESSION_free(sess);
    SSL_SESSION_free(other);

    for (i = 0; i < 4; i++) {
        SSL_free(cl[i]);
        close(cfd[i]);
        tconn_free(&t[i]);
    }

    SSL_CTX_free(cctx);
}


/* SFT_SSL_NO_TICKETS: a data connection resumes, and gets no ticket */

static int
count_ticket(SSL *ssl, SSL_SESSION *sess)
{
    tickets++;
    return 0;
}


static void
data_tickets(sft_ssl_t *ssl)
{
    int           cfd[2], sfd[2], crc, before;
    SSL          *cl[2];
    SSL_CTX      *cctx;
    tconn_t       t[2];
    SSL_SESSION  *sess;

    cctx = client_ctx(0);
    SSL_CTX_sess_set_new_cb(cctx, count_ticket);

    tcp_pair(&cfd[0], &sfd[0]);
    tconn_init(&t[0], sfd[0]);
    cl[0] = client_new(cctx, cfd[0], NULL);
    handshake(ssl, &t[0], cl[0], &crc);
    (void) echo(&t[0], cl[0], 1000);
    sess = SSL_get1_session(cl[0]);

    ok(tickets > 0, "control connection: tickets issued");

    before = tickets;
    hs_flags = SFT_SSL_NO_TICKETS;

    tcp_pair(&cfd[1], &sfd[1]);
    tconn_init(&t[1], sfd[1]);
    cl[1] = client_new(cctx, cfd[1], sess);
    handshake(ssl, &t[1], cl[1], &crc);
    ok(echo(&t[1], cl[1], 1000), "no-tickets data connection echo");

    hs_flags = 0;

    ok(sft_ssl_same_session(&t[1].c, &t[0].c) == 1 && tickets == before,
       "no-tickets data connection: resumed, no ticket sent");

    SSL_SESSION_free(sess);
    SSL_free(cl[0]);
    SSL_free(cl[1]);
    close(cfd[0]);
    close(cfd[1]);
    tconn_free(&t[0]);
    tconn_free(&t[1]);
    SSL_CTX_free(cctx);
}


/*
 * A client that offers on each data connection the newest session it was
 * given, as curl does: OpenSSL's client cache marks a TLS 1.3 session not
 * resumable once it resumed, so the second data connection resumes only
 * with a ticket the control connection sent before it (the PASV reply).
 */

static SSL_SESSION  *newest;

static int
keep_newest(SSL *ssl, SSL_SESSION *sess)
{
    SSL_SESSION_free(newest);
    newest = sess;
    return 1;
}


static void
newest_session(sft_ssl_t *ssl, int max_version, const char *what)
{
    int       cfd[3], sfd[3], crc, i;
    char      name[128];
    SSL      *cl[3];
    SSL_CTX  *cctx;
    tconn_t   t[3];

    cctx = client_ctx(max_version);
    SSL_CTX_set_session_cache_mode(cctx, SSL_SESS_CACHE_CLIENT
                                         |SSL_SESS_CACHE_NO_INTERNAL);
    SSL_CTX_sess_set_new_cb(cctx, keep_newest);

    for (i = 0; i < 3; i++) {
        tcp_pair(&cfd[i], &sfd[i]);
        tconn_init(&t[i], sfd[i]);
    }

    cl[0] = client_new(cctx, cfd[0], NULL);
    handshake(ssl, &t[0], cl[0], &crc);
    (void) echo(&t[0], cl[0], 1000);

    hs_flags = SFT_SSL_NO_TICKETS;

    for (i = 1; i < 3; i++) {
        /* the reply before the data connection */
        sft_ssl_renew_session(&t[0].c);
        (void) echo(&t[0], cl[0], 100);

        cl[i] = client_new(cctx, cfd[i], newest);
        handshake(ssl, &t[i], cl[i], &crc);
        (void) echo(&t[i], cl[i], 100);

        snprintf(name, sizeof(name),
                 "%s: data connection %d resumed the newest session", what,
                 i);
        ok(sft_ssl_same_session(&t[i].c, &t[0].c) == 1, name);
    }

    hs_flags = 0;

    SSL_SESSION_free(newest);
    newest = NULL;

    for (i = 0; i < 3; i++) {
        SSL_free(cl[i]);
        close(cfd[i]);
        tconn_free(&t[i]);
    }

    SSL_CTX_free(cctx);
}


/* client certificates: a handshake, then what each login rule says */

static sft_uint_t
login_rule(sft_ssl_t *ssl, SSL_CTX *cctx, sft_uint_t verify, sft_uint_t rule,
    sft_uint_t login, const char *user)
{
    int             cfd, sfd, crc;
    SSL            *cl;
    tconn_t         t;
    sft_str_t       u;
    sft_uint_t      r;
    sft_ssl_conf_t  conf;

    tcp_pair(&cfd, &sfd);
    tconn_init(&t, sfd);
    cl = client_new(cctx, cfd, NULL);

    r = 99;

    if (handshake(ssl, &t, cl, &crc) == SFT_OK) {
        sft_ssl_conf_init(&conf);
        conf.verify_client = verify;
        conf.client_user = rule;
        conf.client_login = login;

        u.data = (u_char *) user;
        u.len = strlen(user);

        r = sft_ssl_client_user(&t.c, &conf, &u, &tlog);
    }

    SSL_free(cl);
    close(cfd);
    tconn_free(&t);

    return r;
}


static void
client_certificates(const char *cert, const char *key)
{
    int         n;
    char        cmd[4 * PATH_MAX], ca[PATH_MAX], ccert[PATH_MAX];
    char        ckey[PATH_MAX];
    SSL_CTX    *with, *without;
    sft_ssl_t   ssl;

    snprintf(ca, sizeof(ca), "%s/ca.pem", tmpdir);
    snprintf(ccert, sizeof(ccert), "%s/client.pem", tmpdir);
    snprintf(ckey, sizeof(ckey), "%s/client.key", tmpdir);

    snprintf(cmd, sizeof(cmd),
             "cd %s && openssl req -x509 -newkey ec "
             "-pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key "
             "-out ca.pem -days 2 -subj /CN=ca 2>/dev/null "
             "&& openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
             "-nodes -keyout client.key -out client.csr -subj /CN=carol "
             "-addext subjectAltName=email:carol@example.com 2>/dev/null "
             "&& openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
             "-CAcreateserial -days 2 -copy_extensions copy "
             "-out client.pem 2>/dev/null", tmpdir);

    n = system(cmd);

    if (n != 0) {
        printf("ok %lu # skip no openssl CLI\n", ++tests);
        return;
    }

    ok(sft_ssl_create(&ssl, 0, &tlog) == SFT_OK
       && sft_ssl_certificate(&ssl, cert, key, "") == SFT_OK
       && sft_ssl_client_certificate(&ssl, ca, SFT_SSL_VERIFY_OPTIONAL)
          == SFT_OK,
       "client certificate CAs loaded");

    with = client_ctx(0);
    SSL_CTX_use_certificate_file(with, ccert, SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(with, ckey, SSL_FILETYPE_PEM);
    without = client_ctx(0);

    ok(login_rule(&ssl, with, SFT_SSL_VERIFY_ON, SFT_SSL_USER_OFF,
                  SFT_SSL_LOGIN_PASSWORD, "anyone")
       == SFT_SSL_CLIENT_PASSWORD,
       "no client_user: any verified certificate, then the password");
    ok(login_rule(&ssl, with, SFT_SSL_VERIFY_ON, SFT_SSL_USER_SUBJECT_CN,
                  SFT_SSL_LOGIN_PASSWORD, "carol")
       == SFT_SSL_CLIENT_PASSWORD,
       "subject_cn names the user: the password next");
    ok(login_rule(&ssl, with, SFT_SSL_VERIFY_ON, SFT_SSL_USER_SUBJECT_CN,
                  SFT_SSL_LOGIN_CERTIFICATE, "carol")
       == SFT_SSL_CLIENT_LOGIN,
       "subject_cn, client_login certificate: logged in");
    ok(login_rule(&ssl, with, SFT_SSL_VERIFY_ON, SFT_SSL_USER_SUBJECT_CN,
                  SFT_SSL_LOGIN_CERTIFICATE, "dave")
       == SFT_SSL_CLIENT_REFUSED
       && log_has("client certificate of \"carol\" used for \"dave\""),
       "subject_cn: another user refused, logged");
    ok(login_rule(&ssl, with, SFT_SSL_VERIFY_ON, SFT_SSL_USER_SAN_EMAIL,
                  SFT_SSL_LOGIN_CERTIFICATE, "carol@example.com")
       == SFT_SSL_CLIENT_LOGIN,
       "san_email names the user");
    ok(login_rule(&ssl, with, SFT_SSL_VERIFY_ON, SFT_SSL_USER_SAN_EMAIL,
                  SFT_SSL_LOGIN_CERTIFICATE, "carol")
       == SFT_SSL_CLIENT_REFUSED,
       "san_email: the CN is not the e-mail");
    ok(login_rule(&ssl, without, SFT_SSL_VERIFY_OPTIONAL,
                  SFT_SSL_USER_SUBJECT_CN, SFT_SSL_LOGIN_CERTIFICATE,
                  "carol")
       == SFT_SSL_CLIENT_PASSWORD,
       "optional, no certificate: the password");
    ok(login_rule(&ssl, without, SFT_SSL_VERIFY_ON, SFT_SSL_USER_OFF,
                  SFT_SSL_LOGIN_PASSWORD, "carol")
       == SFT_SSL_CLIENT_REFUSED
       && log_has("without a verified client certificate refused"),
       "on, no certificate: refused");

    SSL_CTX_free(with);
    SSL_CTX_free(without);
    sft_ssl_cleanup_ctx(&ssl);
}


/*
 * SFT_SSL_SEAL: the records are sealed by siftpd (no kTLS here), with
 * each TLS 1.3 suite and each TLS 1.2 AEAD suite (the server's Finished
 * too, on TLS 1.2); an echo the client decrypts; a KeyUpdate the client
 * asks for fails the connection instead of sealing with a stale key
 */

static void
sealed(sft_ssl_t *ssl, const char *suite, const char *tls12,
    sft_uint_t want)
{
    int       cfd, sfd, crc, n;
    char      what[128];
    SSL      *cl;
    double    deadline;
    SSL_CTX  *cctx;
    tconn_t   t;
    u_char    b[4096];

    cctx = client_ctx(tls12 ? TLS1_2_VERSION : 0);

    if (suite) {
        SSL_CTX_set_ciphersuites(cctx, suite);

    } else {
        SSL_CTX_set_cipher_list(cctx, tls12);
        suite = tls12;
    }

    tcp_pair(&cfd, &sfd);
    tconn_init(&t, sfd);
    cl = client_new(cctx, cfd, NULL);

    hs_flags = SFT_SSL_SEAL|SFT_SSL_NO_TICKETS;
    (void) handshake(ssl, &t, cl, &crc);
    hs_flags = 0;

    snprintf(what, sizeof(what), "%s: records sealed by %s", suite,
             want == SFT_SSL_SEALED_SIFTPD ? "siftpd" : "OpenSSL");
    ok(crc == 1 && sft_ssl_sealed_by(&t.c) == want, what);

    snprintf(what, sizeof(what), "%s: 1 MiB echo the client decrypts",
             suite);
    ok(echo(&t, cl, ECHO_BYTES), what);

    if (strcmp(suite, "TLS_AES_256_GCM_SHA384") == 0) {

        /* the client asks for a key update, then sends more to echo */

        ok(SSL_key_update(cl, SSL_KEY_UPDATE_REQUESTED) == 1
           && SSL_write(cl, "after", 5) == 5, "client: KeyUpdate sent");

        t.eof = 0;
        t.failed = 0;
        deadline = now() + 3;
        n = 0;

        while (now() < deadline && !t.failed) {
            deliver(&t, 0);
            n = SSL_read(cl, b, sizeof(b));

            if (n > 0) {
                break;
            }
        }

        ok(t.failed && n <= 0,
           "KeyUpdate on sealed records: the server's write fails, "
           "nothing sealed with the old key");
        ok(log_has("TLS key update on a connection whose records")
           && !log_has("[crit]"), "and says why, not at crit");
    }

    SSL_free(cl);
    close(cfd);
    tconn_free(&t);
    SSL_CTX_free(cctx);
}


int
main(void)
{
    int           cfd, sfd, crc, n;
    char          cert[PATH_MAX], key[PATH_MAX], cmd[PATH_MAX + 16];
    SSL          *cl;
    double        start, deadline;
    SSL_CTX      *cctx;
    tconn_t       t;
    sft_int_t     rc;
    sft_ssl_t     ssl, ssl12;
    struct stat   st;

    signal(SIGPIPE, SIG_IGN);
    srandom(12345);
    start = now();

    sft_ssl_gcm_register();

    if (mkdtemp(tmpdir) == NULL) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }

    snprintf(tlog_path, sizeof(tlog_path), "%s/error.log", tmpdir);
    tlog_file.fd = open(tlog_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    tlog_file.name.data = (u_char *) tlog_path;
    tlog_file.name.len = strlen(tlog_path);
    tlog.file = &tlog_file;
    tlog.log_level = SFT_LOG_INFO;

    snprintf(cert, sizeof(cert), "%s/a/b/cert.pem", tmpdir);
    snprintf(key, sizeof(key), "%s/a/key.pem", tmpdir);

    /* self-signed certificate */

    ok(sft_ssl_generate_self_signed(cert, key, &tlog) == SFT_OK,
       "self-signed certificate generated, directories created");
    ok(stat(key, &st) == 0 && (st.st_mode & 0777) == 0600, "key mode 0600");
    ok(log_has("SHA-256 fingerprint") && log_has("[warn]"),
       "fingerprint logged as a warning");

    ok(sft_ssl_create(&ssl, 0, &tlog) == SFT_OK, "server context created");
    ok(sft_ssl_certificate(&ssl, cert, key, "") == SFT_OK,
       "certificate and key loaded");

    /* handshake, echo both ways, server-initiated close_notify */

    cctx = client_ctx(0);
    tcp_pair(&cfd, &sfd);
    tconn_init(&t, sfd);
    cl = client_new(cctx, cfd, NULL);

    rc = handshake(&ssl, &t, cl, &crc);
    ok(rc == SFT_OK && crc == 1, "handshake");
    ok(strcmp(sft_ssl_protocol(&t.c), "TLSv1.3") == 0, "TLSv1.3 by default");
    ok(t.c.recv == sft_ssl_recv && t.c.send == sft_ssl_send,
       "connection switched to TLS I/O");

    printf("# %s %s, kTLS send %d recv %d\n", sft_ssl_protocol(&t.c),
           sft_ssl_cipher(&t.c), (int) t.c.ssl->ktls_send,
           (int) t.c.ssl->ktls_recv);

    ok(echo(&t, cl, ECHO_BYTES), "1 MiB echo, random partial writes");

    t.rev.handler = shutdown_handler;
    t.wev.handler = shutdown_handler;
    t.c.ssl->handler = handler_done;
    t.done = 0;

    rc = sft_ssl_shutdown(&t.c);
    ok(rc == SFT_AGAIN, "server close_notify sent, waits for the peer's");

    deadline = now() + 3;
    n = 0;

    while (now() < deadline && !t.done) {
        if (n == 0) {
            char  b[16];

            n = SSL_read(cl, b, sizeof(b));
            if (n <= 0 && SSL_get_error(cl, n) == SSL_ERROR_ZERO_RETURN) {
                n = 1;
                SSL_shutdown(cl);

            } else {
                n = 0;
            }
        }

        deliver(&t, 1);
    }

    ok(n == 1, "client got close_notify");
    ok(t.done && sft_ssl_shutdown(&t.c) == SFT_OK,
       "server got the client's close_notify");

    SSL_free(cl);
    close(cfd);
    tconn_free(&t);

    /* client-initiated close: recv() returns 0 */

    tcp_pair(&cfd, &sfd);
    tconn_init(&t, sfd);
    cl = client_new(cctx, cfd, NULL);
    (void) handshake(&ssl, &t, cl, &crc);
    SSL_shutdown(cl);

    deadline = now() + 3;
    rc = SFT_AGAIN;

    while (now() < deadline && rc == SFT_AGAIN) {
        u_char  b[16];

        usleep(1000);
        rc = t.c.recv(&t.c, b, sizeof(b));
    }

    ok(rc == 0 && t.rev.eof, "close_notify from the client: recv() 0");
    ok(sft_ssl_shutdown(&t.c) == SFT_OK, "shutdown after the peer's");

    SSL_free(cl);
    close(cfd);
    tconn_free(&t);
    SSL_CTX_free(cctx);

    /* resumption: TLS 1.3 tickets, TLS 1.2 tickets, TLS 1.2 cache */

    resumption(&ssl, 0, "TLSv1.3");
    resumption(&ssl, TLS1_2_VERSION, "TLSv1.2 tickets");
    data_tickets(&ssl);
    newest_session(&ssl, 0, "TLSv1.3");
    newest_session(&ssl, TLS1_2_VERSION, "TLSv1.2 tickets");

    ok(sft_ssl_create(&ssl12, 0, &tlog) == SFT_OK
       && sft_ssl_certificate(&ssl12, cert, key, "") == SFT_OK
       && sft_ssl_session_cache(&ssl12, 100, 300, 0) == SFT_OK,
       "context without tickets");

    resumption(&ssl12, TLS1_2_VERSION, "TLSv1.2 session cache");
    resumption(&ssl12, 0, "TLSv1.3 stateful");
    newest_session(&ssl12, 0, "TLSv1.3 stateful");
    newest_session(&ssl12, TLS1_2_VERSION, "TLSv1.2 session cache");
    sft_ssl_cleanup_ctx(&ssl12);

    /* a TLS 1.1 client is refused */

    cctx = SSL_CTX_new_ex(NULL, "?provider=default", TLS_client_method());
    SSL_CTX_set_security_level(cctx, 0);
    SSL_CTX_set_cipher_list(cctx, "DEFAULT:@SECLEVEL=0");
    SSL_CTX_set_min_proto_version(cctx, TLS1_1_VERSION);
    SSL_CTX_set_max_proto_version(cctx, TLS1_1_VERSION);

    tcp_pair(&cfd, &sfd);
    tconn_init(&t, sfd);
    cl = client_new(cctx, cfd, NULL);
    rc = handshake(&ssl, &t, cl, &crc);
    ok(rc == SFT_ERROR && crc == -1, "TLS 1.1 client refused");
    ok(log_has("unsupported protocol") && !log_has("[crit]"),
       "logged at info, not crit");

    SSL_free(cl);
    close(cfd);
    tconn_free(&t);
    SSL_CTX_free(cctx);

    /* garbage instead of a ClientHello */

    tcp_pair(&cfd, &sfd);
    tconn_init(&t, sfd);
    n = write(cfd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
    (void) n;

    ok(sft_ssl_create_connection(&ssl, &t.c, 0) == SFT_OK,
       "connection for garbage");
    t.c.ssl->handler = handler_done;

    deadline = now() + 3;
    rc = sft_ssl_handshake(&t.c);

    while (rc == SFT_AGAIN && now() < deadline) {
        deliver(&t, 1);
        if (t.done) {
            rc = t.c.ssl->handshaked ? SFT_OK : SFT_ERROR;
        }
    }

    ok(rc == SFT_ERROR, "HTTP request instead of TLS: handshake error");
    ok(log_has("http request") && log_has("client: 127.0.0.1:test")
       && !log_has("[crit]"),
       "logged once at info with the peer");

    close(cfd);
    tconn_free(&t);

    tcp_pair(&cfd, &sfd);
    tconn_init(&t, sfd);
    n = write(cfd, "\x16\x03\x01\x00\x05\x01\x00\x00\x01\xff\xee\x00", 12);
    shutdown(cfd, SHUT_WR);

    sft_ssl_create_connection(&ssl, &t.c, 0);
    t.c.ssl->handler = handler_done;
    t.done = 0;
    deadline = now() + 3;
    rc = sft_ssl_handshake(&t.c);

    while (rc == SFT_AGAIN && now() < deadline) {
        deliver(&t, 1);
        if (t.done) {
            rc = t.c.ssl->handshaked ? SFT_OK : SFT_ERROR;
        }
    }

    ok(rc == SFT_ERROR && !log_has("[crit]"),
       "broken ClientHello: handshake error, no crit");

    close(cfd);
    tconn_free(&t);

    sealed(&ssl, "TLS_AES_256_GCM_SHA384", NULL, SFT_SSL_SEALED_SIFTPD);
    sealed(&ssl, "TLS_AES_128_GCM_SHA256", NULL, SFT_SSL_SEALED_SIFTPD);
    sealed(&ssl, "TLS_CHACHA20_POLY1305_SHA256", NULL,
           SFT_SSL_SEALED_SIFTPD);
    sealed(&ssl, NULL, "ECDHE-ECDSA-AES128-GCM-SHA256",
           SFT_SSL_SEALED_SIFTPD);
    sealed(&ssl, NULL, "ECDHE-ECDSA-AES256-GCM-SHA384",
           SFT_SSL_SEALED_SIFTPD);
    sealed(&ssl, NULL, "ECDHE-ECDSA-CHACHA20-POLY1305",
           SFT_SSL_SEALED_SIFTPD);

    sft_ssl_cleanup_ctx(&ssl);

    client_certificates(cert, key);

    close(tlog_file.fd);

    if (getenv("TEST_TLS_KEEP") == NULL) {
        snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
        n = system(cmd);
    }

    printf("# %.2f s\n", now() - start);
    printf("1..%lu\n", tests);

    return failed ? 1 : 0;
}
