/* Presenting bind timelines: the human block, the JSON object, the summary. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "timeline.h"

/* The time all offsets are measured from: bind_request, else the earliest stage. */
static uint64_t origin(const struct bind_timeline *t)
{
	uint64_t o = UINT64_MAX;
	int s;

	if (t->stages[STAGE_BIND_REQUEST].seen)
		return t->stages[STAGE_BIND_REQUEST].mono_ns;
	for (s = 0; s < STAGE_MAX; s++)
		if (t->stages[s].seen && t->stages[s].mono_ns < o)
			o = t->stages[s].mono_ns;
	return o == UINT64_MAX ? t->opened_ns : o;
}

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

void timeline__print(FILE *out, const struct bind_view *view)
{
	const struct bind_timeline *t = view->t;
	int64_t wall_offset_ns = view->wall_offset_ns;
	const struct citation *ci = &t->citation;
	uint64_t t0 = origin(t);
	char extra[1024], when[64];
	int64_t d;
	time_t secs;
	struct tm tm;
	int s, w, l;

	secs = (time_t)((int64_t)(t0 + wall_offset_ns) / 1000000000);
	localtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
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
	fprintf(out, "  at %s.%06" PRIu64 "\n", when,
		(uint64_t)((t0 + wall_offset_ns) % 1000000000) / 1000);
	if (ci->known && ci->cited >= 0 && ci->cited < ci->n_frames)
		fprintf(out, "  issued at %s:%d (%s), %s%s%s%.12s%s\n", ci->frames[ci->cited].file,
			ci->frames[ci->cited].line, ci->frames[ci->cited].func,
			ci->kubernetes_version[0] ? "k8s.io/kubernetes " : "",
			ci->kubernetes_version, ci->commit[0] ? " (commit " : "", ci->commit,
			ci->commit[0] ? ")" : "");
	fprintf(out, "  %10s  %-24s %-15s %7s\n", "MS", "STAGE", "PROCESS", "PID");
	for (s = 0; s < STAGE_MAX; s++) {
		const struct stage *st = &t->stages[s];

		extra[0] = '\0';
		if (st->seen) {
			switch (s) {
			case STAGE_BIND_REQUEST:
				if (t->result == BIND_RESULT_UNSCHEDULABLE)
					snprintf(extra, sizeof(extra),
						 "PATCH pods/status PodScheduled=False");
				else
					snprintf(extra, sizeof(extra), "POST pods/%s/binding",
						 t->name);
				break;
			case STAGE_ETCD_WAL_FSYNC:
				snprintf(extra, sizeof(extra), "fdatasync %.3f ms",
					 ms((int64_t)(st->last_ns - st->first_ns)));
				break;
			case STAGE_ETCD_TXN_SENT:
			case STAGE_ETCD_TXN_RECEIVED:
				snprintf(extra, sizeof(extra), "Txn /registry/pods/%s/%s",
					 t->namespace_, t->name);
				break;
			case STAGE_ETCD_TXN_RESPONSE:
			case STAGE_ETCD_WATCH_EVENT:
				snprintf(extra, sizeof(extra), "revision %" PRId64, t->revision);
				break;
			case STAGE_BIND_RESPONSE:
			case STAGE_BIND_RESPONSE_RECEIVED:
				snprintf(extra, sizeof(extra), "%d", t->status_code);
				break;
			}
		}
		if (t->result == BIND_RESULT_UNSCHEDULABLE && s != STAGE_BIND_REQUEST)
			continue;
		print_stage(out, stage__name((enum stage_id)s), st, t0, extra);
	}
	if (t->n_watchers)
		fprintf(out, "  watchers (MODIFIED at revision %lld):\n", (long long)t->revision);
	for (w = 0; w < t->n_watchers; w++) {
		const struct watcher *wa = &t->watchers[w];

		char peer[64] = "";

		if (wa->sent.who.peer_pid)
			snprintf(peer, sizeof(peer), "%s pid %d ", wa->sent.who.peer_comm,
				 wa->sent.who.peer_pid);
		snprintf(extra, sizeof(extra), "to %s%s (%s%s%.60s) nodeName \"%s\" -> \"%s\"",
			 peer, wa->sent.who.raddr, wa->encoding, wa->user_agent[0] ? ", " : "",
			 wa->user_agent, wa->before_known ? wa->node_before : "?", wa->node_after);
		print_stage(out, "watch_event_sent", &wa->sent, t0, extra);
		snprintf(extra, sizeof(extra), "from %s", wa->received.who.raddr);
		print_stage(out, "watch_event_received", &wa->received, t0, extra);
	}
	if (t->watchers_dropped)
		fprintf(out, "  (%d more watchers not shown)\n", t->watchers_dropped);
	fprintf(out, "  legs:");
	for (l = 0; l < LEG_MAX; l++) {
		if (l == LEG_WATCH_FANOUT || l == LEG_WATCH_DELIVERY || l == LEG_TOTAL)
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
	fputc('\n', out);
}

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
		json_object_set_new(o, "laddr", json_string(st->who.laddr));
		json_object_set_new(o, "raddr", json_string(st->who.raddr));
		json_object_set_new(o, "stream_id", json_integer(st->stream_id));
	}
	return o;
}

