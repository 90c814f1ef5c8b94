/*
 * sft_pgsql_user_admin.c -- the PostgreSQL user store's rows and records:
 * rows of siftp_user_settings read into users, and, for the admin API on
 * a pool thread (blocking libpq, never on the event loop), the table read
 * in a transaction, a writer's under an advisory lock, and one user
 * written back as rows; the tables' triggers tell every node.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_pgsql_user.h>


/* any number, the same on every node: one admin writer at a time */
#define SFT_PGSQL_USER_LOCK  "7150117047"

#define SFT_PGSQL_USER_NUM_LEN  sizeof("-9223372036854775808")


typedef struct {
    PGconn                *conn;
    sft_pool_t            *pool;         /* the parameters' copies */
    sft_log_t             *log;
} sft_pgsql_txn_t;


static sft_int_t sft_pgsql_user_insert(sft_pgsql_txn_t *txn,
    const char *sql, const char **p, sft_str_t *value);
static sft_int_t sft_pgsql_user_exec(sft_pgsql_txn_t *txn, const char *sql,
    int n, const char **params);
static const char *sft_pgsql_user_cstr(sft_pgsql_txn_t *txn, sft_str_t *s);
static const char *sft_pgsql_user_num(sft_pgsql_txn_t *txn, int64_t n);
static sft_int_t sft_pgsql_user_write(sft_pgsql_txn_t *txn, sft_user_t *u);


static sft_str_t  sft_pgsql_user_source = sft_string("PostgreSQL");


sft_users_t *
sft_pgsql_user_table(PGresult *res, u_char *err, size_t errlen,
    sft_log_t *log)
{
    int              i, n;
    sft_users_t     *table;
    sft_user_row_t  *rows;

    n = PQntuples(res);

    if (PQnfields(res) != 4 || n > SFT_PGSQL_USER_MAX_ROWS) {
        sft_slprintf(err, err + errlen - 1, "%d rows of %d columns", n,
                     PQnfields(res))[0] = '\0';
        return NULL;
    }

    rows = sft_alloc((n ? n : 1) * sizeof(sft_user_row_t), log);
    if (rows == NULL) {
        sft_slprintf(err, err + errlen - 1, "out of memory")[0] = '\0';
        return NULL;
    }

    for (i = 0; i < n; i++) {
        rows[i].name.data = (u_char *) PQgetvalue(res, i, 0);
        rows[i].name.len = PQgetlength(res, i, 0);
        rows[i].key.data = (u_char *) PQgetvalue(res, i, 1);
        rows[i].key.len = PQgetlength(res, i, 1);
        rows[i].path.data = (u_char *) PQgetvalue(res, i, 2);
        rows[i].path.len = PQgetisnull(res, i, 2) ? 0 : PQgetlength(res, i, 2);
        rows[i].value.data = (u_char *) PQgetvalue(res, i, 3);
        rows[i].value.len = PQgetlength(res, i, 3);
    }

    table = sft_users_from_rows(&sft_pgsql_user_source, rows, n, err, errlen,
                                log);

    sft_free(rows);

    return table;
}


