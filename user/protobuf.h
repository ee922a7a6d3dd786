/* A protobuf wire-format walker: no generated code, no allocation. Readers iterate the fields of
 * one message held in a caller's buffer; a length-delimited field is returned as a pointer into
 * that buffer, checked against what is left, so a nested message is walked with a new reader. */
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

#endif
