/* The OTLP exporter: a bind's spans encoded, then decoded by an independent decoder (protoc
 * --decode_raw, Debian's protobuf-compiler) to check the field numbers and wire types against
 * opentelemetry-proto, and by the project's reader for the values (ids, parents, times equal to
 * the view's legs); the ids' determinism across tracers; the OTEL_EXPORTER_OTLP_* configuration;
 * and the exporter against a real HTTP server (libevent's) on loopback: batches arrive (gzip'd
 * when asked, with the configured headers), a 503 is retried, an absent collector and a full
 * queue drop spans and count them, every span counted once. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <zlib.h>

#include "bindview.h"
#include "check.h"
#include "otlp.h"
#include "otlp_encode.h"
#include "protobuf.h"

#define B 7000000000000ull /* bind_request, CLOCK_MONOTONIC ns */
#define US 1000ull
#define WALL 1764500000000000000ll /* the view's wall offset */
#define UID "5f0c2d8e-1b7a-4c59-9e0d-3a6f1b2c4d5e"

static void set(struct stage *st, pid_t pid, const char *comm, enum process_role role,
		uint64_t first, uint64_t last, bool sender)
{
	memset(st, 0, sizeof(*st));
	st->seen = true;
	st->first_ns = first;
	st->last_ns = last;
	st->mono_ns = sender ? first : last;
	st->who.pid = pid;
	st->who.role = role;
	snprintf(st->who.comm, sizeof(st->who.comm), "%s", comm);
}

/* A complete bind: scheduler 10, apiserver 20, etcd 30, a kubectl watcher (40) and a watcher
 * that is not traced. */
static void full_bind(struct bind_timeline *t)
{
	struct stage *s = t->stages;

	memset(t, 0, sizeof(*t));
	t->result = BIND_RESULT_BOUND;
	snprintf(t->namespace_, sizeof(t->namespace_), "default");
	snprintf(t->name, sizeof(t->name), "web-1");
	snprintf(t->uid, sizeof(t->uid), "%s", UID);
	snprintf(t->node, sizeof(t->node), "node-b");
	t->status_code = 201;
	t->revision = 212;
	set(&s[STAGE_BIND_REQUEST], 10, "kube-scheduler", ROLE_SCHEDULER, B, B + 11 * US, true);
	set(&s[STAGE_APISERVER_RECEIVED], 20, "kube-apiserver", ROLE_APISERVER, B + 100 * US,
	    B + 270 * US, false);
	set(&s[STAGE_ETCD_TXN_SENT], 20, "kube-apiserver", ROLE_APISERVER, B + 1877 * US,
	    B + 1890 * US, true);
	set(&s[STAGE_ETCD_TXN_RECEIVED], 30, "etcd", ROLE_ETCD, B + 2100 * US, B + 2191 * US,
	    false);
	set(&s[STAGE_ETCD_WAL_FSYNC], 30, "etcd", ROLE_ETCD, B + 2551 * US, B + 5991 * US, true);
	set(&s[STAGE_ETCD_TXN_RESPONSE], 30, "etcd", ROLE_ETCD, B + 8253 * US, B + 8260 * US, true);
	set(&s[STAGE_ETCD_WATCH_EVENT], 20, "kube-apiserver", ROLE_APISERVER, B + 6400 * US,
	    B + 6540 * US, false);
	set(&s[STAGE_BIND_RESPONSE], 20, "kube-apiserver", ROLE_APISERVER, B + 9506 * US,
	    B + 9510 * US, true);
	set(&s[STAGE_BIND_RESPONSE_RECEIVED], 10, "kube-scheduler", ROLE_SCHEDULER, B + 10000 * US,
	    B + 10211 * US, false);
	t->n_watchers = 2;
	set(&t->watchers[0].sent, 20, "kube-apiserver", ROLE_APISERVER, B + 7349 * US,
	    B + 7360 * US, true);
	set(&t->watchers[0].received, 40, "kubectl", ROLE_WATCHER, B + 13900 * US, B + 14010 * US,
	    false);
	set(&t->watchers[1].sent, 20, "kube-apiserver", ROLE_APISERVER, B + 7462 * US,
	    B + 7470 * US, true);
	snprintf(t->watchers[1].received.missing, sizeof(t->watchers[1].received.missing),
		 "the watcher is not traced");
	snprintf(t->watchers[0].user_agent, sizeof(t->watchers[0].user_agent),
		 "kubectl/v1.33.13 (linux/amd64)");
	snprintf(t->watchers[0].path, sizeof(t->watchers[0].path),
		 "/api/v1/namespaces/default/pods?watch=true");
	/* Not UTF-8: the encoder must not send it as it is. */
	snprintf(t->watchers[1].user_agent, sizeof(t->watchers[1].user_agent), "bad\xff\xfe/1");
	t->opened_ns = B;
}

