/* HPACK decoder: integers, strings (with the canonical Huffman code), the static table and a
 * dynamic table that knows which of its entries it has really seen. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hpack.h"

/* Canonical HPACK Huffman code (RFC 7541 Appendix B), by code length: the first code of each
 * length, where its symbols start in huffman_symbols[], and the left-aligned 32-bit limit below
 * which a code of that length lies. */
static const uint16_t huffman_symbols[257] = {
	48,  49,  50,  97,  99,	 101, 105, 111, 115, 116, 32,  37,  45,	 46,  47,  51,	52,  53,
	54,  55,  56,  57,  61,	 65,  95,  98,	100, 102, 103, 104, 108, 109, 110, 112, 114, 117,
	58,  66,  67,  68,  69,	 70,  71,  72,	73,  74,  75,  76,  77,	 78,  79,  80,	81,  82,
	83,  84,  85,  86,  87,	 89,  106, 107, 113, 118, 119, 120, 121, 122, 38,  42,	44,  59,
	88,  90,  33,  34,  40,	 41,  63,  39,	43,  124, 35,  62,  0,	 36,  64,  91,	93,  126,
	94,  125, 60,  96,  123, 92,  195, 208, 128, 130, 131, 162, 184, 194, 224, 226, 153, 161,
	167, 172, 176, 177, 179, 209, 216, 217, 227, 229, 230, 129, 132, 133, 134, 136, 146, 154,
	156, 160, 163, 164, 169, 170, 173, 178, 181, 185, 186, 187, 189, 190, 196, 198, 228, 232,
	233, 1,	  135, 137, 138, 139, 140, 141, 143, 147, 149, 150, 151, 152, 155, 157, 158, 165,
	166, 168, 174, 175, 180, 182, 183, 188, 191, 197, 231, 239, 9,	 142, 144, 145, 148, 159,
	171, 206, 215, 225, 236, 237, 199, 207, 234, 235, 192, 193, 200, 201, 202, 205, 210, 213,
	218, 219, 238, 240, 242, 243, 255, 203, 204, 211, 212, 214, 221, 222, 223, 241, 244, 245,
	246, 247, 248, 250, 251, 252, 253, 254, 2,   3,	  4,   5,   6,	 7,   8,   11,	12,  14,
	15,  16,  17,  18,  19,	 20,  21,  23,	24,  25,  26,  27,  28,	 29,  30,  31,	127, 220,
	249, 10,  13,  22,  256,
};
static const uint32_t huffman_first_code[31] = {
	0x0,	  0x0,	     0x0,	0x0,	   0x0,	      0x0,	0x14,	    0x5c,
	0xf8,	  0x0,	     0x3f8,	0x7fa,	   0xffa,     0x1ff8,	0x3ffc,	    0x7ffc,
	0x0,	  0x0,	     0x0,	0x7fff0,   0xfffe6,   0x1fffdc, 0x3fffd2,   0x7fffd8,
	0xffffea, 0x1ffffec, 0x3ffffe0, 0x7ffffde, 0xfffffe2, 0x0,	0x3ffffffc,
};
static const uint16_t huffman_offset[31] = {
	0, 0, 0, 0,  0,	 0,   10,  36,	68,  0,	  74,  79,  82,	 84, 90,  92,
	0, 0, 0, 95, 98, 106, 119, 145, 174, 186, 190, 205, 224, 0,  253,
};
static const uint64_t huffman_limit[31] = {
	0x0ull,		0x0ull,	       0x0ull,	      0x0ull,	     0x0ull,	    0x50000000ull,
	0xb8000000ull,	0xf8000000ull, 0xfe000000ull, 0xfe000000ull, 0xff400000ull, 0xffa00000ull,
	0xffc00000ull,	0xfff00000ull, 0xfff80000ull, 0xfffe0000ull, 0xfffe0000ull, 0xfffe0000ull,
	0xfffe0000ull,	0xfffe6000ull, 0xfffee000ull, 0xffff4800ull, 0xffffb000ull, 0xffffea00ull,
	0xfffff600ull,	0xfffff800ull, 0xfffffbc0ull, 0xfffffe20ull, 0xfffffff0ull, 0xfffffff0ull,
	0x100000000ull,
};

