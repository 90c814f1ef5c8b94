/*
 * test_ftp_ascii.c -- the TYPE A line-ending filter of src/xfer (LF to
 * CRLF for downloads, CRLF to LF for uploads, with CRLF split across chunk
 * boundaries and lone CRs kept) and the PORT and EPRT argument parsers with the bounce rule.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>
#include <sft_asm.h>
#include <sft_xfer_eol.h>
#include "sft_tap.h"


#define N  20000


static size_t
ref_to_crlf(const u_char *in, size_t len, u_char *out)
{
    size_t  i, o;

    for (i = 0, o = 0; i < len; i++) {
        if (in[i] == '\n') {
            out[o++] = '\r';
        }
        out[o++] = in[i];
    }

    return o;
}


static size_t
ref_from_crlf(const u_char *in, size_t len, u_char *out)
{
    size_t  i, o;

    for (i = 0, o = 0; i < len; i++) {
        if (in[i] == '\r' && i + 1 < len && in[i + 1] == '\n') {
            continue;
        }
        out[o++] = in[i];
    }

    return o;
}


/* uploads, one read each: a CR held before it (cr_in) and after (cr_out) */

typedef struct {
    sft_uint_t   cr_in;
    const char  *in;
    const char  *out;
    sft_uint_t   cr_out;
    const char  *name;
} from_case_t;

static const from_case_t  from_cases[] = {
    { 0, "a\r\nb\rc\r", "a\nb\rc", 1,
      "from CRLF: CRLF to LF, lone CR kept, final CR held" },
    { 1, "\nz", "\nz", 0,
      "from CRLF: CR | LF split across chunks is one LF" },
    { 1, "q", "\rq", 0,
      "from CRLF: a held CR not followed by LF comes back" },
    { 1, "\r", "\r", 1,
      "from CRLF: CR | CR keeps the first, holds the second" },
    { 0, "\r\r\n\r", "\r\n", 1,
      "from CRLF: CR CR LF is a lone CR and a LF, the last CR held" },
    { 1, "\r\nx", "\r\nx", 0,
      "from CRLF: CR | CR LF keeps the held CR, converts the pair" },
    { 0, "\rx\r", "\rx", 1,
      "from CRLF: a lone CR first in a read is kept" },
    { 1, "\n", "\n", 0,
      "from CRLF: a read of just the LF of a split CRLF" },
};


/* downloads: in and out in random pieces */

static size_t
to_crlf_pieces(const u_char *in, size_t len, u_char *out, unsigned seed)
{
    size_t  pos, o, used, n, isz, osz;

    srandom(seed);
    pos = 0;
    o = 0;

    while (pos < len) {
        isz = 1 + random() % 64;
        osz = 2 + random() % 64;

        if (isz > len - pos) {
            isz = len - pos;
        }

        n = sft_xfer_eol_to_crlf(in + pos, isz, &used, out + o, osz);

        if (n == 0 && used == 0) {
            return (size_t) -1;     /* no progress */
        }

        o += n;
        pos += used;
    }

    return o;
}


/* uploads: as recv_file does it, in place in a chunk, a gap for the CR */

static size_t
from_crlf_pieces(const u_char *in, size_t len, u_char *out, unsigned seed)
{
    size_t      pos, o, n;
    sft_uint_t  cr;
    u_char      chunk[128];

    srandom(seed);
    pos = 0;
    o = 0;
    cr = 0;

    while (pos < len) {
        n = 1 + random() % 100;

        if (n > len - pos) {
            n = len - pos;
        }

        memcpy(chunk + cr, in + pos, n);
        pos += n;

        n = sft_xfer_eol_from_crlf(chunk, chunk + cr, n, &cr);
        memcpy(out + o, chunk, n);
        o += n;
    }

    if (cr) {
        out[o++] = '\r';
    }

    return o;
}


