/*
 * sft_sftp_proto.c -- SFTP v3 as OpenSSH speaks it: packets framed from
 * the channel bytes with a 256 KiB cap, read only through bounds-checked
 * getters, every complete request started at once, each answered when
 * its storage operation completes, handles, and OpenSSH's extensions
 * (posix-rename, hardlink, statvfs, fstatvfs, fsync, lsetstat, limits,
 * expand-path, home-directory, users-groups-by-id, check-file-name,
 * check-file-handle and copy-data).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp.h>

#include <sft_storage_digest.h>
#include <sft_xfer.h>
#include <sys/uio.h>


#define SFT_SFTP_SMALL_REPLY  1024
#define SFT_SFTP_MAX_IDS      1024      /* users-groups-by-id, each */

/* request types of our own, for the extensions that need a step */
#define SFT_SFTP_FD_OP        230      /* fsync, FSETSTAT of an upload */

#define SFT_SFTP_FD_PROBE     0x40000000  /* an fd operation: READ_* */
#define SFT_SFTP_CHECK_FILE   231
#define SFT_SFTP_COPY_DATA    232

#define SFT_SFTP_COPY_CHUNK   65536     /* a copy-data read and write */

#define SFT_SFTP_CHECK_MAX    131072    /* bytes of hashes in a reply */
#define SFT_SFTP_CHECK_ALGOS  "md5,sha1,sha256,sha512,crc32,crc32c"


typedef struct {
    sft_fd_t              fd;
    int                   err;          /* the thread's errno */
    uint32_t              flags;        /* SSH_FILEXFER_ATTR_*; 0: fsync */
    off_t                 size;
    off_t                 old_size;     /* for the quota */
    mode_t                mode;
    time_t                atime;
    time_t                mtime;
    sft_uint_t            read_now;     /* the probe's SFT_SFTP_READ_* */
} sft_sftp_fd_op_t;


/* check-file-name, check-file-handle */

typedef struct {
    sft_storage_file_t    file;         /* check-file-name's own open */
    sft_storage_digest_t  digest;
    const char           *algo;
    sft_uint_t            algo_len;
    sft_storage_err_t     err;          /* of the open or the digest */
} sft_sftp_check_t;


/* copy-data: from one handle's file to another's, a chunk at a time */

typedef struct {
    sft_sftp_handle_t    *to;
    uint64_t              roff;
    uint64_t              woff;
    uint64_t              left;         /* 0 with to_eof: to the end */
    u_char               *buf;          /* SFT_SFTP_COPY_CHUNK */
    unsigned              to_eof:1;
} sft_sftp_copy_t;


static sft_int_t sft_sftp_range(sft_sftp_session_t *s, uint32_t id,
    uint64_t offset, uint64_t len);
static sft_int_t sft_sftp_request(sft_sftp_session_t *s, u_char *p,
    size_t len);
static sft_int_t sft_sftp_extended(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, u_char *name, uint32_t nlen);
static sft_int_t sft_sftp_ext_is(u_char *name, uint32_t nlen,
    const char *ext);
static void sft_sftp_reply_ids(sft_sftp_session_t *s, uint32_t id,
    u_char *uids, uint32_t ulen, u_char *gids, uint32_t glen);
static sft_int_t sft_sftp_fd_op(sft_sftp_request_t *r, uint32_t flags);
static void sft_sftp_fd_thread(void *data, sft_log_t *log);
static void sft_sftp_fd_op_quota(sft_sftp_request_t *r);
static void sft_sftp_fsetstat_write(sft_sftp_request_t *r);
static void sft_sftp_task_done(sft_event_t *ev);
static void sft_sftp_reply_readlink(sft_sftp_request_t *r);
static sft_int_t sft_sftp_check_file(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, sft_uint_t by_handle);
static sft_int_t sft_sftp_check_post(sft_sftp_request_t *r);
static void sft_sftp_check_done(sft_storage_digest_t *d);
static void sft_sftp_check_complete(sft_sftp_request_t *r);
static void sft_sftp_check_abort(sft_sftp_request_t *r);
static sft_int_t sft_sftp_copy_data(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id);
static sft_int_t sft_sftp_copy_read(sft_sftp_request_t *r);
static sft_int_t sft_sftp_copy_overlap(sft_sftp_copy_t *ctx,
    sft_sftp_handle_t *from);
static void sft_sftp_copy_complete(sft_sftp_request_t *r);
static void sft_sftp_handle_idle(sft_sftp_handle_t *h);
static sft_int_t sft_sftp_read_now(sft_sftp_session_t *s,
    sft_sftp_handle_t *h, uint32_t id, uint32_t len, uint64_t offset);
static sft_sftp_request_t *sft_sftp_request_new(sft_sftp_session_t *s,
    u_char type, uint32_t id, size_t reserve);
static void sft_sftp_request_done(sft_sftp_request_t *r);
static void sft_sftp_result(sft_sftp_request_t *r, sft_int_t rc);
static void sft_sftp_op_done(sft_storage_req_t *req);
static void sft_sftp_complete(sft_sftp_request_t *r);
static void sft_sftp_write(sft_sftp_request_t *r);
static sft_int_t sft_sftp_get_handle(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, sft_sftp_handle_t **h);
static sft_sftp_handle_t *sft_sftp_handle_new(sft_sftp_session_t *s,
    u_char *path, size_t len, sft_uint_t is_dir);
static void sft_sftp_handle_free(sft_sftp_session_t *s,
    sft_sftp_handle_t *h);
static void sft_sftp_handle_report(sft_sftp_session_t *s,
    sft_sftp_handle_t *h);
static void sft_sftp_handle_release(sft_sftp_session_t *s,
    sft_sftp_handle_t *h);
static void sft_sftp_status(sft_sftp_session_t *s, uint32_t id,
    uint32_t code, const char *msg);
static void sft_sftp_storage_status(sft_sftp_session_t *s, uint32_t id,
    sft_storage_err_t err);
static void sft_sftp_reply_handle(sft_sftp_session_t *s, uint32_t id,
    sft_sftp_handle_t *h);
static void sft_sftp_reply_attrs(sft_sftp_session_t *s, uint32_t id,
    sft_storage_stat_t *st);
static void sft_sftp_reply_names(sft_sftp_request_t *r);
static void sft_sftp_reply_realpath(sft_sftp_session_t *s, uint32_t id,
    u_char *path, size_t len);
static void sft_sftp_reply_version(sft_sftp_session_t *s);
static void sft_sftp_reply_limits(sft_sftp_session_t *s, uint32_t id);
static void sft_sftp_reply_statvfs(sft_sftp_session_t *s, uint32_t id,
    sft_storage_statvfs_t *v);
static u_char *sft_sftp_mode(u_char *p, mode_t mode);
static u_char *sft_sftp_put_u32(u_char *p, uint32_t v);
static u_char *sft_sftp_put_u64(u_char *p, uint64_t v);
static u_char *sft_sftp_put_string(u_char *p, const u_char *s, size_t len);
static u_char *sft_sftp_put_attrs(u_char *p, sft_storage_stat_t *st);
static void sft_sftp_packet_done(sft_sftp_session_t *s, u_char *start,
    u_char *end);


/* the getters: each returns SFT_ERROR rather than read past the end */

sft_int_t
sft_sftp_get_u8(sft_sftp_buf_t *b, u_char *v)
{
    if (b->last - b->pos < 1) {
        return SFT_ERROR;
    }

    *v = *b->pos++;

    return SFT_OK;
}


sft_int_t
sft_sftp_get_u32(sft_sftp_buf_t *b, uint32_t *v)
{
    if (b->last - b->pos < 4) {
        return SFT_ERROR;
    }

    *v = ((uint32_t) b->pos[0] << 24) | ((uint32_t) b->pos[1] << 16)
         | ((uint32_t) b->pos[2] << 8) | b->pos[3];
    b->pos += 4;

    return SFT_OK;
}


sft_int_t
sft_sftp_get_u64(sft_sftp_buf_t *b, uint64_t *v)
{
    uint32_t  hi, lo;

    if (sft_sftp_get_u32(b, &hi) != SFT_OK
        || sft_sftp_get_u32(b, &lo) != SFT_OK)
    {
        return SFT_ERROR;
    }

    *v = ((uint64_t) hi << 32) | lo;

    return SFT_OK;
}


sft_int_t
sft_sftp_get_string(sft_sftp_buf_t *b, u_char **data, uint32_t *len)
{
    uint32_t  n;

    if (sft_sftp_get_u32(b, &n) != SFT_OK
        || (size_t) (b->last - b->pos) < n)
    {
        return SFT_ERROR;
    }

    *data = b->pos;
    *len = n;
    b->pos += n;

    return SFT_OK;
}


/* attributes: only what can be applied is kept */

static sft_int_t
sft_sftp_get_attrs(sft_sftp_buf_t *b, sft_sftp_request_t *r)
{
    u_char    *d;
    uint32_t   i, n, len, uid, gid;

    if (sft_sftp_get_u32(b, &r->attr_flags) != SFT_OK) {
        return SFT_ERROR;
    }

    if ((r->attr_flags & SSH_FILEXFER_ATTR_SIZE)
        && sft_sftp_get_u64(b, &r->size) != SFT_OK)
    {
        return SFT_ERROR;
    }

    if ((r->attr_flags & SSH_FILEXFER_ATTR_UIDGID)
        && (sft_sftp_get_u32(b, &uid) != SFT_OK
            || sft_sftp_get_u32(b, &gid) != SFT_OK))
    {
        return SFT_ERROR;
    }

    if ((r->attr_flags & SSH_FILEXFER_ATTR_PERMISSIONS)
        && sft_sftp_get_u32(b, &r->perm) != SFT_OK)
    {
        return SFT_ERROR;
    }

    if ((r->attr_flags & SSH_FILEXFER_ATTR_ACMODTIME)
        && (sft_sftp_get_u32(b, &r->atime) != SFT_OK
            || sft_sftp_get_u32(b, &r->mtime) != SFT_OK))
    {
        return SFT_ERROR;
    }

    if (r->attr_flags & SSH_FILEXFER_ATTR_EXTENDED) {
        if (sft_sftp_get_u32(b, &n) != SFT_OK) {
            return SFT_ERROR;
        }

        for (i = 0; i < n; i++) {
            if (sft_sftp_get_string(b, &d, &len) != SFT_OK
                || sft_sftp_get_string(b, &d, &len) != SFT_OK)
            {
                return SFT_ERROR;
            }
        }
    }

    return SFT_OK;
}


