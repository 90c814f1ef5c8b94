/*
 * bench/seccomp_cost.c -- what the workers' seccomp filter adds to a
 * system call: times a few calls a worker makes all the time before and
 * after installing the same filter (sft_seccomp_install()), and prints
 * nanoseconds per call, the best of five rounds.  Calls allowed by their
 * number alone are answered from the kernel's per-filter cache of
 * constant results (Linux 5.11+) and should cost nothing more; calls
 * with argument rules (fcntl, setsockopt, socket, ...) run the program.
 *
 * make bench-seccomp
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_seccomp.h>

#include <sys/epoll.h>
#include <sys/syscall.h>


#define SFT_BENCH_CALLS   1000000
#define SFT_BENCH_ROUNDS  5


typedef struct {
    const char  *name;
    void       (*call)(int fd);
} sft_bench_call_t;


static void
sft_bench_getppid(int fd)
{
    (void) fd;
    (void) syscall(SYS_getppid);
}


static void
sft_bench_epoll_wait(int fd)
{
    struct epoll_event  ev;

    (void) epoll_wait(fd, &ev, 1, 0);
}


static void
sft_bench_fcntl(int fd)
{
    (void) fcntl(fd, F_GETFL);
}


static void
sft_bench_setsockopt(int fd)
{
    int  on = 1;

    (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(int));
}


static sft_bench_call_t  sft_bench_calls[] = {
    { "getppid (by number)", sft_bench_getppid },
    { "epoll_wait, 0 ms (by number)", sft_bench_epoll_wait },
    { "fcntl F_GETFL (argument rules)", sft_bench_fcntl },
    { "setsockopt SO_REUSEADDR (argument rules)", sft_bench_setsockopt },
};


static double
sft_bench_seconds(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


static void
sft_bench_run(double *ns, int epfd, int sock)
{
    int         fd, r;
    double      t;
    sft_uint_t  i, n;

    for (i = 0; i < sft_nelems(sft_bench_calls); i++) {
        fd = (i == 1) ? epfd : sock;
        ns[i] = 1e18;

        for (r = 0; r < SFT_BENCH_ROUNDS; r++) {
            t = sft_bench_seconds();

            for (n = 0; n < SFT_BENCH_CALLS; n++) {
                sft_bench_calls[i].call(fd);
            }

            t = (sft_bench_seconds() - t) * 1e9 / SFT_BENCH_CALLS;

            if (t < ns[i]) {
                ns[i] = t;
            }
        }
    }
}


int
main(void)
{
    int           epfd, sock;
    double        off[sft_nelems(sft_bench_calls)];
    double        on[sft_nelems(sft_bench_calls)];
    sft_uint_t    i;
    sft_cycle_t   cycle;

    epfd = epoll_create1(EPOLL_CLOEXEC);
    sock = socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, 0);

    if (epfd == -1 || sock == -1) {
        perror("seccomp_cost");
        return 2;
    }

    sft_memzero(&cycle, sizeof(sft_cycle_t));
    cycle.log = sft_log_init();
    sft_cycle = &cycle;

    sft_bench_run(off, epfd, sock);

    if (sft_seccomp_install(&cycle, SFT_SECCOMP_ON, 0) != SFT_OK) {
        fprintf(stderr, "seccomp_cost: the filter was not installed\n");
        return 2;
    }

    sft_bench_run(on, epfd, sock);

    printf("%-42s %9s %9s %9s\n", "ns per call", "no filter", "filter",
           "added");

    for (i = 0; i < sft_nelems(sft_bench_calls); i++) {
        printf("%-42s %9.0f %9.0f %9.0f\n", sft_bench_calls[i].name,
               off[i], on[i], on[i] - off[i]);
    }

    return 0;
}
