/*
 * test_digest.c -- the storage digest HASH and check-file share: the IEEE
 * CRC-32 against known values, in pieces and a bitwise reference; every
 * algorithm against the published values, ranges, an empty range, a
 * range past the end, blocks, cancellation, and the run on a thread pool,
 * over files of a posix storage on a temporary directory.  Then over a
 * driver that does not block: a stand-in over the posix one whose reads
 * complete at once or later on the event loop, in random order, and
 * short; every algorithm, ranges and blocks give what the thread gives;
 * the driver's stored digest of a whole file is still asked first; a
 * start past the end is refused at once; an owner that cancels while its
 * reads are held gets its handler within the cancel flag's poll, with
 * every read taken back from the driver.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_thread_pool.h>
#include <sft_vfs.h>
#include <sft_storage_digest.h>
#include <sft_ftp.h>
#include <poll.h>
#include "sft_tap.h"
#include "sft_test_loop.h"
#include "sft_test_rand.h"


#define N  100000


static uint32_t
ref_crc32(const u_char *p, size_t len)
{
    size_t    i, k;
    uint32_t  c;

    c = 0xffffffff;

    for (i = 0; i < len; i++) {
        c ^= p[i];

        for (k = 0; k < 8; k++) {
            c = (c & 1) ? 0xedb88320 ^ (c >> 1) : c >> 1;
        }
    }

    return ~c;
}


static void
crc32_tests(void)
{
    size_t     i, pos, n;
    uint32_t   crc;
    u_char    *buf;

    ok(sft_crc32(0, (u_char *) "", 0) == 0, "CRC32 of nothing is 0");
    ok(sft_crc32(0, (u_char *) "123456789", 9) == 0xcbf43926,
       "CRC32 check value of \"123456789\"");
    ok(sft_crc32(0, (u_char *) "The quick brown fox jumps over the "
                     "lazy dog", 43) == 0x414fa339,
       "CRC32 of the quick brown fox");

    buf = malloc(N);
    if (buf == NULL) {
        ok(0, "memory for the random bytes");
        return;
    }

    srandom(7);

    for (i = 0; i < N; i++) {
        buf[i] = (u_char) random();
    }

    ok(sft_crc32(0, buf, N) == ref_crc32(buf, N),
       "CRC32 of random bytes as the bitwise reference");

    crc = 0;

    for (pos = 0; pos < N; pos += n) {
        n = 1 + random() % 4096;
        n = n > N - pos ? N - pos : n;
        crc = sft_crc32(crc, buf + pos, n);
    }

    ok(crc == ref_crc32(buf, N), "CRC32 in random pieces");

    ok(strcmp(sft_ftp_hash_name(SFT_FTP_HASH_SHA256), "SHA-256") == 0
       && strcmp(sft_ftp_hash_name(SFT_FTP_HASH_CRC32), "CRC32") == 0
       && strcmp(sft_ftp_hash_name(SFT_FTP_HASH_CRC32C), "CRC32C") == 0,
       "algorithm names");

    free(buf);
}


static char                 root[300];
static u_char               space[SFT_DIGEST_CHUNK];
static u_char               out[4 * 4];
static sft_pool_t          *pool;
static sft_log_t           *log;
static sft_vfs_session_t    vs;
static sft_storage_file_t   file;


static void
put(const char *rel, const char *data)
{
    FILE  *f;
    char   path[600];

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    f = fopen(path, "w");

    if (f == NULL || (*data && fputs(data, f) == EOF)) {
        printf("# writing %s failed\n", path);
    }

    if (f) {
        fclose(f);
    }
}


static sft_int_t
open_file(const char *rel)
{
    sft_storage_req_t  req;

    sft_memzero(&req, sizeof(req));
    sft_memzero(&file, sizeof(file));
    req.pool = pool;

    return sft_vfs_open_read(&vs, &req, &file, (u_char *) rel, strlen(rel));
}


static void
close_file(void)
{
    sft_storage_req_t  req;

    sft_memzero(&req, sizeof(req));
    req.pool = pool;

    (void) sft_vfs_close(&vs, &req, &file, 0);
}


static void
prepare(sft_storage_digest_t *d, sft_digest_algo_t algo, off_t start,
    off_t end, u_char *buf, size_t size)
{
    sft_memzero(d, sizeof(sft_storage_digest_t));
    d->file = &file;
    d->algo = algo;
    d->start = start;
    d->end = end;
    d->out = buf;
    d->out_size = size;
    d->log = log;
    d->buf = space;
}


/* the hex of d's digests, for the comparison */

