/*
 * sft_s3_glance.c -- a session's look at a directory: when a probe finds
 * no object under a name, the listing that tells whether the name is a
 * directory lists the names after it in the same directory (one page of
 * SFT_S3_GLANCE_KEYS), and the worker keeps which names the page held
 * for s3_metadata_reuse.  The same session's next stat of a name the
 * page covers and did not hold is answered "no such file" without asking
 * S3 (an upload of many new files is then a PUT each, not a HEAD, a
 * listing and a PUT), and so is an open that creates or replaces.  What
 * this worker creates or renames afterwards is added to the looks at its
 * directory (a name a look holds is always asked about); a rename
 * forgets them all, a directory may have moved.  Names are kept as
 * 64-bit hashes of their keys: two names that collide make a name
 * asked about, never one taken as absent.  A fixed table of
 * SFT_S3_GLANCES looks, allocated at the first.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>


#define SFT_S3_GLANCES  8


static void sft_s3_glance_dir(sft_s3_storage_conf_t *conf, sft_str_t *key,
    sft_str_t *dir);
static sft_int_t sft_s3_glance_covers(sft_s3_glance_t *g, sft_str_t *key);
static sft_int_t sft_s3_key_cmp(u_char *a, size_t alen, u_char *b,
    size_t blen);
static sft_uint_t sft_s3_glance_holds(sft_s3_glance_t *g, uint64_t hash);
static void sft_s3_glance_clear(sft_s3_glance_t *g);


/* the listing of op->key's directory after op->key, with handler;
   SFT_DECLINED where no look would be kept */

sft_int_t
sft_s3_glance(sft_s3_op_t *op, sft_s3_op_pt handler)
{
    sft_str_t  dir;

    if (op->conf->memo_time == 0 || op->req->session == 0
        || op->conf->log == NULL)
    {
        return SFT_DECLINED;
    }

    sft_s3_glance_dir(op->conf, &op->key, &dir);

    return sft_s3_op_list_after(op, &dir, 1, SFT_S3_GLANCE_KEYS, NULL,
                                &op->key, handler);
}


/*
 * The page of sft_s3_glance(): what op->key is (SFT_S3_FOUND_DIR or
 * SFT_S3_FOUND_NONE, the HEAD found no object), the look kept; or
 * SFT_DECLINED when the page ends before the name's directory would be
 * (names sorting between the name and "name/", as "name.txt", filled it).
 */

sft_int_t
sft_s3_glance_take(sft_s3_op_t *op, sft_s3_list_t *list)
{
    u_char                  name[SFT_S3_KEY_MAX + 1];
    size_t                  n;
    sft_str_t               dir, *last, *prefix;
    sft_int_t               found;
    sft_uint_t              i, slot;
    sft_msec_t              now, ends, first;
    sft_s3_object_t        *obj;
    sft_s3_glance_t        *g;
    sft_s3_storage_conf_t  *conf;

    conf = op->conf;
    n = op->key.len;

    if (n + 1 > sizeof(name)) {
        return SFT_DECLINED;
    }

    sft_memcpy(name, op->key.data, n);
    name[n] = '/';

    /* the last entry of the page, a key or a prefix, whichever sorts
       later */

    last = NULL;

    if (list->objects.nelts) {
        obj = list->objects.elts;
        last = &obj[list->objects.nelts - 1].key;
    }

    if (list->prefixes.nelts) {
        prefix = list->prefixes.elts;
        prefix = &prefix[list->prefixes.nelts - 1];

        if (last == NULL
            || sft_s3_key_cmp(prefix->data, prefix->len, last->data,
                              last->len) > 0)
        {
            last = prefix;
        }
    }

    found = SFT_DECLINED;

    prefix = list->prefixes.elts;

    for (i = 0; i < list->prefixes.nelts; i++) {
        if (prefix[i].len == n + 1
            && sft_memcmp(prefix[i].data, name, n + 1) == 0)
        {
            found = SFT_S3_FOUND_DIR;
            break;
        }
    }

    if (list->truncated && last == NULL) {
        return SFT_DECLINED;            /* a page of nothing, and more */
    }

    if (found == SFT_DECLINED
        && (!list->truncated
            || sft_s3_key_cmp(name, n + 1, last->data, last->len) <= 0))
    {
        found = SFT_S3_FOUND_NONE;
    }

    if (found == SFT_DECLINED || op->changes != conf->changes
        || list->objects.nelts + list->prefixes.nelts > SFT_S3_GLANCE_KEYS)
    {
        return found;                   /* nothing kept */
    }

    if (conf->glances == NULL) {
        conf->glances = sft_calloc(SFT_S3_GLANCES * sizeof(sft_s3_glance_t),
                                   conf->log);
        if (conf->glances == NULL) {
            return found;
        }
    }

    /* the session's look at the directory, a free or spent slot, else the
       one that ends first */

    sft_s3_glance_dir(conf, &op->key, &dir);
    now = sft_current_msec;
    slot = 0;
    first = (sft_msec_t) -1;

    for (i = 0; i < SFT_S3_GLANCES; i++) {
        g = &conf->glances[i];

        if (g->session == op->req->session && g->dir.len == dir.len
            && sft_memcmp(g->dir.data, dir.data, dir.len) == 0)
        {
            slot = i;
            break;
        }

        ends = (g->session == 0 || g->until <= now) ? 0 : g->until;

        if (ends < first) {
            first = ends;
            slot = i;
        }
    }

    g = &conf->glances[slot];
    sft_s3_glance_clear(g);

    n = dir.len + op->key.len + (list->truncated ? last->len : 0);

    g->dir.data = sft_alloc(n + 1, conf->log);
    if (g->dir.data == NULL) {
        return found;
    }

    g->dir.len = dir.len;
    sft_memcpy(g->dir.data, dir.data, dir.len);
    g->after.data = g->dir.data + dir.len;
    g->after.len = op->key.len;
    sft_memcpy(g->after.data, op->key.data, op->key.len);
    g->last.data = g->after.data + op->key.len;

    if (list->truncated) {
        g->last.len = last->len;
        sft_memcpy(g->last.data, last->data, last->len);
    }

    obj = list->objects.elts;

    for (i = 0; i < list->objects.nelts; i++) {
        g->names[g->nnames++] = sft_s3_key_hash(obj[i].key.data,
                                                obj[i].key.len);
    }

    prefix = list->prefixes.elts;

    for (i = 0; i < list->prefixes.nelts; i++) {
        g->names[g->nnames++] = sft_s3_key_hash(prefix[i].data,
                                                prefix[i].len
                                                - (prefix[i].len > 0));
    }

    g->session = op->req->session;
    g->until = now + conf->memo_time;

    return found;
}


