/*
 * sft_event_timer.c -- event timers in a binary min-heap keyed by the
 * monotonic millisecond they fire at.
 */

#include <sft_config.h>
#include <sft_core.h>


static sft_event_t  **sft_timer_heap;
static sft_uint_t     sft_timer_n;
static sft_uint_t     sft_timer_alloc;


static void
sft_timer_swap(sft_uint_t a, sft_uint_t b)
{
    sft_event_t  *t;

    t = sft_timer_heap[a];
    sft_timer_heap[a] = sft_timer_heap[b];
    sft_timer_heap[b] = t;
    sft_timer_heap[a]->timer_index = a;
    sft_timer_heap[b]->timer_index = b;
}


static void
sft_timer_up(sft_uint_t i)
{
    sft_uint_t  parent;

    while (i > 0) {
        parent = (i - 1) / 2;

        if (sft_timer_heap[parent]->timer_key <= sft_timer_heap[i]->timer_key)
        {
            break;
        }

        sft_timer_swap(parent, i);
        i = parent;
    }
}


static void
sft_timer_down(sft_uint_t i)
{
    sft_uint_t  l, r, m;

    for ( ;; ) {
        l = 2 * i + 1;
        r = l + 1;
        m = i;

        if (l < sft_timer_n
            && sft_timer_heap[l]->timer_key < sft_timer_heap[m]->timer_key)
        {
            m = l;
        }

        if (r < sft_timer_n
            && sft_timer_heap[r]->timer_key < sft_timer_heap[m]->timer_key)
        {
            m = r;
        }

        if (m == i) {
            return;
        }

        sft_timer_swap(i, m);
        i = m;
    }
}


void
sft_add_timer(sft_event_t *ev, sft_msec_t timer)
{
    sft_uint_t    n;
    sft_event_t **heap;

    if (ev->timer_set) {
        sft_del_timer(ev);
    }

    if (sft_timer_n == sft_timer_alloc) {
        n = sft_timer_alloc ? sft_timer_alloc * 2 : 256;
        heap = realloc(sft_timer_heap, n * sizeof(sft_event_t *));

        if (heap == NULL) {
            sft_log_error(SFT_LOG_ALERT, ev->log, sft_errno,
                          "realloc() of the timer heap failed");
            return;
        }

        sft_timer_heap = heap;
        sft_timer_alloc = n;
    }

    ev->timer_key = sft_current_msec + timer;
    ev->timer_index = sft_timer_n;
    ev->timer_set = 1;
    sft_timer_heap[sft_timer_n++] = ev;

    sft_timer_up(ev->timer_index);
}


void
sft_del_timer(sft_event_t *ev)
{
    sft_uint_t  i;

    if (!ev->timer_set) {
        return;
    }

    i = ev->timer_index;
    ev->timer_set = 0;
    sft_timer_n--;

    if (i != sft_timer_n) {
        sft_timer_heap[i] = sft_timer_heap[sft_timer_n];
        sft_timer_heap[i]->timer_index = i;
        sft_timer_down(i);
        sft_timer_up(i);
    }
}


/* milliseconds until the next timer, or -1 for none */

sft_msec_t
sft_event_find_timer(void)
{
    sft_msec_t  delta;

    if (sft_timer_n == 0) {
        return -1;
    }

    delta = sft_timer_heap[0]->timer_key - sft_current_msec;

    return delta > 0 ? delta : 0;
}


void
sft_event_expire_timers(void)
{
    sft_event_t  *ev;

    while (sft_timer_n
           && sft_timer_heap[0]->timer_key <= sft_current_msec)
    {
        ev = sft_timer_heap[0];
        sft_del_timer(ev);

        ev->timedout = 1;
        ev->handler(ev);
    }
}
