/*
 * sft_xfer.h -- what every protocol reports when a file transfer ends: one
 * line in the transfer log (the xferlog format of wu-ftpd, which existing
 * tools parse) and the transfer counters by direction and data path.
 */

#ifndef _SFT_XFER_H_INCLUDED_
#define _SFT_XFER_H_INCLUDED_


typedef struct {
    const char        *service;      /* "ftp", "sftp" */
    sft_str_t         *peer;         /* the client's address, text */
    sft_str_t         *user;
    const u_char      *path;         /* as the client named it */
    size_t             path_len;
    const u_char      *cwd;          /* what a relative path is in */
    size_t             cwd_len;
    off_t              bytes;
    sft_msec_t         start;        /* sft_current_msec at the start */
    sft_uint_t         direction;    /* SFT_XFER_DOWNLOAD, _UPLOAD */
    sft_uint_t         data_path;    /* sft_xfer_path_e */
    unsigned           ascii:1;
    unsigned           complete:1;
} sft_xfer_t;


void sft_xfer_done(sft_xfer_t *x);


#endif /* _SFT_XFER_H_INCLUDED_ */
