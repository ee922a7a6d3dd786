/* The file outputs (--perfetto, --evidence, --report) over hand-built binds — complete, missing
 * stages, watchers, unschedulable, a 409 after the bind — fed the data events, decoded messages
 * and fsyncs behind them, plus the committed fixtures through the real decoder and correlator.
 * Checks: the trace parses with its slices, instants and flows bound inside their slices; the
 * evidence has its files with modes 0600/0700, parses, and holds no planted secret; the report
 * cites the line and each leg; the SVG is well-formed with a bar per leg; unwritable paths fail
 * cleanly. With BINDTRACE_TEST_REPORT=FILE the complete bind's report is left at FILE (and
 * FILE.svg) for tests/probe/test-outputs to render; BINDTRACE_TEST_KEEP=1 keeps all files. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "correlate.h"
#include "decode.h"
#include "goelf.h"
#include "identity.h"
#include "report.h"
#include "sha256.h"
#include "slurp.h"
#include "trace_outputs.h"
#include "util.h"

#define B 5000000000000ull /* the complete bind's bind_request, ns */
#define US 1000ull

static const char planted[] = "PLANTED-SECRET-TOKEN-6f1c";
/* The fixtures' own secrets (tests/fixtures/bind_http1.jsonl and others). */
static const char *const fixture_secrets[] = {
	"eyJhbGciOiJSUzI1NiJ9",
	"c2VjcmV0LXRva2VuLXZhbHVl",
	"SUPERSECRETVALUE",
	"SECRETCOOKIE",
};

static char tmp[] = "/tmp/test_outputs.XXXXXX";

static char *path_in(const char *name)
{
	static char buf[8][1024];
	static int next;
	char *p = buf[next++ % 8];

	snprintf(p, sizeof(buf[0]), "%s/%s", tmp, name);
	return p;
}

static int mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (int)(st.st_mode & 07777);
}

/* stderr to a file for the length of a call, to check the one-line errors. */
static int stderr_saved = -1;

static void stderr_to(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	fflush(stderr);
	stderr_saved = dup(2);
	dup2(fd, 2);
	close(fd);
}

static void stderr_back(void)
{
	fflush(stderr);
	dup2(stderr_saved, 2);
	close(stderr_saved);
}

/* ---- The hand-built binds ---- */

static struct actor actor(pid_t pid, const char *comm, enum process_role role, uint64_t conn,
			  const char *laddr, const char *raddr)
{
	struct actor a = { .pid = pid, .role = role, .conn = conn };

	snprintf(a.comm, sizeof(a.comm), "%s", comm);
	CHECK(endpoint__parse(laddr, &a.local) == 0, "local address %s", laddr);
	CHECK(endpoint__parse(raddr, &a.remote) == 0, "remote address %s", raddr);
	return a;
}

static struct actor sched_conn, api_in, api_etcd, etcd_in, api_watch, etcd_fs, api_w1, api_w2,
    w2_conn;

static void actors_init(void)
{
	sched_conn =
	    actor(812, "kube-scheduler", ROLE_SCHEDULER, 1001, "127.0.0.1:50000", "127.0.0.1:6443");
	api_in =
	    actor(640, "kube-apiserver", ROLE_APISERVER, 2001, "127.0.0.1:6443", "127.0.0.1:50000");
	api_etcd =
	    actor(640, "kube-apiserver", ROLE_APISERVER, 2002, "127.0.0.1:51000", "127.0.0.1:2379");
	etcd_in = actor(590, "etcd", ROLE_ETCD, 3001, "127.0.0.1:2379", "127.0.0.1:51000");
	api_watch =
	    actor(640, "kube-apiserver", ROLE_APISERVER, 2003, "127.0.0.1:51002", "127.0.0.1:2379");
	etcd_fs = actor(590, "etcd", ROLE_ETCD, 0, "", "");
	api_w1 =
	    actor(640, "kube-apiserver", ROLE_APISERVER, 2101, "127.0.0.1:6443", "127.0.0.1:45000");
	api_w2 =
	    actor(640, "kube-apiserver", ROLE_APISERVER, 2102, "127.0.0.1:6443", "127.0.0.1:46000");
	w2_conn = actor(7000, "watcher-x", ROLE_WATCHER, 4001, "127.0.0.1:46000", "127.0.0.1:6443");
	/* kubectl's end of its watch, found on this host but not traced. */
	api_w1.peer_pid = 5100;
	snprintf(api_w1.peer_comm, sizeof(api_w1.peer_comm), "kubectl");
}

static void set_stage(struct stage *st, const struct actor *who, uint64_t first, uint64_t last,
		      bool sender, uint32_t stream)
{
	st->seen = true;
	st->first_ns = first;
	st->last_ns = last;
	st->mono_ns = sender ? first : last;
	st->who = *who;
	st->stream_id = stream;
}

static void miss(struct stage *st, const char *why)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->missing, sizeof(st->missing), "%s", why);
}

static void cite(struct citation *ci)
{
	static const struct frame_line frames[] = {
		{ 0x1a2b3c, "k8s.io/client-go/kubernetes/typed/core/v1.(*pods).Bind",
		  "k8s.io/client-go/kubernetes/typed/core/v1/pod.go", 60 },
		{ 0x2a2b3c,
		  "k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder."
		  "(*DefaultBinder).Bind",
		  "k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder/default_binder.go",
		  56 },
		{ 0x3a2b3c, "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).bind",
		  "k8s.io/kubernetes/pkg/scheduler/schedule_one.go", 1040 },
	};

	ci->known = true;
	snprintf(ci->kubernetes_version, sizeof(ci->kubernetes_version), "v1.33.13");
	snprintf(ci->go_version, sizeof(ci->go_version), "go1.26.8");
	snprintf(ci->probe, sizeof(ci->probe), "%s", frames[0].func);
	ci->tid = 815;
	ci->mono_ns = B - 5 * US;
	ci->n_frames = 3;
	memcpy(ci->frames, frames, sizeof(frames));
	ci->cited = 1;
}

/* These pods were created before the tracer attached: their create stages say so. */
static void created_before_attach(struct bind_timeline *t)
{
	t->created_before_attach = true;
	for (int s = 0; s < STAGE_BIND_REQUEST; s++)
		miss(&t->stages[s], "the pod was created before bindtrace attached");
}

static void complete_bind(struct bind_timeline *t)
{
	struct stage *s = t->stages;

	memset(t, 0, sizeof(*t));
	t->seq = 1;
	t->result = BIND_RESULT_BOUND;
	snprintf(t->namespace_, sizeof(t->namespace_), "default");
	snprintf(t->name, sizeof(t->name), "web-0");
	snprintf(t->uid, sizeof(t->uid), "7c9e6679-7425-40de-944b-e07fc1f90000");
	snprintf(t->node, sizeof(t->node), "node-1");
	t->status_code = 201;
	t->revision = 1234;
	t->node_before_known = true;
	set_stage(&s[STAGE_BIND_REQUEST], &sched_conn, B, B + 20 * US, true, 3);
	set_stage(&s[STAGE_APISERVER_RECEIVED], &api_in, B + 100 * US, B + 412 * US, false, 3);
	set_stage(&s[STAGE_ETCD_TXN_SENT], &api_etcd, B + 515 * US, B + 530 * US, true, 7);
	set_stage(&s[STAGE_ETCD_TXN_RECEIVED], &etcd_in, B + 600 * US, B + 725 * US, false, 7);
	set_stage(&s[STAGE_ETCD_WAL_FSYNC], &etcd_fs, B + 900 * US, B + 2100 * US, true, 0);
	set_stage(&s[STAGE_ETCD_TXN_RESPONSE], &etcd_in, B + 2525 * US, B + 2540 * US, true, 7);
	set_stage(&s[STAGE_ETCD_WATCH_EVENT], &api_watch, B + 2700 * US, B + 2810 * US, false, 1);
	set_stage(&s[STAGE_BIND_RESPONSE], &api_in, B + 3000 * US, B + 3010 * US, true, 3);
	set_stage(&s[STAGE_BIND_RESPONSE_RECEIVED], &sched_conn, B + 3100 * US, B + 3213 * US,
		  false, 3);
	t->n_txns = 1;
	t->txns[0] = (struct txn_attempt){ .sent_ns = B + 515 * US,
					   .response_ns = B + 2525 * US,
					   .compare_revision = 1200,
					   .revision = 1234,
					   .responded = true,
					   .succeeded = true };
	t->n_watchers = 2;
	set_stage(&t->watchers[0].sent, &api_w1, B + 3050 * US, B + 3060 * US, true, 5);
	miss(&t->watchers[0].received, "the watcher is not traced");
	snprintf(t->watchers[0].user_agent, sizeof(t->watchers[0].user_agent),
		 "kubectl/v1.33.13 (linux/amd64) kubernetes/abcdef0");
	snprintf(t->watchers[0].encoding, sizeof(t->watchers[0].encoding), "table");
	set_stage(&t->watchers[1].sent, &api_w2, B + 3070 * US, B + 3080 * US, true, 9);
	set_stage(&t->watchers[1].received, &w2_conn, B + 3300 * US, B + 3400 * US, false, 9);
	snprintf(t->watchers[1].user_agent, sizeof(t->watchers[1].user_agent),
		 "<w&x>/1.0 (linux) `|`");
	snprintf(t->watchers[1].encoding, sizeof(t->watchers[1].encoding), "protobuf");
	for (int w = 0; w < 2; w++) {
		snprintf(t->watchers[w].event_type, sizeof(t->watchers[w].event_type), "MODIFIED");
		snprintf(t->watchers[w].node_after, sizeof(t->watchers[w].node_after), "node-1");
		t->watchers[w].before_known = true;
	}
	cite(&t->citation);
	created_before_attach(t);
	t->opened_ns = B;
}

