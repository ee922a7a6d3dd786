/* The default command: attach to kube-scheduler, kube-apiserver and etcd and print one timeline
 * per pod bind. This file is the main loop: it finds and attaches the targets (targets.c), opens
 * the tracing session (session.c), hands each event to the dispatch (dispatch.c: decoders,
 * correlator, outputs), and between reads of the ring buffer does what may block: the queued
 * work, the sockets' refresh, the correlator's clock, restarts and closed connections. Finished
 * binds come back through on_bind to stdout (or --output) and the file outputs. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bind_metrics.h"
#include "commands.h"
#include "correlate.h"
#include "decode.h"
#include "dispatch.h"
#include "evidence_quota.h"
#include "idle_reader.h"
#include "metrics_http.h"
#include "session.h"
#include "sockdiag.h"
#include "sockets.h"
#include "summary.h"
#include "targets.h"
#include "timeline.h"
#include "trace_cli.h"
#include "trace_outputs.h"
#include "util.h"
#include "watchers.h"

#define TICK_NS 50000000ull /* the correlator's clock, and the drop counter */
/* A read that ended this far behind its newest record is said in the exit summary. */
#define READ_BEHIND_SAID_NS 500000000ull
/* --nice idle: time at the priority started with, said from a tenth of a second. */
#define CAUGHT_UP_SAID_NS 100000000ull
/* Are the targets still there? Often: a restarted etcd or kube-scheduler is connected to within
 * a second, and a connection met after its start is read without its HPACK state. */
#define RESTART_CHECK_NS 100000000ull
#define METRICS_NS 1000000000ull
#define SWEEP_NS 5000000000ull /* closed connections */

struct tracer {
	struct trace_options opt;
	struct targets targets;
	struct watchers watchers;
	struct sockets *sockets;
	struct session *session;
	struct dispatch *dispatch;
	struct correlator *corr;
	struct summary *summary;
	struct trace_outputs *outputs;
	struct bind_metrics *metrics;	       /* --metrics */
	struct metrics_server *metrics_server; /* --metrics */
	int64_t wall_offset_ns;
	uint64_t binds_printed, drops_seen;
	uint64_t drops_read_ns;	  /* when the drop counter was last read (0: never) */
	uint64_t max_behind_ns;	  /* the most session__read_lag ever said */
	struct idle_reader *idle; /* --nice idle */
	uint64_t next_tick, next_restart_check, next_metrics, next_sweep;
};

/* --verbose: how long each step of the start and of the exit took, in wall time and in this
 * process's CPU time (issue 15: attach <= 100 ms per binary, exit <= 0.5 s after Ctrl-C; on a
 * loaded machine the wall time alone says more about the load than about the step). */
struct step {
	uint64_t wall_ns, cpu_ns;
};

static void step_begin(struct step *s)
{
	s->wall_ns = util__monotonic_ns();
	s->cpu_ns = util__cpu_ns();
}

static void step_done(const char *phase, const char *what, struct step *s)
{
	struct step now;

	step_begin(&now);
	if (verbose)
		fprintf(stderr, "bindtrace: %s: %s in %.1f ms (CPU %.1f ms)\n", phase, what,
			(double)(now.wall_ns - s->wall_ns) / 1e6,
			(double)(now.cpu_ns - s->cpu_ns) / 1e6);
	*s = now;
}

static void on_known_peer(void *ctx, pid_t api, uint64_t conn, pid_t peer)
{
	struct tracer *tr = ctx;

	dispatch__peer_known(tr->dispatch, api, conn, peer);
}

static void on_attached(void *ctx, const struct target *t)
{
	struct tracer *tr = ctx;

	sockets__track(tr->sockets, t->proc.pid);
	/* A restarted apiserver: its clients already connected. (At start, see start().) */
	if (t->role == ROLE_APISERVER && tr->dispatch)
		watchers__connected(&tr->watchers, t->proc.pid, on_known_peer, tr);
}

static void on_detached(void *ctx, const struct target *t)
{
	struct tracer *tr = ctx;

	sockets__untrack(tr->sockets, t->proc.pid);
	if (tr->dispatch)
		dispatch__process_gone(tr->dispatch, t->proc.pid);
	if (tr->corr)
		correlator__process_gone(tr->corr, t->proc.pid, util__monotonic_ns());
}