void *
sft_pgsql_user_begin(sft_str_t *conninfo, sft_uint_t write,
    sft_users_t **users, sft_log_t *log)
{
    u_char            err[256];
    PGresult         *res;
    const char       *ci;
    sft_pgsql_txn_t  *txn;

    txn = sft_calloc(sizeof(sft_pgsql_txn_t), log);
    if (txn == NULL) {
        return NULL;
    }

    txn->log = log;

    txn->pool = sft_create_pool(SFT_DEFAULT_POOL_SIZE, log);
    if (txn->pool == NULL) {
        goto failed;
    }

    ci = sft_pgsql_user_cstr(txn, conninfo);
    if (ci == NULL) {
        goto failed;
    }

    txn->conn = PQconnectdb(ci);

    if (txn->conn == NULL || PQstatus(txn->conn) != CONNECTION_OK) {
        sft_log_error(SFT_LOG_ERR, log, 0, "PostgreSQL user store: "
                      "connect failed: %s",
                      txn->conn ? PQerrorMessage(txn->conn) : "no memory");
        goto failed;
    }

    if (sft_pgsql_user_exec(txn, write
                            ? "BEGIN; SELECT pg_advisory_xact_lock("
                              SFT_PGSQL_USER_LOCK ")"
                            : "BEGIN ISOLATION LEVEL REPEATABLE READ "
                              "READ ONLY", 0, NULL)
        != SFT_OK)
    {
        goto failed;
    }

    res = PQexec(txn->conn, "SELECT name, key, path, value "
                 "FROM siftp_user_settings " SFT_PGSQL_USER_ORDER);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        sft_log_error(SFT_LOG_ERR, log, 0, "PostgreSQL user store: reading "
                      "the users failed: %s", PQresultErrorMessage(res));
        PQclear(res);
        goto failed;
    }

    *users = sft_pgsql_user_table(res, err, sizeof(err), log);

    PQclear(res);

    if (*users == NULL) {
        sft_log_error(SFT_LOG_ERR, log, 0, "PostgreSQL user store: an "
                      "invalid user: %s", err);
        goto failed;
    }

    return txn;

failed:

    sft_pgsql_user_end(txn);

    return NULL;
}


