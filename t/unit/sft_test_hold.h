/*
 * sft_test_hold.h -- a task that holds a thread of a pool until the test
 * lets it go, so that what is posted after it stays queued (the tests of
 * cancelling a request before a thread takes it).
 */

#ifndef _SFT_TEST_HOLD_H_INCLUDED_
#define _SFT_TEST_HOLD_H_INCLUDED_


#include <poll.h>


typedef struct {
    int                  fds[2];
    sft_thread_pool_t   *tp;
    sft_thread_task_t   *task;
    sft_uint_t           done;
} sft_test_hold_t;


static void
sft_test_hold_run(void *data, sft_log_t *log)
{
    char              c;
    sft_test_hold_t  *h = data;

    (void) log;

    if (read(h->fds[0], &c, 1) != 1) {
        printf("# the held thread's read failed\n");
    }
}


static void
sft_test_hold_done(sft_event_t *ev)
{
    sft_test_hold_t  *h = ev->data;

    h->done = 1;
}


/* tp's one thread (the pool has one) is busy until sft_test_release() */

static sft_int_t
sft_test_hold(sft_test_hold_t *h, sft_thread_pool_t *tp, sft_pool_t *pool)
{
    h->tp = tp;
    h->done = 0;
    h->task = sft_thread_task_alloc(pool, 0);

    if (h->task == NULL || pipe(h->fds) == -1) {
        return SFT_ERROR;
    }

    h->task->ctx = h;
    h->task->handler = sft_test_hold_run;
    h->task->event.handler = sft_test_hold_done;
    h->task->event.data = h;

    return sft_thread_task_post(tp, h->task);
}


/* the thread goes on; its completion and those before it, within 5 s */

static void
sft_test_release(sft_test_hold_t *h)
{
    int            i;
    struct pollfd  pfd;

    if (write(h->fds[1], "x", 1) != 1) {
        printf("# releasing the held thread failed\n");
    }

    for (i = 0; i < 500 && !h->done; i++) {
        pfd.fd = h->tp->notify_fd;
        pfd.events = POLLIN;

        if (poll(&pfd, 1, 10) > 0) {
            sft_thread_pool_complete(h->tp);
        }
    }

    close(h->fds[0]);
    close(h->fds[1]);
}


#endif /* _SFT_TEST_HOLD_H_INCLUDED_ */
