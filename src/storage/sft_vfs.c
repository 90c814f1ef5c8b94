/*
 * sft_vfs.c -- the virtual filesystem every protocol calls: client paths
 * normalised into the session's root, permission and deny/hide checks,
 * temporary upload names kept out of sight, and quota accounting, then
 * the storage driver operation (at once or on the thread pool).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_vfs.h>
#include <sft_users.h>


#define SFT_VFS_NO_OVERWRITE  0x1000    /* req->flags: EXCL added by us */


static void sft_vfs_post(sft_storage_req_t *req);


static uint64_t  sft_vfs_sessions;     /* begun in this process */


void
sft_vfs_session_init(sft_vfs_session_t *s, sft_storage_t *storage,
    sft_str_t *home, uint32_t perms, sft_log_t *log)
{
    sft_memzero(s, sizeof(sft_vfs_session_t));

    s->number = ++sft_vfs_sessions;
    s->storage = storage;
    s->thread_pool = storage ? storage->thread_pool : NULL;
    s->perms = perms;
    s->log = log;
    s->cwd[0] = '/';
    s->cwd[1] = '\0';
    s->cwd_len = 1;

    if (home) {
        s->home = *home;
    }
}


/*
 * Lexical normalisation: absolute, or relative to cwd; "." dropped, ".."
 * removes a component and stops at "/"; empty components dropped.
 */

sft_storage_err_t
sft_vfs_normalize(const u_char *cwd, size_t cwd_len, const u_char *path,
    size_t len, u_char *out, size_t *out_len)
{
    size_t         n, clen, pass, plen;
    const u_char  *p, *end, *c;

    for (n = 0; n < len; n++) {
        if (path[n] == '\0' || path[n] == '\r' || path[n] == '\n') {
            return SFT_STORAGE_NAME_INVALID;
        }
    }

    if (len > SFT_STORAGE_PATH_MAX) {
        return SFT_STORAGE_NAME_INVALID;
    }

    n = 0;

    for (pass = 0; pass < 2; pass++) {

        if (pass == 0) {
            if (len && path[0] == '/') {
                continue;
            }

            p = cwd;
            plen = cwd_len;

        } else {
            p = path;
            plen = len;
        }

        end = p + plen;

        while (p < end) {

            while (p < end && *p == '/') {
                p++;
            }

            c = p;

            while (p < end && *p != '/') {
                p++;
            }

            clen = p - c;

            if (clen == 0 || (clen == 1 && c[0] == '.')) {
                continue;
            }

            if (clen > SFT_STORAGE_NAME_MAX) {
                return SFT_STORAGE_NAME_INVALID;
            }

            if (clen == 2 && c[0] == '.' && c[1] == '.') {
                while (n && out[n - 1] != '/') {
                    n--;
                }

                if (n) {
                    n--;            /* the slash */
                }

                continue;
            }

            if (n + 1 + clen > SFT_STORAGE_PATH_MAX) {
                return SFT_STORAGE_NAME_INVALID;
            }

            out[n++] = '/';
            sft_memcpy(out + n, c, clen);
            n += clen;
        }
    }

    if (n == 0) {
        out[n++] = '/';
    }

    out[n] = '\0';
    *out_len = n;

    return SFT_STORAGE_OK;
}


/* the session mask narrowed by the longest matching directory rule */

uint32_t
sft_vfs_perms(sft_vfs_session_t *s, const u_char *vpath, size_t len)
{
    size_t           best, rlen;
    uint32_t         perms;
    sft_uint_t       i;
    sft_vfs_rule_t  *r;

    perms = s->perms;
    best = 0;

    for (i = 0; i < s->nrules; i++) {
        r = &s->rules[i];
        rlen = r->path.len;

        while (rlen > 1 && r->path.data[rlen - 1] == '/') {
            rlen--;
        }

        if (rlen > len || sft_memcmp(r->path.data, vpath, rlen) != 0) {
            continue;
        }

        /* on a component boundary: "/pub" covers "/pub/x", not "/public" */

        if (rlen != len && !(rlen == 1 && r->path.data[0] == '/')
            && vpath[rlen] != '/')
        {
            continue;
        }

        if (rlen + 1 > best) {
            best = rlen + 1;
            perms = r->perms;
        }
    }

    return perms;
}


/* no permission to change anything anywhere: a read-only session */

sft_uint_t
sft_vfs_read_only(sft_vfs_session_t *s)
{
    sft_uint_t  i;

    if (s->perms & ~SFT_PERM_READ) {
        return 0;
    }

    for (i = 0; i < s->nrules; i++) {
        if (s->rules[i].perms & ~SFT_PERM_READ) {
            return 0;
        }
    }

    return 1;
}


/*
 * ".NAME.sft-PID-XXXXXX", the temporary name of an upload in progress, made
 * by the worker PID (".NAME.sft-XXXXXX" before names carried the owner):
 * the owner's pid, 0 for a name without one, -1 for any other name.
 */

