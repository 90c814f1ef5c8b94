/*
 * sft_http_parse.c -- strict parsers for one HTTP/1.x request line and one
 * header line, already framed (no CR/LF inside).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>


/* RFC 9110 tchar */
static const u_char  sft_http_tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1,
    ['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1,
    ['`'] = 1, ['|'] = 1, ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1,
    ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1,
    ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1,
    ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,
    ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
    ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1,
    ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1,
    ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1,
};


static const struct {
    const char  *name;
    sft_uint_t   method;
} sft_http_methods[] = {
    { "GET", SFT_HTTP_GET },
    { "HEAD", SFT_HTTP_HEAD },
    { "POST", SFT_HTTP_POST },
    { "PUT", SFT_HTTP_PUT },
    { "DELETE", SFT_HTTP_DELETE },
    { "PATCH", SFT_HTTP_PATCH },
    { "OPTIONS", SFT_HTTP_OPTIONS },
};


sft_int_t
sft_http_parse_request_line(sft_http_request_t *r, u_char *p, u_char *end)
{
    u_char      *start, *q;
    size_t       i;

    /* method */

    start = p;

    while (p < end && *p >= 'A' && *p <= 'Z') {
        p++;
    }

    if (p == start || p - start > 16 || p == end || *p != ' ') {
        return SFT_HTTP_PARSE_INVALID_REQUEST;
    }

    r->method_name.data = start;
    r->method_name.len = p - start;
    r->method = SFT_HTTP_UNKNOWN;

    for (i = 0; i < sft_nelems(sft_http_methods); i++) {
        if (r->method_name.len == strlen(sft_http_methods[i].name)
            && sft_memcmp(start, sft_http_methods[i].name,
                          r->method_name.len) == 0)
        {
            r->method = sft_http_methods[i].method;
            break;
        }
    }

    p++;

    /* request target: origin-form only */

    start = p;

    if (p == end || *p != '/') {
        return SFT_HTTP_PARSE_INVALID_REQUEST;
    }

    while (p < end && *p != ' ') {
        if (*p <= 0x20 || *p == 0x7f) {
            return SFT_HTTP_PARSE_INVALID_REQUEST;
        }
        p++;
    }

    if (p == end) {
        return SFT_HTTP_PARSE_INVALID_REQUEST;   /* HTTP/0.9 is not spoken */
    }

    r->uri.data = start;
    r->uri.len = p - start;

    q = memchr(start, '?', r->uri.len);

    if (q) {
        r->path.data = start;
        r->path.len = q - start;
        r->args.data = q + 1;
        r->args.len = p - q - 1;

    } else {
        r->path = r->uri;
        r->args.len = 0;
        r->args.data = NULL;
    }

    p++;

    /* version */

    if (end - p != 8 || sft_memcmp(p, "HTTP/", 5) != 0
        || p[5] < '0' || p[5] > '9' || p[6] != '.'
        || p[7] < '0' || p[7] > '9')
    {
        return SFT_HTTP_PARSE_INVALID_REQUEST;
    }

    r->http_major = p[5] - '0';
    r->http_minor = p[7] - '0';

    if (r->http_major != 1) {
        return SFT_HTTP_PARSE_INVALID_VERSION;
    }

    return SFT_OK;
}


sft_int_t
sft_http_parse_header_line(sft_http_request_t *r, u_char *p, u_char *end)
{
    u_char  *start, *vend;

    start = p;

    while (p < end && sft_http_tchar[*p]) {
        p++;
    }

    if (p == start || p == end || *p != ':') {
        return SFT_HTTP_PARSE_INVALID_HEADER;
    }

    r->header_name.data = start;
    r->header_name.len = p - start;

    p++;

    while (p < end && (*p == ' ' || *p == '\t')) {
        p++;
    }

    start = p;
    vend = p;

    while (p < end) {
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f) {
            return SFT_HTTP_PARSE_INVALID_HEADER;
        }

        if (*p != ' ' && *p != '\t') {
            vend = p + 1;
        }

        p++;
    }

    r->header_value.data = start;
    r->header_value.len = vend - start;

    return SFT_OK;
}
