/*
 * sft_http_api_server.c -- /api/v1/server: what runs (version, configure
 * arguments, modules, workers, start time), a reload (asked of the master
 * with the signal "siftpd -s reload" sends; its outcome is read from the
 * "sft_reload" zone on a timer, no one waits) and /api/v1/server/config, the
 * configuration files as "siftpd -T" prints them.  No directive holds a
 * secret: API tokens, passwords and keys live in files of their own,
 * named here by their paths only.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api.h>
#include <sft_reload.h>


#define SFT_HTTP_RELOAD_TICK   50         /* ms between looks */
#define SFT_HTTP_RELOAD_TICKS  1200       /* a minute */


typedef struct {
    sft_http_request_t  *request;
    uint64_t             seen;            /* attempts before ours */
    sft_uint_t           ticks;
    sft_event_t          timer;
} sft_http_api_reload_t;


#define SFT_HTTP_SERVER  "/api/v1/server"


static sft_int_t sft_http_api_server(sft_http_request_t *r);
static sft_int_t sft_http_api_server_config(sft_http_request_t *r);
static sft_int_t sft_http_api_server_reload(sft_http_request_t *r);


const sft_http_api_route_t  sft_http_api_server_routes[] = {
    sft_http_api_route(SFT_HTTP_SERVER, SFT_HTTP_GET, sft_http_api_server),
    sft_http_api_route(SFT_HTTP_SERVER "/config", SFT_HTTP_GET,
                       sft_http_api_server_config),
    sft_http_api_route(SFT_HTTP_SERVER "/reload", SFT_HTTP_POST,
                       sft_http_api_server_reload),
    sft_http_api_null_route
};


static sft_int_t
sft_http_api_server(sft_http_request_t *r)
{
    json_t           *o, *m;
    sft_uint_t        i;
    sft_cycle_t      *cycle;
    sft_core_conf_t  *ccf;

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


/* the outcome, once the master has written it; else a look again later */

static void
sft_http_api_reload_wait(sft_event_t *ev)
{
    char                    error[SFT_RELOAD_ERROR_LEN];
    json_t                 *o;
    sft_int_t               rc;
    sft_uint_t              status;
    sft_str_t               none = sft_null_string;
    sft_http_request_t     *r;
    sft_http_api_reload_t  *rl;

    rl = ev->data;
    r = rl->request;

    rc = sft_reload_result(rl->seen, error);

    if (rc == SFT_AGAIN && ++rl->ticks < SFT_HTTP_RELOAD_TICKS) {
        sft_add_timer(&rl->timer, SFT_HTTP_RELOAD_TICK);
        return;
    }

    if (rc == SFT_AGAIN) {
        (void) snprintf(error, sizeof(error), "no answer from the master");
    }

    status = (rc == SFT_OK) ? 200 : (rc == SFT_AGAIN) ? 504 : 422;

    o = (rc == SFT_OK) ? json_pack("{s:b}", "ok", 1)
                       : json_pack("{s:b, s:s}", "ok", 0, "error", error);

    sft_log_error(rc == SFT_OK ? SFT_LOG_NOTICE : SFT_LOG_WARN,
                  r->connection->log, 0, "admin API: reload %s%s, token "
                  "\"%.*s\"", rc == SFT_OK ? "done" : "failed: ",
                  rc == SFT_OK ? "" : error, SFT_STR_FMT(&r->token_name));

    sft_http_api_audit(r, &none, status, rc == SFT_OK ? "" : error);

    if (o) {
        (void) sft_http_api_send_json(r, status, o);
    }

    sft_http_resume(r);
}


static sft_int_t
sft_http_api_server_reload(sft_http_request_t *r)
{
    sft_core_conf_t        *ccf;
    sft_http_api_reload_t  *rl;

    ccf = (sft_core_conf_t *) sft_get_conf(((sft_cycle_t *) sft_cycle)
                                           ->conf_ctx, sft_core_module);

    if (!ccf->master || sft_process_slot < 0) {
        return sft_http_api_error(r, 503, NULL, "no master process to "
                                  "reload");
    }

    rl = sft_pcalloc(r->pool, sizeof(sft_http_api_reload_t));
    if (rl == NULL) {
        return SFT_ERROR;
    }

    rl->request = r;
    rl->seen = sft_reload_attempts();
    rl->timer.handler = sft_http_api_reload_wait;
    rl->timer.data = rl;
    rl->timer.log = r->connection->log;

    /* what "siftpd -s reload" does: the master is the worker's parent */

    if (kill(getppid(), SIGHUP) == -1) {
        sft_log_error(SFT_LOG_ALERT, r->connection->log, sft_errno,
                      "kill(%d, SIGHUP) failed", (int) getppid());
        return sft_http_api_error(r, 500, NULL, "the master could not be "
                                  "signalled");
    }

    sft_add_timer(&rl->timer, SFT_HTTP_RELOAD_TICK);

    return SFT_AGAIN;
}
