/*
 * sft_sftp_session.c -- an SSH session on the worker's event loop: libssh
 * takes the accepted non-blocking socket, the key exchange and every later
 * step run from epoll events with one ssh_event per session, logins are
 * answered when the asynchronous password check completes, only the
 * "sftp" subsystem is served, and channel data flows through bounded
 * buffers in both directions.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp.h>
#include <sft_auth_stats.h>
#include <sys/ioctl.h>


#define SFT_SFTP_DOPOLLS  64       /* per wake-up, for fairness */
#define SFT_SFTP_LINGER   1000     /* ms idle before a shutdown closes */


static void sft_sftp_handler(sft_event_t *ev);
static void sft_sftp_run(sft_sftp_session_t *s);
static sft_int_t sft_sftp_messages(sft_sftp_session_t *s);
static sft_int_t sft_sftp_message(sft_sftp_session_t *s, ssh_message msg);
static sft_int_t sft_sftp_auth(sft_sftp_session_t *s, ssh_message msg);
static sft_int_t sft_sftp_auth_pubkey(sft_sftp_session_t *s,
    ssh_message msg);
static sft_int_t sft_sftp_auth_password(sft_sftp_session_t *s,
    ssh_message msg);
static void sft_sftp_auth_done(sft_auth_request_t *ar);
static void sft_sftp_auth_result(sft_sftp_session_t *s);
static void sft_sftp_delay_handler(sft_event_t *ev);
static sft_int_t sft_sftp_login(sft_sftp_session_t *s);
static int sft_sftp_channel_data(ssh_session session, ssh_channel channel,
    void *data, uint32_t len, int is_stderr, void *userdata);
static void sft_sftp_channel_eof(ssh_session session, ssh_channel channel,
    void *userdata);
static sft_int_t sft_sftp_open_channel(sft_sftp_session_t *s,
    ssh_message msg);
static sft_int_t sft_sftp_pump_channels(sft_sftp_session_t *s);
static sft_uint_t sft_sftp_idle(sft_sftp_session_t *s);
static sft_int_t sft_sftp_pump(sft_sftp_session_t *s);
static sft_int_t sft_sftp_pull(sft_sftp_session_t *s);
static sft_int_t sft_sftp_flush(sft_sftp_session_t *s);
static void sft_sftp_channel_end(sft_sftp_session_t *s);
static void sft_sftp_channel_close(sft_sftp_session_t *s);
static void sft_sftp_close(sft_sftp_session_t *s);
static void sft_sftp_free(sft_sftp_session_t *s);
static void sft_sftp_end(sft_session_t *session, const char *by);
static sft_int_t sft_sftp_import_key(u_char *p, u_char *last,
    enum ssh_keytypes_e type, ssh_key *key);


static sft_str_t  sft_sftp_default_pool = sft_string("default");


void
sft_sftp_init_connection(sft_connection_t *c)
{
    int                   fd;
    sft_sftp_session_t   *s;
    sft_sftp_srv_conf_t  *conf;

    conf = sft_proto_get_module_srv_conf(c->listening->servers,
                                         sft_sftp_core_module);

    s = sft_pcalloc(c->pool, sizeof(sft_sftp_session_t));
    if (s == NULL || conf->bind == NULL) {
        goto failed;
    }

    s->main = s;
    s->connection = c;
    s->pool = c->pool;
    s->log = c->log;
    s->conf = conf;
    s->user.data = s->user_data;

    sft_stat_add(sft_sftp_stat_sessions, 1);

    s->delay.handler = sft_sftp_delay_handler;
    s->delay.data = s;
    s->delay.log = c->log;

    s->thread_pool = sft_thread_pool_get((sft_cycle_t *) sft_cycle,
                                         &sft_sftp_default_pool);

    c->data = s;
    sft_peer_init(&s->peer, c, &s->user);

    c->read->handler = sft_sftp_handler;
    c->write->handler = sft_sftp_handler;

    sft_log_error(SFT_LOG_INFO, c->log, 0, "sftp session started");

    /*
     * a banned client is told why in an SSH disconnect message, which it
     * shows: after the key exchange, at its first request, so that the
     * close finds nothing unread and does not reset the connection
     */

    if (sft_auth_banned((struct sockaddr *) &c->sockaddr)) {
        sft_log_error(SFT_LOG_INFO, c->log, 0, "address is banned");
        s->banned = 1;
    }

    if (sft_auth_connection_open((struct sockaddr *) &c->sockaddr)
        != SFT_OK)
    {
        sft_log_error(SFT_LOG_INFO, c->log, 0,
                      "too many connections from the address");
        goto failed;
    }

    s->counted = 1;

    if (!s->banned) {
        sft_session_open(&s->session, SFT_SESSION_SFTP, c, sft_sftp_end, s);
    }

    /*
     * libssh closes the socket it is given in ssh_free(): it gets a
     * duplicate, and ours stays in epoll until it is closed last
     */

    fd = dup(c->fd);
    if (fd == -1) {
        sft_log_error(SFT_LOG_ERR, c->log, errno, "dup() failed");
        goto failed;
    }

    s->ssh = ssh_new();
    if (s->ssh == NULL) {
        close(fd);
        goto failed;
    }

    if (ssh_bind_accept_fd(conf->bind, s->ssh, fd) != SSH_OK) {
        sft_log_error(SFT_LOG_ERR, c->log, 0, "ssh_bind_accept_fd() failed: %s",
                      ssh_get_error(conf->bind));
        close(fd);
        goto failed;
    }

    ssh_set_blocking(s->ssh, 0);
    ssh_set_auth_methods(s->ssh,
                         SSH_AUTH_METHOD_PASSWORD|SSH_AUTH_METHOD_PUBLICKEY);

    sft_add_timer(c->read, conf->login_grace_time);

    sft_sftp_run(s);
    return;

failed:

    if (s) {
        sft_sftp_close(s);
        return;
    }

    sft_destroy_pool(c->pool);
    c->pool = NULL;
    sft_close_connection(c);
}


