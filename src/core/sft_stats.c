/*
 * sft_stats.c -- the statistics registry and its zone: what the modules
 * registered sizes one slot per worker process, plus the counters of
 * processes that have exited so totals never go backwards.
 */

#include <sft_config.h>
#include <sft_core.h>


/* the zone of one cycle, in zone->data */

typedef struct {
    sft_cycle_t       *cycle;
    uint64_t           layout;
    uint64_t           stride;
    sft_stats_shm_t   *prev;       /* sft_stats before this zone's init */
} sft_stats_zone_t;


sft_stats_shm_t   *sft_stats;
uint64_t          *sft_stats_self;

static u_char  sft_stats_zone_tag;


/* the retired counters are slot 0, process slot i is slot i + 1 */

static sft_stats_slot_t *
sft_stats_slot(sft_stats_shm_t *st, sft_uint_t i)
{
    return (sft_stats_slot_t *) (st->slots + i * st->stride);
}


sft_int_t
sft_stat_register(sft_cycle_t *cycle, const sft_stat_def_t *defs,
    sft_uint_t n)
{
    sft_uint_t   i, k, v, total;
    sft_stat_t  *stat;

    for (i = 0; i < n; i++) {
        stat = sft_array_push(&cycle->stats);
        if (stat == NULL) {
            return SFT_ERROR;
        }

        stat->def = &defs[i];
        stat->index = cycle->stat_values;
        total = 1;

        for (k = 0; k < SFT_STAT_LABELS; k++) {
            v = 1;

            if (defs[i].label[k]) {
                for (v = 0; defs[i].values[k][v]; v++) { /* void */ }
            }

            stat->n[k] = v;
            total *= v;
        }

        total *= sft_stat_width(&defs[i]);

        /* a value read from elsewhere takes no room in the slots */

        if (defs[i].read == NULL) {
            cycle->stat_values += total;
        }

        if (defs[i].index) {
            *defs[i].index = stat->index;
        }
    }

    return SFT_OK;
}


/*
 * A configuration that failed after registering has written its indices:
 * the running cycle's go back, or workers it starts later would count in
 * the wrong places.
 */

void
sft_stat_restore(sft_cycle_t *cycle)
{
    sft_uint_t   i;
    sft_stat_t  *stats;

    stats = cycle->stats.elts;

    for (i = 0; i < cycle->stats.nelts; i++) {
        if (stats[i].def->index) {
            *stats[i].def->index = stats[i].index;
        }
    }
}


/* FNV-1a over what decides where each value sits */

static uint64_t
sft_stats_hash(uint64_t h, const char *s)
{
    for ( /* void */ ; s && *s; s++) {
        h = (h ^ (u_char) *s) * 0x100000001b3ULL;
    }

    return (h ^ 0xff) * 0x100000001b3ULL;
}


static uint64_t
sft_stats_layout(sft_cycle_t *cycle)
{
    uint64_t     h;
    sft_uint_t   i, k, v;
    sft_stat_t  *stats;

    h = 0xcbf29ce484222325ULL;
    stats = cycle->stats.elts;

    for (i = 0; i < cycle->stats.nelts; i++) {
        if (stats[i].def->read) {
            continue;
        }

        h = sft_stats_hash(h, stats[i].def->name);
        h = sft_stats_hash(h, stats[i].def->json);

        for (k = 0; stats[i].def->buckets && k < stats[i].def->buckets->n;
             k++)
        {
            h = sft_stats_hash(h, stats[i].def->buckets->le[k]);
        }

        for (k = 0; k < SFT_STAT_LABELS; k++) {
            for (v = 0; stats[i].def->label[k] && stats[i].def->values[k][v];
                 v++)
            {
                h = sft_stats_hash(h, stats[i].def->values[k][v]);
            }
        }
    }

    return h;
}


/* histograms carry their values only into the same buckets */

static sft_uint_t
sft_stats_same_buckets(const sft_stat_def_t *a, const sft_stat_def_t *b)
{
    sft_uint_t  k;

    if (a->buckets == NULL || b->buckets == NULL) {
        return a->buckets == b->buckets;
    }

    if (a->buckets->n != b->buckets->n) {
        return 0;
    }

    for (k = 0; k < a->buckets->n; k++) {
        if (a->buckets->bound[k] != b->buckets->bound[k]) {
            return 0;
        }
    }

    return 1;
}


