/*
 * sft_core.h -- the return-code vocabulary and the core headers in order.
 */

#ifndef _SFT_CORE_H_INCLUDED_
#define _SFT_CORE_H_INCLUDED_


typedef struct sft_module_s      sft_module_t;
typedef struct sft_conf_s        sft_conf_t;
typedef struct sft_cycle_s       sft_cycle_t;
typedef struct sft_pool_s        sft_pool_t;
typedef struct sft_log_s         sft_log_t;
typedef struct sft_event_s       sft_event_t;
typedef struct sft_connection_s  sft_connection_t;
typedef struct sft_command_s     sft_command_t;
typedef struct sft_listening_s   sft_listening_t;
typedef struct sft_event_proxy_s sft_event_proxy_t;

typedef void (*sft_event_handler_pt)(sft_event_t *ev);
typedef void (*sft_connection_handler_pt)(sft_connection_t *c);


#define  SFT_OK          0
#define  SFT_ERROR      -1
#define  SFT_AGAIN      -2
#define  SFT_BUSY       -3
#define  SFT_DONE       -4
#define  SFT_DECLINED   -5
#define  SFT_ABORT      -6


#include <sft_string.h>
#include <sft_array.h>
#include <sft_log.h>
#include <sft_palloc.h>
#include <sft_times.h>
#include <sft_conf_file.h>
#include <sft_module.h>
#include <sft_shmem.h>
#include <sft_proxy_protocol.h>
#include <sft_event.h>
#include <sft_connection.h>
#include <sft_cycle.h>
#include <sft_process.h>
#include <sft_upgrade.h>
#include <sft_stats.h>
#include <sft_core_stats.h>
#include <sft_buffer.h>


#endif /* _SFT_CORE_H_INCLUDED_ */
