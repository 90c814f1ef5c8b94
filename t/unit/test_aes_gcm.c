/*
 * test_aes_gcm.c -- the AES-GCM kernels (asm/sft_aes_gcm.h): GCM's
 * published test cases, then every kernel this CPU runs against
 * OpenSSL's EVP for AES-128 and AES-256 with random keys, nonces,
 * additional data and lengths, encrypting and decrypting, whole, in
 * TLS 1.3's pieces (the record, then its content type), in random
 * pieces (additional data too), in place,
 * against guard pages on both sides, GHASH alone, a counter that
 * wraps its 32 bits, the key schedule and H of the AES instructions
 * against the C reference's, and a message's state wiped by its end.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_aes_gcm.h>
#include <openssl/evp.h>
#include <sys/mman.h>
#include "sft_tap.h"
#include "sft_test_rand.h"


#define T_MAXLEN  (70 * 1024)


static size_t
hex(u_char *out, const char *s)
{
    size_t        n;
    unsigned int  b;

    for (n = 0; s[0] && s[1]; s += 2, n++) {
        sscanf(s, "%2x", &b);
        out[n] = (u_char) b;
    }

    return n;
}


/* OpenSSL's result for the same message */

static int
evp_seal(const u_char *key, size_t klen, const u_char *nonce,
    const u_char *aad, size_t alen, const u_char *in, size_t len,
    u_char *out, u_char *tag)
{
    int              n, ok;
    EVP_CIPHER_CTX  *ctx;

    ctx = EVP_CIPHER_CTX_new();

    ok = ctx != NULL
         && EVP_EncryptInit_ex(ctx, klen == 16 ? EVP_aes_128_gcm()
                                               : EVP_aes_256_gcm(),
                               NULL, key, nonce) == 1
         && (alen == 0
             || EVP_EncryptUpdate(ctx, NULL, &n, aad, (int) alen) == 1)
         && (len == 0
             || EVP_EncryptUpdate(ctx, out, &n, in, (int) len) == 1)
         && EVP_EncryptFinal_ex(ctx, out + len, &n) == 1
         && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1;

    EVP_CIPHER_CTX_free(ctx);

    return ok;
}


/*
 * the kernel's result, encrypting or (dec) decrypting; split: all but the
 * last byte first
 */

static void
run(const sft_aes_gcm_impl_t *impl, const sft_aes_gcm_key_t *k,
    const u_char *nonce, const u_char *aad, size_t alen, const u_char *in,
    size_t len, u_char *out, u_char *tag, int split, int dec)
{
    size_t         head;
    sft_aes_gcm_t  g;
    void         (*step)(sft_aes_gcm_t *g, const void *in, void *out,
                         size_t n);

    step = dec ? sft_aes_gcm_decrypt : sft_aes_gcm_encrypt;

    sft_aes_gcm_start(&g, impl, k, nonce, aad, alen);

    if (split && len > 0) {
        head = (len - 1) & ~(size_t) 15;
        step(&g, in, out, head);
        step(&g, in + head, out + head, len - head);

    } else {
        step(&g, in, out, len);
    }

    sft_aes_gcm_finish(&g, tag);
}


/* the same with the additional data and the text cut at random points */

static void
run_pieces(const sft_aes_gcm_impl_t *impl, const sft_aes_gcm_key_t *k,
    const u_char *nonce, const u_char *aad, size_t alen, const u_char *in,
    size_t len, u_char *out, u_char *tag, int dec)
{
    size_t         n, m;
    sft_aes_gcm_t  g;

    sft_aes_gcm_init(&g, impl, k, nonce);

    for (n = 0; n < alen; n += m) {
        m = 1 + rnd() % (alen - n);
        sft_aes_gcm_aad(&g, aad + n, m);
    }

    for (n = 0; n < len; n += m) {
        m = 1 + rnd() % ((rnd() & 1) ? 40 : 1200);
        m = (m < len - n) ? m : len - n;

        if (dec) {
            sft_aes_gcm_decrypt(&g, in + n, out + n, m);
        } else {
            sft_aes_gcm_encrypt(&g, in + n, out + n, m);
        }
    }

    sft_aes_gcm_finish(&g, tag);
}


