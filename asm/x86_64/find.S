/*
 * find.S: byte, newline and CRLF search for x86_64, SSE2 and AVX2
 * versions.
 *
 * const void *sft_find_byte_sse2(const void *p, size_t n, int c);
 * const void *sft_find_newline_sse2(const void *p, size_t n);
 * const void *sft_find_crlf_sse2(const void *p, size_t n);
 * (and the same with _avx2)
 *
 * No load ever touches a byte outside [p, p + n): the first vector is
 * an unaligned load at p, the loop runs on aligned vectors, the last
 * vector is an unaligned load ending exactly at p + n (overlapping bytes
 * already known to hold no match), and buffers shorter than a vector
 * use two overlapping 8- or 4-byte loads or a byte loop.  find_crlf
 * scans the n - 1 candidate positions of the '\r' with a second load
 * one byte further for the '\n'.
 */

#if (defined __x86_64__ && defined __ELF__)

#include "sft_x86_64.h"


/* rdi = p, rsi = n, edx = c */

SFT_ENTRY(sft_find_newline_sse2)
    movl    $10, %edx
    jmp     .Lfb_sse2_body
SFT_END(sft_find_newline_sse2)


SFT_ENTRY(sft_find_byte_sse2)
.Lfb_sse2_body:
    movd    %edx, %xmm0
    punpcklbw %xmm0, %xmm0
    punpcklwd %xmm0, %xmm0
    pshufd  $0, %xmm0, %xmm0

    cmpq    $16, %rsi
    jb      .Lfb_sse2_small

    movdqu  (%rdi), %xmm1
    pcmpeqb %xmm0, %xmm1
    pmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lfb_sse2_found

    leaq    (%rdi, %rsi), %rsi          /* end */
    addq    $16, %rdi
    andq    $-16, %rdi                  /* aligned, p < rdi <= p + 16 */
    movq    %rsi, %rcx
    subq    %rdi, %rcx                  /* bytes left */

    cmpq    $64, %rcx
    jb      .Lfb_sse2_16

.Lfb_sse2_64:
    movdqa  (%rdi), %xmm1
    movdqa  16(%rdi), %xmm2
    movdqa  32(%rdi), %xmm3
    movdqa  48(%rdi), %xmm4
    pcmpeqb %xmm0, %xmm1
    pcmpeqb %xmm0, %xmm2
    pcmpeqb %xmm0, %xmm3
    pcmpeqb %xmm0, %xmm4
    movdqa  %xmm1, %xmm5
    movdqa  %xmm3, %xmm6
    por     %xmm2, %xmm5
    por     %xmm4, %xmm6
    por     %xmm6, %xmm5
    pmovmskb %xmm5, %eax
    testl   %eax, %eax
    jnz     .Lfb_sse2_found64
    addq    $64, %rdi
    subq    $64, %rcx
    cmpq    $64, %rcx
    jae     .Lfb_sse2_64

.Lfb_sse2_16:
    cmpq    $16, %rcx
    jb      .Lfb_sse2_last

    movdqa  (%rdi), %xmm1
    pcmpeqb %xmm0, %xmm1
    pmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lfb_sse2_found
    addq    $16, %rdi
    subq    $16, %rcx
    jmp     .Lfb_sse2_16

.Lfb_sse2_last:
    testq   %rcx, %rcx
    jz      .Lfb_sse2_none
    leaq    -16(%rsi), %rdi
    movdqu  (%rdi), %xmm1
    pcmpeqb %xmm0, %xmm1
    pmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lfb_sse2_found

.Lfb_sse2_none:
    xorl    %eax, %eax
    ret

.Lfb_sse2_found64:
    pmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lfb_sse2_found
    addq    $16, %rdi
    pmovmskb %xmm2, %eax
    testl   %eax, %eax
    jnz     .Lfb_sse2_found
    addq    $16, %rdi
    pmovmskb %xmm3, %eax
    testl   %eax, %eax
    jnz     .Lfb_sse2_found
    addq    $16, %rdi
    pmovmskb %xmm4, %eax

.Lfb_sse2_found:
    bsfl    %eax, %eax
    addq    %rdi, %rax
    ret

