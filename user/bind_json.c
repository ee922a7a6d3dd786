/* A bind as one JSON object, the schema of the README, written section by section from the view.
 *
 * Written straight into one buffer, not built as a jansson tree and dumped: that tree (an
 * allocation and a hash table per object, an allocation per value, then a dump of each) was
 * about half of the tracer's CPU per bind with --json. The bytes are jansson's JSON_COMPACT
 * dump's: keys in the order written, strings escaped as it escapes them, integers in decimal. A
 * string that is not valid UTF-8 (jansson's json_string() refuses it, and its key went missing)
 * has each invalid byte written as U+FFFD. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind_json.h"
#include "citation.h"
#include "util.h"

#define JW_DEPTH 16
/* Most binds' JSON fits here (about 12 KB without watchers); a bigger one grows on the heap. */
#define JW_STACK 32768

struct jw {
	char *buf;
	size_t n, cap;
	bool heap, oom;
	int depth;
	bool comma[JW_DEPTH]; /* a member was written at this depth: the next needs a comma */
};

static bool jw_room(struct jw *w, size_t more)
{
	size_t cap;
	char *b;

	if (w->oom)
		return false;
	if (w->n + more <= w->cap)
		return true;
	cap = w->cap * 2 > w->n + more ? w->cap * 2 : w->n + more;
	b = w->heap ? realloc(w->buf, cap) : malloc(cap);
	if (!b) {
		w->oom = true;
		return false;
	}
	if (!w->heap)
		memcpy(b, w->buf, w->n);
	w->buf = b;
	w->cap = cap;
	w->heap = true;
	return true;
}

static void jw_raw(struct jw *w, const char *s, size_t n)
{
	if (!jw_room(w, n))
		return;
	memcpy(w->buf + w->n, s, n);
	w->n += n;
}

/* Stored, not copied: a call of memcpy for each quote and comma was a third of the writer's
 * time. */
static void jw_char(struct jw *w, char c)
{
	if (jw_room(w, 1))
		w->buf[w->n++] = c;
}

/* The comma before a member, and its key (the schema's own names: nothing to escape). */
static void jw_sep(struct jw *w, const char *key)
{
	if (w->comma[w->depth])
		jw_char(w, ',');
	w->comma[w->depth] = true;
	if (key) {
		jw_char(w, '"');
		jw_raw(w, key, strlen(key));
		jw_raw(w, "\":", 2);
	}
}

static void jw_open(struct jw *w, const char *key, char c)
{
	jw_sep(w, key);
	jw_char(w, c);
	if (w->depth < JW_DEPTH - 1)
		w->comma[++w->depth] = false;
}

static void jw_close(struct jw *w, char c)
{
	jw_char(w, c);
	if (w->depth > 0)
		w->depth--;
}

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), 0 if there is none. */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f))
			return 0;
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80 ||
		    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

/* A string value, escaped as jansson escapes it: quote, backslash, and the control characters
 * (\b \f \n \r \t, else \u00XX); the rest as it is. */
static void jw_str(struct jw *w, const char *key, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run = p;

	if (!s) /* as jansson's json_string(NULL): no member */
		return;
	jw_sep(w, key);
	jw_char(w, '"');
	while (*p) {
		const char *esc = NULL;
		char u[8];
		size_t len;

		/* Printable ASCII, the whole of almost every string: no UTF-8 check. */
		if (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') {
			p++;
			continue;
		}
		/* Else a multibyte sequence kept as it is, or a byte to escape. */
		len = utf8_len(p);
		if (len > 1) {
			p += len;
			continue;
		}
		jw_raw(w, (const char *)run, (size_t)(p - run));
		switch (len ? *p : 0x100) {
		case '"':
			esc = "\\\"";
			break;
		case '\\':
			esc = "\\\\";
			break;
		case '\b':
			esc = "\\b";
			break;
		case '\f':
			esc = "\\f";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		case 0x100:
			esc = "\\uFFFD";
			break;
		default:
			snprintf(u, sizeof(u), "\\u%04X", *p);
			esc = u;
		}
		jw_raw(w, esc, strlen(esc));
		run = ++p;
	}
	jw_raw(w, (const char *)run, (size_t)(p - run));
	jw_char(w, '"');
}

static void jw_int(struct jw *w, const char *key, long long v)
{
	char num[24];
	size_t n = util__fmt_ll(num, v);

	jw_sep(w, key);
	jw_raw(w, num, n);
}

