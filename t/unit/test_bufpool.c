/*
 * test_bufpool.c -- unit tests and a multi-process stress test of the
 * shared-memory buffer pool (src/core/sft_bufpool.c); prints TAP.
 *
 *   cc -Isrc/core t/unit/test_bufpool.c src/core/sft_bufpool.c \
 *       -o /tmp/test_bufpool && /tmp/test_bufpool [iterations]
 */

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "sft_bufpool.h"


#define T_PLAN         64

#define T_CHUNK        4096
#define T_UNIT_CHUNKS  64            /* single-process tests */
#define T_NCHUNKS      29            /* stress: smallest deadlock-free */
#define T_NPROCS       4
#define T_ITERS        200000
#define T_MAXREQ       8
#define T_DRAWS        3             /* request size: max of 3 draws */
#define T_TIME_LIMIT   60
#define T_HOLD_EVERY   8             /* 1 in 8 iterations ... */
#define T_HOLD_US      20            /* ... holds its chunks 20 us */
#define T_WAIT_MS      1000          /* a wait this long is suspicious */
#define T_GRACE_MS     500           /* for a wake-up still in flight */
#define T_RACE_ROUNDS  30000

/* deadlock freedom: all processes may wait holding T_MAXREQ - 1 each */
_Static_assert(T_NCHUNKS > T_NPROCS * (T_MAXREQ - 1), "pool too small");


typedef struct {
    uint64_t  iters;
    uint64_t  gets;
    uint64_t  puts;
    uint64_t  retries;       /* sft_bufpool_wait() returned 1 */
    uint64_t  sleeps;        /* sft_bufpool_wait() returned 0 */
    uint64_t  timeouts;      /* no wake-up within T_WAIT_MS */
    uint64_t  late;          /* ... but it came within T_GRACE_MS more */
    uint64_t  lost;          /* ... chunks were free and nobody woke us */
    uint64_t  doubles;       /* held bit already set on get */
    uint64_t  overwrites;    /* stamp changed while held */
    uint64_t  bad_clear;     /* held bit not set on put */
    uint64_t  errors;        /* anything else */
} t_result_t;


typedef struct {
    _Atomic uint64_t  held[(T_NCHUNKS + 63) / 64];
    t_result_t        res[T_NPROCS];
} t_shared_t;


static unsigned        t_n;
static unsigned        t_failed;
static pid_t           t_pids[T_NPROCS];
static volatile int    t_timed_out;


static void
t_ok(int cond, const char *fmt, ...)
{
    va_list  args;

    t_n++;

    if (!cond) {
        t_failed++;
    }

    printf("%sok %u - ", cond ? "" : "not ", t_n);

    va_start(args, fmt);
    vprintf(fmt, args);
    va_end(args);

    printf("\n");
    fflush(stdout);
}


static double
t_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


static void *
t_map(size_t size)
{
    void  *p;

    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
             -1, 0);

    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }

    return p;
}


static int
t_readable(int fd, int ms)
{
    struct pollfd  pfd;

    pfd.fd = fd;
    pfd.events = POLLIN;
    pfd.revents = 0;

    return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}


/* every index below total exactly once on the shared free list */

static int
t_free_list_ok(sft_bufpool_t *pool, uint64_t total)
{
    int        ok;
    size_t     n, i;
    uint8_t   *seen;
    uint32_t  *idx;

    idx = calloc(total + 1, sizeof(uint32_t));
    seen = calloc(total, 1);

    if (idx == NULL || seen == NULL) {
        exit(2);
    }

    n = sft_bufpool_free_list(pool, idx, total);
    ok = (n == total);

    for (i = 0; ok && i < n; i++) {
        if (idx[i] >= total || seen[idx[i]]++) {
            ok = 0;
        }
    }

    free(idx);
    free(seen);

    return ok;
}


static int
t_init_fails(void *region, size_t size, size_t chunk, unsigned procs)
{
    errno = 0;

    return sft_bufpool_init(region, size, chunk, procs) == NULL
           && errno == EINVAL;
}


/*
 * A worker killed while it holds chunks (some in use, some cached) and
 * while registered as waiting: the master's reclaim returns every one.
 */

