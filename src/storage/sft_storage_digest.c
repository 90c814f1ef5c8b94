/*
 * sft_storage_digest.c -- digests of a range of an open storage file:
 * the range checked against the size, the driver's stored digest of a
 * whole file when it keeps one, else the bytes hashed in order with
 * OpenSSL EVP, the IEEE CRC-32 (its one set of tables here) or the
 * CRC-32C of the asm kernel, one digest or one per block.  The bytes come
 * a chunk at a time through the driver's read operation: on a thread of
 * the worker's pool into one bounded buffer for a driver whose operations
 * block (stopped between chunks when the owner cancels, completed on the
 * event loop), else from its asynchronous reads
 * (sft_storage_digest_async.c).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_storage_digest.h>
#include <sft_asm.h>

#include <openssl/evp.h>


static void sft_storage_digest_thread(void *data, sft_log_t *log);
static void sft_storage_digest_done(sft_event_t *ev);
static void sft_storage_digest_req(sft_storage_digest_t *d,
    sft_storage_req_t *req, sft_storage_op_t op);
static sft_int_t sft_storage_digest_stored(sft_storage_digest_t *d,
    size_t size, off_t end);
static sft_int_t sft_digest_init(sft_storage_digest_t *d);
static sft_int_t sft_digest_final(sft_storage_digest_t *d);
static const EVP_MD *sft_digest_md(sft_digest_algo_t algo);
static void sft_crc32_init(void);


static uint32_t        sft_crc32_table[8][256];
static pthread_once_t  sft_crc32_once = PTHREAD_ONCE_INIT;


/*
 * Starts the digest: SFT_AGAIN, the handler runs later; or SFT_ERROR
 * with d->err: UNSUPPORTED without a thread pool for a driver whose
 * operations block, or without a read operation; BUSY when the memory or
 * the pool's queue is exhausted; what the driver's FSTAT and the range
 * found, for a driver whose operations do not block.
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

    if (d->file->storage == NULL
        || d->file->storage->driver->ops[SFT_STORAGE_READ] == NULL)
    {
        d->err = SFT_STORAGE_UNSUPPORTED;
        return SFT_ERROR;
    }

    if (!d->file->storage->driver->blocking) {
        return sft_storage_digest_async(d, pool);
    }

    if (tp == NULL) {
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


static void
sft_storage_digest_thread(void *data, sft_log_t *log)
{
    (void) log;

    sft_storage_digest_run(data);
}


static void
sft_storage_digest_done(sft_event_t *ev)
{
    sft_storage_digest_complete(ev->data);
}


/* on the loop, whichever way the bytes came: the handler */

void
sft_storage_digest_complete(sft_storage_digest_t *d)
{
    if (d->err == SFT_STORAGE_BUSY && d->cancel && atomic_load(d->cancel)) {
        sft_log_error(SFT_LOG_INFO, d->log, 0,
                      "digest of \"%s\" stopped after %lld bytes: "
                      "not wanted any more", d->file->name,
                      (long long) d->done);
    }

    d->handler(d);
}


/*
 * The digest itself, synchronously (a thread's, or a test's, which sets
 * d->buf): the size of the file, the range, then its bytes a chunk at a
 * time.
 */

void
sft_storage_digest_run(sft_storage_digest_t *d)
{
    sft_storage_req_t  req;

    d->err = SFT_STORAGE_OK;
    d->done = 0;
    d->out_len = 0;

    sft_storage_digest_req(d, &req, SFT_STORAGE_FSTAT);

    if (sft_storage_run(&req) != SFT_OK) {
        d->err = req.err;
        d->sys_err = req.sys_err;
        return;
    }

    if (sft_storage_digest_begin(d, req.st.size) != SFT_OK) {
        return;
    }

    sft_storage_digest_req(d, &req, SFT_STORAGE_READ);
    req.buf = d->buf;

    /* bounded: each pass reads at least one byte or ends */

    while (d->pos < d->last) {

        if (d->cancel && atomic_load(d->cancel)) {
            d->err = SFT_STORAGE_BUSY;
            break;
        }

        req.len = (size_t) sft_min((off_t) SFT_DIGEST_CHUNK,
                                   d->last - d->pos);
        req.offset = d->pos;

        if (sft_storage_run(&req) != SFT_OK) {
            d->err = req.err;
            d->sys_err = req.sys_err;
            break;
        }

        if (req.nbytes == 0) {
            /* truncated meanwhile: the range is what was read */
            break;
        }

        if (sft_storage_digest_update(d, d->buf, req.nbytes) != SFT_OK) {
            break;
        }
    }

    sft_storage_digest_finish(d);
}


/* an operation on the file, run where the digest runs */

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