static void jw_lit(struct jw *w, const char *key, const char *lit)
{
	jw_sep(w, key);
	jw_raw(w, lit, strlen(lit));
}

static void jw_bool(struct jw *w, const char *key, bool b)
{
	jw_lit(w, key, b ? "true" : "false");
}

static void jw_null(struct jw *w, const char *key)
{
	jw_lit(w, key, "null");
}

static void stage_json(struct jw *w, const char *key, const struct stage *st,
		       int64_t wall_offset_ns)
{
	jw_open(w, key, '{');
	if (!st->seen) {
		jw_str(w, "missing", st->missing);
		jw_close(w, '}');
		return;
	}
	jw_int(w, "mono_ns", (long long)st->mono_ns);
	jw_int(w, "wall_ns", (long long)(st->mono_ns + wall_offset_ns));
	jw_int(w, "first_mono_ns", (long long)st->first_ns);
	jw_int(w, "last_mono_ns", (long long)st->last_ns);
	jw_int(w, "pid", st->who.pid);
	jw_str(w, "comm", st->who.comm);
	jw_str(w, "role", process_role__name(st->who.role));
	if (st->timing != STAGE_TIMED_MESSAGE) {
		jw_str(w, "timing", stage_timing__name((enum stage_timing)st->timing));
		jw_str(w, "timing_note", stage_timing__meaning((enum stage_timing)st->timing));
	}
	if (st->who.conn) {
		jw_int(w, "conn", (long long)st->who.conn);
		jw_str(w, "laddr", endpoint__str(&st->who.local).s);
		jw_str(w, "raddr", endpoint__str(&st->who.remote).s);
		jw_int(w, "stream_id", st->stream_id);
	}
	jw_close(w, '}');
}

/* seq, pod, node, result, status, revision, node_before. */
static void add_outcome(struct jw *w, const struct bind_timeline *t)
{
	jw_int(w, "seq", (long long)t->seq);
	jw_open(w, "pod", '{');
	jw_str(w, "namespace", t->namespace_);
	jw_str(w, "name", t->name);
	jw_str(w, "uid", t->uid);
	jw_close(w, '}');
	jw_str(w, "node", t->node);
	jw_str(w, "result", bind_result__name(t->result));
	if (t->served_elsewhere) /* --node: another node's apiserver served the Binding */
		jw_bool(w, "served_elsewhere", true);
	if (t->raft_only) /* ... and this node saw only its etcd member's raft entry */
		jw_bool(w, "raft_only", true);
	jw_int(w, "status_code", t->status_code);
	jw_str(w, "status_reason", t->status_reason);
	if (t->status_message[0]) /* an unschedulable pod's: the scheduler's message */
		jw_str(w, "status_message", t->status_message);
	if (t->result == BIND_RESULT_SCHEDULER_ERROR) { /* the failed bind it gave up after */
		if (t->failed_bind_seq) {
			jw_open(w, "failed_bind", '{');
			jw_int(w, "seq", (long long)t->failed_bind_seq);
			jw_int(w, "status_code", t->failed_bind_code);
			jw_close(w, '}');
		} else {
			jw_null(w, "failed_bind");
		}
	}
	jw_int(w, "revision", t->revision);
	jw_int(w, "create_revision", t->create_revision);
	jw_bool(w, "created_before_attach", t->created_before_attach);
	if (t->node_before_known)
		jw_str(w, "node_before", t->node_before);
	else
		jw_null(w, "node_before");
}

static void stages_json(struct jw *w, const struct bind_view *v)
{
	int s;

	jw_open(w, "stages", '{');
	for (s = 0; s < STAGE_MAX; s++)
		stage_json(w, stage__name((enum stage_id)s), &v->t->stages[s], v->wall_offset_ns);
	jw_close(w, '}');
}

/* The frames the watcher was sent about the pod, ADDED to the bind's MODIFIED (bindview.h). */
static void frames_json(struct jw *w, const struct watcher *wa)
{
	int i;

	jw_open(w, "frames", '[');
	for (i = 0; i < wa->n_frames; i++) {
		const struct watch_frame *f = &wa->frames[i];

		jw_open(w, NULL, '{');
		jw_str(w, "type", f->type);
		jw_int(w, "resource_version", f->revision);
		jw_str(w, "node_name", f->node);
		jw_int(w, "sent_mono_ns", (long long)f->sent_ns);
		if (f->received_ns)
			jw_int(w, "received_mono_ns", (long long)f->received_ns);
		else
			jw_null(w, "received_mono_ns");
		jw_close(w, '}');
	}
	jw_close(w, ']');
}

