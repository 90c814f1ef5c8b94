/*
 * sft_usage.h -- what each user uses now, shared by all workers: the
 * sessions open (for max_sessions) and the bytes and files stored (for
 * quotas), in one shared memory zone of per-user records.
 */

#ifndef _SFT_USAGE_H_INCLUDED_
#define _SFT_USAGE_H_INCLUDED_


#include <sft_users.h>


typedef struct sft_usage_s  sft_usage_t;


/* the master: the zone, sized once for the users it starts with */
sft_int_t sft_usage_zone_add(sft_cycle_t *cycle, sft_uint_t nusers);
void sft_usage_process_exited(sft_uint_t slot);

/* the record of a user: made if there is none (NULL: the table is full) */
sft_usage_t *sft_usage_record(sft_str_t *name, sft_log_t *log);
/* NULL if no session or recount made one yet */
sft_usage_t *sft_usage_lookup(sft_str_t *name);

/* a session of user name begins: SFT_DECLINED over max_sessions (0: none) */
sft_int_t sft_usage_session_open(sft_str_t *name, sft_uint_t max_sessions,
    sft_usage_t **usage, sft_log_t *log);
void sft_usage_session_close(sft_usage_t *usage);
sft_uint_t sft_usage_sessions(sft_usage_t *usage);

/*
 * Sessions on other nodes (sft_pgsql_nodes.c): told of every session
 * opened or closed here, it sets each user's count of the others, which
 * max_sessions counts with this node's.
 */
void sft_usage_share(void (*changed)(void));
sft_int_t sft_usage_next(sft_uint_t *i, sft_str_t *name,
    sft_uint_t *sessions);
uint32_t sft_usage_remote_begin(void);
void sft_usage_remote_set(uint32_t gen, sft_str_t *name, sft_uint_t sessions,
    sft_log_t *log);
void sft_usage_remote_end(uint32_t gen);

/*
 * The stored bytes and files: unknown until a scan of the user's home set
 * them (sft_usage_set, the first scan wins), then kept current by every
 * session's charges and credits.
 */
sft_uint_t sft_usage_known(sft_usage_t *usage);
void sft_usage_set(sft_usage_t *usage, off_t bytes, off_t files);
void sft_usage_get(sft_usage_t *usage, off_t *bytes, off_t *files);
/* shared with other nodes (sft_usage_lease.c): their word replaces ours */
void sft_usage_replace(sft_usage_t *usage, off_t bytes, off_t files);
void sft_usage_forget(sft_usage_t *usage);
void sft_usage_name(sft_usage_t *usage, sft_str_t *name);
/* an admin's recount, one at a time per user in all workers */
sft_int_t sft_usage_recount_begin(sft_usage_t *usage);
void sft_usage_recount_end(sft_usage_t *usage, sft_uint_t ok, off_t bytes,
    off_t files);
sft_int_t sft_usage_charge(sft_usage_t *usage, off_t max_bytes,
    off_t max_files, off_t bytes, off_t files);
void sft_usage_credit(sft_usage_t *usage, off_t bytes, off_t files);

/* a process's own zone, for tests */
sft_int_t sft_usage_init_memory(void *addr, size_t size);
size_t sft_usage_memory_size(sft_uint_t nusers);


#endif /* _SFT_USAGE_H_INCLUDED_ */
