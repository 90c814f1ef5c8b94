/*
 * sft_storage_digest.h -- the digest of a byte range of an open storage
 * file (SHA-256, SHA-1, MD5, SHA-512, CRC-32, CRC-32C), one or one per
 * block, computed on the thread pool through the driver's read operation;
 * FTP HASH and SFTP check-file are its protocol ends.
 */

#ifndef _SFT_STORAGE_DIGEST_H_INCLUDED_
#define _SFT_STORAGE_DIGEST_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>
#include <sft_storage.h>


#define SFT_DIGEST_CHUNK     65536     /* the read buffer of one digest */
#define SFT_DIGEST_MAX_SIZE  64        /* bytes of the longest (SHA-512) */


typedef enum {
    SFT_DIGEST_SHA256 = 0,
    SFT_DIGEST_SHA1,
    SFT_DIGEST_MD5,
    SFT_DIGEST_SHA512,
    SFT_DIGEST_CRC32,                  /* IEEE 802.3, as zlib's crc32() */
    SFT_DIGEST_CRC32C,                 /* Castagnoli, sft_crc32c() */
    SFT_DIGEST_N
} sft_digest_algo_t;


typedef struct sft_storage_digest_s  sft_storage_digest_t;

typedef void (*sft_storage_digest_pt)(sft_storage_digest_t *d);


/*
 * The caller fills the first part and keeps the structure, the file and
 * out until the handler has run.  The range is [start, end), end clipped
 * to the size of the file when the digest starts; a start past that size
 * is SFT_STORAGE_INVALID, a start at it the digest of nothing.  With a
 * block size, one digest per block goes to out, and more blocks than out
 * holds is SFT_STORAGE_INVALID.  A file that shrinks meanwhile ends the
 * range where its bytes end.
 */

struct sft_storage_digest_s {
    sft_storage_file_t    *file;        /* open for reading */
    sft_digest_algo_t      algo;
    off_t                  start;
    off_t                  end;         /* -1: the end of the file */
    off_t                  block;       /* 0: one digest of the range */
    u_char                *out;         /* the digests, back to back */
    size_t                 out_size;
    atomic_uint           *cancel;      /* NULL, or set by the owner once
                                           the result is not wanted: the
                                           reading stops, err is BUSY */
    sft_log_t             *log;
    sft_storage_digest_pt  handler;     /* on the event loop */
    void                  *data;

    /* results */
    sft_storage_err_t      err;
    int                    sys_err;     /* errno, for the log */
    off_t                  done;        /* the bytes digested */
    size_t                 out_len;

    u_char                *buf;         /* SFT_DIGEST_CHUNK */
};


sft_int_t sft_storage_digest(sft_storage_digest_t *d, sft_pool_t *pool,
    sft_thread_pool_t *tp);
void sft_storage_digest_run(sft_storage_digest_t *d);
size_t sft_storage_digest_size(sft_digest_algo_t algo);
uint32_t sft_crc32(uint32_t crc, const u_char *p, size_t len);


#endif /* _SFT_STORAGE_DIGEST_H_INCLUDED_ */
