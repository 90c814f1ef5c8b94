/*
 * test_stats.c -- the statistics registry: registering counters, gauges
 * and labelled series, the zone sized from them, values added by two
 * processes and summed, counters kept and gauges dropped when a process
 * exits, and totals kept across a reload with the same registry.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sys/wait.h>
#include "sft_tap.h"


static sft_uint_t  st_requests;
static sft_uint_t  st_open;
static sft_uint_t  st_moved;
static sft_uint_t  st_extra;

static const char *const  st_sides[] = { "in", "out", NULL };
static const char *const  st_ways[] = { "a", "b", "c", NULL };


static uint64_t
st_read(const sft_stat_def_t *def)
{
    return def->data;
}


static const sft_stat_def_t  st_defs[] = {
    { .name = "requests_total", .json = "requests", .help = "Requests.",
      .index = &st_requests },
    { .name = "open", .json = "open", .type = SFT_STAT_GAUGE,
      .help = "Open now.", .index = &st_open },
    { .name = "moved_total", .json = "moved.$1.$2", .help = "Moved.",
      .label = { "side", "way" }, .values = { st_sides, st_ways },
      .index = &st_moved },
    { .name = "elsewhere", .help = "Read.", .read = st_read, .data = 42 },
};

static const sft_stat_def_t  st_more[] = {
    { .name = "extra_total", .help = "One more.", .index = &st_extra },
};


static sft_cycle_t *
st_cycle(sft_log_t *log, sft_uint_t more)
{
    sft_pool_t   *pool;
    sft_cycle_t  *cycle;

    pool = sft_create_pool(4096, log);
    cycle = pool ? sft_pcalloc(pool, sizeof(sft_cycle_t)) : NULL;

    if (cycle == NULL
        || sft_array_init(&cycle->shared_memory, pool, 1,
                          sizeof(sft_shm_zone_t *)) != SFT_OK
        || sft_array_init(&cycle->stats, pool, 1, sizeof(sft_stat_t))
           != SFT_OK)
    {
        return NULL;
    }

    cycle->pool = pool;
    cycle->log = log;

    if (sft_stat_register(cycle, st_defs, sft_nelems(st_defs)) != SFT_OK
        || (more && sft_stat_register(cycle, st_more, 1) != SFT_OK)
        || sft_stats_zone_add(cycle) != SFT_OK)
    {
        return NULL;
    }

    return cycle;
}


static sft_shm_zone_t *
st_zone(sft_cycle_t *cycle)
{
    return ((sft_shm_zone_t **) cycle->shared_memory.elts)[0];
}


/* a worker in slot 1: what it counts is summed with the parent's */

static void
st_child(sft_cycle_t *cycle)
{
    pid_t  pid;
    int    status;

    pid = fork();

    if (pid == 0) {
        sft_stats_attach(cycle, 1);
        sft_stat_add(st_requests, 5);
        sft_stat_add(st_open, 2);
        sft_stat_add(st_moved + 1 * 3 + 2, 7);       /* out, c */
        _exit(0);
    }

    ok(pid > 0 && waitpid(pid, &status, 0) == pid && status == 0,
       "a second process counts in its own slot");
}


