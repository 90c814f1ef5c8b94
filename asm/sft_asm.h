/*
 * sft_asm.h: public interface of the siftp hot-path kernels (CRC-32C,
 * Adler-32, byte / newline / CRLF search, constant-time compare), with
 * hand-written x86_64 and aarch64 versions selected at run time and
 * portable C reference versions; the CPU features they need.  AES-GCM
 * has its own interface, sft_aes_gcm.h.
 */


#ifndef _SFT_ASM_H_INCLUDED_
#define _SFT_ASM_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/*
 * The dispatched entry points.  They use the C versions until
 * sft_asm_init() has picked the best implementation for this CPU.
 */

uint32_t sft_crc32c(uint32_t crc, const void *p, size_t n);
uint32_t sft_adler32(uint32_t adler, const void *p, size_t n);
const void *sft_find_byte(const void *p, size_t n, int c);
const void *sft_find_newline(const void *p, size_t n);
const void *sft_find_crlf(const void *p, size_t n);
int sft_ct_eq(const void *a, const void *b, size_t n);

/* the CRC-32C of A then B from crc(A), crc(B) and the length of B */
uint32_t sft_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

void sft_asm_init(void);
const char *sft_asm_impl_name(void);


/* the portable C reference versions */

uint32_t sft_crc32c_c(uint32_t crc, const void *p, size_t n);
uint32_t sft_adler32_c(uint32_t adler, const void *p, size_t n);
const void *sft_find_byte_c(const void *p, size_t n, int c);
const void *sft_find_newline_c(const void *p, size_t n);
const void *sft_find_crlf_c(const void *p, size_t n);
int sft_ct_eq_c(const void *a, const void *b, size_t n);


/*
 * A complete set of kernels.  sft_asm_impl_get(0) is always the C set;
 * sft_asm_impl_get(1), (2), ... are the asm sets this CPU can run, from
 * the most portable to the fastest; NULL past the end.  The selected
 * set is the last one.  Used by the tests and the benchmark.
 */

typedef struct {
    const char   *name;
    uint32_t      features;     /* SFT_CPU_* bits required */

    uint32_t    (*crc32c)(uint32_t crc, const void *p, size_t n);
    uint32_t    (*adler32)(uint32_t adler, const void *p, size_t n);
    const void *(*find_byte)(const void *p, size_t n, int c);
    const void *(*find_newline)(const void *p, size_t n);
    const void *(*find_crlf)(const void *p, size_t n);
    int         (*ct_eq)(const void *a, const void *b, size_t n);
} sft_asm_impl_t;


#define SFT_CPU_SSE2      0x0001
#define SFT_CPU_SSSE3     0x0002
#define SFT_CPU_SSE42     0x0004
#define SFT_CPU_PCLMUL    0x0008
#define SFT_CPU_AVX2      0x0010
#define SFT_CPU_AES       0x0020
#define SFT_CPU_AVX512    0x0040      /* F, BW and VL, zmm state saved */
#define SFT_CPU_VAES      0x0080      /* VAES and VPCLMULQDQ */
#define SFT_CPU_BMI2      0x0800
#define SFT_CPU_NEON      0x0100
#define SFT_CPU_CRC32     0x0200
#define SFT_CPU_PMULL     0x0400


const sft_asm_impl_t *sft_asm_impl_get(size_t i);

/*
 * The i-th of n kernel sets of size bytes (from 0) whose SFT_CPU_* bits,
 * a uint32_t at offset features, this CPU has; NULL past the end.
 */
const void *sft_asm_runnable(const void *impls, size_t n, size_t size,
    size_t features, size_t i);
const sft_asm_impl_t *sft_asm_impl(void);
uint32_t sft_asm_cpu_features(void);


#endif /* _SFT_ASM_H_INCLUDED_ */
