/*
 * sft_shmem.h -- named shared memory zones, created by the master before it
 * forks and kept across reloads when name, size and tag are unchanged.
 */

#ifndef _SFT_SHMEM_H_INCLUDED_
#define _SFT_SHMEM_H_INCLUDED_


typedef struct {
    u_char       *addr;
    size_t        size;
    sft_str_t     name;
    sft_log_t    *log;
} sft_shm_t;


typedef struct sft_shm_zone_s  sft_shm_zone_t;

/* old_data is the previous cycle's zone->data when the zone is reused */
typedef sft_int_t (*sft_shm_zone_init_pt)(sft_shm_zone_t *zone,
    void *old_data);
typedef void (*sft_shm_zone_fini_pt)(sft_shm_zone_t *zone);


struct sft_shm_zone_s {
    void                  *data;
    sft_shm_t              shm;
    sft_shm_zone_init_pt   init;
    sft_shm_zone_fini_pt   fini;     /* before unmapping, in the master */
    void                  *tag;
    size_t                 arg;      /* for init, set by who adds it */
};


sft_shm_zone_t *sft_shared_memory_add(sft_cycle_t *cycle, sft_str_t *name,
    size_t size, void *tag);
sft_int_t sft_shm_alloc(sft_shm_t *shm);
void sft_shm_free(sft_shm_t *shm);


#endif /* _SFT_SHMEM_H_INCLUDED_ */
