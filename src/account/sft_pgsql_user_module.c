/*
 * sft_pgsql_user_module.c -- the PostgreSQL user store, "user_store
 * postgresql CONNINFO": a worker looks a user up by name on its one
 * connection (sft_pgsql.c), answers the logins waiting for it when the
 * rows come, and keeps the user until a notification on "siftp_users"
 * names it.  While the server cannot be reached, a kept user is served
 * as stale (only the verification cache may accept its password), and
 * an unknown one is refused at once.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_pgsql_user.h>


#define SFT_PGSQL_USER_BUCKETS   256


typedef struct sft_pgsql_user_s   sft_pgsql_user_t;
typedef struct sft_pgsql_fetch_s  sft_pgsql_fetch_t;

/* a kept user: a table of one, current while kept */
struct sft_pgsql_user_s {
    sft_pgsql_user_t      *next;
    sft_users_t           *table;
};

/* a lookup on the wire, and the logins waiting for it */
struct sft_pgsql_fetch_s {
    sft_pgsql_query_t      q;
    sft_pgsql_fetch_t     *next;
    sft_user_lookup_t     *waiting;
    sft_uint_t             changed;      /* notified while it ran */
    sft_str_t              name;
    u_char                 data[SFT_USER_NAME_MAX + 1];
};


typedef struct {
    sft_flag_t             unused;
} sft_pgsql_user_conf_t;


static void *sft_pgsql_user_create_conf(sft_cycle_t *cycle);
static char *sft_pgsql_user_init_conf(sft_cycle_t *cycle, void *conf);
static sft_int_t sft_pgsql_user_init_process(sft_cycle_t *cycle);
static void sft_pgsql_user_exit_process(sft_cycle_t *cycle);
static sft_int_t sft_pgsql_user_lookup(sft_user_lookup_t *lk);
static void sft_pgsql_user_cancel(sft_user_lookup_t *lk);
static sft_user_t *sft_pgsql_user_known(sft_str_t *name, sft_log_t *log);
static sft_pgsql_user_t **sft_pgsql_user_slot(sft_str_t *name);
static sft_pgsql_fetch_t *sft_pgsql_user_fetch(sft_str_t *name);
static void sft_pgsql_user_fetched(sft_pgsql_query_t *q, PGresult *res);
static sft_users_t *sft_pgsql_user_record(sft_pgsql_fetch_t *f,
    PGresult *res, sft_int_t *rc);
static void sft_pgsql_user_keep(sft_users_t *table);
static void sft_pgsql_user_forget(sft_str_t *name);
static void sft_pgsql_user_forget_all(void);
static void sft_pgsql_user_notify(sft_str_t *payload, void *data);
static void sft_pgsql_user_state(sft_uint_t up, void *data);


static sft_user_store_t  sft_pgsql_user_store = {
    sft_string("postgresql"),
    sft_pgsql_user_lookup,
    sft_pgsql_user_cancel,
    sft_pgsql_user_known,
    sft_pgsql_user_begin,
    sft_pgsql_user_commit,
    sft_pgsql_user_end
};


static sft_core_module_t  sft_pgsql_user_module_ctx = {
    sft_string("pgsql_user"),
    sft_pgsql_user_create_conf,
    sft_pgsql_user_init_conf
};


sft_module_t  sft_pgsql_user_module = {
    SFT_MODULE_V1,
    &sft_pgsql_user_module_ctx,            /* module context */
    NULL,                                  /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_pgsql_user_init_process,           /* init process */
    sft_pgsql_user_exit_process,           /* exit process */
    NULL,                                  /* exit master */
    NULL,                                  /* process exited */
    NULL,                                  /* processes changed */
    SFT_MODULE_V1_SPARE
};


static struct {
    sft_pgsql_user_t      *kept[SFT_PGSQL_USER_BUCKETS];
    sft_pgsql_fetch_t     *fetches;
    sft_pgsql_listener_t   listener;
    sft_log_t             *log;
    sft_uint_t             started;
} sft_pgsql_users;



/* "user_store postgresql ..." knows the store from here on */

