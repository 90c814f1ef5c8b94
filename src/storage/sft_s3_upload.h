/*
 * sft_s3_upload.h -- one object written to S3 as it arrives: the writes
 * are copied into buffer pool chunks that make up whole parts, each part
 * goes out as an UploadPart as soon as it is full while the next one
 * fills, and the commit is a CompleteMultipartUpload, or a PutObject for
 * an object smaller than one part.  Memory per upload is at most
 * parts_in_flight parts; a failure or an abort aborts the multipart
 * upload.  Also the sweep of multipart uploads left behind.
 *
 * Chunks are taken a whole part at a time: a part's chunks are gathered
 * by one part of the worker at a time (a FIFO of parts waiting), and its
 * bytes are placed only once it holds them all.  So no two uploads of a
 * worker can each hold half of what they need while the pool is empty,
 * and every part that holds chunks can fill, go out and give them back:
 * waiting for memory never waits on another waiting upload of the same
 * worker.  The parts of a worker leave an eighth of the pool to the
 * transfers that carry bytes into them, and a writer asks
 * sft_s3_upload_room() before it takes a chunk, so no transfer holds a
 * chunk while a part gathers.  The price is that an upload holds a whole
 * part from its first byte, even for a small object.
 */

#ifndef _SFT_S3_UPLOAD_H_INCLUDED_
#define _SFT_S3_UPLOAD_H_INCLUDED_


#include <sft_s3_client.h>
#include <sft_buffer.h>


#define SFT_S3_PART_MIN        ((size_t) 5 * 1024 * 1024)
#define SFT_S3_PART_MAX        ((off_t) 5 * 1024 * 1024 * 1024)
#define SFT_S3_PARTS_MAX       10000

/* the part size doubles after this many parts */
#define SFT_S3_PARTS_GROW      1000

/* parts held at once by one upload, at most */
#define SFT_S3_IN_FLIGHT_MAX   16

/*
 * Chunks of a pool of total that the parts of all workers hold
 * together, at most (reserved in the pool): the rest (an eighth)
 * carries the bytes of transfers into them, so a part that holds its
 * chunks can always fill.
 */
#define sft_s3_upload_chunks_max(total)                                      \
    ((total) - sft_max((total) / 8, 1))

/* the headers of a request that makes an object, at most */
#define SFT_S3_OBJECT_HEADERS  12

/* pieces written ahead of a gap, held at once */
#define SFT_S3_UPLOAD_RANGES   32


typedef enum {
    SFT_S3_CHECKSUM_CRC32C = 0,
    SFT_S3_CHECKSUM_MD5,
    SFT_S3_CHECKSUM_OFF
} sft_s3_checksum_e;


typedef enum {
    SFT_S3_SSE_NONE = 0,
    SFT_S3_SSE_S3,                       /* AES256 */
    SFT_S3_SSE_KMS                       /* aws:kms, kms_key_id */
} sft_s3_sse_e;


/* why a write, an open or a commit was refused: sft_s3_uploader_t.err */

typedef enum {
    SFT_S3_UPLOAD_OK = 0,
    SFT_S3_UPLOAD_BEHIND,                /* offset before what was sent */
    SFT_S3_UPLOAD_BEYOND,                /* past the window */
    SFT_S3_UPLOAD_HOLE,                  /* commit with bytes missing */
    SFT_S3_UPLOAD_EXISTS,                /* no-clobber: the name is taken */
    SFT_S3_UPLOAD_FAILED                 /* S3 or the network failed */
} sft_s3_upload_err_e;


typedef struct sft_s3_uploader_s  sft_s3_uploader_t;
typedef struct sft_s3_write_s     sft_s3_write_t;

typedef void (*sft_s3_upload_done_pt)(sft_s3_uploader_t *up, sft_int_t rc);
typedef void (*sft_s3_write_done_pt)(sft_s3_write_t *w, sft_int_t rc);


/* what the driver fills from its directives */

