/*
 * sft_xfer_eol.c -- the line-ending filter of text transfers (FTP TYPE A):
 * LF to CRLF on the way out and CRLF to LF on the way in, chunk by chunk,
 * with a CRLF split across two chunks put back together.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_asm.h>
#include <sft_xfer_eol.h>


/*
 * Downloads: LF becomes CRLF.  Converts from in while out has room
 * (a LF is never split), sets *used, and returns the bytes in out.
 */

size_t
sft_xfer_eol_to_crlf(const u_char *in, size_t len, size_t *used,
    u_char *out, size_t size)
{
    size_t         n;
    u_char        *o, *oend;
    const u_char  *p, *end, *nl;

    p = in;
    end = in + len;
    o = out;
    oend = out + size;

    while (p < end && o < oend) {
        nl = sft_find_newline(p, end - p);

        n = (nl ? nl : end) - p;

        if (n > (size_t) (oend - o)) {
            n = oend - o;
        }

        o = sft_cpymem(o, p, n);
        p += n;

        if (p != nl) {
            continue;
        }

        if (oend - o < 2) {
            break;
        }

        *o++ = '\r';
        *o++ = '\n';
        p++;
    }

    *used = p - in;

    return o - out;
}


/*
 * Uploads: CRLF becomes LF, a lone CR stays.  The asm kernel
 * sft_find_crlf() finds each pair; the runs between them are moved as
 * they are.  A CR at the end of src is held in *cr until the next call
 * (or the end of the upload) shows what follows it.  dst may be src, or
 * one byte before it when *cr is set; returns the bytes written at dst.
 */

size_t
sft_xfer_eol_from_crlf(u_char *dst, const u_char *src, size_t len,
    sft_uint_t *cr)
{
    size_t         n;
    u_char        *o;
    const u_char  *p, *end, *c;

    if (len == 0) {
        return 0;
    }

    o = dst;
    p = src;
    end = src + len;

    if (*cr) {
        *cr = 0;

        if (*p != '\n') {
            *o++ = '\r';
        }
    }

    while (p < end) {
        c = sft_find_crlf(p, end - p);

        n = (c ? c : end) - p;

        if (o != p) {
            memmove(o, p, n);
        }

        o += n;
        p += n;

        if (c == NULL) {
            break;
        }

        *o++ = '\n';
        p += 2;
    }

    if (end[-1] == '\r') {
        /* the last CR was moved as data: its LF may be in the next read */
        o--;
        *cr = 1;
    }

    return o - dst;
}
