/* conn_decoder on connections met mid-way, as a tracer attaching to a running control plane does:
 * the HPACK dynamic table is unknown, so :method, :path, content-type and grpc-status may be too.
 * - the client side given by the caller (conn_decoder__set_client_dir) before or after the first
 *   bytes decides request and response;
 * - gRPC is recognised by its DATA and the etcd method inferred from the message (Txn, Range,
 *   Watch, LeaseKeepAlive), conservatively; unary responses complete at END_STREAM;
 * - Kubernetes requests with an unknown :path keep their decoded body; a Binding's names its
 *   path (a pod bound again under a name the scheduler's encoder indexed before the tracer came);
 * - a watch made again after capture began, whose response content-type is a dynamic entry never
 *   seen, is read from its first DATA frame (protobuf frames or JSON lines), not as JSON: a
 *   synthetic one, and a real capture (tests/fixtures/watch_remade_midconn.jsonl);
 * - a direction whose first captured byte is not the connection's first is read from a frame
 *   boundary with a tolerant HPACK;
 * - a real capture (tests/fixtures/bind_midconn.jsonl: kube-apiserver's connections to etcd and
 *   from the scheduler and kubectl) gives the pod's Txn, its TxnResponse, the Binding and its 201.
 * Every input is fed whole, byte by byte and in 7-byte pieces. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode.h"
#include "fixture.h"
#include "h2.h"
#include "h2write.h"
#include "http1.h"
#include "pbwrite.h"

#define MAX_MSGS 256

struct seen {
	int n;
	struct decoded_msg *m;
	uint64_t conn[MAX_MSGS];
	uint64_t cur_conn;
};

static void collect(const struct decoded_msg *m, void *ctx)
{
	struct seen *s = ctx;
	if (s->n < MAX_MSGS) {
		s->conn[s->n] = s->cur_conn;
		s->m[s->n++] = *m;
	}
}

static void seen_init(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	s->m = calloc(MAX_MSGS, sizeof(*s->m));
}

/* Synthetic connections: HTTP/2 frames per direction. */

struct wire {
	uint8_t b[16384];
	size_t n;
};

static void frame(struct wire *w, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
		  size_t len)
{
	w->n += h2w_frame(w->b + w->n, type, flags, sid, p, len);
}

/* gRPC's 5-byte prefix and the message. */
static void grpc_data(struct wire *w, uint8_t flags, uint32_t sid, const struct pbw *msg)
{
	uint8_t b[8192];
	b[0] = 0;
	b[1] = (uint8_t)(msg->n >> 24);
	b[2] = (uint8_t)(msg->n >> 16);
	b[3] = (uint8_t)(msg->n >> 8);
	b[4] = (uint8_t)msg->n;
	memcpy(b + 5, msg->b, msg->n);
	frame(w, H2_DATA, flags, sid, b, 5 + msg->n);
}

/* A request head as the apiserver's etcd client sends it once the table is warm: :method POST and
 * :scheme https from the static table, the rest (:path, :authority, content-type, te...) from
 * dynamic entries inserted before the capture. */
static void etcd_request_head(struct wire *w, uint32_t sid)
{
	static const uint8_t hb[] = { 0x83, 0x87, 0xc3, 0xc2, 0xc1, 0xc0, 0xbf, 0xbe };
	frame(w, H2_HEADERS, H2_FLAG_END_HEADERS, sid, hb, sizeof(hb));
}

static void etcd_response_head(struct wire *w, uint32_t sid)
{
	static const uint8_t hb[] = { 0x88, 0xc0, 0xbf, 0xbe };
	frame(w, H2_HEADERS, H2_FLAG_END_HEADERS, sid, hb, sizeof(hb));
}

/* Trailers whose grpc-status and grpc-message are dynamic entries: unknown. */
static void etcd_trailers(struct wire *w, uint32_t sid)
{
	static const uint8_t hb[] = { 0xbf, 0xbe };
	frame(w, H2_HEADERS, H2_FLAG_END_HEADERS | H2_FLAG_END_STREAM, sid, hb, sizeof(hb));
}

/* A k8s.io protobuf object of kind (apiVersion v1): the magic, its TypeMeta, then obj. */
static void k8s_object(struct pbw *out, const char *kind, const struct pbw *obj)
{
	struct pbw tm = { .n = 0 };

	pbw_str(&tm, 1, "v1");
	pbw_str(&tm, 2, kind);
	memcpy(out->b, K8S_MAGIC, K8S_MAGIC_LEN);
	out->n = K8S_MAGIC_LEN;
	pbw_msg(out, 1, &tm);
	pbw_msg(out, 2, obj);
}

static void pod_value(struct pbw *v, const char *node)
{
	struct pbw meta = { .n = 0 }, spec = { .n = 0 }, pod = { .n = 0 };
	pbw_str(&meta, 1, "seamc");
	pbw_str(&meta, 3, "default");
	pbw_str(&meta, 5, "75de16fe-b3d3-4bba-832a-66f6e34c2b9a");
	pbw_str(&spec, 10, node);
	pbw_msg(&pod, 1, &meta);
	pbw_msg(&pod, 2, &spec);
	k8s_object(v, "Pod", &pod);
}

/* A Binding of ns/name to node-b. */
static void binding_body(struct pbw *out, const char *ns, const char *name)
{
	struct pbw meta = { .n = 0 }, target = { .n = 0 }, b = { .n = 0 };

	pbw_str(&meta, 1, name);
	pbw_str(&meta, 3, ns);
	pbw_str(&target, 1, "Node");
	pbw_str(&target, 3, "node-b");
	pbw_msg(&b, 1, &meta);
	pbw_msg(&b, 2, &target);
	k8s_object(out, "Binding", &b);
}

static void txn_request(struct pbw *txn, const char *key, uint64_t rev, const char *node)
{
	struct pbw cmp = { .n = 0 }, put = { .n = 0 }, op = { .n = 0 }, rng = { .n = 0 };
	static struct pbw v;

	txn->n = 0;
	pbw_uint(&cmp, 2, 2); /* MOD */
	pbw_str(&cmp, 3, key);
	pbw_uint(&cmp, 6, rev);
	pbw_msg(txn, 1, &cmp);
	v.n = 0;
	pod_value(&v, node);
	pbw_str(&put, 1, key);
	pbw_bytes(&put, 2, v.b, v.n);
	pbw_msg(&op, 2, &put);
	pbw_msg(txn, 2, &op);
	op.n = 0;
	pbw_str(&rng, 1, key);
	pbw_msg(&op, 1, &rng);
	pbw_msg(txn, 3, &op);
}

static void response_header(struct pbw *m, uint64_t rev)
{
	struct pbw h = { .n = 0 };
	pbw_uint(&h, 1, 0x1f2e3d4c5b6a7988ull);
	pbw_uint(&h, 2, 0x0102030405060708ull);
	pbw_uint(&h, 3, rev);
	pbw_uint(&h, 4, 2);
	pbw_msg(m, 1, &h);
}

static void txn_response(struct pbw *m, uint64_t rev)
{
	struct pbw a = { .n = 0 }, b = { .n = 0 }, c = { .n = 0 };
	m->n = 0;
	response_header(m, rev);
	pbw_uint(m, 2, 1);
	pbw_uint(&c, 3, rev);
	pbw_msg(&a, 1, &c);
	pbw_msg(&b, 2, &a);
	pbw_msg(m, 3, &b);
}

enum client_mode {
	CLIENT_DETECT, /* not given */
	CLIENT_BEFORE, /* given before the first bytes */
	CLIENT_AFTER,  /* given after the first piece */
};

/* The exchange as a script: which direction sends which bytes of its wire, in order. */
struct step {
	int dir;
	size_t from, to;
};

static void play(struct conn_decoder *d, const struct wire *w, const struct step *steps, int n,
		 size_t piece, int client_dir, enum client_mode mode)
{
	bool given = false;

	if (mode == CLIENT_BEFORE)
		conn_decoder__set_client_dir(d, client_dir);
	for (int i = 0; i < n; i++) {
		const struct step *st = &steps[i];
		for (size_t o = st->from; o < st->to;) {
			size_t k = piece && piece < st->to - o ? piece : st->to - o;
			if (mode == CLIENT_AFTER && !given && k > H2_FRAME_HEADER_LEN)
				k = H2_FRAME_HEADER_LEN; /* "after the first bytes": a frame header */
			conn_decoder__feed(d, st->dir, o, w[st->dir].b + o, k, 1000 * (i + 1) + o);
			o += k;
			if (mode == CLIENT_AFTER && !given) {
				conn_decoder__set_client_dir(d, client_dir);
				given = true;
			}
		}
	}
	conn_decoder__close(d, 999999);
}

