/*
 * sft_event_proxy.c -- a connection accepted on a "listen ... proxy_protocol"
 * address: its peer must be one of proxy_protocol_from, then its PROXY
 * protocol header is read (peeked at until it is whole, then exactly its
 * bytes consumed, so that what the client sent after it stays for the
 * protocol: an SSH banner, a TLS ClientHello), the connection's address
 * becomes the header's source, and the protocol takes over.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event.h>
#include <sft_cidr.h>
#include <sft_proxy_protocol.h>


static void sft_event_proxy_handler(sft_event_t *ev);
static void sft_event_proxy_write(sft_event_t *ev);
static sft_int_t sft_event_proxy_allowed(sft_connection_t *c);
static sft_int_t sft_event_proxy_set_addr(sft_connection_t *c,
    sft_proxy_protocol_t *pp);
static void sft_event_proxy_close(sft_connection_t *c, const char *reason);


void
sft_event_proxy_protocol(sft_connection_t *c)
{
    if (!sft_event_proxy_allowed(c)) {
        sft_event_proxy_close(c, "peer not in proxy_protocol_from");
        return;
    }

    c->idle = 1;
    c->read->handler = sft_event_proxy_handler;
    c->write->handler = sft_event_proxy_write;
    sft_add_timer(c->read, c->listening->proxy_timeout);

    sft_event_proxy_handler(c->read);
}


static void
sft_event_proxy_handler(sft_event_t *ev)
{
    ssize_t                n;
    sft_int_t              rc;
    const char            *reason;
    sft_connection_t      *c;
    sft_proxy_protocol_t   pp;
    u_char                 buf[SFT_PROXY_PROTOCOL_MAX];

    c = ev->data;

    if (ev->timedout) {
        sft_event_proxy_close(c, "PROXY protocol header timed out");
        return;
    }

    if (c->close) {
        sft_event_proxy_close(c, "PROXY protocol header not received "
                                 "before shutdown");
        return;
    }

    do {
        n = recv(c->fd, buf, sizeof(buf), MSG_PEEK);
    } while (n == -1 && errno == EINTR);

    if (n == -1) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return;
        }

        sft_event_proxy_close(c, strerror(errno));
        return;
    }

    if (n == 0) {
        sft_event_proxy_close(c, "closed before the PROXY protocol header");
        return;
    }

    reason = NULL;
    rc = sft_proxy_protocol_parse(buf, n, &pp, &reason);

    if (rc == SFT_AGAIN) {
        return;
    }

    if (rc == SFT_ERROR) {
        sft_event_proxy_close(c, reason);
        return;
    }

    /* exactly the header: it is all in the socket's queue already */

    if (recv(c->fd, buf, rc, 0) != rc) {
        sft_event_proxy_close(c, "PROXY protocol header read short");
        return;
    }

    if (pp.socklen && sft_event_proxy_set_addr(c, &pp) != SFT_OK) {
        sft_event_proxy_close(c, "out of memory");
        return;
    }

    sft_del_timer(c->read);
    c->idle = 0;

    c->listening->handler(c);
}


/* nothing is written before the protocol takes over */

static void
sft_event_proxy_write(sft_event_t *ev)
{
    (void) ev;
}


static sft_int_t
sft_event_proxy_allowed(sft_connection_t *c)
{
    sft_uint_t   i;
    sft_cidr_t  *cidr;

    cidr = c->listening->proxy_from->elts;

    for (i = 0; i < c->listening->proxy_from->nelts; i++) {
        if (sft_cidr_match(&cidr[i], (struct sockaddr *) &c->sockaddr)) {
            return 1;
        }
    }

    return 0;
}


/* the session sees the client, not the balancer */

static sft_int_t
sft_event_proxy_set_addr(sft_connection_t *c, sft_proxy_protocol_t *pp)
{
    size_t   len;
    u_char   text[64], *p;

    len = sft_sock_ntop((struct sockaddr *) &pp->src, text, sizeof(text), 0);

    p = sft_pnalloc(c->pool, len);
    if (p == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(p, text, len);

    sft_log_error(SFT_LOG_INFO, c->log, 0,
                  "PROXY protocol from %.*s: client %.*s",
                  SFT_STR_FMT(&c->addr_text), (int) len, p);

    c->addr_text.data = p;
    c->addr_text.len = len;
    sft_memcpy(&c->sockaddr, &pp->src, pp->socklen);
    c->socklen = pp->socklen;

    return SFT_OK;
}


/* one line naming the balancer and why, then the connection is gone */

static void
sft_event_proxy_close(sft_connection_t *c, const char *reason)
{
    sft_log_error(SFT_LOG_WARN, c->log, 0,
                  "PROXY protocol on %.*s from %.*s refused: %s",
                  SFT_STR_FMT(&c->listening->addr_text),
                  SFT_STR_FMT(&c->addr_text), reason);

    sft_destroy_pool(c->pool);
    c->pool = NULL;
    sft_close_connection(c);
}
