/*
 * sft_event_openssl_gcm.c -- an OpenSSL provider, "siftp", that offers
 * AES-128-GCM and AES-256-GCM through the asm kernel (asm/sft_aes_gcm.h),
 * so that the records OpenSSL itself encrypts and decrypts (uploads, the
 * control connection, handshakes) go as fast as those siftpd seals.
 *
 * siftpd registers it at start where the CPU runs the kernel, and makes
 * "?provider=siftp" the default property query: AES-GCM fetches without
 * a query of their own (libssl's, libssh's) find it, every other
 * algorithm still comes from OpenSSL's default provider.
 *
 * The cipher follows OpenSSL's GCM contract (providers/implementations/
 * ciphers/ciphercommon_gcm.c): a 12-byte IV; additional data through
 * update() without an output; the tag read after final() when
 * encrypting, set before final() when decrypting; TLS 1.2's record mode,
 * in which a record is sealed or opened in place by one update() after
 * the "tlsaad" parameter (RFC 5288: a 4-byte fixed IV from "tlsivfixed",
 * the 8 bytes after it sent in the record); and SSH's (RFC 5647, as
 * libssh drives it): the whole IV from "tlsivfixed", each packet's
 * started by reading "tlsivgen", which counts its last 8 bytes up.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_event_openssl.h>
#include <sft_aes_gcm.h>

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>


#define SFT_GCM_PROVIDER        "siftp"
#define SFT_GCM_IV_LEN          12
#define SFT_GCM_TLS_FIXED_LEN   4
#define SFT_GCM_TLS_EXPLICIT    8
#define SFT_GCM_TLS_AAD_LEN     13


typedef struct {
    sft_aes_gcm_key_t           key;
    sft_aes_gcm_t               msg;
    size_t                      keylen;
    u_char                      iv[SFT_GCM_IV_LEN];
    u_char                      tag[SFT_AES_GCM_TAG_LEN];
    size_t                      taglen;       /* 0: not set */
    u_char                      tls_aad[SFT_GCM_TLS_AAD_LEN];
    unsigned                    enc:1;
    unsigned                    key_set:1;
    unsigned                    iv_set:1;     /* a fresh IV waits */
    unsigned                    started:1;    /* msg runs with it */
    unsigned                    tls_fixed:1;  /* TLS 1.2 and SSH IVs */
    unsigned                    tls_aad_set:1;
} sft_gcm_ctx_t;


static int sft_gcm_set_ctx_params(void *vctx, const OSSL_PARAM params[]);


static const sft_aes_gcm_impl_t  *sft_gcm_impl;
static OSSL_PROVIDER             *sft_gcm_providers[2];


/* a message with the IV as it stands */

static void
sft_gcm_begin(sft_gcm_ctx_t *ctx)
{
    sft_aes_gcm_init(&ctx->msg, sft_gcm_impl, &ctx->key, ctx->iv);
    ctx->started = 1;
    ctx->iv_set = 0;
}


/* the same, then the IV counted on for the next record or packet */

static void
sft_gcm_begin_counted(sft_gcm_ctx_t *ctx)
{
    sft_gcm_begin(ctx);
    sft_aes_gcm_count_nonce(ctx->iv);
}


static int
sft_gcm_start(sft_gcm_ctx_t *ctx)
{
    if (ctx->started) {
        return 1;
    }

    if (!ctx->key_set || !ctx->iv_set) {
        return 0;
    }

    sft_gcm_begin(ctx);

    return 1;
}


/* the tag: kept when encrypting, compared when decrypting */

static int
sft_gcm_finish(sft_gcm_ctx_t *ctx)
{
    int     ok;
    u_char  tag[SFT_AES_GCM_TAG_LEN];

    if (!sft_gcm_start(ctx)) {
        return 0;
    }

    sft_aes_gcm_finish(&ctx->msg, tag);
    ctx->started = 0;

    if (ctx->enc) {
        sft_memcpy(ctx->tag, tag, sizeof(tag));
        ctx->taglen = sizeof(tag);
        return 1;
    }

    ok = ctx->taglen != 0 && CRYPTO_memcmp(tag, ctx->tag, ctx->taglen) == 0;
    OPENSSL_cleanse(tag, sizeof(tag));

    return ok;
}


