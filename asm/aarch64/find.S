/*
 * find.S: byte, newline and CRLF search for aarch64 with NEON.
 *
 * const void *sft_find_byte_neon(const void *p, size_t n, int c);
 * const void *sft_find_newline_neon(const void *p, size_t n);
 * const void *sft_find_crlf_neon(const void *p, size_t n);
 *
 * No load ever touches a byte outside [p, p + n): an unaligned first
 * vector at p, aligned vectors in the loop, an unaligned last vector
 * ending exactly at p + n (overlapping bytes known to hold no match),
 * and two overlapping 8- or 4-byte loads or a byte loop for short
 * buffers.  The match mask of a vector is narrowed to 4 bits per byte
 * with shrn #4, and rbit + clz give the first match.  find_crlf scans
 * the n - 1 candidate positions of the '\r' with a second load one byte
 * further for the '\n'.
 */

#if (defined __aarch64__ && defined __AARCH64EL__ && defined __ELF__)

#include "sft_aarch64.h"


/* x0 = p, x1 = n, w2 = c; v0 = c x 16 */

SFT_ENTRY(sft_find_newline_neon)
    mov     w2, #10
    b       .Lfb_body
SFT_END(sft_find_newline_neon)


SFT_ENTRY(sft_find_byte_neon)
.Lfb_body:
    dup     v0.16b, w2

    cmp     x1, #16
    b.lo    .Lfb_small

    ldr     q1, [x0]
    cmeq    v1.16b, v1.16b, v0.16b
    shrn    v1.8b, v1.8h, #4
    fmov    x3, d1
    cbnz    x3, .Lfb_found

    add     x4, x0, x1                  /* end */
    add     x0, x0, #16
    and     x0, x0, #~15                /* aligned, p < x0 <= p + 16 */
    sub     x5, x4, x0                  /* bytes left */

    cmp     x5, #64
    b.lo    .Lfb_16

.Lfb_64:
    ld1     {v1.16b, v2.16b, v3.16b, v4.16b}, [x0]
    cmeq    v1.16b, v1.16b, v0.16b
    cmeq    v2.16b, v2.16b, v0.16b
    cmeq    v3.16b, v3.16b, v0.16b
    cmeq    v4.16b, v4.16b, v0.16b
    orr     v5.16b, v1.16b, v2.16b
    orr     v6.16b, v3.16b, v4.16b
    orr     v5.16b, v5.16b, v6.16b
    umaxp   v5.16b, v5.16b, v5.16b
    fmov    x3, d5
    cbnz    x3, .Lfb_found64
    add     x0, x0, #64
    sub     x5, x5, #64
    cmp     x5, #64
    b.hs    .Lfb_64

.Lfb_16:
    cmp     x5, #16
    b.lo    .Lfb_last

    ldr     q1, [x0]
    cmeq    v1.16b, v1.16b, v0.16b
    shrn    v1.8b, v1.8h, #4
    fmov    x3, d1
    cbnz    x3, .Lfb_found
    add     x0, x0, #16
    sub     x5, x5, #16
    b       .Lfb_16

.Lfb_last:
    cbz     x5, .Lfb_none
    sub     x0, x4, #16
    ldr     q1, [x0]
    cmeq    v1.16b, v1.16b, v0.16b
    shrn    v1.8b, v1.8h, #4
    fmov    x3, d1
    cbnz    x3, .Lfb_found

.Lfb_none:
    mov     x0, #0
    ret

.Lfb_found64:
    shrn    v1.8b, v1.8h, #4
    fmov    x3, d1
    cbnz    x3, .Lfb_found
    add     x0, x0, #16
    shrn    v2.8b, v2.8h, #4
    fmov    x3, d2
    cbnz    x3, .Lfb_found
    add     x0, x0, #16
    shrn    v3.8b, v3.8h, #4
    fmov    x3, d3
    cbnz    x3, .Lfb_found
    add     x0, x0, #16
    shrn    v4.8b, v4.8h, #4
    fmov    x3, d4

.Lfb_found:                             /* 4 bits per byte */
    rbit    x3, x3
    clz     x3, x3
    add     x0, x0, x3, lsr #2
    ret

