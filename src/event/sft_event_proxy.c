/*
 * sft_event_proxy.c -- the PROXY protocol header at the start of a
 * connection from a balancer: read by peeking at the socket until it is
 * whole, then consuming exactly its bytes (what the client sent after it
 * stays for the protocol: an SSH banner, a TLS ClientHello), without
 * blocking and within a timeout; the connection's address becomes the
 * header's source and the caller's handler takes over.  A connection
 * accepted on a "listen ... proxy_protocol" address must come from one of
 * proxy_protocol_from; FTP reads the header of the passive data
 * connections that come through the balancer here too.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event.h>
#include <sft_cidr.h>


static void sft_event_proxy_accepted(sft_connection_t *c,
    const char *refused);
static void sft_event_proxy_handler(sft_event_t *ev);
static void sft_event_proxy_write(sft_event_t *ev);
static void sft_event_proxy_done(sft_connection_t *c, const char *refused);
static void sft_event_proxy_set_addr(sft_connection_t *c,
    sft_proxy_protocol_t *pp);
static void sft_event_proxy_close(sft_connection_t *c, const char *reason);


/* a connection accepted on a "listen ... proxy_protocol" address */

void
sft_event_proxy_protocol(sft_connection_t *c)
{
    sft_event_proxy_t  *proxy;

    if (!sft_event_proxy_from(c->listening->proxy_from,
                              (struct sockaddr *) &c->sockaddr))
    {
        sft_event_proxy_close(c, "peer not in proxy_protocol_from");
        return;
    }

    proxy = sft_pcalloc(c->pool, sizeof(sft_event_proxy_t));
    if (proxy == NULL) {
        sft_event_proxy_close(c, "out of memory");
        return;
    }

    sft_event_proxy_read(c, proxy, c->listening->proxy_timeout,
                         sft_event_proxy_accepted);
}


static void
sft_event_proxy_accepted(sft_connection_t *c, const char *refused)
{
    if (refused) {
        sft_event_proxy_close(c, refused);
        return;
    }

    c->listening->handler(c);
}


/* whether sa is one of the balancers of from (sft_cidr_t) */

sft_uint_t
sft_event_proxy_from(sft_array_t *from, struct sockaddr *sa)
{
    sft_uint_t   i;
    sft_cidr_t  *cidr;

    cidr = from->elts;

    for (i = 0; i < from->nelts; i++) {
        if (sft_cidr_match(&cidr[i], sa)) {
            return 1;
        }
    }

    return 0;
}


/*
 * Reads c's header into proxy within timeout; handler gets c once, when
 * it is read or refused.  c must be in the event loop already.
 */

void
sft_event_proxy_read(sft_connection_t *c, sft_event_proxy_t *proxy,
    sft_msec_t timeout, sft_event_proxy_pt handler)
{
    proxy->handler = handler;
    c->proxy = proxy;

    c->idle = 1;
    c->read->handler = sft_event_proxy_handler;
    c->write->handler = sft_event_proxy_write;
    sft_add_timer(c->read, timeout);

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
        sft_event_proxy_done(c, "PROXY protocol header timed out");
        return;
    }

    if (c->close) {
        sft_event_proxy_done(c, "PROXY protocol header not received "
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

        sft_event_proxy_done(c, strerror(errno));
        return;
    }

    if (n == 0) {
        sft_event_proxy_done(c, "closed before the PROXY protocol header");
        return;
    }

    reason = NULL;
    rc = sft_proxy_protocol_parse(buf, n, &pp, &reason);

    if (rc == SFT_AGAIN) {
        return;
    }

    if (rc == SFT_ERROR) {
        sft_event_proxy_done(c, reason);
        return;
    }

    /* exactly the header: it is all in the socket's queue already */

    if (recv(c->fd, buf, rc, 0) != rc) {
        sft_event_proxy_done(c, "PROXY protocol header read short");
        return;
    }

    sft_memcpy(&c->proxy->header, &pp, sizeof(sft_proxy_protocol_t));

    if (pp.socklen) {
        sft_event_proxy_set_addr(c, &pp);
    }

    sft_event_proxy_done(c, NULL);
}


/* nothing is written before the caller takes over */

static void
sft_event_proxy_write(sft_event_t *ev)
{
    (void) ev;
}


static void
sft_event_proxy_done(sft_connection_t *c, const char *refused)
{
    sft_del_timer(c->read);
    c->idle = 0;

    c->proxy->handler(c, refused);
}


/* the caller sees the client, not the balancer */

static void
sft_event_proxy_set_addr(sft_connection_t *c, sft_proxy_protocol_t *pp)
{
    size_t   len, blen;
    u_char  *text, balancer[INET6_ADDRSTRLEN];

    blen = sft_sock_ntop((struct sockaddr *) &c->sockaddr, balancer,
                         sizeof(balancer), 0);

    text = c->proxy->text;
    len = sft_sock_ntop((struct sockaddr *) &pp->src, text,
                        sizeof(c->proxy->text), 0);

    sft_log_error(SFT_LOG_INFO, c->log, 0,
                  "PROXY protocol from %.*s: client %.*s",
                  (int) blen, balancer, (int) len, text);

    c->addr_text.data = text;
    c->addr_text.len = len;
    sft_memcpy(&c->sockaddr, &pp->src, pp->socklen);
    c->socklen = pp->socklen;
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
