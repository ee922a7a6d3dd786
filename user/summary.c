/* --summary and the summary at exit: per leg the durations kept, sorted when printed. A tracer
 * runs for days, so what is kept is bounded: every duration up to SUMMARY_KEEP per leg (the
 * percentiles are exact), then a uniform random sample of that many (reservoir sampling,
 * Vitter's algorithm R) with the count and the maximum still exact. */
#include <inttypes.h>
#include <stdlib.h>

#include "summary.h"

struct series {
	int64_t *v;
	size_t n, cap; /* kept; n <= SUMMARY_KEEP */
	uint64_t seen;
	int64_t max;
};

/* Why binds lacked a stage: by the reason's label (stage__reason_label, a fixed set of
 * static strings, the metric's), the first reason seen in full as the example. */
#define SUMMARY_WHY 4

struct missing_stage {
	uint64_t n;
	struct {
		const char *label;
		uint64_t n;
	} why[SUMMARY_WHY];
	uint64_t other; /* beyond SUMMARY_WHY labels */
	char example[BIND_REASON_MAX];
};

struct summary {
	struct series legs[LEG_MAX];
	struct missing_stage missing[STAGE_MAX];
	/* Binds missing part of their etcd entry's raft path (bind_timeline.raft, counted in
	 * t->missing beyond the stages), with the first such reason. */
	uint64_t raft_missing;
	char raft_example[BIND_REASON_MAX];
	uint64_t rng; /* xorshift64: the sample is the same from run to run */
	uint64_t binds, complete, unschedulable, conflicts, other;
	uint64_t hist[64]; /* total latency, log2 of microseconds */
};

struct summary *summary__new(void)
{
	struct summary *s = calloc(1, sizeof(struct summary));

	if (s)
		s->rng = 0x9e3779b97f4a7c15ull;
	return s;
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

static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void series_add(struct summary *sum, struct series *s, int64_t v)
{
	uint64_t slot;

	if (!s->seen++ || v > s->max)
		s->max = v;
	if (s->n == SUMMARY_KEEP) {
		/* The seen-th value replaces a kept one with probability KEEP / seen. */
		slot = next_random(&sum->rng) % s->seen;
		if (slot < SUMMARY_KEEP)
			s->v[slot] = v;
		return;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;

		if (cap > SUMMARY_KEEP)
			cap = SUMMARY_KEEP;
		int64_t *n = realloc(s->v, cap * sizeof(*n));

		if (!n)
			return;
		s->v = n;
		s->cap = cap;
	}
	s->v[s->n++] = v;
}

static void add_missing(struct summary *s, const struct bind_timeline *t)
{
	const char *raft_why;
	int st, i;

	for (st = 0; st < STAGE_MAX; st++) {
		struct missing_stage *m = &s->missing[st];
		const char *label;

		if (t->stages[st].seen || !stage__counts_missing(t, (enum stage_id)st))
			continue;
		label = stage__reason_label(t->stages[st].missing);
		if (!m->n++)
			snprintf(m->example, sizeof(m->example), "%s", t->stages[st].missing);
		for (i = 0; i < SUMMARY_WHY && m->why[i].label && m->why[i].label != label; i++)
			;
		if (i == SUMMARY_WHY) {
			m->other++;
			continue;
		}
		m->why[i].label = label;
		m->why[i].n++;
	}
	if (bind_timeline__raft_missing(t, &raft_why) && !s->raft_missing++)
		snprintf(s->raft_example, sizeof(s->raft_example), "%s", raft_why);
}

/* Which stages the incomplete binds lacked, how many, and why. */
static void print_missing(FILE *out, const struct summary *s)
{
	bool any = s->raft_missing != 0;
	int st, i;

	for (st = 0; st < STAGE_MAX; st++)
		any |= s->missing[st].n != 0;
	if (!any)
		return;
	fprintf(out, "%-24s %7s  %s\n", "MISSING STAGE", "BINDS",
		"WHY (binds by reason; the first reason seen, in full)");
	for (st = 0; st < STAGE_MAX; st++) {
		const struct missing_stage *m = &s->missing[st];

		if (!m->n)
			continue;
		fprintf(out, "%-24s %7" PRIu64 " ", stage__name((enum stage_id)st), m->n);
		for (i = 0; i < SUMMARY_WHY && m->why[i].label; i++)
			fprintf(out, "%s%s %" PRIu64, i ? ", " : " ", m->why[i].label, m->why[i].n);
		if (m->other)
			fprintf(out, ", other %" PRIu64, m->other);
		fprintf(out, ": \"%s\"\n", m->example);
	}
	if (s->raft_missing)
		fprintf(out,
			"%-24s %7" PRIu64 "  part of the etcd entry's raft path (--json \"raft\"): "
			"\"%s\"\n",
			"raft", s->raft_missing, s->raft_example);
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
	if (t->result == BIND_RESULT_SCHEDULER_ERROR) {
		s->other++;
		return;
	}
	if (t->result == BIND_RESULT_CONFLICT)
		s->conflicts++;
	else if (t->result != BIND_RESULT_BOUND)
		s->other++;
	if (!t->missing)
		s->complete++;
	else
		add_missing(s, t);
	for (l = 0; l < LEG_MAX; l++) {
		if (l == LEG_WATCH_FANOUT || l == LEG_WATCH_DELIVERY) {
			for (w = 0; w < t->n_watchers; w++)
				if (leg__duration(t, (enum leg_id)l, w, &d))
					series_add(s, &s->legs[l], d);
		} else if (leg__duration(t, (enum leg_id)l, -1, &d)) {
			series_add(s, &s->legs[l], d);
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
	return ns__ms(s->v[i < s->n ? i : s->n - 1]);
}

void summary__print(FILE *out, const struct summary *s)
{
	uint64_t most = 0;
	bool sampled = false;
	int l, b, lo = 64, hi = -1;

	fprintf(out,
		"summary: %" PRIu64 " binds, %" PRIu64 " complete, %" PRIu64
		" unschedulable, %" PRIu64 " conflicts, %" PRIu64 " other results\n",
		s->binds, s->complete, s->unschedulable, s->conflicts, s->other);
	print_missing(out, s);
	fprintf(out, "%-24s %7s %10s %10s %10s %10s  (ms)\n", "LEG", "COUNT", "P50", "P90", "P99",
		"MAX");
	for (l = 0; l < LEG_MAX; l++) {
		struct series *sr = (struct series *)&s->legs[l];

		if (leg__raft((enum leg_id)l) && !sr->seen)
			continue; /* no raft in sight: the summary is as it was */
		if (sr->n)
			qsort(sr->v, sr->n, sizeof(*sr->v), cmp_i64);
		fprintf(out, "%-24s %7" PRIu64 " %10.3f %10.3f %10.3f %10.3f\n",
			leg__name((enum leg_id)l), sr->seen, pct(sr, 50), pct(sr, 90), pct(sr, 99),
			sr->seen ? ns__ms(sr->max) : 0.0);
		if (sr->seen > sr->n)
			sampled = true;
	}
	if (sampled)
		fprintf(
		    out,
		    "(percentiles of legs with more than %d durations are from a uniform sample "
		    "of %d; COUNT and MAX are exact)\n",
		    SUMMARY_KEEP, SUMMARY_KEEP);
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
