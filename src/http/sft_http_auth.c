/*
 * sft_http_auth.c -- bearer tokens for the admin API.  "api_token_file"
 * names a file of tokens, read with the configuration (at start and on
 * every reload); every request under /api/, and /metrics unless
 * "metrics_auth off", must carry one of them.  Without tokens only
 * loopback clients are served.  Tokens are kept and compared as keyed
 * BLAKE2b digests, with sft_ct_eq(): neither the position of the first
 * wrong byte nor the token's length shows in the time taken.  A line is
 * "TOKEN [read|admin] [NAME]": a read token may only GET and HEAD, an
 * admin token (the default, what a bare token always meant) may change
 * users too; NAME is what the audit log shows (else "line N").  A wrong
 * token counts as a failed login of its address (login_max_failures),
 * and a banned address gets 429.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http.h>
#include <sft_thread_pool.h>
#include <sft_auth.h>
#include <sft_asm.h>
#include <sodium.h>


#define SFT_HTTP_TOKEN_DIGEST     32
#define SFT_HTTP_TOKEN_MIN        16
#define SFT_HTTP_TOKEN_MAX        1024
#define SFT_HTTP_TOKEN_FILE_MAX   65536
#define SFT_HTTP_TOKENS_MAX       256
#define SFT_HTTP_TOKEN_NAME_MAX   64


typedef struct {
    u_char        key[crypto_generichash_KEYBYTES];
    sft_uint_t    n;
    u_char       *digests;        /* n x SFT_HTTP_TOKEN_DIGEST */
    u_char       *admin;          /* n: 1 for an admin token */
    sft_str_t    *names;          /* n */
} sft_http_tokens_t;


typedef struct {
    sft_http_tokens_t  *tokens;   /* NULL: none configured */
    sft_flag_t          metrics_auth;
} sft_http_auth_srv_conf_t;


static char *sft_http_auth_token_file(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static void *sft_http_auth_create_srv_conf(sft_conf_t *cf);
static char *sft_http_auth_merge_srv_conf(sft_conf_t *cf, void *parent,
    void *child);


static sft_command_t  sft_http_auth_commands[] = {

    { sft_string("api_token_file"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_http_auth_token_file,
      SFT_PROTO_SRV_CONF_OFFSET,
      0,
      NULL,
      sft_command_doc("file", "",
          "A file of bearer tokens for the API and metrics; without it "
          "only loopback clients are served.") },

    { sft_string("metrics_auth"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_auth_srv_conf_t, metrics_auth),
      NULL,
      sft_command_doc("on | off", "on",
          "Whether /metrics needs a token as the API does.") },

    sft_null_command
};


static sft_proto_module_t  sft_http_auth_module_ctx = {
    NULL,
    NULL,
    sft_http_auth_create_srv_conf,
    sft_http_auth_merge_srv_conf
};


sft_module_t  sft_http_auth_module = {
    SFT_MODULE_V1,
    &sft_http_auth_module_ctx,             /* module context */
    sft_http_auth_commands,                /* module directives */
    SFT_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static void *
sft_http_auth_create_srv_conf(sft_conf_t *cf)
{
    sft_http_auth_srv_conf_t  *ascf;

    ascf = sft_palloc(cf->pool, sizeof(sft_http_auth_srv_conf_t));
    if (ascf == NULL) {
        return NULL;
    }

    ascf->tokens = SFT_CONF_UNSET_PTR;
    ascf->metrics_auth = SFT_CONF_UNSET;

    return ascf;
}


/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 */

sft_uint_t
sft_http_loopback(struct sockaddr *sa)
{
    u_char               *a;
    struct sockaddr_in6  *sin6;

    if (sa->sa_family == AF_INET) {
        a = (u_char *) &((struct sockaddr_in *) sa)->sin_addr;
        return a[0] == 127;
    }

    if (sa->sa_family != AF_INET6) {
        return 0;
    }

    sin6 = (struct sockaddr_in6 *) sa;

    if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr)) {
        return 1;
    }

    return IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)
           && sin6->sin6_addr.s6_addr[12] == 127;
}


