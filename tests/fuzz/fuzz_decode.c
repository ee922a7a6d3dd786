/* libFuzzer target: the whole connection decoder. The input is a script of records:
 * [op][len16][bytes]: op bit 0 direction, bit 1 gap of len bytes instead of data, bit 2 offset
 * jumps back (a retransmission), so every path of conn_decoder__feed is reachable; bit 3 first
 * gives the client side (bit 4), or takes it back (bit 5), as a tracer that knows the socket does,
 * before or after any bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "decode.h"

static void on_msg(const struct decoded_msg *m, void *ctx)
{
	size_t *n = ctx;
	*n += m->kind + m->body_kind;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t seen = 0;
	uint64_t off[2] = { 0, 0 };
	struct conn_decoder *dec = conn_decoder__new(on_msg, &seen);

	if (!dec)
		return 0;
	for (size_t o = 0; o + 3 <= size;) {
		uint8_t op = data[o];
		size_t len = (size_t)data[o + 1] << 8 | data[o + 2];
		int dir = op & 1;
		o += 3;
		if (op & 8)
			conn_decoder__set_client_dir(dec, (op & 0x20) ? -1 : (op >> 4) & 1);
		if (op & 2) {
			conn_decoder__gap(dec, dir, len);
			off[dir] += len;
			continue;
		}
		if (len > size - o)
			len = size - o;
		uint64_t at = off[dir];
		if ((op & 4) && at >= 3)
			at -= 3;
		conn_decoder__feed(dec, dir, at, data + o, len, o);
		if (at + len > off[dir])
			off[dir] = at + len;
		o += len;
	}
	conn_decoder__close(dec, size);
	conn_decoder__free(dec);
	return 0;
}