.Lfb_sse2_small:
    cmpq    $8, %rsi
    jb      .Lfb_sse2_lt8

    movq    (%rdi), %xmm1
    pcmpeqb %xmm0, %xmm1
    pmovmskb %xmm1, %eax
    andl    $0xff, %eax
    jnz     .Lfb_sse2_found
    leaq    -8(%rdi, %rsi), %rdi
    movq    (%rdi), %xmm1
    pcmpeqb %xmm0, %xmm1
    pmovmskb %xmm1, %eax
    andl    $0xff, %eax
    jnz     .Lfb_sse2_found
    ret

.Lfb_sse2_lt8:
    cmpq    $4, %rsi
    jb      .Lfb_sse2_lt4

    movd    (%rdi), %xmm1
    pcmpeqb %xmm0, %xmm1
    pmovmskb %xmm1, %eax
    andl    $0xf, %eax
    jnz     .Lfb_sse2_found
    leaq    -4(%rdi, %rsi), %rdi
    movd    (%rdi), %xmm1
    pcmpeqb %xmm0, %xmm1
    pmovmskb %xmm1, %eax
    andl    $0xf, %eax
    jnz     .Lfb_sse2_found
    ret

.Lfb_sse2_lt4:
    xorl    %eax, %eax
    testq   %rsi, %rsi
    jz      .Lfb_sse2_ret

.Lfb_sse2_byte:
    cmpb    %dl, (%rdi)
    je      .Lfb_sse2_hit
    incq    %rdi
    decq    %rsi
    jnz     .Lfb_sse2_byte
    ret

.Lfb_sse2_hit:
    movq    %rdi, %rax

.Lfb_sse2_ret:
    ret
SFT_END(sft_find_byte_sse2)


/* rdi = p, rsi = n; xmm0 = '\r' x 16, xmm7 = '\n' x 16 */

SFT_ENTRY(sft_find_crlf_sse2)
    xorl    %eax, %eax
    cmpq    $2, %rsi
    jb      .Lcl_sse2_ret
    decq    %rsi                        /* candidate positions */

    movl    $0x0d0d0d0d, %eax
    movd    %eax, %xmm0
    pshufd  $0, %xmm0, %xmm0
    movl    $0x0a0a0a0a, %eax
    movd    %eax, %xmm7
    pshufd  $0, %xmm7, %xmm7

    cmpq    $16, %rsi
    jb      .Lcl_sse2_small

    movdqu  (%rdi), %xmm1
    movdqu  1(%rdi), %xmm2
    pcmpeqb %xmm0, %xmm1
    pcmpeqb %xmm7, %xmm2
    pand    %xmm2, %xmm1
    pmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lcl_sse2_found

    leaq    (%rdi, %rsi), %rsi          /* end of the candidates */
    addq    $16, %rdi
    andq    $-16, %rdi
    movq    %rsi, %rcx
    subq    %rdi, %rcx

    cmpq    $64, %rcx
    jb      .Lcl_sse2_16

.Lcl_sse2_64:
    movdqa  (%rdi), %xmm1
    movdqa  16(%rdi), %xmm2
    movdqa  32(%rdi), %xmm3
    movdqa  48(%rdi), %xmm4
    movdqu  1(%rdi), %xmm8
    movdqu  17(%rdi), %xmm9
    movdqu  33(%rdi), %xmm10
    movdqu  49(%rdi), %xmm11
    pcmpeqb %xmm0, %xmm1
    pcmpeqb %xmm0, %xmm2
    pcmpeqb %xmm0, %xmm3
    pcmpeqb %xmm0, %xmm4
    pcmpeqb %xmm7, %xmm8
    pcmpeqb %xmm7, %xmm9
    pcmpeqb %xmm7, %xmm10
    pcmpeqb %xmm7, %xmm11
    pand    %xmm8, %xmm1
    pand    %xmm9, %xmm2
    pand    %xmm10, %xmm3
    pand    %xmm11, %xmm4
    movdqa  %xmm1, %xmm5
    movdqa  %xmm3, %xmm6
    por     %xmm2, %xmm5
    por     %xmm4, %xmm6
    por     %xmm6, %xmm5
    pmovmskb %xmm5, %eax
    testl   %eax, %eax
    jnz     .Lcl_sse2_found64
    addq    $64, %rdi
    subq    $64, %rcx
    cmpq    $64, %rcx
    jae     .Lcl_sse2_64

