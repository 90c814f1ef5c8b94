/*
 * test_ftp_hash.c -- the IEEE CRC-32 of HASH CRC32: known values, the
 * same result when fed in pieces, and a bitwise reference.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_ftp.h>
#include "sft_tap.h"


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


int
main(void)
{
    size_t     i, pos, n;
    uint32_t   crc;
    u_char    *buf;

    ok(sft_ftp_crc32(0, (u_char *) "", 0) == 0, "CRC32 of nothing is 0");
    ok(sft_ftp_crc32(0, (u_char *) "123456789", 9) == 0xcbf43926,
       "CRC32 check value of \"123456789\"");
    ok(sft_ftp_crc32(0, (u_char *) "The quick brown fox jumps over the "
                     "lazy dog", 43) == 0x414fa339,
       "CRC32 of the quick brown fox");

    buf = malloc(N);
    if (buf == NULL) {
        return 1;
    }

    srandom(7);

    for (i = 0; i < N; i++) {
        buf[i] = (u_char) random();
    }

    ok(sft_ftp_crc32(0, buf, N) == ref_crc32(buf, N),
       "CRC32 of random bytes as the bitwise reference");

    crc = 0;

    for (pos = 0; pos < N; pos += n) {
        n = 1 + random() % 4096;
        n = n > N - pos ? N - pos : n;
        crc = sft_ftp_crc32(crc, buf + pos, n);
    }

    ok(crc == ref_crc32(buf, N), "CRC32 in random pieces");

    ok(strcmp(sft_ftp_hash_name(SFT_FTP_HASH_SHA256), "SHA-256") == 0
       && strcmp(sft_ftp_hash_name(SFT_FTP_HASH_CRC32), "CRC32") == 0
       && strcmp(sft_ftp_hash_name(SFT_FTP_HASH_CRC32C), "CRC32C") == 0,
       "algorithm names");

    free(buf);

    printf("1..%lu\n", tests);

    return failed ? 1 : 0;
}
