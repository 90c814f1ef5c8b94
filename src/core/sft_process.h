/*
 * sft_process.h -- the process table, the master-to-worker channel, signals
 * and the master and worker loops.
 */

#ifndef _SFT_PROCESS_H_INCLUDED_
#define _SFT_PROCESS_H_INCLUDED_


#define SFT_MAX_PROCESSES   64

#define SFT_CMD_QUIT        1
#define SFT_CMD_TERMINATE   2
#define SFT_CMD_REOPEN      3

/*
 * The signal a worker sends another to end one of its sessions
 * (src/account/sft_session.c): the only one the seccomp filter lets a
 * worker send beyond itself and its master.
 */
#define SFT_SIGNAL_SESSION  (SIGRTMIN + 2)

#define SFT_PROCESS_NORESPAWN   -1
#define SFT_PROCESS_JUST_SPAWN  -2
#define SFT_PROCESS_RESPAWN     -3


typedef void (*sft_spawn_proc_pt)(sft_cycle_t *cycle, void *data);

typedef struct {
    pid_t               pid;
    int                 status;
    sft_fd_t            channel[2];     /* [0] master side, [1] worker side */

    sft_spawn_proc_pt   proc;
    void               *data;
    char               *name;

    sft_msec_t          start;          /* monotonic, when it was forked */
    sft_msec_t          backoff;        /* the last respawn delay, or 0 */
    sft_msec_t          respawn_at;     /* a delayed respawn is due, or 0 */

    unsigned            respawn:1;
    unsigned            just_spawn:1;
    unsigned            exiting:1;
    unsigned            exited:1;
} sft_process_t;


pid_t sft_spawn_process(sft_cycle_t *cycle, sft_spawn_proc_pt proc,
    void *data, char *name, sft_int_t respawn);
sft_int_t sft_init_signals(sft_log_t *log);
sft_int_t sft_channel_write(sft_fd_t fd, int cmd, sft_log_t *log);
sft_int_t sft_channel_read(sft_fd_t fd, int *cmd, sft_log_t *log);
sft_int_t sft_daemon(sft_log_t *log);
sft_uint_t sft_process_is_live(pid_t pid);

void sft_master_process_cycle(sft_cycle_t *cycle);
void sft_single_process_cycle(sft_cycle_t *cycle);


/* getpid(), set at the start and in every forked child: not a call each */
extern pid_t          sft_pid;
extern sft_int_t      sft_process_slot;
extern sft_int_t      sft_last_process;
extern sft_process_t  sft_processes[SFT_MAX_PROCESSES];
extern sft_uint_t     sft_process_role;   /* 0 single, 1 master, 2 worker */

extern volatile sig_atomic_t  sft_reap;
extern volatile sig_atomic_t  sft_terminate;
extern volatile sig_atomic_t  sft_quit;
extern volatile sig_atomic_t  sft_reconfigure;
extern volatile sig_atomic_t  sft_reopen;
extern volatile sig_atomic_t  sft_sigalrm;
extern volatile sig_atomic_t  sft_change_binary;
extern volatile sig_atomic_t  sft_noaccept;
extern sft_uint_t             sft_exiting;

#define SFT_PROCESS_SINGLE  0
#define SFT_PROCESS_MASTER  1
#define SFT_PROCESS_WORKER  2


#endif /* _SFT_PROCESS_H_INCLUDED_ */
