/* The bind view against the definitions the README states, written out here on their own: each
 * leg's two ends (which stage, and which of its times), their order, the one time origin (and
 * the human timeline and the report measuring from it), which leg follows which, what a missing
 * leg blames, and the stages an unschedulable pod has. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "bindview.h"
#include "check.h"
#include "report.h"
#include "summary.h"
#include "timeline.h"

#define B 7000000000000ull /* bind_request, ns */
#define US 1000ull

/* Where a leg starts or ends, as the README defines it. */
enum at { TIME, FIRST, LAST };
#define SENT -1 /* the watcher's watch_event_sent */
#define READ -2 /* the watcher's watch_event_received */

static const struct {
	enum leg_id leg;
	const char *name;
	int from;
	enum at from_at;
	int to;
	enum at to_at;
} defs[] = {
	{ LEG_CREATE_TO_INFORMED, "create_to_informed", STAGE_CREATE_REQUEST, TIME,
	  STAGE_SCHEDULER_INFORMED, TIME },
	{ LEG_SCHEDULING, "scheduling", STAGE_SCHEDULER_INFORMED, TIME, STAGE_BIND_REQUEST, TIME },
	{ LEG_SCHEDULER_TO_APISERVER, "scheduler_to_apiserver", STAGE_BIND_REQUEST, TIME,
	  STAGE_APISERVER_RECEIVED, TIME },
	{ LEG_APISERVER_TO_ETCD_TXN, "apiserver_handling", STAGE_APISERVER_RECEIVED, TIME,
	  STAGE_ETCD_TXN_SENT, TIME },
	{ LEG_TXN_TO_ETCD, "apiserver_to_etcd", STAGE_ETCD_TXN_SENT, TIME, STAGE_ETCD_TXN_RECEIVED,
	  TIME },
	{ LEG_ETCD_COMMIT, "etcd_commit", STAGE_ETCD_TXN_RECEIVED, TIME, STAGE_ETCD_TXN_RESPONSE,
	  TIME },
	{ LEG_WAL_FSYNC, "wal_fsync", STAGE_ETCD_WAL_FSYNC, FIRST, STAGE_ETCD_WAL_FSYNC, LAST },
	{ LEG_ETCD_TO_WATCH, "etcd_watch", STAGE_ETCD_WAL_FSYNC, LAST, STAGE_ETCD_WATCH_EVENT,
	  TIME },
	{ LEG_APISERVER_RESPOND, "apiserver_respond", STAGE_ETCD_TXN_RESPONSE, TIME,
	  STAGE_BIND_RESPONSE, TIME },
	{ LEG_APISERVER_TO_SCHEDULER, "apiserver_to_scheduler", STAGE_BIND_RESPONSE, TIME,
	  STAGE_BIND_RESPONSE_RECEIVED, TIME },
	{ LEG_TOTAL, "total", STAGE_BIND_REQUEST, TIME, STAGE_BIND_RESPONSE_RECEIVED, TIME },
	{ LEG_WATCH_FANOUT, "watch_fanout", STAGE_ETCD_WATCH_EVENT, TIME, SENT, TIME },
	{ LEG_WATCH_DELIVERY, "watch_delivery", SENT, TIME, READ, TIME },
};
#define N_DEFS (sizeof(defs) / sizeof(defs[0]))

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

static void miss(struct stage *st, const char *why)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->missing, sizeof(st->missing), "%s", why);
}

/* A complete bind whose every stage has distinct first, last and stage times, etcd's watch
 * event reaching the apiserver before etcd's TxnResponse (as in the bind_full capture), and two
 * watchers. */
