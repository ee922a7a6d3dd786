/* The correlator's raft stages: one bind on an etcd of three members on one host (one tracer sees
 * them all), played as the decoders would hand it over: the apiserver's Txn read by a follower
 * (A), forwarded to the leader (L) in a MsgProp, the leader's MsgApp to both followers (msgappv2
 * AppEntries: no member ids on the wire, as met mid-stream), each member's WAL fsync, the
 * followers' MsgAppResp, the leader's commit index, then the answer. Checked: which member led
 * and answered, the quorum (the first two acknowledgements as the leader counts them), each
 * stage's time and each leg; a leader change (proposed to one member, appended by another at a
 * later term) named as such; the entry missing from the peer traffic said so and counted; and a
 * single member (no peer traffic) with no raft at all: no stage, leg or JSON of it.
 *
 * Then one tracer per node (node_scope), each given only its node's processes: the node of the
 * answering member, apiserver and scheduler (A) counts only what is there, the rest said to be
 * on other nodes; a node with only an etcd member, a follower (F) or the leader (L), emits the
 * bind from its raft entry alone (the first entry setting nodeName after the create's, which
 * had it empty), with the pod's UID from the entry's value, so its spans (member_append,
 * member_wal_fsync; the leader's quorum_fsync) go to the same trace as the other nodes'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bindview.h"
#include "check.h"
#include "correlate_play.h"
#include "correlate.h"
#include "otlp_encode.h"
#include "protobuf.h"
#include "timeline.h"

#define ID_A 0x8e9e05c52164694dull /* answering follower */
#define ID_L 0x91bc3c398fb3c146ull /* leader */
#define ID_F 0xfd422379fda50e48ull /* the other follower */
#define REQ_ID ((ID_A & 0xffff) << 48 | 0x5a1d00042ull)
#define INDEX 100
#define REQ_CREATE ((ID_A & 0xffff) << 48 | 0x5a1d00017ull)
#define POD_UID "7c9e6679-7425-40de-944b-e07fc1f90ae7"

enum scenario { NORMAL, LEADER_CHANGE, NO_ENTRY, SINGLE, NODE_A, NODE_F, NODE_L };

static struct raft_message rm;
/* F's process exited before the bind (killed): it takes no part, and nothing of it is missing. */
static bool f_gone;
/* One tracer per node: only the events of these processes reach the correlator (none: all). */
static pid_t here_pids[4];

static bool here(const struct actor *a)
{
	if (!here_pids[0])
		return true;
	for (int i = 0; i < 4 && here_pids[i]; i++)
		if (here_pids[i] == a->pid)
			return true;
	return false;
}

static void fsync_(struct correlator *c, const struct actor *who, uint64_t start_us,
		   uint64_t end_us)
{
	if (here(who))
		correlator__fsync(c, who, B + start_us * US, B + end_us * US, true, 0);
}

static struct actor etcd(pid_t pid, uint64_t conn)
{
	struct actor a = { .pid = pid, .role = ROLE_ETCD, .conn = conn };

	snprintf(a.comm, sizeof(a.comm), "etcd");
	return a;
}

static struct actor proc(pid_t pid, const char *comm, enum process_role role, uint64_t conn)
{
	struct actor a = { .pid = pid, .role = role, .conn = conn };

	snprintf(a.comm, sizeof(a.comm), "%s", comm);
	return a;
}

static void fill_txn(struct etcd_txn *t)
{
	snprintf(t->compare_key, sizeof(t->compare_key), POD_KEY);
	t->compare_revision = REVISION - 10;
	t->has_put = true;
	snprintf(t->put.key, sizeof(t->put.key), POD_KEY);
	t->put.value.kind = K8S_KIND_POD;
	snprintf(t->put.value.meta.uid, sizeof(t->put.value.meta.uid), POD_UID);
	snprintf(t->put.value.pod.node_name, sizeof(t->put.value.pod.node_name), "node-1");
}

