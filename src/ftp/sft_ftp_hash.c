/*
 * sft_ftp_hash.c -- HASH and OPTS HASH (draft-bryan-ftpext-hash): the file
 * (or the octets a RANG selected) is opened through the VFS (the
 * "download" permission), digested by the storage digest (SHA-256,
 * SHA-1, MD5, CRC-32, CRC-32C, SHA-512) and closed through the VFS
 * again; the reply names the octets digested.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>
#include <sft_storage_digest.h>


typedef struct {
    sft_ftp_session_t        *session;
    sft_storage_file_t        file;
    sft_storage_digest_t      digest;
    sft_uint_t                algo;        /* SFT_FTP_HASH_* */
    sft_int_t                 rc;          /* SFT_ABORT: RANG past the end */
    u_char                   *path;        /* as given, for the reply */
    size_t                    path_len;
    u_char                    out[SFT_DIGEST_MAX_SIZE];
} sft_ftp_hash_ctx_t;


static void sft_ftp_hash_opened(sft_ftp_session_t *s, sft_storage_req_t *r);
static void sft_ftp_hash_done(sft_storage_digest_t *d);
static void sft_ftp_hash_close(sft_ftp_session_t *s, sft_ftp_hash_ctx_t *h);
static void sft_ftp_hash_closed(sft_ftp_session_t *s, sft_storage_req_t *r);
static void sft_ftp_hash_reply(sft_ftp_session_t *s, sft_ftp_hash_ctx_t *h);


static const char  *sft_ftp_hash_names[SFT_FTP_HASH_N] = {
    "SHA-256", "SHA-1", "MD5", "CRC32", "CRC32C", "SHA-512"
};

static const sft_digest_algo_t  sft_ftp_hash_algos[SFT_FTP_HASH_N] = {
    SFT_DIGEST_SHA256, SFT_DIGEST_SHA1, SFT_DIGEST_MD5, SFT_DIGEST_CRC32,
    SFT_DIGEST_CRC32C, SFT_DIGEST_SHA512
};


const char *
sft_ftp_hash_name(sft_uint_t algo)
{
    return algo < SFT_FTP_HASH_N ? sft_ftp_hash_names[algo] : "?";
}


/* OPTS HASH [name]: SFT_OK, or SFT_DECLINED for an unknown name */

sft_int_t
sft_ftp_hash_select(sft_ftp_session_t *s, u_char *name, size_t len)
{
    sft_uint_t  i;

    for (i = 0; i < SFT_FTP_HASH_N; i++) {
        if (sft_strlen(sft_ftp_hash_names[i]) == len
            && strncasecmp((char *) name, sft_ftp_hash_names[i], len) == 0)
        {
            s->hash_algo = i;
            return SFT_OK;
        }
    }

    return SFT_DECLINED;
}


/*
 * " HASH SHA-256*;SHA-1;MD5;CRC32;CRC32C;SHA-512\r\n", the selected one
 * starred
 */

u_char *
sft_ftp_hash_feat(sft_ftp_session_t *s, u_char *p, u_char *last)
{
    sft_uint_t  i;

    p = sft_slprintf(p, last, " HASH ");

    for (i = 0; i < SFT_FTP_HASH_N; i++) {
        p = sft_slprintf(p, last, "%s%s%s", sft_ftp_hash_names[i],
                         i == s->hash_algo ? "*" : "",
                         i + 1 < SFT_FTP_HASH_N ? ";" : "\r\n");
    }

    return p;
}


