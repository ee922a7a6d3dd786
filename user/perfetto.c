/* The Perfetto / chrome://tracing output. Each event is built as a jansson object (so every
 * string is escaped by jansson) and written with its "ts"/"dur" spliced in as exact decimal
 * microseconds from the integer nanoseconds.
 *
 * Tracks: a process per traced pid; in it a "stages" thread for the instants and "bind legs"
 * threads (lanes) for the slices. Complete events on one thread must nest, and concurrent binds'
 * legs overlap, so each slice goes to the first lane of its process that is free from its start
 * on; lanes are synthetic thread ids above any real tid, since viewers key threads by tid alone. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "output_file.h"
#include "perfetto.h"

#define PF_MAX_LANES 256
#define PF_FIRST_TID 10000000u /* above pid_max (4194304) */

struct pf_lane {
	uint64_t end_ns;
	uint32_t tid;
};

struct pf_proc {
	pid_t pid;
	bool named;
	uint32_t stages_tid;
	int n_lanes;
	struct pf_lane lanes[PF_MAX_LANES];
};

struct perfetto {
	FILE *f;
	char *path;
	int64_t wall_offset_ns;
	uint64_t n_events;
	uint32_t next_tid;
	uint64_t next_flow;
	struct pf_proc **procs;
	int n_procs;
};

