/*
 * sft_s3_sign.c -- AWS Signature Version 4 (HMAC-SHA256) as S3 wants it:
 * each path segment encoded once, the query sorted, header names in lower
 * case with their values trimmed, and the payload hash (or
 * UNSIGNED-PAYLOAD) both signed and sent.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_sign.h>

#include <openssl/hmac.h>
#include <openssl/evp.h>
#include <openssl/sha.h>


/* a name and a value ready for the canonical request */

typedef struct {
    sft_str_t   name;
    sft_str_t   value;
} sft_s3_canon_t;


static sft_int_t sft_s3_canonical_headers(sft_s3_sign_t *s,
    sft_str_t *amz_date, sft_pool_t *pool, sft_str_t *headers,
    sft_str_t *signed_headers);
static void sft_s3_signing_key(sft_s3_sign_t *s, u_char *date,
    u_char *key);
static int sft_s3_canon_cmp(const void *a, const void *b);
static void sft_s3_hex(const u_char *p, size_t n, u_char *hex);


static const u_char  sft_s3_hexdigits[] = "0123456789abcdef";
static const u_char  sft_s3_hexupper[] = "0123456789ABCDEF";


/* RFC 3986's unreserved characters, whatever the locale */
#define sft_s3_unreserved(ch)                                                 \
    (((ch) >= 'a' && (ch) <= 'z') || ((ch) >= 'A' && (ch) <= 'Z')            \
     || ((ch) >= '0' && (ch) <= '9') || (ch) == '-' || (ch) == '_'            \
     || (ch) == '.' || (ch) == '~')

#define sft_s3_lower(ch)  (((ch) >= 'A' && (ch) <= 'Z') ? (ch) | 0x20 : (ch))


