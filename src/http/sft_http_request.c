/*
 * sft_http_request.c -- an HTTP/1.1 connection: framing requests in a
 * bounded buffer, keep-alive and pipelining, bodies up to the limit,
 * responses, error replies and closing without losing the last reply.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>


static void sft_http_handler(sft_event_t *ev);
static void sft_http_run(sft_http_connection_t *hc);
static sft_int_t sft_http_read_request(sft_http_request_t *r);
static sft_int_t sft_http_read_body(sft_http_request_t *r);
static void sft_http_dispatch(sft_http_request_t *r);
static sft_int_t sft_http_error(sft_http_request_t *r, sft_uint_t status);
static sft_int_t sft_http_finalize(sft_http_connection_t *hc);
static void sft_http_lingering_close(sft_http_connection_t *hc);
static void sft_http_lingering_handler(sft_event_t *ev);
static u_char *sft_http_log_error(sft_log_t *log, u_char *buf, size_t len);


#define SFT_HTTP_LINGERING_TIME    2000


static const struct {
    sft_uint_t   status;
    const char  *text;
} sft_http_status_lines[] = {
    { 200, "OK" },
    { 201, "Created" },
    { 204, "No Content" },
    { 304, "Not Modified" },
    { 400, "Bad Request" },
    { 401, "Unauthorized" },
    { 403, "Forbidden" },
    { 404, "Not Found" },
    { 405, "Method Not Allowed" },
    { 408, "Request Timeout" },
    { 409, "Conflict" },
    { 411, "Length Required" },
    { 412, "Precondition Failed" },
    { 413, "Content Too Large" },
    { 414, "URI Too Long" },
    { 422, "Unprocessable Content" },
    { 429, "Too Many Requests" },
    { 431, "Request Header Fields Too Large" },
    { 500, "Internal Server Error" },
    { 501, "Not Implemented" },
    { 503, "Service Unavailable" },
    { 505, "HTTP Version Not Supported" },
};


void
sft_http_init_connection(sft_connection_t *c)
{
    sft_http_connection_t  *hc;

    hc = sft_pcalloc(c->pool, sizeof(sft_http_connection_t));
    if (hc == NULL) {
        sft_destroy_pool(c->pool);
        sft_close_connection(c);
        return;
    }

    hc->connection = c;
    hc->ctx = c->listening->servers;
    hc->cscf = sft_proto_get_module_srv_conf(hc->ctx, sft_http_core_module);

    hc->start = sft_pnalloc(c->pool, hc->cscf->client_header_buffer_size);
    if (hc->start == NULL) {
        sft_destroy_pool(c->pool);
        sft_close_connection(c);
        return;
    }

    hc->pos = hc->start;
    hc->last = hc->start;
    hc->end = hc->start + hc->cscf->client_header_buffer_size;

    c->data = hc;
    c->log->handler = sft_http_log_error;
    c->log->data = hc;

    if (c->listening->ssl) {
        sft_http_ssl_start(hc);
        return;
    }

    sft_http_run_connection(hc);
}


/* the connection reads requests: at once, or after its TLS handshake */

void
sft_http_run_connection(sft_http_connection_t *hc)
{
    sft_connection_t  *c;

    c = hc->connection;

    c->read->handler = sft_http_handler;
    c->write->handler = sft_http_handler;

    /* the socket may be readable already; an empty read just waits */
    c->read->ready = 1;

    sft_http_run(hc);
}


static void
sft_http_handler(sft_event_t *ev)
{
    sft_connection_t       *c;
    sft_http_connection_t  *hc;

    c = ev->data;
    hc = c->data;

    if (hc->request && hc->request->blocked) {
        /* the reply comes from a thread; a stop waits for it */
        return;
    }

    if (ev->timedout) {
        sft_log_error(SFT_LOG_INFO, c->log, 0, "client timed out");
        sft_http_close_connection(hc);
        return;
    }

    if (c->close) {
        /* a graceful stop closes idle connections, its timeout all */
        sft_http_close_connection(hc);
        return;
    }

    sft_http_run(hc);
}