static const struct decoded_msg *find_kind(const struct seen *s, enum decoded_kind kind, int nth)
{
	for (int i = 0; i < s->n; i++)
		if (s->m[i].kind == kind && nth-- == 0)
			return &s->m[i];
	return NULL;
}

static const size_t pieces[] = { 0, 1, 7 };
#define NPIECES (sizeof(pieces) / sizeof(pieces[0]))

/* Item: the apiserver's accepted socket met mid-way; a PUT whose :method and :path are both
 * dynamic entries, a Pod each way. Only the given client side tells request from response. */
static void test_client_dir(void)
{
	static struct wire w[2];
	static struct pbw pod;
	static const uint8_t req_head[] = { 0xc1, 0xc0, 0xbf, 0xbe };
	static const uint8_t resp_head[] = { 0xc0, 0xbf, 0xbe };

	memset(w, 0, sizeof(w));
	pod.n = 0;
	pod_value(&pod, "node-b");
	frame(&w[CONN_DIR_IN], H2_HEADERS, H2_FLAG_END_HEADERS, 71, req_head, sizeof(req_head));
	frame(&w[CONN_DIR_IN], H2_DATA, H2_FLAG_END_STREAM, 71, pod.b, pod.n);
	size_t in1 = w[CONN_DIR_IN].n;
	frame(&w[CONN_DIR_OUT], H2_HEADERS, H2_FLAG_END_HEADERS, 71, resp_head, sizeof(resp_head));
	frame(&w[CONN_DIR_OUT], H2_DATA, H2_FLAG_END_STREAM, 71, pod.b, pod.n);
	size_t out1 = w[CONN_DIR_OUT].n;
	const struct step steps[] = {
		{ CONN_DIR_IN, 0, in1 },
		{ CONN_DIR_OUT, 0, out1 },
	};

	for (size_t p = 0; p < NPIECES; p++) {
		for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
			struct seen s;
			seen_init(&s);
			struct conn_decoder *d = conn_decoder__new(collect, &s);
			play(d, w, steps, 2, pieces[p], CONN_DIR_IN, (enum client_mode)mode);
			CHECK(s.n == 2, "mode %d piece %zu: %d messages", mode, pieces[p], s.n);
			for (int i = 0; i < s.n; i++) {
				const struct decoded_msg *m = &s.m[i];
				CHECK_INT(m->body_kind, BODY_K8S);
				CHECK_INT(m->body.k8s.kind, K8S_KIND_POD);
				CHECK(m->unreliable, "met mid-way");
				if (mode == CLIENT_DETECT) {
					CHECK(!m->client_known, "nothing tells the client side");
					continue;
				}
				CHECK(m->client_known, "mode %d piece %zu", mode, pieces[p]);
				CHECK_INT(m->from_client, m->dir == CONN_DIR_IN);
				CHECK_INT(m->kind, m->dir == CONN_DIR_IN ? DECODED_REQUEST
									 : DECODED_RESPONSE);
			}
			struct conn_decoder_stats st;
			conn_decoder__stats(d, &st);
			CHECK_INT(st.client_dir, mode == CLIENT_DETECT ? -1 : CONN_DIR_IN);
			conn_decoder__free(d);
			free(s.m);
		}
	}

	/* Given overrides detection: a preface says OUT is the client, the caller says IN. */
	struct seen s;
	seen_init(&s);
	struct conn_decoder *d = conn_decoder__new(collect, &s);
	conn_decoder__set_client_dir(d, CONN_DIR_IN);
	conn_decoder__feed(d, CONN_DIR_OUT, 0, H2_PREFACE, H2_PREFACE_LEN, 1);
	struct conn_decoder_stats st;
	conn_decoder__stats(d, &st);
	CHECK_INT(st.client_dir, CONN_DIR_IN);
	/* ...and any other value goes back to detection. */
	conn_decoder__set_client_dir(d, 7);
	conn_decoder__stats(d, &st);
	CHECK_INT(st.client_dir, -1);
	conn_decoder__set_client_dir(NULL, CONN_DIR_IN);
	conn_decoder__free(d);
	free(s.m);
}

/* Item: etcd's unary calls with unknown :path, content-type and grpc-status. */
static void test_grpc_unary(void)
{
	static struct wire w[2];
	static struct pbw txn, resp, rng, rresp, kv, junk, big;

	memset(w, 0, sizeof(w));
	txn_request(&txn, "/registry/pods/default/seamc", 211, "node-b");
	txn_response(&resp, 212);
	rng.n = 0;
	pbw_str(&rng, 1, "/registry/limitranges");
	pbw_uint(&rng, 3, 1);
	rresp.n = kv.n = 0;
	response_header(&rresp, 212);
	pbw_str(&kv, 1, "/registry/limitranges/default/l");
	pbw_uint(&kv, 3, 12);
	pbw_msg(&rresp, 2, &kv);
	pbw_uint(&rresp, 4, 1);
	/* A gRPC message of no etcd method: a field layout none of them has. */
	junk.n = 0;
	pbw_uint(&junk, 9, 1);
	pbw_str(&junk, 17, "x");

	/* Stream 15: Txn, END_STREAM on an empty DATA frame as grpc-go sends it. */
	etcd_request_head(&w[0], 15);
	grpc_data(&w[0], 0, 15, &txn);
	frame(&w[0], H2_DATA, H2_FLAG_END_STREAM, 15, NULL, 0);
	size_t o1 = w[0].n;
	etcd_response_head(&w[1], 15);
	grpc_data(&w[1], 0, 15, &resp);
	etcd_trailers(&w[1], 15);
	size_t i1 = w[1].n;
	/* Stream 17: Range, END_STREAM on the message's frame. */
	etcd_request_head(&w[0], 17);
	grpc_data(&w[0], H2_FLAG_END_STREAM, 17, &rng);
	size_t o2 = w[0].n;
	etcd_response_head(&w[1], 17);
	grpc_data(&w[1], 0, 17, &rresp);
	etcd_trailers(&w[1], 17);
	size_t i2 = w[1].n;
	/* Stream 19: gRPC framing, but no etcd method fits: not inferred. */
	etcd_request_head(&w[0], 19);
	grpc_data(&w[0], H2_FLAG_END_STREAM, 19, &junk);
	size_t o3 = w[0].n;
	/* Stream 21: a prefix announcing more than its small frame holds: not gRPC. */
	big.n = 0;
	pbw_str(&big, 1, "/registry/pods/default/seamc");
	uint8_t liar[64] = { 0, 0, 0, 0x03, 0xe8 };
	memcpy(liar + 5, big.b, big.n);
	etcd_request_head(&w[0], 21);
	frame(&w[0], H2_DATA, H2_FLAG_END_STREAM, 21, liar, 5 + big.n);
	size_t o4 = w[0].n;
	/* Stream 27: a literal :path, the content-type a dynamic entry: gRPC by its path. */
	uint8_t hb[64];
	size_t hn = 0;
	hb[hn++] = 0x83;
	hb[hn++] = 0x87;
	hn += h2w_lit(hb + hn, ":path", "/etcdserverpb.KV/Range");
	hb[hn++] = 0xbe;
	frame(&w[0], H2_HEADERS, H2_FLAG_END_HEADERS, 27, hb, hn);
	grpc_data(&w[0], H2_FLAG_END_STREAM, 27, &rng);
	size_t o5 = w[0].n;
	const struct step steps[] = {
		{ 0, 0, o1 },  { 1, 0, i1 },  { 0, o1, o2 }, { 1, i1, i2 },
		{ 0, o2, o3 }, { 0, o3, o4 }, { 0, o4, o5 },
	};

	for (size_t p = 0; p < NPIECES; p++) {
		for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
			struct seen s;
			seen_init(&s);
			struct conn_decoder *d = conn_decoder__new(collect, &s);
			play(d, w, steps, 7, pieces[p], CONN_DIR_OUT, (enum client_mode)mode);
			CHECK(s.n == 7, "mode %d piece %zu: %d messages", mode, pieces[p], s.n);
			const struct decoded_msg *m = find_kind(&s, DECODED_GRPC_REQUEST, 0);
			CHECK(m && m->stream_id == 15 && m->inferred &&
				  m->body_kind == BODY_ETCD_TXN,
			      "txn request, mode %d piece %zu", mode, pieces[p]);
			if (m) {
				CHECK_STR(m->http.path, "/etcdserverpb.KV/Txn");
				CHECK_STR(m->http.method, "POST");
				CHECK(m->from_client && m->dir == CONN_DIR_OUT, "from the client");
				CHECK_STR(m->body.txn.compare_key, "/registry/pods/default/seamc");
				CHECK_INT(m->body.txn.compare_revision, 211);
				CHECK_STR(m->body.txn.put.value.pod.node_name, "node-b");
			}
			m = find_kind(&s, DECODED_GRPC_RESPONSE, 0);
			CHECK(m && m->stream_id == 15 && m->inferred &&
				  m->body_kind == BODY_ETCD_TXN_RESPONSE,
			      "txn response, mode %d piece %zu", mode, pieces[p]);
			if (m) {
				CHECK_STR(m->http.path, "/etcdserverpb.KV/Txn");
				CHECK_INT(m->body.txn_response.header.revision, 212);
				CHECK(m->body.txn_response.succeeded, "succeeded");
				CHECK_INT(m->http.grpc_status, -1); /* unknown, yet complete */
				CHECK_INT(m->http.status, 200);
				CHECK(!m->from_client && m->dir == CONN_DIR_IN, "from the server");
			}
			m = find_kind(&s, DECODED_GRPC_REQUEST, 1);
			CHECK(m && m->stream_id == 17 && m->inferred &&
				  m->body_kind == BODY_ETCD_RANGE &&
				  !strcmp(m->body.range.key, "/registry/limitranges"),
			      "range request");
			m = find_kind(&s, DECODED_GRPC_RESPONSE, 1);
			CHECK(m && m->stream_id == 17 && m->body_kind == BODY_ETCD_RANGE_RESPONSE &&
				  m->body.range_response.count == 1,
			      "range response");
			m = find_kind(&s, DECODED_GRPC_REQUEST, 2);
			CHECK(m && m->stream_id == 19 && !m->inferred && !m->http.path[0] &&
				  m->body_kind == BODY_UNDECODED,
			      "gRPC of no known method: framed, not inferred");
			m = find_kind(&s, DECODED_REQUEST, 0);
			CHECK(m && m->stream_id == 21 && !m->inferred &&
				  m->body_kind == BODY_UNDECODED,
			      "not gRPC: a whole body");
			m = find_kind(&s, DECODED_GRPC_REQUEST, 3);
			CHECK(m && m->stream_id == 27 && !m->inferred &&
				  m->body_kind == BODY_ETCD_RANGE &&
				  !strcmp(m->http.path, "/etcdserverpb.KV/Range"),
			      "gRPC by its etcd path");
			for (int i = 0; i < s.n; i++)
				CHECK(s.m[i].client_known,
				      "the request head tells the client side");
			conn_decoder__free(d);
			free(s.m);
		}
	}
}