static void txn(struct correlator *c, const struct actor *who, enum conn_dir dir, uint64_t first_us,
		uint64_t last_us)
{
	struct decoded_msg *m = message(DECODED_GRPC_REQUEST, dir, 7, first_us, last_us);

	if (!here(who))
		return;
	m->body_kind = BODY_ETCD_TXN;
	fill_txn(&m->body.txn);
	correlator__message(c, who, m);
}

static void txn_response(struct correlator *c, const struct actor *who, enum conn_dir dir,
			 uint64_t first_us, uint64_t last_us)
{
	struct decoded_msg *m = message(DECODED_GRPC_RESPONSE, dir, 7, first_us, last_us);

	if (!here(who))
		return;
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

	if (!here(who))
		return;
	m->body_kind = BODY_ETCD_WATCH_EVENT;
	snprintf(ev->kv.key, sizeof(ev->kv.key), POD_KEY);
	ev->kv.mod_revision = REVISION;
	ev->kv.value.kind = K8S_KIND_POD;
	snprintf(ev->kv.value.pod.node_name, sizeof(ev->kv.value.pod.node_name), "node-1");
	ev->has_prev_kv = true;
	correlator__message(c, who, m);
}

/* A raft message seen by who (dir OUT: it wrote it). ids false: an AppEntries frame met
 * mid-stream, without from and to. With entry: the bind's Txn at index/term. */
static void raft(struct correlator *c, const struct actor *who, enum conn_dir dir, uint32_t type,
		 uint64_t from, uint64_t to, bool ids, bool entry, uint64_t index, uint64_t term,
		 uint64_t commit, uint64_t us)
{
	struct decoded_msg *m = message(DECODED_RAFT_MESSAGE, dir, 1, us, us + 2);

	if (!here(who))
		return;
	memset(&rm, 0, sizeof(rm));
	m->proto = CONN_PROTO_HTTP1;
	m->body_kind = BODY_RAFT_MESSAGE;
	m->body.raft = &rm;
	rm.type = type;
	rm.ids_known = ids;
	rm.state_known = ids;
	rm.from = ids ? from : 0;
	rm.to = ids ? to : 0;
	rm.term = term;
	rm.index = index;
	rm.commit = commit;
	rm.last_part = true;
	if (entry) {
		struct raft_entry *e = &rm.entries[0];

		rm.n_entries = rm.entries_total = 1;
		e->request = RAFT_REQ_TXN;
		e->request_id = REQ_ID;
		e->index = index;
		e->term = term;
		fill_txn(&e->req.txn);
	}
	correlator__message(c, who, m);
}

/* The pod's create as the leader replicates it (AppEntries, no ids): nodeName empty. */
static void raft_create(struct correlator *c, const struct actor *who, enum conn_dir dir,
			uint64_t us)
{
	struct decoded_msg *m = message(DECODED_RAFT_MESSAGE, dir, 1, us, us + 2);
	struct raft_entry *e = &rm.entries[0];

	if (!here(who))
		return;
	memset(&rm, 0, sizeof(rm));
	m->proto = CONN_PROTO_HTTP1;
	m->body_kind = BODY_RAFT_MESSAGE;
	m->body.raft = &rm;
	rm.type = RAFT_MSG_APP;
	rm.commit = INDEX - 6;
	rm.last_part = true;
	rm.n_entries = rm.entries_total = 1;
	e->request = RAFT_REQ_TXN;
	e->request_id = REQ_CREATE;
	e->index = INDEX - 5;
	e->term = 5;
	fill_txn(&e->req.txn);
	e->req.txn.compare_revision = 0;
	e->req.txn.put.value.pod.node_name[0] = '\0';
	correlator__message(c, who, m);
}

struct result {
	int binds;
	struct bind_timeline t;
	char json[65536];
	char text[16384];
};

