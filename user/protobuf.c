/* Protobuf wire-format walker. Every length is checked against what is left of the enclosing
 * buffer before it is used, so nested messages can never read outside the caller's bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protobuf.h"

int pb__read_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;
	size_t p = *pos;

	for (int i = 0; i < 10; i++) {
		if (p >= len)
			return -EAGAIN;
		uint8_t b = buf[p++];
		if (i == 9 && b > 1)
			return -EBADMSG;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*out = v;
			*pos = p;
			return 0;
		}
	}
	return -EBADMSG;
}

int pb_reader__next(struct pb_reader *r, struct pb_field *f)
{
	uint64_t tag, v;
	size_t pos = r->pos;

	if (pos >= r->len)
		return 0;
	if (pb__read_varint(r->buf, r->len, &pos, &tag))
		return -EBADMSG;
	if ((tag >> 3) == 0 || (tag >> 3) > PB_MAX_FIELD)
		return -EBADMSG;
	f->number = (uint32_t)(tag >> 3);
	f->type = (enum pb_wire_type)(tag & 7);
	f->data = NULL;
	f->len = 0;
	f->varint = 0;
	switch (f->type) {
	case PB_WT_VARINT:
		if (pb__read_varint(r->buf, r->len, &pos, &v))
			return -EBADMSG;
		f->varint = v;
		break;
	case PB_WT_I64:
		if (r->len - pos < 8)
			return -EBADMSG;
		v = 0;
		for (int i = 7; i >= 0; i--)
			v = (v << 8) | r->buf[pos + i];
		f->varint = v;
		pos += 8;
		break;
	case PB_WT_I32:
		if (r->len - pos < 4)
			return -EBADMSG;
		v = 0;
		for (int i = 3; i >= 0; i--)
			v = (v << 8) | r->buf[pos + i];
		f->varint = v;
		pos += 4;
		break;
	case PB_WT_LEN:
		if (pb__read_varint(r->buf, r->len, &pos, &v))
			return -EBADMSG;
		if (v > r->len - pos)
			return -EBADMSG;
		f->data = r->buf + pos;
		f->len = (size_t)v;
		pos += (size_t)v;
		break;
	default:
		return -EBADMSG;
	}
	r->pos = pos;
	return 1;
}

bool pb__valid_message(const void *buf, size_t len)
{
	struct pb_reader r;
	struct pb_field f;
	int err;

	pb_reader__init(&r, buf, len);
	while ((err = pb_reader__next(&r, &f)) == 1)
		;
	return err == 0;
}

bool pb__copy_string(char *dst, size_t cap, const uint8_t *src, size_t len)
{
	size_t n = len < cap - 1 ? len : cap - 1;

	if (!cap)
		return false;
	for (size_t i = 0; i < n; i++)
		dst[i] = (src[i] < 0x20 || src[i] == 0x7f) ? '?' : (char)src[i];
	dst[n] = '\0';
	return n == len;
}

/* ---- Writer ---- */

void pb_writer__init(struct pb_writer *w)
{
	memset(w, 0, sizeof(*w));
}

void pb_writer__free(struct pb_writer *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

void pb_writer__reset(struct pb_writer *w)
{
	w->len = 0;
	w->err = 0;
	w->depth = 0;
}

static bool writer_room(struct pb_writer *w, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (w->err)
		return false;
	if (w->len + n <= w->cap)
		return true;
	cap = w->cap ? w->cap : 256;
	while (cap < w->len + n)
		cap *= 2;
	p = realloc(w->buf, cap);
	if (!p) {
		w->err = -ENOMEM;
		return false;
	}
	w->buf = p;
	w->cap = cap;
	return true;
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p = (uint8_t)v;
}

static void append_varint(struct pb_writer *w, uint64_t v)
{
	size_t n = varint_size(v);

	if (!writer_room(w, n))
		return;
	put_varint(w->buf + w->len, v);
	w->len += n;
}

static void append_tag(struct pb_writer *w, uint32_t field, enum pb_wire_type type)
{
	if (field == 0 || field > PB_MAX_FIELD) {
		w->err = -EINVAL;
		return;
	}
	append_varint(w, ((uint64_t)field << 3) | type);
}

void pb_writer__raw(struct pb_writer *w, const void *p, size_t n)
{
	if (!n || !writer_room(w, n))
		return;
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

void pb_writer__varint(struct pb_writer *w, uint32_t field, uint64_t v)
{
	append_tag(w, field, PB_WT_VARINT);
	append_varint(w, v);
}

void pb_writer__int64(struct pb_writer *w, uint32_t field, int64_t v)
{
	pb_writer__varint(w, field, (uint64_t)v);
}

void pb_writer__fixed64(struct pb_writer *w, uint32_t field, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	append_tag(w, field, PB_WT_I64);
	pb_writer__raw(w, b, sizeof(b));
}

void pb_writer__fixed32(struct pb_writer *w, uint32_t field, uint32_t v)
{
	uint8_t b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	append_tag(w, field, PB_WT_I32);
	pb_writer__raw(w, b, sizeof(b));
}

void pb_writer__double(struct pb_writer *w, uint32_t field, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	pb_writer__fixed64(w, field, bits);
}

void pb_writer__bytes(struct pb_writer *w, uint32_t field, const void *p, size_t n)
{
	append_tag(w, field, PB_WT_LEN);
	append_varint(w, n);
	pb_writer__raw(w, p, n);
}

void pb_writer__string(struct pb_writer *w, uint32_t field, const char *s)
{
	pb_writer__bytes(w, field, s, strlen(s));
}

void pb_writer__begin(struct pb_writer *w, uint32_t field)
{
	append_tag(w, field, PB_WT_LEN);
	if (w->depth >= PB_WRITER_DEPTH) {
		w->err = -EINVAL;
		return;
	}
	w->open[w->depth++] = w->len;
}

void pb_writer__end(struct pb_writer *w)
{
	size_t start, n, k;

	if (w->err)
		return;
	if (w->depth <= 0) {
		w->err = -EINVAL;
		return;
	}
	start = w->open[--w->depth];
	n = w->len - start;
	k = varint_size(n);
	if (!writer_room(w, k))
		return;
	memmove(w->buf + start + k, w->buf + start, n);
	put_varint(w->buf + start, n);
	w->len += k;
}

int pb_writer__finish(const struct pb_writer *w, size_t *len)
{
	if (w->err)
		return w->err;
	if (w->depth)
		return -EINVAL;
	*len = w->len;
	return 0;
}
