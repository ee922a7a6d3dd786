/* A bind's spans in OTLP protobuf. Field numbers, from opentelemetry-proto (collector/trace/v1,
 * trace/v1, resource/v1, common/v1):
 *
 *   ExportTraceServiceRequest  resource_spans 1
 *   ResourceSpans              resource 1, scope_spans 2
 *   Resource                   attributes 1
 *   ScopeSpans                 scope 1, spans 2
 *   InstrumentationScope       name 1, version 2
 *   Span                       trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6,
 *                              start_time_unix_nano 7 (fixed64), end_time_unix_nano 8 (fixed64),
 *                              attributes 9, status 15
 *   Status                     message 2, code 3 (1 OK, 2 ERROR)
 *   KeyValue                   key 1, value 2
 *   AnyValue                   string_value 1, bool_value 2, int_value 3
 *
 * tests/unit/test_otlp.c decodes what this writes with protoc --decode_raw and checks them. */
#include "otlp_encode.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "identity.h"
#include "version.h"

enum {
	REQ_RESOURCE_SPANS = 1,
	RS_RESOURCE = 1,
	RS_SCOPE_SPANS = 2,
	RES_ATTRIBUTES = 1,
	SS_SCOPE = 1,
	SS_SPANS = 2,
	SCOPE_NAME = 1,
	SCOPE_VERSION = 2,
	SPAN_TRACE_ID = 1,
	SPAN_SPAN_ID = 2,
	SPAN_PARENT_SPAN_ID = 4,
	SPAN_NAME = 5,
	SPAN_KIND = 6,
	SPAN_START = 7,
	SPAN_END = 8,
	SPAN_ATTRIBUTES = 9,
	SPAN_STATUS = 15,
	STATUS_MESSAGE = 2,
	STATUS_CODE = 3,
	KV_KEY = 1,
	KV_VALUE = 2,
	ANY_STRING = 1,
	ANY_BOOL = 2,
	ANY_INT = 3,
};

enum { KIND_INTERNAL = 1, KIND_CLIENT = 3 };
enum { STATUS_ERROR = 2 };

/* The processes that did a bind's spans: at most one per span. */
#define MAX_OWNERS (1 + BIND_MAX_LEGS)

static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

/* Fetched once: EVP_sha256() in a digest call fetches the implementation every time. */
static void sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/* The first n bytes of SHA-256 of the pieces, each followed by a NUL. */
static void derive_id(uint8_t *out, size_t n, const char *const *pieces, int n_pieces)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	pthread_once(&sha256_once, sha256_fetch);
	memset(md, 0, sizeof(md));
	if (ctx && EVP_DigestInit_ex(ctx, sha256_md ? sha256_md : EVP_sha256(), NULL)) {
		for (int i = 0; i < n_pieces; i++)
			EVP_DigestUpdate(ctx, pieces[i], strlen(pieces[i]) + 1);
		EVP_DigestFinal_ex(ctx, md, &md_len);
	}
	EVP_MD_CTX_free(ctx);
	memcpy(out, md, n);
	/* All zero is invalid in OTLP; a digest starting with 8 zero bytes is not going to
	 * happen, but never send one. */
	for (size_t i = 0; i < n; i++)
		if (out[i])
			return;
	out[n - 1] = 1;
}

void otlp__trace_id(const char *uid, uint8_t id[16])
{
	const char *p[] = { "bindtrace/v1/trace", uid };

	derive_id(id, 16, p, 2);
}

void otlp__root_span_id(const char *uid, uint8_t id[8])
{
	const char *p[] = { "bindtrace/v1/root", uid };

	derive_id(id, 8, p, 2);
}

/* src as valid UTF-8 (a collector rejects a request holding a string that is not): each byte
 * of an invalid sequence, and control bytes, become '?'. */
