/* bindtrace's metric families over the registry (metrics.c). The legs and their durations come
 * from the bind view (bindview.h): bind_metrics__bind() walks its legs. */
#include "bind_metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "bindview.h"
#include "util.h"
#include "version.h"

/* 50 us to 10 s: finer than kube-apiserver's request buckets, which start at 50 ms; a bind on
 * an idle control plane takes a few ms and its network legs tens of us. */
static const double duration_buckets[] = {
	0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
	0.05,	 0.1,	 0.2,	 0.5,	 1,	2,     5,     10,
};
#define N_DURATION_BUCKETS ((int)(sizeof(duration_buckets) / sizeof(duration_buckets[0])))

static const char *const no_labels[] = { NULL };
static const char *const build_labels[] = { "version", "commit", "libbpf", NULL };
static const char *const target_labels[] = { "role", "pid", "version", "go_version", "node", NULL };
static const char *const role_labels[] = { "role", NULL };
static const char *const result_labels[] = { "result", NULL };
static const char *const leg_labels[] = { "leg", NULL };
static const char *const missing_labels[] = { "stage", "reason", NULL };
static const char *const reason_labels[] = { "reason", NULL };

/* The roles with a target of their own (watchers come and go and are not reported). */
static const enum process_role target_roles[] = { ROLE_SCHEDULER, ROLE_APISERVER, ROLE_ETCD };
#define N_TARGET_ROLES 3
#define MAX_TARGET_ROWS 16

struct bind_metrics {
	struct metrics *registry;
	char node[256]; /* --node, "" when not given: target_info's node label */
	struct metric_family *build_info;
	struct metric_family *target_info;
	struct metric_family *target_attached;
	struct metric_family *binds;
	struct metric_family *total;
	struct metric_family *legs;
	struct metric_family *missing;
	struct metric_family *drops;
	struct metric_family *truncated;
	struct metric_family *gaps;
	struct metric_family *gap_bytes;
	struct metric_family *refused;
	struct metric_family *otlp_exported, *otlp_dropped, *otlp_queue;
	struct metric_family *open_binds;
	struct metric_family *read_behind;
	struct metric_family *evicted;
	struct metric_family *evidence_bytes;
	struct metric_family *evidence_max;
	struct metric_family *evidence_removed;
	int attached[N_TARGET_ROLES]; /* between targets_begin and targets_end */
	/* The targets reported, last round [0] and this one [1]: target_info is rebuilt only when
	 * they differ, so a scrape can fall between its reset and its refill only on a restart. */
	struct target_row {
		enum process_role role;
		pid_t pid;
		char version[64];
		char go_version[32];
	} rows[2][MAX_TARGET_ROWS];
	int n_rows[2];
};

static int role_index(enum process_role role)
{
	int i;

	for (i = 0; i < N_TARGET_ROLES; i++)
		if (target_roles[i] == role)
			return i;
	return -1;
}

struct bind_metrics *bind_metrics__new(void)
{
	struct bind_metrics *bm = calloc(1, sizeof(*bm));
	struct metrics *r;
	int i;

