/*
 * sft_sftp_reply.c -- the replies: STATUS (and a storage error as the
 * status a client understands), HANDLE, ATTRS, NAME (a directory batch
 * ls -l style, or one name), VERSION with the extensions, and the
 * extended replies of limits, statvfs and users-groups-by-id.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>


#define SFT_SFTP_CHECK_ALGOS  "md5,sha1,sha256,sha512,crc32,crc32c"


static u_char *sft_sftp_mode(u_char *p, mode_t mode);


void
sft_sftp_status(sft_sftp_session_t *s, uint32_t id, uint32_t code,
    const char *msg)
{
    u_char  *p, *start;
    size_t   len;

    len = sft_strlen(msg);

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 4 + 4 + len + 4);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_STATUS;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_u32(p, code);
    p = sft_sftp_put_string(p, (u_char *) msg, len);
    p = sft_sftp_put_string(p, (u_char *) "", 0);

    sft_sftp_packet_done(s, start, p);
}


void
sft_sftp_storage_status(sft_sftp_session_t *s, uint32_t id,
    sft_storage_err_t err)
{
    sft_sftp_storage_why(s, id, err, NULL);
}


/* why: the driver's words for the client, NULL: the error's own */

void
sft_sftp_storage_why(sft_sftp_session_t *s, uint32_t id,
    sft_storage_err_t err, const char *why)
{
    u_char  msg[64];

    switch (err) {

    case SFT_STORAGE_NOT_FOUND:
        sft_sftp_status(s, id, SSH_FX_NO_SUCH_FILE, "No such file");
        break;

    case SFT_STORAGE_PERMISSION:
    case SFT_STORAGE_NAME_INVALID:
        sft_sftp_status(s, id, SSH_FX_PERMISSION_DENIED,
                        "Permission denied");
        break;

    case SFT_STORAGE_UNSUPPORTED:
        if (why) {
            sft_sftp_status(s, id, SSH_FX_OP_UNSUPPORTED, why);
            break;
        }

        if (s->vfs.missing) {
            *sft_slprintf(msg, msg + sizeof(msg) - 1,
                          "%s is not supported by this storage",
                          sft_storage_cap_text(s->vfs.missing)) = '\0';
            sft_sftp_status(s, id, SSH_FX_OP_UNSUPPORTED, (char *) msg);
            break;
        }

        sft_sftp_status(s, id, SSH_FX_OP_UNSUPPORTED,
                        "Operation unsupported");
        break;

    default:
        sft_sftp_status(s, id, SSH_FX_FAILURE,
                        why ? why : sft_storage_strerror(err));
        break;
    }
}


void
sft_sftp_reply_handle(sft_sftp_session_t *s, uint32_t id,
    sft_sftp_handle_t *h)
{
    u_char  *p, *start;
    u_char   hid[4];

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 8);
    if (start == NULL) {
        return;
    }

    (void) sft_sftp_put_u32(hid, (uint32_t) h->index);

    p = start + 4;
    *p++ = SSH_FXP_HANDLE;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_string(p, hid, 4);

    sft_sftp_packet_done(s, start, p);
}


void
sft_sftp_reply_attrs(sft_sftp_session_t *s, uint32_t id,
    sft_storage_stat_t *st)
{
    u_char  *p, *start;

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 32);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_ATTRS;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_attrs(p, st);

    sft_sftp_packet_done(s, start, p);
}


/* the entries of a directory batch that fit the reply, ls -l style */

