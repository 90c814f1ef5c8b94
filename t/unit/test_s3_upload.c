/*
 * test_s3_upload.c -- the S3 upload object on a real epoll loop with a
 * real buffer pool of 16 chunks of 1 MiB, against moto and a proxy in
 * front of it (S3_TEST_ENDPOINT, S3_TEST_PROXY, started by
 * t/s3_upload.t): PutObject, parts in flight while writes go on, writes
 * out of order, writes refused, abort, a part failed and sent again, a
 * part failing for good, an append by UploadPartCopy, an append of
 * another key's small object read into the first part, no-clobber,
 * CRC-32C, the sweep, two uploads sharing a pool too small for both,
 * and seeded random uploads: sizes, write sizes that do not divide a part
 * (a write running from one part into the next) and writes shuffled
 * within a few pieces, each object byte-identical.
 * Without those variables it skips.
 */

#include <sft_config.h>
#include <sft_core.h>
#include "sft_tap.h"
#include "sft_test_loop.h"
#include "sft_test_rand.h"

#include <sft_asm.h>
#include <sft_s3_upload.h>


#define BUCKET     "siftp-upload"
#define MIB        (1024 * 1024)
#define CHUNK      MIB
#define CHUNKS     16
#define PIECE      (256 * 1024)

#include "sft_test_s3.h"


static sft_bufpool_t   *bufpool;


/* a request with the answer kept whole, and one name in its query */

static sft_s3_request_t *
fetch(sft_s3_client_t *cl, const char *method, const char *key,
    const char *query)
{
    sft_s3_request_t  *r;

    r = request(cl, method, key);
    r->max_response = 64 * MIB;

    if (query) {
        r->query = sft_pcalloc(r->pool, sizeof(sft_s3_pair_t));
        r->query->name.data = (u_char *) query;
        r->query->name.len = strlen(query);
        r->nquery = 1;
    }

    return run(r);
}


/* the object's bytes equal data */

static sft_uint_t
same(sft_s3_client_t *cl, const char *key, u_char *data, size_t n)
{
    sft_uint_t         eq;
    sft_s3_request_t  *r;

    r = fetch(cl, "GET", key, NULL);
    eq = r->rc == SFT_OK && r->status == 200 && r->response.len == n
         && memcmp(r->response.data, data, n) == 0;
    sft_s3_request_free(r);

    return eq;
}


/* the object's bytes as served, into S3_TEST_DIR/key for the .t */

static void
keep(sft_s3_client_t *cl, const char *key)
{
    char               path[512];
    FILE              *f;
    sft_s3_request_t  *r;

    snprintf(path, sizeof(path), "%s/%s", getenv("S3_TEST_DIR"), key);

    r = fetch(cl, "GET", key, NULL);
    f = fopen(path, "w");

    if (f && r->rc == SFT_OK && r->status == 200) {
        (void) fwrite(r->response.data, 1, r->response.len, f);
    }

    if (f) {
        fclose(f);
    }

    sft_s3_request_free(r);
}


static long
status_of(sft_s3_client_t *cl, const char *method, const char *key)
{
    long               status;
    sft_s3_request_t  *r;

    r = fetch(cl, method, key, NULL);
    status = r->rc == SFT_OK ? r->status : -1;
    sft_s3_request_free(r);

    return status;
}


/* multipart uploads open under key, -1 if the listing failed */

static sft_int_t
open_uploads(sft_s3_client_t *cl, const char *key)
{
    sft_int_t          n;
    sft_uint_t         i;
    sft_s3_error_t     err;
    sft_s3_upload_t   *u;
    sft_s3_uploads_t   list;
    sft_s3_request_t  *r;

    r = fetch(cl, "GET", "", "uploads");
    n = -1;

    if (r->rc == SFT_OK && r->status == 200
        && sft_s3_xml_uploads(r->response.data, r->response.len, cycle.pool,
                              &list, &err) == SFT_OK)
    {
        n = 0;
        u = list.uploads.elts;

        for (i = 0; i < list.uploads.nelts; i++) {
            n += u[i].key.len == strlen(key)
                 && memcmp(u[i].key.data, key, u[i].key.len) == 0;
        }
    }

    sft_s3_request_free(r);

    return n;
}