/*
 * An offset and a length from the client, before any arithmetic:
 * SFT_DECLINED (and the reply sent) if they pass the largest offset.
 */

static sft_int_t
sft_sftp_range(sft_sftp_session_t *s, uint32_t id, uint64_t offset,
    uint64_t len)
{
    if (sft_storage_range_valid(offset, len)) {
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "client sent an offset out of range: %llu+%llu",
                  (unsigned long long) offset, (unsigned long long) len);
    sft_sftp_status(s, id, SSH_FX_FAILURE, "Offset out of range");

    return SFT_DECLINED;
}


/*
 * Every complete packet in the input, while the replies and the requests
 * in flight stay under their limits; SFT_ERROR closes the session.
 */

sft_int_t
sft_sftp_process(sft_sftp_session_t *s)
{
    u_char    *p;
    uint32_t   len;

    while (!s->closed) {

        if (s->inflight >= SFT_SFTP_MAX_INFLIGHT
            || s->out_len - s->out_pos + s->reserved >= SFT_SFTP_OUT_HIGH)
        {
            return SFT_OK;
        }

        if (s->in_len - s->in_pos < 4) {
            return SFT_OK;
        }

        p = s->in + s->in_pos;
        len = ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
              | ((uint32_t) p[2] << 8) | p[3];

        if (len < 5 || len > SFT_SFTP_MAX_PACKET) {
            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "client sent sftp packet of bad length %lu",
                          (unsigned long) len);
            return SFT_ERROR;
        }

        if (s->in_len - s->in_pos - 4 < len) {
            return SFT_OK;
        }

        s->in_pos += 4 + len;

        if (sft_sftp_request(s, p + 4, len) != SFT_OK) {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


static sft_int_t
sft_sftp_request(sft_sftp_session_t *s, u_char *p, size_t len)
{
    u_char               type, *path, *path2, *name;
    size_t               reserve;
    uint32_t             id, plen, plen2, nlen, pflags, rlen, version;
    uint64_t             offset;
    sft_int_t            rc;
    sft_uint_t           flags;
    sft_sftp_buf_t       b;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    b.pos = p;
    b.last = p + len;

    rlen = 0;
    nlen = 0;
    offset = 0;

    (void) sft_sftp_get_u8(&b, &type);

    if (type == SSH_FXP_INIT) {
        if (s->inited || sft_sftp_get_u32(&b, &version) != SFT_OK) {
            goto bad;
        }

        s->inited = 1;
        sft_sftp_reply_version(s);
        return SFT_OK;
    }

    if (!s->inited || sft_sftp_get_u32(&b, &id) != SFT_OK) {
        goto bad;
    }

    h = NULL;
    reserve = SFT_SFTP_SMALL_REPLY;

    switch (type) {

    case SSH_FXP_REALPATH:
        if (sft_sftp_get_string(&b, &path, &plen) != SFT_OK) {
            goto bad;
        }

        sft_sftp_reply_realpath(s, id, path, plen);
        return SFT_OK;

    case SSH_FXP_STAT:
    case SSH_FXP_LSTAT:
    case SSH_FXP_OPENDIR:
    case SSH_FXP_REMOVE:
    case SSH_FXP_RMDIR:
        if (sft_sftp_get_string(&b, &path, &plen) != SFT_OK) {
            goto bad;
        }

        r = sft_sftp_request_new(s, type, id, reserve);
        if (r == NULL) {
            return SFT_ERROR;
        }

        switch (type) {

        case SSH_FXP_STAT:
            rc = sft_vfs_stat(&s->vfs, &r->req, path, plen);
            break;

        case SSH_FXP_LSTAT:
            rc = sft_vfs_lstat(&s->vfs, &r->req, path, plen);
            break;

        case SSH_FXP_REMOVE:
            rc = sft_vfs_unlink(&s->vfs, &r->req, path, plen);
            break;

        case SSH_FXP_RMDIR:
            rc = sft_vfs_rmdir(&s->vfs, &r->req, path, plen);
            break;

        default: /* SSH_FXP_OPENDIR */
            h = sft_sftp_handle_new(s, path, plen, 1);
            if (h == NULL) {
                sft_sftp_request_done(r);
                sft_sftp_status(s, id, SSH_FX_FAILURE, "Too many handles");
                return SFT_OK;
            }

            r->handle = h;
            h->busy++;
            rc = sft_vfs_opendir(&s->vfs, &r->req, &h->dir, path, plen);
            break;
        }

        sft_sftp_result(r, rc);
        return SFT_OK;

    case SSH_FXP_MKDIR:
    case SSH_FXP_SETSTAT:
        if (sft_sftp_get_string(&b, &path, &plen) != SFT_OK) {
            goto bad;
        }

        r = sft_sftp_request_new(s, type, id, reserve);
        if (r == NULL) {
            return SFT_ERROR;
        }

        if (sft_sftp_get_attrs(&b, r) != SFT_OK) {
            sft_sftp_request_done(r);
            goto bad;
        }

        if (type == SSH_FXP_MKDIR) {
            rc = sft_vfs_mkdir(&s->vfs, &r->req, path, plen);
            sft_sftp_result(r, rc);
            return SFT_OK;
        }

        r->path = sft_pnalloc(r->pool, plen);
        if (r->path == NULL) {
            sft_sftp_request_done(r);
            return SFT_ERROR;
        }

        sft_memcpy(r->path, path, plen);
        r->path_len = plen;

        r->req.err = SFT_STORAGE_OK;
        sft_sftp_complete(r);
        return SFT_OK;

    case SSH_FXP_RENAME:
        if (sft_sftp_get_string(&b, &path, &plen) != SFT_OK
            || sft_sftp_get_string(&b, &path2, &plen2) != SFT_OK)
        {
            goto bad;
        }

        r = sft_sftp_request_new(s, type, id, reserve);
        if (r == NULL) {
            return SFT_ERROR;
        }

        rc = sft_vfs_rename(&s->vfs, &r->req, path, plen, path2, plen2);
        sft_sftp_result(r, rc);
        return SFT_OK;

    case SSH_FXP_READLINK:
        if (sft_sftp_get_string(&b, &path, &plen) != SFT_OK) {
            goto bad;
        }

        r = sft_sftp_request_new(s, type, id,
                                 SFT_SFTP_SMALL_REPLY
                                 + 2 * SFT_STORAGE_PATH_MAX);
        if (r == NULL) {
            return SFT_ERROR;
        }

        r->path = sft_pnalloc(r->pool, SFT_STORAGE_PATH_MAX);
        if (r->path == NULL) {
            sft_sftp_request_done(r);
            return SFT_ERROR;
        }

        rc = sft_vfs_readlink(&s->vfs, &r->req, path, plen, r->path,
                              SFT_STORAGE_PATH_MAX);
        sft_sftp_result(r, rc);
        return SFT_OK;

    case SSH_FXP_SYMLINK:
        /* OpenSSH's order, the draft's swapped: the target, then the link */
        if (sft_sftp_get_string(&b, &path2, &plen2) != SFT_OK
            || sft_sftp_get_string(&b, &path, &plen) != SFT_OK)
        {
            goto bad;
        }

        r = sft_sftp_request_new(s, type, id, reserve);
        if (r == NULL) {
            return SFT_ERROR;
        }

        rc = sft_vfs_symlink(&s->vfs, &r->req, path, plen, path2, plen2);
        sft_sftp_result(r, rc);
        return SFT_OK;

    case SSH_FXP_OPEN:
        if (sft_sftp_get_string(&b, &path, &plen) != SFT_OK
            || sft_sftp_get_u32(&b, &pflags) != SFT_OK)
        {
            goto bad;
        }

        r = sft_sftp_request_new(s, type, id, reserve);
        if (r == NULL) {
            return SFT_ERROR;
        }

        if (sft_sftp_get_attrs(&b, r) != SFT_OK) {
            sft_sftp_request_done(r);
            goto bad;
        }

        h = sft_sftp_handle_new(s, path, plen, 0);
        if (h == NULL) {
            sft_sftp_request_done(r);
            sft_sftp_status(s, id, SSH_FX_FAILURE, "Too many handles");
            return SFT_OK;
        }

        r->handle = h;
        h->busy++;

        if (!(pflags & SSH_FXF_WRITE)) {
            rc = sft_vfs_open_read(&s->vfs, &r->req, &h->file, path, plen);
            sft_sftp_result(r, rc);
            return SFT_OK;
        }

        h->write = 1;

        if (pflags & SSH_FXF_APPEND) {
            flags = SFT_STORAGE_WRITE_APPEND;

        } else if (pflags & SSH_FXF_TRUNC) {
            flags = SFT_STORAGE_WRITE_REPLACE;

        } else if (pflags & SSH_FXF_EXCL) {
            flags = SFT_STORAGE_WRITE_REPLACE;

        } else {
            flags = SFT_STORAGE_WRITE_INPLACE;
        }

        if (pflags & SSH_FXF_EXCL) {
            flags |= SFT_STORAGE_WRITE_EXCL;
        }

        rc = sft_vfs_open_write(&s->vfs, &r->req, &h->file, path, plen,
                                flags, 0);
        sft_sftp_result(r, rc);
        return SFT_OK;

    case SSH_FXP_CLOSE:
    case SSH_FXP_FSTAT:
    case SSH_FXP_READDIR:
    case SSH_FXP_READ:
    case SSH_FXP_WRITE:
    case SSH_FXP_FSETSTAT:
        if (sft_sftp_get_handle(s, &b, &h) != SFT_OK) {
            goto bad;
        }

        if (h == NULL || h->closing) {
            sft_sftp_status(s, id, SSH_FX_FAILURE, "Invalid handle");
            return SFT_OK;
        }

        if (type == SSH_FXP_READ) {
            if (sft_sftp_get_u64(&b, &offset) != SFT_OK
                || sft_sftp_get_u32(&b, &rlen) != SFT_OK)
            {
                goto bad;
            }

            if (h->is_dir || h->write) {
                sft_sftp_status(s, id, SSH_FX_FAILURE, "Bad handle");
                return SFT_OK;
            }

            /* clamped, as OpenSSH does */
            rlen = sft_min(rlen, (uint32_t) SFT_SFTP_MAX_READ);
            reserve = 13 + rlen;

            if (sft_sftp_range(s, id, offset, rlen) != SFT_OK) {
                return SFT_OK;
            }

            if (h->read_now != SFT_SFTP_READ_THREAD) {
                rc = sft_sftp_read_now(s, h, id, rlen, offset);

                if (rc != SFT_DECLINED) {
                    return rc;
                }
            }
        }

        if (type == SSH_FXP_READDIR) {
            if (!h->is_dir) {
                sft_sftp_status(s, id, SSH_FX_FAILURE, "Bad handle");
                return SFT_OK;
            }

            reserve = SFT_SFTP_DIR_REPLY;
        }

        if (type == SSH_FXP_WRITE) {
            if (sft_sftp_get_u64(&b, &offset) != SFT_OK
                || sft_sftp_get_string(&b, &name, &nlen) != SFT_OK)
            {
                goto bad;
            }

            if (!h->write) {
                sft_sftp_status(s, id, SSH_FX_PERMISSION_DENIED,
                                "Not open for writing");
                return SFT_OK;
            }

            if (sft_sftp_range(s, id, offset, nlen) != SFT_OK) {
                return SFT_OK;
            }
        }

        r = sft_sftp_request_new(s, type, id, reserve);
        if (r == NULL) {
            return SFT_ERROR;
        }

        r->handle = h;

        switch (type) {

        case SSH_FXP_CLOSE:
            h->closing = r;

            if (h->busy == 0) {
                sft_sftp_complete(r);
            }

            return SFT_OK;

        case SSH_FXP_FSTAT:
            /* the completion releases the handle: a CLOSE waits */
            h->busy++;

            /* a file: the open one (an upload's temporary file) */
            rc = h->is_dir ? sft_vfs_stat(&s->vfs, &r->req, h->path,
                                          h->path_len)
                           : sft_vfs_fstat(&s->vfs, &r->req, &h->file);
            break;

        case SSH_FXP_FSETSTAT:
            if (sft_sftp_get_attrs(&b, r) != SFT_OK) {
                sft_sftp_request_done(r);
                goto bad;
            }

            r->req.err = SFT_STORAGE_OK;

            if (h->write) {
                sft_sftp_fsetstat_write(r);
                return SFT_OK;
            }

            r->path = h->path;
            r->path_len = h->path_len;
            r->type = SSH_FXP_SETSTAT;
            r->handle = NULL;
            sft_sftp_complete(r);
            return SFT_OK;

        case SSH_FXP_READDIR:
            if (h->dir_read && h->entry < h->dir.nentries) {
                r->req.err = SFT_STORAGE_OK;
                sft_sftp_complete(r);
                return SFT_OK;
            }

            if (h->dir.eof) {
                sft_sftp_status(s, id, SSH_FX_EOF, "End of file");
                sft_sftp_request_done(r);
                return SFT_OK;
            }

            h->busy++;
            rc = sft_vfs_readdir(&s->vfs, &r->req, &h->dir);
            break;

        case SSH_FXP_READ:
            r->path = sft_pnalloc(r->pool, 13 + rlen);
            if (r->path == NULL) {
                sft_sftp_request_done(r);
                return SFT_ERROR;
            }

            h->busy++;
            rc = sft_vfs_read(&s->vfs, &r->req, &h->file, r->path + 13,
                              rlen, (off_t) offset);
            break;

        default: /* SSH_FXP_WRITE */
            r->path = sft_pnalloc(r->pool, nlen ? nlen : 1);
            if (r->path == NULL) {
                sft_sftp_request_done(r);
                return SFT_ERROR;
            }

            sft_memcpy(r->path, name, nlen);
            r->path_len = nlen;
            r->offset = offset;
            h->busy++;

            if (h->writes) {
                /* after the WRITEs before it */
                *h->writes_last = r;
                h->writes_last = &r->next;
                return SFT_OK;
            }

            h->writes = r;
            h->writes_last = &r->next;
            sft_sftp_write(r);
            return SFT_OK;
        }

        sft_sftp_result(r, rc);
        return SFT_OK;

    case SSH_FXP_EXTENDED:
        if (sft_sftp_get_string(&b, &name, &nlen) != SFT_OK) {
            goto bad;
        }

        return sft_sftp_extended(s, &b, id, name, nlen);

    default:
        sft_sftp_status(s, id, SSH_FX_OP_UNSUPPORTED, "Unsupported request");
        return SFT_OK;
    }

bad:

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "client sent malformed sftp packet of type %u",
                  (unsigned) type);

    return SFT_ERROR;
}


/* the extensions other than posix-rename, hardlink, statvfs and limits */

static sft_int_t
sft_sftp_ext_is(u_char *name, uint32_t nlen, const char *ext)
{
    size_t  len;

    len = sft_strlen(ext);

    return nlen == len && sft_strncmp(name, ext, len) == 0;
}


static sft_int_t
sft_sftp_extended(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    u_char *name, uint32_t nlen)
{
    u_char              *path, *path2;
    uint32_t             plen, plen2;
    sft_int_t            rc;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r;

    if (sft_sftp_ext_is(name, nlen, "limits@openssh.com")) {
        sft_sftp_reply_limits(s, id);
        return SFT_OK;
    }

    if (sft_sftp_ext_is(name, nlen, "statvfs@openssh.com")) {
        if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
            goto bad;
        }

        r = sft_sftp_request_new(s, SSH_FXP_EXTENDED, id,
                                 SFT_SFTP_SMALL_REPLY);
        if (r == NULL) {
            return SFT_ERROR;
        }

        rc = sft_vfs_statvfs(&s->vfs, &r->req, path, plen);
        sft_sftp_result(r, rc);
        return SFT_OK;
    }

    /*
     * posix-rename: the old name, then the new one;
     * hardlink: the existing file, then the new name
     */

    if (sft_sftp_ext_is(name, nlen, "posix-rename@openssh.com")
        || sft_sftp_ext_is(name, nlen, "hardlink@openssh.com"))
    {
        if (sft_sftp_get_string(b, &path, &plen) != SFT_OK
            || sft_sftp_get_string(b, &path2, &plen2) != SFT_OK)
        {
            goto bad;
        }

        r = sft_sftp_request_new(s, SSH_FXP_RENAME, id,
                                 SFT_SFTP_SMALL_REPLY);
        if (r == NULL) {
            return SFT_ERROR;
        }

        if (name[0] == 'p') {
            rc = sft_vfs_rename(&s->vfs, &r->req, path, plen, path2, plen2);
        } else {
            rc = sft_vfs_link(&s->vfs, &r->req, path, plen, path2, plen2);
        }

        sft_sftp_result(r, rc);
        return SFT_OK;
    }

    if (sft_sftp_ext_is(name, nlen, "fstatvfs@openssh.com")
        || sft_sftp_ext_is(name, nlen, "fsync@openssh.com"))
    {
        if (sft_sftp_get_handle(s, b, &h) != SFT_OK) {
            goto bad;
        }

        if (h == NULL || h->closing) {
            sft_sftp_status(s, id, SSH_FX_FAILURE, "Invalid handle");
            return SFT_OK;
        }

        if (name[2] == 't') {   /* fstatvfs, not fsync */
            r = sft_sftp_request_new(s, SSH_FXP_EXTENDED, id,
                                     SFT_SFTP_SMALL_REPLY);
            if (r == NULL) {
                return SFT_ERROR;
            }

            rc = sft_vfs_statvfs(&s->vfs, &r->req, h->path, h->path_len);
            sft_sftp_result(r, rc);
            return SFT_OK;
        }

        if (h->is_dir) {
            sft_sftp_status(s, id, SSH_FX_FAILURE, "Bad handle");
            return SFT_OK;
        }

        r = sft_sftp_request_new(s, SFT_SFTP_FD_OP, id, SFT_SFTP_SMALL_REPLY);
        if (r == NULL) {
            return SFT_ERROR;
        }

        r->handle = h;
        h->busy++;
        sft_sftp_result(r, sft_sftp_fd_op(r, 0));
        return SFT_OK;
    }

    if (sft_sftp_ext_is(name, nlen, "lsetstat@openssh.com")) {
        if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
            goto bad;
        }

        r = sft_sftp_request_new(s, SSH_FXP_SETSTAT, id,
                                 SFT_SFTP_SMALL_REPLY);
        if (r == NULL) {
            return SFT_ERROR;
        }

        if (sft_sftp_get_attrs(b, r) != SFT_OK) {
            sft_sftp_request_done(r);
            goto bad;
        }

        r->path = sft_pnalloc(r->pool, plen ? plen : 1);
        if (r->path == NULL) {
            sft_sftp_request_done(r);
            return SFT_ERROR;
        }

        sft_memcpy(r->path, path, plen);
        r->path_len = plen;

        r->req.err = SFT_STORAGE_OK;
        sft_sftp_complete(r);
        return SFT_OK;
    }

    if (sft_sftp_ext_is(name, nlen, "expand-path@openssh.com")) {
        if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
            goto bad;
        }

        /* the home is the session's "/": "~" and "~/x" are "/" and "/x" */

        if (plen && path[0] == '~') {
            if (plen > 1 && path[1] != '/') {
                sft_sftp_status(s, id, SSH_FX_NO_SUCH_FILE, "No such user");
                return SFT_OK;
            }

            path[0] = '/';
        }

        sft_sftp_reply_realpath(s, id, path, plen);
        return SFT_OK;
    }

    if (sft_sftp_ext_is(name, nlen, "home-directory")) {
        if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
            goto bad;
        }

        if (plen
            && (plen != s->user.len
                || sft_strncmp(path, s->user.data, plen) != 0))
        {
            sft_sftp_status(s, id, SSH_FX_NO_SUCH_FILE, "No such user");
            return SFT_OK;
        }

        sft_sftp_reply_realpath(s, id, (u_char *) "/", 1);
        return SFT_OK;
    }

    if (sft_sftp_ext_is(name, nlen, "users-groups-by-id@openssh.com")) {
        if (sft_sftp_get_string(b, &path, &plen) != SFT_OK
            || sft_sftp_get_string(b, &path2, &plen2) != SFT_OK
            || plen % 4 || plen2 % 4)
        {
            goto bad;
        }

        if (plen / 4 > SFT_SFTP_MAX_IDS || plen2 / 4 > SFT_SFTP_MAX_IDS) {
            sft_sftp_status(s, id, SSH_FX_FAILURE, "Too many ids");
            return SFT_OK;
        }

        sft_sftp_reply_ids(s, id, path, plen, path2, plen2);
        return SFT_OK;
    }

    if (sft_sftp_ext_is(name, nlen, "copy-data")) {
        return sft_sftp_copy_data(s, b, id);
    }

    if (sft_sftp_ext_is(name, nlen, "check-file-name")) {
        return sft_sftp_check_file(s, b, id, 0);
    }

    if (sft_sftp_ext_is(name, nlen, "check-file-handle")) {
        return sft_sftp_check_file(s, b, id, 1);
    }

    sft_sftp_status(s, id, SSH_FX_OP_UNSUPPORTED, "Unsupported extension");
    return SFT_OK;

