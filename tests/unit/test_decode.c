/* conn_decoder over the committed fixtures: each capture replayed as recorded, byte by byte and in
 * 7-byte pieces must give the same messages, with the expected bodies, and no secret in any. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode.h"

#define MAX_MSGS 512

struct seen {
	int n;
	struct decoded_msg *m; /* copies */
	int kinds[16];
	int binds;
	int secrets;
};

static const char *const secrets[] = {
	"eyJhbGciOiJSUzI1NiJ9",
	"c2VjcmV0LXRva2VuLXZhbHVl",
	"SUPERSECRETVALUE",
	"SECRETCOOKIE",
};

static void collect(const struct decoded_msg *m, void *ctx)
{
	struct seen *s = ctx;
	for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
		if (memmem(m, sizeof(*m), secrets[i], strlen(secrets[i])))
			s->secrets++;
	if ((unsigned)m->kind < 16)
		s->kinds[m->kind]++;
	if (m->kind == DECODED_REQUEST && m->body_kind == BODY_K8S &&
	    m->body.k8s.kind == K8S_KIND_BINDING)
		s->binds++;
	if (s->n < MAX_MSGS)
		s->m[s->n++] = *m;
}

static const char *fixture(const char *name)
{
	static char path[512];
	const char *dir = getenv("FIXTURES");
	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", name);
	return path;
}

static int replay(const char *name, size_t piece, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	s->m = calloc(MAX_MSGS, sizeof(*s->m));
	return decode__replay_file(fixture(name), piece, collect, s, NULL, NULL);
}

static const struct decoded_msg *find(const struct seen *s, enum decoded_kind kind, int nth)
{
	for (int i = 0; i < s->n; i++)
		if (s->m[i].kind == kind && nth-- == 0)
			return &s->m[i];
	return NULL;
}

static void check_bind_h2(const struct seen *s)
{
	const struct decoded_msg *m = find(s, DECODED_REQUEST, 1);
	CHECK(m != NULL, "bind request");
	if (!m)
		return;
	CHECK_STR(m->http.method, "POST");
	CHECK_STR(m->http.path, "/api/v1/namespaces/default/pods/web-0/binding");
	CHECK_STR(m->http.content_type, "application/vnd.kubernetes.protobuf");
	CHECK(strstr(m->http.user_agent, "/scheduler") != NULL, "ua %s", m->http.user_agent);
	CHECK_INT(m->stream_id, 3);
	CHECK(m->from_client && m->client_known && !m->unreliable && !m->incomplete, "flags");
	CHECK_INT(m->body_kind, BODY_K8S);
	CHECK_INT(m->body.k8s.kind, K8S_KIND_BINDING);
	CHECK_STR(m->body.k8s.meta.namespace, "default");
	CHECK_STR(m->body.k8s.meta.name, "web-0");
	CHECK_STR(m->body.k8s.meta.uid, "7c9e6679-7425-40de-944b-e07fc1f90000");
	CHECK_STR(m->body.k8s.binding.target_kind, "Node");
	CHECK_STR(m->body.k8s.binding.target_name, "node-1");
	CHECK(m->ts_first_ns && m->ts_last_ns >= m->ts_first_ns, "ts");
	m = find(s, DECODED_RESPONSE, 1);
	CHECK(m && m->http.status == 201 && m->stream_id == 3, "201 on stream 3");
	if (m) {
		CHECK_INT(m->body.k8s.kind, K8S_KIND_STATUS);
		CHECK_INT(m->body.k8s.status.code, 201);
		CHECK_STR(m->http.path, "/api/v1/namespaces/default/pods/web-0/binding");
		CHECK(!m->from_client, "response from server");
	}
	m = find(s, DECODED_WATCH_EVENT, 1);
	CHECK(m != NULL, "watch event");
	if (m) {
		CHECK_STR(m->body.watch.type, "MODIFIED");
		CHECK_INT(m->body.watch.object.kind, K8S_KIND_POD);
		CHECK_STR(m->body.watch.object.pod.node_name, "node-1");
		CHECK_STR(m->body.watch.object.meta.resource_version, "1001");
		CHECK_STR(m->body.watch.object.pod.scheduled_status, "True");
	}
	m = find(s, DECODED_WATCH_EVENT, 0);
	if (m) {
		CHECK_STR(m->body.watch.object.pod.scheduled_status, "False");
		CHECK_STR(m->body.watch.object.pod.scheduled_reason, "Unschedulable");
		CHECK_STR(m->body.watch.object.pod.node_name, "");
	}
	m = find(s, DECODED_STREAM_RESET, 0);
	CHECK(m && m->error_code == 7, "RST_STREAM REFUSED_STREAM");
}