/* Item: a Watch and a LeaseKeepAlive stream opened after capture began, their :path unknown:
 * events are reported as they come, the streams never end. */
static void test_grpc_streaming(void)
{
	static struct wire w[2];
	static struct pbw create, inner, created, events, ev, kv, lease, lresp, v;

	memset(w, 0, sizeof(w));
	create.n = inner.n = 0;
	pbw_str(&inner, 1, "/registry/pods/");
	pbw_str(&inner, 2, "/registry/pods0");
	pbw_uint(&inner, 3, 212);
	pbw_uint(&inner, 6, 1);
	pbw_msg(&create, 1, &inner);
	created.n = 0;
	response_header(&created, 212);
	pbw_uint(&created, 3, 1);
	events.n = ev.n = kv.n = v.n = 0;
	response_header(&events, 213);
	pod_value(&v, "node-c");
	pbw_str(&kv, 1, "/registry/pods/default/seamc");
	pbw_uint(&kv, 3, 213);
	pbw_bytes(&kv, 5, v.b, v.n);
	pbw_msg(&ev, 2, &kv);
	pbw_msg(&events, 11, &ev);
	pbw_msg(&events, 11, &ev);
	lease.n = 0;
	pbw_uint(&lease, 1, 0x694d7c2b1a3e5f01ull);
	lresp.n = 0;
	response_header(&lresp, 213);
	pbw_uint(&lresp, 2, 0x694d7c2b1a3e5f01ull);
	pbw_uint(&lresp, 3, 60);

	etcd_request_head(&w[0], 23);
	grpc_data(&w[0], 0, 23, &create);
	size_t o1 = w[0].n;
	etcd_response_head(&w[1], 23);
	grpc_data(&w[1], 0, 23, &created);
	size_t i1 = w[1].n;
	grpc_data(&w[1], 0, 23, &events);
	size_t i2 = w[1].n;
	etcd_request_head(&w[0], 25);
	grpc_data(&w[0], 0, 25, &lease);
	size_t o2 = w[0].n;
	etcd_response_head(&w[1], 25);
	grpc_data(&w[1], 0, 25, &lresp);
	size_t i3 = w[1].n;
	const struct step steps[] = {
		{ 0, 0, o1 }, { 1, 0, i1 }, { 1, i1, i2 }, { 0, o1, o2 }, { 1, i2, i3 },
	};

	for (size_t p = 0; p < NPIECES; p++) {
		struct seen s;
		seen_init(&s);
		struct conn_decoder *d = conn_decoder__new(collect, &s);
		play(d, w, steps, 5, pieces[p], CONN_DIR_OUT, CLIENT_BEFORE);
		const struct decoded_msg *m = find_kind(&s, DECODED_GRPC_REQUEST, 0);
		CHECK(m && m->inferred && m->body_kind == BODY_ETCD_WATCH_REQUEST &&
			  !strcmp(m->http.path, "/etcdserverpb.Watch/Watch") &&
			  !strcmp(m->body.watch_request.key, "/registry/pods/"),
		      "watch create, piece %zu", pieces[p]);
		int events_seen = 0;
		for (int i = 0; i < s.n; i++)
			if (s.m[i].kind == DECODED_ETCD_WATCH_EVENT) {
				events_seen++;
				CHECK(s.m[i].inferred && s.m[i].streaming, "event flags");
				CHECK_STR(s.m[i].body.etcd_watch.event.kv.key,
					  "/registry/pods/default/seamc");
				CHECK_STR(s.m[i].body.etcd_watch.event.kv.value.pod.node_name,
					  "node-c");
			}
		CHECK(events_seen == 2, "piece %zu: %d events", pieces[p], events_seen);
		m = find_kind(&s, DECODED_GRPC_REQUEST, 1);
		CHECK(m && m->stream_id == 25 && m->inferred &&
			  !strcmp(m->http.path, "/etcdserverpb.Lease/LeaseKeepAlive"),
		      "lease keepalive, piece %zu", pieces[p]);
		/* A streamed response is reported at its head, then once per message: on stream 25
		 * the head and the one LeaseKeepAliveResponse sent, whole, nothing repeated. */
		int lease_responses = 0;
		for (int i = 0; i < s.n; i++) {
			if (s.m[i].kind != DECODED_GRPC_RESPONSE || s.m[i].stream_id != 25)
				continue;
			if (lease_responses++ == 0)
				CHECK(s.m[i].body_kind == BODY_NONE && s.m[i].body_len == 0,
				      "piece %zu: the keepalive's response head", pieces[p]);
			else
				CHECK(s.m[i].body_len == lresp.n,
				      "piece %zu: body %llu bytes, want %zu", pieces[p],
				      (unsigned long long)s.m[i].body_len, lresp.n);
		}
		CHECK(lease_responses == 2, "piece %zu: %d keepalive responses, want 2", pieces[p],
		      lease_responses);
		/* In all: the create; its response's head, created and two events; the keepalive;
		 * its response's head and message. */
		CHECK(s.n == 8, "piece %zu: %d messages, want 8", pieces[p], s.n);
		conn_decoder__free(d);
		free(s.m);
	}
}

/* Item: Kubernetes with an unknown :path: the literal :path of a binding is read; a POST whose
 * :path is a dynamic entry keeps its decoded body. Both from the client the caller named. */
/* A pod's ADDED (node "") and MODIFIED (node) protobuf watch events, a DATA frame each. */
static void watch_events(struct wire *w, uint32_t sid, const char *node)
{
	static struct pbw pod, raw, ev;

	for (int i = 0; i < 2; i++) {
		uint8_t wf[2048];
		pod.n = raw.n = ev.n = 0;
		pod_value(&pod, i ? node : "");
		pbw_bytes(&raw, 1, pod.b, pod.n);
		pbw_str(&ev, 1, i ? "MODIFIED" : "ADDED");
		pbw_msg(&ev, 2, &raw);
		wf[0] = 0;
		wf[1] = 0;
		wf[2] = (uint8_t)(ev.n >> 8);
		wf[3] = (uint8_t)ev.n;
		memcpy(wf + 4, ev.b, ev.n);
		frame(w, H2_DATA, 0, sid, wf, ev.n + 4);
	}
}

