/*
 * siftpd.c -- the daemon's entry point: command line options, the first
 * cycle, signalling a running master, and handing over to the process loop.
 * The top of the link, above every floor: it alone hands "siftpd user ..."
 * to the account floor's command line.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_asm.h>
#include <sft_event_openssl.h>
#include <sft_users.h>
#include <sft_setproctitle.h>
#include <sft_conf_doc.h>
#if (SFT_HAVE_OPENSSL)
#include <openssl/opensslv.h>
#endif


static sft_int_t sft_get_options(int argc, char *const *argv);
static void sft_show_version(void);
static sft_int_t sft_process_options(sft_cycle_t *cycle);
static void sft_dump_configuration(sft_cycle_t *cycle);


static sft_uint_t   sft_show_help;
static sft_uint_t   sft_show_version_flag;
static sft_uint_t   sft_show_configure;
static sft_uint_t   sft_show_directives;
static u_char      *sft_prefix;
static u_char      *sft_conf_file;
static u_char      *sft_conf_params;
static char        *sft_signal;
static int          sft_subcmd_argc;          /* "user ...", "hash-..." */
static char *const *sft_subcmd_argv;


int
main(int argc, char **argv)
{
    int                rc;
    sft_log_t         *log;
    sft_cycle_t       *cycle, init_cycle;
    sft_core_conf_t   *ccf;

    /* every log line names it: before the first one */
    sft_pid = getpid();

    log = sft_log_init();

    /* before the options keep pointers into argv[]: they get copies */

    if (sft_init_setproctitle(argc, argv, log) != SFT_OK) {
        return 1;
    }

    if (sft_get_options(argc, argv) != SFT_OK) {
        return 1;
    }

    sft_upgrade_init(argv);

    if (sft_show_version_flag) {
        sft_show_version();
        return 0;
    }

    sft_asm_init();
    sft_ssl_gcm_register();
    sft_time_update();

    if (sft_test_config && !sft_quiet_mode) {
        log->log_level = SFT_LOG_INFO;
    }

    sft_memzero(&init_cycle, sizeof(sft_cycle_t));
    init_cycle.log = log;
    init_cycle.log_file.fd = SFT_INVALID_FILE;
    sft_cycle = &init_cycle;

    init_cycle.pool = sft_create_pool(1024, log);
    if (init_cycle.pool == NULL) {
        return 1;
    }

    if (sft_process_options(&init_cycle) != SFT_OK) {
        sft_destroy_pool(init_cycle.pool);
        return 1;
    }

    if (sft_subcmd_argc) {
        rc = sft_users_cli(&init_cycle, sft_subcmd_argc, sft_subcmd_argv);
        sft_destroy_pool(init_cycle.pool);
        return rc;
    }

    if (sft_preinit_modules() != SFT_OK) {
        sft_destroy_pool(init_cycle.pool);
        return 1;
    }

    /* started by a binary upgrade: its listeners are ours to take over */

    if (!sft_test_config && !sft_signal
        && sft_add_inherited_sockets(&init_cycle) != SFT_OK)
    {
        sft_destroy_pool(init_cycle.pool);
        return 1;
    }

    cycle = sft_init_cycle(&init_cycle);

    if (cycle == NULL) {
        if (sft_test_config) {
            sft_log_stderr(0, "configuration file %s test failed",
                           init_cycle.conf_file.data);
        }

        sft_destroy_pool(init_cycle.pool);
        return 1;
    }

    /*
     * a successful sft_init_cycle() has freed init_cycle.pool, except when
     * it only tested the configuration or signals a running master
     */

    if (sft_show_directives) {
        rc = (sft_conf_doc_print(cycle, stdout) == SFT_OK) ? 0 : 1;
        sft_destroy_pool(cycle->pool);
        sft_destroy_pool(init_cycle.pool);
        return rc;
    }

    if (sft_test_config) {
        if (!sft_quiet_mode) {
            sft_log_stderr(0, "the configuration file %s syntax is ok",
                           cycle->conf_file.data);
            sft_log_stderr(0, "configuration file %s test is successful",
                           cycle->conf_file.data);
        }

        if (sft_dump_config) {
            sft_dump_configuration(cycle);
        }

        sft_destroy_pool(cycle->pool);
        sft_destroy_pool(init_cycle.pool);
        return 0;
    }

    if (sft_signal) {
        rc = sft_signal_process(cycle, sft_signal);
        sft_destroy_pool(cycle->pool);
        sft_destroy_pool(init_cycle.pool);
        return rc;
    }

    sft_cycle = cycle;

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);

    if (sft_init_signals(cycle->log) != SFT_OK) {
        return 1;
    }

    /* a new binary stays the old master's child, which watches it */

    if (ccf->daemon && !sft_inherited) {
        if (sft_daemon(cycle->log) != SFT_OK) {
            return 1;
        }
    }

    if (sft_create_pidfile(&ccf->pid, cycle->log) != SFT_OK) {
        return 1;
    }

    if (ccf->master) {
        sft_master_process_cycle(cycle);

    } else {
        sft_single_process_cycle(cycle);
    }

    return 0;
}


