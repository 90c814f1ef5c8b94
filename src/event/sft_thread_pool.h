/*
 * sft_thread_pool.h -- per-worker thread pools for blocking calls; results
 * come back to the event loop through an eventfd.
 */

#ifndef _SFT_THREAD_POOL_H_INCLUDED_
#define _SFT_THREAD_POOL_H_INCLUDED_


typedef struct sft_thread_task_s  sft_thread_task_t;
typedef struct sft_thread_pool_s  sft_thread_pool_t;

struct sft_thread_task_s {
    sft_thread_task_t   *next;
    sft_uint_t           id;
    void                *ctx;
    void               (*handler)(void *data, sft_log_t *log);  /* thread */
    sft_event_t          event;                   /* loop, on completion */
};


typedef struct {
    sft_thread_task_t   *first;
    sft_thread_task_t  **last;
} sft_thread_queue_t;


struct sft_thread_pool_s {
    pthread_mutex_t      mtx;
    pthread_cond_t       cond;
    sft_thread_queue_t   queue;
    sft_int_t            waiting;

    pthread_mutex_t      done_mtx;
    sft_thread_queue_t   done;
    sft_fd_t             notify_fd;

    sft_log_t           *log;

    sft_str_t            name;
    sft_uint_t           threads;
    sft_int_t            max_queue;
    sft_uint_t           running;
    pthread_t           *tids;
    sft_uint_t           stop;

    sft_str_t            file;
    sft_uint_t           line;
};


sft_thread_task_t *sft_thread_task_alloc(sft_pool_t *pool, size_t size);
sft_int_t sft_thread_task_post(sft_thread_pool_t *tp,
    sft_thread_task_t *task);
sft_int_t sft_thread_task_cancel(sft_thread_pool_t *tp,
    sft_thread_task_t *task);
sft_thread_pool_t *sft_thread_pool_get(sft_cycle_t *cycle, sft_str_t *name);
sft_thread_pool_t *sft_thread_pool_ref(sft_conf_t *cf, sft_str_t *name);

sft_int_t sft_thread_pool_start(sft_thread_pool_t *tp, sft_log_t *log);
void sft_thread_pool_stop(sft_thread_pool_t *tp);
void sft_thread_pool_complete(sft_thread_pool_t *tp);


#endif /* _SFT_THREAD_POOL_H_INCLUDED_ */
