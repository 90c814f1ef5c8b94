/*
 * sft_usage_lease.c -- a worker's leases on the quotas shared with other
 * nodes.  A charge spends the lease at once, or is short: then the worker
 * asks the store for more (a write may wait for the answer, the others
 * are refused) and the store grants what the quota leaves after the usage
 * and every other lease, so the nodes together never pass it.  One still
 * short asks the other workers for the room their leases hold before it
 * refuses: those that do not need theirs give it back whole (no longer
 * spent here from that moment), and it asks the store once more.  Credits
 * go to the store, not to the lease.  A report is kept until the store
 * acknowledged it, and sent again under the same number.  A worker that
 * ends gives every lease back.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_usage_lease.h>


#define SFT_USAGE_LEASE_BUCKETS      256
#define SFT_USAGE_LEASE_MIN_SLICE    (1024 * 1024)
#define SFT_USAGE_LEASE_MAX_SLICE    (64 * 1024 * 1024)
#define SFT_USAGE_LEASE_MAX_FILES    1000


static sft_usage_lease_t *sft_usage_lease_find(sft_usage_t *r,
    off_t max_bytes, off_t max_files);
static void sft_usage_lease_sync(sft_usage_lease_t *l);
static void sft_usage_lease_wake(sft_usage_lease_t *l);
static void sft_usage_lease_give(sft_usage_lease_t *l);
static void sft_usage_lease_retry(sft_usage_lease_t *l);
static void sft_usage_lease_left(sft_usage_lease_t *l);


static struct {
    sft_usage_lease_sync_pt    sync;
    sft_usage_lease_sync_pt    ask;
    sft_log_t                 *log;
    void                     (*left)(void *data);
    void                      *left_data;
    sft_uint_t                 leaving;     /* leases not given back yet */
    sft_usage_lease_t         *all;
    sft_usage_lease_t         *bucket[SFT_USAGE_LEASE_BUCKETS];
} sft_usage_lease;


void
sft_usage_lease_provide(sft_usage_lease_sync_pt sync,
    sft_usage_lease_sync_pt ask, sft_log_t *log)
{
    sft_usage_lease_t  *l, *next;

    if (sync == NULL) {
        for (l = sft_usage_lease.all; l; l = next) {
            next = l->next;
            sft_free(l->ctx);
            sft_free(l);
        }

        sft_memzero(&sft_usage_lease, sizeof(sft_usage_lease));
        return;
    }

    sft_usage_lease.sync = sync;
    sft_usage_lease.ask = ask;
    sft_usage_lease.log = log;
}


/* the lease of r; made for a user with a quota */

static sft_usage_lease_t *
sft_usage_lease_find(sft_usage_t *r, off_t max_bytes, off_t max_files)
{
    sft_uint_t          h;
    sft_usage_lease_t  *l;

    if (sft_usage_lease.sync == NULL) {
        return NULL;
    }

    h = ((uintptr_t) r / 64) % SFT_USAGE_LEASE_BUCKETS;

    for (l = sft_usage_lease.bucket[h]; l; l = l->hnext) {
        if (l->usage == r) {
            if (max_bytes || max_files) {
                l->max_bytes = max_bytes;
                l->max_files = max_files;
            }

            return l;
        }
    }

    if (max_bytes == 0 && max_files == 0) {
        return NULL;
    }

    l = sft_calloc(sizeof(sft_usage_lease_t), sft_usage_lease.log);
    if (l == NULL) {
        return NULL;
    }

    l->usage = r;
    sft_usage_name(r, &l->name);
    l->max_bytes = max_bytes;
    l->max_files = max_files;
    l->charged = sft_current_msec;

    l->hnext = sft_usage_lease.bucket[h];
    sft_usage_lease.bucket[h] = l;
    l->next = sft_usage_lease.all;
    sft_usage_lease.all = l;

    return l;
}


/* the lease a worker asks for: a slice of the quota, or what waits */

static off_t
sft_usage_lease_slice(off_t max, off_t lo, off_t hi)
{
    return max ? sft_min(sft_max(max / 8, lo), hi) : 0;
}


