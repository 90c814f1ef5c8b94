/*
 * sft_ftp_session.c -- an FTP control connection: framing commands in a
 * fixed buffer (1k before login, 4k after), the allow-list dispatch with
 * its pre-login and post-login sets, the reply writer, timeouts, login
 * through the asynchronous password check, and closing the session.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>


#define SFT_FTP_LINGERING_TIME  2000


static void sft_ftp_greet(sft_ftp_session_t *s);
static void sft_ftp_tls_start(sft_ftp_session_t *s);
static void sft_ftp_tls_handshaked(sft_connection_t *c);
static void sft_ftp_tls_closed(sft_connection_t *c);
static void sft_ftp_control_handler(sft_event_t *ev);
static void sft_ftp_run(sft_ftp_session_t *s);
static void sft_ftp_busy_eof(sft_ftp_session_t *s);
static void sft_ftp_dispatch(sft_ftp_session_t *s, sft_int_t rc);
static void sft_ftp_op_done(sft_storage_req_t *req);
static void sft_ftp_auth_done(sft_auth_request_t *ar);
static void sft_ftp_certificate_login(sft_ftp_session_t *s);
static void sft_ftp_auth_result(sft_ftp_session_t *s);
static void sft_ftp_delay_handler(sft_event_t *ev);
static sft_int_t sft_ftp_setup_vfs(sft_ftp_session_t *s);
static void sft_ftp_lingering_close(sft_ftp_session_t *s);
static void sft_ftp_lingering_handler(sft_event_t *ev);
static void sft_ftp_end(sft_session_t *session, const char *by);
static void sft_ftp_close_saying(sft_ftp_session_t *s, const char *text);


static sft_str_t  sft_ftp_default_pool = sft_string("default");

void
sft_ftp_init_connection(sft_connection_t *c)
{
    sft_ftp_session_t  *s;

    s = sft_pcalloc(c->pool, sizeof(sft_ftp_session_t));
    if (s == NULL) {
        sft_destroy_pool(c->pool);
        c->pool = NULL;
        sft_close_connection(c);
        return;
    }

    s->connection = c;
    s->pool = c->pool;
    s->log = c->log;
    s->conf = sft_proto_get_module_srv_conf(c->listening->servers,
                                            sft_ftp_core_module);

    s->start = sft_pnalloc(c->pool, SFT_FTP_COMMAND_BUFFER);
    s->out = sft_pnalloc(c->pool, SFT_FTP_REPLY_BUFFER);

    if (s->start == NULL || s->out == NULL) {
        sft_destroy_pool(c->pool);
        c->pool = NULL;
        sft_close_connection(c);
        return;
    }

    sft_stat_add(sft_ftp_stat_sessions, 1);

    s->pos = s->start;
    s->last = s->start;
    s->end = s->start + SFT_FTP_PRELOGIN_BUFFER;

    s->delay.handler = sft_ftp_delay_handler;
    s->delay.data = s;
    s->delay.log = c->log;

    s->thread_pool = sft_thread_pool_get((sft_cycle_t *) sft_cycle,
                                         &sft_ftp_default_pool);

    c->data = s;
    sft_peer_init(&s->peer, c, &s->user);

    c->read->handler = sft_ftp_control_handler;
    c->write->handler = sft_ftp_control_handler;
    c->read->ready = 1;

    sft_log_error(SFT_LOG_INFO, c->log, 0, "ftp session started");

    if (c->listening->ssl && s->conf->tls.ctx) {

        /* implicit FTPS: the handshake first, then the greeting or 421 */

        s->implicit = 1;
        sft_ftp_tls_start(s);
        return;
    }

    sft_ftp_greet(s);
}


