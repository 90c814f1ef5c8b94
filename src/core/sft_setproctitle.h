/*
 * sft_setproctitle.h -- process titles as ps(1) shows them: the command
 * line area of the process is taken over once at start, then rewritten.
 */

#ifndef _SFT_SETPROCTITLE_H_INCLUDED_
#define _SFT_SETPROCTITLE_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>


sft_int_t sft_init_setproctitle(int argc, char **argv, sft_log_t *log);
void sft_setproctitle(const char *title, sft_uint_t with_args);


#endif /* _SFT_SETPROCTITLE_H_INCLUDED_ */
