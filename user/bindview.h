/* The bind view: what every output reads of a finished bind, defined once. The correlator gives
 * stages (who did what, when); the view adds the meaning the outputs share:
 *
 * - the legs: each written once, in bindview.c's table, as "from this point of one stage to
 *   that point of another" (a stage's time, or its first or last byte: the WAL fsync's start
 *   and end), with the processes it is between by design;
 * - the bind's time origin, one rule for all: offsets are from bind_request when it was seen,
 *   else from the earliest stage seen (a watcher's included), and the view says which;
 * - wall-clock times, one rule for all: CLOCK_MONOTONIC plus the run's offset, in UTC, said so
 *   (a tracer runs on several nodes; their times compare only in one zone);
 * - names the outputs print alike: a process's, a watcher's, why a stage is missing.
 *
 * The human timeline, --summary, --json, --perfetto, --report, --evidence and the exporters all
 * read a bind through this; none of them defines a leg, an origin or a time zone of its own. A
 * view points into the bind_timeline it was made from and lives no longer than it. An exporter
 * walks the legs of a bind like this:
 *
 *	struct bind_view v;
 *
 *	bind_view__init(&v, t, wall_offset_ns);
 *	for (int i = 0; i < v.n_legs; i++)
 *		if (v.legs[i].seen)
 *			emit(leg__name(v.legs[i].leg), v.legs[i].watcher, bind_leg__ns(&v.legs[i]));
 */
#ifndef BINDTRACE_BINDVIEW_H
#define BINDTRACE_BINDVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "correlate.h"

/* In the order they are listed (JSON, summary, human line); the path legs follow the write. */
enum leg_id {
	LEG_CREATE_TO_INFORMED, /* the pod's path before the bind */
	LEG_SCHEDULING,
	LEG_SCHEDULER_TO_APISERVER,
	LEG_APISERVER_TO_ETCD_TXN,
	LEG_TXN_TO_ETCD,
	LEG_ETCD_COMMIT,
	LEG_WAL_FSYNC,
	/* Raft, on an etcd of several members (only for a bind whose raft.expected): */
	LEG_RAFT_PROPOSE,	  /* the answering follower forwards the proposal to the leader */
	LEG_RAFT_REPLICATE,	  /* the leader sends the entry -> a quorum has acknowledged it */
	LEG_RAFT_QUORUM_FSYNC,	  /* the WAL fsync that completed the quorum */
	LEG_RAFT_COMMIT_TO_APPLY, /* the leader commits -> the answering member knows */
	/* This node's member's own part, where the Txn went to another node's member (only for a
	 * bind whose raft.local: one tracer per node): */
	LEG_RAFT_MEMBER_APPEND, /* it had the entry -> it acknowledged it */
	LEG_RAFT_MEMBER_FSYNC,	/* its WAL fsync of the entry */
	LEG_ETCD_TO_WATCH,
	LEG_APISERVER_RESPOND,
	LEG_APISERVER_TO_SCHEDULER,
	LEG_TOTAL,
	LEG_WATCH_FANOUT,   /* per watcher */
	LEG_WATCH_DELIVERY, /* per watcher */
	LEG_MAX,
};

const char *leg__name(enum leg_id leg);
/* One line, "from -> to" in words ("->": writers may print an arrow). */
const char *leg__description(enum leg_id leg);
/* A leg measured once per watcher (fanout, delivery). */
bool leg__per_watcher(enum leg_id leg);
/* A raft leg: a bind has it only when its raft is expected (several members in sight); outputs
 * leave it out otherwise, so a single member's output is as it was. The member legs only when
 * the bind's raft is seen from this node's member alone (raft.local). */
bool leg__raft(enum leg_id leg);
/* Whether bind t has leg `leg` at all (seen or not): not a raft leg where no raft is expected. */
bool leg__applies(const struct bind_timeline *t, enum leg_id leg);
/* The processes a leg is between by design: names a leg even when a stage is missing. */
enum process_role leg__from_role(enum leg_id leg);
enum process_role leg__to_role(enum leg_id leg);
/* "kube-scheduler → kube-apiserver", or "kube-apiserver" for a leg within one process. */
void leg__between(char *out, size_t cap, enum leg_id leg);
/* Duration of a leg of t in ns (negative when its end came first); false when an end is
 * missing, or the watcher index is out of range for a per-watcher leg (ignored otherwise). */
bool leg__duration(const struct bind_timeline *t, enum leg_id leg, int watcher, int64_t *ns);

/* One leg of one bind: between stage `from` and stage `to` (for wal_fsync both are the fsync
 * stage). start_ns/end_ns are set when seen (both ends observed). */
struct bind_leg {
	enum leg_id leg;
	int watcher; /* per-watcher legs; -1 otherwise */
	const struct stage *from, *to;
	const char *from_name, *to_name; /* stage names */
	bool seen;
	uint64_t start_ns, end_ns;
};

