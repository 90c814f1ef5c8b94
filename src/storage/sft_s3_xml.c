/*
 * sft_s3_xml.c -- S3's XML answers read with libxml2: no network, no
 * entity substitution and no document with a DTD at all (S3 never sends
 * one, so the entity bombs and external entities have nowhere to live),
 * a bounded body, element names matched without their namespace; and
 * STS's answer to AssumeRoleWithWebIdentity.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_xml.h>

#include <libxml/parser.h>
#include <libxml/tree.h>


typedef sft_int_t (*sft_s3_xml_handler_pt)(xmlNode *root, sft_pool_t *pool,
    void *out);


static sft_int_t sft_s3_xml_parse(u_char *p, size_t n, sft_pool_t *pool,
    const char *root_name, sft_s3_xml_handler_pt handler, void *out,
    sft_s3_error_t *err);
static sft_int_t sft_s3_xml_error_root(xmlNode *root, sft_pool_t *pool,
    void *out);
static sft_int_t sft_s3_xml_list_root(xmlNode *root, sft_pool_t *pool,
    void *out);
static sft_int_t sft_s3_xml_contents(xmlNode *node, sft_pool_t *pool,
    sft_uint_t url, sft_s3_object_t *obj);
static sft_int_t sft_s3_xml_initiate_root(xmlNode *root, sft_pool_t *pool,
    void *out);
static sft_int_t sft_s3_xml_uploads_root(xmlNode *root, sft_pool_t *pool,
    void *out);
static sft_int_t sft_s3_xml_upload(xmlNode *node, sft_pool_t *pool,
    sft_uint_t url, sft_s3_upload_t *up);
static sft_int_t sft_s3_xml_result_root(xmlNode *root, sft_pool_t *pool,
    void *out);
static sft_int_t sft_s3_xml_sts_root(xmlNode *root, sft_pool_t *pool,
    void *out);
static sft_int_t sft_s3_xml_key_text(xmlNode *node, const char *name,
    sft_pool_t *pool, sft_str_t *s);
static xmlNode *sft_s3_xml_child(xmlNode *node, const char *name);
static xmlNode *sft_s3_xml_error_node(xmlNode *root);
static sft_int_t sft_s3_xml_text(xmlNode *node, sft_pool_t *pool,
    sft_str_t *s);
static sft_int_t sft_s3_xml_child_text(xmlNode *node, const char *name,
    sft_pool_t *pool, sft_str_t *s);
static sft_int_t sft_s3_xml_number(xmlNode *node, sft_pool_t *pool,
    off_t max, off_t *n);
static sft_int_t sft_s3_xml_time(xmlNode *node, sft_pool_t *pool,
    time_t *t);
static sft_int_t sft_s3_xml_flag(xmlNode *node, sft_pool_t *pool,
    sft_uint_t *flag);
static sft_int_t sft_s3_url_decode(sft_str_t *s);


#define sft_s3_xml_is(node, tag)                                              \
    ((node)->type == XML_ELEMENT_NODE                                         \
     && xmlStrcmp((node)->name, (const xmlChar *) (tag)) == 0)

/* a hex digit's value, 16 and up for anything else */
#define sft_s3_hex_value(ch)                                                  \
    (((ch) >= '0' && (ch) <= '9') ? (ch) - '0'                                \
     : (((ch) | 0x20) >= 'a' && ((ch) | 0x20) <= 'f')                         \
       ? ((ch) | 0x20) - 'a' + 10 : 16)

#define SFT_S3_XML_OPTIONS                                                    \
    (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING)


sft_int_t
sft_s3_xml_error(u_char *p, size_t n, sft_pool_t *pool, sft_s3_error_t *err)
{
    return sft_s3_xml_parse(p, n, pool, NULL, sft_s3_xml_error_root, err,
                            NULL);
}


sft_int_t
sft_s3_xml_list(u_char *p, size_t n, sft_pool_t *pool, sft_s3_list_t *list,
    sft_s3_error_t *err)
{
    return sft_s3_xml_parse(p, n, pool, "ListBucketResult",
                            sft_s3_xml_list_root, list, err);
}


