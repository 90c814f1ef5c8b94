/*
 * sft_storage.h -- the storage layer: "storage NAME { driver ...; }" blocks,
 * the error vocabulary protocols translate into replies, and the
 * asynchronous driver interface (a vtable) the posix and s3 drivers fill.
 */

#ifndef _SFT_STORAGE_H_INCLUDED_
#define _SFT_STORAGE_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>


#define SFT_STORAGE_NAME_MAX    255
#define SFT_STORAGE_PATH_MAX    4096
#define SFT_STORAGE_DIR_BATCH   64

/*
 * The largest file offset (and size) a client may name: 2^60 bytes, far
 * above any file system and far enough below 2^63 that an offset plus a
 * length or a count of bytes never overflows an off_t.
 */
#define SFT_STORAGE_OFFSET_MAX  ((off_t) 1 << 60)


/* the errors every driver maps to and every protocol translates */

typedef enum {
    SFT_STORAGE_OK = 0,
    SFT_STORAGE_NOT_FOUND,
    SFT_STORAGE_EXISTS,
    SFT_STORAGE_NOT_DIR,
    SFT_STORAGE_IS_DIR,
    SFT_STORAGE_NOT_EMPTY,
    SFT_STORAGE_PERMISSION,
    SFT_STORAGE_QUOTA,
    SFT_STORAGE_NO_SPACE,
    SFT_STORAGE_NAME_INVALID,
    SFT_STORAGE_INVALID,          /* bad argument: offset past the end ... */
    SFT_STORAGE_LOOP,             /* too many symbolic links */
    SFT_STORAGE_UNSUPPORTED,
    SFT_STORAGE_IO,
    SFT_STORAGE_BUSY
} sft_storage_err_t;


typedef enum {
    SFT_STORAGE_STAT = 0,
    SFT_STORAGE_LSTAT,
    SFT_STORAGE_OPEN_READ,
    SFT_STORAGE_OPEN_WRITE,
    SFT_STORAGE_READ,
    SFT_STORAGE_WRITE,
    SFT_STORAGE_CLOSE,
    SFT_STORAGE_OPENDIR,
    SFT_STORAGE_READDIR,
    SFT_STORAGE_CLOSEDIR,
    SFT_STORAGE_MKDIR,
    SFT_STORAGE_RMDIR,
    SFT_STORAGE_UNLINK,
    SFT_STORAGE_RENAME,
    SFT_STORAGE_SETMTIME,
    SFT_STORAGE_CHMOD,
    SFT_STORAGE_STATVFS,
    SFT_STORAGE_READLINK,
    SFT_STORAGE_SYMLINK,
    SFT_STORAGE_LINK,             /* a hard link: path2 names path */
    SFT_STORAGE_USAGE,            /* bytes and files below a directory */
    SFT_STORAGE_FSTAT,            /* an open file, not its name */
    SFT_STORAGE_FSYNC,            /* an open file to stable storage */
    SFT_STORAGE_TRUNCATE,         /* an open file to offset bytes */
    SFT_STORAGE_FSETATTR,         /* an open file's mode, times */
    SFT_STORAGE_COPY,             /* a range of src into file (CAP_COPY) */
    SFT_STORAGE_CHECKSUM,         /* a stored digest of a whole file
                                     (CAP_CHECKSUMS); a driver that does
                                     not block answers it at once */
    SFT_STORAGE_NOPS
} sft_storage_op_t;


/* open for write: how */
#define SFT_STORAGE_WRITE_REPLACE  0x01  /* temp file, renamed on commit */
#define SFT_STORAGE_WRITE_INPLACE  0x02  /* existing file at an offset */
#define SFT_STORAGE_WRITE_APPEND   0x04  /* O_APPEND, created if missing */
#define SFT_STORAGE_WRITE_EXCL     0x08  /* refuse an existing name */
#define SFT_STORAGE_WRITE_NOREPLACE 0x10 /* commit refuses to replace */

/* open for read: the file is read once, front to back (a whole-file
   download): the driver may read ahead */
