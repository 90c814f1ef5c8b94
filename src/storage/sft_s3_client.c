/*
 * sft_s3_client.c -- an S3 client's endpoint: path-style
 * (scheme://host/bucket/key, or scheme://host/ without a bucket, as STS
 * is asked) or virtual-hosted (scheme://bucket.host/key) addressing, TLS
 * trust, a warning where a host name would be resolved without
 * libcurl's asynchronous resolver, and the wait before an attempt again.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_client.h>

#include <sodium.h>


/* a bucket name per S3's rules is at most 63 bytes, a host name 253 */
#define SFT_S3_HOST_MAX  512


sft_int_t
sft_s3_client_init(sft_s3_client_t *cl, sft_pool_t *pool)
{
    if (sft_s3_client_endpoint(cl, pool) != SFT_OK) {
        return SFT_ERROR;
    }

    return sft_s3_multi_init(cl->log);
}


/* the endpoint and the bucket checked and parsed; no handle is made */

sft_int_t
sft_s3_client_endpoint(sft_s3_client_t *cl, sft_pool_t *pool)
{
    u_char                  *p, *host, *last;
    size_t                   scheme, hlen, len;
    struct in6_addr          a6;
    struct in_addr           a4;
    curl_version_info_data  *ver;
    char                     name[SFT_S3_HOST_MAX];

    if (cl->endpoint.len > 7
        && sft_strncmp(cl->endpoint.data, "http://", 7) == 0)
    {
        scheme = 7;

    } else if (cl->endpoint.len > 8
               && sft_strncmp(cl->endpoint.data, "https://", 8) == 0)
    {
        scheme = 8;

    } else {
        sft_log_error(SFT_LOG_EMERG, cl->log, 0,
                      "S3 endpoint \"%.*s\" is not http:// or https://",
                      SFT_STR_FMT(&cl->endpoint));
        return SFT_ERROR;
    }

    host = cl->endpoint.data + scheme;
    hlen = cl->endpoint.len - scheme;

    while (hlen && host[hlen - 1] == '/') {
        hlen--;
    }

    if (hlen == 0 || hlen + cl->bucket.len + 1 >= SFT_S3_HOST_MAX
        || memchr(host, '/', hlen) || memchr(host, '@', hlen)
        || (cl->bucket.len == 0 && !cl->path_style)
        || (cl->bucket.len && memchr(cl->bucket.data, '/', cl->bucket.len)))
    {
        sft_log_error(SFT_LOG_EMERG, cl->log, 0,
                      "S3 endpoint \"%.*s\" or bucket \"%.*s\" is invalid",
                      SFT_STR_FMT(&cl->endpoint), SFT_STR_FMT(&cl->bucket));
        return SFT_ERROR;
    }

    len = scheme + cl->bucket.len + 1 + hlen;

    cl->origin.data = sft_pnalloc(pool, len);
    cl->prefix.data = sft_pnalloc(pool, cl->bucket.len + 1);

    if (cl->origin.data == NULL || cl->prefix.data == NULL) {
        return SFT_ERROR;
    }

    p = sft_cpymem(cl->origin.data, cl->endpoint.data, scheme);
    cl->host.data = p;

    if (cl->path_style) {
        p = sft_cpymem(p, host, hlen);
        cl->prefix.len = 0;

        if (cl->bucket.len) {
            cl->prefix.data[0] = '/';
            sft_memcpy(cl->prefix.data + 1, cl->bucket.data, cl->bucket.len);
            cl->prefix.len = cl->bucket.len + 1;
        }

    } else {
        p = sft_cpymem(p, cl->bucket.data, cl->bucket.len);
        *p++ = '.';
        p = sft_cpymem(p, host, hlen);
        cl->prefix.len = 0;
    }

    cl->origin.len = p - cl->origin.data;
    cl->host.len = p - cl->host.data;

    if (cl->ca_file.len) {
        cl->ca_path = sft_pnalloc(pool, cl->ca_file.len + 1);
        if (cl->ca_path == NULL) {
            return SFT_ERROR;
        }

        last = sft_cpymem(cl->ca_path, cl->ca_file.data, cl->ca_file.len);
        *last = '\0';
    }

    if (cl->insecure && scheme == 8) {
        sft_log_error(SFT_LOG_WARN, cl->log, 0,
                      "the TLS certificate of S3 endpoint \"%.*s\" is not "
                      "verified", SFT_STR_FMT(&cl->endpoint));
    }

    /* the host without a port, to tell an address from a name */

    if (host[0] == '[') {
        last = memchr(host, ']', hlen);
        len = last ? (size_t) (last - host - 1) : 0;
        host++;

    } else {
        last = memchr(host, ':', hlen);
        len = last ? (size_t) (last - host) : hlen;
    }

    sft_memcpy(name, host, len);
    name[len] = '\0';

    ver = curl_version_info(CURLVERSION_NOW);

    if (inet_pton(AF_INET, name, &a4) != 1
        && inet_pton(AF_INET6, name, &a6) != 1
        && !(ver->features & CURL_VERSION_ASYNCHDNS))
    {
        sft_log_error(SFT_LOG_WARN, cl->log, 0,
                      "libcurl %s resolves \"%s\" without its asynchronous "
                      "resolver: each resolution blocks the worker; give "
                      "the S3 endpoint as an address", ver->version, name);
    }

    return SFT_OK;
}


/*
 * The wait before attempt "attempts" + 1: the backoff doubled for each
 * attempt made, at most SFT_S3_BACKOFF_MAX, of which the second half is
 * drawn at random, so that the requests a failure hit together (the
 * sessions of a worker, the workers and nodes on one bucket) do not come
 * back together.
 */

sft_msec_t
sft_s3_client_backoff(sft_s3_client_t *cl, sft_uint_t attempts)
{
    sft_msec_t  wait;

    wait = cl->backoff << sft_min(attempts ? attempts - 1 : 0, 16);
    wait = sft_min(wait, SFT_S3_BACKOFF_MAX);

    if (wait < 2) {
        return wait;
    }

    return wait - wait / 2 + randombytes_uniform((uint32_t) (wait / 2 + 1));
}