static const struct {
	const char *name, *value;
} hpack_static[HPACK_STATIC_ENTRIES + 1] = {
	{ "", "" },
	{ ":authority", "" },
	{ ":method", "GET" },
	{ ":method", "POST" },
	{ ":path", "/" },
	{ ":path", "/index.html" },
	{ ":scheme", "http" },
	{ ":scheme", "https" },
	{ ":status", "200" },
	{ ":status", "204" },
	{ ":status", "206" },
	{ ":status", "304" },
	{ ":status", "400" },
	{ ":status", "404" },
	{ ":status", "500" },
	{ "accept-charset", "" },
	{ "accept-encoding", "gzip, deflate" },
	{ "accept-language", "" },
	{ "accept-ranges", "" },
	{ "accept", "" },
	{ "access-control-allow-origin", "" },
	{ "age", "" },
	{ "allow", "" },
	{ "authorization", "" },
	{ "cache-control", "" },
	{ "content-disposition", "" },
	{ "content-encoding", "" },
	{ "content-language", "" },
	{ "content-length", "" },
	{ "content-location", "" },
	{ "content-range", "" },
	{ "content-type", "" },
	{ "cookie", "" },
	{ "date", "" },
	{ "etag", "" },
	{ "expect", "" },
	{ "expires", "" },
	{ "from", "" },
	{ "host", "" },
	{ "if-match", "" },
	{ "if-modified-since", "" },
	{ "if-none-match", "" },
	{ "if-range", "" },
	{ "if-unmodified-since", "" },
	{ "last-modified", "" },
	{ "link", "" },
	{ "location", "" },
	{ "max-forwards", "" },
	{ "proxy-authenticate", "" },
	{ "proxy-authorization", "" },
	{ "range", "" },
	{ "referer", "" },
	{ "refresh", "" },
	{ "retry-after", "" },
	{ "server", "" },
	{ "set-cookie", "" },
	{ "strict-transport-security", "" },
	{ "transfer-encoding", "" },
	{ "user-agent", "" },
	{ "vary", "" },
	{ "via", "" },
	{ "www-authenticate", "" },
};

long hpack__huffman_decode(const uint8_t *src, size_t len, char *dst, size_t cap)
{
	uint64_t bits = 0; /* pending bits, right-aligned */
	unsigned nbits = 0;
	size_t in = 0;
	long out = 0;

	for (;;) {
		while (nbits <= 56 && in < len) {
			bits = (bits << 8) | src[in++];
			nbits += 8;
		}
		if (nbits < 5) {
			if (nbits && ((bits & ((1u << nbits) - 1)) != (1u << nbits) - 1))
				return -EBADMSG;
			return out;
		}
		/* Left-align up to 32 pending bits, padding with ones as EOS would. */
		uint64_t peek;
		if (nbits >= 32)
			peek = (bits >> (nbits - 32)) & 0xffffffffull;
		else
			peek =
			    ((bits << (32 - nbits)) | ((1ull << (32 - nbits)) - 1)) & 0xffffffffull;
		unsigned l = 5;
		while (l <= 30 && peek >= huffman_limit[l])
			l++;
		if (l > 30)
			return -EBADMSG;
		if (l > nbits) {
			/* Only padding (at most 7 one bits) may be left. */
			if (in < len || nbits > 7 ||
			    (bits & ((1u << nbits) - 1)) != (1u << nbits) - 1)
				return -EBADMSG;
			return out;
		}
		uint32_t code = (uint32_t)(peek >> (32 - l));
		unsigned sym = huffman_symbols[huffman_offset[l] + (code - huffman_first_code[l])];
		if (sym == 256)
			return -EBADMSG;
		if ((size_t)out < cap)
			dst[out] = (char)sym;
		out++;
		nbits -= l;
		bits &= nbits ? ((1ull << nbits) - 1) : 0;
	}
}

