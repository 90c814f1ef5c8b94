/*
 * sft_ftp_data.c -- passive data channels: PASV and EPSV open a listener
 * on a port from this worker's slice of passive_ports, accept one
 * connection from the control connection's peer address only (others are
 * closed and logged), and close the listener after it.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>


#define SFT_FTP_MAX_REFUSED  8


static void sft_ftp_data_accept(sft_event_t *ev);


/*
 * Each worker owns a slice of the range, so a port one worker listens on
 * is never tried by another; slot is the process slot, taken modulo the
 * number of workers.
 */

void
sft_ftp_passive_slice(sft_uint_t min, sft_uint_t max, sft_uint_t slot,
    sft_uint_t workers, sft_uint_t *lo, sft_uint_t *hi)
{
    sft_uint_t  total, per, i;

    total = max - min + 1;

    if (workers <= 1 || total < workers) {
        *lo = min;
        *hi = max;
        return;
    }

    per = total / workers;
    i = slot % workers;

    *lo = min + i * per;
    *hi = (i == workers - 1) ? max : *lo + per - 1;
}


/* the data connection must come from the control connection's address */

sft_uint_t
sft_ftp_same_address(struct sockaddr *a, struct sockaddr *b)
{
    if (a->sa_family != b->sa_family) {
        return 0;
    }

    if (a->sa_family == AF_INET) {
        return ((struct sockaddr_in *) a)->sin_addr.s_addr
               == ((struct sockaddr_in *) b)->sin_addr.s_addr;
    }

    if (a->sa_family == AF_INET6) {
        return sft_memcmp(&((struct sockaddr_in6 *) a)->sin6_addr,
                          &((struct sockaddr_in6 *) b)->sin6_addr,
                          sizeof(struct in6_addr)) == 0;
    }

    return 0;
}


static void
sft_ftp_port_set(struct sockaddr *sa, sft_uint_t port)
{
    if (sa->sa_family == AF_INET6) {
        ((struct sockaddr_in6 *) sa)->sin6_port = htons((in_port_t) port);

    } else {
        ((struct sockaddr_in *) sa)->sin_port = htons((in_port_t) port);
    }
}


static sft_uint_t
sft_ftp_port_get(struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET6) {
        return ntohs(((struct sockaddr_in6 *) sa)->sin6_port);
    }

    return ntohs(((struct sockaddr_in *) sa)->sin_port);
}


sft_int_t
sft_ftp_passive(sft_ftp_session_t *s, sft_uint_t extended)
{
    int                       fd, on;
    u_char                   *a;
    socklen_t                 len;
    sft_uint_t                lo, hi, n, i, start, port, workers;
    sft_connection_t         *c, *lc;
    sft_core_conf_t          *ccf;
    struct sockaddr_storage   local;

    c = s->connection;

    if (extended && s->arg.len) {
        if (sft_str_caseeq(&s->arg, "ALL")) {
            s->epsv_all = 1;
            sft_ftp_reply(s, 200, "EPSV ALL ok.");
            return SFT_OK;
        }

        if (!((sft_str_eq(&s->arg, "1") && c->sockaddr.ss_family == AF_INET)
              || (sft_str_eq(&s->arg, "2")
                  && c->sockaddr.ss_family == AF_INET6)))
        {
            sft_ftp_reply(s, 522, "Network protocol not supported, use (%d).",
                          c->sockaddr.ss_family == AF_INET6 ? 2 : 1);
            return SFT_OK;
        }
    }

    if (!extended && s->epsv_all) {
        sft_ftp_reply(s, 503, "PASV not allowed after EPSV ALL.");
        return SFT_OK;
    }

    if (!extended && c->sockaddr.ss_family != AF_INET) {
        sft_ftp_reply(s, 522, "PASV is IPv4 only, use EPSV.");
        return SFT_OK;
    }

    sft_ftp_data_close(s);

    len = sizeof(local);

    if (getsockname(c->fd, (struct sockaddr *) &local, &len) == -1) {
        sft_log_error(SFT_LOG_ERR, s->log, sft_errno, "getsockname() failed");
        sft_ftp_reply(s, 425, "Can't open passive connection.");
        return SFT_OK;
    }

    fd = socket(local.ss_family, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
    if (fd == -1) {
        sft_log_error(SFT_LOG_ERR, s->log, sft_errno, "socket() failed");
        sft_ftp_reply(s, 425, "Can't open passive connection.");
        return SFT_OK;
    }

    /* the ports of earlier data connections may be in TIME_WAIT */

    on = 1;

    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(int)) == -1) {
        sft_log_error(SFT_LOG_ERR, s->log, sft_errno,
                      "setsockopt(SO_REUSEADDR) failed");
    }

    if (s->conf->passive_min) {
        ccf = (sft_core_conf_t *) sft_get_conf(((sft_cycle_t *) sft_cycle)
                                               ->conf_ctx, sft_core_module);
        workers = ccf->worker_processes > 0 ? ccf->worker_processes : 1;

        sft_ftp_passive_slice(s->conf->passive_min, s->conf->passive_max,
                              sft_process_slot > 0 ? sft_process_slot : 0,
                              workers, &lo, &hi);
    } else {
        lo = 0;
        hi = 0;
    }

    n = hi - lo + 1;
    start = (sft_uint_t) (random() ^ getpid() ^ sft_current_msec) % n;
    port = 0;

    for (i = 0; i < sft_min(n, (sft_uint_t) SFT_FTP_MAX_PASV_TRIES); i++) {
        port = lo ? lo + (start + i) % n : 0;

        sft_ftp_port_set((struct sockaddr *) &local, port);

        if (bind(fd, (struct sockaddr *) &local, len) == 0) {
            break;
        }

        if (errno != EADDRINUSE || lo == 0) {
            i = SFT_FTP_MAX_PASV_TRIES;
            break;
        }
    }

    if (i >= sft_min(n, (sft_uint_t) SFT_FTP_MAX_PASV_TRIES)
        || listen(fd, 1) == -1)
    {
        sft_log_error(SFT_LOG_ERR, s->log, sft_errno,
                      "no passive port free in %lu-%lu",
                      (unsigned long) lo, (unsigned long) hi);
        close(fd);
        sft_ftp_reply(s, 425, "Can't open passive connection.");
        return SFT_OK;
    }

    if (port == 0) {
        len = sizeof(local);
        (void) getsockname(fd, (struct sockaddr *) &local, &len);
        port = sft_ftp_port_get((struct sockaddr *) &local);
    }

    lc = sft_get_connection(fd, s->log);
    if (lc == NULL) {
        close(fd);
        sft_ftp_reply(s, 425, "Can't open passive connection.");
        return SFT_OK;
    }

    lc->data = s;
    lc->read->handler = sft_ftp_data_accept;
    lc->write->handler = sft_ftp_data_accept;

    if (sft_event_add_conn(lc) != SFT_OK) {
        sft_close_connection(lc);
        sft_ftp_reply(s, 425, "Can't open passive connection.");
        return SFT_OK;
    }

    sft_add_timer(lc->read, s->conf->data_timeout);

    s->data.listener = lc;
    s->data.port = port;
    s->data.refused = 0;

    if (extended) {
        sft_ftp_reply(s, 229, "Entering Extended Passive Mode (|||%lu|).",
                      (unsigned long) port);
        return SFT_OK;
    }

    if (s->conf->pasv_address.len) {
        a = (u_char *) &s->conf->pasv_addr.s_addr;

    } else {
        a = (u_char *) &((struct sockaddr_in *) &local)->sin_addr.s_addr;
    }

    sft_ftp_reply(s, 227, "Entering Passive Mode (%u,%u,%u,%u,%lu,%lu).",
                  a[0], a[1], a[2], a[3],
                  (unsigned long) port >> 8, (unsigned long) port & 0xff);

    return SFT_OK;
}


