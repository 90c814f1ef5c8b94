/*
 * sft_pgsql_nodes.c -- max_sessions over the nodes of one PostgreSQL user
 * store (sql/pgsql/003_nodes.sql): each worker writes its node's sessions
 * per user (the shared memory's counts) when they change and every
 * SFT_PGSQL_NODE_BEAT_MSEC, which is the node's heartbeat in siftp_nodes,
 * and reads the sessions of the other live nodes (a heartbeat within
 * SFT_PGSQL_NODE_TIMEOUT) on the same beat and when "siftp_sessions"
 * names another node; sft_usage.c counts them with the node's own at each
 * session's start, which waits for nothing.  While the database is down
 * a node counts its own sessions only.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event.h>
#include <sft_pgsql_user.h>
#include <sft_usage.h>


#define SFT_PGSQL_NODES_CHANNEL    "siftp_sessions"
#define SFT_PGSQL_NODE_BEAT_MSEC   2000
#define SFT_PGSQL_NODE_NUM_LEN     (sizeof("2147483647") - 1)


static sft_int_t sft_pgsql_nodes_init_process(sft_cycle_t *cycle);
static void sft_pgsql_nodes_exit_process(sft_cycle_t *cycle);
static void sft_pgsql_nodes_changed(void);
static void sft_pgsql_nodes_beat(sft_event_t *ev);
static void sft_pgsql_nodes_write(void);
static void sft_pgsql_nodes_written(sft_pgsql_query_t *q, PGresult *res);
static void sft_pgsql_nodes_read(void);
static void sft_pgsql_nodes_counted(sft_pgsql_query_t *q, PGresult *res);
static void sft_pgsql_nodes_notify(sft_str_t *payload, void *data);
static void sft_pgsql_nodes_state(sft_uint_t up, void *data);


static sft_core_module_t  sft_pgsql_nodes_module_ctx = {
    sft_string("pgsql_nodes"),
    NULL,
    NULL
};


sft_module_t  sft_pgsql_nodes_module = {
    SFT_MODULE_V1,
    &sft_pgsql_nodes_module_ctx,           /* module context */
    NULL,                                  /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_pgsql_nodes_init_process,          /* init process */
    sft_pgsql_nodes_exit_process,          /* exit process */
    NULL,                                  /* exit master */
    NULL,                                  /* process exited */
    NULL,                                  /* processes changed */
    SFT_MODULE_V1_SPARE
};


static struct {
    sft_uint_t             started;
    sft_uint_t             writing;       /* w is on the wire */
    sft_uint_t             changed;       /* since the last write */
    sft_uint_t             reading;
    sft_uint_t             reread;        /* notified while reading */
    sft_uint_t             alone;         /* told: counting alone */
    sft_pgsql_query_t      w;
    sft_pgsql_query_t      r;
    u_char                *names;         /* w's arrays */
    u_char                *counts;
    sft_event_t            timer;
    sft_pgsql_listener_t   listener;
    sft_log_t             *log;
    char                   node[256];
    char                   master[24];
} sft_pgsql_nodes;


/* listed before sft_pgsql_user_module: its listener is there at the start */

static sft_int_t
sft_pgsql_nodes_init_process(sft_cycle_t *cycle)
{
    sft_pgsql_fleet_conf_t  *fcf;

    if (!sft_pgsql_user_configured(cycle)) {
        return SFT_OK;
    }

    fcf = (sft_pgsql_fleet_conf_t *) sft_get_conf(cycle->conf_ctx,
                                                  sft_pgsql_bans_module);

    sft_memzero(&sft_pgsql_nodes, sizeof(sft_pgsql_nodes));
    sft_pgsql_nodes.log = cycle->log;
    sft_memcpy(sft_pgsql_nodes.node, fcf->node.data, fcf->node.len);
    snprintf(sft_pgsql_nodes.master, sizeof(sft_pgsql_nodes.master), "%ld",
             (long) getppid());

    sft_pgsql_listen_tick(&sft_pgsql_nodes.listener, SFT_PGSQL_NODES_CHANNEL,
                          sft_pgsql_nodes_notify, sft_pgsql_nodes_state,
                          &sft_pgsql_nodes.timer, sft_pgsql_nodes_beat,
                          SFT_PGSQL_NODE_BEAT_MSEC, cycle->log);

    sft_usage_share(sft_pgsql_nodes_changed);
    sft_nodes_lister(sft_pgsql_nodes_list);
    sft_pgsql_nodes.started = 1;

    return SFT_OK;
}


