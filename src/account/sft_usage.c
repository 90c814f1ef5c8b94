/*
 * sft_usage.c -- per-user usage shared by all workers: an open-addressing
 * table of records keyed by user name in the "sft_usage" zone.  Records
 * are claimed with a compare-and-swap and never removed while the master
 * runs; counters change with atomic operations only.  Each record also
 * counts its sessions per worker, so the master can give back the
 * sessions of a worker that died.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_usage.h>
#include <sft_usage_lease.h>


#define SFT_USAGE_EMPTY     0
#define SFT_USAGE_CLAIMED   1     /* the name is being written */
#define SFT_USAGE_READY     2

#define SFT_USAGE_MIN       4096


struct sft_usage_s {
    uint32_t           state;
    uint32_t           known;     /* bytes and files were counted */
    uint32_t           lock;      /* sft_usage_store's */
    uint32_t           recount;   /* the slot + 1 of the process that
                                     recounts them, 0: none */
    uint32_t           sessions;
    uint32_t           remote;    /* on the other nodes */
    uint32_t           remote_gen;
    int64_t            bytes;
    int64_t            files;
    uint32_t           len;
    u_char             name[SFT_USER_NAME_MAX];
    uint16_t           held[SFT_MAX_PROCESSES];   /* sessions per worker */
};


typedef struct {
    uint32_t           capacity;  /* a power of two */
    uint32_t           nused;
    uint32_t           remote_gen;  /* of the last count of other nodes */
    uint32_t          *used;      /* record indexes, in claim order */
    sft_usage_t       *records;
} sft_usage_table_t;


/* the zone: the table header, then used[capacity], then the records */

static sft_usage_table_t  *sft_usage_table;
static sft_uint_t          sft_usage_capacity;
static void              (*sft_usage_changed)(void);

static sft_str_t  sft_usage_zone_name = sft_string("sft_usage");


static uint32_t
sft_usage_hash(const u_char *p, size_t len)
{
    uint32_t  h = 2166136261u;

    while (len--) {
        h = (h ^ *p++) * 16777619u;
    }

    return h;
}


static sft_uint_t
sft_usage_slots(sft_uint_t nusers)
{
    sft_uint_t  cap;

    for (cap = SFT_USAGE_MIN; cap < 4 * nusers && cap < (1u << 30); ) {
        cap <<= 1;
    }

    return cap;
}


static size_t
sft_usage_header_size(sft_uint_t cap)
{
    return sft_align(sizeof(sft_usage_table_t) + cap * sizeof(uint32_t), 64);
}


size_t
sft_usage_memory_size(sft_uint_t nusers)
{
    sft_uint_t  cap;

    cap = sft_usage_slots(nusers);

    return sft_usage_header_size(cap) + cap * sizeof(sft_usage_t);
}


/* a fresh zone is all zeros already: only the header is written */

sft_int_t
sft_usage_init_memory(void *addr, size_t size)
{
    sft_uint_t          cap;
    sft_usage_table_t  *t = addr;

    for (cap = SFT_USAGE_MIN;
         sft_usage_header_size(cap) + cap * sizeof(sft_usage_t) < size;
         cap <<= 1)
    {
        /* void */
    }

    if (sft_usage_header_size(cap) + cap * sizeof(sft_usage_t) != size) {
        return SFT_ERROR;
    }

    t->capacity = (uint32_t) cap;
    t->used = (uint32_t *) (t + 1);
    t->records = (sft_usage_t *) ((u_char *) addr
                                  + sft_usage_header_size(cap));

    sft_usage_table = t;

    return SFT_OK;
}


static sft_int_t
sft_usage_zone_init(sft_shm_zone_t *zone, void *old_data)
{
    if (old_data) {
        zone->data = old_data;
        sft_usage_table = old_data;
        return SFT_OK;
    }

    zone->data = zone->shm.addr;

    return sft_usage_init_memory(zone->shm.addr, zone->shm.size);
}


sft_int_t
sft_usage_zone_add(sft_cycle_t *cycle, sft_uint_t nusers)
{
    sft_shm_zone_t  *zone;

    /* sized once: the same size keeps the zone across reloads */

    if (sft_usage_capacity == 0) {
        sft_usage_capacity = nusers;
    }

    if (2 * nusers > sft_usage_slots(sft_usage_capacity)) {
        sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                      "the users file has %lu users, the usage table was "
                      "sized for %lu at start: restart siftpd to grow it",
                      (unsigned long) nusers,
                      (unsigned long) sft_usage_capacity);
    }

    zone = sft_shared_memory_add(cycle, &sft_usage_zone_name,
                                 sft_usage_memory_size(sft_usage_capacity),
                                 &sft_usage_zone_name);
    if (zone == NULL) {
        return SFT_ERROR;
    }

    zone->init = sft_usage_zone_init;

    return SFT_OK;
}


