/*
 * sft_users_cli.c -- "siftpd hash-password" and "siftpd user add|del|passwd|
 * list|show": the user store from the command line, on the "users" file
 * named in the configuration; exit code 0 or 1, errors on stderr.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_users.h>
#include <sft_auth.h>
#include <sft_storage.h>
#include <sft_vfs.h>
#include <termios.h>
#include <grp.h>


#define SFT_CLI_MAX_PASSWORD  1024


static sft_int_t sft_cli_read_password(u_char *buf, size_t size, size_t *len,
    sft_log_t *log);
static sft_int_t sft_cli_new_hash(sft_users_conf_t *ucf, char *out,
    size_t outlen, sft_log_t *log);
static sft_int_t sft_cli_set_password(sft_users_conf_t *ucf,
    sft_users_t *users, sft_user_t *u, sft_log_t *log);
static int sft_cli_user(sft_cycle_t *init_cycle, int argc, char *const *argv);
static const char *sft_cli_make_home(sft_cycle_t *cycle, sft_user_t *u,
    sft_log_t *log);


/* the configuration a "user" command read, freed when it is done */
static sft_cycle_t  *sft_cli_cycle;


static void
sft_cli_users_free(void *data)
{
    sft_users_free(data);
}


static void
sft_cli_usage(sft_log_t *log)
{
    sft_log_error(SFT_LOG_ERR, log, 0,
                  "usage: siftpd [-p prefix] [-c file] hash-password | user "
                  "add NAME [--home PATH] [--storage NAME] [--perms LIST] "
                  "[--disabled] | user del|passwd|show NAME | user list");
}


int
sft_users_cli(sft_cycle_t *init_cycle, int argc, char *const *argv)
{
    int      rc;
    char     hash[SFT_AUTH_HASH_LEN + 1];

    if (strcmp(argv[0], "hash-password") == 0 && argc == 1) {
        if (sft_cli_new_hash(NULL, hash, sizeof(hash), init_cycle->log)
            != SFT_OK)
        {
            return 1;
        }

        printf("%s\n", hash);
        return fflush(stdout) == 0 ? 0 : 1;
    }

    if (strcmp(argv[0], "user") == 0 && argc >= 2) {
        rc = sft_cli_user(init_cycle, argc - 1, argv + 1);

        if (sft_cli_cycle) {
            sft_destroy_pool(sft_cli_cycle->pool);
            sft_cli_cycle = NULL;
        }

        return rc;
    }

    sft_cli_usage(init_cycle->log);

    return 1;
}


static sft_int_t
sft_cli_read_password(u_char *buf, size_t size, size_t *len, sft_log_t *log)
{
    int              tty, c;
    size_t           n;
    struct termios   old, noecho;

    tty = isatty(STDIN_FILENO);

    if (tty) {
        fprintf(stderr, "Password: ");
        fflush(stderr);

        if (tcgetattr(STDIN_FILENO, &old) == -1) {
            sft_log_error(SFT_LOG_ERR, log, sft_errno, "tcgetattr() failed");
            return SFT_ERROR;
        }

        noecho = old;
        noecho.c_lflag &= ~(ECHO | ECHONL);
        noecho.c_lflag |= ICANON;
        (void) tcsetattr(STDIN_FILENO, TCSAFLUSH, &noecho);
    }

    n = 0;

    for ( ;; ) {
        c = getchar();

        if (c == EOF || c == '\n') {
            break;
        }

        if (n == size) {
            n = size + 1;
            continue;
        }

        buf[n++] = (u_char) c;
    }

    if (tty) {
        (void) tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fprintf(stderr, "\n");
    }

    if (n > size) {
        sft_explicit_memzero(buf, size);
        sft_log_error(SFT_LOG_ERR, log, 0, "password longer than %lu bytes",
                      (unsigned long) size);
        return SFT_ERROR;
    }

    if (n && buf[n - 1] == '\r') {
        n--;
    }

    if (n == 0) {
        sft_log_error(SFT_LOG_ERR, log, 0, "empty password");
        return SFT_ERROR;
    }

    *len = n;

    return SFT_OK;
}


static sft_int_t
sft_cli_new_hash(sft_users_conf_t *ucf, char *out, size_t outlen,
    sft_log_t *log)
{
    size_t     len;
    sft_int_t  rc;
    u_char     pw[SFT_CLI_MAX_PASSWORD];

    if (sft_cli_read_password(pw, sizeof(pw), &len, log) != SFT_OK) {
        return SFT_ERROR;
    }

    rc = sft_auth_hash_password(ucf, pw, len, out, outlen);

    sft_explicit_memzero(pw, sizeof(pw));

    if (rc != SFT_OK) {
        sft_log_error(SFT_LOG_ERR, log, 0, "argon2id hashing failed");
    }

    return rc;
}


