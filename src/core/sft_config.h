/*
 * sft_config.h -- system headers and the configure results every file needs.
 */

#ifndef _SFT_CONFIG_H_INCLUDED_
#define _SFT_CONFIG_H_INCLUDED_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <sft_auto_config.h>

#include <sys/types.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>
#include <time.h>
#include <pwd.h>
#include <grp.h>
#include <glob.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>


typedef intptr_t        sft_int_t;
typedef uintptr_t       sft_uint_t;
typedef intptr_t        sft_flag_t;
typedef int             sft_fd_t;
typedef int             sft_err_t;
typedef int64_t         sft_msec_t;
typedef unsigned char   u_char;

#define SFT_INVALID_FILE  -1
#define SFT_MAX_INT_T_VALUE  INTPTR_MAX
#define SFT_ALIGNMENT   sizeof(uintptr_t)

#define sft_align(d, a)     (((d) + (a - 1)) & ~(a - 1))
#define sft_align_ptr(p, a)                                                   \
    (u_char *) (((uintptr_t) (p) + ((uintptr_t) a - 1)) & ~((uintptr_t) a - 1))

#define sft_errno           errno
#define sft_set_errno(e)    errno = e

#define sft_min(a, b)       ((a) < (b) ? (a) : (b))
#define sft_max(a, b)       ((a) > (b) ? (a) : (b))

#define sft_nelems(a)       (sizeof(a) / sizeof((a)[0]))

#define SFT_LINEFEED        "\n"

#endif /* _SFT_CONFIG_H_INCLUDED_ */
