/*
 * sft_conf_file.c -- the configuration parser: tokens, blocks, include with
 * globs, directive dispatch through module tables, and the generic setters.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_suggest.h>
#include <sft_reload.h>


static sft_int_t sft_conf_read_token(sft_conf_t *cf);
static sft_int_t sft_conf_handler(sft_conf_t *cf, sft_int_t last);
static sft_str_t *sft_conf_suggest(sft_conf_t *cf, sft_suggest_t *s,
    sft_str_t *name);
static sft_int_t sft_conf_param_name(sft_conf_t *cf, sft_str_t *name);
static sft_uint_t sft_conf_param_overrides(sft_conf_t *cf, sft_str_t *name,
    char *rv);
static sft_int_t sft_conf_include_check(sft_conf_t *cf, sft_str_t *name,
    sft_conf_file_t *file);
static sft_int_t sft_conf_read_file(sft_conf_t *cf, sft_str_t *name,
    sft_conf_file_t *file);


/* the last configuration error, for the reload's outcome (sft_reload.c) */
char  sft_conf_last_error[SFT_RELOAD_ERROR_LEN];


static sft_uint_t  sft_argument_number[] = {
    SFT_CONF_NOARGS, SFT_CONF_TAKE1, SFT_CONF_TAKE2, SFT_CONF_TAKE3,
    SFT_CONF_TAKE4, SFT_CONF_TAKE5, SFT_CONF_TAKE6, SFT_CONF_TAKE7
};


static sft_command_t  sft_conf_commands[] = {

    { sft_string("include"),
      SFT_ANY_CONF|SFT_CONF_TAKE1,
      sft_conf_include,
      0,
      0,
      NULL,
      sft_command_doc("file | mask", "",
          "Read another file, or every file a glob matches, in place; at "
          "most 32 levels deep.") },

    sft_null_command
};


sft_module_t  sft_conf_module = {
    SFT_MODULE_V1,
    NULL,                                  /* module context */
    sft_conf_commands,                     /* module directives */
    SFT_CONF_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


/* "-g" directives: parsed as if they were a file named "command line" */

char *
sft_conf_param(sft_conf_t *cf)
{
    char             *rv;
    sft_str_t        *param;
    sft_conf_file_t  *conf_file;

    param = &cf->cycle->conf_param;

    if (param->len == 0) {
        return SFT_CONF_OK;
    }

    conf_file = sft_pcalloc(cf->pool, sizeof(sft_conf_file_t));
    if (conf_file == NULL) {
        return SFT_CONF_ERROR;
    }

    sft_str_set(&conf_file->name, "command line");
    conf_file->start = param->data;
    conf_file->pos = param->data;
    conf_file->end = param->data + param->len;
    conf_file->line = 1;
    conf_file->param = 1;

    cf->conf_file = conf_file;

    rv = sft_conf_parse(cf, NULL);

    cf->conf_file = NULL;

    return rv;
}


/*
 * A directive given with "-g" overrides the same single-valued directive in
 * the file: the file's one is refused as a duplicate by its handler, before
 * it changes anything, and is then skipped with a notice.  Directives that
 * may repeat (load_module, include, ...) combine.
 */

static sft_int_t
sft_conf_param_name(sft_conf_t *cf, sft_str_t *name)
{
    sft_str_t  *n;

    if (!cf->conf_file->param) {
        return SFT_OK;
    }

    if (cf->param_names == NULL) {
        cf->param_names = sft_array_create(cf->temp_pool, 4,
                                           sizeof(sft_str_t));
        if (cf->param_names == NULL) {
            return SFT_ERROR;
        }
    }

    n = sft_array_push(cf->param_names);
    if (n == NULL) {
        return SFT_ERROR;
    }

    *n = *name;

    return SFT_OK;
}


static sft_uint_t
sft_conf_param_overrides(sft_conf_t *cf, sft_str_t *name, char *rv)
{
    sft_uint_t   i;
    sft_str_t   *n;

    if (cf->conf_file->param || cf->param_names == NULL
        || strcmp(rv, "is duplicate") != 0)
    {
        return 0;
    }

    n = cf->param_names->elts;

    for (i = 0; i < cf->param_names->nelts; i++) {
        if (n[i].len == name->len
            && sft_strncmp(n[i].data, name->data, name->len) == 0)
        {
            sft_conf_log_error(SFT_LOG_NOTICE, cf, 0,
                               "\"%s\" directive is overridden by -g",
                               name->data);
            return 1;
        }
    }

    return 0;
}


char *
sft_conf_parse(sft_conf_t *cf, sft_str_t *filename)
{
    char             *rv;
    sft_int_t         rc;
    sft_conf_file_t  *prev, *conf_file;
    enum {
        parse_file = 0,
        parse_block,
        parse_param
    } type;

    prev = NULL;

    if (filename) {
        conf_file = sft_pcalloc(cf->pool, sizeof(sft_conf_file_t));
        if (conf_file == NULL) {
            return SFT_CONF_ERROR;
        }

        if (sft_conf_read_file(cf, filename, conf_file) != SFT_OK) {
            return SFT_CONF_ERROR;
        }

        prev = cf->conf_file;
        cf->conf_file = conf_file;
        type = parse_file;

    } else if (cf->conf_file->param
               && cf->conf_file->pos == cf->conf_file->start)
    {
        type = parse_param;

    } else {
        type = parse_block;
    }

    for ( ;; ) {
        rc = sft_conf_read_token(cf);

        if (rc == SFT_ERROR) {
            goto failed;
        }

        if (rc == SFT_CONF_BLOCK_DONE) {
            if (type != parse_block) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "unexpected \"}\"");
                goto failed;
            }
            goto done;
        }

        if (rc == SFT_CONF_FILE_DONE) {
            if (type == parse_block) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "unexpected end of file, expecting \"}\"");
                goto failed;
            }
            goto done;
        }

        /* rc == SFT_OK || rc == SFT_CONF_BLOCK_START */

        if (cf->handler) {
            if (rc == SFT_CONF_BLOCK_START) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "unexpected \"{\"");
                goto failed;
            }

            rv = (*cf->handler)(cf, NULL, cf->handler_conf);

            if (rv == SFT_CONF_OK) {
                continue;
            }

            if (rv != SFT_CONF_ERROR) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "%s", rv);
            }

            goto failed;
        }

        if (sft_conf_handler(cf, rc) == SFT_ERROR) {
            goto failed;
        }
    }

