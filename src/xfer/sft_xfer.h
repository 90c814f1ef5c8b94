/*
 * sft_xfer.h -- what every protocol reports when a file transfer ends: one
 * line in the transfer log (the xferlog format of wu-ftpd, which existing
 * tools parse) and the transfer counters by direction and data path.
 */

#ifndef _SFT_XFER_H_INCLUDED_
#define _SFT_XFER_H_INCLUDED_


/* the data path that served a transfer, a label of the transfer counters */

typedef enum {
    SFT_XFER_SENDFILE = 0,          /* sendfile(2), plaintext download */
    SFT_XFER_SPLICE,                /* splice(2), plaintext upload */
    SFT_XFER_POOLED,                /* buffer pool copy, plaintext */
    SFT_XFER_TLS,                   /* pooled copy, records by OpenSSL */
    SFT_XFER_TLS_SEALED,            /* pooled copy, records sealed by
                                       siftpd (sft_event_openssl_records.c) */
    SFT_XFER_KTLS,                  /* pooled copy, records by kernel TLS */
    SFT_XFER_SFTP,                  /* SFTP READ/WRITE over SSH */
    SFT_XFER_IO_URING,              /* pooled copy, plaintext, its file
                                       I/O (some or all) by io_uring */
    SFT_XFER_NPATHS
} sft_xfer_path_e;

#define SFT_XFER_DOWNLOAD  0
#define SFT_XFER_UPLOAD    1


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
void sft_xfer_count_ring(sft_uint_t write, size_t n);
const char *sft_xfer_path_name(sft_uint_t path);
size_t sft_xfer_user_path(const u_char *cwd, size_t cwd_len,
    const u_char *path, size_t len, u_char *out);


#endif /* _SFT_XFER_H_INCLUDED_ */
