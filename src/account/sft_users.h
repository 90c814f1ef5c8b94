/*
 * sft_users.h -- the user store: users with argon2id hashes, homes,
 * permissions per directory, limits, allowed networks, name filters and SSH
 * keys, read from the "users" file and re-read by workers when it changes.
 */

#ifndef _SFT_USERS_H_INCLUDED_
#define _SFT_USERS_H_INCLUDED_


#include <sft_cidr.h>
#include <sft_perm.h>


#define SFT_USERS_MAX_FILE_SIZE  (16 * 1024 * 1024)

/* sft_users_read()'s missing_ok */
#define SFT_USERS_MUST_EXIST     0
#define SFT_USERS_MISSING_WARN   1      /* an empty table, with a warning */
#define SFT_USERS_MISSING_QUIET  2      /* an empty table: it is created */
#define SFT_USER_NAME_MAX        64


typedef struct sft_users_s  sft_users_t;


/* a compiled PCRE2 pattern and its source text */
typedef struct {
    sft_str_t          source;
    void              *code;           /* pcre2_code * */
} sft_user_regex_t;


/* one rule: the user's own ("/") or a directory's; unset parts inherit */
typedef struct {
    sft_str_t          path;           /* "/" or "/a/b", no trailing '/' */
    sft_int_t          perms;          /* -1 unset */
    sft_user_regex_t  *deny;
    sft_user_regex_t  *hide;
} sft_user_rule_t;


typedef sft_cidr_t  sft_user_cidr_t;


typedef struct sft_user_s {
    sft_str_t          name;
    sft_str_t          password;       /* PHC string, "" = no password */
    sft_str_t          home;
    sft_str_t          storage;
    sft_array_t        rules;          /* sft_user_rule_t, rules[0] is "/" */
    sft_array_t        allow_from;     /* sft_user_cidr_t */
    sft_array_t        ssh_keys;       /* sft_str_t */
    off_t              quota_bytes;    /* 0 = unlimited */
    sft_uint_t         quota_files;
    sft_uint_t         max_sessions;
    off_t              upload_rate;    /* bytes/s, 0 = unlimited */
    off_t              download_rate;
    sft_uint_t         disabled;
    sft_uint_t         line;
    sft_uint_t         seen;           /* keys set, for duplicates */
    sft_users_t       *table;
} sft_user_t;


typedef struct {
    dev_t              dev;
    ino_t              ino;
    off_t              size;
    int64_t            mtime_ns;
} sft_users_ident_t;


struct sft_users_s {
    sft_pool_t        *pool;
    sft_str_t          file;            /* absolute, null-terminated */
    sft_array_t        users;           /* sft_user_t, sorted by name */
    sft_users_ident_t  ident;
    uid_t              uid;             /* the file's owner when written; */
    gid_t              gid;             /* -1: the writer's */
    sft_uint_t         refs;            /* holders besides "current" */
    sft_uint_t         current;
};


/* the main-context configuration of sft_users_module */
typedef struct {
    sft_str_t          file;
    sft_str_t          first_user;      /* created if the file is missing */
    time_t             cache_ttl;
    sft_int_t          max_checks;      /* 0 = auto */
    sft_int_t          max_failures;
    time_t             failure_window;
    time_t             ban_time;
    sft_int_t          max_conns_per_addr;
    sft_int_t          ipv6_prefix;     /* bits of a login source */
    size_t             hash_memory;     /* of new password hashes */
    sft_int_t          hash_passes;
    sft_array_t       *ban_exempt;      /* sft_user_cidr_t, or NULL */
    sft_user_regex_t  *deny;
    sft_user_regex_t  *hide;
    sft_users_t       *users;           /* as read by the master */
    int                dir;             /* the file's directory, or -1 */
    sft_uint_t         workers_write;   /* workers rewrite the file (the
                                           admin API): Landlock lets them */
    sft_shm_zone_t    *zone;
    sft_array_t       *stores;          /* sft_user_store_t *, by module */
    void              *store;           /* "user_store": sft_user_store_t *,
                                           NULL for the file */
    sft_str_t          store_arg;       /* its argument */
} sft_users_conf_t;


sft_users_t *sft_users_read(sft_str_t *file, sft_uint_t missing_ok,
    sft_log_t *log);
sft_users_t *sft_users_parse(sft_str_t *file, u_char *text, size_t len,
    sft_log_t *log);
int sft_users_lock(sft_str_t *file, sft_log_t *log);
sft_int_t sft_users_write(sft_users_t *users, sft_log_t *log);
void sft_users_free(sft_users_t *users);
sft_int_t sft_users_stat(sft_str_t *file, sft_users_ident_t *ident);

sft_user_t *sft_users_find(sft_users_t *users, sft_str_t *name);
/* by name, in byte order: sft_users_find() looks them up so */
int sft_users_cmp(const void *a, const void *b);
void sft_users_sort(sft_users_t *users);
sft_user_t *sft_users_add(sft_users_t *users, sft_str_t *name);
sft_int_t sft_users_delete(sft_users_t *users, sft_str_t *name);
/* SFT_ERROR for a bad value, SFT_DECLINED for an unknown key */
sft_int_t sft_users_set(sft_users_t *users, sft_user_t *u, sft_str_t *key,
    sft_str_t *path, sft_str_t *value, u_char *errbuf, size_t errlen);
sft_int_t sft_users_unset(sft_user_t *u, sft_str_t *key);
u_char *sft_users_format(sft_user_t *u, sft_uint_t with_hash, size_t *len);

/* what the user store knows of a user now (sft_user_store.c) */
sft_user_t *sft_users_lookup(sft_str_t *name, sft_log_t *log);

/* the current table of this process, re-read when the file changed */
sft_user_t *sft_users_file_lookup(sft_str_t *name, sft_log_t *log);
sft_users_t *sft_users_current(void);
void sft_users_set_current(sft_users_t *users, sft_log_t *log);
sft_user_t *sft_user_acquire(sft_user_t *u);
void sft_user_release(sft_user_t *u);

sft_uint_t sft_user_perms(sft_user_t *u, sft_str_t *path);
sft_uint_t sft_user_name_denied(sft_user_t *u, sft_str_t *dir,
    sft_str_t *name);
sft_uint_t sft_user_name_hidden(sft_user_t *u, sft_str_t *dir,
    sft_str_t *name);
sft_uint_t sft_user_allowed_from(sft_user_t *u, struct sockaddr *sa);

sft_int_t sft_users_valid_name(sft_str_t *name);
sft_int_t sft_phc_params(sft_str_t *phc, uint32_t *m, uint32_t *t,
    uint32_t *p);
sft_int_t sft_perms_parse(sft_str_t *text);
u_char *sft_perms_format(u_char *p, u_char *last, sft_uint_t perms);
sft_user_regex_t *sft_user_regex_compile(sft_pool_t *pool, sft_str_t *src,
    u_char *errbuf, size_t errlen);
sft_uint_t sft_user_regex_match(sft_user_regex_t *re, sft_str_t *s);


/* "siftpd hash-password", "siftpd user ...": argv starts at the command */
int sft_users_cli(sft_cycle_t *init_cycle, int argc, char *const *argv);


extern u_char        sft_users_error[512];   /* the last parse error */
extern sft_uint_t    sft_users_missing;
extern sft_module_t  sft_users_module;


#endif /* _SFT_USERS_H_INCLUDED_ */