static const char *
hex(sft_storage_digest_t *d)
{
    size_t       i;
    static char  text[2 * 64 * 4 + 1];

    for (i = 0; i < d->out_len && i < 64 * 4; i++) {
        snprintf(text + i * 2, 3, "%02x", d->out[i]);
    }

    text[i * 2] = '\0';

    return text;
}


/* one digest of the range of rel, synchronously: its hex, or the error */

static const char *
digest(const char *rel, sft_digest_algo_t algo, off_t start, off_t end,
    off_t *done)
{
    u_char                one[SFT_DIGEST_MAX_SIZE];
    sft_storage_digest_t  d;

    if (open_file(rel) != SFT_OK) {
        return "open failed";
    }

    prepare(&d, algo, start, end, one, sizeof(one));
    sft_storage_digest_run(&d);
    close_file();

    if (done) {
        *done = d.done;
    }

    return d.err == SFT_STORAGE_OK ? hex(&d) : sft_storage_strerror(d.err);
}


static void
is(const char *got, const char *want, const char *name)
{
    ok(strcmp(got, want) == 0, name);

    if (strcmp(got, want) != 0) {
        printf("# got \"%s\", expected \"%s\"\n", got, want);
    }
}


static void
known_tests(void)
{
    char      want[16];
    off_t     done;
    uint32_t  crc;

    put("nine", "123456789");
    put("abc", "abc");
    put("framed", "x123456789y");
    put("empty", "");

    is(digest("nine", SFT_DIGEST_CRC32, 0, -1, NULL), "cbf43926",
       "CRC-32 of \"123456789\"");
    is(digest("nine", SFT_DIGEST_CRC32C, 0, -1, NULL), "e3069283",
       "CRC-32C of \"123456789\"");
    is(digest("abc", SFT_DIGEST_SHA256, 0, -1, NULL),
       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
       "SHA-256 of \"abc\"");
    is(digest("abc", SFT_DIGEST_SHA1, 0, -1, NULL),
       "a9993e364706816aba3e25717850c26c9cd0d89d", "SHA-1 of \"abc\"");
    is(digest("abc", SFT_DIGEST_MD5, 0, -1, NULL),
       "900150983cd24fb0d6963f7d28e17f72", "MD5 of \"abc\"");
    is(digest("abc", SFT_DIGEST_SHA512, 0, -1, NULL),
       "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
       "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
       "SHA-512 of \"abc\"");

    is(digest("framed", SFT_DIGEST_CRC32, 1, 10, &done), "cbf43926",
       "a range inside the file");
    ok(done == 9, "its octets counted");

    crc = sft_crc32(0, (u_char *) "456789", 6);
    snprintf(want, sizeof(want), "%08x", crc);
    is(digest("nine", SFT_DIGEST_CRC32, 3, 1000, &done), want,
       "an end past the end of the file: up to the end");
    ok(done == 6, "the octets up to the end counted");

    is(digest("nine", SFT_DIGEST_CRC32, 9, -1, &done), "00000000",
       "a start at the end: the CRC-32 of nothing");
    ok(done == 0, "no octet counted");
    is(digest("empty", SFT_DIGEST_SHA256, 0, -1, NULL),
       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
       "SHA-256 of an empty file");
    is(digest("nine", SFT_DIGEST_MD5, 4, 4, NULL),
       "d41d8cd98f00b204e9800998ecf8427e", "an empty range inside");

    is(digest("nine", SFT_DIGEST_CRC32, 10, -1, NULL),
       sft_storage_strerror(SFT_STORAGE_INVALID),
       "a start past the end refused");
}


static void
block_tests(void)
{
    u_char                want[4];
    uint32_t              crc;
    sft_storage_digest_t  d;

    if (open_file("nine") != SFT_OK) {
        ok(0, "open for the blocks");
        return;
    }

    prepare(&d, SFT_DIGEST_CRC32, 0, -1, out, sizeof(out));
    d.block = 4;
    sft_storage_digest_run(&d);

    crc = sft_crc32(0, (u_char *) "9", 1);
    want[0] = (u_char) (crc >> 24);
    want[1] = (u_char) (crc >> 16);
    want[2] = (u_char) (crc >> 8);
    want[3] = (u_char) crc;

    ok(d.err == SFT_STORAGE_OK && d.out_len == 12 && d.done == 9
       && memcmp(out + 8, want, 4) == 0,
       "one CRC-32 per block, the last one short");

    prepare(&d, SFT_DIGEST_CRC32, 0, -1, out, sizeof(out));
    d.block = 2;
    sft_storage_digest_run(&d);
    ok(d.err == SFT_STORAGE_INVALID && d.out_len == 0,
       "more blocks than the room for their digests refused");

    prepare(&d, SFT_DIGEST_SHA256, 0, -1, out, sizeof(out));
    sft_storage_digest_run(&d);
    ok(d.err == SFT_STORAGE_INVALID,
       "no room for one digest refused");

    close_file();
}


