/*
 * test_usage_lease.c -- a worker's leases on a shared quota, against a
 * store played by the test: a charge spends the lease and is short past
 * it (and asks for more), a wait runs after the answer, a report lost
 * with the connection is sent again under the same number, a refused
 * report leaves the waiting to go on, an idle lease is given back, a
 * store that cannot be reached refuses what the lease does not cover,
 * and a user without a quota never reaches the store.  A write still
 * short asks the other workers for their room and is asked for again
 * once they gave it (or after a bound), refused at once if nobody holds
 * any; a lease asked for is given back whole, at once; a worker that
 * ends gives every lease back and is told when it is done.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_usage_lease.h>
#include "sft_tap.h"


static sft_uint_t          syncs;
static sft_uint_t          asks;
static sft_uint_t          left;
static sft_uint_t          reachable = 1;
static sft_usage_lease_t  *last;
static sft_uint_t          woken;


static sft_int_t
store_sync(sft_usage_lease_t *l)
{
    syncs++;
    last = l;

    return reachable ? SFT_AGAIN : SFT_ERROR;
}


static sft_int_t
store_ask(sft_usage_lease_t *l)
{
    asks++;

    return SFT_AGAIN;
}


static void
done(void *data)
{
    left++;
}


static void
wake(sft_usage_wait_t *w)
{
    (void) w;

    woken++;
}


#define M  ((off_t) 1024 * 1024)


int
main(void)
{
    size_t              size;
    void               *mem;
    uint64_t            seq;
    sft_str_t           name = sft_string("alice");
    sft_str_t           other = sft_string("bob");
    sft_log_t          *log;
    sft_usage_t        *r, *rf;
    sft_usage_lease_t  *l;
    sft_usage_wait_t    w;
    sft_uint_t          n;
    off_t               bytes, files, max = 64 * M;

    printf("1..37\n");

    log = sft_log_init();
    log->log_level = SFT_LOG_CRIT;
    sft_time_update();

    size = sft_usage_memory_size(2);
    mem = calloc(1, size);

    if (mem == NULL || sft_usage_init_memory(mem, size) != SFT_OK) {
        printf("Bail out! no usage zone\n");
        return 1;
    }

    r = sft_usage_record(&name, log);
    rf = sft_usage_record(&other, log);

    sft_usage_lease_provide(store_sync, store_ask, log);

    /* no quota: no lease, no store */

    ok(sft_usage_charge(rf, 0, 0, 100, 1) == SFT_OK && syncs == 0,
       "a user without a quota charges without the store");

    /* the first new file waits for a lease: an eighth of the quota */

    sft_memzero(&w, sizeof(w));
    w.handler = wake;
    ok(sft_usage_lease_need(r, max, 0, 0) == SFT_AGAIN && syncs == 1,
       "a new file waits for the first lease");
    sft_usage_lease_wait(r, &w);
    l = last;
    ok(l->want_bytes == 8 * M && l->seq == 1, "and asks for a slice");
    ok(sft_usage_charge(r, max, 0, 10, 0) == SFT_AGAIN,
       "a charge before the answer is short");

    sft_usage_lease_synced(l, 1, 0, 0, 8 * M, 0, 1);
    ok(woken == 0 && syncs == 2 && l->need_bytes == 10,
       "asked again while it answered: the waiting go with the next one");
    sft_usage_lease_synced(l, 1, 0, 0, 8 * M, 0, 1);
    ok(woken == 1, "whose answer wakes them");

    sft_usage_get(r, &bytes, &files);
    ok(sft_usage_known(r) && bytes == 0, "the shared usage is set");

    /* spent on the worker; near its end, more is asked for */

    ok(sft_usage_charge(r, max, 0, 2 * M, 0) == SFT_OK && syncs == 2,
       "2 MiB of the lease spent without the store");
    sft_usage_get(r, &bytes, &files);
    ok(bytes == 2 * M, "the usage shows it");
    ok(sft_usage_charge(r, max, 0, 3 * M, 0) == SFT_OK && syncs == 3
       && l->out_spent_bytes == 5 * M,
       "under half a slice left: the 5 MiB spent reported, more asked");
    seq = l->seq;

    ok(sft_usage_charge(r, max, 0, 4 * M, 0) == SFT_AGAIN
       && l->need_bytes == 4 * M, "4 MiB past the 3 left is short");

    /* the connection lost: the same report again */

    sft_usage_lease_synced(l, 0, 0, 0, 0, 0, 0);
    ok(l->down && l->out, "a lost answer: the report is kept");
    sft_usage_lease_tick();
    ok(syncs == 4 && l->seq == seq && l->out_spent_bytes == 5 * M,
       "the tick sends it again under its number");

    sft_usage_lease_synced(l, 1, 5 * M, 0, 8 * M, 0, 1);
    ok(!l->down && sft_usage_charge(r, max, 0, 4 * M, 0) == SFT_OK,
       "granted 8 MiB: the 4 fit");

    /* a delete's bytes go to the store, not to the lease */

    sft_usage_credit(r, M, 0);
    ok(syncs == 5 && l->out_freed_bytes == M && l->out_spent_bytes == 4 * M
       && l->lease_bytes == 4 * M,
       "a delete's 1 MiB is reported with the 4 spent");
    ok(l->want_bytes == 4 * M, "and the lease is kept as it is");
    sft_usage_lease_synced(l, 1, 8 * M, 0, 4 * M, 0, 1);

    /* the store full */

    ok(sft_usage_charge(r, max, 0, 5 * M, 0) == SFT_AGAIN,
       "5 MiB past the lease of 4 is short");
    sft_usage_lease_synced(l, 1, 8 * M, 0, 4 * M, 0, 1);
    ok(sft_usage_charge(r, max, 0, 5 * M, 0) == SFT_AGAIN,
       "still short when the store grants no more");
    sft_usage_lease_synced(l, 1, 8 * M, 0, 4 * M, 0, 1);

    /* the store cannot be reached: only the lease is spent */

    reachable = 0;
    ok(sft_usage_charge(r, max, 0, 3 * M, 0) == SFT_OK && l->down,
       "the store down: what the lease covers goes on");
    ok(sft_usage_charge(r, max, 0, 2 * M, 0) == SFT_ERROR,
       "past it, refused: never unchecked");

    /* back, but the store lost the count: counted again */

    reachable = 1;
    sft_usage_lease_tick();
    sft_usage_lease_synced(l, 1, 0, 0, 0, 0, 0);
    ok(!sft_usage_known(r), "not counted in the store: counted again here");

    sft_usage_lease_counted(r, max, 0, 7 * M, 3, 1);
    ok(l->out_count && l->out_recount && l->out_count_bytes == 7 * M,
       "a recount is offered to the store");

    /* idle: given back */

    sft_usage_lease_synced(l, 1, 7 * M, 3, 2 * M, 0, 1);
    sft_current_msec += SFT_USAGE_LEASE_IDLE_MSEC + 1;
    sft_usage_lease_tick();
    ok(l->syncing && l->want_bytes == 0, "an idle lease is given back");
    ok(l->lease_bytes == 0 && l->lease_files == 0,
       "and none of it is spent while that is on its way");
    sft_usage_lease_synced(l, 1, 7 * M, 3, 0, 0, 1);

    /* short: the others are asked for the room they hold */

    ok(sft_usage_lease_need(r, max, 0, 5 * M) == SFT_AGAIN,
       "a write of 5 MiB waits for room");
    sft_usage_lease_wait(r, &w);
    woken = 0;
    sft_usage_lease_synced(l, 1, 7 * M, 3, M, 0, 1);
    ok(asks == 1 && woken == 0,
       "granted 1 MiB: the others are asked, the write waits");
    n = syncs;
    sft_usage_lease_answered(l, 1);
    ok(woken == 0 && syncs == n, "they hold room: it waits for it");
    sft_usage_lease_room(r);
    ok(syncs == n + 1 && l->want_bytes >= 5 * M,
       "room given back: 5 MiB asked for again");
    sft_usage_lease_synced(l, 1, 7 * M, 3, 5 * M, 0, 1);
    ok(woken == 1 && !l->asked
       && sft_usage_charge(r, max, 0, 5 * M, 0) == SFT_OK,
       "granted: the write goes on");
    sft_usage_lease_synced(l, 1, 12 * M, 3, 0, 0, 1);

    /* nobody else holds any: refused at once */

    ok(sft_usage_lease_need(r, max, 0, M) == SFT_AGAIN && asks == 1,
       "a write waits again");
    sft_usage_lease_wait(r, &w);
    sft_usage_lease_synced(l, 1, 12 * M, 3, 0, 0, 1);
    sft_usage_lease_answered(l, 0);
    ok(asks == 2 && woken == 2, "nobody else holds room: refused at once");

    /* no answer: asked again after the bound */

    (void) sft_usage_lease_need(r, max, 0, M);
    sft_usage_lease_wait(r, &w);
    sft_usage_lease_synced(l, 1, 12 * M, 3, 0, 0, 1);
    sft_usage_lease_tick();
    ok(asks == 3 && woken == 2 && !l->syncing,
       "asked: nothing before the bound");
    sft_current_msec += SFT_USAGE_LEASE_ASK_MSEC;
    sft_usage_lease_tick();
    ok(l->syncing && l->retry, "after it, asked for again");
    sft_usage_lease_synced(l, 1, 12 * M, 3, 2 * M, 0, 1);
    ok(woken == 3 && l->lease_bytes == 2 * M, "and its answer decides");

    /* another worker is short: the lease is given back whole at once */

    sft_usage_lease_asked(r);
    ok(l->lease_bytes == 0 && l->syncing && l->out_give
       && l->want_bytes == 0, "asked for: given back, not spent here");
    sft_usage_lease_synced(l, 1, 12 * M, 3, 0, 0, 1);

    /* the worker ends: its leases given back, then it is told */

    ok(sft_usage_lease_leave(done, NULL) == SFT_AGAIN && l->out_give
       && left == 0, "the worker ends: the lease is given back");
    sft_usage_lease_synced(l, 1, 12 * M, 3, 0, 0, 1);
    ok(left == 1 && !l->give, "done once the store answered");

    sft_usage_lease_provide(NULL, NULL, NULL);
    free(mem);

    return failed ? 1 : 0;
}
