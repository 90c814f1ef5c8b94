/*
 * sft_buffer.c -- the "sft_buffer_pool" zone (buffer_pool_bytes split into
 * transfer_chunk_bytes chunks) and its use in a worker: a per-process cache,
 * a queue of waiting transfers, a queue of holders waiting for a
 * reservation, and the pool's wake-up eventfd in epoll.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_buffer.h>


static char *sft_buffer_init_conf(sft_cycle_t *cycle, void *conf);
static sft_int_t sft_buffer_zone_init(sft_shm_zone_t *zone, void *old_data);
static void sft_buffer_zone_fini(sft_shm_zone_t *zone);
static sft_int_t sft_buffer_init_process(sft_cycle_t *cycle);
static void sft_buffer_exit_process(sft_cycle_t *cycle);
static void sft_buffer_wake_handler(sft_event_t *ev);
static void sft_buffer_enqueue(sft_buffer_queue_t *q, sft_buffer_waiter_t *w);
static void sft_buffer_dequeue(sft_buffer_waiter_t *w);
static uint64_t sft_buffer_stat_read(const sft_stat_def_t *def);


enum {
    SFT_BUFFER_STAT_CHUNK_BYTES = 0,
    SFT_BUFFER_STAT_TOTAL,
    SFT_BUFFER_STAT_FREE,
    SFT_BUFFER_STAT_IN_USE,
    SFT_BUFFER_STAT_WAITS,
    SFT_BUFFER_STAT_WAITERS,
    SFT_BUFFER_STAT_RESERVED
};


/* a queue of waiters; cancel drops the process's registration with it */

struct sft_buffer_queue_s {
    sft_buffer_waiter_t   *head;
    sft_buffer_waiter_t  **tail;
    void                 (*cancel)(sft_bufpool_cache_t *c);
};


static sft_bufpool_t        *sft_buffer_pool;
static sft_bufpool_cache_t   sft_buffer_cache;
static sft_buffer_queue_t    sft_buffer_waiters = {
    NULL, &sft_buffer_waiters.head, sft_bufpool_cancel_wait
};
static sft_buffer_queue_t    sft_buffer_reservers = {
    NULL, &sft_buffer_reservers.head, sft_bufpool_cancel_reserve_wait
};
static sft_uint_t            sft_buffer_attached;
static sft_uint_t            sft_buffer_stat_waits;


static const sft_stat_def_t  sft_buffer_stats[] = {
    { .name = "buffer_pool_waits_total",
      .help = "Times a transfer waited for a free buffer pool chunk.",
      .index = &sft_buffer_stat_waits },
    { .name = "buffer_pool_chunk_bytes", .json = "buffer_pool.chunk_bytes",
      .type = SFT_STAT_GAUGE, .help = "Size of one buffer pool chunk.",
      .read = sft_buffer_stat_read, .data = SFT_BUFFER_STAT_CHUNK_BYTES },
    { .name = "buffer_pool_chunks", .json = "buffer_pool.total",
      .type = SFT_STAT_GAUGE, .help = "Chunks in the shared buffer pool.",
      .read = sft_buffer_stat_read, .data = SFT_BUFFER_STAT_TOTAL },
    { .name = "buffer_pool_free_chunks", .json = "buffer_pool.free",
      .type = SFT_STAT_GAUGE, .help = "Chunks not handed out.",
      .read = sft_buffer_stat_read, .data = SFT_BUFFER_STAT_FREE },
    { .json = "buffer_pool.in_use", .type = SFT_STAT_GAUGE,
      .read = sft_buffer_stat_read, .data = SFT_BUFFER_STAT_IN_USE },
    { .json = "buffer_pool.waits",
      .read = sft_buffer_stat_read, .data = SFT_BUFFER_STAT_WAITS },
    { .json = "buffer_pool.waiters", .type = SFT_STAT_GAUGE,
      .read = sft_buffer_stat_read, .data = SFT_BUFFER_STAT_WAITERS },
    { .name = "buffer_pool_reserved_chunks", .json = "buffer_pool.reserved",
      .type = SFT_STAT_GAUGE,
      .help = "Chunks reserved by holders that keep them long (S3 upload "
              "parts), all workers together.",
      .read = sft_buffer_stat_read, .data = SFT_BUFFER_STAT_RESERVED },
};


static sft_core_module_t  sft_buffer_module_ctx = {
    sft_string("buffer"),
    NULL,
    sft_buffer_init_conf
};


