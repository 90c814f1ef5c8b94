/*
 * sft_log.c -- formats and writes error log lines:
 * "2026/01/01 12:00:00 [error] 123#0: *5 message (errno: text), client: ..."
 */

#include <sft_config.h>
#include <sft_core.h>


const char  *sft_log_levels[] = {
    "stderr", "emerg", "alert", "crit", "error", "warn", "notice", "info",
    "debug", NULL
};

/* the worker number shown after the pid; set in each worker */
sft_uint_t  sft_log_pid_slot;

static sft_log_file_t  sft_log_stderr_file = { STDERR_FILENO,
                                               sft_string("stderr"), 1 };
static sft_log_t       sft_log_boot = { SFT_LOG_NOTICE, &sft_log_stderr_file,
                                        0, NULL, NULL, NULL };


sft_log_t *
sft_log_init(void)
{
    return &sft_log_boot;
}


void
sft_log_write(sft_fd_t fd, u_char *buf, size_t len)
{
    ssize_t  n;

    while (len) {
        n = write(fd, buf, len);

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            return;
        }

        buf += n;
        len -= n;
    }
}


void
sft_log_error_core(sft_uint_t level, sft_log_t *log, sft_err_t err,
    const char *fmt, ...)
{
    u_char      *p, *last;
    va_list      args;
    time_t       now;
    struct tm    tm;
    u_char       errstr[SFT_MAX_ERROR_STR];

    last = errstr + SFT_MAX_ERROR_STR - 1;

    if (log->file->plain) {
        p = sft_slprintf(errstr, last, "siftpd: [%s] ", sft_log_levels[level]);

    } else {
        now = time(NULL);
        localtime_r(&now, &tm);

        p = sft_slprintf(errstr, last,
                         "%04d/%02d/%02d %02d:%02d:%02d [%s] %d#%lu: ",
                         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec,
                         sft_log_levels[level], (int) sft_pid,
                         (unsigned long) sft_log_pid_slot);
    }

    if (log->connection) {
        p = sft_slprintf(p, last, "*%lu ", (unsigned long) log->connection);
    }

    va_start(args, fmt);
    p = sft_vslprintf(p, last, fmt, args);
    va_end(args);

    if (err) {
        p = sft_slprintf(p, last, " (%d: %s)", err, strerror(err));
    }

    if (level != SFT_LOG_DEBUG && log->handler) {
        p = log->handler(log, p, last - p);
    }

    if (log->action && level != SFT_LOG_DEBUG) {
        p = sft_slprintf(p, last, " while %s", log->action);
    }

    *p++ = '\n';

    sft_log_write(log->file->fd, errstr, p - errstr);

    if (level <= SFT_LOG_EMERG && log->file->fd != STDERR_FILENO
        && isatty(STDERR_FILENO))
    {
        sft_log_write(STDERR_FILENO, errstr, p - errstr);
    }
}


void
sft_log_stderr(sft_err_t err, const char *fmt, ...)
{
    u_char   *p, *last;
    va_list   args;
    u_char    errstr[SFT_MAX_ERROR_STR];

    last = errstr + SFT_MAX_ERROR_STR - 1;

    p = sft_cpymem(errstr, "siftpd: ", 8);

    va_start(args, fmt);
    p = sft_vslprintf(p, last, fmt, args);
    va_end(args);

    if (err) {
        p = sft_slprintf(p, last, " (%d: %s)", err, strerror(err));
    }

    *p++ = '\n';

    sft_log_write(STDERR_FILENO, errstr, p - errstr);
}


sft_int_t
sft_log_parse_level(sft_str_t *name)
{
    sft_uint_t  n;

    for (n = 1; sft_log_levels[n]; n++) {
        if (name->len == strlen(sft_log_levels[n])
            && sft_strncmp(name->data, sft_log_levels[n], name->len) == 0)
        {
            return n;
        }
    }

    return SFT_ERROR;
}


/* (re)opens a log file in append mode; the old descriptor is closed last */

sft_int_t
sft_log_open_file(sft_log_file_t *file, sft_log_t *log)
{
    sft_fd_t  fd;

    if (sft_str_eq(&file->name, "stderr")) {
        file->fd = STDERR_FILENO;
        return SFT_OK;
    }

    fd = open((char *) file->name.data,
              O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

    if (fd == -1) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno,
                      "open() \"%s\" failed", file->name.data);
        return SFT_ERROR;
    }

    if (file->fd != STDERR_FILENO && file->fd != SFT_INVALID_FILE) {
        close(file->fd);
    }

    file->fd = fd;

    return SFT_OK;
}
