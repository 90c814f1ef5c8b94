/*
 * sft_http_api_users.h -- the users API: a request becomes a job that
 * reads, changes and writes the user store on the thread pool.
 */

#ifndef _SFT_HTTP_API_USERS_H_INCLUDED_
#define _SFT_HTTP_API_USERS_H_INCLUDED_


#include <sft_http_api.h>
#include <sft_users.h>
#include <sft_user_store.h>


#define SFT_HTTP_API_LIST       0
#define SFT_HTTP_API_GET        1
#define SFT_HTTP_API_CREATE     2      /* this and above change the store */
#define SFT_HTTP_API_UPDATE     3
#define SFT_HTTP_API_DELETE     4

#define SFT_HTTP_API_ETAG_LEN   34     /* '"' 32 hex digits '"' */
#define SFT_HTTP_API_LIMIT_MAX  1000


typedef struct {
    sft_http_request_t  *request;
    sft_uint_t           op;
    sft_user_store_t    *store;
    sft_users_conf_t    *ucf;          /* the cost of new hashes */
    sft_str_t            arg;          /* the users file, or the store's
                                          "user_store" argument */
    sft_str_t            name;         /* from the path, or the new user's */
    u_char               name_buf[SFT_USER_NAME_MAX];
    sft_str_t            body;
    sft_str_t            if_match;
    sft_str_t            prefix;
    sft_uint_t           offset;
    sft_uint_t           limit;

    /* the answer */
    unsigned             shut_out:1;   /* deleted or disabled */
    sft_uint_t           status;
    char                *out;          /* malloc()ed JSON, or NULL */
    char                 etag[SFT_HTTP_API_ETAG_LEN + 1];
    char                 reason[128];  /* for the log */
} sft_http_api_job_t;


/* on a pool thread */
void sft_http_api_users_run(void *data, sft_log_t *log);

/* between the store and JSON */
json_t *sft_http_api_user_json(sft_user_t *u);
sft_int_t sft_http_api_user_etag(sft_user_t *u, char *etag);
sft_uint_t sft_http_api_user_apply(sft_http_api_job_t *job,
    sft_users_t *users, sft_user_t *u, json_t *obj);
sft_uint_t sft_http_api_fail(sft_http_api_job_t *job, sft_uint_t status,
    const char *field, const char *fmt, ...);


#endif /* _SFT_HTTP_API_USERS_H_INCLUDED_ */
