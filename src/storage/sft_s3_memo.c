/*
 * sft_s3_memo.c -- what a worker's last HEAD or peek (sft_s3_peek.c), and
 * listing, of a name answered, kept for s3_metadata_reuse (1s by default)
 * so that the open which follows a client's stat does not ask again: an
 * SFTP put is a stat then an open, a get two stats (lstat, stat) then an
 * open, each probe a HEAD or a peek and maybe a listing.  The memo answers
 * only where an answer a second old cannot do harm: an open for reading
 * takes a file with its ETag (its GETs ask for that ETag, so an object
 * replaced since is refused, never mixed), and the session whose stat's
 * peek brought the whole file takes its bytes (the version it was just
 * told of, whole; another session's open never does), a plain create or
 * replace takes whatever was there, and a stat takes only what the same
 * session was told (a session that looks twice is told the same twice;
 * any other session's stat asks S3, so a name another node changed is
 * seen at once).  Every change this worker makes forgets the whole memo.
 * A fixed table of SFT_S3_MEMO_SLOTS, one name per slot, its files' bytes
 * SFT_S3_MEMO_BODIES at most.  Names a session's look at their directory
 * shows absent (sft_s3_glance.c) are answered here too.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>


#define SFT_S3_MEMO_SLOTS   64
#define SFT_S3_MEMO_BODIES  (1024 * 1024)


static sft_s3_memo_t *sft_s3_memo_get(sft_s3_storage_conf_t *conf,
    sft_str_t *key);
static void sft_s3_memo_event(sft_event_t *ev);


static sft_s3_memo_t *
sft_s3_memo_slot(sft_s3_storage_conf_t *conf, sft_str_t *key, uint64_t *hash)
{
    if (conf->memo == NULL) {
        conf->memo = sft_calloc(SFT_S3_MEMO_SLOTS * sizeof(sft_s3_memo_t),
                                conf->log);
        if (conf->memo == NULL) {
            return NULL;
        }
    }

    *hash = sft_s3_key_hash(key->data, key->len);

    return &conf->memo[*hash % SFT_S3_MEMO_SLOTS];
}


static void
sft_s3_memo_clear(sft_s3_storage_conf_t *conf, sft_s3_memo_t *m)
{
    if (m->body) {
        sft_free(m->body);
        conf->memo_bodies -= (size_t) m->st.size;
    }

    sft_free(m->key.data);
    sft_memzero(m, sizeof(sft_s3_memo_t));
}


/* a probe's answer for op's key: found, op->req->st, and the HEAD or peek
   r when it was a file; the slot it is kept in, or NULL */

sft_s3_memo_t *
sft_s3_memo_put(sft_s3_op_t *op, sft_uint_t found, sft_s3_request_t *r)
{
    uint64_t                hash;
    sft_str_t              *key = &op->key;
    sft_s3_memo_t          *m;
    sft_s3_storage_conf_t  *conf = op->conf;

    if (conf->memo_time == 0 || conf->log == NULL
        || op->changes != conf->changes)
    {
        return NULL;                    /* the answer may predate a change */
    }

    m = sft_s3_memo_slot(conf, key, &hash);
    if (m == NULL) {
        return NULL;
    }

    sft_s3_memo_clear(conf, m);

    if (found == SFT_S3_FOUND_FILE
        && (r == NULL || r->etag.len == 0 || r->etag.len > SFT_S3_MEMO_ETAG))
    {
        return NULL;                    /* no ETag to read it by */
    }

    m->key.data = sft_alloc(key->len, conf->log);
    if (m->key.data == NULL) {
        return NULL;
    }

    sft_memcpy(m->key.data, key->data, key->len);
    m->key.len = key->len;
    m->hash = hash;
    m->until = sft_current_msec + conf->memo_time;
    m->found = found;
    m->session = op->req->session;
    m->st = op->req->st;

    if (found == SFT_S3_FOUND_FILE) {
        sft_memcpy(m->etag, r->etag.data, r->etag.len);
        m->etag_len = r->etag.len;
        m->crc32c_known = sft_s3_request_crc32c(r, &m->crc32c) == SFT_OK;
    }

    return m;
}


/* the whole file a peek brought, kept with its slot while the bytes of
   all slots stay within SFT_S3_MEMO_BODIES; its CRC-32C computed */

void
sft_s3_memo_body(sft_s3_storage_conf_t *conf, sft_s3_memo_t *m,
    u_char *body, uint32_t crc32c)
{
    size_t  size;

    size = (size_t) m->st.size;

    if (size == 0 || size > SFT_S3_MEMO_BODIES - conf->memo_bodies) {
        return;
    }

    m->body = sft_alloc(size, conf->log);
    if (m->body == NULL) {
        return;
    }

    sft_memcpy(m->body, body, size);
    conf->memo_bodies += size;
    m->crc32c = crc32c;
    m->crc32c_known = 1;
}