static void *
sft_pgsql_user_create_conf(sft_cycle_t *cycle)
{
    sft_pgsql_user_conf_t  *pcf;

    pcf = sft_pcalloc(cycle->pool, sizeof(sft_pgsql_user_conf_t));
    if (pcf == NULL) {
        return NULL;
    }

    if (sft_user_store_register(cycle, &sft_pgsql_user_store) != SFT_OK) {
        return NULL;
    }

    return pcf;
}


/*
 * The connection string is checked when the configuration is: libpq's
 * own words for a bad one, and a warning for a host name, which libpq
 * would resolve blocking the worker at every connect.
 */

static char *
sft_pgsql_user_init_conf(sft_cycle_t *cycle, void *conf)
{
    char              *ci, *err;
    const char        *host, *hostaddr;
    sft_users_conf_t  *ucf;
    PQconninfoOption  *opts, *o;

    (void) conf;

    ucf = (sft_users_conf_t *) sft_get_conf(cycle->conf_ctx,
                                            sft_users_module);

    if (ucf->store != &sft_pgsql_user_store) {
        return SFT_CONF_OK;
    }

    ci = sft_pnalloc(cycle->pool, ucf->store_arg.len + 1);
    if (ci == NULL) {
        return SFT_CONF_ERROR;
    }

    sft_memcpy(ci, ucf->store_arg.data, ucf->store_arg.len);
    ci[ucf->store_arg.len] = '\0';

    err = NULL;
    opts = PQconninfoParse(ci, &err);

    if (opts == NULL) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "invalid \"user_store postgresql\" connection "
                      "string: %s", err ? err : "out of memory");
        PQfreemem(err);
        return SFT_CONF_ERROR;
    }

    host = NULL;
    hostaddr = NULL;

    for (o = opts; o->keyword; o++) {
        if (strcmp(o->keyword, "host") == 0) {
            host = o->val;

        } else if (strcmp(o->keyword, "hostaddr") == 0) {
            hostaddr = o->val;
        }
    }

    if (hostaddr == NULL && host && host[0] != '/'
        && strspn(host, "0123456789abcdefABCDEF:.,") != strlen(host))
    {
        sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                      "\"user_store postgresql\": host \"%s\" is a name, "
                      "which libpq resolves blocking the worker at every "
                      "connect; give its address, or \"hostaddr\"", host);
    }

    PQconninfoFree(opts);

    return SFT_CONF_OK;
}


sft_uint_t
sft_pgsql_user_configured(sft_cycle_t *cycle)
{
    sft_users_conf_t  *ucf;

    ucf = (sft_users_conf_t *) sft_get_conf(cycle->conf_ctx,
                                            sft_users_module);

    return ucf->store == &sft_pgsql_user_store;
}


static sft_int_t
sft_pgsql_user_init_process(sft_cycle_t *cycle)
{
    sft_users_conf_t  *ucf;

    ucf = (sft_users_conf_t *) sft_get_conf(cycle->conf_ctx,
                                            sft_users_module);

    if (ucf->store != &sft_pgsql_user_store) {
        return SFT_OK;
    }

    sft_memzero(&sft_pgsql_users.listener, sizeof(sft_pgsql_listener_t));
    sft_pgsql_users.listener.channel = SFT_PGSQL_USER_CHANNEL;
    sft_pgsql_users.listener.notify = sft_pgsql_user_notify;
    sft_pgsql_users.listener.state = sft_pgsql_user_state;
    sft_pgsql_listen(&sft_pgsql_users.listener);

    sft_pgsql_users.log = cycle->log;

    /* the modules listed before this one have added their listeners */

    if (sft_pgsql_start(&ucf->store_arg, cycle->log) != SFT_OK) {
        return SFT_ERROR;
    }

    sft_pgsql_users.started = 1;

    return SFT_OK;
}


static void
sft_pgsql_user_exit_process(sft_cycle_t *cycle)
{
    sft_pgsql_fetch_t  *f;

    (void) cycle;

    if (!sft_pgsql_users.started) {
        return;
    }

    sft_pgsql_stop();

    while ((f = sft_pgsql_users.fetches) != NULL) {
        sft_pgsql_users.fetches = f->next;
        sft_free(f);
    }

    sft_pgsql_user_forget_all();
    sft_pgsql_users.started = 0;
}


