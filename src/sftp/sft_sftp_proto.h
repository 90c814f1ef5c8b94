/*
 * sft_sftp_proto.h -- what the files of SFTP v3 share: the handler table
 * entry (one per request type and one per extension), the requests in
 * flight, the packet getters and putters, the handles and the replies.
 * Private to src/sftp; sft_sftp.h is the module's face.
 */

#ifndef _SFT_SFTP_PROTO_H_INCLUDED_
#define _SFT_SFTP_PROTO_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>
#include <sft_sftp.h>
#include <sft_xfer_io.h>


#define SFT_SFTP_SMALL_REPLY  1024
#define SFT_SFTP_MAX_IDS      1024      /* users-groups-by-id, each */


/* a VFS operation on one path: stat, lstat, unlink, rmdir, mkdir ... */
typedef sft_int_t (*sft_sftp_vfs_path_pt)(sft_vfs_session_t *vs,
    sft_storage_req_t *req, const u_char *path, size_t len);

/* a VFS operation on two paths: rename, link, symlink */
typedef sft_int_t (*sft_sftp_vfs_path2_pt)(sft_vfs_session_t *vs,
    sft_storage_req_t *req, const u_char *path, size_t len,
    const u_char *path2, size_t len2);


/*
 * One request type or extension: parse decodes the packet after the id
 * (an extension's, after its name) and starts the storage operation or
 * answers at once; complete answers when the operation is over (or starts
 * its next step); abort, if set, cleans up when the operation ends after
 * the session is gone.  parse returns SFT_OK or SFT_DONE (answered),
 * SFT_AGAIN (nothing done, no buffer pool chunk free: the packet is
 * parsed again later), SFT_DECLINED for a malformed packet or SFT_ERROR:
 * the session closes.  The requests on paths share their parse: path_op or path2_op is what
 * they do.
 */

struct sft_sftp_handler_s {
    u_char                type;
    const char           *name;
    unsigned              write:1;     /* changes the storage: refused on
                                          a read-only session */
    sft_int_t           (*parse)(sft_sftp_session_t *s, sft_sftp_buf_t *b,
                                 uint32_t id, const sft_sftp_handler_t *hd);
    void                (*complete)(sft_sftp_request_t *r);
    void                (*abort)(sft_sftp_request_t *r);
    sft_sftp_vfs_path_pt  path_op;
    sft_sftp_vfs_path2_pt path2_op;
};


/* sft_sftp_packet.c */
sft_int_t sft_sftp_get_attrs(sft_sftp_buf_t *b, sft_sftp_request_t *r);
sft_int_t sft_sftp_range(sft_sftp_session_t *s, uint32_t id,
    uint64_t offset, uint64_t len);
u_char *sft_sftp_put_u32(u_char *p, uint32_t v);
u_char *sft_sftp_put_u64(u_char *p, uint64_t v);
u_char *sft_sftp_put_string(u_char *p, const u_char *s, size_t len);
u_char *sft_sftp_put_attrs(u_char *p, sft_storage_stat_t *st);
void sft_sftp_packet_done(sft_sftp_session_t *s, u_char *start, u_char *end);

/* sft_sftp_handlers.c */
extern const sft_sftp_handler_t  sft_sftp_setstat_handler;
sft_int_t sft_sftp_dispatch(sft_sftp_session_t *s, u_char *p, size_t len);
sft_int_t sft_sftp_refuse_write(sft_sftp_session_t *s, uint32_t id,
    const sft_sftp_handler_t *hd);
sft_int_t sft_sftp_path_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd);
sft_int_t sft_sftp_path2_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd);
sft_int_t sft_sftp_setstat_parse(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd);
sft_int_t sft_sftp_setstat_start(sft_sftp_request_t *r, u_char *path,
    size_t len);
void sft_sftp_setstat_complete(sft_sftp_request_t *r);
void sft_sftp_reply_done(sft_sftp_request_t *r);
void sft_sftp_attrs_done(sft_sftp_request_t *r);

/* sft_sftp_request.c */
sft_sftp_request_t *sft_sftp_request_new(sft_sftp_session_t *s,
    const sft_sftp_handler_t *hd, uint32_t id, size_t reserve);