.Lfb_found8:                            /* 8 bits per byte */
    rbit    x3, x3
    clz     x3, x3
    add     x0, x0, x3, lsr #3
    ret

.Lfb_small:
    cmp     x1, #8
    b.lo    .Lfb_lt8

    ldr     d1, [x0]
    cmeq    v1.8b, v1.8b, v0.8b
    fmov    x3, d1
    cbnz    x3, .Lfb_found8
    add     x0, x0, x1
    sub     x0, x0, #8
    ldr     d1, [x0]
    cmeq    v1.8b, v1.8b, v0.8b
    fmov    x3, d1
    cbnz    x3, .Lfb_found8
    mov     x0, #0
    ret

.Lfb_lt8:
    cmp     x1, #4
    b.lo    .Lfb_lt4

    ldr     s1, [x0]
    cmeq    v1.8b, v1.8b, v0.8b
    fmov    w3, s1
    cbnz    w3, .Lfb_found8
    add     x0, x0, x1
    sub     x0, x0, #4
    ldr     s1, [x0]
    cmeq    v1.8b, v1.8b, v0.8b
    fmov    w3, s1
    cbnz    w3, .Lfb_found8
    mov     x0, #0
    ret

.Lfb_lt4:
    cbz     x1, .Lfb_none
    and     w2, w2, #0xff

.Lfb_byte:
    ldrb    w3, [x0]
    cmp     w3, w2
    b.eq    .Lfb_ret
    add     x0, x0, #1
    subs    x1, x1, #1
    b.ne    .Lfb_byte
    mov     x0, #0

.Lfb_ret:
    ret
SFT_END(sft_find_byte_neon)


/* x0 = p, x1 = n; v0 = '\r' x 16, v7 = '\n' x 16 */

