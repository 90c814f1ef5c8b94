/*
 * test_asm.c: differential test of the asm/ kernels: every asm version
 * this CPU can run must agree with the C reference version, and the C
 * versions must agree with naive oracles written here; random data
 * (seeded), all lengths 0..4096, sampled lengths up to 1 MiB, all
 * alignments 0..63, guard pages against out-of-bounds reads.  Prints
 * TAP; exit status 0 only if every test passed.
 *
 *     cc -Iasm t/unit/test_asm.c asm/sft_asm.c asm/sft_asm_c.c ...
 *     ./test_asm [seed]
 */


#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* posix_memalign, sigsetjmp, MAP_ANONYMOUS */
#endif

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "sft_asm.h"


#define T_MAXIMPL     16
#define T_MAXLEN      (1024 * 1024)
#define T_POOL        (T_MAXLEN + 8192)
#define T_SMALLALL    128               /* every alignment up to this n */
#define T_ALLPOS      300               /* every position up to this n */
#define T_MAXPOS      1024
#define T_NGROUPS     14                /* TAP lines per implementation */


typedef struct {
    unsigned  fails;
    char      first[256];
} t_fail_t;


static const sft_asm_impl_t  *impls[T_MAXIMPL];
static size_t                 nimpls;
static t_fail_t               fails[T_MAXIMPL];

static unsigned               tap_n;
static unsigned               tap_failed;

static uint64_t               rng;
static unsigned char         *pool;
static uint32_t               crc_table[256];

static sigjmp_buf             segv_jmp;
static volatile uint64_t      sink;


/* output */

static void
tap(int ok, const char *fmt, ...)
{
    va_list  args;

    tap_n++;

    if (!ok) {
        tap_failed++;
    }

    printf("%sok %u - ", ok ? "" : "not ", tap_n);
    va_start(args, fmt);
    vprintf(fmt, args);
    va_end(args);
    printf("\n");
    fflush(stdout);
}


static void
fail(size_t i, const char *fmt, ...)
{
    va_list  args;

    if (fails[i].fails++ == 0) {
        va_start(args, fmt);
        vsnprintf(fails[i].first, sizeof(fails[i].first), fmt, args);
        va_end(args);
    }
}


static void
group_end(const char *what)
{
    size_t  i;

    for (i = 0; i < nimpls; i++) {
        tap(fails[i].fails == 0, "%s: %s", impls[i]->name, what);

        if (fails[i].fails) {
            printf("#   %u failure(s), first: %s\n",
                   fails[i].fails, fails[i].first);
        }
    }

    memset(fails, 0, sizeof(fails));
}


/* splitmix64 */

static uint64_t
rnd(void)
{
    uint64_t  z;

    z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;

    return z ^ (z >> 31);
}


static size_t
rnd_n(size_t n)
{
    return (size_t) (rnd() % n);
}


/*
 * A buffer of exactly align + n bytes whose data starts at offset align
 * from a 64-byte boundary, so that ASan sees any read past p + n.
 */

static unsigned char *
buf_new(size_t align, size_t n, void **base)
{
    if (posix_memalign(base, 64, align + n + (align + n == 0)) != 0) {
        printf("Bail out! out of memory\n");
        exit(1);
    }

    return (unsigned char *) *base + align;
}


static void
buf_fill(unsigned char *p, size_t n)
{
    if (n) {
        memcpy(p, pool + rnd_n(T_POOL - n + 1), n);
    }
}


static size_t
ptr_off(const void *r, const unsigned char *p)
{
    return r ? (size_t) ((const unsigned char *) r - p) : (size_t) -1;
}


/* the oracles */

static void
crc_table_init(void)
{
    int       k;
    uint32_t  c, i;

    for (i = 0; i < 256; i++) {
        c = i;

        for (k = 0; k < 8; k++) {
            c = (c >> 1) ^ ((c & 1) ? 0x82f63b78 : 0);
        }

        crc_table[i] = c;
    }
}