sft_int_t
sft_vfs_temp_name_owner(const u_char *name, size_t len)
{
    size_t     i, end;
    sft_int_t  pid;

    if (len < 13 || name[0] != '.') {
        return -1;
    }

    for (i = len - 6; i < len; i++) {
        if (!isalnum(name[i])) {
            return -1;
        }
    }

    if (sft_memcmp(name + len - 11, ".sft-", 5) == 0) {
        return 0;
    }

    if (name[len - 7] != '-') {
        return -1;
    }

    end = len - 7;

    for (i = end; i > 0 && isdigit(name[i - 1]); i--) { /* void */ }

    if (i == end || end - i > 9 || i < 7
        || sft_memcmp(name + i - 5, ".sft-", 5) != 0)
    {
        return -1;
    }

    pid = 0;

    for ( /* void */ ; i < end; i++) {
        pid = pid * 10 + (name[i] - '0');
    }

    return pid > 0 ? pid : -1;
}


sft_uint_t
sft_vfs_is_temp_name(const u_char *name, size_t len)
{
    return sft_vfs_temp_name_owner(name, len) >= 0;
}


/* an entry of a directory listing: temporary and filtered names are not */

sft_uint_t
sft_vfs_visible(sft_vfs_session_t *s, sft_storage_dir_t *dir,
    const u_char *name, size_t len)
{
    if (sft_vfs_is_temp_name(name, len)) {
        return 0;
    }

    if (s->filter
        && (s->filter(s->filter_data, dir->vdir, dir->vdir_len, name, len,
                      SFT_VFS_FILTER_HIDE)
            || s->filter(s->filter_data, dir->vdir, dir->vdir_len, name, len,
                         SFT_VFS_FILTER_DENY)))
    {
        return 0;
    }

    return 1;
}


sft_int_t
sft_vfs_quota_charge(sft_vfs_quota_t *q, off_t bytes, off_t files)
{
    if (q == NULL || q->usage == NULL) {
        return SFT_OK;
    }

    return sft_usage_charge(q->usage, q->max_bytes, q->max_files, bytes,
                            files);
}


void
sft_vfs_quota_credit(sft_vfs_quota_t *q, off_t bytes, off_t files)
{
    if (q == NULL || q->usage == NULL) {
        return;
    }

    sft_usage_credit(q->usage, bytes, files);
}


/* room for one more name? (a link is charged after it was made) */

static sft_int_t
sft_vfs_room_for_name(sft_vfs_session_t *s, sft_storage_req_t *req,
    u_char *vpath)
{
    off_t             bytes, files;
    sft_vfs_quota_t  *q = s->quota;

    if (q == NULL || q->usage == NULL || q->max_files == 0) {
        return SFT_OK;
    }

    sft_usage_get(q->usage, &bytes, &files);

    if (files < q->max_files) {
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0, "file quota exceeded: \"%s\"",
                  vpath);
    req->err = SFT_STORAGE_QUOTA;

    return SFT_ERROR;
}


/*
 * Charges the growth a write at offset of len bytes causes; a kernel path
 * (splice) calls it before moving the bytes.  SFT_ERROR: over quota;
 * SFT_AGAIN: a shared quota's lease is short, sft_vfs_write() waits.
 */

sft_int_t
sft_vfs_charge_write(sft_vfs_session_t *s, sft_storage_file_t *file,
    off_t offset, size_t len)
{
    off_t      end, grow;
    sft_int_t  rc;

    if (file->flags & SFT_STORAGE_WRITE_APPEND) {
        offset = file->size;
    }

    if (offset < 0 || !sft_storage_range_valid(offset, len)) {
        return SFT_ERROR;
    }

    end = offset + (off_t) len;
    grow = end > file->size ? end - file->size : 0;

    rc = sft_vfs_quota_charge(s->quota, grow, 0);

    if (rc != SFT_OK) {
        return rc;
    }

    file->charged += grow;

    if (end > file->size) {
        file->size = end;
    }

    return SFT_OK;
}


/*
 * The mode bits a client may set, by any command of any protocol: the
 * permission bits only.  Workers run as root, so a setuid, setgid or
 * sticky bit a client set would be a root-owned setuid file on the host.
 */

static mode_t
sft_vfs_mode(mode_t mode)
{
    return mode & 0777;
}


/*
 * An operation that needs a capability the session's driver lacks is
 * refused before any work: UNSUPPORTED, and the capability kept in
 * s->missing for the protocol's reply.
 */

sft_int_t
sft_vfs_need(sft_vfs_session_t *s, sft_storage_req_t *req, sft_uint_t cap)
{
    if (sft_storage_has(s->storage, cap)) {
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "%s is not supported by storage \"%.*s\"",
                  sft_storage_cap_text(cap), SFT_STR_FMT(&s->storage->name));

    req->err = SFT_STORAGE_UNSUPPORTED;
    s->missing = cap;

    return SFT_ERROR;
}


/* a read or write a client asked for: SFT_ERROR past the largest offset */

static sft_int_t
sft_vfs_range(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, off_t offset, size_t len)
{
    if (offset >= 0 && sft_storage_range_valid(offset, len)) {
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "client sent an offset out of range: %lld+%zu in \"%s\"",
                  (long long) offset, len, file->name);
    req->err = SFT_STORAGE_INVALID;

    return SFT_ERROR;
}


/*
 * Normalises a client path, refuses temporary names and denied names in
 * any component, checks need against the permissions of the path itself
 * (self) or of its directory, and builds the storage path.
 */

