/*
 * sft_http_api_user_json.c -- a user of the store as JSON, its ETag, and
 * a JSON object of changes applied to a user: types are checked here
 * (400), values by the store's own parser (422), as for the users file.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_http_api_users.h>
#include <sft_auth.h>
#include <sft_usage.h>
#include <sodium.h>


typedef enum {
    SFT_HTTP_API_STRING,
    SFT_HTTP_API_COUNT,            /* an integer >= 0 */
    SFT_HTTP_API_BOOL,
    SFT_HTTP_API_STRINGS,          /* an array of strings */
    SFT_HTTP_API_RULES,
    SFT_HTTP_API_PASSWORD,         /* a string or null */
    SFT_HTTP_API_NAME,
    SFT_HTTP_API_SHOWN             /* shown, ignored in a request */
} sft_http_api_type_e;


/* every key of the store, by its JSON name and its name in the file */
static const struct {
    const char           *json;
    const char           *key;
    sft_http_api_type_e   type;
} sft_http_api_fields[] = {
    { "name", "name", SFT_HTTP_API_NAME },
    { "password", "password", SFT_HTTP_API_PASSWORD },
    { "home", "home", SFT_HTTP_API_STRING },
    { "storage", "storage", SFT_HTTP_API_STRING },
    { "rules", "perms", SFT_HTTP_API_RULES },
    { "quota_bytes", "quota_bytes", SFT_HTTP_API_COUNT },
    { "quota_files", "quota_files", SFT_HTTP_API_COUNT },
    { "max_sessions", "max_sessions", SFT_HTTP_API_COUNT },
    { "upload_rate", "upload_rate", SFT_HTTP_API_COUNT },
    { "download_rate", "download_rate", SFT_HTTP_API_COUNT },
    { "allow_from", "allow_from", SFT_HTTP_API_STRINGS },
    { "ssh_keys", "ssh_key", SFT_HTTP_API_STRINGS },
    { "disabled", "disabled", SFT_HTTP_API_BOOL },
    { "usage", NULL, SFT_HTTP_API_SHOWN },
};


static const char  *sft_http_api_rule_keys[] = { "perms", "deny", "hide" };


/*
 * What the user stores now, from the shared usage zone: null until a
 * session or a recount counted the home; read only, never written back.
 */

static json_t *
sft_http_api_usage_json(sft_str_t *name)
{
    off_t         bytes, files;
    sft_usage_t  *usage;

    usage = sft_usage_lookup(name);

    if (usage == NULL || !sft_usage_known(usage)) {
        return json_null();
    }

    sft_usage_get(usage, &bytes, &files);

    return json_pack("{s:I, s:I, s:I}", "bytes", (json_int_t) bytes,
                     "files", (json_int_t) files,
                     "sessions", (json_int_t) sft_usage_sessions(usage));
}


