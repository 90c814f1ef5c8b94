/*
 * sft_confine.h -- what a process that reads client data gives up first:
 * root, capabilities, new privileges, and with Landlock the files outside
 * the declared paths.
 */

#ifndef _SFT_CONFINE_H_INCLUDED_
#define _SFT_CONFINE_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>


sft_int_t sft_confine_process(sft_cycle_t *cycle);


#endif /* _SFT_CONFINE_H_INCLUDED_ */
