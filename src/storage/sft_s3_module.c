/*
 * sft_s3_module.c -- the S3 client layer as a module: built with
 * --with-s3_module (the default), it brings libcurl and libxml2 in.  A
 * worker's multi handle is made by its first client and freed at exit;
 * the requests' statistics are registered with every cycle.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_multi.h>
#include <sft_s3_stats.h>
#include <sft_s3_storage.h>


static char *sft_s3_init_conf(sft_cycle_t *cycle, void *conf);
static void sft_s3_exit_process(sft_cycle_t *cycle);


static sft_core_module_t  sft_s3_module_ctx = {
    sft_string("s3"),
    NULL,
    sft_s3_init_conf
};


sft_module_t  sft_s3_module = {
    SFT_MODULE_V1,
    &sft_s3_module_ctx,                    /* module context */
    NULL,                                  /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    sft_s3_exit_process,                   /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


/* every cycle: the requests' statistics; the storages' parts fit */

static char *
sft_s3_init_conf(sft_cycle_t *cycle, void *conf)
{
    (void) conf;

    if (sft_s3_stats_register(cycle) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    return sft_s3_storage_pool_check(cycle);
}


static void
sft_s3_exit_process(sft_cycle_t *cycle)
{
    (void) cycle;

    sft_s3_multi_done();
}
