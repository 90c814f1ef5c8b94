/*
 * aes_gcm.S: AES-GCM for x86_64 with VAES and VPCLMULQDQ on 512-bit
 * registers (AVX-512 F, BW and VL; BMI2 for the tail masks), 32 blocks
 * per step; one AES block and the key schedule with AES-NI.  The key
 * layout is sft_aes_gcm_key_t (asm/sft_aes_gcm.h).  Every function
 * clears the vector registers that held round keys, powers of H or
 * keystream before it returns.
 *
 * void sft_aes_gcm_ctr_vaes(const sft_aes_gcm_key_t *k, uint8_t ctr[16],
 *     uint8_t xi[16], const void *in, void *out, size_t n);
 * void sft_aes_gcm_ctr_dec_vaes(...): the same, hashing the input
 * void sft_aes_gcm_ghash_vaes(const sft_aes_gcm_key_t *k, uint8_t xi[16],
 *     const void *p, size_t n);
 * void sft_aes_block_aesni(const sft_aes_gcm_key_t *k, const uint8_t *in,
 *     uint8_t *out);
 * void sft_aes_expand_aesni(sft_aes_gcm_key_t *k, const uint8_t *key):
 *     the round keys for k->rounds (10 or 14) from a 16 or 32-byte key
 *
 * GHASH works on byte-reversed blocks: as a 128-bit integer, bit 127-i
 * holds the coefficient of x^i.  The carry-less product of two such
 * values a, b is the 256-bit byte-reversed form of a*b*x, so the key
 * table holds H^i * x^-1 and a product comes out as a*H^i.  The 256-bit
 * product  HI*2^128 + MI*2^64 + LO  is reduced modulo the reversed
 * polynomial by two Montgomery steps of 64 bits with the constant
 * 0xc2000000000000000000000000000001: each step multiplies the lowest
 * 64 bits by its high half and adds the result and the bits themselves
 * 64 and 128 bits up; what is left in HI is the reduced value.  MI
 * comes from one product by Karatsuba: (a0 + a1)(b0 + b1) + LO + HI,
 * with b0 + b1 from the key's second table.
 *
 * A batch of blocks c_1 .. c_m updates the hash X as
 * (X + c_1)*H^m + c_2*H^(m-1) + ... + c_m*H, one product per block and
 * a single reduction: lane j of the eight registers meets H^(32-j).
 * Eight registers of counters keep eight AES chains in flight: with
 * four, the rounds' latency (not the units) set the pace once GHASH's
 * work filled the scheduler.
 */

#if (defined __x86_64__ && defined __ELF__)

#include "sft_x86_64.h"


#define SFT_GCM_ROUNDS   240            /* offsets in sft_aes_gcm_key_t */
#define SFT_GCM_HTAB     256
#define SFT_GCM_HKTAB    768
#define SFT_GCM_POWERS   32             /* H^32 .. H^1 */
#define SFT_GCM_STEP     (SFT_GCM_POWERS * 16)


/*
 * Registers: zmm16..zmm30 the round keys (AES-128 uses zmm16..zmm26),
 * BSWAP the byte-reversing shuffle, X the hash (lane 0; the others
 * zero), CTR the next four counters (byte-reversed), LO/MI/HI the sums,
 * T1, T2, T3 scratch; zmm0..zmm7 blocks; r11d the round count.
 */

#define BSWAP   %zmm31
#define BSWAPx  %xmm31
#define T3      %zmm15
#define X       %zmm13
#define Xx      %xmm13
#define CTR     %zmm12
#define LO      %zmm8
#define LOx     %xmm8
#define HI      %zmm9
#define HIy     %ymm9
#define HIx     %xmm9
#define MI      %zmm10
#define MIx     %xmm10
#define T1      %zmm11
#define T1y     %ymm11
#define T1x     %xmm11
#define T2      %zmm14


    .section .rodata
    .p2align 6
.Lgcm_bswap:
    .byte   15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0
.Lgcm_poly:
    .quad   1, 0xc200000000000000, 1, 0xc200000000000000
    .quad   1, 0xc200000000000000, 1, 0xc200000000000000
.Lgcm_inc:
    .long   0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0
.Lgcm_add4:
    .long   4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0


.macro SFT_AES_ROUND key, regs:vararg
    .irp r, \regs
    vaesenc     \key, \r, \r
    .endr
.endm

.macro SFT_AES_LAST key, regs:vararg
    .irp r, \regs
    vaesenclast \key, \r, \r
    .endr
.endm

