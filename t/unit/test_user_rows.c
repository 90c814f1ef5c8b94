/*
 * test_user_rows.c -- users built from (name, key, directory, value) rows,
 * as the PostgreSQL store reads them: the settings land in the record, a
 * directory's rule is its own, rows out of name order still give a sorted
 * table, and a bad value, an unknown key, a bad name or a user's rows
 * split apart are refused with the reason.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_users.h>
#include <sft_user_store.h>
#include "sft_tap.h"


#define HASH  "$argon2id$v=19$m=65536,t=3,p=1$c2FsdHNhbHRzYWx0c2FsdA$" \
              "aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"


static sft_str_t  source = sft_string("test");


static void
row(sft_user_row_t *r, const char *name, const char *key, const char *path,
    const char *value)
{
    r->name.data = (u_char *) name;
    r->name.len = strlen(name);
    r->key.data = (u_char *) key;
    r->key.len = strlen(key);
    r->path.data = (u_char *) path;
    r->path.len = path ? strlen(path) : 0;
    r->value.data = (u_char *) value;
    r->value.len = strlen(value);
}


static void
refused(sft_user_row_t *rows, sft_uint_t n, const char *want,
    sft_log_t *log)
{
    u_char        err[256];
    char          name[512];
    sft_users_t  *users;

    users = sft_users_from_rows(&source, rows, n, err, sizeof(err), log);

    snprintf(name, sizeof(name), "refused: \"%s\" (got \"%s\")", want,
             (char *) err);
    ok(users == NULL && strstr((char *) err, want) != NULL, name);

    sft_users_free(users);
}


int
main(void)
{
    u_char           err[256];
    sft_str_t        s;
    sft_log_t       *log;
    sft_user_t      *u;
    sft_users_t     *users;
    sft_user_row_t   rows[16];

    printf("1..15\n");

    log = sft_log_init();
    log->log_level = SFT_LOG_STDERR;

    row(&rows[0], "alice", "password", NULL, HASH);
    row(&rows[1], "alice", "home", NULL, "/alice");
    row(&rows[2], "alice", "quota_bytes", NULL, "1048576");
    row(&rows[3], "alice", "disabled", NULL, "no");
    row(&rows[4], "alice", "perms", NULL, "list,download,upload");
    row(&rows[5], "alice", "perms", "/pub", "list");
    row(&rows[6], "alice", "allow_from", NULL, "10.0.0.0/8");
    row(&rows[7], "alice", "ssh_key", NULL, "ssh-ed25519 AAAAC3Nz a@b");
    row(&rows[8], "zed", "password", NULL, "");
    row(&rows[9], "bob", "disabled", NULL, "yes");

    users = sft_users_from_rows(&source, rows, 10, err, sizeof(err), log);
    ok(users != NULL, "three users from ten rows");

    if (users == NULL) {
        printf("# %s\n", err);
        return 1;
    }

    ok(users->users.nelts == 3, "three users");

    sft_str_set(&s, "alice");
    u = sft_users_find(users, &s);
    ok(u && u->password.len == sizeof(HASH) - 1, "alice's hash");
    ok(u && u->home.len == 6 && memcmp(u->home.data, "/alice", 6) == 0,
       "alice's home");
    ok(u && u->quota_bytes == 1048576, "alice's quota");

    sft_str_set(&s, "/pub/x");
    ok(u && sft_user_perms(u, &s) == SFT_PERM_LIST, "/pub's own perms");

    sft_str_set(&s, "/x");
    ok(u && sft_user_perms(u, &s)
            == (SFT_PERM_LIST|SFT_PERM_DOWNLOAD|SFT_PERM_UPLOAD),
       "the home's perms");
    ok(u && u->allow_from.nelts == 1 && u->ssh_keys.nelts == 1,
       "a network and a key");

    sft_str_set(&s, "bob");
    u = sft_users_find(users, &s);
    ok(u && u->disabled, "bob, after zed in the rows, is found: disabled");

    sft_str_set(&s, "zed");
    ok(sft_users_find(users, &s) != NULL, "zed is found");

    sft_users_free(users);

    row(&rows[0], "alice", "quota_bytes", NULL, "-1");
    refused(rows, 1, "quota_bytes", log);

    row(&rows[0], "alice", "colour", NULL, "blue");
    refused(rows, 1, "unknown key \"colour\"", log);

    row(&rows[0], "-alice", "home", NULL, "/");
    refused(rows, 1, "user name \"-alice\"", log);

    row(&rows[0], "alice", "home", NULL, "/a");
    row(&rows[1], "bob", "home", NULL, "/b");
    row(&rows[2], "alice", "storage", NULL, "local");
    refused(rows, 3, "scattered user name \"alice\"", log);

    users = sft_users_from_rows(&source, rows, 0, err, sizeof(err), log);
    ok(users != NULL && users->users.nelts == 0, "no rows: no users");
    sft_users_free(users);

    return failed ? 1 : 0;
}
