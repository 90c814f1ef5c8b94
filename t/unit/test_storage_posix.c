/*
 * test_storage_posix.c -- the posix driver through the vfs on a temporary
 * directory: symlinks cannot lead out (openat2 and the fallback walk),
 * uploads go through a hidden temporary name, abort leaves nothing,
 * append and write at offset, batched listings, error mapping, quota,
 * the operations on an open file (truncate with its quota, mode, times,
 * fsync), and operations completing through the thread pool.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_vfs.h>
#include <dirent.h>
#include <poll.h>
#include "sft_tap.h"
#include "sft_test_hold.h"


static char         top[256], root[300];
static sft_pool_t  *pool;




static sft_storage_req_t *
R(void)
{
    static sft_storage_req_t  req;

    sft_memzero(&req, sizeof(req));
    req.pool = pool;

    return &req;
}


#define P(s)  (u_char *) (s), strlen(s)


static void
put(const char *rel, const char *data)
{
    int   fd;
    char  path[600];

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    fd = open(path, O_WRONLY|O_CREAT|O_TRUNC, 0644);
    if (fd == -1 || write(fd, data, strlen(data)) < 0) {
        printf("# put %s failed\n", path);
    }
    close(fd);
}


static int
content_is(const char *rel, const char *data)
{
    int      fd;
    char     path[600], buf[256];
    ssize_t  n;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    fd = open(path, O_RDONLY);
    if (fd == -1) {
        return 0;
    }

    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);

    if (n < 0) {
        return 0;
    }

    buf[n] = '\0';

    if (strcmp(buf, data) != 0) {
        printf("# %s: \"%s\", expected \"%s\"\n", rel, buf, data);
        return 0;
    }

    return 1;
}


static int
exists(const char *rel)
{
    char         path[600];
    struct stat  sb;

    snprintf(path, sizeof(path), "%s/%s", root, rel);

    return lstat(path, &sb) == 0;
}


/* real entries in a directory whose names start with '.' */

static int
temp_files(const char *rel)
{
    int             n;
    DIR            *d;
    char            path[600];
    struct dirent  *de;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    d = opendir(path);
    n = 0;

    while (d && (de = readdir(d))) {
        n += (strstr(de->d_name, ".sft-") != NULL);
    }

    if (d) {
        closedir(d);
    }

    return n;
}


static void
symlink_tests(sft_vfs_session_t *s, const char *how)
{
    char                   name[128], buf[64];
    sft_fd_t               fd;
    sft_storage_req_t     *r;
    sft_storage_file_t     f;
    struct stat            sb;
    sft_storage_driver_t   nocaps, *drv;

    r = R();
    snprintf(name, sizeof(name), "%s: absolute link out refused", how);
    ok(sft_vfs_stat(s, r, P("abs")) == SFT_ERROR
       && r->err == SFT_STORAGE_PERMISSION, name);

    r = R();
    sft_memzero(&f, sizeof(f));
    snprintf(name, sizeof(name), "%s: ../ link out refused", how);
    ok(sft_vfs_open_read(s, r, &f, P("rel")) == SFT_ERROR
       && r->err == SFT_STORAGE_PERMISSION, name);

    r = R();
    snprintf(name, sizeof(name), "%s: link in a subdirectory out refused",
             how);
    ok(sft_vfs_stat(s, r, P("dir/up/secret")) == SFT_ERROR
       && r->err == SFT_STORAGE_PERMISSION, name);

    r = R();
    sft_memzero(&f, sizeof(f));
    snprintf(name, sizeof(name), "%s: upload through a link out refused",
             how);
    ok(sft_vfs_open_write(s, r, &f, P("dir/up/new"), 0, 0) == SFT_ERROR
       && r->err == SFT_STORAGE_PERMISSION && temp_files("../outside") == 0,
       name);

    r = R();
    sft_memzero(&f, sizeof(f));
    snprintf(name, sizeof(name), "%s: link inside followed", how);

    if (sft_vfs_open_read(s, r, &f, P("in")) == SFT_OK) {
        r = R();
        ok(sft_vfs_read(s, r, &f, (u_char *) buf, sizeof(buf), 0) == SFT_OK
           && r->nbytes == 5 && memcmp(buf, "inner", 5) == 0
           && f.size == 5, name);

        snprintf(name, sizeof(name), "%s: the open file's descriptor", how);
        nocaps = *f.storage->driver;
        nocaps.caps &= ~SFT_STORAGE_CAP_FD;
        drv = f.storage->driver;
        fd = sft_storage_file_fd(&f);
        f.storage->driver = &nocaps;
        ok(fd >= 0 && fstat(fd, &sb) == 0 && sb.st_size == 5
           && sft_storage_file_fd(&f) == SFT_INVALID_FILE, name);
        f.storage->driver = drv;

        snprintf(name, sizeof(name), "%s: the open file's identity", how);
        r = R();
        ok(sft_vfs_stat(s, r, P("dir/file.txt")) == SFT_OK
           && sft_storage_same_file(&r->st.id, &f.id)
           && f.id.ino == (uint64_t) sb.st_ino, name);

        r = R();
        (void) sft_vfs_close(s, r, &f, 1);

        snprintf(name, sizeof(name), "%s: no descriptor once closed", how);
        ok(f.closed && sft_storage_file_fd(&f) == SFT_INVALID_FILE, name);

    } else {
        ok(0, name);
        ok(0, "the open file's descriptor");
    }

    r = R();
    snprintf(name, sizeof(name), "%s: directory link inside followed", how);
    ok(sft_vfs_stat(s, r, P("dirlink/file.txt")) == SFT_OK
       && r->st.size == 5, name);

    r = R();
    snprintf(name, sizeof(name), "%s: lstat sees the link itself", how);
    ok(sft_vfs_lstat(s, r, P("abs")) == SFT_OK && S_ISLNK(r->st.mode),
       name);
}