bad:

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "client sent malformed sftp extension \"%.*s\"",
                  (int) nlen, name);

    return SFT_ERROR;
}


/*
 * An operation on the open file of r->handle, on the thread pool: flags 0
 * is fsync@openssh.com, else what an FSETSTAT of a file open for writing
 * applies to it (SSH_FILEXFER_ATTR_SIZE, _PERMISSIONS, _ACMODTIME) without
 * a path, so that it holds for a temporary upload too.
 */

static sft_int_t
sft_sftp_fd_op(sft_sftp_request_t *r, uint32_t flags)
{
    sft_fd_t             fd;
    sft_sftp_fd_op_t    *ctx;
    sft_thread_task_t   *task;
    sft_sftp_handle_t   *h;
    sft_sftp_session_t  *s;

    s = r->session;
    h = r->handle;

    if (h->file.storage == NULL || h->file.storage->driver->file_fd == NULL
        || s->thread_pool == NULL)
    {
        r->req.err = SFT_STORAGE_UNSUPPORTED;
        return SFT_ERROR;
    }

    fd = h->file.storage->driver->file_fd(&h->file);
    if (fd == -1) {
        r->req.err = SFT_STORAGE_UNSUPPORTED;
        return SFT_ERROR;
    }

    /* not r->req.task: that one is the storage's, for a later step */

    task = sft_thread_task_alloc(r->pool, sizeof(sft_sftp_fd_op_t));
    if (task == NULL) {
        r->req.err = SFT_STORAGE_BUSY;
        return SFT_ERROR;
    }

    ctx = task->ctx;
    ctx->fd = fd;
    ctx->err = 0;
    ctx->flags = flags;
    ctx->size = (off_t) r->size;
    ctx->old_size = h->file.size;
    ctx->mode = (mode_t) r->perm;          /* sft_vfs_file_mode()'s */
    ctx->atime = h->atime;
    ctx->mtime = h->mtime;
    ctx->read_now = h->file.storage->in_memory ? SFT_SFTP_READ_MEMORY
                                               : SFT_SFTP_READ_THREAD;

    r->ctx = ctx;

    /* a larger size is charged first, as a WRITE to it would be */

    if ((flags & SSH_FILEXFER_ATTR_SIZE) && ctx->size > ctx->old_size
        && sft_vfs_charge_write(&s->vfs, &h->file, ctx->old_size,
                                ctx->size - ctx->old_size)
           != SFT_OK)
    {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "quota exceeded: \"%s\" not extended", h->path);
        ctx->flags = 0;
        r->req.err = SFT_STORAGE_QUOTA;
        return SFT_ERROR;
    }

    task->handler = sft_sftp_fd_thread;
    task->event.handler = sft_sftp_task_done;
    task->event.data = r;
    task->event.log = s->log;

    if (sft_thread_task_post(s->thread_pool, task) != SFT_OK) {
        r->req.err = SFT_STORAGE_BUSY;
        return SFT_ERROR;
    }

    return SFT_AGAIN;
}