/*
 * TLS 1.2: explicit IV, text and tag in place; the record's nonce is the
 * fixed IV and the explicit part, which counts up when sealing
 */

static int
sft_gcm_tls_record(sft_gcm_ctx_t *ctx, u_char *out, size_t *outl,
    const u_char *in, size_t inl)
{
    int     ok;
    size_t  len;

    ctx->tls_aad_set = 0;

    if (out != in || inl < SFT_GCM_TLS_EXPLICIT + SFT_AES_GCM_TAG_LEN
        || !ctx->tls_fixed || !ctx->key_set)
    {
        return 0;
    }

    len = inl - SFT_GCM_TLS_EXPLICIT - SFT_AES_GCM_TAG_LEN;

    if (ctx->enc) {
        sft_memcpy(out, ctx->iv + SFT_GCM_TLS_FIXED_LEN, SFT_GCM_TLS_EXPLICIT);

    } else {
        sft_memcpy(ctx->iv + SFT_GCM_TLS_FIXED_LEN, in, SFT_GCM_TLS_EXPLICIT);
    }

    sft_gcm_begin_counted(ctx);
    sft_aes_gcm_aad(&ctx->msg, ctx->tls_aad, SFT_GCM_TLS_AAD_LEN);

    if (ctx->enc) {
        sft_aes_gcm_encrypt(&ctx->msg, in + SFT_GCM_TLS_EXPLICIT,
                            out + SFT_GCM_TLS_EXPLICIT, len);
        sft_aes_gcm_finish(&ctx->msg, out + SFT_GCM_TLS_EXPLICIT + len);
        *outl = inl;

        return 1;
    }

    sft_memcpy(ctx->tag, in + SFT_GCM_TLS_EXPLICIT + len,
               SFT_AES_GCM_TAG_LEN);
    ctx->taglen = SFT_AES_GCM_TAG_LEN;

    sft_aes_gcm_decrypt(&ctx->msg, in + SFT_GCM_TLS_EXPLICIT,
                        out + SFT_GCM_TLS_EXPLICIT, len);

    ok = sft_gcm_finish(ctx);

    if (!ok) {
        OPENSSL_cleanse(out + SFT_GCM_TLS_EXPLICIT, len);
        return 0;
    }

    *outl = len;

    return 1;
}


static int
sft_gcm_update(void *vctx, u_char *out, size_t *outl, size_t outsize,
    const u_char *in, size_t inl)
{
    sft_gcm_ctx_t  *ctx = vctx;

    *outl = 0;

    if (ctx->tls_aad_set) {
        return sft_gcm_tls_record(ctx, out, outl, in, inl);
    }

    if (inl == 0) {
        return 1;
    }

    if (!sft_gcm_start(ctx)) {
        return 0;
    }

    if (out == NULL) {
        if (ctx->msg.text) {
            return 0;
        }

        sft_aes_gcm_aad(&ctx->msg, in, inl);
        *outl = inl;                    /* as OpenSSL's: libssh checks */
        return 1;
    }

    if (outsize < inl) {
        return 0;
    }

    if (ctx->enc) {
        sft_aes_gcm_encrypt(&ctx->msg, in, out, inl);

    } else {
        sft_aes_gcm_decrypt(&ctx->msg, in, out, inl);
    }

    *outl = inl;

    return 1;
}


static int
sft_gcm_final(void *vctx, u_char *out, size_t *outl, size_t outsize)
{
    *outl = 0;

    return sft_gcm_finish(vctx);
}


/* EVP_Cipher(): update, or final when there is no input */

