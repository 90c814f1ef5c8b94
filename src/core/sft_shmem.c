/*
 * sft_shmem.c -- shared memory zones: declaration during configuration and
 * anonymous shared mappings that forked workers inherit.
 */

#include <sft_config.h>
#include <sft_core.h>


sft_shm_zone_t *
sft_shared_memory_add(sft_cycle_t *cycle, sft_str_t *name, size_t size,
    void *tag)
{
    sft_uint_t       i;
    sft_shm_zone_t  *zone, **zones;

    zones = cycle->shared_memory.elts;

    for (i = 0; i < cycle->shared_memory.nelts; i++) {
        zone = zones[i];

        if (zone->shm.name.len != name->len
            || sft_strncmp(zone->shm.name.data, name->data, name->len) != 0)
        {
            continue;
        }

        if (zone->tag != tag) {
            sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                          "the shared memory zone \"%.*s\" is already "
                          "declared for a different use", SFT_STR_FMT(name));
            return NULL;
        }

        if (size && size != zone->shm.size) {
            sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                          "the size %zu of shared memory zone \"%.*s\" "
                          "conflicts with already declared size %zu",
                          size, SFT_STR_FMT(name), zone->shm.size);
            return NULL;
        }

        return zone;
    }

    zone = sft_pcalloc(cycle->pool, sizeof(sft_shm_zone_t));
    if (zone == NULL) {
        return NULL;
    }

    zones = sft_array_push(&cycle->shared_memory);
    if (zones == NULL) {
        return NULL;
    }

    *zones = zone;

    zone->shm.log = cycle->log;
    zone->shm.size = size;
    zone->shm.name = *name;
    zone->tag = tag;

    return zone;
}


sft_int_t
sft_shm_alloc(sft_shm_t *shm)
{
    shm->addr = mmap(NULL, shm->size, PROT_READ | PROT_WRITE,
                     MAP_ANONYMOUS | MAP_SHARED, -1, 0);

    if (shm->addr == MAP_FAILED) {
        sft_log_error(SFT_LOG_EMERG, shm->log, sft_errno,
                      "mmap(MAP_ANONYMOUS|MAP_SHARED, %zu) failed for zone "
                      "\"%.*s\"", shm->size, SFT_STR_FMT(&shm->name));
        shm->addr = NULL;
        return SFT_ERROR;
    }

    return SFT_OK;
}


void
sft_shm_free(sft_shm_t *shm)
{
    if (shm->addr && munmap(shm->addr, shm->size) == -1) {
        sft_log_error(SFT_LOG_ALERT, shm->log, sft_errno,
                      "munmap(%p, %zu) failed", shm->addr, shm->size);
    }

    shm->addr = NULL;
}
