/*
 * sft_thread_pool.c -- "thread_pool NAME threads=N max_queue=M;": worker
 * threads that run blocking handlers, a bounded queue, and completions
 * handed back to the event loop through an eventfd.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>


typedef struct {
    sft_array_t   pools;            /* sft_thread_pool_t * */
} sft_thread_pool_conf_t;


static void *sft_thread_pool_create_conf(sft_cycle_t *cycle);
static char *sft_thread_pool_init_conf(sft_cycle_t *cycle, void *conf);
static char *sft_thread_pool(sft_conf_t *cf, sft_command_t *cmd, void *conf);
static sft_int_t sft_thread_pool_init_worker(sft_cycle_t *cycle);
static void sft_thread_pool_exit_worker(sft_cycle_t *cycle);
static void *sft_thread_pool_cycle(void *data);
static void sft_thread_pool_notify_handler(sft_event_t *ev);
static sft_thread_pool_t *sft_thread_pool_add(sft_cycle_t *cycle,
    sft_str_t *name);


static sft_command_t  sft_thread_pool_commands[] = {

    { sft_string("thread_pool"),
      SFT_MAIN_CONF|SFT_DIRECT_CONF|SFT_CONF_TAKE23,
      sft_thread_pool,
      0,
      0,
      NULL,
      sft_command_doc("name threads=number [max_queue=number]",
          "default threads=4",
          "A pool of threads in each worker for blocking work such as "
          "password checks and file system calls.") },

    sft_null_command
};


static sft_core_module_t  sft_thread_pool_module_ctx = {
    sft_string("thread_pool"),
    sft_thread_pool_create_conf,
    sft_thread_pool_init_conf
};


sft_module_t  sft_thread_pool_module = {
    SFT_MODULE_V1,
    &sft_thread_pool_module_ctx,           /* module context */
    sft_thread_pool_commands,              /* module directives */
    SFT_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    sft_thread_pool_init_worker,           /* init process */
    sft_thread_pool_exit_worker,           /* exit process */
    NULL,                                  /* exit master */
    SFT_MODULE_V1_PADDING
};


static sft_str_t   sft_thread_pool_default = sft_string("default");
static sft_uint_t  sft_thread_pool_task_id;


static void *
sft_thread_pool_create_conf(sft_cycle_t *cycle)
{
    sft_thread_pool_conf_t  *tcf;

    tcf = sft_pcalloc(cycle->pool, sizeof(sft_thread_pool_conf_t));
    if (tcf == NULL) {
        return NULL;
    }

    if (sft_array_init(&tcf->pools, cycle->pool, 4,
                       sizeof(sft_thread_pool_t *)) != SFT_OK)
    {
        return NULL;
    }

    return tcf;
}


static char *
sft_thread_pool_init_conf(sft_cycle_t *cycle, void *conf)
{
    sft_uint_t                i;
    sft_thread_pool_t       **tpp, *tp;
    sft_thread_pool_conf_t   *tcf = conf;

    tpp = tcf->pools.elts;

    for (i = 0; i < tcf->pools.nelts; i++) {
        if (tpp[i]->threads) {
            continue;
        }

        if (tpp[i]->name.len == sft_thread_pool_default.len
            && sft_strncmp(tpp[i]->name.data, "default", 7) == 0)
        {
            tpp[i]->threads = 4;
            tpp[i]->max_queue = 65536;
            continue;
        }

        sft_log_error(SFT_LOG_EMERG, cycle->log, 0,
                      "unknown thread pool \"%.*s\" in %.*s:%lu",
                      SFT_STR_FMT(&tpp[i]->name), SFT_STR_FMT(&tpp[i]->file),
                      (unsigned long) tpp[i]->line);
        return SFT_CONF_ERROR;
    }

    /* every worker has a "default" pool for the storage layer */

    if (sft_thread_pool_get(cycle, &sft_thread_pool_default) == NULL) {
        tp = sft_thread_pool_add(cycle, &sft_thread_pool_default);
        if (tp == NULL) {
            return SFT_CONF_ERROR;
        }

        tp->threads = 4;
        tp->max_queue = 65536;
    }

    return SFT_CONF_OK;
}


