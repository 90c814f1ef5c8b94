/*
 * sft_auth_stats.h -- the statistics of logins and of password checks,
 * the same for every protocol.
 */

#ifndef _SFT_AUTH_STATS_H_INCLUDED_
#define _SFT_AUTH_STATS_H_INCLUDED_




sft_int_t sft_auth_stats_register(sft_cycle_t *cycle);
void sft_auth_stats_check_time(sft_uint_t cached, uint64_t usec);


extern sft_uint_t  sft_auth_stat_logins;
extern sft_uint_t  sft_auth_stat_login_failures;


#endif /* _SFT_AUTH_STATS_H_INCLUDED_ */
