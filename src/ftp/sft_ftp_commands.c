/*
 * sft_ftp_commands.c -- the allow-list of FTP commands (what may run
 * before login, what takes an argument, what may run during a transfer)
 * and the handlers of the simple ones: directories, names, sizes, times,
 * modes, FEAT, HELP and STAT.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>


static sft_int_t sft_ftp_noop(sft_ftp_session_t *s);
static sft_int_t sft_ftp_quit(sft_ftp_session_t *s);
static sft_int_t sft_ftp_syst(sft_ftp_session_t *s);
static sft_int_t sft_ftp_feat(sft_ftp_session_t *s);
static sft_int_t sft_ftp_opts(sft_ftp_session_t *s);
static sft_int_t sft_ftp_help(sft_ftp_session_t *s);
static sft_int_t sft_ftp_host(sft_ftp_session_t *s);
static sft_int_t sft_ftp_clnt(sft_ftp_session_t *s);
static sft_int_t sft_ftp_type(sft_ftp_session_t *s);
static sft_int_t sft_ftp_mode(sft_ftp_session_t *s);
static sft_int_t sft_ftp_stru(sft_ftp_session_t *s);
static sft_int_t sft_ftp_allo(sft_ftp_session_t *s);
static sft_int_t sft_ftp_pwd(sft_ftp_session_t *s);
static sft_int_t sft_ftp_cwd(sft_ftp_session_t *s);
static sft_int_t sft_ftp_cdup(sft_ftp_session_t *s);
static sft_int_t sft_ftp_mkd(sft_ftp_session_t *s);
static sft_int_t sft_ftp_rmd(sft_ftp_session_t *s);
static sft_int_t sft_ftp_dele(sft_ftp_session_t *s);
static sft_int_t sft_ftp_rnfr(sft_ftp_session_t *s);
static sft_int_t sft_ftp_rnto(sft_ftp_session_t *s);
static sft_int_t sft_ftp_size(sft_ftp_session_t *s);
static sft_int_t sft_ftp_mdtm(sft_ftp_session_t *s);
static sft_int_t sft_ftp_rest(sft_ftp_session_t *s);
static sft_int_t sft_ftp_rang(sft_ftp_session_t *s);
static sft_int_t sft_ftp_pasv(sft_ftp_session_t *s);
static sft_int_t sft_ftp_epsv(sft_ftp_session_t *s);
static sft_int_t sft_ftp_port_cmd(sft_ftp_session_t *s);
static sft_int_t sft_ftp_eprt(sft_ftp_session_t *s);
static sft_int_t sft_ftp_retr(sft_ftp_session_t *s);
static sft_int_t sft_ftp_stor(sft_ftp_session_t *s);
static sft_int_t sft_ftp_appe(sft_ftp_session_t *s);
static sft_int_t sft_ftp_list(sft_ftp_session_t *s);
static sft_int_t sft_ftp_nlst(sft_ftp_session_t *s);
static sft_int_t sft_ftp_mlsd(sft_ftp_session_t *s);
static sft_int_t sft_ftp_abor(sft_ftp_session_t *s);
static sft_int_t sft_ftp_stat(sft_ftp_session_t *s);
static sft_int_t sft_ftp_pbsz(sft_ftp_session_t *s);
static sft_int_t sft_ftp_prot(sft_ftp_session_t *s);
static sft_int_t sft_ftp_ccc(sft_ftp_session_t *s);
static sft_int_t sft_ftp_site(sft_ftp_session_t *s);
static sft_int_t sft_ftp_site_help(sft_ftp_session_t *s);
static sft_int_t sft_ftp_mfmt(sft_ftp_session_t *s);
static sft_int_t sft_ftp_stou(sft_ftp_session_t *s);
static sft_int_t sft_ftp_rein(sft_ftp_session_t *s);


#define SFT_FTP_P   SFT_FTP_PRELOGIN
#define SFT_FTP_N   SFT_FTP_ARG_NONE
#define SFT_FTP_A   SFT_FTP_ARG_NEED
#define SFT_FTP_T   SFT_FTP_IN_TRANSFER


static sft_ftp_command_t  sft_ftp_commands[] = {

    /* before login */
    { sft_string("USER"), SFT_FTP_P|SFT_FTP_A, sft_ftp_user_login },
    { sft_string("PASS"), SFT_FTP_P, sft_ftp_user_password },
    { sft_string("QUIT"), SFT_FTP_P|SFT_FTP_T, sft_ftp_quit },
    { sft_string("FEAT"), SFT_FTP_P|SFT_FTP_N, sft_ftp_feat },
    { sft_string("SYST"), SFT_FTP_P|SFT_FTP_N, sft_ftp_syst },
    { sft_string("OPTS"), SFT_FTP_P|SFT_FTP_A, sft_ftp_opts },
    { sft_string("HELP"), SFT_FTP_P, sft_ftp_help },
    { sft_string("NOOP"), SFT_FTP_P|SFT_FTP_N|SFT_FTP_T, sft_ftp_noop },
    { sft_string("HOST"), SFT_FTP_P|SFT_FTP_A, sft_ftp_host },
    { sft_string("CLNT"), SFT_FTP_P, sft_ftp_clnt },
    { sft_string("AUTH"), SFT_FTP_P|SFT_FTP_A, sft_ftp_auth },
    { sft_string("PBSZ"), SFT_FTP_P|SFT_FTP_A, sft_ftp_pbsz },
    { sft_string("PROT"), SFT_FTP_P|SFT_FTP_A, sft_ftp_prot },
    { sft_string("CCC"), SFT_FTP_P|SFT_FTP_N, sft_ftp_ccc },

    /* after login */
    { sft_string("TYPE"), SFT_FTP_A, sft_ftp_type },
    { sft_string("MODE"), SFT_FTP_A, sft_ftp_mode },
    { sft_string("STRU"), SFT_FTP_A, sft_ftp_stru },
    { sft_string("ALLO"), 0, sft_ftp_allo },
    { sft_string("PWD"), SFT_FTP_N, sft_ftp_pwd },
    { sft_string("XPWD"), SFT_FTP_N, sft_ftp_pwd },
    { sft_string("CWD"), SFT_FTP_A, sft_ftp_cwd },
    { sft_string("XCWD"), SFT_FTP_A, sft_ftp_cwd },
    { sft_string("CDUP"), SFT_FTP_N, sft_ftp_cdup },
    { sft_string("XCUP"), SFT_FTP_N, sft_ftp_cdup },
    { sft_string("MKD"), SFT_FTP_A, sft_ftp_mkd },
    { sft_string("XMKD"), SFT_FTP_A, sft_ftp_mkd },
    { sft_string("RMD"), SFT_FTP_A, sft_ftp_rmd },
    { sft_string("XRMD"), SFT_FTP_A, sft_ftp_rmd },
    { sft_string("DELE"), SFT_FTP_A, sft_ftp_dele },
    { sft_string("RNFR"), SFT_FTP_A, sft_ftp_rnfr },
    { sft_string("RNTO"), SFT_FTP_A|SFT_FTP_AFTER_RNFR, sft_ftp_rnto },
    { sft_string("SIZE"), SFT_FTP_A, sft_ftp_size },
    { sft_string("MDTM"), SFT_FTP_A, sft_ftp_mdtm },
    { sft_string("REST"), SFT_FTP_A, sft_ftp_rest },
    { sft_string("RANG"), SFT_FTP_A, sft_ftp_rang },
    { sft_string("PASV"), SFT_FTP_N, sft_ftp_pasv },
    { sft_string("EPSV"), 0, sft_ftp_epsv },
    { sft_string("PORT"), SFT_FTP_A, sft_ftp_port_cmd },
    { sft_string("EPRT"), SFT_FTP_A, sft_ftp_eprt },
    { sft_string("RETR"), SFT_FTP_A, sft_ftp_retr },
    { sft_string("STOR"), SFT_FTP_A, sft_ftp_stor },
    { sft_string("APPE"), SFT_FTP_A, sft_ftp_appe },
    { sft_string("LIST"), 0, sft_ftp_list },
    { sft_string("NLST"), 0, sft_ftp_nlst },
    { sft_string("MLSD"), 0, sft_ftp_mlsd },
    { sft_string("MLST"), 0, sft_ftp_mlst },
    { sft_string("ABOR"), SFT_FTP_N|SFT_FTP_T, sft_ftp_abor },
    { sft_string("STAT"), SFT_FTP_T, sft_ftp_stat },
    { sft_string("HASH"), SFT_FTP_A, sft_ftp_hash },
    { sft_string("SITE"), SFT_FTP_A, sft_ftp_site },
    { sft_string("MFMT"), SFT_FTP_A, sft_ftp_mfmt },
    { sft_string("STOU"), 0, sft_ftp_stou },
    { sft_string("REIN"), SFT_FTP_N, sft_ftp_rein },
    { sft_string("ACCT"), SFT_FTP_NOT_IMPL, NULL },
    { sft_string("SMNT"), SFT_FTP_NOT_IMPL, NULL },
};