static void
sft_sftp_handler(sft_event_t *ev)
{
    sft_connection_t    *c;
    sft_sftp_session_t  *s;

    c = ev->data;
    s = c->data;

    if (c->close && (c->error || !s->logged_in
                     || sft_current_msec - s->active >= SFT_SFTP_LINGER))
    {
        sft_log_error(SFT_LOG_INFO, c->log, 0,
                      "closing sftp session on shutdown");
        sft_sftp_close(s);
        return;
    }

    if (ev->timedout && ev->write) {
        /* the linger on shutdown is over: sft_sftp_run() closes */
        ev->timedout = 0;
    }

    if (ev->timedout) {
        ev->timedout = 0;

        if (s->logged_in
            && sft_current_msec - s->active < s->conf->idle_timeout)
        {
            /* the timer is set once: activity since moves it on */
            sft_add_timer(c->read,
                          s->conf->idle_timeout
                          - (sft_current_msec - s->active));
            return;
        }
        sft_log_error(SFT_LOG_INFO, c->log, 0, "%s",
                      s->logged_in ? "idle timeout" : "login grace time over");
        sft_sftp_close(s);
        return;
    }

    sft_sftp_run(s);
}


/* a storage operation or a password check completed: go on later */

void
sft_sftp_resume(sft_sftp_session_t *s)
{
    if (s->closed) {
        return;
    }

    sft_post_event(s->connection->read);
}


static void
sft_sftp_run(sft_sftp_session_t *s)
{
    int                rc;
    sft_uint_t         i;
    sft_connection_t  *c;

    if (s->running) {
        s->again = 1;
        return;
    }

    s->running = 1;
    c = s->connection;

    do {
        s->again = 0;

        if (!s->kex_done) {
            rc = ssh_handle_key_exchange(s->ssh);

            if (rc == SSH_AGAIN) {
                break;
            }

            if (rc != SSH_OK) {
                sft_log_error(SFT_LOG_INFO, c->log, 0,
                              "ssh key exchange failed: %s",
                              ssh_get_error(s->ssh));
                goto close;
            }

            s->kex_done = 1;

            s->event = ssh_event_new();
            if (s->event == NULL
                || ssh_event_add_session(s->event, s->ssh) != SSH_OK)
            {
                goto close;
            }
        }

        /*
         * libssh reads 4k per poll, and every call that may write also
         * polls: loop until a poll finds nothing and nothing more was
         * handed to libssh, whose output is only sent on a later poll;
         * an edge-triggered fd would not report it again
         */

        for (i = 0; i < SFT_SFTP_DOPOLLS; i++) {
            s->progress = 0;

            rc = ssh_event_dopoll(s->event, 0);

            if (rc == SSH_ERROR) {
                goto gone;
            }

            if (sft_sftp_messages(s) != SFT_OK
                || sft_sftp_pump_channels(s) != SFT_OK)
            {
                goto close;
            }

            if (s->progress) {
                s->active = sft_current_msec;
            }

            if (rc == SSH_AGAIN && !s->progress) {
                break;
            }
        }

        if (i == SFT_SFTP_DOPOLLS) {
            s->again = 1;
        }

        if (!ssh_is_connected(s->ssh)) {
            goto gone;
        }

    } while (s->again && !s->closed && i < SFT_SFTP_DOPOLLS);

    s->running = 0;

    if (s->again) {
        /* more to read or to write: after the other connections */
        sft_post_event(c->read);
        return;
    }

    /* edge-triggered: libssh reads 4k at a time, do not leave any */

    if (ioctl(c->fd, FIONREAD, &rc) == 0 && rc > 0) {
        sft_post_event(c->read);
        return;
    }

    /*
     * nothing in flight, nothing open, everything sent: a graceful stop
     * may close the session, as it closes an idle keep-alive connection
     */

    c->idle = (sft_sftp_idle(s)
               && s->auth.job == NULL && s->auth_msg == NULL
               && !(ssh_get_poll_flags(s->ssh) & SSH_WRITE_PENDING));

    if (!c->idle || !sft_exiting) {
        if (c->write->timer_set) {
            sft_del_timer(c->write);
        }

        return;
    }

    /*
     * OpenSSH's ssh exits on a disconnect without passing on what it
     * has read: a reply just sent could be lost, so a session idle only
     * since now gets a moment for the client's next request or its EOF
     */

    if (s->logged_in && sft_current_msec - s->active < SFT_SFTP_LINGER) {
        if (!c->write->timer_set) {
            sft_add_timer(c->write,
                          SFT_SFTP_LINGER - (sft_current_msec - s->active));
        }

        return;
    }

    sft_log_error(SFT_LOG_INFO, c->log, 0, "closing sftp session on shutdown");
    sft_sftp_close(s);

    return;

gone:

    sft_log_error(SFT_LOG_INFO, c->log, 0, "client disconnected: %s",
                  ssh_get_error(s->ssh));

close:

    s->running = 0;
    sft_sftp_close(s);
}