static void on_taken_over(void *ctx, pid_t pid, const struct target *t)
{
	struct tracer *tr = ctx;

	if (tr->dispatch)
		dispatch__relabel(tr->dispatch, pid, t->role, t->proc.comm,
				  t->attached && t->reads_via_syscall);
}

static bool wanted(const struct trace_options *opt, const struct bind_timeline *t)
{
	if (opt->namespace_[0] && strcmp(opt->namespace_, t->namespace_) != 0)
		return false;
	if (opt->pod_name[0] &&
	    (strcmp(opt->pod_ns, t->namespace_) != 0 || strcmp(opt->pod_name, t->name) != 0))
		return false;
	return true;
}

static void on_bind(const struct bind_timeline *t, void *ctx)
{
	struct tracer *tr = ctx;
	struct bind_view view;
	FILE *out;

	if (!wanted(&tr->opt, t))
		return;
	if (tr->opt.count && tr->binds_printed >= tr->opt.count)
		return;
	tr->binds_printed++;
	bind_view__init(&view, t, tr->wall_offset_ns);
	view.tracer_node = tr->opt.node;
	summary__add(tr->summary, &view);
	bind_metrics__bind(tr->metrics, &view);
	out = trace_outputs__stream(tr->outputs);
	if (!tr->opt.summary_only && !tr->opt.quiet && out) {
		if (tr->opt.json)
			timeline__print_json(out, &view);
		else
			timeline__print(out, &view);
	}
	trace_outputs__bind(tr->outputs, t);
	if (tr->opt.count && tr->binds_printed >= tr->opt.count)
		session__stop(tr->session);
}

/* --metrics: the registry and its HTTP server, before anything is attached. */
static int start_metrics(struct tracer *tr)
{
	if (!tr->opt.metrics)
		return 0;
	tr->metrics = bind_metrics__new();
	if (!tr->metrics) {
		fprintf(stderr, "bindtrace: --metrics: out of memory\n");
		return -ENOMEM;
	}
	bind_metrics__set_node(tr->metrics, tr->opt.node);
	tr->metrics_server =
	    metrics_server__start(tr->opt.metrics, bind_metrics__render, tr->metrics);
	return tr->metrics_server ? 0 : -EINVAL; /* it said why */
}

static int find_targets(struct tracer *tr)
{
	const enum process_role roles[] = { ROLE_SCHEDULER, ROLE_APISERVER, ROLE_ETCD };
	const struct trace_pids *given[] = { &tr->opt.scheduler_pids, &tr->opt.apiserver_pids,
					     &tr->opt.etcd_pids };
	/* --node with pids and no address: the node is those pids, nothing looked for by name. */
	bool by_name =
	    !tr->opt.node[0] || tr->opt.n_node_addrs || !(given[0]->n + given[1]->n + given[2]->n);
	int found = 0, n, i;

	tr->targets.node = tr->opt.node;
	tr->targets.node_addrs = tr->opt.node_addrs;
	tr->targets.n_node_addrs = tr->opt.n_node_addrs;
	for (i = 0; i < 3; i++) {
		if (!given[i]->n && !by_name)
			continue;
		n = targets__find(&tr->targets, roles[i], given[i]->pid, given[i]->n);
		if (n < 0)
			return n;
		found += n;
	}
	if (!found && tr->opt.n_node_addrs) {
		fprintf(
		    stderr,
		    "bindtrace: no kube-scheduler, kube-apiserver or etcd process listens on or "
		    "connects from node %s's addresses (give them with --scheduler-pid, "
		    "--apiserver-pid, --etcd-pid)\n",
		    tr->opt.node);
		return -ESRCH;
	}
	if (!found) {
		fprintf(stderr,
			"bindtrace: no kube-scheduler, kube-apiserver or etcd process found "
			"(give them with --scheduler-pid, --apiserver-pid, --etcd-pid)\n");
		return -ESRCH;
	}
	return 0;
}