/*
 * Values of the previous zone (in the master, at a reload that changed what
 * is registered) carried by name into the retired row of the new one:
 * counters that go on keep their totals.  The old workers go on counting
 * in the old zone, what they count from now on is not seen.
 */

static void
sft_stats_carry(sft_stats_shm_t *st, sft_cycle_t *cycle,
    sft_stats_shm_t *prev, sft_cycle_t *prev_cycle)
{
    uint64_t            v;
    sft_uint_t          i, k, j, n;
    sft_stat_t         *a, *b;
    sft_stats_slot_t   *s;
    const char         *const *x, *const *y;

    if (prev->nvalues != prev_cycle->stat_values) {
        return;
    }

    a = cycle->stats.elts;

    for (i = 0; i < cycle->stats.nelts; i++, a++) {
        if (a->def->read || a->def->type == SFT_STAT_GAUGE) {
            continue;
        }

        b = prev_cycle->stats.elts;

        for (n = 0; n < prev_cycle->stats.nelts; n++, b++) {
            if (b->def->read == NULL && a->def->name && b->def->name
                && strcmp(a->def->name, b->def->name) == 0)
            {
                break;
            }
        }

        if (n == prev_cycle->stats.nelts
            || a->n[0] != b->n[0] || a->n[1] != b->n[1]
            || !sft_stats_same_buckets(a->def, b->def))
        {
            continue;
        }

        for (k = 0; k < SFT_STAT_LABELS && a->def->label[k]; k++) {
            for (x = a->def->values[k], y = b->def->values[k];
                 *x && *y && strcmp(*x, *y) == 0; x++, y++)
            { /* void */ }

            if (*x || *y) {
                break;
            }
        }

        if (k < SFT_STAT_LABELS && a->def->label[k]) {
            continue;
        }

        for (k = 0; k < a->n[0] * a->n[1] * sft_stat_width(a->def); k++) {
            v = 0;

            for (j = 0; j <= SFT_MAX_PROCESSES; j++) {
                s = sft_stats_slot(prev, j);

                if (j == 0 || __atomic_load_n(&s->pid, __ATOMIC_RELAXED)) {
                    v += __atomic_load_n(&s->value[b->index + k],
                                         __ATOMIC_RELAXED);
                }
            }

            sft_stats_slot(st, 0)->value[a->index + k] = v;
        }
    }
}


static sft_int_t
sft_stats_zone_init(sft_shm_zone_t *zone, void *old_data)
{
    sft_stats_shm_t   *st, *prev;
    sft_stats_zone_t  *ctx;

    ctx = zone->data;
    st = (sft_stats_shm_t *) zone->shm.addr;
    prev = sft_stats;

    ctx->prev = prev;
    sft_stats = st;

    /* the same name is the same layout: totals simply go on */

    if (old_data) {
        return SFT_OK;
    }

    sft_memzero(st, zone->shm.size);
    st->layout = ctx->layout;
    st->nvalues = ctx->cycle->stat_values;
    st->stride = ctx->stride;

    if (prev == NULL) {
        st->started = time(NULL);
        return SFT_OK;
    }

    st->started = prev->started;
    st->reloads = prev->reloads;
    st->respawns = prev->respawns;

    sft_stats_carry(st, ctx->cycle, prev, (sft_cycle_t *) sft_cycle);

    return SFT_OK;
}


/* a cycle that failed gives back the zone it made */

static void
sft_stats_zone_fini(sft_shm_zone_t *zone)
{
    sft_stats_zone_t  *ctx = zone->data;

    if (sft_stats == (sft_stats_shm_t *) zone->shm.addr) {
        sft_stats = ctx->prev;
    }
}


/* the layout is in the name: a different registry makes a fresh zone */

sft_int_t
sft_stats_zone_add(sft_cycle_t *cycle)
{
    size_t             size;
    sft_str_t          name;
    sft_shm_zone_t    *zone;
    sft_stats_zone_t  *ctx;

    ctx = sft_palloc(cycle->pool, sizeof(sft_stats_zone_t));
    name.data = sft_pnalloc(cycle->pool, 32);
    if (ctx == NULL || name.data == NULL) {
        return SFT_ERROR;
    }

    ctx->cycle = cycle;
    ctx->layout = sft_stats_layout(cycle);
    ctx->stride = sft_align(sizeof(sft_stats_slot_t)
                            + cycle->stat_values * sizeof(uint64_t), 64);
    ctx->prev = NULL;

    name.len = sft_slprintf(name.data, name.data + 32, "sft_stats_%016" PRIx64,
                            ctx->layout) - name.data;

    size = sizeof(sft_stats_shm_t) + (SFT_MAX_PROCESSES + 1) * ctx->stride;

    zone = sft_shared_memory_add(cycle, &name, sft_align(size, 4096),
                                 &sft_stats_zone_tag);
    if (zone == NULL) {
        return SFT_ERROR;
    }

    zone->init = sft_stats_zone_init;
    zone->fini = sft_stats_zone_fini;
    zone->data = ctx;

    return SFT_OK;
}


