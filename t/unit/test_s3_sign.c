/*
 * test_s3_sign.c -- AWS Signature Version 4 against botocore: each
 * request below was signed by botocore's S3SigV4Auth at the same fixed
 * time (t/unit/s3_sign_vectors.py prints the expected headers), and the
 * C signer must give the same Authorization header byte for byte.
 */

#include <sft_config.h>
#include <sft_core.h>
#include "sft_tap.h"

#include <sft_s3_sign.h>


/* 2026-12-01T18:40:34Z */
#define NOW  1796150434


#define P(n, v)  { sft_string(n), sft_string(v) }


static sft_s3_pair_t  range_hdr[] = { P("Range", "bytes=0-99") };
static sft_s3_pair_t  put_hdr[] = {
    P("Content-Type", "application/octet-stream"),
    P("X-Amz-Meta-Note", "  two   spaces  here ")
};
static sft_s3_pair_t  list_q[] = {
    P("list-type", "2"), P("prefix", "dir/"), P("delimiter", "/"),
    P("max-keys", "5"), P("continuation-token", "a+b/c=d")
};
static sft_s3_pair_t  uploads_q[] = { P("uploads", "") };
static sft_s3_pair_t  inm_hdr[] = { P("If-None-Match", "*") };
static sft_s3_pair_t  copy_q[] = {
    P("uploadId", "abc/def=="), P("partNumber", "2")
};
static sft_s3_pair_t  copy_hdr[] = {
    P("x-amz-copy-source", "/files/old%20name"),
    P("x-amz-copy-source-range", "bytes=0-5242879")
};


typedef struct {
    const char      *name;
    const char      *method;
    const char      *host;
    const char      *path;
    sft_s3_pair_t   *query;
    sft_uint_t       nquery;
    sft_s3_pair_t   *headers;
    sft_uint_t       nheaders;
    const char      *payload;       /* NULL: UNSIGNED-PAYLOAD */
    const char      *token;
    const char      *region;
    const char      *expect;
} vector_t;


static vector_t  vectors[] = {

    { "get_ranged_unsigned", "GET", "s3.eu-west-3.amazonaws.com",
      "/bucket/dir/a b+c~\xc3\xa9.txt", NULL, 0, range_hdr, 1, NULL, NULL,
      "eu-west-3",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/eu-west-3/s3/"
      "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;"
      "x-amz-date, Signature=1bd2ea5de9657c40949023862b3cfc07e5833aa325de2c"
      "d062a30b630ce157b5" },

    { "put_hashed_token", "PUT", "127.0.0.1:9000", "/files/up/load.bin",
      NULL, 0, put_hdr, 2, "hello, world\n", "FwoGZXIvYXdzEtoken/with+chars=",
      "us-east-1",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/us-east-1/s3/"
      "aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;"
      "x-amz-date;x-amz-meta-note;x-amz-security-token, Signature=ec27bc29aa"
      "8de3013fe5e94fdacb2ee9df120fe544768e379a687b37a0e46ca8" },

    { "list_v2_query", "GET", "127.0.0.1:9000", "/files", list_q, 5,
      NULL, 0, "", NULL, "us-east-1",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/us-east-1/s3/"
      "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
      "Signature=8bf946bbe09657a41f7ea368682d640ff433102066132f7a9408b939d0"
      "cdb5b2" },

    { "initiate_multipart", "POST", "files.s3.us-east-1.amazonaws.com",
      "/big.iso", uploads_q, 1, inm_hdr, 1, NULL, NULL, "us-east-1",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/us-east-1/s3/"
      "aws4_request, SignedHeaders=host;if-none-match;x-amz-content-sha256;"
      "x-amz-date, Signature=05eef6c7b7642cb3428802710ee90a77c01b6844d8f15d"
      "e2f42b18846974e1fb" },

    { "upload_part_copy", "PUT", "127.0.0.1:9000", "/files/new", copy_q, 2,
      copy_hdr, 2, "", NULL, "us-east-1",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/us-east-1/s3/"
      "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-copy-"
      "source;x-amz-copy-source-range;x-amz-date, Signature=e0e0b9a8ef9a159a"
      "f92c497632f75a3fe0c937eb5ca56551de076eb64fae4136" },
};


