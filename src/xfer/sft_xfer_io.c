/*
 * sft_xfer_io.c -- chunk reads and writes of an open storage file.  A file
 * with a descriptor on a storage in memory (tmpfs) is read and written
 * with pread(2) and pwrite(2) on the event loop; another file with a
 * descriptor is read with RWF_NOWAIT, which fails with EAGAIN unless the
 * page cache has the data, saving the thread pool round trip per chunk;
 * what would go to the thread pool goes through the worker's io_uring
 * instead where it has one (a read, or a write whole; a short write's
 * rest, or a chunk the ring declines, goes to the VFS); everything else is
 * a VFS operation, on the thread pool for a blocking driver.  Writes are
 * charged to the quota through the VFS either way.
 *
 * sft_xfer_read() and sft_xfer_write() return SFT_OK (io->nbytes read;
 * 0 at the end of the file), SFT_AGAIN (io->handler runs when it is done,
 * with the same results) or SFT_ERROR (io->err).  sft_xfer_read_now()
 * is the read's part on the loop alone: SFT_DECLINED where sft_xfer_read()
 * would go to the VFS, so that a caller can read into a buffer that must
 * not wait, and into another one for the VFS.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_vfs.h>
#include <sft_xfer.h>
#include <sft_xfer_io.h>


static ssize_t sft_xfer_read_direct(sft_xfer_io_t *io, u_char *buf,
    size_t len, off_t offset);
static sft_int_t sft_xfer_write_direct(sft_xfer_io_t *io, u_char *buf,
    size_t len, off_t offset);
static sft_int_t sft_xfer_io_ring(sft_xfer_io_t *io, u_char *buf,
    size_t len, off_t offset, sft_uint_t write);
static void sft_xfer_io_ring_done(sft_uring_op_t *op);
static sft_int_t sft_xfer_io_charge(sft_xfer_io_t *io, size_t len,
    off_t offset);
static void sft_xfer_io_req(sft_xfer_io_t *io, size_t wlen);
static sft_int_t sft_xfer_io_result(sft_xfer_io_t *io, sft_int_t rc);
static void sft_xfer_io_done(sft_storage_req_t *req);


/* io->vfs, file, pool, log, handler, data and release are set */

void
sft_xfer_io_init(sft_xfer_io_t *io)
{
    io->how = SFT_XFER_IO_VFS;
    io->busy = 0;
    io->ringed = 0;
    io->whole = 0;
    sft_memzero(&io->ring, sizeof(sft_uring_op_t));
    io->fd = sft_storage_file_fd(io->file);

    if (io->fd == SFT_INVALID_FILE) {
        return;
    }

    if (io->file->storage->in_memory) {
        io->how = SFT_XFER_IO_MEMORY;
        return;
    }

#ifdef RWF_NOWAIT
    io->how = SFT_XFER_IO_NOWAIT;
#endif
}


sft_int_t
sft_xfer_read(sft_xfer_io_t *io, u_char *buf, size_t len, off_t offset)
{
    if (sft_xfer_read_now(io, buf, len, offset) == SFT_OK) {
        return SFT_OK;
    }

    if (sft_xfer_io_ring(io, buf, len, offset, 0) == SFT_AGAIN) {
        return SFT_AGAIN;
    }

    sft_xfer_io_req(io, 0);

    return sft_xfer_io_result(io, sft_vfs_read(io->vfs, &io->req, io->file,
                                               buf, len, offset));
}


sft_int_t
sft_xfer_read_now(sft_xfer_io_t *io, u_char *buf, size_t len, off_t offset)
{
    ssize_t  n;

    if (io->how == SFT_XFER_IO_VFS) {
        return SFT_DECLINED;
    }

    n = sft_xfer_read_direct(io, buf, len, offset);

    /* not in the page cache, or an error the VFS reports */

    if (n < 0) {
        return SFT_DECLINED;
    }

    /* part of the range cached (readahead under way) */

    if (io->whole && io->how == SFT_XFER_IO_NOWAIT && (size_t) n < len
        && offset + n < io->file->size)
    {
        return SFT_DECLINED;
    }

    io->err = SFT_STORAGE_OK;
    io->nbytes = n;

    return SFT_OK;
}


