/*
 * sft_pgsql.c -- a worker's one connection to PostgreSQL on the epoll
 * loop.  PQconnectStart()/PQconnectPoll() connect without blocking, the
 * socket is watched like any other, PQsendQuery*() and PQflush() send,
 * PQconsumeInput()/PQisBusy()/PQgetResult() collect the answer, and
 * PQnotifies() the notifications.  After every connect, before any query
 * of its users: the schema's missing migrations under an advisory lock,
 * then LISTEN.  A lost connection fails what was queued, and is made
 * again after a delay that doubles up to SFT_PGSQL_RETRY_MAX_MSEC.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event.h>
#include <sft_connection.h>
#include <sft_pgsql.h>


#define SFT_PGSQL_DOWN        0
#define SFT_PGSQL_CONNECTING  1
#define SFT_PGSQL_SETUP       2
#define SFT_PGSQL_READY       3

/* any number, the same on every node: migrations run one node at a time */
#define SFT_PGSQL_SCHEMA_LOCK  "7150117046"


static void sft_pgsql_connect(void);
static void sft_pgsql_notice(void *arg, const char *message);
static sft_uint_t sft_pgsql_same_socket(void);
static void sft_pgsql_unwatch(void);
static sft_int_t sft_pgsql_watch(sft_uint_t events);
static void sft_pgsql_event(sft_event_t *ev);
static void sft_pgsql_timer(sft_event_t *ev);
static void sft_pgsql_connect_poll(void);
static void sft_pgsql_send(sft_pgsql_query_t *q);
static void sft_pgsql_flush(void);
static void sft_pgsql_read(void);
static void sft_pgsql_next(void);
static void sft_pgsql_failed(const char *what, const char *why);
static void sft_pgsql_setup_version(sft_pgsql_query_t *q, PGresult *res);
static void sft_pgsql_migrate(void);
static void sft_pgsql_setup_migrated(sft_pgsql_query_t *q, PGresult *res);
static void sft_pgsql_setup_recorded(sft_pgsql_query_t *q, PGresult *res);
static void sft_pgsql_setup_ready(sft_pgsql_query_t *q, PGresult *res);
static sft_int_t sft_pgsql_setup_ok(PGresult *res, const char *what);
static void sft_pgsql_tell(sft_uint_t up);


static struct {
    char                  *conninfo;
    PGconn                *conn;
    sft_connection_t      *c;
    ino_t                  ino;           /* c's socket */
    sft_uint_t             state;
    sft_uint_t             was_up;        /* the failure is news */
    sft_pgsql_query_t     *head;          /* waiting to be sent */
    sft_pgsql_query_t    **tail;
    sft_pgsql_query_t     *current;       /* sent, being answered */
    PGresult              *result;        /* its answer so far */
    sft_event_t            timer;         /* retry, connect or answer */
    sft_msec_t             retry;
    sft_uint_t             version;       /* of the schema, in setup */
    sft_pgsql_migration_t *migration;     /* being applied */
    sft_pgsql_query_t      setup;
    char                   vbuf[24];
    char                   listen[256];
    sft_log_t             *log;
} sft_pgsql;


static sft_pgsql_listener_t  *sft_pgsql_listeners;


void
sft_pgsql_listen(sft_pgsql_listener_t *l)
{
    l->next = sft_pgsql_listeners;
    sft_pgsql_listeners = l;
}


void
sft_pgsql_listen_tick(sft_pgsql_listener_t *l, const char *channel,
    void (*notify)(sft_str_t *payload, void *data),
    void (*state)(sft_uint_t up, void *data), sft_event_t *timer,
    sft_event_handler_pt tick, sft_msec_t msec, sft_log_t *log)
{
    l->channel = channel;
    l->notify = notify;
    l->state = state;
    sft_pgsql_listen(l);

    timer->handler = tick;
    timer->log = log;
    sft_add_timer(timer, msec);
}


