/*
 * sft_sftp_packet.c -- SFTP packets: framed from the channel bytes with a
 * 256 KiB cap, read only through bounds-checked getters (a client's
 * offsets range-checked before any arithmetic), and written by the
 * putters the replies use.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>


/*
 * Every complete packet in the input, while the replies and the requests
 * in flight stay under their limits; SFT_ERROR closes the session.
 */

sft_int_t
sft_sftp_process(sft_sftp_session_t *s)
{
    u_char    *p;
    uint32_t   len;
    sft_int_t  rc;

    while (!s->closed) {

        if (s->inflight >= SFT_SFTP_MAX_INFLIGHT
            || s->out_len - s->out_pos + s->reserved >= SFT_SFTP_OUT_HIGH)
        {
            return SFT_OK;
        }

        if (s->in_len - s->in_pos < 4) {
            return SFT_OK;
        }

        p = s->in + s->in_pos;
        len = ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
              | ((uint32_t) p[2] << 8) | p[3];

        if (len < 5 || len > SFT_SFTP_MAX_PACKET) {
            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "client sent sftp packet of bad length %lu",
                          (unsigned long) len);
            return SFT_ERROR;
        }

        if (s->in_len - s->in_pos - 4 < len
            || sft_sftp_rate_wait(s, p[4]))
        {
            return SFT_OK;
        }

        s->in_pos += 4 + len;

        rc = sft_sftp_dispatch(s, p + 4, len);

        if (rc == SFT_AGAIN) {
            /* no chunk free, or no room in the file yet: parsed again
               when there may be */
            s->in_pos -= 4 + len;
            return SFT_OK;
        }

        if (rc != SFT_OK) {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


/* the getters: each returns SFT_ERROR rather than read past the end */

sft_int_t
sft_sftp_get_u8(sft_sftp_buf_t *b, u_char *v)
{
    if (b->last - b->pos < 1) {
        return SFT_ERROR;
    }

    *v = *b->pos++;

    return SFT_OK;
}


sft_int_t
sft_sftp_get_u32(sft_sftp_buf_t *b, uint32_t *v)
{
    if (b->last - b->pos < 4) {
        return SFT_ERROR;
    }

    *v = ((uint32_t) b->pos[0] << 24) | ((uint32_t) b->pos[1] << 16)
         | ((uint32_t) b->pos[2] << 8) | b->pos[3];
    b->pos += 4;

    return SFT_OK;
}


sft_int_t
sft_sftp_get_u64(sft_sftp_buf_t *b, uint64_t *v)
{
    uint32_t  hi, lo;

    if (sft_sftp_get_u32(b, &hi) != SFT_OK
        || sft_sftp_get_u32(b, &lo) != SFT_OK)
    {
        return SFT_ERROR;
    }

    *v = ((uint64_t) hi << 32) | lo;

    return SFT_OK;
}


sft_int_t
sft_sftp_get_string(sft_sftp_buf_t *b, u_char **data, uint32_t *len)
{
    uint32_t  n;

    if (sft_sftp_get_u32(b, &n) != SFT_OK
        || (size_t) (b->last - b->pos) < n)
    {
        return SFT_ERROR;
    }

    *data = b->pos;
    *len = n;
    b->pos += n;

    return SFT_OK;
}


/* attributes: only what can be applied is kept */

sft_int_t
sft_sftp_get_attrs(sft_sftp_buf_t *b, sft_sftp_request_t *r)
{
    u_char    *d;
    uint32_t   i, n, len, uid, gid;

    if (sft_sftp_get_u32(b, &r->attr_flags) != SFT_OK) {
        return SFT_ERROR;
    }

    if ((r->attr_flags & SSH_FILEXFER_ATTR_SIZE)
        && sft_sftp_get_u64(b, &r->size) != SFT_OK)
    {
        return SFT_ERROR;
    }

    if ((r->attr_flags & SSH_FILEXFER_ATTR_UIDGID)
        && (sft_sftp_get_u32(b, &uid) != SFT_OK
            || sft_sftp_get_u32(b, &gid) != SFT_OK))
    {
        return SFT_ERROR;
    }

    if ((r->attr_flags & SSH_FILEXFER_ATTR_PERMISSIONS)
        && sft_sftp_get_u32(b, &r->perm) != SFT_OK)
    {
        return SFT_ERROR;
    }

    if ((r->attr_flags & SSH_FILEXFER_ATTR_ACMODTIME)
        && (sft_sftp_get_u32(b, &r->atime) != SFT_OK
            || sft_sftp_get_u32(b, &r->mtime) != SFT_OK))
    {
        return SFT_ERROR;
    }

    if (r->attr_flags & SSH_FILEXFER_ATTR_EXTENDED) {
        if (sft_sftp_get_u32(b, &n) != SFT_OK) {
            return SFT_ERROR;
        }

        for (i = 0; i < n; i++) {
            if (sft_sftp_get_string(b, &d, &len) != SFT_OK
                || sft_sftp_get_string(b, &d, &len) != SFT_OK)
            {
                return SFT_ERROR;
            }
        }
    }

    return SFT_OK;
}


/*
 * An offset and a length from the client, before any arithmetic:
 * SFT_DECLINED (and the reply sent) if they pass the largest offset.
 */

sft_int_t
sft_sftp_range(sft_sftp_session_t *s, uint32_t id, uint64_t offset,
    uint64_t len)
{
    if (sft_storage_range_valid(offset, len)) {
        return SFT_OK;
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "client sent an offset out of range: %llu+%llu",
                  (unsigned long long) offset, (unsigned long long) len);
    sft_sftp_status(s, id, SSH_FX_FAILURE, "Offset out of range");

    return SFT_DECLINED;
}


/* the putters: the reply space was reserved for what they write */

u_char *
sft_sftp_put_u32(u_char *p, uint32_t v)
{
    *p++ = (u_char) (v >> 24);
    *p++ = (u_char) (v >> 16);
    *p++ = (u_char) (v >> 8);
    *p++ = (u_char) v;

    return p;
}


u_char *
sft_sftp_put_u64(u_char *p, uint64_t v)
{
    p = sft_sftp_put_u32(p, (uint32_t) (v >> 32));
    return sft_sftp_put_u32(p, (uint32_t) v);
}


u_char *
sft_sftp_put_string(u_char *p, const u_char *s, size_t len)
{
    p = sft_sftp_put_u32(p, (uint32_t) len);
    return sft_cpymem(p, s, len);
}


u_char *
sft_sftp_put_attrs(u_char *p, sft_storage_stat_t *st)
{
    p = sft_sftp_put_u32(p, SSH_FILEXFER_ATTR_SIZE|SSH_FILEXFER_ATTR_UIDGID
                            |SSH_FILEXFER_ATTR_PERMISSIONS
                            |SSH_FILEXFER_ATTR_ACMODTIME);
    p = sft_sftp_put_u64(p, (uint64_t) st->size);
    p = sft_sftp_put_u32(p, st->uid);
    p = sft_sftp_put_u32(p, st->gid);
    p = sft_sftp_put_u32(p, st->mode);
    p = sft_sftp_put_u32(p, (uint32_t) st->atime);
    return sft_sftp_put_u32(p, (uint32_t) st->mtime);
}


/* the length field of a packet written from start, now that it is known */

void
sft_sftp_packet_done(sft_sftp_session_t *s, u_char *start, u_char *end)
{
    (void) sft_sftp_put_u32(start, (uint32_t) (end - start - 4));
    s->out_len += end - start;
}