#define SFT_STORAGE_READ_SEQUENTIAL 0x100
/* ... for a digest of the whole file: a driver that keeps digests with its
   files (SFT_STORAGE_CAP_CHECKSUMS) has the file's at hand */
#define SFT_STORAGE_READ_DIGEST    0x200

/* set mtime: the atime too; fsetattr: which of mode, atime, mtime */
#define SFT_STORAGE_SET_ATIME      0x20
#define SFT_STORAGE_SET_MTIME      0x40
#define SFT_STORAGE_SET_MODE       0x80

/* what a driver can do beyond the operations every driver has */
#define SFT_STORAGE_CAP_FD         0x01  /* an open file has a descriptor
                                            (sendfile, splice) */
#define SFT_STORAGE_CAP_RANDOM_WRITE 0x02  /* writes at any offset */
#define SFT_STORAGE_CAP_APPEND     0x04
#define SFT_STORAGE_CAP_RENAME     0x08
#define SFT_STORAGE_CAP_LINKS      0x10  /* symbolic and hard links */
#define SFT_STORAGE_CAP_MODES      0x20  /* chmod */
#define SFT_STORAGE_CAP_COPY       0x40  /* server-side copy of a range */
#define SFT_STORAGE_CAP_CHECKSUMS  0x80  /* digests kept with the files */
#define SFT_STORAGE_CAP_WINDOW_WRITE 0x100 /* writes out of order within
                                            the driver's window: one it
                                            cannot take is UNSUPPORTED */
#define SFT_STORAGE_CAP_STAGED     0x200 /* every upload shows nothing
                                            before its commit, whatever
                                            its open's flags: an abort
                                            leaves the name as it was */


typedef struct sft_storage_s         sft_storage_t;
typedef struct sft_storage_req_s     sft_storage_req_t;
typedef struct sft_storage_driver_s  sft_storage_driver_t;

typedef void (*sft_storage_handler_pt)(sft_storage_req_t *req);


/*
 * Which file a name or an open file is, as the driver knows it: two equal
 * ids with a non-zero ino are the same file (posix: st_dev and st_ino; a
 * driver without such numbers may hash its own key into them, or leave
 * both 0: never the same as anything).
 */

typedef struct {
    uint64_t               dev;
    uint64_t               ino;
} sft_storage_id_t;


typedef struct {
    mode_t                 mode;          /* type and permission bits */
    off_t                  size;
    time_t                 mtime;
    time_t                 atime;
    sft_uint_t             nlink;
    uid_t                  uid;
    gid_t                  gid;
    sft_storage_id_t       id;
} sft_storage_stat_t;


typedef struct {
    uint64_t               total_bytes;
    uint64_t               free_bytes;    /* available to the server */
    uint64_t               total_files;
    uint64_t               free_files;
    sft_uint_t             block_size;
    sft_uint_t             name_max;
} sft_storage_statvfs_t;


/* what a directory tree holds: regular files' bytes, non-directories */

typedef struct {
    off_t                  bytes;
    off_t                  files;
} sft_storage_usage_t;


/*
 * An open file: what every driver has.  The caller keeps it (zeroed before
 * the open) until the close completed; the driver keeps its own state in
 * data from a successful open to the close (posix: the descriptor and the
 * temporary name), and nobody else looks into it: a descriptor is had
 * through sft_storage_file_fd() only (SFT_STORAGE_CAP_FD).
 */

typedef struct {
    sft_storage_t         *storage;
    off_t                  size;          /* at open; grows with writes */
    time_t                 mtime;
    off_t                  offset;        /* resume offset of a write */
    sft_uint_t             flags;         /* SFT_STORAGE_WRITE_*: REPLACE
                                             means nothing is visible under
                                             the name before the commit */
    sft_storage_id_t       id;            /* the file opened (an upload
                                             that replaces: the new one) */

    /* the last component of the path, for log lines: set before the open */
    u_char                 name[SFT_STORAGE_NAME_MAX + 1];

    off_t                  replaced_size; /* the file a commit replaces */
    off_t                  charged;       /* bytes charged to the quota */

    unsigned               write:1;
    unsigned               existed:1;     /* the name existed at open */
    unsigned               opened:1;      /* an open succeeded: close it */
    unsigned               closed:1;
    unsigned               error_logged:1; /* later failures are not */

    void                  *data;          /* driver */
} sft_storage_file_t;


