/* The bind tracer on stdout: the human block of each bind, or its JSON object per line. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bind_json.h"
#include "citation.h"
#include "timeline.h"

static double ms(int64_t ns)
{
	return (double)ns / 1e6;
}

static void print_stage(FILE *out, const char *name, const struct stage *st, uint64_t t0,
			const char *extra)
{
	if (!st->seen) {
		fprintf(out, "  %10s  %-24s %-15s %7s  missing: %s\n", "", name, "", "",
			st->missing);
		return;
	}
	fprintf(out, "  %+10.3f  %-24s %-15s %7d  %s\n", ms((int64_t)st->mono_ns - (int64_t)t0),
		name, st->who.comm, st->who.pid, extra ? extra : "");
}

/* One frame of the chain: "file:line func". */
static void print_frame(FILE *out, const char *label, const struct frame_line *f)
{
	fprintf(out, "    %-9s %s:%d %s\n", label, f->file, f->line, citation__short_func(f->func));
}

/* "issued at FILE:LINE (func -> callee), release (commit)", its caller in the binding cycle, then
 * the chain down to the POST; a dispatcher's POST says where the queueing stack ends. */
static void print_citation(FILE *out, const struct citation *ci)
{
	const struct frame_line *f;
	const char *label = "chain";
	int i;

	if (!ci->known || ci->cited < 0 || ci->cited >= ci->n_frames)
		return;
	f = &ci->frames[ci->cited];
	fprintf(out, "  %s at %s:%d (%s", ci->giveup ? "gave up" : "issued", f->file, f->line,
		citation__short_func(f->func));
	for (i = ci->cited - 1; i >= 0 && !citation__frame_shown(ci, i); i--)
		;
	if (i >= 0 && (!ci->queued_at || (ci->cited >= ci->queued_at) == (i >= ci->queued_at)))
		fprintf(out, " -> %s", citation__short_func(ci->frames[i].func));
	fprintf(out, "), %s%s%s%.12s%s\n", ci->kubernetes_version[0] ? "k8s.io/kubernetes " : "",
		ci->kubernetes_version, ci->commit[0] ? " (commit " : "", ci->commit,
		ci->commit[0] ? ")" : "");
	if (ci->caller > 0)
		print_frame(out, "caller", &ci->frames[ci->caller]);
	for (i = ci->cited - 1; i >= 0; i--) {
		if (ci->queued_at && i == ci->queued_at - 1)
			fprintf(out,
				"    queued    by goroutine g=0x%" PRIx64
				" (thread %d); POSTed %.3f ms "
				"later by dispatcher goroutine g=0x%" PRIx64 " (thread %d):\n",
				ci->queue_goroutine, ci->queue_tid,
				ms((int64_t)(ci->mono_ns - ci->queue_ns)), ci->goroutine, ci->tid);
		if (!citation__frame_shown(ci, i))
			continue;
		print_frame(out,
			    i			   ? label
			    : ci->patch_dispatched ? "queued at"
			    : ci->giveup	   ? "PATCH via"
						   : "POST",
			    &ci->frames[i]);
		label = "";
	}
	if (ci->patch_dispatched)
		fprintf(out,
			"    PATCH     by a dispatcher goroutine: updatePod queued it with the API "
			"cache (SchedulerAsyncAPICalls)\n");
}

/* "bind #N ns/name -> node  result (code reason)  rev R  total T ms  at HH:MM:SS.us", and the
 * line that issued it. */
static void print_headline(FILE *out, const struct bind_view *view, uint64_t t0)
{
	const struct bind_timeline *t = view->t;
	const struct citation *ci = &t->citation;
	char when[64];
	int64_t d;

	bind_view__wall_time(view, t0, false, when, sizeof(when));
	fprintf(out, "bind #%" PRIu64 " %s/%s", t->seq, t->namespace_, t->name);
	if (t->node[0])
		fprintf(out, " -> %s", t->node);
	fprintf(out, "  %s", bind_result__name(t->result));
	if (t->status_code)
		fprintf(out, " (%d%s%s)", t->status_code, t->status_reason[0] ? " " : "",
			t->status_reason);
	else if (t->status_reason[0])
		fprintf(out, " (%s)", t->status_reason);
	if (t->revision)
		fprintf(out, "  rev %" PRId64, t->revision);
	if (leg__duration(t, LEG_TOTAL, -1, &d))
		fprintf(out, "  total %.3f ms", ms(d));
	fprintf(out, "  at %s\n", when);
	if (t->status_message[0])
		fprintf(out, "  scheduler's message: %s\n", t->status_message);
	print_citation(out, ci);
}

