/*
 * sft_event_openssl.c -- non-blocking TLS with OpenSSL 3: server contexts
 * (certificates, protocols, ciphers, curves, session cache and tickets,
 * kTLS), TLS handshakes, reads, writes (through the write BIO of
 * sft_event_openssl_records.c) and close_notify on edge-triggered
 * connections, the session identity FTPS data connections are checked
 * against, client certificates and the user they map to, the ssl_*
 * directives and the first-start self-signed certificate.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_proto.h>
#include <sft_event_openssl.h>

#include <openssl/rand.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/x509.h>
#include <openssl/evp.h>


#define SFT_SSL_SID_CTX  "siftp"


static void sft_ssl_handshake_handler(sft_event_t *ev);
static void sft_ssl_shutdown_handler(sft_event_t *ev);
static void sft_ssl_read_handler(sft_event_t *ev);
static void sft_ssl_write_handler(sft_event_t *ev);
static void sft_ssl_handshaked(sft_connection_t *c);
static sft_int_t sft_ssl_handle_recv(sft_connection_t *c, int n);
static int sft_ssl_ticket_gen(SSL *s, void *arg);
static sft_int_t sft_ssl_identity(sft_connection_t *c, const u_char **id);
static void sft_ssl_error(sft_uint_t level, sft_log_t *log, sft_err_t err,
    const char *text);
static void sft_ssl_connection_error(sft_connection_t *c, int sslerr,
    sft_err_t err, const char *text);
static sft_int_t sft_ssl_mkdirs(const char *path, sft_log_t *log);
static sft_uint_t sft_ssl_made_later(sft_conf_t *cf, const char *cert,
    sft_uint_t add);
static sft_int_t sft_ssl_write_pem(const char *path, mode_t mode,
    X509 *x509, EVP_PKEY *pkey, sft_log_t *log);
static void sft_ssl_fingerprint(X509 *x509, char *buf, size_t len);
static sft_int_t sft_ssl_check_validity(sft_ssl_t *ssl, const char *cert,
    const char *where);
static sft_int_t sft_ssl_readable(sft_ssl_t *ssl, const char *file,
    const char *what, const char *where);
static sft_int_t sft_ssl_client_name(sft_connection_t *c, sft_uint_t rule,
    sft_str_t *name, u_char *buf, size_t size);
static void sft_ssl_send_error(sft_connection_t *c, int sslerr,
    sft_err_t err);


/* protocol versions, lowest first */

static struct {
    sft_uint_t  flag;
    int         version;
    long        no;
} sft_ssl_versions[] = {
    { SFT_SSL_TLSv1,   TLS1_VERSION,   SSL_OP_NO_TLSv1 },
    { SFT_SSL_TLSv1_1, TLS1_1_VERSION, SSL_OP_NO_TLSv1_1 },
    { SFT_SSL_TLSv1_2, TLS1_2_VERSION, SSL_OP_NO_TLSv1_2 },
    { SFT_SSL_TLSv1_3, TLS1_3_VERSION, SSL_OP_NO_TLSv1_3 },
};


static sft_conf_enum_t  sft_ssl_protocol_names[] = {
    { sft_string("TLSv1"),   SFT_SSL_TLSv1 },
    { sft_string("TLSv1.1"), SFT_SSL_TLSv1_1 },
    { sft_string("TLSv1.2"), SFT_SSL_TLSv1_2 },
    { sft_string("TLSv1.3"), SFT_SSL_TLSv1_3 },
    { sft_null_string, 0 }
};


sft_conf_enum_t  sft_ssl_verify_client_names[] = {
    { sft_string("off"),      SFT_SSL_VERIFY_OFF },
    { sft_string("on"),       SFT_SSL_VERIFY_ON },
    { sft_string("optional"), SFT_SSL_VERIFY_OPTIONAL },
    { sft_null_string, 0 }
};


sft_conf_enum_t  sft_ssl_client_user_names[] = {
    { sft_string("off"),        SFT_SSL_USER_OFF },
    { sft_string("subject_cn"), SFT_SSL_USER_SUBJECT_CN },
    { sft_string("san_email"),  SFT_SSL_USER_SAN_EMAIL },
    { sft_null_string, 0 }
};


sft_conf_enum_t  sft_ssl_client_login_names[] = {
    { sft_string("password"),    SFT_SSL_LOGIN_PASSWORD },
    { sft_string("certificate"), SFT_SSL_LOGIN_CERTIFICATE },
    { sft_null_string, 0 }
};


/* the server context */

sft_int_t
sft_ssl_create(sft_ssl_t *ssl, sft_uint_t protocols, sft_log_t *log)
{
    int         min, max;
    long        opts;
    sft_uint_t  i;

    ssl->log = log;

    ssl->ctx = SSL_CTX_new(TLS_server_method());
    if (ssl->ctx == NULL) {
        sft_ssl_error(SFT_LOG_EMERG, log, 0, "SSL_CTX_new() failed");
        return SFT_ERROR;
    }

    if (protocols == 0) {
        protocols = SFT_SSL_DEFAULT_PROTOCOLS;
    }

    min = 0;
    max = 0;
    opts = 0;

    for (i = 0; i < sizeof(sft_ssl_versions) / sizeof(sft_ssl_versions[0]);
         i++)
    {
        if (protocols & sft_ssl_versions[i].flag) {
            if (min == 0) {
                min = sft_ssl_versions[i].version;
            }

            max = sft_ssl_versions[i].version;

        } else {
            opts |= sft_ssl_versions[i].no;
        }
    }

    if (min < TLS1_2_VERSION) {
        /* the old protocols need SHA-1 signatures */
        SSL_CTX_set_security_level(ssl->ctx, 0);
    }

    if (SSL_CTX_set_min_proto_version(ssl->ctx, min) != 1
        || SSL_CTX_set_max_proto_version(ssl->ctx, max) != 1)
    {
        sft_ssl_error(SFT_LOG_EMERG, log, 0,
                      "SSL_CTX_set_min/max_proto_version() failed");
        return SFT_ERROR;
    }

    opts |= SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION
            | SSL_OP_CIPHER_SERVER_PREFERENCE;

#ifdef SSL_OP_NO_CLIENT_RENEGOTIATION
    opts |= SSL_OP_NO_CLIENT_RENEGOTIATION;
#endif

#ifdef SSL_OP_ENABLE_KTLS
    opts |= SSL_OP_ENABLE_KTLS;
#endif

    SSL_CTX_set_options(ssl->ctx, opts);

    SSL_CTX_set_mode(ssl->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE
                               | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                               | SSL_MODE_RELEASE_BUFFERS);

    /*
     * a read(2) takes up to SFT_SSL_RBUF_SIZE of records, not a record
     * header and then its body; FTPS refuses CCC, so no plain byte
     * follows TLS on a connection
     */

    SSL_CTX_set_read_ahead(ssl->ctx, 1);
    SSL_CTX_set_default_read_buffer_len(ssl->ctx, SFT_SSL_RBUF_SIZE);

    if (sft_ssl_ciphers(ssl, SFT_SSL_DEFAULT_CIPHERS, 1) != SFT_OK
        || sft_ssl_ecdh_curve(ssl, SFT_SSL_DEFAULT_CURVES) != SFT_OK
        || sft_ssl_session_cache(ssl, SFT_SSL_SESSION_CACHE,
                                 SFT_SSL_SESSION_TIMEOUT, 1) != SFT_OK)
    {
        return SFT_ERROR;
    }

    return SFT_OK;
}


/*
 * Loads one certificate chain and its key; what is wrong is said in one
 * line in plain words, after "where" (the directive's "file:line: " or "").
 */

