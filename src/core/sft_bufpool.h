/*
 * sft_bufpool.h -- the shared-memory pool of transfer chunks used by all
 * worker processes (lock-free shared free list + per-process cache).
 *
 * This header is self-contained (libc only) so it can be used by unit
 * tests without the rest of the core headers.
 *
 * Life cycle:
 *
 *   master, before forking anything:
 *       size = sft_bufpool_region_size(buffer_pool_bytes,
 *                                      transfer_chunk_bytes);
 *       region = mmap(NULL, size, PROT_READ|PROT_WRITE,
 *                     MAP_SHARED|MAP_ANONYMOUS, -1, 0);
 *       pool = sft_bufpool_init(region, size, transfer_chunk_bytes,
 *                               max_procs);
 *       sft_bufpool_create_wake_fds(pool);
 *
 *   each worker, after fork (slot 0..max_procs-1, at most one live
 *   process per slot; workers of an old and a new generation that run
 *   at the same time during a reload need different slots):
 *       sft_bufpool_attach(pool, &cache, slot);
 *       add sft_bufpool_wake_fd(&cache) to the epoll set (EPOLLIN);
 *       ...
 *       sft_bufpool_detach(&cache);            at worker exit
 *
 *   getting a chunk in the event loop:
 *       b = sft_bufpool_get(&cache);
 *       if (b == NULL) {
 *           queue the session;
 *           while (sft_bufpool_wait(&cache) == 1) {
 *               retry the queued sessions (sft_bufpool_get);
 *               if the queue is empty: break;
 *           }
 *       }
 *
 *   when the wake fd is readable:
 *       sft_bufpool_woken(&cache);             drains it, deregisters
 *       retry the queued sessions; if some are still queued, do the
 *       same sft_bufpool_wait() loop as above.
 *
 * Waiters in the putting process itself: while a process is registered
 * as waiting, every sft_bufpool_put() anywhere, including in that same
 * process, goes to the shared list and writes the waiting slots' wake
 * fds, the process's own one included.  So the event loop needs no
 * special case: its own put makes its own wake fd readable.  (It may
 * retry its queue right after its own put as a shortcut; that is
 * allowed but not required.)
 *
 * A process that no longer needs a chunk (its queued sessions went
 * away) may call sft_bufpool_cancel_wait(); if it does not, it is only
 * woken once more for nothing.
 *
 * Reserving chunks held long (the parts of S3 uploads), one cap for all
 * processes, before getting them:
 *       if (!sft_bufpool_reserve(&cache, n, max)) {
 *           queue the holder;
 *           if (sft_bufpool_reserve_wait(&cache, n, max) == 1) {
 *               it has them: dequeue it;
 *           }
 *       }
 *       ... n sft_bufpool_get() calls, later n sft_bufpool_put() ...
 *       sft_bufpool_unreserve(&cache, n);
 *   and when the wake fd is readable (the same fd): the queued holders
 *   ask again.
 *
 * A cache is used by one thread only; the pool itself is safe for any
 * number of processes.  The chunks of a process that dies without
 * sft_bufpool_detach() are taken back by sft_bufpool_reclaim() in the
 * master, which tracks which slot holds each chunk and how many each
 * slot reserved.
 */

#ifndef _SFT_BUFPOOL_H_INCLUDED_
#define _SFT_BUFPOOL_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* chunk size granularity and chunk memory alignment */
#define SFT_BUFPOOL_ALIGN       4096

/* upper bound of max_procs; the region always reserves this many slots */
#define SFT_BUFPOOL_MAX_PROCS   256

/* upper bound of the per-process cache, see sft_bufpool_init() */
#define SFT_BUFPOOL_CACHE_MAX   16

/* "no chunk" index */
#define SFT_BUFPOOL_NONE        UINT32_MAX


typedef struct sft_bufpool_s       sft_bufpool_t;
typedef struct sft_bufpool_slot_s  sft_bufpool_slot_t;