static sft_int_t
sft_pgsql_user_lookup(sft_user_lookup_t *lk)
{
    sft_pgsql_user_t   *e;
    sft_pgsql_fetch_t  *f;

    if (!sft_pgsql_users.started
        || sft_users_valid_name(&lk->name) != SFT_OK)
    {
        lk->rc = sft_pgsql_users.started ? SFT_DECLINED : SFT_ERROR;
        return lk->rc;
    }

    e = *sft_pgsql_user_slot(&lk->name);

    if (e) {
        lk->user = sft_user_acquire(e->table->users.elts);
        lk->stale = !sft_pgsql_up();
        lk->rc = SFT_OK;
        return SFT_OK;
    }

    f = sft_pgsql_user_fetch(&lk->name);

    if (f == NULL) {
        lk->rc = SFT_ERROR;
        return SFT_ERROR;
    }

    lk->next = f->waiting;
    f->waiting = lk;

    return SFT_AGAIN;
}


/* the fetch goes on: its answer is kept for the next login */

static void
sft_pgsql_user_cancel(sft_user_lookup_t *lk)
{
    sft_pgsql_fetch_t   *f;
    sft_user_lookup_t  **p;

    for (f = sft_pgsql_users.fetches; f; f = f->next) {
        for (p = &f->waiting; *p; p = &(*p)->next) {
            if (*p == lk) {
                *p = lk->next;
                lk->next = NULL;
                return;
            }
        }
    }
}


/*
 * Public keys and client certificates are checked at once: a user not
 * kept yet is fetched for the next attempt.
 */

static sft_user_t *
sft_pgsql_user_known(sft_str_t *name, sft_log_t *log)
{
    sft_pgsql_user_t  *e;

    (void) log;

    if (!sft_pgsql_users.started || sft_users_valid_name(name) != SFT_OK) {
        return NULL;
    }

    e = *sft_pgsql_user_slot(name);

    if (e) {
        return e->table->users.elts;
    }

    (void) sft_pgsql_user_fetch(name);

    return NULL;
}


/* where the user is kept, or would be: the slot of the list pointing at it */

static sft_pgsql_user_t **
sft_pgsql_user_slot(sft_str_t *name)
{
    size_t              i;
    uint32_t            h;
    sft_user_t         *u;
    sft_pgsql_user_t  **p;

    h = 2166136261u;

    for (i = 0; i < name->len; i++) {
        h = (h ^ name->data[i]) * 16777619u;
    }

    for (p = &sft_pgsql_users.kept[h % SFT_PGSQL_USER_BUCKETS]; *p;
         p = &(*p)->next)
    {
        u = (*p)->table->users.elts;

        if (u->name.len == name->len
            && sft_memcmp(u->name.data, name->data, name->len) == 0)
        {
            break;
        }
    }

    return p;
}


/* one query per name however many logins wait for it */

static sft_pgsql_fetch_t *
sft_pgsql_user_fetch(sft_str_t *name)
{
    sft_pgsql_fetch_t  *f;

    for (f = sft_pgsql_users.fetches; f; f = f->next) {
        if (f->name.len == name->len
            && sft_memcmp(f->name.data, name->data, name->len) == 0)
        {
            return f;
        }
    }

    f = sft_calloc(sizeof(sft_pgsql_fetch_t), sft_pgsql_users.log);
    if (f == NULL) {
        return NULL;
    }

    sft_memcpy(f->data, name->data, name->len);
    f->data[name->len] = '\0';
    f->name.data = f->data;
    f->name.len = name->len;

    f->q.sql = "SELECT name, key, path, value FROM siftp_user_settings "
               "WHERE name = $1 " SFT_PGSQL_USER_ORDER;
    f->q.nparams = 1;
    f->q.params[0] = (const char *) f->data;
    f->q.done = sft_pgsql_user_fetched;
    f->q.data = f;

    if (sft_pgsql_query(&f->q) != SFT_AGAIN) {
        sft_free(f);
        return NULL;
    }

    f->next = sft_pgsql_users.fetches;
    sft_pgsql_users.fetches = f;

    return f;
}


