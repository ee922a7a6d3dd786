/* The correlator joins the two ends of a connection by their addresses: one bind is played
 * through it, stage by stage as the decoders would hand it over, over IPv6 loopback, over IPv6
 * addresses that differ only in their middle groups, and over a dual-stack etcd and apiserver
 * that see their IPv4 peers as v4-mapped addresses. Each run also holds a decoy: etcd reading a
 * Txn of the same pod on the same HTTP/2 stream id of another connection, and another watcher
 * reading the same event on the same stream id, both seen first; only the addresses tell them
 * apart. A run whose two ends do not match (IPv4 against ::1) must leave etcd's stages missing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "correlate_play.h"
#include "correlate.h"
#include "endpoint.h"
#include "bindview.h"
#include "timeline.h"

/* Every connection of the bind, each end as its own process sees it: "local remote". */
struct addresses {
	const char *name;
	const char *scheduler, *apiserver_in;	     /* the bind request's connection */
	const char *apiserver_etcd, *etcd_in;	     /* the apiserver's Txn connection */
	const char *etcd_decoy;			     /* etcd's end of another connection */
	const char *apiserver_watch;		     /* the apiserver's watch of etcd */
	const char *apiserver_watcher, *watcher_end; /* a pod watch, both ends */
	const char *watcher_decoy;		     /* another watcher's end */
	bool etcd_matches;			     /* the Txn's two ends are one connection */
};

static const struct addresses runs[] = {
	{
	    .name = "IPv6 loopback",
	    .scheduler = "[::1]:50000 [::1]:6443",
	    .apiserver_in = "[::1]:6443 [::1]:50000",
	    .apiserver_etcd = "[::1]:51000 [::1]:2379",
	    .etcd_in = "[::1]:2379 [::1]:51000",
	    .etcd_decoy = "[::1]:2379 [::1]:51001",
	    .apiserver_watch = "[::1]:51002 [::1]:2379",
	    .apiserver_watcher = "[::1]:6443 [::1]:46000",
	    .watcher_end = "[::1]:46000 [::1]:6443",
	    .watcher_decoy = "[::1]:46001 [::1]:6443",
	    .etcd_matches = true,
	},
	{
	    /* Equal first and last groups and ports: only the middle tells the decoys apart. */
	    .name = "IPv6, middle groups",
	    .scheduler = "[fd00::5:1]:50000 [fd00::1:1]:6443",
	    .apiserver_in = "[fd00::1:1]:6443 [fd00::5:1]:50000",
	    .apiserver_etcd = "[fd00::1:1]:51000 [fd00::e:1]:2379",
	    .etcd_in = "[fd00::e:1]:2379 [fd00::1:1]:51000",
	    .etcd_decoy = "[fd00::e:1]:2379 [fd00::2:1]:51000",
	    .apiserver_watch = "[fd00::1:1]:51002 [fd00::e:1]:2379",
	    .apiserver_watcher = "[fd00::1:1]:6443 [fd00::7:1]:46000",
	    .watcher_end = "[fd00::7:1]:46000 [fd00::1:1]:6443",
	    .watcher_decoy = "[fd00::8:1]:46000 [fd00::1:1]:6443",
	    .etcd_matches = true,
	},
	{
	    /* Dual-stack listeners (etcd, the apiserver) see IPv4 clients as ::ffff:a.b.c.d. */
	    .name = "v4-mapped",
	    .scheduler = "127.0.0.1:50000 127.0.0.1:6443",
	    .apiserver_in = "[::ffff:127.0.0.1]:6443 [::ffff:127.0.0.1]:50000",
	    .apiserver_etcd = "127.0.0.1:51000 127.0.0.1:2379",
	    .etcd_in = "[::ffff:127.0.0.1]:2379 [::ffff:127.0.0.1]:51000",
	    .etcd_decoy = "[::ffff:127.0.0.2]:2379 [::ffff:127.0.0.1]:51000",
	    .apiserver_watch = "127.0.0.1:51002 127.0.0.1:2379",
	    .apiserver_watcher = "[::ffff:127.0.0.1]:6443 [::ffff:127.0.0.1]:46000",
	    .watcher_end = "127.0.0.1:46000 127.0.0.1:6443",
	    .watcher_decoy = "127.0.0.1:46001 127.0.0.1:6443",
	    .etcd_matches = true,
	},
	{
	    /* 127.0.0.1 is not ::1: etcd's end is another connection. */
	    .name = "IPv4 against ::1",
	    .scheduler = "127.0.0.1:50000 127.0.0.1:6443",
	    .apiserver_in = "127.0.0.1:6443 127.0.0.1:50000",
	    .apiserver_etcd = "127.0.0.1:51000 127.0.0.1:2379",
	    .etcd_in = "[::1]:2379 [::1]:51000",
	    .etcd_decoy = "[::1]:2379 [::1]:51001",
	    .apiserver_watch = "127.0.0.1:51002 127.0.0.1:2379",
	    .apiserver_watcher = "127.0.0.1:6443 127.0.0.1:46000",
	    .watcher_end = "127.0.0.1:46000 127.0.0.1:6443",
	    .watcher_decoy = "127.0.0.1:46001 127.0.0.1:6443",
	    .etcd_matches = false,
	},
};

static struct actor actor(pid_t pid, const char *comm, enum process_role role, uint64_t conn,
			  const char *ends)
{
	struct actor a = { .pid = pid, .role = role, .conn = conn };
	char local[ENDPOINT_STRLEN] = "", remote[ENDPOINT_STRLEN] = "";

	snprintf(a.comm, sizeof(a.comm), "%s", comm);
	CHECK(sscanf(ends, "%55s %55s", local, remote) == 2, "two ends in \"%s\"", ends);
	CHECK(endpoint__parse(local, &a.local) == 0, "local %s", local);
	CHECK(endpoint__parse(remote, &a.remote) == 0, "remote %s", remote);
	return a;
}

static void txn(struct correlator *c, const struct actor *who, enum conn_dir dir, uint64_t first_us,
		uint64_t last_us)
{
	struct decoded_msg *m = message(DECODED_GRPC_REQUEST, dir, 7, first_us, last_us);
	struct etcd_txn *t = &m->body.txn;

	m->body_kind = BODY_ETCD_TXN;
	snprintf(t->compare_key, sizeof(t->compare_key), POD_KEY);
	t->compare_revision = REVISION - 10;
	t->has_put = true;
	snprintf(t->put.key, sizeof(t->put.key), POD_KEY);
	t->put.value.kind = K8S_KIND_POD;
	snprintf(t->put.value.pod.node_name, sizeof(t->put.value.pod.node_name), "node-1");
	correlator__message(c, who, m);
}

static void txn_response(struct correlator *c, const struct actor *who, enum conn_dir dir,
			 uint64_t first_us, uint64_t last_us)
{
	struct decoded_msg *m = message(DECODED_GRPC_RESPONSE, dir, 7, first_us, last_us);

	m->body_kind = BODY_ETCD_TXN_RESPONSE;
	m->body.txn_response.header.revision = REVISION;
	m->body.txn_response.succeeded = true;
	correlator__message(c, who, m);
}

