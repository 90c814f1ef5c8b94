/*
 * sft_vfs.h -- a session's view of a storage: root and home, current
 * directory, path normalisation, permissions (per-session mask, per-directory
 * rules, deny/hide filters) and quota accounting, enforced once here for
 * every protocol before a storage driver is called.
 */

#ifndef _SFT_VFS_H_INCLUDED_
#define _SFT_VFS_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>
#include <sft_perm.h>
#include <sft_storage.h>
#include <sft_usage.h>


#define SFT_VFS_FILTER_DENY  1
#define SFT_VFS_FILTER_HIDE  2


/*
 * non-zero if name (one path component) in the virtual directory dir
 * ("/" or "/a/b") matches the kind's patterns
 */
typedef int (*sft_vfs_filter_pt)(void *data, const u_char *dir,
    size_t dir_len, const u_char *name, size_t len, int kind);


/* "path" and below (a virtual path, normalised); the longest wins */

typedef struct {
    sft_str_t            path;
    uint32_t             perms;
} sft_vfs_rule_t;


/* 0 in a max means no limit; the usage is the user's, in shared memory */

typedef struct {
    off_t                max_bytes;
    off_t                max_files;
    sft_usage_t         *usage;
} sft_vfs_quota_t;


typedef struct {
    sft_storage_t       *storage;
    uint64_t             number;        /* this worker's count of sessions
                                           when this one began */
    sft_str_t            home;          /* under the storage root: "" or
                                           "users/alice", no slashes
                                           around */
    u_char               cwd[SFT_STORAGE_PATH_MAX + 1];   /* virtual */
    size_t               cwd_len;

    uint32_t             perms;         /* SFT_PERM_* */
    sft_vfs_rule_t      *rules;
    sft_uint_t           nrules;

    sft_vfs_filter_pt    filter;
    void                *filter_data;
    void                *account;       /* sft_user_t, for its filters */

    sft_vfs_quota_t     *quota;         /* NULL: none */
    sft_vfs_quota_t      user_quota;    /* the logged-in user's */
    void                *scan;          /* the home being counted */
    void                *lease;         /* changes waiting for room */

    sft_thread_pool_t   *thread_pool;   /* NULL: operations block */
    sft_log_t           *log;

    sft_uint_t           missing;       /* SFT_STORAGE_CAP_* the last
                                           operation was refused for
                                           (UNSUPPORTED), 0: none */

    unsigned             inplace_uploads:1;  /* no temp file for STOR */
    unsigned             session_open:1;     /* counted in the usage */
} sft_vfs_session_t;


/* an admin's recount of a user's home: sft_vfs_usage_recount() */

typedef struct sft_vfs_recount_s  sft_vfs_recount_t;

struct sft_vfs_recount_s {
    sft_vfs_session_t    vs;
    sft_storage_req_t    req;           /* req.err, req.usage: the count */
    sft_usage_t         *usage;
    off_t                max_bytes;     /* the user's quota */
    off_t                max_files;
    sft_str_t            user;
    void               (*handler)(sft_vfs_recount_t *rc);
    void                *data;
};


void sft_vfs_session_init(sft_vfs_session_t *s, sft_storage_t *storage,
    sft_str_t *home, uint32_t perms, sft_log_t *log);

/* out has SFT_STORAGE_PATH_MAX + 1 bytes; NUL-terminated; "/" for root */
struct sft_user_s;

sft_int_t sft_vfs_session_for_user(sft_vfs_session_t *vs,
    struct sft_user_s *u, sft_storage_t *storage, sft_pool_t *pool,
    sft_vfs_rule_t **rules, sft_uint_t *nrules_alloc, sft_log_t *log);
sft_int_t sft_vfs_user_open(sft_vfs_session_t *vs);
void sft_vfs_user_close(sft_vfs_session_t *vs);
sft_int_t sft_vfs_user_make_home(struct sft_user_s *u, sft_storage_t *storage,
    sft_pool_t *pool, sft_log_t *log);
void sft_vfs_usage_detach(sft_vfs_session_t *s);
sft_int_t sft_vfs_usage_count(sft_vfs_session_t *s, sft_storage_req_t *req);
sft_int_t sft_vfs_usage_recount(sft_vfs_recount_t *rc, struct sft_user_s *u,
    sft_pool_t *pool, sft_log_t *log);
