/*
 * sft_http_api_token.c -- GET /api/v1/token: the name and the scope of
 * the token the request carries ("loopback" with the admin scope where no
 * token file is configured), so a client need not try a write to learn
 * what it may do.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api_users.h>


static char *sft_http_api_token_init(sft_conf_t *cf, void *conf);
static sft_int_t sft_http_api_token(sft_http_request_t *r);


static sft_proto_module_t  sft_http_api_token_module_ctx = {
    NULL,
    sft_http_api_token_init,
    NULL,
    NULL
};


sft_module_t  sft_http_api_token_module = {
    SFT_MODULE_V1,
    &sft_http_api_token_module_ctx,        /* module context */
    NULL,                                  /* module directives */
    SFT_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static char *
sft_http_api_token_init(sft_conf_t *cf, void *conf)
{
    (void) conf;

    if (sft_http_add_route(cf, "/api/v1/token", SFT_HTTP_GET,
                           sft_http_api_token) != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static sft_int_t
sft_http_api_token(sft_http_request_t *r)
{
    json_t  *o;

    if (!sft_http_api_enabled(r)) {
        return sft_http_send_response(r, 404, NULL, NULL);
    }

    o = json_pack("{s:s%, s:s}", "name", (char *) r->token_name.data,
                  r->token_name.len,
                  "scope", r->token_admin ? "admin" : "read");
    if (o == NULL) {
        return SFT_ERROR;
    }

    return sft_http_api_send_json(r, 200, o);
}