static void check_etcd(const struct seen *s)
{
	const struct decoded_msg *m = find(s, DECODED_GRPC_REQUEST, 1);
	CHECK(m && m->body_kind == BODY_ETCD_TXN, "txn");
	if (m) {
		CHECK_STR(m->http.path, "/etcdserverpb.KV/Txn");
		CHECK_STR(m->body.txn.compare_key, "/registry/pods/default/web-0");
		CHECK_INT(m->body.txn.compare_target, ETCD_TARGET_MOD);
		CHECK_INT(m->body.txn.compare_revision, 1000);
		CHECK(m->body.txn.has_put && m->body.txn.has_else_get, "put/else");
		CHECK_STR(m->body.txn.put.key, "/registry/pods/default/web-0");
		CHECK_INT(m->body.txn.put.value.kind, K8S_KIND_POD);
		CHECK_STR(m->body.txn.put.value.pod.node_name, "node-1");
		CHECK_STR(m->body.txn.else_get_key, "/registry/pods/default/web-0");
	}
	const struct decoded_msg *r = NULL;
	for (int i = 0; i < s->n; i++)
		if (s->m[i].body_kind == BODY_ETCD_TXN_RESPONSE) {
			r = &s->m[i];
			break;
		}
	CHECK(r != NULL, "txn response");
	if (r) {
		CHECK_INT(r->body.txn_response.header.revision, 1001);
		CHECK(r->body.txn_response.succeeded, "succeeded");
		CHECK_INT(r->http.grpc_status, 0);
	}
	m = find(s, DECODED_ETCD_WATCH_EVENT, 0);
	CHECK(m != NULL, "etcd watch event");
	if (m) {
		const struct etcd_watch_event *e = &m->body.etcd_watch.event;
		CHECK_STR(e->kv.key, "/registry/pods/default/web-0");
		CHECK_INT(e->kv.mod_revision, 1001);
		CHECK_INT(e->prev_mod_revision, 1000);
		CHECK_INT(e->kv.value.kind, K8S_KIND_POD);
		CHECK_STR(e->kv.value.pod.node_name, "node-1");
		CHECK_STR(e->kv.value.meta.uid, "7c9e6679-7425-40de-944b-e07fc1f90000");
	}
	m = find(s, DECODED_GRPC_REQUEST, 0);
	CHECK(m && m->body_kind == BODY_ETCD_WATCH_REQUEST &&
		  m->body.watch_request.kind == ETCD_WATCH_CREATE &&
		  !strcmp(m->body.watch_request.key, "/registry/pods/"),
	      "watch create");
	int secret_txn = 0;
	for (int i = 0; i < s->n; i++)
		if (s->m[i].body_kind == BODY_ETCD_TXN &&
		    strstr(s->m[i].body.txn.put.key, "/registry/secrets/")) {
			secret_txn++;
			CHECK(s->m[i].body.txn.put.value_redacted, "secret value redacted");
		}
	CHECK_INT(secret_txn, 1);
}

static void check_gap(const struct seen *s)
{
	int after = 0, events = 0;
	for (int i = 0; i < s->n; i++) {
		if (s->m[i].unreliable)
			after++;
		if (s->m[i].kind == DECODED_ETCD_WATCH_EVENT)
			events++;
	}
	CHECK(after > 0, "messages after the gap are marked unreliable");
	CHECK_INT(events, 3); /* web-0 before, web-1 lost in the gap, web-2 and web-3 after */
	const struct decoded_msg *m = find(s, DECODED_ETCD_WATCH_EVENT, 2);
	CHECK(m && m->unreliable &&
		  !strcmp(m->body.etcd_watch.event.kv.key, "/registry/pods/default/web-3"),
	      "resynced after the gap");
}

static void check_watch_json(const struct seen *s)
{
	const struct decoded_msg *m = find(s, DECODED_WATCH_EVENT, 1);
	CHECK(m && m->body.watch.object.kind == K8S_KIND_POD &&
		  m->body.watch.object.encoding == K8S_ENCODING_JSON &&
		  !strcmp(m->body.watch.object.pod.node_name, "node-1"),
	      "json watch event");
}

static void check_table(const struct seen *s)
{
	const struct decoded_msg *m = find(s, DECODED_WATCH_EVENT, 1);
	CHECK(m && m->body.watch.object.kind == K8S_KIND_TABLE_ROW, "table row");
	if (m) {
		CHECK_STR(m->body.watch.object.row.node_name, "node-1");
		CHECK_STR(m->body.watch.object.meta.uid, "7c9e6679-7425-40de-944b-e07fc1f90000");
		CHECK_STR(m->body.watch.object.meta.name, "web-0");
	}
	m = find(s, DECODED_WATCH_EVENT, 0);
	CHECK(m && !strcmp(m->body.watch.object.row.node_name, "<none>"), "unscheduled row");
}

static void check_http1(const struct seen *s)
{
	const struct decoded_msg *m = find(s, DECODED_REQUEST, 0);
	CHECK(m && m->proto == CONN_PROTO_HTTP1 && m->body.k8s.kind == K8S_KIND_BINDING &&
		  !strcmp(m->body.k8s.binding.target_name, "node-2"),
	      "http/1.1 bind");
	m = find(s, DECODED_RESPONSE, 0);
	CHECK(m && m->http.status == 201 && m->body.k8s.status.code == 201, "http/1.1 201");
	m = find(s, DECODED_WATCH_EVENT, 1);
	CHECK(m && !strcmp(m->body.watch.object.pod.node_name, "node-2"), "chunked watch");
}

