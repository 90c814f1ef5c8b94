/*
 * sft_palloc.h -- memory pools: allocations freed together, with cleanups.
 */

#ifndef _SFT_PALLOC_H_INCLUDED_
#define _SFT_PALLOC_H_INCLUDED_


#define SFT_DEFAULT_POOL_SIZE   (16 * 1024)
#define SFT_MAX_ALLOC_FROM_POOL 4095


typedef void (*sft_pool_cleanup_pt)(void *data);

typedef struct sft_pool_cleanup_s  sft_pool_cleanup_t;

struct sft_pool_cleanup_s {
    sft_pool_cleanup_pt   handler;
    void                 *data;
    sft_pool_cleanup_t   *next;
};


typedef struct sft_pool_large_s  sft_pool_large_t;

struct sft_pool_large_s {
    sft_pool_large_t     *next;
    void                 *alloc;
};


typedef struct sft_pool_block_s  sft_pool_block_t;

struct sft_pool_block_s {
    u_char               *last;
    u_char               *end;
    sft_pool_block_t     *next;
};


struct sft_pool_s {
    sft_pool_block_t      first;
    sft_pool_block_t     *current;
    size_t                block_size;
    sft_pool_large_t     *large;
    sft_pool_cleanup_t   *cleanup;
    sft_log_t            *log;
};


sft_pool_t *sft_create_pool(size_t size, sft_log_t *log);
void sft_destroy_pool(sft_pool_t *pool);
void *sft_palloc(sft_pool_t *pool, size_t size);
void *sft_pcalloc(sft_pool_t *pool, size_t size);
void *sft_pnalloc(sft_pool_t *pool, size_t size);
sft_int_t sft_pfree(sft_pool_t *pool, void *p);
u_char *sft_pstrdup(sft_pool_t *pool, sft_str_t *src);
sft_pool_cleanup_t *sft_pool_cleanup_add(sft_pool_t *p, size_t size);

void *sft_alloc(size_t size, sft_log_t *log);
void *sft_calloc(size_t size, sft_log_t *log);
#define sft_free  free


#endif /* _SFT_PALLOC_H_INCLUDED_ */