int
main(void)
{
    size_t                   n, m, used;
    unsigned                 seed;
    sft_uint_t               i, cr, good;
    socklen_t                len;
    struct sockaddr_in      *sin;
    struct sockaddr_in6     *sin6;
    struct sockaddr_storage  sa, peer;
    const from_case_t       *fc;
    static u_char            in[N], exp[2 * N], out[2 * N], back[2 * N];
    u_char                   buf[64];

    /* the kernels the server runs with (SSE2/AVX2 find_crlf here) */
    sft_asm_init();

    /* LF -> CRLF */

    n = sft_xfer_eol_to_crlf((u_char *) "a\nb\n", 4, &used, out, 64);
    ok(n == 6 && used == 4 && memcmp(out, "a\r\nb\r\n", 6) == 0,
       "to CRLF: two lines");

    n = sft_xfer_eol_to_crlf((u_char *) "a\n", 2, &used, out, 2);
    ok(n == 1 && used == 1 && out[0] == 'a',
       "to CRLF: a LF does not split when one byte is left");

    n = sft_xfer_eol_to_crlf((u_char *) "\n", 1, &used, out, 1);
    ok(n == 0 && used == 0, "to CRLF: no room for CRLF, nothing used");

    n = sft_xfer_eol_to_crlf((u_char *) "x\r\n", 3, &used, out, 8);
    ok(n == 4 && memcmp(out, "x\r\r\n", 4) == 0,
       "to CRLF: a CR before LF is data (every LF gets a CR)");

    /* CRLF -> LF */

    for (i = 0; i < sft_nelems(from_cases); i++) {
        fc = &from_cases[i];

        /* as recv_file: a held CR leaves one byte free before the read */
        cr = fc->cr_in;
        buf[0] = 'X';
        memcpy(buf + cr, fc->in, strlen(fc->in));
        n = sft_xfer_eol_from_crlf(buf, buf + cr, strlen(fc->in), &cr);

        ok(n == strlen(fc->out) && memcmp(buf, fc->out, n) == 0
           && cr == fc->cr_out, fc->name);
    }

    /* pairs at every position of a 64 + 64 byte read: the SIMD widths */

    good = 1;

    for (i = 0; i < 127; i++) {
        memset(in, 'a', 128);
        in[i] = '\r';
        in[i + 1] = '\n';

        cr = 0;
        memcpy(out, in, 128);
        n = sft_xfer_eol_from_crlf(out, out, 128, &cr);
        m = ref_from_crlf(in, 128, exp);

        if (n != m || memcmp(out, exp, m) != 0 || cr != 0) {
            good = 0;
        }

        /* and split there: CR at the end of one read, LF next */

        cr = 0;
        memcpy(out, in, i + 1);
        n = sft_xfer_eol_from_crlf(out, out, i + 1, &cr);

        if (cr != 1 || n != i) {
            good = 0;
        }

        memcpy(out + n + 1, in + i + 1, 127 - i);
        n += sft_xfer_eol_from_crlf(out + n, out + n + 1, 127 - i, &cr);

        if (n != m || memcmp(out, exp, m) != 0 || cr != 0) {
            good = 0;
        }
    }

    ok(good, "from CRLF: a pair at each offset of 128 bytes, whole and "
       "split between reads");

    /* random data, random pieces, against the reference */

    good = 1;

    for (seed = 1; seed <= 50; seed++) {
        srandom(seed * 7919);

        for (i = 0; i < N; i++) {
            m = random() % 8;
            in[i] = m == 0 ? '\r' : m == 1 ? '\n' : 'a' + m;
        }

        m = ref_to_crlf(in, N, exp);
        n = to_crlf_pieces(in, N, out, seed);

        if (n != m || memcmp(out, exp, m) != 0) {
            good = 0;
        }

        m = ref_from_crlf(in, N, exp);
        n = from_crlf_pieces(in, N, back, seed);

        if (n != m || memcmp(back, exp, m) != 0) {
            good = 0;
        }

        /* and a download converted back by an upload is the file */

        m = ref_to_crlf(in, N, exp);
        n = from_crlf_pieces(exp, m, back, seed + 1000);

        if (n != N || memcmp(back, in, N) != 0) {
            good = 0;
        }
    }

    ok(good, "50 random files in random pieces match the reference, "
       "and round-trip");

    /* PORT */

    ok(sft_ftp_parse_port((u_char *) "127,0,0,1,4,1", 13, &sa, &len)
       == SFT_OK, "PORT parses");

    sin = (struct sockaddr_in *) &sa;
    ok(sin->sin_family == AF_INET && ntohs(sin->sin_port) == 1025
       && ntohl(sin->sin_addr.s_addr) == 0x7f000001
       && len == sizeof(struct sockaddr_in),
       "PORT address and port");

#define BAD_PORT(s, name)                                                    \
    ok(sft_ftp_parse_port((u_char *) s, sizeof(s) - 1, &sa, &len)            \
       == SFT_ERROR, name)

    BAD_PORT("127,0,0,1,4", "PORT: five numbers refused");
    BAD_PORT("127,0,0,1,4,1,", "PORT: trailing comma refused");
    BAD_PORT("127,0,0,1,4,256", "PORT: a number over 255 refused");
    BAD_PORT("127,0,0,1,4,0001", "PORT: four digits refused");
    BAD_PORT("127,0,0,1,,1", "PORT: empty number refused");
    BAD_PORT("127,0,0,1,4,1 ", "PORT: trailing space refused");
    BAD_PORT("-1,0,0,1,4,1", "PORT: sign refused");
    BAD_PORT("", "PORT: empty refused");

    /* EPRT */

    ok(sft_ftp_parse_eprt((u_char *) "|1|127.0.0.1|5000|", 18, &sa, &len)
       == SFT_OK && sa.ss_family == AF_INET
       && ntohs(((struct sockaddr_in *) &sa)->sin_port) == 5000,
       "EPRT IPv4");

    ok(sft_ftp_parse_eprt((u_char *) "!2!::1!6000!", 12, &sa, &len)
       == SFT_OK && sa.ss_family == AF_INET6
       && len == sizeof(struct sockaddr_in6), "EPRT IPv6, other delimiter");

    sin6 = (struct sockaddr_in6 *) &sa;
    ok(ntohs(sin6->sin6_port) == 6000
       && IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr), "EPRT IPv6 address");

    ok(sft_ftp_parse_eprt((u_char *) "|3|x|5000|", 10, &sa, &len)
       == SFT_DECLINED, "EPRT: unknown family declined (522)");

