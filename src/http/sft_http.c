/*
 * sft_http.c -- the "http" block and the core HTTP module's directives:
 * servers, listen, limits, timeouts and TLS for the admin endpoint.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>


static char *sft_http_block(sft_conf_t *cf, sft_command_t *cmd, void *conf);
static char *sft_http_init_conf(sft_cycle_t *cycle, void *conf);
static void *sft_http_core_create_main_conf(sft_conf_t *cf);
static void *sft_http_core_create_srv_conf(sft_conf_t *cf);
static char *sft_http_core_merge_srv_conf(sft_conf_t *cf, void *parent,
    void *child);


static sft_proto_t  sft_http_proto = {
    "http",
    SFT_HTTP_MODULE,
    &sft_http_core_module,
    sft_http_init_connection,
    1                                      /* "listen ... ssl": HTTPS */
};


static sft_command_t  sft_http_commands[] = {

    { sft_string("http"),
      SFT_MAIN_CONF|SFT_CONF_BLOCK|SFT_CONF_NOARGS,
      sft_http_block,
      0,
      0,
      NULL,
      sft_command_doc("{ ... }", "",
          "The admin HTTP servers.") },

    sft_null_command
};


sft_uint_t  sft_http_stat_requests;
sft_uint_t  sft_http_stat_errors;


static const sft_stat_def_t  sft_http_stats[] = {
    { .name = "http_requests_total", .json = "http.requests",
      .help = "Admin HTTP requests served.",
      .index = &sft_http_stat_requests },
    { .name = "http_errors_total", .json = "http.errors",
      .help = "Admin HTTP requests answered with 4xx or 5xx.",
      .index = &sft_http_stat_errors },
};


static sft_core_module_t  sft_http_module_ctx = {
    sft_string("http"),
    NULL,
    sft_http_init_conf
};


