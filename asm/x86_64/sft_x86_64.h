/*
 * sft_x86_64.h: assembler boilerplate shared by the asm/x86_64/ kernels:
 * function entry and size directives, CET endbr64 and property note.
 */

#ifndef _SFT_X86_64_H_INCLUDED_
#define _SFT_X86_64_H_INCLUDED_


#if (defined __CET__)
#include <cet.h>                /* _CET_ENDBR, .note.gnu.property */
#else
#define _CET_ENDBR
#endif


#define SFT_ENTRY(name)                                                      \
    .text;                                                                   \
    .globl  name;                                                            \
    .type   name, @function;                                                 \
    .p2align 5;                                                              \
name:                                                                        \
    _CET_ENDBR

#define SFT_END(name)                                                        \
    .size   name, . - name


#endif /* _SFT_X86_64_H_INCLUDED_ */
