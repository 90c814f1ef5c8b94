/*
 * test_auth.c -- password verification without an event loop: argon2id on
 * a thread pool, the cost of unknown users, the verification cache (hits,
 * password change, generation, TTL), bans, connection limits, weak hashes,
 * checks served round-robin per source with a bound per source, IPv6
 * sources grouped by prefix, and the cap on concurrent checks across
 * forked processes.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_users.h>
#include <sft_auth.h>
#include <poll.h>
#include "sft_tap.h"


#define M_COST  SFT_AUTH_MIN_M_COST        /* cheap but accepted */
#define T_COST  SFT_AUTH_MIN_T_COST


static sft_thread_pool_t    tp;
static sft_log_t           *log_;
static sft_uint_t           done;
static sft_auth_request_t  *order[32];     /* in the order they completed */




static void
auth_done(sft_auth_request_t *ar)
{
    if (done < sizeof(order) / sizeof(order[0])) {
        order[done] = ar;
    }

    done++;
}


static void
loop(sft_uint_t until)
{
    sft_uint_t     i;
    struct pollfd  pfd;

    for (i = 0; i < 2000 && done < until; i++) {
        pfd.fd = tp.notify_fd;
        pfd.events = POLLIN;

        if (poll(&pfd, 1, 10) > 0) {
            sft_thread_pool_complete(&tp);
        }

        sft_time_update();
        sft_event_expire_timers();
    }
}


/* an IPv4 or IPv6 address in room for either */

static struct sockaddr *
addr(const char *text, struct sockaddr_in6 *buf)
{
    struct sockaddr_in  *sin = (struct sockaddr_in *) buf;

    sft_memzero(buf, sizeof(*buf));

    if (strchr(text, ':')) {
        buf->sin6_family = AF_INET6;
        (void) inet_pton(AF_INET6, text, &buf->sin6_addr);

    } else {
        sin->sin_family = AF_INET;
        (void) inet_pton(AF_INET, text, &sin->sin_addr);
    }

    return (struct sockaddr *) buf;
}


static sft_uint_t
check(const char *user, const char *pw, const char *ip, sft_uint_t *cached)
{
    sft_int_t            rc;
    sft_uint_t           result;
    sft_auth_request_t   ar;
    struct sockaddr_in6  sin;

    sft_memzero(&ar, sizeof(ar));
    ar.user.data = (u_char *) user;
    ar.user.len = strlen(user);
    ar.password.data = (u_char *) pw;
    ar.password.len = strlen(pw);
    ar.sockaddr = addr(ip, &sin);
    ar.log = log_;
    ar.handler = auth_done;

    done = 0;
    rc = sft_auth_password(&ar);

    if (rc == SFT_AGAIN) {
        loop(1);
    }

    result = (rc == SFT_ERROR) ? 99 : ar.result;

    if (cached) {
        *cached = ar.cached;
    }

    sft_user_release(ar.account);

    return result;
}


static uint64_t
runs(void)
{
    sft_auth_stats_t  st;

    sft_auth_get_stats(&st);

    return st.argon2_runs;
}


/* three wrong passwords, from these addresses */

static void
fail3(const char *ip1, const char *ip2, const char *ip3)
{
    (void) check("alice", "x", ip1, NULL);
    (void) check("alice", "x", ip2, NULL);
    (void) check("alice", "x", ip3, NULL);
}


/* a forked process set up as worker "slot" */

static void
child(sft_int_t slot, sft_users_conf_t *conf, void *shm)
{
    sft_process_slot = slot;

    sft_memzero(&tp, sizeof(tp));
    sft_str_set(&tp.name, "default");
    tp.threads = 3;
    tp.max_queue = 64;

    if (sft_thread_pool_start(&tp, log_) != SFT_OK
        || sft_auth_init_process(conf, shm, &tp, log_) != SFT_OK)
    {
        _exit(2);
    }

    done = 0;
}


/* a check left running: the caller waits for it with loop() */

static sft_int_t
start(sft_auth_request_t *ar, const char *user, const char *pw,
    struct sockaddr *sa)
{
    sft_memzero(ar, sizeof(sft_auth_request_t));
    ar->user.data = (u_char *) user;
    ar->user.len = strlen(user);
    ar->password.data = (u_char *) pw;
    ar->password.len = strlen(pw);
    ar->sockaddr = sa;
    ar->log = log_;
    ar->handler = auth_done;

    return sft_auth_password(ar);
}


/* a byte on a pipe, waited for at most 20 s */