sft_int_t sft_vfs_run(sft_vfs_session_t *s, sft_storage_req_t *req);
sft_int_t sft_vfs_run_leased(sft_vfs_session_t *s, sft_storage_req_t *req);
void sft_vfs_lease_detach(sft_vfs_session_t *s);
sft_int_t sft_vfs_need(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_uint_t cap);
void sft_vfs_log_change(sft_vfs_session_t *s, sft_storage_req_t *req);
sft_storage_err_t sft_vfs_normalize(const u_char *cwd, size_t cwd_len,
    const u_char *path, size_t len, u_char *out, size_t *out_len);
uint32_t sft_vfs_perms(sft_vfs_session_t *s, const u_char *vpath,
    size_t len);
sft_uint_t sft_vfs_read_only(sft_vfs_session_t *s);
sft_int_t sft_vfs_temp_name_owner(const u_char *name, size_t len);
sft_uint_t sft_vfs_is_temp_name(const u_char *name, size_t len);
sft_uint_t sft_vfs_visible(sft_vfs_session_t *s, sft_storage_dir_t *dir,
    const u_char *name, size_t len);

sft_int_t sft_vfs_quota_charge(sft_vfs_quota_t *q, off_t bytes,
    off_t files);
void sft_vfs_quota_credit(sft_vfs_quota_t *q, off_t bytes, off_t files);
sft_int_t sft_vfs_charge_write(sft_vfs_session_t *s,
    sft_storage_file_t *file, off_t offset, size_t len);

/*
 * The operations: each fills req (which the caller zeroes and gives pool,
 * handler and data) and returns SFT_OK, SFT_ERROR with req->err, or
 * SFT_AGAIN and calls req->handler on the event loop later.
 */

sft_int_t sft_vfs_stat(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len);
sft_int_t sft_vfs_lstat(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len);
sft_int_t sft_vfs_chdir(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len);
/* open_read: req->flags may hold SFT_STORAGE_READ_SEQUENTIAL and
   SFT_STORAGE_READ_DIGEST */
sft_int_t sft_vfs_open_read(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, const u_char *path, size_t len);
sft_int_t sft_vfs_open_write(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, const u_char *path, size_t len,
    sft_uint_t flags, off_t offset);
sft_int_t sft_vfs_read(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, u_char *buf, size_t len, off_t offset);
sft_int_t sft_vfs_write(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, u_char *buf, size_t len, off_t offset);
sft_int_t sft_vfs_copy(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *to, off_t woff, sft_storage_file_t *from, off_t roff,
    size_t len);
sft_int_t sft_vfs_close(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, sft_uint_t commit);
sft_int_t sft_vfs_fstat(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file);
sft_int_t sft_vfs_fsync(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file);
sft_int_t sft_vfs_truncate(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, off_t size);
sft_int_t sft_vfs_fchmod(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, const u_char *path, size_t len, mode_t mode);
sft_int_t sft_vfs_futimes(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, time_t atime, time_t mtime);
sft_int_t sft_vfs_opendir(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_dir_t *dir, const u_char *path, size_t len);
sft_int_t sft_vfs_readdir(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_dir_t *dir);
sft_int_t sft_vfs_closedir(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_dir_t *dir);
sft_int_t sft_vfs_mkdir(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len);
sft_int_t sft_vfs_rmdir(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len);
sft_int_t sft_vfs_unlink(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len);
sft_int_t sft_vfs_rename(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *from, size_t flen, const u_char *to, size_t tlen);
sft_int_t sft_vfs_setmtime(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, time_t mtime);
sft_int_t sft_vfs_settimes(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, time_t atime, time_t mtime);
sft_int_t sft_vfs_chmod(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, mode_t mode);
sft_int_t sft_vfs_statvfs(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len);
sft_int_t sft_vfs_readlink(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, u_char *buf, size_t size);
sft_int_t sft_vfs_symlink(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, const u_char *target, size_t tlen);
sft_int_t sft_vfs_link(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *from, size_t flen, const u_char *to, size_t tlen);


#endif /* _SFT_VFS_H_INCLUDED_ */