static sft_int_t
sft_get_options(int argc, char *const *argv)
{
    u_char     *p;
    sft_int_t   i;

    for (i = 1; i < argc; i++) {

        p = (u_char *) argv[i];

        if (*p != '-' && *p != '\0') {
            sft_subcmd_argc = argc - i;
            sft_subcmd_argv = argv + i;
            break;
        }

        /* the directive reference of the configuration's modules */

        if (strcmp(argv[i], "--directives") == 0) {
            sft_show_directives = 1;
            sft_test_config = 1;
            sft_quiet_mode = 1;
            continue;
        }

        if (*p++ != '-') {
            sft_log_stderr(0, "invalid option: \"%s\"", argv[i]);
            return SFT_ERROR;
        }

        while (*p) {

            switch (*p++) {

            case '?':
            case 'h':
                sft_show_version_flag = 1;
                sft_show_help = 1;
                break;

            case 'v':
                sft_show_version_flag = 1;
                break;

            case 'V':
                sft_show_version_flag = 1;
                sft_show_configure = 1;
                break;

            case 't':
                sft_test_config = 1;
                break;

            case 'T':
                sft_test_config = 1;
                sft_dump_config = 1;
                break;

            case 'q':
                sft_quiet_mode = 1;
                break;

            case 'p':
            case 'c':
            case 'g':
            case 's':
                if (*p == '\0' && argv[++i] == NULL) {
                    sft_log_stderr(0, "option \"-%c\" requires an argument",
                                   p[-1]);
                    return SFT_ERROR;
                }

                {
                    u_char  opt = p[-1];
                    u_char *arg = *p ? p : (u_char *) argv[i];

                    if (opt == 'p') {
                        sft_prefix = arg;
                    } else if (opt == 'c') {
                        sft_conf_file = arg;
                    } else if (opt == 'g') {
                        sft_conf_params = arg;
                    } else {
                        sft_signal = (char *) arg;
                        sft_signaller = 1;

                        if (strcmp(sft_signal, "stop") != 0
                            && strcmp(sft_signal, "quit") != 0
                            && strcmp(sft_signal, "reopen") != 0
                            && strcmp(sft_signal, "reload") != 0
                            && strcmp(sft_signal, "upgrade") != 0)
                        {
                            sft_log_stderr(0, "invalid option: \"-s %s\"",
                                           sft_signal);
                            return SFT_ERROR;
                        }
                    }
                }

                goto next;

            default:
                sft_log_stderr(0, "invalid option: \"%c\"", p[-1]);
                return SFT_ERROR;
            }
        }

    next:

        continue;
    }

    return SFT_OK;
}