static void utf8_clean(char *dst, size_t cap, const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0;

	while (*s && o + 1 < cap) {
		int n = *s < 0x80	      ? 1
			: (*s & 0xe0) == 0xc0 ? 2
			: (*s & 0xf0) == 0xe0 ? 3
			: (*s & 0xf8) == 0xf0 ? 4
					      : 0;
		bool ok = n > 0 && o + (size_t)n < cap;

		for (int i = 1; ok && i < n; i++)
			ok = (s[i] & 0xc0) == 0x80;
		/* Overlong forms and surrogates are invalid too. */
		if (ok && n == 2 && *s < 0xc2)
			ok = false;
		if (ok && n == 3 && ((*s == 0xe0 && s[1] < 0xa0) || (*s == 0xed && s[1] >= 0xa0)))
			ok = false;
		if (ok && n == 4 &&
		    ((*s == 0xf0 && s[1] < 0x90) || *s > 0xf4 || (*s == 0xf4 && s[1] >= 0x90)))
			ok = false;
		if (ok && n == 1 && (*s < 0x20 || *s == 0x7f))
			ok = false;
		if (!ok) {
			dst[o++] = '?';
			s++;
			continue;
		}
		memcpy(dst + o, s, (size_t)n);
		o += (size_t)n;
		s += n;
	}
	dst[o] = '\0';
}

static void attr_string(struct pb_writer *w, uint32_t field, const char *key, const char *value)
{
	char clean[512];

	utf8_clean(clean, sizeof(clean), value);
	pb_writer__begin(w, field);
	pb_writer__string(w, KV_KEY, key);
	pb_writer__begin(w, KV_VALUE);
	pb_writer__string(w, ANY_STRING, clean);
	pb_writer__end(w);
	pb_writer__end(w);
}

static void attr_int(struct pb_writer *w, uint32_t field, const char *key, int64_t value)
{
	pb_writer__begin(w, field);
	pb_writer__string(w, KV_KEY, key);
	pb_writer__begin(w, KV_VALUE);
	pb_writer__int64(w, ANY_INT, value);
	pb_writer__end(w);
	pb_writer__end(w);
}

static void attr_bool(struct pb_writer *w, uint32_t field, const char *key, bool value)
{
	pb_writer__begin(w, field);
	pb_writer__string(w, KV_KEY, key);
	pb_writer__begin(w, KV_VALUE);
	pb_writer__varint(w, ANY_BOOL, value);
	pb_writer__end(w);
	pb_writer__end(w);
}

/* What the trace is keyed by: the UID, else what stands for it (see the header). */
struct bind_key {
	char key[BIND_NS_MAX + BIND_NAME_MAX + 96];
	const char *from; /* "k8s.pod.uid", ... */
};

static void bind_key(struct bind_key *k, const struct bind_timeline *t,
		     const struct otlp_source *src)
{
	if (t->uid[0]) {
		snprintf(k->key, sizeof(k->key), "%s", t->uid);
		k->from = "k8s.pod.uid";
	} else if (t->revision > 0) {
		snprintf(k->key, sizeof(k->key), "%s/%s@%" PRId64, t->namespace_, t->name,
			 t->revision);
		k->from = "namespace/name@etcd_revision";
	} else {
		snprintf(k->key, sizeof(k->key), "%s/%s@%s@%" PRIu64, t->namespace_, t->name,
			 src->node, t->opened_ns);
		k->from = "namespace/name@node@opened";
	}
}

/* One span to write: a leg of the view, or the root. */
struct span {
	const struct bind_leg *leg; /* NULL: the root */
	const struct actor *owner;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
	bool complete;		   /* the root: the total was seen */
};

struct bind_enc {
	const struct bind_view *v;
	const struct otlp_source *src;
	struct bind_key key;
	uint8_t trace_id[16], root_id[8];
	char url_path[BIND_NS_MAX + BIND_NAME_MAX + 48];
};

static bool same_owner(const struct actor *a, const struct actor *b)
{
	return a->pid == b->pid && a->role == b->role &&
	       (a->pid || !strcmp(actor__name(a), actor__name(b)));
}

static bool stage_is(const struct bind_timeline *t, const struct stage *st, enum stage_id id)
{
	return st == &t->stages[id];
}

static bool touches(const struct bind_timeline *t, const struct bind_leg *l, enum stage_id id)
{
	return stage_is(t, l->from, id) || stage_is(t, l->to, id);
}

/* The Binding POST's legs: they begin or end at one of its messages. */
static bool leg_is_binding_call(const struct bind_timeline *t, const struct bind_leg *l)
{
	return touches(t, l, STAGE_BIND_REQUEST) || touches(t, l, STAGE_APISERVER_RECEIVED) ||
	       touches(t, l, STAGE_BIND_RESPONSE) || touches(t, l, STAGE_BIND_RESPONSE_RECEIVED);
}