static uint32_t
o_crc32c(uint32_t crc, const unsigned char *p, size_t n)
{
    crc = ~crc;

    while (n--) {
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }

    return ~crc;
}


static uint32_t
o_adler32(uint32_t adler, const unsigned char *p, size_t n)
{
    uint32_t  s1, s2;

    s1 = (adler & 0xffff) % 65521;
    s2 = (adler >> 16) % 65521;

    if (n == 0) {
        return adler;
    }

    while (n--) {
        s1 += *p++;
        if (s1 >= 65521) {
            s1 -= 65521;
        }

        s2 += s1;
        if (s2 >= 65521) {
            s2 -= 65521;
        }
    }

    return (s2 << 16) | s1;
}


static const void *
o_find_byte(const unsigned char *p, size_t n, int c)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (p[i] == (unsigned char) c) {
            return p + i;
        }
    }

    return NULL;
}


static const void *
o_find_crlf(const unsigned char *p, size_t n)
{
    size_t  i;

    for (i = 0; i + 1 < n; i++) {
        if (p[i] == '\r' && p[i + 1] == '\n') {
            return p + i;
        }
    }

    return NULL;
}


static int
o_ct_eq(const unsigned char *a, const unsigned char *b, size_t n)
{
    return n == 0 || memcmp(a, b, n) == 0;
}


/* one case of each kernel, against C and the oracle */

static void
check_crc32c(const unsigned char *p, size_t n, size_t a, uint32_t init)
{
    size_t    i;
    uint32_t  ref, got;

    ref = sft_crc32c_c(init, p, n);
    got = o_crc32c(init, p, n);

    for (i = 0; i < nimpls; i++) {
        if (i) {
            got = impls[i]->crc32c(init, p, n);
        }

        if (got != ref) {
            fail(i, "crc32c n=%zu align=%zu init=%08x: %08x, want %08x",
                 n, a, init, i ? got : ref, i ? ref : got);
        }
    }
}


static void
check_adler32(const unsigned char *p, size_t n, size_t a, uint32_t init)
{
    size_t    i;
    uint32_t  ref, got;

    ref = sft_adler32_c(init, p, n);
    got = o_adler32(init, p, n);

    for (i = 0; i < nimpls; i++) {
        if (i) {
            got = impls[i]->adler32(init, p, n);
        }

        if (got != ref) {
            fail(i, "adler32 n=%zu align=%zu init=%08x: %08x, want %08x",
                 n, a, init, i ? got : ref, i ? ref : got);
        }
    }
}


static void
check_find_byte(const unsigned char *p, size_t n, size_t a, int c)
{
    size_t       i;
    const void  *ref, *got;

    ref = sft_find_byte_c(p, n, c);
    got = o_find_byte(p, n, c);

    for (i = 0; i < nimpls; i++) {
        if (i) {
            got = impls[i]->find_byte(p, n, c);
        }

        if (got != ref) {
            fail(i, "find_byte n=%zu align=%zu c=%d: offset %zd, want %zd",
                 n, a, c, (ssize_t) ptr_off(i ? got : ref, p),
                 (ssize_t) ptr_off(i ? ref : got, p));
        }
    }
}


static void
check_find_newline(const unsigned char *p, size_t n, size_t a)
{
    size_t       i;
    const void  *ref, *got;

    ref = sft_find_newline_c(p, n);
    got = o_find_byte(p, n, '\n');

    for (i = 0; i < nimpls; i++) {
        if (i) {
            got = impls[i]->find_newline(p, n);
        }

        if (got != ref) {
            fail(i, "find_newline n=%zu align=%zu: offset %zd, want %zd",
                 n, a, (ssize_t) ptr_off(i ? got : ref, p),
                 (ssize_t) ptr_off(i ? ref : got, p));
        }
    }
}