sft_int_t
sft_storage_digest_begin(sft_storage_digest_t *d, off_t size)
{
    off_t   end, n;
    size_t  dsize;

    d->md = NULL;
    d->fed = 0;

    if (d->start < 0 || d->start > size) {
        d->err = SFT_STORAGE_INVALID;
        return SFT_ERROR;
    }

    end = size;

    if (d->end >= 0 && d->end < end) {
        end = sft_max(d->end, d->start);
    }

    dsize = sft_storage_digest_size(d->algo);

    if (d->block <= 0) {
        if (dsize > d->out_size) {
            d->err = SFT_STORAGE_INVALID;
            return SFT_ERROR;
        }

        if (d->start == 0 && end == size
            && sft_storage_digest_stored(d, dsize, end) == SFT_OK)
        {
            return SFT_DONE;
        }

    } else {
        /* the number of blocks is bounded by the room for their digests */

        n = (end - d->start + d->block - 1) / d->block;

        if ((size_t) n > d->out_size / dsize) {
            d->err = SFT_STORAGE_INVALID;
            return SFT_ERROR;
        }
    }

    d->pos = d->start;
    d->last = end;

    return sft_digest_init(d);
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


sft_int_t
sft_storage_digest_update(sft_storage_digest_t *d, const u_char *p,
    size_t len)
{
    size_t  n;

    while (len) {
        n = len;

        if (d->block > 0) {
            n = (size_t) sft_min((off_t) n, d->block_end - d->pos);
        }

        if (d->md) {
            if (EVP_DigestUpdate(d->md, p, n) != 1) {
                d->err = SFT_STORAGE_IO;
                return SFT_ERROR;
            }

        } else if (d->algo == SFT_DIGEST_CRC32C) {
            d->crc = sft_crc32c(d->crc, p, n);

        } else {
            d->crc = sft_crc32(d->crc, p, n);
        }

        p += n;
        len -= n;
        d->pos += n;
        d->done += n;
        d->fed = 1;

        if (d->block > 0 && d->pos == d->block_end) {
            if (sft_digest_final(d) != SFT_OK
                || (d->pos < d->last && sft_digest_init(d) != SFT_OK))
            {
                return SFT_ERROR;
            }
        }
    }

    return SFT_OK;
}


void
sft_storage_digest_finish(sft_storage_digest_t *d)
{
    /* one digest of the range even of nothing; a block only with bytes */

    if (d->err == SFT_STORAGE_OK && (d->block <= 0 || d->fed)) {
        (void) sft_digest_final(d);
    }

    if (d->md) {
        EVP_MD_CTX_free(d->md);
        d->md = NULL;
    }
}


/* the digest of the next block (or of the range), its context reused */

static sft_int_t
sft_digest_init(sft_storage_digest_t *d)
{
    const EVP_MD  *type;

    d->crc = 0;
    d->fed = 0;

    if (d->block > 0) {
        d->block_end = sft_min(d->pos + d->block, d->last);
    }

    type = sft_digest_md(d->algo);
    if (type == NULL) {
        return SFT_OK;
    }

    if (d->md == NULL) {
        d->md = EVP_MD_CTX_new();
    }

    if (d->md == NULL || EVP_DigestInit_ex(d->md, type, NULL) != 1) {
        d->err = SFT_STORAGE_IO;
        return SFT_ERROR;
    }

    return SFT_OK;
}


/* to out: the digest's bytes, a CRC's big-endian as its hex is written */

static sft_int_t
sft_digest_final(sft_storage_digest_t *d)
{
    u_char        *out;
    unsigned int   len;

    out = d->out + d->out_len;

    if (d->md) {
        if (EVP_DigestFinal_ex(d->md, out, &len) != 1) {
            d->err = SFT_STORAGE_IO;
            return SFT_ERROR;
        }

    } else {
        out[0] = (u_char) (d->crc >> 24);
        out[1] = (u_char) (d->crc >> 16);
        out[2] = (u_char) (d->crc >> 8);
        out[3] = (u_char) d->crc;
    }

    d->out_len += sft_storage_digest_size(d->algo);
    d->fed = 0;

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


/*
 * The IEEE 802.3 CRC-32 (reflected 0xedb88320), as zlib's crc32(): eight
 * bytes a step through eight tables (slicing-by-8), about six times the
 * speed of a byte a step, so that a chunk hashed on the event loop takes
 * as long as one of MD5.  Table k advances the CRC of a byte k more
 * bytes of zeros.
 */

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

        sft_crc32_table[0][i] = c;
    }

    for (i = 0; i < 256; i++) {
        for (k = 1; k < 8; k++) {
            c = sft_crc32_table[k - 1][i];
            sft_crc32_table[k][i] = sft_crc32_table[0][c & 0xff] ^ (c >> 8);
        }
    }
}


uint32_t
sft_crc32(uint32_t crc, const u_char *p, size_t len)
{
    uint32_t   lo, hi;
    uint32_t (*t)[256];

    (void) pthread_once(&sft_crc32_once, sft_crc32_init);

    t = sft_crc32_table;
    crc = ~crc;

    for ( /* void */ ; len >= 8; p += 8, len -= 8) {
        lo = crc ^ ((uint32_t) p[0] | (uint32_t) p[1] << 8
                    | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24);
        hi = (uint32_t) p[4] | (uint32_t) p[5] << 8
             | (uint32_t) p[6] << 16 | (uint32_t) p[7] << 24;

        crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff]
              ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24]
              ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff]
              ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    }

    while (len--) {
        crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }

    return ~crc;
}
