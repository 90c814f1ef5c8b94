/*
 * sft_http_parse.c -- the request head: lines framed in the connection's
 * buffer, across as many reads as they take, and strict parsers for the
 * HTTP/1.x request line and each header line.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>
#include <sft_asm.h>


static sft_int_t sft_http_process_header(sft_http_request_t *r);


#define SFT_HTTP_MAX_EMPTY_LINES   4


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


/*
 * Frames the request line and the header lines in r->hc's buffer from
 * r->scan on, and checks the head as a whole once its empty line is in:
 * SFT_OK (a body starts at r->scan, content_length says how long it is),
 * SFT_AGAIN for more bytes, or the HTTP status to reply with.  A call goes
 * on where the last one stopped; it needs of the connection only its
 * buffer, its limits and its log.
 */

sft_int_t
sft_http_parse_request(sft_http_request_t *r)
{
    u_char                 *nl, *end;
    sft_int_t               rc;
    sft_http_connection_t  *hc;

    hc = r->hc;

    while (!r->header_done) {

        nl = (u_char *) sft_find_newline(r->scan, hc->last - r->scan);

        if (nl == NULL) {
            if (hc->last == hc->end) {
                sft_log_error(SFT_LOG_INFO, r->connection->log, 0,
                              "client sent too long %s",
                              r->lines ? "header" : "URI");
                return r->lines ? 431 : 414;
            }

            return SFT_AGAIN;
        }

        end = nl;

        if (end > r->scan && end[-1] == '\r') {
            end--;
        }

        if (r->lines == 0) {

            if (end == r->scan) {
                /* empty lines before a request are tolerated, a few */

                if (++r->body_received > SFT_HTTP_MAX_EMPTY_LINES) {
                    return 400;
                }

                r->scan = nl + 1;
                hc->pos = r->scan;
                continue;
            }

            rc = sft_http_parse_request_line(r, r->scan, end);

            if (rc == SFT_HTTP_PARSE_INVALID_VERSION) {
                sft_log_error(SFT_LOG_INFO, r->connection->log, 0,
                              "client sent unsupported HTTP version");
                return 505;
            }

            if (rc != SFT_OK) {
                sft_log_error(SFT_LOG_INFO, r->connection->log, 0,
                              "client sent invalid request line");
                return 400;
            }

            r->body_received = 0;
            r->keepalive = (r->http_minor >= 1);

        } else if (end == r->scan) {
            r->header_done = 1;

        } else {
            if (*r->scan == ' ' || *r->scan == '\t') {
                sft_log_error(SFT_LOG_INFO, r->connection->log, 0,
                              "client sent obsolete line folding");
                return 400;
            }

            if (sft_http_parse_header_line(r, r->scan, end) != SFT_OK) {
                sft_log_error(SFT_LOG_INFO, r->connection->log, 0,
                              "client sent invalid header line");
                return 400;
            }

            rc = sft_http_process_header(r);
            if (rc != SFT_OK) {
                return rc;
            }
        }

        r->lines++;
        r->scan = nl + 1;
    }

    /* the head is in: whatever its Content-Length says */

    if (r->http_minor >= 1 && r->host.data == NULL) {
        sft_log_error(SFT_LOG_INFO, r->connection->log, 0,
                      "client sent HTTP/1.1 request without \"Host\"");
        return 400;
    }

    if (r->chunked) {
        return 501;
    }

    if (!r->have_length) {
        r->content_length = 0;
    }

    hc->pos = r->scan;

    return SFT_OK;
}


static sft_int_t
sft_http_process_header(sft_http_request_t *r)
{
    sft_int_t   n;
    sft_str_t  *name, *value;

    name = &r->header_name;
    value = &r->header_value;

    if (sft_str_caseeq(name, "host")) {
        if (r->host.data) {
            return 400;
        }
        r->host = *value;

    } else if (sft_str_caseeq(name, "content-length")) {
        n = sft_atoi(value->data, value->len);

        if (n == SFT_ERROR || (r->have_length && n != r->content_length)) {
            sft_log_error(SFT_LOG_INFO, r->connection->log, 0,
                          "client sent invalid \"Content-Length\"");
            return 400;
        }

        if ((size_t) n > r->hc->cscf->client_max_body_size) {
            sft_log_error(SFT_LOG_INFO, r->connection->log, 0,
                          "client intended to send too large body: "
                          "%ld bytes", (long) n);
            return 413;
        }

        r->have_length = 1;
        r->content_length = n;

    } else if (sft_str_caseeq(name, "transfer-encoding")) {
        r->chunked = 1;

    } else if (sft_str_caseeq(name, "connection")) {
        if (sft_str_caseeq(value, "close")) {
            r->keepalive = 0;

        } else if (sft_str_caseeq(value, "keep-alive")) {
            r->keepalive = 1;
        }

    } else if (sft_str_caseeq(name, "authorization")) {
        r->authorization = *value;

    } else if (sft_str_caseeq(name, "content-type")) {
        r->content_type = *value;

    } else if (sft_str_caseeq(name, "if-none-match")) {
        r->if_none_match = *value;

    } else if (sft_str_caseeq(name, "if-match")) {
        r->if_match = *value;
    }

    return SFT_OK;
}