void hpack_decoder__reset(struct hpack_decoder *dec, bool from_start)
{
	dec->tolerant = !from_start;
	dec->size_known = from_start;
	dec->max_size = from_start ? HPACK_DEFAULT_TABLE_SIZE : HPACK_MAX_TABLE_SIZE;
	dec->size = 0;
	dec->head = 0;
	dec->count = 0;
	dec->data_end = 0;
	dec->unknown_refs = 0;
}

void hpack_decoder__forget(struct hpack_decoder *dec)
{
	dec->tolerant = true;
	dec->size = 0;
	dec->count = 0;
	dec->data_end = 0;
	if (!dec->size_known)
		dec->max_size = HPACK_MAX_TABLE_SIZE;
}

void hpack_decoder__free(struct hpack_decoder *dec)
{
	free(dec->data);
	free(dec->entries);
	dec->data = NULL;
	dec->data_cap = 0;
	dec->data_end = 0;
	dec->entries = NULL;
	dec->entries_cap = 0;
	dec->head = 0;
	dec->count = 0;
	dec->size = 0;
}

size_t hpack_decoder__heap_bytes(const struct hpack_decoder *dec)
{
	return (size_t)dec->entries_cap * sizeof(dec->entries[0]) + dec->data_cap;
}

/* i = 0 is the newest entry; i < count <= entries_cap. */
static struct hpack_entry *entry_at(struct hpack_decoder *dec, uint32_t i)
{
	return &dec->entries[(dec->head - i) & (dec->entries_cap - 1)];
}

