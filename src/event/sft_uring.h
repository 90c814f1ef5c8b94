/*
 * sft_uring.h -- file reads and writes through the worker's io_uring,
 * completed on the event loop; SFT_DECLINED where there is no ring.
 */

#ifndef _SFT_URING_H_INCLUDED_
#define _SFT_URING_H_INCLUDED_


/* submission queue entries, and so operations in flight, per worker */
#define SFT_URING_ENTRIES  256


typedef struct sft_uring_op_s  sft_uring_op_t;

typedef void (*sft_uring_handler_pt)(sft_uring_op_t *op);


/*
 * The caller zeroes the op once, then fills fd, buf, len, offset, handler
 * and data (and may reuse it after its handler ran).  The handler
 * runs on the event loop with result set: the bytes moved (short counts
 * are the caller's business) or -errno.  release, if set, frees buf; it
 * is called only for a cancelled operation, once the kernel is done with
 * the buffer.
 */

struct sft_uring_op_s {
    sft_fd_t               fd;
    u_char                *buf;
    size_t                 len;
    off_t                  offset;
    sft_uring_handler_pt   handler;
    void                  *data;
    void                 (*release)(void *buf);

    ssize_t                result;

    sft_uint_t             slot;        /* private: 0 unless in flight */
};


/*
 * SFT_AGAIN: queued, the handler will run; SFT_DECLINED: no ring
 * (io_uring off, not built in, refused by the kernel) or every slot is
 * in flight, so the caller takes another path; SFT_ERROR: len or offset
 * out of range, or the op is already in flight.
 */
sft_int_t sft_uring_read(sft_uring_op_t *op);
sft_int_t sft_uring_write(sft_uring_op_t *op);

/*
 * The handler of an op in flight will not be called, and the op may be
 * freed at once.  The buffer is not the caller's any more: the ring
 * keeps it until the kernel's completion and then calls op->release
 * (with release NULL, the buffer must outlive the worker's ring).
 */
void sft_uring_cancel(sft_uring_op_t *op);

/* how many more operations the ring takes now, 0 without a ring */
sft_uint_t sft_uring_available(void);

/*
 * The ring of this process: the module opens it at worker start with
 * "io_uring on" and tears it down at exit.  sft_uring_init() returns
 * SFT_DECLINED (after one notice naming the reason) when the kernel
 * refuses io_uring.  The completion eventfd is readable when
 * sft_uring_complete() has handlers to run; sft_uring_submit() hands the
 * queued operations to the kernel (a posted event does it once per pass
 * of the loop).
 */
sft_int_t sft_uring_init(sft_uint_t entries, sft_log_t *log);
void sft_uring_done(void);
sft_fd_t sft_uring_fd(void);
void sft_uring_submit(void);
void sft_uring_complete(void);


extern sft_module_t  sft_uring_module;


#endif /* _SFT_URING_H_INCLUDED_ */