static sft_uint_t
pool_free(void)
{
    sft_bufpool_stats_t  st;

    sft_bufpool_stats(bufpool, &st);

    return st.free == st.total;
}


/* an upload driven by the test: its writes and its outcome */

typedef struct {
    sft_s3_uploader_t  *up;
    sft_s3_write_t      w;
    sft_uint_t          written;       /* writes completed */
    sft_uint_t          failed;
    sft_uint_t          done;
    sft_int_t           rc;
    sft_uint_t          overlap;       /* writes after which a part was
                                          on its way: parts go out while
                                          the writes go on */
} job_t;


static void
job_write_done(sft_s3_write_t *w, sft_int_t rc)
{
    job_t  *j = w->data;

    j->written++;
    j->failed += rc != SFT_OK;
}


static void
job_done(sft_s3_uploader_t *up, sft_int_t rc)
{
    job_t  *j = up->conf.data;

    j->done = 1;
    j->rc = rc;
}


static sft_int_t job_open_from(job_t *j, sft_s3_client_t *cl,
    const char *key, const char *from, off_t append, uint32_t append_crc);


static sft_int_t
job_open(job_t *j, sft_s3_client_t *cl, const char *key, off_t append,
    uint32_t append_crc)
{
    return job_open_from(j, cl, key, "", append, append_crc);
}


/* an upload that begins with append bytes of the object under from
   ("": key) */

static sft_int_t
job_open_from(job_t *j, sft_s3_client_t *cl, const char *key,
    const char *from, off_t append, uint32_t append_crc)
{
    sft_int_t             rc;
    sft_s3_upload_conf_t  conf;

    sft_memzero(j, sizeof(job_t));
    sft_memzero(&conf, sizeof(conf));
    conf.client = cl;
    conf.key.data = (u_char *) key;
    conf.key.len = strlen(key);
    conf.part_size = 5 * MIB;
    conf.parts_in_flight = 2;
    conf.checksum = SFT_S3_CHECKSUM_CRC32C;
    conf.mtime = 1700000000;
    conf.append_size = append;
    conf.append_crc32c = append_crc;
    conf.append_crc32c_known = append > 0 && from[0] == '\0';
    conf.copy_source.data = (u_char *) from;
    conf.copy_source.len = strlen(from);
    conf.on_write = job_write_done;
    conf.on_done = job_done;
    conf.data = j;

    rc = sft_s3_upload_open(&conf, cycle.log, &j->up);

    return rc;
}


/* one write, waited for when it has to: SFT_OK, or what write said */

static sft_int_t
job_write(job_t *j, off_t offset, u_char *buf, size_t len)
{
    sft_int_t   rc;
    sft_uint_t  before;

    j->w.offset = offset;
    j->w.buf = buf;
    j->w.len = len;
    j->w.data = j;

    before = j->written;

    rc = sft_s3_upload_write(j->up, &j->w);

    j->overlap += j->up->sending > 0 && !j->up->committing;

    if (rc == SFT_AGAIN) {
        if (!spin(60000, &j->written, before + 1) || j->failed) {
            return SFT_ERROR;
        }

        return SFT_OK;
    }

    return rc;
}


/* in order, PIECE at a time, then committed and waited for */

static sft_int_t
job_all(job_t *j, u_char *data, off_t from, size_t n)
{
    size_t  off, len;

    for (off = 0; off < n; off += len) {
        len = sft_min(n - off, PIECE);

        if (job_write(j, from + (off_t) off, data + off, len) != SFT_OK) {
            return SFT_ERROR;
        }
    }

    if (sft_s3_upload_commit(j->up) != SFT_OK
        || !spin(120000, &j->done, 1))
    {
        return SFT_ERROR;
    }

    return j->rc;
}