.macro SFT_AES_ENCRYPT regs:vararg
    .irp r, \regs
    vpxord      %zmm16, \r, \r
    .endr
    SFT_AES_ROUND %zmm17, \regs
    SFT_AES_ROUND %zmm18, \regs
    SFT_AES_ROUND %zmm19, \regs
    SFT_AES_ROUND %zmm20, \regs
    SFT_AES_ROUND %zmm21, \regs
    SFT_AES_ROUND %zmm22, \regs
    SFT_AES_ROUND %zmm23, \regs
    SFT_AES_ROUND %zmm24, \regs
    SFT_AES_ROUND %zmm25, \regs
    cmpl        $10, %r11d
    je          1f
    SFT_AES_ROUND %zmm26, \regs
    SFT_AES_ROUND %zmm27, \regs
    SFT_AES_ROUND %zmm28, \regs
    SFT_AES_ROUND %zmm29, \regs
    SFT_AES_LAST  %zmm30, \regs
    jmp         2f
1:
    SFT_AES_LAST  %zmm26, \regs
2:
.endm


/* the next counters, byte-reversed back, one register per argument */

.macro SFT_GCM_COUNTERS regs:vararg
    .irp r, \regs
    vpshufb     BSWAP, CTR, \r
    vpaddd      .Lgcm_add4(%rip), CTR, CTR
    .endr
.endm


/*
 * zmm0..zmm15 and the round keys zeroed (vzeroall also leaves the upper
 * halves clean, as vzeroupper would); BSWAP is a constant
 */

.macro SFT_GCM_WIPE
    vzeroall
    .irp r, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
    vpxord      %xmm\r, %xmm\r, %xmm\r
    .endr
.endm


/* LO, MI + LO + HI, HI = 0 */

.macro SFT_GHASH_ZERO
    vpxor       LOx, LOx, LOx
    vpxor       MIx, MIx, MIx
    vpxor       HIx, HIx, HIx
.endm


/*
 * LO, MI + LO + HI, HI += d * h, lane by lane (d, h: byte-reversed
 * blocks; hk: h's two halves added, in the low half)
 */

.macro SFT_GHASH_MUL d, h, hk
    vpclmulqdq  $0x00, \h, \d, T1
    vpclmulqdq  $0x11, \h, \d, T2
    vpxord      T1, LO, LO
    vpxord      T2, HI, HI
    vpshufd     $0x4e, \d, T1
    vpxord      \d, T1, T1
    vpclmulqdq  $0x00, \hk, T1, T1
    vpxord      T1, MI, MI
.endm


/* X = the sum over the lanes of (LO, MI, HI) reduced */

.macro SFT_GHASH_REDUCE
    vpternlogd  $0x96, LO, HI, MI
    vpclmulqdq  $0x10, .Lgcm_poly(%rip), LO, T1
    vpshufd     $0x4e, LO, LO
    vpternlogd  $0x96, T1, LO, MI
    vpclmulqdq  $0x10, .Lgcm_poly(%rip), MI, T1
    vpshufd     $0x4e, MI, MI
    vpternlogd  $0x96, T1, MI, HI
    vextracti64x4 $1, HI, T1y
    vpxord      T1y, HIy, HIy
    vextracti32x4 $1, HIy, T1x
    vpxord      T1x, HIx, Xx
.endm


/*
 * For the step over the next min(len, 64) bytes: k1 masks those bytes,
 * k2 the lanes of the nb = ceil(bytes / 16) blocks, and zmm2 holds
 * H^nb .. H^1 in those lanes, zmm3 their Karatsuba halves.  Uses rax,
 * rcx, r10.
 */

.macro SFT_GHASH_TAIL_MASKS len
    movl        $64, %eax
    cmpq        %rax, \len
    cmovbq      \len, %rax
    movq        $-1, %r10
    bzhiq       %rax, %r10, %r10
    kmovq       %r10, %k1
    addl        $15, %eax
    shrl        $4, %eax
    leal        (%rax, %rax), %r10d
    negq        %rax
    shlq        $4, %rax
    leaq        SFT_GCM_HTAB + SFT_GCM_STEP(%rdi, %rax), %rax
    movl        %r10d, %ecx
    movl        $-1, %r10d
    bzhil       %ecx, %r10d, %r10d
    kmovw       %r10d, %k2
    vmovdqu64   (%rax), %zmm2{%k2}{z}
    vmovdqu64   SFT_GCM_HKTAB - SFT_GCM_HTAB(%rax), %zmm3{%k2}{z}
.endm


/* X = (X + d) * H^nb ..., d: up to four blocks as loaded, zero-padded */

.macro SFT_GHASH_STEP d
    vpshufb     BSWAP, \d, \d
    vpxord      X, \d, \d
    SFT_GHASH_ZERO
    SFT_GHASH_MUL \d, %zmm2, %zmm3
    SFT_GHASH_REDUCE