sft_int_t
sft_ssl_certificate(sft_ssl_t *ssl, const char *cert, const char *key,
    const char *where)
{
    if (sft_ssl_readable(ssl, cert, "certificate", where) != SFT_OK
        || sft_ssl_readable(ssl, key, "certificate key", where) != SFT_OK)
    {
        return SFT_ERROR;
    }

    if (SSL_CTX_use_certificate_chain_file(ssl->ctx, cert) != 1) {
        ERR_clear_error();
        sft_log_error(SFT_LOG_EMERG, ssl->log, 0,
                      "%scannot load certificate \"%s\": not a valid PEM "
                      "certificate", where, cert);
        return SFT_ERROR;
    }

    if (SSL_CTX_use_PrivateKey_file(ssl->ctx, key, SSL_FILETYPE_PEM) != 1) {

        if (ERR_GET_REASON(ERR_peek_last_error())
            == X509_R_KEY_VALUES_MISMATCH)
        {
            goto mismatch;
        }

        ERR_clear_error();
        sft_log_error(SFT_LOG_EMERG, ssl->log, 0,
                      "%scannot load certificate key \"%s\": not a valid "
                      "PEM private key", where, key);
        return SFT_ERROR;
    }

    if (SSL_CTX_check_private_key(ssl->ctx) == 1) {
        return sft_ssl_check_validity(ssl, cert, where);
    }

mismatch:

    ERR_clear_error();
    sft_log_error(SFT_LOG_EMERG, ssl->log, 0,
                  "%scertificate \"%s\" and key \"%s\" do not match",
                  where, cert, key);
    return SFT_ERROR;
}


/* a missing or unreadable file is said with the system's words */

static sft_int_t
sft_ssl_readable(sft_ssl_t *ssl, const char *file, const char *what,
    const char *where)
{
    int  fd;

    fd = open(file, O_RDONLY|O_CLOEXEC);

    if (fd == -1) {
        sft_log_error(SFT_LOG_EMERG, ssl->log, sft_errno,
                      "%scannot read %s \"%s\"", where, what, file);
        return SFT_ERROR;
    }

    close(fd);

    return SFT_OK;
}


/* the certificate just loaded (the context's current one) is valid now */

static sft_int_t
sft_ssl_check_validity(sft_ssl_t *ssl, const char *cert, const char *where)
{
    int              expired;
    BIO             *bio;
    X509            *x509;
    char            *p;
    long             n;
    const ASN1_TIME *t;
    char             when[64];

    x509 = SSL_CTX_get0_certificate(ssl->ctx);
    if (x509 == NULL) {
        return SFT_OK;
    }

    if (X509_cmp_current_time(X509_get0_notAfter(x509)) < 0) {
        expired = 1;
        t = X509_get0_notAfter(x509);

    } else if (X509_cmp_current_time(X509_get0_notBefore(x509)) > 0) {
        expired = 0;
        t = X509_get0_notBefore(x509);

    } else {
        return SFT_OK;
    }

    (void) snprintf(when, sizeof(when), "?");

    bio = BIO_new(BIO_s_mem());
    if (bio != NULL && ASN1_TIME_print(bio, t) == 1) {
        n = BIO_get_mem_data(bio, &p);
        (void) snprintf(when, sizeof(when), "%.*s",
                        (int) sft_min(n, (long) sizeof(when) - 1), p);
    }

    BIO_free(bio);
    ERR_clear_error();

    sft_log_error(SFT_LOG_EMERG, ssl->log, 0,
                  expired ? "%scertificate \"%s\" expired on %s"
                          : "%scertificate \"%s\" is not valid before %s",
                  where, cert, when);

    return SFT_ERROR;
}


/*
 * Client certificates issued by the CAs in file: "on" requires one,
 * "optional" asks for one; one that does not verify (another CA, expired)
 * fails the handshake either way
 */

