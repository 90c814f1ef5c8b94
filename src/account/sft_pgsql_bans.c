/*
 * sft_pgsql_bans.c -- login failures and bans shared by the nodes of one
 * PostgreSQL user store ("pgsql_shared_bans", on by default): a worker
 * tells the database every failure and every ban or lifted ban of its own
 * (sql/pgsql/002_shared_bans.sql), in order, one query at a time on the
 * worker's connection, and keeps what it could not tell yet while the
 * database is down.  The database counts the failures of every node and
 * bans at login_max_failures; each ban and lifted ban is notified on
 * "siftp_bans" and applied to the shared memory that every check reads
 * (sft_auth.c), as are the bans the database holds at each connect.  A
 * node keeps its own bans whatever the database says or whether it is up.
 * Rows that neither ban nor count failures any more are deleted at each
 * connect and every SFT_PGSQL_BANS_SWEEP_MSEC.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_pgsql_user.h>
#include <sft_auth.h>


#define SFT_PGSQL_BANS_CHANNEL   "siftp_bans"
#define SFT_PGSQL_BANS_MAX       256     /* not told yet, per worker */
#define SFT_PGSQL_BANS_SWEEP_MSEC  600000 /* rows past ban and window go */

#define SFT_PGSQL_BAN_FAILED     0
#define SFT_PGSQL_BAN_BANNED     1
#define SFT_PGSQL_BAN_UNBANNED   2


typedef struct {
    sft_uint_t             op;
    sft_uint_t             n;            /* failures */
    char                   source[INET6_ADDRSTRLEN + sizeof("/128")];
} sft_pgsql_ban_t;


static void *sft_pgsql_bans_create_conf(sft_cycle_t *cycle);
static char *sft_pgsql_bans_init_conf(sft_cycle_t *cycle, void *conf);
static sft_int_t sft_pgsql_bans_init_process(sft_cycle_t *cycle);
static void sft_pgsql_bans_exit_process(sft_cycle_t *cycle);
static void sft_pgsql_bans_failed(const char *source, sft_log_t *log);
static void sft_pgsql_bans_banned(const char *source, sft_uint_t failures,
    sft_log_t *log);
static void sft_pgsql_bans_unbanned(const char *source);
static void sft_pgsql_bans_add(sft_uint_t op, const char *source,
    sft_uint_t n);
static void sft_pgsql_bans_send(void);
static void sft_pgsql_bans_sent(sft_pgsql_query_t *q, PGresult *res);
static void sft_pgsql_bans_loaded(sft_pgsql_query_t *q, PGresult *res);
static void sft_pgsql_bans_notify(sft_str_t *payload, void *data);
static void sft_pgsql_bans_state(sft_uint_t up, void *data);
static void sft_pgsql_bans_sweep(sft_event_t *ev);
static void sft_pgsql_bans_swept(sft_pgsql_query_t *q, PGresult *res);


