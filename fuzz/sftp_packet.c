/*
 * sftp_packet.c -- libFuzzer target for the SFTP request decoder as the
 * channel feeds it: sft_sftp_process() frames the packets, the handler
 * table parses them and the handlers run on a real posix storage rooted
 * in a temporary directory (fuzz_sftp.h).  The first input byte picks
 * the session: bit 0, the rest is the raw channel stream (framing
 * included) or records of a 2-byte length and a packet's body, framed
 * here behind an INIT; bit 1, a read-only session.  Checked: every reply
 * is a well-formed packet of a reply type; every request taken from the
 * input gets exactly one reply with its id (INIT: VERSION), except the
 * last if the session is closed for it (a malformed packet or a bad
 * length: the documented rule), and nothing after it is read; no request,
 * handle or reserved output is left at the end; nothing is created
 * outside the root; leaks are reported by LeakSanitizer.
 */

#include "fuzz_sftp.h"


#define FUZZ_INIT  ((uint64_t) 1 << 32)    /* INIT's "id", VERSION's */


/* records of a 2-byte length and a body, as packets behind an INIT */

static u_char *
frame(const uint8_t *data, size_t size, size_t *len)
{
    u_char  *buf, *p;
    size_t   i, n, total;

    static const u_char  init[] = { 0, 0, 0, 5, SSH_FXP_INIT, 0, 0, 0, 3 };

    total = sizeof(init);

    for (i = 0; i < size; i += n) {
        n = (i + 2 <= size) ? ((size_t) data[i] << 8 | data[i + 1]) : 0;
        i += sft_min(2, size - i);
        n = sft_min(n, size - i);
        total += 4 + n;
    }

    buf = malloc(total);
    assert(buf != NULL);
    p = sft_cpymem(buf, init, sizeof(init));

    for (i = 0; i < size; i += n) {
        n = (i + 2 <= size) ? ((size_t) data[i] << 8 | data[i + 1]) : 0;
        i += sft_min(2, size - i);
        n = sft_min(n, size - i);
        p = sft_sftp_put_u32(p, (uint32_t) n);
        p = sft_cpymem(p, data + i, n);
    }

    *len = total;

    return buf;
}


static int
cmp_ids(const void *a, const void *b)
{
    uint64_t  x = *(const uint64_t *) a, y = *(const uint64_t *) b;

    return (x > y) - (x < y);
}


/* the ids of the packets in buf[from, to); VERSION and INIT: FUZZ_INIT */

static sft_uint_t
packet_ids(const u_char *buf, size_t from, size_t to, uint64_t *ids,
    sft_uint_t n, sft_uint_t reply)
{
    u_char    type;
    uint32_t  len;

    while (from < to) {
        assert(to - from >= 5);
        len = fuzz_sftp_u32(buf + from);
        assert(len >= 1 && len <= to - from - 4);

        type = buf[from + 4];

        if (type == (reply ? SSH_FXP_VERSION : SSH_FXP_INIT)) {
            ids[n++] = FUZZ_INIT;

        } else {
            /* a request is at least 5 bytes long, a reply has an id */
            assert(len >= 5);
            ids[n++] = fuzz_sftp_u32(buf + from + 5);
        }

        if (reply) {
            assert(type == SSH_FXP_VERSION || type == SSH_FXP_STATUS
                   || type == SSH_FXP_HANDLE || type == SSH_FXP_DATA
                   || type == SSH_FXP_NAME || type == SSH_FXP_ATTRS
                   || type == SSH_FXP_EXTENDED_REPLY);
        }

        from += 4 + len;
    }

    assert(from == to);

    return n;
}


/* the replies sent so far: room for one per 9 bytes, the shortest */

static uint64_t *
drain(sft_sftp_session_t *s, uint64_t *replies, sft_uint_t *n)
{
    replies = realloc(replies, (*n + s->out_len / 9 + 1) * sizeof(uint64_t));
    assert(replies != NULL);

    *n = packet_ids(s->out, s->out_pos, s->out_len, replies, *n, 1);
    s->out_pos = 0;
    s->out_len = 0;

    return replies;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char              *in;
    size_t               len, rest, prev;
    uint32_t             plen;
    uint64_t            *requests, *replies;
    sft_int_t            rc;
    sft_uint_t           nreq, nrep;
    sft_sftp_session_t   s;

    if (size < 1) {
        return 0;
    }

    if (data[0] & 1) {
        in = frame(data + 1, size - 1, &len);

    } else {
        /* a copy of exactly the input, so a read past it is caught */
        len = size - 1;
        in = malloc(len ? len : 1);
        assert(in != NULL);
        memcpy(in, data + 1, len);
    }

    fuzz_sftp_reset();
    fuzz_sftp_open(&s, (data[0] & 2) ? SFT_PERM_READ|SFT_PERM_LIST
                                     : SFT_PERM_ALL);

    s.in = in;

    /* at most one request per 9 bytes (INIT's) */
    requests = malloc((len / 9 + 1) * sizeof(uint64_t));
    assert(requests != NULL);
    replies = NULL;

    nreq = 0;
    nrep = 0;
    rc = SFT_OK;

    /*
     * the input offered one packet at a time, so each request taken is
     * known; the output is sent (read here) when the session stops for it
     */

    while (s.in_pos < len) {
        rest = len - s.in_pos;
        plen = (rest >= 4) ? fuzz_sftp_u32(in + s.in_pos) : 0;
        s.in_len = (rest >= 4 && plen <= rest - 4) ? s.in_pos + 4 + plen
                                                   : len;
        prev = s.in_pos;

        rc = sft_sftp_process(&s);

        if (rc != SFT_OK) {
            /* a bad length (the packet not taken) or a malformed packet */
            assert(s.in_pos != prev || plen < 5 || plen > SFT_SFTP_MAX_PACKET);
            assert(s.in_pos == prev || s.in_pos == s.in_len);
            break;
        }

        if (s.in_pos == prev) {
            if (s.out_len > s.out_pos) {
                /* held back by the output */
                replies = drain(&s, replies, &nrep);
                continue;
            }

            /* less than a packet is left */
            assert(rest < 4 || plen > rest - 4);
            break;
        }

        assert(s.in_pos == s.in_len);
        nreq = packet_ids(in, prev, s.in_pos, requests, nreq, 0);
    }

    replies = drain(&s, replies, &nrep);

    qsort(requests, nreq, sizeof(uint64_t), cmp_ids);
    qsort(replies, nrep, sizeof(uint64_t), cmp_ids);

    assert(nreq == nrep);
    assert(nreq == 0
           || memcmp(requests, replies, nreq * sizeof(uint64_t)) == 0);

    fuzz_sftp_close(&s);
    fuzz_sftp_check_outside();

    free(requests);
    free(replies);

    return 0;
}