static char *
sft_http_auth_merge_srv_conf(sft_conf_t *cf, void *parent, void *child)
{
    sft_uint_t                 i;
    sft_listen_opt_t          *ls;
    sft_http_core_srv_conf_t  *cscf;
    sft_http_auth_srv_conf_t  *prev = parent;
    sft_http_auth_srv_conf_t  *conf = child;

    sft_conf_merge_ptr_value(conf->tokens, prev->tokens, NULL);
    sft_conf_merge_value(conf->metrics_auth, prev->metrics_auth, 1);

    if (conf->tokens) {
        return SFT_CONF_OK;
    }

    /* cf->ctx is this server's: its listen addresses are known */

    cscf = sft_proto_get_module_srv_conf(cf->ctx, sft_http_core_module);
    ls = cscf->proto.listen.elts;

    for (i = 0; i < cscf->proto.listen.nelts; i++) {
        if (!sft_http_loopback((struct sockaddr *) &ls[i].sockaddr)) {
            sft_log_error(SFT_LOG_WARN, cf->log, 0,
                          "%.*s:%lu: http server on %.*s has no "
                          "\"api_token_file\": its API is served to "
                          "loopback clients only",
                          SFT_STR_FMT(&cscf->proto.file),
                          (unsigned long) cscf->proto.line,
                          SFT_STR_FMT(&ls[i].addr_text));
            break;
        }
    }

    return SFT_CONF_OK;
}


/* a token68 (RFC 7235): letters, digits, "-._~+/", then "=" padding */

static sft_uint_t
sft_http_auth_token68(u_char *p, size_t len)
{
    size_t  i;

    for (i = 0; i < len && p[i] != '='; i++) {
        if (!isalnum(p[i]) && strchr("-._~+/", p[i]) == NULL) {
            return 0;
        }
    }

    for ( /* void */ ; i < len; i++) {
        if (p[i] != '=') {
            return 0;
        }
    }

    return len > 0 && p[0] != '=';
}


/* what follows a token: "read" or "admin", then a name for the audit log */

static sft_int_t
sft_http_auth_options(sft_conf_t *cf, sft_str_t *file, sft_uint_t line,
    u_char *p, u_char *last, sft_http_tokens_t *tokens)
{
    u_char     *w;
    sft_str_t  *name;

    tokens->admin[tokens->n] = 1;
    name = &tokens->names[tokens->n];

    while (p < last && isspace(*p)) {
        p++;
    }

    for (w = p; w < last && !isspace(*w); w++) {
        /* void */
    }

    if (w - p == 4 && sft_strncmp(p, "read", 4) == 0) {
        tokens->admin[tokens->n] = 0;

    } else if (w != p && !(w - p == 5 && sft_strncmp(p, "admin", 5) == 0)) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "%s:%lu: the scope of a token is \"read\" or "
                           "\"admin\"", file->data, (unsigned long) line);
        return SFT_ERROR;
    }

    for (p = w; p < last && isspace(*p); p++) {
        /* void */
    }

    if (p == last) {
        name->data = sft_pnalloc(cf->pool, 32);
        if (name->data == NULL) {
            return SFT_ERROR;
        }

        name->len = sft_slprintf(name->data, name->data + 32, "line %lu",
                                 (unsigned long) line) - name->data;
        return SFT_OK;
    }

    for (w = p; w < last; w++) {
        if (!isalnum(*w) && strchr("-._@", *w) == NULL) {
            break;
        }
    }

    if (w != last || last - p > SFT_HTTP_TOKEN_NAME_MAX) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "%s:%lu: the name of a token is up to %d "
                           "letters, digits and \"-._@\"", file->data,
                           (unsigned long) line, SFT_HTTP_TOKEN_NAME_MAX);
        return SFT_ERROR;
    }

    name->len = last - p;
    name->data = sft_pnalloc(cf->pool, name->len);
    if (name->data == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(name->data, p, name->len);

    return SFT_OK;
}


