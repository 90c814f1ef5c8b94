/*
 * sftp_attrs.c -- libFuzzer target for the SFTP ATTRS decoder,
 * sft_sftp_get_attrs(): flags, size, uid and gid, permissions, times and
 * extended pairs.  The first input byte picks where the attributes go
 * once decoded, the rest is the ATTRS.  Checked, on the decoder alone:
 * it accepts exactly what the flags ask for when the input holds it,
 * stops at its end (no byte read past it, no byte left of the ATTRS),
 * and returns the values at their offsets.  Then, on a session over a
 * posix storage in a temporary directory (fuzz_sftp.h), the attributes
 * go to SETSTAT of a file or a directory, to FSETSTAT of a file open for
 * writing, or to MKDIR: one STATUS answers; no mode left on disk has the
 * setuid, setgid or sticky bit; a change that succeeded left the
 * permission bits, the mtime (at CLOSE for FSETSTAT) and FSETSTAT's size
 * asked for; SETSTAT of a size is refused as unsupported.
 */

#include "fuzz_sftp.h"


#define ATTR_SIZE    SSH_FILEXFER_ATTR_SIZE
#define ATTR_UIDGID  SSH_FILEXFER_ATTR_UIDGID
#define ATTR_PERM    SSH_FILEXFER_ATTR_PERMISSIONS
#define ATTR_TIME    SSH_FILEXFER_ATTR_ACMODTIME
#define ATTR_EXT     SSH_FILEXFER_ATTR_EXTENDED


/* the length of the ATTRS at the start of p, or 0 if it does not fit */

static size_t
attrs_len(const u_char *p, size_t size)
{
    size_t    n, i, k, len;
    uint32_t  flags, count;

    if (size < 4) {
        return 0;
    }

    flags = fuzz_sftp_u32(p);
    n = 4 + ((flags & ATTR_SIZE) ? 8 : 0) + ((flags & ATTR_UIDGID) ? 8 : 0)
        + ((flags & ATTR_PERM) ? 4 : 0) + ((flags & ATTR_TIME) ? 8 : 0);

    if (n > size) {
        return 0;
    }

    if (!(flags & ATTR_EXT)) {
        return n;
    }

    if (size - n < 4) {
        return 0;
    }

    count = fuzz_sftp_u32(p + n);
    n += 4;

    /* each pair: two strings of a 4-byte length and their bytes */

    for (i = 0; i < count; i++) {
        for (k = 0; k < 2; k++) {
            if (size - n < 4) {
                return 0;
            }

            len = fuzz_sftp_u32(p + n);
            n += 4;

            if (size - n < len) {
                return 0;
            }

            n += len;
        }
    }

    return n;
}


/* the decoder alone: what it takes and the values it keeps */

static sft_int_t
decode(const uint8_t *data, size_t size, sft_sftp_request_t *r, size_t *len)
{
    u_char          *copy, *p;
    size_t           n;
    sft_int_t        rc;
    sft_sftp_buf_t   b;

    /* a copy of exactly the input, so a read past it is caught */

    copy = malloc(size ? size : 1);
    assert(copy != NULL);
    memcpy(copy, data, size);

    b.pos = copy;
    b.last = copy + size;

    sft_memzero(r, sizeof(sft_sftp_request_t));
    rc = sft_sftp_get_attrs(&b, r);

    n = attrs_len(data, size);
    assert((rc == SFT_OK) == (n != 0));

    if (rc != SFT_OK) {
        free(copy);
        return rc;
    }

    assert((size_t) (b.pos - copy) == n);
    assert(r->attr_flags == fuzz_sftp_u32(data));

    p = copy + 4;

    if (r->attr_flags & ATTR_SIZE) {
        assert(r->size
               == ((uint64_t) fuzz_sftp_u32(p) << 32 | fuzz_sftp_u32(p + 4)));
        p += 8;
    }

    if (r->attr_flags & ATTR_UIDGID) {
        p += 8;
    }

    if (r->attr_flags & ATTR_PERM) {
        assert(r->perm == fuzz_sftp_u32(p));
        p += 4;
    }

    if (r->attr_flags & ATTR_TIME) {
        assert(r->atime == fuzz_sftp_u32(p)
               && r->mtime == fuzz_sftp_u32(p + 4));
    }

    free(copy);
    *len = n;

    return SFT_OK;
}


/*
 * One request (its type, id and body) as a packet from the channel: its
 * reply, the only one, returned with its length; the output is emptied
 * by the next request.
 */