static void
check_find_crlf(const unsigned char *p, size_t n, size_t a)
{
    size_t       i;
    const void  *ref, *got;

    ref = sft_find_crlf_c(p, n);
    got = o_find_crlf(p, n);

    for (i = 0; i < nimpls; i++) {
        if (i) {
            got = impls[i]->find_crlf(p, n);
        }

        if (got != ref) {
            fail(i, "find_crlf n=%zu align=%zu: offset %zd, want %zd",
                 n, a, (ssize_t) ptr_off(i ? got : ref, p),
                 (ssize_t) ptr_off(i ? ref : got, p));
        }
    }
}


static void
check_ct_eq(const unsigned char *x, const unsigned char *y, size_t n,
    size_t a, size_t pos)
{
    int     ref, got;
    size_t  i;

    ref = sft_ct_eq_c(x, y, n);
    got = o_ct_eq(x, y, n);

    for (i = 0; i < nimpls; i++) {
        if (i) {
            got = impls[i]->ct_eq(x, y, n);
        }

        if (got != ref) {
            fail(i, "ct_eq n=%zu align=%zu diff at %zd: %d, want %d",
                 n, a, (ssize_t) pos, i ? got : ref, i ? ref : got);
        }
    }
}


/*
 * The (length, alignment) cases: every alignment for n <= T_SMALLALL,
 * two alignments for every other n up to 4096, then sampled large n.
 */

typedef void (*t_case_pt)(unsigned char *p, size_t n, size_t a);


static void
for_lengths(t_case_pt f)
{
    void           *base;
    size_t          n, a, k, na;
    unsigned char  *p;

    for (n = 0; n <= 4096; n++) {
        na = (n <= T_SMALLALL) ? 64 : 2;

        for (k = 0; k < na; k++) {
            a = (na == 64) ? k : (k == 0 ? n % 64 : rnd_n(64));
            p = buf_new(a, n, &base);
            buf_fill(p, n);
            f(p, n, a);
            free(base);
        }
    }
}


static const size_t  t_large[] = {
    4097, 5535, 5536, 5537, 5552, 5553, 6143, 6144, 6145, 9215, 9216,
    11072, 11073, 65535, 65536, 65537, T_MAXLEN - 1, T_MAXLEN
};

#define T_NLARGE  (sizeof(t_large) / sizeof(t_large[0]))
#define T_NRANDOM 10


static void
for_large(t_case_pt f)
{
    void           *base;
    size_t          n, a, k;
    unsigned char  *p;

    for (k = 0; k < T_NLARGE + T_NRANDOM; k++) {
        n = (k < T_NLARGE) ? t_large[k] : 4097 + rnd_n(T_MAXLEN - 4096);
        a = rnd_n(64);
        p = buf_new(a, n, &base);
        buf_fill(p, n);
        f(p, n, a);
        free(base);
    }
}


/* the positions to place a target at in a buffer of n bytes at p */

static size_t
positions(const unsigned char *p, size_t n, size_t *pos)
{
    size_t  i, k, m, first;

    m = 0;

    if (n <= T_ALLPOS) {
        for (i = 0; i < n; i++) {
            pos[m++] = i;
        }

        return m;
    }

    for (i = 0; i < 128; i++) {
        pos[m++] = i;
        pos[m++] = n - 1 - i;
    }

    /* around the 16-byte boundaries of the addresses */

    first = (16 - ((uintptr_t) p & 15)) & 15;

    for (k = 0; k < 48; k++) {
        i = first + 16 * (k < 24 ? k : (n / 16 - 48 + k));

        if (i >= 1 && i + 1 < n) {
            pos[m++] = i - 1;
            pos[m++] = i;
            pos[m++] = i + 1;
        }
    }

    for (k = 0; k < 32; k++) {
        pos[m++] = rnd_n(n);
    }

    return m;
}


static void
fill_without(unsigned char *p, size_t n, int c)
{
    size_t  i;

    buf_fill(p, n);

    for (i = 0; i < n; i++) {
        if (p[i] == (unsigned char) c) {
            p[i] ^= 0x5a;
        }
    }
}


/* random bytes rich in '\r' and '\n' */

