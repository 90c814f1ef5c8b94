/*
 * test_xfer_io.c -- the transfer engine's chunk I/O (src/xfer/sft_xfer_io.c)
 * on the posix driver with a thread pool: a storage in memory (tmpfs) is
 * read and written at once on the loop and its writes are charged to the
 * quota; a disk-backed file reads from the page cache at once and writes
 * through the thread pool with a completion; a driver without descriptors
 * goes through the VFS for everything.  With the worker's io_uring, what
 * would go to the thread pool goes through the ring (a completion on the
 * loop), and a cancelled ring operation never calls back but hands its
 * buffer to io->release once the kernel is done with it.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_uring.h>
#include <sft_vfs.h>
#include <sft_xfer_io.h>
#include <poll.h>
#include "sft_tap.h"
#include "sft_test_uring.h"
#include "sft_test_hold.h"


#define P(s)  (u_char *) (s), strlen(s)


static sft_pool_t         *pool;
static sft_thread_pool_t   tp;
static sft_uint_t          completions, released;


static void
io_handler(sft_xfer_io_t *io)
{
    completions++;
}


/* the completion of an SFT_AGAIN, within 5 s */

static void
wait_io(sft_uint_t n)
{
    int            i;
    struct pollfd  pfd;

    for (i = 0; i < 500 && completions < n; i++) {
        pfd.fd = tp.notify_fd;
        pfd.events = POLLIN;

        if (poll(&pfd, 1, 10) > 0) {
            sft_thread_pool_complete(&tp);
        }
    }
}


static sft_int_t
open_file(sft_vfs_session_t *s, sft_storage_file_t *f, const char *name,
    sft_uint_t write)
{
    sft_storage_req_t  r;

    sft_memzero(&r, sizeof(r));
    sft_memzero(f, sizeof(*f));
    r.pool = pool;

    /* opens run without the thread pool here: no completion to wait for */
    s->thread_pool = NULL;

    if (write) {
        return sft_vfs_open_write(s, &r, f, P(name), 0, 0);
    }

    return sft_vfs_open_read(s, &r, f, P(name));
}


static void
close_file(sft_vfs_session_t *s, sft_storage_file_t *f, sft_uint_t commit)
{
    sft_storage_req_t  r;

    sft_memzero(&r, sizeof(r));
    r.pool = pool;
    s->thread_pool = NULL;
    (void) sft_vfs_close(s, &r, f, commit);
}


static void
remove_tree(const char *dir)
{
    char  cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);

    if (system(cmd) != 0) {
        printf("# removing %s failed\n", dir);
    }
}


static void
io_init(sft_xfer_io_t *io, sft_vfs_session_t *s, sft_storage_file_t *f,
    sft_log_t *log)
{
    sft_memzero(io, sizeof(*io));
    io->vfs = s;
    io->file = f;
    io->pool = pool;
    io->log = log;
    io->handler = io_handler;
    sft_xfer_io_init(io);
    s->thread_pool = &tp;
}


static void
release(void *buf)
{
    (void) buf;

    released++;
}


/* the ring takes the thread pool's part; 7 results */

static void
test_ring(sft_vfs_session_t *s, u_char *buf, u_char *in, size_t len,
    sft_log_t *log)
{
    sft_int_t           rc;
    sft_xfer_io_t       io;
    sft_storage_file_t  f;

    rc = open_file(s, &f, "ring", 1);
    io_init(&io, s, &f, log);
    completions = 0;

    rc = (rc == SFT_OK) ? sft_xfer_write(&io, buf, len, 0) : SFT_ERROR;
    ok(rc == SFT_AGAIN && io.busy && io.ring.slot != 0,
       "ring: a write goes to the ring, not to the thread pool");
    sft_test_uring_spin(&completions, 1, 500);
    ok(completions == 1 && !io.busy && io.ringed && io.err == SFT_STORAGE_OK
       && io.nbytes == (ssize_t) len, "ring: its completion, written whole");

    /* cancelled: no completion, the buffer released when the kernel is done */

    io.release = release;
    released = 0;
    rc = sft_xfer_write(&io, buf, len, len);
    ok(rc == SFT_AGAIN && sft_xfer_io_cancel(&io) == SFT_DONE && !io.busy,
       "ring: a running write is cancelled at once");
    sft_test_uring_spin(&released, 1, 500);
    ok(released == 1 && completions == 1,
       "ring: its buffer released, its handler never called");
    close_file(s, &f, 1);

    /* a read the page cache cannot serve (here: RWF_NOWAIT off) */

    rc = open_file(s, &f, "ring", 0);
    io_init(&io, s, &f, log);
    io.how = SFT_XFER_IO_VFS;
    completions = 0;
    memset(in, 0, len);

    rc = (rc == SFT_OK) ? sft_xfer_read(&io, in, len, 0) : SFT_ERROR;
    ok(rc == SFT_AGAIN && io.ring.slot != 0, "ring: a read goes to the ring");
    sft_test_uring_spin(&completions, 1, 500);
    ok(completions == 1 && io.err == SFT_STORAGE_OK
       && io.nbytes == (ssize_t) len && memcmp(in, buf, len) == 0,
       "ring: read back");

    /* the VFS's cancel waits: without release, so does the ring's */

    completions = 0;
    rc = sft_xfer_read(&io, in, len, len);
    ok(rc == SFT_AGAIN && sft_xfer_io_cancel(&io) == SFT_AGAIN,
       "ring: no release, a cancel waits for the completion");
    sft_test_uring_spin(&completions, 1, 500);
    close_file(s, &f, 0);
}