static void test_k8s_unknown_path(void)
{
	static struct wire w[2];
	static struct pbw binding;
	uint8_t hb[256];
	size_t n = 0;

	memset(w, 0, sizeof(w));
	binding_body(&binding, "default", "seamc");
	/* Stream 67: an unknown entry, :method POST, a literal :path, more unknown entries. */
	hb[n++] = 0xc5;
	hb[n++] = 0x83;
	n += h2w_lit(hb + n, ":path", "/api/v1/namespaces/default/pods/seamc/binding");
	hb[n++] = 0x87;
	hb[n++] = 0xc4;
	hb[n++] = 0xc3;
	frame(&w[CONN_DIR_IN], H2_HEADERS, H2_FLAG_END_HEADERS, 67, hb, n);
	frame(&w[CONN_DIR_IN], H2_DATA, H2_FLAG_END_STREAM, 67, binding.b, binding.n);
	/* Stream 69: :path and :method unknown, same body. */
	static const uint8_t unknown_head[] = { 0xc5, 0xc4, 0xc3 };
	frame(&w[CONN_DIR_IN], H2_HEADERS, H2_FLAG_END_HEADERS, 69, unknown_head,
	      sizeof(unknown_head));
	frame(&w[CONN_DIR_IN], H2_DATA, H2_FLAG_END_STREAM, 69, binding.b, binding.n);
	size_t in1 = w[CONN_DIR_IN].n;
	/* Stream 73: a watch whose GET :path and response content-type are dynamic entries: its
	 * protobuf watch frames are found at the first DATA frame. */
	frame(&w[CONN_DIR_IN], H2_HEADERS, H2_FLAG_END_HEADERS | H2_FLAG_END_STREAM, 73,
	      unknown_head, sizeof(unknown_head));
	size_t in2 = w[CONN_DIR_IN].n;
	static const uint8_t status_head[] = { 0x88, 0xc4, 0xc3 };
	frame(&w[CONN_DIR_OUT], H2_HEADERS, H2_FLAG_END_HEADERS, 73, status_head,
	      sizeof(status_head));
	watch_events(&w[CONN_DIR_OUT], 73, "node-b");
	const struct step steps[] = {
		{ CONN_DIR_IN, 0, in1 },
		{ CONN_DIR_IN, in1, in2 },
		{ CONN_DIR_OUT, 0, w[CONN_DIR_OUT].n },
	};

	for (size_t p = 0; p < NPIECES; p++) {
		for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
			struct seen s;
			seen_init(&s);
			struct conn_decoder *d = conn_decoder__new(collect, &s);
			play(d, w, steps, 3, pieces[p], CONN_DIR_IN, (enum client_mode)mode);
			/* two bindings, the watch's GET, two events */
			CHECK(s.n == 5, "mode %d piece %zu: %d messages", mode, pieces[p], s.n);
			int events = 0;
			for (int i = 0; i < s.n; i++) {
				const struct decoded_msg *m = &s.m[i];
				if (m->stream_id != 73)
					continue;
				if (m->kind == DECODED_WATCH_EVENT) {
					CHECK(m->dir == CONN_DIR_OUT && !m->from_client &&
						  m->body_kind == BODY_K8S_WATCH_EVENT,
					      "watch event");
					CHECK_STR(m->body.watch.type,
						  events ? "MODIFIED" : "ADDED");
					CHECK_STR(m->body.watch.object.pod.node_name,
						  events ? "node-b" : "");
					events++;
				} else {
					CHECK(m->kind == DECODED_REQUEST && m->dir == CONN_DIR_IN &&
						  m->body_kind == BODY_NONE,
					      "the watch's GET, mode %d", mode);
				}
			}
			CHECK(events == 2, "mode %d piece %zu: %d watch events", mode, pieces[p],
			      events);
			for (int i = 0; i < s.n; i++) {
				if (s.m[i].stream_id == 73)
					continue;
				const struct decoded_msg *m = &s.m[i];
				CHECK_INT(m->kind, DECODED_REQUEST);
				CHECK(m->from_client && m->dir == CONN_DIR_IN, "from the client");
				CHECK(m->body_kind == BODY_K8S &&
					  m->body.k8s.kind == K8S_KIND_BINDING &&
					  !strcmp(m->body.k8s.binding.target_name, "node-b"),
				      "binding body");
				/* Only the Binding whose :path was never seen has it inferred. */
				CHECK(m->inferred == (m->stream_id != 67), "stream %u inferred %d",
				      m->stream_id, m->inferred);
				CHECK_STR(m->http.path,
					  "/api/v1/namespaces/default/pods/seamc/binding");
				CHECK_STR(m->http.method, "POST");
			}
			conn_decoder__free(d);
			free(s.m);
		}
	}
}

/* The scheduler binds a pod of a name it bound before on this connection (a pod made again): its
 * encoder sends the .../binding :path as the dynamic entry it made then, before the tracer came
 * (seen on the bed: `cb 83 be 87 c9 cd c8 cc`, every entry but POST and https dynamic). The path
 * is inferred from the Binding, and the answer on the stream has it too. Not inferred: names
 * that are no DNS names (a slash, ".."), a :method known and not POST. */
static void test_binding_path_inferred(void)
{
	static struct wire w[2];
	static struct pbw ok, bad_name, dots, status;
	static const uint8_t post_head[] = { 0xcb, 0x83, 0xbe, 0x87, 0xc9, 0xcd, 0xc8, 0xcc };
	static const uint8_t put_head[] = { 0xc5, 0xc4, 0x87 };
	static const uint8_t answer_head[] = { 0xcc, 0xc6, 0xc3 }; /* :status 201 unknown too */
	uint8_t hb[64];
	size_t n = 0, in1;

	memset(w, 0, sizeof(w));
	binding_body(&ok, "wt", "vv");
	binding_body(&bad_name, "wt", "vv/../../secrets");
	binding_body(&dots, "..", "vv");
	{
		struct pbw st = { .n = 0 };
		pbw_str(&st, 2, "Success");
		k8s_object(&status, "Status", &st);
	}
	frame(&w[CONN_DIR_IN], H2_HEADERS, H2_FLAG_END_HEADERS, 189, post_head, sizeof(post_head));
	frame(&w[CONN_DIR_IN], H2_DATA, H2_FLAG_END_STREAM, 189, ok.b, ok.n);
	frame(&w[CONN_DIR_IN], H2_HEADERS, H2_FLAG_END_HEADERS, 191, post_head, sizeof(post_head));
	frame(&w[CONN_DIR_IN], H2_DATA, H2_FLAG_END_STREAM, 191, bad_name.b, bad_name.n);
	frame(&w[CONN_DIR_IN], H2_HEADERS, H2_FLAG_END_HEADERS, 195, post_head, sizeof(post_head));
	frame(&w[CONN_DIR_IN], H2_DATA, H2_FLAG_END_STREAM, 195, dots.b, dots.n);
	n += h2w_lit(hb + n, ":method", "PUT");
	memcpy(hb + n, put_head, sizeof(put_head));
	n += sizeof(put_head);
	frame(&w[CONN_DIR_IN], H2_HEADERS, H2_FLAG_END_HEADERS, 193, hb, n);
	frame(&w[CONN_DIR_IN], H2_DATA, H2_FLAG_END_STREAM, 193, ok.b, ok.n);
	in1 = w[CONN_DIR_IN].n;
	frame(&w[CONN_DIR_OUT], H2_HEADERS, H2_FLAG_END_HEADERS, 189, answer_head,
	      sizeof(answer_head));
	frame(&w[CONN_DIR_OUT], H2_DATA, H2_FLAG_END_STREAM, 189, status.b, status.n);
	const struct step steps[] = {
		{ CONN_DIR_IN, 0, in1 },
		{ CONN_DIR_OUT, 0, w[CONN_DIR_OUT].n },
	};

	for (size_t p = 0; p < NPIECES; p++) {
		for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
			struct seen s;
			int requests = 0, answers = 0;

			seen_init(&s);
			struct conn_decoder *d = conn_decoder__new(collect, &s);
			play(d, w, steps, 2, pieces[p], CONN_DIR_IN, (enum client_mode)mode);
			CHECK(s.n == 5, "mode %d piece %zu: %d messages", mode, pieces[p], s.n);
			for (int i = 0; i < s.n; i++) {
				const struct decoded_msg *m = &s.m[i];

				if (m->kind == DECODED_RESPONSE) {
					answers++;
					CHECK(m->stream_id == 189 && m->inferred &&
						  m->body_kind == BODY_K8S &&
						  m->body.k8s.kind == K8S_KIND_STATUS,
					      "the answer, mode %d", mode);
					CHECK_STR(m->http.path,
						  "/api/v1/namespaces/wt/pods/vv/binding");
					continue;
				}
				requests++;
				CHECK(m->kind == DECODED_REQUEST && m->body_kind == BODY_K8S &&
					  m->body.k8s.kind == K8S_KIND_BINDING,
				      "a Binding, mode %d stream %u", mode, m->stream_id);
				if (m->stream_id == 189) {
					CHECK(m->inferred, "inferred");
					CHECK_STR(m->http.path,
						  "/api/v1/namespaces/wt/pods/vv/binding");
					CHECK_STR(m->http.method, "POST");
				} else {
					CHECK(!m->inferred && !m->http.path[0],
					      "stream %u: not inferred (%s)", m->stream_id,
					      m->http.path);
				}
			}
			CHECK(requests == 4 && answers == 1, "mode %d: %d requests, %d answers",
			      mode, requests, answers);
			conn_decoder__free(d);
			free(s.m);
		}
	}
}

