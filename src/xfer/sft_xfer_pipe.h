/*
 * sft_xfer_pipe.h -- the worker's spare splice(2) pipes: an upload takes
 * one and gives it back when it ends with the pipe drained, so a stream
 * of uploads makes no pipe2(), fcntl() and close() each.
 */

#ifndef _SFT_XFER_PIPE_H_INCLUDED_
#define _SFT_XFER_PIPE_H_INCLUDED_


#define SFT_XFER_PIPE_SIZE     (1024 * 1024)    /* asked for, not needed */
#define SFT_XFER_PIPE_SPARES   16               /* kept at most */


sft_int_t sft_xfer_pipe_get(int fd[2]);
void sft_xfer_pipe_put(int fd[2], size_t left);
void sft_xfer_pipe_close_spares(void);
sft_uint_t sft_xfer_pipe_spares(void);


#endif /* _SFT_XFER_PIPE_H_INCLUDED_ */
