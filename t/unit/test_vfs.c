/*
 * test_vfs.c -- the virtual filesystem's pure parts: path normalisation,
 * refused names, per-directory permission rules (longest prefix wins),
 * temporary upload names, the hide/deny filter and quota arithmetic.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_vfs.h>
#include "sft_tap.h"






static int
norm_is(const char *cwd, const char *path, const char *expect)
{
    size_t             n;
    u_char             out[SFT_STORAGE_PATH_MAX + 1];
    sft_storage_err_t  err;

    err = sft_vfs_normalize((u_char *) cwd, strlen(cwd), (u_char *) path,
                            strlen(path), out, &n);

    if (err != SFT_STORAGE_OK) {
        printf("# %s + %s: error %d\n", cwd, path, err);
        return 0;
    }

    if (n != strlen(expect) || strcmp((char *) out, expect) != 0) {
        printf("# %s + %s: \"%s\", expected \"%s\"\n", cwd, path, out,
               expect);
        return 0;
    }

    return 1;
}


static int
norm_err(const char *path, size_t len)
{
    size_t  n;
    u_char  out[SFT_STORAGE_PATH_MAX + 1];

    return sft_vfs_normalize((u_char *) "/", 1, (u_char *) path, len, out,
                             &n)
           == SFT_STORAGE_NAME_INVALID;
}


static int
filter(void *data, const u_char *dir, size_t dir_len, const u_char *name,
    size_t len, int kind)
{
    (void) data;

    /* "/pub" and below: nothing is secret */

    if (dir_len >= 4 && sft_memcmp(dir, "/pub", 4) == 0
        && (dir_len == 4 || dir[4] == '/'))
    {
        return 0;
    }

    if (kind == SFT_VFS_FILTER_HIDE) {
        return len == 8 && sft_memcmp(name, "hidden.x", 8) == 0;
    }

    return len == 6 && sft_memcmp(name, "secret", 6) == 0;
}


