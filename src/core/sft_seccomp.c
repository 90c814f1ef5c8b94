/*
 * sft_seccomp.c -- the workers' seccomp-bpf allow-list, in the manner of
 * OpenSSH's sandbox-seccomp-filter: a hand-written BPF program that kills
 * the process on a foreign architecture, allows the calls the event loop,
 * the thread pool, the storage driver, TLS, libssh, io_uring and the
 * sanitizers make, some only with the arguments they pass (socket
 * families, no executable memory, signals to itself and its master,
 * ioctl requests, fcntl commands, prctl options, setsockopt levels and
 * the resolver's IP_RECVERR), and traps every other call.  The SIGSYS
 * handler writes one line naming the call to the error log and makes the
 * call fail with ENOSYS, so the worker goes on serving its other sessions.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_seccomp.h>

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>


/* the si_code of SIGSYS from a filter; older C libraries lack the name */
#ifndef SYS_SECCOMP
#define SYS_SECCOMP  1
#endif


sft_conf_enum_t  sft_seccomp_modes[] = {
    { sft_string("off"), SFT_SECCOMP_OFF },
    { sft_string("on"), SFT_SECCOMP_ON },
    { sft_string("log"), SFT_SECCOMP_LOG },
    { sft_null_string, 0 }
};


#if defined(__x86_64__)
#define SFT_SECCOMP_ARCH      AUDIT_ARCH_X86_64
#define SFT_SECCOMP_RESULT(uc)  (uc)->uc_mcontext.gregs[REG_RAX]
#elif defined(__aarch64__)
#define SFT_SECCOMP_ARCH      AUDIT_ARCH_AARCH64
#define SFT_SECCOMP_RESULT(uc)  (uc)->uc_mcontext.regs[0]
#endif


#if defined(SFT_SECCOMP_ARCH) && defined(SECCOMP_RET_LOG)                    \
    && defined(SECCOMP_FILTER_FLAG_TSYNC)

typedef struct {
    int          nr;
    const char  *name;
} sft_seccomp_call_t;


#define sft_seccomp_call(name)  { __NR_##name, #name }


/*
 * What a worker calls once it serves: found by tracing the test suite and
 * checked by running it under "seccomp log", with the sanitizer runtimes'
 * calls too.  aarch64 has only the *at() forms, and a kernel header may
 * lack the newest calls: those entries are guarded.
 */

