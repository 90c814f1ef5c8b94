/*
 * sft_usage_lease.h -- quotas shared with other nodes through a store
 * they all reach (sft_pgsql_quota.c): each worker spends a lease, a slice
 * of a user's room the store reserved for it, without asking for each
 * chunk; it reports what it spent and what deletes freed when it asks for
 * more, renews it, or gives it back when idle, when another worker is
 * short of the room it holds, or when it ends.
 */

#ifndef _SFT_USAGE_LEASE_H_INCLUDED_
#define _SFT_USAGE_LEASE_H_INCLUDED_


#include <sft_usage.h>


#define SFT_USAGE_LEASE_IDLE_MSEC    3000    /* no charge: given back */
#define SFT_USAGE_LEASE_RENEW_MSEC   3000    /* held: renewed so often */
#define SFT_USAGE_LEASE_ASK_MSEC     2000    /* others asked for room: the
                                                short worker asks again
                                                after their answer, or
                                                after so long */


typedef struct sft_usage_lease_s  sft_usage_lease_t;
typedef struct sft_usage_wait_s   sft_usage_wait_t;

/* a change that waits for room: handler runs after the store answered */
struct sft_usage_wait_s {
    void                 (*handler)(sft_usage_wait_t *w);
    void                  *data;
    sft_usage_wait_t      *next;
};


/* what a report sends (seq, out_*, want_*, max_*) and gets */
struct sft_usage_lease_s {
    sft_usage_t           *usage;
    sft_str_t              name;          /* the record's */
    off_t                  max_bytes;     /* the quota last seen, 0: none */
    off_t                  max_files;
    off_t                  lease_bytes;   /* left to spend here */
    off_t                  lease_files;
    off_t                  spent_bytes;   /* not reported yet */
    off_t                  spent_files;
    off_t                  freed_bytes;
    off_t                  freed_files;
    off_t                  out_spent_bytes;   /* the report under seq */
    off_t                  out_spent_files;
    off_t                  out_freed_bytes;
    off_t                  out_freed_files;
    uint64_t               seq;
    off_t                  want_bytes;
    off_t                  want_files;
    off_t                  need_bytes;    /* a write waits for so much */
    off_t                  count_bytes;   /* a count to offer */
    off_t                  count_files;
    off_t                  out_count_bytes;   /* the one under seq */
    off_t                  out_count_files;
    sft_msec_t             charged;       /* the last charge */
    sft_msec_t             renewed;
    sft_msec_t             asked_at;      /* the others were asked */
    sft_usage_wait_t      *waiting;
    void                  *ctx;           /* the store's */
    sft_usage_lease_t     *next;          /* the worker's leases */
    sft_usage_lease_t     *hnext;
    unsigned               syncing:1;     /* a report is on the wire */
    unsigned               again:1;       /* another wanted after it */
    unsigned               topup:1;       /* a slice more wanted */
    unsigned               out:1;         /* out_* not acknowledged */
    unsigned               count:1;       /* count_* to offer */
    unsigned               recount:1;     /* an admin's: replaces */
    unsigned               out_count:1;
    unsigned               out_recount:1;
    unsigned               down:1;        /* the store is unreachable */
    unsigned               told:1;        /* a refusal for it logged */
    unsigned               need_file:1;   /* a new name waits */
    unsigned               give:1;        /* given back whole: the next
                                             report ends the lease */
    unsigned               out_give:1;    /* the one under seq does */
    unsigned               leaving:1;     /* the worker ends: given back */
    unsigned               asked:1;       /* short: the others were asked */
    unsigned               asking:1;      /* the store tells them */
    unsigned               retry:1;       /* asked again after that */
};


/*
 * The store: sync(l) sends a report (l->out_give: the last of the lease,
 * whose room is given back whole), SFT_AGAIN: sft_usage_lease_synced()
 * follows; SFT_ERROR: the store cannot be reached now.  ask(l) tells the
 * other workers that l is short of room, SFT_AGAIN:
 * sft_usage_lease_answered() follows.  NULL: quotas are this node's
 * alone.
 */
typedef sft_int_t (*sft_usage_lease_sync_pt)(sft_usage_lease_t *l);

void sft_usage_lease_provide(sft_usage_lease_sync_pt sync,
    sft_usage_lease_sync_pt ask, sft_log_t *log);

/* SFT_DECLINED: not shared; SFT_AGAIN: short, more is being asked for */
sft_int_t sft_usage_lease_charge(sft_usage_t *r, off_t max_bytes,
    off_t max_files, off_t bytes, off_t files);
void sft_usage_lease_credit(sft_usage_t *r, off_t bytes, off_t files);

/*
 * A change of a user with a quota is about to run: SFT_OK, go on (with
 * room, it is there, or the store cannot tell); SFT_AGAIN: the store is
 * asked, sft_usage_lease_wait() has w->handler run once it answered.
 * need: the bytes a write waits for, 0: a new file's room, -1: none.
 */
sft_int_t sft_usage_lease_need(sft_usage_t *r, off_t max_bytes,
    off_t max_files, off_t need);
void sft_usage_lease_wait(sft_usage_t *r, sft_usage_wait_t *w);

/* a count of the home, offered to the store: the first wins there */
void sft_usage_lease_counted(sft_usage_t *r, off_t max_bytes,
    off_t max_files, off_t bytes, off_t files, sft_uint_t recount);

/* the store's answer: ok, or the report is sent again later */
void sft_usage_lease_synced(sft_usage_lease_t *l, sft_uint_t ok,
    off_t bytes, off_t files, off_t lease_bytes, off_t lease_files,
    sft_uint_t counted);

/* every second: idle leases given back, held ones renewed, reports sent */
void sft_usage_lease_tick(void);

/*
 * A short worker asked for the room of r: a lease nothing here waits for
 * is given back.  The store's answer to an ask: held, other workers hold
 * room and were asked.  Room of r was given back by some worker.
 */
void sft_usage_lease_asked(sft_usage_t *r);
void sft_usage_lease_answered(sft_usage_lease_t *l, sft_uint_t held);
void sft_usage_lease_room(sft_usage_t *r);

/* the worker ends: every lease given back; SFT_AGAIN: done(data) follows */
sft_int_t sft_usage_lease_leave(void (*done)(void *data), void *data);


#endif /* _SFT_USAGE_LEASE_H_INCLUDED_ */