sft_ftp_command_t *
sft_ftp_find_command(sft_str_t *verb)
{
    sft_uint_t  i;

    for (i = 0; i < sft_nelems(sft_ftp_commands); i++) {
        if (sft_ftp_commands[i].name.len == verb->len
            && sft_memcmp(sft_ftp_commands[i].name.data, verb->data,
                          verb->len) == 0)
        {
            return &sft_ftp_commands[i];
        }
    }

    return NULL;
}


/* RFC 959 appendix II: a '"' in a quoted path is doubled */

u_char *
sft_ftp_quote_path(sft_pool_t *pool, u_char *path, size_t len,
    size_t *outlen)
{
    u_char  *out, *p;
    size_t   i;

    out = sft_pnalloc(pool, len * 2 + 1);
    if (out == NULL) {
        return NULL;
    }

    p = out;

    for (i = 0; i < len; i++) {
        if (path[i] == '"') {
            *p++ = '"';
        }
        *p++ = path[i];
    }

    *outlen = p - out;

    return out;
}


static sft_int_t
sft_ftp_noop(sft_ftp_session_t *s)
{
    sft_ftp_reply(s, 200, "NOOP ok.");
    return SFT_OK;
}


static sft_int_t
sft_ftp_quit(sft_ftp_session_t *s)
{
    sft_ftp_reply(s, 221, "Goodbye.");
    s->quit = 1;
    return SFT_OK;
}


