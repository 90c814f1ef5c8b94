/*
 * sft_http_api_users.c -- /api/v1/users: list, show, create, change and
 * delete users of the store.  The request's work runs on the worker's
 * thread pool (reading and writing the users file, argon2id hashing); the
 * connection waits meanwhile.  Every change is one line of the audit
 * log.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api_users.h>
#include <sft_thread_pool.h>
#include <sft_session.h>


#define SFT_HTTP_API_PREFIX      "/api/v1/users"
#define SFT_HTTP_API_LIMIT       100
#define SFT_HTTP_API_OFFSET_MAX  100000000


static char *sft_http_api_init_main_conf(sft_conf_t *cf, void *conf);
static sft_int_t sft_http_api_init_process(sft_cycle_t *cycle);
static sft_int_t sft_http_api_users(sft_http_request_t *r);
static void sft_http_api_done(sft_event_t *ev);


static sft_proto_module_t  sft_http_api_module_ctx = {
    NULL,
    sft_http_api_init_main_conf,
    NULL,
    NULL
};


sft_module_t  sft_http_api_users_module = {
    SFT_MODULE_V1,
    &sft_http_api_module_ctx,              /* module context */
    NULL,                                  /* module directives */
    SFT_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_http_api_init_process,             /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static const sft_http_api_route_t  sft_http_api_users_routes[] = {
    sft_http_api_route(SFT_HTTP_API_PREFIX, SFT_HTTP_GET|SFT_HTTP_POST,
                       sft_http_api_users),
    sft_http_api_route(SFT_HTTP_API_PREFIX "/*",
                       SFT_HTTP_GET|SFT_HTTP_PUT|SFT_HTTP_PATCH
                       |SFT_HTTP_DELETE, sft_http_api_users),
    sft_http_api_null_route
};


static sft_thread_pool_t  *sft_http_api_pool;


static char *
sft_http_api_init_main_conf(sft_conf_t *cf, void *conf)
{
    sft_users_conf_t  *ucf;

    (void) conf;

    /* the users routes rewrite the user store from a worker */

    ucf = (sft_users_conf_t *) sft_get_conf(cf->cycle->conf_ctx,
                                            sft_users_module);
    ucf->workers_write = 1;

    return sft_http_api_add_routes(cf, sft_http_api_users_routes);
}


static sft_int_t
sft_http_api_init_process(sft_cycle_t *cycle)
{
    sft_str_t  name = sft_string("default");

    sft_http_api_pool = sft_thread_pool_get(cycle, &name);

    return SFT_OK;
}


/* "offset", "limit" and "name" of the query; a field name on error */

static const char *
sft_http_api_args(sft_http_request_t *r, sft_http_api_job_t *job)
{
    u_char     *p, *end, *amp, *eq;
    sft_int_t   n;
    sft_str_t   key, value;

    job->limit = SFT_HTTP_API_LIMIT;

    p = r->args.data;
    end = p + r->args.len;

    for ( /* void */ ; p && p < end; p = amp + 1) {
        amp = memchr(p, '&', end - p);
        if (amp == NULL) {
            amp = end;
        }

        eq = memchr(p, '=', amp - p);
        if (eq == NULL) {
            eq = amp;
        }

        key.data = p;
        key.len = eq - p;
        value.data = eq < amp ? eq + 1 : amp;
        value.len = amp - value.data;

        if (sft_str_eq(&key, "name")) {
            job->prefix = value;
            continue;
        }

        if (!sft_str_eq(&key, "offset") && !sft_str_eq(&key, "limit")) {
            return "query";
        }

        /* at most 9 digits: no overflow before the range check */

        n = value.len && value.len <= 9 ? sft_atoi(value.data, value.len)
                                        : SFT_ERROR;

        if (key.data[0] == 'o') {
            if (n == SFT_ERROR || n > SFT_HTTP_API_OFFSET_MAX) {
                return "offset";
            }

            job->offset = n;

        } else {
            if (n == SFT_ERROR || n < 1 || n > SFT_HTTP_API_LIMIT_MAX) {
                return "limit";
            }

            job->limit = n;
        }
    }

    return NULL;
}


