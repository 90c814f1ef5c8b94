/*
 * sft_storage_posix.c -- the posix storage driver: a directory on a local
 * filesystem, every path resolved beneath its root (openat2 with
 * RESOLVE_BENEATH, or a component-by-component walk where the kernel has
 * no openat2), uploads through hidden temporary names renamed on commit.
 * Its operations block, so sft_storage_run() puts them on a thread pool.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_landlock.h>
#include <sft_storage.h>
#include <sft_vfs.h>
#include <dirent.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>

#if (SFT_HAVE_OPENAT2)
#include <linux/openat2.h>
#endif


#define SFT_POSIX_MAX_DEPTH   256
#define SFT_POSIX_MAX_LINKS   40
#define SFT_POSIX_USAGE_DEPTH 256       /* directory levels a scan walks */
#define SFT_POSIX_TEMP_NAME   232     /* of the name kept in a temp name */
#define SFT_POSIX_COPY_BUF    65536   /* the copy where the kernel has none */
#define SFT_POSIX_READ_AHEAD  (2 * 1024 * 1024)  /* asked for at open */


typedef struct {
    sft_str_t       root;
    sft_fd_t        root_fd;
    sft_log_t      *log;
    sft_flag_t      fsync;          /* uploads reach the disk before 226 */
} sft_posix_t;


/* an open file's state, in file->data from the open to the close */

typedef struct {
    sft_fd_t        fd;
    sft_fd_t        dirfd;          /* an upload: the parent, for commit */
    u_char          temp[SFT_STORAGE_NAME_MAX + 1];
    unsigned        temp_file:1;
} sft_posix_file_t;


typedef struct {
    sft_str_t       root;
    sft_flag_t      fsync;
    sft_str_t       file;
    sft_uint_t      line;
} sft_posix_conf_t;


typedef struct {
    sft_storage_live_pt  live;
    sft_log_t           *log;
    sft_storage_t       *storage;
    sft_uint_t           removed;
} sft_posix_sweep_t;


/* an entry of a tree walk: 0 goes on, an errno stops the walk */
typedef int (*sft_posix_visit_pt)(int dfd, const char *name,
    struct stat *sb, int level, void *data);


static void *sft_posix_create_conf(sft_conf_t *cf);
static char *sft_posix_init_conf(sft_conf_t *cf, sft_storage_t *st,
    void *conf);
static char *sft_posix_root(sft_conf_t *cf, sft_command_t *cmd, void *conf);
static sft_int_t sft_posix_make_root(sft_conf_t *cf, u_char *root);
static void sft_posix_check_root(sft_conf_t *cf, u_char *root,
    struct stat *sb);
static void sft_posix_cleanup(void *data);
static sft_uint_t sft_posix_in_memory(sft_posix_t *p);

static sft_int_t sft_posix_stat(sft_storage_req_t *req);
static sft_int_t sft_posix_lstat(sft_storage_req_t *req);
static sft_int_t sft_posix_open_read(sft_storage_req_t *req);
static sft_int_t sft_posix_open_write(sft_storage_req_t *req);
static sft_int_t sft_posix_read(sft_storage_req_t *req);
static sft_int_t sft_posix_write(sft_storage_req_t *req);
static sft_int_t sft_posix_close(sft_storage_req_t *req);
static sft_int_t sft_posix_opendir(sft_storage_req_t *req);
static sft_int_t sft_posix_readdir(sft_storage_req_t *req);
static sft_int_t sft_posix_closedir(sft_storage_req_t *req);
static sft_int_t sft_posix_mkdir(sft_storage_req_t *req);
static sft_int_t sft_posix_rmdir(sft_storage_req_t *req);
static sft_int_t sft_posix_unlink(sft_storage_req_t *req);
static sft_int_t sft_posix_rename(sft_storage_req_t *req);
static sft_int_t sft_posix_setmtime(sft_storage_req_t *req);
static sft_int_t sft_posix_chmod(sft_storage_req_t *req);
static sft_int_t sft_posix_statvfs(sft_storage_req_t *req);
static sft_int_t sft_posix_readlink(sft_storage_req_t *req);
static sft_int_t sft_posix_symlink(sft_storage_req_t *req);
static sft_int_t sft_posix_link(sft_storage_req_t *req);
static sft_int_t sft_posix_usage(sft_storage_req_t *req);
static int sft_posix_tree(int fd, sft_posix_visit_pt visit, void *data);
static sft_int_t sft_posix_fstat(sft_storage_req_t *req);
static sft_int_t sft_posix_fsync(sft_storage_req_t *req);
static sft_int_t sft_posix_truncate(sft_storage_req_t *req);
static sft_int_t sft_posix_fsetattr(sft_storage_req_t *req);
static sft_int_t sft_posix_copy(sft_storage_req_t *req);
static int sft_posix_sweep_visit(int dfd, const char *name,
    struct stat *sb, int level, void *data);
static sft_fd_t sft_posix_fd(sft_storage_file_t *file);
static void sft_posix_sweep(sft_storage_t *st, sft_storage_live_pt live,
    sft_log_t *log);


sft_uint_t  sft_storage_posix_no_openat2;

static atomic_uint  sft_posix_temp_counter;


sft_storage_driver_t  sft_storage_posix_driver = {
    sft_string("posix"),
    1,
    SFT_STORAGE_CAP_FD|SFT_STORAGE_CAP_RANDOM_WRITE|SFT_STORAGE_CAP_APPEND
    |SFT_STORAGE_CAP_RENAME|SFT_STORAGE_CAP_LINKS|SFT_STORAGE_CAP_MODES
    |SFT_STORAGE_CAP_COPY,
    {
        sft_posix_stat,
        sft_posix_lstat,
        sft_posix_open_read,
        sft_posix_open_write,
        sft_posix_read,
        sft_posix_write,
        sft_posix_close,
        sft_posix_opendir,
        sft_posix_readdir,
        sft_posix_closedir,
        sft_posix_mkdir,
        sft_posix_rmdir,
        sft_posix_unlink,
        sft_posix_rename,
        sft_posix_setmtime,
        sft_posix_chmod,
        sft_posix_statvfs,
        sft_posix_readlink,
        sft_posix_symlink,
        sft_posix_link,
        sft_posix_usage,
        sft_posix_fstat,
        sft_posix_fsync,
        sft_posix_truncate,
        sft_posix_fsetattr,
        sft_posix_copy,
        NULL                               /* no stored checksums */
    },
    sft_posix_fd,
    NULL,                                  /* cancel: the thread pool's */
    sft_posix_sweep,
    NULL,
    NULL                                   /* room: any write at once */
};


