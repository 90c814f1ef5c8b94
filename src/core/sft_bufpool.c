/*
 * sft_bufpool.c -- the shared-memory pool of transfer chunks: a lock-free
 * Treiber stack shared by all workers, a small cache per process on top,
 * and an eventfd based wait protocol for an empty pool.
 *
 * Design
 *
 * Region layout (all offsets, no pointers, so the layout is position
 * independent; all processes map it at the same address anyway):
 *
 *   sft_bufpool_t       header: configuration, wake fds (read-mostly
 *                       cache line), the stack head and the shared
 *                       count (one line), the waiter count and the
 *                       per-slot waiting flags (their own lines), then
 *                       SFT_BUFPOOL_MAX_PROCS per-slot counter blocks of
 *                       one cache line each
 *   next[nchunks]       _Atomic uint32_t, the stack links
 *   chunks              at data_off, aligned to SFT_BUFPOOL_ALIGN
 *
 * Why a Treiber stack plus a per-process cache.  A stack of indices
 * pushed and popped with one compare-and-swap on a head word needs no
 * lock, so a worker preempted or killed in the middle of an operation
 * can never block the others (a process-shared mutex could, and robust
 * mutexes are slow and complicated).  But every stack operation writes
 * the head's cache line, which would bounce between cores on every
 * get/put.  So each process keeps up to 16 chunks in a private LIFO
 * cache and talks to the stack only in batches of half the cache:
 * refill from the stack when the cache is empty, drain to it when the
 * cache is full.  Most get/put calls then write only private memory and
 * the process's own counter line.  To keep small pools from being
 * starved by the caches, a cache holds at most chunks / (2 * max_procs)
 * chunks (0 disables caching): all caches together hold at most half of
 * the pool, so when a process has to wait, more than half of the
 * chunks it cannot see are really in use, and those go back to the
 * shared list (see below) when released.
 *
 * The ABA tag.  The head is a 64-bit word: low 32 bits the top index,
 * high 32 bits a generation tag incremented by every successful push and
 * pop.  A pop reads head = (A, t) and next[A] = B, then swaps in (B,
 * t + 1).  Without the tag, A could be popped, B popped, A pushed back in
 * between, and the swap would succeed with the stale B (now handed out):
 * a double hand-out.  With the tag the word is (A, t + 3) by then and the
 * swap fails.  An equal head word therefore means "no push or pop at
 * all since it was read", which also makes the batched pop safe: the
 * walk of up to "batch" links from the top is consistent if the swap
 * succeeds, and discarded otherwise.  next[] entries are atomics (read
 * relaxed, possibly stale, by concurrent poppers) and always hold a
 * valid index or NONE, so a stale walk is harmless; chunks are never
 * unmapped.  The tag wraps after 2^32 operations, which a preempted pop
 * would have to sleep through exactly.
 *
 * The wait protocol.  A process whose get found the pool empty (its
 * cache is then empty too) registers in sft_bufpool_wait():
 *
 *     W1  waiters++                      (seq_cst)
 *     W2  waiting[slot] = 1              (seq_cst)
 *     W3  if head != empty: deregister, return 1 (retry now)
 *         else return 0 (sleep on the slot's eventfd)
 *
 * and every push to the shared list (put while someone waits, cache
 * drain, detach) does:
 *
 *     P1  CAS head                       (seq_cst)
 *     P2  if waiters > 0:                (seq_cst)
 *     P3      for each slot: if exchange(waiting[slot], 0) == 1:
 *                 waiters--, write 1 to the slot's eventfd
 *
 * Why no wake-up is lost: all these operations are seq_cst, so they are
 * in one total order.  If W3 comes before P1, then W1 < W2 < W3 < P1 <
 * P2 < P3: P2 sees the waiter (the count only drops after somebody
 * cleared the flag, i.e. after W was woken) and P3 sees the flag and
 * writes the eventfd.  If P1 comes before W3, W3 sees the pushed chunk
 * (or a later state: if somebody popped it meanwhile, the list really is
 * empty and nothing was lost) and returns 1.  So a registered process
 * sleeps only while the shared list is empty, and the first push after
 * its check wakes it.  Everybody waiting is woken (a batch push may
 * satisfy several; the number of workers is small), the woken ones race
 * for the chunks and the losers simply wait again.  Because the
 * increment comes before the flag and the decrement only after clearing
 * it, waiters >= number of set flags at all times.  Spurious wake-ups
 * (a stale eventfd count) are harmless: the caller just retries.
 *
 * No hoarding: while waiters > 0, put sends the chunk and the whole
 * cache straight to the shared list, and a refill takes one chunk only.
 * A put that races with a registration may still go to the cache; the
 * waiter is then woken by the next put to the shared list, which every
 * put after its registration is.
 *
 * Reservations.  Holders that keep chunks long (an S3 upload's parts,
 * which hold a part's chunks until S3 took it) reserve them first, in
 * one counter for all processes: sft_bufpool_reserve() adds n with a
 * compare-and-swap only if the total stays within the caller's max (or
 * nothing is reserved at all: a reservation larger than max goes
 * alone), so whatever the number of workers, the chunks held that way
 * never leave less than the rest of the pool to the transfers that
 * fill them.  Each slot also counts its own reservations, written by
 * its owner only: the master takes a dead process's count back from the
 * total in sft_bufpool_reclaim().  A reservation adds to the total
 * first and to the slot second, a release subtracts from the slot
 * first and the total second, so a process killed between the two
 * steps leaves the total too high by that one reservation, never too
 * low: the cap can only get stricter, never be passed.  A process that
 * was refused registers in sft_bufpool_reserve_wait(), which works as
 * the chunk wait above, with flags and a count of its own and the same
 * wake fd: every release (unreserve, reclaim) is P1 to its W3.
 *
 * Counters: gets, puts, waits and cached live in the slot's own cache
 * line and are written only by the slot's owner (relaxed load + store,
 * no locked instruction); sft_bufpool_stats() sums the slots.  The shared
 * count sits in the head's line and is updated after each batch, so it
 * is exact only when nothing runs concurrently.
 */