int
main(void)
{
    uint64_t         *total;
    sft_uint_t        before;
    sft_log_t        *log;
    sft_stat_t       *stats;
    sft_cycle_t      *cycle, *reload, *changed;
    sft_shm_zone_t   *zone, *z;

    printf("1..26\n");

    log = sft_log_init();
    log->log_level = SFT_LOG_CRIT;

    cycle = st_cycle(log, 0);
    ok(cycle != NULL, "statistics registered");
    if (cycle == NULL) {
        return 1;
    }

    stats = cycle->stats.elts;

    ok(cycle->stats.nelts == 4, "four statistics in the registry");
    ok(st_requests == 0 && st_open == 1 && st_moved == 2,
       "indices follow the order of registration");
    ok(stats[2].n[0] == 2 && stats[2].n[1] == 3,
       "a labelled statistic counts the values of each label");
    ok(cycle->stat_values == 1 + 1 + 2 * 3,
       "the slots hold every value but the one read from elsewhere");

    zone = st_zone(cycle);
    ok(zone->shm.size >= sizeof(sft_stats_shm_t)
                         + (SFT_MAX_PROCESSES + 1) * 8 * sizeof(uint64_t),
       "the zone is sized from the registry");

    if (sft_shm_alloc(&zone->shm) != SFT_OK
        || zone->init(zone, NULL) != SFT_OK)
    {
        return 1;
    }

    sft_cycle = cycle;

    sft_stats_attach(cycle, 0);
    sft_stat_add(st_requests, 3);
    sft_stat_add(st_open, 1);
    sft_stat_add(st_moved + 0 * 3 + 1, 4);           /* in, b */

    st_child(cycle);

    total = sft_stats_sum(cycle, cycle->pool);
    ok(total != NULL && total[st_requests] == 8, "counters are summed");
    ok(total != NULL && total[st_open] == 3, "gauges are summed");
    ok(total != NULL && total[st_moved + 1] == 4 && total[st_moved + 5] == 7
       && total[st_moved] == 0, "labelled values stay apart");
    ok(sft_stats_processes() == 2, "two processes have a slot");
    ok(stats[3].def->read(stats[3].def) == 42,
       "a value kept elsewhere is read");

    sft_stats_retire(1);

    total = sft_stats_sum(cycle, cycle->pool);
    ok(sft_stats_processes() == 1, "the exited process has no slot");
    ok(total != NULL && total[st_requests] == 8,
       "its counters stay in the totals");
    ok(total != NULL && total[st_open] == 1, "its gauges do not");
    ok(total != NULL && total[st_moved + 5] == 7,
       "its labelled counters stay too");

    /* a reload that registers the same: the zone and its totals go on */

    reload = st_cycle(log, 0);
    ok(reload != NULL, "registered again for a reload");
    if (reload == NULL) {
        return 1;
    }

    z = st_zone(reload);
    ok(z->shm.size == zone->shm.size, "the same registry, the same size");
    z->shm.addr = zone->shm.addr;
    ok(z->init(z, zone->data) == SFT_OK, "the old zone is taken over");

    sft_cycle = reload;
    total = sft_stats_sum(reload, reload->pool);
    ok(total != NULL && total[st_requests] == 8,
       "totals are kept across the reload");

    /* a module more: a fresh zone, the totals carried over by name */

    changed = st_cycle(log, 1);
    ok(changed != NULL && st_extra == 8, "a new counter comes after the rest");
    if (changed == NULL) {
        return 1;
    }

    z = st_zone(changed);
    ok(z->shm.name.len != zone->shm.name.len
       || sft_strncmp(z->shm.name.data, zone->shm.name.data,
                      z->shm.name.len) != 0,
       "a different registry names a different zone");

    if (sft_shm_alloc(&z->shm) != SFT_OK || z->init(z, NULL) != SFT_OK) {
        return 1;
    }

    total = sft_stats_sum(changed, changed->pool);
    ok(total != NULL && total[st_requests] == 8 && total[st_extra] == 0
       && total[st_moved + 5] == 7 && total[st_open] == 0,
       "counters are carried into the new zone, gauges are not");

    z->fini(z);
    ok((u_char *) sft_stats == zone->shm.addr,
       "a zone given back leaves the previous one in use");

    /* a configuration that registers first and then fails */

    before = changed->stat_values;
    ok(sft_stat_register(changed, st_more, 1) == SFT_OK
       && sft_stat_register(changed, st_defs, 1) == SFT_OK
       && st_requests == before + 1,
       "registering again moves the indices");
    sft_stat_restore(reload);
    ok(st_requests == 0 && st_open == 1 && st_moved == 2,
       "the running cycle's indices are put back");

    sft_destroy_pool(changed->pool);
    sft_destroy_pool(reload->pool);
    sft_destroy_pool(cycle->pool);

    return failed ? 1 : 0;
}