static bool leg_is_txn(const struct bind_timeline *t, const struct bind_leg *l)
{
	return touches(t, l, STAGE_ETCD_TXN_SENT) || touches(t, l, STAGE_ETCD_TXN_RECEIVED) ||
	       touches(t, l, STAGE_ETCD_TXN_RESPONSE);
}

static void binding_attrs(struct pb_writer *w, const struct bind_enc *e)
{
	attr_string(w, SPAN_ATTRIBUTES, "http.request.method", "POST");
	attr_string(w, SPAN_ATTRIBUTES, "url.path", e->url_path);
	if (e->v->t->status_code)
		attr_int(w, SPAN_ATTRIBUTES, "http.response.status_code", e->v->t->status_code);
}

static void watcher_attrs(struct pb_writer *w, const struct watcher *wa)
{
	char name[64], path[sizeof(wa->path)];

	watcher__name(name, sizeof(name), wa);
	attr_string(w, SPAN_ATTRIBUTES, "bindtrace.watcher", name);
	attr_string(w, SPAN_ATTRIBUTES, "http.request.method", "GET");
	snprintf(path, sizeof(path), "%.*s", (int)strcspn(wa->path, "?"), wa->path);
	if (path[0])
		attr_string(w, SPAN_ATTRIBUTES, "url.path", path);
	if (wa->user_agent[0])
		attr_string(w, SPAN_ATTRIBUTES, "user_agent.original", wa->user_agent);
	if (wa->encoding[0])
		attr_string(w, SPAN_ATTRIBUTES, "bindtrace.watch.encoding", wa->encoding);
	if (wa->event_type[0])
		attr_string(w, SPAN_ATTRIBUTES, "bindtrace.watch.event_type", wa->event_type);
}

/* The attributes every span of the bind has. */
static void pod_attrs(struct pb_writer *w, const struct bind_enc *e)
{
	const struct bind_timeline *t = e->v->t;

	attr_string(w, SPAN_ATTRIBUTES, "k8s.pod.name", t->name);
	attr_string(w, SPAN_ATTRIBUTES, "k8s.namespace.name", t->namespace_);
	if (t->uid[0])
		attr_string(w, SPAN_ATTRIBUTES, "k8s.pod.uid", t->uid);
	else
		attr_string(w, SPAN_ATTRIBUTES, "bindtrace.trace_id_from", e->key.from);
}

static void span_times(struct pb_writer *w, const struct bind_enc *e, uint64_t start_ns,
		       uint64_t end_ns)
{
	int64_t off = e->v->wall_offset_ns;

	/* A leg read negative: a zero-length span at its end (duration_ns says the value). */
	if (end_ns < start_ns)
		start_ns = end_ns;
	pb_writer__fixed64(w, SPAN_START, (uint64_t)((int64_t)start_ns + off));
	pb_writer__fixed64(w, SPAN_END, (uint64_t)((int64_t)end_ns + off));
}

static void write_root(struct pb_writer *w, const struct bind_enc *e, const struct span *s)
{
	const struct bind_timeline *t = e->v->t;

	pb_writer__begin(w, SS_SPANS);
	pb_writer__bytes(w, SPAN_TRACE_ID, e->trace_id, 16);
	pb_writer__bytes(w, SPAN_SPAN_ID, e->root_id, 8);
	pb_writer__string(w, SPAN_NAME, "bind");
	pb_writer__varint(w, SPAN_KIND, KIND_CLIENT);
	span_times(w, e, s->start_ns, s->end_ns);
	pod_attrs(w, e);
	binding_attrs(w, e);
	attr_string(w, SPAN_ATTRIBUTES, "bindtrace.leg", leg__name(LEG_TOTAL));
	if (s->complete)
		attr_int(w, SPAN_ATTRIBUTES, "bindtrace.leg.duration_ns",
			 (int64_t)(s->end_ns - s->start_ns));
	attr_bool(w, SPAN_ATTRIBUTES, "bindtrace.complete", s->complete && !t->missing);
	attr_string(w, SPAN_ATTRIBUTES, "bindtrace.result", bind_result__name(t->result));
	if (t->node[0])
		attr_string(w, SPAN_ATTRIBUTES, "bindtrace.bind.node", t->node);
	if (t->revision > 0)
		attr_int(w, SPAN_ATTRIBUTES, "bindtrace.etcd.revision", t->revision);
	if (t->missing)
		attr_int(w, SPAN_ATTRIBUTES, "bindtrace.missing_stages", t->missing);
	if (t->result != BIND_RESULT_BOUND && t->result != BIND_RESULT_UNKNOWN) {
		char msg[160], clean[160];

		snprintf(msg, sizeof(msg), "%d %s", t->status_code, t->status_reason);
		utf8_clean(clean, sizeof(clean), msg);
		pb_writer__begin(w, SPAN_STATUS);
		pb_writer__string(w, STATUS_MESSAGE, clean);
		pb_writer__varint(w, STATUS_CODE, STATUS_ERROR);
		pb_writer__end(w);
	}
	pb_writer__end(w);
}