sft_int_t
sft_pgsql_user_commit(void *data, sft_users_t *users, sft_str_t *name,
    sft_log_t *log)
{
    const char       *params[1];
    sft_user_t       *u;
    sft_pgsql_txn_t  *txn = data;

    (void) log;

    params[0] = sft_pgsql_user_cstr(txn, name);
    if (params[0] == NULL) {
        return SFT_ERROR;
    }

    /* the rules, networks and keys go with it (ON DELETE CASCADE) */

    if (sft_pgsql_user_exec(txn, "DELETE FROM siftp_users WHERE name = $1",
                            1, params)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    u = sft_users_find(users, name);

    if (u && sft_pgsql_user_write(txn, u) != SFT_OK) {
        return SFT_ERROR;
    }

    return sft_pgsql_user_exec(txn, "COMMIT", 0, NULL);
}


void
sft_pgsql_user_end(void *data)
{
    sft_pgsql_txn_t  *txn = data;

    if (txn->conn) {
        PQfinish(txn->conn);            /* rolls back what is not done */
    }

    if (txn->pool) {
        sft_destroy_pool(txn->pool);
    }

    sft_free(txn);
}


static sft_int_t
sft_pgsql_user_write(sft_pgsql_txn_t *txn, sft_user_t *u)
{
    u_char            perms[128];
    const char       *p[10];
    sft_str_t        *key;
    sft_uint_t        i;
    sft_user_rule_t  *r;
    sft_user_cidr_t  *cidr;

    p[0] = sft_pgsql_user_cstr(txn, &u->name);
    p[1] = sft_pgsql_user_cstr(txn, &u->password);
    p[2] = sft_pgsql_user_cstr(txn, &u->home);
    p[3] = sft_pgsql_user_cstr(txn, &u->storage);
    p[4] = sft_pgsql_user_num(txn, u->quota_bytes);
    p[5] = sft_pgsql_user_num(txn, u->quota_files);
    p[6] = sft_pgsql_user_num(txn, u->max_sessions);
    p[7] = sft_pgsql_user_num(txn, u->upload_rate);
    p[8] = sft_pgsql_user_num(txn, u->download_rate);
    p[9] = u->disabled ? "yes" : "no";

    for (i = 0; i < 9; i++) {
        if (p[i] == NULL) {
            return SFT_ERROR;
        }
    }

    if (sft_pgsql_user_exec(txn, "INSERT INTO siftp_users (name, password, "
                            "home, storage, quota_bytes, quota_files, "
                            "max_sessions, upload_rate, download_rate, "
                            "disabled) VALUES ($1, $2, $3, $4, $5, $6, $7, "
                            "$8, $9, $10)", 10, p)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    r = u->rules.elts;

    for (i = 0; i < u->rules.nelts; i++) {
        if (r[i].perms == -1 && r[i].deny == NULL && r[i].hide == NULL) {
            continue;
        }

        p[1] = sft_pgsql_user_cstr(txn, &r[i].path);
        p[2] = NULL;
        p[3] = r[i].deny ? sft_pgsql_user_cstr(txn, &r[i].deny->source)
                         : NULL;
        p[4] = r[i].hide ? sft_pgsql_user_cstr(txn, &r[i].hide->source)
                         : NULL;

        if (r[i].perms != -1) {
            *sft_perms_format(perms, perms + sizeof(perms) - 1, r[i].perms)
                = '\0';
            p[2] = (const char *) perms;
        }

        if (p[1] == NULL || (r[i].deny && p[3] == NULL)
            || (r[i].hide && p[4] == NULL)
            || sft_pgsql_user_exec(txn, "INSERT INTO siftp_user_rules (name, "
                                   "path, perms, deny, hide) VALUES ($1, $2, "
                                   "$3, $4, $5)", 5, p)
               != SFT_OK)
        {
            return SFT_ERROR;
        }
    }

    cidr = u->allow_from.elts;

    for (i = 0; i < u->allow_from.nelts; i++) {
        if (sft_pgsql_user_insert(txn, "INSERT INTO siftp_user_networks "
                                  "(name, network) VALUES ($1, $2) "
                                  "ON CONFLICT DO NOTHING", p, &cidr[i].text)
            != SFT_OK)
        {
            return SFT_ERROR;
        }
    }

    key = u->ssh_keys.elts;

    for (i = 0; i < u->ssh_keys.nelts; i++) {
        if (sft_pgsql_user_insert(txn, "INSERT INTO siftp_user_keys "
                                  "(name, ssh_key) VALUES ($1, $2) "
                                  "ON CONFLICT DO NOTHING", p, &key[i])
            != SFT_OK)
        {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


/* a row of (the user's name in p[0], value) */

static sft_int_t
sft_pgsql_user_insert(sft_pgsql_txn_t *txn, const char *sql, const char **p,
    sft_str_t *value)
{
    p[1] = sft_pgsql_user_cstr(txn, value);

    if (p[1] == NULL) {
        return SFT_ERROR;
    }

    return sft_pgsql_user_exec(txn, sql, 2, p);
}


static sft_int_t
sft_pgsql_user_exec(sft_pgsql_txn_t *txn, const char *sql, int n,
    const char **params)
{
    PGresult        *res;
    ExecStatusType   st;

    if (n) {
        res = PQexecParams(txn->conn, sql, n, NULL, params, NULL, NULL, 0);
    } else {
        res = PQexec(txn->conn, sql);
    }

    st = PQresultStatus(res);

    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        sft_log_error(SFT_LOG_ERR, txn->log, 0, "PostgreSQL user store: "
                      "\"%.40s\" failed: %s", sql,
                      res ? PQresultErrorMessage(res)
                          : PQerrorMessage(txn->conn));
        PQclear(res);
        return SFT_ERROR;
    }

    PQclear(res);

    return SFT_OK;
}


/* libpq takes parameters as C strings */

static const char *
sft_pgsql_user_cstr(sft_pgsql_txn_t *txn, sft_str_t *s)
{
    u_char  *p;

    if (s->len && memchr(s->data, '\0', s->len) != NULL) {
        return NULL;
    }

    p = sft_pnalloc(txn->pool, s->len + 1);
    if (p == NULL) {
        return NULL;
    }

    if (s->len) {
        sft_memcpy(p, s->data, s->len);
    }

    p[s->len] = '\0';

    return (const char *) p;
}


static const char *
sft_pgsql_user_num(sft_pgsql_txn_t *txn, int64_t n)
{
    u_char  *p;

    p = sft_pnalloc(txn->pool, SFT_PGSQL_USER_NUM_LEN);
    if (p == NULL) {
        return NULL;
    }

    *sft_slprintf(p, p + SFT_PGSQL_USER_NUM_LEN, "%lld", (long long) n)
        = '\0';

    return (const char *) p;
}
