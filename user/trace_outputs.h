/* The file outputs of the bind tracer: where the per-bind timeline goes (stdout, or --output
 * FILE), --perfetto (Chrome trace-event JSON), --evidence (per-bind decoded frames, kernel events
 * and binary identities, kept under --evidence-max-size) and --report (Markdown write-up of one
 * bind with an SVG waterfall); and the OTLP exporter (--otlp, or OTEL_EXPORTER_OTLP_*ENDPOINT),
 * which sends the finished binds as traces. They see everything the tracer sees, in order, and
 * the finished binds. */
#ifndef BINDTRACE_TRACE_OUTPUTS_H
#define BINDTRACE_TRACE_OUTPUTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "bindview.h"
#include "decode.h"
#include "endpoint.h"
#include "events.h"
#include "otlp.h"

/* Processes of one role given with --scheduler-pid etc. (each option repeatable), and the
 * addresses of --node-address (repeatable). */
#define TRACE_PIDS_PER_ROLE 8
#define TRACE_NODE_ADDRS 8
#define TRACE_NODE_MAX 254 /* a Kubernetes node name: a DNS subdomain, at most 253 */

struct evidence_quota_stats;
struct go_binary;

struct trace_options {
	bool check;
	bool json;
	bool summary_only;
	bool watchers;			/* also trace the apiserver's local clients */
	bool probe_reads;		/* the apiserver's TLS Reads probed (peerfeed.h) */
	bool quiet;			/* no per-bind printing (metrics or files only) */
	const char *metrics;		/* --metrics ADDR to serve Prometheus metrics on */
	const char *output;		/* file the per-bind output goes to instead of stdout */
	const char *perfetto;		/* file */
	const char *evidence;		/* directory */
	uint64_t evidence_max_bytes;	/* --evidence kept under this size (0: no bound) */
	const char *report;		/* file; needs pod_name */
	const char *otlp;		/* --otlp URL: the collector's base URL */
	unsigned long otlp_queue_bytes; /* --otlp-queue-size; 0: the default */
	char pod_ns[64];
	char pod_name[254];
	char namespace_[64];
	unsigned long count;
	unsigned long duration_s;
	unsigned long ringbuf_bytes;
	unsigned long linger_ms;
	int nice;	 /* --nice N: the tracer's threads run at this nice value once attached */
	bool nice_given; /* --nice given: idle or N */
	bool nice_idle;	 /* --nice idle, the default: SCHED_IDLE while the ring buffer holds
			  * (idle_reader.h) */
	/* --scheduler-pid, --apiserver-pid, --etcd-pid: n of each, in the order given. */
	struct trace_pids {
		pid_t pid[TRACE_PIDS_PER_ROLE];
		int n;
	} scheduler_pids, apiserver_pids, etcd_pids;
	/* --node NAME: the node whose processes are traced, named in every output ("": not
	 * given; OTLP then names the host). --node-address: its addresses (port 0); processes found
	 * by name are traced only when they listen on or connect from one of them. */
	char node[TRACE_NODE_MAX];
	struct endpoint node_addrs[TRACE_NODE_ADDRS];
	int n_node_addrs;
};

struct trace_outputs;

/* NULL with errno set, after a one-line error on stderr, when a file or directory cannot be
 * created. Files are created 0600 (they hold request contents). */
struct trace_outputs *trace_outputs__new(const struct trace_options *opt, int64_t wall_offset_ns);
/* Where the per-bind output (timeline or JSON) goes: stdout, or the --output file (appended to,
 * 0600); NULL while --output could not be reopened (said once; the next SIGHUP tries again). */
FILE *trace_outputs__stream(struct trace_outputs *o);
/* The --evidence size bound's state, for the metrics: false without --evidence. */
bool trace_outputs__evidence_stats(const struct trace_outputs *o, struct evidence_quota_stats *s);
/* An attached process and its binary's identity. */
void trace_outputs__process(struct trace_outputs *o, const char *role, pid_t pid, const char *exe,
			    const char *go_version, const char *module_version,
			    struct go_binary *gb);
/* Everything the tracer sees, in order: raw data events, decoded messages, fsyncs. */
void trace_outputs__data(struct trace_outputs *o, const struct actor *who,
			 const struct data_event *e);
void trace_outputs__message(struct trace_outputs *o, const struct actor *who,
			    const struct decoded_msg *msg);
void trace_outputs__fsync(struct trace_outputs *o, const struct actor *who,
			  const struct fsync_event *e, const char *path);
/* A finished bind (already filtered by --pod/--namespace/--count): its bind view, made with the
 * run's wall-clock offset, goes to each output. */
void trace_outputs__bind(struct trace_outputs *o, const struct bind_timeline *t);
/* The OTLP exporter's counters; false when it is off. */
bool trace_outputs__otlp_stats(struct trace_outputs *o, struct otlp_stats *s);
/* SIGHUP: reopen the files written as the trace goes (after logrotate moved them): --output is
 * closed and opened again at its path; --perfetto ends its file validly and starts a new one at
 * the same path. 0, or -errno after a message. */
int trace_outputs__reopen(struct trace_outputs *o);
/* Close the files; write what is written at the end (the report); say on stderr what the
 * evidence bound removed; send what the OTLP exporter holds (waiting a few seconds at most) and
 * say its totals. 0, or -errno after a message. */
int trace_outputs__finish(struct trace_outputs *o);
void trace_outputs__free(struct trace_outputs *o);

#endif