static void missing_bind(struct bind_timeline *t)
{
	struct stage *s = t->stages;
	uint64_t b = B + 50000 * US;

	memset(t, 0, sizeof(*t));
	t->seq = 2;
	t->result = BIND_RESULT_BOUND;
	snprintf(t->namespace_, sizeof(t->namespace_), "default");
	snprintf(t->name, sizeof(t->name), "web-1");
	snprintf(t->node, sizeof(t->node), "node-2");
	t->status_code = 201;
	set_stage(&s[STAGE_BIND_REQUEST], &sched_conn, b, b + 10 * US, true, 5);
	set_stage(&s[STAGE_APISERVER_RECEIVED], &api_in, b + 90 * US, b + 300 * US, false, 5);
	for (int i = STAGE_ETCD_TXN_SENT; i <= STAGE_ETCD_WATCH_EVENT; i++)
		miss(&s[i], "etcd is not traced");
	miss(&s[STAGE_ETCD_TXN_SENT], "bytes lost on a connection of this bind (capture gap)");
	set_stage(&s[STAGE_BIND_RESPONSE], &api_in, b + 2000 * US, b + 2010 * US, true, 5);
	set_stage(&s[STAGE_BIND_RESPONSE_RECEIVED], &sched_conn, b + 2100 * US, b + 2150 * US,
		  false, 5);
	t->missing = 5;
	t->gap = true;
	created_before_attach(t);
	t->opened_ns = b;
}

static void unschedulable_bind(struct bind_timeline *t)
{
	uint64_t b = B + 80000 * US;

	memset(t, 0, sizeof(*t));
	t->seq = 3;
	t->result = BIND_RESULT_UNSCHEDULABLE;
	snprintf(t->namespace_, sizeof(t->namespace_), "default");
	snprintf(t->name, sizeof(t->name), "pending");
	snprintf(t->status_reason, sizeof(t->status_reason),
		 "Unschedulable: 0/2 nodes are available");
	set_stage(&t->stages[STAGE_BIND_REQUEST], &sched_conn, b, b + 10 * US, true, 7);
	for (int i = STAGE_BIND_REQUEST + 1; i < STAGE_MAX; i++)
		miss(&t->stages[i], "no Binding: the pod fits no node");
	created_before_attach(t);
	t->opened_ns = b;
}

static void conflict_bind(struct bind_timeline *t)
{
	uint64_t b = B + 90000 * US;

	missing_bind(t);
	t->seq = 4;
	t->result = BIND_RESULT_CONFLICT;
	t->status_code = 409;
	snprintf(t->name, sizeof(t->name), "web-0");
	t->node[0] = '\0';
	t->gap = false;
	t->missing = 0;
	for (int i = STAGE_ETCD_TXN_SENT; i <= STAGE_ETCD_WATCH_EVENT; i++)
		miss(&t->stages[i], "no etcd write: 409 Conflict");
	t->stages[STAGE_BIND_REQUEST].mono_ns = b;
	t->stages[STAGE_BIND_REQUEST].first_ns = b;
}

static void shift_stage(struct stage *st, uint64_t delta, uint32_t from, uint32_t to)
{
	if (!st->seen)
		return;
	st->mono_ns += delta;
	st->first_ns += delta;
	st->last_ns += delta;
	if (st->stream_id == from)
		st->stream_id = to;
}

/* The complete bind as the i-th of a burst: its own pod, streams and time, i * 50 us apart. */
static void many_bind(struct bind_timeline *t, int i)
{
	uint64_t delta = 1000000 * US + (uint64_t)i * 50 * US;
	uint32_t bind_stream = 101 + 2 * (uint32_t)i, txn_stream = 1001 + 2 * (uint32_t)i;
	int s, w;

	complete_bind(t);
	t->seq = 100 + (uint64_t)i;
	snprintf(t->name, sizeof(t->name), "many-%d", i);
	for (s = 0; s < STAGE_MAX; s++)
		shift_stage(&t->stages[s], delta, s == STAGE_ETCD_WATCH_EVENT ? 0 : 3, bind_stream);
	for (s = STAGE_ETCD_TXN_SENT; s <= STAGE_ETCD_TXN_RESPONSE; s++)
		if (t->stages[s].stream_id == 7)
			t->stages[s].stream_id = txn_stream;
	for (w = 0; w < t->n_watchers; w++) {
		shift_stage(&t->watchers[w].sent, delta, 0, 0);
		shift_stage(&t->watchers[w].received, delta, 0, 0);
	}
	t->txns[0].sent_ns += delta;
	t->txns[0].response_ns += delta;
	t->opened_ns += delta;
}

/* ---- What the tracer saw behind the complete bind ---- */

static uint64_t offsets[16][2];

static void feed_data(struct trace_outputs *o, const struct actor *who, int dir, uint64_t ts,
		      const char *text)
{
	size_t len = strlen(text);
	struct data_event *e = calloc(1, sizeof(*e) + len);
	uint64_t *off = &offsets[who->conn % 16][dir];

	e->hdr.type = EVENT_DATA;
	e->hdr.pid = (__u32)who->pid;
	e->hdr.tid = (__u32)who->pid + 3;
	e->hdr.ts_ns = ts;
	memcpy(e->hdr.comm, who->comm, sizeof(e->hdr.comm) - 1);
	e->conn = who->conn;
	e->offset = *off;
	e->len = (__u32)len;
	e->fd = 9;
	e->dir = (__u8)dir;
	e->source = SOURCE_TLS;
	memcpy(e->data, text, len);
	*off += len;
	trace_outputs__data(o, who, e);
	free(e);
}

static struct decoded_msg *msg_new(enum decoded_kind kind, int dir, uint32_t stream, uint64_t first,
				   uint64_t last)
{
	struct decoded_msg *m = calloc(1, sizeof(*m));

	m->kind = kind;
	m->proto = CONN_PROTO_H2;
	m->dir = (enum conn_dir)dir;
	m->stream_id = stream;
	m->ts_first_ns = first;
	m->ts_last_ns = last;
	m->http.grpc_status = -1;
	return m;
}

