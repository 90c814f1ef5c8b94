/*
 * sft_sftp.c -- the "sftp" block and the core SFTP module's directives:
 * servers, listen, storage, host keys (made on first start), algorithms,
 * login grace time and authentication tries; the libssh bind of each
 * server is made in the master and inherited by the workers.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp.h>


#define SFT_SFTP_CIPHERS                                                      \
    "chacha20-poly1305@openssh.com,aes256-gcm@openssh.com,"                   \
    "aes128-gcm@openssh.com,aes256-ctr,aes128-ctr"
#define SFT_SFTP_KEX                                                          \
    "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,"      \
    "ecdh-sha2-nistp384,ecdh-sha2-nistp521,diffie-hellman-group16-sha512,"    \
    "diffie-hellman-group18-sha512"
#define SFT_SFTP_MACS                                                         \
    "hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,"            \
    "hmac-sha2-256,hmac-sha2-512"
#define SFT_SFTP_HOSTKEY_ALGOS                                                \
    "ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,"                    \
    "ecdsa-sha2-nistp521,rsa-sha2-512,rsa-sha2-256"


static char *sft_sftp_block(sft_conf_t *cf, sft_command_t *cmd, void *conf);
static char *sft_sftp_host_key(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_sftp_init_conf(sft_cycle_t *cycle, void *conf);
static void *sft_sftp_core_create_main_conf(sft_conf_t *cf);
static void *sft_sftp_core_create_srv_conf(sft_conf_t *cf);
static char *sft_sftp_core_merge_srv_conf(sft_conf_t *cf, void *parent,
    void *child);
static sft_int_t sft_sftp_init_module(sft_cycle_t *cycle);
static sft_int_t sft_sftp_make_key(sft_cycle_t *cycle, sft_str_t *name);
static void sft_sftp_bind_cleanup(void *data);


static sft_proto_t  sft_sftp_proto = {
    "sftp",
    SFT_SFTP_MODULE,
    &sft_sftp_core_module,
    sft_sftp_init_connection,
    0
};


static sft_command_t  sft_sftp_commands[] = {

    { sft_string("sftp"),
      SFT_MAIN_CONF|SFT_CONF_BLOCK|SFT_CONF_NOARGS,
      sft_sftp_block,
      0,
      0,
      NULL,
      sft_command_doc("{ ... }", "",
          "The SFTP servers.") },

    sft_null_command
};


sft_uint_t  sft_sftp_stat_sessions;


static const sft_stat_def_t  sft_sftp_stats[] = {
    { .name = "sftp_sessions", .json = "sessions.sftp",
      .type = SFT_STAT_GAUGE, .help = "SFTP sessions open now.",
      .index = &sft_sftp_stat_sessions },
};


static sft_core_module_t  sft_sftp_module_ctx = {
    sft_string("sftp"),
    NULL,
    sft_sftp_init_conf
};


sft_module_t  sft_sftp_module = {
    SFT_MODULE_V1,
    &sft_sftp_module_ctx,                  /* module context */
    sft_sftp_commands,                     /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    sft_sftp_init_module,                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


/* every cycle, whether the sftp{} block is there or not */

static char *
sft_sftp_init_conf(sft_cycle_t *cycle, void *conf)
{
    (void) conf;

    return sft_stat_register(cycle, sft_sftp_stats, sft_nelems(sft_sftp_stats))
           == SFT_OK ? SFT_CONF_OK : SFT_CONF_ERROR;
}


