/*
 * sft_auth_stats.c -- the statistics of logins and of password checks:
 * logins counted by the process that served them, and how long their
 * password checks took (argon2id or the verification cache); the checks
 * read from the "sft_auth" zone.
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
static sft_uint_t  sft_auth_stat_check_time;     /* [argon2id, cache] */

static const char *const  sft_auth_checks[] = {
    "argon2id", "cache", NULL
};

static const uint64_t  sft_auth_check_bounds[] = {
    100, 500, 1000, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
    1000000, 2500000, 5000000, 10000000
};

static const char *const  sft_auth_check_le[] = {
    "0.0001", "0.0005", "0.001", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25", "0.5", "1", "2.5", "5", "10"
};

static const sft_stat_buckets_t  sft_auth_check_buckets = {
    sft_nelems(sft_auth_check_bounds), sft_auth_check_bounds,
    sft_auth_check_le
};


static const sft_stat_def_t  sft_auth_stats[] = {
    { .name = "logins_total", .json = "logins.ok",
      .help = "Logins that succeeded, all protocols.",
      .index = &sft_auth_stat_logins },
    { .name = "login_failures_total", .json = "logins.failed",
      .help = "Logins refused: wrong user, password or key, all protocols.",
      .index = &sft_auth_stat_login_failures },
    { .name = "login_check_seconds", .json = "logins.check_seconds.$1",
      .help = "Time from a password's arrival to its verdict, by what "
              "decided it: argon2id, or the verification cache.",
      .type = SFT_STAT_HISTOGRAM, .buckets = &sft_auth_check_buckets,
      .label = { "check" },
      .values = { sft_auth_checks },
      .index = &sft_auth_stat_check_time },
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
    { .name = "auth_bans_active", .json = "auth.bans_active",
      .type = SFT_STAT_GAUGE,
      .help = "Addresses banned now.",
      .read = sft_auth_stats_read,
      .data = offsetof(sft_auth_stats_t, bans_active) },
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


/* a password check has its verdict: how long it took, by what */

void
sft_auth_stats_check_time(sft_uint_t cached, uint64_t usec)
{
    sft_stat_observe(sft_auth_stat_check_time, &sft_auth_check_buckets,
                     cached ? 1 : 0, usec);
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
