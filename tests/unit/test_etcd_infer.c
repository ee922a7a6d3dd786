/* etcd method inference from message content, for gRPC streams whose :path was an HPACK entry the
 * capture never saw: each method's request and response shapes, the kube-apiserver's own
 * messages, and the look-alikes that must stay unknown (ambiguous shapes, unprintable or relative
 * keys, Kubernetes bodies, cut and random bytes). */
#include <stdlib.h>

#include "check.h"
#include "etcd.h"
#include "pbwrite.h"

static const char *const pod_key = "/registry/pods/default/seamc";

/* A "k8s\0" value: the magic and a few bytes; inference never decodes it. */
static void value(struct pbw *w, uint32_t field)
{
	pbw_bytes(w, field, "k8s\0\n\x09\n\x02v1\x12\x03Pod", 16);
}

/* GuaranteedUpdate: If(mod_revision(key) == rev) Then(Put key value) Else(Get key). */
static void txn_update(struct pbw *txn, const char *key, uint64_t rev)
{
	struct pbw cmp = { .n = 0 }, put = { .n = 0 }, op = { .n = 0 }, rng = { .n = 0 };

	txn->n = 0;
	pbw_uint(&cmp, 2, ETCD_TARGET_MOD);
	pbw_str(&cmp, 3, key);
	pbw_uint(&cmp, 6, rev);
	pbw_msg(txn, 1, &cmp);
	pbw_str(&put, 1, key);
	value(&put, 2);
	pbw_msg(&op, 2, &put);
	pbw_msg(txn, 2, &op);
	pbw_str(&rng, 1, key);
	op.n = 0;
	pbw_msg(&op, 1, &rng);
	pbw_msg(txn, 3, &op);
}

static void header(struct pbw *resp, uint64_t revision)
{
	struct pbw h = { .n = 0 };
	pbw_uint(&h, 1, 0x1f2e3d4c5b6a7988ull);
	pbw_uint(&h, 2, 0x0102030405060708ull);
	if (revision)
		pbw_uint(&h, 3, revision);
	pbw_uint(&h, 4, 2);
	pbw_msg(resp, 1, &h);
}

static void kv(struct pbw *w, const char *key, uint64_t mod)
{
	pbw_str(w, 1, key);
	pbw_uint(w, 2, 100);
	pbw_uint(w, 3, mod);
	pbw_uint(w, 4, 3);
	value(w, 5);
}

static void test_requests(void)
{
	static struct pbw m, a, b;

	txn_update(&m, pod_key, 211);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_TXN);
	/* Create: If(create_revision(key) == 0) Then(Put), no else. */
	m.n = a.n = b.n = 0;
	pbw_uint(&a, 2, ETCD_TARGET_CREATE);
	pbw_str(&a, 3, pod_key);
	pbw_msg(&m, 1, &a);
	a.n = 0;
	pbw_str(&a, 1, pod_key);
	value(&a, 2);
	pbw_uint(&a, 3, 7587); /* lease */
	pbw_msg(&b, 2, &a);
	pbw_msg(&m, 2, &b);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_TXN);
	/* Delete: If(mod_revision == rev) Then(DeleteRange key) */
	m.n = a.n = b.n = 0;
	pbw_uint(&a, 2, ETCD_TARGET_MOD);
	pbw_str(&a, 3, pod_key);
	pbw_uint(&a, 6, 300);
	pbw_msg(&m, 1, &a);
	a.n = 0;
	pbw_str(&a, 1, pod_key);
	pbw_msg(&b, 3, &a);
	pbw_msg(&m, 2, &b);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_TXN);

	/* Range: a Get, a prefix list with limit and revision, every key from one on. */
	m.n = 0;
	pbw_str(&m, 1, pod_key);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_RANGE);
	m.n = 0;
	pbw_str(&m, 1, "/registry/pods/");
	pbw_str(&m, 2, "/registry/pods0");
	pbw_uint(&m, 3, 500);
	pbw_uint(&m, 4, 212);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_RANGE);
	m.n = 0;
	pbw_str(&m, 1, "/registry/limitranges");
	pbw_uint(&m, 3, 1);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_RANGE);
	m.n = 0;
	pbw_str(&m, 1, "/registry/");
	pbw_bytes(&m, 2, "", 1);
	pbw_uint(&m, 9, 1); /* count_only */
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_RANGE);

	/* Put, with a lease. */
	m.n = 0;
	pbw_str(&m, 1, "/registry/events/default/seamc.18eca8ecf723f73c");
	value(&m, 2);
	pbw_uint(&m, 3, 7587);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_PUT);
	m.n = 0;
	pbw_str(&m, 1, "/registry/configmaps/kube-system/x");
	pbw_str(&m, 2, "{\"kind\":\"ConfigMap\"}");
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_PUT);

	/* Watch: create (prev_kv, progress_notify), progress, cancel. */
	m.n = a.n = 0;
	pbw_str(&a, 1, "/registry/pods/");
	pbw_str(&a, 2, "/registry/pods0");
	pbw_uint(&a, 3, 212);
	pbw_uint(&a, 4, 1);
	pbw_uint(&a, 6, 1);
	pbw_msg(&m, 1, &a);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_WATCH);
	CHECK_INT(etcd__infer_request_method((const uint8_t *)"\x1a\x00", 2), ETCD_METHOD_WATCH);
	m.n = a.n = 0;
	pbw_uint(&a, 1, 5);
	pbw_msg(&m, 2, &a);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_WATCH);

	/* LeaseKeepAlive{ID}. */
	m.n = 0;
	pbw_uint(&m, 1, 0x694d7c2b1a3e5f01ull);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_LEASE_KEEPALIVE);
}

