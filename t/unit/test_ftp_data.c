/*
 * test_ftp_data.c -- the FTP data channel rules: a passive connection is
 * taken only from the control connection's address, each worker's slice
 * of passive_ports is its own and covers the range, and the address PASV
 * names: the most specific pasv_address network's, or with "proxy" the
 * balancer's address from the PROXY protocol header.
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


/* a client of the four rules of main() and what PASV names to it */

static const struct {
    const char  *client;
    const char  *announced;
    const char  *name;
} pasv_cases[] = {
    { "10.1.2.3", "10.1.2.99", "pasv_address: a /32 beats a /16 and a /8" },
    { "10.1.2.4", "10.9.9.9", "pasv_address: a /16 beats a /8, after it" },
    { "10.2.0.1", "10.0.0.1", "pasv_address: the /8 for the rest of 10/8" },
    { "192.0.2.1", "203.0.113.5",
      "pasv_address: the default for other clients" },
};


/* a pasv_address rule as the directive makes it */

static void
rule(sft_ftp_pasv_addr_t *pa, const char *addr, const char *net,
    sft_uint_t bits)
{
    sft_str_t  text;

    memset(pa, 0, sizeof(*pa));
    inet_pton(AF_INET, addr, &pa->addr);

    if (net) {
        text.data = (u_char *) net;
        text.len = strlen(net);
        sft_cidr_parse(&text, &pa->net);
        pa->bits = bits;
    }
}


/* what PASV names to client, who reached the balancer on dst (or NULL) */

static const char *
announced_via(sft_array_t *rules, const char *client, const char *dst)
{
    struct in_addr           *in;
    struct sockaddr_storage   ss, ds;
    static char               text[INET6_ADDRSTRLEN];

    sin4(&ss, client, 40000);

    if (dst && strchr(dst, ':')) {
        sin6(&ds, dst, 21);

    } else if (dst) {
        sin4(&ds, dst, 21);
    }

    in = sft_ftp_pasv_lookup(rules, (struct sockaddr *) &ss,
                             dst ? (struct sockaddr *) &ds : NULL);

    if (in == NULL) {
        return "local";
    }

    return inet_ntop(AF_INET, in, text, sizeof(text));
}


static const char *
announced(sft_array_t *rules, const char *client)
{
    return announced_via(rules, client, NULL);
}


int
main(void)
{
    sft_array_t              rules;
    sft_ftp_pasv_addr_t      pa[4];
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

    /* pasv_address: the most specific network wins, order does not */

    memset(&rules, 0, sizeof(rules));
    rules.elts = pa;

    rule(&pa[0], "10.0.0.1", "10.0.0.0/8", 8);
    rules.nelts = 1;
    ok(strcmp(announced(&rules, "10.1.2.3"), "10.0.0.1") == 0,
       "pasv_address: a client in the network gets its address");
    ok(strcmp(announced(&rules, "192.0.2.1"), "local") == 0,
       "pasv_address: others get the local address without a default");

    rule(&pa[1], "10.9.9.9", "10.1.0.0/16", 16);
    rule(&pa[2], "203.0.113.5", NULL, 0);
    rule(&pa[3], "10.1.2.99", "10.1.2.3/32", 32);
    rules.nelts = 4;

    for (i = 0; i < sft_nelems(pasv_cases); i++) {
        ok(strcmp(announced(&rules, pasv_cases[i].client),
                  pasv_cases[i].announced) == 0, pasv_cases[i].name);
    }

    pa[0] = pa[3];
    rule(&pa[3], "10.0.0.1", "10.0.0.0/8", 8);
    ok(strcmp(announced(&rules, "10.1.2.3"), "10.1.2.99") == 0
       && strcmp(announced(&rules, "10.3.0.1"), "10.0.0.1") == 0,
       "pasv_address: the same in another order");

    /* pasv_address proxy: the balancer's address the client reached */

    rule(&pa[0], "0.0.0.0", NULL, 0);
    pa[0].proxy = 1;
    rule(&pa[1], "10.0.0.1", "10.0.0.0/8", 8);
    rules.nelts = 2;

    ok(strcmp(announced_via(&rules, "192.0.2.1", "203.0.113.80"),
              "203.0.113.80") == 0,
       "pasv_address proxy: the PROXY header's destination");
    ok(strcmp(announced_via(&rules, "192.0.2.1", NULL), "local") == 0,
       "pasv_address proxy: without a header, the local address");
    ok(strcmp(announced_via(&rules, "192.0.2.1", "2001:db8::80"), "local")
       == 0,
       "pasv_address proxy: an IPv6 destination is not named in 227");
    ok(strcmp(announced_via(&rules, "10.1.2.3", "203.0.113.80"), "10.0.0.1")
       == 0,
       "pasv_address proxy: a more specific network still wins");

    printf("1..%lu\n", tests);

    return failed ? 1 : 0;
}
