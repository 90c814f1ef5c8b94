/*
 * sft_uring.c -- "io_uring on;" in events{}: one io_uring per worker for
 * file reads and writes.  Operations queued during a pass of the event
 * loop go to the kernel together (a posted event), their completions come
 * back through an eventfd on the epoll set.  Each operation in flight
 * holds a slot, so the completion queue never overflows; a cancelled
 * operation keeps its slot and buffer until the kernel completes it.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_uring.h>

#if (SFT_HAVE_IO_URING)
#include <liburing.h>
#endif


/* what one read(2) or write(2) moves at most on Linux */
#define SFT_URING_MAX_LEN  0x7ffff000

/* a submission the kernel refused for now is tried again this much later */
#define SFT_URING_RETRY    10

/* at worker exit: waits of 100 ms for operations still in flight */
#define SFT_URING_DRAIN    10


typedef struct {
    sft_flag_t            enable;
} sft_uring_conf_t;


static void *sft_uring_create_conf(sft_cycle_t *cycle);
static char *sft_uring_init_conf(sft_cycle_t *cycle, void *conf);
static sft_int_t sft_uring_init_worker(sft_cycle_t *cycle);
static void sft_uring_exit_worker(sft_cycle_t *cycle);
static void sft_uring_notify_handler(sft_event_t *ev);


static sft_command_t  sft_uring_commands[] = {

    { sft_string("io_uring"),
      SFT_EVENT_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      0,
      offsetof(sft_uring_conf_t, enable),
      NULL,
      sft_command_doc("on | off", "off",
          "Read and write files of the pooled copy through one io_uring "
          "per worker (256 entries).") },

    sft_null_command
};


static sft_event_module_t  sft_uring_module_ctx = {
    sft_uring_create_conf,
    sft_uring_init_conf
};