static const sft_seccomp_call_t  sft_seccomp_allowed[] = {

    /* the event loop, sockets, signals */
    sft_seccomp_call(read),
    sft_seccomp_call(write),
    sft_seccomp_call(readv),
    sft_seccomp_call(writev),
    sft_seccomp_call(pread64),
    sft_seccomp_call(pwrite64),
    sft_seccomp_call(preadv),
    sft_seccomp_call(pwritev),
    sft_seccomp_call(preadv2),
    sft_seccomp_call(pwritev2),
    sft_seccomp_call(close),
    sft_seccomp_call(epoll_create1),
    sft_seccomp_call(epoll_ctl),
    sft_seccomp_call(epoll_pwait),
#ifdef __NR_epoll_wait
    sft_seccomp_call(epoll_wait),
#endif
#ifdef __NR_epoll_pwait2
    sft_seccomp_call(epoll_pwait2),
#endif
    sft_seccomp_call(ppoll),
#ifdef __NR_poll
    sft_seccomp_call(poll),
#endif
    sft_seccomp_call(pselect6),
#ifdef __NR_select
    sft_seccomp_call(select),
#endif
    sft_seccomp_call(eventfd2),
    sft_seccomp_call(accept),
    sft_seccomp_call(accept4),
    sft_seccomp_call(connect),
    sft_seccomp_call(bind),
    sft_seccomp_call(listen),
    sft_seccomp_call(shutdown),
    sft_seccomp_call(getsockname),
    sft_seccomp_call(getpeername),
    sft_seccomp_call(getsockopt),
    sft_seccomp_call(sendto),
    sft_seccomp_call(recvfrom),
    sft_seccomp_call(sendmsg),
    sft_seccomp_call(recvmsg),
    sft_seccomp_call(sendmmsg),
    sft_seccomp_call(recvmmsg),
    sft_seccomp_call(sendfile),
    sft_seccomp_call(splice),
    sft_seccomp_call(pipe2),
#ifdef __NR_pipe
    sft_seccomp_call(pipe),
#endif
    sft_seccomp_call(dup),
    sft_seccomp_call(dup3),
#ifdef __NR_dup2
    sft_seccomp_call(dup2),
#endif
    sft_seccomp_call(rt_sigaction),
    sft_seccomp_call(rt_sigprocmask),
    sft_seccomp_call(rt_sigreturn),
    sft_seccomp_call(rt_sigsuspend),
    sft_seccomp_call(rt_sigtimedwait),
    sft_seccomp_call(sigaltstack),
    sft_seccomp_call(setitimer),
    sft_seccomp_call(getitimer),
    sft_seccomp_call(restart_syscall),

    /* time */
    sft_seccomp_call(clock_gettime),
    sft_seccomp_call(clock_getres),
    sft_seccomp_call(clock_nanosleep),
    sft_seccomp_call(gettimeofday),
    sft_seccomp_call(nanosleep),
#ifdef __NR_time
    sft_seccomp_call(time),
#endif

    /* memory: the pools, the allocator, the sanitizers */
    sft_seccomp_call(brk),
    sft_seccomp_call(munmap),
    sft_seccomp_call(mremap),
    sft_seccomp_call(madvise),
    sft_seccomp_call(mincore),

    /* threads: the thread pool and glibc's thread start and exit */
    sft_seccomp_call(futex),
    sft_seccomp_call(set_robust_list),
    sft_seccomp_call(get_robust_list),
    sft_seccomp_call(set_tid_address),
#ifdef __NR_rseq
    sft_seccomp_call(rseq),
#endif
    sft_seccomp_call(sched_yield),
    sft_seccomp_call(sched_getaffinity),
    sft_seccomp_call(exit),
    sft_seccomp_call(exit_group),

    /* who and where we are */
    sft_seccomp_call(getpid),
    sft_seccomp_call(getppid),
    sft_seccomp_call(gettid),
    sft_seccomp_call(getuid),
    sft_seccomp_call(geteuid),
    sft_seccomp_call(getgid),
    sft_seccomp_call(getegid),
    sft_seccomp_call(getgroups),
    sft_seccomp_call(getresuid),
    sft_seccomp_call(getresgid),
    sft_seccomp_call(uname),
    sft_seccomp_call(sysinfo),
    sft_seccomp_call(getrusage),
    sft_seccomp_call(getrlimit),
    sft_seccomp_call(prlimit64),
    sft_seccomp_call(getcwd),
    sft_seccomp_call(umask),
    sft_seccomp_call(getrandom),

    /* files: the storage driver, logs, keys and certificates */
#ifdef __NR_open
    sft_seccomp_call(open),
#endif
    sft_seccomp_call(openat),
#ifdef __NR_openat2
    sft_seccomp_call(openat2),
#endif
#ifdef __NR_close_range
    sft_seccomp_call(close_range),
#endif
    sft_seccomp_call(lseek),
    sft_seccomp_call(fstat),
    sft_seccomp_call(newfstatat),
#ifdef __NR_stat
    sft_seccomp_call(stat),
#endif
#ifdef __NR_lstat
    sft_seccomp_call(lstat),
#endif
#ifdef __NR_statx
    sft_seccomp_call(statx),
#endif
    sft_seccomp_call(statfs),
    sft_seccomp_call(fstatfs),
    sft_seccomp_call(getdents64),
    sft_seccomp_call(mkdirat),
    sft_seccomp_call(unlinkat),
    sft_seccomp_call(renameat),
#ifdef __NR_renameat2
    sft_seccomp_call(renameat2),
#endif
    sft_seccomp_call(linkat),
    sft_seccomp_call(symlinkat),
    sft_seccomp_call(readlinkat),
#ifdef __NR_readlink
    sft_seccomp_call(readlink),
#endif
    sft_seccomp_call(fchmod),
    sft_seccomp_call(fchmodat),
    sft_seccomp_call(fchown),
    sft_seccomp_call(fchownat),
    sft_seccomp_call(utimensat),
    sft_seccomp_call(faccessat),
#ifdef __NR_faccessat2
    sft_seccomp_call(faccessat2),
#endif
#ifdef __NR_access
    sft_seccomp_call(access),
#endif
    sft_seccomp_call(fallocate),
    sft_seccomp_call(ftruncate),
    sft_seccomp_call(fsync),
    sft_seccomp_call(fdatasync),
    sft_seccomp_call(fadvise64),
    sft_seccomp_call(flock),
    sft_seccomp_call(copy_file_range),

    /* io_uring, only where it is built in: the filter cannot see its work */
#if (SFT_HAVE_IO_URING) && defined(__NR_io_uring_setup)
    sft_seccomp_call(io_uring_setup),
    sft_seccomp_call(io_uring_enter),
    sft_seccomp_call(io_uring_register),
#endif
};