static sft_int_t
sft_ftp_syst(sft_ftp_session_t *s)
{
    sft_ftp_reply(s, 215, "UNIX Type: L8");
    return SFT_OK;
}


static sft_int_t
sft_ftp_feat(sft_ftp_session_t *s)
{
    u_char  *p, *last;
    u_char   buf[512];

    p = buf;
    last = buf + sizeof(buf);

    p = sft_slprintf(p, last, "211-Features:\r\n");

    if (s->conf->tls_login != SFT_FTP_TLS_OFF) {
        p = sft_slprintf(p, last, " AUTH TLS\r\n PBSZ\r\n PROT\r\n");
    }

    p = sft_slprintf(p, last, " CLNT\r\n EPRT\r\n EPSV\r\n");
    p = sft_ftp_hash_feat(s, p, last);
    p = sft_slprintf(p, last, " HOST\r\n MDTM\r\n MFMT\r\n MLST ");
    p = sft_ftp_facts(s, p, last, 1);
    p = sft_slprintf(p, last,
                     "\r\n"
                     " RANG STREAM\r\n"
                     " REST STREAM\r\n"
                     " SIZE\r\n"
                     " TVFS\r\n"
                     " UTF8\r\n"
                     "211 End\r\n");

    sft_ftp_reply_raw(s, buf, p - buf);
    return SFT_OK;
}


static sft_int_t
sft_ftp_opts(sft_ftp_session_t *s)
{
    u_char  *p, *end;
    u_char   buf[64];

    if (sft_str_caseeq(&s->arg, "UTF8 ON")
        || sft_str_caseeq(&s->arg, "UTF8"))
    {
        s->utf8 = 1;
        sft_ftp_reply(s, 200, "Always in UTF8 mode.");
        return SFT_OK;
    }

    if (s->arg.len < 4 || (s->arg.len > 4 && s->arg.data[4] != ' ')) {
        sft_ftp_reply(s, 501, "Option not understood.");
        return SFT_OK;
    }

    p = s->arg.data + 4;
    end = s->arg.data + s->arg.len;

    while (p < end && *p == ' ') {
        p++;
    }

    if (strncasecmp((char *) s->arg.data, "MLST", 4) == 0) {
        /* RFC 3659 7.9: the facts listed, and only those, from now on */
        sft_ftp_facts_select(s, p, end - p);

        p = sft_ftp_facts(s, buf, buf + sizeof(buf), 0);

        sft_ftp_reply(s, 200, "MLST OPTS%s%.*s", p > buf ? " " : "",
                      (int) (p - buf), buf);
        return SFT_OK;
    }

    if (strncasecmp((char *) s->arg.data, "HASH", 4) == 0) {
        if (p < end && sft_ftp_hash_select(s, p, end - p) != SFT_OK) {
            sft_ftp_reply(s, 501, "Unknown algorithm, current selection "
                                  "not changed.");
            return SFT_OK;
        }

        sft_ftp_reply(s, 200, "%s", sft_ftp_hash_name(s->hash_algo));
        return SFT_OK;
    }

    sft_ftp_reply(s, 501, "Option not understood.");
    return SFT_OK;
}


static sft_int_t
sft_ftp_help(sft_ftp_session_t *s)
{
    size_t      len;
    u_char     *p, *last;
    sft_uint_t  i, n;
    u_char      buf[1024];

    if (sft_str_caseeq(&s->arg, "SITE")) {
        return sft_ftp_site_help(s);
    }

    p = buf;
    last = buf + sizeof(buf);

    p = sft_slprintf(p, last, "214-The following commands are recognized.");

    for (i = 0, n = 0; i < sft_nelems(sft_ftp_commands); i++) {
        if (sft_ftp_commands[i].flags & SFT_FTP_NOT_IMPL) {
            continue;
        }

        if (n++ % 8 == 0) {
            p = sft_slprintf(p, last, "\r\n");
        }

        len = sft_ftp_commands[i].name.len;
        p = sft_slprintf(p, last, " %.*s%s", (int) len,
                         sft_ftp_commands[i].name.data,
                         len == 3 ? " " : "");
    }

    p = sft_slprintf(p, last, "\r\n214 Help OK.\r\n");

    sft_ftp_reply_raw(s, buf, p - buf);
    return SFT_OK;
}