sft_int_t
sft_pgsql_start(sft_str_t *conninfo, sft_log_t *log)
{
    u_char                *p, *last;
    sft_pgsql_listener_t  *l;

    sft_memzero(&sft_pgsql, sizeof(sft_pgsql));

    sft_pgsql.log = log;
    sft_pgsql.tail = &sft_pgsql.head;
    sft_pgsql.retry = SFT_PGSQL_RETRY_MIN_MSEC;
    sft_pgsql.was_up = 1;

    /* the setup's last step: its channels */

    p = (u_char *) sft_pgsql.listen;
    last = p + sizeof(sft_pgsql.listen) - 1;
    p = sft_slprintf(p, last, "COMMIT");

    for (l = sft_pgsql_listeners; l; l = l->next) {
        if (l->channel) {
            p = sft_slprintf(p, last, "; LISTEN %s", l->channel);
        }
    }

    if (p == last) {
        sft_log_error(SFT_LOG_EMERG, log, 0, "PostgreSQL: too many channels");
        return SFT_ERROR;
    }

    *p = '\0';

    sft_pgsql.conninfo = sft_alloc(conninfo->len + 1, log);
    if (sft_pgsql.conninfo == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(sft_pgsql.conninfo, conninfo->data, conninfo->len);
    sft_pgsql.conninfo[conninfo->len] = '\0';

    sft_pgsql.timer.handler = sft_pgsql_timer;
    sft_pgsql.timer.log = log;

    sft_pgsql_connect();

    return SFT_OK;
}


/* at worker exit: what is queued belongs to owners that are gone too */

void
sft_pgsql_stop(void)
{
    sft_pgsql_listeners = NULL;

    if (sft_pgsql.conninfo == NULL) {
        return;
    }

    sft_del_timer(&sft_pgsql.timer);
    sft_pgsql_unwatch();

    if (sft_pgsql.result) {
        PQclear(sft_pgsql.result);
    }

    if (sft_pgsql.conn) {
        PQfinish(sft_pgsql.conn);
    }

    sft_free(sft_pgsql.conninfo);
    sft_memzero(&sft_pgsql, sizeof(sft_pgsql));
}


sft_uint_t
sft_pgsql_up(void)
{
    return sft_pgsql.state == SFT_PGSQL_READY;
}


sft_int_t
sft_pgsql_query(sft_pgsql_query_t *q)
{
    if (sft_pgsql.state == SFT_PGSQL_DOWN) {
        return SFT_DECLINED;
    }

    q->next = NULL;
    *sft_pgsql.tail = q;
    sft_pgsql.tail = &q->next;

    if (sft_pgsql.state == SFT_PGSQL_READY && sft_pgsql.current == NULL) {
        sft_pgsql_next();
    }

    return SFT_AGAIN;
}


static void
sft_pgsql_connect(void)
{
    sft_pgsql.conn = PQconnectStart(sft_pgsql.conninfo);

    if (sft_pgsql.conn == NULL) {
        sft_pgsql_failed("connect", "out of memory");
        return;
    }

    if (PQstatus(sft_pgsql.conn) == CONNECTION_BAD) {
        sft_pgsql_failed("connect", NULL);
        return;
    }

    (void) PQsetNoticeProcessor(sft_pgsql.conn, sft_pgsql_notice, NULL);

    sft_pgsql.state = SFT_PGSQL_CONNECTING;

    if (sft_pgsql_watch(SFT_EVENT_WRITE) != SFT_OK) {
        sft_pgsql_failed("connect", "the socket cannot be watched");
        return;
    }

    sft_add_timer(&sft_pgsql.timer, SFT_PGSQL_CONNECT_MSEC);
}


/* the server's notices ("already exists, skipping") go to the log */

static void
sft_pgsql_notice(void *arg, const char *message)
{
    size_t  len;

    (void) arg;

    len = strlen(message);

    while (len && message[len - 1] == '\n') {
        len--;
    }

    sft_log_error(SFT_LOG_INFO, sft_pgsql.log, 0,
                  "PostgreSQL user store: %.*s", (int) len, message);
}


/*
 * libpq closes a socket it gives up, and may open another (the next
 * address) under the same number while it connects: epoll forgot the old
 * one with its close, and the socket's inode tells them apart.
 */

static sft_uint_t
sft_pgsql_same_socket(void)
{
    int          fd;
    struct stat  st;

    fd = sft_pgsql.conn ? PQsocket(sft_pgsql.conn) : -1;

    return fd >= 0 && fd == sft_pgsql.c->fd && fstat(fd, &st) == 0
           && st.st_ino == sft_pgsql.ino;
}


static void
sft_pgsql_unwatch(void)
{
    sft_connection_t  *c;

    c = sft_pgsql.c;

    if (c == NULL) {
        return;
    }

    if (!sft_pgsql_same_socket()) {
        c->read->active = 0;
        c->write->active = 0;
    }

    sft_event_unwatch(c);
    sft_pgsql.c = NULL;
}


static sft_int_t
sft_pgsql_watch(sft_uint_t events)
{
    int                fd;
    struct stat        st;
    sft_connection_t  *c;

    if (sft_pgsql.c && !sft_pgsql_same_socket()) {
        sft_pgsql_unwatch();
    }

    c = sft_pgsql.c;

    if (c == NULL) {
        fd = PQsocket(sft_pgsql.conn);

        if (fd < 0 || fstat(fd, &st) == -1) {
            return SFT_ERROR;
        }

        c = sft_get_connection(fd, sft_pgsql.log);
        if (c == NULL) {
            return SFT_ERROR;
        }

        c->read->handler = sft_pgsql_event;
        c->write->handler = sft_pgsql_event;
        sft_pgsql.c = c;
        sft_pgsql.ino = st.st_ino;
    }

    return sft_event_watch(c, events);
}


static void
sft_pgsql_event(sft_event_t *ev)
{
    if (sft_pgsql.state == SFT_PGSQL_CONNECTING) {
        sft_pgsql_connect_poll();
        return;
    }

    if (ev->write) {
        sft_pgsql_flush();
        return;
    }

    sft_pgsql_read();
}


static void
sft_pgsql_timer(sft_event_t *ev)
{
    ev->timedout = 0;

    if (sft_pgsql.state == SFT_PGSQL_DOWN) {
        sft_pgsql_connect();
        return;
    }

    sft_pgsql_failed(sft_pgsql.state == SFT_PGSQL_CONNECTING
                     ? "connect" : "query", "timed out");
}


static void
sft_pgsql_connect_poll(void)
{
    switch (PQconnectPoll(sft_pgsql.conn)) {

    case PGRES_POLLING_READING:
        if (sft_pgsql_watch(SFT_EVENT_READ) != SFT_OK) {
            sft_pgsql_failed("connect", "the socket cannot be watched");
        }
        return;

    case PGRES_POLLING_WRITING:
        if (sft_pgsql_watch(SFT_EVENT_WRITE) != SFT_OK) {
            sft_pgsql_failed("connect", "the socket cannot be watched");
        }
        return;

    case PGRES_POLLING_OK:
        break;

    default:
        sft_pgsql_failed("connect", NULL);
        return;
    }

    if (PQsetnonblocking(sft_pgsql.conn, 1) != 0
        || sft_pgsql_watch(SFT_EVENT_READ) != SFT_OK)
    {
        sft_pgsql_failed("connect", NULL);
        return;
    }

    sft_pgsql.state = SFT_PGSQL_SETUP;

    /* the lock is the transaction's: the next node waits for this one */

    sft_memzero(&sft_pgsql.setup, sizeof(sft_pgsql_query_t));
    sft_pgsql.setup.sql =
        "BEGIN; "
        "SELECT pg_advisory_xact_lock(" SFT_PGSQL_SCHEMA_LOCK "); "
        "CREATE TABLE IF NOT EXISTS siftp_schema_version ("
        "version integer PRIMARY KEY, name text NOT NULL, "
        "applied timestamptz NOT NULL DEFAULT now()); "
        "SELECT coalesce(max(version), 0) FROM siftp_schema_version";
    sft_pgsql.setup.done = sft_pgsql_setup_version;

    sft_pgsql_send(&sft_pgsql.setup);
}


static void
sft_pgsql_send(sft_pgsql_query_t *q)
{
    int  rc;

    if (q->nparams) {
        rc = PQsendQueryParams(sft_pgsql.conn, q->sql, q->nparams, NULL,
                               q->params, NULL, NULL, 0);
    } else {
        rc = PQsendQuery(sft_pgsql.conn, q->sql);
    }

    if (!rc) {
        sft_pgsql_failed("query", NULL);
        return;
    }

    sft_pgsql.current = q;

    sft_add_timer(&sft_pgsql.timer, SFT_PGSQL_QUERY_MSEC);

    sft_pgsql_flush();
}


static void
sft_pgsql_flush(void)
{
    int  rc;

    rc = PQflush(sft_pgsql.conn);

    if (rc == -1) {
        sft_pgsql_failed("write", NULL);
        return;
    }

    if (sft_pgsql_watch(rc ? SFT_EVENT_READ|SFT_EVENT_WRITE : SFT_EVENT_READ)
        != SFT_OK)
    {
        sft_pgsql_failed("write", "the socket cannot be watched");
    }
}


static void
sft_pgsql_read(void)
{
    PGresult              *res;
    sft_str_t              payload;
    PGnotify              *n;
    sft_pgsql_query_t     *q;
    sft_pgsql_listener_t  *l;

    if (!PQconsumeInput(sft_pgsql.conn)) {
        sft_pgsql_failed("read", NULL);
        return;
    }

    while (sft_pgsql.conn && sft_pgsql.current
           && !PQisBusy(sft_pgsql.conn))
    {
        res = PQgetResult(sft_pgsql.conn);

        if (res != NULL) {
            /* several statements: the last answer, or the first error */

            if (sft_pgsql.result == NULL
                || PQresultStatus(sft_pgsql.result) != PGRES_FATAL_ERROR)
            {
                if (sft_pgsql.result) {
                    PQclear(sft_pgsql.result);
                }

                sft_pgsql.result = res;

            } else {
                PQclear(res);
            }

            continue;
        }

        q = sft_pgsql.current;
        res = sft_pgsql.result;

        sft_pgsql.current = NULL;
        sft_pgsql.result = NULL;
        sft_del_timer(&sft_pgsql.timer);

        q->done(q, res);

        if (res) {
            PQclear(res);
        }

        if (sft_pgsql.state == SFT_PGSQL_READY && sft_pgsql.current == NULL) {
            sft_pgsql_next();
        }
    }

    /* after the answers: parsing them may have queued some */

    while (sft_pgsql.conn && (n = PQnotifies(sft_pgsql.conn)) != NULL) {
        payload.data = (u_char *) n->extra;
        payload.len = strlen(n->extra);

        for (l = sft_pgsql_listeners; l; l = l->next) {
            if (l->notify && l->channel && strcmp(l->channel, n->relname) == 0)
            {
                l->notify(&payload, l->data);
            }
        }

        PQfreemem(n);
    }

    if (sft_pgsql.conn && PQstatus(sft_pgsql.conn) == CONNECTION_BAD) {
        sft_pgsql_failed("read", NULL);
    }
}


static void
sft_pgsql_next(void)
{
    sft_pgsql_query_t  *q;

    q = sft_pgsql.head;

    if (q == NULL) {
        return;
    }

    sft_pgsql.head = q->next;

    if (sft_pgsql.head == NULL) {
        sft_pgsql.tail = &sft_pgsql.head;
    }

    sft_pgsql_send(q);
}


/*
 * The connection is closed, whatever waited is failed, and a connect
 * follows after the delay.  The first failure after being up is an
 * error; the retries that follow are told at info.
 */

static void
sft_pgsql_failed(const char *what, const char *why)
{
    size_t              len;
    sft_uint_t          was_ready;
    sft_pgsql_query_t  *q, *next;

    if (why == NULL) {
        why = sft_pgsql.conn ? PQerrorMessage(sft_pgsql.conn) : "";
    }

    len = strlen(why);

    while (len && (why[len - 1] == '\n' || why[len - 1] == ' ')) {
        len--;
    }

    sft_log_error(sft_pgsql.was_up ? SFT_LOG_ERR : SFT_LOG_INFO,
                  sft_pgsql.log, 0,
                  "PostgreSQL user store: %s failed: %.*s, "
                  "retrying in %lu ms", what, (int) len, why,
                  (unsigned long) sft_pgsql.retry);

    was_ready = (sft_pgsql.state == SFT_PGSQL_READY);

    sft_pgsql.was_up = 0;
    sft_pgsql.state = SFT_PGSQL_DOWN;

    sft_pgsql_unwatch();

    if (sft_pgsql.result) {
        PQclear(sft_pgsql.result);
        sft_pgsql.result = NULL;
    }

    if (sft_pgsql.conn) {
        PQfinish(sft_pgsql.conn);
        sft_pgsql.conn = NULL;
    }

    sft_del_timer(&sft_pgsql.timer);
    sft_add_timer(&sft_pgsql.timer, sft_pgsql.retry);

    sft_pgsql.retry = sft_min(sft_pgsql.retry * 2, SFT_PGSQL_RETRY_MAX_MSEC);

    q = sft_pgsql.current;
    next = sft_pgsql.head;

    sft_pgsql.current = NULL;
    sft_pgsql.head = NULL;
    sft_pgsql.tail = &sft_pgsql.head;

    if (q && q != &sft_pgsql.setup) {
        q->done(q, NULL);
    }

    while (next) {
        q = next;
        next = q->next;
        q->done(q, NULL);
    }

    if (was_ready) {
        sft_pgsql_tell(0);
    }
}


/* the schema: its version, then each missing migration, then LISTEN */

static void
sft_pgsql_setup_version(sft_pgsql_query_t *q, PGresult *res)
{
    (void) q;

    if (sft_pgsql_setup_ok(res, "reading the schema version") != SFT_OK) {
        return;
    }

    if (PQntuples(res) != 1) {
        sft_pgsql_failed("reading the schema version", "no answer");
        return;
    }

    sft_pgsql.version = strtoul(PQgetvalue(res, 0, 0), NULL, 10);

    sft_pgsql_migrate();
}


static void
sft_pgsql_migrate(void)
{
    sft_pgsql_migration_t  *m;

    for (m = sft_pgsql_migrations; m->sql; m++) {
        if (m->version > sft_pgsql.version) {
            break;
        }
    }

    sft_memzero(&sft_pgsql.setup, sizeof(sft_pgsql_query_t));

    if (m->sql == NULL) {
        sft_pgsql.setup.sql = sft_pgsql.listen;
        sft_pgsql.setup.done = sft_pgsql_setup_ready;
        sft_pgsql_send(&sft_pgsql.setup);
        return;
    }

    sft_pgsql.migration = m;
    sft_pgsql.setup.sql = m->sql;
    sft_pgsql.setup.done = sft_pgsql_setup_migrated;

    sft_pgsql_send(&sft_pgsql.setup);
}


static void
sft_pgsql_setup_migrated(sft_pgsql_query_t *q, PGresult *res)
{
    sft_pgsql_migration_t  *m;

    m = sft_pgsql.migration;

    if (sft_pgsql_setup_ok(res, m->name) != SFT_OK) {
        return;
    }

    sft_slprintf((u_char *) sft_pgsql.vbuf,
                 (u_char *) sft_pgsql.vbuf + sizeof(sft_pgsql.vbuf) - 1,
                 "%lu", (unsigned long) m->version)[0] = '\0';

    q->sql = "INSERT INTO siftp_schema_version (version, name) "
             "VALUES ($1, $2)";
    q->nparams = 2;
    q->params[0] = sft_pgsql.vbuf;
    q->params[1] = m->name;
    q->done = sft_pgsql_setup_recorded;

    sft_pgsql_send(q);
}


static void
sft_pgsql_setup_recorded(sft_pgsql_query_t *q, PGresult *res)
{
    (void) q;

    if (sft_pgsql_setup_ok(res, "recording the schema version") != SFT_OK) {
        return;
    }

    sft_log_error(SFT_LOG_NOTICE, sft_pgsql.log, 0,
                  "PostgreSQL user store: schema migration \"%s\" applied",
                  sft_pgsql.migration->name);

    sft_pgsql.version = sft_pgsql.migration->version;

    sft_pgsql_migrate();
}


static void
sft_pgsql_setup_ready(sft_pgsql_query_t *q, PGresult *res)
{
    (void) q;

    if (sft_pgsql_setup_ok(res, "LISTEN") != SFT_OK) {
        return;
    }

    sft_log_error(sft_pgsql.was_up ? SFT_LOG_INFO : SFT_LOG_NOTICE,
                  sft_pgsql.log, 0,
                  "PostgreSQL user store: connected, schema version %lu",
                  (unsigned long) sft_pgsql.version);

    sft_pgsql.state = SFT_PGSQL_READY;
    sft_pgsql.was_up = 1;
    sft_pgsql.retry = SFT_PGSQL_RETRY_MIN_MSEC;

    sft_pgsql_tell(1);

    if (sft_pgsql.current == NULL) {
        sft_pgsql_next();
    }
}


/* a setup step failed: the transaction goes with the connection */

static sft_int_t
sft_pgsql_setup_ok(PGresult *res, const char *what)
{
    ExecStatusType  st;

    if (res == NULL) {
        return SFT_ERROR;
    }

    st = PQresultStatus(res);

    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        return SFT_OK;
    }

    sft_pgsql.was_up = 1;              /* a schema error is always news */
    sft_pgsql_failed(what, PQresultErrorMessage(res));

    return SFT_ERROR;
}


static void
sft_pgsql_tell(sft_uint_t up)
{
    sft_pgsql_listener_t  *l;

    for (l = sft_pgsql_listeners; l; l = l->next) {
        if (l->state) {
            l->state(up, l->data);
        }
    }
}
