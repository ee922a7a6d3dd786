/* Event dispatch for the bind tracer: what the ring buffer delivers, sent on its way.
 *
 * In the ring buffer's callback (the session's handlers) a data event is recorded and decoded:
 * its connection's decoder (one per (pid, socket), made at first sight, told which end is the
 * client from the listening ports already read) is fed, and the decoded messages go to the
 * outputs and the correlator; a gap the decoder reports is a loss for the correlator. Nothing in
 * the callback reads /proc, asks the kernel about sockets or attaches a probe: an fsync (whose
 * file must be read from /proc), a bind call (whose stack is symbolised from the binary) and the
 * peer of a connection the apiserver accepted (found in /proc, then traced as a watcher) are
 * queued, and dispatch__run_queued() does them from the poll loop, after each read of the ring
 * (the peers of connections older than the tracer are looked up beforehand: see
 * dispatch__peer_known).
 * The correlator resolves a bind by timestamps when it closes it (after the queue was run), so the
 * order of queued events among decoded messages changes nothing in its timelines. */
#ifndef BINDTRACE_DISPATCH_H
#define BINDTRACE_DISPATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "correlate.h"

struct bind_metrics;
struct correlator;
struct session_handlers;
struct sockets;
struct targets;
struct trace_outputs;
struct watchers;

struct dispatch_deps {
	struct targets *targets;
	struct sockets *sockets;
	struct watchers *watchers;
	struct correlator *corr;
	struct trace_outputs *outputs;
	struct bind_metrics *metrics; /* NULL without --metrics */
};

struct dispatch_stats {
	bool conn_table_full;  /* some connection's traffic could not be decoded */
	uint64_t conns_closed; /* decoders freed after their socket closed */
};

struct dispatch;

/* NULL with errno set. deps must outlive the dispatch. */
struct dispatch *dispatch__new(const struct dispatch_deps *deps);
void dispatch__free(struct dispatch *d);

/* The handlers for session__run (between is left to the caller). */
void dispatch__handlers(struct dispatch *d, struct session_handlers *h);
/* The process at the other end of pid's connection conn is known already (found when the
 * apiserver was attached, for the clients it had accepted before): the connection is named from
 * its first event on, which on an idle watch may be a bind's event. */
void dispatch__peer_known(struct dispatch *d, pid_t pid, uint64_t conn, pid_t peer);
/* What the handlers queued, in order: fsyncs, bind calls, peers of new connections. */
void dispatch__run_queued(struct dispatch *d);
/* Connections idle for 10 s whose socket is gone from their process: decoders freed. */
void dispatch__sweep(struct dispatch *d, uint64_t now_ns);
/* pid's connections belong to another role now (a watcher was the restarted scheduler). */
void dispatch__relabel(struct dispatch *d, pid_t pid, enum process_role role, const char *comm);
void dispatch__stats(const struct dispatch *d, struct dispatch_stats *stats);

#endif
