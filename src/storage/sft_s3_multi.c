/*
 * sft_s3_multi.c -- one libcurl multi handle per worker on the epoll
 * loop: CURLMOPT_SOCKETFUNCTION maps curl's wishes onto watched
 * connection slots, CURLMOPT_TIMERFUNCTION onto an event timer, and
 * every readiness or expiry becomes a curl_multi_socket_action() call,
 * after which finished transfers are handed back.  libcurl may close a
 * socket before it says CURL_POLL_REMOVE of it: CURLOPT_CLOSESOCKETFUNCTION
 * takes the socket out of the epoll set first, while it is still open, and
 * a REMOVE of a socket closed without that callback (one still connecting)
 * has nothing to take out.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_multi.h>


static int sft_s3_multi_socket(CURL *easy, curl_socket_t s, int what,
    void *userp, void *socketp);
static int sft_s3_multi_timer(CURLM *multi, long timeout_ms, void *userp);
static void sft_s3_multi_event(sft_event_t *ev);
static void sft_s3_multi_expire(sft_event_t *ev);
static void sft_s3_multi_action(curl_socket_t s, int action);
static int sft_s3_multi_close(void *data, curl_socket_t s);
static sft_int_t sft_s3_multi_keep(sft_connection_t *c);
static sft_uint_t sft_s3_multi_forget(sft_connection_t *c);


static CURLM        *sft_s3_multi;
static sft_log_t    *sft_s3_multi_log;
static sft_event_t   sft_s3_multi_timer_ev;
static sft_uint_t    sft_s3_curl_inited;

/* the connection slots of curl's sockets, open and watched */
static sft_connection_t  **sft_s3_multi_conns;
static sft_uint_t          sft_s3_multi_nconns;
static sft_uint_t          sft_s3_multi_cap;


sft_int_t
sft_s3_multi_init(sft_log_t *log)
{
    if (sft_s3_multi) {
        return SFT_OK;
    }

    if (!sft_s3_curl_inited) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            sft_log_error(SFT_LOG_EMERG, log, 0, "curl_global_init() failed");
            return SFT_ERROR;
        }

        sft_s3_curl_inited = 1;
    }

    sft_s3_multi = curl_multi_init();
    if (sft_s3_multi == NULL) {
        sft_log_error(SFT_LOG_EMERG, log, 0, "curl_multi_init() failed");
        return SFT_ERROR;
    }

    sft_s3_multi_log = log;

    sft_memzero(&sft_s3_multi_timer_ev, sizeof(sft_event_t));
    sft_s3_multi_timer_ev.handler = sft_s3_multi_expire;
    sft_s3_multi_timer_ev.log = log;

    (void) curl_multi_setopt(sft_s3_multi, CURLMOPT_SOCKETFUNCTION,
                             sft_s3_multi_socket);
    (void) curl_multi_setopt(sft_s3_multi, CURLMOPT_TIMERFUNCTION,
                             sft_s3_multi_timer);
    (void) curl_multi_setopt(sft_s3_multi, CURLMOPT_MAXCONNECTS,
                             (long) SFT_S3_MAX_CONNECTS);
    (void) curl_multi_setopt(sft_s3_multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                             (long) SFT_S3_MAX_HOST_CONNECTS);

    return SFT_OK;
}


sft_int_t
sft_s3_multi_add(sft_s3_transfer_t *t)
{
    CURLMcode  rc;

    (void) curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
    (void) curl_easy_setopt(t->easy, CURLOPT_CLOSESOCKETFUNCTION,
                            sft_s3_multi_close);

    rc = curl_multi_add_handle(sft_s3_multi, t->easy);
    if (rc != CURLM_OK) {
        sft_log_error(SFT_LOG_ALERT, sft_s3_multi_log, 0,
                      "curl_multi_add_handle() failed: %s",
                      curl_multi_strerror(rc));
        return SFT_ERROR;
    }

    return SFT_OK;
}


void
sft_s3_multi_remove(sft_s3_transfer_t *t)
{
    (void) curl_multi_remove_handle(sft_s3_multi, t->easy);
}


/* at worker exit: the transfers were cancelled by their owners */

void
sft_s3_multi_done(void)
{
    if (sft_s3_multi == NULL) {
        return;
    }

    sft_del_timer(&sft_s3_multi_timer_ev);
    (void) curl_multi_cleanup(sft_s3_multi);
    sft_s3_multi = NULL;

    sft_free(sft_s3_multi_conns);
    sft_s3_multi_conns = NULL;
    sft_s3_multi_nconns = 0;
    sft_s3_multi_cap = 0;
}