#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "sft_bufpool.h"


#if (ATOMIC_INT_LOCK_FREE != 2 || ATOMIC_LONG_LOCK_FREE != 2                 \
     || ATOMIC_LLONG_LOCK_FREE != 2)
#error "sft_bufpool needs lock-free 32 and 64 bit atomics (shared memory)"
#endif


#define SFT_BUFPOOL_MAGIC    0x4c4f4f5046554253ULL      /* "SBUFPOOL" */
#define SFT_BUFPOOL_VERSION  2
#define SFT_BUFPOOL_LINE     64

#define sft_bufpool_align(n, a)   (((n) + ((a) - 1)) & ~((size_t) (a) - 1))

#define sft_head_idx(h)           ((uint32_t) (h))
#define sft_head_tag(h)           ((uint32_t) ((h) >> 32))
#define sft_head_make(idx, tag)                                               \
    (((uint64_t) (uint32_t) (tag) << 32) | (uint32_t) (idx))


struct sft_bufpool_slot_s {
    _Alignas(SFT_BUFPOOL_LINE)
    _Atomic uint64_t     gets;
    _Atomic uint64_t     puts;
    _Atomic uint64_t     waits;
    _Atomic uint32_t     cached;
    _Atomic uint32_t     reserved;
};


struct sft_bufpool_s {
    /* read-mostly: written by init and create/close_wake_fds only */
    uint64_t             magic;
    uint32_t             version;
    uint32_t             nchunks;
    uint64_t             chunk_size;
    uint32_t             chunk_shift;   /* log2(chunk_size) or 0 */
    uint32_t             max_procs;
    uint32_t             cache_max;
    uint32_t             batch;
    uint64_t             next_off;
    uint64_t             owner_off;
    uint64_t             data_off;
    uint64_t             region_size;
    int                  wake_fd[SFT_BUFPOOL_MAX_PROCS];

    /* the Treiber stack */
    _Alignas(SFT_BUFPOOL_LINE)
    _Atomic uint64_t     head;
    _Atomic int64_t      shared;

    /* the wait protocol: read on every put, written on wait/wake only */
    _Alignas(SFT_BUFPOOL_LINE)
    _Atomic uint32_t     waiters;