static int
sft_gcm_cipher(void *vctx, u_char *out, size_t *outl, size_t outsize,
    const u_char *in, size_t inl)
{
    if (in == NULL) {
        return sft_gcm_final(vctx, out, outl, outsize);
    }

    return sft_gcm_update(vctx, out, outl, outsize, in, inl);
}


static int
sft_gcm_init(void *vctx, const u_char *key, size_t keylen, const u_char *iv,
    size_t ivlen, const OSSL_PARAM params[], int enc)
{
    sft_gcm_ctx_t  *ctx = vctx;

    ctx->enc = enc;

    if (iv != NULL) {
        if (ivlen != SFT_GCM_IV_LEN) {
            return 0;
        }

        sft_memcpy(ctx->iv, iv, SFT_GCM_IV_LEN);
        ctx->iv_set = 1;
        ctx->started = 0;
        ctx->tls_fixed = 0;
    }

    if (key != NULL) {
        if (keylen != ctx->keylen
            || sft_aes_gcm_key(&ctx->key, key, keylen) != 0)
        {
            return 0;
        }

        ctx->key_set = 1;
    }

    if (enc) {
        ctx->taglen = 0;
    }

    return sft_gcm_set_ctx_params(ctx, params);
}


static int
sft_gcm_einit(void *vctx, const u_char *key, size_t keylen, const u_char *iv,
    size_t ivlen, const OSSL_PARAM params[])
{
    return sft_gcm_init(vctx, key, keylen, iv, ivlen, params, 1);
}


static int
sft_gcm_dinit(void *vctx, const u_char *key, size_t keylen, const u_char *iv,
    size_t ivlen, const OSSL_PARAM params[])
{
    return sft_gcm_init(vctx, key, keylen, iv, ivlen, params, 0);
}


/* TLS 1.2's additional data: its length field loses the IV and the tag */

static int
sft_gcm_set_tls_aad(sft_gcm_ctx_t *ctx, const OSSL_PARAM *p)
{
    size_t  len, cut;

    if (p->data_type != OSSL_PARAM_OCTET_STRING
        || p->data_size != SFT_GCM_TLS_AAD_LEN)
    {
        return 0;
    }

    sft_memcpy(ctx->tls_aad, p->data, SFT_GCM_TLS_AAD_LEN);

    len = (size_t) ctx->tls_aad[11] << 8 | ctx->tls_aad[12];
    cut = SFT_GCM_TLS_EXPLICIT + (ctx->enc ? 0 : SFT_AES_GCM_TAG_LEN);

    if (len < cut) {
        return 0;
    }

    len -= cut;
    ctx->tls_aad[11] = (u_char) (len >> 8);
    ctx->tls_aad[12] = (u_char) len;
    ctx->tls_aad_set = 1;

    return 1;
}


/*
 * TLS 1.2: the 4-byte fixed part, the rest random when sealing; SSH: the
 * whole IV (EVP's length -1)
 */

static int
sft_gcm_set_iv_fixed(sft_gcm_ctx_t *ctx, const OSSL_PARAM *p)
{
    if (p->data_type != OSSL_PARAM_OCTET_STRING || p->data == NULL) {
        return 0;
    }

    if (p->data_size == (size_t) -1) {
        sft_memcpy(ctx->iv, p->data, SFT_GCM_IV_LEN);

    } else if (p->data_size == SFT_GCM_TLS_FIXED_LEN) {
        sft_memcpy(ctx->iv, p->data, SFT_GCM_TLS_FIXED_LEN);

        if (ctx->enc
            && RAND_bytes(ctx->iv + SFT_GCM_TLS_FIXED_LEN,
                          SFT_GCM_IV_LEN - SFT_GCM_TLS_FIXED_LEN) != 1)
        {
            return 0;
        }

    } else {
        return 0;
    }

    ctx->tls_fixed = 1;

    return 1;
}


