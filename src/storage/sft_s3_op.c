/*
 * sft_s3_op.c -- the s3 driver's operations on names, each one or a few
 * S3 requests in turn on the loop: STAT (a peek at the object's first
 * bytes or a HEAD, else a listing of "name/": a directory), MKDIR (an
 * empty "name/" marker), RMDIR (the marker, when nothing else is below
 * it), UNLINK (DELETE after a HEAD, since S3's DELETE answers alike for a
 * missing key), STATVFS;
 * and what every operation shares: its requests, the errors S3 answers
 * mapped to the storage's, cancel.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>


static void sft_s3_op_done(sft_s3_request_t *r);
static void sft_s3_probe_peeked(sft_s3_op_t *op);
static void sft_s3_probe_head(sft_s3_op_t *op);
static void sft_s3_probe_absent(sft_s3_op_t *op);
static void sft_s3_probe_dir(sft_s3_op_t *op);
static void sft_s3_probe_glanced(sft_s3_op_t *op);
static void sft_s3_probe_list(sft_s3_op_t *op);
static void sft_s3_probe_found(sft_s3_op_t *op, sft_uint_t found);
static void sft_s3_stat_done(sft_s3_op_t *op);
static void sft_s3_mkdir_probed(sft_s3_op_t *op);
static void sft_s3_rmdir_listed(sft_s3_op_t *op);
static void sft_s3_unlink_probed(sft_s3_op_t *op);
static void sft_s3_op_answered(sft_s3_op_t *op);



/* an operation on req's path: its key is the prefix and the path */

sft_s3_op_t *
sft_s3_op_create(sft_storage_req_t *req)
{
    u_char                 *p;
    size_t                  len;
    sft_s3_op_t            *op;
    sft_s3_storage_conf_t  *conf;

    conf = req->storage->driver_data;

    if (conf->log == NULL) {
        /* not in a worker: no loop to run requests on */
        req->err = SFT_STORAGE_UNSUPPORTED;
        return NULL;
    }

    len = 0;

    if (req->path && !(req->path[0] == '.' && req->path[1] == '\0')) {
        len = sft_strlen(req->path);
    }

    if (conf->prefix.len + len > SFT_S3_KEY_MAX) {
        req->err = SFT_STORAGE_NAME_INVALID;
        return NULL;
    }

    op = sft_alloc(sizeof(sft_s3_op_t), req->log);
    if (op == NULL) {
        req->err = SFT_STORAGE_IO;
        return NULL;
    }

    sft_memzero(op, offsetof(sft_s3_op_t, keybuf));

    op->req = req;
    op->conf = conf;
    op->changes = conf->changes;

    p = sft_cpymem(op->keybuf, conf->prefix.data, conf->prefix.len);
    p = sft_cpymem(p, req->path, len);
    op->key.data = op->keybuf;
    op->key.len = p - op->keybuf;

    op->next = conf->ops;
    if (conf->ops) {
        conf->ops->prev = op;
    }
    conf->ops = op;

    return op;
}


/* an operation on a name below the root: the root answers root_err */

sft_s3_op_t *
sft_s3_op_below(sft_storage_req_t *req, sft_storage_err_t root_err)
{
    sft_s3_op_t  *op;

    op = sft_s3_op_create(req);
    if (op == NULL) {
        return NULL;
    }

    if (op->key.len == op->conf->prefix.len) {
        sft_s3_op_free(op);
        req->err = root_err;
        return NULL;
    }

    return op;
}


void
sft_s3_op_free(sft_s3_op_t *op)
{
    if (op->prev) {
        op->prev->next = op->next;

    } else {
        op->conf->ops = op->next;
    }

    if (op->next) {
        op->next->prev = op->prev;
    }

    if (op->r) {
        sft_s3_request_free(op->r);
    }

    if (op->ev.posted) {
        sft_delete_posted_event(&op->ev);
    }

    if (op->cleanup) {
        op->cleanup(op);
    }

    if (op->token.data) {
        sft_free(op->token.data);
    }

    if (op->memo.body) {
        sft_free(op->memo.body);
    }

    sft_free(op);
}


/* what an operation function returns once its first request started */

sft_int_t
sft_s3_op_again(sft_s3_op_t *op, sft_int_t rc)
{
    if (rc == SFT_OK) {
        return SFT_AGAIN;
    }

    op->req->err = SFT_STORAGE_IO;
    sft_s3_op_free(op);

    return SFT_ERROR;
}