static int encode(const struct bind_timeline *t, const char *node, struct pb_writer *w)
{
	struct bind_view v;
	struct otlp_source src = { .node = node };

	pb_writer__init(w);
	bind_view__init(&v, t, WALL);
	return otlp__encode_bind(w, &v, &src);
}

/* ---- protoc --decode_raw's text as a tree ---- */

struct node {
	int field;
	char value[256]; /* a leaf's text as protoc prints it ("" for a message) */
	bool message;
	struct node *kids, *next;
};

static void tree_free(struct node *n)
{
	while (n) {
		struct node *next = n->next;

		tree_free(n->kids);
		free(n);
		n = next;
	}
}

/* Lines "N: value", "N {", "}" (two spaces of indent per level). */
static struct node *parse_level(FILE *f, bool *ok)
{
	struct node *head = NULL, **tail = &head;
	char line[4096];

	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " ");
		struct node *n;

		p[strcspn(p, "\n")] = '\0';
		if (!strcmp(p, "}"))
			return head;
		n = calloc(1, sizeof(*n));
		if (!n || sscanf(p, "%d", &n->field) != 1) {
			free(n);
			*ok = false;
			return head;
		}
		p += strspn(p, "0123456789");
		if (!strcmp(p, " {")) {
			n->message = true;
			n->kids = parse_level(f, ok);
		} else if (!strncmp(p, ": ", 2)) {
			snprintf(n->value, sizeof(n->value), "%s", p + 2);
		} else {
			*ok = false;
		}
		*tail = n;
		tail = &n->next;
	}
	return head;
}

/* protoc --decode_raw of buf, as a tree; NULL when protoc failed. */
static struct node *decode_raw(const uint8_t *buf, size_t len)
{
	char path[] = "/tmp/bindtrace-otlp-XXXXXX", cmd[128];
	int fd = mkstemp(path);
	struct node *root = NULL;
	bool ok = true;
	FILE *f;

	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "protoc --decode_raw < %s", path);
	f = popen(cmd, "r");
	if (f) {
		root = parse_level(f, &ok);
		if (pclose(f) != 0 || !ok) {
			tree_free(root);
			root = NULL;
		}
	}
	unlink(path);
	return root;
}

static int count(const struct node *n, int field)
{
	int c = 0;

	for (; n; n = n->next)
		c += n->field == field;
	return c;
}

static const struct node *child(const struct node *n, int field)
{
	for (n = n ? n->kids : NULL; n; n = n->next)
		if (n->field == field)
			return n;
	return NULL;
}

/* A KeyValue list's value for key (the AnyValue's one field's text), or NULL. */
static const char *attr(const struct node *msg, int field, const char *key)
{
	char quoted[160];
	const struct node *n;

	snprintf(quoted, sizeof(quoted), "\"%s\"", key);
	for (n = msg->kids; n; n = n->next) {
		const struct node *k = child(n, 1), *v = child(n, 2);

		/* --decode_raw prints a string that happens to parse as a message as one
		 * ("POST", "kubectl"): its text is then not there; the project's reader
		 * checks those values. */
		if (n->field == field && k && !strcmp(k->value, quoted) && v && v->kids)
			return v->kids->message ? "(parsed as a message)" : v->kids->value;
	}
	return NULL;
}

static bool has_string(const struct node *n, int field, const char *s)
{
	char quoted[300];

	snprintf(quoted, sizeof(quoted), "\"%s\"", s);
	for (; n; n = n->next)
		if (n->field == field && !strcmp(n->value, quoted))
			return true;
	return false;
}

/* ---- The project's reader, for the values ---- */

struct span_seen {
	uint8_t trace_id[16], span_id[8], parent[8];
	size_t trace_id_len, span_id_len, parent_len;
	char name[64], service[64], leg[64];
	uint64_t start, end;
	int64_t duration_ns;
	bool has_duration;
};

