/*
 * sft_times.c -- the cached monotonic and wall clocks.
 */

#include <sft_config.h>
#include <sft_core.h>


volatile sft_msec_t  sft_current_msec;
volatile time_t      sft_current_sec;


sft_msec_t
sft_monotonic_msec(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (sft_msec_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


uint64_t
sft_monotonic_usec(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}


void
sft_time_update(void)
{
    sft_current_msec = sft_monotonic_msec();
    sft_current_sec = time(NULL);
}