.Lcl_sse2_16:
    cmpq    $16, %rcx
    jb      .Lcl_sse2_last

    movdqa  (%rdi), %xmm1
    movdqu  1(%rdi), %xmm2
    pcmpeqb %xmm0, %xmm1
    pcmpeqb %xmm7, %xmm2
    pand    %xmm2, %xmm1
    pmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lcl_sse2_found
    addq    $16, %rdi
    subq    $16, %rcx
    jmp     .Lcl_sse2_16

.Lcl_sse2_last:
    xorl    %eax, %eax
    testq   %rcx, %rcx
    jz      .Lcl_sse2_ret
    leaq    -16(%rsi), %rdi
    movdqu  (%rdi), %xmm1
    movdqu  1(%rdi), %xmm2
    pcmpeqb %xmm0, %xmm1
    pcmpeqb %xmm7, %xmm2
    pand    %xmm2, %xmm1
    pmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lcl_sse2_found
    ret

.Lcl_sse2_found64:
    pmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lcl_sse2_found
    addq    $16, %rdi
    pmovmskb %xmm2, %eax
    testl   %eax, %eax
    jnz     .Lcl_sse2_found
    addq    $16, %rdi
    pmovmskb %xmm3, %eax
    testl   %eax, %eax
    jnz     .Lcl_sse2_found
    addq    $16, %rdi
    pmovmskb %xmm4, %eax

.Lcl_sse2_found:
    bsfl    %eax, %eax
    addq    %rdi, %rax
    ret

.Lcl_sse2_small:
    cmpq    $8, %rsi
    jb      .Lcl_sse2_lt8

    movq    (%rdi), %xmm1
    movq    1(%rdi), %xmm2
    pcmpeqb %xmm0, %xmm1
    pcmpeqb %xmm7, %xmm2
    pand    %xmm2, %xmm1
    pmovmskb %xmm1, %eax
    andl    $0xff, %eax
    jnz     .Lcl_sse2_found
    leaq    -8(%rdi, %rsi), %rdi
    movq    (%rdi), %xmm1
    movq    1(%rdi), %xmm2
    pcmpeqb %xmm0, %xmm1
    pcmpeqb %xmm7, %xmm2
    pand    %xmm2, %xmm1
    pmovmskb %xmm1, %eax
    andl    $0xff, %eax
    jnz     .Lcl_sse2_found
    ret

.Lcl_sse2_lt8:
    cmpq    $4, %rsi
    jb      .Lcl_sse2_byte

    movd    (%rdi), %xmm1
    movd    1(%rdi), %xmm2
    pcmpeqb %xmm0, %xmm1
    pcmpeqb %xmm7, %xmm2
    pand    %xmm2, %xmm1
    pmovmskb %xmm1, %eax
    andl    $0xf, %eax
    jnz     .Lcl_sse2_found
    leaq    -4(%rdi, %rsi), %rdi
    movd    (%rdi), %xmm1
    movd    1(%rdi), %xmm2
    pcmpeqb %xmm0, %xmm1
    pcmpeqb %xmm7, %xmm2
    pand    %xmm2, %xmm1
    pmovmskb %xmm1, %eax
    andl    $0xf, %eax
    jnz     .Lcl_sse2_found
    ret

.Lcl_sse2_byte:                         /* 1 .. 3 candidates */
    xorl    %eax, %eax
    cmpb    $13, (%rdi)
    jne     .Lcl_sse2_next
    cmpb    $10, 1(%rdi)
    je      .Lcl_sse2_hit
.Lcl_sse2_next:
    incq    %rdi
    decq    %rsi
    jnz     .Lcl_sse2_byte
    ret

.Lcl_sse2_hit:
    movq    %rdi, %rax

.Lcl_sse2_ret:
    ret
SFT_END(sft_find_crlf_sse2)


/* AVX2: rdi = p, rsi = n, edx = c */

SFT_ENTRY(sft_find_newline_avx2)
    movl    $10, %edx
    jmp     .Lfb_avx2_body
SFT_END(sft_find_newline_avx2)


