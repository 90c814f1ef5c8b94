/*
 * sft_event_openssl_records.c -- the write side of a TLS connection: the
 * BIO every TLS connection writes through.
 *
 * During the handshake it writes through to the socket. Afterwards the
 * records of one large sft_ssl_send() are gathered and go out
 * SFT_SSL_WBUF_SIZE a write(2), not a write(2) per 16 KiB record.
 *
 * Connections made with SFT_SSL_SEAL (FTPS data connections) go further.
 * OpenSSL hands the write direction's key (TLS 1.3's application traffic
 * key, TLS 1.2's from ChangeCipherSpec on) to a BIO that says it can do
 * kernel TLS (SSL_OP_ENABLE_KTLS, see tls13_change_cipher_state() and
 * tls1_change_cipher_state()) and from then on writes plaintext with
 * each record's content type. When the kernel has kTLS, the key goes to
 * it through OpenSSL's own socket BIO. When it has not, this BIO seals
 * the records itself: each plaintext is encrypted straight from the
 * caller's buffer into the output buffer, header and tag around it, so a
 * 1 GiB download is neither copied into OpenSSL's record buffer nor from
 * there into the gathering buffer, and records still go out many a
 * write(2).
 *
 * The nonce is the traffic IV XOR the record sequence (RFC 8446 5.3,
 * RFC 7905), or TLS 1.2 AES-GCM's salt and a counter sent in the record
 * (RFC 5288), each starting where OpenSSL's stood. AES-GCM records are
 * sealed by the asm kernel (asm/sft_aes_gcm.h) where the CPU runs it,
 * about two and a half times OpenSSL 3.0's speed on VAES CPUs; the rest
 * by OpenSSL's EVP. A TLS 1.3 KeyUpdate
 * would need the next traffic secret, which OpenSSL does not hand on: the
 * connection fails rather than write with a stale key (the same limit as
 * kTLS in OpenSSL 3.0). Data connections are short next to AES-GCM's
 * 2^24.5 record limit.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_proto.h>
#include <sft_event_openssl.h>
#include <sft_aes_gcm.h>

#include <openssl/bio.h>
#include <openssl/evp.h>

#ifndef OPENSSL_NO_KTLS
#include <linux/tls.h>
#endif


/* OpenSSL's BIO controls for kTLS (include/internal/bio.h, 3.0) */
#define SFT_BIO_CTRL_SET_KTLS                   72
#define SFT_BIO_CTRL_SET_KTLS_TX_SEND_CTRL_MSG  74
#define SFT_BIO_CTRL_CLEAR_KTLS_TX_CTRL_MSG     75

#define SFT_TLS_HEADER_LEN        5
#define SFT_TLS_TAG_LEN           16
#define SFT_TLS_IV_LEN            12
#define SFT_TLS_RT_APPLICATION    23
#define SFT_TLS_RT_HANDSHAKE      22
#define SFT_TLS_HS_KEY_UPDATE     24

/*
 * a sealed record: header, plaintext and tag, and TLS 1.3's inner content
 * type or TLS 1.2 AES-GCM's explicit nonce
 */
#define SFT_TLS_SEALED_LEN(s, n)                                              \
    (SFT_TLS_HEADER_LEN + (s)->extra + (n) + SFT_TLS_TAG_LEN)


struct sft_ssl_sealer_s {
    EVP_CIPHER_CTX             *ctx;          /* or, for AES-GCM: */
    const sft_aes_gcm_impl_t   *gcm_impl;
    sft_aes_gcm_key_t           gcm;
    u_char                      iv[SFT_TLS_IV_LEN];
    uint64_t                    seq;
    size_t                      extra;        /* bytes beside the plaintext */
    unsigned                    tls12:1;
    unsigned                    explicit_iv:1; /* TLS 1.2 AES-GCM */
    BIO                        *kernel;       /* kTLS: OpenSSL's socket BIO */
    int                         ctrl_type;    /* the next write's, 0: data */
};


