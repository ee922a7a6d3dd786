/* The percentile summary over many binds (--summary, and at exit): per leg the count, p50, p90,
 * p99 and max, per watcher for the watch legs; then a log2 histogram of the total bind latency.
 * The legs are the bind view's. Memory is bounded: at most SUMMARY_KEEP durations per leg are
 * kept (all of them up to that, then a uniform sample; counts and maxima stay exact). */
#ifndef BINDTRACE_SUMMARY_H
#define BINDTRACE_SUMMARY_H

#include <stdio.h>

#include "bindview.h"

#define SUMMARY_KEEP 16384

struct summary;

struct summary *summary__new(void);
void summary__free(struct summary *s);
void summary__add(struct summary *s, const struct bind_view *view);
void summary__print(FILE *out, const struct summary *s);

#endif