void
sft_s3_op_finish(sft_s3_op_t *op, sft_storage_err_t err)
{
    sft_storage_req_t  *req;

    req = op->req;
    req->err = err;

    switch (req->op) {

    case SFT_STORAGE_OPEN_WRITE:
    case SFT_STORAGE_MKDIR:
    case SFT_STORAGE_RMDIR:
    case SFT_STORAGE_UNLINK:
    case SFT_STORAGE_SETMTIME:
    case SFT_STORAGE_CHMOD:
        sft_s3_memo_changed(op->conf, &op->key);
        break;

    case SFT_STORAGE_RENAME:
        sft_s3_memo_changed(op->conf, NULL);
        break;

    default:
        break;
    }

    if (op->keep) {
        op->req = NULL;                     /* no cancel finds it now */

    } else {
        sft_s3_op_free(op);
    }

    sft_storage_complete(req);
}


/* the key of the directory: "name/", the prefix alone for the root */

void
sft_s3_dir_key(sft_s3_op_t *op)
{
    if (op->key.len > op->conf->prefix.len) {
        op->key.data[op->key.len++] = '/';
    }
}


/* the next request of op, the one before it freed */

sft_int_t
sft_s3_op_request(sft_s3_op_t *op, const char *method, sft_str_t *key,
    sft_s3_op_pt handler)
{
    sft_s3_request_t  *r;

    if (op->r) {
        sft_s3_request_free(op->r);
        op->r = NULL;
    }

    r = sft_s3_request_create(&op->conf->client);
    if (r == NULL) {
        return SFT_ERROR;
    }

    r->method.data = (u_char *) method;
    r->method.len = sft_strlen(method);
    r->key = *key;
    r->idempotent = 1;
    r->on_done = sft_s3_op_done;
    r->data = op;

    op->r = r;
    op->handler = handler;

    return SFT_OK;
}


/* ListObjectsV2 of a prefix: the request made, then started */

sft_int_t
sft_s3_op_list(sft_s3_op_t *op, sft_str_t *prefix, sft_uint_t delimiter,
    sft_uint_t max_keys, sft_str_t *token, sft_s3_op_pt handler)
{
    return sft_s3_op_list_after(op, prefix, delimiter, max_keys, token, NULL,
                                handler);
}


/* ... of the keys after a key only, where after is not NULL */

sft_int_t
sft_s3_op_list_after(sft_s3_op_t *op, sft_str_t *prefix,
    sft_uint_t delimiter, sft_uint_t max_keys, sft_str_t *token,
    sft_str_t *after, sft_s3_op_pt handler)
{
    sft_str_t  bucket;

    sft_str_set(&bucket, "");              /* not NULL: it is copied */

    if (sft_s3_op_request(op, "GET", &bucket, handler) != SFT_OK
        || sft_s3_list_query(op->r, prefix, delimiter, max_keys, token,
                             after)
           != SFT_OK)
    {
        return SFT_ERROR;
    }

    return sft_s3_request_start(op->r);
}


/* a GET of the bucket made a ListObjectsV2 of prefix (after: of the keys
   after that one, or NULL) */

sft_int_t
sft_s3_list_query(sft_s3_request_t *r, sft_str_t *prefix,
    sft_uint_t delimiter, sft_uint_t max_keys, sft_str_t *token,
    sft_str_t *after)
{
    u_char         *p;
    sft_uint_t      n;
    sft_s3_pair_t  *q;

    q = sft_pcalloc(r->pool, 7 * sizeof(sft_s3_pair_t));
    p = sft_pnalloc(r->pool, 24);
    if (q == NULL || p == NULL) {
        return SFT_ERROR;
    }

    n = 0;

    sft_str_set(&q[n].name, "list-type");
    sft_str_set(&q[n].value, "2");
    n++;

    sft_str_set(&q[n].name, "encoding-type");
    sft_str_set(&q[n].value, "url");
    n++;

    sft_str_set(&q[n].name, "prefix");
    q[n++].value = *prefix;

    sft_str_set(&q[n].name, "max-keys");
    q[n].value.data = p;
    q[n++].value.len = snprintf((char *) p, 24, "%lu",
                                (unsigned long) max_keys);

    if (delimiter) {
        sft_str_set(&q[n].name, "delimiter");
        sft_str_set(&q[n].value, "/");
        n++;
    }

    if (token && token->len) {
        sft_str_set(&q[n].name, "continuation-token");
        q[n++].value = *token;
    }

    if (after) {
        sft_str_set(&q[n].name, "start-after");
        q[n++].value = *after;
    }

    r->query = q;
    r->nquery = n;

    return SFT_OK;
}