static int read_spans(const uint8_t *buf, size_t len, struct span_seen *out, int cap)
{
	struct pb_reader req, rs, ss, sp, kv, any, res;
	struct pb_field f, g, h, i, j, k;
	int n = 0;

	pb_reader__init(&req, buf, len);
	while (pb_reader__next(&req, &f) == 1) {
		char service[64] = "";

		pb_reader__init(&rs, f.data, f.len);
		while (pb_reader__next(&rs, &g) == 1) {
			if (g.number == 1) { /* Resource */
				pb_reader__init(&res, g.data, g.len);
				while (pb_reader__next(&res, &h) == 1) {
					char key[64] = "", val[64] = "";

					pb_reader__init(&kv, h.data, h.len);
					while (pb_reader__next(&kv, &i) == 1) {
						if (i.number == 1)
							pb__copy_string(key, sizeof(key), i.data,
									i.len);
						if (i.number != 2)
							continue;
						pb_reader__init(&any, i.data, i.len);
						while (pb_reader__next(&any, &j) == 1)
							if (j.number == 1)
								pb__copy_string(val, sizeof(val),
										j.data, j.len);
					}
					if (!strcmp(key, "service.name"))
						snprintf(service, sizeof(service), "%s", val);
				}
				continue;
			}
			pb_reader__init(&ss, g.data, g.len);
			while (pb_reader__next(&ss, &h) == 1) {
				struct span_seen *s = &out[n];

				if (h.number != 2 || n == cap)
					continue;
				memset(s, 0, sizeof(*s));
				snprintf(s->service, sizeof(s->service), "%s", service);
				pb_reader__init(&sp, h.data, h.len);
				while (pb_reader__next(&sp, &i) == 1) {
					switch (i.number) {
					case 1:
						s->trace_id_len = i.len;
						memcpy(s->trace_id, i.data,
						       i.len < 16 ? i.len : 16);
						break;
					case 2:
						s->span_id_len = i.len;
						memcpy(s->span_id, i.data, i.len < 8 ? i.len : 8);
						break;
					case 4:
						s->parent_len = i.len;
						memcpy(s->parent, i.data, i.len < 8 ? i.len : 8);
						break;
					case 5:
						pb__copy_string(s->name, sizeof(s->name), i.data,
								i.len);
						break;
					case 7:
						s->start = i.varint;
						break;
					case 8:
						s->end = i.varint;
						break;
					case 9: {
						char key[64] = "";
						pb_reader__init(&kv, i.data, i.len);
						while (pb_reader__next(&kv, &j) == 1) {
							if (j.number == 1)
								pb__copy_string(key, sizeof(key),
										j.data, j.len);
							if (j.number != 2)
								continue;
							pb_reader__init(&any, j.data, j.len);
							while (pb_reader__next(&any, &k) == 1) {
								if (!strcmp(key, "bindtrace.leg") &&
								    k.number == 1)
									pb__copy_string(
									    s->leg, sizeof(s->leg),
									    k.data, k.len);
								if (!strcmp(key, "bindtrace.leg."
										 "duration_ns") &&
								    k.number == 3) {
									s->duration_ns =
									    (int64_t)k.varint;
									s->has_duration = true;
								}
							}
						}
						break;
					}
					}
				}
				n++;
			}
		}
	}
	return n;
}

/* ---- Tests ---- */