#ifndef OPENSSL_NO_KTLS

/* where the parts of the key <linux/tls.h> describes are, per cipher */

typedef struct {
    uint16_t                    type;         /* TLS_CIPHER_*, 0: the end */
    unsigned                    aes_gcm;
    const EVP_CIPHER         *(*cipher)(void);
    size_t                      key;
    size_t                      key_len;
    size_t                      salt;
    size_t                      salt_len;     /* ChaCha20: 0 */
    size_t                      iv;
    size_t                      iv_len;
    size_t                      rec_seq;
} sft_ssl_seal_cipher_t;

#define sft_ssl_seal_cipher(id, st, gcm, evp)                                 \
    { id, gcm, evp, offsetof(st, key), sizeof(((st *) 0)->key),               \
      offsetof(st, salt), sizeof(((st *) 0)->salt),                           \
      offsetof(st, iv), sizeof(((st *) 0)->iv), offsetof(st, rec_seq) }

static sft_ssl_seal_cipher_t  sft_ssl_seal_ciphers[] = {
#ifdef TLS_CIPHER_AES_GCM_128
    sft_ssl_seal_cipher(TLS_CIPHER_AES_GCM_128,
                        struct tls12_crypto_info_aes_gcm_128, 1,
                        EVP_aes_128_gcm),
#endif
#ifdef TLS_CIPHER_AES_GCM_256
    sft_ssl_seal_cipher(TLS_CIPHER_AES_GCM_256,
                        struct tls12_crypto_info_aes_gcm_256, 1,
                        EVP_aes_256_gcm),
#endif
#ifdef TLS_CIPHER_CHACHA20_POLY1305
    sft_ssl_seal_cipher(TLS_CIPHER_CHACHA20_POLY1305,
                        struct tls12_crypto_info_chacha20_poly1305, 0,
                        EVP_chacha20_poly1305),
#endif
    { 0, 0, NULL, 0, 0, 0, 0, 0, 0, 0 }
};

#endif


static int sft_ssl_wbio_create(BIO *b);
static int sft_ssl_wbio_write(BIO *b, const char *data, int len);
static long sft_ssl_wbio_ctrl(BIO *b, int cmd, long num, void *ptr);
static int sft_ssl_seal_write(sft_ssl_connection_t *sc, BIO *b,
    const u_char *data, int len);
static sft_int_t sft_ssl_seal_record(sft_ssl_sealer_t *s, int type,
    const u_char *in, size_t len, u_char *out);
static void sft_ssl_seal_gcm(sft_ssl_sealer_t *s, u_char inner,
    const u_char *nonce, const u_char *aad, size_t alen, const u_char *in,
    size_t len, u_char *ct);
static long sft_ssl_take_key(sft_ssl_connection_t *sc, long is_tx,
    void *info);
static sft_int_t sft_ssl_wbuf_alloc(sft_ssl_connection_t *sc);


static BIO_METHOD  *sft_ssl_wbio_method;


sft_int_t
sft_ssl_records_init(sft_connection_t *c, sft_uint_t seal)
{
    BIO                   *bio;
    BIO_METHOD            *m;
    sft_ssl_connection_t  *sc;

    sc = c->ssl;

    if (sft_ssl_wbio_method == NULL) {
        m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                         "siftp TLS records");

        if (m == NULL
            || BIO_meth_set_write(m, sft_ssl_wbio_write) != 1
            || BIO_meth_set_ctrl(m, sft_ssl_wbio_ctrl) != 1
            || BIO_meth_set_create(m, sft_ssl_wbio_create) != 1)
        {
            BIO_meth_free(m);
            return SFT_ERROR;
        }

        sft_ssl_wbio_method = m;
    }

    bio = BIO_new(sft_ssl_wbio_method);
    if (bio == NULL) {
        return SFT_ERROR;
    }

    sc->fd = c->fd;
    sc->may_seal = seal ? 1 : 0;

    BIO_set_data(bio, sc);
    BIO_set_init(bio, 1);

    SSL_set0_wbio(sc->connection, bio);

    return SFT_OK;
}