static sft_int_t
sft_http_auth_parse(sft_conf_t *cf, sft_str_t *file, u_char *text,
    size_t len, sft_http_tokens_t *tokens)
{
    u_char      *p, *end, *eol, *last, *tend;
    sft_uint_t   line;

    p = text;
    end = text + len;

    for (line = 1; p < end; line++, p = eol + 1) {

        eol = memchr(p, '\n', end - p);
        if (eol == NULL) {
            eol = end;
        }

        for (last = eol; last > p && isspace(last[-1]); last--) {
            /* void */
        }

        while (p < last && isspace(*p)) {
            p++;
        }

        if (p == last || *p == '#') {
            continue;
        }

        for (tend = p; tend < last && !isspace(*tend); tend++) {
            /* void */
        }

        if (tend - p < SFT_HTTP_TOKEN_MIN || tend - p > SFT_HTTP_TOKEN_MAX
            || !sft_http_auth_token68(p, tend - p))
        {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "%s:%lu: a token is %d to %d characters of "
                               "letters, digits and \"-._~+/\" (then \"=\")",
                               file->data, (unsigned long) line,
                               SFT_HTTP_TOKEN_MIN, SFT_HTTP_TOKEN_MAX);
            return SFT_ERROR;
        }

        if (tokens->n == SFT_HTTP_TOKENS_MAX) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "%s:%lu: more than %d tokens", file->data,
                               (unsigned long) line, SFT_HTTP_TOKENS_MAX);
            return SFT_ERROR;
        }

        if (sft_http_auth_options(cf, file, line, tend, last, tokens)
            != SFT_OK)
        {
            return SFT_ERROR;
        }

        crypto_generichash(tokens->digests
                           + tokens->n * SFT_HTTP_TOKEN_DIGEST,
                           SFT_HTTP_TOKEN_DIGEST, p, tend - p,
                           tokens->key, sizeof(tokens->key));
        tokens->n++;
    }

    if (tokens->n == 0) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "no token in \"%s\"",
                           file->data);
        return SFT_ERROR;
    }

    return SFT_OK;
}