static void check_encoding(void)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct pb_writer w;
	struct bind_view v;
	struct span_seen spans[40];
	uint8_t trace_id[16], root_id[8];
	struct node *tree;
	size_t len = 0;
	int n, i, j, n_rs;

	full_bind(t);
	n = encode(t, "node-a", &w);
	/* The root (total), 8 path legs, fanout for 2 watchers, delivery for the traced one. */
	CHECK_INT(n, 1 + 8 + 2 + 1);
	CHECK_INT(pb_writer__finish(&w, &len), 0);

	/* The independent decoder. */
	tree = decode_raw(w.buf, len);
	CHECK(tree != NULL, "protoc --decode_raw failed on the encoded request");
	if (tree) {
		int spans_seen = 0;

		n_rs = count(tree, 1);
		CHECK_INT(n_rs, 4); /* one ResourceSpans per process */
		for (const struct node *rs = tree; rs; rs = rs->next) {
			const struct node *res = child(rs, 1), *ss = child(rs, 2), *scope;
			const char *svc;

			CHECK(rs->field == 1 && rs->message, "top level: resource_spans = 1");
			CHECK(res && res->message, "ResourceSpans.resource = 1");
			CHECK(ss && ss->message, "ResourceSpans.scope_spans = 2");
			if (!res || !ss)
				continue;
			svc = attr(res, 1, "service.name");
			CHECK(svc != NULL, "Resource.attributes = 1 holds service.name");
			CHECK(attr(res, 1, "k8s.node.name") &&
				  !strcmp(attr(res, 1, "k8s.node.name"), "\"node-a\""),
			      "k8s.node.name");
			CHECK(attr(res, 1, "service.instance.id") != NULL, "service.instance.id");
			scope = child(ss, 1);
			CHECK(scope && has_string(scope->kids, 1, "bindtrace"),
			      "ScopeSpans.scope = 1, InstrumentationScope.name = 1");
			for (const struct node *sp = ss->kids; sp; sp = sp->next) {
				const struct node *k;

				if (sp->field != 2)
					continue;
				spans_seen++;
				CHECK(sp->message, "ScopeSpans.spans = 2");
				k = child(sp, 5);
				CHECK(k && k->value[0] == '"', "Span.name = 5 is a string");
				k = child(sp, 6);
				CHECK(k && (!strcmp(k->value, "1") || !strcmp(k->value, "3")),
				      "Span.kind = 6 (INTERNAL or CLIENT)");
				/* fixed64 is printed 0x... by --decode_raw: the wire type is I64. */
				k = child(sp, 7);
				CHECK(k && !strncmp(k->value, "0x", 2),
				      "Span.start_time_unix_nano = 7, fixed64");
				k = child(sp, 8);
				CHECK(k && !strncmp(k->value, "0x", 2),
				      "Span.end_time_unix_nano = 8, fixed64");
				CHECK(attr(sp, 9, "k8s.pod.name") &&
					  !strcmp(attr(sp, 9, "k8s.pod.name"), "\"web-1\""),
				      "Span.attributes = 9: k8s.pod.name");
				CHECK(attr(sp, 9, "k8s.namespace.name") &&
					  !strcmp(attr(sp, 9, "k8s.namespace.name"), "\"default\""),
				      "k8s.namespace.name");
				CHECK(attr(sp, 9, "k8s.pod.uid") &&
					  !strcmp(attr(sp, 9, "k8s.pod.uid"), "\"" UID "\""),
				      "k8s.pod.uid");
				k = child(sp, 5);
				if (k && !strcmp(k->value, "\"apiserver_to_etcd\"")) {
					CHECK(attr(sp, 9, "rpc.system") &&
						  !strcmp(attr(sp, 9, "rpc.system"), "\"grpc\""),
					      "rpc.system on the Txn");
					CHECK(attr(sp, 9, "rpc.method") &&
						  !strcmp(attr(sp, 9, "rpc.method"),
							  "\"etcdserverpb.KV/Txn\""),
					      "rpc.method on the Txn");
					/* AnyValue.int_value = 3 */
					CHECK(attr(sp, 9, "bindtrace.leg.duration_ns") &&
						  !strcmp(attr(sp, 9, "bindtrace.leg.duration_ns"),
							  "314000"),
					      "duration_ns as AnyValue.int_value = 3");
				}
				if (k && !strcmp(k->value, "\"bind\"")) {
					CHECK(attr(sp, 9, "http.request.method") != NULL,
					      "http.request.method");
					CHECK(attr(sp, 9, "url.path") &&
						  !strcmp(attr(sp, 9, "url.path"),
							  "\"/api/v1/namespaces/default/pods/web-1/"
							  "binding\""),
					      "url.path");
					CHECK(attr(sp, 9, "http.response.status_code") &&
						  !strcmp(attr(sp, 9, "http.response.status_code"),
							  "201"),
					      "http.response.status_code");
					CHECK(!child(sp, 4), "the root has no parent");
				}
				if (k && !strcmp(k->value, "\"watch_delivery\""))
					CHECK(attr(sp, 9, "url.path") &&
						  !strcmp(attr(sp, 9, "url.path"),
							  "\"/api/v1/namespaces/default/pods\""),
					      "a watcher's url.path, without its query");
			}
		}
		CHECK_INT(spans_seen, n);
		tree_free(tree);
	}

	/* The values, with the project's reader. */
	bind_view__init(&v, t, WALL);
	otlp__trace_id(UID, trace_id);
	otlp__root_span_id(UID, root_id);
	CHECK_INT(read_spans(w.buf, len, spans, 40), n);
	for (i = 0; i < n && i < 40; i++) {
		struct span_seen *s = &spans[i];
		const struct bind_leg *l = NULL;

		CHECK(s->trace_id_len == 16 && !memcmp(s->trace_id, trace_id, 16),
		      "%s: the trace id from the UID", s->name);
		CHECK_INT(s->span_id_len, 8);
		for (j = 0; j < v.n_legs; j++)
			if (v.legs[j].seen && !strcmp(leg__name(v.legs[j].leg), s->leg) &&
			    (uint64_t)((int64_t)v.legs[j].start_ns + WALL) == s->start &&
			    (uint64_t)((int64_t)v.legs[j].end_ns + WALL) == s->end)
				l = &v.legs[j];
		CHECK(l != NULL, "span %s is a leg of the view", s->name);
		if (l) {
			CHECK_INT((int64_t)(s->end - s->start), bind_leg__ns(l));
			CHECK(s->has_duration && s->duration_ns == bind_leg__ns(l),
			      "%s: bindtrace.leg.duration_ns", s->name);
			CHECK_STR(s->service, actor__name(bind_leg__owner(l)));
		}
		if (!strcmp(s->name, "bind")) {
			CHECK_STR(s->service, "kube-scheduler");
			CHECK(!memcmp(s->span_id, root_id, 8), "the root's id from the UID");
			CHECK_INT(s->parent_len, 0);
		} else {
			CHECK(s->parent_len == 8 && !memcmp(s->parent, root_id, 8),
			      "%s: parent is the root", s->name);
		}
		for (j = 0; j < i; j++)
			CHECK(memcmp(spans[j].span_id, s->span_id, 8),
			      "%s and %s: the same span id", spans[j].name, s->name);
	}

	/* Not UTF-8 never reaches the wire. */
	CHECK(!memmem(w.buf, len, "\xff\xfe", 2), "invalid UTF-8 sent as it was");
	CHECK(memmem(w.buf, len,
		     "bad?"
		     "?/1",
		     7) != NULL,
	      "invalid UTF-8 not replaced by '?'");
	for (i = j = 0; i < n && i < 40; i++)
		j += !strcmp(spans[i].service, "kubectl");
	CHECK_INT(j, 1); /* the watcher's delivery, from the watcher's resource */
	pb_writer__free(&w);
	free(t);
}

