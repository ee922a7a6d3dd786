/* libFuzzer target: HTTP/1.1 both directions; byte 0 picks piece size and mid-connection start. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "http1.h"

volatile size_t fuzz_sink;

static void on_body(void *c, int d, const uint8_t *p, size_t n, uint64_t ts)
{
	(void)c, (void)d, (void)ts;
	for (size_t i = 0; i < n; i++)
		fuzz_sink += p[i];
}

static const struct http1_callbacks cbs = { .on_body = on_body };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	struct http1_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return 0;
	http1_conn__init(c, &cbs, NULL);
	http1_conn__begin(c, 0, mode & 1);
	http1_conn__begin(c, 1, mode & 2);
	size_t piece = (mode >> 2) ? (mode >> 2) : size;
	data++;
	size--;
	for (size_t o = 0, k = 0; o < size; o += piece, k++) {
		size_t n = size - o < piece ? size - o : piece;
		int dir = (int)(k & 1);
		if ((mode & 0x80) && k % 5 == 2)
			http1_conn__lose(c, dir, n);
		else
			http1_conn__feed(c, dir, data + o, n, o);
	}
	http1_conn__close(c, 1, size);
	free(c);
	return 0;
}