static void
known_answers(void)
{
    size_t                     i, klen, plen;
    u_char                     key[32], nonce[12], pt[64], ct[64], want[64];
    u_char                     tag[16], wtag[16];
    sft_aes_gcm_key_t          k;
    const sft_aes_gcm_impl_t  *impl;

    /* McGrew and Viega, "The Galois/Counter Mode of Operation", 1, 2, 13, 14 */

    static const struct {
        const char  *key, *pt, *ct, *tag;
    } cases[] = {
        { "00000000000000000000000000000000", "", "",
          "58e2fccefa7e3061367f1d57a4e7455a" },
        { "00000000000000000000000000000000",
          "00000000000000000000000000000000",
          "0388dace60b6a392f328c2b971b2fe78",
          "ab6e47d42cec13bdf53a67b21257bddf" },
        { "0000000000000000000000000000000000000000000000000000000000000000",
          "", "", "530f8afbc74536b9a963b4f1c4cb738b" },
        { "0000000000000000000000000000000000000000000000000000000000000000",
          "00000000000000000000000000000000",
          "cea7403d4d606b6e074ec5d3baf39d18",
          "d0d1c8a799996bf0265b98b5d48ab919" },
    };

    sft_memzero(nonce, sizeof(nonce));

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        klen = hex(key, cases[i].key);
        plen = hex(pt, cases[i].pt);
        hex(want, cases[i].ct);
        hex(wtag, cases[i].tag);

        ok(sft_aes_gcm_key(&k, key, klen) == 0, "key accepted");

        impl = sft_aes_gcm_impl_get(0);
        run(impl, &k, nonce, NULL, 0, pt, plen, ct, tag, 0, 0);

        ok(memcmp(ct, want, plen) == 0 && memcmp(tag, wtag, 16) == 0,
           "C reference: published test case");
    }

    ok(sft_aes_gcm_key(&k, key, 24) == -1, "AES-192 key refused");
}


/* a buffer of n bytes ending at a page that cannot be read */

static u_char *
guarded(size_t n, void **base, size_t *size)
{
    size_t   page, len;
    u_char  *p;

    page = 4096;
    len = (n + page - 1) / page * page + 2 * page;

    p = mmap(NULL, len, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS,
             -1, 0);
    if (p == MAP_FAILED) {
        return NULL;
    }

    mprotect(p, page, PROT_NONE);
    mprotect(p + len - page, page, PROT_NONE);

    *base = p;
    *size = len;

    return p + len - page - n;
}