static sft_command_t  sft_posix_commands[] = {

    { sft_string("root"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_posix_root,
      offsetof(sft_storage_conf_ctx_t, conf),
      0,
      NULL,
      sft_command_doc("path", "",
          "The directory the storage keeps its files in; made at start "
          "when missing.") },

    { sft_string("fsync"),
      SFT_STORAGE_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      offsetof(sft_storage_conf_ctx_t, conf),
      offsetof(sft_posix_conf_t, fsync),
      NULL,
      sft_command_doc("on | off", "off",
          "Flush an upload to disk before it is committed.") },

    sft_null_command
};


static sft_storage_module_t  sft_posix_module_ctx = {
    &sft_storage_posix_driver,
    sft_posix_create_conf,
    sft_posix_init_conf
};


sft_module_t  sft_storage_posix_module = {
    SFT_MODULE_V1,
    &sft_posix_module_ctx,                 /* module context */
    sft_posix_commands,                    /* module directives */
    SFT_STORAGE_MODULE,                    /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static void *
sft_posix_create_conf(sft_conf_t *cf)
{
    sft_posix_conf_t  *pcf;

    pcf = sft_pcalloc(cf->pool, sizeof(sft_posix_conf_t));
    if (pcf == NULL) {
        return NULL;
    }

    pcf->fsync = SFT_CONF_UNSET;

    return pcf;
}


static char *
sft_posix_root(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    struct stat        sb;
    sft_str_t         *value;
    sft_posix_conf_t  *pcf = conf;

    (void) cmd;

    if (pcf->root.data) {
        return "is duplicate";
    }

    value = cf->args->elts;
    pcf->root = value[1];

    if (sft_conf_full_name(cf->cycle, &pcf->root) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    if (stat((char *) pcf->root.data, &sb) == -1
        && (sft_errno != ENOENT
            || sft_posix_make_root(cf, pcf->root.data) != SFT_OK
            || stat((char *) pcf->root.data, &sb) == -1))
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, sft_errno,
                           "storage root \"%s\" is not accessible",
                           pcf->root.data);
        return SFT_CONF_ERROR;
    }

    if (!S_ISDIR(sb.st_mode)) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "storage root \"%s\" is not a directory",
                           pcf->root.data);
        return SFT_CONF_ERROR;
    }

    sft_posix_check_root(cf, pcf->root.data, &sb);

    pcf->file = cf->conf_file->name;
    pcf->line = cf->conf_file->line;

    return SFT_CONF_OK;
}


/*
 * A missing root (its parent must exist) is made on the first start, owned
 * by the workers' user ("user", which comes before the storage blocks).
 */

static sft_int_t
sft_posix_make_root(sft_conf_t *cf, u_char *root)
{
    uid_t  uid;
    gid_t  gid;

    if (mkdir((char *) root, 0750) == -1) {
        return SFT_ERROR;
    }

    sft_core_workers_owner(cf->cycle, &uid, &gid);

    if (chown((char *) root, uid, gid) == -1) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, sft_errno,
                           "chown(\"%s\", %d, %d) failed", root, (int) uid,
                           (int) gid);
        return SFT_ERROR;
    }

    sft_conf_log_error(SFT_LOG_NOTICE, cf, 0, "created storage root \"%s\"",
                       root);

    return SFT_OK;
}


/* a root the workers cannot write: every upload would fail */

static void
sft_posix_check_root(sft_conf_t *cf, u_char *root, struct stat *sb)
{
    if (!sft_core_workers_may(cf->cycle, sb, S_IWOTH)) {
        sft_conf_log_error(SFT_LOG_WARN, cf, 0,
                           "storage root \"%s\" is not writable by the "
                           "workers' user: uploads into it fail", root);
    }
}


static char *
sft_posix_init_conf(sft_conf_t *cf, sft_storage_t *st, void *conf)
{
    sft_posix_t         *p;
    sft_posix_conf_t    *pcf = conf;
    sft_pool_cleanup_t  *cln;

    if (st->driver != &sft_storage_posix_driver
        && st->driver->base != &sft_storage_posix_driver)
    {
        if (pcf->root.data || pcf->fsync != SFT_CONF_UNSET) {
            sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                          "\"%s\" is not a parameter of driver \"%.*s\" "
                          "in storage \"%.*s\"",
                          pcf->root.data ? "root" : "fsync",
                          SFT_STR_FMT(&st->driver->name),
                          SFT_STR_FMT(&st->name));
            return SFT_CONF_ERROR;
        }

        return SFT_CONF_OK;
    }

    if (pcf->root.data == NULL) {
        sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                      "no \"root\" in storage \"%.*s\" in %.*s:%lu",
                      SFT_STR_FMT(&st->name), SFT_STR_FMT(&st->file),
                      (unsigned long) st->line);
        return SFT_CONF_ERROR;
    }

    p = sft_pcalloc(cf->pool, sizeof(sft_posix_t));
    cln = sft_pool_cleanup_add(cf->cycle->pool, 0);
    if (p == NULL || cln == NULL) {
        return SFT_CONF_ERROR;
    }

    p->root = pcf->root;
    p->log = cf->cycle->log;
    p->fsync = (pcf->fsync == 1);
    p->root_fd = open((char *) p->root.data,
                      O_PATH|O_DIRECTORY|O_CLOEXEC);

    if (p->root_fd == -1) {
        sft_log_error(SFT_LOG_EMERG, cf->log, sft_errno,
                      "open(\"%s\") failed in %.*s:%lu", p->root.data,
                      SFT_STR_FMT(&pcf->file), (unsigned long) pcf->line);
        return SFT_CONF_ERROR;
    }

    cln->handler = sft_posix_cleanup;
    cln->data = p;

    if (sft_landlock_allow(cf->cycle, &p->root,
                           SFT_LANDLOCK_READ|SFT_LANDLOCK_WRITE
                           |SFT_LANDLOCK_CREATE|SFT_LANDLOCK_REMOVE)
        != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    st->driver_data = p;
    st->in_memory = sft_posix_in_memory(p);

    return SFT_CONF_OK;
}


static void
sft_posix_cleanup(void *data)
{
    sft_posix_t  *p = data;

    if (p->root_fd != SFT_INVALID_FILE) {
        close(p->root_fd);
        p->root_fd = SFT_INVALID_FILE;
    }
}


sft_storage_t *
sft_storage_posix_create(sft_pool_t *pool, sft_log_t *log, sft_str_t *name,
    u_char *root)
{
    sft_posix_t    *p;
    sft_storage_t  *st;

    st = sft_pcalloc(pool, sizeof(sft_storage_t));
    p = sft_pcalloc(pool, sizeof(sft_posix_t));
    if (st == NULL || p == NULL) {
        return NULL;
    }

    p->root.data = root;
    p->root.len = sft_strlen(root);
    p->log = log;
    p->root_fd = open((char *) root, O_PATH|O_DIRECTORY|O_CLOEXEC);

    if (p->root_fd == -1) {
        sft_log_error(SFT_LOG_ERR, log, sft_errno,
                      "open(\"%s\") failed", root);
        return NULL;
    }

    st->name = *name;
    st->driver = &sft_storage_posix_driver;
    st->driver_data = p;
    st->in_memory = sft_posix_in_memory(p);

    return st;
}


/*
 * tmpfs and ramfs never wait for a disk: their operations run on the loop,
 * without a thread pool round trip (a file system mounted below such a
 * root would lose that guarantee: docs/storage.md)
 */

static sft_uint_t
sft_posix_in_memory(sft_posix_t *p)
{
    struct statfs  fs;

    return fstatfs(p->root_fd, &fs) == 0
           && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
}


void
sft_storage_posix_destroy(sft_storage_t *st)
{
    sft_posix_cleanup(st->driver_data);
}


/* path resolution beneath the root */

#if (SFT_HAVE_OPENAT2)

static int
sft_posix_openat2(int dirfd, const char *path, int flags, mode_t mode)
{
    struct open_how  how;

    sft_memzero(&how, sizeof(struct open_how));

    how.flags = flags | O_CLOEXEC;
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS;

    return (int) syscall(SYS_openat2, dirfd, path, &how,
                         sizeof(struct open_how));
}

#endif


/*
 * The fallback: walks rel from the root one component at a time, opening
 * each directory with O_NOFOLLOW and expanding symbolic links by hand;
 * an absolute link or a ".." above the root fails with EXDEV, as openat2
 * does.  Returns the directory holding the last component (to close) and
 * the component's name in name; with follow_last, name is no link.
 */