static void watcher_json(struct jw *w, const struct bind_view *v, int i)
{
	const struct watcher *wa = &v->t->watchers[i];
	char check[WATCHER_CHECK_MAX];
	int64_t d;

	jw_open(w, NULL, '{');
	stage_json(w, "watch_event_sent", &wa->sent, v->wall_offset_ns);
	stage_json(w, "watch_event_received", &wa->received, v->wall_offset_ns);
	jw_str(w, "address", endpoint__str(&wa->sent.who.remote).s);
	jw_int(w, "pid", wa->sent.who.peer_pid);
	jw_str(w, "comm", wa->sent.who.peer_comm);
	jw_str(w, "user_agent", wa->user_agent);
	jw_str(w, "path", wa->path);
	jw_str(w, "encoding", wa->encoding);
	jw_str(w, "event_type", wa->event_type);
	if (wa->before_known)
		jw_str(w, "node_before", wa->node_before);
	else
		jw_null(w, "node_before");
	jw_str(w, "node_after", wa->node_after);
	frames_json(w, wa);
	jw_str(w, "frames_start", frames_start__name(wa->frames_start));
	jw_int(w, "frames_not_kept", wa->frames_not_kept);
	jw_int(w, "frames_changed_node", wa->frames_changed);
	jw_bool(w, "frames_lost", wa->frames_lost);
	watcher__frames_check(check, sizeof(check), wa);
	jw_str(w, "frames_check", check);
	if (leg__duration(v->t, LEG_WATCH_FANOUT, i, &d))
		jw_int(w, "fanout_ns", d);
	if (leg__duration(v->t, LEG_WATCH_DELIVERY, i, &d))
		jw_int(w, "delivery_ns", d);
	jw_close(w, '}');
}

/* Every leg of the bind itself (the watchers' are in their objects): ns, or null. */
static void legs_json(struct jw *w, const struct bind_view *v)
{
	int64_t d;
	int l;

	jw_open(w, "legs_ns", '{');
	for (l = 0; l < LEG_MAX; l++) {
		if (leg__per_watcher((enum leg_id)l) || !leg__applies(v->t, (enum leg_id)l))
			continue;
		if (leg__duration(v->t, (enum leg_id)l, -1, &d))
			jw_int(w, leg__name((enum leg_id)l), d);
		else
			jw_null(w, leg__name((enum leg_id)l));
	}
	jw_close(w, '}');
}

static void raft_id_json(struct jw *w, const char *key, uint64_t id);

/* An attempt that got no TxnResponse: the member that read it and whether its process exited,
 * and the gRPC error it answered instead, when it did. */
static void txn_unanswered_json(struct jw *w, const struct txn_attempt *x)
{
	if (x->member_pid)
		jw_int(w, "etcd_pid", x->member_pid);
	if (x->member_id)
		raft_id_json(w, "member", x->member_id);
	if (x->member_gone_ns)
		jw_int(w, "member_exited_mono_ns", (long long)x->member_gone_ns);
	if (x->grpc_status) {
		jw_int(w, "grpc_status", x->grpc_status);
		jw_str(w, "grpc_message", x->grpc_message);
		jw_int(w, "error_mono_ns", (long long)x->error_ns);
	}
}

static void txns_json(struct jw *w, const struct bind_timeline *t)
{
	int s;

	jw_open(w, "etcd_txn_attempts", '[');
	for (s = 0; s < t->n_txns; s++) {
		const struct txn_attempt *x = &t->txns[s];

		jw_open(w, NULL, '{');
		jw_int(w, "sent_mono_ns", (long long)x->sent_ns);
		jw_int(w, "compare_mod_revision", x->compare_revision);
		jw_bool(w, "responded", x->responded);
		/* When the apiserver had read etcd's answer (its gRPC client's end of the call). */
		if (x->responded)
			jw_int(w, "response_mono_ns", (long long)x->response_ns);
		jw_bool(w, "succeeded", x->succeeded);
		jw_int(w, "revision", x->revision);
		if (!x->responded)
			txn_unanswered_json(w, x);
		jw_close(w, '}');
	}
	jw_close(w, ']');
}