static void pod(struct k8s_object *o, const char *name, const char *node, const char *rv)
{
	o->kind = K8S_KIND_POD;
	o->encoding = K8S_ENCODING_PROTOBUF;
	snprintf(o->kind_name, sizeof(o->kind_name), "Pod");
	snprintf(o->meta.namespace, sizeof(o->meta.namespace), "default");
	snprintf(o->meta.name, sizeof(o->meta.name), "%s", name);
	snprintf(o->meta.resource_version, sizeof(o->meta.resource_version), "%s", rv);
	snprintf(o->pod.node_name, sizeof(o->pod.node_name), "%s", node);
}

/* A message, carried by one data event at its first and one at its last time, each with the
 * planted token in its raw bytes (as a captured Authorization header would be). */
static void feed_msg(struct trace_outputs *o, const struct actor *who, struct decoded_msg *m)
{
	char raw[256];

	snprintf(raw, sizeof(raw), "raw frame bytes Authorization: Bearer %s", planted);
	feed_data(o, who, m->dir, m->ts_first_ns, raw);
	if (m->ts_last_ns != m->ts_first_ns)
		feed_data(o, who, m->dir, m->ts_last_ns, raw);
	trace_outputs__message(o, who, m);
	free(m);
}

static void feed_fsync(struct trace_outputs *o, uint64_t start, uint64_t end, const char *path)
{
	struct fsync_event e = { .start_ns = start, .fd = 12, .datasync = 1 };

	e.hdr.type = EVENT_FSYNC;
	e.hdr.pid = 590;
	e.hdr.tid = 601;
	e.hdr.ts_ns = end;
	trace_outputs__fsync(o, &etcd_fs, &e, path);
}

static void feed_complete(struct trace_outputs *o, const struct bind_timeline *t)
{
	const struct stage *s = t->stages;
	struct decoded_msg *m;

	m = msg_new(DECODED_REQUEST, CONN_DIR_OUT, s[STAGE_BIND_REQUEST].stream_id,
		    s[STAGE_BIND_REQUEST].first_ns, s[STAGE_BIND_REQUEST].last_ns);
	snprintf(m->http.method, sizeof(m->http.method), "POST");
	snprintf(m->http.path, sizeof(m->http.path), "/api/v1/namespaces/default/pods/%s/binding",
		 t->name);
	snprintf(m->http.user_agent, sizeof(m->http.user_agent), "kube-scheduler/v1.33.13");
	m->body_kind = BODY_K8S;
	m->body.k8s.kind = K8S_KIND_BINDING;
	snprintf(m->body.k8s.meta.namespace, sizeof(m->body.k8s.meta.namespace), "default");
	snprintf(m->body.k8s.meta.name, sizeof(m->body.k8s.meta.name), "%s", t->name);
	snprintf(m->body.k8s.binding.target_kind, sizeof(m->body.k8s.binding.target_kind), "Node");
	snprintf(m->body.k8s.binding.target_name, sizeof(m->body.k8s.binding.target_name),
		 "node-1");
	struct decoded_msg copy = *m;
	feed_msg(o, &sched_conn, m);
	m = malloc(sizeof(*m));
	*m = copy;
	m->dir = CONN_DIR_IN;
	m->ts_first_ns = s[STAGE_BIND_REQUEST + 1].first_ns;
	m->ts_last_ns = s[STAGE_BIND_REQUEST + 1].last_ns;
	feed_msg(o, &api_in, m);

	m = msg_new(DECODED_GRPC_REQUEST, CONN_DIR_OUT, s[STAGE_BIND_REQUEST + 2].stream_id,
		    s[STAGE_BIND_REQUEST + 2].first_ns, s[STAGE_BIND_REQUEST + 2].last_ns);
	snprintf(m->http.path, sizeof(m->http.path), "/etcdserverpb.KV/Txn");
	m->body_kind = BODY_ETCD_TXN;
	snprintf(m->body.txn.compare_key, sizeof(m->body.txn.compare_key),
		 "/registry/pods/default/%s", t->name);
	m->body.txn.compare_target = ETCD_TARGET_MOD;
	m->body.txn.compare_revision = 1200;
	m->body.txn.has_put = true;
	snprintf(m->body.txn.put.key, sizeof(m->body.txn.put.key), "/registry/pods/default/%s",
		 t->name);
	pod(&m->body.txn.put.value, t->name, "node-1", "");
	copy = *m;
	feed_msg(o, &api_etcd, m);
	m = malloc(sizeof(*m));
	*m = copy;
	m->dir = CONN_DIR_IN;
	m->ts_first_ns = s[STAGE_BIND_REQUEST + 3].first_ns;
	m->ts_last_ns = s[STAGE_BIND_REQUEST + 3].last_ns;
	feed_msg(o, &etcd_in, m);

	feed_fsync(o, s[STAGE_BIND_REQUEST].first_ns + 650 * US,
		   s[STAGE_BIND_REQUEST].first_ns + 700 * US,
		   "/var/lib/etcd/member/wal/0.tmp"); /* before the commit */
	feed_fsync(o, s[STAGE_BIND_REQUEST + 4].first_ns, s[STAGE_BIND_REQUEST + 4].last_ns,
		   "/var/lib/etcd/member/wal/0000-0001.wal");
	feed_fsync(o, s[STAGE_BIND_REQUEST].first_ns + 2200 * US,
		   s[STAGE_BIND_REQUEST].first_ns + 2300 * US, "/var/lib/etcd/member/snap/db");
	feed_fsync(o, s[STAGE_BIND_REQUEST].first_ns + 40000 * US,
		   s[STAGE_BIND_REQUEST].first_ns + 40100 * US,
		   "/var/lib/etcd/member/wal/0000-0001.wal");

	m = msg_new(DECODED_GRPC_RESPONSE, CONN_DIR_OUT, s[STAGE_BIND_REQUEST + 5].stream_id,
		    s[STAGE_BIND_REQUEST + 5].first_ns, s[STAGE_BIND_REQUEST + 5].last_ns);
	m->http.grpc_status = 0;
	m->body_kind = BODY_ETCD_TXN_RESPONSE;
	m->body.txn_response.header.revision = 1234;
	m->body.txn_response.succeeded = true;
	feed_msg(o, &etcd_in, m);

	/* Two events in one etcd WatchResponse: this pod's and another's. */
	m = msg_new(DECODED_ETCD_WATCH_EVENT, CONN_DIR_IN, s[STAGE_BIND_REQUEST + 6].stream_id,
		    s[STAGE_BIND_REQUEST + 6].first_ns, s[STAGE_BIND_REQUEST + 6].last_ns);
	m->body_kind = BODY_ETCD_WATCH_EVENT;
	m->body.etcd_watch.response.header.revision = 1234;
	snprintf(m->body.etcd_watch.event.kv.key, sizeof(m->body.etcd_watch.event.kv.key),
		 "/registry/pods/default/other-pod");
	trace_outputs__message(o, &api_watch, m);
	snprintf(m->body.etcd_watch.event.kv.key, sizeof(m->body.etcd_watch.event.kv.key),
		 "/registry/pods/default/%s", t->name);
	m->body.etcd_watch.event.kv.mod_revision = 1234;
	m->body.etcd_watch.event.has_prev_kv = true;
	feed_msg(o, &api_watch, m);

	m = msg_new(DECODED_RESPONSE, CONN_DIR_OUT, s[STAGE_BIND_REQUEST + 7].stream_id,
		    s[STAGE_BIND_REQUEST + 7].first_ns, s[STAGE_BIND_REQUEST + 7].last_ns);
	m->http.status = 201;
	m->body_kind = BODY_K8S;
	m->body.k8s.kind = K8S_KIND_STATUS;
	m->body.k8s.status.code = 201;
	snprintf(m->body.k8s.status.status, sizeof(m->body.k8s.status.status), "Success");
	copy = *m;
	feed_msg(o, &api_in, m);
	m = malloc(sizeof(*m));
	*m = copy;
	m->dir = CONN_DIR_IN;
	m->ts_first_ns = s[STAGE_BIND_REQUEST + 8].first_ns;
	m->ts_last_ns = s[STAGE_BIND_REQUEST + 8].last_ns;
	feed_msg(o, &sched_conn, m);

	m = msg_new(DECODED_WATCH_EVENT, CONN_DIR_OUT, t->watchers[0].sent.stream_id,
		    t->watchers[0].sent.first_ns, t->watchers[0].sent.last_ns);
	m->body_kind = BODY_K8S_WATCH_EVENT;
	snprintf(m->body.watch.type, sizeof(m->body.watch.type), "MODIFIED");
	pod(&m->body.watch.object, t->name, "node-1", "1234");
	feed_msg(o, &api_w1, m);
	m = msg_new(DECODED_WATCH_EVENT, CONN_DIR_OUT, t->watchers[1].sent.stream_id,
		    t->watchers[1].sent.first_ns, t->watchers[1].sent.last_ns);
	m->body_kind = BODY_K8S_WATCH_EVENT;
	snprintf(m->body.watch.type, sizeof(m->body.watch.type), "MODIFIED");
	pod(&m->body.watch.object, t->name, "node-1", "1234");
	copy = *m;
	feed_msg(o, &api_w2, m);
	m = malloc(sizeof(*m));
	*m = copy;
	m->dir = CONN_DIR_IN;
	m->ts_first_ns = t->watchers[1].received.first_ns;
	m->ts_last_ns = t->watchers[1].received.last_ns;
	feed_msg(o, &w2_conn, m);
	/* A Secret on the scheduler's connection, in the bind's window. */
	m = msg_new(DECODED_RESPONSE, CONN_DIR_IN, s[STAGE_BIND_REQUEST + 8].stream_id,
		    s[STAGE_BIND_REQUEST + 8].first_ns, s[STAGE_BIND_REQUEST + 8].last_ns);
	m->body_kind = BODY_K8S;
	m->body.k8s.kind = K8S_KIND_SECRET;
	feed_msg(o, &sched_conn, m);
}

