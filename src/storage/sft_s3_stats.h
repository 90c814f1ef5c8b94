/*
 * sft_s3_stats.h -- S3 requests by operation and result, and retries.
 */

#ifndef _SFT_S3_STATS_H_INCLUDED_
#define _SFT_S3_STATS_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_client.h>


sft_int_t sft_s3_stats_register(sft_cycle_t *cycle);
void sft_s3_stats_count(sft_s3_request_t *r);
void sft_s3_stats_retry(void);


#endif /* _SFT_S3_STATS_H_INCLUDED_ */