/* A string jansson accepts: invalid UTF-8 (from the wire) becomes '?'. */
static json_t *pf_string(const char *s)
{
	json_t *j = json_string(s);
	char *copy;
	size_t i;

	if (j)
		return j;
	copy = strdup(s);
	if (!copy)
		return json_string("?");
	for (i = 0; copy[i]; i++)
		if ((unsigned char)copy[i] >= 0x80)
			copy[i] = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

static void fmt_us(char *buf, size_t cap, uint64_t ns)
{
	snprintf(buf, cap, "%" PRIu64 ".%03u", ns / 1000, (unsigned int)(ns % 1000));
}

/* Write one event (consumed). ts and dur in ns; dur < 0: none. */
static void pf_emit(struct perfetto *p, json_t *ev, uint64_t ts_ns, int64_t dur_ns)
{
	char ts[32], dur[32];
	char *text = json_dumps(ev, JSON_COMPACT);

	json_decref(ev);
	if (!text || text[0] != '{' || text[1] == '}') {
		free(text);
		return;
	}
	fputs(p->n_events++ ? ",\n" : "\n", p->f);
	fmt_us(ts, sizeof(ts), ts_ns);
	if (dur_ns >= 0) {
		fmt_us(dur, sizeof(dur), (uint64_t)dur_ns);
		fprintf(p->f, "{\"ts\":%s,\"dur\":%s,%s", ts, dur, text + 1);
	} else {
		fprintf(p->f, "{\"ts\":%s,%s", ts, text + 1);
	}
	free(text);
}

static void pf_metadata(struct perfetto *p, const char *what, pid_t pid, uint32_t tid, json_t *args)
{
	json_t *ev = json_pack("{s:s, s:s, s:i, s:o}", "ph", "M", "name", what, "pid", (int)pid,
			       "args", args);

	if (tid)
		json_object_set_new(ev, "tid", json_integer(tid));
	pf_emit(p, ev, 0, -1);
}

static int sort_index_of(enum process_role role)
{
	switch (role) {
	case ROLE_SCHEDULER:
		return 1;
	case ROLE_APISERVER:
		return 2;
	case ROLE_ETCD:
		return 3;
	default:
		return 4;
	}
}

static struct pf_proc *pf_proc(struct perfetto *p, pid_t pid)
{
	struct pf_proc **v, *pp;
	int i;

	for (i = 0; i < p->n_procs; i++)
		if (p->procs[i]->pid == pid)
			return p->procs[i];
	v = realloc(p->procs, (size_t)(p->n_procs + 1) * sizeof(*v));
	if (!v)
		return NULL;
	p->procs = v;
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return NULL;
	pp->pid = pid;
	pp->stages_tid = p->next_tid++;
	p->procs[p->n_procs++] = pp;
	pf_metadata(p, "thread_name", pid, pp->stages_tid, json_pack("{s:s}", "name", "stages"));
	pf_metadata(p, "thread_sort_index", pid, pp->stages_tid,
		    json_pack("{s:i}", "sort_index", 0));
	return pp;
}

static void pf_name_process(struct perfetto *p, struct pf_proc *pp, const char *name,
			    int sort_index)
{
	char label[160];

	snprintf(label, sizeof(label), "%s (pid %d)", name, pp->pid);
	pf_metadata(p, "process_name", pp->pid, 0, json_pack("{s:o}", "name", pf_string(label)));
	pf_metadata(p, "process_sort_index", pp->pid, 0,
		    json_pack("{s:i}", "sort_index", sort_index));
	pp->named = true;
}

static struct pf_proc *pf_proc_of(struct perfetto *p, const struct actor *a)
{
	struct pf_proc *pp = pf_proc(p, a->pid);

	if (pp && !pp->named) {
		const char *name =
		    a->role == ROLE_SCHEDULER || a->role == ROLE_APISERVER || a->role == ROLE_ETCD
			? process_role__name(a->role)
		    : a->comm[0] ? a->comm
				 : "process";

		pf_name_process(p, pp, name, sort_index_of(a->role));
	}
	return pp;
}

/* The lane (thread) of pp free from start_ns on, made when none is. */
static uint32_t pf_lane(struct perfetto *p, struct pf_proc *pp, uint64_t start_ns, uint64_t end_ns)
{
	struct pf_lane *lane = NULL;
	char name[32];
	int i;

	for (i = 0; i < pp->n_lanes; i++) {
		if (pp->lanes[i].end_ns <= start_ns) {
			lane = &pp->lanes[i];
			break;
		}
	}
	if (!lane && pp->n_lanes < PF_MAX_LANES) {
		lane = &pp->lanes[pp->n_lanes++];
		lane->tid = p->next_tid++;
		if (pp->n_lanes == 1)
			snprintf(name, sizeof(name), "bind legs");
		else
			snprintf(name, sizeof(name), "bind legs (%d)", pp->n_lanes);
		pf_metadata(p, "thread_name", pp->pid, lane->tid, json_pack("{s:s}", "name", name));
		pf_metadata(p, "thread_sort_index", pp->pid, lane->tid,
			    json_pack("{s:i}", "sort_index", pp->n_lanes));
	}
	if (!lane) {
		/* Out of lanes: the one that frees first (slices may then overlap). */
		lane = &pp->lanes[0];
		for (i = 1; i < pp->n_lanes; i++)
			if (pp->lanes[i].end_ns < lane->end_ns)
				lane = &pp->lanes[i];
	}
	if (end_ns > lane->end_ns)
		lane->end_ns = end_ns;
	return lane->tid;
}

struct perfetto *perfetto__open(const char *path, int64_t wall_offset_ns)
{
	struct perfetto *p = calloc(1, sizeof(*p));
	char offset[32];
	int err;

	if (!p)
		return NULL;
	p->wall_offset_ns = wall_offset_ns;
	p->next_tid = PF_FIRST_TID;
	p->next_flow = 1;
	p->path = strdup(path);
	if (!p->path) {
		err = -ENOMEM;
		goto fail;
	}
	p->f = output_file__open(path, false);
	if (!p->f) {
		err = -errno;
		fprintf(stderr, "bindtrace: --perfetto %s: %s\n", path, strerror(-err));
		goto fail;
	}
	snprintf(offset, sizeof(offset), "%" PRId64, wall_offset_ns);
	fprintf(p->f,
		"{\"displayTimeUnit\":\"ms\",\"otherData\":{\"tool\":\"bindtrace\","
		"\"clock\":\"CLOCK_MONOTONIC\",\"ts_unit\":\"us\",\"wall_offset_ns\":\"%s\"},"
		"\"traceEvents\":[",
		offset);
	fflush(p->f);
	return p;
fail:
	free(p->path);
	free(p);
	errno = -err;
	return NULL;
}

void perfetto__process(struct perfetto *p, pid_t pid, const char *name, int sort_index)
{
	struct pf_proc *pp = pf_proc(p, pid);

	if (pp)
		pf_name_process(p, pp, name, sort_index);
	fflush(p->f);
}

static json_t *pf_bind_args(const struct bind_timeline *t)
{
	char pod[BIND_NS_MAX + BIND_NAME_MAX + 2];

	snprintf(pod, sizeof(pod), "%s/%s", t->namespace_, t->name);
	return json_pack("{s:I, s:o}", "bind", (json_int_t)t->seq, "pod", pf_string(pod));
}

static void pf_instant(struct perfetto *p, const struct bind_timeline *t, const char *name,
		       const struct stage *st, int watcher)
{
	struct pf_proc *pp = pf_proc_of(p, &st->who);
	json_t *args = pf_bind_args(t), *ev;

	if (!pp)
		return;
	json_object_set_new(args, "mono_ns", json_integer((json_int_t)st->mono_ns));
	json_object_set_new(args, "wall_ns",
			    json_integer((json_int_t)(st->mono_ns + p->wall_offset_ns)));
	if (st->timing != STAGE_TIMED_MESSAGE) {
		json_object_set_new(args, "timing",
				    pf_string(stage_timing__name((enum stage_timing)st->timing)));
		json_object_set_new(
		    args, "timing_note",
		    pf_string(stage_timing__meaning((enum stage_timing)st->timing)));
	}
	if (st->who.conn) {
		json_object_set_new(args, "conn", json_integer((json_int_t)st->who.conn));
		json_object_set_new(args, "laddr", pf_string(endpoint__str(&st->who.local).s));
		json_object_set_new(args, "raddr", pf_string(endpoint__str(&st->who.remote).s));
		json_object_set_new(args, "stream_id", json_integer(st->stream_id));
	}
	if (watcher >= 0) {
		json_object_set_new(args, "user_agent", pf_string(t->watchers[watcher].user_agent));
		if (st->who.peer_pid) {
			json_object_set_new(args, "peer_pid", json_integer(st->who.peer_pid));
			json_object_set_new(args, "peer_comm", pf_string(st->who.peer_comm));
		}
	}
	ev = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:o}", "ph", "i", "s", "t", "cat", "stage",
		       "name", name, "pid", (int)st->who.pid, "tid", (int)pp->stages_tid, "args",
		       args);
	pf_emit(p, ev, st->mono_ns, -1);
}