static sft_uint_t  async_done;
static sft_int_t   async_err;
static sft_storage_op_pt  posix_write;


/* the posix write of a quarter of what it is given, as on a full disk */

static sft_int_t
quarter_write(sft_storage_req_t *req)
{
    size_t     len = req->len;
    sft_int_t  rc;

    req->len = len / 4;
    rc = posix_write(req);
    req->len = len;

    return rc;
}

static void
async_handler(sft_storage_req_t *req)
{
    async_done++;
    async_err = req->err;
}


static void
wait_async(sft_thread_pool_t *tp, sft_uint_t n)
{
    int            i;
    struct pollfd  pfd;

    for (i = 0; i < 500 && async_done < n; i++) {
        pfd.fd = tp->notify_fd;
        pfd.events = POLLIN;

        if (poll(&pfd, 1, 10) > 0) {
            sft_thread_pool_complete(tp);
        }
    }
}


/*
 * sft_storage_cancel(): a write still queued behind a busy thread is
 * taken back, never runs and never completes, its charge given back
 */

static void
cancel_tests(sft_vfs_session_t *s, sft_log_t *log)
{
    sft_uint_t           done;
    sft_test_hold_t      hold;
    sft_thread_pool_t    tp;
    sft_storage_req_t    wr, *r;
    sft_storage_file_t   f;

    sft_memzero(&tp, sizeof(tp));
    sft_str_set(&tp.name, "one");
    tp.threads = 1;
    tp.max_queue = 16;

    r = R();
    sft_memzero(&f, sizeof(f));

    if (sft_thread_pool_start(&tp, log) != SFT_OK
        || sft_test_hold(&hold, &tp, pool) != SFT_OK
        || sft_vfs_open_write(s, r, &f, P("cancelled"), 0, 0) != SFT_OK)
    {
        printf("Bail out! a held pool of one thread, an upload\n");
        exit(1);
    }

    s->thread_pool = &tp;
    done = async_done;

    sft_memzero(&wr, sizeof(wr));
    wr.pool = pool;
    wr.handler = async_handler;
    ok(sft_vfs_write(s, &wr, &f, (u_char *) "data", 4, 0) == SFT_AGAIN
       && f.charged == 4, "cancel: a write queued behind a busy thread");

    ok(sft_storage_cancel(&wr) == SFT_OK && wr.err == SFT_STORAGE_BUSY
       && f.charged == 0, "cancel: taken back, its charge given back");

    ok(sft_storage_cancel(&wr) == SFT_DECLINED,
       "cancel: nothing left to take back");

    sft_test_release(&hold);
    ok(hold.done && async_done == done,
       "cancel: the held task completed, the write never did");

    s->thread_pool = NULL;
    r = R();
    ok(sft_vfs_close(s, r, &f, 1) == SFT_OK
       && content_is("cancelled", ""), "cancel: the write never ran");

    sft_thread_pool_stop(&tp);
}


int
main(void)
{
    int                  i, fd, total, hidden, bad;
    char                 path[600], cmd[700];
    u_char               data[16];
    sft_str_t            name = sft_string("test");
    sft_log_t           *log;
    sft_uint_t           j;
    sft_storage_t       *st, *mst;
    sft_vfs_quota_t      q;
    sft_thread_pool_t    tp;
    sft_vfs_session_t    s, ms;
    sft_storage_req_t   *r, ar;
    sft_storage_dir_t    dir;
    sft_storage_file_t   f, g, h;
    sft_str_t            home;
    sft_user_t           user;
    off_t                bytes, files;
    size_t               size;
    void                *mem;

    printf("1..118\n");

    log = sft_log_init();
    log->log_level = SFT_LOG_CRIT;
    pool = sft_create_pool(4096, log);

    snprintf(top, sizeof(top), "/tmp/sft-storage-XXXXXX");
    if (mkdtemp(top) == NULL) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }

    snprintf(root, sizeof(root), "%s/root", top);
    snprintf(path, sizeof(path), "%s/outside", top);
    mkdir(root, 0755);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/outside/secret", top);
    close(open(path, O_WRONLY|O_CREAT, 0644));

    mkdir(strcat(strcpy(cmd, root), "/dir"), 0755);
    put("dir/file.txt", "inner");

    snprintf(path, sizeof(path), "%s/outside/secret", top);
    snprintf(cmd, sizeof(cmd), "%s/abs", root);
    (void) symlink(path, cmd);
    snprintf(cmd, sizeof(cmd), "%s/rel", root);
    (void) symlink("../outside/secret", cmd);
    snprintf(cmd, sizeof(cmd), "%s/dir/up", root);
    (void) symlink("../../outside", cmd);
    snprintf(cmd, sizeof(cmd), "%s/in", root);
    (void) symlink("dir/file.txt", cmd);
    snprintf(cmd, sizeof(cmd), "%s/dirlink", root);
    (void) symlink("dir", cmd);

    st = sft_storage_posix_create(pool, log, &name, (u_char *) root);
    ok(st != NULL, "posix storage on a temporary directory");

    if (st == NULL) {
        return 1;
    }

    sft_vfs_session_init(&s, st, NULL, SFT_PERM_ALL, log);

    /* symlinks: openat2, then the fallback walk */

    symlink_tests(&s, "openat2");