/* CLNT (FileZilla, WinSCP and others name themselves): noted */

static sft_int_t
sft_ftp_clnt(sft_ftp_session_t *s)
{
    sft_ftp_reply(s, 200, "Noted.");
    return SFT_OK;
}


/* RFC 7151; one virtual host for now */

static sft_int_t
sft_ftp_host(sft_ftp_session_t *s)
{
    if (s->logged_in || s->user.len) {
        sft_ftp_reply(s, 503, "HOST must come before USER.");
        return SFT_OK;
    }

    sft_ftp_reply(s, 220, "Host accepted.");
    return SFT_OK;
}


/* TYPE A converts newlines in RETR, STOR and APPE; listings are as is */

static sft_int_t
sft_ftp_type(sft_ftp_session_t *s)
{
    if (sft_str_caseeq(&s->arg, "A") || sft_str_caseeq(&s->arg, "A N")) {
        s->binary = 0;
        sft_ftp_reply(s, 200, "Switching to ASCII mode.");
        return SFT_OK;
    }

    if (sft_str_caseeq(&s->arg, "I") || sft_str_caseeq(&s->arg, "L 8")
        || sft_str_caseeq(&s->arg, "L8"))
    {
        s->binary = 1;
        sft_ftp_reply(s, 200, "Switching to Binary mode.");
        return SFT_OK;
    }

    sft_ftp_reply(s, 504, "Command not implemented for that parameter.");
    return SFT_OK;
}


static sft_int_t
sft_ftp_mode(sft_ftp_session_t *s)
{
    if (sft_str_caseeq(&s->arg, "S")) {
        sft_ftp_reply(s, 200, "Mode set to S.");

    } else {
        sft_ftp_reply(s, 504, "Bad MODE command.");
    }

    return SFT_OK;
}


static sft_int_t
sft_ftp_stru(sft_ftp_session_t *s)
{
    if (sft_str_caseeq(&s->arg, "F")) {
        sft_ftp_reply(s, 200, "Structure set to F.");

    } else {
        sft_ftp_reply(s, 504, "Bad STRU command.");
    }

    return SFT_OK;
}


static sft_int_t
sft_ftp_allo(sft_ftp_session_t *s)
{
    sft_ftp_reply(s, 202, "ALLO command ignored.");
    return SFT_OK;
}


static sft_int_t
sft_ftp_pwd(sft_ftp_session_t *s)
{
    u_char             *q;
    size_t              len;
    sft_storage_req_t  *r;

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    q = sft_ftp_quote_path(r->pool, s->vfs.cwd, s->vfs.cwd_len, &len);
    if (q == NULL) {
        return SFT_ERROR;
    }

    sft_ftp_reply(s, 257, "\"%.*s\" is the current directory.",
                  (int) len, q);
    return SFT_OK;
}


static void
sft_ftp_cwd_done(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    sft_ftp_reply(s, 250, "Directory successfully changed.");
}


static sft_int_t
sft_ftp_chdir(sft_ftp_session_t *s, u_char *path, size_t len)
{
    sft_int_t           rc;
    sft_storage_req_t  *r;

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    rc = sft_vfs_chdir(&s->vfs, r, path, len);

    return sft_ftp_op_result(s, rc, sft_ftp_cwd_done);
}


static sft_int_t
sft_ftp_cwd(sft_ftp_session_t *s)
{
    return sft_ftp_chdir(s, s->arg.data, s->arg.len);
}


static sft_int_t
sft_ftp_cdup(sft_ftp_session_t *s)
{
    return sft_ftp_chdir(s, (u_char *) "..", 2);
}


/* the absolute virtual path of the argument, in the op pool */

static u_char *
sft_ftp_abs_path(sft_ftp_session_t *s, size_t *len)
{
    u_char  *p;

    p = sft_pnalloc(s->req.pool, SFT_STORAGE_PATH_MAX + 1);
    if (p == NULL) {
        return NULL;
    }

    if (sft_vfs_normalize(s->vfs.cwd, s->vfs.cwd_len, s->arg.data,
                          s->arg.len, p, len)
        != SFT_STORAGE_OK)
    {
        return NULL;
    }

    return p;
}


static void
sft_ftp_mkd_done(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    u_char  *q;
    size_t   len;

    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    q = sft_ftp_quote_path(r->pool, r->buf, sft_strlen(r->buf), &len);
    if (q == NULL) {
        sft_ftp_reply(s, 257, "Created.");
        return;
    }

    sft_ftp_reply(s, 257, "\"%.*s\" created.", (int) len, q);
}