sft_uint_t
sft_ssl_sealed_by(sft_connection_t *c)
{
    sft_ssl_connection_t  *sc;

    sc = c->ssl;

    if (sc == NULL || sc->sealer == NULL) {
        return SFT_SSL_SEALED_OPENSSL;
    }

    return sc->sealer->kernel ? SFT_SSL_SEALED_KERNEL : SFT_SSL_SEALED_SIFTPD;
}


void
sft_ssl_records_free(sft_ssl_connection_t *sc)
{
    if (sc->sealer) {
        EVP_CIPHER_CTX_free(sc->sealer->ctx);
        BIO_free(sc->sealer->kernel);
        OPENSSL_clear_free(sc->sealer, sizeof(sft_ssl_sealer_t));
        sc->sealer = NULL;
    }

    free(sc->wbuf);
    sc->wbuf = NULL;
}


/* SFT_OK: nothing gathered is left; SFT_ERROR keeps write()'s errno */

sft_int_t
sft_ssl_flush(sft_ssl_connection_t *sc)
{
    ssize_t  n;

    while (sc->wbuf_pos < sc->wbuf_len) {
        n = write(sc->fd, sc->wbuf + sc->wbuf_pos,
                  sc->wbuf_len - sc->wbuf_pos);

        if (n == -1) {
            if (sft_errno == EINTR) {
                continue;
            }

            if (sft_errno == EAGAIN || sft_errno == EWOULDBLOCK) {
                return SFT_AGAIN;
            }

            return SFT_ERROR;
        }

        sc->wbuf_pos += n;
    }

    sc->wbuf_pos = 0;
    sc->wbuf_len = 0;

    return SFT_OK;
}


static int
sft_ssl_wbio_create(BIO *b)
{
    BIO_set_init(b, 0);
    BIO_set_data(b, NULL);

    return 1;
}


/* 1: flushed, -1: retry or error (write()'s errno kept) */

static int
sft_ssl_wbio_flush(BIO *b, sft_ssl_connection_t *sc)
{
    switch (sft_ssl_flush(sc)) {

    case SFT_OK:
        return 1;

    case SFT_AGAIN:
        BIO_set_retry_write(b);
        return -1;

    default: /* SFT_ERROR */
        return -1;
    }
}


static int
sft_ssl_wbio_write(BIO *b, const char *data, int len)
{
    ssize_t                n;
    sft_ssl_connection_t  *sc;

    sc = BIO_get_data(b);

    BIO_clear_retry_flags(b);

    if (sc->sealer) {
        if (sc->sealer->kernel) {
            n = BIO_write(sc->sealer->kernel, data, len);

            if (n <= 0 && BIO_should_retry(sc->sealer->kernel)) {
                BIO_set_retry_write(b);
            }

            return (int) n;
        }

        return sft_ssl_seal_write(sc, b, (const u_char *) data, len);
    }

    if (len <= 0) {
        return 0;
    }

    if (sc->gather && sc->wbuf == NULL) {
        (void) sft_ssl_wbuf_alloc(sc);      /* none: written through */
    }

    if (sc->wbuf_len) {

        if (sc->gather && (size_t) len <= SFT_SSL_WBUF_SIZE - sc->wbuf_len) {
            sft_memcpy(sc->wbuf + sc->wbuf_len, data, len);
            sc->wbuf_len += len;
            return len;
        }

        if (sft_ssl_wbio_flush(b, sc) != 1) {
            return -1;
        }
    }

    if (sc->gather && sc->wbuf && (size_t) len < SFT_SSL_WBUF_SIZE) {
        sft_memcpy(sc->wbuf, data, len);
        sc->wbuf_len = len;
        return len;
    }

    for ( ;; ) {
        n = write(sc->fd, data, len);

        if (n >= 0) {
            return (int) n;
        }

        if (sft_errno == EINTR) {
            continue;
        }

        if (sft_errno == EAGAIN || sft_errno == EWOULDBLOCK) {
            BIO_set_retry_write(b);
        }

        return -1;
    }
}


