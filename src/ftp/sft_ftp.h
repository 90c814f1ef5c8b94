/*
 * sft_ftp.h -- the FTP module: configuration, the control session, the
 * command table, passive data connections, transfers and listings.
 */

#ifndef _SFT_FTP_H_INCLUDED_
#define _SFT_FTP_H_INCLUDED_


#include <sft_proto.h>
#include <sft_peer.h>
#include <sft_vfs.h>
#include <sft_auth.h>
#include <sft_event_openssl.h>
#include <sft_xfer_stream.h>
#include <sft_session.h>


#define SFT_FTP_PRELOGIN_BUFFER   1024     /* control line limits */
#define SFT_FTP_COMMAND_BUFFER    4096
#define SFT_FTP_REPLY_BUFFER      8192
#define SFT_FTP_LIST_BUFFER       32768
#define SFT_FTP_MAX_PASV_TRIES    64

/* command flags */
#define SFT_FTP_PRELOGIN          0x01     /* allowed before login */
#define SFT_FTP_ARG_NONE          0x02     /* no argument allowed */
#define SFT_FTP_ARG_NEED          0x04     /* an argument is required */
#define SFT_FTP_IN_TRANSFER       0x08     /* runs while a transfer does */
#define SFT_FTP_NOT_IMPL          0x10     /* known, "502" */
#define SFT_FTP_AFTER_RNFR        0x20     /* RNTO: keeps a pending RNFR */

/* what a parsed line is */
#define SFT_FTP_PARSE_INVALID     10
#define SFT_FTP_PARSE_NUL         11

/* how a transfer ended */
#define SFT_FTP_END_OK            0
#define SFT_FTP_END_ABOR          1
#define SFT_FTP_END_NOCONN        2
#define SFT_FTP_END_NETWORK       3
#define SFT_FTP_END_STORAGE       4
#define SFT_FTP_END_CLOSED        5
#define SFT_FTP_END_TLS           6        /* data TLS failed or not reused */

/* HASH algorithms (draft-bryan-ftpext-hash), the first is the default */
#define SFT_FTP_HASH_SHA256       0
#define SFT_FTP_HASH_SHA1         1
#define SFT_FTP_HASH_MD5          2
#define SFT_FTP_HASH_CRC32        3
#define SFT_FTP_HASH_CRC32C       4        /* Castagnoli, sft_crc32c() */
#define SFT_FTP_HASH_SHA512       5
#define SFT_FTP_HASH_N            6

/* MLSD and MLST facts, in output order (OPTS MLST turns them off) */
#define SFT_FTP_FACT_TYPE         0x01
#define SFT_FTP_FACT_SIZE         0x02
#define SFT_FTP_FACT_MODIFY       0x04
#define SFT_FTP_FACT_PERM         0x08
#define SFT_FTP_FACT_MODE         0x10
#define SFT_FTP_FACT_N            5

/* transfer kinds */
#define SFT_FTP_RETR              1
#define SFT_FTP_STOR              2
#define SFT_FTP_APPE              3
#define SFT_FTP_LIST              4
#define SFT_FTP_NLST              5
#define SFT_FTP_MLSD              6
#define SFT_FTP_STOU              7        /* a STOR to a new unique name */

/* tls_login, tls_data, tls_data_reuse */
#define SFT_FTP_TLS_OFF           0
#define SFT_FTP_TLS_OPTIONAL      1
#define SFT_FTP_TLS_REQUIRED      2


typedef struct sft_ftp_session_s   sft_ftp_session_t;
typedef struct sft_ftp_transfer_s  sft_ftp_transfer_t;

typedef sft_int_t (*sft_ftp_handler_pt)(sft_ftp_session_t *s);
typedef void (*sft_ftp_next_pt)(sft_ftp_session_t *s, sft_storage_req_t *r);


typedef struct {
    sft_proto_main_conf_t     proto;       /* must be first */
} sft_ftp_core_main_conf_t;