/*
 * A seeded random upload of data: its size, the size of each write (a
 * byte, a page less one, OpenSSH's 255 KiB, 1 MiB, or any up to 600 KiB)
 * and the order of the writes within groups of up to four, so that no
 * write lands more than 4 MiB past the first byte missing: inside the
 * window of two 5 MiB parts.  0 if a write or the commit failed.
 */

#define RANDOM_PIECES   4096
#define RANDOM_UPLOADS  4

static sft_uint_t
job_random(job_t *j, u_char *data, size_t size)
{
    off_t       at[RANDOM_PIECES], o;
    size_t      len[RANDOM_PIECES], n, i, k, g, t, l, sizes[4];
    sft_uint_t  good;

    sizes[0] = 1;
    sizes[1] = 4095;
    sizes[2] = 255 * 1024;
    sizes[3] = MIB;

    for (n = 0, i = 0; i < size && n < RANDOM_PIECES; n++) {
        k = (rnd() % 5 == 4) ? 1 + rnd() % (600 * 1024) : sizes[rnd() % 4];
        k = sft_min(k, size - i);
        at[n] = (off_t) i;
        len[n] = k;
        i += k;
    }

    if (i < size) {
        return 0;                   /* too many pieces for the table */
    }

    for (i = 0; i < n; i += g) {
        g = sft_min(n - i, 1 + rnd() % 4);

        for (k = g; k > 1; k--) {   /* Fisher-Yates within the group */
            t = i + rnd() % k;
            o = at[i + k - 1];
            at[i + k - 1] = at[t];
            at[t] = o;
            l = len[i + k - 1];
            len[i + k - 1] = len[t];
            len[t] = l;
        }
    }

    good = 1;

    for (i = 0; i < n && good; i++) {
        good = job_write(j, at[i], data + at[i], len[i]) == SFT_OK;
    }

    return good && sft_s3_upload_commit(j->up) == SFT_OK
           && spin(120000, &j->done, 1) && j->rc == SFT_OK;
}


static void
fill(u_char *p, size_t n, unsigned seed)
{
    size_t    i;
    uint32_t  x;

    x = seed * 2654435761u + 1;

    for (i = 0; i < n; i++) {
        x = x * 1103515245 + 12345;
        p[i] = (u_char) (x >> 16);
    }
}


static sft_uint_t  sweeps;

static void
sweep_done(sft_s3_sweep_t *s, sft_int_t rc)
{
    s->data = (void *) (uintptr_t) (rc == SFT_OK);
    sweeps++;
}


static sft_int_t
sweep(sft_s3_client_t *cl, const char *prefix, time_t age)
{
    sft_s3_sweep_t  s;

    sft_memzero(&s, sizeof(s));
    s.client = cl;
    s.prefix.data = (u_char *) prefix;
    s.prefix.len = strlen(prefix);
    s.age = age;
    s.on_done = sweep_done;

    if (sft_s3_sweep_start(&s) != SFT_OK
        || !spin(60000, &sweeps, sweeps + 1) || s.data == NULL)
    {
        return -1;
    }

    return (sft_int_t) s.aborted;
}


static void
buffer_pool(void)
{
    sft_shm_zone_t  *zone;

    if (sft_array_init(&cycle.shared_memory, cycle.pool, 1,
                       sizeof(sft_shm_zone_t *)) != SFT_OK
        || sft_buffer_zone_add(&cycle, CHUNKS * CHUNK, CHUNK) != SFT_OK)
    {
        printf("Bail out! no buffer pool zone\n");
        exit(1);
    }

    zone = ((sft_shm_zone_t **) cycle.shared_memory.elts)[0];

    if (sft_shm_alloc(&zone->shm) != SFT_OK || zone->init(zone, NULL) != SFT_OK
        || sft_buffer_module.init_process(&cycle) != SFT_OK)
    {
        printf("Bail out! no buffer pool\n");
        exit(1);
    }

    bufpool = zone->data;
}


