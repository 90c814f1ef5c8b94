/*
 * sft_sftp.h -- the SFTP module: configuration, the SSH session driven by
 * libssh on the worker's event loop, and SFTP v3 parsed by siftpd itself.
 */

#ifndef _SFT_SFTP_H_INCLUDED_
#define _SFT_SFTP_H_INCLUDED_


#include <libssh/libssh.h>
#include <libssh/server.h>
#include <libssh/callbacks.h>

#include <sft_proto.h>
#include <sft_peer.h>
#include <sft_vfs.h>
#include <sft_auth.h>
#include <sft_xfer_rate.h>
#include <sft_session.h>


#define SFT_SFTP_MAX_PACKET     (256 * 1024)      /* as OpenSSH */
#define SFT_SFTP_MAX_READ       (256 * 1024 - 1024)
#define SFT_SFTP_MAX_WRITE      (256 * 1024 - 1024)
#define SFT_SFTP_IN_SIZE        (SFT_SFTP_MAX_PACKET * 2 + 8)
#define SFT_SFTP_OUT_HIGH       (1024 * 1024)     /* stop parsing above */
#define SFT_SFTP_UNFLUSHED_MAX  (2 * 1024 * 1024) /* in libssh's buffer */
#define SFT_SFTP_MAX_INFLIGHT   64
#define SFT_SFTP_MAX_HANDLES    256
#define SFT_SFTP_DIR_REPLY      (64 * 1024)

/* SFTP v3 packet types */
#define SSH_FXP_INIT            1
#define SSH_FXP_VERSION         2
#define SSH_FXP_OPEN            3
#define SSH_FXP_CLOSE           4
#define SSH_FXP_READ            5
#define SSH_FXP_WRITE           6
#define SSH_FXP_LSTAT           7
#define SSH_FXP_FSTAT           8
#define SSH_FXP_SETSTAT         9
#define SSH_FXP_FSETSTAT        10
#define SSH_FXP_OPENDIR         11
#define SSH_FXP_READDIR         12
#define SSH_FXP_REMOVE          13
#define SSH_FXP_MKDIR           14
#define SSH_FXP_RMDIR           15
#define SSH_FXP_REALPATH        16
#define SSH_FXP_STAT            17
#define SSH_FXP_RENAME          18
#define SSH_FXP_READLINK        19
#define SSH_FXP_SYMLINK         20
#define SSH_FXP_STATUS          101
#define SSH_FXP_HANDLE          102
#define SSH_FXP_DATA            103
#define SSH_FXP_NAME            104
#define SSH_FXP_ATTRS           105
#define SSH_FXP_EXTENDED        200
#define SSH_FXP_EXTENDED_REPLY  201

#define SSH_FX_OK                 0
#define SSH_FX_EOF                1
#define SSH_FX_NO_SUCH_FILE       2
#define SSH_FX_PERMISSION_DENIED  3
#define SSH_FX_FAILURE            4
#define SSH_FX_BAD_MESSAGE        5
#define SSH_FX_OP_UNSUPPORTED     8

#define SSH_FILEXFER_ATTR_SIZE         0x00000001
#define SSH_FILEXFER_ATTR_UIDGID       0x00000002
#define SSH_FILEXFER_ATTR_PERMISSIONS  0x00000004
#define SSH_FILEXFER_ATTR_ACMODTIME    0x00000008
#define SSH_FILEXFER_ATTR_EXTENDED     0x80000000

#define SSH_FXF_READ            0x01
#define SSH_FXF_WRITE           0x02
#define SSH_FXF_APPEND          0x04
#define SSH_FXF_CREAT           0x08
#define SSH_FXF_TRUNC           0x10
#define SSH_FXF_EXCL            0x20


typedef struct sft_sftp_session_s  sft_sftp_session_t;
typedef struct sft_sftp_request_s  sft_sftp_request_t;
typedef struct sft_sftp_handle_s   sft_sftp_handle_t;
typedef struct sft_sftp_handler_s  sft_sftp_handler_t;