static u_char *
fuzz_sftp_request(sft_sftp_session_t *s, const u_char *req, size_t len,
    uint32_t *reply_len)
{
    u_char  *p;

    free(s->in);
    s->in = malloc(4 + len);
    assert(s->in != NULL);

    p = sft_sftp_put_u32(s->in, (uint32_t) len);
    sft_memcpy(p, req, len);
    s->in_pos = 0;
    s->in_len = 4 + len;
    s->out_pos = 0;
    s->out_len = 0;

    assert(sft_sftp_process(s) == SFT_OK && s->in_pos == s->in_len);

    p = s->out;
    assert(s->out_len >= 9);
    *reply_len = fuzz_sftp_u32(p);
    assert(*reply_len + 4 == s->out_len);

    return p + 4;
}


/* a request's packet: type, id, a string, the rest */

static u_char *
request(u_char *p, u_char type, uint32_t id, const char *str, size_t len)
{
    *p++ = type;
    p = sft_sftp_put_u32(p, id);

    return sft_sftp_put_string(p, (u_char *) str, len);
}


static uint32_t
status(u_char *reply, uint32_t len, uint32_t id)
{
    assert(len >= 13 && reply[0] == SSH_FXP_STATUS);
    assert(fuzz_sftp_u32(reply + 1) == id);

    return fuzz_sftp_u32(reply + 5);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char              *pkt, *p, *reply, hid[4], op;
    char                 path[128];
    size_t               len;
    uint32_t             rlen, code;
    struct stat          st;
    sft_sftp_request_t   r;
    sft_sftp_session_t   s;

    static const char   *target[] = { "file", "dir", "file", "new" };

    if (size < 1) {
        return 0;
    }

    op = data[0] % 4;

    if (decode(data + 1, size - 1, &r, &len) != SFT_OK) {
        return 0;
    }

    /* the attributes applied, as a client's request sends them */

    fuzz_sftp_reset();
    fuzz_sftp_open(&s, SFT_PERM_ALL);

    pkt = malloc(64 + len);
    assert(pkt != NULL);

    p = pkt;
    *p++ = SSH_FXP_INIT;
    p = sft_sftp_put_u32(p, 3);
    reply = fuzz_sftp_request(&s, pkt, p - pkt, &rlen);
    assert(reply[0] == SSH_FXP_VERSION);

    if (op == 2) {
        p = request(pkt, SSH_FXP_OPEN, 1, "file", 4);
        p = sft_sftp_put_u32(p, SSH_FXF_WRITE);
        p = sft_sftp_put_u32(p, 0);
        reply = fuzz_sftp_request(&s, pkt, p - pkt, &rlen);
        assert(rlen == 13 && reply[0] == SSH_FXP_HANDLE);
        memcpy(hid, reply + 9, 4);

        p = request(pkt, SSH_FXP_FSETSTAT, 2, (char *) hid, 4);

    } else {
        p = request(pkt, op == 3 ? SSH_FXP_MKDIR : SSH_FXP_SETSTAT, 2,
                    target[op], strlen(target[op]));
    }

    p = sft_cpymem(p, data + 1, len);
    reply = fuzz_sftp_request(&s, pkt, p - pkt, &rlen);
    code = status(reply, rlen, 2);

    if (op == 2) {
        p = request(pkt, SSH_FXP_CLOSE, 3, (char *) hid, 4);
        reply = fuzz_sftp_request(&s, pkt, p - pkt, &rlen);
        assert(status(reply, rlen, 3) == SSH_FX_OK || code != SSH_FX_OK);
    }

    if (op < 2 && (r.attr_flags & ATTR_SIZE)) {
        assert(code == SSH_FX_OP_UNSUPPORTED);
    }

    snprintf(path, sizeof(path), "%s/%s", fuzz_sftp_root, target[op]);

    if (lstat(path, &st) == 0) {
        assert((st.st_mode & (S_ISUID|S_ISGID|S_ISVTX)) == 0);
    }

    if (code == SSH_FX_OK && op < 3) {
        assert(lstat(path, &st) == 0);

        if (r.attr_flags & ATTR_PERM) {
            assert((st.st_mode & 0777) == (r.perm & 0777));
        }

        if (r.attr_flags & ATTR_TIME) {
            assert(st.st_mtime == (time_t) r.mtime);
        }

        if (op == 2 && (r.attr_flags & ATTR_SIZE)) {
            assert((uint64_t) st.st_size == r.size);
        }
    }

    free(pkt);
    fuzz_sftp_close(&s);
    fuzz_sftp_check_outside();

    return 0;
}