static void
sft_ftp_greet(sft_ftp_session_t *s)
{
    sft_connection_t  *c;

    c = s->connection;

    if (sft_auth_banned((struct sockaddr *) &c->sockaddr)) {
        sft_log_error(SFT_LOG_INFO, c->log, 0, "address is banned");
        sft_ftp_reply(s, 421, SFT_AUTH_BANNED_REPLY);
        s->quit = 1;

    } else if (sft_auth_connection_open((struct sockaddr *) &c->sockaddr)
               != SFT_OK)
    {
        sft_ftp_reply(s, 421, "Too many connections from your address.");
        s->quit = 1;

    } else {
        s->counted = 1;
        sft_session_open(&s->session,
                         s->tls ? SFT_SESSION_FTPS : SFT_SESSION_FTP, c,
                         sft_ftp_end, s);
        sft_ftp_reply(s, 220, "siftpd ready.");
    }

    sft_ftp_run(s);
}


static void
sft_ftp_control_handler(sft_event_t *ev)
{
    sft_connection_t   *c;
    sft_ftp_session_t  *s;

    c = ev->data;
    s = c->data;

    if (c->close) {
        /* the worker_shutdown_timeout: say so, once, and go */
        sft_log_error(SFT_LOG_INFO, c->log, 0,
                      "closing ftp session on shutdown");
        sft_ftp_close_saying(s, "Server shutting down.");
        return;
    }

    if (ev->timedout) {
        ev->timedout = 0;

        if (ev->write) {
            sft_log_error(SFT_LOG_INFO, c->log, 0,
                          "client timed out reading replies");
            sft_ftp_close_session(s);
            return;
        }

        if (s->logged_in) {
            sft_log_error(SFT_LOG_INFO, c->log, 0, "idle timeout");
            sft_ftp_reply(s, 421, "Timeout, closing control connection.");

        } else {
            sft_log_error(SFT_LOG_INFO, c->log, 0, "login timeout");
            sft_ftp_reply(s, 421, "Login timeout, closing control "
                                  "connection.");
        }

        s->quit = 1;
    }

    sft_ftp_run(s);
}


/* the last reply, sent as far as the socket takes it, and the close */

static void
sft_ftp_close_saying(sft_ftp_session_t *s, const char *text)
{
    sft_connection_t  *c;

    c = s->connection;

    sft_ftp_reply(s, 421, "%s", text);

    if (c->ssl == NULL || c->ssl->handshaked) {
        (void) c->send(c, s->out + s->out_pos, s->out_len - s->out_pos);
    }

    sft_ftp_close_session(s);
}


/* an administrator ended the session, through the API of any worker */

static void
sft_ftp_end(sft_session_t *session, const char *by)
{
    sft_ftp_session_t  *s = session->data;

    sft_log_error(SFT_LOG_NOTICE, s->log, 0,
                  "ftp session ended by the admin API, token \"%s\"", by);
    sft_ftp_close_saying(s, "Session ended by the administrator.");
}


/* a command completed later: go on reading, flush replies */

void
sft_ftp_resume(sft_ftp_session_t *s)
{
    if (s->closed) {
        return;
    }

    sft_post_event(s->connection->read);
}


static void
sft_ftp_run(sft_ftp_session_t *s)
{
    size_t             left;
    ssize_t            n;
    sft_int_t          rc;
    sft_connection_t  *c;

    c = s->connection;

    for ( ;; ) {

        if (s->out_pos < s->out_len) {
            n = c->send(c, s->out + s->out_pos, s->out_len - s->out_pos);

            if (n == SFT_AGAIN) {
                sft_add_timer(c->write, s->conf->idle_timeout);
                return;
            }

            if (n == SFT_ERROR) {
                sft_ftp_close_session(s);
                return;
            }

            s->out_pos += n;
            continue;
        }

        s->out_pos = 0;
        s->out_len = 0;
        sft_del_timer(c->write);

        if (s->quit) {
            sft_ftp_lingering_close(s);
            return;
        }

        if (s->tls_start) {
            sft_ftp_tls_start(s);
            return;
        }

        if (s->busy) {
            sft_ftp_busy_eof(s);
            return;
        }

        rc = sft_ftp_parse_command(s);

        if (rc != SFT_AGAIN) {
            sft_ftp_dispatch(s, rc);

            if (s->closed) {
                return;
            }

            if (s->pos == s->next || s->busy || s->quit
                || s->out_len)
            {
                continue;
            }

            /* a command that waits for the transfer to end */
            goto wait;
        }

        if (s->pos != s->start) {
            left = s->last - s->pos;
            memmove(s->start, s->pos, left);
            s->pos = s->start;
            s->last = s->start + left;
        }

        if (s->last == s->end) {
            sft_log_error(SFT_LOG_INFO, c->log, 0,
                          "client sent too long command line");
            sft_ftp_reply(s, 500, "Command line too long.");
            s->quit = 1;
            continue;
        }

        if (!c->read->ready) {
            goto wait;
        }

        n = c->recv(c, s->last, s->end - s->last);

        if (n == SFT_AGAIN) {
            goto wait;
        }

        if (n == 0 || n == SFT_ERROR) {
            sft_log_error(SFT_LOG_INFO, c->log, 0,
                          "client closed control connection");
            sft_ftp_close_session(s);
            return;
        }

        s->last += n;
        continue;

    wait:

        if (!s->logged_in) {
            if (!c->read->timer_set) {
                sft_add_timer(c->read, s->conf->login_timeout);
            }

        } else if (s->transfer) {
            sft_del_timer(c->read);

        } else {
            sft_add_timer(c->read, s->conf->idle_timeout);
        }

        return;
    }
}