static sft_command_t  sft_sftp_core_commands[] = {

    { sft_string("server"),
      SFT_PROTO_MAIN_CONF|SFT_CONF_BLOCK|SFT_CONF_NOARGS,
      sft_proto_server,
      SFT_PROTO_MAIN_CONF_OFFSET,
      0,
      &sft_sftp_proto,
      sft_command_doc("{ ... }", "",
          "An SFTP server: its addresses and settings.") },

    { sft_string("listen"),
      SFT_PROTO_SRV_CONF|SFT_CONF_1MORE,
      sft_proto_listen,
      SFT_PROTO_SRV_CONF_OFFSET,
      0,
      NULL,
      sft_command_doc("address:port [proxy_protocol]", "",
          "An address and port to accept SSH on.") },

    SFT_PROTO_PROXY_COMMANDS,

    { sft_string("storage"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_str_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_sftp_srv_conf_t, storage_name),
      NULL,
      sft_command_doc("name", "",
          "The storage whose files the users' homes name.") },

    { sft_string("host_key"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_sftp_host_key,
      SFT_PROTO_SRV_CONF_OFFSET,
      0,
      NULL,
      sft_command_doc("file", "",
          "A host key in OpenSSH format; a missing ed25519 key is created; "
          "may be repeated.") },

    { sft_string("ciphers"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_str_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_sftp_srv_conf_t, ciphers),
      NULL,
      sft_command_doc("list", "chacha20-poly1305@openssh.com,...",
          "The SSH ciphers offered, comma separated.") },

    { sft_string("kex_algorithms"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_str_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_sftp_srv_conf_t, kex),
      NULL,
      sft_command_doc("list", "curve25519-sha256,...",
          "The SSH key exchange methods offered, comma separated.") },

    { sft_string("macs"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_str_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_sftp_srv_conf_t, macs),
      NULL,
      sft_command_doc("list", "hmac-sha2-256-etm@openssh.com,...",
          "The SSH MACs offered, comma separated.") },

    { sft_string("login_grace_time"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_sftp_srv_conf_t, login_grace_time),
      NULL,
      sft_command_doc("time", "60s",
          "How long a client has from connecting to logging in.") },

    { sft_string("idle_timeout"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_sftp_srv_conf_t, idle_timeout),
      NULL,
      sft_command_doc("time", "900s",
          "How long a session may stay with nothing moving after login.") },

    { sft_string("max_auth_tries"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_sftp_srv_conf_t, max_auth_tries),
      NULL,
      sft_command_doc("number", "6",
          "Failed logins on one connection before it is closed.") },

    { sft_string("max_channels"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_sftp_srv_conf_t, max_channels),
      NULL,
      sft_command_doc("number", "10",
          "Session channels one connection may have open at once.") },

    sft_null_command
};


static sft_proto_module_t  sft_sftp_core_module_ctx = {
    sft_sftp_core_create_main_conf,
    NULL,
    sft_sftp_core_create_srv_conf,
    sft_sftp_core_merge_srv_conf
};


sft_module_t  sft_sftp_core_module = {
    SFT_MODULE_V1,
    &sft_sftp_core_module_ctx,             /* module context */
    sft_sftp_core_commands,                /* module directives */
    SFT_SFTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static char *
sft_sftp_block(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    (void) cmd;

    return sft_proto_block(cf, conf, &sft_sftp_proto);
}


static char *
sft_sftp_host_key(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t            *value, *key;
    sft_sftp_srv_conf_t  *sscf = conf;

    (void) cmd;

    if (sscf->host_keys == NULL) {
        sscf->host_keys = sft_array_create(cf->pool, 3, sizeof(sft_str_t));
        if (sscf->host_keys == NULL) {
            return SFT_CONF_ERROR;
        }
    }

    if (sscf->host_keys->nelts == 3) {
        return "is set more than three times";
    }

    value = cf->args->elts;

    key = sft_array_push(sscf->host_keys);
    if (key == NULL) {
        return SFT_CONF_ERROR;
    }

    *key = value[1];

    if (sft_conf_full_name(cf->cycle, key) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static void *
sft_sftp_core_create_main_conf(sft_conf_t *cf)
{
    sft_sftp_core_main_conf_t  *smcf;

    smcf = sft_pcalloc(cf->pool, sizeof(sft_sftp_core_main_conf_t));
    if (smcf == NULL) {
        return NULL;
    }

    if (sft_proto_init_main_conf(&smcf->proto, cf->pool) != SFT_OK) {
        return NULL;
    }

    return smcf;
}


static void *
sft_sftp_core_create_srv_conf(sft_conf_t *cf)
{
    sft_sftp_srv_conf_t  *sscf;

    sscf = sft_pcalloc(cf->pool, sizeof(sft_sftp_srv_conf_t));
    if (sscf == NULL) {
        return NULL;
    }

    if (sft_proto_init_srv_conf(&sscf->proto, cf->pool) != SFT_OK) {
        return NULL;
    }

    sscf->login_grace_time = SFT_CONF_UNSET_MSEC;
    sscf->idle_timeout = SFT_CONF_UNSET_MSEC;
    sscf->max_auth_tries = SFT_CONF_UNSET_UINT;
    sscf->max_channels = SFT_CONF_UNSET_UINT;

    return sscf;
}


static char *
sft_sftp_core_merge_srv_conf(sft_conf_t *cf, void *parent, void *child)
{
    sft_str_t            *key;
    sft_sftp_srv_conf_t  *prev = parent;
    sft_sftp_srv_conf_t  *conf = child;

    sft_conf_merge_str_value(conf->storage_name, prev->storage_name, "");
    sft_conf_merge_str_value(conf->ciphers, prev->ciphers, SFT_SFTP_CIPHERS);
    sft_conf_merge_str_value(conf->kex, prev->kex, SFT_SFTP_KEX);
    sft_conf_merge_str_value(conf->macs, prev->macs, SFT_SFTP_MACS);
    sft_conf_merge_msec_value(conf->login_grace_time,
                              prev->login_grace_time, 60000);
    sft_conf_merge_msec_value(conf->idle_timeout, prev->idle_timeout,
                              900000);
    sft_conf_merge_uint_value(conf->max_auth_tries, prev->max_auth_tries, 6);
    sft_conf_merge_uint_value(conf->max_channels, prev->max_channels, 10);

    if (conf->max_channels == 0) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "\"max_channels\" must be at least 1");
        return SFT_CONF_ERROR;
    }

    if (conf->host_keys == NULL) {
        conf->host_keys = prev->host_keys;
    }

    if (conf->host_keys == NULL) {
        conf->host_keys = sft_array_create(cf->pool, 1, sizeof(sft_str_t));
        if (conf->host_keys == NULL) {
            return SFT_CONF_ERROR;
        }

        key = sft_array_push(conf->host_keys);
        if (key == NULL) {
            return SFT_CONF_ERROR;
        }

        sft_str_set(key, "var/ssh/host_ed25519_key");

        if (sft_conf_full_name(cf->cycle, key) != SFT_OK) {
            return SFT_CONF_ERROR;
        }
    }

    if (conf->storage_name.len) {
        conf->storage = sft_storage_find(cf->cycle, &conf->storage_name);

        if (conf->storage == NULL) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "unknown storage \"%.*s\" in sftp server",
                               SFT_STR_FMT(&conf->storage_name));
            return SFT_CONF_ERROR;
        }
    }

    return SFT_CONF_OK;
}