static void
fill_crlf_rich(unsigned char *p, size_t n)
{
    size_t                      i;
    uint64_t                    r;
    static const unsigned char  alpha[8] = {
        '\r', '\n', '\r', '\n', 'a', 0x00, 0xff, 0x8d
    };

    r = 0;

    for (i = 0; i < n; i++) {
        if ((i & 15) == 0) {
            r = rnd();
        }

        p[i] = (r & 8) ? alpha[r & 7] : (unsigned char) (r >> 4);
        r >>= 4;
    }
}


static void
break_crlf(unsigned char *p, size_t n)
{
    size_t  i;

    for (i = 0; i + 1 < n; i++) {
        if (p[i] == '\r' && p[i + 1] == '\n') {
            p[i + 1] = 'x';
        }
    }
}


/* crc32c */

static void
case_crc32c(unsigned char *p, size_t n, size_t a)
{
    check_crc32c(p, n, a, (rnd() & 1) ? 0 : (uint32_t) rnd());
}


static void
test_crc32c(void)
{
    size_t          i, k, n, s;
    uint32_t        c0, c1, want;
    unsigned char   b[64];
    static const struct {
        size_t      n;
        int         fill;       /* -1: "123456789", -2: 0, 1, ..; else */
        uint32_t    crc;
    } kat[] = {
        { 9, -1, 0xe3069283 },
        { 0, 0, 0x00000000 },
        { 32, 0x00, 0x8a9136aa },
        { 32, 0xff, 0x62a8ab43 },
        { 32, -2, 0x46dd794e },
    };

    for (k = 0; k < sizeof(kat) / sizeof(kat[0]); k++) {
        if (kat[k].fill == -1) {
            memcpy(b, "123456789", 9);

        } else if (kat[k].fill == -2) {
            for (i = 0; i < 32; i++) {
                b[i] = (unsigned char) i;
            }

        } else {
            memset(b, kat[k].fill, sizeof(b));
        }

        for (i = 0; i < nimpls; i++) {
            c0 = impls[i]->crc32c(0, b, kat[k].n);

            if (c0 != kat[k].crc) {
                fail(i, "crc32c vector %zu: %08x, want %08x",
                     k, c0, kat[k].crc);
            }
        }
    }

    group_end("crc32c known answers");

    for_lengths(case_crc32c);
    group_end("crc32c lengths 0..4096, alignments 0..63");

    for_large(case_crc32c);
    group_end("crc32c sampled lengths up to 1 MiB");

    /* crc(A || B) == crc(crc(A), B) == combine(crc(A), crc(B), |B|) */

    for (k = 0; k < 200; k++) {
        n = (k < 100) ? rnd_n(4096) : rnd_n(T_MAXLEN);
        s = rnd_n(n + 1);

        for (i = 0; i < nimpls; i++) {
            want = sft_crc32c_c(0, pool + k, n);
            c0 = impls[i]->crc32c(0, pool + k, s);
            c1 = impls[i]->crc32c(c0, pool + k + s, n - s);

            if (c1 != want) {
                fail(i, "crc32c chain n=%zu split=%zu: %08x, want %08x",
                     n, s, c1, want);
            }

            c1 = sft_crc32c_combine(c0,
                                    impls[i]->crc32c(0, pool + k + s, n - s),
                                    n - s);

            if (c1 != want) {
                fail(i, "crc32c combine n=%zu split=%zu: %08x, want %08x",
                     n, s, c1, want);
            }
        }
    }

    group_end("crc32c chaining and combining");
}


/* adler32 */

static void
case_adler32(unsigned char *p, size_t n, size_t a)
{
    uint32_t  init;

    init = (rnd() & 1) ? 1
           : (uint32_t) (rnd_n(65521) << 16 | rnd_n(65521));

    check_adler32(p, n, a, init);
}


static void
case_adler32_ff(unsigned char *p, size_t n, size_t a)
{
    memset(p, 0xff, n);
    check_adler32(p, n, a, 0xfff0fff0);
}


