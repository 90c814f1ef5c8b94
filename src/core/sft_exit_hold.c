/*
 * sft_exit_hold.c -- a worker's last work before it exits: once its
 * sessions are gone, each module's hold starts once (a store's leases
 * given back, say); the worker goes on running its loop (no client is
 * left) until every hold is done, or exits anyway when the bound
 * expires, leaving the rest to others (a lease is swept).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_exit_hold.h>


static void sft_exit_hold_expired(sft_event_t *ev);


static struct {
    sft_exit_hold_t       *holds;
    sft_event_t            timer;
    unsigned               started:1;
} sft_exit_hold;


void
sft_exit_hold_add(sft_exit_hold_t *h)
{
    h->busy = 0;
    h->next = sft_exit_hold.holds;
    sft_exit_hold.holds = h;
}


void
sft_exit_hold_done(sft_exit_hold_t *h)
{
    h->busy = 0;
}


sft_uint_t
sft_exit_hold_over(sft_log_t *log)
{
    sft_exit_hold_t  *h;

    if (!sft_exit_hold.started) {
        sft_exit_hold.started = 1;

        /* busy first: a start may be done at once, and say so */

        for (h = sft_exit_hold.holds; h; h = h->next) {
            h->busy = 1;

            if (h->start(h) != SFT_AGAIN) {
                h->busy = 0;
            }

            if (h->busy && !sft_exit_hold.timer.timer_set) {
                sft_exit_hold.timer.handler = sft_exit_hold_expired;
                sft_exit_hold.timer.log = log;
                sft_add_timer(&sft_exit_hold.timer, SFT_EXIT_HOLD_MSEC);
            }
        }
    }

    if (sft_exit_hold.timer.timedout) {
        return 1;
    }

    for (h = sft_exit_hold.holds; h; h = h->next) {
        if (h->busy) {
            return 0;
        }
    }

    if (sft_exit_hold.timer.timer_set) {
        sft_del_timer(&sft_exit_hold.timer);
    }

    return 1;
}


static void
sft_exit_hold_expired(sft_event_t *ev)
{
    sft_log_error(SFT_LOG_WARN, ev->log, 0,
                  "exiting before its last work was done in %d ms: the "
                  "rest is left to the other processes", SFT_EXIT_HOLD_MSEC);
}
