/*
 * s3_xml.c -- libFuzzer target for the parsers of S3's XML answers
 * (src/storage/sft_s3_xml.c): each input goes through every parser.
 * Checked: what a parser accepts holds its invariants (keys and upload
 * ids not empty, sizes and times in range, a truncated page has its
 * token, STS keys present, printable and bounded, with an expiry), an
 * Error or ErrorResponse it reports has a code, and nothing reads past
 * the input or leaks (the sanitizers).
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_s3_xml.h>

#include "fuzz_log.h"


int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_log_init(NULL);

    return 0;
}



int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char            *p;
    sft_str_t          id, *prefix;
    sft_uint_t         i;
    sft_int_t          rc;
    sft_pool_t        *pool;
    sft_s3_list_t      list;
    sft_s3_creds_t     creds;
    sft_s3_error_t     err;
    sft_s3_result_t    result;
    sft_s3_object_t   *obj;
    sft_s3_upload_t   *up;
    sft_s3_uploads_t   uploads;

    pool = sft_create_pool(4096, &fuzz_log);
    assert(pool != NULL);

    /* a copy of exactly the input's length, so overreads are caught */

    p = malloc(size ? size : 1);
    assert(p != NULL);
    memcpy(p, data, size);

    rc = sft_s3_xml_error(p, size, pool, &err);
    assert(rc != SFT_OK || err.code.len > 0);

    rc = sft_s3_xml_list(p, size, pool, &list, &err);
    assert(rc != SFT_DECLINED || err.code.len > 0);

    if (rc == SFT_OK) {
        assert(!list.truncated || list.next_token.len > 0);

        obj = list.objects.elts;
        for (i = 0; i < list.objects.nelts; i++) {
            assert(obj[i].key.len > 0);
            assert(obj[i].size >= 0 && obj[i].size <= SFT_S3_OBJECT_MAX);
            assert(obj[i].mtime >= 0);
        }

        prefix = list.prefixes.elts;
        for (i = 0; i < list.prefixes.nelts; i++) {
            assert(prefix[i].len > 0);
        }
    }

    rc = sft_s3_xml_initiate(p, size, pool, &id, &err);
    assert(rc != SFT_OK || id.len > 0);

    rc = sft_s3_xml_uploads(p, size, pool, &uploads, &err);

    if (rc == SFT_OK) {
        assert(!uploads.truncated || uploads.next_key_marker.len > 0);

        up = uploads.uploads.elts;
        for (i = 0; i < uploads.uploads.nelts; i++) {
            assert(up[i].key.len > 0 && up[i].upload_id.len > 0);
            assert(up[i].initiated >= 0);
        }
    }

    rc = sft_s3_xml_result(p, size, pool, &result, &err);
    assert(rc != SFT_OK || (result.etag.len > 0 && result.mtime >= 0));

    rc = sft_s3_xml_sts(p, size, pool, &creds, &err);
    assert(rc != SFT_DECLINED || err.code.len > 0);

    if (rc == SFT_OK) {
        assert(creds.access_key.len > 0 && creds.session_token.len > 0);
        assert(creds.secret_key.len > 0
               && creds.secret_key.len <= SFT_S3_SECRET_MAX);
        assert(creds.expires > 0);
        assert(memchr(creds.session_token.data, '\n',
                      creds.session_token.len) == NULL);
    }

    free(p);
    sft_destroy_pool(pool);

    return 0;
}