static void
sft_pgsql_nodes_exit_process(sft_cycle_t *cycle)
{
    (void) cycle;

    if (!sft_pgsql_nodes.started) {
        return;
    }

    sft_usage_share(NULL);
    sft_nodes_lister(NULL);

    if (sft_pgsql_nodes.timer.timer_set) {
        sft_del_timer(&sft_pgsql_nodes.timer);
    }

    sft_free(sft_pgsql_nodes.names);
    sft_pgsql_nodes.names = NULL;
    sft_pgsql_nodes.started = 0;
}


/* a session began or ended on this node */

static void
sft_pgsql_nodes_changed(void)
{
    sft_pgsql_nodes.changed = 1;
    sft_pgsql_nodes_write();
}


static void
sft_pgsql_nodes_beat(sft_event_t *ev)
{
    ev->timedout = 0;

    sft_pgsql_nodes_write();
    sft_pgsql_nodes_read();

    sft_add_timer(&sft_pgsql_nodes.timer, SFT_PGSQL_NODE_BEAT_MSEC);
}


/* the node's counts as two arrays: {"alice","bob"} and {1,2} */

static void
sft_pgsql_nodes_write(void)
{
    size_t              nlen, clen;
    u_char             *np, *cp;
    sft_str_t           name;
    sft_uint_t          i, n;
    sft_pgsql_query_t  *q;

    if (sft_pgsql_nodes.writing || !sft_pgsql_up()) {
        return;
    }

    nlen = 3;
    clen = 3;

    for (i = 0; sft_usage_next(&i, &name, &n) == SFT_OK; /* void */ ) {
        nlen += name.len + 3;
        clen += SFT_PGSQL_NODE_NUM_LEN + 1;
    }

    sft_free(sft_pgsql_nodes.names);

    sft_pgsql_nodes.names = sft_alloc(nlen + clen, sft_pgsql_nodes.log);
    if (sft_pgsql_nodes.names == NULL) {
        return;
    }

    sft_pgsql_nodes.counts = sft_pgsql_nodes.names + nlen;

    /* names are [A-Za-z0-9._@-]: nothing to escape inside the quotes */

    np = sft_pgsql_nodes.names;
    cp = sft_pgsql_nodes.counts;
    *np++ = '{';
    *cp++ = '{';

    for (i = 0; sft_usage_next(&i, &name, &n) == SFT_OK; /* void */ ) {
        if (np + name.len + 4 > sft_pgsql_nodes.names + nlen
            || cp + SFT_PGSQL_NODE_NUM_LEN + 2 > sft_pgsql_nodes.counts + clen)
        {
            break;                      /* more since they were measured */
        }

        if (np[-1] != '{') {
            *np++ = ',';
            *cp++ = ',';
        }

        np = sft_slprintf(np, sft_pgsql_nodes.names + nlen, "\"%.*s\"",
                          SFT_STR_FMT(&name));
        cp = sft_slprintf(cp, sft_pgsql_nodes.counts + clen, "%lu",
                          (unsigned long) sft_min(n, (sft_uint_t) INT32_MAX));
    }

    *np++ = '}';
    *np = '\0';
    *cp++ = '}';
    *cp = '\0';

    q = &sft_pgsql_nodes.w;
    sft_memzero(q, sizeof(sft_pgsql_query_t));
    q->sql = "SELECT siftp_node_sessions_set($1, $2, $3, $4, $5)";
    q->nparams = 5;
    q->params[0] = sft_pgsql_nodes.node;
    q->params[1] = sft_pgsql_nodes.master;
    q->params[2] = (char *) sft_pgsql_nodes.names;
    q->params[3] = (char *) sft_pgsql_nodes.counts;
    q->params[4] = sft_pgsql_nodes.changed ? "t" : "f";
    q->done = sft_pgsql_nodes_written;

    if (sft_pgsql_query(q) == SFT_AGAIN) {
        sft_pgsql_nodes.writing = 1;
        sft_pgsql_nodes.changed = 0;
    }
}