typedef struct {
    sft_proto_main_conf_t     proto;       /* must be first */
} sft_sftp_core_main_conf_t;


typedef struct {
    sft_proto_srv_conf_t      proto;       /* must be first */

    sft_str_t                 storage_name;
    sft_storage_t            *storage;
    sft_array_t              *host_keys;   /* sft_str_t, full names */
    sft_str_t                 ciphers;
    sft_str_t                 kex;
    sft_str_t                 macs;
    sft_msec_t                login_grace_time;
    sft_msec_t                idle_timeout;
    sft_uint_t                max_auth_tries;
    sft_uint_t                max_channels;  /* per connection */

    ssh_bind                  bind;        /* made in the master */
} sft_sftp_srv_conf_t;


/* a little-endian-free reader over one packet: every get is checked */
typedef struct {
    u_char                   *pos;
    u_char                   *last;
} sft_sftp_buf_t;


struct sft_sftp_handle_s {
    sft_uint_t                index;
    sft_uint_t                busy;        /* operations running on it */
    u_char                   *path;        /* virtual, NUL-terminated */
    size_t                    path_len;
    sft_storage_file_t        file;
    sft_storage_dir_t         dir;
    sft_uint_t                entry;       /* next dirent of the batch */
    sft_sftp_request_t       *closing;     /* CLOSE waits for busy == 0 */
    sft_sftp_request_t       *writes;      /* WRITEs one at a time: the
                                              first runs, the rest wait */
    sft_sftp_request_t      **writes_last;
    sft_storage_err_t         write_err;   /* a failed WRITE: no commit */
    uint32_t                  atime;       /* FSETSTAT's, set at CLOSE */
    off_t                     bytes;       /* read or written, for the
                                              transfer log */
    sft_msec_t                begin;
    uint32_t                  mtime;
    unsigned                  is_dir:1;
    unsigned                  opened:1;
    unsigned                  write:1;
    unsigned                  dir_read:1;  /* a batch has been read */
    unsigned                  released:1;  /* the session is gone */
    unsigned                  closed:1;    /* by the client's CLOSE */
    unsigned                  set_times:1; /* atime, mtime at CLOSE */
    unsigned                  read_vfs:1;  /* READs only through the VFS
                                              (no RWF_NOWAIT on the file) */
};


struct sft_sftp_request_s {
    sft_sftp_session_t       *session;
    sft_pool_t               *pool;
    sft_storage_req_t         req;
    uint32_t                  id;
    const sft_sftp_handler_t *handler;     /* of its type or extension */
    sft_sftp_handle_t        *handle;
    sft_sftp_request_t       *next;        /* the handle's WRITEs */
    uint64_t                  offset;      /* of a WRITE */
    size_t                    reserve;     /* of the output budget */
    sft_uint_t                step;
    u_char                   *path;        /* SETSTAT's, kept for a step */
    size_t                    path_len;
    u_char                   *data;        /* READ's reply, WRITE's bytes,
                                              READLINK's target */
    u_char                   *chunk;       /* of the shared buffer pool,
                                              which data is in, if set */
    size_t                    data_len;
    uint32_t                  attr_flags;
    uint64_t                  size;
    uint32_t                  perm;
    uint32_t                  atime;
    uint32_t                  mtime;
    void                     *ctx;         /* check-file, copy-data, the
                                              read probe */
};


/*
 * One for the SSH connection (libssh, the login, the user's VFS session
 * that counts against max_sessions), and one per session channel with the
 * channel's SFTP state and a copy of the VFS session: the requests of a
 * channel know only their own.
 */

struct sft_sftp_session_s {
    sft_sftp_session_t       *main;        /* the connection's */
    sft_sftp_session_t       *channels;    /* the main's list */
    sft_sftp_session_t       *next;        /* in the list */
    sft_uint_t                nchannels;   /* the main's, until freed */

