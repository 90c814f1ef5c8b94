/*
 * sft_xfer.c -- the end of a file transfer, for every protocol: the
 * transfer counters (count and bytes by direction and data path, the
 * file bytes sent and received over all paths, the chunks io_uring
 * read and wrote, whatever the path, and a histogram of durations by
 * direction) and the
 * "transfer_log FILE;" line in xferlog format:
 *
 *   Mon Nov 30 08:48:12 2026 1 127.0.0.1 4194304 /docs/a_b.pdf b _ i r
 *       alice ftp 0 * c
 *
 * current time, seconds (at least 1), client, bytes, path (white space and
 * control characters as '_', so the line splits on blanks), a(scii) or
 * b(inary), no special action, o(utgoing) or i(ncoming), r(eal user),
 * user, service (ftp or sftp), no RFC 931 identity, c(omplete) or
 * i(ncomplete).  The file is opened by each cycle and reopened on USR1.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_xfer.h>
#include <sft_xfer_pipe.h>
#include <sft_vfs.h>


#define SFT_XFER_LINE_MAX  (4096 + 512)   /* a path, and the rest */


typedef struct {
    sft_log_file_t     file;        /* name.len 0: no transfer log */
} sft_xfer_conf_t;


static void *sft_xfer_create_conf(sft_cycle_t *cycle);
static char *sft_xfer_init_conf(sft_cycle_t *cycle, void *conf);
static char *sft_xfer_set_log(sft_conf_t *cf, sft_command_t *cmd,
    void *conf);
static void sft_xfer_close_file(void *data);
static sft_int_t sft_xfer_init_process(sft_cycle_t *cycle);
static void sft_xfer_exit_process(sft_cycle_t *cycle);


