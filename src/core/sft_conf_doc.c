/*
 * sft_conf_doc.c -- prints the directive reference from the command tables
 * of a cycle's modules: the context is read from the type flags, the rest
 * from each directive's sft_command_doc().
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_conf_doc.h>


static const char *sft_conf_doc_block(sft_module_t *module);
static void sft_conf_doc_context(sft_module_t *module, sft_uint_t type,
    FILE *out);
static const char *sft_conf_doc_field(const char *s);


sft_int_t
sft_conf_doc_print(sft_cycle_t *cycle, FILE *out)
{
    sft_uint_t      i;
    sft_module_t   *module;
    sft_command_t  *cmd;

    for (i = 0; i < cycle->modules_n; i++) {
        module = cycle->modules[i];

        if (module->commands == NULL) {
            continue;
        }

        for (cmd = module->commands; cmd->name.len; cmd++) {
            fprintf(out, "%s\t", module->name);
            sft_conf_doc_context(module, cmd->type, out);
            fprintf(out, "\t%s\t%s\t%s\t%s\n", cmd->name.data,
                    sft_conf_doc_field(cmd->doc.syntax),
                    sft_conf_doc_field(cmd->doc.dflt),
                    sft_conf_doc_field(cmd->doc.text));
        }
    }

    return fflush(out) == 0 && !ferror(out) ? SFT_OK : SFT_ERROR;
}


/* the block a protocol module's main-level directives stand in */

static const char *
sft_conf_doc_block(sft_module_t *module)
{
    switch (module->type) {
    case SFT_FTP_MODULE:
        return "ftp";
    case SFT_SFTP_MODULE:
        return "sftp";
    case SFT_HTTP_MODULE:
        return "http";
    default:
        return "protocol";
    }
}


static void
sft_conf_doc_context(sft_module_t *module, sft_uint_t type, FILE *out)
{
    sft_uint_t   i;
    const char  *sep;

    static const struct {
        sft_uint_t   flag;
        const char  *name;
    } contexts[] = {
        { SFT_MAIN_CONF, "main" },
        { SFT_EVENT_CONF, "events" },
        { SFT_PROTO_MAIN_CONF, NULL },
        { SFT_PROTO_SRV_CONF, "server" },
        { SFT_STORAGE_CONF, "storage" },
    };

    if ((type & SFT_ANY_CONF) == SFT_ANY_CONF) {
        fputs("any", out);
        return;
    }

    sep = "";

    for (i = 0; i < sft_nelems(contexts); i++) {
        if (type & contexts[i].flag) {
            fprintf(out, "%s%s", sep, contexts[i].name ? contexts[i].name
                                      : sft_conf_doc_block(module));
            sep = ", ";
        }
    }
}


/* a field as one line: missing documentation prints as an empty field */

static const char *
sft_conf_doc_field(const char *s)
{
    return (s == NULL || strpbrk(s, "\t\n") != NULL) ? "" : s;
}