sft_int_t
sft_s3_xml_initiate(u_char *p, size_t n, sft_pool_t *pool,
    sft_str_t *upload_id, sft_s3_error_t *err)
{
    return sft_s3_xml_parse(p, n, pool, "InitiateMultipartUploadResult",
                            sft_s3_xml_initiate_root, upload_id, err);
}


sft_int_t
sft_s3_xml_uploads(u_char *p, size_t n, sft_pool_t *pool,
    sft_s3_uploads_t *uploads, sft_s3_error_t *err)
{
    return sft_s3_xml_parse(p, n, pool, "ListMultipartUploadsResult",
                            sft_s3_xml_uploads_root, uploads, err);
}


/* the root's name differs between operations and servers: any but Error */

sft_int_t
sft_s3_xml_result(u_char *p, size_t n, sft_pool_t *pool,
    sft_s3_result_t *result, sft_s3_error_t *err)
{
    return sft_s3_xml_parse(p, n, pool, NULL, sft_s3_xml_result_root,
                            result, err);
}


sft_int_t
sft_s3_xml_sts(u_char *p, size_t n, sft_pool_t *pool, sft_s3_creds_t *creds,
    sft_s3_error_t *err)
{
    return sft_s3_xml_parse(p, n, pool, "AssumeRoleWithWebIdentityResponse",
                            sft_s3_xml_sts_root, creds, err);
}


static sft_int_t
sft_s3_xml_parse(u_char *p, size_t n, sft_pool_t *pool,
    const char *root_name, sft_s3_xml_handler_pt handler, void *out,
    sft_s3_error_t *err)
{
    xmlDoc     *doc;
    xmlNode    *root;
    sft_int_t   rc;

    if (n == 0 || n > SFT_S3_XML_MAX) {
        return SFT_ERROR;
    }

    doc = xmlReadMemory((const char *) p, (int) n, NULL, NULL,
                        SFT_S3_XML_OPTIONS);
    if (doc == NULL) {
        return SFT_ERROR;
    }

    root = xmlDocGetRootElement(doc);

    if (root == NULL || doc->intSubset != NULL || doc->extSubset != NULL) {
        rc = SFT_ERROR;

    } else if (err && sft_s3_xml_error_node(root)) {
        rc = sft_s3_xml_error_root(root, pool, err);
        rc = (rc == SFT_OK) ? SFT_DECLINED : rc;

    } else if (root_name == NULL || sft_s3_xml_is(root, root_name)) {
        rc = handler(root, pool, out);

    } else {
        rc = SFT_ERROR;
    }

    xmlFreeDoc(doc);

    return rc;
}


static sft_int_t
sft_s3_xml_error_root(xmlNode *root, sft_pool_t *pool, void *out)
{
    xmlNode         *node;
    sft_s3_error_t  *err = out;

    sft_memzero(err, sizeof(sft_s3_error_t));

    node = sft_s3_xml_error_node(root);

    if (node == NULL
        || sft_s3_xml_child_text(node, "Code", pool, &err->code) != SFT_OK
        || err->code.len == 0
        || sft_s3_xml_child_text(node, "Message", pool, &err->message)
           != SFT_OK
        || sft_s3_xml_child_text(node, "RequestId", pool, &err->request_id)
           != SFT_OK)
    {
        return SFT_ERROR;
    }

    /* STS keeps the request id beside the <Error>, not in it */

    if (err->request_id.len == 0 && node != root) {
        return sft_s3_xml_child_text(root, "RequestId", pool,
                                     &err->request_id);
    }

    return SFT_OK;
}


/* S3's <Error>, or the <Error> in STS's <ErrorResponse>; NULL for others */

static xmlNode *
sft_s3_xml_error_node(xmlNode *root)
{
    if (sft_s3_xml_is(root, "Error")) {
        return root;
    }

    if (sft_s3_xml_is(root, "ErrorResponse")) {
        return sft_s3_xml_child(root, "Error");
    }

    return NULL;
}