static sft_int_t
sft_vfs_prepare(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, uint32_t need, sft_uint_t self,
    u_char **vpathp, u_char **realp)
{
    u_char             *p, *c, *real;
    size_t              n, dlen;
    uint32_t            perms;
    sft_storage_err_t   err;
    u_char              vpath[SFT_STORAGE_PATH_MAX + 1], names[128];

    req->storage = s->storage;
    req->log = s->log;
    req->session = s->number;
    req->thread_pool = s->thread_pool;
    req->post = sft_vfs_post;
    req->post_data = s;
    req->base_len = s->home.len;
    req->mode = sft_vfs_mode(req->mode);     /* chmod, mkdir, create */

    err = sft_vfs_normalize(s->cwd, s->cwd_len, path, len, vpath, &n);

    if (err != SFT_STORAGE_OK) {
        req->err = err;
        return SFT_ERROR;
    }

    /* every component */

    for (p = vpath + 1; p < vpath + n; p++) {
        c = p;

        while (p < vpath + n && *p != '/') {
            p++;
        }

        if (sft_vfs_is_temp_name(c, p - c)) {
            req->err = SFT_STORAGE_NAME_INVALID;
            return SFT_ERROR;
        }

        /* the component's directory: "/" or vpath up to its slash */

        if (s->filter
            && s->filter(s->filter_data, vpath, (c - vpath > 1) ? c - vpath - 1
                                                                : 1,
                         c, p - c, SFT_VFS_FILTER_DENY))
        {
            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "access to \"%s\" denied by a filter", vpath);
            req->err = SFT_STORAGE_PERMISSION;
            return SFT_ERROR;
        }
    }

    if (need) {
        if (self) {
            dlen = n;

        } else {
            for (dlen = n; dlen > 1 && vpath[dlen - 1] != '/'; dlen--) {
                /* void */
            }

            if (dlen > 1) {
                dlen--;
            }
        }

        perms = sft_vfs_perms(s, vpath, dlen);

        if ((perms & need) != need) {
            *sft_perms_format(names, names + sizeof(names) - 1,
                              need & ~perms) = '\0';
            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "permission denied: \"%s\" needs %s", vpath,
                          names);
            req->err = SFT_STORAGE_PERMISSION;
            return SFT_ERROR;
        }
    }

    if (vpathp) {
        *vpathp = sft_pnalloc(req->pool, n + 1);
        if (*vpathp == NULL) {
            req->err = SFT_STORAGE_BUSY;
            return SFT_ERROR;
        }

        sft_memcpy(*vpathp, vpath, n + 1);
    }

    /* home + vpath, relative to the storage root; "." for the root */

    real = sft_pnalloc(req->pool, s->home.len + n + 2);
    if (real == NULL) {
        req->err = SFT_STORAGE_BUSY;
        return SFT_ERROR;
    }

    p = real;

    if (s->home.len) {
        p = sft_cpymem(p, s->home.data, s->home.len);

        if (n > 1) {
            p = sft_cpymem(p, vpath, n);
        }

    } else if (n > 1) {
        p = sft_cpymem(p, vpath + 1, n - 1);

    } else {
        *p++ = '.';
    }

    *p = '\0';

    *realp = real;

    return SFT_OK;
}


/* the permissions of the directory holding vpath */

static uint32_t
sft_vfs_dir_perms(sft_vfs_session_t *s, u_char *vpath)
{
    u_char  *slash;

    slash = (u_char *) strrchr((char *) vpath, '/');

    return sft_vfs_perms(s, vpath,
                         slash == vpath ? 1 : (size_t) (slash - vpath));
}


static sft_int_t
sft_vfs_refuse_root(sft_storage_req_t *req, u_char *vpath)
{
    if (vpath[0] == '/' && vpath[1] == '\0') {
        req->err = SFT_STORAGE_PERMISSION;
        return SFT_ERROR;
    }

    return SFT_OK;
}


/* after the driver, on the loop: accounting and listings */

