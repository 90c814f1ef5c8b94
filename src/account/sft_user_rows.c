/*
 * sft_user_rows.c -- users built from (name, key, directory, value) rows,
 * the shape a store other than the file answers in: each row is what one
 * line of the users file would say, checked by the same sft_users_set().
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_users.h>
#include <sft_user_store.h>


sft_users_t *
sft_users_from_rows(sft_str_t *source, sft_user_row_t *rows, sft_uint_t n,
    u_char *err, size_t errlen, sft_log_t *log)
{
    u_char       *last;
    sft_uint_t    i;
    sft_user_t   *u;
    sft_users_t  *users;

    last = err + errlen - 1;
    err[0] = '\0';

    users = sft_users_parse(source, (u_char *) "", 0, log);
    if (users == NULL) {
        return NULL;
    }

    u = NULL;

    for (i = 0; i < n; i++) {
        if (u == NULL || u->name.len != rows[i].name.len
            || sft_memcmp(u->name.data, rows[i].name.data, u->name.len) != 0)
        {
            if (sft_users_valid_name(&rows[i].name) != SFT_OK
                || sft_users_find(users, &rows[i].name) != NULL)
            {
                sft_slprintf(err, last, "invalid or scattered user name "
                             "\"%.*s\"", SFT_STR_FMT(&rows[i].name))[0]
                    = '\0';
                goto failed;
            }

            u = sft_users_add(users, &rows[i].name);
            if (u == NULL) {
                goto failed;
            }

            /* kept sorted as it grows, which rows in name order keep */

            if (users->users.nelts > 1 && sft_users_cmp(u, u - 1) < 0) {
                sft_users_sort(users);
                u = sft_users_find(users, &rows[i].name);
            }
        }

        /* SFT_DECLINED: an unknown key, said in err */

        if (sft_users_set(users, u, &rows[i].key,
                          rows[i].path.len ? &rows[i].path : NULL,
                          &rows[i].value, err, errlen)
            != SFT_OK)
        {
            goto failed;
        }
    }

    return users;

failed:

    if (err[0] == '\0') {
        sft_slprintf(err, last, "out of memory")[0] = '\0';
    }

    sft_users_free(users);

    return NULL;
}