static void
against_openssl(const sft_aes_gcm_impl_t *impl)
{
    int                 dec, bad_whole[2], bad_split[2], bad_inplace[2];
    int                 bad_guard[2], bad_pieces[2];
    size_t              i, len, klen, alen, gsize[2];
    u_char             *in, *out, *ref, *gin, *gout, *inpl;
    const u_char       *src, *want;
    u_char              key[32], nonce[12], aad[40], tag[16], rtag[16];
    void               *gbase[2];
    char                name[128];
    sft_aes_gcm_key_t   k;

    static const size_t  lens[] = {
        0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 511, 512, 1000,
        16384, 16385, 65536 + 7, T_MAXLEN
    };

    in = malloc(T_MAXLEN);
    out = malloc(T_MAXLEN + 16);
    ref = malloc(T_MAXLEN + 16);
    inpl = malloc(T_MAXLEN);

    if (in == NULL || out == NULL || ref == NULL || inpl == NULL) {
        ok(0, "memory");
        return;
    }

    sft_memzero(bad_whole, sizeof(bad_whole));
    sft_memzero(bad_split, sizeof(bad_split));
    sft_memzero(bad_inplace, sizeof(bad_inplace));
    sft_memzero(bad_guard, sizeof(bad_guard));
    sft_memzero(bad_pieces, sizeof(bad_pieces));

    for (i = 0; i < 600; i++) {
        len = (i < sizeof(lens) / sizeof(lens[0])) ? lens[i]
                                                   : rnd() % 2100;
        klen = (i & 1) ? 32 : 16;
        alen = (i % 3 == 0) ? 13 : rnd() % sizeof(aad);

        rnd_fill(key, klen);
        rnd_fill(nonce, sizeof(nonce));
        rnd_fill(aad, alen);
        rnd_fill(in, len);

        sft_aes_gcm_key(&k, key, klen);

        if (!evp_seal(key, klen, nonce, aad, alen, in, len, ref, rtag)) {
            ok(0, "OpenSSL seals");
            return;
        }

        for (dec = 0; dec < 2; dec++) {
            src = dec ? ref : in;
            want = dec ? in : ref;

            run(impl, &k, nonce, aad, alen, src, len, out, tag, 0, dec);
            bad_whole[dec] += memcmp(out, want, len) != 0
                              || memcmp(tag, rtag, 16) != 0;

            run(impl, &k, nonce, aad, alen, src, len, out, tag, 1, dec);
            bad_split[dec] += memcmp(out, want, len) != 0
                              || memcmp(tag, rtag, 16) != 0;

            run_pieces(impl, &k, nonce, aad, alen, src, len, out, tag, dec);
            bad_pieces[dec] += memcmp(out, want, len) != 0
                               || memcmp(tag, rtag, 16) != 0;

            sft_memcpy(inpl, src, len);
            run(impl, &k, nonce, aad, alen, inpl, len, inpl, tag, 1, dec);
            bad_inplace[dec] += memcmp(inpl, want, len) != 0
                                || memcmp(tag, rtag, 16) != 0;

            if (len > 4096 && i >= sizeof(lens) / sizeof(lens[0])) {
                continue;
            }

            gin = guarded(len, &gbase[0], &gsize[0]);
            gout = guarded(len, &gbase[1], &gsize[1]);

            if (gin == NULL || gout == NULL) {
                ok(0, "guard pages");
                return;
            }

            sft_memcpy(gin, src, len);
            run(impl, &k, nonce, aad, alen, gin, len, gout, tag, 1, dec);
            bad_guard[dec] += memcmp(gout, want, len) != 0
                              || memcmp(tag, rtag, 16) != 0;

            munmap(gbase[0], gsize[0]);
            munmap(gbase[1], gsize[1]);
        }
    }

    for (dec = 0; dec < 2; dec++) {
        snprintf(name, sizeof(name), "%s: 600 messages %s as OpenSSL does",
                 impl->name, dec ? "opened" : "sealed");
        ok(bad_whole[dec] == 0, name);

        snprintf(name, sizeof(name), "%s: the same in two pieces",
                 impl->name);
        ok(bad_split[dec] == 0, name);

        snprintf(name, sizeof(name), "%s: the same in random pieces",
                 impl->name);
        ok(bad_pieces[dec] == 0, name);

        snprintf(name, sizeof(name), "%s: the same in place", impl->name);
        ok(bad_inplace[dec] == 0, name);

        snprintf(name, sizeof(name), "%s: the same between guard pages",
                 impl->name);
        ok(bad_guard[dec] == 0, name);
    }

    free(in);
    free(out);
    free(ref);
    free(inpl);
}


/* the kernel's key schedule and E_K(0) against the C reference */

static void
key_against_reference(const sft_aes_gcm_impl_t *impl)
{
    int                        bad;
    size_t                     i;
    u_char                     key[32], zero[16], h1[16], h2[16];
    char                       name[128];
    sft_aes_gcm_key_t          k1, k2;
    const sft_aes_gcm_impl_t  *ref;

    ref = sft_aes_gcm_impl_get(0);
    bad = 0;
    sft_memzero(zero, sizeof(zero));

    for (i = 0; i < 200; i++) {
        rnd_fill(key, sizeof(key));

        sft_memzero(&k1, sizeof(sft_aes_gcm_key_t));
        sft_memzero(&k2, sizeof(sft_aes_gcm_key_t));
        k1.rounds = (i & 1) ? 14 : 10;
        k2.rounds = k1.rounds;

        ref->expand(&k1, key);
        impl->expand(&k2, key);

        ref->block(&k1, zero, h1);
        impl->block(&k2, zero, h2);

        bad += memcmp(&k1, &k2, sizeof(sft_aes_gcm_key_t)) != 0
               || memcmp(h1, h2, 16) != 0;
    }

    snprintf(name, sizeof(name),
             "%s: AES-128 and AES-256 key schedules and H as the C "
             "reference's", impl->name);
    ok(bad == 0, name);
}


