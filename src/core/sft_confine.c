/*
 * sft_confine.c -- the privileges a worker (and the sweeper) drops before
 * it reads anything a client chose: the configured user and groups, the
 * capability bounding set, new privileges (no_new_privs), and the files
 * outside the paths the modules declared (Landlock).  The seccomp filter
 * comes last, once the process has opened what it needs.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_confine.h>
#include <sft_landlock.h>
#include <sys/prctl.h>


static void sft_confine_bounding_set(sft_cycle_t *cycle);


sft_int_t
sft_confine_process(sft_cycle_t *cycle)
{
    sft_core_conf_t  *ccf;

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    if (geteuid() == 0 && ccf->username.len) {
        if (setgid(ccf->group) == -1) {
            sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                          "setgid(%d) failed", (int) ccf->group);
            return SFT_ERROR;
        }

        if (initgroups((char *) ccf->username.data, ccf->group) == -1) {
            sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                          "initgroups(%s, %d) failed", ccf->username.data,
                          (int) ccf->group);
            return SFT_ERROR;
        }

        sft_confine_bounding_set(cycle);

        if (setuid(ccf->user) == -1) {
            sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                          "setuid(%d) failed", (int) ccf->user);
            return SFT_ERROR;
        }
    }

    /* listeners and keys are the master's: nothing may raise privileges */

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "prctl(PR_SET_NO_NEW_PRIVS) failed");
        return SFT_ERROR;
    }

    /* before any thread starts: Landlock confines only the calling one */

    return sft_landlock_apply(cycle);
}


/*
 * setuid() away from root empties the permitted and effective sets; the
 * bounding set is emptied first too, while still root.  That takes
 * CAP_SETPCAP, which a service manager may have withheld (the shipped
 * systemd unit does, and bounds the set itself): then it stays as given,
 * harmless with nothing permitted and no new privileges.
 */

static void
sft_confine_bounding_set(sft_cycle_t *cycle)
{
    int  cap;

    for (cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1) {
            sft_log_error(SFT_LOG_NOTICE, cycle->log, sft_errno,
                          "the capability bounding set is kept: "
                          "prctl(PR_CAPBSET_DROP, %d) failed", cap);
            return;
        }
    }
}