/* What a stage was: the request, the Txn's key, the revision, the status. */
static void stage_detail(char *extra, size_t cap, const struct bind_timeline *t, int s)
{
	const struct stage *st = &t->stages[s];

	extra[0] = '\0';
	if (!st->seen)
		return;
	switch (s) {
	case STAGE_CREATE_REQUEST:
		snprintf(extra, cap, "POST pods (create %s/%s)%s%s", t->namespace_, t->name,
			 st->timing ? ", " : "",
			 stage_timing__meaning((enum stage_timing)st->timing));
		break;
	case STAGE_CREATE_TXN_RESPONSE:
		snprintf(extra, cap, "revision %" PRId64 " (the pod's first resourceVersion)",
			 t->create_revision);
		break;
	case STAGE_SCHEDULER_INFORMED:
		snprintf(extra, cap, "ADDED nodeName \"\"");
		break;
	case STAGE_BIND_REQUEST:
		if (bind_result__gave_up(t->result))
			snprintf(extra, cap, "PATCH pods/status PodScheduled=False");
		else
			snprintf(extra, cap, "POST pods/%s/binding", t->name);
		break;
	case STAGE_ETCD_WAL_FSYNC:
		snprintf(extra, cap, "fdatasync %.3f ms",
			 ms((int64_t)(st->last_ns - st->first_ns)));
		break;
	case STAGE_ETCD_TXN_SENT:
	case STAGE_ETCD_TXN_RECEIVED:
		snprintf(extra, cap, "Txn /registry/pods/%s/%s", t->namespace_, t->name);
		break;
	case STAGE_ETCD_TXN_RESPONSE:
	case STAGE_ETCD_WATCH_EVENT:
		snprintf(extra, cap, "revision %" PRId64, t->revision);
		break;
	case STAGE_BIND_RESPONSE:
	case STAGE_BIND_RESPONSE_RECEIVED:
		snprintf(extra, cap, "%d", t->status_code);
		break;
	}
}

static void print_stages(FILE *out, const struct bind_view *view, uint64_t t0)
{
	char extra[1024];
	int s;

	fprintf(out, "  %10s  %-24s %-15s %7s\n", "MS", "STAGE", "PROCESS", "PID");
	for (s = 0; s < STAGE_MAX; s++) {
		if (!bind_view__has_stage(view, (enum stage_id)s))
			continue;
		stage_detail(extra, sizeof(extra), view->t, s);
		print_stage(out, stage__name((enum stage_id)s), &view->t->stages[s], t0, extra);
	}
}

/* Each watcher: when the apiserver sent it the event, and when it read it. */
static void print_watchers(FILE *out, const struct bind_timeline *t, uint64_t t0)
{
	char extra[1024];
	int w;

	if (t->n_watchers)
		fprintf(out, "  watchers (MODIFIED at revision %lld):\n", (long long)t->revision);
	for (w = 0; w < t->n_watchers; w++) {
		const struct watcher *wa = &t->watchers[w];
		char peer[64] = "";

		if (wa->sent.who.peer_pid)
			snprintf(peer, sizeof(peer), "%s pid %d ", wa->sent.who.peer_comm,
				 wa->sent.who.peer_pid);
		snprintf(extra, sizeof(extra), "to %s%s (%s%s%.60s) nodeName \"%s\" -> \"%s\"",
			 peer, endpoint__str(&wa->sent.who.remote).s, wa->encoding,
			 wa->user_agent[0] ? ", " : "", wa->user_agent,
			 wa->before_known ? wa->node_before : "?", wa->node_after);
		print_stage(out, "watch_event_sent", &wa->sent, t0, extra);
		snprintf(extra, sizeof(extra), "from %s",
			 endpoint__str(&wa->received.who.remote).s);
		print_stage(out, "watch_event_received", &wa->received, t0, extra);
		watcher__frames_check(extra, sizeof(extra), wa);
		fprintf(out, "  %10s  frames: %s\n", "", extra);
	}
	if (t->watchers_dropped)
		fprintf(out, "  (%d more watchers not shown)\n", t->watchers_dropped);
}

static void raft_name(char *out, size_t cap, uint64_t id)
{
	if (id)
		snprintf(out, cap, "%" PRIx64, id);
	else
		snprintf(out, cap, "?");
}