/* bytes, or -1: the VFS reads this chunk */

static ssize_t
sft_xfer_read_direct(sft_xfer_io_t *io, u_char *buf, size_t len,
    off_t offset)
{
    ssize_t       n;
#ifdef RWF_NOWAIT
    struct iovec  iov;
#endif

    for ( ;; ) {

#ifdef RWF_NOWAIT
        if (io->how == SFT_XFER_IO_NOWAIT) {
            iov.iov_base = buf;
            iov.iov_len = len;

            n = preadv2(io->fd, &iov, 1, offset, RWF_NOWAIT);

        } else
#endif
        {
            n = pread(io->fd, buf, len, offset);
        }

        if (n >= 0) {
            return n;
        }

        if (sft_errno == EINTR) {
            continue;
        }

        if (sft_errno == EOPNOTSUPP) {
            io->how = SFT_XFER_IO_VFS;      /* no RWF_NOWAIT on this file */
        }

        return -1;
    }
}


sft_int_t
sft_xfer_write(sft_xfer_io_t *io, u_char *buf, size_t len, off_t offset)
{
    sft_int_t  rc;

    if (io->how == SFT_XFER_IO_MEMORY) {
        return sft_xfer_write_direct(io, buf, len, offset);
    }

    if (io->fd != SFT_INVALID_FILE && sft_uring_available()) {

        /*
         * charged before the ring sees the chunk; the VFS charges alike,
         * and waits for room a shared quota's lease is short of
         */

        rc = sft_xfer_io_charge(io, len, offset);

        if (rc == SFT_ERROR) {
            return SFT_ERROR;
        }

        if (rc == SFT_OK
            && sft_xfer_io_ring(io, buf, len, offset, 1) == SFT_AGAIN)
        {
            return SFT_AGAIN;
        }
    }

    sft_xfer_io_req(io, len);

    return sft_xfer_io_result(io, sft_vfs_write(io->vfs, &io->req, io->file,
                                                buf, len, offset));
}


/* a chunk to tmpfs, charged to the quota as a VFS write is */

static sft_int_t
sft_xfer_write_direct(sft_xfer_io_t *io, u_char *buf, size_t len,
    off_t offset)
{
    size_t   done;
    ssize_t  n;

    if (sft_xfer_io_charge(io, len, offset) != SFT_OK) {
        return SFT_ERROR;
    }

    for (done = 0; done < len; done += n) {
        n = pwrite(io->fd, buf + done, len - done, offset + done);

        if (n == -1) {
            if (sft_errno == EINTR) {
                n = 0;
                continue;
            }

            io->err = sft_storage_map_errno(sft_errno);
            sft_log_error(SFT_LOG_ERR, io->log, sft_errno,
                          "pwrite() \"%s\" failed", io->file->name);
            return SFT_ERROR;
        }
    }

    io->err = SFT_STORAGE_OK;
    io->nbytes = len;

    return SFT_OK;
}


/* a write on the loop or in the ring: the VFS charges it to the quota */

static sft_int_t
sft_xfer_io_charge(sft_xfer_io_t *io, size_t len, off_t offset)
{
    sft_int_t  rc;

    rc = sft_vfs_charge_write(io->vfs, io->file, offset, len);

    if (rc == SFT_AGAIN && io->how != SFT_XFER_IO_MEMORY) {
        return SFT_AGAIN;           /* nothing charged: the VFS waits */
    }

    if (rc != SFT_OK) {
        sft_log_error(SFT_LOG_INFO, io->log, 0,
                      "quota exceeded: upload of \"%s\" stopped",
                      io->file->name);
        io->err = SFT_STORAGE_QUOTA;
        return SFT_ERROR;
    }

    return SFT_OK;
}


/* SFT_AGAIN: the ring runs it; else nothing moved, the VFS takes it */

