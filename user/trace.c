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
#include "gorelease.h"
#include "link_reaper.h"
#include "metrics_http.h"
#include "sockets.h"
#include "streams.h"
#include "summary.h"
#include "timeline.h"
#include "trace_cli.h"
#include "tlsprobe.h"
#include "trace_outputs.h"
#include "util.h"

#define MAX_TARGETS_PER_ROLE 4
#define MAX_TRACED 32
#define MAX_CONNS 65536

/* Where the scheduler's bind call is probed, best first. The object register follows Go's
 * ABIInternal: (*pods).Bind(ctx, binding, opts): RAX recv, RBX+RCX ctx, RDI binding. */
static const struct bind_probe {
	const char *func;
	int obj_reg;
} bind_probes[] = {
	{ "k8s.io/client-go/kubernetes/typed/core/v1.(*pods).Bind", 3 },
	{ "k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder.(*DefaultBinder).Bind",
	  4 },
};

struct target {
	enum process_role role;
	struct process_info proc;
	struct go_binary *gb; /* kept open to symbolise stacks */
	uint64_t load_bias;
	char go_version[32];
	char k8s_version[64];	 /* the release (gorelease.h), "" when not Kubernetes or unknown */
	char module_version[64]; /* etcd's release, likewise */
	char commit[72];	 /* vcs.revision, else the stamped commit; "" unknown */
	struct tls_attachment tls;
	struct bpf_link *call_link;
	const char *call_probe;
	bool attached;
	bool given;	       /* the pid came from --*-pid: its replacement must match exactly */
	uint64_t cmdline_hash; /* of /proc/PID/cmdline when attached: a restart runs the same */
	pid_t failed_pid;      /* a replacement that could not be attached: not retried */
};

struct conn_ctx {
	struct actor who;
	struct conn_decoder *dec;
	struct trace_state *st;
	uint64_t last_ns; /* the last event's time */
};

struct trace_state {
	struct trace_options opt;
	struct link_reaper reaper;
	struct session *session;
	struct target targets[MAX_TRACED];
	int n_targets;
	pid_t watcher_tried[64]; /* peers already looked at (attached or not a Go TLS program) */
	int n_watcher_tried;
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

static const char *const role_exe[] = {
	[ROLE_OTHER] = "process",
	[ROLE_SCHEDULER] = "kube-scheduler",
	[ROLE_APISERVER] = "kube-apiserver",
	[ROLE_ETCD] = "etcd",
	[ROLE_WATCHER] = "watcher",
};

static struct target *target_of(struct trace_state *st, pid_t pid)
{
	int i;

	for (i = 0; i < st->n_targets; i++)
		if (st->targets[i].proc.pid == pid)
			return &st->targets[i];
	return NULL;
}

/* Release and commit as the binary states them (buildinfo, else its -X stamps): never
 * "(devel)". */
static void target__read_release(struct target *t)
{
	struct go_release rel;

	t->k8s_version[0] = t->module_version[0] = t->commit[0] = '\0';
	if (go_release__read(t->gb, &rel))
		return;
	if (rel.product == GO_PRODUCT_KUBERNETES)
		util__copy(t->k8s_version, sizeof(t->k8s_version), rel.release.value);
	else if (rel.product == GO_PRODUCT_ETCD)
		util__copy(t->module_version, sizeof(t->module_version), rel.release.value);
	util__copy(t->commit, sizeof(t->commit), rel.commit.value);
}

/* ", k8s.io/kubernetes v1.37.2 (commit abcdef123456)" for the header line, "" if nothing known. */
static const char *target__release_label(const struct target *t, char *buf, size_t len)
{
	const char *product = t->k8s_version[0] ? "k8s.io/kubernetes" : "etcd";
	const char *release = t->k8s_version[0] ? t->k8s_version : t->module_version;

	if (!release[0] && !t->commit[0])
		return "";
	snprintf(buf, len, ", %s%s%s%s%.12s%s", release[0] ? product : "", release[0] ? " " : "",
		 release, t->commit[0] ? (release[0] ? " (commit " : "(commit ") : "", t->commit,
		 t->commit[0] ? ")" : "");
	return buf;
}

/* FNV-1a of a process's argv, 0 when it cannot be read (exited, or a kernel thread). Several
 * control planes on one host run the same executables; their command lines tell them apart. */
static uint64_t cmdline_hash(pid_t pid)
{
	char path[64], buf[4096];
	uint64_t h = 1469598103934665603ull;
	ssize_t n, i, total = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++) {
			h ^= (unsigned char)buf[i];
			h *= 1099511628211ull;
		}
		total += n;
	}
	close(fd);
	return total ? h : 0;
}