/* Once attached: the correlator (which roles it can expect to see), the dispatch, the outputs'
 * process identities, and the apiserver's clients already connected (named, and traced as
 * watchers). */
static int start(struct tracer *tr)
{
	struct correlator_options copt = {
		.linger_ns = tr->opt.linger_ms * 1000000ull,
		.max_open_ns = 10000000000ull,
		.attach_ns = util__monotonic_ns(),
		.have_scheduler = targets__has(&tr->targets, ROLE_SCHEDULER),
		.have_apiserver = targets__has(&tr->targets, ROLE_APISERVER),
		.have_etcd = targets__has(&tr->targets, ROLE_ETCD),
		.node = tr->opt.node,
		.node_scope = tr->opt.node[0] != '\0',
		.create_from_reads = targets__apiserver_reads_via_syscall(&tr->targets),
	};
	struct dispatch_deps deps = {
		.targets = &tr->targets,
		.sockets = tr->sockets,
		.watchers = &tr->watchers,
		.outputs = tr->outputs,
		.metrics = tr->metrics,
	};
	int i;

	tr->corr = deps.corr = correlator__new(&copt, on_bind, tr);
	tr->summary = summary__new();
	tr->dispatch = tr->corr ? dispatch__new(&deps) : NULL;
	if (!tr->corr || !tr->summary || !tr->dispatch) {
		fprintf(stderr, "bindtrace: out of memory\n");
		return -ENOMEM;
	}
	for (i = 0; i < tr->targets.n; i++) {
		struct target *t = &tr->targets.t[i];

		trace_outputs__process(
		    tr->outputs, process_role__name(t->role), t->proc.pid, t->proc.exe,
		    t->go_version, t->k8s_version[0] ? t->k8s_version : t->module_version, t->gb);
	}
	tr->watchers.enabled = tr->opt.watchers;
	tr->watchers.targets = &tr->targets;
	tr->watchers.sockets = tr->sockets;
	for (i = 0; i < tr->targets.n; i++)
		if (tr->targets.t[i].role == ROLE_APISERVER)
			watchers__connected(&tr->watchers, tr->targets.t[i].proc.pid, on_known_peer,
					    tr);
	return 0;
}

/* The targets' state and the BPF counters, for --metrics: after attaching and once a second. */
static void publish_metrics(struct tracer *tr)
{
	uint64_t counters[COUNTER_MAX];
	struct otlp_stats otlp;
	struct correlator_stats cstats;
	struct evidence_quota_stats ev;
	int i;

	if (!tr->metrics)
		return;
	if (trace_outputs__otlp_stats(tr->outputs, &otlp))
		bind_metrics__otlp(tr->metrics, otlp.spans_exported, otlp.dropped_queue_full,
				   otlp.dropped_failed, otlp.dropped_rejected, otlp.queued_bytes);
	bind_metrics__targets_begin(tr->metrics);
	for (i = 0; i < tr->targets.n; i++) {
		const struct target *t = &tr->targets.t[i];

		bind_metrics__target(tr->metrics, t->role, t->proc.pid, t->attached,
				     t->k8s_version[0] ? t->k8s_version : t->module_version,
				     t->go_version);
	}
	bind_metrics__targets_end(tr->metrics);
	session__counters(tr->session, counters);
	bind_metrics__bpf_counters(tr->metrics, counters[COUNTER_RINGBUF_DROPS],
				   counters[COUNTER_TRUNCATED]);
	bind_metrics__read_behind(tr->metrics, session__read_lag(tr->session));
	if (tr->corr) {
		correlator__stats(tr->corr, &cstats);
		bind_metrics__correlator(tr->metrics, cstats.open, cstats.evicted);
	}
	if (trace_outputs__evidence_stats(tr->outputs, &ev))
		bind_metrics__evidence(tr->metrics, ev.bytes, ev.max_bytes, ev.removed);
}

/* One traced process's connections to what is off the node, each said once. */
struct off_node {
	struct tracer *tr;
	const struct target *t;
	FILE *out;
	struct endpoint said[16];
	int n_said;
};

