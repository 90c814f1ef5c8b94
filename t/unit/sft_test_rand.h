/*
 * sft_test_rand.h -- a seeded xorshift generator for the C unit tests, so
 * that a failing run repeats exactly.
 */

#ifndef _SFT_TEST_RAND_H_INCLUDED_
#define _SFT_TEST_RAND_H_INCLUDED_

#include <stddef.h>
#include <stdint.h>


static uint64_t  rng = 0x9e3779b97f4a7c15ULL;


static inline uint64_t
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;

    return rng;
}


static inline void
rnd_fill(unsigned char *p, size_t n)
{
    while (n--) {
        *p++ = (unsigned char) rnd();
    }
}


#endif /* _SFT_TEST_RAND_H_INCLUDED_ */