static int
sft_posix_walk(int top, const char *rel, int follow_last, char *name)
{
    int          fds[SFT_POSIX_MAX_DEPTH], depth, links, cur, fd, err, last;
    char         path[2 * SFT_STORAGE_PATH_MAX + 2];
    char         tmp[2 * SFT_STORAGE_PATH_MAX + 2];
    char         link[SFT_STORAGE_PATH_MAX + 1];
    char         comp[SFT_STORAGE_NAME_MAX + 1];
    char        *s;
    size_t       len, rest;
    ssize_t      n;
    struct stat  sb;

    len = strlen(rel);
    if (len > SFT_STORAGE_PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }

    memcpy(path, rel, len + 1);

    s = path;
    depth = 0;
    links = 0;
    cur = top;
    fd = -1;

    for ( ;; ) {

        while (*s == '/') {
            s++;
        }

        if (*s == '\0') {
            /* the path ends in a directory: "." in it */
            fd = fcntl(cur, F_DUPFD_CLOEXEC, 0);
            strcpy(name, ".");
            break;
        }

        len = strcspn(s, "/");

        if (len > SFT_STORAGE_NAME_MAX) {
            errno = ENAMETOOLONG;
            break;
        }

        memcpy(comp, s, len);
        comp[len] = '\0';

        s += len;
        while (*s == '/') {
            s++;
        }

        last = (*s == '\0');

        if (strcmp(comp, ".") == 0) {
            continue;
        }

        if (strcmp(comp, "..") == 0) {
            if (depth == 0) {
                errno = EXDEV;
                break;
            }

            close(fds[--depth]);
            cur = depth ? fds[depth - 1] : top;
            continue;
        }

        if (last && !follow_last) {
            fd = fcntl(cur, F_DUPFD_CLOEXEC, 0);
            strcpy(name, comp);
            break;
        }

        if (fstatat(cur, comp, &sb, AT_SYMLINK_NOFOLLOW) == -1) {
            if (errno == ENOENT && last) {
                fd = fcntl(cur, F_DUPFD_CLOEXEC, 0);
                strcpy(name, comp);
            }

            break;
        }

        if (S_ISLNK(sb.st_mode)) {

            if (++links > SFT_POSIX_MAX_LINKS) {
                errno = ELOOP;
                break;
            }

            n = readlinkat(cur, comp, link, sizeof(link) - 1);
            if (n == -1) {
                break;
            }

            link[n] = '\0';

            if (link[0] == '/') {
                errno = EXDEV;
                break;
            }

            rest = strlen(s);

            if ((size_t) n + 1 + rest >= sizeof(tmp)) {
                errno = ENAMETOOLONG;
                break;
            }

            memcpy(tmp, link, n);
            tmp[n] = '/';
            memcpy(tmp + n + 1, s, rest + 1);
            memcpy(path, tmp, n + 1 + rest + 1);
            s = path;
            continue;
        }

        if (last) {
            fd = fcntl(cur, F_DUPFD_CLOEXEC, 0);
            strcpy(name, comp);
            break;
        }

        if (!S_ISDIR(sb.st_mode)) {
            errno = ENOTDIR;
            break;
        }

        if (depth == SFT_POSIX_MAX_DEPTH) {
            errno = ENAMETOOLONG;
            break;
        }

        cur = openat(cur, comp, O_PATH|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC);
        if (cur == -1) {
            break;
        }

        fds[depth++] = cur;
    }

    err = errno;

    while (depth) {
        close(fds[--depth]);
    }

    errno = err;

    return fd;
}


/* opens rel beneath top; follow: whether a final link is followed */

static int
sft_posix_open_at(int top, const char *rel, int flags, mode_t mode,
    int follow)
{
    int   dfd, fd, err;
    char  name[SFT_STORAGE_NAME_MAX + 1];

#if (SFT_HAVE_OPENAT2)

    if (!sft_storage_posix_no_openat2) {
        fd = sft_posix_openat2(top, rel, flags | (follow ? 0 : O_NOFOLLOW),
                               mode);

        if (fd != -1 || errno != ENOSYS) {
            return fd;
        }

        sft_storage_posix_no_openat2 = 1;
    }

#endif

    dfd = sft_posix_walk(top, rel, follow, name);
    if (dfd == -1) {
        return -1;
    }

    fd = openat(dfd, name, flags|O_NOFOLLOW|O_CLOEXEC, mode);

    err = errno;
    close(dfd);
    errno = err;

    return fd;
}


/* the directory holding rel's last component, which is not followed */

static int
sft_posix_parent_at(int top, const char *rel, char *name)
{
    int          fd;
    char        *slash;
    size_t       len;
#if (SFT_HAVE_OPENAT2)
    char         dir[SFT_STORAGE_PATH_MAX + 1];
#endif

    len = strlen(rel);
    slash = strrchr(rel, '/');

    if (len > SFT_STORAGE_PATH_MAX
        || strlen(slash ? slash + 1 : rel) > SFT_STORAGE_NAME_MAX)
    {
        errno = ENAMETOOLONG;
        return -1;
    }

#if (SFT_HAVE_OPENAT2)

    if (!sft_storage_posix_no_openat2) {

        if (slash) {
            memcpy(dir, rel, slash - rel);
            dir[slash - rel] = '\0';

        } else {
            strcpy(dir, ".");
        }

        fd = sft_posix_openat2(top, dir, O_PATH|O_DIRECTORY, 0);

        if (fd != -1) {
            strcpy(name, slash ? slash + 1 : rel);
            return fd;
        }

        if (errno != ENOSYS) {
            return -1;
        }

        sft_storage_posix_no_openat2 = 1;
    }

#endif

    fd = sft_posix_walk(top, rel, 0, name);

    return fd;
}


/*
 * The directory a request is confined to: the root, or the first
 * req->base_len bytes of path (the user's home, opened beneath the root),
 * so that no link inside a home leads into another.  *rel: the rest.
 */

static int
sft_posix_top(sft_posix_t *p, sft_storage_req_t *req, const char *path,
    const char **rel)
{
    char  base[SFT_STORAGE_PATH_MAX + 1];

    *rel = path;

    if (req->base_len == 0) {
        return p->root_fd;
    }

    if (req->base_len > SFT_STORAGE_PATH_MAX
        || strncmp(path, (char *) req->path, req->base_len) != 0
        || (path[req->base_len] != '/' && path[req->base_len] != '\0'))
    {
        errno = EXDEV;
        return -1;
    }

    memcpy(base, path, req->base_len);
    base[req->base_len] = '\0';

    *rel = path[req->base_len] ? path + req->base_len + 1 : ".";

    return sft_posix_open_at(p->root_fd, base, O_PATH|O_DIRECTORY, 0, 1);
}


/* opens path (name == NULL) or its parent (name: the last component) */

static int
sft_posix_resolve(sft_posix_t *p, sft_storage_req_t *req, const char *path,
    int flags, mode_t mode, int follow, char *name)
{
    int          top, fd, err;
    const char  *rel;

    top = sft_posix_top(p, req, path, &rel);
    if (top == -1) {
        return -1;
    }

    fd = name ? sft_posix_parent_at(top, rel, name)
              : sft_posix_open_at(top, rel, flags, mode, follow);

    if (top != p->root_fd) {
        err = errno;
        close(top);
        errno = err;
    }

    return fd;
}


static int
sft_posix_open(sft_posix_t *p, sft_storage_req_t *req, const char *path,
    int flags, mode_t mode, int follow)
{
    return sft_posix_resolve(p, req, path, flags, mode, follow, NULL);
}