failed:

    rc = SFT_ERROR;
    goto end;

done:

    rc = SFT_OK;

end:

    if (filename) {
        cf->conf_file = prev;
    }

    return (rc == SFT_OK) ? SFT_CONF_OK : SFT_CONF_ERROR;
}


/*
 * The whole of a regular file of at most "max" bytes, NUL-terminated,
 * from "pool"; NULL with the error logged.
 */

u_char *
sft_conf_load_file(sft_conf_t *cf, sft_str_t *name, size_t max,
    sft_pool_t *pool, size_t *len)
{
    int           fd;
    u_char       *buf;
    ssize_t       n;
    struct stat   st;

    fd = open((char *) name->data, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, sft_errno,
                           "open() \"%s\" failed", name->data);
        return NULL;
    }

    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)
        || (size_t) st.st_size > max)
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "\"%s\" is not a regular file of at most %zu bytes",
                           name->data, max);
        close(fd);
        return NULL;
    }

    buf = sft_pnalloc(pool, st.st_size + 1);
    if (buf == NULL) {
        close(fd);
        return NULL;
    }

    n = read(fd, buf, st.st_size);
    close(fd);

    if (n != st.st_size) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, sft_errno,
                           "read() \"%s\" failed", name->data);
        return NULL;
    }

    buf[n] = '\0';
    *len = n;

    return buf;
}


/*
 * A file that includes itself, directly or through others, would recurse
 * until the stack runs out: the chain of including files is checked by
 * identity (device and inode, whatever the path says) and bounded in depth.
 */

static sft_int_t
sft_conf_include_check(sft_conf_t *cf, sft_str_t *name, sft_conf_file_t *file)
{
    sft_uint_t        depth;
    struct stat       st;
    sft_conf_file_t  *f;

    if (stat((char *) name->data, &st) == -1) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, sft_errno,
                           "stat() \"%s\" failed", name->data);
        return SFT_ERROR;
    }

    file->parent = cf->conf_file;
    file->dev = st.st_dev;
    file->ino = st.st_ino;

    depth = 0;

    for (f = file->parent; f; f = f->parent) {
        if (!f->param && f->dev == st.st_dev && f->ino == st.st_ino) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "include of \"%s\" makes a loop: it is "
                               "already being read", name->data);
            return SFT_ERROR;
        }

        if (++depth >= SFT_CONF_MAX_INCLUDE_DEPTH) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "includes nested deeper than %d levels",
                               SFT_CONF_MAX_INCLUDE_DEPTH);
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


