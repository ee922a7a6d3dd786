/* util: base64 written and read back over every length and byte value; JSON strings made of
 * whatever bytes a traced process chose (its name, a file name) stay valid UTF-8, keeping what
 * was well-formed. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"

static void check_base64(void)
{
	static const struct {
		const char *in, *out;
	} vectors[] = { /* RFC 4648, section 10 */
			{ "", "" },
			{ "f", "Zg==" },
			{ "fo", "Zm8=" },
			{ "foo", "Zm9v" },
			{ "foob", "Zm9vYg==" },
			{ "fooba", "Zm9vYmE=" },
			{ "foobar", "Zm9vYmFy" }
	};
	unsigned char bytes[300], back[300];
	char text[404];
	size_t i, n;

	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		n = util__base64_encode((const unsigned char *)vectors[i].in, strlen(vectors[i].in),
					text);
		CHECK(strcmp(text, vectors[i].out) == 0, "\"%s\": %s", vectors[i].in, text);
		CHECK_INT(n, strlen(vectors[i].out));
	}
	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)(i * 7 + 3);
	for (n = 0; n <= sizeof(bytes); n++) {
		size_t len = util__base64_encode(bytes, n, text);
		long got = util__base64_decode(text, len, back);

		CHECK(len == 4 * ((n + 2) / 3) && got == (long)n && memcmp(back, bytes, n) == 0,
		      "%zu bytes round trip", n);
	}
}

/* RFC 4648 one bit at a time, to hold the table and vector encoders to. */
static size_t reference_base64(const unsigned char *p, size_t n, char *out)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t bit, k = 0;

	for (bit = 0; bit < n * 8; bit += 6) {
		unsigned v = 0;

		for (size_t b = bit; b < bit + 6; b++)
			v = v << 1 | (b < n * 8 ? (p[b / 8] >> (7 - b % 8)) & 1 : 0);
		out[k++] = alphabet[v];
	}
	while (k % 4)
		out[k++] = '=';
	out[k] = '\0';
	return k;
}

/* Random bytes at every alignment and length up to a few vector steps, and capture's largest
 * event, into a buffer of exactly the documented size (ASan sees a write past it), against the
 * reference. */
static void check_base64_reference(void)
{
	static unsigned char bytes[16384 + 64];
	char *want = malloc(4 * (sizeof(bytes) / 3 + 1) + 1), *got;
	size_t i, n, off, bad = 0;

	srand(15);
	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)rand();
	for (off = 0; off < 32; off++) {
		for (n = 0; n <= 200; n++) {
			size_t room = 4 * ((n + 2) / 3) + 1, len;

			got = malloc(room);
			len = util__base64_encode(bytes + off, n, got);
			reference_base64(bytes + off, n, want);
			if (len != strlen(want) || strcmp(got, want) != 0)
				bad++;
			free(got);
		}
	}
	CHECK(bad == 0, "%zu of %d encodings differ from the reference", bad, 32 * 201);
	for (n = 16384 - 2; n <= 16384 + 2; n++) {
		got = malloc(4 * ((n + 2) / 3) + 1);
		util__base64_encode(bytes + 5, n, got);
		reference_base64(bytes + 5, n, want);
		CHECK(strcmp(got, want) == 0, "%zu bytes", n);
		free(got);
	}
	free(want);
}

static void check_json_string(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "kube-apiserver", "kube-apiserver" },
		{ "caf\xc3\xa9", "caf\xc3\xa9" }, /* é, well-formed: kept */
		{ "a\xff"
		  "b",
		  "a?b" },			/* not UTF-8 at all */
		{ "\xc3", "?" },		/* cut short */
		{ "\xc0\xaf", "??" },		/* overlong '/' */
		{ "\xed\xa0\x80", "???" },	/* a surrogate */
		{ "\xf4\x90\x80\x80", "????" }, /* past U+10FFFF */
		{ "\xf0\x9f\x98\x80 \xe2\x82",
		  "\xf0\x9f\x98\x80 ??" }, /* an emoji, then a cut one */
		{ "/var/lib/etcd/member/wal/\x80.wal", "/var/lib/etcd/member/wal/?.wal" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = util__json_string(cases[i].in);

		CHECK(j != NULL, "case %zu: a string", i);
		CHECK_STR(json_string_value(j), cases[i].out);
		json_decref(j);
	}
}

/* Decimal numbers as snprintf("%lld") writes them: the edges, every power of ten and its
 * neighbours, and a spread of others. */
static void check_fmt_ll(void)
{
	long long edge[] = { 0, 1, -1, 9, 10, -10, LLONG_MAX, LLONG_MIN, LLONG_MIN + 1 };
	unsigned long long x = 0x9e3779b97f4a7c15ull;
	size_t i;

	for (i = 0; i < sizeof(edge) / sizeof(edge[0]) + 3 * 19 + 2000; i++) {
		char got[24], want[24];
		long long v;
		size_t n;

		if (i < sizeof(edge) / sizeof(edge[0])) {
			v = edge[i];
		} else if (i < sizeof(edge) / sizeof(edge[0]) + 3 * 19) {
			size_t k = i - sizeof(edge) / sizeof(edge[0]);
			long long p = 1;

			for (size_t e = 0; e < k / 3; e++)
				p *= 10;
			v = p + (long long)(k % 3) - 1;
			if (k % 2)
				v = -v;
		} else {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			v = (long long)(x >> (x & 63));
		}
		n = util__fmt_ll(got, v);
		got[n] = '\0';
		snprintf(want, sizeof(want), "%lld", v);
		CHECK(strcmp(got, want) == 0, "got \"%s\", want \"%s\"", got, want);
	}
}

int main(void)
{
	check_fmt_ll();
	check_base64();
	check_base64_reference();
	check_json_string();
	return check_summary("util");
}