sft_int_t
sft_ssl_client_certificate(sft_ssl_t *ssl, const char *file,
    sft_uint_t verify)
{
    STACK_OF(X509_NAME)  *list;

    if (SSL_CTX_load_verify_locations(ssl->ctx, file, NULL) != 1) {
        sft_ssl_error(SFT_LOG_EMERG, ssl->log, 0,
                      "SSL_CTX_load_verify_locations() failed");
        sft_log_error(SFT_LOG_EMERG, ssl->log, 0,
                      "cannot load client certificate CAs \"%s\"", file);
        return SFT_ERROR;
    }

    list = SSL_load_client_CA_file(file);
    if (list == NULL) {
        sft_ssl_error(SFT_LOG_EMERG, ssl->log, 0,
                      "SSL_load_client_CA_file() failed");
        sft_log_error(SFT_LOG_EMERG, ssl->log, 0,
                      "no CA certificate in \"%s\"", file);
        return SFT_ERROR;
    }

    SSL_CTX_set_client_CA_list(ssl->ctx, list);

    SSL_CTX_set_verify(ssl->ctx,
                       SSL_VERIFY_PEER
                       | (verify == SFT_SSL_VERIFY_ON
                          ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                       NULL);

    return SFT_OK;
}


sft_int_t
sft_ssl_ciphers(sft_ssl_t *ssl, const char *ciphers,
    sft_uint_t prefer_server_ciphers)
{
    if (SSL_CTX_set_cipher_list(ssl->ctx, ciphers) != 1) {
        sft_ssl_error(SFT_LOG_EMERG, ssl->log, 0,
                      "SSL_CTX_set_cipher_list() failed");
        sft_log_error(SFT_LOG_EMERG, ssl->log, 0,
                      "invalid ssl_ciphers \"%s\"", ciphers);
        return SFT_ERROR;
    }

    if (prefer_server_ciphers) {
        SSL_CTX_set_options(ssl->ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);

    } else {
        SSL_CTX_clear_options(ssl->ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    }

    return SFT_OK;
}


sft_int_t
sft_ssl_ecdh_curve(sft_ssl_t *ssl, const char *curves)
{
    if (SSL_CTX_set1_groups_list(ssl->ctx, curves) != 1) {
        sft_ssl_error(SFT_LOG_EMERG, ssl->log, 0,
                      "SSL_CTX_set1_groups_list() failed");
        sft_log_error(SFT_LOG_EMERG, ssl->log, 0,
                      "invalid ssl_ecdh_curve \"%s\"", curves);
        return SFT_ERROR;
    }

    return SFT_OK;
}


/*
 * Sessions: a server-side cache in each worker (the FTPS control and data
 * connections of a session live in the same worker) and stateless tickets
 * under the key OpenSSL draws at random for each SSL_CTX, i.e. for each
 * start or reload; the workers inherit it from the master.
 */

sft_int_t
sft_ssl_session_cache(sft_ssl_t *ssl, sft_int_t size, sft_int_t timeout,
    sft_uint_t tickets)
{
    if (SSL_CTX_set_session_id_context(ssl->ctx,
                                       (const u_char *) SFT_SSL_SID_CTX,
                                       sizeof(SFT_SSL_SID_CTX) - 1)
        != 1)
    {
        sft_ssl_error(SFT_LOG_EMERG, ssl->log, 0,
                      "SSL_CTX_set_session_id_context() failed");
        return SFT_ERROR;
    }

    if (size > 0) {
        SSL_CTX_set_session_cache_mode(ssl->ctx, SSL_SESS_CACHE_SERVER);
        SSL_CTX_sess_set_cache_size(ssl->ctx, size);

    } else {
        SSL_CTX_set_session_cache_mode(ssl->ctx, SSL_SESS_CACHE_OFF);
    }

    if (timeout > 0) {
        SSL_CTX_set_timeout(ssl->ctx, timeout);
    }

    if (tickets) {
        SSL_CTX_clear_options(ssl->ctx, SSL_OP_NO_TICKET);

    } else {
        SSL_CTX_set_options(ssl->ctx, SSL_OP_NO_TICKET);
    }

    if (SSL_CTX_set_session_ticket_cb(ssl->ctx, sft_ssl_ticket_gen, NULL,
                                      NULL)
        != 1)
    {
        sft_ssl_error(SFT_LOG_EMERG, ssl->log, 0,
                      "SSL_CTX_set_session_ticket_cb() failed");
        return SFT_ERROR;
    }

    return SFT_OK;
}


void
sft_ssl_ktls(sft_ssl_t *ssl, sft_uint_t on)
{
#ifdef SSL_OP_ENABLE_KTLS
    if (on) {
        SSL_CTX_set_options(ssl->ctx, SSL_OP_ENABLE_KTLS);

    } else {
        SSL_CTX_clear_options(ssl->ctx, SSL_OP_ENABLE_KTLS);
    }
#else
    (void) ssl;
    (void) on;
#endif
}


void
sft_ssl_cleanup_ctx(void *data)
{
    sft_ssl_t  *ssl = data;

    if (ssl->ctx) {
        SSL_CTX_free(ssl->ctx);
        ssl->ctx = NULL;
    }
}


/*
 * Every ticket and cached session carries the identity of the connection
 * that made it: a random tag of the full handshake, kept when a resumed
 * connection issues new tickets. A data connection belongs to a control
 * connection when it resumed a session with the same identity.
 */

static int
sft_ssl_ticket_gen(SSL *s, void *arg)
{
    void              *data;
    size_t             len;
    SSL_SESSION       *sess;
    sft_connection_t  *c;

    (void) arg;

    c = SSL_get_app_data(s);
    sess = SSL_get_session(s);

    if (c == NULL || c->ssl == NULL || sess == NULL) {
        return 1;
    }

    if (SSL_SESSION_get0_ticket_appdata(sess, &data, &len) == 1
        && len == SFT_SSL_TAG_LEN)
    {
        return 1;
    }

    return SSL_SESSION_set1_ticket_appdata(sess, c->ssl->tag,
                                           SFT_SSL_TAG_LEN);
}


static sft_int_t
sft_ssl_identity(sft_connection_t *c, const u_char **id)
{
    void         *data;
    size_t        len;
    SSL_SESSION  *sess;

    if (c->ssl == NULL || !c->ssl->handshaked) {
        return SFT_ERROR;
    }

    sess = SSL_get_session(c->ssl->connection);

    if (sess != NULL
        && SSL_SESSION_get0_ticket_appdata(sess, &data, &len) == 1
        && len == SFT_SSL_TAG_LEN)
    {
        *id = data;
        return SFT_OK;
    }

    if (c->ssl->reused) {
        /* resumed a session without identity: not one of ours */
        return SFT_ERROR;
    }

    *id = c->ssl->tag;
    return SFT_OK;
}


sft_int_t
sft_ssl_session_reused(sft_connection_t *c)
{
    return c->ssl != NULL && c->ssl->handshaked && c->ssl->reused;
}


sft_int_t
sft_ssl_same_session(sft_connection_t *data, sft_connection_t *control)
{
    const u_char  *d, *k;

    if (!sft_ssl_session_reused(data)) {
        return 0;
    }

    if (sft_ssl_identity(data, &d) != SFT_OK
        || sft_ssl_identity(control, &k) != SFT_OK)
    {
        return 0;
    }

    return CRYPTO_memcmp(d, k, SFT_SSL_TAG_LEN) == 0;
}


/*
 * Before each FTPS data connection (the PASV, EPSV, PORT or EPRT reply), a
 * fresh TLS 1.3 ticket on the control connection: same identity, a fresh
 * time.  A client with OpenSSL's client session cache (curl) uses a TLS
 * 1.3 ticket once: the first resumption marks the session not resumable,
 * and offered again it carries no PSK, a full handshake the data
 * connection check refuses.  The client reads the ticket before the reply
 * and resumes it; a control session older than the session timeout stays
 * resumable too.  TLS 1.2 has no ticket after the handshake; its session
 * resumes any number of times.
 */

void
sft_ssl_renew_session(sft_connection_t *c)
{
    if (c->ssl == NULL || !c->ssl->handshaked
        || SSL_version(c->ssl->connection) < TLS1_3_VERSION)
    {
        return;
    }

    if (SSL_new_session_ticket(c->ssl->connection) != 1) {
        sft_ssl_error(SFT_LOG_ERR, c->log, 0,
                      "SSL_new_session_ticket() failed");
    }
}


const char *
sft_ssl_protocol(sft_connection_t *c)
{
    return c->ssl ? SSL_get_version(c->ssl->connection) : "none";
}


const char *
sft_ssl_cipher(sft_connection_t *c)
{
    return c->ssl ? SSL_get_cipher_name(c->ssl->connection) : "none";
}


/*
 * Client certificates at login (ssl_verify_client on|optional): without
 * ssl_client_user any verified certificate will do and the password is
 * checked; with it, a certificate must name the user (its subject's CN or
 * its first e-mail subjectAltName), and with "ssl_client_login
 * certificate" it logs that user in without a password.  Under
 * "optional" a client without a certificate logs in with its password.
 */

sft_uint_t
sft_ssl_client_user(sft_connection_t *c, sft_ssl_conf_t *conf,
    sft_str_t *user, sft_log_t *log)
{
    sft_int_t  rc;
    sft_str_t  name;
    u_char     buf[256];

    if (conf->verify_client == SFT_SSL_VERIFY_OFF) {
        return SFT_SSL_CLIENT_PASSWORD;
    }

    name.len = 0;
    name.data = buf;

    rc = sft_ssl_client_name(c, conf->client_user, &name, buf, sizeof(buf));

    if (rc == SFT_DECLINED) {
        if (conf->verify_client == SFT_SSL_VERIFY_OPTIONAL) {
            return SFT_SSL_CLIENT_PASSWORD;
        }

        sft_log_error(SFT_LOG_NOTICE, log, 0,
                      "login of \"%.*s\" without a verified client "
                      "certificate refused", SFT_STR_FMT(user));
        return SFT_SSL_CLIENT_REFUSED;
    }

    if (conf->client_user == SFT_SSL_USER_OFF) {
        return SFT_SSL_CLIENT_PASSWORD;
    }

    if (rc != SFT_OK) {
        sft_log_error(SFT_LOG_NOTICE, log, 0,
                      "client certificate has no %s for \"%.*s\", refused",
                      conf->client_user == SFT_SSL_USER_SUBJECT_CN
                      ? "subject CN" : "e-mail subjectAltName",
                      SFT_STR_FMT(user));
        return SFT_SSL_CLIENT_REFUSED;
    }

    if (name.len != user->len
        || sft_memcmp(name.data, user->data, name.len) != 0)
    {
        sft_log_error(SFT_LOG_NOTICE, log, 0,
                      "client certificate of \"%.*s\" used for \"%.*s\", "
                      "refused", SFT_STR_FMT(&name), SFT_STR_FMT(user));
        return SFT_SSL_CLIENT_REFUSED;
    }

    return (conf->client_login == SFT_SSL_LOGIN_CERTIFICATE)
           ? SFT_SSL_CLIENT_LOGIN : SFT_SSL_CLIENT_PASSWORD;
}


/*
 * The name in the peer's verified certificate: SFT_DECLINED without one,
 * SFT_ERROR if it has no such name (or an unusable one)
 */

static sft_int_t
sft_ssl_client_name(sft_connection_t *c, sft_uint_t rule, sft_str_t *name,
    u_char *buf, size_t size)
{
    int                     i, len;
    X509                   *x509;
    u_char                 *utf8;
    X509_NAME              *subject;
    ASN1_STRING            *str;
    GENERAL_NAME           *gn;
    GENERAL_NAMES          *names;

    if (c->ssl == NULL || !c->ssl->handshaked) {
        return SFT_DECLINED;
    }

    x509 = SSL_get0_peer_certificate(c->ssl->connection);

    if (x509 == NULL
        || SSL_get_verify_result(c->ssl->connection) != X509_V_OK)
    {
        return SFT_DECLINED;
    }

    str = NULL;
    names = NULL;

    if (rule == SFT_SSL_USER_SUBJECT_CN) {
        subject = X509_get_subject_name(x509);
        i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);

        if (i >= 0) {
            str = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
        }

    } else if (rule == SFT_SSL_USER_SAN_EMAIL) {
        names = X509_get_ext_d2i(x509, NID_subject_alt_name, NULL, NULL);

        for (i = 0; str == NULL && i < sk_GENERAL_NAME_num(names); i++) {
            gn = sk_GENERAL_NAME_value(names, i);

            if (gn->type == GEN_EMAIL) {
                str = gn->d.rfc822Name;
            }
        }

    } else {
        return SFT_OK;
    }

    len = (str != NULL) ? ASN1_STRING_to_UTF8(&utf8, str) : -1;

    GENERAL_NAMES_free(names);

    if (len <= 0) {
        return SFT_ERROR;
    }

    if ((size_t) len > size || memchr(utf8, '\0', len) != NULL) {
        OPENSSL_free(utf8);
        return SFT_ERROR;
    }

    sft_memcpy(buf, utf8, len);
    OPENSSL_free(utf8);

    name->data = buf;
    name->len = len;

    return SFT_OK;
}


/* connections */

sft_int_t
sft_ssl_create_connection(sft_ssl_t *ssl, sft_connection_t *c,
    sft_uint_t flags)
{
    sft_ssl_connection_t  *sc;

    sc = calloc(1, sizeof(sft_ssl_connection_t));
    if (sc == NULL) {
        sft_log_error(SFT_LOG_ALERT, c->log, sft_errno, "calloc() failed");
        return SFT_ERROR;
    }

    if (RAND_bytes(sc->tag, SFT_SSL_TAG_LEN) != 1) {
        sft_ssl_error(SFT_LOG_ALERT, c->log, 0, "RAND_bytes() failed");
        free(sc);
        return SFT_ERROR;
    }

    sc->connection = SSL_new(ssl->ctx);
    if (sc->connection == NULL) {
        sft_ssl_error(SFT_LOG_ALERT, c->log, 0, "SSL_new() failed");
        free(sc);
        return SFT_ERROR;
    }

    if (SSL_set_fd(sc->connection, c->fd) != 1) {
        sft_ssl_error(SFT_LOG_ALERT, c->log, 0, "SSL_set_fd() failed");
        SSL_free(sc->connection);
        free(sc);
        return SFT_ERROR;
    }

    if (flags & SFT_SSL_CLIENT) {
        SSL_set_connect_state(sc->connection);

    } else {
        SSL_set_accept_state(sc->connection);
    }

    if ((flags & SFT_SSL_NO_TICKETS)
        && SSL_set_num_tickets(sc->connection, 0) != 1)
    {
        sft_ssl_error(SFT_LOG_ALERT, c->log, 0,
                      "SSL_set_num_tickets() failed");
        SSL_free(sc->connection);
        free(sc);
        return SFT_ERROR;
    }

    SSL_set_app_data(sc->connection, c);

    c->ssl = sc;

    if (sft_ssl_records_init(c, flags & SFT_SSL_SEAL) != SFT_OK) {
        /* the socket BIO writes a record at a time */
        sft_ssl_error(SFT_LOG_WARN, c->log, 0, "BIO_new() failed");
    }

    return SFT_OK;
}


void
sft_ssl_free_connection(sft_connection_t *c)
{
    sft_ssl_connection_t  *sc;

    sc = c->ssl;

    if (sc == NULL) {
        return;
    }

    SSL_free(sc->connection);
    sft_ssl_records_free(sc);
    free(sc);

    c->ssl = NULL;
    c->recv = sft_recv;
    c->send = sft_send;
}


sft_int_t
sft_ssl_handshake(sft_connection_t *c)
{
    int                    n, sslerr;
    sft_err_t              err;
    sft_ssl_connection_t  *sc;

    sc = c->ssl;

    ERR_clear_error();

    n = SSL_do_handshake(sc->connection);

    if (n == 1) {
        sft_ssl_handshaked(c);
        return SFT_OK;
    }

    sslerr = SSL_get_error(sc->connection, n);
    err = (sslerr == SSL_ERROR_SYSCALL) ? sft_errno : 0;

    if (sslerr == SSL_ERROR_WANT_READ || sslerr == SSL_ERROR_WANT_WRITE) {

        if (sslerr == SSL_ERROR_WANT_READ) {
            c->read->ready = 0;

        } else {
            c->write->ready = 0;
        }

        c->read->handler = sft_ssl_handshake_handler;
        c->write->handler = sft_ssl_handshake_handler;

        return SFT_AGAIN;
    }

    c->read->error = 1;
    c->read->ready = 0;
    c->write->error = 1;
    c->write->ready = 0;

    sc->no_wait_shutdown = 1;
    sc->no_send_shutdown = 1;
    sc->last = SFT_ERROR;

    if (sslerr == SSL_ERROR_ZERO_RETURN
        || (sslerr == SSL_ERROR_SYSCALL && err == 0
            && ERR_peek_error() == 0))
    {
        sft_log_error(SFT_LOG_INFO, c->log, 0,
                      "peer closed connection in TLS handshake%s%.*s",
                      c->log->handler ? "" : ", client: ",
                      c->log->handler ? 0 : SFT_STR_FMT(&c->addr_text));
        ERR_clear_error();
        return SFT_ERROR;
    }

    sft_ssl_connection_error(c, sslerr, err, "TLS handshake failed");

    return SFT_ERROR;
}


static void
sft_ssl_handshaked(sft_connection_t *c)
{
    void                  *data;
    size_t                 len;
    SSL_SESSION           *sess;
    sft_ssl_connection_t  *sc;

    sc = c->ssl;

    sc->handshaked = 1;
    sc->reused = SSL_session_reused(sc->connection) ? 1 : 0;

#ifndef OPENSSL_NO_KTLS
    sc->ktls_recv = BIO_get_ktls_recv(SSL_get_rbio(sc->connection)) ? 1 : 0;
#endif

    /* a session kept in the server cache gets this connection's identity */

    sess = SSL_get_session(sc->connection);

    data = NULL;
    len = 0;

    if (sess != NULL && !sc->reused
        && (SSL_SESSION_get0_ticket_appdata(sess, &data, &len) != 1
            || data == NULL || len != SFT_SSL_TAG_LEN))
    {
        (void) SSL_SESSION_set1_ticket_appdata(sess, sc->tag,
                                               SFT_SSL_TAG_LEN);
    }

    c->recv = sft_ssl_recv;
    c->send = sft_ssl_send;

    /* application data may have come with the last handshake flight */
    c->read->ready = 1;

    sft_log_debug(c->log, "TLS handshake done: %s, %s, reused: %d, "
                  "records sealed by %s, ktls recv: %d",
                  SSL_get_version(sc->connection),
                  SSL_get_cipher_name(sc->connection), (int) sc->reused,
                  sc->ktls_send ? "the kernel"
                                : sc->sealer ? "siftpd" : "OpenSSL",
                  (int) sc->ktls_recv);
}


static void
sft_ssl_handshake_handler(sft_event_t *ev)
{
    sft_connection_t  *c;

    c = ev->data;

    if (ev->timedout) {
        c->ssl->handler(c);
        return;
    }

    if (sft_ssl_handshake(c) == SFT_AGAIN) {
        return;
    }

    c->ssl->handler(c);
}


/*
 * sft_recv()'s contract: bytes, 0 at the end (close_notify), SFT_AGAIN,
 * SFT_ERROR. It reads until the buffer is full or the socket is empty, so
 * that no decrypted or buffered byte is left behind an edge that will not
 * come again.
 */

ssize_t
sft_ssl_recv(sft_connection_t *c, u_char *buf, size_t size)
{
    int                    n;
    ssize_t                bytes;
    sft_int_t              rc;
    sft_ssl_connection_t  *sc;

    sc = c->ssl;

    if (sc->last == SFT_ERROR) {
        c->read->ready = 0;
        c->read->error = 1;
        return SFT_ERROR;
    }

    if (sc->last == SFT_DONE) {
        c->read->ready = 0;
        c->read->eof = 1;
        return 0;
    }

    bytes = 0;

    ERR_clear_error();

    for ( ;; ) {

        n = SSL_read(sc->connection, buf, size > INT_MAX ? INT_MAX : size);

        rc = sft_ssl_handle_recv(c, n);

        if (rc == SFT_OK) {
            bytes += n;
            size -= n;

            if (size == 0) {
                c->read->ready = 1;
                return bytes;
            }

            buf += n;
            continue;
        }

        if (bytes) {
            if (rc != SFT_AGAIN) {
                /* report the end or the error on the next call */
                sc->last = rc;
                c->read->ready = 1;

            } else {
                c->read->ready = 0;
            }

            return bytes;
        }

        switch (rc) {

        case SFT_DONE:
            c->read->ready = 0;
            c->read->eof = 1;
            return 0;

        case SFT_ERROR:
            c->read->ready = 0;
            c->read->error = 1;
            return SFT_ERROR;

        default: /* SFT_AGAIN */
            return SFT_AGAIN;
        }
    }
}


static sft_int_t
sft_ssl_handle_recv(sft_connection_t *c, int n)
{
    int                    sslerr;
    sft_err_t              err;
    sft_ssl_connection_t  *sc;

    sc = c->ssl;

    if (n > 0) {
        if (sc->saved_write_handler) {
            c->write->handler = sc->saved_write_handler;
            sc->saved_write_handler = NULL;
            c->write->ready = 1;
            sft_post_event(c->write);
        }

        return SFT_OK;
    }

    sslerr = SSL_get_error(sc->connection, n);
    err = (sslerr == SSL_ERROR_SYSCALL) ? sft_errno : 0;

    if (sslerr == SSL_ERROR_WANT_READ) {
        c->read->ready = 0;
        return SFT_AGAIN;
    }

    if (sslerr == SSL_ERROR_WANT_WRITE) {

        /* a key update or a ticket waits for the socket to drain */

        c->read->ready = 0;
        c->write->ready = 0;

        if (sc->saved_write_handler == NULL) {
            sc->saved_write_handler = c->write->handler;
            c->write->handler = sft_ssl_write_handler;
        }

        return SFT_AGAIN;
    }

    sc->no_wait_shutdown = 1;

    if (sslerr == SSL_ERROR_ZERO_RETURN) {
        sft_log_debug(c->log, "peer sent close_notify");
        return SFT_DONE;
    }

    sc->no_send_shutdown = 1;

    if (sslerr == SSL_ERROR_SSL
        && ERR_GET_REASON(ERR_peek_error())
           == SSL_R_UNEXPECTED_EOF_WHILE_READING)
    {
        sc->truncated = 1;
        ERR_clear_error();
        sft_log_error(SFT_LOG_INFO, c->log, 0,
                      "peer closed connection without close_notify");
        return SFT_ERROR;
    }

    if (sslerr == SSL_ERROR_SYSCALL && err == ECONNRESET) {
        ERR_clear_error();
        return SFT_ERROR;
    }

    sft_ssl_connection_error(c, sslerr, err, "SSL_read() failed");

    return SFT_ERROR;
}


static void
sft_ssl_write_handler(sft_event_t *wev)
{
    sft_connection_t  *c;

    c = wev->data;

    /* the read that waited for writability */
    c->read->handler(c->read);
}


static void
sft_ssl_read_handler(sft_event_t *rev)
{
    sft_connection_t  *c;

    c = rev->data;

    /* the write that waited for readability */
    c->write->handler(c->write);
}


/*
 * sft_send()'s contract. With SSL_MODE_ENABLE_PARTIAL_WRITE SSL_write()
 * returns after each record, so loop until all is sent or the socket is
 * full. After SFT_AGAIN or a short count the next call must start with
 * the bytes not yet counted (at least one record's worth): a record
 * partly on the wire is finished from OpenSSL's buffer.
 *
 * Without kTLS the records of a write larger than one record are gathered
 * by the write BIO (sft_ssl_gather_writes()) and go out SFT_SSL_WBUF_SIZE
 * a write(2). Bytes counted may still be in that buffer when the socket
 * is full: the next call, or the close_notify of sft_ssl_shutdown(),
 * sends them first.
 */

ssize_t
sft_ssl_send(sft_connection_t *c, u_char *buf, size_t size)
{
    int                    n, sslerr;
    ssize_t                sent;
    sft_int_t              rc;
    sft_err_t              err;
    sft_ssl_connection_t  *sc;

    sc = c->ssl;

    if (size == 0) {
        return 0;
    }

    if (sc->last == SFT_ERROR) {
        c->write->error = 1;
        return SFT_ERROR;
    }

    ERR_clear_error();

    /* what the last call gathered goes first */

    if (sc->wbuf_pos < sc->wbuf_len) {
        rc = sft_ssl_flush(sc);

        if (rc == SFT_AGAIN) {
            c->write->ready = 0;
            return SFT_AGAIN;
        }

        if (rc == SFT_ERROR) {
            sft_ssl_send_error(c, SSL_ERROR_SYSCALL, sft_errno);
            return SFT_ERROR;
        }
    }

    sc->gather = (size > SSL3_RT_MAX_PLAIN_LENGTH);

    sent = 0;

    for ( ;; ) {

        n = SSL_write(sc->connection, buf + sent,
                      size - sent > INT_MAX ? INT_MAX : size - sent);

        if (n > 0) {
            sent += n;
            c->sent += n;

            if (sc->saved_read_handler) {
                c->read->handler = sc->saved_read_handler;
                sc->saved_read_handler = NULL;
                c->read->ready = 1;
                sft_post_event(c->read);
            }

            if ((size_t) sent == size) {
                break;
            }

            continue;
        }

        sslerr = SSL_get_error(sc->connection, n);
        err = (sslerr == SSL_ERROR_SYSCALL) ? sft_errno : 0;

        if (sslerr == SSL_ERROR_WANT_WRITE) {
            c->write->ready = 0;
            break;
        }

        if (sslerr == SSL_ERROR_WANT_READ) {

            /* rare: the peer's handshake message must be read first */

            c->write->ready = 0;

            if (sc->saved_read_handler == NULL) {
                sc->saved_read_handler = c->read->handler;
                c->read->handler = sft_ssl_read_handler;
            }

            break;
        }

        sc->gather = 0;

        sft_ssl_send_error(c, sslerr, err);

        return sent ? sent : SFT_ERROR;
    }

    sc->gather = 0;

    /* the last records gathered: the socket may take them now */

    if (sc->wbuf_pos < sc->wbuf_len) {
        rc = sft_ssl_flush(sc);

        if (rc == SFT_AGAIN) {
            c->write->ready = 0;

        } else if (rc == SFT_ERROR) {
            /* the error is reported by the next call */
            sft_ssl_send_error(c, SSL_ERROR_SYSCALL, sft_errno);
            c->write->error = 0;
        }
    }

    return sent ? sent : SFT_AGAIN;
}


static void
sft_ssl_send_error(sft_connection_t *c, int sslerr, sft_err_t err)
{
    sft_ssl_connection_t  *sc;

    sc = c->ssl;

    sc->no_wait_shutdown = 1;
    sc->no_send_shutdown = 1;
    sc->last = SFT_ERROR;
    c->write->error = 1;

    if (sslerr == SSL_ERROR_SYSCALL && (err == EPIPE || err == ECONNRESET)) {
        ERR_clear_error();
        return;
    }

    sft_ssl_connection_error(c, sslerr, err, "SSL_write() failed");
}


/*
 * Sends close_notify and, unless no_wait_shutdown is set, waits for the
 * peer's, discarding what it still sends, so that closing the socket does
 * not reset data still in flight to it. SFT_AGAIN: c->ssl->handler is
 * called when done (the caller sets a timer and closes afterwards).
 */

sft_int_t
sft_ssl_shutdown(sft_connection_t *c)
{
    int                    n, sslerr;
    u_char                 buf[4096];
    sft_ssl_connection_t  *sc;

    sc = c->ssl;

    if (sc == NULL) {
        return SFT_OK;
    }

    if (SSL_in_init(sc->connection) || c->read->timedout
        || c->write->timedout)
    {
        /* no close_notify in the middle of a handshake or after a timeout */
        return SFT_OK;
    }

    ERR_clear_error();

    if (!sc->shutdown_sent) {

        if (sc->no_send_shutdown) {
            SSL_set_shutdown(sc->connection,
                             SSL_get_shutdown(sc->connection)
                             | SSL_SENT_SHUTDOWN);
            sc->shutdown_sent = 1;

        } else {
            n = SSL_shutdown(sc->connection);

            if (n < 0) {
                sslerr = SSL_get_error(sc->connection, n);

                if (sslerr == SSL_ERROR_WANT_WRITE) {
                    c->write->ready = 0;
                    c->read->handler = sft_ssl_shutdown_handler;
                    c->write->handler = sft_ssl_shutdown_handler;
                    return SFT_AGAIN;
                }

                if (sslerr == SSL_ERROR_SYSCALL || sslerr == SSL_ERROR_SSL) {
                    ERR_clear_error();
                    sft_log_debug(c->log, "SSL_shutdown() failed");
                    return SFT_ERROR;
                }
            }

            sc->shutdown_sent = 1;
        }
    }

    /* records, close_notify last, that the full socket did not take */

    if (sc->wbuf_pos < sc->wbuf_len && !sc->no_send_shutdown) {

        switch (sft_ssl_flush(sc)) {

        case SFT_AGAIN:
            c->write->ready = 0;
            c->read->handler = sft_ssl_shutdown_handler;
            c->write->handler = sft_ssl_shutdown_handler;
            return SFT_AGAIN;

        case SFT_ERROR:
            sft_log_debug(c->log, "write() of close_notify failed");
            return SFT_ERROR;
        }
    }

    if (sc->no_wait_shutdown
        || (SSL_get_shutdown(sc->connection) & SSL_RECEIVED_SHUTDOWN))
    {
        return SFT_OK;
    }

    for ( ;; ) {
        n = SSL_read(sc->connection, buf, sizeof(buf));

        if (n > 0) {
            continue;
        }

        sslerr = SSL_get_error(sc->connection, n);

        if (sslerr == SSL_ERROR_WANT_READ) {
            c->read->ready = 0;
            c->read->handler = sft_ssl_shutdown_handler;
            c->write->handler = sft_ssl_shutdown_handler;
            return SFT_AGAIN;
        }

        ERR_clear_error();

        if (sslerr == SSL_ERROR_ZERO_RETURN) {
            return SFT_OK;
        }

        /* the peer closed without close_notify: nothing more to wait for */
        sft_log_debug(c->log, "no close_notify from the peer");
        return SFT_OK;
    }
}


static void
sft_ssl_shutdown_handler(sft_event_t *ev)
{
    sft_connection_t  *c;

    c = ev->data;

    if (!ev->timedout && sft_ssl_shutdown(c) == SFT_AGAIN) {
        return;
    }

    c->ssl->handler(c);
}


/* errors */

static void
sft_ssl_error(sft_uint_t level, sft_log_t *log, sft_err_t err,
    const char *text)
{
    int            flags;
    u_char         errstr[SFT_MAX_ERROR_STR];
    u_char        *p, *last;
    const char    *data;
    unsigned long  n;

    p = errstr;
    last = errstr + sizeof(errstr) - 1;
    *p = '\0';

    for ( ;; ) {
        n = ERR_get_error_all(NULL, NULL, NULL, &data, &flags);
        if (n == 0) {
            break;
        }

        if (p >= last - 1) {
            continue;
        }

        p = sft_slprintf(p, last, "%s%s", p == errstr ? " (SSL: " : ":",
                         ERR_reason_error_string(n)
                         ? ERR_reason_error_string(n) : "unknown");

        if (data && (flags & ERR_TXT_STRING) && *data) {
            p = sft_slprintf(p, last, ":%s", data);
        }
    }

    if (p != errstr) {
        p = sft_slprintf(p, last, ")");
    }

    *p = '\0';

    sft_log_error(level, log, err, "%s%s", text, errstr);
}


/* what a client can cause: logged at "info", not as a server fault */

static int  sft_ssl_client_reasons[] = {
    SSL_R_BAD_CHANGE_CIPHER_SPEC,
    SSL_R_CERTIFICATE_VERIFY_FAILED,
    SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE,
    SSL_R_BAD_EXTENSION,
    SSL_R_BAD_KEY_SHARE,
    SSL_R_BAD_KEY_UPDATE,         /* a KeyUpdate on sealed records too */
    SSL_R_BAD_LENGTH,
    SSL_R_BAD_PACKET_LENGTH,
    SSL_R_BAD_RECORD_TYPE,
    SSL_R_BLOCK_CIPHER_PAD_IS_WRONG,
    SSL_R_DATA_LENGTH_TOO_LONG,
    SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC,
    SSL_R_DIGEST_CHECK_FAILED,
    SSL_R_ERROR_IN_RECEIVED_CIPHER_LIST,
    SSL_R_EXCESSIVE_MESSAGE_SIZE,
    SSL_R_HTTPS_PROXY_REQUEST,
    SSL_R_HTTP_REQUEST,
    SSL_R_INAPPROPRIATE_FALLBACK,
    SSL_R_LENGTH_MISMATCH,
    SSL_R_LENGTH_TOO_SHORT,
    SSL_R_NO_CIPHERS_SPECIFIED,
    SSL_R_NO_COMPRESSION_SPECIFIED,
    SSL_R_NO_RENEGOTIATION,
    SSL_R_NO_SHARED_CIPHER,
    SSL_R_NO_SHARED_GROUPS,
    SSL_R_NO_SUITABLE_KEY_SHARE,
    SSL_R_PACKET_LENGTH_TOO_LONG,
    SSL_R_PARSE_TLSEXT,
    SSL_R_RECORD_LENGTH_MISMATCH,
    SSL_R_TOO_MANY_WARN_ALERTS,
    SSL_R_UNEXPECTED_EOF_WHILE_READING,
    SSL_R_UNEXPECTED_MESSAGE,
    SSL_R_UNEXPECTED_RECORD,
    SSL_R_UNKNOWN_ALERT_TYPE,
    SSL_R_UNKNOWN_PROTOCOL,
    SSL_R_UNSAFE_LEGACY_RENEGOTIATION_DISABLED,
    SSL_R_UNSUPPORTED_PROTOCOL,
    SSL_R_VERSION_TOO_LOW,
    SSL_R_WRONG_VERSION_NUMBER,
    0
};


static void
sft_ssl_connection_error(sft_connection_t *c, int sslerr, sft_err_t err,
    const char *text)
{
    int            reason, i;
    char           buf[256];
    sft_uint_t     level;
    unsigned long  n;

    level = SFT_LOG_CRIT;

    if (sslerr == SSL_ERROR_SYSCALL) {
        level = SFT_LOG_INFO;

    } else if (sslerr == SSL_ERROR_SSL) {
        n = ERR_peek_error();
        reason = ERR_GET_REASON(n);

        if (ERR_GET_LIB(n) == ERR_LIB_SSL) {

            /* the peer's alerts, and what a peer sent */

            level = (reason >= SSL_AD_REASON_OFFSET) ? SFT_LOG_INFO
                                                      : SFT_LOG_ERR;

            for (i = 0; sft_ssl_client_reasons[i]; i++) {
                if (reason == sft_ssl_client_reasons[i]) {
                    level = SFT_LOG_INFO;
                    break;
                }
            }

            if (ERR_FATAL_ERROR(n)) {
                level = SFT_LOG_CRIT;
            }
        }
    }

    if (c->log->handler == NULL && c->addr_text.len) {
        (void) snprintf(buf, sizeof(buf), "%s, client: %.*s", text,
                        SFT_STR_FMT(&c->addr_text));
        text = buf;
    }

    sft_ssl_error(level, c->log, err, text);

    ERR_clear_error();
}


/* configuration */

void
sft_ssl_conf_init(sft_ssl_conf_t *conf)
{
    sft_memzero(conf, sizeof(sft_ssl_conf_t));

    conf->protocols = 0;
    conf->prefer_server_ciphers = SFT_CONF_UNSET;
    conf->session_tickets = SFT_CONF_UNSET;
    conf->session_cache = SFT_CONF_UNSET;
    conf->session_timeout = SFT_CONF_UNSET;
    conf->self_signed = SFT_CONF_UNSET;
    conf->ktls = SFT_CONF_UNSET;
    conf->verify_client = SFT_CONF_UNSET_UINT;
    conf->client_user = SFT_CONF_UNSET_UINT;
    conf->client_login = SFT_CONF_UNSET_UINT;
}


void
sft_ssl_conf_merge(sft_ssl_conf_t *conf, sft_ssl_conf_t *prev)
{
    if (conf->certificate.nelts == 0) {
        conf->certificate = prev->certificate;
    }

    if (conf->certificate_key.nelts == 0) {
        conf->certificate_key = prev->certificate_key;
    }

    if (conf->client_certificate.data == NULL) {
        conf->client_certificate = prev->client_certificate;
    }

    sft_conf_merge_uint_value(conf->verify_client, prev->verify_client,
                              SFT_SSL_VERIFY_OFF);
    sft_conf_merge_uint_value(conf->client_user, prev->client_user,
                              SFT_SSL_USER_OFF);
    sft_conf_merge_uint_value(conf->client_login, prev->client_login,
                              SFT_SSL_LOGIN_PASSWORD);

    if (conf->protocols == 0) {
        conf->protocols = prev->protocols ? prev->protocols
                                          : SFT_SSL_DEFAULT_PROTOCOLS;
    }

    sft_conf_merge_str_value(conf->ciphers, prev->ciphers,
                             SFT_SSL_DEFAULT_CIPHERS);
    sft_conf_merge_str_value(conf->ecdh_curve, prev->ecdh_curve,
                             SFT_SSL_DEFAULT_CURVES);
    sft_conf_merge_value(conf->prefer_server_ciphers,
                         prev->prefer_server_ciphers, 1);
    sft_conf_merge_value(conf->session_tickets, prev->session_tickets, 1);
    sft_conf_merge_value(conf->session_cache, prev->session_cache,
                         SFT_SSL_SESSION_CACHE);
    sft_conf_merge_value(conf->session_timeout, prev->session_timeout,
                         SFT_SSL_SESSION_TIMEOUT);
    sft_conf_merge_value(conf->self_signed, prev->self_signed, 0);
    sft_conf_merge_value(conf->ktls, prev->ktls, 1);
}


/*
 * After the merge: SFT_DECLINED if no certificate is configured (no TLS
 * on this server), SFT_OK with ssl->ctx ready, or SFT_ERROR (logged).
 */

sft_int_t
sft_ssl_conf_apply(sft_conf_t *cf, sft_ssl_conf_t *conf, sft_ssl_t *ssl)
{
    int                  type[SFT_SSL_MAX_CERTS];
    char                 cert[PATH_MAX], key[PATH_MAX], tmp[256];
    char                 where[PATH_MAX + 32];
    sft_uint_t           i, n;
    struct stat          st;
    sft_pool_cleanup_t  *cln;

    ssl->ctx = NULL;

    if (conf->certificate.nelts == 0) {
        return SFT_DECLINED;
    }

    if (conf->certificate_key.nelts != conf->certificate.nelts) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "%lu \"ssl_certificate\" but %lu "
                           "\"ssl_certificate_key\": each certificate needs "
                           "its key",
                           (unsigned long) conf->certificate.nelts,
                           (unsigned long) conf->certificate_key.nelts);
        return SFT_ERROR;
    }

    if (conf->verify_client != SFT_SSL_VERIFY_OFF
        && conf->client_certificate.len == 0)
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "no \"ssl_client_certificate\" for "
                           "\"ssl_verify_client\"");
        return SFT_ERROR;
    }

    if (conf->client_user != SFT_SSL_USER_OFF
        && conf->verify_client == SFT_SSL_VERIFY_OFF)
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "\"ssl_client_user\" needs \"ssl_verify_client "
                           "on\" or \"optional\"");
        return SFT_ERROR;
    }

    if (conf->client_login == SFT_SSL_LOGIN_CERTIFICATE
        && conf->client_user == SFT_SSL_USER_OFF)
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "\"ssl_client_login certificate\" needs "
                           "\"ssl_client_user\"");
        return SFT_ERROR;
    }

    if (sft_ssl_create(ssl, conf->protocols, cf->log) != SFT_OK) {
        sft_ssl_cleanup_ctx(ssl);
        return SFT_ERROR;
    }

    cln = sft_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        sft_ssl_cleanup_ctx(ssl);
        return SFT_ERROR;
    }

    cln->handler = sft_ssl_cleanup_ctx;
    cln->data = ssl;

    for (i = 0; i < conf->certificate.nelts; i++) {
        (void) snprintf(cert, sizeof(cert), "%.*s",
                        SFT_STR_FMT(&conf->certificate.file[i]));
        (void) snprintf(key, sizeof(key), "%.*s",
                        SFT_STR_FMT(&conf->certificate_key.file[i]));

        /*
         * the first pair may be made at the first start; -t makes nothing,
         * and lets other servers name the pair a server will make
         */

        if (sft_test_config && sft_ssl_made_later(cf, cert, 0)) {
            continue;
        }

        if (i == 0 && conf->self_signed == 1
            && stat(cert, &st) == -1 && errno == ENOENT
            && stat(key, &st) == -1 && errno == ENOENT)
        {
            if (sft_test_config) {
                sft_log_error(SFT_LOG_NOTICE, cf->log, 0,
                              "\"%s\" will be made at the first start",
                              cert);
                (void) sft_ssl_made_later(cf, cert, 1);
                continue;
            }

            if (sft_ssl_generate_self_signed(cert, key, cf->log) != SFT_OK) {
                return SFT_ERROR;
            }
        }

        (void) snprintf(where, sizeof(where), "%.*s:%lu: ",
                        SFT_STR_FMT(&conf->certificate.conf_file[i]),
                        (unsigned long) conf->certificate.line[i]);

        if (sft_ssl_certificate(ssl, cert, key, where) != SFT_OK) {
            return SFT_ERROR;
        }

        /* one pair per key type: a second would replace the first */

        type[i] = EVP_PKEY_get_base_id(
                      X509_get0_pubkey(SSL_CTX_get0_certificate(ssl->ctx)));

        for (n = 0; n < i; n++) {
            if (type[n] == type[i]) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "certificates \"%.*s\" and \"%s\" have "
                                   "the same key type, only one would be "
                                   "served",
                                   SFT_STR_FMT(&conf->certificate.file[n]),
                                   cert);
                return SFT_ERROR;
            }
        }
    }

    if (conf->verify_client != SFT_SSL_VERIFY_OFF) {
        (void) snprintf(cert, sizeof(cert), "%.*s",
                        SFT_STR_FMT(&conf->client_certificate));

        if (sft_ssl_client_certificate(ssl, cert, conf->verify_client)
            != SFT_OK)
        {
            return SFT_ERROR;
        }
    }

    (void) snprintf(tmp, sizeof(tmp), "%.*s", SFT_STR_FMT(&conf->ciphers));

    if (sft_ssl_ciphers(ssl, tmp, conf->prefer_server_ciphers) != SFT_OK) {
        return SFT_ERROR;
    }

    (void) snprintf(tmp, sizeof(tmp), "%.*s",
                    SFT_STR_FMT(&conf->ecdh_curve));

    if (sft_ssl_ecdh_curve(ssl, tmp) != SFT_OK) {
        return SFT_ERROR;
    }

    if (sft_ssl_session_cache(ssl, conf->session_cache,
                              conf->session_timeout, conf->session_tickets)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    sft_ssl_ktls(ssl, conf->ktls);

    return SFT_OK;
}


