/*
 * sft_event_openssl.h -- non-blocking TLS (OpenSSL 3) on top of the
 * worker's connections: a server context per listener or server, TLS on
 * an sft_connection_t with the same recv/send contract as plain sockets,
 * session resumption that FTPS data connections are checked against,
 * client certificates and the user name one maps to, and the nginx-like
 * ssl_* directives a protocol module embeds.
 */

#ifndef _SFT_EVENT_OPENSSL_H_INCLUDED_
#define _SFT_EVENT_OPENSSL_H_INCLUDED_


#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>


#define SFT_SSL_TLSv1            0x0008
#define SFT_SSL_TLSv1_1          0x0010
#define SFT_SSL_TLSv1_2          0x0020
#define SFT_SSL_TLSv1_3          0x0040

#define SFT_SSL_DEFAULT_PROTOCOLS  (SFT_SSL_TLSv1_2|SFT_SSL_TLSv1_3)

/* TLS 1.2 suites: forward secret AEADs only; TLS 1.3's are all AEADs */
#define SFT_SSL_DEFAULT_CIPHERS                                               \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"              \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"              \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

#define SFT_SSL_DEFAULT_CURVES   "X25519:prime256v1"

#define SFT_SSL_SESSION_CACHE    20480        /* sessions per worker */
#define SFT_SSL_SESSION_TIMEOUT  (5 * 60)     /* seconds */

/* sft_ssl_create_connection() flags */
#define SFT_SSL_SERVER           0
#define SFT_SSL_CLIENT           1

/*
 * no TLS 1.3 session tickets after the handshake: for FTPS data
 * connections, which resume the control connection's session; a ticket
 * an uploading client never reads makes its close() a reset that can
 * drop the upload's last bytes from the server's receive queue
 */
#define SFT_SSL_NO_TICKETS       2

/*
 * bulk data: the TLS records this server writes are sealed by the
 * kernel (kTLS) or by siftpd straight from the caller's buffer, not by
 * OpenSSL (sft_event_openssl_records.c)
 */
#define SFT_SSL_SEAL             4

#define SFT_SSL_TAG_LEN          16

/* certificate/key pairs of a server, e.g. an RSA and an ECDSA one */
#define SFT_SSL_MAX_CERTS        4

/* ssl_verify_client */
#define SFT_SSL_VERIFY_OFF       0
#define SFT_SSL_VERIFY_ON        1
#define SFT_SSL_VERIFY_OPTIONAL  2

/* ssl_client_user: what names a client certificate's user */
#define SFT_SSL_USER_OFF         0
#define SFT_SSL_USER_SUBJECT_CN  1
#define SFT_SSL_USER_SAN_EMAIL   2

/* ssl_client_login */
#define SFT_SSL_LOGIN_PASSWORD     0   /* the certificate and a password */
#define SFT_SSL_LOGIN_CERTIFICATE  1   /* the certificate alone */

/* sft_ssl_client_user() */
#define SFT_SSL_CLIENT_PASSWORD  0     /* go on with the password */
#define SFT_SSL_CLIENT_LOGIN     1     /* the certificate logs the user in */
#define SFT_SSL_CLIENT_REFUSED   2     /* logged */

/*
 * Without kTLS, records of one large write are gathered into a buffer of
 * this size and go out in one write(2); TLS reads take this much a read(2).
 */
#define SFT_SSL_WBUF_SIZE        (128 * 1024)
#define SFT_SSL_RBUF_SIZE        (128 * 1024)


typedef struct {
    SSL_CTX                    *ctx;
    sft_log_t                  *log;
} sft_ssl_t;


typedef struct sft_ssl_sealer_s  sft_ssl_sealer_t;


struct sft_ssl_connection_s {
    SSL                        *connection;

    sft_int_t                   last;         /* SFT_ERROR, SFT_DONE */

    /* called when sft_ssl_handshake() had said SFT_AGAIN and finished */
    sft_connection_handler_pt   handler;

