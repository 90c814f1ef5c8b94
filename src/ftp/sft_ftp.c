/*
 * sft_ftp.c -- the "ftp" block and the core FTP module's directives:
 * servers, listen, storage, passive ports and address, timeouts and limits.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>


static char *sft_ftp_block(sft_conf_t *cf, sft_command_t *cmd, void *conf);
static char *sft_ftp_passive_ports(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_ftp_pasv_address(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_ftp_merge_ssl(sft_conf_t *cf, sft_ftp_srv_conf_t *conf,
    sft_ftp_srv_conf_t *prev);
static char *sft_ftp_init_conf(sft_cycle_t *cycle, void *conf);
static void *sft_ftp_core_create_main_conf(sft_conf_t *cf);
static void *sft_ftp_core_create_srv_conf(sft_conf_t *cf);
static char *sft_ftp_core_merge_srv_conf(sft_conf_t *cf, void *parent,
    void *child);


static sft_proto_t  sft_ftp_proto = {
    "ftp",
    SFT_FTP_MODULE,
    &sft_ftp_core_module,
    sft_ftp_init_connection,
    1                                      /* "listen ... ssl": FTPS */
};


static sft_command_t  sft_ftp_commands[] = {

    { sft_string("ftp"),
      SFT_MAIN_CONF|SFT_CONF_BLOCK|SFT_CONF_NOARGS,
      sft_ftp_block,
      0,
      0,
      NULL,
      sft_command_doc("{ ... }", "",
          "The FTP and FTPS servers.") },

    sft_null_command
};


sft_uint_t  sft_ftp_stat_sessions;


static const sft_stat_def_t  sft_ftp_stats[] = {
    { .name = "ftp_sessions", .json = "sessions.ftp", .type = SFT_STAT_GAUGE,
      .help = "FTP sessions open now.", .index = &sft_ftp_stat_sessions },
};


static sft_core_module_t  sft_ftp_module_ctx = {
    sft_string("ftp"),
    NULL,
    sft_ftp_init_conf
};


