/*
 * sft_process_cycle.c -- the master loop (signals, reload, respawn) and the
 * worker loop (events, graceful exit after the last session).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_reload.h>
#include <sft_thread_pool.h>
#include <sft_seccomp.h>
#include <sft_setproctitle.h>
#include <sft_confine.h>
#include <sft_sweeper.h>
#include <sft_exit_hold.h>


static void sft_start_worker_processes(sft_cycle_t *cycle, sft_int_t n,
    sft_int_t type);
static void sft_signal_worker_processes(sft_cycle_t *cycle, int cmd);
static sft_uint_t sft_reap_children(sft_cycle_t *cycle);
static void sft_respawn_later(sft_cycle_t *cycle, sft_int_t slot);
static sft_uint_t sft_respawn_due(sft_cycle_t *cycle);
static void sft_respawn_cancel(void);
static void sft_master_change_binary(sft_cycle_t *cycle);
static void sft_master_process_exit(sft_cycle_t *cycle);
static void sft_worker_process_cycle(sft_cycle_t *cycle, void *data);
static void sft_worker_process_init(sft_cycle_t *cycle, sft_int_t worker);
static void sft_worker_process_exit(sft_cycle_t *cycle);
static void sft_worker_start_shutdown(sft_cycle_t *cycle);
static void sft_shutdown_timer_handler(sft_event_t *ev);
static void sft_worker_terminate(sft_cycle_t *cycle);
static void sft_terminate_timer_handler(sft_event_t *ev);


/* a fast stop: how long workers have to abort their sessions before SIGKILL */
#define SFT_TERMINATE_TIMEOUT  5000

/*
 * A worker that dies this soon after its start (a resource limit, a file it
 * cannot open) would die again at once: it is respawned after a delay that
 * doubles from the first to the last, not in a loop that fills the log.
 */
#define SFT_RESPAWN_QUICK_DEATH    1000
#define SFT_RESPAWN_FIRST_DELAY    100
#define SFT_RESPAWN_MAX_DELAY      10000


sft_uint_t  sft_exiting;

/* WINCH after an upgrade: the workers were let go, the new binary serves */
static sft_uint_t  sft_noaccepting;

static sft_event_t  sft_shutdown_event;
static sft_event_t  sft_terminate_event;   /* expired: exit with sessions */


