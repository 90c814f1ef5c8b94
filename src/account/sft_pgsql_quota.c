/*
 * sft_pgsql_quota.c -- quota usage shared by the nodes of one PostgreSQL
 * user store ("pgsql_shared_quota", on by default): the store of
 * sft_usage_lease.c.  Each report is one call of siftp_quota_sync()
 * (sql/pgsql/004_shared_quota.sql) on the worker's connection; a report
 * the connection lost is sent again under its number once it is back.
 * Every change of a user's usage, by any node, is told on "siftp_quota"
 * and set in the shared memory the admin API shows.  So are a short
 * worker's ask for the room other leases hold and the room given back
 * (sql/pgsql/005_quota_return.sql).  A worker that ends gives its leases
 * back before it exits.  Users without a quota make no traffic: they
 * have no lease.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event.h>
#include <sft_pgsql_user.h>
#include <sft_usage_lease.h>
#include <sft_exit_hold.h>


#define SFT_PGSQL_QUOTA_CHANNEL   "siftp_quota"
#define SFT_PGSQL_QUOTA_TICK_MSEC 1000
#define SFT_PGSQL_QUOTA_NPARAMS   17
#define SFT_PGSQL_QUOTA_NUM_LEN   sizeof("-9223372036854775808")


/* a lease's report on the wire (and its ask): the query and its numbers */
typedef struct {
    sft_pgsql_query_t      q;
    sft_pgsql_query_t      ask;
    sft_usage_lease_t     *lease;
    char                   name[SFT_USER_NAME_MAX + 1];
    char                   num[SFT_PGSQL_QUOTA_NPARAMS]
                              [SFT_PGSQL_QUOTA_NUM_LEN];
} sft_pgsql_quota_sync_t;


static sft_int_t sft_pgsql_quota_init_process(sft_cycle_t *cycle);
static void sft_pgsql_quota_exit_process(sft_cycle_t *cycle);
static sft_pgsql_query_t *sft_pgsql_quota_query(sft_usage_lease_t *l,
    sft_uint_t ask);
static sft_int_t sft_pgsql_quota_sync(sft_usage_lease_t *l);
static void sft_pgsql_quota_synced(sft_pgsql_query_t *q, PGresult *res);
static sft_int_t sft_pgsql_quota_ask(sft_usage_lease_t *l);
static void sft_pgsql_quota_answered(sft_pgsql_query_t *q, PGresult *res);
static sft_int_t sft_pgsql_quota_leave(sft_exit_hold_t *h);
static void sft_pgsql_quota_left(void *data);
static void sft_pgsql_quota_tick(sft_event_t *ev);
static void sft_pgsql_quota_notify(sft_str_t *payload, void *data);
static void sft_pgsql_quota_state(sft_uint_t up, void *data);


static sft_core_module_t  sft_pgsql_quota_module_ctx = {
    sft_string("pgsql_quota"),
    NULL,
    NULL
};


sft_module_t  sft_pgsql_quota_module = {
    SFT_MODULE_V1,
    &sft_pgsql_quota_module_ctx,           /* module context */
    NULL,                                  /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_pgsql_quota_init_process,          /* init process */
    sft_pgsql_quota_exit_process,          /* exit process */
    NULL,                                  /* exit master */
    NULL,                                  /* process exited */
    NULL,                                  /* processes changed */
    SFT_MODULE_V1_SPARE
};


static struct {
    sft_event_t            timer;
    sft_pgsql_listener_t   listener;
    sft_exit_hold_t        hold;
    sft_log_t             *log;
    char                   node[256];
    char                   master[24];
    char                   worker[24];
} sft_pgsql_quota;


/* listed before sft_pgsql_user_module: its listener is there at the start */

static sft_int_t
sft_pgsql_quota_init_process(sft_cycle_t *cycle)
{
    sft_pgsql_fleet_conf_t  *fcf;

    fcf = (sft_pgsql_fleet_conf_t *) sft_get_conf(cycle->conf_ctx,
                                                  sft_pgsql_bans_module);

    if (!fcf->shared_quota || !sft_pgsql_user_configured(cycle)) {
        return SFT_OK;
    }

    sft_memzero(&sft_pgsql_quota, sizeof(sft_pgsql_quota));
    sft_pgsql_quota.log = cycle->log;
    sft_memcpy(sft_pgsql_quota.node, fcf->node.data, fcf->node.len);
    snprintf(sft_pgsql_quota.master, sizeof(sft_pgsql_quota.master), "%ld",
             (long) getppid());
    snprintf(sft_pgsql_quota.worker, sizeof(sft_pgsql_quota.worker), "%ld",
             (long) sft_pid);

    sft_pgsql_listen_tick(&sft_pgsql_quota.listener, SFT_PGSQL_QUOTA_CHANNEL,
                          sft_pgsql_quota_notify, sft_pgsql_quota_state,
                          &sft_pgsql_quota.timer, sft_pgsql_quota_tick,
                          SFT_PGSQL_QUOTA_TICK_MSEC, cycle->log);

    sft_usage_lease_provide(sft_pgsql_quota_sync, sft_pgsql_quota_ask,
                            cycle->log);

    sft_pgsql_quota.hold.start = sft_pgsql_quota_leave;
    sft_exit_hold_add(&sft_pgsql_quota.hold);

    return SFT_OK;
}


