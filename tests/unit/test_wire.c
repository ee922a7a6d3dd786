/* Table-driven tests of the wire decoders below HTTP: the protobuf walker, Kubernetes objects
 * (protobuf and JSON), etcd messages, gRPC / watch framing fed whole and byte by byte, and
 * redaction. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "etcd.h"
#include "grpc.h"
#include "k8s.h"
#include "pbwrite.h"
#include "protobuf.h"
#include "redact.h"

static void test_protobuf(void)
{
	static const struct {
		const char *name;
		const uint8_t *buf;
		size_t len;
		bool valid;
	} cases[] = {
		{ "empty", (const uint8_t *)"", 0, true },
		{ "varint", (const uint8_t *)"\x08\x96\x01", 3, true },
		{ "string",
		  (const uint8_t *)"\x12\x03"
				   "abc",
		  5, true },
		{ "length past end",
		  (const uint8_t *)"\x12\x05"
				   "abc",
		  5, false },
		{ "huge length", (const uint8_t *)"\x12\xff\xff\xff\xff\x0f", 6, false },
		{ "field 0", (const uint8_t *)"\x00\x01", 2, false },
		{ "group", (const uint8_t *)"\x0b\x0c", 2, false },
		{ "cut varint", (const uint8_t *)"\x08\x96", 2, false },
		{ "11-byte varint",
		  (const uint8_t *)"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, false },
		{ "fixed64", (const uint8_t *)"\x09\x01\x02\x03\x04\x05\x06\x07\x08", 9, true },
		{ "fixed32 cut", (const uint8_t *)"\x0d\x01\x02", 3, false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(pb__valid_message(cases[i].buf, cases[i].len) == cases[i].valid, "%s",
		      cases[i].name);
	struct pb_reader r;
	struct pb_field f;
	pb_reader__init(&r,
			"\x08\x96\x01\x12\x03"
			"abc",
			8);
	CHECK_INT(pb_reader__next(&r, &f), 1);
	CHECK(f.number == 1 && f.varint == 150, "varint 150");
	CHECK_INT(pb_reader__next(&r, &f), 1);
	CHECK(f.number == 2 && f.len == 3 && !memcmp(f.data, "abc", 3), "string");
	CHECK_INT(pb_reader__next(&r, &f), 0);
	char s[4];
	CHECK(!pb__copy_string(s, sizeof(s), (const uint8_t *)"a\nbcd", 5), "cut");
	CHECK(!strcmp(s, "a?b"), "%s", s);
}

static void meta(struct pbw *m, const char *ns, const char *name, const char *uid, const char *rv)
{
	m->n = 0;
	pbw_str(m, 1, name);
	pbw_str(m, 3, ns);
	pbw_str(m, 5, uid);
	pbw_str(m, 6, rv);
}

static void envelope(struct pbw *out, const char *kind, const struct pbw *raw)
{
	struct pbw tm = { .n = 0 }, u = { .n = 0 };
	pbw_str(&tm, 1, "v1");
	pbw_str(&tm, 2, kind);
	pbw_msg(&u, 1, &tm);
	pbw_msg(&u, 2, raw);
	pbw_str(&u, 3, "");
	pbw_str(&u, 4, "");
	out->n = 0;
	memcpy(out->b, "k8s\0", 4);
	out->n = 4;
	memcpy(out->b + 4, u.b, u.n);
	out->n += u.n;
}

/* What kube-scheduler writes in PodScheduled's message when no node fits. */
#define UNSCHED_MESSAGE                                                                            \
	"0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "           \
	"preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."

static void make_pod(struct pbw *out, const char *node, const char *cond_status, const char *reason)
{
	static struct pbw m, spec, status, cond, pod;
	meta(&m, "default", "web-1", "uid-1", "42");
	spec.n = status.n = cond.n = pod.n = 0;
	pbw_str(&spec, 10, node);
	pbw_str(&spec, 19, "default-scheduler");
	pbw_str(&cond, 1, "Ready");
	pbw_str(&cond, 2, "False");
	pbw_str(&status, 1, "Pending");
	pbw_msg(&status, 2, &cond);
	cond.n = 0;
	pbw_str(&cond, 1, "PodScheduled");
	pbw_str(&cond, 2, cond_status);
	pbw_str(&cond, 5, reason);
	if (reason[0])
		pbw_str(&cond, 6, UNSCHED_MESSAGE);
	pbw_msg(&status, 2, &cond);
	pbw_msg(&pod, 1, &m);
	pbw_msg(&pod, 2, &spec);
	pbw_msg(&pod, 3, &status);
	envelope(out, "Pod", &pod);
}

