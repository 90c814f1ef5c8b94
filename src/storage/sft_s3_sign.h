/*
 * sft_s3_sign.h -- AWS Signature Version 4 for S3 requests: canonical
 * request, string to sign, the signing key (cached per day, region and
 * service) and the Authorization header.
 */

#ifndef _SFT_S3_SIGN_H_INCLUDED_
#define _SFT_S3_SIGN_H_INCLUDED_


#define SFT_S3_UNSIGNED_PAYLOAD  "UNSIGNED-PAYLOAD"

/* "YYYYMMDDTHHMMSSZ" */
#define SFT_S3_AMZ_DATE_LEN      16
#define SFT_S3_SHA256_HEX_LEN    64

/* AWS secrets are 40 characters; anything past this is refused */
#define SFT_S3_SECRET_MAX        256


typedef struct {
    sft_str_t          access_key;
    sft_str_t          secret_key;
    sft_str_t          session_token;    /* empty without one */
    time_t             expires;          /* 0: they do not expire */
} sft_s3_creds_t;


/* a header or a query parameter, as given: unencoded, any case */

typedef struct {
    sft_str_t          name;
    sft_str_t          value;
} sft_s3_pair_t;


/* the derived key of one day, region and service, and what made it */

typedef struct {
    u_char             key[32];
    u_char             made_of[32];      /* SHA-256 of secret, scope */
    unsigned           valid:1;
} sft_s3_sign_key_t;


typedef struct {
    sft_str_t          method;
    sft_str_t          host;             /* the Host header's value */
    sft_str_t          path;             /* unencoded, from the first '/' */
    sft_s3_pair_t     *query;
    sft_uint_t         nquery;
    sft_s3_pair_t     *headers;          /* signed besides host, x-amz-* */
    sft_uint_t         nheaders;
    sft_str_t          payload_hash;     /* hex SHA-256 or UNSIGNED-PAYLOAD */
    sft_str_t          region;
    sft_str_t          service;          /* "s3", "sts" */
    time_t             now;
    sft_s3_creds_t    *creds;
    sft_s3_sign_key_t *cache;            /* NULL: derived every time */
} sft_s3_sign_t;


/*
 * Fills amz_date (SFT_S3_AMZ_DATE_LEN bytes) and authorization, both
 * allocated from the pool; SFT_ERROR only when the pool is exhausted or a
 * field is out of range.
 */
sft_int_t sft_s3_sign(sft_s3_sign_t *s, sft_pool_t *pool,
    sft_str_t *amz_date, sft_str_t *authorization);

/* hex SHA-256 of a buffer, SFT_S3_SHA256_HEX_LEN characters into hex */
void sft_s3_sha256_hex(const u_char *p, size_t n, u_char *hex);

/*
 * S3's URI encoding: unreserved characters as they are, the rest as %XX
 * in upper case; '/' kept when keep_slash.  With dst NULL it only counts.
 */
size_t sft_s3_uri_encode(u_char *dst, const sft_str_t *src,
    sft_uint_t keep_slash);

/* the canonical query string, sorted as signing wants it, from the pool */
sft_int_t sft_s3_canonical_query(sft_s3_pair_t *query, sft_uint_t n,
    sft_pool_t *pool, sft_str_t *out);


#endif /* _SFT_S3_SIGN_H_INCLUDED_ */
