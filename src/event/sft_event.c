/*
 * sft_event.c -- the events{} block, the per-worker epoll loop, posted
 * events, accepting connections and the master's channel.
 */

#include <sft_config.h>
#include <sft_core.h>


#define SFT_EPOLL_EVENTS  512

/* out of descriptors: how long a worker stops accepting before it retries */
#define SFT_ACCEPT_PAUSE  500


static char *sft_events_block(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static void *sft_event_core_create_conf(sft_cycle_t *cycle);
static char *sft_event_core_init_conf(sft_cycle_t *cycle, void *conf);
static sft_int_t sft_event_process_init(sft_cycle_t *cycle);
static void sft_event_channel_handler(sft_event_t *ev);
static void sft_event_pause_accepting(sft_cycle_t *cycle);


sft_uint_t  sft_event_sessions;

static int            sft_epoll_fd = -1;
static sft_event_t   *sft_posted_events;
static sft_event_t  **sft_posted_tail = &sft_posted_events;
static sft_uint_t     sft_events_max_module;
extern sft_uint_t     sft_connection_counter;


static sft_command_t  sft_events_commands[] = {

    { sft_string("events"),
      SFT_MAIN_CONF|SFT_CONF_BLOCK|SFT_CONF_NOARGS,
      sft_events_block,
      0,
      0,
      NULL,
      sft_command_doc("{ ... }", "",
          "The block of the event loop's directives.") },

    sft_null_command
};


static sft_core_module_t  sft_events_module_ctx = {
    sft_string("events"),
    NULL,
    NULL
};


sft_module_t  sft_events_module = {
    SFT_MODULE_V1,
    &sft_events_module_ctx,                /* module context */
    sft_events_commands,                   /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static sft_command_t  sft_event_core_commands[] = {

    { sft_string("worker_connections"),
      SFT_EVENT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      0,
      offsetof(sft_event_conf_t, connections),
      NULL,
      sft_command_doc("number", "1024",
          "The connections one worker may have open at once.") },

    { sft_string("multi_accept"),
      SFT_EVENT_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      0,
      offsetof(sft_event_conf_t, multi_accept),
      NULL,
      sft_command_doc("on | off", "on",
          "Accept every pending connection on an event, not one.") },

    sft_null_command
};


static sft_event_module_t  sft_event_core_module_ctx = {
    sft_event_core_create_conf,
    sft_event_core_init_conf
};


sft_module_t  sft_event_core_module = {
    SFT_MODULE_V1,
    &sft_event_core_module_ctx,            /* module context */
    sft_event_core_commands,               /* module directives */
    SFT_EVENT_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_event_process_init,                /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


/*
 * The events{} context is created even when the block is absent, so every
 * event module always has its configuration.
 */

static char *
sft_events_create_ctx(sft_cycle_t *cycle, void ***ctxp)
{
    void                **ctx;
    sft_uint_t            i;
    sft_module_t         *m;
    sft_event_module_t   *em;

    sft_events_max_module = sft_count_modules(cycle, SFT_EVENT_MODULE);

    ctx = sft_pcalloc(cycle->pool, sizeof(void *));
    if (ctx == NULL) {
        return SFT_CONF_ERROR;
    }

    *ctx = sft_pcalloc(cycle->pool, sft_events_max_module * sizeof(void *));
    if (*ctx == NULL) {
        return SFT_CONF_ERROR;
    }

    for (i = 0; cycle->modules[i]; i++) {
        m = cycle->modules[i];

        if (m->type != SFT_EVENT_MODULE) {
            continue;
        }

        em = m->ctx;

        if (em->create_conf) {
            (*(void ***) ctx)[m->ctx_index] = em->create_conf(cycle);

            if ((*(void ***) ctx)[m->ctx_index] == NULL) {
                return SFT_CONF_ERROR;
            }
        }
    }

    *ctxp = ctx;

    return SFT_CONF_OK;
}


static char *
sft_events_init_ctx(sft_cycle_t *cycle, void **ctx)
{
    sft_uint_t           i;
    sft_module_t        *m;
    sft_event_module_t  *em;

    for (i = 0; cycle->modules[i]; i++) {
        m = cycle->modules[i];

        if (m->type != SFT_EVENT_MODULE) {
            continue;
        }

        em = m->ctx;

        if (em->init_conf) {
            if (em->init_conf(cycle, (*(void ***) ctx)[m->ctx_index])
                != SFT_CONF_OK)
            {
                return SFT_CONF_ERROR;
            }
        }
    }

    return SFT_CONF_OK;
}


static char *
sft_events_block(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    char        *rv;
    void      ***ctx;
    sft_conf_t   pcf;

    (void) cmd;

    if (*(void **) conf) {
        return "is duplicate";
    }

    if (sft_events_create_ctx(cf->cycle, (void ***) &ctx) != SFT_CONF_OK) {
        return SFT_CONF_ERROR;
    }

    *(void **) conf = ctx;

    pcf = *cf;
    cf->ctx = ctx;
    cf->module_type = SFT_EVENT_MODULE;
    cf->cmd_type = SFT_EVENT_CONF;

    rv = sft_conf_parse(cf, NULL);

    *cf = pcf;

    if (rv != SFT_CONF_OK) {
        return rv;
    }

    return sft_events_init_ctx(cf->cycle, (void **) ctx);
}


/* an event module's configuration, the block's defaults when it is absent */

void *
sft_event_get_module_conf(sft_cycle_t *cycle, sft_module_t *module)
{
    void  ***ctx;

    ctx = (void ***) cycle->conf_ctx[sft_events_module.index];

    if (ctx == NULL) {
        if (sft_events_create_ctx(cycle, (void ***) &ctx) != SFT_CONF_OK
            || sft_events_init_ctx(cycle, (void **) ctx) != SFT_CONF_OK)
        {
            return NULL;
        }

        cycle->conf_ctx[sft_events_module.index] = (void ***) ctx;
    }

    return (*ctx)[module->ctx_index];
}


sft_event_conf_t *
sft_event_get_conf(sft_cycle_t *cycle)
{
    return sft_event_get_module_conf(cycle, &sft_event_core_module);
}


static void *
sft_event_core_create_conf(sft_cycle_t *cycle)
{
    sft_event_conf_t  *ecf;

    ecf = sft_palloc(cycle->pool, sizeof(sft_event_conf_t));
    if (ecf == NULL) {
        return NULL;
    }

    ecf->connections = SFT_CONF_UNSET_UINT;
    ecf->multi_accept = SFT_CONF_UNSET;

    return ecf;
}


static char *
sft_event_core_init_conf(sft_cycle_t *cycle, void *conf)
{
    sft_event_conf_t  *ecf = conf;

    (void) cycle;

    sft_conf_init_uint_value(ecf->connections, 1024);
    sft_conf_init_value(ecf->multi_accept, 1);

    if (ecf->connections < 16) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "\"worker_connections\" must be at least 16");
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static sft_int_t
sft_event_process_init(sft_cycle_t *cycle)
{
    sft_uint_t         i;
    sft_listening_t   *ls;
    sft_connection_t  *c;
    sft_event_conf_t  *ecf;

    ecf = sft_event_get_conf(cycle);
    if (ecf == NULL) {
        return SFT_ERROR;
    }

    if (sft_event_init(cycle, ecf->connections) != SFT_OK) {
        return SFT_ERROR;
    }

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {
        c = sft_get_connection(ls[i].fd, cycle->log);
        if (c == NULL) {
            return SFT_ERROR;
        }

        c->listening = &ls[i];
        ls[i].connection = c;

        c->read->accept = 1;
        c->read->handler = sft_event_accept;

        if (sft_event_add_listening(&ls[i]) != SFT_OK) {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


/* the epoll set and the connection slots of this process */

sft_int_t
sft_event_init(sft_cycle_t *cycle, sft_uint_t connections)
{
    sft_uint_t         i;
    sft_event_t       *rev, *wev;
    sft_connection_t  *c, *next;

    sft_time_update();

    sft_epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (sft_epoll_fd == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "epoll_create1() failed");
        return SFT_ERROR;
    }

    /* a few slots beyond the limit for the channel and notify descriptors */

    cycle->connection_n = connections + 16;

    cycle->connections = sft_alloc(sizeof(sft_connection_t)
                                   * cycle->connection_n, cycle->log);
    cycle->read_events = sft_calloc(sizeof(sft_event_t) * cycle->connection_n,
                                    cycle->log);
    cycle->write_events = sft_calloc(sizeof(sft_event_t)
                                     * cycle->connection_n, cycle->log);

    if (cycle->connections == NULL || cycle->read_events == NULL
        || cycle->write_events == NULL)
    {
        return SFT_ERROR;
    }

    c = cycle->connections;
    rev = cycle->read_events;
    wev = cycle->write_events;

    i = cycle->connection_n;
    next = NULL;

    do {
        i--;

        c[i].data = next;
        c[i].read = &rev[i];
        c[i].write = &wev[i];
        c[i].fd = SFT_INVALID_FILE;
        rev[i].closed = 1;
        rev[i].instance = 1;

        next = &c[i];
    } while (i);

    cycle->free_connections = next;
    cycle->free_connection_n = cycle->connection_n;

    return SFT_OK;
}


sft_int_t
sft_event_add_conn(sft_connection_t *c)
{
    struct epoll_event  ee;

    ee.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
    ee.data.ptr = (void *) ((uintptr_t) c | c->read->instance);

    if (epoll_ctl(sft_epoll_fd, EPOLL_CTL_ADD, c->fd, &ee) == -1) {
        sft_log_error(SFT_LOG_ALERT, c->log, sft_errno,
                      "epoll_ctl(EPOLL_CTL_ADD, %d) failed", c->fd);
        return SFT_ERROR;
    }

    c->read->active = 1;
    c->write->active = 1;

    return SFT_OK;
}


/*
 * A descriptor another library owns and polls through us (libcurl's
 * sockets): level-triggered, as such libraries expect, with the interest
 * changed at will; SFT_EVENT_NONE leaves the epoll set.
 */

sft_int_t
sft_event_watch(sft_connection_t *c, sft_uint_t events)
{
    int                 op;
    struct epoll_event  ee;

    if (c->read->active || c->write->active) {
        op = (events == SFT_EVENT_NONE) ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;

    } else if (events == SFT_EVENT_NONE) {
        return SFT_OK;

    } else {
        op = EPOLL_CTL_ADD;
    }

    ee.events = ((events & SFT_EVENT_READ) ? EPOLLIN | EPOLLRDHUP : 0)
                | ((events & SFT_EVENT_WRITE) ? EPOLLOUT : 0);
    ee.data.ptr = (void *) ((uintptr_t) c | c->read->instance);

    if (epoll_ctl(sft_epoll_fd, op, c->fd, &ee) == -1) {
        sft_log_error(SFT_LOG_ALERT, c->log, sft_errno,
                      "epoll_ctl(%d, %d) failed", op, c->fd);
        return SFT_ERROR;
    }

    c->read->active = (events & SFT_EVENT_READ) ? 1 : 0;
    c->write->active = (events & SFT_EVENT_WRITE) ? 1 : 0;

    if (!c->read->active && c->read->posted) {
        sft_delete_posted_event(c->read);
    }

    if (!c->write->active && c->write->posted) {
        sft_delete_posted_event(c->write);
    }

    return SFT_OK;
}


/*
 * The end of watching: out of the epoll set and the connection slot freed,
 * the descriptor left open to its owner.
 */

void
sft_event_unwatch(sft_connection_t *c)
{
    (void) sft_event_watch(c, SFT_EVENT_NONE);

    sft_del_timer(c->read);
    sft_del_timer(c->write);

    c->read->closed = 1;
    c->write->closed = 1;
    c->fd = SFT_INVALID_FILE;

    sft_free_connection(c);
}


/* level-triggered, and with EPOLLEXCLUSIVE so one worker wakes per client */

sft_int_t
sft_event_add_listening(sft_listening_t *ls)
{
    sft_connection_t    *c;
    struct epoll_event   ee;

    c = ls->connection;

    ee.events = EPOLLIN | EPOLLEXCLUSIVE;
    ee.data.ptr = (void *) ((uintptr_t) c | c->read->instance);

    if (epoll_ctl(sft_epoll_fd, EPOLL_CTL_ADD, c->fd, &ee) == -1) {
        sft_log_error(SFT_LOG_ALERT, c->log, sft_errno,
                      "epoll_ctl(EPOLL_CTL_ADD, %d) failed", c->fd);
        return SFT_ERROR;
    }

    c->read->active = 1;

    return SFT_OK;
}


sft_int_t
sft_event_del_listening(sft_listening_t *ls)
{
    sft_connection_t  *c;

    c = ls->connection;

    if (epoll_ctl(sft_epoll_fd, EPOLL_CTL_DEL, c->fd, NULL) == -1) {
        sft_log_error(SFT_LOG_ALERT, c->log, sft_errno,
                      "epoll_ctl(EPOLL_CTL_DEL, %d) failed", c->fd);
        return SFT_ERROR;
    }

    c->read->active = 0;

    if (c->read->posted) {
        sft_delete_posted_event(c->read);
    }

    return SFT_OK;
}


/*
 * A graceful stop: leave the epoll set first, so no new wake-up can reach
 * this worker, then accept what is already queued -- a wake-up that came
 * here just before must not be lost -- and only then close.
 */

void
sft_event_stop_accepting(sft_cycle_t *cycle)
{
    sft_uint_t        i;
    sft_listening_t  *ls;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {
        if (ls[i].connection == NULL) {
            continue;
        }

        sft_del_timer(ls[i].connection->read);

        if (ls[i].connection->read->active) {
            (void) sft_event_del_listening(&ls[i]);
        }

        sft_event_accept(ls[i].connection->read);
    }

    sft_close_listening_sockets(cycle);
}


sft_connection_t *
sft_event_add_notify(sft_cycle_t *cycle, sft_fd_t fd,
    sft_event_handler_pt handler, void *data)
{
    sft_connection_t    *c;
    struct epoll_event   ee;

    c = sft_get_connection(fd, cycle->log);
    if (c == NULL) {
        return NULL;
    }

    c->data = data;
    c->read->handler = handler;

    ee.events = EPOLLIN;
    ee.data.ptr = (void *) ((uintptr_t) c | c->read->instance);

    if (epoll_ctl(sft_epoll_fd, EPOLL_CTL_ADD, fd, &ee) == -1) {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "epoll_ctl(EPOLL_CTL_ADD, %d) failed", fd);
        sft_free_connection(c);
        return NULL;
    }

    c->read->active = 1;

    return c;
}


sft_int_t
sft_event_add_channel(sft_cycle_t *cycle, sft_fd_t fd)
{
    if (sft_event_add_notify(cycle, fd, sft_event_channel_handler, cycle)
        == NULL)
    {
        return SFT_ERROR;
    }

    return SFT_OK;
}


static void
sft_event_channel_handler(sft_event_t *ev)
{
    int                cmd;
    sft_int_t          rc;
    sft_connection_t  *c;

    c = ev->data;

    for ( ;; ) {
        rc = sft_channel_read(c->fd, &cmd, ev->log);

        if (rc == SFT_AGAIN) {
            return;
        }

        if (rc != SFT_OK) {
            /* the master is gone: finish the sessions and leave */
            (void) epoll_ctl(sft_epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
            sft_close_connection(c);
            sft_quit = 1;
            return;
        }

        switch (cmd) {
        case SFT_CMD_QUIT: sft_quit = 1; break;
        case SFT_CMD_TERMINATE: sft_terminate = 1; break;
        case SFT_CMD_REOPEN: sft_reopen = 1; break;
        default: break;
        }
    }
}


void
sft_event_accept(sft_event_t *ev)
{
    int                 fd, on;
    socklen_t           socklen;
    sft_log_t          *log;
    sft_listening_t    *ls;
    sft_connection_t   *lc, *c;
    struct sockaddr_storage  sa;
    u_char              text[64];
    size_t              len;

    lc = ev->data;
    ls = lc->listening;

    if (ev->timedout) {
        ev->timedout = 0;

        if (sft_event_add_listening(ls) != SFT_OK) {
            return;
        }
    }

    for ( ;; ) {
        socklen = sizeof(struct sockaddr_storage);

        fd = accept4(lc->fd, (struct sockaddr *) &sa, &socklen,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd == -1) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return;
            }

            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }

            if (errno == EMFILE || errno == ENFILE) {
                sft_log_error(SFT_LOG_CRIT, ev->log, sft_errno,
                              "accept4() on %.*s failed, not accepting "
                              "for %d ms", SFT_STR_FMT(&ls->addr_text),
                              SFT_ACCEPT_PAUSE);
                sft_event_pause_accepting((sft_cycle_t *) sft_cycle);
                return;
            }

            sft_log_error(SFT_LOG_ALERT, ev->log, sft_errno,
                          "accept4() on %.*s failed",
                          SFT_STR_FMT(&ls->addr_text));
            return;
        }

        sft_stat_add(sft_stat_conn_accepted, 1);

        /*
         * Protocols answer with small writes (FTP's 150 then 226): with
         * Nagle the second one waits for the client's delayed ACK, 40 ms.
         */

        if (sa.ss_family == AF_INET || sa.ss_family == AF_INET6) {
            on = 1;
            (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(int));
        }

        c = sft_get_connection(fd, ev->log);

        if (c == NULL) {
            sft_stat_add(sft_stat_conn_dropped, 1);
            close(fd);
            return;
        }

        c->pool = sft_create_pool(2048, ev->log);
        if (c->pool == NULL) {
            sft_free_connection(c);
            close(fd);
            return;
        }

        log = sft_palloc(c->pool, sizeof(sft_log_t));
        if (log == NULL) {
            sft_destroy_pool(c->pool);
            sft_free_connection(c);
            close(fd);
            return;
        }

        *log = *ls->log;
        log->connection = sft_connection_counter++;
        log->handler = NULL;
        log->data = NULL;
        log->action = NULL;

        c->log = log;
        c->read->log = log;
        c->write->log = log;
        c->number = log->connection;
        c->listening = ls;

        sft_memcpy(&c->sockaddr, &sa, socklen);
        c->socklen = socklen;

        len = sft_sock_ntop((struct sockaddr *) &sa, text, sizeof(text), 0);
        c->addr_text.data = sft_pnalloc(c->pool, len);
        if (c->addr_text.data == NULL) {
            sft_destroy_pool(c->pool);
            c->pool = NULL;
            sft_close_connection(c);
            return;
        }

        sft_memcpy(c->addr_text.data, text, len);
        c->addr_text.len = len;

        c->session = 1;
        sft_event_sessions++;
        sft_stat_add(sft_stat_conn_active, 1);

        if (sft_event_add_conn(c) != SFT_OK) {
            sft_destroy_pool(c->pool);
            c->pool = NULL;
            sft_close_connection(c);
            return;
        }

        c->write->ready = 1;

        sft_stat_add(sft_stat_conn_handled, 1);

        if (ls->proxy_protocol) {
            sft_event_proxy_protocol(c);
            continue;
        }

        ls->handler(c);
    }
}


/*
 * Out of descriptors, the queued client stays queued and the level-triggered
 * listener would wake this worker again at once: leave the epoll set for a
 * while, a timer on each listener brings it back (sft_event_accept).
 */

static void
sft_event_pause_accepting(sft_cycle_t *cycle)
{
    sft_uint_t        i;
    sft_listening_t  *ls;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {
        if (ls[i].connection == NULL || !ls[i].connection->read->active) {
            continue;
        }

        if (sft_event_del_listening(&ls[i]) == SFT_OK) {
            sft_add_timer(ls[i].connection->read, SFT_ACCEPT_PAUSE);
        }
    }
}


void
sft_post_event(sft_event_t *ev)
{
    if (ev->posted) {
        return;
    }

    ev->posted = 1;
    ev->posted_next = NULL;
    ev->posted_prev = sft_posted_tail;
    *sft_posted_tail = ev;
    sft_posted_tail = &ev->posted_next;
}


void
sft_delete_posted_event(sft_event_t *ev)
{
    if (!ev->posted) {
        return;
    }

    ev->posted = 0;
    *ev->posted_prev = ev->posted_next;

    if (ev->posted_next) {
        ev->posted_next->posted_prev = ev->posted_prev;

    } else {
        sft_posted_tail = ev->posted_prev;
    }
}


static void
sft_event_process_posted(void)
{
    sft_event_t  *ev;

    while (sft_posted_events) {
        ev = sft_posted_events;
        sft_delete_posted_event(ev);
        ev->handler(ev);
    }
}


void
sft_process_events_and_timers(sft_cycle_t *cycle)
{
    int                 i, n, timeout;
    uint32_t            revents;
    sft_uint_t          instance;
    sft_msec_t          timer;
    sft_event_t        *rev, *wev;
    sft_connection_t   *c;
    struct epoll_event  events[SFT_EPOLL_EVENTS];

    timer = sft_event_find_timer();
    timeout = (timer == -1) ? -1 : (int) sft_min(timer, INT_MAX);

    if (sft_posted_events) {
        timeout = 0;
    }

    n = epoll_wait(sft_epoll_fd, events, SFT_EPOLL_EVENTS, timeout);

    sft_time_update();

    if (n == -1) {
        if (errno != EINTR) {
            sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                          "epoll_wait() failed");
        }
        n = 0;
    }

    for (i = 0; i < n; i++) {
        c = events[i].data.ptr;

        instance = (uintptr_t) c & 1;
        c = (sft_connection_t *) ((uintptr_t) c & (uintptr_t) ~1);

        rev = c->read;

        if (c->fd == SFT_INVALID_FILE || rev->instance != instance) {
            continue;   /* a stale event for a closed connection */
        }

        revents = events[i].events;

        if (revents & (EPOLLERR | EPOLLHUP)) {
            revents |= EPOLLIN | EPOLLOUT;
        }

        if ((revents & EPOLLIN) && rev->active) {
            if (revents & EPOLLRDHUP) {
                rev->eof = 0;   /* recv() reports the end itself */
            }

            rev->ready = 1;
            sft_post_event(rev);
        }

        wev = c->write;

        if ((revents & EPOLLOUT) && wev->active) {
            wev->ready = 1;
            sft_post_event(wev);
        }
    }

    sft_event_expire_timers();
    sft_event_process_posted();
}