static void etcd_watch(struct correlator *c, const struct actor *who, uint64_t first_us,
		       uint64_t last_us)
{
	struct decoded_msg *m =
	    message(DECODED_ETCD_WATCH_EVENT, CONN_DIR_IN, 5, first_us, last_us);
	struct etcd_watch_event *ev = &m->body.etcd_watch.event;

	m->body_kind = BODY_ETCD_WATCH_EVENT;
	snprintf(ev->kv.key, sizeof(ev->kv.key), POD_KEY);
	ev->kv.mod_revision = REVISION;
	ev->kv.value.kind = K8S_KIND_POD;
	snprintf(ev->kv.value.pod.node_name, sizeof(ev->kv.value.pod.node_name), "node-1");
	snprintf(ev->kv.value.meta.uid, sizeof(ev->kv.value.meta.uid),
		 "7c9e6679-7425-40de-944b-e07fc1f90ae7");
	ev->has_prev_kv = true;
	correlator__message(c, who, m);
}

static void watch_frame(struct correlator *c, const struct actor *who, enum conn_dir dir,
			uint64_t first_us, uint64_t last_us, const char *type, const char *node,
			int revision)
{
	struct decoded_msg *m = message(DECODED_WATCH_EVENT, dir, 1, first_us, last_us);
	struct k8s_object *o = &m->body.watch.object;

	m->body_kind = BODY_K8S_WATCH_EVENT;
	snprintf(m->body.watch.type, sizeof(m->body.watch.type), "%s", type);
	o->kind = K8S_KIND_POD;
	o->encoding = K8S_ENCODING_PROTOBUF;
	snprintf(o->meta.namespace, sizeof(o->meta.namespace), "default");
	snprintf(o->meta.name, sizeof(o->meta.name), "web-0");
	snprintf(o->meta.resource_version, sizeof(o->meta.resource_version), "%d", revision);
	snprintf(o->pod.node_name, sizeof(o->pod.node_name), "%s", node);
	correlator__message(c, who, m);
}

static void watch_event(struct correlator *c, const struct actor *who, enum conn_dir dir,
			uint64_t first_us, uint64_t last_us)
{
	watch_frame(c, who, dir, first_us, last_us, "MODIFIED", "node-1", REVISION);
}

struct result {
	int binds;
	struct bind_timeline t;
	char json[16384];
};

static void on_bind(const struct bind_timeline *t, void *ctx)
{
	struct result *r = ctx;
	FILE *f = fmemopen(r->json, sizeof(r->json) - 1, "w");
	struct bind_view view;

	r->binds++;
	r->t = *t;
	if (f) {
		bind_view__init(&view, t, 0);
		timeline__print_json(f, &view);
		fclose(f);
	}
}

/* n WAL fsyncs of etcd pid `pid`, each before B: observations that take ring slots and share
 * a chain with the bind's own fsync when pid is etcd's. */
static void flood(struct correlator *c, pid_t pid, int n)
{
	struct actor fs = { .pid = pid, .comm = "etcd", .role = ROLE_ETCD };
	int i;

	for (i = 0; i < n; i++)
		correlator__fsync(c, &fs, B - 2000 * US, B - 1000 * US, true, 0);
}

/* The bind up to the apiserver's watch event to the watcher, in the order the tracer would see
 * it, decoys first; `flood_after_sent` observations of another process come right after the
 * apiserver's Txn. */
static void play_to_watch_event_of(struct correlator *c, const struct addresses *a,
				   int flood_after_sent, bool etcd_watch_event)
{
	struct actor sched = actor(812, "kube-scheduler", ROLE_SCHEDULER, 1001, a->scheduler),
		     api_in = actor(640, "kube-apiserver", ROLE_APISERVER, 2001, a->apiserver_in),
		     api_etcd =
			 actor(640, "kube-apiserver", ROLE_APISERVER, 2002, a->apiserver_etcd),
		     api_watch =
			 actor(640, "kube-apiserver", ROLE_APISERVER, 2003, a->apiserver_watch),
		     api_watcher =
			 actor(640, "kube-apiserver", ROLE_APISERVER, 2102, a->apiserver_watcher),
		     etcd_in = actor(590, "etcd", ROLE_ETCD, 3001, a->etcd_in),
		     etcd_decoy = actor(590, "etcd", ROLE_ETCD, 3002, a->etcd_decoy),
		     etcd_fs = { .pid = 590, .comm = "etcd", .role = ROLE_ETCD };

	binding(c, &sched, DECODED_REQUEST, CONN_DIR_OUT, 0, 20);
	binding(c, &api_in, DECODED_REQUEST, CONN_DIR_IN, 100, 400);
	txn(c, &api_etcd, CONN_DIR_OUT, 500, 520);
	flood(c, 591, flood_after_sent);
	txn(c, &etcd_decoy, CONN_DIR_IN, 550, 560);
	txn_response(c, &etcd_decoy, CONN_DIR_OUT, 870, 880);
	txn(c, &etcd_in, CONN_DIR_IN, 600, 620);
	correlator__fsync(c, &etcd_fs, B + 650 * US, B + 850 * US, true, 0);
	txn_response(c, &etcd_in, CONN_DIR_OUT, 900, 910);
	txn_response(c, &api_etcd, CONN_DIR_IN, 950, 960);
	if (etcd_watch_event)
		etcd_watch(c, &api_watch, 1000, 1010);
	binding(c, &api_in, DECODED_RESPONSE, CONN_DIR_OUT, 1100, 1120);
	binding(c, &sched, DECODED_RESPONSE, CONN_DIR_IN, 1200, 1220);
	watch_event(c, &api_watcher, CONN_DIR_OUT, 1300, 1310);
}

static void play_to_watch_event(struct correlator *c, const struct addresses *a,
				int flood_after_sent)
{
	play_to_watch_event_of(c, a, flood_after_sent, true);
}

/* The whole bind: then another watcher's receipt and the watcher's own. */
static void play_flooded(struct correlator *c, const struct addresses *a, int flood_after_sent)
{
	struct actor watcher = actor(7000, "kubectl", ROLE_WATCHER, 4001, a->watcher_end),
		     watcher_decoy = actor(7001, "kubectl", ROLE_WATCHER, 4002, a->watcher_decoy);

	play_to_watch_event(c, a, flood_after_sent);
	watch_event(c, &watcher_decoy, CONN_DIR_IN, 1350, 1360);
	watch_event(c, &watcher, CONN_DIR_IN, 1400, 1410);
}

static void play(struct correlator *c, const struct addresses *a)
{
	play_flooded(c, a, 0);
}

/* A correlator tracing all three roles, its binds into r; NULL without memory. */
static struct correlator *full_correlator(struct result *r)
{
	struct correlator_options opt = {
		PLAY_OPTIONS,
	};

	return r ? correlator__new(&opt, on_bind, r) : NULL;
}

/* A new correlator into r, emptied first (NULL without memory, a failed check). */
static struct correlator *fresh_correlator(struct result *r, const char *what)
{
	struct correlator *c;

	memset(r, 0, sizeof(*r));
	c = full_correlator(r);
	CHECK(c != NULL, "%s: correlator", what);
	return c;
}