json_t *
sft_http_api_user_json(sft_user_t *u)
{
    u_char            buf[256];
    json_t           *o, *a, *rule;
    sft_uint_t        i;
    sft_str_t        *key;
    sft_user_rule_t  *r;
    sft_user_cidr_t  *cidr;

    o = json_object();
    if (o == NULL) {
        return NULL;
    }

    json_object_set_new(o, "name", json_stringn((char *) u->name.data,
                                                u->name.len));
    json_object_set_new(o, "password", json_boolean(u->password.len));
    json_object_set_new(o, "home", json_stringn((char *) u->home.data,
                                                u->home.len));
    json_object_set_new(o, "storage", json_stringn((char *) u->storage.data,
                                                   u->storage.len));

    a = json_array();
    r = u->rules.elts;

    for (i = 0; i < u->rules.nelts; i++) {

        /* the root's rule of a user without perms sets nothing: a rule
           sent back must set something */
        if (r[i].perms == -1 && r[i].deny == NULL && r[i].hide == NULL) {
            continue;
        }

        rule = json_object();
        json_object_set_new(rule, "path", json_stringn((char *) r[i].path.data,
                                                       r[i].path.len));

        if (r[i].perms != -1) {
            *sft_perms_format(buf, buf + sizeof(buf) - 1, r[i].perms) = '\0';
            json_object_set_new(rule, "perms", json_string((char *) buf));
        }

        if (r[i].deny) {
            json_object_set_new(rule, "deny",
                                json_stringn((char *) r[i].deny->source.data,
                                             r[i].deny->source.len));
        }

        if (r[i].hide) {
            json_object_set_new(rule, "hide",
                                json_stringn((char *) r[i].hide->source.data,
                                             r[i].hide->source.len));
        }

        json_array_append_new(a, rule);
    }

    json_object_set_new(o, "rules", a);
    json_object_set_new(o, "quota_bytes", json_integer(u->quota_bytes));
    json_object_set_new(o, "quota_files", json_integer(u->quota_files));
    json_object_set_new(o, "max_sessions", json_integer(u->max_sessions));
    json_object_set_new(o, "upload_rate", json_integer(u->upload_rate));
    json_object_set_new(o, "download_rate", json_integer(u->download_rate));

    a = json_array();
    cidr = u->allow_from.elts;

    for (i = 0; i < u->allow_from.nelts; i++) {
        json_array_append_new(a, json_stringn((char *) cidr[i].text.data,
                                              cidr[i].text.len));
    }

    json_object_set_new(o, "allow_from", a);

    a = json_array();
    key = u->ssh_keys.elts;

    for (i = 0; i < u->ssh_keys.nelts; i++) {
        json_array_append_new(a, json_stringn((char *) key[i].data,
                                              key[i].len));
    }

    json_object_set_new(o, "ssh_keys", a);
    json_object_set_new(o, "disabled", json_boolean(u->disabled));
    json_object_set_new(o, "usage", sft_http_api_usage_json(&u->name));

    return o;
}


/* a digest of the user's stanza as the file holds it, hash included */

sft_int_t
sft_http_api_user_etag(sft_user_t *u, char *etag)
{
    u_char  *text, digest[16];
    size_t   len, i;

    text = sft_users_format(u, 1, &len);
    if (text == NULL) {
        return SFT_ERROR;
    }

    crypto_generichash(digest, sizeof(digest), text, len, NULL, 0);
    free(text);

    etag[0] = '"';

    for (i = 0; i < sizeof(digest); i++) {
        etag[1 + 2 * i] = "0123456789abcdef"[digest[i] >> 4];
        etag[2 + 2 * i] = "0123456789abcdef"[digest[i] & 0xf];
    }

    etag[SFT_HTTP_API_ETAG_LEN - 1] = '"';
    etag[SFT_HTTP_API_ETAG_LEN] = '\0';

    return SFT_OK;
}


/* the error answer: {"error": ..., "field": ..., "status": ...} */

sft_uint_t
sft_http_api_fail(sft_http_api_job_t *job, sft_uint_t status,
    const char *field, const char *fmt, ...)
{
    json_t   *o, *v;
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    vsnprintf(job->reason, sizeof(job->reason), fmt, args);
    va_end(args);

    o = json_object();
    if (o == NULL) {
        job->status = 500;
        return 500;
    }

    v = json_string(job->reason);

    if (v == NULL) {
        /* the JSON parser's message quotes the body: bytes not UTF-8 */

        for (p = (u_char *) job->reason; *p; p++) {
            if (*p >= 0x80) {
                *p = '?';
            }
        }

        v = json_string(job->reason);
    }

    json_object_set_new(o, "error", v);

    if (field) {
        json_object_set_new(o, "field", json_string(field));
    }

    json_object_set_new(o, "status", json_integer(status));

    free(job->out);
    job->out = json_dumps(o, JSON_COMPACT);
    json_decref(o);

    job->status = status;

    return status;
}


/* one value into the store, as the users file would give it */

static sft_uint_t
sft_http_api_set(sft_http_api_job_t *job, sft_users_t *users, sft_user_t *u,
    const char *field, const char *key, sft_str_t *path, const char *value,
    size_t len)
{
    u_char     err[256];
    sft_int_t  rc;
    sft_str_t  k, v;

    k.data = (u_char *) key;
    k.len = strlen(key);
    v.data = (u_char *) value;
    v.len = len;

    if (memchr(value, '\n', len) || memchr(value, '\0', len)) {
        return sft_http_api_fail(job, 422, field, "a line break or NUL in "
                                 "the value");
    }

    rc = sft_users_set(users, u, &k, path, &v, err, sizeof(err));

    if (rc != SFT_OK) {
        return sft_http_api_fail(job, 422, field, "%s", err);
    }

    return 0;
}


