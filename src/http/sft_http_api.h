/*
 * sft_http_api.h -- what every /api/v1/ module shares: its routes from a
 * table, JSON answers and errors, and the audit log of changes.
 */

#ifndef _SFT_HTTP_API_H_INCLUDED_
#define _SFT_HTTP_API_H_INCLUDED_


#include <sft_http.h>
#include <jansson.h>


typedef struct {
    const char           *path;
    sft_uint_t            methods;
    sft_http_handler_pt   handler;
} sft_http_api_route_t;


#define sft_http_api_route(path, methods, handler)  { path, methods, handler }
#define sft_http_api_null_route                     { NULL, 0, NULL }


/* at configuration: a module's routes, the table ends with a null route */
char *sft_http_api_add_routes(sft_conf_t *cf,
    const sft_http_api_route_t *routes);

/* on the loop */
sft_int_t sft_http_api_error(sft_http_request_t *r, sft_uint_t status,
    const char *field, const char *reason);
sft_int_t sft_http_api_send_json(sft_http_request_t *r, sft_uint_t status,
    json_t *json);
sft_uint_t sft_http_api_end_sessions(sft_http_request_t *r);
void sft_http_api_audit(sft_http_request_t *r, sft_str_t *user,
    sft_uint_t status, const char *reason);
sft_int_t sft_http_api_refuse(sft_http_request_t *r, sft_str_t *user,
    sft_uint_t status, const char *reason);


/* the routes of the API's files, added by sft_http_api_module */
extern const sft_http_api_route_t  sft_http_api_sessions_routes[];
extern const sft_http_api_route_t  sft_http_api_nodes_routes[];
extern const sft_http_api_route_t  sft_http_api_bans_routes[];
extern const sft_http_api_route_t  sft_http_api_server_routes[];
extern const sft_http_api_route_t  sft_http_api_recount_routes[];
extern const sft_http_api_route_t  sft_http_api_token_routes[];
extern const sft_http_api_route_t  sft_http_api_openapi_routes[];

extern sft_module_t  sft_http_api_module;


#endif /* _SFT_HTTP_API_H_INCLUDED_ */