static void check_run(const struct addresses *a)
{
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = full_correlator(r);
	const struct bind_timeline *t = &r->t;
	char want[128];
	int s;

	CHECK(r && c, "%s: correlator", a->name);
	if (!r || !c)
		goto out;
	play(c, a);
	correlator__tick(c, B + 10000000 * US, true);
	CHECK(r->binds == 1, "%s: one bind, got %d", a->name, r->binds);
	CHECK(t->result == BIND_RESULT_BOUND, "%s: bound (%s)", a->name,
	      bind_result__name(t->result));
	CHECK_INT(t->revision, REVISION);
	if (!a->etcd_matches) {
		CHECK(!t->stages[STAGE_ETCD_TXN_RECEIVED].seen, "%s: no etcd end", a->name);
		CHECK(!t->stages[STAGE_ETCD_TXN_RESPONSE].seen &&
			  !t->stages[STAGE_ETCD_WAL_FSYNC].seen,
		      "%s: nor what follows from it", a->name);
		CHECK(t->missing == 3, "%s: 3 missing stages, got %d", a->name, t->missing);
		goto out;
	}
	/* The pod was created before the replay: its create stages say so and are not missing. */
	CHECK(t->created_before_attach, "%s: created before attach", a->name);
	for (s = 0; s < STAGE_MAX; s++)
		CHECK(stage__before_bind(s) ? !t->stages[s].seen : t->stages[s].seen,
		      "%s: %s %sseen (%s)", a->name, stage__name(s),
		      stage__before_bind(s) ? "not " : "", t->stages[s].missing);
	CHECK(t->missing == 0, "%s: nothing missing, got %d", a->name, t->missing);
	CHECK(t->stages[STAGE_ETCD_TXN_RECEIVED].who.conn == 3001 &&
		  t->stages[STAGE_ETCD_TXN_RESPONSE].who.conn == 3001,
	      "%s: etcd's end of the apiserver's connection, not the decoy (conn %llu)", a->name,
	      (unsigned long long)t->stages[STAGE_ETCD_TXN_RECEIVED].who.conn);
	CHECK(t->stages[STAGE_ETCD_WAL_FSYNC].mono_ns == B + 650 * US, "%s: the WAL fsync",
	      a->name);
	CHECK(t->n_watchers == 1, "%s: one watcher, got %d", a->name, t->n_watchers);
	CHECK(t->watchers[0].received.seen && t->watchers[0].received.who.conn == 4001,
	      "%s: the watcher's own end received it, not the decoy (conn %llu)", a->name,
	      (unsigned long long)t->watchers[0].received.who.conn);
	/* The JSON prints each end with the one formatter. */
	snprintf(want, sizeof(want), "\"laddr\":\"%.*s\"", (int)strcspn(a->scheduler, " "),
		 a->scheduler);
	CHECK(strstr(r->json, want) != NULL, "%s: %s in the JSON", a->name, want);
	snprintf(want, sizeof(want), "\"raddr\":\"%s\"", strchr(a->apiserver_in, ' ') + 1);
	CHECK(strstr(r->json, want) != NULL, "%s: %s in the JSON", a->name, want);
out:
	correlator__free(c);
	free(r);
}

/* A watcher's frames before the bind, each case a replay of the bind after them (bindview.h's
 * check line). */
struct frames_case {
	const char *name;
	int n; /* frames before the bind's MODIFIED */
	const char *types[12];
	const char *nodes[12];
	bool loss;	  /* bytes lost on the watch's connection meanwhile */
	const char *want; /* the check line */
	int kept, not_kept, changed;
	enum frames_start start;
};

static const struct frames_case frames_cases[] = {
	{ "ADDED then the bind",
	  1,
	  { "ADDED" },
	  { "" },
	  false,
	  "2 frames: ADDED nodeName \"\", MODIFIED nodeName \"node-1\"; nothing between",
	  2,
	  0,
	  0,
	  FRAMES_FROM_ADDED },
	{ "a status update between",
	  3,
	  { "ADDED", "MODIFIED", "MODIFIED" },
	  { "", "", "" },
	  false,
	  "4 frames: ADDED nodeName \"\", MODIFIED nodeName \"\" x2, MODIFIED nodeName "
	  "\"node-1\"; 2 between, none changed nodeName",
	  4,
	  0,
	  0,
	  FRAMES_FROM_ADDED },
	{ "a frame between changed nodeName",
	  2,
	  { "ADDED", "MODIFIED" },
	  { "", "node-9" },
	  false,
	  "3 frames: ADDED nodeName \"\", MODIFIED nodeName \"node-9\", MODIFIED nodeName "
	  "\"node-1\"; 1 of 1 between changed nodeName (first: MODIFIED rev 1201 nodeName "
	  "\"node-9\")",
	  3,
	  0,
	  1,
	  FRAMES_FROM_ADDED },
	{ "no ADDED (created before attach)",
	  0,
	  { "" },
	  { "" },
	  false,
	  "joined midway (the pod was created before bindtrace attached): 1 frame: MODIFIED "
	  "nodeName \"node-1\"; what came before is not known",
	  1,
	  0,
	  0,
	  FRAMES_BEFORE_ATTACH },
	{ "bytes lost meanwhile",
	  1,
	  { "ADDED" },
	  { "" },
	  true,
	  "2 frames: ADDED nodeName \"\", MODIFIED nodeName \"node-1\"; nothing between; bytes "
	  "lost or ring buffer drops while they came: a frame may be missing",
	  2,
	  0,
	  0,
	  FRAMES_FROM_ADDED },
	{ "more frames than kept",
	  11,
	  { "ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "MODIFIED", "MODIFIED", "MODIFIED",
	    "MODIFIED", "MODIFIED", "MODIFIED", "MODIFIED" },
	  { "", "", "", "", "", "", "", "", "", "", "node-9" },
	  false,
	  "12 frames: ADDED nodeName \"\", MODIFIED nodeName \"\" x6, 4 more not kept, MODIFIED "
	  "nodeName \"node-1\"; 1 of 10 between changed nodeName (first: MODIFIED rev 1210 "
	  "nodeName \"node-9\")",
	  8,
	  4,
	  1,
	  FRAMES_FROM_ADDED },
};

static void check_frames(const struct frames_case *fc)
{
	const struct addresses *a = &runs[0];
	struct correlator_options opt = {
		PLAY_OPTIONS,
	};
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = correlator__new(&opt, on_bind, r);
	struct actor api_watcher =
			 actor(640, "kube-apiserver", ROLE_APISERVER, 2102, a->apiserver_watcher),
		     other = actor(640, "kube-apiserver", ROLE_APISERVER, 2103,
				   "[::1]:6443 [::1]:46005");
	const struct watcher *w;
	char line[WATCHER_CHECK_MAX];
	int i;

	CHECK(r && c, "%s: correlator", fc->name);
	if (!r || !c)
		goto out;
	/* Frames long before the bind (negative offsets from its start), and another watch's
	 * ADDED of the pod, which is not this one's. */
	watch_frame(c, &other, CONN_DIR_OUT, 0, 1, "ADDED", "", 1200);
	for (i = 0; i < fc->n; i++)
		watch_frame(c, &api_watcher, CONN_DIR_OUT, 10 + (uint64_t)i, 11 + (uint64_t)i,
			    fc->types[i], fc->nodes[i], 1200 + i);
	if (fc->loss)
		correlator__loss(c, 640, 2102, B + 30 * US);
	/* The bind itself, after them. */
	play(c, a);
	correlator__tick(c, B + 10000000 * US, true);
	CHECK(r->binds == 1 && r->t.n_watchers == 1, "%s: one bind, one watcher (%d, %d)", fc->name,
	      r->binds, r->t.n_watchers);
	if (r->binds != 1 || r->t.n_watchers != 1)
		goto out;
	w = &r->t.watchers[0];
	watcher__frames_check(line, sizeof(line), w);
	CHECK(strcmp(line, fc->want) == 0, "%s: check line\n  got  %s\n  want %s", fc->name, line,
	      fc->want);
	CHECK(w->n_frames == fc->kept && w->frames_not_kept == fc->not_kept &&
		  w->frames_changed == fc->changed && w->frames_start == fc->start,
	      "%s: %d kept, %d not kept, %d changed, start %s", fc->name, w->n_frames,
	      w->frames_not_kept, w->frames_changed, frames_start__name(w->frames_start));
	CHECK(w->n_frames && !strcmp(w->frames[w->n_frames - 1].node, "node-1") &&
		  w->frames[w->n_frames - 1].revision == REVISION &&
		  w->frames[w->n_frames - 1].received_ns,
	      "%s: the last frame is the bind's, received", fc->name);
	CHECK(strstr(r->json, "\"frames_check\":\"") != NULL, "%s: frames_check in the JSON",
	      fc->name);
out:
	correlator__free(c);
	free(r);
}

