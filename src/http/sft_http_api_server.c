/*
 * sft_http_api_server.c -- /api/v1/server: what runs (version, configure
 * arguments, modules, workers, start time) and /api/v1/server/config, the
 * configuration files as "siftpd -T" prints them.  No directive holds a
 * secret: API tokens, passwords and keys live in files of their own,
 * named here by their paths only.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api_users.h>


#define SFT_HTTP_SERVER  "/api/v1/server"


static char *sft_http_api_server_init(sft_conf_t *cf, void *conf);
static sft_int_t sft_http_api_server(sft_http_request_t *r);
static sft_int_t sft_http_api_server_config(sft_http_request_t *r);


static sft_proto_module_t  sft_http_api_server_module_ctx = {
    NULL,
    sft_http_api_server_init,
    NULL,
    NULL
};


sft_module_t  sft_http_api_server_module = {
    SFT_MODULE_V1,
    &sft_http_api_server_module_ctx,       /* module context */
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
sft_http_api_server_init(sft_conf_t *cf, void *conf)
{
    (void) conf;

    if (sft_http_add_route(cf, SFT_HTTP_SERVER, SFT_HTTP_GET,
                           sft_http_api_server) != SFT_OK
        || sft_http_add_route(cf, SFT_HTTP_SERVER "/config", SFT_HTTP_GET,
                              sft_http_api_server_config) != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static sft_int_t
sft_http_api_server(sft_http_request_t *r)
{
    json_t           *o, *m;
    sft_uint_t        i;
    sft_cycle_t      *cycle;
    sft_core_conf_t  *ccf;

    if (!sft_http_api_enabled(r)) {
        return sft_http_send_response(r, 404, NULL, NULL);
    }

    cycle = (sft_cycle_t *) sft_cycle;
    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    m = json_array();
    if (m == NULL) {
        return SFT_ERROR;
    }

    for (i = 0; cycle->modules[i]; i++) {
        if (json_array_append_new(m, json_string(cycle->modules[i]->name))
            != 0)
        {
            json_decref(m);
            return SFT_ERROR;
        }
    }

    o = json_pack("{s:s, s:s, s:o, s:I, s:I}",
                  "version", SFT_VERSION,
                  "configure", SFT_CONFIGURE[0] == ' ' ? SFT_CONFIGURE + 1
                                                       : SFT_CONFIGURE,
                  "modules", m,
                  "workers", (json_int_t) (ccf->master
                                           ? ccf->worker_processes : 1),
                  "started", (json_int_t) (sft_stats ? sft_stats->started
                                                     : 0));
    if (o == NULL) {
        return SFT_ERROR;
    }

    return sft_http_api_send_json(r, 200, o);
}


static sft_int_t
sft_http_api_server_config(sft_http_request_t *r)
{
    u_char           *p, *last;
    size_t            size;
    sft_str_t         body;
    sft_uint_t        i;
    sft_cycle_t      *cycle;
    sft_conf_dump_t  *cd;

    if (!sft_http_api_enabled(r)) {
        return sft_http_send_response(r, 404, NULL, NULL);
    }

    cycle = (sft_cycle_t *) sft_cycle;
    cd = cycle->config_dump.elts;
    size = 0;

    for (i = 0; i < cycle->config_dump.nelts; i++) {
        size += sizeof("# configuration file :\n\n\n") + cd[i].name.len
                + cd[i].content.len;
    }

    p = sft_pnalloc(r->pool, size + 1);
    if (p == NULL) {
        return SFT_ERROR;
    }

    body.data = p;
    last = p + size + 1;

    for (i = 0; i < cycle->config_dump.nelts; i++) {
        p = sft_slprintf(p, last, "# configuration file %.*s:\n",
                         SFT_STR_FMT(&cd[i].name));
        p = sft_cpymem(p, cd[i].content.data, cd[i].content.len);

        if (cd[i].content.len
            && cd[i].content.data[cd[i].content.len - 1] != '\n')
        {
            *p++ = '\n';
        }

        *p++ = '\n';
    }

    body.len = p - body.data;

    return sft_http_send_response(r, 200, "text/plain; charset=utf-8",
                                  &body);
}
