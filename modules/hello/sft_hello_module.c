/*
 * sft_hello_module.c -- an example third-party HTTP module: the directive
 * "hello_text" and GET /hello answering with it.  It shows what a module
 * author writes: a directive table, configuration create/merge, a route,
 * a counter of its own in /metrics and /api/v1/stats, and a worker start
 * hook.
 *
 * For the tests of the workers' seccomp filter, "hello_syscall_probe on"
 * opens GET /hello/NAME: the worker makes a call it never makes otherwise
 * and answers with the result and errno.  personality: personality(2) off
 * the list; packet: a packet socket; wx: memory made writable and
 * executable; fork: a process; kill: signal 0 to init.
 * "hello_probe_path FILE;" is a hook for the tests of Landlock: each worker
 * opens FILE at its start, on its own thread and on a thread of the
 * "default" pool, with open(2) and not through the storage layer, and
 * logs what happened (Landlock must refuse what no module declared).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_http.h>

#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>


typedef struct {
    sft_str_t   probe_path;
} sft_hello_main_conf_t;


typedef struct {
    sft_str_t   text;
    sft_flag_t  syscall_probe;
} sft_hello_srv_conf_t;


typedef struct {
    sft_str_t   name;
    long      (*call)(void);
} sft_hello_syscall_t;


static void *sft_hello_create_main_conf(sft_conf_t *cf);
static void *sft_hello_create_srv_conf(sft_conf_t *cf);
static char *sft_hello_merge_srv_conf(sft_conf_t *cf, void *parent,
    void *child);
static char *sft_hello_init_main_conf(sft_conf_t *cf, void *conf);
static sft_int_t sft_hello_handler(sft_http_request_t *r);
static sft_int_t sft_hello_syscall_handler(sft_http_request_t *r);
static long sft_hello_personality(void);
static long sft_hello_packet(void);
static long sft_hello_wx(void);
static long sft_hello_fork(void);
static long sft_hello_kill(void);
static sft_int_t sft_hello_init_process(sft_cycle_t *cycle);
static void sft_hello_probe(u_char *path, const char *where, sft_log_t *log);
static void sft_hello_probe_thread(void *data, sft_log_t *log);
static void sft_hello_probe_done(sft_event_t *ev);


/* set by sft_stat_register() to the counter's place in a stats slot */
static sft_uint_t  sft_hello_stat_requests;


static const sft_stat_def_t  sft_hello_stats[] = {
    { .name = "hello_requests_total", .json = "hello.requests",
      .type = SFT_STAT_COUNTER, .help = "Requests answered by GET /hello.",
      .index = &sft_hello_stat_requests },
};


static const sft_hello_syscall_t  sft_hello_syscalls[] = {
    { sft_string("personality"), sft_hello_personality },
    { sft_string("packet"), sft_hello_packet },
    { sft_string("wx"), sft_hello_wx },
    { sft_string("fork"), sft_hello_fork },
    { sft_string("kill"), sft_hello_kill },
};


static sft_command_t  sft_hello_commands[] = {

    { sft_string("hello_text"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_TAKE1,
      sft_conf_set_str_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_hello_srv_conf_t, text),
      NULL,
      sft_command_doc("text", "hello, world",
          "What GET /hello answers.") },

    { sft_string("hello_syscall_probe"),
      SFT_PROTO_MAIN_CONF|SFT_PROTO_SRV_CONF|SFT_CONF_FLAG,
      sft_conf_set_flag_slot,
      SFT_PROTO_SRV_CONF_OFFSET,
      offsetof(sft_hello_srv_conf_t, syscall_probe),
      NULL,
      sft_command_doc("on | off", "off",
          "Test hook: GET /hello/personality, /hello/packet, /hello/wx, "
          "/hello/fork and /hello/kill make system calls no worker needs, "
          "to show the seccomp filter.") },

    { sft_string("hello_probe_path"),
      SFT_PROTO_MAIN_CONF|SFT_CONF_TAKE1,
      sft_conf_set_path_slot,
      SFT_PROTO_MAIN_CONF_OFFSET,
      offsetof(sft_hello_main_conf_t, probe_path),
      NULL,
      sft_command_doc("file", "",
          "Test hook: each worker opens FILE at its start, bypassing the "
          "storage layer, and logs the result, to show Landlock.") },

    sft_null_command
};


static sft_proto_module_t  sft_hello_module_ctx = {
    sft_hello_create_main_conf,
    sft_hello_init_main_conf,
    sft_hello_create_srv_conf,
    sft_hello_merge_srv_conf
};