/* the requests libssh queued: service, auth, channel open and requests */

static sft_int_t
sft_sftp_messages(sft_sftp_session_t *s)
{
    sft_int_t    rc;
    ssh_message  msg;

    while (!s->closed && s->auth_msg == NULL && !s->delay.timer_set) {

        msg = ssh_message_get(s->ssh);
        if (msg == NULL) {
            break;
        }

        s->progress = 1;

        rc = sft_sftp_message(s, msg);

        if (msg != s->auth_msg) {
            ssh_message_free(msg);
        }

        if (rc != SFT_OK) {
            return rc;
        }
    }

    return SFT_OK;
}


static sft_int_t
sft_sftp_message(sft_sftp_session_t *s, ssh_message msg)
{
    int                  type, subtype;
    const char          *name;
    ssh_channel          ch;
    sft_sftp_session_t  *cs;

    if (s->banned) {
        return SFT_DECLINED;           /* closed with the reason */
    }

    type = ssh_message_type(msg);
    subtype = ssh_message_subtype(msg);

    switch (type) {

    case SSH_REQUEST_SERVICE:
        name = ssh_message_service_service(msg);

        if (name && strcmp(name, "ssh-userauth") == 0) {
            ssh_message_service_reply_success(msg);
            return SFT_OK;
        }

        break;

    case SSH_REQUEST_AUTH:
        return sft_sftp_auth(s, msg);

    case SSH_REQUEST_CHANNEL_OPEN:
        if (!s->logged_in || subtype != SSH_CHANNEL_SESSION) {
            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "channel of type %d refused", subtype);
            break;
        }

        if (s->nchannels >= s->conf->max_channels) {
            sft_log_error(SFT_LOG_INFO, s->log, 0,
                          "channel refused: max_channels (%lu) open",
                          (unsigned long) s->conf->max_channels);
            break;
        }

        return sft_sftp_open_channel(s, msg);

    case SSH_REQUEST_CHANNEL:
        ch = ssh_message_channel_request_channel(msg);

        for (cs = s->channels; cs && cs->channel != ch; cs = cs->next) {
            /* void */
        }

        if (subtype == SSH_CHANNEL_REQUEST_SUBSYSTEM
            && cs && !cs->sftp
            && strcmp(ssh_message_channel_request_subsystem(msg), "sftp")
               == 0)
        {
            cs->in = sft_pnalloc(cs->pool, SFT_SFTP_IN_SIZE);
            if (cs->in == NULL) {
                return SFT_ERROR;
            }

            cs->sftp = 1;
            ssh_message_channel_request_reply_success(msg);

            sft_log_error(SFT_LOG_INFO, s->log, 0, "sftp subsystem started");
            return SFT_OK;
        }

        if (subtype == SSH_CHANNEL_REQUEST_ENV) {
            break;
        }

        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "channel request %d refused", subtype);
        break;

    default:
        break;
    }

    ssh_message_reply_default(msg);

    return SFT_OK;
}


/* authentication */