/*
 * One record's plaintext, sealed into the output buffer: all of it or,
 * with nothing sealed, a retry. A sealed record is sent: it has used its
 * sequence number. Outside a large send what waits is flushed first and
 * the record at once; if the socket is full then, the record waits for
 * the next send or for sft_ssl_shutdown(), which flush first.
 */

static int
sft_ssl_seal_write(sft_ssl_connection_t *sc, BIO *b, const u_char *data,
    int len)
{
    int                type;
    size_t             need;
    sft_ssl_sealer_t  *s;

    s = sc->sealer;

    if (len < 0 || len > SSL3_RT_MAX_PLAIN_LENGTH) {
        return -1;
    }

    type = s->ctrl_type ? s->ctrl_type : SFT_TLS_RT_APPLICATION;

    if (!s->tls12 && type == SFT_TLS_RT_HANDSHAKE && len > 0
        && data[0] == SFT_TLS_HS_KEY_UPDATE)
    {
        /* the next records would need the next traffic secret */
        ERR_raise_data(ERR_LIB_SSL, SSL_R_BAD_KEY_UPDATE,
                       "TLS key update on a connection whose records "
                       "siftpd seals");
        return -1;
    }

    need = SFT_TLS_SEALED_LEN(s, (size_t) len);

    if ((!sc->gather || sc->wbuf_len + need > SFT_SSL_WBUF_SIZE)
        && sc->wbuf_pos < sc->wbuf_len
        && sft_ssl_wbio_flush(b, sc) != 1)
    {
        return -1;
    }

    if (sc->wbuf == NULL && sft_ssl_wbuf_alloc(sc) != SFT_OK) {
        return -1;
    }

    if (sft_ssl_seal_record(s, type, data, len, sc->wbuf + sc->wbuf_len)
        != SFT_OK)
    {
        return -1;
    }

    sc->wbuf_len += need;
    s->ctrl_type = 0;

    if (!sc->gather) {
        /* SFT_AGAIN: the record waits in the buffer */
        if (sft_ssl_flush(sc) == SFT_ERROR) {
            return -1;
        }
    }

    return len;
}


/*
 * TLS 1.3 (RFC 8446 5.2): every record says application data, the real
 * type follows the plaintext inside; the header is the additional data.
 * TLS 1.2 (RFC 5288, 7905): the real type; the additional data is the
 * sequence, the type, the version and the plaintext's length; AES-GCM
 * sends the nonce's last 8 bytes before the ciphertext (a counter that
 * starts where OpenSSL's stood, as kernel TLS does).
 */