/* on the loop, after a size change: the quota follows the file's size */

static void
sft_sftp_fd_op_quota(sft_sftp_request_t *r)
{
    off_t                n;
    sft_sftp_fd_op_t    *ctx = r->ctx;
    sft_storage_file_t  *file;

    if (ctx == NULL || !(ctx->flags & SSH_FILEXFER_ATTR_SIZE)) {
        return;
    }

    file = &r->handle->file;

    if (r->req.err != SFT_STORAGE_OK) {
        if (ctx->size <= ctx->old_size) {
            return;
        }

        /* not extended: the charge goes back */
        n = ctx->size - ctx->old_size;
        file->size = ctx->old_size;

    } else if (ctx->size < ctx->old_size) {
        n = ctx->old_size - ctx->size;
        file->size = ctx->size;

    } else {
        return;
    }

    n = sft_min(n, file->charged);
    sft_vfs_quota_credit(r->session->vfs.quota, n, 0);
    file->charged -= n;
}


/*
 * FSETSTAT of a file open for writing: the size and the mode go to the
 * open file now (a temporary upload keeps them through its rename); the
 * times wait for CLOSE, after the last WRITE could change them.
 */

static void
sft_sftp_fsetstat_write(sft_sftp_request_t *r)
{
    mode_t               mode;
    uint32_t             flags;
    sft_sftp_handle_t   *h;
    sft_sftp_session_t  *s;

    s = r->session;
    h = r->handle;

    flags = r->attr_flags
            & (SSH_FILEXFER_ATTR_SIZE|SSH_FILEXFER_ATTR_PERMISSIONS);

    if ((flags & SSH_FILEXFER_ATTR_SIZE)
        && sft_sftp_range(s, r->id, r->size, 0) != SFT_OK)
    {
        sft_sftp_request_done(r);
        return;
    }

    /* a mode as the VFS allows it, as SETSTAT's */

    if (flags & SSH_FILEXFER_ATTR_PERMISSIONS) {
        mode = (mode_t) r->perm;

        if (sft_vfs_file_mode(&s->vfs, h->path, h->path_len, &mode)
            != SFT_OK)
        {
            sft_sftp_status(s, r->id, SSH_FX_PERMISSION_DENIED,
                            "Permission denied");
            sft_sftp_request_done(r);
            return;
        }

        r->perm = mode;
    }

    /* a refused request changes nothing: the times only now */

    if (r->attr_flags & SSH_FILEXFER_ATTR_ACMODTIME) {
        h->atime = r->atime;
        h->mtime = r->mtime;
        h->set_times = 1;
    }

    if (flags == 0) {
        sft_sftp_complete(r);
        return;
    }

    r->type = SFT_SFTP_FD_OP;
    h->busy++;

    sft_sftp_result(r, sft_sftp_fd_op(r, flags));
}


static void
sft_sftp_fd_thread(void *data, sft_log_t *log)
{
    int                rc;
    u_char             byte;
    struct iovec       iov;
    struct timespec    ts[2];
    sft_sftp_fd_op_t  *ctx = data;

    (void) log;

    rc = 0;

    /*
     * the probe of a file open for reading: a file in memory is read on
     * the loop; one whose file system knows RWF_NOWAIT is read there
     * when its pages are cached; any other on the thread pool
     */

    if (ctx->flags == SFT_SFTP_FD_PROBE) {
        iov.iov_base = &byte;
        iov.iov_len = 1;

        /* a storage in memory (in_memory) needs no probe */

        if (ctx->read_now != SFT_SFTP_READ_MEMORY
            && (preadv2(ctx->fd, &iov, 1, 0, RWF_NOWAIT) >= 0
                || errno == EAGAIN))
        {
            ctx->read_now = SFT_SFTP_READ_NOWAIT;
        }

        return;
    }

    if (ctx->flags == 0) {
        rc = fsync(ctx->fd);
    }

    if (rc == 0 && (ctx->flags & SSH_FILEXFER_ATTR_SIZE)) {
        rc = ftruncate(ctx->fd, ctx->size);
    }

    if (rc == 0 && (ctx->flags & SSH_FILEXFER_ATTR_PERMISSIONS)) {
        rc = fchmod(ctx->fd, ctx->mode);
    }

    if (rc == 0 && (ctx->flags & SSH_FILEXFER_ATTR_ACMODTIME)) {
        ts[0].tv_sec = ctx->atime;
        ts[0].tv_nsec = 0;
        ts[1].tv_sec = ctx->mtime;
        ts[1].tv_nsec = 0;
        rc = futimens(ctx->fd, ts);
    }

    ctx->err = (rc == -1) ? errno : 0;
}