static int
sft_gcm_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    size_t            sz;
    sft_gcm_ctx_t    *ctx = vctx;
    const OSSL_PARAM  *p;

    if (params == NULL) {
        return 1;
    }

    p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TAG);

    if (p != NULL) {
        if (ctx->enc || p->data_type != OSSL_PARAM_OCTET_STRING
            || p->data == NULL || p->data_size == 0
            || p->data_size > SFT_AES_GCM_TAG_LEN)
        {
            return 0;
        }

        sft_memcpy(ctx->tag, p->data, p->data_size);
        ctx->taglen = p->data_size;
    }

    p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_IVLEN);

    if (p != NULL
        && (!OSSL_PARAM_get_size_t(p, &sz) || sz != SFT_GCM_IV_LEN))
    {
        return 0;
    }

    p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TLS1_AAD);

    if (p != NULL && !sft_gcm_set_tls_aad(ctx, p)) {
        return 0;
    }

    p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED);

    if (p != NULL && !sft_gcm_set_iv_fixed(ctx, p)) {
        return 0;
    }

    return 1;
}


/* integer parameters, whichever of them the caller asks for */

typedef struct {
    const char                 *name;
    size_t                      value;
} sft_gcm_number_t;


static int
sft_gcm_set_numbers(OSSL_PARAM params[], const sft_gcm_number_t *n,
    size_t count)
{
    OSSL_PARAM  *p;

    for ( /* void */ ; count > 0; count--, n++) {
        p = OSSL_PARAM_locate(params, n->name);

        if (p != NULL && !OSSL_PARAM_set_size_t(p, n->value)) {
            return 0;
        }
    }

    return 1;
}


static int
sft_gcm_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    sft_gcm_ctx_t     *ctx = vctx;
    OSSL_PARAM        *p;
    sft_gcm_number_t   numbers[] = {
        { OSSL_CIPHER_PARAM_IVLEN, SFT_GCM_IV_LEN },
        { OSSL_CIPHER_PARAM_KEYLEN, ctx->keylen },
        { OSSL_CIPHER_PARAM_AEAD_TAGLEN, SFT_AES_GCM_TAG_LEN },
        { OSSL_CIPHER_PARAM_AEAD_TLS1_AAD_PAD, SFT_AES_GCM_TAG_LEN },
    };

    if (!sft_gcm_set_numbers(params, numbers, sft_nelems(numbers))) {
        return 0;
    }

    p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TAG);

    if (p != NULL
        && (!ctx->enc || ctx->taglen == 0 || p->data_size == 0
            || p->data_size > ctx->taglen
            || !OSSL_PARAM_set_octet_string(p, ctx->tag, p->data_size)))
    {
        return 0;
    }

    /* SSH: the next packet's IV, of which the caller sees the end */

    p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN);

    if (p != NULL) {
        if (!ctx->tls_fixed || !ctx->key_set || p->data == NULL
            || p->data_size == 0 || p->data_size > SFT_GCM_IV_LEN
            || !OSSL_PARAM_set_octet_string(p, ctx->iv + SFT_GCM_IV_LEN
                                               - p->data_size,
                                            p->data_size))
        {
            return 0;
        }

        sft_gcm_begin_counted(ctx);
    }

    p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IV);

    if (p != NULL && !OSSL_PARAM_set_octet_string(p, ctx->iv, SFT_GCM_IV_LEN))
    {
        return 0;
    }

    p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_UPDATED_IV);

    if (p != NULL && !OSSL_PARAM_set_octet_string(p, ctx->iv, SFT_GCM_IV_LEN))
    {
        return 0;
    }

    return 1;
}


/* what EVP asks of the algorithm itself (evp_cipher_cache_constants()) */