void sft_sftp_request_done(sft_sftp_request_t *r);
void sft_sftp_result(sft_sftp_request_t *r, sft_int_t rc);
void sft_sftp_op_done(sft_storage_req_t *req);
void sft_sftp_complete(sft_sftp_request_t *r);
void sft_sftp_finish(sft_sftp_request_t *r);

/* sft_sftp_file.c */
extern const sft_sftp_handler_t  sft_sftp_open_handler;
extern const sft_sftp_handler_t  sft_sftp_opendir_handler;
extern const sft_sftp_handler_t  sft_sftp_close_handler;
extern const sft_sftp_handler_t  sft_sftp_fstat_handler;
extern const sft_sftp_handler_t  sft_sftp_fsetstat_handler;
extern const sft_sftp_handler_t  sft_sftp_readdir_handler;
void sft_sftp_fd_complete(sft_sftp_request_t *r);

/* sft_sftp_io.c */
extern const sft_sftp_handler_t  sft_sftp_read_handler;
extern const sft_sftp_handler_t  sft_sftp_write_handler;
sft_uint_t sft_sftp_rate_wait(sft_sftp_session_t *s, u_char type);

/* sft_sftp_handle.c */
sft_int_t sft_sftp_get_handle(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    sft_sftp_handle_t **h);
sft_int_t sft_sftp_get_open_handle(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, sft_sftp_handle_t **h);
sft_int_t sft_sftp_handle_request(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *hd, size_t reserve,
    sft_sftp_request_t **rp);
sft_sftp_handle_t *sft_sftp_handle_new(sft_sftp_session_t *s, u_char *path,
    size_t len, sft_uint_t is_dir);
void sft_sftp_handle_free(sft_sftp_session_t *s, sft_sftp_handle_t *h);
void sft_sftp_handle_report(sft_sftp_session_t *s, sft_sftp_handle_t *h);
void sft_sftp_handle_release(sft_sftp_session_t *s, sft_sftp_handle_t *h);
void sft_sftp_handle_idle(sft_sftp_handle_t *h);

/* sft_sftp_reply.c */
void sft_sftp_status(sft_sftp_session_t *s, uint32_t id, uint32_t code,
    const char *msg);
void sft_sftp_storage_status(sft_sftp_session_t *s, uint32_t id,
    sft_storage_err_t err);
void sft_sftp_storage_why(sft_sftp_session_t *s, uint32_t id,
    sft_storage_err_t err, const char *why);
void sft_sftp_reply_handle(sft_sftp_session_t *s, uint32_t id,
    sft_sftp_handle_t *h);
void sft_sftp_reply_attrs(sft_sftp_session_t *s, uint32_t id,
    sft_storage_stat_t *st);
void sft_sftp_reply_names(sft_sftp_request_t *r);
void sft_sftp_reply_name(sft_sftp_session_t *s, uint32_t id, u_char *name,
    size_t len);
void sft_sftp_reply_realpath(sft_sftp_session_t *s, uint32_t id,
    u_char *path, size_t len);
void sft_sftp_reply_version(sft_sftp_session_t *s);
void sft_sftp_reply_limits(sft_sftp_session_t *s, uint32_t id);
void sft_sftp_reply_statvfs(sft_sftp_session_t *s, uint32_t id,
    sft_storage_statvfs_t *v);
void sft_sftp_reply_ids(sft_sftp_session_t *s, uint32_t id, u_char *uids,
    uint32_t ulen, u_char *gids, uint32_t glen);

/* sft_sftp_ext.c */
sft_int_t sft_sftp_extended(sft_sftp_session_t *s, sft_sftp_buf_t *b,
    uint32_t id, const sft_sftp_handler_t *extended);

/* sft_sftp_ext_check.c, sft_sftp_ext_copy.c */
extern const sft_sftp_handler_t  sft_sftp_check_name_handler;
extern const sft_sftp_handler_t  sft_sftp_check_handle_handler;
extern const sft_sftp_handler_t  sft_sftp_copy_data_handler;


#endif /* _SFT_SFTP_PROTO_H_INCLUDED_ */