static void on_bind(const struct bind_timeline *t, void *ctx)
{
	struct result *r = ctx;
	FILE *f = fmemopen(r->json, sizeof(r->json) - 1, "w");
	FILE *g = fmemopen(r->text, sizeof(r->text) - 1, "w");
	struct bind_view view;

	r->binds++;
	r->t = *t;
	bind_view__init(&view, t, 0);
	if (f) {
		timeline__print_json(f, &view);
		fclose(f);
	}
	if (g) {
		timeline__print(g, &view);
		fclose(g);
	}
}

static void play(struct correlator *c, enum scenario sc)
{
	struct actor sched = proc(812, "kube-scheduler", ROLE_SCHEDULER, 1001),
		     api_in = proc(640, "kube-apiserver", ROLE_APISERVER, 2001),
		     api_etcd = proc(640, "kube-apiserver", ROLE_APISERVER, 2002),
		     api_watch = proc(640, "kube-apiserver", ROLE_APISERVER, 2003),
		     a_in = etcd(590, 3001), a_msg = etcd(590, 3010), a_app = etcd(590, 3011),
		     l_msg_a = etcd(591, 3020), l_msg_f = etcd(591, 3021),
		     l_app_a = etcd(591, 3022), l_app_f = etcd(591, 3023), f_msg = etcd(592, 3030),
		     f_app = etcd(592, 3031), a_fs = etcd(590, 0), l_fs = etcd(591, 0),
		     f_fs = etcd(592, 0);
	/* The member that appends: the leader, or after a change the former follower F. */
	struct actor *ld_app_a = sc == LEADER_CHANGE ? &f_app : &l_app_a;
	struct actor *ld_fs = sc == LEADER_CHANGE ? &f_fs : &l_fs;
	uint64_t ld = sc == LEADER_CHANGE ? ID_F : ID_L, term = sc == LEADER_CHANGE ? 6 : 5;

	/* The tracer knows each pid's member id from the heartbeats before the bind (the ids of
	 * the message stream are on the wire). Not for a single member: no peers. */
	if (sc != SINGLE) {
		raft_create(c, &l_app_a, CONN_DIR_OUT, 5);
		raft_create(c, &l_app_f, CONN_DIR_OUT, 6);
		raft_create(c, &a_app, CONN_DIR_IN, 7);
		raft_create(c, &f_app, CONN_DIR_IN, 8);
		raft(c, &l_msg_a, CONN_DIR_OUT, RAFT_MSG_HEARTBEAT, ID_L, ID_A, true, false, 0, 5,
		     INDEX - 1, 10);
		raft(c, &a_msg, CONN_DIR_IN, RAFT_MSG_HEARTBEAT, ID_L, ID_A, true, false, 0, 5,
		     INDEX - 1, 12);
		raft(c, &l_msg_f, CONN_DIR_OUT, RAFT_MSG_HEARTBEAT, ID_L, ID_F, true, false, 0, 5,
		     INDEX - 1, 11);
		raft(c, &f_msg, CONN_DIR_IN, RAFT_MSG_HEARTBEAT, ID_L, ID_F, true, false, 0, 5,
		     INDEX - 1, 13);
		if (f_gone)
			correlator__process_gone(c, 592, B + 14 * US);
	}
	if (here(&sched))
		binding(c, &sched, DECODED_REQUEST, CONN_DIR_OUT, f_gone ? 15 : 0, 20);
	if (here(&api_in))
		binding(c, &api_in, DECODED_REQUEST, CONN_DIR_IN, 100, 400);
	txn(c, &api_etcd, CONN_DIR_OUT, 500, 520);
	txn(c, &a_in, CONN_DIR_IN, 600, 620);
	if (sc == SINGLE) {
		fsync_(c, &a_fs, 650, 850);
		goto answer;
	}
	/* A forwards the proposal to L (the leader it knows). */
	raft(c, &a_msg, CONN_DIR_OUT, RAFT_MSG_PROP, ID_A, ID_L, true, sc != NO_ENTRY, 0, 0, 0,
	     630);
	raft(c, &l_msg_a, CONN_DIR_IN, RAFT_MSG_PROP, ID_A, ID_L, true, sc != NO_ENTRY, 0, 0, 0,
	     643);
	if (sc == NO_ENTRY) {
		fsync_(c, &a_fs, 670, 760);
		goto answer;
	}
	/* The leader appends: MsgApp to A (and to the other member), then its own WAL fsync. */
	raft(c, ld_app_a, CONN_DIR_OUT, RAFT_MSG_APP, ld, ID_A, false, true, INDEX, term, INDEX - 1,
	     650);
	if (sc == NORMAL)
		raft(c, &l_app_f, CONN_DIR_OUT, RAFT_MSG_APP, ID_L, ID_F, false, true, INDEX, term,
		     INDEX - 1, 651);
	raft(c, &a_app, CONN_DIR_IN, RAFT_MSG_APP, ld, ID_A, false, true, INDEX, term, INDEX - 1,
	     658);
	if (sc == NORMAL)
		raft(c, &f_app, CONN_DIR_IN, RAFT_MSG_APP, ID_L, ID_F, false, true, INDEX, term,
		     INDEX - 1, 659);
	/* A WAL fsync of the leader's that ended before its MsgApp: not the one holding it. */
	fsync_(c, ld_fs, 560, 640);
	fsync_(c, ld_fs, 655, 800);
	/* A fsyncs, acks; the leader reads the ack. */
	fsync_(c, &a_fs, 670, 760);
	raft(c, &a_msg, CONN_DIR_OUT, RAFT_MSG_APP_RESP, ID_A, ld, true, false, INDEX, term, 0,
	     765);
	raft(c, sc == LEADER_CHANGE ? &f_msg : &l_msg_a, CONN_DIR_IN, RAFT_MSG_APP_RESP, ID_A, ld,
	     true, false, INDEX, term, 0, 773);
	if (sc == NORMAL) {
		/* F: slower than the leader's own fsync (800): not in the quorum. */
		if (!f_gone)
			fsync_(c, &f_fs, 680, 790);
		raft(c, &f_msg, CONN_DIR_OUT, RAFT_MSG_APP_RESP, ID_F, ID_L, true, false, INDEX,
		     term, 0, 795);
		raft(c, &l_msg_f, CONN_DIR_IN, RAFT_MSG_APP_RESP, ID_F, ID_L, true, false, INDEX,
		     term, 0, 803);
	}
	/* The leader's commit-only MsgApp to A, A reads it. */
	raft(c, ld_app_a, CONN_DIR_OUT, RAFT_MSG_APP, ld, ID_A, false, false, INDEX, term, INDEX,
	     810);
	raft(c, &a_app, CONN_DIR_IN, RAFT_MSG_APP, ld, ID_A, false, false, INDEX, term, INDEX, 818);
answer:
	txn_response(c, &a_in, CONN_DIR_OUT, 900, 910);
	txn_response(c, &api_etcd, CONN_DIR_IN, 950, 960);
	etcd_watch(c, &api_watch, 1000, 1010);
	if (here(&api_in))
		binding(c, &api_in, DECODED_RESPONSE, CONN_DIR_OUT, 1100, 1120);
	if (here(&sched))
		binding(c, &sched, DECODED_RESPONSE, CONN_DIR_IN, 1200, 1220);
}