/*
 * A command is completing (a HASH of a large file takes minutes): the
 * commands after it wait in the socket, but a client that has gone (its
 * end, with nothing unread before it) closes the session at once, which
 * cancels the work done for it.
 */

static void
sft_ftp_busy_eof(sft_ftp_session_t *s)
{
    u_char             ch;
    sft_connection_t  *c;

    c = s->connection;

    if (!c->read->ready || recv(c->fd, &ch, 1, MSG_PEEK|MSG_DONTWAIT) != 0) {
        return;
    }

    sft_log_error(SFT_LOG_INFO, c->log, 0,
                  "client closed control connection");
    sft_ftp_close_session(s);
}


static void
sft_ftp_dispatch(sft_ftp_session_t *s, sft_int_t rc)
{
    sft_ftp_command_t  *cmd;

    if (s->op_pool) {
        sft_destroy_pool(s->op_pool);
        s->op_pool = NULL;
    }

    cmd = NULL;

    if (rc == SFT_OK) {
        cmd = sft_ftp_find_command(&s->verb);
    }

    if (cmd && s->transfer && !(cmd->flags & SFT_FTP_IN_TRANSFER)) {
        /* RFC 959: the next command waits for the transfer to end */
        return;
    }

    s->pos = s->next;

    if (s->rnfr && (cmd == NULL || !(cmd->flags & SFT_FTP_AFTER_RNFR))) {
        s->rnfr[0] = '\0';     /* any other line cancels an RNFR */
    }

    if (rc == SFT_FTP_PARSE_NUL) {
        sft_log_error(SFT_LOG_INFO, s->log, 0, "client sent NUL in command");
        sft_ftp_reply(s, 500, "NUL in command refused.");
        goto error;
    }

    if (rc != SFT_OK) {
        sft_ftp_reply(s, 500, "Syntax error, command unrecognized.");
        goto error;
    }

    if (cmd == NULL) {
        sft_ftp_reply(s, 500, "Unknown command.");
        goto error;
    }

    s->command = cmd;

    if (!s->logged_in && !(cmd->flags & SFT_FTP_PRELOGIN)) {
        sft_ftp_reply(s, 530, "Please login with USER and PASS.");
        goto error;
    }

    if (cmd->flags & SFT_FTP_NOT_IMPL) {
        sft_ftp_reply(s, 502, "Command not implemented.");
        return;
    }

    if (((cmd->flags & SFT_FTP_ARG_NEED) && s->arg.len == 0)
        || ((cmd->flags & SFT_FTP_ARG_NONE) && s->arg.len != 0))
    {
        sft_ftp_reply(s, 501, "Syntax error in parameters or arguments.");
        goto error;
    }

    if (cmd->handler(s) == SFT_ERROR) {
        sft_ftp_reply(s, 451, "Requested action aborted: local error.");
    }

    s->broke = 0;

    return;

error:

    if (++s->errors >= s->conf->max_errors) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "client sent too many invalid commands");
        sft_ftp_reply(s, 421, "Too many invalid commands.");
        s->quit = 1;
    }
}