typedef struct {
    sft_proto_srv_conf_t      proto;       /* must be first */

    sft_str_t                 storage_name;
    sft_storage_t            *storage;

    sft_uint_t                passive_min;
    sft_uint_t                passive_max;
    sft_array_t              *pasv_addrs;  /* sft_ftp_pasv_addr_t */

    sft_msec_t                idle_timeout;
    sft_msec_t                data_timeout;
    sft_msec_t                login_timeout;
    sft_uint_t                max_login_failures;
    sft_uint_t                max_errors;
    sft_xfer_conf_t           xfer;        /* the kernel data paths */

    sft_ssl_conf_t            ssl;
    sft_ssl_t                 tls;         /* tls.ctx NULL: no TLS */
    sft_uint_t                tls_login;   /* SFT_FTP_TLS_* */
    sft_uint_t                tls_data;
    sft_uint_t                tls_data_reuse;
} sft_ftp_srv_conf_t;


/* "pasv_address ADDR|proxy [NETWORK];": what PASV names to whom */
typedef struct {
    sft_user_cidr_t           net;         /* net.family 0: any client */
    sft_uint_t                bits;        /* prefix length of net */
    struct in_addr            addr;
    unsigned                  proxy:1;     /* the PROXY header's
                                              destination, not addr */
} sft_ftp_pasv_addr_t;


typedef struct {
    sft_str_t                 name;
    sft_uint_t                flags;
    sft_ftp_handler_pt        handler;
} sft_ftp_command_t;


/*
 * a data channel: passive (a listener, then one accepted connection) or
 * active (PORT/EPRT: the address, then one connection made by the worker)
 */
typedef struct {
    sft_connection_t         *listener;
    sft_connection_t         *conn;
    sft_connection_t         *proxied;     /* its PROXY header is read */
    sft_event_proxy_t         proxy;       /* the header of proxied */
    sft_uint_t                port;
    sft_uint_t                refused;

    struct sockaddr_storage   peer;        /* PORT/EPRT */
    socklen_t                 peer_len;

    struct sockaddr_storage   local;       /* the control connection's own
                                              address, once asked */
    socklen_t                 local_len;   /* 0: not asked yet */

    unsigned                  active:1;    /* PORT/EPRT given */
    unsigned                  connecting:1;
    unsigned                  handshaking:1;   /* PROT P: TLS handshake */
    unsigned                  tls_refused:1;   /* 522 for the next transfer */
} sft_ftp_data_t;


struct sft_ftp_transfer_s {
    sft_uint_t                kind;
    sft_pool_t               *pool;
    sft_storage_req_t         req;
    sft_storage_file_t        file;
    sft_storage_dir_t         dir;
    u_char                   *path;        /* virtual, for the log */
    size_t                    path_len;

    sft_xfer_stream_t         stream;      /* RETR, STOR, APPE */
    off_t                     bytes;       /* moved over the data conn */
    sft_msec_t                begin;
    off_t                     range_start; /* RETR after RANG */
    off_t                     range_last;

    u_char                   *out;         /* listing text */
    size_t                    out_len;
    size_t                    out_pos;
    sft_uint_t                entry;       /* next dirent of the batch */
    uint32_t                  perms;       /* of the listed directory */
    sft_uint_t                reason;      /* SFT_FTP_END_* */
    sft_storage_err_t         err;

    unsigned                  opened:1;    /* file or dir is open */
    unsigned                  started:1;   /* 150 sent, data may flow */
    unsigned                  deferred:1;  /* upload: open after data TLS */
    unsigned                  io:1;        /* a storage op is running */
    unsigned                  eof:1;       /* data conn or dir done */
    unsigned                  failed:1;
    unsigned                  aborted:1;   /* ABOR, or the session went */
    unsigned                  finishing:1;
    unsigned                  single:1;    /* LIST of one file */
    unsigned                  ascii:1;     /* TYPE A: convert newlines */
    unsigned                  streaming:1; /* the stream runs */
    unsigned                  streamed:1;  /* the stream was set up */
    unsigned                  abor_late:1; /* ABOR while it was ending */
    unsigned                  unique:1;    /* STOU */
    unsigned                  ranged:1;    /* RETR after RANG */
};


struct sft_ftp_session_s {
    sft_connection_t         *connection;  /* not after the close */
    sft_peer_t                peer;
    sft_session_t             session;     /* in the sessions table */
    sft_pool_t               *pool;
    sft_log_t                *log;
    sft_ftp_srv_conf_t       *conf;

