/*
 * sft_log.h -- the error log: levels, per-context handlers that append the
 * peer and user, and reopening on USR1.
 */

#ifndef _SFT_LOG_H_INCLUDED_
#define _SFT_LOG_H_INCLUDED_


#define SFT_LOG_STDERR    0
#define SFT_LOG_EMERG     1
#define SFT_LOG_ALERT     2
#define SFT_LOG_CRIT      3
#define SFT_LOG_ERR       4
#define SFT_LOG_WARN      5
#define SFT_LOG_NOTICE    6
#define SFT_LOG_INFO      7
#define SFT_LOG_DEBUG     8

#define SFT_MAX_ERROR_STR   2048


typedef u_char *(*sft_log_handler_pt)(sft_log_t *log, u_char *buf,
    size_t len);


typedef struct {
    sft_fd_t     fd;
    sft_str_t    name;          /* "stderr" or an absolute path */
    sft_uint_t   plain;         /* "siftpd: [level] msg", for start-up */
} sft_log_file_t;


struct sft_log_s {
    sft_uint_t           log_level;
    sft_log_file_t      *file;
    sft_uint_t           connection;     /* connection number, 0 if none */
    sft_log_handler_pt   handler;        /* appends context, may be NULL */
    void                *data;
    const char          *action;
};


#define sft_log_error(level, log, ...)                                       \
    if ((log)->log_level >= (sft_uint_t) (level))                            \
        sft_log_error_core(level, log, __VA_ARGS__)

#define sft_log_debug(log, ...)                                              \
    if ((log)->log_level >= SFT_LOG_DEBUG)                                   \
        sft_log_error_core(SFT_LOG_DEBUG, log, 0, __VA_ARGS__)

void sft_log_error_core(sft_uint_t level, sft_log_t *log, sft_err_t err,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

sft_log_t *sft_log_init(void);
void sft_log_stderr(sft_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
sft_int_t sft_log_parse_level(sft_str_t *name);
sft_int_t sft_log_open_file(sft_log_file_t *file, sft_log_t *log);
void sft_log_write(sft_fd_t fd, u_char *buf, size_t len);

extern const char  *sft_log_levels[];
extern sft_uint_t   sft_log_pid_slot;


#endif /* _SFT_LOG_H_INCLUDED_ */