    _Alignas(SFT_BUFPOOL_LINE)
    _Atomic uint32_t     waiting[SFT_BUFPOOL_MAX_PROCS];

    /* reservations and their wait protocol */
    _Alignas(SFT_BUFPOOL_LINE)
    _Atomic uint64_t     reserved;
    _Atomic uint32_t     reserve_waiters;

    _Alignas(SFT_BUFPOOL_LINE)
    _Atomic uint32_t     reserve_waiting[SFT_BUFPOOL_MAX_PROCS];

    sft_bufpool_slot_t   slot[SFT_BUFPOOL_MAX_PROCS];
};


static size_t sft_bufpool_layout(size_t n, size_t chunk, size_t *next_off,
    size_t *owner_off, size_t *data_off);
static uint32_t sft_bufpool_pop(sft_bufpool_t *pool, uint32_t *out,
    uint32_t want, unsigned slot);
static void sft_bufpool_push(sft_bufpool_t *pool, const uint32_t *idx,
    uint32_t n);
static void sft_bufpool_wake(sft_bufpool_t *pool, _Atomic uint32_t *count,
    _Atomic uint32_t *flags);
static void sft_bufpool_register(_Atomic uint32_t *count,
    _Atomic uint32_t *flag);
static void sft_bufpool_unregister(_Atomic uint32_t *count,
    _Atomic uint32_t *flag);
static void sft_bufpool_flush(sft_bufpool_cache_t *c);


static inline _Atomic uint32_t *
sft_bufpool_next(sft_bufpool_t *pool)
{
    return (_Atomic uint32_t *) ((char *) pool + pool->next_off);
}


/*
 * owner[i] is 1 + the slot holding chunk i (in its cache or in use), or 0
 * while it is on the shared list; it lets the master take back what a
 * worker held when it died (sft_bufpool_reclaim).
 */

static inline _Atomic uint16_t *
sft_bufpool_owner(sft_bufpool_t *pool)
{
    return (_Atomic uint16_t *) ((char *) pool + pool->owner_off);
}


static inline void
sft_bufpool_inc(_Atomic uint64_t *counter)
{
    /* single writer (the slot's owner): no locked instruction needed */

    atomic_store_explicit(counter,
                          atomic_load_explicit(counter, memory_order_relaxed)
                          + 1,
                          memory_order_relaxed);
}


static inline void
sft_bufpool_set_cached(sft_bufpool_cache_t *c)
{
    atomic_store_explicit(&c->slot->cached, c->n, memory_order_relaxed);
}


static size_t
sft_bufpool_layout(size_t n, size_t chunk, size_t *next_off,
    size_t *owner_off, size_t *data_off)
{
    size_t  noff, ooff, doff;

    noff = sft_bufpool_align(sizeof(sft_bufpool_t), SFT_BUFPOOL_LINE);

    if (n > (SIZE_MAX - noff - 2 * SFT_BUFPOOL_ALIGN)
            / (sizeof(uint32_t) + sizeof(uint16_t)))
    {
        return 0;
    }

    ooff = sft_bufpool_align(noff + n * sizeof(uint32_t), SFT_BUFPOOL_LINE);
    doff = sft_bufpool_align(ooff + n * sizeof(uint16_t), SFT_BUFPOOL_ALIGN);

    if (n > (SIZE_MAX - doff) / chunk) {
        return 0;
    }

    if (next_off) {
        *next_off = noff;
        *owner_off = ooff;
        *data_off = doff;
    }

    return doff + n * chunk;
}


size_t
sft_bufpool_region_size(size_t pool_bytes, size_t chunk_bytes)
{
    size_t  n, size;

    if (chunk_bytes == 0 || chunk_bytes % SFT_BUFPOOL_ALIGN != 0) {
        errno = EINVAL;
        return 0;
    }

    n = pool_bytes / chunk_bytes;

    if (n < 2 || (uint64_t) n >= SFT_BUFPOOL_NONE) {
        errno = EINVAL;
        return 0;
    }

    size = sft_bufpool_layout(n, chunk_bytes, NULL, NULL, NULL);
    if (size == 0) {
        errno = EINVAL;
    }

    return size;
}


