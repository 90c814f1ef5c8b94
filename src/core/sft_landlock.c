/*
 * sft_landlock.c -- "landlock on|off;": each worker confines itself with
 * Landlock to the paths the modules declared while the configuration was
 * read, the directories of the log files (reopened after a rotation) and
 * the few system files the libraries read at run time.  A kernel without
 * Landlock gets one notice per configuration, and the workers run as
 * before.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_landlock.h>

#if (SFT_HAVE_LANDLOCK)
#include <linux/landlock.h>
#include <sys/syscall.h>
#endif


typedef struct {
    u_char                *path;        /* NUL-terminated */
    sft_uint_t             access;
} sft_landlock_rule_t;


typedef struct {
    sft_flag_t             enable;
    sft_int_t              abi;         /* 0: no Landlock to apply */
    sft_array_t            rules;       /* sft_landlock_rule_t */
} sft_landlock_conf_t;


static void *sft_landlock_create_conf(sft_cycle_t *cycle);
static char *sft_landlock_init_conf(sft_cycle_t *cycle, void *conf);
static sft_int_t sft_landlock_abi(sft_log_t *log);


static sft_command_t  sft_landlock_commands[] = {

    { sft_string("landlock"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      0,
      offsetof(sft_landlock_conf_t, enable),
      NULL,
      sft_command_doc("on | off", "on",
          "Confine each worker's files with Landlock to the paths its "
          "modules declare: storage roots, log directories, the user "
          "store.") },

    sft_null_command
};


static sft_core_module_t  sft_landlock_module_ctx = {
    sft_string("landlock"),
    sft_landlock_create_conf,
    sft_landlock_init_conf
};


sft_module_t  sft_landlock_module = {
    SFT_MODULE_V1,
    &sft_landlock_module_ctx,              /* module context */
    sft_landlock_commands,                 /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static void *
sft_landlock_create_conf(sft_cycle_t *cycle)
{
    sft_landlock_conf_t  *llcf;

    llcf = sft_pcalloc(cycle->pool, sizeof(sft_landlock_conf_t));
    if (llcf == NULL) {
        return NULL;
    }

    if (sft_array_init(&llcf->rules, cycle->pool, 8,
                       sizeof(sft_landlock_rule_t))
        != SFT_OK)
    {
        return NULL;
    }

    llcf->enable = SFT_CONF_UNSET;

    return llcf;
}


sft_int_t
sft_landlock_allow(sft_cycle_t *cycle, sft_str_t *path, sft_uint_t access)
{
    sft_uint_t            i;
    sft_landlock_conf_t  *llcf;
    sft_landlock_rule_t  *rule;

    llcf = (sft_landlock_conf_t *) sft_get_conf(cycle->conf_ctx,
                                                sft_landlock_module);

    /* one rule a path, whichever modules declare it */

    rule = llcf->rules.elts;

    for (i = 0; i < llcf->rules.nelts; i++) {
        if (sft_strlen(rule[i].path) == path->len
            && sft_strncmp(rule[i].path, path->data, path->len) == 0)
        {
            rule[i].access |= access;

            if (!(access & SFT_LANDLOCK_OPTIONAL)) {
                rule[i].access &= ~SFT_LANDLOCK_OPTIONAL;
            }

            return SFT_OK;
        }
    }

    rule = sft_array_push(&llcf->rules);
    if (rule == NULL) {
        return SFT_ERROR;
    }

    rule->path = sft_pnalloc(cycle->pool, path->len + 1);
    if (rule->path == NULL) {
        return SFT_ERROR;
    }

    *sft_cpymem(rule->path, path->data, path->len) = '\0';
    rule->access = access;

    return SFT_OK;
}


static char *
sft_landlock_init_conf(sft_cycle_t *cycle, void *conf)
{
    sft_landlock_conf_t  *llcf = conf;

    sft_conf_init_value(llcf->enable, 1);

    llcf->abi = 0;

    if (sft_signaller) {
        return SFT_CONF_OK;
    }

    if (!llcf->enable) {
        sft_log_error(SFT_LOG_WARN, cycle->log, 0,
                      "\"landlock off\": workers may open any file their "
                      "user may, a weaker confinement");
        return SFT_CONF_OK;
    }

    llcf->abi = sft_landlock_abi(cycle->log);

    return SFT_CONF_OK;
}


#if (SFT_HAVE_LANDLOCK)


/* the rights of ABI 1, the later ones, those a file (not a directory) takes */

#define SFT_LANDLOCK_ABI1_FS     ((LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1)

#define SFT_LANDLOCK_REFER       (1ULL << 13)
#define SFT_LANDLOCK_TRUNCATE    (1ULL << 14)
#define SFT_LANDLOCK_IOCTL_DEV   (1ULL << 15)

#define SFT_LANDLOCK_FILE_FS     (LANDLOCK_ACCESS_FS_EXECUTE                 \
                                  | LANDLOCK_ACCESS_FS_WRITE_FILE            \
                                  | LANDLOCK_ACCESS_FS_READ_FILE             \
                                  | SFT_LANDLOCK_TRUNCATE                    \
                                  | SFT_LANDLOCK_IOCTL_DEV)


typedef struct {
    int                    fd;
    uint64_t               handled;     /* the rights the ABI knows */
    sft_uint_t             rules;
    sft_log_t             *log;
} sft_landlock_ruleset_t;


/*
 * Read by libraries in a worker, found with strace on the workers of the
 * test suite: glibc's localtime() looks at the zone file again; the
 * sanitizers read the process's own maps (LeakSanitizer at exit, which
 * fails without them) and its executable, for the names in a report.
 */

static const struct {
    const char  *path;
    sft_uint_t   access;
} sft_landlock_system[] = {
    { "/etc/localtime", SFT_LANDLOCK_READ },
#if (SFT_SANITIZERS)
    { "/proc/self", SFT_LANDLOCK_READ },
    { "/proc/self/exe", SFT_LANDLOCK_READ },
#endif
};


static sft_int_t sft_landlock_add(sft_landlock_ruleset_t *rs,
    const u_char *path, size_t len, sft_uint_t access);
static uint64_t sft_landlock_rights(sft_uint_t access);


static sft_int_t
sft_landlock_abi(sft_log_t *log)
{
    long  abi;

    abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
                  LANDLOCK_CREATE_RULESET_VERSION);

    if (abi == -1) {
        sft_log_error(SFT_LOG_NOTICE, log, sft_errno,
                      "this kernel has no Landlock, workers are not "
                      "confined to their paths");
        return 0;
    }

    /* ABI 1 refuses every rename and link across directories */

    if (abi < 2) {
        sft_log_error(SFT_LOG_NOTICE, log, 0,
                      "this kernel's Landlock (ABI %ld) cannot allow "
                      "renames across directories, workers are not "
                      "confined to their paths", abi);
        return 0;
    }

    return abi;
}