/*
 * TLS on the control connection: after "234" of AUTH (explicit) or at
 * once (implicit); the login timer, or the idle one, bounds the handshake
 */

static void
sft_ftp_tls_start(sft_ftp_session_t *s)
{
    sft_int_t          rc;
    sft_connection_t  *c;

    c = s->connection;
    s->tls_start = 0;

    if (sft_ssl_create_connection(&s->conf->tls, c, SFT_SSL_SERVER)
        != SFT_OK)
    {
        sft_ftp_close_session(s);
        return;
    }

    c->ssl->handler = sft_ftp_tls_handshaked;

    if (!c->read->timer_set) {
        sft_add_timer(c->read, s->logged_in ? s->conf->idle_timeout
                                            : s->conf->login_timeout);
    }

    rc = sft_ssl_handshake(c);

    if (rc == SFT_AGAIN) {
        return;
    }

    sft_ftp_tls_handshaked(c);
}


static void
sft_ftp_tls_handshaked(sft_connection_t *c)
{
    sft_ftp_session_t  *s;

    s = c->data;

    if (c->read->timedout || c->write->timedout) {
        sft_log_error(SFT_LOG_INFO, c->log, 0, "TLS handshake timed out");
        sft_ftp_close_session(s);
        return;
    }

    if (!c->ssl->handshaked) {
        sft_ftp_close_session(s);
        return;
    }

    sft_log_error(SFT_LOG_INFO, c->log, 0, "ftp control TLS: %s, %s",
                  sft_ssl_protocol(c), sft_ssl_cipher(c));

    c->read->handler = sft_ftp_control_handler;
    c->write->handler = sft_ftp_control_handler;

    s->tls = 1;
    s->busy = 0;
    s->pbsz = 0;
    sft_session_set_protocol(&s->session, SFT_SESSION_FTPS);

    /* RFC 4217: data is clear until PROT P, except for implicit FTPS */
    s->prot_p = s->implicit;

    if (s->implicit) {
        sft_ftp_greet(s);
        return;
    }

    sft_ftp_run(s);
}


/* AUTH TLS (RFC 4217), AUTH SSL as its legacy alias */

sft_int_t
sft_ftp_auth(sft_ftp_session_t *s)
{
    if (s->conf->tls_login == SFT_FTP_TLS_OFF) {
        sft_ftp_reply(s, 502, "TLS is not configured.");
        return SFT_OK;
    }

    if (s->tls) {
        sft_ftp_reply(s, 503, "Already using TLS.");
        return SFT_OK;
    }

    if (!sft_str_caseeq(&s->arg, "TLS") && !sft_str_caseeq(&s->arg, "TLS-C")
        && !sft_str_caseeq(&s->arg, "SSL"))
    {
        sft_ftp_reply(s, 504, "AUTH type not supported, use AUTH TLS.");
        return SFT_OK;
    }

    if (s->next != s->last) {
        /* pipelined behind AUTH in clear: never run as if protected */
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "client sent data after AUTH, discarded");
        s->next = s->last;
        s->pos = s->last;
    }

    sft_ftp_reply(s, 234, "AUTH %.*s successful.", SFT_STR_FMT(&s->arg));

    /* the handshake starts once "234" has gone out */
    s->tls_start = 1;
    s->busy = 1;

    return SFT_OK;
}


/* tls_login required: no USER or PASS before AUTH TLS */

sft_int_t
sft_ftp_login_allowed(sft_ftp_session_t *s)
{
    if (s->tls || s->conf->tls_login != SFT_FTP_TLS_REQUIRED) {
        return 1;
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0,
                  "login before AUTH TLS refused (tls_login required)");
    sft_ftp_reply(s, 530, "Policy requires SSL: use AUTH TLS first.");

    return 0;
}


/* replies */

