/*
 * sft_reload.c -- the "sft_reload" zone: the number of reload attempts the
 * master made, and the error of the last one that failed (the last
 * configuration error logged, "FILE:LINE: message").  Its size never
 * changes, so every reload keeps it and old and new workers read the same
 * page; the master alone writes, the count last.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_reload.h>


typedef struct {
    uint64_t          attempts;
    uint32_t          failed;
    char              error[SFT_RELOAD_ERROR_LEN];
} sft_reload_shm_t;


static sft_reload_shm_t  *sft_reload;

static sft_str_t  sft_reload_zone_name = sft_string("sft_reload");


static sft_int_t
sft_reload_zone_init(sft_shm_zone_t *zone, void *old_data)
{
    zone->data = old_data ? old_data : zone->shm.addr;
    sft_reload = zone->data;

    return SFT_OK;
}


sft_int_t
sft_reload_zone_add(sft_cycle_t *cycle)
{
    sft_shm_zone_t  *zone;

    zone = sft_shared_memory_add(cycle, &sft_reload_zone_name,
                                 sft_align(sizeof(sft_reload_shm_t), 4096),
                                 &sft_reload_zone_name);
    if (zone == NULL) {
        return SFT_ERROR;
    }

    zone->init = sft_reload_zone_init;

    return SFT_OK;
}


void
sft_reload_done(const char *error)
{
    if (sft_reload == NULL) {
        return;
    }

    sft_reload->failed = (error != NULL);

    if (error) {
        (void) snprintf(sft_reload->error, SFT_RELOAD_ERROR_LEN, "%s",
                        error[0] ? error : "the configuration did not load, "
                                           "see the error log");
    }

    __atomic_add_fetch(&sft_reload->attempts, 1, __ATOMIC_RELEASE);
}


uint64_t
sft_reload_attempts(void)
{
    return sft_reload ? __atomic_load_n(&sft_reload->attempts,
                                        __ATOMIC_ACQUIRE)
                      : 0;
}


/* SFT_AGAIN: none since seen; SFT_OK: it loaded; SFT_ERROR: error set */

sft_int_t
sft_reload_result(uint64_t seen, char *error)
{
    if (sft_reload_attempts() == seen) {
        return SFT_AGAIN;
    }

    if (!sft_reload->failed) {
        return SFT_OK;
    }

    sft_memcpy(error, sft_reload->error, SFT_RELOAD_ERROR_LEN);
    error[SFT_RELOAD_ERROR_LEN - 1] = '\0';

    return SFT_ERROR;
}
