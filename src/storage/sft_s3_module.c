/*
 * sft_s3_module.c -- the S3 client layer as a module: built with
 * --with-s3_module (the default), it brings libcurl and libxml2 in.  A
 * worker's multi handle is made by its first client and freed at exit.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_multi.h>


static void sft_s3_exit_process(sft_cycle_t *cycle);


static sft_core_module_t  sft_s3_module_ctx = {
    sft_string("s3"),
    NULL,
    NULL
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


static void
sft_s3_exit_process(sft_cycle_t *cycle)
{
    (void) cycle;

    sft_s3_multi_done();
}