/* A watch met mid-way while it streams: a burst's events fill whole DATA frames (flow control and
 * the 16 KiB frame size cut them anywhere), so the first frame seen can begin inside an event.
 * Bytes that happen to read as a gRPC prefix (here the compressed flag and a length just under
 * GRPC_MESSAGE_MAX) must not be taken for a message that runs far past its frame: that would
 * swallow the next 4 MiB of the stream, more than a 1000-pod burst's events on a scheduler's pod
 * watch. A guess made mid-way is only taken when its message ends within the frame. */
static void test_watch_midway_cut_event(void)
{
	static struct wire w[2];
	static uint8_t tail[4200];

	memset(w, 0, sizeof(w));
	/* Stream 75 began before capture: no HEADERS. Its first frame is the tail of an event. */
	memset(tail, 0x2a, sizeof(tail));
	tail[0] = 0x01;
	tail[1] = 0x00;
	tail[2] = 0x3f;
	tail[3] = 0xff;
	tail[4] = 0xff;
	tail[5] = 0x0a;
	frame(&w[CONN_DIR_OUT], H2_DATA, 0, 75, tail, sizeof(tail));
	watch_events(&w[CONN_DIR_OUT], 75, "node-c");
	const struct step steps[] = { { CONN_DIR_OUT, 0, w[CONN_DIR_OUT].n } };

	for (size_t p = 0; p < NPIECES; p++) {
		for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
			struct seen s;
			seen_init(&s);
			struct conn_decoder *d = conn_decoder__new(collect, &s);
			play(d, w, steps, 1, pieces[p], CONN_DIR_IN, (enum client_mode)mode);
			int events = 0;
			for (int i = 0; i < s.n; i++) {
				const struct decoded_msg *m = &s.m[i];
				if (m->kind != DECODED_WATCH_EVENT || m->stream_id != 75)
					continue;
				CHECK_STR(m->body.watch.type, events ? "MODIFIED" : "ADDED");
				CHECK_STR(m->body.watch.object.pod.node_name,
					  events ? "node-c" : "");
				events++;
			}
			CHECK(events == 2, "mode %d piece %zu: %d watch events after a cut one",
			      mode, pieces[p], events);
			conn_decoder__free(d);
			free(s.m);
		}
	}
}

/* The client's direction whole, then the server's, cut into pieces of `piece` bytes: what was
 * decoded goes to s; the caller frees the decoder (after its checks: messages may point into it)
 * and s.m. */
static struct conn_decoder *play_in_then_out(const struct wire w[2], size_t piece,
					     enum client_mode mode, struct seen *s)
{
	const struct step steps[] = {
		{ CONN_DIR_IN, 0, w[CONN_DIR_IN].n },
		{ CONN_DIR_OUT, 0, w[CONN_DIR_OUT].n },
	};

	seen_init(s);
	struct conn_decoder *d = conn_decoder__new(collect, s);
	play(d, w, steps, 2, piece, CONN_DIR_IN, mode);
	return d;
}

/* A watch that begins after capture on a connection met mid-way, as an informer's watch does each
 * time it is made again (its timeout, or the apiserver closing a watcher that stopped reading):
 * its GET and literal :path are read, but the response's content-type is a dynamic entry inserted
 * before capture, as Go's HPACK encoder sends it once the connection has carried a watch of that
 * encoding. The body tells: protobuf watch frames on one stream, JSON lines on another. */
static void test_watch_unknown_content_type(void)
{
	static struct wire w[2];
	static const uint8_t status_head[] = { 0x88, 0xc4, 0xc3 }; /* :status 200, unknown */
	static const char json_events[] =
	    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
	    "\"metadata\":{\"name\":\"seamj\",\"namespace\":\"default\","
	    "\"resourceVersion\":\"7\"},\"spec\":{}}}\n";
	const uint32_t sids[2] = { 77, 79 };

	memset(w, 0, sizeof(w));
	for (int i = 0; i < 2; i++) {
		uint8_t hb[256];
		size_t n = 0;

		hb[n++] = 0x82; /* :method GET */
		n += h2w_lit(hb + n, ":path",
			     "/api/v1/pods?allowWatchBookmarks=true&resourceVersion=123"
			     "&timeout=7m51s&timeoutSeconds=471&watch=true");
		hb[n++] = 0x87;
		hb[n++] = 0xc4;
		hb[n++] = 0xc3;
		frame(&w[CONN_DIR_IN], H2_HEADERS, H2_FLAG_END_HEADERS | H2_FLAG_END_STREAM,
		      sids[i], hb, n);
		frame(&w[CONN_DIR_OUT], H2_HEADERS, H2_FLAG_END_HEADERS, sids[i], status_head,
		      sizeof(status_head));
	}
	watch_events(&w[CONN_DIR_OUT], sids[0], "node-d");
	frame(&w[CONN_DIR_OUT], H2_DATA, 0, sids[1], json_events, sizeof(json_events) - 1);

	for (size_t p = 0; p < NPIECES; p++) {
		for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
			struct seen s;
			int events[2] = { 0, 0 }, undecoded = 0;

			struct conn_decoder *d =
			    play_in_then_out(w, pieces[p], (enum client_mode)mode, &s);
			for (int i = 0; i < s.n; i++) {
				const struct decoded_msg *m = &s.m[i];
				int k = m->stream_id == sids[0] ? 0 : 1;

				if (m->kind != DECODED_WATCH_EVENT)
					continue;
				if (m->body_kind != BODY_K8S_WATCH_EVENT) {
					undecoded++;
					continue;
				}
				CHECK_STR(m->body.watch.type,
					  k || !events[0] ? "ADDED" : "MODIFIED");
				CHECK_STR(m->body.watch.object.meta.name, k ? "seamj" : "seamc");
				if (!k)
					CHECK_STR(m->body.watch.object.pod.node_name,
						  events[0] ? "node-d" : "");
				events[k]++;
			}
			CHECK(
			    events[0] == 2 && events[1] == 1 && !undecoded,
			    "mode %d piece %zu: %d protobuf and %d JSON watch events, %d undecoded",
			    mode, pieces[p], events[0], events[1], undecoded);
			conn_decoder__free(d);
			free(s.m);
		}
	}
}

/* GETs whose :path is a dynamic entry inserted before capture (a client repeating a request word
 * for word), answered with a content-type that is read: the path cannot say which is a watch, the
 * content-type and the body do. Stream 81: a protobuf watch (`;stream=watch`); 83: a JSON watch,
 * whose content-type is plain application/json as the apiserver sends it; 85: a plain JSON
 * object under the same content-type, which stays one response. */
static void test_watch_unknown_path_known_type(void)
{
	static struct wire w[2];
	static const uint8_t unknown_head[] = { 0xc5, 0xc4, 0xc3 };
	static const char *types[3] = { "application/vnd.kubernetes.protobuf;stream=watch",
					"application/json", "application/json" };
	static const char json_events[] =
	    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
	    "\"metadata\":{\"name\":\"seamj\",\"namespace\":\"default\","
	    "\"resourceVersion\":\"7\"},\"spec\":{}}}\n"
	    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
	    "\"metadata\":{\"name\":\"seamj\",\"namespace\":\"default\","
	    "\"resourceVersion\":\"8\"},\"spec\":{\"nodeName\":\"node-j\"}}}\n";
	static const char json_pod[] =
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"seamo\","
	    "\"namespace\":\"default\",\"resourceVersion\":\"9\"},\"spec\":{}}";
	const uint32_t sids[3] = { 81, 83, 85 };

	memset(w, 0, sizeof(w));
	for (int i = 0; i < 3; i++) {
		uint8_t hb[128];
		size_t n = 0;

		frame(&w[CONN_DIR_IN], H2_HEADERS, H2_FLAG_END_HEADERS | H2_FLAG_END_STREAM,
		      sids[i], unknown_head, sizeof(unknown_head));
		hb[n++] = 0x88; /* :status 200 */
		n += h2w_lit(hb + n, "content-type", types[i]);
		frame(&w[CONN_DIR_OUT], H2_HEADERS, H2_FLAG_END_HEADERS, sids[i], hb, n);
	}
	watch_events(&w[CONN_DIR_OUT], sids[0], "node-e");
	frame(&w[CONN_DIR_OUT], H2_DATA, 0, sids[1], json_events, sizeof(json_events) - 1);
	frame(&w[CONN_DIR_OUT], H2_DATA, H2_FLAG_END_STREAM, sids[2], json_pod,
	      sizeof(json_pod) - 1);

	for (size_t p = 0; p < NPIECES; p++) {
		for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
			struct seen s;
			int events[2] = { 0, 0 }, other = 0, pod = 0;

			struct conn_decoder *d =
			    play_in_then_out(w, pieces[p], (enum client_mode)mode, &s);
			for (int i = 0; i < s.n; i++) {
				const struct decoded_msg *m = &s.m[i];
				int k = m->stream_id == sids[0]	  ? 0
					: m->stream_id == sids[1] ? 1
								  : 2;

				if (m->kind == DECODED_RESPONSE && k == 2 &&
				    m->body_kind == BODY_K8S) {
					CHECK_STR(m->body.k8s.meta.name, "seamo");
					pod++;
					continue;
				}
				if (m->kind != DECODED_WATCH_EVENT) {
					continue;
				}
				if (k == 2 || m->body_kind != BODY_K8S_WATCH_EVENT) {
					other++;
					continue;
				}
				CHECK_STR(m->body.watch.type, events[k] ? "MODIFIED" : "ADDED");
				CHECK_STR(m->body.watch.object.meta.name, k ? "seamj" : "seamc");
				if (!k)
					CHECK_STR(m->body.watch.object.pod.node_name,
						  events[0] ? "node-e" : "");
				events[k]++;
			}
			CHECK(events[0] == 2 && events[1] == 2 && pod == 1 && !other,
			      "mode %d piece %zu: %d protobuf and %d JSON watch events, %d pod "
			      "responses, %d other events",
			      mode, pieces[p], events[0], events[1], pod, other);
			conn_decoder__free(d);
			free(s.m);
		}
	}
}

