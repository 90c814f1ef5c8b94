/*
 * sft_pgsql_nodes_list.c -- the nodes of one PostgreSQL user store as the
 * registry holds them (sql/pgsql/003_nodes.sql): each node with its
 * heartbeat, whether max_sessions still counts it, and its sessions per
 * user; one query on the worker's connection, answered on the loop.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_pgsql_user.h>


#define SFT_PGSQL_NODES_LIST_MAX  10000      /* user rows in one answer */
#define SFT_PGSQL_NODES_LIST_ASK  "10001"    /* one more: were there more */


static void sft_pgsql_nodes_listed(sft_pgsql_query_t *q, PGresult *res);
static sft_int_t sft_pgsql_nodes_rows(sft_nodes_req_t *req, PGresult *res);


sft_int_t
sft_pgsql_nodes_list(sft_nodes_req_t *req)
{
    char                    *node;
    sft_pgsql_query_t       *q;
    sft_pgsql_fleet_conf_t  *fcf;

    fcf = (sft_pgsql_fleet_conf_t *) sft_get_conf(
              ((sft_cycle_t *) sft_cycle)->conf_ctx, sft_pgsql_bans_module);

    q = sft_pcalloc(req->pool, sizeof(sft_pgsql_query_t));
    if (q == NULL) {
        return SFT_ERROR;
    }

    node = sft_pnalloc(req->pool, fcf->node.len + 1);
    if (node == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(node, fcf->node.data, fcf->node.len);
    node[fcf->node.len] = '\0';

    q->sql = "SELECT n.name, coalesce(n.address, ''), n.master_pid, "
             "extract(epoch FROM n.started)::bigint, "
             "greatest(0, (extract(epoch FROM now() - n.heartbeat) "
             "* 1000)::bigint), "
             "n.heartbeat > now() - interval '" SFT_PGSQL_NODE_TIMEOUT
             " seconds', n.name = $1, s.name, s.sessions "
             "FROM siftp_nodes n LEFT JOIN siftp_node_sessions s "
             "ON s.node = n.name "
             "ORDER BY n.name COLLATE \"C\", s.name COLLATE \"C\" "
             "LIMIT $2";
    q->nparams = 2;
    q->params[0] = node;
    q->params[1] = SFT_PGSQL_NODES_LIST_ASK;
    q->done = sft_pgsql_nodes_listed;
    q->data = req;

    req->ctx = q;

    return sft_pgsql_query(q) == SFT_AGAIN ? SFT_AGAIN : SFT_ERROR;
}


static void
sft_pgsql_nodes_listed(sft_pgsql_query_t *q, PGresult *res)
{
    sft_nodes_req_t  *req = q->data;

    req->rc = SFT_ERROR;

    if (res == NULL) {
        sft_log_error(SFT_LOG_ERR, req->log, 0,
                      "nodes: the database was lost while listing them");

    } else if (PQresultStatus(res) != PGRES_TUPLES_OK
               || PQnfields(res) != 9)
    {
        sft_log_error(SFT_LOG_ERR, req->log, 0,
                      "nodes: listing them failed: %s",
                      PQresultErrorMessage(res));

    } else {
        req->rc = sft_pgsql_nodes_rows(req, res);
    }

    req->handler(req);
}


static sft_int_t
sft_pgsql_str(sft_pool_t *pool, sft_str_t *s, PGresult *res, int row,
    int col)
{
    s->len = PQgetlength(res, row, col);
    s->data = sft_pnalloc(pool, s->len + 1);

    if (s->data == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(s->data, PQgetvalue(res, row, col), s->len + 1);

    return SFT_OK;
}


/* the rows are a node's, then its users', by name: one node per name */

static sft_int_t
sft_pgsql_nodes_rows(sft_nodes_req_t *req, PGresult *res)
{
    int               i, n;
    char             *v;
    sft_node_t       *node;
    sft_node_user_t  *u;

    req->nodes = sft_array_create(req->pool, 4, sizeof(sft_node_t));
    if (req->nodes == NULL) {
        return SFT_ERROR;
    }

    n = PQntuples(res);

    if (n > SFT_PGSQL_NODES_LIST_MAX) {
        n = SFT_PGSQL_NODES_LIST_MAX;
        req->truncated = 1;
    }

    node = NULL;

    for (i = 0; i < n; i++) {
        v = PQgetvalue(res, i, 0);

        if (node == NULL || node->name.len != (size_t) PQgetlength(res, i, 0)
            || sft_memcmp(node->name.data, v, node->name.len) != 0)
        {
            node = sft_array_push(req->nodes);
            if (node == NULL) {
                return SFT_ERROR;
            }

            sft_memzero(node, sizeof(sft_node_t));

            if (sft_pgsql_str(req->pool, &node->name, res, i, 0) != SFT_OK
                || sft_pgsql_str(req->pool, &node->address, res, i, 1)
                   != SFT_OK
                || sft_array_init(&node->users, req->pool, 4,
                                  sizeof(sft_node_user_t)) != SFT_OK)
            {
                return SFT_ERROR;
            }

            node->master_pid = strtol(PQgetvalue(res, i, 2), NULL, 10);
            node->started = (time_t) strtoll(PQgetvalue(res, i, 3), NULL,
                                             10);
            node->beat_age = strtoll(PQgetvalue(res, i, 4), NULL, 10);
            node->alive = PQgetvalue(res, i, 5)[0] == 't';
            node->self = PQgetvalue(res, i, 6)[0] == 't';
        }

        if (PQgetisnull(res, i, 7)) {
            continue;                   /* a node without sessions */
        }

        u = sft_array_push(&node->users);
        if (u == NULL
            || sft_pgsql_str(req->pool, &u->name, res, i, 7) != SFT_OK)
        {
            return SFT_ERROR;
        }

        u->sessions = strtoul(PQgetvalue(res, i, 8), NULL, 10);
        node->sessions += u->sessions;
    }

    return SFT_OK;
}
