/*
 * sft_s3_confine.c -- the files an S3 storage's workers read beneath
 * Landlock, declared while the configuration is read: the C library's
 * resolver files (libcurl resolves an endpoint's host name in the
 * worker), and for an https:// endpoint whose certificate is verified
 * the certificate authorities: the storage's s3_ca_file, else libcurl's
 * and OpenSSL's default file and directory (with the SSL_CERT_FILE and
 * SSL_CERT_DIR overrides), a hashed directory with the directories its
 * links lead to; with web identity credentials, the token file each
 * refresh reads again, and the authorities when the STS endpoint is
 * https:// too.  Read only, nothing more; the credentials file is read
 * by the master, the instance metadata service by address.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_landlock.h>
#include <sft_s3_storage.h>

#include <dirent.h>
#include <openssl/x509.h>


/* what glibc's getaddrinfo() reads; a machine may lack the last ones */

static const char  *sft_s3_confine_resolver[] = {
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
};


static sft_int_t sft_s3_confine_ca(sft_cycle_t *cycle, const char *list,
    sft_uint_t dir);
static sft_int_t sft_s3_confine_links(sft_cycle_t *cycle, const char *dir);
static sft_int_t sft_s3_confine_path(sft_cycle_t *cycle, const char *path,
    size_t len);


sft_int_t
sft_s3_confine(sft_cycle_t *cycle, sft_s3_storage_conf_t *scf)
{
    sft_uint_t               i, https;
    const char              *env;
    sft_s3_client_t         *cl;
    curl_version_info_data  *ver;

    cl = &scf->client;

    for (i = 0; i < sft_nelems(sft_s3_confine_resolver); i++) {
        if (sft_s3_confine_path(cycle, sft_s3_confine_resolver[i],
                                strlen(sft_s3_confine_resolver[i]))
            != SFT_OK)
        {
            return SFT_ERROR;
        }
    }

    https = cl->endpoint.len >= 8
            && sft_strncmp(cl->endpoint.data, "https://", 8) == 0;

    if (scf->creds_from == SFT_S3_CREDS_WEB) {
        if (sft_landlock_allow(cycle, &scf->sts.token_file,
                               SFT_LANDLOCK_READ)
            != SFT_OK)
        {
            return SFT_ERROR;
        }

        /* no endpoint: STS's own, https:// */

        https |= scf->sts.endpoint.len == 0
                 || (scf->sts.endpoint.len >= 8
                     && sft_strncmp(scf->sts.endpoint.data, "https://", 8)
                        == 0);
    }

    if (cl->insecure || !https) {
        return SFT_OK;
    }

    /* the storage's own: a notice if it is missing */

    if (cl->ca_file.len) {
        return sft_landlock_allow(cycle, &cl->ca_file, SFT_LANDLOCK_READ);
    }

    ver = curl_version_info(CURLVERSION_NOW);

    if (ver->age >= CURLVERSION_SEVENTH
        && (sft_s3_confine_ca(cycle, ver->cainfo, 0) != SFT_OK
            || sft_s3_confine_ca(cycle, ver->capath, 1) != SFT_OK))
    {
        return SFT_ERROR;
    }

    env = getenv(X509_get_default_cert_file_env());

    if (sft_s3_confine_ca(cycle, env ? env : X509_get_default_cert_file(), 0)
        != SFT_OK)
    {
        return SFT_ERROR;
    }

    env = getenv(X509_get_default_cert_dir_env());

    return sft_s3_confine_ca(cycle, env ? env : X509_get_default_cert_dir(),
                             1);
}


/* a file, or a list of directories separated by ':' as OpenSSL takes it */

static sft_int_t
sft_s3_confine_ca(sft_cycle_t *cycle, const char *list, sft_uint_t dir)
{
    size_t       len;
    const char  *p, *end;
    char         name[PATH_MAX];

    if (list == NULL) {
        return SFT_OK;
    }

    for (p = list; *p; p = *end ? end + 1 : end) {
        end = dir ? strchrnul(p, ':') : p + strlen(p);
        len = end - p;

        if (len == 0) {
            continue;
        }

        if (sft_s3_confine_path(cycle, p, len) != SFT_OK) {
            return SFT_ERROR;
        }

        if (dir && len < PATH_MAX) {
            *sft_cpymem(name, p, len) = '\0';

            if (sft_s3_confine_links(cycle, name) != SFT_OK) {
                return SFT_ERROR;
            }
        }
    }

    return SFT_OK;
}


/*
 * A hashed directory's entries are links to the certificates elsewhere
 * (/etc/ssl/certs to /usr/share/ca-certificates/mozilla): Landlock looks
 * at where a link leads, so those directories are declared too.
 */

static sft_int_t
sft_s3_confine_links(sft_cycle_t *cycle, const char *dir)
{
    DIR            *d;
    char           *slash;
    struct dirent  *de;
    char            name[PATH_MAX], real[PATH_MAX];

    d = opendir(dir);
    if (d == NULL) {
        return SFT_OK;
    }

    while ((de = readdir(d)) != NULL) {
        if (de->d_type != DT_LNK
            || snprintf(name, sizeof(name), "%s/%s", dir, de->d_name)
               >= (int) sizeof(name)
            || realpath(name, real) == NULL)
        {
            continue;
        }

        slash = strrchr(real, '/');

        if (slash == NULL || slash == real) {
            continue;
        }

        if (sft_s3_confine_path(cycle, real, slash - real) != SFT_OK) {
            closedir(d);
            return SFT_ERROR;
        }
    }

    closedir(d);

    return SFT_OK;
}


static sft_int_t
sft_s3_confine_path(sft_cycle_t *cycle, const char *path, size_t len)
{
    sft_str_t  s;

    s.data = (u_char *) path;
    s.len = len;

    return sft_landlock_allow(cycle, &s,
                              SFT_LANDLOCK_READ|SFT_LANDLOCK_OPTIONAL);
}