/* The bind's raft entry: who led and answered, the quorum, then each stage and member's append
 * (correlate.h, struct bind_raft says what stands for commit and apply). */
static void print_raft(FILE *out, const struct bind_timeline *t, uint64_t t0)
{
	const struct bind_raft *r = &t->raft;
	char leader[24], answering[24], extra[256], quorum[160] = "";
	size_t n = 0;
	int k;

	if (!r->expected)
		return;
	raft_name(leader, sizeof(leader), r->leader);
	raft_name(answering, sizeof(answering), r->answering);
	for (k = 0; k < r->n_members; k++)
		if (r->members[k].in_quorum && n < sizeof(quorum))
			n += (size_t)snprintf(quorum + n, sizeof(quorum) - n, "%s%" PRIx64,
					      n ? "," : "", r->members[k].id);
	if (r->seen)
		fprintf(out,
			"  raft: entry %" PRIu64 " term %" PRIu64 " (request id %" PRIx64
			"), leader %s, answered by %s, quorum %d of %d: %s\n",
			r->index, r->term, r->request_id, leader, answering, r->quorum, r->voters,
			quorum[0] ? quorum : "not seen");
	else
		fprintf(out, "  raft: %d members, answered by %s; the entry not found\n", r->voters,
			answering);
	if (r->leader_changed)
		fprintf(out, "  raft: %s\n", r->change);
	print_stage(out, "raft_proposed", &r->proposed, t0, "MsgProp read by the leader");
	for (k = 0; k < r->n_members; k++) {
		const struct raft_member_part *p = &r->members[k];

		snprintf(extra, sizeof(extra), "member %" PRIx64 "%s%s: WAL fsync %.3f ms", p->id,
			 p->leader ? " (leader)" : "", p->in_quorum ? " (quorum)" : "",
			 p->appended.seen
			     ? ms((int64_t)(p->appended.last_ns - p->appended.first_ns))
			     : 0.0);
		print_stage(out, "raft_appended", &p->appended, t0, extra);
	}
	print_stage(out, "raft_committed", &r->committed, t0,
		    "the ack that completed the quorum, read by the leader");
	print_stage(out, "raft_applied", &r->applied, t0, "answering member read the commit index");
	if (!r->local)
		return;
	raft_name(leader, sizeof(leader), r->local_id);
	snprintf(extra, sizeof(extra), "this node's member %s had the entry (%s)", leader,
		 r->local_id == r->leader ? "read the MsgProp" : "read the MsgApp");
	print_stage(out, "raft_member_had", &r->local_had, t0, extra);
	print_stage(out, "raft_member_fsync", &r->local_fsync, t0, "its WAL fsync of the entry");
	print_stage(out, "raft_member_acked", &r->local_acked, t0,
		    r->local_id == r->leader ? "its own acknowledgement: the fsync's end"
					     : "it wrote its MsgAppResp");
}

/* The path's legs on one line, then what was retried and what may be incomplete. */
static void print_legs(FILE *out, const struct bind_timeline *t)
{
	int64_t d;
	int l;

	fprintf(out, "  legs:");
	for (l = 0; l < LEG_MAX; l++) {
		if (leg__per_watcher((enum leg_id)l) || l == LEG_TOTAL)
			continue;
		if (leg__duration(t, (enum leg_id)l, -1, &d))
			fprintf(out, " %s %.3f", leg__name((enum leg_id)l), ms(d));
	}
	fprintf(out, " (ms)\n");
	if (t->n_txns > 1)
		fprintf(out, "  etcd Txn attempts: %d (the compare failed %d times)\n", t->n_txns,
			t->n_txns - 1);
	if (t->missing || t->gap || t->drops || t->started_midway)
		fprintf(out, "  incomplete: %d stages missing%s%s%s\n", t->missing,
			t->gap ? "; capture gap" : "", t->drops ? "; ring buffer drops" : "",
			t->started_midway ? "; began before bindtrace attached" : "");
}

void timeline__print(FILE *out, const struct bind_view *view)
{
	uint64_t t0 = view->origin_ns;

	print_headline(out, view, t0);
	print_stages(out, view, t0);
	print_raft(out, view->t, t0);
	print_watchers(out, view->t, t0);
	print_legs(out, view->t);
	fputc('\n', out);
}

void timeline__print_json(FILE *out, const struct bind_view *view)
{
	bind_json__print(out, view);
}
