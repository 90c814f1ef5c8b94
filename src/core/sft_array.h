/*
 * sft_array.h -- a growable array allocated from a pool.
 */

#ifndef _SFT_ARRAY_H_INCLUDED_
#define _SFT_ARRAY_H_INCLUDED_


typedef struct {
    void        *elts;
    sft_uint_t   nelts;
    size_t       size;
    sft_uint_t   nalloc;
    sft_pool_t  *pool;
} sft_array_t;


sft_array_t *sft_array_create(sft_pool_t *p, sft_uint_t n, size_t size);
sft_int_t sft_array_init(sft_array_t *array, sft_pool_t *pool, sft_uint_t n,
    size_t size);
void *sft_array_push(sft_array_t *a);


#endif /* _SFT_ARRAY_H_INCLUDED_ */