static sft_thread_pool_t *
sft_thread_pool_add(sft_cycle_t *cycle, sft_str_t *name)
{
    sft_thread_pool_t       *tp, **tpp;
    sft_thread_pool_conf_t  *tcf;

    tcf = (sft_thread_pool_conf_t *) sft_get_conf(cycle->conf_ctx,
                                                  sft_thread_pool_module);

    tp = sft_pcalloc(cycle->pool, sizeof(sft_thread_pool_t));
    if (tp == NULL) {
        return NULL;
    }

    tp->name = *name;
    tp->notify_fd = SFT_INVALID_FILE;

    tpp = sft_array_push(&tcf->pools);
    if (tpp == NULL) {
        return NULL;
    }

    *tpp = tp;

    return tp;
}


static char *
sft_thread_pool(sft_conf_t *cf, sft_command_t *cmd, void *conf)
{
    sft_str_t          *value;
    sft_uint_t          i;
    sft_int_t           n;
    sft_thread_pool_t  *tp;

    (void) cmd;
    (void) conf;

    value = cf->args->elts;

    tp = sft_thread_pool_get(cf->cycle, &value[1]);

    if (tp && tp->threads) {
        return "is duplicate";
    }

    if (tp == NULL) {
        tp = sft_thread_pool_add(cf->cycle, &value[1]);
        if (tp == NULL) {
            return SFT_CONF_ERROR;
        }
    }

    tp->max_queue = 65536;

    for (i = 2; i < cf->args->nelts; i++) {

        if (sft_strncmp(value[i].data, "threads=", 8) == 0) {
            n = sft_atoi(value[i].data + 8, value[i].len - 8);

            if (n == SFT_ERROR || n < 1 || n > 512) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "invalid threads value \"%s\"",
                                   value[i].data);
                return SFT_CONF_ERROR;
            }

            tp->threads = n;
            continue;
        }

        if (sft_strncmp(value[i].data, "max_queue=", 10) == 0) {
            n = sft_atoi(value[i].data + 10, value[i].len - 10);

            if (n == SFT_ERROR || n < 1) {
                sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                                   "invalid max_queue value \"%s\"",
                                   value[i].data);
                return SFT_CONF_ERROR;
            }

            tp->max_queue = n;
            continue;
        }

        sft_conf_log_error(SFT_LOG_EMERG, cf, 0, "invalid parameter \"%s\"",
                           value[i].data);
        return SFT_CONF_ERROR;
    }

    if (tp->threads == 0) {
        sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                           "\"%s\" must have \"threads\" parameter",
                           cmd->name.data);
        return SFT_CONF_ERROR;
    }

    tp->file = cf->conf_file->name;
    tp->line = cf->conf_file->line;

    return SFT_CONF_OK;
}


/*
 * The pool a directive being read names, declared by "thread_pool" before
 * or after it; one never declared is refused with the file:line of the
 * first reference once the configuration is read.
 */

sft_thread_pool_t *
sft_thread_pool_ref(sft_conf_t *cf, sft_str_t *name)
{
    sft_thread_pool_t  *tp;

    tp = sft_thread_pool_get(cf->cycle, name);

    if (tp == NULL) {
        tp = sft_thread_pool_add(cf->cycle, name);
        if (tp == NULL) {
            return NULL;
        }

        tp->file = cf->conf_file->name;
        tp->line = cf->conf_file->line;
    }

    return tp;
}


sft_thread_pool_t *
sft_thread_pool_get(sft_cycle_t *cycle, sft_str_t *name)
{
    sft_uint_t                i;
    sft_thread_pool_t       **tpp;
    sft_thread_pool_conf_t   *tcf;

    tcf = (sft_thread_pool_conf_t *) sft_get_conf(cycle->conf_ctx,
                                                  sft_thread_pool_module);

    tpp = tcf->pools.elts;

    for (i = 0; i < tcf->pools.nelts; i++) {
        if (tpp[i]->name.len == name->len
            && sft_strncmp(tpp[i]->name.data, name->data, name->len) == 0)
        {
            return tpp[i];
        }
    }

    return NULL;
}


