/*
 * sft_peer.c -- a session's identity: taken from its connection at the
 * start (the address text lives in the connection's pool, which the
 * session owns; the connection struct itself goes back to the free list at
 * the close) and appended to every line of the connection's log as
 * ", client: A, server: B, user: "U"".
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_peer.h>


static u_char *sft_peer_log_error(sft_log_t *log, u_char *buf, size_t len);


void
sft_peer_init(sft_peer_t *peer, sft_connection_t *c, sft_str_t *user)
{
    peer->client = c->addr_text;
    peer->server = c->listening->addr_text;
    peer->user = user;

    c->log->handler = sft_peer_log_error;
    c->log->data = peer;
    c->log->action = NULL;
}


static u_char *
sft_peer_log_error(sft_log_t *log, u_char *buf, size_t len)
{
    u_char      *p, *last;
    sft_peer_t  *peer;

    peer = log->data;
    p = buf;
    last = buf + len;

    p = sft_slprintf(p, last, ", client: %.*s, server: %.*s",
                     SFT_STR_FMT(&peer->client), SFT_STR_FMT(&peer->server));

    if (peer->user->len) {
        p = sft_slprintf(p, last, ", user: \"%.*s\"",
                         SFT_STR_FMT(peer->user));
    }

    return p;
}