SFT_ENTRY(sft_find_byte_avx2)
.Lfb_avx2_body:
    vmovd   %edx, %xmm0
    vpbroadcastb %xmm0, %ymm0

    cmpq    $32, %rsi
    jb      .Lfb_avx2_small

    vpcmpeqb (%rdi), %ymm0, %ymm1
    vpmovmskb %ymm1, %eax
    testl   %eax, %eax
    jnz     .Lfb_avx2_found

    leaq    (%rdi, %rsi), %rsi
    addq    $32, %rdi
    andq    $-32, %rdi
    movq    %rsi, %rcx
    subq    %rdi, %rcx

    cmpq    $128, %rcx
    jb      .Lfb_avx2_32

.Lfb_avx2_128:
    vpcmpeqb (%rdi), %ymm0, %ymm1
    vpcmpeqb 32(%rdi), %ymm0, %ymm2
    vpcmpeqb 64(%rdi), %ymm0, %ymm3
    vpcmpeqb 96(%rdi), %ymm0, %ymm4
    vpor    %ymm1, %ymm2, %ymm5
    vpor    %ymm3, %ymm4, %ymm6
    vpor    %ymm5, %ymm6, %ymm6
    vpmovmskb %ymm6, %eax
    testl   %eax, %eax
    jnz     .Lfb_avx2_found128
    subq    $-128, %rdi
    addq    $-128, %rcx
    cmpq    $128, %rcx
    jae     .Lfb_avx2_128

.Lfb_avx2_32:
    cmpq    $32, %rcx
    jb      .Lfb_avx2_last

    vpcmpeqb (%rdi), %ymm0, %ymm1
    vpmovmskb %ymm1, %eax
    testl   %eax, %eax
    jnz     .Lfb_avx2_found
    addq    $32, %rdi
    subq    $32, %rcx
    jmp     .Lfb_avx2_32

.Lfb_avx2_last:
    xorl    %eax, %eax
    testq   %rcx, %rcx
    jz      .Lfb_avx2_ret
    leaq    -32(%rsi), %rdi
    vpcmpeqb (%rdi), %ymm0, %ymm1
    vpmovmskb %ymm1, %eax
    testl   %eax, %eax
    jnz     .Lfb_avx2_found
    vzeroupper
    ret

.Lfb_avx2_found128:
    vpmovmskb %ymm1, %eax
    testl   %eax, %eax
    jnz     .Lfb_avx2_found
    addq    $32, %rdi
    vpmovmskb %ymm2, %eax
    testl   %eax, %eax
    jnz     .Lfb_avx2_found
    addq    $32, %rdi
    vpmovmskb %ymm3, %eax
    testl   %eax, %eax
    jnz     .Lfb_avx2_found
    addq    $32, %rdi
    vpmovmskb %ymm4, %eax

.Lfb_avx2_found:
    bsfl    %eax, %eax
    addq    %rdi, %rax

.Lfb_avx2_ret:
    vzeroupper
    ret

.Lfb_avx2_small:
    cmpq    $16, %rsi
    jb      .Lfb_avx2_lt16

    vpcmpeqb (%rdi), %xmm0, %xmm1
    vpmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lfb_avx2_found
    leaq    -16(%rdi, %rsi), %rdi
    vpcmpeqb (%rdi), %xmm0, %xmm1
    vpmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lfb_avx2_found
    vzeroupper
    ret

.Lfb_avx2_lt16:
    cmpq    $8, %rsi
    jb      .Lfb_avx2_lt8

    vmovq   (%rdi), %xmm1
    vpcmpeqb %xmm0, %xmm1, %xmm1
    vpmovmskb %xmm1, %eax
    andl    $0xff, %eax
    jnz     .Lfb_avx2_found
    leaq    -8(%rdi, %rsi), %rdi
    vmovq   (%rdi), %xmm1
    vpcmpeqb %xmm0, %xmm1, %xmm1
    vpmovmskb %xmm1, %eax
    andl    $0xff, %eax
    jnz     .Lfb_avx2_found
    vzeroupper
    ret

.Lfb_avx2_lt8:
    cmpq    $4, %rsi
    jb      .Lfb_avx2_lt4

    vmovd   (%rdi), %xmm1
    vpcmpeqb %xmm0, %xmm1, %xmm1
    vpmovmskb %xmm1, %eax
    andl    $0xf, %eax
    jnz     .Lfb_avx2_found
    leaq    -4(%rdi, %rsi), %rdi
    vmovd   (%rdi), %xmm1
    vpcmpeqb %xmm0, %xmm1, %xmm1
    vpmovmskb %xmm1, %eax
    andl    $0xf, %eax
    jnz     .Lfb_avx2_found
    vzeroupper
    ret