/* calls a worker never makes, named when one is refused */

static const sft_seccomp_call_t  sft_seccomp_named[] = {
    sft_seccomp_call(execve),
    sft_seccomp_call(execveat),
#ifdef __NR_fork
    sft_seccomp_call(fork),
    sft_seccomp_call(vfork),
#endif
    sft_seccomp_call(clone),
    sft_seccomp_call(ptrace),
    sft_seccomp_call(process_vm_readv),
    sft_seccomp_call(process_vm_writev),
    sft_seccomp_call(personality),
    sft_seccomp_call(mount),
    sft_seccomp_call(umount2),
    sft_seccomp_call(pivot_root),
    sft_seccomp_call(chroot),
    sft_seccomp_call(unshare),
    sft_seccomp_call(setns),
    sft_seccomp_call(acct),
    sft_seccomp_call(reboot),
    sft_seccomp_call(kexec_load),
    sft_seccomp_call(init_module),
    sft_seccomp_call(finit_module),
    sft_seccomp_call(delete_module),
    sft_seccomp_call(bpf),
    sft_seccomp_call(perf_event_open),
    sft_seccomp_call(userfaultfd),
    sft_seccomp_call(keyctl),
    sft_seccomp_call(add_key),
    sft_seccomp_call(request_key),
    sft_seccomp_call(setuid),
    sft_seccomp_call(setgid),
    sft_seccomp_call(setresuid),
    sft_seccomp_call(setresgid),
    sft_seccomp_call(setgroups),
    sft_seccomp_call(capset),
    sft_seccomp_call(syslog),
    sft_seccomp_call(swapon),
    sft_seccomp_call(swapoff),
    sft_seccomp_call(settimeofday),
    sft_seccomp_call(clock_settime),
    sft_seccomp_call(adjtimex),
    sft_seccomp_call(mknodat),
    sft_seccomp_call(name_to_handle_at),
    sft_seccomp_call(open_by_handle_at),
    sft_seccomp_call(kcmp),
    sft_seccomp_call(quotactl),
    sft_seccomp_call(socket),

    /* allowed with some arguments only */
    sft_seccomp_call(socketpair),
    sft_seccomp_call(setsockopt),
    sft_seccomp_call(ioctl),
    sft_seccomp_call(fcntl),
    sft_seccomp_call(prctl),
    sft_seccomp_call(mmap),
    sft_seccomp_call(mprotect),
    sft_seccomp_call(kill),
    sft_seccomp_call(tgkill),
    sft_seccomp_call(tkill),
};


/*
 * The calls allowed with some arguments only, in the manner of OpenSSH's
 * SC_ALLOW_ARG: a call is allowed when one of its rules holds, and refused
 * as a call off the list when none does.  A rule reads the low 32 bits of
 * one argument: all the kernel takes of an int (a family, a level, a
 * request, a command, an option, a pid, a signal), and where the flags it
 * tests are; and, where one value alone says too little (a level and the
 * option at it), a second argument that must be a value as well.  The
 * values are what the worker, its libraries and the sanitizer runtimes
 * pass once it serves, found by tracing the test suite.
 */

#define SFT_SECCOMP_EQ     0        /* the argument is the value */
#define SFT_SECCOMP_CLEAR  1        /* it has none of the value's bits */
#define SFT_SECCOMP_SET    2        /* it has one of the value's bits */

#define SFT_SECCOMP_ONE    6        /* arg2: no second argument */

typedef struct {
    int          nr;
    uint32_t     arg;
    uint32_t     test;
    uint32_t     value;
    uint32_t     arg2;              /* SFT_SECCOMP_ONE, or an argument */
    uint32_t     value2;            /* that is this value too */
} sft_seccomp_rule_t;