/* Runtime address = vaddr + bias: from the first mapping of the executable (PIE only). */
static uint64_t load_bias(struct target *t)
{
	char path[64], line[512], file[4096];
	unsigned long start, end, off;
	uint64_t bias = 0;
	FILE *maps;

	if (!go_binary__text_info(t->gb)->pie)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", t->proc.pid);
	maps = fopen(path, "r");
	if (!maps)
		return 0;
	while (fgets(line, sizeof(line), maps)) {
		file[0] = '\0';
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &start, &end, &off, file) < 3)
			continue;
		if (strcmp(file, t->proc.exe) == 0) {
			bias = go_binary__load_bias(t->gb, start, off);
			break;
		}
	}
	fclose(maps);
	return bias;
}

/* Why attaching failed, in the error line: a process that exited meanwhile says so rather than
 * what the failed step saw (ENOENT on /proc/PID/exe, ESRCH from the uprobe). */
static void attach_failed(const struct target *t, const char *why)
{
	struct process_info now;

	if (t->role == ROLE_WATCHER && !verbose)
		return;
	if (discover__process(t->proc.pid, &now) == -ESRCH)
		fprintf(stderr, "bindtrace: %s pid %d (%s): exited while being attached\n",
			role_exe[t->role], t->proc.pid, t->proc.exe);
	else
		fprintf(stderr, "bindtrace: %s pid %d (%s): %s\n", role_exe[t->role], t->proc.pid,
			t->proc.exe, why);
}

static int attach_target(struct trace_state *st, struct target *t)
{
	char path[64], why[512];
	const struct go_buildinfo *bi;
	size_t i;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/exe", t->proc.pid);
	t->gb = go_binary__open(path, why, sizeof(why));
	if (!t->gb) {
		attach_failed(t, why);
		return -EINVAL;
	}
	bi = go_binary__buildinfo(t->gb);
	util__copy(t->go_version, sizeof(t->go_version), bi->go_version);
	target__read_release(t);
	t->load_bias = load_bias(t);
	t->cmdline_hash = cmdline_hash(t->proc.pid);

	err = session__add_target(st->session, t->proc.pid, t->role == ROLE_ETCD);
	if (err) {
		fprintf(stderr, "bindtrace: %s pid %d: BPF map update: %s\n", role_exe[t->role],
			t->proc.pid, strerror(-err));
		return err;
	}
	err = tls_attachment__attach_opened(&t->tls, session__bpf(st->session), t->proc.pid, path,
					    t->gb, why, sizeof(why));
	if (err) {
		attach_failed(t, why);
		return err;
	}
	if (t->role == ROLE_SCHEDULER) {
		for (i = 0; i < sizeof(bind_probes) / sizeof(bind_probes[0]); i++) {
			LIBBPF_OPTS(bpf_uprobe_opts, uo,
				    .bpf_cookie = (__u64)bind_probes[i].obj_reg);
			uint64_t entry, end;
			int64_t off;

			if (go_binary__func(t->gb, bind_probes[i].func, &entry, &end) ||
			    go_binary__check_probe(t->gb, bind_probes[i].func, entry))
				continue;
			off = go_binary__file_offset(t->gb, entry);
			if (off < 0)
				continue;
			t->call_link = bpf_program__attach_uprobe_opts(
			    session__bpf(st->session)->progs.go_call, t->proc.pid, path,
			    (size_t)off, &uo);
			if (t->call_link) {
				t->call_probe = bind_probes[i].func;
				break;
			}
		}
		if (!t->call_link)
			fprintf(stderr,
				"bindtrace: kube-scheduler pid %d: no bind call to probe; binds "
				"will not cite their source line\n",
				t->proc.pid);
	}
	/* Opening validated every pclntab entry: give those pages back before the next target, so
	 * the peak holds one binary's, and citations later fault in only what they read. */
	go_binary__release(t->gb);
	t->attached = true;
	sockets__track(st->sockets, t->proc.pid);
	return 0;
}