static void
sft_sftp_task_done(sft_event_t *ev)
{
    sft_sftp_request_t  *r = ev->data;
    sft_sftp_fd_op_t    *fop = r->ctx;

    r->req.err = sft_storage_map_errno(fop->err);
    r->req.sys_err = fop->err;

    sft_sftp_op_done(&r->req);
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
    sft_uint_t by_handle)
{
    u_char                *path, *algos, *p, *a, *last;
    uint32_t               plen, alen, block;
    uint64_t               start, length;
    sft_int_t              rc;
    sft_uint_t             i;
    sft_sftp_check_t      *ctx;
    sft_sftp_handle_t     *h;
    sft_sftp_request_t    *r;
    sft_storage_digest_t  *d;

    static const char     *names[] = { "md5", "sha1", "sha256", "sha512",
                                       "crc32", "crc32c" };

    static const sft_digest_algo_t  kinds[] = {
        SFT_DIGEST_MD5, SFT_DIGEST_SHA1, SFT_DIGEST_SHA256,
        SFT_DIGEST_SHA512, SFT_DIGEST_CRC32, SFT_DIGEST_CRC32C
    };

    h = NULL;
    path = NULL;
    plen = 0;

    if (by_handle) {
        if (sft_sftp_get_handle(s, b, &h) != SFT_OK) {
            return SFT_ERROR;
        }

    } else if (sft_sftp_get_string(b, &path, &plen) != SFT_OK) {
        return SFT_ERROR;
    }

    if (sft_sftp_get_string(b, &algos, &alen) != SFT_OK
        || sft_sftp_get_u64(b, &start) != SFT_OK
        || sft_sftp_get_u64(b, &length) != SFT_OK
        || sft_sftp_get_u32(b, &block) != SFT_OK)
    {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "client sent malformed sftp extension \"check-file\"");
        return SFT_ERROR;
    }

    /* the first of the client's algorithms that we have */

    i = sizeof(names) / sizeof(names[0]);
    last = algos + alen;

    for (p = algos; p < last; p++) {
        a = p;

        while (p < last && *p != ',') {
            p++;
        }

        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            if ((size_t) (p - a) == sft_strlen(names[i])
                && sft_strncmp(a, names[i], p - a) == 0)
            {
                break;
            }
        }

        if (i < sizeof(names) / sizeof(names[0])) {
            break;
        }
    }

    if (i >= sizeof(names) / sizeof(names[0])) {
        sft_sftp_status(s, id, SSH_FX_OP_UNSUPPORTED,
                        "No supported hash algorithm");
        return SFT_OK;
    }

    if (block != 0 && block < 256) {
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Invalid block size");
        return SFT_OK;
    }

    if (sft_sftp_range(s, id, start, length) != SFT_OK) {
        return SFT_OK;
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

    r = sft_sftp_request_new(s, SFT_SFTP_CHECK_FILE, id,
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

    d->algo = kinds[i];
    d->start = (off_t) start;
    d->end = length ? (off_t) (start + length) : -1;
    d->block = block;
    d->cancel = &s->cancel;
    d->log = s->log;
    d->handler = sft_sftp_check_done;
    d->data = r;

    ctx->algo = names[i];
    ctx->algo_len = sft_strlen(names[i]);
    ctx->file.fd = SFT_INVALID_FILE;
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

    /* step 0: open the name */

    rc = sft_vfs_open_read(&s->vfs, &r->req, &ctx->file, path, plen);
    sft_sftp_result(r, rc);

    return SFT_OK;
}


static sft_int_t
sft_sftp_check_post(sft_sftp_request_t *r)
{
    sft_sftp_check_t  *ctx = r->ctx;

    if (sft_storage_digest(&ctx->digest, r->pool, r->session->thread_pool)
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

    if (ctx == NULL || r->handle || ctx->file.storage == NULL
        || ctx->file.fd == SFT_INVALID_FILE || ctx->file.closed)
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


/*
 * copy-data (draft-ietf-secsh-filexfer-extensions-00, 7): the server
 * copies as a READ and WRITE loop would, so each chunk goes through the
 * VFS write path (quota) and a failed write keeps the upload from being
 * committed, as a failed WRITE does.
 *
 *     string  read-from-handle     open for reading
 *     uint64  read-from-offset
 *     uint64  read-data-length     0: to the end of the file
 *     string  write-to-handle      open for writing
 *     uint64  write-to-offset
 *
 * Both ends may be the same file (an in-place write handle of the file a
 * read handle has open) if the ranges do not overlap.
 */

static sft_int_t
sft_sftp_copy_data(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id)
{
    uint64_t             roff, len, woff;
    sft_sftp_copy_t     *ctx;
    sft_sftp_handle_t   *from, *to;
    sft_sftp_request_t  *r;

    if (sft_sftp_get_handle(s, b, &from) != SFT_OK
        || sft_sftp_get_u64(b, &roff) != SFT_OK
        || sft_sftp_get_u64(b, &len) != SFT_OK
        || sft_sftp_get_handle(s, b, &to) != SFT_OK
        || sft_sftp_get_u64(b, &woff) != SFT_OK)
    {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "client sent malformed sftp extension \"copy-data\"");
        return SFT_ERROR;
    }

    if (from == NULL || to == NULL || from->closing || to->closing) {
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Invalid handle");
        return SFT_OK;
    }

    if (from->is_dir || from->write) {
        sft_sftp_status(s, id, SSH_FX_PERMISSION_DENIED,
                        "Source not open for reading");
        return SFT_OK;
    }

    if (!to->write) {
        sft_sftp_status(s, id, SSH_FX_PERMISSION_DENIED,
                        "Destination not open for writing");
        return SFT_OK;
    }

    if (sft_sftp_range(s, id, roff, len) != SFT_OK
        || sft_sftp_range(s, id, woff, len) != SFT_OK)
    {
        return SFT_OK;
    }

    if (to->write_err != SFT_STORAGE_OK) {
        sft_sftp_storage_status(s, id, to->write_err);
        return SFT_OK;
    }

    r = sft_sftp_request_new(s, SFT_SFTP_COPY_DATA, id,
                             SFT_SFTP_SMALL_REPLY + SFT_SFTP_COPY_CHUNK);
    if (r == NULL) {
        return SFT_ERROR;
    }

    ctx = sft_pcalloc(r->pool, sizeof(sft_sftp_copy_t));
    if (ctx == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    ctx->to = to;
    ctx->roff = roff;
    ctx->woff = woff;
    ctx->left = len;
    ctx->to_eof = (len == 0);

    if (sft_sftp_copy_overlap(ctx, from) != SFT_OK) {
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Overlapping ranges");
        sft_sftp_request_done(r);
        return SFT_OK;
    }

    ctx->buf = sft_pnalloc(r->pool, SFT_SFTP_COPY_CHUNK);
    if (ctx->buf == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    r->ctx = ctx;
    r->handle = from;
    from->busy++;
    to->busy++;

    /* step 0: a read, step 1: its write */

    sft_sftp_result(r, sft_sftp_copy_read(r));

    return SFT_OK;
}


static sft_int_t
sft_sftp_copy_read(sft_sftp_request_t *r)
{
    sft_sftp_copy_t  *ctx = r->ctx;

    r->step = 0;

    return sft_vfs_read(&r->session->vfs, &r->req, &r->handle->file,
                        ctx->buf,
                        ctx->to_eof ? SFT_SFTP_COPY_CHUNK
                                    : sft_min(ctx->left, SFT_SFTP_COPY_CHUNK),
                        (off_t) ctx->roff);
}


/*
 * Written in place into the file being read: the range read is fixed at
 * the size now (a copy to the end would chase its own writes), and must
 * not overlap the range written.
 */

static sft_int_t
sft_sftp_copy_overlap(sft_sftp_copy_t *ctx, sft_sftp_handle_t *from)
{
    sft_fd_t            rfd, wfd;
    uint64_t            wstart;
    struct stat         rsb, wsb;
    sft_storage_file_t  *w;

    w = &ctx->to->file;

    if (w->temp_file || w->storage->driver->file_fd == NULL) {
        return SFT_OK;
    }

    rfd = from->file.storage->driver->file_fd(&from->file);
    wfd = w->storage->driver->file_fd(w);

    /* fstat(2) of open files: the inodes are in memory */

    if (rfd == SFT_INVALID_FILE || wfd == SFT_INVALID_FILE
        || fstat(rfd, &rsb) == -1 || fstat(wfd, &wsb) == -1
        || rsb.st_dev != wsb.st_dev || rsb.st_ino != wsb.st_ino)
    {
        return SFT_OK;
    }

    if (ctx->to_eof) {
        ctx->to_eof = 0;
        ctx->left = (uint64_t) rsb.st_size > ctx->roff
                    ? (uint64_t) rsb.st_size - ctx->roff : 0;
    }

    wstart = (w->flags & SFT_STORAGE_WRITE_APPEND) ? (uint64_t) wsb.st_size
                                                   : ctx->woff;

    if (ctx->left && ctx->roff < wstart + ctx->left
        && wstart < ctx->roff + ctx->left)
    {
        return SFT_ERROR;
    }

    return SFT_OK;
}


/* on the loop: a read or a write of copy-data is over */

static void
sft_sftp_copy_complete(sft_sftp_request_t *r)
{
    size_t               n;
    sft_int_t            rc;
    sft_sftp_copy_t     *ctx = r->ctx;
    sft_sftp_handle_t   *to = ctx->to;
    sft_sftp_session_t  *s = r->session;

    for ( ;; ) {

        if (r->req.err != SFT_STORAGE_OK) {
            if (r->step == 1 && to->write_err == SFT_STORAGE_OK) {
                to->write_err = r->req.err;
            }

            sft_sftp_storage_status(s, r->id, r->req.err);
            break;
        }

        if (r->step == 0) {
            n = (size_t) r->req.nbytes;

            if (n == 0) {
                /* the end of the file */
                sft_sftp_status(s, r->id, SSH_FX_OK, "Success");
                break;
            }

            r->step = 1;
            rc = sft_vfs_write(&s->vfs, &r->req, &to->file, ctx->buf, n,
                               (off_t) ctx->woff);

        } else {
            n = r->req.len;

            if ((size_t) r->req.nbytes != n) {
                to->write_err = SFT_STORAGE_IO;
                sft_sftp_status(s, r->id, SSH_FX_FAILURE, "Short write");
                break;
            }

            ctx->roff += n;
            ctx->woff += n;

            if (!ctx->to_eof) {
                ctx->left -= n;

                if (ctx->left == 0) {
                    sft_sftp_status(s, r->id, SSH_FX_OK, "Success");
                    break;
                }
            }

            rc = sft_sftp_copy_read(r);
        }

        if (rc == SFT_AGAIN) {
            s->pending++;
            return;
        }

        if (rc == SFT_OK) {
            r->req.err = SFT_STORAGE_OK;
        }
    }

    sft_sftp_handle_idle(r->handle);
    sft_sftp_handle_idle(to);
    sft_sftp_request_done(r);
}


/* an operation on the handle is over: a CLOSE may have waited for it */

static void
sft_sftp_handle_idle(sft_sftp_handle_t *h)
{
    h->busy--;

    if (h->busy == 0 && h->closing) {
        sft_sftp_complete(h->closing);
    }
}


/*
 * A READ answered at once, with no request: the file is read straight
 * into the output, behind the reply's header, if its pages are in memory
 * (see the probe in sft_sftp_fd_thread()).  SFT_DECLINED: they are not,
 * the read goes to the thread pool.
 */

static sft_int_t
sft_sftp_read_now(sft_sftp_session_t *s, sft_sftp_handle_t *h, uint32_t id,
    uint32_t len, uint64_t offset)
{
    u_char        *p;
    ssize_t        n;
    struct iovec   iov;

    p = sft_sftp_reply_space(s, 13 + len);
    if (p == NULL) {
        return SFT_ERROR;
    }

    iov.iov_base = p + 13;
    iov.iov_len = len;

    n = preadv2(h->file.storage->driver->file_fd(&h->file), &iov, 1,
                (off_t) offset,
                h->read_now == SFT_SFTP_READ_NOWAIT ? RWF_NOWAIT : 0);

    if (n == -1) {
        if (errno == EOPNOTSUPP) {
            h->read_now = SFT_SFTP_READ_THREAD;
        }

        /* EAGAIN: not cached; any error: the thread pool reports it */
        return SFT_DECLINED;
    }

    /*
     * only part of the range cached (readahead under way): the thread
     * pool reads all of it, rather than a short answer the client must
     * ask again for
     */

    if (h->read_now == SFT_SFTP_READ_NOWAIT && (size_t) n < len
        && (off_t) offset + n < h->file.size)
    {
        return SFT_DECLINED;
    }

    if (n == 0) {
        sft_sftp_status(s, id, SSH_FX_EOF, "End of file");
        return SFT_OK;
    }

    (void) sft_sftp_put_u32(p, 9 + (uint32_t) n);
    p[4] = SSH_FXP_DATA;
    (void) sft_sftp_put_u32(p + 5, id);
    (void) sft_sftp_put_u32(p + 9, (uint32_t) n);

    h->bytes += n;
    s->out_len += 13 + n;

    return SFT_OK;
}


/* requests in flight */

static sft_sftp_request_t *
sft_sftp_request_new(sft_sftp_session_t *s, u_char type, uint32_t id,
    size_t reserve)
{
    sft_pool_t          *pool;
    sft_sftp_request_t  *r;

    pool = sft_create_pool(1024, s->log);
    if (pool == NULL) {
        return NULL;
    }

    r = sft_pcalloc(pool, sizeof(sft_sftp_request_t));
    if (r == NULL) {
        sft_destroy_pool(pool);
        return NULL;
    }

    r->session = s;
    r->pool = pool;
    r->id = id;
    r->type = type;
    r->reserve = reserve;

    r->req.pool = pool;
    r->req.handler = sft_sftp_op_done;
    r->req.data = r;

    s->inflight++;
    s->reserved += reserve;

    return r;
}


static void
sft_sftp_request_done(sft_sftp_request_t *r)
{
    sft_sftp_session_t  *s = r->session;

    s->inflight--;
    s->reserved -= r->reserve;

    sft_destroy_pool(r->pool);
}


static void
sft_sftp_result(sft_sftp_request_t *r, sft_int_t rc)
{
    if (rc == SFT_AGAIN) {
        r->session->pending++;
        return;
    }

    if (rc == SFT_OK) {
        r->req.err = SFT_STORAGE_OK;
    }

    sft_sftp_complete(r);
}


static void
sft_sftp_op_done(sft_storage_req_t *req)
{
    sft_sftp_request_t  *r = req->data;
    sft_sftp_session_t  *s = r->session;

    if (s->closed) {
        if ((r->type == SSH_FXP_OPEN || r->type == SSH_FXP_OPENDIR)
            && r->step == 0 && req->err == SFT_STORAGE_OK)
        {
            /* opened for no one: closed again, an upload removed */
            r->handle->opened = 1;
        }

        if (r->type == SFT_SFTP_FD_OP) {
            /* the quota follows the size the file was given */
            sft_sftp_fd_op_quota(r);
        }

        if (r->handle) {
            sft_sftp_handle_release(s, r->handle);
        }

        if (r->type == SFT_SFTP_CHECK_FILE) {
            sft_sftp_check_abort(r);
        }

        if (r->type == SFT_SFTP_COPY_DATA) {
            sft_sftp_handle_release(s, ((sft_sftp_copy_t *) r->ctx)->to);
        }

        sft_sftp_request_done(r);
        sft_sftp_op_finished(s);
        return;
    }

    s->pending--;

    sft_sftp_complete(r);
    sft_sftp_resume(s);
}


/*
 * A handle's WRITEs run one at a time, in the order they came: replies
 * then go out in that order too, which clients that pipeline WRITEs and
 * take their replies in turn (paramiko) rely on; an earlier failure
 * fails the rest unwritten.
 */

static void
sft_sftp_write(sft_sftp_request_t *r)
{
    sft_int_t            rc;
    sft_sftp_handle_t   *h;
    sft_sftp_session_t  *s;

    s = r->session;
    h = r->handle;

    if (h->write_err != SFT_STORAGE_OK) {
        r->req.err = h->write_err;
        sft_sftp_complete(r);
        return;
    }

    rc = sft_vfs_write(&s->vfs, &r->req, &h->file, r->path, r->path_len,
                       (off_t) r->offset);
    sft_sftp_result(r, rc);
}


/* one step of a request is over: reply, or start the next step */

static void
sft_sftp_complete(sft_sftp_request_t *r)
{
    u_char              *p;
    sft_int_t            rc;
    sft_storage_err_t    err;
    sft_sftp_handle_t   *h;
    sft_sftp_session_t  *s;

    s = r->session;
    h = r->handle;
    err = r->req.err;

    switch (r->type) {

    case SSH_FXP_STAT:
    case SSH_FXP_LSTAT:
    case SSH_FXP_FSTAT:
        if (h) {
            h->busy--;
        }

        if (err == SFT_STORAGE_OK) {
            sft_sftp_reply_attrs(s, r->id, &r->req.st);

        } else {
            sft_sftp_storage_status(s, r->id, err);
        }

        break;

    case SSH_FXP_OPEN:
    case SSH_FXP_OPENDIR:
        /* step 1: the probe of a file open for reading is over */

        if (r->step == 1) {
            if (err == SFT_STORAGE_OK && r->ctx) {
                h->read_now = ((sft_sftp_fd_op_t *) r->ctx)->read_now;
            }

            err = SFT_STORAGE_OK;

        } else if (err == SFT_STORAGE_OK && !h->is_dir && !h->write
                   && h->file.storage->driver->file_fd)
        {
            h->opened = 1;
            r->step = 1;

            if (sft_sftp_fd_op(r, SFT_SFTP_FD_PROBE) == SFT_AGAIN) {
                s->pending++;
                return;
            }

            err = SFT_STORAGE_OK;
        }

        h->busy--;

        if (err == SFT_STORAGE_OK) {
            h->opened = 1;
            sft_sftp_reply_handle(s, r->id, h);

        } else {
            sft_sftp_storage_status(s, r->id, err);
            sft_sftp_handle_free(s, h);
            h = NULL;
        }

        break;

    case SSH_FXP_READ:
        h->busy--;

        if (err != SFT_STORAGE_OK) {
            sft_sftp_storage_status(s, r->id, err);
            break;
        }

        if (r->req.nbytes <= 0) {
            sft_sftp_status(s, r->id, SSH_FX_EOF, "End of file");
            break;
        }

        p = sft_sftp_reply_space(s, 13 + r->req.nbytes);
        if (p == NULL) {
            break;
        }

        (void) sft_sftp_put_u32(r->path, 9 + r->req.nbytes);
        r->path[4] = SSH_FXP_DATA;
        (void) sft_sftp_put_u32(r->path + 5, r->id);
        (void) sft_sftp_put_u32(r->path + 9, r->req.nbytes);

        sft_memcpy(p, r->path, 13 + r->req.nbytes);
        s->out_len += 13 + r->req.nbytes;
        h->bytes += r->req.nbytes;
        break;

    case SSH_FXP_WRITE:
        h->busy--;

        if (err != SFT_STORAGE_OK) {
            if (h->write_err == SFT_STORAGE_OK) {
                h->write_err = err;
            }

            sft_sftp_storage_status(s, r->id, err);
            break;
        }

        if ((size_t) r->req.nbytes != r->req.len) {
            h->write_err = SFT_STORAGE_IO;
            sft_sftp_status(s, r->id, SSH_FX_FAILURE, "Short write");
            break;
        }

        h->bytes += r->req.len;
        sft_sftp_status(s, r->id, SSH_FX_OK, "Success");
        break;

    case SSH_FXP_READDIR:
        if (r->req.op == SFT_STORAGE_READDIR) {
            h->busy--;
            r->req.op = SFT_STORAGE_NOPS;

            if (err != SFT_STORAGE_OK) {
                sft_sftp_storage_status(s, r->id, err);
                break;
            }

            h->dir_read = 1;
            h->entry = 0;

            if (h->dir.nentries == 0) {
                sft_sftp_status(s, r->id, SSH_FX_EOF, "End of file");
                break;
            }
        }

        sft_sftp_reply_names(r);
        break;

    case SSH_FXP_CLOSE:
        /*
         * step 0: the times an FSETSTAT left for the end (after the
         * last WRITE, kept by the rename of a temporary upload);
         * step 1: the close and commit; step 2: the reply
         */

        if (r->step == 0) {
            r->step = 1;

            if (!h->opened || h->write_err != SFT_STORAGE_OK) {
                h->set_times = 0;
            }

            if (h->set_times) {
                h->busy++;
                rc = sft_sftp_fd_op(r, SSH_FILEXFER_ATTR_ACMODTIME);

                if (rc == SFT_AGAIN) {
                    s->pending++;
                    return;
                }

                err = r->req.err;
            }
        }

        if (r->step == 1) {
            r->step = 2;

            if (h->set_times) {
                h->set_times = 0;
                h->busy--;

                if (err != SFT_STORAGE_OK) {
                    /* as a failed WRITE: not committed */
                    sft_log_error(SFT_LOG_INFO, s->log, r->req.sys_err,
                                  "times of \"%s\" not set", h->path);
                    h->write_err = err;
                }
            }

            if (!h->opened) {
                err = SFT_STORAGE_OK;

            } else {
                h->busy++;
                h->opened = 0;

                if (h->is_dir) {
                    rc = sft_vfs_closedir(&s->vfs, &r->req, &h->dir);

                } else {
                    rc = sft_vfs_close(&s->vfs, &r->req, &h->file,
                                       h->write_err == SFT_STORAGE_OK);
                }

                if (rc == SFT_AGAIN) {
                    s->pending++;
                    return;
                }

                if (rc == SFT_OK) {
                    r->req.err = SFT_STORAGE_OK;
                }

                err = r->req.err;
            }
        }

        if (h->busy) {
            h->busy--;
        }

        h->opened = 0;

        if (err == SFT_STORAGE_OK && h->write_err != SFT_STORAGE_OK) {
            err = h->write_err;
        }

        if (err == SFT_STORAGE_OK) {
            sft_sftp_status(s, r->id, SSH_FX_OK, "Success");

        } else {
            sft_sftp_storage_status(s, r->id, err);
        }

        if (!h->is_dir) {
            h->closed = (err == SFT_STORAGE_OK);
            sft_sftp_handle_report(s, h);
        }

        sft_sftp_handle_free(s, h);
        h = NULL;
        break;

    case SSH_FXP_SETSTAT:
        /* step 0: chmod; step 1: mtime; step 2: the reply */

        if (err != SFT_STORAGE_OK) {
            sft_sftp_storage_status(s, r->id, err);
            break;
        }

        if (r->attr_flags & SSH_FILEXFER_ATTR_SIZE) {
            sft_sftp_status(s, r->id, SSH_FX_OP_UNSUPPORTED,
                            "Changing the size is not supported");
            break;
        }

        while (r->step < 2) {
            r->step++;

            if (r->step == 1
                && (r->attr_flags & SSH_FILEXFER_ATTR_PERMISSIONS))
            {
                rc = sft_vfs_chmod(&s->vfs, &r->req, r->path, r->path_len,
                                   (mode_t) r->perm);

            } else if (r->step == 2
                       && (r->attr_flags & SSH_FILEXFER_ATTR_ACMODTIME))
            {
                rc = sft_vfs_settimes(&s->vfs, &r->req, r->path,
                                      r->path_len, (time_t) r->atime,
                                      (time_t) r->mtime);

            } else {
                continue;
            }

            if (rc == SFT_AGAIN) {
                s->pending++;
                return;
            }

            if (rc != SFT_OK) {
                sft_sftp_storage_status(s, r->id, r->req.err);
                goto done;
            }
        }

        sft_sftp_status(s, r->id, SSH_FX_OK, "Success");
        break;

    case SSH_FXP_READLINK:
        if (err == SFT_STORAGE_OK) {
            sft_sftp_reply_readlink(r);

        } else {
            sft_sftp_storage_status(s, r->id, err);
        }

        break;

    case SFT_SFTP_FD_OP:
        h->busy--;

        sft_sftp_fd_op_quota(r);

        if (err == SFT_STORAGE_OK) {
            sft_sftp_status(s, r->id, SSH_FX_OK, "Success");

        } else {
            sft_sftp_storage_status(s, r->id, err);
        }

        break;

    case SFT_SFTP_CHECK_FILE:
        sft_sftp_check_complete(r);
        return;

    case SFT_SFTP_COPY_DATA:
        sft_sftp_copy_complete(r);
        return;

    case SSH_FXP_EXTENDED:
        /* statvfs@openssh.com, fstatvfs@openssh.com */
        if (err == SFT_STORAGE_OK) {
            sft_sftp_reply_statvfs(s, r->id, &r->req.vfs);

        } else {
            sft_sftp_storage_status(s, r->id, err);
        }

        break;

    default:
        /* MKDIR, RMDIR, REMOVE, RENAME */
        if (err == SFT_STORAGE_OK) {
            sft_sftp_status(s, r->id, SSH_FX_OK, "Success");

        } else {
            sft_sftp_storage_status(s, r->id, err);
        }

        break;
    }

done:

    if (r->type == SSH_FXP_WRITE) {
        /* the next WRITE of the handle, once this one is answered */
        h->writes = r->next;

        if (h->writes) {
            sft_sftp_write(h->writes);
        }
    }

    if (h && h->busy == 0 && h->closing && h->closing != r) {
        /* a CLOSE waited for the operations on the handle */
        sft_sftp_complete(h->closing);
    }

    sft_sftp_request_done(r);
}


/* handles: a 4-byte index into the session's table */

static sft_sftp_handle_t *
sft_sftp_handle_new(sft_sftp_session_t *s, u_char *path, size_t len,
    sft_uint_t is_dir)
{
    size_t              size;
    sft_uint_t          i;
    sft_sftp_handle_t  *h;

    if (s->nhandles == SFT_SFTP_MAX_HANDLES || len > SFT_STORAGE_PATH_MAX) {
        return NULL;
    }

    for (i = 0; s->handles[i]; i++) { /* void */ }

    /*
     * a directory's batch of entries lives as long as the handle: the
     * READDIRs fill it from a thread long after OPENDIR's pool is gone
     */

    size = sft_align(sizeof(sft_sftp_handle_t) + len + 1, sizeof(void *));

    h = sft_alloc(size + (is_dir ? SFT_STORAGE_DIR_BATCH
                                   * sizeof(sft_storage_dirent_t)
                                   + SFT_STORAGE_PATH_MAX + 1 : 0),
                  s->log);
    if (h == NULL) {
        return NULL;
    }

    sft_memzero(h, sizeof(sft_sftp_handle_t));

    h->index = i;
    h->begin = sft_current_msec;
    h->path = (u_char *) (h + 1);
    sft_memcpy(h->path, path, len);
    h->path[len] = '\0';
    h->path_len = len;

    if (is_dir) {
        h->is_dir = 1;
        h->dir.entries = (sft_storage_dirent_t *) ((u_char *) h + size);
        h->dir.vdir = (u_char *) (h->dir.entries + SFT_STORAGE_DIR_BATCH);
    }

    s->handles[i] = h;
    s->nhandles++;

    return h;
}


/* a file handle's end: the transfer log and counters */

static void
sft_sftp_handle_report(sft_sftp_session_t *s, sft_sftp_handle_t *h)
{
    sft_xfer_t  x;

    sft_memzero(&x, sizeof(sft_xfer_t));

    x.service = "sftp";
    x.peer = &s->peer.client;
    x.user = &s->user;
    x.path = h->path;
    x.path_len = h->path_len;
    x.cwd = s->vfs.cwd;
    x.cwd_len = s->vfs.cwd_len;
    x.bytes = h->bytes;
    x.start = h->begin;
    x.direction = h->write ? SFT_XFER_UPLOAD : SFT_XFER_DOWNLOAD;
    x.data_path = SFT_XFER_SFTP;
    x.complete = h->closed;

    sft_xfer_done(&x);
}


static void
sft_sftp_handle_free(sft_sftp_session_t *s, sft_sftp_handle_t *h)
{
    s->handles[h->index] = NULL;
    s->nhandles--;

    sft_free(h);
}


static sft_int_t
sft_sftp_get_handle(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    sft_sftp_handle_t **h)
{
    u_char    *d;
    uint32_t   len, i;

    if (sft_sftp_get_string(b, &d, &len) != SFT_OK) {
        return SFT_ERROR;
    }

    *h = NULL;

    if (len != 4) {
        return SFT_OK;
    }

    i = ((uint32_t) d[0] << 24) | ((uint32_t) d[1] << 16)
        | ((uint32_t) d[2] << 8) | d[3];

    if (i < SFT_SFTP_MAX_HANDLES && s->handles[i] && s->handles[i]->opened) {
        *h = s->handles[i];
    }

    return SFT_OK;
}


/* a closed session: files closed at once, uploads not committed */

static void
sft_sftp_handle_release(sft_sftp_session_t *s, sft_sftp_handle_t *h)
{
    sft_storage_req_t  req;

    if (h->busy) {
        h->busy--;
    }

    if (h->busy || !h->released) {
        return;
    }

    if (h->opened) {
        sft_memzero(&req, sizeof(sft_storage_req_t));
        req.pool = s->pool;

        if (h->is_dir) {
            (void) sft_vfs_closedir(&s->vfs, &req, &h->dir);

        } else {
            (void) sft_vfs_close(&s->vfs, &req, &h->file, 0);
            sft_sftp_handle_report(s, h);
        }
    }

    sft_sftp_handle_free(s, h);
}


void
sft_sftp_free_handles(sft_sftp_session_t *s)
{
    sft_uint_t           i;
    sft_sftp_handle_t   *h;
    sft_sftp_request_t  *r, *next;

    /* synchronously from now on: a close is quick */
    s->vfs.thread_pool = NULL;

    for (i = 0; i < SFT_SFTP_MAX_HANDLES; i++) {
        h = s->handles[i];

        if (h == NULL) {
            continue;
        }

        if (h->closing && h->closing->step == 0) {
            /* a CLOSE that waited */
            sft_sftp_request_done(h->closing);
        }

        if (h->writes) {
            /* the WRITEs that wait behind the one running */
            for (r = h->writes->next; r; r = next) {
                next = r->next;
                h->busy--;
                sft_sftp_request_done(r);
            }

            h->writes->next = NULL;
        }

        /* released by the last operation running on it */
        h->closing = NULL;
        h->released = 1;
        h->busy++;
        sft_sftp_handle_release(s, h);
    }
}


/* replies */

static u_char *
sft_sftp_mode(u_char *p, mode_t mode)
{
    sft_uint_t   i;
    static char  rwx[] = "rwxrwxrwx";

    *p++ = S_ISDIR(mode) ? 'd' : S_ISLNK(mode) ? 'l' : '-';

    for (i = 0; i < 9; i++) {
        *p++ = (mode & (0400 >> i)) ? rwx[i] : '-';
    }

    return p;
}


static u_char *
sft_sftp_put_u32(u_char *p, uint32_t v)
{
    *p++ = (u_char) (v >> 24);
    *p++ = (u_char) (v >> 16);
    *p++ = (u_char) (v >> 8);
    *p++ = (u_char) v;

    return p;
}


static u_char *
sft_sftp_put_u64(u_char *p, uint64_t v)
{
    p = sft_sftp_put_u32(p, (uint32_t) (v >> 32));
    return sft_sftp_put_u32(p, (uint32_t) v);
}


static u_char *
sft_sftp_put_string(u_char *p, const u_char *s, size_t len)
{
    p = sft_sftp_put_u32(p, (uint32_t) len);
    return sft_cpymem(p, s, len);
}


static u_char *
sft_sftp_put_attrs(u_char *p, sft_storage_stat_t *st)
{
    p = sft_sftp_put_u32(p, SSH_FILEXFER_ATTR_SIZE|SSH_FILEXFER_ATTR_UIDGID
                            |SSH_FILEXFER_ATTR_PERMISSIONS
                            |SSH_FILEXFER_ATTR_ACMODTIME);
    p = sft_sftp_put_u64(p, (uint64_t) st->size);
    p = sft_sftp_put_u32(p, st->uid);
    p = sft_sftp_put_u32(p, st->gid);
    p = sft_sftp_put_u32(p, st->mode);
    p = sft_sftp_put_u32(p, (uint32_t) st->atime);
    return sft_sftp_put_u32(p, (uint32_t) st->mtime);
}


/* the length field of a packet written from start, now that it is known */

static void
sft_sftp_packet_done(sft_sftp_session_t *s, u_char *start, u_char *end)
{
    (void) sft_sftp_put_u32(start, (uint32_t) (end - start - 4));
    s->out_len += end - start;
}


static void
sft_sftp_status(sft_sftp_session_t *s, uint32_t id, uint32_t code,
    const char *msg)
{
    u_char  *p, *start;
    size_t   len;

    len = sft_strlen(msg);

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 4 + 4 + len + 4);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_STATUS;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_u32(p, code);
    p = sft_sftp_put_string(p, (u_char *) msg, len);
    p = sft_sftp_put_string(p, (u_char *) "", 0);

    sft_sftp_packet_done(s, start, p);
}


static void
sft_sftp_storage_status(sft_sftp_session_t *s, uint32_t id,
    sft_storage_err_t err)
{
    switch (err) {

    case SFT_STORAGE_NOT_FOUND:
        sft_sftp_status(s, id, SSH_FX_NO_SUCH_FILE, "No such file");
        break;

    case SFT_STORAGE_PERMISSION:
    case SFT_STORAGE_NAME_INVALID:
        sft_sftp_status(s, id, SSH_FX_PERMISSION_DENIED,
                        "Permission denied");
        break;

    case SFT_STORAGE_UNSUPPORTED:
        sft_sftp_status(s, id, SSH_FX_OP_UNSUPPORTED,
                        "Operation unsupported");
        break;

    default:
        sft_sftp_status(s, id, SSH_FX_FAILURE, sft_storage_strerror(err));
        break;
    }
}


static void
sft_sftp_reply_handle(sft_sftp_session_t *s, uint32_t id,
    sft_sftp_handle_t *h)
{
    u_char  *p, *start;
    u_char   hid[4];

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 8);
    if (start == NULL) {
        return;
    }

    (void) sft_sftp_put_u32(hid, (uint32_t) h->index);

    p = start + 4;
    *p++ = SSH_FXP_HANDLE;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_string(p, hid, 4);

    sft_sftp_packet_done(s, start, p);
}


static void
sft_sftp_reply_attrs(sft_sftp_session_t *s, uint32_t id,
    sft_storage_stat_t *st)
{
    u_char  *p, *start;

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 32);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_ATTRS;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_attrs(p, st);

    sft_sftp_packet_done(s, start, p);
}


/* the entries of a directory batch that fit the reply, ls -l style */

static void
sft_sftp_reply_names(sft_sftp_request_t *r)
{
    u_char                *p, *start, *count, *l, *last;
    char                   date[32];
    u_char                 line[SFT_STORAGE_NAME_MAX + 128];
    struct tm              tm;
    sft_uint_t             n;
    sft_sftp_handle_t     *h;
    sft_sftp_session_t    *s;
    sft_storage_dirent_t  *e;

    s = r->session;
    h = r->handle;

    start = sft_sftp_reply_space(s, SFT_SFTP_DIR_REPLY);
    if (start == NULL) {
        return;
    }

    last = start + SFT_SFTP_DIR_REPLY;
    p = start + 4;
    *p++ = SSH_FXP_NAME;
    p = sft_sftp_put_u32(p, r->id);
    count = p;
    p += 4;
    n = 0;

    for ( /* void */ ; h->entry < h->dir.nentries; h->entry++) {
        e = &h->dir.entries[h->entry];

        if (!sft_vfs_visible(&s->vfs, &h->dir, e->name, e->len)) {
            continue;
        }

        if ((size_t) (last - p) < 2 * e->len + 128 + 48) {
            break;
        }

        (void) gmtime_r(&e->st.mtime, &tm);
        (void) strftime(date, sizeof(date), "%b %e %H:%M", &tm);

        l = sft_sftp_mode(line, e->st.mode);
        l = sft_slprintf(l, line + sizeof(line),
                         " %4lu %-8lu %-8lu %8lld %s %.*s",
                         (unsigned long) e->st.nlink,
                         (unsigned long) e->st.uid,
                         (unsigned long) e->st.gid,
                         (long long) e->st.size, date,
                         (int) e->len, e->name);

        p = sft_sftp_put_string(p, e->name, e->len);
        p = sft_sftp_put_string(p, line, l - line);
        p = sft_sftp_put_attrs(p, &e->st);
        n++;
    }

    if (n == 0) {
        /* everything hidden: the next batch */
        sft_sftp_status(s, r->id, h->dir.eof ? SSH_FX_EOF : SSH_FX_OK,
                        h->dir.eof ? "End of file" : "Success");
        return;
    }

    (void) sft_sftp_put_u32(count, (uint32_t) n);

    sft_sftp_packet_done(s, start, p);
}


static void
sft_sftp_reply_realpath(sft_sftp_session_t *s, uint32_t id, u_char *path,
    size_t len)
{
    u_char             *p, *start;
    size_t              olen;
    sft_storage_err_t   err;
    u_char              out[SFT_STORAGE_PATH_MAX + 1];

    if (len == 0) {
        path = (u_char *) ".";
        len = 1;
    }

    err = sft_vfs_normalize(s->vfs.cwd, s->vfs.cwd_len, path, len, out,
                            &olen);
    if (err != SFT_STORAGE_OK) {
        sft_sftp_storage_status(s, id, err);
        return;
    }

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 4 + 2 * (4 + olen) + 4);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_NAME;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_u32(p, 1);
    p = sft_sftp_put_string(p, out, olen);
    p = sft_sftp_put_string(p, out, olen);
    p = sft_sftp_put_u32(p, 0);

    sft_sftp_packet_done(s, start, p);
}


