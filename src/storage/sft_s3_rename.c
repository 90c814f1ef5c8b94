/*
 * sft_s3_rename.c -- RENAME in the s3 driver.  S3 has no rename: a move
 * copies keys on the server (sft_s3_copy.c: CopyObject, or a multipart
 * copy above s3_copy_threshold), parts_in_flight at a time, then deletes
 * the old ones.  A file is one key; its new name is looked at first
 * (HEAD): the size a replace frees, or a refusal when the protocol asked
 * not to replace.  A directory is every key below "name/" (its marker
 * too), listed page by page and kept before anything changes: more than
 * s3_rename_max_objects is refused with the reason, and so is a new name
 * that exists.  A failed copy deletes the copies made and leaves the
 * source as it was; a failed delete leaves the whole new copy and is
 * answered as a failure.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>


typedef enum {
    SFT_S3_MOVE_COPY = 0,
    SFT_S3_MOVE_DELETE,                   /* the old keys */
    SFT_S3_MOVE_UNDO                      /* the copies made */
} sft_s3_move_phase_e;


/* a key to move: what follows the old name ("" for a file) */

typedef struct {
    sft_str_t              name;
    off_t                  size;
    time_t                 mtime;
    unsigned               copied:1;
} sft_s3_move_key_t;


typedef struct sft_s3_move_s  sft_s3_move_t;

typedef struct {
    sft_s3_move_t         *mv;
    sft_uint_t             index;
    sft_s3_copy_t         *copy;
    sft_s3_request_t      *r;             /* a DELETE */
} sft_s3_move_slot_t;


struct sft_s3_move_s {
    sft_s3_op_t           *op;
    sft_pool_t            *pool;
    sft_array_t            keys;          /* sft_s3_move_key_t */
    sft_uint_t             phase;         /* sft_s3_move_phase_e */
    sft_uint_t             next;          /* the next key to start */
    sft_uint_t             running;
    sft_uint_t             failed;        /* in this phase */
    sft_storage_err_t      err;           /* the copy's failure */
    sft_s3_move_slot_t     slots[SFT_S3_IN_FLIGHT_MAX];
};


static void sft_s3_rename_probed(sft_s3_op_t *op);
static void sft_s3_rename_headed(sft_s3_op_t *op);
static void sft_s3_rename_dir(sft_s3_op_t *op);
static void sft_s3_rename_target(sft_s3_op_t *op);
static void sft_s3_rename_listed(sft_s3_op_t *op);
static void sft_s3_rename_swap(sft_s3_op_t *op);
static sft_s3_move_t *sft_s3_move_create(sft_s3_op_t *op);
static void sft_s3_move_cleanup(sft_s3_op_t *op);
static sft_int_t sft_s3_move_add(sft_s3_move_t *mv, sft_str_t *name,
    off_t size, time_t mtime);
static void sft_s3_move_run(sft_s3_move_t *mv);
static void sft_s3_move_phase_over(sft_s3_move_t *mv);
static sft_int_t sft_s3_move_start(sft_s3_move_t *mv,
    sft_s3_move_slot_t *slot);
static sft_int_t sft_s3_move_key(sft_str_t *base, sft_s3_move_key_t *k,
    u_char *buf, sft_str_t *key);
static void sft_s3_move_copied(sft_s3_copy_t *c, sft_int_t rc);
static void sft_s3_move_deleted(sft_s3_request_t *r);
static void sft_s3_move_slot_done(sft_s3_move_slot_t *slot, sft_uint_t ok);


sft_int_t
sft_s3_rename(sft_storage_req_t *req)
{
    size_t        len;
    sft_s3_op_t  *op;

    op = sft_s3_op_below(req, SFT_STORAGE_PERMISSION);
    if (op == NULL) {
        return SFT_ERROR;
    }

    len = sft_strlen(req->path2);

    if (op->conf->prefix.len + len > SFT_S3_KEY_MAX) {
        sft_s3_op_free(op);
        req->err = SFT_STORAGE_NAME_INVALID;
        return SFT_ERROR;
    }

    op->key2.data = op->key2buf;
    op->key2.len = sft_cpymem(sft_cpymem(op->key2buf, op->conf->prefix.data,
                                         op->conf->prefix.len),
                              req->path2, len)
                   - op->key2buf;

    return sft_s3_op_again(op, sft_s3_probe(op, sft_s3_rename_probed));
}


