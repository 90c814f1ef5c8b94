/*
 * sft_core_stats.h -- the statistics core itself owns: the processes and
 * the connections every protocol is handed.
 */

#ifndef _SFT_CORE_STATS_H_INCLUDED_
#define _SFT_CORE_STATS_H_INCLUDED_




sft_int_t sft_core_stats_register(sft_cycle_t *cycle);


extern sft_uint_t  sft_stat_conn_accepted;
extern sft_uint_t  sft_stat_conn_handled;
extern sft_uint_t  sft_stat_conn_dropped;
extern sft_uint_t  sft_stat_conn_active;


#endif /* _SFT_CORE_STATS_H_INCLUDED_ */