	if (!bm)
		return NULL;
	r = bm->registry = metrics__new();
	if (!r)
		goto fail;
	bm->build_info =
	    metrics__family(r, "bindtrace_build_info",
			    "bindtrace's version, commit and libbpf version (value always 1)",
			    METRIC_GAUGE, build_labels, NULL, 0);
	bm->target_info = metrics__family(
	    r, "bindtrace_target_info",
	    "A traced process: its role, pid, Kubernetes or etcd version, Go version and the node "
	    "given with --node (value 1)",
	    METRIC_GAUGE, target_labels, NULL, 0);
	bm->target_attached = metrics__family(
	    r, "bindtrace_target_attached",
	    "Processes of this role bindtrace is attached to (0: exited, waiting for it to return)",
	    METRIC_GAUGE, role_labels, NULL, 0);
	bm->binds = metrics__family(r, "bindtrace_binds_total", "Pod binds seen, by result",
				    METRIC_COUNTER, result_labels, NULL, 0);
	bm->total = metrics__family(
	    r, "bindtrace_bind_duration_seconds",
	    "Bind latency: the scheduler's first byte of POST pods/NAME/binding to the last byte "
	    "of the answer read by the scheduler",
	    METRIC_HISTOGRAM, no_labels, duration_buckets, N_DURATION_BUCKETS);
	bm->legs = metrics__family(
	    r, "bindtrace_bind_leg_duration_seconds",
	    "Duration of each leg of a bind (the README's legs; watch legs once per watcher)",
	    METRIC_HISTOGRAM, leg_labels, duration_buckets, N_DURATION_BUCKETS);
	bm->missing = metrics__family(r, "bindtrace_missing_stages_total",
				      "Stages of binds that were not observed, by stage and reason",
				      METRIC_COUNTER, missing_labels, NULL, 0);
	bm->drops =
	    metrics__family(r, "bindtrace_ringbuf_drops_total",
			    "Events the BPF programs could not put in the ring buffer (full)",
			    METRIC_COUNTER, no_labels, NULL, 0);
	bm->truncated = metrics__family(
	    r, "bindtrace_capture_truncated_bytes_total",
	    "Bytes of TLS or socket calls beyond what one call's events can carry, not captured",
	    METRIC_COUNTER, no_labels, NULL, 0);
	bm->gaps = metrics__family(r, "bindtrace_capture_gaps_total",
				   "Gaps in a connection's captured bytes, by the process's role",
				   METRIC_COUNTER, role_labels, NULL, 0);
	bm->gap_bytes = metrics__family(r, "bindtrace_capture_gap_bytes_total",
					"Bytes lost in capture gaps, by the process's role",
					METRIC_COUNTER, role_labels, NULL, 0);
	bm->refused =
	    metrics__family(r, "bindtrace_metrics_series_refused_total",
			    "Metric updates refused because their family reached its series limit",
			    METRIC_COUNTER, no_labels, NULL, 0);
	bm->otlp_exported = metrics__family(r, "bindtrace_otlp_spans_exported_total",
					    "Spans of binds the OTLP collector accepted (--otlp)",
					    METRIC_COUNTER, no_labels, NULL, 0);
	bm->otlp_dropped = metrics__family(
	    r, "bindtrace_otlp_spans_dropped_total",
	    "Spans of binds not exported, by reason: queue_full (the collector is slow or away), "
	    "export_failed, rejected (by the collector) (--otlp)",
	    METRIC_COUNTER, reason_labels, NULL, 0);
	bm->otlp_queue = metrics__family(
	    r, "bindtrace_otlp_queue_bytes",
	    "Bytes of encoded spans waiting for the OTLP collector, the batch in flight included",
	    METRIC_GAUGE, no_labels, NULL, 0);
	bm->open_binds =
	    metrics__family(r, "bindtrace_open_binds", "Binds in flight: seen, not yet finished",
			    METRIC_GAUGE, no_labels, NULL, 0);
	bm->read_behind = metrics__family(
	    r, "bindtrace_read_behind_seconds",
	    "How old the newest record of the tracer's last read of its ring buffer was: "
	    "milliseconds while it keeps up, seconds while it reads a backlog (held off the CPU)",
	    METRIC_GAUGE, no_labels, NULL, 0);
	bm->evicted = metrics__family(
	    r, "bindtrace_binds_evicted_total",
	    "Binds finished early, as they were, because the table of binds in flight was full",
	    METRIC_COUNTER, no_labels, NULL, 0);
	bm->evidence_bytes =
	    metrics__family(r, "bindtrace_evidence_bytes",
			    "Bytes on disk of the --evidence directory's bind directories",
			    METRIC_GAUGE, no_labels, NULL, 0);
	bm->evidence_max = metrics__family(r, "bindtrace_evidence_max_bytes",
					   "The --evidence directory's bound (--evidence-max-size)",
					   METRIC_GAUGE, no_labels, NULL, 0);
	bm->evidence_removed = metrics__family(
	    r, "bindtrace_evidence_removed_total",
	    "Binds whose --evidence directory was removed, oldest first, to stay under the bound",
	    METRIC_COUNTER, no_labels, NULL, 0);
	if (!bm->build_info || !bm->target_info || !bm->target_attached || !bm->binds ||
	    !bm->total || !bm->legs || !bm->missing || !bm->drops || !bm->truncated || !bm->gaps ||
	    !bm->gap_bytes || !bm->refused || !bm->otlp_exported || !bm->otlp_dropped ||
	    !bm->otlp_queue || !bm->open_binds || !bm->read_behind || !bm->evicted ||
	    !bm->evidence_bytes || !bm->evidence_max || !bm->evidence_removed)
		goto fail;