    sft_connection_t         *connection;  /* not after the close */
    sft_peer_t                peer;
    sft_session_t             session;     /* the main's: in the sessions
                                              table */
    sft_pool_t               *pool;
    sft_log_t                *log;
    sft_sftp_srv_conf_t      *conf;

    ssh_session               ssh;
    ssh_event                 event;
    ssh_channel               channel;
    struct ssh_channel_callbacks_struct  ccb;

    ssh_message               auth_msg;    /* waits for the password */
    unsigned                  auth_deferred:1;  /* auth_msg is ours */
    sft_auth_request_t        auth;
    sft_event_t               delay;       /* failed login delay */
    u_char                    password[256];
    u_char                    user_data[SFT_USER_NAME_MAX + 1];
    sft_str_t                 user;
    sft_user_t               *account;
    sft_uint_t                auth_tries;
    sft_thread_pool_t        *thread_pool;
    sft_vfs_session_t         vfs;

    /* the user's rates: the main's, for all its channels */
    sft_xfer_rate_t           download;
    sft_xfer_rate_t           upload;
    sft_event_t               rate_ev;     /* the buckets have tokens */

    /* a READ or a WRITE waits for a chunk of the shared buffer pool */
    sft_buffer_waiter_t       chunk_waiter;

    /* channel data not yet parsed */
    u_char                   *in;
    size_t                    in_pos;
    size_t                    in_len;

    /* replies not yet given to libssh */
    u_char                   *out;
    size_t                    out_pos;
    size_t                    out_len;
    size_t                    out_size;
    size_t                    reserved;    /* by requests in flight */
    size_t                    unflushed;
    uint32_t                  window_max;

    sft_sftp_handle_t        *handles[SFT_SFTP_MAX_HANDLES];
    sft_uint_t                nhandles;
    sft_uint_t                inflight;
    sft_uint_t                pending;     /* storage ops, for the free */
    atomic_uint               cancel;      /* set at close: digests stop */
    sft_msec_t                active;      /* the last progress */

    unsigned                  kex_done:1;
    unsigned                  logged_in:1;
    unsigned                  sftp:1;      /* the subsystem started */
    unsigned                  inited:1;    /* INIT received */
    unsigned                  running:1;   /* in sft_sftp_run() */
    unsigned                  again:1;     /* run once more */
    unsigned                  closed:1;
    unsigned                  counted:1;
    unsigned                  banned:1;    /* told so on disconnect */
    unsigned                  eof:1;
    unsigned                  progress:1;  /* something moved */
};


/* sft_sftp.c */
sft_int_t sft_sftp_host_keys(sft_cycle_t *cycle, sft_sftp_srv_conf_t *conf);

/* sft_sftp_session.c */
void sft_sftp_init_connection(sft_connection_t *c);
void sft_sftp_resume(sft_sftp_session_t *s);
u_char *sft_sftp_reply_space(sft_sftp_session_t *s, size_t len);
void sft_sftp_op_finished(sft_sftp_session_t *s);

/* sft_sftp_packet.c */
sft_int_t sft_sftp_process(sft_sftp_session_t *s);
sft_int_t sft_sftp_get_u8(sft_sftp_buf_t *b, u_char *v);
sft_int_t sft_sftp_get_u32(sft_sftp_buf_t *b, uint32_t *v);
sft_int_t sft_sftp_get_u64(sft_sftp_buf_t *b, uint64_t *v);
sft_int_t sft_sftp_get_string(sft_sftp_buf_t *b, u_char **data,
    uint32_t *len);

/* sft_sftp_io.c */
void sft_sftp_rate_init(sft_sftp_session_t *s);

/* sft_sftp_handle.c */
void sft_sftp_free_handles(sft_sftp_session_t *s);


extern sft_uint_t  sft_sftp_stat_sessions;
extern sft_module_t  sft_sftp_module;
extern sft_module_t  sft_sftp_core_module;


#endif /* _SFT_SFTP_H_INCLUDED_ */
