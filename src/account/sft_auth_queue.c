/*
 * sft_auth_queue.c -- fair queueing of password checks: each source has
 * its own FIFO, the sources with work form a ring, and every check taken
 * moves its source to the end of the ring.  A source that floods the
 * worker with checks delays everyone else by at most one check per turn,
 * and may have no more than max_per_source of them waiting.
 *
 * Sources are found through a table keyed with a secret (SipHash), so a
 * client cannot choose addresses that pile up in one bucket.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_auth_queue.h>
#include <sodium.h>


void
sft_auth_queue_init(sft_auth_queue_t *q, const u_char *hash_key,
    sft_uint_t max_queued, sft_uint_t max_per_source, sft_log_t *log)
{
    sft_memzero(q, sizeof(sft_auth_queue_t));

    q->hash_key = hash_key;
    q->max_queued = max_queued;
    q->max_per_source = max_per_source;
    q->log = log;
}


static sft_auth_source_t **
sft_auth_queue_bucket(sft_auth_queue_t *q, const u_char *key)
{
    uint64_t  h;

    crypto_shorthash((u_char *) &h, key, SFT_AUTH_SOURCE_LEN, q->hash_key);

    return &q->buckets[h % SFT_AUTH_QUEUE_BUCKETS];
}


/*
 * SFT_OK: queued; SFT_BUSY: the worker's queue is full; SFT_DECLINED: this
 * source has max_per_source checks waiting already
 */

sft_int_t
sft_auth_queue_push(sft_auth_queue_t *q, sft_auth_qnode_t *n,
    const u_char *key)
{
    sft_auth_source_t   *src, **bucket;

    if (q->queued >= q->max_queued) {
        return SFT_BUSY;
    }

    bucket = sft_auth_queue_bucket(q, key);

    for (src = *bucket; src; src = src->hnext) {
        if (sft_memcmp(src->key, key, SFT_AUTH_SOURCE_LEN) == 0) {
            break;
        }
    }

    if (src == NULL) {
        src = sft_calloc(sizeof(sft_auth_source_t), q->log);
        if (src == NULL) {
            return SFT_ERROR;
        }

        sft_memcpy(src->key, key, SFT_AUTH_SOURCE_LEN);
        src->last = &src->first;

        src->hnext = *bucket;
        *bucket = src;

        if (q->tail) {
            q->tail->next = src;

        } else {
            q->head = src;
        }

        q->tail = src;

    } else if (src->queued >= q->max_per_source) {
        return SFT_DECLINED;
    }

    n->next = NULL;
    n->source = src;
    *src->last = n;
    src->last = &n->next;
    src->queued++;
    q->queued++;

    return SFT_OK;
}


/* what sft_auth_queue_pop() would take, left in place */

sft_auth_qnode_t *
sft_auth_queue_next(sft_auth_queue_t *q)
{
    return q->head ? q->head->first : NULL;
}


/* a source without checks leaves the ring and the table */

static void
sft_auth_queue_drop_source(sft_auth_queue_t *q, sft_auth_source_t *src)
{
    sft_auth_source_t  **pp, *prev;

    for (pp = sft_auth_queue_bucket(q, src->key); *pp; pp = &(*pp)->hnext) {
        if (*pp == src) {
            *pp = src->hnext;
            break;
        }
    }

    prev = NULL;

    if (q->head != src) {
        for (prev = q->head; prev->next != src; prev = prev->next) {
            /* void */
        }
    }

    if (prev) {
        prev->next = src->next;

    } else {
        q->head = src->next;
    }

    if (q->tail == src) {
        q->tail = prev;
    }

    sft_free(src);
}


static void
sft_auth_queue_unlink(sft_auth_queue_t *q, sft_auth_qnode_t **pp)
{
    sft_auth_qnode_t   *n;
    sft_auth_source_t  *src;

    n = *pp;
    src = n->source;

    *pp = n->next;

    if (src->last == &n->next) {
        src->last = pp;
    }

    src->queued--;
    q->queued--;

    n->next = NULL;
    n->source = NULL;

    if (src->queued == 0) {
        sft_auth_queue_drop_source(q, src);
    }
}


/* the next check to run; its source goes to the end of the ring */

sft_auth_qnode_t *
sft_auth_queue_pop(sft_auth_queue_t *q)
{
    sft_auth_qnode_t   *n;
    sft_auth_source_t  *src;

    src = q->head;

    if (src == NULL) {
        return NULL;
    }

    n = src->first;

    if (src->queued > 1 && src != q->tail) {
        q->head = src->next;
        src->next = NULL;
        q->tail->next = src;
        q->tail = src;
    }

    sft_auth_queue_unlink(q, &src->first);

    return n;
}


/* a check given up before it ran */

void
sft_auth_queue_remove(sft_auth_queue_t *q, sft_auth_qnode_t *n)
{
    sft_auth_qnode_t  **pp;

    if (n->source == NULL) {
        return;
    }

    for (pp = &n->source->first; *pp; pp = &(*pp)->next) {
        if (*pp == n) {
            sft_auth_queue_unlink(q, pp);
            return;
        }
    }
}
