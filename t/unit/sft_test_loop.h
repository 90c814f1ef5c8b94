/*
 * sft_test_loop.h -- a test's event loop run for at most ms, or until a
 * counter its callbacks move reaches a target (the S3 tests' wait for
 * their requests and credential providers), and the counting of a
 * provider's updates and failures.
 */

#ifndef _SFT_TEST_LOOP_H_INCLUDED_
#define _SFT_TEST_LOOP_H_INCLUDED_


static void
sft_test_loop_guard(sft_event_t *ev)
{
    (void) ev;
}


static sft_uint_t
sft_test_loop(sft_cycle_t *cycle, sft_msec_t ms, sft_uint_t *counter,
    sft_uint_t target)
{
    sft_msec_t   end;
    sft_event_t  guard;

    sft_memzero(&guard, sizeof(guard));
    guard.handler = sft_test_loop_guard;
    guard.log = cycle->log;

    end = sft_current_msec + ms;

    while (*counter < target && sft_current_msec < end) {
        sft_add_timer(&guard, end - sft_current_msec);
        sft_process_events_and_timers(cycle);
    }

    sft_del_timer(&guard);

    return *counter >= target;
}


/* what a credentials provider's on_update counts */

static void
sft_test_count(sft_int_t rc, sft_uint_t *updates, sft_uint_t *failures)
{
    if (rc == SFT_OK) {
        (*updates)++;

    } else {
        (*failures)++;
    }
}


#endif /* _SFT_TEST_LOOP_H_INCLUDED_ */
