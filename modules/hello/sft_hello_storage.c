/*
 * sft_hello_storage.c -- an example storage driver in a module: "driver
 * hello_flat;" keeps its files as the posix driver does (its "root", its
 * operations, its sweep) but declares none of the optional capabilities:
 * no renaming, links, modes, writes at an offset, appending, descriptors
 * or server-side copy, as an object store has none.  The protocols then
 * refuse what needs one before any work, with a reply that names it, and
 * move the data through the pooled copy.  docs/storage.md describes what a
 * driver of its own fills in.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_storage.h>


static char *sft_hello_storage_init_conf(sft_conf_t *cf, sft_storage_t *st,
    void *conf);


/*
 * blocking: its operations run on the storage's thread pool; the
 * operations themselves are the posix driver's, taken at configuration
 * (base: that driver's "root" and instance serve this one's storages)
 */

static sft_storage_driver_t  sft_hello_flat_driver = {
    sft_string("hello_flat"),
    1,
    0,
    { NULL },
    NULL,
    NULL,
    NULL,
    &sft_storage_posix_driver,
    NULL
};


/* its directives are the posix driver's: "root", "fsync" */

static sft_command_t  sft_hello_storage_commands[] = {
    sft_null_command
};


static sft_storage_module_t  sft_hello_storage_module_ctx = {
    &sft_hello_flat_driver,
    NULL,
    sft_hello_storage_init_conf
};


sft_module_t  sft_hello_storage_module = {
    SFT_MODULE_V1,
    &sft_hello_storage_module_ctx,         /* module context */
    sft_hello_storage_commands,            /* module directives */
    SFT_STORAGE_MODULE,                    /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


/* a storage block of any driver: ours take the posix operations */

static char *
sft_hello_storage_init_conf(sft_conf_t *cf, sft_storage_t *st, void *conf)
{
    sft_storage_driver_t  *drv = &sft_hello_flat_driver;

    (void) cf;
    (void) conf;

    if (st->driver != drv) {
        return SFT_CONF_OK;
    }

    sft_memcpy(drv->ops, drv->base->ops, sizeof(drv->ops));
    drv->sweep = drv->base->sweep;

    return SFT_CONF_OK;
}