void
sft_sftp_reply_names(sft_sftp_request_t *r)
{
    u_char                *p, *start, *count, *l, *last;
    char                   date[32];
    u_char                 line[SFT_STORAGE_NAME_MAX + 128];
    struct tm              tm;
    sft_uint_t             n;
    sft_sftp_handle_t     *h;
    sft_sftp_session_t    *s;
    sft_storage_dirent_t  *e;

    s = r->session;
    h = r->handle;

    start = sft_sftp_reply_space(s, SFT_SFTP_DIR_REPLY);
    if (start == NULL) {
        return;
    }

    last = start + SFT_SFTP_DIR_REPLY;
    p = start + 4;
    *p++ = SSH_FXP_NAME;
    p = sft_sftp_put_u32(p, r->id);
    count = p;
    p += 4;
    n = 0;

    for ( /* void */ ; h->entry < h->dir.nentries; h->entry++) {
        e = &h->dir.entries[h->entry];

        if (!sft_vfs_visible(&s->vfs, &h->dir, e->name, e->len)) {
            continue;
        }

        if ((size_t) (last - p) < 2 * e->len + 128 + 48) {
            break;
        }

        (void) gmtime_r(&e->st.mtime, &tm);
        (void) strftime(date, sizeof(date), "%b %e %H:%M", &tm);

        l = sft_sftp_mode(line, e->st.mode);
        l = sft_slprintf(l, line + sizeof(line),
                         " %4lu %-8lu %-8lu %8lld %s %.*s",
                         (unsigned long) e->st.nlink,
                         (unsigned long) e->st.uid,
                         (unsigned long) e->st.gid,
                         (long long) e->st.size, date,
                         (int) e->len, e->name);

        p = sft_sftp_put_string(p, e->name, e->len);
        p = sft_sftp_put_string(p, line, l - line);
        p = sft_sftp_put_attrs(p, &e->st);
        n++;
    }

    if (n == 0) {
        /* everything hidden: the next batch */
        sft_sftp_status(s, r->id, h->dir.eof ? SSH_FX_EOF : SSH_FX_OK,
                        h->dir.eof ? "End of file" : "Success");
        return;
    }

    (void) sft_sftp_put_u32(count, (uint32_t) n);

    sft_sftp_packet_done(s, start, p);
}


/* the type and permissions of a mode as ls -l shows them */

static u_char *
sft_sftp_mode(u_char *p, mode_t mode)
{
    sft_uint_t   i;
    static char  rwx[] = "rwxrwxrwx";

    *p++ = S_ISDIR(mode) ? 'd' : S_ISLNK(mode) ? 'l' : '-';

    for (i = 0; i < 9; i++) {
        *p++ = (mode & (0400 >> i)) ? rwx[i] : '-';
    }

    return p;
}


/* a path made absolute and normalised, as REALPATH answers */

void
sft_sftp_reply_realpath(sft_sftp_session_t *s, uint32_t id, u_char *path,
    size_t len)
{
    size_t              olen;
    sft_storage_err_t   err;
    u_char              out[SFT_STORAGE_PATH_MAX + 1];

    if (len == 0) {
        path = (u_char *) ".";
        len = 1;
    }

    err = sft_vfs_normalize(s->vfs.cwd, s->vfs.cwd_len, path, len, out,
                            &olen);
    if (err != SFT_STORAGE_OK) {
        sft_sftp_storage_status(s, id, err);
        return;
    }

    sft_sftp_reply_name(s, id, out, olen);
}


/* NAME with one name (and no attributes): REALPATH's, READLINK's */

void
sft_sftp_reply_name(sft_sftp_session_t *s, uint32_t id, u_char *name,
    size_t len)
{
    u_char  *p, *start;

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 4 + 2 * (4 + len) + 4);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_NAME;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_u32(p, 1);
    p = sft_sftp_put_string(p, name, len);
    p = sft_sftp_put_string(p, name, len);
    p = sft_sftp_put_u32(p, 0);

    sft_sftp_packet_done(s, start, p);
}


void
sft_sftp_reply_version(sft_sftp_session_t *s)
{
    u_char      *p, *start;
    sft_uint_t   i;

    /* an extension the session's storage cannot serve is not offered */

    static const struct {
        const char  *name;
        const char  *version;
        sft_uint_t   cap;
    } ext[] = {
        { "posix-rename@openssh.com", "1", SFT_STORAGE_CAP_RENAME },
        { "hardlink@openssh.com", "1", SFT_STORAGE_CAP_LINKS },
        { "statvfs@openssh.com", "2", 0 },
        { "fstatvfs@openssh.com", "2", 0 },
        { "fsync@openssh.com", "1", 0 },
        { "lsetstat@openssh.com", "1", 0 },
        { "limits@openssh.com", "1", 0 },
        { "expand-path@openssh.com", "1", 0 },
        { "home-directory", "1", 0 },
        { "users-groups-by-id@openssh.com", "1", 0 },
        { "check-file", SFT_SFTP_CHECK_ALGOS, 0 },
        { "copy-data", "1", 0 },             /* read and write without */
    };

    start = sft_sftp_reply_space(s, 1024);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_VERSION;
    p = sft_sftp_put_u32(p, 3);

    for (i = 0; i < sft_nelems(ext); i++) {
        if (ext[i].cap && !sft_storage_has(s->vfs.storage, ext[i].cap)) {
            continue;
        }

        p = sft_sftp_put_string(p, (u_char *) ext[i].name,
                                sft_strlen(ext[i].name));
        p = sft_sftp_put_string(p, (u_char *) ext[i].version,
                                sft_strlen(ext[i].version));
    }

    sft_sftp_packet_done(s, start, p);
}