sft_int_t
sft_landlock_apply(sft_cycle_t *cycle)
{
    sft_uint_t                     i;
    sft_log_file_t               **files;
    sft_landlock_conf_t           *llcf;
    sft_landlock_rule_t           *rule;
    sft_landlock_ruleset_t         rs;
    struct landlock_ruleset_attr   attr;

    llcf = (sft_landlock_conf_t *) sft_get_conf(cycle->conf_ctx,
                                                sft_landlock_module);

    if (!llcf->enable || llcf->abi == 0) {
        return SFT_OK;
    }

    rs.handled = SFT_LANDLOCK_ABI1_FS | SFT_LANDLOCK_REFER;

    if (llcf->abi >= 3) {
        rs.handled |= SFT_LANDLOCK_TRUNCATE;
    }

    if (llcf->abi >= 5) {
        rs.handled |= SFT_LANDLOCK_IOCTL_DEV;
    }

    rs.rules = 0;
    rs.log = cycle->log;

    sft_memzero(&attr, sizeof(struct landlock_ruleset_attr));
    attr.handled_access_fs = rs.handled;

    rs.fd = (int) syscall(SYS_landlock_create_ruleset, &attr,
                          sizeof(struct landlock_ruleset_attr), 0);

    if (rs.fd == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "landlock_create_ruleset() failed");
        return SFT_ERROR;
    }

    rule = llcf->rules.elts;

    for (i = 0; i < llcf->rules.nelts; i++) {
        if (sft_landlock_add(&rs, rule[i].path, sft_strlen(rule[i].path),
                             rule[i].access)
            != SFT_OK)
        {
            goto failed;
        }
    }

    for (i = 0; i < sft_nelems(sft_landlock_system); i++) {
        if (sft_landlock_add(&rs,
                             (const u_char *) sft_landlock_system[i].path,
                             strlen(sft_landlock_system[i].path),
                             sft_landlock_system[i].access)
            != SFT_OK)
        {
            goto failed;
        }
    }

    /* the master reopens the logs first; a worker writes, or makes one */

    if (!sft_str_eq(&cycle->log_file.name, "stderr")
        && sft_landlock_add(&rs, cycle->log_file.name.data,
                            cycle->log_file.name.len,
                            SFT_LANDLOCK_WRITE|SFT_LANDLOCK_CREATE
                            |SFT_LANDLOCK_PARENT)
           != SFT_OK)
    {
        goto failed;
    }

    files = cycle->open_files.elts;

    for (i = 0; i < cycle->open_files.nelts; i++) {
        if (sft_landlock_add(&rs, files[i]->name.data, files[i]->name.len,
                             SFT_LANDLOCK_WRITE|SFT_LANDLOCK_CREATE
                             |SFT_LANDLOCK_PARENT)
            != SFT_OK)
        {
            goto failed;
        }
    }

    if (syscall(SYS_landlock_restrict_self, rs.fd, 0) == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "landlock_restrict_self() failed");
        goto failed;
    }

    close(rs.fd);

    sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                  "landlock: confined to %lu paths, ABI %ld",
                  (unsigned long) rs.rules, (long) llcf->abi);

    return SFT_OK;

