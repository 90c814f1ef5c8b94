/*
 * sft_sweeper.c -- the master reads nothing a client chose.  What workers
 * that died left behind (the storages' temporary uploads, named after
 * client files) is removed by the modules' processes_changed hooks, and
 * those run in a short-lived child of the master confined as a worker is:
 * the configured user, no capabilities, no_new_privs, Landlock and the
 * seccomp filter.  The child inherits the master's process table, so it
 * tells the files of live workers from those of dead ones.  One sweeper
 * runs at a time; a change while it runs asks for another after it.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_confine.h>
#include <sft_seccomp.h>
#include <sft_setproctitle.h>
#include <sft_sweeper.h>


static void sft_sweeper_process(sft_cycle_t *cycle);


static pid_t       sft_sweeper;          /* the running sweeper, or 0 */
static sft_uint_t  sft_sweeper_again;    /* a change came while it ran */


/* in the master, once workers were started or dead ones replaced */

void
sft_sweeper_start(sft_cycle_t *cycle)
{
    pid_t       pid;
    sft_uint_t  m;

    for (m = 0; cycle->modules[m]; m++) {
        if (cycle->modules[m]->processes_changed) {
            break;
        }
    }

    if (cycle->modules[m] == NULL) {
        return;
    }

    if (sft_sweeper) {
        sft_sweeper_again = 1;
        return;
    }

    pid = fork();

    switch (pid) {

    case -1:
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "fork() of the sweeper process failed");
        return;

    case 0:
        sft_sweeper_process(cycle);
        break;

    default:
        break;
    }

    sft_sweeper = pid;
    sft_sweeper_again = 0;
}


/*
 * In the master, for a child it reaped: SFT_DECLINED if it is not the
 * sweeper, SFT_AGAIN if another sweep was asked for while it ran.
 */

sft_int_t
sft_sweeper_exited(sft_cycle_t *cycle, pid_t pid, int status)
{
    if (pid != sft_sweeper || pid == 0) {
        return SFT_DECLINED;
    }

    sft_sweeper = 0;

    if (WIFSIGNALED(status)) {
        sft_log_error(SFT_LOG_ERR, cycle->log, 0,
                      "sweeper process %d exited on signal %d", (int) pid,
                      WTERMSIG(status));

    } else if (WEXITSTATUS(status) != 0) {
        sft_log_error(SFT_LOG_ERR, cycle->log, 0,
                      "sweeper process %d exited with code %d", (int) pid,
                      WEXITSTATUS(status));
    }

    return sft_sweeper_again ? SFT_AGAIN : SFT_OK;
}


/* the master exits: a sweep cut short is done again at the next start */

void
sft_sweeper_stop(void)
{
    if (sft_sweeper) {
        (void) kill(sft_sweeper, SIGKILL);
        (void) waitpid(sft_sweeper, NULL, 0);
        sft_sweeper = 0;
    }
}


static void
sft_sweeper_process(sft_cycle_t *cycle)
{
    sft_int_t         i;
    sft_uint_t        m;
    sft_core_conf_t  *ccf;

    sft_pid = getpid();

    /* neither the workers' channels nor the listeners are its to use */

    for (i = 0; i < sft_last_process; i++) {
        if (sft_processes[i].channel[0] != -1) {
            close(sft_processes[i].channel[0]);
        }
    }

    sft_close_listening_sockets(cycle);

    sft_setproctitle("sweeper process", 0);

    if (sft_confine_process(cycle) != SFT_OK) {
        _exit(2);
    }

    /* kill(pid, 0) asks whether the owner of a file runs */

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    if (ccf->seccomp != SFT_SECCOMP_OFF
        && sft_seccomp_install(cycle, ccf->seccomp, SFT_SECCOMP_PROBE_PIDS)
           != SFT_OK)
    {
        _exit(2);
    }

    for (m = 0; cycle->modules[m]; m++) {
        if (cycle->modules[m]->processes_changed) {
            cycle->modules[m]->processes_changed(cycle);
        }
    }

    /* no exit handlers: they are the master's */

    _exit(0);
}
