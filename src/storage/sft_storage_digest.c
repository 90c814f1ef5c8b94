/*
 * sft_storage_digest.c -- digests of a range of an open storage file: on
 * a thread of the worker's pool, a chunk at a time through the driver's
 * read operation into one bounded buffer, with OpenSSL EVP, the IEEE
 * CRC-32 (its one table here) or the CRC-32C of the asm kernel, unless
 * the driver keeps the whole file's digest (the only one had from a
 * driver that does not block); stopped between chunks when the owner
 * cancels, completed on the event loop.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_storage_digest.h>
#include <sft_asm.h>

#include <openssl/evp.h>


typedef struct {
    EVP_MD_CTX            *md;          /* NULL: a CRC */
    uint32_t               crc;
} sft_digest_state_t;


static sft_int_t sft_storage_digest_kept(sft_storage_digest_t *d,
    sft_pool_t *pool);
static void sft_storage_digest_thread(void *data, sft_log_t *log);
static void sft_storage_digest_done(sft_event_t *ev);
static void sft_storage_digest_req(sft_storage_digest_t *d,
    sft_storage_req_t *req, sft_storage_op_t op);
static sft_int_t sft_storage_digest_stored(sft_storage_digest_t *d,
    size_t size, off_t end);
static sft_int_t sft_storage_digest_range(sft_storage_digest_t *d,
    off_t offset, off_t len, u_char *out);
static sft_int_t sft_digest_init(sft_storage_digest_t *d,
    sft_digest_state_t *ds);
static sft_int_t sft_digest_update(sft_storage_digest_t *d,
    sft_digest_state_t *ds, const u_char *p, size_t len);
static sft_int_t sft_digest_final(sft_storage_digest_t *d,
    sft_digest_state_t *ds, u_char *out);
static const EVP_MD *sft_digest_md(sft_digest_algo_t algo);
static void sft_crc32_init(void);


static uint32_t        sft_crc32_table[256];
static pthread_once_t  sft_crc32_once = PTHREAD_ONCE_INIT;


/*
 * Starts the digest on the thread pool: SFT_AGAIN, the handler runs
 * later; or SFT_ERROR with d->err: UNSUPPORTED without a thread pool or,
 * on a driver whose reads do not block (they cannot run on a thread),
 * for all but the whole file's digest it keeps; BUSY when the memory or
 * the pool's queue is exhausted.
 */

sft_int_t
sft_storage_digest(sft_storage_digest_t *d, sft_pool_t *pool,
    sft_thread_pool_t *tp)
{
    sft_thread_task_t  *task;

    d->err = SFT_STORAGE_OK;
    d->sys_err = 0;
    d->done = 0;
    d->out_len = 0;

    if (d->file->storage && !d->file->storage->driver->blocking) {
        return sft_storage_digest_kept(d, pool);
    }

    if (tp == NULL || d->file->storage == NULL
        || d->file->storage->driver->ops[SFT_STORAGE_READ] == NULL)
    {
        d->err = SFT_STORAGE_UNSUPPORTED;
        return SFT_ERROR;
    }

    d->buf = sft_pnalloc(pool, SFT_DIGEST_CHUNK);
    task = sft_thread_task_alloc(pool, 0);

    if (d->buf == NULL || task == NULL) {
        d->err = SFT_STORAGE_BUSY;
        return SFT_ERROR;
    }

    task->ctx = d;
    task->handler = sft_storage_digest_thread;
    task->event.handler = sft_storage_digest_done;
    task->event.data = d;
    task->event.log = d->log;

    if (sft_thread_task_post(tp, task) != SFT_OK) {
        d->err = SFT_STORAGE_BUSY;
        return SFT_ERROR;
    }

    return SFT_AGAIN;
}


/*
 * A driver that does not block: the digest it keeps with the whole file,
 * answered at once, its handler posted; else UNSUPPORTED.
 */

