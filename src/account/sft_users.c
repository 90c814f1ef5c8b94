/*
 * sft_users.c -- the user store: parsing, writing, lookup and reloading of
 * the "users" file, and the sft_users_module directives (users, login
 * limits, server-wide name filters).
 *
 * The file is a list of stanzas, one per user; '#' starts a comment line,
 * blank lines are ignored, and values run to the end of the line:
 *
 *     [alice]
 *     password      = $argon2id$v=19$m=65536,t=3,p=1$...$...
 *     home          = /alice            # no: comments are whole lines only
 *     storage       = local
 *     perms         = list,download,upload,mkdir
 *     perms /pub    = list,download
 *     deny          = \.exe$
 *     hide /pub     = ^\.
 *     quota_bytes   = 10g
 *     quota_files   = 100000
 *     max_sessions  = 4
 *     upload_rate   = 1m
 *     download_rate = 0
 *     allow_from    = 10.0.0.0/8, 2001:db8::/32
 *     ssh_key       = ssh-ed25519 AAAAC3Nz... alice@laptop
 *     disabled      = no
 *
 * Directory paths are as the user sees them (the home is "/"); the longest
 * matching directory prefix that sets "perms", "deny" or "hide" wins for
 * that setting.  "allow_from" and "ssh_key" may be repeated.  Parsing is
 * strict: an unknown key, a bad value, a repeated key or a duplicate user
 * is an error naming the file and line, and a misspelt key the known one
 * it is closest to.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_landlock.h>
#include <sft_users.h>
#include <sft_user_store.h>
#include <sft_auth.h>
#include <sft_usage.h>
#include <sft_suggest.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <sodium.h>
#include <sys/file.h>


#define SFT_USERS_DEFAULT_PERMS  SFT_PERM_READ


u_char      sft_users_error[512];

/* what reading the configuration does when the users file is missing; the
   "user" command reads the file itself and says so there */
sft_uint_t  sft_users_missing = SFT_USERS_MISSING_WARN;


static sft_users_t       *sft_users_cur;
static sft_users_ident_t  sft_users_bad;

/* a worker's: the file's directory, opened by the master before the user
   switch, so a worker reads the file wherever it lies */
static int                sft_users_dir = AT_FDCWD;

static const char  *sft_perm_names[] = SFT_PERM_NAMES;


