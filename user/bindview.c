/* The bind view: the legs' one definition, the time origin, and the names the outputs share. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bindview.h"
#include "util.h"

/* Where on a stage a leg starts or ends: the stage's time (a sender's first byte, a receiver's
 * last), or the first or last byte of what is behind it (the fsync's start and end). */
enum stage_point {
	AT_TIME,
	AT_FIRST,
	AT_LAST,
};

/* A leg's ends: a stage of the bind, or a stage of the watcher the leg is measured for. */
#define AT_WATCH_EVENT_SENT STAGE_MAX
#define AT_WATCH_EVENT_RECEIVED (STAGE_MAX + 1)
/* ... or a raft stage of the bind (t->raft). */
#define AT_RAFT_PROPOSED (STAGE_MAX + 2)
#define AT_RAFT_APPENDED (STAGE_MAX + 3)
#define AT_RAFT_QUORUM_FSYNC (STAGE_MAX + 4)
#define AT_RAFT_COMMITTED (STAGE_MAX + 5)
#define AT_RAFT_APPLIED (STAGE_MAX + 6)
#define AT_RAFT_LOCAL_HAD (STAGE_MAX + 7)
#define AT_RAFT_LOCAL_ACKED (STAGE_MAX + 8)
#define AT_RAFT_LOCAL_FSYNC (STAGE_MAX + 9)

struct leg_def {
	const char *name;
	const char *description;
	int from, to; /* enum stage_id, or AT_WATCH_EVENT_* */
	enum stage_point from_at, to_at;
	enum process_role from_role, to_role;
};