/*
 * A listing's page parsed into list, its continuation token kept in
 * op->token (empty after the last page); else the operation failed.
 */

sft_int_t
sft_s3_page(sft_s3_op_t *op, sft_s3_list_t *list)
{
    sft_s3_request_t  *r;

    r = op->r;
    op->token.len = 0;

    if (r->rc != SFT_OK || r->status != 200) {
        sft_s3_op_fail(op, "ListObjectsV2");
        return SFT_ERROR;
    }

    if (sft_s3_xml_list(r->response.data, r->response.len, r->pool, list,
                        &r->error)
        != SFT_OK)
    {
        sft_log_error(SFT_LOG_ERR, op->conf->log, 0,
                      "S3 storage \"%.*s\": ListObjectsV2 of \"%.*s\" "
                      "answered a listing that cannot be read",
                      SFT_STR_FMT(&op->conf->storage->name),
                      SFT_STR_FMT(&op->key));
        sft_s3_op_finish(op, SFT_STORAGE_IO);
        return SFT_ERROR;
    }

    if (!list->truncated || list->next_token.len == 0) {
        return SFT_OK;
    }

    if (op->token.data) {
        sft_free(op->token.data);
    }

    op->token.data = sft_alloc(list->next_token.len, op->conf->log);
    if (op->token.data == NULL) {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
        return SFT_ERROR;
    }

    sft_memcpy(op->token.data, list->next_token.data, list->next_token.len);
    op->token.len = list->next_token.len;

    return SFT_OK;
}


/*
 * After a page of a walk of every key below op->key: SFT_DONE when it was
 * the last; else SFT_OK, the next page asked for with handler (or the
 * operation failed).
 */

sft_int_t
sft_s3_op_next_page(sft_s3_op_t *op, sft_s3_op_pt handler)
{
    if (op->token.len == 0) {
        return SFT_DONE;
    }

    if (sft_s3_op_list(op, &op->key, 0, 1000, &op->token, handler)
        != SFT_OK)
    {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
    }

    return SFT_OK;
}


static void
sft_s3_op_done(sft_s3_request_t *r)
{
    sft_s3_op_t  *op = r->data;

    op->handler(op);
}


/*
 * An answer that is not what an operation wanted: 403 is a refusal, 404
 * a missing name, anything else (5xx after the retries, a timeout, a
 * refused connection) an I/O error, logged once on the session's log
 * (its peer and user) with the S3 operation, the key, and the status and
 * S3's error code or what went wrong in the transport.
 */

sft_storage_err_t
sft_s3_error(sft_s3_storage_conf_t *conf, sft_log_t *log,
    sft_s3_request_t *r, const char *what, sft_str_t *key)
{
    sft_str_t  code;

    if (r->rc == SFT_OK && r->status == 403) {
        return SFT_STORAGE_PERMISSION;
    }

    if (r->rc == SFT_OK && r->status == 404) {
        return SFT_STORAGE_NOT_FOUND;
    }

    if (r->rc != SFT_OK) {
        sft_log_error(SFT_LOG_ERR, log, 0,
                      "S3 storage \"%.*s\": %s of \"%.*s\" failed after %lu "
                      "attempts: %s", SFT_STR_FMT(&conf->storage->name),
                      what, SFT_STR_FMT(key), (unsigned long) r->attempts,
                      r->refused ? r->refused
                      : r->curl_error[0] ? r->curl_error : "no answer");

        return SFT_STORAGE_IO;
    }

    code = r->error.code;
    if (code.len == 0) {
        sft_str_set(&code, "-");
    }

    sft_log_error(SFT_LOG_ERR, log, 0,
                  "S3 storage \"%.*s\": %s of \"%.*s\" failed: "
                  "status %ld, %.*s", SFT_STR_FMT(&conf->storage->name),
                  what, SFT_STR_FMT(key), r->status, SFT_STR_FMT(&code));

    return SFT_STORAGE_IO;
}


