/*
 * sft_xfer_pipe.c -- the worker's spare splice(2) pipes.  A pipe goes back
 * only when its owner knows it is empty (every byte spliced in was spliced
 * out again), so the next upload never finds another's bytes in it; one
 * that may hold bytes, or one too many, is closed.  The spares are
 * per process, non-blocking and close-on-exec, and closed at worker exit.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_xfer_pipe.h>


static int         sft_xfer_pipe_spare[SFT_XFER_PIPE_SPARES][2];
static sft_uint_t  sft_xfer_pipe_nspare;


/* a spare, or a new pipe; SFT_ERROR with errno set */

sft_int_t
sft_xfer_pipe_get(int fd[2])
{
    if (sft_xfer_pipe_nspare) {
        sft_xfer_pipe_nspare--;
        fd[0] = sft_xfer_pipe_spare[sft_xfer_pipe_nspare][0];
        fd[1] = sft_xfer_pipe_spare[sft_xfer_pipe_nspare][1];
        return SFT_OK;
    }

    if (pipe2(fd, O_NONBLOCK|O_CLOEXEC) == -1) {
        return SFT_ERROR;
    }

    /* a larger pipe moves more per call; the default works too */
    (void) fcntl(fd[1], F_SETPIPE_SZ, SFT_XFER_PIPE_SIZE);

    return SFT_OK;
}


/* left: the bytes its owner may have left in it */

void
sft_xfer_pipe_put(int fd[2], size_t left)
{
    if (left == 0 && sft_xfer_pipe_nspare < SFT_XFER_PIPE_SPARES) {
        sft_xfer_pipe_spare[sft_xfer_pipe_nspare][0] = fd[0];
        sft_xfer_pipe_spare[sft_xfer_pipe_nspare][1] = fd[1];
        sft_xfer_pipe_nspare++;
        return;
    }

    close(fd[0]);
    close(fd[1]);
}


void
sft_xfer_pipe_close_spares(void)
{
    while (sft_xfer_pipe_nspare) {
        sft_xfer_pipe_nspare--;
        close(sft_xfer_pipe_spare[sft_xfer_pipe_nspare][0]);
        close(sft_xfer_pipe_spare[sft_xfer_pipe_nspare][1]);
    }
}


sft_uint_t
sft_xfer_pipe_spares(void)
{
    return sft_xfer_pipe_nspare;
}
