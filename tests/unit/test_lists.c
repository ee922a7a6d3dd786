/* A JSON list as the apiserver answers a LIST or a DELETE of a collection: told from its head
 * (k8s__json_list_head) at every cut of its first bytes, never taken for one when it is not, and
 * decoded by conn_decoder from its head alone: the message names it as before (kind, apiVersion,
 * metadata) with the whole body's length, while the decoder never holds more than a few KiB of
 * it, however long the list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode.h"
#include "k8s.h"

static const char list_head[] =
    "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"resourceVersion\":\"4242\",\"annotations\":{\"a\":\"x\\\"}{,\"}},"
    " \"items\":[";

static long head_of(const char *s)
{
	return k8s__json_list_head(s, strlen(s));
}

static void test_scan(void)
{
	size_t full = strlen(list_head);
	long want = (long)(strstr(list_head, " \"items\"") - list_head);
	char buf[256];
	struct k8s_object o;

	/* Every cut of the head: more bytes needed, until "items": is there. */
	for (size_t n = 0; n <= full; n++) {
		long got = k8s__json_list_head(list_head, n);
		size_t items_colon = (size_t)(strstr(list_head, "\"items\":") - list_head) + 8;

		if (n < items_colon)
			CHECK(got == -EAGAIN, "cut at %zu: %ld", n, got);
		else
			CHECK(got == want, "cut at %zu: %ld, want %ld", n, got, want);
	}
	/* Its head, closed, is a JSON object naming the list. */
	memcpy(buf, list_head, (size_t)want);
	size_t n = k8s__json_list_head_close(buf, (size_t)want);
	CHECK_INT(k8s__decode_json(buf, n, &o, NULL), 0);
	CHECK_INT(o.kind, K8S_KIND_OTHER);
	CHECK_STR(o.kind_name, "PodList");
	CHECK_STR(o.api_version, "v1");
	CHECK_STR(o.meta.resource_version, "4242");

	/* Not lists, or not ones told from the head: 0, decided. */
	CHECK_INT(head_of("{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{}"), 0);
	CHECK_INT(head_of("{\"apiVersion\":\"v1\",\"items\":[],\"kind\":\"PodList\"}"), 0);
	CHECK_INT(head_of("{\"items\":[],\"kind\":\"PodList\"}"), 0);
	CHECK_INT(head_of("{\"kind\":\"PodList\",\"metadata\":{}}"), 0); /* no items */
	CHECK_INT(head_of("{\"kind\":7,\"items\":[]}"), 0);
	CHECK_INT(head_of("{\"kind\":\"Listing\",\"items\":[]}"), 0);
	CHECK_INT(head_of("[{\"kind\":\"PodList\"}]"), 0);
	CHECK_INT(head_of("k8s\0"), 0);
	CHECK_INT(head_of("{\"kind\" \"PodList\",\"items\":[]}"), 0);
	/* "List" alone is a list (kubectl's). */
	CHECK(head_of("{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[]}") > 0, "List");
	/* Too little to tell. */
	CHECK_INT(head_of(""), -EAGAIN);
	CHECK_INT(head_of("  {\"kind\":\"PodLi"), -EAGAIN);
	CHECK_INT(head_of("{\"kind\":\"PodList\",\"metadata\":{\"a\":[1,2,{\"b\":"), -EAGAIN);
	/* Nesting past the scan's depth: not judged a list. */
	{
		char deep[512] = "{\"kind\":\"PodList\",\"metadata\":";
		for (int i = 0; i < 100; i++)
			strcat(deep, "[");
		CHECK_INT(head_of(deep), 0);
	}
}

struct got {
	int n;
	struct decoded_msg m;
	size_t after; /* what the decoder held once the exchange was over */
};

static void on_msg(const struct decoded_msg *m, void *ctx)
{
	struct got *g = ctx;

	if (m->kind == DECODED_RESPONSE)
		g->m = *m;
	g->n++;
}

/* An HTTP/1.1 GET and its response (Content-Length), the body fed in 16 KiB pieces; the most the
 * decoder held while it came. */