typedef struct {
    u_char                 name[SFT_STORAGE_NAME_MAX + 1];
    size_t                 len;
    sft_storage_stat_t     st;            /* lstat, the entry itself */
} sft_storage_dirent_t;


typedef struct {
    sft_storage_t         *storage;
    sft_storage_dirent_t  *entries;       /* SFT_STORAGE_DIR_BATCH */
    u_char                *vdir;          /* the vfs' virtual path; preset
                                             SFT_STORAGE_PATH_MAX + 1 bytes
                                             with entries if the listing
                                             outlives the opendir pool */
    size_t                 vdir_len;
    sft_uint_t             nentries;      /* in the last batch */
    unsigned               eof:1;
    void                  *data;          /* driver: DIR * for posix */
} sft_storage_dir_t;


/*
 * One operation.  The caller fills op, the paths (relative to the storage
 * root, normalised: "." or "a/b"), the arguments and handler; an operation
 * either completes at once (SFT_OK, or SFT_ERROR with err set) or returns
 * SFT_AGAIN and calls handler later on the event loop.
 */

struct sft_storage_req_s {
    sft_storage_op_t       op;
    sft_storage_t         *storage;
    sft_pool_t            *pool;
    sft_log_t             *log;
    sft_thread_pool_t     *thread_pool;   /* NULL: run synchronously */

    u_char                *path;          /* NUL-terminated */
    u_char                *path2;         /* rename, link: the new name;
                                             symlink: the target */
    size_t                 base_len;      /* path and path2 begin with a
                                             directory this long (a home)
                                             that links cannot leave */

    sft_storage_file_t    *file;
    sft_storage_dir_t     *dir;
    sft_storage_file_t    *src;           /* copy: open for reading */
    off_t                  src_offset;

    u_char                *buf;           /* read, write, readlink,
                                             checksum */
    size_t                 len;
    off_t                  offset;
    sft_uint_t             flags;         /* checksum: the algorithm */
    mode_t                 mode;
    time_t                 mtime;
    time_t                 atime;         /* SFT_STORAGE_SET_ATIME */
    sft_uint_t             commit;        /* close: rename into place */

    /* results */
    sft_storage_err_t      err;
    int                    sys_err;       /* errno, for the log */
    const char            *why;           /* err in the driver's words for
                                             the client (static or in
                                             pool), NULL: err's own */
    ssize_t                nbytes;
    sft_storage_stat_t     st;
    sft_storage_statvfs_t  vfs;
    sft_storage_usage_t    usage;

    sft_storage_handler_pt handler;       /* completion, on the loop */
    void                  *data;

    uint64_t               session;       /* who asks: the vfs session's
                                             number (0: nobody in
                                             particular); a driver may
                                             answer a session's question
                                             again from what it told it a
                                             moment ago */

    sft_storage_handler_pt post;          /* the vfs' accounting */
    void                  *post_data;
    sft_thread_task_t     *task;
    sft_storage_req_t     *next;          /* the vfs' waiting list */
};


/* the driver vtable: every entry takes the request and returns as above */

typedef sft_int_t (*sft_storage_op_pt)(sft_storage_req_t *req);

/* is pid a live worker of this master (for a driver's sweep) */
typedef sft_uint_t (*sft_storage_live_pt)(pid_t pid);

struct sft_storage_driver_s {
    sft_str_t              name;
    sft_uint_t             blocking;      /* ops block: use the thread pool */
    sft_uint_t             caps;          /* SFT_STORAGE_CAP_* */
    sft_storage_op_pt      ops[SFT_STORAGE_NOPS];
    sft_fd_t             (*file_fd)(sft_storage_file_t *file);   /* CAP_FD */

    /* a request of a non-blocking driver that answered SFT_AGAIN: SFT_OK,
       stopped and its handler will not run; SFT_DECLINED, it completes */
    sft_int_t            (*cancel)(sft_storage_req_t *req);