void
sft_master_process_cycle(sft_cycle_t *cycle)
{
    sft_uint_t        live, delay_sent;
    sft_msec_t        deadline;
    sigset_t          set;
    sft_cycle_t      *new_cycle;
    sft_core_conf_t  *ccf, *nccf;
    u_char            old_pid[PATH_MAX];

    sft_process_role = SFT_PROCESS_MASTER;

    sft_setproctitle("master process", 1);

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGALRM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigaddset(&set, SIGWINCH);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGQUIT);

    if (sigprocmask(SIG_BLOCK, &set, NULL) == -1) {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "sigprocmask() failed");
    }

    sigemptyset(&set);

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    sft_start_worker_processes(cycle, ccf->worker_processes,
                               SFT_PROCESS_RESPAWN);

    /* what workers of an earlier run left, once the new ones serve */
    sft_sweeper_start(cycle);

    live = 1;
    delay_sent = 0;
    deadline = 0;

    for ( ;; ) {

        sigsuspend(&set);

        if (sft_reap) {
            sft_reap = 0;
            live = sft_reap_children(cycle);
        }

        /* the new binary is gone: the workers let go come back */

        if (sft_noaccepting && sft_new_binary == 0
            && !sft_terminate && !sft_quit)
        {
            sft_noaccepting = 0;
            sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                          "starting workers again");
            sft_start_worker_processes(cycle, ccf->worker_processes,
                                       SFT_PROCESS_RESPAWN);
            live = 1;
        }

        if (!live && (sft_terminate || sft_quit)) {
            sft_master_process_exit(cycle);
        }

        if (!sft_terminate && !sft_quit && sft_respawn_due(cycle)) {
            live = 1;
        }

        /*
         * The deadline starts when the stop arrives (the signal is only
         * delivered inside sigsuspend()); the alarm wakes the master each
         * second until the workers are gone or the deadline passes.
         */

        if (sft_terminate) {
            if (deadline == 0) {
                deadline = sft_monotonic_msec() + SFT_TERMINATE_TIMEOUT;
                sft_signal_worker_processes(cycle, SFT_CMD_TERMINATE);
                alarm(1);
                continue;
            }

            if (sft_sigalrm) {
                sft_sigalrm = 0;
                alarm(1);
            }

            if (sft_monotonic_msec() > deadline && !delay_sent) {
                sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                              "workers did not stop in time, killing them");
                sft_signal_worker_processes(cycle, -SIGKILL);
                delay_sent = 1;
            }

            continue;
        }

        if (sft_quit) {
            sft_signal_worker_processes(cycle, SFT_CMD_QUIT);
            sft_close_listening_sockets(cycle);
            continue;
        }

        if (sft_change_binary || sft_noaccept) {
            sft_master_change_binary(cycle);
        }

        if (sft_reconfigure) {
            sft_reconfigure = 0;
            sft_noaccepting = 0;

            sft_log_error(SFT_LOG_NOTICE, cycle->log, 0, "reconfiguring");

            /* the old cycle, its configuration included, is gone after */
            (void) sft_slprintf(old_pid, old_pid + sizeof(old_pid), "%.*s",
                                SFT_STR_FMT(&ccf->pid));

            sft_conf_last_error[0] = '\0';

            new_cycle = sft_init_cycle(cycle);

            if (new_cycle == NULL) {
                sft_log_error(SFT_LOG_ERR, cycle->log, 0,
                              "reload failed, the running configuration "
                              "is kept");
                sft_reload_done(sft_conf_last_error);
                continue;
            }

            nccf = (sft_core_conf_t *) sft_get_conf(new_cycle->conf_ctx,
                                                    sft_core_module);

            if (nccf->pid.len != strlen((char *) old_pid)
                || sft_strncmp(old_pid, nccf->pid.data, nccf->pid.len) != 0)
            {
                (void) sft_create_pidfile(&nccf->pid, new_cycle->log);
            }

            cycle = new_cycle;
            ccf = nccf;
            sft_cycle = cycle;

            if (sft_stats) {
                sft_stats->reloads++;
            }

            sft_respawn_cancel();

            sft_start_worker_processes(cycle, ccf->worker_processes,
                                       SFT_PROCESS_JUST_SPAWN);

            sft_signal_worker_processes(cycle, SFT_CMD_QUIT);

            /* the new workers serve, the old ones stop accepting */
            sft_reload_done(NULL);

            live = 1;
        }

        if (sft_reopen) {
            sft_reopen = 0;
            sft_log_error(SFT_LOG_NOTICE, cycle->log, 0, "reopening logs");
            sft_reopen_files(cycle);
            sft_signal_worker_processes(cycle, SFT_CMD_REOPEN);
        }
    }
}


/*
 * USR2 starts the new binary beside this master; WINCH, while it runs,
 * lets this master's workers finish their sessions and accept nothing
 * more, so that only the new binary's workers take new ones.
 */

static void
sft_master_change_binary(sft_cycle_t *cycle)
{
    if (sft_change_binary) {
        sft_change_binary = 0;

        if (sft_new_binary) {
            sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                          "upgrade ignored: new binary %d is running",
                          (int) sft_new_binary);

        } else {
            sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                          "changing binary");
            sft_new_binary = sft_exec_new_binary(cycle);
        }
    }

    if (sft_noaccept) {
        sft_noaccept = 0;

        if (sft_new_binary == 0) {
            sft_log_error(SFT_LOG_INFO, cycle->log, 0,
                          "WINCH ignored: no new binary is running");
            return;
        }

        sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                      "stopping the workers, new binary %d serves",
                      (int) sft_new_binary);
        sft_noaccepting = 1;
        sft_respawn_cancel();
        sft_signal_worker_processes(cycle, SFT_CMD_QUIT);
    }
}


