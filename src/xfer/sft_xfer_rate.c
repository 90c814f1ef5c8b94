/*
 * sft_xfer_rate.c -- the token bucket of a user's rate.  The bucket holds
 * a quarter of a second's worth (and starts full), so a limited sendfile(2)
 * goes in slices; an empty bucket asks the caller to come back when an
 * eighth of it is refilled, at least 10 ms later.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_xfer_rate.h>


#define SFT_XFER_RATE_MIN_DELAY  10     /* ms */


static off_t
sft_xfer_rate_burst(sft_xfer_rate_t *r)
{
    return sft_max(r->rate / 4, (off_t) 1);
}


void
sft_xfer_rate_init(sft_xfer_rate_t *r, off_t rate, sft_msec_t now)
{
    r->rate = rate;
    r->tokens = rate ? sft_xfer_rate_burst(r) : 0;
    r->last = now;
}


/* how much of want may move now (at least 1 byte), or 0 and *delay */

size_t
sft_xfer_rate_allow(sft_xfer_rate_t *r, size_t want, sft_msec_t now,
    sft_msec_t *delay)
{
    off_t       burst;
    sft_msec_t  elapsed, d;

    if (r->rate == 0) {
        return want;
    }

    burst = sft_xfer_rate_burst(r);
    elapsed = now - r->last;

    /*
     * a pause long enough to pay a debt (a READ of SFTP spends more than
     * the bucket holds) and fill the bucket fills it, without the product
     * of a long pause and the rate
     */

    if (elapsed > 0) {
        r->last = now;

        if ((off_t) elapsed > (burst - r->tokens) * 1000 / r->rate) {
            r->tokens = burst;

        } else {
            r->tokens += r->rate * (off_t) elapsed / 1000;
        }
    }

    if (r->tokens > 0) {
        return (size_t) sft_min((off_t) want, r->tokens);
    }

    d = (sft_msec_t) ((burst / 8 - r->tokens) * 1000 / r->rate);
    *delay = sft_max(d, (sft_msec_t) SFT_XFER_RATE_MIN_DELAY);

    return 0;
}


void
sft_xfer_rate_spend(sft_xfer_rate_t *r, size_t n)
{
    if (r->rate) {
        r->tokens -= (off_t) n;
    }
}
