/*
 * sft_proto.c -- the shared protocol block: "http {...}", "ftp {...}" and
 * "sftp {...}" create their modules' configurations, parse server{} blocks,
 * merge them from outer to inner, and turn "listen" into sockets.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_proto.h>


static sft_int_t sft_proto_add_listening(sft_conf_t *cf, sft_proto_t *proto,
    sft_proto_srv_conf_t *pscf, sft_listen_opt_t *lo);
static sft_int_t sft_proto_create_confs(sft_conf_t *cf, sft_proto_t *proto,
    sft_proto_conf_ctx_t *ctx, sft_uint_t with_main);


sft_int_t
sft_proto_init_main_conf(sft_proto_main_conf_t *pmcf, sft_pool_t *pool)
{
    return sft_array_init(&pmcf->servers, pool, 4,
                          sizeof(sft_proto_conf_ctx_t *));
}


sft_int_t
sft_proto_init_srv_conf(sft_proto_srv_conf_t *pscf, sft_pool_t *pool)
{
    pscf->proxy_timeout = SFT_CONF_UNSET_MSEC;

    if (sft_array_init(&pscf->proxy_from, pool, 1, sizeof(sft_cidr_t))
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    return sft_array_init(&pscf->listen, pool, 2, sizeof(sft_listen_opt_t));
}


char *
sft_proto_block(sft_conf_t *cf, void *conf, sft_proto_t *proto)
{
    char                   *rv;
    sft_uint_t              i, m, s;
    sft_conf_t              pcf;
    sft_module_t           *module;
    sft_listen_opt_t       *lo;
    sft_proto_module_t     *pm;
    sft_proto_conf_ctx_t   *ctx, **servers;
    sft_proto_srv_conf_t   *pscf;
    sft_proto_main_conf_t  *pmcf;

    if (*(sft_proto_conf_ctx_t **) conf) {
        return "is duplicate";
    }

    ctx = sft_pcalloc(cf->pool, sizeof(sft_proto_conf_ctx_t));
    if (ctx == NULL) {
        return SFT_CONF_ERROR;
    }

    *(sft_proto_conf_ctx_t **) conf = ctx;

    if (sft_proto_create_confs(cf, proto, ctx, 1) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    pcf = *cf;
    cf->ctx = ctx;
    cf->module_type = proto->module_type;
    cf->cmd_type = SFT_PROTO_MAIN_CONF;

    rv = sft_conf_parse(cf, NULL);

    if (rv != SFT_CONF_OK) {
        *cf = pcf;
        return rv;
    }

    /* init main confs, then merge each server from the block level */

    for (m = 0; cf->cycle->modules[m]; m++) {
        module = cf->cycle->modules[m];

        if (module->type != proto->module_type) {
            continue;
        }

        pm = module->ctx;

        if (pm->init_main_conf) {
            rv = pm->init_main_conf(cf, ctx->main_conf[module->ctx_index]);
            if (rv != SFT_CONF_OK) {
                *cf = pcf;
                return rv;
            }
        }
    }

    pmcf = ctx->main_conf[proto->core_module->ctx_index];
    servers = pmcf->servers.elts;

    for (s = 0; s < pmcf->servers.nelts; s++) {

        for (m = 0; cf->cycle->modules[m]; m++) {
            module = cf->cycle->modules[m];

            if (module->type != proto->module_type) {
                continue;
            }

            pm = module->ctx;

            if (pm->merge_srv_conf) {
                cf->ctx = servers[s];

                rv = pm->merge_srv_conf(cf, ctx->srv_conf[module->ctx_index],
                                   servers[s]->srv_conf[module->ctx_index]);
                if (rv != SFT_CONF_OK) {
                    *cf = pcf;
                    return rv;
                }
            }
        }

        pscf = servers[s]->srv_conf[proto->core_module->ctx_index];

        if (pscf->listen.nelts == 0) {
            sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                          "%.*s:%lu: no \"listen\" in %s server",
                          SFT_STR_FMT(&pscf->file),
                          (unsigned long) pscf->line, proto->name);
            *cf = pcf;
            return SFT_CONF_ERROR;
        }

        lo = pscf->listen.elts;

        for (i = 0; i < pscf->listen.nelts; i++) {
            if (lo[i].ssl && !proto->allow_ssl) {
                sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                              "%.*s:%lu: \"ssl\" is not supported by %s",
                              SFT_STR_FMT(&pscf->file),
                              (unsigned long) pscf->line, proto->name);
                *cf = pcf;
                return SFT_CONF_ERROR;
            }

            if (lo[i].proxy_protocol && pscf->proxy_from.nelts == 0) {
                sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                              "%.*s:%lu: \"listen %.*s proxy_protocol\" "
                              "without \"proxy_protocol_from\"",
                              SFT_STR_FMT(&pscf->file),
                              (unsigned long) pscf->line,
                              SFT_STR_FMT(&lo[i].addr_text));
                *cf = pcf;
                return SFT_CONF_ERROR;
            }

            if (sft_proto_add_listening(cf, proto, pscf, &lo[i]) != SFT_OK) {
                *cf = pcf;
                return SFT_CONF_ERROR;
            }
        }
    }

    *cf = pcf;

    return SFT_CONF_OK;
}