static sft_int_t
sft_conf_read_file(sft_conf_t *cf, sft_str_t *name, sft_conf_file_t *file)
{
    u_char           *buf;
    size_t            n;
    sft_conf_dump_t  *dump;

    buf = sft_conf_load_file(cf, name, SFT_CONF_MAX_FILE_SIZE,
                             cf->cycle->pool, &n);
    if (buf == NULL) {
        return SFT_ERROR;
    }

    if (sft_conf_include_check(cf, name, file) != SFT_OK) {
        return SFT_ERROR;
    }

    file->name = *name;
    file->start = buf;
    file->pos = buf;
    file->end = buf + n;
    file->line = 1;

    dump = sft_array_push(&cf->cycle->config_dump);
    if (dump == NULL) {
        return SFT_ERROR;
    }

    dump->name = *name;
    dump->content.data = buf;
    dump->content.len = n;

    return SFT_OK;
}


static sft_int_t
sft_conf_handler(sft_conf_t *cf, sft_int_t last)
{
    char           *rv;
    void           *conf, **confp;
    sft_uint_t      i, found;
    sft_str_t      *name, *hint;
    sft_module_t   *module;
    sft_command_t  *cmd;
    sft_suggest_t   suggest;

    name = cf->args->elts;
    found = 0;

    for (i = 0; i < cf->cycle->modules_n; i++) {

        module = cf->cycle->modules[i];
        cmd = module->commands;

        if (cmd == NULL) {
            continue;
        }

        for ( /* void */ ; cmd->name.len; cmd++) {

            if (name->len != cmd->name.len
                || sft_strncmp(name->data, cmd->name.data, name->len) != 0)
            {
                continue;
            }

            found = 1;

            if (module->type != SFT_CONF_MODULE
                && module->type != cf->module_type)
            {
                continue;
            }

            if (!(cmd->type & cf->cmd_type)) {
                continue;
            }

            if (!(cmd->type & SFT_CONF_BLOCK) && last != SFT_OK) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "directive \"%s\" has no opening \"{\"",
                                   name->data);
                return SFT_ERROR;
            }

            if ((cmd->type & SFT_CONF_BLOCK) && last != SFT_CONF_BLOCK_START)
            {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "directive \"%s\" has no opening \"{\"",
                                   name->data);
                return SFT_ERROR;
            }

            /* is the number of arguments right? */

            if (!(cmd->type & SFT_CONF_ANY)) {

                if (cmd->type & SFT_CONF_FLAG) {
                    if (cf->args->nelts != 2) {
                        goto invalid;
                    }

                } else if (cmd->type & SFT_CONF_1MORE) {
                    if (cf->args->nelts < 2) {
                        goto invalid;
                    }

                } else if (cmd->type & SFT_CONF_2MORE) {
                    if (cf->args->nelts < 3) {
                        goto invalid;
                    }

                } else if (cf->args->nelts > SFT_CONF_MAX_ARGS) {
                    goto invalid;

                } else if (!(cmd->type
                             & sft_argument_number[cf->args->nelts - 1]))
                {
                    goto invalid;
                }
            }

            /* find the configuration the directive fills */

            conf = NULL;

            if (cmd->type & SFT_DIRECT_CONF) {
                conf = ((void **) cf->ctx)[module->index];

            } else if (cmd->type & SFT_MAIN_CONF) {
                conf = &(((void **) cf->ctx)[module->index]);

            } else if (cf->ctx) {
                confp = *(void **) ((char *) cf->ctx + cmd->conf);

                if (confp) {
                    conf = confp[module->ctx_index];
                }
            }

            rv = cmd->set(cf, cmd, conf);

            if (rv == SFT_CONF_OK) {
                return sft_conf_param_name(cf, name);
            }

            if (rv == SFT_CONF_ERROR) {
                return SFT_ERROR;
            }

            if (sft_conf_param_overrides(cf, name, rv)) {
                return SFT_OK;
            }

            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "\"%s\" directive %s", name->data, rv);

            return SFT_ERROR;
        }
    }

    if (found) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "\"%s\" directive is not allowed here",
                           name->data);
        return SFT_ERROR;
    }

    hint = sft_conf_suggest(cf, &suggest, name);

    if (hint) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "unknown directive \"%s\", did you mean \"%.*s\"?",
                           name->data, SFT_STR_FMT(hint));
        return SFT_ERROR;
    }

    sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                       "unknown directive \"%s\"", name->data);

    return SFT_ERROR;