static const struct leg_def legs[LEG_MAX] = {
	/* The pod's path before the bind: from the apiserver reading the create to the
	 * scheduler's informer reading the ADDED event (the write, etcd, the watch cache); then
	 * the scheduler's queue wait and scheduling cycle, up to its POST of the Binding. */
	[LEG_CREATE_TO_INFORMED] = { "create_to_informed",
				     "apiserver read the create -> scheduler's informer read ADDED",
				     STAGE_CREATE_REQUEST, STAGE_SCHEDULER_INFORMED, AT_TIME,
				     AT_TIME, ROLE_APISERVER, ROLE_SCHEDULER },
	[LEG_SCHEDULING] = { "scheduling",
			     "informer read ADDED -> scheduler writes the POST (queue wait + "
			     "scheduling cycle)",
			     STAGE_SCHEDULER_INFORMED, STAGE_BIND_REQUEST, AT_TIME, AT_TIME,
			     ROLE_SCHEDULER, ROLE_SCHEDULER },
	[LEG_SCHEDULER_TO_APISERVER] = { "scheduler_to_apiserver",
					 "scheduler writes the POST -> apiserver has read it",
					 STAGE_BIND_REQUEST, STAGE_APISERVER_RECEIVED, AT_TIME,
					 AT_TIME, ROLE_SCHEDULER, ROLE_APISERVER },
	[LEG_APISERVER_TO_ETCD_TXN] = { "apiserver_handling", "apiserver read it -> Txn to etcd",
					STAGE_APISERVER_RECEIVED, STAGE_ETCD_TXN_SENT, AT_TIME,
					AT_TIME, ROLE_APISERVER, ROLE_APISERVER },
	[LEG_TXN_TO_ETCD] = { "apiserver_to_etcd", "Txn written -> etcd has read it",
			      STAGE_ETCD_TXN_SENT, STAGE_ETCD_TXN_RECEIVED, AT_TIME, AT_TIME,
			      ROLE_APISERVER, ROLE_ETCD },
	[LEG_ETCD_COMMIT] = { "etcd_commit", "etcd read the Txn -> etcd answers (raft, WAL fsync)",
			      STAGE_ETCD_TXN_RECEIVED, STAGE_ETCD_TXN_RESPONSE, AT_TIME, AT_TIME,
			      ROLE_ETCD, ROLE_ETCD },
	[LEG_WAL_FSYNC] = { "wal_fsync", "the WAL fdatasync that made it durable",
			    STAGE_ETCD_WAL_FSYNC, STAGE_ETCD_WAL_FSYNC, AT_FIRST, AT_LAST,
			    ROLE_ETCD, ROLE_ETCD },
	/* Raft (correlate.h, struct bind_raft): the Txn's member forwards it to the leader; the
	 * leader sends the entry and a quorum acknowledges it, which commits it (the leader's own
	 * acknowledgement at the end of its fsync, a follower's MsgAppResp when the leader read
	 * it); the fsync of the member that completed the quorum; from the commit until the
	 * answering member had read the commit index (the leader: at once). */
	[LEG_RAFT_PROPOSE] = { "propose", "etcd read the Txn -> the leader read its MsgProp",
			       STAGE_ETCD_TXN_RECEIVED, AT_RAFT_PROPOSED, AT_TIME, AT_TIME,
			       ROLE_ETCD, ROLE_ETCD },
	[LEG_RAFT_REPLICATE] = { "replicate",
				 "leader sends the entry (MsgApp) -> a quorum acknowledged it (commit)",
				 AT_RAFT_APPENDED, AT_RAFT_COMMITTED, AT_FIRST, AT_TIME, ROLE_ETCD,
				 ROLE_ETCD },
	[LEG_RAFT_QUORUM_FSYNC] = { "quorum_fsync",
				    "the WAL fdatasync of the member that completed the quorum",
				    AT_RAFT_QUORUM_FSYNC, AT_RAFT_QUORUM_FSYNC, AT_FIRST, AT_LAST,
				    ROLE_ETCD, ROLE_ETCD },
	[LEG_RAFT_COMMIT_TO_APPLY] = { "commit_to_apply",
				       "leader commits -> answering member read the commit index",
				       AT_RAFT_COMMITTED, AT_RAFT_APPLIED, AT_TIME, AT_TIME,
				       ROLE_ETCD, ROLE_ETCD },
	/* One member's own part, seen by the tracer on its node when the Txn went to another
	 * node's member (correlate.h, bind_raft.local_*): a follower from its read of the MsgApp
	 * to its MsgAppResp, the leader from its read of the MsgProp to the end of its WAL fsync
	 * (its own acknowledgement); and that fsync. */
	[LEG_RAFT_MEMBER_APPEND] = { "member_append",
				     "this node's member had the entry -> acknowledged it",
				     AT_RAFT_LOCAL_HAD, AT_RAFT_LOCAL_ACKED, AT_TIME, AT_TIME,
				     ROLE_ETCD, ROLE_ETCD },
	[LEG_RAFT_MEMBER_FSYNC] = { "member_wal_fsync",
				    "the WAL fdatasync of this node's member holding the entry",
				    AT_RAFT_LOCAL_FSYNC, AT_RAFT_LOCAL_FSYNC, AT_FIRST, AT_LAST,
				    ROLE_ETCD, ROLE_ETCD },
	/* From the end of the WAL fsync, when the write is durable: etcd sends its watch event and
	 * its TxnResponse each on its own once the entry is applied, and the watch event can reach
	 * the apiserver before etcd has written its answer (bind_full's full-2, by 1.7 ms), where
	 * a leg from etcd_txn_response would read negative. */
	[LEG_ETCD_TO_WATCH] = { "etcd_watch",
				"WAL fsync done -> etcd's watch event read by apiserver",
				STAGE_ETCD_WAL_FSYNC, STAGE_ETCD_WATCH_EVENT, AT_LAST, AT_TIME,
				ROLE_ETCD, ROLE_APISERVER },
	[LEG_APISERVER_RESPOND] = { "apiserver_respond", "etcd answers -> apiserver answers",
				    STAGE_ETCD_TXN_RESPONSE, STAGE_BIND_RESPONSE, AT_TIME, AT_TIME,
				    ROLE_ETCD, ROLE_APISERVER },
	[LEG_APISERVER_TO_SCHEDULER] = { "apiserver_to_scheduler",
					 "apiserver answers -> scheduler has read it",
					 STAGE_BIND_RESPONSE, STAGE_BIND_RESPONSE_RECEIVED, AT_TIME,
					 AT_TIME, ROLE_APISERVER, ROLE_SCHEDULER },
	[LEG_TOTAL] = { "total", "bind_request -> bind_response_received", STAGE_BIND_REQUEST,
			STAGE_BIND_RESPONSE_RECEIVED, AT_TIME, AT_TIME, ROLE_SCHEDULER,
			ROLE_SCHEDULER },
	[LEG_WATCH_FANOUT] = { "watch_fanout",
			       "etcd watch event -> apiserver sends it to a watcher",
			       STAGE_ETCD_WATCH_EVENT, AT_WATCH_EVENT_SENT, AT_TIME, AT_TIME,
			       ROLE_APISERVER, ROLE_APISERVER },
	[LEG_WATCH_DELIVERY] = { "watch_delivery", "apiserver sends the event -> watcher read it",
				 AT_WATCH_EVENT_SENT, AT_WATCH_EVENT_RECEIVED, AT_TIME, AT_TIME,
				 ROLE_APISERVER, ROLE_WATCHER },
};

