/*
 * sft_auth.c -- password verification: argon2id on the worker's "default"
 * thread pool under a server-wide cap that busy workers share, checks
 * waiting their turn fairly per source (sft_auth_queue.c), the keyed
 * BLAKE2b verification cache, per-source failure counters, bans and
 * connection counts, all in the "sft_auth" shared memory zone the master
 * creates.
 *
 * A source is an IPv4 address (an IPv4-mapped IPv6 address counts as its
 * IPv4 address) or an IPv6 prefix of login_ipv6_prefix bits: one host
 * usually holds a whole /64, and would get a fresh budget per address.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_users.h>
#include <sft_user_store.h>
#include <sft_auth.h>
#include <sft_auth_queue.h>
#include <sft_auth_stats.h>
#include <sft_asm.h>
#include <sched.h>
#include <argon2.h>
#include <sodium.h>


#define SFT_AUTH_CACHE_SLOTS   4096
#define SFT_AUTH_CACHE_PROBE   4
#define SFT_AUTH_ADDR_SLOTS    8192
#define SFT_AUTH_ADDR_PROBE    32
#define SFT_AUTH_RETRY_MSEC    10

#define SFT_AUTH_REAL          0
#define SFT_AUTH_UNKNOWN       1
#define SFT_AUTH_NO_PASSWORD   2
#define SFT_AUTH_WEAK          3


typedef struct {
    u_char           digest[32];
    uint64_t         gen;
    int64_t          expires;
} sft_auth_cache_slot_t;


typedef struct {
    uint32_t         family;            /* 0: never used */
    uint32_t         failures;
    u_char           addr[16];
    int64_t          window_start;
    int64_t          banned_until;
    uint32_t         conns;
    uint32_t         ban_failures;      /* the failures that banned it */
} sft_auth_addr_slot_t;


/* the zone: offsets and numbers only, no pointers */
typedef struct {
    uint32_t               lock;           /* the holder's pid, or 0 */
    uint32_t               running;        /* slots taken by workers */
    uint32_t               held[SFT_MAX_PROCESSES];  /* running, per worker */
    uint32_t               wanting[SFT_MAX_PROCESSES];  /* checks waiting */
    uint32_t               in_argon2;      /* threads inside argon2 */
    uint32_t               max_in_argon2;
    uint64_t               gen;
    uint64_t               argon2_runs;
    uint64_t               cache_hits;
    uint64_t               bans;
    sft_users_ident_t      ident;
    u_char                 key[crypto_generichash_KEYBYTES];
    u_char                 sipkey[crypto_shorthash_KEYBYTES];
    sft_auth_cache_slot_t  cache[SFT_AUTH_CACHE_SLOTS];
    sft_auth_addr_slot_t   addr[SFT_AUTH_ADDR_SLOTS];
} sft_auth_shm_t;


typedef struct sft_auth_job_s  sft_auth_job_t;

struct sft_auth_job_s {
    sft_thread_task_t      task;
    sft_auth_qnode_t       node;          /* source set while queued */
    sft_auth_job_t        *refused_next;  /* in sft_auth.refused */
    sft_auth_request_t    *ar;            /* NULL once cancelled */
    sft_user_lookup_t      lookup;        /* the user, from the store */
    sft_uint_t             looking;       /* the lookup is pending */
    sft_user_t            *user;          /* acquired; NULL if unknown */
    sft_uint_t             reason;
    int                    rc;
    u_char                 digest[32];
    size_t                 len;
    char                   hash[SFT_AUTH_HASH_LEN + 1];
    u_char                 password[SFT_AUTH_MAX_PASSWORD];
};


/* a source: the address, or its IPv6 prefix, and how it is logged */
typedef struct {
    uint32_t               family;
    u_char                 addr[16];
    char                   text[INET6_ADDRSTRLEN + sizeof("/128")];
    sft_uint_t             exempt;        /* login_ban_exempt */
} sft_auth_addr_t;


static struct {
    sft_auth_shm_t        *shm;
    sft_users_conf_t      *conf;
    sft_thread_pool_t     *tp;
    sft_log_t             *log;
    sft_auth_queue_t       queue;
    sft_auth_job_t        *refused;       /* banned while queued */
    sft_event_t            timer;
    sft_auth_share_t      *share;         /* other nodes, or NULL */
    char                   dummy[SFT_AUTH_HASH_LEN + 1];
} sft_auth;


sft_msec_t  sft_auth_clock_offset;

static sft_str_t  sft_auth_zone_name = sft_string("sft_auth");


static void sft_auth_thread(void *data, sft_log_t *log);
static void sft_auth_looked_up(sft_user_lookup_t *lk);
static sft_int_t sft_auth_check(sft_auth_job_t *job);
static sft_int_t sft_auth_set_dummy_cost(uint32_t m_kib, uint32_t t);
static void sft_auth_done(sft_event_t *ev);
static void sft_auth_timer_handler(sft_event_t *ev);
static void sft_auth_run_queue(void);
static void sft_auth_finish(sft_auth_request_t *ar, sft_user_t *u,
    sft_uint_t ok, sft_uint_t reason, sft_auth_addr_t *addr);
static void sft_auth_free_job(sft_auth_job_t *job);
static void sft_auth_refuse(sft_auth_request_t *ar, sft_auth_addr_t *a);
static void sft_auth_want(sft_uint_t want);
static uint64_t sft_auth_bans_active(sft_auth_shm_t *shm);
static sft_int_t sft_auth_addr_unban(sft_auth_addr_t *a);
static sft_int_t sft_auth_addr_parse(const char *source, sft_auth_addr_t *a);


static sft_auth_job_t *
sft_auth_job_of(sft_auth_qnode_t *n)
{
    return (sft_auth_job_t *) ((u_char *) n - offsetof(sft_auth_job_t, node));
}


static sft_msec_t
sft_auth_now(void)
{
    return sft_monotonic_msec() + sft_auth_clock_offset;
}