sft_module_t  sft_hello_module = {
    SFT_MODULE_V1,
    &sft_hello_module_ctx,                 /* module context */
    sft_hello_commands,                    /* module directives */
    SFT_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_hello_init_process,                /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static void *
sft_hello_create_main_conf(sft_conf_t *cf)
{
    return sft_pcalloc(cf->pool, sizeof(sft_hello_main_conf_t));
}


static void *
sft_hello_create_srv_conf(sft_conf_t *cf)
{
    sft_hello_srv_conf_t  *hscf;

    hscf = sft_pcalloc(cf->pool, sizeof(sft_hello_srv_conf_t));
    if (hscf == NULL) {
        return NULL;
    }

    hscf->syscall_probe = SFT_CONF_UNSET;

    return hscf;
}


static char *
sft_hello_merge_srv_conf(sft_conf_t *cf, void *parent, void *child)
{
    sft_hello_srv_conf_t  *prev = parent;
    sft_hello_srv_conf_t  *conf = child;

    (void) cf;

    sft_conf_merge_str_value(conf->text, prev->text, "hello, world");
    sft_conf_merge_value(conf->syscall_probe, prev->syscall_probe, 0);

    return SFT_CONF_OK;
}


static char *
sft_hello_init_main_conf(sft_conf_t *cf, void *conf)
{
    (void) conf;

    if (sft_http_add_route(cf, "/hello", SFT_HTTP_GET, sft_hello_handler)
        != SFT_OK
        || sft_http_add_route(cf, "/hello/*", SFT_HTTP_GET,
                              sft_hello_syscall_handler)
           != SFT_OK
        || sft_stat_register(cf->cycle, sft_hello_stats,
                             sft_nelems(sft_hello_stats))
           != SFT_OK)
    {
        return SFT_CONF_ERROR;
    }

    return SFT_CONF_OK;
}


static sft_int_t
sft_hello_handler(sft_http_request_t *r)
{
    sft_hello_srv_conf_t  *hscf;

    hscf = sft_proto_get_module_srv_conf(r->hc->ctx, sft_hello_module);

    sft_stat_add(sft_hello_stat_requests, 1);

    return sft_http_send_response(r, 200, "text/plain", &hscf->text);
}


static sft_int_t
sft_hello_syscall_handler(sft_http_request_t *r)
{
    int                         err;
    long                        rc;
    sft_str_t                   body, name;
    sft_uint_t                  i;
    sft_hello_srv_conf_t       *hscf;
    const sft_hello_syscall_t  *sc;
    u_char                      buf[64];

    hscf = sft_proto_get_module_srv_conf(r->hc->ctx, sft_hello_module);

    name.data = r->path.data + sizeof("/hello/") - 1;
    name.len = r->path.len - (sizeof("/hello/") - 1);

    sc = NULL;

    for (i = 0; i < sft_nelems(sft_hello_syscalls); i++) {
        if (sft_hello_syscalls[i].name.len == name.len
            && sft_strncmp(sft_hello_syscalls[i].name.data, name.data,
                           name.len) == 0)
        {
            sc = &sft_hello_syscalls[i];
            break;
        }
    }

    if (!hscf->syscall_probe || sc == NULL) {
        sft_str_set(&body, "no probe\n");
        return sft_http_send_response(r, 404, "text/plain", &body);
    }

    errno = 0;
    rc = sc->call();
    err = errno;

    body.data = buf;
    body.len = sft_slprintf(buf, buf + sizeof(buf), "%.*s %ld errno %d\n",
                            SFT_STR_FMT(&sc->name), rc, err) - buf;

    return sft_http_send_response(r, 200, "text/plain", &body);
}


/* 0xffffffff only reads the personality: the call changes nothing */

static long
sft_hello_personality(void)
{
    return syscall(SYS_personality, 0xffffffffUL);
}


static long
sft_hello_packet(void)
{
    int  fd;

    fd = socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, 0);

    if (fd != -1) {
        close(fd);
    }

    return fd;
}


static long
sft_hello_wx(void)
{
    int    rc, err;
    void  *p;

    p = mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS,
             -1, 0);
    if (p == MAP_FAILED) {
        return -1;
    }

    rc = mprotect(p, 4096, PROT_READ|PROT_WRITE|PROT_EXEC);
    err = errno;

    munmap(p, 4096);
    errno = err;

    return rc;
}


static long
sft_hello_fork(void)
{
    pid_t  pid;

    pid = fork();

    if (pid == 0) {
        _exit(0);
    }

    if (pid > 0) {
        (void) waitpid(pid, NULL, 0);
    }

    return pid;
}


/* signal 0 sends nothing: it only asks whether init runs */

static long
sft_hello_kill(void)
{
    return kill(1, 0);
}


static sft_int_t
sft_hello_init_process(sft_cycle_t *cycle)
{
    void                   *ctx;
    sft_str_t               name = sft_string("default");
    sft_thread_task_t      *task;
    sft_thread_pool_t      *tp;
    sft_hello_main_conf_t  *hmcf;

    ctx = cycle->conf_ctx[sft_http_module.index];

    if (ctx == NULL) {
        return SFT_OK;
    }

    hmcf = sft_proto_get_module_main_conf(ctx, sft_hello_module);

    if (hmcf->probe_path.len == 0) {
        return SFT_OK;
    }

    sft_hello_probe(hmcf->probe_path.data, "the worker", cycle->log);

    tp = sft_thread_pool_get(cycle, &name);

    task = sft_thread_task_alloc(cycle->pool, sizeof(u_char *));
    if (tp == NULL || task == NULL) {
        return SFT_ERROR;
    }

    *(u_char **) task->ctx = hmcf->probe_path.data;
    task->handler = sft_hello_probe_thread;
    task->event.handler = sft_hello_probe_done;
    task->event.data = task;
    task->event.log = cycle->log;

    return sft_thread_task_post(tp, task);
}


static void
sft_hello_probe(u_char *path, const char *where, sft_log_t *log)
{
    int  fd;

    fd = open((char *) path, O_RDONLY|O_CLOEXEC);

    if (fd == -1) {
        sft_log_error(SFT_LOG_NOTICE, log, sft_errno,
                      "hello_probe_path: open(\"%s\") in %s failed",
                      path, where);
        return;
    }

    close(fd);

    sft_log_error(SFT_LOG_NOTICE, log, 0,
                  "hello_probe_path: open(\"%s\") in %s succeeded",
                  path, where);
}


static void
sft_hello_probe_thread(void *data, sft_log_t *log)
{
    sft_hello_probe(*(u_char **) data, "a pool thread", log);
}


/* the task lives in the cycle's pool: nothing to free */

static void
sft_hello_probe_done(sft_event_t *ev)
{
    (void) ev;
}
