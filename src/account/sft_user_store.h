/*
 * sft_user_store.h -- user stores: where the users come from.  The users
 * file is the first store; a module may bring another (PostgreSQL) and
 * "user_store TYPE ARGUMENT" chooses one.  A lookup answers at once or
 * later on the event loop, so a store may ask a server over the network.
 */

#ifndef _SFT_USER_STORE_H_INCLUDED_
#define _SFT_USER_STORE_H_INCLUDED_


#include <sft_users.h>


typedef struct sft_user_lookup_s  sft_user_lookup_t;

typedef void (*sft_user_lookup_pt)(sft_user_lookup_t *lk);


struct sft_user_lookup_s {
    sft_str_t               name;      /* the caller's, kept until done */
    sft_log_t              *log;
    sft_user_lookup_pt      handler;   /* called after SFT_AGAIN */
    void                   *data;

    sft_int_t               rc;        /* SFT_OK: the user,
                                          SFT_DECLINED: no such user,
                                          SFT_ERROR: the store cannot say */
    sft_user_t             *user;      /* on SFT_OK: release with
                                          sft_user_release() */
    unsigned                stale:1;   /* the store cannot be reached:
                                          the user as it was last seen */

    sft_user_lookup_t      *next;      /* the store's, while pending */
};


typedef struct {
    sft_str_t               name;      /* the "user_store" type */

    /* SFT_OK, SFT_DECLINED or SFT_ERROR in lk->rc, or SFT_AGAIN */
    sft_int_t             (*lookup)(sft_user_lookup_t *lk);
    void                  (*cancel)(sft_user_lookup_t *lk);

    /* what the store knows now, without waiting: public keys and client
       certificates are checked at once */
    sft_user_t           *(*known)(sft_str_t *name, sft_log_t *log);

    /* the admin API, on a pool thread where they may block: the whole
       table (for a writer, locked against the other writers until end()),
       then the user "name" written back as the table has it, or removed
       if it has not */
    void                 *(*begin)(sft_str_t *arg, sft_uint_t write,
                                   sft_users_t **users, sft_log_t *log);
    sft_int_t             (*commit)(void *txn, sft_users_t *users,
                                    sft_str_t *name, sft_log_t *log);
    void                  (*end)(void *txn);
} sft_user_store_t;


/* what one line of the users file would say: "key directory = value" */
typedef struct {
    sft_str_t               name;      /* whose: a user's rows are together */
    sft_str_t               key;
    sft_str_t               path;      /* len 0: none */
    sft_str_t               value;
} sft_user_row_t;


/* a store module, from its create_conf: "user_store NAME ..." may use it */
sft_int_t sft_user_store_register(sft_cycle_t *cycle,
    sft_user_store_t *store);
sft_user_store_t *sft_user_store_find(sft_cycle_t *cycle, sft_str_t *name);

/* the store of this process */
void sft_user_store_use(sft_user_store_t *store);
sft_int_t sft_user_lookup(sft_user_lookup_t *lk);
void sft_user_lookup_cancel(sft_user_lookup_t *lk);

/* a table of the users of rows; NULL with the reason in err */
sft_users_t *sft_users_from_rows(sft_str_t *source, sft_user_row_t *rows,
    sft_uint_t n, u_char *err, size_t errlen, sft_log_t *log);


extern sft_user_store_t  sft_user_store_file;


#endif /* _SFT_USER_STORE_H_INCLUDED_ */