const char *leg__name(enum leg_id leg)
{
	return leg < LEG_MAX ? legs[leg].name : "?";
}

const char *leg__description(enum leg_id leg)
{
	return leg < LEG_MAX ? legs[leg].description : "?";
}

bool leg__per_watcher(enum leg_id leg)
{
	return leg == LEG_WATCH_FANOUT || leg == LEG_WATCH_DELIVERY;
}

bool leg__raft(enum leg_id leg)
{
	return leg >= LEG_RAFT_PROPOSE && leg <= LEG_RAFT_MEMBER_FSYNC;
}

bool leg__applies(const struct bind_timeline *t, enum leg_id leg)
{
	if (leg == LEG_RAFT_MEMBER_APPEND || leg == LEG_RAFT_MEMBER_FSYNC)
		return t->raft.local;
	return !leg__raft(leg) || t->raft.expected;
}

enum process_role leg__from_role(enum leg_id leg)
{
	return leg < LEG_MAX ? legs[leg].from_role : ROLE_OTHER;
}

enum process_role leg__to_role(enum leg_id leg)
{
	return leg < LEG_MAX ? legs[leg].to_role : ROLE_OTHER;
}

void leg__between(char *out, size_t cap, enum leg_id leg)
{
	const char *a = process_role__name(leg__from_role(leg));
	const char *b = process_role__name(leg__to_role(leg));

	if (leg__from_role(leg) == leg__to_role(leg))
		util__copy(out, cap, a);
	else
		snprintf(out, cap, "%s \xe2\x86\x92 %s", a, b);
}

static const struct stage *end_stage(const struct bind_timeline *t, int at, int watcher)
{
	if (at == AT_WATCH_EVENT_SENT)
		return &t->watchers[watcher].sent;
	if (at == AT_WATCH_EVENT_RECEIVED)
		return &t->watchers[watcher].received;
	switch (at) {
	case AT_RAFT_PROPOSED:
		return &t->raft.proposed;
	case AT_RAFT_APPENDED:
		return &t->raft.appended;
	case AT_RAFT_QUORUM_FSYNC:
		return &t->raft.quorum_fsync;
	case AT_RAFT_COMMITTED:
		return &t->raft.committed;
	case AT_RAFT_APPLIED:
		return &t->raft.applied;
	case AT_RAFT_LOCAL_HAD:
		return &t->raft.local_had;
	case AT_RAFT_LOCAL_ACKED:
		return &t->raft.local_acked;
	case AT_RAFT_LOCAL_FSYNC:
		return &t->raft.local_fsync;
	}
	return &t->stages[at];
}

