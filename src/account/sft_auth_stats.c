/*
 * sft_auth_stats.c -- the statistics of logins and of password checks:
 * logins counted by the process that served them, the checks read from
 * the "sft_auth" zone.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_users.h>
#include <sft_auth.h>
#include <sft_auth_stats.h>


static uint64_t sft_auth_stats_read(const sft_stat_def_t *def);


sft_uint_t  sft_auth_stat_logins;
sft_uint_t  sft_auth_stat_login_failures;


static const sft_stat_def_t  sft_auth_stats[] = {
    { .name = "logins_total", .json = "logins.ok",
      .help = "Logins that succeeded, all protocols.",
      .index = &sft_auth_stat_logins },
    { .name = "login_failures_total", .json = "logins.failed",
      .help = "Logins refused: wrong user, password or key, all protocols.",
      .index = &sft_auth_stat_login_failures },
    { .name = "auth_argon2_runs_total", .json = "auth.argon2_runs",
      .help = "Password checks that ran argon2id.",
      .read = sft_auth_stats_read,
      .data = offsetof(sft_auth_stats_t, argon2_runs) },
    { .name = "auth_cache_hits_total", .json = "auth.cache_hits",
      .help = "Logins answered by the verification cache.",
      .read = sft_auth_stats_read,
      .data = offsetof(sft_auth_stats_t, cache_hits) },
    { .name = "auth_bans_total", .json = "auth.bans",
      .help = "Addresses banned after repeated failures.",
      .read = sft_auth_stats_read,
      .data = offsetof(sft_auth_stats_t, bans) },
    { .json = "auth.checks_running", .type = SFT_STAT_GAUGE,
      .read = sft_auth_stats_read,
      .data = offsetof(sft_auth_stats_t, running) },
};


sft_int_t
sft_auth_stats_register(sft_cycle_t *cycle)
{
    return sft_stat_register(cycle, sft_auth_stats,
                             sft_nelems(sft_auth_stats));
}


static uint64_t
sft_auth_stats_read(const sft_stat_def_t *def)
{
    sft_auth_stats_t  st;

    sft_auth_get_stats(&st);

    if (def->data == offsetof(sft_auth_stats_t, running)) {
        return st.running;
    }

    return *(uint64_t *) ((u_char *) &st + def->data);
}