static void
sft_s3_rename_probed(sft_s3_op_t *op)
{
    sft_str_t           file;
    sft_s3_move_t      *mv;
    sft_storage_req_t  *req;

    req = op->req;

    if (op->found == SFT_S3_FOUND_NONE) {
        sft_s3_op_finish(op, SFT_STORAGE_NOT_FOUND);
        return;
    }

    if (op->key.len == op->key2.len
        && sft_memcmp(op->key.data, op->key2.data, op->key.len) == 0)
    {
        sft_memzero(&req->st, sizeof(sft_storage_stat_t));
        sft_s3_op_finish(op, SFT_STORAGE_OK);     /* onto itself */
        return;
    }

    if (op->found == SFT_S3_FOUND_DIR) {
        sft_s3_rename_dir(op);
        return;
    }

    /* a file: one key, its size and time as the probe found them */

    sft_str_set(&file, "");

    mv = sft_s3_move_create(op);

    if (mv == NULL
        || sft_s3_move_add(mv, &file, req->st.size, req->st.mtime)
           != SFT_OK
        || sft_s3_op_request(op, "HEAD", &op->key2, sft_s3_rename_headed)
           != SFT_OK
        || sft_s3_request_start(op->r) != SFT_OK)
    {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
    }
}


/* the new name: free, or an object a replace frees (st for the quota) */

static void
sft_s3_rename_headed(sft_s3_op_t *op)
{
    sft_s3_request_t   *r;
    sft_storage_req_t  *req;

    r = op->r;
    req = op->req;

    sft_memzero(&req->st, sizeof(sft_storage_stat_t));

    if (r->rc == SFT_OK && r->status == 200) {
        if (req->flags & SFT_STORAGE_WRITE_NOREPLACE) {
            sft_s3_op_finish(op, SFT_STORAGE_EXISTS);
            return;
        }

        sft_s3_stat_head(op->conf, &op->key2, r, &req->st);

    } else if (r->rc != SFT_OK || r->status != 404) {
        sft_s3_op_fail(op, "HeadObject");
        return;
    }

    sft_s3_move_run(op->data);
}


/*
 * A directory: not into itself; the new name must be free, as a file and
 * as a directory (a merge of two trees is not a rename).
 */

static void
sft_s3_rename_dir(sft_s3_op_t *op)
{
    if (op->key2.len > op->key.len
        && op->key2.data[op->key.len] == '/'
        && sft_memcmp(op->key2.data, op->key.data, op->key.len) == 0)
    {
        sft_s3_op_finish(op, SFT_STORAGE_INVALID);
        return;
    }

    sft_s3_rename_swap(op);

    if (sft_s3_probe(op, sft_s3_rename_target) != SFT_OK) {
        sft_s3_rename_swap(op);
        sft_s3_op_finish(op, SFT_STORAGE_IO);
    }
}


static void
sft_s3_rename_target(sft_s3_op_t *op)
{
    sft_s3_rename_swap(op);
    sft_memzero(&op->req->st, sizeof(sft_storage_stat_t));

    if (op->found != SFT_S3_FOUND_NONE) {
        sft_s3_op_finish(op, SFT_STORAGE_EXISTS);
        return;
    }

    /* "name/" and "new/": the keys below them */

    sft_s3_dir_key(op);
    op->key2.data[op->key2.len++] = '/';

    if (sft_s3_move_create(op) == NULL
        || sft_s3_op_list(op, &op->key, 0, 1000, NULL, sft_s3_rename_listed)
           != SFT_OK)
    {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
    }
}


