/*
 * sft_s3_list.c -- directories of the s3 driver: ListObjectsV2 of
 * "dir/" with the delimiter '/', one page at a time.  READDIR hands out
 * the current page's objects (files) and common prefixes (directories)
 * a batch at a time and asks for the next page only when this one is
 * consumed, so a listing holds one page whatever the directory holds.
 * The directory's own marker "dir/" and names S3 allows but a file system
 * does not (empty segments, "." and "..", too long) are left out.  USAGE
 * sums the sizes of every key below a prefix, page by page.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>


/* a directory's page and where READDIR is in it */

typedef struct {
    sft_s3_list_t          list;
    sft_uint_t             object;
    sft_uint_t             prefix;
    unsigned               have_page:1;
} sft_s3_dir_t;


static void sft_s3_opendir_listed(sft_s3_op_t *op);
static void sft_s3_readdir_listed(sft_s3_op_t *op);
static sft_int_t sft_s3_readdir_next(sft_s3_op_t *op);
static void sft_s3_readdir_fill(sft_s3_op_t *op);
static sft_uint_t sft_s3_dirent(sft_s3_op_t *op, sft_str_t *key,
    sft_storage_dirent_t *de);
static void sft_s3_usage_listed(sft_s3_op_t *op);


sft_int_t
sft_s3_opendir(sft_storage_req_t *req)
{
    sft_s3_op_t   *op;
    sft_s3_dir_t  *d;

    op = sft_s3_op_create(req);
    if (op == NULL) {
        return SFT_ERROR;
    }

    d = sft_alloc(sizeof(sft_s3_dir_t), req->log);
    if (d == NULL) {
        sft_s3_op_free(op);
        req->err = SFT_STORAGE_IO;
        return SFT_ERROR;
    }

    sft_memzero(d, sizeof(sft_s3_dir_t));

    op->data = d;
    op->keep = 1;
    sft_s3_dir_key(op);

    if (sft_s3_op_list(op, &op->key, 1, 1000, NULL, sft_s3_opendir_listed)
        != SFT_OK)
    {
        sft_free(d);
        return sft_s3_op_again(op, SFT_ERROR);
    }

    return SFT_AGAIN;
}


/* the first page: a directory other than the root has at least a key */

static void
sft_s3_opendir_listed(sft_s3_op_t *op)
{
    sft_s3_dir_t       *d;
    sft_storage_req_t  *req;

    d = op->data;
    req = op->req;

    op->keep = 0;

    if (sft_s3_page(op, &d->list) != SFT_OK) {
        sft_free(d);
        return;
    }

    if (d->list.objects.nelts == 0 && d->list.prefixes.nelts == 0
        && op->key.len > op->conf->prefix.len)
    {
        sft_free(d);
        sft_s3_op_finish(op, SFT_STORAGE_NOT_FOUND);
        return;
    }

    op->keep = 1;
    d->have_page = 1;
    req->dir->storage = req->storage;
    req->dir->data = op;
    req->dir->eof = 0;
    req->dir->nentries = 0;

    sft_s3_op_finish(op, SFT_STORAGE_OK);
}


sft_int_t
sft_s3_readdir(sft_storage_req_t *req)
{
    sft_s3_op_t   *op;
    sft_s3_dir_t  *d;

    op = req->dir->data;
    d = op->data;
    op->req = req;

    if (d->have_page) {
        sft_s3_readdir_fill(op);

        if (req->dir->nentries || op->token.len == 0) {
            req->dir->eof = (req->dir->nentries == 0);
            op->req = NULL;
            return SFT_OK;
        }
    }

    if (sft_s3_readdir_next(op) != SFT_OK) {
        op->req = NULL;
        req->err = SFT_STORAGE_IO;
        return SFT_ERROR;
    }

    return SFT_AGAIN;
}


/* the page after this one; this one's memory goes with its request */

static sft_int_t
sft_s3_readdir_next(sft_s3_op_t *op)
{
    sft_s3_dir_t  *d;

    d = op->data;
    d->have_page = 0;

    return sft_s3_op_list(op, &op->key, 1, 1000, &op->token,
                          sft_s3_readdir_listed);
}


