/*
 * sft_aes_gcm.c: AES-GCM key setup, the portable C reference kernels and
 * their run-time choice against the asm kernel, and the message steps
 * (start, encrypt, finish) that drive whichever kernel was chosen.
 * Copies of key material on the stack are wiped before returning.
 */


#include <string.h>

#include "sft_asm.h"
#include "sft_aes_gcm.h"


#if (defined SFT_HAVE_ASM && defined __x86_64__ && defined __ELF__)
#define SFT_AES_GCM_X86_64  1

void sft_aes_expand_aesni(sft_aes_gcm_key_t *k, const uint8_t *key);
void sft_aes_block_aesni(const sft_aes_gcm_key_t *k, const uint8_t *in,
    uint8_t *out);
void sft_aes_gcm_ghash_vaes(const sft_aes_gcm_key_t *k, uint8_t *xi,
    const void *p, size_t n);
void sft_aes_gcm_ctr_vaes(const sft_aes_gcm_key_t *k, uint8_t *ctr,
    uint8_t *xi, const void *in, void *out, size_t n);
void sft_aes_gcm_ctr_dec_vaes(const sft_aes_gcm_key_t *k, uint8_t *ctr,
    uint8_t *xi, const void *in, void *out, size_t n);
#endif


_Static_assert(offsetof(sft_aes_gcm_key_t, rounds) == 240,
               "asm kernels read the round count at 240");
_Static_assert(offsetof(sft_aes_gcm_key_t, htab) == 256,
               "asm kernels read the powers of H at 256");
_Static_assert(offsetof(sft_aes_gcm_key_t, hktab) == 768,
               "asm kernels read the Karatsuba halves at 512");


static void sft_aes_gcm_wipe(void *p, size_t n);
static void sft_aes_expand_c(sft_aes_gcm_key_t *k, const uint8_t *key);
static void sft_aes_block_c(const sft_aes_gcm_key_t *k, const uint8_t *in,
    uint8_t *out);
static void sft_aes_gcm_ghash_c(const sft_aes_gcm_key_t *k, uint8_t *xi,
    const void *p, size_t n);
static void sft_aes_gcm_ctr_c(const sft_aes_gcm_key_t *k, uint8_t *ctr,
    uint8_t *xi, const void *in, void *out, size_t n);
static void sft_aes_gcm_ctr_dec_c(const sft_aes_gcm_key_t *k, uint8_t *ctr,
    uint8_t *xi, const void *in, void *out, size_t n);
static void sft_aes_gcm_ctr_any_c(const sft_aes_gcm_key_t *k, uint8_t *ctr,
    uint8_t *xi, const void *in, void *out, size_t n, int dec);


/* ordered from the most portable to the fastest */

static const sft_aes_gcm_impl_t  sft_aes_gcm_impls[] = {

    { "c", 0, sft_aes_expand_c, sft_aes_block_c, sft_aes_gcm_ghash_c,
      sft_aes_gcm_ctr_c, sft_aes_gcm_ctr_dec_c },

#if (SFT_AES_GCM_X86_64)
    { "x86_64 vaes+avx512",
      SFT_CPU_AES|SFT_CPU_AVX512|SFT_CPU_VAES|SFT_CPU_BMI2,
      sft_aes_expand_aesni, sft_aes_block_aesni, sft_aes_gcm_ghash_vaes,
      sft_aes_gcm_ctr_vaes, sft_aes_gcm_ctr_dec_vaes },
#endif
};

#define SFT_AES_GCM_NIMPLS                                                   \
    (sizeof(sft_aes_gcm_impls) / sizeof(sft_aes_gcm_impls[0]))