static sft_int_t
sft_ssl_seal_record(sft_ssl_sealer_t *s, int type, const u_char *in,
    size_t len, u_char *out)
{
    int      n, alen;
    size_t   i, clen;
    u_char   inner, *ct, nonce[SFT_TLS_IV_LEN], aad[13];

    if (s->seq == UINT64_MAX) {
        return SFT_ERROR;
    }

    clen = s->extra + len + SFT_TLS_TAG_LEN;

    out[0] = (u_char) (s->tls12 ? type : SFT_TLS_RT_APPLICATION);
    out[1] = 0x03;
    out[2] = 0x03;
    out[3] = (u_char) (clen >> 8);
    out[4] = (u_char) clen;

    sft_memcpy(nonce, s->iv, SFT_TLS_IV_LEN);

    if (s->explicit_iv) {
        sft_memcpy(out + SFT_TLS_HEADER_LEN, nonce + 4, 8);

        sft_aes_gcm_count_nonce(s->iv);           /* the next record's */

    } else {
        for (i = 0; i < 8; i++) {
            nonce[SFT_TLS_IV_LEN - 1 - i] ^= (u_char) (s->seq >> (8 * i));
        }
    }

    if (s->tls12) {
        for (i = 0; i < 8; i++) {
            aad[i] = (u_char) (s->seq >> (56 - 8 * i));
        }

        aad[8] = (u_char) type;
        aad[9] = 0x03;
        aad[10] = 0x03;
        aad[11] = (u_char) (len >> 8);
        aad[12] = (u_char) len;
        alen = 13;

    } else {
        sft_memcpy(aad, out, SFT_TLS_HEADER_LEN);
        alen = SFT_TLS_HEADER_LEN;
    }

    ct = out + SFT_TLS_HEADER_LEN + (s->explicit_iv ? 8 : 0);
    inner = (u_char) type;

    if (s->gcm_impl) {
        sft_ssl_seal_gcm(s, inner, nonce, aad, (size_t) alen, in, len, ct);
        s->seq++;

        return SFT_OK;
    }

    if (EVP_EncryptInit_ex(s->ctx, NULL, NULL, NULL, nonce) != 1
        || EVP_EncryptUpdate(s->ctx, NULL, &n, aad, alen) != 1
        || (len && EVP_EncryptUpdate(s->ctx, ct, &n, in, (int) len) != 1)
        || (!s->tls12
            && EVP_EncryptUpdate(s->ctx, ct + len, &n, &inner, 1) != 1)
        || EVP_EncryptFinal_ex(s->ctx, out + SFT_TLS_HEADER_LEN + clen
                                       - SFT_TLS_TAG_LEN, &n) != 1
        || EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_GET_TAG, SFT_TLS_TAG_LEN,
                               out + SFT_TLS_HEADER_LEN + clen
                               - SFT_TLS_TAG_LEN) != 1)
    {
        return SFT_ERROR;
    }

    s->seq++;

    return SFT_OK;
}


/* AES-GCM by the asm kernel, straight from the caller's buffer */

static void
sft_ssl_seal_gcm(sft_ssl_sealer_t *s, u_char inner, const u_char *nonce,
    const u_char *aad, size_t alen, const u_char *in, size_t len, u_char *ct)
{
    sft_aes_gcm_t  g;

    sft_aes_gcm_start(&g, s->gcm_impl, &s->gcm, nonce, aad, alen);
    sft_aes_gcm_encrypt(&g, in, ct, len);

    if (!s->tls12) {
        sft_aes_gcm_encrypt(&g, &inner, ct + len++, 1);
    }

    sft_aes_gcm_finish(&g, ct + len);
}


static long
sft_ssl_wbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    sft_ssl_connection_t  *sc;

    sc = BIO_get_data(b);

    switch (cmd) {

    case BIO_CTRL_FLUSH:
        BIO_clear_retry_flags(b);

        if (sc->sealer && sc->sealer->kernel) {
            return BIO_flush(sc->sealer->kernel);
        }

        return sft_ssl_wbio_flush(b, sc);

    case BIO_CTRL_WPENDING:
        return (long) (sc->wbuf_len - sc->wbuf_pos);

    case BIO_C_GET_FD:
        if (ptr != NULL) {
            *(int *) ptr = sc->fd;
        }

        return sc->fd;

    case BIO_CTRL_GET_CLOSE:
        return BIO_NOCLOSE;

    case BIO_CTRL_SET_CLOSE:
    case BIO_CTRL_DUP:
        return 1;

#ifndef OPENSSL_NO_KTLS

    case BIO_CTRL_GET_KTLS_SEND:
        return sc->sealer != NULL;

    case SFT_BIO_CTRL_SET_KTLS:
        return sft_ssl_take_key(sc, num, ptr);

    case SFT_BIO_CTRL_SET_KTLS_TX_SEND_CTRL_MSG:
    case SFT_BIO_CTRL_CLEAR_KTLS_TX_CTRL_MSG:
        if (sc->sealer == NULL) {
            return 0;
        }

        if (sc->sealer->kernel) {
            return BIO_ctrl(sc->sealer->kernel, cmd, num, ptr);
        }

        sc->sealer->ctrl_type = (cmd == SFT_BIO_CTRL_CLEAR_KTLS_TX_CTRL_MSG)
                                ? 0 : (int) num;
        return 0;

#endif

    default:
        return 0;
    }
}