static const char *end_name(int at)
{
	if (at == AT_WATCH_EVENT_SENT)
		return "watch_event_sent";
	if (at == AT_WATCH_EVENT_RECEIVED)
		return "watch_event_received";
	switch (at) {
	case AT_RAFT_PROPOSED:
		return "raft_proposed";
	case AT_RAFT_APPENDED:
		return "raft_appended";
	case AT_RAFT_QUORUM_FSYNC:
		return "raft_quorum_fsync";
	case AT_RAFT_COMMITTED:
		return "raft_committed";
	case AT_RAFT_APPLIED:
		return "raft_applied";
	case AT_RAFT_LOCAL_HAD:
		return "raft_member_had";
	case AT_RAFT_LOCAL_ACKED:
		return "raft_member_acked";
	case AT_RAFT_LOCAL_FSYNC:
		return "raft_member_fsync";
	}
	return stage__name((enum stage_id)at);
}

static uint64_t point_of(const struct stage *st, enum stage_point at)
{
	return at == AT_FIRST ? st->first_ns : at == AT_LAST ? st->last_ns : st->mono_ns;
}

/* Leg `leg` of t (for watcher w when per watcher) into l; false when there is no such leg. */
static bool leg_fill(struct bind_leg *l, const struct bind_timeline *t, enum leg_id leg, int w)
{
	const struct leg_def *d;

	if (leg >= LEG_MAX)
		return false;
	if (!leg__per_watcher(leg))
		w = -1;
	else if (w < 0 || w >= t->n_watchers || w >= BIND_MAX_WATCHERS)
		return false;
	d = &legs[leg];
	memset(l, 0, sizeof(*l));
	l->leg = leg;
	l->watcher = w;
	l->from = end_stage(t, d->from, w);
	l->to = end_stage(t, d->to, w);
	l->from_name = end_name(d->from);
	l->to_name = end_name(d->to);
	l->seen = l->from->seen && l->to->seen;
	if (l->seen) {
		l->start_ns = point_of(l->from, d->from_at);
		l->end_ns = point_of(l->to, d->to_at);
	}
	return true;
}

bool leg__duration(const struct bind_timeline *t, enum leg_id leg, int watcher, int64_t *ns)
{
	struct bind_leg l;

	if (!leg_fill(&l, t, leg, watcher) || !l.seen)
		return false;
	*ns = (int64_t)(l.end_ns - l.start_ns);
	return true;
}

const struct stage *bind_leg__missing_end(const struct bind_leg *l)
{
	return !l->from->seen ? l->from : l->to;
}

const char *bind_leg__missing_end_name(const struct bind_leg *l)
{
	return !l->from->seen ? l->from_name : l->to_name;
}

const struct actor *bind_leg__owner(const struct bind_leg *l)
{
	return l->leg == LEG_TOTAL ? &l->from->who : &l->to->who;
}

bool bind_leg__follows(const struct bind_leg *a, const struct bind_leg *b)
{
	if (a == b || b->leg == LEG_TOTAL)
		return false;
	if (a->leg == LEG_TOTAL)
		return b->from == a->from && b->leg != LEG_WAL_FSYNC;
	if (a->leg == LEG_ETCD_COMMIT && b->leg == LEG_WAL_FSYNC)
		return true;
	if (a->leg == LEG_WAL_FSYNC || a->leg == LEG_RAFT_QUORUM_FSYNC ||
	    a->leg == LEG_RAFT_MEMBER_FSYNC)
		return false;
	if (b->leg == LEG_RAFT_MEMBER_FSYNC)
		return a->leg == LEG_RAFT_MEMBER_APPEND;
	if (b->leg == LEG_RAFT_QUORUM_FSYNC)
		return a->leg == LEG_RAFT_REPLICATE;
	return b->from == a->to && b->leg != LEG_WAL_FSYNC;
}

/* ---- The view ---- */