/* in the master, after the configuration: keys made, binds set up */

static sft_int_t
sft_sftp_init_module(sft_cycle_t *cycle)
{
    sft_uint_t                  s;
    sft_proto_conf_ctx_t       *ctx, **servers;
    sft_sftp_srv_conf_t        *sscf;
    sft_sftp_core_main_conf_t  *smcf;

    ctx = (sft_proto_conf_ctx_t *) sft_get_conf(cycle->conf_ctx,
                                                sft_sftp_module);
    if (ctx == NULL || sft_test_config) {
        return SFT_OK;
    }

    smcf = ctx->main_conf[sft_sftp_core_module.ctx_index];
    servers = smcf->proto.servers.elts;

    for (s = 0; s < smcf->proto.servers.nelts; s++) {
        sscf = servers[s]->srv_conf[sft_sftp_core_module.ctx_index];

        if (sft_sftp_host_keys(cycle, sscf) != SFT_OK) {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


sft_int_t
sft_sftp_host_keys(sft_cycle_t *cycle, sft_sftp_srv_conf_t *conf)
{
    int                  rc, off;
    sft_str_t           *keys;
    sft_uint_t           i;
    ssh_bind             bind;
    sft_pool_cleanup_t  *cln;

    if (conf->bind) {
        return SFT_OK;
    }

    bind = ssh_bind_new();
    if (bind == NULL) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0, "ssh_bind_new() failed");
        return SFT_ERROR;
    }

    cln = sft_pool_cleanup_add(cycle->pool, 0);
    if (cln == NULL) {
        ssh_bind_free(bind);
        return SFT_ERROR;
    }

    cln->handler = sft_sftp_bind_cleanup;
    cln->data = bind;
    conf->bind = bind;

    off = 0;
    rc = ssh_bind_options_set(bind, SSH_BIND_OPTIONS_PROCESS_CONFIG, &off);

    keys = conf->host_keys->elts;

    for (i = 0; rc == SSH_OK && i < conf->host_keys->nelts; i++) {
        if (sft_sftp_make_key(cycle, &keys[i]) != SFT_OK) {
            return SFT_ERROR;
        }

        rc = ssh_bind_options_set(bind, SSH_BIND_OPTIONS_HOSTKEY,
                                  keys[i].data);
    }

    if (rc == SSH_OK) {
        rc = ssh_bind_options_set(bind, SSH_BIND_OPTIONS_CIPHERS_C_S,
                                  conf->ciphers.data);
    }

    if (rc == SSH_OK) {
        rc = ssh_bind_options_set(bind, SSH_BIND_OPTIONS_CIPHERS_S_C,
                                  conf->ciphers.data);
    }

    if (rc == SSH_OK) {
        rc = ssh_bind_options_set(bind, SSH_BIND_OPTIONS_KEY_EXCHANGE,
                                  conf->kex.data);
    }

    if (rc == SSH_OK) {
        rc = ssh_bind_options_set(bind, SSH_BIND_OPTIONS_HMAC_C_S,
                                  conf->macs.data);
    }

    if (rc == SSH_OK) {
        rc = ssh_bind_options_set(bind, SSH_BIND_OPTIONS_HMAC_S_C,
                                  conf->macs.data);
    }

    if (rc == SSH_OK) {
        rc = ssh_bind_options_set(bind, SSH_BIND_OPTIONS_HOSTKEY_ALGORITHMS,
                                  SFT_SFTP_HOSTKEY_ALGOS);
    }

    if (rc != SSH_OK) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "sftp server setup failed: %s",
                      ssh_get_error(bind));
        return SFT_ERROR;
    }

    return SFT_OK;
}


