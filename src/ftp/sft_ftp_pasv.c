/*
 * sft_ftp_pasv.c -- passive data connections.  PASV and EPSV open a
 * listener on a port from this worker's slice of passive_ports and name
 * it (PASV with the address pasv_address gives the client); the listener
 * takes one connection from the control connection's client and closes.
 * Behind a balancer (a session that came in on a "listen ...
 * proxy_protocol" address), a data connection from one of the balancers
 * starts with a PROXY protocol header too, and its source is the address
 * compared.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>


#define SFT_FTP_MAX_REFUSED  8


static void sft_ftp_data_accept(sft_event_t *ev);
static void sft_ftp_data_proxied(sft_connection_t *dc, const char *refused);
static sft_uint_t sft_ftp_data_refused(sft_ftp_session_t *s,
    struct sockaddr *sa);
static void sft_ftp_data_take(sft_ftp_session_t *s, sft_connection_t *dc);


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


/*
 * The address a PASV reply names to a client: that of the most specific
 * pasv_address network holding the client's address, else that of the
 * pasv_address without a network; a "proxy" rule names dst, the address
 * the client reached the balancer on (NULL: no PROXY header named one);
 * NULL: the control connection's local address.
 */

struct in_addr *
sft_ftp_pasv_lookup(sft_array_t *rules, struct sockaddr *peer,
    struct sockaddr *dst)
{
    sft_uint_t            i;
    sft_ftp_pasv_addr_t  *pa, *best;

    pa = rules->elts;
    best = NULL;

    for (i = 0; i < rules->nelts; i++) {
        if (pa[i].net.family && !sft_cidr_match(&pa[i].net, peer)) {
            continue;
        }

        if (best == NULL || pa[i].bits > best->bits) {
            best = &pa[i];
        }
    }

    if (best == NULL) {
        return NULL;
    }

    if (!best->proxy) {
        return &best->addr;
    }

    if (dst == NULL || dst->sa_family != AF_INET) {
        return NULL;
    }

    return &((struct sockaddr_in *) dst)->sin_addr;
}