static void test_k8s(void)
{
	static struct pbw p, b, m, t, st;
	static struct k8s_object o;

	make_pod(&p, "node-a", "True", "");
	CHECK_INT(k8s__decode_protobuf(p.b, p.n, &o), 0);
	CHECK_INT(o.kind, K8S_KIND_POD);
	CHECK_STR(o.meta.namespace, "default");
	CHECK_STR(o.meta.name, "web-1");
	CHECK_STR(o.meta.uid, "uid-1");
	CHECK_STR(o.meta.resource_version, "42");
	CHECK_STR(o.pod.node_name, "node-a");
	CHECK_STR(o.pod.scheduler_name, "default-scheduler");
	CHECK_STR(o.pod.phase, "Pending");
	CHECK(o.pod.has_scheduled, "PodScheduled");
	CHECK_STR(o.pod.scheduled_status, "True");
	CHECK_STR(o.pod.scheduled_message, "");
	/* every truncation of the envelope is rejected or decodes without reading past it */
	for (size_t n = 0; n < p.n; n++) {
		uint8_t *cut = malloc(n ? n : 1);
		memcpy(cut, p.b, n);
		k8s__decode_protobuf(cut, n, &o);
		free(cut);
	}

	meta(&m, "default", "web-1", "uid-1", "");
	t.n = b.n = 0;
	pbw_str(&t, 1, "Node");
	pbw_str(&t, 3, "node-b");
	pbw_msg(&b, 1, &m);
	pbw_msg(&b, 2, &t);
	envelope(&p, "Binding", &b);
	CHECK_INT(k8s__decode_protobuf(p.b, p.n, &o), 0);
	CHECK_INT(o.kind, K8S_KIND_BINDING);
	CHECK_STR(o.binding.target_name, "node-b");
	CHECK_STR(o.binding.target_kind, "Node");

	st.n = 0;
	pbw_str(&st, 2, "Failure");
	pbw_str(&st, 3, "pod web-1 is already assigned");
	pbw_str(&st, 4, "Conflict");
	pbw_uint(&st, 6, 409);
	envelope(&p, "Status", &st);
	CHECK_INT(k8s__decode_protobuf(p.b, p.n, &o), 0);
	CHECK(o.kind == K8S_KIND_STATUS && o.status.code == 409, "status 409");
	CHECK_STR(o.status.reason, "Conflict");

	envelope(&p, "Secret", &m);
	CHECK_INT(k8s__decode_protobuf(p.b, p.n, &o), 0);
	CHECK_INT(o.kind, K8S_KIND_SECRET);

	CHECK(k8s__decode_protobuf((const uint8_t *)"k9s\0", 4, &o) < 0, "bad magic");

	/* WatchEvent with a RawExtension holding the pod */
	static struct pbw ev, raw;
	make_pod(&p, "", "False", "Unschedulable");
	raw.n = ev.n = 0;
	pbw_bytes(&raw, 1, p.b, p.n);
	pbw_str(&ev, 1, "MODIFIED");
	pbw_msg(&ev, 2, &raw);
	static struct k8s_watch_event we;
	CHECK_INT(k8s__decode_watch_event_protobuf(ev.b, ev.n, &we), 0);
	CHECK_STR(we.type, "MODIFIED");
	CHECK_STR(we.object.pod.scheduled_reason, "Unschedulable");
	CHECK_STR(we.object.pod.scheduled_message, UNSCHED_MESSAGE);
	uint8_t frame[8192];
	frame[0] = 0;
	frame[1] = 0;
	frame[2] = (uint8_t)(ev.n >> 8);
	frame[3] = (uint8_t)ev.n;
	memcpy(frame + 4, ev.b, ev.n);
	CHECK(k8s__looks_like_watch_frame(frame, ev.n + 4), "watch frame sniff");
	CHECK(!k8s__looks_like_watch_frame((const uint8_t *)"\0\0\0\x10\x0a\x05HELLO", 11),
	      "not a watch type");

	static const struct {
		const char *json;
		enum k8s_kind kind;
		const char *name, *node;
	} js[] = {
		{ "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\",\"namespace\":"
		  "\"ns\",\"uid\":\"u\",\"resourceVersion\":\"7\"},\"spec\":{\"nodeName\":\"n1\"},"
		  "\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\"}]}}",
		  K8S_KIND_POD, "p", "n1" },
		{ "{\"kind\":\"Binding\",\"metadata\":{\"name\":\"p\"},\"target\":{\"kind\":\"Node\","
		  "\"name\":\"n2\"}}",
		  K8S_KIND_BINDING, "p", NULL },
		{ "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}", K8S_KIND_STATUS, "",
		  NULL },
		{ "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},\"data\":{\"k\":\"c2VjcmV0\"}}",
		  K8S_KIND_SECRET, "s", NULL },
		{ "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\"}}", K8S_KIND_OTHER, "cm",
		  NULL },
	};
	for (size_t i = 0; i < sizeof(js) / sizeof(js[0]); i++) {
		CHECK_INT(k8s__decode_json(js[i].json, strlen(js[i].json), &o, NULL), 0);
		CHECK_INT(o.kind, js[i].kind);
		CHECK_STR(o.meta.name, js[i].name);
		if (js[i].node)
			CHECK_STR(o.pod.node_name, js[i].node);
		CHECK(!memmem(&o, sizeof(o), "c2VjcmV0", 8), "secret data kept");
	}
	/* A pod that fits no node: the scheduler's reason and message. */
	const char *unsched =
	    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"nofit\"},\"status\":{\"conditions\":[{"
	    "\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\","
	    "\"message\":\"" UNSCHED_MESSAGE "\"}]}}";
	CHECK_INT(k8s__decode_json(unsched, strlen(unsched), &o, NULL), 0);
	CHECK_STR(o.pod.scheduled_reason, "Unschedulable");
	CHECK_STR(o.pod.scheduled_message, UNSCHED_MESSAGE);
	/* A message of the scheduler's longest (1024 bytes) is held whole; a longer one is cut at
	 * a character's start and ends in "…"; a generateName'd pod says its name is not one. */
	{
		static char big[2200];
		char msg[1200];
		int n;

		for (size_t len = 1024; len <= 1026; len += 2) {
			memset(msg, 'a', len);
			memcpy(msg + 1019, "\xc3\xa9\xc3\xa9", 4); /* "éé" across the cut */
			msg[len] = '\0';
			n = snprintf(big, sizeof(big),
				     "{\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"web-\"},"
				     "\"status\":{\"conditions\":[{\"type\":\"PodScheduled\","
				     "\"message\":\"%s\"}]}}",
				     msg);
			CHECK_INT(k8s__decode_json(big, (size_t)n, &o, NULL), 0);
			if (len == 1024) {
				CHECK_STR(o.pod.scheduled_message, msg);
			} else {
				CHECK(strlen(o.pod.scheduled_message) <= 1024 &&
					  !strcmp(o.pod.scheduled_message +
						      strlen(o.pod.scheduled_message) - 3,
						  "\xe2\x80\xa6") &&
					  !strncmp(o.pod.scheduled_message, msg, 1019),
				      "a %zu-byte message cut with an ellipsis: ...%s", len,
				      o.pod.scheduled_message + 1015);
			}
			CHECK(o.meta.generated_name && !strcmp(o.meta.name, "web-"),
			      "generateName kept apart from a name");
		}
	}
	CHECK(k8s__decode_json("[1,2]", 5, &o, NULL) < 0, "array");
	CHECK(k8s__decode_json("{\"kind\":", 8, &o, NULL) < 0, "cut json");

	/* A Table watch event without column definitions uses the remembered ones. */
	struct k8s_table_columns cols;
	k8s_table_columns__init(&cols);
	const char *t1 =
	    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Table\",\"columnDefinitions\":["
	    "{\"name\":\"Name\"},{\"name\":\"Node\"},{\"name\":\"Status\"}],\"rows\":[{"
	    "\"cells\":[\"p\",\"<none>\",\"Pending\"],\"object\":{\"metadata\":{\"name\":"
	    "\"p\",\"uid\":\"u1\"}}}]}}";
	const char *t2 =
	    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Table\",\"columnDefinitions\":"
	    "[],\"rows\":[{\"cells\":[\"p\",\"n9\",\"Pending\"]}]}}";
	CHECK_INT(k8s__decode_watch_event_json(t1, strlen(t1), &we, &cols, NULL, NULL), 1);
	CHECK_STR(we.object.row.node_name, "<none>");
	CHECK_STR(we.object.meta.uid, "u1");
	CHECK_INT(k8s__decode_watch_event_json(t2, strlen(t2), &we, &cols, NULL, NULL), 1);
	CHECK_STR(we.object.row.node_name, "n9");
	CHECK_STR(we.object.row.status, "Pending");
	CHECK(k8s__decode_watch_event_json("{\"type\":\"NOPE\",\"object\":{}}", 27, &we, &cols,
					   NULL, NULL) < 0,
	      "bad type");
}