/* How a direction begins: at offset 0 of what was captured, but the connection's start only with
 * a preface (or the server's SETTINGS); else mid-way, at a frame boundary, with a tolerant HPACK. */
static void test_begin(void)
{
	static struct wire mid, start;
	uint8_t hb[128];
	size_t n = 0;

	mid.n = start.n = 0;
	hb[n++] = 0xbe; /* a dynamic entry never seen */
	hb[n++] = 0x82; /* :method GET */
	n += h2w_lit(hb + n, ":path", "/api/v1/pods");
	frame(&mid, H2_HEADERS, H2_FLAG_END_HEADERS | H2_FLAG_END_STREAM, 3, hb, n);
	memcpy(start.b, H2_PREFACE, H2_PREFACE_LEN);
	start.n = H2_PREFACE_LEN;
	frame(&start, H2_SETTINGS, 0, 0, NULL, 0);
	frame(&start, H2_HEADERS, H2_FLAG_END_HEADERS | H2_FLAG_END_STREAM, 1, hb + 1, n - 1);
	for (size_t p = 0; p < NPIECES; p++) {
		struct seen s;
		seen_init(&s);
		struct conn_decoder *d = conn_decoder__new(collect, &s);
		for (size_t o = 0; o < mid.n; o += pieces[p] ? pieces[p] : mid.n)
			conn_decoder__feed(
			    d, 0, o, mid.b + o,
			    pieces[p] && pieces[p] < mid.n - o ? pieces[p] : mid.n - o, 1);
		conn_decoder__close(d, 2);
		CHECK(s.n == 1 && s.m[0].kind == DECODED_REQUEST && s.m[0].unreliable &&
			  !strcmp(s.m[0].http.path, "/api/v1/pods"),
		      "mid-way at offset 0, piece %zu: %d messages", pieces[p], s.n);
		conn_decoder__free(d);
		s.n = 0;
		d = conn_decoder__new(collect, &s);
		for (size_t o = 0; o < start.n; o += pieces[p] ? pieces[p] : start.n)
			conn_decoder__feed(
			    d, 0, o, start.b + o,
			    pieces[p] && pieces[p] < start.n - o ? pieces[p] : start.n - o, 1);
		CHECK(s.n == 1 && s.m[0].kind == DECODED_REQUEST && !s.m[0].unreliable &&
			  s.m[0].client_known && !strcmp(s.m[0].http.path, "/api/v1/pods"),
		      "from the start, piece %zu: %d messages", pieces[p], s.n);
		conn_decoder__free(d);
		free(s.m);
	}
}

/* The real capture. */

struct replay_conn {
	uint64_t id;
	struct conn_decoder *dec;
	bool fed;
};

static void replay(const struct fixture_record *recs, int n, size_t piece, enum client_mode mode,
		   struct seen *s)
{
	struct replay_conn conns[16];
	int nconns = 0;

	memset(conns, 0, sizeof(conns));
	for (int i = 0; i < n; i++) {
		const struct fixture_record *r = &recs[i];
		struct replay_conn *c = NULL;
		for (int k = 0; k < nconns; k++)
			if (conns[k].id == r->conn)
				c = &conns[k];
		if (!c) {
			c = &conns[nconns++];
			c->id = r->conn;
			c->dec = conn_decoder__new(collect, s);
			if (mode == CLIENT_BEFORE)
				conn_decoder__set_client_dir(c->dec, r->client_dir);
		}
		s->cur_conn = r->conn;
		for (size_t o = 0; o < r->len;) {
			size_t k = piece && piece < r->len - o ? piece : r->len - o;
			if (mode == CLIENT_AFTER && !c->fed && k > H2_FRAME_HEADER_LEN)
				k = H2_FRAME_HEADER_LEN; /* "after the first bytes": a frame header */
			conn_decoder__feed(c->dec, r->dir, r->offset + o, r->data + o, k, r->ts);
			o += k;
			if (mode == CLIENT_AFTER && !c->fed)
				conn_decoder__set_client_dir(c->dec, r->client_dir);
			c->fed = true;
		}
	}
	for (int k = 0; k < nconns; k++) {
		s->cur_conn = conns[k].id;
		conn_decoder__close(conns[k].dec, 0);
		conn_decoder__free(conns[k].dec);
	}
}

static const struct decoded_msg *find_conn(const struct seen *s, uint64_t conn,
					   enum decoded_kind kind, uint32_t stream)
{
	for (int i = 0; i < s->n; i++)
		if (s->conn[i] == conn && s->m[i].kind == kind && s->m[i].stream_id == stream)
			return &s->m[i];
	return NULL;
}

