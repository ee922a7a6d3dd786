/* libFuzzer target: the HTTP/2 frame layer with HPACK, fed in pieces, from the start,
 * mid-connection at a frame boundary or anywhere, with gaps. Byte 0 picks the piece size and the
 * mode. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "h2.h"

volatile size_t fuzz_sink;
static struct h2_conn *conn;

static void on_header(void *c, int d, uint32_t s, const struct hpack_header *h)
{
	(void)c, (void)d, (void)s;
	/* touch every byte the callback is given */
	for (size_t i = 0; i < h->name_len; i++)
		fuzz_sink += (unsigned char)h->name[i];
	for (size_t i = 0; i < h->value_len; i++)
		fuzz_sink += (unsigned char)h->value[i];
}

static void on_data(void *c, int d, uint32_t s, const uint8_t *p, size_t n, bool st, uint64_t a,
		    uint64_t b)
{
	(void)c, (void)s, (void)st, (void)a, (void)b;
	for (size_t i = 0; i < n; i++)
		fuzz_sink += p[i];
	/* What the frame layer says of the frame must cover what it hands over. */
	if (n > h2_conn__data_frame_len(conn, d))
		abort();
}

static const struct h2_callbacks cbs = { .on_header = on_header, .on_data = on_data };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	struct h2_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return 0;
	conn = c;
	h2_conn__init(c, &cbs, NULL);
	for (int d = 0; d < 2; d++) {
		if (!(mode & (1 << d)) && (mode & (0x10 << d)))
			h2_conn__begin_at_frame(c, d);
		else
			h2_conn__begin(c, d, mode & (1 << d));
	}
	size_t piece = (mode >> 2) ? (mode >> 2) : size;
	data++;
	size--;
	for (size_t o = 0, k = 0; o < size; o += piece, k++) {
		size_t n = size - o < piece ? size - o : piece;
		int dir = (mode & 0x80) ? (int)(k & 1) : 0;
		if ((mode & 0x40) && k % 7 == 3)
			h2_conn__lose(c, dir, n);
		else
			h2_conn__feed(c, dir, data + o, n, o);
	}
	h2_conn__free(c);
	free(c);
	return 0;
}
