/*
 * crc32c.S: CRC-32C (Castagnoli) for aarch64 with the ARMv8 crc32c*
 * instructions (HWCAP_CRC32).
 *
 * uint32_t sft_crc32c_armv8(uint32_t crc, const void *p, size_t n);
 *     one stream, for CPUs without PMULL;
 * uint32_t sft_crc32c_armv8_pmull(uint32_t crc, const void *p, size_t n);
 *     long buffers run three interleaved streams combined with pmull
 *     (HWCAP_PMULL).
 *
 * Combining, as in asm/x86_64/crc32c.S: with r0, r1, r2 the raw CRC
 * registers of three consecutive blocks of L bytes (r1, r2 started from
 * 0), the CRC of all three is r0 * x^(16L) + r1 * x^(8L) + r2 (mod P);
 * pmull by K = x^(8L-33) mod P followed by crc32cx with a zero register
 * multiplies by x^(8L), and the two products share one crc32cx.
 */

#if (defined __aarch64__ && defined __AARCH64EL__ && defined __ELF__)

#include "sft_aarch64.h"

    .arch   armv8-a+crc+crypto


#define SFT_CRC_BIG     1024            /* bytes per stream, long loop */
#define SFT_CRC_MIN3    192             /* shortest 3-stream round */


/* w0 = crc, x1 = p, x2 = n */

SFT_ENTRY(sft_crc32c_armv8)
    mvn     w0, w0
    b       .Lcrc_tail
SFT_END(sft_crc32c_armv8)


SFT_ENTRY(sft_crc32c_armv8_pmull)
    mvn     w0, w0

    cmp     x2, #SFT_CRC_MIN3
    b.lo    .Lcrc_tail

    /* align p to 8 bytes */

    tst     x1, #7
    b.eq    .Lcrc_aligned

.Lcrc_align:
    ldrb    w3, [x1], #1
    crc32cb w0, w0, w3
    sub     x2, x2, #1
    tst     x1, #7
    b.ne    .Lcrc_align

.Lcrc_aligned:
    adrp    x11, .Lcrc_k
    add     x11, x11, :lo12:.Lcrc_k

    cmp     x2, #(3 * SFT_CRC_BIG)
    b.lo    .Lcrc_var

    add     x12, x11, #((SFT_CRC_BIG / 8 - 1) * 16)
    ldp     d2, d3, [x12]               /* K(2L), K(L) */

.Lcrc_big:
    mov     w8, #0
    mov     w9, #0
    mov     x10, #(SFT_CRC_BIG / 8)
    add     x13, x1, #SFT_CRC_BIG
    add     x14, x1, #(2 * SFT_CRC_BIG)

.Lcrc_big_loop:
    ldr     x3, [x1], #8
    ldr     x4, [x13], #8
    ldr     x5, [x14], #8
    crc32cx w0, w0, x3
    crc32cx w8, w8, x4
    crc32cx w9, w9, x5
    subs    x10, x10, #1
    b.ne    .Lcrc_big_loop

    mov     x1, x14
    sub     x2, x2, #(3 * SFT_CRC_BIG)

    fmov    d0, x0
    fmov    d1, x8
    pmull   v0.1q, v0.1d, v2.1d
    pmull   v1.1q, v1.1d, v3.1d
    eor     v0.16b, v0.16b, v1.16b
    fmov    x3, d0
    crc32cx w0, wzr, x3
    eor     w0, w0, w9

    cmp     x2, #(3 * SFT_CRC_BIG)
    b.hs    .Lcrc_big

.Lcrc_var:
    cmp     x2, #SFT_CRC_MIN3
    b.lo    .Lcrc_tail

    /* one round of 3 streams of L = 8 * j bytes, j = n / 24 (n < 3072) */

    mov     w3, #2731
    mul     w10, w2, w3
    lsr     w10, w10, #16               /* j */
    sub     w3, w10, #1
    add     x12, x11, x3, lsl #4
    ldp     d2, d3, [x12]
    lsl     x4, x10, #3                 /* L */
    add     x13, x1, x4
    add     x14, x13, x4
    mov     w8, #0
    mov     w9, #0

.Lcrc_var_loop:
    ldr     x3, [x1], #8
    ldr     x5, [x13], #8
    ldr     x6, [x14], #8
    crc32cx w0, w0, x3
    crc32cx w8, w8, x5
    crc32cx w9, w9, x6
    subs    x10, x10, #1
    b.ne    .Lcrc_var_loop

    mov     x1, x14
    add     x4, x4, x4, lsl #1
    sub     x2, x2, x4

    fmov    d0, x0
    fmov    d1, x8
    pmull   v0.1q, v0.1d, v2.1d
    pmull   v1.1q, v1.1d, v3.1d
    eor     v0.16b, v0.16b, v1.16b
    fmov    x3, d0
    crc32cx w0, wzr, x3
    eor     w0, w0, w9

.Lcrc_tail:
    cmp     x2, #8
    b.lo    .Lcrc_tail4

.Lcrc_tail8:
    ldr     x3, [x1], #8
    crc32cx w0, w0, x3
    sub     x2, x2, #8
    cmp     x2, #8
    b.hs    .Lcrc_tail8

.Lcrc_tail4:
    tbz     x2, #2, .Lcrc_tail2
    ldr     w3, [x1], #4
    crc32cw w0, w0, w3

.Lcrc_tail2:
    tbz     x2, #1, .Lcrc_tail1
    ldrh    w3, [x1], #2
    crc32ch w0, w0, w3

.Lcrc_tail1:
    tbz     x2, #0, .Lcrc_done
    ldrb    w3, [x1]
    crc32cb w0, w0, w3

.Lcrc_done:
    mvn     w0, w0
    ret
SFT_END(sft_crc32c_armv8_pmull)


/*
 * For L = 8 * j bytes, j = 1 .. 128, the pair { x^(16L-33), x^(8L-33) }
 * mod P in the reflected 32-bit representation (x^0 is 0x80000000);
 * the same table as in asm/x86_64/crc32c.S.
 */

    .section .rodata
    .p2align 4
.Lcrc_k:
#include "../sft_crc32c_fold.h"


#if (SFT_PROP_BTI || SFT_PROP_PAC)
SFT_GNU_PROPERTY_NOTE
#endif

    .section .note.GNU-stack, "", %progbits

#endif