sft_module_t  sft_uring_module = {
    SFT_MODULE_V1,
    &sft_uring_module_ctx,                 /* module context */
    sft_uring_commands,                    /* module directives */
    SFT_EVENT_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_uring_init_worker,                 /* init process */
    sft_uring_exit_worker,                 /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static void *
sft_uring_create_conf(sft_cycle_t *cycle)
{
    sft_uring_conf_t  *ucf;

    ucf = sft_palloc(cycle->pool, sizeof(sft_uring_conf_t));
    if (ucf == NULL) {
        return NULL;
    }

    ucf->enable = SFT_CONF_UNSET;

    return ucf;
}


static char *
sft_uring_init_conf(sft_cycle_t *cycle, void *conf)
{
    sft_uring_conf_t  *ucf = conf;

    (void) cycle;

    sft_conf_init_value(ucf->enable, 0);

    return SFT_CONF_OK;
}


#if (SFT_HAVE_IO_URING)


typedef struct {
    sft_uring_op_t       *op;           /* NULL once cancelled */
    u_char               *buf;
    void                (*release)(void *buf);
    sft_uint_t            next;         /* the free list */
} sft_uring_slot_t;


typedef struct {
    struct io_uring       ring;
    sft_fd_t              notify_fd;
    sft_uint_t            nslots;
    sft_uint_t            nfree;
    sft_uint_t            free;         /* the first free slot */
    sft_event_t           submit;       /* posted while operations wait */
    sft_log_t            *log;
    sft_uring_slot_t      slots[];
} sft_uring_t;


static sft_int_t sft_uring_queue(sft_uring_op_t *op, sft_uint_t write);
static struct io_uring_sqe *sft_uring_sqe(sft_uring_t *u);
static void sft_uring_submit_handler(sft_event_t *ev);
static void sft_uring_free_slot(sft_uring_t *u, sft_uint_t i,
    sft_uint_t release);


static sft_uring_t  *sft_uring;         /* this process's ring, or NULL */


sft_int_t
sft_uring_init(sft_uint_t entries, sft_log_t *log)
{
    int           rc;
    sft_uint_t    i;
    sft_uring_t  *u;

    if (sft_uring != NULL || entries == 0 || entries > 4096) {
        return SFT_ERROR;
    }

    u = sft_calloc(sizeof(sft_uring_t) + entries * sizeof(sft_uring_slot_t),
                   log);
    if (u == NULL) {
        return SFT_ERROR;
    }

    rc = io_uring_queue_init(entries, &u->ring, 0);

    if (rc < 0) {
        sft_log_error(SFT_LOG_NOTICE, log, -rc, "io_uring_queue_init() "
                      "failed, file I/O goes without io_uring");
        sft_free(u);
        return SFT_DECLINED;
    }

    u->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

    if (u->notify_fd == -1) {
        sft_log_error(SFT_LOG_NOTICE, log, sft_errno, "eventfd() failed, "
                      "file I/O goes without io_uring");
        io_uring_queue_exit(&u->ring);
        sft_free(u);
        return SFT_DECLINED;
    }

    rc = io_uring_register_eventfd(&u->ring, u->notify_fd);

    if (rc < 0) {
        sft_log_error(SFT_LOG_NOTICE, log, -rc, "io_uring_register_eventfd() "
                      "failed, file I/O goes without io_uring");
        io_uring_queue_exit(&u->ring);
        close(u->notify_fd);
        sft_free(u);
        return SFT_DECLINED;
    }

    for (i = 0; i < entries; i++) {
        u->slots[i].next = i + 1;
    }

    u->nslots = entries;
    u->nfree = entries;
    u->free = 0;
    u->log = log;
    u->submit.handler = sft_uring_submit_handler;
    u->submit.data = u;
    u->submit.log = log;

    sft_uring = u;

    return SFT_OK;
}


sft_int_t
sft_uring_read(sft_uring_op_t *op)
{
    return sft_uring_queue(op, 0);
}


sft_int_t
sft_uring_write(sft_uring_op_t *op)
{
    return sft_uring_queue(op, 1);
}


static sft_int_t
sft_uring_queue(sft_uring_op_t *op, sft_uint_t write)
{
    sft_uint_t            i;
    sft_uring_t          *u = sft_uring;
    sft_uring_slot_t     *s;
    struct io_uring_sqe  *sqe;

    if (u == NULL) {
        return SFT_DECLINED;
    }

    if (op->slot != 0 || op->len > SFT_URING_MAX_LEN || op->offset < 0) {
        sft_log_error(SFT_LOG_ALERT, u->log, 0, "io_uring %s of %lu bytes "
                      "at %lld refused", write ? "write" : "read",
                      (unsigned long) op->len, (long long) op->offset);
        return SFT_ERROR;
    }

    if (u->nfree == 0) {
        return SFT_DECLINED;
    }

    sqe = sft_uring_sqe(u);
    if (sqe == NULL) {
        return SFT_DECLINED;
    }

    i = u->free;
    s = &u->slots[i];
    u->free = s->next;
    u->nfree--;

    s->op = op;
    s->buf = op->buf;
    s->release = op->release;

    if (write) {
        io_uring_prep_write(sqe, op->fd, op->buf, (unsigned) op->len,
                            (uint64_t) op->offset);

    } else {
        io_uring_prep_read(sqe, op->fd, op->buf, (unsigned) op->len,
                           (uint64_t) op->offset);
    }

    io_uring_sqe_set_data64(sqe, i);

    op->slot = i + 1;
    op->result = 0;

    return SFT_AGAIN;
}


/* a free submission entry; the loop's next pass hands it to the kernel */

static struct io_uring_sqe *
sft_uring_sqe(sft_uring_t *u)
{
    struct io_uring_sqe  *sqe;

    sqe = io_uring_get_sqe(&u->ring);

    if (sqe == NULL) {
        sft_uring_submit();
        sqe = io_uring_get_sqe(&u->ring);

        if (sqe == NULL) {
            return NULL;
        }
    }

    if (!u->submit.posted && !u->submit.timer_set) {
        sft_post_event(&u->submit);
    }

    return sqe;
}


void
sft_uring_cancel(sft_uring_op_t *op)
{
    sft_uring_t          *u = sft_uring;
    struct io_uring_sqe  *sqe;

    if (u == NULL || op->slot == 0) {
        return;
    }

    u->slots[op->slot - 1].op = NULL;

    /*
     * The kernel takes its own reference to the file at submission: once
     * the operation is submitted the owner may close the descriptor, and
     * a new file under the same number is never touched.
     */

    if (io_uring_sq_ready(&u->ring)) {
        sft_uring_submit();
    }

    sqe = sft_uring_sqe(u);

    if (sqe != NULL) {
        io_uring_prep_cancel64(sqe, op->slot - 1, 0);
        io_uring_sqe_set_data64(sqe, UINT64_MAX);
    }

    op->slot = 0;
}


sft_uint_t
sft_uring_available(void)
{
    return sft_uring ? sft_uring->nfree : 0;
}


sft_fd_t
sft_uring_fd(void)
{
    return sft_uring ? sft_uring->notify_fd : SFT_INVALID_FILE;
}


void
sft_uring_submit(void)
{
    int           rc;
    sft_uring_t  *u = sft_uring;

    if (u == NULL) {
        return;
    }

    if (u->submit.posted) {
        sft_delete_posted_event(&u->submit);
    }

    sft_del_timer(&u->submit);

    if (io_uring_sq_ready(&u->ring) == 0) {
        return;
    }

    rc = io_uring_submit(&u->ring);

    if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR) {
        sft_log_error(SFT_LOG_ALERT, u->log, -rc, "io_uring_submit() failed");
    }

    if (io_uring_sq_ready(&u->ring)) {
        sft_add_timer(&u->submit, SFT_URING_RETRY);
    }
}


