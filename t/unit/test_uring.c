/*
 * test_uring.c -- the worker's io_uring driven by a minimal loop (poll
 * on its eventfd): reads and writes at offsets, more operations than
 * slots, cancelled operations that never call back and whose buffers are
 * released only after the kernel is done, no ring declining, and a
 * kernel that refuses io_uring (a seccomp filter) declining after one
 * notice.  With
 * SFT_URING_BENCH=N it also times N 256 KiB reads of a cached file
 * through the ring and with pread(2), as TAP comments.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_uring.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include "sft_tap.h"
#include "sft_test_uring.h"


#define ENTRIES     8
#define FILE_SIZE   (1024 * 1024)
#define BLOCK       4096
#define MANY        100


static sft_uint_t  handled, released;


static u_char
pattern(off_t off)
{
    return (u_char) ((off * 7 + off / 4096) & 0xff);
}


static void
done(sft_uring_op_t *op)
{
    (void) op;

    handled++;
}


static void
release(void *buf)
{
    free(buf);
    released++;
}


static sft_uint_t  read_other;

static void
release_read(void *buf)
{
    read_other = sft_memcmp(buf, "OTHER", 5) == 0;
    release(buf);
}


/* until the counter reaches want, at most 5 s */

static void
run(sft_uint_t *counter, sft_uint_t want)
{
    sft_test_uring_spin(counter, want, 500);
}


/* 100 ms of the loop, for what must not happen */

static void
idle(void)
{
    sft_uint_t  never = 0;

    sft_test_uring_spin(&never, 1, 10);
}


static void
op_init(sft_uring_op_t *op, int fd, void *buf, size_t len, off_t offset)
{
    sft_memzero(op, sizeof(sft_uring_op_t));

    op->fd = fd;
    op->buf = buf;
    op->len = len;
    op->offset = offset;
    op->handler = done;
}


static int
matches(const u_char *buf, off_t off, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if (buf[i] != pattern(off + (off_t) i)) {
            return 0;
        }
    }

    return 1;
}


static void
offsets(int fd)
{
    int             good;
    size_t          i, j;
    u_char          w[3][BLOCK], r[3][BLOCK], tail[BLOCK];
    off_t           at[3] = { 5 * BLOCK, 17, FILE_SIZE - 3 * BLOCK };
    sft_uring_op_t  op[3], end, past;

    for (i = 0; i < 3; i++) {
        memset(w[i], 'a' + (int) i, BLOCK);
        op_init(&op[i], fd, w[i], BLOCK, at[i]);
    }

    handled = 0;
    good = 1;

    for (i = 0; i < 3; i++) {
        good &= sft_uring_write(&op[i]) == SFT_AGAIN;
    }

    ok(good && sft_uring_available() == ENTRIES - 3,
       "three writes at offsets queued, three slots taken");

    run(&handled, 3);

    good = handled == 3;

    for (i = 0; i < 3; i++) {
        good &= op[i].result == BLOCK && op[i].slot == 0;
        good &= pread(fd, r[i], BLOCK, at[i]) == BLOCK
                && sft_memcmp(r[i], w[i], BLOCK) == 0;
    }

    ok(good, "each write landed whole at its offset");

    /* the pattern back in place, read in the reverse order */

    for (i = 0; i < 3; i++) {
        for (j = 0; j < BLOCK; j++) {
            w[i][j] = pattern(at[i] + (off_t) j);
        }

        good &= pwrite(fd, w[i], BLOCK, at[i]) == BLOCK;
        sft_memzero(r[i], BLOCK);
        op_init(&op[i], fd, r[i], BLOCK, at[i]);
    }

    handled = 0;

    for (i = 3; i > 0; i--) {
        good &= sft_uring_read(&op[i - 1]) == SFT_AGAIN;
    }

    op_init(&end, fd, tail, BLOCK, FILE_SIZE - 100);
    op_init(&past, fd, tail, BLOCK, FILE_SIZE + BLOCK);

    good &= sft_uring_read(&end) == SFT_AGAIN;
    run(&handled, 4);

    good &= sft_uring_read(&past) == SFT_AGAIN;
    run(&handled, 5);

    for (i = 0; i < 3; i++) {
        good &= op[i].result == BLOCK && matches(r[i], at[i], BLOCK);
    }

    ok(good, "reads at offsets return the file's bytes there");
    ok(end.result == 100 && matches(tail, FILE_SIZE - 100, 100),
       "a read over the end reports the short count");
    ok(past.result == 0, "a read past the end reports 0");
    ok(sft_uring_available() == ENTRIES, "every slot is free again");
}