static void
sft_start_worker_processes(sft_cycle_t *cycle, sft_int_t n, sft_int_t type)
{
    sft_int_t  i;

    for (i = 0; i < n; i++) {
        (void) sft_spawn_process(cycle, sft_worker_process_cycle,
                                 (void *) (intptr_t) i, "worker process",
                                 type);
    }
}


/*
 * cmd is a channel command, or a negative signal number for processes that
 * no longer read their channel.  Workers spawned by this very reload are
 * skipped for QUIT.
 */

static void
sft_signal_worker_processes(sft_cycle_t *cycle, int cmd)
{
    sft_int_t  i;

    for (i = 0; i < sft_last_process; i++) {

        if (sft_processes[i].pid == -1 || sft_processes[i].exited) {
            continue;
        }

        if (sft_processes[i].just_spawn) {
            sft_processes[i].just_spawn = 0;
            continue;
        }

        if (cmd < 0) {
            kill(sft_processes[i].pid, -cmd);
            continue;
        }

        if (sft_processes[i].exiting && cmd == SFT_CMD_QUIT) {
            continue;
        }

        if (sft_channel_write(sft_processes[i].channel[0], cmd, cycle->log)
            != SFT_OK)
        {
            kill(sft_processes[i].pid, cmd == SFT_CMD_REOPEN ? SIGUSR1
                                       : cmd == SFT_CMD_QUIT ? SIGQUIT
                                       : SIGTERM);
        }

        if (cmd == SFT_CMD_QUIT || cmd == SFT_CMD_TERMINATE) {
            sft_processes[i].exiting = 1;
        }
    }
}


static sft_uint_t
sft_reap_children(sft_cycle_t *cycle)
{
    int         status;
    pid_t       pid;
    sft_int_t   i, rc;
    sft_uint_t  m, live, sweep;

    sweep = 0;

    for ( ;; ) {
        pid = waitpid(-1, &status, WNOHANG);

        if (pid <= 0) {
            break;
        }

        if (pid == sft_new_binary) {
            sft_upgrade_exited(cycle, status);
            continue;
        }

        rc = sft_sweeper_exited(cycle, pid, status);

        if (rc != SFT_DECLINED) {
            sweep |= (rc == SFT_AGAIN);
            continue;
        }

        /* one that did not exit by itself could not clean up after it */

        if (WIFSIGNALED(status) || WEXITSTATUS(status) != 0) {
            sweep = 1;
        }

        for (i = 0; i < sft_last_process; i++) {
            if (sft_processes[i].pid != pid) {
                continue;
            }

            sft_processes[i].status = status;
            sft_processes[i].exited = 1;

            if (WIFSIGNALED(status)) {
                sft_log_error(sft_processes[i].exiting ? SFT_LOG_NOTICE
                                                       : SFT_LOG_ERR,
                              cycle->log, 0,
                              "%s %d exited on signal %d%s",
                              sft_processes[i].name, (int) pid,
                              WTERMSIG(status),
                              WCOREDUMP(status) ? " (core dumped)" : "");

            } else {
                sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                              "%s %d exited with code %d",
                              sft_processes[i].name, (int) pid,
                              WEXITSTATUS(status));
            }

            break;
        }
    }

    live = 0;

    for (i = 0; i < sft_last_process; i++) {

        if (sft_processes[i].pid == -1 || sft_processes[i].respawn_at) {
            continue;
        }

        if (!sft_processes[i].exited) {
            live = 1;
            continue;
        }

        close(sft_processes[i].channel[0]);
        sft_processes[i].channel[0] = -1;

        /* what the process held in shared memory is not lost with it */
        sft_stats_retire(i);
        sft_buffer_reclaim(i, cycle->log);

        for (m = 0; cycle->modules[m]; m++) {
            if (cycle->modules[m]->process_exited) {
                cycle->modules[m]->process_exited(cycle, i,
                                                  sft_processes[i].pid);
            }
        }

        if (sft_processes[i].respawn && !sft_processes[i].exiting
            && !sft_terminate && !sft_quit)
        {
            sft_respawn_later(cycle, i);

            if (sft_processes[i].respawn_at == 0) {
                live = 1;
            }

            continue;
        }

        sft_processes[i].pid = -1;

        if (i == sft_last_process - 1) {
            sft_last_process--;
        }
    }

    /*
     * a worker that died left its uploads' temporary files; its slot is
     * marked exited (refilled, emptied or waiting for a delayed respawn),
     * so none of them looks like a live worker's
     */

    if (sweep) {
        sft_sweeper_start(cycle);
    }

    return live;
}


