/*
 * http_request.c -- libFuzzer target for the admin HTTP request head
 * parser, fed as a connection feeds it: into a buffer of the configured
 * size, in pieces.  The first input byte picks the buffer size, the second
 * seeds the sizes of the pieces; the rest is what the client sends.  The
 * head is parsed once from as much as fits at once and once piece by piece.
 * Checked: the parser stays inside the bytes received (the buffer is of
 * exactly the configured size), an accepted request has a method, URI,
 * version and headers within the limits, a refusal is an HTTP status, and
 * both runs give the same result.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>

#include <assert.h>

#include "fuzz_log.h"


#define FUZZ_MAX_BODY  4096


typedef struct {
    sft_int_t           rc;
    sft_http_request_t  r;
    u_char             *start;
    u_char             *last;
    u_char             *pos;
} fuzz_result_t;


static const size_t  fuzz_buffer_sizes[] = { 16, 64, 256, 1024 };



int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_log_init(NULL);

    return 0;
}


static void
check_str(sft_str_t *s, fuzz_result_t *res, sft_uint_t token)
{
    size_t  i;

    if (s->data == NULL) {
        assert(s->len == 0);
        return;
    }

    assert(s->data >= res->start && s->data + s->len <= res->r.scan);

    for (i = 0; i < s->len; i++) {
        assert(s->data[i] != '\n' && s->data[i] != '\r'
               && s->data[i] != 0x7f);
        assert(token ? s->data[i] > 0x20 : s->data[i] >= 0x20
                                           || s->data[i] == '\t');
    }
}


static void
check_accepted(fuzz_result_t *res, size_t size)
{
    size_t               i;
    sft_http_request_t  *r;

    r = &res->r;

    assert(r->header_done);
    assert(r->scan > res->start && r->scan <= res->last);
    assert(res->pos == r->scan);

    /* the request line, the headers and the empty line end in "\n" */
    assert(r->scan[-1] == '\n');
    assert(r->lines >= 2 && r->lines <= (size_t) (r->scan - res->start) / 2);

    assert(r->method_name.len >= 1 && r->method_name.len <= 16);

    for (i = 0; i < r->method_name.len; i++) {
        assert(r->method_name.data[i] >= 'A' && r->method_name.data[i] <= 'Z');
    }

    check_str(&r->method_name, res, 1);
    check_str(&r->uri, res, 1);
    assert(r->uri.len >= 1 && r->uri.len < size && r->uri.data[0] == '/');

    assert(r->path.data == r->uri.data && r->path.len <= r->uri.len);

    if (r->args.data) {
        assert(r->args.data == r->uri.data + r->path.len + 1);
        assert(r->path.len + 1 + r->args.len == r->uri.len);
        assert(r->uri.data[r->path.len] == '?');

    } else {
        assert(r->path.len == r->uri.len);
    }

    assert(r->http_major == 1 && r->http_minor <= 9);

    /* HTTP/1.1 names its host; a body is announced and within the limit */
    assert(r->http_minor == 0 || r->host.data != NULL);
    assert(!r->chunked);
    assert(r->content_length >= 0 && r->content_length <= FUZZ_MAX_BODY);
    assert(r->have_length || r->content_length == 0);

    check_str(&r->host, res, 0);
    check_str(&r->authorization, res, 0);
    check_str(&r->content_type, res, 0);
    check_str(&r->if_none_match, res, 0);
}


static sft_uint_t
same_str(sft_str_t *a, u_char *a_start, sft_str_t *b, u_char *b_start)
{
    if (a->data == NULL || b->data == NULL) {
        return a->data == b->data;
    }

    return a->len == b->len && a->data - a_start == b->data - b_start;
}