/* a look (the session's where mine) holds op->key's name as absent */

sft_uint_t
sft_s3_glance_absent(sft_s3_op_t *op, sft_uint_t mine)
{
    uint64_t          hash;
    sft_str_t         dir;
    sft_uint_t        i;
    sft_s3_glance_t  *g;

    if (op->conf->glances == NULL || op->req->session == 0) {
        return 0;
    }

    sft_s3_glance_dir(op->conf, &op->key, &dir);
    hash = sft_s3_key_hash(op->key.data, op->key.len);

    for (i = 0; i < SFT_S3_GLANCES; i++) {
        g = &op->conf->glances[i];

        if (g->session == 0
            || (mine && g->session != op->req->session)
            || g->until <= (sft_msec_t) sft_current_msec
            || g->dir.len != dir.len
            || sft_memcmp(g->dir.data, dir.data, dir.len) != 0
            || !sft_s3_glance_covers(g, &op->key))
        {
            continue;
        }

        if (sft_s3_glance_holds(g, hash)) {
            return 0;
        }

        return 1;
    }

    return 0;
}


/* key, maybe there now (created, replaced, a directory made): the looks
   at its directory hold it; one with no room left is forgotten */

void
sft_s3_glance_add(sft_s3_storage_conf_t *conf, sft_str_t *key)
{
    uint64_t          hash;
    sft_str_t         dir, name;
    sft_uint_t        i;
    sft_s3_glance_t  *g;

    if (conf->glances == NULL) {
        return;
    }

    name = *key;

    if (name.len > conf->prefix.len && name.data[name.len - 1] == '/') {
        name.len--;                     /* a directory's marker */
    }

    sft_s3_glance_dir(conf, &name, &dir);
    hash = sft_s3_key_hash(name.data, name.len);

    for (i = 0; i < SFT_S3_GLANCES; i++) {
        g = &conf->glances[i];

        if (g->session == 0 || g->dir.len != dir.len
            || sft_memcmp(g->dir.data, dir.data, dir.len) != 0
            || sft_s3_glance_holds(g, hash))
        {
            continue;
        }

        if (g->nnames == SFT_S3_GLANCE_NAMES) {
            sft_s3_glance_clear(g);
            continue;
        }

        g->names[g->nnames++] = hash;
    }
}


static sft_uint_t
sft_s3_glance_holds(sft_s3_glance_t *g, uint64_t hash)
{
    sft_uint_t  i;

    for (i = 0; i < g->nnames; i++) {
        if (g->names[i] == hash) {
            return 1;
        }
    }

    return 0;
}


void
sft_s3_glance_forget(sft_s3_storage_conf_t *conf)
{
    sft_uint_t  i;

    if (conf->glances == NULL) {
        return;
    }

    for (i = 0; i < SFT_S3_GLANCES; i++) {
        sft_s3_glance_clear(&conf->glances[i]);
    }
}


void
sft_s3_glance_free(sft_s3_storage_conf_t *conf)
{
    sft_s3_glance_forget(conf);
    sft_free(conf->glances);
    conf->glances = NULL;
}


static void
sft_s3_glance_clear(sft_s3_glance_t *g)
{
    sft_free(g->dir.data);
    sft_memzero(g, sizeof(sft_s3_glance_t));
}


/* the directory key is in: up to its last '/', else the storage's
   prefix */

static void
sft_s3_glance_dir(sft_s3_storage_conf_t *conf, sft_str_t *key,
    sft_str_t *dir)
{
    size_t  n;

    n = key->len;

    while (n > conf->prefix.len && key->data[n - 1] != '/') {
        n--;
    }

    dir->data = key->data;
    dir->len = n;
}


/* the page listed key (after the look's first name, up to its last
   entry, and so the name's directory too) */

static sft_int_t
sft_s3_glance_covers(sft_s3_glance_t *g, sft_str_t *key)
{
    u_char  name[SFT_S3_KEY_MAX + 1];

    if (sft_s3_key_cmp(key->data, key->len, g->after.data, g->after.len)
        <= 0)
    {
        return 0;
    }

    if (g->last.len == 0) {
        return 1;                       /* the page was the directory's
                                           last */
    }

    if (key->len > SFT_S3_KEY_MAX) {
        return 0;
    }

    sft_memcpy(name, key->data, key->len);
    name[key->len] = '/';

    return sft_s3_key_cmp(name, key->len + 1, g->last.data, g->last.len)
           <= 0;
}


/* S3's order of keys: their bytes, a key before the longer ones it
   starts */

static sft_int_t
sft_s3_key_cmp(u_char *a, size_t alen, u_char *b, size_t blen)
{
    sft_int_t  rc;

    rc = sft_memcmp(a, b, sft_min(alen, blen));

    if (rc != 0) {
        return rc;
    }

    return (alen > blen) - (alen < blen);
}
