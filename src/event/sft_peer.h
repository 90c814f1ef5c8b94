/*
 * sft_peer.h -- who a client session is, for its log lines and transfer
 * reports: copied from the connection when the session starts, so that
 * what completes after the connection was closed (and its struct reused)
 * still names its own client, server and user.
 */

#ifndef _SFT_PEER_H_INCLUDED_
#define _SFT_PEER_H_INCLUDED_


typedef struct {
    sft_str_t          client;       /* the address, text */
    sft_str_t          server;       /* the listening address, text */
    sft_str_t         *user;         /* the session's, empty until known */
} sft_peer_t;


void sft_peer_init(sft_peer_t *peer, sft_connection_t *c, sft_str_t *user);


#endif /* _SFT_PEER_H_INCLUDED_ */
