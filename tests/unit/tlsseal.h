/* A TLS 1.3 sender for the unit tests: seals records as RFC 8446 5.2 says, with its own secret
 * and sequence number (libcrypto), for tls13 and tlswire to open. */
#ifndef BINDTRACE_TLSSEAL_H
#define BINDTRACE_TLSSEAL_H

#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

#include "tls13.h"

struct sealer {
	uint16_t suite;
	uint8_t secret[48], key[32], iv[12];
	size_t secret_len;
	uint64_t seq;
};

static const char *cipher_of(uint16_t suite, size_t *key_len)
{
	*key_len = suite == TLS13_AES_128_GCM_SHA256 ? 16 : 32;
	return suite == TLS13_AES_128_GCM_SHA256   ? "AES-128-GCM"
	       : suite == TLS13_AES_256_GCM_SHA384 ? "AES-256-GCM"
						   : "ChaCha20-Poly1305";
}

static void sealer_keys(struct sealer *s)
{
	size_t key_len;

	cipher_of(s->suite, &key_len);
	tls13__expand_label(s->suite, s->secret, s->secret_len, "key", s->key, key_len);
	tls13__expand_label(s->suite, s->secret, s->secret_len, "iv", s->iv, 12);
}

/* Appends one record of type carrying len bytes of plain (padded with pad zeros) to out. */
static size_t seal(struct sealer *s, uint8_t type, const uint8_t *plain, size_t len, size_t pad,
		   uint8_t *out)
{
	size_t key_len, inner = len + 1 + pad, ct = inner + TLS13_TAG_LEN;
	EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, cipher_of(s->suite, &key_len), NULL);
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	uint8_t nonce[12], *body = out + TLS13_HEADER_LEN;
	int n;

	memcpy(nonce, s->iv, 12);
	for (int i = 0; i < 8; i++)
		nonce[11 - i] ^= (uint8_t)(s->seq >> (8 * i));
	out[0] = TLS13_TYPE_APPLICATION_DATA, out[1] = 3, out[2] = 3;
	out[3] = (uint8_t)(ct >> 8), out[4] = (uint8_t)ct;
	memcpy(body, plain, len);
	body[len] = type;
	memset(body + len + 1, 0, pad);
	EVP_EncryptInit_ex2(ctx, c, s->key, nonce, NULL);
	EVP_EncryptUpdate(ctx, NULL, &n, out, TLS13_HEADER_LEN);
	EVP_EncryptUpdate(ctx, body, &n, body, (int)inner);
	EVP_EncryptFinal_ex(ctx, body + n, &n);
	EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, TLS13_TAG_LEN, body + inner);
	EVP_CIPHER_CTX_free(ctx);
	EVP_CIPHER_free(c);
	s->seq++;
	return TLS13_HEADER_LEN + ct;
}

#endif