static void full_bind(struct bind_timeline *t)
{
	struct stage *s = t->stages;

	memset(t, 0, sizeof(*t));
	t->seq = 7;
	t->result = BIND_RESULT_BOUND;
	snprintf(t->namespace_, sizeof(t->namespace_), "default");
	snprintf(t->name, sizeof(t->name), "web-1");
	snprintf(t->node, sizeof(t->node), "node-b");
	t->status_code = 201;
	t->revision = 212;
	t->create_revision = 209;
	set(&s[STAGE_CREATE_REQUEST], 20, "kube-apiserver", ROLE_APISERVER, B - 15400 * US,
	    B - 15100 * US, false);
	set(&s[STAGE_CREATE_TXN_RESPONSE], 30, "etcd", ROLE_ETCD, B - 9800 * US, B - 9790 * US,
	    true);
	set(&s[STAGE_SCHEDULER_INFORMED], 10, "kube-scheduler", ROLE_SCHEDULER, B - 4200 * US,
	    B - 4050 * US, false);
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
	miss(&t->watchers[1].received, "the watcher is not traced");
	snprintf(t->watchers[0].user_agent, sizeof(t->watchers[0].user_agent),
		 "kubectl/v1.33.13 (linux/amd64)");
	t->opened_ns = B;
}

static uint64_t point(const struct stage *st, enum at at)
{
	return at == FIRST ? st->first_ns : at == LAST ? st->last_ns : st->mono_ns;
}

static const struct stage *end_of(const struct bind_timeline *t, int which, int w)
{
	return which == SENT   ? &t->watchers[w].sent
	       : which == READ ? &t->watchers[w].received
			       : &t->stages[which];
}

/* Every leg of the view is the README's, and leg__duration says the same. */
static void check_legs(void)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct bind_view v;
	size_t d;
	int i, per_watcher = 0;

	full_bind(t);
	bind_view__init(&v, t, 0);
	CHECK_INT(v.n_legs, 11 + 2 * 2);
	CHECK_INT(v.legs[0].leg, LEG_TOTAL);
	for (i = 0; i < v.n_legs; i++) {
		const struct bind_leg *l = &v.legs[i];
		int w = l->watcher;
		int64_t ns = 0;

		for (d = 0; d < N_DEFS && defs[d].leg != l->leg; d++)
			;
		CHECK(d < N_DEFS, "leg %d defined", l->leg);
		if (d == N_DEFS)
			continue;
		CHECK_STR(leg__name(l->leg), defs[d].name);
		CHECK(l->from == end_of(t, defs[d].from, w) && l->to == end_of(t, defs[d].to, w),
		      "%s: its ends are the stages the README names", defs[d].name);
		if (l->to->seen) {
			CHECK(l->seen, "%s seen", defs[d].name);
			CHECK_INT(l->start_ns, point(l->from, defs[d].from_at));
			CHECK_INT(l->end_ns, point(l->to, defs[d].to_at));
			CHECK(leg__duration(t, l->leg, w, &ns), "%s duration", defs[d].name);
			CHECK_INT(ns, (int64_t)(l->end_ns - l->start_ns));
		} else {
			CHECK(!l->seen && !leg__duration(t, l->leg, w, &ns),
			      "%s with a missing end is not measured", defs[d].name);
			CHECK_STR(bind_leg__missing_end_name(l), "watch_event_received");
			CHECK_STR(stage__missing_reason(bind_leg__missing_end(l)),
				  "the watcher is not traced");
		}
		per_watcher += w >= 0;
		CHECK(leg__per_watcher(l->leg) == (w >= 0), "%s per watcher", defs[d].name);
	}
	CHECK_INT(per_watcher, 4);
	/* etcd's watch event came before its TxnResponse: the leg from the fsync's end is still
	 * what etcd took to get the write to its watchers, 549 us here; from the response it
	 * would be -1713 us. */
	CHECK(leg__duration(t, LEG_ETCD_TO_WATCH, -1, &(int64_t){ 0 }), "etcd_watch measured");
	CHECK_INT(bind_view__leg(&v, LEG_ETCD_TO_WATCH, -1)->end_ns -
		      bind_view__leg(&v, LEG_ETCD_TO_WATCH, -1)->start_ns,
		  549 * US);
	CHECK_INT(bind_view__leg(&v, LEG_WAL_FSYNC, -1)->end_ns -
		      bind_view__leg(&v, LEG_WAL_FSYNC, -1)->start_ns,
		  3440 * US);
	/* Out of range watchers, and per-watcher legs asked without one. */
	CHECK(!leg__duration(t, LEG_WATCH_FANOUT, 2, &(int64_t){ 0 }), "no watcher 2");
	CHECK(!leg__duration(t, LEG_WATCH_FANOUT, -1, &(int64_t){ 0 }), "fanout needs a watcher");
	CHECK(bind_view__leg(&v, LEG_WATCH_DELIVERY, 1) == &v.legs[14], "watcher 1's delivery");
	/* The pod's path before the bind: the create to the informer, then the scheduling. */
	CHECK_INT(bind_view__leg(&v, LEG_CREATE_TO_INFORMED, -1)->end_ns -
		      bind_view__leg(&v, LEG_CREATE_TO_INFORMED, -1)->start_ns,
		  (15100 - 4050) * US);
	CHECK_INT(bind_view__leg(&v, LEG_SCHEDULING, -1)->end_ns -
		      bind_view__leg(&v, LEG_SCHEDULING, -1)->start_ns,
		  4050 * US);
	/* The roles a leg is between, by design. */
	CHECK_INT(leg__from_role(LEG_TXN_TO_ETCD), ROLE_APISERVER);
	CHECK_INT(leg__to_role(LEG_TXN_TO_ETCD), ROLE_ETCD);
	CHECK_INT(leg__to_role(LEG_WATCH_DELIVERY), ROLE_WATCHER);
	free(t);
}