static sft_int_t
sft_ftp_mkd(sft_ftp_session_t *s)
{
    size_t              len;
    u_char             *abs;
    sft_int_t           rc;
    sft_storage_req_t  *r;

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    abs = sft_ftp_abs_path(s, &len);
    if (abs == NULL) {
        sft_ftp_reply(s, 553, "File name not allowed.");
        return SFT_OK;
    }

    /* the reply names the directory; mkdir does not use buf */
    r->buf = abs;

    rc = sft_vfs_mkdir(&s->vfs, r, abs, len);

    return sft_ftp_op_result(s, rc, sft_ftp_mkd_done);
}


static void
sft_ftp_done_250(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    sft_ftp_reply(s, 250, "Requested file action okay, completed.");
}


static sft_int_t
sft_ftp_rmd(sft_ftp_session_t *s)
{
    sft_int_t           rc;
    sft_storage_req_t  *r;

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    rc = sft_vfs_rmdir(&s->vfs, r, s->arg.data, s->arg.len);

    return sft_ftp_op_result(s, rc, sft_ftp_done_250);
}


static sft_int_t
sft_ftp_dele(sft_ftp_session_t *s)
{
    sft_int_t           rc;
    sft_storage_req_t  *r;

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    rc = sft_vfs_unlink(&s->vfs, r, s->arg.data, s->arg.len);

    return sft_ftp_op_result(s, rc, sft_ftp_done_250);
}


static void
sft_ftp_rnfr_done(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    if (r->err != SFT_STORAGE_OK) {
        s->rnfr[0] = '\0';
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    sft_ftp_reply(s, 350, "Ready for RNTO.");
}


static sft_int_t
sft_ftp_rnfr(sft_ftp_session_t *s)
{
    size_t              len;
    u_char             *abs;
    sft_int_t           rc;
    sft_storage_req_t  *r;

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    if (s->rnfr == NULL) {
        s->rnfr = sft_pnalloc(s->pool, SFT_STORAGE_PATH_MAX + 1);
        if (s->rnfr == NULL) {
            return SFT_ERROR;
        }
    }

    s->rnfr[0] = '\0';

    if (sft_vfs_need(&s->vfs, r, SFT_STORAGE_CAP_RENAME) != SFT_OK) {
        sft_ftp_reply_storage_error(s, r);
        return SFT_OK;
    }

    abs = sft_ftp_abs_path(s, &len);
    if (abs == NULL) {
        sft_ftp_reply(s, 553, "File name not allowed.");
        return SFT_OK;
    }

    sft_memcpy(s->rnfr, abs, len + 1);

    rc = sft_vfs_lstat(&s->vfs, r, abs, len);

    return sft_ftp_op_result(s, rc, sft_ftp_rnfr_done);
}


static void
sft_ftp_rnto_done(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    sft_ftp_reply(s, 250, "Rename successful.");
}


static sft_int_t
sft_ftp_rnto(sft_ftp_session_t *s)
{
    size_t              len;
    sft_int_t           rc;
    sft_storage_req_t  *r;

    if (s->rnfr == NULL || s->rnfr[0] == '\0') {
        sft_ftp_reply(s, 503, "RNFR required first.");
        return SFT_OK;
    }

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    len = sft_strlen(s->rnfr);

    rc = sft_vfs_rename(&s->vfs, r, s->rnfr, len, s->arg.data, s->arg.len);

    s->rnfr[0] = '\0';

    return sft_ftp_op_result(s, rc, sft_ftp_rnto_done);
}


static void
sft_ftp_size_done(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    if (!S_ISREG(r->st.mode)) {
        sft_ftp_reply(s, 550, "Could not get file size.");
        return;
    }

    sft_ftp_reply(s, 213, "%lld", (long long) r->st.size);
}


static sft_int_t
sft_ftp_size(sft_ftp_session_t *s)
{
    sft_int_t           rc;
    sft_storage_req_t  *r;

    if (!s->binary) {
        /* the converted size would need reading the whole file */
        sft_ftp_reply(s, 550, "SIZE not allowed in ASCII mode.");
        return SFT_OK;
    }

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    rc = sft_vfs_stat(&s->vfs, r, s->arg.data, s->arg.len);

    return sft_ftp_op_result(s, rc, sft_ftp_size_done);
}


static void
sft_ftp_mdtm_done(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    struct tm  tm;

    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    if (!S_ISREG(r->st.mode)) {
        sft_ftp_reply(s, 550, "Could not get file modification time.");
        return;
    }

    gmtime_r(&r->st.mtime, &tm);

    sft_ftp_reply(s, 213, "%04d%02d%02d%02d%02d%02d",
                  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec);
}


static sft_int_t
sft_ftp_mdtm(sft_ftp_session_t *s)
{
    sft_int_t           rc;
    sft_uint_t          i;
    sft_storage_req_t  *r;

    /* "MDTM YYYYMMDDHHMMSS path" sets the time, as vsftpd and older
       clients have it: the same as MFMT */

    if (s->arg.len > 15 && s->arg.data[14] == ' ') {
        for (i = 0; i < 14; i++) {
            if (s->arg.data[i] < '0' || s->arg.data[i] > '9') {
                break;
            }
        }

        if (i == 14) {
            return sft_ftp_mfmt(s);
        }
    }

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    rc = sft_vfs_stat(&s->vfs, r, s->arg.data, s->arg.len);

    return sft_ftp_op_result(s, rc, sft_ftp_mdtm_done);
}


/*
 * a decimal offset up to the largest file offset: SFT_OK, or SFT_ERROR
 * for anything else
 */

static sft_int_t
sft_ftp_parse_offset(u_char *p, size_t len, off_t *n)
{
    size_t  i;

    *n = 0;

    if (len == 0) {
        return SFT_ERROR;
    }

    for (i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9'
            || *n > (SFT_STORAGE_OFFSET_MAX - (p[i] - '0')) / 10)
        {
            return SFT_ERROR;
        }

        *n = *n * 10 + (p[i] - '0');
    }

    return SFT_OK;
}


