/*
 * sft_sftp_ext_copy.c -- copy-data: from one handle's file to another's, a
 * chunk at a time through the VFS: by the driver's own copy where it has
 * one (SFT_STORAGE_CAP_COPY), else as a READ and WRITE loop would.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>


#define SFT_SFTP_COPY_CHUNK   65536     /* a copy-data read and write */
#define SFT_SFTP_COPY_RANGE   (8 * 1024 * 1024)   /* a driver's copy */


typedef struct {
    sft_sftp_handle_t    *to;
    uint64_t              roff;
    uint64_t              woff;
    uint64_t              left;         /* 0 with to_eof: to the end */
    u_char               *buf;          /* SFT_SFTP_COPY_CHUNK; NULL: the
                                           driver copies */
    unsigned              to_eof:1;
} sft_sftp_copy_t;


static sft_int_t sft_sftp_copy_parse(sft_sftp_session_t *s,
    sft_sftp_buf_t *b, uint32_t id, const sft_sftp_handler_t *hd);
static sft_int_t sft_sftp_copy_read(sft_sftp_request_t *r);
static sft_int_t sft_sftp_copy_range(sft_sftp_request_t *r);
static sft_int_t sft_sftp_copy_overlap(sft_sftp_copy_t *ctx,
    sft_sftp_handle_t *from);
static void sft_sftp_copy_complete(sft_sftp_request_t *r);
static void sft_sftp_copy_abort(sft_sftp_request_t *r);


const sft_sftp_handler_t  sft_sftp_copy_data_handler = {
    SSH_FXP_EXTENDED, "copy-data", 1, sft_sftp_copy_parse,
    sft_sftp_copy_complete, sft_sftp_copy_abort, NULL, NULL
};


/*
 * copy-data (draft-ietf-secsh-filexfer-extensions-00, 7): the server
 * copies as a READ and WRITE loop would, so each chunk goes through the
 * VFS write path (quota) and a failed write keeps the upload from being
 * committed, as a failed WRITE does.  A driver with its own copy moves a
 * range of SFT_SFTP_COPY_RANGE at a time without the data passing through
 * here; on one without, the chunks are read and written.
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
sft_sftp_copy_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b, uint32_t id,
    const sft_sftp_handler_t *hd)
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
        return SFT_DECLINED;
    }

    if (from == NULL || to == NULL || from->closing || to->closing) {
        sft_sftp_status(s, id, SSH_FX_FAILURE, "Invalid handle");
        return SFT_DONE;
    }

    if (from->is_dir || from->write) {
        sft_sftp_status(s, id, SSH_FX_PERMISSION_DENIED,
                        "Source not open for reading");
        return SFT_DONE;
    }

    if (!to->write) {
        sft_sftp_status(s, id, SSH_FX_PERMISSION_DENIED,
                        "Destination not open for writing");
        return SFT_DONE;
    }

    if (sft_sftp_range(s, id, roff, len) != SFT_OK
        || sft_sftp_range(s, id, woff, len) != SFT_OK)
    {
        return SFT_DONE;
    }

    if (to->write_err != SFT_STORAGE_OK) {
        sft_sftp_storage_status(s, id, to->write_err);
        return SFT_DONE;
    }

    r = sft_sftp_request_new(s, hd, id,
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
        return SFT_DONE;
    }

    r->ctx = ctx;
    r->handle = from;

    if (sft_storage_has(to->file.storage, SFT_STORAGE_CAP_COPY)
        && from->file.storage == to->file.storage)
    {
        from->busy++;
        to->busy++;

        /* step 2: one range copied by the driver */

        sft_sftp_result(r, sft_sftp_copy_range(r));
        return SFT_OK;
    }

    ctx->buf = sft_pnalloc(r->pool, SFT_SFTP_COPY_CHUNK);
    if (ctx->buf == NULL) {
        sft_sftp_request_done(r);
        return SFT_ERROR;
    }

    from->busy++;
    to->busy++;

    /* step 0: a read, step 1: its write */

    sft_sftp_result(r, sft_sftp_copy_read(r));

    return SFT_OK;
}


static sft_int_t
sft_sftp_copy_range(sft_sftp_request_t *r)
{
    sft_sftp_copy_t  *ctx = r->ctx;

    r->step = 2;

    return sft_vfs_copy(&r->session->vfs, &r->req, &ctx->to->file,
                        (off_t) ctx->woff, &r->handle->file,
                        (off_t) ctx->roff,
                        ctx->to_eof ? SFT_SFTP_COPY_RANGE
                                    : sft_min(ctx->left, SFT_SFTP_COPY_RANGE));
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
 * Written in place into the file being read (the ids the driver gave both
 * at open): the range read is fixed at the size now (a copy to the end
 * would chase its own writes), and must not overlap the range written.
 * The size is the larger of what the two handles know: the writer's grows
 * with its writes.
 */

static sft_int_t
sft_sftp_copy_overlap(sft_sftp_copy_t *ctx, sft_sftp_handle_t *from)
{
    off_t                size;
    uint64_t             wstart;
    sft_storage_file_t  *r, *w;

    r = &from->file;
    w = &ctx->to->file;

    if (!sft_storage_same_file(&r->id, &w->id)) {
        return SFT_OK;
    }

    size = sft_max(r->size, w->size);

    if (ctx->to_eof) {
        ctx->to_eof = 0;
        ctx->left = (uint64_t) size > ctx->roff
                    ? (uint64_t) size - ctx->roff : 0;
    }

    wstart = (w->flags & SFT_STORAGE_WRITE_APPEND) ? (uint64_t) w->size
                                                   : ctx->woff;

    if (ctx->left && ctx->roff < wstart + ctx->left
        && wstart < ctx->roff + ctx->left)
    {
        return SFT_ERROR;
    }

    return SFT_OK;
}


/* on the loop: a read, a write or a range of copy-data is over */

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
            if (r->step != 0 && to->write_err == SFT_STORAGE_OK) {
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
            n = (size_t) r->req.nbytes;

            if (r->step == 1 && n != r->req.len) {
                to->write_err = SFT_STORAGE_IO;
                sft_sftp_status(s, r->id, SSH_FX_FAILURE, "Short write");
                break;
            }

            if (n == 0) {
                /* a range copied: the end of the source */
                sft_sftp_status(s, r->id, SSH_FX_OK, "Success");
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

            rc = (r->step == 2) ? sft_sftp_copy_range(r)
                                : sft_sftp_copy_read(r);
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


/* the session is gone: the destination is released too */

static void
sft_sftp_copy_abort(sft_sftp_request_t *r)
{
    sft_sftp_copy_t  *ctx = r->ctx;

    sft_sftp_handle_release(r->session, ctx->to);
}
