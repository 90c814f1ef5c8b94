/*
 * sft_sftp_request.c -- the requests in flight: each with its own pool, a
 * share of the output budget and maybe a chunk of the shared buffer pool
 * (given back when the request ends), started by its handler's parse,
 * completed by its handler's complete on the event loop (or cleaned up by
 * its abort when the session went meanwhile).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp_proto.h>


sft_sftp_request_t *
sft_sftp_request_new(sft_sftp_session_t *s, const sft_sftp_handler_t *hd,
    uint32_t id, size_t reserve)
{
    sft_pool_t          *pool;
    sft_sftp_request_t  *r;

    pool = sft_create_pool(1024, s->log);
    if (pool == NULL) {
        return NULL;
    }

    r = sft_pcalloc(pool, sizeof(sft_sftp_request_t));
    if (r == NULL) {
        sft_destroy_pool(pool);
        return NULL;
    }

    r->session = s;
    r->pool = pool;
    r->id = id;
    r->handler = hd;
    r->reserve = reserve;

    r->req.pool = pool;
    r->req.handler = sft_sftp_op_done;
    r->req.data = r;

    s->inflight++;
    s->reserved += reserve;

    return r;
}


void
sft_sftp_request_done(sft_sftp_request_t *r)
{
    sft_sftp_session_t  *s = r->session;

    s->inflight--;
    s->reserved -= r->reserve;

    /* the I/O into or out of it has ended, or never started */

    if (r->chunk) {
        sft_buffer_put(r->chunk);
    }

    sft_destroy_pool(r->pool);
}


/* what a storage operation returned as it started */

void
sft_sftp_result(sft_sftp_request_t *r, sft_int_t rc)
{
    if (rc == SFT_AGAIN) {
        r->session->pending++;
        return;
    }

    if (rc == SFT_OK) {
        r->req.err = SFT_STORAGE_OK;
    }

    sft_sftp_complete(r);
}


/* a storage operation completed on the loop */

void
sft_sftp_op_done(sft_storage_req_t *req)
{
    sft_sftp_request_t  *r = req->data;
    sft_sftp_session_t  *s = r->session;

    if (s->closed) {
        if (r->handler->abort) {
            r->handler->abort(r);
        }

        if (r->handle) {
            sft_sftp_handle_release(s, r->handle);
        }

        sft_sftp_request_done(r);
        sft_sftp_op_finished(s);
        return;
    }

    s->pending--;

    sft_sftp_complete(r);
    sft_sftp_resume(s);
}


/* one step of a request is over: reply, or start the next step */

void
sft_sftp_complete(sft_sftp_request_t *r)
{
    r->handler->complete(r);
}


/* answered: a CLOSE that waited for the handle's operations goes on */

void
sft_sftp_finish(sft_sftp_request_t *r)
{
    sft_sftp_handle_t  *h = r->handle;

    if (h && h->busy == 0 && h->closing && h->closing != r) {
        sft_sftp_complete(h->closing);
    }

    sft_sftp_request_done(r);
}
