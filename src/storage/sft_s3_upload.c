/*
 * sft_s3_upload.c -- an object streamed to S3 from buffer pool chunks:
 * writes placed into whole parts held by the worker's FIFO of parts
 * gathering chunks, full parts sent as UploadPart (retried from the held
 * chunks), the commit as PutObject or CompleteMultipartUpload, an append
 * as UploadPartCopy of the old bytes (or, below 5 MiB, a GET of them into
 * the first part), any failure or abort ending in AbortMultipartUpload.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_asm.h>
#include <sft_s3_upload.h>

#include <openssl/evp.h>


typedef enum {
    SFT_S3_PART_FREE = 0,
    SFT_S3_PART_GATHER,                  /* waits for its chunks */
    SFT_S3_PART_FILL,                    /* holds them, takes bytes */
    SFT_S3_PART_READY,                   /* full, waits for the upload id */
    SFT_S3_PART_SEND                     /* an UploadPart runs or waits */
} sft_s3_part_state_e;


struct sft_s3_part_s {
    sft_s3_uploader_t     *up;
    sft_uint_t             index;        /* among the new parts, 0-based */
    off_t                  start;
    size_t                 size;
    size_t                 len;          /* what is sent */
    u_char               **chunk;
    sft_uint_t             need;
    sft_uint_t             held;
    sft_uint_t             reserved;     /* need, once the pool lent it */
    sft_uint_t             queued;
    sft_s3_request_t      *r;
    sft_event_t            retry;
    sft_uint_t             attempts;
    uint32_t               crc;
    u_char                 md5[16];
    sft_s3_part_t         *next;         /* in the gathering queue */
    sft_uint_t             state;
};


typedef struct {
    sft_uint_t             number;
    sft_str_t              etag;
    uint32_t               crc;
    off_t                  len;
    unsigned               checksum:1;
} sft_s3_part_done_t;


static sft_int_t sft_s3_upload_keep(sft_pool_t *pool, sft_str_t *s);
static void sft_s3_upload_geometry(sft_s3_uploader_t *up, sft_uint_t index,
    off_t *start, size_t *size);
static sft_uint_t sft_s3_upload_part_of(sft_s3_uploader_t *up, off_t off);
static sft_s3_part_t *sft_s3_upload_part(sft_s3_uploader_t *up,
    sft_uint_t index);
static sft_s3_part_t *sft_s3_upload_part_by(sft_s3_uploader_t *up,
    sft_s3_request_t *r);
static sft_int_t sft_s3_upload_hold(sft_s3_uploader_t *up, sft_uint_t index);
static sft_int_t sft_s3_upload_place(sft_s3_uploader_t *up,
    sft_s3_write_t *w);
static void sft_s3_upload_copy_in(sft_s3_uploader_t *up, sft_s3_part_t *p,
    off_t rel, u_char *buf, size_t n);
static void sft_s3_upload_load(sft_s3_uploader_t *up);
static sft_int_t sft_s3_upload_loaded(sft_s3_request_t *r, u_char *buf,
    size_t n);
static void sft_s3_upload_load_done(sft_s3_request_t *r);
static sft_int_t sft_s3_upload_commit_now(sft_s3_uploader_t *up);
static sft_str_t *sft_s3_upload_source(sft_s3_uploader_t *up);
static void sft_s3_upload_range(sft_s3_uploader_t *up, off_t from, off_t to);
static void sft_s3_upload_advance(sft_s3_uploader_t *up);
static void sft_s3_upload_ready(sft_s3_part_t *p);
static void sft_s3_upload_wake(sft_event_t *ev);
static void sft_s3_upload_roomy(sft_s3_uploader_t *up);
static void sft_s3_gather(void);
static sft_int_t sft_s3_gather_reserve(sft_s3_part_t *p, size_t max);
static sft_s3_part_t *sft_s3_gather_spared(size_t max);
static void sft_s3_gather_handler(sft_event_t *ev);
static sft_uint_t sft_s3_upload_spared(sft_s3_part_t *p);
static void sft_s3_upload_unspare(sft_s3_uploader_t *up);
static void sft_s3_upload_release(sft_s3_part_t *p);
static sft_s3_request_t *sft_s3_upload_request(sft_s3_uploader_t *up,
    const char *method, sft_s3_handler_pt on_done);
static sft_int_t sft_s3_upload_query(sft_s3_request_t *r, sft_str_t *id,
    sft_uint_t number);
static void sft_s3_upload_create(sft_s3_uploader_t *up);
static void sft_s3_upload_created(sft_s3_request_t *r);
static void sft_s3_upload_copy_next(sft_s3_uploader_t *up);
static void sft_s3_upload_copied(sft_s3_request_t *r);
static void sft_s3_upload_send(sft_s3_part_t *p);
static void sft_s3_upload_stream(sft_s3_part_t *p, sft_s3_request_t *r);
static sft_int_t sft_s3_upload_checksum(sft_s3_uploader_t *up,
    sft_s3_request_t *r, uint32_t crc, u_char *md5);
static void sft_s3_upload_feed(sft_s3_part_t *p);
static void sft_s3_upload_sent(sft_s3_request_t *r);
static void sft_s3_upload_part_done(sft_s3_request_t *r);
static void sft_s3_upload_part_retry(sft_event_t *ev);
static sft_uint_t sft_s3_upload_retryable(sft_s3_request_t *r);
static sft_int_t sft_s3_upload_done_part(sft_s3_uploader_t *up,
    sft_uint_t number, sft_str_t *etag, uint32_t crc, off_t len,
    sft_uint_t checksum);
static sft_s3_request_t *sft_s3_upload_put(sft_s3_uploader_t *up);
static void sft_s3_upload_final(sft_s3_uploader_t *up,
    sft_s3_request_t *r);
static void sft_s3_upload_check(sft_s3_uploader_t *up);
static void sft_s3_upload_probe(sft_s3_uploader_t *up);
static void sft_s3_upload_probed(sft_s3_request_t *r);
static sft_s3_request_t *sft_s3_upload_complete(sft_s3_uploader_t *up);
static void sft_s3_upload_completed(sft_s3_request_t *r);
static void sft_s3_upload_verify(sft_s3_uploader_t *up);
static void sft_s3_upload_verified(sft_s3_request_t *r);
static void sft_s3_upload_restamp(sft_s3_uploader_t *up);
static void sft_s3_upload_restamped(sft_s3_request_t *r);
static void sft_s3_upload_finish(sft_s3_uploader_t *up, sft_int_t rc);
static void sft_s3_upload_fail(sft_s3_uploader_t *up, sft_uint_t err,
    const char *why);
static void sft_s3_upload_refused(sft_s3_uploader_t *up,
    sft_s3_request_t *r, const char *op);
static void sft_s3_upload_stop(sft_s3_uploader_t *up);
static void sft_s3_upload_free(sft_s3_uploader_t *up);
static void sft_s3_abort_start(sft_s3_client_t *cl, sft_str_t *key,
    sft_str_t *id);
static void sft_s3_abort_created(sft_s3_request_t *r);
static void sft_s3_abort_done(sft_s3_request_t *r);
static void sft_s3_crc_base64(uint32_t crc, u_char *buf, sft_str_t *out);


/*
 * The worker's parts gathering chunks, first come first served: the
 * head reserves its chunks in the pool (one cap for the parts of all
 * workers), then takes them.
 */

static sft_s3_part_t        *sft_s3_gathering;
static sft_s3_part_t       **sft_s3_gathering_tail = &sft_s3_gathering;
static sft_event_t           sft_s3_gather_event;
static sft_buffer_waiter_t   sft_s3_gather_waiter;
static sft_buffer_waiter_t   sft_s3_reserve_waiter;