/* nothing of the keystream or the hash is left in a finished message */

static void
wiped(const sft_aes_gcm_impl_t *impl)
{
    u_char             key[32], nonce[12], buf[37], tag[16];
    char               name[128];
    sft_aes_gcm_t      g, zero;
    sft_aes_gcm_key_t  k;

    rnd_fill(key, sizeof(key));
    rnd_fill(nonce, sizeof(nonce));
    rnd_fill(buf, sizeof(buf));
    sft_aes_gcm_key(&k, key, 32);

    sft_aes_gcm_start(&g, impl, &k, nonce, buf, 5);
    sft_aes_gcm_encrypt(&g, buf, buf, sizeof(buf));
    sft_aes_gcm_finish(&g, tag);

    sft_memzero(&zero, sizeof(sft_aes_gcm_t));

    snprintf(name, sizeof(name), "%s: the message state wiped by finish",
             impl->name);
    ok(memcmp(&g, &zero, sizeof(sft_aes_gcm_t)) == 0, name);
}


/* the kernel's GHASH and counter against the C reference */

static void
against_reference(const sft_aes_gcm_impl_t *impl)
{
    int                        bad_ghash, bad_ctr;
    size_t                     i, n;
    u_char                     key[32], buf[1200], o1[1200], o2[1200];
    u_char                     x1[16], x2[16], c1[16], c2[16];
    char                       name[128];
    sft_aes_gcm_key_t          k;
    const sft_aes_gcm_impl_t  *ref;

    ref = sft_aes_gcm_impl_get(0);
    bad_ghash = 0;
    bad_ctr = 0;

    for (i = 0; i < 300; i++) {
        n = rnd() % sizeof(buf);

        rnd_fill(key, sizeof(key));
        rnd_fill(buf, n);
        rnd_fill(x1, 16);
        sft_memcpy(x2, x1, 16);

        sft_aes_gcm_key(&k, key, (i & 1) ? 32 : 16);

        ref->ghash(&k, x1, buf, n);
        impl->ghash(&k, x2, buf, n);
        bad_ghash += memcmp(x1, x2, 16) != 0;

        /* the 32-bit counter wraps within the message */

        rnd_fill(c1, 12);
        c1[12] = 0xff;
        c1[13] = 0xff;
        c1[14] = 0xff;
        c1[15] = (u_char) (0xff - rnd() % 40);
        sft_memcpy(c2, c1, 16);

        if (i & 2) {
            ref->ctr_dec(&k, c1, x1, buf, o1, n);
            impl->ctr_dec(&k, c2, x2, buf, o2, n);

        } else {
            ref->ctr(&k, c1, x1, buf, o1, n);
            impl->ctr(&k, c2, x2, buf, o2, n);
        }

        bad_ctr += memcmp(o1, o2, n) != 0 || memcmp(x1, x2, 16) != 0
                   || memcmp(c1, c2, 16) != 0;
    }

    snprintf(name, sizeof(name), "%s: GHASH as the C reference", impl->name);
    ok(bad_ghash == 0, name);

    snprintf(name, sizeof(name),
             "%s: counter mode both ways as the C reference, "
             "32-bit counter wrapping",
             impl->name);
    ok(bad_ctr == 0, name);
}


int
main(void)
{
    size_t                     i;
    const sft_aes_gcm_impl_t  *impl;

    known_answers();

    for (i = 0; (impl = sft_aes_gcm_impl_get(i)) != NULL; i++) {
        against_openssl(impl);
        wiped(impl);

        if (i > 0) {
            key_against_reference(impl);
            against_reference(impl);
        }
    }

    printf("# kernels: %zu, the fastest: %s\n", i,
           sft_aes_gcm_fast() ? sft_aes_gcm_fast()->name : "none (OpenSSL)");

    printf("1..%lu\n", tests);

    return failed ? 1 : 0;
}