sft_int_t
sft_s3_sign(sft_s3_sign_t *s, sft_pool_t *pool, sft_str_t *amz_date,
    sft_str_t *authorization)
{
    u_char      *p, *last, *date;
    u_char       key[32], mac[32], hash[SFT_S3_SHA256_HEX_LEN];
    size_t       len;
    struct tm    tm;
    sft_str_t    query, headers, signed_headers, canonical, scope, sts;

    if (s->creds->secret_key.len > SFT_S3_SECRET_MAX) {
        return SFT_ERROR;
    }

    if (gmtime_r(&s->now, &tm) == NULL
        || tm.tm_year + 1900 < 1970 || tm.tm_year + 1900 > 9999)
    {
        return SFT_ERROR;
    }

    amz_date->data = sft_pnalloc(pool, SFT_S3_AMZ_DATE_LEN + 1);
    if (amz_date->data == NULL) {
        return SFT_ERROR;
    }

    amz_date->len = strftime((char *) amz_date->data, SFT_S3_AMZ_DATE_LEN + 1,
                             "%Y%m%dT%H%M%SZ", &tm);
    if (amz_date->len != SFT_S3_AMZ_DATE_LEN) {
        return SFT_ERROR;
    }

    date = amz_date->data;        /* its first 8 bytes: YYYYMMDD */

    if (sft_s3_canonical_query(s->query, s->nquery, pool, &query) != SFT_OK
        || sft_s3_canonical_headers(s, amz_date, pool, &headers,
                                    &signed_headers) != SFT_OK)
    {
        return SFT_ERROR;
    }

    /* the canonical request */

    len = s->method.len + 1 + sft_s3_uri_encode(NULL, &s->path, 1) + 1
          + query.len + 1 + headers.len + 1 + signed_headers.len + 1
          + s->payload_hash.len;

    canonical.data = sft_pnalloc(pool, len);
    if (canonical.data == NULL) {
        return SFT_ERROR;
    }

    p = sft_cpymem(canonical.data, s->method.data, s->method.len);
    *p++ = '\n';
    p += sft_s3_uri_encode(p, &s->path, 1);
    *p++ = '\n';
    p = sft_cpymem(p, query.data, query.len);
    *p++ = '\n';
    p = sft_cpymem(p, headers.data, headers.len);
    *p++ = '\n';
    p = sft_cpymem(p, signed_headers.data, signed_headers.len);
    *p++ = '\n';
    p = sft_cpymem(p, s->payload_hash.data, s->payload_hash.len);
    canonical.len = p - canonical.data;

    /* the scope and the string to sign */

    len = 8 + 1 + s->region.len + 1 + s->service.len + sizeof("/aws4_request");

    scope.data = sft_pnalloc(pool, len);
    if (scope.data == NULL) {
        return SFT_ERROR;
    }

    last = sft_slprintf(scope.data, scope.data + len, "%.8s/%.*s/%.*s/aws4_request",
                        (char *) date, SFT_STR_FMT(&s->region),
                        SFT_STR_FMT(&s->service));
    scope.len = last - scope.data;

    sft_s3_sha256_hex(canonical.data, canonical.len, hash);

    len = sizeof("AWS4-HMAC-SHA256\n") - 1 + SFT_S3_AMZ_DATE_LEN + 1
          + scope.len + 1 + SFT_S3_SHA256_HEX_LEN;

    sts.data = sft_pnalloc(pool, len);
    if (sts.data == NULL) {
        return SFT_ERROR;
    }

    p = sft_cpymem(sts.data, "AWS4-HMAC-SHA256\n",
                   sizeof("AWS4-HMAC-SHA256\n") - 1);
    p = sft_cpymem(p, amz_date->data, SFT_S3_AMZ_DATE_LEN);
    *p++ = '\n';
    p = sft_cpymem(p, scope.data, scope.len);
    *p++ = '\n';
    p = sft_cpymem(p, hash, SFT_S3_SHA256_HEX_LEN);
    sts.len = p - sts.data;

    sft_s3_signing_key(s, date, key);

    if (HMAC(EVP_sha256(), key, sizeof(key), sts.data, sts.len, mac, NULL)
        == NULL)
    {
        return SFT_ERROR;
    }

    sft_explicit_memzero(key, sizeof(key));

    /* the header */

    len = sizeof("AWS4-HMAC-SHA256 Credential=/, SignedHeaders=, Signature=")
          + s->creds->access_key.len + scope.len + signed_headers.len
          + 2 * sizeof(mac);

    authorization->data = sft_pnalloc(pool, len);
    if (authorization->data == NULL) {
        return SFT_ERROR;
    }

    p = sft_slprintf(authorization->data, authorization->data + len,
                     "AWS4-HMAC-SHA256 Credential=%.*s/%.*s, "
                     "SignedHeaders=%.*s, Signature=",
                     SFT_STR_FMT(&s->creds->access_key), SFT_STR_FMT(&scope),
                     SFT_STR_FMT(&signed_headers));
    sft_s3_hex(mac, sizeof(mac), p);
    authorization->len = p + 2 * sizeof(mac) - authorization->data;

    return SFT_OK;
}


/*
 * kDate = HMAC("AWS4" + secret, date), then the region, the service and
 * "aws4_request"; kept while the day, the secret and the scope stay.
 */

static void
sft_s3_signing_key(sft_s3_sign_t *s, u_char *date, u_char *key)
{
    u_char              made_of[32], k[32];
    u_char              secret[4 + SFT_S3_SECRET_MAX];
    size_t              len;
    EVP_MD_CTX         *md;
    sft_s3_sign_key_t  *cache;

    cache = s->cache;
    md = EVP_MD_CTX_new();

    if (md == NULL
        || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1
        || EVP_DigestUpdate(md, s->creds->secret_key.data,
                            s->creds->secret_key.len) != 1
        || EVP_DigestUpdate(md, date, 8) != 1
        || EVP_DigestUpdate(md, s->region.data, s->region.len) != 1
        || EVP_DigestUpdate(md, "/", 1) != 1
        || EVP_DigestUpdate(md, s->service.data, s->service.len) != 1
        || EVP_DigestFinal_ex(md, made_of, NULL) != 1)
    {
        cache = NULL;       /* derived, not cached */
    }

    EVP_MD_CTX_free(md);

    if (cache && cache->valid
        && sft_memcmp(cache->made_of, made_of, sizeof(made_of)) == 0)
    {
        sft_memcpy(key, cache->key, 32);
        return;
    }

    len = 4 + s->creds->secret_key.len;

    sft_memcpy(secret, "AWS4", 4);
    sft_memcpy(secret + 4, s->creds->secret_key.data,
               s->creds->secret_key.len);

    /* HMAC() may not write over its own key: two buffers in turn */

    HMAC(EVP_sha256(), secret, (int) len, date, 8, k, NULL);
    HMAC(EVP_sha256(), k, 32, s->region.data, s->region.len, key, NULL);
    HMAC(EVP_sha256(), key, 32, s->service.data, s->service.len, k, NULL);
    HMAC(EVP_sha256(), k, 32, (u_char *) "aws4_request",
         sizeof("aws4_request") - 1, key, NULL);

    sft_explicit_memzero(secret, len);
    sft_explicit_memzero(k, sizeof(k));

    if (cache) {
        sft_memcpy(cache->key, key, 32);
        sft_memcpy(cache->made_of, made_of, sizeof(made_of));
        cache->valid = 1;
    }
}