/* The one rule: bind_request, else the earliest stage seen, a watcher's included. */
static void view_origin(struct bind_view *v)
{
	const struct bind_timeline *t = v->t;
	const struct stage *o = NULL;
	const char *name = "";
	int s, w;

	if (t->stages[STAGE_BIND_REQUEST].seen) {
		o = &t->stages[STAGE_BIND_REQUEST];
		name = stage__name(STAGE_BIND_REQUEST);
	} else {
		/* The bind's stages: its create may be long before. */
		for (s = STAGE_BIND_REQUEST; s < STAGE_MAX; s++) {
			if (t->stages[s].seen && (!o || t->stages[s].mono_ns < o->mono_ns)) {
				o = &t->stages[s];
				name = stage__name((enum stage_id)s);
			}
		}
		for (w = 0; w < t->n_watchers; w++) {
			const struct stage *sent = &t->watchers[w].sent;

			if (sent->seen && (!o || sent->mono_ns < o->mono_ns)) {
				o = sent;
				name = "watch_event_sent";
			}
		}
	}
	v->origin_stage = o;
	v->origin_name = name;
	v->origin_ns = o ? o->mono_ns : t->opened_ns;
}

void bind_view__init(struct bind_view *v, const struct bind_timeline *t, int64_t wall_offset_ns)
{
	int l, w;

	memset(v, 0, sizeof(*v));
	v->t = t;
	v->wall_offset_ns = wall_offset_ns;
	view_origin(v);
	if (bind_result__gave_up(t->result))
		return;
	/* The total first: it frames the path. */
	leg_fill(&v->legs[v->n_legs++], t, LEG_TOTAL, -1);
	for (l = 0; l < LEG_MAX; l++)
		if (l != LEG_TOTAL && !leg__per_watcher((enum leg_id)l) &&
		    leg__applies(t, (enum leg_id)l))
			leg_fill(&v->legs[v->n_legs++], t, (enum leg_id)l, -1);
	for (w = 0; w < t->n_watchers && w < BIND_MAX_WATCHERS; w++) {
		leg_fill(&v->legs[v->n_legs++], t, LEG_WATCH_FANOUT, w);
		leg_fill(&v->legs[v->n_legs++], t, LEG_WATCH_DELIVERY, w);
	}
}

int64_t bind_view__offset_ns(const struct bind_view *v, uint64_t mono_ns)
{
	return (int64_t)(mono_ns - v->origin_ns);
}

double bind_view__offset_ms(const struct bind_view *v, uint64_t mono_ns)
{
	return ns__ms(bind_view__offset_ns(v, mono_ns));
}

void bind_view__wall_time(const struct bind_view *v, uint64_t mono_ns, bool with_date, char *out,
			  size_t cap)
{
	int64_t wall = (int64_t)mono_ns + v->wall_offset_ns;
	time_t secs = (time_t)(wall / 1000000000);
	char when[64];
	struct tm tm;

	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
	snprintf(out, cap, "%s.%06" PRId64 " UTC", when, (wall % 1000000000) / 1000);
}

const struct bind_leg *bind_view__leg(const struct bind_view *v, enum leg_id leg, int watcher)
{
	int i;

	for (i = 0; i < v->n_legs; i++)
		if (v->legs[i].leg == leg &&
		    (!leg__per_watcher(leg) || v->legs[i].watcher == watcher))
			return &v->legs[i];
	return NULL;
}

bool bind_view__has_stage(const struct bind_view *v, enum stage_id s)
{
	return !bind_result__gave_up(v->t->result) || s == STAGE_BIND_REQUEST ||
	       stage__before_bind(s);
}

/* ---- Names ---- */

const char *stage__missing_reason(const struct stage *st)
{
	return st->missing[0] ? st->missing : "not observed";
}

const char *stage__reason_label(const char *reason)
{
	static const struct {
		const char *text; /* a prefix or suffix of correlate.c's reasons */
		bool suffix;
		const char *label;
	} reasons[] = {
		{ " is not traced", true, "not_traced" },
		{ "not on this node", false, "not_on_node" },
		{ "ring buffer drops", false, "ringbuf_drops" },
		{ "bytes lost on a connection", false, "capture_gap" },
		{ "the bind began before bindtrace attached", false, "started_before_attach" },
		{ "no Binding", false, "unschedulable" },
		{ "no etcd write", false, "no_etcd_write" },
		{ "not observed", false, "not_observed" },
	};
	size_t i, n = strlen(reason);

	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		size_t k = strlen(reasons[i].text);

		if (reasons[i].suffix ? n >= k && !strcmp(reason + n - k, reasons[i].text)
				      : !strncmp(reason, reasons[i].text, k))
			return reasons[i].label;
	}
	return "other";
}