typedef struct {
    sft_s3_client_t       *client;
    sft_str_t              key;
    size_t                 part_size;         /* 0: SFT_S3_PART_MIN */
    sft_uint_t             parts_in_flight;   /* 0: 2 */
    sft_str_t              storage_class;     /* empty: the bucket's */
    sft_uint_t             sse;               /* sft_s3_sse_e */
    sft_str_t              kms_key_id;
    sft_uint_t             checksum;          /* sft_s3_checksum_e */
    time_t                 mtime;             /* x-amz-meta-mtime, 0: none */
    sft_str_t              content_type;      /* empty: the server's */
    sft_flag_t             no_clobber;        /* If-None-Match: * */

    /*
     * append: the new object begins with the append_size bytes of the
     * object under copy_source (empty: key), copied by the server in
     * pieces of at most copy_part_size (0: 5 GiB), or read into the first
     * part when they are fewer than 5 MiB; the pieces are copied only
     * while the source's ETag is copy_source_etag (when given)
     */
    off_t                  append_size;
    uint32_t               append_crc32c;
    sft_flag_t             append_crc32c_known;
    sft_str_t              copy_source;
    sft_str_t              copy_source_etag;
    off_t                  copy_part_size;

    sft_s3_write_done_pt   on_write;          /* a write that waited */
    sft_s3_upload_done_pt  on_done;           /* the commit's outcome */
    void                  *data;
} sft_s3_upload_conf_t;


/*
 * A write: the caller's, kept by it until it completed; the bytes at
 * offset (an object offset) in buf.  While it waits, the upload moves
 * offset, buf and len over what it placed.
 */

struct sft_s3_write_s {
    off_t                  offset;
    u_char                *buf;
    size_t                 len;
    void                  *data;

    /* private */
    sft_s3_write_t        *next;
};


typedef struct sft_s3_part_s  sft_s3_part_t;


struct sft_s3_uploader_s {
    sft_s3_upload_conf_t   conf;
    sft_pool_t            *pool;
    sft_log_t             *log;

    sft_uint_t             err;               /* sft_s3_upload_err_e */
    uint32_t               crc32c;            /* the whole object's */
    unsigned               crc32c_known:1;
    off_t                  size;              /* committed */
    sft_str_t              etag;

    /* chunks held now and at most, UploadParts running: for the tests */
    sft_uint_t             chunks;
    sft_uint_t             chunks_peak;
    sft_uint_t             sending;

    /* private */
    size_t                 chunk_size;
    off_t                  base;              /* the first new byte */
    off_t                  end;               /* all bytes before it held */
    sft_uint_t             next_part;         /* to be held next, 0-based */
    sft_uint_t             unsent;            /* the first not sent */
    sft_s3_part_t         *parts;             /* parts_in_flight slots */
    off_t                  ranges[SFT_S3_UPLOAD_RANGES][2];
    sft_uint_t             nranges;
    sft_s3_write_t        *waiting;
    sft_s3_write_t       **waiting_tail;
    sft_uint_t             spare;             /* reserved for the first */

    sft_str_t              upload_id;
    sft_s3_request_t      *control;           /* create, put, complete */
    sft_array_t            done;              /* sft_s3_part_done_t */
    sft_uint_t             copies;            /* copy parts */
    sft_uint_t             copies_started;
    sft_uint_t             copies_done;
    sft_s3_request_t      *copying[SFT_S3_IN_FLIGHT_MAX];
    sft_event_t            wake;              /* waiting writes again */
    sft_event_t           *room_wake;         /* a writer's: more fits */
    sft_s3_request_t      *load;              /* a small append's GET */
    off_t                  loaded;

    sft_uint_t             busy;              /* in its callbacks */

    unsigned               multipart:1;
    unsigned               loading:1;         /* part 0 waits for them */
    unsigned               commit_wanted:1;   /* once they are in */
    unsigned               restamp:1;         /* a time came too late */
    unsigned               aborted:1;
    unsigned               creating:1;
    unsigned               committing:1;
    unsigned               completing:1;
    unsigned               probed:1;          /* the name free at the end */
    unsigned               finished:1;
    unsigned               failed:1;
};


