/*
 * sft_http.h -- the admin HTTP module: configuration, requests and the
 * route table other HTTP modules add handlers to.
 */

#ifndef _SFT_HTTP_H_INCLUDED_
#define _SFT_HTTP_H_INCLUDED_


#include <sft_proto.h>
#include <sft_event_openssl.h>


#define SFT_HTTP_UNKNOWN   0
#define SFT_HTTP_GET       0x0002
#define SFT_HTTP_HEAD      0x0004
#define SFT_HTTP_POST      0x0008
#define SFT_HTTP_PUT       0x0010
#define SFT_HTTP_DELETE    0x0020
#define SFT_HTTP_PATCH     0x0040
#define SFT_HTTP_OPTIONS   0x0080

#define SFT_HTTP_PARSE_INVALID_REQUEST   10
#define SFT_HTTP_PARSE_INVALID_HEADER    11
#define SFT_HTTP_PARSE_INVALID_VERSION   12


typedef struct sft_http_request_s  sft_http_request_t;

typedef sft_int_t (*sft_http_handler_pt)(sft_http_request_t *r);


/* a path ending in a slash and "*" matches every path beneath it */
typedef struct {
    sft_str_t                 path;
    sft_uint_t                methods;     /* SFT_HTTP_GET|... */
    sft_http_handler_pt       handler;
} sft_http_route_t;


typedef struct {
    sft_proto_main_conf_t     proto;       /* must be first */
    sft_array_t               routes;      /* sft_http_route_t */
} sft_http_core_main_conf_t;


typedef struct {
    sft_proto_srv_conf_t      proto;       /* must be first */

    size_t                    client_header_buffer_size;
    size_t                    client_max_body_size;
    sft_msec_t                client_header_timeout;
    sft_msec_t                client_body_timeout;
    sft_msec_t                send_timeout;
    sft_msec_t                keepalive_timeout;
    sft_uint_t                keepalive_requests;

    sft_ssl_conf_t            ssl;         /* "listen ... ssl": HTTPS */
    sft_ssl_t                 tls;
} sft_http_core_srv_conf_t;


/* per connection; the buffer holds what pipelined requests sent ahead */
typedef struct {
    sft_connection_t         *connection;
    sft_proto_conf_ctx_t     *ctx;
    sft_http_core_srv_conf_t *cscf;
    sft_http_request_t       *request;

    u_char                   *start;
    u_char                   *pos;
    u_char                   *last;
    u_char                   *end;

    sft_uint_t                requests;

    unsigned                  ssl_closing:1;
} sft_http_connection_t;


struct sft_http_request_s {
    sft_http_connection_t    *hc;
    sft_connection_t         *connection;
    sft_pool_t               *pool;

    /* parser state: lines are framed in the connection buffer */
    u_char                   *scan;          /* where to look for "\n" */
    sft_uint_t                lines;
    sft_str_t                 header_name;
    sft_str_t                 header_value;

    sft_uint_t                method;
    sft_str_t                 method_name;
    sft_str_t                 uri;
    sft_str_t                 path;
    sft_str_t                 args;
    sft_uint_t                http_major;
    sft_uint_t                http_minor;

    sft_str_t                 host;
    sft_str_t                 authorization;
    sft_str_t                 content_type;
    sft_str_t                 if_none_match;
    sft_str_t                 if_match;
    off_t                     content_length;

    /* who sent it: set by sft_http_auth_check() */
    sft_str_t                 token_name;

    sft_str_t                 body;
    size_t                    body_received;

    /* the response */
    sft_uint_t                status;
    sft_str_t                 extra_headers;     /* "Name: value\r\n"... */
    const char               *cache_control;     /* NULL: "no-store" */
    u_char                   *out;
    size_t                    out_len;
    size_t                    out_sent;

    unsigned                  keepalive:1;
    unsigned                  chunked:1;
    unsigned                  header_done:1;
    unsigned                  have_length:1;
    unsigned                  lingering:1;
    unsigned                  token_admin:1;
    unsigned                  blocked:1;     /* a handler waits for a
                                                thread: sft_http_resume() */
};


sft_int_t sft_http_parse_request(sft_http_request_t *r);
sft_int_t sft_http_parse_request_line(sft_http_request_t *r, u_char *p,
    u_char *end);
sft_int_t sft_http_parse_header_line(sft_http_request_t *r, u_char *p,
    u_char *end);

void sft_http_init_connection(sft_connection_t *c);
void sft_http_run_connection(sft_http_connection_t *hc);
void sft_http_close_connection(sft_http_connection_t *hc);
void sft_http_ssl_start(sft_http_connection_t *hc);
sft_uint_t sft_http_loopback(struct sockaddr *sa);
sft_uint_t sft_http_ssl_close(sft_http_connection_t *hc);
char *sft_http_merge_ssl(sft_conf_t *cf, sft_http_core_srv_conf_t *conf,
    sft_http_core_srv_conf_t *prev);
sft_int_t sft_http_send_response(sft_http_request_t *r, sft_uint_t status,
    const char *content_type, sft_str_t *body);
void sft_http_resume(sft_http_request_t *r);
sft_int_t sft_http_add_route(sft_conf_t *cf, const char *path,
    sft_uint_t methods, sft_http_handler_pt handler);
sft_uint_t sft_http_auth_check(sft_http_request_t *r);
sft_uint_t sft_http_api_enabled(sft_http_request_t *r);


extern sft_uint_t  sft_http_stat_requests;
extern sft_uint_t  sft_http_stat_errors;
extern sft_module_t  sft_http_module;
extern sft_module_t  sft_http_core_module;
extern sft_module_t  sft_http_auth_module;


#endif /* _SFT_HTTP_H_INCLUDED_ */
