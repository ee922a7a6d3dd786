/* A bind as one JSON object, the schema of the README, built section by section from the view. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "bind_json.h"
#include "citation.h"

static json_t *stage_json(const struct stage *st, int64_t wall_offset_ns)
{
	json_t *o = json_object();

	if (!st->seen) {
		json_object_set_new(o, "missing", json_string(st->missing));
		return o;
	}
	json_object_set_new(o, "mono_ns", json_integer((json_int_t)st->mono_ns));
	json_object_set_new(o, "wall_ns", json_integer((json_int_t)(st->mono_ns + wall_offset_ns)));
	json_object_set_new(o, "first_mono_ns", json_integer((json_int_t)st->first_ns));
	json_object_set_new(o, "last_mono_ns", json_integer((json_int_t)st->last_ns));
	json_object_set_new(o, "pid", json_integer(st->who.pid));
	json_object_set_new(o, "comm", json_string(st->who.comm));
	json_object_set_new(o, "role", json_string(process_role__name(st->who.role)));
	if (st->who.conn) {
		json_object_set_new(o, "conn", json_integer((json_int_t)st->who.conn));
		json_object_set_new(o, "laddr", json_string(endpoint__str(&st->who.local).s));
		json_object_set_new(o, "raddr", json_string(endpoint__str(&st->who.remote).s));
		json_object_set_new(o, "stream_id", json_integer(st->stream_id));
	}
	return o;
}

/* seq, pod, node, result, status, revision, node_before. */
static void add_outcome(json_t *root, const struct bind_timeline *t)
{
	json_t *pod = json_object();

	json_object_set_new(root, "seq", json_integer((json_int_t)t->seq));
	json_object_set_new(pod, "namespace", json_string(t->namespace_));
	json_object_set_new(pod, "name", json_string(t->name));
	json_object_set_new(pod, "uid", json_string(t->uid));
	json_object_set_new(root, "pod", pod);
	json_object_set_new(root, "node", json_string(t->node));
	json_object_set_new(root, "result", json_string(bind_result__name(t->result)));
	if (t->served_elsewhere) /* --node: another node's apiserver served the Binding */
		json_object_set_new(root, "served_elsewhere", json_true());
	json_object_set_new(root, "status_code", json_integer(t->status_code));
	json_object_set_new(root, "status_reason", json_string(t->status_reason));
	if (t->status_message[0]) /* an unschedulable pod's: the scheduler's message */
		json_object_set_new(root, "status_message", json_string(t->status_message));
	json_object_set_new(root, "revision", json_integer(t->revision));
	json_object_set_new(root, "create_revision", json_integer(t->create_revision));
	json_object_set_new(root, "created_before_attach", json_boolean(t->created_before_attach));
	json_object_set_new(root, "node_before",
			    t->node_before_known ? json_string(t->node_before) : json_null());
}

static json_t *stages_json(const struct bind_view *v)
{
	json_t *stages = json_object();
	int s;

	for (s = 0; s < STAGE_MAX; s++)
		json_object_set_new(stages, stage__name((enum stage_id)s),
				    stage_json(&v->t->stages[s], v->wall_offset_ns));
	return stages;
}

/* The frames the watcher was sent about the pod, ADDED to the bind's MODIFIED (bindview.h). */
static json_t *frames_json(const struct watcher *wa)
{
	json_t *frames = json_array();
	int i;

	for (i = 0; i < wa->n_frames; i++) {
		const struct watch_frame *f = &wa->frames[i];
		json_t *fo = json_object();

		json_object_set_new(fo, "type", json_string(f->type));
		json_object_set_new(fo, "resource_version", json_integer(f->revision));
		json_object_set_new(fo, "node_name", json_string(f->node));
		json_object_set_new(fo, "sent_mono_ns", json_integer((json_int_t)f->sent_ns));
		json_object_set_new(fo, "received_mono_ns",
				    f->received_ns ? json_integer((json_int_t)f->received_ns)
						   : json_null());
		json_array_append_new(frames, fo);
	}
	return frames;
}