/*
 * -t makes no files: the self-signed pairs the first start would make are
 * remembered by certificate, for the servers that name the same pair
 */

static sft_uint_t
sft_ssl_made_later(sft_conf_t *cf, const char *cert, sft_uint_t add)
{
    size_t       len;
    u_char      *p;
    sft_uint_t   i;

    static struct {
        void        *cycle;
        sft_uint_t   n;
        u_char      *cert[8];
    } later;

    if (later.cycle != cf->cycle) {
        later.cycle = cf->cycle;
        later.n = 0;
    }

    for (i = 0; i < later.n; i++) {
        if (strcmp((char *) later.cert[i], cert) == 0) {
            return 1;
        }
    }

    if (add && later.n < sft_nelems(later.cert)) {
        len = strlen(cert) + 1;
        p = sft_pnalloc(cf->pool, len);

        if (p != NULL) {
            sft_memcpy(p, cert, len);
            later.cert[later.n++] = p;
        }
    }

    return 0;
}


/* ssl_certificate and ssl_certificate_key: one more file, a full path */

char *
sft_ssl_set_file(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t        *value;
    sft_ssl_files_t  *files;

    files = (sft_ssl_files_t *) ((char *) conf + cmd->offset);

    if (files->nelts == SFT_SSL_MAX_CERTS) {
        return "is given too many times";
    }

    value = cf->args->elts;

    if (value[1].len >= PATH_MAX) {
        return "has a path too long";
    }

    files->file[files->nelts] = value[1];
    files->conf_file[files->nelts] = cf->conf_file->name;
    files->line[files->nelts] = cf->conf_file->line;

    if (sft_conf_full_name(cf->cycle, &files->file[files->nelts]) != SFT_OK
        || files->file[files->nelts].len >= PATH_MAX)
    {
        return SFT_CONF_ERROR;
    }

    files->nelts++;

    return SFT_CONF_OK;
}


