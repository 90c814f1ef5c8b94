/*
 * sft_proto.h -- what every protocol block (http, ftp, sftp) shares: the
 * main/server configuration contexts, server{} blocks, "listen" and the
 * listening sockets they produce.
 */

#ifndef _SFT_PROTO_H_INCLUDED_
#define _SFT_PROTO_H_INCLUDED_


#include <sft_cidr.h>


typedef struct {
    void                      **main_conf;
    void                      **srv_conf;
} sft_proto_conf_ctx_t;


/* the context of a protocol module */
typedef struct {
    void                     *(*create_main_conf)(sft_conf_t *cf);
    char                     *(*init_main_conf)(sft_conf_t *cf, void *conf);
    void                     *(*create_srv_conf)(sft_conf_t *cf);
    char                     *(*merge_srv_conf)(sft_conf_t *cf, void *prev,
                                                void *conf);
} sft_proto_module_t;


typedef struct {
    struct sockaddr_storage     sockaddr;
    socklen_t                   socklen;
    sft_str_t                   addr_text;
    int                         backlog;
    unsigned                    ssl:1;
    unsigned                    proxy_protocol:1;
} sft_listen_opt_t;


/* a protocol's core module's main conf starts with this */
typedef struct {
    sft_array_t                 servers;     /* sft_proto_conf_ctx_t * */
} sft_proto_main_conf_t;


/* a protocol's core module's server conf starts with this */
typedef struct {
    sft_array_t                 listen;      /* sft_listen_opt_t */
    sft_array_t                 proxy_from;  /* sft_cidr_t */
    sft_msec_t                  proxy_timeout;
    sft_proto_conf_ctx_t       *ctx;
    sft_str_t                   file;
    sft_uint_t                  line;
} sft_proto_srv_conf_t;


/* what a protocol tells the shared block code about itself */
typedef struct {
    const char                 *name;
    sft_uint_t                  module_type;
    sft_module_t               *core_module;
    sft_connection_handler_pt   init_connection;
    sft_uint_t                  allow_ssl;
} sft_proto_t;


#define SFT_PROTO_MAIN_CONF_OFFSET  offsetof(sft_proto_conf_ctx_t, main_conf)
#define SFT_PROTO_SRV_CONF_OFFSET   offsetof(sft_proto_conf_ctx_t, srv_conf)

/* the server{} directives of the PROXY protocol, in every protocol */
#define SFT_PROTO_PROXY_COMMANDS                                              \
    { sft_string("proxy_protocol_from"),                                      \
      SFT_PROTO_SRV_CONF|SFT_CONF_1MORE,                                      \
      sft_proto_proxy_from,                                                   \
      SFT_PROTO_SRV_CONF_OFFSET,                                              \
      0,                                                                      \
      NULL,                                                                   \
      sft_command_doc("network ...", "",                                      \
          "The balancers (ADDR or ADDR/BITS) allowed to connect to a "        \
          "\"listen ... proxy_protocol\" address; any other peer is "         \
          "closed.") },                                                       \
                                                                              \
    { sft_string("proxy_protocol_timeout"),                                   \
      SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,                                      \
      sft_conf_set_msec_slot,                                                 \
      SFT_PROTO_SRV_CONF_OFFSET,                                              \
      offsetof(sft_proto_srv_conf_t, proxy_timeout),                          \
      NULL,                                                                   \
      sft_command_doc("time", "5s",                                           \
          "How long a balancer has to send the PROXY protocol header.") }

#define sft_proto_get_module_main_conf(ctx, module)                           \
    ((sft_proto_conf_ctx_t *) (ctx))->main_conf[module.ctx_index]
#define sft_proto_get_module_srv_conf(ctx, module)                            \
    ((sft_proto_conf_ctx_t *) (ctx))->srv_conf[module.ctx_index]


char *sft_proto_block(sft_conf_t *cf, void *conf, sft_proto_t *proto);
char *sft_proto_server(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_proto_listen(sft_conf_t *cf, sft_command_t *cmd, void *conf);
char *sft_proto_proxy_from(sft_conf_t *cf, sft_command_t *cmd, void *conf);
sft_int_t sft_proto_init_main_conf(sft_proto_main_conf_t *pmcf,
    sft_pool_t *pool);
sft_int_t sft_proto_init_srv_conf(sft_proto_srv_conf_t *pscf,
    sft_pool_t *pool);


#endif /* _SFT_PROTO_H_INCLUDED_ */