static sft_int_t
sft_sftp_auth(sft_sftp_session_t *s, ssh_message msg)
{
    size_t       len;
    const char  *user;

    if (s->logged_in) {
        ssh_message_auth_reply_success(msg, 0);
        return SFT_OK;
    }

    user = ssh_message_auth_user(msg);
    len = user ? sft_strlen(user) : 0;

    /* a longer name fails like any unknown one */
    len = sft_min(len, (size_t) SFT_USER_NAME_MAX);
    sft_memcpy(s->user_data, user, len);
    s->user.len = len;

    switch (ssh_message_subtype(msg)) {

    case SSH_AUTH_METHOD_PUBLICKEY:
        return sft_sftp_auth_pubkey(s, msg);

    case SSH_AUTH_METHOD_PASSWORD:
        return sft_sftp_auth_password(s, msg);

    default:
        /* "none" and the rest: the list of methods, not a try */
        ssh_message_reply_default(msg);
        return SFT_OK;
    }
}


/* "AAAA... comment" of a user's ssh_key line, as a libssh key */

static sft_int_t
sft_sftp_import_key(u_char *p, u_char *last, enum ssh_keytypes_e type,
    ssh_key *key)
{
    u_char  *e;
    char     b64[8192];

    while (p < last && *p == ' ') {
        p++;
    }

    e = memchr(p, ' ', last - p);
    if (e == NULL) {
        e = last;
    }

    if (e == p || (size_t) (e - p) >= sizeof(b64)) {
        return SFT_ERROR;
    }

    sft_memcpy(b64, p, e - p);
    b64[e - p] = '\0';

    if (ssh_pki_import_pubkey_base64(b64, type, key) != SSH_OK) {
        return SFT_ERROR;
    }

    return SFT_OK;
}


#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/*
 * The queued-message interface is the only one of libssh 0.10 that lets a
 * reply wait; its getters are marked deprecated in favour of callbacks.
 */

static sft_int_t
sft_sftp_auth_pubkey(sft_sftp_session_t *s, ssh_message msg)
{
    int                     state;
    u_char                 *sp;
    char                    type[64];
    ssh_key                 key, known;
    sft_str_t              *k;
    sft_uint_t              i, found;
    sft_user_t             *u;
    enum ssh_keytypes_e     kt;

    key = ssh_message_auth_pubkey(msg);
    state = ssh_message_auth_publickey_state(msg);

    found = 0;
    u = sft_users_lookup(&s->user, s->log);

    if (key && u && !u->disabled
        && sft_user_allowed_from(u,
                             (struct sockaddr *) &s->connection->sockaddr))
    {
        k = u->ssh_keys.elts;

        for (i = 0; !found && i < u->ssh_keys.nelts; i++) {
            /* "ssh-ed25519 AAAA... comment" */
            sp = memchr(k[i].data, ' ', k[i].len);
            if (sp == NULL || (size_t) (sp - k[i].data) >= sizeof(type)) {
                continue;
            }

            sft_memcpy(type, k[i].data, sp - k[i].data);
            type[sp - k[i].data] = '\0';

            kt = ssh_key_type_from_name(type);
            if (kt == SSH_KEYTYPE_UNKNOWN) {
                continue;
            }

            if (sft_sftp_import_key(sp + 1, k[i].data + k[i].len, kt, &known)
                != SFT_OK)
            {
                continue;
            }

            if (ssh_key_cmp(key, known, SSH_KEY_CMP_PUBLIC) == 0) {
                found = 1;
            }

            ssh_key_free(known);
        }
    }

    if (!found) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "sftp public key refused for \"%.*s\"",
                      SFT_STR_FMT(&s->user));
        goto refused;
    }

    if (state == SSH_PUBLICKEY_STATE_NONE) {
        /* a probe: this key would do */
        ssh_message_auth_reply_pk_ok_simple(msg);
        return SFT_OK;
    }

    if (state != SSH_PUBLICKEY_STATE_VALID) {
        goto refused;
    }

    s->account = sft_user_acquire(u);

    if (sft_sftp_login(s) != SFT_OK) {
        goto refused;
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0, "sftp login (publickey)");
    ssh_message_auth_reply_success(msg, 0);

    return SFT_OK;

refused:

    if (state != SSH_PUBLICKEY_STATE_NONE) {
        sft_stat_add(sft_auth_stat_login_failures, 1);
    }

    if (state != SSH_PUBLICKEY_STATE_NONE
        && ++s->auth_tries >= s->conf->max_auth_tries)
    {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "too many authentication failures");
        return SFT_ERROR;
    }

    ssh_message_reply_default(msg);
    return SFT_OK;
}


