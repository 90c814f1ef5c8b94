/*
 * sft_string.c -- bounded formatting and the number, size and time parsers
 * used by configuration setters.
 */

#include <sft_config.h>
#include <sft_core.h>


u_char *
sft_slprintf(u_char *buf, u_char *last, const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = sft_vslprintf(buf, last, fmt, args);
    va_end(args);

    return p;
}


u_char *
sft_vslprintf(u_char *buf, u_char *last, const char *fmt, va_list args)
{
    int     n;
    size_t  room;

    if (buf >= last) {
        return buf;
    }

    room = last - buf;
    n = vsnprintf((char *) buf, room, fmt, args);

    if (n < 0) {
        return buf;
    }

    /* vsnprintf() reserves a byte for its NUL; the result is not terminated */

    return ((size_t) n >= room) ? last - 1 : buf + n;
}


sft_int_t
sft_atoi(u_char *line, size_t n)
{
    sft_int_t  value, cutoff, cutlim;

    if (n == 0) {
        return SFT_ERROR;
    }

    cutoff = SFT_MAX_INT_T_VALUE / 10;
    cutlim = SFT_MAX_INT_T_VALUE % 10;

    for (value = 0; n--; line++) {
        if (*line < '0' || *line > '9') {
            return SFT_ERROR;
        }

        if (value >= cutoff && (value > cutoff || *line - '0' > cutlim)) {
            return SFT_ERROR;
        }

        value = value * 10 + (*line - '0');
    }

    return value;
}


static int64_t
sft_parse_scaled(sft_str_t *line, int64_t max)
{
    u_char     unit;
    size_t     len;
    int64_t    scale;
    sft_int_t  n;

    len = line->len;

    if (len == 0) {
        return SFT_ERROR;
    }

    unit = line->data[len - 1];
    scale = 1;

    switch (unit) {
    case 'K': case 'k': scale = 1024; len--; break;
    case 'M': case 'm': scale = 1024 * 1024; len--; break;
    case 'G': case 'g': scale = 1024 * 1024 * 1024; len--; break;
    default: break;
    }

    n = sft_atoi(line->data, len);

    if (n == SFT_ERROR || n > max / scale) {
        return SFT_ERROR;
    }

    return (int64_t) n * scale;
}


ssize_t
sft_parse_size(sft_str_t *line)
{
    return (ssize_t) sft_parse_scaled(line, SSIZE_MAX);
}


off_t
sft_parse_offset(sft_str_t *line)
{
    return (off_t) sft_parse_scaled(line, INT64_MAX);
}


/*
 * "1h 30m", "300s", "500ms", "5m"; the result is in seconds or milliseconds
 * as is_sec asks; a bare number means that unit.
 */

sft_int_t
sft_parse_time(sft_str_t *line, sft_uint_t is_sec)
{
    u_char     *p, *last;
    int64_t     total, value, scale;

    p = line->data;
    last = p + line->len;
    total = 0;

    if (p == last) {
        return SFT_ERROR;
    }

    while (p < last) {

        if (*p < '0' || *p > '9') {
            return SFT_ERROR;
        }

        value = 0;

        while (p < last && *p >= '0' && *p <= '9') {
            value = value * 10 + (*p++ - '0');

            if (value > INT32_MAX) {
                return SFT_ERROR;
            }
        }

        scale = is_sec ? 1 : 1000;

        if (p < last) {
            switch (*p) {
            case 'y': scale = 365 * 86400; p++; break;
            case 'M': scale = 30 * 86400; p++; break;
            case 'w': scale = 7 * 86400; p++; break;
            case 'd': scale = 86400; p++; break;
            case 'h': scale = 3600; p++; break;
            case 'm':
                if (p + 1 < last && p[1] == 's') {
                    if (is_sec) {
                        return SFT_ERROR;
                    }
                    scale = 0;
                    p += 2;
                    break;
                }
                scale = 60; p++;
                break;
            case 's': scale = 1; p++; break;
            case ' ': break;
            default: return SFT_ERROR;
            }

            if (scale != 0 && !is_sec) {
                scale *= 1000;
            }

            if (scale == 0) {
                scale = 1;
            }
        }

        total += value * scale;

        if (total > INT32_MAX * (int64_t) (is_sec ? 1 : 1000)) {
            return SFT_ERROR;
        }

        while (p < last && *p == ' ') {
            p++;
        }
    }

    return (sft_int_t) total;
}


void
sft_explicit_memzero(void *buf, size_t n)
{
    explicit_bzero(buf, n);
}
