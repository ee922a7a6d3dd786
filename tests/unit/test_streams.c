/* conn_decoder with many interleaved HTTP/2 streams: all decoded while under the stream cap; past
 * it the least recently used are dropped and counted, and nothing else breaks. Fed whole and
 * byte by byte. */
#include <stdlib.h>

#include "check.h"
#include "decode.h"
#include "h2.h"
#include "h2write.h"
#include "pbwrite.h"

static uint8_t wire[4 << 20];
static size_t wire_len;

static void frame(uint8_t type, uint8_t flags, uint32_t sid, const void *p, size_t len)
{
	wire_len += h2w_frame(wire + wire_len, type, flags, sid, p, len);
}

static void build(int streams)
{
	wire_len = 0;
	memcpy(wire, H2_PREFACE, H2_PREFACE_LEN);
	wire_len = H2_PREFACE_LEN;
	frame(H2_SETTINGS, 0, 0, NULL, 0);
	for (int i = 0; i < streams; i++) {
		uint8_t hb[256];
		char path[96];
		size_t n = 0;
		snprintf(path, sizeof(path), "/api/v1/namespaces/ns/pods/p%d/binding", i);
		hb[n++] = 0x83; /* :method POST */
		n += h2w_lit(hb + n, ":path", path);
		n += h2w_lit(hb + n, "content-type", "application/vnd.kubernetes.protobuf");
		n += h2w_lit(hb + n, "authorization", "Bearer eyJzecret.payload.sig");
		frame(H2_HEADERS, H2_FLAG_END_HEADERS, 1 + 2 * (uint32_t)i, hb, n);
	}
	/* bodies in reverse order, each in two DATA frames */
	for (int i = streams - 1; i >= 0; i--) {
		static struct pbw m, t, b, u, tm;
		char name[16], node[16];
		snprintf(name, sizeof(name), "p%d", i);
		snprintf(node, sizeof(node), "node-%d", i % 3);
		m.n = t.n = b.n = u.n = tm.n = 0;
		pbw_str(&m, 1, name);
		pbw_str(&m, 3, "ns");
		pbw_str(&t, 1, "Node");
		pbw_str(&t, 3, node);
		pbw_msg(&b, 1, &m);
		pbw_msg(&b, 2, &t);
		pbw_str(&tm, 1, "v1");
		pbw_str(&tm, 2, "Binding");
		memcpy(u.b, "k8s\0", 4);
		u.n = 4;
		pbw_msg(&u, 1, &tm);
		pbw_msg(&u, 2, &b);
		size_t half = u.n / 2;
		frame(H2_DATA, 0, 1 + 2 * (uint32_t)i, u.b, half);
		frame(H2_DATA, H2_FLAG_END_STREAM, 1 + 2 * (uint32_t)i, u.b + half, u.n - half);
	}
}

struct seen {
	int binds;
	int wrong;
	int secrets;
};

static void on_msg(const struct decoded_msg *m, void *ctx)
{
	struct seen *s = ctx;
	if (memmem(m, sizeof(*m), "eyJzecret", 9))
		s->secrets++;
	if (m->kind != DECODED_REQUEST || m->body_kind != BODY_K8S ||
	    m->body.k8s.kind != K8S_KIND_BINDING)
		return;
	s->binds++;
	/* the body must belong to the stream whose path names it */
	char want[320];
	snprintf(want, sizeof(want), "/api/v1/namespaces/ns/pods/%s/binding",
		 m->body.k8s.meta.name);
	if (strcmp(want, m->http.path))
		s->wrong++;
}

static void run(int streams, size_t piece, int want_binds, int want_evicted)
{
	struct seen s = { 0 };
	struct conn_decoder_stats st;
	struct conn_decoder *d = conn_decoder__new(on_msg, &s);

	build(streams);
	for (size_t o = 0; o < wire_len; o += piece ? piece : wire_len) {
		size_t n = piece && piece < wire_len - o ? piece : wire_len - o;
		conn_decoder__feed(d, 0, o, wire + o, n, 1000 + o);
	}
	conn_decoder__stats(d, &st);
	CHECK(s.binds == want_binds, "%d streams piece %zu: %d binds, want %d", streams, piece,
	      s.binds, want_binds);
	CHECK_INT(s.wrong, 0);
	CHECK_INT(s.secrets, 0);
	CHECK(st.streams_evicted == (uint64_t)want_evicted, "%d streams: %llu evicted", streams,
	      (unsigned long long)st.streams_evicted);
	CHECK_INT(st.client_dir, 0);
	conn_decoder__free(d);
}

int main(void)
{
	run(100, 0, 100, 0);
	run(100, 1, 100, 0);
	/* A 1000-pod bind burst had 152 Txns open at once on the apiserver's connection to
	 * etcd; with 128 streams a bind's Txn and a watch event were lost. */
	run(300, 0, 300, 0);
	run(300, 1, 300, 0);
	run(DECODE_MAX_STREAMS, 0, DECODE_MAX_STREAMS, 0);
	/* 72 more than the cap: the oldest 72 are dropped as the last open, then the 72 streams
	 * their bodies make anew drop 72 more... */
	run(DECODE_MAX_STREAMS + 72, 0, DECODE_MAX_STREAMS, 72 + 72);
	return check_summary("streams");
}
