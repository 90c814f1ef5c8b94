/*
 * test_proxy_protocol.c -- the PROXY protocol parser: v1 and v2 headers
 * accepted whole and piece by piece with the addresses they carry, and
 * each kind of malformed header refused.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_proxy_protocol.h>
#include "sft_tap.h"


static const char  v2_sig[] = "\r\n\r\n\0\r\nQUIT\n";


static sft_int_t
parse(const void *buf, size_t len, sft_proxy_protocol_t *pp,
    const char **reason)
{
    *reason = NULL;
    return sft_proxy_protocol_parse(buf, len, pp, reason);
}


/* every shorter prefix is SFT_AGAIN, the whole is its length */

static int
pieces(const void *buf, size_t len)
{
    size_t                 i;
    const char            *reason;
    sft_proxy_protocol_t   pp;

    for (i = 0; i < len; i++) {
        if (parse(buf, i, &pp, &reason) != SFT_AGAIN) {
            return 0;
        }
    }

    return parse(buf, len, &pp, &reason) == (sft_int_t) len;
}


static const char *
src_text(sft_proxy_protocol_t *pp)
{
    static u_char  text[64];
    size_t         n;

    n = sft_sock_ntop((struct sockaddr *) &pp->src, text, sizeof(text) - 1,
                      1);
    text[n] = '\0';

    return (const char *) text;
}


static size_t
v2(u_char *buf, u_char cmd, u_char fam, const u_char *addr, size_t alen,
    size_t tlv)
{
    size_t  n;

    memcpy(buf, v2_sig, 12);
    buf[12] = cmd;
    buf[13] = fam;
    n = alen + tlv;
    buf[14] = (u_char) (n >> 8);
    buf[15] = (u_char) n;
    memcpy(buf + 16, addr, alen);

    if (tlv) {
        buf[16 + alen] = 0x04;     /* PP2_TYPE_NOOP */
        buf[16 + alen + 1] = (u_char) ((tlv - 3) >> 8);
        buf[16 + alen + 2] = (u_char) (tlv - 3);
        memset(buf + 16 + alen + 3, 'x', tlv - 3);
    }

    return 16 + n;
}


static void
refused(const char *line, const char *name)
{
    const char            *reason;
    sft_proxy_protocol_t   pp;

    ok(parse(line, strlen(line), &pp, &reason) == SFT_ERROR
       && reason != NULL, name);
}