static sft_int_t
sft_http_api_users(sft_http_request_t *r)
{
    const char          *field;
    sft_users_conf_t    *ucf;
    sft_thread_task_t   *task;
    sft_http_api_job_t  *job;

    ucf = (sft_users_conf_t *) sft_get_conf(((sft_cycle_t *) sft_cycle)
                                            ->conf_ctx, sft_users_module);

    if (ucf->file.len == 0 && ucf->store == NULL) {
        return sft_http_api_error(r, 404, NULL,
                                  "no user store is configured");
    }

    task = sft_thread_task_alloc(r->pool, sizeof(sft_http_api_job_t));
    if (task == NULL) {
        return SFT_ERROR;
    }

    job = task->ctx;
    job->request = r;
    job->ucf = ucf;
    job->store = ucf->store ? ucf->store : &sft_user_store_file;
    job->arg = ucf->store ? ucf->store_arg : ucf->file;

    if (r->path.len == sizeof(SFT_HTTP_API_PREFIX) - 1) {
        job->op = r->method == SFT_HTTP_POST ? SFT_HTTP_API_CREATE
                                             : SFT_HTTP_API_LIST;

        field = sft_http_api_args(r, job);
        if (field) {
            return sft_http_api_error(r, 400, field, "invalid query");
        }

    } else {
        job->name.data = r->path.data + sizeof(SFT_HTTP_API_PREFIX);
        job->name.len = r->path.len - sizeof(SFT_HTTP_API_PREFIX);

        if (sft_users_valid_name(&job->name) != SFT_OK) {
            return sft_http_api_error(r, 404, NULL, "no such user");
        }

        job->op = r->method == SFT_HTTP_DELETE ? SFT_HTTP_API_DELETE
                  : (r->method == SFT_HTTP_PUT || r->method == SFT_HTTP_PATCH)
                  ? SFT_HTTP_API_UPDATE : SFT_HTTP_API_GET;
    }

    if (job->op == SFT_HTTP_API_CREATE || job->op == SFT_HTTP_API_UPDATE) {
        if (r->body.len == 0) {
            return sft_http_api_error(r, 400, NULL, "a JSON body is needed");
        }

        job->body = r->body;
    }

    /* the thread reads these while the connection waits */

    job->if_match = r->if_match;

    if (sft_http_api_pool == NULL) {
        return sft_http_api_error(r, 503, NULL, "no thread pool");
    }

    task->handler = sft_http_api_users_run;
    task->event.handler = sft_http_api_done;
    task->event.data = job;
    task->event.log = r->connection->log;

    if (sft_thread_task_post(sft_http_api_pool, task) != SFT_OK) {
        return sft_http_api_error(r, 503, NULL, "the thread pool is busy");
    }

    return SFT_AGAIN;
}


/* the sessions of a user who may not log in any more end too */

static void
sft_http_api_shut_out(sft_http_request_t *r, sft_http_api_job_t *job)
{
    sft_uint_t  n;

    if (!sft_http_api_end_sessions(r)) {
        return;
    }

    n = sft_session_end_user(&job->name, &r->token_name);

    if (n) {
        sft_log_error(SFT_LOG_NOTICE, r->connection->log, 0,
                      "admin API: %lu session(s) of \"%.*s\" asked to end, "
                      "token \"%.*s\"", (unsigned long) n,
                      SFT_STR_FMT(&job->name), SFT_STR_FMT(&r->token_name));
    }
}


/* back on the loop: the answer, its log and audit lines */

static void
sft_http_api_done(sft_event_t *ev)
{
    u_char              *p;
    sft_str_t            body;
    sft_http_request_t  *r;
    sft_http_api_job_t  *job;

    job = ev->data;
    r = job->request;

    if (job->status == 0) {
        job->status = 500;
    }

    if (job->op >= SFT_HTTP_API_CREATE) {
        sft_http_api_audit(r, &job->name, job->status, job->reason);
    }

    if (job->shut_out && job->status < 300) {
        sft_http_api_shut_out(r, job);
    }

    if (job->status >= 400) {
        sft_log_error(job->status >= 500 ? SFT_LOG_ERR : SFT_LOG_INFO,
                      r->connection->log, 0,
                      "admin API: %s, user \"%.*s\", token \"%.*s\"",
                      job->reason[0] ? job->reason : "failed",
                      SFT_STR_FMT(&job->name), SFT_STR_FMT(&r->token_name));
    }

    if (job->etag[0]) {
        p = sft_pnalloc(r->pool, sizeof("ETag: \r\n") + SFT_HTTP_API_ETAG_LEN);

        if (p) {
            r->extra_headers.data = p;
            r->extra_headers.len = sft_slprintf(p, p + sizeof("ETag: \r\n")
                                                + SFT_HTTP_API_ETAG_LEN,
                                                "ETag: %s\r\n", job->etag)
                                   - p;
        }
    }

    body.data = (u_char *) job->out;
    body.len = job->out ? strlen(job->out) : 0;

    (void) sft_http_send_response(r, job->status,
                                  body.len ? "application/json" : NULL,
                                  &body);

    free(job->out);
    job->out = NULL;

    sft_http_resume(r);
}