sft_int_t
sft_ftp_hash(sft_ftp_session_t *s)
{
    sft_int_t            rc;
    sft_storage_req_t   *r;
    sft_ftp_hash_ctx_t  *h;

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    h = sft_pcalloc(r->pool, sizeof(sft_ftp_hash_ctx_t));
    if (h == NULL) {
        return SFT_ERROR;
    }

    h->session = s;
    h->algo = s->hash_algo;
    h->digest.algo = sft_ftp_hash_algos[h->algo];
    h->digest.end = -1;

    if (s->rang) {
        /* one RANG, one HASH; its end is included */
        s->rang = 0;
        h->digest.start = s->rang_start;
        h->digest.end = s->rang_end + 1;
    }

    /* the control buffer may move while the digest runs */

    h->path = sft_pnalloc(r->pool, s->arg.len);
    if (h->path == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(h->path, s->arg.data, s->arg.len);
    h->path_len = s->arg.len;

    r->buf = (u_char *) h;

    if (h->digest.end == -1) {
        /* the whole file, front to back: the driver may read ahead, and
           may know the digest */
        r->flags = SFT_STORAGE_READ_SEQUENTIAL|SFT_STORAGE_READ_DIGEST;
    }

    rc = sft_vfs_open_read(&s->vfs, r, &h->file, s->arg.data, s->arg.len);

    return sft_ftp_op_result(s, rc, sft_ftp_hash_opened);
}


static void
sft_ftp_hash_opened(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    sft_int_t              rc;
    sft_ftp_hash_ctx_t    *h;
    sft_storage_digest_t  *d;

    h = (sft_ftp_hash_ctx_t *) r->buf;
    d = &h->digest;

    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    if (d->end != -1 && d->start >= h->file.size) {
        h->rc = SFT_ABORT;
        sft_ftp_hash_close(s, h);
        return;
    }

    d->file = &h->file;
    d->out = h->out;
    d->out_size = sizeof(h->out);
    d->cancel = &s->cancel;
    d->log = s->log;
    d->handler = sft_ftp_hash_done;
    d->data = h;

    rc = sft_storage_digest(d, s->op_pool, s->vfs.thread_pool);

    if (rc != SFT_AGAIN) {
        sft_ftp_hash_close(s, h);
        return;
    }

    s->pending++;
    s->busy = 1;
}


/* on the loop: the digest is ready, close the file */

static void
sft_ftp_hash_done(sft_storage_digest_t *d)
{
    sft_ftp_session_t   *s;
    sft_ftp_hash_ctx_t  *h;

    h = d->data;
    s = h->session;

    s->pending--;
    s->busy = 0;

    sft_ftp_hash_close(s, h);

    if (s->closed) {
        if (s->pending == 0) {
            sft_ftp_session_free(s);
        }
        return;
    }

    sft_ftp_resume(s);
}


static void
sft_ftp_hash_close(sft_ftp_session_t *s, sft_ftp_hash_ctx_t *h)
{
    sft_int_t           rc;
    sft_storage_req_t  *r;

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        /* the op pool exists already: cannot fail */
        return;
    }

    r->buf = (u_char *) h;

    rc = sft_vfs_close(&s->vfs, r, &h->file, 0);

    if (s->closed) {
        if (rc == SFT_AGAIN) {
            /* sft_ftp_op_done frees the session */
            s->pending++;
        }
        return;
    }

    (void) sft_ftp_op_result(s, rc, sft_ftp_hash_closed);
}


static void
sft_ftp_hash_closed(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    sft_ftp_hash_ctx_t  *h;

    h = (sft_ftp_hash_ctx_t *) r->buf;

    if (h->rc == SFT_ABORT || h->digest.err == SFT_STORAGE_INVALID) {
        sft_ftp_reply(s, 554, "Requested action not taken: RANG start "
                              "point beyond the end of the file.");
        return;
    }

    switch (h->digest.err) {

    case SFT_STORAGE_OK:
        sft_ftp_hash_reply(s, h);
        return;

    case SFT_STORAGE_UNSUPPORTED:
        sft_ftp_reply(s, 502, "HASH is not supported on this storage.");
        return;

    case SFT_STORAGE_BUSY:
        sft_ftp_reply(s, 450, "Server busy, try again.");
        return;

    default:
        if (!h->file.error_logged) {
            sft_log_error(SFT_LOG_ERR, s->log, h->digest.sys_err,
                          "HASH of \"%.*s\" failed",
                          (int) h->path_len, h->path);
        }

        sft_ftp_reply(s, 451, "Requested action aborted: local error.");
        return;
    }
}


/* 213 SHA-256 0-999 <hex> name: the range is the octets digested */

static void
sft_ftp_hash_reply(sft_ftp_session_t *s, sft_ftp_hash_ctx_t *h)
{
    off_t                  last;
    size_t                 i;
    u_char                 hex[SFT_DIGEST_MAX_SIZE * 2 + 1];
    sft_storage_digest_t  *d;

    static const u_char    digits[] = "0123456789abcdef";

    d = &h->digest;

    for (i = 0; i < d->out_len; i++) {
        hex[i * 2] = digits[h->out[i] >> 4];
        hex[i * 2 + 1] = digits[h->out[i] & 0xf];
    }

    hex[d->out_len * 2] = '\0';

    last = d->done ? d->start + d->done - 1 : d->start;

    sft_ftp_reply(s, 213, "%s %lld-%lld %s %.*s",
                  sft_ftp_hash_names[h->algo], (long long) d->start,
                  (long long) last, hex, (int) h->path_len, h->path);
}