static void
errors(const char *path, sft_log_t *log)
{
    int             fd;
    u_char          buf[16];
    sft_uring_op_t  op;

    fd = open(path, O_WRONLY);

    op_init(&op, fd, buf, sizeof(buf), 0);
    handled = 0;

    ok(sft_uring_read(&op) == SFT_AGAIN, "a read on a write-only file queued");
    run(&handled, 1);
    ok(handled == 1 && op.result == -EBADF, "its handler gets -EBADF");

    log->log_level = SFT_LOG_EMERG;     /* the refusals are alerts */

    op.offset = -1;
    ok(sft_uring_read(&op) == SFT_ERROR, "a negative offset is refused");

    op.offset = 0;
    op.len = (size_t) 1 << 40;
    ok(sft_uring_write(&op) == SFT_ERROR, "a length over 2 GiB is refused");

    log->log_level = SFT_LOG_INFO;

    close(fd);
}


static void
many(int fd)
{
    sft_uint_t      i, started, declined, wrong, rounds;
    static u_char   buf[MANY][512];
    sft_uring_op_t  op[MANY];

    for (i = 0; i < MANY; i++) {
        op_init(&op[i], fd, buf[i], 512, (off_t) i * 1000);
    }

    handled = 0;
    started = 0;
    declined = 0;

    for (i = 0; i < MANY; i++) {
        switch (sft_uring_read(&op[i])) {
        case SFT_AGAIN: started++; break;
        case SFT_DECLINED: declined++; break;
        default: break;
        }
    }

    ok(started == ENTRIES && declined == MANY - ENTRIES
       && sft_uring_available() == 0,
       "more reads than slots: the ring takes 8, declines the rest");

    /* the declined ones again as slots free up */

    for (rounds = 0; rounds < 1000 && started < MANY; rounds++) {
        run(&handled, handled + 1);

        for (i = 0; i < MANY && sft_uring_available(); i++) {
            if (op[i].slot == 0 && op[i].result == 0
                && sft_uring_read(&op[i]) == SFT_AGAIN)
            {
                started++;
            }
        }
    }

    run(&handled, MANY);

    wrong = 0;

    for (i = 0; i < MANY; i++) {
        wrong += op[i].result != 512 || !matches(buf[i], (off_t) i * 1000, 512);
    }

    ok(handled == MANY && wrong == 0, "all 100 completed, once, with the bytes");
}