static void
test_adler32(void)
{
    size_t    i, k;
    uint32_t  v;
    static const struct {
        const char  *s;
        uint32_t     adler;
    } kat[] = {
        { "Wikipedia", 0x11e60398 },
        { "", 0x00000001 },
        { "abc", 0x024d0127 },
        { "The quick brown fox jumps over the lazy dog. "
          "The quick brown fox jumps over the lazy dog.", 0xaed1202f },
    };

    for (k = 0; k < sizeof(kat) / sizeof(kat[0]); k++) {
        for (i = 0; i < nimpls; i++) {
            v = impls[i]->adler32(1, kat[k].s, strlen(kat[k].s));

            if (v != kat[k].adler) {
                fail(i, "adler32(\"%s\"): %08x, want %08x",
                     kat[k].s, v, kat[k].adler);
            }
        }
    }

    group_end("adler32 known answers");

    for_lengths(case_adler32);
    group_end("adler32 lengths 0..4096, alignments 0..63");

    for_large(case_adler32);
    for_large(case_adler32_ff);
    group_end("adler32 sampled lengths up to 1 MiB (random and 0xff)");
}


/* find_byte, find_newline */

static int
rnd_byte_target(void)
{
    static const int  special[] = { 0, 0xff, 0x80, '\n', '\r', -1, 0x10a };

    if (rnd() & 1) {
        return special[rnd_n(sizeof(special) / sizeof(special[0]))];
    }

    return (int) rnd_n(256);
}


static void
case_find_byte(unsigned char *p, size_t n, size_t a)
{
    int  c;

    /* natural content, then with the target removed */

    c = rnd_byte_target();
    check_find_byte(p, n, a, c);

    fill_without(p, n, c);
    check_find_byte(p, n, a, c);

    if (n) {
        p[n - 1] = (unsigned char) c;
        check_find_byte(p, n, a, c);
    }
}


static void
case_find_newline(unsigned char *p, size_t n, size_t a)
{
    check_find_newline(p, n, a);

    fill_without(p, n, '\n');
    check_find_newline(p, n, a);

    if (n) {
        p[n - 1] = '\n';
        check_find_newline(p, n, a);
    }
}


static const size_t  t_poslens[] = {
    301, 383, 384, 385, 511, 512, 513, 1000, 4095, 4096, 4097, 65537
};

#define T_NPOSLENS  (sizeof(t_poslens) / sizeof(t_poslens[0]))


static void
test_find_byte_positions(int newline)
{
    int             c;
    void           *base;
    size_t          n, a, k, j, m, pos[T_MAXPOS];
    unsigned char   save, *p;

    for (k = 0; k <= T_ALLPOS + T_NPOSLENS; k++) {
        n = (k <= T_ALLPOS) ? k : t_poslens[k - T_ALLPOS - 1];
        a = (k * 7) % 64;
        c = newline ? '\n' : rnd_byte_target();

        p = buf_new(a, n, &base);
        fill_without(p, n, c);

        if (newline) {
            check_find_newline(p, n, a);
        } else {
            check_find_byte(p, n, a, c);
        }

        m = positions(p, n, pos);

        for (j = 0; j < m; j++) {
            save = p[pos[j]];
            p[pos[j]] = (unsigned char) c;

            if (newline) {
                check_find_newline(p, n, a);
            } else {
                check_find_byte(p, n, a, c);
            }

            p[pos[j]] = save;
        }

        free(base);
    }
}


static void
test_find(void)
{
    for_lengths(case_find_byte);
    test_find_byte_positions(0);
    group_end("find_byte lengths 0..4096, alignments 0..63, positions");

    for_lengths(case_find_newline);
    test_find_byte_positions(1);
    group_end("find_newline lengths 0..4096, alignments 0..63, positions");
}


/* find_crlf */

static void
case_find_crlf(unsigned char *p, size_t n, size_t a)
{
    check_find_crlf(p, n, a);

    fill_crlf_rich(p, n);
    check_find_crlf(p, n, a);

    break_crlf(p, n);
    check_find_crlf(p, n, a);

    if (n) {
        p[n - 1] = '\r';            /* a trailing lone '\r' */
        check_find_crlf(p, n, a);
    }

    if (n >= 2) {
        p[n - 2] = '\r';
        p[n - 1] = '\n';
        check_find_crlf(p, n, a);
    }
}


