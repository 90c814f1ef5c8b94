/*
 * sft_connection.c -- listening sockets (opened by the master, taken over
 * across reloads) and the worker's preallocated connection slots.
 */

#include <sft_config.h>
#include <sft_core.h>

#if (SFT_HAVE_OPENSSL)
#include <sft_event_openssl.h>
#endif


sft_uint_t  sft_connection_counter = 1;


/* "127.0.0.1:8080", "[::1]:8080", "*:8080", "localhost:8080" or "8080" */

sft_int_t
sft_parse_addr_port(sft_str_t *text, struct sockaddr_storage *sa,
    socklen_t *socklen)
{
    u_char               *p, *last, *colon;
    char                  host[64];
    size_t                hlen;
    sft_int_t             port;
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    p = text->data;
    last = p + text->len;

    sft_memzero(sa, sizeof(struct sockaddr_storage));

    if (p < last && *p == '[') {
        colon = memchr(p, ']', last - p);
        if (colon == NULL || colon + 1 >= last || colon[1] != ':') {
            return SFT_ERROR;
        }

        hlen = colon - p - 1;
        if (hlen == 0 || hlen >= sizeof(host)) {
            return SFT_ERROR;
        }

        sft_memcpy(host, p + 1, hlen);
        host[hlen] = '\0';

        port = sft_atoi(colon + 2, last - colon - 2);
        if (port < 1 || port > 65535) {
            return SFT_ERROR;
        }

        sin6 = (struct sockaddr_in6 *) sa;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((in_port_t) port);

        if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1) {
            return SFT_ERROR;
        }

        *socklen = sizeof(struct sockaddr_in6);
        return SFT_OK;
    }

    colon = NULL;

    for (u_char *q = p; q < last; q++) {
        if (*q == ':') {
            colon = q;
        }
    }

    sin = (struct sockaddr_in *) sa;
    sin->sin_family = AF_INET;
    *socklen = sizeof(struct sockaddr_in);

    if (colon == NULL) {
        port = sft_atoi(p, last - p);
        if (port < 1 || port > 65535) {
            return SFT_ERROR;
        }

        sin->sin_port = htons((in_port_t) port);
        sin->sin_addr.s_addr = htonl(INADDR_ANY);
        return SFT_OK;
    }

    port = sft_atoi(colon + 1, last - colon - 1);
    if (port < 1 || port > 65535) {
        return SFT_ERROR;
    }

    sin->sin_port = htons((in_port_t) port);

    hlen = colon - p;
    if (hlen == 0 || hlen >= sizeof(host)) {
        return SFT_ERROR;
    }

    sft_memcpy(host, p, hlen);
    host[hlen] = '\0';

    if (strcmp(host, "*") == 0) {
        sin->sin_addr.s_addr = htonl(INADDR_ANY);
        return SFT_OK;
    }

    if (strcmp(host, "localhost") == 0) {
        sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return SFT_OK;
    }

    if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
        return SFT_ERROR;
    }

    return SFT_OK;
}


size_t
sft_sock_ntop(struct sockaddr *sa, u_char *buf, size_t len, sft_uint_t port)
{
    char                  text[INET6_ADDRSTRLEN];
    u_char               *p;
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    switch (sa->sa_family) {

    case AF_INET:
        sin = (struct sockaddr_in *) sa;
        inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text));

        if (port) {
            p = sft_slprintf(buf, buf + len, "%s:%d", text,
                             ntohs(sin->sin_port));
        } else {
            p = sft_slprintf(buf, buf + len, "%s", text);
        }
        break;

    case AF_INET6:
        sin6 = (struct sockaddr_in6 *) sa;
        inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof(text));

        if (port) {
            p = sft_slprintf(buf, buf + len, "[%s]:%d", text,
                             ntohs(sin6->sin6_port));
        } else {
            p = sft_slprintf(buf, buf + len, "%s", text);
        }
        break;

    default:
        p = sft_slprintf(buf, buf + len, "unix:");
        break;
    }

    return p - buf;
}