/* a new argon2id hash for u, of a password read from stdin */

static sft_int_t
sft_cli_set_password(sft_users_conf_t *ucf, sft_users_t *users,
    sft_user_t *u, sft_log_t *log)
{
    char  hash[SFT_AUTH_HASH_LEN + 1];

    if (sft_cli_new_hash(ucf, hash, sizeof(hash), log) != SFT_OK) {
        return SFT_ERROR;
    }

    u->password.len = strlen(hash);
    u->password.data = sft_pnalloc(users->pool, u->password.len);
    if (u->password.data == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(u->password.data, hash, u->password.len);

    return SFT_OK;
}


static int
sft_cli_user(sft_cycle_t *init_cycle, int argc, char *const *argv)
{
    int                lock;
    char              *cmd;
    const char        *done;
    u_char            *text, err[256];
    size_t             len;
    sft_int_t          i, modify;
    sft_str_t          name, key, value, home, storage;
    sft_log_t         *log;
    sft_uint_t         j;
    sft_user_t        *u;
    sft_cycle_t       *cycle;
    sft_users_t       *users;
    sft_users_conf_t  *ucf;
    sft_pool_cleanup_t  *cln;

    log = init_cycle->log;
    cmd = argv[0];

    if (strcmp(cmd, "list") == 0) {
        if (argc != 1) {
            sft_cli_usage(log);
            return 1;
        }

    } else if (strcmp(cmd, "add") == 0 || strcmp(cmd, "del") == 0
               || strcmp(cmd, "passwd") == 0 || strcmp(cmd, "show") == 0)
    {
        if (argc < 2 || (strcmp(cmd, "add") != 0 && argc != 2)) {
            sft_cli_usage(log);
            return 1;
        }

    } else {
        sft_log_error(SFT_LOG_ERR, log, 0, "unknown command \"user %s\"", cmd);
        return 1;
    }

    modify = strcmp(cmd, "list") != 0 && strcmp(cmd, "show") != 0;

    /* the configuration, for the "users" file; nothing is started */

    sft_test_config = 1;
    sft_quiet_mode = 1;
    sft_users_missing = SFT_USERS_MISSING_QUIET;

    if (sft_preinit_modules() != SFT_OK) {
        return 1;
    }

    cycle = sft_init_cycle(init_cycle);
    if (cycle == NULL) {
        return 1;
    }

    sft_cli_cycle = cycle;

    ucf = (sft_users_conf_t *) sft_get_conf(cycle->conf_ctx,
                                            sft_users_module);

    if (ucf->file.len == 0) {
        sft_log_error(SFT_LOG_ERR, log, 0, "no \"users\" directive in %s",
                      cycle->conf_file.data);
        return 1;
    }

    lock = -1;
    done = NULL;

    if (modify) {
        lock = sft_users_lock(&ucf->file, log);
        if (lock == -1) {
            return 1;
        }
    }

    users = sft_users_read(&ucf->file, modify ? SFT_USERS_MISSING_QUIET
                                              : SFT_USERS_MISSING_WARN, log);
    if (users == NULL) {
        return 1;
    }

    cln = sft_pool_cleanup_add(cycle->pool, 0);
    if (cln == NULL) {
        sft_users_free(users);
        return 1;
    }

    cln->handler = sft_cli_users_free;
    cln->data = users;

    sft_core_workers_owner(cycle, &users->uid, &users->gid);

    if (strcmp(cmd, "list") == 0) {
        u = users->users.elts;

        for (j = 0; j < users->users.nelts; j++) {
            printf("%.*s%s\n", SFT_STR_FMT(&u[j].name),
                   u[j].disabled ? " (disabled)" : "");
        }

        return fflush(stdout) == 0 ? 0 : 1;
    }

    name.data = (u_char *) argv[1];
    name.len = strlen(argv[1]);

    u = sft_users_find(users, &name);

    if (strcmp(cmd, "show") == 0) {
        if (u == NULL) {
            sft_log_error(SFT_LOG_ERR, log, 0, "no user \"%s\"", argv[1]);
            return 1;
        }

        text = sft_users_format(u, 0, &len);
        if (text == NULL) {
            return 1;
        }

        fwrite(text, 1, len, stdout);
        free(text);

        return fflush(stdout) == 0 ? 0 : 1;
    }

    if (strcmp(cmd, "del") == 0) {
        if (sft_users_delete(users, &name) != SFT_OK) {
            sft_log_error(SFT_LOG_ERR, log, 0, "no user \"%s\"", argv[1]);
            return 1;
        }

        goto write;
    }

    if (strcmp(cmd, "passwd") == 0) {
        if (u == NULL) {
            sft_log_error(SFT_LOG_ERR, log, 0, "no user \"%s\"", argv[1]);
            return 1;
        }

        if (sft_cli_set_password(ucf, users, u, log) != SFT_OK) {
            return 1;
        }

        goto write;
    }

    /* add */

    if (u) {
        sft_log_error(SFT_LOG_ERR, log, 0, "user \"%s\" already exists",
                      argv[1]);
        return 1;
    }

    if (sft_users_valid_name(&name) != SFT_OK) {
        sft_log_error(SFT_LOG_ERR, log, 0, "invalid user name \"%s\"",
                      argv[1]);
        return 1;
    }

    u = sft_users_add(users, &name);
    if (u == NULL) {
        return 1;
    }

    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--disabled") == 0) {
            u->disabled = 1;
            continue;
        }

        if (strcmp(argv[i], "--home") == 0) {
            sft_str_set(&key, "home");

        } else if (strcmp(argv[i], "--storage") == 0) {
            sft_str_set(&key, "storage");

        } else if (strcmp(argv[i], "--perms") == 0) {
            sft_str_set(&key, "perms");

        } else {
            sft_log_error(SFT_LOG_ERR, log, 0, "unknown option \"%s\"",
                          argv[i]);
            return 1;
        }

        if (i + 1 == argc) {
            sft_log_error(SFT_LOG_ERR, log, 0, "option \"%s\" requires an "
                          "argument", argv[i]);
            return 1;
        }

        value.data = (u_char *) argv[++i];
        value.len = strlen(argv[i]);

        if (sft_users_set(users, u, &key, NULL, &value, err, sizeof(err))
            != SFT_OK)
        {
            sft_log_error(SFT_LOG_ERR, log, 0, "%s", err);
            return 1;
        }
    }

    if (sft_cli_set_password(ucf, users, u, log) != SFT_OK) {
        return 1;
    }

    done = sft_cli_make_home(cycle, u, log);
    if (done == NULL) {
        return 1;
    }

    /* u moves when the table is sorted to be written */
    home = u->home;
    storage = u->storage;

