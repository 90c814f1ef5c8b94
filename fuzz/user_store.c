/*
 * user_store.c -- libFuzzer target for the user store parser (the format
 * of conf/users).  Checked: a refused file is reported at a line it has;
 * every accepted user has a valid name, a home and directory rules that
 * are normalised (absolute, no empty, "." or ".." part, no trailing "/"),
 * permissions within the known bits, numbers in range and networks whose
 * address has no bit outside its mask; users are sorted and unique; and
 * writing the table back as "siftpd user" does and parsing that again
 * gives the same users, written the same.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_users.h>

#include <assert.h>

#include "fuzz_log.h"


static sft_str_t       fuzz_file = sft_string("users");


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_log_init(NULL);

    return 0;
}


static void
check_path(sft_str_t *path)
{
    size_t   i, clen;
    u_char  *p;

    p = path->data;

    assert(path->len >= 1 && p[0] == '/');

    if (path->len == 1) {
        return;
    }

    assert(p[path->len - 1] != '/');

    for (i = 1; i <= path->len; i += clen + 1) {
        clen = 0;

        while (i + clen < path->len && p[i + clen] != '/') {
            assert(p[i + clen] != '\0' && p[i + clen] != '\n');
            clen++;
        }

        assert(clen > 0);
        assert(!(clen == 1 && p[i] == '.'));
        assert(!(clen == 2 && p[i] == '.' && p[i + 1] == '.'));
    }
}


static void
check_cidr(sft_user_cidr_t *cidr)
{
    size_t  i, n;

    assert(cidr->family == AF_INET || cidr->family == AF_INET6);
    assert(cidr->text.len > 0);

    n = (cidr->family == AF_INET) ? 4 : 16;

    for (i = 0; i < 16; i++) {
        if (i >= n) {
            assert(cidr->mask[i] == 0 && cidr->addr[i] == 0);
            continue;
        }

        assert((cidr->addr[i] & ~cidr->mask[i]) == 0);

        /* a prefix: once a mask byte is short, the rest are zero */
        assert(i == 0 || cidr->mask[i - 1] == 0xff || cidr->mask[i] == 0);
    }
}


static void
check_user(sft_users_t *users, sft_user_t *u)
{
    uint32_t          m, t, p;
    sft_uint_t        i;
    sft_str_t        *key;
    sft_user_rule_t  *r;

    assert(u->table == users);
    assert(u->name.len >= 1 && u->name.len <= SFT_USER_NAME_MAX);
    assert(sft_users_valid_name(&u->name) == SFT_OK);

    assert(u->password.len == 0
           || sft_phc_params(&u->password, &m, &t, &p) == SFT_OK);

    check_path(&u->home);
    assert(u->storage.len >= 1 && u->storage.len <= 64);

    r = u->rules.elts;
    assert(u->rules.nelts >= 1);
    assert(r[0].path.len == 1 && r[0].path.data[0] == '/');

    for (i = 0; i < u->rules.nelts; i++) {
        check_path(&r[i].path);
        assert(r[i].perms == -1
               || (r[i].perms >= 0 && (r[i].perms & ~SFT_PERM_ALL) == 0));

        /* a directory's rule exists only for something it sets */
        assert(i == 0 || r[i].perms != -1 || r[i].deny || r[i].hide);
    }

    assert(u->quota_bytes >= 0);
    assert(u->upload_rate >= 0 && u->download_rate >= 0);

    /* counted in off_t beside the bytes */
    assert(u->quota_files <= (sft_uint_t) INT64_MAX);
    assert(u->max_sessions <= (sft_uint_t) SFT_MAX_INT_T_VALUE);
    assert(u->disabled == 0 || u->disabled == 1);

    for (i = 0; i < u->allow_from.nelts; i++) {
        check_cidr(&((sft_user_cidr_t *) u->allow_from.elts)[i]);
    }

    key = u->ssh_keys.elts;

    for (i = 0; i < u->ssh_keys.nelts; i++) {
        assert(key[i].len >= 8 && memchr(key[i].data, ' ', key[i].len));
    }
}


