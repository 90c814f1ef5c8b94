/*
 * sft_exit_hold.h -- a worker's last work, after its last session ended
 * and before its exit_process hooks: a module's hold keeps the worker on
 * its loop until the work is over, for SFT_EXIT_HOLD_MSEC at most.
 */

#ifndef _SFT_EXIT_HOLD_H_INCLUDED_
#define _SFT_EXIT_HOLD_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>


#define SFT_EXIT_HOLD_MSEC  2000


typedef struct sft_exit_hold_s  sft_exit_hold_t;

/* SFT_AGAIN: the work goes on, sft_exit_hold_done(h) follows */
typedef sft_int_t (*sft_exit_hold_pt)(sft_exit_hold_t *h);

struct sft_exit_hold_s {
    sft_exit_hold_pt       start;
    sft_exit_hold_t       *next;
    unsigned               busy:1;
};


/* in init_process */
void sft_exit_hold_add(sft_exit_hold_t *h);
void sft_exit_hold_done(sft_exit_hold_t *h);

/* the worker may exit now: the holds start at the first call */
sft_uint_t sft_exit_hold_over(sft_log_t *log);


#endif /* _SFT_EXIT_HOLD_H_INCLUDED_ */