sft_int_t
sft_usage_lease_charge(sft_usage_t *r, off_t max_bytes, off_t max_files,
    off_t bytes, off_t files)
{
    sft_usage_lease_t  *l;

    l = sft_usage_lease_find(r, max_bytes, max_files);

    if (l == NULL) {
        return SFT_DECLINED;
    }

    if ((max_bytes && bytes > l->lease_bytes)
        || (max_files && files > l->lease_files))
    {
        if (l->down) {
            if (!l->told) {
                l->told = 1;
                sft_log_error(SFT_LOG_WARN, sft_usage_lease.log, 0,
                              "the quota of \"%.*s\" cannot be checked: "
                              "the shared usage cannot be reached and this "
                              "worker's lease is spent",
                              SFT_STR_FMT(&l->name));
            }

            sft_usage_lease_sync(l);
            return SFT_ERROR;
        }

        l->need_bytes = sft_max(l->need_bytes, bytes);
        l->topup = 1;
        sft_usage_lease_sync(l);

        return SFT_AGAIN;
    }

    /* no quota passed (a link): charged beyond the lease, reported */

    l->lease_bytes -= sft_min(bytes, l->lease_bytes);
    l->lease_files -= sft_min(files, l->lease_files);
    l->spent_bytes += bytes;
    l->spent_files += files;
    l->charged = sft_current_msec;

    if ((l->max_bytes && l->lease_bytes < sft_usage_lease_slice(l->max_bytes,
             SFT_USAGE_LEASE_MIN_SLICE, SFT_USAGE_LEASE_MAX_SLICE) / 2)
        || (l->max_files && l->lease_files == 0))
    {
        l->topup = 1;
        sft_usage_lease_sync(l);
    }

    return SFT_OK;
}


void
sft_usage_lease_credit(sft_usage_t *r, off_t bytes, off_t files)
{
    sft_usage_lease_t  *l;

    l = sft_usage_lease_find(r, 0, 0);

    if (l == NULL) {
        return;
    }

    l->freed_bytes += bytes;
    l->freed_files += files;

    sft_usage_lease_sync(l);
}


sft_int_t
sft_usage_lease_need(sft_usage_t *r, off_t max_bytes, off_t max_files,
    off_t need)
{
    sft_usage_lease_t  *l;

    l = sft_usage_lease_find(r, max_bytes, max_files);

    if (l == NULL || need < 0) {
        return SFT_OK;
    }

    if (l->renewed
        && (max_files == 0 || l->lease_files > 0)
        && (max_bytes == 0 || l->lease_bytes >= sft_max(need, 1)))
    {
        return SFT_OK;
    }

    l->need_bytes = sft_max(l->need_bytes, need);
    l->need_file |= (need == 0 && max_files);
    l->charged = sft_current_msec;
    l->topup = 1;

    sft_usage_lease_sync(l);

    /* not asked: the store cannot be reached, the lease decides */

    return l->syncing ? SFT_AGAIN : SFT_OK;
}


void
sft_usage_lease_wait(sft_usage_t *r, sft_usage_wait_t *w)
{
    sft_usage_lease_t  *l;

    /* after sft_usage_lease_need() answered SFT_AGAIN: l is there */

    l = sft_usage_lease_find(r, 0, 0);

    if (l != NULL) {
        w->next = l->waiting;
        l->waiting = w;
    }
}


void
sft_usage_lease_counted(sft_usage_t *r, off_t max_bytes, off_t max_files,
    off_t bytes, off_t files, sft_uint_t recount)
{
    sft_usage_lease_t  *l;

    l = sft_usage_lease_find(r, max_bytes, max_files);

    if (l == NULL) {
        return;
    }

    l->count = 1;
    l->recount = recount;
    l->count_bytes = bytes;
    l->count_files = files;

    sft_usage_lease_sync(l);
}


/* a report: the one not acknowledged yet, else what is new */