static sft_int_t
sign(vector_t *v, sft_s3_sign_key_t *cache, sft_pool_t *pool,
    sft_str_t *date, sft_str_t *auth)
{
    u_char          hex[SFT_S3_SHA256_HEX_LEN];
    sft_s3_sign_t   s;
    sft_s3_creds_t  creds;

    sft_memzero(&creds, sizeof(creds));
    sft_str_set(&creds.access_key, "AKIDEXAMPLE");
    sft_str_set(&creds.secret_key, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");

    if (v->token) {
        creds.session_token.data = (u_char *) v->token;
        creds.session_token.len = strlen(v->token);
    }

    sft_memzero(&s, sizeof(s));
    s.method.data = (u_char *) v->method;
    s.method.len = strlen(v->method);
    s.host.data = (u_char *) v->host;
    s.host.len = strlen(v->host);
    s.path.data = (u_char *) v->path;
    s.path.len = strlen(v->path);
    s.query = v->query;
    s.nquery = v->nquery;
    s.headers = v->headers;
    s.nheaders = v->nheaders;
    s.region.data = (u_char *) v->region;
    s.region.len = strlen(v->region);
    sft_str_set(&s.service, "s3");
    s.now = NOW;
    s.creds = &creds;
    s.cache = cache;

    if (v->payload) {
        sft_s3_sha256_hex((u_char *) v->payload, strlen(v->payload), hex);
        s.payload_hash.data = hex;
        s.payload_hash.len = sizeof(hex);

    } else {
        sft_str_set(&s.payload_hash, SFT_S3_UNSIGNED_PAYLOAD);
    }

    return sft_s3_sign(&s, pool, date, auth);
}


int
main(void)
{
    char                name[128];
    sft_log_t          *log;
    sft_str_t           date, auth, in, query;
    sft_uint_t          i;
    sft_pool_t         *pool;
    sft_s3_sign_key_t   cache;
    u_char              enc[64];
    size_t              len;

    printf("1..%d\n", (int) (2 * (sizeof(vectors) / sizeof(vectors[0])) + 6));

    log = sft_log_init();
    pool = sft_create_pool(16384, log);
    sft_memzero(&cache, sizeof(cache));

    for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        snprintf(name, sizeof(name), "%s: the signature botocore gives",
                 vectors[i].name);
        ok(sign(&vectors[i], NULL, pool, &date, &auth) == SFT_OK
           && auth.len == strlen(vectors[i].expect)
           && memcmp(auth.data, vectors[i].expect, auth.len) == 0, name);

        if (auth.len != strlen(vectors[i].expect)
            || memcmp(auth.data, vectors[i].expect, auth.len) != 0)
        {
            printf("# got      %.*s\n# expected %s\n", (int) auth.len,
                   auth.data, vectors[i].expect);
        }

        /* the second time through the cached key (same day, same scope
         * for all but the first, which changes the region) */
        snprintf(name, sizeof(name), "%s: the same with a cached key",
                 vectors[i].name);
        ok(sign(&vectors[i], &cache, pool, &date, &auth) == SFT_OK
           && auth.len == strlen(vectors[i].expect)
           && memcmp(auth.data, vectors[i].expect, auth.len) == 0
           && cache.valid, name);
    }

    ok(date.len == SFT_S3_AMZ_DATE_LEN
       && memcmp(date.data, "20261201T184034Z", date.len) == 0,
       "x-amz-date from the time given, in UTC");

    sft_str_set(&in, "a b/\xc3\xa9~+*");
    len = sft_s3_uri_encode(enc, &in, 1);
    ok(len == sizeof("a%20b/%C3%A9~%2B%2A") - 1
       && memcmp(enc, "a%20b/%C3%A9~%2B%2A", len) == 0,
       "path encoding keeps '/' and '~', upper-case escapes");

    len = sft_s3_uri_encode(enc, &in, 0);
    ok(len == sft_s3_uri_encode(NULL, &in, 0)
       && memcmp(enc, "a%20b%2F%C3%A9~%2B%2A", len) == 0,
       "query encoding escapes '/' and counts what it writes");

    ok(sft_s3_canonical_query(list_q, 5, pool, &query) == SFT_OK
       && query.len == sizeof("continuation-token=a%2Bb%2Fc%3Dd&delimiter=%2F"
                              "&list-type=2&max-keys=5&prefix=dir%2F") - 1
       && memcmp(query.data, "continuation-token=a%2Bb%2Fc%3Dd&delimiter=%2F"
                 "&list-type=2&max-keys=5&prefix=dir%2F", query.len) == 0,
       "canonical query sorted by name");

    /* a secret past the bound and a year past 9999 are refused */

    {
        sft_s3_sign_t   s;
        sft_s3_creds_t  creds;

        sft_memzero(&creds, sizeof(creds));
        sft_str_set(&creds.access_key, "AKIDEXAMPLE");
        creds.secret_key.len = SFT_S3_SECRET_MAX + 1;
        creds.secret_key.data = (u_char *) calloc(1, creds.secret_key.len);

        sft_memzero(&s, sizeof(s));
        sft_str_set(&s.method, "GET");
        s.creds = &creds;
        s.now = NOW;

        ok(sft_s3_sign(&s, pool, &date, &auth) == SFT_ERROR,
           "an oversized secret is refused");

        creds.secret_key.len = 4;
        s.now = (time_t) 253402300800LL;      /* 10000-01-01 */
        ok(sft_s3_sign(&s, pool, &date, &auth) == SFT_ERROR,
           "a time past year 9999 is refused");

        free(creds.secret_key.data);
    }

    sft_destroy_pool(pool);

    return failed ? 1 : 0;
}
