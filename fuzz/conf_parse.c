/*
 * conf_parse.c -- libFuzzer target for the configuration file parser: the
 * input is a configuration file, parsed with a stub module whose
 * directives cover every argument count, the generic setters, nested
 * blocks, a block of free-form entries (cf->handler) and "include",
 * confined to a temporary directory of a few prepared files.  Checked:
 * every error names the line the parser stands on (1 + the newlines before
 * it in the file it reads), a directive never has more than 64 words, a
 * word is NUL-terminated and no longer than the file, nesting is bounded;
 * ASan finds reads out of bounds and leaks.
 */

#include <sft_config.h>
#include <sft_core.h>

#include <assert.h>

#include "fuzz_log.h"


#define FUZZ_MAX_DEPTH  8
#define FUZZ_POOL_SIZE  1024


typedef struct {
    sft_flag_t         flag;
    sft_str_t          str;
    sft_str_t          path;
    sft_int_t          num;
    size_t             size;
    off_t              off;
    sft_msec_t         msec;
    sft_int_t          sec;
    sft_uint_t         kind;
    sft_uint_t         depth;
} fuzz_conf_t;


static char *fuzz_words(sft_conf_t *cf, sft_command_t *cmd, void *conf);
static char *fuzz_block(sft_conf_t *cf, sft_command_t *cmd, void *conf);
static char *fuzz_map(sft_conf_t *cf, sft_command_t *cmd, void *conf);
static char *fuzz_include(sft_conf_t *cf, sft_command_t *cmd, void *conf);


static sft_conf_enum_t  fuzz_kinds[] = {
    { sft_string("one"), 1 },
    { sft_string("two"), 2 },
    { sft_null_string, 0 }
};


#define FUZZ_MAIN  (SFT_MAIN_CONF|SFT_DIRECT_CONF)
#define FUZZ_ANY   (SFT_ANY_CONF|SFT_DIRECT_CONF)
#define FUZZ_DOC   sft_command_doc("any", "none", "A stub the fuzzer drives.")

static sft_command_t  fuzz_commands[] = {

    { sft_string("flag"), FUZZ_MAIN|SFT_CONF_FLAG, sft_conf_set_flag_slot,
      0, offsetof(fuzz_conf_t, flag), NULL,
      FUZZ_DOC },

    { sft_string("str"), FUZZ_MAIN|SFT_CONF_TAKE1, sft_conf_set_str_slot,
      0, offsetof(fuzz_conf_t, str), NULL,
      FUZZ_DOC },

    { sft_string("path"), FUZZ_ANY|SFT_CONF_TAKE1, sft_conf_set_path_slot,
      0, offsetof(fuzz_conf_t, path), NULL,
      FUZZ_DOC },

    { sft_string("num"), FUZZ_MAIN|SFT_CONF_TAKE1, sft_conf_set_num_slot,
      0, offsetof(fuzz_conf_t, num), NULL,
      FUZZ_DOC },

    { sft_string("size"), FUZZ_ANY|SFT_CONF_TAKE1, sft_conf_set_size_slot,
      0, offsetof(fuzz_conf_t, size), NULL,
      FUZZ_DOC },

    { sft_string("off"), FUZZ_MAIN|SFT_CONF_TAKE1, sft_conf_set_off_slot,
      0, offsetof(fuzz_conf_t, off), NULL,
      FUZZ_DOC },

    { sft_string("msec"), FUZZ_ANY|SFT_CONF_TAKE1, sft_conf_set_msec_slot,
      0, offsetof(fuzz_conf_t, msec), NULL,
      FUZZ_DOC },

    { sft_string("sec"), FUZZ_MAIN|SFT_CONF_TAKE1, sft_conf_set_sec_slot,
      0, offsetof(fuzz_conf_t, sec), NULL,
      FUZZ_DOC },

    { sft_string("kind"), FUZZ_MAIN|SFT_CONF_TAKE1, sft_conf_set_enum_slot,
      0, offsetof(fuzz_conf_t, kind), fuzz_kinds,
      FUZZ_DOC },

    { sft_string("take"), FUZZ_ANY|SFT_CONF_TAKE123, fuzz_words,
      0, 0, NULL,
      FUZZ_DOC },

    { sft_string("more"), FUZZ_ANY|SFT_CONF_2MORE, fuzz_words,
      0, 0, NULL,
      FUZZ_DOC },

    { sft_string("words"), FUZZ_ANY|SFT_CONF_ANY, fuzz_words,
      0, 0, NULL,
      FUZZ_DOC },

    { sft_string("block"), FUZZ_ANY|SFT_CONF_BLOCK|SFT_CONF_ANY, fuzz_block,
      0, 0, NULL,
      FUZZ_DOC },

    { sft_string("map"), FUZZ_MAIN|SFT_CONF_BLOCK|SFT_CONF_NOARGS, fuzz_map,
      0, 0, NULL,
      FUZZ_DOC },

    { sft_string("include"), FUZZ_ANY|SFT_CONF_TAKE1, fuzz_include,
      0, 0, NULL,
      FUZZ_DOC },

    sft_null_command
};


