/*
 * sft_http_admin_module.c -- GET /api/v1/stats (JSON) and GET /metrics
 * (Prometheus text), both totals over every worker process of whatever the
 * modules registered: counters, gauges and histograms.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>


typedef struct {
    sft_flag_t   api;
    sft_flag_t   metrics;
} sft_http_admin_srv_conf_t;


/* a key of the JSON answer: an object, or a number when it has no child */

typedef struct sft_http_admin_node_s  sft_http_admin_node_t;

struct sft_http_admin_node_s {
    sft_str_t                 key;
    uint64_t                  value;
    sft_http_admin_node_t    *child;
    sft_http_admin_node_t    *last;
    sft_http_admin_node_t    *next;
};


/* in the order of SFT_STAT_COUNTER, _GAUGE, _HISTOGRAM */
static const char *const  sft_http_admin_types[] = {
    "counter", "gauge", "histogram"
};


static void *sft_http_admin_create_srv_conf(sft_conf_t *cf);
static char *sft_http_admin_merge_srv_conf(sft_conf_t *cf, void *parent,
    void *child);
static char *sft_http_admin_init_main_conf(sft_conf_t *cf, void *conf);
static sft_int_t sft_http_admin_stats(sft_http_request_t *r);
static sft_int_t sft_http_admin_metrics(sft_http_request_t *r);
static size_t sft_http_admin_size(sft_cycle_t *cycle);
static uint64_t sft_http_admin_value(sft_stat_t *stat, uint64_t *total,
    sft_uint_t v);
static sft_int_t sft_http_admin_json_stat(sft_pool_t *pool,
    sft_http_admin_node_t *root, sft_stat_t *stat, uint64_t *total);
static sft_int_t sft_http_admin_json_add(sft_pool_t *pool,
    sft_http_admin_node_t *root, sft_stat_t *stat, sft_uint_t i,
    sft_uint_t j, const char *const *leaf, uint64_t value);
static sft_http_admin_node_t *sft_http_admin_child(sft_pool_t *pool,
    sft_http_admin_node_t *node, const char *name, size_t len);
static u_char *sft_http_admin_metric(u_char *p, u_char *last,
    sft_stat_t *stat, uint64_t *total, sft_uint_t i, sft_uint_t j);
static u_char *sft_http_admin_labels(u_char *p, u_char *last,
    const sft_stat_def_t *def, sft_uint_t i, sft_uint_t j, const char *le);
static u_char *sft_http_admin_json(u_char *p, u_char *last,
    sft_http_admin_node_t *node);



