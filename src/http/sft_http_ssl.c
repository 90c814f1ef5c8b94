/*
 * sft_http_ssl.c -- HTTPS for the admin listeners: "listen ... ssl" with
 * the ssl_* directives FTPS uses, the handshake bounded by
 * client_header_timeout before the first request is read, and
 * close_notify when the connection ends; an admin listener off loopback
 * without TLS is said in the log, as API tokens would cross in clear.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>


static void sft_http_ssl_handshaked(sft_connection_t *c);
static void sft_http_ssl_closed(sft_connection_t *c);


void
sft_http_ssl_start(sft_http_connection_t *hc)
{
    sft_int_t          rc;
    sft_connection_t  *c;

    c = hc->connection;

    if (sft_ssl_create_connection(&hc->cscf->tls, c, SFT_SSL_SERVER)
        != SFT_OK)
    {
        sft_http_close_connection(hc);
        return;
    }

    c->ssl->handler = sft_http_ssl_handshaked;

    sft_add_timer(c->read, hc->cscf->client_header_timeout);

    rc = sft_ssl_handshake(c);

    if (rc == SFT_AGAIN) {
        return;
    }

    sft_http_ssl_handshaked(c);
}


static void
sft_http_ssl_handshaked(sft_connection_t *c)
{
    sft_http_connection_t  *hc;

    hc = c->data;

    if (c->read->timedout || c->write->timedout) {
        sft_log_error(SFT_LOG_INFO, c->log, 0, "TLS handshake timed out");
        sft_http_close_connection(hc);
        return;
    }

    if (!c->ssl->handshaked) {
        sft_http_close_connection(hc);
        return;
    }

    sft_log_debug(c->log, "https: %s, %s", sft_ssl_protocol(c),
                  sft_ssl_cipher(c));

    if (c->read->timer_set) {
        sft_del_timer(c->read);
    }

    sft_http_run_connection(hc);
}


/*
 * 1: the close_notify waits for the socket, and closing the connection
 * runs again when it went out or the send timeout passed; 0: close now.
 * The peer's own close_notify is not waited for: a reply that was sent
 * is complete by its framing.
 */

sft_uint_t
sft_http_ssl_close(sft_http_connection_t *hc)
{
    sft_connection_t  *c;

    c = hc->connection;

    if (c->ssl == NULL || hc->ssl_closing) {
        return 0;
    }

    hc->ssl_closing = 1;
    c->ssl->no_wait_shutdown = 1;

    if (sft_ssl_shutdown(c) != SFT_AGAIN) {
        return 0;
    }

    c->ssl->handler = sft_http_ssl_closed;

    if (c->read->timer_set) {
        sft_del_timer(c->read);
    }

    sft_add_timer(c->write, hc->cscf->send_timeout);

    return 1;
}


static void
sft_http_ssl_closed(sft_connection_t *c)
{
    sft_http_close_connection(c->data);
}


/*
 * The server's TLS: a "listen ... ssl" needs a certificate; a listener
 * that is not on loopback and has no TLS is allowed, and said.
 */

char *
sft_http_merge_ssl(sft_conf_t *cf, sft_http_core_srv_conf_t *conf,
    sft_http_core_srv_conf_t *prev)
{
    sft_int_t          rc;
    sft_uint_t         i;
    sft_listen_opt_t  *lo;

    sft_ssl_conf_merge(&conf->ssl, &prev->ssl);

    rc = sft_ssl_conf_apply(cf, &conf->ssl, &conf->tls);

    if (rc == SFT_ERROR) {
        return SFT_CONF_ERROR;
    }

    lo = conf->proto.listen.elts;

    for (i = 0; i < conf->proto.listen.nelts; i++) {

        if (lo[i].ssl && rc == SFT_DECLINED) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "no \"ssl_certificate\" in the http server "
                               "of \"listen %.*s ssl\"",
                               SFT_STR_FMT(&lo[i].addr_text));
            return SFT_CONF_ERROR;
        }

        if (!lo[i].ssl
            && !sft_http_loopback((struct sockaddr *) &lo[i].sockaddr))
        {
            sft_conf_log_error(SFT_LOG_WARN, cf, 0,
                               "\"listen %.*s\" without \"ssl\" is not on "
                               "loopback: api tokens and users' passwords "
                               "cross the network in clear",
                               SFT_STR_FMT(&lo[i].addr_text));
        }
    }

    return SFT_CONF_OK;
}