static void write_leg(struct pb_writer *w, const struct bind_enc *e, const struct span *s)
{
	const struct bind_timeline *t = e->v->t;
	const struct bind_leg *l = s->leg;
	char watcher[16], pid[16], between[96];
	uint8_t id[8];
	const char *pieces[] = { "bindtrace/v1/span", e->key.key, leg__name(l->leg), watcher,
				 e->src->node,	      pid };

	snprintf(watcher, sizeof(watcher), "%d", l->watcher);
	snprintf(pid, sizeof(pid), "%d", (int)s->owner->pid);
	derive_id(id, sizeof(id), pieces, 6);

	pb_writer__begin(w, SS_SPANS);
	pb_writer__bytes(w, SPAN_TRACE_ID, e->trace_id, 16);
	pb_writer__bytes(w, SPAN_SPAN_ID, id, 8);
	pb_writer__bytes(w, SPAN_PARENT_SPAN_ID, e->root_id, 8);
	pb_writer__string(w, SPAN_NAME, leg__name(l->leg));
	pb_writer__varint(w, SPAN_KIND, KIND_INTERNAL);
	span_times(w, e, s->start_ns, s->end_ns);
	pod_attrs(w, e);
	if (l->watcher >= 0 && l->watcher < t->n_watchers)
		watcher_attrs(w, &t->watchers[l->watcher]);
	else if (leg_is_binding_call(t, l))
		binding_attrs(w, e);
	if (l->watcher < 0 && !leg_is_binding_call(t, l)) {
		if (leg_is_txn(t, l)) {
			attr_string(w, SPAN_ATTRIBUTES, "rpc.system", "grpc");
			attr_string(w, SPAN_ATTRIBUTES, "rpc.method", "etcdserverpb.KV/Txn");
		} else if (stage_is(t, l->to, STAGE_ETCD_WATCH_EVENT)) {
			attr_string(w, SPAN_ATTRIBUTES, "rpc.system", "grpc");
			attr_string(w, SPAN_ATTRIBUTES, "rpc.method", "etcdserverpb.Watch/Watch");
		}
	}
	attr_string(w, SPAN_ATTRIBUTES, "bindtrace.leg", leg__name(l->leg));
	attr_int(w, SPAN_ATTRIBUTES, "bindtrace.leg.duration_ns", bind_leg__ns(l));
	attr_string(w, SPAN_ATTRIBUTES, "bindtrace.leg.from", l->from_name);
	attr_string(w, SPAN_ATTRIBUTES, "bindtrace.leg.to", l->to_name);
	leg__between(between, sizeof(between), l->leg);
	attr_string(w, SPAN_ATTRIBUTES, "bindtrace.leg.between", between);
	/* A leg that begins or ends at a bound (create_request not captured) says so. */
	if (l->from && l->from->timing)
		attr_string(w, SPAN_ATTRIBUTES, "bindtrace.leg.from_timing",
			    stage_timing__name((enum stage_timing)l->from->timing));
	if (l->to && l->to->timing)
		attr_string(w, SPAN_ATTRIBUTES, "bindtrace.leg.to_timing",
			    stage_timing__name((enum stage_timing)l->to->timing));
	pb_writer__end(w);
}

static const char *service_version(const struct otlp_source *src, pid_t pid)
{
	int n = identities__count(src->identities);

	for (int i = 0; i < n; i++) {
		const struct process_identity *id = identities__at(src->identities, i);

		if (id->pid == pid && id->module_version[0])
			return id->module_version;
	}
	return NULL;
}