void
sft_s3_op_fail(sft_s3_op_t *op, const char *what)
{
    sft_s3_op_finish(op, sft_s3_error(op->conf, op->req->log, op->r, what,
                                    &op->key));
}


/*
 * A request of this driver that answered SFT_AGAIN: its S3 request
 * stopped, its handler never runs.  A directory's state stays for the
 * next READDIR, which asks for the page again.
 */

sft_int_t
sft_s3_cancel(sft_storage_req_t *req)
{
    sft_s3_op_t            *op;
    sft_s3_storage_conf_t  *conf;

    if (req->op == SFT_STORAGE_READ) {
        return sft_s3_read_cancel(req);
    }

    conf = req->storage->driver_data;

    for (op = conf->ops; op; op = op->next) {
        if (op->req != req || op->r == NULL) {
            continue;
        }

        if (req->op == SFT_STORAGE_READDIR) {
            sft_s3_request_free(op->r);
            op->r = NULL;
            op->req = NULL;
            return SFT_OK;
        }

        if (req->op == SFT_STORAGE_OPENDIR) {
            sft_free(op->data);             /* the listing never began */
        }

        sft_s3_op_free(op);
        return SFT_OK;
    }

    return SFT_DECLINED;
}


/* ids: the key hashed, under the storage's constant */

uint64_t
sft_s3_key_hash(u_char *p, size_t n)
{
    uint64_t  h;

    h = 0xcbf29ce484222325ULL;

    while (n--) {
        h ^= *p++;
        h *= 0x100000001b3ULL;
    }

    return h;
}


void
sft_s3_stat_file(sft_s3_storage_conf_t *conf, sft_str_t *key, off_t size,
    time_t mtime, sft_storage_stat_t *st)
{
    sft_memzero(st, sizeof(sft_storage_stat_t));

    st->mode = S_IFREG|0644;
    st->size = size;
    st->mtime = mtime;
    st->atime = mtime;
    st->nlink = 1;
    st->id.dev = conf->dev;
    st->id.ino = sft_s3_key_hash(key->data, key->len) | 1;
}


/* what a HEAD answered: the size, x-amz-meta-mtime or Last-Modified */

void
sft_s3_stat_head(sft_s3_storage_conf_t *conf, sft_str_t *key,
    sft_s3_request_t *r, sft_storage_stat_t *st)
{
    sft_s3_stat_file(conf, key, sft_max(r->content_length, 0),
                     r->meta_mtime ? r->meta_mtime : r->last_modified, st);
}


void
sft_s3_stat_dir(sft_s3_storage_conf_t *conf, sft_str_t *key,
    sft_storage_stat_t *st)
{
    sft_memzero(st, sizeof(sft_storage_stat_t));

    st->mode = S_IFDIR|0755;
    st->nlink = 2;
    st->id.dev = conf->dev;
    st->id.ino = sft_s3_key_hash(key->data, key->len) | 1;
}


/*
 * What a name is: HEAD of the object (a file), else a listing of
 * "name/" with one key (a directory, marker or not); then op->then with
 * op->found and req->st set.
 */

sft_int_t
sft_s3_probe(sft_s3_op_t *op, sft_s3_op_pt then)
{
    op->then = then;

    return sft_s3_op_head(op, &op->key, sft_s3_probe_head);
}


/* ... a stat's: the first bytes of the object in place of the HEAD
   (sft_s3_peek.c), a HEAD where they do not say */

sft_int_t
sft_s3_probe_peek(sft_s3_op_t *op, sft_s3_op_pt then)
{
    if (op->conf->peek == 0) {
        return sft_s3_probe(op, then);
    }

    op->then = then;

    return sft_s3_peek(op, sft_s3_probe_peeked);
}


static void
sft_s3_probe_peeked(sft_s3_op_t *op)
{
    sft_s3_peek_answered(op, op->then, sft_s3_probe_absent,
                         sft_s3_probe_head);
}


/* a HEAD that asks for S3's checksum of the object too, started */