static void connection_off_node(void *ctx, const struct endpoint *local,
				const struct endpoint *remote, bool listening, uint64_t inode)
{
	struct off_node *a = ctx;
	const struct trace_options *opt = &a->tr->opt;
	struct process_info peer_proc;
	const char *peer = "a process", *what;
	pid_t peer_pid;
	int i;

	(void)inode;
	/* Only what it connected to: the clients it accepted are theirs to trace. */
	if (listening || sockets__is_listening(a->tr->sockets, a->t->proc.pid, local))
		return;
	if (opt->n_node_addrs && endpoint__in(remote, opt->node_addrs, opt->n_node_addrs))
		return;
	peer_pid = sockets__peer(a->tr->sockets, a->t->proc.pid, local, remote, 0);
	if (peer_pid && targets__of(&a->tr->targets, peer_pid))
		return;
	/* Given only pids, a peer on this host not among them is not on the node either. */
	if (!opt->n_node_addrs && !peer_pid)
		return;
	for (i = 0; i < a->n_said; i++)
		if (endpoint__equal(&a->said[i], remote))
			return;
	if (a->n_said < (int)(sizeof(a->said) / sizeof(a->said[0])))
		a->said[a->n_said++] = *remote;
	if (peer_pid && discover__process(peer_pid, &peer_proc) == 0) {
		const char *base = strrchr(peer_proc.exe, '/');

		peer = base ? base + 1 : peer_proc.exe;
	}
	what = a->t->role == ROLE_APISERVER && !strcmp(peer, "etcd")
		   ? ": that member's side of its Txns (and its WAL fsync) is not observed here"
	       : a->t->role == ROLE_SCHEDULER && !strcmp(peer, "kube-apiserver")
		   ? ": that apiserver's side of its binds (and its etcd write) is not observed "
		     "here"
		   : ": its side is not observed here";
	fprintf(a->out, "# node %s: %s pid %d talks to %s%s at %s, not on this node%s\n", opt->node,
		process_role__name(a->t->role), a->t->proc.pid, peer,
		peer_pid ? "" : " (not on this host)", endpoint__str(remote).s, what);
}

/* --node: the node, its addresses, the roles it has none of, and the connections of its
 * scheduler and apiserver that leave it (what a tracer on this node cannot see). */
static void print_node(struct tracer *tr, FILE *out)
{
	const enum process_role roles[] = { ROLE_SCHEDULER, ROLE_APISERVER, ROLE_ETCD };
	int i;

	if (!tr->opt.node[0])
		return;
	fprintf(out, "# node %s", tr->opt.node);
	for (i = 0; i < tr->opt.n_node_addrs; i++)
		fprintf(out, "%s%s", i ? ", " : " (", endpoint__str(&tr->opt.node_addrs[i]).s);
	fprintf(out, "%s\n", tr->opt.n_node_addrs ? ")" : "");
	for (i = 0; i < 3; i++)
		if (!targets__has(&tr->targets, roles[i]))
			fprintf(out,
				"# node %s: no %s on this node: its stages of a bind are not "
				"observed here (a tracer on its node sees them)\n",
				tr->opt.node, process_role__name(roles[i]));
	for (i = 0; i < tr->targets.n; i++) {
		struct off_node a = { .tr = tr, .t = &tr->targets.t[i], .out = out };

		if (a.t->role == ROLE_SCHEDULER || a.t->role == ROLE_APISERVER)
			sockets__each_own(a.t->proc.pid, SOCKDIAG_ESTABLISHED, connection_off_node,
					  &a);
	}
}

