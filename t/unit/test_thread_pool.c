/*
 * test_thread_pool.c -- the worker thread pool without an event loop:
 * tasks run on the threads, every completion comes back through the
 * eventfd exactly once, and a full queue refuses work.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <poll.h>
#include "sft_tap.h"


#define TASKS  2000


typedef struct {
    sft_uint_t   n;
    sft_uint_t   ran_on_thread;
    pthread_t    loop_thread;
} test_ctx_t;


static sft_uint_t  completed[TASKS];
static sft_uint_t  completions;




static void
task_handler(void *data, sft_log_t *log)
{
    test_ctx_t  *ctx = data;

    (void) log;

    ctx->ran_on_thread = !pthread_equal(pthread_self(), ctx->loop_thread);
}


static sft_uint_t  wrong_thread;

static void
task_done(sft_event_t *ev)
{
    test_ctx_t  *ctx = ev->data;

    if (!ctx->ran_on_thread) {
        wrong_thread++;
    }

    completed[ctx->n]++;
    completions++;
}


static void
blocking_handler(void *data, sft_log_t *log)
{
    (void) data;
    (void) log;

    usleep(200 * 1000);
}


int
main(void)
{
    sft_uint_t          i, twice, missing;
    sft_log_t          *log;
    sft_pool_t         *pool;
    sft_thread_pool_t   tp;
    sft_thread_task_t  *task;
    test_ctx_t         *ctx;
    struct pollfd       pfd;
    sft_int_t           rc, refused;

    printf("1..6\n");

    log = sft_log_init();
    pool = sft_create_pool(4096, log);

    sft_memzero(&tp, sizeof(tp));
    sft_str_set(&tp.name, "test");
    tp.threads = 4;
    tp.max_queue = TASKS;

    ok(sft_thread_pool_start(&tp, log) == SFT_OK, "pool started");

    for (i = 0; i < TASKS; i++) {
        task = sft_thread_task_alloc(pool, sizeof(test_ctx_t));
        ctx = task->ctx;
        ctx->n = i;
        ctx->loop_thread = pthread_self();
        task->handler = task_handler;
        task->event.handler = task_done;
        task->event.data = ctx;

        if (sft_thread_task_post(&tp, task) != SFT_OK) {
            break;
        }
    }

    ok(i == TASKS, "all tasks posted");

    /* the "event loop": wait on the eventfd, at most 10 s */

    for (i = 0; i < 1000 && completions < TASKS; i++) {
        pfd.fd = tp.notify_fd;
        pfd.events = POLLIN;

        if (poll(&pfd, 1, 10) > 0) {
            sft_thread_pool_complete(&tp);
        }
    }

    twice = 0;
    missing = 0;

    for (i = 0; i < TASKS; i++) {
        twice += completed[i] > 1;
        missing += completed[i] == 0;
    }

    ok(missing == 0 && completions == TASKS, "every task completed");
    ok(twice == 0, "no task completed twice");
    ok(wrong_thread == 0, "handlers ran on pool threads, not the loop");

    /* a full queue says no instead of growing */

    log->log_level = SFT_LOG_CRIT;     /* the overflow lines are expected */
    tp.max_queue = 2;
    refused = 0;

    for (i = 0; i < 12; i++) {
        task = sft_thread_task_alloc(pool, sizeof(test_ctx_t));
        ctx = task->ctx;
        ctx->n = 0;
        ctx->loop_thread = pthread_self();
        task->handler = blocking_handler;
        task->event.handler = task_done;
        task->event.data = ctx;

        rc = sft_thread_task_post(&tp, task);
        refused += (rc != SFT_OK);
    }

    ok(refused > 0, "a full queue refuses tasks");

    sft_thread_pool_stop(&tp);
    sft_destroy_pool(pool);

    return failed ? 1 : 0;
}
