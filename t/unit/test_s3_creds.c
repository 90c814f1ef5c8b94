/*
 * test_s3_creds.c -- static S3 credentials: a private file is read, a
 * file open to group or others is refused, a file without a secret is
 * refused; the environment's keys are taken when both are set; keys
 * that expire are fetched again 5 minutes before, or halfway.
 */

#include <sft_config.h>
#include <sft_core.h>
#include "sft_tap.h"

#include <sft_s3_creds.h>


static void
put(const char *path, const char *text, mode_t mode)
{
    int  fd;

    unlink(path);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd == -1 || write(fd, text, strlen(text)) != (ssize_t) strlen(text))
    {
        printf("Bail out! cannot write %s\n", path);
        exit(1);
    }

    (void) fchmod(fd, mode);
    close(fd);
}


static sft_uint_t
is(sft_str_t *s, const char *text)
{
    return s->len == strlen(text) && memcmp(s->data, text, s->len) == 0;
}


int
main(void)
{
    char             dir[] = "/tmp/siftpd-test-s3creds-XXXXXX", path[64];
    sft_log_t       *log;
    sft_pool_t      *pool;
    sft_s3_creds_t   c;

    printf("1..11\n");

    log = sft_log_init();
    pool = sft_create_pool(4096, log);

    if (mkdtemp(dir) == NULL) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }

    snprintf(path, sizeof(path), "%s/credentials", dir);

    put(path, "# siftpd's bucket\n[default]\n"
              "aws_access_key_id = AKIDEXAMPLE\r\n"
              "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n"
              "  aws_session_token =  tok/en+=  \n"
              "region = eu-west-3\n", 0600);

    ok(sft_s3_creds_file(path, pool, log, &c) == SFT_OK
       && is(&c.access_key, "AKIDEXAMPLE")
       && is(&c.secret_key, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
       && is(&c.session_token, "tok/en+="),
       "a private file: keys and token, blanks and CR trimmed");

    put(path, "aws_access_key_id = A\naws_secret_access_key = S\n", 0640);
    ok(sft_s3_creds_file(path, pool, log, &c) == SFT_ERROR,
       "readable by its group: refused");

    put(path, "aws_access_key_id = A\naws_secret_access_key = S\n", 0604);
    ok(sft_s3_creds_file(path, pool, log, &c) == SFT_ERROR,
       "readable by others: refused");

    put(path, "aws_access_key_id = A\n", 0600);
    ok(sft_s3_creds_file(path, pool, log, &c) == SFT_ERROR,
       "no secret: refused");

    put(path, "aws_access_key_id A\naws_secret_access_key = S\n", 0600);
    ok(sft_s3_creds_file(path, pool, log, &c) == SFT_ERROR,
       "a line without '=': refused");

    unlink(path);
    ok(sft_s3_creds_file(path, pool, log, &c) == SFT_ERROR,
       "a missing file: refused");

    rmdir(dir);

    unsetenv("AWS_ACCESS_KEY_ID");
    setenv("AWS_SECRET_ACCESS_KEY", "S", 1);
    ok(sft_s3_creds_env(pool, &c) == SFT_DECLINED,
       "environment without the key id: declined");

    setenv("AWS_ACCESS_KEY_ID", "A", 1);
    setenv("AWS_SESSION_TOKEN", "T", 1);
    ok(sft_s3_creds_env(pool, &c) == SFT_OK && is(&c.access_key, "A")
       && is(&c.secret_key, "S") && is(&c.session_token, "T"),
       "environment: key id, secret and token");

    ok(sft_s3_creds_refresh_in(1000 + 3600, 1000) == 3300 * 1000
       && sft_s3_creds_refresh_in(1000 + 601, 1000) == 301 * 1000,
       "keys for an hour: fetched again 5 minutes before they expire");

    ok(sft_s3_creds_refresh_in(1000 + 600, 1000) == 300 * 1000
       && sft_s3_creds_refresh_in(1000 + 4, 1000) == 2 * 1000,
       "keys for 10 minutes or less: fetched again halfway");

    ok(sft_s3_creds_refresh_in(1000 + 1, 1000) == 1000
       && sft_s3_creds_refresh_in(1000 - 5, 1000) == 1000,
       "keys about to expire or expired: fetched again 1 s on");

    sft_destroy_pool(pool);

    return failed ? 1 : 0;
}