static void
sft_pgsql_user_fetched(sft_pgsql_query_t *q, PGresult *res)
{
    sft_int_t            rc;
    sft_users_t         *table;
    sft_pgsql_fetch_t   *f, **p;
    sft_user_lookup_t   *lk;

    f = q->data;

    for (p = &sft_pgsql_users.fetches; *p; p = &(*p)->next) {
        if (*p == f) {
            *p = f->next;
            break;
        }
    }

    table = sft_pgsql_user_record(f, res, &rc);

    if (table) {
        table->refs++;                 /* held while the logins are told */

        if (!f->changed) {
            sft_pgsql_user_keep(table);
        }
    }

    while ((lk = f->waiting) != NULL) {
        f->waiting = lk->next;
        lk->next = NULL;

        lk->rc = rc;
        lk->user = table ? sft_user_acquire(table->users.elts) : NULL;

        lk->handler(lk);
    }

    if (table) {
        table->refs--;
        sft_users_free(table);
    }

    sft_free(f);
}


/* the user of the rows; none: unknown; an invalid one is logged */

static sft_users_t *
sft_pgsql_user_record(sft_pgsql_fetch_t *f, PGresult *res, sft_int_t *rc)
{
    u_char        err[256];
    sft_users_t  *table;

    *rc = SFT_ERROR;

    if (res == NULL) {
        return NULL;                   /* the connection failed: logged */
    }

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        sft_log_error(SFT_LOG_ERR, sft_pgsql_users.log, 0,
                      "PostgreSQL user store: looking up \"%.*s\" "
                      "failed: %s", SFT_STR_FMT(&f->name),
                      PQresultErrorMessage(res));
        return NULL;
    }

    *rc = SFT_DECLINED;

    if (PQntuples(res) == 0) {
        return NULL;
    }

    table = sft_pgsql_user_table(res, err, sizeof(err), sft_pgsql_users.log);

    if (table == NULL || table->users.nelts != 1) {
        sft_log_error(SFT_LOG_ERR, sft_pgsql_users.log, 0,
                      "PostgreSQL user store: user \"%.*s\" is invalid: %s",
                      SFT_STR_FMT(&f->name),
                      table ? "not one user" : (char *) err);
        sft_users_free(table);
        return NULL;
    }

    *rc = SFT_OK;

    return table;
}


static void
sft_pgsql_user_keep(sft_users_t *table)
{
    sft_user_t         *u;
    sft_pgsql_user_t   *e, **p;

    u = table->users.elts;

    sft_pgsql_user_forget(&u->name);

    e = sft_alloc(sizeof(sft_pgsql_user_t), sft_pgsql_users.log);
    if (e == NULL) {
        return;
    }

    table->current = 1;
    e->table = table;

    p = sft_pgsql_user_slot(&u->name);
    e->next = NULL;
    *p = e;
}


static void
sft_pgsql_user_forget(sft_str_t *name)
{
    sft_pgsql_user_t   *e, **p;

    p = sft_pgsql_user_slot(name);
    e = *p;

    if (e == NULL) {
        return;
    }

    *p = e->next;

    e->table->current = 0;
    sft_users_free(e->table);
    sft_free(e);
}


static void
sft_pgsql_user_forget_all(void)
{
    sft_uint_t         i;
    sft_pgsql_user_t  *e;

    for (i = 0; i < SFT_PGSQL_USER_BUCKETS; i++) {
        while ((e = sft_pgsql_users.kept[i]) != NULL) {
            sft_pgsql_users.kept[i] = e->next;
            e->table->current = 0;
            sft_users_free(e->table);
            sft_free(e);
        }
    }
}


/* a user changed, on any node: the next login asks again */

static void
sft_pgsql_user_notify(sft_str_t *payload, void *data)
{
    sft_pgsql_fetch_t  *f;

    (void) data;

    sft_log_debug(sft_pgsql_users.log, "PostgreSQL user store: \"%.*s\" "
                  "changed", SFT_STR_FMT(payload));

    sft_pgsql_user_forget(payload);

    for (f = sft_pgsql_users.fetches; f; f = f->next) {
        if (f->name.len == payload->len
            && sft_memcmp(f->name.data, payload->data, payload->len) == 0)
        {
            f->changed = 1;
        }
    }
}


/* back after an outage: what changed meanwhile was not notified */

static void
sft_pgsql_user_state(sft_uint_t up, void *data)
{
    (void) data;

    if (up) {
        sft_pgsql_user_forget_all();
    }
}