static void print_header(struct tracer *tr, uint64_t attach_ns)
{
	FILE *out = tr->opt.json || tr->opt.summary_only || tr->opt.quiet ? stderr : stdout;
	int i;

	print_node(tr, out);
	for (i = 0; i < tr->targets.n; i++) {
		struct target *t = &tr->targets.t[i];
		char release[160];

		fprintf(out, "# %-14s pid %-7d %s  %s%s  (%zu uprobes in %.1f ms%s%s%s%s%s%s)\n",
			process_role__name(t->role), t->proc.pid, t->proc.exe, t->go_version,
			target__release_label(t, release, sizeof(release)),
			t->tls.n_probes + !!t->call_probe + t->calls.queue + t->calls.giveup,
			(double)t->attach_ns / 1e6, t->call_probe ? ", bind call: " : "",
			t->call_probe ? strrchr(t->call_probe, '/') + 1 : "",
			t->calls.queue ? ", bind queue: " : "",
			t->calls.queue ? strrchr(targets__queue_probe, '/') + 1 : "",
			t->calls.giveup ? ", give-up: " : "",
			t->calls.giveup ? strrchr(targets__giveup_probe, '/') + 1 : "");
	}
	if (tr->metrics_server)
		fprintf(out, "# metrics on http://%s/metrics\n",
			metrics_server__address(tr->metrics_server));
	fprintf(out, "# attached in %.1f ms; waiting for binds (Ctrl-C to stop)\n\n",
		(double)attach_ns / 1e6);
	fflush(out);
}

/* With nothing buffered, fflush writes nothing. */
static void flush_output(struct tracer *tr)
{
	fflush(trace_outputs__stream(tr->outputs));
}

/* Between reads of the ring buffer: everything that may block or runs on a clock. The
 * correlator's binds and the peer feed's Writes wait on the records' clock (read_to): in a
 * backlog, what is still to come is still in the ring, however late the wall clock is. While
 * behind, the correlator ticks after each read. */
static void between_reads(void *ctx, uint64_t now, uint64_t read_to)
{
	struct tracer *tr = ctx;

	if (session__read_lag(tr->session) > tr->max_behind_ns)
		tr->max_behind_ns = session__read_lag(tr->session);
	dispatch__run_queued(tr->dispatch);
	sockets__refresh(tr->sockets, now);
	if (now >= tr->next_tick || read_to < now) {
		uint64_t drops = session__counter(tr->session, COUNTER_RINGBUF_DROPS);

		if (drops != tr->drops_seen) {
			correlator__drops(tr->corr, tr->drops_read_ns, now);
			tr->drops_seen = drops;
		}
		tr->drops_read_ns = now;
		correlator__tick(tr->corr, read_to, false);
		dispatch__expire(tr->dispatch, read_to);
		tr->next_tick = now + TICK_NS;
	}
	/* The binds closed since the last time out in one write, rather than one each (a write
	 * per bind was 5% of the tracer's CPU in a burst): as soon, as binds close in the tick. */
	flush_output(tr);
	if (now >= tr->next_restart_check) {
		targets__check_restarts(&tr->targets);
		targets__wire_tick(&tr->targets, now);
		tr->next_restart_check = now + RESTART_CHECK_NS;
		/* A role awaited back: read as often as before the 50 ms poll, so that its
		 * successor is found and attached as soon (test-faults b: the restarted
		 * scheduler's first reads). */
		session__poll_fast(tr->session, targets__awaiting(&tr->targets));
		/* ... and, under SCHED_IDLE, at the priority started with until it is attached. */
		idle_reader__hold(tr->idle, targets__awaiting(&tr->targets));
	}
	if (now >= tr->next_metrics) {
		publish_metrics(tr);
		tr->next_metrics = now + METRICS_NS;
	}
	metrics_server__heartbeat(tr->metrics_server, now);
	if (now >= tr->next_sweep) {
		/* Whether a connection has gone quiet is a question about what is still to come: on
		 * the records' clock. On the wall clock, a reader 10 s behind took a client that had
		 * closed for idle while its records were still being read, and freed its decoder in
		 * the middle of them (test-faults g). */
		dispatch__sweep(tr->dispatch, read_to);
		/* The decoders make and free many small objects (a watch event's JSON is hundreds
		 * of them); freed pages inside the heap go back to the kernel here rather than
		 * count in an agent's resident memory for days. */
		malloc_trim(0);
		tr->next_sweep = now + SWEEP_NS;
	}
}

/* SIGHUP: the output files are reopened (after a log rotation moved them). */
static void on_hangup(void *ctx)
{
	struct tracer *tr = ctx;

	if (trace_outputs__reopen(tr->outputs) == 0 && verbose)
		fprintf(stderr, "bindtrace: SIGHUP: output files reopened\n");
}