/* The scheduler's status PATCH could not be read (HPACK state from before the attach): the
 * correlator took bind_request from the apiserver's answer, a message read by the scheduler. */
static void feed_unschedulable(struct trace_outputs *o, const struct bind_timeline *t)
{
	const struct stage *st = &t->stages[STAGE_BIND_REQUEST];
	struct decoded_msg *m =
	    msg_new(DECODED_RESPONSE, CONN_DIR_IN, st->stream_id, st->first_ns, st->last_ns);

	m->http.status = 200;
	m->body_kind = BODY_K8S;
	pod(&m->body.k8s, t->name, "", "1300");
	m->body.k8s.pod.has_scheduled = true;
	snprintf(m->body.k8s.pod.scheduled_status, sizeof(m->body.k8s.pod.scheduled_status),
		 "False");
	snprintf(m->body.k8s.pod.scheduled_reason, sizeof(m->body.k8s.pod.scheduled_reason),
		 "Unschedulable");
	feed_msg(o, &sched_conn, m);
}

/* ---- Checks ---- */

static bool inside(json_t *events, json_int_t pid, json_int_t tid, double ts)
{
	size_t i;
	json_t *e;

	json_array_foreach(events, i, e)
	{
		const char *ph = json_string_value(json_object_get(e, "ph"));
		double s = json_number_value(json_object_get(e, "ts"));
		double d = json_number_value(json_object_get(e, "dur"));

		if (ph && !strcmp(ph, "X") &&
		    json_integer_value(json_object_get(e, "pid")) == pid &&
		    json_integer_value(json_object_get(e, "tid")) == tid && s <= ts && ts <= s + d)
			return true;
	}
	return false;
}

struct slice_key {
	json_int_t tid;
	double ts, end;
};

static int slice_cmp(const void *a, const void *b)
{
	const struct slice_key *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Complete events on one thread must nest; ours never even overlap. */
static int count_overlaps(json_t *events)
{
	struct slice_key *v = calloc(json_array_size(events) + 1, sizeof(*v));
	size_t i, n = 0;
	int overlaps = 0;
	json_t *e;

	json_array_foreach(events, i, e)
	{
		const char *ph = json_string_value(json_object_get(e, "ph"));

		if (!ph || strcmp(ph, "X"))
			continue;
		v[n].tid = json_integer_value(json_object_get(e, "tid"));
		v[n].ts = json_number_value(json_object_get(e, "ts"));
		v[n].end = v[n].ts + json_number_value(json_object_get(e, "dur"));
		n++;
	}
	qsort(v, n, sizeof(*v), slice_cmp);
	for (i = 1; i < n; i++)
		if (v[i].tid == v[i - 1].tid && v[i].ts < v[i - 1].end)
			overlaps++;
	free(v);
	return overlaps;
}

static void check_perfetto(const char *path)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr), *events, *e;
	int legs[LEG_MAX] = {}, slices = 0, instants = 0, starts = 0, finishes = 0;
	int bound_flows = 0, named = 0, bind_instants = 0, overlaps = 0;
	size_t i;

	CHECK(root != NULL, "perfetto JSON parses: %s line %d", jerr.text, jerr.line);
	if (!root)
		return;
	events = json_object_get(root, "traceEvents");
	CHECK(json_is_array(events), "traceEvents is an array");
	CHECK_STR(json_string_value(json_object_get(json_object_get(root, "otherData"), "clock")),
		  "CLOCK_MONOTONIC");
	json_array_foreach(events, i, e)
	{
		const char *ph = json_string_value(json_object_get(e, "ph"));
		json_t *args = json_object_get(e, "args");

		CHECK(ph && json_is_number(json_object_get(e, "ts")), "event %zu has ph and ts", i);
		if (!ph)
			continue;
		if (!strcmp(ph, "X")) {
			const char *leg = json_string_value(json_object_get(args, "leg"));
			double ts = json_number_value(json_object_get(e, "ts"));
			double dur = json_number_value(json_object_get(e, "dur"));

			slices++;
			for (int l = 0; leg && l < LEG_MAX; l++)
				if (!strcmp(leg, leg__name((enum leg_id)l)) &&
				    json_integer_value(json_object_get(args, "bind")) == 1)
					legs[l]++;
			if (leg && !strcmp(leg, "scheduler_to_apiserver") &&
			    json_integer_value(json_object_get(args, "bind")) == 1) {
				CHECK(fabs(ts - (double)B / 1000) < 0.0005, "ts %.3f", ts);
				CHECK(fabs(dur - 412.0) < 0.0005, "dur %.3f", dur);
				CHECK_INT(json_integer_value(json_object_get(e, "pid")), 640);
			}
			if (leg && !strcmp(leg, "total"))
				CHECK(!strncmp(json_string_value(json_object_get(e, "name")),
					       "bind ", 5),
				      "total slice named for the pod");
		} else if (!strcmp(ph, "i")) {
			instants++;
			if (!strcmp(json_string_value(json_object_get(e, "cat")), "bind"))
				bind_instants++;
		} else if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
			json_int_t pid = json_integer_value(json_object_get(e, "pid"));
			json_int_t tid = json_integer_value(json_object_get(e, "tid"));

			if (!strcmp(ph, "s"))
				starts++;
			else
				finishes++;
			if (inside(events, pid, tid, json_number_value(json_object_get(e, "ts"))))
				bound_flows++;
		} else if (!strcmp(ph, "M") &&
			   !strcmp(json_string_value(json_object_get(e, "name")), "process_name")) {
			const char *n = json_string_value(json_object_get(args, "name"));

			if (n &&
			    (!strcmp(n, "kube-scheduler (pid 812)") ||
			     !strcmp(n, "kube-apiserver (pid 640)") ||
			     !strcmp(n, "etcd (pid 590)") || !strcmp(n, "watcher-x (pid 7000)")))
				named++;
		}
	}
	for (int l = 0; l < LEG_MAX; l++)
		CHECK(legs[l] == (l == LEG_WATCH_FANOUT ? 2
				  : l == LEG_CREATE_TO_INFORMED || l == LEG_SCHEDULING ||
					  leg__raft((enum leg_id)l)
				      ? 0 /* a single member: no raft legs */
				      : 1),
		      "bind 1: %d slices of leg %s", legs[l], leg__name((enum leg_id)l));
	/* Legs: complete 12 (total, the 8 of the path, 2 fanouts, the traced watcher's delivery);
	 * missing-stages 3 (total, scheduler_to_apiserver, apiserver_to_scheduler); unschedulable
	 * none; conflict 3 (as missing-stages). */
	CHECK_INT(slices, 12 + 3 + 0 + 3);
	overlaps = count_overlaps(events);
	CHECK_INT(overlaps, 0);
	/* Stages seen, plus one bind instant each: complete 9 + 3 watcher stages + 1; missing 4 + 1;
	 * unschedulable 1 + 1; conflict 4 + 1. */
	CHECK_INT(instants, 13 + 5 + 2 + 5);
	CHECK_INT(bind_instants, 4);
	/* Flows from a leg to the legs that start where it ends: complete 10 (total ->
	 * scheduler_to_apiserver -> apiserver_handling -> apiserver_to_etcd -> etcd_commit ->
	 * wal_fsync and apiserver_respond -> apiserver_to_scheduler; etcd_watch -> both fanouts;
	 * the traced watcher's fanout -> its delivery); missing and conflict 1 each (total ->
	 * scheduler_to_apiserver). */
	CHECK_INT(starts, 10 + 1 + 1);
	CHECK_INT(finishes, starts);
	CHECK_INT(bound_flows, starts + finishes);
	/* 812, 640, 590 and 7000, each named once from a bind (the identities' pids are others). */
	CHECK_INT(named, 4);
	json_decref(root);
}