static sft_module_t  fuzz_module = {
    SFT_MODULE_V1,
    NULL,
    fuzz_commands,
    SFT_CORE_MODULE,
    NULL, NULL, NULL, NULL, NULL,
    SFT_MODULE_V1_PADDING
};

static sft_module_t  *fuzz_modules[] = { &fuzz_module };


/* the files "include" may read, beside the input, in the directory */
static const struct {
    const char  *name;
    const char  *text;
} fuzz_files[] = {
    { "a.conf", "str included;\nsize 1k;\n" },
    { "bad.conf", "# a comment\n\nflag maybe;\n" },
    { "loop.conf", "words one\n  two;\ninclude loop.conf;\n" },
    { "nested.conf", "block {\n    include a.conf;\n}\n" },
    { "open.conf", "block {\n    msec 5s;\n" },
};

/* in memory where there is /dev/shm: a file is rewritten for every input */
static const char     *fuzz_tmp[] = { "/dev/shm", "/tmp" };
static char            fuzz_dir[64];
static sft_str_t       fuzz_prefix;
static sft_str_t       fuzz_input;
static sft_conf_t     *fuzz_cf;


static void
fuzz_check_line(sft_conf_file_t *f)
{
    sft_uint_t     line;
    const u_char  *p;

    assert(f != NULL);
    assert(f->pos >= f->start && f->pos <= f->end);

    line = 1;

    for (p = f->start; p < f->pos; p++) {
        line += (*p == '\n');
    }

    assert(f->line == line);
}


static u_char *
fuzz_log_handler(sft_log_t *log, u_char *buf, size_t len)
{
    fuzz_check_line(fuzz_cf->conf_file);

    return buf;
}


static void
fuzz_check_words(sft_conf_t *cf)
{
    size_t            max;
    sft_uint_t        i;
    sft_str_t        *w;
    sft_conf_file_t  *f;

    f = cf->conf_file;
    max = f->end - f->start;
    w = cf->args->elts;

    assert(cf->args->nelts >= 1 && cf->args->nelts <= 64);

    for (i = 0; i < cf->args->nelts; i++) {
        assert(w[i].len <= max && w[i].data[w[i].len] == '\0');
    }
}


static char *
fuzz_words(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    fuzz_check_words(cf);

    return SFT_CONF_OK;
}


static char *
fuzz_map_entry(sft_conf_t *cf, sft_command_t *dummy, void *conf)
{
    fuzz_check_words(cf);

    return (cf->args->nelts > 2) ? "takes a name and a value" : SFT_CONF_OK;
}


static char *
fuzz_block(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    char         *rv;
    sft_uint_t    cmd_type;
    fuzz_conf_t  *fc;

    fuzz_check_words(cf);

    fc = conf;

    if (fc->depth == FUZZ_MAX_DEPTH) {
        return "is nested too deep";
    }

    fc->depth++;
    cmd_type = cf->cmd_type;
    cf->cmd_type = SFT_PROTO_MAIN_CONF;

    rv = sft_conf_parse(cf, NULL);

    cf->cmd_type = cmd_type;
    fc->depth--;

    return rv;
}


static char *
fuzz_map(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    char  *rv;

    fuzz_check_words(cf);

    cf->handler = fuzz_map_entry;
    rv = sft_conf_parse(cf, NULL);
    cf->handler = NULL;

    return rv;
}


/* only names in the directory: no absolute path, no "..", no glob class */

static char *
fuzz_include(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t  *value;

    fuzz_check_words(cf);

    value = cf->args->elts;

    if (value[1].len == 0 || value[1].data[0] == '/'
        || strstr((char *) value[1].data, "..") != NULL
        || strpbrk((char *) value[1].data, "[\\") != NULL)
    {
        return "is outside the test directory";
    }

    return sft_conf_include(cf, cmd, conf);
}


static void
fuzz_cleanup(void)
{
    size_t  i;
    char    name[sizeof(fuzz_dir) + 32];

    for (i = 0; i < sft_nelems(fuzz_files); i++) {
        snprintf(name, sizeof(name), "%s/%s", fuzz_dir, fuzz_files[i].name);
        unlink(name);
    }

    unlink((char *) fuzz_input.data);
    rmdir(fuzz_dir);
}