static sft_uint_t
sft_http_api_rules(sft_http_api_job_t *job, sft_users_t *users,
    sft_user_t *u, json_t *rules)
{
    size_t       i, j;
    json_t      *rule, *v;
    sft_int_t    n;
    sft_str_t    path, key = sft_string("perms");
    sft_uint_t   status;
    const char  *k;

    if (!json_is_array(rules)) {
        return sft_http_api_fail(job, 400, "rules", "an array of objects "
                                 "is expected");
    }

    if (sft_users_unset(u, &key) != SFT_OK) {
        return sft_http_api_fail(job, 500, NULL, "out of memory");
    }

    json_array_foreach(rules, i, rule) {
        v = json_object_get(rule, "path");

        if (!json_is_object(rule) || !json_is_string(v)) {
            return sft_http_api_fail(job, 400, "rules", "a rule is an object "
                                     "with a \"path\" string");
        }

        n = 1;

        json_object_foreach(rule, k, v) {
            for (j = 0; j < sft_nelems(sft_http_api_rule_keys); j++) {
                if (strcmp(k, sft_http_api_rule_keys[j]) == 0) {
                    break;
                }
            }

            if (j == sft_nelems(sft_http_api_rule_keys)) {
                if (strcmp(k, "path") == 0) {
                    continue;
                }

                return sft_http_api_fail(job, 400, "rules", "unknown key "
                                         "\"%s\" in a rule", k);
            }

            if (!json_is_string(v)) {
                return sft_http_api_fail(job, 400, "rules", "\"%s\" of a "
                                         "rule is a string", k);
            }

            n++;
        }

        path.data = (u_char *) json_string_value(json_object_get(rule,
                                                                 "path"));
        path.len = json_string_length(json_object_get(rule, "path"));

        for (j = 0; j < sft_nelems(sft_http_api_rule_keys); j++) {
            v = json_object_get(rule, sft_http_api_rule_keys[j]);
            if (v == NULL) {
                continue;
            }

            status = sft_http_api_set(job, users, u, "rules",
                                      sft_http_api_rule_keys[j],
                                      path.len == 1 && path.data[0] == '/'
                                      ? NULL : &path,
                                      json_string_value(v),
                                      json_string_length(v));
            if (status) {
                return status;
            }
        }

        if (n == 1) {
            return sft_http_api_fail(job, 422, "rules", "the rule of \"%s\" "
                                     "sets nothing", path.data);
        }
    }

    return 0;
}


static sft_uint_t
sft_http_api_value(sft_http_api_job_t *job, sft_users_t *users,
    sft_user_t *u, const char *field, const char *key,
    sft_http_api_type_e type, json_t *v)
{
    char         num[32];
    size_t       i;
    json_t      *e;
    sft_str_t    k;
    sft_uint_t   status;

    k.data = (u_char *) key;
    k.len = strlen(key);

    switch (type) {

    case SFT_HTTP_API_STRING:
        if (!json_is_string(v)) {
            return sft_http_api_fail(job, 400, field, "a string is expected");
        }

        (void) sft_users_unset(u, &k);

        return sft_http_api_set(job, users, u, field, key, NULL,
                                json_string_value(v), json_string_length(v));

    case SFT_HTTP_API_COUNT:
        if (!json_is_integer(v)) {
            return sft_http_api_fail(job, 400, field,
                                     "an integer is expected");
        }

        if (json_integer_value(v) < 0) {
            return sft_http_api_fail(job, 422, field, "a negative value");
        }

        (void) sft_users_unset(u, &k);

        return sft_http_api_set(job, users, u, field, key, NULL, num,
                                snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
                                         json_integer_value(v)));

    case SFT_HTTP_API_BOOL:
        if (!json_is_boolean(v)) {
            return sft_http_api_fail(job, 400, field, "true or false is "
                                     "expected");
        }

        (void) sft_users_unset(u, &k);

        return sft_http_api_set(job, users, u, field, key, NULL,
                                json_is_true(v) ? "yes" : "no",
                                json_is_true(v) ? 3 : 2);

    case SFT_HTTP_API_STRINGS:
        if (!json_is_array(v)) {
            return sft_http_api_fail(job, 400, field, "an array of strings "
                                     "is expected");
        }

        json_array_foreach(v, i, e) {
            if (!json_is_string(e)) {
                return sft_http_api_fail(job, 400, field, "an array of "
                                         "strings is expected");
            }
        }

        (void) sft_users_unset(u, &k);

        json_array_foreach(v, i, e) {
            status = sft_http_api_set(job, users, u, field, key, NULL,
                                      json_string_value(e),
                                      json_string_length(e));
            if (status) {
                return status;
            }
        }

        return 0;

    case SFT_HTTP_API_RULES:
        return sft_http_api_rules(job, users, u, v);

    default:
        return 0;
    }
}


