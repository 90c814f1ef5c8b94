/*
 * sft_s3_creds.c -- static S3 credentials: from a file that must be
 * private to its owner (read once, when the configuration is applied,
 * never on the event loop), or from the environment; and when the
 * providers of keys that expire (IMDS, STS) fetch them again.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_creds.h>


static sft_int_t sft_s3_creds_line(u_char *p, u_char *end, sft_pool_t *pool,
    sft_s3_creds_t *creds);
static sft_int_t sft_s3_creds_copy(sft_pool_t *pool, u_char *p, size_t n,
    sft_str_t *s, sft_s3_creds_t *creds);


sft_int_t
sft_s3_creds_file(const char *path, sft_pool_t *pool, sft_log_t *log,
    sft_s3_creds_t *creds)
{
    int          fd;
    u_char      *buf, *p, *eol, *end;
    ssize_t      n;
    struct stat  st;

    sft_memzero(creds, sizeof(sft_s3_creds_t));

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd == -1) {
        sft_log_error(SFT_LOG_EMERG, log, sft_errno,
                      "cannot open S3 credentials file \"%s\"", path);
        return SFT_ERROR;
    }

    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)
        || st.st_size > SFT_S3_CREDS_FILE_MAX)
    {
        sft_log_error(SFT_LOG_EMERG, log, 0,
                      "S3 credentials file \"%s\" is not a regular file "
                      "of at most %d bytes", path, SFT_S3_CREDS_FILE_MAX);
        close(fd);
        return SFT_ERROR;
    }

    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        sft_log_error(SFT_LOG_EMERG, log, 0,
                      "S3 credentials file \"%s\" is open to group or "
                      "others (mode %04o): chmod 600 it", path,
                      (unsigned) (st.st_mode & 07777));
        close(fd);
        return SFT_ERROR;
    }

    buf = sft_pnalloc(pool, st.st_size + 1);
    if (buf == NULL) {
        close(fd);
        return SFT_ERROR;
    }

    n = read(fd, buf, st.st_size + 1);
    close(fd);

    if (n < 0 || n > st.st_size) {
        sft_log_error(SFT_LOG_EMERG, log, n < 0 ? sft_errno : 0,
                      "cannot read S3 credentials file \"%s\"", path);
        return SFT_ERROR;
    }

    end = buf + n;

    for (p = buf; p < end; p = eol + 1) {
        eol = memchr(p, '\n', end - p);
        if (eol == NULL) {
            eol = end;
        }

        if (sft_s3_creds_line(p, eol, pool, creds) != SFT_OK) {
            sft_log_error(SFT_LOG_EMERG, log, 0,
                          "S3 credentials file \"%s\": a line is not "
                          "\"name = value\"", path);
            sft_explicit_memzero(buf, n);
            return SFT_ERROR;
        }
    }

    sft_explicit_memzero(buf, n);

    if (creds->access_key.len == 0 || creds->secret_key.len == 0) {
        sft_log_error(SFT_LOG_EMERG, log, 0,
                      "S3 credentials file \"%s\" lacks aws_access_key_id "
                      "or aws_secret_access_key", path);
        return SFT_ERROR;
    }

    return SFT_OK;
}


static sft_int_t
sft_s3_creds_line(u_char *p, u_char *end, sft_pool_t *pool,
    sft_s3_creds_t *creds)
{
    u_char     *eq, *name_end;
    sft_str_t   name, *to;

    while (p < end && (*p == ' ' || *p == '\t')) {
        p++;
    }

    while (end > p && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t')) {
        end--;
    }

    if (p == end || *p == '#' || *p == ';' || *p == '[') {
        return SFT_OK;
    }

    eq = memchr(p, '=', end - p);
    if (eq == NULL) {
        return SFT_ERROR;
    }

    name_end = eq;

    while (name_end > p && (name_end[-1] == ' ' || name_end[-1] == '\t')) {
        name_end--;
    }

    name.data = p;
    name.len = name_end - p;

    for (p = eq + 1; p < end && (*p == ' ' || *p == '\t'); p++) {
        /* void */
    }

    if (sft_str_eq(&name, "aws_access_key_id")) {
        to = &creds->access_key;

    } else if (sft_str_eq(&name, "aws_secret_access_key")) {
        to = &creds->secret_key;

    } else if (sft_str_eq(&name, "aws_session_token")) {
        to = &creds->session_token;

    } else {
        return SFT_OK;     /* region and the like are the driver's */
    }

    return sft_s3_creds_copy(pool, p, end - p, to, creds);
}


sft_int_t
sft_s3_creds_env(sft_pool_t *pool, sft_s3_creds_t *creds)
{
    char  *id, *secret, *token;

    sft_memzero(creds, sizeof(sft_s3_creds_t));

    id = getenv("AWS_ACCESS_KEY_ID");
    secret = getenv("AWS_SECRET_ACCESS_KEY");
    token = getenv("AWS_SESSION_TOKEN");

    if (id == NULL || secret == NULL || *id == '\0' || *secret == '\0') {
        return SFT_DECLINED;
    }

    if (sft_s3_creds_copy(pool, (u_char *) id, strlen(id),
                          &creds->access_key, creds) != SFT_OK
        || sft_s3_creds_copy(pool, (u_char *) secret, strlen(secret),
                             &creds->secret_key, creds) != SFT_OK
        || (token && *token
            && sft_s3_creds_copy(pool, (u_char *) token, strlen(token),
                                 &creds->session_token, creds) != SFT_OK))
    {
        return SFT_ERROR;
    }

    return SFT_OK;
}


sft_msec_t
sft_s3_creds_refresh_in(time_t expires, time_t now)
{
    time_t  left;

    left = expires - now;

    left = (left > 2 * SFT_S3_CREDS_EARLY) ? left - SFT_S3_CREDS_EARLY
                                           : sft_max(left / 2, 1);

    return (sft_msec_t) left * 1000;
}


/* a secret past what signing takes is refused here, not at each request */

static sft_int_t
sft_s3_creds_copy(sft_pool_t *pool, u_char *p, size_t n, sft_str_t *s,
    sft_s3_creds_t *creds)
{
    if (n == 0 || n > SFT_S3_CREDS_FILE_MAX
        || (s == &creds->secret_key && n > SFT_S3_SECRET_MAX)
        || memchr(p, '\r', n) || memchr(p, '\n', n))
    {
        return SFT_ERROR;
    }

    s->data = sft_pnalloc(pool, n);
    if (s->data == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(s->data, p, n);
    s->len = n;

    return SFT_OK;
}