.endm


.macro SFT_GHASH_SETUP xi
    vbroadcasti32x4 .Lgcm_bswap(%rip), BSWAP
    vmovdqu     (\xi), Xx
    vpshufb     BSWAPx, Xx, Xx
.endm


/* rdi = k, rsi = xi, rdx = p, rcx = n; rcx is reused for the masks */

SFT_ENTRY(sft_aes_gcm_ghash_vaes)
    testq       %rcx, %rcx
    jz          .Lghash_done

    SFT_GHASH_SETUP %rsi
    movq        %rcx, %r9

.Lghash_loop:
    SFT_GHASH_TAIL_MASKS %r9
    vmovdqu8    (%rdx), %zmm0{%k1}{z}
    SFT_GHASH_STEP %zmm0
    addq        $64, %rdx
    subq        $64, %r9
    ja          .Lghash_loop

    vpshufb     BSWAPx, Xx, Xx
    vmovdqu     Xx, (%rsi)
    SFT_GCM_WIPE

.Lghash_done:
    ret
SFT_END(sft_aes_gcm_ghash_vaes)


/*
 * Counter mode with GHASH, dec = 0: of the output (encryption), 1: of the
 * input (decryption).  rdi = k, rsi = ctr, rdx = xi, rcx = in, r8 = out,
 * r9 = n; in moves to rdx once xi is loaded, rcx is reused for the masks.
 */

.macro SFT_GCM_CTR dec
    testq       %r9, %r9
    jz          .Lctr_done\@

    SFT_GHASH_SETUP %rdx
    pushq       %rdx

    movq        %rcx, %rdx
    movl        SFT_GCM_ROUNDS(%rdi), %r11d

    .irp r, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
    vbroadcasti32x4 16*(\r-16)(%rdi), %zmm\r
    .endr

    /* four counters in CTR; the caller's counter moves past n bytes */

    vbroadcasti32x4 (%rsi), CTR
    vpshufb     BSWAP, CTR, CTR
    vpaddd      .Lgcm_inc(%rip), CTR, CTR

    movl        12(%rsi), %eax
    bswapl      %eax
    leaq        15(%r9), %r10
    shrq        $4, %r10
    addl        %r10d, %eax
    bswapl      %eax
    movl        %eax, 12(%rsi)

    cmpq        $SFT_GCM_STEP, %r9
    jb          .Lctr_tail\@

.Lctr_loop\@:
    SFT_GCM_COUNTERS %zmm0, %zmm1, %zmm2, %zmm3, %zmm4, %zmm5, %zmm6, %zmm7
    SFT_AES_ENCRYPT %zmm0, %zmm1, %zmm2, %zmm3, %zmm4, %zmm5, %zmm6, %zmm7

    SFT_GHASH_ZERO

    .irp i, 0, 1, 2, 3, 4, 5, 6, 7
    .if \dec
    vmovdqu64   64*\i(%rdx), T3
    vpxord      T3, %zmm\i, %zmm\i
    vmovdqu64   %zmm\i, 64*\i(%r8)
    vpshufb     BSWAP, T3, T3
    .else
    vpxord      64*\i(%rdx), %zmm\i, %zmm\i
    vmovdqu64   %zmm\i, 64*\i(%r8)
    vpshufb     BSWAP, %zmm\i, T3
    .endif
    .if \i == 0
    vpxord      X, T3, T3
    .endif
    SFT_GHASH_MUL T3, SFT_GCM_HTAB+64*\i(%rdi), SFT_GCM_HKTAB+64*\i(%rdi)
    .endr

    SFT_GHASH_REDUCE

    addq        $SFT_GCM_STEP, %rdx
    addq        $SFT_GCM_STEP, %r8
    subq        $SFT_GCM_STEP, %r9
    cmpq        $SFT_GCM_STEP, %r9
    jae         .Lctr_loop\@

    testq       %r9, %r9
    jz          .Lctr_end\@

    /* the last bytes, up to four blocks a step, the last block partial */

.Lctr_tail\@:
    SFT_GHASH_TAIL_MASKS %r9

    SFT_GCM_COUNTERS %zmm0
    SFT_AES_ENCRYPT %zmm0

    vmovdqu8    (%rdx), %zmm1{%k1}{z}
    vpxord      %zmm1, %zmm0, %zmm0
    vmovdqu8    %zmm0, (%r8){%k1}
    .if \dec
    SFT_GHASH_STEP %zmm1
    .else
    vmovdqu8    %zmm0, %zmm0{%k1}{z}
    SFT_GHASH_STEP %zmm0
    .endif

    addq        $64, %rdx
    addq        $64, %r8
    subq        $64, %r9
    ja          .Lctr_tail\@

