/*
 * test_users.c -- the user store: good and bad files with exact file:line
 * errors, per-directory permissions, CIDR matching, name filters, and the
 * atomic write + re-read round trip.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_users.h>
#include <dirent.h>
#include "sft_tap.h"






static sft_users_t *
parse(const char *text, sft_log_t *log)
{
    sft_str_t  file = sft_string("users.conf");

    return sft_users_parse(&file, (u_char *) text, strlen(text), log);
}


static void
bad(const char *text, const char *err, sft_log_t *log)
{
    sft_users_t  *u;
    char          name[1024];

    u = parse(text, log);
    snprintf(name, sizeof(name), "error \"%s\" (got \"%s\")", err,
             sft_users_error);
    ok(u == NULL && strcmp((char *) sft_users_error, err) == 0, name);
}


static sft_uint_t
perms(sft_user_t *u, const char *path)
{
    sft_str_t  s;

    s.data = (u_char *) path;
    s.len = strlen(path);

    return sft_user_perms(u, &s);
}


static struct sockaddr *
addr(const char *text, struct sockaddr_storage *ss)
{
    struct sockaddr_in   *sin = (struct sockaddr_in *) ss;
    struct sockaddr_in6  *sin6 = (struct sockaddr_in6 *) ss;

    sft_memzero(ss, sizeof(*ss));

    if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;

    } else {
        sin6->sin6_family = AF_INET6;
        (void) inet_pton(AF_INET6, text, &sin6->sin6_addr);
    }

    return (struct sockaddr *) ss;
}


#define HASH  "$argon2id$v=19$m=65536,t=3,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNo"

static const char  *good =
    "# a comment\n"
    "\n"
    "[alice]\n"
    "password = " HASH "\n"
    "home = /alice/\n"
    "perms = list,download,upload\n"
    "perms /pub = list\n"
    "perms /pub/incoming = upload,mkdir\n"
    "deny = \\.exe$\n"
    "hide /pub = ^\\.\n"
    "quota_bytes = 10m\n"
    "quota_files = 100\n"
    "max_sessions = 3\n"
    "upload_rate = 1k\n"
    "allow_from = 10.0.0.0/8, 2001:db8::/32\n"
    "allow_from = 192.168.1.7\n"
    "ssh_key = ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI alice@laptop\n"
    "\n"
    "  [bob]  \n"
    "password = \n"
    "storage = cloud\n"
    "disabled = yes\n";


int
main(void)
{
    int                       fd;
    DIR                      *dir;
    char                      tmpl[] = "/tmp/test_users.XXXXXX", path[512];
    size_t                    len;
    u_char                   *text;
    sft_str_t                 s, file, dirname, name;
    sft_log_t                *log;
    sft_uint_t                n;
    sft_user_t               *u, *b;
    sft_users_t              *users, *again;
    struct dirent            *de;
    struct sockaddr_storage   ss;

    printf("1..43\n");

    log = sft_log_init();
    log->log_level = SFT_LOG_STDERR;      /* the errors are expected */

    users = parse(good, log);
    ok(users != NULL, "good file parses");

    if (users == NULL) {
        printf("# %s\n", sft_users_error);
        return 1;
    }

    ok(users->users.nelts == 2, "two users");

    sft_str_set(&s, "alice");
    u = sft_users_find(users, &s);
    sft_str_set(&s, "bob");
    b = sft_users_find(users, &s);

    ok(u && b, "both found");
    sft_str_set(&s, "carol");
    ok(sft_users_find(users, &s) == NULL, "unknown user not found");

    ok(u->home.len == 6 && memcmp(u->home.data, "/alice", 6) == 0,
       "home normalized");
    ok(sft_str_eq(&u->storage, "local") && sft_str_eq(&b->storage, "cloud"),
       "storage default and set");
    ok(u->quota_bytes == 10 * 1024 * 1024 && u->quota_files == 100
       && u->max_sessions == 3 && u->upload_rate == 1024
       && u->download_rate == 0, "limits");
    ok(u->ssh_keys.nelts == 1 && !u->disabled && b->disabled,
       "ssh key, disabled flag");

    /* longest prefix wins, at '/' boundaries */

    ok(perms(u, "/") == (SFT_PERM_LIST|SFT_PERM_DOWNLOAD|SFT_PERM_UPLOAD),
       "perms at /");
    ok(perms(u, "/docs/a") == (SFT_PERM_LIST|SFT_PERM_DOWNLOAD
                               |SFT_PERM_UPLOAD), "perms below /");
    ok(perms(u, "/pub") == SFT_PERM_LIST, "perms /pub");
    ok(perms(u, "/pub/x") == SFT_PERM_LIST, "perms /pub/x");
    ok(perms(u, "/pubx") != SFT_PERM_LIST, "/pubx is not under /pub");
    ok(perms(u, "/pub/incoming/deep") == (SFT_PERM_UPLOAD|SFT_PERM_MKDIR),
       "perms longest prefix /pub/incoming");
    ok(perms(b, "/") == SFT_PERM_READ, "default perms read-only");

    /* networks */

    ok(sft_user_allowed_from(u, addr("10.1.2.3", &ss)), "v4 in /8");
    ok(!sft_user_allowed_from(u, addr("11.1.2.3", &ss)), "v4 outside");
    ok(sft_user_allowed_from(u, addr("192.168.1.7", &ss)), "v4 /32");
    ok(!sft_user_allowed_from(u, addr("192.168.1.8", &ss)), "v4 /32 miss");
    ok(sft_user_allowed_from(u, addr("2001:db8:1::5", &ss)), "v6 in /32");
    ok(!sft_user_allowed_from(u, addr("2001:db9::5", &ss)), "v6 outside");
    ok(sft_user_allowed_from(u, addr("::ffff:10.9.9.9", &ss)),
       "v4-mapped v6 matches v4 network");
    ok(sft_user_allowed_from(b, addr("8.8.8.8", &ss)), "empty list = any");

    /* name filters */

    sft_str_set(&dirname, "/pub");
    sft_str_set(&name, "setup.exe");
    ok(sft_user_name_denied(u, &dirname, &name), "deny inherited by /pub");
    sft_str_set(&name, ".hidden");
    ok(sft_user_name_hidden(u, &dirname, &name)
       && !sft_user_name_denied(u, &dirname, &name), "hide in /pub");
    sft_str_set(&dirname, "/");
    ok(!sft_user_name_hidden(u, &dirname, &name), "not hidden at /");

    /* bad files, with the exact place */

    bad("[alice]\nhome = /a\n[alice]\n",
        "duplicate user \"alice\" in users.conf:3", log);
    bad("[alice]\n\n# c\ncolour = blue\n",
        "unknown key \"colour\" in users.conf:4", log);
    bad("[alice]\npasword = x\n", "unknown key \"pasword\" in users.conf:2, "
        "did you mean \"password\"?", log);
    bad("[alice]\nquota_byte = 1\n", "unknown key \"quota_byte\" in "
        "users.conf:2, did you mean \"quota_bytes\"?", log);
    bad("[a]\nperms = list,fly\n",
        "invalid value \"list,fly\" of \"perms\" in users.conf:2", log);
    bad("home = /\n", "a setting outside a \"[user]\" stanza in "
        "users.conf:1", log);
    bad("[a]\nhome = /x\nhome = /y\n", "duplicate \"home\" in users.conf:3",
        log);
    bad("[a]\nallow_from = 10.0.0.0/33\n",
        "invalid network \"10.0.0.0/33\" in users.conf:2", log);
    bad("[a]\nhome = /x/../y\n",
        "invalid value \"/x/../y\" of \"home\" in users.conf:2", log);
    bad("[a]\nhome = /x/\t/\n",
        "invalid value \"/x/\t/\" of \"home\" in users.conf:2", log);
    bad("[a]\nperms /d\r/ = list\n",
        "invalid directory \"/d\r/\" in users.conf:2", log);
    bad("[a]\npassword = $2y$10$abc\n", "invalid password hash, expected an "
        "argon2id PHC string \"$argon2id$v=19$m=..,t=..,p=..$salt$hash\" in "
        "users.conf:2", log);

    /* write, re-read, compare; no temporary file left */

    if (mkdtemp(tmpl) == NULL) {
        return 1;
    }

    snprintf(path, sizeof(path), "%s/users", tmpl);
    file.data = (u_char *) path;
    file.len = strlen(path);

    fd = open(path, O_WRONLY | O_CREAT, 0600);
    (void) write(fd, good, strlen(good));
    close(fd);

    again = sft_users_read(&file, 0, log);
    ok(again != NULL, "read from disk");

    if (again == NULL) {
        return 1;
    }

    ok(sft_users_write(again, log) == SFT_OK, "written");
    sft_users_free(again);

    again = sft_users_read(&file, 0, log);
    ok(again && again->users.nelts == 2, "re-read after write");

    sft_str_set(&s, "alice");
    u = sft_users_find(users, &s);
    b = again ? sft_users_find(again, &s) : NULL;
    n = 0;

    if (u && b) {
        text = sft_users_format(u, 1, &len);
        s.data = sft_users_format(b, 1, &s.len);
        n = (len == s.len && memcmp(text, s.data, len) == 0
             && perms(b, "/pub/incoming/x") == (SFT_PERM_UPLOAD
                                                |SFT_PERM_MKDIR));
        free(text);
        free(s.data);
    }

    ok(n, "round trip keeps every setting");

    n = 0;
    dir = opendir(tmpl);

    while (dir && (de = readdir(dir)) != NULL) {
        if (de->d_name[0] != '.') {
            n++;
        }
    }

    if (dir) {
        closedir(dir);
    }

    ok(n == 1, "only the users file in the directory");

    unlink(path);
    rmdir(tmpl);
    sft_users_free(again);
    sft_users_free(users);

    return 0;
}