/*
 * host, x-amz-content-sha256, x-amz-date, x-amz-security-token and the
 * caller's headers: names in lower case, values with their leading and
 * trailing blanks removed and inner runs of blanks made one space, sorted
 * by name.
 */

static sft_int_t
sft_s3_canonical_headers(sft_s3_sign_t *s, sft_str_t *amz_date,
    sft_pool_t *pool, sft_str_t *headers, sft_str_t *signed_headers)
{
    u_char          *p, *q, *sp, *end;
    size_t           hlen, slen;
    sft_uint_t       i, n, blank;
    sft_s3_canon_t  *c;

    c = sft_palloc(pool, (s->nheaders + 4) * sizeof(sft_s3_canon_t));
    if (c == NULL) {
        return SFT_ERROR;
    }

    n = 0;
    sft_str_set(&c[n].name, "host");
    c[n++].value = s->host;
    sft_str_set(&c[n].name, "x-amz-content-sha256");
    c[n++].value = s->payload_hash;
    sft_str_set(&c[n].name, "x-amz-date");
    c[n++].value = *amz_date;

    if (s->creds->session_token.len) {
        sft_str_set(&c[n].name, "x-amz-security-token");
        c[n++].value = s->creds->session_token;
    }

    for (i = 0; i < s->nheaders; i++, n++) {
        c[n].name.len = s->headers[i].name.len;
        c[n].name.data = sft_pnalloc(pool, c[n].name.len + 1);
        c[n].value.data = sft_pnalloc(pool, s->headers[i].value.len + 1);

        if (c[n].name.data == NULL || c[n].value.data == NULL) {
            return SFT_ERROR;
        }

        for (p = s->headers[i].name.data, q = c[n].name.data;
             p < s->headers[i].name.data + c[n].name.len;
             p++)
        {
            *q++ = sft_s3_lower(*p);
        }

        p = s->headers[i].value.data;
        end = p + s->headers[i].value.len;
        q = c[n].value.data;
        blank = 0;

        while (p < end && (*p == ' ' || *p == '\t')) {
            p++;
        }

        for ( /* void */ ; p < end; p++) {
            if (*p == ' ' || *p == '\t') {
                blank = 1;
                continue;
            }

            if (blank) {
                *q++ = ' ';
                blank = 0;
            }

            *q++ = *p;
        }

        c[n].value.len = q - c[n].value.data;
    }

    qsort(c, n, sizeof(sft_s3_canon_t), sft_s3_canon_cmp);

    hlen = 0;
    slen = 0;

    for (i = 0; i < n; i++) {
        hlen += c[i].name.len + 1 + c[i].value.len + 1;
        slen += c[i].name.len + 1;
    }

    headers->data = sft_pnalloc(pool, hlen);
    signed_headers->data = sft_pnalloc(pool, slen);

    if (headers->data == NULL || signed_headers->data == NULL) {
        return SFT_ERROR;
    }

    p = headers->data;
    sp = signed_headers->data;

    for (i = 0; i < n; i++) {
        p = sft_cpymem(p, c[i].name.data, c[i].name.len);
        *p++ = ':';
        p = sft_cpymem(p, c[i].value.data, c[i].value.len);
        *p++ = '\n';

        if (i) {
            *sp++ = ';';
        }

        sp = sft_cpymem(sp, c[i].name.data, c[i].name.len);
    }

    headers->len = p - headers->data;
    signed_headers->len = sp - signed_headers->data;

    return SFT_OK;
}