/* How the create's request is given to the correlator. */
enum create_mode {
	CREATE_READ,	   /* the apiserver's Read of the POST */
	CREATE_HEADERLESS, /* ... without its method and path */
	/* Not captured (the apiserver's Reads not probed, the client not traced): its read(2)s of
	 * the client's connection at 1, 2 and 5 us, the create Txn written at 3 us. */
	CREATE_FROM_READS,
	CREATE_FROM_TXN,	/* ... no read(2) of that connection seen */
	CREATE_NO_READS_OPTION, /* ... but the correlator was not told to time creates so */
	/* Not captured, and the apiserver's 201 on a connection opened before attaching: its
	 * status not decoded (HTTP/2 header state unknown). */
	CREATE_HEADERLESS_ANSWER,
};

/* The pod's create, as the apiserver read it: a generateName'd pod's POST is named by its 201 on
 * the same stream; a Pod read without method and path (a connection opened before attaching)
 * leaves create_request missing, saying so; the create Txn and its answer make it a pod created
 * while traced. A create whose request is not captured is bounded by the last read(2) of its
 * connection before the create Txn (else by the Txn), and says it is a bound. */
static void check_create(bool generated, enum create_mode mode)
{
	bool headerless = mode == CREATE_HEADERLESS;
	bool unread = mode >= CREATE_FROM_READS;
	const struct addresses *a = &runs[0];
	struct correlator_options opt = {
		PLAY_OPTIONS,
		/* off where the correlator must not time creates by read(2)s */
		.create_from_reads = mode != CREATE_HEADERLESS && mode != CREATE_NO_READS_OPTION,
	};
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = correlator__new(&opt, on_bind, r);
	const struct stage *cr;
	struct actor client = actor(640, "kube-apiserver", ROLE_APISERVER, 2200,
				    "[::1]:6443 [::1]:47000"),
		     api_etcd =
			 actor(640, "kube-apiserver", ROLE_APISERVER, 2002, a->apiserver_etcd);
	struct decoded_msg *m;
	const char *name = generated ? "web-" : "web-0";

	CHECK(r && c, "correlator");
	if (!r || !c)
		goto out;
	m = message(DECODED_REQUEST, CONN_DIR_IN, 11, 1, 2);
	if (!headerless) {
		snprintf(m->http.method, sizeof(m->http.method), "POST");
		snprintf(m->http.path, sizeof(m->http.path), "/api/v1/namespaces/default/pods");
	}
	m->body_kind = BODY_K8S;
	m->body.k8s.kind = K8S_KIND_POD;
	m->body.k8s.meta.generated_name = generated;
	snprintf(m->body.k8s.meta.namespace, sizeof(m->body.k8s.meta.namespace), "default");
	snprintf(m->body.k8s.meta.name, sizeof(m->body.k8s.meta.name), "%s", name);
	if (!unread)
		correlator__message(c, &client, m);
	if (mode != CREATE_FROM_TXN) {
		correlator__conn_read(c, client.pid, client.conn, B + 1 * US);
		correlator__conn_read(c, client.pid, client.conn, B + 2 * US);
		correlator__conn_read(c, client.pid, client.conn + 1, B + 2500);
	}
	m = message(DECODED_GRPC_REQUEST, CONN_DIR_OUT, 9, 3, 4);
	m->body_kind = BODY_ETCD_TXN;
	snprintf(m->body.txn.compare_key, sizeof(m->body.txn.compare_key), POD_KEY);
	m->body.txn.has_put = true;
	snprintf(m->body.txn.put.key, sizeof(m->body.txn.put.key), POD_KEY);
	correlator__message(c, &api_etcd, m);
	if (mode != CREATE_FROM_TXN)
		correlator__conn_read(c, client.pid, client.conn, B + 5 * US);
	m = message(DECODED_GRPC_RESPONSE, CONN_DIR_IN, 9, 5, 6);
	m->body_kind = BODY_ETCD_TXN_RESPONSE;
	m->body.txn_response.header.revision = REVISION - 10;
	m->body.txn_response.succeeded = true;
	correlator__message(c, &api_etcd, m);
	m = message(DECODED_RESPONSE, CONN_DIR_OUT, 11, 7, 8);
	m->http.status = mode == CREATE_HEADERLESS_ANSWER ? 0 : 201;
	m->body_kind = BODY_K8S;
	m->body.k8s.kind = K8S_KIND_POD;
	snprintf(m->body.k8s.meta.namespace, sizeof(m->body.k8s.meta.namespace), "default");
	snprintf(m->body.k8s.meta.name, sizeof(m->body.k8s.meta.name), "web-0");
	correlator__message(c, &client, m);
	play(c, a);
	correlator__tick(c, B + 10000000 * US, true);
	CHECK(r->binds == 1, "create (generated %d, mode %d): one bind", generated, mode);
	CHECK(!r->t.created_before_attach && r->t.create_revision == REVISION - 10,
	      "create (generated %d, mode %d): created while traced, at %lld", generated, mode,
	      (long long)r->t.create_revision);
	cr = &r->t.stages[STAGE_CREATE_REQUEST];
	if (mode == CREATE_FROM_READS || mode == CREATE_FROM_TXN) {
		uint64_t want = mode == CREATE_FROM_READS ? B + 2 * US : B + 3 * US;

		CHECK(cr->seen && cr->mono_ns == want && cr->who.conn == client.conn &&
			  cr->who.role == ROLE_APISERVER &&
			  cr->timing == (mode == CREATE_FROM_READS ? STAGE_TIMED_READ_BY_LAST_READ
								   : STAGE_TIMED_READ_BY_TXN),
		      "create from reads (generated %d, mode %d): create_request bounded at %llu, "
		      "want %llu (timing %d, %s)",
		      generated, mode, (unsigned long long)cr->mono_ns, (unsigned long long)want,
		      cr->timing, cr->missing);
		CHECK(strstr(r->json, "\"timing\":\"upper_bound_") &&
			  strstr(r->json, "\"timing_note\":\"read by then at the latest"),
		      "create from reads (mode %d): the JSON says it is a bound", mode);
	} else if (mode == CREATE_NO_READS_OPTION) {
		CHECK(!cr->seen, "reads not told: create_request not made up (at %llu)",
		      (unsigned long long)cr->mono_ns);
	} else if (headerless || mode == CREATE_HEADERLESS_ANSWER)
		CHECK(!r->t.stages[STAGE_CREATE_REQUEST].seen &&
			  strstr(r->t.stages[STAGE_CREATE_REQUEST].missing,
				 "predates bindtrace's attach"),
		      "headerless create: create_request missing, saying why: '%s'",
		      r->t.stages[STAGE_CREATE_REQUEST].missing);
	else
		CHECK(r->t.stages[STAGE_CREATE_REQUEST].seen &&
			  r->t.stages[STAGE_CREATE_REQUEST].mono_ns == B + 2 * US &&
			  r->t.stages[STAGE_CREATE_REQUEST].timing == STAGE_TIMED_MESSAGE &&
			  !strstr(r->json, "\"timing\""),
		      "create (generated %d): create_request seen at the POST (%s)", generated,
		      r->t.stages[STAGE_CREATE_REQUEST].missing);
out:
	correlator__free(c);
	free(r);
}

