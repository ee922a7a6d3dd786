/* What a connection's decoder costs: 1000 decoders, fresh and after a real mid-connection
 * exchange (kube-apiserver's etcd connection from tests/fixtures/bind_midconn.jsonl, two Txns and
 * watch events), counted by the allocator and as resident memory. The numbers are printed; the
 * checks are bounds that the fixed-size tables of old (about 470 KB a connection) would fail by
 * far, and the per-decoder message scratch and spare buffers of later (8.5 KB fresh) too. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode.h"
#include "fixture.h"

#if defined(__SANITIZE_ADDRESS__)
#define MEMORY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMORY_ASAN 1
#endif
#endif
#ifdef MEMORY_ASAN
/* From the sanitizer runtime (sanitizer/allocator_interface.h, which gcc does not install). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

#define DECODERS 1000
#define CONN 91698 /* kube-apiserver -> etcd */

/* Bytes the program has allocated and not freed. */
static size_t heap_now(void)
{
#ifdef MEMORY_ASAN
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
#endif
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

static void count(const struct decoded_msg *m, void *ctx)
{
	(void)m;
	(*(int *)ctx)++;
}

int main(void)
{
	static struct fixture_record recs[256];
	static struct conn_decoder *dec[DECODERS];
	const char *dir = getenv("FIXTURES");
	char path[512];
	int messages = 0;

	snprintf(path, sizeof(path), "%s/bind_midconn.jsonl", dir ? dir : "tests/fixtures");
	int n = fixture__load(path, recs, 256);
	CHECK(n > 0, "%s: %d records", path, n);

	size_t h0 = heap_now();
	long r0 = rss_kb();
	for (int i = 0; i < DECODERS; i++) {
		dec[i] = conn_decoder__new(count, &messages);
		conn_decoder__set_client_dir(dec[i], CONN_DIR_OUT);
	}
	size_t fresh = (heap_now() - h0) / DECODERS;
	long fresh_rss = (rss_kb() - r0) * 1024 / DECODERS;
	size_t fresh_own = conn_decoder__heap_bytes(dec[0]);

	for (int i = 0; i < DECODERS; i++)
		for (int k = 0; k < n; k++)
			if (recs[k].conn == CONN)
				conn_decoder__feed(dec[i], recs[k].dir, recs[k].offset,
						   recs[k].data, recs[k].len, recs[k].ts);
	size_t used = (heap_now() - h0) / DECODERS;
	long used_rss = (rss_kb() - r0) * 1024 / DECODERS;
	size_t used_own = conn_decoder__heap_bytes(dec[0]);

	printf("memory: per decoder, fresh: %zu B allocated (%zu B by its own count), %ld B RSS\n",
	       fresh, fresh_own, fresh_rss);
	printf("memory: per decoder, after the etcd connection of the fixture (%d messages each): "
	       "%zu B allocated (%zu B by its own count), %ld B RSS\n",
	       messages / DECODERS, used, used_own, used_rss);
	CHECK(messages / DECODERS >= 6, "%d messages", messages / DECODERS);
	/* A thousand kubelets' connections to the apiserver are a thousand decoders: what one
	 * holds idle is what such a cluster costs the tracer (about 21.5 KB after this traffic when
	 * each decoder had its own message scratch, kept two spare streams with their buffers and its
	 * header block buffers). */
	CHECK(fresh < 4 * 1024, "a fresh decoder holds %zu bytes", fresh);
	CHECK(used < 12 * 1024, "an idle decoder after traffic holds %zu bytes", used);
	/* Its own count is what the allocator saw, to within allocation rounding. */
	CHECK(fresh_own <= fresh + 64 && fresh_own + 1024 >= fresh, "own %zu, allocator %zu",
	      fresh_own, fresh);
	CHECK(used_own <= used + 1024 && used_own + 4096 >= used, "own %zu, allocator %zu",
	      used_own, used);

	for (int i = 0; i < DECODERS; i++)
		conn_decoder__free(dec[i]);
#ifdef MEMORY_ASAN
	/* (glibc's own count keeps what its arenas cache) */
	CHECK(heap_now() <= h0 + 4096, "all given back: %zu bytes over", heap_now() - h0);
#endif
	fixture__free(recs, n);
	return check_summary("memory");
}