static json_t *watcher_json(const struct bind_view *v, int w)
{
	const struct watcher *wa = &v->t->watchers[w];
	json_t *wo = json_object();
	char check[WATCHER_CHECK_MAX];
	int64_t d;

	json_object_set_new(wo, "watch_event_sent", stage_json(&wa->sent, v->wall_offset_ns));
	json_object_set_new(wo, "watch_event_received",
			    stage_json(&wa->received, v->wall_offset_ns));
	json_object_set_new(wo, "address", json_string(endpoint__str(&wa->sent.who.remote).s));
	json_object_set_new(wo, "pid", json_integer(wa->sent.who.peer_pid));
	json_object_set_new(wo, "comm", json_string(wa->sent.who.peer_comm));
	json_object_set_new(wo, "user_agent", json_string(wa->user_agent));
	json_object_set_new(wo, "path", json_string(wa->path));
	json_object_set_new(wo, "encoding", json_string(wa->encoding));
	json_object_set_new(wo, "event_type", json_string(wa->event_type));
	json_object_set_new(wo, "node_before",
			    wa->before_known ? json_string(wa->node_before) : json_null());
	json_object_set_new(wo, "node_after", json_string(wa->node_after));
	json_object_set_new(wo, "frames", frames_json(wa));
	json_object_set_new(wo, "frames_start", json_string(frames_start__name(wa->frames_start)));
	json_object_set_new(wo, "frames_not_kept", json_integer(wa->frames_not_kept));
	json_object_set_new(wo, "frames_changed_node", json_integer(wa->frames_changed));
	json_object_set_new(wo, "frames_lost", json_boolean(wa->frames_lost));
	watcher__frames_check(check, sizeof(check), wa);
	json_object_set_new(wo, "frames_check", json_string(check));
	if (leg__duration(v->t, LEG_WATCH_FANOUT, w, &d))
		json_object_set_new(wo, "fanout_ns", json_integer(d));
	if (leg__duration(v->t, LEG_WATCH_DELIVERY, w, &d))
		json_object_set_new(wo, "delivery_ns", json_integer(d));
	return wo;
}

/* Every leg of the bind itself (the watchers' are in their objects): ns, or null. */
static json_t *legs_json(const struct bind_view *v)
{
	json_t *legs = json_object();
	int64_t d;
	int l;

	for (l = 0; l < LEG_MAX; l++) {
		if (leg__per_watcher((enum leg_id)l) || !leg__applies(v->t, (enum leg_id)l))
			continue;
		json_object_set_new(legs, leg__name((enum leg_id)l),
				    leg__duration(v->t, (enum leg_id)l, -1, &d) ? json_integer(d)
										: json_null());
	}
	return legs;
}

static json_t *txns_json(const struct bind_timeline *t)
{
	json_t *txns = json_array();
	int s;

	for (s = 0; s < t->n_txns; s++) {
		const struct txn_attempt *x = &t->txns[s];
		json_t *a = json_object();

		json_object_set_new(a, "sent_mono_ns", json_integer((json_int_t)x->sent_ns));
		json_object_set_new(a, "compare_mod_revision", json_integer(x->compare_revision));
		json_object_set_new(a, "responded", json_boolean(x->responded));
		/* When the apiserver had read etcd's answer (its gRPC client's end of the call). */
		if (x->responded)
			json_object_set_new(a, "response_mono_ns",
					    json_integer((json_int_t)x->response_ns));
		json_object_set_new(a, "succeeded", json_boolean(x->succeeded));
		json_object_set_new(a, "revision", json_integer(x->revision));
		json_array_append_new(txns, a);
	}
	return txns;
}

static json_t *frame_json(const struct frame_line *f)
{
	json_t *fr = json_object();

	json_object_set_new(fr, "function", json_string(f->func));
	json_object_set_new(fr, "file", json_string(f->file));
	json_object_set_new(fr, "line", json_integer(f->line));
	return fr;
}