/* what key was a moment ago, or NULL */

static sft_s3_memo_t *
sft_s3_memo_get(sft_s3_storage_conf_t *conf, sft_str_t *key)
{
    uint64_t        hash;
    sft_s3_memo_t  *m;

    if (conf->memo_time == 0) {
        return NULL;
    }

    m = sft_s3_memo_slot(conf, key, &hash);

    if (m == NULL || m->key.data == NULL || m->hash != hash
        || m->key.len != key->len
        || sft_memcmp(m->key.data, key->data, key->len) != 0)
    {
        return NULL;
    }

    if (m->until <= (sft_msec_t) sft_current_msec) {
        sft_s3_memo_clear(conf, m);
        return NULL;
    }

    return m;
}


/*
 * This worker changed key (a name made, replaced, renamed or removed; NULL:
 * names it cannot say, a rename's): every name's memo forgotten, names
 * below a renamed directory too; the looks at key's directory hold key
 * from now on, and without key none is kept.  Answers asked for before
 * the change are not kept when they come.
 */

void
sft_s3_memo_changed(sft_s3_storage_conf_t *conf, sft_str_t *key)
{
    sft_uint_t  i;

    conf->changes++;

    if (key) {
        sft_s3_glance_add(conf, key);

    } else {
        sft_s3_glance_forget(conf);
    }

    if (conf->memo == NULL) {
        return;
    }

    for (i = 0; i < SFT_S3_MEMO_SLOTS; i++) {
        sft_s3_memo_clear(conf, &conf->memo[i]);
    }
}


void
sft_s3_memo_free(sft_s3_storage_conf_t *conf)
{
    sft_uint_t  i;

    sft_s3_glance_free(conf);

    if (conf->memo == NULL) {
        return;
    }

    for (i = 0; i < SFT_S3_MEMO_SLOTS; i++) {
        sft_s3_memo_clear(conf, &conf->memo[i]);
    }

    sft_free(conf->memo);
    conf->memo = NULL;
}


/*
 * A probe (sft_s3_probe()) answered by the memo if it knows the name
 * (SFT_S3_MEMO_FILE: as a file, SFT_S3_MEMO_CRC: a file and its CRC-32C;
 * SFT_S3_MEMO_MINE: from this session's own probe or look at the
 * directory): found and req->st set, op->memo a copy (for the same
 * session's open, with a copy of the file's bytes where the memo has
 * them), then() run from a posted event, as a request's answer would be;
 * SFT_DECLINED: S3 must be asked.
 */

sft_int_t
sft_s3_memo_answer(sft_s3_op_t *op, sft_s3_op_pt then, sft_uint_t which)
{
    sft_s3_memo_t  *m, absent;

    m = sft_s3_memo_get(op->conf, &op->key);

    if (m == NULL && which != SFT_S3_MEMO_FILE
        && sft_s3_glance_absent(op, which == SFT_S3_MEMO_MINE))
    {
        sft_memzero(&absent, sizeof(sft_s3_memo_t));
        absent.found = SFT_S3_FOUND_NONE;
        absent.session = op->req->session;
        m = &absent;
    }

    if (m == NULL
        || ((which == SFT_S3_MEMO_FILE || which == SFT_S3_MEMO_CRC)
            && m->found != SFT_S3_FOUND_FILE)
        || (which == SFT_S3_MEMO_CRC && !m->crc32c_known)
        || (which == SFT_S3_MEMO_MINE
            && (m->session == 0 || m->session != op->req->session)))
    {
        return SFT_DECLINED;
    }

    op->memo = *m;
    op->memo.key.data = NULL;
    op->memo.key.len = 0;
    op->memo.body = NULL;

    if (m->body && (which == SFT_S3_MEMO_FILE || which == SFT_S3_MEMO_CRC)
        && m->session != 0 && m->session == op->req->session)
    {
        op->memo.body = sft_alloc((size_t) m->st.size, op->conf->log);
        if (op->memo.body) {
            sft_memcpy(op->memo.body, m->body, (size_t) m->st.size);
        }
    }

    op->memo_used = 1;
    op->found = m->found;
    op->req->st = m->st;
    op->then = then;

    op->ev.handler = sft_s3_memo_event;
    op->ev.data = op;
    op->ev.log = op->conf->log;
    sft_post_event(&op->ev);

    return SFT_OK;
}


static void
sft_s3_memo_event(sft_event_t *ev)
{
    sft_s3_op_t  *op = ev->data;

    op->then(op);
}
