/*
 * sft_s3_storage.h -- the s3 storage driver's private parts: a storage
 * block's configuration (which is also the driver's instance), the state
 * of one operation in flight, and what its files (configuration and ops
 * table, listings, reads, uploads) share.
 */

#ifndef _SFT_S3_STORAGE_H_INCLUDED_
#define _SFT_S3_STORAGE_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>
#include <sft_storage.h>
#include <sft_s3_client.h>
#include <sft_s3_creds.h>
#include <sft_s3_imds.h>
#include <sft_s3_sts.h>
#include <sft_s3_upload.h>
#include <sft_s3_copy.h>


#define SFT_S3_CREDS_FILE       1
#define SFT_S3_CREDS_ENV        2
#define SFT_S3_CREDS_IMDS       3
#define SFT_S3_CREDS_WEB        4      /* web identity, STS */

/* a key is at most 1024 bytes in S3 */
#define SFT_S3_KEY_MAX          1024


typedef struct sft_s3_op_s  sft_s3_op_t;

typedef void (*sft_s3_op_pt)(sft_s3_op_t *op);


#define SFT_S3_MEMO_ETAG        80       /* longer ETags are not kept */

/* what a HEAD or peek (and listing) of a name answered: sft_s3_memo.c */
typedef struct {
    sft_str_t              key;           /* own memory; NULL: free slot */
    uint64_t               hash;
    sft_msec_t             until;
    sft_uint_t             found;         /* SFT_S3_FOUND_* */
    uint64_t               session;       /* whose stat or open asked */
    sft_storage_stat_t     st;
    uint32_t               crc32c;
    unsigned               crc32c_known:1;
    size_t                 etag_len;
    u_char                 etag[SFT_S3_MEMO_ETAG];
    u_char                *body;          /* the whole file, from a peek:
                                             own memory, or NULL */
} sft_s3_memo_t;


#define SFT_S3_GLANCE_KEYS      256      /* a look's page */
#define SFT_S3_GLANCE_NAMES     512      /* ... and the names made since */

/* a session's look at a directory, the names after one: sft_s3_glance.c */
typedef struct {
    uint64_t               session;       /* whose; 0: a free slot */
    sft_msec_t             until;
    sft_str_t              dir;           /* own memory, after's and
                                             last's too */
    sft_str_t              after;         /* the page's names follow it */
    sft_str_t              last;          /* ... up to it; empty: all */
    sft_uint_t             nnames;
    uint64_t               names[SFT_S3_GLANCE_NAMES];  /* key hashes */
} sft_s3_glance_t;


/* a storage block of driver s3: its settings, then its worker state */

typedef struct {
    sft_s3_client_t        client;        /* endpoint, bucket, region,
                                             addressing, TLS, timeout,
                                             retries, credentials */
    sft_str_t              prefix;        /* "" or "a/b/" */
    sft_uint_t             creds_from;    /* SFT_S3_CREDS_* */
    sft_str_t              creds_file;
    sft_s3_creds_t         creds;
    size_t                 part_size;
    sft_uint_t             parts_in_flight;
    sft_str_t              storage_class; /* "" : the bucket's default */
    sft_uint_t             sse;           /* sft_s3_sse_e */
    sft_str_t              sse_key;       /* kms: the key id, or "" */
    sft_uint_t             checksum;      /* sft_s3_checksum_e */
    time_t                 sweep_age;     /* abandoned multipart uploads */
    sft_uint_t             rename_max_objects;
    size_t                 copy_threshold;  /* larger: multipart copies */
    sft_flag_t             ignore_chmod;
    sft_msec_t             memo_time;     /* s3_metadata_reuse, 0: off */
    size_t                 peek;          /* s3_stat_peek, 0: HEADs */
    sft_s3_sts_conf_t      sts;           /* SFT_S3_CREDS_WEB */

    sft_storage_t         *storage;
    uint64_t               dev;           /* ids: a constant per storage */

    /* in a worker */
    sft_s3_imds_t         *imds;
    sft_s3_sts_t          *web;
    sft_s3_op_t           *ops;           /* in flight, for cancel */
    sft_s3_sweep_t        *sweep;         /* running, in slot 0 */
    sft_pool_t            *pool;          /* the worker's cycle's */
    sft_uint_t             looked;        /* the first keys came */
    sft_s3_memo_t         *memo;          /* SFT_S3_MEMO_SLOTS, at need */
    sft_s3_glance_t       *glances;       /* SFT_S3_GLANCES, at need */
    sft_uint_t             changes;       /* what this worker changed */
    size_t                 memo_bodies;   /* the memo's bytes of files */
    sft_uint_t             peeks;         /* tags peeks apart */
    sft_log_t             *log;
} sft_s3_storage_conf_t;