static int find_role(struct trace_state *st, enum process_role role, pid_t given)
{
	struct process_info found[MAX_TARGETS_PER_ROLE];
	int n, i, err;

	if (given) {
		err = discover__process(given, &found[0]);
		if (err) {
			const char *hint = err == -EACCES || err == -EPERM
					       ? " (reading /proc/PID/exe of another process "
						 "needs CAP_SYS_PTRACE)"
					       : "";

			fprintf(stderr, "bindtrace: %s pid %d: %s%s\n", role_exe[role], given,
				err == -ESRCH ? "no such process" : strerror(-err), hint);
			return err;
		}
		n = 1;
	} else {
		n = discover__by_exe_name(role_exe[role], found, MAX_TARGETS_PER_ROLE);
		if (n < 0)
			return n;
	}
	for (i = 0; i < n; i++) {
		struct target *t = &st->targets[st->n_targets++];

		t->role = role;
		t->proc = found[i];
		t->given = given != 0;
	}
	return n;
}

/* Probes of a process that is still running are closed at once: new ones may follow on it. Those
 * of one that exited can see nothing more and go to the reaper. */
static void detach_target(struct trace_state *st, struct target *t)
{
	struct process_info now;
	struct bpf_link **links;

	if ((t->tls.n_links || t->call_link) && discover__process(t->proc.pid, &now) == -ESRCH &&
	    (links = realloc(t->tls.links, (t->tls.n_links + 1) * sizeof(*links)))) {
		size_t n = t->tls.n_links;

		if (t->call_link)
			links[n++] = t->call_link;
		link_reaper__add(&st->reaper, links, n);
		t->tls.links = NULL;
		t->tls.n_links = 0;
		t->call_link = NULL;
	}
	bpf_link__destroy(t->call_link);
	t->call_link = NULL;
	tls_attachment__detach(&t->tls);
	go_binary__close(t->gb);
	t->gb = NULL;
	session__remove_target(st->session, t->proc.pid);
	t->attached = false;
	sockets__untrack(st->sockets, t->proc.pid);
}

/* How many processes of a role's name are looked at for a replacement: all of them in practice.
 * Only MAX_TARGETS_PER_ROLE were, and beside several control planes the restarted process, often
 * the newest, was not among the first found in /proc. */
#define MAX_REPLACEMENT_CANDIDATES 128

/* The process that replaces a traced one that exited: one running the same executable name
 * that is not already traced in a role. One with the same command line is preferred (several
 * control planes may run on one host, each restarted on its own); for a pid given on the
 * command line nothing else will do, so that another cluster's process is never picked up. */
static int find_replacement(struct trace_state *st, const struct target *t,
			    struct process_info *out)
{
	struct process_info *found = calloc(MAX_REPLACEMENT_CANDIDATES, sizeof(*found));
	int i, k, n, best = -1;

	if (!found)
		return -ENOMEM;
	n = discover__by_exe_name(role_exe[t->role], found, MAX_REPLACEMENT_CANDIDATES);
	for (i = 0; i < n; i++) {
		bool taken = false;

		if (found[i].pid == t->failed_pid)
			continue;
		for (k = 0; k < st->n_targets && !taken; k++)
			taken = st->targets[k].attached && st->targets[k].role != ROLE_WATCHER &&
				st->targets[k].proc.pid == found[i].pid;
		if (taken)
			continue;
		if (t->cmdline_hash && cmdline_hash(found[i].pid) == t->cmdline_hash) {
			best = i;
			break;
		}
		if (!t->given && best < 0)
			best = i;
	}
	if (best >= 0)
		*out = found[best];
	free(found);
	return best >= 0 ? 0 : -ESRCH;
}

/* A process already traced as a watcher (a restarted kube-scheduler connects to the apiserver
 * before it is noticed) gives its probes up to its role; its connections are relabelled. */