static int
sft_s3_multi_socket(CURL *easy, curl_socket_t s, int what, void *userp,
    void *socketp)
{
    sft_uint_t         events;
    sft_connection_t  *c;

    (void) easy;
    (void) userp;

    c = socketp;

    if (what == CURL_POLL_REMOVE) {
        if (c) {
            (void) sft_s3_multi_forget(c);

            /*
             * libcurl 7.88 closes a socket that is still connecting
             * without the close callback and says REMOVE after: the
             * kernel dropped it from the set with its last descriptor
             */

            if (fcntl(s, F_GETFD) == -1 && errno == EBADF) {
                c->read->active = 0;
                c->write->active = 0;
            }

            sft_event_unwatch(c);
            (void) curl_multi_assign(sft_s3_multi, s, NULL);
        }

        return 0;
    }

    if (c == NULL) {
        c = sft_get_connection(s, sft_s3_multi_log);
        if (c == NULL) {
            return -1;
        }

        if (sft_s3_multi_keep(c) != SFT_OK) {
            sft_free_connection(c);
            return -1;
        }

        c->read->handler = sft_s3_multi_event;
        c->write->handler = sft_s3_multi_event;

        (void) curl_multi_assign(sft_s3_multi, s, c);
    }

    events = ((what & CURL_POLL_IN) ? SFT_EVENT_READ : 0)
             | ((what & CURL_POLL_OUT) ? SFT_EVENT_WRITE : 0);

    return (sft_event_watch(c, events) == SFT_OK) ? 0 : -1;
}


/* curl's single timer; 0 runs it on the next turn, never from inside curl */

static int
sft_s3_multi_timer(CURLM *multi, long timeout_ms, void *userp)
{
    (void) multi;
    (void) userp;

    if (timeout_ms < 0) {
        sft_del_timer(&sft_s3_multi_timer_ev);
        return 0;
    }

    sft_add_timer(&sft_s3_multi_timer_ev, (sft_msec_t) timeout_ms);

    return 0;
}


static void
sft_s3_multi_event(sft_event_t *ev)
{
    sft_connection_t  *c;

    c = ev->data;

    sft_s3_multi_action(c->fd, ev->write ? CURL_CSELECT_OUT : CURL_CSELECT_IN);
}


static void
sft_s3_multi_expire(sft_event_t *ev)
{
    (void) ev;

    sft_s3_multi_action(CURL_SOCKET_TIMEOUT, 0);
}


static void
sft_s3_multi_action(curl_socket_t s, int action)
{
    int                 running, left;
    CURL               *easy;
    CURLcode            result;
    CURLMsg            *msg;
    sft_s3_transfer_t  *t;

    (void) curl_multi_socket_action(sft_s3_multi, s, action, &running);

    while ((msg = curl_multi_info_read(sft_s3_multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE) {
            continue;
        }

        easy = msg->easy_handle;
        result = msg->data.result;
        t = NULL;

        (void) curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **) &t);
        (void) curl_multi_remove_handle(sft_s3_multi, easy);

        if (t) {
            t->done(t, result);
        }
    }
}


/*
 * A socket curl closes: out of the epoll set while still open (its slot
 * stays for the CURL_POLL_REMOVE that may follow, which then has nothing
 * to take out), then closed.
 */

static int
sft_s3_multi_close(void *data, curl_socket_t s)
{
    sft_uint_t         i;
    sft_connection_t  *c;

    (void) data;

    for (i = 0; i < sft_s3_multi_nconns; i++) {
        c = sft_s3_multi_conns[i];

        if (c->fd == s) {
            (void) sft_s3_multi_forget(c);
            (void) sft_event_watch(c, SFT_EVENT_NONE);
            break;
        }
    }

    return close(s);
}


static sft_int_t
sft_s3_multi_keep(sft_connection_t *c)
{
    sft_uint_t          cap;
    sft_connection_t  **conns;

    if (sft_s3_multi_nconns == sft_s3_multi_cap) {
        cap = sft_s3_multi_cap ? 2 * sft_s3_multi_cap : 16;

        conns = sft_alloc(cap * sizeof(sft_connection_t *), sft_s3_multi_log);
        if (conns == NULL) {
            return SFT_ERROR;
        }

        if (sft_s3_multi_nconns) {
            sft_memcpy(conns, sft_s3_multi_conns,
                       sft_s3_multi_nconns * sizeof(sft_connection_t *));
        }

        sft_free(sft_s3_multi_conns);
        sft_s3_multi_conns = conns;
        sft_s3_multi_cap = cap;
    }

    sft_s3_multi_conns[sft_s3_multi_nconns++] = c;

    return SFT_OK;
}


/* 1 when c was kept, now no longer */

static sft_uint_t
sft_s3_multi_forget(sft_connection_t *c)
{
    sft_uint_t  i;

    for (i = 0; i < sft_s3_multi_nconns; i++) {
        if (sft_s3_multi_conns[i] == c) {
            sft_s3_multi_conns[i] = sft_s3_multi_conns[--sft_s3_multi_nconns];
            return 1;
        }
    }

    return 0;
}