/* From the cited frame's callee down to the POST, each with the goroutine it ran on. */
static json_t *chain_json(const struct citation *ci)
{
	json_t *chain = json_array();
	int i;

	for (i = ci->cited - 1; i >= 0; i--) {
		json_t *fr;

		if (!citation__frame_shown(ci, i))
			continue;
		fr = frame_json(&ci->frames[i]);
		json_object_set_new(fr, "goroutine",
				    json_string(ci->queued_at && i < ci->queued_at ? "dispatcher"
						: ci->giveup			   ? "scheduling"
										   : "binding"));
		json_array_append_new(chain, fr);
	}
	return chain;
}

/* The call that queued the POST for a dispatcher goroutine; null when the POST's own stack holds
 * the bind step. */
static json_t *queued_json(const struct citation *ci)
{
	json_t *q;

	if (!ci->queued_at)
		return json_null();
	q = json_object();
	json_object_set_new(q, "probe", json_string(ci->queue_probe));
	json_object_set_new(q, "tid", json_integer(ci->queue_tid));
	json_object_set_new(q, "goroutine", json_integer((json_int_t)ci->queue_goroutine));
	json_object_set_new(q, "mono_ns", json_integer((json_int_t)ci->queue_ns));
	json_object_set_new(q, "stack_index", json_integer(ci->queued_at));
	return q;
}

static json_t *citation_json(const struct citation *ci)
{
	json_t *c, *frames;
	int f;

	if (!ci->known)
		return json_null();
	c = json_object();
	frames = json_array();
	json_object_set_new(c, "kubernetes_version", json_string(ci->kubernetes_version));
	json_object_set_new(c, "commit", json_string(ci->commit));
	json_object_set_new(c, "go_version", json_string(ci->go_version));
	json_object_set_new(c, "probe", json_string(ci->probe));
	json_object_set_new(c, "gave_up", json_boolean(ci->giveup));
	json_object_set_new(c, "patch_dispatched", json_boolean(ci->patch_dispatched));
	json_object_set_new(c, "tid", json_integer(ci->tid));
	json_object_set_new(c, "goroutine", json_integer((json_int_t)ci->goroutine));
	if (ci->cited >= 0 && ci->cited < ci->n_frames) {
		json_object_set_new(c, "function", json_string(ci->frames[ci->cited].func));
		json_object_set_new(c, "file", json_string(ci->frames[ci->cited].file));
		json_object_set_new(c, "line", json_integer(ci->frames[ci->cited].line));
		json_object_set_new(c, "rule", json_string(ci->rule ? ci->rule : ""));
		json_object_set_new(c, "caller",
				    ci->caller > 0 ? frame_json(&ci->frames[ci->caller])
						   : json_null());
		json_object_set_new(c, "chain", chain_json(ci));
	}
	json_object_set_new(c, "queued", queued_json(ci));
	for (f = 0; f < ci->n_frames; f++) {
		json_t *fr = json_object();

		json_object_set_new(fr, "pc", json_integer((json_int_t)ci->frames[f].pc));
		json_object_set_new(fr, "function", json_string(ci->frames[f].func));
		json_object_set_new(fr, "file", json_string(ci->frames[f].file));
		json_object_set_new(fr, "line", json_integer(ci->frames[f].line));
		json_array_append_new(frames, fr);
	}
	json_object_set_new(c, "stack", frames);
	return c;
}

static json_t *raft_id_json(uint64_t id)
{
	char hex[24];

	if (!id)
		return json_null();
	snprintf(hex, sizeof(hex), "%" PRIx64, id);
	return json_string(hex);
}

static void set_ns(json_t *o, const char *name, uint64_t ns)
{
	json_object_set_new(o, name, ns ? json_integer((json_int_t)ns) : json_null());
}