/* one storage operation: the S3 requests it takes, one at a time */

struct sft_s3_op_s {
    sft_storage_req_t     *req;
    sft_s3_storage_conf_t *conf;
    sft_s3_request_t      *r;             /* the one running or just done */
    sft_s3_op_pt           handler;       /* r is done */
    sft_s3_op_pt           then;          /* after a probe */
    sft_s3_op_pt           cleanup;       /* data's, when op is freed */
    sft_str_t              key;           /* prefix + path, in the op */
    sft_str_t              key2;          /* rename: prefix + path2 */
    sft_uint_t             found;         /* a probe: SFT_S3_FOUND_* */
    sft_uint_t             changes;       /* conf's, when it began */
    sft_s3_memo_t          memo;          /* a probe answered by the memo
                                             (its key not kept) */
    sft_event_t            ev;            /* ... goes on from here */
    sft_str_t              token;         /* a listing's next page, own
                                             memory */
    void                  *data;
    unsigned               keep:1;        /* a directory's: outlives its
                                             requests, freed by CLOSEDIR */
    unsigned               memo_used:1;

    sft_s3_op_t           *prev;
    sft_s3_op_t           *next;
    u_char                 keybuf[SFT_S3_KEY_MAX + 2];
    u_char                 key2buf[SFT_S3_KEY_MAX + 2];
};


#define SFT_S3_FOUND_NONE       0
#define SFT_S3_FOUND_FILE       1
#define SFT_S3_FOUND_DIR        2


/* sft_s3_storage.c: operations and their requests */
sft_s3_op_t *sft_s3_op_create(sft_storage_req_t *req);
sft_s3_op_t *sft_s3_op_below(sft_storage_req_t *req,
    sft_storage_err_t root_err);
sft_int_t sft_s3_op_request(sft_s3_op_t *op, const char *method,
    sft_str_t *key, sft_s3_op_pt handler);
sft_int_t sft_s3_op_list(sft_s3_op_t *op, sft_str_t *prefix,
    sft_uint_t delimiter, sft_uint_t max_keys, sft_str_t *token,
    sft_s3_op_pt handler);
void sft_s3_op_fail(sft_s3_op_t *op, const char *what);
sft_storage_err_t sft_s3_error(sft_s3_storage_conf_t *conf, sft_log_t *log,
    sft_s3_request_t *r, const char *what, sft_str_t *key);
void sft_s3_op_finish(sft_s3_op_t *op, sft_storage_err_t err);
void sft_s3_op_free(sft_s3_op_t *op);
sft_int_t sft_s3_op_again(sft_s3_op_t *op, sft_int_t rc);
sft_int_t sft_s3_probe(sft_s3_op_t *op, sft_s3_op_pt then);
sft_int_t sft_s3_probe_peek(sft_s3_op_t *op, sft_s3_op_pt then);
sft_int_t sft_s3_op_head(sft_s3_op_t *op, sft_str_t *key,
    sft_s3_op_pt handler);
void sft_s3_op_send(sft_s3_op_t *op, const char *method);
void sft_s3_dir_key(sft_s3_op_t *op);
void sft_s3_stat_file(sft_s3_storage_conf_t *conf, sft_str_t *key,
    off_t size, time_t mtime, sft_storage_stat_t *st);
void sft_s3_stat_head(sft_s3_storage_conf_t *conf, sft_str_t *key,
    sft_s3_request_t *r, sft_storage_stat_t *st);
void sft_s3_stat_dir(sft_s3_storage_conf_t *conf, sft_str_t *key,
    sft_storage_stat_t *st);
sft_int_t sft_s3_op_list_after(sft_s3_op_t *op, sft_str_t *prefix,
    sft_uint_t delimiter, sft_uint_t max_keys, sft_str_t *token,
    sft_str_t *after, sft_s3_op_pt handler);
sft_int_t sft_s3_list_query(sft_s3_request_t *r, sft_str_t *prefix,
    sft_uint_t delimiter, sft_uint_t max_keys, sft_str_t *token,
    sft_str_t *after);
sft_int_t sft_s3_page(sft_s3_op_t *op, sft_s3_list_t *list);
sft_int_t sft_s3_op_next_page(sft_s3_op_t *op, sft_s3_op_pt handler);
sft_int_t sft_s3_cancel(sft_storage_req_t *req);
uint64_t sft_s3_key_hash(u_char *p, size_t n);

