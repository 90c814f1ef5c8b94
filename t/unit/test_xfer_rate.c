/*
 * test_xfer_rate.c -- the token bucket of a user's transfer rate
 * (src/xfer/sft_xfer_rate.c) on a clock the test moves: the first burst,
 * the delay when it is spent, the refill, the cap, and that the bytes let
 * through over a simulated span keep to the rate.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_xfer_rate.h>
#include "sft_tap.h"


int
main(void)
{
    size_t           n;
    off_t            total;
    sft_msec_t       now, delay;
    sft_xfer_rate_t  r;

    printf("1..13\n");

    sft_xfer_rate_init(&r, 0, 0);
    ok(sft_xfer_rate_allow(&r, 123456, 0, &delay) == 123456,
       "no rate: everything at once");

    sft_xfer_rate_init(&r, 4000, 1000);
    ok(sft_xfer_rate_allow(&r, 100000, 1000, &delay) == 1000,
       "4000 B/s: a quarter second's worth to start");
    ok(sft_xfer_rate_allow(&r, 10, 1000, &delay) == 10,
       "less than the tokens: what was asked");

    sft_xfer_rate_spend(&r, 1000);
    delay = 0;
    ok(sft_xfer_rate_allow(&r, 100, 1000, &delay) == 0,
       "bucket spent: nothing");
    ok(delay == 31, "come back when an eighth is refilled (125 B: 31 ms)");

    ok(sft_xfer_rate_allow(&r, 10000, 1100, &delay) == 400,
       "100 ms later: 400 bytes");

    ok(sft_xfer_rate_allow(&r, 10000, 5000, &delay) == 1000,
       "a long pause refills no more than the bucket");

    sft_xfer_rate_spend(&r, 5000);
    delay = 0;
    ok(sft_xfer_rate_allow(&r, 1, 5000, &delay) == 0 && delay == 1031,
       "overspent (a sendfile slice): the debt is waited out first");
    ok(sft_xfer_rate_allow(&r, 1, 5000 + 1031, &delay) == 1,
       "and then tokens again, even after more than a second");

    sft_xfer_rate_init(&r, 1, 0);
    ok(sft_xfer_rate_allow(&r, 10, 0, &delay) == 1,
       "1 B/s: at least one byte in the bucket");
    sft_xfer_rate_spend(&r, 1);
    delay = 0;
    ok(sft_xfer_rate_allow(&r, 10, 0, &delay) == 0 && delay == 10,
       "and a delay of at least 10 ms");

    /* 100 kB/s for 10 simulated seconds in 7 ms steps, 64 KiB wanted */

    sft_xfer_rate_init(&r, 100000, 0);
    total = 0;

    for (now = 0; now <= 10000; now += 7) {
        n = sft_xfer_rate_allow(&r, 65536, now, &delay);
        sft_xfer_rate_spend(&r, n);
        total += n;
    }

    ok(total >= 1000000 && total <= 1000000 + 25000 + 700,
       "10 s at 100 kB/s: 1 MB plus at most the first bucket");

    sft_xfer_rate_spend(&r, 0);
    ok(r.tokens <= 25000, "tokens never above the bucket");

    return failed ? 1 : 0;
}