    /* swapped while a read waits for writability or the reverse */
    sft_event_handler_pt        saved_read_handler;
    sft_event_handler_pt        saved_write_handler;

    /* this connection's identity in the tickets and cached sessions */
    u_char                      tag[SFT_SSL_TAG_LEN];

    /* the write BIO's buffer: wbuf_pos..wbuf_len not yet sent */
    u_char                     *wbuf;
    size_t                      wbuf_pos;
    size_t                      wbuf_len;
    sft_fd_t                    fd;

    /* the write traffic key, once taken from OpenSSL (SFT_SSL_SEAL) */
    sft_ssl_sealer_t           *sealer;

    unsigned                    handshaked:1;
    unsigned                    gather:1;     /* a large write: gather */
    unsigned                    may_seal:1;   /* SFT_SSL_SEAL */
    unsigned                    reused:1;
    unsigned                    ktls_send:1;
    unsigned                    ktls_recv:1;
    unsigned                    no_wait_shutdown:1;
    unsigned                    no_send_shutdown:1;
    unsigned                    shutdown_sent:1;
    unsigned                    truncated:1;  /* EOF without close_notify */
};


/* the directives' values, embedded in a protocol's server configuration */

typedef struct {
    sft_str_t                   file[SFT_SSL_MAX_CERTS];
    sft_str_t                   conf_file[SFT_SSL_MAX_CERTS];  /* where */
    sft_uint_t                  line[SFT_SSL_MAX_CERTS];
    sft_uint_t                  nelts;
} sft_ssl_files_t;


typedef struct {
    sft_ssl_files_t             certificate;
    sft_ssl_files_t             certificate_key;
    sft_str_t                   client_certificate;
    sft_uint_t                  verify_client;
    sft_uint_t                  client_user;
    sft_uint_t                  client_login;
    sft_uint_t                  protocols;     /* 0: unset */
    sft_str_t                   ciphers;
    sft_str_t                   ecdh_curve;
    sft_flag_t                  prefer_server_ciphers;
    sft_flag_t                  session_tickets;
    sft_int_t                   session_cache; /* sessions, 0: off */
    sft_int_t                   session_timeout;
    sft_flag_t                  self_signed;
    sft_flag_t                  ktls;
} sft_ssl_conf_t;


/*
 * The directives, for a protocol's command table: "off" is the offset of
 * the sft_ssl_conf_t inside the protocol's server configuration, the last
 * argument the directive's sft_command_doc(), e.g.
 *     SFT_SSL_COMMANDS(offsetof(sft_ftp_srv_conf_t, ssl)),
 */

#define SFT_SSL_CMD(name, type, set, field, off, ...)                         \
    SFT_SSL_CMD_POST(name, type, set, field, off, NULL, __VA_ARGS__)

#define SFT_SSL_CMD_POST(name, type, set, field, off, post, ...)              \
    { sft_string(name),                                                       \
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|type,                            \
      set, SFT_PROTO_SRV_CONF_OFFSET,                                         \
      (off) + offsetof(sft_ssl_conf_t, field), post, __VA_ARGS__ }