sft_int_t
sft_s3_op_head(sft_s3_op_t *op, sft_str_t *key, sft_s3_op_pt handler)
{
    sft_s3_pair_t  *h;

    if (sft_s3_op_request(op, "HEAD", key, handler) != SFT_OK) {
        return SFT_ERROR;
    }

    h = sft_pcalloc(op->r->pool, sizeof(sft_s3_pair_t));
    if (h == NULL) {
        return SFT_ERROR;
    }

    sft_str_set(&h->name, "x-amz-checksum-mode");
    sft_str_set(&h->value, "ENABLED");
    op->r->headers = h;
    op->r->nheaders = 1;

    return sft_s3_request_start(op->r);
}


static void
sft_s3_probe_head(sft_s3_op_t *op)
{
    sft_s3_request_t  *r;

    r = op->r;

    if (r->rc == SFT_OK && r->status == 200) {
        sft_s3_stat_head(op->conf, &op->key, r, &op->req->st);
        op->found = SFT_S3_FOUND_FILE;
        sft_s3_memo_put(op, op->found, r);
        op->then(op);
        return;
    }

    if (r->rc != SFT_OK || r->status != 404) {
        sft_s3_op_fail(op, "HeadObject");
        return;
    }

    sft_s3_probe_absent(op);
}


/* no object: a directory, or nothing */

static void
sft_s3_probe_absent(sft_s3_op_t *op)
{
    switch (sft_s3_glance(op, sft_s3_probe_glanced)) {

    case SFT_OK:
        return;

    case SFT_DECLINED:
        sft_s3_probe_dir(op);
        return;

    default:
        sft_s3_op_finish(op, SFT_STORAGE_IO);
    }
}


/* no object: a listing of "name/" with one key says whether it is a
   directory */

static void
sft_s3_probe_dir(sft_s3_op_t *op)
{
    sft_str_t  dir;

    sft_s3_dir_key(op);
    dir = op->key;
    op->key.len--;

    if (sft_s3_op_list(op, &dir, 0, 1, NULL, sft_s3_probe_list) != SFT_OK) {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
    }
}


/* no object: the look at its directory says, or sends to the listing of
   "name/" */

static void
sft_s3_probe_glanced(sft_s3_op_t *op)
{
    sft_int_t      found;
    sft_s3_list_t  list;

    if (sft_s3_page(op, &list) != SFT_OK) {
        return;
    }

    found = sft_s3_glance_take(op, &list);

    if (found == SFT_DECLINED) {
        sft_s3_probe_dir(op);
        return;
    }

    sft_s3_probe_found(op, found);
}


static void
sft_s3_probe_list(sft_s3_op_t *op)
{
    sft_s3_list_t  list;

    if (sft_s3_page(op, &list) != SFT_OK) {
        return;
    }

    sft_s3_probe_found(op, list.objects.nelts || list.prefixes.nelts
                           ? SFT_S3_FOUND_DIR : SFT_S3_FOUND_NONE);
}


static void
sft_s3_probe_found(sft_s3_op_t *op, sft_uint_t found)
{
    op->found = found;

    if (found == SFT_S3_FOUND_DIR) {
        sft_s3_stat_dir(op->conf, &op->key, &op->req->st);
    }

    sft_s3_memo_put(op, op->found, NULL);
    op->then(op);
}


/*
 * STAT and LSTAT alike: S3 has no links; the root is always there.  A
 * session that asks again about a name within s3_metadata_reuse (OpenSSH's
 * get looks twice: lstat, then stat) is told what it was told.  A file's
 * first bytes come with its stat, for the open that may follow.
 */

sft_int_t
sft_s3_stat(sft_storage_req_t *req)
{
    sft_s3_op_t  *op;

    op = sft_s3_op_create(req);
    if (op == NULL) {
        return SFT_ERROR;
    }

    if (op->key.len == op->conf->prefix.len) {
        sft_s3_stat_dir(op->conf, &op->key, &req->st);
        sft_s3_op_free(op);
        return SFT_OK;
    }

    if (sft_s3_memo_answer(op, sft_s3_stat_done, SFT_S3_MEMO_MINE)
        == SFT_OK)
    {
        return SFT_AGAIN;
    }

    return sft_s3_op_again(op, sft_s3_probe_peek(op, sft_s3_stat_done));
}


static void
sft_s3_stat_done(sft_s3_op_t *op)
{
    sft_s3_op_finish(op, op->found == SFT_S3_FOUND_NONE
                         ? SFT_STORAGE_NOT_FOUND : SFT_STORAGE_OK);
}