void
sft_ftp_reply_raw(sft_ftp_session_t *s, u_char *text, size_t len)
{
    if (s->out_pos) {
        memmove(s->out, s->out + s->out_pos, s->out_len - s->out_pos);
        s->out_len -= s->out_pos;
        s->out_pos = 0;
    }

    if (len > SFT_FTP_REPLY_BUFFER - s->out_len) {
        /* the client reads no replies and keeps asking: drop it */
        sft_log_error(SFT_LOG_INFO, s->log, 0, "client does not read replies");
        s->quit = 1;
        return;
    }

    sft_memcpy(s->out + s->out_len, text, len);
    s->out_len += len;
}


void
sft_ftp_reply(sft_ftp_session_t *s, sft_uint_t code, const char *fmt, ...)
{
    u_char   *p, *last;
    va_list   args;
    u_char    buf[1024];

    last = buf + sizeof(buf) - 2;

    p = sft_slprintf(buf, last, "%lu ", (unsigned long) code);

    va_start(args, fmt);
    p = sft_vslprintf(p, last, fmt, args);
    va_end(args);

    *p++ = '\r';
    *p++ = '\n';

    sft_ftp_reply_raw(s, buf, p - buf);
}


void
sft_ftp_reply_storage_error(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    switch (r->err) {

    case SFT_STORAGE_NOT_FOUND:
        sft_ftp_reply(s, 550, "No such file or directory.");
        break;

    case SFT_STORAGE_PERMISSION:
        sft_ftp_reply(s, 550, "Permission denied.");
        break;

    case SFT_STORAGE_EXISTS:
        sft_ftp_reply(s, 550, "File exists.");
        break;

    case SFT_STORAGE_NOT_DIR:
        sft_ftp_reply(s, 550, "Not a directory.");
        break;

    case SFT_STORAGE_IS_DIR:
        sft_ftp_reply(s, 550, "Is a directory.");
        break;

    case SFT_STORAGE_NOT_EMPTY:
        sft_ftp_reply(s, 550, "Directory not empty.");
        break;

    case SFT_STORAGE_QUOTA:
        sft_ftp_reply(s, 552, "Quota exceeded.");
        break;

    case SFT_STORAGE_NO_SPACE:
        sft_ftp_reply(s, 452, "Insufficient storage space.");
        break;

    case SFT_STORAGE_NAME_INVALID:
        sft_ftp_reply(s, 553, "File name not allowed.");
        break;

    case SFT_STORAGE_INVALID:
        sft_ftp_reply(s, 501, "Invalid argument.");
        break;

    case SFT_STORAGE_BUSY:
        sft_ftp_reply(s, 450, "Resource busy, try again.");
        break;

    case SFT_STORAGE_UNSUPPORTED:
        if (r->why) {
            sft_ftp_reply(s, 550, "%s.", r->why);
            break;
        }

        sft_ftp_reply(s, 550, "%s is not supported by this storage.",
                      sft_storage_cap_text(s->vfs.missing));
        break;

    default:
        sft_ftp_reply(s, 451, "Local error: %s.",
                      r->why ? r->why : sft_storage_strerror(r->err));
        break;
    }
}


/*
 * A storage operation of a command: the caller has filled s->req through
 * a sft_vfs_*() call whose result is rc; next runs now or on completion.
 */

sft_int_t
sft_ftp_storage_op(sft_ftp_session_t *s, sft_ftp_next_pt next)
{
    s->op_next = next;
    s->pending++;
    s->busy = 1;

    return SFT_AGAIN;
}


static void
sft_ftp_op_done(sft_storage_req_t *req)
{
    sft_ftp_session_t  *s = req->data;

    s->pending--;

    if (s->closed) {
        if (s->pending == 0) {
            sft_ftp_session_free(s);
        }
        return;
    }

    s->busy = 0;
    s->op_next(s, req);
    sft_ftp_resume(s);
}


/* a fresh request for a command's storage operation */

sft_storage_req_t *
sft_ftp_op_request(sft_ftp_session_t *s)
{
    if (s->op_pool == NULL) {
        s->op_pool = sft_create_pool(4096, s->log);
        if (s->op_pool == NULL) {
            return NULL;
        }
    }

    sft_memzero(&s->req, sizeof(sft_storage_req_t));
    s->req.pool = s->op_pool;
    s->req.handler = sft_ftp_op_done;
    s->req.data = s;

    return &s->req;
}


