/*
 * sft_test_uring.h -- the event loop's part of the worker's io_uring for
 * the C unit tests: submit, wait on the eventfd, run the completions.
 */

#ifndef _SFT_TEST_URING_H_INCLUDED_
#define _SFT_TEST_URING_H_INCLUDED_

#include <poll.h>


/* until *counter reaches want, at most rounds of 10 ms */

static void
sft_test_uring_spin(sft_uint_t *counter, sft_uint_t want, sft_uint_t rounds)
{
    sft_uint_t     i;
    struct pollfd  pfd;

    for (i = 0; i < rounds && *counter < want; i++) {
        sft_uring_submit();

        pfd.fd = sft_uring_fd();
        pfd.events = POLLIN;

        if (poll(&pfd, 1, 10) > 0) {
            sft_uring_complete();
        }
    }
}


#endif /* _SFT_TEST_URING_H_INCLUDED_ */
