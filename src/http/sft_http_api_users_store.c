/*
 * sft_http_api_users_store.c -- the users API's work on a pool thread:
 * under the store's lock, read the user store, list, show, create, change
 * or delete a user, and write it back (the users file atomically, as
 * "siftpd user" does).  Every worker sees the change on its next lookup,
 * and the login cache follows it.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_http_api_users.h>


static sft_uint_t
sft_http_api_answer(sft_http_api_job_t *job, sft_uint_t status, json_t *o)
{
    if (o == NULL) {
        return sft_http_api_fail(job, 500, NULL, "out of memory");
    }

    free(job->out);
    job->out = json_dumps(o, JSON_COMPACT);
    json_decref(o);

    if (job->out == NULL) {
        return sft_http_api_fail(job, 500, NULL, "out of memory");
    }

    job->status = status;

    return status;
}


static sft_uint_t
sft_http_api_list(sft_http_api_job_t *job, sft_users_t *users)
{
    json_t      *o, *a;
    sft_uint_t   i, total;
    sft_user_t  *u;

    a = json_array();
    u = users->users.elts;
    total = 0;

    for (i = 0; i < users->users.nelts; i++) {
        if (job->prefix.len
            && (u[i].name.len < job->prefix.len
                || sft_memcmp(u[i].name.data, job->prefix.data,
                              job->prefix.len) != 0))
        {
            continue;
        }

        if (total >= job->offset && total - job->offset < job->limit) {
            json_array_append_new(a, sft_http_api_user_json(&u[i]));
        }

        total++;
    }

    o = json_object();
    json_object_set_new(o, "users", a);
    json_object_set_new(o, "total", json_integer(total));
    json_object_set_new(o, "offset", json_integer(job->offset));
    json_object_set_new(o, "limit", json_integer(job->limit));

    return sft_http_api_answer(job, 200, o);
}


/* the user as written, with its new ETag */

static sft_uint_t
sft_http_api_show(sft_http_api_job_t *job, sft_users_t *users,
    sft_uint_t status)
{
    sft_user_t  *u;

    u = sft_users_find(users, &job->name);

    if (u == NULL || sft_http_api_user_etag(u, job->etag) != SFT_OK) {
        return sft_http_api_fail(job, 500, NULL, "the user went");
    }

    return sft_http_api_answer(job, status, sft_http_api_user_json(u));
}


static sft_uint_t
sft_http_api_precondition(sft_http_api_job_t *job, sft_user_t *u)
{
    char  etag[SFT_HTTP_API_ETAG_LEN + 1];

    if (job->if_match.len == 0
        || (job->if_match.len == 1 && job->if_match.data[0] == '*'))
    {
        return 0;
    }

    if (sft_http_api_user_etag(u, etag) != SFT_OK) {
        return sft_http_api_fail(job, 500, NULL, "out of memory");
    }

    if (job->if_match.len != SFT_HTTP_API_ETAG_LEN
        || sft_memcmp(job->if_match.data, etag, SFT_HTTP_API_ETAG_LEN) != 0)
    {
        return sft_http_api_fail(job, 412, NULL, "the user changed since "
                                 "it was read");
    }

    return 0;
}


static sft_uint_t
sft_http_api_change(sft_http_api_job_t *job, void *txn, sft_users_t *users,
    sft_log_t *log)
{
    json_t        *body, *v;
    sft_str_t      name;
    sft_uint_t     status;
    sft_user_t    *u;
    json_error_t   err;

    body = NULL;

    if (job->op != SFT_HTTP_API_DELETE) {
        body = json_loadb((char *) job->body.data, job->body.len,
                          JSON_REJECT_DUPLICATES, &err);

        if (body == NULL) {
            return sft_http_api_fail(job, 400, NULL, "malformed JSON: %s "
                                     "at byte %d", err.text, err.position);
        }

        if (!json_is_object(body)) {
            json_decref(body);
            return sft_http_api_fail(job, 400, NULL, "a JSON object is "
                                     "expected");
        }
    }

    if (job->op == SFT_HTTP_API_CREATE) {
        v = json_object_get(body, "name");

        if (!json_is_string(v)) {
            status = sft_http_api_fail(job, 400, "name", "a string is "
                                       "expected");
            goto done;
        }

        name.data = (u_char *) json_string_value(v);
        name.len = json_string_length(v);

        if (sft_users_valid_name(&name) != SFT_OK) {
            status = sft_http_api_fail(job, 422, "name", "a name is 1 to %d "
                                       "letters, digits and \"._-@\", not "
                                       "first \"-\" or \".\"",
                                       SFT_USER_NAME_MAX);
            goto done;
        }

        if (sft_users_find(users, &name)) {
            status = sft_http_api_fail(job, 409, "name", "the user exists");
            goto done;
        }

        u = sft_users_add(users, &name);
        if (u == NULL) {
            status = sft_http_api_fail(job, 500, NULL, "out of memory");
            goto done;
        }

        /* the name outlives the table, for the log */
        sft_memcpy(job->name_buf, name.data, name.len);
        job->name.data = job->name_buf;
        job->name.len = name.len;

    } else {
        u = sft_users_find(users, &job->name);

        if (u == NULL) {
            status = sft_http_api_fail(job, 404, NULL, "no such user");
            goto done;
        }

        status = sft_http_api_precondition(job, u);
        if (status) {
            goto done;
        }
    }

    if (job->op == SFT_HTTP_API_DELETE) {
        (void) sft_users_delete(users, &job->name);

    } else {
        status = sft_http_api_user_apply(job, users, u, body);
        if (status) {
            goto done;
        }
    }

    if (job->store->commit(txn, users, &job->name, log) != SFT_OK) {
        status = sft_http_api_fail(job, 500, NULL, "the user store could "
                                   "not be written");
        goto done;
    }

    /* a user who may not log in any more keeps no session either */
    job->shut_out = (job->op == SFT_HTTP_API_DELETE
                     || (job->op == SFT_HTTP_API_UPDATE && u->disabled));

    if (job->op == SFT_HTTP_API_DELETE) {
        job->status = 204;
        status = 204;

    } else {
        status = sft_http_api_show(job, users,
                                   job->op == SFT_HTTP_API_CREATE ? 201 : 200);
    }

done:

    if (body) {
        json_decref(body);
    }

    return status;
}


void
sft_http_api_users_run(void *data, sft_log_t *log)
{
    void                *txn;
    sft_user_t          *u;
    sft_users_t         *users;
    sft_http_api_job_t  *job = data;

    users = NULL;

    txn = job->store->begin(&job->arg, job->op >= SFT_HTTP_API_CREATE,
                            &users, log);

    if (txn == NULL) {
        (void) sft_http_api_fail(job, 500, NULL, "the user store could not "
                                 "be read");
        return;
    }

    if (job->op == SFT_HTTP_API_LIST) {
        (void) sft_http_api_list(job, users);

    } else if (job->op == SFT_HTTP_API_GET) {
        u = sft_users_find(users, &job->name);

        if (u == NULL) {
            (void) sft_http_api_fail(job, 404, NULL, "no such user");

        } else {
            (void) sft_http_api_show(job, users, 200);
        }

    } else {
        (void) sft_http_api_change(job, txn, users, log);
    }

    sft_users_free(users);
    job->store->end(txn);
}