static void
sft_vfs_post(sft_storage_req_t *req)
{
    off_t                  cut;
    sft_uint_t             i, n;
    sft_storage_dir_t     *dir;
    sft_storage_file_t    *file;
    sft_vfs_session_t     *s = req->post_data;
    sft_storage_dirent_t  *e;
    sft_storage_req_t      cr;

    sft_vfs_log_change(s, req);

    if (req->err == SFT_STORAGE_NOT_FOUND && s->home.len && req->path
        && sft_strlen(req->path) == s->home.len
        && sft_memcmp(req->path, s->home.data, s->home.len) == 0)
    {
        sft_log_error(SFT_LOG_ERR, s->log, 0, "the home \"/%.*s\" does not "
                      "exist in storage \"%.*s\"", SFT_STR_FMT(&s->home),
                      SFT_STR_FMT(&s->storage->name));
    }

    switch (req->op) {

    case SFT_STORAGE_OPEN_WRITE:

        if (req->err == SFT_STORAGE_EXISTS
            && (req->flags & SFT_VFS_NO_OVERWRITE))
        {
            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "permission denied: overwrite of \"%s\"",
                          req->path);
            req->err = SFT_STORAGE_PERMISSION;
            break;
        }

        if (req->err != SFT_STORAGE_OK) {
            break;
        }

        /* how it was opened, for every driver: its close credits by it */

        file = req->file;
        file->flags = req->flags;

        if (!file->existed
            && sft_vfs_quota_charge(s->quota, 0, 1) != SFT_OK)
        {
            /* the file was just made: undo it at once */

            cr = *req;
            cr.op = SFT_STORAGE_CLOSE;
            cr.commit = 0;
            cr.post = NULL;
            (void) req->storage->driver->ops[SFT_STORAGE_CLOSE](&cr);

            if (!(file->flags & SFT_STORAGE_WRITE_REPLACE)) {
                cr.op = SFT_STORAGE_UNLINK;
                cr.err = SFT_STORAGE_OK;
                (void) req->storage->driver->ops[SFT_STORAGE_UNLINK](&cr);
            }

            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "file quota exceeded: \"%s\"", req->path);
            req->err = SFT_STORAGE_QUOTA;
        }

        break;

    case SFT_STORAGE_COPY:
    case SFT_STORAGE_WRITE:

        /* a write the driver's window refused: the protocol says why */

        if (req->err == SFT_STORAGE_UNSUPPORTED) {
            s->missing = SFT_STORAGE_CAP_RANDOM_WRITE;
        }

        /*
         * short (the end of a copy's source, a full disk): the growth not
         * made is given back, if no later write has moved the end since
         */

        file = req->file;
        cut = req->offset + (req->nbytes > 0 ? req->nbytes : 0);

        if (file->size == req->offset + (off_t) req->len
            && cut < file->size)
        {
            cut = file->size - sft_max(cut, req->st.size);
            cut = sft_max(cut, 0);
            file->size -= cut;
            cut = sft_min(cut, file->charged);
            sft_vfs_quota_credit(s->quota, cut, 0);
            file->charged -= cut;
        }

        break;

    case SFT_STORAGE_TRUNCATE:

        /* the quota follows the size the file was given */

        file = req->file;

        if (req->err != SFT_STORAGE_OK) {
            cut = sft_min((off_t) req->len, file->charged);
            sft_vfs_quota_credit(s->quota, cut, 0);
            file->charged -= cut;
            file->size -= (off_t) req->len;
            break;
        }

        if (req->offset < file->size) {
            cut = file->size - req->offset;
            sft_vfs_quota_credit(s->quota, cut, 0);
            file->charged -= sft_min(cut, file->charged);
            file->size = req->offset;
        }

        break;

    case SFT_STORAGE_CLOSE:

        /*
         * a commit that replaced a file gives back the old one; an upload
         * aborted or failed that leaves nothing under the name (a
         * temporary file, any upload of a staged driver: an S3 multipart
         * upload) gives back what it charged, once
         */

        file = req->file;

        if (req->commit && req->err == SFT_STORAGE_OK) {
            if ((file->flags & SFT_STORAGE_WRITE_REPLACE) && file->existed) {
                sft_vfs_quota_credit(s->quota, file->replaced_size, 0);
            }

        } else if (file->write
                   && ((file->flags & SFT_STORAGE_WRITE_REPLACE)
                       || sft_storage_has(file->storage,
                                          SFT_STORAGE_CAP_STAGED)))
        {
            sft_vfs_quota_credit(s->quota, file->charged,
                                 file->existed ? 0 : 1);
            file->charged = 0;
        }

        break;

    case SFT_STORAGE_UNLINK:

        if (req->err == SFT_STORAGE_OK) {
            sft_vfs_quota_credit(s->quota,
                                 S_ISREG(req->st.mode) ? req->st.size : 0, 1);
        }

        break;

    case SFT_STORAGE_RENAME:

        if (req->err == SFT_STORAGE_PERMISSION && req->sys_err == EXDEV) {
            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "rename of \"%s\" refused: a symbolic link would "
                          "lead out of the home", req->path);
            break;
        }

        if (req->err == SFT_STORAGE_OK && req->st.mode
            && !S_ISDIR(req->st.mode))
        {
            sft_vfs_quota_credit(s->quota,
                                 S_ISREG(req->st.mode) ? req->st.size : 0, 1);
        }

        break;

    case SFT_STORAGE_LINK:
    case SFT_STORAGE_SYMLINK:

        /*
         * a new name: a hard link is charged as a file of its size, as an
         * unlink of either name credits one, a symbolic link as a file of
         * none (over the quota it is kept: the link used no space)
         */

        if (req->err == SFT_STORAGE_OK && s->quota && s->quota->usage) {
            (void) sft_usage_charge(s->quota->usage, 0, 0,
                                    req->op == SFT_STORAGE_LINK
                                    ? req->st.size : 0, 1);
        }

        break;

    case SFT_STORAGE_READDIR:

        if (req->err != SFT_STORAGE_OK) {
            break;
        }

        dir = req->dir;
        e = dir->entries;
        n = 0;

        for (i = 0; i < dir->nentries; i++) {
            if (!sft_vfs_visible(s, dir, e[i].name, e[i].len)) {
                continue;
            }

            if (n != i) {
                e[n] = e[i];
            }

            n++;
        }

        dir->nentries = n;

        break;

    case SFT_STORAGE_STAT:

        /* chdir: path2 holds the new virtual cwd */

        if (req->path2 && req->err == SFT_STORAGE_OK) {
            if (!S_ISDIR(req->st.mode)) {
                req->err = SFT_STORAGE_NOT_DIR;
                break;
            }

            n = sft_strlen(req->path2);
            sft_memcpy(s->cwd, req->path2, n + 1);
            s->cwd_len = n;
        }

        break;

    default:
        break;
    }
}


