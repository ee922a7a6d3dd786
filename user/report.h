/* --report FILE --pod NS/NAME: a Markdown write-up of one pod's bind — the path scheduler ->
 * apiserver -> etcd -> watchers with each leg's time, the line that issued the bind cited at its
 * version, nodeName "" -> node as each watcher saw it, the stages that are missing and why — and
 * FILE.svg, a waterfall of the legs, referenced from the Markdown.
 *
 * Also here: the legs of a bind as drawn (waterfall rows, Perfetto slices), with the stages at
 * their ends, shared with perfetto.c. */
#ifndef BINDTRACE_REPORT_H
#define BINDTRACE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "correlate.h"
#include "evidence.h"
#include "timeline.h"

#define BIND_MAX_LEGS (LEG_MAX + 2 * BIND_MAX_WATCHERS)

/* One leg of one bind: from the stage `from` to the stage `to` (wal_fsync: the fsync stage's
 * first_ns to last_ns). `seen` when both ends are. */
struct bind_leg {
	enum leg_id leg;
	int watcher; /* per-watcher legs; -1 otherwise */
	const struct stage *from, *to;
	const char *from_name, *to_name; /* stage names */
	bool seen;
	uint64_t start_ns, end_ns; /* when seen */
};

/* The legs of t in reading order: total, the bind's path, then per watcher fanout and delivery.
 * Unschedulable binds have none. Returns the count (at most BIND_MAX_LEGS). */
int bind_legs__list(const struct bind_timeline *t, struct bind_leg *out);
/* The process that did a leg's end (where the leg is drawn). */
const struct actor *bind_leg__owner(const struct bind_leg *l);

struct report;

/* Check FILE and FILE.svg can be created (without leaving them behind). NULL with errno after a
 * one-line "bindtrace: --report FILE: ..." on stderr. */
struct report *report__open(const char *path, const char *ns, const char *name,
			    int64_t wall_offset_ns);
void report__process(struct report *r, const struct process_identity *id);
/* A finished bind: written when it is of the pod (a bound result is not replaced by a later
 * failed attempt). 0, or -errno after a message. */
int report__bind(struct report *r, const struct bind_timeline *t);
/* -ENOENT after "bindtrace: --report: no bind of NS/NAME was seen" when none was; else 0. */
int report__finish(struct report *r);
void report__close(struct report *r);

/* The two documents, for tests. svg_href: how the Markdown refers to the SVG. */
int report__write_markdown(FILE *out, const struct bind_timeline *t, const char *svg_href,
			   const struct process_identity *procs, int n_procs,
			   int64_t wall_offset_ns);
int report__write_svg(FILE *out, const struct bind_timeline *t);

#endif