/* every module of the protocol's type gets its (main and) server conf */

static sft_int_t
sft_proto_create_confs(sft_conf_t *cf, sft_proto_t *proto,
    sft_proto_conf_ctx_t *ctx, sft_uint_t with_main)
{
    sft_uint_t           m, n;
    sft_module_t        *module;
    sft_proto_module_t  *pm;

    n = sft_count_modules(cf->cycle, proto->module_type);

    if (with_main) {
        ctx->main_conf = sft_pcalloc(cf->pool, n * sizeof(void *));
        if (ctx->main_conf == NULL) {
            return SFT_ERROR;
        }
    }

    ctx->srv_conf = sft_pcalloc(cf->pool, n * sizeof(void *));
    if (ctx->srv_conf == NULL) {
        return SFT_ERROR;
    }

    for (m = 0; cf->cycle->modules[m]; m++) {
        module = cf->cycle->modules[m];

        if (module->type != proto->module_type) {
            continue;
        }

        pm = module->ctx;

        if (with_main && pm->create_main_conf) {
            ctx->main_conf[module->ctx_index] = pm->create_main_conf(cf);
            if (ctx->main_conf[module->ctx_index] == NULL) {
                return SFT_ERROR;
            }
        }

        if (pm->create_srv_conf) {
            ctx->srv_conf[module->ctx_index] = pm->create_srv_conf(cf);
            if (ctx->srv_conf[module->ctx_index] == NULL) {
                return SFT_ERROR;
            }
        }
    }

    return SFT_OK;
}


static sft_int_t
sft_proto_add_listening(sft_conf_t *cf, sft_proto_t *proto,
    sft_proto_srv_conf_t *pscf, sft_listen_opt_t *lo)
{
    sft_uint_t        i;
    sft_listening_t  *ls;

    ls = cf->cycle->listening.elts;

    for (i = 0; i < cf->cycle->listening.nelts; i++) {
        if (ls[i].socklen == lo->socklen
            && sft_memcmp(&ls[i].sockaddr, &lo->sockaddr, lo->socklen) == 0)
        {
            sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                          "%.*s:%lu: duplicate listen %.*s",
                          SFT_STR_FMT(&pscf->file),
                          (unsigned long) pscf->line,
                          SFT_STR_FMT(&lo->addr_text));
            return SFT_ERROR;
        }
    }

    ls = sft_array_push(&cf->cycle->listening);
    if (ls == NULL) {
        return SFT_ERROR;
    }

    sft_memzero(ls, sizeof(sft_listening_t));

    ls->fd = SFT_INVALID_FILE;
    ls->sockaddr = lo->sockaddr;
    ls->socklen = lo->socklen;
    ls->addr_text = lo->addr_text;
    ls->backlog = lo->backlog;
    ls->ssl = lo->ssl;
    ls->proxy_protocol = lo->proxy_protocol;
    ls->proxy_from = &pscf->proxy_from;
    ls->proxy_timeout = pscf->proxy_timeout == SFT_CONF_UNSET_MSEC
                        ? 5000 : pscf->proxy_timeout;
    ls->protocol = proto->name;
    ls->handler = proto->init_connection;
    ls->servers = pscf->ctx;
    ls->log = cf->cycle->log;

    return SFT_OK;
}