static void write_resource(struct pb_writer *w, const struct bind_enc *e, const struct actor *a)
{
	char instance[300];
	const char *version = a->pid ? service_version(e->src, a->pid) : NULL;

	pb_writer__begin(w, RS_RESOURCE);
	attr_string(w, RES_ATTRIBUTES, "service.name", actor__name(a));
	snprintf(instance, sizeof(instance), "%s/%d", e->src->node, (int)a->pid);
	attr_string(w, RES_ATTRIBUTES, "service.instance.id", instance);
	if (version)
		attr_string(w, RES_ATTRIBUTES, "service.version", version);
	if (a->pid)
		attr_int(w, RES_ATTRIBUTES, "process.pid", a->pid);
	attr_string(w, RES_ATTRIBUTES, "k8s.node.name", e->src->node);
	pb_writer__end(w);
}

/* The root: the total leg; when the scheduler's POST was seen but not the answer's reading,
 * from the POST to the last stage seen (bindtrace.complete false). NULL when this tracer did
 * not see the scheduler's side: another tracer sends it. */
static bool root_span(const struct bind_view *v, struct span *s)
{
	const struct bind_timeline *t = v->t;
	const struct bind_leg *total = bind_view__leg(v, LEG_TOTAL, -1);
	const struct stage *req = &t->stages[STAGE_BIND_REQUEST];

	memset(s, 0, sizeof(*s));
	if (total && total->seen) {
		s->owner = bind_leg__owner(total);
		s->start_ns = total->start_ns;
		s->end_ns = total->end_ns;
		s->complete = true;
		return true;
	}
	if (!req->seen)
		return false;
	s->owner = &req->who;
	s->start_ns = s->end_ns = req->mono_ns;
	for (int i = 0; i < v->n_legs; i++)
		if (v->legs[i].seen && v->legs[i].end_ns > s->end_ns)
			s->end_ns = v->legs[i].end_ns;
	return true;
}

int otlp__encode_bind(struct pb_writer *w, const struct bind_view *v, const struct otlp_source *src)
{
	struct span spans[1 + BIND_MAX_LEGS];
	const struct actor *owners[MAX_OWNERS];
	struct bind_enc e = { .v = v, .src = src };
	int n_spans = 0, n_owners = 0, i, o;

	if (!v->n_legs)
		return 0; /* no Binding: nothing of a bind to trace */
	if (root_span(v, &spans[0]))
		n_spans++;
	for (i = 0; i < v->n_legs; i++) {
		const struct bind_leg *l = &v->legs[i];

		if (!l->seen || l->leg == LEG_TOTAL)
			continue;
		spans[n_spans] = (struct span){ .leg = l,
						.owner = bind_leg__owner(l),
						.start_ns = l->start_ns,
						.end_ns = l->end_ns };
		n_spans++;
	}
	if (!n_spans)
		return 0;
	for (i = 0; i < n_spans; i++) {
		for (o = 0; o < n_owners; o++)
			if (same_owner(owners[o], spans[i].owner))
				break;
		if (o == n_owners && n_owners < MAX_OWNERS)
			owners[n_owners++] = spans[i].owner;
	}

	bind_key(&e.key, v->t, src);
	otlp__trace_id(e.key.key, e.trace_id);
	otlp__root_span_id(e.key.key, e.root_id);
	snprintf(e.url_path, sizeof(e.url_path), "/api/v1/namespaces/%s/pods/%s/binding",
		 v->t->namespace_, v->t->name);

	for (o = 0; o < n_owners; o++) {
		pb_writer__begin(w, REQ_RESOURCE_SPANS);
		write_resource(w, &e, owners[o]);
		pb_writer__begin(w, RS_SCOPE_SPANS);
		pb_writer__begin(w, SS_SCOPE);
		pb_writer__string(w, SCOPE_NAME, "bindtrace");
		pb_writer__string(w, SCOPE_VERSION, bindtrace__version());
		pb_writer__end(w);
		for (i = 0; i < n_spans; i++) {
			if (!same_owner(owners[o], spans[i].owner))
				continue;
			if (spans[i].leg)
				write_leg(w, &e, &spans[i]);
			else
				write_root(w, &e, &spans[i]);
		}
		pb_writer__end(w);
		pb_writer__end(w);
	}
	if (w->err)
		return w->err;
	return w->depth ? -EINVAL : n_spans;
}
