/*
 * sft_seccomp.h -- the system call filter of the workers: an allow-list
 * installed after the privilege drop, before the first client is served.
 */

#ifndef _SFT_SECCOMP_H_INCLUDED_
#define _SFT_SECCOMP_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>


/* the values of the "seccomp" directive; unset means "on" where supported */
#define SFT_SECCOMP_OFF   0
#define SFT_SECCOMP_ON    1
#define SFT_SECCOMP_LOG   2


/* flags: signal 0 to any pid, to ask whether it runs (a storage sweep) */
#define SFT_SECCOMP_PROBE_PIDS  0x1


extern sft_conf_enum_t  sft_seccomp_modes[];


sft_int_t sft_seccomp_install(sft_cycle_t *cycle, sft_uint_t mode,
    sft_uint_t flags);


#endif /* _SFT_SECCOMP_H_INCLUDED_ */