static void
sft_ftp_data_accept(sft_event_t *ev)
{
    int                       fd;
    u_char                    text[64];
    socklen_t                 len;
    sft_connection_t         *lc, *dc;
    sft_ftp_session_t        *s;
    struct sockaddr_storage   sa;

    lc = ev->data;
    s = lc->data;

    if (ev->write) {
        return;
    }

    if (ev->timedout) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "no data connection in time on port %lu",
                      (unsigned long) s->data.port);
        sft_ftp_data_close(s);

        if (s->transfer && s->transfer->started) {
            sft_ftp_transfer_abort(s, 2);
        }

        return;
    }

    for ( ;; ) {
        len = sizeof(sa);

        fd = accept4(lc->fd, (struct sockaddr *) &sa, &len,
                     SOCK_NONBLOCK|SOCK_CLOEXEC);

        if (fd == -1) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }

            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                sft_log_error(SFT_LOG_ERR, s->log, sft_errno,
                              "accept4() on passive port %lu failed",
                              (unsigned long) s->data.port);
            }

            return;
        }

        if (sft_ftp_same_address((struct sockaddr *) &sa,
                (struct sockaddr *) &s->connection->sockaddr))
        {
            break;
        }

        (void) sft_sock_ntop((struct sockaddr *) &sa, text, sizeof(text) - 1,
                             1);
        text[sizeof(text) - 1] = '\0';

        sft_log_error(SFT_LOG_NOTICE, s->log, 0,
                      "data connection from a different address %s refused",
                      text);
        close(fd);

        if (++s->data.refused >= SFT_FTP_MAX_REFUSED) {
            sft_ftp_data_close(s);
            return;
        }
    }

    /* one connection: the listener goes */

    sft_close_connection(lc);
    s->data.listener = NULL;

    dc = sft_get_connection(fd, s->log);
    if (dc == NULL) {
        close(fd);
        return;
    }

    dc->data = s;
    dc->read->handler = sft_ftp_data_event;
    dc->write->handler = sft_ftp_data_event;
    sft_memcpy(&dc->sockaddr, &sa, len);
    dc->socklen = len;

    if (sft_event_add_conn(dc) != SFT_OK) {
        sft_close_connection(dc);
        return;
    }

    dc->read->ready = 1;
    dc->write->ready = 1;

    s->data.conn = dc;

    sft_add_timer(dc->read, s->conf->data_timeout);

    sft_ftp_transfer_connected(s);
}


void
sft_ftp_data_close(sft_ftp_session_t *s)
{
    if (s->data.listener) {
        sft_close_connection(s->data.listener);
        s->data.listener = NULL;
    }

    if (s->data.conn) {
        sft_close_connection(s->data.conn);
        s->data.conn = NULL;
    }
}