/* The same bind from another tracer: the same trace and root, other leg spans; again from the
 * same: the same bytes. */
static void check_ids(void)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct pb_writer a, b, c;
	struct span_seen sa[40], sc[40];
	size_t la = 0, lb = 0, lc = 0;
	int na, nc, i;

	full_bind(t);
	encode(t, "node-a", &a);
	encode(t, "node-a", &b);
	encode(t, "node-c", &c);
	pb_writer__finish(&a, &la);
	pb_writer__finish(&b, &lb);
	pb_writer__finish(&c, &lc);
	CHECK(la == lb && !memcmp(a.buf, b.buf, la), "the same bind encodes to the same bytes");
	na = read_spans(a.buf, la, sa, 40);
	nc = read_spans(c.buf, lc, sc, 40);
	CHECK_INT(na, nc);
	for (i = 0; i < na && i < nc; i++) {
		CHECK(!memcmp(sa[i].trace_id, sc[i].trace_id, 16), "trace id depends on the node");
		if (!strcmp(sa[i].name, "bind"))
			CHECK(!memcmp(sa[i].span_id, sc[i].span_id, 8), "root id depends on node");
		else
			CHECK(memcmp(sa[i].span_id, sc[i].span_id, 8),
			      "%s: two tracers give one span id", sa[i].name);
	}
	pb_writer__free(&a);
	pb_writer__free(&b);
	pb_writer__free(&c);

	/* Another pod, another trace. */
	{
		uint8_t x[16], y[16];

		otlp__trace_id(UID, x);
		otlp__trace_id("5f0c2d8e-1b7a-4c59-9e0d-3a6f1b2c4d5f", y);
		CHECK(memcmp(x, y, 16), "two UIDs, one trace id");
	}
	free(t);
}

/* What is not a plain bind: no UID, a negative leg, an apiserver-only capture, no Binding. */
static void check_partial(void)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct pb_writer w;
	struct span_seen s[40];
	struct node *tree;
	size_t len = 0;
	int n, i;

	full_bind(t);
	t->uid[0] = '\0';
	/* The watch event read 1 ms before the fsync ended (clocks of two reads). */
	t->stages[STAGE_ETCD_WATCH_EVENT].mono_ns = B + 4991 * US;
	n = encode(t, "node-a", &w);
	pb_writer__finish(&w, &len);
	tree = decode_raw(w.buf, len);
	CHECK(tree != NULL, "decode_raw");
	tree_free(tree);
	CHECK(memmem(w.buf, len, "bindtrace.trace_id_from", 23) != NULL, "no UID: said so");
	CHECK(memmem(w.buf, len, "default/web-1@212", 17) == NULL, "the key is not sent");
	n = read_spans(w.buf, len, s, 40);
	for (i = 0; i < n; i++)
		if (!strcmp(s[i].name, "etcd_watch")) {
			CHECK_INT(s[i].end, s[i].start);
			CHECK_INT(s[i].duration_ns, -1000 * (int64_t)US);
		}
	pb_writer__free(&w);

	/* Only the apiserver and etcd traced: no root from this tracer, legs still name it. */
	full_bind(t);
	memset(&t->stages[STAGE_BIND_REQUEST], 0, sizeof(struct stage));
	memset(&t->stages[STAGE_BIND_RESPONSE_RECEIVED], 0, sizeof(struct stage));
	n = encode(t, "node-a", &w);
	pb_writer__finish(&w, &len);
	CHECK_INT(n, 6 + 2 + 1); /* handling, to etcd, commit, fsync, watch, respond; watchers */
	n = read_spans(w.buf, len, s, 40);
	for (i = 0; i < n; i++)
		CHECK(strcmp(s[i].name, "bind") && s[i].parent_len == 8,
		      "%s: a leg under the root another tracer sends", s[i].name);
	pb_writer__free(&w);

	/* The scheduler's POST seen, not its answer: the root to the last stage seen. */
	full_bind(t);
	memset(&t->stages[STAGE_BIND_RESPONSE_RECEIVED], 0, sizeof(struct stage));
	encode(t, "node-a", &w);
	pb_writer__finish(&w, &len);
	n = read_spans(w.buf, len, s, 40);
	for (i = 0; i < n; i++)
		if (!strcmp(s[i].name, "bind")) {
			CHECK_INT(s[i].start, (int64_t)B + WALL);
			CHECK_INT(s[i].end, (int64_t)(B + 14010 * US) + WALL);
			CHECK(!s[i].has_duration, "an incomplete root has no leg duration");
		}
	CHECK(memmem(w.buf, len, "bindtrace.complete", 18) != NULL, "complete said");
	pb_writer__free(&w);

	/* Unschedulable: no Binding, nothing to send. */
	memset(t, 0, sizeof(*t));
	t->result = BIND_RESULT_UNSCHEDULABLE;
	set(&t->stages[STAGE_BIND_REQUEST], 10, "kube-scheduler", ROLE_SCHEDULER, B, B, true);
	CHECK_INT(encode(t, "node-a", &w), 0);
	pb_writer__free(&w);
	free(t);
}

