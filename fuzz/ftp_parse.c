/*
 * ftp_parse.c -- libFuzzer target for what an FTP client sends before any
 * file is touched: the control line parser over a whole burst of lines,
 * and the PORT and EPRT argument parsers, both on every parsed PORT/EPRT
 * argument and on the raw input.  Checked: a parsed line stays inside the
 * input, its verb is 3-4 upper-case letters, a parsed address is of the
 * family and length the parser claims.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>

#include <assert.h>


static void
check_address(sft_int_t rc, struct sockaddr_storage *sa, socklen_t len,
    sft_uint_t extended)
{
    if (rc == SFT_OK) {
        if (sa->ss_family == AF_INET) {
            assert(len == sizeof(struct sockaddr_in));

        } else {
            assert(extended && sa->ss_family == AF_INET6);
            assert(len == sizeof(struct sockaddr_in6));
        }

        return;
    }

    assert(rc == SFT_ERROR || (extended && rc == SFT_DECLINED));
}


static void
parse_address(u_char *data, size_t size, sft_uint_t extended)
{
    u_char                   *copy;
    sft_int_t                 rc;
    socklen_t                 len;
    struct sockaddr_storage   sa;

    /* a copy of exactly the argument, so a read past it is caught */

    copy = malloc(size ? size : 1);
    assert(copy != NULL);
    memcpy(copy, data, size);

    len = 0;

    if (extended) {
        rc = sft_ftp_parse_eprt(copy, size, &sa, &len);

    } else {
        rc = sft_ftp_parse_port(copy, size, &sa, &len);
    }

    check_address(rc, &sa, len, extended);

    free(copy);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char              *buf, *end;
    size_t               i;
    sft_int_t            rc;
    sft_ftp_session_t    s;

    parse_address((u_char *) data, size, 0);
    parse_address((u_char *) data, size, 1);

    buf = malloc(size ? size : 1);
    assert(buf != NULL);
    memcpy(buf, data, size);
    end = buf + size;

    memset(&s, 0, sizeof(sft_ftp_session_t));
    s.pos = buf;
    s.last = end;

    for ( ;; ) {
        rc = sft_ftp_parse_command(&s);

        if (rc == SFT_AGAIN) {
            break;
        }

        assert(s.next > s.pos && s.next <= end);

        if (rc == SFT_OK) {
            assert(s.verb.len >= 3 && s.verb.len <= 4);
            assert(s.verb.data >= s.pos && s.verb.data + s.verb.len < s.next);

            for (i = 0; i < s.verb.len; i++) {
                assert(s.verb.data[i] >= 'A' && s.verb.data[i] <= 'Z');
            }

            assert(s.arg.data >= s.verb.data + s.verb.len);
            assert(s.arg.data + s.arg.len < s.next);

            for (i = 0; i < s.arg.len; i++) {
                assert(s.arg.data[i] >= 0x20 && s.arg.data[i] != 0x7f);
            }

            if (s.verb.len == 4 && memcmp(s.verb.data, "PORT", 4) == 0) {
                parse_address(s.arg.data, s.arg.len, 0);

            } else if (s.verb.len == 4
                       && memcmp(s.verb.data, "EPRT", 4) == 0)
            {
                parse_address(s.arg.data, s.arg.len, 1);
            }

        } else {
            assert(rc == SFT_FTP_PARSE_INVALID || rc == SFT_FTP_PARSE_NUL);
        }

        s.pos = s.next;
    }

    free(buf);

    return 0;
}
