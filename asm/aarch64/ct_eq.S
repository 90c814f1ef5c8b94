/*
 * ct_eq.S: constant-time buffer comparison for aarch64 with NEON.
 *
 * int sft_ct_eq_neon(const void *a, const void *b, size_t n);
 *
 * Returns 1 if the n bytes at a and b are equal, 0 otherwise.  The XOR
 * of every pair of bytes is ORed into an accumulator; the only branches
 * depend on n, never on the data, and the result comes from cset.
 * Tails are covered by overlapping loads that end exactly at a + n.
 */

#if (defined __aarch64__ && defined __AARCH64EL__ && defined __ELF__)

#include "sft_aarch64.h"


/* x0 = a, x1 = b, x2 = n; v0, v1, x8 accumulate */

SFT_ENTRY(sft_ct_eq_neon)
    movi    v0.16b, #0
    movi    v1.16b, #0
    mov     x8, #0

    cmp     x2, #16
    b.lo    .Lct_small

    add     x9, x0, x2
    sub     x9, x9, #16                 /* last 16 bytes of a */
    add     x10, x1, x2
    sub     x10, x10, #16               /* and of b */

    cmp     x2, #64
    b.lo    .Lct_16

.Lct_64:
    ld1     {v2.16b, v3.16b, v4.16b, v5.16b}, [x0], #64
    ld1     {v16.16b, v17.16b, v18.16b, v19.16b}, [x1], #64
    eor     v2.16b, v2.16b, v16.16b
    eor     v3.16b, v3.16b, v17.16b
    eor     v4.16b, v4.16b, v18.16b
    eor     v5.16b, v5.16b, v19.16b
    orr     v0.16b, v0.16b, v2.16b
    orr     v1.16b, v1.16b, v3.16b
    orr     v0.16b, v0.16b, v4.16b
    orr     v1.16b, v1.16b, v5.16b
    sub     x2, x2, #64
    cmp     x2, #64
    b.hs    .Lct_64

.Lct_16:
    cmp     x2, #16
    b.lo    .Lct_last

    ldr     q2, [x0], #16
    ldr     q3, [x1], #16
    eor     v2.16b, v2.16b, v3.16b
    orr     v0.16b, v0.16b, v2.16b
    sub     x2, x2, #16
    b       .Lct_16

.Lct_last:
    ldr     q2, [x9]
    ldr     q3, [x10]
    eor     v2.16b, v2.16b, v3.16b
    orr     v0.16b, v0.16b, v2.16b
    b       .Lct_reduce

.Lct_small:
    add     x9, x0, x2
    add     x10, x1, x2

    cmp     x2, #8
    b.lo    .Lct_lt8
    ldr     x3, [x0]
    ldr     x4, [x1]
    ldur    x5, [x9, #-8]
    ldur    x6, [x10, #-8]
    b       .Lct_scalar

.Lct_lt8:
    cmp     x2, #4
    b.lo    .Lct_lt4
    ldr     w3, [x0]
    ldr     w4, [x1]
    ldur    w5, [x9, #-4]
    ldur    w6, [x10, #-4]
    b       .Lct_scalar

.Lct_lt4:
    cmp     x2, #2
    b.lo    .Lct_lt2
    ldrh    w3, [x0]
    ldrh    w4, [x1]
    ldurh   w5, [x9, #-2]
    ldurh   w6, [x10, #-2]
    b       .Lct_scalar

.Lct_lt2:
    cbz     x2, .Lct_reduce
    ldrb    w3, [x0]
    ldrb    w4, [x1]
    mov     x5, #0
    mov     x6, #0

.Lct_scalar:
    eor     x3, x3, x4
    eor     x5, x5, x6
    orr     x8, x3, x5

.Lct_reduce:
    orr     v0.16b, v0.16b, v1.16b
    umov    x3, v0.d[0]
    umov    x4, v0.d[1]
    orr     x8, x8, x3
    orr     x8, x8, x4
    cmp     x8, #0
    cset    w0, eq
    ret
SFT_END(sft_ct_eq_neon)


#if (SFT_PROP_BTI || SFT_PROP_PAC)
SFT_GNU_PROPERTY_NOTE
#endif

    .section .note.GNU-stack, "", %progbits

#endif