static sft_int_t
sft_ftp_rest(sft_ftp_session_t *s)
{
    off_t  n;

    if (sft_ftp_parse_offset(s->arg.data, s->arg.len, &n) != SFT_OK) {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "client sent an invalid REST offset \"%.*s\"",
                      (int) sft_min(s->arg.len, 32), s->arg.data);
        sft_ftp_reply(s, 501, "Invalid REST parameter.");
        return SFT_OK;
    }

    s->rest = n;

    sft_ftp_reply(s, 350, "Restart position accepted (%lld).",
                  (long long) n);
    return SFT_OK;
}


/*
 * RANG start end (draft-bryan-ftp-range): the octets start..end, both
 * included, for the next HASH or RETR; "RANG 1 0" resets it, and so does
 * a start after the end, with 501
 */

static sft_int_t
sft_ftp_rang(sft_ftp_session_t *s)
{
    u_char  *sp;
    off_t    start, end;

    s->rang = 0;

    sp = memchr(s->arg.data, ' ', s->arg.len);

    if (sp == NULL
        || sft_ftp_parse_offset(s->arg.data, sp - s->arg.data, &start)
           != SFT_OK
        || sft_ftp_parse_offset(sp + 1, s->arg.data + s->arg.len - sp - 1,
                                &end)
           != SFT_OK)
    {
        sft_log_error(SFT_LOG_INFO, s->log, 0,
                      "client sent an invalid RANG \"%.*s\"",
                      (int) sft_min(s->arg.len, 64), s->arg.data);
        sft_ftp_reply(s, 501, "Usage: RANG <start> <end>.");
        return SFT_OK;
    }

    if (start == 1 && end == 0) {
        sft_ftp_reply(s, 350, "Range reset, the whole file.");
        return SFT_OK;
    }

    if (start > end) {
        sft_ftp_reply(s, 501, "RANG start point after the end point, "
                              "range reset.");
        return SFT_OK;
    }

    s->rang = 1;
    s->rang_start = start;
    s->rang_end = end;

    sft_ftp_reply(s, 350, "Restarting at %lld. End Byte range at %lld.",
                  (long long) start, (long long) end);
    return SFT_OK;
}


static sft_int_t
sft_ftp_pasv(sft_ftp_session_t *s)
{
    return sft_ftp_passive(s, 0);
}


static sft_int_t
sft_ftp_epsv(sft_ftp_session_t *s)
{
    return sft_ftp_passive(s, 1);
}


static sft_int_t
sft_ftp_port_cmd(sft_ftp_session_t *s)
{
    return sft_ftp_port(s, 0);
}


static sft_int_t
sft_ftp_eprt(sft_ftp_session_t *s)
{
    return sft_ftp_port(s, 1);
}


static sft_int_t
sft_ftp_retr(sft_ftp_session_t *s)
{
    return sft_ftp_transfer_start(s, SFT_FTP_RETR);
}


static sft_int_t
sft_ftp_stor(sft_ftp_session_t *s)
{
    return sft_ftp_transfer_start(s, SFT_FTP_STOR);
}


static sft_int_t
sft_ftp_appe(sft_ftp_session_t *s)
{
    return sft_ftp_transfer_start(s, SFT_FTP_APPE);
}


static sft_int_t
sft_ftp_list(sft_ftp_session_t *s)
{
    return sft_ftp_transfer_start(s, SFT_FTP_LIST);
}


static sft_int_t
sft_ftp_nlst(sft_ftp_session_t *s)
{
    return sft_ftp_transfer_start(s, SFT_FTP_NLST);
}


static sft_int_t
sft_ftp_mlsd(sft_ftp_session_t *s)
{
    return sft_ftp_transfer_start(s, SFT_FTP_MLSD);
}


static sft_int_t
sft_ftp_abor(sft_ftp_session_t *s)
{
    if (s->transfer == NULL) {

        if (s->broke) {
            /*
             * the client closed the data connection right after ABOR
             * and the close ended the transfer first (426): ABOR
             * completes that as it would have
             */
            sft_ftp_reply(s, 226, "Abort successful.");
            return SFT_OK;
        }

        sft_ftp_reply(s, 225, "No transfer to abort.");
        return SFT_OK;
    }

    sft_ftp_transfer_abort(s, 1);

    return SFT_OK;
}


