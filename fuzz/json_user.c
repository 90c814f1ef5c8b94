/*
 * json_user.c -- libFuzzer target for the admin API's user bodies: the
 * JSON of a POST (create) or PATCH (change "alice") run as the API runs
 * it, sft_http_api_users_run() on a users file in a temporary directory
 * written afresh before each input; the types checked by
 * sft_http_api_user_apply(), the values by the store's sft_users_set().
 * Bit 0 of the first input byte picks the method, the rest is the body.
 * Checked: the answer is 200/201 with the user, or 400, 409 or 422 with
 * {"error", "status"}; never 500; an accepted body left a users file that
 * parses, whose user is the one answered; and that answer sent back as a
 * PATCH (without the password, which it only flags) is accepted and
 * changes nothing: the user and the file stay the same, byte for byte.
 * Passwords are not hashed by argon2 here (a run would take a tenth of a
 * second): sft_auth_hash_password() is linked to a stub (-Wl,--wrap)
 * that gives a fixed valid hash.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_http_api_users.h>
#include <sft_auth.h>

#include <assert.h>

#include "fuzz_log.h"
#include "fuzz_tmp.h"


#define FUZZ_HASH  "$argon2id$v=19$m=65536,t=3,p=1$RIq6tjf7KmcgHrl5E0iwmQ" \
                   "$F3FtbQhqwfjnrH6bd79szDhB2drSba7IzZieTUhHkFo"


static char       fuzz_path[96];
static sft_str_t  fuzz_file;

static const char  fuzz_users[] =
    "[alice]\n"
    "password = " FUZZ_HASH "\n"
    "home = /alice\n"
    "perms = list,download,upload\n"
    "perms /pub = list,download\n"
    "hide /pub = ^\\.\n"
    "quota_bytes = 10g\n"
    "allow_from = 10.0.0.0/8\n"
    "\n"
    "[bob]\n"
    "home = /bob\n";


sft_int_t __wrap_sft_auth_hash_password(sft_users_conf_t *ucf, u_char *pw,
    size_t len, char *out, size_t size);


sft_int_t
__wrap_sft_auth_hash_password(sft_users_conf_t *ucf, u_char *pw, size_t len,
    char *out, size_t size)
{
    assert(len >= 1 && len <= SFT_AUTH_MAX_PASSWORD);
    assert(sizeof(FUZZ_HASH) <= size);
    memcpy(out, FUZZ_HASH, sizeof(FUZZ_HASH));

    return SFT_OK;
}


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_log_init(NULL);

    fuzz_tmp_init();

    fuzz_file.len = snprintf(fuzz_path, sizeof(fuzz_path), "%s/users",
                             fuzz_tmp_dir);
    fuzz_file.data = (u_char *) fuzz_path;

    return 0;
}


static u_char *
read_file(size_t *len)
{
    int          fd;
    u_char      *text;
    struct stat  st;

    fd = open(fuzz_path, O_RDONLY|O_CLOEXEC);
    assert(fd != -1 && fstat(fd, &st) == 0);

    text = malloc(st.st_size + 1);
    assert(text != NULL);
    assert(read(fd, text, st.st_size) == st.st_size);
    close(fd);

    *len = st.st_size;

    return text;
}


/* one request of the API; its answer parsed */

static json_t *
run(sft_http_api_job_t *job, sft_uint_t op, const char *name,
    const u_char *body, size_t len)
{
    json_t  *answer;

    sft_memzero(job, sizeof(sft_http_api_job_t));
    job->op = op;
    job->store = &sft_user_store_file;
    job->arg = fuzz_file;
    job->name.data = (u_char *) name;
    job->name.len = name ? strlen(name) : 0;
    job->body.data = (u_char *) body;
    job->body.len = len;

    sft_http_api_users_run(job, &fuzz_log);

    assert(job->out != NULL);
    answer = json_loads(job->out, 0, NULL);
    assert(answer != NULL && json_is_object(answer));

    free(job->out);
    job->out = NULL;

    return answer;
}


/* the user as the file now has it, as JSON */

static json_t *
user_in_file(sft_str_t *name, u_char **stanza, size_t *len)
{
    json_t       *o;
    sft_user_t   *u;
    sft_users_t  *users;

    users = sft_users_read(&fuzz_file, 0, &fuzz_log);
    assert(users != NULL);

    u = sft_users_find(users, name);
    assert(u != NULL);

    o = sft_http_api_user_json(u);
    *stanza = sft_users_format(u, 1, len);
    assert(o != NULL && *stanza != NULL);

    sft_users_free(users);

    return o;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                  fd;
    char                *body2;
    u_char              *copy, *stanza, *stanza2, *file, *file2;
    size_t               len, len2, flen, flen2;
    json_t              *answer, *again, *user;
    sft_str_t            name;
    sft_uint_t           op;
    sft_http_api_job_t   job;

    if (size < 1) {
        return 0;
    }

    fd = open(fuzz_path, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600);
    assert(fd != -1);
    assert(write(fd, fuzz_users, sizeof(fuzz_users) - 1)
           == sizeof(fuzz_users) - 1);
    close(fd);

    op = (data[0] & 1) ? SFT_HTTP_API_UPDATE : SFT_HTTP_API_CREATE;

    /* a copy of exactly the body, so a read past it is caught */
    copy = malloc(size - 1 ? size - 1 : 1);
    assert(copy != NULL);
    memcpy(copy, data + 1, size - 1);

    answer = run(&job, op, op == SFT_HTTP_API_UPDATE ? "alice" : NULL, copy,
                 size - 1);
    free(copy);

    if (job.status != 200 && job.status != 201) {
        assert(job.status == 400 || job.status == 409 || job.status == 422);
        assert(json_is_string(json_object_get(answer, "error")));
        assert(json_integer_value(json_object_get(answer, "status"))
               == (json_int_t) job.status);
        json_decref(answer);
        return 0;
    }

    assert(job.status == (op == SFT_HTTP_API_CREATE ? 201 : 200));

    /* the file parses, and holds the user answered */

    name.data = (u_char *) json_string_value(json_object_get(answer, "name"));
    name.len = json_string_length(json_object_get(answer, "name"));
    assert(name.data != NULL);

    user = user_in_file(&name, &stanza, &len);
    assert(json_equal(user, answer));
    json_decref(user);

    /* the answer sent back changes nothing */

    file = read_file(&flen);

    assert(json_object_del(answer, "password") == 0);
    body2 = json_dumps(answer, JSON_COMPACT);
    assert(body2 != NULL);

    again = run(&job, SFT_HTTP_API_UPDATE, (char *) name.data,
                (u_char *) body2, strlen(body2));
    assert(job.status == 200);

    user = user_in_file(&name, &stanza2, &len2);
    assert(json_object_del(user, "password") == 0);
    assert(json_equal(user, answer));
    assert(len2 == len && memcmp(stanza2, stanza, len) == 0);

    file2 = read_file(&flen2);
    assert(flen2 == flen && memcmp(file2, file, flen) == 0);

    json_decref(user);
    json_decref(again);
    json_decref(answer);
    free(body2);
    free(stanza);
    free(stanza2);
    free(file);
    free(file2);

    return 0;
}
