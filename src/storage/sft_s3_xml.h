/*
 * sft_s3_xml.h -- the XML bodies S3 answers with, parsed by libxml2 into
 * pool-allocated structures: errors, listings, multipart uploads, copies;
 * and the keys STS answers AssumeRoleWithWebIdentity with.
 */

#ifndef _SFT_S3_XML_H_INCLUDED_
#define _SFT_S3_XML_H_INCLUDED_


#include <sft_s3_sign.h>


/* a body longer than this is refused unparsed (1000 keys of 1024 bytes) */
#define SFT_S3_XML_MAX     (4 * 1024 * 1024)

/* S3's largest object, 5 TiB: a bigger Size is refused */
#define SFT_S3_OBJECT_MAX  ((off_t) 5 * 1024 * 1024 * 1024 * 1024)


typedef struct {
    sft_str_t          code;
    sft_str_t          message;
    sft_str_t          request_id;
} sft_s3_error_t;


typedef struct {
    sft_str_t          key;
    off_t              size;
    time_t             mtime;
    sft_str_t          etag;
} sft_s3_object_t;


/* ListObjectsV2: keys and prefixes URL-decoded when EncodingType is url */

typedef struct {
    sft_array_t        objects;          /* sft_s3_object_t */
    sft_array_t        prefixes;         /* sft_str_t */
    sft_str_t          next_token;
    sft_uint_t         key_count;
    unsigned           truncated:1;
} sft_s3_list_t;


typedef struct {
    sft_str_t          key;
    sft_str_t          upload_id;
    time_t             initiated;
} sft_s3_upload_t;


typedef struct {
    sft_array_t        uploads;          /* sft_s3_upload_t */
    sft_str_t          next_key_marker;
    sft_str_t          next_upload_id_marker;
    unsigned           truncated:1;
} sft_s3_uploads_t;


/*
 * CompleteMultipartUpload, CopyObject, UploadPartCopy: the ETag element
 * must be there, but may be empty (Ceph RGW 16 answers a
 * CompleteMultipartUpload with <ETag></ETag>)
 */

typedef struct {
    sft_str_t          etag;
    time_t             mtime;            /* 0 where the answer has none */
} sft_s3_result_t;


/*
 * Each returns SFT_OK with the structure filled; SFT_DECLINED when the
 * body is an <Error> document (or STS's <ErrorResponse> around one), with
 * err filled (S3 answers a CompleteMultipartUpload or a copy that failed
 * late with 200 and such a body); SFT_ERROR for a body that is too long,
 * not well formed, has a DTD, or lacks what the answer must have.
 */
sft_int_t sft_s3_xml_error(u_char *p, size_t n, sft_pool_t *pool,
    sft_s3_error_t *err);
sft_int_t sft_s3_xml_list(u_char *p, size_t n, sft_pool_t *pool,
    sft_s3_list_t *list, sft_s3_error_t *err);
sft_int_t sft_s3_xml_initiate(u_char *p, size_t n, sft_pool_t *pool,
    sft_str_t *upload_id, sft_s3_error_t *err);
sft_int_t sft_s3_xml_uploads(u_char *p, size_t n, sft_pool_t *pool,
    sft_s3_uploads_t *uploads, sft_s3_error_t *err);
sft_int_t sft_s3_xml_result(u_char *p, size_t n, sft_pool_t *pool,
    sft_s3_result_t *result, sft_s3_error_t *err);

/*
 * AssumeRoleWithWebIdentityResponse: AccessKeyId, SecretAccessKey,
 * SessionToken (all printable ASCII, the secret at most
 * SFT_S3_SECRET_MAX) and Expiration into creds.
 */
sft_int_t sft_s3_xml_sts(u_char *p, size_t n, sft_pool_t *pool,
    sft_s3_creds_t *creds, sft_s3_error_t *err);

/* "2026-12-01T18:52:47.000Z" (ISO 8601, UTC) to seconds, -1 if invalid */
time_t sft_s3_parse_time(u_char *p, size_t n);

/* "Tue, 01 Dec 2026 21:48:29 GMT" (Last-Modified) to seconds, 0 if invalid */
time_t sft_s3_parse_http_time(u_char *p, size_t n);


#endif /* _SFT_S3_XML_H_INCLUDED_ */
