/*
 * sft_ftp_data.c -- data channels.  Passive: PASV and EPSV open a listener
 * on a port from this worker's slice of passive_ports, accept one
 * connection from the control connection's peer address only (others are
 * closed and logged), and close the listener after it.  Active: PORT and
 * EPRT name an address that must be the control connection's peer with a
 * port >= 1024 (vsftpd's bounce rule), and the worker connects to it
 * without blocking when a transfer starts.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>


#define SFT_FTP_MAX_REFUSED  8

/*
 * At most this much of a download waits unsent in the data socket: the
 * worker is woken to write more instead of queueing megabytes that the
 * peer's acknowledgements then push out from the peer's side. In flight
 * data (the congestion window) is not limited. 1 GiB on loopback, 2
 * cores: FTP 1345-1559 -> 2077-2237 MB/s at 0.25 instead of 0.7 server
 * CPU-s; FTPS 750-765 -> 810-1030 MB/s with a third less client CPU.
 */
#define SFT_FTP_DATA_NOTSENT_LOWAT  (64 * 1024)


static void sft_ftp_data_accept(sft_event_t *ev);
static void sft_ftp_data_connect_handler(sft_event_t *ev);
static void sft_ftp_data_connected(sft_ftp_session_t *s);
static void sft_ftp_data_start(sft_ftp_session_t *s);
static void sft_ftp_data_tls_done(sft_connection_t *dc);
static void sft_ftp_data_tls_closed(sft_connection_t *dc);


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
 * pasv_address without a network; NULL: the control connection's local
 * address.
 */

struct in_addr *
sft_ftp_pasv_lookup(sft_array_t *rules, struct sockaddr *peer)
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

    return best ? &best->addr : NULL;
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
    struct in_addr           *pasv;
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

    pasv = NULL;

    if (s->conf->pasv_addrs) {
        pasv = sft_ftp_pasv_lookup(s->conf->pasv_addrs,
                                   (struct sockaddr *) &c->sockaddr);
    }

    if (pasv) {
        a = (u_char *) &pasv->s_addr;

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

    s->data.conn = dc;

    sft_ftp_data_connected(s);
}


/*
 * "h1,h2,h3,h4,p1,p2" (RFC 959): SFT_OK with sa filled, or SFT_ERROR
 */

sft_int_t
sft_ftp_parse_port(u_char *p, size_t len, struct sockaddr_storage *sa,
    socklen_t *salen)
{
    u_char               *end, v[6];
    sft_uint_t            i, n, digits;
    struct sockaddr_in   *sin;

    end = p + len;

    for (i = 0; i < 6; i++) {
        n = 0;
        digits = 0;

        while (p < end && *p >= '0' && *p <= '9') {
            if (++digits > 3) {
                return SFT_ERROR;
            }

            n = n * 10 + (*p++ - '0');
        }

        if (digits == 0 || n > 255) {
            return SFT_ERROR;
        }

        v[i] = (u_char) n;

        if (i < 5) {
            if (p == end || *p != ',') {
                return SFT_ERROR;
            }

            p++;
        }
    }

    if (p != end) {
        return SFT_ERROR;
    }

    sft_memzero(sa, sizeof(struct sockaddr_storage));

    sin = (struct sockaddr_in *) sa;
    sin->sin_family = AF_INET;
    sft_memcpy(&sin->sin_addr.s_addr, v, 4);
    sin->sin_port = htons((in_port_t) (v[4] * 256 + v[5]));

    *salen = sizeof(struct sockaddr_in);

    return SFT_OK;
}


/*
 * "<d><af><d><addr><d><port><d>" (RFC 2428), d any of 33-126: SFT_OK,
 * SFT_ERROR if malformed, SFT_DECLINED for a family other than 1 and 2
 */

