/* TLS 1.3 record decryption of one stream direction (see tls13.h): the record layer here,
 * HKDF and the AEAD from libcrypto. */
#include "tls13.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#define IV_LEN 12

struct tls13_stream {
	uint16_t suite;
	const EVP_CIPHER *cipher;
	EVP_CIPHER_CTX *ctx;
	size_t key_len, secret_len;
	uint8_t secret[TLS13_MAX_SECRET];
	uint8_t key[32], iv[IV_LEN];

	uint64_t seq;	/* the next record's, once locked; else the hint */
	bool locked;	/* a record authenticated at seq - 1 */
	bool searching; /* after lost bytes: looking for a record header */
	bool given_up;	/* TLS13_GIVE_UP records in a row did not open: not this key's stream */
	unsigned failed_in_a_row;
	uint64_t offset; /* stream offset of buf[0] */
	size_t have;	 /* bytes in buf */
	/* One record, or two while searching (a candidate header may sit near the end of a
	 * record-sized window). */
	uint8_t buf[2 * TLS13_MAX_RECORD];
	uint8_t plain[TLS13_MAX_CIPHERTEXT];
	struct tls13_stats stats;
};

static int suite_params(uint16_t suite, const char **digest, const char **cipher, size_t *key_len,
			size_t *hash_len)
{
	switch (suite) {
	case TLS13_AES_128_GCM_SHA256:
		*digest = "SHA256", *cipher = "AES-128-GCM", *key_len = 16, *hash_len = 32;
		return 0;
	case TLS13_AES_256_GCM_SHA384:
		*digest = "SHA384", *cipher = "AES-256-GCM", *key_len = 32, *hash_len = 48;
		return 0;
	case TLS13_CHACHA20_POLY1305_SHA256:
		*digest = "SHA256", *cipher = "ChaCha20-Poly1305", *key_len = 32, *hash_len = 32;
		return 0;
	}
	return -EINVAL;
}

int tls13__expand_label(uint16_t suite, const uint8_t *secret, size_t secret_len, const char *label,
			uint8_t *out, size_t out_len)
{
	const char *digest, *cipher;
	size_t key_len, hash_len, label_len = strlen(label), info_len;
	uint8_t info[2 + 1 + 255 + 1];
	OSSL_PARAM params[5], *p = params;
	int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
	EVP_KDF_CTX *kctx = NULL;
	EVP_KDF *kdf = NULL;
	int err = -ENOTSUP;

	if (suite_params(suite, &digest, &cipher, &key_len, &hash_len) || secret_len != hash_len ||
	    out_len > 255 * hash_len || out_len > UINT16_MAX || 6 + label_len > 255)
		return -EINVAL;
	/* struct HkdfLabel: uint16 length, opaque label<7..255> = "tls13 " + label, context<0..255>. */
	info[0] = (uint8_t)(out_len >> 8);
	info[1] = (uint8_t)out_len;
	info[2] = (uint8_t)(6 + label_len);
	memcpy(info + 3, "tls13 ", 6);
	memcpy(info + 9, label, label_len);
	info[9 + label_len] = 0;
	info_len = 10 + label_len;

	kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	if (!kdf)
		goto cleanup;
	kctx = EVP_KDF_CTX_new(kdf);
	if (!kctx)
		goto cleanup;
	*p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)digest, 0);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, secret_len);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, info_len);
	*p = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(kctx, out, out_len, params) > 0)
		err = 0;
cleanup:
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	return err;
}

/* The traffic key and IV of the current secret. */
static int derive_keys(struct tls13_stream *s)
{
	int err;

	err = tls13__expand_label(s->suite, s->secret, s->secret_len, "key", s->key, s->key_len);
	if (!err)
		err = tls13__expand_label(s->suite, s->secret, s->secret_len, "iv", s->iv, IV_LEN);
	if (!err && EVP_DecryptInit_ex2(s->ctx, s->cipher, s->key, NULL, NULL) <= 0)
		err = -ENOTSUP;
	return err;
}