static void
sft_uring_submit_handler(sft_event_t *ev)
{
    (void) ev;

    sft_uring_submit();
}


/* on the loop: run the handler of every completed operation */

void
sft_uring_complete(void)
{
    uint64_t              n;
    uint64_t              i;
    sft_uring_t          *u;
    sft_uring_op_t       *op;
    struct io_uring_cqe  *cqe;

    if (sft_uring == NULL) {
        return;
    }

    if (read(sft_uring->notify_fd, &n, sizeof(uint64_t)) == -1) {
        /* EAGAIN: an earlier wake-up took the count; the queue tells */
    }

    /* a handler may queue more, cancel others, or tear the ring down */

    while ((u = sft_uring) != NULL && io_uring_peek_cqe(&u->ring, &cqe) == 0)
    {
        i = io_uring_cqe_get_data64(cqe);
        n = (uint64_t) (int64_t) cqe->res;

        io_uring_cqe_seen(&u->ring, cqe);

        if (i >= u->nslots) {
            continue;       /* a cancel request's own completion */
        }

        op = u->slots[i].op;

        sft_uring_free_slot(u, i, op == NULL);

        if (op != NULL) {
            op->slot = 0;
            op->result = (ssize_t) (int64_t) n;
            op->handler(op);
        }
    }
}


static void
sft_uring_free_slot(sft_uring_t *u, sft_uint_t i, sft_uint_t release)
{
    sft_uring_slot_t  *s = &u->slots[i];

    if (release && s->release != NULL) {
        s->release(s->buf);
    }

    s->op = NULL;
    s->buf = NULL;
    s->release = NULL;
    s->next = u->free;
    u->free = i;
    u->nfree++;
}


/*
 * At exit the kernel may still be reading into a buffer: everything in
 * flight is cancelled and waited for, a second at most, and the buffers
 * of cancelled operations released; no handler runs any more.  A buffer
 * whose operation did not complete in time is kept, never released.
 */

