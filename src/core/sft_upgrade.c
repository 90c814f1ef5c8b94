/*
 * sft_upgrade.c -- the live binary upgrade (USR2, "siftpd -s upgrade"): the
 * master renames its pid file to NAME.oldbin and starts the binary it was
 * started from, with the same arguments, its listening sockets left open
 * across execve() and named in the SIFTPD environment variable ("5;6;7;").
 * The new master adopts them, and its cycle takes them over by address as
 * a reload takes over the old cycle's.  If the new binary exits, the old
 * master gets its pid file back and serves on.
 */

#include <sft_config.h>
#include <sft_core.h>


#define SFT_UPGRADE_ENV      "SIFTPD"
#define SFT_UPGRADE_OLDBIN   ".oldbin"


extern char **environ;

pid_t       sft_new_binary;
sft_uint_t  sft_inherited;

static char   **sft_upgrade_argv;
static char     sft_upgrade_path[PATH_MAX];
static char     sft_upgrade_pid[PATH_MAX];       /* the name while running */
static char     sft_upgrade_oldbin[PATH_MAX];    /* and NAME.oldbin */

static char **sft_upgrade_env(sft_cycle_t *cycle);
static sft_int_t sft_upgrade_adopt(sft_cycle_t *cycle, int fd);


/*
 * argv[] is already the heap copy setproctitle made.  The path is made
 * absolute now: the binary at that path is what an upgrade runs, whatever
 * replaced it since.  Without one (no working directory) an upgrade is
 * refused with a log line; nothing else needs it.
 */

void
sft_upgrade_init(char **argv)
{
    u_char   *p, *last;
    ssize_t   n;
    char      cwd[PATH_MAX];

    sft_upgrade_argv = argv;
    p = (u_char *) sft_upgrade_path;
    last = p + sizeof(sft_upgrade_path);

    if (argv[0] == NULL) {
        return;
    }

    if (strchr(argv[0], '/') == NULL) {

        /* found on $PATH: the file it was found as */

        n = readlink("/proc/self/exe", sft_upgrade_path,
                     sizeof(sft_upgrade_path) - 1);
        sft_upgrade_path[n > 0 ? n : 0] = '\0';
        return;
    }

    if (argv[0][0] != '/') {
        if (getcwd(cwd, sizeof(cwd)) == NULL) {
            return;
        }

        p = sft_slprintf(p, last, "%s/", cwd);
    }

    (void) sft_slprintf(p, last, "%s", argv[0]);
}


/* the environment less an earlier SIFTPD, with ours listing the listeners */

static char **
sft_upgrade_env(sft_cycle_t *cycle)
{
    size_t            n, len;
    u_char           *p, *last;
    char            **env;
    sft_uint_t        i, k;
    sft_listening_t  *ls;

    for (n = 0; environ[n]; n++) { /* void */ }

    ls = cycle->listening.elts;
    len = sizeof(SFT_UPGRADE_ENV "=")
          + cycle->listening.nelts * sizeof("2147483647;");

    env = sft_alloc((n + 2) * sizeof(char *) + len, cycle->log);
    if (env == NULL) {
        return NULL;
    }

    p = (u_char *) &env[n + 2];
    last = p + len;

    k = 0;
    env[k++] = (char *) p;
    *p = '\0';

    p = sft_slprintf(p, last, "%s=", SFT_UPGRADE_ENV);

    for (i = 0; i < cycle->listening.nelts; i++) {
        if (ls[i].fd != SFT_INVALID_FILE) {
            p = sft_slprintf(p, last, "%d;", ls[i].fd);
        }
    }

    for (i = 0; i < n; i++) {
        if (sft_strncmp(environ[i], SFT_UPGRADE_ENV "=",
                        sizeof(SFT_UPGRADE_ENV)) != 0)
        {
            env[k++] = environ[i];
        }
    }

    env[k] = NULL;

    return env;
}


/* the new master's pid, or 0 when the old one serves on alone */