static char *
sft_http_auth_token_file(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_http_auth_srv_conf_t  *ascf = conf;

    u_char             *text;
    size_t              len;
    sft_int_t           rc;
    sft_str_t          *value, file;
    sft_http_tokens_t  *tokens;

    (void) cmd;

    if (ascf->tokens != SFT_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;
    file = value[1];

    if (sft_conf_full_name(cf->cycle, &file) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    if (sodium_init() < 0) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "sodium_init() failed");
        return SFT_CONF_ERROR;
    }

    tokens = sft_pcalloc(cf->pool, sizeof(sft_http_tokens_t));
    if (tokens == NULL) {
        return SFT_CONF_ERROR;
    }

    tokens->digests = sft_palloc(cf->pool,
                              SFT_HTTP_TOKENS_MAX * SFT_HTTP_TOKEN_DIGEST);
    if (tokens->digests == NULL) {
        return SFT_CONF_ERROR;
    }

    tokens->admin = sft_pnalloc(cf->pool, SFT_HTTP_TOKENS_MAX);
    tokens->names = sft_pcalloc(cf->pool,
                                SFT_HTTP_TOKENS_MAX * sizeof(sft_str_t));
    if (tokens->admin == NULL || tokens->names == NULL) {
        return SFT_CONF_ERROR;
    }

    randombytes_buf(tokens->key, sizeof(tokens->key));

    text = sft_conf_load_file(cf, &file, SFT_HTTP_TOKEN_FILE_MAX, cf->pool,
                              &len);
    if (text == NULL) {
        return SFT_CONF_ERROR;
    }

    rc = sft_http_auth_parse(cf, &file, text, len, tokens);

    sft_explicit_memzero(text, len);

    if (rc != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    ascf->tokens = tokens;

    return SFT_CONF_OK;
}


/* "Bearer" 1*SP token68 *SP; the token, or an empty string */

static sft_str_t
sft_http_auth_bearer(sft_str_t *header)
{
    u_char     *p, *end;
    sft_str_t   token = sft_null_string;

    p = header->data;
    end = p + header->len;

    if (header->len < 8 || strncasecmp((char *) p, "Bearer ", 7) != 0) {
        return token;
    }

    for (p += 7; p < end && *p == ' '; p++) {
        /* void */
    }

    while (end > p && (end[-1] == ' ' || end[-1] == '\t')) {
        end--;
    }

    token.data = p;
    token.len = end - p;

    return token;
}


/* the token's index + 1, or 0 */

static sft_uint_t
sft_http_auth_match(sft_http_tokens_t *tokens, sft_str_t *token)
{
    u_char      digest[SFT_HTTP_TOKEN_DIGEST];
    sft_uint_t  i, eq, match;

    crypto_generichash(digest, sizeof(digest), token->data, token->len,
                       tokens->key, sizeof(tokens->key));

    /* every configured token is compared: no early exit */

    match = 0;

    for (i = 0; i < tokens->n; i++) {
        eq = (sft_uint_t) sft_ct_eq(digest, tokens->digests
                                    + i * SFT_HTTP_TOKEN_DIGEST,
                                    SFT_HTTP_TOKEN_DIGEST);
        match |= (0 - eq) & (i + 1);
    }

    sft_explicit_memzero(digest, sizeof(digest));

    return match;
}


/*
 * 0 when the request may go on; otherwise the status to answer with
 * (401 with r->extra_headers set, 403, or 500).
 */

sft_uint_t
sft_http_auth_check(sft_http_request_t *r)
{
    u_char                    *p;
    sft_uint_t                 i;
    sft_str_t                  token;
    sft_connection_t          *c;
    sft_http_auth_srv_conf_t  *ascf;

    ascf = sft_proto_get_module_srv_conf(r->hc->ctx, sft_http_auth_module);
    c = r->connection;

    if (!(r->path.len >= 5 && sft_memcmp(r->path.data, "/api/", 5) == 0)
        && !(ascf->metrics_auth && sft_str_eq(&r->path, "/metrics")))
    {
        return 0;
    }

    if (ascf->tokens == NULL) {
        if (sft_http_loopback((struct sockaddr *) &c->sockaddr)) {
            sft_str_set(&r->token_name, "loopback");
            r->token_admin = 1;
            return 0;
        }

        sft_log_error(SFT_LOG_WARN, c->log, 0,
                      "admin API refused: no \"api_token_file\" is "
                      "configured and the client is not on loopback");
        return 403;
    }

    /* wrong tokens count with failed logins, and share their bans */

    if (sft_auth_banned((struct sockaddr *) &c->sockaddr)) {
        sft_log_error(SFT_LOG_INFO, c->log, 0,
                      "admin API refused: address banned");
        return 429;
    }

    token = sft_http_auth_bearer(&r->authorization);

    i = token.len ? sft_http_auth_match(ascf->tokens, &token) : 0;

    if (token.len && i == 0) {
        sft_auth_failed((struct sockaddr *) &c->sockaddr, c->log);
    }

    if (i) {
        r->token_name = ascf->tokens->names[i - 1];
        r->token_admin = ascf->tokens->admin[i - 1];

        if (!r->token_admin && r->method != SFT_HTTP_GET
            && r->method != SFT_HTTP_HEAD)
        {
            sft_log_error(SFT_LOG_WARN, c->log, 0,
                          "admin API refused: token \"%.*s\" may only read",
                          SFT_STR_FMT(&r->token_name));
            return 403;
        }

        return 0;
    }

    if (r->authorization.len) {
        sft_log_error(SFT_LOG_WARN, c->log, 0,
                      "admin API refused: wrong bearer token");
    } else {
        sft_log_error(SFT_LOG_INFO, c->log, 0,
                      "admin API refused: no bearer token");
    }

    p = sft_pnalloc(r->pool, 96);
    if (p == NULL) {
        return 500;
    }

    r->extra_headers.data = p;
    r->extra_headers.len = sft_slprintf(p, p + 96,
                               "WWW-Authenticate: Bearer realm=\"siftpd\"%s\r\n",
                               r->authorization.len
                               ? ", error=\"invalid_token\"" : "")
                           - p;

    return 401;
}