static void
cancels(const char *path, const char *other)
{
    int              p[2], fd, fd2;
    char             got[8];
    u_char          *buf;
    struct stat      sb;
    sft_uring_op_t  *op;

    /* a read of an empty pipe waits in the kernel until cancelled */

    if (pipe2(p, O_NONBLOCK) == -1) {
        ok(0, "pipe");
        return;
    }

    buf = malloc(64);
    op = malloc(sizeof(sft_uring_op_t));
    op_init(op, p[0], buf, 64, 0);
    op->release = release;

    handled = 0;
    released = 0;

    ok(sft_uring_read(op) == SFT_AGAIN, "a read of an empty pipe queued");
    idle();
    ok(handled == 0 && released == 0, "it is still in flight");

    sft_uring_cancel(op);
    free(op);            /* the owner's op may go at once */

    run(&released, 1);

    (void) write(p[1], "late", 4);
    idle();

    ok(handled == 0, "a cancelled read never calls its handler");
    ok(released == 1, "its buffer was released once the kernel was done");
    ok(read(p[0], got, sizeof(got)) == 4 && sft_memcmp(got, "late", 4) == 0,
       "bytes that came after the cancel were not read into it");
    ok(sft_uring_available() == ENTRIES, "its slot is free again");

    /*
     * A write cancelled before the loop submitted it: the owner closes
     * its descriptor at once, and a file opened next under the same
     * number is never written.
     */

    fd = open(path, O_WRONLY);
    buf = malloc(BLOCK);
    memset(buf, 'X', BLOCK);
    op = malloc(sizeof(sft_uring_op_t));
    op_init(op, fd, buf, BLOCK, 0);
    op->release = release;
    released = 0;

    ok(sft_uring_write(op) == SFT_AGAIN, "a write queued");

    sft_uring_cancel(op);
    free(op);
    close(fd);

    fd2 = open(other, O_RDWR | O_CREAT | O_TRUNC, 0600);

    run(&released, 1);

    ok(fd2 == fd && fstat(fd2, &sb) == 0 && sb.st_size == 0,
       "a new file under the cancelled write's descriptor is untouched");
    ok(handled == 0 && released == 1,
       "the cancelled write never called back; its buffer was released");

    close(fd2);

    /* the same with a read, which the kernel does at once from the cache */

    fd = open(path, O_RDONLY);
    buf = calloc(1, 8);
    op = malloc(sizeof(sft_uring_op_t));
    op_init(op, fd, buf, 8, 0);
    op->release = release_read;
    released = 0;

    (void) sft_uring_read(op);
    sft_uring_cancel(op);
    free(op);
    close(fd);

    fd2 = open(other, O_RDWR | O_CREAT | O_TRUNC, 0600);
    (void) write(fd2, "OTHER...", 8);

    run(&released, 1);

    ok(fd2 == fd && released == 1 && handled == 0 && !read_other,
       "a cancelled read never reads the next file under its descriptor");

    close(fd2);

    /* the teardown takes what is still in flight without calling back */

    op = malloc(sizeof(sft_uring_op_t));
    buf = malloc(64);
    op_init(op, p[0], buf, 64, 0);

    ok(sft_uring_read(op) == SFT_AGAIN, "another read of the pipe queued");
    sft_uring_submit();

    sft_uring_done();

    (void) write(p[1], "gone", 4);

    ok(handled == 0 && read(p[0], got, sizeof(got)) == 4,
       "the teardown cancelled it without calling back");

    free(op);
    free(buf);
    close(p[0]);
    close(p[1]);
}


/*
 * In a child whose seccomp filter refuses io_uring_setup(2) with EPERM:
 * the ring declines, says why once, and reads decline; the child's exit
 * code and log come back to the parent.
 */

static void
refused(void)
{
    int                   p[2], status;
    char                  out[1024];
    pid_t                 pid;
    ssize_t               n;
    sft_log_t            *log;
    sft_uring_op_t        op;
    struct sock_fprog     prog;
    struct sock_filter    filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
    };

    if (pipe(p) == -1) {
        ok(0, "pipe");
        return;
    }

    fflush(stdout);
    pid = fork();

    if (pid == 0) {
        dup2(p[1], STDERR_FILENO);

        prog.len = sft_nelems(filter);
        prog.filter = filter;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1
            || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == -1)
        {
            _exit(3);
        }

        log = sft_log_init();
        op_init(&op, 0, NULL, 0, 0);

        _exit(sft_uring_init(ENTRIES, log) == SFT_DECLINED
              && sft_uring_read(&op) == SFT_DECLINED
              && sft_uring_available() == 0 ? 0 : 1);
    }

    close(p[1]);
    n = read(p[0], out, sizeof(out) - 1);
    out[n > 0 ? n : 0] = '\0';
    close(p[0]);

    ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)
       && WEXITSTATUS(status) == 0,
       "io_uring refused by the kernel: no ring, reads decline");
    ok(strstr(out, "[notice] io_uring_queue_init() failed") != NULL
       && strstr(out, "without io_uring (1: Operation not permitted)") != NULL
       && strchr(out, '\n') == out + strlen(out) - 1,
       "one notice says why");

    if (strchr(out, '\n') != out + strlen(out) - 1) {
        printf("# %s", out);
    }
}