pid_t
sft_exec_new_binary(sft_cycle_t *cycle)
{
    pid_t             pid;
    char            **env;
    sft_uint_t        i;
    sft_listening_t  *ls;
    sft_core_conf_t  *ccf;

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    if (sft_upgrade_path[0] == '\0' || ccf->pid.len == 0
        || ccf->pid.len + sizeof(SFT_UPGRADE_OLDBIN) > PATH_MAX)
    {
        sft_log_error(SFT_LOG_ERR, cycle->log, 0,
                      "binary upgrade needs the binary's path and a pid "
                      "file, the old binary serves on");
        return 0;
    }

    env = sft_upgrade_env(cycle);
    if (env == NULL) {
        return 0;
    }

    (void) sft_slprintf((u_char *) sft_upgrade_pid,
                        (u_char *) sft_upgrade_pid + PATH_MAX, "%.*s",
                        SFT_STR_FMT(&ccf->pid));
    (void) sft_slprintf((u_char *) sft_upgrade_oldbin,
                        (u_char *) sft_upgrade_oldbin + PATH_MAX, "%s%s",
                        sft_upgrade_pid, SFT_UPGRADE_OLDBIN);

    if (rename(sft_upgrade_pid, sft_upgrade_oldbin) == -1) {
        sft_log_error(SFT_LOG_ERR, cycle->log, sft_errno,
                      "rename() \"%s\" to \"%s\" failed, the old binary "
                      "serves on", sft_upgrade_pid, sft_upgrade_oldbin);
        sft_free(env);
        return 0;
    }

    pid = fork();

    if (pid == 0) {
        sft_pid = getpid();

        /* only the listeners stay open across execve() */

        ls = cycle->listening.elts;

        for (i = 0; i < cycle->listening.nelts; i++) {
            if (ls[i].fd != SFT_INVALID_FILE) {
                (void) fcntl(ls[i].fd, F_SETFD, 0);
            }
        }

        execve(sft_upgrade_path, sft_upgrade_argv, env);

        sft_log_error(SFT_LOG_ERR, cycle->log, sft_errno,
                      "execve() \"%s\" failed", sft_upgrade_path);
        _exit(1);
    }

    sft_free(env);

    if (pid == -1) {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "fork() failed while starting the new binary");
        (void) rename(sft_upgrade_oldbin, sft_upgrade_pid);
        return 0;
    }

    sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                  "start new binary %d \"%s\", pid file renamed to \"%s\"",
                  (int) pid, sft_upgrade_path, sft_upgrade_oldbin);

    return pid;
}


/* the new master is gone (it failed to start, or was stopped): roll back */

void
sft_upgrade_exited(sft_cycle_t *cycle, int status)
{
    pid_t  pid;

    pid = sft_new_binary;
    sft_new_binary = 0;

    if (rename(sft_upgrade_oldbin, sft_upgrade_pid) == -1) {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "new binary %d exited, and rename() \"%s\" back to "
                      "\"%s\" failed", (int) pid, sft_upgrade_oldbin,
                      sft_upgrade_pid);
        return;
    }

    if (WIFSIGNALED(status)) {
        sft_log_error(SFT_LOG_ERR, cycle->log, 0,
                      "new binary %d exited on signal %d, the old binary "
                      "serves on with its pid file \"%s\"", (int) pid,
                      WTERMSIG(status), sft_upgrade_pid);
        return;
    }

    sft_log_error(SFT_LOG_ERR, cycle->log, 0,
                  "new binary %d exited with code %d, the old binary "
                  "serves on with its pid file \"%s\"", (int) pid,
                  WEXITSTATUS(status), sft_upgrade_pid);
}


/* while a new binary runs, the old master's pid file is NAME.oldbin */

void
sft_upgrade_delete_pidfile(sft_cycle_t *cycle)
{
    if (sft_new_binary == 0) {
        sft_delete_pidfile(cycle);
        return;
    }

    if (unlink(sft_upgrade_oldbin) == -1) {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "unlink() \"%s\" failed", sft_upgrade_oldbin);
    }
}