static sft_int_t
sft_ftp_stat(sft_ftp_session_t *s)
{
    u_char  *p, *last;
    u_char   buf[1024];

    if (s->arg.len) {
        if (s->transfer) {
            sft_ftp_reply(s, 450, "Transfer in progress, try STAT later.");
            return SFT_OK;
        }

        return sft_ftp_stat_path(s);
    }

    p = buf;
    last = buf + sizeof(buf);

    p = sft_slprintf(p, last,
                     "211-FTP server status:\r\n"
                     "     Connected to %.*s\r\n"
                     "     Logged in as %.*s\r\n"
                     "     TYPE: %s\r\n",
                     SFT_STR_FMT(&s->peer.client),
                     SFT_STR_FMT(&s->user),
                     s->binary ? "BINARY" : "ASCII");

    if (s->transfer) {
        p = sft_slprintf(p, last, "     Transfer in progress: %lld bytes\r\n",
                         (long long) (s->transfer->streaming
                                      ? s->transfer->stream.bytes
                                      : s->transfer->bytes));

    } else {
        p = sft_slprintf(p, last, "     No data connection\r\n");
    }

    p = sft_slprintf(p, last, "211 End of status\r\n");

    sft_ftp_reply_raw(s, buf, p - buf);
    return SFT_OK;
}


/* RFC 4217: PBSZ 0 after AUTH; PROT C or P; CCC is refused */

static sft_int_t
sft_ftp_pbsz(sft_ftp_session_t *s)
{
    if (!s->tls) {
        sft_ftp_reply(s, 503, "PBSZ needs AUTH TLS first.");
        return SFT_OK;
    }

    s->pbsz = 1;
    sft_ftp_reply(s, 200, "PBSZ=0");

    return SFT_OK;
}


static sft_int_t
sft_ftp_prot(sft_ftp_session_t *s)
{
    if (!s->tls) {
        sft_ftp_reply(s, 503, "PROT needs AUTH TLS first.");
        return SFT_OK;
    }

    if (sft_str_caseeq(&s->arg, "P")) {
        if (s->conf->tls_data == SFT_FTP_TLS_OFF) {
            sft_ftp_reply(s, 534, "PROT P refused: policy keeps data "
                                  "connections in clear.");
            return SFT_OK;
        }

        s->prot_p = 1;
        sft_ftp_reply(s, 200, "PROT now Private.");
        return SFT_OK;
    }

    if (sft_str_caseeq(&s->arg, "C")) {
        if (s->conf->tls_data == SFT_FTP_TLS_REQUIRED) {
            sft_ftp_reply(s, 534, "PROT C refused: policy requires "
                                  "encrypted data connections.");
            return SFT_OK;
        }

        s->prot_p = 0;
        sft_ftp_reply(s, 200, "PROT now Clear.");
        return SFT_OK;
    }

    if (sft_str_caseeq(&s->arg, "S") || sft_str_caseeq(&s->arg, "E")) {
        sft_ftp_reply(s, 536, "PROT level not supported, use C or P.");
        return SFT_OK;
    }

    sft_ftp_reply(s, 504, "PROT level not understood.");

    return SFT_OK;
}


static sft_int_t
sft_ftp_ccc(sft_ftp_session_t *s)
{
    if (!s->tls) {
        sft_ftp_reply(s, 503, "CCC needs AUTH TLS first.");
        return SFT_OK;
    }

    sft_ftp_reply(s, 533, "CCC refused: the control connection stays "
                          "encrypted.");

    return SFT_OK;
}


/* SITE CHMOD mode path, SITE HELP */

static void
sft_ftp_chmod_done(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    sft_ftp_reply(s, 200, "SITE CHMOD command ok.");
}


/* SITE HELP, and HELP SITE */

static sft_int_t
sft_ftp_site_help(sft_ftp_session_t *s)
{
    static u_char  help[] = "214-The following SITE commands are recognized."
                            "\r\n CHMOD HELP\r\n214 Help OK.\r\n";

    sft_ftp_reply_raw(s, help, sizeof(help) - 1);
    return SFT_OK;
}


