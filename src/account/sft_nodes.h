/*
 * sft_nodes.h -- the nodes that serve the same users, and the sessions
 * each holds per user, as a fleet store knows them (the PostgreSQL user
 * store's node registry).  The admin API lists them; without a fleet
 * store a node knows only itself.
 */

#ifndef _SFT_NODES_H_INCLUDED_
#define _SFT_NODES_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>


typedef struct {
    sft_str_t              name;
    sft_uint_t             sessions;
} sft_node_user_t;


typedef struct {
    sft_str_t              name;
    sft_str_t              address;      /* as the store saw it; 0: none */
    sft_int_t              master_pid;
    time_t                 started;
    sft_msec_t             beat_age;     /* since its last heartbeat */
    sft_uint_t             sessions;     /* of all its users */
    sft_array_t            users;        /* sft_node_user_t, by name */
    unsigned               alive:1;      /* counted by max_sessions */
    unsigned               self:1;       /* this node */
} sft_node_t;


typedef struct sft_nodes_req_s  sft_nodes_req_t;

typedef void (*sft_nodes_pt)(sft_nodes_req_t *req);

/* the caller keeps req and pool until the handler ran */
struct sft_nodes_req_s {
    sft_pool_t            *pool;         /* of the answer */
    sft_log_t             *log;
    sft_nodes_pt           handler;      /* on the loop, after SFT_AGAIN */
    void                  *data;

    sft_int_t              rc;           /* SFT_OK, or SFT_ERROR: the
                                            store cannot be asked now */
    sft_array_t           *nodes;        /* sft_node_t, by name */
    unsigned               truncated:1;  /* more users than listed */

    void                  *ctx;          /* the store's */
};


/* a fleet store, from its init_process (NULL at its exit) */
void sft_nodes_lister(sft_int_t (*list)(sft_nodes_req_t *req));

/* SFT_DECLINED: no fleet store; SFT_AGAIN; SFT_ERROR */
sft_int_t sft_nodes_list(sft_nodes_req_t *req);


#endif /* _SFT_NODES_H_INCLUDED_ */