#define sft_seccomp_rule(name, arg, test, value)                             \
    { __NR_##name, arg, SFT_SECCOMP_##test, (uint32_t) (value),              \
      SFT_SECCOMP_ONE, 0 }

#define sft_seccomp_rule2(name, arg, value, arg2, value2)                    \
    { __NR_##name, arg, SFT_SECCOMP_EQ, (uint32_t) (value),                  \
      arg2, (uint32_t) (value2) }


/* the kernel TLS level; older C libraries lack the name */
#ifndef SOL_TLS
#define SOL_TLS  282
#endif


static const sft_seccomp_rule_t  sft_seccomp_rules[] = {

    /* threads, never processes: clone() only with CLONE_THREAD */
    sft_seccomp_rule(clone, 0, SET, CLONE_THREAD),

    /* the families the server speaks: no packet or crypto API, no
       netlink but the routing socket */
    sft_seccomp_rule(socket, 0, EQ, AF_INET),
    sft_seccomp_rule(socket, 0, EQ, AF_INET6),
    sft_seccomp_rule(socket, 0, EQ, AF_UNIX),

    /* the C library's resolver sorts a name's addresses by the host's own
       (RFC 3484): a routing socket, which reads them; changing anything
       through it takes CAP_NET_ADMIN, which workers lack */
    sft_seccomp_rule2(socket, 0, AF_NETLINK, 2, NETLINK_ROUTE),

    sft_seccomp_rule(socketpair, 0, EQ, AF_UNIX),

    /* passive listeners, TCP, and kernel TLS (TCP_ULP, then SOL_TLS) */
    sft_seccomp_rule(setsockopt, 1, EQ, SOL_SOCKET),
    sft_seccomp_rule(setsockopt, 1, EQ, IPPROTO_TCP),
    sft_seccomp_rule(setsockopt, 1, EQ, SOL_TLS),

    /* the C library's resolver asks for ICMP errors on its UDP socket;
       no other IP option (multicast, transparent, header options) */
    sft_seccomp_rule2(setsockopt, 1, SOL_IP, 2, IP_RECVERR),
    sft_seccomp_rule2(setsockopt, 1, SOL_IPV6, 2, IPV6_RECVERR),

    /* no new executable memory: nothing written can be run */
    sft_seccomp_rule(mmap, 2, CLEAR, PROT_EXEC),
    sft_seccomp_rule(mprotect, 2, CLEAR, PROT_EXEC),

    /* bytes waiting on a socket: no terminal, device or file system
       requests */
    sft_seccomp_rule(ioctl, 1, EQ, FIONREAD),

    /* descriptor and file flags, pipe sizes for splice(): no locks, leases,
       owners or signals */
    sft_seccomp_rule(fcntl, 1, EQ, F_GETFD),
    sft_seccomp_rule(fcntl, 1, EQ, F_SETFD),
    sft_seccomp_rule(fcntl, 1, EQ, F_GETFL),
    sft_seccomp_rule(fcntl, 1, EQ, F_SETFL),
    sft_seccomp_rule(fcntl, 1, EQ, F_DUPFD_CLOEXEC),
    sft_seccomp_rule(fcntl, 1, EQ, F_SETPIPE_SZ),

    /* thread names; nothing that changes privileges, dumps or the
       process's memory layout */
    sft_seccomp_rule(prctl, 0, EQ, PR_SET_NAME),
};


#define SFT_SECCOMP_FIXED  10       /* instructions besides calls and rules */

#define sft_seccomp_stmt(code, k)                                            \
    (struct sock_filter) BPF_STMT(code, k)
#define sft_seccomp_jump(code, k, jt, jf)                                    \
    (struct sock_filter) BPF_JUMP(code, k, jt, jf)

#define SFT_SECCOMP_NR    offsetof(struct seccomp_data, nr)

/* the low 32 bits of argument i */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SFT_SECCOMP_ARG(i)  offsetof(struct seccomp_data, args[i])
#else
#define SFT_SECCOMP_ARG(i)  (offsetof(struct seccomp_data, args[i]) + 4)
#endif


static sft_uint_t sft_seccomp_emit(struct sock_filter *f, sft_uint_t n,
    const sft_seccomp_rule_t *r, sft_uint_t nrules, uint32_t dflt);