#define SFT_SSL_COMMANDS(off)                                                 \
    SFT_SSL_CMD("ssl_certificate", SFT_CONF_TAKE1,                            \
                sft_ssl_set_file, certificate, off,                           \
                sft_command_doc("file", "",                                   \
                    "The server certificate chain, PEM; without it the "      \
                    "server has no TLS.")),                                   \
    SFT_SSL_CMD("ssl_certificate_key", SFT_CONF_TAKE1,                        \
                sft_ssl_set_file, certificate_key, off,                       \
                sft_command_doc("file", "",                                   \
                    "The key of ssl_certificate, PEM.")),                     \
    SFT_SSL_CMD("ssl_client_certificate", SFT_CONF_TAKE1,                     \
                sft_conf_set_path_slot, client_certificate, off,              \
                sft_command_doc("file", "",                                   \
                    "The CA certificates client certificates are verified "   \
                    "against, PEM.")),                                        \
    SFT_SSL_CMD_POST("ssl_verify_client", SFT_CONF_TAKE1,                     \
                sft_conf_set_enum_slot, verify_client, off,                   \
                sft_ssl_verify_client_names,                                  \
                sft_command_doc("on | optional | off", "off",                 \
                    "Whether clients must, may or need not present a "        \
                    "certificate.")),                                         \
    SFT_SSL_CMD_POST("ssl_client_user", SFT_CONF_TAKE1,                       \
                sft_conf_set_enum_slot, client_user, off,                     \
                sft_ssl_client_user_names,                                    \
                sft_command_doc("subject_cn | san_email | off", "off",        \
                    "Which field of a verified client certificate names the " \
                    "user.")),                                                \
    SFT_SSL_CMD_POST("ssl_client_login", SFT_CONF_TAKE1,                      \
                sft_conf_set_enum_slot, client_login, off,                    \
                sft_ssl_client_login_names,                                   \
                sft_command_doc("password | certificate", "password",         \
                    "Whether a verified certificate naming the user logs in " \
                    "without a password.")),                                  \
    SFT_SSL_CMD("ssl_protocols", SFT_CONF_1MORE,                              \
                sft_ssl_set_protocols, protocols, off,                        \
                sft_command_doc("protocol ...", "TLSv1.2 TLSv1.3",            \
                    "The TLS versions accepted: TLSv1, TLSv1.1, TLSv1.2, "    \
                    "TLSv1.3.")),                                             \
    SFT_SSL_CMD("ssl_ciphers", SFT_CONF_TAKE1,                                \
                sft_conf_set_str_slot, ciphers, off,                          \
                sft_command_doc("list",                                       \
                    "ECDHE with AES-GCM or ChaCha20-Poly1305",                \
                    "The TLS 1.2 cipher suites, in OpenSSL syntax.")),        \
    SFT_SSL_CMD("ssl_ecdh_curve", SFT_CONF_TAKE1,                             \
                sft_conf_set_str_slot, ecdh_curve, off,                       \
                sft_command_doc("list", "X25519:prime256v1",                  \
                    "The key exchange groups, colon separated.")),            \
    SFT_SSL_CMD("ssl_prefer_server_ciphers", SFT_CONF_FLAG,                   \
                sft_conf_set_flag_slot, prefer_server_ciphers, off,           \
                sft_command_doc("on | off", "on",                             \
                    "Choose the cipher by the server's order, not the "       \
                    "client's.")),                                            \
    SFT_SSL_CMD("ssl_session_tickets", SFT_CONF_FLAG,                         \
                sft_conf_set_flag_slot, session_tickets, off,                 \
                sft_command_doc("on | off", "on",                             \
                    "Resume sessions by tickets, under a key drawn at each "  \
                    "start.")),                                               \
    SFT_SSL_CMD("ssl_session_cache", SFT_CONF_TAKE1,                          \
                sft_ssl_set_session_cache, session_cache, off,                \
                sft_command_doc("off | number", "20480",                      \
                    "Sessions each worker keeps for resumption.")),           \
    SFT_SSL_CMD("ssl_session_timeout", SFT_CONF_TAKE1,                        \
                sft_conf_set_sec_slot, session_timeout, off,                  \
                sft_command_doc("time", "300s",                               \
                    "How long a session may be resumed.")),                   \
    SFT_SSL_CMD("ssl_self_signed", SFT_CONF_FLAG,                             \
                sft_conf_set_flag_slot, self_signed, off,                     \
                sft_command_doc("on | off", "off",                            \
                    "Create a self-signed certificate and key at start when " \
                    "ssl_certificate names missing files.")),                 \
    SFT_SSL_CMD("ssl_ktls", SFT_CONF_FLAG,                                    \
                sft_conf_set_flag_slot, ktls, off,                            \
                sft_command_doc("on | off", "on",                             \
                    "Let the kernel seal TLS records of downloads where it "  \
                    "can."))