/* the sessions are gone: the leases given back before the exit */

static sft_int_t
sft_pgsql_quota_leave(sft_exit_hold_t *h)
{
    return sft_usage_lease_leave(sft_pgsql_quota_left, h);
}


static void
sft_pgsql_quota_left(void *data)
{
    sft_exit_hold_done(data);
}


/* the leases not given back in time are the database's to sweep */

static void
sft_pgsql_quota_exit_process(sft_cycle_t *cycle)
{
    (void) cycle;

    sft_usage_lease_provide(NULL, NULL, NULL);

    if (sft_pgsql_quota.timer.timer_set) {
        sft_del_timer(&sft_pgsql_quota.timer);
    }
}


static char *
sft_pgsql_quota_num(sft_pgsql_quota_sync_t *s, sft_uint_t i, off_t n)
{
    snprintf(s->num[i], sizeof(s->num[i]), "%lld", (long long) n);

    return s->num[i];
}


/* the lease's query for a report, or for an ask, made ready for its own */

static sft_pgsql_query_t *
sft_pgsql_quota_query(sft_usage_lease_t *l, sft_uint_t ask)
{
    sft_pgsql_query_t       *q;
    sft_pgsql_quota_sync_t  *s;

    s = l->ctx;

    if (s == NULL) {
        s = sft_calloc(sizeof(sft_pgsql_quota_sync_t), sft_pgsql_quota.log);
        if (s == NULL) {
            return NULL;
        }

        s->lease = l;
        sft_memcpy(s->name, l->name.data,
                   sft_min(l->name.len, SFT_USER_NAME_MAX));
        l->ctx = s;
    }

    q = ask ? &s->ask : &s->q;
    sft_memzero(q, sizeof(sft_pgsql_query_t));

    q->done = ask ? sft_pgsql_quota_answered : sft_pgsql_quota_synced;
    q->data = s;
    q->params[0] = s->name;
    q->params[1] = sft_pgsql_quota.node;

    return q;
}


/*
 * The lease's report, or its last (the lease given back whole, its row
 * deleted): SFT_AGAIN on the wire, SFT_ERROR the server is down.
 */

static sft_int_t
sft_pgsql_quota_sync(sft_usage_lease_t *l)
{
    sft_pgsql_query_t       *q;
    sft_pgsql_quota_sync_t  *s;

    q = sft_pgsql_quota_query(l, 0);
    if (q == NULL) {
        return SFT_ERROR;
    }

    s = q->data;

    /* who reports, and what: the same for both */

    q->params[2] = sft_pgsql_quota.master;
    q->params[3] = sft_pgsql_quota.worker;
    q->params[4] = sft_pgsql_quota_num(s, 4, (off_t) l->seq);
    q->params[5] = sft_pgsql_quota_num(s, 5, l->out_spent_bytes);
    q->params[6] = sft_pgsql_quota_num(s, 6, l->out_spent_files);
    q->params[7] = sft_pgsql_quota_num(s, 7, l->out_freed_bytes);
    q->params[8] = sft_pgsql_quota_num(s, 8, l->out_freed_files);

    if (l->out_give) {
        q->sql = "SELECT * FROM siftp_quota_leave($1, $2, $3, $4, $5, $6, "
                 "$7, $8, $9)";
        q->nparams = 9;

        return sft_pgsql_query(q) == SFT_AGAIN ? SFT_AGAIN : SFT_ERROR;
    }

    q->sql = "SELECT * FROM siftp_quota_sync($1, $2, $3, $4, $5, $6, $7, "
             "$8, $9, $10, $11, $12, $13, $14, $15, $16, $17)";
    q->nparams = SFT_PGSQL_QUOTA_NPARAMS;
    q->params[9] = sft_pgsql_quota_num(s, 9, l->want_bytes);
    q->params[10] = sft_pgsql_quota_num(s, 10, l->want_files);
    q->params[11] = sft_pgsql_quota_num(s, 11, l->need_bytes);
    q->params[12] = sft_pgsql_quota_num(s, 12, l->max_bytes);
    q->params[13] = sft_pgsql_quota_num(s, 13, l->max_files);
    q->params[14] = l->out_count
                    ? sft_pgsql_quota_num(s, 14, l->out_count_bytes) : NULL;
    q->params[15] = l->out_count
                    ? sft_pgsql_quota_num(s, 15, l->out_count_files) : NULL;
    q->params[16] = l->out_recount ? "t" : "f";

    return sft_pgsql_query(q) == SFT_AGAIN ? SFT_AGAIN : SFT_ERROR;
}


/* the lease is short: the other workers holding room are asked for it */