/* a page of the keys below "name/": kept, then the next page or the move */

static void
sft_s3_rename_listed(sft_s3_op_t *op)
{
    u_char             *p;
    sft_str_t           name;
    sft_uint_t          i;
    sft_s3_list_t       list;
    sft_s3_move_t      *mv;
    sft_s3_object_t    *obj;
    sft_storage_req_t  *req;

    mv = op->data;
    req = op->req;

    if (sft_s3_page(op, &list) != SFT_OK) {
        return;
    }

    obj = list.objects.elts;

    for (i = 0; i < list.objects.nelts; i++) {
        if (obj[i].key.len < op->key.len
            || sft_memcmp(obj[i].key.data, op->key.data, op->key.len) != 0)
        {
            continue;                       /* not below: never listed */
        }

        name.data = obj[i].key.data + op->key.len;
        name.len = obj[i].key.len - op->key.len;

        if (mv->keys.nelts == op->conf->rename_max_objects) {
            sft_log_error(SFT_LOG_INFO, req->log, 0,
                          "S3 storage \"%.*s\": \"%.*s\" is not renamed: it "
                          "holds more than %lu objects "
                          "(s3_rename_max_objects)",
                          SFT_STR_FMT(&op->conf->storage->name),
                          SFT_STR_FMT(&op->key),
                          (unsigned long) op->conf->rename_max_objects);

            p = sft_pnalloc(req->pool, 96);
            if (p != NULL) {
                *sft_slprintf(p, p + 95, "Renaming a directory of more "
                              "than %lu objects is not supported",
                              (unsigned long) op->conf->rename_max_objects)
                    = '\0';
                req->why = (char *) p;
            }

            sft_s3_op_finish(op, SFT_STORAGE_UNSUPPORTED);
            return;
        }

        if (op->key2.len + name.len > SFT_S3_KEY_MAX) {
            sft_s3_op_finish(op, SFT_STORAGE_NAME_INVALID);
            return;
        }

        if (sft_s3_move_add(mv, &name, obj[i].size, obj[i].mtime)
            != SFT_OK)
        {
            sft_s3_op_finish(op, SFT_STORAGE_IO);
            return;
        }
    }

    if (sft_s3_op_next_page(op, sft_s3_rename_listed) == SFT_DONE) {
        sft_s3_move_run(mv);
    }
}


static void
sft_s3_rename_swap(sft_s3_op_t *op)
{
    sft_str_t  k;

    k = op->key;
    op->key = op->key2;
    op->key2 = k;
}


static sft_s3_move_t *
sft_s3_move_create(sft_s3_op_t *op)
{
    sft_pool_t     *pool;
    sft_s3_move_t  *mv;

    pool = sft_create_pool(4096, op->req->log);
    if (pool == NULL) {
        return NULL;
    }

    mv = sft_pcalloc(pool, sizeof(sft_s3_move_t));

    if (mv == NULL
        || sft_array_init(&mv->keys, pool, 16, sizeof(sft_s3_move_key_t))
           != SFT_OK)
    {
        sft_destroy_pool(pool);
        return NULL;
    }

    mv->op = op;
    mv->pool = pool;
    mv->err = SFT_STORAGE_OK;

    op->data = mv;
    op->cleanup = sft_s3_move_cleanup;

    return mv;
}


/* the op is freed (done or cancelled): what still runs stops */

static void
sft_s3_move_cleanup(sft_s3_op_t *op)
{
    sft_uint_t           i;
    sft_s3_move_t       *mv;
    sft_s3_move_slot_t  *slot;

    mv = op->data;

    for (i = 0; i < SFT_S3_IN_FLIGHT_MAX; i++) {
        slot = &mv->slots[i];

        if (slot->copy) {
            sft_s3_copy_cancel(slot->copy);
        }

        if (slot->r) {
            sft_s3_request_free(slot->r);
        }
    }

    op->data = NULL;
    op->cleanup = NULL;

    sft_destroy_pool(mv->pool);
}


