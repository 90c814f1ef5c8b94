/*
 * test_gcm_provider.c -- the "siftp" OpenSSL provider (AES-GCM by the asm
 * kernel, src/event/sft_event_openssl_gcm.c) against OpenSSL's default
 * provider through EVP: which provider a fetch finds, messages with the
 * additional data and the text cut at random points both ways, a wrong
 * tag refused, TLS 1.2's record mode sealing for the other provider to
 * open and opening what the other sealed, and SSH packets as libssh
 * drives them (whole fixed IV, counted per packet) alike to the byte.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event_openssl.h>
#include <sft_aes_gcm.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include "sft_tap.h"
#include "sft_test_rand.h"


#define T_MAXLEN  5000


static const char *
provider_of(const EVP_CIPHER *c)
{
    return OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(c));
}


/*
 * one message through EVP in random pieces; dec: tag in, 1 if it
 * matched; else tag out
 */

static int
evp_run(const EVP_CIPHER *c, int dec, const u_char *key, const u_char *iv,
    const u_char *aad, size_t alen, const u_char *in, size_t len,
    u_char *out, u_char *tag)
{
    int              n, ok;
    size_t           i, m;
    EVP_CIPHER_CTX  *ctx;

    ctx = EVP_CIPHER_CTX_new();

    ok = ctx != NULL && EVP_CipherInit_ex(ctx, c, NULL, key, iv, !dec) == 1;

    for (i = 0; ok && i < alen; i += m) {
        m = 1 + rnd() % (alen - i);
        ok = EVP_CipherUpdate(ctx, NULL, &n, aad + i, (int) m) == 1;
    }

    for (i = 0; ok && i < len; i += m) {
        m = 1 + rnd() % ((rnd() & 1) ? 20 : 1500);
        m = (m < len - i) ? m : len - i;
        ok = EVP_CipherUpdate(ctx, out + i, &n, in + i, (int) m) == 1
             && (size_t) n == m;
    }

    if (ok && dec) {
        ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, tag) == 1;
    }

    ok = ok && EVP_CipherFinal_ex(ctx, out + len, &n) == 1 && n == 0;

    if (ok && !dec) {
        ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1;
    }

    EVP_CIPHER_CTX_free(ctx);

    return ok;
}


static void
messages(EVP_CIPHER *ours[2], EVP_CIPHER *theirs[2])
{
    int     k, bad_seal, bad_open, bad_tag;
    size_t  i, len, alen;
    u_char  key[32], iv[12], aad[64], tag[16], rtag[16];
    u_char  in[T_MAXLEN], ref[T_MAXLEN + 16], out[T_MAXLEN + 16];

    bad_seal = 0;
    bad_open = 0;
    bad_tag = 0;

    for (i = 0; i < 300; i++) {
        k = (int) (i & 1);
        len = rnd() % T_MAXLEN;
        alen = rnd() % sizeof(aad);

        rnd_fill(key, sizeof(key));
        rnd_fill(iv, sizeof(iv));
        rnd_fill(aad, alen);
        rnd_fill(in, len);

        if (!evp_run(theirs[k], 0, key, iv, aad, alen, in, len, ref, rtag)) {
            ok(0, "the default provider seals");
            return;
        }

        bad_seal += !evp_run(ours[k], 0, key, iv, aad, alen, in, len, out,
                             tag)
                    || memcmp(out, ref, len) != 0 || memcmp(tag, rtag, 16);

        bad_open += !evp_run(ours[k], 1, key, iv, aad, alen, ref, len, out,
                             rtag)
                    || memcmp(out, in, len) != 0;

        rtag[rnd() % 16] ^= (u_char) (1 + rnd() % 255);
        bad_tag += evp_run(ours[k], 1, key, iv, aad, alen, ref, len, out,
                           rtag);
    }

    ok(bad_seal == 0, "300 messages in random pieces sealed as by default");
    ok(bad_open == 0, "the same opened, tags accepted");
    ok(bad_tag == 0, "each with one tag byte changed refused");
}


/*
 * TLS 1.2 AES-GCM as libssl drives it: explicit IV, text and tag of len
 * bytes of text in one buffer (RFC 5288); the length in the additional
 * data counts the explicit IV, and the tag too when opening
 */