static void
sft_pgsql_nodes_written(sft_pgsql_query_t *q, PGresult *res)
{
    (void) q;

    sft_pgsql_nodes.writing = 0;

    if (res == NULL) {
        sft_pgsql_nodes.changed = 1;    /* written again when it is up */
        return;
    }

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        sft_log_error(SFT_LOG_ERR, sft_pgsql_nodes.log, 0,
                      "shared sessions: writing this node's sessions "
                      "failed: %s", PQresultErrorMessage(res));
        return;
    }

    if (sft_pgsql_nodes.changed) {
        sft_pgsql_nodes_write();
    }
}


static void
sft_pgsql_nodes_read(void)
{
    sft_pgsql_query_t  *q;

    if (sft_pgsql_nodes.reading) {
        sft_pgsql_nodes.reread = 1;
        return;
    }

    q = &sft_pgsql_nodes.r;
    sft_memzero(q, sizeof(sft_pgsql_query_t));
    q->sql = "SELECT s.name, sum(s.sessions)::bigint "
             "FROM siftp_node_sessions s JOIN siftp_nodes n "
             "ON n.name = s.node WHERE s.node <> $1 AND n.heartbeat > "
             "now() - interval '" SFT_PGSQL_NODE_TIMEOUT " seconds' "
             "GROUP BY s.name";
    q->nparams = 1;
    q->params[0] = sft_pgsql_nodes.node;
    q->done = sft_pgsql_nodes_counted;

    if (sft_pgsql_query(q) == SFT_AGAIN) {
        sft_pgsql_nodes.reading = 1;
        sft_pgsql_nodes.reread = 0;
    }
}


static void
sft_pgsql_nodes_counted(sft_pgsql_query_t *q, PGresult *res)
{
    int          i, n;
    char        *v;
    uint32_t     gen;
    sft_str_t    name;
    long long    sessions;

    (void) q;

    sft_pgsql_nodes.reading = 0;

    if (res == NULL) {
        return;
    }

    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != 2) {
        sft_log_error(SFT_LOG_ERR, sft_pgsql_nodes.log, 0,
                      "shared sessions: reading the other nodes' sessions "
                      "failed: %s", PQresultErrorMessage(res));
        return;
    }

    gen = sft_usage_remote_begin();
    n = PQntuples(res);

    for (i = 0; i < n; i++) {
        v = PQgetvalue(res, i, 0);
        name.data = (u_char *) v;
        name.len = strlen(v);

        if (sft_users_valid_name(&name) != SFT_OK) {
            continue;
        }

        sessions = strtoll(PQgetvalue(res, i, 1), NULL, 10);

        if (sessions > 0) {
            sft_usage_remote_set(gen, &name, (sft_uint_t) sessions,
                                 sft_pgsql_nodes.log);
        }
    }

    sft_usage_remote_end(gen);

    if (sft_pgsql_nodes.reread) {
        sft_pgsql_nodes_read();
    }
}


/* another node's sessions changed */

static void
sft_pgsql_nodes_notify(sft_str_t *payload, void *data)
{
    (void) data;

    if (payload->len == strlen(sft_pgsql_nodes.node)
        && sft_memcmp(payload->data, sft_pgsql_nodes.node, payload->len) == 0)
    {
        return;
    }

    sft_pgsql_nodes_read();
}


/* down: this node's sessions alone count; up: write, then read */

static void
sft_pgsql_nodes_state(sft_uint_t up, void *data)
{
    (void) data;

    if (up) {
        sft_pgsql_nodes.alone = 0;
        sft_pgsql_nodes.changed = 1;
        sft_pgsql_nodes_write();
        sft_pgsql_nodes_read();
        return;
    }

    sft_usage_remote_end(sft_usage_remote_begin());

    if (!sft_pgsql_nodes.alone) {
        sft_pgsql_nodes.alone = 1;
        sft_log_error(SFT_LOG_WARN, sft_pgsql_nodes.log, 0,
                      "shared sessions: the database is down, max_sessions "
                      "counts the sessions of this node only");
    }
}