/*
 * The per-process cache.  It lives in the process's private memory
 * (static or heap), filled in by sft_bufpool_attach(); the fields are
 * private to sft_bufpool.c.
 */
typedef struct {
    sft_bufpool_t       *pool;
    sft_bufpool_slot_t  *slot;
    unsigned             slot_no;
    uint32_t             n;
    uint32_t             max;
    uint32_t             batch;
    uint32_t             idx[SFT_BUFPOOL_CACHE_MAX + 1];
} sft_bufpool_cache_t;


/*
 * A snapshot of the counters.  Exact while no get/put/wait runs
 * concurrently; approximate (but within 0..total) otherwise.
 *
 *   free    chunks not handed out to users: shared + cached, i.e. chunks
 *           sitting in per-process caches count as free;
 *   shared  chunks on the shared free list;
 *   cached  chunks in per-process caches;
 *   gets, puts
 *           successful sft_bufpool_get() and sft_bufpool_put() calls,
 *           cumulative since init; gets - puts = chunks in use;
 *   waits   sft_bufpool_wait() calls that returned 0 (the pool was
 *           empty and the caller had to sleep on its wake fd);
 *   waiters processes registered as waiting right now;
 *   reserved
 *           chunks reserved by all processes (sft_bufpool_reserve());
 *   reserve_waiters
 *           processes registered as waiting for a reservation.
 */
typedef struct {
    uint64_t             total;
    uint64_t             free;
    uint64_t             shared;
    uint64_t             cached;
    uint64_t             gets;
    uint64_t             puts;
    uint64_t             waits;
    uint64_t             waiters;
    uint64_t             reserved;
    uint64_t             reserve_waiters;
} sft_bufpool_stats_t;


/*
 * Bytes to mmap for a pool of pool_bytes / chunk_bytes chunks (header,
 * next[] array, then chunk memory aligned to SFT_BUFPOOL_ALIGN); the
 * result is a multiple of SFT_BUFPOOL_ALIGN.  Returns 0 with errno
 * EINVAL if chunk_bytes is not a non-zero multiple of SFT_BUFPOOL_ALIGN,
 * if there would be fewer than 2 chunks, or on overflow.
 */
size_t sft_bufpool_region_size(size_t pool_bytes, size_t chunk_bytes);

/*
 * Lays the pool out in a MAP_SHARED region (master, before fork).  The
 * region must be SFT_BUFPOOL_ALIGN aligned; the pool gets as many chunks
 * as fit (exactly pool_bytes / chunk_bytes for a region sized by
 * sft_bufpool_region_size()).  max_procs is 1..SFT_BUFPOOL_MAX_PROCS.
 * Each per-process cache holds at most
 *     min(SFT_BUFPOOL_CACHE_MAX, chunks / (2 * max_procs))
 * chunks (possibly 0: no caching), so all caches together never hold
 * more than half of the pool.  Returns NULL with errno EINVAL on bad
 * arguments.
 */
sft_bufpool_t *sft_bufpool_init(void *region, size_t region_size,
    size_t chunk_bytes, unsigned max_procs);

/*
 * Creates one eventfd (EFD_NONBLOCK|EFD_CLOEXEC) per slot and stores the
 * descriptors in the shared header.  Called in the master before the
 * first fork: children inherit the same descriptor numbers.  Returns 0,
 * or -1 with errno (nothing is left open then).  Without wake fds the
 * wait protocol still works but sft_bufpool_wake_fd() returns -1.
 */
int sft_bufpool_create_wake_fds(sft_bufpool_t *pool);

/* closes the wake fds in the calling process and marks them as absent */
void sft_bufpool_close_wake_fds(sft_bufpool_t *pool);

/*
 * Binds a private cache to a slot, once per process after fork.  Any
 * stale waiting registration of a previous owner of the slot is
 * dropped.  Returns 0, or -1 with errno EINVAL.
 */
int sft_bufpool_attach(sft_bufpool_t *pool, sft_bufpool_cache_t *c,
    unsigned slot);

