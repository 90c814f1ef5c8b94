/*
 * sft_http_api_token.c -- GET /api/v1/token: the name and the scope of
 * the token the request carries ("loopback" with the admin scope where no
 * token file is configured), so a client need not try a write to learn
 * what it may do.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api.h>


static sft_int_t sft_http_api_token(sft_http_request_t *r);


const sft_http_api_route_t  sft_http_api_token_routes[] = {
    sft_http_api_route("/api/v1/token", SFT_HTTP_GET, sft_http_api_token),
    sft_http_api_null_route
};


static sft_int_t
sft_http_api_token(sft_http_request_t *r)
{
    json_t  *o;

    o = json_pack("{s:s%, s:s}", "name", (char *) r->token_name.data,
                  r->token_name.len,
                  "scope", r->token_admin ? "admin" : "read");
    if (o == NULL) {
        return SFT_ERROR;
    }

    return sft_http_api_send_json(r, 200, o);
}