sft_int_t
sft_ftp_parse_eprt(u_char *p, size_t len, struct sockaddr_storage *sa,
    socklen_t *salen)
{
    u_char                *end, *a, d;
    sft_uint_t             af, port, digits;
    struct sockaddr_in    *sin;
    struct sockaddr_in6   *sin6;
    char                   text[INET6_ADDRSTRLEN + 1];

    end = p + len;

    if (len < 7 || *p < 33 || *p > 126) {
        return SFT_ERROR;
    }

    d = *p++;

    /* the family: one or more digits */

    af = 0;
    digits = 0;

    while (p < end && *p >= '0' && *p <= '9') {
        if (++digits > 3) {
            return SFT_ERROR;
        }

        af = af * 10 + (*p++ - '0');
    }

    if (digits == 0 || p == end || *p++ != d) {
        return SFT_ERROR;
    }

    /* the address */

    a = p;

    while (p < end && *p != d) {
        p++;
    }

    if (p == end || p == a || (size_t) (p - a) > INET6_ADDRSTRLEN - 1) {
        return SFT_ERROR;
    }

    sft_memcpy(text, a, p - a);
    text[p - a] = '\0';
    p++;

    /* the port */

    port = 0;
    digits = 0;

    while (p < end && *p >= '0' && *p <= '9') {
        if (++digits > 5) {
            return SFT_ERROR;
        }

        port = port * 10 + (*p++ - '0');
    }

    if (digits == 0 || port == 0 || port > 65535 || p == end || *p++ != d
        || p != end)
    {
        return SFT_ERROR;
    }

    if (af != 1 && af != 2) {
        return SFT_DECLINED;
    }

    sft_memzero(sa, sizeof(struct sockaddr_storage));

    if (af == 1) {
        sin = (struct sockaddr_in *) sa;
        sin->sin_family = AF_INET;
        sin->sin_port = htons((in_port_t) port);

        if (inet_pton(AF_INET, text, &sin->sin_addr) != 1) {
            return SFT_ERROR;
        }

        *salen = sizeof(struct sockaddr_in);
        return SFT_OK;
    }

    sin6 = (struct sockaddr_in6 *) sa;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons((in_port_t) port);

    if (inet_pton(AF_INET6, text, &sin6->sin6_addr) != 1) {
        return SFT_ERROR;
    }

    *salen = sizeof(struct sockaddr_in6);

    return SFT_OK;
}


/*
 * vsftpd's rule: only to the control connection's peer, on a port of at
 * least 1024; SFT_DECLINED for another address family
 */

sft_int_t
sft_ftp_port_check(struct sockaddr *sa, struct sockaddr *peer)
{
    if (sa->sa_family != peer->sa_family) {
        return SFT_DECLINED;
    }

    if (!sft_ftp_same_address(sa, peer) || sft_ftp_port_get(sa) < 1024) {
        return SFT_ERROR;
    }

    return SFT_OK;
}


sft_int_t
sft_ftp_port(sft_ftp_session_t *s, sft_uint_t extended)
{
    u_char                    text[64];
    size_t                    n;
    sft_int_t                 rc;
    socklen_t                 len;
    struct sockaddr          *peer;
    struct sockaddr_storage   sa;

    peer = (struct sockaddr *) &s->connection->sockaddr;

    sft_ssl_renew_session(s->connection);

    if (s->epsv_all) {
        sft_ftp_reply(s, 503, "%s not allowed after EPSV ALL.",
                      extended ? "EPRT" : "PORT");
        return SFT_OK;
    }

    if (extended) {
        rc = sft_ftp_parse_eprt(s->arg.data, s->arg.len, &sa, &len);

    } else {
        rc = sft_ftp_parse_port(s->arg.data, s->arg.len, &sa, &len);
    }

    if (rc == SFT_OK) {
        rc = sft_ftp_port_check((struct sockaddr *) &sa, peer);

        if (rc != SFT_OK) {
            n = sft_sock_ntop((struct sockaddr *) &sa, text, sizeof(text) - 1,
                              1);
            text[n] = '\0';

            sft_log_error(SFT_LOG_NOTICE, s->log, 0,
                          "client sent %s to %s refused (bounce attempt)",
                          extended ? "EPRT" : "PORT", text);
        }

    } else if (rc == SFT_ERROR) {
        sft_ftp_reply(s, 501, "Syntax error in parameters or arguments.");
        return SFT_OK;
    }

    if (rc == SFT_DECLINED && extended) {
        sft_ftp_reply(s, 522, "Network protocol not supported, use (%d).",
                      peer->sa_family == AF_INET6 ? 2 : 1);
        return SFT_OK;
    }

    if (rc != SFT_OK) {
        sft_ftp_reply(s, 500, "Illegal %s command.",
                      extended ? "EPRT" : "PORT");
        return SFT_OK;
    }

    sft_ftp_data_close(s);

    sft_memcpy(&s->data.peer, &sa, len);
    s->data.peer_len = len;
    s->data.active = 1;

    sft_ftp_reply(s, 200, "%s command successful. Consider using PASV.",
                  extended ? "EPRT" : "PORT");

    return SFT_OK;
}