sft_bufpool_t *
sft_bufpool_init(void *region, size_t region_size, size_t chunk_bytes,
    unsigned max_procs)
{
    size_t             n, size, min, noff, ooff, doff;
    uint32_t           i, cache;
    sft_bufpool_t     *pool;
    _Atomic uint32_t  *next;

    if (region == NULL
        || (uintptr_t) region % SFT_BUFPOOL_ALIGN != 0
        || chunk_bytes == 0
        || chunk_bytes % SFT_BUFPOOL_ALIGN != 0
        || max_procs == 0
        || max_procs > SFT_BUFPOOL_MAX_PROCS)
    {
        errno = EINVAL;
        return NULL;
    }

    min = sft_bufpool_layout(0, chunk_bytes, NULL, NULL, NULL);
    if (region_size < min) {
        errno = EINVAL;
        return NULL;
    }

    /*
     * The largest n whose layout fits; the first guess ignores the
     * next[] array, each step down frees at least 4096 bytes of chunk
     * memory for at most 4 bytes of next[], so this converges quickly.
     */

    n = (region_size - min) / chunk_bytes;
    if ((uint64_t) n >= SFT_BUFPOOL_NONE) {
        n = SFT_BUFPOOL_NONE - 1;
    }

    for ( ;; ) {
        if (n < 2) {
            errno = EINVAL;
            return NULL;
        }

        size = sft_bufpool_layout(n, chunk_bytes, &noff, &ooff, &doff);
        if (size != 0 && size <= region_size) {
            break;
        }

        n--;
    }

    pool = region;
    memset(pool, 0, sizeof(sft_bufpool_t));

    pool->magic = SFT_BUFPOOL_MAGIC;
    pool->version = SFT_BUFPOOL_VERSION;
    pool->nchunks = (uint32_t) n;
    pool->chunk_size = chunk_bytes;
    pool->chunk_shift = 0;

    if ((chunk_bytes & (chunk_bytes - 1)) == 0) {
        pool->chunk_shift = (uint32_t) __builtin_ctzll(chunk_bytes);
    }

    pool->max_procs = max_procs;

    cache = (uint32_t) (n / (2 * (size_t) max_procs));
    if (cache > SFT_BUFPOOL_CACHE_MAX) {
        cache = SFT_BUFPOOL_CACHE_MAX;
    }

    pool->cache_max = cache;
    pool->batch = (cache / 2 > 1) ? cache / 2 : 1;
    pool->next_off = noff;
    pool->owner_off = ooff;
    pool->data_off = doff;
    pool->region_size = region_size;

    for (i = 0; i < SFT_BUFPOOL_MAX_PROCS; i++) {
        pool->wake_fd[i] = -1;
        atomic_init(&pool->waiting[i], 0);
        atomic_init(&pool->reserve_waiting[i], 0);
        atomic_init(&pool->slot[i].gets, 0);
        atomic_init(&pool->slot[i].puts, 0);
        atomic_init(&pool->slot[i].waits, 0);
        atomic_init(&pool->slot[i].cached, 0);
        atomic_init(&pool->slot[i].reserved, 0);
    }

    next = sft_bufpool_next(pool);

    for (i = 0; i < n; i++) {
        atomic_init(&next[i], (i + 1 < n) ? i + 1 : SFT_BUFPOOL_NONE);
        atomic_init(&sft_bufpool_owner(pool)[i], 0);
    }

    atomic_init(&pool->waiters, 0);
    atomic_init(&pool->reserved, 0);
    atomic_init(&pool->reserve_waiters, 0);
    atomic_init(&pool->shared, (int64_t) n);
    atomic_init(&pool->head, sft_head_make(0, 0));

    atomic_thread_fence(memory_order_seq_cst);

    return pool;
}


int
sft_bufpool_create_wake_fds(sft_bufpool_t *pool)
{
    int       fd, err;
    unsigned  i, j;

    for (i = 0; i < pool->max_procs; i++) {
        if (pool->wake_fd[i] != -1) {
            continue;
        }

        fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

        if (fd == -1) {
            err = errno;

            for (j = 0; j < i; j++) {
                if (pool->wake_fd[j] != -1) {
                    (void) close(pool->wake_fd[j]);
                    pool->wake_fd[j] = -1;
                }
            }

            errno = err;
            return -1;
        }

        pool->wake_fd[i] = fd;
    }

    return 0;
}