/* A pod's create POST as the apiserver read it (its create_request stage), at first_us. */
static void create_post(struct correlator *c, const struct actor *who, const char *name,
			uint64_t first_us);

/* The apiserver's create Txn of pod `name` on stream, at us. */
static void create_txn(struct correlator *c, const struct actor *who, const char *name,
		       uint32_t stream, uint64_t us)
{
	struct decoded_msg *m = message(DECODED_GRPC_REQUEST, CONN_DIR_OUT, stream, us, us);

	m->body_kind = BODY_ETCD_TXN;
	snprintf(m->body.txn.compare_key, sizeof(m->body.txn.compare_key),
		 "/registry/pods/default/%s", name);
	m->body.txn.has_put = true;
	snprintf(m->body.txn.put.key, sizeof(m->body.txn.put.key), "/registry/pods/default/%s",
		 name);
	correlator__message(c, who, m);
}

enum answer_case {
	ANSWER_UNMATCHED, /* etcd's answer on another stream than the Txn's */
	ANSWER_NO_TXN,	  /* no create Txn decoded */
	ANSWER_PUSHED_OUT /* 300 other creates' Txns came before its answer */
};

/* A pod created while traced whose create_txn_response is missing says why: whether its Txn was
 * decoded and at which end; creates pushed out of the table unanswered are counted. */
static void check_create_answer_missing(enum answer_case how)
{
	const struct addresses *a = &runs[0];
	struct correlator_options opt = { PLAY_OPTIONS };
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = correlator__new(&opt, on_bind, r);
	struct actor client = actor(640, "kube-apiserver", ROLE_APISERVER, 2200,
				    "[::1]:6443 [::1]:47000"),
		     api_etcd =
			 actor(640, "kube-apiserver", ROLE_APISERVER, 2002, a->apiserver_etcd);
	const char *want =
	    how == ANSWER_NO_TXN ? "was not decoded at either end"
	    : how == ANSWER_PUSHED_OUT
		? "after the Txn was pushed out (counted at exit)"
		: "(the create's Txn: the apiserver wrote it; etcd's read not decoded)";
	struct correlator_stats st;
	struct decoded_msg *m;
	char other[32];
	int i;

	CHECK(r && c, "correlator");
	if (!r || !c)
		goto out;
	create_post(c, &client, "web-0", 1);
	if (how != ANSWER_NO_TXN)
		create_txn(c, &api_etcd, "web-0", 9, 3);
	for (i = 0; how == ANSWER_PUSHED_OUT && i < 300; i++) {
		snprintf(other, sizeof(other), "other-%d", i);
		create_txn(c, &api_etcd, other, 101 + 2 * (uint32_t)i, 4);
	}
	m = message(DECODED_GRPC_RESPONSE, CONN_DIR_IN, how == ANSWER_UNMATCHED ? 13 : 9, 5, 6);
	m->body_kind = BODY_ETCD_TXN_RESPONSE;
	m->body.txn_response.header.revision = REVISION - 10;
	m->body.txn_response.succeeded = true;
	correlator__message(c, &api_etcd, m);
	play(c, a);
	correlator__tick(c, B + 10000000 * US, true);
	correlator__stats(c, &st);
	CHECK(r->binds == 1 && !r->t.created_before_attach &&
		  !r->t.stages[STAGE_CREATE_TXN_RESPONSE].seen &&
		  strstr(r->t.stages[STAGE_CREATE_TXN_RESPONSE].missing, want),
	      "create answer missing (case %d): said why, '%s' (want '%s')", how,
	      r->t.stages[STAGE_CREATE_TXN_RESPONSE].missing, want);
	CHECK(st.create_txns_pushed_out == (how == ANSWER_PUSHED_OUT ? 301 - 256 : 0),
	      "create answer missing (case %d): %llu creates pushed out unanswered", how,
	      (unsigned long long)st.create_txns_pushed_out);
out:
	correlator__free(c);
	free(r);
}

static void create_post(struct correlator *c, const struct actor *who, const char *name,
			uint64_t first_us)
{
	struct decoded_msg *m = message(DECODED_REQUEST, CONN_DIR_IN, 11, first_us, first_us);

	snprintf(m->http.method, sizeof(m->http.method), "POST");
	snprintf(m->http.path, sizeof(m->http.path), "/api/v1/namespaces/default/pods");
	m->body_kind = BODY_K8S;
	m->body.k8s.kind = K8S_KIND_POD;
	snprintf(m->body.k8s.meta.namespace, sizeof(m->body.k8s.meta.namespace), "default");
	snprintf(m->body.k8s.meta.name, sizeof(m->body.k8s.meta.name), "%s", name);
	correlator__message(c, who, m);
}

static void pending_counts(struct correlator *c, size_t *pending, uint64_t *evicted,
			   uint64_t *expired)
{
	struct correlator_stats st;

	correlator__stats(c, &st);
	*pending = st.pending;
	*evicted = st.pending_evicted;
	*expired = st.pending_expired;
}

/* The pods created and not yet bound, found by their key's hash chain: at most max_pending,
 * the oldest evicted beyond; a pod seen again keeps its slot; an evicted or expired one is new
 * when seen again (a slot left its chain when it was dropped). */
static void check_pending_table(void)
{
	struct correlator_options opt = {
		PLAY_OPTIONS,
		.max_pending = 4,
		.pending_max_age_ns = 1000000000ull,
	};
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = correlator__new(&opt, on_bind, r);
	struct actor client =
	    actor(640, "kube-apiserver", ROLE_APISERVER, 2200, "[::1]:6443 [::1]:47000");
	uint64_t evicted, expired;
	size_t pending;
	char name[16];
	int i;

	CHECK(r && c, "correlator");
	if (!r || !c)
		goto out;
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		create_post(c, &client, name, 10 + (uint64_t)i);
	}
	pending_counts(c, &pending, &evicted, &expired);
	CHECK(pending == 4 && evicted == 6, "10 creates, room for 4: %zu pending, %llu evicted",
	      pending, (unsigned long long)evicted);
	create_post(c, &client, "p9", 30);
	create_post(c, &client, "p6", 31);
	pending_counts(c, &pending, &evicted, &expired);
	CHECK(pending == 4 && evicted == 6,
	      "p9 and p6 seen again: still theirs (%zu, %llu evicted)", pending,
	      (unsigned long long)evicted);
	create_post(c, &client, "p0", 32);
	pending_counts(c, &pending, &evicted, &expired);
	CHECK(pending == 4 && evicted == 7, "p0, evicted, is new: %zu pending, %llu evicted",
	      pending, (unsigned long long)evicted);
	correlator__tick(c, B + 5000000 * US, false);
	pending_counts(c, &pending, &evicted, &expired);
	CHECK(pending == 0 && expired == 4, "all expired: %zu pending, %llu expired", pending,
	      (unsigned long long)expired);
	create_post(c, &client, "p9", 5000001);
	create_post(c, &client, "p9", 5000002);
	pending_counts(c, &pending, &evicted, &expired);
	CHECK(pending == 1 && evicted == 7, "p9 after expiry: one new slot (%zu, %llu evicted)",
	      pending, (unsigned long long)evicted);