failed:

    close(rs.fd);

    return SFT_ERROR;
}


/*
 * A path the worker cannot open now (a missing one) gets no rule: the
 * worker cannot reach it afterwards, which the notice says, unless it is
 * optional and absent.  A symbolic link is followed: the rule is on what
 * it leads to (/etc/resolv.conf into /run).
 */

static sft_int_t
sft_landlock_add(sft_landlock_ruleset_t *rs, const u_char *path, size_t len,
    sft_uint_t access)
{
    int                                 fd;
    char                                name[PATH_MAX];
    struct stat                         sb;
    struct landlock_path_beneath_attr   pb;

    if (access & SFT_LANDLOCK_PARENT) {
        while (len > 0 && path[len - 1] != '/') {
            len--;
        }

        if (len > 1) {
            len--;
        }

        if (len == 0) {
            path = (const u_char *) ".";
            len = 1;
        }
    }

    if (len >= PATH_MAX) {
        sft_log_error(SFT_LOG_NOTICE, rs->log, 0,
                      "landlock: \"%.*s\" is too long, workers cannot "
                      "reach it", (int) len, (const char *) path);
        return SFT_OK;
    }

    *sft_cpymem(name, path, len) = '\0';

    fd = open(name, O_PATH|O_CLOEXEC);

    if (fd == -1 && (access & SFT_LANDLOCK_OPTIONAL) && sft_errno == ENOENT) {
        return SFT_OK;
    }

    if (fd == -1) {
        sft_log_error(SFT_LOG_NOTICE, rs->log, sft_errno,
                      "landlock: open(\"%s\") failed, workers cannot "
                      "reach it", name);
        return SFT_OK;
    }

    sft_memzero(&pb, sizeof(struct landlock_path_beneath_attr));
    pb.parent_fd = fd;
    pb.allowed_access = sft_landlock_rights(access) & rs->handled;

    if (fstat(fd, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        pb.allowed_access &= SFT_LANDLOCK_FILE_FS;
    }

    if (syscall(SYS_landlock_add_rule, rs->fd, LANDLOCK_RULE_PATH_BENEATH,
                &pb, 0)
        == -1)
    {
        sft_log_error(SFT_LOG_EMERG, rs->log, sft_errno,
                      "landlock_add_rule(\"%s\") failed", name);
        close(fd);
        return SFT_ERROR;
    }

    close(fd);

    rs->rules++;

    return SFT_OK;
}


static uint64_t
sft_landlock_rights(sft_uint_t access)
{
    uint64_t  rights;

    rights = 0;

    if (access & SFT_LANDLOCK_READ) {
        rights |= LANDLOCK_ACCESS_FS_READ_FILE|LANDLOCK_ACCESS_FS_READ_DIR;
    }

    if (access & SFT_LANDLOCK_WRITE) {
        rights |= LANDLOCK_ACCESS_FS_WRITE_FILE|SFT_LANDLOCK_TRUNCATE;
    }

    if (access & SFT_LANDLOCK_CREATE) {
        rights |= LANDLOCK_ACCESS_FS_MAKE_REG|LANDLOCK_ACCESS_FS_MAKE_DIR
                  |LANDLOCK_ACCESS_FS_MAKE_SYM;
    }

    if (access & SFT_LANDLOCK_REMOVE) {
        rights |= LANDLOCK_ACCESS_FS_REMOVE_FILE|LANDLOCK_ACCESS_FS_REMOVE_DIR
                  |SFT_LANDLOCK_REFER;
    }

    return rights;
}


#else /* !SFT_HAVE_LANDLOCK */


static sft_int_t
sft_landlock_abi(sft_log_t *log)
{
    sft_log_error(SFT_LOG_NOTICE, log, 0,
                  "siftpd was built without Landlock, workers are not "
                  "confined to their paths");

    return 0;
}


sft_int_t
sft_landlock_apply(sft_cycle_t *cycle)
{
    (void) cycle;

    return SFT_OK;
}


#endif
