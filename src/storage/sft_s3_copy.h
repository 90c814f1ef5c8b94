/*
 * sft_s3_copy.h -- a server-side copy of an object of the bucket to
 * another key, or onto itself with new metadata: one CopyObject up to a
 * threshold (S3 copies at most 5 GiB at once; some servers less), a
 * multipart copy above it (CreateMultipartUpload, UploadPartCopy of
 * ranges, CompleteMultipartUpload, aborted on a failure).  No byte goes
 * through siftpd either way.
 */

#ifndef _SFT_S3_COPY_H_INCLUDED_
#define _SFT_S3_COPY_H_INCLUDED_


#include <sft_s3_upload.h>


typedef struct sft_s3_copy_s  sft_s3_copy_t;

typedef void (*sft_s3_copy_done_pt)(sft_s3_copy_t *c, sft_int_t rc);


typedef struct {
    /*
     * the new object: client, key (the source's for a copy onto itself),
     * parts_in_flight, storage class, encryption, checksum, content type
     * (no_clobber is not for copies); mtime > 0 sets its x-amz-meta-mtime
     * (the other metadata of the source are then not kept but crc32c),
     * 0 keeps the source's metadata in a single copy and gives a
     * multipart copy (which has none of them) source_mtime
     */
    sft_s3_upload_conf_t   object;
    sft_str_t              source;        /* the key copied */
    off_t                  size;          /* the source's size */
    time_t                 source_mtime;  /* and time, 0: unknown */
    sft_str_t              etag;          /* copied only while the source's
                                             ETag is this; empty: any */
    uint32_t               crc32c;        /* the source's stored CRC-32C, */
    sft_flag_t             crc32c_known;  /* kept by a single copy with
                                             mtime */
    off_t                  threshold;     /* above it multipart; 0: 5 GiB */
    sft_s3_copy_done_pt    on_done;
    void                  *data;
} sft_s3_copy_conf_t;


struct sft_s3_copy_s {
    sft_s3_copy_conf_t     conf;
    sft_log_t             *log;
    sft_s3_request_t      *r;             /* a CopyObject */
    sft_s3_uploader_t     *up;            /* a multipart copy */
};


/*
 * SFT_OK: *out runs on the loop, conf->on_done follows once with SFT_OK,
 * SFT_DECLINED (a single copy: the source's ETag is no longer etag) or
 * SFT_ERROR (the failure logged), and *out is freed after it;
 * SFT_ERROR: nothing started (no memory, a size out of range).  The keys,
 * the ETag and the content type are copied.
 */
sft_int_t sft_s3_copy_start(sft_s3_copy_conf_t *conf, sft_log_t *log,
    sft_s3_copy_t **out);

/* stopped, no callback; a multipart copy aborted; c freed */
void sft_s3_copy_cancel(sft_s3_copy_t *c);


#endif /* _SFT_S3_COPY_H_INCLUDED_ */