static sft_int_t
sft_s3_xml_list_root(xmlNode *root, sft_pool_t *pool, void *out)
{
    off_t           count;
    xmlNode        *c;
    sft_str_t       enc, *prefix;
    sft_uint_t      url, truncated;
    sft_s3_list_t  *list = out;
    sft_s3_object_t *obj;

    sft_memzero(list, sizeof(sft_s3_list_t));

    if (sft_array_init(&list->objects, pool, 16, sizeof(sft_s3_object_t))
        != SFT_OK
        || sft_array_init(&list->prefixes, pool, 4, sizeof(sft_str_t))
           != SFT_OK
        || sft_s3_xml_child_text(root, "EncodingType", pool, &enc) != SFT_OK)
    {
        return SFT_ERROR;
    }

    url = sft_str_eq(&enc, "url");

    for (c = root->children; c; c = c->next) {

        if (sft_s3_xml_is(c, "Contents")) {
            obj = sft_array_push(&list->objects);
            if (obj == NULL
                || sft_s3_xml_contents(c, pool, url, obj) != SFT_OK)
            {
                return SFT_ERROR;
            }

        } else if (sft_s3_xml_is(c, "CommonPrefixes")) {
            prefix = sft_array_push(&list->prefixes);
            if (prefix == NULL
                || sft_s3_xml_child_text(c, "Prefix", pool, prefix) != SFT_OK
                || prefix->len == 0
                || (url && sft_s3_url_decode(prefix) != SFT_OK))
            {
                return SFT_ERROR;
            }

        } else if (sft_s3_xml_is(c, "IsTruncated")) {
            if (sft_s3_xml_flag(c, pool, &truncated) != SFT_OK) {
                return SFT_ERROR;
            }

            list->truncated = truncated;

        } else if (sft_s3_xml_is(c, "NextContinuationToken")) {
            if (sft_s3_xml_text(c, pool, &list->next_token) != SFT_OK) {
                return SFT_ERROR;
            }

        } else if (sft_s3_xml_is(c, "KeyCount")) {
            if (sft_s3_xml_number(c, pool, 1000000, &count) != SFT_OK) {
                return SFT_ERROR;
            }

            list->key_count = (sft_uint_t) count;
        }
    }

    /* a truncated page without a token would be asked for again forever */

    if (list->truncated && list->next_token.len == 0) {
        return SFT_ERROR;
    }

    return SFT_OK;
}


static sft_int_t
sft_s3_xml_contents(xmlNode *node, sft_pool_t *pool, sft_uint_t url,
    sft_s3_object_t *obj)
{
    xmlNode  *c;

    sft_memzero(obj, sizeof(sft_s3_object_t));
    obj->size = -1;
    obj->mtime = -1;

    for (c = node->children; c; c = c->next) {

        if (sft_s3_xml_is(c, "Key")) {
            if (sft_s3_xml_text(c, pool, &obj->key) != SFT_OK
                || (url && sft_s3_url_decode(&obj->key) != SFT_OK))
            {
                return SFT_ERROR;
            }

        } else if (sft_s3_xml_is(c, "Size")) {
            if (sft_s3_xml_number(c, pool, SFT_S3_OBJECT_MAX, &obj->size)
                != SFT_OK)
            {
                return SFT_ERROR;
            }

        } else if (sft_s3_xml_is(c, "LastModified")) {
            if (sft_s3_xml_time(c, pool, &obj->mtime) != SFT_OK) {
                return SFT_ERROR;
            }

        } else if (sft_s3_xml_is(c, "ETag")) {
            if (sft_s3_xml_text(c, pool, &obj->etag) != SFT_OK) {
                return SFT_ERROR;
            }
        }
    }

    if (obj->key.len == 0 || obj->size < 0 || obj->mtime < 0) {
        return SFT_ERROR;
    }

    return SFT_OK;
}


static sft_int_t
sft_s3_xml_initiate_root(xmlNode *root, sft_pool_t *pool, void *out)
{
    sft_str_t  *upload_id = out;

    if (sft_s3_xml_child_text(root, "UploadId", pool, upload_id) != SFT_OK
        || upload_id->len == 0)
    {
        return SFT_ERROR;
    }

    return SFT_OK;
}