static void sft_seccomp_sigsys(int signo, siginfo_t *info, void *context);
static u_char *sft_seccomp_num(u_char *p, uint64_t n, sft_uint_t width);
static u_char *sft_seccomp_time(u_char *p);


/* the local time offset when the filter was installed, for the handler */
static long  sft_seccomp_gmtoff;


sft_int_t
sft_seccomp_install(sft_cycle_t *cycle, sft_uint_t mode, sft_uint_t flags)
{
    long                 rc;
    pid_t                self, master;
    time_t               now;
    uint32_t             dflt;
    sft_err_t            err;
    sft_uint_t           explicit;
    sft_uint_t           i, n, nsignals;
    struct tm            tm;
    sft_seccomp_rule_t   signals[5];
    struct sigaction     sa;
    struct sock_fprog    prog;
    struct sock_filter  *f;

    if (mode == SFT_SECCOMP_OFF) {
        sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                      "\"seccomp off\": workers run without a system call "
                      "filter, any call is open to a compromised worker");
        return SFT_OK;
    }

    if (mode == SFT_SECCOMP_LOG) {
        sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                      "\"seccomp log\": calls outside the allow-list are "
                      "allowed, the kernel's audit log names them");
    }

    explicit = (mode != SFT_CONF_UNSET_UINT);

    if (!explicit) {
        mode = SFT_SECCOMP_ON;
    }

    /* "log" allows the call, and the kernel's audit log names it */

    dflt = (mode == SFT_SECCOMP_LOG) ? SECCOMP_RET_LOG : SECCOMP_RET_TRAP;

    if (mode == SFT_SECCOMP_LOG
        && syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &dflt) != 0)
    {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "\"seccomp log\" needs Linux 4.14");
        return SFT_ERROR;
    }

    /*
     * Installed in the process itself after the fork, so its own pid and
     * its master's are known: signals go to these, and beyond them only
     * a session's end to another worker (a real-time signal no process
     * of the worker's user acts on unless it asked to), and with
     * SFT_SECCOMP_PROBE_PIDS signal 0, which asks whether a pid runs.
     */

    self = getpid();
    master = getppid();
    nsignals = 0;

    signals[nsignals++] = (sft_seccomp_rule_t)
                          sft_seccomp_rule(tgkill, 0, EQ, self);
    signals[nsignals++] = (sft_seccomp_rule_t)
                          sft_seccomp_rule(kill, 0, EQ, self);
    signals[nsignals++] = (sft_seccomp_rule_t)
                          sft_seccomp_rule(kill, 0, EQ, master);
    signals[nsignals++] = (sft_seccomp_rule_t)
                          sft_seccomp_rule(kill, 1, EQ, SFT_SIGNAL_SESSION);

    if (flags & SFT_SECCOMP_PROBE_PIDS) {
        signals[nsignals++] = (sft_seccomp_rule_t)
                              sft_seccomp_rule(kill, 1, EQ, 0);
    }

    f = sft_alloc((SFT_SECCOMP_FIXED + 2 * sft_nelems(sft_seccomp_allowed)
                   + 7 * (sft_nelems(sft_seccomp_rules) + nsignals))
                  * sizeof(struct sock_filter), cycle->log);
    if (f == NULL) {
        return SFT_ERROR;
    }

    n = 0;

    /* a call made through another architecture's entry kills the worker */

    f[n++] = sft_seccomp_stmt(BPF_LD|BPF_W|BPF_ABS,
                              offsetof(struct seccomp_data, arch));
    f[n++] = sft_seccomp_jump(BPF_JMP|BPF_JEQ|BPF_K, SFT_SECCOMP_ARCH, 1, 0);
    f[n++] = sft_seccomp_stmt(BPF_RET|BPF_K, SECCOMP_RET_KILL_PROCESS);

    f[n++] = sft_seccomp_stmt(BPF_LD|BPF_W|BPF_ABS, SFT_SECCOMP_NR);