    /* in the sweeper process: remove what dead workers left (temporary
       uploads) */
    void                 (*sweep)(sft_storage_t *st,
                                  sft_storage_live_pt live, sft_log_t *log);

    /* a driver built on another: its directives and instance serve this
       one's storages (NULL: its own) */
    sft_storage_driver_t  *base;

    /* an open upload: how many of len bytes at offset it takes now
       without waiting for memory; below len, wake is posted once when it
       may take more (NULL: the wake set before is forgotten).  NULL: a
       driver that takes any write at once */
    size_t               (*room)(sft_storage_file_t *file, off_t offset,
                                 size_t len, sft_event_t *wake);
};


struct sft_storage_s {
    sft_str_t              name;
    sft_storage_driver_t  *driver;
    void                  *driver_data;   /* the driver's instance */
    void                 **conf;          /* per storage module */
    sft_str_t              file;
    sft_uint_t             line;
    sft_thread_pool_t     *thread_pool;   /* its blocking operations' */
    sft_uint_t             caps;          /* SFT_STORAGE_CAP_* beyond the
                                             driver's, by the block's
                                             directives */
    unsigned               in_memory:1;   /* no operation can wait for a
                                             disk: all run on the loop */
};


/* the context of SFT_STORAGE_MODULE modules */

typedef struct {
    sft_storage_driver_t  *driver;        /* NULL for non-driver modules */
    void                *(*create_conf)(sft_conf_t *cf);
    char                *(*init_conf)(sft_conf_t *cf, sft_storage_t *st,
                                        void *conf);
} sft_storage_module_t;


typedef struct {
    void                 **conf;          /* the block's per-module confs */
} sft_storage_conf_ctx_t;


#define sft_storage_has(st, cap)                                            \
    (((st)->driver->caps | (st)->caps) & (cap))

sft_storage_t *sft_storage_find(sft_cycle_t *cycle, sft_str_t *name);
sft_storage_t **sft_storage_all(sft_cycle_t *cycle, sft_uint_t *n);
sft_int_t sft_storage_run(sft_storage_req_t *req);
sft_int_t sft_storage_cancel(sft_storage_req_t *req);
void sft_storage_complete(sft_storage_req_t *req);
sft_fd_t sft_storage_file_fd(sft_storage_file_t *file);

/*
 * Before a protocol takes a buffer pool chunk for bytes of an upload:
 * how many of len bytes at offset the file takes now.  Below len, wake
 * is posted once when it may take more; the caller leaves the bytes
 * where they are (the connection, its input) until then, so that no
 * chunk waits for the driver's memory.  sft_storage_room_forget() before
 * the wake event goes away.
 */
size_t sft_storage_room(sft_storage_file_t *file, off_t offset, size_t len,
    sft_event_t *wake);
void sft_storage_room_forget(sft_storage_file_t *file);
const char *sft_storage_cap_text(sft_uint_t cap);
sft_storage_err_t sft_storage_map_errno(int err);
const char *sft_storage_strerror(sft_storage_err_t err);
void sft_storage_stat_from_sys(sft_storage_stat_t *st, struct stat *sb);
sft_uint_t sft_storage_same_file(const sft_storage_id_t *a,
    const sft_storage_id_t *b);

/* offset and offset + len within SFT_STORAGE_OFFSET_MAX: as the client
   sent them, before any arithmetic */
sft_uint_t sft_storage_range_valid(uint64_t offset, uint64_t len);
sft_uint_t sft_storage_link_escapes(size_t depth, const u_char *target,
    size_t len);


/* a driver instance made without a configuration file (tests, the CLI) */
sft_storage_t *sft_storage_posix_create(sft_pool_t *pool, sft_log_t *log,
    sft_str_t *name, u_char *root);
void sft_storage_posix_destroy(sft_storage_t *st);

extern sft_uint_t    sft_storage_posix_no_openat2;   /* tests: fallback */
extern sft_storage_driver_t  sft_storage_posix_driver;
extern sft_module_t  sft_storage_module;
extern sft_module_t  sft_storage_core_module;
extern sft_module_t  sft_storage_posix_module;


#endif /* _SFT_STORAGE_H_INCLUDED_ */