static void release_watcher(struct trace_state *st, pid_t pid, const struct target *role)
{
	size_t i;
	int k;

	for (k = 0; k < st->n_targets; k++) {
		struct target *w = &st->targets[k];

		if (w->role == ROLE_WATCHER && w->attached && w->proc.pid == pid)
			detach_target(st, w);
	}
	for (i = 0; st->conns.slots && i < st->conns.cap; i++) {
		struct conn_ctx *cc = st->conns.slots[i].user;

		if (cc && cc->who.pid == pid) {
			cc->who.role = role->role;
			util__copy(cc->who.comm, sizeof(cc->who.comm), role->proc.comm);
		}
	}
}

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

/* A traced process that exited (a restarted kube-scheduler, say) is replaced by the process now
 * running the same command, attached afresh; until one appears the role is marked gone. */
static void check_restarts(struct trace_state *st)
{
	struct process_info now, next;
	int i;

	for (i = 0; i < st->n_targets; i++) {
		struct target *t = &st->targets[i];
		pid_t old = t->proc.pid;

		if (t->attached && discover__process(t->proc.pid, &now) == 0 &&
		    strcmp(now.exe, t->proc.exe) == 0)
			continue;
		if (t->role == ROLE_WATCHER) {
			if (t->attached)
				detach_target(st, t);
			continue;
		}
		if (t->attached) {
			fprintf(stderr,
				"bindtrace: %s pid %d exited; waiting for it to come back\n",
				role_exe[t->role], t->proc.pid);
			detach_target(st, t);
		}
		if (find_replacement(st, t, &next))
			continue;
		t->proc = next;
		release_watcher(st, next.pid, t);
		if (attach_target(st, t) == 0) {
			fprintf(stderr, "bindtrace: %s pid %d restarted as pid %d: attached\n",
				role_exe[t->role], old, t->proc.pid);
			t->failed_pid = 0;
		} else {
			/* It said why; the role stays gone rather than retrying every second. */
			fprintf(stderr, "bindtrace: %s pid %d: not attached; still waiting\n",
				role_exe[t->role], t->proc.pid);
			t->failed_pid = t->proc.pid;
			detach_target(st, t);
		}
	}
}

/* A client of the apiserver on this host (kubectl get -w, a kubelet, a controller) is traced too,
 * so that the watch events it is sent are also seen arriving: its TLS probes are attached the
 * first time one of its connections to the apiserver shows up. Not Go, no crypto/tls, already
 * traced: left alone, once. */
static void maybe_trace_watcher(struct trace_state *st, pid_t pid)
{
	const int n_tried = (int)(sizeof(st->watcher_tried) / sizeof(st->watcher_tried[0]));
	struct target *t = NULL;
	int i;

	if (!st->opt.watchers || pid <= 0 || target_of(st, pid))
		return;
	for (i = 0; i < st->n_watcher_tried && i < n_tried; i++)
		if (st->watcher_tried[i] == pid)
			return;
	/* The slot of a watcher that exited is reused: kubectl comes and goes. */
	for (i = 0; i < st->n_targets && !t; i++)
		if (st->targets[i].role == ROLE_WATCHER && !st->targets[i].attached)
			t = &st->targets[i];
	if (!t && st->n_targets == MAX_TRACED)
		return;
	st->watcher_tried[st->n_watcher_tried++ % n_tried] = pid;
	if (!t)
		t = &st->targets[st->n_targets];
	memset(t, 0, sizeof(*t));
	t->role = ROLE_WATCHER;
	if (discover__process(pid, &t->proc) != 0)
		return;
	util__libbpf_quiet(true);
	if (attach_target(st, t) == 0) {
		if (t == &st->targets[st->n_targets])
			st->n_targets++;
		fprintf(stderr, "# watcher %s pid %d (%s): its TLS probes attached\n", t->proc.comm,
			pid, t->go_version);
	} else {
		detach_target(st, t);
	}
	util__libbpf_quiet(false);
}

/* The process at the other end of a connection of pid, when it is on this host. */
static void resolve_peer(struct trace_state *st, pid_t pid, struct actor *who)
{
	struct process_info info;

	who->peer_pid = sockets__peer(st->sockets, pid, &who->local, &who->remote);
	if (who->peer_pid && discover__process(who->peer_pid, &info) == 0)
		util__copy(who->peer_comm, sizeof(who->peer_comm), info.comm);
}