static sft_uint_t
wait_byte(int fd)
{
    char           c;
    struct pollfd  pfd;

    pfd.fd = fd;
    pfd.events = POLLIN;

    return poll(&pfd, 1, 20000) == 1 && read(fd, &c, 1) == 1;
}


/*
 * The cap shared by two workers, ordered by pipes and the shared run
 * counter, never by timing. Worker 1 starts FLOOD checks (two take the
 * cap of 2, the rest wait) and runs no loop until worker 2 has its one
 * check waiting too. Then worker 1 goes on while worker 2, running no
 * timers, keeps its check waiting and watches: once worker 1's third
 * check has run, both of its first two completions were handled, and
 * from then on it must never hold both slots. Then worker 2's check runs.
 * The exit codes say which step failed.
 */

#define FLOOD  16

static int
fair_share(sft_users_conf_t *conf, sft_users_conf_t *weak_conf, void *shm)
{
    int                  go[2], ready[2], status, rc, k;
    pid_t                pids[2];
    uint64_t             base;
    sft_uint_t           j, samples, over;
    sft_auth_stats_t     st;
    sft_auth_request_t   flood[FLOOD], other;
    struct sockaddr_in6  sin_a, sin_b;

    if (pipe(go) != 0 || pipe(ready) != 0) {
        return -1;
    }

    base = runs();
    fflush(stdout);

    pids[0] = fork();

    if (pids[0] == 0) {
        child(1, conf, shm);
        (void) addr("10.7.7.1", &sin_a);
        (void) addr("10.7.7.3", &sin_b);

        for (j = 0; j < FLOOD; j++) {
            if (start(&flood[j], "alice", "wrong",
                      (struct sockaddr *) (j % 2 ? &sin_a : &sin_b))
                != SFT_AGAIN)
            {
                _exit(3);
            }
        }

        if (write(ready[1], "r", 1) != 1 || !wait_byte(go[0])) {
            _exit(4);
        }

        loop(FLOOD);

        _exit(done == FLOOD ? 0 : 5);
    }

    if (!wait_byte(ready[0])) {
        (void) kill(pids[0], SIGKILL);
        (void) waitpid(pids[0], &status, 0);
        return -2;
    }

    pids[1] = fork();

    if (pids[1] == 0) {
        child(2, weak_conf, shm);                /* a cheap dummy check */

        if (start(&other, "nobody", "x", addr("10.7.7.2", &sin_a))
            != SFT_AGAIN)
        {
            _exit(101);
        }

        sft_auth_get_stats(&st);

        if (st.running != 2 || write(go[1], "g", 1) != 1) {
            _exit(102);                          /* ours did not wait */
        }

        samples = 0;
        over = 0;

        for (j = 0; j < 200000 && runs() < base + 6; j++) {
            if (runs() >= base + 3) {
                sft_auth_get_stats(&st);
                samples++;
                over += (st.running > 1);
            }

            usleep(100);
        }

        if (runs() < base + 6 || samples == 0) {
            _exit(103);                          /* worker 1 stalled */
        }

        if (over) {
            _exit(104);                          /* it took both slots */
        }

        loop(1);

        _exit(done == 1 ? 0 : 105);
    }

    rc = 0;

    for (k = 0; k < 2; k++) {
        if (waitpid(pids[k], &status, 0) != pids[k] || !WIFEXITED(status)) {
            rc = -3;

        } else if (WEXITSTATUS(status) != 0) {
            printf("# worker %d exited with %d\n", k + 1,
                   WEXITSTATUS(status));
            rc = WEXITSTATUS(status);
        }
    }

    return rc;
}


static sft_users_t *
table(const char *alice_hash, const char *weak_hash)
{
    char         text[2048];
    sft_str_t    file = sft_string("/nonexistent/users");
    sft_users_t *users;

    snprintf(text, sizeof(text),
             "[alice]\npassword = %s\n"
             "[weak]\npassword = %s\n"
             "[off]\npassword = %s\ndisabled = yes\n"
             "[net]\npassword = %s\nallow_from = 192.0.2.0/24\n",
             alice_hash, weak_hash, alice_hash, alice_hash);

    users = sft_users_parse(&file, (u_char *) text, strlen(text), log_);

    return users;
}