/* returns every cached chunk to the shared list and deregisters */
void sft_bufpool_detach(sft_bufpool_cache_t *c);

/* a chunk of sft_bufpool_chunk_size() bytes, or NULL if none is free */
void *sft_bufpool_get(sft_bufpool_cache_t *c);

/*
 * Gives a chunk back.  chunk must be a chunk start returned by
 * sft_bufpool_get() (of any process); anything else aborts the process.
 */
void sft_bufpool_put(sft_bufpool_cache_t *c, void *chunk);

/*
 * Registers the process as waiting for a chunk, after
 * sft_bufpool_get() returned NULL.  Returns 1 if a chunk is available
 * (the registration is dropped again; retry sft_bufpool_get() at once),
 * or 0: the wake fd becomes readable as soon as a chunk is put back to
 * the shared list.
 */
int sft_bufpool_wait(sft_bufpool_cache_t *c);

/* drops the waiting registration, if any */
void sft_bufpool_cancel_wait(sft_bufpool_cache_t *c);

/*
 * Reserves n chunks for a holder that keeps them long, counted in the
 * pool for all processes together: returns 1 if the reservations of all
 * processes stay within max with these, or none was made at all (a
 * reservation above max goes alone), else 0 and nothing changes.  It
 * gets no chunk: the holder takes them with sft_bufpool_get().
 */
int sft_bufpool_reserve(sft_bufpool_cache_t *c, uint32_t n, uint32_t max);

/*
 * Gives back n reserved chunks of the process's own (more than it
 * reserved aborts the process) and wakes who waits for a reservation.
 */
void sft_bufpool_unreserve(sft_bufpool_cache_t *c, uint32_t n);

/*
 * Registers the process as waiting for a reservation, after
 * sft_bufpool_reserve() returned 0, and tries again.  Returns 1 if it
 * got the reservation now (it stays registered: it is woken once more
 * for nothing unless it calls sft_bufpool_cancel_reserve_wait()), or
 * 0: the wake fd becomes readable as soon as a reservation is given
 * back in any process.
 */
int sft_bufpool_reserve_wait(sft_bufpool_cache_t *c, uint32_t n,
    uint32_t max);

/* drops the registration for a reservation, if any */
void sft_bufpool_cancel_reserve_wait(sft_bufpool_cache_t *c);

/* the wake fd of the cache's slot (for epoll), or -1 */
int sft_bufpool_wake_fd(sft_bufpool_cache_t *c);

/* drains the wake fd and drops both waiting registrations, if any */
void sft_bufpool_woken(sft_bufpool_cache_t *c);

/*
 * In the master, after the process that used "slot" died without detaching:
 * returns every chunk it held (cached or in use) to the shared list and
 * says how many, and gives back what it had reserved (waking who waits
 * for a reservation).  Must not run while a live process uses the slot.
 */
uint32_t sft_bufpool_reclaim(sft_bufpool_t *pool, unsigned slot);

/* index of the chunk that contains p, or SFT_BUFPOOL_NONE */
uint32_t sft_bufpool_index(sft_bufpool_t *pool, const void *p);

/* the chunk with index idx, or NULL if idx is out of range */
void *sft_bufpool_chunk(sft_bufpool_t *pool, uint32_t idx);

size_t sft_bufpool_chunk_size(sft_bufpool_t *pool);

void sft_bufpool_stats(sft_bufpool_t *pool, sft_bufpool_stats_t *st);

/*
 * Debugging/tests, only when nothing runs concurrently: copies up to
 * max indices of the shared free list, top first, into out.  Returns
 * the number copied, or max + 1 if the list is longer (or has a cycle).
 * A corrupted (out of range) index is copied and ends the walk.
 */
size_t sft_bufpool_free_list(sft_bufpool_t *pool, uint32_t *out,
    size_t max);


#endif /* _SFT_BUFPOOL_H_INCLUDED_ */