static void check_leg(const struct bind_timeline *t, enum leg_id leg, int64_t want_us)
{
	int64_t d = 0;

	CHECK(leg__duration(t, leg, -1, &d) && d == (int64_t)want_us * 1000,
	      "leg %s = %lld us, got %lld ns", leg__name(leg), (long long)want_us, (long long)d);
}

static void check(enum scenario sc)
{
	static const char *const names[] = { "normal", "leader change", "no entry", "single" };
	struct correlator_options opt = {
		PLAY_OPTIONS,
	};
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = correlator__new(&opt, on_bind, r);
	const struct bind_raft *ra = &r->t.raft;
	const char *name = names[sc];
	int k;

	CHECK(r && c, "%s: correlator", name);
	if (!r || !c)
		goto out;
	play(c, sc);
	correlator__tick(c, B + 10000000 * US, true);
	CHECK(r->binds == 1, "%s: one bind, got %d", name, r->binds);
	for (k = 0; k < STAGE_MAX; k++)
		if (!r->t.stages[k].seen && stage__counts_missing(&r->t, k))
			printf("  %s: %s missing: %s\n", name, stage__name(k),
			       r->t.stages[k].missing);
	if (sc == SINGLE) {
		CHECK(!ra->expected && !ra->seen, "%s: no raft", name);
		CHECK(r->t.missing == 0, "%s: nothing missing, got %d", name, r->t.missing);
		CHECK(strstr(r->json, "\"raft\"") == NULL && strstr(r->json, "propose") == NULL &&
			  strstr(r->json, "quorum_fsync") == NULL,
		      "%s: no raft in the JSON", name);
		CHECK(strstr(r->text, "raft") == NULL, "%s: no raft in the timeline", name);
		goto out;
	}
	CHECK(ra->expected, "%s: raft expected (3 members in sight)", name);
	CHECK_INT(ra->voters, 3);
	CHECK_INT(ra->quorum, 2);
	CHECK(ra->answering == ID_A, "%s: answered by A", name);
	if (sc == NO_ENTRY) {
		CHECK(!ra->seen, "%s: entry not seen", name);
		CHECK(!ra->committed.seen && strstr(ra->committed.missing, "not seen in the peer"),
		      "%s: committed missing, said why (%s)", name, ra->committed.missing);
		/* proposed, appended, committed, applied, and the three members' appends */
		CHECK(r->t.missing == 7, "%s: 7 missing, got %d", name, r->t.missing);
		CHECK(strstr(r->json, "\"entry_seen\":false") != NULL, "%s: JSON says so", name);
		goto out;
	}
	CHECK(ra->seen && ra->request_id == REQ_ID, "%s: the entry by its request id", name);
	CHECK(ra->index == INDEX, "%s: index %llu", name, (unsigned long long)ra->index);
	if (sc == LEADER_CHANGE) {
		CHECK(ra->leader == ID_F && ra->term == 6, "%s: appended by F at term 6", name);
		CHECK(ra->leader_changed && strstr(ra->change, "proposed to 91bc3c398fb3c146, "
							       "appended by fd422379fda50e48"),
		      "%s: named (%s)", name, ra->change);
		CHECK(strstr(r->text, "leader change: proposed to") != NULL, "%s: in the timeline",
		      name);
		CHECK(strstr(r->json, "\"leader_change\":\"leader change: proposed to") != NULL,
		      "%s: in the JSON", name);
		/* The leader's MsgProp read was by L, not the leader: still the read shown. */
		CHECK(ra->appended.seen && ra->appended.mono_ns == B + 800 * US,
		      "%s: quorum = A's ack (773) and F's fsync end (800)", name);
		goto out;
	}
	CHECK(ra->leader == ID_L && ra->term == 5, "%s: leader L, term 5", name);
	CHECK(!ra->leader_changed, "%s: no leader change (%s)", name, ra->change);
	CHECK(ra->proposed.seen && ra->proposed.mono_ns == B + 645 * US &&
		  ra->proposed.first_ns == B + 630 * US && ra->proposed.who.pid == 591,
	      "%s: proposed: A wrote 630, L read 645", name);
	for (k = 0; k < ra->n_members; k++) {
		const struct raft_member_part *p = &ra->members[k];
		uint64_t start = p->id == ID_L ? 655 : p->id == ID_A ? 670 : 680;
		uint64_t end = p->id == ID_L ? 800 : p->id == ID_A ? 760 : 790;

		CHECK(p->appended.seen && p->appended.first_ns == B + start * US &&
			  p->appended.last_ns == B + end * US,
		      "%s: member %llx's fsync %llu-%llu us (%s)", name, (unsigned long long)p->id,
		      (unsigned long long)start, (unsigned long long)end, p->appended.missing);
		CHECK(p->in_quorum == (p->id != ID_F), "%s: member %llx %sin the quorum", name,
		      (unsigned long long)p->id, p->id != ID_F ? "" : "not ");
		CHECK(p->leader == (p->id == ID_L) && p->answered == (p->id == ID_A),
		      "%s: member %llx leader/answered", name, (unsigned long long)p->id);
	}
	CHECK(ra->n_members == 3, "%s: 3 members, got %d", name, ra->n_members);
	CHECK(ra->appended.seen && ra->appended.first_ns == B + 650 * US &&
		  ra->appended.mono_ns == B + 800 * US,
	      "%s: appended: MsgApp 650 -> the quorum's fsyncs (A 760, L 800) ended", name);
	CHECK(ra->quorum_fsync.seen && ra->quorum_fsync.who.pid == 591,
	      "%s: the quorum's last fsync is the leader's", name);
	CHECK(ra->committed.seen && ra->committed.mono_ns == B + 800 * US &&
		  ra->committed.last_ns == B + 810 * US && ra->committed.who.pid == 591,
	      "%s: committed: the quorum at 800 (A's ack read 775, L's fsync end 800), shown in "
	      "the leader's commit-only MsgApp at 810",
	      name);
	CHECK(ra->applied.seen && ra->applied.mono_ns == B + 820 * US && ra->applied.who.pid == 590,
	      "%s: applied: A read the commit index at 820", name);
	CHECK(r->t.missing == 0, "%s: nothing missing, got %d", name, r->t.missing);
	check_leg(&r->t, LEG_RAFT_PROPOSE, 645 - 620);
	check_leg(&r->t, LEG_RAFT_REPLICATE, 800 - 650);
	check_leg(&r->t, LEG_RAFT_QUORUM_FSYNC, 800 - 655);
	check_leg(&r->t, LEG_RAFT_COMMIT_TO_APPLY, 820 - 800);
	CHECK(strstr(r->json, "\"quorum\":[\"8e9e05c52164694d\",\"91bc3c398fb3c146\"]") != NULL,
	      "%s: the quorum in the JSON", name);
	CHECK(strstr(r->json, "\"commit_to_apply\":20000") != NULL, "%s: leg in the JSON", name);
	CHECK(strstr(r->text, "leader 91bc3c398fb3c146, answered by 8e9e05c52164694d, quorum 2 "
			      "of 3: 8e9e05c52164694d,91bc3c398fb3c146") != NULL,
	      "%s: the timeline names leader, answering member and quorum:\n%s", name, r->text);
out:
	correlator__free(c);
	free(r);
}