static sft_uint_t  async_done;

static void
async_handler(sft_storage_digest_t *d)
{
    async_done++;
}


static void
async_tests(void)
{
    int                   i;
    atomic_uint           cancel;
    struct pollfd         pfd;
    sft_thread_pool_t     tp;
    sft_storage_digest_t  d;

    if (open_file("nine") != SFT_OK) {
        ok(0, "open for the thread pool");
        return;
    }

    atomic_init(&cancel, 1);
    prepare(&d, SFT_DIGEST_CRC32, 0, -1, out, sizeof(out));
    d.cancel = &cancel;
    sft_storage_digest_run(&d);
    ok(d.err == SFT_STORAGE_BUSY && d.done == 0 && d.out_len == 0,
       "cancelled: nothing read");

    prepare(&d, SFT_DIGEST_CRC32, 0, -1, out, sizeof(out));
    d.handler = async_handler;
    ok(sft_storage_digest(&d, pool, NULL) == SFT_ERROR
       && d.err == SFT_STORAGE_UNSUPPORTED, "no thread pool: unsupported");

    sft_memzero(&tp, sizeof(tp));
    sft_str_set(&tp.name, "default");
    tp.threads = 1;
    tp.max_queue = 4;

    if (sft_thread_pool_start(&tp, log) != SFT_OK) {
        ok(0, "a thread pool");
        close_file();
        return;
    }

    prepare(&d, SFT_DIGEST_CRC32C, 0, -1, out, sizeof(out));
    d.handler = async_handler;

    ok(sft_storage_digest(&d, pool, &tp) == SFT_AGAIN,
       "started on the thread pool");

    for (i = 0; i < 3000 && async_done == 0; i++) {
        pfd.fd = tp.notify_fd;
        pfd.events = POLLIN;

        if (poll(&pfd, 1, 10) > 0) {
            sft_thread_pool_complete(&tp);
        }
    }

    ok(async_done == 1 && d.err == SFT_STORAGE_OK
       && strcmp(hex(&d), "e3069283") == 0,
       "completed on the loop with the CRC-32C");

    sft_thread_pool_stop(&tp);
    close_file();
}


/* a driver that keeps SHA-256 digests with its files: all 0xab here */

static sft_int_t
stored_checksum(sft_storage_req_t *req)
{
    if (req->flags != SFT_DIGEST_SHA256 || req->len < 32) {
        req->err = SFT_STORAGE_UNSUPPORTED;
        return SFT_ERROR;
    }

    memset(req->buf, 0xab, 32);
    req->nbytes = 32;

    return SFT_OK;
}


static void
checksum_tests(sft_storage_t *st)
{
    off_t                  done;
    sft_storage_driver_t   drv, *posix;

    posix = st->driver;
    drv = *posix;
    drv.caps |= SFT_STORAGE_CAP_CHECKSUMS;
    drv.ops[SFT_STORAGE_CHECKSUM] = stored_checksum;
    st->driver = &drv;

    is(digest("abc", SFT_DIGEST_SHA256, 0, -1, &done),
       "abababababababababababababababababababababababababababababababab",
       "a whole file: the digest the driver keeps");
    ok(done == 3, "the whole file counted");
    is(digest("abc", SFT_DIGEST_SHA256, 0, 3, NULL),
       "abababababababababababababababababababababababababababababababab",
       "a range that is the whole file: the digest kept");
    is(digest("abc", SFT_DIGEST_SHA256, 1, -1, NULL),
       "1e0bbd6c686ba050b8eb03ffeedc64fdc9d80947fce821abbe5d6dc8d252c5ac",
       "a part of a file: computed");
    is(digest("abc", SFT_DIGEST_CRC32, 0, -1, NULL), "352441c2",
       "an algorithm the driver declines: computed");

    st->driver = posix;
}


