/*
 * sft_palloc.c -- memory pools: small allocations carved from blocks, large
 * ones tracked individually, everything released by sft_destroy_pool().
 */

#include <sft_config.h>
#include <sft_core.h>


void *
sft_alloc(size_t size, sft_log_t *log)
{
    void  *p;

    p = malloc(size);
    if (p == NULL) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno,
                      "malloc(%zu) failed", size);
    }

    return p;
}


void *
sft_calloc(size_t size, sft_log_t *log)
{
    void  *p;

    p = sft_alloc(size, log);
    if (p) {
        sft_memzero(p, size);
    }

    return p;
}


sft_pool_t *
sft_create_pool(size_t size, sft_log_t *log)
{
    sft_pool_t  *p;

    if (size < sizeof(sft_pool_t) + 256) {
        size = sizeof(sft_pool_t) + 256;
    }

    p = sft_alloc(size, log);
    if (p == NULL) {
        return NULL;
    }

    p->first.last = (u_char *) p + sizeof(sft_pool_t);
    p->first.end = (u_char *) p + size;
    p->first.next = NULL;
    p->current = &p->first;
    p->block_size = size;
    p->large = NULL;
    p->cleanup = NULL;
    p->log = log;

    return p;
}


void
sft_destroy_pool(sft_pool_t *pool)
{
    sft_pool_block_t    *b, *n;
    sft_pool_large_t    *l;
    sft_pool_cleanup_t  *c;

    for (c = pool->cleanup; c; c = c->next) {
        if (c->handler) {
            c->handler(c->data);
        }
    }

    for (l = pool->large; l; l = l->next) {
        if (l->alloc) {
            sft_free(l->alloc);
        }
    }

    for (b = pool->first.next; b; b = n) {
        n = b->next;
        sft_free(b);
    }

    sft_free(pool);
}


static void *
sft_palloc_block(sft_pool_t *pool, size_t size, size_t align)
{
    u_char            *m;
    sft_pool_block_t  *b;

    b = sft_alloc(pool->block_size, pool->log);
    if (b == NULL) {
        return NULL;
    }

    m = sft_align_ptr((u_char *) b + sizeof(sft_pool_block_t), align);
    b->last = m + size;
    b->end = (u_char *) b + pool->block_size;
    b->next = NULL;

    pool->current->next = b;
    pool->current = b;

    return m;
}


static void *
sft_palloc_large(sft_pool_t *pool, size_t size)
{
    void              *p;
    sft_pool_large_t  *large;

    p = sft_alloc(size, pool->log);
    if (p == NULL) {
        return NULL;
    }

    large = sft_palloc(pool, sizeof(sft_pool_large_t));
    if (large == NULL) {
        sft_free(p);
        return NULL;
    }

    large->alloc = p;
    large->next = pool->large;
    pool->large = large;

    return p;
}


static void *
sft_palloc_aligned(sft_pool_t *pool, size_t size, size_t align)
{
    u_char  *m;
    size_t   max;

    max = pool->block_size - sizeof(sft_pool_block_t) - SFT_ALIGNMENT;

    if (size > max || size > SFT_MAX_ALLOC_FROM_POOL * 16) {
        return sft_palloc_large(pool, size);
    }

    m = sft_align_ptr(pool->current->last, align);

    if ((size_t) (pool->current->end - m) >= size) {
        pool->current->last = m + size;
        return m;
    }

    return sft_palloc_block(pool, size, align);
}


void *
sft_palloc(sft_pool_t *pool, size_t size)
{
    return sft_palloc_aligned(pool, size, SFT_ALIGNMENT);
}


void *
sft_pnalloc(sft_pool_t *pool, size_t size)
{
    return sft_palloc_aligned(pool, size, 1);
}


void *
sft_pcalloc(sft_pool_t *pool, size_t size)
{
    void  *p;

    p = sft_palloc(pool, size);
    if (p) {
        sft_memzero(p, size);
    }

    return p;
}


sft_int_t
sft_pfree(sft_pool_t *pool, void *p)
{
    sft_pool_large_t  *l;

    for (l = pool->large; l; l = l->next) {
        if (p == l->alloc) {
            sft_free(l->alloc);
            l->alloc = NULL;
            return SFT_OK;
        }
    }

    return SFT_DECLINED;
}


u_char *
sft_pstrdup(sft_pool_t *pool, sft_str_t *src)
{
    u_char  *dst;

    dst = sft_pnalloc(pool, src->len + 1);
    if (dst == NULL) {
        return NULL;
    }

    sft_memcpy(dst, src->data, src->len);
    dst[src->len] = '\0';

    return dst;
}


sft_pool_cleanup_t *
sft_pool_cleanup_add(sft_pool_t *p, size_t size)
{
    sft_pool_cleanup_t  *c;

    c = sft_palloc(p, sizeof(sft_pool_cleanup_t));
    if (c == NULL) {
        return NULL;
    }

    if (size) {
        c->data = sft_palloc(p, size);
        if (c->data == NULL) {
            return NULL;
        }

    } else {
        c->data = NULL;
    }

    c->handler = NULL;
    c->next = p->cleanup;
    p->cleanup = c;

    return c;
}