/*
 * A worker that ran for a while is respawned at once; one that died soon
 * after its start is left exited in its slot with the time its respawn is
 * due, the delay doubling with each quick death.
 */

static void
sft_respawn_later(sft_cycle_t *cycle, sft_int_t slot)
{
    sft_msec_t      now, ran;
    sft_process_t  *p;

    p = &sft_processes[slot];
    now = sft_monotonic_msec();
    ran = now - p->start;

    if (ran >= SFT_RESPAWN_QUICK_DEATH) {
        p->backoff = 0;

        sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                      "respawning %s in slot %ld", p->name, (long) slot);

        p->respawn_at = now;
        (void) sft_respawn_due(cycle);
        return;
    }

    p->backoff = (p->backoff == 0) ? SFT_RESPAWN_FIRST_DELAY
                 : sft_min(p->backoff * 2, SFT_RESPAWN_MAX_DELAY);
    p->respawn_at = now + p->backoff;

    sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                  "%s %d exited %ld ms after its start, respawning it "
                  "in slot %ld in %ld ms", p->name, (int) p->pid, (long) ran,
                  (long) slot, (long) p->backoff);
}


/*
 * Respawns the workers whose delay has passed and sets the interval timer
 * (SIGALRM) for the next one due; whether it started one.
 */

static sft_uint_t
sft_respawn_due(sft_cycle_t *cycle)
{
    sft_int_t         i;
    sft_uint_t        started;
    sft_msec_t        now, next;
    sft_process_t    *p;
    struct itimerval  itv;

    sft_sigalrm = 0;
    now = sft_monotonic_msec();
    next = 0;
    started = 0;

    for (i = 0; i < sft_last_process; i++) {
        p = &sft_processes[i];

        if (p->respawn_at == 0) {
            continue;
        }

        if (p->respawn_at > now) {
            if (next == 0 || p->respawn_at < next) {
                next = p->respawn_at;
            }

            continue;
        }

        if (sft_spawn_process(cycle, p->proc, p->data, p->name, i) == -1) {
            sft_log_error(SFT_LOG_ALERT, cycle->log, 0,
                          "could not respawn %s", p->name);
            p->respawn_at = 0;
            p->pid = -1;
            continue;
        }

        started = 1;

        if (sft_stats) {
            sft_stats->respawns++;
        }
    }

    if (next == 0) {
        return started;
    }

    sft_memzero(&itv, sizeof(struct itimerval));
    itv.it_value.tv_sec = (next - now) / 1000;
    itv.it_value.tv_usec = ((next - now) % 1000) * 1000;

    if (setitimer(ITIMER_REAL, &itv, NULL) == -1) {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "setitimer() failed");
    }

    return started;
}


/* a reload starts workers of its own: the old ones' delayed respawns lapse */