static sft_int_t
sft_ftp_site(sft_ftp_session_t *s)
{
    u_char             *p, *end;
    mode_t              mode;
    sft_int_t           rc;
    sft_uint_t          n;
    sft_storage_req_t  *r;

    p = s->arg.data;
    end = p + s->arg.len;

    if (sft_str_caseeq(&s->arg, "HELP")) {
        return sft_ftp_site_help(s);
    }

    if (s->arg.len < 6 || strncasecmp((char *) p, "CHMOD ", 6) != 0) {
        sft_ftp_reply(s, 500, "Unknown SITE command.");
        return SFT_OK;
    }

    p += 6;

    while (p < end && *p == ' ') {
        p++;
    }

    mode = 0;

    for (n = 0; p < end && *p != ' '; n++, p++) {
        if (*p < '0' || *p > '7' || n == 4) {
            sft_ftp_reply(s, 501, "SITE CHMOD needs an octal mode.");
            return SFT_OK;
        }

        mode = (mode << 3) | (*p - '0');
    }

    while (p < end && *p == ' ') {
        p++;
    }

    if (n == 0 || p == end) {
        sft_ftp_reply(s, 501, "Usage: SITE CHMOD <mode> <path>.");
        return SFT_OK;
    }

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    rc = sft_vfs_chmod(&s->vfs, r, p, end - p, mode);

    return sft_ftp_op_result(s, rc, sft_ftp_chmod_done);
}


/* MFMT YYYYMMDDHHMMSS path (draft-somers-ftp-mfxx), UTC */

static void
sft_ftp_mfmt_done(sft_ftp_session_t *s, sft_storage_req_t *r)
{
    if (r->err != SFT_STORAGE_OK) {
        sft_ftp_reply_storage_error(s, r);
        return;
    }

    /* r->buf: "YYYYMMDDHHMMSS path", copied at the start */
    sft_ftp_reply(s, 213, "Modify=%.14s; %s", r->buf, r->buf + 15);
}


static sft_int_t
sft_ftp_mfmt(sft_ftp_session_t *s)
{
    u_char             *p, *copy;
    time_t              mtime;
    sft_int_t           rc;
    sft_uint_t          i, v[6];
    struct tm           tm;
    sft_storage_req_t  *r;

    p = s->arg.data;

    if (s->arg.len < 16 || p[14] != ' ') {
        sft_ftp_reply(s, 501, "Usage: MFMT YYYYMMDDHHMMSS path.");
        return SFT_OK;
    }

    for (i = 0; i < 14; i++) {
        if (p[i] < '0' || p[i] > '9') {
            sft_ftp_reply(s, 501, "Usage: MFMT YYYYMMDDHHMMSS path.");
            return SFT_OK;
        }
    }

    v[0] = sft_atoi(p, 4);
    v[1] = sft_atoi(p + 4, 2);
    v[2] = sft_atoi(p + 6, 2);
    v[3] = sft_atoi(p + 8, 2);
    v[4] = sft_atoi(p + 10, 2);
    v[5] = sft_atoi(p + 12, 2);

    if (v[0] < 1970 || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31
        || v[3] > 23 || v[4] > 59 || v[5] > 60)
    {
        sft_ftp_reply(s, 501, "Invalid time in MFMT.");
        return SFT_OK;
    }

    sft_memzero(&tm, sizeof(struct tm));
    tm.tm_year = v[0] - 1900;
    tm.tm_mon = v[1] - 1;
    tm.tm_mday = v[2];
    tm.tm_hour = v[3];
    tm.tm_min = v[4];
    tm.tm_sec = v[5];

    mtime = timegm(&tm);

    if (mtime == (time_t) -1) {
        sft_ftp_reply(s, 501, "Invalid time in MFMT.");
        return SFT_OK;
    }

    r = sft_ftp_op_request(s);
    if (r == NULL) {
        return SFT_ERROR;
    }

    copy = sft_pnalloc(r->pool, s->arg.len + 1);
    if (copy == NULL) {
        return SFT_ERROR;
    }

    sft_memcpy(copy, p, s->arg.len);
    copy[s->arg.len] = '\0';

    /* the reply's text; setmtime does not use buf */
    r->buf = copy;

    rc = sft_vfs_setmtime(&s->vfs, r, p + 15, s->arg.len - 15, mtime);

    return sft_ftp_op_result(s, rc, sft_ftp_mfmt_done);
}


static sft_int_t
sft_ftp_stou(sft_ftp_session_t *s)
{
    return sft_ftp_transfer_start(s, SFT_FTP_STOU);
}


/* REIN: back to the state after the greeting; TLS stays as it is */

static sft_int_t
sft_ftp_rein(sft_ftp_session_t *s)
{
    sft_ftp_data_close(s);
    s->data.active = 0;

    sft_ftp_logout(s);

    s->user.len = 0;
    s->rest = 0;
    s->rang = 0;
    s->binary = 0;
    s->epsv_all = 0;
    s->errors = 0;
    s->hash_algo = SFT_FTP_HASH_SHA256;
    s->facts_off = 0;

    if (s->rnfr) {
        s->rnfr[0] = '\0';
    }

    if (s->last - s->start <= SFT_FTP_PRELOGIN_BUFFER) {
        s->end = s->start + SFT_FTP_PRELOGIN_BUFFER;
    }

    /* the login timer, not the idle one, from now on */
    sft_del_timer(s->connection->read);

    sft_ftp_reply(s, 220, "Service ready for new user.");

    return SFT_OK;
}