static void check_capture(const struct seen *s, enum client_mode mode, size_t piece)
{
	const struct decoded_msg *m;
	bool given = mode != CLIENT_DETECT;

	/* The bind's Txn: GuaranteedUpdate of the pod, from kube-apiserver (conn 91698, stream 17). */
	m = find_conn(s, 91698, DECODED_GRPC_REQUEST, 17);
	CHECK(m && m->body_kind == BODY_ETCD_TXN, "mode %d piece %zu: bind txn", mode, piece);
	if (m) {
		CHECK(m->inferred && !strcmp(m->http.path, "/etcdserverpb.KV/Txn"), "inferred");
		CHECK(m->dir == CONN_DIR_OUT && m->from_client,
		      "sent by the apiserver, the client");
		CHECK(!given || m->client_known, "client known");
		CHECK(m->unreliable, "met mid-way");
		CHECK_STR(m->body.txn.compare_key, "/registry/pods/default/seamc");
		CHECK_INT(m->body.txn.compare_target, ETCD_TARGET_MOD);
		CHECK_INT(m->body.txn.compare_revision, 211);
		CHECK(m->body.txn.has_put && m->body.txn.put.value.kind == K8S_KIND_POD, "put");
		CHECK_STR(m->body.txn.put.key, "/registry/pods/default/seamc");
		CHECK_STR(m->body.txn.put.value.pod.node_name, "node-b");
		CHECK_STR(m->body.txn.else_get_key, "/registry/pods/default/seamc");
	}
	m = find_conn(s, 91698, DECODED_GRPC_RESPONSE, 17);
	CHECK(m && m->body_kind == BODY_ETCD_TXN_RESPONSE, "mode %d piece %zu: txn response", mode,
	      piece);
	if (m) {
		CHECK_INT(m->body.txn_response.header.revision, 212);
		CHECK(m->body.txn_response.succeeded, "succeeded");
		CHECK(m->dir == CONN_DIR_IN && !m->from_client, "from etcd");
		CHECK(m->inferred && !strcmp(m->http.path, "/etcdserverpb.KV/Txn"), "inferred");
		CHECK_INT(m->http.status, 200);
		CHECK_INT(m->http.grpc_status, -1); /* a dynamic entry: unknown */
	}
	/* The pod's creation before it (stream 15): revision 211. */
	m = find_conn(s, 91698, DECODED_GRPC_RESPONSE, 15);
	CHECK(m && m->body_kind == BODY_ETCD_TXN_RESPONSE &&
		  m->body.txn_response.header.revision == 211,
	      "create's txn response");
	/* The Binding, read by kube-apiserver from the scheduler's connection (91917, 67). */
	m = find_conn(s, 91917, DECODED_REQUEST, 67);
	CHECK(m && m->body_kind == BODY_K8S && m->body.k8s.kind == K8S_KIND_BINDING,
	      "mode %d piece %zu: binding request", mode, piece);
	if (m) {
		CHECK(m->dir == CONN_DIR_IN && m->from_client, "from the scheduler, the client");
		CHECK(!given || m->client_known, "client known");
		CHECK_STR(m->http.method, "POST");
		CHECK_STR(m->http.path, "/api/v1/namespaces/default/pods/seamc/binding");
		CHECK_STR(m->body.k8s.meta.namespace, "default");
		CHECK_STR(m->body.k8s.meta.name, "seamc");
		CHECK_STR(m->body.k8s.meta.uid, "75de16fe-b3d3-4bba-832a-66f6e34c2b9a");
		CHECK_STR(m->body.k8s.binding.target_kind, "Node");
		CHECK_STR(m->body.k8s.binding.target_name, "node-b");
		CHECK(!m->inferred, "a literal :path");
	}
	m = find_conn(s, 91917, DECODED_RESPONSE, 67);
	CHECK(m && m->body_kind == BODY_K8S && m->body.k8s.kind == K8S_KIND_STATUS,
	      "mode %d piece %zu: 201", mode, piece);
	if (m) {
		CHECK_INT(m->body.k8s.status.code, 201);
		CHECK(m->dir == CONN_DIR_OUT && !m->from_client, "from the apiserver");
		CHECK_STR(m->http.path, "/api/v1/namespaces/default/pods/seamc/binding");
	}
	/* Every message on these connections in the right direction for its kind. */
	for (int i = 0; i < s->n; i++) {
		const struct decoded_msg *x = &s->m[i];
		bool request = x->kind == DECODED_REQUEST || x->kind == DECODED_GRPC_REQUEST;
		bool response = x->kind == DECODED_RESPONSE || x->kind == DECODED_GRPC_RESPONSE ||
				x->kind == DECODED_WATCH_EVENT ||
				x->kind == DECODED_ETCD_WATCH_EVENT;
		/* kube-apiserver: dialed etcd (requests out), accepted the rest (requests in). */
		enum conn_dir client =
		    s->conn[i] == 91917 || s->conn[i] == 92815 || s->conn[i] == 92790
			? CONN_DIR_IN
			: CONN_DIR_OUT;
		if (request)
			CHECK(x->dir == client && x->from_client,
			      "message %d (conn %llu stream %u)", i, (unsigned long long)s->conn[i],
			      x->stream_id);
		if (response)
			CHECK(x->dir != client && !x->from_client,
			      "message %d (conn %llu stream %u)", i, (unsigned long long)s->conn[i],
			      x->stream_id);
		if (given)
			CHECK(x->client_known, "message %d", i);
		CHECK(x->body_kind != BODY_UNDECODED, "message %d (conn %llu stream %u) undecoded",
		      i, (unsigned long long)s->conn[i], x->stream_id);
	}
}

/* What bind_midconn.jsonl holds, counted from its bytes without the decoder: its HTTP/2 frames
 * walked per connection and direction, gRPC's 5-byte prefixes and Kubernetes' 4-byte watch
 * frames walked inside the DATA of each stream, etcd WatchResponses' events (field 11) counted.
 * One line per connection, stream and kind: how many messages the decoder must give. */
static const struct capture_msgs {
	uint64_t conn;
	uint32_t stream;
	enum decoded_kind kind;
	int count;
} capture_msgs[] = {
	/* kube-apiserver to etcd, the apiserver the client. 91698: the pod's create (15) and bind
	 * (17) Txns, one gRPC message each way; its pods watch (5, opened before the capture)
	 * carries two WatchResponses of one event each. */
	{ 91698, 15, DECODED_GRPC_REQUEST, 1 },
	{ 91698, 15, DECODED_GRPC_RESPONSE, 1 },
	{ 91698, 17, DECODED_GRPC_REQUEST, 1 },
	{ 91698, 17, DECODED_GRPC_RESPONSE, 1 },
	{ 91698, 5, DECODED_ETCD_WATCH_EVENT, 2 },
	/* 91768: the Event's Txn. */
	{ 91768, 7, DECODED_GRPC_REQUEST, 1 },
	{ 91768, 7, DECODED_GRPC_RESPONSE, 1 },
	/* 92594: a Range (9); on the watch stream 5 a progress request and a WatchResponse with no
	 * event. */
	{ 92594, 9, DECODED_GRPC_REQUEST, 1 },
	{ 92594, 9, DECODED_GRPC_RESPONSE, 1 },
	{ 92594, 5, DECODED_GRPC_REQUEST, 1 },
	{ 92594, 5, DECODED_GRPC_RESPONSE, 1 },
	/* 92607: the apiserver's lease Txn (17); one WatchResponse of one event on 5. */
	{ 92607, 17, DECODED_GRPC_REQUEST, 1 },
	{ 92607, 17, DECODED_GRPC_RESPONSE, 1 },
	{ 92607, 5, DECODED_ETCD_WATCH_EVENT, 1 },
	/* Clients of kube-apiserver. 91917, the scheduler: the Binding (67) and an Event (69) with
	 * their responses; its pods watch (61) carries two protobuf watch frames. */
	{ 91917, 67, DECODED_REQUEST, 1 },
	{ 91917, 67, DECODED_RESPONSE, 1 },
	{ 91917, 69, DECODED_REQUEST, 1 },
	{ 91917, 69, DECODED_RESPONSE, 1 },
	{ 91917, 61, DECODED_WATCH_EVENT, 2 },
	/* 92790, kubectl get -w: two JSON Table lines of one row each. */
	{ 92790, 3, DECODED_WATCH_EVENT, 2 },
	/* 92815, kubectl run: the pod's POST and its 201, from the connection's preface on. */
	{ 92815, 1, DECODED_REQUEST, 1 },
	{ 92815, 1, DECODED_RESPONSE, 1 },
};
/* Its records: the file's lines (wc -l). */
#define CAPTURE_RECORDS 77
#define CAPTURE_MESSAGES 25 /* the sum of the counts above */

/* The messages of the replay are exactly those of capture_msgs: none missing, none repeated, none
 * on a stream or of a kind the capture does not hold. */
static void check_capture_counts(const struct seen *s, const char *how)
{
	size_t nexp = sizeof(capture_msgs) / sizeof(capture_msgs[0]);
	int total = 0;

	for (size_t e = 0; e < nexp; e++) {
		const struct capture_msgs *x = &capture_msgs[e];
		int got = 0;
		for (int i = 0; i < s->n; i++)
			got += s->conn[i] == x->conn && s->m[i].stream_id == x->stream &&
			       s->m[i].kind == x->kind;
		CHECK(got == x->count, "%s: conn %llu stream %u kind %d: %d messages, want %d", how,
		      (unsigned long long)x->conn, x->stream, x->kind, got, x->count);
		total += x->count;
	}
	CHECK_INT(total, CAPTURE_MESSAGES);
	CHECK(s->n == total, "%s: %d messages, want %d", how, s->n, total);
}

static void test_capture(void)
{
	static struct fixture_record recs[256];
	const char *dir = getenv("FIXTURES");
	char path[512], how[64];

	snprintf(path, sizeof(path), "%s/bind_midconn.jsonl", dir ? dir : "tests/fixtures");
	int n = fixture__load(path, recs, 256);
	CHECK(n == CAPTURE_RECORDS, "%s: %d records, want %d", path, n, CAPTURE_RECORDS);
	for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
		for (size_t p = 0; p < NPIECES; p++) {
			struct seen s;
			seen_init(&s);
			replay(recs, n, pieces[p], (enum client_mode)mode, &s);
			check_capture(&s, (enum client_mode)mode, pieces[p]);
			snprintf(how, sizeof(how), "mode %d piece %zu", mode, pieces[p]);
			check_capture_counts(&s, how);
			free(s.m);
		}
	}
	/* The file's own "client" fields, through decode__replay_file. */
	struct seen s;
	seen_init(&s);
	CHECK_INT(decode__replay_file(path, 0, collect, &s, &s.cur_conn, NULL), 0);
	int binds = 0, txns = 0;
	for (int i = 0; i < s.n; i++) {
		CHECK(s.m[i].client_known, "message %d", i);
		binds += s.m[i].kind == DECODED_REQUEST && s.m[i].body_kind == BODY_K8S &&
			 s.m[i].body.k8s.kind == K8S_KIND_BINDING;
		txns += s.m[i].body_kind == BODY_ETCD_TXN;
	}
	check_capture_counts(&s, "decode__replay_file");
	CHECK_INT(binds, 1);
	CHECK_INT(txns, 4);
	free(s.m);
	fixture__free(recs, n);
}