static void
sft_respawn_cancel(void)
{
    sft_int_t  i;

    for (i = 0; i < sft_last_process; i++) {
        if (sft_processes[i].respawn_at) {
            sft_processes[i].respawn_at = 0;
            sft_processes[i].pid = -1;
        }
    }

    while (sft_last_process > 0
           && sft_processes[sft_last_process - 1].pid == -1)
    {
        sft_last_process--;
    }
}


static void
sft_master_process_exit(sft_cycle_t *cycle)
{
    sft_uint_t  i;

    sft_upgrade_delete_pidfile(cycle);
    sft_sweeper_stop();

    sft_log_error(SFT_LOG_NOTICE, cycle->log, 0, "exit");

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->exit_master) {
            cycle->modules[i]->exit_master(cycle);
        }
    }

    sft_close_listening_sockets(cycle);
    sft_destroy_pool(cycle->pool);

    exit(0);
}


static void
sft_worker_process_cycle(sft_cycle_t *cycle, void *data)
{
    sft_int_t  worker = (intptr_t) data;

    sft_process_role = SFT_PROCESS_WORKER;

    sft_worker_process_init(cycle, worker);

    /* after the switch: a worker with this title has dropped privileges */

    sft_setproctitle("worker process", 0);

    for ( ;; ) {

        if (sft_exiting
            && (sft_event_sessions == 0 || sft_terminate_event.timedout)
            && sft_exit_hold_over(cycle->log))
        {
            sft_log_error(SFT_LOG_NOTICE, cycle->log, 0, "exiting");
            sft_worker_process_exit(cycle);
        }

        sft_process_events_and_timers(cycle);

        if (sft_terminate) {
            sft_terminate = 0;
            sft_worker_terminate(cycle);
            continue;
        }

        if (sft_quit) {
            sft_quit = 0;

            if (!sft_exiting) {
                sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                              "gracefully shutting down");
                sft_worker_start_shutdown(cycle);
            }
        }

        if (sft_reopen) {
            sft_reopen = 0;
            sft_reopen_files(cycle);
        }
    }
}


static void
sft_worker_start_shutdown(sft_cycle_t *cycle)
{
    sft_core_conf_t  *ccf;

    sft_exiting = 1;

    sft_setproctitle("worker process is shutting down", 0);

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    sft_event_stop_accepting(cycle);
    sft_close_idle_connections(cycle);

    if (ccf->shutdown_timeout) {
        sft_shutdown_event.handler = sft_shutdown_timer_handler;
        sft_shutdown_event.data = cycle;
        sft_shutdown_event.log = cycle->log;
        sft_add_timer(&sft_shutdown_event, ccf->shutdown_timeout);
    }
}


/*
 * A fast stop: no new sessions, and every session is told to close now, so
 * transfers are aborted and their temporary files removed; the worker exits
 * when the last one is gone (the master kills it after a deadline).
 */

static void
sft_worker_terminate(sft_cycle_t *cycle)
{
    if (!sft_exiting) {
        sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                      "stopping: closing %lu sessions",
                      (unsigned long) sft_event_sessions);
        sft_worker_start_shutdown(cycle);
    }

    sft_close_all_connections(cycle);

    /* the master kills workers at its deadline; a single process has none */

    if (!sft_terminate_event.timer_set && !sft_terminate_event.timedout) {
        sft_terminate_event.handler = sft_terminate_timer_handler;
        sft_terminate_event.data = cycle;
        sft_terminate_event.log = cycle->log;
        sft_add_timer(&sft_terminate_event, SFT_TERMINATE_TIMEOUT);
    }
}


static void
sft_terminate_timer_handler(sft_event_t *ev)
{
    sft_cycle_t  *cycle = ev->data;

    sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                  "%lu sessions did not close in time, exiting",
                  (unsigned long) sft_event_sessions);
}


static void
sft_shutdown_timer_handler(sft_event_t *ev)
{
    sft_cycle_t  *cycle = ev->data;

    sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                  "worker_shutdown_timeout: closing %lu sessions",
                  (unsigned long) sft_event_sessions);

    sft_close_all_connections(cycle);
}


