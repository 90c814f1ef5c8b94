/*
 * sft_reload.h -- the outcome of the last reload, in a small shared zone
 * kept across reloads, so a worker that asked the master for one (the
 * admin API) learns whether the new configuration loaded and, if not, why.
 */

#ifndef _SFT_RELOAD_H_INCLUDED_
#define _SFT_RELOAD_H_INCLUDED_


#define SFT_RELOAD_ERROR_LEN  512


sft_int_t sft_reload_zone_add(sft_cycle_t *cycle);

/* the master, after each reload attempt; error: NULL when it loaded */
void sft_reload_done(const char *error);

/* a worker: the attempts so far, then whether one came after "seen" */
uint64_t sft_reload_attempts(void);
sft_int_t sft_reload_result(uint64_t seen, char *error);


#endif /* _SFT_RELOAD_H_INCLUDED_ */