out:
	correlator__free(c);
	free(r);
}

/* One tracer per node (--node): on a node whose apiserver did not serve the Binding, the write
 * reaches its apiserver only through its etcd member's watch, and fans out to its watchers. It
 * is emitted once, as served elsewhere: bound, the UID and revision from etcd's event, the
 * watcher's legs, the other stages explained and not counted missing. Without node scope
 * nothing is emitted, as before; and on the node that served it, one bind as ever. */
static void check_node_scope(void)
{
	const struct addresses *a = &runs[0];
	struct correlator_options opt = {
		PLAY_OPTIONS,
		.node = "cp-2",
		.node_scope = true,
	};
	struct actor api_watch =
			 actor(641, "kube-apiserver", ROLE_APISERVER, 2003, a->apiserver_watch),
		     api_watcher =
			 actor(641, "kube-apiserver", ROLE_APISERVER, 2102, a->apiserver_watcher),
		     watcher = actor(7000, "kube-scheduler", ROLE_WATCHER, 4001, a->watcher_end);
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c;
	const struct bind_timeline *t = &r->t;
	int s;

	CHECK(r != NULL, "result");
	if (!r)
		return;
	for (int scoped = 0; scoped < 2; scoped++) {
		opt.node_scope = scoped;
		memset(r, 0, sizeof(*r));
		c = correlator__new(&opt, on_bind, r);
		CHECK(c != NULL, "correlator");
		if (!c)
			break;
		etcd_watch(c, &api_watch, 1000, 1010);
		/* The event's value names the pod and its UID, as etcd's watch of the write does. */
		watch_event(c, &api_watcher, CONN_DIR_OUT, 1300, 1310);
		watch_event(c, &watcher, CONN_DIR_IN, 1400, 1410);
		correlator__tick(c, B + 10000000 * US, true);
		correlator__free(c);
		if (!scoped) {
			CHECK(r->binds == 0, "no node scope: nothing emitted, got %d", r->binds);
			continue;
		}
		CHECK(r->binds == 1, "node scope: one bind, got %d", r->binds);
		CHECK(t->served_elsewhere, "served elsewhere");
		CHECK(t->result == BIND_RESULT_BOUND, "bound (%s)", bind_result__name(t->result));
		CHECK_INT(t->revision, REVISION);
		CHECK_STR(t->node, "node-1");
		CHECK_STR(t->uid, "7c9e6679-7425-40de-944b-e07fc1f90ae7");
		CHECK(t->stages[STAGE_ETCD_WATCH_EVENT].seen, "etcd's watch event");
		CHECK(t->n_watchers == 1 && t->watchers[0].received.seen,
		      "the watcher's delivery (%d watchers)", t->n_watchers);
		CHECK(t->missing == 0, "nothing counted missing, got %d", t->missing);
		for (s = STAGE_BIND_REQUEST; s < STAGE_MAX; s++)
			if (s != STAGE_ETCD_WATCH_EVENT)
				CHECK(strstr(t->stages[s].missing,
					     "served by another node's apiserver") &&
					  strstr(t->stages[s].missing, "not on cp-2"),
				      "%s: %s", stage__name(s), t->stages[s].missing);
		CHECK(strstr(r->json, "\"served_elsewhere\":true") != NULL, "in the JSON");
	}

	/* The node that served it: one bind, not served elsewhere, as without node scope. */
	memset(r, 0, sizeof(*r));
	opt.node = "cp-1";
	c = correlator__new(&opt, on_bind, r);
	if (c) {
		play(c, a);
		correlator__tick(c, B + 10000000 * US, true);
		correlator__free(c);
		CHECK(r->binds == 1 && !t->served_elsewhere && t->missing == 0,
		      "the serving node: %d binds, served elsewhere %d, %d missing", r->binds,
		      t->served_elsewhere, t->missing);
	}
	free(r);
}

/* The observation ring (16384) wrapped before the bind, twice over, by fsyncs in the same chain
 * as the bind's: the bind is still whole, its fsync found among them. Then a flood right after
 * the apiserver's Txn pushes that Txn out of the ring: its stage is missing, says it may have
 * been pushed out (counted), nothing stale is taken in its place, and the rest is still found.
 * A bind answered 201 whose etcd watch event never comes says how long it waited for it. */
static void check_ring_wrap(void)
{
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = r ? fresh_correlator(r, "ring wrap") : NULL;
	const struct bind_timeline *t = &r->t;
	struct correlator_stats stats;

	CHECK(r != NULL, "ring wrap: result");
	if (!c)
		goto out;
	flood(c, 590, 2 * 16384 + 7);
	play(c, &runs[0]);
	correlator__tick(c, B + 10000000 * US, true);
	CHECK(r->binds == 1, "ring wrap: one bind, got %d", r->binds);
	CHECK(t->missing == 0, "ring wrap: nothing missing, got %d", t->missing);
	CHECK(t->stages[STAGE_ETCD_WAL_FSYNC].mono_ns == B + 650 * US,
	      "ring wrap: the bind's WAL fsync, not a flood's");
	CHECK(t->stages[STAGE_ETCD_TXN_RESPONSE].who.conn == 3001,
	      "ring wrap: etcd's response on the Txn's stream");
	correlator__free(c);

	c = fresh_correlator(r, "pushed out");
	if (!c)
		goto out;
	play_flooded(c, &runs[0], 16384);
	correlator__tick(c, B + 10000000 * US, true);
	CHECK(r->binds == 1, "pushed out: one bind, got %d", r->binds);
	CHECK(!t->stages[STAGE_ETCD_TXN_SENT].seen, "pushed out: etcd_txn_sent missing");
	CHECK(t->stages[STAGE_ETCD_WATCH_EVENT].seen && t->stages[STAGE_BIND_RESPONSE].seen,
	      "pushed out: what came after it still found");
	CHECK(t->n_watchers == 1 && t->watchers[0].received.who.conn == 4001,
	      "pushed out: the watcher found");
	CHECK(strstr(t->stages[STAGE_ETCD_TXN_SENT].missing,
		     "may have been pushed out of the correlator's ring") != NULL,
	      "pushed out: said so, got \"%s\"", t->stages[STAGE_ETCD_TXN_SENT].missing);
	correlator__stats(c, &stats);
	CHECK_INT(stats.ring_wrapped, 1);
	correlator__free(c);

	/* Answered 201, etcd's watch event never seen: the bind waits for it, then says so. */
	c = fresh_correlator(r, "no watch event");
	if (!c)
		goto out;
	play_to_watch_event_of(c, &runs[0], 0, false);
	correlator__tick(c, B + 10000000 * US, true);
	CHECK(r->binds == 1 && !t->stages[STAGE_ETCD_WATCH_EVENT].seen,
	      "no watch event: one bind (%d), its etcd_watch_event missing", r->binds);
	CHECK(strncmp(t->stages[STAGE_ETCD_WATCH_EVENT].missing, "not seen in the ", 16) == 0 &&
		  strstr(t->stages[STAGE_ETCD_WATCH_EVENT].missing,
			 " s the bind stayed open after its answer") != NULL,
	      "no watch event: said so, got \"%s\"", t->stages[STAGE_ETCD_WATCH_EVENT].missing);
	CHECK(t->stages[STAGE_ETCD_TXN_SENT].seen, "no watch event: the rest found");
	correlator__stats(c, &stats);
	CHECK_INT(stats.ring_wrapped, 0);
out:
	correlator__free(c);
	free(r);
}

