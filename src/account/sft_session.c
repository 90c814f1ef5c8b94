/*
 * sft_session.c -- the live sessions table in the "sft_sessions" zone.
 *
 * A slot is claimed with a compare-and-swap by the worker whose session
 * it describes, and only that worker writes it: the byte counters with
 * relaxed stores (no locked instruction on the data path), the text
 * fields (user, transfer) inside a sequence count that readers retry on.
 * Readers scan the slots below a high-water mark.
 *
 * Another worker ends a session by claiming the slot's end flag, writing
 * who asked, and sending the owner SFT_SIGNAL_SESSION; the owner's
 * handler only writes the worker's eventfd, which is on its epoll set, so
 * the sessions are ended on the event loop.  No worker ever waits for
 * another.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event.h>
#include <sft_session.h>


#define SFT_SESSION_FREE       0
#define SFT_SESSION_LIVE       1

#define SFT_SESSION_ASK_NONE   0
#define SFT_SESSION_ASK_CLAIM  1       /* "by" is being written */
#define SFT_SESSION_ASK_READY  2
#define SFT_SESSION_ASK_DONE   3       /* the owner has acted on it */

#define SFT_SESSION_MIN        64
#define SFT_SESSION_MAX        65536   /* slots of about 800 bytes */
#define SFT_SESSION_READS      64      /* tries at a consistent copy */


struct sft_session_rec_s {
    uint32_t           state;
    uint32_t           gen;
    uint32_t           seq;         /* odd while the owner writes text */
    uint32_t           ask;         /* SFT_SESSION_ASK_* */
    int32_t            owner;       /* the process slot */
    int32_t            pid;
    uint32_t           protocol;
    uint32_t           port;
    int64_t            since;
    uint64_t           bytes_in;    /* written by the owner only */
    uint64_t           bytes_out;
    uint64_t           xfer_base;   /* bytes_in + bytes_out at its start */
    int64_t            xfer_start;  /* CLOCK_MONOTONIC, ms */
    uint32_t           direction;   /* 0: none, else SFT_XFER_* + 1 */
    uint32_t           data_path;
    char               user[SFT_USER_NAME_MAX + 1];
    char               addr[SFT_SESSION_ADDR_LEN];
    char               path[SFT_SESSION_PATH_LEN];
    char               by[SFT_SESSION_BY_LEN];
};


typedef struct {
    uint32_t           capacity;
    uint32_t           hwm;         /* slots ever used: [0, hwm) */
    uint32_t           gen;
} sft_session_table_t;


static char *sft_session_init_conf(sft_cycle_t *cycle, void *conf);
static sft_int_t sft_session_init_process(sft_cycle_t *cycle);
static void sft_session_process_exited(sft_cycle_t *cycle, sft_uint_t slot,
    pid_t pid);


static sft_core_module_t  sft_session_module_ctx = {
    sft_string("sessions"),
    NULL,
    sft_session_init_conf
};


sft_module_t  sft_session_module = {
    SFT_MODULE_V1,
    &sft_session_module_ctx,               /* module context */
    NULL,                                  /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_session_init_process,              /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    sft_session_process_exited,            /* process exited */
    NULL,                                  /* processes changed */
    SFT_MODULE_V1_SPARE
};


static sft_session_table_t  *sft_session_table;
static sft_session_rec_t    *sft_session_recs;
static sft_uint_t            sft_session_capacity;

/* this worker's sessions, and where its wake-ups arrive */
static sft_session_t        *sft_session_own;
static int                   sft_session_wake_fd = -1;

static sft_str_t  sft_session_zone_name = sft_string("sft_sessions");


static size_t
sft_session_header_size(void)
{
    return sft_align(sizeof(sft_session_table_t), 64);
}


static sft_int_t
sft_session_zone_init(sft_shm_zone_t *zone, void *old_data)
{
    sft_session_table_t  *t;

    t = old_data ? old_data : (sft_session_table_t *) zone->shm.addr;

    if (old_data == NULL) {
        t->capacity = (uint32_t) ((zone->shm.size - sft_session_header_size())
                                  / sizeof(sft_session_rec_t));
    }

    zone->data = t;
    sft_session_table = t;
    sft_session_recs = (sft_session_rec_t *) ((u_char *) t
                                              + sft_session_header_size());

    return SFT_OK;
}


/*
 * a slot for every connection of every worker, counted once at the first
 * start: the same size keeps the zone, and its sessions, across reloads
 */