invalid:

    sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                       "invalid number of arguments in \"%s\" directive",
                       name->data);

    return SFT_ERROR;
}


/* the directive valid here that an unknown one is closest to, if any */

static sft_str_t *
sft_conf_suggest(sft_conf_t *cf, sft_suggest_t *s, sft_str_t *name)
{
    sft_uint_t      i;
    sft_module_t   *module;
    sft_command_t  *cmd;

    sft_suggest_init(s, name);

    for (i = 0; i < cf->cycle->modules_n; i++) {
        module = cf->cycle->modules[i];

        if (module->commands == NULL
            || (module->type != SFT_CONF_MODULE
                && module->type != cf->module_type))
        {
            continue;
        }

        for (cmd = module->commands; cmd->name.len; cmd++) {
            if (cmd->type & cf->cmd_type) {
                sft_suggest_add(s, &cmd->name);
            }
        }
    }

    return sft_suggest_best(s);
}


/*
 * Reads one directive's words into cf->args; returns what ended it:
 * SFT_OK (";"), SFT_CONF_BLOCK_START ("{"), SFT_CONF_BLOCK_DONE ("}"),
 * SFT_CONF_FILE_DONE or SFT_ERROR.
 */

static sft_int_t
sft_conf_read_token(sft_conf_t *cf)
{
    u_char           ch, quote, *dst;
    sft_str_t       *word;
    sft_conf_file_t *f;

    f = cf->conf_file;
    cf->args->nelts = 0;

    for ( ;; ) {

        /* skip whitespace and comments between words */

        while (f->pos < f->end) {
            ch = *f->pos;

            if (ch == '\n') {
                f->line++;
                f->pos++;

            } else if (ch == ' ' || ch == '\t' || ch == '\r') {
                f->pos++;

            } else if (ch == '#') {
                while (f->pos < f->end && *f->pos != '\n') {
                    f->pos++;
                }

            } else {
                break;
            }
        }

        if (f->pos >= f->end) {
            if (cf->args->nelts > 0) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "unexpected end of file, expecting \";\" "
                                   "or \"}\"");
                return SFT_ERROR;
            }

            return SFT_CONF_FILE_DONE;
        }

        ch = *f->pos;

        if (ch == ';' || ch == '{') {
            f->pos++;

            if (cf->args->nelts == 0) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "unexpected \"%c\"", ch);
                return SFT_ERROR;
            }

            return (ch == ';') ? SFT_OK : SFT_CONF_BLOCK_START;
        }

        if (ch == '}') {
            f->pos++;

            if (cf->args->nelts != 0) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "unexpected \"}\"");
                return SFT_ERROR;
            }

            return SFT_CONF_BLOCK_DONE;
        }

        word = sft_array_push(cf->args);
        if (word == NULL) {
            return SFT_ERROR;
        }

        /* a word never grows beyond the rest of the file */

        word->data = sft_pnalloc(cf->pool, f->end - f->pos + 1);
        if (word->data == NULL) {
            return SFT_ERROR;
        }

        dst = word->data;

        if (ch == '"' || ch == '\'') {
            quote = ch;
            f->pos++;

            for ( ;; ) {
                if (f->pos >= f->end) {
                    sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                       "unexpected end of file in a quoted "
                                       "string");
                    return SFT_ERROR;
                }

                ch = *f->pos++;

                if (ch == quote) {
                    break;
                }

                if (ch == '\n') {
                    f->line++;
                }

                if (ch == '\\' && f->pos < f->end) {
                    ch = *f->pos++;

                    switch (ch) {
                    case 'n': ch = '\n'; break;
                    case 't': ch = '\t'; break;
                    case 'r': ch = '\r'; break;
                    case '\n': f->line++; break;
                    default: break;
                    }
                }

                *dst++ = ch;
            }

            if (f->pos < f->end) {
                ch = *f->pos;

                if (ch != ' ' && ch != '\t' && ch != '\r' && ch != '\n'
                    && ch != ';' && ch != '{')
                {
                    sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                       "unexpected \"%c\" after a quoted "
                                       "string", ch);
                    return SFT_ERROR;
                }
            }

        } else {
            while (f->pos < f->end) {
                ch = *f->pos;

                if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'
                    || ch == ';' || ch == '{' || ch == '}')
                {
                    break;
                }

                if (ch == '\\' && f->pos + 1 < f->end) {
                    f->pos++;
                    ch = *f->pos;

                    if (ch == '\n') {
                        f->line++;
                    }
                }

                *dst++ = ch;
                f->pos++;
            }
        }

        *dst = '\0';
        word->len = dst - word->data;

        if (cf->args->nelts > 64) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "too many arguments");
            return SFT_ERROR;
        }
    }
}