static void
t_reclaim(void)
{
    int                  status;
    pid_t                pid;
    size_t               size;
    uint32_t             got;
    void                *region, *chunk;
    sft_bufpool_t       *pool;
    sft_bufpool_stats_t  st;
    sft_bufpool_cache_t  c;

    size = sft_bufpool_region_size(64 * 4096, 4096);
    region = t_map(size);
    pool = sft_bufpool_init(region, size, 4096, 2);

    pid = fork();

    if (pid == 0) {
        if (sft_bufpool_attach(pool, &c, 1) != 0) {
            _exit(2);
        }

        /* take everything, put a few back into the cache, then wait */

        while ((chunk = sft_bufpool_get(&c)) != NULL) {
            memset(chunk, 0x5a, 64);
        }

        (void) sft_bufpool_wait(&c);

        kill(getpid(), SIGKILL);
        _exit(3);
    }

    waitpid(pid, &status, 0);

    t_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
         "reclaim: the holder was killed");

    sft_bufpool_stats(pool, &st);
    t_ok(st.shared == 0, "reclaim: its chunks are gone from the list");

    got = sft_bufpool_reclaim(pool, 1);
    sft_bufpool_stats(pool, &st);

    t_ok(got == 64 && st.free == 64 && st.waiters == 0,
         "reclaim: all 64 chunks back, no waiter left (got %u)",
         (unsigned) got);
    t_ok(t_free_list_ok(pool, 64) && sft_bufpool_reclaim(pool, 1) == 0,
         "reclaim: each chunk once on the list, nothing twice");

    munmap(region, size);
}


/*
 * Reservations: one cap for the holders of all slots, a reservation
 * above the cap only alone, a refused slot woken by a release in
 * another, and a holder killed with a reservation (and a registered
 * wait for one): the master's reclaim gives it back and wakes the slot
 * that waits.
 */

static void
t_reserve(void)
{
    int                  status, ok;
    pid_t                pid;
    size_t               size;
    void                *region;
    sft_bufpool_t       *pool;
    sft_bufpool_stats_t  st;
    sft_bufpool_cache_t  a, b, c;

    size = sft_bufpool_region_size(64 * 4096, 4096);
    region = t_map(size);
    pool = sft_bufpool_init(region, size, 4096, 3);

    if (pool == NULL || sft_bufpool_create_wake_fds(pool) != 0
        || sft_bufpool_attach(pool, &a, 0) != 0
        || sft_bufpool_attach(pool, &b, 1) != 0)
    {
        exit(2);
    }

    ok = sft_bufpool_reserve(&a, 20, 56) && sft_bufpool_reserve(&b, 20, 56)
         && !sft_bufpool_reserve(&a, 20, 56)
         && sft_bufpool_reserve(&a, 16, 56);
    sft_bufpool_stats(pool, &st);

    t_ok(ok && st.reserved == 56,
         "reserve: two slots together up to the cap, not past it (%llu)",
         (unsigned long long) st.reserved);

    ok = sft_bufpool_reserve_wait(&b, 20, 56) == 0
         && !t_readable(sft_bufpool_wake_fd(&b), 0);
    sft_bufpool_stats(pool, &st);

    t_ok(ok && st.reserve_waiters == 1 && st.waiters == 0,
         "reserve: a refused slot registers as waiting, not woken yet");

    sft_bufpool_unreserve(&a, 16);
    sft_bufpool_stats(pool, &st);

    t_ok(t_readable(sft_bufpool_wake_fd(&b), 0)
         && !t_readable(sft_bufpool_wake_fd(&a), 0)
         && st.reserve_waiters == 0 && st.reserved == 40,
         "reserve: a release in another slot wakes it");

    sft_bufpool_woken(&b);
    sft_bufpool_unreserve(&a, 20);
    sft_bufpool_unreserve(&b, 20);

    ok = sft_bufpool_reserve(&a, 60, 56) && !sft_bufpool_reserve(&b, 1, 56);
    sft_bufpool_unreserve(&a, 60);
    sft_bufpool_stats(pool, &st);

    t_ok(ok && st.reserved == 0,
         "reserve: past the cap only alone, then nothing else");

    /* a holder killed with a reservation and a wait registered */

    t_ok(sft_bufpool_reserve(&a, 40, 56), "reserve: the survivor holds 40");

    pid = fork();

    if (pid == 0) {
        if (sft_bufpool_attach(pool, &c, 2) != 0
            || !sft_bufpool_reserve(&c, 16, 56)
            || sft_bufpool_reserve_wait(&c, 16, 56) != 0)
        {
            _exit(2);
        }

        kill(getpid(), SIGKILL);
        _exit(3);
    }

    waitpid(pid, &status, 0);

    ok = sft_bufpool_reserve_wait(&a, 10, 56) == 0;
    sft_bufpool_stats(pool, &st);

    t_ok(WIFSIGNALED(status) && ok && st.reserved == 56
         && st.reserve_waiters == 2,
         "reserve: the killed holder's 16 are still counted");

    (void) sft_bufpool_reclaim(pool, 2);
    sft_bufpool_stats(pool, &st);

    t_ok(st.reserved == 40 && st.reserve_waiters == 0,
         "reserve: reclaim takes them back and its wait (%llu, %llu)",
         (unsigned long long) st.reserved,
         (unsigned long long) st.reserve_waiters);

    t_ok(t_readable(sft_bufpool_wake_fd(&a), 0)
         && sft_bufpool_reserve(&a, 10, 56),
         "reserve: the reclaim wakes the slot that waits, it reserves");

    sft_bufpool_woken(&a);
    sft_bufpool_unreserve(&a, 50);
    sft_bufpool_detach(&a);
    sft_bufpool_detach(&b);
    sft_bufpool_close_wake_fds(pool);
    munmap(region, size);
}


