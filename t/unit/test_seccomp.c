/*
 * test_seccomp.c -- the workers' system call filter in a child process set
 * up as a worker is (a thread pool already running): a call off the list
 * fails with ENOSYS on the loop's thread and on a pool thread, each named
 * in the error log; threads are still created, processes are not; only
 * the INET, INET6 and UNIX socket families are open, and netlink's
 * routing socket (the resolver's); memory is never made executable;
 * signals go only to the process itself and its parent; ioctl and fcntl
 * take only the requests and commands the workers use;
 * setsockopt() at the IP levels takes only the resolver's IP_RECVERR,
 * the level and the option checked together.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_seccomp.h>
#include <poll.h>
#include <linux/netlink.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "sft_tap.h"


#define CHILD_TESTS  27


static long  pool_rc;
static int   pool_err;


static void
personality_task(void *data, sft_log_t *log)
{
    (void) data;
    (void) log;

    errno = 0;
    pool_rc = syscall(SYS_personality, 0xffffffffUL);
    pool_err = errno;
}


static void
task_done(sft_event_t *ev)
{
    (void) ev;
}


static void *
thread_start(void *data)
{
    return data;
}


/* what the handler wrote to the error log so far */

static size_t
log_read(int fd, char *buf, size_t size, size_t have)
{
    ssize_t  n;

    while (have < size - 1) {
        n = read(fd, buf + have, size - 1 - have);
        if (n <= 0) {
            break;
        }
        have += n;
    }

    buf[have] = '\0';

    return have;
}


static int
refused(long rc)
{
    return rc == -1 && errno == ENOSYS;
}