int
main(void)
{
    char               *endpoint, *proxy, rkey[32];
    u_char             *a, *b, *c;
    size_t              i, order[8], rsize;
    uint32_t            crc;
    sft_int_t           rc, rc2;
    sft_uint_t          ok1;
    sft_pool_t         *pool;
    sft_s3_client_t     cl, px;
    sft_s3_request_t   *r;
    job_t               j, k;

    endpoint = getenv("S3_TEST_ENDPOINT");
    proxy = getenv("S3_TEST_PROXY");

    if (endpoint == NULL || proxy == NULL || getenv("S3_TEST_DIR") == NULL) {
        printf("1..0 # skip run by t/s3_upload.t (S3_TEST_ENDPOINT)\n");
        return 0;
    }

    printf("1..36\n");

    sft_test_loop_init();
    pool = cycle.pool;

    buffer_pool();


    client(&cl, endpoint, 60000, 3);
    client(&px, proxy, 60000, 3);

    if (sft_s3_client_init(&cl, pool) != SFT_OK
        || sft_s3_client_init(&px, pool) != SFT_OK)
    {
        printf("Bail out! no client\n");
        return 1;
    }

    r = fetch(&cl, "PUT", "", NULL);
    ok(r->rc == SFT_OK && r->status == 200, "CreateBucket");
    sft_s3_request_free(r);

    a = malloc(16 * MIB);
    b = malloc(16 * MIB);
    fill(a, 16 * MIB, 1);
    fill(b, 16 * MIB, 2);

    /* a small object: one PutObject, its CRC-32C */

    job_open(&j, &cl, "small", 0, 0);
    rc = job_all(&j, a, 0, 100000);
    ok(rc == SFT_OK && !j.up->multipart && same(&cl, "small", a, 100000),
       "100000 bytes: one PutObject, the same bytes back");
    ok(j.up->crc32c_known && j.up->crc32c == sft_crc32c_c(0, a, 100000),
       "its CRC-32C kept");
    printf("# crc32c small %08x\n", (unsigned) j.up->crc32c);
    keep(&cl, "small");
    sft_s3_upload_abort(j.up);
    ok(pool_free(), "every chunk back in the pool");

    /* three parts, parts in flight while the writes go on */

    job_open(&j, &cl, "three", 0, 0);
    rc = job_all(&j, a, 0, 12 * MIB);
    ok(rc == SFT_OK && j.up->multipart && j.up->done.nelts == 3
       && same(&cl, "three", a, 12 * MIB),
       "12 MiB: three parts, the same bytes back");
    ok(j.overlap > 0, "a full part goes out while the writes go on");
    ok(j.up->chunks_peak <= 2 * 5,
       "at most parts in flight x chunks per part held");
    ok(j.up->crc32c == sft_crc32c_c(0, a, 12 * MIB),
       "the whole object's CRC-32C combined from its parts'");
    printf("# crc32c three %08x\n", (unsigned) j.up->crc32c);
    keep(&cl, "three");
    sft_s3_upload_abort(j.up);
    ok(pool_free(), "every chunk back");

    /* Content-MD5 on each part, encryption and a storage class asked */

    job_open(&j, &px, "md5", 0, 0);
    j.up->conf.checksum = SFT_S3_CHECKSUM_MD5;
    j.up->conf.sse = SFT_S3_SSE_S3;
    sft_str_set(&j.up->conf.storage_class, "STANDARD_IA");
    rc = job_all(&j, b, 0, 7 * MIB);
    ok(rc == SFT_OK && same(&cl, "md5", b, 7 * MIB),
       "parts with their Content-MD5 (checked by the proxy), SSE and a "
       "storage class: the same bytes");
    sft_s3_upload_abort(j.up);

    /* out of order within the window, in pieces of 1 MiB */

    order[0] = 1; order[1] = 0; order[2] = 3; order[3] = 2;
    order[4] = 4; order[5] = 6; order[6] = 5; order[7] = 7;

    job_open(&j, &cl, "shuffled", 0, 0);
    ok1 = 1;

    for (i = 0; i < 8; i++) {
        ok1 &= job_write(&j, (off_t) (order[i] * MIB), b + order[i] * MIB,
                         MIB) == SFT_OK;
    }

    ok(ok1 && sft_s3_upload_commit(j.up) == SFT_OK && spin(60000, &j.done, 1)
       && j.rc == SFT_OK && same(&cl, "shuffled", b, 8 * MIB),
       "written out of order within the window: the same bytes");
    sft_s3_upload_abort(j.up);

    /* behind what was sent, past the window: refused, nothing changed */

    job_open(&j, &cl, "refused", 0, 0);
    ok1 = 1;

    for (i = 0; i < 6; i++) {
        ok1 &= job_write(&j, (off_t) (i * MIB), a + i * MIB, MIB) == SFT_OK;
    }

    rc = job_write(&j, 0, b, 1000);
    ok(ok1 && rc == SFT_DECLINED && j.up->err == SFT_S3_UPLOAD_BEHIND,
       "a write behind the part sent: refused, behind");
    rc = job_write(&j, 40 * MIB, b, 1000);
    ok(rc == SFT_DECLINED && j.up->err == SFT_S3_UPLOAD_BEYOND,
       "a write past the window: refused, beyond");
    rc = job_write(&j, 6 * MIB, a + 6 * MIB, MIB);
    ok(rc == SFT_OK, "the upload goes on after them");

    /* abort mid-way: no upload left, no object */

    spin(300, &done_n, (sft_uint_t) -1);
    sft_s3_upload_abort(j.up);

    for (i = 0; i < 100 && open_uploads(&cl, "refused") != 0; i++) {
        spin(100, &done_n, (sft_uint_t) -1);
    }

    ok(open_uploads(&cl, "refused") == 0 && status_of(&cl, "HEAD", "refused")
                                            == 404,
       "aborted mid-way: ListMultipartUploads shows none, no object");
    ok(pool_free(), "every chunk back after the abort");

    /* a part answered 500 twice: sent again from the held chunks */

    job_open(&j, &px, "flaky-part", 0, 0);
    rc = job_all(&j, b, 0, 11 * MIB);
    ok(rc == SFT_OK && same(&cl, "flaky-part", b, 11 * MIB),
       "UploadPart answered 500 twice: retried, the same bytes");
    sft_s3_upload_abort(j.up);

    /* a part that always fails: the upload fails and is aborted */

    job_open(&j, &px, "broken", 0, 0);
    rc = job_all(&j, b, 0, 11 * MIB);
    ok(rc == SFT_ERROR && j.up->err == SFT_S3_UPLOAD_FAILED,
       "UploadPart answered 500 past the retries: the upload failed");
    sft_s3_upload_abort(j.up);

    for (i = 0; i < 100 && open_uploads(&cl, "broken") != 0; i++) {
        spin(100, &done_n, (sft_uint_t) -1);
    }

    ok(open_uploads(&cl, "broken") == 0 && status_of(&cl, "HEAD", "broken")
                                           == 404 && pool_free(),
       "then aborted: no upload left, no object, every chunk back");

    /* append: the old 6 MiB copied on the server, then the new bytes */

    job_open(&j, &px, "append", 0, 0);
    rc = job_all(&j, a, 0, 6 * MIB);
    crc = j.up->crc32c;
    sft_s3_upload_abort(j.up);
    ok(rc == SFT_OK, "a 6 MiB object");

    rc = job_open(&j, &px, "append", 6 * MIB, crc);
    rc2 = rc == SFT_OK ? job_all(&j, b, 6 * MIB, 3 * MIB) : SFT_ERROR;
    ok(rc2 == SFT_OK && j.up->copies == 1,
       "appended by UploadPartCopy and UploadPart");

    c = malloc(9 * MIB);
    memcpy(c, a, 6 * MIB);
    memcpy(c + 6 * MIB, b, 3 * MIB);
    ok(same(&cl, "append", c, 9 * MIB), "the old bytes then the new ones");
    ok(j.up->crc32c_known && j.up->crc32c == sft_crc32c_c(0, c, 9 * MIB),
       "the CRC-32C of the whole, from the old one's and the new parts'");
    sft_s3_upload_abort(j.up);
    free(c);

    r = fetch(&px, "GET", "__log", NULL);
    ok(r->rc == SFT_OK && r->status == 200
       && memmem(r->response.data, r->response.len,
                 "GET /" BUCKET "/append", sizeof("GET /" BUCKET "/append") - 1)
          == NULL
       && memmem(r->response.data, r->response.len, "PUT /" BUCKET "/append",
                 sizeof("PUT /" BUCKET "/append") - 1) != NULL,
       "the old bytes never read back by the server");
    sft_s3_request_free(r);

    /* below 5 MiB: the old bytes (another key's) read into part 0 */

    rc = job_open_from(&j, &cl, "smallcat", "small", 100000, 0);
    rc2 = rc == SFT_OK ? job_all(&j, b, 100000, 1000) : SFT_ERROR;
    c = malloc(101000);
    memcpy(c, a, 100000);
    memcpy(c + 100000, b, 1000);
    ok(rc2 == SFT_OK && j.up->copies == 0 && same(&cl, "smallcat", c, 101000)
       && same(&cl, "small", a, 100000),
       "append to another key's object below 5 MiB: read, then the rest");
    sft_s3_upload_abort(j.up);
    free(c);

    /* no-clobber: an existing name refused */

    job_open(&j, &cl, "small", 0, 0);
    j.up->conf.no_clobber = 1;
    rc = job_all(&j, b, 0, 1000);
    ok(rc == SFT_ERROR && j.up->err == SFT_S3_UPLOAD_EXISTS
       && same(&cl, "small", a, 100000),
       "no-clobber on an existing name: refused, the old object kept");
    sft_s3_upload_abort(j.up);

    /* the sweep: a young upload kept by a long age, then aborted by 0 */

    r = fetch(&px, "POST", "sweep/left", "uploads");
    ok(r->rc == SFT_OK && r->status == 200, "an upload left behind");
    sft_s3_request_free(r);

    ok(sweep(&px, "sweep/", 3600) == 0 && open_uploads(&cl, "sweep/left") == 1,
       "a sweep of uploads older than an hour: kept");
    ok(sweep(&px, "sweep/", 0) == 1 && open_uploads(&cl, "sweep/left") == 0,
       "a sweep of age 0: aborted");

    /* two uploads at once: 2 x 2 parts of 5 chunks > 16 chunks */

    job_open(&j, &cl, "twin-a", 0, 0);
    job_open(&k, &cl, "twin-b", 0, 0);
    ok1 = 1;

    for (i = 0; i < 12 * MIB && ok1; i += PIECE) {
        rc = job_write(&j, (off_t) i, a + i, PIECE);
        rc2 = rc == SFT_OK ? job_write(&k, (off_t) i, b + i, PIECE)
                           : SFT_ERROR;
        ok1 = rc == SFT_OK && rc2 == SFT_OK;
    }

    ok1 = ok1 && sft_s3_upload_commit(j.up) == SFT_OK
          && sft_s3_upload_commit(k.up) == SFT_OK;
    ok(ok1 && spin(120000, &j.done, 1) && spin(120000, &k.done, 1)
       && j.rc == SFT_OK && k.rc == SFT_OK,
       "two uploads sharing a pool too small for both: both done");
    ok(same(&cl, "twin-a", a, 12 * MIB) && same(&cl, "twin-b", b, 12 * MIB),
       "both objects right");
    sft_s3_upload_abort(j.up);
    sft_s3_upload_abort(k.up);
    ok(pool_free(), "every chunk back at the end");

    /* seeded random uploads */

    for (i = 0; i < RANDOM_UPLOADS; i++) {
        rsize = 1 + rnd() % (12 * MIB);
        snprintf(rkey, sizeof(rkey), "random-%lu", (unsigned long) i);
        job_open(&j, &cl, rkey, 0, 0);
        ok1 = job_random(&j, a, rsize);
        sft_s3_upload_abort(j.up);

        ok(ok1 && same(&cl, rkey, a, rsize) && pool_free(),
           "a random upload: sizes, writes across parts, some out of "
           "order: the same bytes, every chunk back");
    }

    free(a);
    free(b);
    sft_s3_multi_done();

    return failed ? 1 : 0;
}
