/*
 * sft_sweeper.h -- the master's short-lived sweeper process, which runs the
 * modules' processes_changed hooks confined as a worker is.
 */

#ifndef _SFT_SWEEPER_H_INCLUDED_
#define _SFT_SWEEPER_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>


void sft_sweeper_start(sft_cycle_t *cycle);
sft_int_t sft_sweeper_exited(sft_cycle_t *cycle, pid_t pid, int status);
void sft_sweeper_stop(void);


#endif /* _SFT_SWEEPER_H_INCLUDED_ */