static sft_int_t
sft_sftp_auth_password(sft_sftp_session_t *s, ssh_message msg)
{
    size_t               len;
    sft_int_t            rc;
    const char          *pw;
    sft_auth_request_t  *ar;

    pw = ssh_message_auth_password(msg);
    len = pw ? sft_strlen(pw) : 0;

    ar = &s->auth;
    sft_memzero(ar, sizeof(sft_auth_request_t));

    ar->user = s->user;
    ar->sockaddr = (struct sockaddr *) &s->connection->sockaddr;
    ar->log = s->log;
    ar->handler = sft_sftp_auth_done;
    ar->data = s;

    /* longer than any password: refused by the check, as slowly */
    len = sft_min(len, sizeof(s->password));
    sft_memcpy(s->password, pw, len);
    ar->password.data = s->password;
    ar->password.len = len;

    s->auth_msg = msg;

    rc = sft_auth_password(ar);

    sft_explicit_memzero(s->password, sizeof(s->password));

    if (rc == SFT_ERROR) {
        s->auth_msg = NULL;
        return SFT_ERROR;
    }

    if (rc == SFT_AGAIN) {
        /* the message waits for the check; the result frees it */
        s->auth_deferred = 1;
        return SFT_OK;
    }

    /* answered at once (the cache, a ban): the caller still owns msg */
    sft_sftp_auth_result(s);

    return SFT_OK;
}

#pragma GCC diagnostic pop


static void
sft_sftp_auth_done(sft_auth_request_t *ar)
{
    sft_sftp_session_t  *s = ar->data;

    ar->job = NULL;

    sft_sftp_auth_result(s);
    sft_sftp_resume(s);
}


static void
sft_sftp_auth_result(sft_sftp_session_t *s)
{
    sft_msec_t           delay;
    sft_auth_request_t  *ar;

    ar = &s->auth;

    if (ar->result == SFT_AUTH_OK) {
        s->account = ar->account;
        ar->account = NULL;

        if (sft_sftp_login(s) == SFT_OK) {
            sft_log_error(SFT_LOG_INFO, s->log, 0, "sftp login (password%s)",
                          ar->cached ? ", cached" : "");
            ssh_message_auth_reply_success(s->auth_msg, 0);

            if (s->auth_deferred) {
                ssh_message_free(s->auth_msg);
                s->auth_deferred = 0;
            }

            s->auth_msg = NULL;
            return;
        }
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0, "sftp login failed for \"%.*s\"",
                  SFT_STR_FMT(&s->user));

    s->auth_tries++;

    if (ar->result == SFT_AUTH_BANNED || ar->result == SFT_AUTH_BUSY) {
        s->auth_tries = s->conf->max_auth_tries;
        s->banned = (ar->result == SFT_AUTH_BANNED);
    }

    /* the refusal waits, as FTP's does */

    delay = sft_auth_failure_delay(s->auth_tries);
    sft_add_timer(&s->delay, delay ? delay : 1);
}


static void
sft_sftp_delay_handler(sft_event_t *ev)
{
    sft_sftp_session_t  *s = ev->data;

    ev->timedout = 0;

    if (s->auth_msg) {
        ssh_message_reply_default(s->auth_msg);
        ssh_message_free(s->auth_msg);
        s->auth_msg = NULL;
        s->auth_deferred = 0;
    }

    if (s->auth_tries >= s->conf->max_auth_tries) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "too many authentication failures");
        sft_sftp_close(s);
        return;
    }

    sft_sftp_resume(s);
}


/* the user is known: the virtual filesystem */

static sft_int_t
sft_sftp_login(sft_sftp_session_t *s)
{
    if (sft_vfs_session_for_user(&s->vfs, s->account, s->conf->storage,
                                 s->pool, NULL, NULL, s->log)
        != SFT_OK)
    {
        goto failed;
    }

    if (sft_vfs_user_open(&s->vfs) != SFT_OK) {
        goto failed;
    }

    s->logged_in = 1;
    s->auth_tries = 0;
    sft_session_set_user(&s->session, &s->user);

    sft_sftp_rate_init(s);

    sft_del_timer(s->connection->read);
    sft_add_timer(s->connection->read, s->conf->idle_timeout);

    return SFT_OK;

failed:

    sft_user_release(s->account);
    s->account = NULL;
    s->vfs.account = NULL;

    return SFT_ERROR;
}



/*
 * A session channel: its own SFTP state and pool, the login's user and a
 * copy of its VFS session (that one alone counts against max_sessions)
 */

