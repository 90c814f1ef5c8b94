/*
 * fuzz_sftp.h -- what the SFTP targets put in place of the SSH side: a
 * channel session without libssh (the bytes go into s->in, the replies
 * are read back from s->out), the three functions sft_sftp_session.c
 * gives the decoder (reply space, resume, a closed channel's last
 * operation), and a posix storage on tmpfs (or /tmp) rooted in a
 * temporary directory that is emptied and filled again before each input:
 * "file" (6 bytes), "dir/" and "dir/inner".  Its parent holds the root
 * and an empty "outside/"; anything else there after an input is
 * something created outside the root.  Storage operations run without a
 * thread pool: each completes before the call that started it returns.
 * The targets that include it share its LLVMFuzzerInitialize().
 */

#ifndef _FUZZ_SFTP_H_INCLUDED_
#define _FUZZ_SFTP_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>

#include <assert.h>
#include <dirent.h>

#include "fuzz_log.h"
#include "fuzz_tmp.h"


static char            fuzz_sftp_root[80];
static sft_pool_t     *fuzz_sftp_pool;
static sft_storage_t  *fuzz_sftp_storage;
static sft_str_t       fuzz_sftp_name = sft_string("fuzz");


/*
 * the shim: what sft_sftp_session.c does around the decoder, linked in
 * its place by -Wl,--wrap
 */

u_char *__wrap_sft_sftp_reply_space(sft_sftp_session_t *s, size_t len);
void __wrap_sft_sftp_resume(sft_sftp_session_t *s);
void __wrap_sft_sftp_op_finished(sft_sftp_session_t *s);


u_char *
__wrap_sft_sftp_reply_space(sft_sftp_session_t *s, size_t len)
{
    u_char  *p;
    size_t   size;

    if (s->out_len + len <= s->out_size) {
        return s->out + s->out_len;
    }

    size = sft_max(s->out_size * 2, s->out_len + len);

    p = realloc(s->out, size);
    assert(p != NULL);

    s->out = p;
    s->out_size = size;

    return s->out + s->out_len;
}


/* the session is run again by the target itself until nothing moves */

void
__wrap_sft_sftp_resume(sft_sftp_session_t *s)
{
    assert(!s->closed);
}


/* only a closed session's operations end here; the targets close none */

void
__wrap_sft_sftp_op_finished(sft_sftp_session_t *s)
{
    assert(0);
}


static void
fuzz_sftp_write(const char *name, const char *text)
{
    int   fd;
    char  path[128];

    snprintf(path, sizeof(path), "%s/%s", fuzz_sftp_root, name);

    fd = open(path, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644);
    assert(fd != -1);
    assert(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
    close(fd);
}


/* the root as each input finds it */

static void
fuzz_sftp_reset(void)
{
    char  path[128];

    fuzz_tmp_empty(fuzz_sftp_root);

    snprintf(path, sizeof(path), "%s/dir", fuzz_sftp_root);
    assert(mkdir(path, 0755) == 0);

    fuzz_sftp_write("file", "hello\n");
    fuzz_sftp_write("dir/inner", "inner\n");
}


static uint32_t
fuzz_sftp_u32(const u_char *p)
{
    return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
           | ((uint32_t) p[2] << 8) | p[3];
}


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char  path[128];

    fuzz_log_init(NULL);

    fuzz_tmp_init();

    snprintf(fuzz_sftp_root, sizeof(fuzz_sftp_root), "%s/root",
             fuzz_tmp_dir);
    snprintf(path, sizeof(path), "%s/outside", fuzz_tmp_dir);
    assert(mkdir(fuzz_sftp_root, 0755) == 0 && mkdir(path, 0755) == 0);

    fuzz_sftp_pool = sft_create_pool(4096, &fuzz_log);
    assert(fuzz_sftp_pool != NULL);

    fuzz_sftp_storage = sft_storage_posix_create(fuzz_sftp_pool, &fuzz_log,
                                                 &fuzz_sftp_name,
                                                 (u_char *) fuzz_sftp_root);
    assert(fuzz_sftp_storage != NULL);

    return 0;
}


/* the parent of the root: "root" and an empty "outside", nothing more */

static void
fuzz_sftp_check_outside(void)
{
    DIR            *d;
    char            path[128];
    sft_uint_t      n;
    struct dirent  *e;

    d = opendir(fuzz_tmp_dir);
    assert(d != NULL);
    n = 0;

    while ((e = readdir(d)) != NULL) {
        assert(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0
               || strcmp(e->d_name, "root") == 0
               || strcmp(e->d_name, "outside") == 0);
        n++;
    }

    closedir(d);
    assert(n == 4);

    snprintf(path, sizeof(path), "%s/outside", fuzz_tmp_dir);
    d = opendir(path);
    assert(d != NULL);

    while ((e = readdir(d)) != NULL) {
        assert(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0);
    }

    closedir(d);
}


/* a logged-in channel, INIT not yet received */

static void
fuzz_sftp_open(sft_sftp_session_t *s, uint32_t perms)
{
    sft_memzero(s, sizeof(sft_sftp_session_t));

    s->main = s;
    s->pool = sft_create_pool(4096, &fuzz_log);
    assert(s->pool != NULL);
    s->log = &fuzz_log;
    s->user = fuzz_sftp_name;
    s->kex_done = 1;
    s->logged_in = 1;
    s->sftp = 1;

    sft_vfs_session_init(&s->vfs, fuzz_sftp_storage, NULL, perms,
                         &fuzz_log);

    /* no rate: the buckets never hold a READ or a WRITE back */
    sft_xfer_rate_init(&s->download, 0, 0);
    sft_xfer_rate_init(&s->upload, 0, 0);
}


/* the channel's end: its handles closed, no request left behind */

static void
fuzz_sftp_close(sft_sftp_session_t *s)
{
    sft_sftp_free_handles(s);

    assert(s->inflight == 0 && s->pending == 0 && s->reserved == 0);
    assert(s->nhandles == 0);

    free(s->in);
    free(s->out);
    sft_destroy_pool(s->pool);
}


#endif /* _FUZZ_SFTP_H_INCLUDED_ */