static void check_follows(void)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct bind_view v;
	const struct bind_leg *total, *s2a, *handling, *commit, *fsync, *watch, *fanout;

	full_bind(t);
	bind_view__init(&v, t, 0);
	total = bind_view__leg(&v, LEG_TOTAL, -1);
	s2a = bind_view__leg(&v, LEG_SCHEDULER_TO_APISERVER, -1);
	handling = bind_view__leg(&v, LEG_APISERVER_TO_ETCD_TXN, -1);
	commit = bind_view__leg(&v, LEG_ETCD_COMMIT, -1);
	fsync = bind_view__leg(&v, LEG_WAL_FSYNC, -1);
	watch = bind_view__leg(&v, LEG_ETCD_TO_WATCH, -1);
	fanout = bind_view__leg(&v, LEG_WATCH_FANOUT, 0);
	CHECK(bind_leg__follows(total, s2a), "the total leads into the path");
	CHECK(!bind_leg__follows(total, fsync), "not into the fsync");
	CHECK(bind_leg__follows(s2a, handling), "apiserver_handling follows");
	CHECK(bind_leg__follows(commit, fsync), "the fsync sits inside the commit");
	CHECK(!bind_leg__follows(fsync, watch), "the fsync leads nowhere");
	CHECK(bind_leg__follows(watch, fanout), "the fanout follows etcd's watch event");
	CHECK(!bind_leg__follows(s2a, total) && !bind_leg__follows(s2a, s2a), "nothing else");
	free(t);
}

/* A text written by f into memory. */
#define CAPTURE(text, call)                                                                        \
	do {                                                                                       \
		size_t len_ = 0;                                                                   \
		FILE *f = open_memstream(&(text), &len_);                                          \
		call;                                                                              \
		fclose(f);                                                                         \
	} while (0)

/* One origin: bind_request; else the earliest stage seen, a watcher's included; else when the
 * bind was opened. The timeline and the report measure from it. */
static void check_origin(void)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct bind_view v;
	char *text = NULL;

	full_bind(t);
	bind_view__init(&v, t, 0);
	CHECK_INT(v.origin_ns, B);
	CHECK_STR(v.origin_name, "bind_request");
	CHECK(v.origin_stage == &t->stages[STAGE_BIND_REQUEST], "origin stage");
	CHECK_INT(bind_view__offset_ns(&v, B + 270 * US), 270 * US);

	/* Attached mid-bind, only the apiserver's watch side traced: a watcher's event is the
	 * earliest thing seen. */
	for (int s = 0; s < STAGE_MAX; s++)
		if (s != STAGE_BIND_RESPONSE)
			miss(&t->stages[s], "kube-scheduler is not traced");
	t->stages[STAGE_BIND_RESPONSE].mono_ns = B + 9506 * US;
	bind_view__init(&v, t, 0);
	CHECK_STR(v.origin_name, "watch_event_sent");
	CHECK_INT(v.origin_ns, B + 7349 * US);
	CAPTURE(text, timeline__print(f, &v));
	CHECK(text && strstr(text, "      +0.000  watch_event_sent         kube-apiserver"),
	      "the timeline measures from the view's origin:\n%s", text);
	CHECK(text && strstr(text, "      +2.157  bind_response"), "bind_response at +2.157:\n%s",
	      text);
	free(text);
	text = NULL;
	CAPTURE(text, report__write_markdown(f, &v, NULL, NULL));
	CHECK(text && strstr(text, "| `watch_event_sent` | +0.000 |"),
	      "the report measures from the same origin");
	free(text);

	/* Nothing seen at all: when the bind was opened. */
	miss(&t->stages[STAGE_BIND_RESPONSE], "not observed");
	t->n_watchers = 0;
	t->opened_ns = B + 42;
	bind_view__init(&v, t, 0);
	CHECK_INT(v.origin_ns, B + 42);
	CHECK_STR(v.origin_name, "");
	CHECK(v.origin_stage == NULL, "no origin stage");
	free(t);
}