char *
sft_conf_include(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    char       *rv;
    size_t      i;
    glob_t      gl;
    sft_str_t  *value, file, name;
    int         rc;

    (void) cmd;
    (void) conf;

    value = cf->args->elts;
    file = value[1];

    if (sft_conf_full_name(cf->cycle, &file) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    if (strpbrk((char *) file.data, "*?[") == NULL) {
        return sft_conf_parse(cf, &file);
    }

    rc = glob((char *) file.data, 0, NULL, &gl);

    if (rc == GLOB_NOMATCH) {
        return SFT_CONF_OK;
    }

    if (rc != 0) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, sft_errno,
                           "glob() \"%s\" failed", file.data);
        return SFT_CONF_ERROR;
    }

    rv = SFT_CONF_OK;

    for (i = 0; i < gl.gl_pathc; i++) {
        name.len = strlen(gl.gl_pathv[i]);
        name.data = sft_pnalloc(cf->pool, name.len + 1);

        if (name.data == NULL) {
            rv = SFT_CONF_ERROR;
            break;
        }

        sft_memcpy(name.data, gl.gl_pathv[i], name.len + 1);

        rv = sft_conf_parse(cf, &name);

        if (rv != SFT_CONF_OK) {
            break;
        }
    }

    globfree(&gl);

    return rv;
}


/* makes a relative path absolute against the prefix; NUL-terminated */