static void test_etcd(void)
{
	static struct pbw pod, cmp, put, op, txn, rng, hdr, kv, resp, ev, wr;
	static struct etcd_txn t;
	static struct etcd_txn_response tr;

	make_pod(&pod, "node-a", "True", "");
	cmp.n = put.n = op.n = txn.n = rng.n = 0;
	pbw_uint(&cmp, 2, ETCD_TARGET_MOD);
	pbw_str(&cmp, 3, "/registry/pods/default/web-1");
	pbw_uint(&cmp, 6, 41);
	pbw_str(&put, 1, "/registry/pods/default/web-1");
	pbw_bytes(&put, 2, pod.b, pod.n);
	pbw_msg(&op, 2, &put);
	pbw_msg(&txn, 1, &cmp);
	pbw_msg(&txn, 2, &op);
	op.n = 0;
	pbw_str(&rng, 1, "/registry/pods/default/web-1");
	pbw_msg(&op, 1, &rng);
	pbw_msg(&txn, 3, &op);
	CHECK_INT(etcd__decode_txn_request(txn.b, txn.n, &t), 0);
	CHECK_INT(t.compare_revision, 41);
	CHECK_INT(t.compare_target, ETCD_TARGET_MOD);
	CHECK(t.has_put && t.put.value.kind == K8S_KIND_POD, "put pod");
	CHECK_STR(t.put.value.pod.node_name, "node-a");
	CHECK_STR(t.else_get_key, "/registry/pods/default/web-1");
	CHECK(etcd__decode_txn_request(txn.b, txn.n - 1, &t) < 0, "cut txn");

	hdr.n = kv.n = resp.n = 0;
	pbw_uint(&hdr, 1, 7);
	pbw_uint(&hdr, 3, 1234);
	pbw_msg(&resp, 1, &hdr);
	pbw_uint(&resp, 2, 0);
	pbw_str(&kv, 1, "/registry/pods/default/web-1");
	pbw_uint(&kv, 3, 1230);
	pbw_bytes(&kv, 5, pod.b, pod.n);
	rng.n = op.n = 0;
	pbw_msg(&rng, 2, &kv);
	pbw_msg(&op, 1, &rng);
	pbw_msg(&resp, 3, &op);
	CHECK_INT(etcd__decode_txn_response(resp.b, resp.n, &tr), 0);
	CHECK_INT(tr.header.revision, 1234);
	CHECK(!tr.succeeded && tr.has_kv && tr.kv.mod_revision == 1230, "else get kv");

	/* A secret's value is never decoded. */
	kv.n = 0;
	pbw_str(&kv, 5, "k8s\0junk"); /* value before key: order must not matter */
	pbw_str(&kv, 1, "/registry/secrets/ns/s");
	ev.n = wr.n = 0;
	pbw_uint(&ev, 1, 0);
	pbw_msg(&ev, 2, &kv);
	pbw_msg(&wr, 1, &hdr);
	pbw_msg(&wr, 11, &ev);
	pbw_msg(&wr, 11, &ev);
	struct etcd_watch_response w;
	CHECK_INT(etcd__decode_watch_response(wr.b, wr.n, &w, NULL, NULL), 0);
	CHECK_INT(w.events, 2);
	CHECK_INT(w.header.revision, 1234);

	CHECK_INT(etcd__method_from_path("/etcdserverpb.KV/Txn"), ETCD_METHOD_TXN);
	CHECK_INT(etcd__method_from_path("/etcdserverpb.Watch/Watch"), ETCD_METHOD_WATCH);
	CHECK_INT(etcd__method_from_path("/etcdserverpb.Maintenance/Status"), ETCD_METHOD_OTHER);
	CHECK_INT(etcd__method_from_path("/api/v1/pods"), ETCD_METHOD_NONE);
}