static double
now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


/* one read after the other, as a transfer does, and 8 in one pass */

static void
bench(const char *path, sft_uint_t n)
{
    int              fd;
    u_char          *buf;
    double           t;
    sft_uint_t       i, j, chunk, chunks;
    sft_uring_op_t   op, ops[ENTRIES];

    chunk = 256 * 1024;
    chunks = 64;
    buf = malloc(chunk * chunks);
    fd = open(path, O_RDWR | O_TRUNC);
    memset(buf, 'b', chunk * chunks);
    (void) pwrite(fd, buf, chunk * chunks, 0);

    t = now();

    for (i = 0; i < n; i++) {
        if (pread(fd, buf, chunk, (off_t) ((i % chunks) * chunk)) < 0) {
            break;
        }
    }

    printf("# pread:    %lu reads of 256 KiB in %.3f s\n", (unsigned long) n,
           now() - t);

    t = now();
    handled = 0;

    for (i = 0; i < n; i++) {
        op_init(&op, fd, buf, chunk, (off_t) ((i % chunks) * chunk));

        if (sft_uring_read(&op) != SFT_AGAIN) {
            break;
        }

        run(&handled, i + 1);
    }

    printf("# io_uring: %lu reads of 256 KiB in %.3f s, one at a time\n",
           (unsigned long) n, now() - t);

    /* a pass of the loop that queues 8 submits them together */

    t = now();
    handled = 0;

    for (i = 0; i < n; i += j) {
        for (j = 0; j < ENTRIES && i + j < n; j++) {
            op_init(&ops[j], fd, buf + j * chunk, chunk,
                    (off_t) (((i + j) % chunks) * chunk));

            if (sft_uring_read(&ops[j]) != SFT_AGAIN) {
                break;
            }
        }

        run(&handled, i + j);
    }

    printf("# io_uring: %lu reads of 256 KiB in %.3f s, 8 at a time\n",
           (unsigned long) n, now() - t);

    close(fd);
    free(buf);
}


int
main(void)
{
    int              fd;
    char             path[64], other[64], *env;
    u_char          *data;
    off_t            i;
    sft_log_t       *log;
    sft_uring_op_t   op;

#if !(SFT_HAVE_IO_URING)
    printf("1..0 # SKIP built without --with-io_uring\n");
    return 0;
#endif

    log = sft_log_init();
    sft_time_update();

    op_init(&op, 0, NULL, 0, 0);

    if (sft_uring_read(&op) != SFT_DECLINED) {
        printf("1..1\nnot ok 1 - without a ring a read declines\n");
        return 1;
    }

    if (sft_uring_init(ENTRIES, log) != SFT_OK) {
        printf("1..0 # SKIP the kernel refused io_uring\n");
        return 0;
    }

    printf("1..29\n");

    ok(sft_uring_available() == ENTRIES, "a ring of 8 slots");

    snprintf(path, sizeof(path), "/tmp/sft-uring-%ld", (long) getpid());
    snprintf(other, sizeof(other), "/tmp/sft-uring-%ld-2", (long) getpid());

    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    data = malloc(FILE_SIZE);

    for (i = 0; i < FILE_SIZE; i++) {
        data[i] = pattern(i);
    }

    if (fd == -1 || write(fd, data, FILE_SIZE) != FILE_SIZE) {
        printf("# %s cannot be written\n", path);
    }

    free(data);

    offsets(fd);
    errors(path, log);
    many(fd);

    env = getenv("SFT_URING_BENCH");

    if (env != NULL) {
        bench(path, strtoul(env, NULL, 10));
    }

    close(fd);

    cancels(path, other);
    refused();

    /* after the teardown, or with "io_uring off": no ring, decline */

    op_init(&op, 0, NULL, 0, 0);

    ok(sft_uring_read(&op) == SFT_DECLINED
       && sft_uring_write(&op) == SFT_DECLINED,
       "without a ring reads and writes decline");
    ok(sft_uring_available() == 0, "without a ring nothing is available");

    unlink(path);
    unlink(other);

    return failed ? 1 : 0;
}