sft_int_t
sft_s3_upload_open(sft_s3_upload_conf_t *conf, sft_log_t *log,
    sft_s3_uploader_t **out)
{
    sft_pool_t         *pool;
    sft_s3_uploader_t  *up;

    *out = NULL;

    if (conf->part_size == 0) {
        conf->part_size = SFT_S3_PART_MIN;
    }

    if (conf->parts_in_flight == 0) {
        conf->parts_in_flight = 2;
    }

    if (conf->client == NULL || conf->key.len == 0
        || conf->part_size < SFT_S3_PART_MIN
        || (off_t) conf->part_size > SFT_S3_PART_MAX
        || conf->parts_in_flight > SFT_S3_IN_FLIGHT_MAX
        || conf->append_size < 0 || conf->append_size > SFT_S3_OBJECT_MAX
        || sft_buffer_chunk_size() == 0)
    {
        return SFT_ERROR;
    }

    pool = sft_create_pool(4096, log);
    if (pool == NULL) {
        return SFT_ERROR;
    }

    up = sft_pcalloc(pool, sizeof(sft_s3_uploader_t));
    if (up == NULL) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    up->conf = *conf;
    up->pool = pool;
    up->log = log;
    up->chunk_size = sft_buffer_chunk_size();
    up->base = conf->append_size;
    up->end = up->base;
    up->waiting_tail = &up->waiting;
    up->wake.handler = sft_s3_upload_wake;
    up->wake.data = up;
    up->wake.log = log;

    up->parts = sft_pcalloc(pool, conf->parts_in_flight
                                  * sizeof(sft_s3_part_t));

    if (sft_s3_upload_keep(pool, &up->conf.key) != SFT_OK
        || sft_s3_upload_keep(pool, &up->conf.copy_source) != SFT_OK
        || sft_s3_upload_keep(pool, &up->conf.copy_source_etag) != SFT_OK
        || sft_s3_upload_keep(pool, &up->conf.content_type) != SFT_OK
        || up->parts == NULL
        || sft_array_init(&up->done, pool, 16, sizeof(sft_s3_part_done_t))
           != SFT_OK)
    {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    *out = up;

    if (conf->append_size == 0) {
        return SFT_OK;
    }

    if (conf->append_size < (off_t) SFT_S3_PART_MIN) {

        /* too small for a part of its own: read into the first one */

        up->base = 0;
        up->end = 0;
        up->loading = 1;

        return sft_s3_upload_hold(up, 0) == SFT_OK ? SFT_OK : SFT_ERROR;
    }

    /*
     * the old bytes as copies all alike, of at most copy_part_size, and
     * of 5 MiB at least (all but the last part of an upload must be)
     */

    if (up->conf.copy_part_size < (off_t) SFT_S3_PART_MIN
        || up->conf.copy_part_size > SFT_S3_PART_MAX)
    {
        up->conf.copy_part_size = SFT_S3_PART_MAX;
    }

    up->copies = (sft_uint_t) sft_min((conf->append_size
                                       + up->conf.copy_part_size - 1)
                                      / up->conf.copy_part_size,
                                      conf->append_size
                                      / (off_t) SFT_S3_PART_MIN);
    up->multipart = 1;
    sft_s3_upload_create(up);

    return up->failed ? SFT_ERROR : SFT_OK;
}


/* a string of the caller's, in the upload's own pool from now on */

static sft_int_t
sft_s3_upload_keep(sft_pool_t *pool, sft_str_t *s)
{
    if (s->len == 0) {
        s->data = NULL;
        return SFT_OK;
    }

    s->data = sft_pstrdup(pool, s);

    return s->data ? SFT_OK : SFT_ERROR;
}


/*
 * Part sizes: part_size, doubled every SFT_S3_PARTS_GROW parts, at most
 * 5 GiB; 10,000 parts of them reach past S3's 5 TiB.
 */

static void
sft_s3_upload_geometry(sft_s3_uploader_t *up, sft_uint_t index, off_t *start,
    size_t *size)
{
    off_t       s, sz;
    sft_uint_t  g, n;

    s = up->base;
    sz = (off_t) up->conf.part_size;

    for (g = 0; ; g++) {
        n = sft_min(index, SFT_S3_PARTS_GROW);

        if (index < SFT_S3_PARTS_GROW) {
            s += (off_t) n * sz;
            break;
        }

        s += (off_t) n * sz;
        index -= n;
        sz = sft_min(2 * sz, SFT_S3_PART_MAX);
    }

    *start = s;
    *size = (size_t) sz;
}


static sft_uint_t
sft_s3_upload_part_of(sft_s3_uploader_t *up, off_t off)
{
    off_t       rel, sz;
    sft_uint_t  index;

    rel = off - up->base;
    sz = (off_t) up->conf.part_size;
    index = 0;

    while (rel >= SFT_S3_PARTS_GROW * sz && index < SFT_S3_PARTS_MAX) {
        rel -= SFT_S3_PARTS_GROW * sz;
        index += SFT_S3_PARTS_GROW;
        sz = sft_min(2 * sz, SFT_S3_PART_MAX);
    }

    return index + (sft_uint_t) (rel / sz);
}


static sft_s3_part_t *
sft_s3_upload_part(sft_s3_uploader_t *up, sft_uint_t index)
{
    sft_uint_t  i;

    for (i = 0; i < up->conf.parts_in_flight; i++) {
        if (up->parts[i].state != SFT_S3_PART_FREE
            && up->parts[i].index == index)
        {
            return &up->parts[i];
        }
    }

    return NULL;
}


sft_int_t
sft_s3_upload_write(sft_s3_uploader_t *up, sft_s3_write_t *w)
{
    off_t       last;
    sft_uint_t  i, merges;

    if (up->failed || up->committing || up->commit_wanted || up->aborted) {
        return SFT_ERROR;
    }

    if (w->len == 0) {
        return SFT_OK;
    }

    if (w->offset < up->conf.append_size || w->offset > SFT_S3_OBJECT_MAX
        || (off_t) w->len > SFT_S3_OBJECT_MAX - w->offset)
    {
        up->err = w->offset < up->conf.append_size ? SFT_S3_UPLOAD_BEHIND
                                                   : SFT_S3_UPLOAD_BEYOND;
        return SFT_DECLINED;
    }

    last = w->offset + (off_t) w->len - 1;

    if (sft_s3_upload_part_of(up, w->offset) < up->unsent) {
        up->err = SFT_S3_UPLOAD_BEHIND;
        return SFT_DECLINED;
    }

    if (sft_s3_upload_part_of(up, last)
        >= up->unsent + up->conf.parts_in_flight
        || sft_s3_upload_part_of(up, last) + up->copies >= SFT_S3_PARTS_MAX)
    {
        up->err = SFT_S3_UPLOAD_BEYOND;
        return SFT_DECLINED;
    }

    /* one more piece ahead of a gap must fit in the list (and the old
       bytes a load brings) */

    if (w->offset > up->end
        && up->nranges >= (sft_uint_t) (SFT_S3_UPLOAD_RANGES - up->loading))
    {
        merges = 0;

        for (i = 0; i < up->nranges; i++) {
            merges += w->offset <= up->ranges[i][1]
                      && last + 1 >= up->ranges[i][0];
        }

        if (merges == 0) {
            up->err = SFT_S3_UPLOAD_BEYOND;
            return SFT_DECLINED;
        }
    }

    if (up->waiting == NULL && sft_s3_upload_place(up, w) == SFT_OK) {
        return up->failed ? SFT_ERROR : SFT_OK;
    }

    if (up->failed) {
        return SFT_ERROR;
    }

    w->next = NULL;
    *up->waiting_tail = w;
    up->waiting_tail = &w->next;

    return SFT_AGAIN;
}


size_t
sft_s3_upload_room(sft_s3_uploader_t *up, off_t offset, size_t len,
    sft_event_t *wake)
{
    off_t           at;
    size_t          n, k;
    sft_uint_t      last;
    sft_s3_part_t  *p;

    up->room_wake = NULL;

    if (wake == NULL || len == 0 || up->failed || up->committing
        || up->commit_wanted || up->aborted
        || offset < up->conf.append_size || offset > SFT_S3_OBJECT_MAX
        || (off_t) len > SFT_S3_OBJECT_MAX - offset)
    {
        return len;
    }

    last = sft_s3_upload_part_of(up, offset + (off_t) len - 1);

    if (sft_s3_upload_part_of(up, offset) < up->unsent
        || last >= up->unsent + up->conf.parts_in_flight
        || sft_s3_upload_hold(up, last) == SFT_ERROR)
    {
        return len;                 /* the write says why */
    }

    for (n = 0, at = offset; n < len; n += k, at += (off_t) k) {
        p = sft_s3_upload_part(up, sft_s3_upload_part_of(up, at));

        if (p == NULL || p->state != SFT_S3_PART_FILL) {
            break;
        }

        k = sft_min(len - n, (size_t) (p->start + (off_t) p->size - at));
    }

    if (n == len || (n && up->conf.parts_in_flight == 1)) {
        return len;
    }

    /*
     * A write that runs from the contiguous end over the last part
     * holding its chunks into one that cannot be held yet (its clients'
     * write size does not divide the part size): taken whole, so that
     * the part it completes goes out and gives its reservation back,
     * which is what the next part waits for; the rest waits in the
     * uploader, in the writer's one chunk, for which the part keeps one
     * chunk of its reservation (sft_s3_gather()).  Refused, it would
     * hold that part forever, and parts so held in every upload stop
     * them all.
     */

    if (n && offset <= up->end) {
        return len;
    }

    up->room_wake = wake;

    return n;
}


/* a writer told there was no room may ask again */

static void
sft_s3_upload_roomy(sft_s3_uploader_t *up)
{
    if (up->room_wake && !up->aborted) {
        sft_post_event(up->room_wake);
    }

    up->room_wake = NULL;
}


/* as much of w as the held parts take; SFT_AGAIN with w moved on */

static sft_int_t
sft_s3_upload_place(sft_s3_uploader_t *up, sft_s3_write_t *w)
{
    off_t           rel;
    size_t          n;
    sft_uint_t      index;
    sft_s3_part_t  *p;

    while (w->len) {
        index = sft_s3_upload_part_of(up, w->offset);

        if (sft_s3_upload_hold(up, index) != SFT_OK) {
            return SFT_AGAIN;
        }

        p = sft_s3_upload_part(up, index);

        if (p == NULL || p->state != SFT_S3_PART_FILL) {
            return SFT_AGAIN;
        }

        rel = w->offset - p->start;
        n = sft_min(w->len, p->size - (size_t) rel);

        sft_s3_upload_copy_in(up, p, rel, w->buf, n);
        sft_s3_upload_range(up, w->offset, w->offset + (off_t) n);

        w->offset += n;
        w->buf += n;
        w->len -= n;

        sft_s3_upload_advance(up);

        if (up->failed) {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


/* n bytes at rel in p's chunks */

static void
sft_s3_upload_copy_in(sft_s3_uploader_t *up, sft_s3_part_t *p, off_t rel,
    u_char *buf, size_t n)
{
    size_t  k, at;

    for (k = 0; k < n; k += at) {
        at = sft_min(n - k, up->chunk_size
                            - (size_t) (rel + k) % up->chunk_size);
        sft_memcpy(p->chunk[(rel + k) / up->chunk_size]
                   + (rel + k) % up->chunk_size, buf + k, at);
    }
}


/*
 * A small append: once the first part holds its chunks, a GET of the old
 * bytes straight into them.  The writes go on meanwhile, past the old
 * bytes; they join the old bytes when the GET is over.
 */

static void
sft_s3_upload_load(sft_s3_uploader_t *up)
{
    sft_str_t          range;
    sft_s3_part_t     *p;
    sft_s3_request_t  *r;

    p = sft_s3_upload_part(up, 0);

    if (up->load || p == NULL || p->state != SFT_S3_PART_FILL) {
        return;
    }

    r = sft_s3_request_create(up->conf.client);
    if (r == NULL) {
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
        return;
    }

    sft_str_set(&r->method, "GET");
    r->key = *sft_s3_upload_source(up);
    r->headers = sft_pcalloc(r->pool, 8 * sizeof(sft_s3_pair_t));
    range.data = sft_pnalloc(r->pool, 64);
    r->idempotent = 1;
    r->on_data = sft_s3_upload_loaded;
    r->on_done = sft_s3_upload_load_done;
    r->data = up;

    if (r->headers == NULL || range.data == NULL) {
        sft_s3_request_free(r);
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
        return;
    }

    range.len = sft_slprintf(range.data, range.data + 64, "bytes=0-%lld",
                             (long long) up->conf.append_size - 1)
                - range.data;

    if (sft_s3_object_header(r, "Range", &range) != SFT_OK
        || sft_s3_request_start(r) != SFT_OK)
    {
        sft_s3_request_free(r);
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
        return;
    }

    up->load = r;
    up->loaded = 0;
}


/* a piece of the old bytes (a 2xx's body), where the ones before end */

static sft_int_t
sft_s3_upload_loaded(sft_s3_request_t *r, u_char *buf, size_t n)
{
    off_t               at;
    sft_s3_uploader_t  *up = r->data;

    at = r->delivered;

    if ((off_t) n > up->conf.append_size - at) {
        return SFT_ERROR;
    }

    /* a 206 of other bytes than the range asked is refused */

    if (at == 0 && r->status == 206
        && !sft_s3_request_range_is(r, 0, up->conf.append_size - 1,
                                    up->conf.append_size))
    {
        r->refused = "not the Content-Range asked";
        return SFT_ERROR;
    }

    sft_s3_upload_copy_in(up, sft_s3_upload_part(up, 0), at, buf, n);
    up->loaded = at + (off_t) n;

    return SFT_OK;
}


static void
sft_s3_upload_load_done(sft_s3_request_t *r)
{
    sft_int_t           rc;
    sft_s3_uploader_t  *up = r->data;

    up->load = NULL;

    rc = (r->rc == SFT_OK && (r->status == 200 || r->status == 206)
          && up->loaded == up->conf.append_size) ? SFT_OK : SFT_ERROR;

    sft_s3_request_free(r);

    if (rc != SFT_OK) {
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED,
                           "the GET of the old bytes failed");
        return;
    }

    up->loading = 0;
    sft_s3_upload_range(up, 0, up->conf.append_size);
    sft_s3_upload_advance(up);

    if (up->failed) {
        return;
    }

    if (up->waiting) {
        sft_post_event(&up->wake);
    }

    if (up->commit_wanted
        && sft_s3_upload_commit_now(up) == SFT_DECLINED)
    {
        up->committing = 1;
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_HOLE, "bytes are missing");
    }
}


/* the key the old bytes come from */

static sft_str_t *
sft_s3_upload_source(sft_s3_uploader_t *up)
{
    return up->conf.copy_source.len ? &up->conf.copy_source : &up->conf.key;
}


/* the parts up to index held or gathering, as the free slots allow */

static sft_int_t
sft_s3_upload_hold(sft_s3_uploader_t *up, sft_uint_t index)
{
    sft_uint_t      i;
    sft_s3_part_t  *p;

    while (up->next_part <= index) {
        p = NULL;

        for (i = 0; i < up->conf.parts_in_flight; i++) {
            if (up->parts[i].state == SFT_S3_PART_FREE) {
                p = &up->parts[i];
                break;
            }
        }

        if (p == NULL) {
            return SFT_AGAIN;
        }

        sft_memzero(p, sizeof(sft_s3_part_t));
        p->up = up;
        p->index = up->next_part;
        sft_s3_upload_geometry(up, p->index, &p->start, &p->size);
        p->len = p->size;
        p->need = (p->size + up->chunk_size - 1) / up->chunk_size;
        p->chunk = sft_alloc(p->need * sizeof(u_char *), up->log);

        if (p->chunk == NULL) {
            sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
            return SFT_ERROR;
        }

        p->retry.handler = sft_s3_upload_part_retry;
        p->retry.data = p;
        p->retry.log = up->log;
        p->state = SFT_S3_PART_GATHER;

        up->next_part++;

        *sft_s3_gathering_tail = p;
        sft_s3_gathering_tail = &p->next;

        sft_s3_gather();
    }

    return SFT_OK;
}


/*
 * The head of the queue reserves all the chunks it needs, then takes
 * them.  The reservations of all workers' parts stay within all but an
 * eighth of the pool (the rest carries the bytes of transfers into
 * them), and a part that alone needs more (grown past that) reserves
 * only while no other part holds any: so parts whose chunks are all
 * lent always fill, whatever the number of workers.
 *
 * A write that runs from a part into the next (room() takes it whole)
 * waits for the next part in the writer's chunk, outside the part it
 * completed; held so by many uploads at once, such chunks took the
 * eighth, and the parts that would take them waited for chunks for
 * ever.  So that chunk is reserved too: the completed part, given back,
 * keeps one chunk of its reservation while a write waits in its upload
 * (the upload's spare), and the part the write waits for takes the
 * spare as one of the chunks it reserves (the write's chunk goes back
 * once that part holds its own).  Only while the completed part goes
 * out, which needs no chunk, is the write's chunk held beyond every
 * reservation.  A part that a spare comes with and that can reserve
 * behind a head that cannot goes first.
 *
 * Why nothing waits for ever: a spare is kept by a part that reserved
 * its chunks alongside every spare kept before, so the spares and the
 * part of the last one fitted in the cap together, and once the parts
 * that fill have gone out, that upload's next part (of the same size)
 * reserves with its spare, first if need be.  The chunks held beyond
 * the reservations are only those of writes whose part is on its way
 * out, so a part that reserved gets its chunks, and a transfer into a
 * part that holds them its one.  A part grown past the cap gives its
 * upload's spare back before it asks alone (and waits, as before, while
 * others are reserved); at the first part of twice the size (every
 * SFT_S3_PARTS_GROW parts) the spare may not be enough.
 */

static void
sft_s3_gather(void)
{
    u_char             *c;
    size_t              max;
    sft_s3_part_t      *p;
    sft_s3_uploader_t  *up;

    sft_s3_gather_waiter.event = &sft_s3_gather_event;
    sft_s3_reserve_waiter.event = &sft_s3_gather_event;
    sft_s3_gather_event.handler = sft_s3_gather_handler;
    sft_s3_gather_event.log = sft_cycle->log;

    max = sft_s3_upload_chunks_max(sft_buffer_total());

    while ((p = sft_s3_gathering) != NULL) {

        if (p->reserved == 0
            && sft_s3_gather_reserve(p, max) != SFT_OK
            && (p = sft_s3_gather_spared(max)) == NULL)
        {
            return;                     /* a release anywhere calls again */
        }

        up = p->up;

        while (p->held < p->need) {
            c = sft_buffer_get(&sft_s3_gather_waiter);
            if (c == NULL) {
                return;
            }

            p->chunk[p->held++] = c;
            up->chunks++;
            up->chunks_peak = sft_max(up->chunks_peak, up->chunks);
        }

        sft_s3_gathering = p->next;

        if (sft_s3_gathering == NULL) {
            sft_s3_gathering_tail = &sft_s3_gathering;
        }

        p->next = NULL;
        p->state = SFT_S3_PART_FILL;

        sft_post_event(&up->wake);
        sft_s3_upload_roomy(up);
    }
}


/* p's chunks reserved, the spare of the write that waits for p among them */

static sft_int_t
sft_s3_gather_reserve(sft_s3_part_t *p, size_t max)
{
    size_t              n;
    sft_s3_uploader_t  *up;

    up = p->up;

    if (up->spare && p->need > max) {
        sft_s3_upload_unspare(up);      /* it reserves alone */
    }

    n = p->need - sft_s3_upload_spared(p);

    if (n && sft_buffer_reserve(&sft_s3_reserve_waiter, n, max) != SFT_OK) {
        return SFT_AGAIN;
    }

    up->spare -= p->need - n;
    p->reserved = p->need;

    return SFT_OK;
}


/*
 * The head cannot reserve: the first part behind it that a spare comes
 * with and that can, to the head, or NULL.
 */

static sft_s3_part_t *
sft_s3_gather_spared(size_t max)
{
    sft_s3_part_t  *p, **pp;

    for (pp = &sft_s3_gathering->next; *pp; pp = &(*pp)->next) {
        p = *pp;

        if (sft_s3_upload_spared(p) == 0 || p->need > max
            || sft_s3_gather_reserve(p, max) != SFT_OK)
        {
            continue;
        }

        *pp = p->next;

        if (*pp == NULL) {
            sft_s3_gathering_tail = pp;
        }

        p->next = sft_s3_gathering;
        sft_s3_gathering = p;

        return p;
    }

    return NULL;
}


/* the spare p takes: the one of the write that waits for p */

static sft_uint_t
sft_s3_upload_spared(sft_s3_part_t *p)
{
    sft_s3_uploader_t  *up = p->up;

    if (up->spare && up->waiting
        && sft_s3_upload_part_of(up, up->waiting->offset) == p->index)
    {
        return up->spare;
    }

    return 0;
}


/* no write waits any more (or the upload stops): the spare goes back */

static void
sft_s3_upload_unspare(sft_s3_uploader_t *up)
{
    if (up->spare) {
        sft_buffer_unreserve(up->spare);
        up->spare = 0;
    }
}


static void
sft_s3_gather_handler(sft_event_t *ev)
{
    (void) ev;

    sft_s3_gather();
}


/* [from, to) was written: kept in the sorted list of pieces past end */

static void
sft_s3_upload_range(sft_s3_uploader_t *up, off_t from, off_t to)
{
    sft_uint_t  i, j;

    if (to <= up->end) {
        return;
    }

    from = sft_max(from, up->end);

    for (i = 0; i < up->nranges && up->ranges[i][1] < from; i++) {
        /* void */
    }

    if (i == up->nranges || up->ranges[i][0] > to) {
        /* a piece of its own (write() made sure it fits) */

        if (up->nranges == SFT_S3_UPLOAD_RANGES) {
            return;
        }

        memmove(&up->ranges[i + 1], &up->ranges[i],
                    (up->nranges - i) * sizeof(up->ranges[0]));
        up->ranges[i][0] = from;
        up->ranges[i][1] = to;
        up->nranges++;
        return;
    }

    up->ranges[i][0] = sft_min(up->ranges[i][0], from);
    up->ranges[i][1] = sft_max(up->ranges[i][1], to);

    /* the pieces it now reaches are merged into it */

    for (j = i + 1; j < up->nranges && up->ranges[j][0] <= up->ranges[i][1];
         j++)
    {
        up->ranges[i][1] = sft_max(up->ranges[i][1], up->ranges[j][1]);
    }

    memmove(&up->ranges[i + 1], &up->ranges[j],
                (up->nranges - j) * sizeof(up->ranges[0]));
    up->nranges -= j - i - 1;
}


/* end moves over the pieces that now touch it; full parts go out */

static void
sft_s3_upload_advance(sft_s3_uploader_t *up)
{
    sft_s3_part_t  *p;

    if (up->nranges && up->ranges[0][0] <= up->end) {
        up->end = sft_max(up->end, up->ranges[0][1]);
        up->nranges--;
        memmove(&up->ranges[0], &up->ranges[1],
                    up->nranges * sizeof(up->ranges[0]));
    }

    for ( ;; ) {
        p = sft_s3_upload_part(up, up->unsent);

        if (p == NULL || p->state != SFT_S3_PART_FILL
            || up->end < p->start + (off_t) p->size)
        {
            return;
        }

        sft_s3_upload_ready(p);

        if (up->failed) {
            return;
        }
    }
}


/* a part is complete: its checksum, then out once the upload id is known */

static void
sft_s3_upload_ready(sft_s3_part_t *p)
{
    size_t              k, n;
    EVP_MD_CTX         *md;
    sft_s3_uploader_t  *up;

    up = p->up;
    up->unsent = p->index + 1;
    p->state = SFT_S3_PART_READY;
    p->crc = 0;
    md = NULL;

    if (up->conf.checksum == SFT_S3_CHECKSUM_MD5) {
        md = EVP_MD_CTX_new();
        if (md == NULL || EVP_DigestInit_ex(md, EVP_md5(), NULL) != 1) {
            EVP_MD_CTX_free(md);
            sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no MD5");
            return;
        }
    }

    for (k = 0; k < p->len; k += n) {
        n = sft_min(p->len - k, up->chunk_size);
        p->crc = sft_crc32c(p->crc, p->chunk[k / up->chunk_size], n);

        if (md) {
            (void) EVP_DigestUpdate(md, p->chunk[k / up->chunk_size], n);
        }
    }

    if (md) {
        (void) EVP_DigestFinal_ex(md, p->md5, NULL);
        EVP_MD_CTX_free(md);
    }

    if (!up->multipart) {
        if (up->committing) {
            return;                         /* PutObject takes it */
        }

        up->multipart = 1;
        sft_s3_upload_create(up);
        return;
    }

    if (up->upload_id.len) {
        sft_s3_upload_send(p);
    }
}


static void
sft_s3_upload_wake(sft_event_t *ev)
{
    sft_int_t           rc;
    sft_s3_write_t     *w;
    sft_s3_uploader_t  *up;

    up = ev->data;
    up->busy++;

    if (up->loading) {
        sft_s3_upload_load(up);
    }

    while ((w = up->waiting) != NULL && !up->aborted && !up->failed) {
        rc = sft_s3_upload_place(up, w);

        if (rc == SFT_AGAIN || up->failed) {
            break;                      /* a failure told every writer */
        }

        up->waiting = w->next;

        if (up->waiting == NULL) {
            up->waiting_tail = &up->waiting;
        }

        up->conf.on_write(w, SFT_OK);
    }

    if (up->waiting == NULL) {
        sft_s3_upload_unspare(up);
    }

    up->busy--;

    if (up->aborted && up->busy == 0) {
        sft_s3_upload_free(up);
    }
}


/* a part no longer needed: its chunks back, out of the queue */

static void
sft_s3_upload_release(sft_s3_part_t *p)
{
    sft_uint_t       i;
    sft_s3_part_t  **pp;

    if (p->state == SFT_S3_PART_FREE) {
        return;
    }

    if (p->state == SFT_S3_PART_GATHER) {
        for (pp = &sft_s3_gathering; *pp; pp = &(*pp)->next) {
            if (*pp == p) {
                *pp = p->next;
                break;
            }
        }

        sft_s3_gathering_tail = &sft_s3_gathering;
        while (*sft_s3_gathering_tail) {
            sft_s3_gathering_tail = &(*sft_s3_gathering_tail)->next;
        }

        /* a chunk taken for the waiter goes to the next part, which
           asks for its own reservation */

        sft_buffer_cancel(&sft_s3_gather_waiter);
        sft_buffer_cancel(&sft_s3_reserve_waiter);
    }

    if (p->r) {
        sft_s3_request_free(p->r);
        p->r = NULL;
    }

    if (p->retry.timer_set) {
        sft_del_timer(&p->retry);
    }

    for (i = 0; i < p->held; i++) {
        sft_buffer_put(p->chunk[i]);
    }

    p->up->chunks -= p->held;
    p->held = 0;

    /* a write waits in the upload: one chunk stays reserved for it */

    if (p->reserved && p->up->spare == 0 && p->up->waiting
        && !p->up->failed && !p->up->aborted)
    {
        p->up->spare = 1;
        p->reserved--;
    }

    if (p->reserved) {
        sft_buffer_unreserve(p->reserved);
        p->reserved = 0;
    }

    sft_free(p->chunk);
    p->chunk = NULL;
    p->state = SFT_S3_PART_FREE;

    /* a slot free: a writer waiting for the next part asks again */

    sft_s3_upload_roomy(p->up);

    if (sft_s3_gathering) {
        sft_s3_gather();
    }
}


/* a request on the upload's key, everything it needs in its own pool */

static sft_s3_request_t *
sft_s3_upload_request(sft_s3_uploader_t *up, const char *method,
    sft_s3_handler_pt on_done)
{
    sft_s3_request_t  *r;

    r = sft_s3_request_create(up->conf.client);
    if (r == NULL) {
        return NULL;
    }

    r->method.data = (u_char *) method;
    r->method.len = sft_strlen(method);
    r->key.len = up->conf.key.len;
    r->key.data = sft_pstrdup(r->pool, &up->conf.key);
    r->headers = sft_pcalloc(r->pool, SFT_S3_OBJECT_HEADERS
                                      * sizeof(sft_s3_pair_t));
    r->query = sft_pcalloc(r->pool, 2 * sizeof(sft_s3_pair_t));
    r->on_done = on_done;
    r->data = up;
    r->idempotent = 1;

    if (r->key.data == NULL || r->headers == NULL || r->query == NULL) {
        sft_s3_request_free(r);
        return NULL;
    }

    return r;
}


sft_int_t
sft_s3_object_header(sft_s3_request_t *r, const char *name, sft_str_t *value)
{
    sft_s3_pair_t  *h;

    if (r->nheaders == SFT_S3_OBJECT_HEADERS) {
        return SFT_ERROR;
    }

    h = &r->headers[r->nheaders++];
    h->name.data = (u_char *) name;
    h->name.len = sft_strlen(name);
    h->value.len = value->len;
    h->value.data = sft_pstrdup(r->pool, value);

    return (h->value.data || value->len == 0) ? SFT_OK : SFT_ERROR;
}


/* ?uploadId=ID[&partNumber=N] */

static sft_int_t
sft_s3_upload_query(sft_s3_request_t *r, sft_str_t *id, sft_uint_t number)
{
    u_char  *p;

    sft_str_set(&r->query[0].name, "uploadId");
    r->query[0].value.len = id->len;
    r->query[0].value.data = sft_pstrdup(r->pool, id);
    r->nquery = 1;

    if (number == 0) {
        return r->query[0].value.data ? SFT_OK : SFT_ERROR;
    }

    p = sft_pnalloc(r->pool, 24);
    if (p == NULL || r->query[0].value.data == NULL) {
        return SFT_ERROR;
    }

    sft_str_set(&r->query[1].name, "partNumber");
    r->query[1].value.data = p;
    r->query[1].value.len = sft_slprintf(p, p + 24, "%lu",
                                         (unsigned long) number) - p;
    r->nquery = 2;

    return SFT_OK;
}


/* storage class, encryption, metadata: on the new object */

sft_int_t
sft_s3_object_headers(sft_s3_upload_conf_t *uc, sft_s3_request_t *r,
    uint32_t *crc)
{
    u_char     buf[24];
    sft_str_t  v;

    if (uc->storage_class.len
        && sft_s3_object_header(r, "x-amz-storage-class",
                                &uc->storage_class) != SFT_OK)
    {
        return SFT_ERROR;
    }

    if (uc->sse != SFT_S3_SSE_NONE) {
        if (uc->sse == SFT_S3_SSE_KMS) {
            sft_str_set(&v, "aws:kms");

        } else {
            sft_str_set(&v, "AES256");
        }

        if (sft_s3_object_header(r, "x-amz-server-side-encryption", &v)
            != SFT_OK
            || (uc->sse == SFT_S3_SSE_KMS && uc->kms_key_id.len
                && sft_s3_object_header(r,
                       "x-amz-server-side-encryption-aws-kms-key-id",
                       &uc->kms_key_id) != SFT_OK))
        {
            return SFT_ERROR;
        }
    }

    if (uc->mtime > 0) {
        v.data = buf;
        v.len = sft_slprintf(buf, buf + sizeof(buf), "%lld",
                             (long long) uc->mtime) - buf;

        if (sft_s3_object_header(r, "x-amz-meta-mtime", &v) != SFT_OK) {
            return SFT_ERROR;
        }
    }

    if (uc->content_type.len
        && sft_s3_object_header(r, "Content-Type", &uc->content_type)
           != SFT_OK)
    {
        return SFT_ERROR;
    }

    if (crc) {
        v.data = buf;
        v.len = sft_slprintf(buf, buf + sizeof(buf), "%08x",
                             (unsigned) *crc) - buf;

        if (sft_s3_object_header(r, "x-amz-meta-crc32c", &v) != SFT_OK) {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


/*
 * r, a PUT of uc's key, made a CopyObject of source (NULL: the object
 * itself) with the metadata of uc and crc instead of the source's, and
 * only while the source's ETag is etag (when given).
 */

sft_int_t
sft_s3_object_restamp(sft_s3_upload_conf_t *uc, sft_s3_request_t *r,
    sft_str_t *source, uint32_t *crc, sft_str_t *etag)
{
    sft_str_t  v;

    if (sft_s3_copy_source(r, source ? source : &r->key, &v) != SFT_OK
        || sft_s3_object_header(r, "x-amz-copy-source", &v) != SFT_OK)
    {
        return SFT_ERROR;
    }

    sft_str_set(&v, "REPLACE");

    if (sft_s3_object_header(r, "x-amz-metadata-directive", &v) != SFT_OK
        || (etag && etag->len
            && sft_s3_object_header(r, "x-amz-copy-source-if-match", etag)
               != SFT_OK))
    {
        return SFT_ERROR;
    }

    /* the copy's own checksum, as the original's */

    sft_str_set(&v, "CRC32C");

    if (uc->checksum == SFT_S3_CHECKSUM_CRC32C
        && sft_s3_object_header(r, "x-amz-checksum-algorithm", &v) != SFT_OK)
    {
        return SFT_ERROR;
    }

    return sft_s3_object_headers(uc, r, crc);
}


static void
sft_s3_upload_create(sft_s3_uploader_t *up)
{
    sft_str_t          v, type;
    sft_s3_request_t  *r;

    r = sft_s3_upload_request(up, "POST", sft_s3_upload_created);

    if (r == NULL) {
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
        return;
    }

    sft_str_set(&r->query[0].name, "uploads");
    r->nquery = 1;
    sft_str_set(&v, "CRC32C");
    sft_str_set(&type, "FULL_OBJECT");

    /* S3 keeps the whole object's CRC-32C, combined from the parts' */

    if (sft_s3_object_headers(&up->conf, r, NULL) != SFT_OK
        || (up->conf.checksum == SFT_S3_CHECKSUM_CRC32C
            && (sft_s3_object_header(r, "x-amz-checksum-algorithm", &v)
                != SFT_OK
                || sft_s3_object_header(r, "x-amz-checksum-type", &type)
                   != SFT_OK))
        || sft_s3_request_start(r) != SFT_OK)
    {
        sft_s3_request_free(r);
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
        return;
    }

    up->control = r;
    up->creating = 1;
}


static void
sft_s3_upload_created(sft_s3_request_t *r)
{
    sft_uint_t          i;
    sft_s3_error_t      err;
    sft_s3_uploader_t  *up;

    up = r->data;
    up->control = NULL;
    up->creating = 0;

    if (r->rc != SFT_OK || r->status != 200
        || sft_s3_xml_initiate(r->response.data, r->response.len, up->pool,
                               &up->upload_id, &err) != SFT_OK)
    {
        sft_s3_upload_refused(up, r, "CreateMultipartUpload");
        return;
    }

    sft_s3_request_free(r);

    for (i = 0; i < up->conf.parts_in_flight && !up->failed; i++) {
        if (up->parts[i].state == SFT_S3_PART_READY) {
            sft_s3_upload_send(&up->parts[i]);
        }
    }

    sft_s3_upload_copy_next(up);
    sft_s3_upload_check(up);
}


/* UploadPartCopy of the old bytes, parts_in_flight at a time */

static void
sft_s3_upload_copy_next(sft_s3_uploader_t *up)
{
    off_t              per, from, to;
    sft_str_t          v, range;
    sft_uint_t         i, number;
    sft_s3_request_t  *r;

    if (up->copies == 0) {
        return;
    }

    per = (up->conf.append_size + up->copies - 1) / up->copies;

    for (i = 0; i < up->conf.parts_in_flight && !up->failed; i++) {
        if (up->copying[i] || up->copies_started == up->copies) {
            continue;
        }

        number = up->copies_started + 1;
        from = (off_t) (number - 1) * per;
        to = sft_min(from + per, up->conf.append_size) - 1;

        r = sft_s3_upload_request(up, "PUT", sft_s3_upload_copied);
        if (r == NULL) {
            sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
            return;
        }

        /* /bucket/key, the key URI-encoded, and the range */

        range.data = sft_pnalloc(r->pool, 64);

        if (range.data == NULL
            || sft_s3_copy_source(r, sft_s3_upload_source(up), &v)
               != SFT_OK)
        {
            sft_s3_request_free(r);
            sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
            return;
        }

        range.len = sft_slprintf(range.data, range.data + 64,
                                 "bytes=%lld-%lld", (long long) from,
                                 (long long) to) - range.data;

        if (sft_s3_object_header(r, "x-amz-copy-source", &v) != SFT_OK
            || sft_s3_object_header(r, "x-amz-copy-source-range", &range)
               != SFT_OK
            || (up->conf.copy_source_etag.len
                && sft_s3_object_header(r, "x-amz-copy-source-if-match",
                                        &up->conf.copy_source_etag)
                   != SFT_OK)
            || sft_s3_upload_query(r, &up->upload_id, number) != SFT_OK
            || sft_s3_request_start(r) != SFT_OK)
        {
            sft_s3_request_free(r);
            sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
            return;
        }

        up->copying[i] = r;
        up->copies_started++;
    }
}


static void
sft_s3_upload_copied(sft_s3_request_t *r)
{
    off_t               per, len;
    sft_uint_t          i, number;
    sft_s3_error_t      err;
    sft_s3_result_t     res;
    sft_s3_uploader_t  *up;

    up = r->data;

    for (i = 0; i < up->conf.parts_in_flight; i++) {
        if (up->copying[i] == r) {
            up->copying[i] = NULL;
        }
    }

    number = sft_atoi(r->query[1].value.data, r->query[1].value.len);
    per = (up->conf.append_size + up->copies - 1) / up->copies;
    len = sft_min(per, up->conf.append_size - (off_t) (number - 1) * per);

    if (r->rc != SFT_OK || r->status != 200
        || sft_s3_xml_result(r->response.data, r->response.len, r->pool,
                             &res, &err) != SFT_OK
        || res.etag.len == 0
        || sft_s3_upload_done_part(up, number, &res.etag, 0, len, 0)
           != SFT_OK)
    {
        sft_s3_upload_refused(up, r, "UploadPartCopy");
        return;
    }

    sft_s3_request_free(r);

    up->copies_done++;

    sft_s3_upload_copy_next(up);
    sft_s3_upload_check(up);
}


/* UploadPart from the held chunks: queued as the request takes them */

static void
sft_s3_upload_send(sft_s3_part_t *p)
{
    sft_s3_request_t   *r;
    sft_s3_uploader_t  *up;

    up = p->up;

    r = sft_s3_upload_request(up, "PUT", sft_s3_upload_part_done);
    if (r == NULL) {
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
        return;
    }

    if (sft_s3_upload_checksum(up, r, p->crc, p->md5) != SFT_OK
        || sft_s3_upload_query(r, &up->upload_id, up->copies + p->index + 1)
           != SFT_OK)
    {
        sft_s3_request_free(r);
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
        return;
    }

    p->attempts++;
    sft_s3_upload_stream(p, r);

    if (sft_s3_request_start(r) != SFT_OK) {
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
        return;
    }

    up->sending++;
}


/* the part's chunks as r's streamed body, not replayed by the request layer */

static void
sft_s3_upload_stream(sft_s3_part_t *p, sft_s3_request_t *r)
{
    r->streamed = 1;
    r->idempotent = 0;
    r->body_length = (off_t) p->len;
    r->on_sent = sft_s3_upload_sent;

    p->r = r;
    p->queued = 0;
    p->state = SFT_S3_PART_SEND;

    sft_s3_upload_feed(p);
}


/* x-amz-checksum-crc32c or Content-MD5, as configured */

static sft_int_t
sft_s3_upload_checksum(sft_s3_uploader_t *up, sft_s3_request_t *r,
    uint32_t crc, u_char *md5)
{
    u_char     buf[32];
    sft_str_t  v;

    if (up->conf.checksum == SFT_S3_CHECKSUM_CRC32C) {
        sft_s3_crc_base64(crc, buf, &v);
        return sft_s3_object_header(r, "x-amz-checksum-crc32c", &v);
    }

    if (up->conf.checksum == SFT_S3_CHECKSUM_MD5 && md5) {
        v.data = buf;
        v.len = (size_t) EVP_EncodeBlock(buf, md5, 16);
        return sft_s3_object_header(r, "Content-MD5", &v);
    }

    return SFT_OK;
}


static void
sft_s3_upload_feed(sft_s3_part_t *p)
{
    size_t              off, n;
    sft_s3_uploader_t  *up;

    up = p->up;

    for ( ;; ) {
        off = p->queued * up->chunk_size;

        if (off >= p->len) {
            (void) sft_s3_request_send(p->r, NULL, 0);
            return;
        }

        n = sft_min(p->len - off, up->chunk_size);

        if (sft_s3_request_send(p->r, p->chunk[p->queued], n) != SFT_OK) {
            return;
        }

        p->queued++;
    }
}


/* the part whose request r is */

static sft_s3_part_t *
sft_s3_upload_part_by(sft_s3_uploader_t *up, sft_s3_request_t *r)
{
    sft_uint_t  i;

    for (i = 0; i < up->conf.parts_in_flight; i++) {
        if (up->parts[i].r == r) {
            return &up->parts[i];
        }
    }

    return NULL;
}


static void
sft_s3_upload_sent(sft_s3_request_t *r)
{
    sft_s3_part_t  *p;

    p = sft_s3_upload_part_by(r->data, r);

    if (p) {
        sft_s3_upload_feed(p);
    }
}


static void
sft_s3_upload_part_done(sft_s3_request_t *r)
{
    sft_s3_part_t      *p;
    sft_s3_uploader_t  *up;

    up = r->data;
    p = sft_s3_upload_part_by(up, r);
    p->r = NULL;
    up->sending--;

    if (r->rc == SFT_OK && r->status == 200 && r->etag.len) {
        if (sft_s3_upload_done_part(up, up->copies + p->index + 1, &r->etag,
                                    p->crc, (off_t) p->len,
                                    up->conf.checksum
                                    == SFT_S3_CHECKSUM_CRC32C)
            != SFT_OK)
        {
            sft_s3_request_free(r);
            sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
            return;
        }

        sft_s3_request_free(r);
        sft_s3_upload_release(p);

        if (up->waiting) {
            sft_post_event(&up->wake);
        }

        sft_s3_upload_check(up);
        return;
    }

    if (sft_s3_upload_retryable(r)
        && p->attempts <= up->conf.client->retries)
    {
        sft_log_error(SFT_LOG_INFO, up->log, 0,
                      "S3 UploadPart %lu of \"%.*s\": status %ld, again from "
                      "the held chunks",
                      (unsigned long) (up->copies + p->index + 1),
                      SFT_STR_FMT(&up->conf.key), r->status);

        sft_s3_request_free(r);
        sft_add_timer(&p->retry, sft_s3_client_backoff(up->conf.client,
                                                       p->attempts));
        return;
    }

    sft_s3_upload_refused(up, r, "UploadPart");
}


static void
sft_s3_upload_part_retry(sft_event_t *ev)
{
    sft_s3_upload_send(ev->data);
}


static sft_uint_t
sft_s3_upload_retryable(sft_s3_request_t *r)
{
    return r->rc != SFT_OK || r->status == 429 || r->status >= 500;
}


static sft_int_t
sft_s3_upload_done_part(sft_s3_uploader_t *up, sft_uint_t number,
    sft_str_t *etag, uint32_t crc, off_t len, sft_uint_t checksum)
{
    sft_s3_part_done_t  *d;

    d = sft_array_push(&up->done);
    if (d == NULL) {
        return SFT_ERROR;
    }

    d->number = number;
    d->etag.len = etag->len;
    d->etag.data = sft_pstrdup(up->pool, etag);
    d->crc = crc;
    d->len = len;
    d->checksum = checksum;

    return d->etag.data ? SFT_OK : SFT_ERROR;
}


sft_int_t
sft_s3_upload_commit(sft_s3_uploader_t *up)
{
    if (up->failed || up->committing || up->commit_wanted || up->aborted
        || up->waiting)
    {
        return SFT_ERROR;
    }

    if (up->loading) {
        up->commit_wanted = 1;              /* once the old bytes are in */
        return SFT_OK;
    }

    return sft_s3_upload_commit_now(up);
}


static sft_int_t
sft_s3_upload_commit_now(sft_s3_uploader_t *up)
{
    sft_uint_t      i;
    sft_s3_part_t  *p;

    if (up->nranges) {
        up->err = SFT_S3_UPLOAD_HOLE;
        return SFT_DECLINED;
    }

    up->committing = 1;
    up->size = up->end;

    /* reserved parts past the end go back; the one it ends in is last */

    for (i = 0; i < up->conf.parts_in_flight; i++) {
        p = &up->parts[i];

        if (p->state != SFT_S3_PART_GATHER && p->state != SFT_S3_PART_FILL) {
            continue;
        }

        if (p->start >= up->end) {
            sft_s3_upload_release(p);
            continue;
        }

        p->len = (size_t) (up->end - p->start);
        sft_s3_upload_ready(p);

        if (up->failed) {
            return SFT_OK;
        }
    }

    if (!up->multipart) {
        sft_s3_upload_final(up, sft_s3_upload_put(up));
        return SFT_OK;
    }

    sft_s3_upload_check(up);

    return SFT_OK;
}


/* an object smaller than a part: one PutObject */

static sft_s3_request_t *
sft_s3_upload_put(sft_s3_uploader_t *up)
{
    sft_s3_part_t      *p;
    sft_s3_request_t   *r;

    p = sft_s3_upload_part(up, 0);

    up->crc32c = p ? p->crc : 0;
    up->crc32c_known = 1;

    r = sft_s3_upload_request(up, "PUT", sft_s3_upload_completed);
    if (r == NULL) {
        return NULL;
    }

    if (sft_s3_object_headers(&up->conf, r, &up->crc32c) != SFT_OK
        || sft_s3_upload_checksum(up, r, up->crc32c, p ? p->md5 : NULL)
           != SFT_OK)
    {
        sft_s3_request_free(r);
        return NULL;
    }

    if (p) {
        sft_s3_upload_stream(p, r);
    }

    return r;
}


/* PutObject or CompleteMultipartUpload, no-clobber if asked, started */

static void
sft_s3_upload_final(sft_s3_uploader_t *up, sft_s3_request_t *r)
{
    sft_str_t       v;
    sft_s3_part_t  *p;

    sft_str_set(&v, "*");

    if (r == NULL) {
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
        return;
    }

    if ((up->conf.no_clobber
         && sft_s3_object_header(r, "If-None-Match", &v) != SFT_OK)
        || sft_s3_request_start(r) != SFT_OK)
    {
        p = sft_s3_upload_part_by(up, r);

        if (p) {
            p->r = NULL;
        }

        sft_s3_request_free(r);
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
        return;
    }

    up->control = r;
    up->completing = 1;
}


/* every part acknowledged: complete */

static void
sft_s3_upload_check(sft_s3_uploader_t *up)
{
    sft_uint_t  i;

    if (!up->committing || up->completing || up->failed
        || up->upload_id.len == 0 || up->copies_done < up->copies)
    {
        return;
    }

    for (i = 0; i < up->conf.parts_in_flight; i++) {
        if (up->parts[i].state != SFT_S3_PART_FREE) {
            return;
        }
    }

    if (up->conf.no_clobber && !up->probed) {
        sft_s3_upload_probe(up);
        return;
    }

    sft_s3_upload_final(up, sft_s3_upload_complete(up));
}


/*
 * No-clobber of a multipart upload: a HEAD of the name before the
 * CompleteMultipartUpload, whose If-None-Match not every server keeps
 * (Ceph RGW 16 replaces the object); a name taken meanwhile is "the
 * name exists", as a 412 is.
 */

static void
sft_s3_upload_probe(sft_s3_uploader_t *up)
{
    sft_s3_request_t  *r;

    r = sft_s3_upload_request(up, "HEAD", sft_s3_upload_probed);

    if (r && sft_s3_request_start(r) == SFT_OK) {
        up->control = r;
        up->completing = 1;             /* no second check meanwhile */
        return;
    }

    if (r) {
        sft_s3_request_free(r);
    }

    sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, "no memory");
}


static void
sft_s3_upload_probed(sft_s3_request_t *r)
{
    sft_s3_uploader_t  *up;

    up = r->data;
    up->control = NULL;
    up->completing = 0;
    up->probed = 1;

    if (r->rc == SFT_OK && r->status == 404) {
        sft_s3_request_free(r);
        sft_s3_upload_check(up);
        return;
    }

    if (r->rc == SFT_OK && r->status == 200) {
        sft_s3_request_free(r);
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_EXISTS, "the name exists");
        return;
    }

    sft_s3_upload_refused(up, r, "HeadObject");
}


static int
sft_s3_part_cmp(const void *a, const void *b)
{
    const sft_s3_part_done_t  *x = a, *y = b;

    return (x->number > y->number) - (x->number < y->number);
}


static sft_s3_request_t *
sft_s3_upload_complete(sft_s3_uploader_t *up)
{
    u_char              *p, b64[16];
    size_t               len;
    uint32_t             whole;
    sft_str_t            v, type;
    sft_uint_t           i;
    sft_s3_request_t    *r;
    sft_s3_part_done_t  *d;

    d = up->done.elts;
    qsort(d, up->done.nelts, sizeof(sft_s3_part_done_t), sft_s3_part_cmp);

    /* the whole object's CRC-32C, from its new parts' and the old one's */

    whole = 0;
    up->crc32c_known = up->copies == 0 || up->conf.append_crc32c_known;

    for (i = 0; i < up->done.nelts; i++) {
        if (d[i].number > up->copies) {
            whole = sft_crc32c_combine(whole, d[i].crc, (uint64_t) d[i].len);
        }
    }

    up->crc32c = up->copies ? sft_crc32c_combine(up->conf.append_crc32c,
                                                 whole,
                                                 (uint64_t) (up->end
                                                             - up->base))
                            : whole;

    len = sizeof("<CompleteMultipartUpload></CompleteMultipartUpload>");

    for (i = 0; i < up->done.nelts; i++) {
        len += sizeof("<Part><PartNumber></PartNumber><ETag></ETag>"
                      "<ChecksumCRC32C></ChecksumCRC32C></Part>")
               + 24 + d[i].etag.len + 8;
    }

    r = sft_s3_upload_request(up, "POST", sft_s3_upload_completed);
    if (r == NULL) {
        return NULL;
    }

    r->body.data = sft_pnalloc(r->pool, len);

    if (r->body.data == NULL
        || sft_s3_upload_query(r, &up->upload_id, 0) != SFT_OK)
    {
        sft_s3_request_free(r);
        return NULL;
    }

    p = sft_cpymem(r->body.data, "<CompleteMultipartUpload>",
                   sizeof("<CompleteMultipartUpload>") - 1);

    for (i = 0; i < up->done.nelts; i++) {
        p = sft_slprintf(p, r->body.data + len,
                         "<Part><PartNumber>%lu</PartNumber>"
                         "<ETag>%.*s</ETag>", (unsigned long) d[i].number,
                         SFT_STR_FMT(&d[i].etag));

        if (d[i].checksum) {
            sft_s3_crc_base64(d[i].crc, b64, &v);
            p = sft_slprintf(p, r->body.data + len,
                             "<ChecksumCRC32C>%.*s</ChecksumCRC32C>",
                             SFT_STR_FMT(&v));
        }

        p = sft_cpymem(p, "</Part>", sizeof("</Part>") - 1);
    }

    p = sft_cpymem(p, "</CompleteMultipartUpload>",
                   sizeof("</CompleteMultipartUpload>") - 1);
    r->body.len = p - r->body.data;

    /* the whole object's, for S3 to check against its own */

    if (up->conf.checksum == SFT_S3_CHECKSUM_CRC32C && up->crc32c_known) {
        sft_s3_crc_base64(up->crc32c, b64, &v);
        sft_str_set(&type, "FULL_OBJECT");

        if (sft_s3_object_header(r, "x-amz-checksum-crc32c", &v) != SFT_OK
            || sft_s3_object_header(r, "x-amz-checksum-type", &type)
               != SFT_OK)
        {
            sft_s3_request_free(r);
            return NULL;
        }
    }

    return r;
}


/* PutObject's or CompleteMultipartUpload's answer */

static void
sft_s3_upload_completed(sft_s3_request_t *r)
{
    sft_int_t           rc;
    sft_s3_part_t      *p;
    sft_s3_error_t      err;
    sft_s3_result_t     res;
    sft_s3_uploader_t  *up;

    up = r->data;
    up->control = NULL;

    p = sft_s3_upload_part_by(up, r);

    if (p) {
        p->r = NULL;
    }


    if (r->rc == SFT_OK && r->status == 412) {
        sft_s3_request_free(r);
        sft_s3_upload_fail(up, SFT_S3_UPLOAD_EXISTS, "the name exists");
        return;
    }

    rc = SFT_ERROR;

    if (r->rc == SFT_OK && r->status == 200) {
        if (!up->multipart) {
            rc = SFT_OK;
            up->etag.len = r->etag.len;
            up->etag.data = sft_pstrdup(up->pool, &r->etag);

        } else {
            /* a 200 with an <Error> body failed late */

            rc = sft_s3_xml_result(r->response.data, r->response.len,
                                   up->pool, &res, &err);
            up->etag = res.etag;

            if (rc == SFT_DECLINED) {
                r->error = err;                 /* its code for the line */
            }
        }
    }

    if (rc != SFT_OK) {
        sft_s3_upload_refused(up, r, up->multipart ? "CompleteMultipartUpload"
                                                   : "PutObject");
        return;
    }

    sft_s3_request_free(r);

    /* an empty object's PutObject had no part */

    if (!up->multipart && (p = sft_s3_upload_part(up, 0)) != NULL) {
        sft_s3_upload_release(p);
    }

    up->upload_id.len = 0;

    if (up->multipart && up->restamp) {
        sft_s3_upload_restamp(up);
        return;
    }

    if (up->multipart && up->crc32c_known) {
        sft_s3_upload_verify(up);
        return;
    }

    up->finished = 1;

    sft_s3_upload_finish(up, SFT_OK);
}


/*
 * A multipart object's CRC-32C: S3 keeps it as the full-object checksum
 * asked for at the creation, where it does (AWS); where it does not, or
 * keeps another (Ceph, moto without its CRC-32C module), it is kept in
 * the metadata by a copy.
 */

static void
sft_s3_upload_verify(sft_s3_uploader_t *up)
{
    sft_str_t          v;
    sft_s3_request_t  *r;

    sft_str_set(&v, "ENABLED");

    r = sft_s3_upload_request(up, "HEAD", sft_s3_upload_verified);

    if (r == NULL
        || sft_s3_object_header(r, "x-amz-checksum-mode", &v) != SFT_OK
        || sft_s3_request_start(r) != SFT_OK)
    {
        if (r) {
            sft_s3_request_free(r);
        }

        sft_s3_upload_restamp(up);
        return;
    }

    up->control = r;
}


static void
sft_s3_upload_verified(sft_s3_request_t *r)
{
    uint32_t            crc;
    sft_uint_t          kept;
    sft_s3_uploader_t  *up;

    up = r->data;
    up->control = NULL;

    kept = r->rc == SFT_OK && r->status == 200
           && sft_s3_request_crc32c(r, &crc) == SFT_OK
           && crc == up->crc32c;

    sft_s3_request_free(r);

    if (!kept) {
        sft_s3_upload_restamp(up);
        return;
    }

    up->finished = 1;
    sft_s3_upload_finish(up, SFT_OK);
}


/*
 * The multipart object copied onto itself with what its creation did not
 * have: its CRC-32C, a time set later; up to the 5 GiB of one copy.  The
 * object is there either way: a failure is logged, not the commit's.
 */

static void
sft_s3_upload_restamp(sft_s3_uploader_t *up)
{
    sft_s3_request_t  *r;

    r = NULL;

    if (up->size <= SFT_S3_PART_MAX) {
        r = sft_s3_upload_request(up, "PUT", sft_s3_upload_restamped);
    }

    if (r == NULL
        || sft_s3_object_restamp(&up->conf, r, NULL,
                                 up->crc32c_known ? &up->crc32c : NULL,
                                 &up->etag)
           != SFT_OK
        || sft_s3_request_start(r) != SFT_OK)
    {
        if (r) {
            sft_s3_request_free(r);
        }

        sft_log_error(up->size > SFT_S3_PART_MAX ? SFT_LOG_INFO
                                                 : SFT_LOG_ERR,
                      up->log, 0,
                      "S3 upload of \"%.*s\": its time and CRC-32C are "
                      "not kept: %s",
                      SFT_STR_FMT(&up->conf.key),
                      up->size > SFT_S3_PART_MAX
                      ? "an object over 5 GiB cannot be copied at once"
                      : "no memory");

        up->finished = 1;
        sft_s3_upload_finish(up, SFT_OK);
        return;
    }

    up->control = r;
}


static void
sft_s3_upload_restamped(sft_s3_request_t *r)
{
    sft_s3_error_t      err;
    sft_s3_result_t     res;
    sft_s3_uploader_t  *up;

    up = r->data;
    up->control = NULL;

    if (r->rc != SFT_OK || r->status != 200
        || sft_s3_xml_result(r->response.data, r->response.len, up->pool,
                             &res, &err)
           != SFT_OK)
    {
        sft_log_error(SFT_LOG_ERR, up->log, 0,
                      "S3 upload of \"%.*s\": its time and CRC-32C are "
                      "not kept: CopyObject answered status %ld",
                      SFT_STR_FMT(&up->conf.key), r->status);

    } else {
        up->etag = res.etag;
    }

    sft_s3_request_free(r);

    up->finished = 1;
    sft_s3_upload_finish(up, SFT_OK);
}


/*
 * The object's time, given before the commit: with the object as it is
 * created, or, when its multipart upload was created already, by a copy
 * after the commit.
 */

void
sft_s3_upload_mtime(sft_s3_uploader_t *up, time_t mtime)
{
    up->conf.mtime = mtime;

    if (up->multipart) {
        up->restamp = 1;
    }
}


static void
sft_s3_upload_finish(sft_s3_uploader_t *up, sft_int_t rc)
{
    up->busy++;
    up->conf.on_done(up, rc);
    up->busy--;

    if (up->aborted && up->busy == 0) {
        sft_s3_upload_free(up);
    }
}


/*
 * The upload failed: everything stops, the multipart upload is aborted,
 * the writes that wait end in an error, and a commit in on_done.
 */

static void
sft_s3_upload_fail(sft_s3_uploader_t *up, sft_uint_t err, const char *why)
{
    sft_s3_write_t  *w;

    if (up->failed) {
        return;
    }

    sft_log_error(SFT_LOG_ERR, up->log, 0, "S3 upload of \"%.*s\" failed: %s",
                  SFT_STR_FMT(&up->conf.key), why);

    up->failed = 1;
    up->err = err;

    sft_s3_upload_stop(up);
    sft_s3_upload_roomy(up);

    up->busy++;

    while ((w = up->waiting) != NULL && !up->aborted) {
        up->waiting = w->next;
        up->conf.on_write(w, SFT_ERROR);
    }

    up->waiting = NULL;
    up->waiting_tail = &up->waiting;

    if ((up->committing || up->commit_wanted) && !up->aborted) {
        up->conf.on_done(up, SFT_ERROR);
    }

    up->busy--;

    if (up->aborted && up->busy == 0) {
        sft_s3_upload_free(up);
    }
}


/*
 * A request given up fails the upload: its line says what S3 answered
 * (the status and the error code), or only the operation when nothing
 * answered (the request layer told why); the request is freed.
 */

static void
sft_s3_upload_refused(sft_s3_uploader_t *up, sft_s3_request_t *r,
    const char *op)
{
    u_char     why[128], *p;
    sft_str_t  code;

    if (r->rc == SFT_OK) {
        code = r->error.code;
        if (code.len == 0) {
            sft_str_set(&code, "-");
        }

        p = sft_slprintf(why, why + sizeof(why) - 1,
                         "%s answered status %ld, %.*s", op, r->status,
                         SFT_STR_FMT(&code));

    } else {
        p = sft_slprintf(why, why + sizeof(why) - 1, "%s failed", op);
    }

    *p = '\0';

    sft_s3_request_free(r);
    sft_s3_upload_fail(up, SFT_S3_UPLOAD_FAILED, (const char *) why);
}


/* requests cancelled, chunks back, the multipart upload aborted */

static void
sft_s3_upload_stop(sft_s3_uploader_t *up)
{
    sft_uint_t         i;
    sft_s3_part_t     *p;
    sft_s3_request_t  *r;

    for (i = 0; i < up->conf.parts_in_flight; i++) {
        p = &up->parts[i];

        if (p->r && up->control == p->r) {
            up->control = NULL;
        }

        sft_s3_upload_release(p);

        if (up->copying[i]) {
            sft_s3_request_free(up->copying[i]);
            up->copying[i] = NULL;
        }
    }

    if (up->load) {
        sft_s3_request_free(up->load);
        up->load = NULL;
    }

    if (up->wake.posted) {
        sft_delete_posted_event(&up->wake);
    }

    r = up->control;
    up->control = NULL;

    if (r && up->creating) {
        /* its id, when it comes, is aborted */
        r->on_done = sft_s3_abort_created;
        r->data = NULL;
        up->creating = 0;

    } else if (r) {
        sft_s3_request_free(r);
    }

    if (up->upload_id.len) {
        sft_s3_abort_start(up->conf.client, &up->conf.key, &up->upload_id);
        up->upload_id.len = 0;
    }

    sft_s3_upload_unspare(up);
}


void
sft_s3_upload_abort(sft_s3_uploader_t *up)
{
    if (up->aborted) {
        return;
    }

    up->aborted = 1;
    up->room_wake = NULL;

    if (!up->finished) {
        sft_s3_upload_stop(up);
    }

    if (up->busy == 0) {
        sft_s3_upload_free(up);
    }
}


static void
sft_s3_upload_free(sft_s3_uploader_t *up)
{
    sft_s3_upload_stop(up);
    sft_destroy_pool(up->pool);
}


/* AbortMultipartUpload on its own: a DELETE the request layer retries */

static void
sft_s3_abort_start(sft_s3_client_t *cl, sft_str_t *key, sft_str_t *id)
{
    sft_s3_request_t  *r;

    r = sft_s3_request_create(cl);
    if (r == NULL) {
        return;
    }

    sft_str_set(&r->method, "DELETE");
    r->key.len = key->len;
    r->key.data = sft_pstrdup(r->pool, key);
    r->query = sft_pcalloc(r->pool, 2 * sizeof(sft_s3_pair_t));
    r->idempotent = 1;
    r->on_done = sft_s3_abort_done;

    if (r->key.data == NULL || r->query == NULL
        || sft_s3_upload_query(r, id, 0) != SFT_OK
        || sft_s3_request_start(r) != SFT_OK)
    {
        sft_log_error(SFT_LOG_ERR, cl->log, 0,
                      "S3 AbortMultipartUpload of \"%.*s\" not sent",
                      SFT_STR_FMT(key));
        sft_s3_request_free(r);
    }
}


static void
sft_s3_abort_created(sft_s3_request_t *r)
{
    sft_str_t       id;
    sft_s3_error_t  err;

    if (r->rc == SFT_OK && r->status == 200
        && sft_s3_xml_initiate(r->response.data, r->response.len, r->pool,
                               &id, &err) == SFT_OK)
    {
        sft_s3_abort_start(r->client, &r->key, &id);
    }

    sft_s3_request_free(r);
}


static void
sft_s3_abort_done(sft_s3_request_t *r)
{
    if (r->rc != SFT_OK || (r->status != 204 && r->status != 404)) {
        sft_log_error(SFT_LOG_ERR, r->client->log, 0,
                      "S3 AbortMultipartUpload of \"%.*s\" failed: %ld",
                      SFT_STR_FMT(&r->key), r->status);
    }

    sft_s3_request_free(r);
}


/* S3's form of a CRC-32C: its 4 bytes big-endian, in base64 */

static void
sft_s3_crc_base64(uint32_t crc, u_char *buf, sft_str_t *out)
{
    u_char  b[4];

    b[0] = (u_char) (crc >> 24);
    b[1] = (u_char) (crc >> 16);
    b[2] = (u_char) (crc >> 8);
    b[3] = (u_char) crc;

    out->data = buf;
    out->len = (size_t) EVP_EncodeBlock(buf, b, 4);
}