int
main(void)
{
    int                  status;
    char                 h1[SFT_AUTH_HASH_LEN + 1], h2[SFT_AUTH_HASH_LEN + 1];
    char                 weak[SFT_AUTH_HASH_LEN + 1];
    void                *shm;
    pid_t                pids[3];
    uint64_t             r;
    sft_int_t            i, j, k, rc;
    sft_str_t            s;
    sft_uint_t           cached, all;
    sft_users_t         *users;
    sft_auth_stats_t     st;
    sft_users_conf_t     conf, weak_conf;
    struct sockaddr_in6  sin, sin_a, sin_b;
    sft_users_ident_t    ident;
    sft_auth_request_t   reqs[3], flood[SFT_AUTH_MAX_QUEUE_PER_SOURCE + 2];
    sft_auth_request_t   other;

    printf("1..40\n");

    log_ = sft_log_init();
    log_->log_level = SFT_LOG_CRIT;
    sft_time_update();

    shm = mmap(NULL, sft_auth_shm_size(), PROT_READ | PROT_WRITE,
               MAP_ANONYMOUS | MAP_SHARED, -1, 0);
    if (shm == MAP_FAILED) {
        return 1;
    }

    sft_auth_shm_init(shm);

    sft_memzero(&conf, sizeof(conf));
    conf.cache_ttl = 300;
    conf.max_checks = 2;
    conf.max_failures = 100;         /* 3 in the ban tests */
    conf.failure_window = 600;
    conf.ban_time = 900;
    conf.max_conns_per_addr = 2;
    conf.ipv6_prefix = 64;
    conf.hash_memory = (size_t) M_COST * 1024;
    conf.hash_passes = T_COST;
    weak_conf = conf;
    weak_conf.hash_memory = 8192 * 1024;     /* below the minimum */
    weak_conf.hash_passes = 1;

    sft_memzero(&tp, sizeof(tp));
    sft_str_set(&tp.name, "default");
    tp.threads = 2;
    tp.max_queue = 64;

    if (sft_thread_pool_start(&tp, log_) != SFT_OK
        || sft_auth_init_process(&conf, shm, &tp, log_) != SFT_OK)
    {
        return 1;
    }

    ok(sft_auth_hash_password(&conf, (u_char *) "pw1", 3, h1, sizeof(h1))
       == SFT_OK
       && sft_auth_hash_password(&conf, (u_char *) "pw1", 3, h2, sizeof(h2))
          == SFT_OK
       && sft_auth_hash_password(&weak_conf, (u_char *) "pw1", 3, weak,
                                 sizeof(weak)) == SFT_OK
       && strncmp(h1, "$argon2id$v=19$m=19456,t=2,p=1$", 31) == 0,
       "hashes made at the configured cost");

    s.data = (u_char *) h1;
    s.len = strlen(h1);
    ok(sft_auth_verify_now(&s, (u_char *) "pw1", 3) == SFT_OK
       && sft_auth_verify_now(&s, (u_char *) "pw2", 3) == SFT_DECLINED,
       "hash verifies right, refuses wrong");

    users = table(h1, weak);
    ok(users != NULL, "user table");

    if (users == NULL) {
        return 1;
    }

    sft_users_set_current(users, log_);

    r = runs();
    ok(check("alice", "pw1", "127.0.0.1", &cached) == SFT_AUTH_OK
       && !cached && runs() == r + 1, "right password, one argon2 run");

    r = runs();
    ok(check("alice", "pw1", "127.0.0.1", &cached) == SFT_AUTH_OK
       && cached && runs() == r, "repeat answered by the cache");

    r = runs();
    ok(check("alice", "pw2", "127.0.0.1", NULL) == SFT_AUTH_BAD
       && runs() == r + 1, "wrong password");

    r = runs();
    ok(check("nobody", "pw1", "127.0.0.1", NULL) == SFT_AUTH_BAD
       && runs() == r + 1, "unknown user costs an argon2 run");

    r = runs();
    ok(check("weak", "pw1", "127.0.0.1", NULL) == SFT_AUTH_BAD
       && runs() == r + 1, "weak hash refused (dummy run)");

    ok(check("off", "pw1", "127.0.0.1", NULL) == SFT_AUTH_DISABLED,
       "disabled user");
    ok(check("net", "pw1", "127.0.0.1", NULL) == SFT_AUTH_NOT_ALLOWED_FROM,
       "not allowed from this address");
    ok(check("net", "pw1", "192.0.2.9", NULL) == SFT_AUTH_OK,
       "allowed from its network");

    /* a new hash of the same password misses the cache */

    users = table(h2, weak);
    sft_users_set_current(users, log_);

    r = runs();
    ok(check("alice", "pw1", "127.0.0.1", &cached) == SFT_AUTH_OK
       && !cached && runs() == r + 1, "password change misses the cache");
    ok(check("alice", "pw1", "127.0.0.1", &cached) == SFT_AUTH_OK && cached,
       "and is cached again");

    /* generation */

    sft_memzero(&ident, sizeof(ident));
    ident.ino = 42;
    sft_auth_get_stats(&st);
    r = st.generation;
    sft_auth_users_changed(&ident, log_);
    sft_auth_get_stats(&st);
    ok(st.generation == r + 1, "a users file change bumps the generation");

    r = runs();
    ok(check("alice", "pw1", "127.0.0.1", &cached) == SFT_AUTH_OK
       && !cached && runs() == r + 1, "cache cleared by the generation");

    /* TTL */

    sft_auth_clock_offset += 301 * 1000;
    r = runs();
    ok(check("alice", "pw1", "127.0.0.1", &cached) == SFT_AUTH_OK
       && !cached && runs() == r + 1, "cache entry expired after the TTL");

    conf.cache_ttl = 0;
    r = runs();
    check("alice", "pw1", "127.0.0.1", &cached);
    ok(!cached && runs() == r + 1, "TTL 0 turns the cache off");
    conf.cache_ttl = 300;

    /* bans */

    conf.max_failures = 3;

    check("alice", "x", "10.0.0.9", NULL);
    check("alice", "x", "10.0.0.9", NULL);
    ok(!sft_auth_banned(addr("10.0.0.9", &sin)), "not banned after 2");
    check("nobody", "x", "10.0.0.9", NULL);
    ok(sft_auth_banned(addr("10.0.0.9", &sin)), "banned after 3 failures");

    r = runs();
    ok(check("alice", "pw1", "10.0.0.9", NULL) == SFT_AUTH_BANNED
       && runs() == r, "banned address answered without hashing");
    ok(check("alice", "pw1", "10.0.0.10", NULL) == SFT_AUTH_OK,
       "another address is not banned");

    sft_auth_clock_offset += 901 * 1000;
    ok(check("alice", "pw1", "10.0.0.9", NULL) == SFT_AUTH_OK,
       "ban expires");

    ok(sft_auth_failure_delay(0) == 0 && sft_auth_failure_delay(1) == 1000
       && sft_auth_failure_delay(3) == 4000
       && sft_auth_failure_delay(9) == 8000, "failure delays");

    /* connections per address */

    addr("10.1.1.1", &sin);
    ok(sft_auth_connection_open((struct sockaddr *) &sin) == SFT_OK
       && sft_auth_connection_open((struct sockaddr *) &sin) == SFT_OK
       && sft_auth_connection_open((struct sockaddr *) &sin) == SFT_DECLINED,
       "third connection from one address refused");
    sft_auth_connection_close((struct sockaddr *) &sin);
    ok(sft_auth_connection_open((struct sockaddr *) &sin) == SFT_OK,
       "a closed connection frees its place");

    /* fairness: one check at a time, a source floods, another comes */

    conf.max_checks = 1;
    conf.max_failures = 100;
    addr("10.3.3.3", &sin_a);
    addr("10.4.4.4", &sin_b);
    done = 0;
    all = 1;

    for (j = 0; j < SFT_AUTH_MAX_QUEUE_PER_SOURCE + 1; j++) {
        all = all && start(&flood[j], "alice", "wrong",
                           (struct sockaddr *) &sin_a) == SFT_AGAIN;
    }

    ok(all, "a running check and a full queue from one source");

    rc = start(&flood[j], "alice", "wrong", (struct sockaddr *) &sin_a);
    ok(rc == SFT_OK && flood[j].result == SFT_AUTH_BUSY,
       "one more from that source is refused at once, unhashed");

    ok(start(&other, "nobody", "x", (struct sockaddr *) &sin_b) == SFT_AGAIN,
       "another source is still queued");

    sft_auth_cancel(&flood[3]);

    loop(SFT_AUTH_MAX_QUEUE_PER_SOURCE + 1);

    for (k = 0; k < (sft_int_t) done && order[k] != &other; k++) {
        /* void */
    }

    printf("# the other source completed as check %ld of %lu\n",
           (long) k + 1, (unsigned long) done);
    ok(k < 3, "the other source waited for one queued check, not all");
    ok(done == SFT_AUTH_MAX_QUEUE_PER_SOURCE + 1,
       "all but the cancelled check completed");

    /* a source banned while its checks wait: the rest are not run */

    conf.max_failures = 3;
    addr("10.5.5.5", &sin_a);
    r = runs();
    done = 0;
    all = 1;

    for (j = 0; j < 6; j++) {
        all = all && start(&flood[j], "alice", "wrong",
                           (struct sockaddr *) &sin_a) == SFT_AGAIN;
    }

    loop(6);

    for (j = 0; j < 6; j++) {
        all = all && flood[j].result == (j < 3 ? SFT_AUTH_BAD
                                               : SFT_AUTH_BANNED);
    }

    ok(all && done == 6 && runs() == r + 3,
       "checks queued when the source is banned are answered unrun");

    conf.max_checks = 2;

    /* IPv6 sources: a /64 is one source, a v4-mapped address its IPv4 */

    conf.max_failures = 3;

    fail3("2001:db8:1:2::1", "2001:db8:1:2::2",
          "2001:db8:1:2:ffff:ffff:ffff:ffff");
    ok(sft_auth_banned(addr("2001:db8:1:2::99", &sin)),
       "3 failures from 3 addresses of a /64 ban the /64");
    ok(!sft_auth_banned(addr("2001:db8:1:3::1", &sin)),
       "the next /64 is not banned");

    conf.ipv6_prefix = 128;
    fail3("2001:db8:9:9::1", "2001:db8:9:9::2",
          "2001:db8:9:9::3");
    ok(!sft_auth_banned(addr("2001:db8:9:9::3", &sin)),
       "login_ipv6_prefix 128: each address on its own");

    conf.ipv6_prefix = 60;
    fail3("2001:db8:7:7::1", "2001:db8:7:1::1",
          "2001:db8:7:f::1");
    ok(sft_auth_banned(addr("2001:db8:7::1", &sin))
       && !sft_auth_banned(addr("2001:db8:7:10::1", &sin)),
       "login_ipv6_prefix 60: the bits within a group count");
    conf.ipv6_prefix = 64;

    fail3("::ffff:10.9.9.9", "::ffff:10.9.9.9",
          "10.9.9.9");
    ok(sft_auth_banned(addr("10.9.9.9", &sin)),
       "an IPv4-mapped address counts as its IPv4 address");

    conf.max_failures = 100;

    ok(sft_auth_connection_open(addr("2001:db8:5:5::1", &sin)) == SFT_OK
       && sft_auth_connection_open(addr("2001:db8:5:5::2", &sin)) == SFT_OK
       && sft_auth_connection_open(addr("2001:db8:5:5::3", &sin))
          == SFT_DECLINED
       && sft_auth_connection_open(addr("2001:db8:5:6::1", &sin)) == SFT_OK,
       "max_connections_per_address counts a /64 as one address");

    /*
     * two workers, cap 2: one floods, then the other has one check waiting;
     * from then on the first holds no more than its share of the cap
     */

    conf.max_failures = 100;

    ok(fair_share(&conf, &weak_conf, shm) == 0,
       "a flooded worker leaves a slot to another worker");

    /* the cap, across three processes with three checks each */

    sft_auth_clear_cache();
    r = runs();

    for (k = 0; k < 3; k++) {
        pids[k] = fork();

        if (pids[k] == 0) {
            child(3 + k, &conf, shm);

            for (j = 0; j < 3; j++) {
                sft_memzero(&reqs[j], sizeof(sft_auth_request_t));
                sft_str_set(&reqs[j].user, "alice");
                sft_str_set(&reqs[j].password, "wrong");
                reqs[j].sockaddr = addr("10.2.2.2", &sin);
                reqs[j].log = log_;
                reqs[j].handler = auth_done;

                if (sft_auth_password(&reqs[j]) != SFT_AGAIN) {
                    _exit(3);
                }
            }

            loop(3);

            _exit(done == 3 ? 0 : 4);
        }
    }

    all = 1;

    for (k = 0; k < 3; k++) {
        i = waitpid(pids[k], &status, 0);
        all = all && i == pids[k] && WIFEXITED(status)
              && WEXITSTATUS(status) == 0;
    }

    sft_auth_get_stats(&st);

    ok(all && st.argon2_runs == r + 9, "9 checks in 3 processes done");
    printf("# max concurrent argon2id runs seen: %u (cap 2)\n",
           st.max_running);
    ok(st.max_running <= 2 && st.running == 0,
       "the cap was never exceeded");

    sft_thread_pool_stop(&tp);

    return 0;
}
