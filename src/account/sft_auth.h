/*
 * sft_auth.h -- password verification for the protocols: argon2id on the
 * worker's thread pool, served fairly per source, a keyed verification
 * cache, per-source failure counters, bans and connection counts in one
 * shared memory zone.
 */

#ifndef _SFT_AUTH_H_INCLUDED_
#define _SFT_AUTH_H_INCLUDED_


#include <sft_users.h>


#define SFT_AUTH_OK                0
#define SFT_AUTH_BAD               1   /* wrong user or password */
#define SFT_AUTH_DISABLED          2   /* tell the client BAD */
#define SFT_AUTH_NOT_ALLOWED_FROM  3   /* tell the client BAD */
#define SFT_AUTH_BANNED            4
#define SFT_AUTH_BUSY              5   /* too many checks queued, from
                                          everyone or from this source */
#define SFT_AUTH_UNAVAILABLE       6   /* the user store cannot be reached
                                          and the cache does not know */

#define SFT_AUTH_MIN_M_COST        19456    /* KiB, OWASP minimum */
#define SFT_AUTH_MIN_T_COST        2
#define SFT_AUTH_M_COST            65536    /* the default cost */
#define SFT_AUTH_T_COST            3
#define SFT_AUTH_MAX_M_COST        4194304  /* KiB: 4 GiB */
#define SFT_AUTH_MAX_T_COST        64
#define SFT_AUTH_HASH_LEN          128      /* room for a PHC string */
#define SFT_AUTH_MAX_PASSWORD      1024

/* what a banned client is told, by every protocol */
#define SFT_AUTH_BANNED_REPLY                                                \
    "Too many login failures from your address, try again later."

#define SFT_AUTH_MAX_QUEUE         4096     /* per worker */
#define SFT_AUTH_MAX_QUEUE_PER_SOURCE  8    /* per worker and source */


typedef struct sft_auth_request_s  sft_auth_request_t;

typedef void (*sft_auth_handler_pt)(sft_auth_request_t *ar);

struct sft_auth_request_s {
    sft_str_t             user;       /* the caller's, kept until done */
    sft_str_t             password;   /* copied by sft_auth_password() */
    struct sockaddr      *sockaddr;
    sft_log_t            *log;

    sft_auth_handler_pt   handler;    /* called on SFT_AGAIN completion */
    void                 *data;

    sft_uint_t            result;     /* SFT_AUTH_* */
    sft_user_t           *account;    /* on OK: release with
                                         sft_user_release() */
    unsigned              cached:1;   /* answered by the cache */

    uint64_t              start_usec; /* private: the check's start */

    void                 *job;        /* private */
};


typedef struct {
    uint64_t              argon2_runs;
    uint64_t              cache_hits;
    uint64_t              bans;
    uint64_t              bans_active;    /* addresses banned now */
    uint32_t              running;
    uint32_t              max_running;
    uint64_t              generation;
} sft_auth_stats_t;


/* protocols */
sft_int_t sft_auth_password(sft_auth_request_t *ar);
void sft_auth_cancel(sft_auth_request_t *ar);
sft_msec_t sft_auth_failure_delay(sft_uint_t failures_on_this_connection);
sft_int_t sft_auth_connection_open(struct sockaddr *sa);
void sft_auth_connection_close(struct sockaddr *sa);
sft_uint_t sft_auth_banned(struct sockaddr *sa);
void sft_auth_failed(struct sockaddr *sa, sft_log_t *log);

/* the bans, for the admin API */
typedef struct {
    char                   address[INET6_ADDRSTRLEN + sizeof("/128")];
    sft_uint_t             failures;
    time_t                 until;          /* Unix time */
} sft_auth_ban_t;

sft_int_t sft_auth_ban_next(sft_uint_t *i, sft_auth_ban_t *ban);
sft_int_t sft_auth_unban(struct sockaddr *sa);

/*
 * Bans shared with other nodes (sft_pgsql_bans.c): this worker's failures,
 * bans and lifted bans are told to the share by the source's text
 * ("192.0.2.7", "2001:db8::/64"); the bans of other nodes are applied here.
 */
typedef struct {
    void                 (*failed)(const char *source, sft_log_t *log);
    void                 (*banned)(const char *source, sft_uint_t failures,
                                   sft_log_t *log);
    void                 (*unbanned)(const char *source);
} sft_auth_share_t;

void sft_auth_share(sft_auth_share_t *share);
sft_int_t sft_auth_ban_source(const char *source, time_t secs,
    sft_uint_t failures, sft_log_t *log);
sft_int_t sft_auth_unban_source(const char *source);

/* hashing at the configured cost (ucf NULL: the default), for the CLI
   and the API */
sft_int_t sft_auth_hash_password(sft_users_conf_t *ucf, u_char *pw,
    size_t len, char *out, size_t outlen);
sft_int_t sft_auth_verify_now(sft_str_t *phc, u_char *pw, size_t len);

/* setting up: the module, or a test */
size_t sft_auth_shm_size(void);
void sft_auth_shm_init(void *addr);
sft_int_t sft_auth_zone_add(sft_cycle_t *cycle, sft_users_conf_t *ucf);
void sft_auth_process_exited(sft_uint_t slot, pid_t pid);
sft_int_t sft_auth_init_process(sft_users_conf_t *ucf, void *shm,
    sft_thread_pool_t *tp, sft_log_t *log);
void sft_auth_exit_process(void);
void sft_auth_users_changed(sft_users_ident_t *ident, sft_log_t *log);
void sft_auth_clear_cache(void);
void sft_auth_get_stats(sft_auth_stats_t *st);

extern sft_msec_t  sft_auth_clock_offset;     /* tests move the clock */


#endif /* _SFT_AUTH_H_INCLUDED_ */