const char *actor__name(const struct actor *a)
{
	if (a->role == ROLE_SCHEDULER || a->role == ROLE_APISERVER || a->role == ROLE_ETCD)
		return process_role__name(a->role);
	return a->comm[0] ? a->comm : "?";
}

void watcher__name(char *out, size_t cap, const struct watcher *w)
{
	size_t n = strcspn(w->user_agent, "/ (");

	if (n && n < cap) {
		memcpy(out, w->user_agent, n);
		out[n] = '\0';
	} else if (w->received.seen) {
		util__copy(out, cap, actor__name(&w->received.who));
	} else if (w->sent.who.peer_comm[0]) {
		util__copy(out, cap, w->sent.who.peer_comm);
	} else {
		util__copy(out, cap, "watcher");
	}
}

/* Appends to out (NUL-terminated, cap bytes), cut short when full. */
static void append(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *out, size_t cap, const char *fmt, ...)
{
	size_t n = strlen(out);
	va_list ap;

	if (n + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(out + n, cap - n, fmt, ap);
	va_end(ap);
}

const char *frames_start__name(enum frames_start s)
{
	switch (s) {
	case FRAMES_FROM_ADDED:
		return "added";
	case FRAMES_NO_ADDED:
		return "no_added";
	case FRAMES_BEFORE_ATTACH:
		return "created_before_attach";
	case FRAMES_AGED_OUT:
		return "aged_out";
	}
	return "?";
}

void watcher__frames_check(char *out, size_t cap, const struct watcher *w)
{
	int i, run, total = w->n_frames + w->frames_not_kept, between = total - 2;

	out[0] = '\0';
	switch (w->frames_start) {
	case FRAMES_FROM_ADDED:
		break;
	case FRAMES_NO_ADDED:
		append(out, cap,
		       "joined midway (no ADDED on this watch: it was opened after the "
		       "pod was created): ");
		break;
	case FRAMES_BEFORE_ATTACH:
		append(out, cap, "joined midway (the pod was created before bindtrace attached): ");
		break;
	case FRAMES_AGED_OUT:
		append(out, cap,
		       "joined midway (its earlier frames had left the observation "
		       "ring): ");
		break;
	}
	append(out, cap, "%d frame%s: ", total, total == 1 ? "" : "s");
	for (i = 0; i < w->n_frames; i += run) {
		const struct watch_frame *f = &w->frames[i];

		for (run = 1;
		     i + run < w->n_frames - 1 && !strcmp(w->frames[i + run].type, f->type) &&
		     !strcmp(w->frames[i + run].node, f->node);
		     run++)
			;
		append(out, cap, "%s%s nodeName \"%s\"", i ? ", " : "", f->type, f->node);
		if (run > 1)
			append(out, cap, " x%d", run);
		if (w->frames_not_kept && i + run == w->n_frames - 1)
			append(out, cap, ", %d more not kept", w->frames_not_kept);
	}
	if (w->frames_start != FRAMES_FROM_ADDED)
		append(out, cap, "; what came before is not known");
	else if (between <= 0)
		append(out, cap, "; nothing between");
	else if (!w->frames_changed)
		append(out, cap, "; %d between, none changed nodeName", between);
	else
		append(out, cap,
		       "; %d of %d between changed nodeName (first: %s rev %" PRId64
		       " nodeName \"%s\")",
		       w->frames_changed, between, w->changed_at.type, w->changed_at.revision,
		       w->changed_at.node);
	if (w->frames_lost)
		append(out, cap,
		       "; bytes lost or ring buffer drops while they came: a frame may "
		       "be missing");
}