static void
t_single(void)
{
    int                   fd, distinct, rt;
    char                 *region, *p;
    void                 *chunks[T_UNIT_CHUNKS + 1];
    size_t                size, size2;
    uint32_t              i, j, idx;
    sft_bufpool_t        *pool;
    sft_bufpool_cache_t   c;
    sft_bufpool_stats_t   st;

    /* argument checks */

    errno = 0;
    t_ok(sft_bufpool_region_size(64 * 4096, 1000) == 0 && errno == EINVAL,
         "region_size: chunk not a multiple of 4096 is EINVAL");

    errno = 0;
    t_ok(sft_bufpool_region_size(4096 * 3, 4096 * 2) == 0 && errno == EINVAL,
         "region_size: fewer than 2 chunks is EINVAL");

    size = sft_bufpool_region_size(T_UNIT_CHUNKS * T_CHUNK, T_CHUNK);
    size2 = sft_bufpool_region_size(2 * T_CHUNK, T_CHUNK);
    t_ok(size >= T_UNIT_CHUNKS * T_CHUNK + 4096 && size % 4096 == 0
         && size2 != 0, "region_size: %zu bytes for 64 chunks", size);

    region = t_map(size);

    t_ok(t_init_fails(NULL, size, T_CHUNK, 4)
         && t_init_fails(region + 64, size - 64, T_CHUNK, 4)
         && t_init_fails(region, size, 0, 4)
         && t_init_fails(region, size, 6000, 4),
         "init: NULL/misaligned region, bad chunk size are EINVAL");

    t_ok(t_init_fails(region, size, T_CHUNK, 0)
         && t_init_fails(region, size, T_CHUNK, SFT_BUFPOOL_MAX_PROCS + 1),
         "init: max_procs 0 and > SFT_BUFPOOL_MAX_PROCS are EINVAL");

    t_ok(t_init_fails(region, size2 - T_CHUNK, T_CHUNK, 4)
         && t_init_fails(region, 100, T_CHUNK, 4),
         "init: region for fewer than 2 chunks is EINVAL");

    pool = sft_bufpool_init(region, size, T_CHUNK, 4);
    sft_bufpool_stats(pool, &st);

    t_ok(pool == (sft_bufpool_t *) region && st.total == T_UNIT_CHUNKS
         && st.free == T_UNIT_CHUNKS && st.shared == T_UNIT_CHUNKS
         && st.cached == 0 && st.gets == 0 && st.puts == 0 && st.waits == 0
         && st.waiters == 0,
         "init: 64 chunks, all free");

    t_ok(sft_bufpool_chunk_size(pool) == T_CHUNK, "chunk_size");

    t_ok(sft_bufpool_create_wake_fds(pool) == 0, "create_wake_fds");

    errno = 0;
    t_ok(sft_bufpool_attach(pool, &c, 4) == -1 && errno == EINVAL
         && sft_bufpool_attach(pool, &c, 0) == 0,
         "attach: slot >= max_procs fails, slot 0 works");

    fd = sft_bufpool_wake_fd(&c);
    t_ok(fd >= 0 && !t_readable(fd, 0), "wake fd exists, not readable");

    /* first get refills a batch of 4 (cache of 64 / (2 * 4) = 8) */

    chunks[0] = sft_bufpool_get(&c);
    sft_bufpool_stats(pool, &st);

    t_ok(chunks[0] != NULL && st.shared == T_UNIT_CHUNKS - 4 && st.cached == 3
         && st.free == T_UNIT_CHUNKS - 1 && st.gets == 1,
         "get: batch refill, cached chunks count as free");

    /* get until empty */

    for (i = 1; i <= T_UNIT_CHUNKS; i++) {
        chunks[i] = sft_bufpool_get(&c);
        if (chunks[i] == NULL) {
            break;
        }
    }

    t_ok(i == T_UNIT_CHUNKS && sft_bufpool_get(&c) == NULL,
         "get until empty: %u chunks, then NULL", i);

    distinct = 1;
    rt = 1;

    for (i = 0; i < T_UNIT_CHUNKS; i++) {
        p = chunks[i];

        if ((uintptr_t) p % 4096 != 0 || p < region
            || p + T_CHUNK > region + size)
        {
            rt = 0;
        }

        idx = sft_bufpool_index(pool, p);

        if (idx >= T_UNIT_CHUNKS || sft_bufpool_chunk(pool, idx) != p
            || sft_bufpool_index(pool, p + T_CHUNK - 1) != idx)
        {
            rt = 0;
        }

        for (j = 0; j < i; j++) {
            if (chunks[j] == p) {
                distinct = 0;
            }
        }

        memset(p, 0xa5, T_CHUNK);
    }

    t_ok(distinct, "all chunks distinct");
    t_ok(rt, "chunks aligned, inside region, index/chunk round trip");

    t_ok(sft_bufpool_index(pool, region) == SFT_BUFPOOL_NONE
         && sft_bufpool_index(pool, region + size) == SFT_BUFPOOL_NONE
         && sft_bufpool_chunk(pool, T_UNIT_CHUNKS) == NULL
         && sft_bufpool_chunk(pool, 0) != NULL,
         "index/chunk out of range");

    sft_bufpool_stats(pool, &st);
    t_ok(st.free == 0 && st.shared == 0 && st.cached == 0
         && st.gets == T_UNIT_CHUNKS && st.puts == 0,
         "stats when empty: free 0, gets 64");

    /* the wait protocol, single process */

    t_ok(sft_bufpool_wait(&c) == 0, "wait on empty pool returns 0");

    sft_bufpool_stats(pool, &st);
    t_ok(st.waits == 1 && st.waiters == 1 && !t_readable(fd, 0),
         "wait: registered, waits 1, wake fd not readable");

    sft_bufpool_put(&c, chunks[0]);
    sft_bufpool_stats(pool, &st);

    t_ok(t_readable(fd, 0) && st.waiters == 0 && st.shared == 1
         && st.cached == 0 && st.puts == 1,
         "put while waiting: to the shared list, wakes own fd");

    sft_bufpool_woken(&c);
    t_ok(!t_readable(fd, 0), "woken drains the wake fd");

    rt = sft_bufpool_wait(&c);
    sft_bufpool_stats(pool, &st);
    t_ok(rt == 1 && st.waiters == 0 && st.waits == 1,
         "wait with a free chunk: returns 1, deregistered");

    /* put the rest back: the cache never exceeds 8 */

    rt = 1;

    for (i = 1; i < T_UNIT_CHUNKS; i++) {
        sft_bufpool_put(&c, chunks[i]);
        sft_bufpool_stats(pool, &st);

        if (st.cached > 8) {
            rt = 0;
        }
    }

    t_ok(rt && st.free == T_UNIT_CHUNKS && st.gets == T_UNIT_CHUNKS
         && st.puts == T_UNIT_CHUNKS && st.cached > 0,
         "put all back: free 64, gets == puts, cache <= 8");

    sft_bufpool_detach(&c);
    sft_bufpool_stats(pool, &st);

    t_ok(st.cached == 0 && st.shared == T_UNIT_CHUNKS
         && t_free_list_ok(pool, T_UNIT_CHUNKS),
         "detach drains the cache; free list holds each chunk once");

    sft_bufpool_close_wake_fds(pool);
    munmap(region, size);

    /* a pool too small to cache: 6 chunks, 4 procs */

    size = sft_bufpool_region_size(6 * T_CHUNK, T_CHUNK);
    region = t_map(size);
    pool = sft_bufpool_init(region, size, T_CHUNK, 4);

    t_ok(pool != NULL && sft_bufpool_attach(pool, &c, 3) == 0
         && sft_bufpool_wake_fd(&c) == -1,
         "6 chunks / 4 procs: init, attach, no wake fds");

    chunks[0] = sft_bufpool_get(&c);
    sft_bufpool_stats(pool, &st);
    t_ok(chunks[0] != NULL && st.shared == 5 && st.cached == 0,
         "no caching: get takes exactly one chunk");

    sft_bufpool_put(&c, chunks[0]);
    sft_bufpool_stats(pool, &st);
    t_ok(st.shared == 6 && st.cached == 0 && t_free_list_ok(pool, 6),
         "no caching: put goes to the shared list");

    sft_bufpool_detach(&c);
    munmap(region, size);

    /* a non power of two chunk size */

    size = sft_bufpool_region_size(10 * 3 * T_CHUNK, 3 * T_CHUNK);
    region = t_map(size);
    pool = sft_bufpool_init(region, size, 3 * T_CHUNK, 1);
    rt = pool != NULL && sft_bufpool_attach(pool, &c, 0) == 0;

    for (i = 0; rt && i < 10; i++) {
        p = sft_bufpool_chunk(pool, i);
        if (sft_bufpool_index(pool, p + 3 * T_CHUNK - 1) != i
            || (uintptr_t) p % 4096 != 0)
        {
            rt = 0;
        }
    }

    sft_bufpool_stats(pool, &st);
    t_ok(rt && st.total == 10, "12 KiB chunks: 10 chunks, index round trip");

    sft_bufpool_detach(&c);
    munmap(region, size);
}