void
sft_stats_attach(sft_cycle_t *cycle, sft_uint_t slot)
{
    sft_stats_slot_t  *s;

    (void) cycle;

    if (sft_stats == NULL || slot >= SFT_MAX_PROCESSES) {
        return;
    }

    s = sft_stats_slot(sft_stats, slot + 1);
    s->pid = getpid();
    s->started = time(NULL);

    sft_stats_self = s->value;
}


/* in the master, when the process in "slot" has exited */

void
sft_stats_retire(sft_uint_t slot)
{
    sft_uint_t         i, k, v, n;
    sft_stat_t        *stats;
    sft_stats_slot_t  *s, *retired;

    if (sft_stats == NULL || slot >= SFT_MAX_PROCESSES) {
        return;
    }

    s = sft_stats_slot(sft_stats, slot + 1);
    retired = sft_stats_slot(sft_stats, 0);
    stats = ((sft_cycle_t *) sft_cycle)->stats.elts;
    n = ((sft_cycle_t *) sft_cycle)->stats.nelts;

    /* gauges of a process that is gone are no longer true */

    for (i = 0; i < n; i++) {
        if (stats[i].def->read || stats[i].def->type == SFT_STAT_GAUGE) {
            continue;
        }

        k = stats[i].n[0] * stats[i].n[1] * sft_stat_width(stats[i].def);

        for (v = stats[i].index; v < stats[i].index + k; v++) {
            __atomic_fetch_add(&retired->value[v], s->value[v],
                               __ATOMIC_RELAXED);
        }
    }

    sft_memzero(s, sft_stats->stride);
}


/* worker processes with a slot, old ones still finishing included */

sft_uint_t
sft_stats_processes(void)
{
    sft_uint_t  j, n;

    n = 0;

    for (j = 1; sft_stats && j <= SFT_MAX_PROCESSES; j++) {
        n += __atomic_load_n(&sft_stats_slot(sft_stats, j)->pid,
                             __ATOMIC_RELAXED) != 0;
    }

    return n;
}


/* the slot values summed over the retired and the living processes */

uint64_t *
sft_stats_sum(sft_cycle_t *cycle, sft_pool_t *pool)
{
    uint64_t          *total;
    sft_uint_t         i, j;
    sft_stats_slot_t  *s;

    total = sft_pcalloc(pool, (cycle->stat_values + 1) * sizeof(uint64_t));
    if (total == NULL || sft_stats == NULL
        || sft_stats->nvalues != cycle->stat_values)
    {
        return total;
    }

    for (j = 0; j <= SFT_MAX_PROCESSES; j++) {
        s = sft_stats_slot(sft_stats, j);

        if (j && __atomic_load_n(&s->pid, __ATOMIC_RELAXED) == 0) {
            continue;
        }

        for (i = 0; i < cycle->stat_values; i++) {
            total[i] += __atomic_load_n(&s->value[i], __ATOMIC_RELAXED);
        }
    }

    return total;
}


/* the values a statistic keeps per label combination */

sft_uint_t
sft_stat_width(const sft_stat_def_t *def)
{
    if (def->type == SFT_STAT_HISTOGRAM && def->buckets) {
        return def->buckets->n + 2;
    }

    return 1;
}


/*
 * One observation of the histogram whose values begin at "first", in this
 * process' slot: the bucket of the first bound it does not exceed (the
 * last, past every bound, else), and the sum.
 */

void
sft_stat_observe(sft_uint_t first, const sft_stat_buckets_t *bk,
    sft_uint_t combination, uint64_t usec)
{
    sft_uint_t  b, base;

    if (sft_stats_self == NULL) {
        return;
    }

    for (b = 0; b < bk->n && usec > bk->bound[b]; b++) { /* void */ }

    base = first + combination * (bk->n + 2);

    __atomic_fetch_add(&sft_stats_self[base + b], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&sft_stats_self[base + bk->n + 1], usec,
                       __ATOMIC_RELAXED);
}