#define BAD_EPRT(s, name)                                                    \
    ok(sft_ftp_parse_eprt((u_char *) s, sizeof(s) - 1, &sa, &len)            \
       == SFT_ERROR, name)

    BAD_EPRT("|1|127.0.0.1|5000", "EPRT: no closing delimiter");
    BAD_EPRT("|1|127.0.0.1|5000|x", "EPRT: bytes after it");
    BAD_EPRT("|1|127.0.0.1|70000|", "EPRT: port over 65535");
    BAD_EPRT("|1|127.0.0.1|0|", "EPRT: port 0");
    BAD_EPRT("|1|::1|5000|", "EPRT: IPv6 text with family 1");
    BAD_EPRT("|2|127.0.0.1|5000|", "EPRT: IPv4 text with family 2");
    BAD_EPRT("|1||5000|", "EPRT: empty address");
    BAD_EPRT("|1|1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa|1|",
             "EPRT: an over-long address");
    BAD_EPRT(" 1 127.0.0.1 5000 ", "EPRT: a space is no delimiter");

    /* the bounce rule */

    sin = (struct sockaddr_in *) &peer;
    memset(&peer, 0, sizeof(peer));
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(0x7f000001);
    sin->sin_port = htons(40000);

    (void) sft_ftp_parse_port((u_char *) "127,0,0,1,4,0", 13, &sa, &len);
    ok(sft_ftp_port_check((struct sockaddr *) &sa, (struct sockaddr *) &peer)
       == SFT_OK, "PORT to the peer, port 1024: allowed");

    (void) sft_ftp_parse_port((u_char *) "127,0,0,1,3,255", 15, &sa, &len);
    ok(sft_ftp_port_check((struct sockaddr *) &sa, (struct sockaddr *) &peer)
       == SFT_ERROR, "PORT to port 1023: refused");

    (void) sft_ftp_parse_port((u_char *) "10,0,0,1,40,0", 13, &sa, &len);
    ok(sft_ftp_port_check((struct sockaddr *) &sa, (struct sockaddr *) &peer)
       == SFT_ERROR, "PORT to another host: refused");

    (void) sft_ftp_parse_eprt((u_char *) "|2|::1|5000|", 12, &sa, &len);
    ok(sft_ftp_port_check((struct sockaddr *) &sa, (struct sockaddr *) &peer)
       == SFT_DECLINED, "EPRT of the other family: declined");

    printf("1..%lu\n", tests);

    return failed ? 1 : 0;
}