static void
sft_usage_lease_sync(sft_usage_lease_t *l)
{
    off_t  slice;

    if (l->syncing) {
        l->again = 1;
        return;
    }

    if (!l->out) {
        l->out_spent_bytes = l->spent_bytes;
        l->out_spent_files = l->spent_files;
        l->out_freed_bytes = l->freed_bytes;
        l->out_freed_files = l->freed_files;
        l->spent_bytes = 0;
        l->spent_files = 0;
        l->freed_bytes = 0;
        l->freed_files = 0;
        l->out_count = l->count;
        l->out_recount = l->recount;
        l->out_count_bytes = l->count_bytes;
        l->out_count_files = l->count_files;
        l->count = 0;
        l->seq++;
        l->out = 1;
    }

    l->give |= l->leaving;

    if (l->give) {
        l->want_bytes = 0;          /* given back whole: the lease ends */
        l->want_files = 0;

    } else if (sft_current_msec - l->charged >= SFT_USAGE_LEASE_IDLE_MSEC
               && l->waiting == NULL && l->need_bytes == 0)
    {
        l->want_bytes = 0;          /* idle: given back */
        l->want_files = 0;

        /*
         * none of it is spent here while that is on its way: the store
         * hands the room to the others as it reads the report, and a
         * write meanwhile waits for the answer and a lease of its own
         */
        l->lease_bytes = 0;
        l->lease_files = 0;

    } else if (!l->topup && l->waiting == NULL && l->need_bytes == 0) {
        l->want_bytes = l->lease_bytes;     /* a report: kept as it is */
        l->want_files = l->lease_files;

    } else {
        slice = sft_usage_lease_slice(l->max_bytes,
                                      SFT_USAGE_LEASE_MIN_SLICE,
                                      SFT_USAGE_LEASE_MAX_SLICE);
        l->want_bytes = l->max_bytes ? sft_max(slice, l->need_bytes) : 0;
        l->want_files = sft_usage_lease_slice(l->max_files, 1,
                                              SFT_USAGE_LEASE_MAX_FILES);
    }

    l->again = 0;
    l->topup = 0;
    l->out_give = l->give;
    l->syncing = 1;

    if (sft_usage_lease.sync(l) == SFT_AGAIN) {
        return;
    }

    l->syncing = 0;
    l->need_bytes = 0;
    sft_usage_lease_left(l);

    if (!l->down) {
        l->down = 1;
        sft_log_error(SFT_LOG_WARN, sft_usage_lease.log, 0,
                      "the shared usage of \"%.*s\" cannot be reached: "
                      "this worker spends its lease of %lld bytes, %lld "
                      "files and refuses more", SFT_STR_FMT(&l->name),
                      (long long) l->lease_bytes,
                      (long long) l->lease_files);
    }
}


void
sft_usage_lease_synced(sft_usage_lease_t *l, sft_uint_t ok, off_t bytes,
    off_t files, off_t lease_bytes, off_t lease_files, sft_uint_t counted)
{
    l->syncing = 0;

    if (!ok) {
        l->down = 1;
        sft_usage_lease_left(l);
        sft_usage_lease_wake(l);
        return;
    }

    if (l->down) {
        l->down = 0;
        l->told = 0;
        sft_log_error(SFT_LOG_NOTICE, sft_usage_lease.log, 0,
                      "the shared usage of \"%.*s\" is reached again",
                      SFT_STR_FMT(&l->name));
    }

    l->out = 0;
    l->renewed = sft_current_msec;

    /* the store's lease, less what was spent while it answered */

    l->lease_bytes = sft_max(lease_bytes - l->spent_bytes, 0);
    l->lease_files = sft_max(lease_files - l->spent_files, 0);

    /* given back, or to be: none of it is spent here */

    if (l->out_give || l->give) {
        l->lease_bytes = 0;
        l->lease_files = 0;
    }

    if (l->out_give) {
        l->give = 0;
        l->out_give = 0;
        sft_usage_lease_left(l);
    }

    if (counted) {
        sft_usage_replace(l->usage,
                          sft_max(bytes + l->spent_bytes - l->freed_bytes, 0),
                          sft_max(files + l->spent_files - l->freed_files,
                                  0));
    } else {
        sft_usage_forget(l->usage);
    }

    /* asked again while it answered: the waiting go with the next one */

    if (l->again) {
        sft_usage_lease_sync(l);

        if (l->syncing) {
            return;
        }
    }

    /* still short: the other workers are asked for the room they hold */

    if (l->waiting && !l->asked && sft_usage_lease.ask
        && ((l->max_bytes && l->lease_bytes < l->need_bytes)
            || (l->max_files && l->need_file && l->lease_files == 0)))
    {
        l->asked = 1;
        l->asked_at = sft_current_msec;

        if (l->asking) {
            return;                 /* an ask is on the wire: its answer */
        }

        if (sft_usage_lease.ask(l) == SFT_AGAIN) {
            l->asking = 1;
            return;
        }
    }

    sft_usage_lease_wake(l);
}


