/*
 * sft_array.c -- growable pool arrays.
 */

#include <sft_config.h>
#include <sft_core.h>


sft_array_t *
sft_array_create(sft_pool_t *p, sft_uint_t n, size_t size)
{
    sft_array_t  *a;

    a = sft_palloc(p, sizeof(sft_array_t));
    if (a == NULL) {
        return NULL;
    }

    if (sft_array_init(a, p, n, size) != SFT_OK) {
        return NULL;
    }

    return a;
}


sft_int_t
sft_array_init(sft_array_t *array, sft_pool_t *pool, sft_uint_t n,
    size_t size)
{
    array->nelts = 0;
    array->size = size;
    array->nalloc = n;
    array->pool = pool;

    array->elts = sft_palloc(pool, n * size);
    if (array->elts == NULL) {
        return SFT_ERROR;
    }

    return SFT_OK;
}


void *
sft_array_push(sft_array_t *a)
{
    void    *elt, *new;
    size_t   size;

    if (a->nelts == a->nalloc) {
        size = a->size * a->nalloc;

        new = sft_palloc(a->pool, 2 * size);
        if (new == NULL) {
            return NULL;
        }

        sft_memcpy(new, a->elts, size);
        a->elts = new;
        a->nalloc *= 2;
    }

    elt = (u_char *) a->elts + a->size * a->nelts;
    a->nelts++;

    return elt;
}
