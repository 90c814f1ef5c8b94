/*
 * sft_http_api_sessions.c -- /api/v1/sessions: the live FTP, FTPS and
 * SFTP sessions of every worker, from the sessions table in shared
 * memory, and ending them (one by its id, or all of a user's).  The
 * owning worker ends a session on its own loop; this one only asks.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api.h>
#include <sft_users.h>
#include <sft_session.h>
#include <sft_xfer.h>


#define SFT_HTTP_SESSIONS  "/api/v1/sessions"


static sft_int_t sft_http_api_sessions(sft_http_request_t *r);


static const char *const  sft_http_api_protocols[] = {
    "ftp", "ftps", "sftp"
};


const sft_http_api_route_t  sft_http_api_sessions_routes[] = {
    sft_http_api_route(SFT_HTTP_SESSIONS, SFT_HTTP_GET|SFT_HTTP_DELETE,
                       sft_http_api_sessions),
    sft_http_api_route(SFT_HTTP_SESSIONS "/*", SFT_HTTP_DELETE,
                       sft_http_api_sessions),
    sft_http_api_null_route
};


/* "?user=NAME", the only argument: SFT_ERROR for anything else */

static sft_int_t
sft_http_api_sessions_user(sft_http_request_t *r, sft_str_t *user)
{
    user->len = 0;

    if (r->args.len == 0) {
        return SFT_OK;
    }

    if (r->args.len <= 5 || sft_memcmp(r->args.data, "user=", 5) != 0) {
        return SFT_ERROR;
    }

    user->data = r->args.data + 5;
    user->len = r->args.len - 5;

    return sft_users_valid_name(user);
}


static json_t *
sft_http_api_session_json(sft_session_info_t *si)
{
    json_t      *o, *x;
    const char  *path;

    x = json_null();

    if (si->direction) {
        path = sft_xfer_path_name(si->data_path);

        x = json_pack("{s:s, s:s, s:s*, s:I}",
                      "direction", si->direction - 1 == SFT_XFER_DOWNLOAD
                                   ? "download" : "upload",
                      "path", si->path,
                      "data_path", path,
                      "rate", (json_int_t) si->rate);
    }

    o = json_pack("{s:s, s:s, s:s?, s:s, s:I, s:I, s:I, s:I, s:o?}",
                  "id", si->id,
                  "protocol", si->protocol < 3
                              ? sft_http_api_protocols[si->protocol] : "ftp",
                  "user", si->user[0] ? si->user : NULL,
                  "address", si->addr,
                  "port", (json_int_t) si->port,
                  "since", (json_int_t) si->since,
                  "bytes_in", (json_int_t) si->bytes_in,
                  "bytes_out", (json_int_t) si->bytes_out,
                  "transfer", x);

    return o;
}


static sft_int_t
sft_http_api_sessions_list(sft_http_request_t *r, sft_str_t *user)
{
    json_t              *a, *o;
    sft_uint_t           i;
    sft_session_info_t   si;

    a = json_array();
    if (a == NULL) {
        return SFT_ERROR;
    }

    i = 0;

    while (sft_session_next(&i, &si, user->len ? user : NULL) == SFT_OK) {
        o = sft_http_api_session_json(&si);

        if (o == NULL || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return SFT_ERROR;
        }
    }

    return sft_http_api_send_json(r, 200, a);
}


static sft_int_t
sft_http_api_sessions(sft_http_request_t *r)
{
    u_char      *p;
    size_t       len;
    sft_str_t    user, id, body, none = sft_null_string;
    sft_uint_t   n;

    if (sft_http_api_sessions_user(r, &user) != SFT_OK) {
        return sft_http_api_error(r, 400, "user", "invalid query");
    }

    if (r->method != SFT_HTTP_DELETE) {
        return sft_http_api_sessions_list(r, &user);
    }

    if (r->path.len > sizeof(SFT_HTTP_SESSIONS)) {
        id.data = r->path.data + sizeof(SFT_HTTP_SESSIONS);
        id.len = r->path.len - sizeof(SFT_HTTP_SESSIONS);

        if (user.len || sft_session_end_id(&id, &r->token_name) != SFT_OK) {
            return sft_http_api_refuse(r, &none, 404, "no such session");
        }

        n = 1;

    } else if (user.len) {
        n = sft_session_end_user(&user, &r->token_name);

    } else {
        return sft_http_api_error(r, 400, "user",
                                  "a session id or ?user= is needed");
    }

    sft_http_api_audit(r, &user, 200, "");

    sft_log_error(SFT_LOG_NOTICE, r->connection->log, 0,
                  "admin API: %lu session(s) asked to end, token \"%.*s\"",
                  (unsigned long) n, SFT_STR_FMT(&r->token_name));

    len = sizeof("{\"ended\":}") + 20;

    p = sft_pnalloc(r->pool, len);
    if (p == NULL) {
        return SFT_ERROR;
    }

    body.data = p;
    body.len = sft_slprintf(p, p + len, "{\"ended\":%lu}", (unsigned long) n)
               - p;

    return sft_http_send_response(r, 200, "application/json", &body);
}
