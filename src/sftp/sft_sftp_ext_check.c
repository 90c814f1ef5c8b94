/*
 * sft_sftp_ext_check.c -- check-file-name and check-file-handle: the hash
 * of a range of a file, or one per block, computed by the storage digest
 * on the thread pool.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>

#include <sft_storage_digest.h>


#define SFT_SFTP_CHECK_MAX    131072    /* bytes of hashes in a reply */
#define SFT_SFTP_CHECK_NALGOS                                                 \
    (sizeof(sft_sftp_check_names) / sizeof(sft_sftp_check_names[0]))


typedef struct {
    sft_storage_file_t    file;         /* check-file-name's own open */
    sft_storage_digest_t  digest;
    const char           *algo;
    sft_uint_t            algo_len;
    sft_storage_err_t     err;          /* of the open or the digest */
} sft_sftp_check_t;


static sft_int_t sft_sftp_check_name_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_check_handle_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_check_file(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd,
    sft_uint_t by_handle);
static sft_uint_t sft_sftp_check_algo(u_char *algos, uint32_t len);
static sft_int_t sft_sftp_check_post(sft_sftp_request_t *r);
static void sft_sftp_check_done(sft_storage_digest_t *d);
static void sft_sftp_check_complete(sft_sftp_request_t *r);
static void sft_sftp_check_abort(sft_sftp_request_t *r);


static const char  *sft_sftp_check_names[] = {
    "md5", "sha1", "sha256", "sha512", "crc32", "crc32c"
};

static const sft_digest_algo_t  sft_sftp_check_kinds[] = {
    SFT_DIGEST_MD5, SFT_DIGEST_SHA1, SFT_DIGEST_SHA256, SFT_DIGEST_SHA512,
    SFT_DIGEST_CRC32, SFT_DIGEST_CRC32C
};


const sft_sftp_handler_t  sft_sftp_check_name_handler = {
    SSH_FXP_EXTENDED, "check-file-name", 0, sft_sftp_check_name_parse,
    sft_sftp_check_complete, sft_sftp_check_abort, NULL, NULL
};

const sft_sftp_handler_t  sft_sftp_check_handle_handler = {
    SSH_FXP_EXTENDED, "check-file-handle", 0, sft_sftp_check_handle_parse,
    sft_sftp_check_complete, sft_sftp_check_abort, NULL, NULL
};


static sft_int_t
sft_sftp_check_name_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd)
{
    return sft_sftp_check_file(s, b, id, hd, 0);
}


static sft_int_t
sft_sftp_check_handle_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd)
{
    return sft_sftp_check_file(s, b, id, hd, 1);
}


/*
 * check-file-name, check-file-handle (draft-ietf-secsh-filexfer-09,
 * 9.1.2): the hash of a range of a file, or one per block, with the first
 * of the client's algorithms we have.  The name is opened through the VFS
 * ("download"), a handle must be open for reading; the storage digest
 * reads and hashes the file on the thread pool.
 *
 *     string  handle or file name
 *     string  hash algorithms, comma-separated
 *     uint64  start offset
 *     uint64  length, 0: to the end of the file
 *     uint32  block size, 0: one hash of the range, else at least 256
 *
 * The reply: EXTENDED_REPLY, string "check-file", string the algorithm,
 * the hashes back to back.
 */

