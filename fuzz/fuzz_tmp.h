/*
 * fuzz_tmp.h -- the temporary directory of a libFuzzer target that
 * writes files: on tmpfs (/dev/shm) where it can, else in /tmp, and
 * removed with all it holds when the fuzzer exits.
 */

#ifndef _FUZZ_TMP_H_INCLUDED_
#define _FUZZ_TMP_H_INCLUDED_


#include <assert.h>
#include <ftw.h>


static char  fuzz_tmp_dir[64];


/* everything below the directory itself; a directory after its entries */

static int
fuzz_tmp_unlink(const char *path, const struct stat *st, int type,
    struct FTW *ftw)
{
    if (ftw->level == 0) {
        return 0;
    }

    if (type == FTW_DP) {
        assert(rmdir(path) == 0);

    } else {
        assert(unlink(path) == 0);
    }

    return 0;
}


/* a directory a client made unreadable can be emptied again */

static int
fuzz_tmp_chmod(const char *path, const struct stat *st, int type,
    struct FTW *ftw)
{
    if (type == FTW_D || type == FTW_DNR) {
        assert(chmod(path, 0755) == 0);
    }

    return 0;
}


static void
fuzz_tmp_empty(const char *dir)
{
    assert(nftw(dir, fuzz_tmp_chmod, 16, FTW_PHYS) == 0);
    assert(nftw(dir, fuzz_tmp_unlink, 16, FTW_DEPTH|FTW_PHYS) == 0);
}


static void
fuzz_tmp_remove(void)
{
    fuzz_tmp_empty(fuzz_tmp_dir);
    (void) rmdir(fuzz_tmp_dir);
}


static void
fuzz_tmp_init(void)
{
    snprintf(fuzz_tmp_dir, sizeof(fuzz_tmp_dir), "%s",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm/siftp-fuzz-XXXXXX"
                                            : "/tmp/siftp-fuzz-XXXXXX");
    assert(mkdtemp(fuzz_tmp_dir) != NULL);
    assert(atexit(fuzz_tmp_remove) == 0);
}


#endif /* _FUZZ_TMP_H_INCLUDED_ */
