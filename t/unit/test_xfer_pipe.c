/*
 * test_xfer_pipe.c -- the worker's spare splice pipes
 * (src/xfer/sft_xfer_pipe.c): a drained pipe is handed out again, empty
 * and as large as asked; one that may hold bytes is closed, never handed
 * out; no more than SFT_XFER_PIPE_SPARES are kept, the rest are closed;
 * the spares are closed at exit.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_xfer_pipe.h>
#include "sft_tap.h"


static int
is_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1;
}


static int
open_fds(void)
{
    int  fd, n;

    n = 0;

    for (fd = 0; fd < 1024; fd++) {
        n += is_open(fd);
    }

    return n;
}


int
main(void)
{
    int         a[2], b[2], c[2], fds[SFT_XFER_PIPE_SPARES + 4][2];
    int         base, i, all;
    char        byte;
    sft_uint_t  n;

    printf("1..12\n");

    base = open_fds();

    ok(sft_xfer_pipe_get(a) == SFT_OK && is_open(a[0]) && is_open(a[1]),
       "no spare: a new pipe");
    ok((fcntl(a[0], F_GETFL) & O_NONBLOCK)
       && (fcntl(a[1], F_GETFD) & FD_CLOEXEC),
       "non-blocking and close-on-exec");

    /* drained: what went in came out */
    ok(write(a[1], "xy", 2) == 2 && read(a[0], &byte, 1) == 1
       && read(a[0], &byte, 1) == 1, "used");

    sft_xfer_pipe_put(a, 0);
    ok(sft_xfer_pipe_spares() == 1 && is_open(a[0]),
       "a drained pipe is kept open as a spare");

    ok(sft_xfer_pipe_get(b) == SFT_OK && b[0] == a[0] && b[1] == a[1]
       && sft_xfer_pipe_spares() == 0, "and handed out again");
    ok(read(b[0], &byte, 1) == -1 && errno == EAGAIN,
       "empty when handed out");

    /* bytes left in it: closed, not kept */
    ok(write(b[1], "z", 1) == 1, "a byte left in it");
    sft_xfer_pipe_put(b, 1);
    ok(sft_xfer_pipe_spares() == 0 && !is_open(b[0]) && !is_open(b[1]),
       "a pipe that may hold bytes is closed");

    ok(sft_xfer_pipe_get(c) == SFT_OK
       && (read(c[0], &byte, 1) == -1 && errno == EAGAIN),
       "the next one handed out is empty");
    sft_xfer_pipe_put(c, 0);

    /* more back than kept */
    n = sft_nelems(fds);
    all = 1;

    for (i = 0; i < (int) n; i++) {
        all &= (sft_xfer_pipe_get(fds[i]) == SFT_OK);
    }

    for (i = 0; i < (int) n; i++) {
        sft_xfer_pipe_put(fds[i], 0);
    }

    ok(all && sft_xfer_pipe_spares() == SFT_XFER_PIPE_SPARES,
       "no more spares kept than SFT_XFER_PIPE_SPARES");
    ok(open_fds() == base + 2 * SFT_XFER_PIPE_SPARES,
       "the others are closed: no descriptor leaks");

    sft_xfer_pipe_close_spares();
    ok(sft_xfer_pipe_spares() == 0 && open_fds() == base,
       "every spare closed at exit");

    return failed ? 1 : 0;
}