sft_int_t
sft_ftp_passive(sft_ftp_session_t *s, sft_uint_t extended)
{
    int                       fd, on;
    u_char                   *a;
    socklen_t                 len;
    sft_uint_t                lo, hi, n, i, start, port, workers;
    sft_connection_t         *c, *lc;
    struct in_addr           *pasv;
    struct sockaddr          *dst;
    sft_core_conf_t          *ccf;
    struct sockaddr_storage   local;

    c = s->connection;

    /* the data connection resumes the control session: keep it fresh */
    sft_ssl_renew_session(c);

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
    s->data.active = 0;

    if (sft_ftp_local_sockaddr(s, &local, &len) != SFT_OK) {
        sft_ftp_reply(s, 425, "Can't open passive connection.");
        return SFT_OK;
    }

    /*
     * what PASV names; behind a balancer the client's family may not be
     * this connection's
     */

    pasv = NULL;

    if (!extended && s->conf->pasv_addrs) {
        dst = (c->proxy && c->proxy->header.socklen)
              ? (struct sockaddr *) &c->proxy->header.dst : NULL;

        pasv = sft_ftp_pasv_lookup(s->conf->pasv_addrs,
                                   (struct sockaddr *) &c->sockaddr, dst);
    }

    if (!extended && pasv == NULL) {
        if (local.ss_family != AF_INET) {
            sft_ftp_reply(s, 522, "PASV is IPv4 only, use EPSV.");
            return SFT_OK;
        }

        pasv = &((struct sockaddr_in *) &local)->sin_addr;
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
    start = (sft_uint_t) (random() ^ sft_pid ^ sft_current_msec) % n;
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

    a = (u_char *) &pasv->s_addr;

    sft_ftp_reply(s, 227, "Entering Passive Mode (%u,%u,%u,%u,%lu,%lu).",
                  a[0], a[1], a[2], a[3],
                  (unsigned long) port >> 8, (unsigned long) port & 0xff);

    return SFT_OK;
}


static void
sft_ftp_data_accept(sft_event_t *ev)
{
    int                       fd;
    socklen_t                 len;
    sft_listening_t          *ls;
    sft_connection_t         *lc, *dc;
    sft_ftp_session_t        *s;
    struct sockaddr_storage   sa;

    lc = ev->data;
    s = lc->data;
    ls = s->connection->listening;

    /* while a balancer's header is read, the next ones wait queued */

    if (ev->write || s->data.proxied) {
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

        /*
         * the balancer speaks for the client in a header; any other peer
         * (a client that reaches this node directly) for itself
         */

        if (ls->proxy_protocol
            && sft_event_proxy_from(ls->proxy_from, (struct sockaddr *) &sa))
        {
            dc = sft_ftp_data_conn(s, fd, &sa, len);

            if (dc != NULL) {
                s->data.proxied = dc;
                sft_event_proxy_read(dc, &s->data.proxy, ls->proxy_timeout,
                                     sft_ftp_data_proxied);
            }

            return;
        }

        if (sft_ftp_same_address((struct sockaddr *) &sa,
                (struct sockaddr *) &s->connection->sockaddr))
        {
            break;
        }

        close(fd);

        if (!sft_ftp_data_refused(s, (struct sockaddr *) &sa)) {
            return;
        }
    }

    dc = sft_ftp_data_conn(s, fd, &sa, len);

    if (dc != NULL) {
        sft_ftp_data_take(s, dc);
    }
}


/* the header of a data connection from the balancer was read or refused */

static void
sft_ftp_data_proxied(sft_connection_t *dc, const char *refused)
{
    u_char              text[INET6_ADDRSTRLEN];
    size_t              len;
    sft_uint_t          more;
    sft_ftp_session_t  *s;

    s = dc->data;
    s->data.proxied = NULL;

    if (refused == NULL
        && sft_ftp_same_address((struct sockaddr *) &dc->sockaddr,
                                (struct sockaddr *) &s->connection->sockaddr))
    {
        sft_ftp_data_take(s, dc);
        return;
    }

    if (refused) {
        len = sft_sock_ntop((struct sockaddr *) &dc->sockaddr, text,
                            sizeof(text), 0);

        sft_log_error(SFT_LOG_NOTICE, s->log, 0,
                      "PROXY protocol on passive port %lu from %.*s "
                      "refused: %s", (unsigned long) s->data.port,
                      (int) len, text, refused);

        more = ++s->data.refused < SFT_FTP_MAX_REFUSED;

        if (!more) {
            sft_ftp_data_close(s);
        }

    } else {
        more = sft_ftp_data_refused(s, (struct sockaddr *) &dc->sockaddr);
    }

    sft_close_connection(dc);

    /* those that came meanwhile */

    if (more) {
        sft_ftp_data_accept(s->data.listener->read);
    }
}


/*
 * A data connection from another client: logged and counted; whether the
 * listener stays open for more
 */

static sft_uint_t
sft_ftp_data_refused(sft_ftp_session_t *s, struct sockaddr *sa)
{
    u_char  text[64];
    size_t  len;

    len = sft_sock_ntop(sa, text, sizeof(text), 1);

    sft_log_error(SFT_LOG_NOTICE, s->log, 0,
                  "data connection from a different address %.*s refused",
                  (int) len, text);

    if (++s->data.refused >= SFT_FTP_MAX_REFUSED) {
        sft_ftp_data_close(s);
        return 0;
    }

    return 1;
}


/* one connection: the listener goes */

static void
sft_ftp_data_take(sft_ftp_session_t *s, sft_connection_t *dc)
{
    sft_close_connection(s->data.listener);
    s->data.listener = NULL;

    s->data.conn = dc;

    sft_ftp_data_connected(s);
}