sft_thread_task_t *
sft_thread_task_alloc(sft_pool_t *pool, size_t size)
{
    sft_thread_task_t  *task;

    task = sft_pcalloc(pool, sizeof(sft_thread_task_t) + size);
    if (task == NULL) {
        return NULL;
    }

    task->ctx = task + 1;

    return task;
}


/* SFT_ERROR if the queue is full: the caller answers "busy" */

sft_int_t
sft_thread_task_post(sft_thread_pool_t *tp, sft_thread_task_t *task)
{
    if (task->event.active) {
        sft_log_error(SFT_LOG_ALERT, tp->log, 0,
                      "task #%lu already active", (unsigned long) task->id);
        return SFT_ERROR;
    }

    pthread_mutex_lock(&tp->mtx);

    if (tp->waiting >= tp->max_queue) {
        pthread_mutex_unlock(&tp->mtx);
        sft_log_error(SFT_LOG_ERR, tp->log, 0,
                      "thread pool \"%.*s\" queue overflow: %ld tasks waiting",
                      SFT_STR_FMT(&tp->name), (long) tp->waiting);
        return SFT_ERROR;
    }

    task->event.active = 1;
    task->event.complete = 0;
    task->id = sft_thread_pool_task_id++;
    task->next = NULL;

    *tp->queue.last = task;
    tp->queue.last = &task->next;
    tp->waiting++;

    pthread_cond_signal(&tp->cond);
    pthread_mutex_unlock(&tp->mtx);

    return SFT_OK;
}


/*
 * In the event loop: a task still waiting in the queue is taken out and
 * will not run (SFT_OK; its completion handler will not run either); one a
 * thread has taken runs to its end and completes as usual (SFT_DECLINED).
 */

sft_int_t
sft_thread_task_cancel(sft_thread_pool_t *tp, sft_thread_task_t *task)
{
    sft_thread_task_t  **tpp;

    pthread_mutex_lock(&tp->mtx);

    for (tpp = &tp->queue.first; *tpp; tpp = &(*tpp)->next) {

        if (*tpp != task) {
            continue;
        }

        *tpp = task->next;

        if (tp->queue.last == &task->next) {
            tp->queue.last = tpp;
        }

        tp->waiting--;
        pthread_mutex_unlock(&tp->mtx);

        task->next = NULL;
        task->event.active = 0;

        return SFT_OK;
    }

    pthread_mutex_unlock(&tp->mtx);

    return SFT_DECLINED;
}


static void *
sft_thread_pool_cycle(void *data)
{
    uint64_t            one;
    sigset_t            set;
    sft_thread_task_t  *task;
    sft_thread_pool_t  *tp = data;

    /* signals are the event loop's, but SIGSYS reports a refused call */
    sigfillset(&set);
    sigdelset(&set, SIGSYS);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    for ( ;; ) {
        pthread_mutex_lock(&tp->mtx);

        while (tp->queue.first == NULL && !tp->stop) {
            pthread_cond_wait(&tp->cond, &tp->mtx);
        }

        if (tp->queue.first == NULL) {
            pthread_mutex_unlock(&tp->mtx);
            return NULL;
        }

        task = tp->queue.first;
        tp->queue.first = task->next;

        if (tp->queue.first == NULL) {
            tp->queue.last = &tp->queue.first;
        }

        tp->waiting--;

        pthread_mutex_unlock(&tp->mtx);

        task->handler(task->ctx, tp->log);

        task->next = NULL;

        pthread_mutex_lock(&tp->done_mtx);
        *tp->done.last = task;
        tp->done.last = &task->next;
        pthread_mutex_unlock(&tp->done_mtx);

        one = 1;

        if (write(tp->notify_fd, &one, sizeof(uint64_t)) == -1) {
            /* EAGAIN only: the counter is full, the loop wakes anyway */
        }
    }
}


/* in the event loop: run the completion handler of every finished task */

