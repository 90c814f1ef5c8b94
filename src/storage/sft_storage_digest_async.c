/*
 * sft_storage_digest_async.c -- the storage digest of a file whose driver
 * does not block (s3): its own READ requests on the event loop, a few in
 * flight at increasing offsets into buffers of the digest (as the
 * transfer engine reads ahead), each chunk hashed on the loop as it comes
 * in order, a few chunks per turn of the loop, so that a large file never
 * holds the loop for long.  The owner's cancel flag, seen at each
 * completion and by a timer while the reads wait (S3 may be slow), stops
 * it: the reads still in flight are taken back from the driver (or
 * waited for), then the handler runs.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_storage_digest.h>


#define SFT_DIGEST_POLL  200     /* ms between looks at the cancel flag */


typedef struct {
    sft_storage_req_t      req;
    unsigned               reading:1;   /* issued, not completed */
    unsigned               ready:1;     /* completed, not hashed */
} sft_digest_read_t;


typedef struct {
    sft_storage_digest_t  *d;
    sft_digest_read_t      reads[SFT_DIGEST_READS];   /* a ring */
    sft_uint_t             head;        /* the read whose bytes come next */
    sft_uint_t             nreads;      /* reading or ready, from head */
    off_t                  next;        /* the offset of the next read */
    sft_event_t            ev;          /* the next turn, or the end */
    sft_event_t            poll;        /* the cancel flag's timer */
    unsigned               stopping:1;  /* no more reads, none hashed */
    unsigned               over:1;      /* the handler's turn */
} sft_digest_async_t;


static void sft_digest_async_issue(sft_digest_async_t *a);
static void sft_digest_async_read(sft_digest_read_t *rd);
static void sft_digest_async_pump(sft_digest_async_t *a);
static void sft_digest_async_read_done(sft_storage_req_t *req);
static void sft_digest_async_stop(sft_digest_async_t *a,
    sft_storage_err_t err, int sys_err);
static void sft_digest_async_event(sft_event_t *ev);
static void sft_digest_async_poll(sft_event_t *ev);


/*
 * SFT_AGAIN, the handler runs later (a stored digest, or a start at the
 * end of the file, too: posted); SFT_ERROR with d->err when the size or
 * the range fails, or BUSY without memory.
 */

sft_int_t
sft_storage_digest_async(sft_storage_digest_t *d, sft_pool_t *pool)
{
    u_char              *bufs;
    sft_int_t            rc;
    sft_uint_t           i;
    sft_storage_req_t    st;
    sft_digest_async_t  *a;

    a = sft_pcalloc(pool, sizeof(sft_digest_async_t));
    if (a == NULL) {
        d->err = SFT_STORAGE_BUSY;
        return SFT_ERROR;
    }

    sft_memzero(&st, sizeof(sft_storage_req_t));
    st.op = SFT_STORAGE_FSTAT;
    st.storage = d->file->storage;
    st.file = d->file;
    st.pool = pool;
    st.log = d->log;

    if (sft_storage_run(&st) != SFT_OK) {
        /* a driver that does not block answers an open file's at once */
        d->err = st.err == SFT_STORAGE_OK ? SFT_STORAGE_UNSUPPORTED : st.err;
        d->sys_err = st.sys_err;
        return SFT_ERROR;
    }

    rc = sft_storage_digest_begin(d, st.st.size);

    if (rc == SFT_ERROR) {
        return SFT_ERROR;
    }

    a->d = d;
    a->next = d->pos;
    a->ev.handler = sft_digest_async_event;
    a->ev.data = a;
    a->ev.log = d->log;
    a->poll.handler = sft_digest_async_poll;
    a->poll.data = a;
    a->poll.log = d->log;

    if (rc == SFT_DONE) {
        a->over = 1;
        sft_post_event(&a->ev);
        return SFT_AGAIN;
    }

    bufs = sft_pnalloc(pool, SFT_DIGEST_READS * SFT_DIGEST_CHUNK);
    if (bufs == NULL) {
        d->err = SFT_STORAGE_BUSY;
        sft_storage_digest_finish(d);
        return SFT_ERROR;
    }

    for (i = 0; i < SFT_DIGEST_READS; i++) {
        a->reads[i].req.op = SFT_STORAGE_READ;
        a->reads[i].req.storage = d->file->storage;
        a->reads[i].req.file = d->file;
        a->reads[i].req.pool = pool;
        a->reads[i].req.log = d->log;
        a->reads[i].req.buf = bufs + i * SFT_DIGEST_CHUNK;
        a->reads[i].req.handler = sft_digest_async_read_done;
        a->reads[i].req.data = a;
    }

    sft_digest_async_pump(a);

    return SFT_AGAIN;
}


/* reads into the free buffers, in order, up to the end of the range */

static void
sft_digest_async_issue(sft_digest_async_t *a)
{
    sft_digest_read_t     *rd;
    sft_storage_digest_t  *d = a->d;

    while (a->nreads < SFT_DIGEST_READS && a->next < d->last
           && !a->stopping)
    {
        rd = &a->reads[(a->head + a->nreads) % SFT_DIGEST_READS];

        rd->req.offset = a->next;
        rd->req.len = (size_t) sft_min((off_t) SFT_DIGEST_CHUNK,
                                       d->last - a->next);
        a->next += rd->req.len;
        a->nreads++;

        sft_digest_async_read(rd);
    }
}