static sft_http_request_t *
sft_http_create_request(sft_http_connection_t *hc)
{
    size_t               left;
    sft_pool_t          *pool;
    sft_http_request_t  *r;

    pool = sft_create_pool(4096, hc->connection->log);
    if (pool == NULL) {
        return NULL;
    }

    r = sft_pcalloc(pool, sizeof(sft_http_request_t));
    if (r == NULL) {
        sft_destroy_pool(pool);
        return NULL;
    }

    r->pool = pool;
    r->hc = hc;
    r->connection = hc->connection;
    r->content_length = -1;

    /* a new request always starts at the front of the buffer */

    left = hc->last - hc->pos;

    if (hc->pos != hc->start) {
        memmove(hc->start, hc->pos, left);
        hc->pos = hc->start;
        hc->last = hc->start + left;
    }

    r->scan = hc->pos;

    hc->request = r;
    hc->requests++;

    return r;
}


static void
sft_http_run(sft_http_connection_t *hc)
{
    ssize_t              n;
    sft_int_t            rc;
    sft_connection_t    *c;
    sft_http_request_t  *r;

    c = hc->connection;

    for ( ;; ) {
        r = hc->request;

        /* a response being written */

        if (r && r->out) {
            while (r->out_sent < r->out_len) {
                n = c->send(c, r->out + r->out_sent,
                             r->out_len - r->out_sent);

                if (n == SFT_AGAIN) {
                    sft_add_timer(c->write, hc->cscf->send_timeout);
                    return;
                }

                if (n == SFT_ERROR) {
                    sft_http_close_connection(hc);
                    return;
                }

                r->out_sent += n;
            }

            sft_del_timer(c->write);

            if (sft_http_finalize(hc) == SFT_DONE) {
                return;   /* closed, hc is gone */
            }

            continue;
        }

        if (r == NULL) {
            r = sft_http_create_request(hc);
            if (r == NULL) {
                sft_http_close_connection(hc);
                return;
            }
        }

        if (r->blocked) {
            return;
        }

        rc = sft_http_read_request(r);

        if (rc == SFT_OK) {
            sft_del_timer(c->read);
            sft_http_dispatch(r);
            continue;
        }

        if (rc >= 400) {
            sft_del_timer(c->read);
            (void) sft_http_error(r, rc);
            continue;
        }

        /* SFT_AGAIN: more bytes are needed */

        if (hc->last == hc->end) {
            /* sft_http_read_request() has already reported a full buffer */
            sft_http_close_connection(hc);
            return;
        }

        if (!c->read->ready) {
            goto wait;
        }

        n = c->recv(c, hc->last, hc->end - hc->last);

        if (n == SFT_AGAIN) {
            goto wait;
        }

        if (n == 0 || n == SFT_ERROR) {
            if (r->lines || hc->last != hc->pos) {
                sft_log_error(SFT_LOG_INFO, c->log, 0,
                              "client closed connection while sending "
                              "a request");
            }

            sft_http_close_connection(hc);
            return;
        }

        hc->last += n;
        c->idle = 0;
        continue;

    wait:

        if (r->lines == 0 && hc->last == hc->pos && hc->requests > 1) {
            /*
             * between keep-alive requests: idle, closable on a graceful
             * stop; a new connection is not, its first request is coming
             */
            c->idle = 1;

            if (sft_exiting) {
                sft_http_close_connection(hc);
                return;
            }

            sft_add_timer(c->read, hc->cscf->keepalive_timeout);

        } else if (!c->read->timer_set) {
            sft_add_timer(c->read, r->header_done
                                   ? hc->cscf->client_body_timeout
                                   : hc->cscf->client_header_timeout);
        }

        return;
    }
}


/* SFT_OK when the whole request is in, SFT_AGAIN, or an HTTP status */

static sft_int_t
sft_http_read_request(sft_http_request_t *r)
{
    sft_int_t  rc;

    if (!r->header_done) {
        rc = sft_http_parse_request(r);
        if (rc != SFT_OK) {
            return rc;
        }
    }

    if (r->content_length > 0) {
        return sft_http_read_body(r);
    }

    return SFT_OK;
}


/* copies what the request line and headers point at out of the buffer */

