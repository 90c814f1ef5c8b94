/*
 * sft_ftp_parse.c -- the strict FTP control line parser: frames one line in
 * the session's fixed buffer, splits it into an upper-cased verb and an
 * argument, and refuses NUL, stray CR, control bytes and malformed verbs.
 *
 * Lines end with CRLF or a bare LF (as vsftpd accepts); the search is
 * sft_find_newline(), so a client sending LF is not left hanging.  Telnet
 * IAC sequences before the verb (clients send IAC IP IAC DM before ABOR)
 * are skipped.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>
#include <sft_asm.h>


/*
 * SFT_OK: s->verb, s->arg and s->next are set (s->pos is not moved);
 * SFT_AGAIN: no whole line yet; SFT_FTP_PARSE_INVALID or _NUL: the line
 * is bad, s->next skips it.
 */

sft_int_t
sft_ftp_parse_command(sft_ftp_session_t *s)
{
    u_char  *p, *nl, *end, *verb;
    size_t   n;

    nl = (u_char *) sft_find_newline(s->pos, s->last - s->pos);

    if (nl == NULL) {
        return SFT_AGAIN;
    }

    s->next = nl + 1;
    end = nl;

    if (end > s->pos && end[-1] == '\r') {
        end--;
    }

    p = s->pos;

    if (end < p) {
        return SFT_FTP_PARSE_INVALID;     /* cannot happen; for the compiler */
    }

    if (memchr(p, '\0', end - p) != NULL) {
        return SFT_FTP_PARSE_NUL;
    }

    /* telnet commands: IAC (0xff) and the command byte after it */

    while (p < end && *p >= 0xf0) {
        p++;
    }

    verb = p;

    while (p < end && *p != ' ') {
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))) {
            return SFT_FTP_PARSE_INVALID;
        }

        *p = (u_char) toupper(*p);
        p++;
    }

    n = p - verb;

    if (n < 3 || n > 4) {
        return SFT_FTP_PARSE_INVALID;
    }

    s->verb.data = verb;
    s->verb.len = n;
    s->arg.len = 0;
    s->arg.data = end;

    if (p == end) {
        return SFT_OK;
    }

    /* one space, then the argument as sent, spaces included */

    p++;

    s->arg.data = p;
    s->arg.len = end - p;

    for ( /* void */ ; p < end; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            return SFT_FTP_PARSE_INVALID;
        }
    }

    return SFT_OK;
}