static int run(struct tracer *tr)
{
	struct session_handlers h;
	uint64_t deadline = 0;
	struct step t;
	int err;

	dispatch__handlers(tr->dispatch, &h);
	h.between = between_reads;
	h.hangup = on_hangup;
	h.between_ctx = tr;
	if (tr->opt.duration_s)
		deadline = util__monotonic_ns() + tr->opt.duration_s * 1000000000ull;
	err = session__run(tr->session, &h, deadline);
	if (err)
		return err;
	targets__stop_searches(&tr->targets);
	step_begin(&t);
	dispatch__run_queued(tr->dispatch);
	correlator__tick(tr->corr, util__monotonic_ns(), true);
	flush_output(tr);
	step_done("exit", "binds in flight flushed", &t);
	return 0;
}

static void print_totals(struct tracer *tr)
{
	struct correlator_stats cstats;
	struct dispatch_stats dstats;
	uint64_t counters[COUNTER_MAX];
	struct idle_reader_stats idle;
	char evicted[96] = "", gave_up[96] = "";

	correlator__stats(tr->corr, &cstats);
	if (cstats.scheduler_errors)
		snprintf(gave_up, sizeof(gave_up),
			 ", %llu given up after an error (SchedulerError; the scheduler retries)",
			 (unsigned long long)cstats.scheduler_errors);
	dispatch__stats(tr->dispatch, &dstats);
	session__counters(tr->session, counters);
	if (cstats.evicted)
		snprintf(evicted, sizeof(evicted),
			 "; %llu finished early: too many binds in flight at once",
			 (unsigned long long)cstats.evicted);
	summary__print(tr->opt.json ? stderr : stdout, tr->summary);
	fprintf(stderr,
		"bindtrace: %llu events, %llu ring buffer drops, %llu binds seen (%llu complete, "
		"%llu unschedulable%s); pending pods: %llu held, %llu dropped (full), %llu dropped "
		"(age)%s%s\n",
		(unsigned long long)session__events(tr->session),
		(unsigned long long)counters[COUNTER_RINGBUF_DROPS],
		(unsigned long long)cstats.binds, (unsigned long long)cstats.complete,
		(unsigned long long)cstats.unschedulable, gave_up,
		(unsigned long long)cstats.pending, (unsigned long long)cstats.pending_evicted,
		(unsigned long long)cstats.pending_expired, evicted,
		dstats.conn_table_full ? "; connection table full: some traffic not decoded" : "");
	if (dstats.streams_evicted || dstats.decode_errors)
		fprintf(stderr,
			"bindtrace: decoding: %llu HTTP/2 streams dropped (over %d open on one "
			"connection; their messages are missing, and binds may lack stages), %llu "
			"messages that did not decode\n",
			(unsigned long long)dstats.streams_evicted, DECODE_MAX_STREAMS,
			(unsigned long long)dstats.decode_errors);
	/* Held off the CPU (a saturated node), the tracer reads a backlog afterwards: said, so
	 * that late output is not taken for a slow control plane; and how full the ring came, how
	 * near to drops that was (--ringbuf-size). */
	if (tr->max_behind_ns >= READ_BEHIND_SAID_NS)
		fprintf(stderr,
			"bindtrace: reading the ring buffer fell behind by up to %.1f s (%s; up to "
			"%.0f%% of its %.1f MiB waiting at a read's start), and caught up%s\n",
			(double)tr->max_behind_ns / 1e9,
			tr->idle ? "--nice idle: it gave way to the control plane"
				 : "a tracer kept off the CPU",
			100.0 * (double)session__ring_peak(tr->session) /
			    (double)session__ring_size(tr->session),
			(double)session__ring_size(tr->session) / (1 << 20),
			session__read_lag(tr->session) >= READ_BEHIND_SAID_NS
			    ? " but for the last read"
			    : "");
	idle_reader__stats(tr->idle, util__monotonic_ns(), &idle);
	if (idle.catch_ups || idle.starved || idle.caught_up_ns >= CAUGHT_UP_SAID_NS)
		fprintf(
		    stderr,
		    "bindtrace: --nice idle: read at the priority started with for %.1f s in all: "
		    "the ring buffer a quarter full %llu times, the reader kept off the CPU for "
		    "0.25 s with records waiting %llu times (the time includes any wait for a "
		    "restarted process)\n",
		    (double)idle.caught_up_ns / 1e9, (unsigned long long)idle.catch_ups,
		    (unsigned long long)idle.starved);
	/* Both come of the apiserver's fan-out trailing etcd's event by more than the linger. */
	if (cstats.receipts_late || cstats.watch_sent_after_close)
		fprintf(
		    stderr,
		    "bindtrace: watch events after their bind closed (--linger: %llu ms after "
		    "the apiserver read etcd's event): %llu not read by their traced watcher by "
		    "then (their receipts are missing), %llu sent by the apiserver after it (their "
		    "watchers are not listed)\n",
		    (unsigned long long)tr->opt.linger_ms, (unsigned long long)cstats.receipts_late,
		    (unsigned long long)cstats.watch_sent_after_close);
	if (cstats.ring_wrapped)
		fprintf(stderr,
			"bindtrace: %llu binds stayed open while over 16384 observations came (the "
			"correlator's ring): a stage they lack may have been pushed out of it\n",
			(unsigned long long)cstats.ring_wrapped);
	if (cstats.create_txns_pushed_out)
		fprintf(stderr,
			"bindtrace: %llu pod creates' Txns pushed out of the correlator's table "
			"before their answer: an answer that came later was not matched to its pod\n",
			(unsigned long long)cstats.create_txns_pushed_out);
	if (cstats.raft_observations)
		fprintf(
		    stderr,
		    "bindtrace: raft: %llu observations of the peer traffic kept; %llu binds "
		    "whose entry had been pushed out of them, %llu pods pushed out of the pod key "
		    "table before their bind\n",
		    (unsigned long long)cstats.raft_observations,
		    (unsigned long long)cstats.raft_pushed_out,
		    (unsigned long long)cstats.raft_keys_pushed_out);
	session__print_probe_hits(tr->session, stderr);
	session__print_tls_keys(tr->session, stderr);
	targets__print_wire(&tr->targets, stderr);
	dispatch__print_peer_feed(tr->dispatch, stderr);
	if (verbose)
		fprintf(stderr, "bindtrace: %llu connections closed and their decoders freed\n",
			(unsigned long long)dstats.conns_closed);
}