static sft_int_t
sft_http_keep_strings(sft_http_request_t *r)
{
    size_t      i;
    u_char     *p;
    sft_str_t  *s[] = { &r->method_name, &r->uri, &r->host,
                        &r->authorization, &r->content_type,
                        &r->if_none_match, &r->if_match };
    size_t      path_off, args_off;

    path_off = r->path.data - r->uri.data;
    args_off = r->args.data ? (size_t) (r->args.data - r->uri.data) : 0;

    for (i = 0; i < sft_nelems(s); i++) {
        if (s[i]->data == NULL) {
            continue;
        }

        p = sft_pnalloc(r->pool, s[i]->len);
        if (p == NULL) {
            return SFT_ERROR;
        }

        sft_memcpy(p, s[i]->data, s[i]->len);
        s[i]->data = p;
    }

    r->path.data = r->uri.data + path_off;

    if (r->args.data) {
        r->args.data = r->uri.data + args_off;
    }

    return SFT_OK;
}


static sft_int_t
sft_http_read_body(sft_http_request_t *r)
{
    size_t                  n;
    sft_http_connection_t  *hc;

    hc = r->hc;

    if (r->body.data == NULL) {
        r->body.data = sft_pnalloc(r->pool, r->content_length);
        if (r->body.data == NULL) {
            return 500;
        }

        r->body.len = r->content_length;
    }

    n = sft_min((size_t) (hc->last - hc->pos),
                r->body.len - r->body_received);

    sft_memcpy(r->body.data + r->body_received, hc->pos, n);
    r->body_received += n;
    hc->pos += n;

    if (r->body_received == r->body.len) {
        return SFT_OK;
    }

    /* the rest of the body goes through the (now empty) buffer */

    if (sft_http_keep_strings(r) != SFT_OK) {
        return 500;
    }

    hc->pos = hc->start;
    hc->last = hc->start;
    r->scan = hc->start;

    return SFT_AGAIN;
}


static const struct {
    sft_uint_t   method;
    const char  *text;
} sft_http_allow[] = {
    { SFT_HTTP_GET, "GET, HEAD" },
    { SFT_HTTP_POST, "POST" },
    { SFT_HTTP_PUT, "PUT" },
    { SFT_HTTP_PATCH, "PATCH" },
    { SFT_HTTP_DELETE, "DELETE" },
};


/*
 * A "*" in a route is one path segment, as NAME in
 * "/api/v1/users/NAME/recount"; a route ending in "/" and "*" matches
 * every path beneath it.
 */

static sft_uint_t
sft_http_route_match(sft_str_t *route, sft_str_t *path)
{
    u_char  *r, *re, *p, *pe, *seg;

    r = route->data;
    re = r + route->len;
    p = path->data;
    pe = p + path->len;

    for ( /* void */ ; r < re; r++) {
        if (*r != '*') {
            if (p == pe || *p != *r) {
                return 0;
            }

            p++;
            continue;
        }

        if (r + 1 == re && r > route->data && r[-1] == '/') {
            return p < pe;
        }

        for (seg = p; p < pe && *p != '/'; p++) {
            /* void */
        }

        if (p == seg) {
            return 0;
        }
    }

    return p == pe;
}


