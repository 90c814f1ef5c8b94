/*
 * sft_session.h -- the live sessions of every worker, for the admin API:
 * a slot per FTP, FTPS or SFTP session in the "sft_sessions" shared memory
 * zone, written by the worker that owns the session (its counters without
 * a lock), read by any worker, and a way for any worker to ask the owner
 * to end one.
 */

#ifndef _SFT_SESSION_H_INCLUDED_
#define _SFT_SESSION_H_INCLUDED_


#include <sft_users.h>


#define SFT_SESSION_FTP        0
#define SFT_SESSION_FTPS       1
#define SFT_SESSION_SFTP       2

#define SFT_SESSION_ID_LEN     24          /* "SLOT-GENERATION" */
#define SFT_SESSION_ADDR_LEN   48          /* INET6_ADDRSTRLEN and more */
#define SFT_SESSION_PATH_LEN   512         /* longer paths are cut */
#define SFT_SESSION_BY_LEN     64          /* who ended it */


typedef struct sft_session_rec_s  sft_session_rec_t;
typedef struct sft_session_s      sft_session_t;

/* in the owning worker: end the session now; by names who asked */
typedef void (*sft_session_end_pt)(sft_session_t *s, const char *by);


/* the owner's handle, in the protocol's session */
struct sft_session_s {
    sft_session_rec_t   *rec;              /* NULL: not in the table */
    sft_session_end_pt   end;
    void                *data;
    sft_session_t       *prev;
    sft_session_t       *next;
};


/* a copy of one slot, for the API */
typedef struct {
    char                 id[SFT_SESSION_ID_LEN];
    sft_uint_t           protocol;         /* SFT_SESSION_* */
    char                 user[SFT_USER_NAME_MAX + 1];   /* "": none yet */
    char                 addr[SFT_SESSION_ADDR_LEN];
    sft_uint_t           port;
    time_t               since;
    uint64_t             bytes_in;
    uint64_t             bytes_out;
    sft_uint_t           direction;        /* 0: no transfer, else
                                              SFT_XFER_* + 1 */
    sft_uint_t           data_path;        /* sft_xfer_path_e */
    uint64_t             rate;             /* bytes/s of the transfer */
    char                 path[SFT_SESSION_PATH_LEN];
} sft_session_info_t;


/* the owning worker */
void sft_session_open(sft_session_t *s, sft_uint_t protocol,
    sft_connection_t *c, sft_session_end_pt end, void *data);
void sft_session_close(sft_session_t *s);
void sft_session_set_protocol(sft_session_t *s, sft_uint_t protocol);
void sft_session_set_user(sft_session_t *s, sft_str_t *user);
void sft_session_count(sft_session_t *s, size_t in, size_t out);
void sft_session_transfer(sft_session_t *s, sft_uint_t direction,
    sft_uint_t data_path, const char *path);
void sft_session_transfer_path(sft_session_t *s, sft_uint_t data_path);
void sft_session_transfer_done(sft_session_t *s);

/* any worker */
sft_int_t sft_session_next(sft_uint_t *i, sft_session_info_t *info,
    sft_str_t *user);
sft_uint_t sft_session_max(void);
sft_int_t sft_session_end_id(sft_str_t *id, sft_str_t *by);
sft_uint_t sft_session_end_user(sft_str_t *user, sft_str_t *by);


extern sft_module_t  sft_session_module;


#endif /* _SFT_SESSION_H_INCLUDED_ */