static int secrets_found;
static int files_checked;
static int bad_modes;

static int scan_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_D) {
		if ((st->st_mode & 07777) != 0700) {
			bad_modes++;
			fprintf(stderr, "mode %o: %s\n", st->st_mode & 07777, path);
		}
		return 0;
	}
	if (type == FTW_F) {
		char *text = slurp(path, NULL);

		files_checked++;
		if ((st->st_mode & 07777) != 0600) {
			bad_modes++;
			fprintf(stderr, "mode %o: %s\n", st->st_mode & 07777, path);
		}
		if (text && strstr(text, planted)) {
			secrets_found++;
			fprintf(stderr, "planted token in %s\n", path);
		}
		for (size_t i = 0; text && i < sizeof(fixture_secrets) / sizeof(*fixture_secrets);
		     i++)
			if (strstr(text, fixture_secrets[i])) {
				secrets_found++;
				fprintf(stderr, "%s in %s\n", fixture_secrets[i], path);
			}
		free(text);
	}
	return 0;
}

static json_t *load_lines(const char *path, int *n)
{
	size_t len;
	char *text = slurp(path, &len), *line, *save = NULL;
	json_t *arr = json_array();

	*n = 0;
	if (!text)
		return arr;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_error_t jerr;
		json_t *j = json_loads(line, 0, &jerr);

		CHECK(j != NULL, "%s: line parses: %s", path, jerr.text);
		if (j)
			json_array_append_new(arr, j);
		(*n)++;
	}
	free(text);
	return arr;
}

static bool has_stage(json_t *line, const char *stage)
{
	json_t *stages = json_object_get(line, "stages"), *s;
	size_t i;

	json_array_foreach(stages, i, s)
	{
		if (!strcmp(json_string_value(json_object_get(s, "stage")), stage))
			return true;
	}
	return false;
}

static void check_evidence(const char *dir)
{
	char p[1200];
	json_t *j, *lines, *l;
	int n, data = 0, fsync_stage = 0, fsync_context = 0, other = 0, with_offsets = 0;
	size_t i;

	CHECK_INT(mode_of(dir), 0700);
	snprintf(p, sizeof(p), "%s/README.md", dir);
	CHECK_INT(mode_of(p), 0600);
	snprintf(p, sizeof(p), "%s/0001-default-web-0", dir);
	CHECK_INT(mode_of(p), 0700);
	snprintf(p, sizeof(p), "%s/0001-default-web-0/bind.json", dir);
	j = json_load_file(p, 0, NULL);
	CHECK(j != NULL, "bind.json parses");
	CHECK_INT(json_integer_value(json_object_get(j, "revision")), 1234);
	CHECK_STR(json_string_value(json_object_get(j, "node")), "node-1");
	json_decref(j);

	snprintf(p, sizeof(p), "%s/0001-default-web-0/messages.jsonl", dir);
	lines = load_lines(p, &n);
	json_array_foreach(lines, i, l)
	{
		json_t *m = json_object_get(l, "message");
		json_t *off = json_object_get(l, "offsets");
		const char *key = json_string_value(
		    json_object_get(json_object_get(json_object_get(m, "body"), "kv"), "key"));

		if (key && strcmp(key, "/registry/pods/default/web-0"))
			other++;
		if (json_is_object(off) && json_integer_value(json_object_get(off, "to")) >
					       json_integer_value(json_object_get(off, "from")))
			with_offsets++;
	}
	/* 2 Binding + 2 Txn + TxnResponse + etcd watch + 2 Status + 3 watch events + Secret */
	CHECK_INT(n, 12);
	CHECK_INT(other, 0);
	CHECK_INT(with_offsets, 12);
	l = json_array_get(lines, 0);
	CHECK(has_stage(l, "bind_request"), "first message is the bind_request");
	CHECK_STR(json_string_value(json_object_get(json_object_get(l, "message"), "path")),
		  "/api/v1/namespaces/default/pods/web-0/binding");
	CHECK_INT(json_integer_value(json_object_get(json_object_get(l, "message"), "ts_first_ns")),
		  B);
	json_decref(lines);

	snprintf(p, sizeof(p), "%s/0001-default-web-0/kernel.jsonl", dir);
	lines = load_lines(p, &n);
	json_array_foreach(lines, i, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));

		if (!ev)
			continue;
		if (!strcmp(ev, "data")) {
			data++;
			CHECK(!json_object_get(l, "data") && json_object_get(l, "offset") &&
				  json_object_get(l, "len") && json_object_get(l, "tid"),
			      "data event metadata only");
		}
		if (!strcmp(ev, "fdatasync") && json_is_string(json_object_get(l, "stage")))
			fsync_stage++;
		else if (!strcmp(ev, "fdatasync"))
			fsync_context++;
	}
	/* 2 chunks per message of the 11 stages, and the Secret response's 2: read on the
	 * scheduler's connection at the instants of bind_response_received's, they are taken
	 * with it (a stage's events are picked by connection and time). */
	CHECK_INT(data, 11 * 2 + 2);
	CHECK_INT(fsync_stage, 1);
	CHECK_INT(fsync_context, 1);
	json_decref(lines);

	snprintf(p, sizeof(p), "%s/0001-default-web-0/binaries.json", dir);
	j = json_load_file(p, 0, NULL);
	CHECK(json_is_array(j) && json_array_size(j) >= 1, "binaries.json: an array");
	CHECK_INT(json_array_size(j), 2);
	CHECK(json_is_string(json_object_get(json_array_get(j, 0), "unreadable")),
	      "a binary that cannot be read says so");
	CHECK_INT(strlen(json_string_value(json_object_get(json_array_get(j, 1), "sha256"))), 64);
	json_decref(j);

	snprintf(p, sizeof(p), "%s/0004-default-web-0/bind.json", dir);
	CHECK_INT(mode_of(p), 0600);
	snprintf(p, sizeof(p), "%s/0003-default-pending/messages.jsonl", dir);
	CHECK_INT(mode_of(p), 0600);
	lines = load_lines(p, &n);
	CHECK_INT(n, 1);
	CHECK(has_stage(json_array_get(lines, 0), "bind_request"),
	      "the answer stands for bind_request");
	json_decref(lines);
	snprintf(p, sizeof(p), "%s/0003-default-pending/kernel.jsonl", dir);
	lines = load_lines(p, &n);
	CHECK_INT(n, 1 + 2); /* header + the answer's two chunks, read by the scheduler */
	CHECK_STR(json_string_value(json_object_get(json_array_get(lines, 1), "dir")), "in");
	json_decref(lines);

	secrets_found = files_checked = bad_modes = 0;
	nftw(dir, scan_one, 16, FTW_PHYS);
	CHECK(files_checked == 1 + 4 * 4, "%d evidence files", files_checked);
	CHECK_INT(secrets_found, 0);
	CHECK_INT(bad_modes, 0);
}