sft_module_t  sft_ftp_module = {
    SFT_MODULE_V1,
    &sft_ftp_module_ctx,                   /* module context */
    sft_ftp_commands,                      /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


/* every cycle, whether the ftp{} block is there or not */

static char *
sft_ftp_init_conf(sft_cycle_t *cycle, void *conf)
{
    (void) conf;

    return sft_stat_register(cycle, sft_ftp_stats, sft_nelems(sft_ftp_stats))
           == SFT_OK ? SFT_CONF_OK : SFT_CONF_ERROR;
}


static sft_conf_enum_t  sft_ftp_tls_policies[] = {
    { sft_string("off"),      SFT_FTP_TLS_OFF },
    { sft_string("optional"), SFT_FTP_TLS_OPTIONAL },
    { sft_string("required"), SFT_FTP_TLS_REQUIRED },
    { sft_null_string, 0 }
};


static sft_conf_enum_t  sft_ftp_tls_reuse[] = {
    { sft_string("off"),      SFT_FTP_TLS_OFF },
    { sft_string("required"), SFT_FTP_TLS_REQUIRED },
    { sft_null_string, 0 }
};


static sft_command_t  sft_ftp_core_commands[] = {

    { sft_string("server"),
      SFT_PROTO_MAIN_CONF|SFT_CONF_BLOCK|SFT_CONF_NOARGS,
      sft_proto_server,
      SFT_PROTO_MAIN_CONF_OFFSET,
      0,
      &sft_ftp_proto,
      sft_command_doc("{ ... }", "",
          "An FTP server: its addresses and settings.") },

    { sft_string("listen"),
      SFT_PROTO_SRV_CONF|SFT_CONF_1MORE,
      sft_proto_listen,
      SFT_PROTO_SRV_CONF_OFFSET,
      0,
      NULL,
      sft_command_doc("address:port [ssl] [proxy_protocol]", "",
          "An address and port to accept FTP on; ssl makes it implicit "
          "FTPS.") },

    SFT_PROTO_PROXY_COMMANDS,

    { sft_string("storage"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_str_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_ftp_srv_conf_t, storage_name),
      NULL,
      sft_command_doc("name", "",
          "The storage whose files the users' homes name.") },

    { sft_string("passive_ports"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_ftp_passive_ports,
      SFT_PROTO_SRV_CONF_OFFSET,
      0,
      NULL,
      sft_command_doc("min-max", "",
          "The ports of passive data connections, split between the "
          "workers; unset lets the kernel pick.") },

    { sft_string("pasv_address"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE12,
      sft_ftp_pasv_address,
      SFT_PROTO_SRV_CONF_OFFSET,
      0,
      NULL,
      sft_command_doc("address | proxy [network]", "",
          "The IPv4 address PASV names, to clients in the network when one "
          "is given; proxy: the balancer's address the client connected "
          "to, from the PROXY protocol header; may be repeated.") },

    { sft_string("idle_timeout"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_ftp_srv_conf_t, idle_timeout),
      NULL,
      sft_command_doc("time", "300s",
          "How long a session may wait between commands.") },

    { sft_string("data_timeout"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_ftp_srv_conf_t, data_timeout),
      NULL,
      sft_command_doc("time", "300s",
          "How long a data connection may take to connect and between "
          "reads or writes.") },

    { sft_string("login_timeout"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_ftp_srv_conf_t, login_timeout),
      NULL,
      sft_command_doc("time", "60s",
          "How long a client has from connecting to logging in.") },

    { sft_string("max_login_failures"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_ftp_srv_conf_t, max_login_failures),
      NULL,
      sft_command_doc("number", "3",
          "Failed logins in one session before it is closed.") },

    { sft_string("max_errors"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_num_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_ftp_srv_conf_t, max_errors),
      NULL,
      sft_command_doc("number", "10",
          "Invalid or refused commands in one session before it is closed.") },

    SFT_XFER_COMMANDS(offsetof(sft_ftp_srv_conf_t, xfer)),

    SFT_SSL_COMMANDS(offsetof(sft_ftp_srv_conf_t, ssl)),

    { sft_string("tls_login"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_enum_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_ftp_srv_conf_t, tls_login),
      sft_ftp_tls_policies,
      sft_command_doc("off | optional | required", "required with TLS",
          "Whether USER and PASS need AUTH TLS first.") },

    { sft_string("tls_data"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_enum_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_ftp_srv_conf_t, tls_data),
      sft_ftp_tls_policies,
      sft_command_doc("off | optional | required", "required with TLS",
          "Whether transfers need a protected data connection (PROT P).") },

    { sft_string("tls_data_reuse"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_enum_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_ftp_srv_conf_t, tls_data_reuse),
      sft_ftp_tls_reuse,
      sft_command_doc("off | required", "required with TLS",
          "Whether a data connection's TLS session must resume the control "
          "connection's.") },

    sft_null_command
};


static sft_proto_module_t  sft_ftp_core_module_ctx = {
    sft_ftp_core_create_main_conf,
    NULL,
    sft_ftp_core_create_srv_conf,
    sft_ftp_core_merge_srv_conf
};


sft_module_t  sft_ftp_core_module = {
    SFT_MODULE_V1,
    &sft_ftp_core_module_ctx,              /* module context */
    sft_ftp_core_commands,                 /* module directives */
    SFT_FTP_MODULE,                        /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static char *
sft_ftp_block(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    (void) cmd;

    return sft_proto_block(cf, conf, &sft_ftp_proto);
}


/* "passive_ports 40000-40999;" */

static char *
sft_ftp_passive_ports(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    u_char              *dash;
    sft_int_t            lo, hi;
    sft_str_t           *value;
    sft_ftp_srv_conf_t  *fscf = conf;

    (void) cmd;

    if (fscf->passive_min != SFT_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    dash = memchr(value[1].data, '-', value[1].len);
    if (dash == NULL) {
        goto invalid;
    }

    lo = sft_atoi(value[1].data, dash - value[1].data);
    hi = sft_atoi(dash + 1, value[1].data + value[1].len - dash - 1);

    if (lo == SFT_ERROR || hi == SFT_ERROR || lo < 1024 || hi > 65535
        || lo > hi)
    {
        goto invalid;
    }

    fscf->passive_min = lo;
    fscf->passive_max = hi;

    return SFT_CONF_OK;

invalid:

    sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                       "invalid \"passive_ports\" \"%.*s\", "
                       "must be LOW-HIGH within 1024-65535",
                       SFT_STR_FMT(&value[1]));
    return SFT_CONF_ERROR;
}


/*
 * "pasv_address 203.0.113.5;" -- what PASV replies name, behind a NAT;
 * "pasv_address 10.0.0.1 10.0.0.0/8;" -- what they name to clients from
 * that network (the most specific network holding the client wins);
 * "pasv_address proxy;" -- the destination of the control connection's
 * PROXY protocol header: the balancer's address the client connected to
 */

static char *
sft_ftp_pasv_address(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    char                  text[INET_ADDRSTRLEN];
    u_char                m;
    sft_str_t            *value;
    sft_uint_t            i, k;
    sft_ftp_pasv_addr_t  *pa, *rule;
    sft_ftp_srv_conf_t   *fscf = conf;

    (void) cmd;

    value = cf->args->elts;

    if (fscf->pasv_addrs == NULL) {
        fscf->pasv_addrs = sft_array_create(cf->pool, 2,
                                            sizeof(sft_ftp_pasv_addr_t));
        if (fscf->pasv_addrs == NULL) {
            return SFT_CONF_ERROR;
        }
    }

    pa = sft_array_push(fscf->pasv_addrs);
    if (pa == NULL) {
        return SFT_CONF_ERROR;
    }

    sft_memzero(pa, sizeof(sft_ftp_pasv_addr_t));

    if (value[1].len >= sizeof(text)) {
        goto invalid;
    }

    sft_memcpy(text, value[1].data, value[1].len);
    text[value[1].len] = '\0';

    if (sft_str_eq(&value[1], "proxy")) {
        pa->proxy = 1;

    } else if (inet_pton(AF_INET, text, &pa->addr) != 1) {
        goto invalid;
    }

    if (cf->args->nelts == 3) {
        if (sft_cidr_parse(&value[2], &pa->net) != SFT_OK) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "invalid network \"%.*s\" in "
                               "\"pasv_address\"", SFT_STR_FMT(&value[2]));
            return SFT_CONF_ERROR;
        }

        if (pa->net.family != AF_INET) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "IPv6 network \"%.*s\" in \"pasv_address\": "
                               "PASV is IPv4 only, IPv6 clients use EPSV, "
                               "which names no address",
                               SFT_STR_FMT(&value[2]));
            return SFT_CONF_ERROR;
        }

        for (k = 0; k < 4; k++) {
            for (m = pa->net.mask[k]; m; m <<= 1) {
                pa->bits++;
            }
        }
    }

    rule = fscf->pasv_addrs->elts;

    for (i = 0; i + 1 < fscf->pasv_addrs->nelts; i++) {
        if (rule[i].net.family == pa->net.family
            && rule[i].bits == pa->bits
            && sft_memcmp(rule[i].net.addr, pa->net.addr, 4) == 0)
        {
            return "is duplicate for this network";
        }
    }

    return SFT_CONF_OK;

invalid:

    sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                       "invalid IPv4 address \"%.*s\" in \"pasv_address\"",
                       SFT_STR_FMT(&value[1]));
    return SFT_CONF_ERROR;
}