static char *
sft_session_init_conf(sft_cycle_t *cycle, void *conf)
{
    sft_uint_t         n;
    sft_shm_zone_t    *zone;
    sft_core_conf_t   *ccf;
    sft_event_conf_t  *ecf;

    (void) conf;

    if (sft_test_config || sft_signaller) {
        return SFT_CONF_OK;
    }

    if (sft_session_capacity == 0) {
        ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx,
                                               sft_core_module);
        ecf = sft_event_get_conf(cycle);

        n = (ecf ? ecf->connections : 1024)
            * (sft_uint_t) sft_max(ccf->worker_processes, 1);

        sft_session_capacity = sft_min(sft_max(n, SFT_SESSION_MIN),
                                       SFT_SESSION_MAX);
    }

    zone = sft_shared_memory_add(cycle, &sft_session_zone_name,
                                 sft_align(sft_session_header_size()
                                           + sft_session_capacity
                                             * sizeof(sft_session_rec_t),
                                           4096),
                                 &sft_session_zone_name);
    if (zone == NULL) {
        return SFT_CONF_ERROR;
    }

    zone->init = sft_session_zone_init;

    return SFT_CONF_OK;
}


/* async-signal-safe: the loop does the work */

static void
sft_session_signal_handler(int signo)
{
    int       err;
    uint64_t  one = 1;

    (void) signo;

    err = errno;

    if (write(sft_session_wake_fd, &one, sizeof(uint64_t)) == -1) {
        /* EAGAIN only: the counter is full, the loop wakes anyway */
    }

    errno = err;
}


/* the owner: the sessions another worker asked to end, ended here */

static void
sft_session_wake_handler(sft_event_t *ev)
{
    char                by[SFT_SESSION_BY_LEN];
    uint64_t            v;
    sft_session_t      *s;
    sft_session_rec_t  *rec;

    (void) ev;

    if (read(sft_session_wake_fd, &v, sizeof(uint64_t)) == -1) {
        /* EAGAIN: an earlier wake-up took the count; the slots tell */
    }

again:

    for (s = sft_session_own; s; s = s->next) {
        rec = s->rec;

        if (__atomic_load_n(&rec->ask, __ATOMIC_ACQUIRE)
            != SFT_SESSION_ASK_READY)
        {
            continue;
        }

        sft_memcpy(by, rec->by, SFT_SESSION_BY_LEN);
        by[SFT_SESSION_BY_LEN - 1] = '\0';

        __atomic_store_n(&rec->ask, SFT_SESSION_ASK_DONE, __ATOMIC_RELEASE);

        /* the handler closes the session: the list changes under us */
        s->end(s, by);

        goto again;
    }
}


static sft_int_t
sft_session_init_process(sft_cycle_t *cycle)
{
    struct sigaction  sa;

    if (sft_session_table == NULL) {
        return SFT_OK;
    }

    sft_session_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

    if (sft_session_wake_fd == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "eventfd() for the sessions table failed");
        return SFT_ERROR;
    }

    if (sft_event_add_notify(cycle, sft_session_wake_fd,
                             sft_session_wake_handler, NULL)
        == NULL)
    {
        return SFT_ERROR;
    }

    sft_memzero(&sa, sizeof(struct sigaction));
    sa.sa_handler = sft_session_signal_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);

    if (sigaction(SFT_SIGNAL_SESSION, &sa, NULL) == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "sigaction() for the sessions table failed");
        return SFT_ERROR;
    }

    return SFT_OK;
}


/* in the master: the slots of a worker that died are free again */

static void
sft_session_process_exited(sft_cycle_t *cycle, sft_uint_t slot, pid_t pid)
{
    uint32_t            i, hwm;
    sft_session_rec_t  *rec;

    (void) cycle;

    if (sft_session_table == NULL) {
        return;
    }

    hwm = __atomic_load_n(&sft_session_table->hwm, __ATOMIC_ACQUIRE);

    for (i = 0; i < hwm; i++) {
        rec = &sft_session_recs[i];

        if (__atomic_load_n(&rec->state, __ATOMIC_ACQUIRE)
                == SFT_SESSION_LIVE
            && rec->owner == (int32_t) slot && rec->pid == (int32_t) pid)
        {
            __atomic_store_n(&rec->state, SFT_SESSION_FREE,
                             __ATOMIC_RELEASE);
        }
    }
}