sft_module_t  sft_buffer_module = {
    SFT_MODULE_V1,
    &sft_buffer_module_ctx,                /* module context */
    NULL,                                  /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_buffer_init_process,               /* init process */
    sft_buffer_exit_process,               /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static char *
sft_buffer_init_conf(sft_cycle_t *cycle, void *conf)
{
    (void) conf;

    return sft_stat_register(cycle, sft_buffer_stats,
                             sft_nelems(sft_buffer_stats))
           == SFT_OK ? SFT_CONF_OK : SFT_CONF_ERROR;
}


/* the chunk size is in the name, so changing it makes a fresh zone */

sft_int_t
sft_buffer_zone_add(sft_cycle_t *cycle, size_t pool_bytes, size_t chunk_bytes)
{
    size_t           size;
    sft_str_t        name;
    sft_shm_zone_t  *zone;

    size = sft_bufpool_region_size(pool_bytes, chunk_bytes);
    if (size == 0) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "invalid buffer pool of %zu bytes in chunks of %zu",
                      pool_bytes, chunk_bytes);
        return SFT_ERROR;
    }

    name.data = sft_pnalloc(cycle->pool, 64);
    if (name.data == NULL) {
        return SFT_ERROR;
    }

    name.len = sft_slprintf(name.data, name.data + 64, "sft_buffer_pool_%zu",
                            chunk_bytes) - name.data;

    zone = sft_shared_memory_add(cycle, &name, size, &sft_buffer_module);
    if (zone == NULL) {
        return SFT_ERROR;
    }

    zone->init = sft_buffer_zone_init;
    zone->fini = sft_buffer_zone_fini;
    zone->arg = chunk_bytes;

    return SFT_OK;
}


static sft_int_t
sft_buffer_zone_init(sft_shm_zone_t *zone, void *old_data)
{
    size_t          chunk_bytes;
    sft_bufpool_t  *pool;

    if (old_data) {
        zone->data = old_data;
        sft_buffer_pool = old_data;
        return SFT_OK;
    }

    chunk_bytes = zone->arg;

    pool = sft_bufpool_init(zone->shm.addr, zone->shm.size, chunk_bytes,
                            SFT_MAX_PROCESSES);
    if (pool == NULL) {
        sft_log_error(SFT_LOG_EMERG, zone->shm.log, sft_errno,
                      "buffer pool initialization failed");
        return SFT_ERROR;
    }

    if (sft_bufpool_create_wake_fds(pool) != 0) {
        sft_log_error(SFT_LOG_EMERG, zone->shm.log, sft_errno,
                      "buffer pool wake-up descriptors failed");
        return SFT_ERROR;
    }

    zone->data = pool;
    sft_buffer_pool = pool;

    return SFT_OK;
}


static void
sft_buffer_zone_fini(sft_shm_zone_t *zone)
{
    if (zone->data && zone->shm.addr) {
        sft_bufpool_close_wake_fds(zone->data);
    }
}


static sft_int_t
sft_buffer_init_process(sft_cycle_t *cycle)
{
    int  fd;

    if (sft_buffer_pool == NULL) {
        return SFT_OK;
    }

    if (sft_bufpool_attach(sft_buffer_pool, &sft_buffer_cache,
                           (unsigned) sft_process_slot) != 0)
    {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "buffer pool attach to slot %ld failed",
                      (long) sft_process_slot);
        return SFT_ERROR;
    }

    sft_buffer_attached = 1;

    fd = sft_bufpool_wake_fd(&sft_buffer_cache);

    if (fd != -1
        && sft_event_add_notify(cycle, fd, sft_buffer_wake_handler, NULL)
           == NULL)
    {
        return SFT_ERROR;
    }

    return SFT_OK;
}


static void
sft_buffer_exit_process(sft_cycle_t *cycle)
{
    (void) cycle;

    if (sft_buffer_attached) {
        sft_bufpool_detach(&sft_buffer_cache);
        sft_buffer_attached = 0;
    }
}


static void
sft_buffer_enqueue(sft_buffer_queue_t *q, sft_buffer_waiter_t *w)
{
    if (w->prev) {
        return;
    }

    w->queue = q;
    w->next = NULL;
    w->prev = q->tail;
    *q->tail = w;
    q->tail = &w->next;
}


/* the waiter leaves its queue, and gives back a chunk taken for it */

void
sft_buffer_cancel(sft_buffer_waiter_t *w)
{
    if (w->chunk) {
        sft_bufpool_put(&sft_buffer_cache, w->chunk);
        w->chunk = NULL;
    }

    sft_buffer_dequeue(w);
}


static void
sft_buffer_dequeue(sft_buffer_waiter_t *w)
{
    sft_buffer_queue_t  *q;

    if (w->prev == NULL) {
        return;
    }

    q = w->queue;
    *w->prev = w->next;

    if (w->next) {
        w->next->prev = w->prev;

    } else {
        q->tail = w->prev;
    }

    w->prev = NULL;
    w->next = NULL;

    if (q->head == NULL && sft_buffer_attached) {
        q->cancel(&sft_buffer_cache);
    }
}


/*
 * A chunk, or NULL with the waiter queued: once a chunk has been given
 * back anywhere, the queue's first waiters get one each, in the order
 * they came, and their events are posted; the handler asks again and
 * gets it.
 */

