/*
 * sft_ftp_list.c -- directory listings of our own (no /bin/ls, no glob):
 * LIST in "ls -l" style, NLST names only, MLSD and MLST with the RFC 3659
 * facts type, size, modify, perm and unix.mode (those OPTS MLST left on).
 * Hidden names never get here: the VFS leaves them out of every batch.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>


static const char  *sft_ftp_months[] = {
    "Jan", "Feb", "Mar", "Apr", "May", "Jun",
    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
};


static u_char *
sft_ftp_mode_string(u_char *p, mode_t mode)
{
    *p++ = S_ISDIR(mode) ? 'd' : S_ISLNK(mode) ? 'l' : '-';
    *p++ = (mode & S_IRUSR) ? 'r' : '-';
    *p++ = (mode & S_IWUSR) ? 'w' : '-';
    *p++ = (mode & S_IXUSR) ? 'x' : '-';
    *p++ = (mode & S_IRGRP) ? 'r' : '-';
    *p++ = (mode & S_IWGRP) ? 'w' : '-';
    *p++ = (mode & S_IXGRP) ? 'x' : '-';
    *p++ = (mode & S_IROTH) ? 'r' : '-';
    *p++ = (mode & S_IWOTH) ? 'w' : '-';
    *p++ = (mode & S_IXOTH) ? 'x' : '-';

    return p;
}


/* RFC 3659 7.5.5, from the permissions of the directory holding it */

static u_char *
sft_ftp_perm_fact(u_char *p, mode_t mode, uint32_t perms)
{
    if (S_ISDIR(mode)) {
        *p++ = 'e';

        if (perms & SFT_PERM_LIST) {
            *p++ = 'l';
        }

        if (perms & SFT_PERM_UPLOAD) {
            *p++ = 'c';
        }

        if (perms & SFT_PERM_MKDIR) {
            *p++ = 'm';
        }

        if (perms & SFT_PERM_DELETE) {
            *p++ = 'p';
        }

        if (perms & SFT_PERM_RMDIR) {
            *p++ = 'd';
        }

    } else {
        if (perms & SFT_PERM_DOWNLOAD) {
            *p++ = 'r';
        }

        if ((perms & (SFT_PERM_UPLOAD|SFT_PERM_OVERWRITE))
            == (SFT_PERM_UPLOAD|SFT_PERM_OVERWRITE))
        {
            *p++ = 'a';
            *p++ = 'w';
        }

        if (perms & SFT_PERM_DELETE) {
            *p++ = 'd';
        }
    }

    if (perms & SFT_PERM_RENAME) {
        *p++ = 'f';
    }

    return p;
}


/* one entry; last - p must be at least SFT_FTP_LIST_ENTRY_MAX */

u_char *
sft_ftp_list_format(sft_ftp_session_t *s, sft_uint_t kind, u_char *p,
    u_char *last, u_char *name, size_t len, sft_storage_stat_t *st,
    uint32_t perms)
{
    time_t      now;
    struct tm   tm;
    u_char      pf[16], *e;

    switch (kind) {

    case SFT_FTP_NLST:
        return sft_slprintf(p, last, "%.*s\r\n", (int) len, name);

    case SFT_FTP_LIST:
        p = sft_ftp_mode_string(p, st->mode);
        gmtime_r(&st->mtime, &tm);
        now = time(NULL);

        p = sft_slprintf(p, last, " %3lu ftp      ftp      %12lld %s %2d ",
                         (unsigned long) (st->nlink ? st->nlink : 1),
                         (long long) st->size, sft_ftp_months[tm.tm_mon],
                         tm.tm_mday);

        if (st->mtime > now - 180 * 86400 && st->mtime <= now + 86400) {
            p = sft_slprintf(p, last, "%02d:%02d ", tm.tm_hour, tm.tm_min);

        } else {
            p = sft_slprintf(p, last, " %4d ", tm.tm_year + 1900);
        }

        return sft_slprintf(p, last, "%.*s\r\n", (int) len, name);

    default:    /* MLSD, MLST: the facts OPTS MLST left on */
        if (!(s->facts_off & SFT_FTP_FACT_TYPE)) {
            p = sft_slprintf(p, last, "type=%s;",
                             S_ISDIR(st->mode) ? "dir"
                             : S_ISREG(st->mode) ? "file"
                             : "OS.unix=symlink");
        }

        if (!(s->facts_off & SFT_FTP_FACT_SIZE)) {
            p = sft_slprintf(p, last, "size=%lld;", (long long) st->size);
        }

        if (!(s->facts_off & SFT_FTP_FACT_MODIFY)) {
            gmtime_r(&st->mtime, &tm);
            p = sft_slprintf(p, last, "modify=%04d%02d%02d%02d%02d%02d;",
                             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                             tm.tm_hour, tm.tm_min, tm.tm_sec);
        }

        if (!(s->facts_off & SFT_FTP_FACT_PERM)) {
            e = sft_ftp_perm_fact(pf, st->mode, perms);
            p = sft_slprintf(p, last, "perm=%.*s;", (int) (e - pf), pf);
        }

        if (!(s->facts_off & SFT_FTP_FACT_MODE)) {
            p = sft_slprintf(p, last, "unix.mode=0%o;",
                             (unsigned) (st->mode & 07777));
        }

        return sft_slprintf(p, last, " %.*s\r\n", (int) len, name);
    }
}