void timeline__print_json(FILE *out, const struct bind_view *view)
{
	const struct bind_timeline *t = view->t;
	int64_t wall_offset_ns = view->wall_offset_ns;
	json_t *root = json_object(), *stages = json_object(), *legs_o = json_object();
	json_t *watchers = json_array(), *txns = json_array(), *pod = json_object();
	const struct citation *ci = &t->citation;
	int64_t d;
	char *text;
	int s, w, l;

	json_object_set_new(root, "seq", json_integer((json_int_t)t->seq));
	json_object_set_new(pod, "namespace", json_string(t->namespace_));
	json_object_set_new(pod, "name", json_string(t->name));
	json_object_set_new(pod, "uid", json_string(t->uid));
	json_object_set_new(root, "pod", pod);
	json_object_set_new(root, "node", json_string(t->node));
	json_object_set_new(root, "result", json_string(bind_result__name(t->result)));
	json_object_set_new(root, "status_code", json_integer(t->status_code));
	json_object_set_new(root, "status_reason", json_string(t->status_reason));
	json_object_set_new(root, "revision", json_integer(t->revision));
	json_object_set_new(root, "node_before",
			    t->node_before_known ? json_string(t->node_before) : json_null());
	for (s = 0; s < STAGE_MAX; s++)
		json_object_set_new(stages, stage__name((enum stage_id)s),
				    stage_json(&t->stages[s], wall_offset_ns));
	json_object_set_new(root, "stages", stages);
	for (w = 0; w < t->n_watchers; w++) {
		const struct watcher *wa = &t->watchers[w];
		json_t *wo = json_object();

		json_object_set_new(wo, "watch_event_sent", stage_json(&wa->sent, wall_offset_ns));
		json_object_set_new(wo, "watch_event_received",
				    stage_json(&wa->received, wall_offset_ns));
		json_object_set_new(wo, "address", json_string(wa->sent.who.raddr));
		json_object_set_new(wo, "pid", json_integer(wa->sent.who.peer_pid));
		json_object_set_new(wo, "comm", json_string(wa->sent.who.peer_comm));
		json_object_set_new(wo, "user_agent", json_string(wa->user_agent));
		json_object_set_new(wo, "path", json_string(wa->path));
		json_object_set_new(wo, "encoding", json_string(wa->encoding));
		json_object_set_new(wo, "event_type", json_string(wa->event_type));
		json_object_set_new(wo, "node_before",
				    wa->before_known ? json_string(wa->node_before) : json_null());
		json_object_set_new(wo, "node_after", json_string(wa->node_after));
		if (leg__duration(t, LEG_WATCH_FANOUT, w, &d))
			json_object_set_new(wo, "fanout_ns", json_integer(d));
		if (leg__duration(t, LEG_WATCH_DELIVERY, w, &d))
			json_object_set_new(wo, "delivery_ns", json_integer(d));
		json_array_append_new(watchers, wo);
	}
	json_object_set_new(root, "watchers", watchers);
	json_object_set_new(root, "watchers_not_shown", json_integer(t->watchers_dropped));
	for (l = 0; l < LEG_MAX; l++) {
		if (l == LEG_WATCH_FANOUT || l == LEG_WATCH_DELIVERY)
			continue;
		json_object_set_new(legs_o, leg__name((enum leg_id)l),
				    leg__duration(t, (enum leg_id)l, -1, &d) ? json_integer(d)
									     : json_null());
	}
	json_object_set_new(root, "legs_ns", legs_o);
	for (s = 0; s < t->n_txns; s++) {
		json_t *a = json_object();

		json_object_set_new(a, "sent_mono_ns",
				    json_integer((json_int_t)t->txns[s].sent_ns));
		json_object_set_new(a, "compare_mod_revision",
				    json_integer(t->txns[s].compare_revision));
		json_object_set_new(a, "responded", json_boolean(t->txns[s].responded));
		/* When the apiserver had read etcd's answer (its gRPC client's end of the call). */
		if (t->txns[s].responded)
			json_object_set_new(a, "response_mono_ns",
					    json_integer((json_int_t)t->txns[s].response_ns));
		json_object_set_new(a, "succeeded", json_boolean(t->txns[s].succeeded));
		json_object_set_new(a, "revision", json_integer(t->txns[s].revision));
		json_array_append_new(txns, a);
	}
	json_object_set_new(root, "etcd_txn_attempts", txns);
	if (ci->known) {
		json_t *c = json_object(), *frames = json_array();
		int f;

		json_object_set_new(c, "kubernetes_version", json_string(ci->kubernetes_version));
		json_object_set_new(c, "commit", json_string(ci->commit));
		json_object_set_new(c, "go_version", json_string(ci->go_version));
		json_object_set_new(c, "probe", json_string(ci->probe));
		json_object_set_new(c, "tid", json_integer(ci->tid));
		if (ci->cited >= 0 && ci->cited < ci->n_frames) {
			json_object_set_new(c, "function", json_string(ci->frames[ci->cited].func));
			json_object_set_new(c, "file", json_string(ci->frames[ci->cited].file));
			json_object_set_new(c, "line", json_integer(ci->frames[ci->cited].line));
		}
		for (f = 0; f < ci->n_frames; f++) {
			json_t *fr = json_object();

			json_object_set_new(fr, "pc", json_integer((json_int_t)ci->frames[f].pc));
			json_object_set_new(fr, "function", json_string(ci->frames[f].func));
			json_object_set_new(fr, "file", json_string(ci->frames[f].file));
			json_object_set_new(fr, "line", json_integer(ci->frames[f].line));
			json_array_append_new(frames, fr);
		}
		json_object_set_new(c, "stack", frames);
		json_object_set_new(root, "citation", c);
	} else {
		json_object_set_new(root, "citation", json_null());
	}
	json_object_set_new(root, "missing_stages", json_integer(t->missing));
	json_object_set_new(root, "gap", json_boolean(t->gap));
	json_object_set_new(root, "drops", json_boolean(t->drops));
	json_object_set_new(root, "started_midway", json_boolean(t->started_midway));
	text = json_dumps(root, JSON_COMPACT);
	if (text) {
		fprintf(out, "%s\n", text);
		free(text);
	}
	json_decref(root);
}