static sft_int_t
sft_listening_open(sft_cycle_t *cycle, sft_listening_t *ls)
{
    int       on;
    sft_fd_t  s;

    s = socket(ls->sockaddr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "socket() %.*s failed", SFT_STR_FMT(&ls->addr_text));
        return SFT_ERROR;
    }

    on = 1;

    if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(int)) == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "setsockopt(SO_REUSEADDR) %.*s failed",
                      SFT_STR_FMT(&ls->addr_text));
        close(s);
        return SFT_ERROR;
    }

    if (ls->sockaddr.ss_family == AF_INET6) {
        (void) setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(int));
    }

    if (fcntl(s, F_SETFL, O_NONBLOCK) == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "fcntl(O_NONBLOCK) %.*s failed",
                      SFT_STR_FMT(&ls->addr_text));
        close(s);
        return SFT_ERROR;
    }

    if (bind(s, (struct sockaddr *) &ls->sockaddr, ls->socklen) == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "bind() to %.*s failed", SFT_STR_FMT(&ls->addr_text));
        close(s);
        return SFT_ERROR;
    }

    if (listen(s, ls->backlog) == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "listen() to %.*s, backlog %d failed",
                      SFT_STR_FMT(&ls->addr_text), ls->backlog);
        close(s);
        return SFT_ERROR;
    }

    ls->fd = s;
    ls->open = 1;

    return SFT_OK;
}


/* take over the old cycle's socket for the same address, or open one */