static size_t exchange(const char *body, size_t len, struct got *g)
{
	struct conn_decoder *dec = conn_decoder__new(on_msg, g);
	static const char req[] = "GET /api/v1/namespaces/soak/pods HTTP/1.1\r\nHost: a\r\n\r\n";
	char head[128];
	size_t most = 0, off;
	int hn = snprintf(head, sizeof(head),
			  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			  "Content-Length: %zu\r\n\r\n",
			  len);

	memset(g, 0, sizeof(*g));
	conn_decoder__set_client_dir(dec, CONN_DIR_IN);
	conn_decoder__feed(dec, CONN_DIR_IN, 0, req, strlen(req), 1);
	conn_decoder__feed(dec, CONN_DIR_OUT, 0, head, (size_t)hn, 2);
	for (off = 0; off < len; off += 16384) {
		size_t n = len - off < 16384 ? len - off : 16384;
		size_t h;

		conn_decoder__feed(dec, CONN_DIR_OUT, (uint64_t)hn + off, body + off, n, 3);
		h = conn_decoder__heap_bytes(dec);
		if (h > most)
			most = h;
	}
	g->after = conn_decoder__heap_bytes(dec);
	conn_decoder__free(dec);
	return most;
}

static void test_decoder(void)
{
	static const char pod[] =
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
	    "\"p\",\"namespace\":\"soak\"},\"spec\":{\"nodeName\":\"node-a\"}}";
	size_t cap = 3u << 20, len, items = 0, most;
	char *body = malloc(cap);
	struct got g;

	/* A PodList of 3 MiB. */
	len = (size_t)snprintf(body, cap, "%s", list_head);
	while (len + sizeof(pod) + 2 < cap - 64) {
		len += (size_t)snprintf(body + len, cap - len, "%s%s", items ? "," : "", pod);
		items++;
	}
	len += (size_t)snprintf(body + len, cap - len, "]}");
	most = exchange(body, len, &g);
	printf("lists: a %zu-byte PodList of %zu pods: the decoder held at most %zu bytes\n", len,
	       items, most);
	CHECK(most < 64 * 1024, "the decoder held %zu bytes of a %zu-byte list", most, len);
	CHECK_INT(g.n, 2);
	CHECK_INT(g.m.body_kind, BODY_K8S);
	CHECK_INT(g.m.body.k8s.kind, K8S_KIND_OTHER);
	CHECK_STR(g.m.body.k8s.kind_name, "PodList");
	CHECK_STR(g.m.body.k8s.meta.resource_version, "4242");
	CHECK_INT(g.m.body_len, len);
	CHECK(!g.m.body_truncated, "truncated");

	/* A body that is not a list is kept and decoded whole, as before. */
	most = exchange(pod, strlen(pod), &g);
	CHECK_INT(g.m.body_kind, BODY_K8S);
	CHECK_INT(g.m.body.k8s.kind, K8S_KIND_POD);
	CHECK_STR(g.m.body.k8s.pod.node_name, "node-a");
	CHECK_INT(g.m.body_len, strlen(pod));

	/* A large object that is not a list is held whole while it comes, decoded, and its buffer
	 * given back once its stream is done. */
	len = (size_t)snprintf(body, cap,
			       "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
			       "\"metadata\":{\"name\":\"big\"},\"data\":{\"x\":\"");
	memset(body + len, 'a', 1u << 20);
	len += 1u << 20;
	len += (size_t)snprintf(body + len, cap - len, "\"}}");
	most = exchange(body, len, &g);
	printf("lists: a %zu-byte ConfigMap: the decoder held at most %zu bytes, %zu after\n", len,
	       most, g.after);
	CHECK(most > len, "held whole: %zu", most);
	CHECK_STR(g.m.body.k8s.kind_name, "ConfigMap");
	CHECK_STR(g.m.body.k8s.meta.name, "big");
	CHECK(g.after < 48 * 1024, "%zu bytes held after the exchange", g.after);
	free(body);
}

int main(void)
{
	test_scan();
	test_decoder();
	return check_summary("lists");
}