static const uint8_t  sft_aes_sbox[256] = {
    0x63, 0x7c, 0x77, 0x7b, 0xf2, 0x6b, 0x6f, 0xc5,
    0x30, 0x01, 0x67, 0x2b, 0xfe, 0xd7, 0xab, 0x76,
    0xca, 0x82, 0xc9, 0x7d, 0xfa, 0x59, 0x47, 0xf0,
    0xad, 0xd4, 0xa2, 0xaf, 0x9c, 0xa4, 0x72, 0xc0,
    0xb7, 0xfd, 0x93, 0x26, 0x36, 0x3f, 0xf7, 0xcc,
    0x34, 0xa5, 0xe5, 0xf1, 0x71, 0xd8, 0x31, 0x15,
    0x04, 0xc7, 0x23, 0xc3, 0x18, 0x96, 0x05, 0x9a,
    0x07, 0x12, 0x80, 0xe2, 0xeb, 0x27, 0xb2, 0x75,
    0x09, 0x83, 0x2c, 0x1a, 0x1b, 0x6e, 0x5a, 0xa0,
    0x52, 0x3b, 0xd6, 0xb3, 0x29, 0xe3, 0x2f, 0x84,
    0x53, 0xd1, 0x00, 0xed, 0x20, 0xfc, 0xb1, 0x5b,
    0x6a, 0xcb, 0xbe, 0x39, 0x4a, 0x4c, 0x58, 0xcf,
    0xd0, 0xef, 0xaa, 0xfb, 0x43, 0x4d, 0x33, 0x85,
    0x45, 0xf9, 0x02, 0x7f, 0x50, 0x3c, 0x9f, 0xa8,
    0x51, 0xa3, 0x40, 0x8f, 0x92, 0x9d, 0x38, 0xf5,
    0xbc, 0xb6, 0xda, 0x21, 0x10, 0xff, 0xf3, 0xd2,
    0xcd, 0x0c, 0x13, 0xec, 0x5f, 0x97, 0x44, 0x17,
    0xc4, 0xa7, 0x7e, 0x3d, 0x64, 0x5d, 0x19, 0x73,
    0x60, 0x81, 0x4f, 0xdc, 0x22, 0x2a, 0x90, 0x88,
    0x46, 0xee, 0xb8, 0x14, 0xde, 0x5e, 0x0b, 0xdb,
    0xe0, 0x32, 0x3a, 0x0a, 0x49, 0x06, 0x24, 0x5c,
    0xc2, 0xd3, 0xac, 0x62, 0x91, 0x95, 0xe4, 0x79,
    0xe7, 0xc8, 0x37, 0x6d, 0x8d, 0xd5, 0x4e, 0xa9,
    0x6c, 0x56, 0xf4, 0xea, 0x65, 0x7a, 0xae, 0x08,
    0xba, 0x78, 0x25, 0x2e, 0x1c, 0xa6, 0xb4, 0xc6,
    0xe8, 0xdd, 0x74, 0x1f, 0x4b, 0xbd, 0x8b, 0x8a,
    0x70, 0x3e, 0xb5, 0x66, 0x48, 0x03, 0xf6, 0x0e,
    0x61, 0x35, 0x57, 0xb9, 0x86, 0xc1, 0x1d, 0x9e,
    0xe1, 0xf8, 0x98, 0x11, 0x69, 0xd9, 0x8e, 0x94,
    0x9b, 0x1e, 0x87, 0xe9, 0xce, 0x55, 0x28, 0xdf,
    0x8c, 0xa1, 0x89, 0x0d, 0xbf, 0xe6, 0x42, 0x68,
    0x41, 0x99, 0x2d, 0x0f, 0xb0, 0x54, 0xbb, 0x16,
};


static uint8_t
sft_aes_xtime(uint8_t a)
{
    return (uint8_t) ((a << 1) ^ ((a >> 7) * 0x1b));
}


static uint64_t
sft_aes_gcm_be64(const uint8_t *p)
{
    size_t    i;
    uint64_t  v;

    v = 0;

    for (i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }

    return v;
}


static void
sft_aes_gcm_put_be64(uint8_t *p, uint64_t v)
{
    size_t  i;

    for (i = 8; i-- > 0; v >>= 8) {
        p[i] = (uint8_t) v;
    }
}


static void
sft_aes_gcm_put_le64(uint8_t *p, uint64_t v)
{
    size_t  i;

    for (i = 0; i < 8; i++, v >>= 8) {
        p[i] = (uint8_t) v;
    }
}


/* n bytes as a big-endian number, plus one (wrapping) */

static void
sft_aes_gcm_inc(uint8_t *p, size_t n)
{
    while (n-- > 0) {
        if (++p[n] != 0) {
            break;
        }
    }
}


/* the counter block's last 32 bits plus one (GCM's inc32) */

static void
sft_aes_gcm_inc32(uint8_t *ctr)
{
    sft_aes_gcm_inc(ctr + 12, 4);
}