struct pf_slice {
	const struct bind_leg *leg;
	pid_t pid;
	uint32_t tid;
	uint64_t start_ns, end_ns;
};

static void pf_flow(struct perfetto *p, const struct bind_timeline *t, const struct pf_slice *a,
		    const struct pf_slice *b)
{
	char name[BIND_NS_MAX + BIND_NAME_MAX + 8];
	uint64_t id = p->next_flow++;
	json_t *ev;

	snprintf(name, sizeof(name), "bind %s/%s", t->namespace_, t->name);
	/* Inside each slice, so each end binds to its slice and nothing else. */
	ev = json_pack("{s:s, s:s, s:o, s:I, s:i, s:i}", "ph", "s", "cat", "bind", "name",
		       pf_string(name), "id", (json_int_t)id, "pid", (int)a->pid, "tid",
		       (int)a->tid);
	pf_emit(p, ev, a->start_ns + (a->end_ns - a->start_ns) / 2, -1);
	ev = json_pack("{s:s, s:s, s:o, s:I, s:i, s:i, s:s}", "ph", "f", "cat", "bind", "name",
		       pf_string(name), "id", (json_int_t)id, "pid", (int)b->pid, "tid",
		       (int)b->tid, "bp", "e");
	pf_emit(p, ev, b->start_ns + (b->end_ns - b->start_ns) / 2, -1);
}

/* A leg as a complete slice on the process where it ends (a negative one drawn from its later
 * end); false when it was not seen. */
static bool pf_leg_slice(struct perfetto *p, const struct bind_timeline *t,
			 const struct bind_leg *l, struct pf_slice *sl)
{
	const struct actor *own = bind_leg__owner(l);
	int64_t dur = (int64_t)(l->end_ns - l->start_ns);
	char name[BIND_NS_MAX + BIND_NAME_MAX + 64];
	struct pf_proc *pp;
	json_t *args, *ev;

	if (!l->seen || !(pp = pf_proc_of(p, own)))
		return false;
	sl->leg = l;
	sl->pid = own->pid;
	sl->start_ns = dur >= 0 ? l->start_ns : l->end_ns;
	sl->end_ns = dur >= 0 ? l->end_ns : l->start_ns;
	sl->tid = pf_lane(p, pp, sl->start_ns, sl->end_ns);
	args = pf_bind_args(t);
	json_object_set_new(args, "leg", json_string(leg__name(l->leg)));
	json_object_set_new(args, "from", json_string(l->from_name));
	json_object_set_new(args, "to", json_string(l->to_name));
	json_object_set_new(args, "from_pid", json_integer(l->from->who.pid));
	json_object_set_new(args, "to_pid", json_integer(l->to->who.pid));
	json_object_set_new(args, "duration_ns", json_integer(dur));
	json_object_set_new(args, "description", json_string(leg__description(l->leg)));
	if (l->watcher >= 0) {
		json_object_set_new(args, "watcher", json_integer(l->watcher));
		json_object_set_new(args, "user_agent",
				    pf_string(t->watchers[l->watcher].user_agent));
	}
	if (l->leg == LEG_TOTAL) {
		json_object_set_new(args, "result", json_string(bind_result__name(t->result)));
		json_object_set_new(args, "node", pf_string(t->node));
		json_object_set_new(args, "revision", json_integer(t->revision));
		snprintf(name, sizeof(name), "bind %s/%s", t->namespace_, t->name);
	} else {
		snprintf(name, sizeof(name), "%s", leg__name(l->leg));
	}
	ev = json_pack("{s:s, s:s, s:o, s:i, s:i, s:o}", "ph", "X", "cat", "leg", "name",
		       pf_string(name), "pid", (int)sl->pid, "tid", (int)sl->tid, "args", args);
	pf_emit(p, ev, sl->start_ns, (int64_t)(sl->end_ns - sl->start_ns));
	return true;
}

