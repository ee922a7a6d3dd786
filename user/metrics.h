/* A registry of Prometheus metrics and its text exposition (format 0.0.4): counters, gauges and
 * histograms, each a family of series told apart by label values. It knows nothing of binds:
 * bind_metrics.c defines bindtrace's families and feeds them, metrics_http.c serves the text.
 *
 * Threads: every call takes the registry's one mutex, held only while a value changes or the
 * text is rendered into memory (never across I/O), so the tracer's updates and a scrape from the
 * server's thread wait at most for each other's few microseconds.
 *
 * Bounds: a family holds at most METRICS_MAX_SERIES series; an update that would create one more
 * is refused (-ENOSPC) and counted (metrics__refused), never silently dropped. Label values are
 * copied (at most METRICS_VALUE_MAX - 1 bytes each, longer ones cut) and escaped on output. */
#ifndef BINDTRACE_METRICS_H
#define BINDTRACE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_MAX_LABELS 6
#define METRICS_MAX_SERIES 256
#define METRICS_MAX_BUCKETS 32
#define METRICS_VALUE_MAX 128

enum metric_type {
	METRIC_COUNTER,
	METRIC_GAUGE,
	METRIC_HISTOGRAM,
};

struct metrics;
struct metric_family;

struct metrics *metrics__new(void);
/* Frees the registry and its families. */
void metrics__free(struct metrics *m);

/* Registers a family. name and help are the caller's static strings (Prometheus naming: counters
 * end in _total, durations are _seconds). labels: NULL-terminated label names (static), at most
 * METRICS_MAX_LABELS, or NULL. Histograms take their upper bounds, increasing, n_buckets <=
 * METRICS_MAX_BUCKETS (+Inf is implicit); others pass NULL, 0. Returns NULL with errno set
 * (EINVAL for a bad definition, ENOMEM). The family lives as long as the registry. */
struct metric_family *metrics__family(struct metrics *m, const char *name, const char *help,
				      enum metric_type type, const char *const *labels,
				      const double *buckets, int n_buckets);

/* Updates of the series whose label values are values[0..n_labels) (NULL when the family has no
 * labels), created at zero on first use. 0, -EINVAL (wrong kind of family, a negative counter
 * increment), or -ENOSPC (the family is full). */
/* Counters and gauges: add v (a counter only increases). */
int metric__add(struct metric_family *f, const char *const *values, double v);
/* Gauges; or a counter copied from a monotonic source (the BPF drop counters). */
int metric__set(struct metric_family *f, const char *const *values, double v);
/* Histograms: one observation. */
int metric__observe(struct metric_family *f, const char *const *values, double v);
/* Creates the series at zero when absent (so that it is exposed before its first update). */
int metric__touch(struct metric_family *f, const char *const *values);
/* Removes every series of the family (for info-style gauges rebuilt from current state). */
void metric__reset(struct metric_family *f);

/* The exposition of every family, in registration order: "# HELP", "# TYPE", then one line per
 * series (histograms: cumulative _bucket lines with le, _sum, _count). A NUL-terminated string
 * from malloc, its length in *len; NULL with errno ENOMEM. */
char *metrics__render(struct metrics *m, size_t *len);

/* How many updates were refused because a family was full. */
uint64_t metrics__refused(struct metrics *m);

#endif