/* Well-formed enough for a browser: tags balance, attributes are quoted, text has no raw '<'
 * or stray '&'. Returns the number of <rect> bars with a <title> (one per leg drawn). */
static int check_svg(const char *path)
{
	char *text = slurp(path, NULL), *p, *stack[64];
	int depth = 0, bars = 0, ok = 1;

	CHECK(text != NULL, "SVG %s exists", path);
	if (!text)
		return 0;
	CHECK(!strncmp(text, "<?xml", 5), "XML declaration");
	for (p = text; *p && ok;) {
		if (*p == '&') {
			size_t n = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz#0123456789");

			ok = n > 0 && p[1 + n] == ';';
			CHECK(ok, "entity at %ld", (long)(p - text));
			p++;
			continue;
		}
		if (*p != '<') {
			p++;
			continue;
		}
		char *end = p + 1;
		bool quoted = false;

		for (; *end && (quoted || *end != '>'); end++) {
			if (*end == '"')
				quoted = !quoted;
			if (!quoted && *end == '<')
				break;
		}
		ok = *end == '>';
		CHECK(ok, "tag at %ld closes", (long)(p - text));
		if (!ok)
			break;
		if (p[1] == '?') {
			/* declaration */
		} else if (p[1] == '/') {
			size_t n = strcspn(p + 2, " >");

			ok = depth > 0 && !strncmp(stack[depth - 1], p + 2, n) &&
			     (stack[depth - 1][n] == ' ' || stack[depth - 1][n] == '>' ||
			      stack[depth - 1][n] == '/');
			CHECK(ok, "closing tag at %ld matches", (long)(p - text));
			depth--;
		} else if (end[-1] != '/') {
			if (!strncmp(p, "<rect ", 6))
				bars++;
			ok = depth < 64;
			if (ok)
				stack[depth++] = p + 1;
		}
		p = end + 1;
	}
	CHECK(ok && depth == 0, "tags balance (depth %d)", depth);
	CHECK(strstr(text, "<svg xmlns=\"http://www.w3.org/2000/svg\"") != NULL, "svg namespace");
	free(text);
	return bars;
}

static void check_report(const char *md, const char *svg)
{
	char *text = slurp(md, NULL);
	const char *needles[] = {
		"# Pod bind: default/web-0 → node-1",
		"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder/"
		"default_binder.go:56",
		"**k8s.io/kubernetes v1.33.13**",
		"https://github.com/kubernetes/kubernetes/blob/v1.33.13/pkg/scheduler/framework/"
		"plugins/defaultbinder/default_binder.go#L56",
		"**3.213 ms**",
		"| etcd revision | 1234",
		"\"\" → \"node-1\"",
		"kubectl/v1.33.13",
		"&lt;w&x>/1.0 (linux) '\\|'",
		"the watcher is not traced",
		"None: every required stage was observed.",
		"#1 of this bindtrace run",
		"kube-scheduler (pid 812)",
		"| kubectl (pid 5100) | 127.0.0.1:45000 |",
	};
	char svg_ref[1200];
	const char *base = strrchr(svg, '/');

	CHECK(text != NULL, "report %s exists", md);
	if (!text)
		return;
	CHECK_INT(mode_of(md), 0600);
	CHECK_INT(mode_of(svg), 0600);
	for (size_t i = 0; i < sizeof(needles) / sizeof(*needles); i++)
		CHECK(strstr(text, needles[i]) != NULL, "report has \"%s\"", needles[i]);
	for (int l = 0; l < LEG_MAX; l++) {
		char want[64];

		if (l == LEG_TOTAL)
			continue;
		snprintf(want, sizeof(want), "`%s`", leg__name((enum leg_id)l));
		/* a single member's binds: no raft legs */
		CHECK((strstr(text, want) != NULL) == !leg__raft((enum leg_id)l),
		      "report has leg %s: %s", want, leg__raft((enum leg_id)l) ? "no" : "yes");
	}
	snprintf(svg_ref, sizeof(svg_ref), "](<%s>)", base ? base + 1 : svg);
	CHECK(strstr(text, svg_ref) != NULL, "report refers to the SVG as %s", svg_ref);
	free(text);
	/* 12 legs drawn; one missing (the untraced watcher's delivery). */
	CHECK_INT(check_svg(svg), 12);
	text = slurp(svg, NULL);
	CHECK(text && strstr(text, "\xe2\x86\x92 &lt;w&amp;x&gt; (127.0.0.1:46000)"),
	      "watcher named from its user agent, escaped");
	CHECK(text && strstr(text, "missing watch_event_received: the watcher is not traced"),
	      "missing leg says why");
	free(text);
}

/* The bind view of t (wall clock = CLOCK_MONOTONIC), valid until the next call. */
static const struct bind_view *view_of(const struct bind_timeline *t)
{
	static struct bind_view view;

	bind_view__init(&view, t, 0);
	return &view;
}

/* Source links for the paths a -trimpath module build records. */
static void check_links(void)
{
	struct bind_timeline *t = calloc(1, sizeof(*t));
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	complete_bind(t);
	snprintf(t->citation.frames[1].file, sizeof(t->citation.frames[1].file),
		 "k8s.io/kubernetes@v1.33.13/pkg/scheduler/framework/plugins/defaultbinder/"
		 "default_binder.go");
	t->citation.frames[1].line = 58;
	f = open_memstream(&text, &len);
	CHECK_INT(report__write_markdown(f, view_of(t), NULL, NULL), 0);
	fclose(f);
	CHECK(strstr(text, "(https://github.com/kubernetes/kubernetes/blob/v1.33.13/pkg/scheduler/"
			   "framework/plugins/defaultbinder/default_binder.go#L58)") != NULL,
	      "module@version path linked");
	free(text);

	t->citation.cited = 0;
	snprintf(t->citation.frames[0].file, sizeof(t->citation.frames[0].file),
		 "k8s.io/client-go@v0.33.13/kubernetes/typed/core/v1/pod_expansion.go");
	t->citation.frames[0].line = 49;
	f = open_memstream(&text, &len);
	report__write_markdown(f, view_of(t), NULL, NULL);
	fclose(f);
	CHECK(strstr(text,
		     "(https://github.com/kubernetes/kubernetes/blob/v1.33.13/staging/src/"
		     "k8s.io/client-go/kubernetes/typed/core/v1/pod_expansion.go#L49)") != NULL,
	      "staging module linked at the kubernetes tag");
	free(text);

	snprintf(t->citation.frames[0].file, sizeof(t->citation.frames[0].file),
		 "github.com/x/y@v1.0.0/z.go");
	f = open_memstream(&text, &len);
	report__write_markdown(f, view_of(t), NULL, NULL);
	fclose(f);
	CHECK(strstr(text, "[source at") == NULL, "no link outside kubernetes");
	free(text);

	/* A watch event read before the WAL fsync ended (clocks of two processes): a negative leg. */
	complete_bind(t);
	t->stages[STAGE_ETCD_WATCH_EVENT].mono_ns = B + 1975 * US;
	f = open_memstream(&text, &len);
	report__write_markdown(f, view_of(t), NULL, NULL);
	fclose(f);
	CHECK(strstr(text, "**-0.125 ms** — WAL fsync done → etcd's watch event read by apiserver; "
			   "negative: `etcd_watch_event` came first") != NULL,
	      "negative leg explained");
	free(text);
	f = open_memstream(&text, &len);
	report__write_svg(f, view_of(t));
	fclose(f);
	CHECK(strstr(text, "-0.125 ms (etcd_watch_event first)") != NULL, "negative bar labelled");
	free(text);
	free(t);
}