static uint64_t
t_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;

    return *s;
}


static void
t_stamp(void *chunk, uint64_t stamp)
{
    uint64_t  *w;

    w = chunk;
    w[0] = stamp;
    w[T_CHUNK / 16] = ~stamp;
    w[T_CHUNK / 8 - 1] = stamp;
}


static int
t_stamp_ok(void *chunk, uint64_t stamp)
{
    uint64_t  *w;

    w = chunk;

    return w[0] == stamp && w[T_CHUNK / 16] == ~stamp
           && w[T_CHUNK / 8 - 1] == stamp;
}


/* a get that waits on the wake fd like an event loop would */

static void *
t_child_get(sft_bufpool_cache_t *c, t_result_t *r)
{
    int                   fd;
    void                 *p;
    sft_bufpool_stats_t   st;

    fd = sft_bufpool_wake_fd(c);

    for ( ;; ) {
        p = sft_bufpool_get(c);
        if (p != NULL) {
            return p;
        }

        if (sft_bufpool_wait(c) == 1) {
            r->retries++;
            continue;
        }

        r->sleeps++;

        if (!t_readable(fd, T_WAIT_MS)) {
            r->timeouts++;

            if (t_readable(fd, T_GRACE_MS)) {
                r->late++;

            } else {
                /*
                 * Registered and not woken for 1.5 s: if the shared list
                 * has chunks, their put missed us: a lost wake-up.
                 */

                sft_bufpool_stats(c->pool, &st);

                if (st.shared > 0) {
                    r->lost++;
                }

                continue;
            }
        }

        sft_bufpool_woken(c);
    }
}


