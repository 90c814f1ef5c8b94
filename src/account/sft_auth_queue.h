/*
 * sft_auth_queue.h -- the password checks a worker has waiting, in one
 * queue per source (an address, or an IPv6 prefix) served round-robin
 * across sources, with a bound on what one source may have queued.
 */

#ifndef _SFT_AUTH_QUEUE_H_INCLUDED_
#define _SFT_AUTH_QUEUE_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>


#define SFT_AUTH_SOURCE_LEN      20     /* the family, then 16 bytes */
#define SFT_AUTH_QUEUE_BUCKETS   256


typedef struct sft_auth_qnode_s   sft_auth_qnode_t;
typedef struct sft_auth_source_s  sft_auth_source_t;

/* embedded in what is queued */
struct sft_auth_qnode_s {
    sft_auth_qnode_t     *next;
    sft_auth_source_t    *source;       /* NULL while not queued */
};


struct sft_auth_source_s {
    u_char                key[SFT_AUTH_SOURCE_LEN];
    sft_auth_qnode_t     *first;
    sft_auth_qnode_t    **last;
    sft_uint_t            queued;
    sft_auth_source_t    *next;         /* in the ring of sources */
    sft_auth_source_t    *hnext;        /* in its bucket */
};


typedef struct {
    sft_auth_source_t    *head;         /* served next */
    sft_auth_source_t    *tail;
    sft_auth_source_t    *buckets[SFT_AUTH_QUEUE_BUCKETS];
    const u_char         *hash_key;     /* crypto_shorthash_KEYBYTES */
    sft_uint_t            queued;
    sft_uint_t            max_queued;
    sft_uint_t            max_per_source;
    sft_log_t            *log;
} sft_auth_queue_t;


void sft_auth_queue_init(sft_auth_queue_t *q, const u_char *hash_key,
    sft_uint_t max_queued, sft_uint_t max_per_source, sft_log_t *log);
sft_int_t sft_auth_queue_push(sft_auth_queue_t *q, sft_auth_qnode_t *n,
    const u_char *key);
sft_auth_qnode_t *sft_auth_queue_next(sft_auth_queue_t *q);
sft_auth_qnode_t *sft_auth_queue_pop(sft_auth_queue_t *q);
void sft_auth_queue_remove(sft_auth_queue_t *q, sft_auth_qnode_t *n);


#endif /* _SFT_AUTH_QUEUE_H_INCLUDED_ */
