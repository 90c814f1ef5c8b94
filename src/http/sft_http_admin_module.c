/*
 * sft_http_admin_module.c -- GET /api/v1/stats (JSON) and GET /metrics
 * (Prometheus text), both totals over every worker process.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>
#include <sft_thread_pool.h>
#include <sft_auth.h>


typedef struct {
    sft_flag_t   api;
    sft_flag_t   metrics;
} sft_http_admin_srv_conf_t;


typedef struct {
    sft_stats_slot_t      total;
    sft_uint_t            processes;
    sft_bufpool_stats_t   pool;
    sft_auth_stats_t      auth;
    size_t                chunk_bytes;
    uint64_t              uptime;
    uint64_t              reloads;
    uint64_t              respawns;
    sft_int_t             workers;
} sft_http_admin_snapshot_t;


static void *sft_http_admin_create_srv_conf(sft_conf_t *cf);
static char *sft_http_admin_merge_srv_conf(sft_conf_t *cf, void *parent,
    void *child);
static char *sft_http_admin_init_main_conf(sft_conf_t *cf, void *conf);
static sft_int_t sft_http_admin_stats(sft_http_request_t *r);
static sft_int_t sft_http_admin_metrics(sft_http_request_t *r);
static u_char *sft_http_admin_transfers_json(u_char *p, u_char *last,
    sft_stats_slot_t *t);
static u_char *sft_http_admin_transfer_metrics(u_char *p, u_char *last,
    sft_stats_slot_t *t);


#define SFT_HTTP_ADMIN_BUF  16384


static sft_command_t  sft_http_admin_commands[] = {

    { sft_string("api"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_admin_srv_conf_t, api),
      NULL },

    { sft_string("metrics"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_admin_srv_conf_t, metrics),
      NULL },

    sft_null_command
};


static sft_proto_module_t  sft_http_admin_module_ctx = {
    NULL,
    sft_http_admin_init_main_conf,
    sft_http_admin_create_srv_conf,
    sft_http_admin_merge_srv_conf
};


sft_module_t  sft_http_admin_module = {
    SFT_MODULE_V1,
    &sft_http_admin_module_ctx,            /* module context */
    sft_http_admin_commands,               /* module directives */
    SFT_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static void *
sft_http_admin_create_srv_conf(sft_conf_t *cf)
{
    sft_http_admin_srv_conf_t  *ascf;

    ascf = sft_palloc(cf->pool, sizeof(sft_http_admin_srv_conf_t));
    if (ascf == NULL) {
        return NULL;
    }

    ascf->api = SFT_CONF_UNSET;
    ascf->metrics = SFT_CONF_UNSET;

    return ascf;
}


static char *
sft_http_admin_merge_srv_conf(sft_conf_t *cf, void *parent, void *child)
{
    sft_http_admin_srv_conf_t  *prev = parent;
    sft_http_admin_srv_conf_t  *conf = child;

    (void) cf;

    sft_conf_merge_value(conf->api, prev->api, 1);
    sft_conf_merge_value(conf->metrics, prev->metrics, 1);

    return SFT_CONF_OK;
}


