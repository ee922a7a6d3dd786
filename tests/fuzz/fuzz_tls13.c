/* libFuzzer target: the TLS 1.3 record layer (user/tls13.c). Byte 0 picks the piece size and
 * whether pieces are lost; byte 1 whether the rest is taken as is (the wire, unauthenticated:
 * framing and the search for a header) or as a script of records sealed here under the stream's
 * key ([type][len16][bytes]: encrypted records that open, with the fuzzer's own lengths, inner
 * types, padding and KeyUpdates, between the raw bytes). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "tls13.h"

volatile size_t fuzz_sink;

static const uint8_t secret[32] = {
	1,  2,	3,  4,	5,  6,	7,  8,	9,  10, 11, 12, 13, 14, 15, 16,
	17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32
};

static void on_record(void *ctx, const struct tls13_record *r)
{
	(void)ctx;
	for (size_t i = 0; i < r->len; i++)
		fuzz_sink += r->plain[i];
	fuzz_sink += r->type + r->seq + r->offset;
}

/* Seals len bytes of plain as record seq under key/iv into out (room for a whole record). */
static size_t seal(const uint8_t *key, const uint8_t *iv, uint64_t seq, const uint8_t *plain,
		   size_t len, uint8_t *out)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	uint8_t nonce[12];
	size_t ct = len + TLS13_TAG_LEN;
	int n;

	memcpy(nonce, iv, 12);
	for (int i = 0; i < 8; i++)
		nonce[11 - i] ^= (uint8_t)(seq >> (8 * i));
	out[0] = TLS13_TYPE_APPLICATION_DATA, out[1] = 3, out[2] = 3;
	out[3] = (uint8_t)(ct >> 8), out[4] = (uint8_t)ct;
	memcpy(out + 5, plain, len);
	EVP_EncryptInit_ex2(ctx, EVP_aes_128_gcm(), key, nonce, NULL);
	EVP_EncryptUpdate(ctx, NULL, &n, out, 5);
	EVP_EncryptUpdate(ctx, out + 5, &n, out + 5, (int)len);
	EVP_EncryptFinal_ex(ctx, out + 5 + n, &n);
	EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, TLS13_TAG_LEN, out + 5 + len);
	EVP_CIPHER_CTX_free(ctx);
	return 5 + ct;
}

/* The script's wire: sealed records (type 0: raw bytes) at sequence numbers from 0. */
static uint8_t *build_wire(const uint8_t *data, size_t size, size_t *out_len)
{
	/* At most 21 bytes more than the 3 of each script entry: 8 times the script. */
	uint8_t key[16], iv[12], *wire = malloc(size * 8 + 64);
	size_t n = 0, o = 0;
	uint64_t seq = 0;

	if (!wire)
		return NULL;
	tls13__expand_label(TLS13_AES_128_GCM_SHA256, secret, 32, "key", key, 16);
	tls13__expand_label(TLS13_AES_128_GCM_SHA256, secret, 32, "iv", iv, 12);
	while (o + 3 <= size) {
		uint8_t type = data[o];
		size_t len = (size_t)data[o + 1] << 8 | data[o + 2];

		o += 3;
		if (len > size - o)
			len = size - o;
		if (len > TLS13_MAX_PLAINTEXT)
			len = TLS13_MAX_PLAINTEXT;
		if (!type) {
			memcpy(wire + n, data + o, len);
			n += len;
		} else {
			/* The inner plaintext is the script's bytes as they are: its last byte
			 * is the inner type, zeros before it padding. */
			n += seal(key, iv, seq++, data + o, len, wire + n);
		}
		o += len;
	}
	*out_len = n;
	return wire;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls13_stream *s;
	uint8_t *wire = NULL;
	size_t len, piece;
	uint8_t mode, how;

	if (size < 2)
		return 0;
	mode = data[0], how = data[1];
	data += 2, size -= 2;
	if (how & 1) {
		wire = build_wire(data, size, &len);
		if (!wire)
			return 0;
	} else {
		len = size;
	}
	s = tls13_stream__new(TLS13_AES_128_GCM_SHA256, secret, 32, how >> 1);
	if (!s) {
		free(wire);
		return 0;
	}
	piece = (mode & 0x7f) ? (size_t)(mode & 0x7f) * 37 : len;
	for (size_t o = 0, k = 0; o < len; o += piece, k++) {
		size_t n = len - o < piece ? len - o : piece;

		if ((mode & 0x80) && k % 5 == 2)
			tls13_stream__lost(s, n);
		else
			tls13_stream__feed(s, (wire ? wire : data) + o, n, on_record, NULL);
	}
	tls13_stream__free(s);
	free(wire);
	return 0;
}