static void
sft_sftp_reply_readlink(sft_sftp_request_t *r)
{
    u_char              *p, *start;
    size_t               len;
    sft_sftp_session_t  *s;

    s = r->session;
    len = (size_t) r->req.nbytes;

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 4 + 2 * (4 + len) + 4);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_NAME;
    p = sft_sftp_put_u32(p, r->id);
    p = sft_sftp_put_u32(p, 1);
    p = sft_sftp_put_string(p, r->path, len);
    p = sft_sftp_put_string(p, r->path, len);
    p = sft_sftp_put_u32(p, 0);

    sft_sftp_packet_done(s, start, p);
}


/* users-groups-by-id@openssh.com: the server's own ids are "siftp" */

static void
sft_sftp_reply_ids(sft_sftp_session_t *s, uint32_t id, u_char *uids,
    uint32_t ulen, u_char *gids, uint32_t glen)
{
    u_char          *p, *start, *list;
    uint32_t         v, i, n, own;
    sft_sftp_buf_t   b;

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 8 + 9 * (ulen + glen) / 4);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_EXTENDED_REPLY;
    p = sft_sftp_put_u32(p, id);

    for (i = 0; i < 2; i++) {
        b.pos = i ? gids : uids;
        b.last = b.pos + (i ? glen : ulen);
        own = i ? (uint32_t) getgid() : (uint32_t) getuid();

        list = p;
        p += 4;

        for (n = 0; n < SFT_SFTP_MAX_IDS
                    && sft_sftp_get_u32(&b, &v) == SFT_OK; n++)
        {
            if (v == own) {
                p = sft_sftp_put_string(p, (u_char *) "siftp", 5);

            } else {
                p = sft_sftp_put_string(p, (u_char *) "", 0);
            }
        }

        (void) sft_sftp_put_u32(list, (uint32_t) (p - list - 4));
    }

    sft_sftp_packet_done(s, start, p);
}