/* A bind across an etcd leader change (test-ha-leader-kill): its Txn went to a member whose
 * proposal died with the leader; the apiserver answered 409 after etcd's request timeout; the
 * scheduler gave up that attempt (PodScheduled False, SchedulerError) and retried. */
enum failed_case {
	FAILED_ERROR_ANSWER,  /* the member answered gRPC 14 "etcdserver: request timed out" */
	FAILED_MEMBER_EXITED, /* the member's process exited; no answer */
	FAILED_UNSCHEDULABLE, /* a give-up with reason Unschedulable: still the pod fits no node */
};

struct failed_result {
	int binds;
	struct bind_timeline t[3];
	char json[3][16384];
};

static void on_failed_bind(const struct bind_timeline *t, void *ctx)
{
	struct failed_result *r = ctx;
	struct bind_view view;
	FILE *f;

	if (r->binds >= 3) {
		r->binds++;
		return;
	}
	r->t[r->binds] = *t;
	f = fmemopen(r->json[r->binds], sizeof(r->json[0]) - 1, "w");
	if (f) {
		bind_view__init(&view, t, 0);
		timeline__print_json(f, &view);
		fclose(f);
	}
	r->binds++;
}

static void status_patch(struct correlator *c, const struct actor *sched, enum decoded_kind kind,
			 uint64_t first_us, const char *reason, const char *text)
{
	struct decoded_msg *m = message(kind, kind == DECODED_REQUEST ? CONN_DIR_OUT : CONN_DIR_IN,
					9, first_us, first_us + 10);
	struct k8s_pod *p = &m->body.k8s.pod;

	snprintf(m->http.method, sizeof(m->http.method), "PATCH");
	snprintf(m->http.path, sizeof(m->http.path),
		 "/api/v1/namespaces/default/pods/web-0/status");
	if (kind == DECODED_RESPONSE)
		m->http.status = 200;
	m->body_kind = BODY_K8S;
	m->body.k8s.kind = K8S_KIND_POD;
	p->has_scheduled = true;
	snprintf(p->scheduled_status, sizeof(p->scheduled_status), "False");
	snprintf(p->scheduled_reason, sizeof(p->scheduled_reason), "%s", reason);
	snprintf(p->scheduled_message, sizeof(p->scheduled_message), "%s", text);
	correlator__message(c, sched, m);
}

static void conflict(struct correlator *c, const struct actor *who, enum conn_dir dir,
		     uint64_t first_us)
{
	struct decoded_msg *m = message(DECODED_RESPONSE, dir, 3, first_us, first_us + 20);

	snprintf(m->http.method, sizeof(m->http.method), "POST");
	snprintf(m->http.path, sizeof(m->http.path), POD_PATH);
	m->http.status = 409;
	m->body_kind = BODY_K8S;
	m->body.k8s.kind = K8S_KIND_STATUS;
	m->body.k8s.status.code = 409;
	snprintf(m->body.k8s.status.reason, sizeof(m->body.k8s.status.reason), "Conflict");
	correlator__message(c, who, m);
}

static void check_failed_bind(enum failed_case fc)
{
	static const char *const names[] = { "error answer", "member exited", "unschedulable" };
	const char *name = names[fc];
	struct failed_result *r = calloc(1, sizeof(*r));
	struct correlator_options opt = {
		.linger_ns = 100000000ull, /* 100 ms: the give-up comes 23 ms after the 409 */
		.max_open_ns = 1ull << 62,
		.have_scheduler = true,
		.have_apiserver = true,
		.have_etcd = true,
	};
	struct correlator *c = r ? correlator__new(&opt, on_failed_bind, r) : NULL;
	const struct addresses *a = &runs[0];
	struct actor sched = actor(812, "kube-scheduler", ROLE_SCHEDULER, 1001, a->scheduler),
		     api_in = actor(640, "kube-apiserver", ROLE_APISERVER, 2001, a->apiserver_in),
		     api_etcd =
			 actor(640, "kube-apiserver", ROLE_APISERVER, 2002, a->apiserver_etcd),
		     etcd_in = actor(590, "etcd", ROLE_ETCD, 3001, a->etcd_in);
	const char *why;
	struct decoded_msg *m;

	CHECK(r && c, "%s: correlator", name);
	if (!r || !c)
		goto out;
	binding(c, &sched, DECODED_REQUEST, CONN_DIR_OUT, 0, 20);
	binding(c, &api_in, DECODED_REQUEST, CONN_DIR_IN, 100, 400);
	txn(c, &api_etcd, CONN_DIR_OUT, 500, 520);
	txn(c, &etcd_in, CONN_DIR_IN, 600, 620);
	if (fc == FAILED_MEMBER_EXITED) {
		correlator__process_gone(c, 590, B + 2000 * US);
	} else {
		/* etcd's request timeout: trailers only, no TxnResponse. */
		m = message(DECODED_GRPC_RESPONSE, CONN_DIR_OUT, 7, 7000000, 7000010);
		snprintf(m->http.path, sizeof(m->http.path), "/etcdserverpb.KV/Txn");
		m->http.status = 200;
		m->http.grpc_status = 14;
		snprintf(m->http.grpc_message, sizeof(m->http.grpc_message),
			 "etcdserver: request timed out");
		correlator__message(c, &etcd_in, m);
	}
	conflict(c, &api_in, CONN_DIR_OUT, 7000100);
	conflict(c, &sched, CONN_DIR_IN, 7000200);
	status_patch(
	    c, &sched, DECODED_REQUEST, 7023000,
	    fc == FAILED_UNSCHEDULABLE ? "Unschedulable" : "SchedulerError",
	    fc == FAILED_UNSCHEDULABLE
		? "0/2 nodes are available"
		: "running Bind plugin \"DefaultBinder\": Operation cannot be fulfilled on "
		  "pods/binding \"web-0\": etcdserver: request timed out");
	status_patch(c, &sched, DECODED_RESPONSE, 7024000,
		     fc == FAILED_UNSCHEDULABLE ? "Unschedulable" : "SchedulerError", "");
	correlator__tick(c, B + 20000000 * US, true);
	CHECK(r->binds == 2, "%s: the 409 and the give-up, got %d", name, r->binds);
	if (r->binds != 2)
		goto out;
	CHECK(r->t[0].result == BIND_RESULT_CONFLICT, "%s: the bind: %s", name,
	      bind_result__name(r->t[0].result));
	why = r->t[0].stages[STAGE_ETCD_TXN_RESPONSE].missing;
	CHECK(strstr(why, "no etcd write (409): Txn sent to etcd pid 590 at +0.5 ms; ") == why,
	      "%s: where the Txn went: %s", name, why);
	if (fc == FAILED_MEMBER_EXITED) {
		CHECK(strstr(why, "; that member exited (seen at +2.0 ms); no answer seen") != NULL,
		      "%s: no answer, the member exited: %s", name, why);
		CHECK(strstr(r->json[0],
			     "\"etcd_pid\":590,\"member_exited_mono_ns\":1000002000000") != NULL,
		      "%s: the attempt's member in the JSON: %s", name, r->json[0]);
	} else {
		CHECK(strstr(why, "; answered at +7000.0 ms: gRPC 14 etcdserver: request timed "
				  "out") != NULL,
		      "%s: etcd's error answer: %s", name, why);
		CHECK(strstr(r->json[0], "\"grpc_status\":14,\"grpc_message\":\"etcdserver: "
					 "request timed out\"") != NULL,
		      "%s: the error answer in the JSON: %s", name, r->json[0]);
	}
	CHECK(!strcmp(r->t[0].stages[STAGE_ETCD_WAL_FSYNC].missing, why),
	      "%s: the fsync says the same: %s", name,
	      r->t[0].stages[STAGE_ETCD_WAL_FSYNC].missing);
	why = r->t[1].stages[STAGE_APISERVER_RECEIVED].missing;
	if (fc == FAILED_UNSCHEDULABLE) {
		CHECK(r->t[1].result == BIND_RESULT_UNSCHEDULABLE, "%s: the give-up: %s", name,
		      bind_result__name(r->t[1].result));
		CHECK(!strcmp(why, "no Binding: the pod fits no node"), "%s: %s", name, why);
		goto out;
	}
	CHECK(r->t[1].result == BIND_RESULT_SCHEDULER_ERROR, "%s: the give-up: %s", name,
	      bind_result__name(r->t[1].result));
	CHECK(!strcmp(why, "no Binding in this attempt: the scheduler gave up after its bind "
			   "failed (409, timeline 1); it will retry the pod"),
	      "%s: the give-up's reason: %s", name, why);
	CHECK(strstr(r->json[1], "\"result\":\"scheduler_error\"") &&
		  strstr(r->json[1], "\"failed_bind\":{\"seq\":1,\"status_code\":409}"),
	      "%s: the give-up in the JSON: %.300s", name, r->json[1]);
	CHECK(r->t[1].missing == 0, "%s: the give-up misses nothing, got %d", name,
	      r->t[1].missing);
out:
	correlator__free(c);
	free(r);
}