/* A frame's function, file and line; the object is left open for what the caller adds. */
static void frame_json(struct jw *w, const char *key, const struct frame_line *f)
{
	jw_open(w, key, '{');
	jw_str(w, "function", f->func);
	jw_str(w, "file", f->file);
	jw_int(w, "line", f->line);
}

/* From the cited frame's callee down to the POST, each with the goroutine it ran on. */
static void chain_json(struct jw *w, const struct citation *ci)
{
	int i;

	jw_open(w, "chain", '[');
	for (i = ci->cited - 1; i >= 0; i--) {
		if (!citation__frame_shown(ci, i))
			continue;
		frame_json(w, NULL, &ci->frames[i]);
		jw_str(w, "goroutine",
		       ci->queued_at && i < ci->queued_at ? "dispatcher"
		       : ci->giveup			  ? "scheduling"
							  : "binding");
		jw_close(w, '}');
	}
	jw_close(w, ']');
}

/* The call that queued the POST for a dispatcher goroutine; null when the POST's own stack holds
 * the bind step. */
static void queued_json(struct jw *w, const struct citation *ci)
{
	if (!ci->queued_at) {
		jw_null(w, "queued");
		return;
	}
	jw_open(w, "queued", '{');
	jw_str(w, "probe", ci->queue_probe);
	jw_int(w, "tid", ci->queue_tid);
	jw_int(w, "goroutine", (long long)ci->queue_goroutine);
	jw_int(w, "mono_ns", (long long)ci->queue_ns);
	jw_int(w, "stack_index", ci->queued_at);
	jw_close(w, '}');
}

static void citation_json(struct jw *w, const struct citation *ci)
{
	int f;

	if (!ci->known) {
		jw_null(w, "citation");
		return;
	}
	jw_open(w, "citation", '{');
	jw_str(w, "kubernetes_version", ci->kubernetes_version);
	jw_str(w, "commit", ci->commit);
	jw_str(w, "go_version", ci->go_version);
	jw_str(w, "probe", ci->probe);
	jw_bool(w, "gave_up", ci->giveup);
	jw_bool(w, "patch_dispatched", ci->patch_dispatched);
	jw_int(w, "tid", ci->tid);
	jw_int(w, "goroutine", (long long)ci->goroutine);
	if (ci->cited >= 0 && ci->cited < ci->n_frames) {
		jw_str(w, "function", ci->frames[ci->cited].func);
		jw_str(w, "file", ci->frames[ci->cited].file);
		jw_int(w, "line", ci->frames[ci->cited].line);
		jw_str(w, "rule", ci->rule ? ci->rule : "");
		if (ci->caller > 0) {
			frame_json(w, "caller", &ci->frames[ci->caller]);
			jw_close(w, '}');
		} else {
			jw_null(w, "caller");
		}
		chain_json(w, ci);
	}
	queued_json(w, ci);
	jw_open(w, "stack", '[');
	for (f = 0; f < ci->n_frames; f++) {
		jw_open(w, NULL, '{');
		jw_int(w, "pc", (long long)ci->frames[f].pc);
		jw_str(w, "function", ci->frames[f].func);
		jw_str(w, "file", ci->frames[f].file);
		jw_int(w, "line", ci->frames[f].line);
		jw_close(w, '}');
	}
	jw_close(w, ']');
	jw_close(w, '}');
}

static void raft_id_json(struct jw *w, const char *key, uint64_t id)
{
	char hex[24];

	if (!id) {
		jw_null(w, key);
		return;
	}
	snprintf(hex, sizeof(hex), "%" PRIx64, id);
	jw_str(w, key, hex);
}

static void set_ns(struct jw *w, const char *name, uint64_t ns)
{
	if (ns)
		jw_int(w, name, (long long)ns);
	else
		jw_null(w, name);
}