static void test_request_lookalikes(void)
{
	static struct pbw m, a;
	static const char *const bad_keys[] = {
		"registry/pods/default/seamc", /* not absolute */
		"/registry/pods/default/se\x01mc", "/registry/pods/default/se mc", "/", "",
	};

	for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
		txn_update(&m, bad_keys[i], 211);
		CHECK(etcd__infer_request_method(m.b, m.n) == ETCD_METHOD_NONE, "txn key %zu", i);
		m.n = 0;
		pbw_str(&m, 1, bad_keys[i]);
		CHECK(etcd__infer_request_method(m.b, m.n) == ETCD_METHOD_NONE, "range key %zu", i);
	}
	/* A key too long for ETCD_KEY_MAX. */
	char longkey[ETCD_KEY_MAX + 8];
	memset(longkey, 'a', sizeof(longkey) - 1);
	longkey[0] = '/';
	longkey[sizeof(longkey) - 1] = 0;
	m.n = 0;
	pbw_str(&m, 1, longkey);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_NONE);
	/* Key + bytes that are neither a range end nor a value: Range or Put, so neither. */
	m.n = 0;
	pbw_str(&m, 1, pod_key);
	pbw_str(&m, 2, "xyz");
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_NONE);
	/* A Txn with an unknown field, a wrong wire type, an empty op, an op with two requests. */
	txn_update(&m, pod_key, 211);
	pbw_str(&m, 4, "x");
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_NONE);
	txn_update(&m, pod_key, 211);
	pbw_uint(&m, 2, 1);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_NONE);
	txn_update(&m, pod_key, 211);
	pbw_bytes(&m, 2, "", 0);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_NONE);
	txn_update(&m, pod_key, 211);
	a.n = 0;
	pbw_str(&a, 1, pod_key);
	struct pbw op = { .n = 0 };
	pbw_msg(&op, 1, &a);
	pbw_msg(&op, 2, &a);
	pbw_msg(&m, 2, &op);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_NONE);
	/* A compare without a key. */
	m.n = a.n = 0;
	pbw_uint(&a, 2, ETCD_TARGET_MOD);
	pbw_uint(&a, 6, 5);
	pbw_msg(&m, 1, &a);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_NONE);
	/* Txns nested deeper than the bound. */
	txn_update(&m, pod_key, 1);
	for (int d = 0; d < 5; d++) {
		struct pbw outer = { .n = 0 }, o = { .n = 0 };
		pbw_msg(&o, 4, &m);
		pbw_msg(&outer, 2, &o);
		m = outer;
		CHECK(etcd__infer_request_method(m.b, m.n) == (d < 3 ? ETCD_METHOD_TXN : 0),
		      "depth %d", d);
	}
	/* Two watch requests in one message; a lease ID of 0; Kubernetes and JSON bodies. */
	m.n = a.n = 0;
	pbw_str(&a, 1, "/registry/pods/");
	pbw_msg(&m, 1, &a);
	pbw_msg(&m, 1, &a);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_NONE);
	m.n = 0;
	pbw_uint(&m, 1, 0);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_NONE);
	CHECK_INT(etcd__infer_request_method((const uint8_t *)"k8s\0\n\x0d\n\x02v1", 11), 0);
	CHECK_INT(etcd__infer_request_method((const uint8_t *)"{\"kind\":\"Pod\"}", 15), 0);
	CHECK_INT(etcd__infer_request_method(NULL, 0), ETCD_METHOD_NONE);
	/* Every cut of a Txn either stays a Txn or is refused; none is taken for another method. */
	txn_update(&m, pod_key, 211);
	for (size_t n = 0; n < m.n; n++) {
		enum etcd_method got = etcd__infer_request_method(m.b, n);
		CHECK(got == ETCD_METHOD_NONE || got == ETCD_METHOD_TXN, "cut at %zu: %s", n,
		      etcd_method__name(got));
	}
	/* Random bytes are (almost) never a method: at most a handful in 20000 tries. */
	unsigned seed = 7, hits = 0;
	for (int i = 0; i < 20000; i++) {
		uint8_t r[64];
		size_t n = 1 + (size_t)(i % 63);
		for (size_t k = 0; k < n; k++) {
			seed = seed * 1103515245 + 12345;
			r[k] = (uint8_t)(seed >> 16);
		}
		hits += etcd__infer_request_method(r, n) != ETCD_METHOD_NONE;
		hits += etcd__infer_response_method(r, n) != ETCD_METHOD_NONE;
	}
	CHECK(hits < 40, "%u random inputs taken for etcd messages", hits);
}

