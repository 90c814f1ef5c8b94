/*
 * sft_proxy_protocol.c -- the PROXY protocol parser, versions 1 and 2, on
 * whatever part of the header has arrived: stateless, so that a reader may
 * peek at the socket again after each piece and call it on all of it.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_proxy_protocol.h>


#define SFT_PP_V2_HEADER  16


static const u_char  sft_pp_v1_sig[] = "PROXY ";
static const u_char  sft_pp_v2_sig[] = "\r\n\r\n\0\r\nQUIT\n";


static sft_int_t sft_pp_v1(const u_char *buf, size_t len,
    sft_proxy_protocol_t *pp, const char **reason);
static sft_int_t sft_pp_v1_field(const u_char **p, const u_char *last,
    u_char *out, size_t size);
static void sft_pp_addr(int family, const u_char *addr, const u_char *port,
    struct sockaddr_storage *ss);
static sft_int_t sft_pp_v1_addr(int family, u_char *text, sft_int_t port,
    struct sockaddr_storage *ss);
static sft_int_t sft_pp_v1_port(const u_char *p, size_t n);
static sft_int_t sft_pp_v2(const u_char *buf, size_t len,
    sft_proxy_protocol_t *pp, const char **reason);
static sft_int_t sft_pp_v2_tlvs(const u_char *p, const u_char *last);


sft_int_t
sft_proxy_protocol_parse(const u_char *buf, size_t len,
    sft_proxy_protocol_t *pp, const char **reason)
{
    size_t  n;

    sft_memzero(pp, sizeof(sft_proxy_protocol_t));

    if (len == 0) {
        return SFT_AGAIN;
    }

    if (buf[0] == 'P') {
        n = sft_min(len, sizeof(sft_pp_v1_sig) - 1);

        if (sft_memcmp(buf, sft_pp_v1_sig, n) != 0) {
            *reason = "bad signature";
            return SFT_ERROR;
        }

        return sft_pp_v1(buf, len, pp, reason);
    }

    n = sft_min(len, sizeof(sft_pp_v2_sig) - 1);

    if (sft_memcmp(buf, sft_pp_v2_sig, n) != 0) {
        *reason = "bad signature";
        return SFT_ERROR;
    }

    return sft_pp_v2(buf, len, pp, reason);
}


/* "PROXY TCP4|TCP6 SRC DST SPORT DPORT\r\n" or "PROXY UNKNOWN...\r\n" */

static sft_int_t
sft_pp_v1(const u_char *buf, size_t len, sft_proxy_protocol_t *pp,
    const char **reason)
{
    int             family;
    u_char          src[48], dst[48], port[8];
    sft_int_t       sport, dport;
    const u_char   *p, *last, *lf;

    lf = memchr(buf, '\n', sft_min(len, SFT_PROXY_PROTOCOL_V1_MAX));

    if (lf == NULL) {
        if (len >= SFT_PROXY_PROTOCOL_V1_MAX) {
            *reason = "v1 header longer than 107 bytes";
            return SFT_ERROR;
        }

        return SFT_AGAIN;
    }

    if (lf == buf || lf[-1] != '\r') {
        *reason = "v1 header without CRLF";
        return SFT_ERROR;
    }

    p = buf + sizeof(sft_pp_v1_sig) - 1;
    last = lf - 1;

    if ((size_t) (last - p) >= 7 && sft_memcmp(p, "UNKNOWN", 7) == 0) {
        return lf + 1 - buf;
    }

    if ((size_t) (last - p) >= 5 && sft_memcmp(p, "TCP4 ", 5) == 0) {
        family = AF_INET;

    } else if ((size_t) (last - p) >= 5 && sft_memcmp(p, "TCP6 ", 5) == 0) {
        family = AF_INET6;

    } else {
        *reason = "v1 protocol not TCP4, TCP6 or UNKNOWN";
        return SFT_ERROR;
    }

    p += 5;

    if (sft_pp_v1_field(&p, last, src, sizeof(src)) != SFT_OK
        || sft_pp_v1_field(&p, last, dst, sizeof(dst)) != SFT_OK)
    {
        *reason = "v1 address malformed";
        return SFT_ERROR;
    }

    if (sft_pp_v1_field(&p, last, port, sizeof(port)) != SFT_OK
        || (sport = sft_pp_v1_port(port, sft_strlen(port))) == SFT_ERROR
        || (dport = sft_pp_v1_port(p, last - p)) == SFT_ERROR)
    {
        *reason = "v1 port malformed";
        return SFT_ERROR;
    }

    if (sft_pp_v1_addr(family, src, sport, &pp->src) != SFT_OK) {
        *reason = "v1 source address malformed";
        return SFT_ERROR;
    }

    if (sft_pp_v1_addr(family, dst, dport, &pp->dst) != SFT_OK) {
        *reason = "v1 destination address malformed";
        return SFT_ERROR;
    }

    pp->socklen = family == AF_INET ? sizeof(struct sockaddr_in)
                                    : sizeof(struct sockaddr_in6);

    return lf + 1 - buf;
}


/* a non-empty field up to the next space, copied NUL-terminated */