sft_int_t
sft_s3_mkdir(sft_storage_req_t *req)
{
    sft_s3_op_t  *op;

    op = sft_s3_op_below(req, SFT_STORAGE_EXISTS);
    if (op == NULL) {
        return SFT_ERROR;
    }

    return sft_s3_op_again(op, sft_s3_probe(op, sft_s3_mkdir_probed));
}


static void
sft_s3_mkdir_probed(sft_s3_op_t *op)
{
    if (op->found != SFT_S3_FOUND_NONE) {
        sft_s3_op_finish(op, SFT_STORAGE_EXISTS);
        return;
    }

    sft_s3_dir_key(op);

    sft_s3_op_send(op, "PUT");
}


/* RMDIR: the listing of "name/" holds the marker alone, or nothing */

sft_int_t
sft_s3_rmdir(sft_storage_req_t *req)
{
    sft_s3_op_t  *op;

    op = sft_s3_op_below(req, SFT_STORAGE_PERMISSION);
    if (op == NULL) {
        return SFT_ERROR;
    }

    sft_s3_dir_key(op);

    return sft_s3_op_again(op, sft_s3_op_list(op, &op->key, 0, 2, NULL,
                                              sft_s3_rmdir_listed));
}


static void
sft_s3_rmdir_listed(sft_s3_op_t *op)
{
    sft_s3_list_t    list;
    sft_s3_object_t  *obj;

    if (sft_s3_page(op, &list) != SFT_OK) {
        return;
    }

    if (list.objects.nelts == 0 && list.prefixes.nelts == 0) {
        sft_s3_op_finish(op, SFT_STORAGE_NOT_FOUND);
        return;
    }

    obj = list.objects.elts;

    if (list.objects.nelts != 1 || list.prefixes.nelts
        || obj->key.len != op->key.len
        || sft_memcmp(obj->key.data, op->key.data, op->key.len) != 0)
    {
        sft_s3_op_finish(op, SFT_STORAGE_NOT_EMPTY);
        return;
    }

    sft_s3_op_send(op, "DELETE");
}


sft_int_t
sft_s3_unlink(sft_storage_req_t *req)
{
    sft_s3_op_t  *op;

    op = sft_s3_op_below(req, SFT_STORAGE_IS_DIR);
    if (op == NULL) {
        return SFT_ERROR;
    }

    return sft_s3_op_again(op, sft_s3_probe(op, sft_s3_unlink_probed));
}


static void
sft_s3_unlink_probed(sft_s3_op_t *op)
{
    if (op->found != SFT_S3_FOUND_FILE) {
        sft_s3_op_finish(op, op->found == SFT_S3_FOUND_DIR
                             ? SFT_STORAGE_IS_DIR : SFT_STORAGE_NOT_FOUND);
        return;
    }

    sft_s3_op_send(op, "DELETE");
}


/* the last request of MKDIR, RMDIR, UNLINK on op's key: a 2xx is done */

void
sft_s3_op_send(sft_s3_op_t *op, const char *method)
{
    if (sft_s3_op_request(op, method, &op->key, sft_s3_op_answered)
        != SFT_OK
        || sft_s3_request_start(op->r) != SFT_OK)
    {
        sft_s3_op_finish(op, SFT_STORAGE_IO);
    }
}


static void
sft_s3_op_answered(sft_s3_op_t *op)
{
    sft_s3_request_t  *r;

    r = op->r;

    if (r->rc == SFT_OK && r->status >= 200 && r->status < 300) {
        sft_s3_op_finish(op, SFT_STORAGE_OK);
        return;
    }

    sft_s3_op_fail(op, r->method.data[0] == 'P' ? "PutObject"
                                                : "DeleteObject");
}


/* a bucket has no size: large totals, nothing to count */

sft_int_t
sft_s3_statvfs(sft_storage_req_t *req)
{
    sft_storage_statvfs_t  *v;

    v = &req->vfs;

    v->total_bytes = (uint64_t) 1 << 50;
    v->free_bytes = (uint64_t) 1 << 50;
    v->total_files = (uint64_t) 1 << 32;
    v->free_files = (uint64_t) 1 << 32;
    v->block_size = 4096;
    v->name_max = SFT_STORAGE_NAME_MAX;

    return SFT_OK;
}
