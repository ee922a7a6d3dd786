/* A tiny protobuf writer for building test inputs by hand. */
#ifndef BINDTRACE_TEST_PBWRITE_H
#define BINDTRACE_TEST_PBWRITE_H

#include <stdint.h>
#include <string.h>

struct pbw {
	uint8_t b[8192];
	size_t n;
};

static inline void pbw_varint(struct pbw *w, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		w->b[w->n++] = c | (v ? 0x80 : 0);
	} while (v);
}

static inline void pbw_uint(struct pbw *w, uint32_t field, uint64_t v)
{
	pbw_varint(w, (uint64_t)field << 3);
	pbw_varint(w, v);
}

static inline void pbw_bytes(struct pbw *w, uint32_t field, const void *p, size_t len)
{
	pbw_varint(w, (uint64_t)field << 3 | 2);
	pbw_varint(w, len);
	memcpy(w->b + w->n, p, len);
	w->n += len;
}

static inline void pbw_str(struct pbw *w, uint32_t field, const char *s)
{
	pbw_bytes(w, field, s, strlen(s));
}

static inline void pbw_msg(struct pbw *w, uint32_t field, const struct pbw *m)
{
	pbw_bytes(w, field, m->b, m->n);
}

#endif