static void *sft_users_create_conf(sft_cycle_t *cycle);
static char *sft_users_init_conf(sft_cycle_t *cycle, void *conf);
static sft_str_t *sft_users_key_known(sft_str_t *key);
static sft_str_t *sft_users_key_suggest(sft_suggest_t *s, sft_str_t *key);
static char *sft_users_set_pattern(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_users_set_store(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_users_set_max_checks(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_users_set_ban_exempt(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static sft_int_t sft_users_init_process(sft_cycle_t *cycle);
static void sft_users_exit_process(sft_cycle_t *cycle);
static void sft_users_process_exited(sft_cycle_t *cycle, sft_uint_t slot,
    pid_t pid);
static void sft_users_cycle_cleanup(void *data);
static sft_int_t sft_users_create_first(sft_users_conf_t *ucf,
    sft_cycle_t *cycle);
static sft_int_t sft_users_open_dir(sft_users_conf_t *ucf,
    sft_cycle_t *cycle);
static void sft_users_dir_cleanup(void *data);
static const char *sft_users_path(sft_str_t *file);
static void sft_users_regex_cleanup(void *data);
static sft_int_t sft_users_norm_path(sft_str_t *path);
static sft_uint_t sft_users_list_next(u_char **pos, u_char *last,
    sft_str_t *item);
static sft_user_rule_t *sft_users_rule(sft_user_t *u, sft_str_t *path);
static void sft_users_print(FILE *f, sft_user_t *u, sft_uint_t with_hash);
static void sft_users_refresh(sft_log_t *log);


static sft_command_t  sft_users_commands[] = {

    { sft_string("users"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_path_slot,
      0,
      offsetof(sft_users_conf_t, file),
      NULL,
      sft_command_doc("file", "",
          "The user store: names, argon2id hashes, homes, permissions, "
          "quotas.") },

    { sft_string("user_store"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE2,
      sft_users_set_store,
      0,
      0,
      NULL,
      sft_command_doc("type argument", "",
          "Where users come from: \"file PATH\" (as \"users\"), or "
          "\"postgresql CONNINFO\" where siftpd was built with "
          "the pgsql_user module.") },

    { sft_string("first_user"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_str_slot,
      0,
      offsetof(sft_users_conf_t, first_user),
      NULL,
      sft_command_doc("name", "",
          "Create the user store on the first start with this user and "
          "print its random password once.") },

    { sft_string("login_cache_ttl_secs"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_sec_slot,
      0,
      offsetof(sft_users_conf_t, cache_ttl),
      NULL,
      sft_command_doc("seconds", "300",
          "How long an accepted password is answered from the verification "
          "cache; 0 turns the cache off.") },

    { sft_string("max_concurrent_password_checks"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_users_set_max_checks,
      0,
      0,
      NULL,
      sft_command_doc("number | auto", "auto",
          "How many argon2id checks may run at once over all workers; more "
          "wait in a queue.") },

    { sft_string("login_max_failures"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      0,
      offsetof(sft_users_conf_t, max_failures),
      NULL,
      sft_command_doc("number", "5",
          "Failed logins from one source within login_failure_window "
          "before it is banned.") },

    { sft_string("login_failure_window"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_sec_slot,
      0,
      offsetof(sft_users_conf_t, failure_window),
      NULL,
      sft_command_doc("time", "10m",
          "The window login failures are counted in.") },

    { sft_string("login_ban_time"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_sec_slot,
      0,
      offsetof(sft_users_conf_t, ban_time),
      NULL,
      sft_command_doc("time", "15m",
          "How long a banned source is refused.") },

    { sft_string("login_ban_exempt"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_1MORE,
      sft_users_set_ban_exempt,
      0,
      0,
      NULL,
      sft_command_doc("network ...", "",
          "Networks (address/bits) whose clients are never banned, however "
          "many logins fail; may be given more than once.") },

    { sft_string("max_connections_per_address"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      0,
      offsetof(sft_users_conf_t, max_conns_per_addr),
      NULL,
      sft_command_doc("number", "32",
          "Connections one source may have open at once, over all "
          "protocols.") },

    { sft_string("login_ipv6_prefix"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      0,
      offsetof(sft_users_conf_t, ipv6_prefix),
      NULL,
      sft_command_doc("bits", "64",
          "IPv6 clients in one prefix of this length (1 to 128) count as "
          "one source.") },

    { sft_string("password_hash_memory"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_size_slot,
      0,
      offsetof(sft_users_conf_t, hash_memory),
      NULL,
      sft_command_doc("size", "64m",
          "The memory of each argon2id hash siftpd makes (\"siftpd user\", "
          "the admin API, the first user), 19m to 4g; a login checks a "
          "hash at the cost it was made with.  Also the cost of the check "
          "unknown users get.") },

    { sft_string("password_hash_passes"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      0,
      offsetof(sft_users_conf_t, hash_passes),
      NULL,
      sft_command_doc("number", "3",
          "The passes over that memory of each argon2id hash siftpd makes, "
          "2 to 64.") },

    { sft_string("deny_pattern"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_users_set_pattern,
      0,
      offsetof(sft_users_conf_t, deny),
      NULL,
      sft_command_doc("regex", "",
          "Paths matching this extended regular expression are refused to "
          "every user.") },

    { sft_string("hide_pattern"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_users_set_pattern,
      0,
      offsetof(sft_users_conf_t, hide),
      NULL,
      sft_command_doc("regex", "",
          "Paths matching this extended regular expression are left out of "
          "every listing.") },

    sft_null_command
};


static sft_core_module_t  sft_users_module_ctx = {
    sft_string("users"),
    sft_users_create_conf,
    sft_users_init_conf
};


sft_module_t  sft_users_module = {
    SFT_MODULE_V1,
    &sft_users_module_ctx,                 /* module context */
    sft_users_commands,                    /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_users_init_process,                /* init process */
    sft_users_exit_process,                /* exit process */
    NULL,                                  /* exit master */
    sft_users_process_exited,              /* process exited */
    NULL,                                  /* processes changed */
    SFT_MODULE_V1_SPARE
};


/* the server-wide patterns of the running configuration */
static sft_user_regex_t  *sft_users_server_deny;
static sft_user_regex_t  *sft_users_server_hide;


static void *
sft_users_create_conf(sft_cycle_t *cycle)
{
    sft_users_conf_t   *ucf;
    sft_user_store_t  **store;

    ucf = sft_pcalloc(cycle->pool, sizeof(sft_users_conf_t));
    if (ucf == NULL) {
        return NULL;
    }

    ucf->cache_ttl = SFT_CONF_UNSET;
    ucf->max_checks = SFT_CONF_UNSET;
    ucf->max_failures = SFT_CONF_UNSET;
    ucf->failure_window = SFT_CONF_UNSET;
    ucf->ban_time = SFT_CONF_UNSET;
    ucf->max_conns_per_addr = SFT_CONF_UNSET;
    ucf->dir = -1;
    ucf->ipv6_prefix = SFT_CONF_UNSET;
    ucf->hash_memory = SFT_CONF_UNSET_SIZE;
    ucf->hash_passes = SFT_CONF_UNSET;

    /* the file is always a store; modules register theirs after it */

    ucf->stores = sft_array_create(cycle->pool, 2,
                                   sizeof(sft_user_store_t *));
    if (ucf->stores == NULL) {
        return NULL;
    }

    store = sft_array_push(ucf->stores);
    *store = &sft_user_store_file;

    return ucf;
}


static char *
sft_users_init_conf(sft_cycle_t *cycle, void *conf)
{
    long                 n;
    sft_users_conf_t    *ucf = conf;
    sft_pool_cleanup_t  *cln;

    sft_conf_init_value(ucf->cache_ttl, 300);
    sft_conf_init_value(ucf->max_failures, 5);
    sft_conf_init_value(ucf->failure_window, 600);
    sft_conf_init_value(ucf->ban_time, 900);
    sft_conf_init_value(ucf->max_conns_per_addr, 32);
    sft_conf_init_value(ucf->ipv6_prefix, 64);
    sft_conf_init_size_value(ucf->hash_memory,
                             (size_t) SFT_AUTH_M_COST * 1024);
    sft_conf_init_value(ucf->hash_passes, SFT_AUTH_T_COST);

    if (ucf->ipv6_prefix < 1 || ucf->ipv6_prefix > 128) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "\"login_ipv6_prefix\" must be 1 to 128");
        return SFT_CONF_ERROR;
    }

    /* below the minimum logins refuse the hash: never made so */

    if (ucf->hash_memory < (size_t) SFT_AUTH_MIN_M_COST * 1024
        || ucf->hash_memory > (size_t) SFT_AUTH_MAX_M_COST * 1024)
    {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "\"password_hash_memory\" must be 19m to 4g");
        return SFT_CONF_ERROR;
    }

    if (ucf->hash_passes < SFT_AUTH_MIN_T_COST
        || ucf->hash_passes > SFT_AUTH_MAX_T_COST)
    {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "\"password_hash_passes\" must be 2 to 64");
        return SFT_CONF_ERROR;
    }

    if (ucf->store != NULL && ucf->file.len) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "\"users\" and \"user_store %.*s\" exclude each "
                      "other", SFT_STR_FMT(&((sft_user_store_t *)
                                             ucf->store)->name));
        return SFT_CONF_ERROR;
    }

    if (ucf->max_checks == SFT_CONF_UNSET || ucf->max_checks == 0) {
        n = sysconf(_SC_NPROCESSORS_ONLN);
        ucf->max_checks = (n > 0) ? n : 1;
    }

    if (!sft_test_config && !sft_signaller
        && cycle->old_cycle->modules == NULL
        && sft_users_create_first(ucf, cycle) != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    if (ucf->file.len) {
        ucf->users = sft_users_read(&ucf->file, sft_users_missing,
                                    cycle->log);
        if (ucf->users == NULL) {
            return SFT_CONF_ERROR;
        }

        ucf->users->refs++;

        cln = sft_pool_cleanup_add(cycle->pool, 0);
        if (cln == NULL) {
            sft_users_free(ucf->users);
            return SFT_CONF_ERROR;
        }

        cln->handler = sft_users_cycle_cleanup;
        cln->data = ucf->users;
    }

    if (sft_test_config || sft_signaller) {
        return SFT_CONF_OK;
    }

    if (sft_users_open_dir(ucf, cycle) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    if (sft_auth_zone_add(cycle, ucf) != SFT_OK
        || sft_usage_zone_add(cycle, ucf->users ? ucf->users->users.nelts : 0)
           != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


/*
 * "first_user NAME": on the very first start, when the users file does not
 * exist yet, it is created with that user, every permission and a random
 * password, which is printed once on the terminal and never logged.
 */

static sft_int_t
sft_users_create_first(sft_users_conf_t *ucf, sft_cycle_t *cycle)
{
    u_char        pw[21], err[256];
    char          hash[SFT_AUTH_HASH_LEN + 1];
    size_t        i;
    sft_str_t     key = sft_string("perms"), value;
    sft_int_t     rc;
    sft_user_t   *u;
    sft_log_t    *log;
    sft_users_t  *users;
    struct stat   sb;

    static const char  alphabet[] =
        "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";

    log = cycle->log;

    if (ucf->first_user.len == 0 || ucf->file.len == 0) {
        return SFT_OK;
    }

    if (stat((char *) ucf->file.data, &sb) == 0 || errno != ENOENT) {
        return SFT_OK;
    }

    if (sft_users_valid_name(&ucf->first_user) != SFT_OK) {
        sft_log_error(SFT_LOG_EMERG, log, 0, "invalid \"first_user\" \"%.*s\"",
                      SFT_STR_FMT(&ucf->first_user));
        return SFT_ERROR;
    }

    users = sft_users_read(&ucf->file, SFT_USERS_MISSING_QUIET, log);
    if (users == NULL) {
        return SFT_ERROR;
    }

    rc = SFT_ERROR;

    u = sft_users_add(users, &ucf->first_user);
    if (u == NULL) {
        goto done;
    }

    sft_str_set(&value,
                "list,download,upload,overwrite,delete,rename,mkdir,rmdir");

    if (sft_users_set(users, u, &key, NULL, &value, err, sizeof(err))
        != SFT_OK)
    {
        sft_log_error(SFT_LOG_EMERG, log, 0, "%s", err);
        goto done;
    }

    for (i = 0; i < sizeof(pw) - 1; i++) {
        pw[i] = alphabet[randombytes_uniform(sizeof(alphabet) - 1)];
    }

    pw[i] = '\0';

    if (sft_auth_hash_password(ucf, pw, sizeof(pw) - 1, hash, sizeof(hash))
        != SFT_OK)
    {
        goto done;
    }

    u->password.len = strlen(hash);
    u->password.data = sft_pnalloc(users->pool, u->password.len);
    if (u->password.data == NULL) {
        goto done;
    }

    sft_memcpy(u->password.data, hash, u->password.len);

    sft_core_workers_owner(cycle, &users->uid, &users->gid);

    if (sft_users_write(users, log) != SFT_OK) {
        goto done;
    }

    fprintf(stderr, "siftpd: created the first user \"%.*s\" with the "
            "password %s\n"
            "siftpd: it is shown only this once; change it with "
            "\"siftpd user passwd %.*s\"\n",
            SFT_STR_FMT(&ucf->first_user), pw,
            SFT_STR_FMT(&ucf->first_user));

    sft_log_error(SFT_LOG_NOTICE, log, 0,
                  "created the first user \"%.*s\" in \"%s\"",
                  SFT_STR_FMT(&ucf->first_user), ucf->file.data);

    rc = SFT_OK;

done:

    sft_explicit_memzero(pw, sizeof(pw));
    sft_users_free(users);

    return rc;
}


static void
sft_users_cycle_cleanup(void *data)
{
    sft_users_t  *users = data;

    users->refs--;
    sft_users_free(users);
}


static char *
sft_users_set_pattern(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    u_char             err[256];
    sft_str_t         *value;
    sft_user_regex_t  **re;

    re = (sft_user_regex_t **) ((u_char *) conf + cmd->offset);

    if (*re) {
        return "is duplicate";
    }

    value = cf->args->elts;

    *re = sft_user_regex_compile(cf->pool, &value[1], err, sizeof(err));
    if (*re == NULL) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "%s", err);
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


/*
 * "user_store file PATH" is "users PATH"; another type is a store a module
 * registered, which reads its argument when the worker starts.
 */

static char *
sft_users_set_store(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t         *value;
    sft_users_conf_t  *ucf = conf;
    sft_user_store_t  *store;

    (void) cmd;

    value = cf->args->elts;

    if (ucf->store != NULL || ucf->file.len) {
        return "is duplicate";
    }

    store = sft_user_store_find(cf->cycle, &value[1]);

    if (store == NULL) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "unknown user store \"%.*s\"%s",
                           SFT_STR_FMT(&value[1]),
                           sft_str_eq(&value[1], "postgresql")
                           ? ": siftpd was built without the pgsql_user "
                             "module" : "");
        return SFT_CONF_ERROR;
    }

    if (store == &sft_user_store_file) {
        ucf->file = value[2];
        return sft_conf_full_name(cf->cycle, &ucf->file) == SFT_OK
               ? SFT_CONF_OK : SFT_CONF_ERROR;
    }

    ucf->store = store;
    ucf->store_arg = value[2];

    return SFT_CONF_OK;
}


static char *
sft_users_set_max_checks(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t         *value;
    sft_users_conf_t  *ucf = conf;

    (void) cmd;

    if (ucf->max_checks != SFT_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (sft_str_eq(&value[1], "auto")) {
        ucf->max_checks = 0;
        return SFT_CONF_OK;
    }

    ucf->max_checks = sft_atoi(value[1].data, value[1].len);

    if (ucf->max_checks == SFT_ERROR || ucf->max_checks < 1) {
        return "invalid value";
    }

    return SFT_CONF_OK;
}


/* "login_ban_exempt NET ...": every network checked here, with its line */

static char *
sft_users_set_ban_exempt(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_users_conf_t  *ucf = conf;

    (void) cmd;

    if (ucf->ban_exempt == NULL) {
        ucf->ban_exempt = sft_array_create(cf->pool, 4,
                                           sizeof(sft_user_cidr_t));
        if (ucf->ban_exempt == NULL) {
            return SFT_CONF_ERROR;
        }
    }

    return sft_cidr_conf_add(cf, ucf->ban_exempt);
}


static sft_int_t
sft_users_init_process(sft_cycle_t *cycle)
{
    sft_str_t           name = sft_string("default");
    sft_users_conf_t   *ucf;
    sft_thread_pool_t  *tp;

    ucf = (sft_users_conf_t *) sft_get_conf(cycle->conf_ctx,
                                            sft_users_module);

    sft_users_server_deny = ucf->deny;
    sft_users_server_hide = ucf->hide;

    if (ucf->dir != -1) {
        sft_users_dir = ucf->dir;
    }

    if (ucf->users) {
        sft_users_set_current(ucf->users, cycle->log);
    }

    sft_user_store_use(ucf->store);

    if (ucf->zone == NULL) {
        return SFT_OK;
    }

    tp = sft_thread_pool_get(cycle, &name);

    return sft_auth_init_process(ucf, ucf->zone->data, tp, cycle->log);
}


static void
sft_users_exit_process(sft_cycle_t *cycle)
{
    (void) cycle;

    sft_auth_exit_process();
}


/*
 * In the master, after a worker died: its password checks and its
 * sessions in the usage zone are given back.
 */

static void
sft_users_process_exited(sft_cycle_t *cycle, sft_uint_t slot, pid_t pid)
{
    (void) cycle;

    sft_auth_process_exited(slot, pid);
    sft_usage_process_exited(slot);
}


/*
 * In the master, before the workers switch user: the users file's
 * directory, which the workers read the file through (the prefix may lie
 * where their user cannot look, as under /root) and Landlock lets them
 * read in (the file is replaced by a rename), and a warning if they
 * cannot read the file itself.
 */

static sft_int_t
sft_users_open_dir(sft_users_conf_t *ucf, sft_cycle_t *cycle)
{
    char                *slash;
    sft_uint_t           access;
    struct stat          sb;
    sft_pool_cleanup_t  *cln;

    if (ucf->file.len == 0) {
        return SFT_OK;
    }

    cln = sft_pool_cleanup_add(cycle->pool, 0);
    if (cln == NULL) {
        return SFT_ERROR;
    }

    slash = strrchr((char *) ucf->file.data, '/');
    *slash = '\0';

    ucf->dir = open(slash == (char *) ucf->file.data ? "/"
                                                     : (char *) ucf->file.data,
                    O_PATH|O_DIRECTORY|O_CLOEXEC);
    *slash = '/';

    if (ucf->dir == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "open() of the directory of \"%s\" failed",
                      ucf->file.data);
        return SFT_ERROR;
    }

    cln->handler = sft_users_dir_cleanup;
    cln->data = &ucf->dir;

    /* workers re-read the file after a rename over it; the admin API
       writes it from a worker: a temporary file, the lock, the rename */

    access = SFT_LANDLOCK_READ|SFT_LANDLOCK_PARENT;

    if (ucf->workers_write) {
        access |= SFT_LANDLOCK_WRITE|SFT_LANDLOCK_CREATE|SFT_LANDLOCK_REMOVE;
    }

    if (sft_landlock_allow(cycle, &ucf->file, access) != SFT_OK) {
        return SFT_ERROR;
    }

    if (stat((char *) ucf->file.data, &sb) == 0
        && !sft_core_workers_may(cycle, &sb, S_IROTH))
    {
        sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                      "users file \"%s\" is not readable by the workers' "
                      "user, they see its changes only after a reload; "
                      "\"siftpd user\" gives it to that user",
                      ucf->file.data);
    }

    return SFT_OK;
}


static void
sft_users_dir_cleanup(void *data)
{
    int  *fd = data;

    if (*fd != -1) {
        close(*fd);
        *fd = -1;
    }
}


/* the file's name as this process opens it: relative in a worker */

static const char *
sft_users_path(sft_str_t *file)
{
    if (sft_users_dir == AT_FDCWD) {
        return (const char *) file->data;
    }

    return strrchr((char *) file->data, '/') + 1;
}


/* reading and parsing */

sft_int_t
sft_users_stat(sft_str_t *file, sft_users_ident_t *ident)
{
    struct stat  st;

    if (fstatat(sft_users_dir, sft_users_path(file), &st, 0) == -1) {
        return SFT_ERROR;
    }

    sft_memzero(ident, sizeof(sft_users_ident_t));
    ident->dev = st.st_dev;
    ident->ino = st.st_ino;
    ident->size = st.st_size;
    ident->mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000
                      + st.st_mtim.tv_nsec;

    return SFT_OK;
}


sft_users_t *
sft_users_read(sft_str_t *file, sft_uint_t missing_ok, sft_log_t *log)
{
    int                fd;
    u_char            *text;
    ssize_t            n;
    sft_users_t       *users;
    struct stat        st;
    sft_users_ident_t  ident;

    fd = openat(sft_users_dir, sft_users_path(file), O_RDONLY | O_CLOEXEC);

    if (fd == -1) {
        if (sft_errno == ENOENT && missing_ok) {
            if (missing_ok == SFT_USERS_MISSING_WARN) {
                sft_log_error(SFT_LOG_WARN, log, 0,
                              "users file \"%s\" does not exist, no users",
                              file->data);
            }

            return sft_users_parse(file, (u_char *) "", 0, log);
        }

        sft_slprintf(sft_users_error, sft_users_error + 511,
                     "open() \"%s\" failed (%d: %s)", file->data,
                     sft_errno, strerror(sft_errno))[0] = '\0';
        sft_log_error(SFT_LOG_EMERG, log, sft_errno, "open() \"%s\" failed",
                      file->data);
        return NULL;
    }

    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)
        || st.st_size > SFT_USERS_MAX_FILE_SIZE)
    {
        sft_slprintf(sft_users_error, sft_users_error + 511,
                     "users file \"%s\" is not a regular file of at most "
                     "16m", file->data)[0] = '\0';
        sft_log_error(SFT_LOG_EMERG, log, 0, "%s", sft_users_error);
        close(fd);
        return NULL;
    }

    text = sft_alloc(st.st_size + 1, log);
    if (text == NULL) {
        close(fd);
        return NULL;
    }

    n = read(fd, text, st.st_size);

    if (n != st.st_size) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno, "read() \"%s\" failed",
                      file->data);
        sft_free(text);
        close(fd);
        return NULL;
    }

    close(fd);

    sft_memzero(&ident, sizeof(ident));
    ident.dev = st.st_dev;
    ident.ino = st.st_ino;
    ident.size = st.st_size;
    ident.mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000
                     + st.st_mtim.tv_nsec;

    users = sft_users_parse(file, text, n, log);

    sft_explicit_memzero(text, n);
    sft_free(text);

    if (users) {
        users->ident = ident;
    }

    return users;
}


sft_users_t *
sft_users_parse(sft_str_t *file, u_char *text, size_t len, sft_log_t *log)
{
    u_char         *p, *end, *eol, *eq, *k, *kend, err[256];
    sft_int_t       rc;
    sft_str_t       name, key, path, value, *hint;
    sft_uint_t      line, i;
    sft_pool_t     *pool;
    sft_user_t     *u, *users_elts;
    sft_users_t    *users;
    sft_suggest_t   suggest;

    hint = NULL;

    pool = sft_create_pool(SFT_DEFAULT_POOL_SIZE, log);
    if (pool == NULL) {
        return NULL;
    }

    users = sft_pcalloc(pool, sizeof(sft_users_t));
    if (users == NULL) {
        goto failed;
    }

    users->pool = pool;
    users->uid = (uid_t) -1;
    users->gid = (gid_t) -1;

    users->file.data = sft_pnalloc(pool, file->len + 1);
    if (users->file.data == NULL) {
        goto failed;
    }

    sft_memcpy(users->file.data, file->data, file->len);
    users->file.data[file->len] = '\0';
    users->file.len = file->len;

    if (sft_array_init(&users->users, pool, 16, sizeof(sft_user_t))
        != SFT_OK)
    {
        goto failed;
    }

    u = NULL;
    p = text;
    end = text + len;
    line = 0;

    while (p < end) {
        line++;

        eol = memchr(p, '\n', end - p);
        if (eol == NULL) {
            eol = end;
        }

        k = p;
        p = eol + 1;

        while (k < eol && (*k == ' ' || *k == '\t')) {
            k++;
        }

        while (eol > k && (eol[-1] == ' ' || eol[-1] == '\t'
                           || eol[-1] == '\r'))
        {
            eol--;
        }

        if (k == eol || *k == '#') {
            continue;
        }

        if (memchr(k, '\0', eol - k) != NULL) {
            sft_slprintf(err, err + sizeof(err), "a NUL byte")[0] = '\0';
            goto invalid;
        }

        if (*k == '[') {
            if (eol[-1] != ']') {
                sft_slprintf(err, err + sizeof(err),
                             "a stanza must be \"[name]\"")[0] = '\0';
                goto invalid;
            }

            name.data = k + 1;
            name.len = eol - k - 2;

            if (sft_users_valid_name(&name) != SFT_OK) {
                sft_slprintf(err, err + sizeof(err),
                             "invalid user name \"%.*s\"",
                             SFT_STR_FMT(&name))[0] = '\0';
                goto invalid;
            }

            u = sft_users_add(users, &name);
            if (u == NULL) {
                goto failed;
            }

            u->line = line;
            continue;
        }

        if (u == NULL) {
            sft_slprintf(err, err + sizeof(err),
                         "a setting outside a \"[user]\" stanza")[0] = '\0';
            goto invalid;
        }

        eq = memchr(k, '=', eol - k);
        if (eq == NULL) {
            sft_slprintf(err, err + sizeof(err),
                         "expected \"key = value\"")[0] = '\0';
            goto invalid;
        }

        kend = eq;

        while (kend > k && (kend[-1] == ' ' || kend[-1] == '\t')) {
            kend--;
        }

        key.data = k;

        while (k < kend && *k != ' ' && *k != '\t') {
            k++;
        }

        key.len = k - key.data;

        while (k < kend && (*k == ' ' || *k == '\t')) {
            k++;
        }

        path.data = k;
        path.len = kend - k;

        value.data = eq + 1;

        while (value.data < eol && (*value.data == ' '
                                    || *value.data == '\t'))
        {
            value.data++;
        }

        value.len = eol - value.data;

        if (key.len == 0) {
            sft_slprintf(err, err + sizeof(err), "missing key")[0] = '\0';
            goto invalid;
        }

        rc = sft_users_set(users, u, &key, path.len ? &path : NULL, &value,
                           err, sizeof(err));

        if (rc == SFT_DECLINED) {
            hint = sft_users_key_suggest(&suggest, &key);
        }

        if (rc != SFT_OK) {
            goto invalid;
        }
    }

    /* sorted by name for lookups; a duplicate is reported at its later line */

    sft_users_sort(users);

    users_elts = users->users.elts;

    for (i = 1; i < users->users.nelts; i++) {
        if (users_elts[i].name.len == users_elts[i - 1].name.len
            && sft_memcmp(users_elts[i].name.data, users_elts[i - 1].name.data,
                          users_elts[i].name.len) == 0)
        {
            line = sft_max(users_elts[i].line, users_elts[i - 1].line);
            sft_slprintf(err, err + sizeof(err), "duplicate user \"%.*s\"",
                         SFT_STR_FMT(&users_elts[i].name))[0] = '\0';
            goto invalid;
        }
    }

    sft_users_error[0] = '\0';

    return users;

invalid:

    sft_slprintf(sft_users_error, sft_users_error + sizeof(sft_users_error) - 1,
                 "%s in %.*s:%lu%s%.*s%s", err, SFT_STR_FMT(file),
                 (unsigned long) line, hint ? ", did you mean \"" : "",
                 hint ? (int) hint->len : 0, hint ? (char *) hint->data : "",
                 hint ? "\"?" : "")[0] = '\0';

    sft_log_error(SFT_LOG_EMERG, log, 0, "%s", sft_users_error);

failed:

    sft_destroy_pool(pool);

    return NULL;
}


int
sft_users_cmp(const void *a, const void *b)
{
    int                rc;
    const sft_user_t  *ua = a, *ub = b;

    rc = memcmp(ua->name.data, ub->name.data,
                sft_min(ua->name.len, ub->name.len));

    if (rc) {
        return rc;
    }

    return (ua->name.len > ub->name.len) - (ua->name.len < ub->name.len);
}


sft_int_t
sft_users_valid_name(sft_str_t *name)
{
    size_t  i;
    u_char  c;

    if (name->len == 0 || name->len > SFT_USER_NAME_MAX
        || name->data[0] == '-' || name->data[0] == '.')
    {
        return SFT_ERROR;
    }

    for (i = 0; i < name->len; i++) {
        c = name->data[i];

        if (!isalnum(c) && c != '.' && c != '_' && c != '-' && c != '@') {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


/*
 * "/a/b/" -> "/a/b"; no "." or ".." components, no "//", no blank or
 * control byte (one before a trailing "/" would end the path, and then
 * be trimmed off the line it is written back to)
 */

static sft_int_t
sft_users_norm_path(sft_str_t *path)
{
    size_t   i;
    u_char  *s;

    s = path->data;

    if (path->len == 0 || s[0] != '/') {
        return SFT_ERROR;
    }

    while (path->len > 1 && s[path->len - 1] == '/') {
        path->len--;
    }

    for (i = 0; i < path->len; i++) {
        if (s[i] <= ' ' || s[i] == 0x7f || s[i] == '=') {
            return SFT_ERROR;
        }

        if (s[i] != '/' || i + 1 >= path->len) {
            continue;
        }

        if (s[i + 1] == '/') {
            return SFT_ERROR;
        }

        if (s[i + 1] == '.'
            && (i + 2 == path->len || s[i + 2] == '/'
                || (s[i + 2] == '.'
                    && (i + 3 == path->len || s[i + 3] == '/'))))
        {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


static sft_user_rule_t *
sft_users_rule(sft_user_t *u, sft_str_t *path)
{
    sft_uint_t        i;
    sft_user_rule_t  *r;

    r = u->rules.elts;

    for (i = 0; i < u->rules.nelts; i++) {
        if (r[i].path.len == path->len
            && sft_memcmp(r[i].path.data, path->data, path->len) == 0)
        {
            return &r[i];
        }
    }

    r = sft_array_push(&u->rules);
    if (r == NULL) {
        return NULL;
    }

    sft_memzero(r, sizeof(sft_user_rule_t));
    r->perms = -1;
    r->path.data = sft_pstrdup(u->table->pool, path);
    r->path.len = path->len;

    return r->path.data ? r : NULL;
}


void
sft_users_sort(sft_users_t *users)
{
    qsort(users->users.elts, users->users.nelts, sizeof(sft_user_t),
          sft_users_cmp);
}


sft_user_t *
sft_users_find(sft_users_t *users, sft_str_t *name)
{
    sft_user_t  key, *u;

    if (users == NULL || users->users.nelts == 0) {
        return NULL;
    }

    key.name = *name;

    u = bsearch(&key, users->users.elts, users->users.nelts,
                sizeof(sft_user_t), sft_users_cmp);

    return u;
}


/* appends a user (the array is not sorted until sft_users_write) */

sft_user_t *
sft_users_add(sft_users_t *users, sft_str_t *name)
{
    sft_str_t    root = sft_string("/");
    sft_user_t  *u;

    u = sft_array_push(&users->users);
    if (u == NULL) {
        return NULL;
    }

    sft_memzero(u, sizeof(sft_user_t));

    u->table = users;
    u->name.data = sft_pstrdup(users->pool, name);
    u->name.len = name->len;
    sft_str_set(&u->home, "/");
    sft_str_set(&u->storage, "local");
    sft_str_set(&u->password, "");

    if (u->name.data == NULL
        || sft_array_init(&u->rules, users->pool, 2, sizeof(sft_user_rule_t))
           != SFT_OK
        || sft_array_init(&u->allow_from, users->pool, 1,
                          sizeof(sft_user_cidr_t)) != SFT_OK
        || sft_array_init(&u->ssh_keys, users->pool, 1, sizeof(sft_str_t))
           != SFT_OK
        || sft_users_rule(u, &root) == NULL)
    {
        return NULL;
    }

    return u;
}


sft_int_t
sft_users_delete(sft_users_t *users, sft_str_t *name)
{
    sft_user_t  *u, *elts;

    u = sft_users_find(users, name);
    if (u == NULL) {
        return SFT_DECLINED;
    }

    elts = users->users.elts;

    memmove(u, u + 1,
            (elts + users->users.nelts - (u + 1)) * sizeof(sft_user_t));
    users->users.nelts--;

    return SFT_OK;
}


/* every key a user's stanza may have */

static sft_str_t  sft_users_keys[] = {
    sft_string("password"), sft_string("home"), sft_string("storage"),
    sft_string("disabled"), sft_string("quota_bytes"),
    sft_string("quota_files"), sft_string("max_sessions"),
    sft_string("upload_rate"), sft_string("download_rate"),
    sft_string("allow_from"), sft_string("ssh_key"), sft_string("perms"),
    sft_string("deny"), sft_string("hide")
};


static sft_str_t *
sft_users_key_known(sft_str_t *key)
{
    sft_uint_t  i;

    for (i = 0; i < sft_nelems(sft_users_keys); i++) {
        if (key->len == sft_users_keys[i].len
            && sft_strncmp(key->data, sft_users_keys[i].data, key->len) == 0)
        {
            return &sft_users_keys[i];
        }
    }

    return NULL;
}


/* the known key an unknown one is closest to, if any */

static sft_str_t *
sft_users_key_suggest(sft_suggest_t *s, sft_str_t *key)
{
    sft_uint_t  i;

    sft_suggest_init(s, key);

    for (i = 0; i < sft_nelems(sft_users_keys); i++) {
        sft_suggest_add(s, &sft_users_keys[i]);
    }

    return sft_suggest_best(s);
}


/*
 * Forgets what "key" set, so that sft_users_set() may set it anew: "perms"
 * drops every rule (permissions, deny and hide of every directory).
 */

sft_int_t
sft_users_unset(sft_user_t *u, sft_str_t *key)
{
    size_t      i;
    sft_str_t   root = sft_string("/");

    static const struct {
        const char  *key;
        sft_uint_t   bit;
    } bits[] = {
        { "password", 0x01 }, { "home", 0x02 }, { "storage", 0x04 },
        { "disabled", 0x08 }, { "quota_bytes", 0x10 },
        { "upload_rate", 0x20 }, { "download_rate", 0x40 },
        { "quota_files", 0x80 }, { "max_sessions", 0x100 },
    };

    for (i = 0; i < sft_nelems(bits); i++) {
        if (key->len == strlen(bits[i].key)
            && sft_memcmp(key->data, bits[i].key, key->len) == 0)
        {
            u->seen &= ~bits[i].bit;
            return SFT_OK;
        }
    }

    if (sft_str_eq(key, "allow_from")) {
        u->allow_from.nelts = 0;
        return SFT_OK;
    }

    if (sft_str_eq(key, "ssh_key")) {
        u->ssh_keys.nelts = 0;
        return SFT_OK;
    }

    if (sft_str_eq(key, "perms")) {
        u->rules.nelts = 0;
        return sft_users_rule(u, &root) ? SFT_OK : SFT_ERROR;
    }

    return SFT_DECLINED;
}


#define SFT_USERS_SEEN(u, bit)                                                \
    if ((u)->seen & (bit)) {                                                  \
        goto duplicate;                                                       \
    }                                                                         \
    (u)->seen |= (bit)

sft_int_t
sft_users_set(sft_users_t *users, sft_user_t *u, sft_str_t *key,
    sft_str_t *path, sft_str_t *value, u_char *errbuf, size_t errlen)
{
    u_char            *p, *last;
    off_t              off;
    uint32_t           m, t, par;
    sft_int_t          n;
    sft_str_t          s, root = sft_string("/");
    sft_user_rule_t   *r;
    sft_user_cidr_t   *cidr;
    sft_user_regex_t  *re;

    last = errbuf + errlen - 1;

    /*
     * the file trims every value, and a carriage return at the end of a
     * line (CRLF files): a value that begins or ends with a blank, or
     * ends with a carriage return (from the API), would be stored other
     * than it was given
     */

    if (value->len
        && (value->data[0] == ' ' || value->data[0] == '\t'
            || value->data[value->len - 1] == ' '
            || value->data[value->len - 1] == '\t'
            || value->data[value->len - 1] == '\r'))
    {
        sft_slprintf(errbuf, last, "the value of \"%.*s\" begins or ends "
                     "with a blank or ends with a carriage return (a "
                     "pattern may write them as [ ] and \\r)",
                     SFT_STR_FMT(key))[0] = '\0';
        return SFT_ERROR;
    }

    if (path) {
        if (!sft_str_eq(key, "perms") && !sft_str_eq(key, "deny")
            && !sft_str_eq(key, "hide"))
        {
            if (sft_users_find(users, key) == NULL
                && sft_users_key_known(key) == NULL)
            {
                goto unknown;
            }

            sft_slprintf(errbuf, last, "\"%.*s\" takes no directory",
                         SFT_STR_FMT(key))[0] = '\0';
            return SFT_ERROR;
        }

        s = *path;

        if (sft_users_norm_path(&s) != SFT_OK) {
            sft_slprintf(errbuf, last, "invalid directory \"%.*s\"",
                         SFT_STR_FMT(path))[0] = '\0';
            return SFT_ERROR;
        }

    } else {
        s = root;
    }

    if (sft_str_eq(key, "perms") || sft_str_eq(key, "deny")
        || sft_str_eq(key, "hide"))
    {
        r = sft_users_rule(u, &s);
        if (r == NULL) {
            return SFT_ERROR;
        }

        if (key->data[0] == 'p') {
            if (r->perms != -1) {
                goto duplicate;
            }

            r->perms = sft_perms_parse(value);

            if (r->perms == SFT_ERROR) {
                r->perms = -1;
                goto bad_value;
            }

            return SFT_OK;
        }

        if ((key->data[0] == 'd' && r->deny) || (key->data[0] == 'h' && r->hide))
        {
            goto duplicate;
        }

        re = sft_user_regex_compile(users->pool, value, errbuf, errlen);
        if (re == NULL) {
            return SFT_ERROR;
        }

        if (key->data[0] == 'd') {
            r->deny = re;
        } else {
            r->hide = re;
        }

        return SFT_OK;
    }

    if (sft_str_eq(key, "password")) {
        SFT_USERS_SEEN(u, 0x01);

        if (value->len
            && sft_phc_params(value, &m, &t, &par) != SFT_OK)
        {
            sft_slprintf(errbuf, last, "invalid password hash, expected an "
                         "argon2id PHC string \"$argon2id$v=19$m=..,t=..,"
                         "p=..$salt$hash\"")[0] = '\0';
            return SFT_ERROR;
        }

        u->password.data = sft_pstrdup(users->pool, value);
        u->password.len = value->len;
        return u->password.data || value->len == 0 ? SFT_OK : SFT_ERROR;
    }

    if (sft_str_eq(key, "home")) {
        SFT_USERS_SEEN(u, 0x02);

        s = *value;

        if (sft_users_norm_path(&s) != SFT_OK) {
            goto bad_value;
        }

        u->home.data = sft_pstrdup(users->pool, &s);
        u->home.len = s.len;
        return u->home.data ? SFT_OK : SFT_ERROR;
    }

    if (sft_str_eq(key, "storage")) {
        SFT_USERS_SEEN(u, 0x04);

        if (value->len == 0 || value->len > 64) {
            goto bad_value;
        }

        for (p = value->data; p < value->data + value->len; p++) {
            if (!isalnum(*p) && *p != '_' && *p != '-' && *p != '.') {
                goto bad_value;
            }
        }

        u->storage.data = sft_pstrdup(users->pool, value);
        u->storage.len = value->len;
        return u->storage.data ? SFT_OK : SFT_ERROR;
    }

    if (sft_str_eq(key, "disabled")) {
        SFT_USERS_SEEN(u, 0x08);

        if (sft_str_eq(value, "yes") || sft_str_eq(value, "on")
            || sft_str_eq(value, "true"))
        {
            u->disabled = 1;

        } else if (sft_str_eq(value, "no") || sft_str_eq(value, "off")
                   || sft_str_eq(value, "false"))
        {
            u->disabled = 0;

        } else {
            goto bad_value;
        }

        return SFT_OK;
    }

    if (sft_str_eq(key, "quota_bytes") || sft_str_eq(key, "upload_rate")
        || sft_str_eq(key, "download_rate"))
    {
        off = sft_parse_offset(value);
        if (off == (off_t) SFT_ERROR || off < 0) {
            goto bad_value;
        }

        if (key->data[0] == 'q') {
            SFT_USERS_SEEN(u, 0x10);
            u->quota_bytes = off;

        } else if (key->data[0] == 'u') {
            SFT_USERS_SEEN(u, 0x20);
            u->upload_rate = off;

        } else {
            SFT_USERS_SEEN(u, 0x40);
            u->download_rate = off;
        }

        return SFT_OK;
    }

    if (sft_str_eq(key, "quota_files") || sft_str_eq(key, "max_sessions")) {
        n = sft_atoi(value->data, value->len);
        if (n == SFT_ERROR) {
            goto bad_value;
        }

        if (key->data[0] == 'q') {
            SFT_USERS_SEEN(u, 0x80);
            u->quota_files = n;

        } else {
            SFT_USERS_SEEN(u, 0x100);
            u->max_sessions = n;
        }

        return SFT_OK;
    }

    if (sft_str_eq(key, "allow_from")) {
        p = value->data;
        last = value->data + value->len;

        while (sft_users_list_next(&p, last, &s)) {
            cidr = sft_array_push(&u->allow_from);
            if (cidr == NULL) {
                return SFT_ERROR;
            }

            if (sft_cidr_parse(&s, cidr) != SFT_OK) {
                u->allow_from.nelts--;
                sft_slprintf(errbuf, errbuf + errlen - 1,
                             "invalid network \"%.*s\"",
                             SFT_STR_FMT(&s))[0] = '\0';
                return SFT_ERROR;
            }

            cidr->text.data = sft_pstrdup(users->pool, &s);
            if (cidr->text.data == NULL) {
                return SFT_ERROR;
            }
        }

        return SFT_OK;
    }

    if (sft_str_eq(key, "ssh_key")) {
        if (value->len < 8 || memchr(value->data, ' ', value->len) == NULL
            || (sft_strncmp(value->data, "ssh-", 4) != 0
                && sft_strncmp(value->data, "ecdsa-", 6) != 0
                && sft_strncmp(value->data, "sk-", 3) != 0))
        {
            goto bad_value;
        }

        p = (u_char *) sft_array_push(&u->ssh_keys);
        if (p == NULL) {
            return SFT_ERROR;
        }

        s.data = sft_pstrdup(users->pool, value);
        s.len = value->len;
        sft_memcpy(p, &s, sizeof(sft_str_t));

        return s.data ? SFT_OK : SFT_ERROR;
    }

unknown:

    sft_slprintf(errbuf, last, "unknown key \"%.*s\"",
                 SFT_STR_FMT(key))[0] = '\0';
    return SFT_DECLINED;

duplicate:

    sft_slprintf(errbuf, last, "duplicate \"%.*s\"%s%.*s",
                 SFT_STR_FMT(key), path ? " for " : "",
                 path ? (int) path->len : 0,
                 path ? (char *) path->data : "")[0] = '\0';
    return SFT_ERROR;

bad_value:

    sft_slprintf(errbuf, last, "invalid value \"%.*s\" of \"%.*s\"",
                 SFT_STR_FMT(value), SFT_STR_FMT(key))[0] = '\0';
    return SFT_ERROR;
}


/* "$argon2id$v=19$m=65536,t=3,p=1$<salt>$<hash>" */

sft_int_t
sft_phc_params(sft_str_t *phc, uint32_t *m, uint32_t *t, uint32_t *p)
{
    char           buf[256], *s;
    unsigned long  v, mm, tt, pp;
    int            n;

    if (phc->len >= sizeof(buf) || phc->len < 10) {
        return SFT_ERROR;
    }

    sft_memcpy(buf, phc->data, phc->len);
    buf[phc->len] = '\0';

    n = 0;

    if (sscanf(buf, "$argon2id$v=%lu$m=%lu,t=%lu,p=%lu$%n",
               &v, &mm, &tt, &pp, &n) != 4
        || n == 0 || v != 19 || mm == 0 || tt == 0 || pp == 0
        || mm > 0xffffffffUL || tt > 0xffffffffUL || pp > 0xffffffUL)
    {
        return SFT_ERROR;
    }

    /* "<salt>$<hash>", unpadded base64 */

    s = strchr(buf + n, '$');

    if (s == NULL || s == buf + n || s[1] == '\0'
        || strspn(buf + n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                           "0123456789+/$") != phc->len - n
        || strchr(s + 1, '$') != NULL)
    {
        return SFT_ERROR;
    }

    *m = mm;
    *t = tt;
    *p = pp;

    return SFT_OK;
}


/* the next item of a list separated by blanks and commas; 0 at its end */

static sft_uint_t
sft_users_list_next(u_char **pos, u_char *last, sft_str_t *item)
{
    u_char  *p, *q;

    for (p = *pos; p < last && (*p == ' ' || *p == ',' || *p == '\t'); p++) {
        /* void */
    }

    for (q = p; q < last && *q != ' ' && *q != ',' && *q != '\t'; q++) {
        /* void */
    }

    item->data = p;
    item->len = q - p;
    *pos = q;

    return item->len != 0;
}


/* permissions: "list,download", "all", "none" or "" */

sft_int_t
sft_perms_parse(sft_str_t *text)
{
    u_char      *p, *last;
    sft_str_t    w;
    sft_int_t    perms;
    sft_uint_t   i;

    perms = 0;
    p = text->data;
    last = p + text->len;

    while (sft_users_list_next(&p, last, &w)) {
        if (w.len == 3 && sft_strncmp(w.data, "all", 3) == 0) {
            perms |= SFT_PERM_ALL;
            continue;
        }

        if (w.len == 4 && sft_strncmp(w.data, "none", 4) == 0) {
            continue;
        }

        for (i = 0; sft_perm_names[i]; i++) {
            if (strlen(sft_perm_names[i]) == w.len
                && sft_strncmp(w.data, sft_perm_names[i], w.len) == 0)
            {
                perms |= 1 << i;
                break;
            }
        }

        if (sft_perm_names[i] == NULL) {
            return SFT_ERROR;
        }
    }

    return perms;
}


u_char *
sft_perms_format(u_char *p, u_char *last, sft_uint_t perms)
{
    sft_uint_t  i, first;

    first = 1;

    for (i = 0; sft_perm_names[i]; i++) {
        if (perms & (1 << i)) {
            p = sft_slprintf(p, last, "%s%s", first ? "" : ",",
                             sft_perm_names[i]);
            first = 0;
        }
    }

    if (first) {
        p = sft_slprintf(p, last, "none");
    }

    return p;
}


sft_uint_t
sft_user_allowed_from(sft_user_t *u, struct sockaddr *sa)
{
    sft_uint_t        i;
    sft_user_cidr_t  *cidr;

    if (u->allow_from.nelts == 0) {
        return 1;
    }

    cidr = u->allow_from.elts;

    for (i = 0; i < u->allow_from.nelts; i++) {
        if (sft_cidr_match(&cidr[i], sa)) {
            return 1;
        }
    }

    return 0;
}


/* the longest rule that is a prefix of path at a '/' boundary */

static sft_uint_t
sft_users_prefix(sft_str_t *rule, sft_str_t *path)
{
    if (rule->len == 1) {
        return 1;
    }

    return path->len >= rule->len
           && sft_memcmp(path->data, rule->data, rule->len) == 0
           && (path->len == rule->len || path->data[rule->len] == '/');
}


sft_uint_t
sft_user_perms(sft_user_t *u, sft_str_t *path)
{
    size_t            best;
    sft_int_t         perms;
    sft_uint_t        i;
    sft_user_rule_t  *r;

    r = u->rules.elts;
    perms = SFT_USERS_DEFAULT_PERMS;
    best = 0;

    for (i = 0; i < u->rules.nelts; i++) {
        if (r[i].perms == -1 || r[i].path.len < best
            || !sft_users_prefix(&r[i].path, path))
        {
            continue;
        }

        best = r[i].path.len;
        perms = r[i].perms;
    }

    return perms;
}


static sft_uint_t
sft_users_filter(sft_user_t *u, sft_str_t *dir, sft_str_t *name,
    sft_uint_t hide)
{
    size_t             best;
    sft_uint_t         i;
    sft_user_rule_t   *r;
    sft_user_regex_t  *re, *server;

    server = hide ? sft_users_server_hide : sft_users_server_deny;

    if (server && sft_user_regex_match(server, name)) {
        return 1;
    }

    r = u->rules.elts;
    re = NULL;
    best = 0;

    for (i = 0; i < u->rules.nelts; i++) {
        if ((hide ? r[i].hide : r[i].deny) == NULL || r[i].path.len < best
            || !sft_users_prefix(&r[i].path, dir))
        {
            continue;
        }

        best = r[i].path.len;
        re = hide ? r[i].hide : r[i].deny;
    }

    return re && sft_user_regex_match(re, name);
}


sft_uint_t
sft_user_name_denied(sft_user_t *u, sft_str_t *dir, sft_str_t *name)
{
    return sft_users_filter(u, dir, name, 0);
}


/* denied names are hidden too */

sft_uint_t
sft_user_name_hidden(sft_user_t *u, sft_str_t *dir, sft_str_t *name)
{
    return sft_users_filter(u, dir, name, 1)
           || sft_users_filter(u, dir, name, 0);
}


/* PCRE2 */

sft_user_regex_t *
sft_user_regex_compile(sft_pool_t *pool, sft_str_t *src, u_char *errbuf,
    size_t errlen)
{
    int                  errcode;
    PCRE2_SIZE           erroff;
    pcre2_code          *code;
    sft_user_regex_t    *re;
    sft_pool_cleanup_t  *cln;
    PCRE2_UCHAR          msg[128];

    code = pcre2_compile(src->data, src->len, 0, &errcode, &erroff, NULL);

    if (code == NULL) {
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        sft_slprintf(errbuf, errbuf + errlen - 1,
                     "invalid pattern \"%.*s\": %s at offset %lu",
                     SFT_STR_FMT(src), (char *) msg,
                     (unsigned long) erroff)[0] = '\0';
        return NULL;
    }

    /* JIT where the platform has it; the interpreter otherwise */
    (void) pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);

    cln = sft_pool_cleanup_add(pool, 0);
    re = sft_palloc(pool, sizeof(sft_user_regex_t));

    if (cln == NULL || re == NULL) {
        pcre2_code_free(code);
        return NULL;
    }

    cln->handler = sft_users_regex_cleanup;
    cln->data = code;

    re->code = code;
    re->source.data = sft_pstrdup(pool, src);
    re->source.len = src->len;

    return re->source.data ? re : NULL;
}


static void
sft_users_regex_cleanup(void *data)
{
    pcre2_code_free(data);
}


sft_uint_t
sft_user_regex_match(sft_user_regex_t *re, sft_str_t *s)
{
    int                rc;
    pcre2_match_data  *md;

    md = pcre2_match_data_create_from_pattern(re->code, NULL);
    if (md == NULL) {
        return 1;     /* fail closed */
    }

    rc = pcre2_match(re->code, s->data, s->len, 0, 0, md, NULL);

    pcre2_match_data_free(md);

    return rc >= 0;
}


/* writing */

static void
sft_users_print(FILE *f, sft_user_t *u, sft_uint_t with_hash)
{
    u_char            buf[256];
    uint32_t          m, t, p;
    sft_uint_t        i, j;
    sft_str_t        *key;
    sft_user_rule_t  *r;
    sft_user_cidr_t  *cidr;

    fprintf(f, "[%.*s]\n", SFT_STR_FMT(&u->name));

    if (with_hash) {
        fprintf(f, "password = %.*s\n", SFT_STR_FMT(&u->password));

    } else if (u->password.len == 0) {
        fprintf(f, "# password: none\n");

    } else if (sft_phc_params(&u->password, &m, &t, &p) == SFT_OK) {
        fprintf(f, "# password: argon2id hash, m=%u,t=%u,p=%u "
                "(not shown)\n", m, t, p);
    }

    fprintf(f, "home = %.*s\n", SFT_STR_FMT(&u->home));
    fprintf(f, "storage = %.*s\n", SFT_STR_FMT(&u->storage));

    r = u->rules.elts;

    for (i = 0; i < u->rules.nelts; i++) {
        for (j = 0; j < 3; j++) {
            if (j == 0 && r[i].perms != -1) {
                *sft_perms_format(buf, buf + sizeof(buf) - 1, r[i].perms) = 0;
                fprintf(f, "perms");

            } else if (j == 1 && r[i].deny) {
                fprintf(f, "deny");

            } else if (j == 2 && r[i].hide) {
                fprintf(f, "hide");

            } else {
                continue;
            }

            if (i > 0) {
                fprintf(f, " %.*s", SFT_STR_FMT(&r[i].path));
            }

            if (j == 0) {
                fprintf(f, " = %s\n", buf);

            } else {
                fprintf(f, " = %.*s\n", SFT_STR_FMT(j == 1
                                                    ? &r[i].deny->source
                                                    : &r[i].hide->source));
            }
        }
    }

    if (u->quota_bytes) {
        fprintf(f, "quota_bytes = %lld\n", (long long) u->quota_bytes);
    }

    if (u->quota_files) {
        fprintf(f, "quota_files = %lu\n", (unsigned long) u->quota_files);
    }

    if (u->max_sessions) {
        fprintf(f, "max_sessions = %lu\n", (unsigned long) u->max_sessions);
    }

    if (u->upload_rate) {
        fprintf(f, "upload_rate = %lld\n", (long long) u->upload_rate);
    }

    if (u->download_rate) {
        fprintf(f, "download_rate = %lld\n", (long long) u->download_rate);
    }

    if (u->allow_from.nelts) {
        cidr = u->allow_from.elts;
        fprintf(f, "allow_from = ");

        for (i = 0; i < u->allow_from.nelts; i++) {
            fprintf(f, "%s%.*s", i ? ", " : "", SFT_STR_FMT(&cidr[i].text));
        }

        fprintf(f, "\n");
    }

    key = u->ssh_keys.elts;

    for (i = 0; i < u->ssh_keys.nelts; i++) {
        fprintf(f, "ssh_key = %.*s\n", SFT_STR_FMT(&key[i]));
    }

    fprintf(f, "disabled = %s\n", u->disabled ? "yes" : "no");
}


/* a malloc()ed text of one stanza; free() it */

u_char *
sft_users_format(sft_user_t *u, sft_uint_t with_hash, size_t *len)
{
    char  *buf;
    FILE  *f;

    buf = NULL;
    *len = 0;

    f = open_memstream(&buf, len);
    if (f == NULL) {
        return NULL;
    }

    sft_users_print(f, u, with_hash);

    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }

    return (u_char *) buf;
}


/*
 * Writers of the file (the CLI, the API in any worker) take this lock
 * first, read the file, change it and write it: no change is lost.  The
 * descriptor, or -1; close() it to unlock.
 */

int
sft_users_lock(sft_str_t *file, sft_log_t *log)
{
    int   fd;
    char  name[PATH_MAX];

    if (snprintf(name, sizeof(name), "%s.lock", sft_users_path(file))
        >= (int) sizeof(name))
    {
        return -1;
    }

    fd = openat(sft_users_dir, name, O_RDWR | O_CREAT | O_CLOEXEC,
                0600);

    if (fd == -1 || flock(fd, LOCK_EX) == -1) {
        sft_log_error(SFT_LOG_ERR, log, sft_errno, "cannot lock \"%s.lock\"",
                      file->data);

        if (fd != -1) {
            close(fd);
        }

        return -1;
    }

    return fd;
}


/*
 * The whole table to a temporary file beside it, fsync()ed, renamed over;
 * through the directory a worker reads it from.  Writers hold
 * sft_users_lock(): the temporary name needs no more than the pid.
 */

sft_int_t
sft_users_write(sft_users_t *users, sft_log_t *log)
{
    int          fd, dfd;
    FILE        *f;
    char         tmp[PATH_MAX];
    size_t       n;
    sft_uint_t   i;
    sft_user_t  *u;
    const char  *name;

    u = users->users.elts;
    qsort(u, users->users.nelts, sizeof(sft_user_t), sft_users_cmp);

    name = sft_users_path(&users->file);

    if (snprintf(tmp, sizeof(tmp), "%s.tmp%d", name, (int) getpid())
        >= (int) sizeof(tmp))
    {
        return SFT_ERROR;
    }

    (void) unlinkat(sft_users_dir, tmp, 0);

    fd = openat(sft_users_dir, tmp,
                O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd == -1) {
        sft_log_error(SFT_LOG_ERR, log, sft_errno, "open(\"%s\") failed",
                      tmp);
        return SFT_ERROR;
    }

    if (fchown(fd, users->uid, users->gid) == -1) {
        sft_log_error(SFT_LOG_ERR, log, sft_errno, "fchown(\"%s\", %d, %d) "
                      "failed", tmp, (int) users->uid, (int) users->gid);
        close(fd);
        goto failed;
    }

    f = fdopen(fd, "w");
    if (f == NULL) {
        close(fd);
        goto failed;
    }

    fprintf(f, "# siftpd users file, written by siftpd; "
            "see docs/users.md\n");

    for (i = 0; i < users->users.nelts; i++) {
        fprintf(f, "\n");
        sft_users_print(f, &u[i], 1);
    }

    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) == -1) {
        sft_log_error(SFT_LOG_ERR, log, sft_errno, "writing \"%s\" failed",
                      tmp);
        fclose(f);
        goto failed;
    }

    if (fclose(f) != 0) {
        sft_log_error(SFT_LOG_ERR, log, sft_errno, "close(\"%s\") failed",
                      tmp);
        goto failed;
    }

    if (renameat(sft_users_dir, tmp, sft_users_dir, name) == -1) {
        sft_log_error(SFT_LOG_ERR, log, sft_errno,
                      "rename(\"%s\", \"%s\") failed", tmp,
                      users->file.data);
        goto failed;
    }

    /* the rename itself must reach the disk */

    if (sft_users_dir == AT_FDCWD) {
        /* the file's name is absolute */
        n = sft_max(strrchr((char *) users->file.data, '/')
                    - (char *) users->file.data, 1);
        sft_memcpy(tmp, users->file.data, n);
        tmp[n] = '\0';

        dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    } else {
        dfd = openat(sft_users_dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }

    if (dfd != -1) {
        (void) fsync(dfd);
        close(dfd);
    }

    (void) sft_users_stat(&users->file, &users->ident);

    return SFT_OK;

failed:

    (void) unlinkat(sft_users_dir, tmp, 0);

    return SFT_ERROR;
}


void
sft_users_free(sft_users_t *users)
{
    if (users && users->refs == 0 && !users->current) {
        sft_destroy_pool(users->pool);
    }
}


/* the current table of this process */

sft_users_t *
sft_users_current(void)
{
    return sft_users_cur;
}


void
sft_users_set_current(sft_users_t *users, sft_log_t *log)
{
    sft_users_t  *old;

    old = sft_users_cur;

    if (old == users) {
        return;
    }

    users->current = 1;
    sft_users_cur = users;

    sft_auth_users_changed(&users->ident, log);

    if (old) {
        old->current = 0;
        sft_users_free(old);
    }
}


/*
 * Every login decision looks the user up here, so every login method sees
 * the file as it is now: one stat() per lookup, and a re-read only when
 * the file was replaced or changed.
 */

static void
sft_users_refresh(sft_log_t *log)
{
    sft_users_t        *users;
    sft_users_ident_t   ident;

    if (sft_users_cur == NULL) {
        return;
    }

    if (sft_users_stat(&sft_users_cur->file, &ident) != SFT_OK) {
        sft_memzero(&ident, sizeof(ident));
    }

    if (sft_memcmp(&ident, &sft_users_cur->ident, sizeof(ident)) == 0
        || sft_memcmp(&ident, &sft_users_bad, sizeof(ident)) == 0)
    {
        return;
    }

    users = sft_users_read(&sft_users_cur->file, SFT_USERS_MISSING_WARN, log);

    if (users == NULL) {
        sft_log_error(SFT_LOG_ERR, log, 0, "users file \"%s\" changed but "
                      "is invalid, still using the previous one",
                      sft_users_cur->file.data);
        sft_users_bad = ident;
        return;
    }

    sft_log_error(SFT_LOG_NOTICE, log, 0, "users file \"%s\" re-read, "
                  "%lu users", users->file.data,
                  (unsigned long) users->users.nelts);

    sft_users_set_current(users, log);
}


sft_user_t *
sft_users_file_lookup(sft_str_t *name, sft_log_t *log)
{
    sft_users_refresh(log);

    return sft_users_find(sft_users_cur, name);
}


sft_user_t *
sft_user_acquire(sft_user_t *u)
{
    if (u) {
        u->table->refs++;
    }

    return u;
}


void
sft_user_release(sft_user_t *u)
{
    if (u) {
        u->table->refs--;
        sft_users_free(u->table);
    }
}
