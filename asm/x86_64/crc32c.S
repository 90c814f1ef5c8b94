/*
 * crc32c.S: CRC-32C (Castagnoli) for x86_64 with the SSE4.2 crc32
 * instruction; long buffers run three interleaved streams whose CRCs are
 * combined with pclmulqdq.  Needs SSE4.2 and PCLMULQDQ.
 *
 * uint32_t sft_crc32c_sse42(uint32_t crc, const void *p, size_t n);
 *
 * Combining: with r0, r1, r2 the raw CRC registers of three consecutive
 * blocks of L bytes (r1 and r2 started from 0), the register after all
 * three is  r0 * x^(16L) + r1 * x^(8L) + r2  (mod P).  A carry-less
 * product of a 32-bit reflected value by K = x^(8L-33) mod P, fed to
 * crc32q with a zero register, yields value * x^(8L) mod P; the two
 * products are XORed first so that a single crc32q reduces both.
 */

#if (defined __x86_64__ && defined __ELF__)

#include "sft_x86_64.h"


#define SFT_CRC_BIG     1024            /* bytes per stream, long loop */
#define SFT_CRC_MIN3    192             /* shortest 3-stream round: 3*64 */


/* edi = crc, rsi = p, rdx = n */

SFT_ENTRY(sft_crc32c_sse42)
    movl    %edi, %eax
    notl    %eax

    cmpq    $SFT_CRC_MIN3, %rdx
    jb      .Lcrc_tail

    /* align p to 8 bytes */

    testq   $7, %rsi
    jz      .Lcrc_aligned

.Lcrc_align:
    crc32b  (%rsi), %eax
    incq    %rsi
    decq    %rdx
    testq   $7, %rsi
    jnz     .Lcrc_align

.Lcrc_aligned:
    leaq    .Lcrc_k(%rip), %r11

    cmpq    $(3 * SFT_CRC_BIG), %rdx
    jb      .Lcrc_var

    movdqa  (SFT_CRC_BIG / 8 - 1) * 16(%r11), %xmm2

.Lcrc_big:
    xorl    %r8d, %r8d
    xorl    %r9d, %r9d
    movl    $(SFT_CRC_BIG / 8), %ecx

.Lcrc_big_loop:
    crc32q  (%rsi), %rax
    crc32q  SFT_CRC_BIG(%rsi), %r8
    crc32q  2 * SFT_CRC_BIG(%rsi), %r9
    addq    $8, %rsi
    decl    %ecx
    jnz     .Lcrc_big_loop

    addq    $(2 * SFT_CRC_BIG), %rsi
    subq    $(3 * SFT_CRC_BIG), %rdx

    movq    %rax, %xmm0
    movq    %r8, %xmm1
    pclmulqdq $0x00, %xmm2, %xmm0       /* r0 * K(2L) */
    pclmulqdq $0x10, %xmm2, %xmm1       /* r1 * K(L) */
    pxor    %xmm1, %xmm0
    movq    %xmm0, %r10
    xorl    %eax, %eax
    crc32q  %r10, %rax
    xorl    %r9d, %eax

    cmpq    $(3 * SFT_CRC_BIG), %rdx
    jae     .Lcrc_big

.Lcrc_var:
    cmpq    $SFT_CRC_MIN3, %rdx
    jb      .Lcrc_tail

    /* one round of 3 streams of L = 8 * j bytes, j = n / 24 (n < 3072) */

    imull   $2731, %edx, %ecx
    shrl    $16, %ecx                   /* j */
    leaq    -1(%rcx), %r10
    shlq    $4, %r10
    movdqa  (%r11, %r10), %xmm2
    leaq    (, %rcx, 8), %r10           /* L */

    xorl    %r8d, %r8d
    xorl    %r9d, %r9d

.Lcrc_var_loop:
    crc32q  (%rsi), %rax
    crc32q  (%rsi, %r10), %r8
    crc32q  (%rsi, %r10, 2), %r9
    addq    $8, %rsi
    decl    %ecx
    jnz     .Lcrc_var_loop

    leaq    (%rsi, %r10, 2), %rsi
    subq    %r10, %rdx
    subq    %r10, %rdx
    subq    %r10, %rdx

    movq    %rax, %xmm0
    movq    %r8, %xmm1
    pclmulqdq $0x00, %xmm2, %xmm0
    pclmulqdq $0x10, %xmm2, %xmm1
    pxor    %xmm1, %xmm0
    movq    %xmm0, %r10
    xorl    %eax, %eax
    crc32q  %r10, %rax
    xorl    %r9d, %eax

.Lcrc_tail:
    cmpq    $8, %rdx
    jb      .Lcrc_tail4

.Lcrc_tail8:
    crc32q  (%rsi), %rax
    addq    $8, %rsi
    subq    $8, %rdx
    cmpq    $8, %rdx
    jae     .Lcrc_tail8

.Lcrc_tail4:
    testb   $4, %dl
    jz      .Lcrc_tail2
    crc32l  (%rsi), %eax
    addq    $4, %rsi

.Lcrc_tail2:
    testb   $2, %dl
    jz      .Lcrc_tail1
    crc32w  (%rsi), %eax
    addq    $2, %rsi

.Lcrc_tail1:
    testb   $1, %dl
    jz      .Lcrc_done
    crc32b  (%rsi), %eax

.Lcrc_done:
    notl    %eax
    ret
SFT_END(sft_crc32c_sse42)


/*
 * For L = 8 * j bytes, j = 1 .. 128, the pair { x^(16L-33), x^(8L-33) }
 * mod P in the reflected 32-bit representation (x^0 is 0x80000000).
 */

    .section .rodata
    .p2align 4
.Lcrc_k:
#include "../sft_crc32c_fold.h"


    .section .note.GNU-stack, "", @progbits

#endif