void
sft_usage_lease_answered(sft_usage_lease_t *l, sft_uint_t held)
{
    l->asking = 0;

    /* nobody else holds room: refused now; else their room is waited for */

    if (l->asked && !l->retry && !l->syncing && !held) {
        sft_usage_lease_wake(l);
    }
}


void
sft_usage_lease_room(sft_usage_t *r)
{
    sft_usage_lease_t  *l;

    l = sft_usage_lease_find(r, 0, 0);

    if (l != NULL && l->asked && !l->retry) {
        sft_usage_lease_retry(l);
    }
}


/* asked once more, with what the others gave back: the answer decides */

static void
sft_usage_lease_retry(sft_usage_lease_t *l)
{
    l->retry = 1;
    l->topup = 1;

    sft_usage_lease_sync(l);
}


void
sft_usage_lease_asked(sft_usage_t *r)
{
    sft_usage_lease_t  *l;

    l = sft_usage_lease_find(r, 0, 0);

    if (l == NULL || l->waiting || l->need_bytes || l->give
        || (l->lease_bytes == 0 && l->lease_files == 0))
    {
        return;
    }

    sft_usage_lease_give(l);
}


/* the room left is given back whole: not spent here from now on */

static void
sft_usage_lease_give(sft_usage_lease_t *l)
{
    l->give = 1;
    l->lease_bytes = 0;
    l->lease_files = 0;

    sft_usage_lease_sync(l);
}


sft_int_t
sft_usage_lease_leave(void (*done)(void *data), void *data)
{
    sft_usage_lease_t  *l;

    sft_usage_lease.left = done;
    sft_usage_lease.left_data = data;

    /* one more while they are sent: done() only after the last answer */

    sft_usage_lease.leaving = 1;

    for (l = sft_usage_lease.all; l; l = l->next) {
        if (l->seq == 0 && !l->count) {
            continue;               /* never reported: no lease there */
        }

        l->leaving = 1;
        sft_usage_lease.leaving++;
        sft_usage_lease_give(l);
    }

    return --sft_usage_lease.leaving ? SFT_AGAIN : SFT_OK;
}


/* a leaving lease's last report was answered, or cannot be */

static void
sft_usage_lease_left(sft_usage_lease_t *l)
{
    if (!l->leaving) {
        return;
    }

    l->leaving = 0;

    if (--sft_usage_lease.leaving == 0) {
        sft_usage_lease.left(sft_usage_lease.left_data);
    }
}


static void
sft_usage_lease_wake(sft_usage_lease_t *l)
{
    sft_usage_wait_t  *w, *next;

    l->need_bytes = 0;
    l->need_file = 0;
    l->asked = 0;
    l->retry = 0;

    w = l->waiting;
    l->waiting = NULL;

    for ( /* void */ ; w; w = next) {
        next = w->next;
        w->handler(w);
    }
}


void
sft_usage_lease_tick(void)
{
    sft_usage_lease_t  *l;

    for (l = sft_usage_lease.all; l; l = l->next) {
        if (l->syncing) {
            continue;
        }

        /* the others asked: their answer, or no longer than this */

        if (l->asked && !l->retry) {
            if (sft_current_msec - l->asked_at >= SFT_USAGE_LEASE_ASK_MSEC) {
                sft_usage_lease_retry(l);
            }

            continue;
        }

        if (l->out || l->count || l->spent_bytes || l->spent_files
            || l->freed_bytes || l->freed_files)
        {
            sft_usage_lease_sync(l);
            continue;
        }

        if ((l->lease_bytes || l->lease_files)
            && (sft_current_msec - l->charged >= SFT_USAGE_LEASE_IDLE_MSEC
                || sft_current_msec - l->renewed
                   >= SFT_USAGE_LEASE_RENEW_MSEC))
        {
            sft_usage_lease_sync(l);
        }
    }
}