void
sft_aes_gcm_count_nonce(uint8_t *nonce)
{
    sft_aes_gcm_inc(nonce + 4, 8);
}


/* x = x * y in GF(2^128), GCM's bit order (NIST SP 800-38D, 6.3) */

static void
sft_gf128_mul(uint8_t *x, const uint8_t *y)
{
    size_t    i;
    uint64_t  zh, zl, vh, vl, bit, lsb;

    zh = 0;
    zl = 0;
    vh = sft_aes_gcm_be64(y);
    vl = sft_aes_gcm_be64(y + 8);

    for (i = 0; i < 128; i++) {
        bit = (uint64_t) 0 - ((x[i >> 3] >> (7 - (i & 7))) & 1);
        zh ^= vh & bit;
        zl ^= vl & bit;

        lsb = (uint64_t) 0 - (vl & 1);
        vl = (vl >> 1) | (vh << 63);
        vh = (vh >> 1) ^ (0xe100000000000000ULL & lsb);
    }

    sft_aes_gcm_put_be64(x, zh);
    sft_aes_gcm_put_be64(x + 8, zl);
}


/* stores the optimiser may not drop, though the memory is not read again */

static void
sft_aes_gcm_wipe(void *p, size_t n)
{
    explicit_bzero(p, n);
}


/* the key schedule (FIPS 197, 5.2) */

static void
sft_aes_expand_c(sft_aes_gcm_key_t *k, const uint8_t *key)
{
    size_t    i, j, nk, words;
    uint8_t   t[4], rcon, u, *w;

    nk = k->rounds - 6;
    words = 4 * (k->rounds + 1);
    w = &k->rk[0][0];

    memcpy(w, key, 4 * nk);
    rcon = 1;

    for (i = nk; i < words; i++) {
        memcpy(t, w + 4 * (i - 1), 4);

        if (i % nk == 0) {
            u = t[0];
            t[0] = (uint8_t) (sft_aes_sbox[t[1]] ^ rcon);
            t[1] = sft_aes_sbox[t[2]];
            t[2] = sft_aes_sbox[t[3]];
            t[3] = sft_aes_sbox[u];
            rcon = sft_aes_xtime(rcon);

        } else if (nk > 6 && i % nk == 4) {
            for (j = 0; j < 4; j++) {
                t[j] = sft_aes_sbox[t[j]];
            }
        }

        for (j = 0; j < 4; j++) {
            w[4 * i + j] = w[4 * (i - nk) + j] ^ t[j];
        }
    }

    sft_aes_gcm_wipe(t, sizeof(t));
}


int
sft_aes_gcm_key(sft_aes_gcm_key_t *k, const void *key, size_t len)
{
    size_t                     i;
    uint8_t                    hi_bit, p[16];
    uint64_t                   hi, lo;
    const sft_aes_gcm_impl_t  *impl;

    if (len != 16 && len != 32) {
        return -1;
    }

    impl = sft_aes_gcm_fast();

    if (impl == NULL) {
        impl = &sft_aes_gcm_impls[0];
    }

    memset(k, 0, sizeof(sft_aes_gcm_key_t));

    k->rounds = (uint32_t) (len / 4 + 6);
    impl->expand(k, key);

    /* H = E(0), and the powers the asm kernels multiply by */

    memset(p, 0, sizeof(p));
    impl->block(k, p, k->h);
    memcpy(p, k->h, sizeof(p));

    for (i = 1; i <= 32; i++) {
        if (i > 1) {
            sft_gf128_mul(p, k->h);
        }

        hi = sft_aes_gcm_be64(p);
        lo = sft_aes_gcm_be64(p + 8);

        hi_bit = (uint8_t) (hi >> 63);
        hi = (hi << 1) | (lo >> 63);
        lo <<= 1;

        if (hi_bit) {
            hi ^= 0xc200000000000000ULL;
            lo ^= 1;
        }

        sft_aes_gcm_put_le64(k->htab[32 - i], lo);
        sft_aes_gcm_put_le64(k->htab[32 - i] + 8, hi);
        sft_aes_gcm_put_le64(k->hktab[32 - i], lo ^ hi);
        sft_aes_gcm_put_le64(k->hktab[32 - i] + 8, lo ^ hi);
    }

    sft_aes_gcm_wipe(p, sizeof(p));

    return 0;
}