/* in the master: the sessions a dead worker held are closed, its
   recounts given up */

void
sft_usage_process_exited(sft_uint_t slot)
{
    uint32_t            i, n, nused;
    sft_usage_t        *r;
    sft_usage_table_t  *t = sft_usage_table;

    if (t == NULL || slot >= SFT_MAX_PROCESSES) {
        return;
    }

    nused = __atomic_load_n(&t->nused, __ATOMIC_ACQUIRE);

    for (i = 0; i < nused; i++) {
        r = &t->records[t->used[i]];

        n = __atomic_exchange_n(&r->held[slot], 0, __ATOMIC_RELAXED);

        if (n) {
            __atomic_fetch_sub(&r->sessions, n, __ATOMIC_RELEASE);
        }

        n = (uint32_t) slot + 1;

        (void) __atomic_compare_exchange_n(&r->recount, &n, 0, 0,
                                           __ATOMIC_RELEASE,
                                           __ATOMIC_RELAXED);
    }
}


/* the record of name; made if claim is set and there is none */

static sft_usage_t *
sft_usage_find(sft_str_t *name, sft_uint_t claim)
{
    uint32_t            i, n, state;
    sft_usage_t        *r;
    sft_usage_table_t  *t = sft_usage_table;

    if (t == NULL || name->len == 0 || name->len > SFT_USER_NAME_MAX) {
        return NULL;
    }

    i = sft_usage_hash(name->data, name->len) & (t->capacity - 1);

    for (n = 0; n < t->capacity; n++, i = (i + 1) & (t->capacity - 1)) {
        r = &t->records[i];

        state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);

        if (state == SFT_USAGE_EMPTY && !claim) {
            return NULL;
        }

        if (state == SFT_USAGE_EMPTY) {

            if (__atomic_compare_exchange_n(&r->state, &state,
                                            SFT_USAGE_CLAIMED, 0,
                                            __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
            {
                sft_memcpy(r->name, name->data, name->len);
                r->len = (uint32_t) name->len;
                t->used[__atomic_fetch_add(&t->nused, 1, __ATOMIC_RELAXED)]
                    = i;
                __atomic_store_n(&r->state, SFT_USAGE_READY,
                                 __ATOMIC_RELEASE);
                return r;
            }
        }

        /* another process writes the name now: a few stores away */

        while (state == SFT_USAGE_CLAIMED) {
            sched_yield();
            state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
        }

        if (r->len == name->len
            && sft_memcmp(r->name, name->data, name->len) == 0)
        {
            return r;
        }
    }

    return NULL;
}


sft_usage_t *
sft_usage_record(sft_str_t *name, sft_log_t *log)
{
    sft_usage_t  *r;

    r = sft_usage_find(name, 1);

    if (r == NULL) {
        sft_log_error(SFT_LOG_ERR, log, 0,
                      "no usage record for \"%.*s\": the table of %lu is "
                      "full, restart siftpd to grow it", SFT_STR_FMT(name),
                      sft_usage_table
                          ? (unsigned long) sft_usage_table->capacity : 0);
    }

    return r;
}


sft_usage_t *
sft_usage_lookup(sft_str_t *name)
{
    return sft_usage_find(name, 0);
}


sft_int_t
sft_usage_session_open(sft_str_t *name, sft_uint_t max_sessions,
    sft_usage_t **usage, sft_log_t *log)
{
    uint32_t      cur, remote;
    sft_usage_t  *r;

    r = sft_usage_record(name, log);

    if (r == NULL) {
        return SFT_ERROR;
    }

    cur = __atomic_load_n(&r->sessions, __ATOMIC_RELAXED);
    remote = __atomic_load_n(&r->remote, __ATOMIC_RELAXED);

    do {
        if (max_sessions && (sft_uint_t) cur + remote >= max_sessions) {
            return SFT_DECLINED;
        }

    } while (!__atomic_compare_exchange_n(&r->sessions, &cur, cur + 1, 0,
                                          __ATOMIC_ACQ_REL,
                                          __ATOMIC_RELAXED));

    if (sft_process_slot >= 0 && sft_process_slot < SFT_MAX_PROCESSES) {
        __atomic_fetch_add(&r->held[sft_process_slot], 1, __ATOMIC_RELAXED);
    }

    *usage = r;

    if (sft_usage_changed) {
        sft_usage_changed();
    }

    return SFT_OK;
}


void
sft_usage_session_close(sft_usage_t *r)
{
    if (r == NULL) {
        return;
    }

    if (sft_process_slot >= 0 && sft_process_slot < SFT_MAX_PROCESSES) {
        __atomic_fetch_sub(&r->held[sft_process_slot], 1, __ATOMIC_RELAXED);
    }

    __atomic_fetch_sub(&r->sessions, 1, __ATOMIC_RELEASE);

    if (sft_usage_changed) {
        sft_usage_changed();
    }
}


/* the sessions of other nodes (sft_pgsql_nodes.c) */

void
sft_usage_share(void (*changed)(void))
{
    sft_usage_changed = changed;
}


/* the next user with sessions on this node, from *i on; SFT_DONE: none */

sft_int_t
sft_usage_next(sft_uint_t *i, sft_str_t *name, sft_uint_t *sessions)
{
    uint32_t            n, nused;
    sft_usage_t        *r;
    sft_usage_table_t  *t = sft_usage_table;

    if (t == NULL) {
        return SFT_DONE;
    }

    nused = __atomic_load_n(&t->nused, __ATOMIC_ACQUIRE);

    for ( /* void */ ; *i < nused; (*i)++) {
        r = &t->records[t->used[*i]];
        n = __atomic_load_n(&r->sessions, __ATOMIC_ACQUIRE);

        if (n) {
            (*i)++;
            name->data = r->name;
            name->len = r->len;
            *sessions = n;
            return SFT_OK;
        }
    }

    return SFT_DONE;
}


/*
 * A count of the other nodes' sessions: sft_usage_remote_begin(), the
 * users that have some, then sft_usage_remote_end() zeroes the others.
 * Workers may count at once: a later count is not undone by an older.
 */

uint32_t
sft_usage_remote_begin(void)
{
    if (sft_usage_table == NULL) {
        return 0;
    }

    return __atomic_add_fetch(&sft_usage_table->remote_gen, 1,
                              __ATOMIC_ACQ_REL);
}


void
sft_usage_remote_set(uint32_t gen, sft_str_t *name, sft_uint_t sessions,
    sft_log_t *log)
{
    sft_usage_t  *r;

    r = (sessions && sft_usage_table) ? sft_usage_record(name, log) : NULL;

    if (r == NULL) {
        return;
    }

    __atomic_store_n(&r->remote, (uint32_t) sft_min(sessions, UINT32_MAX),
                     __ATOMIC_RELEASE);
    __atomic_store_n(&r->remote_gen, gen, __ATOMIC_RELEASE);
}


void
sft_usage_remote_end(uint32_t gen)
{
    uint32_t            i, nused;
    sft_usage_t        *r;
    sft_usage_table_t  *t = sft_usage_table;

    if (t == NULL) {
        return;
    }

    nused = __atomic_load_n(&t->nused, __ATOMIC_ACQUIRE);

    for (i = 0; i < nused; i++) {
        r = &t->records[t->used[i]];

        if ((int32_t) (__atomic_load_n(&r->remote_gen, __ATOMIC_ACQUIRE)
                       - gen) < 0)
        {
            __atomic_store_n(&r->remote, 0, __ATOMIC_RELEASE);
        }
    }
}


sft_uint_t
sft_usage_sessions(sft_usage_t *r)
{
    return __atomic_load_n(&r->sessions, __ATOMIC_ACQUIRE);
}


sft_uint_t
sft_usage_known(sft_usage_t *r)
{
    return __atomic_load_n(&r->known, __ATOMIC_ACQUIRE);
}


/* the counted bytes and files; with force over what was known */

static void
sft_usage_store(sft_usage_t *r, off_t bytes, off_t files, sft_uint_t force)
{
    while (__atomic_exchange_n(&r->lock, 1, __ATOMIC_ACQUIRE)) {
        sched_yield();
    }

    if (force || !r->known) {
        __atomic_store_n(&r->bytes, (int64_t) bytes, __ATOMIC_RELAXED);
        __atomic_store_n(&r->files, (int64_t) files, __ATOMIC_RELAXED);
        __atomic_store_n(&r->known, 1, __ATOMIC_RELEASE);
    }

    __atomic_store_n(&r->lock, 0, __ATOMIC_RELEASE);
}


void
sft_usage_set(sft_usage_t *r, off_t bytes, off_t files)
{
    sft_usage_store(r, bytes, files, 0);
}


/* the usage all nodes share says so (sft_usage_lease.c) */

void
sft_usage_replace(sft_usage_t *r, off_t bytes, off_t files)
{
    sft_usage_store(r, bytes, files, 1);
}


/* to be counted again: the next change that needs it counts it */

void
sft_usage_forget(sft_usage_t *r)
{
    __atomic_store_n(&r->known, 0, __ATOMIC_RELEASE);
}


void
sft_usage_name(sft_usage_t *r, sft_str_t *name)
{
    name->data = r->name;
    name->len = r->len;
}


/* SFT_DECLINED while another recount of the record runs */

sft_int_t
sft_usage_recount_begin(sft_usage_t *r)
{
    uint32_t  none = 0, me;

    me = (sft_process_slot >= 0) ? (uint32_t) sft_process_slot + 1
                                 : SFT_MAX_PROCESSES + 1;

    if (__atomic_compare_exchange_n(&r->recount, &none, me, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    {
        return SFT_OK;
    }

    return SFT_DECLINED;
}


/*
 * The count replaces what the sessions kept (with ok); changes made while
 * it ran may be in it or not.
 */

void
sft_usage_recount_end(sft_usage_t *r, sft_uint_t ok, off_t bytes,
    off_t files)
{
    if (ok) {
        sft_usage_store(r, bytes, files, 1);
    }

    __atomic_store_n(&r->recount, 0, __ATOMIC_RELEASE);
}


void
sft_usage_get(sft_usage_t *r, off_t *bytes, off_t *files)
{
    *bytes = (off_t) __atomic_load_n(&r->bytes, __ATOMIC_RELAXED);
    *files = (off_t) __atomic_load_n(&r->files, __ATOMIC_RELAXED);
}


/*
 * adds n to *v unless that passes max (0: no limit); saturates at
 * INT64_MAX and never goes below 0
 */

static sft_int_t
sft_usage_add(int64_t *v, int64_t max, int64_t n)
{
    int64_t  cur, next;

    cur = __atomic_load_n(v, __ATOMIC_RELAXED);

    do {
        if (n > 0 && max && n > max - cur) {
            return SFT_ERROR;
        }

        if (__builtin_add_overflow(cur, n, &next)) {
            next = (n > 0) ? INT64_MAX : 0;
        }

        if (next < 0) {
            next = 0;
        }

    } while (!__atomic_compare_exchange_n(v, &cur, next, 0, __ATOMIC_ACQ_REL,
                                          __ATOMIC_RELAXED));

    return SFT_OK;
}


/*
 * SFT_ERROR: over the quota; SFT_AGAIN: a quota shared with other nodes
 * has no room in this worker's lease now, more is being asked for
 */

sft_int_t
sft_usage_charge(sft_usage_t *r, off_t max_bytes, off_t max_files,
    off_t bytes, off_t files)
{
    sft_int_t  rc;

    rc = sft_usage_lease_charge(r, max_bytes, max_files, bytes, files);

    if (rc != SFT_DECLINED) {
        if (rc == SFT_OK) {
            (void) sft_usage_add(&r->bytes, 0, bytes);
            (void) sft_usage_add(&r->files, 0, files);
        }

        return rc;
    }

    if (bytes && sft_usage_add(&r->bytes, max_bytes, bytes) != SFT_OK) {
        return SFT_ERROR;
    }

    if (files && sft_usage_add(&r->files, max_files, files) != SFT_OK) {
        sft_usage_credit(r, bytes, 0);
        return SFT_ERROR;
    }

    return SFT_OK;
}


void
sft_usage_credit(sft_usage_t *r, off_t bytes, off_t files)
{
    /* a credit is never negative: no -INT64_MIN */

    sft_usage_lease_credit(r, sft_max(bytes, 0), sft_max(files, 0));

    if (bytes > 0) {
        (void) sft_usage_add(&r->bytes, 0, -bytes);
    }

    if (files > 0) {
        (void) sft_usage_add(&r->files, 0, -files);
    }
}
