/*
 * sft_user_store.c -- the user stores a configuration may choose from, the
 * store of this process and the lookups every login goes through; the
 * users file as a store, answering at once.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_users.h>
#include <sft_user_store.h>


typedef struct {
    int                  lock;          /* a writer's, or -1 */
} sft_user_store_file_txn_t;


static sft_int_t sft_user_store_file_lookup(sft_user_lookup_t *lk);
static void sft_user_store_file_cancel(sft_user_lookup_t *lk);
static void *sft_user_store_file_begin(sft_str_t *file, sft_uint_t write,
    sft_users_t **users, sft_log_t *log);
static sft_int_t sft_user_store_file_commit(void *txn, sft_users_t *users,
    sft_str_t *name, sft_log_t *log);
static void sft_user_store_file_end(void *txn);


sft_user_store_t  sft_user_store_file = {
    sft_string("file"),
    sft_user_store_file_lookup,
    sft_user_store_file_cancel,
    sft_users_file_lookup,
    sft_user_store_file_begin,
    sft_user_store_file_commit,
    sft_user_store_file_end
};


static sft_user_store_t  *sft_user_store_cur = &sft_user_store_file;


sft_int_t
sft_user_store_register(sft_cycle_t *cycle, sft_user_store_t *store)
{
    sft_users_conf_t   *ucf;
    sft_user_store_t  **p;

    ucf = (sft_users_conf_t *) sft_get_conf(cycle->conf_ctx,
                                            sft_users_module);

    if (ucf->stores == NULL) {
        ucf->stores = sft_array_create(cycle->pool, 2,
                                       sizeof(sft_user_store_t *));
        if (ucf->stores == NULL) {
            return SFT_ERROR;
        }
    }

    p = sft_array_push(ucf->stores);
    if (p == NULL) {
        return SFT_ERROR;
    }

    *p = store;

    return SFT_OK;
}


sft_user_store_t *
sft_user_store_find(sft_cycle_t *cycle, sft_str_t *name)
{
    sft_uint_t          i;
    sft_users_conf_t   *ucf;
    sft_user_store_t  **p;

    ucf = (sft_users_conf_t *) sft_get_conf(cycle->conf_ctx,
                                            sft_users_module);

    if (ucf->stores == NULL) {
        return NULL;
    }

    p = ucf->stores->elts;

    for (i = 0; i < ucf->stores->nelts; i++) {
        if (p[i]->name.len == name->len
            && sft_memcmp(p[i]->name.data, name->data, name->len) == 0)
        {
            return p[i];
        }
    }

    return NULL;
}


void
sft_user_store_use(sft_user_store_t *store)
{
    sft_user_store_cur = store ? store : &sft_user_store_file;
}


sft_int_t
sft_user_lookup(sft_user_lookup_t *lk)
{
    lk->rc = SFT_ERROR;
    lk->user = NULL;
    lk->stale = 0;
    lk->next = NULL;

    return sft_user_store_cur->lookup(lk);
}


void
sft_user_lookup_cancel(sft_user_lookup_t *lk)
{
    sft_user_store_cur->cancel(lk);
}


/* what the store knows now: every login method sees the same users */

sft_user_t *
sft_users_lookup(sft_str_t *name, sft_log_t *log)
{
    return sft_user_store_cur->known(name, log);
}


static sft_int_t
sft_user_store_file_lookup(sft_user_lookup_t *lk)
{
    sft_user_t  *u;

    u = sft_users_file_lookup(&lk->name, lk->log);

    lk->user = sft_user_acquire(u);
    lk->rc = u ? SFT_OK : SFT_DECLINED;

    return lk->rc;
}


static void
sft_user_store_file_cancel(sft_user_lookup_t *lk)
{
    (void) lk;
}


/* the file under its lock, read whole and written whole, atomically */

static void *
sft_user_store_file_begin(sft_str_t *file, sft_uint_t write,
    sft_users_t **users, sft_log_t *log)
{
    sft_user_store_file_txn_t  *txn;

    txn = sft_alloc(sizeof(sft_user_store_file_txn_t), log);
    if (txn == NULL) {
        return NULL;
    }

    txn->lock = -1;

    if (write) {
        txn->lock = sft_users_lock(file, log);

        if (txn->lock == -1) {
            sft_free(txn);
            return NULL;
        }
    }

    *users = sft_users_read(file, SFT_USERS_MISSING_QUIET, log);

    if (*users == NULL) {
        sft_user_store_file_end(txn);
        return NULL;
    }

    return txn;
}


static sft_int_t
sft_user_store_file_commit(void *txn, sft_users_t *users, sft_str_t *name,
    sft_log_t *log)
{
    (void) txn;
    (void) name;

    return sft_users_write(users, log);
}


static void
sft_user_store_file_end(void *data)
{
    sft_user_store_file_txn_t  *txn = data;

    if (txn->lock != -1) {
        close(txn->lock);
    }

    sft_free(txn);
}