static void
sft_aes_block_c(const sft_aes_gcm_key_t *k, const uint8_t *in, uint8_t *out)
{
    size_t   i, c, r;
    uint8_t  s[16], t[16], *a, a0, u;

    for (i = 0; i < 16; i++) {
        s[i] = in[i] ^ k->rk[0][i];
    }

    for (r = 1; r <= k->rounds; r++) {

        /* SubBytes and ShiftRows: row i of column c from column c + i */

        for (c = 0; c < 4; c++) {
            for (i = 0; i < 4; i++) {
                t[4 * c + i] = sft_aes_sbox[s[4 * ((c + i) & 3) + i]];
            }
        }

        if (r < k->rounds) {
            for (c = 0; c < 4; c++) {
                a = t + 4 * c;
                u = a[0] ^ a[1] ^ a[2] ^ a[3];
                a0 = a[0];
                a[0] ^= u ^ sft_aes_xtime(a[0] ^ a[1]);
                a[1] ^= u ^ sft_aes_xtime(a[1] ^ a[2]);
                a[2] ^= u ^ sft_aes_xtime(a[2] ^ a[3]);
                a[3] ^= u ^ sft_aes_xtime(a[3] ^ a0);
            }
        }

        for (i = 0; i < 16; i++) {
            s[i] = t[i] ^ k->rk[r][i];
        }
    }

    memcpy(out, s, 16);

    sft_aes_gcm_wipe(s, sizeof(s));
    sft_aes_gcm_wipe(t, sizeof(t));
}


static void
sft_aes_gcm_ghash_c(const sft_aes_gcm_key_t *k, uint8_t *xi, const void *p,
    size_t n)
{
    size_t          i, m;
    const uint8_t  *b;

    for (b = p; n > 0; b += m, n -= m) {
        m = (n < 16) ? n : 16;

        for (i = 0; i < m; i++) {
            xi[i] ^= b[i];
        }

        sft_gf128_mul(xi, k->h);
    }
}


static void
sft_aes_gcm_ctr_c(const sft_aes_gcm_key_t *k, uint8_t *ctr, uint8_t *xi,
    const void *in, void *out, size_t n)
{
    sft_aes_gcm_ctr_any_c(k, ctr, xi, in, out, n, 0);
}


static void
sft_aes_gcm_ctr_dec_c(const sft_aes_gcm_key_t *k, uint8_t *ctr, uint8_t *xi,
    const void *in, void *out, size_t n)
{
    sft_aes_gcm_ctr_any_c(k, ctr, xi, in, out, n, 1);
}


static void
sft_aes_gcm_ctr_any_c(const sft_aes_gcm_key_t *k, uint8_t *ctr, uint8_t *xi,
    const void *in, void *out, size_t n, int dec)
{
    size_t          i, m;
    uint8_t         ks[16], *o;
    const uint8_t  *b;

    for (b = in, o = out; n > 0; b += m, o += m, n -= m) {
        m = (n < 16) ? n : 16;

        sft_aes_block_c(k, ctr, ks);

        sft_aes_gcm_inc32(ctr);

        if (dec) {
            sft_aes_gcm_ghash_c(k, xi, b, m);
        }

        for (i = 0; i < m; i++) {
            o[i] = b[i] ^ ks[i];
        }

        if (!dec) {
            sft_aes_gcm_ghash_c(k, xi, o, m);
        }
    }

    sft_aes_gcm_wipe(ks, sizeof(ks));
}


const sft_aes_gcm_impl_t *
sft_aes_gcm_impl_get(size_t i)
{
    return sft_asm_runnable(sft_aes_gcm_impls, SFT_AES_GCM_NIMPLS,
                            sizeof(sft_aes_gcm_impl_t),
                            offsetof(sft_aes_gcm_impl_t, features), i);
}


const sft_aes_gcm_impl_t *
sft_aes_gcm_fast(void)
{
    size_t                     i;
    const sft_aes_gcm_impl_t  *impl, *best;

    best = NULL;

    for (i = 1; (impl = sft_aes_gcm_impl_get(i)) != NULL; i++) {
        best = impl;
    }

    return best;
}


