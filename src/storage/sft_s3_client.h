/*
 * sft_s3_client.h -- asynchronous S3 requests on the worker's loop: a
 * client names the endpoint, bucket, region, addressing style, TLS trust
 * and credentials; a request is a method on a key with its query and
 * headers, a body from the caller's buffers and an answer delivered in
 * pieces, ending in one callback on the loop.
 */

#ifndef _SFT_S3_CLIENT_H_INCLUDED_
#define _SFT_S3_CLIENT_H_INCLUDED_


#include <sft_s3_sign.h>
#include <sft_s3_xml.h>
#include <sft_s3_multi.h>


/* request body buffers queued at once */
#define SFT_S3_CHUNKS         8

/* the longest wait between two attempts */
#define SFT_S3_BACKOFF_MAX    20000


typedef struct sft_s3_request_s  sft_s3_request_t;

typedef void (*sft_s3_handler_pt)(sft_s3_request_t *r);

/* SFT_OK: taken; SFT_AGAIN: not taken, the same bytes come again after
 * sft_s3_request_resume(); SFT_ERROR: the request is aborted */
typedef sft_int_t (*sft_s3_data_pt)(sft_s3_request_t *r, u_char *p,
    size_t n);


typedef struct {
    /* set by the owner (the driver's configuration) */
    sft_str_t            endpoint;         /* http[s]://host[:port] */
    sft_str_t            bucket;           /* empty, path-style: none */
    sft_str_t            region;
    sft_flag_t           path_style;       /* else bucket.host */
    sft_str_t            ca_file;          /* empty: the system's CAs */
    sft_flag_t           insecure;         /* TLS not verified (warned) */
    sft_msec_t           timeout;          /* one attempt, 0: none */
    sft_msec_t           connect_timeout;
    sft_uint_t           retries;          /* of an idempotent request */
    sft_msec_t           backoff;          /* the first wait, then doubled,
                                              half of it drawn at random */
    sft_s3_creds_t      *creds;            /* NULL: unsigned (STS) */
    sft_log_t           *log;

    /* sft_s3_client_init() */
    sft_str_t            host;             /* the Host header */
    sft_str_t            origin;           /* scheme://host[:port] */
    sft_str_t            prefix;           /* "/bucket" path-style, or "" */
    char                *ca_path;
    sft_s3_sign_key_t    key;
} sft_s3_client_t;


typedef struct {
    u_char              *data;
    size_t               len;
} sft_s3_chunk_t;


struct sft_s3_request_s {
    sft_s3_transfer_t    transfer;         /* first: curl's private */
    sft_s3_client_t     *client;
    sft_pool_t          *pool;             /* the request's own */

    /* set by the caller before sft_s3_request_start() */
    sft_str_t            method;
    sft_str_t            key;              /* unencoded, empty: the bucket */
    sft_s3_pair_t       *query;
    sft_uint_t           nquery;
    sft_s3_pair_t       *headers;
    sft_uint_t           nheaders;
    sft_str_t            body;             /* a body in memory: signed */
    off_t                body_length;      /* a streamed body's length */
    sft_s3_data_pt       on_data;          /* NULL: kept in response */
    sft_s3_handler_pt    on_sent;          /* a queued buffer is done */
    sft_s3_handler_pt    on_done;
    void                *data;
    size_t               max_response;     /* of a kept body */

    unsigned             streamed:1;       /* body from sft_s3_request_send */
    unsigned             idempotent:1;

    /* the outcome, for on_done */
    sft_int_t            rc;               /* SFT_OK: an HTTP answer */
    long                 status;
    sft_str_t            etag;
    off_t                content_length;   /* -1: not given; set before
                                              on_data sees a byte */
    time_t               last_modified;    /* 0: not given */
    time_t               meta_mtime;       /* x-amz-meta-mtime, 0: none */
    sft_str_t            content_type;     /* empty: not given */
    sft_str_t            disposition;      /* Content-Disposition, empty:
                                              not given */
    sft_str_t            response;         /* the kept body */
    sft_s3_error_t       error;            /* parsed from an error body */
    off_t                range_first;      /* Content-Range, when known */
    off_t                range_last;
    off_t                range_total;
    const char          *refused;          /* why the answer was refused */
    sft_uint_t           attempts;
    char                 curl_error[CURL_ERROR_SIZE];

    /* private */
    struct curl_slist   *slist;
    sft_s3_chunk_t       chunks[SFT_S3_CHUNKS];
    sft_uint_t           first;
    sft_uint_t           nchunks;
    size_t               response_size;
    off_t                delivered;
    sft_event_t          retry;
    uint32_t             crc_s3;           /* x-amz-checksum-crc32c */
    uint32_t             crc_meta;         /* x-amz-meta-crc32c */

    unsigned             crc_s3_known:1;
    unsigned             crc_composite:1;  /* a checksum of the parts' */
    unsigned             crc_meta_known:1;
    unsigned             running:1;
    unsigned             ended:1;
    unsigned             read_paused:1;
    unsigned             write_paused:1;
    unsigned             in_callback:1;
    unsigned             too_long:1;
    unsigned             range_known:1;
    unsigned             headers_ended:1;
};


/* the endpoint parsed, the multi handle of this process made */
sft_int_t sft_s3_client_init(sft_s3_client_t *cl, sft_pool_t *pool);

/* the endpoint parsed only: a configuration's check, no handle made */
sft_int_t sft_s3_client_endpoint(sft_s3_client_t *cl, sft_pool_t *pool);

/* the wait before an attempt again, after "attempts" made: the backoff
   doubled each time, at most SFT_S3_BACKOFF_MAX, its second half random */
sft_msec_t sft_s3_client_backoff(sft_s3_client_t *cl, sft_uint_t attempts);

sft_s3_request_t *sft_s3_request_create(sft_s3_client_t *cl);
sft_int_t sft_s3_request_start(sft_s3_request_t *r);

/*
 * A streamed body's next buffer, kept by the caller until on_sent says it
 * was sent; SFT_AGAIN when SFT_S3_CHUNKS are queued.  NULL, 0 ends it.
 */
sft_int_t sft_s3_request_send(sft_s3_request_t *r, u_char *p, size_t n);

/* after on_data returned SFT_AGAIN */
void sft_s3_request_resume(sft_s3_request_t *r);

/* no callback will come; then sft_s3_request_free() */
void sft_s3_request_cancel(sft_s3_request_t *r);
void sft_s3_request_free(sft_s3_request_t *r);

/*
 * The whole object's CRC-32C a HEAD or GET answered: the one its writer
 * kept in x-amz-meta-crc32c, else S3's own full-object checksum (asked
 * for with x-amz-checksum-mode; never a checksum of parts); SFT_DECLINED
 * when neither came.
 */
sft_int_t sft_s3_request_crc32c(sft_s3_request_t *r, uint32_t *crc);

/* 1 when the answer is 206 with a Content-Range of first-last/total */
sft_uint_t sft_s3_request_range_is(sft_s3_request_t *r, off_t first,
    off_t last, off_t total);

/* x-amz-copy-source of a key of r's bucket: "/bucket/key", URI-encoded,
   from r's pool; SFT_ERROR without memory */
sft_int_t sft_s3_copy_source(sft_s3_request_t *r, sft_str_t *key,
    sft_str_t *out);


#endif /* _SFT_S3_CLIENT_H_INCLUDED_ */
