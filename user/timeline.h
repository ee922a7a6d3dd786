/* The bind tracer's stdout: per bind the human block (stages with their offsets from the bind's
 * origin, watchers, legs, what is missing) or, with --json, the bind's JSON object on one line
 * (bind_json.h). Both read the bind view. */
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

#endif