static sft_int_t
sft_sftp_check_file(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd, sft_uint_t by_handle)
{
    u_char                *path, *algos;
    uint32_t               plen, alen, block;
    uint64_t               start, length;
    sft_int_t              rc;
    sft_uint_t             i;
    sft_sftp_check_t      *ctx;
    sft_sftp_handle_t     *h;
    sft_sftp_request_t    *r;
    sft_storage_digest_t  *d;

    h = NULL;
    path = NULL;
    plen = 0;

    if (by_handle) {
        if (sft_sftp_get_handle(s, b, &h) != SFT_OK) {
            return SFT_DECLINED;
        }

    } else if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
        return SFT_DECLINED;
    }

    if (sft_sftp_get_string(b, &algos, &alen) != SFT_OK
        || sft_sftp_get_u64(b, &start) != SFT_OK
        || sft_sftp_get_u64(b, &length) != SFT_OK
        || sft_sftp_get_u32(b, &block) != SFT_OK)
    {
        return SFT_DECLINED;
    }

    i = sft_sftp_check_algo(algos, alen);

    if (i == SFT_SFTP_CHECK_NALGOS) {
        sft_sftp_status(s, id, SSH_FX_OP_UNSUPPORTED,
                        "No supported hash algorithm");
        return SFT_DONE;
    }

    if (block != 0 && block < 256) {
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Invalid block size");
        return SFT_DONE;
    }

    if (sft_sftp_range(s, id, start, length) != SFT_OK) {
        return SFT_DONE;
    }

    if (by_handle) {
        if (h == NULL || h->closing) {
            sft_sftp_status(s, id, SSH_FX_FAILURE, "Invalid handle");
            return SFT_OK;
        }

        if (h->is_dir || h->write) {
            sft_sftp_status(s, id, SSH_FX_PERMISSION_DENIED,
                            "Handle not open for reading");
            return SFT_OK;
        }
    }

    r = sft_sftp_request_new(s, hd, id,
                             SFT_SFTP_SMALL_REPLY
                             + (block ? SFT_SFTP_CHECK_MAX : 0));
    if (r == NULL) {
        return SFT_ERROR;
    }

    ctx = sft_pcalloc(r->pool, sizeof(sft_sftp_check_t));
    if (ctx == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    d = &ctx->digest;
    d->out_size = block ? SFT_SFTP_CHECK_MAX : SFT_DIGEST_MAX_SIZE;
    d->out = sft_pnalloc(r->pool, d->out_size);

    if (d->out == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    /* within SFT_STORAGE_OFFSET_MAX, as sft_sftp_range() found */

    d->algo = sft_sftp_check_kinds[i];
    d->start = (off_t) start;
    d->end = length ? (off_t) (start + length) : -1;
    d->block = block;
    d->cancel = &s->cancel;
    d->log = s->log;
    d->handler = sft_sftp_check_done;
    d->data = r;

    ctx->algo = sft_sftp_check_names[i];
    ctx->algo_len = sft_strlen(sft_sftp_check_names[i]);
    r->ctx = ctx;

    if (by_handle) {
        r->handle = h;
        r->step = 1;
        h->busy++;

        d->file = &h->file;
        sft_sftp_result(r, sft_sftp_check_post(r));
        return SFT_OK;
    }

    d->file = &ctx->file;

    /* step 0: open the name; to its end, front to back: read ahead, and
       the driver may know the digest */

    if (length == 0) {
        r->req.flags = SFT_STORAGE_READ_SEQUENTIAL|SFT_STORAGE_READ_DIGEST;
    }

    rc = sft_vfs_open_read(&s->vfs, &r->req, &ctx->file, path, plen);
    sft_sftp_result(r, rc);

    return SFT_OK;
}


/* the first of the client's algorithms that we have; NALGOS: none */

static sft_uint_t
sft_sftp_check_algo(u_char *algos, uint32_t len)
{
    u_char      *p, *a, *last;
    sft_uint_t   i;

    last = algos + len;

    for (p = algos; p < last; p++) {
        a = p;

        while (p < last && *p != ',') {
            p++;
        }

        for (i = 0; i < SFT_SFTP_CHECK_NALGOS; i++) {
            if ((size_t) (p - a) == sft_strlen(sft_sftp_check_names[i])
                && sft_strncmp(a, sft_sftp_check_names[i], p - a) == 0)
            {
                return i;
            }
        }
    }

    return SFT_SFTP_CHECK_NALGOS;
}


static sft_int_t
sft_sftp_check_post(sft_sftp_request_t *r)
{
    sft_sftp_check_t  *ctx = r->ctx;

    if (sft_storage_digest(&ctx->digest, r->pool,
                           r->session->vfs.thread_pool)
        == SFT_AGAIN)
    {
        return SFT_AGAIN;
    }

    r->req.err = ctx->digest.err;

    return SFT_ERROR;
}


static void
sft_sftp_check_done(sft_storage_digest_t *d)
{
    sft_sftp_request_t  *r = d->data;

    r->req.err = d->err;
    r->req.sys_err = d->sys_err;

    sft_sftp_op_done(&r->req);
}


/*
 * On the loop.  check-file-name: step 0 the open is done, step 1 the
 * hashes, step 2 the close; check-file-handle starts at step 1.
 */

static void
sft_sftp_check_complete(sft_sftp_request_t *r)
{
    u_char              *p, *start;
    sft_int_t            rc;
    sft_sftp_check_t    *ctx = r->ctx;
    sft_sftp_handle_t   *h = r->handle;
    sft_sftp_session_t  *s = r->session;

    if (r->step == 0) {
        r->step = 1;

        if (r->req.err != SFT_STORAGE_OK) {
            ctx->err = r->req.err;
            goto reply;
        }

        rc = sft_sftp_check_post(r);

        if (rc == SFT_AGAIN) {
            s->pending++;
            return;
        }

        /* not started: the error is the reply, the file is closed */
    }

    if (r->step == 1) {
        r->step = 2;
        ctx->err = r->req.err;

        if (h == NULL) {
            rc = sft_vfs_close(&s->vfs, &r->req, &ctx->file, 0);

            if (rc == SFT_AGAIN) {
                s->pending++;
                return;
            }
        }
    }

reply:

    if (ctx->err != SFT_STORAGE_OK) {
        if (ctx->err == SFT_STORAGE_INVALID) {
            sft_sftp_status(s, r->id, SSH_FX_FAILURE,
                            "Invalid range or too many blocks");

        } else {
            sft_sftp_storage_status(s, r->id, ctx->err);
        }

    } else {
        start = sft_sftp_reply_space(s, 4 + 1 + 4 + 4 + 10 + 4
                                        + ctx->algo_len
                                        + ctx->digest.out_len);
        if (start != NULL) {
            p = start + 4;
            *p++ = SSH_FXP_EXTENDED_REPLY;
            p = sft_sftp_put_u32(p, r->id);
            p = sft_sftp_put_string(p, (u_char *) "check-file", 10);
            p = sft_sftp_put_string(p, (u_char *) ctx->algo, ctx->algo_len);
            p = sft_cpymem(p, ctx->digest.out, ctx->digest.out_len);
            sft_sftp_packet_done(s, start, p);
        }
    }

    if (h) {
        sft_sftp_handle_idle(h);
    }

    sft_sftp_request_done(r);
}


/* the session is gone: close check-file-name's own file, if open */

static void
sft_sftp_check_abort(sft_sftp_request_t *r)
{
    sft_storage_req_t   cr;
    sft_sftp_check_t   *ctx = r->ctx;

    if (ctx == NULL || r->handle || !ctx->file.opened || ctx->file.closed)
    {
        return;
    }

    sft_memzero(&cr, sizeof(sft_storage_req_t));
    cr.op = SFT_STORAGE_CLOSE;
    cr.storage = ctx->file.storage;
    cr.pool = r->pool;
    cr.log = r->session->log;
    cr.file = &ctx->file;

    (void) ctx->file.storage->driver->ops[SFT_STORAGE_CLOSE](&cr);
}