void
sft_uring_done(void)
{
    int                        rc;
    uint64_t                   i;
    sft_uint_t                 waits;
    sft_uring_t               *u = sft_uring;
    struct io_uring_sqe       *sqe;
    struct io_uring_cqe       *cqe;
    struct __kernel_timespec   ts;

    if (u == NULL) {
        return;
    }

    sft_uring = NULL;

    if (u->submit.posted) {
        sft_delete_posted_event(&u->submit);
    }

    sft_del_timer(&u->submit);

    if (u->nfree < u->nslots) {
        sqe = io_uring_get_sqe(&u->ring);

        if (sqe == NULL) {
            (void) io_uring_submit(&u->ring);
            sqe = io_uring_get_sqe(&u->ring);
        }

        if (sqe != NULL) {
            io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
            io_uring_sqe_set_data64(sqe, UINT64_MAX);
        }

        (void) io_uring_submit(&u->ring);
    }

    ts.tv_sec = 0;
    ts.tv_nsec = 100 * 1000 * 1000;
    waits = 0;

    while (u->nfree < u->nslots && waits < SFT_URING_DRAIN) {
        rc = io_uring_wait_cqe_timeout(&u->ring, &cqe, &ts);

        if (rc < 0) {
            waits++;
            continue;
        }

        i = io_uring_cqe_get_data64(cqe);
        io_uring_cqe_seen(&u->ring, cqe);

        if (i < u->nslots) {
            sft_uring_free_slot(u, i, u->slots[i].op == NULL);
        }
    }

    if (u->nfree < u->nslots) {
        sft_log_error(SFT_LOG_WARN, u->log, 0, "%lu io_uring operations "
                      "did not complete, their buffers are kept",
                      (unsigned long) (u->nslots - u->nfree));
    }

    io_uring_queue_exit(&u->ring);
    close(u->notify_fd);
    sft_free(u);
}


#else /* !(SFT_HAVE_IO_URING) */


/* built without io_uring: every operation takes another path */

sft_int_t
sft_uring_init(sft_uint_t entries, sft_log_t *log)
{
    (void) entries;

    sft_log_error(SFT_LOG_NOTICE, log, 0, "\"io_uring on\" is ignored: "
                  "siftpd was built without --with-io_uring");

    return SFT_DECLINED;
}


sft_int_t
sft_uring_read(sft_uring_op_t *op)
{
    (void) op;

    return SFT_DECLINED;
}


sft_int_t
sft_uring_write(sft_uring_op_t *op)
{
    (void) op;

    return SFT_DECLINED;
}


void
sft_uring_cancel(sft_uring_op_t *op)
{
    (void) op;
}


sft_uint_t
sft_uring_available(void)
{
    return 0;
}


sft_fd_t
sft_uring_fd(void)
{
    return SFT_INVALID_FILE;
}


void
sft_uring_submit(void)
{
}


void
sft_uring_complete(void)
{
}


void
sft_uring_done(void)
{
}


#endif


static sft_int_t
sft_uring_init_worker(sft_cycle_t *cycle)
{
    sft_int_t          rc;
    sft_uring_conf_t  *ucf;

    ucf = sft_event_get_module_conf(cycle, &sft_uring_module);
    if (ucf == NULL) {
        return SFT_ERROR;
    }

    if (!ucf->enable) {
        return SFT_OK;
    }

    rc = sft_uring_init(SFT_URING_ENTRIES, cycle->log);

    if (rc == SFT_DECLINED) {
        return SFT_OK;
    }

    if (rc != SFT_OK) {
        return SFT_ERROR;
    }

    if (sft_event_add_notify(cycle, sft_uring_fd(), sft_uring_notify_handler,
                             NULL)
        == NULL)
    {
        sft_uring_done();
        return SFT_ERROR;
    }

    sft_log_error(SFT_LOG_INFO, cycle->log, 0,
                  "io_uring: a ring of %d entries", SFT_URING_ENTRIES);

    return SFT_OK;
}


static void
sft_uring_notify_handler(sft_event_t *ev)
{
    (void) ev;

    sft_uring_complete();
}


static void
sft_uring_exit_worker(sft_cycle_t *cycle)
{
    (void) cycle;

    sft_uring_done();
}