static int
t_child(sft_bufpool_t *pool, t_shared_t *sh, unsigned slot, uint64_t iters,
    unsigned hold_every)
{
    void                 *held[T_MAXREQ];
    uint32_t              idx, j, k, m;
    uint64_t              seed, it, bit, old, stamp[T_MAXREQ], ts;
    t_result_t           *r;
    sft_bufpool_cache_t   c;

    r = &sh->res[slot];

    if (sft_bufpool_attach(pool, &c, slot) != 0) {
        r->errors++;
        return 1;
    }

    seed = 0x9e3779b97f4a7c15ULL * (slot + 1) ^ (uint64_t) getpid();

    for (it = 0; it < iters; it++) {

        /* 1..T_MAXREQ, biased towards large requests: max of draws */

        k = 0;

        for (j = 0; j < T_DRAWS; j++) {
            m = 1 + t_rand(&seed) % T_MAXREQ;
            k = (m > k) ? m : k;
        }

        for (j = 0; j < k; j++) {
            held[j] = t_child_get(&c, r);
            r->gets++;

            idx = sft_bufpool_index(pool, held[j]);
            if (idx >= T_NCHUNKS) {
                r->errors++;
                return 1;
            }

            bit = 1ULL << (idx % 64);
            old = atomic_fetch_or(&sh->held[idx / 64], bit);

            if (old & bit) {
                r->doubles++;
            }

            stamp[j] = ((uint64_t) (slot + 1) << 56) | (it << 8) | j;
            t_stamp(held[j], stamp[j]);
        }

        /*
         * Now and then hold the chunks for a while, as a slow transfer
         * would, or at least let another process run while holding
         * them: this is what makes the others run out of chunks.
         */

        if (hold_every && t_rand(&seed) % hold_every == 0) {
            usleep(T_HOLD_US);

        } else if (it % 64 == 0) {
            sched_yield();
        }

        /* put back in random order */

        while (k > 0) {
            m = t_rand(&seed) % k;

            if (!t_stamp_ok(held[m], stamp[m])) {
                r->overwrites++;
            }

            idx = sft_bufpool_index(pool, held[m]);
            bit = 1ULL << (idx % 64);
            old = atomic_fetch_and(&sh->held[idx / 64], ~bit);

            if (!(old & bit)) {
                r->bad_clear++;
            }

            sft_bufpool_put(&c, held[m]);
            r->puts++;

            k--;
            held[m] = held[k];
            ts = stamp[m];
            stamp[m] = stamp[k];
            stamp[k] = ts;
        }

        r->iters++;
    }

    sft_bufpool_detach(&c);

    return (r->doubles || r->overwrites || r->bad_clear || r->lost
            || r->errors) ? 1 : 0;
}


