/*
 * sft_setproctitle.c -- process titles.  The kernel shows a process's
 * command line from the memory that held argv[] and, right after it, the
 * environment strings.  At start both are copied to the heap (argv[] and
 * environ then point at the copies), which frees that contiguous area for
 * "siftpd: <title>"; the comm name (prctl PR_SET_NAME) follows the title.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_setproctitle.h>
#include <sys/prctl.h>


#define SFT_PROCTITLE_PREFIX  "siftpd: "
#define SFT_PROCTITLE_COMM    15          /* TASK_COMM_LEN less the nul */


extern char **environ;

static u_char  *sft_title_start;          /* NULL: titles are not set */
static u_char  *sft_title_end;
static u_char  *sft_title_args;           /* the command line, one line */


/* *s moves to the heap; the area grows when *s began right at its end */

static u_char *
sft_proctitle_move(char **s, u_char *end, sft_log_t *log)
{
    size_t   len;
    u_char  *copy;

    len = sft_strlen(*s) + 1;

    if ((u_char *) *s == end) {
        end += len;
    }

    copy = sft_alloc(len, log);
    if (copy == NULL) {
        return NULL;
    }

    sft_memcpy(copy, *s, len);
    *s = (char *) copy;

    return end;
}


sft_int_t
sft_init_setproctitle(int argc, char **argv, sft_log_t *log)
{
    int      i;
    size_t   len;
    u_char  *start, *end, *p;

    if (argc == 0 || argv[0] == NULL) {
        return SFT_OK;
    }

    start = (u_char *) argv[0];
    end = start;
    len = 0;

    for (i = 0; i < argc; i++) {
        len += sft_strlen(argv[i]) + 1;

        end = sft_proctitle_move(&argv[i], end, log);
        if (end == NULL) {
            return SFT_ERROR;
        }
    }

    for (i = 0; environ[i]; i++) {
        end = sft_proctitle_move(&environ[i], end, log);
        if (end == NULL) {
            return SFT_ERROR;
        }
    }

    sft_title_args = sft_alloc(len, log);
    if (sft_title_args == NULL) {
        return SFT_ERROR;
    }

    p = sft_title_args;

    for (i = 0; i < argc; i++) {
        p = sft_cpymem(p, argv[i], sft_strlen(argv[i]));
        *p++ = (u_char) (i + 1 < argc ? ' ' : '\0');
    }

    sft_title_start = start;
    sft_title_end = end - 1;              /* the last nul stays */

    return SFT_OK;
}


static u_char *
sft_proctitle_put(u_char *p, const u_char *s)
{
    while (*s && p < sft_title_end) {
        *p++ = *s++;
    }

    return p;
}


/* "siftpd: title", with the original command line after it if asked */

void
sft_setproctitle(const char *title, sft_uint_t with_args)
{
    size_t   len;
    u_char  *p;
    char     comm[SFT_PROCTITLE_COMM + 1];

    if (sft_title_start == NULL) {
        return;
    }

    p = sft_proctitle_put(sft_title_start, (u_char *) SFT_PROCTITLE_PREFIX);
    p = sft_proctitle_put(p, (u_char *) title);

    if (with_args) {
        p = sft_proctitle_put(p, (u_char *) " ");
        p = sft_proctitle_put(p, sft_title_args);
    }

    sft_memzero(p, (size_t) (sft_title_end - p) + 1);

    len = sft_min((size_t) (p - sft_title_start), (size_t) SFT_PROCTITLE_COMM);

    while (len && sft_title_start[len - 1] == ' ') {
        len--;
    }

    sft_memcpy(comm, sft_title_start, len);
    comm[len] = '\0';

    (void) prctl(PR_SET_NAME, comm, 0, 0, 0);
}