static int
sft_gcm_get_params(OSSL_PARAM params[], size_t keylen)
{
    sft_gcm_number_t  numbers[] = {
        { OSSL_CIPHER_PARAM_MODE, EVP_CIPH_GCM_MODE },
        { OSSL_CIPHER_PARAM_KEYLEN, keylen },
        { OSSL_CIPHER_PARAM_IVLEN, SFT_GCM_IV_LEN },
        { OSSL_CIPHER_PARAM_BLOCK_SIZE, 1 },
        { OSSL_CIPHER_PARAM_AEAD, 1 },
        { OSSL_CIPHER_PARAM_CUSTOM_IV, 1 },
        { OSSL_CIPHER_PARAM_CTS, 0 },
        { OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK, 0 },
        { OSSL_CIPHER_PARAM_HAS_RAND_KEY, 0 },
    };

    return sft_gcm_set_numbers(params, numbers, sft_nelems(numbers));
}


static void *
sft_gcm_newctx(size_t keylen)
{
    sft_gcm_ctx_t  *ctx;

    ctx = OPENSSL_zalloc(sizeof(sft_gcm_ctx_t));

    if (ctx != NULL) {
        ctx->keylen = keylen;
    }

    return ctx;
}


static void
sft_gcm_freectx(void *vctx)
{
    OPENSSL_clear_free(vctx, sizeof(sft_gcm_ctx_t));
}


static void *
sft_gcm_dupctx(void *vctx)
{
    sft_gcm_ctx_t  *ctx;

    ctx = OPENSSL_memdup(vctx, sizeof(sft_gcm_ctx_t));

    if (ctx != NULL && ctx->started) {
        ctx->msg.key = &ctx->key;
    }

    return ctx;
}


static void *
sft_gcm128_newctx(void *provctx)
{
    return sft_gcm_newctx(16);
}


static void *
sft_gcm256_newctx(void *provctx)
{
    return sft_gcm_newctx(32);
}


static int
sft_gcm128_get_params(OSSL_PARAM params[])
{
    return sft_gcm_get_params(params, 16);
}


static int
sft_gcm256_get_params(OSSL_PARAM params[])
{
    return sft_gcm_get_params(params, 32);
}


static const OSSL_PARAM  sft_gcm_gettable[] = {
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_MODE, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_BLOCK_SIZE, NULL),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_AEAD, NULL),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_CUSTOM_IV, NULL),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_CTS, NULL),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK, NULL),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_HAS_RAND_KEY, NULL),
    OSSL_PARAM_END
};

static const OSSL_PARAM  sft_gcm_gettable_ctx[] = {
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_TAGLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD_PAD, NULL),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_IV, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_UPDATED_IV, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN, NULL, 0),
    OSSL_PARAM_END
};

static const OSSL_PARAM  sft_gcm_settable_ctx[] = {
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, NULL),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, NULL, 0),
    OSSL_PARAM_END
};


static const OSSL_PARAM *
sft_gcm_gettable_params(void *provctx)
{
    return sft_gcm_gettable;
}


static const OSSL_PARAM *
sft_gcm_gettable_ctx_params(void *vctx, void *provctx)
{
    return sft_gcm_gettable_ctx;
}


static const OSSL_PARAM *
sft_gcm_settable_ctx_params(void *vctx, void *provctx)
{
    return sft_gcm_settable_ctx;
}