static void
t_alarm(int signo)
{
    int  i;

    (void) signo;

    t_timed_out = 1;

    for (i = 0; i < T_NPROCS; i++) {
        if (t_pids[i] > 0) {
            kill(t_pids[i], SIGKILL);
        }
    }
}


static void
t_set_alarm(void)
{
    struct sigaction  sa;

    memset(&sa, 0, sizeof(struct sigaction));
    sa.sa_handler = t_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);

    t_timed_out = 0;
    alarm(T_TIME_LIMIT);
}


/* waits for the children by pid; 1 if all exited with status 0 */

static int
t_reap(int n)
{
    int  i, status, clean;

    clean = 1;

    for (i = 0; i < n; i++) {
        while (waitpid(t_pids[i], &status, 0) == -1) {
            if (errno != EINTR) {
                perror("waitpid");
                exit(2);
            }
        }

        t_pids[i] = 0;

        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            clean = 0;
        }
    }

    alarm(0);

    return clean && !t_timed_out;
}


/*
 * T_NPROCS processes hammer a pool of T_NCHUNKS chunks.  max_procs
 * decides the cache: 4 gives caches of 29 / 8 = 3 chunks, 16 disables
 * them so that every get and put goes through the shared stack.
 */

static void
t_stress(const char *name, uint64_t iters, unsigned max_procs,
    unsigned hold_every)
{
    int                   i, clean;
    char                 *region;
    size_t                size;
    double                start, elapsed;
    uint64_t              w, bits;
    t_result_t            sum;
    t_shared_t           *sh;
    sft_bufpool_t        *pool;
    sft_bufpool_stats_t   st;

    size = sft_bufpool_region_size(T_NCHUNKS * T_CHUNK, T_CHUNK);
    region = t_map(size);
    sh = t_map(sizeof(t_shared_t));

    pool = sft_bufpool_init(region, size, T_CHUNK, max_procs);
    if (pool == NULL || sft_bufpool_create_wake_fds(pool) != 0) {
        perror("sft_bufpool_init");
        exit(2);
    }

    start = t_now();

    for (i = 0; i < T_NPROCS; i++) {
        t_pids[i] = fork();

        if (t_pids[i] == -1) {
            perror("fork");
            exit(2);
        }

        if (t_pids[i] == 0) {
            _exit(t_child(pool, sh, i, iters, hold_every));
        }
    }

    t_set_alarm();
    clean = t_reap(T_NPROCS);
    elapsed = t_now() - start;

    memset(&sum, 0, sizeof(t_result_t));

    for (i = 0; i < T_NPROCS; i++) {
        sum.iters += sh->res[i].iters;
        sum.gets += sh->res[i].gets;
        sum.puts += sh->res[i].puts;
        sum.retries += sh->res[i].retries;
        sum.sleeps += sh->res[i].sleeps;
        sum.timeouts += sh->res[i].timeouts;
        sum.late += sh->res[i].late;
        sum.lost += sh->res[i].lost;
        sum.doubles += sh->res[i].doubles;
        sum.overwrites += sh->res[i].overwrites;
        sum.bad_clear += sh->res[i].bad_clear;
        sum.errors += sh->res[i].errors;
    }

    sft_bufpool_stats(pool, &st);

    printf("# %s: %d procs x %llu iterations, %llu chunks, %.2f s\n",
           name, T_NPROCS, (unsigned long long) iters,
           (unsigned long long) st.total, elapsed);
    printf("# %s: gets %llu puts %llu waits %llu (sleeps %llu, immediate "
           "retries %llu), timeouts %llu (late %llu, lost %llu)\n", name,
           (unsigned long long) st.gets, (unsigned long long) st.puts,
           (unsigned long long) st.waits, (unsigned long long) sum.sleeps,
           (unsigned long long) sum.retries,
           (unsigned long long) sum.timeouts, (unsigned long long) sum.late,
           (unsigned long long) sum.lost);

    t_ok(clean && sum.errors == 0 && sum.iters == T_NPROCS * iters,
         "%s: %d children finished all iterations within %d s",
         name, T_NPROCS, T_TIME_LIMIT);

    t_ok(sum.doubles == 0, "%s: no double hand-out (held bitmap)", name);
    t_ok(sum.overwrites == 0 && sum.bad_clear == 0,
         "%s: no chunk overwritten while held (stamps)", name);
    t_ok(sum.lost == 0, "%s: no lost wake-up", name);

    bits = 0;
    for (w = 0; w < (T_NCHUNKS + 63) / 64; w++) {
        bits |= atomic_load(&sh->held[w]);
    }

    t_ok(bits == 0, "%s: no chunk still marked held", name);

    t_ok(st.free == st.total && st.shared == st.total && st.cached == 0,
         "%s: free == total == shared (%llu), none lost", name,
         (unsigned long long) st.free);

    t_ok(st.gets == st.puts && st.gets == sum.gets,
         "%s: gets == puts == %llu", name, (unsigned long long) sum.gets);

    t_ok(st.waits > 0 && st.waits >= sum.sleeps,
         "%s: pool was contended, waits %llu", name,
         (unsigned long long) st.waits);

    t_ok(st.waiters == 0, "%s: no waiter left registered", name);

    t_ok(t_free_list_ok(pool, st.total),
         "%s: free list holds every chunk exactly once", name);

    sft_bufpool_close_wake_fds(pool);
    munmap(sh, sizeof(t_shared_t));
    munmap(region, size);
}


