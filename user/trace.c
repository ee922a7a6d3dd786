/* The default command: attach to kube-scheduler, kube-apiserver and etcd and print one timeline
 * per pod bind. This file is the plumbing: find and attach the processes, read the ring buffer,
 * feed each connection's bytes to its decoder and the decoded messages, fsyncs and bind calls to
 * the correlator, and hand finished binds to the outputs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bind_metrics.h"
#include "capture.skel.h"
#include "session.h"
#include "commands.h"
#include "correlate.h"
#include "decode.h"
#include "discover.h"
#include "endpoint.h"
#include "events.h"
#include "goelf.h"
#include "metrics_http.h"
#include "targets.h"
#include "watchers.h"
#include "sockets.h"
#include "streams.h"
#include "summary.h"
#include "timeline.h"
#include "trace_cli.h"
#include "tlsprobe.h"
#include "trace_outputs.h"
#include "util.h"

#define MAX_CONNS 65536

struct conn_ctx {
	struct actor who;
	struct conn_decoder *dec;
	struct trace_state *st;
	uint64_t last_ns; /* the last event's time */
};

struct trace_state {
	struct trace_options opt;
	struct session *session;
	struct targets targets;
	struct watchers watchers;
	struct streams conns; /* per (pid, conn): the decoder (dir 0 slot) */
	struct correlator *corr;
	struct summary *summary;
	struct trace_outputs *outputs;
	struct bind_metrics *metrics;	       /* --metrics */
	struct metrics_server *metrics_server; /* --metrics */
	int64_t wall_offset_ns;
	uint64_t binds_printed;
	uint64_t drops_seen;
	uint64_t drops_read_ns; /* when the drop counter was last read (0: never) */
	uint64_t next_tick, next_restart_check, next_sweep;
	bool conn_table_full;
	uint64_t conns_closed; /* decoders freed after their socket closed */
	struct sockets *sockets;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Connections idle for a while whose socket is no longer open in their process are closed:
 * their decoders and stream slots are freed, so a long run with many short-lived clients keeps
 * its memory (and the tables keep room). Idle ones only, so the /proc scan stays rare. */
#define CONN_IDLE_NS 10000000000ull

static void sweep_closed(struct trace_state *st, uint64_t now)
{
	struct closed {
		pid_t pid;
		uint64_t conn;
	} *idle = NULL;
	size_t n_idle = 0, cap = 0, i, j;

	for (i = 0; st->conns.slots && i < st->conns.cap; i++) {
		struct conn_ctx *cc = st->conns.slots[i].user;

		if (!cc || now < cc->last_ns + CONN_IDLE_NS)
			continue;
		if (n_idle == cap) {
			struct closed *more = realloc(idle, (cap ? cap * 2 : 64) * sizeof(*idle));
			if (!more)
				break;
			idle = more;
			cap = cap ? cap * 2 : 64;
		}
		idle[n_idle].pid = cc->who.pid;
		idle[n_idle++].conn = cc->who.conn;
	}
	for (i = 0; i < n_idle;) {
		pid_t pid = idle[i].pid;
		size_t n_open;
		uint64_t *open = sockets__open_inodes(pid, &n_open);

		for (j = i; j < n_idle; j++) {
			struct conn_ctx *cc;
			struct stream *cs;

			if (idle[j].pid != pid || idle[j].conn == 0)
				continue;
			if (open && bsearch(&idle[j].conn, open, n_open, sizeof(*open), cmp_u64)) {
				idle[j].conn = 0;
				continue;
			}
			cs = streams__find(&st->conns, (uint32_t)pid, idle[j].conn, 0);
			cc = cs ? cs->user : NULL;
			if (cc) {
				conn_decoder__close(cc->dec, now);
				conn_decoder__free(cc->dec);
				free(cc);
				streams__del(&st->conns, cs);
				st->conns_closed++;
			}
			idle[j].conn = 0;
		}
		free(open);
		/* Next pid not yet looked at. */
		while (i < n_idle && (idle[i].pid == pid || idle[i].conn == 0))
			i++;
	}
	free(idle);
}

/* The process at the other end of a connection of pid, when it is on this host. */
static void resolve_peer(struct trace_state *st, pid_t pid, struct actor *who)
{
	struct process_info info;

	who->peer_pid = sockets__peer(st->sockets, pid, &who->local, &who->remote);
	if (who->peer_pid && discover__process(who->peer_pid, &info) == 0)
		util__copy(who->peer_comm, sizeof(who->peer_comm), info.comm);
}

static void on_decoded(const struct decoded_msg *msg, void *ctx)
{
	struct conn_ctx *cc = ctx;

	trace_outputs__message(cc->st->outputs, &cc->who, msg);
	correlator__message(cc->st->corr, &cc->who, msg);
}

static void on_data(void *ctx, const struct data_event *e)
{
	struct trace_state *st = ctx;
	struct target *t = targets__of(&st->targets, (pid_t)e->hdr.pid);
	struct conn_ctx *cc;
	struct stream *cs;
	int64_t missed;

	if (!t)
		return;
	cs = streams__get(&st->conns, e->hdr.pid, e->conn, 0);
	if (!cs) {
		st->conn_table_full = true;
		return;
	}
	cc = cs->user;
	if (!cc) {
		cc = calloc(1, sizeof(*cc));
		if (!cc)
			return;
		cc->st = st;
		cc->who.pid = t->proc.pid;
		util__copy(cc->who.comm, sizeof(cc->who.comm), t->proc.comm);
		cc->who.role = t->role;
		cc->who.conn = e->conn;
		endpoint__set(&cc->who.local, e->family, e->laddr, e->lport);
		endpoint__set(&cc->who.remote, e->family, e->raddr, e->rport);
		/* The apiserver's clients on this host, named: the watchers of a bind. */
		if (t->role == ROLE_APISERVER &&
		    sockets__is_listening(st->sockets, t->proc.pid, e->lport)) {
			resolve_peer(st, t->proc.pid, &cc->who);
			watchers__consider(&st->watchers, cc->who.peer_pid);
		}
		if (verbose)
			fprintf(stderr, "bindtrace: %s pid %d: connection %s -> %s%s%s (pid %d)\n",
				process_role__exe(t->role), t->proc.pid,
				endpoint__str(&cc->who.local).s, endpoint__str(&cc->who.remote).s,
				cc->who.peer_comm[0] ? ", peer " : "", cc->who.peer_comm,
				cc->who.peer_pid);
		cc->dec = conn_decoder__new(on_decoded, cc);
		if (!cc->dec) {
			free(cc);
			return;
		}
		conn_decoder__offsets_from_zero(cc->dec);
		/* Which end is the client: an accepted connection's is the remote. */
		conn_decoder__set_client_dir(
		    cc->dec, sockets__is_listening(st->sockets, t->proc.pid, e->lport)
				 ? CONN_DIR_IN
				 : CONN_DIR_OUT);
		cs->user = cc;
	}
	trace_outputs__data(st->outputs, &cc->who, e);
	cc->last_ns = e->hdr.ts_ns;
	missed = conn_decoder__feed(cc->dec, e->dir, e->offset, e->data, e->len, e->hdr.ts_ns);
	if (missed > 0) {
		bind_metrics__gap(st->metrics, t->role, (uint64_t)missed);
		correlator__loss(st->corr, t->proc.pid, e->conn, e->hdr.ts_ns);
	}
}

static void on_fsync(void *ctx, const struct fsync_event *e)
{
	struct trace_state *st = ctx;
	struct target *t = targets__of(&st->targets, (pid_t)e->hdr.pid);
	struct actor who = { .pid = (pid_t)e->hdr.pid, .role = ROLE_ETCD };
	const char *path;
	bool wal;

	if (!t)
		return;
	util__copy(who.comm, sizeof(who.comm), t->proc.comm);
	path = sockets__fd_path(st->sockets, (pid_t)e->hdr.pid, e->fd);
	wal = strstr(path, "/member/wal/") != NULL;
	trace_outputs__fsync(st->outputs, &who, e, path);
	correlator__fsync(st->corr, &who, e->start_ns, e->hdr.ts_ns, wal, e->ret);
}

static void on_call(void *ctx, const struct call_event *e)
{
	struct trace_state *st = ctx;
	struct target *t = targets__of(&st->targets, (pid_t)e->hdr.pid);
	struct citation ci = { .known = true, .cited = -1 };
	char ns[BIND_NS_MAX], name[BIND_NAME_MAX];
	const char *func, *file;
	uint32_t i;
	int line;

	if (!t || !t->gb)
		return;
	util__copy(ci.kubernetes_version, sizeof(ci.kubernetes_version), t->k8s_version);
	util__copy(ci.commit, sizeof(ci.commit), t->commit);
	util__copy(ci.go_version, sizeof(ci.go_version), t->go_version);
	util__copy(ci.probe, sizeof(ci.probe), t->call_probe ? t->call_probe : "");
	ci.tid = (pid_t)e->hdr.tid;
	ci.mono_ns = e->hdr.ts_ns;
	for (i = 0; i < e->n_frames && i < MAX_STACK_FRAMES && ci.n_frames < BIND_MAX_FRAMES; i++) {
		struct frame_line *f = &ci.frames[ci.n_frames];
		/* A return address points after the call: look up the call's line. */
		uint64_t pc = i ? e->frames[i] - 1 : e->frames[i];

		if (!e->frames[i])
			break;
		f->pc = e->frames[i];
		if (go_binary__pc_to_line(t->gb, pc, t->load_bias, &func, &file, &line) == 0) {
			util__copy(f->func, sizeof(f->func), func);
			util__copy(f->file, sizeof(f->file), file);
			f->line = line;
		} else {
			util__copy(f->func, sizeof(f->func), "?");
		}
		ci.n_frames++;
	}
	/* The line that issued the bind: the first caller outside client-go. */
	for (i = 1; i < (uint32_t)ci.n_frames; i++) {
		if (strncmp(ci.frames[i].func, "k8s.io/client-go/", 17) != 0) {
			ci.cited = (int)i;
			break;
		}
	}
	memcpy(ns, e->namespace_,
	       e->namespace_len < sizeof(ns) ? e->namespace_len : sizeof(ns) - 1);
	ns[e->namespace_len < sizeof(ns) ? e->namespace_len : sizeof(ns) - 1] = '\0';
	memcpy(name, e->name, e->name_len < sizeof(name) ? e->name_len : sizeof(name) - 1);
	name[e->name_len < sizeof(name) ? e->name_len : sizeof(name) - 1] = '\0';
	correlator__call(st->corr, ns, name, &ci);
}

static void on_attached(void *ctx, const struct target *t)
{
	struct trace_state *st = ctx;

	sockets__track(st->sockets, t->proc.pid);
}

static void on_detached(void *ctx, const struct target *t)
{
	struct trace_state *st = ctx;

	sockets__untrack(st->sockets, t->proc.pid);
}

/* A watcher that turns out to be a restarted target: its connections are relabelled. */
static void on_taken_over(void *ctx, pid_t pid, const struct target *t)
{
	struct trace_state *st = ctx;
	size_t i;

	for (i = 0; st->conns.slots && i < st->conns.cap; i++) {
		struct conn_ctx *cc = st->conns.slots[i].user;

		if (cc && cc->who.pid == pid) {
			cc->who.role = t->role;
			util__copy(cc->who.comm, sizeof(cc->who.comm), t->proc.comm);
		}
	}
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
	struct trace_state *st = ctx;
	struct bind_view view;

	if (!wanted(&st->opt, t))
		return;
	if (st->opt.count && st->binds_printed >= st->opt.count)
		return;
	st->binds_printed++;
	bind_view__init(&view, t, st->wall_offset_ns);
	summary__add(st->summary, &view);
	bind_metrics__bind(st->metrics, &view);
	if (!st->opt.summary_only && !st->opt.quiet) {
		if (st->opt.json)
			timeline__print_json(stdout, &view);
		else
			timeline__print(stdout, &view);
		fflush(stdout);
	}
	trace_outputs__bind(st->outputs, t);
	if (st->opt.count && st->binds_printed >= st->opt.count)
		session__stop(st->session);
}

static uint64_t read_drops(struct session *session)
{
	uint64_t counters[COUNTER_MAX];

	session__counters(session, counters);
	return counters[COUNTER_RINGBUF_DROPS];
}

/* The targets' state and the BPF counters, for --metrics: after attaching and once a second. */
static void publish_metrics(struct trace_state *st)
{
	uint64_t counters[COUNTER_MAX];
	int i;

	if (!st->metrics)
		return;
	bind_metrics__targets_begin(st->metrics);
	for (i = 0; i < st->targets.n; i++) {
		const struct target *t = &st->targets.t[i];

		bind_metrics__target(st->metrics, t->role, t->proc.pid, t->attached,
				     t->k8s_version[0] ? t->k8s_version : t->module_version,
				     t->go_version);
	}
	bind_metrics__targets_end(st->metrics);
	session__counters(st->session, counters);
	bind_metrics__bpf_counters(st->metrics, counters[COUNTER_RINGBUF_DROPS],
				   counters[COUNTER_TRUNCATED]);
}

/* SIGHUP: the output files are reopened (after a log rotation moved them). */
static void on_hangup(void *ctx)
{
	struct trace_state *st = ctx;

	if (trace_outputs__reopen(st->outputs) == 0 && verbose)
		fprintf(stderr, "bindtrace: SIGHUP: output files reopened\n");
}

/* Between reads of the ring buffer: the correlator's clock, restarts, closed connections. */
static void between_reads(void *ctx, uint64_t now)
{
	struct trace_state *st = ctx;

	sockets__refresh(st->sockets, now);
	if (now >= st->next_tick) {
		uint64_t drops = read_drops(st->session);

		if (drops != st->drops_seen) {
			correlator__drops(st->corr, st->drops_read_ns, now);
			st->drops_seen = drops;
		}
		st->drops_read_ns = now;
		correlator__tick(st->corr, now, false);
		st->next_tick = now + 50000000ull;
	}
	if (now >= st->next_restart_check) {
		targets__check_restarts(&st->targets);
		publish_metrics(st);
		st->next_restart_check = now + 1000000000ull;
	}
	metrics_server__heartbeat(st->metrics_server, now);
	if (now >= st->next_sweep) {
		sweep_closed(st, now);
		st->next_sweep = now + 5000000000ull;
	}
}

static void print_header(struct trace_state *st, uint64_t attach_ns)
{
	FILE *out = st->opt.json || st->opt.summary_only || st->opt.quiet ? stderr : stdout;
	int i;

	for (i = 0; i < st->targets.n; i++) {
		struct target *t = &st->targets.t[i];
		char release[160];

		fprintf(out, "# %-14s pid %-7d %s  %s%s  (%zu uprobes%s%s)\n",
			process_role__exe(t->role), t->proc.pid, t->proc.exe, t->go_version,
			target__release_label(t, release, sizeof(release)),
			t->tls.n_links + !!t->call_link, t->call_probe ? ", bind call: " : "",
			t->call_probe ? strrchr(t->call_probe, '/') + 1 : "");
	}
	if (st->metrics_server)
		fprintf(out, "# metrics on http://%s/metrics\n",
			metrics_server__address(st->metrics_server));
	fprintf(out, "# attached in %.1f ms; waiting for binds (Ctrl-C to stop)\n\n",
		(double)attach_ns / 1e6);
	fflush(out);
}

int cmd_trace(int argc, char **argv)
{
	struct session_handlers h = { on_data,	     on_fsync,	on_call, NULL,
				      between_reads, on_hangup, NULL };
	struct session_options sopt = { .name = "bindtrace" };
	struct targets_listener on = { on_attached, on_detached, on_taken_over, NULL };
	struct correlator_options copt = {};
	struct correlator_stats cstats;
	struct trace_state *st;
	uint64_t start, deadline = 0;
	int err = 0, i, found = 0;
	int rc = 1;

	st = calloc(1, sizeof(*st));
	if (!st) {
		fprintf(stderr, "bindtrace: out of memory\n");
		return 1;
	}
	trace_cli__parse(argc, argv, &st->opt);
	if (st->opt.check) {
		free(st);
		return cmd_check(argc, argv);
	}
	util__setup_libbpf_log();
	start = util__monotonic_ns();
	/* Output files first: a path that cannot be written fails before anything is attached.
	 */
	st->wall_offset_ns = util__wall_offset_ns();
	st->outputs = trace_outputs__new(&st->opt, st->wall_offset_ns);
	if (!st->outputs)
		goto cleanup; /* it said why */
	if (st->opt.metrics) {
		st->metrics = bind_metrics__new();
		if (!st->metrics) {
			fprintf(stderr, "bindtrace: --metrics: out of memory\n");
			goto cleanup;
		}
		st->metrics_server =
		    metrics_server__start(st->opt.metrics, bind_metrics__registry(st->metrics));
		if (!st->metrics_server)
			goto cleanup; /* it said why */
	}

	if (selfcheck__preflight("bindtrace"))
		goto cleanup;
	on.ctx = st;
	targets__init(&st->targets, &on);
	if ((err = targets__find(&st->targets, ROLE_SCHEDULER, st->opt.scheduler_pid)) < 0 ||
	    (found += err,
	     err = targets__find(&st->targets, ROLE_APISERVER, st->opt.apiserver_pid)) < 0 ||
	    (found += err, err = targets__find(&st->targets, ROLE_ETCD, st->opt.etcd_pid)) < 0)
		goto cleanup;
	found += err;
	if (!found) {
		fprintf(stderr,
			"bindtrace: no kube-scheduler, kube-apiserver or etcd process found "
			"(give them with --scheduler-pid, --apiserver-pid, --etcd-pid)\n");
		goto cleanup;
	}
	st->sockets = sockets__new();
	if (!st->sockets || streams__init(&st->conns, MAX_CONNS)) {
		fprintf(stderr, "bindtrace: out of memory\n");
		goto cleanup;
	}
	sopt.ringbuf_bytes = st->opt.ringbuf_bytes;
	/* The syscall tracepoints are attached here, before any target (session.h says why). */
	st->session = session__open(&sopt);
	if (!st->session)
		goto cleanup;
	if (targets__attach_all(&st->targets, st->session))
		goto cleanup;
	copt.have_scheduler = targets__has(&st->targets, ROLE_SCHEDULER);
	copt.have_apiserver = targets__has(&st->targets, ROLE_APISERVER);
	copt.have_etcd = targets__has(&st->targets, ROLE_ETCD);
	copt.linger_ns = st->opt.linger_ms * 1000000ull;
	copt.max_open_ns = 10000000000ull;
	copt.attach_ns = util__monotonic_ns();
	st->corr = correlator__new(&copt, on_bind, st);
	st->summary = summary__new();
	if (!st->corr || !st->summary) {
		fprintf(stderr, "bindtrace: out of memory\n");
		goto cleanup;
	}
	for (i = 0; i < st->targets.n; i++) {
		struct target *t = &st->targets.t[i];

		trace_outputs__process(
		    st->outputs, process_role__name(t->role), t->proc.pid, t->proc.exe,
		    t->go_version, t->k8s_version[0] ? t->k8s_version : t->module_version, t->gb);
	}
	st->watchers.enabled = st->opt.watchers;
	st->watchers.targets = &st->targets;
	st->watchers.sockets = st->sockets;
	for (i = 0; i < st->targets.n; i++)
		if (st->targets.t[i].role == ROLE_APISERVER)
			watchers__attach_connected(&st->watchers, st->targets.t[i].proc.pid);
	publish_metrics(st);
	print_header(st, util__monotonic_ns() - start);

	if (st->opt.duration_s)
		deadline = util__monotonic_ns() + st->opt.duration_s * 1000000000ull;
	h.ctx = h.between_ctx = st;
	if (session__run(st->session, &h, deadline))
		goto cleanup;
	correlator__tick(st->corr, util__monotonic_ns(), true);
	correlator__stats(st->corr, &cstats);
	summary__print(st->opt.json ? stderr : stdout, st->summary);
	fprintf(stderr,
		"bindtrace: %llu events, %llu ring buffer drops, %llu binds seen (%llu complete, "
		"%llu unschedulable)%s\n",
		(unsigned long long)session__events(st->session),
		(unsigned long long)read_drops(st->session), (unsigned long long)cstats.binds,
		(unsigned long long)cstats.complete, (unsigned long long)cstats.unschedulable,
		st->conn_table_full ? "; connection table full: some traffic not decoded" : "");
	if (verbose)
		fprintf(stderr, "bindtrace: %llu connections closed and their decoders freed\n",
			(unsigned long long)st->conns_closed);
	rc = trace_outputs__finish(st->outputs) ? 1 : 0;
cleanup:
	metrics_server__stop(st->metrics_server);
	bind_metrics__free(st->metrics);
	targets__close(&st->targets);
	for (i = 0; st->conns.slots && i < (int)st->conns.cap; i++) {
		struct conn_ctx *cc = st->conns.slots[i].user;

		if (cc) {
			conn_decoder__free(cc->dec);
			free(cc);
		}
	}
	trace_outputs__free(st->outputs);
	summary__free(st->summary);
	correlator__free(st->corr);
	session__close(st->session);
	streams__free(&st->conns);
	sockets__free(st->sockets);
	free(st);
	return rc;
}
