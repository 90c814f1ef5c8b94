/*
 * sft_ftp_hash.c -- HASH and OPTS HASH (draft-bryan-ftpext-hash): the file
 * (or the octets a RANG selected) is opened through the VFS (the
 * "download" permission), digested on the worker's thread pool with
 * OpenSSL EVP (SHA-256, SHA-1, MD5), the IEEE CRC-32 or the CRC-32C of
 * the asm kernel, and closed through the VFS again.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>
#include <sft_asm.h>

#include <openssl/evp.h>


typedef struct {
    sft_ftp_session_t        *session;
    sft_storage_file_t        file;
    sft_fd_t                  fd;
    off_t                     start;       /* RANG, else 0 */
    off_t                     last;        /* RANG, else -1: to the end */
    off_t                     size;        /* at open: the end digested */
    sft_uint_t                algo;
    u_char                   *buf;         /* SFT_FTP_HASH_CHUNK bytes */
    u_char                   *path;        /* as given, for the reply */
    size_t                    path_len;

    /* the thread's result */
    off_t                     done;
    sft_int_t                 rc;          /* SFT_OK, SFT_ERROR */
    int                       err;
    u_char                    hex[EVP_MAX_MD_SIZE * 2 + 1];
} sft_ftp_hash_ctx_t;


static void sft_ftp_hash_opened(sft_ftp_session_t *s, sft_storage_req_t *r);
static void sft_ftp_hash_thread(void *data, sft_log_t *log);
static void sft_ftp_hash_done(sft_event_t *ev);
static void sft_ftp_hash_close(sft_ftp_session_t *s, sft_ftp_hash_ctx_t *h);
static void sft_ftp_hash_closed(sft_ftp_session_t *s, sft_storage_req_t *r);
static void sft_ftp_crc32_init(void);


static const char  *sft_ftp_hash_names[SFT_FTP_HASH_N] = {
    "SHA-256", "SHA-1", "MD5", "CRC32", "CRC32C"
};

static uint32_t     sft_ftp_crc32_table[256];
static sft_uint_t   sft_ftp_crc32_ready;


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


/* " HASH SHA-256*;SHA-1;MD5;CRC32;CRC32C\r\n", the selected one starred */

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
    h->fd = SFT_INVALID_FILE;
    h->last = -1;

    if (s->rang) {
        /* one RANG, one HASH */
        s->rang = 0;
        h->start = s->rang_start;
        h->last = s->rang_end;
    }

    /* the control buffer may move while the digest runs */

    h->path = sft_pnalloc(r->pool, s->arg.len);
    if (h->path == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(h->path, s->arg.data, s->arg.len);
    h->path_len = s->arg.len;

    r->buf = (u_char *) h;

    rc = sft_vfs_open_read(&s->vfs, r, &h->file, s->arg.data, s->arg.len);

    return sft_ftp_op_result(s, rc, sft_ftp_hash_opened);
}


static void
sft_ftp_hash_opened(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    sft_storage_t       *st;
    sft_thread_task_t   *task;
    sft_ftp_hash_ctx_t  *h;

    h = (sft_ftp_hash_ctx_t *) r->buf;

    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    st = h->file.storage;
    h->size = h->file.size;

    if (h->last != -1) {
        if (h->start >= h->size) {
            h->rc = SFT_ABORT;
            sft_ftp_hash_close(s, h);
            return;
        }

        /* an end past the end of the file: up to the end */
        h->size = sft_min(h->last + 1, h->size);
    }
    h->fd = st->driver->file_fd ? st->driver->file_fd(&h->file)
                                : SFT_INVALID_FILE;

    if (h->fd == SFT_INVALID_FILE || s->thread_pool == NULL) {
        h->rc = SFT_DECLINED;
        sft_ftp_hash_close(s, h);
        return;
    }

    h->buf = sft_pnalloc(s->op_pool, SFT_FTP_HASH_CHUNK);
    task = sft_thread_task_alloc(s->op_pool, 0);

    if (h->buf == NULL || task == NULL) {
        h->rc = SFT_ERROR;
        sft_ftp_hash_close(s, h);
        return;
    }

    if (h->algo == SFT_FTP_HASH_CRC32) {
        /* filled here, on the loop, before any thread reads it */
        sft_ftp_crc32_init();
    }

    task->ctx = h;
    task->handler = sft_ftp_hash_thread;
    task->event.handler = sft_ftp_hash_done;
    task->event.data = h;
    task->event.log = s->log;

    if (sft_thread_task_post(s->thread_pool, task) != SFT_OK) {
        h->rc = SFT_AGAIN;
        sft_ftp_hash_close(s, h);
        return;
    }

    s->pending++;
    s->busy = 1;
}


/* in a thread: digest the octets from h->start up to h->size */

