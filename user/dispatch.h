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
#include <stdio.h>
#include <sys/types.h>

#include "correlate.h"

struct bind_metrics;
struct correlator;
struct data_event;
struct decoded_msg;
struct fsync_event;
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
	/* Shown every decoded message before the outputs and the correlator are (NULL in the
	 * tracer; the golden test records them). */
	void (*tap)(const struct actor *who, const struct decoded_msg *msg, void *ctx);
	void *tap_ctx;
};

struct dispatch_stats {
	bool conn_table_full;  /* some connection's traffic could not be decoded */
	uint64_t conns_closed; /* decoders freed after their socket closed */
	/* HTTP/2 streams dropped past DECODE_MAX_STREAMS open on one connection (their messages
	 * are missing), and messages that did not decode, over every connection seen */
	uint64_t streams_evicted;
	uint64_t decode_errors;
};

struct dispatch;
struct dispatch_conn;

/* NULL with errno set. deps must outlive the dispatch. */
struct dispatch *dispatch__new(const struct dispatch_deps *deps);
void dispatch__free(struct dispatch *d);

/* The handlers for session__run (between is left to the caller). */
void dispatch__handlers(struct dispatch *d, struct session_handlers *h);
/* What the data handler does with an event once it knows whose connection it is, for a replay
 * of recorded events (the golden test) to go through the same code as the tracer.
 * dispatch__conn: the connection (who->pid, who->conn), made at first sight from who, its decoder
 * told which end is the client (client_dir: CONN_DIR_OUT this end dialed, CONN_DIR_IN it
 * accepted, -1 the decoder finds out); *made says it was new. NULL: the table is full (counted
 * in the stats) or out of memory.
 * dispatch__data: one data event of c recorded and decoded: to the outputs, into the decoder
 * (its messages to the tap, the outputs and the correlator); a gap before it is a loss for the
 * correlator and the metrics. Returns the bytes missed before it (0: none).
 * dispatch__fsync: an fsync whose file is known (the tracer reads it from /proc in the loop), to
 * the outputs and the correlator. */
struct dispatch_conn *dispatch__conn(struct dispatch *d, const struct actor *who, int client_dir,
				     bool *made);
const struct actor *dispatch_conn__who(const struct dispatch_conn *c);
int64_t dispatch__data(struct dispatch *d, struct dispatch_conn *c, const struct data_event *e);
void dispatch__fsync(struct dispatch *d, const struct actor *who, const struct fsync_event *e,
		     const char *path);
/* The process at the other end of pid's connection conn is known already (found when the
 * apiserver was attached, for the clients it had accepted before): the connection is named from
 * its first event on, which on an idle watch may be a bind's event. */
void dispatch__peer_known(struct dispatch *d, pid_t pid, uint64_t conn, pid_t peer);
/* What the handlers queued, in order: fsyncs, bind calls, peers of new connections. */
void dispatch__run_queued(struct dispatch *d);
/* Connections idle for 10 s of the records' clock (read_to_ns: how far the records read go) whose
 * socket is gone from their process: decoders freed. */
void dispatch__sweep(struct dispatch *d, uint64_t read_to_ns);
/* pid's connections belong to another role now (a watcher was the restarted scheduler); with
 * reads_via_syscall its reads come from its peers' Writes from now on (peer_feed__reader_reads),
 * where as a watcher they came from its own Read probes. */
void dispatch__relabel(struct dispatch *d, pid_t pid, enum process_role role, const char *comm,
		       bool reads_via_syscall);
void dispatch__stats(const struct dispatch *d, struct dispatch_stats *stats);

/* The reads of processes whose TLS Reads are not probed (TARGET_READS_VIA_SYSCALL) come from
 * their traced peers' Writes, released by their read(2)s (peerfeed.h): the data handler queues
 * the Writes, the sock_read handler releases them as the reader's data events.
 * dispatch__expire: Writes left unread for PEER_FEED_MAX_AGE_NS dropped (a gap for the reader);
 * called on the tracer's clock. dispatch__print_peer_feed: its counts, one line (when any read
 * went that way). */
void dispatch__expire(struct dispatch *d, uint64_t now_ns);
void dispatch__print_peer_feed(const struct dispatch *d, FILE *out);
/* A traced process exited: what its peers write to it is not read (not a gap). */
void dispatch__process_gone(struct dispatch *d, pid_t pid);

#endif