struct framed {
	int n;
	size_t lens[8];
	uint64_t first[8], last[8];
};

static void on_msg(const struct lp_message *m, void *ctx)
{
	struct framed *f = ctx;
	if (f->n < 8) {
		f->lens[f->n] = m->len;
		f->first[f->n] = m->ts_first_ns;
		f->last[f->n] = m->ts_last_ns;
	}
	f->n++;
}

static void test_framing(void)
{
	const uint8_t in[] = { 0, 0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 'z' };
	for (size_t piece = 1; piece <= sizeof(in); piece++) {
		struct lp_framer f = { .prefix_len = 5 };
		struct framed got = { 0 };
		for (size_t o = 0; o < sizeof(in); o += piece) {
			size_t n = sizeof(in) - o < piece ? sizeof(in) - o : piece;
			CHECK_INT(lp_framer__feed(&f, in + o, n, 100 + o, on_msg, &got), 0);
		}
		CHECK(got.n == 3 && got.lens[0] == 3 && got.lens[1] == 0 && got.lens[2] == 1,
		      "piece %zu: %d messages", piece, got.n);
		CHECK(got.first[0] == 100 &&
			  got.last[2] == 100 + ((sizeof(in) - 1) / piece) * piece,
		      "piece %zu: timestamps", piece);
		lp_framer__free(&f);
	}
	struct lp_framer f = { .prefix_len = 5 };
	CHECK(lp_framer__feed(&f, (const uint8_t *)"\x07\0\0\0\1", 5, 0, on_msg, NULL) < 0,
	      "bad flag");
	CHECK(grpc__is_content_type("application/grpc") &&
		  grpc__is_content_type("application/grpc+proto") &&
		  !grpc__is_content_type("application/grpcx"),
	      "grpc content types");
	char msg[64];
	grpc__decode_message("not%20found%0A", msg, sizeof(msg));
	CHECK(!strcmp(msg, "not found?"), "%s", msg);
}