#define SIZE   (300 * 1024 + 17)
#define HELD   16
#define ROOM   8192


static sft_storage_driver_t  fake;
static sft_storage_driver_t *posix;

static sft_storage_req_t    *held[HELD];
static sft_uint_t            nheld;
static sft_uint_t            hold;          /* reads stay held */
static sft_uint_t            overflow;
static sft_event_t           fake_ev;
static sft_uint_t            handled;


/* a short read of at least a byte, through the posix driver at once */

static sft_int_t
posix_read(sft_storage_req_t *req)
{
    size_t     len;
    sft_int_t  rc;

    len = req->len;
    req->len = 1 + rnd() % len;
    rc = posix->ops[SFT_STORAGE_READ](req);
    req->len = len;

    return rc;
}


static sft_int_t
fake_read(sft_storage_req_t *req)
{
    if (rnd() % 4 == 0) {
        return posix_read(req);
    }

    if (nheld == HELD) {
        overflow++;
        req->err = SFT_STORAGE_BUSY;
        return SFT_ERROR;
    }

    held[nheld++] = req;

    if (!hold) {
        sft_post_event(&fake_ev);
    }

    return SFT_AGAIN;
}


/* the reads held now, each from a random place, completed */

static void
fake_complete(sft_event_t *ev)
{
    sft_uint_t          n, i;
    sft_storage_req_t  *req;

    for (n = nheld; n && nheld; n--) {
        i = rnd() % nheld;
        req = held[i];
        held[i] = held[--nheld];

        if (posix_read(req) != SFT_OK) {
            printf("# a posix read failed\n");
        }

        sft_storage_complete(req);
    }

    if (nheld && !hold) {
        sft_post_event(&fake_ev);
    }
}


static sft_int_t
fake_cancel(sft_storage_req_t *req)
{
    sft_uint_t  i;

    for (i = 0; i < nheld; i++) {
        if (held[i] == req) {
            held[i] = held[--nheld];
            return SFT_OK;
        }
    }

    return SFT_DECLINED;
}


static void
handler(sft_storage_digest_t *d)
{
    handled++;
}


/* prepare()'s, with blocks and a handler, without the thread's buffer */

static void
prepare_async(sft_storage_digest_t *d, sft_digest_algo_t algo, off_t start,
    off_t end, off_t block, u_char *buf)
{
    prepare(d, algo, start, end, buf, ROOM);
    d->block = block;
    d->handler = handler;
    d->buf = NULL;
}


/* the digest on the loop through the stand-in, the same on the thread's
   way through posix: equal */

static void
compare(sft_digest_algo_t algo, off_t start, off_t end, off_t block)
{
    char                  what[160];
    sft_uint_t            was, ok_async;
    sft_storage_digest_t  a, s;
    static u_char         out_a[ROOM], out_s[ROOM];

    file.storage->driver = posix;
    prepare_async(&s, algo, start, end, block, out_s);
    s.buf = space;
    sft_storage_digest_run(&s);

    file.storage->driver = &fake;
    prepare_async(&a, algo, start, end, block, out_a);
    was = handled;

    ok_async = sft_storage_digest(&a, pool, NULL) == SFT_AGAIN
               && spin(10000, &handled, was + 1)
               && handled == was + 1;

    snprintf(what, sizeof(what), "algorithm %d, %lld-%lld, blocks of "
             "%lld: as on the thread (%zu bytes of digests)", (int) algo,
             (long long) start, (long long) end, (long long) block,
             s.out_len);

    ok(ok_async && s.err == SFT_STORAGE_OK && a.err == SFT_STORAGE_OK
       && a.out_len == s.out_len && a.done == s.done && s.out_len > 0
       && memcmp(out_a, out_s, s.out_len) == 0, what);
}


static void
compare_tests(void)
{
    sft_uint_t  algo;

    for (algo = 0; algo < SFT_DIGEST_N; algo++) {
        compare(algo, 0, -1, 0);
        compare(algo, 1, SIZE - 1, 0);
        compare(algo, 65535, 3 * 65536 + 1, 0);
        compare(algo, 0, -1, 4096 + 3);
        compare(algo, 777, 200000, 65536);
    }

    compare(SFT_DIGEST_SHA512, 1000, -1, 65536 * 3);
    compare(SFT_DIGEST_CRC32C, SIZE - 1, -1, 0);
    compare(SFT_DIGEST_MD5, 5, 5, 0);

    ok(overflow == 0 && nheld == 0, "never more reads than the digest's "
       "few in flight, none left");
}