/*
 * The active data connection, from the control connection's local
 * address; SFT_ERROR if it failed at once (nothing is left open)
 */

sft_int_t
sft_ftp_active_connect(sft_ftp_session_t *s)
{
    int                       fd, rc;
    socklen_t                 len;
    sft_connection_t         *dc;
    struct sockaddr_storage   local;

    len = sizeof(local);

    if (getsockname(s->connection->fd, (struct sockaddr *) &local, &len)
        == -1)
    {
        sft_log_error(SFT_LOG_ERR, s->log, sft_errno, "getsockname() failed");
        return SFT_ERROR;
    }

    sft_ftp_port_set((struct sockaddr *) &local, 0);

    fd = socket(local.ss_family, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
    if (fd == -1) {
        sft_log_error(SFT_LOG_ERR, s->log, sft_errno, "socket() failed");
        return SFT_ERROR;
    }

    if (bind(fd, (struct sockaddr *) &local, len) == -1) {
        sft_log_error(SFT_LOG_ERR, s->log, sft_errno,
                      "bind() of the active data socket failed");
        close(fd);
        return SFT_ERROR;
    }

    rc = connect(fd, (struct sockaddr *) &s->data.peer, s->data.peer_len);

    if (rc == -1 && errno != EINPROGRESS) {
        sft_log_error(SFT_LOG_INFO, s->log, sft_errno,
                      "connect() of the data connection failed");
        close(fd);
        return SFT_ERROR;
    }

    dc = sft_get_connection(fd, s->log);
    if (dc == NULL) {
        close(fd);
        return SFT_ERROR;
    }

    dc->data = s;
    dc->read->handler = sft_ftp_data_connect_handler;
    dc->write->handler = sft_ftp_data_connect_handler;
    sft_memcpy(&dc->sockaddr, &s->data.peer, s->data.peer_len);
    dc->socklen = s->data.peer_len;

    if (sft_event_add_conn(dc) != SFT_OK) {
        sft_close_connection(dc);
        return SFT_ERROR;
    }

    s->data.conn = dc;

    if (rc == 0) {
        sft_ftp_data_connected(s);
        return SFT_OK;
    }

    s->data.connecting = 1;
    sft_add_timer(dc->write, s->conf->data_timeout);

    return SFT_OK;
}


static void
sft_ftp_data_connect_handler(sft_event_t *ev)
{
    int                 err;
    socklen_t           len;
    sft_connection_t   *dc;
    sft_ftp_session_t  *s;

    dc = ev->data;
    s = dc->data;

    if (ev->timedout) {
        sft_log_error(SFT_LOG_INFO, s->log, ETIMEDOUT,
                      "connect() of the data connection timed out");
        goto failed;
    }

    err = 0;
    len = sizeof(int);

    if (getsockopt(dc->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1) {
        err = sft_errno;
    }

    if (err) {
        sft_log_error(SFT_LOG_INFO, s->log, err,
                      "connect() of the data connection failed");
        goto failed;
    }

    if (!dc->write->ready) {
        return;
    }

    sft_del_timer(dc->write);
    s->data.connecting = 0;

    sft_ftp_data_connected(s);
    return;

failed:

    sft_ftp_data_close(s);

    if (s->transfer && s->transfer->started) {
        sft_ftp_transfer_abort(s, 2);
    }
}


static void
sft_ftp_data_connected(sft_ftp_session_t *s)
{
    int                lowat;
    sft_connection_t  *dc;

    dc = s->data.conn;

    lowat = SFT_FTP_DATA_NOTSENT_LOWAT;

    if (setsockopt(dc->fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat,
                   sizeof(int))
        == -1)
    {
        sft_log_error(SFT_LOG_WARN, s->log, sft_errno,
                      "setsockopt(TCP_NOTSENT_LOWAT) failed");
    }

    dc->read->handler = sft_ftp_data_event;
    dc->write->handler = sft_ftp_data_event;
    dc->read->ready = 1;
    dc->write->ready = 1;

    sft_add_timer(dc->read, s->conf->data_timeout);

    sft_ftp_data_start(s);
}


/*
 * PROT P: the data connection's TLS handshake (the client's side starts
 * after "150"), within data_timeout; then the session must have been
 * resumed from the control connection's (tls_data_reuse), else 522
 */

static void
sft_ftp_data_start(sft_ftp_session_t *s)
{
    sft_int_t          rc;
    sft_connection_t  *dc;

    dc = s->data.conn;

    if (!s->prot_p) {
        sft_ftp_transfer_connected(s);
        return;
    }

    if (sft_ssl_create_connection(&s->conf->tls, dc,
                                  SFT_SSL_SERVER|SFT_SSL_NO_TICKETS
                                  |SFT_SSL_SEAL)
        != SFT_OK)
    {
        sft_ftp_data_close(s);

        if (s->transfer && s->transfer->started) {
            sft_ftp_transfer_abort(s, 2);
        }

        return;
    }

    dc->ssl->handler = sft_ftp_data_tls_done;
    s->data.handshaking = 1;

    rc = sft_ssl_handshake(dc);

    if (rc == SFT_AGAIN) {
        return;
    }

    sft_ftp_data_tls_done(dc);
}


static void
sft_ftp_data_tls_done(sft_connection_t *dc)
{
    sft_ftp_session_t  *s;

    s = dc->data;
    s->data.handshaking = 0;

    if (dc->read->timedout || dc->write->timedout || !dc->ssl->handshaked) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "data connection TLS handshake failed or timed out");
        goto failed;
    }

    if (s->conf->tls_data_reuse == SFT_FTP_TLS_REQUIRED
        && !sft_ssl_same_session(dc, s->connection))
    {
        sft_log_error(SFT_LOG_NOTICE, s->log, 0,
                      "data connection did not resume the control "
                      "connection's TLS session (%s), refused",
                      dc->ssl->reused ? "another session" : "not resumed");

        dc->ssl->no_wait_shutdown = 1;
        (void) sft_ssl_shutdown(dc);
        sft_ftp_data_close(s);

        if (s->transfer && s->transfer->started) {
            sft_ftp_transfer_abort(s, SFT_FTP_END_TLS);

        } else {
            s->data.tls_refused = 1;
        }

        return;
    }

    sft_log_debug(s->log, "data connection TLS: %s, reused: %d",
                  sft_ssl_protocol(dc), (int) dc->ssl->reused);

    dc->read->handler = sft_ftp_data_event;
    dc->write->handler = sft_ftp_data_event;

    sft_add_timer(dc->read, s->conf->data_timeout);

    sft_ftp_transfer_connected(s);
    return;

failed:

    sft_ftp_data_close(s);

    if (s->transfer && s->transfer->started) {
        sft_ftp_transfer_abort(s, 2);
    }
}


