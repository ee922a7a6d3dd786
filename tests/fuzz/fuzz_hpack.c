/* libFuzzer target: HPACK blocks (each prefixed by a length byte) through one decoder, strict or
 * tolerant by byte 0; a failed block makes the decoder forget its table, as the h2 layer does. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hpack.h"

static int on_header(const struct hpack_header *h, void *ctx)
{
	size_t *total = ctx;
	*total += h->name_len + h->value_len;
	for (size_t i = 0; i < h->value_len; i++)
		*total += (unsigned char)h->value[i];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hpack_decoder dec;
	size_t total = 0;
	char out[256];

	if (size < 1)
		return 0;
	hpack_decoder__reset(&dec, data[0] & 1);
	hpack__huffman_decode(data + 1, size - 1, out, sizeof(out));
	for (size_t o = 1; o < size;) {
		size_t n = data[o++];
		if (n > size - o)
			n = size - o;
		if (hpack_decoder__decode(&dec, data + o, n, on_header, &total))
			hpack_decoder__forget(&dec);
		o += n;
	}
	hpack_decoder__free(&dec);
	return 0;
}
