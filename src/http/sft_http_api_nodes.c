/*
 * sft_http_api_nodes.c -- /api/v1/nodes: every node that serves the same
 * users, from the fleet store's registry (PostgreSQL), with each node's
 * heartbeat and its sessions per user; the same answer on any node.
 * Without a fleet store the list is this node alone, from shared memory.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api.h>
#include <sft_usage.h>
#include <sft_nodes.h>


#define SFT_HTTP_NODES  "/api/v1/nodes"


static sft_int_t sft_http_api_nodes(sft_http_request_t *r);
static void sft_http_api_nodes_done(sft_nodes_req_t *req);


const sft_http_api_route_t  sft_http_api_nodes_routes[] = {
    sft_http_api_route(SFT_HTTP_NODES, SFT_HTTP_GET, sft_http_api_nodes),
    sft_http_api_null_route
};


static json_t *
sft_http_api_node_json(sft_node_t *node)
{
    json_t           *o, *a, *u;
    sft_uint_t        i;
    sft_node_user_t  *nu;

    a = json_array();
    if (a == NULL) {
        return NULL;
    }

    nu = node->users.elts;

    for (i = 0; i < node->users.nelts; i++) {
        u = json_pack("{s:s%, s:I}", "name", nu[i].name.data,
                      nu[i].name.len, "sessions", (json_int_t) nu[i].sessions);

        if (u == NULL || json_array_append_new(a, u) != 0) {
            json_decref(a);
            return NULL;
        }
    }

    o = json_pack("{s:s%, s:o, s:I, s:I, s:I, s:b, s:b, s:I, s:o}",
                  "name", node->name.data, node->name.len,
                  "address", node->address.len
                             ? json_stringn((char *) node->address.data,
                                            node->address.len)
                             : json_null(),
                  "master_pid", (json_int_t) node->master_pid,
                  "started", (json_int_t) node->started,
                  "heartbeat_age_ms", (json_int_t) node->beat_age,
                  "alive", (int) node->alive,
                  "self", (int) node->self,
                  "sessions", (json_int_t) node->sessions,
                  "users", a);

    return o;
}


static sft_int_t
sft_http_api_nodes_answer(sft_http_request_t *r, sft_array_t *nodes,
    sft_uint_t shared, sft_uint_t truncated)
{
    json_t      *o, *a, *n;
    sft_uint_t   i;
    sft_node_t  *node;

    a = json_array();
    if (a == NULL) {
        return SFT_ERROR;
    }

    node = nodes->elts;

    for (i = 0; i < nodes->nelts; i++) {
        n = sft_http_api_node_json(&node[i]);

        if (n == NULL || json_array_append_new(a, n) != 0) {
            json_decref(a);
            return SFT_ERROR;
        }
    }

    o = json_pack("{s:b, s:b, s:o}", "shared", (int) shared,
                  "truncated", (int) truncated, "nodes", a);
    if (o == NULL) {
        return SFT_ERROR;
    }

    return sft_http_api_send_json(r, 200, o);
}


/* no fleet store: this node, its sessions from the shared usage zone */

static sft_int_t
sft_http_api_nodes_self(sft_http_request_t *r)
{
    char              host[256];
    sft_str_t         name;
    sft_uint_t        i, n;
    sft_node_t       *node;
    sft_array_t      *nodes;
    sft_node_user_t  *u;

    nodes = sft_array_create(r->pool, 1, sizeof(sft_node_t));
    if (nodes == NULL) {
        return SFT_ERROR;
    }

    node = sft_array_push(nodes);
    if (node == NULL) {
        return SFT_ERROR;
    }

    sft_memzero(node, sizeof(sft_node_t));

    if (gethostname(host, sizeof(host) - 1) == -1) {
        sft_memcpy(host, "unknown", sizeof("unknown"));
    }

    host[sizeof(host) - 1] = '\0';
    node->name.len = strlen(host);
    node->name.data = sft_pnalloc(r->pool, node->name.len);

    if (node->name.data == NULL
        || sft_array_init(&node->users, r->pool, 4, sizeof(sft_node_user_t))
           != SFT_OK)
    {
        return SFT_ERROR;
    }

    sft_memcpy(node->name.data, host, node->name.len);
    node->master_pid = getppid();
    node->started = sft_stats ? sft_stats->started : 0;
    node->alive = 1;
    node->self = 1;

    for (i = 0; sft_usage_next(&i, &name, &n) == SFT_OK; /* void */ ) {
        u = sft_array_push(&node->users);
        if (u == NULL) {
            return SFT_ERROR;
        }

        u->name = name;
        u->sessions = n;
        node->sessions += n;
    }

    return sft_http_api_nodes_answer(r, nodes, 0, 0);
}


static sft_int_t
sft_http_api_nodes(sft_http_request_t *r)
{
    sft_int_t         rc;
    sft_nodes_req_t  *req;

    if (r->args.len) {
        return sft_http_api_error(r, 400, NULL, "no arguments are taken");
    }

    req = sft_pcalloc(r->pool, sizeof(sft_nodes_req_t));
    if (req == NULL) {
        return SFT_ERROR;
    }

    req->pool = r->pool;
    req->log = r->connection->log;
    req->handler = sft_http_api_nodes_done;
    req->data = r;

    rc = sft_nodes_list(req);

    switch (rc) {

    case SFT_AGAIN:
        return SFT_AGAIN;

    case SFT_DECLINED:
        return sft_http_api_nodes_self(r);

    default:
        return sft_http_api_error(r, 503, NULL,
                                  "the user store cannot be reached");
    }
}


static void
sft_http_api_nodes_done(sft_nodes_req_t *req)
{
    sft_http_request_t  *r = req->data;

    if (req->rc != SFT_OK
        || sft_http_api_nodes_answer(r, req->nodes, 1, req->truncated)
           != SFT_OK)
    {
        (void) sft_http_api_error(r, 503, NULL,
                                  "the user store cannot be reached");
    }

    sft_http_resume(r);
}
