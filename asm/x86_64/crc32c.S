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
    .quad   0x493c7d27, 0x00000001    /* L = 8 */
    .quad   0xba4fc28e, 0x493c7d27    /* L = 16 */
    .quad   0xddc0152b, 0xf20c0dfe    /* L = 24 */
    .quad   0x9e4addf8, 0xba4fc28e    /* L = 32 */
    .quad   0x39d3b296, 0x3da6d0cb    /* L = 40 */
    .quad   0x0715ce53, 0xddc0152b    /* L = 48 */
    .quad   0x47db8317, 0x1c291d04    /* L = 56 */
    .quad   0x0d3b6092, 0x9e4addf8    /* L = 64 */
    .quad   0xc96cfdc0, 0x740eef02    /* L = 72 */
    .quad   0x878a92a7, 0x39d3b296    /* L = 80 */
    .quad   0xdaece73e, 0x083a6eec    /* L = 88 */
    .quad   0xab7aff2a, 0x0715ce53    /* L = 96 */
    .quad   0x2162d385, 0xc49f4f67    /* L = 104 */
    .quad   0x83348832, 0x47db8317    /* L = 112 */
    .quad   0x299847d5, 0x2ad91c30    /* L = 120 */
    .quad   0xb9e02b86, 0x0d3b6092    /* L = 128 */
    .quad   0x18b33a4e, 0x6992cea2    /* L = 136 */
    .quad   0xb6dd949b, 0xc96cfdc0    /* L = 144 */
    .quad   0x78d9ccb7, 0x7e908048    /* L = 152 */
    .quad   0xbac2fd7b, 0x878a92a7    /* L = 160 */
    .quad   0xa60ce07b, 0x1b3d8f29    /* L = 168 */
    .quad   0xce7f39f4, 0xdaece73e    /* L = 176 */
    .quad   0x61d82e56, 0xf1d0f55e    /* L = 184 */
    .quad   0xd270f1a2, 0xab7aff2a    /* L = 192 */
    .quad   0xc619809d, 0xa87ab8a8    /* L = 200 */
    .quad   0x2b3cac5d, 0x2162d385    /* L = 208 */
    .quad   0x65863b64, 0x8462d800    /* L = 216 */
    .quad   0x1b03397f, 0x83348832    /* L = 224 */
    .quad   0xebb883bd, 0x71d111a8    /* L = 232 */
    .quad   0xb3e32c28, 0x299847d5    /* L = 240 */
    .quad   0x064f7f26, 0xffd852c6    /* L = 248 */
    .quad   0xdd7e3b0c, 0xb9e02b86    /* L = 256 */
    .quad   0xf285651c, 0xdcb17aa4    /* L = 264 */
    .quad   0x10746f3c, 0x18b33a4e    /* L = 272 */
    .quad   0xc7a68855, 0xf37c5aee    /* L = 280 */
    .quad   0x271d9844, 0xb6dd949b    /* L = 288 */
    .quad   0x8e766a0c, 0x6051d5a2    /* L = 296 */
    .quad   0x93a5f730, 0x78d9ccb7    /* L = 304 */
    .quad   0x6cb08e5c, 0x18b0d4ff    /* L = 312 */
    .quad   0x6b749fb2, 0xbac2fd7b    /* L = 320 */
    .quad   0x1393e203, 0x21f3d99c    /* L = 328 */
    .quad   0xcec3662e, 0xa60ce07b    /* L = 336 */
    .quad   0x96c515bb, 0x8f158014    /* L = 344 */
    .quad   0xe6fc4e6a, 0xce7f39f4    /* L = 352 */
    .quad   0x8227bb8a, 0xa00457f7    /* L = 360 */
    .quad   0xb0cd4768, 0x61d82e56    /* L = 368 */
    .quad   0x39c7ff35, 0x8d6d2c43    /* L = 376 */
    .quad   0xd7a4825c, 0xd270f1a2    /* L = 384 */
    .quad   0x0ab3844b, 0x00ac29cf    /* L = 392 */
    .quad   0x0167d312, 0xc619809d    /* L = 400 */
    .quad   0xf6076544, 0xe9adf796    /* L = 408 */
    .quad   0x26f6a60a, 0x2b3cac5d    /* L = 416 */
    .quad   0xa741c1bf, 0x96638b34    /* L = 424 */
    .quad   0x98d8d9cb, 0x65863b64    /* L = 432 */
    .quad   0x49c3cc9c, 0xe0e9f351    /* L = 440 */
    .quad   0x68bce87a, 0x1b03397f    /* L = 448 */
    .quad   0x57a3d037, 0x9af01f2d    /* L = 456 */
    .quad   0x6956fc3b, 0xebb883bd    /* L = 464 */
    .quad   0x42d98888, 0x2cff42cf    /* L = 472 */
    .quad   0x3771e98f, 0xb3e32c28    /* L = 480 */
    .quad   0xb42ae3d9, 0x88f25a3a    /* L = 488 */
    .quad   0x2178513a, 0x064f7f26    /* L = 496 */
    .quad   0xe0ac139e, 0x4e36f0b0    /* L = 504 */
    .quad   0x170076fa, 0xdd7e3b0c    /* L = 512 */
    .quad   0x444dd413, 0xbd6f81f8    /* L = 520 */
    .quad   0x6f345e45, 0xf285651c    /* L = 528 */
    .quad   0x41d17b64, 0x91c9bd4b    /* L = 536 */
    .quad   0xff0dba97, 0x10746f3c    /* L = 544 */
    .quad   0xa2b73df1, 0x885f087b    /* L = 552 */
    .quad   0xf872e54c, 0xc7a68855    /* L = 560 */
    .quad   0x1e41e9fc, 0x4c144932    /* L = 568 */
    .quad   0x86d8e4d2, 0x271d9844    /* L = 576 */
    .quad   0x651bd98b, 0x52148f02    /* L = 584 */
    .quad   0x5bb8f1bc, 0x8e766a0c    /* L = 592 */
    .quad   0xa90fd27a, 0xa3c6f37a    /* L = 600 */
    .quad   0xb3af077a, 0x93a5f730    /* L = 608 */
    .quad   0x4984d782, 0xd7c0557f    /* L = 616 */
    .quad   0xca6ef3ac, 0x6cb08e5c    /* L = 624 */
    .quad   0x234e0b26, 0x63ded06a    /* L = 632 */
    .quad   0xdd66cbbb, 0x6b749fb2    /* L = 640 */
    .quad   0x4597456a, 0x4d56973c    /* L = 648 */
    .quad   0xe9e28eb4, 0x1393e203    /* L = 656 */
    .quad   0x7b3ff57a, 0x9669c9df    /* L = 664 */
    .quad   0xc9c8b782, 0xcec3662e    /* L = 672 */
    .quad   0x3f70cc6f, 0xe417f38a    /* L = 680 */
    .quad   0x93e106a4, 0x96c515bb    /* L = 688 */
    .quad   0x62ec6c6d, 0x4b9e0f71    /* L = 696 */
    .quad   0xd813b325, 0xe6fc4e6a    /* L = 704 */
    .quad   0x0df04680, 0xd104b8fc    /* L = 712 */
    .quad   0x2342001e, 0x8227bb8a    /* L = 720 */
    .quad   0x0a2a8d7e, 0x5b397730    /* L = 728 */
    .quad   0x6d9a4957, 0xb0cd4768    /* L = 736 */
    .quad   0xe8b6368b, 0xe78eb416    /* L = 744 */
    .quad   0xd2c3ed1a, 0x39c7ff35    /* L = 752 */
    .quad   0x995a5724, 0x61ff0e01    /* L = 760 */
    .quad   0x9ef68d35, 0xd7a4825c    /* L = 768 */
    .quad   0x0c139b31, 0x8d96551c    /* L = 776 */
    .quad   0xf2271e60, 0x0ab3844b    /* L = 784 */
    .quad   0x0b0bf8ca, 0x0bf80dd2    /* L = 792 */
    .quad   0x2664fd8b, 0x0167d312    /* L = 800 */
    .quad   0xed64812d, 0x8821abed    /* L = 808 */
    .quad   0x02ee03b2, 0xf6076544    /* L = 816 */
    .quad   0x8604ae0f, 0x6a45d2b2    /* L = 824 */
    .quad   0x363bd6b3, 0x26f6a60a    /* L = 832 */
    .quad   0x135c83fd, 0xd8d26619    /* L = 840 */
    .quad   0x5fabe670, 0xa741c1bf    /* L = 848 */
    .quad   0x35ec3279, 0xde87806c    /* L = 856 */
    .quad   0x00bcf5f6, 0x98d8d9cb    /* L = 864 */
    .quad   0x8ae00689, 0x14338754    /* L = 872 */
    .quad   0x17f27698, 0x49c3cc9c    /* L = 880 */
    .quad   0x58ca5f00, 0x5bd2011f    /* L = 888 */
    .quad   0xaa7c7ad5, 0x68bce87a    /* L = 896 */
    .quad   0xb5cfca28, 0xdd07448e    /* L = 904 */
    .quad   0xded288f8, 0x57a3d037    /* L = 912 */
    .quad   0x59f229bc, 0xdde8f5b9    /* L = 920 */
    .quad   0x6d390dec, 0x6956fc3b    /* L = 928 */
    .quad   0x37170390, 0xa3e3e02c    /* L = 936 */
    .quad   0x6353c1cc, 0x42d98888    /* L = 944 */
    .quad   0xc4584f5c, 0xd73c7bea    /* L = 952 */
    .quad   0xf48642e9, 0x3771e98f    /* L = 960 */
    .quad   0x531377e2, 0x80ff0093    /* L = 968 */
    .quad   0xdd35bc8d, 0xb42ae3d9    /* L = 976 */
    .quad   0xb25b29f2, 0x8fe4c34d    /* L = 984 */
    .quad   0x9a5ede41, 0x2178513a    /* L = 992 */
    .quad   0xa563905d, 0xdf99fc11    /* L = 1000 */
    .quad   0x45cddf4e, 0xe0ac139e    /* L = 1008 */
    .quad   0xacfa3103, 0x6c23e841    /* L = 1016 */
    .quad   0xa51b6135, 0x170076fa    /* L = 1024 */


    .section .note.GNU-stack, "", @progbits

#endif