/*
 * In the new binary, before the first cycle: the sockets SIFTPD names
 * become listeners of the init cycle, for sft_open_listening_sockets() to
 * take over by address (and close where the configuration does not name
 * them any more).  A number that is no listening socket is skipped.
 */

sft_int_t
sft_add_inherited_sockets(sft_cycle_t *cycle)
{
    u_char  *p, *q, *last;
    char    *inherited;
    int      fd;

    inherited = getenv(SFT_UPGRADE_ENV);

    if (inherited == NULL) {
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_NOTICE, cycle->log, 0,
                  "using inherited sockets from \"%s\"", inherited);

    if (sft_array_init(&cycle->listening, cycle->pool, 4,
                       sizeof(sft_listening_t)) != SFT_OK)
    {
        return SFT_ERROR;
    }

    p = (u_char *) inherited;
    last = p + strlen(inherited);

    while (p < last) {
        q = memchr(p, ';', last - p);

        if (q == NULL) {
            q = last;
        }

        fd = (q - p > 0 && q - p <= 9) ? (int) sft_atoi(p, q - p) : -1;

        if (fd < 0) {
            sft_log_error(SFT_LOG_ERR, cycle->log, 0,
                          "invalid socket number \"%.*s\" in " SFT_UPGRADE_ENV
                          " environment variable, ignoring the rest of "
                          "the variable", (int) (q - p), p);
            break;
        }

        if (sft_upgrade_adopt(cycle, fd) != SFT_OK) {
            return SFT_ERROR;
        }

        p = q + 1;
    }

    if (unsetenv(SFT_UPGRADE_ENV) == -1) {
        sft_log_error(SFT_LOG_ALERT, cycle->log, sft_errno,
                      "unsetenv(\"" SFT_UPGRADE_ENV "\") failed");
    }

    sft_inherited = 1;

    return SFT_OK;
}


static sft_int_t
sft_upgrade_adopt(sft_cycle_t *cycle, int fd)
{
    int               listening;
    size_t            len;
    socklen_t         olen;
    sft_listening_t  *ls;
    u_char            text[INET6_ADDRSTRLEN + sizeof("[]:65535")];

    ls = sft_array_push(&cycle->listening);
    if (ls == NULL) {
        return SFT_ERROR;
    }

    sft_memzero(ls, sizeof(sft_listening_t));

    ls->socklen = sizeof(struct sockaddr_storage);
    olen = sizeof(int);
    listening = 0;

    if (getsockname(fd, (struct sockaddr *) &ls->sockaddr, &ls->socklen)
        == -1
        || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &olen) == -1
        || !listening)
    {
        sft_log_error(SFT_LOG_ERR, cycle->log, sft_errno,
                      "inherited descriptor %d is no listening socket, "
                      "ignored", fd);
        cycle->listening.nelts--;
        return SFT_OK;
    }

    len = sft_sock_ntop((struct sockaddr *) &ls->sockaddr, text,
                        sizeof(text), 1);

    ls->addr_text.data = sft_pnalloc(cycle->pool, len);
    if (ls->addr_text.data == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(ls->addr_text.data, text, len);
    ls->addr_text.len = len;
    ls->fd = fd;
    ls->backlog = -1;
    ls->log = cycle->log;

    /*
     * accept() runs until EAGAIN; and a later upgrade hands on what it
     * means to, nothing more
     */

    if (fcntl(fd, F_SETFL, O_NONBLOCK) == -1
        || fcntl(fd, F_SETFD, FD_CLOEXEC) == -1)
    {
        sft_log_error(SFT_LOG_EMERG, cycle->log, sft_errno,
                      "fcntl() of inherited %.*s failed",
                      SFT_STR_FMT(&ls->addr_text));
        return SFT_ERROR;
    }

    return SFT_OK;
}