static sft_int_t
sft_sftp_open_channel(sft_sftp_session_t *s, ssh_message msg)
{
    sft_pool_t          *pool;
    sft_sftp_session_t  *cs;

    pool = sft_create_pool(4096, s->log);
    if (pool == NULL) {
        return SFT_ERROR;
    }

    cs = sft_pcalloc(pool, sizeof(sft_sftp_session_t));
    if (cs == NULL) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    cs->channel = ssh_message_channel_request_open_reply_accept(msg);
    if (cs->channel == NULL) {
        sft_destroy_pool(pool);
        return SFT_ERROR;
    }

    cs->main = s;
    cs->connection = s->connection;
    cs->peer = s->peer;
    cs->pool = pool;
    cs->log = s->log;
    cs->conf = s->conf;
    cs->ssh = s->ssh;
    cs->user = s->user;
    cs->thread_pool = s->thread_pool;
    cs->vfs = s->vfs;
    cs->vfs.session_open = 0;
    cs->vfs.scan = NULL;
    cs->kex_done = 1;
    cs->logged_in = 1;

    /* a chunk of the buffer pool may be free: the connection runs again */
    cs->chunk_waiter.event = s->connection->read;

    cs->ccb.userdata = cs;
    cs->ccb.channel_data_function = sft_sftp_channel_data;
    cs->ccb.channel_eof_function = sft_sftp_channel_eof;
    ssh_callbacks_init(&cs->ccb);
    ssh_set_channel_callbacks(cs->channel, &cs->ccb);

    cs->next = s->channels;
    s->channels = cs;
    s->nchannels++;

    return SFT_OK;
}


/* each channel's requests and replies; a channel the client ended goes */

static sft_int_t
sft_sftp_pump_channels(sft_sftp_session_t *s)
{
    sft_sftp_session_t  *cs, *next;

    for (cs = s->channels; cs; cs = next) {
        next = cs->next;

        if (sft_sftp_pump(cs) != SFT_OK) {
            return SFT_ERROR;
        }

        if (cs->progress) {
            cs->progress = 0;
            s->progress = 1;
        }

        if (cs->eof || ssh_channel_is_closed(cs->channel)) {
            sft_sftp_channel_end(cs);
        }
    }

    return SFT_OK;
}


static sft_uint_t
sft_sftp_idle(sft_sftp_session_t *s)
{
    sft_sftp_session_t  *cs;

    for (cs = s->channels; cs; cs = cs->next) {
        if (cs->inflight || cs->pending || cs->nhandles
            || cs->out_pos != cs->out_len || cs->in_pos != cs->in_len)
        {
            return 0;
        }
    }

    return 1;
}


/*
 * Channel data: taken while the input buffer has room; what is left stays
 * in libssh, which then does not grow the client's window, and is pulled
 * by sft_sftp_pull() once requests have been handled.
 */

static int
sft_sftp_channel_data(ssh_session session, ssh_channel channel, void *data,
    uint32_t len, int is_stderr, void *userdata)
{
    size_t               room;
    sft_sftp_session_t  *s = userdata;

    (void) session;
    (void) channel;

    if (is_stderr || s->closed) {
        return len;
    }

    if (!s->sftp) {
        /*
         * the client sends INIT right behind the subsystem request, and
         * the request waits in libssh's queue until sft_sftp_messages():
         * the data stays in libssh for sft_sftp_pull()
         */
        return 0;
    }

    if (s->in_pos && s->in_pos == s->in_len) {
        s->in_pos = 0;
        s->in_len = 0;
    }

    room = SFT_SFTP_IN_SIZE - s->in_len;

    if (s->inflight >= SFT_SFTP_MAX_INFLIGHT
        || s->out_len - s->out_pos + s->reserved >= SFT_SFTP_OUT_HIGH)
    {
        room = 0;
    }

    len = sft_min(len, room);

    sft_memcpy(s->in + s->in_len, data, len);
    s->in_len += len;
    sft_session_count(&s->main->session, len, 0);

    if (len) {
        s->progress = 1;
    }

    return len;
}


static void
sft_sftp_channel_eof(ssh_session session, ssh_channel channel,
    void *userdata)
{
    sft_sftp_session_t  *s = userdata;

    (void) session;
    (void) channel;

    s->eof = 1;
}


/* handle what can be handled, then give libssh what the window allows */

static sft_int_t
sft_sftp_pump(sft_sftp_session_t *s)
{
    size_t  before;

    if (!s->sftp) {
        return SFT_OK;
    }

    for ( ;; ) {
        before = s->in_len - s->in_pos + s->out_len - s->out_pos;

        if (sft_sftp_process(s) != SFT_OK) {
            return SFT_ERROR;
        }

        if (sft_sftp_flush(s) != SFT_OK) {
            return SFT_ERROR;
        }

        if (sft_sftp_pull(s) != SFT_OK) {
            return SFT_ERROR;
        }

        if (s->in_len - s->in_pos + s->out_len - s->out_pos == before) {
            return SFT_OK;
        }
    }
}