/* The bind's raft entry (correlate.h, struct bind_raft): present only where raft is expected. */
static json_t *raft_json(const struct bind_view *v)
{
	const struct bind_raft *r = &v->t->raft;
	json_t *o = json_object(), *members = json_array(), *quorum = json_array();
	char hex[24];
	int k;

	snprintf(hex, sizeof(hex), "%" PRIx64, r->request_id);
	json_object_set_new(o, "entry_seen", json_boolean(r->seen));
	json_object_set_new(o, "request_id", r->seen ? json_string(hex) : json_null());
	json_object_set_new(o, "index", json_integer((json_int_t)r->index));
	json_object_set_new(o, "term", json_integer((json_int_t)r->term));
	json_object_set_new(o, "leader", raft_id_json(r->leader));
	json_object_set_new(o, "answering_member", raft_id_json(r->answering));
	json_object_set_new(o, "voters", json_integer(r->voters));
	json_object_set_new(o, "quorum_size", json_integer(r->quorum));
	json_object_set_new(o, "leader_change",
			    r->leader_changed ? json_string(r->change) : json_null());
	json_object_set_new(o, "raft_proposed", stage_json(&r->proposed, v->wall_offset_ns));
	json_object_set_new(o, "raft_appended", stage_json(&r->appended, v->wall_offset_ns));
	json_object_set_new(o, "raft_quorum_fsync",
			    stage_json(&r->quorum_fsync, v->wall_offset_ns));
	json_object_set_new(o, "raft_committed", stage_json(&r->committed, v->wall_offset_ns));
	json_object_set_new(o, "raft_applied", stage_json(&r->applied, v->wall_offset_ns));
	for (k = 0; k < r->n_members; k++) {
		const struct raft_member_part *p = &r->members[k];
		json_t *m = json_object();

		json_object_set_new(m, "id", raft_id_json(p->id));
		json_object_set_new(m, "pid", p->pid ? json_integer(p->pid) : json_null());
		json_object_set_new(m, "leader", json_boolean(p->leader));
		json_object_set_new(m, "answered", json_boolean(p->answered));
		json_object_set_new(m, "in_quorum", json_boolean(p->in_quorum));
		json_object_set_new(m, "raft_appended",
				    stage_json(&p->appended, v->wall_offset_ns));
		set_ns(m, "msgapp_received_mono_ns", p->app_received_ns);
		set_ns(m, "ack_sent_mono_ns", p->ack_sent_ns);
		set_ns(m, "ack_received_mono_ns", p->ack_received_ns);
		set_ns(m, "ack_counted_mono_ns", p->ack_ns);
		json_array_append_new(members, m);
		if (p->in_quorum)
			json_array_append_new(quorum, raft_id_json(p->id));
	}
	json_object_set_new(o, "quorum", quorum);
	json_object_set_new(o, "members", members);
	return o;
}

json_t *bind_json__new(const struct bind_view *v)
{
	const struct bind_timeline *t = v->t;
	json_t *root = json_object(), *watchers = json_array();
	int w;

	json_object_set_new(root, "schema_version", json_integer(BIND_JSON_SCHEMA_VERSION));
	add_outcome(root, t);
	if (v->tracer_node && v->tracer_node[0]) /* --node: whose tracer saw it */
		json_object_set_new(root, "tracer_node", json_string(v->tracer_node));
	json_object_set_new(root, "stages", stages_json(v));
	if (t->raft.expected)
		json_object_set_new(root, "raft", raft_json(v));
	for (w = 0; w < t->n_watchers; w++)
		json_array_append_new(watchers, watcher_json(v, w));
	json_object_set_new(root, "watchers", watchers);
	json_object_set_new(root, "watchers_not_shown", json_integer(t->watchers_dropped));
	json_object_set_new(root, "legs_ns", legs_json(v));
	json_object_set_new(root, "etcd_txn_attempts", txns_json(t));
	json_object_set_new(root, "citation", citation_json(&t->citation));
	json_object_set_new(root, "missing_stages", json_integer(t->missing));
	json_object_set_new(root, "gap", json_boolean(t->gap));
	json_object_set_new(root, "drops", json_boolean(t->drops));
	json_object_set_new(root, "started_midway", json_boolean(t->started_midway));
	return root;
}

int bind_json__print(FILE *out, const struct bind_view *v)
{
	json_t *root = bind_json__new(v);
	char *text = json_dumps(root, JSON_COMPACT);
	int err = 0;

	json_decref(root);
	if (!text)
		return -ENOMEM;
	if (fprintf(out, "%s\n", text) < 0)
		err = -EIO;
	free(text);
	return err;
}
