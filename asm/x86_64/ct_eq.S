/*
 * ct_eq.S: constant-time buffer comparison for x86_64 (SSE2).
 *
 * int sft_ct_eq_sse2(const void *a, const void *b, size_t n);
 *
 * Returns 1 if the n bytes at a and b are equal, 0 otherwise.  The XOR
 * of every pair of bytes is ORed into an accumulator; the only branches
 * depend on n, never on the data, and the result comes from sete.
 * Tails are covered by overlapping loads that end exactly at a + n.
 */

#if (defined __x86_64__ && defined __ELF__)

#include "sft_x86_64.h"


/* rdi = a, rsi = b, rdx = n; xmm0, xmm1, r8 accumulate */

SFT_ENTRY(sft_ct_eq_sse2)
    pxor    %xmm0, %xmm0
    pxor    %xmm1, %xmm1
    xorl    %r8d, %r8d

    cmpq    $16, %rdx
    jb      .Lct_small

    leaq    -16(%rdi, %rdx), %r9        /* last 16 bytes of a */
    leaq    -16(%rsi, %rdx), %r10       /* and of b */

    cmpq    $64, %rdx
    jb      .Lct_16

.Lct_64:
    movdqu  (%rdi), %xmm2
    movdqu  16(%rdi), %xmm3
    movdqu  32(%rdi), %xmm4
    movdqu  48(%rdi), %xmm5
    movdqu  (%rsi), %xmm6
    movdqu  16(%rsi), %xmm7
    movdqu  32(%rsi), %xmm8
    movdqu  48(%rsi), %xmm9
    pxor    %xmm6, %xmm2
    pxor    %xmm7, %xmm3
    pxor    %xmm8, %xmm4
    pxor    %xmm9, %xmm5
    por     %xmm2, %xmm0
    por     %xmm3, %xmm1
    por     %xmm4, %xmm0
    por     %xmm5, %xmm1
    addq    $64, %rdi
    addq    $64, %rsi
    subq    $64, %rdx
    cmpq    $64, %rdx
    jae     .Lct_64

.Lct_16:
    cmpq    $16, %rdx
    jb      .Lct_last

    movdqu  (%rdi), %xmm2
    movdqu  (%rsi), %xmm3
    pxor    %xmm3, %xmm2
    por     %xmm2, %xmm0
    addq    $16, %rdi
    addq    $16, %rsi
    subq    $16, %rdx
    jmp     .Lct_16

.Lct_last:
    movdqu  (%r9), %xmm2
    movdqu  (%r10), %xmm3
    pxor    %xmm3, %xmm2
    por     %xmm2, %xmm0
    jmp     .Lct_reduce

.Lct_small:
    cmpq    $8, %rdx
    jb      .Lct_lt8
    movq    (%rdi), %rax
    movq    -8(%rdi, %rdx), %rcx
    xorq    (%rsi), %rax
    xorq    -8(%rsi, %rdx), %rcx
    orq     %rax, %r8
    orq     %rcx, %r8
    jmp     .Lct_reduce

.Lct_lt8:
    cmpq    $4, %rdx
    jb      .Lct_lt4
    movl    (%rdi), %eax
    movl    -4(%rdi, %rdx), %ecx
    xorl    (%rsi), %eax
    xorl    -4(%rsi, %rdx), %ecx
    orq     %rax, %r8
    orq     %rcx, %r8
    jmp     .Lct_reduce

.Lct_lt4:
    cmpq    $2, %rdx
    jb      .Lct_lt2
    movzwl  (%rdi), %eax
    movzwl  -2(%rdi, %rdx), %ecx
    movzwl  (%rsi), %r9d
    movzwl  -2(%rsi, %rdx), %r10d
    xorl    %r9d, %eax
    xorl    %r10d, %ecx
    orq     %rax, %r8
    orq     %rcx, %r8
    jmp     .Lct_reduce

.Lct_lt2:
    testq   %rdx, %rdx
    jz      .Lct_reduce
    movzbl  (%rdi), %eax
    movzbl  (%rsi), %ecx
    xorl    %ecx, %eax
    orq     %rax, %r8

.Lct_reduce:
    por     %xmm1, %xmm0
    movq    %xmm0, %rax
    punpckhqdq %xmm0, %xmm0
    movq    %xmm0, %rcx
    orq     %rax, %r8
    orq     %rcx, %r8
    xorl    %eax, %eax
    testq   %r8, %r8
    sete    %al
    ret
SFT_END(sft_ct_eq_sse2)


    .section .note.GNU-stack, "", @progbits

#endif
