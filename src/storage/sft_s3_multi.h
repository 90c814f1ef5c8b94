/*
 * sft_s3_multi.h -- the worker's libcurl multi handle, driven by the
 * epoll loop: curl's sockets are watched through sft_event_watch() and
 * its timer is an event timer, so no transfer ever blocks the loop.
 */

#ifndef _SFT_S3_MULTI_H_INCLUDED_
#define _SFT_S3_MULTI_H_INCLUDED_


#include <curl/curl.h>


/* idle connections kept for reuse, and connections to one host at once */
#define SFT_S3_MAX_CONNECTS       64
#define SFT_S3_MAX_HOST_CONNECTS  256


typedef struct sft_s3_transfer_s  sft_s3_transfer_t;

typedef void (*sft_s3_transfer_done_pt)(sft_s3_transfer_t *t, CURLcode rc);


/* CURLOPT_PRIVATE of every easy handle the multi handle runs */

struct sft_s3_transfer_s {
    CURL                     *easy;
    sft_s3_transfer_done_pt   done;
};


/*
 * The multi handle of this process, made on first use; SFT_ERROR if
 * libcurl cannot be set up.  Added transfers run on the loop, and done
 * is called on the loop once each has finished, after it was removed,
 * so the handler may free or add it again.
 */
sft_int_t sft_s3_multi_init(sft_log_t *log);
sft_int_t sft_s3_multi_add(sft_s3_transfer_t *t);
void sft_s3_multi_remove(sft_s3_transfer_t *t);
void sft_s3_multi_done(void);


#endif /* _SFT_S3_MULTI_H_INCLUDED_ */
