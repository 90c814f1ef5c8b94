/*
 * sft_s3_creds.h -- where an S3 client's keys come from: a file only its
 * owner may read, or the environment; and when keys that expire are
 * fetched again.
 */

#ifndef _SFT_S3_CREDS_H_INCLUDED_
#define _SFT_S3_CREDS_H_INCLUDED_


#include <sft_s3_sign.h>


/* a credentials file longer than this is refused */
#define SFT_S3_CREDS_FILE_MAX  65536

/* keys that expire are fetched again this long (s) before they do */
#define SFT_S3_CREDS_EARLY     300


/*
 * The file has the lines of an AWS shared credentials file:
 * aws_access_key_id, aws_secret_access_key and, optionally,
 * aws_session_token, as "name = value"; blank lines, comments ('#', ';')
 * and [section] lines are skipped.  SFT_ERROR, after one log line, when
 * it cannot be read, is open to group or others, or lacks a key.
 */
sft_int_t sft_s3_creds_file(const char *path, sft_pool_t *pool,
    sft_log_t *log, sft_s3_creds_t *creds);

/*
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN:
 * SFT_DECLINED when the first two are not both set.
 */
sft_int_t sft_s3_creds_env(sft_pool_t *pool, sft_s3_creds_t *creds);

/*
 * When to fetch keys that expire at expires again, in ms from now:
 * SFT_S3_CREDS_EARLY before, or halfway for keys that live less than
 * twice that; at least 1 s.
 */
sft_msec_t sft_s3_creds_refresh_in(time_t expires, time_t now);


#endif /* _SFT_S3_CREDS_H_INCLUDED_ */
