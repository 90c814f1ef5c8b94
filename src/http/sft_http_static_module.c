/*
 * sft_http_static_module.c -- "html_root DIR;": the admin dashboard's files,
 * read into memory with the configuration (so a request never touches the
 * disk and a reload picks up changes) and served at their paths under "/",
 * a directory's index.html also at "DIR/".  Each file's ETag is its
 * Adler-32 and length, a weak checksum that serves to tell a browser
 * whether its copy is current: If-None-Match gets 304.  Every file goes
 * out with a strict Content-Security-Policy: the dashboard loads only its
 * own scripts, styles and API, never inline code or another origin.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>
#include <sft_asm.h>
#include <dirent.h>


#define SFT_HTTP_STATIC_FILE_MAX    (1024 * 1024)
#define SFT_HTTP_STATIC_TOTAL_MAX   (16 * 1024 * 1024)
#define SFT_HTTP_STATIC_FILES_MAX   256
#define SFT_HTTP_STATIC_DEPTH       4

#define SFT_HTTP_STATIC_HEADERS                                              \
    "Content-Security-Policy: default-src 'none'; script-src 'self'; "       \
    "style-src 'self'; img-src 'self'; connect-src 'self'; "                 \
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"        \
    "X-Content-Type-Options: nosniff\r\n"                                   \
    "Referrer-Policy: no-referrer\r\n"


typedef struct {
    sft_str_t                 uri;          /* "/app.js", "/" */
    sft_str_t                 body;
    const char               *type;
    u_char                    etag[32];     /* "\"adler32-length\"" */
} sft_http_static_file_t;


typedef struct {
    sft_str_t                 root;
    sft_array_t               files;        /* sft_http_static_file_t */
    size_t                    total;
} sft_http_static_main_conf_t;


static void *sft_http_static_create_main_conf(sft_conf_t *cf);
static char *sft_http_static_init_main_conf(sft_conf_t *cf, void *conf);
static sft_int_t sft_http_static_load(sft_conf_t *cf,
    sft_http_static_main_conf_t *smcf, const char *dir, const char *uri,
    sft_uint_t depth);
static sft_int_t sft_http_static_add(sft_conf_t *cf,
    sft_http_static_main_conf_t *smcf, const char *path, const char *uri,
    size_t size);
static sft_int_t sft_http_static_handler(sft_http_request_t *r);


static sft_command_t  sft_http_static_commands[] = {

    { sft_string("html_root"),
      SFT_PROTO_MAIN_CONF|SFT_CONF_TAKE1,
      sft_conf_set_path_slot,
      SFT_PROTO_MAIN_CONF_OFFSET,
      offsetof(sft_http_static_main_conf_t, root),
      NULL,
      sft_command_doc("directory", "",
          "Serve the files below this directory, read into memory with the "
          "configuration.") },

    sft_null_command
};


static sft_proto_module_t  sft_http_static_module_ctx = {
    sft_http_static_create_main_conf,
    sft_http_static_init_main_conf,
    NULL,
    NULL
};


sft_module_t  sft_http_static_module = {
    SFT_MODULE_V1,
    &sft_http_static_module_ctx,           /* module context */
    sft_http_static_commands,              /* module directives */
    SFT_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static const struct {
    const char  *ext;
    const char  *type;
} sft_http_static_types[] = {
    { ".html", "text/html; charset=utf-8" },
    { ".css", "text/css; charset=utf-8" },
    { ".js", "text/javascript; charset=utf-8" },
    { ".json", "application/json" },
    { ".svg", "image/svg+xml" },
    { ".png", "image/png" },
    { ".ico", "image/x-icon" },
    { ".txt", "text/plain; charset=utf-8" },
    { ".woff2", "font/woff2" }
};


static void *
sft_http_static_create_main_conf(sft_conf_t *cf)
{
    sft_http_static_main_conf_t  *smcf;

    smcf = sft_pcalloc(cf->pool, sizeof(sft_http_static_main_conf_t));
    if (smcf == NULL) {
        return NULL;
    }

    if (sft_array_init(&smcf->files, cf->pool, 16,
                       sizeof(sft_http_static_file_t))
        != SFT_OK)
    {
        return NULL;
    }

    return smcf;
}


static char *
sft_http_static_init_main_conf(sft_conf_t *cf, void *conf)
{
    sft_uint_t                    i;
    sft_http_static_file_t       *f;
    sft_http_static_main_conf_t  *smcf = conf;

    if (smcf->root.len == 0) {
        return SFT_CONF_OK;
    }

    if (sft_http_static_load(cf, smcf, (char *) smcf->root.data, "", 0)
        != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    f = smcf->files.elts;

    for (i = 0; i < smcf->files.nelts; i++) {
        if (sft_http_add_route(cf, (char *) f[i].uri.data,
                               SFT_HTTP_GET|SFT_HTTP_HEAD,
                               sft_http_static_handler)
            != SFT_OK)
        {
            return SFT_CONF_ERROR;
        }
    }

    return SFT_CONF_OK;
}


/* every regular file below dir, without dot names, within the limits */

static sft_int_t
sft_http_static_load(sft_conf_t *cf, sft_http_static_main_conf_t *smcf,
    const char *dir, const char *uri, sft_uint_t depth)
{
    DIR            *d;
    sft_int_t       rc;
    struct stat     sb;
    struct dirent  *de;
    char            path[PATH_MAX], sub[PATH_MAX];

    d = opendir(dir);
    if (d == NULL) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, sft_errno,
                           "html_root: opendir(\"%s\") failed", dir);
        return SFT_ERROR;
    }

    rc = SFT_OK;

    while (rc == SFT_OK && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') {
            continue;
        }

        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        snprintf(sub, sizeof(sub), "%s/%s", uri, de->d_name);

        if (stat(path, &sb) == -1) {
            continue;
        }

        if (S_ISDIR(sb.st_mode) && depth < SFT_HTTP_STATIC_DEPTH) {
            rc = sft_http_static_load(cf, smcf, path, sub, depth + 1);

        } else if (S_ISREG(sb.st_mode)) {
            rc = sft_http_static_add(cf, smcf, path, sub, sb.st_size);
        }
    }

    closedir(d);

    return rc;
}