    /* the control line buffer; end moves from 1k to 4k at login */
    u_char                   *start;
    u_char                   *pos;
    u_char                   *last;
    u_char                   *end;

    /* the command being run */
    sft_str_t                 verb;
    sft_str_t                 arg;
    u_char                   *next;        /* the line after it */
    sft_ftp_command_t        *command;

    /* replies waiting to be sent */
    u_char                   *out;
    size_t                    out_len;
    size_t                    out_pos;

    sft_str_t                 user;
    sft_user_t               *account;
    sft_auth_request_t        auth;
    sft_event_t               delay;       /* failed login delay */
    u_char                    password[256];

    sft_vfs_session_t         vfs;
    sft_thread_pool_t        *thread_pool;

    /* one storage operation of a command at a time */
    sft_pool_t               *op_pool;
    sft_storage_req_t         req;
    sft_ftp_next_pt           op_next;
    sft_storage_dir_t         op_dir;

    u_char                   *rnfr;        /* a virtual path, or NULL */
    off_t                     rest;
    off_t                     rang_start;  /* RANG: for the next HASH */
    off_t                     rang_end;    /*   or RETR, both included */

    sft_ftp_data_t            data;
    sft_ftp_transfer_t       *transfer;

    sft_uint_t                errors;
    sft_uint_t                login_failures;
    sft_uint_t                pending;     /* storage ops in flight */
    atomic_uint               cancel;      /* set at close: a HASH stops */
    sft_uint_t                hash_algo;   /* SFT_FTP_HASH_* of HASH */
    sft_uint_t                facts_off;   /* SFT_FTP_FACT_*, OPTS MLST */
    sft_vfs_rule_t           *rules_alloc; /* kept for a login after REIN */
    sft_uint_t                nrules_alloc;

    unsigned                  logged_in:1;
    unsigned                  busy:1;      /* a command is completing */
    unsigned                  quit:1;      /* close after the replies */
    unsigned                  closed:1;    /* the sockets are gone */
    unsigned                  counted:1;   /* sft_auth_connection_open */
    unsigned                  epsv_all:1;
    unsigned                  utf8:1;
    unsigned                  binary:1;
    unsigned                  tls:1;       /* the control channel is TLS */
    unsigned                  tls_start:1; /* AUTH: handshake after 234 */
    unsigned                  implicit:1;  /* "listen ... ssl" */
    unsigned                  pbsz:1;
    unsigned                  prot_p:1;    /* data connections use TLS */
    unsigned                  rang:1;      /* a RANG is pending */
    unsigned                  broke:1;     /* a transfer ended on its data
                                              connection (426) since the
                                              last command */
};


/* sft_ftp_parse.c */
sft_int_t sft_ftp_parse_command(sft_ftp_session_t *s);

/* sft_ftp_session.c */
void sft_ftp_init_connection(sft_connection_t *c);
void sft_ftp_reply(sft_ftp_session_t *s, sft_uint_t code, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));
void sft_ftp_reply_raw(sft_ftp_session_t *s, u_char *text, size_t len);
void sft_ftp_resume(sft_ftp_session_t *s);
void sft_ftp_close_session(sft_ftp_session_t *s);
void sft_ftp_session_free(sft_ftp_session_t *s);
sft_int_t sft_ftp_storage_op(sft_ftp_session_t *s, sft_ftp_next_pt next);
sft_storage_req_t *sft_ftp_op_request(sft_ftp_session_t *s);
sft_int_t sft_ftp_op_result(sft_ftp_session_t *s, sft_int_t rc,
    sft_ftp_next_pt next);
void sft_ftp_reply_storage_error(sft_ftp_session_t *s, sft_storage_req_t *r);
sft_int_t sft_ftp_user_login(sft_ftp_session_t *s);
sft_int_t sft_ftp_user_password(sft_ftp_session_t *s);
sft_int_t sft_ftp_auth(sft_ftp_session_t *s);
sft_int_t sft_ftp_login_allowed(sft_ftp_session_t *s);
void sft_ftp_logout(sft_ftp_session_t *s);