	metric__set(bm->build_info,
		    (const char *[]){ bindtrace__version(), bindtrace__commit(),
				      bindtrace__libbpf_version() },
		    1);
	/* Every series a dashboard plots exists from the first scrape, at zero. */
	for (i = BIND_RESULT_UNKNOWN; i <= BIND_RESULT_SCHEDULER_ERROR; i++)
		metric__touch(bm->binds,
			      (const char *[]){ bind_result__name((enum bind_result)i) });
	for (i = 0; i < LEG_MAX; i++)
		if (i != LEG_TOTAL && !leg__raft((enum leg_id)i))
			metric__touch(bm->legs, (const char *[]){ leg__name((enum leg_id)i) });
	metric__touch(bm->total, NULL);
	metric__touch(bm->drops, NULL);
	metric__touch(bm->truncated, NULL);
	metric__touch(bm->refused, NULL);
	metric__touch(bm->open_binds, NULL);
	metric__touch(bm->read_behind, NULL);
	metric__touch(bm->evicted, NULL);
	for (i = 0; i < N_TARGET_ROLES; i++) {
		const char *role[] = { process_role__name(target_roles[i]) };

		metric__touch(bm->gaps, role);
		metric__touch(bm->gap_bytes, role);
	}
	return bm;
fail:
	bind_metrics__free(bm);
	errno = ENOMEM;
	return NULL;
}

void bind_metrics__free(struct bind_metrics *bm)
{
	if (!bm)
		return;
	metrics__free(bm->registry);
	free(bm);
}

void bind_metrics__set_node(struct bind_metrics *bm, const char *node)
{
	if (bm)
		util__copy(bm->node, sizeof(bm->node), node ? node : "");
}

struct metrics *bind_metrics__registry(struct bind_metrics *bm)
{
	return bm->registry;
}

char *bind_metrics__render(void *bm, size_t *len)
{
	return metrics__render(((struct bind_metrics *)bm)->registry, len);
}

static void observe_seconds(struct metric_family *f, const char *leg, int64_t ns)
{
	const char *labels[] = { leg };

	if (ns >= 0)
		metric__observe(f, leg ? labels : NULL, (double)ns / 1e9);
}

void bind_metrics__bind(struct bind_metrics *bm, const struct bind_view *view)
{
	const struct bind_timeline *t = view->t;
	int i, s;

	if (!bm)
		return;
	metric__add(bm->binds, (const char *[]){ bind_result__name(t->result) }, 1);
	/* Every leg of the view that was measured; the watch legs once per watcher. */
	for (i = 0; i < view->n_legs; i++) {
		const struct bind_leg *l = &view->legs[i];

		if (!l->seen)
			continue;
		if (l->leg == LEG_TOTAL)
			observe_seconds(bm->total, NULL, bind_leg__ns(l));
		else
			observe_seconds(bm->legs, leg__name(l->leg), bind_leg__ns(l));
	}
	for (s = 0; s < STAGE_MAX; s++) {
		const struct stage *st = &t->stages[s];

		if (st->seen || !stage__counts_missing(t, (enum stage_id)s))
			continue;
		metric__add(bm->missing,
			    (const char *[]){ stage__name((enum stage_id)s),
					      stage__reason_label(st->missing) },
			    1);
	}
	metric__set(bm->refused, NULL, (double)metrics__refused(bm->registry));
}

void bind_metrics__targets_begin(struct bind_metrics *bm)
{
	if (!bm)
		return;
	memset(bm->attached, 0, sizeof(bm->attached));
	bm->n_rows[1] = 0;
}