static const char  *sft_ftp_fact_names[SFT_FTP_FACT_N] = {
    "type", "size", "modify", "perm", "unix.mode"
};


/*
 * "type*;size*;...;" for FEAT (star: the selected ones starred) or
 * "type;size;" for OPTS MLST (only the selected ones)
 */

u_char *
sft_ftp_facts(sft_ftp_session_t *s, u_char *p, u_char *last,
    sft_uint_t star)
{
    sft_uint_t  i, on;

    for (i = 0; i < SFT_FTP_FACT_N; i++) {
        on = !(s->facts_off & (1 << i));

        if (star || on) {
            p = sft_slprintf(p, last, "%s%s;", sft_ftp_fact_names[i],
                             star && on ? "*" : "");
        }
    }

    return p;
}


/* OPTS MLST type;size;...: those facts on, the others off, unknown ignored */

void
sft_ftp_facts_select(sft_ftp_session_t *s, u_char *list, size_t len)
{
    u_char      *p, *end, *semi;
    size_t       n;
    sft_uint_t   i;

    s->facts_off = (1 << SFT_FTP_FACT_N) - 1;

    p = list;
    end = list + len;

    while (p < end) {
        semi = memchr(p, ';', end - p);
        n = (semi ? semi : end) - p;

        for (i = 0; i < SFT_FTP_FACT_N; i++) {
            if (sft_strlen(sft_ftp_fact_names[i]) == n
                && strncasecmp((char *) p, sft_ftp_fact_names[i], n) == 0)
            {
                s->facts_off &= ~(1 << i);
            }
        }

        p += n + 1;
    }
}


/*
 * Formats the entries of the current batch into t->out; reads the next
 * batch when this one is done.  SFT_OK with text (or t->eof), SFT_AGAIN
 * while a batch is being read, SFT_ERROR.
 */

sft_int_t
sft_ftp_list_fill(sft_ftp_session_t *s, sft_ftp_transfer_t *t)
{
    u_char                *p, *last;
    sft_int_t              rc;
    sft_storage_dirent_t  *e;

    if (t->out == NULL) {
        t->out = sft_pnalloc(t->pool, SFT_FTP_LIST_BUFFER);
        if (t->out == NULL) {
            return SFT_ERROR;
        }
    }

    p = t->out;
    last = t->out + SFT_FTP_LIST_BUFFER;

    for ( ;; ) {

        while (t->entry < t->dir.nentries) {
            if (last - p < SFT_FTP_LIST_ENTRY_MAX) {
                goto done;
            }

            e = &t->dir.entries[t->entry++];

            if ((e->len == 1 && e->name[0] == '.')
                || (e->len == 2 && e->name[0] == '.' && e->name[1] == '.'))
            {
                continue;
            }

            p = sft_ftp_list_format(s, t->kind, p, last, e->name, e->len,
                                    &e->st, t->perms);
        }

        if (t->dir.eof) {
            t->eof = 1;
            goto done;
        }

        if (p > t->out) {
            goto done;
        }

        sft_ftp_transfer_req(s, t);

        rc = sft_vfs_readdir(&s->vfs, &t->req, &t->dir);

        if (rc == SFT_AGAIN) {
            t->io = 1;
            s->pending++;
            return SFT_AGAIN;
        }

        if (rc == SFT_ERROR) {
            return SFT_ERROR;
        }

        t->entry = 0;
    }

done:

    t->out_len = p - t->out;
    t->out_pos = 0;

    return SFT_OK;
}


/* MLST: the facts of one path, on the control connection */