/*
 * The wake-up race, aimed at: A holds every chunk of an uncached pool
 * (4 chunks, max_procs 4), B starts a get and A puts one back, both
 * after a random delay (0-2048 loop turns, log-uniform), so the put
 * sometimes lands between B's failed get and its re-check in
 * sft_bufpool_wait().
 * Nobody else runs, so a missed wake-up leaves B asleep with the chunk
 * on the shared list.
 */

typedef struct {
    _Atomic uint64_t  round;
    _Atomic uint64_t  ready;
    _Atomic uint64_t  done;
    t_result_t        res;
} t_race_t;


/* spins briefly, then yields: the machine may be busy with other work */

static int
t_spin_until(_Atomic uint64_t *v, uint64_t want, double limit)
{
    unsigned  i;

    for (i = 1; atomic_load(v) != want; i++) {
        if (i % 65536 == 0) {
            sched_yield();

            if (limit > 0 && t_now() > limit) {
                return 0;
            }
        }
    }

    return 1;
}


static int
t_race_b(sft_bufpool_t *pool, t_race_t *rc, uint64_t rounds)
{
    void                 *p;
    uint64_t              r, seed, spin;
    sft_bufpool_cache_t   c;
    volatile uint64_t     sink;

    if (sft_bufpool_attach(pool, &c, 1) != 0) {
        return 1;
    }

    seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t) getpid();

    for (r = 1; r <= rounds; r++) {
        (void) t_spin_until(&rc->round, r, 0);
        atomic_store(&rc->ready, r);

        spin = (t_rand(&seed) % 2048) >> (t_rand(&seed) % 12);
        for (sink = 0; sink < spin; sink++) {
            /* random delay */
        }

        p = t_child_get(&c, &rc->res);
        rc->res.gets++;

        sft_bufpool_put(&c, p);
        atomic_store(&rc->done, r);

        if (rc->res.lost) {
            break;
        }
    }

    sft_bufpool_detach(&c);

    return rc->res.lost ? 1 : 0;
}