static void check_errors(void)
{
	struct trace_options opt = {};
	char *log;
	FILE *f;

	f = fopen(path_in("a-file"), "w");
	fclose(f);
	opt.evidence = path_in("a-file/evidence");
	stderr_to(path_in("stderr"));
	CHECK(trace_outputs__new(&opt, 0) == NULL && errno == ENOTDIR, "evidence under a file");
	stderr_back();
	log = slurp(path_in("stderr"), NULL);
	CHECK(log && !strncmp(log, "bindtrace: --evidence ", 22) &&
		  strstr(log, "Not a directory") && strchr(log, '\n') == log + strlen(log) - 1,
	      "one-line error: %s", log);
	free(log);

	opt.evidence = path_in("a-file");
	stderr_to(path_in("stderr"));
	CHECK(trace_outputs__new(&opt, 0) == NULL && errno == ENOTDIR, "evidence is a file");
	stderr_back();

	opt.evidence = NULL;
	opt.perfetto = path_in("no-such-dir/trace.json");
	stderr_to(path_in("stderr"));
	CHECK(trace_outputs__new(&opt, 0) == NULL && errno == ENOENT, "perfetto in a missing dir");
	stderr_back();
	log = slurp(path_in("stderr"), NULL);
	CHECK(log && !strncmp(log, "bindtrace: --perfetto ", 22), "perfetto error: %s", log);
	free(log);

	opt.perfetto = NULL;
	opt.report = path_in("no-such-dir/r.md");
	snprintf(opt.pod_ns, sizeof(opt.pod_ns), "default");
	snprintf(opt.pod_name, sizeof(opt.pod_name), "ghost");
	stderr_to(path_in("stderr"));
	CHECK(trace_outputs__new(&opt, 0) == NULL && errno == ENOENT, "report in a missing dir");
	stderr_back();

	/* A report of a pod never seen: an error at the end, and no file left behind. */
	opt.report = path_in("ghost.md");
	struct trace_outputs *o = trace_outputs__new(&opt, 0);
	struct bind_timeline *t = calloc(1, sizeof(*t));

	CHECK(o != NULL, "report of ghost opens");
	complete_bind(t);
	trace_outputs__bind(o, t);
	stderr_to(path_in("stderr"));
	CHECK_INT(trace_outputs__finish(o), -ENOENT);
	stderr_back();
	trace_outputs__free(o);
	log = slurp(path_in("stderr"), NULL);
	CHECK(log && strstr(log, "bindtrace: --report: no bind of default/ghost was seen\n"),
	      "no-bind message: %s", log);
	free(log);
	CHECK(access(path_in("ghost.md"), F_OK) != 0, "no report file left");
	CHECK(access(path_in("ghost.md.svg"), F_OK) != 0, "no SVG left");
	free(t);
}