sft_int_t
sft_open_listening_sockets(sft_cycle_t *cycle, sft_cycle_t *old_cycle)
{
    sft_uint_t        i, n;
    sft_listening_t  *ls, *ols;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {

        ls[i].fd = SFT_INVALID_FILE;
        ls[i].log = cycle->log;

        ols = old_cycle->listening.elts;

        for (n = 0; n < old_cycle->listening.nelts; n++) {
            if (ols[n].fd == SFT_INVALID_FILE || ols[n].remain
                || ols[n].socklen != ls[i].socklen
                || sft_memcmp(&ols[n].sockaddr, &ls[i].sockaddr,
                              ls[i].socklen) != 0)
            {
                continue;
            }

            ls[i].fd = ols[n].fd;
            ols[n].remain = 1;

            if (ls[i].backlog != ols[n].backlog) {
                (void) listen(ls[i].fd, ls[i].backlog);
            }

            break;
        }

        if (ls[i].fd != SFT_INVALID_FILE) {
            continue;
        }

        if (sft_listening_open(cycle, &ls[i]) != SFT_OK) {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


/* after a failed reload: close only what the new cycle opened itself */

void
sft_close_new_listening(sft_cycle_t *cycle)
{
    sft_uint_t        i, n;
    sft_listening_t  *ls, *ols;

    ls = cycle->listening.elts;
    ols = cycle->old_cycle ? cycle->old_cycle->listening.elts : NULL;

    for (i = 0; i < cycle->listening.nelts; i++) {
        if (ls[i].open && ls[i].fd != SFT_INVALID_FILE) {
            close(ls[i].fd);
            ls[i].fd = SFT_INVALID_FILE;
        }
    }

    if (ols == NULL) {
        return;
    }

    for (n = 0; n < cycle->old_cycle->listening.nelts; n++) {
        ols[n].remain = 0;
    }
}


void
sft_close_unused_listening(sft_cycle_t *cycle, sft_cycle_t *old_cycle)
{
    sft_uint_t        n;
    sft_listening_t  *ols;

    (void) cycle;

    ols = old_cycle->listening.elts;

    for (n = 0; n < old_cycle->listening.nelts; n++) {
        if (ols[n].remain || ols[n].fd == SFT_INVALID_FILE) {
            continue;
        }

        close(ols[n].fd);
        ols[n].fd = SFT_INVALID_FILE;

        sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                      "closed listening socket %.*s",
                      SFT_STR_FMT(&ols[n].addr_text));
    }
}


void
sft_close_listening_sockets(sft_cycle_t *cycle)
{
    sft_uint_t        i;
    sft_listening_t  *ls;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {
        if (ls[i].fd == SFT_INVALID_FILE) {
            continue;
        }

        if (ls[i].connection) {
            sft_del_timer(ls[i].connection->read);

            if (ls[i].connection->read->active) {
                (void) sft_event_del_listening(&ls[i]);
            }

            sft_free_connection(ls[i].connection);
            ls[i].connection = NULL;
        }

        close(ls[i].fd);
        ls[i].fd = SFT_INVALID_FILE;
    }
}


sft_connection_t *
sft_get_connection(sft_fd_t fd, sft_log_t *log)
{
    sft_uint_t          instance;
    sft_event_t        *rev, *wev;
    sft_cycle_t        *cycle;
    sft_connection_t   *c;

    cycle = (sft_cycle_t *) sft_cycle;
    c = cycle->free_connections;

    if (c == NULL) {
        sft_log_error(SFT_LOG_WARN, log, 0,
                      "%lu worker_connections are not enough",
                      (unsigned long) cycle->connection_n);
        return NULL;
    }

    cycle->free_connections = c->data;
    cycle->free_connection_n--;

    rev = c->read;
    wev = c->write;

    sft_memzero(c, sizeof(sft_connection_t));

    c->read = rev;
    c->write = wev;
    c->fd = fd;
    c->log = log;
    c->recv = sft_recv;
    c->send = sft_send;

    instance = rev->instance;

    sft_memzero(rev, sizeof(sft_event_t));
    sft_memzero(wev, sizeof(sft_event_t));

    rev->instance = !instance;
    wev->instance = !instance;

    rev->data = c;
    wev->data = c;
    wev->write = 1;
    rev->log = log;
    wev->log = log;

    return c;
}


void
sft_free_connection(sft_connection_t *c)
{
    sft_cycle_t  *cycle;

    cycle = (sft_cycle_t *) sft_cycle;

    c->data = cycle->free_connections;
    cycle->free_connections = c;
    cycle->free_connection_n++;
}


void
sft_close_connection(sft_connection_t *c)
{
    sft_fd_t  fd;

    if (c->fd == SFT_INVALID_FILE) {
        sft_log_error(SFT_LOG_ALERT, c->log, 0, "connection already closed");
        return;
    }

    sft_del_timer(c->read);
    sft_del_timer(c->write);

    if (c->read->posted) {
        sft_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        sft_delete_posted_event(c->write);
    }

    c->read->closed = 1;
    c->write->closed = 1;

    if (c->session) {
        c->session = 0;
        sft_event_sessions--;
        sft_stat_sub(sft_stat_conn_active, 1);
    }

#if (SFT_HAVE_OPENSSL)
    if (c->ssl) {
        sft_ssl_free_connection(c);
    }
#endif

    fd = c->fd;
    c->fd = SFT_INVALID_FILE;

    /* close() removes the descriptor from the epoll set */

    if (close(fd) == -1) {
        sft_log_error(SFT_LOG_ALERT, c->log, sft_errno, "close() failed");
    }

    sft_free_connection(c);
}


/* on graceful shutdown: wake every idle session so it closes itself */

void
sft_close_idle_connections(sft_cycle_t *cycle)
{
    sft_uint_t         i;
    sft_connection_t  *c;

    c = cycle->connections;

    for (i = 0; i < cycle->connection_n; i++) {
        if (c[i].fd != SFT_INVALID_FILE && c[i].session && c[i].idle
            && !c[i].close)
        {
            c[i].close = 1;
            c[i].read->handler(c[i].read);
        }
    }
}


void
sft_close_all_connections(sft_cycle_t *cycle)
{
    sft_uint_t         i;
    sft_connection_t  *c;

    c = cycle->connections;

    for (i = 0; i < cycle->connection_n; i++) {
        if (c[i].fd != SFT_INVALID_FILE && c[i].session && !c[i].close) {
            c[i].close = 1;
            c[i].error = 1;
            c[i].read->handler(c[i].read);
        }
    }
}


ssize_t
sft_recv(sft_connection_t *c, u_char *buf, size_t size)
{
    ssize_t  n;

    for ( ;; ) {
        n = recv(c->fd, buf, size, 0);

        if (n > 0) {
            if ((size_t) n < size) {
                c->read->ready = 0;
            }

            return n;
        }

        if (n == 0) {
            c->read->ready = 0;
            c->read->eof = 1;
            return 0;
        }

        if (errno == EINTR) {
            continue;
        }

        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c->read->ready = 0;
            return SFT_AGAIN;
        }

        c->read->error = 1;
        c->read->ready = 0;

        if (errno != ECONNRESET) {
            sft_log_error(SFT_LOG_INFO, c->log, sft_errno, "recv() failed");
        }

        return SFT_ERROR;
    }
}


ssize_t
sft_send(sft_connection_t *c, u_char *buf, size_t size)
{
    ssize_t  n;

    for ( ;; ) {
        n = send(c->fd, buf, size, MSG_NOSIGNAL);

        if (n >= 0) {
            c->sent += n;

            if ((size_t) n < size) {
                c->write->ready = 0;
            }

            return n;
        }

        if (errno == EINTR) {
            continue;
        }

        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c->write->ready = 0;
            return SFT_AGAIN;
        }

        c->write->error = 1;

        if (errno != EPIPE && errno != ECONNRESET) {
            sft_log_error(SFT_LOG_INFO, c->log, sft_errno, "send() failed");
        }

        return SFT_ERROR;
    }
}
