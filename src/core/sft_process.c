/*
 * sft_process.c -- forking workers with a channel each, the signal handlers
 * that only set flags, and daemonizing.
 */

#include <sft_config.h>
#include <sft_core.h>


pid_t          sft_pid;
sft_int_t      sft_process_slot;
sft_int_t      sft_last_process;
sft_process_t  sft_processes[SFT_MAX_PROCESSES];
sft_uint_t     sft_process_role;

volatile sig_atomic_t  sft_reap;
volatile sig_atomic_t  sft_terminate;
volatile sig_atomic_t  sft_quit;
volatile sig_atomic_t  sft_reconfigure;
volatile sig_atomic_t  sft_reopen;
volatile sig_atomic_t  sft_sigalrm;
volatile sig_atomic_t  sft_change_binary;
volatile sig_atomic_t  sft_noaccept;


static void
sft_signal_handler(int signo)
{
    int  err;

    err = errno;

    switch (signo) {
    case SIGQUIT: sft_quit = 1; break;
    case SIGTERM:
    case SIGINT: sft_terminate = 1; break;
    case SIGHUP: sft_reconfigure = 1; break;
    case SIGUSR1: sft_reopen = 1; break;
    case SIGALRM: sft_sigalrm = 1; break;
    case SIGUSR2: sft_change_binary = 1; break;
    case SIGWINCH: sft_noaccept = 1; break;
    case SIGCHLD: sft_reap = 1; break;
    default: break;
    }

    errno = err;
}


sft_int_t
sft_init_signals(sft_log_t *log)
{
    size_t            i;
    struct sigaction  sa;
    static const int  sigs[] = { SIGQUIT, SIGTERM, SIGINT, SIGHUP, SIGUSR1,
                                 SIGUSR2, SIGWINCH, SIGALRM, SIGCHLD };

    for (i = 0; i < sft_nelems(sigs); i++) {
        sft_memzero(&sa, sizeof(struct sigaction));
        sa.sa_handler = sft_signal_handler;
        sigemptyset(&sa.sa_mask);

        if (sigaction(sigs[i], &sa, NULL) == -1) {
            sft_log_error(SFT_LOG_EMERG, log, sft_errno,
                          "sigaction(%d) failed", sigs[i]);
            return SFT_ERROR;
        }
    }

    sft_memzero(&sa, sizeof(struct sigaction));
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);

    /*
     * the new binary of an upgrade inherits the old master's blocked
     * signals: a single process (master_process off) would never see one
     */

    sigemptyset(&sa.sa_mask);

    if (sigprocmask(SIG_SETMASK, &sa.sa_mask, NULL) == -1) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno, "sigprocmask() failed");
        return SFT_ERROR;
    }

    return SFT_OK;
}