static int
tls12_record(const EVP_CIPHER *c, int dec, const u_char *key,
    const u_char *fixed, const u_char *hdr, u_char *rec, size_t len,
    size_t *outl)
{
    int              n, pad, ok;
    size_t           alen;
    u_char           aad[13];
    EVP_CIPHER_CTX  *ctx;

    alen = len + 8 + (dec ? 16 : 0);

    sft_memcpy(aad, hdr, 11);
    aad[11] = (u_char) (alen >> 8);
    aad[12] = (u_char) alen;

    ctx = EVP_CIPHER_CTX_new();

    ok = ctx != NULL
         && EVP_CipherInit_ex(ctx, c, NULL, key, NULL, !dec) == 1
         && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IV_FIXED, 4,
                                (void *) fixed) == 1;

    if (ok) {
        pad = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_TLS1_AAD, 13, aad);
        ok = pad == 16
             && EVP_CipherUpdate(ctx, rec, &n, rec, (int) len + 24) == 1;
        *outl = (size_t) n;
    }

    EVP_CIPHER_CTX_free(ctx);

    return ok;
}


static void
tls12(EVP_CIPHER *ours[2], EVP_CIPHER *theirs[2])
{
    int          k, way, bad[2], bad_tag;
    size_t       i, len, outl;
    u_char       key[32], fixed[4], hdr[11], in[T_MAXLEN];
    u_char       rec[T_MAXLEN + 24];
    EVP_CIPHER  *seal, *open;

    bad[0] = 0;
    bad[1] = 0;
    bad_tag = 0;

    for (i = 0; i < 200; i++) {
        k = (int) (i & 1);
        len = rnd() % T_MAXLEN;

        rnd_fill(key, sizeof(key));
        rnd_fill(fixed, sizeof(fixed));
        rnd_fill(hdr, sizeof(hdr));
        rnd_fill(in, len);

        for (way = 0; way < 2; way++) {
            seal = way ? theirs[k] : ours[k];
            open = way ? ours[k] : theirs[k];

            sft_memcpy(rec + 8, in, len);

            if (!tls12_record(seal, 0, key, fixed, hdr, rec, len, &outl)
                || outl != len + 24
                || !tls12_record(open, 1, key, fixed, hdr, rec, len, &outl)
                || outl != len || memcmp(rec + 8, in, len) != 0)
            {
                bad[way]++;
            }

            if (way == 1) {
                tls12_record(seal, 0, key, fixed, hdr, rec, len, &outl);
                rec[8 + len + rnd() % 16] ^= 0x40;
                bad_tag += tls12_record(open, 1, key, fixed, hdr, rec, len,
                                        &outl);
            }
        }
    }

    ok(bad[0] == 0, "TLS 1.2 records sealed here opened by default");
    ok(bad[1] == 0, "TLS 1.2 records sealed by default opened here");
    ok(bad_tag == 0, "TLS 1.2 records with a changed tag refused");
}


/* libssh's steps for one packet: next IV, length as data, text, tag */

static int
ssh_packet(EVP_CIPHER_CTX *ctx, int dec, const u_char *in, size_t len,
    u_char *out, u_char *tag)
{
    int     n;
    u_char  last;

    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_IV_GEN, 1, &last) == 1
           && (!dec
               || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1)
           && EVP_CipherUpdate(ctx, NULL, &n, in, 4) == 1 && n == 4
           && EVP_CipherUpdate(ctx, out + 4, &n, in + 4, (int) len - 4) == 1
           && EVP_CipherFinal_ex(ctx, NULL, &n) == 1
           && (dec
               || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1);
}