/* ---- Configuration ---- */

static void clear_env(void)
{
	static const char *const vars[] = {
		"OTEL_SDK_DISABLED",
		"OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS",
		"OTEL_EXPORTER_OTLP_COMPRESSION",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
		"OTEL_EXPORTER_OTLP_TIMEOUT",
		"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
		"OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_EXPORTER_OTLP_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_KEY",
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static void check_config(void)
{
	struct otlp_config *c = malloc(sizeof(*c));
	char why[256];

	clear_env();
	CHECK_INT(otlp_config__resolve(c, NULL, 0, "n", why, sizeof(why)), 0);
	CHECK_INT(otlp_config__resolve(c, "http://127.0.0.1:4318", 0, "n", why, sizeof(why)), 1);
	CHECK_STR(c->url, "http://127.0.0.1:4318/v1/traces");
	CHECK_STR(c->url_from, "--otlp");
	CHECK(!c->gzip && c->timeout_ms == 10000 && c->queue_bytes == OTLP_DEFAULT_QUEUE_BYTES,
	      "defaults");
	CHECK_INT(
	    otlp_config__resolve(c, "https://otel.example:443/base/", 0, "n", why, sizeof(why)), 1);
	CHECK_STR(c->url, "https://otel.example:443/base/v1/traces");
	CHECK_INT(otlp_config__resolve(c, "ftp://x", 0, "n", why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "http://") != NULL, "why: %s", why);
	CHECK_INT(otlp_config__resolve(c, "http://user:pw@x:1", 0, "n", why, sizeof(why)), -EINVAL);
	CHECK(!strstr(why, "pw"), "a password printed: %s", why);

	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318", 1);
	CHECK_INT(otlp_config__resolve(c, NULL, 0, "n", why, sizeof(why)), 1);
	CHECK_STR(c->url, "http://collector:4318/v1/traces");
	CHECK_STR(c->url_from, "OTEL_EXPORTER_OTLP_ENDPOINT");
	setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:9999/custom", 1);
	CHECK_INT(otlp_config__resolve(c, NULL, 0, "n", why, sizeof(why)), 1);
	CHECK_STR(c->url, "http://traces:9999/custom");
	/* The command line wins over the environment. */
	CHECK_INT(otlp_config__resolve(c, "http://cli:1", 0, "n", why, sizeof(why)), 1);
	CHECK_STR(c->url, "http://cli:1/v1/traces");
	setenv("OTEL_SDK_DISABLED", "true", 1);
	CHECK_INT(otlp_config__resolve(c, NULL, 0, "n", why, sizeof(why)), 0);
	clear_env();

	setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20s3cret, x-tenant = a ", 1);
	setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-tenant=b", 1);
	setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", 1);
	setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "2500", 1);
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "9", 1);
	CHECK_INT(otlp_config__resolve(c, "http://h:1", 4096 * 64, "n", why, sizeof(why)), 1);
	CHECK_INT(c->n_headers, 2);
	CHECK_STR(c->headers[0].name, "Authorization");
	CHECK_STR(c->headers[0].value, "Bearer s3cret");
	CHECK_STR(c->headers[1].name, "x-tenant");
	CHECK_STR(c->headers[1].value, "b");
	CHECK(c->gzip, "gzip");
	CHECK_INT(c->timeout_ms, 2500);
	CHECK_INT(c->queue_bytes, 4096 * 64);

	setenv("OTEL_EXPORTER_OTLP_HEADERS", "ok=1,Authorization Bearer s3cret", 1);
	CHECK_INT(otlp_config__resolve(c, "http://h:1", 0, "n", why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "entry 2") && !strstr(why, "s3cret"), "why: %s", why);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "k=%zz", 1);
	CHECK_INT(otlp_config__resolve(c, "http://h:1", 0, "n", why, sizeof(why)), -EINVAL);
	unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
	setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", 1);
	CHECK_INT(otlp_config__resolve(c, "http://h:1", 0, "n", why, sizeof(why)), -EINVAL);
	unsetenv("OTEL_EXPORTER_OTLP_COMPRESSION");
	setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "soon", 1);
	CHECK_INT(otlp_config__resolve(c, "http://h:1", 0, "n", why, sizeof(why)), -EINVAL);
	unsetenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT");
	unsetenv("OTEL_EXPORTER_OTLP_TIMEOUT");
	setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", 1);
	CHECK_INT(otlp_config__resolve(c, "http://h:1", 0, "n", why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "http/protobuf") != NULL, "why: %s", why);
	setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", 1);
	CHECK_INT(otlp_config__resolve(c, "http://h:1", 0, "n", why, sizeof(why)), 1);
	clear_env();
	free(c);
}

