/* Protobuf wire-format walker. Every length is checked against what is left of the enclosing
 * buffer before it is used, so nested messages can never read outside the caller's bytes. */
#include <errno.h>
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