.Lctr_end\@:
    popq        %rdx
    vpshufb     BSWAPx, Xx, Xx
    vmovdqu     Xx, (%rdx)
    SFT_GCM_WIPE

.Lctr_done\@:
    ret
.endm


SFT_ENTRY(sft_aes_gcm_ctr_vaes)
    SFT_GCM_CTR 0
SFT_END(sft_aes_gcm_ctr_vaes)


SFT_ENTRY(sft_aes_gcm_ctr_dec_vaes)
    SFT_GCM_CTR 1
SFT_END(sft_aes_gcm_ctr_dec_vaes)


/* rdi = k, rsi = in, rdx = out */

SFT_ENTRY(sft_aes_block_aesni)
    vmovdqu     (%rsi), %xmm0
    vpxor       (%rdi), %xmm0, %xmm0
    .irp r, 1, 2, 3, 4, 5, 6, 7, 8, 9
    vaesenc     16*\r(%rdi), %xmm0, %xmm0
    .endr
    cmpl        $10, SFT_GCM_ROUNDS(%rdi)
    je          1f
    .irp r, 10, 11, 12, 13
    vaesenc     16*\r(%rdi), %xmm0, %xmm0
    .endr
    vaesenclast 224(%rdi), %xmm0, %xmm0
    jmp         2f
1:
    vaesenclast 160(%rdi), %xmm0, %xmm0
2:
    vmovdqu     %xmm0, (%rdx)
    vpxor       %xmm0, %xmm0, %xmm0
    ret
SFT_END(sft_aes_block_aesni)


/*
 * One step of the key schedule (FIPS 197, 5.2): \a, the round key four
 * words back, becomes the next one, each word XORed with the words
 * before it and with word \w of xmm2 (SubWord, RotWord and Rcon from
 * vaeskeygenassist: 3 for w[i - 1] rotated, 2 for it unrotated).
 */

.macro SFT_AES_KEY_STEP a, w
    vpshufd     $(\w * 0x55), %xmm2, %xmm2
    vpslldq     $4, \a, %xmm4
    vpxor       %xmm4, \a, \a
    vpslldq     $4, %xmm4, %xmm4
    vpxor       %xmm4, \a, \a
    vpslldq     $4, %xmm4, %xmm4
    vpxor       %xmm4, \a, \a
    vpxor       %xmm2, \a, \a
.endm


/* AES-128's round key i from the one before it in xmm1 */

.macro SFT_AES128_KEY i, rcon
    vaeskeygenassist $\rcon, %xmm1, %xmm2
    SFT_AES_KEY_STEP %xmm1, 3
    vmovdqu     %xmm1, 16*\i(%rdi)
.endm


/* rdi = k, rsi = key; xmm1 (and xmm3 for AES-256) the last round keys */

SFT_ENTRY(sft_aes_expand_aesni)
    vmovdqu     (%rsi), %xmm1
    vmovdqu     %xmm1, (%rdi)
    cmpl        $10, SFT_GCM_ROUNDS(%rdi)
    jne         1f

    SFT_AES128_KEY 1, 0x01
    SFT_AES128_KEY 2, 0x02
    SFT_AES128_KEY 3, 0x04
    SFT_AES128_KEY 4, 0x08
    SFT_AES128_KEY 5, 0x10
    SFT_AES128_KEY 6, 0x20
    SFT_AES128_KEY 7, 0x40
    SFT_AES128_KEY 8, 0x80
    SFT_AES128_KEY 9, 0x1b
    SFT_AES128_KEY 10, 0x36
    jmp         2f

1:
    vmovdqu     16(%rsi), %xmm3
    vmovdqu     %xmm3, 16(%rdi)
    .irp i, 1, 2, 3, 4, 5, 6, 7
    vaeskeygenassist $(1 << (\i - 1)), %xmm3, %xmm2
    SFT_AES_KEY_STEP %xmm1, 3
    vmovdqu     %xmm1, 32*\i(%rdi)
    .if \i < 7
    vaeskeygenassist $0, %xmm1, %xmm2
    SFT_AES_KEY_STEP %xmm3, 2
    vmovdqu     %xmm3, 32*\i+16(%rdi)
    .endif
    .endr

2:
    vpxor       %xmm1, %xmm1, %xmm1
    vpxor       %xmm2, %xmm2, %xmm2
    vpxor       %xmm3, %xmm3, %xmm3
    vpxor       %xmm4, %xmm4, %xmm4
    ret
SFT_END(sft_aes_expand_aesni)


    .section .note.GNU-stack, "", @progbits

#endif