static void
edge_tests(void)
{
    sft_uint_t            was;
    atomic_uint           cancel;
    sft_storage_digest_t  d;
    static u_char         big[ROOM];

    file.storage->driver = &fake;

    prepare_async(&d, SFT_DIGEST_SHA256, SIZE + 1, -1, 0, big);
    was = handled;
    ok(sft_storage_digest(&d, pool, NULL) == SFT_ERROR
       && d.err == SFT_STORAGE_INVALID && handled == was,
       "a start past the end: refused at once");

    /* a driver that keeps the whole file's SHA-256 */

    fake.caps |= SFT_STORAGE_CAP_CHECKSUMS;
    fake.ops[SFT_STORAGE_CHECKSUM] = stored_checksum;

    prepare_async(&d, SFT_DIGEST_SHA256, 0, -1, 0, big);
    ok(sft_storage_digest(&d, pool, NULL) == SFT_AGAIN && handled == was,
       "the stored digest: the handler posted, not called");
    ok(spin(10000, &handled, was + 1) && d.err == SFT_STORAGE_OK
       && d.out_len == 32 && big[0] == 0xab && big[31] == 0xab
       && d.done == SIZE && nheld == 0,
       "the stored digest of the whole file, no read");

    fake.caps &= ~SFT_STORAGE_CAP_CHECKSUMS;
    fake.ops[SFT_STORAGE_CHECKSUM] = NULL;

    /* the reads are held until the owner cancels */

    hold = 1;
    atomic_init(&cancel, 0);
    prepare_async(&d, SFT_DIGEST_SHA1, 0, -1, 0, big);
    d.cancel = &cancel;
    was = handled;

    ok(sft_storage_digest(&d, pool, NULL) == SFT_AGAIN, "started");
    (void) spin(300, &handled, was + 1);
    ok(handled == was && nheld > 0, "reads held: no answer");

    atomic_store(&cancel, 1);
    ok(spin(5000, &handled, was + 1) && handled == was + 1
       && d.err == SFT_STORAGE_BUSY, "cancelled: the handler ran, busy");
    ok(nheld == 0, "every held read taken back");

    hold = 0;
}


/* the stand-in over the posix driver, on a file of random bytes */

static void
nonblocking_tests(sft_storage_t *st)
{
    FILE    *f;
    char     path[600];
    u_char  *bytes;

    bytes = malloc(SIZE);
    snprintf(path, sizeof(path), "%s/rnd", root);
    f = fopen(path, "w");

    if (bytes == NULL || f == NULL) {
        ok(0, "the random file");
        free(bytes);
        return;
    }

    rnd_fill(bytes, SIZE);
    fwrite(bytes, 1, SIZE, f);
    fclose(f);
    free(bytes);

    if (open_file("rnd") != SFT_OK) {
        ok(0, "open of the random file");
        return;
    }

    posix = st->driver;
    fake = *posix;
    fake.blocking = 0;
    fake.ops[SFT_STORAGE_READ] = fake_read;
    fake.cancel = fake_cancel;

    fake_ev.handler = fake_complete;
    fake_ev.log = log;

    compare_tests();
    edge_tests();

    st->driver = posix;
    close_file();
}


int
main(void)
{
    char            top[256], cmd[600];
    sft_str_t       name = sft_string("test");
    sft_storage_t  *st;

    crc32_tests();

    sft_test_loop_init();
    log = cycle.log;
    log->log_level = SFT_LOG_CRIT;
    pool = sft_create_pool(4096, log);

    snprintf(top, sizeof(top), "/tmp/sft-digest-XXXXXX");
    if (mkdtemp(top) == NULL) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }

    snprintf(root, sizeof(root), "%s/root", top);
    mkdir(root, 0755);

    st = sft_storage_posix_create(pool, log, &name, (u_char *) root);
    if (st == NULL) {
        printf("Bail out! posix storage\n");
        return 1;
    }

    sft_vfs_session_init(&vs, st, NULL, SFT_PERM_ALL, log);

    known_tests();
    block_tests();
    async_tests();
    checksum_tests(st);
    nonblocking_tests(st);

    sft_storage_posix_destroy(st);

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
    if (system(cmd) != 0) {
        printf("# %s failed\n", cmd);
    }

    printf("1..%lu\n", tests);

    return failed ? 1 : 0;
}