static void check_unschedulable(void)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct bind_view v;

	full_bind(t);
	t->result = BIND_RESULT_UNSCHEDULABLE;
	bind_view__init(&v, t, 0);
	CHECK_INT(v.n_legs, 0);
	CHECK(bind_view__has_stage(&v, STAGE_BIND_REQUEST), "its status PATCH");
	CHECK(!bind_view__has_stage(&v, STAGE_ETCD_TXN_SENT), "no Txn of its own");
	free(t);
}

static void check_names(void)
{
	struct watcher w = {};
	struct stage st = {};
	char buf[64];
	const char *name = buf; /* CHECK_STR tests for NULL */

	CHECK_STR(stage__missing_reason(&st), "not observed");
	st.who.role = ROLE_ETCD;
	CHECK_STR(actor__name(&st.who), "etcd");
	st.who.role = ROLE_WATCHER;
	CHECK_STR(actor__name(&st.who), "?");
	snprintf(w.user_agent, sizeof(w.user_agent), "kubectl/v1.33.13 (linux/amd64)");
	watcher__name(buf, sizeof(buf), &w);
	CHECK_STR(name, "kubectl");
	w.user_agent[0] = '\0';
	snprintf(w.sent.who.peer_comm, sizeof(w.sent.who.peer_comm), "kubelet");
	watcher__name(buf, sizeof(buf), &w);
	CHECK_STR(name, "kubelet");
	leg__between(buf, sizeof(buf), LEG_TXN_TO_ETCD);
	CHECK_STR(name, "kube-apiserver \xe2\x86\x92 etcd");
	leg__between(buf, sizeof(buf), LEG_ETCD_COMMIT);
	CHECK_STR(name, "etcd");
}

/* Wall-clock times in UTC whatever the local zone, and said so. */
static void check_wall_time(void)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct bind_view v;
	char buf[64];
	const char *when = buf;

	full_bind(t);
	setenv("TZ", "IST-5:30", 1);
	tzset();
	/* mono B + 186122 us is 2026-11-30 10:16:16.186122 UTC. */
	bind_view__init(&v, t, 1796033776000000000ll - (int64_t)B);
	bind_view__wall_time(&v, B + 186122 * US, false, buf, sizeof(buf));
	CHECK_STR(when, "10:16:16.186122 UTC");
	bind_view__wall_time(&v, B + 186122 * US, true, buf, sizeof(buf));
	CHECK_STR(when, "2026-11-30 10:16:16.186122 UTC");
	free(t);
}

/* --json's strings: escaped as jansson escapes them (its dump of the same string is found in the
 * line, byte for byte), invalid UTF-8 bytes as U+FFFD, and the line one valid JSON object. */