void
sft_bufpool_close_wake_fds(sft_bufpool_t *pool)
{
    unsigned  i;

    for (i = 0; i < pool->max_procs; i++) {
        if (pool->wake_fd[i] != -1) {
            (void) close(pool->wake_fd[i]);
            pool->wake_fd[i] = -1;
        }
    }
}


int
sft_bufpool_attach(sft_bufpool_t *pool, sft_bufpool_cache_t *c,
    unsigned slot)
{
    if (pool == NULL || c == NULL || pool->magic != SFT_BUFPOOL_MAGIC
        || pool->version != SFT_BUFPOOL_VERSION || slot >= pool->max_procs)
    {
        errno = EINVAL;
        return -1;
    }

    c->pool = pool;
    c->slot = &pool->slot[slot];
    c->slot_no = slot;
    c->n = 0;
    c->max = pool->cache_max;
    c->batch = pool->batch;

    /*
     * A previous owner of the slot that died without detaching: drop its
     * registration and a pending wake-up; its cached chunks are lost.
     */

    sft_bufpool_woken(c);
    sft_bufpool_set_cached(c);

    return 0;
}


void
sft_bufpool_detach(sft_bufpool_cache_t *c)
{
    if (c->pool == NULL) {
        return;
    }

    sft_bufpool_cancel_wait(c);

    if (c->n > 0) {
        sft_bufpool_flush(c);
    }

    c->pool = NULL;
    c->slot = NULL;
}


void *
sft_bufpool_get(sft_bufpool_cache_t *c)
{
    uint32_t        idx, want;
    sft_bufpool_t  *pool;

    pool = c->pool;

    if (c->n == 0) {
        want = c->batch;

        /* do not hoard while others wait */

        if (want > 1
            && atomic_load_explicit(&pool->waiters, memory_order_relaxed) > 0)
        {
            want = 1;
        }

        c->n = sft_bufpool_pop(pool, c->idx, want, c->slot_no);

        if (c->n == 0) {
            return NULL;
        }
    }

    idx = c->idx[--c->n];

    sft_bufpool_inc(&c->slot->gets);
    sft_bufpool_set_cached(c);

    return (char *) pool + pool->data_off + (size_t) idx * pool->chunk_size;
}


void
sft_bufpool_put(sft_bufpool_cache_t *c, void *chunk)
{
    uint32_t        idx;
    sft_bufpool_t  *pool;

    pool = c->pool;

    idx = sft_bufpool_index(pool, chunk);

    if (idx == SFT_BUFPOOL_NONE || sft_bufpool_chunk(pool, idx) != chunk) {
        abort();
    }

    sft_bufpool_inc(&c->slot->puts);

    /* a chunk got from another process now belongs to this one */
    atomic_store_explicit(&sft_bufpool_owner(pool)[idx],
                          (uint16_t) (c->slot_no + 1), memory_order_relaxed);

    c->idx[c->n++] = idx;

    if (atomic_load_explicit(&pool->waiters, memory_order_relaxed) > 0) {
        /* somebody waits: give back everything */
        sft_bufpool_flush(c);
        return;
    }

    if (c->n > c->max) {
        /* the cache is full: drain the oldest half */

        sft_bufpool_push(pool, c->idx, c->batch);

        c->n -= c->batch;
        memmove(c->idx, c->idx + c->batch, c->n * sizeof(uint32_t));
    }

    sft_bufpool_set_cached(c);
}


static void
sft_bufpool_flush(sft_bufpool_cache_t *c)
{
    sft_bufpool_push(c->pool, c->idx, c->n);

    c->n = 0;
    sft_bufpool_set_cached(c);
}


int
sft_bufpool_wait(sft_bufpool_cache_t *c)
{
    sft_bufpool_t  *pool;

    pool = c->pool;

    if (c->n > 0) {
        return 1;
    }

    sft_bufpool_register(&pool->waiters, &pool->waiting[c->slot_no]);

    /* re-check after registering: see "no lost wake-up" above */

    if (sft_head_idx(atomic_load(&pool->head)) != SFT_BUFPOOL_NONE) {
        sft_bufpool_cancel_wait(c);
        return 1;
    }

    sft_bufpool_inc(&c->slot->waits);

    return 0;
}