/*
 * "server {...}" inside a protocol block; cmd->post is the sft_proto_t.
 * conf is the core module's main conf.
 */

char *
sft_proto_server(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    char                   *rv;
    sft_conf_t              pcf;
    sft_proto_t            *proto;
    sft_proto_conf_ctx_t   *ctx, *block, **sp;
    sft_proto_srv_conf_t   *pscf;
    sft_proto_main_conf_t  *pmcf = conf;

    proto = cmd->post;
    block = cf->ctx;

    ctx = sft_pcalloc(cf->pool, sizeof(sft_proto_conf_ctx_t));
    if (ctx == NULL) {
        return SFT_CONF_ERROR;
    }

    ctx->main_conf = block->main_conf;

    if (sft_proto_create_confs(cf, proto, ctx, 0) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    pscf = ctx->srv_conf[proto->core_module->ctx_index];
    pscf->ctx = ctx;
    pscf->file = cf->conf_file->name;
    pscf->line = cf->conf_file->line;

    sp = sft_array_push(&pmcf->servers);
    if (sp == NULL) {
        return SFT_CONF_ERROR;
    }

    *sp = ctx;

    pcf = *cf;
    cf->ctx = ctx;
    cf->cmd_type = SFT_PROTO_SRV_CONF;

    rv = sft_conf_parse(cf, NULL);

    *cf = pcf;

    return rv;
}


/* "listen ADDR:PORT [ssl] [proxy_protocol] [backlog=N];" -- conf is the
 * server conf */

char *
sft_proto_listen(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_int_t              n;
    sft_str_t             *value;
    sft_uint_t             i;
    sft_listen_opt_t      *lo;
    sft_proto_srv_conf_t  *pscf = conf;

    (void) cmd;

    value = cf->args->elts;

    lo = sft_array_push(&pscf->listen);
    if (lo == NULL) {
        return SFT_CONF_ERROR;
    }

    sft_memzero(lo, sizeof(sft_listen_opt_t));
    lo->backlog = 511;

    if (sft_parse_addr_port(&value[1], &lo->sockaddr, &lo->socklen)
        != SFT_OK)
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "invalid address \"%s\" in \"listen\"",
                           value[1].data);
        return SFT_CONF_ERROR;
    }

    lo->addr_text.data = sft_pnalloc(cf->pool, 64);
    if (lo->addr_text.data == NULL) {
        return SFT_CONF_ERROR;
    }

    lo->addr_text.len = sft_sock_ntop((struct sockaddr *) &lo->sockaddr,
                                      lo->addr_text.data, 64, 1);

    for (i = 2; i < cf->args->nelts; i++) {

        if (sft_str_eq(&value[i], "ssl")) {
            lo->ssl = 1;
            continue;
        }

        if (sft_str_eq(&value[i], "proxy_protocol")) {
            lo->proxy_protocol = 1;
            continue;
        }

        if (sft_strncmp(value[i].data, "backlog=", 8) == 0) {
            n = sft_atoi(value[i].data + 8, value[i].len - 8);

            if (n == SFT_ERROR || n < 1) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "invalid backlog \"%s\"", value[i].data);
                return SFT_CONF_ERROR;
            }

            lo->backlog = (int) n;
            continue;
        }

        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "invalid parameter \"%s\" in \"listen\"",
                           value[i].data);
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


/* "proxy_protocol_from NETWORK ...;" -- conf is the server conf */

char *
sft_proto_proxy_from(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_proto_srv_conf_t  *pscf = conf;

    (void) cmd;

    return sft_cidr_conf_add(cf, &pscf->proxy_from);
}