static void
sft_s3_readdir_listed(sft_s3_op_t *op)
{
    sft_s3_dir_t       *d;
    sft_storage_dir_t  *dir;

    d = op->data;
    dir = op->req->dir;

    if (sft_s3_page(op, &d->list) != SFT_OK) {
        return;
    }

    d->have_page = 1;
    d->object = 0;
    d->prefix = 0;

    sft_s3_readdir_fill(op);

    if (dir->nentries == 0 && op->token.len) {
        /* a page of nothing listable: the next one */

        if (sft_s3_readdir_next(op) != SFT_OK) {
            sft_s3_op_finish(op, SFT_STORAGE_IO);
        }

        return;
    }

    dir->eof = (dir->nentries == 0);

    sft_s3_op_finish(op, SFT_STORAGE_OK);
}


/* up to SFT_STORAGE_DIR_BATCH entries from the page: files, then dirs */

static void
sft_s3_readdir_fill(sft_s3_op_t *op)
{
    sft_str_t             *pre;
    sft_s3_dir_t          *d;
    sft_s3_object_t       *obj;
    sft_storage_dir_t     *dir;
    sft_storage_dirent_t  *de;

    d = op->data;
    dir = op->req->dir;
    dir->nentries = 0;

    obj = d->list.objects.elts;
    pre = d->list.prefixes.elts;

    while (dir->nentries < SFT_STORAGE_DIR_BATCH) {
        de = &dir->entries[dir->nentries];

        if (d->object < d->list.objects.nelts) {
            if (sft_s3_dirent(op, &obj[d->object].key, de)
                && obj[d->object].key.data[obj[d->object].key.len - 1]
                   != '/')
            {
                sft_s3_stat_file(op->conf, &obj[d->object].key,
                                 obj[d->object].size, obj[d->object].mtime,
                                 &de->st);
                dir->nentries++;
            }

            d->object++;
            continue;
        }

        if (d->prefix < d->list.prefixes.nelts) {
            if (sft_s3_dirent(op, &pre[d->prefix], de)) {
                sft_s3_stat_dir(op->conf, &pre[d->prefix], &de->st);
                dir->nentries++;
            }

            d->prefix++;
            continue;
        }

        break;
    }
}


/* the entry's name: the key below the directory, one segment */

static sft_uint_t
sft_s3_dirent(sft_s3_op_t *op, sft_str_t *key, sft_storage_dirent_t *de)
{
    u_char  *name;
    size_t   len;

    if (key->len <= op->key.len
        || sft_memcmp(key->data, op->key.data, op->key.len) != 0)
    {
        return 0;
    }

    name = key->data + op->key.len;
    len = key->len - op->key.len;

    if (name[len - 1] == '/') {
        len--;
    }

    if (len == 0 || len > SFT_STORAGE_NAME_MAX || memchr(name, '/', len)
        || memchr(name, '\0', len)
        || (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'))))
    {
        return 0;
    }

    sft_memcpy(de->name, name, len);
    de->name[len] = '\0';
    de->len = len;

    return 1;
}


sft_int_t
sft_s3_closedir(sft_storage_req_t *req)
{
    sft_s3_op_t  *op;

    op = req->dir->data;

    if (op) {
        sft_free(op->data);
        sft_s3_op_free(op);
        req->dir->data = NULL;
    }

    return SFT_OK;
}


/* USAGE: every key below "dir/", markers left out of the file count */

sft_int_t
sft_s3_usage(sft_storage_req_t *req)
{
    sft_s3_op_t  *op;

    op = sft_s3_op_create(req);
    if (op == NULL) {
        return SFT_ERROR;
    }

    sft_memzero(&req->usage, sizeof(sft_storage_usage_t));
    sft_s3_dir_key(op);

    return sft_s3_op_again(op, sft_s3_op_list(op, &op->key, 0, 1000, NULL,
                                              sft_s3_usage_listed));
}


static void
sft_s3_usage_listed(sft_s3_op_t *op)
{
    sft_uint_t          i;
    sft_s3_list_t       list;
    sft_s3_object_t    *obj;
    sft_storage_req_t  *req;

    req = op->req;

    if (sft_s3_page(op, &list) != SFT_OK) {
        return;
    }

    obj = list.objects.elts;

    for (i = 0; i < list.objects.nelts; i++) {
        if (obj[i].key.len && obj[i].key.data[obj[i].key.len - 1] != '/') {
            req->usage.bytes += obj[i].size;
            req->usage.files++;
        }
    }

    if (sft_s3_op_next_page(op, sft_s3_usage_listed) == SFT_DONE) {
        sft_s3_op_finish(op, SFT_STORAGE_OK);
    }
}