static sft_int_t
sft_s3_xml_uploads_root(xmlNode *root, sft_pool_t *pool, void *out)
{
    xmlNode           *c;
    sft_str_t          enc;
    sft_uint_t         truncated, url;
    sft_s3_upload_t   *up;
    sft_s3_uploads_t  *uploads = out;

    sft_memzero(uploads, sizeof(sft_s3_uploads_t));

    if (sft_array_init(&uploads->uploads, pool, 8, sizeof(sft_s3_upload_t))
        != SFT_OK
        || sft_s3_xml_child_text(root, "EncodingType", pool, &enc) != SFT_OK)
    {
        return SFT_ERROR;
    }

    url = sft_str_eq(&enc, "url");

    for (c = root->children; c; c = c->next) {

        if (sft_s3_xml_is(c, "Upload")) {
            up = sft_array_push(&uploads->uploads);
            if (up == NULL || sft_s3_xml_upload(c, pool, url, up) != SFT_OK)
            {
                return SFT_ERROR;
            }

        } else if (sft_s3_xml_is(c, "IsTruncated")) {
            if (sft_s3_xml_flag(c, pool, &truncated) != SFT_OK) {
                return SFT_ERROR;
            }

            uploads->truncated = truncated;

        } else if (sft_s3_xml_is(c, "NextKeyMarker")) {
            if (sft_s3_xml_text(c, pool, &uploads->next_key_marker)
                != SFT_OK
                || (url && sft_s3_url_decode(&uploads->next_key_marker)
                           != SFT_OK))
            {
                return SFT_ERROR;
            }

        } else if (sft_s3_xml_is(c, "NextUploadIdMarker")) {
            if (sft_s3_xml_text(c, pool, &uploads->next_upload_id_marker)
                != SFT_OK)
            {
                return SFT_ERROR;
            }
        }
    }

    if (uploads->truncated && uploads->next_key_marker.len == 0) {
        return SFT_ERROR;
    }

    return SFT_OK;
}


static sft_int_t
sft_s3_xml_upload(xmlNode *node, sft_pool_t *pool, sft_uint_t url,
    sft_s3_upload_t *up)
{
    xmlNode  *c;

    sft_memzero(up, sizeof(sft_s3_upload_t));
    up->initiated = -1;

    for (c = node->children; c; c = c->next) {

        if (sft_s3_xml_is(c, "Key")) {
            if (sft_s3_xml_text(c, pool, &up->key) != SFT_OK
                || (url && sft_s3_url_decode(&up->key) != SFT_OK))
            {
                return SFT_ERROR;
            }

        } else if (sft_s3_xml_is(c, "UploadId")) {
            if (sft_s3_xml_text(c, pool, &up->upload_id) != SFT_OK) {
                return SFT_ERROR;
            }

        } else if (sft_s3_xml_is(c, "Initiated")) {
            if (sft_s3_xml_time(c, pool, &up->initiated) != SFT_OK) {
                return SFT_ERROR;
            }
        }
    }

    if (up->key.len == 0 || up->upload_id.len == 0 || up->initiated < 0) {
        return SFT_ERROR;
    }

    return SFT_OK;
}


static sft_int_t
sft_s3_xml_result_root(xmlNode *root, sft_pool_t *pool, void *out)
{
    xmlNode          *c;
    sft_uint_t        etag;
    sft_s3_result_t  *result = out;

    sft_memzero(result, sizeof(sft_s3_result_t));

    etag = 0;

    for (c = root->children; c; c = c->next) {

        if (sft_s3_xml_is(c, "ETag")) {
            if (sft_s3_xml_text(c, pool, &result->etag) != SFT_OK) {
                return SFT_ERROR;
            }

            etag = 1;

        } else if (sft_s3_xml_is(c, "LastModified")) {
            if (sft_s3_xml_time(c, pool, &result->mtime) != SFT_OK) {
                return SFT_ERROR;
            }
        }
    }

    return etag ? SFT_OK : SFT_ERROR;
}


/*
 * <AssumeRoleWithWebIdentityResult><Credentials>: the four of them, the
 * keys and token printable ASCII, as they go into headers and the signing
 * key; an Expiration at the epoch would read as keys that never expire.
 */