/* A watch event whose receipt had not come when its bind closed: "the watcher is not traced"
 * unless a pod watch event was read on that connection before the event was sent; then it was
 * read late (in a burst the apiserver's fan-out can trail etcd's event by over a second, past
 * the linger), counted. An earlier read of the decoy's connection does not count, nor a read
 * that came after the event was sent (a watcher traced since then). */
enum receipt_case {
	RECEIPT_NONE_BEFORE,
	RECEIPT_READ_BEFORE,
	RECEIPT_DECOY_BEFORE,
	RECEIPT_READ_AFTER
};

static void check_late_receipt(enum receipt_case rc)
{
	static const char *const names[] = { "no read before", "a read before",
					     "the decoy's read before",
					     "a read after it was sent" };
	static const char late_reason[] =
	    "not read by the time the bind closed (the watcher's reads are traced; --linger, ";
	const struct addresses *a = &runs[0];
	struct actor watcher = actor(7000, "kubectl", ROLE_WATCHER, 4001, a->watcher_end),
		     decoy = actor(7001, "kubectl", ROLE_WATCHER, 4002, a->watcher_decoy);
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = full_correlator(r);
	struct correlator_stats stats;
	const char *why;
	bool late = rc == RECEIPT_READ_BEFORE;

	CHECK(r && c, "late receipt: correlator");
	if (!r || !c)
		goto out;
	/* The pod's ADDED, read before the bind (as a watcher that listed it would). */
	if (rc == RECEIPT_READ_BEFORE || rc == RECEIPT_DECOY_BEFORE)
		watch_frame(c, rc == RECEIPT_DECOY_BEFORE ? &decoy : &watcher, CONN_DIR_IN, 40, 50,
			    "ADDED", "", REVISION - 10);
	play_to_watch_event(c, a, 0);
	if (rc == RECEIPT_READ_AFTER)
		watch_frame(c, &watcher, CONN_DIR_IN, 1350, 1360, "ADDED", "", REVISION - 10);
	correlator__tick(c, B + 10000000 * US, true);
	correlator__stats(c, &stats);
	CHECK(r->binds == 1 && r->t.n_watchers == 1, "%s: one bind, one watcher (%d, %d)",
	      names[rc], r->binds, r->t.n_watchers);
	if (r->binds != 1 || r->t.n_watchers != 1)
		goto out;
	why = r->t.watchers[0].received.missing;
	CHECK(!r->t.watchers[0].received.seen, "%s: no receipt", names[rc]);
	if (late)
		CHECK(strncmp(why, late_reason, strlen(late_reason)) == 0,
		      "%s: read late, got \"%s\"", names[rc], why);
	else
		CHECK(strcmp(why, "the watcher is not traced") == 0, "%s: not traced, got \"%s\"",
		      names[rc], why);
	CHECK((int)stats.receipts_late == late, "%s: %d counted late, got %llu", names[rc],
	      (int)late, (unsigned long long)stats.receipts_late);
out:
	correlator__free(c);
	free(r);
}

/* The apiserver's fan-out after the bind closed: a watch event of the bind's revision sent then
 * goes to a watcher the timeline cannot list, and is counted; another revision, or a receipt,
 * is not. */
static void check_sent_after_close(void)
{
	const struct addresses *a = &runs[0];
	struct actor api_watcher =
			 actor(640, "kube-apiserver", ROLE_APISERVER, 2102, a->apiserver_watcher),
		     late =
			 actor(640, "kube-apiserver", ROLE_APISERVER, 2103, a->apiserver_watcher),
		     watcher = actor(7000, "kubectl", ROLE_WATCHER, 4001, a->watcher_end);
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = full_correlator(r);
	struct correlator_stats stats;

	CHECK(r && c, "sent after close: correlator");
	if (!r || !c)
		goto out;
	play(c, a);
	correlator__stats(c, &stats);
	CHECK_INT(stats.watch_sent_after_close, 0);
	correlator__tick(c, B + 10000000 * US, false);
	CHECK(r->binds == 1 && r->t.n_watchers == 1, "sent after close: one bind, one watcher");
	watch_event(c, &late, CONN_DIR_OUT, 10000100, 10000110);
	watch_event(c, &watcher, CONN_DIR_IN, 10000200, 10000210);
	watch_frame(c, &api_watcher, CONN_DIR_OUT, 10000300, 10000310, "MODIFIED", "node-1",
		    REVISION + 1);
	correlator__stats(c, &stats);
	CHECK(stats.watch_sent_after_close == 1, "sent after close: 1 counted, got %llu",
	      (unsigned long long)stats.watch_sent_after_close);
out:
	correlator__free(c);
	free(r);
}

int main(void)
{
	size_t i;

	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
		check_run(&runs[i]);
	for (i = 0; i < sizeof(frames_cases) / sizeof(frames_cases[0]); i++)
		check_frames(&frames_cases[i]);
	check_create(false, CREATE_READ);
	check_create(true, CREATE_READ);
	check_create(false, CREATE_HEADERLESS);
	check_create(false, CREATE_FROM_READS);
	check_create(true, CREATE_FROM_READS);
	check_create(false, CREATE_FROM_TXN);
	check_create(false, CREATE_NO_READS_OPTION);
	check_create(false, CREATE_HEADERLESS_ANSWER);
	check_create_answer_missing(ANSWER_UNMATCHED);
	check_create_answer_missing(ANSWER_NO_TXN);
	check_create_answer_missing(ANSWER_PUSHED_OUT);
	check_pending_table();
	check_node_scope();
	check_ring_wrap();
	check_failed_bind(FAILED_ERROR_ANSWER);
	check_failed_bind(FAILED_MEMBER_EXITED);
	check_failed_bind(FAILED_UNSCHEDULABLE);
	check_late_receipt(RECEIPT_NONE_BEFORE);
	check_late_receipt(RECEIPT_READ_BEFORE);
	check_late_receipt(RECEIPT_DECOY_BEFORE);
	check_late_receipt(RECEIPT_READ_AFTER);
	check_sent_after_close();
	return check_summary("correlate");
}