static void
sft_auth_lock(sft_auth_shm_t *shm)
{
    sft_uint_t  i;

    for ( ;; ) {
        if (__atomic_exchange_n(&shm->lock, (uint32_t) sft_pid,
                                __ATOMIC_ACQUIRE) == 0)
        {
            return;
        }

        for (i = 0; i < 64; i++) {
            if (__atomic_load_n(&shm->lock, __ATOMIC_RELAXED) == 0) {
                break;
            }
        }

        if (i == 64) {
            sched_yield();
        }
    }
}


static void
sft_auth_unlock(sft_auth_shm_t *shm)
{
    __atomic_store_n(&shm->lock, 0, __ATOMIC_RELEASE);
}


/* the zone */

size_t
sft_auth_shm_size(void)
{
    return sft_align(sizeof(sft_auth_shm_t), 4096);
}


void
sft_auth_shm_init(void *addr)
{
    sft_auth_shm_t  *shm = addr;

    if (sodium_init() < 0) {
        /* randombytes_buf() aborts rather than return weak bytes */
    }

    sft_memzero(shm, sizeof(sft_auth_shm_t));
    randombytes_buf(shm->key, sizeof(shm->key));
    randombytes_buf(shm->sipkey, sizeof(shm->sipkey));
    shm->gen = 1;
}


static sft_int_t
sft_auth_zone_init(sft_shm_zone_t *zone, void *old_data)
{
    if (old_data) {
        zone->data = old_data;

    } else {
        sft_auth_shm_init(zone->shm.addr);
        zone->data = zone->shm.addr;
    }

    /* the master too: it cleans up after workers that die */
    sft_auth.shm = zone->data;

    return SFT_OK;
}


sft_int_t
sft_auth_zone_add(sft_cycle_t *cycle, sft_users_conf_t *ucf)
{
    sft_shm_zone_t  *zone;

    if (sodium_init() < 0) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0, "sodium_init() failed");
        return SFT_ERROR;
    }

    if (sft_auth_stats_register(cycle) != SFT_OK) {
        return SFT_ERROR;
    }

    zone = sft_shared_memory_add(cycle, &sft_auth_zone_name,
                                 sft_auth_shm_size(), &sft_auth_zone_name);
    if (zone == NULL) {
        return SFT_ERROR;
    }

    zone->init = sft_auth_zone_init;
    ucf->zone = zone;

    return SFT_OK;
}


sft_int_t
sft_auth_init_process(sft_users_conf_t *ucf, void *shm,
    sft_thread_pool_t *tp, sft_log_t *log)
{
    if (sodium_init() < 0) {
        sft_log_error(SFT_LOG_EMERG, log, 0, "sodium_init() failed");
        return SFT_ERROR;
    }

    sft_auth.shm = shm;
    sft_auth.conf = ucf;
    sft_auth.tp = tp;
    sft_auth.log = log;

    sft_auth_queue_init(&sft_auth.queue, ((sft_auth_shm_t *) shm)->sipkey,
                        SFT_AUTH_MAX_QUEUE, SFT_AUTH_MAX_QUEUE_PER_SOURCE,
                        log);

    sft_memzero(&sft_auth.timer, sizeof(sft_event_t));
    sft_auth.timer.handler = sft_auth_timer_handler;
    sft_auth.timer.log = log;

    if (tp == NULL) {
        sft_log_error(SFT_LOG_EMERG, log, 0, "no \"default\" thread pool "
                      "for password checks");
        return SFT_ERROR;
    }

    return sft_auth_set_dummy_cost(ucf->hash_memory / 1024,
                                   ucf->hash_passes);
}


void
sft_auth_exit_process(void)
{
    sft_auth_job_t    *job;
    sft_auth_qnode_t  *n;

    if (sft_auth.timer.timer_set) {
        sft_del_timer(&sft_auth.timer);
    }

    while ((n = sft_auth_queue_pop(&sft_auth.queue)) != NULL) {
        sft_auth_free_job(sft_auth_job_of(n));
    }

    sft_auth_want(0);

    while ((job = sft_auth.refused) != NULL) {
        sft_auth.refused = job->refused_next;
        sft_auth_free_job(job);
    }
}


/*
 * The hash unknown users are checked against: random salt and tag with the
 * cost new hashes are made with, so the work is the same as a user's and
 * no password can match it.
 */