static void tracer__free(struct tracer *tr)
{
	struct step t;

	step_begin(&t);
	idle_reader__free(tr->idle); /* its watchdog reads the session's ring */
	metrics_server__stop(tr->metrics_server);
	targets__close(&tr->targets);
	step_done("exit", "uprobes and tracepoints closed (their grace periods left to a child)",
		  &t);
	dispatch__free(tr->dispatch);
	trace_outputs__free(tr->outputs);
	summary__free(tr->summary);
	correlator__free(tr->corr);
	step_done("exit", "state freed", &t);
	session__close(tr->session);
	step_done("exit", "BPF object closed", &t);
	sockets__free(tr->sockets);
	bind_metrics__free(tr->metrics);
	free(tr);
}

static int renice(pid_t tid, void *ctx)
{
	return setpriority(PRIO_PROCESS, (id_t)tid, *(const int *)ctx) ? -errno : 0;
}

/* --nice idle (the default) needs a reader that can be put back from SCHED_IDLE: asked for, a
 * one-line error before anything is attached; the default, one line and the tracer runs as
 * started. */
static int idle_preflight(struct trace_options *opt)
{
	int err;

	if (!opt->nice_idle)
		return 0;
	err = idle_reader__can_catch_up();
	if (!err)
		return 0;
	if (opt->nice_given) {
		fprintf(
		    stderr,
		    "bindtrace: --nice idle: a thread under SCHED_IDLE could not be put back at "
		    "its priority (%s; it needs CAP_SYS_NICE): give --nice N instead\n",
		    strerror(-err));
		return -1;
	}
	fprintf(stderr,
		"bindtrace: running at the priority started with, not under SCHED_IDLE (the "
		"default --nice idle): a thread under it could not be put back (%s; it needs "
		"CAP_SYS_NICE)\n",
		strerror(-err));
	opt->nice_idle = false;
	return 0;
}