static void test_redact(void)
{
	static const struct {
		const char *name, *value, *want;
	} hdrs[] = {
		{ "authorization", "Bearer abc", REDACTED },
		{ "Authorization", "Basic dXNlcjpwYXNz", REDACTED },
		{ "proxy-authorization", "x", REDACTED },
		{ "cookie", "a=b", REDACTED },
		{ "set-cookie", "a=b", REDACTED },
		{ "x-csrf-token", "t", REDACTED },
		{ "x-anything", "bearer xyz", REDACTED },
		{ "x-jwt", "eyJhbGciOiJIUzI1NiJ9.e30.sig", REDACTED },
		{ "user-agent", "kubectl/v1.34", "kubectl/v1.34" },
		{ "content-type", "application/json", "application/json" },
	};
	char out[128];
	for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		redact__header_value(hdrs[i].name, strlen(hdrs[i].name), hdrs[i].value,
				     strlen(hdrs[i].value), out, sizeof(out));
		CHECK(!strcmp(out, hdrs[i].want), "%s: %s", hdrs[i].name, out);
	}
	static const struct {
		const char *in, *want;
	} paths[] = {
		{ "/api/v1/pods", "/api/v1/pods" },
		{ "/api/v1/pods?watch=true&access_token=abc",
		  "/api/v1/pods?watch=true&access_token=" REDACTED },
		{ "/x?token=a&b=c", "/x?token=" REDACTED "&b=c" },
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		redact__path(paths[i].in, strlen(paths[i].in), out, sizeof(out));
		CHECK(!strcmp(out, paths[i].want), "%s", out);
	}
	CHECK(redact__etcd_key_is_secret("/registry/secrets/ns/a"), "secret key");
	CHECK(redact__etcd_key_is_secret("/prefix/registry/secrets/ns/a"), "prefixed secret key");
	CHECK(!redact__etcd_key_is_secret("/registry/pods/ns/a"), "pod key");
}

int main(void)
{
	test_protobuf();
	test_k8s();
	test_etcd();
	test_framing();
	test_redact();
	return check_summary("wire");
}
