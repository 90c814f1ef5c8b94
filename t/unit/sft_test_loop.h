/*
 * sft_test_loop.h -- the event loop of a test program that talks to a
 * server: the cycle, the loop run until a counter reaches a target or a
 * time is up, and the counting of a credentials provider's updates.
 */

#ifndef _SFT_TEST_LOOP_H_INCLUDED_
#define _SFT_TEST_LOOP_H_INCLUDED_


static sft_cycle_t  cycle;


static void
sft_test_guard(sft_event_t *ev)
{
    (void) ev;
}


/* the cycle with its log, pool and event loop, or a bail-out */

static void
sft_test_loop_init(void)
{
    cycle.log = sft_log_init();
    cycle.pool = sft_create_pool(16384, cycle.log);
    sft_cycle = &cycle;

    if (cycle.pool == NULL || sft_event_init(&cycle, 256) != SFT_OK) {
        printf("Bail out! no event loop\n");
        exit(1);
    }
}


/* the loop for ms, or until *counter reaches target */

static sft_uint_t
spin(sft_msec_t ms, sft_uint_t *counter, sft_uint_t target)
{
    sft_msec_t   end;
    sft_event_t  guard;

    sft_memzero(&guard, sizeof(guard));
    guard.handler = sft_test_guard;
    guard.log = cycle.log;

    end = sft_current_msec + ms;

    while (*counter < target && sft_current_msec < end) {
        sft_add_timer(&guard, end - sft_current_msec);
        sft_process_events_and_timers(&cycle);
    }

    sft_del_timer(&guard);

    return *counter >= target;
}


/* what a credentials provider's on_update counts (inline: not every
   program has a provider) */

static inline void
sft_test_count(sft_int_t rc, sft_uint_t *updates, sft_uint_t *failures)
{
    if (rc == SFT_OK) {
        (*updates)++;

    } else {
        (*failures)++;
    }
}


#endif /* _SFT_TEST_LOOP_H_INCLUDED_ */