static sft_int_t
sft_pp_v1_field(const u_char **p, const u_char *last, u_char *out,
    size_t size)
{
    size_t         n;
    const u_char  *end;

    end = memchr(*p, ' ', last - *p);
    if (end == NULL) {
        return SFT_ERROR;
    }

    n = end - *p;
    if (n == 0 || n >= size) {
        return SFT_ERROR;
    }

    sft_memcpy(out, *p, n);
    out[n] = '\0';
    *p = end + 1;

    return SFT_OK;
}


/* an address of the family named on the line, and its port */

static sft_int_t
sft_pp_v1_addr(int family, u_char *text, sft_int_t port,
    struct sockaddr_storage *ss)
{
    u_char  addr[16], nport[2];

    if (inet_pton(family, (char *) text, addr) != 1) {
        return SFT_ERROR;
    }

    nport[0] = (u_char) (port >> 8);
    nport[1] = (u_char) port;

    sft_pp_addr(family, addr, nport, ss);

    return SFT_OK;
}


/* 0-65535 in decimal, no sign, no leading zero */

static sft_int_t
sft_pp_v1_port(const u_char *p, size_t n)
{
    size_t      i;
    sft_int_t   port;

    if (n == 0 || n > 5 || (n > 1 && p[0] == '0')) {
        return SFT_ERROR;
    }

    port = 0;

    for (i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return SFT_ERROR;
        }

        port = port * 10 + (p[i] - '0');
    }

    return port > 65535 ? SFT_ERROR : port;
}


/*
 * 12 bytes of signature, version and command, family and transport, the
 * payload's length (big-endian), the addresses, then TLVs (skipped).
 */

static sft_int_t
sft_pp_v2(const u_char *buf, size_t len, sft_proxy_protocol_t *pp,
    const char **reason)
{
    int             family;
    size_t          n, alen;
    const u_char   *p;

    if (len < SFT_PP_V2_HEADER) {
        return SFT_AGAIN;
    }

    if ((buf[12] >> 4) != 2) {
        *reason = "v2 version not 2";
        return SFT_ERROR;
    }

    if ((buf[12] & 0x0f) > 1) {
        *reason = "v2 command neither LOCAL nor PROXY";
        return SFT_ERROR;
    }

    n = ((size_t) buf[14] << 8) | buf[15];

    if (n > SFT_PROXY_PROTOCOL_MAX - SFT_PP_V2_HEADER) {
        *reason = "v2 length too large";
        return SFT_ERROR;
    }

    if (len < SFT_PP_V2_HEADER + n) {
        return SFT_AGAIN;
    }

    p = buf + SFT_PP_V2_HEADER;

    if ((buf[12] & 0x0f) == 0) {
        /* LOCAL: the balancer's own connection, its payload ignored */
        return SFT_PP_V2_HEADER + n;
    }

    switch (buf[13]) {

    case 0x11:  /* AF_INET, STREAM */
        family = AF_INET;
        alen = 4;
        break;

    case 0x21:  /* AF_INET6, STREAM */
        family = AF_INET6;
        alen = 16;
        break;

    default:
        *reason = "v2 family not TCP over IPv4 or IPv6";
        return SFT_ERROR;
    }

    /* source, destination, source port, destination port */

    if (n < 2 * alen + 4) {
        *reason = "v2 address block too short";
        return SFT_ERROR;
    }

    if (sft_pp_v2_tlvs(p + 2 * alen + 4, p + n) != SFT_OK) {
        *reason = "v2 TLV truncated";
        return SFT_ERROR;
    }

    sft_pp_addr(family, p, p + 2 * alen, &pp->src);
    sft_pp_addr(family, p + alen, p + 2 * alen + 2, &pp->dst);

    pp->socklen = family == AF_INET ? sizeof(struct sockaddr_in)
                                    : sizeof(struct sockaddr_in6);

    return SFT_PP_V2_HEADER + n;
}


/* the address and port as they travel, in network order */

static void
sft_pp_addr(int family, const u_char *addr, const u_char *port,
    struct sockaddr_storage *ss)
{
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    if (family == AF_INET) {
        sin = (struct sockaddr_in *) ss;
        sin->sin_family = AF_INET;
        sft_memcpy(&sin->sin_addr, addr, 4);
        sft_memcpy(&sin->sin_port, port, 2);
        return;
    }

    sin6 = (struct sockaddr_in6 *) ss;
    sin6->sin6_family = AF_INET6;
    sft_memcpy(&sin6->sin6_addr, addr, 16);
    sft_memcpy(&sin6->sin6_port, port, 2);
}


/* type (1 byte), length (2 bytes, big-endian), value: each within the end */

static sft_int_t
sft_pp_v2_tlvs(const u_char *p, const u_char *last)
{
    size_t  n;

    while (p < last) {
        if (last - p < 3) {
            return SFT_ERROR;
        }

        n = ((size_t) p[1] << 8) | p[2];

        if ((size_t) (last - p - 3) < n) {
            return SFT_ERROR;
        }

        p += 3 + n;
    }

    return SFT_OK;
}
