/*
 * adler32.S: zlib-compatible Adler-32 for x86_64, SSSE3 and AVX2
 * versions.
 *
 * uint32_t sft_adler32_ssse3(uint32_t adler, const void *p, size_t n);
 * uint32_t sft_adler32_avx2(uint32_t adler, const void *p, size_t n);
 *
 * The buffer is cut into chunks of at most 5536 bytes (173 blocks of 32)
 * so that no 32-bit vector lane can overflow.  Per block of 32 bytes:
 *     ps += s1v                           (s1 before the block)
 *     s1v += psadbw(block, 0)             (sum of the bytes)
 *     s2v += pmaddwd(pmaddubsw(block, {32, 31, .., 1}), {1, ..})
 * and per chunk of len bytes, in 64-bit scalars:
 *     s2 += s1 * len + 32 * sum(ps) + sum(s2v);  s1 += sum(s1v)
 * then both are reduced mod 65521.  The last n % 32 bytes are done one
 * at a time.
 */

#if (defined __x86_64__ && defined __ELF__)

#include "sft_x86_64.h"


#define SFT_ADLER_CHUNK  5536


/*
 * r = r mod 65521 for r < 2^40, using 65536 = 15 (mod 65521);
 * t is clobbered
 */

.macro SFT_ADLER_MOD r, t
    movq    \r, \t
    shrq    $16, \t
    andl    $0xffff, \r\()d
    imulq   $15, \t, \t
    addq    \t, \r
    movq    \r, \t
    shrq    $16, \t
    andl    $0xffff, \r\()d
    imulq   $15, \t, \t
    addq    \t, \r
    leaq    -65521(\r), \t
    cmpq    $65521, \r
    cmovaeq \t, \r
.endm


/*
 * chunk setup: rcx = min(n & ~31, SFT_ADLER_CHUNK), n -= rcx,
 * s2 += s1 * rcx, rcx /= 32
 */

.macro SFT_ADLER_CHUNK_START
    movq    %rdx, %rcx
    andq    $-32, %rcx
    movl    $SFT_ADLER_CHUNK, %eax
    cmpq    %rax, %rcx
    cmovaq  %rax, %rcx
    subq    %rcx, %rdx
    movq    %r8, %rax
    imulq   %rcx, %rax
    addq    %rax, %r9
    shrq    $5, %rcx
.endm


/* the last n (< 32) bytes, final reduction, result in eax */

.macro SFT_ADLER_TAIL
    testq   %rdx, %rdx
    jz      2f
1:
    movzbl  (%rsi), %eax
    addq    %rax, %r8
    addq    %r8, %r9
    incq    %rsi
    decq    %rdx
    jnz     1b

    SFT_ADLER_MOD %r8, %rax
    SFT_ADLER_MOD %r9, %rax
2:
    movl    %r9d, %eax
    shll    $16, %eax
    orl     %r8d, %eax
.endm


/* edi = adler, rsi = p, rdx = n; r8 = s1, r9 = s2 */

SFT_ENTRY(sft_adler32_ssse3)
    movl    %edi, %r8d
    andl    $0xffff, %r8d
    movl    %edi, %r9d
    shrl    $16, %r9d

    cmpq    $32, %rdx
    jb      .Lssse3_tail

    movdqa  .Ladler_taps(%rip), %xmm6           /* 32 .. 17 */
    movdqa  .Ladler_taps + 16(%rip), %xmm7      /* 16 .. 1 */
    movdqa  .Ladler_ones(%rip), %xmm8
    pxor    %xmm9, %xmm9

.Lssse3_chunk:
    SFT_ADLER_CHUNK_START

    pxor    %xmm0, %xmm0                        /* s1v */
    pxor    %xmm1, %xmm1                        /* s2v */
    pxor    %xmm2, %xmm2                        /* ps */

