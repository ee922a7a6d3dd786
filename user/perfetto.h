/* --perfetto FILE: the binds as a Chrome trace-event JSON file for ui.perfetto.dev and
 * chrome://tracing. One process track per traced process, the legs of each bind as complete
 * ("X") slices on the process where each leg ends, the stages as instant ("i") events, and flow
 * events ("s" -> "f") joining one bind's legs across processes. Timestamps are CLOCK_MONOTONIC
 * microseconds (exact to the ns); the wall-clock offset is in "otherData".
 *
 * The file is written as binds finish (each bind flushed whole) and closed validly by
 * perfetto__close(); a tracer killed outright leaves the trailing "]}" missing, which both
 * viewers accept. */
#ifndef BINDTRACE_PERFETTO_H
#define BINDTRACE_PERFETTO_H

#include <stdint.h>
#include <sys/types.h>

#include "bindview.h"

struct perfetto;

/* Create FILE (0600) and write the header. NULL with errno after a one-line
 * "bindtrace: --perfetto FILE: ..." on stderr. */
struct perfetto *perfetto__open(const char *path, int64_t wall_offset_ns);
/* Name a process track ("kube-scheduler (pid 812)"); processes first met in a bind are named
 * from the stage's comm. sort_index orders the tracks (scheduler, apiserver, etcd, watchers). */
void perfetto__process(struct perfetto *p, pid_t pid, const char *name, int sort_index);
/* The legs of a bind as slices, its stages as instants. */
void perfetto__bind(struct perfetto *p, const struct bind_view *view);
/* Terminate the JSON and close. 0, or -errno after a message (a write failed at any point). */
int perfetto__close(struct perfetto *p);

#endif