char *
sft_ssl_set_protocols(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t        *value;
    sft_uint_t       *np, i, n;
    sft_conf_enum_t  *e;

    (void) cf;

    np = (sft_uint_t *) ((char *) conf + cmd->offset);

    if (*np != 0) {
        return "is duplicate";
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        for (n = 0, e = sft_ssl_protocol_names; e[n].name.len; n++) {
            if (e[n].name.len == value[i].len
                && sft_memcmp(e[n].name.data, value[i].data, value[i].len)
                   == 0)
            {
                *np |= e[n].value;
                break;
            }
        }

        if (e[n].name.len == 0) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "invalid value \"%.*s\" in \"ssl_protocols\", "
                               "it must be TLSv1, TLSv1.1, TLSv1.2 or "
                               "TLSv1.3", SFT_STR_FMT(&value[i]));
            return SFT_CONF_ERROR;
        }
    }

    return SFT_CONF_OK;
}


/* "off" or a number of sessions kept in each worker */

char *
sft_ssl_set_session_cache(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_int_t  *np;
    sft_str_t  *value;

    np = (sft_int_t *) ((char *) conf + cmd->offset);

    if (*np != SFT_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (sft_str_eq(&value[1], "off")) {
        *np = 0;
        return SFT_CONF_OK;
    }

    *np = sft_atoi(value[1].data, value[1].len);

    if (*np == SFT_ERROR) {
        return "invalid number of sessions";
    }

    return SFT_CONF_OK;
}


/* the first-start self-signed certificate */

sft_int_t
sft_ssl_generate_self_signed(const char *cert_path, const char *key_path,
    sft_log_t *log)
{
    char             fp[3 * EVP_MAX_MD_SIZE + 1];
    X509            *x509;
    BIGNUM          *bn;
    EVP_PKEY        *pkey;
    sft_int_t        rc;
    X509_NAME       *name;
    X509_EXTENSION  *ext;
    X509V3_CTX       v3;
    static const struct {
        int          nid;
        const char  *value;
    } exts[] = {
        { NID_basic_constraints, "critical,CA:FALSE" },
        { NID_key_usage, "critical,digitalSignature" },
        { NID_ext_key_usage, "serverAuth" },
        { NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1" },
        { NID_subject_key_identifier, "hash" },
    };
    sft_uint_t       i;

    rc = SFT_ERROR;
    x509 = NULL;
    bn = NULL;

    pkey = EVP_EC_gen("P-256");
    if (pkey == NULL) {
        sft_ssl_error(SFT_LOG_EMERG, log, 0, "EVP_EC_gen() failed");
        return SFT_ERROR;
    }

    x509 = X509_new();
    bn = BN_new();

    if (x509 == NULL || bn == NULL
        || X509_set_version(x509, X509_VERSION_3) != 1
        || BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1
        || BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x509)) == NULL
        || X509_gmtime_adj(X509_getm_notBefore(x509), -60) == NULL
        || X509_time_adj_ex(X509_getm_notAfter(x509), 3650, 0, NULL) == NULL
        || X509_set_pubkey(x509, pkey) != 1)
    {
        sft_ssl_error(SFT_LOG_EMERG, log, 0, "X509 setup failed");
        goto done;
    }

    name = X509_get_subject_name(x509);

    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                   (const u_char *) "localhost", -1, -1, 0)
        != 1
        || X509_set_issuer_name(x509, name) != 1)
    {
        sft_ssl_error(SFT_LOG_EMERG, log, 0, "X509 name setup failed");
        goto done;
    }

    X509V3_set_ctx(&v3, x509, x509, NULL, NULL, 0);

    for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        ext = X509V3_EXT_conf_nid(NULL, &v3, exts[i].nid, exts[i].value);

        if (ext == NULL || X509_add_ext(x509, ext, -1) != 1) {
            X509_EXTENSION_free(ext);
            sft_ssl_error(SFT_LOG_EMERG, log, 0, "X509 extension failed");
            goto done;
        }

        X509_EXTENSION_free(ext);
    }

    if (X509_sign(x509, pkey, EVP_sha256()) == 0) {
        sft_ssl_error(SFT_LOG_EMERG, log, 0, "X509_sign() failed");
        goto done;
    }

    if (sft_ssl_mkdirs(key_path, log) != SFT_OK
        || sft_ssl_mkdirs(cert_path, log) != SFT_OK
        || sft_ssl_write_pem(key_path, 0600, NULL, pkey, log) != SFT_OK
        || sft_ssl_write_pem(cert_path, 0644, x509, NULL, log) != SFT_OK)
    {
        goto done;
    }

    sft_ssl_fingerprint(x509, fp, sizeof(fp));

    sft_log_error(SFT_LOG_WARN, log, 0,
                  "generated a self-signed certificate \"%s\" "
                  "(CN=localhost, 10 years), SHA-256 fingerprint %s",
                  cert_path, fp);

    rc = SFT_OK;