static sft_int_t
sft_xfer_io_ring(sft_xfer_io_t *io, u_char *buf, size_t len, off_t offset,
    sft_uint_t write)
{
    sft_int_t        rc;
    sft_uring_op_t  *op;

    if (io->fd == SFT_INVALID_FILE || io->how == SFT_XFER_IO_MEMORY) {
        return SFT_DECLINED;
    }

    op = &io->ring;
    op->fd = io->fd;
    op->buf = buf;
    op->len = len;
    op->offset = offset;
    op->handler = sft_xfer_io_ring_done;
    op->data = io;
    op->release = io->release;

    rc = write ? sft_uring_write(op) : sft_uring_read(op);

    if (rc != SFT_AGAIN) {
        return SFT_DECLINED;
    }

    io->wlen = write ? len : 0;
    io->busy = 1;
    io->ringed = 1;

    return SFT_AGAIN;
}


/* on the loop: the ring's result, or a short write's rest to the VFS */

static void
sft_xfer_io_ring_done(sft_uring_op_t *op)
{
    size_t          rest;
    ssize_t         n;
    sft_xfer_io_t  *io = op->data;

    n = op->result;

    if (n >= 0) {
        sft_xfer_count_ring(io->wlen != 0, n);
    }

    if (n < 0) {
        sft_log_error(SFT_LOG_ERR, io->log, (sft_err_t) -n, "io_uring %s "
                      "of \"%s\" failed", io->wlen ? "write" : "read",
                      io->file->name);
        io->err = sft_storage_map_errno((sft_err_t) -n);
        io->nbytes = -1;

    } else if (io->wlen && (size_t) n < io->wlen) {
        rest = io->wlen - n;

        sft_xfer_io_req(io, rest);
        io->ahead = n;

        if (sft_xfer_io_result(io, sft_vfs_write(io->vfs, &io->req, io->file,
                                                 op->buf + n, rest,
                                                 op->offset + n))
            == SFT_AGAIN)
        {
            return;     /* sft_xfer_io_done() completes it */
        }

    } else {
        io->err = SFT_STORAGE_OK;
        io->nbytes = n;
    }

    io->busy = 0;
    io->handler(io);
}


/*
 * The caller stops: SFT_OK, nothing ran, or the VFS operation was still
 * queued on the thread pool and never will (its buffer is the caller's
 * again); SFT_DONE, the ring operation is cancelled and its buffer,
 * io->ring.buf, is not the caller's any more (io->release gets it once the
 * kernel is done with it); SFT_AGAIN, an operation runs on, and
 * io->handler runs at its end.
 */

sft_int_t
sft_xfer_io_cancel(sft_xfer_io_t *io)
{
    if (!io->busy) {
        return SFT_OK;
    }

    if (io->ring.slot == 0) {
        if (sft_storage_cancel(&io->req) != SFT_OK) {
            return SFT_AGAIN;
        }

        io->busy = 0;
        return SFT_OK;
    }

    if (io->release == NULL) {
        return SFT_AGAIN;
    }

    sft_uring_cancel(&io->ring);
    io->busy = 0;

    return SFT_DONE;
}


/* a VFS request; wlen: the length of a write, which must be written whole */

static void
sft_xfer_io_req(sft_xfer_io_t *io, size_t wlen)
{
    io->wlen = wlen;
    io->ahead = 0;

    sft_memzero(&io->req, sizeof(sft_storage_req_t));
    io->req.pool = io->pool;
    io->req.handler = sft_xfer_io_done;
    io->req.data = io;
}


/* a VFS operation's return, or its completion: the results in io */

static sft_int_t
sft_xfer_io_result(sft_xfer_io_t *io, sft_int_t rc)
{
    if (rc == SFT_AGAIN) {
        io->busy = 1;
        return SFT_AGAIN;
    }

    io->err = (rc == SFT_OK) ? SFT_STORAGE_OK : io->req.err;
    io->nbytes = io->req.nbytes;

    if (io->err == SFT_STORAGE_OK
        && (io->nbytes < 0
            || (io->wlen && io->nbytes != (ssize_t) io->wlen)))
    {
        io->err = SFT_STORAGE_IO;       /* a short write */
    }

    if (io->err != SFT_STORAGE_OK) {
        return SFT_ERROR;
    }

    io->nbytes += io->ahead;

    return SFT_OK;
}


static void
sft_xfer_io_done(sft_storage_req_t *req)
{
    sft_xfer_io_t  *io = req->data;

    io->busy = 0;

    (void) sft_xfer_io_result(io, req->err == SFT_STORAGE_OK ? SFT_OK
                                                              : SFT_ERROR);
    io->handler(io);
}