static void
sft_worker_process_init(sft_cycle_t *cycle, sft_int_t worker)
{
    sigset_t          set;
    sft_uint_t        i;
    struct rlimit     rlmt;
    sft_core_conf_t  *ccf;

    (void) worker;

    sft_log_pid_slot = sft_process_slot;

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    if (ccf->rlimit_nofile != SFT_CONF_UNSET) {
        rlmt.rlim_cur = (rlim_t) ccf->rlimit_nofile;
        rlmt.rlim_max = (rlim_t) ccf->rlimit_nofile;

        if (setrlimit(RLIMIT_NOFILE, &rlmt) == -1) {
            sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                          "setrlimit(RLIMIT_NOFILE, %ld) failed",
                          (long) ccf->rlimit_nofile);
        }
    }

    /* before the modules start threads: Landlock confines only this one */

    if (sft_confine_process(cycle) != SFT_OK) {
        exit(2);
    }

    sigemptyset(&set);

    if (sigprocmask(SIG_SETMASK, &set, NULL) == -1) {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "sigprocmask() failed");
    }

    sft_stats_attach(cycle, sft_process_slot);

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->init_process) {
            if (cycle->modules[i]->init_process(cycle) == SFT_ERROR) {
                exit(2);
            }
        }
    }

    /* channels of the other workers are not ours to hold */

    for (i = 0; i < (sft_uint_t) sft_last_process; i++) {
        if (sft_processes[i].pid == -1 || (sft_int_t) i == sft_process_slot)
        {
            continue;
        }

        if (sft_processes[i].channel[0] != -1) {
            close(sft_processes[i].channel[0]);
            sft_processes[i].channel[0] = -1;
        }
    }

    if (sft_event_add_channel(cycle,
                              sft_processes[sft_process_slot].channel[1])
        != SFT_OK)
    {
        exit(2);
    }

    /* last, once every module has opened what it needs: no client yet */

    if (sft_seccomp_install(cycle, ccf->seccomp, 0) != SFT_OK) {
        exit(2);
    }
}


static void
sft_worker_process_exit(sft_cycle_t *cycle)
{
    sft_uint_t  i;

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->exit_process) {
            cycle->modules[i]->exit_process(cycle);
        }
    }

    exit(0);
}


/* "master_process off": one process that is its own worker */

void
sft_single_process_cycle(sft_cycle_t *cycle)
{
    sft_uint_t  i;

    sft_process_role = SFT_PROCESS_SINGLE;
    sft_process_slot = 0;
    sft_stats_attach(cycle, 0);

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->init_process) {
            if (cycle->modules[i]->init_process(cycle) == SFT_ERROR) {
                exit(2);
            }
        }
    }

    for ( ;; ) {
        sft_process_events_and_timers(cycle);

        if (sft_terminate) {
            sft_terminate = 0;
            sft_worker_terminate(cycle);
        }

        if (sft_quit) {
            sft_quit = 0;

            if (!sft_exiting) {
                sft_worker_start_shutdown(cycle);
            }
        }

        /* before the next wait, which no event may end when idle */

        if (sft_exiting
            && (sft_event_sessions == 0 || sft_terminate_event.timedout)
            && sft_exit_hold_over(cycle->log))
        {
            for (i = 0; cycle->modules[i]; i++) {
                if (cycle->modules[i]->exit_process) {
                    cycle->modules[i]->exit_process(cycle);
                }
            }

            sft_master_process_exit(cycle);
        }

        if (sft_reconfigure || sft_change_binary) {
            sft_reconfigure = 0;
            sft_change_binary = 0;
            sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                          "reload and upgrade need \"master_process on\", "
                          "ignored");
        }

        if (sft_reopen) {
            sft_reopen = 0;
            sft_reopen_files(cycle);
        }
    }
}
