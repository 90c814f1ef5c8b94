/*
 * sft_proxy_protocol.h -- the PROXY protocol header (v1 text, v2 binary)
 * a TCP load balancer puts before a client's first byte: who the client
 * really is.
 */

#ifndef _SFT_PROXY_PROTOCOL_H_INCLUDED_
#define _SFT_PROXY_PROTOCOL_H_INCLUDED_


#define SFT_PROXY_PROTOCOL_V1_MAX  107   /* the whole line, CRLF included */
#define SFT_PROXY_PROTOCOL_MAX     536   /* v2: 16 bytes + 520 of payload */


typedef struct {
    struct sockaddr_storage     src;
    socklen_t                   socklen;     /* 0: LOCAL or UNKNOWN */
    struct sockaddr_storage     dst;
} sft_proxy_protocol_t;


/*
 * The header's length (> 0) once buf holds all of it, SFT_AGAIN while what
 * arrived so far is a valid beginning, SFT_ERROR with *reason set.  Reads
 * nothing beyond buf + len and nothing after the header.
 */
sft_int_t sft_proxy_protocol_parse(const u_char *buf, size_t len,
    sft_proxy_protocol_t *pp, const char **reason);


#endif /* _SFT_PROXY_PROTOCOL_H_INCLUDED_ */