static void
sft_ftp_mlst_done(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    u_char   *p, *last, *path, *out;
    size_t    len;
    uint32_t  perms;

    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    path = r->buf;
    len = sft_strlen(path);

    p = sft_pnalloc(r->pool, len + SFT_FTP_LIST_ENTRY_MAX + 64);
    if (p == NULL) {
        sft_ftp_reply(s, 451, "Local error.");
        return;
    }

    last = p + len + SFT_FTP_LIST_ENTRY_MAX + 64;

    perms = sft_vfs_perms(&s->vfs, path, len);

    out = p;
    p = sft_slprintf(p, last, "250-Listing %s\r\n ", path);
    p = sft_ftp_list_format(s, SFT_FTP_MLSD, p, last, path, len, &r->st,
                            perms);
    p = sft_slprintf(p, last, "250 End.\r\n");

    sft_ftp_reply_raw(s, out, p - out);
}


sft_int_t
sft_ftp_mlst(sft_ftp_session_t *s)
{
    u_char             *abs;
    size_t              len;
    sft_int_t           rc;
    sft_storage_req_t  *r;

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    abs = sft_pnalloc(r->pool, SFT_STORAGE_PATH_MAX + 1);
    if (abs == NULL) {
        return SFT_ERROR;
    }

    if (sft_vfs_normalize(s->vfs.cwd, s->vfs.cwd_len,
                          s->arg.len ? s->arg.data : (u_char *) ".",
                          s->arg.len ? s->arg.len : 1, abs, &len)
        != SFT_STORAGE_OK)
    {
        sft_ftp_reply(s, 553, "File name not allowed.");
        return SFT_OK;
    }

    r->buf = abs;

    rc = sft_vfs_stat(&s->vfs, r, abs, len);

    return sft_ftp_op_result(s, rc, sft_ftp_mlst_done);
}


/*
 * STAT path: "213-" and the LIST lines on the control connection; a
 * directory is listed until the reply would pass SFT_FTP_STAT_MAX (then
 * "(truncated)"), so the reply buffer always holds it
 */

#define SFT_FTP_STAT_MAX  (SFT_FTP_REPLY_BUFFER / 2 + SFT_FTP_LIST_ENTRY_MAX)


typedef struct {
    u_char                   *path;
    size_t                    path_len;
    u_char                   *out;
    u_char                   *pos;
    u_char                   *last;
    sft_uint_t                entry;
    unsigned                  opened:1;
    unsigned                  truncated:1;
} sft_ftp_stat_ctx_t;


static void sft_ftp_stat_done(sft_ftp_session_t *s, sft_storage_req_t *r);
static void sft_ftp_stat_dir(sft_ftp_session_t *s, sft_ftp_stat_ctx_t *c);
static void sft_ftp_stat_io(sft_storage_req_t *req);
static void sft_ftp_stat_end(sft_ftp_session_t *s, sft_ftp_stat_ctx_t *c,
    sft_storage_err_t err);
static sft_storage_req_t *sft_ftp_stat_req(sft_ftp_session_t *s,
    sft_ftp_stat_ctx_t *c);