void
sft_thread_pool_complete(sft_thread_pool_t *tp)
{
    uint64_t            count;
    sft_event_t        *ev;
    sft_thread_task_t  *task;

    if (read(tp->notify_fd, &count, sizeof(uint64_t)) == -1) {
        /* EAGAIN: an earlier wake-up took the count; the list tells */
    }

    pthread_mutex_lock(&tp->done_mtx);

    task = tp->done.first;
    tp->done.first = NULL;
    tp->done.last = &tp->done.first;

    pthread_mutex_unlock(&tp->done_mtx);

    while (task) {
        ev = &task->event;
        task = task->next;

        ev->complete = 1;
        ev->active = 0;

        ev->handler(ev);
    }
}


static void
sft_thread_pool_notify_handler(sft_event_t *ev)
{
    sft_connection_t  *c = ev->data;

    sft_thread_pool_complete(c->data);
}


sft_int_t
sft_thread_pool_start(sft_thread_pool_t *tp, sft_log_t *log)
{
    int             err;
    sft_uint_t      n;
    pthread_attr_t  attr;

    tp->log = log;
    tp->queue.first = NULL;
    tp->queue.last = &tp->queue.first;
    tp->done.first = NULL;
    tp->done.last = &tp->done.first;
    tp->waiting = 0;
    tp->stop = 0;
    tp->running = 0;

    tp->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (tp->notify_fd == -1) {
        sft_log_error(SFT_LOG_ALERT, log, sft_errno, "eventfd() failed");
        return SFT_ERROR;
    }

    if (pthread_mutex_init(&tp->mtx, NULL) != 0
        || pthread_mutex_init(&tp->done_mtx, NULL) != 0
        || pthread_cond_init(&tp->cond, NULL) != 0)
    {
        sft_log_error(SFT_LOG_ALERT, log, 0, "pthread init failed");
        return SFT_ERROR;
    }

    tp->tids = sft_calloc(tp->threads * sizeof(pthread_t), log);
    if (tp->tids == NULL) {
        return SFT_ERROR;
    }

    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);

    for (n = 0; n < tp->threads; n++) {
        err = pthread_create(&tp->tids[n], &attr, sft_thread_pool_cycle, tp);

        if (err) {
            sft_log_error(SFT_LOG_ALERT, log, err, "pthread_create() failed");
            pthread_attr_destroy(&attr);
            return SFT_ERROR;
        }

        tp->running++;
    }

    pthread_attr_destroy(&attr);

    return SFT_OK;
}


void
sft_thread_pool_stop(sft_thread_pool_t *tp)
{
    sft_uint_t  n;

    pthread_mutex_lock(&tp->mtx);
    tp->stop = 1;
    pthread_cond_broadcast(&tp->cond);
    pthread_mutex_unlock(&tp->mtx);

    for (n = 0; n < tp->running; n++) {
        pthread_join(tp->tids[n], NULL);
    }

    tp->running = 0;
    sft_free(tp->tids);
    tp->tids = NULL;

    if (tp->notify_fd != SFT_INVALID_FILE) {
        close(tp->notify_fd);
        tp->notify_fd = SFT_INVALID_FILE;
    }
}


static sft_int_t
sft_thread_pool_init_worker(sft_cycle_t *cycle)
{
    sft_uint_t                i;
    sft_thread_pool_t       **tpp;
    sft_thread_pool_conf_t   *tcf;

    tcf = (sft_thread_pool_conf_t *) sft_get_conf(cycle->conf_ctx,
                                                  sft_thread_pool_module);
    tpp = tcf->pools.elts;

    for (i = 0; i < tcf->pools.nelts; i++) {
        if (sft_thread_pool_start(tpp[i], cycle->log) != SFT_OK) {
            return SFT_ERROR;
        }

        if (sft_event_add_notify(cycle, tpp[i]->notify_fd,
                                 sft_thread_pool_notify_handler, tpp[i])
            == NULL)
        {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


static void
sft_thread_pool_exit_worker(sft_cycle_t *cycle)
{
    sft_uint_t                i;
    sft_thread_pool_t       **tpp;
    sft_thread_pool_conf_t   *tcf;

    tcf = (sft_thread_pool_conf_t *) sft_get_conf(cycle->conf_ctx,
                                                  sft_thread_pool_module);
    tpp = tcf->pools.elts;

    for (i = 0; i < tcf->pools.nelts; i++) {
        sft_thread_pool_stop(tpp[i]);
    }
}