int
main(void)
{
    size_t              i;
    char                buf[8192];
    sft_log_t          *log;
    sft_pool_t         *pool;
    sft_vfs_quota_t     q = { 0, 0, NULL };
    sft_vfs_session_t   s;
    sft_storage_req_t   req;
    sft_vfs_rule_t      rules[3];
    sft_storage_dir_t   dir;
    sft_str_t           uname = sft_string("alice");
    sft_usage_t        *usage;
    off_t               bytes, files;
    size_t              size;
    void               *mem;

    printf("1..46\n");

    log = sft_log_init();
    log->log_level = SFT_LOG_ERR;
    pool = sft_create_pool(4096, log);

    /* normalisation */

    ok(norm_is("/", "a/../../b", "/b"), "a/../../b -> /b");
    ok(norm_is("/", "/../x", "/x"), "/../x -> /x");
    ok(norm_is("/", "a//b/./c", "/a/b/c"), "a//b/./c -> /a/b/c");
    ok(norm_is("/", "", "/"), "empty is cwd");
    ok(norm_is("/d/e", "", "/d/e"), "empty is cwd (not root)");
    ok(norm_is("/d/e", "f", "/d/e/f"), "relative to cwd");
    ok(norm_is("/d/e", "../f/", "/d/f"), "relative with .. and slash");
    ok(norm_is("/d/e", "/f", "/f"), "absolute ignores cwd");
    ok(norm_is("/d", "../../../..", "/"), ".. stops at /");
    ok(norm_is("/", "..a/.b./...", "/..a/.b./..."), "dot names are names");

    ok(norm_err("a\0b", 3), "NUL refused");
    ok(norm_err("a\rb", 3), "CR refused");
    ok(norm_err("a\nb", 3), "LF refused");

    memset(buf, 'x', 256);
    ok(norm_err(buf, 256), "256-byte component refused");
    ok(!norm_err(buf, 255), "255-byte component allowed");

    for (i = 0; i < 4200; i += 2) {
        buf[i] = 'a';
        buf[i + 1] = '/';
    }
    ok(norm_err(buf, 4200), "path over 4096 bytes refused");

    /* permissions: longest prefix on a component boundary */

    sft_vfs_session_init(&s, NULL, NULL, SFT_PERM_READ, log);

    rules[0].path = (sft_str_t) sft_string("/pub");
    rules[0].perms = SFT_PERM_ALL;
    rules[1].path = (sft_str_t) sft_string("/pub/ro/");
    rules[1].perms = SFT_PERM_LIST;
    rules[2].path = (sft_str_t) sft_string("/");
    rules[2].perms = SFT_PERM_READ;
    s.rules = rules;
    s.nrules = 3;

    ok(sft_vfs_perms(&s, (u_char *) "/", 1) == SFT_PERM_READ, "root rule");
    ok(sft_vfs_perms(&s, (u_char *) "/pub", 4) == SFT_PERM_ALL, "/pub");
    ok(sft_vfs_perms(&s, (u_char *) "/pub/x/y", 8) == SFT_PERM_ALL,
       "/pub/x/y inherits /pub");
    ok(sft_vfs_perms(&s, (u_char *) "/pub/ro/z", 9) == SFT_PERM_LIST,
       "longest prefix /pub/ro wins");
    ok(sft_vfs_perms(&s, (u_char *) "/public", 7) == SFT_PERM_READ,
       "/pub does not cover /public");

    /* operations refused before any driver is called */

    sft_memzero(&req, sizeof(req));
    req.pool = pool;
    ok(sft_vfs_unlink(&s, &req, (u_char *) "/x", 2) == SFT_ERROR
       && req.err == SFT_STORAGE_PERMISSION, "delete without permission");

    sft_memzero(&req, sizeof(req));
    req.pool = pool;
    ok(sft_vfs_mkdir(&s, &req, (u_char *) "/pub/ro/new", 11) == SFT_ERROR
       && req.err == SFT_STORAGE_PERMISSION, "mkdir under a list-only rule");

    /* temporary names */

    ok(sft_vfs_is_temp_name((u_char *) ".a.txt.sft-Ab12Cd", 17),
       "temp name recognised");
    ok(!sft_vfs_is_temp_name((u_char *) ".a.txt.sft-Ab12C!", 17)
       && !sft_vfs_is_temp_name((u_char *) "a.txt.sft-Ab12Cd", 16),
       "other names are not temp names");

#define owner(s)  sft_vfs_temp_name_owner((u_char *) s, sizeof(s) - 1)

    ok(owner(".a.txt.sft-4242-Ab12Cd") == 4242
       && owner(".a.sft-1-Ab12Cd") == 1
       && owner(".a.txt.sft-Ab12Cd") == 0,
       "temp name owner: the pid in it, 0 for an old-style name");
    ok(owner(".sft-4242-Ab12Cd") == -1
       && owner(".a.sft--Ab12Cd") == -1
       && owner(".a.sft-0-Ab12Cd") == -1
       && owner(".a.sft-12345678901-Ab12Cd") == -1
       && owner(".a.txt.x4242-Ab12Cd") == -1
       && owner(".a.sft-42-Ab12C!") == -1,
       "temp name owner: malformed names are not temp names");
    ok(sft_vfs_is_temp_name((u_char *) ".a.sft-42-Ab12Cd", 16),
       "temp name with an owner recognised");

#undef owner

    sft_memzero(&req, sizeof(req));
    req.pool = pool;
    s.perms = SFT_PERM_ALL;
    s.nrules = 0;
    ok(sft_vfs_stat(&s, &req, (u_char *) "/d/.f.sft-abcdef/x", 18)
       == SFT_ERROR && req.err == SFT_STORAGE_NAME_INVALID,
       "temp names refused as client paths");

    /* filters */

    s.filter = filter;
    sft_memzero(&dir, sizeof(dir));
    dir.vdir = (u_char *) "/d";
    dir.vdir_len = 2;
    ok(!sft_vfs_visible(&s, &dir, (u_char *) "hidden.x", 8)
       && sft_vfs_visible(&s, &dir, (u_char *) "plain", 5)
       && !sft_vfs_visible(&s, &dir, (u_char *) ".z.sft-abcdef", 13),
       "hidden and temp names not visible");
    ok(!sft_vfs_visible(&s, &dir, (u_char *) "secret", 6), "denied not listed");
    dir.vdir = (u_char *) "/pub/x";
    dir.vdir_len = 6;
    ok(sft_vfs_visible(&s, &dir, (u_char *) "secret", 6),
       "a directory's own filter applies to its listing");

    sft_memzero(&req, sizeof(req));
    req.pool = pool;
    ok(sft_vfs_stat(&s, &req, (u_char *) "a/secret/b", 10) == SFT_ERROR
       && req.err == SFT_STORAGE_PERMISSION, "denied component refused");

    /*
     * a component is matched with the filters of its own directory (a temp
     * name at the end stops each path before the storage is called)
     */

    sft_memzero(&req, sizeof(req));
    req.pool = pool;
    ok(sft_vfs_stat(&s, &req, (u_char *) "/pub/secret/.x.sft-abcdef", 25)
       == SFT_ERROR && req.err == SFT_STORAGE_NAME_INVALID,
       "not denied where its directory's filter allows it");
    sft_memzero(&req, sizeof(req));
    req.pool = pool;
    ok(sft_vfs_stat(&s, &req, (u_char *) "/pub/a/secret/.x.sft-abcdef", 27)
       == SFT_ERROR && req.err == SFT_STORAGE_NAME_INVALID,
       "nor below it");
    sft_memzero(&req, sizeof(req));
    req.pool = pool;
    ok(sft_vfs_stat(&s, &req, (u_char *) "/public/secret/.x.sft-abcdef", 28)
       == SFT_ERROR && req.err == SFT_STORAGE_PERMISSION,
       "a sibling with the same prefix is not below it");

    /* quota arithmetic, on a usage record of a private table */

    size = sft_usage_memory_size(1);
    mem = calloc(1, size);
    ok(mem && sft_usage_init_memory(mem, size) == SFT_OK
       && sft_usage_session_open(&uname, 2, &q.usage, log) == SFT_OK
       && sft_usage_session_open(&uname, 2, &usage, log) == SFT_OK
       && usage == q.usage
       && sft_usage_session_open(&uname, 2, &usage, log) == SFT_DECLINED,
       "max_sessions counted in the usage record");
    sft_usage_session_close(usage);
    ok(sft_usage_sessions(usage) == 1
       && sft_usage_session_open(&uname, 2, &usage, log) == SFT_OK,
       "a closed session makes room");

    q.max_bytes = 100;
    q.max_files = 2;

    ok(sft_vfs_quota_charge(&q, 60, 1) == SFT_OK
       && sft_vfs_quota_charge(&q, 41, 0) == SFT_ERROR
       && (sft_usage_get(q.usage, &bytes, &files), bytes == 60),
       "bytes over the quota refused, not charged");
    ok(sft_vfs_quota_charge(&q, 0, 1) == SFT_OK
       && sft_vfs_quota_charge(&q, 0, 1) == SFT_ERROR, "file count quota");

    sft_vfs_quota_credit(&q, 60, 2);
    sft_usage_get(q.usage, &bytes, &files);
    ok(bytes == 0 && files == 0
       && sft_vfs_quota_charge(&q, 100, 0) == SFT_OK, "credit restores");

    ok(!sft_usage_known(q.usage)
       && (sft_usage_set(q.usage, 7, 3), sft_usage_known(q.usage))
       && (sft_usage_set(q.usage, 9, 9), sft_usage_get(q.usage, &bytes,
                                                       &files),
           bytes == 7 && files == 3),
       "the first count of a home is kept, a later one ignored");

    ok(sft_usage_recount_begin(q.usage) == SFT_OK
       && sft_usage_recount_begin(q.usage) == SFT_DECLINED,
       "one recount of a user at a time");
    sft_usage_recount_end(q.usage, 1, 11, 4);
    sft_usage_get(q.usage, &bytes, &files);
    ok(bytes == 11 && files == 4 && sft_usage_recount_begin(q.usage) == SFT_OK,
       "a recount replaces the count, and the next may start");
    sft_usage_recount_end(q.usage, 0, 99, 99);
    sft_usage_get(q.usage, &bytes, &files);
    ok(bytes == 11 && files == 4 && sft_usage_recount_begin(q.usage) == SFT_OK,
       "a failed recount keeps the count");
    sft_usage_recount_end(q.usage, 0, 0, 0);
    ok(sft_usage_lookup(&uname) == q.usage, "a user's record is found");

    free(mem);

    sft_destroy_pool(pool);

    return failed ? 1 : 0;
}