/*
 * OpenSSL offers the write direction's traffic key (a struct of the
 * kernel's <linux/tls.h>). 1: taken, by the kernel or by this BIO;
 * 0: OpenSSL goes on sealing records itself.
 */

static long
sft_ssl_take_key(sft_ssl_connection_t *sc, long is_tx, void *info)
{
#ifndef OPENSSL_NO_KTLS
    sft_uint_t                i;
    const u_char             *rec_seq;
    sft_ssl_sealer_t         *s;
    struct tls_crypto_info   *ci;
    sft_ssl_seal_cipher_t    *c;

    ci = info;

    if (!is_tx || !sc->may_seal || sc->sealer != NULL || ci == NULL
        || sc->wbuf_pos < sc->wbuf_len)
    {
        return 0;
    }

    s = OPENSSL_zalloc(sizeof(sft_ssl_sealer_t));
    if (s == NULL) {
        return 0;
    }

    /* the kernel's own kTLS first, through OpenSSL's socket BIO */

    s->kernel = BIO_new_socket(sc->fd, BIO_NOCLOSE);

    if (s->kernel != NULL
        && BIO_ctrl(s->kernel, SFT_BIO_CTRL_SET_KTLS, 1, info) > 0)
    {
        sc->sealer = s;
        sc->ktls_send = 1;
        return 1;
    }

    BIO_free(s->kernel);
    s->kernel = NULL;

    if (ci->version != TLS_1_3_VERSION && ci->version != TLS_1_2_VERSION) {
        goto decline;
    }

    for (c = sft_ssl_seal_ciphers; c->type != 0; c++) {
        if (c->type == ci->cipher_type) {
            break;
        }
    }

    if (c->type == 0 || c->salt_len + c->iv_len != SFT_TLS_IV_LEN) {
        goto decline;
    }

    /* the nonce's base: AES-GCM's salt and IV, ChaCha20's IV */

    sft_memcpy(s->iv, (u_char *) info + c->salt, c->salt_len);
    sft_memcpy(s->iv + c->salt_len, (u_char *) info + c->iv, c->iv_len);

    rec_seq = (u_char *) info + c->rec_seq;

    s->tls12 = (ci->version == TLS_1_2_VERSION);
    s->explicit_iv = (s->tls12 && c->salt_len != 0);
    s->extra = s->tls12 ? (s->explicit_iv ? 8 : 0) : 1;

    s->seq = 0;

    for (i = 0; i < 8; i++) {
        s->seq = (s->seq << 8) | rec_seq[i];
    }

    s->gcm_impl = c->aes_gcm ? sft_aes_gcm_fast() : NULL;

    if (s->gcm_impl != NULL) {
        if (sft_aes_gcm_key(&s->gcm, (u_char *) info + c->key, c->key_len)
            != 0)
        {
            goto decline;
        }

        sc->sealer = s;

        return 1;
    }

    s->ctx = EVP_CIPHER_CTX_new();

    if (s->ctx == NULL
        || (size_t) EVP_CIPHER_get_key_length(c->cipher()) != c->key_len
        || EVP_EncryptInit_ex(s->ctx, c->cipher(), NULL,
                              (u_char *) info + c->key, s->iv) != 1)
    {
        EVP_CIPHER_CTX_free(s->ctx);
        goto decline;
    }

    sc->sealer = s;

    return 1;

decline:

    OPENSSL_clear_free(s, sizeof(sft_ssl_sealer_t));
    ERR_clear_error();

    return 0;

#else
    (void) sc;
    (void) is_tx;
    (void) info;

    return 0;
#endif
}


static sft_int_t
sft_ssl_wbuf_alloc(sft_ssl_connection_t *sc)
{
    sc->wbuf = malloc(SFT_SSL_WBUF_SIZE);

    return sc->wbuf ? SFT_OK : SFT_ERROR;
}