static sft_int_t
sft_s3_xml_sts_root(xmlNode *root, sft_pool_t *pool, void *out)
{
    xmlNode         *node, *expiration;
    sft_s3_creds_t  *creds = out;

    sft_memzero(creds, sizeof(sft_s3_creds_t));

    node = sft_s3_xml_child(root, "AssumeRoleWithWebIdentityResult");
    node = node ? sft_s3_xml_child(node, "Credentials") : NULL;
    expiration = node ? sft_s3_xml_child(node, "Expiration") : NULL;

    if (expiration == NULL
        || sft_s3_xml_time(expiration, pool, &creds->expires) != SFT_OK
        || creds->expires == 0
        || sft_s3_xml_key_text(node, "AccessKeyId", pool, &creds->access_key)
           != SFT_OK
        || sft_s3_xml_key_text(node, "SecretAccessKey", pool,
                               &creds->secret_key) != SFT_OK
        || sft_s3_xml_key_text(node, "SessionToken", pool,
                               &creds->session_token) != SFT_OK
        || creds->secret_key.len > SFT_S3_SECRET_MAX)
    {
        return SFT_ERROR;
    }

    return SFT_OK;
}


static sft_int_t
sft_s3_xml_key_text(xmlNode *node, const char *name, sft_pool_t *pool,
    sft_str_t *s)
{
    size_t  i;

    if (sft_s3_xml_child_text(node, name, pool, s) != SFT_OK || s->len == 0) {
        return SFT_ERROR;
    }

    for (i = 0; i < s->len; i++) {
        if (s->data[i] <= ' ' || s->data[i] >= 0x7f) {
            return SFT_ERROR;
        }
    }

    return SFT_OK;
}


/*
 * The element's text: its text and CDATA children, copied into the pool;
 * anything else inside (an element, an entity reference) is refused.
 */

static sft_int_t
sft_s3_xml_text(xmlNode *node, sft_pool_t *pool, sft_str_t *s)
{
    u_char   *p;
    size_t    len;
    xmlNode  *c;

    len = 0;

    for (c = node->children; c; c = c->next) {
        if (c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE) {
            return SFT_ERROR;
        }

        len += xmlStrlen(c->content);
    }

    s->len = len;
    s->data = sft_pnalloc(pool, len + 1);
    if (s->data == NULL) {
        return SFT_ERROR;
    }

    p = s->data;

    for (c = node->children; c; c = c->next) {
        p = sft_cpymem(p, c->content, xmlStrlen(c->content));
    }

    *p = '\0';

    return SFT_OK;
}


/* the first child element of that name, empty when there is none */

static sft_int_t
sft_s3_xml_child_text(xmlNode *node, const char *name, sft_pool_t *pool,
    sft_str_t *s)
{
    xmlNode  *c;

    c = sft_s3_xml_child(node, name);
    if (c) {
        return sft_s3_xml_text(c, pool, s);
    }

    s->len = 0;
    s->data = (u_char *) "";

    return SFT_OK;
}


static xmlNode *
sft_s3_xml_child(xmlNode *node, const char *name)
{
    xmlNode  *c;

    for (c = node->children; c; c = c->next) {
        if (sft_s3_xml_is(c, name)) {
            return c;
        }
    }

    return NULL;
}


static sft_int_t
sft_s3_xml_number(xmlNode *node, sft_pool_t *pool, off_t max, off_t *n)
{
    u_char     *p, *end;
    off_t       v;
    sft_str_t   s;

    if (sft_s3_xml_text(node, pool, &s) != SFT_OK || s.len == 0) {
        return SFT_ERROR;
    }

    v = 0;
    end = s.data + s.len;

    for (p = s.data; p < end; p++) {
        if (*p < '0' || *p > '9' || v > (max - (*p - '0')) / 10) {
            return SFT_ERROR;
        }

        v = v * 10 + (*p - '0');
    }

    *n = v;

    return SFT_OK;
}


static sft_int_t
sft_s3_xml_time(xmlNode *node, sft_pool_t *pool, time_t *t)
{
    sft_str_t  s;

    if (sft_s3_xml_text(node, pool, &s) != SFT_OK) {
        return SFT_ERROR;
    }

    *t = sft_s3_parse_time(s.data, s.len);

    return (*t < 0) ? SFT_ERROR : SFT_OK;
}


static sft_int_t
sft_s3_xml_flag(xmlNode *node, sft_pool_t *pool, sft_uint_t *flag)
{
    sft_str_t  s;

    if (sft_s3_xml_text(node, pool, &s) != SFT_OK) {
        return SFT_ERROR;
    }

    if (sft_str_eq(&s, "true")) {
        *flag = 1;
        return SFT_OK;
    }

    if (sft_str_eq(&s, "false")) {
        *flag = 0;
        return SFT_OK;
    }

    return SFT_ERROR;
}