/* Doubles the entry ring (up to HPACK_MAX_ENTRIES), laying the entries out oldest first. */
static int grow_entries(struct hpack_decoder *dec)
{
	uint32_t cap = dec->entries_cap ? dec->entries_cap * 2 : HPACK_MIN_ENTRIES;
	struct hpack_entry *e;

	if (cap > HPACK_MAX_ENTRIES)
		return -ENOSPC;
	e = malloc((size_t)cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (uint32_t i = 0; i < dec->count; i++)
		e[dec->count - 1 - i] = *entry_at(dec, i);
	free(dec->entries);
	dec->entries = e;
	dec->entries_cap = cap;
	dec->head = dec->count ? dec->count - 1 : cap - 1;
	return 0;
}

static void evict_to(struct hpack_decoder *dec, uint32_t limit)
{
	while (dec->count && dec->size > limit) {
		dec->size -= entry_at(dec, dec->count - 1)->size;
		dec->count--;
	}
	if (!dec->count)
		dec->data_end = 0;
}

void hpack_decoder__set_settings_size(struct hpack_decoder *dec, uint32_t size)
{
	/* The encoder announces its real choice with a size update; until then keep what we have. */
	(void)dec;
	(void)size;
}

static void table_size_update(struct hpack_decoder *dec, uint64_t size)
{
	if (size > HPACK_MAX_TABLE_SIZE)
		size = HPACK_MAX_TABLE_SIZE;
	dec->max_size = (uint32_t)size;
	dec->size_known = true;
	evict_to(dec, dec->max_size);
}

/* Makes room for n more bytes at data_end: moves live bytes to the front or grows the buffer. */
static int reserve(struct hpack_decoder *dec, uint32_t n)
{
	if (dec->data && dec->data_end + n <= dec->data_cap)
		return 0;
	uint32_t start = dec->count ? entry_at(dec, dec->count - 1)->offset : dec->data_end;
	uint32_t live = dec->data_end - start;
	if (start) {
		memmove(dec->data, dec->data + start, live);
		for (uint32_t i = 0; i < dec->count; i++)
			entry_at(dec, i)->offset -= start;
		dec->data_end = live;
	}
	if (dec->data && dec->data_end + n <= dec->data_cap && live + n <= dec->data_cap / 2)
		return 0;
	uint32_t cap = dec->data_cap ? dec->data_cap : 1024;
	while (cap < 2 * (live + n))
		cap *= 2;
	if (cap > dec->data_cap) {
		uint8_t *p = realloc(dec->data, cap);
		if (!p)
			return -ENOMEM;
		dec->data = p;
		dec->data_cap = cap;
	}
	return 0;
}

static void table_insert(struct hpack_decoder *dec, const struct hpack_header *h,
			 uint64_t name_real, uint64_t value_real)
{
	uint64_t size = name_real + value_real + 32;

	if (size > dec->max_size) {
		/* RFC 7541 4.4: an entry larger than the table empties it. */
		evict_to(dec, 0);
		return;
	}
	evict_to(dec, dec->max_size - (uint32_t)size);
	if (dec->count == dec->entries_cap && grow_entries(dec)) {
		if (!dec->count) {
			/* No memory for even one entry: later references become unknown. */
			dec->entries_dropped++;
			dec->tolerant = true;
			return;
		}
		evict_to(dec, dec->size - entry_at(dec, dec->count - 1)->size);
	}
	/* Copy before reserve() may move the bytes a name reference points into. */
	uint32_t n = (uint32_t)(h->name_len + h->value_len);
	char tmp_name[HPACK_MAX_STRING];
	size_t name_len = h->name_len;
	memcpy(tmp_name, h->name, name_len);
	if (reserve(dec, n)) {
		evict_to(dec, 0);
		dec->entries_dropped++;
		dec->tolerant = true;
		return;
	}
	uint32_t off = dec->data_end;
	memcpy(dec->data + off, tmp_name, name_len);
	memmove(dec->data + off + name_len, h->value, h->value_len);
	dec->data_end += n;
	dec->head = (dec->head + 1) & (dec->entries_cap - 1);
	struct hpack_entry *e = entry_at(dec, 0);
	e->offset = off;
	e->name_len = (uint32_t)name_len;
	e->value_len = (uint32_t)h->value_len;
	e->size = (uint32_t)size;
	e->name_real = (uint32_t)name_real;
	e->flags =
	    (uint8_t)(h->flags & (HPACK_NAME_UNKNOWN | HPACK_VALUE_UNKNOWN | HPACK_TRUNCATED));
	dec->count++;
	dec->size += (uint32_t)size;
}

static int read_int(const uint8_t *buf, size_t len, size_t *pos, unsigned prefix, uint64_t *out)
{
	uint64_t mask = (1u << prefix) - 1;
	uint64_t v;

	if (*pos >= len)
		return -EBADMSG;
	v = buf[(*pos)++] & mask;
	if (v < mask) {
		*out = v;
		return 0;
	}
	for (unsigned shift = 0;; shift += 7) {
		if (*pos >= len || shift > 28)
			return -EBADMSG;
		uint8_t b = buf[(*pos)++];
		v += (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	if (v > UINT32_MAX)
		return -EBADMSG;
	*out = v;
	return 0;
}

/* Reads a string literal into dst (cap bytes); *real gets its full decoded length. */
static int read_string(const uint8_t *buf, size_t len, size_t *pos, char *dst, size_t cap,
		       size_t *stored, uint64_t *real)
{
	uint64_t n;
	bool huff;

	if (*pos >= len)
		return -EBADMSG;
	huff = buf[*pos] & 0x80;
	if (read_int(buf, len, pos, 7, &n) || n > len - *pos)
		return -EBADMSG;
	if (huff) {
		long d = hpack__huffman_decode(buf + *pos, (size_t)n, dst, cap);
		if (d < 0)
			return -EBADMSG;
		*real = (uint64_t)d;
	} else {
		memcpy(dst, buf + *pos, n < cap ? n : cap);
		*real = n;
	}
	*stored = *real < cap ? (size_t)*real : cap;
	*pos += n;
	return 0;
}

/* Resolves index (1-based, static then dynamic) into h. Unknown dynamic entries are flagged. */
static int lookup(struct hpack_decoder *dec, uint64_t index, struct hpack_header *h,
		  uint64_t *name_real, uint64_t *value_real)
{
	if (index == 0)
		return -EBADMSG;
	if (index <= HPACK_STATIC_ENTRIES) {
		h->name = hpack_static[index].name;
		h->name_len = strlen(h->name);
		h->value = hpack_static[index].value;
		h->value_len = strlen(h->value);
		h->flags = 0;
		*name_real = h->name_len;
		*value_real = h->value_len;
		return 0;
	}
	index -= HPACK_STATIC_ENTRIES + 1;
	if (index >= dec->count) {
		/* An encoder cannot reference past 64 KiB of entries; a larger index is garbage. */
		if (!dec->tolerant || index >= HPACK_MAX_ENTRIES)
			return -EBADMSG;
		dec->unknown_refs++;
		h->name = "";
		h->name_len = 0;
		h->value = "";
		h->value_len = 0;
		h->flags = HPACK_NAME_UNKNOWN | HPACK_VALUE_UNKNOWN;
		*name_real = 0;
		*value_real = 0;
		return 0;
	}
	struct hpack_entry *e = entry_at(dec, (uint32_t)index);
	h->name = (const char *)dec->data + e->offset;
	h->name_len = e->name_len;
	h->value = h->name + e->name_len;
	h->value_len = e->value_len;
	h->flags = e->flags;
	/* Unknown names were counted as zero bytes: a lower bound keeps eviction conservative. */
	*name_real = e->name_real;
	*value_real = e->size - 32 - e->name_real;
	return 0;
}

/* Decoded literals, one set per thread: a block is decoded in one call, and the strings handed to
 * the callback live only for it. Sharing them keeps an idle decoder small. */
static __thread char scratch[2 * HPACK_MAX_STRING];

int hpack_decoder__decode(struct hpack_decoder *dec, const uint8_t *buf, size_t len,
			  hpack_header_cb cb, void *ctx)
{
	size_t pos = 0;
	bool stopped = false;

	while (pos < len) {
		uint8_t b = buf[pos];
		struct hpack_header h;
		uint64_t index, name_real, value_real;
		bool indexing = false;

		if (b & 0x80) {
			/* Indexed header field. */
			if (read_int(buf, len, &pos, 7, &index) ||
			    lookup(dec, index, &h, &name_real, &value_real))
				return -EBADMSG;
		} else if ((b & 0xe0) == 0x20) {
			if (read_int(buf, len, &pos, 5, &index))
				return -EBADMSG;
			table_size_update(dec, index);
			continue;
		} else {
			unsigned prefix;
			unsigned flags = 0;
			if (b & 0x40) {
				prefix = 6;
				indexing = true;
			} else {
				prefix = 4;
				if (b & 0x10)
					flags |= HPACK_NEVER_INDEXED;
			}
			if (read_int(buf, len, &pos, prefix, &index))
				return -EBADMSG;
			size_t stored;
			if (index) {
				if (lookup(dec, index, &h, &name_real, &value_real))
					return -EBADMSG;
				/* Copy the name: the table may move when this entry is inserted. */
				size_t n =
				    h.name_len < HPACK_MAX_STRING ? h.name_len : HPACK_MAX_STRING;
				memmove(scratch, h.name, n);
				h.name = scratch;
				h.name_len = n;
				h.flags &= ~(unsigned)(HPACK_VALUE_UNKNOWN);
			} else {
				if (read_string(buf, len, &pos, scratch, HPACK_MAX_STRING, &stored,
						&name_real))
					return -EBADMSG;
				h.name = scratch;
				h.name_len = stored;
				h.flags = name_real > stored ? HPACK_TRUNCATED : 0;
			}
			char *vdst = scratch + HPACK_MAX_STRING;
			if (read_string(buf, len, &pos, vdst, HPACK_MAX_STRING, &stored,
					&value_real))
				return -EBADMSG;
			h.value = vdst;
			h.value_len = stored;
			if (value_real > stored)
				h.flags |= HPACK_TRUNCATED;
			h.flags |= flags;
		}
		if (!stopped && cb && cb(&h, ctx))
			stopped = true;
		if (indexing)
			table_insert(dec, &h, name_real, value_real);
	}
	return 0;
}