static void
t_race(uint64_t rounds)
{
    int                   ok, i;
    char                 *region;
    void                 *held[4];
    size_t                size;
    double                start, limit;
    uint64_t              r, seed, spin;
    t_race_t             *rc;
    sft_bufpool_t        *pool;
    sft_bufpool_cache_t   c;
    volatile uint64_t     sink;

    size = sft_bufpool_region_size(4 * T_CHUNK, T_CHUNK);
    region = t_map(size);
    rc = t_map(sizeof(t_race_t));

    pool = sft_bufpool_init(region, size, T_CHUNK, 4);
    if (pool == NULL || sft_bufpool_create_wake_fds(pool) != 0
        || sft_bufpool_attach(pool, &c, 0) != 0)
    {
        perror("sft_bufpool_init");
        exit(2);
    }

    ok = 1;

    for (i = 0; i < 4; i++) {
        held[i] = sft_bufpool_get(&c);
        ok = ok && held[i] != NULL;
    }

    ok = ok && sft_bufpool_get(&c) == NULL;

    t_pids[0] = fork();

    if (t_pids[0] == -1) {
        perror("fork");
        exit(2);
    }

    if (t_pids[0] == 0) {
        _exit(t_race_b(pool, rc, rounds));
    }

    t_set_alarm();

    seed = 0x2545f4914f6cdd1dULL;
    start = t_now();

    for (r = 1; ok && r <= rounds; r++) {
        atomic_store(&rc->round, r);

        if (!t_spin_until(&rc->ready, r, t_now() + T_TIME_LIMIT)) {
            ok = 0;
            break;
        }

        spin = (t_rand(&seed) % 2048) >> (t_rand(&seed) % 12);
        for (sink = 0; sink < spin; sink++) {
            /* random delay */
        }

        sft_bufpool_put(&c, held[0]);

        limit = t_now() + (T_WAIT_MS + T_GRACE_MS) / 1000.0 + 1;

        if (!t_spin_until(&rc->done, r, limit)) {
            ok = 0;
        }

        held[0] = sft_bufpool_get(&c);
        ok = ok && held[0] != NULL && rc->res.lost == 0;
    }

    if (!ok) {
        kill(t_pids[0], SIGKILL);
    }

    ok = t_reap(1) && ok;

    printf("# race: %llu of %llu rounds, %.2f s, B slept %llu times, put "
           "landed in the registration window %llu times, timeouts %llu "
           "(late %llu, lost %llu)\n",
           (unsigned long long) atomic_load(&rc->done),
           (unsigned long long) rounds, t_now() - start,
           (unsigned long long) rc->res.sleeps,
           (unsigned long long) rc->res.retries,
           (unsigned long long) rc->res.timeouts,
           (unsigned long long) rc->res.late,
           (unsigned long long) rc->res.lost);

    t_ok(ok && rc->res.gets == rounds,
         "race: every round completed, B got the chunk");
    t_ok(rc->res.lost == 0 && rc->res.timeouts == 0,
         "race: no lost wake-up");
    t_ok(rc->res.sleeps > 0, "race: the sleep path was taken");

    if (rc->res.retries > 0) {
        t_ok(1, "race: a put landed between a failed get and the re-check");

    } else {
        t_ok(1, "# SKIP no put landed in the registration window (busy?)");
    }

    for (i = 0; i < 4; i++) {
        if (held[i] != NULL) {
            sft_bufpool_put(&c, held[i]);
        }
    }

    sft_bufpool_detach(&c);
    sft_bufpool_close_wake_fds(pool);
    munmap(rc, sizeof(t_race_t));
    munmap(region, size);
}


int
main(int argc, char **argv)
{
    uint64_t  iters;

    setvbuf(stdout, NULL, _IOLBF, 0);

    iters = (argc > 1) ? strtoull(argv[1], NULL, 10) : T_ITERS;
    if (iters == 0) {
        iters = T_ITERS;
    }

    printf("1..%d\n", T_PLAN);

    t_single();
    t_stress("cached", iters, T_NPROCS, T_HOLD_EVERY);
    t_stress("uncached", iters, 16, 0);
    t_race(T_RACE_ROUNDS);
    t_reclaim();
    t_reserve();

    if (t_n != T_PLAN) {
        printf("# planned %d tests, ran %u\n", T_PLAN, t_n);
        return 1;
    }

    return t_failed ? 1 : 0;
}
