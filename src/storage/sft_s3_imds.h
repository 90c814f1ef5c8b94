/*
 * sft_s3_imds.h -- credentials of the instance's role from the EC2
 * instance metadata service (IMDSv2), fetched and refreshed on the loop.
 */

#ifndef _SFT_S3_IMDS_H_INCLUDED_
#define _SFT_S3_IMDS_H_INCLUDED_


#include <sft_s3_sign.h>
#include <sft_s3_multi.h>


#define SFT_S3_IMDS_ENDPOINT  "http://169.254.169.254"

/* fetched again this long (ms) after a failure */
#define SFT_S3_IMDS_AGAIN     10000

#define SFT_S3_IMDS_BODY_MAX  8192


typedef struct sft_s3_imds_s  sft_s3_imds_t;

struct sft_s3_imds_s {
    sft_s3_transfer_t    transfer;         /* first: curl's private */

    /* set by the owner */
    sft_str_t            endpoint;         /* SFT_S3_IMDS_ENDPOINT */
    sft_msec_t           timeout;
    sft_log_t           *log;
    void               (*on_update)(sft_s3_imds_t *m, sft_int_t rc);
    void                *data;

    /* the current keys, replaced in place by each refresh */
    sft_s3_creds_t       creds;

    /* private */
    sft_pool_t          *pool;
    sft_uint_t           step;
    struct curl_slist   *slist;
    sft_event_t          refresh;
    size_t               len;
    u_char               body[SFT_S3_IMDS_BODY_MAX];
    u_char               token[1024];
    u_char               role[256];
    unsigned             running:1;
};


/*
 * Starts the first fetch: on_update runs on the loop with SFT_OK once the
 * keys are there, and after every refresh; with SFT_ERROR after a failed
 * fetch, which is tried again SFT_S3_IMDS_AGAIN ms later.
 */
sft_int_t sft_s3_imds_start(sft_s3_imds_t *m);

/* no fetch any more; the keys are freed with it */
void sft_s3_imds_stop(sft_s3_imds_t *m);


#endif /* _SFT_S3_IMDS_H_INCLUDED_ */