void
sft_aes_gcm_init(sft_aes_gcm_t *g, const sft_aes_gcm_impl_t *impl,
    const sft_aes_gcm_key_t *key, const uint8_t *nonce)
{
    g->impl = impl;
    g->key = key;

    memcpy(g->j0, nonce, SFT_AES_GCM_NONCE_LEN);
    memset(g->j0 + SFT_AES_GCM_NONCE_LEN, 0, 16 - SFT_AES_GCM_NONCE_LEN);
    g->j0[15] = 1;

    memcpy(g->ctr, g->j0, 16);
    g->ctr[15] = 2;

    memset(g->xi, 0, sizeof(g->xi));
    g->npart = 0;
    g->text = 0;
    g->alen = 0;
    g->clen = 0;
}


void
sft_aes_gcm_aad(sft_aes_gcm_t *g, const void *aad, size_t n)
{
    size_t          take;
    const uint8_t  *p;

    if (n == 0) {
        return;
    }

    p = aad;
    g->alen += n;

    if (g->npart > 0) {
        take = (n < 16 - g->npart) ? n : 16 - g->npart;
        memcpy(g->part + g->npart, p, take);
        g->npart += take;
        p += take;
        n -= take;

        if (g->npart < 16) {
            return;
        }

        g->impl->ghash(g->key, g->xi, g->part, 16);
        g->npart = 0;
    }

    take = n & ~(size_t) 15;
    g->impl->ghash(g->key, g->xi, p, take);

    memcpy(g->part, p + take, n - take);
    g->npart = n - take;
}


void
sft_aes_gcm_start(sft_aes_gcm_t *g, const sft_aes_gcm_impl_t *impl,
    const sft_aes_gcm_key_t *key, const uint8_t *nonce, const void *aad,
    size_t alen)
{
    sft_aes_gcm_init(g, impl, key, nonce);
    sft_aes_gcm_aad(g, aad, alen);
}


/* whole blocks by the kernel, a partial one with a keystream block kept */

static void
sft_aes_gcm_text(sft_aes_gcm_t *g, const uint8_t *in, uint8_t *out,
    size_t n, int dec)
{
    size_t   i, full;
    uint8_t  b, c;

    if (!g->text) {
        g->impl->ghash(g->key, g->xi, g->part, g->npart);
        g->npart = 0;
        g->text = 1;
    }

    g->clen += n;

    while (g->npart > 0 && n > 0) {
        b = *in++;
        c = b ^ g->ks[g->npart];
        g->part[g->npart++] = dec ? b : c;
        *out++ = c;
        n--;

        if (g->npart == 16) {
            g->impl->ghash(g->key, g->xi, g->part, 16);
            g->npart = 0;
        }
    }

    full = n & ~(size_t) 15;
    (dec ? g->impl->ctr_dec : g->impl->ctr)(g->key, g->ctr, g->xi, in, out,
                                            full);

    if (full == n) {
        return;
    }

    g->impl->block(g->key, g->ctr, g->ks);

    sft_aes_gcm_inc32(g->ctr);

    for (i = 0; full + i < n; i++) {
        b = in[full + i];
        c = b ^ g->ks[i];
        g->part[i] = dec ? b : c;
        out[full + i] = c;
    }

    g->npart = i;
}


void
sft_aes_gcm_encrypt(sft_aes_gcm_t *g, const void *in, void *out, size_t n)
{
    sft_aes_gcm_text(g, in, out, n, 0);
}


void
sft_aes_gcm_decrypt(sft_aes_gcm_t *g, const void *in, void *out, size_t n)
{
    sft_aes_gcm_text(g, in, out, n, 1);
}


void
sft_aes_gcm_finish(sft_aes_gcm_t *g, uint8_t *tag)
{
    size_t   i;
    uint8_t  lens[16], ek[16];

    g->impl->ghash(g->key, g->xi, g->part, g->npart);
    g->npart = 0;

    sft_aes_gcm_put_be64(lens, g->alen * 8);
    sft_aes_gcm_put_be64(lens + 8, g->clen * 8);

    g->impl->ghash(g->key, g->xi, lens, sizeof(lens));
    g->impl->block(g->key, g->j0, ek);

    for (i = 0; i < SFT_AES_GCM_TAG_LEN; i++) {
        tag[i] = g->xi[i] ^ ek[i];
    }

    sft_aes_gcm_wipe(ek, sizeof(ek));
    sft_aes_gcm_wipe(g, sizeof(sft_aes_gcm_t));
}
