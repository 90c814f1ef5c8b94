/*
 * sft_ftp_data.c -- data channels once connected, and active mode.  PORT
 * and EPRT name an address that must be the control connection's peer
 * with a port >= 1024 (vsftpd's bounce rule), and the worker connects to
 * it without blocking when a transfer starts.  A data connection, active
 * or passive (sft_ftp_pasv.c), then gets its TLS handshake under PROT P,
 * and is finished or closed here.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>


static void sft_ftp_data_connect_handler(sft_event_t *ev);
static void sft_ftp_data_start(sft_ftp_session_t *s);
static void sft_ftp_data_tls_done(sft_connection_t *dc);
static void sft_ftp_data_tls_closed(sft_connection_t *dc);


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


void
sft_ftp_port_set(struct sockaddr *sa, sft_uint_t port)
{
    if (sa->sa_family == AF_INET6) {
        ((struct sockaddr_in6 *) sa)->sin6_port = htons((in_port_t) port);

    } else {
        ((struct sockaddr_in *) sa)->sin_port = htons((in_port_t) port);
    }
}


sft_uint_t
sft_ftp_port_get(struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET6) {
        return ntohs(((struct sockaddr_in6 *) sa)->sin6_port);
    }

    return ntohs(((struct sockaddr_in *) sa)->sin_port);
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
 * The control connection's own address, which data connections use: asked
 * of the kernel once per session, not at every PASV, EPSV or PORT; a
 * failure is logged
 */

sft_int_t
sft_ftp_local_sockaddr(sft_ftp_session_t *s, struct sockaddr_storage *local,
    socklen_t *len)
{
    sft_ftp_data_t  *d = &s->data;

    if (d->local_len == 0) {
        d->local_len = sizeof(d->local);

        if (getsockname(s->connection->fd, (struct sockaddr *) &d->local,
                        &d->local_len)
            == -1)
        {
            d->local_len = 0;
            sft_log_error(SFT_LOG_ERR, s->log, sft_errno,
                          "getsockname() failed");
            return SFT_ERROR;
        }
    }

    sft_memcpy(local, &d->local, d->local_len);
    *len = d->local_len;

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

    if (sft_ftp_local_sockaddr(s, &local, &len) != SFT_OK) {
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

    dc = sft_ftp_data_conn(s, fd, &s->data.peer, s->data.peer_len);
    if (dc == NULL) {
        return SFT_ERROR;
    }

    dc->read->handler = sft_ftp_data_connect_handler;
    dc->write->handler = sft_ftp_data_connect_handler;

    s->data.conn = dc;

    if (rc == 0) {
        sft_ftp_data_connected(s);
        return SFT_OK;
    }

    s->data.connecting = 1;
    sft_add_timer(dc->write, s->conf->data_timeout);

    return SFT_OK;
}


/*
 * A data connection on fd in the event loop, from or to sa, its handlers
 * for the caller to set; NULL (fd closed) if there is no room
 */

sft_connection_t *
sft_ftp_data_conn(sft_ftp_session_t *s, int fd, struct sockaddr_storage *sa,
    socklen_t len)
{
    sft_connection_t  *dc;

    dc = sft_get_connection(fd, s->log);
    if (dc == NULL) {
        close(fd);
        return NULL;
    }

    dc->data = s;
    sft_memcpy(&dc->sockaddr, sa, len);
    dc->socklen = len;

    if (sft_event_add_conn(dc) != SFT_OK) {
        sft_close_connection(dc);
        return NULL;
    }

    return dc;
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


void
sft_ftp_data_connected(sft_ftp_session_t *s)
{
    sft_connection_t  *dc;

    dc = s->data.conn;

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

    if (s->data.proxied) {
        sft_close_connection(s->data.proxied);
        s->data.proxied = NULL;
    }

    if (s->data.conn) {
        sft_close_connection(s->data.conn);
        s->data.conn = NULL;
    }
}
