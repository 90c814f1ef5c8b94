/*
 * sft_buffer.h -- the shared buffer pool as seen from a worker's event
 * loop: take a transfer chunk, or wait for one without spinning; reserve
 * chunks held long under one cap for all workers.
 */

#ifndef _SFT_BUFFER_H_INCLUDED_
#define _SFT_BUFFER_H_INCLUDED_


#include <sft_bufpool.h>


typedef struct sft_buffer_waiter_s  sft_buffer_waiter_t;
typedef struct sft_buffer_queue_s   sft_buffer_queue_t;

struct sft_buffer_waiter_s {
    sft_event_t           *event;      /* posted when it may go on */
    void                  *chunk;      /* taken for it, its next get's */
    sft_buffer_queue_t    *queue;      /* the one it is in */
    sft_buffer_waiter_t   *next;
    sft_buffer_waiter_t  **prev;
};


sft_int_t sft_buffer_zone_add(sft_cycle_t *cycle, size_t pool_bytes,
    size_t chunk_bytes);
void *sft_buffer_get(sft_buffer_waiter_t *w);
void sft_buffer_put(void *chunk);
void sft_buffer_cancel(sft_buffer_waiter_t *w);
sft_int_t sft_buffer_reserve(sft_buffer_waiter_t *w, size_t n, size_t max);
void sft_buffer_unreserve(size_t n);
void sft_buffer_reclaim(sft_uint_t slot, sft_log_t *log);
size_t sft_buffer_chunk_size(void);
size_t sft_buffer_total(void);


extern sft_module_t  sft_buffer_module;


#endif /* _SFT_BUFFER_H_INCLUDED_ */