static sft_int_t
sft_auth_set_dummy_cost(uint32_t m_kib, uint32_t t)
{
    u_char  salt[16], tag[32];
    char    s64[32], t64[48];

    randombytes_buf(salt, sizeof(salt));
    randombytes_buf(tag, sizeof(tag));

    sodium_bin2base64(s64, sizeof(s64), salt, sizeof(salt),
                      sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
    sodium_bin2base64(t64, sizeof(t64), tag, sizeof(tag),
                      sodium_base64_VARIANT_ORIGINAL_NO_PADDING);

    snprintf(sft_auth.dummy, sizeof(sft_auth.dummy),
             "$argon2id$v=19$m=%u,t=%u,p=1$%s$%s", m_kib, t, s64, t64);

    return SFT_OK;
}


sft_int_t
sft_auth_hash_password(sft_users_conf_t *ucf, u_char *pw, size_t len,
    char *out, size_t outlen)
{
    int       rc;
    u_char    salt[16];
    uint32_t  m_kib, t;

    m_kib = ucf ? ucf->hash_memory / 1024 : SFT_AUTH_M_COST;
    t = ucf ? ucf->hash_passes : SFT_AUTH_T_COST;

    if (sodium_init() < 0) {
        return SFT_ERROR;
    }

    randombytes_buf(salt, sizeof(salt));

    rc = argon2id_hash_encoded(t, m_kib, 1, pw, len, salt, sizeof(salt), 32,
                               out, outlen);

    return rc == ARGON2_OK ? SFT_OK : SFT_ERROR;
}


/* blocking; for the CLI and tests */

sft_int_t
sft_auth_verify_now(sft_str_t *phc, u_char *pw, size_t len)
{
    char  hash[SFT_AUTH_HASH_LEN + 1];

    if (phc->len > SFT_AUTH_HASH_LEN) {
        return SFT_ERROR;
    }

    sft_memcpy(hash, phc->data, phc->len);
    hash[phc->len] = '\0';

    return argon2id_verify(hash, pw, len) == ARGON2_OK ? SFT_OK
                                                        : SFT_DECLINED;
}


/* the generation: any change of the user table invalidates the cache */

void
sft_auth_users_changed(sft_users_ident_t *ident, sft_log_t *log)
{
    sft_auth_shm_t  *shm = sft_auth.shm;

    if (shm == NULL) {
        return;
    }

    sft_auth_lock(shm);

    if (sft_memcmp(&shm->ident, ident, sizeof(sft_users_ident_t)) != 0) {
        shm->ident = *ident;
        shm->gen++;
        sft_log_debug(log, "login cache generation %llu",
                      (unsigned long long) shm->gen);
    }

    sft_auth_unlock(shm);
}


void
sft_auth_clear_cache(void)
{
    if (sft_auth.shm) {
        __atomic_fetch_add(&sft_auth.shm->gen, 1, __ATOMIC_RELAXED);
    }
}


void
sft_auth_get_stats(sft_auth_stats_t *st)
{
    sft_auth_shm_t  *shm = sft_auth.shm;

    sft_memzero(st, sizeof(sft_auth_stats_t));

    if (shm == NULL) {
        return;
    }

    st->argon2_runs = __atomic_load_n(&shm->argon2_runs, __ATOMIC_RELAXED);
    st->cache_hits = __atomic_load_n(&shm->cache_hits, __ATOMIC_RELAXED);
    st->bans = __atomic_load_n(&shm->bans, __ATOMIC_RELAXED);
    st->running = __atomic_load_n(&shm->running, __ATOMIC_RELAXED);
    st->max_running = __atomic_load_n(&shm->max_in_argon2, __ATOMIC_RELAXED);
    st->generation = __atomic_load_n(&shm->gen, __ATOMIC_RELAXED);
    st->bans_active = sft_auth_bans_active(shm);
}


static uint64_t
sft_auth_bans_active(sft_auth_shm_t *shm)
{
    uint64_t     n;
    sft_uint_t   i;
    sft_msec_t   now;

    n = 0;
    now = sft_auth_now();

    sft_auth_lock(shm);

    for (i = 0; i < SFT_AUTH_ADDR_SLOTS; i++) {
        n += (shm->addr[i].family != 0 && shm->addr[i].banned_until > now);
    }

    sft_auth_unlock(shm);

    return n;
}


/* the verification cache */

static void
sft_auth_digest(sft_str_t *name, sft_str_t *hash, u_char *pw, size_t len,
    u_char *out)
{
    uint64_t                   n;
    crypto_generichash_state   st;

    crypto_generichash_init(&st, sft_auth.shm->key,
                            sizeof(sft_auth.shm->key), 32);

    n = name->len;
    crypto_generichash_update(&st, (u_char *) &n, sizeof(n));
    crypto_generichash_update(&st, name->data, name->len);
    n = hash->len;
    crypto_generichash_update(&st, (u_char *) &n, sizeof(n));
    crypto_generichash_update(&st, hash->data, hash->len);
    n = len;
    crypto_generichash_update(&st, (u_char *) &n, sizeof(n));
    crypto_generichash_update(&st, pw, len);
    crypto_generichash_final(&st, out, 32);

    sft_explicit_memzero(&st, sizeof(st));
}


static sft_uint_t
sft_auth_cache_lookup(u_char *digest)
{
    uint64_t                idx;
    sft_uint_t              i, hit;
    sft_msec_t              now;
    sft_auth_shm_t         *shm = sft_auth.shm;
    sft_auth_cache_slot_t  *s;

    if (sft_auth.conf->cache_ttl == 0) {
        return 0;
    }

    sft_memcpy(&idx, digest, sizeof(idx));
    now = sft_auth_now();
    hit = 0;

    sft_auth_lock(shm);

    for (i = 0; i < SFT_AUTH_CACHE_PROBE; i++) {
        s = &shm->cache[(idx + i) % SFT_AUTH_CACHE_SLOTS];

        if (s->gen == shm->gen && s->expires > now
            && sft_ct_eq(s->digest, digest, 32))
        {
            hit = 1;
            shm->cache_hits++;
            break;
        }
    }

    sft_auth_unlock(shm);

    return hit;
}


static void
sft_auth_cache_insert(u_char *digest)
{
    uint64_t                idx;
    sft_uint_t              i;
    sft_msec_t              now;
    sft_auth_shm_t         *shm = sft_auth.shm;
    sft_auth_cache_slot_t  *s, *victim;

    if (sft_auth.conf->cache_ttl == 0) {
        return;
    }

    sft_memcpy(&idx, digest, sizeof(idx));
    now = sft_auth_now();
    victim = NULL;

    sft_auth_lock(shm);

    for (i = 0; i < SFT_AUTH_CACHE_PROBE; i++) {
        s = &shm->cache[(idx + i) % SFT_AUTH_CACHE_SLOTS];

        if (s->gen != shm->gen || s->expires <= now
            || sft_ct_eq(s->digest, digest, 32))
        {
            victim = s;
            break;
        }

        if (victim == NULL || s->expires < victim->expires) {
            victim = s;
        }
    }

    sft_memcpy(victim->digest, digest, 32);
    victim->gen = shm->gen;
    victim->expires = now + (sft_msec_t) sft_auth.conf->cache_ttl * 1000;

    sft_auth_unlock(shm);
}


/* addresses */

/* an IPv6 address cut to its first "bits" bits, and its text */

static void
sft_auth_addr_prefix(sft_auth_addr_t *a, sft_uint_t bits)
{
    size_t      len;
    sft_uint_t  i;

    if (bits < 128) {
        for (i = bits / 8; i < 16; i++) {
            a->addr[i] = (i == bits / 8)
                         ? (u_char) (a->addr[i] & (0xff00 >> (bits % 8)))
                         : 0;
        }
    }

    inet_ntop(AF_INET6, a->addr, a->text, sizeof(a->text));

    if (bits < 128) {
        len = strlen(a->text);
        snprintf(a->text + len, sizeof(a->text) - len, "/%u",
                 (unsigned) bits);
    }
}


static sft_uint_t
sft_auth_exempt(struct sockaddr *sa)
{
    sft_uint_t        i;
    sft_user_cidr_t  *cidr;

    if (sft_auth.conf->ban_exempt == NULL) {
        return 0;
    }

    cidr = sft_auth.conf->ban_exempt->elts;

    for (i = 0; i < sft_auth.conf->ban_exempt->nelts; i++) {
        if (sft_cidr_match(&cidr[i], sa)) {
            return 1;
        }
    }

    return 0;
}


static void
sft_auth_addr(struct sockaddr *sa, sft_auth_addr_t *a)
{
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    sft_memzero(a, sizeof(sft_auth_addr_t));

    if (sa == NULL) {
        sft_memcpy(a->text, "unknown", 8);
        return;
    }

    /* the client's own address, not its source's prefix */
    a->exempt = sft_auth_exempt(sa);

    if (sa->sa_family == AF_INET6) {
        sin6 = (struct sockaddr_in6 *) sa;

        if (!IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
            a->family = AF_INET6;
            sft_memcpy(a->addr, sin6->sin6_addr.s6_addr, 16);
            sft_auth_addr_prefix(a, (sft_uint_t) sft_auth.conf->ipv6_prefix);
            return;
        }

        a->family = AF_INET;
        sft_memcpy(a->addr, sin6->sin6_addr.s6_addr + 12, 4);

    } else if (sa->sa_family == AF_INET) {
        sin = (struct sockaddr_in *) sa;
        a->family = AF_INET;
        sft_memcpy(a->addr, &sin->sin_addr, 4);

    } else {
        sft_memcpy(a->text, "local", 6);
        return;
    }

    inet_ntop(AF_INET, a->addr, a->text, sizeof(a->text));
}


/* the key of a source: its family, then its 16 bytes */

static void
sft_auth_addr_key(sft_auth_addr_t *a, u_char *key)
{
    sft_memcpy(key, &a->family, 4);
    sft_memcpy(key + 4, a->addr, 16);
}


/* under the lock: the slot of a source, created if create is set */

static sft_auth_addr_slot_t *
sft_auth_addr_slot(sft_auth_addr_t *a, sft_uint_t create, sft_msec_t now)
{
    u_char                 in[SFT_AUTH_SOURCE_LEN];
    uint64_t               h;
    sft_uint_t             i;
    sft_auth_shm_t        *shm = sft_auth.shm;
    sft_auth_addr_slot_t  *s, *free;

    if (a->family == 0) {
        return NULL;
    }

    sft_auth_addr_key(a, in);
    crypto_shorthash((u_char *) &h, in, sizeof(in), shm->sipkey);

    free = NULL;

    for (i = 0; i < SFT_AUTH_ADDR_PROBE; i++) {
        s = &shm->addr[(h + i) % SFT_AUTH_ADDR_SLOTS];

        if (s->family == a->family && sft_memcmp(s->addr, a->addr, 16) == 0)
        {
            return s;
        }

        if (free == NULL
            && (s->family == 0
                || (s->conns == 0 && s->banned_until <= now
                    && (s->failures == 0
                        || s->window_start
                           + (sft_msec_t) sft_auth.conf->failure_window
                             * 1000 <= now))))
        {
            free = s;
        }
    }

    if (!create || free == NULL) {
        return NULL;
    }

    sft_memzero(free, sizeof(sft_auth_addr_slot_t));
    free->family = a->family;
    sft_memcpy(free->addr, a->addr, 16);

    return free;
}


static sft_uint_t
sft_auth_addr_banned(sft_auth_addr_t *a)
{
    sft_uint_t             banned;
    sft_msec_t             now;
    sft_auth_addr_slot_t  *s;

    now = sft_auth_now();
    banned = 0;

    sft_auth_lock(sft_auth.shm);

    s = sft_auth_addr_slot(a, 0, now);

    if (s && s->banned_until > now) {
        banned = 1;
    }

    sft_auth_unlock(sft_auth.shm);

    return banned;
}


sft_uint_t
sft_auth_banned(struct sockaddr *sa)
{
    sft_auth_addr_t  a;

    if (sft_auth.shm == NULL) {
        return 0;
    }

    sft_auth_addr(sa, &a);

    return sft_auth_addr_banned(&a);
}


static void
sft_auth_addr_result(sft_auth_addr_t *a, sft_uint_t failed, sft_log_t *log)
{
    sft_uint_t             banned, failures;
    sft_msec_t             now;
    sft_auth_shm_t        *shm = sft_auth.shm;
    sft_auth_addr_slot_t  *s;

    now = sft_auth_now();
    banned = 0;
    failures = 0;

    if (failed) {
        sft_stat_add(sft_auth_stat_login_failures, 1);
    }

    sft_auth_lock(shm);

    s = sft_auth_addr_slot(a, failed, now);

    if (s && !failed) {
        s->failures = 0;

    } else if (s) {
        if (s->failures == 0
            || s->window_start
               + (sft_msec_t) sft_auth.conf->failure_window * 1000 <= now)
        {
            s->failures = 0;
            s->window_start = now;
        }

        failures = ++s->failures;

        if (sft_auth.conf->max_failures > 0 && !a->exempt
            && failures >= (sft_uint_t) sft_auth.conf->max_failures)
        {
            s->banned_until = now + (sft_msec_t) sft_auth.conf->ban_time * 1000;
            s->ban_failures = (uint32_t) failures;
            s->failures = 0;
            shm->bans++;
            banned = 1;
        }
    }

    sft_auth_unlock(shm);

    if (banned) {
        sft_log_error(SFT_LOG_WARN, log, 0,
                      "address %s banned for %lds after %lu failures",
                      a->text, (long) sft_auth.conf->ban_time,
                      (unsigned long) failures);
    }

    if (sft_auth.share == NULL || !failed || a->exempt || a->family == 0) {
        return;
    }

    sft_auth.share->failed(a->text, log);

    if (banned) {
        sft_auth.share->banned(a->text, failures, log);
    }
}


/* the next banned source from slot *i on, for the API; SFT_DONE at the end */

sft_int_t
sft_auth_ban_next(sft_uint_t *i, sft_auth_ban_t *ban)
{
    size_t                 len;
    sft_int_t              rc;
    sft_msec_t             now;
    sft_auth_addr_slot_t  *s, copy;

    if (sft_auth.shm == NULL) {
        return SFT_DONE;
    }

    now = sft_auth_now();
    rc = SFT_DONE;

    sft_auth_lock(sft_auth.shm);

    for ( /* void */ ; *i < SFT_AUTH_ADDR_SLOTS; (*i)++) {
        s = &sft_auth.shm->addr[*i];

        if (s->family != 0 && s->banned_until > now) {
            copy = *s;
            (*i)++;
            rc = SFT_OK;
            break;
        }
    }

    sft_auth_unlock(sft_auth.shm);

    if (rc != SFT_OK) {
        return rc;
    }

    inet_ntop((int) copy.family, copy.addr, ban->address,
              sizeof(ban->address));

    if (copy.family == AF_INET6 && sft_auth.conf->ipv6_prefix < 128) {
        len = strlen(ban->address);
        snprintf(ban->address + len, sizeof(ban->address) - len, "/%u",
                 (unsigned) sft_auth.conf->ipv6_prefix);
    }

    ban->failures = copy.ban_failures + copy.failures;
    ban->until = time(NULL) + (time_t) ((copy.banned_until - now + 999) / 1000);

    return SFT_OK;
}


/*
 * Lifts the ban on the source of sa and clears its failures, on the other
 * nodes too: a ban they hold that this node does not know of yet is
 * lifted there all the same.
 */

sft_int_t
sft_auth_unban(struct sockaddr *sa)
{
    sft_auth_addr_t  a;

    if (sft_auth.shm == NULL) {
        return SFT_DECLINED;
    }

    sft_auth_addr(sa, &a);

    if (sft_auth.share && a.family) {
        sft_auth.share->unbanned(a.text);
    }

    return sft_auth_addr_unban(&a);
}


static sft_int_t
sft_auth_addr_unban(sft_auth_addr_t *a)
{
    sft_int_t              rc;
    sft_msec_t             now;
    sft_auth_addr_slot_t  *s;

    now = sft_auth_now();
    rc = SFT_DECLINED;

    sft_auth_lock(sft_auth.shm);

    s = sft_auth_addr_slot(a, 0, now);

    if (s && s->banned_until > now) {
        s->banned_until = 0;
        s->failures = 0;
        rc = SFT_OK;
    }

    sft_auth_unlock(sft_auth.shm);

    return rc;
}


/* shared bans */

void
sft_auth_share(sft_auth_share_t *share)
{
    sft_auth.share = share;
}


/* the source of a share's text, cut to this node's IPv6 prefix */

static sft_int_t
sft_auth_addr_parse(const char *source, sft_auth_addr_t *a)
{
    char    buf[INET6_ADDRSTRLEN];
    size_t  len;

    sft_memzero(a, sizeof(sft_auth_addr_t));

    len = strcspn(source, "/");

    if (len >= sizeof(buf)) {
        return SFT_ERROR;
    }

    sft_memcpy(buf, source, len);
    buf[len] = '\0';

    if (inet_pton(AF_INET, buf, a->addr) == 1 && source[len] == '\0') {
        a->family = AF_INET;
        inet_ntop(AF_INET, a->addr, a->text, sizeof(a->text));
        return SFT_OK;
    }

    if (inet_pton(AF_INET6, buf, a->addr) == 1) {
        a->family = AF_INET6;
        sft_auth_addr_prefix(a, (sft_uint_t) sft_auth.conf->ipv6_prefix);
        return SFT_OK;
    }

    return SFT_ERROR;
}


/* another node banned a source for secs more seconds: SFT_OK if news */

sft_int_t
sft_auth_ban_source(const char *source, time_t secs, sft_uint_t failures,
    sft_log_t *log)
{
    sft_int_t              rc;
    sft_msec_t             now, until;
    sft_auth_addr_t        a;
    sft_auth_addr_slot_t  *s;

    if (sft_auth.shm == NULL || secs <= 0
        || sft_auth_addr_parse(source, &a) != SFT_OK)
    {
        return SFT_DECLINED;
    }

    now = sft_auth_now();
    until = now + (sft_msec_t) secs * 1000;
    rc = SFT_DECLINED;

    sft_auth_lock(sft_auth.shm);

    s = sft_auth_addr_slot(&a, 1, now);

    if (s && s->banned_until < until) {
        rc = (s->banned_until > now) ? SFT_DECLINED : SFT_OK;
        s->banned_until = until;
        s->ban_failures = (uint32_t) sft_min(failures, UINT32_MAX);
        s->failures = 0;
    }

    sft_auth_unlock(sft_auth.shm);

    if (rc == SFT_OK) {
        sft_log_error(SFT_LOG_WARN, log, 0,
                      "address %s banned for %lds by the shared bans "
                      "after %lu failures", a.text, (long) secs,
                      (unsigned long) failures);
    }

    return rc;
}


/* another node lifted a ban */

sft_int_t
sft_auth_unban_source(const char *source)
{
    sft_auth_addr_t  a;

    if (sft_auth.shm == NULL || sft_auth_addr_parse(source, &a) != SFT_OK) {
        return SFT_DECLINED;
    }

    return sft_auth_addr_unban(&a);
}


/* a failed credential other than a password (an API token) */

void
sft_auth_failed(struct sockaddr *sa, sft_log_t *log)
{
    sft_auth_addr_t  a;

    if (sft_auth.shm == NULL) {
        return;
    }

    sft_auth_addr(sa, &a);
    sft_auth_addr_result(&a, 1, log);
}


sft_int_t
sft_auth_connection_open(struct sockaddr *sa)
{
    sft_int_t              rc;
    uint32_t               n;
    sft_auth_addr_t        a;
    sft_auth_addr_slot_t  *s;

    if (sft_auth.shm == NULL) {
        return SFT_OK;
    }

    sft_auth_addr(sa, &a);
    rc = SFT_OK;
    n = 0;

    sft_auth_lock(sft_auth.shm);

    /* no free slot: let it in rather than refuse everybody */

    s = sft_auth_addr_slot(&a, 1, sft_auth_now());

    if (s) {
        if (s->conns >= (uint32_t) sft_auth.conf->max_conns_per_addr) {
            n = s->conns;
            rc = SFT_DECLINED;

        } else {
            s->conns++;
        }
    }

    sft_auth_unlock(sft_auth.shm);

    if (rc == SFT_DECLINED) {
        sft_log_error(SFT_LOG_NOTICE, sft_auth.log, 0,
                      "address %s: too many connections (%u), refused",
                      a.text, n);
    }

    return rc;
}


void
sft_auth_connection_close(struct sockaddr *sa)
{
    sft_auth_addr_t        a;
    sft_auth_addr_slot_t  *s;

    if (sft_auth.shm == NULL) {
        return;
    }

    sft_auth_addr(sa, &a);

    sft_auth_lock(sft_auth.shm);

    s = sft_auth_addr_slot(&a, 0, sft_auth_now());

    if (s && s->conns > 0) {
        s->conns--;
    }

    sft_auth_unlock(sft_auth.shm);
}


sft_msec_t
sft_auth_failure_delay(sft_uint_t failures)
{
    if (failures == 0) {
        return 0;
    }

    if (failures > 4) {
        return 8000;
    }

    return (sft_msec_t) 1000 << (failures - 1);
}


/* the verification */

sft_int_t
sft_auth_password(sft_auth_request_t *ar)
{
    sft_auth_job_t   *job;
    sft_auth_addr_t   a;

    ar->result = SFT_AUTH_BAD;
    ar->account = NULL;
    ar->cached = 0;
    ar->job = NULL;
    ar->start_usec = sft_monotonic_usec();

    if (sft_auth.shm == NULL) {
        sft_log_error(SFT_LOG_ALERT, ar->log, 0,
                      "password check without the auth zone");
        return SFT_ERROR;
    }

    sft_auth_addr(ar->sockaddr, &a);

    if (sft_auth_addr_banned(&a)) {
        sft_auth_refuse(ar, &a);
        return SFT_OK;
    }

    if (ar->password.len > SFT_AUTH_MAX_PASSWORD) {
        sft_log_error(SFT_LOG_NOTICE, ar->log, 0,
                      "user \"%.*s\" from %s: password longer than %d bytes",
                      SFT_STR_FMT(&ar->user), a.text, SFT_AUTH_MAX_PASSWORD);
        sft_auth_addr_result(&a, 1, ar->log);
        return SFT_OK;
    }

    job = sft_calloc(sizeof(sft_auth_job_t), ar->log);
    if (job == NULL) {
        return SFT_ERROR;
    }

    /* the password is the caller's only until this returns */

    job->ar = ar;
    job->len = ar->password.len;
    sft_memcpy(job->password, ar->password.data, ar->password.len);

    job->lookup.name = ar->user;
    job->lookup.log = ar->log;
    job->lookup.handler = sft_auth_looked_up;
    job->lookup.data = job;

    ar->job = job;
    job->looking = 1;

    if (sft_user_lookup(&job->lookup) == SFT_AGAIN) {
        return SFT_AGAIN;
    }

    job->looking = 0;

    return sft_auth_check(job);
}


/* the user store answered later */

static void
sft_auth_looked_up(sft_user_lookup_t *lk)
{
    sft_int_t            rc;
    sft_auth_job_t      *job = lk->data;
    sft_auth_request_t  *ar;

    ar = job->ar;
    job->looking = 0;

    rc = sft_auth_check(job);

    if (rc == SFT_AGAIN) {
        return;
    }

    if (rc == SFT_ERROR) {
        ar->result = SFT_AUTH_BAD;
    }

    ar->handler(ar);
}


/*
 * With the user as the store knows it: the verification cache, else the
 * check queued for the thread pool (an unknown user costs the same).
 */

static sft_int_t
sft_auth_check(sft_auth_job_t *job)
{
    u_char               key[SFT_AUTH_SOURCE_LEN];
    uint32_t             m, t, p;
    sft_int_t            rc;
    sft_user_t          *u;
    sft_str_t           *hash;
    sft_auth_addr_t      a;
    sft_auth_request_t  *ar;

    ar = job->ar;
    u = job->lookup.user;
    job->user = u;                     /* released with the job */

    sft_auth_addr(ar->sockaddr, &a);

    if (job->lookup.rc == SFT_ERROR) {
        goto unavailable;
    }

    job->reason = SFT_AUTH_REAL;
    hash = NULL;

    if (u == NULL) {
        job->reason = SFT_AUTH_UNKNOWN;

    } else if (u->password.len == 0 || u->password.len > SFT_AUTH_HASH_LEN
               || sft_phc_params(&u->password, &m, &t, &p) != SFT_OK)
    {
        job->reason = SFT_AUTH_NO_PASSWORD;

    } else if (m < SFT_AUTH_MIN_M_COST || t < SFT_AUTH_MIN_T_COST) {
        job->reason = SFT_AUTH_WEAK;

    } else {
        hash = &u->password;
    }

    if (hash) {
        sft_auth_digest(&u->name, hash, job->password, job->len,
                        job->digest);

        if (sft_auth_cache_lookup(job->digest)) {
            ar->cached = 1;
            sft_auth_finish(ar, u, 1, SFT_AUTH_REAL, &a);
            goto answered;
        }

        sft_memcpy(job->hash, hash->data, hash->len);
    }

    if (job->lookup.stale) {
        /* the user as last seen: only the cache may answer for it */
        goto unavailable;
    }

    if (hash == NULL) {
        sft_memcpy(job->hash, sft_auth.dummy, strlen(sft_auth.dummy));
    }

    sft_auth_addr_key(&a, key);

    rc = sft_auth_queue_push(&sft_auth.queue, &job->node, key);

    if (rc == SFT_ERROR) {
        ar->job = NULL;
        sft_auth_free_job(job);
        return SFT_ERROR;
    }

    if (rc != SFT_OK) {
        sft_log_error(SFT_LOG_WARN, ar->log, 0,
                      "user \"%.*s\" from %s: %lu password checks queued%s, "
                      "refused", SFT_STR_FMT(&ar->user), a.text,
                      (unsigned long) (rc == SFT_BUSY
                                       ? sft_auth.queue.queued
                                       : sft_auth.queue.max_per_source),
                      rc == SFT_BUSY ? "" : " from this source");
        ar->result = SFT_AUTH_BUSY;
        goto answered;
    }

    job->task.ctx = job;
    job->task.handler = sft_auth_thread;
    job->task.event.handler = sft_auth_done;
    job->task.event.data = job;
    job->task.event.log = ar->log;

    sft_auth_run_queue();

    return SFT_AGAIN;

unavailable:

    sft_log_error(SFT_LOG_WARN, ar->log, 0,
                  "user \"%.*s\" from %s: the user store cannot be "
                  "reached and the password is not cached, refused",
                  SFT_STR_FMT(&ar->user), a.text);
    ar->result = SFT_AUTH_UNAVAILABLE;

answered:

    ar->job = NULL;
    sft_auth_free_job(job);

    return SFT_OK;
}


void
sft_auth_cancel(sft_auth_request_t *ar)
{
    sft_auth_job_t  *job;

    job = ar->job;

    if (job == NULL) {
        return;
    }

    ar->job = NULL;
    job->ar = NULL;

    if (job->looking) {
        sft_user_lookup_cancel(&job->lookup);
        sft_auth_free_job(job);
        return;
    }

    if (job->node.source == NULL) {
        return;                /* on a thread: freed when it completes */
    }

    sft_auth_queue_remove(&sft_auth.queue, &job->node);
    sft_auth_free_job(job);
}


static void
sft_auth_free_job(sft_auth_job_t *job)
{
    sft_user_release(job->user);
    sft_explicit_memzero(job, sizeof(sft_auth_job_t));
    sft_free(job);
}


/* what this worker holds of the cap, so the master can undo it if it dies */

static void
sft_auth_held(int n)
{
    if (sft_process_slot >= 0 && sft_process_slot < SFT_MAX_PROCESSES) {
        __atomic_fetch_add(&sft_auth.shm->held[sft_process_slot],
                           (uint32_t) n, __ATOMIC_RELAXED);
    }
}


/*
 * Workers with checks waiting share the cap: one that holds its share
 * while others wait takes no more, so a worker flooded with checks cannot
 * keep every slot (each completion taking the slot back at once) while
 * another worker's queue waits for a free slot on its timer.
 */

static void
sft_auth_want(sft_uint_t want)
{
    if (sft_process_slot >= 0 && sft_process_slot < SFT_MAX_PROCESSES) {
        __atomic_store_n(&sft_auth.shm->wanting[sft_process_slot],
                         (uint32_t) want, __ATOMIC_RELAXED);
    }
}


static sft_uint_t
sft_auth_over_share(void)
{
    uint32_t         i, n, share;
    sft_auth_shm_t  *shm = sft_auth.shm;

    if (sft_process_slot < 0 || sft_process_slot >= SFT_MAX_PROCESSES) {
        return 0;
    }

    n = 0;

    for (i = 0; i < SFT_MAX_PROCESSES; i++) {
        n += (__atomic_load_n(&shm->wanting[i], __ATOMIC_RELAXED) != 0);
    }

    if (n <= 1) {
        return 0;
    }

    share = (uint32_t) sft_auth.conf->max_checks / n;

    return __atomic_load_n(&shm->held[sft_process_slot], __ATOMIC_RELAXED)
           >= (share ? share : 1);
}


/*
 * In the master, after a worker died: its share of the password-check cap
 * is given back, and the zone's lock if it died holding it.
 */

void
sft_auth_process_exited(sft_uint_t slot, pid_t pid)
{
    uint32_t         n, holder;
    sft_auth_shm_t  *shm = sft_auth.shm;

    if (shm == NULL || slot >= SFT_MAX_PROCESSES) {
        return;
    }

    __atomic_store_n(&shm->wanting[slot], 0, __ATOMIC_RELAXED);
    n = __atomic_exchange_n(&shm->held[slot], 0, __ATOMIC_RELAXED);

    if (n) {
        __atomic_fetch_sub(&shm->running, n, __ATOMIC_RELEASE);
    }

    holder = (uint32_t) pid;
    (void) __atomic_compare_exchange_n(&shm->lock, &holder, 0, 0,
                                       __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}


static sft_uint_t
sft_auth_slot_acquire(void)
{
    uint32_t         cur, max;
    sft_auth_shm_t  *shm = sft_auth.shm;

    if (sft_auth_over_share()) {
        return 0;
    }

    max = (uint32_t) sft_auth.conf->max_checks;
    cur = __atomic_load_n(&shm->running, __ATOMIC_RELAXED);

    while (cur < max) {
        if (__atomic_compare_exchange_n(&shm->running, &cur, cur + 1, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        {
            sft_auth_held(1);
            return 1;
        }
    }

    return 0;
}


static void
sft_auth_run_queue(void)
{
    sft_auth_job_t    *job;
    sft_auth_qnode_t  *n;

    sft_auth_want(sft_auth.queue.queued != 0);

    while ((n = sft_auth_queue_next(&sft_auth.queue)) != NULL) {

        job = sft_auth_job_of(n);

        /* answered from the timer: the caller may be sft_auth_password() */

        if (sft_auth_banned(job->ar->sockaddr)) {
            (void) sft_auth_queue_pop(&sft_auth.queue);
            job->refused_next = sft_auth.refused;
            sft_auth.refused = job;
            continue;
        }

        if (!sft_auth_slot_acquire()) {
            break;
        }

        if (sft_thread_task_post(sft_auth.tp, &job->task) != SFT_OK) {
            sft_auth_held(-1);
            __atomic_fetch_sub(&sft_auth.shm->running, 1, __ATOMIC_RELEASE);
            break;
        }

        (void) sft_auth_queue_pop(&sft_auth.queue);
    }

    sft_auth_want(sft_auth.queue.queued != 0);

    if (sft_auth.refused && sft_auth.timer.timer_set) {
        sft_del_timer(&sft_auth.timer);
    }

    if ((sft_auth.queue.queued || sft_auth.refused)
        && !sft_auth.timer.timer_set)
    {
        sft_add_timer(&sft_auth.timer,
                      sft_auth.refused ? 0 : SFT_AUTH_RETRY_MSEC);
    }
}


/*
 * The retry timer: first the checks whose source was banned while they
 * waited, answered unrun, then the queue again.
 */

static void
sft_auth_timer_handler(sft_event_t *ev)
{
    sft_auth_job_t      *job;
    sft_auth_addr_t      a;
    sft_auth_request_t  *ar;

    (void) ev;

    while ((job = sft_auth.refused) != NULL) {
        sft_auth.refused = job->refused_next;
        ar = job->ar;

        sft_auth_free_job(job);

        if (ar) {
            ar->job = NULL;
            sft_auth_addr(ar->sockaddr, &a);
            sft_auth_refuse(ar, &a);
            ar->handler(ar);
        }
    }

    sft_auth_run_queue();
}


/* on a pool thread */

static void
sft_auth_thread(void *data, sft_log_t *log)
{
    uint32_t          n, max;
    sft_auth_job_t   *job = data;
    sft_auth_shm_t   *shm = sft_auth.shm;

    (void) log;

    n = __atomic_add_fetch(&shm->in_argon2, 1, __ATOMIC_ACQ_REL);
    max = __atomic_load_n(&shm->max_in_argon2, __ATOMIC_RELAXED);

    while (n > max
           && !__atomic_compare_exchange_n(&shm->max_in_argon2, &max, n, 0,
                                           __ATOMIC_RELAXED,
                                           __ATOMIC_RELAXED))
    {
        /* max reloaded */
    }

    job->rc = argon2id_verify(job->hash, job->password, job->len);

    __atomic_fetch_sub(&shm->in_argon2, 1, __ATOMIC_ACQ_REL);
    __atomic_fetch_add(&shm->argon2_runs, 1, __ATOMIC_RELAXED);

    sft_explicit_memzero(job->password, job->len);
}


/* back on the event loop */

static void
sft_auth_done(sft_event_t *ev)
{
    sft_uint_t           ok;
    sft_auth_job_t      *job = ev->data;
    sft_auth_addr_t      a;
    sft_auth_request_t  *ar;

    sft_auth_held(-1);
    __atomic_fetch_sub(&sft_auth.shm->running, 1, __ATOMIC_RELEASE);

    ar = job->ar;

    if (ar) {
        ar->job = NULL;

        ok = (job->rc == ARGON2_OK && job->reason == SFT_AUTH_REAL);

        if (ok) {
            sft_auth_cache_insert(job->digest);
        }

        sft_auth_addr(ar->sockaddr, &a);
        sft_auth_finish(ar, job->user, ok, job->reason, &a);
    }

    sft_auth_free_job(job);

    if (ar) {
        ar->handler(ar);
    }

    sft_auth_run_queue();
}


/* a banned source: no check, no failure counted */

static void
sft_auth_refuse(sft_auth_request_t *ar, sft_auth_addr_t *a)
{
    sft_log_error(SFT_LOG_INFO, ar->log, 0,
                  "user \"%.*s\" from %s: address is banned, refused",
                  SFT_STR_FMT(&ar->user), a->text);
    ar->result = SFT_AUTH_BANNED;
}


/* the result, its log line and the failure counters */

static void
sft_auth_finish(sft_auth_request_t *ar, sft_user_t *u, sft_uint_t ok,
    sft_uint_t reason, sft_auth_addr_t *a)
{
    uint32_t     m, t, p;
    const char  *why;

    why = NULL;

    sft_auth_stats_check_time(ar->cached,
                              sft_monotonic_usec() - ar->start_usec);

    switch (reason) {

    case SFT_AUTH_UNKNOWN:
        why = "unknown user";
        break;

    case SFT_AUTH_NO_PASSWORD:
        why = "no usable password hash in the users file";
        break;

    case SFT_AUTH_WEAK:
        m = t = p = 0;
        (void) sft_phc_params(&u->password, &m, &t, &p);
        sft_log_error(SFT_LOG_WARN, ar->log, 0,
                      "user \"%.*s\" from %s: password hash cost m=%u,t=%u "
                      "is below the minimum m=%d,t=%d, login refused; "
                      "set a new password", SFT_STR_FMT(&ar->user), a->text,
                      m, t, SFT_AUTH_MIN_M_COST, SFT_AUTH_MIN_T_COST);
        ar->result = SFT_AUTH_BAD;
        sft_auth_addr_result(a, 1, ar->log);
        return;

    default:
        if (!ok) {
            why = "wrong password";

        } else if (u->disabled) {
            ar->result = SFT_AUTH_DISABLED;
            why = "account disabled";

        } else if (!sft_user_allowed_from(u, ar->sockaddr)) {
            ar->result = SFT_AUTH_NOT_ALLOWED_FROM;
            why = "not allowed from this address";
        }
    }

    if (why) {
        if (ok == 0) {
            ar->result = SFT_AUTH_BAD;
        }

        sft_log_error(SFT_LOG_NOTICE, ar->log, 0,
                      "user \"%.*s\" from %s: %s", SFT_STR_FMT(&ar->user),
                      a->text, why);
        sft_auth_addr_result(a, 1, ar->log);
        return;
    }

    ar->result = SFT_AUTH_OK;
    ar->account = sft_user_acquire(u);

    sft_log_error(SFT_LOG_INFO, ar->log, 0,
                  "user \"%.*s\" from %s: password accepted%s",
                  SFT_STR_FMT(&ar->user), a->text,
                  ar->cached ? " (cached)" : "");

    sft_auth_addr_result(a, 0, ar->log);
}