static void *
sft_ftp_core_create_main_conf(sft_conf_t *cf)
{
    sft_ftp_core_main_conf_t  *fmcf;

    fmcf = sft_pcalloc(cf->pool, sizeof(sft_ftp_core_main_conf_t));
    if (fmcf == NULL) {
        return NULL;
    }

    if (sft_proto_init_main_conf(&fmcf->proto, cf->pool) != SFT_OK) {
        return NULL;
    }

    return fmcf;
}


static void *
sft_ftp_core_create_srv_conf(sft_conf_t *cf)
{
    sft_ftp_srv_conf_t  *fscf;

    fscf = sft_pcalloc(cf->pool, sizeof(sft_ftp_srv_conf_t));
    if (fscf == NULL) {
        return NULL;
    }

    if (sft_proto_init_srv_conf(&fscf->proto, cf->pool) != SFT_OK) {
        return NULL;
    }

    fscf->passive_min = SFT_CONF_UNSET_UINT;
    fscf->passive_max = SFT_CONF_UNSET_UINT;
    fscf->idle_timeout = SFT_CONF_UNSET_MSEC;
    fscf->data_timeout = SFT_CONF_UNSET_MSEC;
    fscf->login_timeout = SFT_CONF_UNSET_MSEC;
    fscf->max_login_failures = SFT_CONF_UNSET_UINT;
    fscf->max_errors = SFT_CONF_UNSET_UINT;

    sft_ssl_conf_init(&fscf->ssl);
    fscf->tls_login = SFT_CONF_UNSET_UINT;
    fscf->tls_data = SFT_CONF_UNSET_UINT;
    fscf->tls_data_reuse = SFT_CONF_UNSET_UINT;
    sft_xfer_conf_init(&fscf->xfer);

    return fscf;
}