static void check_json_strings(void)
{
	static const char valid[] = "a\"b\\c\n\t\x01\x1f\x7f /é✓😀";
	struct bind_timeline *t = calloc(1, sizeof(*t));
	char *line = NULL, *want;
	size_t len = 0;
	struct bind_view v;
	json_t *str, *root;
	FILE *f;

	CHECK(t != NULL, "json strings: memory");
	if (!t)
		return;
	full_bind(t);
	snprintf(t->status_message, sizeof(t->status_message), "%s", valid);
	/* A lone continuation byte, a truncated 3-byte sequence, an overlong '/'. */
	snprintf(t->watchers[0].user_agent, sizeof(t->watchers[0].user_agent),
		 "x\x80y\xe2\x9cz\xc0\xaf");
	bind_view__init(&v, t, 0);
	f = open_memstream(&line, &len);
	CHECK(f != NULL, "json strings: memstream");
	if (!f)
		goto out;
	timeline__print_json(f, &v);
	fclose(f);
	CHECK(len > 0 && line[len - 1] == '\n', "json strings: one line");
	str = json_string(valid);
	want = json_dumps(str, JSON_ENCODE_ANY | JSON_COMPACT);
	CHECK(want && strstr(line, want), "json strings: jansson's escaping %s in the line",
	      want ? want : "(none)");
	free(want);
	json_decref(str);
	root = json_loads(line, 0, NULL);
	CHECK(root != NULL, "json strings: the line parses");
	CHECK_STR(json_string_value(json_object_get(root, "status_message")), valid);
	CHECK_STR(json_string_value(json_object_get(
		      json_array_get(json_object_get(root, "watchers"), 0), "user_agent")),
		  "x\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbdz\xef\xbf\xbd\xef\xbf\xbd");
	CHECK_INT(json_integer_value(json_object_get(root, "revision")), 212);
	json_decref(root);
out:
	free(line);
	free(t);
}

static void missing(struct bind_timeline *t, enum stage_id s, const char *why)
{
	t->stages[s].seen = false;
	snprintf(t->stages[s].missing, sizeof(t->stages[s].missing), "%s", why);
	t->missing++;
}

/* The summary lists what incomplete binds lacked: per stage the binds, counted by reason label,
 * the first reason in full; the raft path's part apart; nothing at all when every bind is
 * complete. */
static void check_summary_missing(void)
{
	struct bind_timeline *t = malloc(sizeof(*t));
	struct summary *sum = summary__new();
	struct bind_view v;
	char *text = NULL;
	size_t len = 0;
	FILE *out;
	int i;

	full_bind(t);
	bind_view__init(&v, t, 0);
	summary__add(sum, &v); /* complete */
	out = open_memstream(&text, &len);
	summary__print(out, sum);
	fclose(out);
	CHECK(strstr(text, "1 binds, 1 complete") && !strstr(text, "MISSING STAGE"),
	      "complete binds: no missing block:\n%s", text);
	free(text);

	for (i = 0; i < 3; i++) {
		full_bind(t);
		missing(t, STAGE_SCHEDULER_INFORMED,
			i ? "bytes lost on a connection of this bind (capture gap)"
			  : "not observed");
		if (i == 2) {
			missing(t, STAGE_ETCD_WAL_FSYNC,
				"ring buffer drops while this bind was in flight");
			t->raft.expected = true;
			snprintf(t->raft.appended.missing, sizeof(t->raft.appended.missing),
				 "no MsgApp of the entry seen");
			t->missing++; /* as raft_missing counts it */
		}
		bind_view__init(&v, t, 0);
		summary__add(sum, &v);
	}
	out = open_memstream(&text, &len);
	summary__print(out, sum);
	fclose(out);
	CHECK(strstr(text, "4 binds, 1 complete") != NULL, "counts:\n%s", text);
	CHECK(strstr(text, "\nscheduler_informed             3  not_observed 1, capture_gap 2: "
			   "\"not observed\"\n") != NULL,
	      "the stage, its binds by reason, the first reason:\n%s", text);
	CHECK(strstr(text, "\netcd_wal_fsync                 1  ringbuf_drops 1: \"ring buffer "
			   "drops while this bind was in flight\"\n") != NULL,
	      "a second stage:\n%s", text);
	CHECK(strstr(text, "\nraft                           1  part of the etcd entry's raft path "
			   "(--json \"raft\"): \"no MsgApp of the entry seen\"\n") != NULL,
	      "the raft path's part:\n%s", text);
	CHECK(strstr(text, "MISSING STAGE") < strstr(text, "LEG "), "before the legs:\n%s", text);
	free(text);
	summary__free(sum);
	free(t);
}

int main(void)
{
	check_legs();
	check_follows();
	check_origin();
	check_unschedulable();
	check_names();
	check_wall_time();
	check_json_strings();
	check_summary_missing();
	return check_summary("bindview");
}