static sft_int_t
sft_storage_digest_kept(sft_storage_digest_t *d, sft_pool_t *pool)
{
    off_t               size;
    sft_event_t        *ev;
    sft_storage_req_t   req;

    sft_storage_digest_req(d, &req, SFT_STORAGE_FSTAT);

    if (sft_storage_run(&req) != SFT_OK) {
        d->err = req.err;
        return SFT_ERROR;
    }

    size = req.st.size;

    if (d->block > 0 || d->start != 0 || (d->end >= 0 && d->end < size)
        || sft_storage_digest_size(d->algo) > d->out_size
        || sft_storage_digest_stored(d, sft_storage_digest_size(d->algo),
                                     size)
           != SFT_OK)
    {
        d->err = SFT_STORAGE_UNSUPPORTED;
        return SFT_ERROR;
    }

    ev = sft_pcalloc(pool, sizeof(sft_event_t));
    if (ev == NULL) {
        d->err = SFT_STORAGE_BUSY;
        return SFT_ERROR;
    }

    ev->handler = sft_storage_digest_done;
    ev->data = d;
    ev->log = d->log;

    sft_post_event(ev);

    return SFT_AGAIN;
}


static void
sft_storage_digest_thread(void *data, sft_log_t *log)
{
    (void) log;

    sft_storage_digest_run(data);
}


static void
sft_storage_digest_done(sft_event_t *ev)
{
    sft_storage_digest_t  *d = ev->data;

    d->handler(d);
}


/*
 * The digest itself, synchronously (a thread's, or a test's, which sets
 * d->buf): the size of the file, the range, then one digest of it or one
 * per block.
 */

void
sft_storage_digest_run(sft_storage_digest_t *d)
{
    off_t               end, off, n;
    size_t              size;
    sft_storage_req_t   req;

    d->err = SFT_STORAGE_OK;
    d->done = 0;
    d->out_len = 0;

    sft_storage_digest_req(d, &req, SFT_STORAGE_FSTAT);

    if (sft_storage_run(&req) != SFT_OK) {
        d->err = req.err;
        d->sys_err = req.sys_err;
        return;
    }

    if (d->start < 0 || d->start > req.st.size) {
        d->err = SFT_STORAGE_INVALID;
        return;
    }

    end = req.st.size;

    if (d->end >= 0 && d->end < end) {
        end = sft_max(d->end, d->start);
    }

    size = sft_storage_digest_size(d->algo);

    if (d->block <= 0) {
        if (size > d->out_size) {
            d->err = SFT_STORAGE_INVALID;
            return;
        }

        if (d->start == 0 && end == req.st.size
            && sft_storage_digest_stored(d, size, end) == SFT_OK)
        {
            return;
        }

        if (sft_storage_digest_range(d, d->start, end - d->start, d->out)
            == SFT_OK)
        {
            d->out_len = size;
        }

        return;
    }

    /* the number of blocks is bounded by the room for their digests */

    n = (end - d->start + d->block - 1) / d->block;

    if ((size_t) n > d->out_size / size) {
        d->err = SFT_STORAGE_INVALID;
        return;
    }

    for (off = d->start; off < end; off += d->block) {
        if (sft_storage_digest_range(d, off, sft_min(d->block, end - off),
                                     d->out + d->out_len)
            != SFT_OK)
        {
            return;
        }

        d->out_len += size;
    }
}


/* an operation on the file, run here: on the digest's thread */

static void
sft_storage_digest_req(sft_storage_digest_t *d, sft_storage_req_t *req,
    sft_storage_op_t op)
{
    sft_memzero(req, sizeof(sft_storage_req_t));
    req->op = op;
    req->storage = d->file->storage;
    req->file = d->file;
    req->log = d->log;
}


/*
 * The digest of the whole file as the driver keeps it with the file
 * (SFT_STORAGE_CAP_CHECKSUMS): SFT_OK and the digest in d->out, or
 * SFT_DECLINED (none stored for this algorithm, or it failed): computed.
 */

static sft_int_t
sft_storage_digest_stored(sft_storage_digest_t *d, size_t size, off_t end)
{
    sft_storage_req_t  req;

    if (!sft_storage_has(d->file->storage, SFT_STORAGE_CAP_CHECKSUMS)) {
        return SFT_DECLINED;
    }

    sft_storage_digest_req(d, &req, SFT_STORAGE_CHECKSUM);
    req.buf = d->out;
    req.len = d->out_size;
    req.flags = d->algo;

    if (sft_storage_run(&req) != SFT_OK || (size_t) req.nbytes != size) {
        return SFT_DECLINED;
    }

    d->out_len = size;
    d->done = end;

    return SFT_OK;
}


/* one digest of len bytes at offset, short if the file shrank */