/*
 * The end of a good transfer: over TLS, close_notify and the peer's, the
 * connection on its own (the session may go first) for data_timeout
 */

void
sft_ftp_data_finish(sft_ftp_session_t *s)
{
    sft_connection_t  *dc;

    dc = s->data.conn;

    if (dc == NULL || dc->ssl == NULL || !dc->ssl->handshaked
        || s->data.handshaking)
    {
        sft_ftp_data_close(s);
        return;
    }

    s->data.conn = NULL;

    dc->data = NULL;
    dc->log = ((sft_cycle_t *) sft_cycle)->log;
    dc->ssl->handler = sft_ftp_data_tls_closed;

    sft_del_timer(dc->read);
    sft_del_timer(dc->write);

    if (sft_ssl_shutdown(dc) == SFT_AGAIN) {
        sft_add_timer(dc->read, s->conf->data_timeout);
        return;
    }

    sft_close_connection(dc);
}


static void
sft_ftp_data_tls_closed(sft_connection_t *dc)
{
    sft_close_connection(dc);
}


void
sft_ftp_data_close(sft_ftp_session_t *s)
{
    s->data.connecting = 0;
    s->data.handshaking = 0;

    if (s->data.listener) {
        sft_close_connection(s->data.listener);
        s->data.listener = NULL;
    }

    if (s->data.conn) {
        sft_close_connection(s->data.conn);
        s->data.conn = NULL;
    }
}