static void
sft_show_version(void)
{
    sft_uint_t  i;

    fprintf(stderr, "siftpd version: siftpd/" SFT_VERSION "\n");

    if (sft_show_help) {
        fprintf(stderr,
            "Usage: siftpd [-?hvVtTq] [-s signal] [-p prefix] [-c filename] "
            "[-g directives]\n"
            "       siftpd [-p prefix] [-c filename] hash-password\n"
            "       siftpd [-p prefix] [-c filename] user add NAME "
            "[--home PATH] [--storage NAME]\n"
            "                            [--perms LIST] [--disabled]\n"
            "       siftpd [-p prefix] [-c filename] user "
            "del|passwd|show NAME\n"
            "       siftpd [-p prefix] [-c filename] user list\n\n"
            "Options:\n"
            "  -?,-h         : this help\n"
            "  -v            : show version and exit\n"
            "  -V            : show version and configure options then exit\n"
            "  -t            : test configuration and exit\n"
            "  -T            : test configuration, dump it and exit\n"
            "  -q            : suppress non-error messages during "
            "configuration testing\n"
            "  -s signal     : send signal to a master process: stop, quit, "
            "reopen, reload,\n"
            "                  upgrade\n"
            "  -p prefix     : set prefix path (default: " SFT_PREFIX ")\n"
            "  -c filename   : set configuration file (default: "
            SFT_CONF_PATH ")\n"
            "  -g directives : set global directives out of configuration "
            "file\n\n"
            "Commands:\n"
            "  hash-password : read a password on stdin, print its argon2id "
            "hash\n"
            "  user          : add, delete, change the password of, show or "
            "list users\n"
            "                  of the \"users\" file\n");
    }

    if (sft_show_configure) {
        fprintf(stderr, "built by " SFT_COMPILER "\n");
#if (SFT_HAVE_OPENSSL)
        fprintf(stderr, "built with " OPENSSL_VERSION_TEXT "\n");
#endif
        fprintf(stderr, "configure arguments:" SFT_CONFIGURE "\n");
        fprintf(stderr,
                "paths: prefix " SFT_PREFIX ", sbin " SFT_SBIN_PATH
                ", conf " SFT_CONF_PATH ", pid " SFT_PID_PATH
                ", error log " SFT_ERROR_LOG_PATH ", data " SFT_DATA_PATH
                ", modules " SFT_MODULES_PATH ", html " SFT_HTML_PATH
                ", man " SFT_MAN_PATH "\n");
        fprintf(stderr, "modules:");

        for (i = 0; sft_modules[i]; i++) {
            fprintf(stderr, " %s", sft_module_names[i]);
        }

        fprintf(stderr, "\n");
    }
}


static sft_int_t
sft_process_options(sft_cycle_t *cycle)
{
    size_t   len;
    u_char  *p;
    char     cwd[PATH_MAX];

    if (sft_prefix) {
        len = strlen((char *) sft_prefix);
        p = sft_pnalloc(cycle->pool, len + 2);
        if (p == NULL) {
            return SFT_ERROR;
        }

        if (sft_prefix[0] != '/') {
            if (getcwd(cwd, sizeof(cwd)) == NULL) {
                sft_log_stderr(sft_errno, "[emerg] getcwd() failed");
                return SFT_ERROR;
            }

            p = sft_pnalloc(cycle->pool, strlen(cwd) + len + 3);
            if (p == NULL) {
                return SFT_ERROR;
            }

            len = sft_slprintf(p, p + strlen(cwd) + len + 3, "%s/%s", cwd,
                               sft_prefix) - p;
        } else {
            sft_memcpy(p, sft_prefix, len);
        }

        if (p[len - 1] != '/') {
            p[len++] = '/';
        }

        cycle->prefix.len = len;
        cycle->prefix.data = p;

    } else {
        sft_str_set(&cycle->prefix, SFT_PREFIX);
    }

    if (sft_conf_file) {
        cycle->conf_file.len = strlen((char *) sft_conf_file);
        cycle->conf_file.data = sft_conf_file;

    } else {
        sft_str_set(&cycle->conf_file, SFT_CONF_PATH);
    }

    if (sft_conf_full_name(cycle, &cycle->conf_file) != SFT_OK) {
        return SFT_ERROR;
    }

    if (sft_conf_params) {
        cycle->conf_param.len = strlen((char *) sft_conf_params);
        cycle->conf_param.data = sft_conf_params;
    }

    return SFT_OK;
}


static void
sft_dump_configuration(sft_cycle_t *cycle)
{
    sft_uint_t        i;
    sft_conf_dump_t  *cd;

    cd = cycle->config_dump.elts;

    for (i = 0; i < cycle->config_dump.nelts; i++) {
        printf("# configuration file %.*s:\n", SFT_STR_FMT(&cd[i].name));
        fwrite(cd[i].content.data, 1, cd[i].content.len, stdout);

        if (cd[i].content.len
            && cd[i].content.data[cd[i].content.len - 1] != '\n')
        {
            fputc('\n', stdout);
        }

        fputc('\n', stdout);
    }

    fflush(stdout);
}