static void
sft_http_dispatch(sft_http_request_t *r)
{
    sft_int_t                   rc;
    sft_uint_t                  i, j, methods, allowed, status;
    sft_http_route_t           *route;
    sft_http_core_main_conf_t  *cmcf;
    u_char                     *p, *last;

    sft_stat_add(sft_http_stat_requests, 1);

    if (r->method == SFT_HTTP_UNKNOWN) {
        (void) sft_http_error(r, 501);
        return;
    }

    /* before the routes: no token, no hint of which paths exist */

    status = sft_http_auth_check(r);
    if (status) {
        (void) sft_http_error(r, status);
        return;
    }

    /* "api off": no route under /api/, without a hint of which exist */

    if (r->path.len >= 5 && sft_memcmp(r->path.data, "/api/", 5) == 0
        && !sft_http_api_enabled(r))
    {
        (void) sft_http_send_response(r, 404, NULL, NULL);
        return;
    }

    cmcf = sft_proto_get_module_main_conf(r->hc->ctx, sft_http_core_module);
    route = cmcf->routes.elts;

    methods = r->method == SFT_HTTP_HEAD ? SFT_HTTP_GET : r->method;

    allowed = 0;

    for (i = 0; i < cmcf->routes.nelts; i++) {
        if (!sft_http_route_match(&route[i].path, &r->path)) {
            continue;
        }

        if (!(route[i].methods & methods)) {
            allowed |= route[i].methods;
            continue;
        }

        rc = route[i].handler(r);

        if (rc == SFT_AGAIN) {
            r->blocked = 1;
            return;
        }

        if (rc != SFT_OK && r->out == NULL) {
            (void) sft_http_error(r, 500);
        }

        return;
    }

    if (allowed) {
        p = sft_pnalloc(r->pool, 96);
        if (p == NULL) {
            (void) sft_http_error(r, 500);
            return;
        }

        r->extra_headers.data = p;
        last = sft_cpymem(p, "Allow: ", 7);

        for (j = 0; j < sft_nelems(sft_http_allow); j++) {
            if (allowed & sft_http_allow[j].method) {
                last = sft_slprintf(last, p + 96, "%s%s",
                                    last == p + 7 ? "" : ", ",
                                    sft_http_allow[j].text);
            }
        }

        last = sft_cpymem(last, "\r\n", 2);
        r->extra_headers.len = last - p;

        (void) sft_http_error(r, 405);
        return;
    }

    (void) sft_http_error(r, 404);
}


static const char *
sft_http_status_text(sft_uint_t status)
{
    size_t  i;

    for (i = 0; i < sft_nelems(sft_http_status_lines); i++) {
        if (sft_http_status_lines[i].status == status) {
            return sft_http_status_lines[i].text;
        }
    }

    return "Unknown";
}


sft_int_t
sft_http_send_response(sft_http_request_t *r, sft_uint_t status,
    const char *content_type, sft_str_t *body)
{
    u_char     *p, *last;
    size_t      len, blen;
    time_t      now;
    struct tm   tm;
    char        date[64];

    if (status >= 400) {
        sft_stat_add(sft_http_stat_errors, 1);
    }

    if (sft_exiting || r->hc->requests >= r->hc->cscf->keepalive_requests) {
        r->keepalive = 0;
    }

    now = time(NULL);
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);

    blen = body ? body->len : 0;

    len = 256 + r->extra_headers.len
          + (content_type ? strlen(content_type) : 0) + blen;

    p = sft_pnalloc(r->pool, len);
    if (p == NULL) {
        return SFT_ERROR;
    }

    r->out = p;
    last = p + len;

    p = sft_slprintf(p, last,
                     "HTTP/1.1 %lu %s\r\n"
                     "Server: siftpd/" SFT_VERSION "\r\n"
                     "Date: %s\r\n",
                     (unsigned long) status, sft_http_status_text(status),
                     date);

    /* a 304 has no body and says nothing of the length of the file */

    if (status != 304) {
        p = sft_slprintf(p, last, "Content-Length: %zu\r\n", blen);
    }

    p = sft_slprintf(p, last,
                     "%s%s%s"
                     "Cache-Control: %s\r\n"
                     "Connection: %s\r\n",
                     content_type ? "Content-Type: " : "",
                     content_type ? content_type : "",
                     content_type ? "\r\n" : "",
                     r->cache_control ? r->cache_control : "no-store",
                     r->keepalive ? "keep-alive" : "close");

    if (r->extra_headers.len) {
        p = sft_cpymem(p, r->extra_headers.data, r->extra_headers.len);
    }

    *p++ = '\r';
    *p++ = '\n';

    if (blen && r->method != SFT_HTTP_HEAD) {
        p = sft_cpymem(p, body->data, blen);
    }

    r->status = status;
    r->out_len = p - r->out;
    r->out_sent = 0;

    return SFT_OK;
}


/* a handler that returned SFT_AGAIN has its reply ready (or failed) */

void
sft_http_resume(sft_http_request_t *r)
{
    r->blocked = 0;

    if (r->out == NULL) {
        (void) sft_http_error(r, 500);
    }

    sft_http_run(r->hc);
}


