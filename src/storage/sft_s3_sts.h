/*
 * sft_s3_sts.h -- the keys of a role assumed with a web identity token
 * (AssumeRoleWithWebIdentity against STS, as on EKS): the token file read
 * again on the thread pool before each fetch, the keys fetched and
 * refreshed on the loop.
 */

#ifndef _SFT_S3_STS_H_INCLUDED_
#define _SFT_S3_STS_H_INCLUDED_


#include <sft_thread_pool.h>
#include <sft_s3_client.h>


#define SFT_S3_STS_VERSION        "2011-06-15"
#define SFT_S3_STS_SESSION_NAME   "siftpd"

/* STS takes tokens of 4 to 20000 bytes: a longer file is refused */
#define SFT_S3_STS_TOKEN_MAX      20000

/* DurationSeconds as STS takes it; 0 leaves it to the role (an hour) */
#define SFT_S3_STS_DURATION_MIN   900
#define SFT_S3_STS_DURATION_MAX   43200

/* the wait after a failed fetch (ms), doubled after each one, up to */
#define SFT_S3_STS_AGAIN          10000
#define SFT_S3_STS_AGAIN_MAX      300000

#define SFT_S3_STS_BODY_MAX       65536


/* what the configuration says: the s3_credentials web_identity directive */

typedef struct {
    sft_str_t            role_arn;
    sft_str_t            token_file;
    sft_str_t            session_name;     /* empty: SFT_S3_STS_SESSION_NAME */
    sft_str_t            endpoint;         /* empty: https://sts.REGION... */
    sft_str_t            region;           /* the storage's */
    sft_uint_t           duration;         /* s, 0: the role's default */
} sft_s3_sts_conf_t;


typedef struct sft_s3_sts_s       sft_s3_sts_t;
typedef struct sft_s3_sts_read_s  sft_s3_sts_read_t;

struct sft_s3_sts_s {
    /* set by the owner */
    sft_s3_sts_conf_t   *conf;
    sft_thread_pool_t   *thread_pool;      /* reads the token file */
    sft_msec_t           timeout;          /* one attempt */
    sft_msec_t           again;            /* 0: SFT_S3_STS_AGAIN */
    sft_log_t           *log;
    void               (*on_update)(sft_s3_sts_t *m, sft_int_t rc);
    void                *data;

    /* the current keys, replaced in place by each refresh and kept
       through failed ones */
    sft_s3_creds_t       creds;

    /* private */
    sft_pool_t          *pool;             /* the client's */
    sft_pool_t          *keys_pool;
    sft_s3_client_t      client;
    sft_s3_request_t    *request;
    sft_s3_sts_read_t   *read;
    sft_event_t          refresh;
    sft_msec_t           wait;             /* after the next failure */
};


/*
 * The configuration checked where it is read (the role ARN and session
 * name as STS takes them, the duration in range, the endpoint made from
 * the region when none is given); SFT_ERROR after one log line.
 */
sft_int_t sft_s3_sts_conf_check(sft_s3_sts_conf_t *conf, sft_pool_t *pool,
    sft_log_t *log);

/*
 * "Web identity from the environment": AWS_ROLE_ARN,
 * AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_SESSION_NAME into conf;
 * SFT_DECLINED when the first two are not both set.
 */
sft_int_t sft_s3_sts_conf_env(sft_s3_sts_conf_t *conf, sft_pool_t *pool);

/*
 * Starts the first fetch: on_update runs on the loop with SFT_OK once the
 * keys are there, and after every refresh; with SFT_ERROR after a failed
 * fetch (the token file, the network or STS), logged once, which is tried
 * again after a wait that doubles while the old keys stay in creds.
 */
sft_int_t sft_s3_sts_start(sft_s3_sts_t *m);

/* no fetch any more; the keys are freed with it */
void sft_s3_sts_stop(sft_s3_sts_t *m);


#endif /* _SFT_S3_STS_H_INCLUDED_ */