done:

    BN_free(bn);
    X509_free(x509);
    EVP_PKEY_free(pkey);

    return rc;
}


/* creates the missing directories above a file */

static sft_int_t
sft_ssl_mkdirs(const char *path, sft_log_t *log)
{
    char    dir[PATH_MAX];
    char   *p;
    size_t  len;

    len = strlen(path);
    if (len >= sizeof(dir)) {
        return SFT_ERROR;
    }

    sft_memcpy(dir, path, len + 1);

    for (p = dir + 1; *p; p++) {
        if (*p != '/') {
            continue;
        }

        *p = '\0';

        if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
            sft_log_error(SFT_LOG_EMERG, log, sft_errno,
                          "mkdir(\"%s\") failed", dir);
            return SFT_ERROR;
        }

        *p = '/';
    }

    return SFT_OK;
}


/* written to a temporary file with its final mode, then renamed */

static sft_int_t
sft_ssl_write_pem(const char *path, mode_t mode, X509 *x509, EVP_PKEY *pkey,
    sft_log_t *log)
{
    int    fd, ok;
    char   tmp[PATH_MAX];
    FILE  *f;

    if ((size_t) snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path,
                          (long) getpid())
        >= sizeof(tmp))
    {
        return SFT_ERROR;
    }

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
              mode);
    if (fd == -1) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno,
                      "open(\"%s\") failed", tmp);
        return SFT_ERROR;
    }

    (void) fchmod(fd, mode);

    f = fdopen(fd, "w");
    if (f == NULL) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno, "fdopen() failed");
        close(fd);
        (void) unlink(tmp);
        return SFT_ERROR;
    }

    if (x509) {
        ok = PEM_write_X509(f, x509);

    } else {
        ok = PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL);
    }

    if (fflush(f) != 0 || fsync(fd) != 0) {
        ok = 0;
    }

    if (fclose(f) != 0) {
        ok = 0;
    }

    if (!ok || rename(tmp, path) == -1) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno,
                      "writing \"%s\" failed", path);
        (void) unlink(tmp);
        return SFT_ERROR;
    }

    return SFT_OK;
}


static void
sft_ssl_fingerprint(X509 *x509, char *buf, size_t len)
{
    u_char        md[EVP_MAX_MD_SIZE];
    unsigned int  n, i;

    buf[0] = '\0';

    if (X509_digest(x509, EVP_sha256(), md, &n) != 1
        || len < 3 * (size_t) n)
    {
        return;
    }

    for (i = 0; i < n; i++) {
        (void) snprintf(buf + 3 * i, len - 3 * i, "%02X%s", md[i],
                        i + 1 < n ? ":" : "");
    }
}
