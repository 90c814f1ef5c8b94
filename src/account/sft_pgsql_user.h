/*
 * sft_pgsql_user.h -- the PostgreSQL user store: its module
 * (sft_pgsql_user_module.c, lookups on the event loop) and the admin API's
 * side on a pool thread (sft_pgsql_user_admin.c, blocking libpq).
 */

#ifndef _SFT_PGSQL_USER_H_INCLUDED_
#define _SFT_PGSQL_USER_H_INCLUDED_


#include <sft_users.h>
#include <sft_user_store.h>
#include <sft_pgsql.h>
#include <sft_nodes.h>


#define SFT_PGSQL_USER_CHANNEL   "siftp_users"
#define SFT_PGSQL_USER_MAX_ROWS  1000000

/* a user's rows together, in one order: the same record, the same ETag */
#define SFT_PGSQL_USER_ORDER                                                 \
    "ORDER BY name COLLATE \"C\", key, path NULLS FIRST, value"

#define SFT_PGSQL_NODE_TIMEOUT   "10"   /* seconds without a heartbeat */

/* the fleet's settings, directives of sft_pgsql_bans_module */
typedef struct {
    sft_flag_t             shared_bans;
    sft_flag_t             shared_quota;
    sft_str_t              node;          /* node_name */
} sft_pgsql_fleet_conf_t;

extern sft_module_t  sft_pgsql_bans_module;

/* the nodes on the database, for sft_nodes_list() */
sft_int_t sft_pgsql_nodes_list(sft_nodes_req_t *req);

/* "user_store postgresql" is the cycle's store */
sft_uint_t sft_pgsql_user_configured(sft_cycle_t *cycle);


/* a result of (name, key, path, value) rows, grouped by name */
sft_users_t *sft_pgsql_user_table(PGresult *res, u_char *err, size_t errlen,
    sft_log_t *log);

void *sft_pgsql_user_begin(sft_str_t *conninfo, sft_uint_t write,
    sft_users_t **users, sft_log_t *log);
sft_int_t sft_pgsql_user_commit(void *txn, sft_users_t *users,
    sft_str_t *name, sft_log_t *log);
void sft_pgsql_user_end(void *txn);


#endif /* _SFT_PGSQL_USER_H_INCLUDED_ */
