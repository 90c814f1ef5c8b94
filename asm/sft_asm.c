/*
 * sft_asm.c: CPU feature detection (cpuid / getauxval) and run-time
 * dispatch of the sft_* kernels to their asm or C versions.  Without
 * SFT_HAVE_ASM (configure --without-asm) only the C versions exist.
 */


#include <string.h>

#include "sft_asm.h"


#if (defined SFT_HAVE_ASM && defined __x86_64__ && defined __ELF__)
#define SFT_ASM_X86_64  1
#include <cpuid.h>

#elif (defined SFT_HAVE_ASM && defined __aarch64__ && defined __linux__)
#define SFT_ASM_AARCH64  1
#include <sys/auxv.h>

#endif


#if (SFT_ASM_X86_64)

uint32_t sft_crc32c_sse42(uint32_t crc, const void *p, size_t n);
uint32_t sft_adler32_ssse3(uint32_t adler, const void *p, size_t n);
uint32_t sft_adler32_avx2(uint32_t adler, const void *p, size_t n);
const void *sft_find_byte_sse2(const void *p, size_t n, int c);
const void *sft_find_byte_avx2(const void *p, size_t n, int c);
const void *sft_find_newline_sse2(const void *p, size_t n);
const void *sft_find_newline_avx2(const void *p, size_t n);
const void *sft_find_crlf_sse2(const void *p, size_t n);
const void *sft_find_crlf_avx2(const void *p, size_t n);
int sft_ct_eq_sse2(const void *a, const void *b, size_t n);

#elif (SFT_ASM_AARCH64)

uint32_t sft_crc32c_armv8(uint32_t crc, const void *p, size_t n);
uint32_t sft_crc32c_armv8_pmull(uint32_t crc, const void *p, size_t n);
uint32_t sft_adler32_neon(uint32_t adler, const void *p, size_t n);
const void *sft_find_byte_neon(const void *p, size_t n, int c);
const void *sft_find_newline_neon(const void *p, size_t n);
const void *sft_find_crlf_neon(const void *p, size_t n);
int sft_ct_eq_neon(const void *a, const void *b, size_t n);

#endif


/* ordered from the most portable to the fastest */

static const sft_asm_impl_t  sft_asm_impls[] = {

    { "c", 0,
      sft_crc32c_c, sft_adler32_c, sft_find_byte_c, sft_find_newline_c,
      sft_find_crlf_c, sft_ct_eq_c },

#if (SFT_ASM_X86_64)

    { "x86_64 sse2", SFT_CPU_SSE2,
      sft_crc32c_c, sft_adler32_c, sft_find_byte_sse2,
      sft_find_newline_sse2, sft_find_crlf_sse2, sft_ct_eq_sse2 },

    { "x86_64 sse4.2+ssse3",
      SFT_CPU_SSE2|SFT_CPU_SSSE3|SFT_CPU_SSE42|SFT_CPU_PCLMUL,
      sft_crc32c_sse42, sft_adler32_ssse3, sft_find_byte_sse2,
      sft_find_newline_sse2, sft_find_crlf_sse2, sft_ct_eq_sse2 },

    { "x86_64 sse4.2+avx2",
      SFT_CPU_SSE2|SFT_CPU_SSSE3|SFT_CPU_SSE42|SFT_CPU_PCLMUL|SFT_CPU_AVX2,
      sft_crc32c_sse42, sft_adler32_avx2, sft_find_byte_avx2,
      sft_find_newline_avx2, sft_find_crlf_avx2, sft_ct_eq_sse2 },

#elif (SFT_ASM_AARCH64)

    { "aarch64 neon", SFT_CPU_NEON,
      sft_crc32c_c, sft_adler32_neon, sft_find_byte_neon,
      sft_find_newline_neon, sft_find_crlf_neon, sft_ct_eq_neon },

    { "aarch64 neon+crc32", SFT_CPU_NEON|SFT_CPU_CRC32,
      sft_crc32c_armv8, sft_adler32_neon, sft_find_byte_neon,
      sft_find_newline_neon, sft_find_crlf_neon, sft_ct_eq_neon },

    { "aarch64 neon+crc32+pmull", SFT_CPU_NEON|SFT_CPU_CRC32|SFT_CPU_PMULL,
      sft_crc32c_armv8_pmull, sft_adler32_neon, sft_find_byte_neon,
      sft_find_newline_neon, sft_find_crlf_neon, sft_ct_eq_neon },

#endif
};


#define SFT_ASM_NIMPLS  (sizeof(sft_asm_impls) / sizeof(sft_asm_impls[0]))
#define SFT_CPU_DETECTED  0x80000000


#if (SFT_ASM_X86_64 || SFT_ASM_AARCH64)

/*
 * Both words are written only with values that every racing writer
 * computes identically; relaxed atomics keep concurrent first calls
 * well defined.
 */

static const sft_asm_impl_t  *sft_asm_selected = &sft_asm_impls[0];
static uint32_t               sft_asm_cpu;

#define sft_asm_cur()                                                        \
    __atomic_load_n(&sft_asm_selected, __ATOMIC_RELAXED)

#else

#define sft_asm_cur()  (&sft_asm_impls[0])

#endif


#if (SFT_ASM_X86_64)