void
sft_bufpool_cancel_wait(sft_bufpool_cache_t *c)
{
    sft_bufpool_unregister(&c->pool->waiters, &c->pool->waiting[c->slot_no]);
}


int
sft_bufpool_reserve(sft_bufpool_cache_t *c, uint32_t n, uint32_t max)
{
    uint64_t        old;
    sft_bufpool_t  *pool;

    pool = c->pool;
    old = atomic_load(&pool->reserved);

    do {
        if (old != 0 && (n > max || old > max - n)) {
            return 0;
        }

    } while (!atomic_compare_exchange_weak(&pool->reserved, &old, old + n));

    /* the total first: a crash in between leaves it too high, see above */

    atomic_store_explicit(&c->slot->reserved,
                          atomic_load_explicit(&c->slot->reserved,
                                               memory_order_relaxed)
                          + n,
                          memory_order_relaxed);

    return 1;
}


void
sft_bufpool_unreserve(sft_bufpool_cache_t *c, uint32_t n)
{
    uint32_t        mine;
    sft_bufpool_t  *pool;

    pool = c->pool;
    mine = atomic_load_explicit(&c->slot->reserved, memory_order_relaxed);

    if (n > mine) {
        abort();
    }

    atomic_store_explicit(&c->slot->reserved, mine - n, memory_order_relaxed);
    atomic_fetch_sub(&pool->reserved, n);

    sft_bufpool_wake(pool, &pool->reserve_waiters, pool->reserve_waiting);
}


int
sft_bufpool_reserve_wait(sft_bufpool_cache_t *c, uint32_t n, uint32_t max)
{
    sft_bufpool_t  *pool;

    pool = c->pool;

    sft_bufpool_register(&pool->reserve_waiters,
                         &pool->reserve_waiting[c->slot_no]);

    /* re-check after registering, as in sft_bufpool_wait() */

    return sft_bufpool_reserve(c, n, max);
}


void
sft_bufpool_cancel_reserve_wait(sft_bufpool_cache_t *c)
{
    sft_bufpool_unregister(&c->pool->reserve_waiters,
                           &c->pool->reserve_waiting[c->slot_no]);
}


/*
 * Only the owner sets a flag, others only clear it; the count goes up
 * before the flag is set and down after it was cleared, so the count is
 * never below the flags set.
 */

static void
sft_bufpool_register(_Atomic uint32_t *count, _Atomic uint32_t *flag)
{
    if (atomic_load(flag) == 0) {
        atomic_fetch_add(count, 1);
        atomic_store(flag, 1);
    }
}


static void
sft_bufpool_unregister(_Atomic uint32_t *count, _Atomic uint32_t *flag)
{
    if (atomic_exchange(flag, 0) == 1) {
        atomic_fetch_sub(count, 1);
    }
}


int
sft_bufpool_wake_fd(sft_bufpool_cache_t *c)
{
    return c->pool->wake_fd[c->slot_no];
}


void
sft_bufpool_woken(sft_bufpool_cache_t *c)
{
    int       fd;
    uint64_t  v;
    ssize_t   n;

    fd = c->pool->wake_fd[c->slot_no];

    if (fd != -1) {
        do {
            n = read(fd, &v, sizeof(uint64_t));
        } while (n == -1 && errno == EINTR);
    }

    sft_bufpool_cancel_wait(c);
    sft_bufpool_cancel_reserve_wait(c);
}


uint32_t
sft_bufpool_index(sft_bufpool_t *pool, const void *p)
{
    uint64_t   idx;
    uintptr_t  base, a;

    base = (uintptr_t) pool + pool->data_off;
    a = (uintptr_t) p;

    if (a < base) {
        return SFT_BUFPOOL_NONE;
    }

    if (pool->chunk_shift) {
        idx = (a - base) >> pool->chunk_shift;

    } else {
        idx = (a - base) / pool->chunk_size;
    }

    if (idx >= pool->nchunks) {
        return SFT_BUFPOOL_NONE;
    }

    return (uint32_t) idx;
}


