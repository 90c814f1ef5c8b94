/*
 * sft_storage_digest.h -- the digest of a byte range of an open storage
 * file (SHA-256, SHA-1, MD5, SHA-512, CRC-32, CRC-32C), one or one per
 * block, computed through the driver's read operation: on the thread
 * pool for a driver whose operations block, from its asynchronous reads
 * on the event loop for one whose do not; FTP HASH and SFTP check-file
 * are its protocol ends.
 */

#ifndef _SFT_STORAGE_DIGEST_H_INCLUDED_
#define _SFT_STORAGE_DIGEST_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>
#include <sft_storage.h>


#define SFT_DIGEST_CHUNK     65536     /* the read buffer of one digest */
#define SFT_DIGEST_MAX_SIZE  64        /* bytes of the longest (SHA-512) */
#define SFT_DIGEST_READS     4         /* reads in flight on the loop */


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

    /* the digest's own */
    u_char                *buf;         /* SFT_DIGEST_CHUNK, the thread's */
    off_t                  pos;         /* the next byte to hash */
    off_t                  last;        /* the end of the range */
    off_t                  block_end;   /* of the digest being computed */
    void                  *md;          /* its EVP_MD_CTX; NULL: a CRC */
    uint32_t               crc;
    unsigned               fed:1;       /* it has bytes */
};


sft_int_t sft_storage_digest(sft_storage_digest_t *d, sft_pool_t *pool,
    sft_thread_pool_t *tp);
void sft_storage_digest_run(sft_storage_digest_t *d);
size_t sft_storage_digest_size(sft_digest_algo_t algo);
uint32_t sft_crc32(uint32_t crc, const u_char *p, size_t len);

/*
 * The steps every way of reading shares.  begin: the range of a file of
 * size bytes, SFT_OK to hash from d->pos to d->last, SFT_DONE when the
 * driver's stored digest answered, or SFT_ERROR (d->err).  update: the
 * next len bytes at d->pos, at most d->last - d->pos, a digest put out at
 * each end of a block.  finish: the last digest, if it is owed and no
 * error came; the state freed, whatever happened.  complete: on the
 * loop, the handler (a stop the owner asked for logged first).
 */
sft_int_t sft_storage_digest_begin(sft_storage_digest_t *d, off_t size);
sft_int_t sft_storage_digest_update(sft_storage_digest_t *d,
    const u_char *p, size_t len);
void sft_storage_digest_finish(sft_storage_digest_t *d);
void sft_storage_digest_complete(sft_storage_digest_t *d);

/* a driver whose operations do not block: its reads on the loop */
sft_int_t sft_storage_digest_async(sft_storage_digest_t *d,
    sft_pool_t *pool);


#endif /* _SFT_STORAGE_DIGEST_H_INCLUDED_ */
