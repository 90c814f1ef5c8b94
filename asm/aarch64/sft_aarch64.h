/*
 * sft_aarch64.h: assembler boilerplate shared by the asm/aarch64/
 * kernels: function entry with a BTI landing pad, size directives and
 * the GNU property note that marks the objects BTI/PAC compatible.
 */

#ifndef _SFT_AARCH64_H_INCLUDED_
#define _SFT_AARCH64_H_INCLUDED_


/* "bti c", a NOP on CPUs without BTI */
#define SFT_BTI_C  hint 34


#define SFT_ENTRY(name)                                                      \
    .text;                                                                   \
    .globl  name;                                                            \
    .type   name, %function;                                                 \
    .p2align 5;                                                              \
name:                                                                        \
    SFT_BTI_C

#define SFT_END(name)                                                        \
    .size   name, . - name


/*
 * GNU_PROPERTY_AARCH64_FEATURE_1_AND: BTI (1) when the compiler marks
 * its objects so, PAC (2) likewise (the kernels are leaf functions that
 * never spill the link register)
 */

#if (defined __ARM_FEATURE_BTI_DEFAULT && __ARM_FEATURE_BTI_DEFAULT == 1)
#define SFT_PROP_BTI  1
#else
#define SFT_PROP_BTI  0
#endif

#if (defined __ARM_FEATURE_PAC_DEFAULT)
#define SFT_PROP_PAC  2
#else
#define SFT_PROP_PAC  0
#endif

#define SFT_GNU_PROPERTY_NOTE                                                \
    .pushsection .note.gnu.property, "a";                                    \
    .balign 8;                                                               \
    .long   4;                                                               \
    .long   16;                                                              \
    .long   5;                  /* NT_GNU_PROPERTY_TYPE_0 */                 \
    .asciz  "GNU";                                                           \
    .long   0xc0000000;         /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */     \
    .long   4;                                                               \
    .long   (SFT_PROP_BTI | SFT_PROP_PAC);                                   \
    .long   0;                                                               \
    .popsection


#endif /* _SFT_AARCH64_H_INCLUDED_ */