static void
check_same(fuzz_result_t *a, fuzz_result_t *b)
{
    sft_http_request_t  *ra, *rb;

    assert(a->rc == b->rc);

    if (a->rc != SFT_OK) {
        return;
    }

    ra = &a->r;
    rb = &b->r;

    assert(ra->scan - a->start == rb->scan - b->start);
    assert(ra->lines == rb->lines);
    assert(ra->method == rb->method);
    assert(same_str(&ra->method_name, a->start, &rb->method_name, b->start));
    assert(same_str(&ra->uri, a->start, &rb->uri, b->start));
    assert(same_str(&ra->path, a->start, &rb->path, b->start));
    assert(same_str(&ra->args, a->start, &rb->args, b->start));
    assert(same_str(&ra->host, a->start, &rb->host, b->start));
    assert(same_str(&ra->authorization, a->start, &rb->authorization,
                    b->start));
    assert(same_str(&ra->content_type, a->start, &rb->content_type,
                    b->start));
    assert(same_str(&ra->if_none_match, a->start, &rb->if_none_match,
                    b->start));
    assert(ra->http_major == rb->http_major);
    assert(ra->http_minor == rb->http_minor);
    assert(ra->content_length == rb->content_length);
    assert(ra->keepalive == rb->keepalive);
}


/*
 * What sft_http_run() does with the head: parse what is in the buffer,
 * read more while there is room.  piece 0 reads as much as fits at once;
 * otherwise the next piece is 1-16 bytes, drawn from "seed".
 */

static void
parse(const uint8_t *data, size_t len, size_t size, uint32_t seed,
    fuzz_result_t *res)
{
    size_t                     n;
    u_char                    *end;
    sft_connection_t           c;
    sft_http_connection_t      hc;
    sft_http_core_srv_conf_t   cscf;

    sft_memzero(&c, sizeof(sft_connection_t));
    sft_memzero(&hc, sizeof(sft_http_connection_t));
    sft_memzero(&cscf, sizeof(sft_http_core_srv_conf_t));
    sft_memzero(res, sizeof(fuzz_result_t));

    c.log = &fuzz_log;
    cscf.client_header_buffer_size = size;
    cscf.client_max_body_size = FUZZ_MAX_BODY;

    res->start = malloc(size);
    assert(res->start != NULL);
    end = res->start + size;

    hc.connection = &c;
    hc.cscf = &cscf;
    hc.start = res->start;
    hc.pos = res->start;
    hc.last = res->start;
    hc.end = end;

    res->r.hc = &hc;
    res->r.connection = &c;
    res->r.content_length = -1;
    res->r.scan = res->start;

    for ( ;; ) {
        res->rc = sft_http_parse_request(&res->r);

        assert(hc.start == res->start && hc.end == end);
        assert(hc.pos >= hc.start && hc.pos <= hc.last);
        assert(res->r.scan >= hc.pos && res->r.scan <= hc.last);

        if (res->rc != SFT_AGAIN) {
            break;
        }

        /* a full buffer without a whole line is refused, never waited on */
        assert(hc.last < end);

        if (len == 0) {
            break;              /* the client closed the connection */
        }

        n = end - hc.last;

        if (seed) {
            seed = seed * 1103515245 + 12345;
            n = sft_min(n, 1 + ((seed >> 16) & 15));
        }

        n = sft_min(n, len);

        sft_memcpy(hc.last, data, n);
        hc.last += n;
        data += n;
        len -= n;
    }

    res->last = hc.last;
    res->pos = hc.pos;

    switch (res->rc) {

    case SFT_OK:
        check_accepted(res, size);
        break;

    case SFT_AGAIN:
        break;

    default:
        assert(res->rc == 400 || res->rc == 413 || res->rc == 414
               || res->rc == 431 || res->rc == 501 || res->rc == 505);
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t         bsize;
    uint32_t       seed;
    fuzz_result_t  whole, pieces;

    if (size < 2) {
        return 0;
    }

    bsize = fuzz_buffer_sizes[data[0] % sft_nelems(fuzz_buffer_sizes)];
    seed = data[1] | 0x100;

    parse(data + 2, size - 2, bsize, 0, &whole);
    parse(data + 2, size - 2, bsize, seed, &pieces);

    check_same(&whole, &pieces);

    free(whole.start);
    free(pieces.start);

    return 0;
}