/* A fixture of the scheduler's end of its connection to the apiserver (it dialed), checked to hold
 * its want records. */
static int load_scheduler_fixture(const char *name, struct fixture_record *recs, int max, int want)
{
	const char *dir = getenv("FIXTURES");
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", name);
	int n = fixture__load(path, recs, max);
	CHECK(n == want, "%s: %d records, want its %d lines", path, n, want);
	for (int i = 0; i < n; i++)
		recs[i].client_dir = CONN_DIR_OUT; /* kube-scheduler dialed the apiserver */
	return n;
}

/* The scheduler's end of its connection, met mid-stream (bind_h2_midstream.jsonl): told that it
 * is the client, every message has its kind from the start, even before a request head. */
static void test_midstream_fixture(void)
{
	static struct fixture_record recs[256];
	int n = load_scheduler_fixture("bind_h2_midstream.jsonl", recs, 256, 19);

	for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
		for (size_t p = 0; p < NPIECES; p++) {
			struct seen s;
			int guessed = 0, binds = 0, created = 0, events = 0, resets = 0;
			seen_init(&s);
			replay(recs, n, pieces[p], (enum client_mode)mode, &s);
			for (int i = 0; i < s.n; i++) {
				const struct decoded_msg *m = &s.m[i];
				bool request =
				    m->kind == DECODED_REQUEST || m->kind == DECODED_GRPC_REQUEST;
				guessed += !m->client_known;
				if (mode != CLIENT_DETECT || m->client_known)
					CHECK(m->from_client == (m->dir == CONN_DIR_OUT) &&
						  request == m->from_client,
					      "mode %d piece %zu message %d: kind %d dir %d", mode,
					      pieces[p], i, m->kind, m->dir);
				binds += request && m->body_kind == BODY_K8S &&
					 m->body.k8s.kind == K8S_KIND_BINDING;
				created += m->kind == DECODED_RESPONSE &&
					   m->body_kind == BODY_K8S &&
					   m->body.k8s.kind == K8S_KIND_STATUS &&
					   m->body.k8s.status.code == 201;
				events += m->kind == DECODED_WATCH_EVENT && m->stream_id == 1;
				resets += m->kind == DECODED_STREAM_RESET && m->stream_id == 15;
			}
			if (mode == CLIENT_DETECT)
				CHECK(guessed > 0,
				      "before its first request head, the side is a guess");
			else
				CHECK(guessed == 0, "mode %d piece %zu: %d guessed", mode,
				      pieces[p], guessed);
			/* Its frames, walked from the first whole one in each direction (the first
			 * 1500 bytes of each were sent before the capture, see tests/fixtures/gen):
			 * out, the Bindings of web-5 (13) and of "late" (15); in, four 201s (7, 9,
			 * 11, 13), eight watch frames on 1 (ADDED and MODIFIED of web-2 to web-5),
			 * and 15's RST_STREAM. A cut frame before them is no message. */
			CHECK(binds == 2 && created == 4 && events == 8 && resets == 1 && s.n == 15,
			      "mode %d piece %zu: %d binds, %d created, %d events, %d resets, %d "
			      "messages; want 2, 4, 8, 1, 15",
			      mode, pieces[p], binds, created, events, resets, s.n);
			free(s.m);
		}
	}
	fixture__free(recs, n);
}

/* The scheduler's second connection to the apiserver (its watch of the extension-apiserver-
 * authentication ConfigMap), captured for eight minutes from a scheduler that had been running for
 * half an hour (watch_remade_midconn.jsonl: `bindtrace capture --json -p` on the test bed, cut to
 * the connection by trim-capture). Its informer makes the watch again every few minutes (streams
 * 11, 13, 15); each response's content-type is the dynamic entry Go's HPACK encoder inserted for
 * the first, before the capture. Every event must be read as protobuf: read as JSON lines, each
 * BOOKMARK came out as six fragments of undecoded bytes, and a pod watch made again this way in
 * a burst would lose every ADDED and MODIFIED after it. */
static void test_remade_watch_fixture(void)
{
	static struct fixture_record recs[128];
	int n = load_scheduler_fixture("watch_remade_midconn.jsonl", recs, 128, 57);

	for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
		for (size_t p = 0; p < NPIECES; p++) {
			struct seen s;
			int watches = 0, unknown_type = 0, bookmarks = 0, other = 0;

			seen_init(&s);
			replay(recs, n, pieces[p], (enum client_mode)mode, &s);
			for (int i = 0; i < s.n; i++) {
				const struct decoded_msg *m = &s.m[i];

				if (m->kind == DECODED_RESPONSE && m->http.status == 200 &&
				    strstr(m->http.path, "watch=true")) {
					watches++;
					unknown_type += !m->http.content_type[0];
				} else if (m->kind == DECODED_WATCH_EVENT &&
					   m->body_kind == BODY_K8S_WATCH_EVENT &&
					   !strcmp(m->body.watch.type, "BOOKMARK")) {
					bookmarks++;
				} else if (m->kind != DECODED_REQUEST) {
					other++;
				}
			}
			CHECK(watches == 3 && unknown_type == 3 && bookmarks == 14 && !other,
			      "mode %d piece %zu: %d watches (%d with an unknown content-type), %d "
			      "BOOKMARKs, %d other messages; want 3 (3), 14, 0",
			      mode, pieces[p], watches, unknown_type, bookmarks, other);
			free(s.m);
		}
	}
	fixture__free(recs, n);
}

/* The scheduler's HTTP/1.1 watch of pods (DISABLE_HTTP2=1), met midway by a real capture
 * (watch_http1_midway.jsonl): its first read begins at a chunk header followed by a protobuf
 * watch frame; both events of the bind are found, whole, byte by byte and in pieces, and
 * whether or not the client side is given. A chunk header is not believed unless the watch
 * frame behind it fits it. */
static void test_http1_watch_midway(void)
{
	static struct fixture_record recs[16];
	const char *dir = getenv("FIXTURES");
	char path[512];

	snprintf(path, sizeof(path), "%s/watch_http1_midway.jsonl", dir ? dir : "tests/fixtures");
	int n = fixture__load(path, recs, 16);
	CHECK(n == 2, "%s: %d records", path, n);
	for (int mode = CLIENT_DETECT; mode <= CLIENT_AFTER; mode++) {
		for (size_t p = 0; p < NPIECES; p++) {
			struct seen s;
			seen_init(&s);
			replay(recs, n, pieces[p], (enum client_mode)mode, &s);
			CHECK(s.n == 2, "mode %d piece %zu: %d messages", mode, pieces[p], s.n);
			for (int i = 0; i < s.n && i < 2; i++) {
				const struct decoded_msg *m = &s.m[i];
				CHECK(m->kind == DECODED_WATCH_EVENT &&
					  m->proto == CONN_PROTO_HTTP1,
				      "mode %d piece %zu: message %d kind %d", mode, pieces[p], i,
				      m->kind);
				CHECK_STR(m->body.watch.type, i ? "MODIFIED" : "ADDED");
				CHECK_STR(m->body.watch.object.meta.name, "h1");
				CHECK_STR(m->body.watch.object.pod.node_name, i ? "node-a" : "");
			}
			free(s.m);
		}
	}
	fixture__free(recs, n);

	static const struct {
		const char *b;
		size_t len; /* 0: strlen (the protobuf ones have NULs inside) */
		int want;
	} chunks[] = {
		{ "36b\r\n\0\0\x03\x67\x0a", 10, 1 }, /* 0x36b = 0x367 + 4 */
		{ "36c\r\n\0\0\x03\x67\x0a", 10, 0 }, /* the frame does not fit the chunk */
		{ "36b\r\n\0\0\x03\x67\x12", 10, 0 }, /* not a WatchEvent's first field */
		{ "2a\r\n{\"type\":\"MODIFIED\"", 0, 1 },
		{ "2a\r\n{\"kind\":\"Pod\"}", 0, 0 },
		{ "2a\r\n{\"ty", 0, -1 },
		{ "36b\r", 0, -1 },
		{ "GET / HTTP/1.1\r\n", 0, 0 },
		{ "123456789\r\n", 0, 0 },
	};
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		size_t len = chunks[i].len ? chunks[i].len : strlen(chunks[i].b);
		CHECK(http1__watch_chunk((const uint8_t *)chunks[i].b, len) == chunks[i].want,
		      "watch chunk %zu", i);
	}
}

int main(void)
{
	test_client_dir();
	test_grpc_unary();
	test_grpc_streaming();
	test_k8s_unknown_path();
	test_binding_path_inferred();
	test_watch_midway_cut_event();
	test_watch_unknown_content_type();
	test_watch_unknown_path_known_type();
	test_begin();
	test_capture();
	test_midstream_fixture();
	test_remade_watch_fixture();
	test_http1_watch_midway();
	return check_summary("midconn");
}