/* The spans a tracer would send of the bind: their number, and the trace id checked. */
static int spans_of(const struct bind_timeline *t, const char *node)
{
	struct pb_writer w;
	struct bind_view v;
	struct otlp_source src = { .node = node };
	uint8_t want[16], *p;
	int n;

	pb_writer__init(&w);
	bind_view__init(&v, t, 0);
	n = otlp__encode_bind(&w, &v, &src);
	otlp__trace_id(POD_UID, want);
	/* Every span carries the trace id: it is in the encoding as given. */
	p = w.len >= 16 ? memmem(w.buf, w.len, want, 16) : NULL;
	CHECK(n <= 0 || p != NULL, "%s: the spans carry the trace id of UID %s", node, POD_UID);
	pb_writer__free(&w);
	return n;
}

static void check_node(enum scenario sc)
{
	static const char *const names[] = {
		[NODE_A] = "node of A", [NODE_F] = "node of F", [NODE_L] = "node of L"
	};
	struct correlator_options opt = {
		.linger_ns = 1,
		.max_open_ns = 1ull << 62,
		.have_scheduler = sc == NODE_A,
		.have_apiserver = sc == NODE_A,
		.have_etcd = true,
		.node = names[sc],
		.node_scope = true,
	};
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = r ? correlator__new(&opt, on_bind, r) : NULL;
	const struct bind_raft *ra = &r->t.raft;
	const char *name = names[sc];
	int64_t d;

	memset(here_pids, 0, sizeof(here_pids));
	if (sc == NODE_A) {
		here_pids[0] = 812;
		here_pids[1] = 640;
		here_pids[2] = 590;
	} else {
		here_pids[0] = sc == NODE_F ? 592 : 591;
	}
	CHECK(r && c, "%s: correlator", name);
	if (!r || !c)
		goto out;
	play(c, NORMAL);
	correlator__tick(c, B + 10000000 * US, true);
	CHECK(r->binds == 1, "%s: one bind, got %d", name, r->binds);
	CHECK(r->t.result == BIND_RESULT_BOUND && !strcmp(r->t.uid, POD_UID) &&
		  !strcmp(r->t.node, "node-1"),
	      "%s: bound to node-1, UID %s", name, r->t.uid);
	CHECK(r->t.missing == 0, "%s: nothing missing, got %d:\n%s", name, r->t.missing, r->text);
	CHECK(ra->expected, "%s: raft expected", name);
	if (sc == NODE_A) {
		/* The answering member's node: the full view, less what the leader's node saw. */
		CHECK(!ra->local && !r->t.served_elsewhere, "%s: served here", name);
		CHECK(ra->answering == ID_A && ra->leader == ID_L,
		      "%s: answered by A, led by L (from its heartbeats)", name);
		CHECK(!ra->proposed.seen && strstr(ra->proposed.missing, "not on this node"),
		      "%s: proposed on the leader's node (%s)", name, ra->proposed.missing);
		CHECK(!ra->committed.seen && strstr(ra->committed.missing, "not on this node"),
		      "%s: committed on the leader's node (%s)", name, ra->committed.missing);
		CHECK(ra->applied.seen && ra->applied.mono_ns == B + 820 * US,
		      "%s: applied: A read the commit index at 820", name);
		CHECK(strstr(r->json, "member_append") == NULL, "%s: no member legs", name);
		goto out;
	}
	CHECK(r->t.served_elsewhere && r->t.raft_only, "%s: served elsewhere, raft only", name);
	CHECK(ra->local && ra->seen && ra->request_id == REQ_ID,
	      "%s: its member's part, the entry by its request id", name);
	CHECK(ra->leader == ID_L, "%s: led by L, got %llx", name, (unsigned long long)ra->leader);
	CHECK(!ra->applied.seen && strstr(ra->applied.missing, "not on this node"),
	      "%s: applied is the answering member's (%s)", name, ra->applied.missing);
	CHECK(strstr(r->text, "raft_member_fsync") != NULL, "%s: in the timeline:\n%s", name,
	      r->text);
	CHECK(strstr(r->json, "\"local_member\"") != NULL, "%s: in the JSON", name);
	CHECK(strstr(r->json, "\"etcd_watch_event\"") != NULL &&
		  strstr(r->json, "no apiserver traced on this node") != NULL,
	      "%s: the apiserver's stages said to be elsewhere", name);
	if (sc == NODE_F) {
		CHECK(ra->local_id == ID_F, "%s: member F", name);
		CHECK(ra->local_had.seen && ra->local_had.mono_ns == B + 661 * US,
		      "%s: had: read the MsgApp at 661", name);
		CHECK(ra->local_fsync.seen && ra->local_fsync.first_ns == B + 680 * US &&
			  ra->local_fsync.last_ns == B + 790 * US,
		      "%s: its fsync 680-790", name);
		CHECK(ra->local_acked.seen && ra->local_acked.mono_ns == B + 795 * US,
		      "%s: acked: wrote its MsgAppResp at 795", name);
		CHECK(!ra->committed.seen && strstr(ra->committed.missing, "the leader (member "
									   "91bc3c398fb3c146) is "
									   "not on this node"),
		      "%s: committed on the leader's node (%s)", name, ra->committed.missing);
		check_leg(&r->t, LEG_RAFT_MEMBER_APPEND, 795 - 661);
		check_leg(&r->t, LEG_RAFT_MEMBER_FSYNC, 790 - 680);
		CHECK(!leg__duration(&r->t, LEG_RAFT_QUORUM_FSYNC, -1, &d),
		      "%s: no quorum fsync seen here", name);
		CHECK(spans_of(&r->t, name) == 2, "%s: 2 spans", name);
	} else {
		CHECK(ra->local_id == ID_L, "%s: member L", name);
		CHECK(ra->answering == ID_A, "%s: answered by A (its request id)", name);
		CHECK(ra->local_had.seen && ra->local_had.mono_ns == B + 645 * US,
		      "%s: had: read the MsgProp at 645", name);
		CHECK(ra->local_fsync.seen && ra->local_fsync.first_ns == B + 655 * US &&
			  ra->local_fsync.last_ns == B + 800 * US,
		      "%s: its fsync 655-800 (not the one that ended before)", name);
		CHECK(ra->committed.seen && ra->committed.mono_ns == B + 800 * US &&
			  ra->committed.last_ns == B + 810 * US,
		      "%s: committed: A's ack read at 775, its own fsync's end 800", name);
		CHECK(ra->proposed.seen && ra->proposed.mono_ns == B + 645 * US,
		      "%s: proposed read at 645", name);
		check_leg(&r->t, LEG_RAFT_MEMBER_APPEND, 800 - 645);
		check_leg(&r->t, LEG_RAFT_MEMBER_FSYNC, 800 - 655);
		check_leg(&r->t, LEG_RAFT_QUORUM_FSYNC, 800 - 655);
		CHECK(spans_of(&r->t, name) == 3, "%s: 3 spans", name);
	}
out:
	memset(here_pids, 0, sizeof(here_pids));
	correlator__free(c);
	free(r);
}