/* what to do with a sft_vfs_*() result */

sft_int_t
sft_ftp_op_result(sft_ftp_session_t *s, sft_int_t rc, sft_ftp_next_pt next)
{
    if (rc == SFT_AGAIN) {
        return sft_ftp_storage_op(s, next);
    }

    if (rc == SFT_OK) {
        s->req.err = SFT_STORAGE_OK;
    }

    next(s, &s->req);

    return SFT_OK;
}


/* login */

sft_int_t
sft_ftp_user_login(sft_ftp_session_t *s)
{
    size_t  len;

    if (s->logged_in) {
        sft_ftp_reply(s, 530, "Can't change to another user.");
        return SFT_OK;
    }

    if (!sft_ftp_login_allowed(s)) {
        return SFT_OK;
    }

    len = sft_min(s->arg.len, (size_t) SFT_USER_NAME_MAX + 1);

    if (s->user.data == NULL) {
        s->user.data = sft_pnalloc(s->pool, SFT_USER_NAME_MAX + 1);
        if (s->user.data == NULL) {
            return SFT_ERROR;
        }
    }

    /* a longer name fails at PASS like any unknown one */
    sft_memcpy(s->user.data, s->arg.data, len);
    s->user.len = len;

    switch (sft_ssl_client_user(s->connection, &s->conf->ssl, &s->user,
                                s->log))
    {
    case SFT_SSL_CLIENT_REFUSED:
        s->user.len = 0;
        sft_ftp_reply(s, 530, "Login incorrect.");
        return SFT_OK;

    case SFT_SSL_CLIENT_LOGIN:
        sft_ftp_certificate_login(s);
        return SFT_OK;

    default: /* SFT_SSL_CLIENT_PASSWORD */
        break;
    }

    sft_ftp_reply(s, 331, "Please specify the password.");

    return SFT_OK;
}


/* "ssl_client_login certificate": the user its certificate names */

static void
sft_ftp_certificate_login(sft_ftp_session_t *s)
{
    sft_user_t          *u;
    sft_auth_request_t  *ar;

    ar = &s->auth;
    sft_memzero(ar, sizeof(sft_auth_request_t));
    ar->result = SFT_AUTH_BAD;

    u = sft_users_lookup(&s->user, s->log);

    if (u != NULL && !u->disabled
        && sft_user_allowed_from(u,
                             (struct sockaddr *) &s->connection->sockaddr))
    {
        ar->result = SFT_AUTH_OK;
        ar->account = sft_user_acquire(u);

        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "user \"%.*s\" logs in with a client certificate",
                      SFT_STR_FMT(&s->user));
    }

    s->busy = 1;
    sft_ftp_auth_result(s);
}


sft_int_t
sft_ftp_user_password(sft_ftp_session_t *s)
{
    sft_int_t            rc;
    sft_auth_request_t  *ar;

    if (s->logged_in) {
        sft_ftp_reply(s, 230, "Already logged in.");
        return SFT_OK;
    }

    if (!sft_ftp_login_allowed(s)) {
        sft_explicit_memzero(s->arg.data, s->arg.len);
        return SFT_OK;
    }

    if (s->user.len == 0) {
        sft_ftp_reply(s, 503, "Login with USER first.");
        return SFT_OK;
    }

    ar = &s->auth;
    sft_memzero(ar, sizeof(sft_auth_request_t));

    ar->user = s->user;
    ar->sockaddr = (struct sockaddr *) &s->connection->sockaddr;
    ar->log = s->log;
    ar->handler = sft_ftp_auth_done;
    ar->data = s;

    if (s->arg.len < sizeof(s->password)) {
        sft_memcpy(s->password, s->arg.data, s->arg.len);
        ar->password.data = s->password;
        ar->password.len = s->arg.len;

    } else {
        /* longer than any password: refused by the check, slowly */
        ar->password.data = s->arg.data;
        ar->password.len = s->arg.len;
    }

    rc = sft_auth_password(ar);

    sft_explicit_memzero(s->password, sizeof(s->password));
    sft_explicit_memzero(s->arg.data, s->arg.len);

    if (rc == SFT_ERROR) {
        sft_ftp_reply(s, 421, "Service not available.");
        s->quit = 1;
        return SFT_OK;
    }

    s->busy = 1;

    if (rc == SFT_AGAIN) {
        return SFT_OK;
    }

    sft_ftp_auth_result(s);

    return SFT_OK;
}