struct connected {
	struct trace_state *st;
	pid_t api;
};

static void on_connected(void *ctx, const struct endpoint *local, const struct endpoint *remote)
{
	struct connected *c = ctx;
	pid_t peer = sockets__peer(c->st->sockets, c->api, local, remote);

	if (peer && peer != c->api)
		maybe_trace_watcher(c->st, peer);
}

/* At start: the watchers already connected to the apiserver, so that the first watch events
 * after attaching are seen arriving too. */
static void trace_connected_watchers(struct trace_state *st, struct target *api)
{
	struct connected c = { st, api->proc.pid };

	if (st->opt.watchers)
		sockets__each_accepted(st->sockets, api->proc.pid, on_connected, &c);
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
	struct target *t = target_of(st, (pid_t)e->hdr.pid);
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
			maybe_trace_watcher(st, cc->who.peer_pid);
		}
		if (verbose)
			fprintf(stderr, "bindtrace: %s pid %d: connection %s -> %s%s%s (pid %d)\n",
				role_exe[t->role], t->proc.pid, endpoint__str(&cc->who.local).s,
				endpoint__str(&cc->who.remote).s,
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
	struct target *t = target_of(st, (pid_t)e->hdr.pid);
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
	struct target *t = target_of(st, (pid_t)e->hdr.pid);
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
	for (i = 0; i < st->n_targets; i++) {
		const struct target *t = &st->targets[i];

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
		check_restarts(st);
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

	for (i = 0; i < st->n_targets; i++) {
		struct target *t = &st->targets[i];
		char release[160];

		fprintf(out, "# %-14s pid %-7d %s  %s%s  (%zu uprobes%s%s)\n", role_exe[t->role],
			t->proc.pid, t->proc.exe, t->go_version,
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
	link_reaper__init(&st->reaper);
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
	if ((err = find_role(st, ROLE_SCHEDULER, st->opt.scheduler_pid)) < 0 ||
	    (found += err, err = find_role(st, ROLE_APISERVER, st->opt.apiserver_pid)) < 0 ||
	    (found += err, err = find_role(st, ROLE_ETCD, st->opt.etcd_pid)) < 0)
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
	/* Downstream first (etcd, then the apiserver, then the scheduler): a bind whose request is
	 * seen then finds the rest of its path already probed, and one already in flight lacks its
	 * request, which says it began before bindtrace attached. */
	for (i = st->n_targets - 1; i >= 0; i--) {
		if (attach_target(st, &st->targets[i]))
			goto cleanup;
		if (st->targets[i].role == ROLE_SCHEDULER)
			copt.have_scheduler = true;
		else if (st->targets[i].role == ROLE_APISERVER)
			copt.have_apiserver = true;
		else if (st->targets[i].role == ROLE_ETCD)
			copt.have_etcd = true;
	}
	copt.linger_ns = st->opt.linger_ms * 1000000ull;
	copt.max_open_ns = 10000000000ull;
	copt.attach_ns = util__monotonic_ns();
	st->corr = correlator__new(&copt, on_bind, st);
	st->summary = summary__new();
	if (!st->corr || !st->summary) {
		fprintf(stderr, "bindtrace: out of memory\n");
		goto cleanup;
	}
	for (i = 0; i < st->n_targets; i++) {
		struct target *t = &st->targets[i];

		trace_outputs__process(
		    st->outputs, process_role__name(t->role), t->proc.pid, t->proc.exe,
		    t->go_version, t->k8s_version[0] ? t->k8s_version : t->module_version, t->gb);
	}
	for (i = 0; i < st->n_targets; i++)
		if (st->targets[i].role == ROLE_APISERVER)
			trace_connected_watchers(st, &st->targets[i]);
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
	link_reaper__finish(&st->reaper);
	for (i = 0; i < st->n_targets; i++) {
		bpf_link__destroy(st->targets[i].call_link);
		tls_attachment__detach(&st->targets[i].tls);
		go_binary__close(st->targets[i].gb);
	}
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