static uint32_t
sft_asm_detect(void)
{
    uint32_t  f;
    unsigned  eax, ebx, ecx, edx, xcr0, xcr0_hi, max;

    f = SFT_CPU_SSE2;       /* baseline of x86_64 */

    max = __get_cpuid_max(0, NULL);

    if (max < 1) {
        return f;
    }

    __cpuid(1, eax, ebx, ecx, edx);

    if (ecx & (1u << 9)) {
        f |= SFT_CPU_SSSE3;
    }

    if (ecx & (1u << 20)) {
        f |= SFT_CPU_SSE42;
    }

    if (ecx & (1u << 1)) {
        f |= SFT_CPU_PCLMUL;
    }

    if (ecx & (1u << 25)) {
        f |= SFT_CPU_AES;
    }

    /*
     * AVX2 needs OSXSAVE, AVX, and the OS saving the xmm and ymm state;
     * AVX-512 also the opmask and zmm state
     */

    if ((ecx & (1u << 27)) && (ecx & (1u << 28)) && max >= 7) {

        __asm__ volatile (".byte 0x0f, 0x01, 0xd0"      /* xgetbv */
                          : "=a" (xcr0), "=d" (xcr0_hi) : "c" (0));

        __cpuid_count(7, 0, eax, ebx, ecx, edx);

        if (ebx & (1u << 8)) {
            f |= SFT_CPU_BMI2;
        }

        if ((xcr0 & 6) == 6 && (ebx & (1u << 5))) {
            f |= SFT_CPU_AVX2;
        }

        if ((xcr0 & 0xe6) == 0xe6
            && (ebx & (1u << 16)) && (ebx & (1u << 30)) && (ebx & (1u << 31)))
        {
            f |= SFT_CPU_AVX512;
        }

        if ((ecx & (1u << 9)) && (ecx & (1u << 10))) {
            f |= SFT_CPU_VAES;
        }
    }

    return f;
}

#elif (SFT_ASM_AARCH64)

#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD  (1 << 1)
#endif
#ifndef HWCAP_PMULL
#define HWCAP_PMULL  (1 << 4)
#endif
#ifndef HWCAP_CRC32
#define HWCAP_CRC32  (1 << 7)
#endif

static uint32_t
sft_asm_detect(void)
{
    uint32_t       f;
    unsigned long  hwcap;

    f = 0;
    hwcap = getauxval(AT_HWCAP);

    if (hwcap & HWCAP_ASIMD) {
        f |= SFT_CPU_NEON;
    }

    if (hwcap & HWCAP_CRC32) {
        f |= SFT_CPU_CRC32;
    }

    if (hwcap & HWCAP_PMULL) {
        f |= SFT_CPU_PMULL;
    }

    return f;
}

#endif


uint32_t
sft_asm_cpu_features(void)
{
#if (SFT_ASM_X86_64 || SFT_ASM_AARCH64)
    uint32_t  f;

    f = __atomic_load_n(&sft_asm_cpu, __ATOMIC_RELAXED);

    if (f == 0) {
        f = sft_asm_detect() | SFT_CPU_DETECTED;
        __atomic_store_n(&sft_asm_cpu, f, __ATOMIC_RELAXED);
    }

    return f & ~SFT_CPU_DETECTED;
#else
    return 0;
#endif
}


const void *
sft_asm_runnable(const void *impls, size_t n, size_t size, size_t features,
    size_t i)
{
    size_t          k;
    uint32_t        f, need;
    const uint8_t  *p;

    f = sft_asm_cpu_features();

    for (k = 0, p = impls; k < n; k++, p += size) {
        memcpy(&need, p + features, sizeof(uint32_t));

        if ((need & f) != need) {
            continue;
        }

        if (i-- == 0) {
            return p;
        }
    }

    return NULL;
}


const sft_asm_impl_t *
sft_asm_impl_get(size_t i)
{
    return sft_asm_runnable(sft_asm_impls, SFT_ASM_NIMPLS,
                            sizeof(sft_asm_impl_t),
                            offsetof(sft_asm_impl_t, features), i);
}


void
sft_asm_init(void)
{
#if (SFT_ASM_X86_64 || SFT_ASM_AARCH64)
    size_t                 i;
    const sft_asm_impl_t  *impl, *best;

    best = &sft_asm_impls[0];

    for (i = 1; (impl = sft_asm_impl_get(i)) != NULL; i++) {
        best = impl;
    }

    __atomic_store_n(&sft_asm_selected, best, __ATOMIC_RELAXED);
#endif
}


const sft_asm_impl_t *
sft_asm_impl(void)
{
    return sft_asm_cur();
}


const char *
sft_asm_impl_name(void)
{
    return sft_asm_cur()->name;
}


uint32_t
sft_crc32c(uint32_t crc, const void *p, size_t n)
{
    return sft_asm_cur()->crc32c(crc, p, n);
}


uint32_t
sft_adler32(uint32_t adler, const void *p, size_t n)
{
    return sft_asm_cur()->adler32(adler, p, n);
}


const void *
sft_find_byte(const void *p, size_t n, int c)
{
    return sft_asm_cur()->find_byte(p, n, c);
}


const void *
sft_find_newline(const void *p, size_t n)
{
    return sft_asm_cur()->find_newline(p, n);
}


const void *
sft_find_crlf(const void *p, size_t n)
{
    return sft_asm_cur()->find_crlf(p, n);
}


int
sft_ct_eq(const void *a, const void *b, size_t n)
{
    return sft_asm_cur()->ct_eq(a, b, n);
}