static void
sft_sftp_reply_version(sft_sftp_session_t *s)
{
    u_char        *p, *start;
    const char   **e;

    static const char  *ext[] = {
        "posix-rename@openssh.com", "1",
        "hardlink@openssh.com", "1",
        "statvfs@openssh.com", "2",
        "fstatvfs@openssh.com", "2",
        "fsync@openssh.com", "1",
        "lsetstat@openssh.com", "1",
        "limits@openssh.com", "1",
        "expand-path@openssh.com", "1",
        "home-directory", "1",
        "users-groups-by-id@openssh.com", "1",
        "check-file", SFT_SFTP_CHECK_ALGOS,
        "copy-data", "1",
        NULL
    };

    start = sft_sftp_reply_space(s, 1024);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_VERSION;
    p = sft_sftp_put_u32(p, 3);

    for (e = ext; *e; e++) {
        p = sft_sftp_put_string(p, (u_char *) *e, sft_strlen(*e));
    }

    sft_sftp_packet_done(s, start, p);
}


static void
sft_sftp_reply_limits(sft_sftp_session_t *s, uint32_t id)
{
    u_char  *p, *start;

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 4 * 8);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_EXTENDED_REPLY;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_u64(p, SFT_SFTP_MAX_PACKET);
    p = sft_sftp_put_u64(p, SFT_SFTP_MAX_READ);
    p = sft_sftp_put_u64(p, SFT_SFTP_MAX_WRITE);
    p = sft_sftp_put_u64(p, SFT_SFTP_MAX_HANDLES);

    sft_sftp_packet_done(s, start, p);
}


static void
sft_sftp_reply_statvfs(sft_sftp_session_t *s, uint32_t id,
    sft_storage_statvfs_t *v)
{
    u_char    *p, *start;
    uint64_t   bs;

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 11 * 8);
    if (start == NULL) {
        return;
    }

    bs = v->block_size ? v->block_size : 4096;

    p = start + 4;
    *p++ = SSH_FXP_EXTENDED_REPLY;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_u64(p, bs);
    p = sft_sftp_put_u64(p, bs);
    p = sft_sftp_put_u64(p, v->total_bytes / bs);
    p = sft_sftp_put_u64(p, v->free_bytes / bs);
    p = sft_sftp_put_u64(p, v->free_bytes / bs);
    p = sft_sftp_put_u64(p, v->total_files);
    p = sft_sftp_put_u64(p, v->free_files);
    p = sft_sftp_put_u64(p, v->free_files);
    p = sft_sftp_put_u64(p, 0);
    p = sft_sftp_put_u64(p, 0);
    p = sft_sftp_put_u64(p, v->name_max ? v->name_max : 255);

    sft_sftp_packet_done(s, start, p);
}