/* sft_s3_memo.c: a name's last HEAD or peek, for the open or the same
   session's stat that follows */
#define SFT_S3_MEMO_ANY    0              /* an open to create or replace */
#define SFT_S3_MEMO_FILE   1              /* an open for reading */
#define SFT_S3_MEMO_MINE   2              /* a stat: the same session's */
#define SFT_S3_MEMO_CRC    3              /* an open for a digest: a file
                                             whose CRC-32C is known */

sft_s3_memo_t *sft_s3_memo_put(sft_s3_op_t *op, sft_uint_t found,
    sft_s3_request_t *r);
void sft_s3_memo_body(sft_s3_storage_conf_t *conf, sft_s3_memo_t *m,
    u_char *body, uint32_t crc32c);
sft_int_t sft_s3_memo_answer(sft_s3_op_t *op, sft_s3_op_pt then,
    sft_uint_t which);
void sft_s3_memo_changed(sft_s3_storage_conf_t *conf, sft_str_t *key);
void sft_s3_memo_free(sft_s3_storage_conf_t *conf);

/* sft_s3_glance.c: the names after one in its directory, for the memo */
sft_int_t sft_s3_glance(sft_s3_op_t *op, sft_s3_op_pt handler);
sft_int_t sft_s3_glance_take(sft_s3_op_t *op, sft_s3_list_t *list);
sft_uint_t sft_s3_glance_absent(sft_s3_op_t *op, sft_uint_t mine);
void sft_s3_glance_add(sft_s3_storage_conf_t *conf, sft_str_t *key);
void sft_s3_glance_forget(sft_s3_storage_conf_t *conf);
void sft_s3_glance_free(sft_s3_storage_conf_t *conf);

/* sft_s3_peek.c: a stat by the first bytes of the object */
sft_int_t sft_s3_peek(sft_s3_op_t *op, sft_s3_op_pt handler);
void sft_s3_peek_answered(sft_s3_op_t *op, sft_s3_op_pt file,
    sft_s3_op_pt none, sft_s3_op_pt head);

/* sft_s3_confine.c: what the workers read, declared to Landlock */
sft_int_t sft_s3_confine(sft_cycle_t *cycle, sft_s3_storage_conf_t *scf);

/* sft_s3_op.c: the operations on names */
sft_int_t sft_s3_stat(sft_storage_req_t *req);
sft_int_t sft_s3_mkdir(sft_storage_req_t *req);
sft_int_t sft_s3_rmdir(sft_storage_req_t *req);
sft_int_t sft_s3_unlink(sft_storage_req_t *req);
sft_int_t sft_s3_statvfs(sft_storage_req_t *req);

/* sft_s3_attr.c */
sft_int_t sft_s3_setmtime(sft_storage_req_t *req);
sft_int_t sft_s3_chmod(sft_storage_req_t *req);

/* sft_s3_list.c */
sft_int_t sft_s3_opendir(sft_storage_req_t *req);
sft_int_t sft_s3_readdir(sft_storage_req_t *req);
sft_int_t sft_s3_closedir(sft_storage_req_t *req);
sft_int_t sft_s3_usage(sft_storage_req_t *req);

/* sft_s3_read.c */
sft_int_t sft_s3_open_read(sft_storage_req_t *req);
sft_int_t sft_s3_read(sft_storage_req_t *req);
sft_int_t sft_s3_close_read(sft_storage_req_t *req);
sft_int_t sft_s3_fstat(sft_storage_req_t *req);
sft_int_t sft_s3_read_cancel(sft_storage_req_t *req);
sft_int_t sft_s3_checksum(sft_storage_req_t *req);

/* sft_s3_rename.c */
sft_int_t sft_s3_rename(sft_storage_req_t *req);

/* sft_s3_write.c */
sft_int_t sft_s3_open_write(sft_storage_req_t *req);
sft_int_t sft_s3_write(sft_storage_req_t *req);
sft_int_t sft_s3_close_write(sft_storage_req_t *req);
sft_int_t sft_s3_fsetattr(sft_storage_req_t *req);
size_t sft_s3_room(sft_storage_file_t *file, off_t offset, size_t len,
    sft_event_t *wake);


/* every s3 storage's part fits in the buffer pool (siftpd -t) */
char *sft_s3_storage_pool_check(sft_cycle_t *cycle);

extern sft_storage_driver_t  sft_s3_storage_driver;


#endif /* _SFT_S3_STORAGE_H_INCLUDED_ */
