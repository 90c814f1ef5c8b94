/*
 * sft_http_api_bans.c -- /api/v1/bans: the login sources banned now (from
 * the auth zone every worker shares), and lifting a ban, which clears the
 * source's failures too.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api.h>
#include <sft_thread_pool.h>
#include <sft_auth.h>


#define SFT_HTTP_BANS  "/api/v1/bans"


static sft_int_t sft_http_api_bans(sft_http_request_t *r);


const sft_http_api_route_t  sft_http_api_bans_routes[] = {
    sft_http_api_route(SFT_HTTP_BANS, SFT_HTTP_GET, sft_http_api_bans),
    sft_http_api_route(SFT_HTTP_BANS "/*", SFT_HTTP_DELETE,
                       sft_http_api_bans),
    sft_http_api_null_route
};


static sft_int_t
sft_http_api_bans_list(sft_http_request_t *r)
{
    json_t          *a, *o;
    sft_uint_t       i;
    sft_auth_ban_t   ban;

    a = json_array();
    if (a == NULL) {
        return SFT_ERROR;
    }

    i = 0;

    while (sft_auth_ban_next(&i, &ban) == SFT_OK) {
        o = json_pack("{s:s, s:I, s:I}", "address", ban.address,
                      "failures", (json_int_t) ban.failures,
                      "until", (json_int_t) ban.until);

        if (o == NULL || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return SFT_ERROR;
        }
    }

    return sft_http_api_send_json(r, 200, a);
}


/* "ADDRESS" or "ADDRESS/BITS" as the list shows it: the address */

static sft_int_t
sft_http_api_bans_addr(sft_str_t *text, struct sockaddr_storage *ss)
{
    char                  buf[INET6_ADDRSTRLEN + 1];
    u_char               *slash;
    size_t                len;
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    slash = memchr(text->data, '/', text->len);
    len = slash ? (size_t) (slash - text->data) : text->len;

    if (len == 0 || len >= sizeof(buf)) {
        return SFT_ERROR;
    }

    sft_memcpy(buf, text->data, len);
    buf[len] = '\0';

    sft_memzero(ss, sizeof(struct sockaddr_storage));
    sin = (struct sockaddr_in *) ss;
    sin6 = (struct sockaddr_in6 *) ss;

    if (inet_pton(AF_INET, buf, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        return SFT_OK;
    }

    if (inet_pton(AF_INET6, buf, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        return SFT_OK;
    }

    return SFT_ERROR;
}


static sft_int_t
sft_http_api_bans(sft_http_request_t *r)
{
    sft_str_t                addr, none = sft_null_string;
    struct sockaddr_storage  ss;

    if (r->method != SFT_HTTP_DELETE) {
        return sft_http_api_bans_list(r);
    }

    addr.data = r->path.data + sizeof(SFT_HTTP_BANS);
    addr.len = r->path.len - sizeof(SFT_HTTP_BANS);

    if (sft_http_api_bans_addr(&addr, &ss) != SFT_OK) {
        return sft_http_api_error(r, 400, "address", "invalid address");
    }

    if (sft_auth_unban((struct sockaddr *) &ss) != SFT_OK) {
        return sft_http_api_refuse(r, &none, 404, "not banned");
    }

    sft_http_api_audit(r, &none, 204, "");

    sft_log_error(SFT_LOG_NOTICE, r->connection->log, 0,
                  "admin API: the ban of %.*s lifted, token \"%.*s\"",
                  SFT_STR_FMT(&addr), SFT_STR_FMT(&r->token_name));

    return sft_http_send_response(r, 204, NULL, NULL);
}