/* Every stage seen as an instant on its process. */
static void pf_stage_instants(struct perfetto *p, const struct bind_timeline *t)
{
	int s, w;

	for (s = 0; s < STAGE_MAX; s++)
		if (t->stages[s].seen)
			pf_instant(p, t, stage__name((enum stage_id)s), &t->stages[s], -1);
	for (w = 0; w < t->n_watchers; w++) {
		if (t->watchers[w].sent.seen)
			pf_instant(p, t, "watch_event_sent", &t->watchers[w].sent, w);
		if (t->watchers[w].received.seen)
			pf_instant(p, t, "watch_event_received", &t->watchers[w].received, w);
	}
}

/* The bind as a whole, with what is missing, at its origin on the process of that stage. */
static void pf_bind_instant(struct perfetto *p, const struct bind_view *view)
{
	const struct stage *first = view->origin_stage;
	const struct bind_timeline *t = view->t;
	char name[BIND_NS_MAX + BIND_NAME_MAX + 64];
	json_t *args, *missing, *ev;
	struct pf_proc *pp;
	int s;

	if (!first || !(pp = pf_proc_of(p, &first->who)))
		return;
	args = pf_bind_args(t);
	missing = json_object();
	json_object_set_new(args, "result", json_string(bind_result__name(t->result)));
	json_object_set_new(args, "status_code", json_integer(t->status_code));
	json_object_set_new(args, "node", pf_string(t->node));
	json_object_set_new(args, "revision", json_integer(t->revision));
	for (s = 0; s < STAGE_MAX; s++)
		if (!t->stages[s].seen && bind_view__has_stage(view, (enum stage_id)s))
			json_object_set_new(missing, stage__name((enum stage_id)s),
					    pf_string(t->stages[s].missing));
	json_object_set_new(args, "missing", missing);
	if (t->gap || t->drops || t->started_midway)
		json_object_set_new(args, "incomplete",
				    json_pack("{s:b, s:b, s:b}", "gap", t->gap, "drops", t->drops,
					      "started_midway", t->started_midway));
	snprintf(name, sizeof(name), "bind %s/%s: %s", t->namespace_, t->name,
		 bind_result__name(t->result));
	ev = json_pack("{s:s, s:s, s:s, s:o, s:i, s:i, s:o}", "ph", "i", "s", "t", "cat", "bind",
		       "name", pf_string(name), "pid", (int)first->who.pid, "tid",
		       (int)pp->stages_tid, "args", args);
	pf_emit(p, ev, first->mono_ns, -1);
}

void perfetto__bind(struct perfetto *p, const struct bind_view *view)
{
	struct pf_slice slices[BIND_MAX_LEGS];
	int n_slices = 0, i, j;

	for (i = 0; i < view->n_legs; i++)
		if (pf_leg_slice(p, view->t, &view->legs[i], &slices[n_slices]))
			n_slices++;
	for (i = 0; i < n_slices; i++)
		for (j = 0; j < n_slices; j++)
			if (bind_leg__follows(slices[i].leg, slices[j].leg))
				pf_flow(p, view->t, &slices[i], &slices[j]);
	pf_stage_instants(p, view->t);
	pf_bind_instant(p, view);
	fflush(p->f);
}

int perfetto__close(struct perfetto *p)
{
	int err = 0, i;

	if (!p)
		return 0;
	if (p->f) {
		fputs("\n]}\n", p->f);
		err = output_file__close(p->f);
		if (err)
			fprintf(stderr, "bindtrace: --perfetto %s: write failed\n", p->path);
	}
	for (i = 0; i < p->n_procs; i++)
		free(p->procs[i]);
	free(p->procs);
	free(p->path);
	free(p);
	return err;
}