sft_module_t  sft_http_module = {
    SFT_MODULE_V1,
    &sft_http_module_ctx,                  /* module context */
    sft_http_commands,                     /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


/* every cycle, whether the http{} block is there or not */

static char *
sft_http_init_conf(sft_cycle_t *cycle, void *conf)
{
    (void) conf;

    return sft_stat_register(cycle, sft_http_stats, sft_nelems(sft_http_stats))
           == SFT_OK ? SFT_CONF_OK : SFT_CONF_ERROR;
}


static sft_command_t  sft_http_core_commands[] = {

    { sft_string("server"),
      SFT_PROTO_MAIN_CONF|SFT_CONF_BLOCK|SFT_CONF_NOARGS,
      sft_proto_server,
      SFT_PROTO_MAIN_CONF_OFFSET,
      0,
      &sft_http_proto,
      sft_command_doc("{ ... }", "",
          "An admin HTTP server: its addresses and settings.") },

    { sft_string("listen"),
      SFT_PROTO_SRV_CONF|SFT_CONF_1MORE,
      sft_proto_listen,
      SFT_PROTO_SRV_CONF_OFFSET,
      0,
      NULL,
      sft_command_doc("address:port [ssl] [proxy_protocol]", "",
          "An address and port to accept HTTP on; ssl makes it HTTPS "
          "with the server's ssl_certificate.") },

    SFT_PROTO_PROXY_COMMANDS,

    { sft_string("client_header_buffer_size"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_size_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_core_srv_conf_t, client_header_buffer_size),
      NULL,
      sft_command_doc("size", "8k",
          "The most a request line and its headers may take.") },

    { sft_string("client_max_body_size"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_size_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_core_srv_conf_t, client_max_body_size),
      NULL,
      sft_command_doc("size", "1m",
          "The largest request body accepted.") },

    { sft_string("client_header_timeout"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_core_srv_conf_t, client_header_timeout),
      NULL,
      sft_command_doc("time", "60s",
          "How long a client may take to send the request headers.") },

    { sft_string("client_body_timeout"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_core_srv_conf_t, client_body_timeout),
      NULL,
      sft_command_doc("time", "60s",
          "How long a client may take between two reads of the body.") },

    { sft_string("send_timeout"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_core_srv_conf_t, send_timeout),
      NULL,
      sft_command_doc("time", "60s",
          "How long a client may take between two reads of the response.") },

    { sft_string("keepalive_timeout"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_core_srv_conf_t, keepalive_timeout),
      NULL,
      sft_command_doc("time", "75s",
          "How long an idle keep-alive connection stays open.") },

    { sft_string("keepalive_requests"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_core_srv_conf_t, keepalive_requests),
      NULL,
      sft_command_doc("number", "1000",
          "Requests served on one connection before it is closed.") },

    SFT_SSL_COMMANDS(offsetof(sft_http_core_srv_conf_t, ssl)),

    sft_null_command
};


static sft_proto_module_t  sft_http_core_module_ctx = {
    sft_http_core_create_main_conf,
    NULL,
    sft_http_core_create_srv_conf,
    sft_http_core_merge_srv_conf
};


sft_module_t  sft_http_core_module = {
    SFT_MODULE_V1,
    &sft_http_core_module_ctx,             /* module context */
    sft_http_core_commands,                /* module directives */
    SFT_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static char *
sft_http_block(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    (void) cmd;

    return sft_proto_block(cf, conf, &sft_http_proto);
}


static void *
sft_http_core_create_main_conf(sft_conf_t *cf)
{
    sft_http_core_main_conf_t  *cmcf;

    cmcf = sft_pcalloc(cf->pool, sizeof(sft_http_core_main_conf_t));
    if (cmcf == NULL) {
        return NULL;
    }

    if (sft_proto_init_main_conf(&cmcf->proto, cf->pool) != SFT_OK
        || sft_array_init(&cmcf->routes, cf->pool, 8,
                          sizeof(sft_http_route_t)) != SFT_OK)
    {
        return NULL;
    }

    return cmcf;
}


static void *
sft_http_core_create_srv_conf(sft_conf_t *cf)
{
    sft_http_core_srv_conf_t  *cscf;

    cscf = sft_pcalloc(cf->pool, sizeof(sft_http_core_srv_conf_t));
    if (cscf == NULL) {
        return NULL;
    }

    if (sft_proto_init_srv_conf(&cscf->proto, cf->pool) != SFT_OK) {
        return NULL;
    }

    cscf->client_header_buffer_size = SFT_CONF_UNSET_SIZE;
    cscf->client_max_body_size = SFT_CONF_UNSET_SIZE;
    cscf->client_header_timeout = SFT_CONF_UNSET_MSEC;
    cscf->client_body_timeout = SFT_CONF_UNSET_MSEC;
    cscf->send_timeout = SFT_CONF_UNSET_MSEC;
    cscf->keepalive_timeout = SFT_CONF_UNSET_MSEC;
    cscf->keepalive_requests = SFT_CONF_UNSET_UINT;

    sft_ssl_conf_init(&cscf->ssl);

    return cscf;
}


static char *
sft_http_core_merge_srv_conf(sft_conf_t *cf, void *parent, void *child)
{
    sft_http_core_srv_conf_t  *prev = parent;
    sft_http_core_srv_conf_t  *conf = child;

    sft_conf_merge_size_value(conf->client_header_buffer_size,
                              prev->client_header_buffer_size, 8192);
    sft_conf_merge_size_value(conf->client_max_body_size,
                              prev->client_max_body_size, 1024 * 1024);
    sft_conf_merge_msec_value(conf->client_header_timeout,
                              prev->client_header_timeout, 60000);
    sft_conf_merge_msec_value(conf->client_body_timeout,
                              prev->client_body_timeout, 60000);
    sft_conf_merge_msec_value(conf->send_timeout, prev->send_timeout, 60000);
    sft_conf_merge_msec_value(conf->keepalive_timeout,
                              prev->keepalive_timeout, 75000);
    sft_conf_merge_uint_value(conf->keepalive_requests,
                              prev->keepalive_requests, 1000);

    if (conf->client_header_buffer_size < 1024
        || conf->client_header_buffer_size > 1024 * 1024)
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "\"client_header_buffer_size\" must be between "
                           "1k and 1m");
        return SFT_CONF_ERROR;
    }

    return sft_http_merge_ssl(cf, conf, prev);
}


sft_int_t
sft_http_add_route(sft_conf_t *cf, const char *path, sft_uint_t methods,
    sft_http_handler_pt handler)
{
    sft_http_route_t           *route;
    sft_http_core_main_conf_t  *cmcf;

    cmcf = sft_proto_get_module_main_conf(cf->ctx, sft_http_core_module);

    route = sft_array_push(&cmcf->routes);
    if (route == NULL) {
        return SFT_ERROR;
    }

    route->path.len = strlen(path);
    route->path.data = (u_char *) path;
    route->methods = methods;
    route->handler = handler;

    return SFT_OK;
}