/* the clear password, hashed here: this runs on a pool thread */

static sft_uint_t
sft_http_api_password(sft_http_api_job_t *job, sft_users_t *users,
    sft_user_t *u, json_t *v)
{
    char       hash[SFT_AUTH_HASH_LEN + 1];
    sft_str_t  key = sft_string("password");

    (void) sft_users_unset(u, &key);

    if (json_is_null(v)) {
        return sft_http_api_set(job, users, u, "password", "password", NULL,
                                "", 0);
    }

    if (json_string_length(v) == 0
        || json_string_length(v) > SFT_AUTH_MAX_PASSWORD)
    {
        return sft_http_api_fail(job, 422, "password", "a password is 1 to "
                                 "%d bytes", SFT_AUTH_MAX_PASSWORD);
    }

    if (sft_auth_hash_password(job->ucf, (u_char *) json_string_value(v),
                               json_string_length(v), hash, sizeof(hash))
        != SFT_OK)
    {
        return sft_http_api_fail(job, 500, "password", "hashing failed");
    }

    return sft_http_api_set(job, users, u, "password", "password", NULL,
                            hash, strlen(hash));
}


/*
 * Every key of "obj" into the user, or the error answer's status; the
 * password last, after every other value was found good.
 */

sft_uint_t
sft_http_api_user_apply(sft_http_api_job_t *job, sft_users_t *users,
    sft_user_t *u, json_t *obj)
{
    size_t       i;
    json_t      *v, *password;
    sft_uint_t   status;
    const char  *k;

    if (!json_is_object(obj)) {
        return sft_http_api_fail(job, 400, NULL, "a JSON object is "
                                 "expected");
    }

    password = NULL;

    json_object_foreach(obj, k, v) {
        for (i = 0; i < sft_nelems(sft_http_api_fields); i++) {
            if (strcmp(k, sft_http_api_fields[i].json) == 0) {
                break;
            }
        }

        if (i == sft_nelems(sft_http_api_fields)) {
            return sft_http_api_fail(job, 400, k, "unknown field");
        }

        switch (sft_http_api_fields[i].type) {

        case SFT_HTTP_API_NAME:
            if (!json_is_string(v)) {
                return sft_http_api_fail(job, 400, k, "a string is expected");
            }

            if (json_string_length(v) != u->name.len
                || sft_memcmp(json_string_value(v), u->name.data,
                              u->name.len) != 0)
            {
                return sft_http_api_fail(job, 422, k, "a user is not "
                                         "renamed");
            }

            continue;

        case SFT_HTTP_API_SHOWN:
            continue;

        case SFT_HTTP_API_PASSWORD:
            if (!json_is_string(v) && !json_is_null(v)) {
                return sft_http_api_fail(job, 400, k, "a string or null is "
                                         "expected");
            }

            password = v;
            continue;

        default:
            status = sft_http_api_value(job, users, u, k,
                                        sft_http_api_fields[i].key,
                                        sft_http_api_fields[i].type, v);
            if (status) {
                return status;
            }
        }
    }

    if (password) {
        return sft_http_api_password(job, users, u, password);
    }

    return 0;
}