static sft_int_t
sft_sftp_pull(sft_sftp_session_t *s)
{
    int     n;
    size_t  room;

    if (s->eof || s->channel == NULL) {
        return SFT_OK;
    }

    if (s->in_pos) {
        memmove(s->in, s->in + s->in_pos, s->in_len - s->in_pos);
        s->in_len -= s->in_pos;
        s->in_pos = 0;
    }

    if (s->inflight >= SFT_SFTP_MAX_INFLIGHT
        || s->out_len - s->out_pos + s->reserved >= SFT_SFTP_OUT_HIGH)
    {
        return SFT_OK;
    }

    room = SFT_SFTP_IN_SIZE - s->in_len;
    if (room == 0) {
        return SFT_OK;
    }

    /* only what libssh holds already: no packet is handled here */

    n = ssh_channel_poll(s->channel, 0);

    if (n == SSH_ERROR) {
        return SFT_ERROR;
    }

    room = SFT_SFTP_IN_SIZE - s->in_len;

    if (n <= 0 || room == 0) {
        return SFT_OK;
    }

    n = ssh_channel_read_nonblocking(s->channel, s->in + s->in_len,
                                     sft_min((size_t) n, room), 0);
    if (n == SSH_ERROR) {
        return SFT_ERROR;
    }

    if (n > 0) {
        s->in_len += n;
        s->progress = 1;
        sft_session_count(&s->main->session, n, 0);
    }

    return SFT_OK;
}


/* a place for a reply of up to len bytes at the end of the output */

u_char *
sft_sftp_reply_space(sft_sftp_session_t *s, size_t len)
{
    u_char  *p;
    size_t   size;

    if (s->out_pos == s->out_len) {
        s->out_pos = 0;
        s->out_len = 0;
    }

    if (s->out_len + len <= s->out_size) {
        return s->out + s->out_len;
    }

    if (s->out_pos) {
        memmove(s->out, s->out + s->out_pos, s->out_len - s->out_pos);
        s->out_len -= s->out_pos;
        s->out_pos = 0;

        if (s->out_len + len <= s->out_size) {
            return s->out + s->out_len;
        }
    }

    size = s->out_size ? s->out_size : 65536;

    while (size < s->out_len + len) {
        size *= 2;
    }

    p = sft_alloc(size, s->log);
    if (p == NULL) {
        return NULL;
    }

    if (s->out) {
        sft_memcpy(p, s->out, s->out_len);
        sft_free(s->out);
    }

    s->out = p;
    s->out_size = size;

    return s->out + s->out_len;
}


static sft_int_t
sft_sftp_flush(sft_sftp_session_t *s)
{
    int       n;
    size_t    len;
    uint32_t  window, unacked, limit;

    if (s->channel && ssh_channel_is_closed(s->channel)) {
        /* the client closed it: the replies have no one to go to */
        s->out_pos = s->out_len;
        return SFT_OK;
    }

    while (s->out_pos < s->out_len && s->channel) {

        if (!(ssh_get_poll_flags(s->ssh) & SSH_WRITE_PENDING)) {
            s->unflushed = 0;
        }

        if (s->unflushed >= SFT_SFTP_UNFLUSHED_MAX) {
            return SFT_OK;
        }

        /*
         * the client's window is not filled: a client slower than us
         * would then always hold all of it unconsumed, and OpenSSH's ssh
         * spends its time in memmove() and page faults (issue 5: downloads
         * at a third of the speed); 5/8 of the largest window seen stays
         * above the half at which OpenSSH sends a window adjust
         */

        window = ssh_channel_window_size(s->channel);
        if (window > s->window_max) {
            s->window_max = window;
        }

        unacked = s->window_max - window;
        limit = s->window_max / 8 * 5;

        if (window == 0 || unacked >= limit) {
            return SFT_OK;
        }

        window = sft_min(window, limit - unacked);

        len = s->out_len - s->out_pos;
        len = sft_min(len, (size_t) window);
        len = sft_min(len, SFT_SFTP_UNFLUSHED_MAX - s->unflushed);

        n = ssh_channel_write(s->channel, s->out + s->out_pos, len);

        if (n == SSH_ERROR) {
            return SFT_ERROR;
        }

        if (n <= 0) {
            return SFT_OK;
        }

        s->out_pos += n;
        s->unflushed += n;
        s->progress = 1;
        sft_session_count(&s->main->session, 0, n);
    }

    return SFT_OK;
}


/*
 * The client's EOF or close of the channel: the requests in flight are
 * answered (the client may still read), the channel is closed on our side
 * too, then its handles left open go as on a disconnect and the
 * connection stays: the client may open another channel, or leave.
 */