void
sft_sftp_reply_limits(sft_sftp_session_t *s, uint32_t id)
{
    u_char  *p, *start;

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 4 * 8);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_EXTENDED_REPLY;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_u64(p, SFT_SFTP_MAX_PACKET);

    /* what a chunk of the buffer pool holds: a READ's reply, a WRITE */
    p = sft_sftp_put_u64(p, sft_min((size_t) SFT_SFTP_MAX_READ,
                                    sft_buffer_chunk_size() - 13));
    p = sft_sftp_put_u64(p, sft_min((size_t) SFT_SFTP_MAX_WRITE,
                                    sft_buffer_chunk_size()));
    p = sft_sftp_put_u64(p, SFT_SFTP_MAX_HANDLES);

    sft_sftp_packet_done(s, start, p);
}


void
sft_sftp_reply_statvfs(sft_sftp_session_t *s, uint32_t id,
    sft_storage_statvfs_t *v)
{
    u_char    *p, *start;
    uint64_t   bs;

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 11 * 8);
    if (start == NULL) {
        return;
    }

    bs = v->block_size ? v->block_size : 4096;

    p = start + 4;
    *p++ = SSH_FXP_EXTENDED_REPLY;
    p = sft_sftp_put_u32(p, id);
    p = sft_sftp_put_u64(p, bs);
    p = sft_sftp_put_u64(p, bs);
    p = sft_sftp_put_u64(p, v->total_bytes / bs);
    p = sft_sftp_put_u64(p, v->free_bytes / bs);
    p = sft_sftp_put_u64(p, v->free_bytes / bs);
    p = sft_sftp_put_u64(p, v->total_files);
    p = sft_sftp_put_u64(p, v->free_files);
    p = sft_sftp_put_u64(p, v->free_files);
    p = sft_sftp_put_u64(p, 0);
    p = sft_sftp_put_u64(p, 0);
    p = sft_sftp_put_u64(p, v->name_max ? v->name_max : 255);

    sft_sftp_packet_done(s, start, p);
}


/* users-groups-by-id@openssh.com: the server's own ids are "siftp" */

void
sft_sftp_reply_ids(sft_sftp_session_t *s, uint32_t id, u_char *uids,
    uint32_t ulen, u_char *gids, uint32_t glen)
{
    u_char          *p, *start, *list;
    uint32_t         v, i, n, own;
    sft_sftp_buf_t   b;

    start = sft_sftp_reply_space(s, 4 + 1 + 4 + 8 + 9 * (ulen + glen) / 4);
    if (start == NULL) {
        return;
    }

    p = start + 4;
    *p++ = SSH_FXP_EXTENDED_REPLY;
    p = sft_sftp_put_u32(p, id);

    for (i = 0; i < 2; i++) {
        b.pos = i ? gids : uids;
        b.last = b.pos + (i ? glen : ulen);
        own = i ? (uint32_t) getgid() : (uint32_t) getuid();

        list = p;
        p += 4;

        for (n = 0; n < SFT_SFTP_MAX_IDS
                    && sft_sftp_get_u32(&b, &v) == SFT_OK; n++)
        {
            if (v == own) {
                p = sft_sftp_put_string(p, (u_char *) "siftp", 5);

            } else {
                p = sft_sftp_put_string(p, (u_char *) "", 0);
            }
        }

        (void) sft_sftp_put_u32(list, (uint32_t) (p - list - 4));
    }

    sft_sftp_packet_done(s, start, p);
}
