/*
 * sft_upgrade.h -- the live binary upgrade: starting the new binary with
 * the listeners inherited, adopting them in it, rolling back if it exits.
 */

#ifndef _SFT_UPGRADE_H_INCLUDED_
#define _SFT_UPGRADE_H_INCLUDED_


void sft_upgrade_init(char **argv);
pid_t sft_exec_new_binary(sft_cycle_t *cycle);
void sft_upgrade_exited(sft_cycle_t *cycle, int status);
void sft_upgrade_delete_pidfile(sft_cycle_t *cycle);
sft_int_t sft_add_inherited_sockets(sft_cycle_t *cycle);


extern pid_t       sft_new_binary;     /* the new master while it runs */
extern sft_uint_t  sft_inherited;      /* this master was started by one */


#endif /* _SFT_UPGRADE_H_INCLUDED_ */