static sft_int_t
sft_http_static_add(sft_conf_t *cf, sft_http_static_main_conf_t *smcf,
    const char *path, const char *uri, size_t size)
{
    int                      fd;
    size_t                   i, n, len;
    ssize_t                  got;
    sft_http_static_file_t  *f;

    if (size > SFT_HTTP_STATIC_FILE_MAX
        || smcf->total + size > SFT_HTTP_STATIC_TOTAL_MAX
        || smcf->files.nelts == SFT_HTTP_STATIC_FILES_MAX)
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "html_root: \"%s\" passes the limits (files of "
                           "%d bytes, %d in all, %d files)", path,
                           SFT_HTTP_STATIC_FILE_MAX, SFT_HTTP_STATIC_TOTAL_MAX,
                           SFT_HTTP_STATIC_FILES_MAX);
        return SFT_ERROR;
    }

    f = sft_array_push(&smcf->files);
    if (f == NULL) {
        return SFT_ERROR;
    }

    sft_memzero(f, sizeof(sft_http_static_file_t));

    f->body.data = sft_pnalloc(cf->pool, size ? size : 1);
    fd = open(path, O_RDONLY|O_CLOEXEC);

    if (f->body.data == NULL || fd == -1) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, sft_errno,
                           "html_root: open(\"%s\") failed", path);
        if (fd != -1) {
            close(fd);
        }
        return SFT_ERROR;
    }

    for (n = 0; n < size; n += got) {
        got = read(fd, f->body.data + n, size - n);

        if (got <= 0) {
            break;
        }
    }

    close(fd);

    f->body.len = n;
    smcf->total += n;

    /* "/dir/index.html" is also "/dir/" */

    len = strlen(uri);

    if (len >= 11 && strcmp(uri + len - 11, "/index.html") == 0) {
        len -= 10;
    }

    f->uri.data = sft_pnalloc(cf->pool, len + 1);
    if (f->uri.data == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(f->uri.data, uri, len);
    f->uri.data[len] = '\0';
    f->uri.len = len;

    f->type = "application/octet-stream";

    for (i = 0; i < sft_nelems(sft_http_static_types); i++) {
        n = strlen(sft_http_static_types[i].ext);

        if (strlen(uri) > n
            && strcmp(uri + strlen(uri) - n, sft_http_static_types[i].ext)
               == 0)
        {
            f->type = sft_http_static_types[i].type;
            break;
        }
    }

    sft_slprintf(f->etag, f->etag + sizeof(f->etag) - 1, "\"%08x-%zx\"",
                 (unsigned) sft_adler32(1, f->body.data, f->body.len),
                 f->body.len)[0] = '\0';

    return SFT_OK;
}


static sft_int_t
sft_http_static_handler(sft_http_request_t *r)
{
    size_t                        len;
    sft_uint_t                    i;
    sft_http_static_file_t       *f;
    sft_http_static_main_conf_t  *smcf;

    /* the files of the configuration the connection was accepted under */
    smcf = sft_proto_get_module_main_conf(r->hc->ctx, sft_http_static_module);
    f = smcf->files.elts;

    for (i = 0; i < smcf->files.nelts; i++, f++) {
        if (f->uri.len == r->path.len
            && sft_memcmp(f->uri.data, r->path.data, r->path.len) == 0)
        {
            break;
        }
    }

    if (i == smcf->files.nelts) {
        return sft_http_send_response(r, 404, NULL, NULL);
    }

    len = sizeof(SFT_HTTP_STATIC_HEADERS) + sizeof(f->etag) + 8;

    r->extra_headers.data = sft_pnalloc(r->pool, len);
    if (r->extra_headers.data == NULL) {
        return SFT_ERROR;
    }

    r->extra_headers.len = sft_slprintf(r->extra_headers.data,
                                        r->extra_headers.data + len,
                                        "ETag: %s\r\n" SFT_HTTP_STATIC_HEADERS,
                                        f->etag)
                           - r->extra_headers.data;

    /* kept by the browser, asked again each time: 304 while unchanged */

    r->cache_control = "no-cache";

    if (r->if_none_match.len
        && ((r->if_none_match.len == 1 && r->if_none_match.data[0] == '*')
            || memmem(r->if_none_match.data, r->if_none_match.len,
                      f->etag, strlen((char *) f->etag))))
    {
        return sft_http_send_response(r, 304, NULL, NULL);
    }

    return sft_http_send_response(r, 200, f->type, &f->body);
}
