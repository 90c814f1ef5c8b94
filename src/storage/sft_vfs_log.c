/*
 * sft_vfs_log.c -- the session log's record of what a session changed:
 * every directory, delete, rename, link, mode and time change that
 * succeeded, for every protocol, at info level with the session's peer and
 * user, the paths as the user sees them.  Uploads are logged with their
 * transfer by the protocol.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_vfs.h>


/* a storage path ("home/a/b"; "a/b" or "." without a home) as "/a/b" */

static char *
sft_vfs_log_vpath(sft_storage_req_t *req, u_char *path, char *buf,
    size_t size)
{
    u_char  *p;

    p = path + req->base_len;

    if (*p == '/') {
        p++;
    }

    if (p[0] == '.' && p[1] == '\0') {
        p++;
    }

    snprintf(buf, size, "/%s", (char *) p);

    return buf;
}


void
sft_vfs_log_change(sft_vfs_session_t *s, sft_storage_req_t *req)
{
    const char  *what;
    char         a[SFT_STORAGE_PATH_MAX + 2], b[SFT_STORAGE_PATH_MAX + 2];

    if (req->err != SFT_STORAGE_OK || s->log->log_level < SFT_LOG_INFO
        || req->path == NULL)
    {
        return;
    }

    switch (req->op) {
    case SFT_STORAGE_MKDIR:    what = "mkdir"; break;
    case SFT_STORAGE_RMDIR:    what = "rmdir"; break;
    case SFT_STORAGE_UNLINK:   what = "delete"; break;
    case SFT_STORAGE_RENAME:   what = "rename"; break;
    case SFT_STORAGE_LINK:     what = "link"; break;
    case SFT_STORAGE_SYMLINK:  what = "symlink"; break;
    case SFT_STORAGE_CHMOD:    what = "chmod"; break;
    case SFT_STORAGE_SETMTIME: what = "set mtime of"; break;
    default:                   return;
    }

    sft_vfs_log_vpath(req, req->path, a, sizeof(a));

    switch (req->op) {

    case SFT_STORAGE_RENAME:
    case SFT_STORAGE_LINK:
        sft_log_error(SFT_LOG_INFO, s->log, 0, "%s \"%s\" to \"%s\"", what,
                      a, sft_vfs_log_vpath(req, req->path2, b, sizeof(b)));
        break;

    case SFT_STORAGE_SYMLINK:
        sft_log_error(SFT_LOG_INFO, s->log, 0, "%s \"%s\" -> \"%s\"", what,
                      a, req->path2);
        break;

    case SFT_STORAGE_CHMOD:
        sft_log_error(SFT_LOG_INFO, s->log, 0, "%s %04o \"%s\"", what,
                      (unsigned) (req->mode & 07777), a);
        break;

    default:
        sft_log_error(SFT_LOG_INFO, s->log, 0, "%s \"%s\"", what, a);
    }
}