static void
sft_ftp_hash_thread(void *data, sft_log_t *log)
{
    size_t               want, i;
    ssize_t              n;
    uint32_t             crc;
    unsigned int         mdlen;
    EVP_MD_CTX          *md;
    const EVP_MD        *type;
    sft_ftp_hash_ctx_t  *h = data;
    u_char               digest[EVP_MAX_MD_SIZE];

    static const u_char  hex[] = "0123456789abcdef";

    (void) log;

    md = NULL;
    crc = 0;
    h->rc = SFT_ERROR;
    h->done = 0;

    switch (h->algo) {
    case SFT_FTP_HASH_SHA1:
        type = EVP_sha1();
        break;
    case SFT_FTP_HASH_MD5:
        type = EVP_md5();
        break;
    case SFT_FTP_HASH_CRC32:
    case SFT_FTP_HASH_CRC32C:
        type = NULL;
        break;
    default:
        type = EVP_sha256();
        break;
    }

    if (type) {
        md = EVP_MD_CTX_new();
        if (md == NULL || EVP_DigestInit_ex(md, type, NULL) != 1) {
            goto done;
        }
    }

    /* bounded: each pass reads at least one byte or ends */

    while (h->start + h->done < h->size) {
        want = (size_t) sft_min((off_t) SFT_FTP_HASH_CHUNK,
                                h->size - h->start - h->done);

        n = pread(h->fd, h->buf, want, h->start + h->done);

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }

            h->err = errno;
            goto done;
        }

        if (n == 0) {
            /* truncated meanwhile: the range is what was read */
            break;
        }

        if (md) {
            if (EVP_DigestUpdate(md, h->buf, n) != 1) {
                goto done;
            }

        } else if (h->algo == SFT_FTP_HASH_CRC32C) {
            crc = sft_crc32c(crc, h->buf, n);

        } else {
            crc = sft_ftp_crc32(crc, h->buf, n);
        }

        h->done += n;
    }

    if (md) {
        if (EVP_DigestFinal_ex(md, digest, &mdlen) != 1) {
            goto done;
        }

    } else {
        digest[0] = (u_char) (crc >> 24);
        digest[1] = (u_char) (crc >> 16);
        digest[2] = (u_char) (crc >> 8);
        digest[3] = (u_char) crc;
        mdlen = 4;
    }

    for (i = 0; i < mdlen; i++) {
        h->hex[i * 2] = hex[digest[i] >> 4];
        h->hex[i * 2 + 1] = hex[digest[i] & 0xf];
    }

    h->hex[mdlen * 2] = '\0';
    h->rc = SFT_OK;

done:

    if (md) {
        EVP_MD_CTX_free(md);
    }
}


/* on the loop: the digest is ready, close the file */

static void
sft_ftp_hash_done(sft_event_t *ev)
{
    sft_ftp_session_t   *s;
    sft_ftp_hash_ctx_t  *h;

    h = ev->data;
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
    off_t                last;
    sft_ftp_hash_ctx_t  *h;

    h = (sft_ftp_hash_ctx_t *) r->buf;

    switch (h->rc) {

    case SFT_OK:
        last = h->done ? h->start + h->done - 1 : h->start;

        sft_ftp_reply(s, 213, "%s %lld-%lld %s %.*s",
                      sft_ftp_hash_names[h->algo], (long long) h->start,
                      (long long) last, h->hex, (int) h->path_len, h->path);
        return;

    case SFT_ABORT:
        sft_ftp_reply(s, 554, "Requested action not taken: RANG start "
                              "point beyond the end of the file.");
        return;

    case SFT_DECLINED:
        sft_ftp_reply(s, 502, "HASH is not supported on this storage.");
        return;

    case SFT_AGAIN:
        sft_ftp_reply(s, 450, "Server busy, try again.");
        return;

    default:
        sft_log_error(SFT_LOG_ERR, s->log, h->err, "HASH of \"%.*s\" failed",
                      (int) h->path_len, h->path);
        sft_ftp_reply(s, 451, "Requested action aborted: local error.");
        return;
    }
}


/* the IEEE 802.3 CRC-32 (reflected 0xedb88320), as zlib's crc32() */

static void
sft_ftp_crc32_init(void)
{
    uint32_t    c;
    sft_uint_t  i, k;

    if (sft_ftp_crc32_ready) {
        return;
    }

    for (i = 0; i < 256; i++) {
        c = (uint32_t) i;

        for (k = 0; k < 8; k++) {
            c = (c & 1) ? 0xedb88320 ^ (c >> 1) : c >> 1;
        }

        sft_ftp_crc32_table[i] = c;
    }

    sft_ftp_crc32_ready = 1;
}


uint32_t
sft_ftp_crc32(uint32_t crc, const u_char *p, size_t len)
{
    sft_ftp_crc32_init();

    crc = ~crc;

    while (len--) {
        crc = sft_ftp_crc32_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }

    return ~crc;
}