static sft_int_t
sft_pgsql_quota_ask(sft_usage_lease_t *l)
{
    sft_pgsql_query_t  *q;

    q = sft_pgsql_quota_query(l, 1);
    if (q == NULL) {
        return SFT_ERROR;
    }

    q->sql = "SELECT siftp_quota_ask($1, $2, $3)";
    q->nparams = 3;
    q->params[2] = sft_pgsql_quota.worker;

    return sft_pgsql_query(q) == SFT_AGAIN ? SFT_AGAIN : SFT_ERROR;
}


static void
sft_pgsql_quota_answered(sft_pgsql_query_t *q, PGresult *res)
{
    sft_pgsql_quota_sync_t  *s = q->data;

    sft_usage_lease_answered(s->lease,
                             res != NULL
                             && PQresultStatus(res) == PGRES_TUPLES_OK
                             && PQntuples(res) == 1 && PQnfields(res) == 1
                             && PQgetvalue(res, 0, 0)[0] == 't');
}


/* a number of the answer, range-checked */

static sft_int_t
sft_pgsql_quota_value(PGresult *res, int col, off_t *n)
{
    char       *v, *end;
    long long   ll;

    if (PQgetisnull(res, 0, col)) {
        return SFT_ERROR;
    }

    v = PQgetvalue(res, 0, col);

    errno = 0;
    ll = strtoll(v, &end, 10);

    if (errno || end == v || *end != '\0' || ll < 0) {
        return SFT_ERROR;
    }

    *n = (off_t) ll;

    return SFT_OK;
}


static void
sft_pgsql_quota_synced(sft_pgsql_query_t *q, PGresult *res)
{
    off_t                    bytes, files, lb, lf;
    sft_uint_t               counted;
    sft_usage_lease_t       *l;
    sft_pgsql_quota_sync_t  *s = q->data;

    l = s->lease;

    if (res == NULL) {
        sft_usage_lease_synced(l, 0, 0, 0, 0, 0, 0);
        return;
    }

    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1
        || PQnfields(res) != 5
        || sft_pgsql_quota_value(res, 0, &bytes) != SFT_OK
        || sft_pgsql_quota_value(res, 1, &files) != SFT_OK
        || sft_pgsql_quota_value(res, 2, &lb) != SFT_OK
        || sft_pgsql_quota_value(res, 3, &lf) != SFT_OK)
    {
        sft_log_error(SFT_LOG_ERR, sft_pgsql_quota.log, 0,
                      "shared quota: the usage of \"%s\" could not be "
                      "reported: %s", s->name, PQresultErrorMessage(res));
        sft_usage_lease_synced(l, 0, 0, 0, 0, 0, 0);
        return;
    }

    counted = PQgetvalue(res, 0, 4)[0] == 't';

    sft_usage_lease_synced(l, 1, bytes, files, lb, lf, counted);
}


static void
sft_pgsql_quota_tick(sft_event_t *ev)
{
    ev->timedout = 0;

    if (sft_pgsql_up()) {
        sft_usage_lease_tick();
    }

    sft_add_timer(&sft_pgsql_quota.timer, SFT_PGSQL_QUOTA_TICK_MSEC);
}


/*
 * "NAME BYTES FILES" from any node; "NAME -1 -1": to be counted again;
 * "NAME ask": a short worker asks for the room leases hold; "NAME room":
 * a lease was given back
 */

static void
sft_pgsql_quota_notify(sft_str_t *payload, void *data)
{
    char          buf[SFT_USER_NAME_MAX + 2 * SFT_PGSQL_QUOTA_NUM_LEN + 4];
    char         *p, *end;
    long long     bytes, files;
    sft_str_t     name;
    sft_usage_t  *r;

    (void) data;

    if (payload->len >= sizeof(buf)) {
        return;
    }

    sft_memcpy(buf, payload->data, payload->len);
    buf[payload->len] = '\0';

    p = strchr(buf, ' ');

    if (p == NULL) {
        return;
    }

    name.data = (u_char *) buf;
    name.len = p - buf;

    if (sft_users_valid_name(&name) != SFT_OK) {
        return;
    }

    r = sft_usage_lookup(&name);

    if (r == NULL) {
        return;
    }

    if (strcmp(p + 1, "ask") == 0) {
        sft_usage_lease_asked(r);
        return;
    }

    if (strcmp(p + 1, "room") == 0) {
        sft_usage_lease_room(r);
        return;
    }

    errno = 0;
    bytes = strtoll(p + 1, &end, 10);

    if (errno || *end != ' ') {
        return;
    }

    files = strtoll(end + 1, &end, 10);

    if (errno || *end != '\0' || bytes < -1 || files < -1) {
        return;
    }

    if (bytes < 0 || files < 0) {
        sft_usage_forget(r);
        return;
    }

    sft_usage_replace(r, (off_t) bytes, (off_t) files);
}


/* connected again: the reports that waited are sent by the next tick */

static void
sft_pgsql_quota_state(sft_uint_t up, void *data)
{
    (void) data;

    if (up) {
        sft_usage_lease_tick();
    }
}