/*
 * SFT_OK with *out made; SFT_ERROR on a bad configuration or no memory.
 * Whenever *out is set it is freed by sft_s3_upload_abort().  The zero
 * fields of conf get their defaults; the keys are copied, the other
 * strings (the configuration's) must outlive the upload.  An append
 * starts its multipart upload and its copies, or the read of its small
 * object, at once; writes before append_size are refused (BEHIND).  An
 * upload committed with no write is a copy of the append_size bytes.
 */
sft_int_t sft_s3_upload_open(sft_s3_upload_conf_t *conf, sft_log_t *log,
    sft_s3_uploader_t **out);

/*
 * SFT_OK: the bytes were placed, buf is the caller's again; SFT_AGAIN:
 * they wait for pool memory or for a part in flight, and conf->on_write
 * says when they were placed (w is kept until then); SFT_DECLINED: a
 * write behind what was sent or past the window, err says which, the
 * upload unchanged; SFT_ERROR: the upload failed.
 */
sft_int_t sft_s3_upload_write(sft_s3_uploader_t *up, sft_s3_write_t *w);

/*
 * Before a writer takes memory for len bytes at offset: how many of them
 * the parts held now take, the parts they fall in asked for (gathering
 * starts).  Below len, wake is posted once when more may fit (a part
 * holds its chunks, a slot frees, the upload failed); NULL forgets it.
 * A write the upload would refuse is len: it fails at once.  With one
 * part in flight a write that reaches past the held part is len too:
 * its rest waits for that part to go, nothing else can free the slot.
 */
size_t sft_s3_upload_room(sft_s3_uploader_t *up, off_t offset, size_t len,
    sft_event_t *wake);

/* a time for the object (x-amz-meta-mtime) before the commit */
void sft_s3_upload_mtime(sft_s3_uploader_t *up, time_t mtime);

/* once no write waits: conf->on_done follows, with err on a failure */
sft_int_t sft_s3_upload_commit(sft_s3_uploader_t *up);

/* nothing becomes visible; no callback runs after it; up is freed */
void sft_s3_upload_abort(sft_s3_uploader_t *up);

/*
 * One header, its value copied into r's pool; and the headers of a
 * request that makes an object (PutObject, CreateMultipartUpload,
 * CopyObject): uc's storage class, encryption, x-amz-meta-mtime,
 * content type (when given), and x-amz-meta-crc32c when crc is given.
 * r->headers has room for SFT_S3_OBJECT_HEADERS.
 */
sft_int_t sft_s3_object_header(sft_s3_request_t *r, const char *name,
    sft_str_t *value);
sft_int_t sft_s3_object_headers(sft_s3_upload_conf_t *uc,
    sft_s3_request_t *r, uint32_t *crc);

/*
 * r, a PUT of its key, made a CopyObject of source (NULL: itself) that
 * replaces the object's metadata with uc's and crc (above), and holds
 * only while the source's ETag is etag (when given).
 */
sft_int_t sft_s3_object_restamp(sft_s3_upload_conf_t *uc,
    sft_s3_request_t *r, sft_str_t *source, uint32_t *crc, sft_str_t *etag);


/* the sweep of multipart uploads older than age under a prefix */

typedef struct sft_s3_sweep_s  sft_s3_sweep_t;

typedef void (*sft_s3_sweep_done_pt)(sft_s3_sweep_t *s, sft_int_t rc);

struct sft_s3_sweep_s {
    sft_s3_client_t       *client;
    sft_str_t              prefix;
    time_t                 age;               /* seconds */
    sft_s3_sweep_done_pt   on_done;
    void                  *data;

    sft_uint_t             aborted;           /* the outcome */

    /* private */
    sft_pool_t            *pool;
    sft_s3_request_t      *r;
    sft_s3_uploads_t       page;
    sft_uint_t             next;              /* in page */
    time_t                 before;
};

/* the sweep runs on the loop; on_done when it ended */
sft_int_t sft_s3_sweep_start(sft_s3_sweep_t *s);
void sft_s3_sweep_cancel(sft_s3_sweep_t *s);


#endif /* _SFT_S3_UPLOAD_H_INCLUDED_ */