static void
filtered_child(void)
{
    int                 fds[2], sp[2], fd, n;
    long                rc;
    void               *p;
    char                text[4096];
    size_t              have;
    pid_t               pid;
    void               *res;
    pthread_t           th;
    sft_log_t          *log;
    sft_pool_t         *pool;
    sft_cycle_t         cycle;
    struct pollfd       pfd;
    sft_thread_pool_t   tp;
    sft_thread_task_t  *task;

    log = sft_log_init();
    pool = sft_create_pool(4096, log);

    if (pipe2(fds, O_NONBLOCK|O_CLOEXEC) == -1) {
        _exit(2);
    }

    log->file->fd = fds[1];
    sft_memzero(&cycle, sizeof(sft_cycle_t));
    cycle.log = log;
    sft_cycle = &cycle;

    /* as in a worker: the pool runs before the filter comes */

    sft_memzero(&tp, sizeof(tp));
    sft_str_set(&tp.name, "test");
    tp.threads = 1;
    tp.max_queue = 4;

    if (sft_thread_pool_start(&tp, log) != SFT_OK) {
        _exit(2);
    }

    ok(sft_seccomp_install(&cycle, SFT_SECCOMP_ON, 0) == SFT_OK,
       "filter installed");

    errno = 0;
    ok(refused(syscall(SYS_personality, 0xffffffffUL)),
       "a call off the list fails with ENOSYS");

    have = log_read(fds[0], text, sizeof(text), 0);
    ok(strstr(text, "[alert] ") != NULL
       && strstr(text, "seccomp refused system call ") != NULL
       && strstr(text, " (personality), it fails with ENOSYS\n") != NULL,
       "the error log names it");

    /* a pool thread is under the filter, and its SIGSYS is not blocked */

    task = sft_thread_task_alloc(pool, 0);
    task->handler = personality_task;
    task->event.handler = task_done;

    pool_rc = 0;

    if (sft_thread_task_post(&tp, task) != SFT_OK) {
        _exit(2);
    }

    pfd.fd = tp.notify_fd;
    pfd.events = POLLIN;
    (void) poll(&pfd, 1, 10000);
    sft_thread_pool_complete(&tp);

    ok(pool_rc == -1 && pool_err == ENOSYS,
       "on a pool thread too, which goes on");

    ok(pthread_create(&th, NULL, thread_start, &tp) == 0
       && pthread_join(th, &res) == 0 && res == &tp,
       "threads are still made");

    pid = fork();

    if (pid == 0) {
        _exit(0);
    }

    ok(pid == -1 && errno == ENOSYS, "a process is not");

    have = log_read(fds[0], text, sizeof(text), have);
    ok(strstr(text, " (clone), it fails with ENOSYS\n") != NULL,
       "the log says so");

    errno = 0;
    rc = socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    ok(refused(rc), "no netlink socket but the routing one");

    fd = socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE);
    ok(fd != -1, "the routing socket, for the resolver");

    if (fd != -1) {
        close(fd);
    }

    fd = socket(AF_INET6, SOCK_STREAM|SOCK_CLOEXEC, 0);
    ok(fd != -1 || errno == EAFNOSUPPORT, "an INET6 socket");

    errno = 0;
    ok(refused(socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, 0)),
       "no packet socket");

    errno = 0;
    ok(refused(socketpair(AF_INET, SOCK_STREAM, 0, sp)),
       "socketpair() of UNIX sockets only");

    /* memory: read and write, never executable */

    errno = 0;
    p = mmap(NULL, 4096, PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_ANONYMOUS,
             -1, 0);
    ok(p == MAP_FAILED && errno == ENOSYS, "no executable mapping");

    p = mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS,
             -1, 0);
    ok(p != MAP_FAILED, "a writable mapping");

    errno = 0;
    ok(refused(mprotect(p, 4096, PROT_READ|PROT_WRITE|PROT_EXEC)),
       "not made writable and executable");

    errno = 0;
    ok(refused(mprotect(p, 4096, PROT_READ|PROT_EXEC)),
       "nor executable alone");

    ok(mprotect(p, 4096, PROT_READ) == 0, "read-only is fine");

    have = log_read(fds[0], text, sizeof(text), have);
    ok(strstr(text, " (mprotect), it fails with ENOSYS\n") != NULL
       && strstr(text, " (mmap), it fails with ENOSYS\n") != NULL,
       "the log names mmap and mprotect");

    /* signals: to itself and its parent, not to others */

    ok(kill(getpid(), 0) == 0 && kill(getppid(), 0) == 0,
       "signal 0 to itself and its parent");

    errno = 0;
    ok(refused(kill(1, 0)), "not to init");

    have = log_read(fds[0], text, sizeof(text), have);
    ok(strstr(text, " (kill), it fails with ENOSYS\n") != NULL,
       "the log names kill");

    /* requests and commands the workers use, not others */

    ok(ioctl(fds[0], FIONREAD, &n) == 0 && fcntl(fds[0], F_GETFL) != -1,
       "FIONREAD and F_GETFL");

    errno = 0;
    ok(refused(fcntl(fds[0], F_SETOWN, getpid()))
       && refused(ioctl(fds[0], TIOCSTI, "x")),
       "not F_SETOWN or TIOCSTI");

    /* the resolver's UDP socket: IP_RECVERR, no other IP option */

    fd = socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC, 0);
    n = 1;

    ok(fd != -1
       && setsockopt(fd, SOL_IP, IP_RECVERR, &n, sizeof(int)) == 0,
       "IP_RECVERR at SOL_IP");

    errno = 0;
    ok(refused(setsockopt(fd, SOL_IP, IP_TRANSPARENT, &n, sizeof(int)))
       && refused(setsockopt(fd, SOL_IP, IP_MULTICAST_LOOP, &n,
                             sizeof(int))),
       "not IP_TRANSPARENT or IP_MULTICAST_LOOP");

    /* the option's number at another level is not it */

    errno = 0;
    ok(refused(setsockopt(fd, SOL_IPV6, IP_RECVERR, &n, sizeof(int))),
       "not IP_RECVERR's number at SOL_IPV6");

    if (fd != -1) {
        close(fd);
    }

    fd = socket(AF_INET6, SOCK_DGRAM|SOCK_CLOEXEC, 0);

    ok(fd == -1
       || setsockopt(fd, SOL_IPV6, IPV6_RECVERR, &n, sizeof(int)) == 0,
       "IPV6_RECVERR at SOL_IPV6");

    if (fd != -1) {
        close(fd);
    }

    /* no exit handlers: a sanitizer's leak check would need a process */

    fflush(stdout);
    _exit(failed ? 1 : 0);
}


int
main(void)
{
    int    status;
    pid_t  pid;

    printf("1..%d\n", CHILD_TESTS + 1);
    fflush(stdout);

    pid = fork();

    if (pid == 0) {
        filtered_child();
    }

    status = -1;

    if (pid > 0) {
        (void) waitpid(pid, &status, 0);
    }

    tests = CHILD_TESTS;
    ok(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "the filtered child ran to its end");

    return failed ? 1 : 0;
}
