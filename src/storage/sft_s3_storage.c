/*
 * sft_s3_storage.c -- the s3 storage driver: "storage NAME { driver s3;
 * s3_bucket ...; }" keeps a storage's files as the objects of a bucket
 * under a key prefix, directories as key prefixes ("a/b/").  Its
 * directives, each checked when the configuration is read; the driver's
 * table (a non-blocking driver: every operation runs on the loop); the
 * keys fetched by each worker (instance metadata, web identity); the
 * first request of each worker, once it has keys, which says in one line
 * when the bucket cannot be reached or the keys are refused; and the
 * sweep of multipart uploads left behind, by the worker of slot 0.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_storage.h>


typedef struct {
    off_t                  min;
    off_t                  max;
    unsigned               size:1;        /* "8m", else a count */
} sft_s3_bounds_t;


static void *sft_s3_storage_create_conf(sft_conf_t *cf);
static char *sft_s3_storage_init_conf(sft_conf_t *cf, sft_storage_t *st,
    void *conf);
static char *sft_s3_storage_check(sft_conf_t *cf, sft_storage_t *st,
    sft_s3_storage_conf_t *scf);
static char *sft_s3_set_name(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_s3_set_prefix(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_s3_set_bounded(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_s3_set_credentials(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_s3_set_web_identity(sft_conf_t *cf,
    sft_s3_storage_conf_t *scf);
static char *sft_s3_set_sse(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static char *sft_s3_set_storage_class(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static sft_int_t sft_s3_storage_init_process(sft_cycle_t *cycle);
static void sft_s3_storage_exit_process(sft_cycle_t *cycle);
static sft_int_t sft_s3_storage_start(sft_s3_storage_conf_t *scf,
    sft_cycle_t *cycle);
static void sft_s3_storage_web_keys(sft_s3_sts_t *m, sft_int_t rc);
static void sft_s3_storage_imds_keys(sft_s3_imds_t *m, sft_int_t rc);
static void sft_s3_storage_checked(sft_s3_request_t *r);
static sft_int_t sft_s3_storage_look(sft_s3_storage_conf_t *scf);
static void sft_s3_storage_keys(sft_s3_storage_conf_t *scf, sft_int_t rc);
static sft_int_t sft_s3_storage_sweep(sft_s3_storage_conf_t *scf);
static void sft_s3_storage_swept(sft_s3_sweep_t *sw, sft_int_t rc);
static sft_int_t sft_s3_close(sft_storage_req_t *req);


sft_storage_driver_t  sft_s3_storage_driver = {
    sft_string("s3"),
    0,                                     /* runs on the loop */
    SFT_STORAGE_CAP_APPEND|SFT_STORAGE_CAP_WINDOW_WRITE
    |SFT_STORAGE_CAP_RENAME|SFT_STORAGE_CAP_CHECKSUMS
    |SFT_STORAGE_CAP_STAGED,
    {
        sft_s3_stat,
        sft_s3_stat,                       /* lstat: S3 has no links */
        sft_s3_open_read,
        sft_s3_open_write,
        sft_s3_read,
        sft_s3_write,
        sft_s3_close,
        sft_s3_opendir,
        sft_s3_readdir,
        sft_s3_closedir,
        sft_s3_mkdir,
        sft_s3_rmdir,
        sft_s3_unlink,
        sft_s3_rename,
        sft_s3_setmtime,
        sft_s3_chmod,                      /* s3_ignore_chmod on only */
        sft_s3_statvfs,
        NULL,                              /* readlink */
        NULL,                              /* symlink */
        NULL,                              /* link */
        sft_s3_usage,
        sft_s3_fstat,
        NULL,                              /* fsync */
        NULL,                              /* truncate */
        sft_s3_fsetattr,
        NULL,                              /* copy */
        sft_s3_checksum
    },
    NULL,
    sft_s3_cancel,
    NULL,
    NULL,
    sft_s3_room
};


static sft_conf_enum_t  sft_s3_addressing[] = {
    { sft_string("path"), 1 },
    { sft_string("virtual"), 0 },
    { sft_null_string, 0 }
};


static sft_conf_enum_t  sft_s3_checksums[] = {
    { sft_string("off"), SFT_S3_CHECKSUM_OFF },
    { sft_string("crc32c"), SFT_S3_CHECKSUM_CRC32C },
    { sft_string("md5"), SFT_S3_CHECKSUM_MD5 },
    { sft_null_string, 0 }
};


static sft_s3_bounds_t  sft_s3_part_size_bounds = {
    (off_t) 5 * 1024 * 1024, (off_t) 5 * 1024 * 1024 * 1024, 1
};

static sft_s3_bounds_t  sft_s3_parts_bounds = { 1, SFT_S3_IN_FLIGHT_MAX, 0 };
static sft_s3_bounds_t  sft_s3_retries_bounds = { 0, 20, 0 };
static sft_s3_bounds_t  sft_s3_peek_bounds = { 0, 256 * 1024, 1 };
static sft_s3_bounds_t  sft_s3_rename_bounds = { 1, 1000000, 0 };
static sft_s3_bounds_t  sft_s3_copy_bounds = {
    (off_t) 5 * 1024 * 1024, (off_t) 5 * 1024 * 1024 * 1024, 1
};


#define sft_s3_conf(field)  offsetof(sft_s3_storage_conf_t, field)


static sft_command_t  sft_s3_storage_commands[] = {

    { sft_string("s3_endpoint"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_name,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(client.endpoint),
      NULL,
      sft_command_doc("url", "https://s3.REGION.amazonaws.com",
          "The S3 service: http:// or https://, a host and a port, no "
          "path.") },

    { sft_string("s3_region"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_name,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(client.region),
      NULL,
      sft_command_doc("name", "us-east-1",
          "The region requests are signed for.") },

    { sft_string("s3_bucket"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_name,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(client.bucket),
      NULL,
      sft_command_doc("name", "",
          "The bucket that keeps the storage's files.") },

    { sft_string("s3_prefix"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_prefix,
      offsetof(sft_storage_conf_ctx_t, conf),
      0,
      NULL,
      sft_command_doc("prefix", "",
          "The keys of the storage's files begin with this directory of "
          "the bucket.") },

    { sft_string("s3_addressing"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_conf_set_enum_slot,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(client.path_style),
      &sft_s3_addressing,
      sft_command_doc("path | virtual", "path with s3_endpoint, else "
          "virtual", "The bucket in the path, or in the host name.") },

    { sft_string("s3_credentials"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE123,
      sft_s3_set_credentials,
      offsetof(sft_storage_conf_ctx_t, conf),
      0,
      NULL,
      sft_command_doc("file path | env | imds | web_identity [role_arn "
          "token_file]", "env, else imds",
          "Where the keys come from: a file only its owner may read, "
          "the environment, the instance metadata service, or a role "
          "assumed with a web identity token through STS (the role and "
          "token file given, else AWS_ROLE_ARN and "
          "AWS_WEB_IDENTITY_TOKEN_FILE).") },

    { sft_string("s3_sts_endpoint"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_name,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(sts.endpoint),
      NULL,
      sft_command_doc("url", "https://sts.REGION.amazonaws.com",
          "The STS service of s3_credentials web_identity.") },

    { sft_string("s3_ignore_chmod"),
      SFT_STORAGE_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(ignore_chmod),
      NULL,
      sft_command_doc("on | off", "off",
          "Take a change of mode (SITE CHMOD, SFTP SETSTAT) of a name "
          "that is there as done, and keep nothing; off refuses it as "
          "unsupported.") },

    { sft_string("s3_ca_file"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_conf_set_path_slot,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(client.ca_file),
      NULL,
      sft_command_doc("path", "",
          "Certificate authorities an https:// endpoint is verified "
          "against, instead of the system's.") },

    { sft_string("s3_tls_verify"),
      SFT_STORAGE_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(client.insecure),
      NULL,
      sft_command_doc("on | off", "on",
          "Verify the endpoint's certificate; off is logged as a "
          "warning.") },

    { sft_string("s3_part_size"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_bounded,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(part_size),
      &sft_s3_part_size_bounds,
      sft_command_doc("size", "8m",
          "The part of a multipart upload, from 5m to 5g.") },

    { sft_string("s3_parts_in_flight"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_bounded,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(parts_in_flight),
      &sft_s3_parts_bounds,
      sft_command_doc("number", "2",
          "Parts of one upload held and sent at once, 1 to 16.") },

    { sft_string("s3_storage_class"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_storage_class,
      offsetof(sft_storage_conf_ctx_t, conf),
      0,
      NULL,
      sft_command_doc("class", "",
          "The storage class of uploaded objects (STANDARD, "
          "STANDARD_IA, ...); none: the bucket's default.") },

    { sft_string("s3_sse"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE12,
      sft_s3_set_sse,
      offsetof(sft_storage_conf_ctx_t, conf),
      0,
      NULL,
      sft_command_doc("off | s3 | kms [key_id]", "off",
          "Server-side encryption of uploaded objects.") },

    { sft_string("s3_checksum"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_conf_set_enum_slot,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(checksum),
      &sft_s3_checksums,
      sft_command_doc("crc32c | md5 | off", "crc32c",
          "The checksum sent with each uploaded part.") },

    { sft_string("s3_timeout"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(client.timeout),
      NULL,
      sft_command_doc("time", "60s",
          "One attempt of a request, and its connection, give up after "
          "this long.") },

    { sft_string("s3_retries"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_bounded,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(client.retries),
      &sft_s3_retries_bounds,
      sft_command_doc("number", "3",
          "Attempts after the first of a request that failed for a "
          "reason that may pass (5xx, 429, a lost connection), 0 to "
          "20.") },

    { sft_string("s3_metadata_reuse"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_conf_set_msec_slot,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(memo_time),
      NULL,
      sft_command_doc("time", "1s",
          "How long what a worker's HEAD or peek of a name answered "
          "serves the open that follows a client's stat of it (an SFTP "
          "put or get), and the same session's next stat of it, "
          "instead of another request, and how long a session's "
          "listing of a directory after a name it found absent answers "
          "its stats of other new names there; 0: every open and stat "
          "asks S3.  Another session's stat always asks.") },

    { sft_string("s3_stat_peek"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_bounded,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(peek),
      &sft_s3_peek_bounds,
      sft_command_doc("size", "64k",
          "A stat of a name, and an open for reading that no stat came "
          "just before, ask for the object's first bytes, up to this "
          "many (a ranged GET), in place of a HEAD: a file no larger "
          "then comes whole with its stat, and the download that "
          "follows asks S3 nothing more.  The bytes are taken only "
          "from an answer that names its request "
          "(response-content-disposition, which AWS S3, Ceph RGW and "
          "MinIO send back); 0: a HEAD; at most 256k.") },

    { sft_string("s3_multipart_sweep_age"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_conf_set_sec_slot,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(sweep_age),
      NULL,
      sft_command_doc("time", "24h",
          "Multipart uploads of the prefix older than this, left by a "
          "worker that died, are aborted.") },

    { sft_string("s3_rename_max_objects"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_bounded,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(rename_max_objects),
      &sft_s3_rename_bounds,
      sft_command_doc("number", "1000",
          "A directory with more objects than this is not renamed.") },

    { sft_string("s3_copy_threshold"),
      SFT_STORAGE_CONF|SFT_CONF_TAKE1,
      sft_s3_set_bounded,
      offsetof(sft_storage_conf_ctx_t, conf),
      sft_s3_conf(copy_threshold),
      &sft_s3_copy_bounds,
      sft_command_doc("size", "5g",
          "Objects larger than this are copied on the server in parts "
          "of this size (renames, appends), from 5m to 5g: lower it for "
          "a server that copies less at once than S3.") },

    sft_null_command
};


static sft_storage_module_t  sft_s3_storage_module_ctx = {
    &sft_s3_storage_driver,
    sft_s3_storage_create_conf,
    sft_s3_storage_init_conf
};


sft_module_t  sft_s3_storage_module = {
    SFT_MODULE_V1,
    &sft_s3_storage_module_ctx,            /* module context */
    sft_s3_storage_commands,               /* module directives */
    SFT_STORAGE_MODULE,                    /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_s3_storage_init_process,           /* init process */
    sft_s3_storage_exit_process,           /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static void *
sft_s3_storage_create_conf(sft_conf_t *cf)
{
    sft_s3_storage_conf_t  *scf;

    scf = sft_pcalloc(cf->pool, sizeof(sft_s3_storage_conf_t));
    if (scf == NULL) {
        return NULL;
    }

    scf->client.path_style = SFT_CONF_UNSET_UINT;
    scf->client.insecure = SFT_CONF_UNSET;
    scf->client.timeout = SFT_CONF_UNSET_MSEC;
    scf->memo_time = SFT_CONF_UNSET_MSEC;
    scf->peek = SFT_CONF_UNSET_SIZE;
    scf->client.retries = SFT_CONF_UNSET_UINT;
    scf->part_size = SFT_CONF_UNSET_SIZE;
    scf->parts_in_flight = SFT_CONF_UNSET_UINT;
    scf->checksum = SFT_CONF_UNSET_UINT;
    scf->sweep_age = SFT_CONF_UNSET;
    scf->rename_max_objects = SFT_CONF_UNSET_UINT;
    scf->copy_threshold = SFT_CONF_UNSET_SIZE;
    scf->ignore_chmod = SFT_CONF_UNSET;

    return scf;
}


/* a name: the endpoint, region or bucket, checked as a whole at the end */

static char *
sft_s3_set_name(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    size_t      i;
    sft_str_t  *field, *value;

    field = (sft_str_t *) ((u_char *) conf + cmd->offset);

    if (field->data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    for (i = 0; i < value[1].len; i++) {
        if (value[1].data[i] <= ' ' || value[1].data[i] >= 0x7f) {
            break;
        }
    }

    if (value[1].len == 0 || i < value[1].len) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "invalid value \"%.*s\"",
                           SFT_STR_FMT(&value[1]));
        return SFT_CONF_ERROR;
    }

    *field = value[1];

    return SFT_CONF_OK;
}


/* "/a//b" is "a/b/": no leading slash, no empty segment, a trailing one */

static char *
sft_s3_set_prefix(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    u_char                 *p, *s, *end;
    sft_str_t              *value;
    sft_s3_storage_conf_t  *scf = conf;

    (void) cmd;

    if (scf->prefix.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len > SFT_S3_KEY_MAX / 2
        || memchr(value[1].data, '\0', value[1].len))
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "invalid prefix \"%.*s\"",
                           SFT_STR_FMT(&value[1]));
        return SFT_CONF_ERROR;
    }

    p = sft_pnalloc(cf->pool, value[1].len + 2);
    if (p == NULL) {
        return SFT_CONF_ERROR;
    }

    scf->prefix.data = p;
    s = value[1].data;
    end = s + value[1].len;

    while (s < end) {
        while (s < end && *s == '/') {
            s++;
        }

        if (s == end) {
            break;
        }

        while (s < end && *s != '/') {
            *p++ = *s++;
        }

        *p++ = '/';
    }

    scf->prefix.len = p - scf->prefix.data;

    return SFT_CONF_OK;
}


static char *
sft_s3_set_bounded(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    off_t             n;
    sft_str_t        *value;
    sft_uint_t       *np;
    sft_s3_bounds_t  *b;

    b = cmd->post;
    np = (sft_uint_t *) ((u_char *) conf + cmd->offset);

    if (*np != SFT_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;
    n = b->size ? sft_parse_offset(&value[1]) : sft_atoi(value[1].data,
                                                         value[1].len);

    if (n == SFT_ERROR || n < b->min || n > b->max) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "\"%.*s\" is not from %lld to %lld",
                           SFT_STR_FMT(&value[1]), (long long) b->min,
                           (long long) b->max);
        return SFT_CONF_ERROR;
    }

    *np = (sft_uint_t) n;

    return SFT_CONF_OK;
}


/* the keys of a file are read now: siftpd -t refuses a file others read */

static char *
sft_s3_set_credentials(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t              *value;
    sft_s3_storage_conf_t  *scf = conf;

    (void) cmd;

    if (scf->creds_from) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 3 && sft_str_eq(&value[1], "file")) {
        scf->creds_file = value[2];

        if (sft_conf_full_name(cf->cycle, &scf->creds_file) != SFT_OK) {
            return SFT_CONF_ERROR;
        }

        if (sft_s3_creds_file((char *) scf->creds_file.data, cf->pool,
                              cf->log, &scf->creds)
            != SFT_OK)
        {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "credentials file \"%s\" refused",
                               scf->creds_file.data);
            return SFT_CONF_ERROR;
        }

        scf->creds_from = SFT_S3_CREDS_FILE;
        return SFT_CONF_OK;
    }

    if (cf->args->nelts == 2 && sft_str_eq(&value[1], "env")) {
        if (sft_s3_creds_env(cf->pool, &scf->creds) != SFT_OK) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                               "are not both set");
            return SFT_CONF_ERROR;
        }

        scf->creds_from = SFT_S3_CREDS_ENV;
        return SFT_CONF_OK;
    }

    if (cf->args->nelts == 2 && sft_str_eq(&value[1], "imds")) {
        scf->creds_from = SFT_S3_CREDS_IMDS;
        return SFT_CONF_OK;
    }

    if (sft_str_eq(&value[1], "web_identity")) {
        return sft_s3_set_web_identity(cf, scf);
    }

    sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                       "invalid value \"%.*s\": file PATH, env, imds or "
                       "web_identity [ROLE_ARN TOKEN_FILE]",
                       SFT_STR_FMT(&value[1]));

    return SFT_CONF_ERROR;
}


/*
 * web_identity ROLE_ARN TOKEN_FILE, or the two from the environment; the
 * rest is checked with the region (sft_s3_storage_check), the token file
 * read now: siftpd -t says when it cannot be.
 */

static char *
sft_s3_set_web_identity(sft_conf_t *cf, sft_s3_storage_conf_t *scf)
{
    sft_fd_t    fd;
    sft_str_t  *value;

    value = cf->args->elts;

    if (cf->args->nelts == 4) {
        scf->sts.role_arn = value[2];
        scf->sts.token_file = value[3];

    } else if (cf->args->nelts != 2
               || sft_s3_sts_conf_env(&scf->sts, cf->pool) != SFT_OK)
    {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           cf->args->nelts == 2
                           ? "web_identity without a role and a token file "
                             "needs AWS_ROLE_ARN and "
                             "AWS_WEB_IDENTITY_TOKEN_FILE"
                           : "web_identity takes a role ARN and a token "
                             "file, or neither");
        return SFT_CONF_ERROR;
    }

    if (sft_conf_full_name(cf->cycle, &scf->sts.token_file) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    fd = open((char *) scf->sts.token_file.data, O_RDONLY|O_CLOEXEC);

    if (fd == SFT_INVALID_FILE) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, errno,
                           "web identity token file \"%s\" cannot be read",
                           scf->sts.token_file.data);
        return SFT_CONF_ERROR;
    }

    (void) close(fd);

    scf->creds_from = SFT_S3_CREDS_WEB;

    return SFT_CONF_OK;
}


static char *
sft_s3_set_sse(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t              *value;
    sft_s3_storage_conf_t  *scf = conf;

    (void) cmd;

    value = cf->args->elts;

    if (cf->args->nelts == 2 && sft_str_eq(&value[1], "off")) {
        scf->sse = SFT_S3_SSE_NONE;

    } else if (cf->args->nelts == 2 && sft_str_eq(&value[1], "s3")) {
        scf->sse = SFT_S3_SSE_S3;

    } else if (sft_str_eq(&value[1], "kms")) {
        scf->sse = SFT_S3_SSE_KMS;

        if (cf->args->nelts == 3) {
            scf->sse_key = value[2];
        }

    } else {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "invalid value \"%.*s\": off, s3 or kms [KEY]",
                           SFT_STR_FMT(&value[1]));
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static char *
sft_s3_set_storage_class(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_uint_t              i;
    sft_str_t              *value;
    sft_s3_storage_conf_t  *scf = conf;
    static const char      *classes[] = {
        "STANDARD", "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA",
        "INTELLIGENT_TIERING", "GLACIER", "GLACIER_IR", "DEEP_ARCHIVE",
        "EXPRESS_ONEZONE", NULL
    };

    (void) cmd;

    value = cf->args->elts;

    for (i = 0; classes[i]; i++) {
        if (value[1].len == sft_strlen(classes[i])
            && sft_strncmp(value[1].data, classes[i], value[1].len) == 0)
        {
            scf->storage_class = value[1];
            return SFT_CONF_OK;
        }
    }

    sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                       "unknown storage class \"%.*s\"",
                       SFT_STR_FMT(&value[1]));

    return SFT_CONF_ERROR;
}


/* every storage block: ours get their defaults and the endpoint's check */

static char *
sft_s3_storage_init_conf(sft_conf_t *cf, sft_storage_t *st, void *conf)
{
    sft_s3_storage_conf_t  *scf = conf;

    if (st->driver == &sft_s3_storage_driver) {
        return sft_s3_storage_check(cf, st, scf);
    }

    if (scf->client.bucket.data || scf->client.endpoint.data
        || scf->prefix.data || scf->creds_from)
    {
        sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                      "s3_ directives are not parameters of driver "
                      "\"%.*s\" in storage \"%.*s\" in %.*s:%lu",
                      SFT_STR_FMT(&st->driver->name), SFT_STR_FMT(&st->name),
                      SFT_STR_FMT(&st->file), (unsigned long) st->line);
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static char *
sft_s3_storage_check(sft_conf_t *cf, sft_storage_t *st,
    sft_s3_storage_conf_t *scf)
{
    u_char           *p;
    sft_s3_client_t  *cl;

    cl = &scf->client;

    if (cl->bucket.data == NULL) {
        sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                      "no \"s3_bucket\" in storage \"%.*s\" in %.*s:%lu",
                      SFT_STR_FMT(&st->name), SFT_STR_FMT(&st->file),
                      (unsigned long) st->line);
        return SFT_CONF_ERROR;
    }

    if (cl->region.data == NULL) {
        sft_str_set(&cl->region, "us-east-1");
    }

    if (cl->path_style == (sft_flag_t) SFT_CONF_UNSET_UINT) {
        cl->path_style = (cl->endpoint.data != NULL);
    }

    if (cl->endpoint.data == NULL) {
        p = sft_pnalloc(cf->pool, cl->region.len + 32);
        if (p == NULL) {
            return SFT_CONF_ERROR;
        }

        cl->endpoint.data = p;
        cl->endpoint.len = snprintf((char *) p, cl->region.len + 32,
                                    "https://s3.%.*s.amazonaws.com",
                                    SFT_STR_FMT(&cl->region));
    }

    cl->insecure = (cl->insecure == 0);     /* s3_tls_verify off */
    sft_conf_init_msec_value(cl->timeout, 60000);
    cl->connect_timeout = sft_min(cl->timeout, 10000);
    sft_conf_init_uint_value(cl->retries, 3);
    cl->backoff = 100;
    cl->log = cf->log;
    cl->creds = &scf->creds;

    sft_conf_init_size_value(scf->part_size, 8 * 1024 * 1024);
    sft_conf_init_uint_value(scf->parts_in_flight, 2);
    sft_conf_init_msec_value(scf->memo_time, 1000);
    sft_conf_init_size_value(scf->peek, 64 * 1024);
    sft_conf_init_uint_value(scf->checksum, SFT_S3_CHECKSUM_CRC32C);
    sft_conf_init_value(scf->sweep_age, 86400);
    sft_conf_init_uint_value(scf->rename_max_objects, 1000);
    sft_conf_init_size_value(scf->copy_threshold, (size_t) SFT_S3_PART_MAX);

    if (scf->prefix.data == NULL) {
        sft_str_set(&scf->prefix, "");
    }

    if (sft_s3_client_endpoint(cl, cf->pool) != SFT_OK) {
        sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                      "in storage \"%.*s\" in %.*s:%lu",
                      SFT_STR_FMT(&st->name), SFT_STR_FMT(&st->file),
                      (unsigned long) st->line);
        return SFT_CONF_ERROR;
    }

    if (scf->creds_from == 0) {
        scf->creds_from = sft_s3_creds_env(cf->pool, &scf->creds) == SFT_OK
                          ? SFT_S3_CREDS_ENV : SFT_S3_CREDS_IMDS;
    }

    scf->sts.region = cl->region;

    if ((scf->creds_from == SFT_S3_CREDS_WEB
         && sft_s3_sts_conf_check(&scf->sts, cf->pool, cf->log) != SFT_OK)
        || (scf->creds_from != SFT_S3_CREDS_WEB && scf->sts.endpoint.data))
    {
        sft_log_error(SFT_LOG_EMERG, cf->log, 0,
                      "%sin storage \"%.*s\" in %.*s:%lu",
                      scf->creds_from == SFT_S3_CREDS_WEB
                      ? "" : "\"s3_sts_endpoint\" without web_identity ",
                      SFT_STR_FMT(&st->name), SFT_STR_FMT(&st->file),
                      (unsigned long) st->line);
        return SFT_CONF_ERROR;
    }

    if (sft_s3_confine(cf->cycle, scf) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    sft_conf_init_value(scf->ignore_chmod, 0);

    if (scf->ignore_chmod) {
        st->caps |= SFT_STORAGE_CAP_MODES;
    }

    scf->storage = st;
    scf->dev = sft_s3_key_hash(st->name.data, st->name.len);
    st->driver_data = scf;

    return SFT_CONF_OK;
}


/*
 * After the core's settings: a part is gathered whole from the buffer
 * pool, so one that does not fit in what the pool lends S3 parts would
 * never fill; such a storage is refused.
 */

char *
sft_s3_storage_pool_check(sft_cycle_t *cycle)
{
    size_t                  need, lent;
    sft_uint_t              i, n;
    sft_storage_t         **stp;
    sft_core_conf_t        *ccf;
    sft_s3_storage_conf_t  *scf;

    ccf = (sft_core_conf_t *) sft_get_conf(cycle->conf_ctx, sft_core_module);
    stp = sft_storage_all(cycle, &n);

    if (ccf == NULL || ccf->transfer_chunk_bytes == 0) {
        return SFT_CONF_OK;
    }

    lent = sft_s3_upload_chunks_max(ccf->buffer_pool_bytes
                                    / ccf->transfer_chunk_bytes);

    for (i = 0; i < n; i++) {
        if (stp[i]->driver != &sft_s3_storage_driver) {
            continue;
        }

        scf = stp[i]->driver_data;
        need = (scf->part_size + ccf->transfer_chunk_bytes - 1)
               / ccf->transfer_chunk_bytes;

        if (need > lent) {
            sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                          "\"s3_part_size\" of %zu bytes needs %zu chunks "
                          "of \"transfer_chunk_bytes\", \"buffer_pool_bytes\" "
                          "lends S3 parts %zu (all but an eighth) in storage "
                          "\"%.*s\" in %.*s:%lu", scf->part_size, need, lent,
                          SFT_STR_FMT(&stp[i]->name),
                          SFT_STR_FMT(&stp[i]->file),
                          (unsigned long) stp[i]->line);
            return SFT_CONF_ERROR;
        }
    }

    return SFT_CONF_OK;
}


/* each worker: its client on its loop, then one look at the bucket */

static sft_int_t
sft_s3_storage_init_process(sft_cycle_t *cycle)
{
    sft_uint_t               i, n;
    sft_storage_t          **stp;

    stp = sft_storage_all(cycle, &n);

    for (i = 0; i < n; i++) {
        if (stp[i]->driver == &sft_s3_storage_driver
            && sft_s3_storage_start(stp[i]->driver_data, cycle) != SFT_OK)
        {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


/* the instance metadata fetches stop before the multi handle goes */

static void
sft_s3_storage_exit_process(sft_cycle_t *cycle)
{
    sft_uint_t               i, n;
    sft_storage_t          **stp;
    sft_s3_storage_conf_t   *scf;

    stp = sft_storage_all(cycle, &n);

    for (i = 0; i < n; i++) {
        if (stp[i]->driver != &sft_s3_storage_driver) {
            continue;
        }

        scf = stp[i]->driver_data;

        if (scf->sweep) {
            sft_s3_sweep_cancel(scf->sweep);
            scf->sweep = NULL;
        }

        if (scf->imds) {
            sft_s3_imds_stop(scf->imds);
            scf->imds = NULL;
        }

        if (scf->web) {
            sft_s3_sts_stop(scf->web);
            scf->web = NULL;
        }

        sft_s3_memo_free(scf);
    }
}


static sft_int_t
sft_s3_storage_start(sft_s3_storage_conf_t *scf, sft_cycle_t *cycle)
{
    scf->log = cycle->log;
    scf->client.log = cycle->log;

    if (sft_s3_multi_init(cycle->log) != SFT_OK) {
        return SFT_ERROR;
    }

    if (scf->creds_from == SFT_S3_CREDS_IMDS) {
        scf->imds = sft_pcalloc(cycle->pool, sizeof(sft_s3_imds_t));
        if (scf->imds == NULL) {
            return SFT_ERROR;
        }

        sft_str_set(&scf->imds->endpoint, SFT_S3_IMDS_ENDPOINT);
        scf->imds->timeout = 5000;
        scf->imds->log = cycle->log;
        scf->imds->on_update = sft_s3_storage_imds_keys;
        scf->imds->data = scf;
        scf->client.creds = &scf->imds->creds;

        if (sft_s3_imds_start(scf->imds) != SFT_OK) {
            return SFT_ERROR;
        }
    }

    if (scf->creds_from == SFT_S3_CREDS_WEB) {
        scf->web = sft_pcalloc(cycle->pool, sizeof(sft_s3_sts_t));
        if (scf->web == NULL) {
            return SFT_ERROR;
        }

        scf->web->conf = &scf->sts;
        scf->web->thread_pool = scf->storage->thread_pool;
        scf->web->timeout = scf->client.connect_timeout;
        scf->web->log = cycle->log;
        scf->web->on_update = sft_s3_storage_web_keys;
        scf->web->data = scf;
        scf->client.creds = &scf->web->creds;

        if (sft_s3_sts_start(scf->web) != SFT_OK) {
            return SFT_ERROR;
        }
    }

    /* keys that are fetched: the look and the sweep wait for them */

    scf->pool = cycle->pool;

    if (scf->imds || scf->web) {
        return SFT_OK;
    }

    return sft_s3_storage_look(scf);
}


/* the bucket looked at, then the sweep: with the first keys */

static sft_int_t
sft_s3_storage_look(sft_s3_storage_conf_t *scf)
{
    sft_s3_request_t  *r;

    r = sft_s3_request_create(&scf->client);
    if (r == NULL) {
        return SFT_ERROR;
    }

    if (sft_s3_list_query(r, &scf->prefix, 0, 1, NULL, NULL) != SFT_OK) {
        sft_s3_request_free(r);
        return SFT_ERROR;
    }

    sft_str_set(&r->method, "GET");
    sft_str_set(&r->key, "");              /* the bucket */
    r->idempotent = 1;
    r->on_done = sft_s3_storage_checked;
    r->data = scf;

    if (sft_s3_request_start(r) != SFT_OK) {
        sft_s3_request_free(r);
        return SFT_ERROR;
    }

    return SFT_OK;
}


/* new keys (of the instance's role, of the role assumed), or none (the
   fetch logged why) */

static void
sft_s3_storage_keys(sft_s3_storage_conf_t *scf, sft_int_t rc)
{
    sft_log_debug(scf->log, "S3 storage \"%.*s\": %s keys",
                  SFT_STR_FMT(&scf->storage->name),
                  rc == SFT_OK ? "new" : "no new");

    if (rc != SFT_OK || scf->looked) {
        return;
    }

    scf->looked = 1;

    if (sft_s3_storage_look(scf) != SFT_OK) {
        sft_log_error(SFT_LOG_ERR, scf->log, 0,
                      "S3 storage \"%.*s\": the bucket is not looked at, "
                      "no memory", SFT_STR_FMT(&scf->storage->name));
    }
}


static void
sft_s3_storage_web_keys(sft_s3_sts_t *m, sft_int_t rc)
{
    sft_s3_storage_keys(m->data, rc);
}


static void
sft_s3_storage_imds_keys(sft_s3_imds_t *m, sft_int_t rc)
{
    sft_s3_storage_keys(m->data, rc);
}


/*
 * Multipart uploads a crash or a kill left behind, older than
 * s3_multipart_sweep_age: aborted by one worker only, so that the
 * workers do not race over them, once the start's listing worked (keys
 * refused or a bucket missing are told by that one line).
 */

static sft_int_t
sft_s3_storage_sweep(sft_s3_storage_conf_t *scf)
{
    sft_s3_sweep_t  *sw;

    if (sft_process_slot != 0) {
        return SFT_OK;
    }

    sw = sft_pcalloc(scf->pool, sizeof(sft_s3_sweep_t));
    if (sw == NULL) {
        return SFT_ERROR;
    }

    sw->client = &scf->client;
    sw->prefix = scf->prefix;
    sw->age = scf->sweep_age;
    sw->on_done = sft_s3_storage_swept;
    sw->data = scf;

    if (sft_s3_sweep_start(sw) != SFT_OK) {
        return SFT_ERROR;
    }

    scf->sweep = sw;

    return SFT_OK;
}


static void
sft_s3_storage_swept(sft_s3_sweep_t *sw, sft_int_t rc)
{
    sft_s3_storage_conf_t  *scf = sw->data;

    scf->sweep = NULL;

    sft_log_error(rc == SFT_OK ? SFT_LOG_INFO : SFT_LOG_ERR, scf->log, 0,
                  "S3 storage \"%.*s\": %lu multipart uploads older than "
                  "%lds aborted under \"%.*s\"%s",
                  SFT_STR_FMT(&scf->storage->name),
                  (unsigned long) sw->aborted, (long) sw->age,
                  SFT_STR_FMT(&scf->prefix),
                  rc == SFT_OK ? "" : ", then the sweep failed");
}


/*
 * One line when the bucket is not there or the keys are refused, else
 * the sweep
 */

static void
sft_s3_storage_checked(sft_s3_request_t *r)
{
    sft_str_t               code;
    sft_s3_storage_conf_t  *scf = r->data;

    if (r->rc == SFT_OK && r->status == 200) {
        sft_s3_request_free(r);

        if (sft_s3_storage_sweep(scf) != SFT_OK) {
            sft_log_error(SFT_LOG_ERR, scf->log, 0,
                          "S3 storage \"%.*s\": the sweep did not start",
                          SFT_STR_FMT(&scf->storage->name));
        }

        return;
    }

    code = r->error.code;
    if (code.len == 0) {
        sft_str_set(&code, "-");
    }

    if (r->rc == SFT_OK) {
        sft_log_error(SFT_LOG_ERR, scf->log, 0,
                      "S3 storage \"%.*s\": bucket \"%.*s\" at %.*s "
                      "answered status %ld, %.*s",
                      SFT_STR_FMT(&scf->storage->name),
                      SFT_STR_FMT(&scf->client.bucket),
                      SFT_STR_FMT(&scf->client.endpoint), r->status,
                      SFT_STR_FMT(&code));

    } else {
        sft_log_error(SFT_LOG_ERR, scf->log, 0,
                      "S3 storage \"%.*s\": bucket \"%.*s\" at %.*s "
                      "cannot be reached: %s",
                      SFT_STR_FMT(&scf->storage->name),
                      SFT_STR_FMT(&scf->client.bucket),
                      SFT_STR_FMT(&scf->client.endpoint), r->curl_error);
    }

    sft_s3_request_free(r);
}


/* a file open for writing is an upload (sft_s3_write.c) */

static sft_int_t
sft_s3_close(sft_storage_req_t *req)
{
    if (req->file->write) {
        return sft_s3_close_write(req);
    }

    return sft_s3_close_read(req);
}
