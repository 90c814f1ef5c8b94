/*
 * sft_http_api_openapi.c -- GET /api/v1/openapi.json: the OpenAPI 3
 * document of every route (docs/openapi.json), built into the binary so
 * the document served is the one of the routes this binary serves; a
 * read token is enough.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api.h>


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


static sft_int_t sft_http_api_openapi(sft_http_request_t *r);


const sft_http_api_route_t  sft_http_api_openapi_routes[] = {
    sft_http_api_route("/api/v1/openapi.json", SFT_HTTP_GET,
                       sft_http_api_openapi),
    sft_http_api_null_route
};


static sft_int_t
sft_http_api_openapi(sft_http_request_t *r)
{
    sft_str_t  body;

    body.data = (u_char *) sft_http_openapi_start;
    body.len = (size_t) sft_http_openapi_size;

    return sft_http_send_response(r, 200, "application/json", &body);
}