static void
sft_ftp_auth_done(sft_auth_request_t *ar)
{
    sft_ftp_session_t  *s = ar->data;

    ar->job = NULL;

    sft_ftp_auth_result(s);
    sft_ftp_resume(s);
}


static void
sft_ftp_auth_result(sft_ftp_session_t *s)
{
    sft_int_t            rc;
    sft_msec_t           delay;
    sft_connection_t    *c;
    sft_auth_request_t  *ar;

    ar = &s->auth;
    c = s->connection;

    if (ar->result == SFT_AUTH_OK) {
        s->account = ar->account;
        ar->account = NULL;

        rc = sft_ftp_setup_vfs(s);

        if (rc != SFT_OK) {
            sft_user_release(s->account);
            s->account = NULL;
            s->vfs.account = NULL;
            s->busy = 0;

            if (rc == SFT_DECLINED) {
                sft_ftp_reply(s, 530, "Too many sessions for this user.");

            } else {
                sft_ftp_reply(s, 530, "Login incorrect.");
            }

            return;
        }

        s->busy = 0;
        s->logged_in = 1;
        s->errors = 0;
        sft_session_set_user(&s->session, &s->user);
        s->end = s->start + SFT_FTP_COMMAND_BUFFER;
        sft_del_timer(c->read);

        sft_log_error(SFT_LOG_INFO, s->log, 0, "ftp login%s",
                      ar->cached ? " (cached)" : "");

        sft_ftp_reply(s, 230, "Login successful.");
        return;
    }

    if (ar->result == SFT_AUTH_BANNED) {
        s->busy = 0;
        sft_ftp_reply(s, 421, SFT_AUTH_BANNED_REPLY);
        s->quit = 1;
        return;
    }

    if (ar->result == SFT_AUTH_BUSY) {
        s->busy = 0;
        sft_ftp_reply(s, 421, "Service busy, try again later.");
        s->quit = 1;
        return;
    }

    if (ar->result == SFT_AUTH_UNAVAILABLE) {
        s->busy = 0;
        sft_ftp_reply(s, 421, "User database unavailable, try again later.");
        s->quit = 1;
        return;
    }

    /* wrong user or password: the same reply, after a delay */

    s->login_failures++;

    sft_log_error(SFT_LOG_INFO, s->log, 0, "ftp login failed for \"%.*s\"",
                  SFT_STR_FMT(&s->user));

    delay = sft_auth_failure_delay(s->login_failures);

    if (delay == 0) {
        delay = 1;
    }

    sft_add_timer(&s->delay, delay);
}


static void
sft_ftp_delay_handler(sft_event_t *ev)
{
    sft_ftp_session_t  *s = ev->data;

    ev->timedout = 0;
    s->busy = 0;

    sft_ftp_reply(s, 530, "Login incorrect.");

    if (s->login_failures >= s->conf->max_login_failures) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "too many login failures, closing");
        s->quit = 1;
    }

    sft_ftp_resume(s);
}


/* SFT_DECLINED: the user's max_sessions are open already */

