/*
 * sft_pgsql.h -- a worker's one connection to PostgreSQL, on the event
 * loop: libpq's asynchronous calls, queries sent one after another, the
 * schema's migrations and LISTEN after every connect, and reconnects with
 * a growing delay while the server cannot be reached.
 */

#ifndef _SFT_PGSQL_H_INCLUDED_
#define _SFT_PGSQL_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>
#include <libpq-fe.h>


#define SFT_PGSQL_MAX_PARAMS      17
#define SFT_PGSQL_CONNECT_MSEC    5000    /* a connect, then its setup */
#define SFT_PGSQL_QUERY_MSEC      10000   /* one query's answer */
#define SFT_PGSQL_RETRY_MIN_MSEC  250
#define SFT_PGSQL_RETRY_MAX_MSEC  2000


typedef struct sft_pgsql_query_s  sft_pgsql_query_t;

/* res is NULL when the connection failed; it is cleared after the call */
typedef void (*sft_pgsql_done_pt)(sft_pgsql_query_t *q, PGresult *res);

struct sft_pgsql_query_s {
    const char            *sql;       /* no params: may hold several
                                         statements */
    int                    nparams;
    const char            *params[SFT_PGSQL_MAX_PARAMS];
    sft_pgsql_done_pt      done;
    void                  *data;
    sft_pgsql_query_t     *next;
};


/* a migration: sql/pgsql/NNN_name.sql, compiled in by configure */
typedef struct {
    sft_uint_t             version;
    const char            *name;
    const char            *sql;
} sft_pgsql_migration_t;


typedef struct sft_pgsql_listener_s  sft_pgsql_listener_t;

/* a user of the connection: told its channel's notifications, and when
   the connection is ready (after every connect) or lost */
struct sft_pgsql_listener_s {
    const char            *channel;   /* LISTEN to it; NULL: none */
    void                 (*notify)(sft_str_t *payload, void *data);
    void                 (*state)(sft_uint_t up, void *data);
    void                  *data;
    sft_pgsql_listener_t  *next;
};


/* listeners are added before the first connect, in init_process */
void sft_pgsql_listen(sft_pgsql_listener_t *l);
/* the same, and tick called every msec by timer (sft_add_timer again) */
void sft_pgsql_listen_tick(sft_pgsql_listener_t *l, const char *channel,
    void (*notify)(sft_str_t *payload, void *data),
    void (*state)(sft_uint_t up, void *data), sft_event_t *timer,
    sft_event_handler_pt tick, sft_msec_t msec, sft_log_t *log);
sft_int_t sft_pgsql_start(sft_str_t *conninfo, sft_log_t *log);
void sft_pgsql_stop(void);
/* SFT_AGAIN: done() is called later; SFT_DECLINED: the server is down */
sft_int_t sft_pgsql_query(sft_pgsql_query_t *q);
sft_uint_t sft_pgsql_up(void);


extern sft_pgsql_migration_t  sft_pgsql_migrations[];


#endif /* _SFT_PGSQL_H_INCLUDED_ */