static void test_responses(void)
{
	static struct pbw m, a, b, c;

	/* A successful GuaranteedUpdate: header, succeeded, ResponseOp{response_put{header}}. */
	m.n = a.n = b.n = c.n = 0;
	header(&m, 212);
	pbw_uint(&m, 2, 1);
	pbw_uint(&c, 3, 212);
	pbw_msg(&a, 1, &c);
	pbw_msg(&b, 2, &a);
	pbw_msg(&m, 3, &b);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_TXN);
	/* A failed compare: ResponseOp{response_range{header, kvs}}. */
	m.n = a.n = b.n = c.n = 0;
	header(&m, 213);
	header(&a, 213);
	kv(&c, pod_key, 212);
	pbw_msg(&a, 2, &c);
	pbw_uint(&a, 4, 1);
	pbw_msg(&b, 1, &a);
	pbw_msg(&m, 3, &b);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_TXN);
	/* RangeResponse with a kv. */
	m.n = a.n = 0;
	header(&m, 213);
	kv(&a, pod_key, 212);
	pbw_msg(&m, 2, &a);
	pbw_uint(&m, 4, 1);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_RANGE);
	/* WatchResponse: events; created; a progress notification (watch_id -1). */
	m.n = a.n = b.n = 0;
	header(&m, 212);
	kv(&a, pod_key, 212);
	pbw_msg(&b, 2, &a);
	a.n = 0;
	kv(&a, pod_key, 211);
	pbw_msg(&b, 3, &a);
	pbw_msg(&m, 11, &b);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_WATCH);
	m.n = 0;
	header(&m, 212);
	pbw_uint(&m, 2, 0);
	pbw_uint(&m, 3, 1);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_WATCH);
	m.n = 0;
	header(&m, 212);
	pbw_uint(&m, 2, UINT64_MAX);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_WATCH);

	/* Look-alikes: header and a 0/1 (Txn without responses or Watch of id 1); a header only; a
	 * header without a revision; an event of a bad type or with a relative key. */
	m.n = 0;
	header(&m, 212);
	pbw_uint(&m, 2, 1);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_NONE);
	m.n = 0;
	header(&m, 212);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_NONE);
	m.n = 0;
	header(&m, 0);
	pbw_uint(&m, 3, 1);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_NONE);
	m.n = a.n = b.n = 0;
	header(&m, 212);
	pbw_uint(&b, 1, 7);
	kv(&a, pod_key, 212);
	pbw_msg(&b, 2, &a);
	pbw_msg(&m, 11, &b);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_NONE);
	m.n = a.n = b.n = 0;
	header(&m, 212);
	kv(&a, "registry/pods/x", 212);
	pbw_msg(&b, 2, &a);
	pbw_msg(&m, 11, &b);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_NONE);
	/* A request is not a response, and the other way round. */
	txn_update(&m, pod_key, 211);
	CHECK_INT(etcd__infer_response_method(m.b, m.n), ETCD_METHOD_NONE);
	m.n = 0;
	header(&m, 212);
	pbw_uint(&m, 2, 0);
	pbw_uint(&m, 3, 1);
	CHECK_INT(etcd__infer_request_method(m.b, m.n), ETCD_METHOD_NONE);
}