static sft_int_t
sft_ftp_setup_vfs(sft_ftp_session_t *s)
{
    if (sft_vfs_session_for_user(&s->vfs, s->account, s->conf->storage,
                                 s->pool, &s->rules_alloc, &s->nrules_alloc,
                                 s->log)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    return sft_vfs_user_open(&s->vfs);
}


/* REIN: the account goes, the session waits for USER and PASS again */

void
sft_ftp_logout(sft_ftp_session_t *s)
{
    sft_vfs_user_close(&s->vfs);

    if (s->account) {
        sft_log_error(SFT_LOG_INFO, s->log, 0, "ftp logout (REIN)");
        sft_user_release(s->account);
        s->account = NULL;
        s->vfs.account = NULL;
    }

    s->logged_in = 0;
}



/* closing */

static void
sft_ftp_lingering_close(sft_ftp_session_t *s)
{
    sft_connection_t  *c;

    c = s->connection;

    if (c->ssl) {
        if (!c->ssl->handshaked) {
            sft_ftp_close_session(s);
            return;
        }

        /* close_notify, and the peer's (or its unread data) for a while */

        c->ssl->handler = sft_ftp_tls_closed;
        sft_del_timer(c->write);
        sft_del_timer(c->read);

        if (sft_ssl_shutdown(c) == SFT_AGAIN) {
            sft_add_timer(c->read, SFT_FTP_LINGERING_TIME);
            return;
        }

        sft_ftp_close_session(s);
        return;
    }

    if (s->last == s->pos && !c->read->ready) {
        sft_ftp_close_session(s);
        return;
    }

    /* unread input: closing now would reset the last reply */

    if (shutdown(c->fd, SHUT_WR) == -1) {
        sft_ftp_close_session(s);
        return;
    }

    c->read->handler = sft_ftp_lingering_handler;
    c->write->handler = sft_ftp_lingering_handler;
    sft_del_timer(c->write);
    sft_add_timer(c->read, SFT_FTP_LINGERING_TIME);

    sft_ftp_lingering_handler(c->read);
}


static void
sft_ftp_tls_closed(sft_connection_t *c)
{
    sft_ftp_close_session(c->data);
}


static void
sft_ftp_lingering_handler(sft_event_t *ev)
{
    ssize_t             n;
    sft_uint_t          i;
    u_char              buf[4096];
    sft_connection_t   *c;
    sft_ftp_session_t  *s;

    c = ev->data;
    s = c->data;

    if (ev->timedout || c->close) {
        sft_ftp_close_session(s);
        return;
    }

    if (ev->write) {
        return;
    }

    for (i = 0; i < 16; i++) {
        n = c->recv(c, buf, sizeof(buf));

        if (n == SFT_AGAIN) {
            return;
        }

        if (n <= 0) {
            break;
        }
    }

    sft_ftp_close_session(s);
}


void
sft_ftp_close_session(sft_ftp_session_t *s)
{
    sft_connection_t  *c;

    if (s->closed) {
        return;
    }

    s->closed = 1;
    atomic_store(&s->cancel, 1);
    sft_stat_sub(sft_ftp_stat_sessions, 1);
    sft_session_close(&s->session);
    c = s->connection;

    if (s->transfer) {
        sft_ftp_transfer_abort(s, 0);
    }

    sft_ftp_data_close(s);
    sft_vfs_user_close(&s->vfs);

    /* logged once the session no longer counts against max_sessions */

    sft_log_error(SFT_LOG_INFO, s->log, 0, "ftp session closed");

    if (s->auth.job) {
        sft_auth_cancel(&s->auth);
    }

    if (s->auth.account) {
        sft_user_release(s->auth.account);
        s->auth.account = NULL;
    }

    if (s->delay.timer_set) {
        sft_del_timer(&s->delay);
    }

    if (s->counted) {
        sft_auth_connection_close((struct sockaddr *) &c->sockaddr);
        s->counted = 0;
    }

    c->pool = NULL;
    sft_close_connection(c);

    if (s->pending == 0) {
        sft_ftp_session_free(s);
    }
}


void
sft_ftp_session_free(sft_ftp_session_t *s)
{
    if (s->transfer && s->transfer->pool) {
        sft_destroy_pool(s->transfer->pool);
        s->transfer = NULL;
    }

    if (s->op_pool) {
        sft_destroy_pool(s->op_pool);
        s->op_pool = NULL;
    }

    if (s->account) {
        sft_user_release(s->account);
        s->account = NULL;
    }

    s->connection = NULL;

    sft_destroy_pool(s->pool);
}