static sft_int_t
sft_s3_move_add(sft_s3_move_t *mv, sft_str_t *name, off_t size,
    time_t mtime)
{
    sft_s3_move_key_t  *k;

    k = sft_array_push(&mv->keys);
    if (k == NULL) {
        return SFT_ERROR;
    }

    sft_memzero(k, sizeof(sft_s3_move_key_t));
    k->name.len = name->len;
    k->name.data = sft_pstrdup(mv->pool, name);
    k->size = size;
    k->mtime = mtime;

    return (k->name.data || name->len == 0) ? SFT_OK : SFT_ERROR;
}


/* the phase's keys, parts_in_flight at a time; after the last, the next */

static void
sft_s3_move_run(sft_s3_move_t *mv)
{
    sft_uint_t          i, n;
    sft_s3_move_key_t  *k;

    k = mv->keys.elts;
    n = sft_min(mv->op->conf->parts_in_flight, SFT_S3_IN_FLIGHT_MAX);

    for (i = 0; i < n; i++) {
        if (mv->slots[i].copy || mv->slots[i].r) {
            continue;
        }

        while (mv->phase == SFT_S3_MOVE_UNDO && mv->next < mv->keys.nelts
               && !k[mv->next].copied)
        {
            mv->next++;
        }

        if (mv->next == mv->keys.nelts
            || (mv->phase == SFT_S3_MOVE_COPY && mv->failed))
        {
            break;                          /* no more to start */
        }

        mv->slots[i].mv = mv;
        mv->slots[i].index = mv->next++;

        if (sft_s3_move_start(mv, &mv->slots[i]) != SFT_OK) {
            mv->failed++;
            mv->err = SFT_STORAGE_IO;
        }
    }

    if (mv->running == 0) {
        sft_s3_move_phase_over(mv);
    }
}


static void
sft_s3_move_phase_over(sft_s3_move_t *mv)
{
    sft_s3_op_t        *op;
    sft_storage_req_t  *req;

    op = mv->op;
    req = op->req;

    if (mv->phase == SFT_S3_MOVE_COPY) {
        mv->phase = mv->failed ? SFT_S3_MOVE_UNDO : SFT_S3_MOVE_DELETE;
        mv->next = 0;
        mv->failed = 0;
        sft_s3_move_run(mv);
        return;
    }

    if (mv->phase == SFT_S3_MOVE_UNDO) {
        sft_log_error(SFT_LOG_ERR, req->log, 0,
                      "S3 storage \"%.*s\": \"%.*s\" is not renamed: a copy "
                      "failed, the copies made were deleted%s",
                      SFT_STR_FMT(&op->conf->storage->name),
                      SFT_STR_FMT(&op->key),
                      mv->failed ? " but for some" : "");
        sft_s3_op_finish(op, mv->err);
        return;
    }

    if (mv->failed) {
        sft_log_error(SFT_LOG_ERR, req->log, 0,
                      "S3 storage \"%.*s\": \"%.*s\" was copied to "
                      "\"%.*s\", but %lu of its old objects were not "
                      "deleted", SFT_STR_FMT(&op->conf->storage->name),
                      SFT_STR_FMT(&op->key), SFT_STR_FMT(&op->key2),
                      (unsigned long) mv->failed);
        req->why = "Copied under the new name, but some old objects are "
                   "left";
        sft_s3_op_finish(op, SFT_STORAGE_IO);
        return;
    }

    sft_s3_op_finish(op, SFT_STORAGE_OK);
}


/* a copy of the key under the new name, or a DELETE (old key, or copy) */