static sft_int_t
sft_storage_digest_range(sft_storage_digest_t *d, off_t offset, off_t len,
    u_char *out)
{
    sft_int_t            rc;
    sft_storage_req_t    req;
    sft_digest_state_t   ds;

    if (sft_digest_init(d, &ds) != SFT_OK) {
        return SFT_ERROR;
    }

    sft_storage_digest_req(d, &req, SFT_STORAGE_READ);
    req.buf = d->buf;

    rc = SFT_ERROR;

    /* bounded: each pass reads at least one byte or ends */

    while (len > 0) {

        if (d->cancel && atomic_load(d->cancel)) {
            d->err = SFT_STORAGE_BUSY;
            goto done;
        }

        req.len = (size_t) sft_min((off_t) SFT_DIGEST_CHUNK, len);
        req.offset = offset;

        if (sft_storage_run(&req) != SFT_OK) {
            d->err = req.err;
            d->sys_err = req.sys_err;
            goto done;
        }

        if (req.nbytes == 0) {
            /* truncated meanwhile: the range is what was read */
            break;
        }

        if (sft_digest_update(d, &ds, d->buf, req.nbytes) != SFT_OK) {
            goto done;
        }

        offset += req.nbytes;
        len -= req.nbytes;
        d->done += req.nbytes;
    }

    rc = sft_digest_final(d, &ds, out);

done:

    if (ds.md) {
        EVP_MD_CTX_free(ds.md);
    }

    return rc;
}


static sft_int_t
sft_digest_init(sft_storage_digest_t *d, sft_digest_state_t *ds)
{
    const EVP_MD  *type;

    ds->md = NULL;
    ds->crc = 0;

    type = sft_digest_md(d->algo);
    if (type == NULL) {
        return SFT_OK;
    }

    ds->md = EVP_MD_CTX_new();

    if (ds->md == NULL || EVP_DigestInit_ex(ds->md, type, NULL) != 1) {
        d->err = SFT_STORAGE_IO;
        return SFT_ERROR;
    }

    return SFT_OK;
}


static sft_int_t
sft_digest_update(sft_storage_digest_t *d, sft_digest_state_t *ds,
    const u_char *p, size_t len)
{
    if (ds->md) {
        if (EVP_DigestUpdate(ds->md, p, len) != 1) {
            d->err = SFT_STORAGE_IO;
            return SFT_ERROR;
        }

    } else if (d->algo == SFT_DIGEST_CRC32C) {
        ds->crc = sft_crc32c(ds->crc, p, len);

    } else {
        ds->crc = sft_crc32(ds->crc, p, len);
    }

    return SFT_OK;
}


/* out: the digest's bytes, a CRC's big-endian as its hex is written */

static sft_int_t
sft_digest_final(sft_storage_digest_t *d, sft_digest_state_t *ds,
    u_char *out)
{
    unsigned int  len;

    if (ds->md) {
        if (EVP_DigestFinal_ex(ds->md, out, &len) != 1) {
            d->err = SFT_STORAGE_IO;
            return SFT_ERROR;
        }

        return SFT_OK;
    }

    out[0] = (u_char) (ds->crc >> 24);
    out[1] = (u_char) (ds->crc >> 16);
    out[2] = (u_char) (ds->crc >> 8);
    out[3] = (u_char) ds->crc;

    return SFT_OK;
}


static const EVP_MD *
sft_digest_md(sft_digest_algo_t algo)
{
    switch (algo) {
    case SFT_DIGEST_SHA256:
        return EVP_sha256();
    case SFT_DIGEST_SHA1:
        return EVP_sha1();
    case SFT_DIGEST_MD5:
        return EVP_md5();
    case SFT_DIGEST_SHA512:
        return EVP_sha512();
    default:
        return NULL;
    }
}


size_t
sft_storage_digest_size(sft_digest_algo_t algo)
{
    const EVP_MD  *md;

    md = sft_digest_md(algo);

    return md ? (size_t) EVP_MD_size(md) : 4;
}


/* the IEEE 802.3 CRC-32 (reflected 0xedb88320), as zlib's crc32() */

static void
sft_crc32_init(void)
{
    uint32_t    c;
    sft_uint_t  i, k;

    for (i = 0; i < 256; i++) {
        c = (uint32_t) i;

        for (k = 0; k < 8; k++) {
            c = (c & 1) ? 0xedb88320 ^ (c >> 1) : c >> 1;
        }

        sft_crc32_table[i] = c;
    }
}


uint32_t
sft_crc32(uint32_t crc, const u_char *p, size_t len)
{
    (void) pthread_once(&sft_crc32_once, sft_crc32_init);

    crc = ~crc;

    while (len--) {
        crc = sft_crc32_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }

    return ~crc;
}