/* Summary: every duration kept per leg (binds are few per second), sorted at the end. */
struct series {
	int64_t *v;
	size_t n, cap;
};

struct summary {
	struct series legs[LEG_MAX];
	uint64_t binds, complete, unschedulable, conflicts, other;
	uint64_t hist[64]; /* total latency, log2 of microseconds */
};

struct summary *summary__new(void)
{
	return calloc(1, sizeof(struct summary));
}

void summary__free(struct summary *s)
{
	int l;

	if (!s)
		return;
	for (l = 0; l < LEG_MAX; l++)
		free(s->legs[l].v);
	free(s);
}

static void series_add(struct series *s, int64_t v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		int64_t *n = realloc(s->v, cap * sizeof(*n));

		if (!n)
			return;
		s->v = n;
		s->cap = cap;
	}
	s->v[s->n++] = v;
}

void summary__add(struct summary *s, const struct bind_view *view)
{
	const struct bind_timeline *t = view->t;
	int64_t d;
	int l, w, b;

	s->binds++;
	if (t->result == BIND_RESULT_UNSCHEDULABLE) {
		s->unschedulable++;
		return;
	}
	if (t->result == BIND_RESULT_CONFLICT)
		s->conflicts++;
	else if (t->result != BIND_RESULT_BOUND)
		s->other++;
	if (!t->missing)
		s->complete++;
	for (l = 0; l < LEG_MAX; l++) {
		if (l == LEG_WATCH_FANOUT || l == LEG_WATCH_DELIVERY) {
			for (w = 0; w < t->n_watchers; w++)
				if (leg__duration(t, (enum leg_id)l, w, &d))
					series_add(&s->legs[l], d);
		} else if (leg__duration(t, (enum leg_id)l, -1, &d)) {
			series_add(&s->legs[l], d);
		}
	}
	if (leg__duration(t, LEG_TOTAL, -1, &d) && d >= 0) {
		uint64_t us = (uint64_t)d / 1000;

		for (b = 0; us > 1 && b < 63; b++)
			us >>= 1;
		s->hist[b]++;
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct(const struct series *s, double p)
{
	size_t i;

	if (!s->n)
		return 0;
	i = (size_t)(p / 100.0 * (double)(s->n - 1) + 0.5);
	return ms(s->v[i < s->n ? i : s->n - 1]);
}

void summary__print(FILE *out, const struct summary *s)
{
	uint64_t most = 0;
	int l, b, lo = 64, hi = -1;

	fprintf(out,
		"summary: %" PRIu64 " binds, %" PRIu64 " complete, %" PRIu64
		" unschedulable, %" PRIu64 " conflicts, %" PRIu64 " other results\n",
		s->binds, s->complete, s->unschedulable, s->conflicts, s->other);
	fprintf(out, "%-24s %7s %10s %10s %10s %10s  (ms)\n", "LEG", "COUNT", "P50", "P90", "P99",
		"MAX");
	for (l = 0; l < LEG_MAX; l++) {
		struct series *sr = (struct series *)&s->legs[l];

		if (sr->n)
			qsort(sr->v, sr->n, sizeof(*sr->v), cmp_i64);
		fprintf(out, "%-24s %7zu %10.3f %10.3f %10.3f %10.3f\n", leg__name((enum leg_id)l),
			sr->n, pct(sr, 50), pct(sr, 90), pct(sr, 99),
			sr->n ? ms(sr->v[sr->n - 1]) : 0.0);
	}
	for (b = 0; b < 64; b++) {
		if (!s->hist[b])
			continue;
		if (b < lo)
			lo = b;
		hi = b;
		if (s->hist[b] > most)
			most = s->hist[b];
	}
	if (hi < 0)
		return;
	fprintf(out, "\ntotal bind latency (bind_request -> bind_response_received):\n");
	fprintf(out, "%21s : %-7s |%-40s|\n", "usecs", "count", "distribution");
	for (b = lo; b <= hi; b++) {
		uint64_t from = b ? 1ull << b : 0, to = (1ull << (b + 1)) - 1;
		int bar = (int)(s->hist[b] * 40 / most);

		fprintf(out, "%10" PRIu64 " -> %-8" PRIu64 " : %-7" PRIu64 " |%-*.*s%*s|\n", from,
			to, s->hist[b], bar, bar, "****************************************",
			40 - bar, "");
	}
}
