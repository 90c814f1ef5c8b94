/*
 * sft_event.h -- events, the epoll loop, timers and posted events.
 */

#ifndef _SFT_EVENT_H_INCLUDED_
#define _SFT_EVENT_H_INCLUDED_


struct sft_event_s {
    void                   *data;
    sft_event_handler_pt    handler;
    sft_log_t              *log;

    unsigned                write:1;
    unsigned                accept:1;
    unsigned                instance:1;     /* detects stale epoll events */
    unsigned                active:1;
    unsigned                ready:1;
    unsigned                eof:1;
    unsigned                error:1;
    unsigned                timedout:1;
    unsigned                timer_set:1;
    unsigned                posted:1;
    unsigned                closed:1;
    unsigned                complete:1;

    sft_msec_t              timer_key;
    sft_uint_t              timer_index;

    sft_event_t            *posted_next;
    sft_event_t           **posted_prev;
};


typedef struct {
    sft_uint_t              connections;
    sft_flag_t              multi_accept;
} sft_event_conf_t;


/* the ctx of an SFT_EVENT_MODULE: its part of the events{} block */

typedef struct {
    void                 *(*create_conf)(sft_cycle_t *cycle);
    char                 *(*init_conf)(sft_cycle_t *cycle, void *conf);
} sft_event_module_t;


/*
 * A connection's PROXY protocol header (sft_event_proxy.c): kept where the
 * caller says, and the handler that takes the connection once the header
 * is read (refused NULL: the connection's address is the header's source)
 * or refused (refused says why, and the handler closes the connection).
 */
typedef void (*sft_event_proxy_pt)(sft_connection_t *c, const char *refused);

struct sft_event_proxy_s {
    sft_proxy_protocol_t    header;         /* socklen 0: LOCAL, UNKNOWN */
    sft_event_proxy_pt      handler;
    u_char                  text[INET6_ADDRSTRLEN];  /* c->addr_text */
};


/* sft_event_watch(): what a watched descriptor is polled for */
#define SFT_EVENT_NONE   0
#define SFT_EVENT_READ   1
#define SFT_EVENT_WRITE  2


sft_int_t sft_event_init(sft_cycle_t *cycle, sft_uint_t connections);
sft_int_t sft_event_add_conn(sft_connection_t *c);
sft_int_t sft_event_watch(sft_connection_t *c, sft_uint_t events);
void sft_event_unwatch(sft_connection_t *c);
sft_int_t sft_event_add_listening(sft_listening_t *ls);
sft_int_t sft_event_del_listening(sft_listening_t *ls);
sft_int_t sft_event_add_channel(sft_cycle_t *cycle, sft_fd_t fd);
sft_connection_t *sft_event_add_notify(sft_cycle_t *cycle, sft_fd_t fd,
    sft_event_handler_pt handler, void *data);
void sft_process_events_and_timers(sft_cycle_t *cycle);
void sft_event_stop_accepting(sft_cycle_t *cycle);

void sft_post_event(sft_event_t *ev);
void sft_delete_posted_event(sft_event_t *ev);

void sft_add_timer(sft_event_t *ev, sft_msec_t timer);
void sft_del_timer(sft_event_t *ev);
sft_msec_t sft_event_find_timer(void);
void sft_event_expire_timers(void);

void sft_event_accept(sft_event_t *ev);
void sft_event_proxy_protocol(sft_connection_t *c);
sft_uint_t sft_event_proxy_from(sft_array_t *from, struct sockaddr *sa);
void sft_event_proxy_read(sft_connection_t *c, sft_event_proxy_t *proxy,
    sft_msec_t timeout, sft_event_proxy_pt handler);

sft_event_conf_t *sft_event_get_conf(sft_cycle_t *cycle);
void *sft_event_get_module_conf(sft_cycle_t *cycle, sft_module_t *module);


extern sft_uint_t    sft_event_sessions;   /* client connections open */
extern sft_module_t  sft_events_module;
extern sft_module_t  sft_event_core_module;


#endif /* _SFT_EVENT_H_INCLUDED_ */
