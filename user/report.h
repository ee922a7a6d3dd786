/* --report FILE --pod NS/NAME: a Markdown write-up of one pod's bind — the path scheduler ->
 * apiserver -> etcd -> watchers with each leg's time, the line that issued the bind cited at its
 * version, nodeName "" -> node as each watcher saw it, the stages that are missing and why — and
 * FILE.svg, a waterfall of the legs, referenced from the Markdown. Both read the bind view. */
#ifndef BINDTRACE_REPORT_H
#define BINDTRACE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bindview.h"

struct identities;

struct report;

/* Check FILE and FILE.svg can be created (without leaving them behind). NULL with errno after a
 * one-line "bindtrace: --report FILE: ..." on stderr. */
struct report *report__open(const char *path, const char *ns, const char *name);
/* A finished bind: written when it is of the pod (a bound result is not replaced by a later
 * failed attempt), its processes table from the registry. 0, or -errno after a message. */
int report__bind(struct report *r, const struct bind_view *view, const struct identities *ids);
/* -ENOENT after "bindtrace: --report: no bind of NS/NAME was seen" when none was; else 0. */
int report__finish(struct report *r);
void report__close(struct report *r);

/* The two documents, for tests. svg_href: how the Markdown refers to the SVG. */
int report__write_markdown(FILE *out, const struct bind_view *view, const char *svg_href,
			   const struct identities *ids);
int report__write_svg(FILE *out, const struct bind_view *view);

#endif