static sft_int_t
sft_http_error(sft_http_request_t *r, sft_uint_t status)
{
    u_char     *p;
    sft_str_t   body;

    /* after a framing error the rest of the stream cannot be trusted */

    if (status == 400 || status == 413 || status == 414 || status == 431
        || status == 501 || status == 505 || status == 500)
    {
        r->keepalive = 0;
        r->lingering = 1;
    }

    p = sft_pnalloc(r->pool, 128);
    if (p == NULL) {
        return SFT_ERROR;
    }

    body.data = p;
    body.len = sft_slprintf(p, p + 128,
                            "{\"error\":\"%s\",\"status\":%lu}\n",
                            sft_http_status_text(status),
                            (unsigned long) status) - p;

    return sft_http_send_response(r, status, "application/json", &body);
}


/* SFT_OK to go on with the next request, SFT_DONE if the connection went */

static sft_int_t
sft_http_finalize(sft_http_connection_t *hc)
{
    sft_http_request_t  *r;

    r = hc->request;
    hc->request = NULL;

    if (!r->keepalive) {
        if (r->lingering) {
            sft_destroy_pool(r->pool);
            sft_http_lingering_close(hc);
            return SFT_DONE;
        }

        sft_destroy_pool(r->pool);
        sft_http_close_connection(hc);
        return SFT_DONE;
    }

    if (r->scan > hc->pos) {
        hc->pos = r->scan;
    }

    sft_destroy_pool(r->pool);

    return SFT_OK;
}


/*
 * After an error reply the client may still be sending; closing at once
 * would reset the connection and could destroy the reply in flight.  Over
 * TLS the close_notify, sent after the reply, ends it instead.
 */

static void
sft_http_lingering_close(sft_http_connection_t *hc)
{
    sft_connection_t  *c;

    c = hc->connection;

    if (c->ssl || shutdown(c->fd, SHUT_WR) == -1) {
        sft_http_close_connection(hc);
        return;
    }

    c->read->handler = sft_http_lingering_handler;
    c->write->handler = sft_http_lingering_handler;
    sft_add_timer(c->read, SFT_HTTP_LINGERING_TIME);

    sft_http_lingering_handler(c->read);
}


static void
sft_http_lingering_handler(sft_event_t *ev)
{
    ssize_t                 n;
    u_char                  buf[4096];
    sft_connection_t       *c;
    sft_http_connection_t  *hc;

    c = ev->data;
    hc = c->data;

    if (ev->timedout || c->close) {
        sft_http_close_connection(hc);
        return;
    }

    if (ev->write) {
        return;
    }

    do {
        n = c->recv(c, buf, sizeof(buf));

        if (n == SFT_AGAIN) {
            return;
        }

        if (n <= 0) {
            sft_http_close_connection(hc);
            return;
        }
    } while (c->read->ready);
}


void
sft_http_close_connection(sft_http_connection_t *hc)
{
    sft_pool_t        *pool;
    sft_connection_t  *c;

    /* a TLS connection says close_notify first; this runs again after */

    if (sft_http_ssl_close(hc)) {
        return;
    }

    c = hc->connection;

    if (hc->request) {
        sft_destroy_pool(hc->request->pool);
        hc->request = NULL;
    }

    hc->connection = NULL;

    pool = c->pool;
    c->pool = NULL;

    sft_close_connection(c);
    sft_destroy_pool(pool);
}


static u_char *
sft_http_log_error(sft_log_t *log, u_char *buf, size_t len)
{
    u_char                 *p, *last;
    sft_connection_t       *c;
    sft_http_connection_t  *hc;

    hc = log->data;
    c = hc->connection;
    p = buf;
    last = buf + len;

    if (c == NULL) {
        return p;
    }

    p = sft_slprintf(p, last, ", client: %.*s, server: %.*s",
                     SFT_STR_FMT(&c->addr_text),
                     SFT_STR_FMT(&c->listening->addr_text));

    if (hc->request && hc->request->method_name.len) {
        p = sft_slprintf(p, last, ", request: \"%.*s %.*s\"",
                         SFT_STR_FMT(&hc->request->method_name),
                         SFT_STR_FMT(&hc->request->uri));
    }

    return p;
}