static char *
sft_ftp_core_merge_srv_conf(sft_conf_t *cf, void *parent, void *child)
{
    sft_ftp_srv_conf_t  *prev = parent;
    sft_ftp_srv_conf_t  *conf = child;

    sft_conf_merge_str_value(conf->storage_name, prev->storage_name, "");
    sft_conf_merge_uint_value(conf->passive_min, prev->passive_min, 0);
    sft_conf_merge_uint_value(conf->passive_max, prev->passive_max, 0);
    sft_conf_merge_msec_value(conf->idle_timeout, prev->idle_timeout,
                              300000);
    sft_conf_merge_msec_value(conf->data_timeout, prev->data_timeout,
                              300000);
    sft_conf_merge_msec_value(conf->login_timeout, prev->login_timeout,
                              60000);
    sft_conf_merge_uint_value(conf->max_login_failures,
                              prev->max_login_failures, 3);
    sft_conf_merge_uint_value(conf->max_errors, prev->max_errors, 10);
    sft_xfer_conf_merge(&conf->xfer, &prev->xfer);

    if (conf->pasv_addrs == NULL) {
        conf->pasv_addrs = prev->pasv_addrs;
    }

    if (conf->storage_name.len) {
        conf->storage = sft_storage_find(cf->cycle, &conf->storage_name);

        if (conf->storage == NULL) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "unknown storage \"%.*s\" in ftp server",
                               SFT_STR_FMT(&conf->storage_name));
            return SFT_CONF_ERROR;
        }
    }

    return sft_ftp_merge_ssl(cf, conf, prev);
}


/*
 * TLS: explicit (AUTH TLS) on every listener of a server with a
 * certificate, implicit on "listen ... ssl"; the policy is strict by
 * default (logins and data need TLS, data sessions must be the control
 * connection's) and each weaker setting is said in the log.
 */

