/*
 * sft_xfer_rate.h -- a user's transfer rate (download_rate, upload_rate)
 * as a token bucket per session and direction: how many bytes may move
 * now, or how long until some may.
 */

#ifndef _SFT_XFER_RATE_H_INCLUDED_
#define _SFT_XFER_RATE_H_INCLUDED_


typedef struct {
    off_t        rate;          /* bytes/s, 0: unlimited */
    off_t        tokens;        /* may go negative after a spend */
    sft_msec_t   last;          /* when tokens were last added */
} sft_xfer_rate_t;


void sft_xfer_rate_init(sft_xfer_rate_t *r, off_t rate, sft_msec_t now);
size_t sft_xfer_rate_allow(sft_xfer_rate_t *r, size_t want, sft_msec_t now,
    sft_msec_t *delay);
void sft_xfer_rate_spend(sft_xfer_rate_t *r, size_t n);


#endif /* _SFT_XFER_RATE_H_INCLUDED_ */