write:

    if (sft_users_write(users, log) != SFT_OK) {
        return 1;
    }

    if (lock != -1) {
        close(lock);
    }

    if (done) {
        printf("user \"%s\" added, home \"%.*s\" in storage \"%.*s\" %s\n",
               argv[1], SFT_STR_FMT(&home), SFT_STR_FMT(&storage), done);
        return fflush(stdout) == 0 ? 0 : 1;
    }

    return 0;
}


/*
 * The new user's home, made as the workers' user (a root CLI with "user"
 * set switches its effective ids meanwhile), so the workers own it and
 * the same permissions decide as when they work in it; what was done, or
 * NULL on failure.
 */

static const char *
sft_cli_make_home(sft_cycle_t *cycle, sft_user_t *u, sft_log_t *log)
{
    int             ngroups;
    uid_t           uid;
    gid_t           gid, egid, *groups;
    sft_int_t       rc;
    sft_storage_t  *storage;

    storage = sft_storage_find(cycle, &u->storage);

    if (storage == NULL) {
        return "not created (no such storage in the configuration)";
    }

    if (!storage->driver->blocking) {
        /* a network driver's requests need a worker's loop (s3, where a
           directory is there as soon as a file is stored below it) */
        return "not created (its storage makes it when a file is stored)";
    }

    sft_core_workers_owner(cycle, &uid, &gid);

    egid = getegid();
    ngroups = getgroups(0, NULL);
    groups = sft_palloc(cycle->pool, (ngroups + 1) * sizeof(gid_t));

    if (groups == NULL) {
        return NULL;
    }

    if (uid != (uid_t) -1) {
        ngroups = getgroups(ngroups, groups);

        if (ngroups == -1 || setgroups(1, &gid) == -1 || setegid(gid) == -1
            || seteuid(uid) == -1)
        {
            sft_log_error(SFT_LOG_ERR, log, sft_errno,
                          "cannot switch to uid %d, gid %d", (int) uid,
                          (int) gid);
            return NULL;
        }
    }

    rc = sft_vfs_user_make_home(u, storage, cycle->pool, log);

    if (uid != (uid_t) -1
        && (seteuid(0) == -1 || setegid(egid) == -1
            || setgroups(ngroups, groups) == -1))
    {
        sft_log_error(SFT_LOG_ERR, log, sft_errno,
                      "cannot switch back to root");
        return NULL;
    }

    if (rc == SFT_ERROR) {
        sft_log_error(SFT_LOG_ERR, log, 0, "cannot make the home \"%.*s\" "
                      "of \"%.*s\" in storage \"%.*s\", not added",
                      SFT_STR_FMT(&u->home), SFT_STR_FMT(&u->name),
                      SFT_STR_FMT(&u->storage));
        return NULL;
    }

    return rc == SFT_DECLINED ? "exists" : "created";
}
