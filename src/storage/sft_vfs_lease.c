/*
 * sft_vfs_lease.c -- changes that wait for room in a quota shared with
 * other nodes: a new file, a link, or a write the worker's lease is short
 * for waits until the shared usage answered (sft_usage_lease.c), then
 * runs, or is refused if the quota is really full.  A session's waiting
 * changes are kept in order; one whose session ended finishes without it.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_vfs.h>
#include <sft_usage_lease.h>


typedef struct {
    sft_usage_wait_t      wait;
    sft_vfs_session_t    *vs;         /* NULL once the session ended */
    sft_storage_req_t    *first;      /* changes waiting for room */
    sft_storage_req_t   **last;
} sft_vfs_lease_t;


static void sft_vfs_lease_done(sft_usage_wait_t *w);
static sft_int_t sft_vfs_lease_write(sft_vfs_session_t *s,
    sft_storage_req_t *req);


/* the room a change needs: -1 none (it frees), else bytes to write */

static off_t
sft_vfs_lease_need(sft_storage_req_t *req)
{
    switch (req->op) {

    case SFT_STORAGE_OPEN_WRITE:
    case SFT_STORAGE_LINK:
    case SFT_STORAGE_SYMLINK:
        return 0;

    case SFT_STORAGE_WRITE:
        return (off_t) req->len;

    default:
        return -1;
    }
}


/*
 * Runs a change of a user whose usage is known; one that needs room the
 * lease has not waits (SFT_AGAIN: req->handler is called after it).
 */

sft_int_t
sft_vfs_run_leased(sft_vfs_session_t *s, sft_storage_req_t *req)
{
    sft_int_t          rc;
    sft_vfs_lease_t   *lw;
    sft_vfs_quota_t   *q = s->quota;

    lw = s->lease;

    if (lw == NULL) {
        rc = sft_usage_lease_need(q->usage, q->max_bytes, q->max_files,
                                  sft_vfs_lease_need(req));

        if (rc == SFT_OK) {
            return req->op == SFT_STORAGE_WRITE ? sft_vfs_lease_write(s, req)
                                                : sft_storage_run(req);
        }

        lw = sft_alloc(sizeof(sft_vfs_lease_t), s->log);
        if (lw == NULL) {
            req->err = SFT_STORAGE_IO;
            return SFT_ERROR;
        }

        lw->wait.handler = sft_vfs_lease_done;
        lw->wait.data = lw;
        lw->vs = s;
        lw->first = NULL;
        lw->last = &lw->first;
        s->lease = lw;

        sft_usage_lease_wait(q->usage, &lw->wait);
    }

    req->next = NULL;
    *lw->last = req;
    lw->last = &req->next;

    return SFT_AGAIN;
}


/* a write charged now: the room may be there or not */

static sft_int_t
sft_vfs_lease_write(sft_vfs_session_t *s, sft_storage_req_t *req)
{
    if (sft_vfs_charge_write(s, req->file, req->offset, req->len) != SFT_OK) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "quota exceeded: upload of \"%s\" stopped",
                      req->file->name);
        req->err = SFT_STORAGE_QUOTA;
        return SFT_ERROR;
    }

    return sft_storage_run(req);
}


/* on the loop: the store answered, the waiting changes run in order */

static void
sft_vfs_lease_done(sft_usage_wait_t *w)
{
    sft_int_t           rc;
    sft_vfs_lease_t    *lw = w->data;
    sft_storage_req_t  *req, *next;

    if (lw->vs) {
        lw->vs->lease = NULL;
    }

    for (req = lw->first; req; req = next) {
        next = req->next;
        req->next = NULL;

        if (req->op != SFT_STORAGE_WRITE) {
            rc = sft_storage_run(req);

        } else if (lw->vs) {
            rc = sft_vfs_lease_write(lw->vs, req);

        } else {
            req->err = SFT_STORAGE_QUOTA;
            rc = SFT_ERROR;
        }

        if (rc != SFT_AGAIN) {
            req->handler(req);
        }
    }

    sft_free(lw);
}


/* the session ends: what waits finishes without it */

void
sft_vfs_lease_detach(sft_vfs_session_t *s)
{
    sft_vfs_lease_t  *lw = s->lease;

    if (lw) {
        lw->vs = NULL;
        s->lease = NULL;
    }
}