/* sft_ftp_commands.c */
sft_ftp_command_t *sft_ftp_find_command(sft_str_t *verb);
u_char *sft_ftp_quote_path(sft_pool_t *pool, u_char *path, size_t len,
    size_t *outlen);

/* sft_ftp_hash.c */
sft_int_t sft_ftp_hash(sft_ftp_session_t *s);
sft_int_t sft_ftp_hash_select(sft_ftp_session_t *s, u_char *name,
    size_t len);
u_char *sft_ftp_hash_feat(sft_ftp_session_t *s, u_char *p, u_char *last);
const char *sft_ftp_hash_name(sft_uint_t algo);

/* sft_ftp_pasv.c */
sft_int_t sft_ftp_passive(sft_ftp_session_t *s, sft_uint_t extended);
void sft_ftp_passive_slice(sft_uint_t min, sft_uint_t max, sft_uint_t slot,
    sft_uint_t workers, sft_uint_t *lo, sft_uint_t *hi);
struct in_addr *sft_ftp_pasv_lookup(sft_array_t *rules, struct sockaddr *peer,
    struct sockaddr *dst);

/* sft_ftp_data.c */
sft_connection_t *sft_ftp_data_conn(sft_ftp_session_t *s, int fd,
    struct sockaddr_storage *sa, socklen_t len);
void sft_ftp_data_connected(sft_ftp_session_t *s);
void sft_ftp_data_close(sft_ftp_session_t *s);
void sft_ftp_data_finish(sft_ftp_session_t *s);
sft_int_t sft_ftp_port(sft_ftp_session_t *s, sft_uint_t extended);
sft_int_t sft_ftp_active_connect(sft_ftp_session_t *s);
sft_int_t sft_ftp_local_sockaddr(sft_ftp_session_t *s,
    struct sockaddr_storage *local, socklen_t *len);
sft_int_t sft_ftp_parse_port(u_char *p, size_t len,
    struct sockaddr_storage *sa, socklen_t *salen);
sft_int_t sft_ftp_parse_eprt(u_char *p, size_t len,
    struct sockaddr_storage *sa, socklen_t *salen);
sft_int_t sft_ftp_port_check(struct sockaddr *sa, struct sockaddr *peer);
sft_uint_t sft_ftp_same_address(struct sockaddr *a, struct sockaddr *b);
void sft_ftp_port_set(struct sockaddr *sa, sft_uint_t port);
sft_uint_t sft_ftp_port_get(struct sockaddr *sa);

/* sft_ftp_transfer.c */
sft_int_t sft_ftp_transfer_start(sft_ftp_session_t *s, sft_uint_t kind);
void sft_ftp_transfer_connected(sft_ftp_session_t *s);
void sft_ftp_transfer_abort(sft_ftp_session_t *s, sft_uint_t reply);
void sft_ftp_transfer_run(sft_ftp_session_t *s);
void sft_ftp_data_event(sft_event_t *ev);
void sft_ftp_transfer_req(sft_ftp_session_t *s, sft_ftp_transfer_t *t);

/* sft_ftp_list.c */
u_char *sft_ftp_list_format(sft_ftp_session_t *s, sft_uint_t kind,
    u_char *p, u_char *last, u_char *name, size_t len,
    sft_storage_stat_t *st, uint32_t perms);
sft_int_t sft_ftp_mlst(sft_ftp_session_t *s);
sft_int_t sft_ftp_stat_path(sft_ftp_session_t *s);
sft_int_t sft_ftp_list_fill(sft_ftp_session_t *s, sft_ftp_transfer_t *t);
u_char *sft_ftp_facts(sft_ftp_session_t *s, u_char *p, u_char *last,
    sft_uint_t star);
void sft_ftp_facts_select(sft_ftp_session_t *s, u_char *list, size_t len);

#define SFT_FTP_LIST_ENTRY_MAX  (SFT_STORAGE_NAME_MAX * 2 + 256)


extern sft_uint_t  sft_ftp_stat_sessions;
extern sft_module_t  sft_ftp_module;
extern sft_module_t  sft_ftp_core_module;


#endif /* _SFT_FTP_H_INCLUDED_ */