#if defined(__x86_64__)
    /* the x32 numbers of the same architecture */
    f[n++] = sft_seccomp_jump(BPF_JMP|BPF_JGE|BPF_K, __X32_SYSCALL_BIT, 0, 1);
    f[n++] = sft_seccomp_stmt(BPF_RET|BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif

#ifdef __NR_clone3
    /* its flags are out of reach of BPF: glibc falls back to clone() */
    f[n++] = sft_seccomp_jump(BPF_JMP|BPF_JEQ|BPF_K, __NR_clone3, 0, 1);
    f[n++] = sft_seccomp_stmt(BPF_RET|BPF_K, SECCOMP_RET_ERRNO|ENOSYS);
#endif

    n = sft_seccomp_emit(f, n, sft_seccomp_rules,
                         sft_nelems(sft_seccomp_rules), dflt);
    n = sft_seccomp_emit(f, n, signals, nsignals, dflt);

    for (i = 0; i < sft_nelems(sft_seccomp_allowed); i++) {
        f[n++] = sft_seccomp_jump(BPF_JMP|BPF_JEQ|BPF_K,
                                  sft_seccomp_allowed[i].nr, 0, 1);
        f[n++] = sft_seccomp_stmt(BPF_RET|BPF_K, SECCOMP_RET_ALLOW);
    }

    f[n++] = sft_seccomp_stmt(BPF_RET|BPF_K, dflt);

    prog.len = (unsigned short) n;
    prog.filter = f;

    if (mode == SFT_SECCOMP_ON) {
        now = time(NULL);
        localtime_r(&now, &tm);
        sft_seccomp_gmtoff = tm.tm_gmtoff;

        sft_memzero(&sa, sizeof(struct sigaction));
        sa.sa_sigaction = sft_seccomp_sigsys;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);

        if (sigaction(SIGSYS, &sa, NULL) == -1) {
            sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                          "sigaction(SIGSYS) failed");
            sft_free(f);
            return SFT_ERROR;
        }
    }

    /* the thread pool already runs: TSYNC puts its threads under it too */

    rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                 SECCOMP_FILTER_FLAG_TSYNC, &prog);
    err = sft_errno;

    sft_free(f);

    if (rc == 0) {
        return SFT_OK;
    }

    /* the default is "on where the kernel has it" */

    if (!explicit && (err == ENOSYS || err == EINVAL)) {
        sft_log_error(SFT_LOG_NOTICE, cycle->log, err,
                      "the kernel has no seccomp filters: "
                      "workers run without one");
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_EMERG, cycle->log, err,
                  "seccomp(SECCOMP_SET_MODE_FILTER) failed");

    return SFT_ERROR;
}


/*
 * The rules of each call in turn, those of one call next to each other: a
 * call whose number it is not skips the group (the accumulator still holds
 * the number); one that no rule allows gets dflt.  A rule is a load, a
 * test and an allow (3 instructions), with a second argument a load and a
 * test more (5); a test that fails skips the rest of its rule.
 */

#define sft_seccomp_size(r)  ((r)->arg2 == SFT_SECCOMP_ONE ? 3 : 5)

static sft_uint_t
sft_seccomp_emit(struct sock_filter *f, sft_uint_t n,
    const sft_seccomp_rule_t *r, sft_uint_t nrules, uint32_t dflt)
{
    uint8_t     skip;
    sft_uint_t  i, end, size;

    for (i = 0; i < nrules; /* void */) {

        size = 0;

        for (end = i; end < nrules && r[end].nr == r[i].nr; end++) {
            size += sft_seccomp_size(&r[end]);
        }

        f[n++] = sft_seccomp_jump(BPF_JMP|BPF_JEQ|BPF_K, r[i].nr, 0,
                                  size + 1);

        for ( /* void */ ; i < end; i++) {
            skip = sft_seccomp_size(&r[i]) - 2;

            f[n++] = sft_seccomp_stmt(BPF_LD|BPF_W|BPF_ABS,
                                      SFT_SECCOMP_ARG(r[i].arg));

            switch (r[i].test) {

            case SFT_SECCOMP_EQ:
                f[n++] = sft_seccomp_jump(BPF_JMP|BPF_JEQ|BPF_K,
                                          r[i].value, 0, skip);
                break;

            case SFT_SECCOMP_CLEAR:
                f[n++] = sft_seccomp_jump(BPF_JMP|BPF_JSET|BPF_K,
                                          r[i].value, skip, 0);
                break;

            default: /* SFT_SECCOMP_SET */
                f[n++] = sft_seccomp_jump(BPF_JMP|BPF_JSET|BPF_K,
                                          r[i].value, 0, skip);
                break;
            }

            if (r[i].arg2 != SFT_SECCOMP_ONE) {
                f[n++] = sft_seccomp_stmt(BPF_LD|BPF_W|BPF_ABS,
                                          SFT_SECCOMP_ARG(r[i].arg2));
                f[n++] = sft_seccomp_jump(BPF_JMP|BPF_JEQ|BPF_K,
                                          r[i].value2, 0, 1);
            }

            f[n++] = sft_seccomp_stmt(BPF_RET|BPF_K, SECCOMP_RET_ALLOW);
        }

        f[n++] = sft_seccomp_stmt(BPF_RET|BPF_K, dflt);
    }

    return n;
}


