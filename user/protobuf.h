/* A protobuf wire-format walker: no generated code, no allocation. Readers iterate the fields of
 * one message held in a caller's buffer; a length-delimited field is returned as a pointer into
 * that buffer, checked against what is left, so a nested message is walked with a new reader.
 *
 * And its writer, for what bindtrace sends (OTLP): fields appended to a growing buffer; a nested
 * message is opened with pb_writer__begin() and closed with pb_writer__end(), which then puts
 * its length before it (canonical varint, the contents moved up by the varint's size). */
#ifndef BINDTRACE_PROTOBUF_H
#define BINDTRACE_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pb_wire_type {
	PB_WT_VARINT = 0,
	PB_WT_I64 = 1,
	PB_WT_LEN = 2,
	PB_WT_SGROUP = 3,
	PB_WT_EGROUP = 4,
	PB_WT_I32 = 5,
};

/* How deep pb_writer nests messages. */
#define PB_WRITER_DEPTH 16

/* Largest field number protobuf allows (2^29 - 1). */
#define PB_MAX_FIELD ((1u << 29) - 1)

struct pb_reader {
	const uint8_t *buf;
	size_t len;
	size_t pos;
};

struct pb_field {
	uint32_t number;
	enum pb_wire_type type;
	uint64_t varint;     /* PB_WT_VARINT, PB_WT_I64, PB_WT_I32 */
	const uint8_t *data; /* PB_WT_LEN */
	size_t len;	     /* PB_WT_LEN */
};

static inline void pb_reader__init(struct pb_reader *r, const void *buf, size_t len)
{
	r->buf = buf;
	r->len = len;
	r->pos = 0;
}

/* Reads a base-128 varint at *pos; returns 0, -EAGAIN when the buffer ends inside it, or -EBADMSG
 * when it runs past 10 bytes. */
int pb__read_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out);

/* Next field: 1 when one was read into *f, 0 at the clean end of the message, -EBADMSG on a
 * malformed field (bad tag, wire type, or a length past the end). Groups are rejected. */
int pb_reader__next(struct pb_reader *r, struct pb_field *f);

/* True when buf[0..len) parses as a sequence of well-formed fields, to depth 0 only. */
bool pb__valid_message(const void *buf, size_t len);

/* Copies a length-delimited field as a NUL-terminated string, truncated to cap - 1 bytes;
 * control bytes become '?'. Returns true when it fitted. */
bool pb__copy_string(char *dst, size_t cap, const uint8_t *src, size_t len);

struct pb_writer {
	uint8_t *buf;
	size_t len, cap;
	int err; /* -ENOMEM, or -EINVAL (bad field number, nesting too deep or unbalanced): the
		  * buffer is not valid; 0 */
	int depth;
	size_t open[PB_WRITER_DEPTH]; /* where each open message's contents start */
};

/* A writer starts zeroed ({0}) or pb_writer__init()'d. */
void pb_writer__init(struct pb_writer *w);
void pb_writer__free(struct pb_writer *w);
/* Drop the contents, keep the memory. */
void pb_writer__reset(struct pb_writer *w);
void pb_writer__varint(struct pb_writer *w, uint32_t field, uint64_t v);
/* int64 fields are varints of the two's complement (10 bytes when negative). */
void pb_writer__int64(struct pb_writer *w, uint32_t field, int64_t v);
void pb_writer__fixed64(struct pb_writer *w, uint32_t field, uint64_t v);
void pb_writer__fixed32(struct pb_writer *w, uint32_t field, uint32_t v);
void pb_writer__double(struct pb_writer *w, uint32_t field, double v);
void pb_writer__bytes(struct pb_writer *w, uint32_t field, const void *p, size_t n);
/* A string field as is: the caller makes it UTF-8 where the schema says string. */
void pb_writer__string(struct pb_writer *w, uint32_t field, const char *s);
/* Bytes already encoded as fields, appended as they are. */
void pb_writer__raw(struct pb_writer *w, const void *p, size_t n);
/* A nested message (length-delimited field) up to the matching _end. */
void pb_writer__begin(struct pb_writer *w, uint32_t field);
void pb_writer__end(struct pb_writer *w);
/* The encoded bytes: 0 and *len set, or -ENOMEM / -EINVAL (failed, or a message still open). */
int pb_writer__finish(const struct pb_writer *w, size_t *len);

#endif