static sft_int_t
sft_s3_move_start(sft_s3_move_t *mv, sft_s3_move_slot_t *slot)
{
    sft_str_t               src, dst;
    sft_s3_op_t            *op;
    sft_s3_request_t       *r;
    sft_s3_move_key_t      *k;
    sft_s3_copy_conf_t      cc;
    sft_s3_storage_conf_t  *conf;
    u_char                  sbuf[SFT_S3_KEY_MAX + 2];
    u_char                  dbuf[SFT_S3_KEY_MAX + 2];

    op = mv->op;
    conf = op->conf;
    k = (sft_s3_move_key_t *) mv->keys.elts + slot->index;

    if (sft_s3_move_key(&op->key, k, sbuf, &src) != SFT_OK
        || sft_s3_move_key(&op->key2, k, dbuf, &dst) != SFT_OK)
    {
        return SFT_ERROR;
    }

    if (mv->phase == SFT_S3_MOVE_COPY) {
        sft_memzero(&cc, sizeof(sft_s3_copy_conf_t));

        cc.object.client = &conf->client;
        cc.object.key = dst;
        cc.object.parts_in_flight = sft_min(conf->parts_in_flight,
                                            SFT_S3_IN_FLIGHT_MAX);
        cc.object.storage_class = conf->storage_class;
        cc.object.sse = conf->sse;
        cc.object.kms_key_id = conf->sse_key;
        cc.source = src;
        cc.size = k->size;
        cc.source_mtime = k->mtime;
        cc.threshold = (off_t) conf->copy_threshold;
        cc.on_done = sft_s3_move_copied;
        cc.data = slot;

        if (sft_s3_copy_start(&cc, op->req->log, &slot->copy) != SFT_OK) {
            return SFT_ERROR;
        }

        mv->running++;
        return SFT_OK;
    }

    r = sft_s3_request_create(&conf->client);
    if (r == NULL) {
        return SFT_ERROR;
    }

    sft_str_set(&r->method, "DELETE");
    r->key = mv->phase == SFT_S3_MOVE_DELETE ? src : dst;
    r->key.data = sft_pstrdup(r->pool, &r->key);
    r->idempotent = 1;
    r->on_done = sft_s3_move_deleted;
    r->data = slot;

    if (r->key.data == NULL || sft_s3_request_start(r) != SFT_OK) {
        sft_s3_request_free(r);
        return SFT_ERROR;
    }

    slot->r = r;
    mv->running++;

    return SFT_OK;
}


/* base ("name/", "new/") and the key's name in buf */

static sft_int_t
sft_s3_move_key(sft_str_t *base, sft_s3_move_key_t *k, u_char *buf,
    sft_str_t *key)
{
    if (base->len + k->name.len > SFT_S3_KEY_MAX + 1) {
        return SFT_ERROR;
    }

    key->data = buf;
    key->len = sft_cpymem(sft_cpymem(buf, base->data, base->len),
                          k->name.data, k->name.len)
               - buf;

    return SFT_OK;
}


static void
sft_s3_move_copied(sft_s3_copy_t *c, sft_int_t rc)
{
    sft_s3_move_slot_t  *slot = c->conf.data;

    slot->copy = NULL;

    sft_s3_move_slot_done(slot, rc == SFT_OK);
}


static void
sft_s3_move_deleted(sft_s3_request_t *r)
{
    sft_uint_t           ok;
    sft_s3_move_slot_t  *slot = r->data;

    ok = r->rc == SFT_OK && (r->status == 204 || r->status == 200
                             || r->status == 404);

    if (!ok) {
        (void) sft_s3_error(slot->mv->op->conf, slot->mv->op->req->log, r,
                            "DeleteObject", &r->key);
    }

    slot->r = NULL;
    sft_s3_request_free(r);

    sft_s3_move_slot_done(slot, ok);
}


static void
sft_s3_move_slot_done(sft_s3_move_slot_t *slot, sft_uint_t ok)
{
    sft_s3_move_t      *mv;
    sft_s3_move_key_t  *k;

    mv = slot->mv;
    k = mv->keys.elts;
    mv->running--;

    if (!ok) {
        mv->failed++;
        mv->err = SFT_STORAGE_IO;

    } else if (mv->phase == SFT_S3_MOVE_COPY) {
        k[slot->index].copied = 1;
    }

    sft_s3_move_run(mv);
}