.Lfb_avx2_lt4:
    vzeroupper
    xorl    %eax, %eax
    testq   %rsi, %rsi
    jz      .Lfb_avx2_byte_ret

.Lfb_avx2_byte:
    cmpb    %dl, (%rdi)
    je      .Lfb_avx2_hit
    incq    %rdi
    decq    %rsi
    jnz     .Lfb_avx2_byte
    ret

.Lfb_avx2_hit:
    movq    %rdi, %rax

.Lfb_avx2_byte_ret:
    ret
SFT_END(sft_find_byte_avx2)


/* rdi = p, rsi = n; ymm0 = '\r' x 32, ymm7 = '\n' x 32 */

SFT_ENTRY(sft_find_crlf_avx2)
    xorl    %eax, %eax
    cmpq    $2, %rsi
    jb      .Lcl_avx2_ret0
    decq    %rsi

    movl    $0x0d, %eax
    vmovd   %eax, %xmm0
    vpbroadcastb %xmm0, %ymm0
    movl    $0x0a, %eax
    vmovd   %eax, %xmm7
    vpbroadcastb %xmm7, %ymm7

    cmpq    $32, %rsi
    jb      .Lcl_avx2_small

    vpcmpeqb (%rdi), %ymm0, %ymm1
    vpcmpeqb 1(%rdi), %ymm7, %ymm2
    vpand   %ymm2, %ymm1, %ymm1
    vpmovmskb %ymm1, %eax
    testl   %eax, %eax
    jnz     .Lcl_avx2_found

    leaq    (%rdi, %rsi), %rsi
    addq    $32, %rdi
    andq    $-32, %rdi
    movq    %rsi, %rcx
    subq    %rdi, %rcx

    cmpq    $128, %rcx
    jb      .Lcl_avx2_32

.Lcl_avx2_128:
    vpcmpeqb (%rdi), %ymm0, %ymm1
    vpcmpeqb 32(%rdi), %ymm0, %ymm2
    vpcmpeqb 64(%rdi), %ymm0, %ymm3
    vpcmpeqb 96(%rdi), %ymm0, %ymm4
    vpcmpeqb 1(%rdi), %ymm7, %ymm8
    vpcmpeqb 33(%rdi), %ymm7, %ymm9
    vpcmpeqb 65(%rdi), %ymm7, %ymm10
    vpcmpeqb 97(%rdi), %ymm7, %ymm11
    vpand   %ymm8, %ymm1, %ymm1
    vpand   %ymm9, %ymm2, %ymm2
    vpand   %ymm10, %ymm3, %ymm3
    vpand   %ymm11, %ymm4, %ymm4
    vpor    %ymm1, %ymm2, %ymm5
    vpor    %ymm3, %ymm4, %ymm6
    vpor    %ymm5, %ymm6, %ymm6
    vpmovmskb %ymm6, %eax
    testl   %eax, %eax
    jnz     .Lcl_avx2_found128
    subq    $-128, %rdi
    addq    $-128, %rcx
    cmpq    $128, %rcx
    jae     .Lcl_avx2_128

.Lcl_avx2_32:
    cmpq    $32, %rcx
    jb      .Lcl_avx2_last

    vpcmpeqb (%rdi), %ymm0, %ymm1
    vpcmpeqb 1(%rdi), %ymm7, %ymm2
    vpand   %ymm2, %ymm1, %ymm1
    vpmovmskb %ymm1, %eax
    testl   %eax, %eax
    jnz     .Lcl_avx2_found
    addq    $32, %rdi
    subq    $32, %rcx
    jmp     .Lcl_avx2_32

.Lcl_avx2_last:
    xorl    %eax, %eax
    testq   %rcx, %rcx
    jz      .Lcl_avx2_ret
    leaq    -32(%rsi), %rdi
    vpcmpeqb (%rdi), %ymm0, %ymm1
    vpcmpeqb 1(%rdi), %ymm7, %ymm2
    vpand   %ymm2, %ymm1, %ymm1
    vpmovmskb %ymm1, %eax
    testl   %eax, %eax
    jnz     .Lcl_avx2_found
    vzeroupper
    ret