static void
sft_sftp_channel_end(sft_sftp_session_t *s)
{
    ssh_channel           ch;
    sft_sftp_session_t  **cs;

    ch = s->channel;

    if (s->inflight || s->pending
        || (s->out_pos < s->out_len && !ssh_channel_is_closed(ch)))
    {
        /* a completion or the window runs the session again */
        return;
    }

    sft_log_error(SFT_LOG_INFO, s->log, 0, "client closed channel");

    /*
     * EOF and close, unless sent already; libssh frees the channel once
     * the client's close has come too
     */

    ssh_remove_channel_callbacks(ch, &s->ccb);
    (void) ssh_channel_close(ch);
    ssh_channel_free(ch);

    for (cs = &s->main->channels; *cs != s; cs = &(*cs)->next) {
        /* void */
    }

    *cs = s->next;

    sft_sftp_channel_close(s);
}


/* a channel's SFTP state ends: freed once nothing of it runs */

static void
sft_sftp_channel_close(sft_sftp_session_t *s)
{
    s->closed = 1;
    atomic_store(&s->cancel, 1);
    s->channel = NULL;

    /* a READ or WRITE that waited for a chunk goes with the input */
    sft_buffer_cancel(&s->chunk_waiter);

    sft_sftp_free_handles(s);
    sft_vfs_user_close(&s->vfs);

    if (s->pending == 0) {
        sft_sftp_free(s);
    }
}


/* an administrator ended the session, through the API of any worker */

static void
sft_sftp_end(sft_session_t *session, const char *by)
{
    sft_sftp_session_t  *s = session->data;

    sft_log_error(SFT_LOG_NOTICE, s->log, 0,
                  "sftp session ended by the admin API, token \"%s\"", by);

    if (s->ssh && ssh_is_connected(s->ssh)) {
        (void) ssh_session_set_disconnect_message(s->ssh,
                                     "Session ended by the administrator.");
    }

    sft_sftp_close(s);
}


/* closing: libssh's socket goes first, ours (still in epoll) last */

static void
sft_sftp_close(sft_sftp_session_t *s)
{
    sft_connection_t    *c;
    sft_sftp_session_t  *cs;

    if (s->closed) {
        return;
    }

    s->closed = 1;
    atomic_store(&s->cancel, 1);
    c = s->connection;

    sft_stat_sub(sft_sftp_stat_sessions, 1);
    sft_session_close(&s->session);

    if (s->auth.job) {
        sft_auth_cancel(&s->auth);
    }

    if (s->auth.account) {
        sft_user_release(s->auth.account);
        s->auth.account = NULL;
    }

    if (s->auth_msg) {
        ssh_message_free(s->auth_msg);
        s->auth_msg = NULL;
    }

    if (s->delay.timer_set) {
        sft_del_timer(&s->delay);
    }

    if (s->delay.posted) {
        sft_delete_posted_event(&s->delay);
    }

    if (s->rate_ev.timer_set) {
        sft_del_timer(&s->rate_ev);
    }

    if (s->counted) {
        sft_auth_connection_close((struct sockaddr *) &c->sockaddr);
        s->counted = 0;
    }

    /* the channels' states hold on to ours: it goes after the last */

    s->nchannels++;

    while (s->channels) {
        cs = s->channels;
        s->channels = cs->next;
        sft_sftp_channel_close(cs);
    }

    sft_vfs_user_close(&s->vfs);

    /* logged once the session no longer counts against max_sessions */

    sft_log_error(SFT_LOG_INFO, s->log, 0, "sftp session closed");

    if (s->event) {
        ssh_event_remove_session(s->event, s->ssh);
        ssh_event_free(s->event);
        s->event = NULL;
    }

    if (s->ssh) {
        if (ssh_is_connected(s->ssh)) {
            if (s->banned) {
                (void) ssh_session_set_disconnect_message(s->ssh,
                                                    SFT_AUTH_BANNED_REPLY);
            }

            ssh_disconnect(s->ssh);
        }

        ssh_free(s->ssh);
        s->ssh = NULL;
    }

    c->pool = NULL;
    sft_close_connection(c);

    if (--s->nchannels == 0) {
        sft_sftp_free(s);
    }
}


static void
sft_sftp_free(sft_sftp_session_t *s)
{
    sft_sftp_session_t  *m = s->main;

    if (s->account) {
        sft_user_release(s->account);
        s->account = NULL;
    }

    if (s->out) {
        sft_free(s->out);
        s->out = NULL;
    }

    s->connection = NULL;

    sft_destroy_pool(s->pool);

    if (m != s && --m->nchannels == 0 && m->closed) {
        sft_sftp_free(m);
    }
}


/* a storage operation of a closed channel completed */

void
sft_sftp_op_finished(sft_sftp_session_t *s)
{
    if (--s->pending == 0 && s->closed) {
        sft_sftp_free(s);
    }
}