static void
sft_session_write_begin(sft_session_rec_t *rec)
{
    __atomic_store_n(&rec->seq, rec->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}


static void
sft_session_write_end(sft_session_rec_t *rec)
{
    __atomic_store_n(&rec->seq, rec->seq + 1, __ATOMIC_RELEASE);
}


static void
sft_session_copy(char *dst, size_t size, const u_char *src, size_t len)
{
    len = sft_min(len, size - 1);
    sft_memcpy(dst, src, len);
    dst[len] = '\0';
}


void
sft_session_open(sft_session_t *s, sft_uint_t protocol, sft_connection_t *c,
    sft_session_end_pt end, void *data)
{
    uint32_t             i, n, cap, state, hwm;
    struct sockaddr     *sa;
    sft_session_rec_t   *rec;
    sft_session_table_t *t = sft_session_table;

    s->rec = NULL;
    s->end = end;
    s->data = data;

    if (t == NULL) {
        return;
    }

    cap = t->capacity;
    i = __atomic_load_n(&t->hwm, __ATOMIC_RELAXED);

    /*
     * above the high-water mark first: no scan while the table grows;
     * once every slot has been used the mark is the capacity, one past
     * the last slot, and the scan starts from the first
     */

    if (i >= cap) {
        i = 0;
    }

    for (n = 0; n < cap; n++, i = (i + 1 < cap) ? i + 1 : 0) {
        rec = &sft_session_recs[i];
        state = SFT_SESSION_FREE;

        if (__atomic_load_n(&rec->state, __ATOMIC_RELAXED) == state
            && __atomic_compare_exchange_n(&rec->state, &state,
                                           SFT_SESSION_LIVE, 0,
                                           __ATOMIC_ACQ_REL,
                                           __ATOMIC_RELAXED))
        {
            break;
        }
    }

    if (n == cap) {
        sft_log_error(SFT_LOG_WARN, c->log, 0,
                      "the sessions table of %u is full: this session is "
                      "not listed", cap);
        return;
    }

    sft_session_write_begin(rec);

    rec->gen = __atomic_add_fetch(&t->gen, 1, __ATOMIC_RELAXED);
    rec->owner = (int32_t) sft_process_slot;
    rec->pid = (int32_t) sft_pid;
    rec->protocol = (uint32_t) protocol;
    rec->since = (int64_t) time(NULL);
    rec->direction = 0;
    rec->user[0] = '\0';
    rec->path[0] = '\0';
    __atomic_store_n(&rec->bytes_in, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&rec->bytes_out, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&rec->ask, SFT_SESSION_ASK_NONE, __ATOMIC_RELAXED);

    sa = (struct sockaddr *) &c->sockaddr;
    rec->addr[0] = '\0';
    rec->port = 0;

    if (sa->sa_family == AF_INET) {
        (void) inet_ntop(AF_INET, &((struct sockaddr_in *) sa)->sin_addr,
                         rec->addr, SFT_SESSION_ADDR_LEN);
        rec->port = ntohs(((struct sockaddr_in *) sa)->sin_port);

    } else if (sa->sa_family == AF_INET6) {
        (void) inet_ntop(AF_INET6, &((struct sockaddr_in6 *) sa)->sin6_addr,
                         rec->addr, SFT_SESSION_ADDR_LEN);
        rec->port = ntohs(((struct sockaddr_in6 *) sa)->sin6_port);
    }

    sft_session_write_end(rec);

    hwm = __atomic_load_n(&t->hwm, __ATOMIC_RELAXED);

    while (i >= hwm
           && !__atomic_compare_exchange_n(&t->hwm, &hwm, i + 1, 0,
                                           __ATOMIC_RELEASE,
                                           __ATOMIC_RELAXED))
    {
        /* void */
    }

    s->rec = rec;
    s->prev = NULL;
    s->next = sft_session_own;

    if (sft_session_own) {
        sft_session_own->prev = s;
    }

    sft_session_own = s;
}


void
sft_session_close(sft_session_t *s)
{
    if (s->rec == NULL) {
        return;
    }

    if (s->prev) {
        s->prev->next = s->next;

    } else {
        sft_session_own = s->next;
    }

    if (s->next) {
        s->next->prev = s->prev;
    }

    __atomic_store_n(&s->rec->state, SFT_SESSION_FREE, __ATOMIC_RELEASE);

    s->rec = NULL;
}


void
sft_session_set_protocol(sft_session_t *s, sft_uint_t protocol)
{
    if (s->rec) {
        __atomic_store_n(&s->rec->protocol, (uint32_t) protocol,
                         __ATOMIC_RELAXED);
    }
}


void
sft_session_set_user(sft_session_t *s, sft_str_t *user)
{
    if (s->rec == NULL) {
        return;
    }

    sft_session_write_begin(s->rec);
    sft_session_copy(s->rec->user, sizeof(s->rec->user), user->data,
                     user->len);
    sft_session_write_end(s->rec);
}


/* the data path: the owner alone writes, so no locked instruction */

void
sft_session_count(sft_session_t *s, size_t in, size_t out)
{
    sft_session_rec_t  *rec = s->rec;

    if (rec == NULL) {
        return;
    }

    if (in) {
        __atomic_store_n(&rec->bytes_in,
                         __atomic_load_n(&rec->bytes_in, __ATOMIC_RELAXED)
                         + in, __ATOMIC_RELAXED);
    }

    if (out) {
        __atomic_store_n(&rec->bytes_out,
                         __atomic_load_n(&rec->bytes_out, __ATOMIC_RELAXED)
                         + out, __ATOMIC_RELAXED);
    }
}


void
sft_session_transfer(sft_session_t *s, sft_uint_t direction,
    sft_uint_t data_path, const char *path)
{
    sft_session_rec_t  *rec = s->rec;

    if (rec == NULL) {
        return;
    }

    sft_session_write_begin(rec);

    rec->direction = (uint32_t) direction + 1;
    rec->data_path = (uint32_t) data_path;
    rec->xfer_base = __atomic_load_n(&rec->bytes_in, __ATOMIC_RELAXED)
                     + __atomic_load_n(&rec->bytes_out, __ATOMIC_RELAXED);
    rec->xfer_start = (int64_t) sft_monotonic_msec();
    sft_session_copy(rec->path, sizeof(rec->path), (const u_char *) path,
                     strlen(path));

    sft_session_write_end(rec);
}


void
sft_session_transfer_path(sft_session_t *s, sft_uint_t data_path)
{
    if (s->rec) {
        __atomic_store_n(&s->rec->data_path, (uint32_t) data_path,
                         __ATOMIC_RELAXED);
    }
}


void
sft_session_transfer_done(sft_session_t *s)
{
    if (s->rec == NULL) {
        return;
    }

    sft_session_write_begin(s->rec);
    s->rec->direction = 0;
    s->rec->path[0] = '\0';
    sft_session_write_end(s->rec);
}


/* a consistent copy of a live slot, or SFT_DECLINED */

static sft_int_t
sft_session_read(sft_session_rec_t *rec, sft_session_rec_t *copy)
{
    uint32_t    seq, i;

    for (i = 0; i < SFT_SESSION_READS; i++) {
        if (__atomic_load_n(&rec->state, __ATOMIC_ACQUIRE)
            != SFT_SESSION_LIVE)
        {
            return SFT_DECLINED;
        }

        seq = __atomic_load_n(&rec->seq, __ATOMIC_ACQUIRE);

        if (seq & 1) {
            sched_yield();
            continue;
        }

        sft_memcpy(copy, rec, sizeof(sft_session_rec_t));

        __atomic_thread_fence(__ATOMIC_ACQUIRE);

        if (__atomic_load_n(&rec->seq, __ATOMIC_RELAXED) == seq) {
            copy->user[SFT_USER_NAME_MAX] = '\0';
            copy->addr[SFT_SESSION_ADDR_LEN - 1] = '\0';
            copy->path[SFT_SESSION_PATH_LEN - 1] = '\0';
            return SFT_OK;
        }
    }

    return SFT_DECLINED;
}


static sft_uint_t
sft_session_user_is(sft_session_rec_t *copy, sft_str_t *user)
{
    return user == NULL
           || (strlen(copy->user) == user->len
               && sft_memcmp(copy->user, user->data, user->len) == 0);
}


sft_uint_t
sft_session_max(void)
{
    return sft_session_table
           ? __atomic_load_n(&sft_session_table->hwm, __ATOMIC_ACQUIRE) : 0;
}


/* the next live session from slot *i on, of user only unless NULL */

sft_int_t
sft_session_next(sft_uint_t *i, sft_session_info_t *info, sft_str_t *user)
{
    int64_t             ms;
    uint64_t            moved;
    sft_uint_t          hwm;
    sft_session_rec_t   copy;

    hwm = sft_session_max();

    for ( /* void */ ; *i < hwm; (*i)++) {
        if (sft_session_read(&sft_session_recs[*i], &copy) != SFT_OK
            || !sft_session_user_is(&copy, user))
        {
            continue;
        }

        (void) snprintf(info->id, SFT_SESSION_ID_LEN, "%u-%u",
                        (unsigned) *i, copy.gen);
        (*i)++;

        info->protocol = copy.protocol;
        sft_memcpy(info->user, copy.user, sizeof(info->user));
        sft_memcpy(info->addr, copy.addr, sizeof(info->addr));
        info->port = copy.port;
        info->since = (time_t) copy.since;
        info->bytes_in = copy.bytes_in;
        info->bytes_out = copy.bytes_out;
        info->direction = copy.direction;
        info->data_path = copy.data_path;
        info->rate = 0;
        info->path[0] = '\0';

        if (copy.direction) {
            sft_memcpy(info->path, copy.path, sizeof(info->path));

            ms = (int64_t) sft_monotonic_msec() - copy.xfer_start;
            moved = copy.bytes_in + copy.bytes_out - copy.xfer_base;

            if (ms > 0 && moved <= UINT64_MAX / 1000) {
                info->rate = moved * 1000 / (uint64_t) ms;
            }
        }

        return SFT_OK;
    }

    return SFT_DONE;
}


/* claims the slot's end flag, says who asks and wakes the owner */

static sft_int_t
sft_session_ask(sft_session_rec_t *rec, uint32_t gen, sft_str_t *by)
{
    uint32_t  ask;
    size_t    len;

    ask = SFT_SESSION_ASK_NONE;

    if (!__atomic_compare_exchange_n(&rec->ask, &ask, SFT_SESSION_ASK_CLAIM,
                                     0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    {
        /* asked already: ending, unless it has ended */
        return (__atomic_load_n(&rec->state, __ATOMIC_ACQUIRE)
                    == SFT_SESSION_LIVE
                && __atomic_load_n(&rec->gen, __ATOMIC_RELAXED) == gen)
               ? SFT_OK : SFT_DECLINED;
    }

    if (__atomic_load_n(&rec->state, __ATOMIC_ACQUIRE) != SFT_SESSION_LIVE
        || __atomic_load_n(&rec->gen, __ATOMIC_RELAXED) != gen)
    {
        __atomic_store_n(&rec->ask, SFT_SESSION_ASK_NONE, __ATOMIC_RELEASE);
        return SFT_DECLINED;
    }

    len = sft_min(by->len, SFT_SESSION_BY_LEN - 1);
    sft_memcpy(rec->by, by->data, len);
    rec->by[len] = '\0';

    __atomic_store_n(&rec->ask, SFT_SESSION_ASK_READY, __ATOMIC_RELEASE);

    if (kill((pid_t) rec->pid, SFT_SIGNAL_SESSION) == -1) {
        sft_log_error(SFT_LOG_ALERT, sft_cycle->log, sft_errno,
                      "kill(%d) to end a session failed", (int) rec->pid);
        return SFT_ERROR;
    }

    return SFT_OK;
}


sft_int_t
sft_session_end_id(sft_str_t *id, sft_str_t *by)
{
    u_char     *dash;
    sft_int_t   i, gen;

    dash = id->len ? memchr(id->data, '-', id->len) : NULL;

    if (dash == NULL || dash == id->data || dash - id->data > 9
        || id->data + id->len - dash - 1 > 10)
    {
        return SFT_DECLINED;
    }

    /* digits only and in range, before any arithmetic on them */

    i = sft_atoi(id->data, dash - id->data);
    gen = sft_atoi(dash + 1, id->data + id->len - dash - 1);

    if (i == SFT_ERROR || gen == SFT_ERROR || (sft_uint_t) i >= sft_session_max()
        || gen > (sft_int_t) UINT32_MAX)
    {
        return SFT_DECLINED;
    }

    return sft_session_ask(&sft_session_recs[i], (uint32_t) gen, by);
}


sft_uint_t
sft_session_end_user(sft_str_t *user, sft_str_t *by)
{
    uint32_t            i, hwm;
    sft_uint_t          n;
    sft_session_rec_t   copy;

    hwm = (uint32_t) sft_session_max();
    n = 0;

    for (i = 0; i < hwm; i++) {
        if (sft_session_read(&sft_session_recs[i], &copy) == SFT_OK
            && copy.user[0] && sft_session_user_is(&copy, user)
            && sft_session_ask(&sft_session_recs[i], copy.gen, by) == SFT_OK)
        {
            n++;
        }
    }

    return n;
}