/* ---- The exporter against a real HTTP server ---- */

struct collector {
	struct event_base *base;
	struct evhttp *http;
	struct event *tick;
	_Atomic bool stop;
	pthread_t thread;
	int port;
	pthread_mutex_t lock;
	int fail_next; /* answer 503 to this many requests */
	int requests, requests_503;
	int spans; /* in the requests answered 200 */
	bool gzip_seen, header_seen, bad_body;
	char path[128];
};

static void on_collector_request(struct evhttp_request *req, void *arg)
{
	struct collector *col = arg;
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *enc = evhttp_find_header(h, "Content-Encoding");
	const char *tenant = evhttp_find_header(h, "x-tenant");
	size_t len = evbuffer_get_length(in);
	uint8_t *body = malloc(len + 1), *raw = body;
	size_t raw_len = len;
	struct span_seen *spans = malloc(4096 * sizeof(*spans));
	int n;

	evbuffer_remove(in, body, len);
	pthread_mutex_lock(&col->lock);
	col->requests++;
	snprintf(col->path, sizeof(col->path), "%s", evhttp_request_get_uri(req));
	if (col->fail_next > 0) {
		col->fail_next--;
		col->requests_503++;
		pthread_mutex_unlock(&col->lock);
		evhttp_send_reply(req, 503, "Unavailable", NULL);
		free(body);
		free(spans);
		return;
	}
	if (enc && !strcmp(enc, "gzip")) {
		z_stream z = {};
		uint8_t *out = malloc(8 << 20);

		col->gzip_seen = true;
		inflateInit2(&z, 15 + 16);
		z.next_in = body;
		z.avail_in = (uInt)len;
		z.next_out = out;
		z.avail_out = 8 << 20;
		if (inflate(&z, Z_FINISH) != Z_STREAM_END)
			col->bad_body = true;
		raw = out;
		raw_len = z.total_out;
		inflateEnd(&z);
	}
	if (tenant && !strcmp(tenant, "b"))
		col->header_seen = true;
	n = read_spans(raw, raw_len, spans, 4096);
	if (!pb__valid_message(raw, raw_len) || n <= 0)
		col->bad_body = true;
	col->spans += n;
	pthread_mutex_unlock(&col->lock);
	if (raw != body)
		free(raw);
	free(body);
	free(spans);
	evhttp_send_reply(req, 200, "OK", NULL);
}

/* Without libevent's thread support, another thread's loopbreak would not wake the loop. */
static void on_collector_tick(evutil_socket_t fd, short what, void *arg)
{
	struct collector *col = arg;

	(void)fd;
	(void)what;
	if (atomic_load(&col->stop))
		event_base_loopbreak(col->base);
}

static void *collector_thread(void *arg)
{
	struct collector *col = arg;

	event_base_dispatch(col->base);
	return NULL;
}

static int collector_start(struct collector *col)
{
	struct evhttp_bound_socket *sock;
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);

	memset(col, 0, sizeof(*col));
	pthread_mutex_init(&col->lock, NULL);
	col->base = event_base_new();
	col->http = evhttp_new(col->base);
	sock = evhttp_bind_socket_with_handle(col->http, "127.0.0.1", 0);
	if (!sock || getsockname(evhttp_bound_socket_get_fd(sock), (struct sockaddr *)&sin, &sl))
		return -1;
	col->port = ntohs(sin.sin_port);
	evhttp_set_gencb(col->http, on_collector_request, col);
	col->tick = event_new(col->base, -1, EV_PERSIST, on_collector_tick, col);
	if (!col->tick || event_add(col->tick, &(struct timeval){ .tv_usec = 50000 }))
		return -1;
	return pthread_create(&col->thread, NULL, collector_thread, col);
}

static void collector_stop(struct collector *col)
{
	atomic_store(&col->stop, true);
	pthread_join(col->thread, NULL);
	event_free(col->tick);
	evhttp_free(col->http);
	event_base_free(col->base);
}

static struct otlp_exporter *exporter_to(int port, bool gzip, size_t queue)
{
	struct otlp_config c;
	char url[64], why[256];

	clear_env();
	if (gzip)
		setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=b", 1);
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2000", 1);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	if (otlp_config__resolve(&c, url, queue, "node-a", why, sizeof(why)) != 1)
		return NULL;
	clear_env();
	return otlp_exporter__start(&c);
}

static void export_binds(struct otlp_exporter *e, int n)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct pb_writer w;
	size_t len;
	int spans;

	for (int i = 0; i < n; i++) {
		full_bind(t);
		snprintf(t->uid, sizeof(t->uid), "uid-%d", i);
		spans = encode(t, "node-a", &w);
		if (spans > 0 && !pb_writer__finish(&w, &len))
			otlp_exporter__send(e, w.buf, len, spans);
		pb_writer__free(&w);
	}
	free(t);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void encode_binds(int n)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct pb_writer w;

	for (int i = 0; i < n; i++) {
		full_bind(t);
		snprintf(t->uid, sizeof(t->uid), "uid-%d", i);
		encode(t, "node-a", &w);
		pb_writer__free(&w);
	}
	free(t);
}

