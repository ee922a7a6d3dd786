/* Presenting bind timelines: the human block and the JSON object of one bind, and the
 * percentile summary over many. The legs they print are the bind view's (bindview.h). */
#ifndef BINDTRACE_TIMELINE_H
#define BINDTRACE_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bindview.h"

/* The human block of one bind. */
void timeline__print(FILE *out, const struct bind_view *view);
/* One JSON object on one line. */
void timeline__print_json(FILE *out, const struct bind_view *view);

struct summary;
struct summary *summary__new(void);
void summary__free(struct summary *s);
void summary__add(struct summary *s, const struct bind_view *view);
/* Per leg: count, p50, p90, p99, max; then a log2 histogram of total bind latency. */
void summary__print(FILE *out, const struct summary *s);

#endif