static void check_midstream(const struct seen *s)
{
	int bind_responses = 0;
	for (int i = 0; i < s->n; i++) {
		CHECK(s->m[i].unreliable, "mid-connection messages are unreliable");
		if (s->m[i].kind == DECODED_RESPONSE && s->m[i].body_kind == BODY_K8S &&
		    s->m[i].body.k8s.status.code == 201)
			bind_responses++;
	}
	CHECK(bind_responses >= 3, "responses found after resync: %d", bind_responses);
	CHECK(s->binds >= 1, "a bind request decoded despite unknown HPACK entries");
	CHECK(s->kinds[DECODED_WATCH_EVENT] >= 6, "watch events: %d",
	      s->kinds[DECODED_WATCH_EVENT]);
}

static void count_msg(const struct decoded_msg *m, void *ctx)
{
	(void)m;
	(*(int *)ctx)++;
}

/* A body that is not a Kubernetes object (a /metrics scrape's text) is not a decode error; a
 * JSON object cut short is. The tracer's exit counts the errors as messages lost. */
static void check_not_an_object(void)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"
				  "GET /api/v1/namespaces/d/pods/p HTTP/1.1\r\nHost: a\r\n\r\n";
	static const char metrics[] = "# HELP up 1\n# TYPE up gauge\nup 1\n";
	static const char broken[] = "{\"kind\":\"Pod\",\"metadata\":{\"name\":";
	char resp[512];
	int n = 0, msgs = 0;
	struct conn_decoder_stats st;
	struct conn_decoder *d = conn_decoder__new(count_msg, &msgs);

	n +=
	    snprintf(resp + n, sizeof(resp) - n,
		     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n%s",
		     strlen(metrics), metrics);
	n += snprintf(resp + n, sizeof(resp) - n,
		      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
		      "%zu\r\n\r\n%s",
		      strlen(broken), broken);
	CHECK(d != NULL, "not an object: decoder");
	if (!d)
		return;
	conn_decoder__set_client_dir(d, CONN_DIR_OUT);
	conn_decoder__feed(d, CONN_DIR_OUT, 0, req, strlen(req), 1000);
	conn_decoder__feed(d, CONN_DIR_IN, 0, resp, (size_t)n, 2000);
	conn_decoder__stats(d, &st);
	CHECK(msgs == 4, "not an object: 4 messages, got %d", msgs);
	CHECK(st.decode_errors == 1, "not an object: only the cut JSON is an error, got %llu",
	      (unsigned long long)st.decode_errors);
	conn_decoder__free(d);
}

static const struct {
	const char *name;
	int messages;
	int binds;
	void (*check)(const struct seen *s);
} cases[] = {
	{ "bind_h2.jsonl", 16, 4, check_bind_h2 },
	{ "bind_h2_split.jsonl", 16, 4, check_bind_h2 },
	{ "etcd_txn.jsonl", 15, 0, check_etcd },
	{ "etcd_gap.jsonl", 17, 0, check_gap },
	{ "watch_json.jsonl", 8, 0, check_watch_json },
	{ "watch_table.jsonl", 8, 0, check_table },
	{ "bind_http1.jsonl", 6, 1, check_http1 },
	{ "bind_h2_midstream.jsonl", 15, 2, check_midstream },
	{ "many_binds.jsonl", -1, 51, NULL },
};

int main(void)
{
	static const size_t pieces[] = { 0, 1, 7 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct seen whole;
		CHECK_INT(replay(cases[i].name, 0, &whole), 0);
		if (cases[i].messages >= 0)
			CHECK(whole.n == cases[i].messages, "%s: %d messages, want %d",
			      cases[i].name, whole.n, cases[i].messages);
		CHECK(whole.binds == cases[i].binds, "%s: %d binds, want %d", cases[i].name,
		      whole.binds, cases[i].binds);
		CHECK(whole.secrets == 0, "%s: %d messages carry a secret", cases[i].name,
		      whole.secrets);
		for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
			struct seen s;
			if (pieces[p] == 1 && !strcmp(cases[i].name, "many_binds.jsonl"))
				continue; /* slow under ASan; the small ones cover it */
			CHECK_INT(replay(cases[i].name, pieces[p], &s), 0);
			if (cases[i].check)
				cases[i].check(&s);
			/* Same messages whatever the cutting. */
			CHECK(s.n == whole.n, "%s piece %zu: %d vs %d messages", cases[i].name,
			      pieces[p], s.n, whole.n);
			for (int k = 0; k < s.n && k < whole.n; k++) {
				struct decoded_msg a = s.m[k], b = whole.m[k];
				/* Cutting moves when a message's last byte arrives, nothing else. */
				CHECK(a.kind == b.kind && a.body_kind == b.body_kind &&
					  a.stream_id == b.stream_id &&
					  a.ts_first_ns == b.ts_first_ns &&
					  !memcmp(&a.http, &b.http, sizeof(a.http)),
				      "%s piece %zu: message %d differs", cases[i].name, pieces[p],
				      k);
			}
			free(s.m);
		}
		free(whole.m);
	}
	check_not_an_object();
	return check_summary("decode");
}
