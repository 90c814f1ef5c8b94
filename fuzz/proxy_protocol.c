/*
 * proxy_protocol.c -- libFuzzer target for the PROXY protocol header
 * parser, on a copy of exactly the input (a read past it is caught) and on
 * every prefix of it, as the header arrives in pieces.  Checked: an
 * accepted header is no longer than the input nor than the v1 or v2 limit;
 * an address, if any, is IPv4 or IPv6 with its family's length; a refusal
 * says why; every prefix shorter than an accepted header waits for more,
 * and no prefix of a refused input is accepted.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_proxy_protocol.h>

#include <assert.h>


static sft_int_t
check(const u_char *buf, size_t len)
{
    sft_int_t              rc;
    const char            *reason;
    sft_proxy_protocol_t   pp;

    reason = NULL;
    rc = sft_proxy_protocol_parse(buf, len, &pp, &reason);

    if (rc == SFT_ERROR) {
        assert(reason != NULL);
        return rc;
    }

    if (rc == SFT_AGAIN) {
        assert(len < SFT_PROXY_PROTOCOL_MAX);
        return rc;
    }

    assert(rc > 0 && (size_t) rc <= len);
    assert(rc <= SFT_PROXY_PROTOCOL_MAX);
    assert(buf[0] != 'P' || rc <= SFT_PROXY_PROTOCOL_V1_MAX);

    if (pp.socklen == sizeof(struct sockaddr_in)) {
        assert(pp.src.ss_family == AF_INET && pp.dst.ss_family == AF_INET);

    } else if (pp.socklen == sizeof(struct sockaddr_in6)) {
        assert(pp.src.ss_family == AF_INET6
               && pp.dst.ss_family == AF_INET6);

    } else {
        assert(pp.socklen == 0);
    }

    return rc;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t      i;
    u_char     *buf;
    sft_int_t   rc, prc;

    buf = malloc(size ? size : 1);
    assert(buf != NULL);
    memcpy(buf, data, size);

    rc = check(buf, size);

    for (i = 0; i < size; i++) {
        prc = check(buf, i);

        if (rc > 0) {
            assert(i < (size_t) rc ? prc == SFT_AGAIN : prc == rc);

        } else if (rc == SFT_ERROR) {
            assert(prc <= 0);
        }
    }

    free(buf);

    return 0;
}