sft_int_t
sft_ftp_stat_path(sft_ftp_session_t *s)
{
    sft_int_t            rc;
    sft_storage_req_t   *r;
    sft_ftp_stat_ctx_t  *c;

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    c = sft_pcalloc(r->pool, sizeof(sft_ftp_stat_ctx_t));
    if (c == NULL) {
        return SFT_ERROR;
    }

    c->out = sft_pnalloc(r->pool, SFT_FTP_STAT_MAX);
    c->path = sft_pnalloc(r->pool, s->arg.len);

    if (c->out == NULL || c->path == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(c->path, s->arg.data, s->arg.len);
    c->path_len = s->arg.len;
    c->last = c->out + SFT_FTP_STAT_MAX;

    c->pos = sft_slprintf(c->out, c->last, "213-Status of %.*s:\r\n",
                          (int) c->path_len, c->path);

    /* stat, opendir and readdir do not use buf */
    r->buf = (u_char *) c;

    rc = sft_vfs_stat(&s->vfs, r, c->path, c->path_len);

    return sft_ftp_op_result(s, rc, sft_ftp_stat_done);
}


static sft_storage_req_t *
sft_ftp_stat_req(sft_ftp_session_t *s, sft_ftp_stat_ctx_t *c)
{
    sft_storage_req_t  *r;

    r = sft_ftp_op_request(s);     /* the op pool exists: cannot fail */

    r->handler = sft_ftp_stat_io;
    r->buf = (u_char *) c;

    return r;
}


static void
sft_ftp_stat_done(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    sft_int_t            rc;
    sft_ftp_stat_ctx_t  *c;

    c = (sft_ftp_stat_ctx_t *) r->buf;

    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    if (!S_ISDIR(r->st.mode)) {
        c->pos = sft_ftp_list_format(s, SFT_FTP_LIST, c->pos, c->last,
                                     c->path, c->path_len, &r->st, 0);
        sft_ftp_stat_end(s, c, SFT_STORAGE_OK);
        return;
    }

    /* entries of an earlier STAT were in an op pool now gone */
    sft_memzero(&s->op_dir, sizeof(sft_storage_dir_t));

    r = sft_ftp_stat_req(s, c);

    rc = sft_vfs_opendir(&s->vfs, r, &s->op_dir, c->path, c->path_len);

    if (rc == SFT_AGAIN) {
        s->pending++;
        s->busy = 1;
        return;
    }

    if (rc == SFT_OK) {
        r->err = SFT_STORAGE_OK;
    }

    sft_ftp_stat_dir(s, c);
}


static void
sft_ftp_stat_dir(sft_ftp_session_t *s, sft_ftp_stat_ctx_t *c)
{
    sft_int_t              rc;
    sft_storage_req_t     *r;
    sft_storage_dirent_t  *e;

    r = &s->req;

    /* bounded by the directory: each pass reads the next batch */

    for ( ;; ) {

        if (r->err != SFT_STORAGE_OK) {
            sft_ftp_stat_end(s, c, r->err);
            return;
        }

        c->opened = 1;

        while (c->entry < s->op_dir.nentries) {
            if (c->last - c->pos < SFT_FTP_LIST_ENTRY_MAX) {
                c->truncated = 1;
                sft_ftp_stat_end(s, c, SFT_STORAGE_OK);
                return;
            }

            e = &s->op_dir.entries[c->entry++];

            if ((e->len == 1 && e->name[0] == '.')
                || (e->len == 2 && e->name[0] == '.' && e->name[1] == '.'))
            {
                continue;
            }

            c->pos = sft_ftp_list_format(s, SFT_FTP_LIST, c->pos, c->last,
                                         e->name, e->len, &e->st, 0);
        }

        if (s->op_dir.eof) {
            sft_ftp_stat_end(s, c, SFT_STORAGE_OK);
            return;
        }

        r = sft_ftp_stat_req(s, c);

        rc = sft_vfs_readdir(&s->vfs, r, &s->op_dir);

        if (rc == SFT_AGAIN) {
            s->pending++;
            s->busy = 1;
            return;
        }

        if (rc == SFT_OK) {
            r->err = SFT_STORAGE_OK;
        }

        c->entry = 0;
    }
}


static void
sft_ftp_stat_io(sft_storage_req_t *req)
{
    sft_ftp_session_t   *s = req->data;
    sft_ftp_stat_ctx_t  *c;

    c = (sft_ftp_stat_ctx_t *) req->buf;

    s->pending--;

    if (s->closed) {
        if (req->op == SFT_STORAGE_OPENDIR && req->err == SFT_STORAGE_OK) {
            c->opened = 1;
        }

        if (c->opened) {
            c->opened = 0;
            (void) sft_vfs_closedir(&s->vfs, sft_ftp_stat_req(s, c),
                                    &s->op_dir);
        }

        if (s->pending == 0) {
            sft_ftp_session_free(s);
        }

        return;
    }

    s->busy = 0;
    c->entry = 0;

    sft_ftp_stat_dir(s, c);
    sft_ftp_resume(s);
}


static void
sft_ftp_stat_end(sft_ftp_session_t *s, sft_ftp_stat_ctx_t *c,
    sft_storage_err_t err)
{
    sft_storage_req_t  *r;

    if (c->opened) {
        c->opened = 0;
        (void) sft_vfs_closedir(&s->vfs, sft_ftp_stat_req(s, c),
                                &s->op_dir);
    }

    if (err != SFT_STORAGE_OK) {
        r = sft_ftp_stat_req(s, c);
        r->err = err;
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    /* the room for this line is kept by SFT_FTP_LIST_ENTRY_MAX */

    c->pos = sft_slprintf(c->pos, c->last, "213 End of status%s.\r\n",
                          c->truncated ? " (truncated)" : "");

    sft_ftp_reply_raw(s, c->out, c->pos - c->out);
}
