/* bindtrace's Prometheus metrics: the families (names, help, labels, buckets; listed in the
 * README) and what feeds them. Finished binds enter through bind_metrics__bind() alone; the
 * tracer's counters (ring-buffer drops, capture gaps) and its targets' state through the other
 * calls, made where the tracer reads them. Nothing here blocks: each call updates the registry
 * under its lock and returns.
 *
 * Families:
 *   bindtrace_build_info{version,commit,libbpf}                  gauge 1
 *   bindtrace_target_info{role,pid,version,go_version}           gauge 1 per attached target
 *   bindtrace_target_attached{role}                              gauge 1 attached, 0 waiting
 *   bindtrace_binds_total{result}                                counter
 *   bindtrace_bind_duration_seconds                              histogram, the total
 *   bindtrace_bind_leg_duration_seconds{leg}                     histogram per leg
 *   bindtrace_missing_stages_total{stage,reason}                 counter
 *   bindtrace_ringbuf_drops_total                                counter
 *   bindtrace_capture_truncated_bytes_total                      counter
 *   bindtrace_capture_gaps_total{role}, ..._gap_bytes_total{role} counter
 *   bindtrace_metrics_series_refused_total                       counter
 *   bindtrace_otlp_spans_exported_total                          counter (--otlp)
 *   bindtrace_otlp_spans_dropped_total{reason}                   counter (--otlp)
 *   bindtrace_otlp_queue_bytes                                   gauge (--otlp)
 *   bindtrace_open_binds                                         gauge, binds in flight
 *   bindtrace_read_behind_seconds                                gauge, the reader's lag
 *   bindtrace_binds_evicted_total                                counter, closed early (table full)
 *   bindtrace_evidence_bytes, bindtrace_evidence_max_bytes       gauge (with --evidence)
 *   bindtrace_evidence_removed_total                             counter (with --evidence)
 * Histogram buckets run from 50 us to 10 s in 1-2-5 steps. */
#ifndef BINDTRACE_BIND_METRICS_H
#define BINDTRACE_BIND_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bindview.h"

struct metrics;
struct bind_metrics;

/* The registry with every family registered (series for each result and leg at zero) and the
 * build info set. NULL with errno on failure. */
struct bind_metrics *bind_metrics__new(void);
void bind_metrics__free(struct bind_metrics *bm);
/* The node traced (--node), the node label of bindtrace_target_info ("" or NULL: none). */
void bind_metrics__set_node(struct bind_metrics *bm, const char *node);
/* The registry (owned by bm). */
struct metrics *bind_metrics__registry(struct bind_metrics *bm);
/* The registry's Prometheus text (metrics__render) for bm (a struct bind_metrics *): what the
 * --metrics server answers, in the shape of its render function (metrics_render_fn). */
char *bind_metrics__render(void *bm, size_t *len);

/* A finished bind: its result, the duration of each leg it has (per watcher for the watch
 * legs), and each counted missing stage with its reason. The one way binds reach the metrics. */
void bind_metrics__bind(struct bind_metrics *bm, const struct bind_view *view);

/* The targets as they are now: call begin, then target once per role's process, then end.
 * A role given with attached false (exited, waiting for its replacement) reports 0. */
void bind_metrics__targets_begin(struct bind_metrics *bm);
void bind_metrics__target(struct bind_metrics *bm, enum process_role role, pid_t pid, bool attached,
			  const char *version, const char *go_version);
void bind_metrics__targets_end(struct bind_metrics *bm);

/* The BPF side's totals since load (monotonic): ring-buffer drops, bytes of calls cut. */
void bind_metrics__bpf_counters(struct bind_metrics *bm, uint64_t ringbuf_drops,
				uint64_t truncated_bytes);
/* The correlator's binds in flight, and those it closed early, as they were, because its table of
 * open binds was full (they are in bindtrace_binds_total too). */
void bind_metrics__correlator(struct bind_metrics *bm, uint64_t open, uint64_t evicted);
/* How old the newest record of the tracer's last read of its ring buffer was when it ended (ns;
 * session__read_lag): milliseconds while it keeps up, seconds while it reads a backlog. */
void bind_metrics__read_behind(struct bind_metrics *bm, uint64_t behind_ns);
/* --evidence's size bound: bytes its bind directories take, the bound, and the bind directories
 * removed (oldest first) to stay under it. */
void bind_metrics__evidence(struct bind_metrics *bm, uint64_t bytes, uint64_t max_bytes,
			    uint64_t removed);
/* Bytes lost on a connection of a process in this role (a capture gap). */
void bind_metrics__gap(struct bind_metrics *bm, enum process_role role, uint64_t bytes);

/* The OTLP exporter's totals (monotonic, as it counts them): spans the collector accepted,
 * spans dropped by reason (queue full, export failed, rejected by the collector), and the
 * bytes of spans it holds now. Their series appear with the first call (with --otlp). */
void bind_metrics__otlp(struct bind_metrics *bm, uint64_t exported, uint64_t queue_full,
			uint64_t failed, uint64_t rejected, uint64_t queued_bytes);

#endif