static int
sft_posix_parent(sft_posix_t *p, sft_storage_req_t *req, const char *path,
    char *name)
{
    return sft_posix_resolve(p, req, path, 0, 0, 0, name);
}


/*
 * Records a failed call: the error for the caller, and a log line with the
 * errno and the path; an error of the server's side (I/O, space, the
 * filesystem's own permissions) at "error", what a client asked for
 * (a missing name, ...) at "info".
 */

static sft_int_t
sft_posix_fail(sft_storage_req_t *req, const char *call)
{
    sft_uint_t  level;

    req->sys_err = errno;
    req->err = sft_storage_map_errno(errno);

    /* once per open file: pipelined writes fail together */

    if (req->file && req->file->error_logged) {
        return SFT_ERROR;
    }

    level = (req->err == SFT_STORAGE_IO || req->err == SFT_STORAGE_NO_SPACE
             || req->err == SFT_STORAGE_PERMISSION) ? SFT_LOG_ERR
                                                     : SFT_LOG_INFO;

    sft_log_error(level, req->log, req->sys_err,
                  "%s \"%s\" failed in storage \"%.*s\"", call,
                  req->path ? (char *) req->path
                            : req->file ? (char *) req->file->name : "",
                  SFT_STR_FMT(&req->storage->name));

    if (req->file) {
        req->file->error_logged = 1;
    }

    return SFT_ERROR;
}


static sft_int_t
sft_posix_stat(sft_storage_req_t *req)
{
    int           fd, rc;
    struct stat   sb;
    sft_posix_t  *p = req->storage->driver_data;

    fd = sft_posix_open(p, req, (char *) req->path, O_PATH, 0, 1);
    if (fd == -1) {
        return sft_posix_fail(req, "stat()");
    }

    rc = fstat(fd, &sb);
    close(fd);

    if (rc == -1) {
        return sft_posix_fail(req, "fstat()");
    }

    sft_storage_stat_from_sys(&req->st, &sb);

    return SFT_OK;
}


static sft_int_t
sft_posix_lstat(sft_storage_req_t *req)
{
    int           dfd, rc;
    char          name[SFT_STORAGE_NAME_MAX + 1];
    struct stat   sb;
    sft_posix_t  *p = req->storage->driver_data;

    dfd = sft_posix_parent(p, req, (char *) req->path, name);
    if (dfd == -1) {
        return sft_posix_fail(req, "lstat()");
    }

    rc = fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW);
    close(dfd);

    if (rc == -1) {
        return sft_posix_fail(req, "lstat()");
    }

    sft_storage_stat_from_sys(&req->st, &sb);

    return SFT_OK;
}


/* the driver's part of a file being opened; freed by the close */

static sft_posix_file_t *
sft_posix_file_new(sft_storage_req_t *req)
{
    sft_posix_file_t  *pf;

    pf = calloc(1, sizeof(sft_posix_file_t));
    if (pf == NULL) {
        req->err = SFT_STORAGE_BUSY;
        return NULL;
    }

    pf->fd = SFT_INVALID_FILE;
    pf->dirfd = SFT_INVALID_FILE;
    req->file->data = pf;

    return pf;
}


static void
sft_posix_file_free(sft_storage_file_t *file)
{
    free(file->data);
    file->data = NULL;
}


/* the descriptor of an open file; SFT_INVALID_FILE once it is closed */

static sft_fd_t
sft_posix_fd(sft_storage_file_t *file)
{
    sft_posix_file_t  *pf = file->data;

    return pf ? pf->fd : SFT_INVALID_FILE;
}


/* an open that failed: nothing of it stays */

static sft_int_t
sft_posix_open_fail(sft_storage_req_t *req, sft_posix_file_t *pf,
    const char *call)
{
    if (call) {
        (void) sft_posix_fail(req, call);
    }

    if (pf->fd != SFT_INVALID_FILE) {
        close(pf->fd);
    }

    if (pf->dirfd != SFT_INVALID_FILE) {
        close(pf->dirfd);
    }

    sft_posix_file_free(req->file);

    return SFT_ERROR;
}


static sft_int_t
sft_posix_open_read(sft_storage_req_t *req)
{
    int                  fd;
    struct stat          sb;
    sft_posix_t         *p = req->storage->driver_data;
    sft_posix_file_t    *pf;
    sft_storage_file_t  *file = req->file;

    fd = sft_posix_open(p, req, (char *) req->path, O_RDONLY|O_NONBLOCK|O_NOCTTY,
                        0, 1);
    if (fd == -1) {
        return sft_posix_fail(req, "open()");
    }

    if (fstat(fd, &sb) == -1) {
        close(fd);
        return sft_posix_fail(req, "fstat()");
    }

    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        req->err = S_ISDIR(sb.st_mode) ? SFT_STORAGE_IS_DIR
                                       : SFT_STORAGE_PERMISSION;
        return SFT_ERROR;
    }

    pf = sft_posix_file_new(req);
    if (pf == NULL) {
        close(fd);
        return SFT_ERROR;
    }

    sft_storage_stat_from_sys(&req->st, &sb);

    /*
     * on the thread: the disk reads before the first chunk is asked for
     * (in memory there is no disk to start)
     */

    if ((req->flags & SFT_STORAGE_READ_SEQUENTIAL) && !req->storage->in_memory)
    {
        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        (void) posix_fadvise(fd, 0, sft_min(sb.st_size, SFT_POSIX_READ_AHEAD),
                             POSIX_FADV_WILLNEED);
    }

    pf->fd = fd;
    file->storage = req->storage;
    file->id = req->st.id;
    file->size = sb.st_size;
    file->mtime = sb.st_mtime;
    file->write = 0;

    return SFT_OK;
}


static void
sft_posix_temp_name(u_char *temp, const char *name)
{
    size_t           len, i;
    uint64_t         v;
    struct timespec  ts;
    static const char  chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

    clock_gettime(CLOCK_REALTIME, &ts);

    v = (uint64_t) ts.tv_nsec ^ ((uint64_t) ts.tv_sec << 20)
        ^ ((uint64_t) sft_pid << 40)
        ^ ((uint64_t) atomic_fetch_add(&sft_posix_temp_counter, 1) * 7919);

    len = sft_min(strlen(name), SFT_POSIX_TEMP_NAME);

    /*
     * the owner's pid: what a worker that died left, sft_posix_sweep()
     * tells from the live workers' uploads
     */

    *temp++ = '.';
    temp = sft_cpymem(temp, name, len);
    temp = sft_slprintf(temp, temp + 16, ".sft-%d-", (int) sft_pid);

    for (i = 0; i < 6; i++) {
        *temp++ = chars[v % 62];
        v /= 62;
    }

    *temp = '\0';
}


