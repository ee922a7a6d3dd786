/* TLS 1.3 records of one direction of one connection, decrypted from the bytes on the wire with
 * that direction's traffic secret. The step after the per-Write uprobe (issue 15): Go's
 * crypto/tls keeps each direction's TLS 1.3 traffic secret and record sequence number in its
 * halfConn (trafficSecret, seq) for the connection's life, so one read of them per connection,
 * plus the write(2)/read(2) bytes the syscall tracepoints copy, gives the plaintext without a
 * trap per Write. This module is that decryption only; it knows nothing of BPF or processes.
 *
 * Why written here: OpenSSL's SSL layer terminates connections and cannot decrypt a passive copy
 * of someone else's; libcrypto does the HKDF-Expand-Label and the AEAD (AES-128-GCM,
 * AES-256-GCM, ChaCha20-Poly1305), this file the record layer around them (RFC 8446 section 5):
 * framing, the implicit sequence number, inner content types, KeyUpdate, and finding its way
 * again after lost bytes.
 *
 * Contract:
 * - Bytes are fed in stream order; tls13_stream__lost() says how many were lost in between (the
 *   record they fell in is lost: the stream then looks for the next record header whose record
 *   authenticates, so a false header in ciphertext is never taken).
 * - The sequence number given at creation is a hint (what the process held when it was read: a
 *   Write's first record, or a reader's next, which may lag what read(2) already returned): until
 *   a record authenticates, each is tried at seq_hint - TLS13_SEQ_WINDOW .. + TLS13_SEQ_WINDOW;
 *   after lost bytes at the next TLS13_SEQ_WINDOW numbers. Plaintext records (a ClientHello,
 *   ChangeCipherSpec) and records that do not authenticate with this key (the handshake's, under
 *   its own keys) are skipped and counted. TLS13_GIVE_UP of them in a row before any record has
 *   opened end the stream's work (the key is not its own: a TLS 1.2 connection, a wrong secret):
 *   what is fed after that is only counted.
 * - Everything fed is untrusted: lengths are checked against RFC 8446's caps; at most one record
 *   (or two while looking for a header) is buffered per stream, allocated at creation.
 * - Each authenticated record is handed to the callback with its inner content type, its
 *   plaintext (valid during the call), its sequence number and the stream offset of its header.
 *   A KeyUpdate (handshake type 24) in it moves the stream to the next secret, seq 0. */
#ifndef BINDTRACE_TLS13_H
#define BINDTRACE_TLS13_H

#include <stddef.h>
#include <stdint.h>

#define TLS13_AES_128_GCM_SHA256 0x1301
#define TLS13_AES_256_GCM_SHA384 0x1302
#define TLS13_CHACHA20_POLY1305_SHA256 0x1303

#define TLS13_HEADER_LEN 5
#define TLS13_TAG_LEN 16
#define TLS13_MAX_PLAINTEXT 16384
/* RFC 8446 5.2: TLSCiphertext.length is at most 2^14 + 256. */
#define TLS13_MAX_CIPHERTEXT (TLS13_MAX_PLAINTEXT + 256)
#define TLS13_MAX_RECORD (TLS13_HEADER_LEN + TLS13_MAX_CIPHERTEXT)
#define TLS13_MAX_SECRET 48
#define TLS13_SEQ_WINDOW 64
/* Encrypted records in a row that do not open before any did: the key is not this stream's. */
#define TLS13_GIVE_UP 16

#define TLS13_TYPE_CHANGE_CIPHER_SPEC 20
#define TLS13_TYPE_ALERT 21
#define TLS13_TYPE_HANDSHAKE 22
#define TLS13_TYPE_APPLICATION_DATA 23

struct tls13_stream;

struct tls13_record {
	uint8_t type; /* the inner content type */
	const uint8_t *plain;
	size_t len;
	uint64_t seq;
	uint64_t offset;   /* of the record's header in the stream */
	uint32_t wire_len; /* header, ciphertext and tag */
};

typedef void (*tls13_record_fn)(void *ctx, const struct tls13_record *r);

struct tls13_stats {
	uint64_t records;	  /* authenticated and delivered */
	uint64_t plain_bytes;	  /* delivered */
	uint64_t skipped_plain;	  /* plaintext records (outer type not 23) */
	uint64_t unauthenticated; /* whole records no sequence number of the window opened... */
	uint64_t before_first;	  /* ...and those before any record opened (a handshake's own) */
	uint64_t resyncs;	  /* times the stream found a record again after lost bytes */
	uint64_t scanned_bytes;	  /* bytes passed over while looking for a record */
	uint64_t lost_bytes;	  /* said lost by the caller */
	uint64_t key_updates;
	uint64_t bad_inner;	 /* authenticated but without an inner content type */
	uint64_t given_up_bytes; /* fed after TLS13_GIVE_UP records in a row did not open */
};

/* A stream decrypted with secret (the suite's hash length: 32 bytes, or 48 for
 * TLS13_AES_256_GCM_SHA384) whose next record is expected near seq_hint. NULL with errno
 * EINVAL for an unknown suite or a secret of the wrong length, ENOMEM, or ENOTSUP when libcrypto
 * lacks the cipher. */
struct tls13_stream *tls13_stream__new(uint16_t suite, const uint8_t *secret, size_t secret_len,
				       uint64_t seq_hint);
void tls13_stream__free(struct tls13_stream *s);

/* The next len bytes of the stream. Complete records are handed to fn before it returns. */
void tls13_stream__feed(struct tls13_stream *s, const uint8_t *buf, size_t len, tls13_record_fn fn,
			void *ctx);

/* len bytes of the stream were lost before the next feed. */
void tls13_stream__lost(struct tls13_stream *s, uint64_t len);

void tls13_stream__stats(const struct tls13_stream *s, struct tls13_stats *out);

/* HKDF-Expand-Label(secret, label, "", out_len) of RFC 8446 7.1 with the suite's hash: 0, or
 * -EINVAL / -ENOTSUP. Exposed for the tests (RFC 8448's vectors). */
int tls13__expand_label(uint16_t suite, const uint8_t *secret, size_t secret_len, const char *label,
			uint8_t *out, size_t out_len);

#endif
