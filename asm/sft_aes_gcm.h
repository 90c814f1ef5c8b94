/*
 * sft_aes_gcm.h: AES-GCM encryption (AES-128 and AES-256, 96-bit nonces)
 * for sealing TLS records: a portable C reference and an x86_64 kernel
 * using VAES and VPCLMULQDQ on 512-bit registers, chosen at run time.
 */


#ifndef _SFT_AES_GCM_H_INCLUDED_
#define _SFT_AES_GCM_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define SFT_AES_GCM_NONCE_LEN  12
#define SFT_AES_GCM_TAG_LEN    16


/*
 * An expanded key.  The asm kernels know these offsets (asserted in
 * sft_aes_gcm.c): round keys at 0, the round count at 240, at 256 the
 * GHASH key's powers H^32 ... H^1, each as a little-endian 128-bit
 * integer of the byte-reversed element, multiplied by x^-1 (which the
 * carry-less product of two such values gives back), and at 768 the
 * same powers' two 64-bit halves XORed (Karatsuba's middle factor).
 */

typedef struct {
    uint8_t                     rk[15][16];
    uint32_t                    rounds;         /* 10 or 14 */
    uint8_t                     pad[12];
    uint8_t                     htab[32][16];
    uint8_t                     hktab[32][16];
    uint8_t                     h[16];          /* H in GCM's byte order */
} sft_aes_gcm_key_t;


/*
 * The kernels: the round keys for k->rounds from a key of 16 or 32
 * bytes; one AES block; GHASH of n bytes into xi (the last block
 * padded with zeros; xi in GCM's byte order); and counter mode from the
 * block ctr (its last 32 bits counting, big-endian), with GHASH of the
 * ciphertext (the output of ctr, the input of ctr_dec), advancing ctr
 * past the blocks used.
 */

typedef struct {
    const char   *name;
    uint32_t      features;     /* SFT_CPU_* bits required */

    void        (*expand)(sft_aes_gcm_key_t *k, const uint8_t *key);
    void        (*block)(const sft_aes_gcm_key_t *k, const uint8_t *in,
                         uint8_t *out);
    void        (*ghash)(const sft_aes_gcm_key_t *k, uint8_t *xi,
                         const void *p, size_t n);
    void        (*ctr)(const sft_aes_gcm_key_t *k, uint8_t *ctr,
                       uint8_t *xi, const void *in, void *out, size_t n);
    void        (*ctr_dec)(const sft_aes_gcm_key_t *k, uint8_t *ctr,
                           uint8_t *xi, const void *in, void *out, size_t n);
} sft_aes_gcm_impl_t;


/*
 * One message being encrypted or decrypted, in pieces of any length: a
 * partial block waits in part (additional data, or the ciphertext of
 * the data so far with the rest of its keystream in ks) until it is full
 * or the message ends.
 */

typedef struct {
    const sft_aes_gcm_impl_t   *impl;
    const sft_aes_gcm_key_t    *key;
    uint8_t                     ctr[16];
    uint8_t                     j0[16];
    uint8_t                     xi[16];
    uint8_t                     part[16];
    uint8_t                     ks[16];
    size_t                      npart;
    unsigned                    text;           /* past the additional data */
    uint64_t                    alen;
    uint64_t                    clen;
} sft_aes_gcm_t;


/*
 * a nonce's last 8 bytes plus one: TLS 1.2's explicit part (RFC 5288),
 * SSH's invocation counter (RFC 5647)
 */
void sft_aes_gcm_count_nonce(uint8_t *nonce);

/*
 * key: 16 or 32 bytes; returns 0, or -1 for another length.  The round
 * keys and H come from the fastest kernel this CPU runs (AES
 * instructions, constant time), the C reference only without one.
 */
int sft_aes_gcm_key(sft_aes_gcm_key_t *k, const void *key, size_t len);

/*
 * sft_aes_gcm_impl_get(0) is the C reference, (1) the asm kernel where
 * this CPU runs it, NULL past the end; sft_aes_gcm_fast() is the asm
 * kernel or NULL (then OpenSSL's code is the faster choice).
 */
const sft_aes_gcm_impl_t *sft_aes_gcm_impl_get(size_t i);
const sft_aes_gcm_impl_t *sft_aes_gcm_fast(void);

/*
 * start, add the additional data, encrypt or decrypt (in place or not),
 * each in pieces of any length, finish with the tag (to compare, when
 * decrypting), which also wipes the message state (keystream, hash);
 * sft_aes_gcm_start() is sft_aes_gcm_init() and _aad()
 */
void sft_aes_gcm_init(sft_aes_gcm_t *g, const sft_aes_gcm_impl_t *impl,
    const sft_aes_gcm_key_t *key, const uint8_t *nonce);
void sft_aes_gcm_aad(sft_aes_gcm_t *g, const void *aad, size_t n);
void sft_aes_gcm_start(sft_aes_gcm_t *g, const sft_aes_gcm_impl_t *impl,
    const sft_aes_gcm_key_t *key, const uint8_t *nonce, const void *aad,
    size_t alen);
void sft_aes_gcm_encrypt(sft_aes_gcm_t *g, const void *in, void *out,
    size_t n);
void sft_aes_gcm_decrypt(sft_aes_gcm_t *g, const void *in, void *out,
    size_t n);
void sft_aes_gcm_finish(sft_aes_gcm_t *g, uint8_t *tag);


#endif /* _SFT_AES_GCM_H_INCLUDED_ */