/* configuration */
extern sft_conf_enum_t  sft_ssl_verify_client_names[];
extern sft_conf_enum_t  sft_ssl_client_user_names[];
extern sft_conf_enum_t  sft_ssl_client_login_names[];

void sft_ssl_conf_init(sft_ssl_conf_t *conf);
void sft_ssl_conf_merge(sft_ssl_conf_t *conf, sft_ssl_conf_t *prev);
sft_int_t sft_ssl_conf_apply(sft_conf_t *cf, sft_ssl_conf_t *conf,
    sft_ssl_t *ssl);
char *sft_ssl_set_file(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_ssl_set_protocols(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_ssl_set_session_cache(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);

/* the server context */
sft_int_t sft_ssl_create(sft_ssl_t *ssl, sft_uint_t protocols,
    sft_log_t *log);
sft_int_t sft_ssl_certificate(sft_ssl_t *ssl, const char *cert,
    const char *key, const char *where);
sft_int_t sft_ssl_ciphers(sft_ssl_t *ssl, const char *ciphers,
    sft_uint_t prefer_server_ciphers);
sft_int_t sft_ssl_client_certificate(sft_ssl_t *ssl, const char *file,
    sft_uint_t verify);
sft_int_t sft_ssl_ecdh_curve(sft_ssl_t *ssl, const char *curves);
sft_int_t sft_ssl_session_cache(sft_ssl_t *ssl, sft_int_t size,
    sft_int_t timeout, sft_uint_t tickets);
void sft_ssl_ktls(sft_ssl_t *ssl, sft_uint_t on);
void sft_ssl_cleanup_ctx(void *data);
sft_int_t sft_ssl_generate_self_signed(const char *cert_path,
    const char *key_path, sft_log_t *log);

/* connections */
sft_int_t sft_ssl_create_connection(sft_ssl_t *ssl, sft_connection_t *c,
    sft_uint_t flags);
sft_int_t sft_ssl_handshake(sft_connection_t *c);
ssize_t sft_ssl_recv(sft_connection_t *c, u_char *buf, size_t size);
ssize_t sft_ssl_send(sft_connection_t *c, u_char *buf, size_t size);
sft_int_t sft_ssl_shutdown(sft_connection_t *c);
void sft_ssl_free_connection(sft_connection_t *c);

/* who seals the records a connection writes: sft_ssl_sealed_by() */
#define SFT_SSL_SEALED_OPENSSL   0
#define SFT_SSL_SEALED_SIFTPD    1
#define SFT_SSL_SEALED_KERNEL    2

/* the write side (sft_event_openssl_records.c) */
sft_uint_t sft_ssl_sealed_by(sft_connection_t *c);
sft_int_t sft_ssl_records_init(sft_connection_t *c, sft_uint_t seal);

/* siftp's AES-GCM as an OpenSSL provider, once, at start */
void sft_ssl_gcm_register(void);
void sft_ssl_records_free(sft_ssl_connection_t *sc);
sft_int_t sft_ssl_flush(sft_ssl_connection_t *sc);

/* FTPS data connections: resumed, and resumed from this control session */
sft_int_t sft_ssl_session_reused(sft_connection_t *c);
sft_int_t sft_ssl_same_session(sft_connection_t *data,
    sft_connection_t *control);
void sft_ssl_renew_session(sft_connection_t *c);

/* client certificates: may this user log in, and how */
sft_uint_t sft_ssl_client_user(sft_connection_t *c, sft_ssl_conf_t *conf,
    sft_str_t *user, sft_log_t *log);

const char *sft_ssl_protocol(sft_connection_t *c);
const char *sft_ssl_cipher(sft_connection_t *c);


#endif /* _SFT_EVENT_OPENSSL_H_INCLUDED_ */