static char *
sft_http_admin_init_main_conf(sft_conf_t *cf, void *conf)
{
    (void) conf;

    if (sft_http_add_route(cf, "/api/v1/stats", SFT_HTTP_GET,
                           sft_http_admin_stats) != SFT_OK
        || sft_http_add_route(cf, "/metrics", SFT_HTTP_GET,
                              sft_http_admin_metrics) != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static void
sft_http_admin_snapshot(sft_http_admin_snapshot_t *s)
{
    sft_core_conf_t  *ccf;
    sft_cycle_t      *cycle;

    cycle = (sft_cycle_t *) sft_cycle;
    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    sft_stats_sum(&s->total, &s->processes);
    sft_buffer_stats(&s->pool, &s->chunk_bytes);
    sft_auth_get_stats(&s->auth);

    s->workers = ccf->master ? ccf->worker_processes : 1;
    s->uptime = sft_stats ? (uint64_t) time(NULL) - sft_stats->started : 0;
    s->reloads = sft_stats ? sft_stats->reloads : 0;
    s->respawns = sft_stats ? sft_stats->respawns : 0;
}


static sft_int_t
sft_http_admin_stats(sft_http_request_t *r)
{
    u_char                     *p, *last;
    sft_str_t                   body;
    sft_http_admin_snapshot_t   s;
    sft_http_admin_srv_conf_t  *ascf;
    uint64_t                   *v;

    ascf = sft_proto_get_module_srv_conf(r->hc->ctx, sft_http_admin_module);

    if (!ascf->api) {
        return sft_http_send_response(r, 404, NULL, NULL);
    }

    sft_http_admin_snapshot(&s);
    v = s.total.value;

    p = sft_pnalloc(r->pool, SFT_HTTP_ADMIN_BUF);
    if (p == NULL) {
        return SFT_ERROR;
    }

    body.data = p;
    last = p + SFT_HTTP_ADMIN_BUF;

    p = sft_slprintf(p, last,
        "{\"version\":\"" SFT_VERSION "\","
        "\"uptime\":%" PRIu64 ","
        "\"workers\":%ld,"
        "\"processes\":%lu,"
        "\"reloads\":%" PRIu64 ","
        "\"worker_respawns\":%" PRIu64 ","
        "\"connections\":{\"accepted\":%" PRIu64 ",\"handled\":%" PRIu64
        ",\"dropped\":%" PRIu64 ",\"active\":%" PRIu64 "},"
        "\"bytes\":{\"received\":%" PRIu64 ",\"sent\":%" PRIu64 "},"
        "\"http\":{\"requests\":%" PRIu64 ",\"errors\":%" PRIu64 "},"
        "\"buffer_pool\":{\"chunk_bytes\":%zu,\"total\":%" PRIu64
        ",\"free\":%" PRIu64 ",\"in_use\":%" PRIu64 ",\"waits\":%" PRIu64
        ",\"waiters\":%" PRIu64 "},"
        "\"sessions\":{\"ftp\":%" PRIu64 ",\"sftp\":%" PRIu64 "},"
        "\"logins\":{\"ok\":%" PRIu64 ",\"failed\":%" PRIu64 "},"
        "\"auth\":{\"argon2_runs\":%" PRIu64 ",\"cache_hits\":%" PRIu64
        ",\"bans\":%" PRIu64 ",\"checks_running\":%u},"
        "\"transfers\":",
        s.uptime, (long) s.workers, (unsigned long) s.processes,
        s.reloads, s.respawns,
        v[SFT_STAT_CONN_ACCEPTED], v[SFT_STAT_CONN_HANDLED],
        v[SFT_STAT_CONN_DROPPED], v[SFT_STAT_CONN_ACTIVE],
        v[SFT_STAT_BYTES_RECEIVED], v[SFT_STAT_BYTES_SENT],
        v[SFT_STAT_HTTP_REQUESTS], v[SFT_STAT_HTTP_ERRORS],
        s.chunk_bytes, s.pool.total, s.pool.free,
        s.pool.total - s.pool.free, s.pool.waits, s.pool.waiters,
        v[SFT_STAT_FTP_SESSIONS], v[SFT_STAT_SFTP_SESSIONS],
        v[SFT_STAT_LOGINS], v[SFT_STAT_LOGIN_FAILURES],
        s.auth.argon2_runs, s.auth.cache_hits, s.auth.bans,
        (unsigned) s.auth.running);

    p = sft_http_admin_transfers_json(p, last, &s.total);
    p = sft_slprintf(p, last, "}\n");

    body.len = p - body.data;

    return sft_http_send_response(r, 200, "application/json", &body);
}


/* transfers by direction and data path, labelled */

static const char  *sft_http_admin_directions[] = { "download", "upload" };
static const char  *sft_http_admin_paths[] = {
    "sendfile", "splice", "pooled", "tls", "tls_sealed", "ktls", "sftp"
};


static u_char *
sft_http_admin_transfers_json(u_char *p, u_char *last, sft_stats_slot_t *t)
{
    sft_uint_t  d, k;

    for (d = 0; d < 2; d++) {
        p = sft_slprintf(p, last, "%s\"%s\":{", d ? "," : "{",
                         sft_http_admin_directions[d]);

        for (k = 0; k < SFT_XFER_NPATHS; k++) {
            p = sft_slprintf(p, last,
                             "%s\"%s\":{\"count\":%" PRIu64
                             ",\"bytes\":%" PRIu64 "}",
                             k ? "," : "", sft_http_admin_paths[k],
                             t->value[sft_stat_xfer(d, k, 0)],
                             t->value[sft_stat_xfer(d, k, 1)]);
        }

        p = sft_slprintf(p, last, "}");
    }

    return sft_slprintf(p, last, "}");
}


static u_char *
sft_http_admin_transfer_metrics(u_char *p, u_char *last, sft_stats_slot_t *t)
{
    sft_uint_t          d, k, w;
    static const char  *names[] = {
        "transfers_total", "transfer_bytes_total"
    };
    static const char  *helps[] = {
        "Finished file transfers by direction and data path.",
        "Bytes of file transfers by direction and data path."
    };

    for (w = 0; w < 2; w++) {
        p = sft_slprintf(p, last,
                         "# HELP siftp_%s %s\n# TYPE siftp_%s counter\n",
                         names[w], helps[w], names[w]);

        for (d = 0; d < 2; d++) {
            for (k = 0; k < SFT_XFER_NPATHS; k++) {
                p = sft_slprintf(p, last,
                                 "siftp_%s{direction=\"%s\",path=\"%s\"} %"
                                 PRIu64 "\n", names[w],
                                 sft_http_admin_directions[d],
                                 sft_http_admin_paths[k],
                                 t->value[sft_stat_xfer(d, k, w)]);
            }
        }
    }

    return p;
}


static u_char *
sft_http_admin_metric(u_char *p, u_char *last, const char *name,
    const char *help, const char *type, uint64_t value)
{
    return sft_slprintf(p, last,
                        "# HELP siftp_%s %s\n# TYPE siftp_%s %s\n"
                        "siftp_%s %" PRIu64 "\n",
                        name, help, name, type, name, value);
}


static sft_int_t
sft_http_admin_metrics(sft_http_request_t *r)
{
    u_char                     *p, *last;
    sft_uint_t                  i;
    sft_str_t                   body;
    sft_http_admin_snapshot_t   s;
    sft_http_admin_srv_conf_t  *ascf;

    ascf = sft_proto_get_module_srv_conf(r->hc->ctx, sft_http_admin_module);

    if (!ascf->metrics) {
        return sft_http_send_response(r, 404, NULL, NULL);
    }

    sft_http_admin_snapshot(&s);

    p = sft_pnalloc(r->pool, SFT_HTTP_ADMIN_BUF);
    if (p == NULL) {
        return SFT_ERROR;
    }

    body.data = p;
    last = p + SFT_HTTP_ADMIN_BUF;

    p = sft_slprintf(p, last,
                     "# HELP siftp_build_info Version of siftpd.\n"
                     "# TYPE siftp_build_info gauge\n"
                     "siftp_build_info{version=\"" SFT_VERSION "\"} 1\n");

    p = sft_http_admin_metric(p, last, "uptime_seconds",
                              "Seconds since the master process started.",
                              "gauge", s.uptime);
    p = sft_http_admin_metric(p, last, "workers",
                              "Configured worker processes.", "gauge",
                              (uint64_t) s.workers);
    p = sft_http_admin_metric(p, last, "processes",
                              "Worker processes running, old ones that are "
                              "still finishing sessions included.", "gauge",
                              (uint64_t) s.processes);
    p = sft_http_admin_metric(p, last, "reloads_total",
                              "Configuration reloads.", "counter", s.reloads);
    p = sft_http_admin_metric(p, last, "worker_respawns_total",
                              "Worker processes replaced after dying.",
                              "counter", s.respawns);

    for (i = 0; i < SFT_STAT_XFERS; i++) {
        p = sft_http_admin_metric(p, last, sft_stat_descs[i].name,
                                  sft_stat_descs[i].help,
                                  sft_stat_descs[i].gauge ? "gauge"
                                                          : "counter",
                                  s.total.value[i]);
    }

    p = sft_http_admin_transfer_metrics(p, last, &s.total);

    p = sft_http_admin_metric(p, last, "buffer_pool_chunk_bytes",
                              "Size of one buffer pool chunk.", "gauge",
                              s.chunk_bytes);
    p = sft_http_admin_metric(p, last, "buffer_pool_chunks",
                              "Chunks in the shared buffer pool.", "gauge",
                              s.pool.total);
    p = sft_http_admin_metric(p, last, "buffer_pool_free_chunks",
                              "Chunks not handed out.", "gauge",
                              s.pool.free);

    p = sft_http_admin_metric(p, last, "auth_argon2_runs_total",
                              "Password checks that ran argon2id.",
                              "counter", s.auth.argon2_runs);
    p = sft_http_admin_metric(p, last, "auth_cache_hits_total",
                              "Logins answered by the verification cache.",
                              "counter", s.auth.cache_hits);
    p = sft_http_admin_metric(p, last, "auth_bans_total",
                              "Addresses banned after repeated failures.",
                              "counter", s.auth.bans);

    body.len = p - body.data;

    return sft_http_send_response(r, 200,
                                  "text/plain; version=0.0.4; charset=utf-8",
                                  &body);
}