/* a missing host key is made, its directory too; the type is by name */

static sft_int_t
sft_sftp_make_key(sft_cycle_t *cycle, sft_str_t *name)
{
    int                 bits, rc;
    u_char             *p;
    mode_t              mask;
    ssh_key             key;
    struct stat         sb;
    enum ssh_keytypes_e  type;

    if (stat((char *) name->data, &sb) == 0) {
        return SFT_OK;
    }

    if (errno != ENOENT) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, errno,
                      "stat(\"%s\") failed", name->data);
        return SFT_ERROR;
    }

    if (strstr((char *) name->data, "rsa")) {
        type = SSH_KEYTYPE_RSA;
        bits = 3072;

    } else if (strstr((char *) name->data, "ecdsa")) {
        type = SSH_KEYTYPE_ECDSA_P256;
        bits = 256;

    } else {
        type = SSH_KEYTYPE_ED25519;
        bits = 0;
    }

    /* the directories, 0700 */

    for (p = name->data + 1; *p; p++) {
        if (*p != '/') {
            continue;
        }

        *p = '\0';

        if (mkdir((char *) name->data, 0700) == -1 && errno != EEXIST) {
            sft_log_error(SFT_LOG_EMERG, cycle->log, errno,
                          "mkdir(\"%s\") failed", name->data);
            *p = '/';
            return SFT_ERROR;
        }

        *p = '/';
    }

    if (ssh_pki_generate(type, bits, &key) != SSH_OK) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "ssh_pki_generate() failed for \"%s\"", name->data);
        return SFT_ERROR;
    }

    mask = umask(077);
    rc = ssh_pki_export_privkey_file(key, NULL, NULL, NULL,
                                     (char *) name->data);
    (void) umask(mask);

    if (rc != SSH_OK) {
        ssh_key_free(key);
        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "could not write host key \"%s\"", name->data);
        return SFT_ERROR;
    }

    ssh_key_free(key);

    if (chmod((char *) name->data, 0600) == -1) {
        sft_log_error(SFT_LOG_EMERG, cycle->log, errno,
                      "chmod(\"%s\") failed", name->data);
        return SFT_ERROR;
    }

    sft_log_error(SFT_LOG_NOTICE, cycle->log, 0, "created host key \"%s\"",
                  name->data);

    return SFT_OK;
}


static void
sft_sftp_bind_cleanup(void *data)
{
    ssh_bind_free(data);
}
