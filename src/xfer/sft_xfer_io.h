/*
 * sft_xfer_io.h -- a chunk of file I/O at an offset, into or out of the
 * caller's buffer: done at once on the event loop where that cannot block,
 * else an io_uring operation (io_uring on, a file with a descriptor) or a
 * VFS operation (on the thread pool) that completes later.
 */

#ifndef _SFT_XFER_IO_H_INCLUDED_
#define _SFT_XFER_IO_H_INCLUDED_


#include <sft_uring.h>


typedef struct sft_xfer_io_s  sft_xfer_io_t;

typedef void (*sft_xfer_io_handler_pt)(sft_xfer_io_t *io);


/* io->how: where the chunks of a file go */
#define SFT_XFER_IO_VFS      0      /* the VFS, maybe on the thread pool */
#define SFT_XFER_IO_MEMORY   1      /* tmpfs: pread(2), pwrite(2) on the
                                       event loop */
#define SFT_XFER_IO_NOWAIT   2      /* reads: the page cache (RWF_NOWAIT)
                                       on the loop, else the VFS */


struct sft_xfer_io_s {
    sft_vfs_session_t        *vfs;
    sft_storage_file_t       *file;
    sft_pool_t               *pool;
    sft_log_t                *log;
    sft_xfer_io_handler_pt    handler;    /* an SFT_AGAIN's completion */
    void                     *data;
    void                    (*release)(void *buf);  /* the caller's
                                       buffers; NULL: no cancel of a ring
                                       operation, its completion is awaited */

    /* the result of the last operation */
    ssize_t                   nbytes;
    sft_storage_err_t         err;

    sft_storage_req_t         req;        /* the VFS operation */
    sft_uring_op_t            ring;       /* the io_uring operation */
    size_t                    wlen;       /* the running write's length */
    size_t                    ahead;      /* of the chunk, written by the
                                             ring before the VFS write */
    sft_fd_t                  fd;
    unsigned                  how:2;      /* SFT_XFER_IO_* */
    unsigned                  busy:1;     /* an operation runs */
    unsigned                  ringed:1;   /* one went through the ring */
    unsigned                  whole:1;    /* reads: a short page cache read
                                             before the end goes to the VFS
                                             whole (set by the caller) */
};


void sft_xfer_io_init(sft_xfer_io_t *io);
sft_int_t sft_xfer_read(sft_xfer_io_t *io, u_char *buf, size_t len,
    off_t offset);
sft_int_t sft_xfer_read_now(sft_xfer_io_t *io, u_char *buf, size_t len,
    off_t offset);
sft_int_t sft_xfer_write(sft_xfer_io_t *io, u_char *buf, size_t len,
    off_t offset);
sft_int_t sft_xfer_io_cancel(sft_xfer_io_t *io);


#endif /* _SFT_XFER_IO_H_INCLUDED_ */
