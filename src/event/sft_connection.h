/*
 * sft_connection.h -- listening sockets and client connections.
 */

#ifndef _SFT_CONNECTION_H_INCLUDED_
#define _SFT_CONNECTION_H_INCLUDED_


typedef struct sft_ssl_connection_s  sft_ssl_connection_t;

typedef ssize_t (*sft_recv_pt)(sft_connection_t *c, u_char *buf,
    size_t size);
typedef ssize_t (*sft_send_pt)(sft_connection_t *c, u_char *buf,
    size_t size);


struct sft_listening_s {
    sft_fd_t                    fd;

    struct sockaddr_storage     sockaddr;
    socklen_t                   socklen;
    sft_str_t                   addr_text;
    const char                 *protocol;    /* "http", "ftp", ... */

    int                         backlog;

    sft_connection_handler_pt   handler;     /* the protocol takes over */
    void                       *servers;     /* the protocol's server conf */

    sft_log_t                  *log;
    sft_connection_t           *connection;  /* in a worker */

    sft_array_t                *proxy_from;  /* sft_cidr_t */
    sft_msec_t                  proxy_timeout;

    unsigned                    open:1;
    unsigned                    remain:1;    /* taken over by a new cycle */
    unsigned                    ssl:1;
    unsigned                    proxy_protocol:1;
};


struct sft_connection_s {
    void                       *data;
    sft_event_t                *read;
    sft_event_t                *write;

    sft_fd_t                    fd;

    sft_listening_t            *listening;

    sft_recv_pt                 recv;        /* sft_recv or sft_ssl_recv */
    sft_send_pt                 send;        /* sft_send or sft_ssl_send */
    sft_ssl_connection_t       *ssl;         /* NULL: plain */

    off_t                       sent;
    sft_log_t                  *log;
    sft_pool_t                 *pool;

    struct sockaddr_storage     sockaddr;
    socklen_t                   socklen;
    sft_str_t                   addr_text;

    sft_uint_t                  number;

    sft_event_proxy_t          *proxy;       /* its PROXY protocol header */

    unsigned                    session:1;   /* counted as a session */
    unsigned                    idle:1;      /* may be closed on shutdown */
    unsigned                    close:1;     /* asked to close */
    unsigned                    destroyed:1;
    unsigned                    error:1;
};


sft_int_t sft_parse_addr_port(sft_str_t *text, struct sockaddr_storage *sa,
    socklen_t *socklen);
size_t sft_sock_ntop(struct sockaddr *sa, u_char *buf, size_t len,
    sft_uint_t port);

sft_int_t sft_open_listening_sockets(sft_cycle_t *cycle,
    sft_cycle_t *old_cycle);
void sft_close_new_listening(sft_cycle_t *cycle);
void sft_close_unused_listening(sft_cycle_t *cycle, sft_cycle_t *old_cycle);
void sft_close_listening_sockets(sft_cycle_t *cycle);

sft_connection_t *sft_get_connection(sft_fd_t fd, sft_log_t *log);
void sft_free_connection(sft_connection_t *c);
void sft_close_connection(sft_connection_t *c);
void sft_close_idle_connections(sft_cycle_t *cycle);
void sft_close_all_connections(sft_cycle_t *cycle);

ssize_t sft_recv(sft_connection_t *c, u_char *buf, size_t size);
ssize_t sft_send(sft_connection_t *c, u_char *buf, size_t size);


#endif /* _SFT_CONNECTION_H_INCLUDED_ */