void bind_metrics__target(struct bind_metrics *bm, enum process_role role, pid_t pid, bool attached,
			  const char *version, const char *go_version)
{
	struct target_row *row;
	int i = role_index(role);

	if (!bm || i < 0 || !attached)
		return;
	bm->attached[i]++;
	if (bm->n_rows[1] == MAX_TARGET_ROWS)
		return;
	row = &bm->rows[1][bm->n_rows[1]++];
	memset(row, 0, sizeof(*row));
	row->role = role;
	row->pid = pid;
	snprintf(row->version, sizeof(row->version), "%s", version ? version : "");
	snprintf(row->go_version, sizeof(row->go_version), "%s", go_version ? go_version : "");
}

void bind_metrics__targets_end(struct bind_metrics *bm)
{
	int i;

	if (!bm)
		return;
	for (i = 0; i < N_TARGET_ROLES; i++)
		metric__set(bm->target_attached,
			    (const char *[]){ process_role__name(target_roles[i]) },
			    bm->attached[i]);
	if (bm->n_rows[0] == bm->n_rows[1] &&
	    !memcmp(bm->rows[0], bm->rows[1], sizeof(bm->rows[0][0]) * (size_t)bm->n_rows[1]))
		return;
	metric__reset(bm->target_info);
	for (i = 0; i < bm->n_rows[1]; i++) {
		const struct target_row *row = &bm->rows[1][i];
		char pid_text[16];

		snprintf(pid_text, sizeof(pid_text), "%d", (int)row->pid);
		metric__set(bm->target_info,
			    (const char *[]){ process_role__name(row->role), pid_text, row->version,
					      row->go_version, bm->node },
			    1);
	}
	memcpy(bm->rows[0], bm->rows[1], sizeof(bm->rows[0]));
	bm->n_rows[0] = bm->n_rows[1];
}

void bind_metrics__bpf_counters(struct bind_metrics *bm, uint64_t ringbuf_drops,
				uint64_t truncated_bytes)
{
	if (!bm)
		return;
	metric__set(bm->drops, NULL, (double)ringbuf_drops);
	metric__set(bm->truncated, NULL, (double)truncated_bytes);
}

void bind_metrics__correlator(struct bind_metrics *bm, uint64_t open, uint64_t evicted)
{
	if (!bm)
		return;
	metric__set(bm->open_binds, NULL, (double)open);
	metric__set(bm->evicted, NULL, (double)evicted);
}

void bind_metrics__read_behind(struct bind_metrics *bm, uint64_t behind_ns)
{
	if (!bm)
		return;
	metric__set(bm->read_behind, NULL, (double)behind_ns / 1e9);
}

void bind_metrics__evidence(struct bind_metrics *bm, uint64_t bytes, uint64_t max_bytes,
			    uint64_t removed)
{
	if (!bm)
		return;
	metric__set(bm->evidence_bytes, NULL, (double)bytes);
	metric__set(bm->evidence_max, NULL, (double)max_bytes);
	metric__set(bm->evidence_removed, NULL, (double)removed);
}

void bind_metrics__gap(struct bind_metrics *bm, enum process_role role, uint64_t bytes)
{
	const char *labels[] = { process_role__name(role) };

	if (!bm)
		return;
	metric__add(bm->gaps, labels, 1);
	metric__add(bm->gap_bytes, labels, (double)bytes);
}

void bind_metrics__otlp(struct bind_metrics *bm, uint64_t exported, uint64_t queue_full,
			uint64_t failed, uint64_t rejected, uint64_t queued_bytes)
{
	if (!bm)
		return;
	metric__set(bm->otlp_exported, NULL, (double)exported);
	metric__set(bm->otlp_dropped, (const char *[]){ "queue_full" }, (double)queue_full);
	metric__set(bm->otlp_dropped, (const char *[]){ "export_failed" }, (double)failed);
	metric__set(bm->otlp_dropped, (const char *[]){ "rejected" }, (double)rejected);
	metric__set(bm->otlp_queue, NULL, (double)queued_bytes);
}
