/*
 * sft_stats.c -- the statistics zone: one slot per worker process, plus the
 * counters of processes that have exited so totals never go backwards.
 */

#include <sft_config.h>
#include <sft_core.h>


sft_stats_shm_t   *sft_stats;
sft_stats_slot_t  *sft_stats_self;

static sft_str_t  sft_stats_zone_name = sft_string("sft_stats");


const sft_stat_desc_t  sft_stat_descs[SFT_STAT_N] = {
    { "connections_accepted_total", "Connections accepted.", 0 },
    { "connections_handled_total", "Connections given to a protocol.", 0 },
    { "connections_dropped_total",
      "Connections closed at once for lack of free connection slots.", 0 },
    { "connections_active", "Connections open now.", 1 },
    { "bytes_received_total",
      "File bytes uploaded by ended transfers, all protocols.", 0 },
    { "bytes_sent_total",
      "File bytes downloaded by ended transfers, all protocols.", 0 },
    { "http_requests_total", "Admin HTTP requests served.", 0 },
    { "http_errors_total", "Admin HTTP requests answered with 4xx or 5xx.",
      0 },
    { "buffer_pool_waits_total",
      "Times a transfer waited for a free buffer pool chunk.", 0 },
    { "ftp_sessions", "FTP sessions open now.", 1 },
    { "sftp_sessions", "SFTP sessions open now.", 1 },
    { "logins_total", "Logins that succeeded, all protocols.", 0 },
    { "login_failures_total",
      "Logins refused: wrong user, password or key, all protocols.", 0 },
};


static sft_int_t
sft_stats_zone_init(sft_shm_zone_t *zone, void *old_data)
{
    sft_stats_shm_t  *st;

    if (old_data) {
        zone->data = old_data;
        sft_stats = old_data;
        return SFT_OK;
    }

    st = (sft_stats_shm_t *) zone->shm.addr;
    sft_memzero(st, sizeof(sft_stats_shm_t));
    st->started = time(NULL);

    zone->data = st;
    sft_stats = st;

    return SFT_OK;
}


sft_int_t
sft_stats_zone_add(sft_cycle_t *cycle)
{
    sft_shm_zone_t  *zone;

    zone = sft_shared_memory_add(cycle, &sft_stats_zone_name,
                                 sft_align(sizeof(sft_stats_shm_t), 4096),
                                 &sft_stats_zone_name);
    if (zone == NULL) {
        return SFT_ERROR;
    }

    zone->init = sft_stats_zone_init;

    return SFT_OK;
}


void
sft_stats_attach(sft_cycle_t *cycle, sft_uint_t slot)
{
    (void) cycle;

    if (sft_stats == NULL || slot >= SFT_MAX_PROCESSES) {
        return;
    }

    sft_stats_self = &sft_stats->slot[slot];
    sft_stats_self->pid = getpid();
    sft_stats_self->started = time(NULL);
}


/* in the master, when the process in "slot" has exited */

void
sft_stats_retire(sft_uint_t slot)
{
    sft_uint_t         i;
    sft_stats_slot_t  *s;

    if (sft_stats == NULL || slot >= SFT_MAX_PROCESSES) {
        return;
    }

    s = &sft_stats->slot[slot];

    for (i = 0; i < SFT_STAT_N; i++) {
        if (!sft_stat_descs[i].gauge) {
            __atomic_fetch_add(&sft_stats->retired.value[i], s->value[i],
                               __ATOMIC_RELAXED);
        }
    }

    sft_memzero(s, sizeof(sft_stats_slot_t));
}


void
sft_stats_sum(sft_stats_slot_t *total, sft_uint_t *workers)
{
    sft_uint_t         i, j, n;
    sft_stats_slot_t  *s;

    sft_memzero(total, sizeof(sft_stats_slot_t));
    n = 0;

    if (sft_stats == NULL) {
        *workers = 0;
        return;
    }

    for (i = 0; i < SFT_STAT_N; i++) {
        total->value[i] = __atomic_load_n(&sft_stats->retired.value[i],
                                          __ATOMIC_RELAXED);
    }

    for (j = 0; j < SFT_MAX_PROCESSES; j++) {
        s = &sft_stats->slot[j];

        if (__atomic_load_n(&s->pid, __ATOMIC_RELAXED) == 0) {
            continue;
        }

        n++;

        for (i = 0; i < SFT_STAT_N; i++) {
            total->value[i] += __atomic_load_n(&s->value[i],
                                               __ATOMIC_RELAXED);
        }
    }

    *workers = n;
}