/* "k=v&k2=" with both sides encoded ('/' too), sorted by name, then value */

sft_int_t
sft_s3_canonical_query(sft_s3_pair_t *query, sft_uint_t n, sft_pool_t *pool,
    sft_str_t *out)
{
    u_char          *p;
    size_t           len;
    sft_uint_t       i;
    sft_s3_canon_t  *c;

    out->len = 0;
    out->data = (u_char *) "";

    if (n == 0) {
        return SFT_OK;
    }

    c = sft_palloc(pool, n * sizeof(sft_s3_canon_t));
    if (c == NULL) {
        return SFT_ERROR;
    }

    len = 0;

    for (i = 0; i < n; i++) {
        c[i].name.len = sft_s3_uri_encode(NULL, &query[i].name, 0);
        c[i].value.len = sft_s3_uri_encode(NULL, &query[i].value, 0);
        c[i].name.data = sft_pnalloc(pool, c[i].name.len + c[i].value.len + 1);

        if (c[i].name.data == NULL) {
            return SFT_ERROR;
        }

        c[i].value.data = c[i].name.data + c[i].name.len;
        (void) sft_s3_uri_encode(c[i].name.data, &query[i].name, 0);
        (void) sft_s3_uri_encode(c[i].value.data, &query[i].value, 0);

        len += c[i].name.len + 1 + c[i].value.len + 1;
    }

    qsort(c, n, sizeof(sft_s3_canon_t), sft_s3_canon_cmp);

    out->data = sft_pnalloc(pool, len);
    if (out->data == NULL) {
        return SFT_ERROR;
    }

    p = out->data;

    for (i = 0; i < n; i++) {
        if (i) {
            *p++ = '&';
        }

        p = sft_cpymem(p, c[i].name.data, c[i].name.len);
        *p++ = '=';
        p = sft_cpymem(p, c[i].value.data, c[i].value.len);
    }

    out->len = p - out->data;

    return SFT_OK;
}


size_t
sft_s3_uri_encode(u_char *dst, const sft_str_t *src, sft_uint_t keep_slash)
{
    u_char  *p, *end, *d;
    size_t   len;

    len = 0;
    d = dst;
    end = src->data + src->len;

    for (p = src->data; p < end; p++) {
        if (sft_s3_unreserved(*p) || (*p == '/' && keep_slash))
        {
            len++;

            if (d) {
                *d++ = *p;
            }

            continue;
        }

        len += 3;

        if (d) {
            *d++ = '%';
            *d++ = sft_s3_hexupper[*p >> 4];
            *d++ = sft_s3_hexupper[*p & 0xf];
        }
    }

    return len;
}


void
sft_s3_sha256_hex(const u_char *p, size_t n, u_char *hex)
{
    u_char  md[SHA256_DIGEST_LENGTH];

    SHA256(p, n, md);
    sft_s3_hex(md, sizeof(md), hex);
}


static int
sft_s3_canon_cmp(const void *a, const void *b)
{
    int                    rc;
    size_t                 len;
    const sft_s3_canon_t  *x = a, *y = b;

    len = sft_min(x->name.len, y->name.len);
    rc = sft_memcmp(x->name.data, y->name.data, len);

    if (rc || x->name.len != y->name.len) {
        return rc ? rc : (x->name.len < y->name.len ? -1 : 1);
    }

    len = sft_min(x->value.len, y->value.len);
    rc = sft_memcmp(x->value.data, y->value.data, len);

    if (rc || x->value.len == y->value.len) {
        return rc;
    }

    return x->value.len < y->value.len ? -1 : 1;
}


static void
sft_s3_hex(const u_char *p, size_t n, u_char *hex)
{
    while (n--) {
        *hex++ = sft_s3_hexdigits[*p >> 4];
        *hex++ = sft_s3_hexdigits[*p++ & 0xf];
    }
}
