/*
 * test_event_watch.c -- descriptors another library owns, on a real
 * epoll loop: level-triggered read and write interest that can be
 * changed and dropped, and unwatching that leaves the descriptor open.
 */

#include <sft_config.h>
#include <sft_core.h>
#include "sft_tap.h"


static sft_uint_t   reads, writes, ticks;
static sft_cycle_t  cycle;      /* the loop's, as a worker's lives on */


static void
on_read(sft_event_t *ev)
{
    (void) ev;
    reads++;
}


static void
on_write(sft_event_t *ev)
{
    (void) ev;
    writes++;
}


static void
on_tick(sft_event_t *ev)
{
    (void) ev;
    ticks++;
}


/* one turn of the loop, bounded by a 20 ms timer */

static void
turn(sft_cycle_t *cycle, sft_event_t *tick)
{
    reads = 0;
    writes = 0;
    sft_add_timer(tick, 20);
    sft_process_events_and_timers(cycle);
    sft_del_timer(tick);
}


int
main(void)
{
    int                 sv[2];
    sft_uint_t          free_n;
    sft_event_t         tick;
    sft_connection_t   *c;

    printf("1..7\n");

    sft_memzero(&cycle, sizeof(cycle));
    cycle.log = sft_log_init();
    cycle.pool = sft_create_pool(4096, cycle.log);
    sft_cycle = &cycle;

    sft_memzero(&tick, sizeof(tick));
    tick.handler = on_tick;
    tick.log = cycle.log;

    if (sft_event_init(&cycle, 16) != SFT_OK
        || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == -1)
    {
        printf("Bail out! no loop\n");
        return 1;
    }

    free_n = cycle.free_connection_n;

    c = sft_get_connection(sv[0], cycle.log);
    c->read->handler = on_read;
    c->write->handler = on_write;

    ok(sft_event_watch(c, SFT_EVENT_READ) == SFT_OK
       && write(sv[1], "x", 1) == 1, "watched for reading");

    turn(&cycle, &tick);
    ok(reads == 1 && writes == 0, "readable: the read handler, only");

    turn(&cycle, &tick);
    ok(reads == 1, "still unread: reported again (level-triggered)");

    ok(sft_event_watch(c, SFT_EVENT_WRITE) == SFT_OK
       && (turn(&cycle, &tick), writes == 1 && reads == 0),
       "changed to writing: the write handler, only");

    ok(sft_event_watch(c, SFT_EVENT_READ | SFT_EVENT_WRITE) == SFT_OK
       && (turn(&cycle, &tick), writes == 1 && reads == 1),
       "both");

    ok(sft_event_watch(c, SFT_EVENT_NONE) == SFT_OK
       && (turn(&cycle, &tick), writes == 0 && reads == 0),
       "dropped: nothing, though readable and writable");

    (void) sft_event_watch(c, SFT_EVENT_READ);
    sft_event_unwatch(c);
    turn(&cycle, &tick);

    ok(reads == 0 && fcntl(sv[0], F_GETFD) != -1
       && cycle.free_connection_n == free_n,
       "unwatched: no event, the slot free, the descriptor still open");

    close(sv[0]);
    close(sv[1]);
    sft_destroy_pool(cycle.pool);

    return failed ? 1 : 0;
}