#if (SFT_HAVE_OPENAT2)
    ok(sft_storage_posix_no_openat2 == 0, "openat2 was used");
#else
    ok(1, "# SKIP no openat2 in this build");
#endif

    sft_storage_posix_no_openat2 = 1;
    symlink_tests(&s, "fallback");
    sft_storage_posix_no_openat2 = 0;

    /* upload: temporary name, existing file untouched until commit */

    put("dir/up.txt", "OLD");

    r = R();
    sft_memzero(&f, sizeof(f));
    ok(sft_vfs_open_write(&s, r, &f, P("dir/up.txt"), 0, 0) == SFT_OK
       && (f.flags & SFT_STORAGE_WRITE_REPLACE) && f.existed && f.opened
       && strcmp((char *) f.name, "up.txt") == 0,
       "upload opened on a temporary name");

    r = R();
    ok(sft_vfs_write(&s, r, &f, (u_char *) "NEWDATA", 7, 0) == SFT_OK
       && r->nbytes == 7, "upload written");

    ok(content_is("dir/up.txt", "OLD") && temp_files("dir") == 1,
       "existing file untouched before commit");

    r = R();
    ok(sft_vfs_close(&s, r, &f, 1) == SFT_OK
       && content_is("dir/up.txt", "NEWDATA") && temp_files("dir") == 0,
       "commit renames into place");

    /* the driver's copy: ranges of an open file into an upload */

    r = R();
    sft_memzero(&f, sizeof(f));
    sft_memzero(&g, sizeof(g));
    ok(sft_vfs_open_read(&s, r, &g, P("dir/up.txt")) == SFT_OK
       && sft_vfs_open_write(&s, R(), &f, P("dir/copy.txt"), 0, 0) == SFT_OK,
       "copy: source and destination open");

    r = R();
    sft_memzero(&h, sizeof(h));
    r->flags = SFT_STORAGE_READ_SEQUENTIAL;
    ok(sft_vfs_open_read(&s, r, &h, P("dir/up.txt")) == SFT_OK
       && sft_vfs_read(&s, R(), &h, data, sizeof(data), 0) == SFT_OK
       && sft_vfs_close(&s, R(), &h, 0) == SFT_OK
       && memcmp(data, "NEW", 3) == 0,
       "a download opened with the read-ahead hint reads as any");

    r = R();
    ok(sft_vfs_copy(&s, r, &f, 0, &g, 3, 2) == SFT_OK && r->nbytes == 2
       && f.size == 2, "copy: a range from the middle");

    r = R();
    ok(sft_vfs_copy(&s, r, &f, 2, &g, 0, 100) == SFT_OK && r->nbytes == 7
       && f.size == 9, "copy: short at the end of the source");

    r = R();
    ok(sft_vfs_copy(&s, r, &f, 9, &g, 7, 100) == SFT_OK && r->nbytes == 0
       && f.size == 9, "copy: nothing past the end");

    r = R();
    ok(sft_vfs_close(&s, r, &f, 1) == SFT_OK
       && sft_vfs_close(&s, R(), &g, 0) == SFT_OK
       && content_is("dir/copy.txt", "DANEWDATA"), "copy: committed");

    /* abort */

    r = R();
    sft_memzero(&f, sizeof(f));
    (void) sft_vfs_open_write(&s, r, &f, P("/dir/ab.txt"), 0, 0);
    r = R();
    (void) sft_vfs_write(&s, r, &f, (u_char *) "partial", 7, 0);
    r = R();
    ok(sft_vfs_close(&s, r, &f, 0) == SFT_OK && !exists("dir/ab.txt")
       && temp_files("dir") == 0, "abort leaves nothing");

    /* append, write at offset */

    r = R();
    sft_memzero(&f, sizeof(f));
    ok(sft_vfs_open_write(&s, r, &f, P("dir/up.txt"),
                          SFT_STORAGE_WRITE_APPEND, 0) == SFT_OK
       && f.offset == 7, "append opened at the end");
    r = R();
    (void) sft_vfs_write(&s, r, &f, (u_char *) "+more", 5, f.offset);
    r = R();
    (void) sft_vfs_close(&s, r, &f, 1);
    ok(content_is("dir/up.txt", "NEWDATA+more"), "append");

    r = R();
    sft_memzero(&f, sizeof(f));
    ok(sft_vfs_open_write(&s, r, &f, P("dir/up.txt"),
                          SFT_STORAGE_WRITE_INPLACE, 3) == SFT_OK,
       "write at offset opened");
    r = R();
    (void) sft_vfs_write(&s, r, &f, (u_char *) "xyz", 3, 3);
    r = R();
    (void) sft_vfs_close(&s, r, &f, 1);
    ok(content_is("dir/up.txt", "NEWxyzA+more"), "write at offset in place");

    r = R();
    sft_memzero(&f, sizeof(f));
    ok(sft_vfs_open_write(&s, r, &f, P("dir/up.txt"),
                          SFT_STORAGE_WRITE_INPLACE, 100) == SFT_ERROR
       && r->err == SFT_STORAGE_INVALID, "offset past the end refused");

    /* listings: batches with stats, hidden names left out */

    snprintf(cmd, sizeof(cmd), "%s/many", root);
    mkdir(cmd, 0755);

    for (i = 0; i < 70; i++) {
        snprintf(path, sizeof(path), "many/f%02d", i);
        put(path, "12345");
    }

    put("many/.x.sft-abcdef", "t");
    put("many/hidden.x", "h");

    s.filter = NULL;
    r = R();
    sft_memzero(&dir, sizeof(dir));
    ok(sft_vfs_opendir(&s, r, &dir, P("many")) == SFT_OK, "opendir");

    total = 0;
    hidden = 0;
    bad = 0;

    for (i = 0; i < 10 && !dir.eof; i++) {
        r = R();
        if (sft_vfs_readdir(&s, r, &dir) != SFT_OK) {
            break;
        }

        for (j = 0; j < dir.nentries; j++) {
            total++;
            hidden += (strstr((char *) dir.entries[j].name, ".sft-") != NULL);

            if (dir.entries[j].name[0] == 'f'
                && (dir.entries[j].st.size != 5
                    || !S_ISREG(dir.entries[j].st.mode)))
            {
                bad++;
            }
        }
    }

    r = R();
    (void) sft_vfs_closedir(&s, r, &dir);

    ok(i >= 2 && dir.eof, "listing came in batches");
    ok(total == 71 && hidden == 0 && bad == 0,
       "listing: stats, temp name left out");

    /* errors mapped */

    r = R();
    ok(sft_vfs_mkdir(&s, r, P("dir")) == SFT_ERROR
       && r->err == SFT_STORAGE_EXISTS, "mkdir existing: EXISTS");
    r = R();
    ok(sft_vfs_rmdir(&s, r, P("dir")) == SFT_ERROR
       && r->err == SFT_STORAGE_NOT_EMPTY, "rmdir non-empty: NOT_EMPTY");
    r = R();
    ok(sft_vfs_rmdir(&s, r, P("nodir")) == SFT_ERROR
       && r->err == SFT_STORAGE_NOT_FOUND, "rmdir missing: NOT_FOUND");
    r = R();
    ok(sft_vfs_unlink(&s, r, P("many")) == SFT_ERROR
       && r->err == SFT_STORAGE_IS_DIR, "unlink directory: IS_DIR");
    r = R();
    ok(sft_vfs_mkdir(&s, r, P("dir/file.txt/x")) == SFT_ERROR
       && r->err == SFT_STORAGE_NOT_DIR, "mkdir under a file: NOT_DIR");
    r = R();
    ok(sft_vfs_rename(&s, r, P("nothing"), P("x")) == SFT_ERROR
       && r->err == SFT_STORAGE_NOT_FOUND, "rename missing: NOT_FOUND");
    r = R();
    sft_memzero(&f, sizeof(f));
    ok(sft_vfs_open_read(&s, r, &f, P("dir")) == SFT_ERROR
       && r->err == SFT_STORAGE_IS_DIR, "download a directory: IS_DIR");
    r = R();
    ok(sft_vfs_rmdir(&s, r, P("/")) == SFT_ERROR
       && r->err == SFT_STORAGE_PERMISSION, "rmdir / refused");

    r = R();
    ok(sft_vfs_mkdir(&s, r, P("newdir")) == SFT_OK && exists("newdir"),
       "mkdir");
    r = R();
    ok(sft_vfs_rename(&s, r, P("newdir"), P("dir/moved")) == SFT_OK
       && exists("dir/moved"), "rename");
    r = R();
    ok(sft_vfs_rmdir(&s, r, P("dir/moved")) == SFT_OK && !exists("dir/moved"),
       "rmdir");

    /* rename onto an existing name without "overwrite" */

    s.perms = SFT_PERM_ALL & ~SFT_PERM_OVERWRITE;
    put("a1", "a");
    put("a2", "b");
    r = R();
    ok(sft_vfs_rename(&s, r, P("a1"), P("a2")) == SFT_ERROR
       && r->err == SFT_STORAGE_EXISTS && content_is("a2", "b"),
       "rename over a file needs overwrite");
    r = R();
    sft_memzero(&f, sizeof(f));
    ok(sft_vfs_open_write(&s, r, &f, P("a2"), 0, 0) == SFT_ERROR
       && r->err == SFT_STORAGE_PERMISSION && temp_files(".") == 0,
       "upload over a file needs overwrite");
    s.perms = SFT_PERM_ALL;

    /* chmod, mtime */

    r = R();
    ok(sft_vfs_chmod(&s, r, P("a1"), 0600) == SFT_OK, "chmod");
    r = R();
    (void) sft_vfs_setmtime(&s, r, P("a1"), 1000000000);
    r = R();
    ok(sft_vfs_stat(&s, r, P("a1")) == SFT_OK && r->st.mtime == 1000000000
       && (r->st.mode & 0777) == 0600, "mtime and mode set");
    r = R();
    ok(sft_vfs_chmod(&s, r, P("a1"), 06755) == SFT_OK
       && (r = R(), sft_vfs_stat(&s, r, P("a1")) == SFT_OK)
       && (r->st.mode & 07777) == 0755, "no setuid or setgid bit");
    sft_storage_posix_no_openat2 = 1;
    r = R();
    ok(sft_vfs_chmod(&s, r, P("a1"), 0640) == SFT_OK
       && sft_vfs_setmtime(&s, R(), P("a1"), 1000000000) == SFT_OK
       && (r = R(), sft_vfs_stat(&s, r, P("a1")) == SFT_OK)
       && (r->st.mode & 07777) == 0640 && r->st.mtime == 1000000000,
       "chmod and mtime without openat2");
    sft_storage_posix_no_openat2 = 0;
    r = R();
    ok(sft_vfs_chmod(&s, r, P("dir"), 01777) == SFT_OK
       && (r = R(), sft_vfs_stat(&s, r, P("dir")) == SFT_OK)
       && (r->st.mode & 07777) == 0777, "no sticky bit");
    r = R();
    (void) sft_vfs_settimes(&s, r, P("a1"), 900000000, 1000000000);
    r = R();
    ok(sft_vfs_stat(&s, r, P("a1")) == SFT_OK && r->st.atime == 900000000
       && r->st.mtime == 1000000000, "atime and mtime set");
    r = R();
    (void) sft_vfs_chmod(&s, r, P("a1"), 0600);

    /* symlink creation stays inside */

    r = R();
    ok(sft_vfs_symlink(&s, r, P("dir/l1"), P("../../outside")) == SFT_ERROR
       && r->err == SFT_STORAGE_PERMISSION, "symlink climbing out refused");
    r = R();
    ok(sft_vfs_symlink(&s, r, P("dir/l2"), P("/a1")) == SFT_OK
       && content_is("dir/l2", "a"), "absolute symlink target made relative");

    /* hard links: a regular file inside, a new name */

    {
        struct stat  sa, sb;
        char         pa[600], pb[600];

        r = R();
        ok(sft_vfs_link(&s, r, P("dir/file.txt"), P("hl1")) == SFT_OK
           && content_is("hl1", "inner"), "hard link made");
        snprintf(pa, sizeof(pa), "%s/dir/file.txt", root);
        snprintf(pb, sizeof(pb), "%s/hl1", root);
        ok(stat(pa, &sa) == 0 && stat(pb, &sb) == 0
           && sa.st_ino == sb.st_ino && sa.st_nlink == 2,
           "hard link: the same inode");
        r = R();
        ok(sft_vfs_link(&s, r, P("dir/file.txt"), P("hl1")) == SFT_ERROR
           && r->err == SFT_STORAGE_EXISTS, "hard link onto a name refused");
        r = R();
        ok(sft_vfs_link(&s, r, P("abs"), P("hl2")) == SFT_ERROR
           && !exists("hl2"), "hard link of a symlink out refused");
        r = R();
        ok(sft_vfs_link(&s, r, P("in"), P("hl3")) == SFT_ERROR
           && r->err == SFT_STORAGE_PERMISSION && !exists("hl3"),
           "hard link of a symlink refused");
        r = R();
        ok(sft_vfs_link(&s, r, P("dir"), P("hl4")) == SFT_ERROR
           && r->err == SFT_STORAGE_IS_DIR, "hard link of a directory refused");
        r = R();
        ok(sft_vfs_link(&s, r, P("dir/up/secret"), P("hl5")) == SFT_ERROR
           && !exists("hl5"), "hard link through a symlink out refused");
        r = R();
        ok(sft_vfs_link(&s, r, P("nothing"), P("hl6")) == SFT_ERROR
           && r->err == SFT_STORAGE_NOT_FOUND, "hard link of nothing");
    }

    /*
     * quota: the first change counts the home (qhome: 8 bytes in 3
     * non-directories; a leftover temporary upload is not counted)
     */

    mkdir(strcat(strcpy(cmd, root), "/qhome"), 0755);
    mkdir(strcat(strcpy(cmd, root), "/qhome/sub"), 0755);
    put("qhome/a", "AAAAA");
    put("qhome/sub/b", "BBB");
    put("qhome/.c.sft-Ab12Cd", "leftover");
    snprintf(cmd, sizeof(cmd), "%s/qhome/link", root);
    (void) symlink("a", cmd);

    size = sft_usage_memory_size(1);
    mem = calloc(1, size);
    sft_memzero(&q, sizeof(q));
    ok(mem && sft_usage_init_memory(mem, size) == SFT_OK
       && sft_usage_session_open(&name, 0, &q.usage, log) == SFT_OK,
       "a usage record");
    q.max_bytes = 18;
    q.max_files = 5;

    home.data = (u_char *) "qhome";
    home.len = 5;
    sft_vfs_session_init(&s, st, &home, SFT_PERM_ALL, log);
    sft_memzero(&user, sizeof(user));
    user.name = name;
    s.account = &user;
    s.quota = &q;

    r = R();
    sft_memzero(&f, sizeof(f));
    (void) sft_vfs_open_write(&s, r, &f, P("q.bin"), 0, 0);
    sft_usage_get(q.usage, &bytes, &files);
    ok(sft_usage_known(q.usage) && bytes == 8 && files == 4,
       "home counted before the first change, new file charged");
    memset(data, 'q', sizeof(data));
    r = R();
    ok(sft_vfs_write(&s, r, &f, data, 8, 0) == SFT_OK
       && (sft_usage_get(q.usage, &bytes, &files), bytes == 16),
       "upload within quota charged");
    r = R();
    ok(sft_vfs_write(&s, r, &f, data, 8, 8) == SFT_ERROR
       && r->err == SFT_STORAGE_QUOTA, "upload over quota stopped");
    r = R();
    (void) sft_vfs_close(&s, r, &f, 0);
    sft_usage_get(q.usage, &bytes, &files);
    ok(bytes == 8 && files == 3 && !exists("qhome/q.bin")
       && temp_files("qhome") == 1, "aborted upload credited and removed");

    r = R();
    ok(sft_vfs_unlink(&s, r, P("a")) == SFT_OK
       && (sft_usage_get(q.usage, &bytes, &files), bytes == 3 && files == 2),
       "delete credits back");
    r = R();
    ok(sft_vfs_symlink(&s, r, P("l2"), P("sub/b")) == SFT_OK
       && (sft_usage_get(q.usage, &bytes, &files), bytes == 3 && files == 3),
       "a symbolic link is charged as a file");

    /* an open file: a size, a mode, times, fsync, the quota kept */

    r = R();
    sft_memzero(&f, sizeof(f));
    (void) sft_vfs_open_write(&s, r, &f, P("q3.bin"), 0, 0);
    r = R();
    ok(sft_vfs_truncate(&s, r, &f, 10) == SFT_OK
       && (sft_usage_get(q.usage, &bytes, &files), bytes == 13)
       && files == 4, "a truncate up charges the growth");
    r = R();
    ok(sft_vfs_truncate(&s, r, &f, 16) == SFT_ERROR
       && r->err == SFT_STORAGE_QUOTA && f.size == 10
       && (sft_usage_get(q.usage, &bytes, &files), bytes == 13),
       "a truncate past the quota refused, nothing charged");
    r = R();
    ok(sft_vfs_truncate(&s, r, &f, 4) == SFT_OK
       && (sft_usage_get(q.usage, &bytes, &files), bytes == 7)
       && (r = R(), sft_vfs_fstat(&s, r, &f) == SFT_OK)
       && r->st.size == 4, "a truncate down cuts the file, credits the cut");

    /* a short write (a full disk) gives back the growth it did not make */

    posix_write = st->driver->ops[SFT_STORAGE_WRITE];
    st->driver->ops[SFT_STORAGE_WRITE] = quarter_write;
    r = R();
    ok(sft_vfs_write(&s, r, &f, data, 8, 0) == SFT_OK && r->nbytes == 2
       && f.size == 4
       && (sft_usage_get(q.usage, &bytes, &files), bytes == 7),
       "a short write: size and usage as before it");
    st->driver->ops[SFT_STORAGE_WRITE] = posix_write;
    r = R();
    ok(sft_vfs_fchmod(&s, r, &f, P("q3.bin"), 04755) == SFT_OK
       && (r = R(), sft_vfs_fstat(&s, r, &f) == SFT_OK)
       && (r->st.mode & 07777) == 0755,
       "an open file's mode: the permission bits only");
    r = R();
    ok(sft_vfs_futimes(&s, r, &f, 1000000000, 1234567890) == SFT_OK
       && (r = R(), sft_vfs_fstat(&s, r, &f) == SFT_OK)
       && r->st.atime == 1000000000 && r->st.mtime == 1234567890,
       "an open file's times");
    r = R();
    ok(sft_vfs_fsync(&s, r, &f) == SFT_OK, "an open file synced");
    r = R();
    (void) sft_vfs_close(&s, r, &f, 0);
    sft_usage_get(q.usage, &bytes, &files);
    ok(bytes == 3 && files == 3, "its abort gives back what it kept");

    /* offsets past the largest one are refused before any arithmetic */

    r = R();
    sft_memzero(&f, sizeof(f));
    (void) sft_vfs_open_write(&s, r, &f, P("q2.bin"), 0, 0);
    r = R();
    ok(sft_vfs_write(&s, r, &f, data, 8, INT64_MAX - 4) == SFT_ERROR
       && r->err == SFT_STORAGE_INVALID
       && (sft_usage_get(q.usage, &bytes, &files), bytes == 3),
       "a write near 2^63 refused, nothing charged");
    r = R();
    ok(sft_vfs_write(&s, r, &f, data, 8, SFT_STORAGE_OFFSET_MAX - 7)
       == SFT_ERROR && r->err == SFT_STORAGE_INVALID,
       "a write ending past the largest offset refused");
    r = R();
    ok(sft_vfs_read(&s, r, &f, data, 8, -1) == SFT_ERROR
       && r->err == SFT_STORAGE_INVALID, "a negative offset refused");
    r = R();
    (void) sft_vfs_close(&s, r, &f, 0);

    /* the usage saturates: no overflow resets it */

    ok(sft_usage_charge(q.usage, 0, 0, INT64_MAX, 0) == SFT_OK
       && sft_usage_charge(q.usage, 0, 0, INT64_MAX, 0) == SFT_OK
       && (sft_usage_get(q.usage, &bytes, &files), bytes == INT64_MAX),
       "usage saturates at the largest count");
    ok(sft_usage_charge(q.usage, 100, 0, 1, 0) == SFT_ERROR,
       "a saturated usage is over any quota");
    sft_usage_credit(q.usage, INT64_MAX, 0);
    sft_usage_get(q.usage, &bytes, &files);
    ok(bytes == 0, "a credit of all of it leaves 0");

    free(mem);
    sft_vfs_session_init(&s, st, NULL, SFT_PERM_ALL, log);

    /*
     * a home is a root of its own: links inside it (made by someone else)
     * cannot lead into another home, with openat2 and with the walk
     */

    mkdir(strcat(strcpy(cmd, root), "/homes"), 0755);
    mkdir(strcat(strcpy(cmd, root), "/homes/a"), 0755);
    mkdir(strcat(strcpy(cmd, root), "/homes/b"), 0755);
    put("homes/b/f", "b's");
    put("homes/a/mine", "a's");
    snprintf(cmd, sizeof(cmd), "%s/homes/a/tob", root);
    (void) symlink("../b", cmd);
    snprintf(cmd, sizeof(cmd), "%s/homes/a/tobfile", root);
    (void) symlink("../b/f", cmd);
    snprintf(cmd, sizeof(cmd), "%s/homes/a/in", root);
    (void) symlink("mine", cmd);

    home.data = (u_char *) "homes/a";
    home.len = 7;
    sft_vfs_session_init(&s, st, &home, SFT_PERM_ALL, log);

    for (j = 0; j < 2; j++) {
        sft_storage_posix_no_openat2 = j;

        r = R();
        ok(sft_vfs_stat(&s, r, P("tob/f")) == SFT_ERROR
           && r->err == SFT_STORAGE_PERMISSION,
           "a link to another home is not followed");
        r = R();
        sft_memzero(&f, sizeof(f));
        ok(sft_vfs_open_read(&s, r, &f, P("tobfile")) == SFT_ERROR
           && r->err == SFT_STORAGE_PERMISSION,
           "nor a link to a file in it");
        r = R();
        sft_memzero(&f, sizeof(f));
        ok(sft_vfs_open_write(&s, r, &f, P("tob/new"), 0, 0) == SFT_ERROR
           && !exists("homes/b/new") && temp_files("homes/b") == 0,
           "nor written through");
        r = R();
        ok(sft_vfs_stat(&s, r, P("in")) == SFT_OK && r->st.size == 3
           && sft_vfs_stat(&s, R(), P("/")) == SFT_OK,
           "a link inside the home is followed");
    }

    sft_storage_posix_no_openat2 = 0;

    /*
     * a relative link renamed or moved with its directory is checked as a
     * new one is: it must not climb out of the home where it lands
     */

    mkdir(strcat(strcpy(cmd, root), "/homes/a/d"), 0755);
    mkdir(strcat(strcpy(cmd, root), "/homes/a/d/e"), 0755);
    r = R();
    ok(sft_vfs_symlink(&s, R(), P("d/up"), P("../mine")) == SFT_OK
       && sft_vfs_rename(&s, r, P("d/up"), P("up")) == SFT_ERROR
       && r->err == SFT_STORAGE_PERMISSION && exists("homes/a/d/up")
       && !exists("homes/a/up"),
       "a link renamed to where it climbs out of the home refused");
    r = R();
    ok(sft_vfs_rename(&s, r, P("d/up"), P("d/e/up")) == SFT_OK
       && exists("homes/a/d/e/up"),
       "renamed deeper, it stays inside");
    r = R();
    ok(sft_vfs_symlink(&s, R(), P("d/e/up2"), P("../../mine")) == SFT_OK
       && sft_vfs_rename(&s, r, P("d/e"), P("e")) == SFT_ERROR
       && r->err == SFT_STORAGE_PERMISSION && exists("homes/a/d/e/up2"),
       "a directory moved up with a link that would climb out refused");
    r = R();
    ok(sft_vfs_rename(&s, r, P("d/e"), P("d/e2")) == SFT_OK
       && (r = R(), sft_vfs_unlink(&s, r, P("d/e2/up2")) == SFT_OK)
       && (r = R(), sft_vfs_rename(&s, r, P("d/e2"), P("e")) == SFT_OK)
       && exists("homes/a/e/up"),
       "moved at the same level, or without such links: renamed");
    snprintf(cmd, sizeof(cmd), "%s/homes/a/d/abs", root);
    (void) symlink("/etc/passwd", cmd);
    r = R();
    ok(sft_vfs_rename(&s, r, P("d/abs"), P("abs")) == SFT_OK,
       "an absolute link (never followed) renamed");
    sft_vfs_session_init(&s, st, NULL, SFT_PERM_ALL, log);

    /* asynchronous: through the thread pool */

    sft_memzero(&tp, sizeof(tp));
    sft_str_set(&tp.name, "default");
    tp.threads = 2;
    tp.max_queue = 16;

    if (sft_thread_pool_start(&tp, log) != SFT_OK) {
        printf("Bail out! thread pool\n");
        return 1;
    }

    /* a session runs on its storage's pool ("thread_pool" in the block) */

    st->thread_pool = &tp;
    sft_vfs_session_init(&s, st, NULL, SFT_PERM_ALL, log);
    ok(s.thread_pool == &tp, "the session takes its storage's thread pool");

    sft_memzero(&ar, sizeof(ar));
    ar.pool = pool;
    ar.handler = async_handler;
    ok(sft_vfs_mkdir(&s, &ar, P("async")) == SFT_AGAIN, "mkdir queued");
    wait_async(&tp, 1);
    ok(async_done == 1 && async_err == SFT_STORAGE_OK && exists("async"),
       "mkdir completed on the loop");

    sft_memzero(&ar, sizeof(ar));
    ar.pool = pool;
    ar.handler = async_handler;
    ok(sft_vfs_stat(&s, &ar, P("async/none")) == SFT_AGAIN, "stat queued");
    wait_async(&tp, 2);
    ok(async_done == 2 && async_err == SFT_STORAGE_NOT_FOUND,
       "stat error came back mapped");

    sft_memzero(&ar, sizeof(ar));
    ar.pool = pool;
    ar.handler = async_handler;
    (void) sft_vfs_chdir(&s, &ar, P("async"));
    wait_async(&tp, 3);
    ok(async_done == 3 && s.cwd_len == 6
       && memcmp(s.cwd, "/async", 6) == 0, "chdir through the pool");

    /* a storage on tmpfs runs its operations at once, even with a pool */

    ok(!st->in_memory, "a disk-backed root uses the thread pool");

    snprintf(path, sizeof(path), "/dev/shm/sft-storage-%d", (int) getpid());

    if (mkdir(path, 0755) == 0) {
        mst = sft_storage_posix_create(pool, log, &name, (u_char *) path);
        sft_vfs_session_init(&ms, mst, NULL, SFT_PERM_ALL, log);
        ms.thread_pool = &tp;

        sft_memzero(&ar, sizeof(ar));
        ar.pool = pool;
        ar.handler = async_handler;
        ok(mst && mst->in_memory
           && sft_vfs_mkdir(&ms, &ar, P("inline")) == SFT_OK
           && ar.err == SFT_STORAGE_OK,
           "tmpfs: mkdir done at once, not queued");

        /* tmpfs takes sparse files of 2^63-1 bytes: the count saturates */

        for (j = 0; j < 2; j++) {
            snprintf(cmd, sizeof(cmd), "%s/inline/sparse%d", path, (int) j);
            fd = open(cmd, O_WRONLY|O_CREAT|O_TRUNC, 0644);
            if (fd == -1 || ftruncate(fd, INT64_MAX) == -1) {
                printf("# sparse file %s failed\n", cmd);
            }
            close(fd);
        }

        r = R();
        r->op = SFT_STORAGE_USAGE;
        r->storage = mst;
        r->log = log;
        r->path = (u_char *) "inline";
        ok(mst->driver->ops[SFT_STORAGE_USAGE](r) == SFT_OK
           && r->usage.files == 2 && r->usage.bytes == INT64_MAX,
           "tmpfs: a count past 2^63 saturates");

        sft_storage_posix_destroy(mst);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
        if (system(cmd) != 0) {
            printf("# cleanup of %s failed\n", path);
        }

    } else {
        ok(1, "# SKIP no /dev/shm");
        ok(1, "# SKIP no /dev/shm");
    }

    sft_thread_pool_stop(&tp);

    if (!st->in_memory) {
        st->thread_pool = NULL;
        sft_vfs_session_init(&s, st, NULL, SFT_PERM_ALL, log);
        cancel_tests(&s, log);

    } else {
        for (i = 0; i < 5; i++) {
            ok(1, "# SKIP the root is in memory: nothing is queued");
        }
    }

    sft_storage_posix_destroy(st);
    sft_destroy_pool(pool);

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
    if (system(cmd) != 0) {
        printf("# cleanup failed\n");
    }

    return failed ? 1 : 0;
}