void *
sft_bufpool_chunk(sft_bufpool_t *pool, uint32_t idx)
{
    if (idx >= pool->nchunks) {
        return NULL;
    }

    return (char *) pool + pool->data_off + (size_t) idx * pool->chunk_size;
}


size_t
sft_bufpool_chunk_size(sft_bufpool_t *pool)
{
    return pool->chunk_size;
}


void
sft_bufpool_stats(sft_bufpool_t *pool, sft_bufpool_stats_t *st)
{
    int64_t              shared;
    uint64_t             cached;
    unsigned             i;
    sft_bufpool_slot_t  *s;

    memset(st, 0, sizeof(sft_bufpool_stats_t));

    st->total = pool->nchunks;

    cached = 0;

    for (i = 0; i < pool->max_procs; i++) {
        s = &pool->slot[i];

        st->gets += atomic_load_explicit(&s->gets, memory_order_relaxed);
        st->puts += atomic_load_explicit(&s->puts, memory_order_relaxed);
        st->waits += atomic_load_explicit(&s->waits, memory_order_relaxed);
        cached += atomic_load_explicit(&s->cached, memory_order_relaxed);
    }

    shared = atomic_load_explicit(&pool->shared, memory_order_relaxed);

    /* concurrent updates may be seen half done: clamp */

    if (shared < 0) {
        shared = 0;
    }

    st->shared = ((uint64_t) shared > st->total) ? st->total
                                                 : (uint64_t) shared;
    st->cached = (cached > st->total) ? st->total : cached;
    st->free = st->shared + st->cached;

    if (st->free > st->total) {
        st->free = st->total;
    }

    st->waiters = atomic_load(&pool->waiters);
    st->reserved = atomic_load(&pool->reserved);
    st->reserve_waiters = atomic_load(&pool->reserve_waiters);
}


/*
 * In the master, after the process in "slot" has died: every chunk it held,
 * cached or in use, goes back to the shared list, and what it reserved
 * leaves the total.  The dead process cannot race; a chunk it gave to
 * another process was re-owned by that put.
 */

uint32_t
sft_bufpool_reclaim(sft_bufpool_t *pool, unsigned slot)
{
    uint32_t           i, n, total, cached, reserved, batch[64];
    _Atomic uint16_t  *owner;

    if (slot >= pool->max_procs) {
        return 0;
    }

    owner = sft_bufpool_owner(pool);
    total = 0;
    n = 0;

    for (i = 0; i < pool->nchunks; i++) {
        if (atomic_load_explicit(&owner[i], memory_order_relaxed)
            != slot + 1)
        {
            continue;
        }

        batch[n++] = i;

        if (n == sizeof(batch) / sizeof(batch[0])) {
            sft_bufpool_push(pool, batch, n);
            total += n;
            n = 0;
        }
    }

    if (n) {
        sft_bufpool_push(pool, batch, n);
        total += n;
    }

    /* the counters: what was in use counts as put back */

    cached = atomic_load_explicit(&pool->slot[slot].cached,
                                  memory_order_relaxed);

    atomic_store_explicit(&pool->slot[slot].puts,
                          atomic_load_explicit(&pool->slot[slot].puts,
                                               memory_order_relaxed)
                          + (total > cached ? total - cached : 0),
                          memory_order_relaxed);
    atomic_store_explicit(&pool->slot[slot].cached, 0, memory_order_relaxed);

    /* the waits the dead process registered are dropped with the count */

    sft_bufpool_unregister(&pool->waiters, &pool->waiting[slot]);
    sft_bufpool_unregister(&pool->reserve_waiters,
                           &pool->reserve_waiting[slot]);

    /* and its reservations, whose release wakes who waits for them */

    reserved = atomic_exchange(&pool->slot[slot].reserved, 0);

    if (reserved) {
        atomic_fetch_sub(&pool->reserved, reserved);
        sft_bufpool_wake(pool, &pool->reserve_waiters, pool->reserve_waiting);
    }

    return total;
}