static void
test_find_crlf(void)
{
    void           *base;
    size_t          n, a, k, j, m, pos[T_MAXPOS];
    unsigned char   s0, s1, *p;

    for_lengths(case_find_crlf);
    group_end("find_crlf lengths 0..4096, alignments 0..63");

    for (k = 0; k <= T_ALLPOS + T_NPOSLENS; k++) {
        n = (k <= T_ALLPOS) ? k : t_poslens[k - T_ALLPOS - 1];
        a = (k * 11) % 64;

        p = buf_new(a, n, &base);

        if (k & 1) {
            fill_crlf_rich(p, n);
        } else {
            buf_fill(p, n);
        }

        break_crlf(p, n);
        check_find_crlf(p, n, a);

        m = positions(p, n, pos);

        for (j = 0; j < m; j++) {
            if (pos[j] + 1 >= n) {
                s0 = p[pos[j]];         /* a '\r' at the very end */
                p[pos[j]] = '\r';
                check_find_crlf(p, n, a);
                p[pos[j]] = s0;
                continue;
            }

            s0 = p[pos[j]];
            s1 = p[pos[j] + 1];
            p[pos[j]] = '\r';
            p[pos[j] + 1] = '\n';
            check_find_crlf(p, n, a);

            p[pos[j] + 1] = '\r';       /* "\r\r" is no match */
            check_find_crlf(p, n, a);

            p[pos[j]] = s0;
            p[pos[j] + 1] = s1;
        }

        free(base);
    }

    group_end("find_crlf positions, absent, trailing '\\r'");
}


/* ct_eq */

static void
test_ct_eq_one(size_t n, size_t a, size_t b, int all)
{
    void           *base0, *base1;
    size_t          j, m, pos[T_MAXPOS];
    unsigned char   d, *x, *y;

    x = buf_new(a, n, &base0);
    y = buf_new(b, n, &base1);
    buf_fill(x, n);

    if (n) {
        memcpy(y, x, n);
    }

    check_ct_eq(x, y, n, a, (size_t) -1);

    if (all) {
        m = positions(x, n, pos);

    } else {
        m = 2;
        pos[0] = rnd_n(n + 1);
        pos[1] = n - 1;
    }

    for (j = 0; j < m && n; j++) {
        if (pos[j] >= n) {
            continue;
        }

        d = (j & 1) ? 0x80 : (unsigned char) (1 + rnd_n(255));
        y[pos[j]] ^= d;
        check_ct_eq(x, y, n, a, pos[j]);
        y[pos[j]] ^= d;
    }

    free(base0);
    free(base1);
}


static void
case_ct_eq(unsigned char *p, size_t n, size_t a)
{
    (void) p;

    test_ct_eq_one(n, a, rnd_n(64), n <= T_SMALLALL);
}


static void
test_ct_eq(void)
{
    size_t  k;

    for_lengths(case_ct_eq);

    for (k = 0; k < T_NPOSLENS; k++) {
        test_ct_eq_one(t_poslens[k], rnd_n(64), rnd_n(64), 1);
    }

    group_end("ct_eq lengths 0..4096, alignments 0..63, each position");
}


/* large lengths for the search and compare kernels */

static void
case_large_find(unsigned char *p, size_t n, size_t a)
{
    size_t  pos;

    case_find_byte(p, n, a);
    case_find_newline(p, n, a);

    fill_crlf_rich(p, n);
    break_crlf(p, n);
    check_find_crlf(p, n, a);

    pos = rnd_n(n - 1);
    p[pos] = '\r';
    p[pos + 1] = '\n';
    check_find_crlf(p, n, a);

    test_ct_eq_one(n, a, rnd_n(64), 0);
}


/* guard pages: the data ends at (or starts at) an inaccessible page */

static void
segv_handler(int signo)
{
    (void) signo;

    siglongjmp(segv_jmp, 1);
}


