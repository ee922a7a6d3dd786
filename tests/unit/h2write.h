/* A tiny HTTP/2 writer for building test inputs by hand: frames and HPACK literals. */
#ifndef BINDTRACE_TEST_H2WRITE_H
#define BINDTRACE_TEST_H2WRITE_H

#include <stdint.h>
#include <string.h>

/* One frame (9-byte header, then len bytes of p) written at o; returns the bytes written. The
 * caller makes room for 9 + len. */
static inline size_t h2w_frame(uint8_t *o, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
			       size_t len)
{
	o[0] = (uint8_t)(len >> 16);
	o[1] = (uint8_t)(len >> 8);
	o[2] = (uint8_t)len;
	o[3] = type;
	o[4] = flags;
	o[5] = (uint8_t)(sid >> 24);
	o[6] = (uint8_t)(sid >> 16);
	o[7] = (uint8_t)(sid >> 8);
	o[8] = (uint8_t)sid;
	if (len)
		memcpy(o + 9, p, len);
	return 9 + len;
}

/* An HPACK literal header field without indexing, new name (never touches the dynamic table),
 * written at o; returns the bytes written. Name and value must each be under 127 bytes. */
static inline size_t h2w_lit(uint8_t *o, const char *name, const char *value)
{
	size_t n = 0, nl = strlen(name), vl = strlen(value);

	o[n++] = 0x00;
	o[n++] = (uint8_t)nl;
	memcpy(o + n, name, nl);
	n += nl;
	o[n++] = (uint8_t)vl;
	memcpy(o + n, value, vl);
	return n + vl;
}

#endif