/* --nice N: every thread of the tracer (the metrics and OTLP threads are running by now) at
 * nice N; threads made later inherit it. --nice idle, the default: idle_reader.h. A failure (a
 * negative N without CAP_SYS_NICE) is said and changes nothing else. */
static void set_nice(const struct trace_options *opt, const struct session *session,
		     struct idle_reader **idle)
{
	int was, err;

	if (opt->nice_idle) {
		*idle = idle_reader__start(session);
		if (*idle && verbose)
			fprintf(stderr,
				"bindtrace: start: running under SCHED_IDLE (--nice idle)\n");
		return;
	}
	if (!opt->nice_given)
		return;
	errno = 0;
	was = getpriority(PRIO_PROCESS, 0);
	if (was == -1 && errno)
		was = 0;
	err = util__each_thread(renice, (void *)&opt->nice);
	if (err)
		fprintf(stderr, "bindtrace: --nice %d: %s\n", opt->nice, strerror(-err));
	else if (verbose)
		fprintf(stderr, "bindtrace: start: running at nice %d (was %d; --nice)\n",
			opt->nice, was);
}

int cmd_trace(int argc, char **argv)
{
	struct targets_listener on = { on_attached, on_detached, on_taken_over, NULL };
	struct session_options sopt = { .name = "bindtrace" };
	struct tracer *tr = calloc(1, sizeof(*tr));
	uint64_t started = util__monotonic_ns();
	struct step stopped, step;
	int rc = 1;

	if (!tr) {
		fprintf(stderr, "bindtrace: out of memory\n");
		return 1;
	}
	trace_cli__parse(argc, argv, &tr->opt);
	if (tr->opt.check) {
		free(tr);
		return cmd_check(argc, argv);
	}
	util__setup_libbpf_log();
	session__catch_signals(); /* a SIGINT while attaching ends the tracer once attached */
	on.ctx = tr;
	targets__init(&tr->targets, &on);
	tr->targets.probe_reads = tr->opt.probe_reads;
	/* Output files first: a path that cannot be written fails before anything is attached. */
	tr->wall_offset_ns = util__wall_offset_ns();
	tr->outputs = trace_outputs__new(&tr->opt, tr->wall_offset_ns);
	if (!tr->outputs || start_metrics(tr) || selfcheck__preflight("bindtrace") ||
	    idle_preflight(&tr->opt) || find_targets(tr))
		goto cleanup; /* each said why */
	tr->sockets = sockets__new();
	if (!tr->sockets) {
		fprintf(stderr, "bindtrace: out of memory\n");
		goto cleanup;
	}
	sopt.ringbuf_bytes = tr->opt.ringbuf_bytes;
	/* The syscall tracepoints are attached here, before any target (session.h says why). */
	step_begin(&step);
	tr->session = session__open(&sopt);
	if (!tr->session)
		goto cleanup;
	step_done("start", "BPF object loaded and tracepoints attached", &step);
	if (targets__attach_all(&tr->targets, tr->session))
		goto cleanup;
	step_done("start", "targets attached", &step);
	set_nice(&tr->opt, tr->session, &tr->idle);
	if (start(tr))
		goto cleanup;
	step_done("start", "correlator made and the apiserver's connections read", &step);
	publish_metrics(tr);
	/* Attached: /healthz says ok from here, before the header says so (until the loop's first
	 * beat it said "starting" to a client that asked once the header was out). */
	metrics_server__heartbeat(tr->metrics_server, util__monotonic_ns());
	if (verbose)
		fprintf(stderr,
			"bindtrace: start: %.1f ms from the command's start, CPU %.1f ms in all "
			"(process start included)\n",
			(double)(util__monotonic_ns() - started) / 1e6,
			(double)util__cpu_ns() / 1e6);
	print_header(tr, util__monotonic_ns() - started);
	if (run(tr))
		goto cleanup;
	step_begin(&stopped);
	print_totals(tr);
	rc = trace_outputs__finish(tr->outputs) ? 1 : 0;
	step_done("exit", "totals printed and outputs finished", &stopped);
cleanup:
	tracer__free(tr);
	return rc;
}
