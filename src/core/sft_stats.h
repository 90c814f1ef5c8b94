/*
 * sft_stats.h -- per-process statistics slots in shared memory, each written
 * by one process only and summed by whoever reads them.
 */

#ifndef _SFT_STATS_H_INCLUDED_
#define _SFT_STATS_H_INCLUDED_




/* the data path that served a transfer */

typedef enum {
    SFT_XFER_SENDFILE = 0,          /* sendfile(2), plaintext download */
    SFT_XFER_SPLICE,                /* splice(2), plaintext upload */
    SFT_XFER_POOLED,                /* buffer pool copy, plaintext */
    SFT_XFER_TLS,                   /* pooled copy, records by OpenSSL */
    SFT_XFER_TLS_SEALED,            /* pooled copy, records sealed by
                                       siftpd (sft_event_openssl_records.c) */
    SFT_XFER_KTLS,                  /* pooled copy, records by kernel TLS */
    SFT_XFER_SFTP,                  /* SFTP READ/WRITE over SSH */
    SFT_XFER_NPATHS
} sft_xfer_path_e;

#define SFT_XFER_DOWNLOAD  0
#define SFT_XFER_UPLOAD    1


typedef enum {
    SFT_STAT_CONN_ACCEPTED = 0,
    SFT_STAT_CONN_HANDLED,
    SFT_STAT_CONN_DROPPED,
    SFT_STAT_CONN_ACTIVE,           /* gauge */
    SFT_STAT_BYTES_RECEIVED,
    SFT_STAT_BYTES_SENT,
    SFT_STAT_HTTP_REQUESTS,
    SFT_STAT_HTTP_ERRORS,
    SFT_STAT_BUFPOOL_WAITS,
    SFT_STAT_FTP_SESSIONS,          /* gauge */
    SFT_STAT_SFTP_SESSIONS,         /* gauge */
    SFT_STAT_LOGINS,
    SFT_STAT_LOGIN_FAILURES,
    SFT_STAT_XFERS,                 /* [direction][path][count, bytes] */
    SFT_STAT_N = SFT_STAT_XFERS + 2 * SFT_XFER_NPATHS * 2
} sft_stat_e;


/* the counter of transfers (what 0) or their bytes (1) */
#define sft_stat_xfer(direction, path, what)                                  \
    (SFT_STAT_XFERS + ((direction) * SFT_XFER_NPATHS + (path)) * 2 + (what))


/* the transfer counters have no entry: they are labelled series */

typedef struct {
    const char           *name;     /* Prometheus name without "siftp_" */
    const char           *help;
    sft_uint_t            gauge;
} sft_stat_desc_t;


typedef struct {
    uint64_t              pid;
    uint64_t              started;  /* unix time */
    uint64_t              value[SFT_STAT_N];
} sft_stats_slot_t;


typedef struct {
    uint64_t              started;          /* unix time the master started */
    uint64_t              reloads;
    uint64_t              respawns;
    sft_stats_slot_t      retired;          /* exited processes' counters */
    sft_stats_slot_t      slot[SFT_MAX_PROCESSES];
} sft_stats_shm_t;


sft_int_t sft_stats_zone_add(sft_cycle_t *cycle);
void sft_stats_attach(sft_cycle_t *cycle, sft_uint_t slot);
void sft_stats_retire(sft_uint_t slot);
void sft_stats_sum(sft_stats_slot_t *total, sft_uint_t *workers);

#define sft_stat_add(stat, n)                                                 \
    if (sft_stats_self) {                                                     \
        __atomic_fetch_add(&sft_stats_self->value[stat], (uint64_t) (n),      \
                           __ATOMIC_RELAXED);                                 \
    }

#define sft_stat_sub(stat, n)                                                 \
    if (sft_stats_self) {                                                     \
        __atomic_fetch_sub(&sft_stats_self->value[stat], (uint64_t) (n),      \
                           __ATOMIC_RELAXED);                                 \
    }


extern sft_stats_shm_t       *sft_stats;
extern sft_stats_slot_t      *sft_stats_self;
extern const sft_stat_desc_t  sft_stat_descs[SFT_STAT_N];


#endif /* _SFT_STATS_H_INCLUDED_ */
