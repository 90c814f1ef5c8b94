/*
 * sft_http_api.c -- what the /api/v1/ routes share: the routes of the
 * sessions, nodes, bans, server, recount, token and OpenAPI files added from
 * their tables (the users module adds its own), a JSON error or answer
 * sent on the loop with its log line, the audit log ("api_audit_log"):
 * one line a change requested, made or refused, with the client, the
 * token, the method, the route, the user and the status, and whether a
 * user shut out through the API loses its sessions ("api_end_sessions").
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api.h>


#define SFT_HTTP_API_AUDIT_MAX   1024


typedef struct {
    sft_log_file_t  *audit;          /* NULL: no audit log */
    sft_flag_t       end_sessions;   /* of users disabled or deleted */
} sft_http_api_srv_conf_t;


static char *sft_http_api_audit_log(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static void *sft_http_api_create_srv_conf(sft_conf_t *cf);
static char *sft_http_api_merge_srv_conf(sft_conf_t *cf, void *parent,
    void *child);
static char *sft_http_api_init_main_conf(sft_conf_t *cf, void *conf);


static const sft_http_api_route_t  *sft_http_api_tables[] = {
    sft_http_api_sessions_routes,
    sft_http_api_nodes_routes,
    sft_http_api_bans_routes,
    sft_http_api_server_routes,
    sft_http_api_recount_routes,
    sft_http_api_token_routes,
    sft_http_api_openapi_routes,
};


static sft_command_t  sft_http_api_commands[] = {

    { sft_string("api_audit_log"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_http_api_audit_log,
      SFT_PROTO_SRV_CONF_OFFSET,
      0,
      NULL,
      sft_command_doc("file | off", "off",
          "Log every change made through the API, one line each: the "
          "token, the method, the route, the user and the status.") },

    { sft_string("api_end_sessions"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_http_api_srv_conf_t, end_sessions),
      NULL,
      sft_command_doc("on | off", "on",
          "End the open sessions of a user disabled or deleted through "
          "the API, in every worker; off lets them run to their end.") },

    sft_null_command
};


static sft_proto_module_t  sft_http_api_module_ctx = {
    NULL,
    sft_http_api_init_main_conf,
    sft_http_api_create_srv_conf,
    sft_http_api_merge_srv_conf
};


sft_module_t  sft_http_api_module = {
    SFT_MODULE_V1,
    &sft_http_api_module_ctx,              /* module context */
    sft_http_api_commands,                 /* module directives */
    SFT_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static void *
sft_http_api_create_srv_conf(sft_conf_t *cf)
{
    sft_http_api_srv_conf_t  *conf;

    conf = sft_palloc(cf->pool, sizeof(sft_http_api_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->audit = SFT_CONF_UNSET_PTR;
    conf->end_sessions = SFT_CONF_UNSET;

    return conf;
}


static char *
sft_http_api_merge_srv_conf(sft_conf_t *cf, void *parent, void *child)
{
    sft_http_api_srv_conf_t  *prev = parent;
    sft_http_api_srv_conf_t  *conf = child;

    (void) cf;

    sft_conf_merge_ptr_value(conf->audit, prev->audit, NULL);
    sft_conf_merge_value(conf->end_sessions, prev->end_sessions, 1);

    return SFT_CONF_OK;
}


static void
sft_http_api_close_audit(void *data)
{
    sft_log_file_t  *file = data;

    if (file->fd != SFT_INVALID_FILE) {
        close(file->fd);
        file->fd = SFT_INVALID_FILE;
    }
}


/* opened by the master with the cycle, reopened with the other logs */

static char *
sft_http_api_audit_log(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_http_api_srv_conf_t  *acf = conf;

    sft_str_t            *value;
    sft_log_file_t       *file, **f;
    sft_pool_cleanup_t   *cln;

    (void) cmd;

    if (acf->audit != SFT_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (sft_str_eq(&value[1], "off")) {
        acf->audit = NULL;
        return SFT_CONF_OK;
    }

    file = sft_pcalloc(cf->pool, sizeof(sft_log_file_t));
    if (file == NULL) {
        return SFT_CONF_ERROR;
    }

    file->fd = SFT_INVALID_FILE;
    file->name = value[1];

    if (sft_conf_full_name(cf->cycle, &file->name) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    acf->audit = file;

    if (sft_test_config || sft_signaller) {
        return SFT_CONF_OK;
    }

    cln = sft_pool_cleanup_add(cf->cycle->pool, 0);
    f = sft_array_push(&cf->cycle->open_files);

    if (cln == NULL || f == NULL
        || sft_log_open_file(file, cf->log) != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    cln->handler = sft_http_api_close_audit;
    cln->data = file;
    *f = file;

    return SFT_CONF_OK;
}


static char *
sft_http_api_init_main_conf(sft_conf_t *cf, void *conf)
{
    sft_uint_t  i;

    (void) conf;

    for (i = 0; i < sft_nelems(sft_http_api_tables); i++) {
        if (sft_http_api_add_routes(cf, sft_http_api_tables[i])
            != SFT_CONF_OK)
        {
            return SFT_CONF_ERROR;
        }
    }

    return SFT_CONF_OK;
}


char *
sft_http_api_add_routes(sft_conf_t *cf, const sft_http_api_route_t *routes)
{
    for ( /* void */ ; routes->path; routes++) {
        if (sft_http_add_route(cf, routes->path, routes->methods,
                               routes->handler)
            != SFT_OK)
        {
            return SFT_CONF_ERROR;
        }
    }

    return SFT_CONF_OK;
}


/* {"error":REASON[,"field":FIELD],"status":N}, logged at info */

sft_int_t
sft_http_api_error(sft_http_request_t *r, sft_uint_t status,
    const char *field, const char *reason)
{
    u_char     *p;
    size_t      len;
    sft_str_t   body;

    len = 96 + strlen(reason) + (field ? strlen(field) : 0);

    p = sft_pnalloc(r->pool, len);
    if (p == NULL) {
        return SFT_ERROR;
    }

    body.data = p;
    body.len = sft_slprintf(p, p + len, "{\"error\":\"%s\"%s%s%s,"
                            "\"status\":%lu}", reason,
                            field ? ",\"field\":\"" : "", field ? field : "",
                            field ? "\"" : "", (unsigned long) status)
               - p;

    sft_log_error(SFT_LOG_INFO, r->connection->log, 0,
                  "admin API: %s, token \"%.*s\"", reason,
                  SFT_STR_FMT(&r->token_name));

    return sft_http_send_response(r, status, "application/json", &body);
}


/* a JSON answer; json is released */

sft_int_t
sft_http_api_send_json(sft_http_request_t *r, sft_uint_t status, json_t *json)
{
    char       *out;
    sft_int_t   rc;
    sft_str_t   body;

    out = json_dumps(json, JSON_COMPACT);
    json_decref(json);

    if (out == NULL) {
        return SFT_ERROR;
    }

    body.data = (u_char *) out;
    body.len = strlen(out);

    rc = sft_http_send_response(r, status, "application/json", &body);

    free(out);

    return rc;
}


/* do a user's sessions end when the API disables or deletes the user */

sft_uint_t
sft_http_api_end_sessions(sft_http_request_t *r)
{
    sft_http_api_srv_conf_t  *acf;

    acf = sft_proto_get_module_srv_conf(r->hc->ctx, sft_http_api_module);

    return acf->end_sessions;
}


/* one line of the audit log: who changed what (user: "-" when empty) */

void
sft_http_api_audit(sft_http_request_t *r, sft_str_t *user, sft_uint_t status,
    const char *reason)
{
    u_char                   *p, *last;
    time_t                    now;
    struct tm                 tm;
    u_char                    line[SFT_HTTP_API_AUDIT_MAX];
    sft_http_api_srv_conf_t  *acf;

    acf = sft_proto_get_module_srv_conf(r->hc->ctx, sft_http_api_module);

    if (acf->audit == NULL || acf->audit->fd == SFT_INVALID_FILE) {
        return;
    }

    now = time(NULL);
    gmtime_r(&now, &tm);

    /* room for the reason's closing quote and the newline */

    p = line;
    last = line + sizeof(line) - 2;

    p += strftime((char *) p, last - p, "%Y-%m-%dT%H:%M:%SZ", &tm);

    p = sft_slprintf(p, last, " client=%.*s token=%.*s method=%.*s "
                     "route=%.*s user=%.*s status=%lu",
                     SFT_STR_FMT(&r->connection->addr_text),
                     SFT_STR_FMT(&r->token_name),
                     SFT_STR_FMT(&r->method_name), SFT_STR_FMT(&r->path),
                     user->len ? (int) user->len : 1,
                     user->len ? (char *) user->data : "-",
                     (unsigned long) status);

    if (status >= 400 && reason[0]) {
        p = sft_slprintf(p, last, " reason=\"");

        /* the reason's own quotes would end the field */
        for ( /* void */ ; *reason && p < last; reason++) {
            *p++ = (*reason == '"') ? '\'' : *reason;
        }

        *p++ = '"';
    }

    *p++ = '\n';

    sft_log_write(acf->audit->fd, line, p - line);
}


/* a change refused: its audit line and its error answer */

sft_int_t
sft_http_api_refuse(sft_http_request_t *r, sft_str_t *user,
    sft_uint_t status, const char *reason)
{
    sft_http_api_audit(r, user, status, reason);

    return sft_http_api_error(r, status, NULL, reason);
}