size_t
sft_bufpool_free_list(sft_bufpool_t *pool, uint32_t *out, size_t max)
{
    size_t             n;
    uint32_t           i;
    _Atomic uint32_t  *next;

    next = sft_bufpool_next(pool);
    i = sft_head_idx(atomic_load(&pool->head));
    n = 0;

    while (i != SFT_BUFPOOL_NONE) {
        if (n == max) {
            return max + 1;
        }

        out[n++] = i;

        if (i >= pool->nchunks) {
            break;
        }

        i = atomic_load_explicit(&next[i], memory_order_relaxed);
    }

    return n;
}


static uint32_t
sft_bufpool_pop(sft_bufpool_t *pool, uint32_t *out, uint32_t want,
    unsigned slot)
{
    uint32_t           n, i;
    uint64_t           old, new;
    _Atomic uint32_t  *next;

    next = sft_bufpool_next(pool);
    old = atomic_load_explicit(&pool->head, memory_order_acquire);

    for ( ;; ) {
        i = sft_head_idx(old);

        if (i == SFT_BUFPOOL_NONE) {
            return 0;
        }

        /*
         * Walk up to "want" links; the links may be stale if the head
         * moves meanwhile, then the swap below fails and all is redone.
         */

        n = 0;

        do {
            out[n++] = i;
            i = atomic_load_explicit(&next[i], memory_order_relaxed);
        } while (n < want && i < pool->nchunks);

        if (i != SFT_BUFPOOL_NONE && i >= pool->nchunks) {
            /* cannot happen for a consistent walk: retry */
            old = atomic_load_explicit(&pool->head, memory_order_acquire);
            continue;
        }

        new = sft_head_make(i, sft_head_tag(old) + 1);

        if (atomic_compare_exchange_weak_explicit(&pool->head, &old, new,
                                                  memory_order_seq_cst,
                                                  memory_order_acquire))
        {
            break;
        }
    }

    atomic_fetch_sub_explicit(&pool->shared, n, memory_order_relaxed);

    for (i = 0; i < n; i++) {
        atomic_store_explicit(&sft_bufpool_owner(pool)[out[i]],
                              (uint16_t) (slot + 1), memory_order_relaxed);
    }

    return n;
}


static void
sft_bufpool_push(sft_bufpool_t *pool, const uint32_t *idx, uint32_t n)
{
    uint32_t           i, last;
    uint64_t           old, new;
    _Atomic uint32_t  *next;

    next = sft_bufpool_next(pool);

    /* link the batch privately: these chunks are not on the list yet */

    for (i = 0; i < n; i++) {
        atomic_store_explicit(&sft_bufpool_owner(pool)[idx[i]], 0,
                              memory_order_relaxed);
    }

    for (i = 0; i + 1 < n; i++) {
        atomic_store_explicit(&next[idx[i]], idx[i + 1], memory_order_relaxed);
    }

    last = idx[n - 1];
    old = atomic_load_explicit(&pool->head, memory_order_relaxed);

    do {
        atomic_store_explicit(&next[last], sft_head_idx(old),
                              memory_order_relaxed);
        new = sft_head_make(idx[0], sft_head_tag(old) + 1);

    } while (!atomic_compare_exchange_weak_explicit(&pool->head, &old, new,
                                                    memory_order_seq_cst,
                                                    memory_order_relaxed));

    atomic_fetch_add_explicit(&pool->shared, n, memory_order_relaxed);

    sft_bufpool_wake(pool, &pool->waiters, pool->waiting);
}


/* the processes registered in flags (count of them) are woken */

static void
sft_bufpool_wake(sft_bufpool_t *pool, _Atomic uint32_t *count,
    _Atomic uint32_t *flags)
{
    int       fd;
    ssize_t   n;
    unsigned  i;
    uint64_t  one;

    if (atomic_load(count) == 0) {
        return;
    }

    one = 1;

    for (i = 0; i < pool->max_procs; i++) {

        /* seq_cst load (a plain load on x86): must see W2, see above */

        if (atomic_load(&flags[i]) == 0) {
            continue;
        }

        if (atomic_exchange(&flags[i], 0) == 0) {
            continue;
        }

        atomic_fetch_sub(count, 1);

        fd = pool->wake_fd[i];

        if (fd != -1) {
            do {
                n = write(fd, &one, sizeof(uint64_t));
            } while (n == -1 && errno == EINTR);
        }
    }
}