int
main(void)
{
    char                   top[64], shm[64], cmd[200];
    u_char                 buf[4096], in[4096];
    size_t                 size;
    void                  *mem;
    sft_int_t              rc;
    sft_str_t              name = sft_string("test");
    sft_log_t             *log;
    sft_user_t             user;
    sft_storage_t         *st, *mst;
    sft_xfer_io_t          io;
    sft_vfs_quota_t        q;
    sft_vfs_session_t      s, ms;
    sft_storage_file_t     f;
    sft_storage_driver_t   nocaps;
    sft_test_hold_t        hold;

    printf("1..21\n");

    log = sft_log_init();
    log->log_level = SFT_LOG_CRIT;
    pool = sft_create_pool(4096, log);

    memset(buf, 'x', sizeof(buf));

    sft_str_set(&tp.name, "default");
    tp.threads = 1;
    tp.max_queue = 16;

    snprintf(top, sizeof(top), "/tmp/sft-xfer-io-XXXXXX");

    if (mkdtemp(top) == NULL || sft_thread_pool_start(&tp, log) != SFT_OK) {
        printf("Bail out! mkdtemp or thread pool\n");
        return 1;
    }

    /* a disk-backed storage: writes on the pool, reads from the cache */

    st = sft_storage_posix_create(pool, log, &name, (u_char *) top);
    sft_vfs_session_init(&s, st, NULL, SFT_PERM_ALL, log);

    rc = open_file(&s, &f, "disk", 1);
    io_init(&io, &s, &f, log);
    ok(rc == SFT_OK && io.fd >= 0 && io.how != SFT_XFER_IO_MEMORY,
       "disk: a descriptor, not the in-memory path");

    completions = 0;
    rc = sft_xfer_write(&io, buf, sizeof(buf), 0);
    ok(rc == SFT_AGAIN && io.busy, "disk: a write goes to the thread pool");
    wait_io(1);
    ok(completions == 1 && !io.busy && io.err == SFT_STORAGE_OK
       && io.nbytes == (ssize_t) sizeof(buf),
       "disk: its completion, the whole chunk written");
    /* a write still queued behind a busy thread: cancelled, never run */

    memset(in, 'y', sizeof(in));
    rc = sft_test_hold(&hold, &tp, pool);
    completions = 0;
    rc = (rc == SFT_OK) ? sft_xfer_write(&io, in, sizeof(in), 0) : SFT_ERROR;
    ok(rc == SFT_AGAIN && io.busy && sft_xfer_io_cancel(&io) == SFT_OK
       && !io.busy, "disk: a queued write is taken back at once");
    sft_test_release(&hold);
    ok(hold.done && completions == 0,
       "disk: its handler never called, the chunk never read");
    close_file(&s, &f, 1);

    rc = open_file(&s, &f, "disk", 0);
    io_init(&io, &s, &f, log);
    completions = 0;
    rc = (rc == SFT_OK) ? sft_xfer_read(&io, in, sizeof(in), 0) : SFT_ERROR;
    if (rc == SFT_AGAIN) {
        wait_io(1);
    }
    ok(rc != SFT_ERROR && io.err == SFT_STORAGE_OK
       && io.nbytes == (ssize_t) sizeof(in)
       && memcmp(in, buf, sizeof(in)) == 0,
       "disk: read back (from the page cache, or the pool)");
    close_file(&s, &f, 0);

    /* the worker's io_uring, where the kernel gives one */

    rc = sft_uring_init(8, log);

    if (rc == SFT_OK) {
        test_ring(&s, buf, in, sizeof(buf), log);
        sft_uring_done();

    } else {
        for (rc = 0; rc < 7; rc++) {
            ok(1, "# SKIP no io_uring");
        }
    }

    /* without SFT_STORAGE_CAP_FD: everything through the VFS */

    nocaps = *st->driver;
    nocaps.caps = 0;
    st->driver = &nocaps;

    rc = open_file(&s, &f, "disk", 0);
    io_init(&io, &s, &f, log);
    completions = 0;
    rc = (rc == SFT_OK) ? sft_xfer_read(&io, in, 100, 4000) : SFT_ERROR;
    ok(io.fd == SFT_INVALID_FILE && io.how == SFT_XFER_IO_VFS
       && rc == SFT_AGAIN, "no descriptor capability: a VFS read");
    wait_io(1);
    ok(completions == 1 && io.nbytes == 96, "which ends at the end of file");
    close_file(&s, &f, 0);

    /* tmpfs: at once, and charged to the quota */

    snprintf(shm, sizeof(shm), "/dev/shm/sft-xfer-io-%d", (int) getpid());

    if (mkdir(shm, 0755) != 0) {
        for (rc = 0; rc < 6; rc++) {
            ok(1, "# SKIP no /dev/shm");
        }

        goto done;
    }

    mst = sft_storage_posix_create(pool, log, &name, (u_char *) shm);

    size = sft_usage_memory_size(1);
    mem = calloc(1, size);
    sft_memzero(&q, sizeof(q));

    if (mst == NULL || mem == NULL
        || sft_usage_init_memory(mem, size) != SFT_OK
        || sft_usage_session_open(&name, 0, &q.usage, log) != SFT_OK)
    {
        printf("Bail out! tmpfs storage or usage record\n");
        return 1;
    }

    q.max_bytes = 10000;
    sft_vfs_session_init(&ms, mst, NULL, SFT_PERM_ALL, log);
    sft_memzero(&user, sizeof(user));
    user.name = name;
    ms.account = &user;
    ms.quota = &q;

    rc = open_file(&ms, &f, "mem", 1);
    io_init(&io, &ms, &f, log);
    ok(rc == SFT_OK && io.how == SFT_XFER_IO_MEMORY, "tmpfs: in memory");

    completions = 0;
    ok(sft_xfer_write(&io, buf, sizeof(buf), 0) == SFT_OK
       && sft_xfer_write(&io, buf, sizeof(buf), sizeof(buf)) == SFT_OK
       && completions == 0 && !io.busy,
       "tmpfs: writes done at once, even with a thread pool");

    ok(sft_xfer_write(&io, buf, sizeof(buf), 2 * sizeof(buf)) == SFT_ERROR
       && io.err == SFT_STORAGE_QUOTA,
       "tmpfs: a write over the quota refused");
    close_file(&ms, &f, 1);

    snprintf(cmd, sizeof(cmd), "%s/mem", shm);
    ok(access(cmd, F_OK) == 0, "tmpfs: committed");

    rc = open_file(&ms, &f, "mem", 0);
    io_init(&io, &ms, &f, log);

    ok(rc == SFT_OK && sft_xfer_read(&io, in, sizeof(in), sizeof(buf)) == SFT_OK
       && io.nbytes == (ssize_t) sizeof(in)
       && memcmp(in, buf, sizeof(in)) == 0,
       "tmpfs: read at once");
    ok(sft_xfer_read(&io, in, sizeof(in), 2 * sizeof(buf)) == SFT_OK
       && io.nbytes == 0 && completions == 0,
       "tmpfs: 0 bytes at the end, nothing on the pool");
    close_file(&ms, &f, 0);

    sft_storage_posix_destroy(mst);
    remove_tree(shm);

done:

    sft_storage_posix_destroy(st);
    remove_tree(top);
    sft_thread_pool_stop(&tp);
    sft_destroy_pool(pool);

    return failed ? 1 : 0;
}
