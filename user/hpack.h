/* HPACK (RFC 7541) header block decoder that tolerates starting mid-connection.
 *
 * nghttp2's inflater treats a reference to an unknown dynamic-table entry as a fatal compression
 * error, which is right for an endpoint and wrong for a tracer that attached after the table was
 * filled. This decoder tracks only the entries it saw inserted; indices count from the newest
 * entry, so those stay exact, and a reference past them yields a header flagged unknown while
 * decoding goes on. Entries are evicted by the size rule when the table size is known; when it is
 * not (started mid-connection) eviction waits for the cap, which is safe because an encoder never
 * references an entry it has evicted.
 *
 * A decoder costs a few dozen bytes until entries are inserted: the entry ring and the entry bytes
 * grow with the table actually in use, up to the caps. The scratch space for literals is one per
 * thread, so a header callback must not decode another block. */
#ifndef BINDTRACE_HPACK_H
#define BINDTRACE_HPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HPACK_STATIC_ENTRIES 61
#define HPACK_DEFAULT_TABLE_SIZE 4096
/* Largest dynamic table we keep, in RFC 7541 size units (name + value + 32 per entry). */
#define HPACK_MAX_TABLE_SIZE 65536
#define HPACK_MAX_ENTRIES (HPACK_MAX_TABLE_SIZE / 32) /* a power of two */
/* First size of the entry ring when an entry is inserted (a power of two). */
#define HPACK_MIN_ENTRIES 16
/* Longest name or value handed to the callback; longer ones are cut and flagged. */
#define HPACK_MAX_STRING 8192

enum hpack_header_flags {
	HPACK_NAME_UNKNOWN = 1 << 0, /* referenced a dynamic entry inserted before we saw it */
	HPACK_VALUE_UNKNOWN = 1 << 1,
	HPACK_TRUNCATED = 1 << 2,     /* name or value cut at HPACK_MAX_STRING */
	HPACK_NEVER_INDEXED = 1 << 3, /* the encoder marked it sensitive */
};

struct hpack_header {
	const char *name; /* not NUL-terminated; "" when unknown */
	size_t name_len;
	const char *value;
	size_t value_len;
	unsigned flags;
};

/* Return non-zero to stop decoding the block (the table is still updated for what was read). */
typedef int (*hpack_header_cb)(const struct hpack_header *header, void *ctx);

struct hpack_entry {
	uint32_t offset;   /* into data */
	uint32_t name_len; /* stored bytes (may be less than the real length when cut) */
	uint32_t value_len;
	uint32_t size;	    /* RFC size: real name + value lengths + 32 */
	uint32_t name_real; /* real name length */
	uint8_t flags;
};

/* Zero-initialise, then hpack_decoder__reset(); free with hpack_decoder__free(). */
struct hpack_decoder {
	bool tolerant;	   /* started mid-connection or lost a block: unknown refs expected */
	bool size_known;   /* max_size came from the start of the connection or a size update */
	uint32_t max_size; /* current table size limit */
	uint32_t size;	   /* sum of entry sizes */
	uint32_t head;	   /* ring index of the newest entry */
	uint32_t count;	   /* entries we know */
	struct hpack_entry *entries; /* ring of entries_cap (0 or a power of two) */
	uint32_t entries_cap;
	uint8_t *data; /* entry bytes, oldest first, appended at data_end */
	uint32_t data_cap;
	uint32_t data_end;
	uint64_t unknown_refs;	  /* references to entries we never saw */
	uint64_t entries_dropped; /* not inserted for want of memory */
};

/* from_start: the decoder sees the connection from its first header block. */
void hpack_decoder__reset(struct hpack_decoder *dec, bool from_start);
/* Forget the dynamic table (a block was lost): later references to older entries become unknown. */
void hpack_decoder__forget(struct hpack_decoder *dec);
/* SETTINGS_HEADER_TABLE_SIZE acknowledged by the peer: the encoder may use up to this size. */
void hpack_decoder__set_settings_size(struct hpack_decoder *dec, uint32_t size);
void hpack_decoder__free(struct hpack_decoder *dec);
/* Bytes the decoder holds on the heap (entry ring and entry bytes). */
size_t hpack_decoder__heap_bytes(const struct hpack_decoder *dec);

/* Decodes one complete header block. Returns 0, or -EBADMSG when the block is malformed (the
 * caller should hpack_decoder__forget(), as the table is then out of step). */
int hpack_decoder__decode(struct hpack_decoder *dec, const uint8_t *buf, size_t len,
			  hpack_header_cb cb, void *ctx);

/* Huffman-decodes src into dst (up to cap bytes). Returns the decoded length (which may exceed cap:
 * only cap bytes are written), or -EBADMSG on an invalid code or padding. */
long hpack__huffman_decode(const uint8_t *src, size_t len, char *dst, size_t cap);

#endif
