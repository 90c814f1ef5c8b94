/*
 * sft_module.c -- the module registry of a cycle: built-in modules from
 * objs/sft_modules.c plus those added by load_module, with the version and
 * signature check that keeps a mismatched shared object out.
 */

#include <sft_config.h>
#include <sft_core.h>


sft_uint_t  sft_max_module;
static sft_uint_t  sft_modules_n;


sft_int_t
sft_preinit_modules(void)
{
    sft_uint_t  i;

    for (i = 0; sft_modules[i]; i++) {
        sft_modules[i]->index = i;
        sft_modules[i]->name = sft_module_names[i];
    }

    sft_modules_n = i;
    sft_max_module = sft_modules_n + SFT_MAX_DYNAMIC_MODULES;

    return SFT_OK;
}


sft_int_t
sft_cycle_modules(sft_cycle_t *cycle)
{
    cycle->modules = sft_pcalloc(cycle->pool, (sft_max_module + 1)
                                              * sizeof(sft_module_t *));
    if (cycle->modules == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(cycle->modules, sft_modules,
               sft_modules_n * sizeof(sft_module_t *));

    cycle->modules_n = sft_modules_n;

    return SFT_OK;
}


sft_int_t
sft_init_modules(sft_cycle_t *cycle)
{
    sft_uint_t  i;

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->init_module) {
            if (cycle->modules[i]->init_module(cycle) != SFT_OK) {
                return SFT_ERROR;
            }
        }
    }

    return SFT_OK;
}


/*
 * Numbers the modules of one type within that type.  Built-in modules come
 * first and in a fixed order, so their numbers never change across reloads.
 */

sft_int_t
sft_count_modules(sft_cycle_t *cycle, sft_uint_t type)
{
    sft_uint_t     i, n;
    sft_module_t  *module;

    n = 0;

    for (i = 0; cycle->modules[i]; i++) {
        module = cycle->modules[i];

        if (module->type != type) {
            continue;
        }

        module->ctx_index = n++;
    }

    cycle->modules_used = 1;

    return n;
}


sft_int_t
sft_add_module(sft_conf_t *cf, sft_str_t *file, sft_module_t *module,
    char **order)
{
    sft_uint_t     i;
    sft_module_t **modules;

    (void) order;

    if (cf->cycle->modules_n >= sft_max_module) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "too many modules loaded");
        return SFT_ERROR;
    }

    if (module->version != SFT_VERSION_NUM) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "module \"%s\" version %lu instead of %d",
                           file->data, (unsigned long) module->version,
                           SFT_VERSION_NUM);
        return SFT_ERROR;
    }

    if (module->signature == NULL
        || strcmp(module->signature, SFT_MODULE_SIGNATURE) != 0)
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "module \"%s\" is not binary compatible "
                           "(signature \"%s\", expected \"%s\")",
                           file->data,
                           module->signature ? module->signature : "",
                           SFT_MODULE_SIGNATURE);
        return SFT_ERROR;
    }

    modules = cf->cycle->modules;

    for (i = 0; modules[i]; i++) {
        if (strcmp(modules[i]->name, module->name) == 0) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "module \"%s\" is already loaded",
                               module->name);
            return SFT_ERROR;
        }
    }

    module->index = cf->cycle->modules_n;
    modules[cf->cycle->modules_n++] = module;

    return SFT_OK;
}


static void
sft_unload_module(void *data)
{
    dlclose(data);
}


char *
sft_load_module(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    void                *handle;
    char               **names, **order;
    sft_str_t           *value, file;
    sft_uint_t           i;
    sft_module_t        *module, **modules;
    sft_pool_cleanup_t  *cln;

    (void) cmd;
    (void) conf;

    if (cf->cycle->modules_used) {
        return "is specified too late";
    }

    value = cf->args->elts;
    file = value[1];

    if (sft_conf_full_name(cf->cycle, &file) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    cln = sft_pool_cleanup_add(cf->cycle->pool, 0);
    if (cln == NULL) {
        return SFT_CONF_ERROR;
    }

    handle = dlopen((char *) file.data, RTLD_NOW | RTLD_GLOBAL);
    if (handle == NULL) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "dlopen() \"%s\" failed (%s)",
                           file.data, dlerror());
        return SFT_CONF_ERROR;
    }

    cln->handler = sft_unload_module;
    cln->data = handle;

    modules = dlsym(handle, "sft_dynamic_modules");
    names = dlsym(handle, "sft_dynamic_module_names");

    if (modules == NULL || names == NULL) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "\"%s\" is not a siftpd module (no "
                           "sft_dynamic_modules or sft_dynamic_module_names)",
                           file.data);
        return SFT_CONF_ERROR;
    }

    order = dlsym(handle, "sft_dynamic_module_order");

    for (i = 0; modules[i]; i++) {
        module = modules[i];
        module->name = names[i];

        if (sft_add_module(cf, &file, module, order) != SFT_OK) {
            return SFT_CONF_ERROR;
        }

        sft_log_debug(cf->log, "module: %s i:%lu", module->name,
                      (unsigned long) module->index);
    }

    return SFT_CONF_OK;
}