/*
 * A refused call: one line in the error log, and the call returns ENOSYS,
 * as on a kernel that lacks it.  Only async-signal-safe work here: the
 * line is formatted by hand and written to the error log's descriptor.
 */

static void
sft_seccomp_sigsys(int signo, siginfo_t *info, void *context)
{
    int          nr, err;
    u_char      *p;
    sft_uint_t   i;
    ucontext_t  *uc = context;
    const char  *name;
    u_char       line[160];

    (void) signo;

    if (info->si_code != SYS_SECCOMP) {
        return;
    }

    err = errno;
    nr = info->si_syscall;
    name = NULL;

    for (i = 0; i < sft_nelems(sft_seccomp_named); i++) {
        if (sft_seccomp_named[i].nr == nr) {
            name = sft_seccomp_named[i].name;
            break;
        }
    }

    p = sft_seccomp_time(line);
    p = sft_cpymem(p, " [alert] ", 9);
    p = sft_seccomp_num(p, (uint64_t) getpid(), 0);
    *p++ = '#';
    p = sft_seccomp_num(p, sft_log_pid_slot, 0);
    p = sft_cpymem(p, ": seccomp refused system call ", 30);
    p = sft_seccomp_num(p, (uint64_t) nr, 0);

    if (name) {
        *p++ = ' ';
        *p++ = '(';
        p = sft_cpymem(p, name, sft_strlen(name));
        *p++ = ')';
    }

    p = sft_cpymem(p, ", it fails with ENOSYS\n", 23);

    sft_log_write(sft_cycle->log->file->fd, line, p - line);

    SFT_SECCOMP_RESULT(uc) = -ENOSYS;

    errno = err;
}


/* "YYYY/MM/DD HH:MM:SS" in the local time of the error log's other lines */

static u_char *
sft_seccomp_time(u_char *p)
{
    int64_t   t, days, secs, era, doe, yoe, doy, mp, y, m, d;

    t = (int64_t) time(NULL) + sft_seccomp_gmtoff;

    days = t / 86400;
    secs = t % 86400;

    if (secs < 0) {
        secs += 86400;
        days--;
    }

    /* days since 1970-01-01 to a civil date (H. Hinnant's algorithm) */

    days += 719468;
    era = (days >= 0 ? days : days - 146096) / 146097;
    doe = days - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y = yoe + era * 400;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y += (m <= 2);

    p = sft_seccomp_num(p, (uint64_t) y, 4);
    *p++ = '/';
    p = sft_seccomp_num(p, (uint64_t) m, 2);
    *p++ = '/';
    p = sft_seccomp_num(p, (uint64_t) d, 2);
    *p++ = ' ';
    p = sft_seccomp_num(p, (uint64_t) (secs / 3600), 2);
    *p++ = ':';
    p = sft_seccomp_num(p, (uint64_t) (secs / 60 % 60), 2);
    *p++ = ':';

    return sft_seccomp_num(p, (uint64_t) (secs % 60), 2);
}


/* a decimal number, zero-padded to width digits */

static u_char *
sft_seccomp_num(u_char *p, uint64_t n, sft_uint_t width)
{
    u_char      digits[20];
    sft_uint_t  len;

    len = 0;

    do {
        digits[len++] = (u_char) ('0' + n % 10);
        n /= 10;
    } while (n);

    while (width > len) {
        *p++ = '0';
        width--;
    }

    while (len) {
        *p++ = digits[--len];
    }

    return p;
}


#else

sft_int_t
sft_seccomp_install(sft_cycle_t *cycle, sft_uint_t mode, sft_uint_t flags)
{
    (void) flags;

    if (mode == SFT_SECCOMP_OFF || mode == SFT_CONF_UNSET_UINT) {
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                  "\"seccomp\" is not supported on this platform");

    return SFT_ERROR;
}

#endif
