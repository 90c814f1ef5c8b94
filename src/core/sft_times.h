/*
 * sft_times.h -- the cached clock each worker updates once per loop turn.
 */

#ifndef _SFT_TIMES_H_INCLUDED_
#define _SFT_TIMES_H_INCLUDED_


extern volatile sft_msec_t  sft_current_msec;
extern volatile time_t      sft_current_sec;

void sft_time_update(void);
sft_msec_t sft_monotonic_msec(void);
uint64_t sft_monotonic_usec(void);


#endif /* _SFT_TIMES_H_INCLUDED_ */
