/*
 * sft_http_api_recount.c -- POST /api/v1/users/NAME/recount: the user's
 * home counted again by the storage on the thread pool, for files put in
 * or taken out behind the server's back; the count replaces the user's
 * usage in the shared zone, which every worker's quota checks read.  The
 * answer waits for the count.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api.h>
#include <sft_users.h>
#include <sft_vfs.h>


#define SFT_HTTP_RECOUNT_PREFIX  "/api/v1/users/"
#define SFT_HTTP_RECOUNT_SUFFIX  "/recount"


typedef struct {
    sft_vfs_recount_t    rc;
    sft_http_request_t  *request;
    sft_user_t          *user;
} sft_http_api_recount_t;


static sft_int_t sft_http_api_recount(sft_http_request_t *r);


const sft_http_api_route_t  sft_http_api_recount_routes[] = {
    sft_http_api_route(SFT_HTTP_RECOUNT_PREFIX "*" SFT_HTTP_RECOUNT_SUFFIX,
                       SFT_HTTP_POST, sft_http_api_recount),
    sft_http_api_null_route
};


/* the answer, its audit line and the user given back */

static sft_int_t
sft_http_api_recount_answer(sft_http_api_recount_t *hr)
{
    json_t              *o;
    sft_int_t            rc;
    sft_http_request_t  *r = hr->request;
    sft_storage_req_t   *req = &hr->rc.req;

    if (req->err != SFT_STORAGE_OK) {
        rc = sft_http_api_refuse(r, &hr->rc.user, 500,
                                 "the home could not be counted");
        sft_user_release(hr->user);
        return rc;
    }

    sft_http_api_audit(r, &hr->rc.user, 200, "");
    sft_user_release(hr->user);

    o = json_pack("{s:I, s:I}", "bytes", (json_int_t) req->usage.bytes,
                  "files", (json_int_t) req->usage.files);
    if (o == NULL) {
        return SFT_ERROR;
    }

    return sft_http_api_send_json(r, 200, o);
}


static void
sft_http_api_recount_done(sft_vfs_recount_t *rc)
{
    sft_http_api_recount_t  *hr = rc->data;

    (void) sft_http_api_recount_answer(hr);

    sft_http_resume(hr->request);
}


static sft_int_t
sft_http_api_recount(sft_http_request_t *r)
{
    sft_int_t                rc;
    sft_str_t                name, none = sft_null_string;
    sft_user_t              *u;
    sft_http_api_recount_t  *hr;

    /* the route's "*" is one segment: the name */

    name.data = r->path.data + sizeof(SFT_HTTP_RECOUNT_PREFIX) - 1;
    name.len = r->path.len - (sizeof(SFT_HTTP_RECOUNT_PREFIX) - 1)
               - (sizeof(SFT_HTTP_RECOUNT_SUFFIX) - 1);

    if (sft_users_valid_name(&name) != SFT_OK) {
        name = none;
    }

    u = name.len ? sft_users_lookup(&name, r->connection->log) : NULL;

    if (u == NULL) {
        return sft_http_api_refuse(r, &name, 404, "no such user");
    }

    hr = sft_pcalloc(r->pool, sizeof(sft_http_api_recount_t));
    if (hr == NULL) {
        return SFT_ERROR;
    }

    hr->request = r;
    hr->user = sft_user_acquire(u);
    hr->rc.handler = sft_http_api_recount_done;
    hr->rc.data = hr;

    rc = sft_vfs_usage_recount(&hr->rc, u, r->pool, r->connection->log);

    if (rc == SFT_AGAIN) {
        return SFT_AGAIN;
    }

    if (rc == SFT_OK) {
        return sft_http_api_recount_answer(hr);
    }

    rc = (rc == SFT_DECLINED)
         ? sft_http_api_refuse(r, &name, 409,
                               "a recount of the user runs already")
         : sft_http_api_refuse(r, &name, 500,
                               "the user's usage cannot be counted");

    sft_user_release(hr->user);

    return rc;
}
