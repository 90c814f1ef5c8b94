/*
 * bench_asm.c: micro-benchmark of the asm/ kernels: the selected asm
 * version next to the C version (with -a: every version this CPU can
 * run) in GB/s at 64 B, 4 KiB, 64 KiB and 1 MiB, plus a byte-at-a-time
 * C loop as the baseline of find_crlf, and AES-256-GCM encryption of a
 * message (key set up once) by each AES-GCM kernel this CPU can run,
 * after the mean time of sft_aes_gcm_key() for an AES-256 key.
 * Each cell repeats the call for
 * about 0.2 s (or the number of seconds given) in 5 runs and shows the
 * best one, which is the least disturbed by other load on the machine.
 *
 *     bench_asm [-a] [seconds]
 */


#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* posix_memalign, sigsetjmp, MAP_ANONYMOUS */
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sft_asm.h"
#include "sft_aes_gcm.h"


#define B_NSIZES   4
#define B_MAXLEN   (1024 * 1024)
#define B_MAXROWS  16
#define B_TRIALS   5
#define B_KEYS     20000     /* AES-GCM key setups timed */


enum {
    B_CRC32C = 0,
    B_ADLER32,
    B_FIND_BYTE,
    B_FIND_NEWLINE,
    B_FIND_CRLF,
    B_CT_EQ,
    B_NKERNELS,
    B_AES_GCM                   /* its own rows, one per AES-GCM kernel */
};


static const char  *b_kernels[B_NKERNELS] = {
    "crc32c", "adler32", "find_byte", "find_newline", "find_crlf", "ct_eq"
};

static const size_t       b_sizes[B_NSIZES] = {
    64, 4096, 65536, B_MAXLEN
};

static const char        *b_size_names[B_NSIZES] = {
    "64 B", "4 KiB", "64 KiB", "1 MiB"
};

static double              b_seconds = 0.2;
static volatile uintptr_t  b_sink;

static unsigned char      *b_data;      /* random */
static unsigned char      *b_copy;      /* the same, for ct_eq */
static unsigned char      *b_nozero;    /* random without 0 and "\r\n" */
static unsigned char      *b_out;       /* AES-GCM's ciphertext */

static const sft_aes_gcm_impl_t  *b_gcm;
static sft_aes_gcm_key_t          b_gcm_key;


/* the baseline: one byte at a time */

static const void *
b_crlf_bytewise(const void *p, size_t n)
{
    size_t                i;
    const unsigned char  *s;

    s = p;

    for (i = 0; i + 1 < n; i++) {
        if (s[i] == '\r' && s[i + 1] == '\n') {
            return s + i;
        }
    }

    return NULL;
}


static double
b_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}


/*
 * impl NULL means the bytewise find_crlf; the function is called through
 * a volatile pointer so that the compiler cannot see that it is pure and
 * hoist it out of the loop
 */

static void
b_run(const sft_asm_impl_t *impl, int kernel, size_t n, uint64_t iters)
{
    uint64_t                   i;
    uintptr_t                  r;
    uint32_t          (*volatile crc)(uint32_t, const void *, size_t);
    const void       *(*volatile find)(const void *, size_t);
    const void       *(*volatile find_byte)(const void *, size_t, int);
    int               (*volatile ct_eq)(const void *, const void *, size_t);
    uint8_t                    tag[SFT_AES_GCM_TAG_LEN];
    sft_aes_gcm_t              g;

    r = 0;

    switch (kernel) {

    case B_AES_GCM:
        for (i = 0; i < iters; i++) {
            sft_aes_gcm_start(&g, b_gcm, &b_gcm_key, b_copy, b_copy, 5);
            sft_aes_gcm_encrypt(&g, b_data, b_out, n);
            sft_aes_gcm_finish(&g, tag);
            r += tag[0];
        }
        break;

    case B_CRC32C:
    case B_ADLER32:
        crc = (kernel == B_CRC32C) ? impl->crc32c : impl->adler32;

        for (i = 0; i < iters; i++) {
            r += crc((uint32_t) r, b_data, n);
        }
        break;

    case B_FIND_BYTE:
        find_byte = impl->find_byte;

        for (i = 0; i < iters; i++) {
            r += (uintptr_t) find_byte(b_nozero, n, 0);
        }
        break;

    case B_FIND_NEWLINE:
    case B_FIND_CRLF:
        find = (kernel == B_FIND_NEWLINE) ? impl->find_newline
               : (impl ? impl->find_crlf : b_crlf_bytewise);

        for (i = 0; i < iters; i++) {
            r += (uintptr_t) find(b_nozero, n);
        }
        break;

    default:
        ct_eq = impl->ct_eq;

        for (i = 0; i < iters; i++) {
            r += ct_eq(b_data, b_copy, n);
        }
        break;
    }

    b_sink += r;
}


/* the best of B_TRIALS runs of about b_seconds / B_TRIALS each */