static void wait_exported(struct otlp_exporter *e, uint64_t want)
{
	struct otlp_stats s;

	for (int i = 0; i < 200; i++) {
		otlp_exporter__stats(e, &s);
		if (s.spans_exported + otlp_stats__dropped(&s) >= want)
			return;
		usleep(50000);
	}
}

static void check_export(void)
{
	struct collector col;
	struct otlp_exporter *e;
	struct otlp_stats s;
	FILE *out = fopen("/dev/null", "w");

	CHECK_INT(collector_start(&col), 0);

	/* 300 binds, gzip'd: every span arrives, in batches of at most 1 MiB. */
	e = exporter_to(col.port, true, 0);
	CHECK(e != NULL, "exporter");
	export_binds(e, 300);
	wait_exported(e, 300 * 12);
	otlp_exporter__stop(e, out);
	otlp_exporter__stats(e, &s);
	CHECK_INT(s.spans, 300 * 12);
	CHECK_INT(s.spans_exported, 300 * 12);
	CHECK_INT(otlp_stats__dropped(&s), 0);
	CHECK_INT(s.queued_bytes, 0);
	CHECK_INT(col.spans, 300 * 12);
	CHECK(col.gzip_seen && col.header_seen && !col.bad_body, "gzip %d header %d bad %d",
	      col.gzip_seen, col.header_seen, col.bad_body);
	CHECK_STR(col.path, "/v1/traces");
	otlp_exporter__free(e);

	/* Two 503s: retried, nothing lost. */
	col.fail_next = 2;
	col.spans = 0;
	e = exporter_to(col.port, false, 0);
	export_binds(e, 5);
	wait_exported(e, 5 * 12);
	otlp_exporter__stop(e, out);
	otlp_exporter__stats(e, &s);
	CHECK_INT(col.requests_503, 2);
	CHECK_INT(s.spans_exported, 5 * 12);
	CHECK_INT(s.requests_failed, 2);
	CHECK_INT(otlp_stats__dropped(&s), 0);
	otlp_exporter__free(e);
	collector_stop(&col);

	/* A collector that never answers (a socket that listens and never accepts: requests
	 * hang until the timeout) and a small queue: binds are taken as fast as they are encoded
	 * (the same 200 binds encoded alone set the pace: the machine may be loaded; a bind that
	 * waited for the network once would take the 2 s timeout), what does not
	 * fit is dropped as queue full, the rest when the tracer stops; all counted. */
	{
		struct sockaddr_in sin = { .sin_family = AF_INET };
		socklen_t sl = sizeof(sin);
		int hole = socket(AF_INET, SOCK_STREAM, 0);
		uint64_t enc_ns, queue_ns;

		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		CHECK(hole >= 0 && !bind(hole, (struct sockaddr *)&sin, sizeof(sin)) &&
			  !listen(hole, 64) && !getsockname(hole, (struct sockaddr *)&sin, &sl),
		      "a black hole collector");
		e = exporter_to(ntohs(sin.sin_port), false, 64 * 1024);
		enc_ns = now_ns();
		encode_binds(200);
		enc_ns = now_ns() - enc_ns;
		queue_ns = now_ns();
		export_binds(e, 200);
		queue_ns = now_ns() - queue_ns;
		printf(
		    "200 binds: encoded in %.1f ms, queued for a collector that never answers in "
		    "%.1f ms\n",
		    enc_ns / 1e6, queue_ns / 1e6);
		CHECK(queue_ns < 5 * enc_ns + 1000000000ull,
		      "queueing waited on the network: %llu ns, encoding alone %llu ns",
		      (unsigned long long)queue_ns, (unsigned long long)enc_ns);
		otlp_exporter__stats(e, &s);
		CHECK(s.dropped_queue_full > 0, "queue full counted");
		CHECK(s.queued_bytes <= 64 * 1024, "queue %zu bytes over its bound",
		      s.queued_bytes);
		otlp_exporter__stop(e, out);
		otlp_exporter__stats(e, &s);
		CHECK_INT(s.spans, 200 * 12);
		CHECK_INT(s.spans_exported, 0);
		CHECK_INT(otlp_stats__dropped(&s), s.spans);
		CHECK(s.dropped_at_exit + s.dropped_failed > 0, "the unsent counted");
		CHECK_INT(s.queued_bytes, 0);
		otlp_exporter__free(e);
		close(hole);
	}
	fclose(out);
}

int main(void)
{
	check_encoding();
	check_ids();
	check_partial();
	check_config();
	check_export();
	return check_summary("test_otlp");
}
