/* HPACK decoder tests: RFC 7541 examples, agreement with nghttp2's inflater on blocks made by
 * nghttp2's deflater, and tolerance when decoding starts after the table was filled. */
#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hpack.h"

#define MAX_HDRS 64

struct hdr_list {
	int n;
	char name[MAX_HDRS][256];
	char value[MAX_HDRS][1024];
	unsigned flags[MAX_HDRS];
};

static int collect(const struct hpack_header *h, void *ctx)
{
	struct hdr_list *l = ctx;
	if (l->n >= MAX_HDRS)
		return 1;
	snprintf(l->name[l->n], sizeof(l->name[0]), "%.*s", (int)h->name_len, h->name);
	snprintf(l->value[l->n], sizeof(l->value[0]), "%.*s", (int)h->value_len, h->value);
	l->flags[l->n] = h->flags;
	l->n++;
	return 0;
}

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;
	while (*s) {
		if (*s == ' ') {
			s++;
			continue;
		}
		unsigned v;
		sscanf(s, "%2x", &v);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static void test_rfc_examples(void)
{
	static struct hpack_decoder dec;
	struct hdr_list l = { 0 };
	uint8_t buf[256];
	size_t n;

	hpack_decoder__reset(&dec, true);
	n = unhex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", buf);
	CHECK_INT(hpack_decoder__decode(&dec, buf, n, collect, &l), 0);
	CHECK_INT(l.n, 4);
	CHECK_STR(l.name[0], ":method");
	CHECK_STR(l.value[0], "GET");
	CHECK_STR(l.value[2], "/");
	CHECK_STR(l.name[3], ":authority");
	CHECK_STR(l.value[3], "www.example.com");
	CHECK_INT(dec.size, 57);

	memset(&l, 0, sizeof(l));
	n = unhex("8286 84be 5886 a8eb 1064 9cbf", buf);
	CHECK_INT(hpack_decoder__decode(&dec, buf, n, collect, &l), 0);
	CHECK_INT(l.n, 5);
	CHECK_STR(l.value[3], "www.example.com");
	CHECK_STR(l.name[4], "cache-control");
	CHECK_STR(l.value[4], "no-cache");
	CHECK_INT(dec.size, 110);

	/* The same second block, seen by a decoder that attached after the first. */
	static struct hpack_decoder late;
	hpack_decoder__reset(&late, false);
	memset(&l, 0, sizeof(l));
	CHECK_INT(hpack_decoder__decode(&late, buf, n, collect, &l), 0);
	CHECK_INT(l.n, 5);
	CHECK(l.flags[3] & HPACK_NAME_UNKNOWN, "flags %u", l.flags[3]);
	CHECK_STR(l.value[4], "no-cache");
	CHECK_INT(late.unknown_refs, 1);
	/* ...while a decoder that saw the start calls the same thing an error. */
	static struct hpack_decoder strict;
	hpack_decoder__reset(&strict, true);
	CHECK_INT(hpack_decoder__decode(&strict, buf, n, NULL, NULL), -EBADMSG);

	hpack_decoder__free(&dec);
	hpack_decoder__free(&late);
	hpack_decoder__free(&strict);
}

static void test_huffman_bad(void)
{
	char out[16];
	const uint8_t eos[] = { 0xff, 0xff, 0xff, 0xff }; /* contains EOS */
	const uint8_t pad0[] = { 0x00 };		  /* '0' then zero padding */
	const uint8_t good[] = { 0x07 };		  /* '0' then 3 one bits */
	CHECK(hpack__huffman_decode(eos, sizeof(eos), out, sizeof(out)) < 0, "eos");
	CHECK(hpack__huffman_decode(pad0, sizeof(pad0), out, sizeof(out)) < 0, "zero padding");
	CHECK_INT(hpack__huffman_decode(good, sizeof(good), out, sizeof(out)), 1);
	CHECK(out[0] == '0', "got %c", out[0]);
}

/* Header sets like those client-go and the apiserver send, with values that change per request. */
static int make_headers(int i, nghttp2_nv *nv, char store[][128])
{
	int n = 0;
#define NV(nm, val)                                                                                \
	do {                                                                                       \
		nv[n].name = (uint8_t *)(nm);                                                      \
		nv[n].namelen = strlen(nm);                                                        \
		snprintf(store[n], 128, "%s", (val));                                              \
		nv[n].value = (uint8_t *)store[n];                                                 \
		nv[n].valuelen = strlen(store[n]);                                                 \
		nv[n].flags = NGHTTP2_NV_FLAG_NONE;                                                \
		n++;                                                                               \
	} while (0)
	char path[128];
	snprintf(path, sizeof(path), "/api/v1/namespaces/ns%d/pods/pod-%d/binding", i % 3, i);
	NV(":method", i % 4 ? "POST" : "GET");
	NV(":scheme", "https");
	NV(":authority", "127.0.0.1:6443");
	NV(":path", path);
	NV("content-type", "application/vnd.kubernetes.protobuf");
	NV("accept", "application/vnd.kubernetes.protobuf, */*");
	NV("user-agent", "kube-scheduler/v1.34.1 (linux/amd64) kubernetes/abc/scheduler");
	if (i % 5 == 0) {
		char big[128];
		memset(big, 'a' + i % 26, 120);
		big[120] = 0;
		NV("x-big", big);
	}
	char v[32];
	snprintf(v, sizeof(v), "%d", i * 7919);
	NV("x-request-id", v);
	NV("authorization", "Bearer abc.def.ghi");
	nv[n - 1].flags = NGHTTP2_NV_FLAG_NO_INDEX;
	return n;
}

static int nghttp2_inflate(nghttp2_hd_inflater *inf, const uint8_t *buf, size_t len,
			   struct hdr_list *l)
{
	for (;;) {
		nghttp2_nv nv;
		int flags = 0;
		ssize_t r = nghttp2_hd_inflate_hd2(inf, &nv, &flags, buf, len, 1);
		if (r < 0)
			return -1;
		buf += r;
		len -= (size_t)r;
		if (flags & NGHTTP2_HD_INFLATE_EMIT) {
			snprintf(l->name[l->n], 256, "%.*s", (int)nv.namelen, nv.name);
			snprintf(l->value[l->n], 1024, "%.*s", (int)nv.valuelen, nv.value);
			l->n++;
		}
		if (flags & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(inf);
			return 0;
		}
		if (r == 0 && len == 0)
			return 0;
	}
}

static void test_against_nghttp2(size_t table_size, int late_start)
{
	nghttp2_hd_deflater *def;
	nghttp2_hd_inflater *inf;
	static struct hpack_decoder dec;
	int mismatches = 0, unknown = 0, known_after_refill = 0, blocks = 200;

	nghttp2_hd_deflate_new(&def, table_size);
	nghttp2_hd_inflate_new(&inf);
	if (table_size > 4096)
		nghttp2_hd_inflate_change_table_size(inf, table_size);
	hpack_decoder__reset(&dec, true);
	for (int i = 0; i < blocks; i++) {
		nghttp2_nv nv[16];
		char store[16][128];
		uint8_t buf[4096];
		int n = make_headers(i, nv, store);
		if (i == 50 && table_size != 4096)
			nghttp2_hd_deflate_change_table_size(def, table_size / 2);
		ssize_t len = nghttp2_hd_deflate_hd(def, buf, sizeof(buf), nv, (size_t)n);
		CHECK(len > 0, "deflate %zd", len);
		struct hdr_list want = { 0 }, got = { 0 };
		CHECK_INT(nghttp2_inflate(inf, buf, (size_t)len, &want), 0);
		if (i < late_start)
			continue;
		if (i == late_start && late_start)
			hpack_decoder__reset(&dec, false);
		CHECK_INT(hpack_decoder__decode(&dec, buf, (size_t)len, collect, &got), 0);
		CHECK_INT(got.n, want.n);
		for (int k = 0; k < got.n && k < want.n; k++) {
			if (got.flags[k] & HPACK_VALUE_UNKNOWN) {
				unknown++;
				continue;
			}
			if (got.flags[k] & HPACK_NAME_UNKNOWN) {
				unknown++;
				if (strcmp(got.value[k], want.value[k]))
					mismatches++;
				continue;
			}
			if (strcmp(got.name[k], want.name[k]) ||
			    strcmp(got.value[k], want.value[k]))
				mismatches++;
			if (i > late_start + 20)
				known_after_refill++;
		}
	}
	CHECK_INT(mismatches, 0);
	if (late_start) {
		if (table_size >= 4096)
			CHECK(unknown > 0, "a late start should meet unknown entries (table %zu)",
			      table_size);
		CHECK(known_after_refill > 0, "nothing known after refill");
	} else {
		CHECK_INT(unknown, 0);
	}
	nghttp2_hd_deflate_del(def);
	nghttp2_hd_inflate_del(inf);
	hpack_decoder__free(&dec);
}

static void test_garbage(void)
{
	static struct hpack_decoder dec;
	uint8_t buf[512];
	unsigned seed = 1;

	hpack_decoder__reset(&dec, false);
	for (int round = 0; round < 2000; round++) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			seed = seed * 1103515245 + 12345;
			buf[i] = (uint8_t)(seed >> 16);
		}
		int r = hpack_decoder__decode(&dec, buf, (size_t)(seed % sizeof(buf)), NULL, NULL);
		if (r)
			hpack_decoder__forget(&dec);
	}
	CHECK(dec.size <= HPACK_MAX_TABLE_SIZE, "size %u", dec.size);
	hpack_decoder__free(&dec);
}