static double
b_cell(const sft_asm_impl_t *impl, int kernel, size_t n)
{
    int       k;
    double    t, t0, gbs, best;
    uint64_t  iters;

    iters = 1;

    for ( ;; ) {
        t0 = b_now();
        b_run(impl, kernel, n, iters);
        t = b_now() - t0;

        if (t >= b_seconds / B_TRIALS / 8 || iters >= ((uint64_t) 1 << 40)) {
            break;
        }

        iters *= 2;
    }

    iters = (uint64_t) ((double) iters * b_seconds / B_TRIALS / t) + 1;
    best = 0;

    for (k = 0; k < B_TRIALS; k++) {
        t0 = b_now();
        b_run(impl, kernel, n, iters);
        t = b_now() - t0;

        gbs = (double) n * (double) iters / t / 1e9;
        best = (gbs > best) ? gbs : best;
    }

    return best;
}


int
main(int argc, char **argv)
{
    int                    k, all;
    size_t                 i, s, nrows;
    double                 gbs[B_NSIZES], crlf_asm, crlf_byte, t0;
    const char            *label[B_MAXROWS];
    const sft_asm_impl_t  *impl, *rows[B_MAXROWS];

    all = 0;

    for (k = 1; k < argc; k++) {
        if (strcmp(argv[k], "-a") == 0) {
            all = 1;

        } else if (atof(argv[k]) > 0) {
            b_seconds = atof(argv[k]);

        } else {
            fprintf(stderr, "usage: bench_asm [-a] [seconds]\n");
            return 2;
        }
    }

    sft_asm_init();

    b_data = malloc(B_MAXLEN);
    b_copy = malloc(B_MAXLEN);
    b_nozero = malloc(B_MAXLEN);
    b_out = malloc(B_MAXLEN);

    if (b_data == NULL || b_copy == NULL || b_nozero == NULL || b_out == NULL)
    {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    srand(1);

    for (i = 0; i < B_MAXLEN; i++) {
        b_data[i] = (unsigned char) (rand() >> 7);
        b_nozero[i] = b_data[i] ? b_data[i] : 0x20;
        b_nozero[i] = (b_nozero[i] == '\n') ? 0x21 : b_nozero[i];

        if (i && b_nozero[i - 1] == '\r' && b_nozero[i] == '\n') {
            b_nozero[i] = 'x';
        }
    }

    memcpy(b_copy, b_data, B_MAXLEN);

    /* every '\r' stays: the C find_crlf stops at each one, as in real use */

    nrows = 0;

    if (all) {
        for (i = 1; (impl = sft_asm_impl_get(i)) != NULL; i++) {
            label[nrows] = impl->name;
            rows[nrows++] = impl;
        }

    } else if (sft_asm_impl() != sft_asm_impl_get(0)) {
        label[nrows] = "asm";
        rows[nrows++] = sft_asm_impl();
    }

    label[nrows] = "c";
    rows[nrows++] = sft_asm_impl_get(0);

    printf("# sft_asm bench: selected \"%s\"; GB/s (1e9 bytes/s), "
           "%.2f s per cell\n", sft_asm_impl_name(), b_seconds);
    printf("%-13s %-24s", "kernel", "impl");

    for (s = 0; s < B_NSIZES; s++) {
        printf(" %9s", b_size_names[s]);
    }

    printf("\n");
    fflush(stdout);

    crlf_asm = 0;
    crlf_byte = 0;

    for (k = 0; k < B_NKERNELS; k++) {

        for (i = 0; i <= nrows; i++) {

            if (i == nrows && k != B_FIND_CRLF) {
                break;
            }

            for (s = 0; s < B_NSIZES; s++) {
                gbs[s] = b_cell(i < nrows ? rows[i] : NULL, k, b_sizes[s]);
            }

            if (k == B_FIND_CRLF && i == 0) {
                crlf_asm = gbs[2];
            }

            if (k == B_FIND_CRLF && i == nrows) {
                crlf_byte = gbs[2];
            }

            printf("%-13s %-24s", b_kernels[k],
                   i < nrows ? label[i] : "byte-at-a-time C");

            for (s = 0; s < B_NSIZES; s++) {
                printf(" %9.2f", gbs[s]);
            }

            printf("\n");
            fflush(stdout);
        }
    }

    t0 = b_now();

    for (s = 0; s < B_KEYS; s++) {
        sft_aes_gcm_key(&b_gcm_key, b_data + s % 64, 32);
    }

    printf("# aes256gcm key setup (schedule, H, 32 powers): %.2f us\n",
           (b_now() - t0) * 1e6 / B_KEYS);

    for (i = 0; (b_gcm = sft_aes_gcm_impl_get(i)) != NULL; i++) {
        for (s = 0; s < B_NSIZES; s++) {
            gbs[s] = b_cell(NULL, B_AES_GCM, b_sizes[s]);
        }

        printf("%-13s %-24s", "aes256gcm", b_gcm->name);

        for (s = 0; s < B_NSIZES; s++) {
            printf(" %9.2f", gbs[s]);
        }

        printf("\n");
        fflush(stdout);
    }

    if (crlf_byte > 0) {
        printf("# find_crlf %s / byte-at-a-time at 64 KiB: %.1fx\n",
               label[0], crlf_asm / crlf_byte);
    }

    free(b_data);
    free(b_copy);
    free(b_nozero);
    free(b_out);

    return 0;
}
