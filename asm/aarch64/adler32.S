/*
 * adler32.S: zlib-compatible Adler-32 for aarch64 with NEON.
 *
 * uint32_t sft_adler32_neon(uint32_t adler, const void *p, size_t n);
 *
 * Chunks of at most 5536 bytes (173 blocks of 32).  Per block of 32
 * bytes:  ps += s1v;  s1v += pairwise sums of the bytes (uaddlp /
 * uadalp);  col[0..31] += the bytes (16-bit column sums, uaddw).  Per
 * chunk:  s2v = 32 * ps + sum(col[i] * (32 - i))  (umlal),  then in
 * 64-bit scalars  s2 += s1 * len + sum(s2v),  s1 += sum(s1v),  and
 * both are reduced mod 65521.  The last n % 32 bytes are done one at a
 * time.  Only v0-v7 and v16-v31 are used (v8-v15 are callee-saved).
 */

#if (defined __aarch64__ && defined __AARCH64EL__ && defined __ELF__)

#include "sft_aarch64.h"


#define SFT_ADLER_CHUNK  5536


/* r = r mod 65521 (x15) for r < 2^40, using 65536 = 15 (mod 65521) */

.macro SFT_ADLER_MOD r, t
    lsr     \t, \r, #16
    and     \r, \r, #0xffff
    add     \r, \r, \t, lsl #4
    sub     \r, \r, \t
    lsr     \t, \r, #16
    and     \r, \r, #0xffff
    add     \r, \r, \t, lsl #4
    sub     \r, \r, \t
    subs    \t, \r, x15
    csel    \r, \t, \r, hs
.endm


/* w0 = adler, x1 = p, x2 = n; x8 = s1, x9 = s2 */

SFT_ENTRY(sft_adler32_neon)
    and     w8, w0, #0xffff
    lsr     w9, w0, #16
    mov     x15, #65521

    cmp     x2, #32
    b.lo    .Ladler_tail

    adrp    x12, .Ladler_taps
    add     x12, x12, :lo12:.Ladler_taps
    ld1     {v24.8h, v25.8h, v26.8h, v27.8h}, [x12]

.Ladler_chunk:
    and     x10, x2, #~31
    mov     x11, #SFT_ADLER_CHUNK
    cmp     x10, x11
    csel    x10, x10, x11, lo
    sub     x2, x2, x10
    madd    x9, x8, x10, x9             /* s2 += s1 * len */
    lsr     x10, x10, #5

    movi    v16.4s, #0                  /* ps */
    movi    v17.4s, #0                  /* s1v */
    movi    v18.8h, #0                  /* col[0..7] */
    movi    v19.8h, #0                  /* col[8..15] */
    movi    v20.8h, #0                  /* col[16..23] */
    movi    v21.8h, #0                  /* col[24..31] */

.Ladler_loop:
    ld1     {v0.16b, v1.16b}, [x1], #32
    add     v16.4s, v16.4s, v17.4s
    uaddlp  v2.8h, v0.16b
    uadalp  v2.8h, v1.16b
    uadalp  v17.4s, v2.8h
    uaddw   v18.8h, v18.8h, v0.8b
    uaddw2  v19.8h, v19.8h, v0.16b
    uaddw   v20.8h, v20.8h, v1.8b
    uaddw2  v21.8h, v21.8h, v1.16b
    subs    x10, x10, #1
    b.ne    .Ladler_loop

    shl     v16.4s, v16.4s, #5
    umlal   v16.4s, v18.4h, v24.4h
    umlal2  v16.4s, v18.8h, v24.8h
    umlal   v16.4s, v19.4h, v25.4h
    umlal2  v16.4s, v19.8h, v25.8h
    umlal   v16.4s, v20.4h, v26.4h
    umlal2  v16.4s, v20.8h, v26.8h
    umlal   v16.4s, v21.4h, v27.4h
    umlal2  v16.4s, v21.8h, v27.8h

    addv    s16, v16.4s
    addv    s17, v17.4s
    fmov    w3, s16
    fmov    w4, s17
    add     x9, x9, x3
    add     x8, x8, x4

    SFT_ADLER_MOD x8, x3
    SFT_ADLER_MOD x9, x3

    cmp     x2, #32
    b.hs    .Ladler_chunk

.Ladler_tail:
    cbz     x2, .Ladler_done

.Ladler_byte:
    ldrb    w3, [x1], #1
    add     x8, x8, x3
    add     x9, x9, x8
    subs    x2, x2, #1
    b.ne    .Ladler_byte

    SFT_ADLER_MOD x8, x3
    SFT_ADLER_MOD x9, x3

.Ladler_done:
    orr     w0, w8, w9, lsl #16
    ret
SFT_END(sft_adler32_neon)


    .section .rodata
    .p2align 4
.Ladler_taps:
    .short  32, 31, 30, 29, 28, 27, 26, 25
    .short  24, 23, 22, 21, 20, 19, 18, 17
    .short  16, 15, 14, 13, 12, 11, 10, 9
    .short  8, 7, 6, 5, 4, 3, 2, 1


#if (SFT_PROP_BTI || SFT_PROP_PAC)
SFT_GNU_PROPERTY_NOTE
#endif

    .section .note.GNU-stack, "", %progbits

#endif