pid_t
sft_spawn_process(sft_cycle_t *cycle, sft_spawn_proc_pt proc, void *data,
    char *name, sft_int_t respawn)
{
    pid_t      pid;
    sft_int_t  s;

    if (respawn >= 0) {
        s = respawn;

    } else {
        for (s = 0; s < sft_last_process; s++) {
            if (sft_processes[s].pid == -1) {
                break;
            }
        }

        if (s == SFT_MAX_PROCESSES) {
            sft_log_error(SFT_LOG_ALERT, cycle->log, 0,
                          "no more than %d processes can be spawned",
                          SFT_MAX_PROCESSES);
            return -1;
        }
    }

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
                   sft_processes[s].channel) == -1)
    {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "socketpair() failed while spawning \"%s\"", name);
        return -1;
    }

    if (fcntl(sft_processes[s].channel[0], F_SETFL, O_NONBLOCK) == -1
        || fcntl(sft_processes[s].channel[1], F_SETFL, O_NONBLOCK) == -1)
    {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "fcntl(O_NONBLOCK) failed while spawning \"%s\"", name);
        close(sft_processes[s].channel[0]);
        close(sft_processes[s].channel[1]);
        return -1;
    }

    sft_process_slot = s;

    pid = fork();

    switch (pid) {

    case -1:
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "fork() failed while spawning \"%s\"", name);
        close(sft_processes[s].channel[0]);
        close(sft_processes[s].channel[1]);
        return -1;

    case 0:
        sft_pid = getpid();
        close(sft_processes[s].channel[0]);
        sft_processes[s].channel[0] = -1;
        proc(cycle, data);
        break;

    default:
        break;
    }

    close(sft_processes[s].channel[1]);
    sft_processes[s].channel[1] = -1;

    sft_log_error(SFT_LOG_NOTICE, cycle->log, 0, "start %s %d", name,
                  (int) pid);

    sft_processes[s].pid = pid;
    sft_processes[s].start = sft_monotonic_msec();
    sft_processes[s].respawn_at = 0;

    if (respawn < 0) {
        sft_processes[s].backoff = 0;
    }
    sft_processes[s].exited = 0;
    sft_processes[s].exiting = 0;
    sft_processes[s].status = 0;
    sft_processes[s].proc = proc;
    sft_processes[s].data = data;
    sft_processes[s].name = name;
    sft_processes[s].respawn = (respawn != SFT_PROCESS_NORESPAWN);
    sft_processes[s].just_spawn = (respawn == SFT_PROCESS_JUST_SPAWN);

    if (s == sft_last_process) {
        sft_last_process++;
    }

    return pid;
}


sft_int_t
sft_channel_write(sft_fd_t fd, int cmd, sft_log_t *log)
{
    ssize_t  n;

    do {
        n = write(fd, &cmd, sizeof(int));
    } while (n == -1 && errno == EINTR);

    if (n != sizeof(int)) {
        sft_log_error(SFT_LOG_ALERT, log, sft_errno,
                      "write() to the worker channel failed");
        return SFT_ERROR;
    }

    return SFT_OK;
}


/* SFT_OK with *cmd set, SFT_AGAIN, or SFT_DONE when the master is gone */

sft_int_t
sft_channel_read(sft_fd_t fd, int *cmd, sft_log_t *log)
{
    ssize_t  n;

    n = read(fd, cmd, sizeof(int));

    if (n == -1) {
        if (errno == EAGAIN || errno == EINTR) {
            return SFT_AGAIN;
        }

        sft_log_error(SFT_LOG_ALERT, log, sft_errno,
                      "read() from the master channel failed");
        return SFT_ERROR;
    }

    if (n == 0) {
        return SFT_DONE;
    }

    if (n != sizeof(int)) {
        sft_log_error(SFT_LOG_ALERT, log, 0,
                      "short read() from the master channel");
        return SFT_ERROR;
    }

    return SFT_OK;
}


sft_int_t
sft_daemon(sft_log_t *log)
{
    int  fd;

    switch (fork()) {
    case -1:
        sft_log_error(SFT_LOG_EMERG, log, sft_errno, "fork() failed");
        return SFT_ERROR;

    case 0:
        break;

    default:
        _exit(0);
    }

    sft_pid = getpid();

    if (setsid() == -1) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno, "setsid() failed");
        return SFT_ERROR;
    }

    fd = open("/dev/null", O_RDWR);
    if (fd == -1) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno,
                      "open(\"/dev/null\") failed");
        return SFT_ERROR;
    }

    dup2(fd, STDIN_FILENO);
    dup2(fd, STDOUT_FILENO);

    if (fd > STDERR_FILENO) {
        close(fd);
    }

    return SFT_OK;
}


/* a worker of this master that has not exited: its files are in use */

sft_uint_t
sft_process_is_live(pid_t pid)
{
    sft_int_t  i;

    for (i = 0; i < sft_last_process; i++) {
        if (sft_processes[i].pid == pid && !sft_processes[i].exited) {
            return 1;
        }
    }

    return 0;
}