sft_int_t
sft_vfs_stat(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len)
{
    req->op = SFT_STORAGE_STAT;

    if (sft_vfs_prepare(s, req, path, len, 0, 0, NULL, &req->path)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}


sft_int_t
sft_vfs_lstat(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len)
{
    req->op = SFT_STORAGE_LSTAT;

    if (sft_vfs_prepare(s, req, path, len, 0, 0, NULL, &req->path)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}


sft_int_t
sft_vfs_chdir(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len)
{
    req->op = SFT_STORAGE_STAT;

    if (sft_vfs_prepare(s, req, path, len, 0, 0, &req->path2, &req->path)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}


sft_int_t
sft_vfs_open_read(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, const u_char *path, size_t len)
{
    req->op = SFT_STORAGE_OPEN_READ;
    req->file = file;

    if (sft_vfs_prepare(s, req, path, len, SFT_PERM_DOWNLOAD, 0, NULL,
                        &req->path)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}


/*
 * flags: SFT_STORAGE_WRITE_*; 0 means a plain upload (REPLACE, or in
 * place if the session says so).  Creating needs "upload"; replacing or
 * writing into an existing file needs "overwrite" as well.
 */

sft_int_t
sft_vfs_open_write(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, const u_char *path, size_t len,
    sft_uint_t flags, off_t offset)
{
    u_char    *vpath;
    uint32_t   perms;

    req->op = SFT_STORAGE_OPEN_WRITE;
    req->file = file;
    req->offset = offset;

    if (offset < 0 || offset > SFT_STORAGE_OFFSET_MAX) {
        req->err = SFT_STORAGE_INVALID;
        return SFT_ERROR;
    }

    if (sft_vfs_prepare(s, req, path, len, SFT_PERM_UPLOAD, 0, &vpath,
                        &req->path)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    if (sft_vfs_refuse_root(req, vpath) != SFT_OK) {
        return SFT_ERROR;
    }

    if (!(flags & (SFT_STORAGE_WRITE_REPLACE|SFT_STORAGE_WRITE_INPLACE
                   |SFT_STORAGE_WRITE_APPEND)))
    {
        flags |= (s->inplace_uploads
                  && sft_storage_has(s->storage,
                                     SFT_STORAGE_CAP_RANDOM_WRITE))
                 ? SFT_STORAGE_WRITE_INPLACE : SFT_STORAGE_WRITE_REPLACE;
    }

    /*
     * a driver that appends may take a resume (in place at an offset) if
     * the offset is the file's end: it says so, once it knows the end;
     * one that also takes writes within a window, an in-place open at no
     * offset (SFTP without TRUNC): its first write says which it is
     */

    if (((flags & SFT_STORAGE_WRITE_APPEND)
         && sft_vfs_need(s, req, SFT_STORAGE_CAP_APPEND) != SFT_OK)
        || ((flags & SFT_STORAGE_WRITE_INPLACE)
            && !((offset || sft_storage_has(s->storage,
                                            SFT_STORAGE_CAP_WINDOW_WRITE))
                 && sft_storage_has(s->storage, SFT_STORAGE_CAP_APPEND))
            && sft_vfs_need(s, req, SFT_STORAGE_CAP_RANDOM_WRITE) != SFT_OK))
    {
        return SFT_ERROR;
    }

    if (offset && (flags & SFT_STORAGE_WRITE_REPLACE)) {
        req->err = SFT_STORAGE_INVALID;
        return SFT_ERROR;
    }

    perms = sft_vfs_dir_perms(s, vpath);

    if (!(perms & SFT_PERM_OVERWRITE) && !(flags & SFT_STORAGE_WRITE_EXCL)) {
        flags |= SFT_STORAGE_WRITE_EXCL|SFT_STORAGE_WRITE_NOREPLACE
                 |SFT_VFS_NO_OVERWRITE;
    }

    req->flags = flags;

    return sft_vfs_run(s, req);
}


/* a request on an open file or directory: no path to prepare */

static void
sft_vfs_open_req(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_op_t op, sft_storage_t *storage, sft_uint_t post)
{
    req->op = op;
    req->storage = storage;
    req->log = s->log;
    req->session = s->number;
    req->thread_pool = s->thread_pool;
    req->post = post ? sft_vfs_post : NULL;
    req->post_data = s;
}


sft_int_t
sft_vfs_read(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, u_char *buf, size_t len, off_t offset)
{
    sft_vfs_open_req(s, req, SFT_STORAGE_READ, file->storage, 0);
    req->file = file;
    req->buf = buf;
    req->len = len;
    req->offset = offset;

    if (sft_vfs_range(s, req, file, offset, len) != SFT_OK) {
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}


sft_int_t
sft_vfs_write(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, u_char *buf, size_t len, off_t offset)
{
    sft_int_t  rc;

    sft_vfs_open_req(s, req, SFT_STORAGE_WRITE, file->storage, 1);
    req->file = file;
    req->buf = buf;
    req->len = len;

    /*
     * appending: each write gets the end as it stands after the writes
     * before it, so pipelined writes that run at once land in order
     */
    req->offset = (file->flags & SFT_STORAGE_WRITE_APPEND) ? file->size
                                                           : offset;

    if (sft_vfs_range(s, req, file, req->offset, len) != SFT_OK) {
        return SFT_ERROR;
    }

    /*
     * without writes at any offset, each goes on where the last ended, or
     * the driver's window takes it or refuses it
     */

    if (req->offset != file->size
        && !sft_storage_has(file->storage, SFT_STORAGE_CAP_WINDOW_WRITE)
        && sft_vfs_need(s, req, SFT_STORAGE_CAP_RANDOM_WRITE) != SFT_OK)
    {
        return SFT_ERROR;
    }

    req->st.size = file->size;    /* before: what a short write goes back to */

    rc = sft_vfs_charge_write(s, file, offset, len);

    if (rc == SFT_AGAIN) {
        return sft_vfs_run_leased(s, req);      /* waits for room */
    }

    if (rc != SFT_OK) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "quota exceeded: upload of \"%s\" stopped",
                      file->name);
        req->err = SFT_STORAGE_QUOTA;
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}


/*
 * len bytes of from at roff written to to at woff by the driver, without
 * the data passing through the server (SFT_STORAGE_CAP_COPY; both files of
 * this session's storage).  Charged as a write of len bytes; what the
 * copy did not write (the end of from) is credited when it completes.
 */

sft_int_t
sft_vfs_copy(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *to, off_t woff, sft_storage_file_t *from, off_t roff,
    size_t len)
{
    sft_vfs_open_req(s, req, SFT_STORAGE_COPY, to->storage, 1);
    req->file = to;
    req->src = from;
    req->src_offset = roff;
    req->len = len;
    req->offset = (to->flags & SFT_STORAGE_WRITE_APPEND) ? to->size : woff;
    req->st.size = to->size;      /* before: what a short copy goes back to */

    if (from->storage != to->storage) {
        req->err = SFT_STORAGE_UNSUPPORTED;
        return SFT_ERROR;
    }

    if (sft_vfs_need(s, req, SFT_STORAGE_CAP_COPY) != SFT_OK
        || (req->offset != to->size
            && sft_vfs_need(s, req, SFT_STORAGE_CAP_RANDOM_WRITE) != SFT_OK))
    {
        return SFT_ERROR;
    }

    if (sft_vfs_range(s, req, from, roff, len) != SFT_OK
        || sft_vfs_range(s, req, to, req->offset, len) != SFT_OK)
    {
        return SFT_ERROR;
    }

    if (sft_vfs_charge_write(s, to, woff, len) != SFT_OK) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "quota exceeded: copy into \"%s\" stopped", to->name);
        req->err = SFT_STORAGE_QUOTA;
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}


/* commit: rename a temporary upload into place; 0: abort, remove it */

sft_int_t
sft_vfs_close(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, sft_uint_t commit)
{
    sft_vfs_open_req(s, req, SFT_STORAGE_CLOSE, file->storage, 1);
    req->file = file;
    req->commit = commit;

    return sft_vfs_run(s, req);
}


/* an operation on an open file that needs nothing more: fstat, fsync */

static sft_int_t
sft_vfs_file_op(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_op_t op, sft_storage_file_t *file)
{
    sft_vfs_open_req(s, req, op, file->storage, 0);
    req->file = file;

    return sft_vfs_run(s, req);
}


/* the attributes of an open file (an upload: its temporary file) */

sft_int_t
sft_vfs_fstat(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file)
{
    return sft_vfs_file_op(s, req, SFT_STORAGE_FSTAT, file);
}


/* an open file's data to stable storage */

sft_int_t
sft_vfs_fsync(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file)
{
    return sft_vfs_file_op(s, req, SFT_STORAGE_FSYNC, file);
}


/*
 * An open file cut or extended to size bytes: growth is charged first, as
 * a write up to size would be (req->len holds it, given back if the
 * driver fails), and a cut is credited when it is done.  It needs writes
 * at any offset, unless the size stays as it is.
 */

sft_int_t
sft_vfs_truncate(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, off_t size)
{
    off_t  old;

    sft_vfs_open_req(s, req, SFT_STORAGE_TRUNCATE, file->storage, 1);
    req->file = file;
    req->offset = size;
    req->len = 0;

    if (size < 0 || !sft_storage_range_valid(size, 0)) {
        req->err = SFT_STORAGE_INVALID;
        return SFT_ERROR;
    }

    old = file->size;

    /* a driver that only appends can keep a size, not change it */

    if (!sft_storage_has(file->storage, SFT_STORAGE_CAP_RANDOM_WRITE)) {
        if (size == old) {
            return SFT_OK;
        }

        if (sft_vfs_need(s, req, SFT_STORAGE_CAP_RANDOM_WRITE) != SFT_OK) {
            return SFT_ERROR;
        }
    }

    if (size > old) {
        if (sft_vfs_charge_write(s, file, old, size - old) != SFT_OK) {
            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "quota exceeded: \"%s\" not extended",
                          file->name);
            req->err = SFT_STORAGE_QUOTA;
            return SFT_ERROR;
        }

        req->len = (size_t) (size - old);
    }

    return sft_vfs_run(s, req);
}


/*
 * The mode of an open file (an upload, whose name may not be there yet):
 * it needs "chmod" in the directory of path, as a chmod by name, and
 * keeps the bits a client may set.
 */

sft_int_t
sft_vfs_fchmod(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, const u_char *path, size_t len, mode_t mode)
{
    size_t  n;
    u_char  vpath[SFT_STORAGE_PATH_MAX + 1];

    sft_vfs_open_req(s, req, SFT_STORAGE_FSETATTR, file->storage, 0);
    req->file = file;
    req->flags = SFT_STORAGE_SET_MODE;
    req->mode = sft_vfs_mode(mode);

    if (sft_vfs_need(s, req, SFT_STORAGE_CAP_MODES) != SFT_OK) {
        return SFT_ERROR;
    }

    if (sft_vfs_normalize(s->cwd, s->cwd_len, path, len, vpath, &n)
        != SFT_STORAGE_OK
        || !(sft_vfs_dir_perms(s, vpath) & SFT_PERM_CHMOD))
    {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "permission denied: mode of \"%.*s\"", (int) len,
                      path);
        req->err = SFT_STORAGE_PERMISSION;
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}


/* both times of an open file */

sft_int_t
sft_vfs_futimes(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_file_t *file, time_t atime, time_t mtime)
{
    sft_vfs_open_req(s, req, SFT_STORAGE_FSETATTR, file->storage, 0);
    req->file = file;
    req->flags = SFT_STORAGE_SET_ATIME|SFT_STORAGE_SET_MTIME;
    req->atime = atime;
    req->mtime = mtime;

    return sft_vfs_run(s, req);
}


sft_int_t
sft_vfs_opendir(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_dir_t *dir, const u_char *path, size_t len)
{
    u_char  *vpath;
    size_t   n;

    req->op = SFT_STORAGE_OPENDIR;
    req->dir = dir;

    if (sft_vfs_prepare(s, req, path, len, SFT_PERM_LIST, 1, &vpath,
                        &req->path)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    /* the filters of the listing are those of this directory */

    n = sft_strlen(vpath);

    if (dir->vdir == NULL) {
        dir->vdir = sft_pnalloc(req->pool, n + 1);
        if (dir->vdir == NULL) {
            req->err = SFT_STORAGE_BUSY;
            return SFT_ERROR;
        }
    }

    sft_memcpy(dir->vdir, vpath, n + 1);
    dir->vdir_len = n;

    if (dir->entries == NULL) {
        dir->entries = sft_palloc(req->pool, SFT_STORAGE_DIR_BATCH
                                             * sizeof(sft_storage_dirent_t));
        if (dir->entries == NULL) {
            req->err = SFT_STORAGE_BUSY;
            return SFT_ERROR;
        }
    }

    return sft_vfs_run(s, req);
}


/* a batch in dir->entries, hidden names left out; dir->eof at the end */

sft_int_t
sft_vfs_readdir(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_dir_t *dir)
{
    sft_vfs_open_req(s, req, SFT_STORAGE_READDIR, dir->storage, 1);
    req->dir = dir;

    return sft_vfs_run(s, req);
}


sft_int_t
sft_vfs_closedir(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_dir_t *dir)
{
    sft_vfs_open_req(s, req, SFT_STORAGE_CLOSEDIR, dir->storage, 0);
    req->thread_pool = NULL;             /* closedir() does not block */
    req->dir = dir;

    return sft_vfs_run(s, req);
}


static sft_int_t
sft_vfs_simple(sft_vfs_session_t *s, sft_storage_req_t *req,
    sft_storage_op_t op, const u_char *path, size_t len, uint32_t need,
    sft_uint_t not_root)
{
    u_char  *vpath;

    req->op = op;

    if (sft_vfs_prepare(s, req, path, len, need, 0, &vpath, &req->path)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    if (not_root && sft_vfs_refuse_root(req, vpath) != SFT_OK) {
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}


sft_int_t
sft_vfs_mkdir(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len)
{
    return sft_vfs_simple(s, req, SFT_STORAGE_MKDIR, path, len,
                          SFT_PERM_MKDIR, 1);
}


sft_int_t
sft_vfs_rmdir(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len)
{
    return sft_vfs_simple(s, req, SFT_STORAGE_RMDIR, path, len,
                          SFT_PERM_RMDIR, 1);
}


sft_int_t
sft_vfs_unlink(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len)
{
    return sft_vfs_simple(s, req, SFT_STORAGE_UNLINK, path, len,
                          SFT_PERM_DELETE, 1);
}


sft_int_t
sft_vfs_setmtime(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, time_t mtime)
{
    req->mtime = mtime;

    return sft_vfs_simple(s, req, SFT_STORAGE_SETMTIME, path, len,
                          SFT_PERM_UPLOAD, 0);
}


/* both times: SETSTAT's */

sft_int_t
sft_vfs_settimes(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, time_t atime, time_t mtime)
{
    req->atime = atime;
    req->flags |= SFT_STORAGE_SET_ATIME;

    return sft_vfs_setmtime(s, req, path, len, mtime);
}


sft_int_t
sft_vfs_chmod(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, mode_t mode)
{
    req->mode = mode;

    if (sft_vfs_need(s, req, SFT_STORAGE_CAP_MODES) != SFT_OK) {
        return SFT_ERROR;
    }

    return sft_vfs_simple(s, req, SFT_STORAGE_CHMOD, path, len,
                          SFT_PERM_CHMOD, 0);
}


sft_int_t
sft_vfs_statvfs(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len)
{
    return sft_vfs_simple(s, req, SFT_STORAGE_STATVFS, path, len, 0, 0);
}


sft_int_t
sft_vfs_readlink(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, u_char *buf, size_t size)
{
    req->buf = buf;
    req->len = size;

    return sft_vfs_simple(s, req, SFT_STORAGE_READLINK, path, len, 0, 1);
}


/*
 * The source needs "rename" in its directory; the target "upload" in its
 * own, and "overwrite" as well to replace an existing name.
 */

sft_int_t
sft_vfs_rename(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *from, size_t flen, const u_char *to, size_t tlen)
{
    u_char    *vfrom, *vto;
    uint32_t   perms;

    req->op = SFT_STORAGE_RENAME;

    if (sft_vfs_need(s, req, SFT_STORAGE_CAP_RENAME) != SFT_OK) {
        return SFT_ERROR;
    }

    if (sft_vfs_prepare(s, req, from, flen, SFT_PERM_RENAME, 0, &vfrom,
                        &req->path)
        != SFT_OK
        || sft_vfs_refuse_root(req, vfrom) != SFT_OK
        || sft_vfs_prepare(s, req, to, tlen, SFT_PERM_UPLOAD, 0, &vto,
                           &req->path2)
           != SFT_OK
        || sft_vfs_refuse_root(req, vto) != SFT_OK)
    {
        return SFT_ERROR;
    }

    perms = sft_vfs_dir_perms(s, vto);

    req->flags = (perms & SFT_PERM_OVERWRITE) ? 0
                                              : SFT_STORAGE_WRITE_NOREPLACE;

    return sft_vfs_run(s, req);
}


/*
 * The target is stored relative: an absolute (virtual) target becomes
 * "../" per level of the link's directory; one climbing above the
 * session's root is refused.
 */

sft_int_t
sft_vfs_symlink(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *path, size_t len, const u_char *target, size_t tlen)
{
    u_char             *vpath, *p, *dir;
    size_t              n, dlen, depth, tn, i;
    sft_storage_err_t   err;
    u_char              resolved[SFT_STORAGE_PATH_MAX + 1];

    req->op = SFT_STORAGE_SYMLINK;

    if (sft_vfs_need(s, req, SFT_STORAGE_CAP_LINKS) != SFT_OK) {
        return SFT_ERROR;
    }

    if (sft_vfs_prepare(s, req, path, len, SFT_PERM_UPLOAD, 0, &vpath,
                        &req->path)
        != SFT_OK
        || sft_vfs_refuse_root(req, vpath) != SFT_OK)
    {
        return SFT_ERROR;
    }

    if (tlen == 0) {
        req->err = SFT_STORAGE_NAME_INVALID;
        return SFT_ERROR;
    }

    /* the link's directory */

    dir = vpath;
    for (dlen = sft_strlen(vpath); dlen > 1 && vpath[dlen - 1] != '/'; dlen--)
    {
        /* void */
    }

    if (dlen > 1) {
        dlen--;
    }

    depth = 0;
    for (i = 0; i < dlen; i++) {
        depth += (dir[i] == '/' && dlen > 1);
    }

    /* a relative target must not climb above the root */

    if (target[0] != '/' && sft_storage_link_escapes(depth, target, tlen)) {
        req->err = SFT_STORAGE_PERMISSION;
        return SFT_ERROR;
    }

    err = sft_vfs_normalize(dir, dlen, target, tlen, resolved, &n);

    if (err != SFT_STORAGE_OK) {
        req->err = err;
        return SFT_ERROR;
    }

    /* stored as given if relative, else made relative */

    if (target[0] != '/') {
        tn = tlen;
        req->path2 = sft_pnalloc(req->pool, tn + 1);
        if (req->path2 == NULL) {
            req->err = SFT_STORAGE_BUSY;
            return SFT_ERROR;
        }

        sft_memcpy(req->path2, target, tn);
        req->path2[tn] = '\0';

    } else {
        req->path2 = sft_pnalloc(req->pool, depth * 3 + n + 2);
        if (req->path2 == NULL) {
            req->err = SFT_STORAGE_BUSY;
            return SFT_ERROR;
        }

        p = req->path2;

        for (i = 0; i < depth; i++) {
            p = sft_cpymem(p, "../", 3);
        }

        if (n > 1) {
            p = sft_cpymem(p, resolved + 1, n - 1);

        } else if (p == req->path2) {
            *p++ = '.';
        }

        *p = '\0';
    }

    if (sft_vfs_room_for_name(s, req, vpath) != SFT_OK) {
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}


/*
 * A hard link: "download" in the source's directory, "upload" in the new
 * name's; the new name must not exist and the source must be a regular
 * file (the driver checks).
 */

sft_int_t
sft_vfs_link(sft_vfs_session_t *s, sft_storage_req_t *req,
    const u_char *from, size_t flen, const u_char *to, size_t tlen)
{
    u_char  *vfrom, *vto;

    req->op = SFT_STORAGE_LINK;

    if (sft_vfs_need(s, req, SFT_STORAGE_CAP_LINKS) != SFT_OK) {
        return SFT_ERROR;
    }

    if (sft_vfs_prepare(s, req, from, flen, SFT_PERM_DOWNLOAD, 0, &vfrom,
                        &req->path)
        != SFT_OK
        || sft_vfs_refuse_root(req, vfrom) != SFT_OK
        || sft_vfs_prepare(s, req, to, tlen, SFT_PERM_UPLOAD, 0, &vto,
                           &req->path2)
           != SFT_OK
        || sft_vfs_refuse_root(req, vto) != SFT_OK)
    {
        return SFT_ERROR;
    }

    if (sft_vfs_room_for_name(s, req, vto) != SFT_OK) {
        return SFT_ERROR;
    }

    return sft_vfs_run(s, req);
}