static sft_command_t  sft_http_admin_commands[] = {

    { sft_string("api"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_admin_srv_conf_t, api),
      NULL,
      sft_command_doc("on | off", "on",
          "Serve the REST API under /api/v1/.") },

    { sft_string("metrics"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_admin_srv_conf_t, metrics),
      NULL,
      sft_command_doc("on | off", "on",
          "Serve the Prometheus metrics at /metrics.") },

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


/* room for either answer: every statistic with its names and numbers */

static size_t
sft_http_admin_size(sft_cycle_t *cycle)
{
    size_t                 size, line;
    sft_uint_t             s, i, j, k;
    sft_stat_t            *stats;
    const sft_stat_def_t  *def;

    size = 256 + sizeof(SFT_VERSION);
    stats = cycle->stats.elts;

    for (s = 0; s < cycle->stats.nelts; s++) {
        def = stats[s].def;
        line = 64 + (def->name ? 3 * strlen(def->name) : 0)
               + (def->help ? strlen(def->help) : 0)
               + (def->json ? 3 * strlen(def->json) : 0);
        size += line;

        /* a histogram's lines: one a bucket, +Inf, the sum, the count */

        if (def->type == SFT_STAT_HISTOGRAM && def->buckets) {
            for (k = 0; k < def->buckets->n; k++) {
                line += 2 * strlen(def->buckets->le[k]);
            }

            line *= def->buckets->n + 3;
        }

        for (i = 0; i < stats[s].n[0]; i++) {
            for (j = 0; j < stats[s].n[1]; j++) {
                size += line;

                if (def->label[0]) {
                    size += 2 * (strlen(def->label[0])
                                 + strlen(def->values[0][i]));
                }

                if (def->label[1]) {
                    size += 2 * (strlen(def->label[1])
                                 + strlen(def->values[1][j]));
                }
            }
        }
    }

    return size;
}


/* a value of a statistic: the i-th of its label combinations */

static uint64_t
sft_http_admin_value(sft_stat_t *stat, uint64_t *total, sft_uint_t v)
{
    if (stat->def->read) {
        return stat->def->read(stat->def);
    }

    return total[stat->index + v];
}


/* "api off" closes every route under /api/, the dispatcher asks */

sft_uint_t
sft_http_api_enabled(sft_http_request_t *r)
{
    sft_http_admin_srv_conf_t  *ascf;

    ascf = sft_proto_get_module_srv_conf(r->hc->ctx, sft_http_admin_module);

    return ascf->api;
}


static sft_int_t
sft_http_admin_stats(sft_http_request_t *r)
{
    u_char                     *p, *last;
    size_t                      size;
    uint64_t                   *total;
    sft_uint_t                  s;
    sft_str_t                   body;
    sft_cycle_t                *cycle;
    sft_stat_t                 *stats;
    sft_http_admin_node_t       root;

    cycle = (sft_cycle_t *) sft_cycle;
    stats = cycle->stats.elts;

    total = sft_stats_sum(cycle, r->pool);
    size = sft_http_admin_size(cycle);

    p = sft_pnalloc(r->pool, size);
    if (total == NULL || p == NULL) {
        return SFT_ERROR;
    }

    sft_memzero(&root, sizeof(sft_http_admin_node_t));

    for (s = 0; s < cycle->stats.nelts; s++) {
        if (stats[s].def->json
            && sft_http_admin_json_stat(r->pool, &root, &stats[s], total)
               != SFT_OK)
        {
            return SFT_ERROR;
        }
    }

    body.data = p;
    last = p + size;

    p = sft_slprintf(p, last, "{\"version\":\"" SFT_VERSION "\"%s",
                     root.child ? "," : "");
    p = sft_http_admin_json(p, last, root.child);
    p = sft_slprintf(p, last, "}\n");

    body.len = p - body.data;

    return sft_http_send_response(r, 200, "application/json", &body);
}


/*
 * A statistic's values into the tree, one a label combination; for a
 * histogram under its key "count", "sum_us" and "buckets" with the
 * cumulative count of each bound ("+Inf" the count).
 */

static sft_int_t
sft_http_admin_json_stat(sft_pool_t *pool, sft_http_admin_node_t *root,
    sft_stat_t *stat, uint64_t *total)
{
    uint64_t                   *v, cum;
    sft_uint_t                  i, j, k;
    const char                 *leaf[3];
    const sft_stat_buckets_t   *bk;

    bk = stat->def->buckets;

    for (i = 0; i < stat->n[0]; i++) {
        for (j = 0; j < stat->n[1]; j++) {

            if (stat->def->type != SFT_STAT_HISTOGRAM || bk == NULL) {
                if (sft_http_admin_json_add(pool, root, stat, i, j, NULL,
                        sft_http_admin_value(stat, total, i * stat->n[1] + j))
                    != SFT_OK)
                {
                    return SFT_ERROR;
                }

                continue;
            }

            v = &total[stat->index + (i * stat->n[1] + j) * (bk->n + 2)];
            cum = 0;
            leaf[0] = "buckets";
            leaf[2] = NULL;

            for (k = 0; k <= bk->n; k++) {
                cum += v[k];
                leaf[1] = (k < bk->n) ? bk->le[k] : "+Inf";

                if (sft_http_admin_json_add(pool, root, stat, i, j, leaf, cum)
                    != SFT_OK)
                {
                    return SFT_ERROR;
                }
            }

            leaf[0] = "count";
            leaf[1] = NULL;

            if (sft_http_admin_json_add(pool, root, stat, i, j, leaf, cum)
                != SFT_OK)
            {
                return SFT_ERROR;
            }

            leaf[0] = "sum_us";

            if (sft_http_admin_json_add(pool, root, stat, i, j, leaf,
                                        v[bk->n + 1])
                != SFT_OK)
            {
                return SFT_ERROR;
            }
        }
    }

    return SFT_OK;
}


/*
 * The statistic's JSON key with the label values put in, and the keys of
 * "leaf" after it (NULL-terminated, or NULL), into the tree.
 */

static sft_int_t
sft_http_admin_json_add(sft_pool_t *pool, sft_http_admin_node_t *root,
    sft_stat_t *stat, sft_uint_t i, sft_uint_t j, const char *const *leaf,
    uint64_t value)
{
    size_t                  len;
    const char             *tpl, *end, *name;
    sft_http_admin_node_t  *node;

    node = root;
    tpl = stat->def->json;

    for ( ;; ) {
        if (tpl) {
            end = strchr(tpl, '.');
            len = end ? (size_t) (end - tpl) : strlen(tpl);
            name = tpl;

            if (len == 2 && tpl[0] == '$' && (tpl[1] == '1' || tpl[1] == '2'))
            {
                name = stat->def->values[tpl[1] - '1'][tpl[1] == '1' ? i : j];
                len = strlen(name);
            }

            tpl = end ? end + 1 : NULL;

        } else if (leaf && *leaf) {
            name = *leaf++;
            len = strlen(name);

        } else {
            break;
        }

        node = sft_http_admin_child(pool, node, name, len);
        if (node == NULL) {
            return SFT_ERROR;
        }
    }

    node->value = value;

    return SFT_OK;
}


/* the child of node with that key, made if there is none */

static sft_http_admin_node_t *
sft_http_admin_child(sft_pool_t *pool, sft_http_admin_node_t *node,
    const char *name, size_t len)
{
    sft_http_admin_node_t  *n;

    for (n = node->child; n; n = n->next) {
        if (n->key.len == len && sft_strncmp(n->key.data, name, len) == 0) {
            return n;
        }
    }

    n = sft_pcalloc(pool, sizeof(sft_http_admin_node_t));
    if (n == NULL) {
        return NULL;
    }

    n->key.data = (u_char *) name;
    n->key.len = len;

    if (node->last) {
        node->last->next = n;

    } else {
        node->child = n;
    }

    node->last = n;

    return n;
}
/* the nodes from "node" on, each an object member */

static u_char *
sft_http_admin_json(u_char *p, u_char *last, sft_http_admin_node_t *node)
{
    for ( /* void */ ; node; node = node->next) {
        p = sft_slprintf(p, last, "\"%.*s\":", SFT_STR_FMT(&node->key));

        if (node->child) {
            p = sft_slprintf(p, last, "{");
            p = sft_http_admin_json(p, last, node->child);
            p = sft_slprintf(p, last, "}");

        } else {
            p = sft_slprintf(p, last, "%" PRIu64, node->value);
        }

        if (node->next) {
            p = sft_slprintf(p, last, ",");
        }
    }

    return p;
}


static sft_int_t
sft_http_admin_metrics(sft_http_request_t *r)
{
    u_char                     *p, *last;
    size_t                      size;
    uint64_t                   *total;
    sft_uint_t                  s, i, j;
    sft_str_t                   body;
    sft_cycle_t                *cycle;
    sft_stat_t                 *st;
    const sft_stat_def_t       *def;
    sft_http_admin_srv_conf_t  *ascf;

    ascf = sft_proto_get_module_srv_conf(r->hc->ctx, sft_http_admin_module);

    if (!ascf->metrics) {
        return sft_http_send_response(r, 404, NULL, NULL);
    }

    cycle = (sft_cycle_t *) sft_cycle;

    total = sft_stats_sum(cycle, r->pool);
    size = sft_http_admin_size(cycle);

    p = sft_pnalloc(r->pool, size);
    if (total == NULL || p == NULL) {
        return SFT_ERROR;
    }

    body.data = p;
    last = p + size;

    p = sft_slprintf(p, last,
                     "# HELP siftp_build_info Version of siftpd.\n"
                     "# TYPE siftp_build_info gauge\n"
                     "siftp_build_info{version=\"" SFT_VERSION "\"} 1\n");

    st = cycle->stats.elts;

    for (s = 0; s < cycle->stats.nelts; s++) {
        def = st[s].def;

        if (def->name == NULL) {
            continue;
        }

        p = sft_slprintf(p, last, "# HELP siftp_%s %s\n# TYPE siftp_%s %s\n",
                         def->name, def->help, def->name,
                         sft_http_admin_types[def->type]);

        for (i = 0; i < st[s].n[0]; i++) {
            for (j = 0; j < st[s].n[1]; j++) {
                p = sft_http_admin_metric(p, last, &st[s], total, i, j);
            }
        }
    }

    body.len = p - body.data;

    return sft_http_send_response(r, 200,
                                  "text/plain; version=0.0.4; charset=utf-8",
                                  &body);
}


/* the lines of one label combination: a value, or a histogram's series */

static u_char *
sft_http_admin_metric(u_char *p, u_char *last, sft_stat_t *stat,
    uint64_t *total, sft_uint_t i, sft_uint_t j)
{
    uint64_t                   *v, cum;
    sft_uint_t                  k;
    const sft_stat_def_t       *def;
    const sft_stat_buckets_t   *bk;

    def = stat->def;
    bk = def->buckets;

    if (def->type != SFT_STAT_HISTOGRAM || bk == NULL) {
        p = sft_slprintf(p, last, "siftp_%s", def->name);
        p = sft_http_admin_labels(p, last, def, i, j, NULL);

        return sft_slprintf(p, last, " %" PRIu64 "\n",
                            sft_http_admin_value(stat, total,
                                                 i * stat->n[1] + j));
    }

    v = &total[stat->index + (i * stat->n[1] + j) * (bk->n + 2)];
    cum = 0;

    for (k = 0; k <= bk->n; k++) {
        cum += v[k];
        p = sft_slprintf(p, last, "siftp_%s_bucket", def->name);
        p = sft_http_admin_labels(p, last, def, i, j,
                                  k < bk->n ? bk->le[k] : "+Inf");
        p = sft_slprintf(p, last, " %" PRIu64 "\n", cum);
    }

    p = sft_slprintf(p, last, "siftp_%s_sum", def->name);
    p = sft_http_admin_labels(p, last, def, i, j, NULL);
    p = sft_slprintf(p, last, " %" PRIu64 ".%06" PRIu64 "\n",
                     v[bk->n + 1] / 1000000, v[bk->n + 1] % 1000000);

    p = sft_slprintf(p, last, "siftp_%s_count", def->name);
    p = sft_http_admin_labels(p, last, def, i, j, NULL);

    return sft_slprintf(p, last, " %" PRIu64 "\n", cum);
}


/* {label="value",...,le="bound"}, or nothing without labels */

static u_char *
sft_http_admin_labels(u_char *p, u_char *last, const sft_stat_def_t *def,
    sft_uint_t i, sft_uint_t j, const char *le)
{
    const char  *sep;

    sep = "{";

    if (def->label[0]) {
        p = sft_slprintf(p, last, "%s%s=\"%s\"", sep, def->label[0],
                         def->values[0][i]);
        sep = ",";
    }

    if (def->label[1]) {
        p = sft_slprintf(p, last, "%s%s=\"%s\"", sep, def->label[1],
                         def->values[1][j]);
        sep = ",";
    }

    if (le) {
        p = sft_slprintf(p, last, "%sle=\"%s\"", sep, le);
        sep = ",";
    }

    return (sep[0] == ',') ? sft_slprintf(p, last, "}") : p;
}