/* The bind's raft entry (correlate.h, struct bind_raft): present only where raft is expected. */
static void raft_json(struct jw *w, const struct bind_view *v)
{
	const struct bind_raft *r = &v->t->raft;
	char hex[24];
	int k;

	snprintf(hex, sizeof(hex), "%" PRIx64, r->request_id);
	jw_open(w, "raft", '{');
	jw_bool(w, "entry_seen", r->seen);
	if (r->seen)
		jw_str(w, "request_id", hex);
	else
		jw_null(w, "request_id");
	jw_int(w, "index", (long long)r->index);
	jw_int(w, "term", (long long)r->term);
	raft_id_json(w, "leader", r->leader);
	raft_id_json(w, "answering_member", r->answering);
	jw_int(w, "voters", r->voters);
	jw_int(w, "quorum_size", r->quorum);
	if (r->leader_changed)
		jw_str(w, "leader_change", r->change);
	else
		jw_null(w, "leader_change");
	stage_json(w, "raft_proposed", &r->proposed, v->wall_offset_ns);
	stage_json(w, "raft_appended", &r->appended, v->wall_offset_ns);
	stage_json(w, "raft_quorum_fsync", &r->quorum_fsync, v->wall_offset_ns);
	stage_json(w, "raft_committed", &r->committed, v->wall_offset_ns);
	stage_json(w, "raft_applied", &r->applied, v->wall_offset_ns);
	if (r->local) { /* seen from this node's member alone: its own part */
		raft_id_json(w, "local_member", r->local_id);
		stage_json(w, "raft_member_had", &r->local_had, v->wall_offset_ns);
		stage_json(w, "raft_member_acked", &r->local_acked, v->wall_offset_ns);
		stage_json(w, "raft_member_fsync", &r->local_fsync, v->wall_offset_ns);
	}
	/* quorum before members, as before: the ids of the members in the quorum. */
	jw_open(w, "quorum", '[');
	for (k = 0; k < r->n_members; k++)
		if (r->members[k].in_quorum)
			raft_id_json(w, NULL, r->members[k].id);
	jw_close(w, ']');
	jw_open(w, "members", '[');
	for (k = 0; k < r->n_members; k++) {
		const struct raft_member_part *p = &r->members[k];

		jw_open(w, NULL, '{');
		raft_id_json(w, "id", p->id);
		if (p->pid)
			jw_int(w, "pid", p->pid);
		else
			jw_null(w, "pid");
		jw_bool(w, "leader", p->leader);
		jw_bool(w, "answered", p->answered);
		jw_bool(w, "in_quorum", p->in_quorum);
		if (p->gone) /* its process had exited (killed, crashed): no part in this bind */
			jw_bool(w, "exited", true);
		stage_json(w, "raft_appended", &p->appended, v->wall_offset_ns);
		set_ns(w, "msgapp_received_mono_ns", p->app_received_ns);
		set_ns(w, "ack_sent_mono_ns", p->ack_sent_ns);
		set_ns(w, "ack_received_mono_ns", p->ack_received_ns);
		set_ns(w, "ack_counted_mono_ns", p->ack_ns);
		jw_close(w, '}');
	}
	jw_close(w, ']');
	jw_close(w, '}');
}

static void bind_json(struct jw *w, const struct bind_view *v)
{
	const struct bind_timeline *t = v->t;
	int i;

	jw_open(w, NULL, '{');
	jw_int(w, "schema_version", BIND_JSON_SCHEMA_VERSION);
	add_outcome(w, t);
	if (v->tracer_node && v->tracer_node[0]) /* --node: whose tracer saw it */
		jw_str(w, "tracer_node", v->tracer_node);
	stages_json(w, v);
	if (t->raft.expected)
		raft_json(w, v);
	jw_open(w, "watchers", '[');
	for (i = 0; i < t->n_watchers; i++)
		watcher_json(w, v, i);
	jw_close(w, ']');
	jw_int(w, "watchers_not_shown", t->watchers_dropped);
	legs_json(w, v);
	txns_json(w, t);
	citation_json(w, &t->citation);
	jw_int(w, "missing_stages", t->missing);
	jw_bool(w, "gap", t->gap);
	jw_bool(w, "drops", t->drops);
	jw_bool(w, "started_midway", t->started_midway);
	jw_close(w, '}');
}

int bind_json__print(FILE *out, const struct bind_view *v)
{
	char stack[JW_STACK];
	struct jw w = { .buf = stack, .cap = sizeof(stack) };
	int err = 0;

	bind_json(&w, v);
	jw_char(&w, '\n');
	if (w.oom)
		err = -ENOMEM;
	else if (fwrite(w.buf, 1, w.n, out) != w.n)
		err = -EIO;
	if (w.heap)
		free(w.buf);
	return err;
}
