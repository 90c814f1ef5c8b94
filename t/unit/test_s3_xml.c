/*
 * test_s3_xml.c -- S3's XML answers: bodies moto 5.2.1 really sent
 * (captured with boto3) parsed into their structures, the 200-with-Error
 * body of a failed CompleteMultipartUpload, and malformed or hostile
 * bodies refused (too long, not well formed, a DTD with entities, an
 * external entity, out-of-range numbers and times); STS's answer to
 * AssumeRoleWithWebIdentity and its <ErrorResponse>, as moto sent them,
 * and keys that could not go into a header refused.
 */

#include <sft_config.h>
#include <sft_core.h>
#include "sft_tap.h"

#include <sft_s3_xml.h>


static const char  moto_error[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<Error><Code>NoSuchKey</Code><Message>The specified key does not exi"
    "st.</Message><Key>nokey</Key><RequestId>xvcGSSyBIxmrpfOg5CWE4eom8A5a"
    "YfSpefhiWio3RRUaJ8SnEvr9</RequestId><HostId>9Gjjt1m+cjU4OPvX9O9/8Ruv"
    "nG41MRb/18Oux2o5H5MY7ISNTlXN+Dz9IG62/ILVxhAGI0qyPfg=</HostId></Error"
    ">";

static const char  moto_list_page[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<IsTruncated>true</IsTruncated><Contents><Key>a.txt</Key><LastModifi"
    "ed>2026-12-01T18:52:47.000Z</LastModified><ETag>\"5d41402abc4b2a76b9"
    "719d911017c592\"</ETag><ChecksumAlgorithm>CRC32</ChecksumAlgorithm><"
    "Size>5</Size><StorageClass>STANDARD</StorageClass></Contents><Name>b"
    "kt</Name><Prefix/><Delimiter>/</Delimiter><MaxKeys>2</MaxKeys><Commo"
    "nPrefixes><Prefix>dir/</Prefix></CommonPrefixes><EncodingType>url</E"
    "ncodingType><KeyCount>2</KeyCount><NextContinuationToken>a31e441cb38"
    "88c8dce1048fb6270e086</NextContinuationToken></ListBucketResult>";

static const char  moto_list_last[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<IsTruncated>false</IsTruncated><Contents><Key>a.txt</Key><LastModif"
    "ied>2026-12-01T18:52:47.000Z</LastModified><ETag>\"5d41402abc4b2a76b"
    "9719d911017c592\"</ETag><ChecksumAlgorithm>CRC32</ChecksumAlgorithm>"
    "<Size>5</Size><StorageClass>STANDARD</StorageClass></Contents><Conte"
    "nts><Key>z%26%3C%3E.txt</Key><LastModified>2026-12-01T18:52:47.000Z<"
    "/LastModified><ETag>\"5d41402abc4b2a76b9719d911017c592\"</ETag><Chec"
    "ksumAlgorithm>CRC32</ChecksumAlgorithm><Size>5</Size><StorageClass>S"
    "TANDARD</StorageClass></Contents><Name>bkt</Name><Prefix/><Delimiter"
    ">/</Delimiter><MaxKeys>1000</MaxKeys><CommonPrefixes><Prefix>dir/</P"
    "refix></CommonPrefixes><EncodingType>url</EncodingType><KeyCount>3</"
    "KeyCount></ListBucketResult>";

static const char  moto_initiate[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2"
    "006-03-01/\"><Bucket>bkt</Bucket><Key>big</Key><UploadId>OLxbjdQz5XO"
    "1zAaTh3D5zxcDEitSiQzlDgmXketdYBOqplvXVRkqw</UploadId></InitiateMulti"
    "partUploadResult>";

static const char  moto_uploads[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<ListMultipartUploadsResult xmlns=\"http://s3.amazonaws.com/doc/2006"
    "-03-01/\"><Bucket>bkt</Bucket><KeyMarker/><UploadIdMarker/><MaxUploa"
    "ds>1000</MaxUploads><IsTruncated>false</IsTruncated><Upload><UploadI"
    "d>OLxbjdQz5XO1zAaTh3D5zxcDEitSiQzlDgmXketdYBOqplvXVRkqw</UploadId><K"
    "ey>big</Key><Initiated>2010-11-10T20:48:33.000Z</Initiated><StorageC"
    "lass>STANDARD</StorageClass><Owner><DisplayName>webfile</DisplayName"
    "><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06"
    "a</ID></Owner><Initiator><ID>arn:aws:iam::123456789012:user/user1-11"
    "111a31-17b5-4fb7-9df5-b111111f13de</ID><DisplayName>user1-11111a31-1"
    "7b5-4fb7-9df5-b111111f13de</DisplayName></Initiator></Upload><Upload"
    "><UploadId>fYIcBRo4slY9l5aeiM5QCPcVVaRky23Cv9QwJmGRKvjCJ9qP4N0j1gBtw"
    "</UploadId><Key>big2</Key><Initiated>2010-11-10T20:48:33.000Z</Initi"
    "ated><StorageClass>STANDARD</StorageClass><Owner><DisplayName>webfil"
    "e</DisplayName><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078ef"
    "c7c6caea54ba06a</ID></Owner><Initiator><ID>arn:aws:iam::123456789012"
    ":user/user1-11111a31-17b5-4fb7-9df5-b111111f13de</ID><DisplayName>us"
    "er1-11111a31-17b5-4fb7-9df5-b111111f13de</DisplayName></Initiator></"
    "Upload></ListMultipartUploadsResult>";

static const char  moto_complete[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<CompleteMultipartUploadResponse xmlns=\"http://s3.amazonaws.com/doc"
    "/2006-03-01/\"><Location>http://bkt.s3.amazonaws.com/big</Location><"
    "Bucket>bkt</Bucket><Key>big</Key><ETag>\"bfdfcf139a14be381f52a471f72"
    "39743-2\"</ETag></CompleteMultipartUploadResponse>";

static const char  rgw_complete[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><CompleteMultipartUploadRe"
    "sult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>http"
    "://127.0.0.1:48227/files/k</Location><Bucket>files</Bucket><Key>k</Ke"
    "y><ETag></ETag></CompleteMultipartUploadResult>";

static const char  no_etag[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><CopyPartResult><LastModifi"
    "ed>2026-12-01T12:00:00.000Z</LastModified></CopyPartResult>";

static const char  moto_copy_part[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<CopyPartResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><E"
    "Tag>\"5d41402abc4b2a76b9719d911017c592\"</ETag><LastModified>2026-12"
    "-01T18:52:48.000Z</LastModified></CopyPartResult>";

static const char  moto_copy_object[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<CopyObjectResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<ETag>\"5d41402abc4b2a76b9719d911017c592\"</ETag><LastModified>2026-"
    "12-01T18:52:49.000Z</LastModified><ChecksumCRC32>NhCmhg==</ChecksumC"
    "RC32></CopyObjectResult>";

static const char  complete_error[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<Error><Code>InternalError</Code><Message>We encountered an internal "
    "error. Please try again.</Message><RequestId>656c76696e6727732072657"
    "1</RequestId><HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtR"
    "PfTaOFg==</HostId></Error>";

static const char  entity_bomb[] =
    "<?xml version=\"1.0\"?>\n"
    "<!DOCTYPE lolz [<!ENTITY lol \"lol\">"
    "<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
    "<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">]>"
    "<Error><Code>&lol3;</Code></Error>";

static const char  external_entity[] =
    "<?xml version=\"1.0\"?>\n"
    "<!DOCTYPE r [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>"
    "<InitiateMultipartUploadResult><UploadId>&xxe;</UploadId>"
    "</InitiateMultipartUploadResult>";

static const char  big_size[] =
    "<ListBucketResult><Contents><Key>k</Key>"
    "<LastModified>2026-12-01T18:52:47Z</LastModified>"
    "<Size>99999999999999999999</Size></Contents></ListBucketResult>";

static const char  negative_size[] =
    "<ListBucketResult><Contents><Key>k</Key>"
    "<LastModified>2026-12-01T18:52:47Z</LastModified>"
    "<Size>-1</Size></Contents></ListBucketResult>";

static const char  bad_time[] =
    "<ListBucketResult><Contents><Key>k</Key>"
    "<LastModified>2026-13-01T18:52:47Z</LastModified>"
    "<Size>1</Size></Contents></ListBucketResult>";

static const char  truncated_no_token[] =
    "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>";

static const char  nested_key[] =
    "<ListBucketResult><Contents><Key>a<b/>c</Key>"
    "<LastModified>2026-12-01T18:52:47Z</LastModified>"
    "<Size>1</Size></Contents></ListBucketResult>";

static const char  uploads_page[] =
    "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated>"
    "<NextKeyMarker>big</NextKeyMarker>"
    "<NextUploadIdMarker>u1</NextUploadIdMarker>"
    "<Upload><Key>big</Key><UploadId>u1</UploadId>"
    "<Initiated>2000-02-29T00:00:00.5Z</Initiated></Upload>"
    "</ListMultipartUploadsResult>";

static const char  uploads_url[] =
    "<ListMultipartUploadsResult><EncodingType>url</EncodingType>"
    "<IsTruncated>true</IsTruncated>"
    "<NextKeyMarker>dir/a%20b%2Bc</NextKeyMarker>"
    "<NextUploadIdMarker>u2</NextUploadIdMarker>"
    "<Upload><Key>dir/a%20b%2Bc</Key><UploadId>u2</UploadId>"
    "<Initiated>2026-12-01T18:52:47.000Z</Initiated></Upload>"
    "</ListMultipartUploadsResult>";

static const char  uploads_bad_url[] =
    "<ListMultipartUploadsResult><EncodingType>url</EncodingType>"
    "<Upload><Key>a%2</Key><UploadId>u3</UploadId>"
    "<Initiated>2026-12-01T18:52:47.000Z</Initiated></Upload>"
    "</ListMultipartUploadsResult>";


static const char  moto_sts[] =
    "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/d"
    "oc/2011-06-15/\"><AssumeRoleWithWebIdentityResult><Credentials><Acces"
    "sKeyId>ASIARZPUZDIKLHUNYD2X</AccessKeyId><SecretAccessKey>mHt+yowS4rP"
    "W8mmIyRuT/ooIF3rIonFS4e61rQmm</SecretAccessKey><SessionToken>FQoGZXIv"
    "YXdzEBYaD2e6fhe66xjxWbuVM3uebblvAj8egn07xCJ7QZ6ppkImvsrr75JBXXZRDnn4X"
    "c2YD9EViTIGlNh8Kk2MQNIkgTGJXpYnGmyKhk121dlvuoD5PKCLpZrL/b4K0YDETzdt6k"
    "XX6mgNnSXf+h6Rpte1LzJCaqKq+C6WBzudfFc8XytpQpHXuBylz9liGB7YC3qn9QAjzkr"
    "Te8KSZHVgIUg678HtvBcWcFI9K6kzzOPyOIen0HCdwxamikz1MgdeCiTo9yHTJe2Msz8I"
    "gFL+nAO3mBlNj/K2eV2gyrYt+okbLzH516e7OtQCA/fJ7XUxq2nVrp7Wd+vXEQFIPf4Ch"
    "I0=</SessionToken><Expiration>2026-12-01T22:03:56.830586Z</Expiration"
    "></Credentials><AssumedRoleUser><AssumedRoleId>ARO123EXAMPLE123:siftp"
    "</AssumedRoleId><Arn>arn:aws:sts::123456789012:assumed-role/r/siftp</"
    "Arn></AssumedRoleUser><PackedPolicySize>6</PackedPolicySize></AssumeR"
    "oleWithWebIdentityResult><ResponseMetadata><RequestId>hM57IRavi6gsJ8A"
    "Sgcv3epHLFnHDzRvU6PEcgEPLUw3tWryxylX0</RequestId></ResponseMetadata><"
    "/AssumeRoleWithWebIdentityResponse>";

static const char  moto_sts_error[] =
    "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><E"
    "rror><Type>Sender</Type><Code>ValidationError</Code><Message>1 valida"
    "tion error detected</Message></Error><RequestId>Q7Zbped5DZVNS1EpY9zCJ"
    "eUILogdZhxYRTYe1Rvqpa8KLFhap2zy</RequestId></ErrorResponse>";

static const char  sts_no_expiration[] =
    "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult>"
    "<Credentials><AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>s</Secr"
    "etAccessKey><SessionToken>t</SessionToken></Credentials></AssumeRoleW"
    "ithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";

static const char  sts_line_break[] =
    "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult>"
    "<Credentials><AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>s</Secr"
    "etAccessKey><SessionToken>t&#13;&#10;X-Evil: 1</SessionToken><Expirat"
    "ion>2026-12-01T22:03:56Z</Expiration></Credentials></AssumeRoleWithWe"
    "bIdentityResult></AssumeRoleWithWebIdentityResponse>";

static const char  sts_error_no_code[] =
    "<ErrorResponse><Error><Message>m</Message></Error></ErrorResponse>";


#define XML(s)  (u_char *) (s), sizeof(s) - 1


static sft_uint_t
eq(sft_str_t *s, const char *text)
{
    return s->len == strlen(text) && memcmp(s->data, text, s->len) == 0;
}


int
main(void)
{
    u_char            *big;
    time_t             t;
    sft_str_t          id, *prefix;
    sft_log_t         *log;
    sft_pool_t        *pool;
    sft_s3_list_t      list;
    sft_s3_creds_t     creds;
    sft_s3_error_t     err;
    sft_s3_result_t    result;
    sft_s3_object_t   *obj;
    sft_s3_upload_t   *up;
    sft_s3_uploads_t   uploads;

    printf("1..36\n");

    log = sft_log_init();
    pool = sft_create_pool(16384, log);

    /* real answers */

    ok(sft_s3_xml_error(XML(moto_error), pool, &err) == SFT_OK
       && eq(&err.code, "NoSuchKey")
       && eq(&err.message, "The specified key does not exist.")
       && eq(&err.request_id,
             "xvcGSSyBIxmrpfOg5CWE4eom8A5aYfSpefhiWio3RRUaJ8SnEvr9"),
       "Error: code, message and request id");

    obj = NULL;
    prefix = NULL;

    ok(sft_s3_xml_list(XML(moto_list_page), pool, &list, &err) == SFT_OK
       && list.truncated && list.key_count == 2
       && eq(&list.next_token, "a31e441cb3888c8dce1048fb6270e086")
       && list.objects.nelts == 1 && list.prefixes.nelts == 1
       && (obj = list.objects.elts) != NULL
       && (prefix = list.prefixes.elts) != NULL,
       "ListObjectsV2 page: truncated, token, key count, one of each");

    ok(obj && eq(&obj->key, "a.txt") && obj->size == 5
       && obj->mtime == 1796151167
       && eq(&obj->etag, "\"5d41402abc4b2a76b9719d911017c592\"")
       && prefix && eq(prefix, "dir/"),
       "ListObjectsV2 page: key, size, time in UTC, ETag, prefix");

    ok(sft_s3_xml_list(XML(moto_list_last), pool, &list, &err) == SFT_OK
       && !list.truncated && list.next_token.len == 0
       && list.objects.nelts == 2 && list.key_count == 3,
       "ListObjectsV2 last page");

    obj = list.objects.elts;
    ok(list.objects.nelts == 2 && eq(&obj[1].key, "z&<>.txt"),
       "EncodingType url: keys decoded");

    ok(sft_s3_xml_initiate(XML(moto_initiate), pool, &id, &err) == SFT_OK
       && eq(&id, "OLxbjdQz5XO1zAaTh3D5zxcDEitSiQzlDgmXketdYBOqplvXVRkqw"),
       "InitiateMultipartUploadResult: the upload id");

    up = NULL;
    ok(sft_s3_xml_uploads(XML(moto_uploads), pool, &uploads, &err) == SFT_OK
       && !uploads.truncated && uploads.uploads.nelts == 2
       && (up = uploads.uploads.elts) != NULL
       && eq(&up[1].key, "big2") && up[1].initiated == 1289422113
       && eq(&up[1].upload_id,
             "fYIcBRo4slY9l5aeiM5QCPcVVaRky23Cv9QwJmGRKvjCJ9qP4N0j1gBtw"),
       "ListMultipartUploadsResult: key, upload id, initiated");

    up = NULL;
    ok(sft_s3_xml_uploads(XML(uploads_page), pool, &uploads, &err) == SFT_OK
       && uploads.truncated && eq(&uploads.next_key_marker, "big")
       && eq(&uploads.next_upload_id_marker, "u1")
       && (up = uploads.uploads.elts) != NULL
       && up->initiated == 951782400,
       "ListMultipartUploadsResult paging markers; a leap day");

    up = NULL;
    ok(sft_s3_xml_uploads(XML(uploads_url), pool, &uploads, &err) == SFT_OK
       && eq(&uploads.next_key_marker, "dir/a b+c")
       && (up = uploads.uploads.elts) != NULL && eq(&up->key, "dir/a b+c"),
       "ListMultipartUploadsResult, EncodingType url: keys decoded");

    ok(sft_s3_xml_uploads(XML(uploads_bad_url), pool, &uploads, &err)
       == SFT_ERROR,
       "ListMultipartUploadsResult: a bad escape in a key refused");

    ok(sft_s3_xml_result(XML(moto_complete), pool, &result, &err) == SFT_OK
       && eq(&result.etag, "\"bfdfcf139a14be381f52a471f7239743-2\"")
       && result.mtime == 0,
       "CompleteMultipartUpload: the ETag");

    ok(sft_s3_xml_result(XML(rgw_complete), pool, &result, &err) == SFT_OK
       && result.etag.len == 0,
       "CompleteMultipartUpload of Ceph RGW 16: an empty ETag taken");

    ok(sft_s3_xml_result(XML(no_etag), pool, &result, &err) == SFT_ERROR,
       "a result without an ETag refused");

    ok(sft_s3_xml_result(XML(moto_copy_part), pool, &result, &err) == SFT_OK
       && eq(&result.etag, "\"5d41402abc4b2a76b9719d911017c592\"")
       && result.mtime == 1796151168,
       "CopyPartResult: ETag and LastModified");

    ok(sft_s3_xml_result(XML(moto_copy_object), pool, &result, &err)
       == SFT_OK && result.mtime == 1796151169,
       "CopyObjectResult: ETag and LastModified");

    ok(sft_s3_xml_result(XML(complete_error), pool, &result, &err)
       == SFT_DECLINED && eq(&err.code, "InternalError"),
       "a 200 answer with an Error body is an error");

    ok(sft_s3_xml_list(XML(moto_error), pool, &list, &err) == SFT_DECLINED
       && eq(&err.code, "NoSuchKey"),
       "an Error body where a listing was expected");

    /* refused */

    ok(sft_s3_xml_error(XML(entity_bomb), pool, &err) == SFT_ERROR,
       "a DTD with entities is refused");

    ok(sft_s3_xml_initiate(XML(external_entity), pool, &id, &err)
       == SFT_ERROR, "an external entity is refused");

    ok(sft_s3_xml_list((u_char *) moto_list_page,
                       sizeof(moto_list_page) - 20, pool, &list, &err)
       == SFT_ERROR,
       "a cut body is refused");

    ok(sft_s3_xml_initiate(XML(moto_list_page), pool, &id, &err)
       == SFT_ERROR, "another answer's root is refused");

    ok(sft_s3_xml_list(XML(big_size), pool, &list, &err) == SFT_ERROR
       && sft_s3_xml_list(XML(negative_size), pool, &list, &err)
          == SFT_ERROR,
       "a size out of range is refused");

    ok(sft_s3_xml_list(XML(bad_time), pool, &list, &err) == SFT_ERROR,
       "a month 13 is refused");

    ok(sft_s3_xml_list(XML(truncated_no_token), pool, &list, &err)
       == SFT_ERROR, "a truncated listing without a token is refused");

    ok(sft_s3_xml_list(XML(nested_key), pool, &list, &err) == SFT_ERROR,
       "an element inside a key is refused");

    /* STS */

    ok(sft_s3_xml_sts(XML(moto_sts), pool, &creds, &err) == SFT_OK
       && eq(&creds.access_key, "ASIARZPUZDIKLHUNYD2X")
       && eq(&creds.secret_key, "mHt+yowS4rPW8mmIyRuT/ooIF3rIonFS4e61rQmm")
       && creds.session_token.len == 356
       && memcmp(creds.session_token.data, "FQoGZXIvYXdz", 12) == 0
       && creds.expires == 1796162636,
       "AssumeRoleWithWebIdentity: keys, token, expiry in UTC");

    ok(sft_s3_xml_sts(XML(moto_sts_error), pool, &creds, &err)
       == SFT_DECLINED
       && eq(&err.code, "ValidationError")
       && eq(&err.message, "1 validation error detected")
       && eq(&err.request_id,
             "Q7Zbped5DZVNS1EpY9zCJeUILogdZhxYRTYe1Rvqpa8KLFhap2zy"),
       "STS ErrorResponse: code, message, the request id beside them");

    ok(sft_s3_xml_error(XML(moto_sts_error), pool, &err) == SFT_OK
       && eq(&err.code, "ValidationError"),
       "an ErrorResponse read as an error by the request layer too");

    ok(sft_s3_xml_sts(XML(sts_no_expiration), pool, &creds, &err)
       == SFT_ERROR, "STS keys without an expiration are refused");

    ok(sft_s3_xml_sts(XML(sts_line_break), pool, &creds, &err) == SFT_ERROR,
       "an STS token with a line break is refused");

    ok(sft_s3_xml_sts(XML(sts_error_no_code), pool, &creds, &err)
       == SFT_ERROR
       && sft_s3_xml_sts(XML(moto_initiate), pool, &creds, &err)
          == SFT_ERROR,
       "an ErrorResponse without a code, or another answer, is refused");

    big = malloc(SFT_S3_XML_MAX + 1);
    memset(big, ' ', SFT_S3_XML_MAX + 1);
    memcpy(big, "<Error><Code>X</Code></Error>", 29);
    ok(sft_s3_xml_error(big, SFT_S3_XML_MAX + 1, pool, &err) == SFT_ERROR
       && sft_s3_xml_error(big, SFT_S3_XML_MAX, pool, &err) == SFT_OK,
       "a body past the limit is refused unparsed");
    free(big);

    t = sft_s3_parse_time((u_char *) "1970-01-01T00:00:00Z", 20);
    ok(t == 0, "the epoch");

    ok(sft_s3_parse_time((u_char *) "2026-12-01T18:52:47+01:00", 25) == -1
       && sft_s3_parse_time((u_char *) "2026-12-01 18:52:47Z", 20) == -1
       && sft_s3_parse_time((u_char *) "1969-12-31T23:59:59Z", 20) == -1,
       "only UTC, the T and times from 1970 are taken");

    ok(sft_s3_parse_http_time((u_char *) "Tue, 01 Dec 2026 18:52:47 GMT", 29)
       == sft_s3_parse_time((u_char *) "2026-12-01T18:52:47Z", 20)
       && sft_s3_parse_http_time((u_char *) "Thu, 01 Jan 1970 00:00:01 GMT",
                                 29) == 1,
       "Last-Modified, an HTTP date, read as UTC");

    ok(sft_s3_parse_http_time((u_char *) "Tue, 01 Dek 2026 18:52:47 GMT", 29)
       == 0
       && sft_s3_parse_http_time((u_char *) "Tue, 01 Dec 2026 18:52:47 CET",
                                 29) == 0
       && sft_s3_parse_http_time((u_char *) "Tuesday, 01-Dec-26 18:52:47 GMT",
                                 31) == 0,
       "an HTTP date of another shape or zone is refused");

    sft_destroy_pool(pool);

    return failed ? 1 : 0;
}