/* A seen leg's duration in ns (negative when its end came first). */
static inline int64_t bind_leg__ns(const struct bind_leg *l)
{
	return (int64_t)(l->end_ns - l->start_ns);
}
/* The stage at the end that was not observed (from before to), for a leg not seen. */
const struct stage *bind_leg__missing_end(const struct bind_leg *l);
const char *bind_leg__missing_end_name(const struct bind_leg *l);
/* The process that did a leg's end (where a leg is drawn); the total's is the scheduler's. */
const struct actor *bind_leg__owner(const struct bind_leg *l);
/* Does leg b follow leg a on the bind's path: b starts at the stage where a ends (the total
 * leads into the path; the WAL fsync sits inside the commit and leads nowhere)? */
bool bind_leg__follows(const struct bind_leg *a, const struct bind_leg *b);

/* The path legs (the total first) and two per watcher. */
#define BIND_MAX_LEGS (LEG_MAX - 2 + 2 * BIND_MAX_WATCHERS)

struct bind_view {
	const struct bind_timeline *t;
	int64_t wall_offset_ns; /* wall ns = CLOCK_MONOTONIC ns + this */
	uint64_t origin_ns;	/* offsets are measured from here */
	/* The stage the origin is at: "bind_request", else the earliest stage seen
	 * ("watch_event_sent" for a watcher's), else "" (nothing seen: when the bind opened). */
	const char *origin_name;
	const struct stage *origin_stage; /* that stage; NULL when nothing was seen */
	/* In reading order: the total, the path, then per watcher its fanout and delivery. An
	 * unschedulable bind has none. */
	struct bind_leg legs[BIND_MAX_LEGS];
	int n_legs;
	/* The node whose tracer saw it (--node), NULL when not given: set by the caller after
	 * bind_view__init, named by the outputs. */
	const char *tracer_node;
};

void bind_view__init(struct bind_view *v, const struct bind_timeline *t, int64_t wall_offset_ns);
/* ns from the origin to a CLOCK_MONOTONIC time (negative before it). */
int64_t bind_view__offset_ns(const struct bind_view *v, uint64_t mono_ns);
/* The same in ms, as the outputs print offsets. */
double bind_view__offset_ms(const struct bind_view *v, uint64_t mono_ns);
/* The wall-clock time of a CLOCK_MONOTONIC time in UTC: "10:16:16.186122 UTC", or with
 * with_date "2026-11-30 10:16:16.186122 UTC". */
void bind_view__wall_time(const struct bind_view *v, uint64_t mono_ns, bool with_date, char *out,
			  size_t cap);
/* The leg of the view, or NULL (watcher ignored for the bind's own legs). */
const struct bind_leg *bind_view__leg(const struct bind_view *v, enum leg_id leg, int watcher);
/* Whether stage s belongs to this bind's outcome: an unschedulable pod has only bind_request
 * (the scheduler's status PATCH) after the stages before the bind. */
bool bind_view__has_stage(const struct bind_view *v, enum stage_id s);

/* Why a stage was not observed, as the correlator said ("not observed" when it did not). */
const char *stage__missing_reason(const struct stage *st);
/* The short label of a missing stage's reason text ("not_traced", "not_on_node", "ringbuf_drops",
 * "capture_gap", "started_before_attach", "unschedulable", "no_etcd_write", "not_observed", or
 * "other"): a fixed set of static strings, the metric's label and the summary's. */
const char *stage__reason_label(const char *reason);
/* A process as the outputs name it: "kube-apiserver" for the three traced roles, else its
 * comm, else "?". */
const char *actor__name(const struct actor *a);
/* A watcher's short name: its user agent's program ("kubectl"), else the traced process that
 * read the event, else the process at the other end of its connection, else "watcher". */
void watcher__name(char *out, size_t cap, const struct watcher *w);

/* A watcher's frames of the pod in one line, the same in every output: each frame's type and
 * nodeName in order (repeats folded: `MODIFIED nodeName "" x2`), then the check of what happened
 * between the ADDED and the bind's MODIFIED:
 *	2 frames: ADDED nodeName "", MODIFIED nodeName "node-a"; nothing between
 *	3 frames: ...; 1 between, none changed nodeName
 *	3 frames: ...; 1 of 1 between changed nodeName (first: MODIFIED rev 812 nodeName "x")
 * A watch whose ADDED was not seen says why first ("joined midway (...): ") and that what came
 * before is not known; losses while the frames came are said last. */
void watcher__frames_check(char *out, size_t cap, const struct watcher *w);
/* "added", "no_added", "created_before_attach", "aged_out" (JSON frames_start). */
const char *frames_start__name(enum frames_start s);
#define WATCHER_CHECK_MAX 1024

/* ns in milliseconds, as printed. */
static inline double ns__ms(int64_t ns)
{
	return (double)ns / 1e6;
}

#endif