sft_int_t
sft_conf_full_name(sft_cycle_t *cycle, sft_str_t *name)
{
    u_char     *p;
    sft_str_t  *prefix;

    if (name->len && name->data[0] == '/') {
        p = sft_pnalloc(cycle->pool, name->len + 1);
        if (p == NULL) {
            return SFT_ERROR;
        }

        sft_memcpy(p, name->data, name->len);
        p[name->len] = '\0';
        name->data = p;
        return SFT_OK;
    }

    prefix = &cycle->prefix;

    p = sft_pnalloc(cycle->pool, prefix->len + name->len + 1);
    if (p == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(p, prefix->data, prefix->len);
    sft_memcpy(p + prefix->len, name->data, name->len);
    p[prefix->len + name->len] = '\0';

    name->len += prefix->len;
    name->data = p;

    return SFT_OK;
}


void
sft_conf_log_error(sft_uint_t level, sft_conf_t *cf, sft_err_t err,
    const char *fmt, ...)
{
    u_char   *p, *last;
    size_t    len;
    va_list   args;
    u_char    errstr[SFT_MAX_ERROR_STR];

    last = errstr + SFT_MAX_ERROR_STR - 1;

    if (cf->conf_file) {
        p = sft_slprintf(errstr, last, "%.*s:%lu: ",
                         SFT_STR_FMT(&cf->conf_file->name),
                         (unsigned long) cf->conf_file->line);
    } else {
        p = errstr;
    }

    va_start(args, fmt);
    p = sft_vslprintf(p, last, fmt, args);
    va_end(args);

    *p = '\0';

    if (level == SFT_LOG_EMERG) {
        len = sft_min((size_t) (p - errstr), SFT_RELOAD_ERROR_LEN - 1);
        sft_memcpy(sft_conf_last_error, errstr, len);
        sft_conf_last_error[len] = '\0';
    }

    sft_log_error(level, cf->log, err, "%s", errstr);
}


/* the generic setters */

#define sft_conf_slot(conf, cmd, type)                                       \
    ((type *) ((char *) conf + cmd->offset))


char *
sft_conf_set_flag_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t   *value;
    sft_flag_t  *fp;

    fp = sft_conf_slot(conf, cmd, sft_flag_t);

    if (*fp != SFT_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (sft_str_eq(&value[1], "on")) {
        *fp = 1;

    } else if (sft_str_eq(&value[1], "off")) {
        *fp = 0;

    } else {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "invalid value \"%s\" in \"%s\" directive, "
                           "it must be \"on\" or \"off\"",
                           value[1].data, cmd->name.data);
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


char *
sft_conf_set_str_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t  *field, *value;

    field = sft_conf_slot(conf, cmd, sft_str_t);

    if (field->data) {
        return "is duplicate";
    }

    value = cf->args->elts;
    *field = value[1];

    return SFT_CONF_OK;
}


char *
sft_conf_set_path_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t  *field;

    if (sft_conf_set_str_slot(cf, cmd, conf) != SFT_CONF_OK) {
        return "is duplicate";
    }

    field = sft_conf_slot(conf, cmd, sft_str_t);

    if (sft_conf_full_name(cf->cycle, field) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


char *
sft_conf_set_num_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_int_t  *np;
    sft_str_t  *value;

    np = sft_conf_slot(conf, cmd, sft_int_t);

    if (*np != SFT_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;
    *np = sft_atoi(value[1].data, value[1].len);

    if (*np == SFT_ERROR) {
        return "invalid number";
    }

    return SFT_CONF_OK;
}


char *
sft_conf_set_size_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    size_t     *sp;
    sft_str_t  *value;

    sp = sft_conf_slot(conf, cmd, size_t);

    if (*sp != SFT_CONF_UNSET_SIZE) {
        return "is duplicate";
    }

    value = cf->args->elts;
    *sp = sft_parse_size(&value[1]);

    if (*sp == (size_t) SFT_ERROR) {
        return "invalid value";
    }

    return SFT_CONF_OK;
}


char *
sft_conf_set_off_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    off_t      *op;
    sft_str_t  *value;

    op = sft_conf_slot(conf, cmd, off_t);

    if (*op != SFT_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;
    *op = sft_parse_offset(&value[1]);

    if (*op == (off_t) SFT_ERROR) {
        return "invalid value";
    }

    return SFT_CONF_OK;
}


char *
sft_conf_set_msec_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_msec_t  *msp;
    sft_str_t   *value;

    msp = sft_conf_slot(conf, cmd, sft_msec_t);

    if (*msp != SFT_CONF_UNSET_MSEC) {
        return "is duplicate";
    }

    value = cf->args->elts;
    *msp = sft_parse_time(&value[1], 0);

    if (*msp == (sft_msec_t) SFT_ERROR) {
        return "invalid value";
    }

    return SFT_CONF_OK;
}


char *
sft_conf_set_sec_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_int_t  *sp;
    sft_str_t  *value;

    sp = sft_conf_slot(conf, cmd, sft_int_t);

    if (*sp != SFT_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;
    *sp = sft_parse_time(&value[1], 1);

    if (*sp == SFT_ERROR) {
        return "invalid value";
    }

    return SFT_CONF_OK;
}


/* cmd->post points at a sft_conf_enum_t list ending with an empty name */

char *
sft_conf_set_enum_slot(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_uint_t       *np, i;
    sft_str_t        *value;
    sft_conf_enum_t  *e;

    np = sft_conf_slot(conf, cmd, sft_uint_t);

    if (*np != SFT_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;
    e = cmd->post;

    for (i = 0; e[i].name.len != 0; i++) {
        if (e[i].name.len == value[1].len
            && sft_strncmp(e[i].name.data, value[1].data, value[1].len) == 0)
        {
            *np = e[i].value;
            return SFT_CONF_OK;
        }
    }

    sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                       "invalid value \"%s\" in \"%s\" directive",
                       value[1].data, cmd->name.data);

    return SFT_CONF_ERROR;
}
