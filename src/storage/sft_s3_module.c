/*
 * sft_s3_module.c -- the S3 client layer as a module: built with
 * --with-s3_module (the default), it brings libcurl and libxml2 in.
 */

#include <sft_config.h>
#include <sft_core.h>


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
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};