static sft_command_t  sft_xfer_commands[] = {

    { sft_string("transfer_log"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE1,
      sft_xfer_set_log,
      0,
      0,
      NULL,
      sft_command_doc("file | off", "off",
          "Log every finished transfer in xferlog format.") },

    sft_null_command
};


static sft_uint_t  sft_xfer_stat_received;
static sft_uint_t  sft_xfer_stat_sent;
static sft_uint_t  sft_xfer_stat_count;     /* [direction][data path] */
static sft_uint_t  sft_xfer_stat_bytes;     /* [direction][data path] */
static sft_uint_t  sft_xfer_stat_ring_ops;  /* [read, write] */
static sft_uint_t  sft_xfer_stat_ring_bytes;
static sft_uint_t  sft_xfer_stat_duration;  /* [direction] */

static const char *const  sft_xfer_directions[] = {
    "download", "upload", NULL
};

/* in the order of sft_xfer_path_e */
static const char *const  sft_xfer_paths[] = {
    "sendfile", "splice", "pooled", "tls", "tls_sealed", "ktls", "sftp",
    "io_uring", NULL
};

static const char *const  sft_xfer_ring_ops[] = {
    "read", "write", NULL
};

static const uint64_t  sft_xfer_duration_bounds[] = {
    10000, 100000, 500000, 1000000, 5000000, 10000000, 30000000, 60000000,
    300000000, 1800000000, 3600000000
};

static const char *const  sft_xfer_duration_le[] = {
    "0.01", "0.1", "0.5", "1", "5", "10", "30", "60", "300", "1800", "3600"
};

static const sft_stat_buckets_t  sft_xfer_duration_buckets = {
    sft_nelems(sft_xfer_duration_bounds), sft_xfer_duration_bounds,
    sft_xfer_duration_le
};


static const sft_stat_def_t  sft_xfer_stats[] = {
    { .name = "bytes_received_total", .json = "bytes.received",
      .help = "File bytes uploaded by ended transfers, all protocols.",
      .index = &sft_xfer_stat_received },
    { .name = "bytes_sent_total", .json = "bytes.sent",
      .help = "File bytes downloaded by ended transfers, all protocols.",
      .index = &sft_xfer_stat_sent },
    { .name = "transfers_total", .json = "transfers.$1.$2.count",
      .help = "Finished file transfers by direction and data path.",
      .label = { "direction", "path" },
      .values = { sft_xfer_directions, sft_xfer_paths },
      .index = &sft_xfer_stat_count },
    { .name = "transfer_bytes_total", .json = "transfers.$1.$2.bytes",
      .help = "Bytes of file transfers by direction and data path.",
      .label = { "direction", "path" },
      .values = { sft_xfer_directions, sft_xfer_paths },
      .index = &sft_xfer_stat_bytes },
    { .name = "io_uring_ops_total", .json = "io_uring.$1.ops",
      .help = "Chunk reads and writes of transfers done by io_uring, "
              "any data path.",
      .label = { "op" },
      .values = { sft_xfer_ring_ops },
      .index = &sft_xfer_stat_ring_ops },
    { .name = "io_uring_bytes_total", .json = "io_uring.$1.bytes",
      .help = "File bytes read and written by io_uring for transfers.",
      .label = { "op" },
      .values = { sft_xfer_ring_ops },
      .index = &sft_xfer_stat_ring_bytes },
    { .name = "transfer_duration_seconds", .json = "transfer_seconds.$1",
      .help = "How long ended file transfers took, first to last byte "
              "(to the millisecond), by direction.",
      .type = SFT_STAT_HISTOGRAM, .buckets = &sft_xfer_duration_buckets,
      .label = { "direction" },
      .values = { sft_xfer_directions },
      .index = &sft_xfer_stat_duration },
};


static sft_core_module_t  sft_xfer_module_ctx = {
    sft_string("xfer"),
    sft_xfer_create_conf,
    sft_xfer_init_conf
};


sft_module_t  sft_xfer_module = {
    SFT_MODULE_V1,
    &sft_xfer_module_ctx,                  /* module context */
    sft_xfer_commands,                     /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_xfer_init_process,                 /* init process */
    sft_xfer_exit_process,                 /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


/* the running cycle's log file, in workers */
static sft_log_file_t  *sft_xfer_file;


static void *
sft_xfer_create_conf(sft_cycle_t *cycle)
{
    sft_xfer_conf_t  *xcf;

    xcf = sft_pcalloc(cycle->pool, sizeof(sft_xfer_conf_t));
    if (xcf == NULL) {
        return NULL;
    }

    xcf->file.fd = SFT_INVALID_FILE;

    return xcf;
}


static char *
sft_xfer_set_log(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t        *value;
    sft_xfer_conf_t  *xcf = conf;

    (void) cmd;

    if (xcf->file.name.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (sft_str_eq(&value[1], "off")) {
        sft_str_set(&xcf->file.name, "");
        return SFT_CONF_OK;
    }

    xcf->file.name = value[1];

    if (sft_conf_full_name(cf->cycle, &xcf->file.name) != SFT_OK) {
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static char *
sft_xfer_init_conf(sft_cycle_t *cycle, void *conf)
{
    sft_log_file_t      **f;
    sft_xfer_conf_t      *xcf = conf;
    sft_pool_cleanup_t   *cln;

    if (sft_stat_register(cycle, sft_xfer_stats, sft_nelems(sft_xfer_stats))
        != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    if (xcf->file.name.len == 0 || sft_test_config || sft_signaller) {
        return SFT_CONF_OK;
    }

    cln = sft_pool_cleanup_add(cycle->pool, 0);
    f = sft_array_push(&cycle->open_files);

    if (cln == NULL || f == NULL
        || sft_log_open_file(&xcf->file, cycle->log) != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    cln->handler = sft_xfer_close_file;
    cln->data = &xcf->file;
    *f = &xcf->file;

    return SFT_CONF_OK;
}


static void
sft_xfer_close_file(void *data)
{
    sft_log_file_t  *file = data;

    if (file->fd != SFT_INVALID_FILE) {
        close(file->fd);
        file->fd = SFT_INVALID_FILE;
    }
}


static sft_int_t
sft_xfer_init_process(sft_cycle_t *cycle)
{
    sft_xfer_conf_t  *xcf;

    xcf = (sft_xfer_conf_t *) sft_get_conf(cycle->conf_ctx, sft_xfer_module);

    sft_xfer_file = (xcf->file.fd != SFT_INVALID_FILE) ? &xcf->file : NULL;

    return SFT_OK;
}


/* the spare splice pipes of uploads */

static void
sft_xfer_exit_process(sft_cycle_t *cycle)
{
    (void) cycle;

    sft_xfer_pipe_close_spares();
}


/* a chunk read (write 0) or written by io_uring */

/* the data path's label, as in the transfer counters; NULL: none such */

const char *
sft_xfer_path_name(sft_uint_t path)
{
    return path < SFT_XFER_NPATHS ? sft_xfer_paths[path] : NULL;
}


void
sft_xfer_count_ring(sft_uint_t write, size_t n)
{
    sft_stat_add(sft_xfer_stat_ring_ops + write, 1);
    sft_stat_add(sft_xfer_stat_ring_bytes + write, n);
}


/* the absolute path as the user sees it, into out[SFT_STORAGE_PATH_MAX] */

size_t
sft_xfer_user_path(const u_char *cwd, size_t cwd_len, const u_char *path,
    size_t len, u_char *out)
{
    size_t  n;

    if (sft_vfs_normalize(cwd, cwd_len, path, len, out, &n)
        != SFT_STORAGE_OK)
    {
        n = sft_min(len, SFT_STORAGE_PATH_MAX);
        sft_memcpy(out, path, n);
    }

    return n;
}


void
sft_xfer_done(sft_xfer_t *x)
{
    u_char     *p, *last;
    size_t      i, n;
    sft_uint_t  k;
    time_t      now;
    struct tm   tm;
    sft_msec_t  secs;
    u_char      line[SFT_XFER_LINE_MAX];
    u_char      path[SFT_STORAGE_PATH_MAX + 1];

    k = x->direction * SFT_XFER_NPATHS + x->data_path;

    sft_stat_add(sft_xfer_stat_count + k, 1);
    sft_stat_add(sft_xfer_stat_bytes + k, x->bytes);
    sft_stat_add(x->direction == SFT_XFER_DOWNLOAD ? sft_xfer_stat_sent
                                                   : sft_xfer_stat_received,
                 x->bytes);
    sft_stat_observe(sft_xfer_stat_duration, &sft_xfer_duration_buckets,
                     x->direction,
                     (uint64_t) (sft_current_msec - x->start) * 1000);

    if (sft_xfer_file == NULL) {
        return;
    }

    now = time(NULL);
    localtime_r(&now, &tm);

    p = line;
    last = line + sizeof(line);

    p += strftime((char *) p, last - p, "%a %b %e %H:%M:%S %Y", &tm);

    secs = (sft_current_msec - x->start + 999) / 1000;

    p = sft_slprintf(p, last, " %lu %.*s %lld ",
                     (unsigned long) (secs ? secs : 1), SFT_STR_FMT(x->peer),
                     (long long) x->bytes);

    n = sft_xfer_user_path(x->cwd, x->cwd_len, x->path, x->path_len, path);

    for (i = 0; i < n && p < last - 128; i++) {
        *p++ = (path[i] <= ' ' || path[i] == 0x7f) ? '_' : path[i];
    }

    p = sft_slprintf(p, last, " %c _ %c r %.*s %s 0 * %c\n",
                     x->ascii ? 'a' : 'b',
                     x->direction == SFT_XFER_DOWNLOAD ? 'o' : 'i',
                     SFT_STR_FMT(x->user), x->service,
                     x->complete ? 'c' : 'i');

    /* one write(2) with O_APPEND: whole lines from every worker */

    if (write(sft_xfer_file->fd, line, p - line) == -1) {
        sft_log_error(SFT_LOG_ERR, ((sft_cycle_t *) sft_cycle)->log,
                      sft_errno, "write() to \"%s\" failed",
                      sft_xfer_file->name.data);
    }
}
