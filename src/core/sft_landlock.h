/*
 * sft_landlock.h -- "landlock on|off;": the paths a worker may reach.
 * While the configuration is read, the modules that own a path declare
 * it here with what their workers do there; each worker confines itself
 * to those paths with Landlock at its start, before any of its threads
 * exists and before it serves anyone.
 */

#ifndef _SFT_LANDLOCK_H_INCLUDED_
#define _SFT_LANDLOCK_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>


#define SFT_LANDLOCK_READ     0x01      /* read files, list directories */
#define SFT_LANDLOCK_WRITE    0x02      /* write and truncate files */
#define SFT_LANDLOCK_CREATE   0x04      /* make files, directories, links */
#define SFT_LANDLOCK_REMOVE   0x08      /* remove, rename, link elsewhere */

/*
 * The rule is on the directory of the path, not on the path: for a file
 * that is replaced by a rename (a rotated log, a rewritten users file)
 * and so is another file after the worker started.
 */
#define SFT_LANDLOCK_PARENT   0x10

/*
 * A path that may be absent (a system file some machines lack): no rule
 * and no notice when it is.
 */
#define SFT_LANDLOCK_OPTIONAL 0x20


/*
 * At configuration time: the workers of this cycle may reach path (an
 * absolute path, a file or a directory and everything beneath it) with
 * the access given; a path declared again gets the access of both.
 * SFT_ERROR only when out of memory.
 */
sft_int_t sft_landlock_allow(sft_cycle_t *cycle, sft_str_t *path,
    sft_uint_t access);

/*
 * In a worker, single-threaded and with no new privileges: confine it to
 * the declared paths, the directories of the log files and what the
 * libraries read at run time.  SFT_OK also where Landlock is off or the
 * kernel has none; SFT_ERROR (logged) when the kernel refused the rules.
 */
sft_int_t sft_landlock_apply(sft_cycle_t *cycle);


extern sft_module_t  sft_landlock_module;


#endif /* _SFT_LANDLOCK_H_INCLUDED_ */
