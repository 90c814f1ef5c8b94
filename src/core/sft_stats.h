/*
 * sft_stats.h -- the statistics registry: modules declare their counters,
 * gauges and histograms while the configuration is read; the shared zone
 * then holds one slot of values per process, each written by its process
 * only and summed by whoever reads them.
 */

#ifndef _SFT_STATS_H_INCLUDED_
#define _SFT_STATS_H_INCLUDED_




#define SFT_STAT_COUNTER   0
#define SFT_STAT_GAUGE     1
#define SFT_STAT_HISTOGRAM 2

#define SFT_STAT_LABELS    2


typedef struct sft_stat_def_s  sft_stat_def_t;


/*
 * The buckets of a histogram: n upper bounds in microseconds, ascending,
 * and the same bounds in seconds as Prometheus' "le" label shows them.
 * A histogram keeps n + 2 values per label combination: the observations
 * of each bucket (not cumulative; the last one above every bound), then
 * the sum of the observations in microseconds.
 */

typedef struct {
    sft_uint_t            n;
    const uint64_t       *bound;
    const char *const    *le;
} sft_stat_buckets_t;

/* a value kept elsewhere (another zone), read when statistics are shown */
typedef uint64_t (*sft_stat_read_pt)(const sft_stat_def_t *def);


/*
 * What a module declares, in static storage.  "name" is the Prometheus name
 * without "siftp_" (NULL: not in /metrics); "json" is where the value sits
 * in /api/v1/stats, keys separated by '.', "$1" and "$2" standing for the
 * values of the first and second label (NULL: not in the JSON).  A labelled
 * statistic has one value per combination of label values, the last label
 * varying fastest: its value for label values i and j is at
 * *index + i * (number of values of the second label) + j, times
 * sft_stat_width() for a histogram.
 */

struct sft_stat_def_s {
    const char           *name;
    const char           *help;
    const char           *json;
    sft_uint_t            type;              /* SFT_STAT_COUNTER, _GAUGE,
                                                _HISTOGRAM */
    const sft_stat_buckets_t  *buckets;      /* a histogram's */
    sft_uint_t           *index;             /* set to the first value */
    const char           *label[SFT_STAT_LABELS];
    const char *const    *values[SFT_STAT_LABELS];   /* NULL-terminated */
    sft_stat_read_pt      read;              /* NULL: kept in the slots */
    uintptr_t             data;              /* for read() */
};


typedef struct {
    const sft_stat_def_t  *def;
    sft_uint_t             index;            /* first value in a slot */
    sft_uint_t             n[SFT_STAT_LABELS];   /* values of each label */
} sft_stat_t;


typedef struct {
    uint64_t              pid;
    uint64_t              started;  /* unix time */
    uint64_t              value[];
} sft_stats_slot_t;


typedef struct {
    uint64_t              started;          /* unix time the master started */
    uint64_t              reloads;
    uint64_t              respawns;
    uint64_t              layout;           /* hash of the registry */
    uint64_t              nvalues;
    uint64_t              stride;           /* bytes from slot to slot */
    u_char                slots[];          /* retired, then one a process */
} sft_stats_shm_t;


sft_int_t sft_stat_register(sft_cycle_t *cycle, const sft_stat_def_t *defs,
    sft_uint_t n);
void sft_stat_restore(sft_cycle_t *cycle);
sft_int_t sft_stats_zone_add(sft_cycle_t *cycle);
void sft_stats_attach(sft_cycle_t *cycle, sft_uint_t slot);
void sft_stats_retire(sft_uint_t slot);
uint64_t *sft_stats_sum(sft_cycle_t *cycle, sft_pool_t *pool);
sft_uint_t sft_stats_processes(void);
sft_uint_t sft_stat_width(const sft_stat_def_t *def);
void sft_stat_observe(sft_uint_t first, const sft_stat_buckets_t *bk,
    sft_uint_t combination, uint64_t usec);


#define sft_stat_add(stat, n)                                                 \
    if (sft_stats_self) {                                                     \
        __atomic_fetch_add(&sft_stats_self[stat], (uint64_t) (n),             \
                           __ATOMIC_RELAXED);                                 \
    }

#define sft_stat_sub(stat, n)                                                 \
    if (sft_stats_self) {                                                     \
        __atomic_fetch_sub(&sft_stats_self[stat], (uint64_t) (n),             \
                           __ATOMIC_RELAXED);                                 \
    }


extern sft_stats_shm_t       *sft_stats;
extern uint64_t              *sft_stats_self;


#endif /* _SFT_STATS_H_INCLUDED_ */