.Lssse3_loop:
    movdqu  (%rsi), %xmm3
    movdqu  16(%rsi), %xmm4
    paddq   %xmm0, %xmm2
    movdqa  %xmm3, %xmm10
    movdqa  %xmm4, %xmm11
    psadbw  %xmm9, %xmm10
    psadbw  %xmm9, %xmm11
    paddq   %xmm10, %xmm0
    paddq   %xmm11, %xmm0
    pmaddubsw %xmm6, %xmm3
    pmaddubsw %xmm7, %xmm4
    pmaddwd %xmm8, %xmm3
    pmaddwd %xmm8, %xmm4
    paddd   %xmm3, %xmm1
    paddd   %xmm4, %xmm1
    addq    $32, %rsi
    decq    %rcx
    jnz     .Lssse3_loop

    /* s1 += sum(s1v) */

    pshufd  $0x4e, %xmm0, %xmm3
    paddq   %xmm3, %xmm0
    movq    %xmm0, %rax
    addq    %rax, %r8

    /* s2 += 32 * sum(ps) + sum(s2v) */

    pshufd  $0x4e, %xmm2, %xmm3
    paddq   %xmm3, %xmm2
    movq    %xmm2, %rax
    shlq    $5, %rax
    addq    %rax, %r9

    pshufd  $0x4e, %xmm1, %xmm3
    paddd   %xmm3, %xmm1
    pshufd  $0xb1, %xmm1, %xmm3
    paddd   %xmm3, %xmm1
    movd    %xmm1, %eax
    addq    %rax, %r9

    SFT_ADLER_MOD %r8, %rax
    SFT_ADLER_MOD %r9, %rax

    cmpq    $32, %rdx
    jae     .Lssse3_chunk

.Lssse3_tail:
    SFT_ADLER_TAIL
    ret
SFT_END(sft_adler32_ssse3)


SFT_ENTRY(sft_adler32_avx2)
    movl    %edi, %r8d
    andl    $0xffff, %r8d
    movl    %edi, %r9d
    shrl    $16, %r9d

    cmpq    $32, %rdx
    jb      .Lavx2_tail

    vmovdqa .Ladler_taps(%rip), %ymm6           /* 32 .. 1 */
    vpcmpeqw %ymm7, %ymm7, %ymm7
    vpsrlw  $15, %ymm7, %ymm7                   /* 16 x 1 */
    vpxor   %xmm5, %xmm5, %xmm5

.Lavx2_chunk:
    SFT_ADLER_CHUNK_START

    vpxor   %xmm0, %xmm0, %xmm0                 /* s1v */
    vpxor   %xmm1, %xmm1, %xmm1                 /* s2v */
    vpxor   %xmm2, %xmm2, %xmm2                 /* ps */

.Lavx2_loop:
    vmovdqu (%rsi), %ymm3
    vpaddq  %ymm0, %ymm2, %ymm2
    vpsadbw %ymm5, %ymm3, %ymm4
    vpaddq  %ymm4, %ymm0, %ymm0
    vpmaddubsw %ymm6, %ymm3, %ymm3
    vpmaddwd %ymm7, %ymm3, %ymm3
    vpaddd  %ymm3, %ymm1, %ymm1
    addq    $32, %rsi
    decq    %rcx
    jnz     .Lavx2_loop

    vextracti128 $1, %ymm0, %xmm3
    vpaddq  %xmm3, %xmm0, %xmm0
    vpshufd $0x4e, %xmm0, %xmm3
    vpaddq  %xmm3, %xmm0, %xmm0
    vmovq   %xmm0, %rax
    addq    %rax, %r8

    vextracti128 $1, %ymm2, %xmm3
    vpaddq  %xmm3, %xmm2, %xmm2
    vpshufd $0x4e, %xmm2, %xmm3
    vpaddq  %xmm3, %xmm2, %xmm2
    vmovq   %xmm2, %rax
    shlq    $5, %rax
    addq    %rax, %r9

    vextracti128 $1, %ymm1, %xmm3
    vpaddd  %xmm3, %xmm1, %xmm1
    vpshufd $0x4e, %xmm1, %xmm3
    vpaddd  %xmm3, %xmm1, %xmm1
    vpshufd $0xb1, %xmm1, %xmm3
    vpaddd  %xmm3, %xmm1, %xmm1
    vmovd   %xmm1, %eax
    addq    %rax, %r9

    SFT_ADLER_MOD %r8, %rax
    SFT_ADLER_MOD %r9, %rax

    cmpq    $32, %rdx
    jae     .Lavx2_chunk

    vzeroupper

.Lavx2_tail:
    SFT_ADLER_TAIL
    ret
SFT_END(sft_adler32_avx2)


    .section .rodata
    .p2align 5
.Ladler_taps:
    .byte   32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17
    .byte   16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1
.Ladler_ones:
    .word   1, 1, 1, 1, 1, 1, 1, 1


    .section .note.GNU-stack, "", @progbits

#endif