static sft_int_t
sft_posix_open_write(sft_storage_req_t *req)
{
    int                  fd, flags, i;
    char                 name[SFT_STORAGE_NAME_MAX + 1];
    mode_t               mode;
    struct stat          sb;
    sft_posix_t         *p = req->storage->driver_data;
    sft_posix_file_t    *pf;
    sft_storage_file_t  *file = req->file;

    mode = req->mode ? req->mode : 0644;

    pf = sft_posix_file_new(req);
    if (pf == NULL) {
        return SFT_ERROR;
    }

    file->storage = req->storage;
    file->flags = req->flags;
    file->offset = req->offset;
    file->write = 1;

    if (req->flags & SFT_STORAGE_WRITE_REPLACE) {

        pf->dirfd = sft_posix_parent(p, req, (char *) req->path, name);
        if (pf->dirfd == -1) {
            return sft_posix_open_fail(req, pf, "open()");
        }

        if (fstatat(pf->dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {

            if (S_ISDIR(sb.st_mode)) {
                req->err = SFT_STORAGE_IS_DIR;
                return sft_posix_open_fail(req, pf, NULL);
            }

            if (req->flags & SFT_STORAGE_WRITE_EXCL) {
                req->err = SFT_STORAGE_EXISTS;
                return sft_posix_open_fail(req, pf, NULL);
            }

            file->existed = 1;
            file->replaced_size = S_ISREG(sb.st_mode) ? sb.st_size : 0;

        } else if (errno != ENOENT) {
            return sft_posix_open_fail(req, pf, "fstatat()");
        }

        for (i = 0; i < 16; i++) {
            sft_posix_temp_name(pf->temp, name);

            pf->fd = openat(pf->dirfd, (char *) pf->temp,
                            O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC,
                            mode);

            if (pf->fd != -1 || errno != EEXIST) {
                break;
            }
        }

        if (pf->fd == -1 || fstat(pf->fd, &sb) == -1) {
            (void) sft_posix_fail(req, "open() temporary");

            if (pf->fd != -1) {
                close(pf->fd);
                pf->fd = SFT_INVALID_FILE;
                (void) unlinkat(pf->dirfd, (char *) pf->temp, 0);
            }

            return sft_posix_open_fail(req, pf, NULL);
        }

        /* the name resolved, which the commit renames to */
        strcpy((char *) file->name, name);
        pf->temp_file = 1;
        file->id.dev = sb.st_dev;
        file->id.ino = sb.st_ino;
        file->size = 0;
        file->mtime = time(NULL);

        return SFT_OK;
    }

    /* in place: REST+STOR, APPE, an SFTP open without TRUNC */

    /*
     * not O_APPEND: an appending upload's writes carry the offsets the VFS
     * gave them in order (sft_vfs_write()), and may run at once
     */
    flags = O_WRONLY|O_NONBLOCK|O_NOCTTY;

    fd = -1;

    if (!(req->flags & SFT_STORAGE_WRITE_EXCL)) {
        fd = sft_posix_open(p, req, (char *) req->path, flags, 0, 1);

        if (fd == -1 && errno != ENOENT) {
            return sft_posix_open_fail(req, pf, "open()");
        }

        file->existed = (fd != -1);
    }

    if (fd == -1) {
        fd = sft_posix_open(p, req, (char *) req->path, flags|O_CREAT|O_EXCL,
                            mode, 0);
        if (fd == -1) {
            return sft_posix_open_fail(req, pf, "open()");
        }
    }

    pf->fd = fd;

    if (fstat(fd, &sb) == -1) {
        return sft_posix_open_fail(req, pf, "fstat()");
    }

    if (!S_ISREG(sb.st_mode)) {
        req->err = SFT_STORAGE_PERMISSION;
        return sft_posix_open_fail(req, pf, NULL);
    }

    if (req->offset > sb.st_size) {
        req->err = SFT_STORAGE_INVALID;
        return sft_posix_open_fail(req, pf, NULL);
    }

    file->id.dev = sb.st_dev;
    file->id.ino = sb.st_ino;
    file->size = sb.st_size;
    file->replaced_size = sb.st_size;
    file->mtime = sb.st_mtime;

    if (req->flags & SFT_STORAGE_WRITE_APPEND) {
        file->offset = sb.st_size;
    }

    return SFT_OK;
}


static sft_int_t
sft_posix_read(sft_storage_req_t *req)
{
    ssize_t  n;

    do {
        n = pread(sft_posix_fd(req->file), req->buf, req->len, req->offset);
    } while (n == -1 && errno == EINTR);

    if (n == -1) {
        return sft_posix_fail(req, "pread()");
    }

    req->nbytes = n;

    return SFT_OK;
}


static sft_int_t
sft_posix_write(sft_storage_req_t *req)
{
    int      fd;
    size_t   done;
    ssize_t  n;

    fd = sft_posix_fd(req->file);

    for (done = 0; done < req->len; done += n) {

        n = pwrite(fd, req->buf + done, req->len - done,
                   req->offset + done);

        if (n == -1) {
            if (errno == EINTR) {
                n = 0;
                continue;
            }

            req->nbytes = done;
            return sft_posix_fail(req, "write()");
        }
    }

    req->nbytes = done;

    return SFT_OK;
}


/*
 * "fsync on": a finished upload's data and size are on the disk before it
 * is renamed into place and reported complete; a late write error (a full
 * disk on delayed allocation, EIO) fails the upload instead of losing it.
 */

static sft_int_t
sft_posix_sync(sft_storage_req_t *req)
{
    sft_posix_t  *p = req->storage->driver_data;

    if (!p->fsync || !req->commit) {
        return SFT_OK;
    }

    if (fdatasync(sft_posix_fd(req->file)) == -1) {
        return sft_posix_fail(req, "fdatasync()");
    }

    return SFT_OK;
}


static sft_int_t
sft_posix_close(sft_storage_req_t *req)
{
    int                  rc;
    unsigned int         flags;
    sft_posix_file_t    *pf;
    sft_storage_file_t  *file = req->file;

    pf = file->data;

    if (file->closed || pf == NULL) {
        file->closed = 1;
        return SFT_OK;
    }

    file->closed = 1;

    if (file->write && sft_posix_sync(req) != SFT_OK) {
        req->commit = 0;
    }

    rc = close(pf->fd);

    if (!pf->temp_file) {
        sft_posix_file_free(file);

        if (rc == -1 && file->write) {
            return sft_posix_fail(req, "close()");
        }

        return SFT_OK;
    }

    if (rc == -1) {
        (void) sft_posix_fail(req, "close()");

    } else if (req->commit && req->err == SFT_STORAGE_OK) {
        flags = (file->flags & SFT_STORAGE_WRITE_NOREPLACE)
                ? RENAME_NOREPLACE : 0;

        if (renameat2(pf->dirfd, (char *) pf->temp, pf->dirfd,
                      (char *) file->name, flags) == -1)
        {
            (void) sft_posix_fail(req, "rename()");
        }
    }

    if (!req->commit || req->err != SFT_STORAGE_OK) {
        if (unlinkat(pf->dirfd, (char *) pf->temp, 0) == -1) {
            sft_log_error(SFT_LOG_ERR, req->log, sft_errno,
                          "unlink() of temporary \"%s\" failed in "
                          "storage \"%.*s\"", pf->temp,
                          SFT_STR_FMT(&req->storage->name));
        }
    }

    close(pf->dirfd);
    sft_posix_file_free(file);

    return req->err == SFT_STORAGE_OK ? SFT_OK : SFT_ERROR;
}


static sft_int_t
sft_posix_opendir(sft_storage_req_t *req)
{
    int           fd;
    DIR          *d;
    sft_posix_t  *p = req->storage->driver_data;

    fd = sft_posix_open(p, req, (char *) req->path, O_RDONLY|O_DIRECTORY, 0, 1);
    if (fd == -1) {
        return sft_posix_fail(req, "opendir()");
    }

    d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return sft_posix_fail(req, "fdopendir()");
    }

    req->dir->storage = req->storage;
    req->dir->data = d;
    req->dir->eof = 0;
    req->dir->nentries = 0;

    return SFT_OK;
}


static sft_int_t
sft_posix_readdir(sft_storage_req_t *req)
{
    DIR                   *d;
    size_t                 len;
    struct stat            sb;
    struct dirent         *de;
    sft_storage_dir_t     *dir = req->dir;
    sft_storage_dirent_t  *e;

    d = dir->data;
    dir->nentries = 0;

    while (dir->nentries < SFT_STORAGE_DIR_BATCH) {

        errno = 0;
        de = readdir(d);

        if (de == NULL) {
            if (errno) {
                return sft_posix_fail(req, "readdir()");
            }

            dir->eof = 1;
            break;
        }

        if (de->d_name[0] == '.'
            && (de->d_name[1] == '\0'
                || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
        {
            continue;
        }

        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == -1) {
            continue;          /* removed since */
        }

        len = strlen(de->d_name);
        e = &dir->entries[dir->nentries++];
        memcpy(e->name, de->d_name, len + 1);
        e->len = len;
        sft_storage_stat_from_sys(&e->st, &sb);
    }

    return SFT_OK;
}


static sft_int_t
sft_posix_closedir(sft_storage_req_t *req)
{
    if (req->dir->data) {
        closedir(req->dir->data);
        req->dir->data = NULL;
    }

    return SFT_OK;
}


static sft_int_t
sft_posix_mkdir(sft_storage_req_t *req)
{
    int           dfd, rc;
    char          name[SFT_STORAGE_NAME_MAX + 1];
    sft_posix_t  *p = req->storage->driver_data;

    dfd = sft_posix_parent(p, req, (char *) req->path, name);
    if (dfd == -1) {
        return sft_posix_fail(req, "mkdir()");
    }

    rc = mkdirat(dfd, name, req->mode ? req->mode : 0755);
    close(dfd);

    if (rc == -1) {
        return sft_posix_fail(req, "mkdir()");
    }

    return SFT_OK;
}


static sft_int_t
sft_posix_rmdir(sft_storage_req_t *req)
{
    int           dfd, rc;
    char          name[SFT_STORAGE_NAME_MAX + 1];
    sft_posix_t  *p = req->storage->driver_data;

    dfd = sft_posix_parent(p, req, (char *) req->path, name);
    if (dfd == -1) {
        return sft_posix_fail(req, "rmdir()");
    }

    rc = unlinkat(dfd, name, AT_REMOVEDIR);

    if (rc == -1 && errno == EEXIST) {
        errno = ENOTEMPTY;
    }

    close(dfd);

    if (rc == -1) {
        return sft_posix_fail(req, "rmdir()");
    }

    return SFT_OK;
}


static sft_int_t
sft_posix_unlink(sft_storage_req_t *req)
{
    int           dfd, rc;
    char          name[SFT_STORAGE_NAME_MAX + 1];
    struct stat   sb;
    sft_posix_t  *p = req->storage->driver_data;

    dfd = sft_posix_parent(p, req, (char *) req->path, name);
    if (dfd == -1) {
        return sft_posix_fail(req, "unlink()");
    }

    rc = fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW);

    if (rc == 0 && S_ISDIR(sb.st_mode)) {
        close(dfd);
        req->err = SFT_STORAGE_IS_DIR;
        return SFT_ERROR;
    }

    if (rc == 0) {
        sft_storage_stat_from_sys(&req->st, &sb);
        rc = unlinkat(dfd, name, 0);
    }

    close(dfd);

    if (rc == -1) {
        return sft_posix_fail(req, "unlink()");
    }

    return SFT_OK;
}


/* the level of the directory holding path (a rename's), below the home */

static size_t
sft_posix_depth(sft_storage_req_t *req, const u_char *path)
{
    size_t         n;
    const u_char  *p;

    n = 0;

    for (p = path + req->base_len; *p; p++) {
        n += (*p == '/');
    }

    /* below a home, the rest begins with a slash */

    return (req->base_len && n) ? n - 1 : n;
}


/* 0, or EXDEV if the relative link name in dfd would climb above depth */

static int
sft_posix_link_check(int dfd, const char *name, size_t depth)
{
    ssize_t  n;
    char     target[SFT_STORAGE_PATH_MAX + 1];

    n = readlinkat(dfd, name, target, sizeof(target) - 1);

    if (n == -1) {
        return errno;
    }

    if (n == 0 || target[0] == '/'
        || !sft_storage_link_escapes(depth, (u_char *) target, n))
    {
        return 0;
    }

    return EXDEV;
}


static int
sft_posix_link_visit(int dfd, const char *name, struct stat *sb, int level,
    void *data)
{
    size_t  *depth = data;

    return S_ISLNK(sb->st_mode) ? sft_posix_link_check(dfd, name,
                                                       *depth + level)
                                : 0;
}


/*
 * A relative link means something else in another directory: a link
 * renamed is checked as SYMLINK checks a new one, against the home; so
 * are the links inside a directory moved nearer to the home (moved to the
 * same level or deeper, none of them can climb out that could not
 * before).  0, or the errno that refuses the rename.
 */

static int
sft_posix_rename_links(sft_storage_req_t *req, int sfd, const char *sname,
    struct stat *sb)
{
    int     fd;
    size_t  from, to;

    from = sft_posix_depth(req, req->path);
    to = sft_posix_depth(req, req->path2);

    if (S_ISLNK(sb->st_mode)) {
        return sft_posix_link_check(sfd, sname, to);
    }

    if (!S_ISDIR(sb->st_mode) || to >= from) {
        return 0;
    }

    fd = openat(sfd, sname, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC);
    if (fd == -1) {
        return errno;
    }

    return sft_posix_tree(fd, sft_posix_link_visit, &to);
}


/* req->st: the target replaced, mode 0 if there was none */

static sft_int_t
sft_posix_rename(sft_storage_req_t *req)
{
    int           sfd, tfd, rc, err;
    char          sname[SFT_STORAGE_NAME_MAX + 1];
    char          tname[SFT_STORAGE_NAME_MAX + 1];
    struct stat   sb;
    sft_posix_t  *p = req->storage->driver_data;

    sft_memzero(&req->st, sizeof(sft_storage_stat_t));

    sfd = sft_posix_parent(p, req, (char *) req->path, sname);
    if (sfd == -1) {
        return sft_posix_fail(req, "rename()");
    }

    tfd = sft_posix_parent(p, req, (char *) req->path2, tname);
    if (tfd == -1) {
        close(sfd);
        return sft_posix_fail(req, "rename()");
    }

    if (fstatat(sfd, sname, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
        err = sft_posix_rename_links(req, sfd, sname, &sb);

        if (err) {
            close(sfd);
            close(tfd);
            errno = err;
            return sft_posix_fail(req, "rename()");
        }
    }

    if (fstatat(tfd, tname, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
        sft_storage_stat_from_sys(&req->st, &sb);
    }

    rc = renameat2(sfd, sname, tfd, tname,
                   (req->flags & SFT_STORAGE_WRITE_NOREPLACE)
                   ? RENAME_NOREPLACE : 0);

    if (rc == -1 && errno == EEXIST && req->st.mode
        && S_ISDIR(req->st.mode))
    {
        errno = ENOTEMPTY;
    }

    close(sfd);
    close(tfd);

    if (rc == -1) {
        return sft_posix_fail(req, "rename()");
    }

    return SFT_OK;
}


/*
 * The file path names (a final link followed, beneath the root) as an
 * O_PATH descriptor, and in proc its name under /proc/self/fd: a call by
 * that name acts on this very inode and needs no read or write access to
 * it, as the owner's chmod of a 0200 file must not.
 */

static int
sft_posix_open_inode(sft_posix_t *p, sft_storage_req_t *req, char *proc,
    size_t size)
{
    int  fd;

    fd = sft_posix_open(p, req, (char *) req->path, O_PATH, 0, 1);

    if (fd != -1) {
        (void) snprintf(proc, size, "/proc/self/fd/%d", fd);
    }

    return fd;
}


/* the mtime, and the atime with SFT_STORAGE_SET_ATIME */

static sft_int_t
sft_posix_setmtime(sft_storage_req_t *req)
{
    int              fd, rc;
    char             proc[32];
    struct timespec  ts[2];
    sft_posix_t     *p = req->storage->driver_data;

    fd = sft_posix_open_inode(p, req, proc, sizeof(proc));
    if (fd == -1) {
        return sft_posix_fail(req, "utimes()");
    }

    ts[0].tv_sec = req->atime;
    ts[0].tv_nsec = (req->flags & SFT_STORAGE_SET_ATIME) ? 0 : UTIME_OMIT;
    ts[1].tv_sec = req->mtime;
    ts[1].tv_nsec = 0;

    rc = utimensat(AT_FDCWD, proc, ts, 0);
    close(fd);

    if (rc == -1) {
        return sft_posix_fail(req, "utimes()");
    }

    return SFT_OK;
}


static sft_int_t
sft_posix_chmod(sft_storage_req_t *req)
{
    int           fd, rc;
    char          proc[32];
    sft_posix_t  *p = req->storage->driver_data;

    fd = sft_posix_open_inode(p, req, proc, sizeof(proc));
    if (fd == -1) {
        return sft_posix_fail(req, "chmod()");
    }

    rc = fchmodat(AT_FDCWD, proc, req->mode, 0);
    close(fd);

    if (rc == -1) {
        return sft_posix_fail(req, "chmod()");
    }

    return SFT_OK;
}


static sft_int_t
sft_posix_statvfs(sft_storage_req_t *req)
{
    int             fd, rc;
    struct statvfs  sv;
    sft_posix_t    *p = req->storage->driver_data;

    fd = sft_posix_open(p, req, (char *) req->path, O_PATH, 0, 1);
    if (fd == -1) {
        return sft_posix_fail(req, "statvfs()");
    }

    rc = fstatvfs(fd, &sv);
    close(fd);

    if (rc == -1) {
        return sft_posix_fail(req, "statvfs()");
    }

    req->vfs.total_bytes = (uint64_t) sv.f_blocks * sv.f_frsize;
    req->vfs.free_bytes = (uint64_t) sv.f_bavail * sv.f_frsize;
    req->vfs.total_files = sv.f_files;
    req->vfs.free_files = sv.f_favail;
    req->vfs.block_size = sv.f_bsize;
    req->vfs.name_max = sv.f_namemax;

    return SFT_OK;
}


static sft_int_t
sft_posix_readlink(sft_storage_req_t *req)
{
    int           dfd;
    char          name[SFT_STORAGE_NAME_MAX + 1];
    ssize_t       n;
    sft_posix_t  *p = req->storage->driver_data;

    dfd = sft_posix_parent(p, req, (char *) req->path, name);
    if (dfd == -1) {
        return sft_posix_fail(req, "readlink()");
    }

    n = readlinkat(dfd, name, (char *) req->buf, req->len);
    close(dfd);

    if (n == -1) {
        return sft_posix_fail(req, "readlink()");
    }

    req->nbytes = n;

    return SFT_OK;
}


/* path2 is the link's target, already checked by the vfs */

static sft_int_t
sft_posix_symlink(sft_storage_req_t *req)
{
    int           dfd, rc;
    char          name[SFT_STORAGE_NAME_MAX + 1];
    sft_posix_t  *p = req->storage->driver_data;

    dfd = sft_posix_parent(p, req, (char *) req->path, name);
    if (dfd == -1) {
        return sft_posix_fail(req, "symlink()");
    }

    rc = symlinkat((char *) req->path2, dfd, name);
    close(dfd);

    if (rc == -1) {
        return sft_posix_fail(req, "symlink()");
    }

    return SFT_OK;
}


/*
 * path2 becomes a new name of the regular file path (neither followed as
 * a symbolic link, both beneath the root; path2 must not exist).  The
 * source is opened first and the link made to that very inode through
 * /proc, so a name swapped in between cannot make it link something else.
 * req->st: the source.
 */

static sft_int_t
sft_posix_link(sft_storage_req_t *req)
{
    int           sfd, tfd, fd, rc;
    char          sname[SFT_STORAGE_NAME_MAX + 1];
    char          tname[SFT_STORAGE_NAME_MAX + 1];
    char          proc[32];
    struct stat   sb;
    sft_posix_t  *p = req->storage->driver_data;

    sfd = sft_posix_parent(p, req, (char *) req->path, sname);
    if (sfd == -1) {
        return sft_posix_fail(req, "link()");
    }

    fd = openat(sfd, sname, O_PATH|O_NOFOLLOW);
    close(sfd);

    if (fd == -1) {
        return sft_posix_fail(req, "link()");
    }

    if (fstat(fd, &sb) == -1) {
        close(fd);
        return sft_posix_fail(req, "fstat()");
    }

    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        req->err = S_ISDIR(sb.st_mode) ? SFT_STORAGE_IS_DIR
                                       : SFT_STORAGE_PERMISSION;
        return SFT_ERROR;
    }

    sft_storage_stat_from_sys(&req->st, &sb);

    tfd = sft_posix_parent(p, req, (char *) req->path2, tname);
    if (tfd == -1) {
        close(fd);
        return sft_posix_fail(req, "link()");
    }

    (void) snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);

    rc = linkat(AT_FDCWD, proc, tfd, tname, AT_SYMLINK_FOLLOW);

    close(tfd);
    close(fd);

    if (rc == -1) {
        return sft_posix_fail(req, "link()");
    }

    return SFT_OK;
}


/* the attributes of the open file, wherever its name is now */

static sft_int_t
sft_posix_fstat(sft_storage_req_t *req)
{
    struct stat  sb;

    if (fstat(sft_posix_fd(req->file), &sb) == -1) {
        return sft_posix_fail(req, "fstat()");
    }

    sft_storage_stat_from_sys(&req->st, &sb);

    return SFT_OK;
}


static sft_int_t
sft_posix_fsync(sft_storage_req_t *req)
{
    if (fsync(sft_posix_fd(req->file)) == -1) {
        return sft_posix_fail(req, "fsync()");
    }

    return SFT_OK;
}


static sft_int_t
sft_posix_truncate(sft_storage_req_t *req)
{
    if (ftruncate(sft_posix_fd(req->file), req->offset) == -1) {
        return sft_posix_fail(req, "ftruncate()");
    }

    return SFT_OK;
}


/* the mode, then the times flags name; a time not named is left alone */

static sft_int_t
sft_posix_fsetattr(sft_storage_req_t *req)
{
    struct timespec  ts[2];

    if ((req->flags & SFT_STORAGE_SET_MODE)
        && fchmod(sft_posix_fd(req->file), req->mode) == -1)
    {
        return sft_posix_fail(req, "fchmod()");
    }

    if (!(req->flags & (SFT_STORAGE_SET_ATIME|SFT_STORAGE_SET_MTIME))) {
        return SFT_OK;
    }

    ts[0].tv_sec = req->atime;
    ts[0].tv_nsec = (req->flags & SFT_STORAGE_SET_ATIME) ? 0 : UTIME_OMIT;
    ts[1].tv_sec = req->mtime;
    ts[1].tv_nsec = (req->flags & SFT_STORAGE_SET_MTIME) ? 0 : UTIME_OMIT;

    if (futimens(sft_posix_fd(req->file), ts) == -1) {
        return sft_posix_fail(req, "futimens()");
    }

    return SFT_OK;
}


/*
 * len bytes of src at src_offset to file at offset, in the kernel
 * (copy_file_range: a reflink or an in-kernel copy) where the two file
 * systems allow it, else through a buffer; short at the end of src.
 */

static sft_int_t
sft_posix_copy(sft_storage_req_t *req)
{
    int       in, out;
    off_t     roff, woff;
    size_t    done;
    ssize_t   n;
    u_char   *buf;

    in = sft_posix_fd(req->src);
    out = sft_posix_fd(req->file);
    roff = req->src_offset;
    woff = req->offset;
    buf = NULL;
    n = 0;

    for (done = 0; done < req->len; done += n) {

        if (buf == NULL) {
            n = copy_file_range(in, &roff, out, &woff, req->len - done, 0);

            if (n == -1 && done == 0
                && (errno == EXDEV || errno == EINVAL || errno == ENOSYS
                    || errno == EOPNOTSUPP))
            {
                buf = malloc(SFT_POSIX_COPY_BUF);
                if (buf == NULL) {
                    return sft_posix_fail(req, "copy: malloc()");
                }

                n = 0;
                continue;
            }

        } else {
            n = pread(in, buf, sft_min(req->len - done, SFT_POSIX_COPY_BUF),
                      roff);

            if (n > 0) {
                n = pwrite(out, buf, n, woff);
            }

            if (n > 0) {
                roff += n;
                woff += n;
            }
        }

        if (n == -1 && errno == EINTR) {
            n = 0;
            continue;
        }

        if (n <= 0) {
            break;
        }
    }

    free(buf);
    req->nbytes = done;

    if (n == -1) {
        return sft_posix_fail(req, "copy_file_range()");
    }

    return SFT_OK;
}


/*
 * Walks the tree below the directory fd (closed at the end), links not
 * followed: visit sees every entry with its level (1: in fd).  An error of
 * the walk is remembered and the walk goes on; one a visit returns stops it.
 * Returns 0 or an errno.
 */

static int
sft_posix_tree(int fd, sft_posix_visit_pt visit, void *data)
{
    int             depth, err, rc;
    DIR            *dirs[SFT_POSIX_USAGE_DEPTH];
    struct stat     sb;
    struct dirent  *de;

    dirs[0] = fdopendir(fd);
    if (dirs[0] == NULL) {
        err = errno;
        close(fd);
        return err;
    }

    depth = 1;
    err = 0;

    while (depth) {
        errno = 0;
        de = readdir(dirs[depth - 1]);

        if (de == NULL) {
            if (errno) {
                err = errno;
            }

            closedir(dirs[--depth]);
            continue;
        }

        if (de->d_name[0] == '.' && (de->d_name[1] == '\0'
            || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
        {
            continue;
        }

        if (fstatat(dirfd(dirs[depth - 1]), de->d_name, &sb,
                    AT_SYMLINK_NOFOLLOW)
            == -1)
        {
            if (errno != ENOENT) {
                err = errno;
            }

            continue;
        }

        rc = visit(dirfd(dirs[depth - 1]), de->d_name, &sb, depth, data);

        if (rc) {
            while (depth) {
                closedir(dirs[--depth]);
            }

            return rc;
        }

        if (!S_ISDIR(sb.st_mode)) {
            continue;
        }

        if (depth == SFT_POSIX_USAGE_DEPTH) {
            err = ELOOP;
            continue;
        }

        fd = openat(dirfd(dirs[depth - 1]), de->d_name,
                    O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC);

        if (fd == -1 || (dirs[depth] = fdopendir(fd)) == NULL) {
            err = errno;

            if (fd != -1) {
                close(fd);
            }

            continue;
        }

        depth++;
    }

    return err;
}


static int
sft_posix_count(int dfd, const char *name, struct stat *sb, int level,
    void *data)
{
    sft_storage_usage_t  *usage = data;

    /* saturating: sparse files may claim more than an off_t holds */

    if (!S_ISDIR(sb->st_mode)
        && !sft_vfs_is_temp_name((u_char *) name, strlen(name)))
    {
        usage->files++;

        if (S_ISREG(sb->st_mode)
            && __builtin_add_overflow(usage->bytes, sb->st_size,
                                      &usage->bytes))
        {
            usage->bytes = INT64_MAX;
        }
    }

    return 0;
}


/*
 * The bytes of the regular files and the number of non-directories below
 * path, as the quota counts them; links are not followed, temporary
 * upload names (left by a crash) are not counted.
 */

static sft_int_t
sft_posix_usage(sft_storage_req_t *req)
{
    int           fd, err;
    sft_posix_t  *p = req->storage->driver_data;

    req->usage.bytes = 0;
    req->usage.files = 0;

    fd = sft_posix_open(p, req, (char *) req->path, O_RDONLY|O_DIRECTORY, 0, 1);
    if (fd == -1) {
        return sft_posix_fail(req, "usage: open()");
    }

    err = sft_posix_tree(fd, sft_posix_count, &req->usage);

    if (err) {
        errno = err;
        return sft_posix_fail(req, "usage: readdir()");
    }

    return SFT_OK;
}


/*
 * In the sweeper process, after workers start or one died: removes the
 * temporary upload files whose owner is gone (an old-style name has
 * none).  A file whose pid is a live worker of this master, or any
 * running process (the worker of another server on the same root, or an
 * unrelated process that reuses the pid), is kept: at worst left for a
 * later sweep, never removed under a live upload.
 */

static void
sft_posix_sweep(sft_storage_t *st, sft_storage_live_pt live, sft_log_t *log)
{
    int                fd, err;
    sft_posix_t       *p = st->driver_data;
    sft_posix_sweep_t  sw;

    fd = openat(p->root_fd, ".", O_RDONLY|O_DIRECTORY|O_CLOEXEC);
    if (fd == -1) {
        sft_log_error(SFT_LOG_ERR, log, sft_errno,
                      "open(\"%s\") failed in storage \"%.*s\"",
                      p->root.data, SFT_STR_FMT(&st->name));
        return;
    }

    sw.live = live;
    sw.log = log;
    sw.storage = st;
    sw.removed = 0;

    err = sft_posix_tree(fd, sft_posix_sweep_visit, &sw);

    if (err) {
        sft_log_error(SFT_LOG_ERR, log, err,
                      "walking storage \"%.*s\" for temporary files failed",
                      SFT_STR_FMT(&st->name));
    }

    if (sw.removed) {
        sft_log_error(SFT_LOG_NOTICE, log, 0,
                      "removed %lu temporary upload files of stopped "
                      "workers in storage \"%.*s\"",
                      (unsigned long) sw.removed, SFT_STR_FMT(&st->name));
    }
}


static int
sft_posix_sweep_visit(int dfd, const char *name, struct stat *sb,
    int level, void *data)
{
    sft_int_t           pid;
    sft_posix_sweep_t  *sw = data;

    pid = sft_vfs_temp_name_owner((u_char *) name, strlen(name));

    if (pid < 0 || !S_ISREG(sb->st_mode)) {
        return 0;
    }

    if (pid
        && (sw->live((pid_t) pid) || kill((pid_t) pid, 0) == 0
            || errno != ESRCH))
    {
        return 0;
    }

    if (unlinkat(dfd, name, 0) == -1) {
        sft_log_error(SFT_LOG_ERR, sw->log, sft_errno,
                      "unlink() of temporary \"%s\" failed in storage "
                      "\"%.*s\"", name, SFT_STR_FMT(&sw->storage->name));
        return 0;
    }

    sw->removed++;

    return 0;
}