static void
ssh(EVP_CIPHER *ours[2], EVP_CIPHER *theirs[2])
{
    int              k, w, bad_seal, bad_open;
    size_t           i, j, len;
    u_char           key[32], iv[12], in[T_MAXLEN], out[2][T_MAXLEN];
    u_char           tag[2][16];
    EVP_CIPHER_CTX  *ctx[2], *dctx;

    bad_seal = 0;
    bad_open = 0;

    for (i = 0; i < 20; i++) {
        k = (int) (i & 1);

        rnd_fill(key, sizeof(key));
        rnd_fill(iv, sizeof(iv));
        iv[11] = (u_char) (0xfe + (i & 1));     /* the counter carries */

        for (w = 0; w < 2; w++) {
            ctx[w] = EVP_CIPHER_CTX_new();

            if (ctx[w] == NULL
                || EVP_CipherInit_ex(ctx[w], w ? theirs[k] : ours[k], NULL,
                                     key, NULL, 1) != 1
                || EVP_CIPHER_CTX_ctrl(ctx[w], EVP_CTRL_GCM_SET_IV_FIXED, -1,
                                       iv) != 1)
            {
                ok(0, "SSH contexts");
                return;
            }
        }

        dctx = EVP_CIPHER_CTX_new();

        if (dctx == NULL
            || EVP_CipherInit_ex(dctx, ours[k], NULL, key, NULL, 0) != 1
            || EVP_CIPHER_CTX_ctrl(dctx, EVP_CTRL_GCM_SET_IV_FIXED, -1, iv)
               != 1)
        {
            ok(0, "SSH contexts");
            return;
        }

        for (j = 0; j < 5; j++) {
            len = 4 + 16 * (1 + rnd() % (T_MAXLEN / 16 - 1));
            rnd_fill(in, len);

            for (w = 0; w < 2; w++) {
                bad_seal += !ssh_packet(ctx[w], 0, in, len, out[w], tag[w]);
            }

            bad_seal += memcmp(out[0] + 4, out[1] + 4, len - 4) != 0
                        || memcmp(tag[0], tag[1], 16) != 0;

            sft_memcpy(out[1], in, 4);
            bad_open += !ssh_packet(dctx, 1, out[1], len, out[0], tag[1])
                        || memcmp(out[0] + 4, in + 4, len - 4) != 0;
        }

        EVP_CIPHER_CTX_free(ctx[0]);
        EVP_CIPHER_CTX_free(ctx[1]);
        EVP_CIPHER_CTX_free(dctx);
    }

    ok(bad_seal == 0, "SSH packets sealed as by default, 5 per key");
    ok(bad_open == 0, "SSH packets sealed by default opened here");
}


int
main(void)
{
    int          k;
    EVP_MD      *md;
    EVP_CIPHER  *ours[2], *theirs[2], *implicit;

    sft_ssl_gcm_register();

    implicit = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);

    if (sft_aes_gcm_fast() == NULL) {
        ok(implicit != NULL && strcmp(provider_of(implicit), "default") == 0,
           "no AES-GCM kernel on this CPU: OpenSSL's own AES-GCM");
        EVP_CIPHER_free(implicit);
        printf("1..%lu\n", tests);
        return failed ? 1 : 0;
    }

    ok(implicit != NULL && strcmp(provider_of(implicit), "siftp") == 0,
       "a fetch without a query (libssl's, libssh's) finds siftp's AES-GCM");
    EVP_CIPHER_free(implicit);

    implicit = EVP_CIPHER_fetch(NULL, "CHACHA20-POLY1305", NULL);
    md = EVP_MD_fetch(NULL, "SHA256", NULL);
    ok(implicit != NULL && strcmp(provider_of(implicit), "default") == 0
       && md != NULL
       && strcmp(OSSL_PROVIDER_get0_name(EVP_MD_get0_provider(md)),
                 "default") == 0,
       "other algorithms still come from the default provider");
    EVP_CIPHER_free(implicit);
    EVP_MD_free(md);

    for (k = 0; k < 2; k++) {
        ours[k] = EVP_CIPHER_fetch(NULL, k ? "AES-256-GCM" : "AES-128-GCM",
                                   "provider=siftp");
        theirs[k] = EVP_CIPHER_fetch(NULL, k ? "AES-256-GCM" : "AES-128-GCM",
                                     "provider=default");

        if (ours[k] == NULL || theirs[k] == NULL) {
            ok(0, "fetched");
            return 1;
        }
    }

    messages(ours, theirs);
    tls12(ours, theirs);
    ssh(ours, theirs);

    for (k = 0; k < 2; k++) {
        EVP_CIPHER_free(ours[k]);
        EVP_CIPHER_free(theirs[k]);
    }

    printf("1..%lu\n", tests);

    return failed ? 1 : 0;
}