/* "... in users:LINE[, did you mean ...]": a line the input has */

static void
check_error(const uint8_t *data, size_t size)
{
    char           *colon, *end, *hint;
    size_t          i;
    unsigned long   line, lines;

    /* a suggestion may follow the line: "..., did you mean "KEY"?"; the
       message before it may quote the input, so take the last one */
    hint = NULL;
    end = (char *) sft_users_error;

    while ((end = strstr(end, ", did you mean \"")) != NULL) {
        hint = end++;
    }

    if (hint != NULL && hint[strlen(hint) - 1] == '?') {
        *hint = '\0';
    }

    colon = strrchr((char *) sft_users_error, ':');
    assert(colon != NULL);

    line = strtoul(colon + 1, &end, 10);
    assert(*end == '\0');

    lines = 1;

    for (i = 0; i < size; i++) {
        lines += (data[i] == '\n');
    }

    assert(line >= 1 && line <= lines);
}


static u_char *
format_table(sft_users_t *users, size_t *len)
{
    u_char      *text, *stanza;
    size_t       n;
    FILE        *f;
    sft_uint_t   i;
    sft_user_t  *u;

    text = NULL;
    f = open_memstream((char **) &text, len);
    assert(f != NULL);

    u = users->users.elts;

    for (i = 0; i < users->users.nelts; i++) {
        stanza = sft_users_format(&u[i], 1, &n);
        assert(stanza != NULL);
        assert(fwrite(stanza, 1, n, f) == n);
        free(stanza);
    }

    assert(fclose(f) == 0);

    return text;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char       *copy, *text, *again;
    size_t        len, len2;
    sft_uint_t    i;
    sft_user_t   *u, *u2;
    sft_users_t  *users, *users2;

    /* a copy of exactly the input, so a read past it is caught */

    copy = malloc(size ? size : 1);
    assert(copy != NULL);
    memcpy(copy, data, size);

    users = sft_users_parse(&fuzz_file, copy, size, &fuzz_log);

    free(copy);

    if (users == NULL) {
        check_error(data, size);
        return 0;
    }

    u = users->users.elts;

    for (i = 0; i < users->users.nelts; i++) {
        check_user(users, &u[i]);

        if (i > 0) {
            assert(memcmp(u[i - 1].name.data, u[i].name.data,
                          sft_min(u[i - 1].name.len, u[i].name.len)) < 0
                   || (memcmp(u[i - 1].name.data, u[i].name.data,
                              sft_min(u[i - 1].name.len, u[i].name.len)) == 0
                       && u[i - 1].name.len < u[i].name.len));
        }

        assert(sft_users_find(users, &u[i].name) == &u[i]);
    }

    /* written back and read again: the same users */

    text = format_table(users, &len);

    users2 = sft_users_parse(&fuzz_file, text, len, &fuzz_log);
    assert(users2 != NULL);
    assert(users2->users.nelts == users->users.nelts);

    u2 = users2->users.elts;

    for (i = 0; i < users->users.nelts; i++) {
        assert(u2[i].name.len == u[i].name.len
               && memcmp(u2[i].name.data, u[i].name.data, u[i].name.len)
                  == 0);
        assert(u2[i].quota_bytes == u[i].quota_bytes);
        assert(u2[i].quota_files == u[i].quota_files);
        assert(u2[i].max_sessions == u[i].max_sessions);
        assert(u2[i].upload_rate == u[i].upload_rate);
        assert(u2[i].download_rate == u[i].download_rate);
        assert(u2[i].disabled == u[i].disabled);
        assert(u2[i].rules.nelts == u[i].rules.nelts);
        assert(u2[i].allow_from.nelts == u[i].allow_from.nelts);
        assert(u2[i].ssh_keys.nelts == u[i].ssh_keys.nelts);
    }

    again = format_table(users2, &len2);
    assert(len2 == len && memcmp(again, text, len) == 0);

    free(again);
    free(text);
    sft_users_free(users2);
    sft_users_free(users);

    return 0;
}