void *
sft_buffer_get(sft_buffer_waiter_t *w)
{
    void  *chunk;

    if (w->chunk) {
        chunk = w->chunk;
        w->chunk = NULL;
        return chunk;
    }

    chunk = sft_bufpool_get(&sft_buffer_cache);

    if (chunk) {
        sft_buffer_dequeue(w);
        return chunk;
    }

    sft_buffer_enqueue(&sft_buffer_waiters, w);
    sft_stat_add(sft_buffer_stat_waits, 1);

    while (sft_bufpool_wait(&sft_buffer_cache) == 1) {
        chunk = sft_bufpool_get(&sft_buffer_cache);

        if (chunk) {
            sft_buffer_dequeue(w);
            return chunk;
        }
    }

    return NULL;
}


void
sft_buffer_put(void *chunk)
{
    sft_bufpool_put(&sft_buffer_cache, chunk);
}


/*
 * n chunks reserved for a holder that keeps them long, within max for
 * all workers together (or n alone when nobody holds any): SFT_OK, or
 * SFT_AGAIN with the waiter queued: its event is posted when a
 * reservation was given back in any worker, and it asks again.  The
 * chunks themselves are then taken with sft_buffer_get(), through
 * another waiter (a waiter waits for one thing at a time).
 */

sft_int_t
sft_buffer_reserve(sft_buffer_waiter_t *w, size_t n, size_t max)
{
    uint32_t  k, m;

    /* counts of the pool's chunks, which are fewer than 2^32 */

    k = (uint32_t) sft_min(n, UINT32_MAX);
    m = (uint32_t) sft_min(max, UINT32_MAX);

    if (!sft_bufpool_reserve(&sft_buffer_cache, k, m)) {
        sft_buffer_enqueue(&sft_buffer_reservers, w);

        if (!sft_bufpool_reserve_wait(&sft_buffer_cache, k, m)) {
            return SFT_AGAIN;
        }
    }

    sft_buffer_dequeue(w);

    return SFT_OK;
}


void
sft_buffer_unreserve(size_t n)
{
    sft_bufpool_unreserve(&sft_buffer_cache, (uint32_t) n);
}


/* in the master, after the worker in "slot" has exited */

void
sft_buffer_reclaim(sft_uint_t slot, sft_log_t *log)
{
    uint32_t  n;

    if (sft_buffer_pool == NULL) {
        return;
    }

    n = sft_bufpool_reclaim(sft_buffer_pool, (unsigned) slot);

    if (n) {
        sft_log_error(SFT_LOG_NOTICE, log, 0,
                      "took back %u buffer pool chunks of the worker in "
                      "slot %lu", (unsigned) n, (unsigned long) slot);
    }
}


size_t
sft_buffer_chunk_size(void)
{
    return sft_buffer_pool ? sft_bufpool_chunk_size(sft_buffer_pool) : 0;
}


/* the chunks of the whole pool: more than this, nobody ever holds */

size_t
sft_buffer_total(void)
{
    sft_bufpool_stats_t  st;

    if (sft_buffer_pool == NULL) {
        return 0;
    }

    sft_bufpool_stats(sft_buffer_pool, &st);

    return (size_t) st.total;
}


static uint64_t
sft_buffer_stat_read(const sft_stat_def_t *def)
{
    sft_bufpool_stats_t  st;

    if (sft_buffer_pool == NULL) {
        return 0;
    }

    sft_bufpool_stats(sft_buffer_pool, &st);

    switch (def->data) {

    case SFT_BUFFER_STAT_CHUNK_BYTES:
        return sft_bufpool_chunk_size(sft_buffer_pool);

    case SFT_BUFFER_STAT_TOTAL:
        return st.total;

    case SFT_BUFFER_STAT_FREE:
        return st.free;

    case SFT_BUFFER_STAT_IN_USE:
        return st.total - st.free;

    case SFT_BUFFER_STAT_WAITS:
        return st.waits;

    case SFT_BUFFER_STAT_WAITERS:
        return st.waiters;

    default: /* SFT_BUFFER_STAT_RESERVED */
        return st.reserved;
    }
}


/*
 * As many waiters as there are chunks to take get one, first come first
 * served; the others stay queued, and the process waits again while any
 * do.  Waking every waiter for each chunk given back would make each of
 * them ask, and all but one queue up anew.
 */

static void
sft_buffer_wake_handler(sft_event_t *ev)
{
    void                 *chunk;
    sft_buffer_waiter_t  *w;

    (void) ev;

    sft_bufpool_woken(&sft_buffer_cache);

    do {
        while ((w = sft_buffer_waiters.head) != NULL) {
            chunk = sft_bufpool_get(&sft_buffer_cache);
            if (chunk == NULL) {
                break;
            }

            sft_buffer_dequeue(w);
            w->chunk = chunk;
            sft_post_event(w->event);
        }

    } while (sft_buffer_waiters.head
             && sft_bufpool_wait(&sft_buffer_cache) == 1);

    /* who waits for a reservation asks again (and registers again) */

    while ((w = sft_buffer_reservers.head) != NULL) {
        sft_buffer_dequeue(w);
        sft_post_event(w->event);
    }
}