SFT_ENTRY(sft_find_crlf_neon)
    cmp     x1, #2
    b.lo    .Lcl_none
    sub     x1, x1, #1                  /* candidate positions */

    movi    v0.16b, #13
    movi    v7.16b, #10

    cmp     x1, #16
    b.lo    .Lcl_small

    ldr     q1, [x0]
    ldur    q2, [x0, #1]
    cmeq    v1.16b, v1.16b, v0.16b
    cmeq    v2.16b, v2.16b, v7.16b
    and     v1.16b, v1.16b, v2.16b
    shrn    v1.8b, v1.8h, #4
    fmov    x3, d1
    cbnz    x3, .Lcl_found

    add     x4, x0, x1                  /* end of the candidates */
    add     x0, x0, #16
    and     x0, x0, #~15
    sub     x5, x4, x0

    cmp     x5, #64
    b.lo    .Lcl_16

.Lcl_64:
    add     x6, x0, #1
    ld1     {v1.16b, v2.16b, v3.16b, v4.16b}, [x0]
    ld1     {v16.16b, v17.16b, v18.16b, v19.16b}, [x6]
    cmeq    v1.16b, v1.16b, v0.16b
    cmeq    v2.16b, v2.16b, v0.16b
    cmeq    v3.16b, v3.16b, v0.16b
    cmeq    v4.16b, v4.16b, v0.16b
    cmeq    v16.16b, v16.16b, v7.16b
    cmeq    v17.16b, v17.16b, v7.16b
    cmeq    v18.16b, v18.16b, v7.16b
    cmeq    v19.16b, v19.16b, v7.16b
    and     v1.16b, v1.16b, v16.16b
    and     v2.16b, v2.16b, v17.16b
    and     v3.16b, v3.16b, v18.16b
    and     v4.16b, v4.16b, v19.16b
    orr     v5.16b, v1.16b, v2.16b
    orr     v6.16b, v3.16b, v4.16b
    orr     v5.16b, v5.16b, v6.16b
    umaxp   v5.16b, v5.16b, v5.16b
    fmov    x3, d5
    cbnz    x3, .Lcl_found64
    add     x0, x0, #64
    sub     x5, x5, #64
    cmp     x5, #64
    b.hs    .Lcl_64

.Lcl_16:
    cmp     x5, #16
    b.lo    .Lcl_last

    ldr     q1, [x0]
    ldur    q2, [x0, #1]
    cmeq    v1.16b, v1.16b, v0.16b
    cmeq    v2.16b, v2.16b, v7.16b
    and     v1.16b, v1.16b, v2.16b
    shrn    v1.8b, v1.8h, #4
    fmov    x3, d1
    cbnz    x3, .Lcl_found
    add     x0, x0, #16
    sub     x5, x5, #16
    b       .Lcl_16

.Lcl_last:
    cbz     x5, .Lcl_none
    sub     x0, x4, #16
    ldr     q1, [x0]
    ldur    q2, [x0, #1]
    cmeq    v1.16b, v1.16b, v0.16b
    cmeq    v2.16b, v2.16b, v7.16b
    and     v1.16b, v1.16b, v2.16b
    shrn    v1.8b, v1.8h, #4
    fmov    x3, d1
    cbnz    x3, .Lcl_found

.Lcl_none:
    mov     x0, #0
    ret

.Lcl_found64:
    shrn    v1.8b, v1.8h, #4
    fmov    x3, d1
    cbnz    x3, .Lcl_found
    add     x0, x0, #16
    shrn    v2.8b, v2.8h, #4
    fmov    x3, d2
    cbnz    x3, .Lcl_found
    add     x0, x0, #16
    shrn    v3.8b, v3.8h, #4
    fmov    x3, d3
    cbnz    x3, .Lcl_found
    add     x0, x0, #16
    shrn    v4.8b, v4.8h, #4
    fmov    x3, d4

.Lcl_found:
    rbit    x3, x3
    clz     x3, x3
    add     x0, x0, x3, lsr #2
    ret

.Lcl_found8:
    rbit    x3, x3
    clz     x3, x3
    add     x0, x0, x3, lsr #3
    ret

.Lcl_small:
    cmp     x1, #8
    b.lo    .Lcl_lt8

    ldr     d1, [x0]
    ldur    d2, [x0, #1]
    cmeq    v1.8b, v1.8b, v0.8b
    cmeq    v2.8b, v2.8b, v7.8b
    and     v1.8b, v1.8b, v2.8b
    fmov    x3, d1
    cbnz    x3, .Lcl_found8
    add     x0, x0, x1
    sub     x0, x0, #8
    ldr     d1, [x0]
    ldur    d2, [x0, #1]
    cmeq    v1.8b, v1.8b, v0.8b
    cmeq    v2.8b, v2.8b, v7.8b
    and     v1.8b, v1.8b, v2.8b
    fmov    x3, d1
    cbnz    x3, .Lcl_found8
    mov     x0, #0
    ret

.Lcl_lt8:
    cmp     x1, #4
    b.lo    .Lcl_byte

    ldr     s1, [x0]
    ldur    s2, [x0, #1]
    cmeq    v1.8b, v1.8b, v0.8b
    cmeq    v2.8b, v2.8b, v7.8b
    and     v1.8b, v1.8b, v2.8b
    fmov    w3, s1
    cbnz    w3, .Lcl_found8
    add     x0, x0, x1
    sub     x0, x0, #4
    ldr     s1, [x0]
    ldur    s2, [x0, #1]
    cmeq    v1.8b, v1.8b, v0.8b
    cmeq    v2.8b, v2.8b, v7.8b
    and     v1.8b, v1.8b, v2.8b
    fmov    w3, s1
    cbnz    w3, .Lcl_found8
    mov     x0, #0
    ret

.Lcl_byte:                              /* 1 .. 3 candidates */
    ldrb    w3, [x0]
    cmp     w3, #13
    b.ne    .Lcl_next
    ldrb    w3, [x0, #1]
    cmp     w3, #10
    b.eq    .Lcl_ret
.Lcl_next:
    add     x0, x0, #1
    subs    x1, x1, #1
    b.ne    .Lcl_byte
    mov     x0, #0

.Lcl_ret:
    ret
SFT_END(sft_find_crlf_neon)


#if (SFT_PROP_BTI || SFT_PROP_PAC)
SFT_GNU_PROPERTY_NOTE
#endif

    .section .note.GNU-stack, "", %progbits

#endif