static sft_command_t  sft_pgsql_bans_commands[] = {

    { sft_string("pgsql_shared_bans"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      0,
      offsetof(sft_pgsql_fleet_conf_t, shared_bans),
      NULL,
      sft_command_doc("on | off", "on",
          "With \"user_store postgresql\": login failures are counted and "
          "bans held by every node on the database, and a ban lifted on "
          "one node is lifted on all.") },

    { sft_string("pgsql_shared_quota"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      0,
      offsetof(sft_pgsql_fleet_conf_t, shared_quota),
      NULL,
      sft_command_doc("on | off", "on",
          "With \"user_store postgresql\": quota usage is kept in the "
          "database for every node, each worker spending a lease of the "
          "room left, so the nodes together never pass a quota; off: each "
          "node counts the usage on its own.") },

    { sft_string("node_name"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_str_slot,
      0,
      offsetof(sft_pgsql_fleet_conf_t, node),
      NULL,
      sft_command_doc("name", "the host name",
          "This node's name in a shared user store: its sessions and the "
          "bans it made are kept under it; give each node its own.") },

    sft_null_command
};


static sft_core_module_t  sft_pgsql_bans_module_ctx = {
    sft_string("pgsql_bans"),
    sft_pgsql_bans_create_conf,
    sft_pgsql_bans_init_conf
};


sft_module_t  sft_pgsql_bans_module = {
    SFT_MODULE_V1,
    &sft_pgsql_bans_module_ctx,            /* module context */
    sft_pgsql_bans_commands,               /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_pgsql_bans_init_process,           /* init process */
    sft_pgsql_bans_exit_process,           /* exit process */
    NULL,                                  /* exit master */
    NULL,                                  /* process exited */
    NULL,                                  /* processes changed */
    SFT_MODULE_V1_SPARE
};


static sft_auth_share_t  sft_pgsql_bans_share = {
    sft_pgsql_bans_failed,
    sft_pgsql_bans_banned,
    sft_pgsql_bans_unbanned
};


static struct {
    sft_pgsql_ban_t        out[SFT_PGSQL_BANS_MAX];   /* a ring */
    sft_uint_t             head;
    sft_uint_t             count;
    sft_uint_t             sending;       /* out[head] is on the wire */
    sft_uint_t             dropped;       /* since the last one told */
    sft_pgsql_query_t      q;
    sft_pgsql_query_t      load;
    sft_uint_t             loading;
    sft_pgsql_query_t      sweep;
    sft_uint_t             sweeping;
    sft_event_t            timer;
    char                   window[24];     /* the numbers of sweep */
    sft_pgsql_listener_t   listener;
    sft_users_conf_t      *ucf;
    sft_log_t             *log;
    char                   node[256];
    char                   p[4][24];       /* the numbers of q */
} sft_pgsql_bans;


static void *
sft_pgsql_bans_create_conf(sft_cycle_t *cycle)
{
    sft_pgsql_fleet_conf_t  *bcf;

    bcf = sft_pcalloc(cycle->pool, sizeof(sft_pgsql_fleet_conf_t));
    if (bcf == NULL) {
        return NULL;
    }

    bcf->shared_bans = SFT_CONF_UNSET;
    bcf->shared_quota = SFT_CONF_UNSET;

    return bcf;
}


static char *
sft_pgsql_bans_init_conf(sft_cycle_t *cycle, void *conf)
{
    char                     host[256];
    sft_pgsql_fleet_conf_t  *bcf = conf;

    sft_conf_init_value(bcf->shared_bans, 1);
    sft_conf_init_value(bcf->shared_quota, 1);

    if (bcf->node.data == NULL) {
        if (gethostname(host, sizeof(host) - 1) == -1) {
            sft_memcpy(host, "unknown", sizeof("unknown"));
        }

        host[sizeof(host) - 1] = '\0';
        bcf->node.len = strlen(host);
        bcf->node.data = sft_pnalloc(cycle->pool, bcf->node.len);

        if (bcf->node.data == NULL) {
            return SFT_CONF_ERROR;
        }

        sft_memcpy(bcf->node.data, host, bcf->node.len);
    }

    if (bcf->node.len == 0 || bcf->node.len > 255) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "\"node_name\" must be 1 to 255 characters");
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


/* listed before sft_pgsql_user_module: its listener is there at the start */

static sft_int_t
sft_pgsql_bans_init_process(sft_cycle_t *cycle)
{
    sft_users_conf_t        *ucf;
    sft_pgsql_fleet_conf_t  *bcf;

    ucf = (sft_users_conf_t *) sft_get_conf(cycle->conf_ctx,
                                            sft_users_module);
    bcf = (sft_pgsql_fleet_conf_t *) sft_get_conf(cycle->conf_ctx,
                                                  sft_pgsql_bans_module);

    if (!bcf->shared_bans || !sft_pgsql_user_configured(cycle)) {
        return SFT_OK;
    }

    sft_memzero(&sft_pgsql_bans, sizeof(sft_pgsql_bans));
    sft_pgsql_bans.ucf = ucf;
    sft_pgsql_bans.log = cycle->log;
    sft_memcpy(sft_pgsql_bans.node, bcf->node.data, bcf->node.len);

    sft_pgsql_bans.listener.channel = SFT_PGSQL_BANS_CHANNEL;
    sft_pgsql_bans.listener.notify = sft_pgsql_bans_notify;
    sft_pgsql_bans.listener.state = sft_pgsql_bans_state;
    sft_pgsql_listen(&sft_pgsql_bans.listener);

    sft_auth_share(&sft_pgsql_bans_share);

    sft_pgsql_bans.timer.handler = sft_pgsql_bans_sweep;
    sft_pgsql_bans.timer.log = cycle->log;
    sft_add_timer(&sft_pgsql_bans.timer, SFT_PGSQL_BANS_SWEEP_MSEC);

    return SFT_OK;
}


static void
sft_pgsql_bans_exit_process(sft_cycle_t *cycle)
{
    (void) cycle;

    sft_auth_share(NULL);

    if (sft_pgsql_bans.timer.timer_set) {
        sft_del_timer(&sft_pgsql_bans.timer);
    }
}


static void
sft_pgsql_bans_failed(const char *source, sft_log_t *log)
{
    (void) log;

    if (sft_pgsql_bans.ucf->max_failures > 0) {
        sft_pgsql_bans_add(SFT_PGSQL_BAN_FAILED, source, 1);
    }
}


static void
sft_pgsql_bans_banned(const char *source, sft_uint_t failures,
    sft_log_t *log)
{
    (void) log;

    sft_pgsql_bans_add(SFT_PGSQL_BAN_BANNED, source, failures);
}


static void
sft_pgsql_bans_unbanned(const char *source)
{
    sft_pgsql_bans_add(SFT_PGSQL_BAN_UNBANNED, source, 0);
}


/*
 * Queued in order; a failure of a source whose last change waiting is a
 * failure is added to it.
 * A full ring drops the news: the bans of this node hold here anyway.
 */

static void
sft_pgsql_bans_add(sft_uint_t op, const char *source, sft_uint_t n)
{
    sft_uint_t        i;
    sft_pgsql_ban_t  *b;

    /* the source's last change, if not on the wire yet */

    for (i = sft_pgsql_bans.count; i > sft_pgsql_bans.sending; i--) {
        b = &sft_pgsql_bans.out[(sft_pgsql_bans.head + i - 1)
                                % SFT_PGSQL_BANS_MAX];

        if (strcmp(b->source, source) != 0) {
            continue;
        }

        if (op == SFT_PGSQL_BAN_FAILED && b->op == op) {
            b->n++;
            return;
        }

        break;
    }

    if (sft_pgsql_bans.count == SFT_PGSQL_BANS_MAX) {
        if (sft_pgsql_bans.dropped++ == 0) {
            sft_log_error(SFT_LOG_WARN, sft_pgsql_bans.log, 0,
                          "shared bans: %d changes wait for the database, "
                          "more are kept on this node only",
                          SFT_PGSQL_BANS_MAX);
        }

        return;
    }

    b = &sft_pgsql_bans.out[(sft_pgsql_bans.head + sft_pgsql_bans.count)
                            % SFT_PGSQL_BANS_MAX];
    sft_pgsql_bans.count++;

    b->op = op;
    b->n = n;
    snprintf(b->source, sizeof(b->source), "%s", source);

    sft_pgsql_bans_send();
}


static void
sft_pgsql_bans_send(void)
{
    sft_pgsql_ban_t    *b;
    sft_pgsql_query_t  *q;
    sft_users_conf_t   *ucf;

    if (sft_pgsql_bans.sending || sft_pgsql_bans.count == 0) {
        return;
    }

    b = &sft_pgsql_bans.out[sft_pgsql_bans.head];
    q = &sft_pgsql_bans.q;
    ucf = sft_pgsql_bans.ucf;

    sft_memzero(q, sizeof(sft_pgsql_query_t));
    q->done = sft_pgsql_bans_sent;
    q->params[0] = b->source;

    snprintf(sft_pgsql_bans.p[0], sizeof(sft_pgsql_bans.p[0]), "%lu",
             (unsigned long) sft_min(b->n, (sft_uint_t) INT32_MAX));
    snprintf(sft_pgsql_bans.p[1], sizeof(sft_pgsql_bans.p[1]), "%ld",
             (long) sft_min(ucf->failure_window, (time_t) INT32_MAX));
    snprintf(sft_pgsql_bans.p[2], sizeof(sft_pgsql_bans.p[2]), "%ld",
             (long) sft_min(ucf->max_failures, (sft_int_t) INT32_MAX));
    snprintf(sft_pgsql_bans.p[3], sizeof(sft_pgsql_bans.p[3]), "%ld",
             (long) sft_min(ucf->ban_time, (time_t) INT32_MAX));

    switch (b->op) {

    case SFT_PGSQL_BAN_FAILED:
        q->sql = "SELECT siftp_ban_failed($1, $2, $3, $4, $5, $6)";
        q->nparams = 6;
        q->params[1] = sft_pgsql_bans.p[0];
        q->params[2] = sft_pgsql_bans.p[1];
        q->params[3] = sft_pgsql_bans.p[2];
        q->params[4] = sft_pgsql_bans.p[3];
        q->params[5] = sft_pgsql_bans.node;
        break;

    case SFT_PGSQL_BAN_BANNED:
        q->sql = "SELECT siftp_ban($1, $2, $3, $4)";
        q->nparams = 4;
        q->params[1] = sft_pgsql_bans.p[3];
        q->params[2] = sft_pgsql_bans.p[0];
        q->params[3] = sft_pgsql_bans.node;
        break;

    default: /* SFT_PGSQL_BAN_UNBANNED */
        q->sql = "SELECT siftp_unban($1)";
        q->nparams = 1;
    }

    /* down: sent when it is up again */

    if (sft_pgsql_query(q) == SFT_AGAIN) {
        sft_pgsql_bans.sending = 1;
    }
}


/* told, or refused by the database (logged): the next one */

static void
sft_pgsql_bans_sent(sft_pgsql_query_t *q, PGresult *res)
{
    (void) q;

    sft_pgsql_bans.sending = 0;

    if (res == NULL) {
        return;                        /* the connection was lost: again */
    }

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        sft_log_error(SFT_LOG_ERR, sft_pgsql_bans.log, 0,
                      "shared bans: telling the database about %s failed: "
                      "%s", sft_pgsql_bans.out[sft_pgsql_bans.head].source,
                      PQresultErrorMessage(res));
    }

    sft_pgsql_bans.head = (sft_pgsql_bans.head + 1) % SFT_PGSQL_BANS_MAX;
    sft_pgsql_bans.count--;

    if (sft_pgsql_bans.count == 0 && sft_pgsql_bans.dropped) {
        sft_log_error(SFT_LOG_WARN, sft_pgsql_bans.log, 0,
                      "shared bans: %lu changes were kept on this node only",
                      (unsigned long) sft_pgsql_bans.dropped);
        sft_pgsql_bans.dropped = 0;
    }

    sft_pgsql_bans_send();
}


/* the bans the database holds, at every connect: they may be news */

static void
sft_pgsql_bans_loaded(sft_pgsql_query_t *q, PGresult *res)
{
    int  i, n;

    (void) q;

    sft_pgsql_bans.loading = 0;

    if (res == NULL) {
        return;
    }

    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != 3) {
        sft_log_error(SFT_LOG_ERR, sft_pgsql_bans.log, 0,
                      "shared bans: reading the bans failed: %s",
                      PQresultErrorMessage(res));
        return;
    }

    n = PQntuples(res);

    for (i = 0; i < n; i++) {
        (void) sft_auth_ban_source(PQgetvalue(res, i, 0),
                                   (time_t) strtol(PQgetvalue(res, i, 2),
                                                   NULL, 10),
                                   strtoul(PQgetvalue(res, i, 1), NULL, 10),
                                   sft_pgsql_bans.log);
    }
}


/* "SOURCE SECONDS FAILURES": banned for SECONDS more, or lifted (0) */

static void
sft_pgsql_bans_notify(sft_str_t *payload, void *data)
{
    char           buf[128], *source, *secs, *failures, *end;
    long           n;
    unsigned long  f;

    (void) data;

    if (payload->len >= sizeof(buf)) {
        return;
    }

    sft_memcpy(buf, payload->data, payload->len);
    buf[payload->len] = '\0';

    source = buf;
    secs = strchr(source, ' ');

    if (secs == NULL) {
        return;
    }

    *secs++ = '\0';
    failures = strchr(secs, ' ');

    if (failures == NULL) {
        return;
    }

    *failures++ = '\0';

    errno = 0;
    n = strtol(secs, &end, 10);

    if (errno || *end != '\0' || n < 0 || n > INT32_MAX) {
        return;
    }

    f = strtoul(failures, &end, 10);

    if (errno || *end != '\0') {
        return;
    }

    if (n == 0) {
        if (sft_auth_unban_source(source) == SFT_OK) {
            sft_log_error(SFT_LOG_NOTICE, sft_pgsql_bans.log, 0,
                          "shared bans: the ban of %s lifted", source);
        }

        return;
    }

    (void) sft_auth_ban_source(source, (time_t) n, f, sft_pgsql_bans.log);
}


/* connected: what the database holds, then what waited */

static void
sft_pgsql_bans_state(sft_uint_t up, void *data)
{
    sft_pgsql_query_t  *q;

    (void) data;

    if (!up) {
        return;
    }

    if (!sft_pgsql_bans.loading) {
        q = &sft_pgsql_bans.load;
        sft_memzero(q, sizeof(sft_pgsql_query_t));

        q->sql = "SELECT source, ban_failures, "
                 "ceil(extract(epoch FROM banned_until - now()))::bigint "
                 "FROM siftp_bans WHERE banned_until > now()";
        q->done = sft_pgsql_bans_loaded;

        if (sft_pgsql_query(q) == SFT_AGAIN) {
            sft_pgsql_bans.loading = 1;
        }
    }

    sft_pgsql_bans_send();
    sft_pgsql_bans_sweep(NULL);
}


/*
 * At each connect and every SFT_PGSQL_BANS_SWEEP_MSEC: the rows that
 * neither ban nor count failures any more are deleted, so an attack from
 * many addresses does not grow the table for ever.
 */

static void
sft_pgsql_bans_sweep(sft_event_t *ev)
{
    sft_pgsql_query_t  *q;

    if (ev != NULL) {
        ev->timedout = 0;
        sft_add_timer(ev, SFT_PGSQL_BANS_SWEEP_MSEC);
    }

    if (sft_pgsql_bans.sweeping) {
        return;
    }

    snprintf(sft_pgsql_bans.window, sizeof(sft_pgsql_bans.window), "%ld",
             (long) sft_min(sft_pgsql_bans.ucf->failure_window,
                            (time_t) INT32_MAX));

    q = &sft_pgsql_bans.sweep;
    sft_memzero(q, sizeof(sft_pgsql_query_t));
    q->sql = "DELETE FROM siftp_bans "
             "WHERE (banned_until IS NULL OR banned_until <= now()) "
             "AND window_start + make_interval(secs => $1::integer) "
             "<= now()";
    q->nparams = 1;
    q->params[0] = sft_pgsql_bans.window;
    q->done = sft_pgsql_bans_swept;

    if (sft_pgsql_query(q) == SFT_AGAIN) {
        sft_pgsql_bans.sweeping = 1;
    }
}


static void
sft_pgsql_bans_swept(sft_pgsql_query_t *q, PGresult *res)
{
    (void) q;

    sft_pgsql_bans.sweeping = 0;

    if (res != NULL && PQresultStatus(res) != PGRES_COMMAND_OK) {
        sft_log_error(SFT_LOG_ERR, sft_pgsql_bans.log, 0,
                      "shared bans: deleting the expired bans failed: %s",
                      PQresultErrorMessage(res));
    }
}