struct tls13_stream *tls13_stream__new(uint16_t suite, const uint8_t *secret, size_t secret_len,
				       uint64_t seq_hint)
{
	const char *digest, *cipher_name;
	size_t key_len, hash_len;
	struct tls13_stream *s;
	int err;

	if (suite_params(suite, &digest, &cipher_name, &key_len, &hash_len) ||
	    secret_len != hash_len) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->suite = suite;
	s->key_len = key_len;
	s->secret_len = secret_len;
	memcpy(s->secret, secret, secret_len);
	s->seq = seq_hint;
	s->cipher = EVP_CIPHER_fetch(NULL, cipher_name, NULL);
	s->ctx = EVP_CIPHER_CTX_new();
	err = !s->cipher || !s->ctx ? -ENOTSUP : derive_keys(s);
	if (err) {
		tls13_stream__free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

void tls13_stream__free(struct tls13_stream *s)
{
	if (!s)
		return;
	EVP_CIPHER_CTX_free(s->ctx);
	EVP_CIPHER_free((EVP_CIPHER *)s->cipher);
	OPENSSL_cleanse(s->secret, sizeof(s->secret));
	OPENSSL_cleanse(s->key, sizeof(s->key));
	free(s);
}

/* Opens the record at rec (header included, wire_len bytes) as sequence number seq: the
 * plaintext length (inner type included), or -1 when it does not authenticate. */
static long open_record(struct tls13_stream *s, const uint8_t *rec, size_t wire_len, uint64_t seq)
{
	size_t ct_len = wire_len - TLS13_HEADER_LEN - TLS13_TAG_LEN;
	uint8_t nonce[IV_LEN];
	int n = 0, m = 0, i;

	memcpy(nonce, s->iv, IV_LEN);
	for (i = 0; i < 8; i++)
		nonce[IV_LEN - 1 - i] ^= (uint8_t)(seq >> (8 * i));
	if (EVP_DecryptInit_ex2(s->ctx, NULL, NULL, nonce, NULL) <= 0 ||
	    EVP_DecryptUpdate(s->ctx, NULL, &n, rec, TLS13_HEADER_LEN) <= 0 ||
	    EVP_DecryptUpdate(s->ctx, s->plain, &n, rec + TLS13_HEADER_LEN, (int)ct_len) <= 0 ||
	    EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_SET_TAG, TLS13_TAG_LEN,
				(void *)(rec + TLS13_HEADER_LEN + ct_len)) <= 0 ||
	    EVP_DecryptFinal_ex(s->ctx, s->plain + n, &m) <= 0)
		return -1;
	return (long)n + m;
}

/* A header that can start a record: its length within RFC 8446's cap; encrypted records (outer
 * type 23) at least a tag and an inner type long. */
static bool header_plausible(const uint8_t *h, bool encrypted_only)
{
	size_t len = (size_t)h[3] << 8 | h[4];

	if (h[1] != 3 || h[2] > 4)
		return false;
	if (h[0] == TLS13_TYPE_APPLICATION_DATA)
		return h[2] == 3 && len >= TLS13_TAG_LEN + 1 && len <= TLS13_MAX_CIPHERTEXT;
	if (encrypted_only)
		return false;
	return h[0] >= TLS13_TYPE_CHANGE_CIPHER_SPEC && h[0] <= TLS13_TYPE_HANDSHAKE && len &&
	       len <= TLS13_MAX_PLAINTEXT;
}

/* The next secret after a KeyUpdate (RFC 8446 7.2). */
static void key_update(struct tls13_stream *s)
{
	uint8_t next[TLS13_MAX_SECRET];

	if (tls13__expand_label(s->suite, s->secret, s->secret_len, "traffic upd", next,
				s->secret_len))
		return;
	memcpy(s->secret, next, s->secret_len);
	OPENSSL_cleanse(next, sizeof(next));
	if (derive_keys(s))
		return;
	s->seq = 0;
	s->stats.key_updates++;
}

/* Delivers an opened record: strips the zero padding to find the inner type. */
static void deliver(struct tls13_stream *s, long n, uint64_t seq, uint64_t offset, size_t wire_len,
		    tls13_record_fn fn, void *ctx)
{
	struct tls13_record r = { .seq = seq, .offset = offset, .wire_len = (uint32_t)wire_len };
	bool update;

	while (n > 0 && !s->plain[n - 1])
		n--;
	if (n <= 0) {
		s->stats.bad_inner++;
		return;
	}
	r.type = s->plain[n - 1];
	r.plain = s->plain;
	r.len = (size_t)n - 1;
	s->stats.records++;
	s->stats.plain_bytes += r.len;
	update = r.type == TLS13_TYPE_HANDSHAKE && r.len >= 5 && s->plain[0] == 24;
	fn(ctx, &r);
	if (update)
		key_update(s);
}

/* Tries the encrypted record at rec at the sequence numbers it may have: true when one
 * authenticated (delivered, the stream locked at the next). */
static bool try_record(struct tls13_stream *s, const uint8_t *rec, size_t wire_len, uint64_t offset,
		       tls13_record_fn fn, void *ctx)
{
	uint64_t lo = s->seq, hi = s->seq, seq;
	long n;

	if (!s->locked) {
		lo = s->seq > TLS13_SEQ_WINDOW ? s->seq - TLS13_SEQ_WINDOW : 0;
		hi = s->seq + TLS13_SEQ_WINDOW;
	} else if (s->searching) {
		hi = s->seq + TLS13_SEQ_WINDOW; /* records lost with the bytes */
	}
	for (seq = lo; seq <= hi; seq++) {
		n = open_record(s, rec, wire_len, seq);
		if (n < 0)
			continue;
		s->locked = true;
		s->seq = seq + 1;
		deliver(s, n, seq, offset, wire_len, fn, ctx);
		return true;
	}
	return false;
}

/* Drops the first n bytes of buf. */
static void consume(struct tls13_stream *s, size_t n)
{
	memmove(s->buf, s->buf + n, s->have - n);
	s->have -= n;
	s->offset += n;
}

/* Records at a known boundary: buf starts with a header. */
static void run_framed(struct tls13_stream *s, tls13_record_fn fn, void *ctx)
{
	while (!s->searching && !s->given_up && s->have >= TLS13_HEADER_LEN) {
		size_t wire_len = TLS13_HEADER_LEN + ((size_t)s->buf[3] << 8 | s->buf[4]);

		if (!header_plausible(s->buf, false)) {
			/* Not a record boundary after all: look for one. */
			s->searching = true;
			return;
		}
		if (s->have < wire_len)
			return;
		if (s->buf[0] != TLS13_TYPE_APPLICATION_DATA) {
			s->stats.skipped_plain++;
		} else if (try_record(s, s->buf, wire_len, s->offset, fn, ctx)) {
			s->failed_in_a_row = 0;
		} else {
			/* Before any record opened: a handshake's flight sealed under its own keys,
			 * flushed after the application secret was set (Go buffers it), not a loss. */
			if (s->stats.records)
				s->stats.unauthenticated++;
			else
				s->stats.before_first++;
			/* Each costs up to 2 * TLS13_SEQ_WINDOW + 1 decryptions while unlocked. */
			if (!s->locked && ++s->failed_in_a_row >= TLS13_GIVE_UP)
				s->given_up = true;
		}
		consume(s, wire_len);
		if (s->given_up) {
			s->stats.given_up_bytes += s->have;
			s->have = 0;
		}
	}
}

/* After lost bytes: the first candidate header whose record authenticates. */
static void run_search(struct tls13_stream *s, tls13_record_fn fn, void *ctx)
{
	size_t i = 0;

	while (s->searching && i + TLS13_HEADER_LEN <= s->have) {
		size_t wire_len;

		if (!header_plausible(s->buf + i, true)) {
			i++;
			continue;
		}
		wire_len = TLS13_HEADER_LEN + ((size_t)s->buf[i + 3] << 8 | s->buf[i + 4]);
		if (i + wire_len > s->have)
			break; /* wait for the rest of this candidate */
		if (try_record(s, s->buf + i, wire_len, s->offset + i, fn, ctx)) {
			s->stats.scanned_bytes += i;
			s->stats.resyncs++;
			s->searching = false;
			s->failed_in_a_row = 0;
			consume(s, i + wire_len);
			return;
		}
		if (!s->locked && ++s->failed_in_a_row >= TLS13_GIVE_UP) {
			s->given_up = true;
			s->stats.given_up_bytes += s->have - i;
			s->stats.scanned_bytes += i;
			s->have = 0;
			return;
		}
		i++;
	}
	/* Keep from the first candidate still waiting (or the last header's worth of bytes). */
	if (i + TLS13_HEADER_LEN > s->have)
		i = s->have > TLS13_HEADER_LEN - 1 ? s->have - (TLS13_HEADER_LEN - 1) : 0;
	s->stats.scanned_bytes += i;
	consume(s, i);
}

void tls13_stream__feed(struct tls13_stream *s, const uint8_t *buf, size_t len, tls13_record_fn fn,
			void *ctx)
{
	while (len && !s->given_up) {
		size_t room = sizeof(s->buf) - s->have, n = len < room ? len : room;

		memcpy(s->buf + s->have, buf, n);
		s->have += n;
		buf += n;
		len -= n;
		for (;;) {
			size_t before = s->have;
			bool was_searching = s->searching;

			if (s->searching)
				run_search(s, fn, ctx);
			else
				run_framed(s, fn, ctx);
			if (s->have == before && s->searching == was_searching)
				break;
		}
		/* A full buffer that is still one candidate waiting cannot happen: a candidate
		 * is at most one record and the buffer holds two. */
	}
	if (s->given_up)
		s->stats.given_up_bytes += len;
}

void tls13_stream__lost(struct tls13_stream *s, uint64_t len)
{
	if (!len)
		return;
	s->stats.lost_bytes += len;
	/* What was buffered cannot be finished: the record it began lost bytes. */
	s->offset += s->have + len;
	s->have = 0;
	s->searching = true;
}

void tls13_stream__stats(const struct tls13_stream *s, struct tls13_stats *out)
{
	*out = s->stats;
}