static void check_identity(void)
{
	const char *dir = getenv("BINDTRACE_GOFIXTURES");
	char hex[65], path[1024], why[256];
	const char *hexp = hex; /* CHECK_STR tests for NULL */
	struct process_identity id;
	struct go_binary *gb;
	uint64_t size = 0;
	FILE *f = fopen(path_in("abc"), "w");

	fputs("abc", f);
	fclose(f);
	CHECK_INT(sha256__file(path_in("abc"), hex, &size), 0);
	CHECK_STR(hexp, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK_INT(size, 3);
	f = fopen(path_in("empty"), "w");
	fclose(f);
	CHECK_INT(sha256__file(path_in("empty"), hex, &size), 0);
	CHECK_STR(hexp, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	/* 1000 bytes: across blocks and the padding boundary. */
	f = fopen(path_in("a1000"), "w");
	for (int i = 0; i < 1000; i++)
		fputc('a', f);
	fclose(f);
	CHECK_INT(sha256__file(path_in("a1000"), hex, &size), 0);
	CHECK_STR(hexp, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
	CHECK_INT(sha256__file(path_in("missing"), hex, &size), -ENOENT);

	process_identity__read(&id, "test", getpid(), "/proc/self/exe", "/proc/self/exe", "", "",
			       NULL);
	CHECK(strlen(id.sha256) == 64 && id.size > 0 && !id.why[0], "own identity: %s", id.why);
	CHECK(strlen(id.gnu_build_id) >= 16, "GNU build id of the test: '%s'", id.gnu_build_id);
	process_identity__clear(&id);

	snprintf(path, sizeof(path), "%s/go1.26/static/tlsfix", dir ? dir : "build/gofixtures");
	gb = go_binary__open(path, why, sizeof(why));
	/* A missing fixture fails: skipped, these checks would pass without running. tests/run
	 * builds it first. */
	CHECK(gb != NULL,
	      "Go fixture %s: %s (build it: GOFIXTURE_TOOLCHAINS=go1.26.8 tests/gofixtures/build)",
	      path, why);
	if (!gb)
		return;
	process_identity__read(&id, "etcd", 1, path, path, "go1.26", "v0", gb);
	CHECK(strlen(id.go_build_id) > 20, "Go build id: '%s'", id.go_build_id);
	CHECK(json_is_array(json_object_get(json_object_get(id.detail, "go"), "modules")),
	      "modules listed");
	CHECK(!strncmp(
		  json_string_value(json_object_get(json_object_get(id.detail, "go"), "text_base")),
		  "0x", 2),
	      "text base");
	process_identity__clear(&id);
	go_binary__close(gb);
}

/* ---- The committed captures through the real decoder and correlator ---- */

struct replay {
	struct trace_outputs *o;
	struct correlator *corr;
	struct actor who;
	int binds;
};

static void on_msg(const struct decoded_msg *m, void *ctx)
{
	struct replay *r = ctx;

	trace_outputs__message(r->o, &r->who, m);
	correlator__message(r->corr, &r->who, m);
}

static void on_bind(const struct bind_timeline *t, void *ctx)
{
	struct replay *r = ctx;

	r->binds++;
	trace_outputs__bind(r->o, t);
}

static void replay_fixture(struct replay *r, const char *name)
{
	char path[512], *text, *line, *save = NULL;
	struct conn_decoder *decs[64] = {};
	struct actor whos[64];
	uint64_t ids[64];
	int n_conns = 0;

	snprintf(path, sizeof(path), "%s/%s",
		 getenv("FIXTURES") ? getenv("FIXTURES") : "tests/fixtures", name);
	text = slurp(path, NULL);
	CHECK(text != NULL, "fixture %s", path);
	if (!text)
		return;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *j = json_loads(line, 0, NULL);
		const char *data = json_string_value(json_object_get(j, "data"));
		const char *comm = json_string_value(json_object_get(j, "comm"));
		uint64_t conn = (uint64_t)json_integer_value(json_object_get(j, "conn"));
		int dir = !strcmp(json_string_value(json_object_get(j, "dir")) ?: "out", "in");
		int k;

		for (k = 0; k < n_conns && ids[k] != conn; k++)
			;
		if (k == n_conns && n_conns < 64) {
			ids[k] = conn;
			whos[k] = actor((pid_t)json_integer_value(json_object_get(j, "pid")),
					comm ? comm : "?",
					comm && !strcmp(comm, "kube-scheduler")	  ? ROLE_SCHEDULER
					: comm && !strcmp(comm, "kube-apiserver") ? ROLE_APISERVER
					: comm && !strcmp(comm, "etcd")		  ? ROLE_ETCD
										  : ROLE_WATCHER,
					conn, json_string_value(json_object_get(j, "laddr")) ?: "",
					json_string_value(json_object_get(j, "raddr")) ?: "");
			decs[k] = conn_decoder__new(on_msg, r);
			n_conns++;
		}
		if (k == n_conns) {
			json_decref(j);
			continue;
		}
		r->who = whos[k];
		if (json_is_integer(json_object_get(j, "gap"))) {
			conn_decoder__gap(decs[k], dir,
					  (uint64_t)json_integer_value(json_object_get(j, "gap")));
		} else if (data) {
			size_t n = strlen(data);
			struct data_event *e = calloc(1, sizeof(*e) + n);
			long len = util__base64_decode(data, n, e->data);

			CHECK(len >= 0, "%s: base64 of a record", name);
			e->hdr.type = EVENT_DATA;
			e->hdr.pid = (__u32)whos[k].pid;
			e->hdr.tid = (__u32)json_integer_value(json_object_get(j, "tid"));
			e->hdr.ts_ns = (__u64)json_integer_value(json_object_get(j, "ts_ns"));
			e->conn = conn;
			e->offset = (__u64)json_integer_value(json_object_get(j, "offset"));
			e->len = len > 0 ? (__u32)len : 0;
			e->dir = (__u8)dir;
			e->source = SOURCE_TLS;
			trace_outputs__data(r->o, &whos[k], e);
			conn_decoder__feed(decs[k], dir, e->offset, e->data, len, e->hdr.ts_ns);
			free(e);
		}
		json_decref(j);
	}
	for (int k = 0; k < n_conns; k++)
		conn_decoder__free(decs[k]);
	free(text);
}

static void check_fixtures(void)
{
	struct correlator_options copt = { .linger_ns = 1, .max_open_ns = 1ull << 62 };
	struct trace_options opt = {};
	struct replay r = {};
	char dir[1100];

	snprintf(dir, sizeof(dir), "%s", path_in("evidence-fixtures"));
	opt.evidence = dir;
	opt.perfetto = path_in("fixtures-trace.json");
	r.o = trace_outputs__new(&opt, 0);
	copt.have_scheduler = copt.have_apiserver = true;
	r.corr = correlator__new(&copt, on_bind, &r);
	CHECK(r.o && r.corr, "outputs and correlator");
	if (!r.o || !r.corr)
		return;
	/* Separate captures: each one's binds are closed before the next begins (a Binding left
	 * unanswered in one would otherwise take the same pod's in the next). */
	replay_fixture(&r, "bind_http1.jsonl");
	correlator__tick(r.corr, UINT64_MAX / 2, true);
	replay_fixture(&r, "bind_h2.jsonl");
	correlator__tick(r.corr, UINT64_MAX / 2, true);
	replay_fixture(&r, "many_binds.jsonl");
	correlator__tick(r.corr, UINT64_MAX / 2, true);
	replay_fixture(&r, "watch_json.jsonl");
	correlator__tick(r.corr, UINT64_MAX / 2, true);
	CHECK_INT(trace_outputs__finish(r.o), 0);
	trace_outputs__free(r.o);
	correlator__free(r.corr);
	printf("test_outputs: fixtures gave %d binds\n", r.binds);
	/* bind_http1 1; bind_h2 3 and the Binding reset before its answer; many_binds 50 and its
	 * reset one; the kubectl watch none. */
	CHECK_INT(r.binds, 1 + 4 + 51 + 0);
	secrets_found = files_checked = bad_modes = 0;
	nftw(dir, scan_one, 16, FTW_PHYS);
	/* README.md, and bind.json, messages.jsonl, kernel.jsonl, binaries.json per bind. */
	CHECK_INT(files_checked, 1 + 4 * 56);
	CHECK_INT(secrets_found, 0);
	CHECK_INT(bad_modes, 0);
	json_decref(NULL);
	{
		json_t *root = json_load_file(path_in("fixtures-trace.json"), 0, NULL);

		CHECK(root != NULL, "fixtures' trace parses");
		json_decref(root);
	}
}

/* A burst of 200 overlapping binds, everything fed before any is written (as the correlator
 * emits them after their linger): each keeps its own messages, the trace stays properly nested. */
static void check_many(void)
{
	struct bind_timeline *t = calloc(1, sizeof(*t));
	struct trace_options opt = {};
	struct trace_outputs *o;
	char p[1200];
	json_t *root;
	int i, n, bad = 0, slices = 0;
	size_t k;
	json_t *e;

	opt.evidence = path_in("many-evidence");
	opt.perfetto = path_in("many.json");
	o = trace_outputs__new(&opt, 0);
	CHECK(o != NULL, "outputs for the burst");
	if (!o)
		return;
	for (i = 0; i < 200; i++) {
		many_bind(t, i);
		feed_complete(o, t);
	}
	for (i = 0; i < 200; i++) {
		many_bind(t, i);
		trace_outputs__bind(o, t);
	}
	CHECK_INT(trace_outputs__finish(o), 0);
	trace_outputs__free(o);
	for (i = 0; i < 200; i++) {
		json_t *lines;

		snprintf(p, sizeof(p), "%s/%04d-default-many-%d/messages.jsonl",
			 path_in("many-evidence"), 100 + i, i);
		lines = load_lines(p, &n);
		if (n != 12) {
			bad++;
			fprintf(stderr, "%s: %d messages\n", p, n);
		}
		json_decref(lines);
	}
	CHECK_INT(bad, 0);
	root = json_load_file(path_in("many.json"), 0, NULL);
	CHECK(root != NULL, "burst trace parses");
	json_array_foreach(json_object_get(root, "traceEvents"), k, e)
	{
		if (!strcmp(json_string_value(json_object_get(e, "ph")), "X"))
			slices++;
	}
	CHECK_INT(slices, 200 * 12);
	CHECK_INT(count_overlaps(json_object_get(root, "traceEvents")), 0);
	json_decref(root);
	free(t);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	return remove(path);
}

int main(void)
{
	struct trace_options opt = {};
	struct bind_timeline *t = calloc(1, sizeof(*t));
	struct trace_outputs *o;
	const char *keep = getenv("BINDTRACE_TEST_REPORT");
	char report[1024], svg[1100], evdir[1100], trace[1100];

	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	actors_init();
	snprintf(report, sizeof(report), "%s", keep && *keep ? keep : path_in("web-0.md"));
	snprintf(svg, sizeof(svg), "%s.svg", report);
	snprintf(evdir, sizeof(evdir), "%s", path_in("evidence"));
	snprintf(trace, sizeof(trace), "%s", path_in("trace.json"));
	opt.perfetto = trace;
	opt.evidence = evdir;
	opt.report = report;
	opt.linger_ms = 500;
	snprintf(opt.pod_ns, sizeof(opt.pod_ns), "default");
	snprintf(opt.pod_name, sizeof(opt.pod_name), "web-0");

	o = trace_outputs__new(&opt, 1764583200000000000ll - (int64_t)B);
	CHECK(o != NULL, "outputs open: %s", strerror(errno));
	if (!o)
		return check_summary("outputs");
	/* A pid that cannot exist and a path that does not: an identity that cannot be read. */
	trace_outputs__process(o, "kube-scheduler", 2147483632, "/usr/bin/kube-scheduler",
			       "go1.26.8", "v1.33.13", NULL);
	/* Our own pid: an identity that can be read. */
	trace_outputs__process(o, "kube-apiserver", getpid(), "/proc/self/exe", "go1.26.8",
			       "v1.33.13", NULL);
	complete_bind(t);
	feed_complete(o, t);
	trace_outputs__bind(o, t);
	missing_bind(t);
	trace_outputs__bind(o, t);
	unschedulable_bind(t);
	feed_unschedulable(o, t);
	trace_outputs__bind(o, t);
	conflict_bind(t);
	trace_outputs__bind(o, t); /* a 409 on web-0 after its bind: the report keeps the bind */
	CHECK_INT(trace_outputs__finish(o), 0);
	trace_outputs__free(o);

	check_perfetto(trace);
	check_evidence(evdir);
	check_report(report, svg);

	/* The unschedulable pod's report: says so, one row. */
	{
		struct trace_options u = {};

		u.report = path_in("pending.md");
		snprintf(u.pod_ns, sizeof(u.pod_ns), "default");
		snprintf(u.pod_name, sizeof(u.pod_name), "pending");
		o = trace_outputs__new(&u, 0);
		unschedulable_bind(t);
		trace_outputs__bind(o, t);
		CHECK_INT(trace_outputs__finish(o), 0);
		trace_outputs__free(o);
		char *md = slurp(path_in("pending.md"), NULL);

		CHECK(md && strstr(md, "The pod fits no node") && strstr(md, "**unschedulable**") &&
			  strstr(md, "0/2 nodes are available"),
		      "unschedulable report");
		free(md);
		check_svg(path_in("pending.md.svg"));
	}
	check_links();
	check_many();
	check_errors();
	check_identity();
	check_fixtures();

	free(t);
	if (!check_failed && !getenv("BINDTRACE_TEST_KEEP"))
		nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	else
		fprintf(stderr, "test_outputs: files kept in %s\n", tmp);
	return check_summary("outputs");
}
