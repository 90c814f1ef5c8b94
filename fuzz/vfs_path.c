/*
 * vfs_path.c -- libFuzzer target for the VFS path normalisation every
 * protocol goes through.  The input is "cwd NUL path": the cwd is first
 * normalised from "/" as a CWD command would, then the path against it.
 * Checked: the result is absolute, has no empty, "." or ".." component
 * (it cannot leave the session's root), its length is the one returned,
 * and normalising it again, from "/" or from the cwd, gives it unchanged.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_vfs.h>

#include <assert.h>


static void
check_clean(const u_char *p, size_t len)
{
    size_t         clen;
    const u_char  *c, *end;

    assert(len >= 1 && len <= SFT_STORAGE_PATH_MAX);
    assert(p[0] == '/' && p[len] == '\0');
    assert(strlen((const char *) p) == len);

    if (len == 1) {
        return;
    }

    assert(p[len - 1] != '/');

    end = p + len;
    c = p + 1;

    while (c <= end) {
        clen = 0;

        while (c + clen < end && c[clen] != '/') {
            clen++;
        }

        assert(clen > 0 && clen <= SFT_STORAGE_NAME_MAX);
        assert(!(clen == 1 && c[0] == '.'));
        assert(!(clen == 2 && c[0] == '.' && c[1] == '.'));

        c += clen + 1;
    }
}


static void
check_fixed_point(const u_char *cwd, size_t cwd_len, const u_char *p,
    size_t len)
{
    size_t             n;
    u_char            *out;
    sft_storage_err_t  err;

    out = malloc(SFT_STORAGE_PATH_MAX + 1);
    assert(out != NULL);

    err = sft_vfs_normalize(cwd, cwd_len, p, len, out, &n);

    assert(err == SFT_STORAGE_OK);
    assert(n == len && memcmp(out, p, len + 1) == 0);

    free(out);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t              cwd_len, path_len, n;
    u_char             *raw, *path, *cwd, *out;
    const uint8_t      *nul;
    sft_storage_err_t   err;

    nul = memchr(data, '\0', size);

    if (nul == NULL) {
        raw = NULL;
        cwd_len = 0;
        nul = data - 1;

    } else {
        cwd_len = nul - data;
        raw = malloc(cwd_len ? cwd_len : 1);
        assert(raw != NULL);
        memcpy(raw, data, cwd_len);
    }

    /* copies of exactly the client's bytes, so a read past them is caught */

    path_len = size - (nul + 1 - data);
    path = malloc(path_len ? path_len : 1);
    assert(path != NULL);
    memcpy(path, nul + 1, path_len);

    cwd = malloc(SFT_STORAGE_PATH_MAX + 1);
    out = malloc(SFT_STORAGE_PATH_MAX + 1);
    assert(cwd != NULL && out != NULL);

    if (raw == NULL
        || sft_vfs_normalize((u_char *) "/", 1, raw, cwd_len, cwd, &cwd_len)
           != SFT_STORAGE_OK)
    {
        cwd[0] = '/';
        cwd[1] = '\0';
        cwd_len = 1;
    }

    check_clean(cwd, cwd_len);

    err = sft_vfs_normalize(cwd, cwd_len, path, path_len, out, &n);

    if (err == SFT_STORAGE_OK) {
        check_clean(out, n);
        check_fixed_point((u_char *) "/", 1, out, n);
        check_fixed_point(cwd, cwd_len, out, n);

    } else {
        assert(err == SFT_STORAGE_NAME_INVALID);
    }

    free(raw);
    free(path);
    free(cwd);
    free(out);

    return 0;
}