/* The entry ring grows as entries come (16, 32, ... 2048) and indices stay exact across each
 * growth; a fresh decoder holds nothing on the heap. */
static void test_table_growth(void)
{
	static struct hpack_decoder dec;
	static uint8_t buf[1 << 16];
	size_t n = 0;
	int bad = 0;

	hpack_decoder__reset(&dec, true);
	CHECK_INT(hpack_decoder__heap_bytes(&dec), 0);
	/* Table size update to 65536 (001 prefix, 5-bit integer), then 1500 inserted literals. */
	buf[n++] = 0x3f;
	buf[n++] = (uint8_t)(0x80 | ((65536 - 31) & 0x7f));
	buf[n++] = (uint8_t)(0x80 | (((65536 - 31) >> 7) & 0x7f));
	buf[n++] = (uint8_t)((65536 - 31) >> 14);
	for (int i = 0; i < 1500; i++) {
		char name[16], value[16];
		int nl = snprintf(name, sizeof(name), "x-k%d", i);
		int vl = snprintf(value, sizeof(value), "v%d", i);
		buf[n++] = 0x40;
		buf[n++] = (uint8_t)nl;
		memcpy(buf + n, name, (size_t)nl);
		n += (size_t)nl;
		buf[n++] = (uint8_t)vl;
		memcpy(buf + n, value, (size_t)vl);
		n += (size_t)vl;
	}
	CHECK_INT(hpack_decoder__decode(&dec, buf, n, NULL, NULL), 0);
	CHECK_INT(dec.count, 1500);
	CHECK_INT(dec.entries_cap, 2048);
	CHECK(hpack_decoder__heap_bytes(&dec) > 0, "heap");
	/* Index 62 + k is the k-th newest: entry 1499 - k. */
	for (int k = 0; k < 1500; k += 7) {
		struct hdr_list l = { 0 };
		uint8_t ref[8];
		size_t r = 0;
		unsigned idx = 62 + (unsigned)k;
		ref[r++] = 0xff; /* indexed, 7-bit prefix full */
		idx -= 127;
		while (idx >= 128) {
			ref[r++] = (uint8_t)(0x80 | (idx & 0x7f));
			idx >>= 7;
		}
		ref[r++] = (uint8_t)idx;
		if (62 + k < 127) {
			r = 0;
			ref[r++] = (uint8_t)(0x80 | (62 + k));
		}
		CHECK_INT(hpack_decoder__decode(&dec, ref, r, collect, &l), 0);
		char want[16];
		snprintf(want, sizeof(want), "x-k%d", 1499 - k);
		if (l.n != 1 || strcmp(l.name[0], want))
			bad++;
	}
	CHECK_INT(bad, 0);
	hpack_decoder__free(&dec);
	CHECK_INT(hpack_decoder__heap_bytes(&dec), 0);
}

int main(void)
{
	test_rfc_examples();
	test_huffman_bad();
	test_against_nghttp2(4096, 0);
	test_against_nghttp2(4096, 37);
	test_against_nghttp2(256, 0);
	test_against_nghttp2(256, 90);
	test_against_nghttp2(65536, 120);
	test_garbage();
	test_table_growth();
	return check_summary("hpack");
}
