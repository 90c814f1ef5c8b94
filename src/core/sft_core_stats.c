/*
 * sft_core_stats.c -- the statistics core registers for itself: how long
 * the master has run, its workers, reloads and respawns, and connections.
 */

#include <sft_config.h>
#include <sft_core.h>


static uint64_t sft_core_stats_read(const sft_stat_def_t *def);


enum {
    SFT_CORE_STAT_UPTIME = 0,
    SFT_CORE_STAT_WORKERS,
    SFT_CORE_STAT_PROCESSES,
    SFT_CORE_STAT_RELOADS,
    SFT_CORE_STAT_RESPAWNS
};


sft_uint_t  sft_stat_conn_accepted;
sft_uint_t  sft_stat_conn_handled;
sft_uint_t  sft_stat_conn_dropped;
sft_uint_t  sft_stat_conn_active;


static const sft_stat_def_t  sft_core_stats[] = {
    { .name = "uptime_seconds", .json = "uptime", .type = SFT_STAT_GAUGE,
      .help = "Seconds since the master process started.",
      .read = sft_core_stats_read, .data = SFT_CORE_STAT_UPTIME },
    { .name = "workers", .json = "workers", .type = SFT_STAT_GAUGE,
      .help = "Configured worker processes.",
      .read = sft_core_stats_read, .data = SFT_CORE_STAT_WORKERS },
    { .name = "processes", .json = "processes", .type = SFT_STAT_GAUGE,
      .help = "Worker processes running, old ones that are still "
              "finishing sessions included.",
      .read = sft_core_stats_read, .data = SFT_CORE_STAT_PROCESSES },
    { .name = "reloads_total", .json = "reloads",
      .help = "Configuration reloads.",
      .read = sft_core_stats_read, .data = SFT_CORE_STAT_RELOADS },
    { .name = "worker_respawns_total", .json = "worker_respawns",
      .help = "Worker processes replaced after dying.",
      .read = sft_core_stats_read, .data = SFT_CORE_STAT_RESPAWNS },

    { .name = "connections_accepted_total", .json = "connections.accepted",
      .help = "Connections accepted.", .index = &sft_stat_conn_accepted },
    { .name = "connections_handled_total", .json = "connections.handled",
      .help = "Connections given to a protocol.",
      .index = &sft_stat_conn_handled },
    { .name = "connections_dropped_total", .json = "connections.dropped",
      .help = "Connections closed at once for lack of free connection "
              "slots.",
      .index = &sft_stat_conn_dropped },
    { .name = "connections_active", .json = "connections.active",
      .type = SFT_STAT_GAUGE, .help = "Connections open now.",
      .index = &sft_stat_conn_active },
};


sft_int_t
sft_core_stats_register(sft_cycle_t *cycle)
{
    return sft_stat_register(cycle, sft_core_stats,
                             sft_nelems(sft_core_stats));
}


static uint64_t
sft_core_stats_read(const sft_stat_def_t *def)
{
    sft_core_conf_t  *ccf;

    switch (def->data) {

    case SFT_CORE_STAT_UPTIME:
        return sft_stats ? (uint64_t) time(NULL) - sft_stats->started : 0;

    case SFT_CORE_STAT_WORKERS:
        ccf = (sft_core_conf_t *) sft_get_conf(
                  ((sft_cycle_t *) sft_cycle)->conf_ctx, sft_core_module);
        return ccf->master ? (uint64_t) ccf->worker_processes : 1;

    case SFT_CORE_STAT_PROCESSES:
        return sft_stats_processes();

    case SFT_CORE_STAT_RELOADS:
        return sft_stats ? sft_stats->reloads : 0;

    default: /* SFT_CORE_STAT_RESPAWNS */
        return sft_stats ? sft_stats->respawns : 0;
    }
}