/* F killed before the bind: the quorum is A's and L's as before, F is not running and nothing
 * is missing; its events (still played here) are not its part of this bind. */
static void check_gone(void)
{
	struct correlator_options opt = {
		PLAY_OPTIONS,
	};
	struct result *r = calloc(1, sizeof(*r));
	struct correlator *c = r ? correlator__new(&opt, on_bind, r) : NULL;
	int k, seen = 0;

	CHECK(r && c, "gone: correlator");
	if (!r || !c)
		goto out;
	f_gone = true;
	play(c, NORMAL);
	f_gone = false;
	correlator__tick(c, B + 10000000 * US, true);
	CHECK(r->binds == 1 && r->t.missing == 0, "gone: one bind, nothing missing (%d)",
	      r->t.missing);
	for (k = 0; k < r->t.raft.n_members; k++) {
		const struct raft_member_part *p = &r->t.raft.members[k];

		if (p->id != ID_F)
			continue;
		seen++;
		CHECK(p->gone && !p->pid && strstr(p->appended.missing, "is not running"),
		      "gone: F not running (%s)", p->appended.missing);
	}
	CHECK(seen == 1, "gone: F listed");
	CHECK(r->t.raft.committed.seen && r->t.raft.committed.mono_ns == B + 800 * US,
	      "gone: committed by A's and L's acknowledgements");
out:
	correlator__free(c);
	free(r);
}

int main(void)
{
	check_gone();
	check_node(NODE_A);
	check_node(NODE_F);
	check_node(NODE_L);
	check(NORMAL);
	check(LEADER_CHANGE);
	check(NO_ENTRY);
	check(SINGLE);
	return check_summary("correlate_raft");
}
