/*
 * test_ftp_data.c -- the FTP data channel rules: a passive connection is
 * taken only from the control connection's address, and each worker's
 * slice of passive_ports is its own and covers the range.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>
#include "sft_tap.h"


static void
sin4(struct sockaddr_storage *ss, const char *addr, int port)
{
    struct sockaddr_in  *sin = (struct sockaddr_in *) ss;

    memset(ss, 0, sizeof(*ss));
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    inet_pton(AF_INET, addr, &sin->sin_addr);
}


static void
sin6(struct sockaddr_storage *ss, const char *addr, int port)
{
    struct sockaddr_in6  *sin6 = (struct sockaddr_in6 *) ss;

    memset(ss, 0, sizeof(*ss));
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    inet_pton(AF_INET6, addr, &sin6->sin6_addr);
}


int
main(void)
{
    sft_uint_t               lo, hi, w, i, prev, ok_all;
    struct sockaddr_storage  a, b;

    sin4(&a, "127.0.0.1", 2121);
    sin4(&b, "127.0.0.1", 50000);
    ok(sft_ftp_same_address((struct sockaddr *) &a, (struct sockaddr *) &b),
       "same IPv4 address, other port: accepted");

    sin4(&b, "127.0.0.2", 2121);
    ok(!sft_ftp_same_address((struct sockaddr *) &a, (struct sockaddr *) &b),
       "other IPv4 address: refused");

    sin6(&b, "::ffff:127.0.0.1", 2121);
    ok(!sft_ftp_same_address((struct sockaddr *) &a, (struct sockaddr *) &b),
       "other family: refused");

    sin6(&a, "2001:db8::1", 1);
    sin6(&b, "2001:db8::1", 2);
    ok(sft_ftp_same_address((struct sockaddr *) &a, (struct sockaddr *) &b),
       "same IPv6 address: accepted");

    sin6(&b, "2001:db8::2", 1);
    ok(!sft_ftp_same_address((struct sockaddr *) &a, (struct sockaddr *) &b),
       "other IPv6 address: refused");

    /* slices: disjoint, in order, covering 40000-40999 for 1..8 workers */

    ok_all = 1;

    for (w = 1; w <= 8; w++) {
        prev = 39999;

        for (i = 0; i < w; i++) {
            sft_ftp_passive_slice(40000, 40999, i, w, &lo, &hi);

            if (lo != prev + 1 || hi < lo) {
                ok_all = 0;
            }

            prev = hi;
        }

        if (prev != 40999) {
            ok_all = 0;
        }
    }

    ok(ok_all, "worker slices are disjoint and cover the range");

    sft_ftp_passive_slice(40000, 40999, 5, 2, &lo, &hi);
    ok(lo == 40500 && hi == 40999, "a slot past the count wraps around");

    sft_ftp_passive_slice(40000, 40001, 0, 4, &lo, &hi);
    ok(lo == 40000 && hi == 40001, "fewer ports than workers: all shared");

    printf("1..%lu\n", tests);

    return failed ? 1 : 0;
}