static void
fuzz_write(const char *name, const uint8_t *data, size_t size)
{
    int  fd;

    fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert(fd != -1);
    assert(size == 0 || write(fd, data, size) == (ssize_t) size);
    close(fd);
}


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    size_t  i;
    char    name[sizeof(fuzz_dir) + 32];

    fuzz_module.index = 0;

    for (i = 0; i < sft_nelems(fuzz_tmp); i++) {
        snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/siftpd-fuzz-conf-XXXXXX",
                 fuzz_tmp[i]);

        if (mkdtemp(fuzz_dir) != NULL) {
            break;
        }
    }

    assert(i < sft_nelems(fuzz_tmp));

    atexit(fuzz_cleanup);

    for (i = 0; i < sft_nelems(fuzz_files); i++) {
        snprintf(name, sizeof(name), "%s/%s", fuzz_dir, fuzz_files[i].name);
        fuzz_write(name, (const uint8_t *) fuzz_files[i].text,
                   strlen(fuzz_files[i].text));
    }

    snprintf(name, sizeof(name), "%s/", fuzz_dir);
    fuzz_prefix.data = (u_char *) strdup(name);
    assert(fuzz_prefix.data != NULL);
    fuzz_prefix.len = strlen(name);

    snprintf(name, sizeof(name), "%s/input.conf", fuzz_dir);
    fuzz_input.data = (u_char *) strdup(name);
    assert(fuzz_input.data != NULL);
    fuzz_input.len = strlen(name);

    fuzz_log_init(fuzz_log_handler);

    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char         *rv;
    void         *ctx[1];
    sft_conf_t    cf;
    sft_cycle_t   cycle;
    fuzz_conf_t   fc;

    fuzz_write((char *) fuzz_input.data, data, size);

    sft_memzero(&cycle, sizeof(sft_cycle_t));
    sft_memzero(&cf, sizeof(sft_conf_t));

    cycle.pool = sft_create_pool(FUZZ_POOL_SIZE, &fuzz_log);
    assert(cycle.pool != NULL);
    cycle.log = &fuzz_log;
    cycle.modules = fuzz_modules;
    cycle.modules_n = sft_nelems(fuzz_modules);

    assert(sft_array_init(&cycle.config_dump, cycle.pool, 1,
                          sizeof(sft_conf_dump_t)) == SFT_OK);

    cycle.prefix = fuzz_prefix;

    fc.flag = SFT_CONF_UNSET;
    sft_str_null(&fc.str);
    sft_str_null(&fc.path);
    fc.num = SFT_CONF_UNSET;
    fc.size = SFT_CONF_UNSET_SIZE;
    fc.off = SFT_CONF_UNSET;
    fc.msec = SFT_CONF_UNSET_MSEC;
    fc.sec = SFT_CONF_UNSET;
    fc.kind = SFT_CONF_UNSET_UINT;
    fc.depth = 0;
    ctx[0] = &fc;

    cf.args = sft_array_create(cycle.pool, 10, sizeof(sft_str_t));
    cf.temp_pool = sft_create_pool(FUZZ_POOL_SIZE, &fuzz_log);
    assert(cf.args != NULL && cf.temp_pool != NULL);
    cf.ctx = ctx;
    cf.cycle = &cycle;
    cf.pool = cycle.pool;
    cf.log = &fuzz_log;
    cf.module_type = SFT_CORE_MODULE;
    cf.cmd_type = SFT_MAIN_CONF;

    fuzz_cf = &cf;

    rv = sft_conf_parse(&cf, &fuzz_input);

    assert(rv == SFT_CONF_OK || rv == SFT_CONF_ERROR);
    assert(cf.conf_file == NULL && cf.handler == NULL && fc.depth == 0);
    assert(cf.cmd_type == SFT_MAIN_CONF);

    if (rv == SFT_CONF_OK) {
        /* what the setters stored is what they accept */
        assert(fc.flag == SFT_CONF_UNSET || fc.flag == 0 || fc.flag == 1);
        assert(fc.num == SFT_CONF_UNSET || fc.num >= 0);
        assert(fc.kind == SFT_CONF_UNSET_UINT || fc.kind == 1 || fc.kind == 2);
        assert(fc.path.data == NULL
               || (fc.path.data[0] == '/'
                   && fc.path.data[fc.path.len] == '\0'));
    }

    fuzz_cf = NULL;

    sft_destroy_pool(cf.temp_pool);
    sft_destroy_pool(cycle.pool);

    return 0;
}