/*
 * YYYY-MM-DDTHH:MM:SS[.fraction]Z, counted from the civil date directly
 * (no mktime: neither the time zone nor the locale has a say).
 */

time_t
sft_s3_parse_time(u_char *p, size_t n)
{
    int        i, v[6];
    long long  y, m, era, yoe, doy, doe, days;
    size_t     k;
    static const char  *shape = "dddd-dd-ddTdd:dd:dd";

    if (n < 20) {
        return -1;
    }

    for (k = 0; k < 19; k++) {
        if (shape[k] == 'd' ? (p[k] < '0' || p[k] > '9') : p[k] != shape[k]) {
            return -1;
        }
    }

    k = 19;

    if (p[k] == '.') {
        for (k++; k < n && p[k] >= '0' && p[k] <= '9'; k++) { /* void */ }
    }

    if (k != n - 1 || p[k] != 'Z') {
        return -1;
    }

    v[0] = (p[0] - '0') * 1000 + (p[1] - '0') * 100 + (p[2] - '0') * 10
           + (p[3] - '0');

    for (i = 1; i < 6; i++) {
        v[i] = (p[2 + 3 * i] - '0') * 10 + (p[3 + 3 * i] - '0');
    }

    if (v[0] < 1970 || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31
        || v[3] > 23 || v[4] > 59 || v[5] > 60)
    {
        return -1;
    }

    /* days from 1970-01-01 (H. Hinnant's days_from_civil) */

    y = v[0] - (v[1] <= 2);
    m = v[1];
    era = y / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + v[2] - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    days = era * 146097 + doe - 719468;

    return (time_t) (days * 86400 + v[3] * 3600 + v[4] * 60 + v[5]);
}


/* "+" for a space and %XX, in place; a bad escape is refused */

static sft_int_t
sft_s3_url_decode(sft_str_t *s)
{
    u_char  *p, *q, *end, hi, lo;

    p = s->data;
    q = s->data;
    end = s->data + s->len;

    while (p < end) {
        if (*p == '+') {
            *q++ = ' ';
            p++;
            continue;
        }

        if (*p != '%') {
            *q++ = *p++;
            continue;
        }

        if (end - p < 3) {
            return SFT_ERROR;
        }

        hi = sft_s3_hex_value(p[1]);
        lo = sft_s3_hex_value(p[2]);

        if (hi > 15 || lo > 15) {
            return SFT_ERROR;
        }

        *q++ = (u_char) ((hi << 4) | lo);
        p += 3;
    }

    s->len = q - s->data;

    return (s->len == 0) ? SFT_ERROR : SFT_OK;
}


/*
 * An HTTP date, "Tue, 01 Dec 2026 21:48:29 GMT" (RFC 7231's IMF-fixdate),
 * rewritten as ISO 8601 for the parser above; 0 if it is not one.
 */

time_t
sft_s3_parse_http_time(u_char *p, size_t n)
{
    time_t       t;
    sft_uint_t   m;
    u_char       iso[20];
    static const char  *months = "JanFebMarAprMayJunJulAugSepOctNovDec";

    if (n != 29 || p[3] != ',' || sft_strncmp(p + 25, " GMT", 4) != 0) {
        return 0;
    }

    for (m = 0; m < 12; m++) {
        if (sft_strncmp(p + 8, months + 3 * m, 3) == 0) {
            break;
        }
    }

    if (m == 12) {
        return 0;
    }

    /* "dd Mon yyyy hh:mm:ss" at p + 5 */

    sft_memcpy(iso, p + 12, 4);
    iso[4] = '-';
    iso[5] = (u_char) ('0' + (m + 1) / 10);
    iso[6] = (u_char) ('0' + (m + 1) % 10);
    iso[7] = '-';
    sft_memcpy(iso + 8, p + 5, 2);
    iso[10] = 'T';
    sft_memcpy(iso + 11, p + 17, 8);
    iso[19] = 'Z';

    t = sft_s3_parse_time(iso, 20);

    return t == -1 ? 0 : t;
}