int
main(void)
{
    size_t                 n;
    sft_int_t              rc;
    const char            *reason, *line;
    sft_proxy_protocol_t   pp;
    u_char                 buf[1024], a4[12], a6[36];
    char                   big[200];

    /* v1 */

    line = "PROXY TCP4 192.0.2.7 10.0.0.1 40001 2121\r\nUSER x\r\n";
    rc = parse(line, strlen(line), &pp, &reason);
    ok(rc == 42, "v1 TCP4: the header's length, not the bytes after it");
    ok(pp.socklen == sizeof(struct sockaddr_in)
       && pp.src.ss_family == AF_INET
       && strcmp(src_text(&pp), "192.0.2.7:40001") == 0,
       "v1 TCP4: the source address and port");
    ok(pieces(line, 42), "v1 TCP4: byte by byte");

    line = "PROXY TCP6 2001:db8::7 ::1 65535 22\r\n";
    rc = parse(line, strlen(line), &pp, &reason);
    ok(rc == (sft_int_t) strlen(line) && pp.src.ss_family == AF_INET6
       && strcmp(src_text(&pp), "[2001:db8::7]:65535") == 0,
       "v1 TCP6: the source address and port");

    line = "PROXY UNKNOWN\r\n";
    rc = parse(line, strlen(line), &pp, &reason);
    ok(rc == (sft_int_t) strlen(line) && pp.socklen == 0,
       "v1 UNKNOWN: accepted, no address");

    refused("PROXY TCP4 192.0.2.7 10.0.0.1 40001 2121\n", "v1 without CR");
    refused("PROXY TCP4 192.0.2.7  10.0.0.1 40001 2121\r\n",
            "v1 with two spaces");
    refused("PROXY TCP4 192.0.2.7 10.0.0.1 4x001 2121\r\n",
            "v1 port not a number");
    refused("PROXY TCP4 192.0.2.7 10.0.0.1 65536 2121\r\n",
            "v1 port over 65535");
    refused("PROXY TCP4 192.0.2.7 10.0.0.1 040001 2121\r\n",
            "v1 port with a leading zero");
    refused("PROXY TCP4 2001:db8::7 10.0.0.1 1 2\r\n",
            "v1 TCP4 with an IPv6 address");
    refused("PROXY TCP4 192.0.2.300 10.0.0.1 1 2\r\n",
            "v1 address out of range");
    refused("PROXY UDP4 192.0.2.7 10.0.0.1 1 2\r\n", "v1 protocol UDP4");
    refused("PROXZ TCP4", "v1 signature wrong");
    refused("SSH-2.0-OpenSSH_9.6\r\n", "no header at all");

    memset(big, '1', sizeof(big));
    memcpy(big, "PROXY TCP4 ", 11);
    big[sizeof(big) - 1] = '\0';
    ok(parse(big, 106, &pp, &reason) == SFT_AGAIN,
       "v1: 106 bytes without a line end are waited on");
    ok(parse(big, 107, &pp, &reason) == SFT_ERROR,
       "v1: 107 bytes without a line end are refused");

    /* v2 */

    memcpy(a4, "\xc0\x00\x02\x07\x0a\x00\x00\x01\x9c\x41\x08\x45", 12);
    n = v2(buf, 0x21, 0x11, a4, 12, 0);
    memcpy(buf + n, "SSH-2.0-x\r\n", 11);
    rc = parse(buf, n + 11, &pp, &reason);
    ok(rc == 28 && pp.src.ss_family == AF_INET
       && strcmp(src_text(&pp), "192.0.2.7:40001") == 0,
       "v2 PROXY TCP4: its length and the source");
    ok(pieces(buf, n), "v2 PROXY TCP4: byte by byte");

    memset(a6, 0, sizeof(a6));
    a6[0] = 0x20; a6[1] = 0x01; a6[2] = 0x0d; a6[3] = 0xb8; a6[15] = 7;
    a6[31] = 1;
    a6[32] = 0x9c; a6[33] = 0x41; a6[35] = 22;
    n = v2(buf, 0x21, 0x21, a6, 36, 20);
    rc = parse(buf, n, &pp, &reason);
    ok(rc == (sft_int_t) n && pp.src.ss_family == AF_INET6
       && strcmp(src_text(&pp), "[2001:db8::7]:40001") == 0,
       "v2 PROXY TCP6 with a TLV: skipped, the source read");

    n = v2(buf, 0x20, 0x00, a4, 0, 0);
    rc = parse(buf, n, &pp, &reason);
    ok(rc == 16 && pp.socklen == 0, "v2 LOCAL: accepted, no address");

    n = v2(buf, 0x21, 0x11, a4, 12, 0);
    buf[0] = '\n';
    ok(parse(buf, n, &pp, &reason) == SFT_ERROR, "v2 signature wrong");

    n = v2(buf, 0x31, 0x11, a4, 12, 0);
    ok(parse(buf, n, &pp, &reason) == SFT_ERROR, "v2 version 3");

    n = v2(buf, 0x22, 0x11, a4, 12, 0);
    ok(parse(buf, n, &pp, &reason) == SFT_ERROR, "v2 command 2");

    n = v2(buf, 0x21, 0x12, a4, 12, 0);
    ok(parse(buf, n, &pp, &reason) == SFT_ERROR, "v2 over UDP");

    n = v2(buf, 0x21, 0x11, a4, 8, 0);
    ok(parse(buf, n, &pp, &reason) == SFT_ERROR,
       "v2 address block shorter than TCP4's");

    n = v2(buf, 0x21, 0x11, a4, 12, 5);
    buf[16 + 12 + 2] = 9;
    ok(parse(buf, n, &pp, &reason) == SFT_ERROR, "v2 TLV past the end");

    n = v2(buf, 0x21, 0x11, a4, 12, 0);
    buf[14] = 0x02;
    buf[15] = 0x09;   /* 521 */
    ok(parse(buf, 16, &pp, &reason) == SFT_ERROR,
       "v2 length over 520 refused before it arrives");
    buf[15] = 0x08;   /* 520 */
    ok(parse(buf, 16, &pp, &reason) == SFT_AGAIN,
       "v2 length 520 waited on");

    printf("1..%lu\n", tests);

    return failed ? 1 : 0;
}