#define sft_gcm_functions(bits)                                               \
    { OSSL_FUNC_CIPHER_NEWCTX, (void (*)(void)) sft_gcm##bits##_newctx },    \
    { OSSL_FUNC_CIPHER_GET_PARAMS,                                           \
      (void (*)(void)) sft_gcm##bits##_get_params },                         \
    { OSSL_FUNC_CIPHER_FREECTX, (void (*)(void)) sft_gcm_freectx },          \
    { OSSL_FUNC_CIPHER_DUPCTX, (void (*)(void)) sft_gcm_dupctx },            \
    { OSSL_FUNC_CIPHER_ENCRYPT_INIT, (void (*)(void)) sft_gcm_einit },       \
    { OSSL_FUNC_CIPHER_DECRYPT_INIT, (void (*)(void)) sft_gcm_dinit },       \
    { OSSL_FUNC_CIPHER_UPDATE, (void (*)(void)) sft_gcm_update },            \
    { OSSL_FUNC_CIPHER_FINAL, (void (*)(void)) sft_gcm_final },              \
    { OSSL_FUNC_CIPHER_CIPHER, (void (*)(void)) sft_gcm_cipher },            \
    { OSSL_FUNC_CIPHER_GET_CTX_PARAMS,                                       \
      (void (*)(void)) sft_gcm_get_ctx_params },                             \
    { OSSL_FUNC_CIPHER_SET_CTX_PARAMS,                                       \
      (void (*)(void)) sft_gcm_set_ctx_params },                             \
    { OSSL_FUNC_CIPHER_GETTABLE_PARAMS,                                      \
      (void (*)(void)) sft_gcm_gettable_params },                            \
    { OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS,                                  \
      (void (*)(void)) sft_gcm_gettable_ctx_params },                        \
    { OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS,                                  \
      (void (*)(void)) sft_gcm_settable_ctx_params },                        \
    { 0, NULL }

static const OSSL_DISPATCH  sft_gcm128_functions[] = { sft_gcm_functions(128) };
static const OSSL_DISPATCH  sft_gcm256_functions[] = { sft_gcm_functions(256) };


static const OSSL_ALGORITHM  sft_gcm_algorithms[] = {
    { "AES-128-GCM:id-aes128-GCM:2.16.840.1.101.3.4.1.6",
      "provider=" SFT_GCM_PROVIDER, sft_gcm128_functions,
      "AES-128-GCM by siftp's asm kernel" },
    { "AES-256-GCM:id-aes256-GCM:2.16.840.1.101.3.4.1.46",
      "provider=" SFT_GCM_PROVIDER, sft_gcm256_functions,
      "AES-256-GCM by siftp's asm kernel" },
    { NULL, NULL, NULL, NULL }
};


static const OSSL_ALGORITHM *
sft_gcm_query(void *provctx, int operation_id, int *no_cache)
{
    *no_cache = 0;

    return (operation_id == OSSL_OP_CIPHER) ? sft_gcm_algorithms : NULL;
}


static const OSSL_DISPATCH  sft_gcm_provider[] = {
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void)) sft_gcm_query },
    { 0, NULL }
};


static int
sft_gcm_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
    const OSSL_DISPATCH **out, void **provctx)
{
    *out = sft_gcm_provider;
    *provctx = (void *) handle;

    return 1;
}


/*
 * At start, where the CPU runs the kernel: the default provider loaded
 * explicitly (loading one provider stops OpenSSL from loading it on
 * demand), this one beside it, and preferred for fetches without a
 * query of their own.
 */

/* at exit, before OpenSSL's own cleanup (registered earlier, runs later) */

static void
sft_ssl_gcm_unload(void)
{
    OSSL_PROVIDER_unload(sft_gcm_providers[1]);
    OSSL_PROVIDER_unload(sft_gcm_providers[0]);
}


void
sft_ssl_gcm_register(void)
{
    if (sft_gcm_impl != NULL) {
        return;
    }

    sft_gcm_impl = sft_aes_gcm_fast();     /* before any fetch can find us */

    if (sft_gcm_impl == NULL) {
        return;
    }

    sft_gcm_providers[0] = OSSL_PROVIDER_load(NULL, "default");

    if (sft_gcm_providers[0] == NULL
        || OSSL_PROVIDER_add_builtin(NULL, SFT_GCM_PROVIDER,
                                     sft_gcm_provider_init) != 1
        || (sft_gcm_providers[1] = OSSL_PROVIDER_load(NULL, SFT_GCM_PROVIDER))
           == NULL
        || EVP_set_default_properties(NULL, "?provider=" SFT_GCM_PROVIDER)
           != 1
        || atexit(sft_ssl_gcm_unload) != 0)
    {
        ERR_clear_error();
    }
}