/* RangeRequest and WatchCreateRequest name a key range alike (fields 1 and 2); the other fields
 * are their own. */
static void test_key_ranges(void)
{
	struct pbw m = { .n = 0 }, c = { .n = 0 };
	struct etcd_range_request rr;
	struct etcd_watch_request wq;

	pbw_str(&m, 1, "/registry/pods/");
	pbw_str(&m, 2, "/registry/pods0");
	pbw_uint(&m, 3, 500);
	pbw_uint(&m, 4, 12);
	pbw_uint(&m, 9, 1);
	CHECK_INT(etcd__decode_range_request(m.b, m.n, &rr), 0);
	CHECK_STR(rr.key, "/registry/pods/");
	CHECK_STR(rr.range_end, "/registry/pods0");
	CHECK_INT(rr.limit, 500);
	CHECK_INT(rr.revision, 12);
	CHECK(!rr.keys_only && rr.count_only, "count_only alone");
	/* A key that is not bytes is passed over. */
	m.n = 0;
	pbw_uint(&m, 1, 5);
	pbw_str(&m, 2, "/registry0");
	CHECK_INT(etcd__decode_range_request(m.b, m.n, &rr), 0);
	CHECK_STR(rr.key, "");
	CHECK_STR(rr.range_end, "/registry0");

	pbw_str(&c, 1, "/registry/pods/default/web-0");
	pbw_str(&c, 2, "/registry/pods/default/web-1");
	pbw_uint(&c, 3, 13);
	pbw_uint(&c, 6, 1);
	pbw_uint(&c, 7, 7);
	m.n = 0;
	pbw_msg(&m, 1, &c);
	CHECK_INT(etcd__decode_watch_request(m.b, m.n, &wq), 0);
	CHECK_INT(wq.kind, ETCD_WATCH_CREATE);
	CHECK_STR(wq.key, "/registry/pods/default/web-0");
	CHECK_STR(wq.range_end, "/registry/pods/default/web-1");
	CHECK_INT(wq.start_revision, 13);
	CHECK_INT(wq.watch_id, 7);
	CHECK(wq.prev_kv && !wq.progress_notify, "prev_kv alone");
}

int main(void)
{
	test_requests();
	test_request_lookalikes();
	test_responses();
	test_key_ranges();
	CHECK_STR(etcd_method__path(ETCD_METHOD_TXN), "/etcdserverpb.KV/Txn");
	CHECK_STR(etcd_method__path(ETCD_METHOD_WATCH), "/etcdserverpb.Watch/Watch");
	CHECK_STR(etcd_method__path(ETCD_METHOD_NONE), "");
	for (int m = ETCD_METHOD_TXN; m < ETCD_METHOD_OTHER; m++)
		CHECK_INT(etcd__method_from_path(etcd_method__path(m)), m);
	return check_summary("etcd_infer");
}