static void
sft_digest_async_read(sft_digest_read_t *rd)
{
    rd->reading = 1;
    rd->ready = 0;

    if (sft_storage_run(&rd->req) != SFT_AGAIN) {
        /* at once: its bytes, or its error, as a completion's */
        rd->reading = 0;
        rd->ready = 1;
    }
}


/*
 * The chunks that came, in order, hashed; more reads issued as buffers
 * free.  A few chunks per turn: with more ready, the next turn is posted.
 */

static void
sft_digest_async_pump(sft_digest_async_t *a)
{
    sft_uint_t             n;
    sft_digest_read_t     *rd;
    sft_storage_digest_t  *d = a->d;

    if (d->cancel && atomic_load(d->cancel)) {
        sft_digest_async_stop(a, SFT_STORAGE_BUSY, 0);
        return;
    }

    for (n = 0; /* void */; n++) {

        sft_digest_async_issue(a);

        if (a->nreads == 0) {
            /* the range is hashed */
            sft_digest_async_stop(a, SFT_STORAGE_OK, 0);
            return;
        }

        rd = &a->reads[a->head];

        if (!rd->ready) {
            /* its completion comes back here */

            if (d->cancel && !a->poll.timer_set) {
                sft_add_timer(&a->poll, SFT_DIGEST_POLL);
            }

            return;
        }

        if (n == SFT_DIGEST_READS) {
            sft_post_event(&a->ev);
            return;
        }

        if (rd->req.err != SFT_STORAGE_OK) {
            sft_digest_async_stop(a, rd->req.err, rd->req.sys_err);
            return;
        }

        if (rd->req.nbytes == 0) {
            /* truncated meanwhile: the range is what was read */
            sft_digest_async_stop(a, SFT_STORAGE_OK, 0);
            return;
        }

        if (sft_storage_digest_update(d, rd->req.buf, rd->req.nbytes)
            != SFT_OK)
        {
            sft_digest_async_stop(a, d->err, 0);
            return;
        }

        rd->ready = 0;

        if ((size_t) rd->req.nbytes < rd->req.len) {
            /* short: the rest of its chunk, before the reads after it */
            rd->req.offset += rd->req.nbytes;
            rd->req.len -= rd->req.nbytes;
            sft_digest_async_read(rd);
            continue;
        }

        a->head = (a->head + 1) % SFT_DIGEST_READS;
        a->nreads--;
    }
}


static void
sft_digest_async_read_done(sft_storage_req_t *req)
{
    sft_uint_t           i;
    sft_digest_async_t  *a = req->data;

    for (i = 0; &a->reads[i].req != req; i++) {
        /* void */
    }

    a->reads[i].reading = 0;
    a->reads[i].ready = 1;

    if (!a->stopping) {
        sft_digest_async_pump(a);
        return;
    }

    sft_digest_async_stop(a, SFT_STORAGE_OK, 0);
}


/*
 * The end of the reading: the reads in flight taken back from the driver
 * (or, where it declines, waited for: it completes into the buffer that
 * is still there), then the digest finished and its handler posted.
 */

static void
sft_digest_async_stop(sft_digest_async_t *a, sft_storage_err_t err,
    int sys_err)
{
    sft_uint_t             i, reading;
    sft_storage_digest_t  *d = a->d;

    if (!a->stopping) {
        a->stopping = 1;

        if (d->err == SFT_STORAGE_OK) {
            d->err = err;
            d->sys_err = sys_err;
        }
    }

    reading = 0;

    for (i = 0; i < SFT_DIGEST_READS; i++) {
        if (a->reads[i].reading) {
            if (sft_storage_cancel(&a->reads[i].req) == SFT_OK) {
                a->reads[i].reading = 0;

            } else {
                reading++;
            }
        }
    }

    if (reading || a->over) {
        return;
    }

    a->over = 1;
    sft_storage_digest_finish(d);

    if (a->poll.timer_set) {
        sft_del_timer(&a->poll);
    }

    if (a->ev.posted) {
        sft_delete_posted_event(&a->ev);
    }

    sft_post_event(&a->ev);
}


static void
sft_digest_async_event(sft_event_t *ev)
{
    sft_digest_async_t  *a = ev->data;

    if (a->over) {
        sft_storage_digest_complete(a->d);
        return;
    }

    if (!a->stopping) {
        sft_digest_async_pump(a);
    }
}


/* reads wait: has the owner gone meanwhile */

static void
sft_digest_async_poll(sft_event_t *ev)
{
    sft_digest_async_t  *a = ev->data;

    if (a->stopping) {
        return;
    }

    if (atomic_load(a->d->cancel)) {
        sft_digest_async_stop(a, SFT_STORAGE_BUSY, 0);
        return;
    }

    sft_add_timer(&a->poll, SFT_DIGEST_POLL);
}
