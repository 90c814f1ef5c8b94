/*
 * sft_http_api_openapi.c -- GET /api/v1/openapi.json: the OpenAPI 3
 * document of every route (docs/openapi.json), built into the binary so
 * the document served is the one of the routes this binary serves; a
 * read token is enough.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>


/* docs/openapi.json, its bytes in the read-only data */

__asm__ (
    "    .section .rodata\n"
    "    .balign 8\n"
    "sft_http_openapi_start:\n"
    "    .incbin \"docs/openapi.json\"\n"
    "sft_http_openapi_end:\n"
    "    .balign 8\n"
    "sft_http_openapi_size:\n"
    "    .quad sft_http_openapi_end - sft_http_openapi_start\n"
    "    .previous\n"
);

extern const u_char    sft_http_openapi_start[] __asm__ ("sft_http_openapi_start");
extern const uint64_t  sft_http_openapi_size __asm__ ("sft_http_openapi_size");


static char *sft_http_api_openapi_init(sft_conf_t *cf, void *conf);
static sft_int_t sft_http_api_openapi(sft_http_request_t *r);


static sft_proto_module_t  sft_http_api_openapi_module_ctx = {
    NULL,
    sft_http_api_openapi_init,
    NULL,
    NULL
};


sft_module_t  sft_http_api_openapi_module = {
    SFT_MODULE_V1,
    &sft_http_api_openapi_module_ctx,      /* module context */
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
sft_http_api_openapi_init(sft_conf_t *cf, void *conf)
{
    (void) conf;

    if (sft_http_add_route(cf, "/api/v1/openapi.json", SFT_HTTP_GET,
                           sft_http_api_openapi) != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static sft_int_t
sft_http_api_openapi(sft_http_request_t *r)
{
    sft_str_t  body;

    if (!sft_http_api_enabled(r)) {
        return sft_http_send_response(r, 404, NULL, NULL);
    }

    body.data = (u_char *) sft_http_openapi_start;
    body.len = (size_t) sft_http_openapi_size;

    return sft_http_send_response(r, 200, "application/json", &body);
}