static int
guard_run(const sft_asm_impl_t *impl, int kernel, const unsigned char *p,
    const unsigned char *q, size_t n)
{
    uint64_t  r;

    if (sigsetjmp(segv_jmp, 1) != 0) {
        return -1;
    }

    switch (kernel) {
    case 0:
        r = impl->crc32c(0, p, n) != sft_crc32c_c(0, p, n);
        break;
    case 1:
        r = impl->adler32(1, p, n) != sft_adler32_c(1, p, n);
        break;
    case 2:
        r = impl->find_byte(p, n, 0xfe) != sft_find_byte_c(p, n, 0xfe);
        break;
    case 3:
        r = impl->find_newline(p, n) != sft_find_newline_c(p, n);
        break;
    case 4:
        r = impl->find_crlf(p, n) != sft_find_crlf_c(p, n);
        break;
    default:
        r = impl->ct_eq(p, q, n) != sft_ct_eq_c(p, q, n);
        break;
    }

    sink += r;

    return (int) r;
}


static void
test_guard(void)
{
    int                 k, rc;
    size_t              i, n, pg, len;
    unsigned char      *m0, *m1, *d0, *d1, *p, *q;
    struct sigaction    sa, osa, osa2;
    static const char  *names[] = {
        "crc32c", "adler32", "find_byte", "find_newline", "find_crlf",
        "ct_eq"
    };

    pg = (size_t) sysconf(_SC_PAGESIZE);
    len = 4096 + 2 * pg;
    len = (len + pg - 1) / pg * pg;

    /* [guard][data][guard], twice (for ct_eq) */

    m0 = mmap(NULL, len + 2 * pg, PROT_READ|PROT_WRITE,
              MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
    m1 = mmap(NULL, len + 2 * pg, PROT_READ|PROT_WRITE,
              MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);

    if (m0 == MAP_FAILED || m1 == MAP_FAILED) {
        printf("Bail out! mmap failed\n");
        exit(1);
    }

    d0 = m0 + pg;
    d1 = m1 + pg;

    for (i = 0; i < len; i++) {
        d0[i] = (unsigned char) (rnd() | 1);   /* no '\n' */
    }

    break_crlf(d0, len);
    memcpy(d1, d0, len);

    if (mprotect(m0, pg, PROT_NONE) != 0
        || mprotect(d0 + len, pg, PROT_NONE) != 0
        || mprotect(m1, pg, PROT_NONE) != 0
        || mprotect(d1 + len, pg, PROT_NONE) != 0)
    {
        printf("Bail out! mprotect failed\n");
        exit(1);
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = segv_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &osa);
    sigaction(SIGBUS, &sa, &osa2);

    for (i = 0; i < nimpls; i++) {

        /* n == 0 with a NULL pointer */

        if (impls[i]->crc32c(0x1234, NULL, 0) != 0x1234
            || impls[i]->adler32(0x5678, NULL, 0) != 0x5678
            || impls[i]->find_byte(NULL, 0, 0) != NULL
            || impls[i]->find_newline(NULL, 0) != NULL
            || impls[i]->find_crlf(NULL, 0) != NULL
            || impls[i]->ct_eq(NULL, NULL, 0) != 1)
        {
            fail(i, "n == 0 with NULL pointers");
        }

        for (n = 0; n <= 4096; n++) {
            if (n > 256 && n % 64 != 0 && n % 64 != 1 && n % 64 != 63
                && n % 17 != 0)
            {
                continue;
            }

            for (k = 0; k < 6; k++) {

                /* at the end of the data, then at its start */

                p = d0 + len - n;
                q = d1 + len - n;
                rc = guard_run(impls[i], k, p, q, n);

                if (rc == 0) {
                    p = d0;
                    q = d1;
                    rc = guard_run(impls[i], k, p, q, n);
                }

                if (rc != 0) {
                    fail(i, "%s n=%zu %s", names[k], n,
                         rc < 0 ? "touched a guard page"
                                : "disagrees with C");
                }
            }
        }
    }

    sigaction(SIGSEGV, &osa, NULL);
    sigaction(SIGBUS, &osa2, NULL);

    munmap(m0, len + 2 * pg);
    munmap(m1, len + 2 * pg);

    group_end("no access outside [p, p + n) (guard pages), NULL with n == 0");
}


/* dispatch */

static void
test_dispatch_before_init(void)
{
    tap(strcmp(sft_asm_impl_name(), "c") == 0
        && sft_asm_impl() == sft_asm_impl_get(0)
        && sft_crc32c(0, "123456789", 9) == 0xe3069283
        && sft_adler32(1, "Wikipedia", 9) == 0x11e60398
        && sft_find_crlf("ab\r\ncd", 6) != NULL
        && sft_ct_eq("abc", "abc", 3) == 1,
        "dispatch: the C versions work before sft_asm_init()");
}


static void
test_dispatch_after_init(void)
{
    int                    ok;
    const sft_asm_impl_t  *best;
    static const char      s[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

    best = impls[nimpls - 1];

    sft_asm_init();
    sft_asm_init();

    tap(sft_asm_impl() == best && strcmp(sft_asm_impl_name(), best->name) == 0,
        "dispatch: sft_asm_init() (twice) selected \"%s\"", best->name);

    ok = sft_crc32c(0, s, sizeof(s) - 1) == best->crc32c(0, s, sizeof(s) - 1)
         && sft_crc32c(0, "123456789", 9) == 0xe3069283
         && sft_adler32(1, s, sizeof(s) - 1)
            == sft_adler32_c(1, s, sizeof(s) - 1)
         && sft_find_byte(s, sizeof(s) - 1, 'H') == s + 6
         && sft_find_newline(s, sizeof(s) - 1) == s + 15
         && sft_find_crlf(s, sizeof(s) - 1) == s + 14
         && sft_find_crlf(s + 16, 10) == s + 23
         && sft_ct_eq(s, s, sizeof(s)) == 1
         && sft_ct_eq(s, s + 1, 3) == 0;

    tap(ok, "dispatch: the sft_* entry points give the expected results");
}


int
main(int argc, char **argv)
{
    size_t           i;
    uint64_t         seed, r;
    const char      *e;
    struct timespec  ts;

    if (argc > 1) {
        seed = strtoull(argv[1], NULL, 0);

    } else if ((e = getenv("SFT_TEST_SEED")) != NULL && *e) {
        seed = strtoull(e, NULL, 0);

    } else {
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t) ts.tv_sec * 1000003 ^ (uint64_t) ts.tv_nsec
               ^ (uint64_t) getpid() << 32;
    }

    rng = seed;
    crc_table_init();

    for (nimpls = 0; nimpls < T_MAXIMPL; nimpls++) {
        impls[nimpls] = sft_asm_impl_get(nimpls);

        if (impls[nimpls] == NULL) {
            break;
        }
    }

    printf("1..%zu\n", T_NGROUPS * nimpls + 3);
    printf("# seed %llu (rerun: test_asm %llu)\n",
           (unsigned long long) seed, (unsigned long long) seed);
    printf("# implementations:");

    for (i = 0; i < nimpls; i++) {
        printf(" \"%s\"", impls[i]->name);
    }

    printf("\n");

    test_dispatch_before_init();

    pool = malloc(T_POOL);

    if (pool == NULL) {
        printf("Bail out! out of memory\n");
        return 1;
    }

    for (i = 0; i < T_POOL; i += 8) {
        r = rnd();
        memcpy(pool + i, &r, 8);
    }

    test_crc32c();
    test_adler32();
    test_find();
    test_find_crlf();
    test_ct_eq();

    for_large(case_large_find);
    group_end("find_*, ct_eq sampled lengths up to 1 MiB");

    test_guard();

    test_dispatch_after_init();

    free(pool);

    if (tap_failed) {
        printf("# %u of %u tests failed (seed %llu)\n",
               tap_failed, tap_n, (unsigned long long) seed);
    }

    return tap_failed ? 1 : 0;
}