static char *
sft_ftp_merge_ssl(sft_conf_t *cf, sft_ftp_srv_conf_t *conf,
    sft_ftp_srv_conf_t *prev)
{
    sft_int_t          rc;
    sft_uint_t         i;
    sft_listen_opt_t  *lo;

    static const char  *names[] = { "off", "optional", "required" };

    sft_ssl_conf_merge(&conf->ssl, &prev->ssl);

    sft_conf_merge_uint_value(conf->tls_login, prev->tls_login,
                              SFT_CONF_UNSET_UINT);
    sft_conf_merge_uint_value(conf->tls_data, prev->tls_data,
                              SFT_CONF_UNSET_UINT);
    sft_conf_merge_uint_value(conf->tls_data_reuse, prev->tls_data_reuse,
                              SFT_CONF_UNSET_UINT);

    rc = sft_ssl_conf_apply(cf, &conf->ssl, &conf->tls);

    if (rc == SFT_ERROR) {
        return SFT_CONF_ERROR;
    }

    lo = conf->proto.listen.elts;

    if (rc == SFT_DECLINED) {
        for (i = 0; i < conf->proto.listen.nelts; i++) {
            if (lo[i].ssl) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "no \"ssl_certificate\" in the ftp server "
                                   "of \"listen %.*s ssl\"",
                                   SFT_STR_FMT(&lo[i].addr_text));
                return SFT_CONF_ERROR;
            }
        }

        if (conf->tls_login == SFT_FTP_TLS_REQUIRED
            || conf->tls_data == SFT_FTP_TLS_REQUIRED)
        {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "\"tls_login required\" or \"tls_data "
                               "required\" without \"ssl_certificate\"");
            return SFT_CONF_ERROR;
        }

        conf->tls_login = SFT_FTP_TLS_OFF;
        conf->tls_data = SFT_FTP_TLS_OFF;
        conf->tls_data_reuse = SFT_FTP_TLS_OFF;

        /* as weak as "tls_login off", so said as loudly */

        if (conf->proto.listen.nelts) {
            sft_conf_log_error(SFT_LOG_WARN, cf, 0,
                               "no \"ssl_certificate\" in the ftp server of "
                               "\"listen %.*s\": ftp passwords and data "
                               "cross the network in clear",
                               SFT_STR_FMT(&lo[0].addr_text));
        }

        return SFT_CONF_OK;
    }

    sft_conf_init_uint_value(conf->tls_login, SFT_FTP_TLS_REQUIRED);
    sft_conf_init_uint_value(conf->tls_data,
                             conf->tls_login == SFT_FTP_TLS_OFF
                             ? SFT_FTP_TLS_OFF : SFT_FTP_TLS_REQUIRED);
    sft_conf_init_uint_value(conf->tls_data_reuse, SFT_FTP_TLS_REQUIRED);

    if (conf->tls_login == SFT_FTP_TLS_OFF) {
        for (i = 0; i < conf->proto.listen.nelts; i++) {
            if (lo[i].ssl) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "\"tls_login off\" in the ftp server of "
                                   "\"listen %.*s ssl\"",
                                   SFT_STR_FMT(&lo[i].addr_text));
                return SFT_CONF_ERROR;
            }
        }

        if (conf->tls_data != SFT_FTP_TLS_OFF) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "\"tls_data %s\" needs TLS logins, but "
                               "\"tls_login off\"", names[conf->tls_data]);
            return SFT_CONF_ERROR;
        }
    }

    if (conf->tls_login != SFT_FTP_TLS_REQUIRED) {
        sft_conf_log_error(SFT_LOG_WARN, cf, 0,
                           "\"tls_login %s\": ftp passwords may cross the "
                           "network in clear", names[conf->tls_login]);
    }

    if (conf->tls_data != SFT_FTP_TLS_REQUIRED) {
        sft_conf_log_error(SFT_LOG_WARN, cf, 0,
                           "\"tls_data %s\": ftp data may cross the "
                           "network in clear", names[conf->tls_data]);
    }

    if (conf->tls_data_reuse != SFT_FTP_TLS_REQUIRED) {
        sft_conf_log_error(SFT_LOG_WARN, cf, 0,
                           "\"tls_data_reuse off\": ftp data connections "
                           "are not tied to their control connection's TLS "
                           "session");
    }

    return SFT_CONF_OK;
}