.Lcl_avx2_found128:
    vpmovmskb %ymm1, %eax
    testl   %eax, %eax
    jnz     .Lcl_avx2_found
    addq    $32, %rdi
    vpmovmskb %ymm2, %eax
    testl   %eax, %eax
    jnz     .Lcl_avx2_found
    addq    $32, %rdi
    vpmovmskb %ymm3, %eax
    testl   %eax, %eax
    jnz     .Lcl_avx2_found
    addq    $32, %rdi
    vpmovmskb %ymm4, %eax

.Lcl_avx2_found:
    bsfl    %eax, %eax
    addq    %rdi, %rax

.Lcl_avx2_ret:
    vzeroupper

.Lcl_avx2_ret0:
    ret

.Lcl_avx2_small:
    cmpq    $16, %rsi
    jb      .Lcl_avx2_lt16

    vpcmpeqb (%rdi), %xmm0, %xmm1
    vpcmpeqb 1(%rdi), %xmm7, %xmm2
    vpand   %xmm2, %xmm1, %xmm1
    vpmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lcl_avx2_found
    leaq    -16(%rdi, %rsi), %rdi
    vpcmpeqb (%rdi), %xmm0, %xmm1
    vpcmpeqb 1(%rdi), %xmm7, %xmm2
    vpand   %xmm2, %xmm1, %xmm1
    vpmovmskb %xmm1, %eax
    testl   %eax, %eax
    jnz     .Lcl_avx2_found
    vzeroupper
    ret

.Lcl_avx2_lt16:
    cmpq    $8, %rsi
    jb      .Lcl_avx2_lt8

    vmovq   (%rdi), %xmm1
    vmovq   1(%rdi), %xmm2
    vpcmpeqb %xmm0, %xmm1, %xmm1
    vpcmpeqb %xmm7, %xmm2, %xmm2
    vpand   %xmm2, %xmm1, %xmm1
    vpmovmskb %xmm1, %eax
    andl    $0xff, %eax
    jnz     .Lcl_avx2_found
    leaq    -8(%rdi, %rsi), %rdi
    vmovq   (%rdi), %xmm1
    vmovq   1(%rdi), %xmm2
    vpcmpeqb %xmm0, %xmm1, %xmm1
    vpcmpeqb %xmm7, %xmm2, %xmm2
    vpand   %xmm2, %xmm1, %xmm1
    vpmovmskb %xmm1, %eax
    andl    $0xff, %eax
    jnz     .Lcl_avx2_found
    vzeroupper
    ret

.Lcl_avx2_lt8:
    cmpq    $4, %rsi
    jb      .Lcl_avx2_lt4

    vmovd   (%rdi), %xmm1
    vmovd   1(%rdi), %xmm2
    vpcmpeqb %xmm0, %xmm1, %xmm1
    vpcmpeqb %xmm7, %xmm2, %xmm2
    vpand   %xmm2, %xmm1, %xmm1
    vpmovmskb %xmm1, %eax
    andl    $0xf, %eax
    jnz     .Lcl_avx2_found
    leaq    -4(%rdi, %rsi), %rdi
    vmovd   (%rdi), %xmm1
    vmovd   1(%rdi), %xmm2
    vpcmpeqb %xmm0, %xmm1, %xmm1
    vpcmpeqb %xmm7, %xmm2, %xmm2
    vpand   %xmm2, %xmm1, %xmm1
    vpmovmskb %xmm1, %eax
    andl    $0xf, %eax
    jnz     .Lcl_avx2_found
    vzeroupper
    ret

.Lcl_avx2_lt4:                          /* 1 .. 3 candidates */
    vzeroupper
    xorl    %eax, %eax

.Lcl_avx2_byte:
    cmpb    $13, (%rdi)
    jne     .Lcl_avx2_next
    cmpb    $10, 1(%rdi)
    je      .Lcl_avx2_hit
.Lcl_avx2_next:
    incq    %rdi
    decq    %rsi
    jnz     .Lcl_avx2_byte
    ret

.Lcl_avx2_hit:
    movq    %rdi, %rax
    ret
SFT_END(sft_find_crlf_avx2)


    .section .note.GNU-stack, "", @progbits

#endif
