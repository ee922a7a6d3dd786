/* The traced processes: found, attached, replaced when they restart. See targets.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "capture.skel.h"
#include "conns.h"
#include "events.h"
#include "goelf.h"
#include "goheap.h"
#include "gotls.h"
#include "gorelease.h"
#include "peerfeed.h"
#include "session.h"
#include "sockdiag.h"
#include "sockets.h"
#include "targets.h"
#include "util.h"

/* How many processes of a role's name are looked at for a replacement (and when found by name):
 * all of them in practice. Only TARGETS_PER_ROLE were, and beside several control planes the
 * restarted process, often the newest, was not among the first found in /proc. */
#define MAX_REPLACEMENT_CANDIDATES 128
#define FULL_CHECK_NS 1000000000ull /* /proc read for every target, pidfd or not */

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

void targets__init(struct targets *ts, const struct targets_listener *on)
{
	int i;

	memset(ts, 0, sizeof(*ts));
	for (i = 0; i < TARGETS_MAX; i++)
		ts->pidfd[i] = -1;
	link_reaper__init(&ts->reaper);
	if (on)
		ts->on = *on;
}

struct target *targets__of(struct targets *ts, pid_t pid)
{
	int i;

	for (i = 0; i < ts->n; i++)
		if (ts->t[i].proc.pid == pid)
			return &ts->t[i];
	return NULL;
}

bool targets__has(const struct targets *ts, enum process_role role)
{
	int i;

	for (i = 0; i < ts->n; i++)
		if (ts->t[i].role == role)
			return true;
	return false;
}

bool targets__apiserver_reads_via_syscall(const struct targets *ts)
{
	int i;

	for (i = 0; i < ts->n; i++)
		if (ts->t[i].role == ROLE_APISERVER && ts->t[i].attached &&
		    ts->t[i].reads_via_syscall)
			return true;
	return false;
}

/* The first established connection of a process whose remote end is not on this host. */
static void first_off_host(void *ctx, const struct endpoint *local, const struct endpoint *remote,
			   bool listening, uint64_t inode)
{
	struct endpoint *first = ctx;

	(void)inode;
	if (!listening && !first->family &&
	    !endpoint__same_host(local->family, local->addr, remote->addr))
		*first = *remote;
}

/* Whether etcd t has such a connection (said on stderr when it does). */
static bool etcd_talks_off_host(const struct target *t)
{
	struct endpoint remote = { 0 };

	sockets__each_own(t->proc.pid, SOCKDIAG_ESTABLISHED, first_off_host, &remote);
	if (remote.family)
		fprintf(
		    stderr,
		    "bindtrace: etcd pid %d has connections to other hosts or network "
		    "namespaces (%s, ...): its TLS Reads are probed, as what it reads from them "
		    "may have no Write traced here (--node names this node)\n",
		    t->proc.pid, endpoint__str(&remote).s);
	return remote.family != 0;
}

/* Its reads taken from its traced peers' Writes (peerfeed.h), given the roles traced.
 * BINDTRACE_READS_VIA_SYSCALL=0 probes every Read as before (for before/after measurements);
 * =peers keeps the apiserver's Reads probed (as --probe-reads), the scheduler's and etcd's not;
 * unset or =all takes the apiserver's from the writers too. */
static bool target__reads_via_syscall(const struct targets *ts, const struct target *t)
{
	const char *env = getenv("BINDTRACE_READS_VIA_SYSCALL");

	if (env && strcmp(env, "0") == 0)
		return false;
	/* The apiserver's Reads are not probed by default: what it reads from the scheduler and
	 * etcd is their Writes, and a pod created by a client that is not traced has its
	 * create_request bounded by the apiserver's read(2)s of that client's connection
	 * (correlator, create_from_reads). A Binding whose read(2) record is lost to ring buffer
	 * drops is timed at the earliest it can have been (peer_feed__read), never after its
	 * answer. */
	if (env && strcmp(env, "peers") == 0 && t->role == ROLE_APISERVER)
		return false;
	/* One tracer per node (--node): a scheduler on another node may bind through this node's
	 * apiserver, and that tracer's Writes are not seen here: the apiserver's Reads stay
	 * probed. */
	if (t->role == ROLE_APISERVER && ts->node && ts->node[0])
		return false;
	/* One tracer per node (--node): its etcd member reads raft traffic from the other nodes'
	 * members, which are not traced here, so no Write stands for those reads: its Reads are
	 * probed (the HA bed's answering member saw neither the leader's MsgApp nor its
	 * heartbeats without them). Several members traced by one tracer read each other's Writes
	 * (every member of the cluster is taken to be given then). */
	if (t->role == ROLE_ETCD && ts->node && ts->node[0])
		return false;
	/* No --node, and etcd has connections to other hosts (members or apiservers of a cluster
	 * that spans machines, this tracer on one of them): what it reads from them has no Write
	 * traced here, so its Reads are probed rather than its peers' raft messages and Txns going
	 * unseen. */
	if (t->role == ROLE_ETCD && etcd_talks_off_host(t))
		return false;
	return peer_feed__reads_via_syscall(t->role, targets__has(ts, ROLE_SCHEDULER),
					    targets__has(ts, ROLE_APISERVER),
					    targets__has(ts, ROLE_ETCD), ts->probe_reads);
}

/* Whether t's Writes come from its wire (tlswire.h): its keyed connections' write(2)s copied and
 * decrypted, its Write probe off while every connection is keyed (targets__wire_tick).
 * BINDTRACE_TLS_WIRE unset: the scheduler's. The scheduler has a few connections; those silent
 * since attaching are found in its memory (goheap.h), so its probe goes about 2 s after attaching
 * and stays off: 4-6 of the 16-18 uprobe hits per bind of tests/cost/hits. etcd's 60-odd silent
 * ones (a storage client each of the apiserver) are found in one search too, and its wire saves
 * 6-7 more hits (stop 50), but it was the default only from stop 50 to 56: at 1000 nodes every
 * write(2) etcd makes to the apiserver is copied and decrypted, and the apiserver's p99 in a
 * burst came out higher with it (a geometric mean of 1.47 [1.20-1.79] over 96 pairs, against
 * 1.06 [0.78-1.43] over 48 with etcd on its probe), the control plane's CPU too (scale bench,
 * stop 57); BINDTRACE_TLS_WIRE=kube-scheduler,etcd turns it on. The apiserver keeps its probe:
 * connections to every client, a heap of hundreds of MB at 1000 nodes, and copying its watch
 * traffic cost more than its hits saved (scale bench, stop 31). =0 or =none: none; =1 or =all:
 * the three roles; else a comma-separated list of role names (kube-scheduler,etcd,kube-apiserver).
 * BINDTRACE_TLS_DECRYPT=1 (a measurement): every target's write(2)s are copied and compared
 * with its Write probe, nothing delivered. */
static bool target__wire(const struct targets *ts, const struct target *t)
{
	if (t->role == ROLE_WATCHER || t->role == ROLE_OTHER)
		return false;
	return session__decrypts(ts->session) ||
	       session__wire_role(ts->session, process_role__name(t->role));
}

/* BINDTRACE_READS_VIA_SYSCALL_COMPARE=1 (measurement): the Read probes stay (peer_feed__new). */
bool targets__reads_compare(void)
{
	const char *v = getenv("BINDTRACE_READS_VIA_SYSCALL_COMPARE");

	return v && *v && strcmp(v, "0") != 0;
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

const char *target__release_label(const struct target *t, char *buf, size_t len)
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
	uint64_t h = UTIL_FNV_START;
	ssize_t n, total = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		h = util__fnv1a(h, buf, (size_t)n);
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
			process_role__name(t->role), t->proc.pid, t->proc.exe);
	else
		fprintf(stderr, "bindtrace: %s pid %d (%s): %s\n", process_role__name(t->role),
			t->proc.pid, t->proc.exe, why);
}

/* Where a bind is queued for a dispatcher goroutine (SchedulerAsyncAPICalls, 1.34+):
 * (*APICache).BindPod(binding): RAX recv, RBX binding, the object the dispatcher POSTs. */
const char targets__queue_probe[] =
    "k8s.io/kubernetes/pkg/scheduler/backend/api_cache.(*APICache).BindPod";
static const struct bind_probe queue_probe = { targets__queue_probe, 1 };

/* Where the scheduler's failure handler patches an unschedulable pod's status:
 * updatePod(ctx, client, [apiCacher,] pod, ...). ABIInternal: ctx in RAX+RBX, client in RCX+RDI;
 * the pod follows in RSI up to 1.33, in R9 from 1.34 on (an APICacher interface comes first, in
 * RSI+R8: its type word in RSI is read too, non-zero when the PATCH goes to a dispatcher). */
const char targets__giveup_probe[] = "k8s.io/kubernetes/pkg/scheduler.updatePod";

/* The minor release of "v1.N.x", 0 when unknown. */
static int k8s_minor(const char *version)
{
	int major = 0, minor = 0;

	if (sscanf(version, "v%d.%d", &major, &minor) != 2 || major != 1)
		return 0;
	return minor;
}

/* Where a uprobe of go_call on p->func goes, validated; func NULL when the binary has no such
 * function or it does not validate. */
static void call_site__find(struct target *t, const struct bind_probe *p, __u64 flags,
			    struct call_site *out)
{
	uint64_t entry, end;
	bool at_branch;
	int64_t off;

	memset(out, 0, sizeof(*out));
	if (go_binary__func(t->gb, p->func, &entry, &end) ||
	    go_binary__check_probe(t->gb, p->func, entry))
		return;
	off = go_entry_probe_offset(t->gb, entry, &at_branch);
	if (off < 0)
		return;
	out->func = p->func;
	out->offset = (uint64_t)off;
	out->cookie = (__u64)p->obj_reg | flags | (at_branch ? PROBE_COOKIE_AT_BRANCH : 0);
}

static struct bpf_link *call_site__attach(struct targets *ts, struct target *t, const char *path,
					  const struct call_site *c)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = c->cookie);

	if (!c->func)
		return NULL;
	return bpf_program__attach_uprobe_opts(session__bpf(ts->session)->progs.go_call,
					       t->proc.pid, path, (size_t)c->offset, &uo);
}

/* The scheduler's bind call: every one of bind_probes the binary has and validates (attached:
 * the first that attaches); where it queues binds for a dispatcher, when it has that; and where
 * it gives up on a pod. */
static void find_bind_call(struct target *t)
{
	size_t i;

	for (i = 0; i < sizeof(bind_probes) / sizeof(bind_probes[0]); i++)
		call_site__find(t, &bind_probes[i], 0, &t->bind_sites[i]);
	call_site__find(t, &queue_probe, CALL_COOKIE_QUEUED, &t->queue_site);
	memset(&t->giveup_site, 0, sizeof(t->giveup_site));
	/* A release whose updatePod's arguments are not known is not probed there. */
	if (k8s_minor(t->k8s_version)) {
		bool cacher = k8s_minor(t->k8s_version) >= 34;
		struct bind_probe giveup = { targets__giveup_probe, cacher ? 6 : 4 };

		call_site__find(t, &giveup,
				CALL_COOKIE_GIVEUP | (cacher ? CALL_COOKIE_AUX | (4ull << 16) : 0),
				&t->giveup_site);
	}
}

/* One uprobe_multi link of go_call at those of sites[0..n) that t's binary has; whether it was
 * made (with --verbose, why not). */
static bool call_sites__attach_multi(struct targets *ts, struct target *t, const char *path,
				     const struct call_site *const *sites, size_t n)
{
	uint64_t offsets[3], cookies[3];
	size_t k = 0, i;
	char why[256];
	int fd;

	for (i = 0; i < n && k < 3; i++) {
		if (!sites[i]->func)
			continue;
		offsets[k] = sites[i]->offset;
		cookies[k++] = sites[i]->cookie;
	}
	if (!k)
		return false;
	fd = uprobe_multi__link(session__bpf(ts->session)->progs.go_call, t->proc.pid, path,
				offsets, cookies, k, why, sizeof(why));
	if (fd < 0) {
		if (verbose)
			fprintf(stderr, "bindtrace: kube-scheduler pid %d: %s\n", t->proc.pid, why);
		return false;
	}
	t->calls.multi_fd = fd;
	t->calls.has_multi = true;
	return true;
}

static bool call_probes__any(const struct call_probes *cp)
{
	return cp->has_multi || cp->links[0] || cp->links[1] || cp->links[2];
}

static void call_probes__close(struct call_probes *cp)
{
	size_t i;

	for (i = 0; i < 3; i++)
		bpf_link__destroy(cp->links[i]);
	if (cp->has_multi)
		close(cp->multi_fd);
	memset(cp, 0, sizeof(*cp));
}

/* The sites find_bind_call found, attached: the first bind call that attaches, the queue and
 * the give-up. */
static void probe_bind_call(struct targets *ts, struct target *t, const char *path)
{
	const size_t n_bind = sizeof(t->bind_sites) / sizeof(t->bind_sites[0]);
	struct call_probes *cp = &t->calls;
	size_t i;

	memset(cp, 0, sizeof(*cp));
	t->call_probe = NULL;
	if (tls_programs__multi()) {
		/* One link for the first bind site that attaches, with the queue and give-up
		 * sites; those two alone when none does. */
		for (i = 0; i < n_bind && !cp->has_multi; i++) {
			const struct call_site *sites[] = { &t->bind_sites[i], &t->queue_site,
							    &t->giveup_site };

			if (t->bind_sites[i].func &&
			    call_sites__attach_multi(ts, t, path, sites, 3))
				t->call_probe = t->bind_sites[i].func;
		}
		if (!cp->has_multi) {
			const struct call_site *sites[] = { &t->queue_site, &t->giveup_site };

			call_sites__attach_multi(ts, t, path, sites, 2);
		}
		cp->queue = cp->has_multi && t->queue_site.func;
		cp->giveup = cp->has_multi && t->giveup_site.func;
	} else {
		for (i = 0; i < n_bind && !cp->links[0]; i++) {
			cp->links[0] = call_site__attach(ts, t, path, &t->bind_sites[i]);
			if (cp->links[0])
				t->call_probe = t->bind_sites[i].func;
		}
		cp->links[1] = call_site__attach(ts, t, path, &t->queue_site);
		cp->links[2] = call_site__attach(ts, t, path, &t->giveup_site);
		cp->queue = cp->links[1] != NULL;
		cp->giveup = cp->links[2] != NULL;
	}
	if (!t->call_probe)
		fprintf(
		    stderr,
		    "bindtrace: kube-scheduler pid %d: no bind call to probe; binds will not cite "
		    "their source line\n",
		    t->proc.pid);
}

/* An attached or read target running the same executable file as t (see struct target). */
static const struct target *same_binary(const struct targets *ts, const struct target *t)
{
	int i;

	for (i = 0; i < ts->n; i++) {
		const struct target *o = &ts->t[i];

		if (o != t && o->gb && o->exe_ino == t->exe_ino && o->exe_dev == t->exe_dev &&
		    o->exe_mtime_ns == t->exe_mtime_ns && o->exe_size == t->exe_size)
			return o;
	}
	return NULL;
}

/* The binary, its versions and where it is loaded: opened and validated, or shared with a
 * target that runs the same file; then where its probes go. Nothing is attached. */
static int read_binary(struct targets *ts, struct target *t, const char *path)
{
	const char *find[TLS_PROBE_FUNCS + 8 + sizeof(bind_probes) / sizeof(bind_probes[0]) + 2];
	const struct target *o;
	size_t n = 0, i;
	struct stat st;
	char why[512];
	int err;

	t->shares_with = 0;
	t->exe_ino = 0;
	if (stat(path, &st) == 0) {
		t->exe_dev = st.st_dev;
		t->exe_ino = st.st_ino;
		t->exe_mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		t->exe_size = (int64_t)st.st_size;
	}
	o = t->exe_ino ? same_binary(ts, t) : NULL;
	if (o) {
		t->gb = go_binary__ref(o->gb);
		t->shares_with = o->proc.pid;
		memcpy(t->go_version, o->go_version, sizeof(t->go_version));
		memcpy(t->k8s_version, o->k8s_version, sizeof(t->k8s_version));
		memcpy(t->module_version, o->module_version, sizeof(t->module_version));
		memcpy(t->commit, o->commit, sizeof(t->commit));
	} else {
		/* Every function looked up below, found in the one pass opening makes. */
		for (i = 0; i < TLS_PROBE_FUNCS; i++)
			find[n++] = tls_probe_funcs[i];
		for (i = 0; i < go_release__n_funcs && i < 8; i++)
			find[n++] = go_release__funcs[i];
		if (t->role == ROLE_SCHEDULER) {
			for (i = 0; i < sizeof(bind_probes) / sizeof(bind_probes[0]); i++)
				find[n++] = bind_probes[i].func;
			find[n++] = targets__queue_probe;
			find[n++] = targets__giveup_probe;
		}
		t->gb = go_binary__open_find(path, find, n, why, sizeof(why));
		if (!t->gb) {
			attach_failed(t, why);
			return -EINVAL;
		}
		util__copy(t->go_version, sizeof(t->go_version),
			   go_binary__buildinfo(t->gb)->go_version);
		target__read_release(t);
	}
	t->load_bias = load_bias(t);
	t->cmdline_hash = cmdline_hash(t->proc.pid);
	err = tls_sites__find_in(t->gb, &t->tls_sites, why, sizeof(why));
	if (err) {
		attach_failed(t, why);
		return err;
	}
	if (t->role == ROLE_SCHEDULER)
		find_bind_call(t);
	return 0;
}

/* t's pidfd replaced by fd (-1: none; a kernel without pidfd_open is read as before). */
static void pidfd_set(struct targets *ts, const struct target *t, int fd)
{
	int *slot = &ts->pidfd[t - ts->t];

	if (*slot >= 0)
		close(*slot);
	*slot = fd < 0 ? -1 : fd;
}

/* --verbose: a step of attaching, wall and CPU time (this process's: util__cpu_ns). */
struct attach_clock {
	uint64_t wall_ns[5], cpu_ns[5]; /* read: [0] to [1]; link: [2], TLS [3], done [4] */
	int n;
};

static void attach_clock__mark(struct attach_clock *c)
{
	if (c->n < 5) {
		c->wall_ns[c->n] = util__monotonic_ns();
		c->cpu_ns[c->n++] = util__cpu_ns();
	}
}

/* Reading t's binary (read_binary), timed for --verbose. */
static int target__read(struct targets *ts, struct target *t, struct attach_clock *clk)
{
	char path[64];
	int err;

	clk->n = 0;
	attach_clock__mark(clk);
	snprintf(path, sizeof(path), "/proc/%d/exe", t->proc.pid);
	err = read_binary(ts, t, path);
	attach_clock__mark(clk);
	return err;
}

/* Its pid in the targets map, with what the probes do for it. */
static int target__add_to_map(struct targets *ts, const struct target *t, bool wire)
{
	int err = session__add_target_flags(ts->session, t->proc.pid, t->role == ROLE_ETCD,
					    t->reads_via_syscall, wire);

	if (err)
		fprintf(stderr, "bindtrace: %s pid %d: BPF map update: %s\n",
			process_role__name(t->role), t->proc.pid, strerror(-err));
	return err;
}

/* Its uprobes and its pid in the targets map, at the sites read_binary found. */
static int target__link(struct targets *ts, struct target *t, struct attach_clock *clk)
{
	uint64_t read_wall = clk->wall_ns[1] - clk->wall_ns[0];
	uint64_t read_cpu = clk->cpu_ns[1] - clk->cpu_ns[0];
	char path[64], why[512], shared[64] = "";
	int err;

	clk->n = 2;
	attach_clock__mark(clk);
	snprintf(path, sizeof(path), "/proc/%d/exe", t->proc.pid);
	t->reads_via_syscall = target__reads_via_syscall(ts, t);
	t->wire = target__wire(ts, t);
	t->n_heap_searched = 0; /* a restart's connections are all new */
	if (session__harvests_tls_keys(ts->session) || t->wire) {
		const struct go_buildinfo *bi = go_binary__buildinfo(t->gb);
		struct tls_layout layout;

		if (bi && !gotls__layout(bi->go_major, bi->go_minor, &layout)) {
			session__set_tls_layout(ts->session, t->proc.pid, &layout);
		} else {
			/* Its Writes from its probe: said only when asked for (the default's
			 * scheduler built by a Go release gotls.c does not know is no fault). */
			if (session__harvests_tls_keys(ts->session) || verbose ||
			    session__wire_asked(ts->session))
				fprintf(stderr,
					"bindtrace: %s pid %d: %s: no crypto/tls layout known for "
					"it, its TLS 1.3 state is not read%s\n",
					process_role__name(t->role), t->proc.pid,
					bi && bi->go_version ? bi->go_version
							     : "Go release unknown",
					t->wire ? ": its Writes come from its probe" : "");
			t->wire = false;
		}
	}
	/* Its wire bit only once its Write probe is there: in between, a write(2) of a connection
	 * no Write had met yet was counted as written without a key (etcd, 10 of 110 runs at
	 * stop 63), though no probe could have seen its plaintext before the attach either. */
	err = target__add_to_map(ts, t, false);
	if (err)
		return err;
	err = tls_attachment__attach_sites(
	    &t->tls, session__bpf(ts->session), t->proc.pid, path, &t->tls_sites,
	    (t->reads_via_syscall && !targets__reads_compare() ? TLS_ATTACH_NO_READS : 0) |
		(session__wire_delivers(ts->session) && t->wire ? TLS_ATTACH_SECRET : 0),
	    why, sizeof(why));
	if (err) {
		attach_failed(t, why);
		return err;
	}
	if (t->wire && (err = target__add_to_map(ts, t, true)))
		return err;
	attach_clock__mark(clk);
	if (t->role == ROLE_SCHEDULER)
		probe_bind_call(ts, t, path);
	/* Opening validated every pclntab entry: give those pages back before the next target, so
	 * the peak holds one binary's, and citations later fault in only what they read. */
	go_binary__release(t->gb);
	attach_clock__mark(clk);
	t->attach_ns = read_wall + clk->wall_ns[4] - clk->wall_ns[2];
	t->attach_cpu_ns = read_cpu + clk->cpu_ns[4] - clk->cpu_ns[2];
	if (t->shares_with)
		snprintf(shared, sizeof(shared), " (the binary of pid %d, same file)",
			 t->shares_with);
	if (verbose)
		fprintf(
		    stderr,
		    "bindtrace: %s pid %d attached in %.1f ms (CPU %.1f): binary read and checked, "
		    "probe sites found %.1f (CPU %.1f)%s, TLS probes %.1f (CPU %.1f), bind "
		    "call probes %.1f (CPU %.1f)\n",
		    process_role__name(t->role), t->proc.pid, (double)t->attach_ns / 1e6,
		    (double)t->attach_cpu_ns / 1e6, (double)read_wall / 1e6, (double)read_cpu / 1e6,
		    shared, (double)(clk->wall_ns[3] - clk->wall_ns[2]) / 1e6,
		    (double)(clk->cpu_ns[3] - clk->cpu_ns[2]) / 1e6,
		    (double)(clk->wall_ns[4] - clk->wall_ns[3]) / 1e6,
		    (double)(clk->cpu_ns[4] - clk->cpu_ns[3]) / 1e6);
	t->attached = true;
	t->wire_unkeyed = 0;
	t->wire_quiet_since_ns = t->write_on_since_ns = util__monotonic_ns();
	pidfd_set(ts, t, (int)syscall(SYS_pidfd_open, t->proc.pid, 0));
	if (ts->on.attached)
		ts->on.attached(ts->on.ctx, t);
	return 0;
}

static int attach_target(struct targets *ts, struct target *t)
{
	struct attach_clock clk;
	int err = target__read(ts, t, &clk);

	return err ? err : target__link(ts, t, &clk);
}

int targets__attach_all(struct targets *ts, struct session *session)
{
	int i, err;

	struct attach_clock clk[TARGETS_MAX];

	ts->session = session;
	/* Every binary read first, then every uprobe registered in a row: the first uprobe
	 * registered after a pause waits for an RCU grace period (tens of milliseconds on a busy
	 * machine), and binaries read in between made each target wait for its own. */
	for (i = ts->n - 1; i >= 0; i--) {
		if (session__stop_requested()) /* SIGINT: nothing more is attached */
			return 0;
		err = target__read(ts, &ts->t[i], &clk[i]);
		if (err)
			return err;
	}
	for (i = ts->n - 1; i >= 0; i--) {
		err = target__link(ts, &ts->t[i], &clk[i]);
		if (err)
			return err;
	}
	return 0;
}

struct on_node {
	const struct targets *ts;
	bool found;
};

static void own_socket_on_node(void *ctx, const struct endpoint *local,
			       const struct endpoint *remote, bool listening, uint64_t inode)
{
	struct on_node *a = ctx;

	(void)remote;
	(void)listening, (void)inode;
	if (endpoint__in(local, a->ts->node_addrs, a->ts->n_node_addrs))
		a->found = true;
}

bool targets__on_node(const struct targets *ts, pid_t pid)
{
	struct on_node a = { ts, false };

	if (!ts->n_node_addrs)
		return true;
	sockets__each_own(pid, SOCKDIAG_LISTEN | SOCKDIAG_ESTABLISHED, own_socket_on_node, &a);
	return a.found;
}

/* A pid given for a role: it must exist and be readable. */
static int find_given(enum process_role role, pid_t given, struct process_info *out)
{
	int err = discover__process(given, out);
	const char *hint;

	if (!err)
		return 0;
	hint = err == -EACCES || err == -EPERM ? " (reading /proc/PID/exe of another process "
						 "needs CAP_SYS_PTRACE)"
					       : "";
	fprintf(stderr, "bindtrace: %s pid %d: %s%s\n", process_role__name(role), given,
		err == -ESRCH ? "no such process" : strerror(-err), hint);
	return err;
}

/* Those of a role's name on the node (all of them without node addresses), up to max. */
static int find_by_name(const struct targets *ts, enum process_role role, struct process_info *out,
			int max)
{
	struct process_info *found = calloc(MAX_REPLACEMENT_CANDIDATES, sizeof(*found));
	int n, i, kept = 0;

	if (!found)
		return -ENOMEM;
	n = discover__by_exe_name(process_role__name(role), found, MAX_REPLACEMENT_CANDIDATES);
	for (i = 0; i < n && kept < max; i++) {
		if (targets__on_node(ts, found[i].pid))
			out[kept++] = found[i];
		else if (verbose)
			fprintf(stderr,
				"bindtrace: %s pid %d: not on node %s (no socket on its "
				"addresses): not traced\n",
				process_role__name(role), found[i].pid, ts->node);
	}
	free(found);
	return n < 0 ? n : kept;
}

int targets__find(struct targets *ts, enum process_role role, const pid_t *given, int n_given)
{
	struct process_info found[TARGETS_PER_ROLE];
	int n, i, err;

	if (n_given > TARGETS_PER_ROLE)
		n_given = TARGETS_PER_ROLE;
	if (n_given) {
		for (i = 0; i < n_given; i++) {
			err = find_given(role, given[i], &found[i]);
			if (err)
				return err;
		}
		n = n_given;
	} else {
		n = find_by_name(ts, role, found, TARGETS_PER_ROLE);
		if (n < 0)
			return n;
	}
	for (i = 0; i < n && ts->n < TARGETS_MAX; i++) {
		struct target *t = &ts->t[ts->n++];

		t->role = role;
		t->proc = found[i];
		t->given = n_given != 0;
	}
	return n;
}

/* Every probe of t, taken from it: its TLS links and uprobe_multi fds, its bind-call probes. The
 * links go into an array from malloc (NULL when there are none or no memory: then closed here);
 * fds has room for TLSPROBE_MAX_MULTI + 1. */
static struct bpf_link **target__take_links(struct target *t, size_t *n, int *fds, size_t *n_fds)
{
	struct bpf_link **links = realloc(t->tls.links, (t->tls.n_links + 3) * sizeof(*links));
	size_t k;

	*n = *n_fds = 0;
	if (!links) {
		call_probes__close(&t->calls);
		tls_attachment__detach(&t->tls);
		return NULL;
	}
	*n = t->tls.n_links;
	for (k = 0; k < 3; k++)
		if (t->calls.links[k])
			links[(*n)++] = t->calls.links[k];
	for (k = 0; k < t->tls.n_multi; k++)
		fds[(*n_fds)++] = t->tls.multi_fds[k];
	if (t->calls.has_multi)
		fds[(*n_fds)++] = t->calls.multi_fd;
	t->tls.links = NULL;
	t->tls.n_links = t->tls.n_multi = t->tls.n_probes = 0;
	memset(&t->calls, 0, sizeof(t->calls));
	return links;
}

static void heap_search_cancel(struct targets *ts, struct target *t);

/* Probes of a process that is still running are closed at once: new ones may follow on it. Those
 * of one that exited can see nothing more and go to the reaper. */
static void detach_target(struct targets *ts, struct target *t)
{
	struct process_info now;

	if ((t->tls.n_links || t->tls.n_multi || call_probes__any(&t->calls)) &&
	    discover__process(t->proc.pid, &now) == -ESRCH) {
		int fds[TLSPROBE_MAX_MULTI + 1];
		size_t n, n_fds;
		struct bpf_link **links = target__take_links(t, &n, fds, &n_fds);

		if (links)
			link_reaper__add(&ts->reaper, links, n, fds, n_fds);
	}
	heap_search_cancel(ts, t);
	call_probes__close(&t->calls);
	tls_attachment__detach(&t->tls);
	go_binary__close(t->gb);
	t->gb = NULL;
	session__remove_target(ts->session, t->proc.pid);
	t->attached = false;
	pidfd_set(ts, t, -1);
	if (ts->on.detached)
		ts->on.detached(ts->on.ctx, t);
}

/* The process that replaces a traced one that exited: one running the same executable name
 * that is not already traced in a role. One with the same command line is preferred (several
 * control planes may run on one host, each restarted on its own); for a pid given on the
 * command line nothing else will do, so that another cluster's process is never picked up. */
static int find_replacement(struct targets *ts, const struct target *t, struct process_info *out)
{
	struct process_info *found = calloc(MAX_REPLACEMENT_CANDIDATES, sizeof(*found));
	int i, k, n, best = -1;

	if (!found)
		return -ENOMEM;
	n = discover__by_exe_name(process_role__name(t->role), found, MAX_REPLACEMENT_CANDIDATES);
	for (i = 0; i < n; i++) {
		bool taken = false;

		if (found[i].pid == t->failed_pid)
			continue;
		for (k = 0; k < ts->n && !taken; k++)
			taken = ts->t[k].attached && ts->t[k].role != ROLE_WATCHER &&
				ts->t[k].proc.pid == found[i].pid;
		if (taken)
			continue;
		if (t->cmdline_hash && cmdline_hash(found[i].pid) == t->cmdline_hash) {
			best = i;
			break;
		}
		if (!t->given && best < 0 && targets__on_node(ts, found[i].pid))
			best = i;
	}
	if (best >= 0)
		*out = found[best];
	free(found);
	return best >= 0 ? 0 : -ESRCH;
}

/* A process already traced as a watcher (a restarted kube-scheduler connects to the apiserver
 * before it is noticed) gives its probes up to its role: true when it was one. */
static bool release_watcher(struct targets *ts, pid_t pid)
{
	bool was = false;
	int k;

	for (k = 0; k < ts->n; k++) {
		struct target *w = &ts->t[k];

		if (w->role == ROLE_WATCHER && w->attached && w->proc.pid == pid) {
			detach_target(ts, w);
			was = true;
		}
	}
	return was;
}

struct keyed_walk {
	struct targets *ts;
	const struct target *t;
	bool all;
	char *why;
	size_t why_len;
	/* The connections not met since attaching and not searched for yet. */
	uint64_t silent[TARGETS_HEAP_SEARCHED];
	int n_silent;
};

static bool heap_searched(const struct target *t, uint64_t ino)
{
	for (int i = 0; i < t->n_heap_searched; i++)
		if (t->heap_searched[i] == ino)
			return true;
	return false;
}

static void check_keyed(void *ctx, const struct endpoint *local, const struct endpoint *remote,
			bool listening, uint64_t inode)
{
	struct keyed_walk *w = ctx;
	uint64_t written = 0;
	uint32_t flags = 0;
	bool met;

	(void)local, (void)remote, (void)listening;
	met = session__conn_flags(w->ts->session, w->t->proc.pid, inode, &flags, &written) == 0;
	/* Keyed, or seen writing plaintext. */
	if (met && ((flags & CONN_KEYED) || (!(flags & CONN_TLS) && written)))
		return;
	/* Silent since attaching (perhaps read from): its first Write would have no key (until
	 * stop 31 such a connection let the probe go after 30 s, and the first write(2)s it made on
	 * waking were lost), unless that write(2) is keyed from its *tls.Conn found in the
	 * process's memory. */
	if (!(flags & CONN_TLS)) {
		if (session__wire_pending(w->ts->session, w->t->proc.pid, inode))
			return;
		/* Beyond TARGETS_HEAP_SEARCHED, none is searched for: they keep the probe on while
		 * they are silent, as until stop 34. (A search costs about 5 ms per MB of heap,
		 * however many it looks for.) */
		if (!heap_searched(w->t, inode) &&
		    w->t->n_heap_searched + w->n_silent < TARGETS_HEAP_SEARCHED)
			w->silent[w->n_silent++] = inode;
	}
	if (w->all)
		snprintf(w->why, w->why_len, "socket %llu %s", (unsigned long long)inode,
			 !met		    ? "not met since attaching"
			 : flags & CONN_TLS ? "TLS, not keyed"
					    : "not seen writing");
	w->all = false;
}

/* A search of a target's memory for its silent connections (goheap.h) runs on a thread of its
 * own: it reads the whole resident heap six times (the bench's scheduler at 1000 nodes: 88 MB in
 * 0.44 s; one with a 1 GiB heap would take about 5 s), and meanwhile the event loop must go on
 * reading the ring buffer. The thread touches only this struct; what it found is given to the
 * capture by the event loop once it is joined. */
struct heap_search {
	pthread_t thread;
	bool on_thread; /* thread runs it (else it ran on the event loop) */
	atomic_bool cancel;
	pid_t pid;
	struct tls_layout layout;
	int n;
	int fds[TARGETS_HEAP_SEARCHED];
	uint64_t inodes[TARGETS_HEAP_SEARCHED], found[TARGETS_HEAP_SEARCHED];
	struct goheap_stats st;
	int err;
};

static void *heap_search_run(void *arg)
{
	struct heap_search *h = arg;

	h->err = goheap__find_tls_conns(h->pid, &h->layout, h->fds, (size_t)h->n, h->found, &h->st,
					&h->cancel);
	return NULL;
}

/* The connections of t silent since attaching: their *tls.Conn looked for in its memory, each
 * once, on a thread (t->heap_search), or here and now where none can be started. */
static void heap_search_start(struct target *t, const uint64_t *silent, int n)
{
	const struct go_buildinfo *bi = go_binary__buildinfo(t->gb);
	struct heap_search *h;
	int fds[TARGETS_HEAP_SEARCHED];

	h = calloc(1, sizeof(*h));
	if (!h)
		return;
	if (!bi || gotls__layout(bi->go_major, bi->go_minor, &h->layout)) {
		free(h);
		return;
	}
	h->pid = t->proc.pid;
	sockets__fds_of_inodes(t->proc.pid, silent, n, fds);
	for (int i = 0; i < n; i++) {
		if (t->n_heap_searched < TARGETS_HEAP_SEARCHED)
			t->heap_searched[t->n_heap_searched++] = silent[i];
		if (fds[i] >= 0) {
			h->inodes[h->n] = silent[i];
			h->fds[h->n++] = fds[i];
		}
	}
	if (!h->n) {
		free(h);
		return;
	}
	t->heap_search = h;
	h->on_thread = pthread_create(&h->thread, NULL, heap_search_run, h) == 0;
	if (!h->on_thread)
		heap_search_run(h);
}

/* A search of t's that has ended (wait: once it ends): each tls.Conn found given to the capture
 * (keyed at its connection's first write(2)). False: still running. */
static bool heap_search_end(struct targets *ts, struct target *t, bool wait)
{
	struct heap_search *h = t->heap_search;
	int n = 0;

	if (h->on_thread &&
	    (wait ? pthread_join(h->thread, NULL) : pthread_tryjoin_np(h->thread, NULL)))
		return false;
	t->heap_search = NULL;
	t->heap_searches++;
	t->heap_bytes += h->st.bytes_read;
	t->heap_ns += h->st.wall_ns;
	if (h->err < 0 && h->err != -ECANCELED)
		fprintf(stderr,
			"bindtrace: %s pid %d: its silent connections' TLS state not searched for "
			"in its memory: %s\n",
			process_role__name(t->role), t->proc.pid, strerror(-h->err));
	for (int i = 0; h->err >= 0 && i < h->n; i++) {
		if (!h->found[i] ||
		    session__wire_pending_set(ts->session, t->proc.pid, h->inodes[i], h->found[i]))
			continue;
		t->heap_found++;
		n++;
	}
	if (verbose && h->err == -ECANCELED)
		fprintf(stderr,
			"bindtrace: %s pid %d: the search of its memory for %d connections silent "
			"since attaching stopped unfinished (%.1f MB of heap read in %.1f ms)\n",
			process_role__name(t->role), t->proc.pid, h->n,
			(double)h->st.bytes_read / 1e6, (double)h->st.wall_ns / 1e6);
	if (verbose && h->err >= 0)
		fprintf(stderr,
			"bindtrace: %s pid %d: %d of %d connections silent since attaching found "
			"in its memory (%.1f MB of heap in %.1f ms; %llu ambiguous, %llu objects "
			"not followed)\n",
			process_role__name(t->role), t->proc.pid, n, h->n,
			(double)h->st.bytes_read / 1e6, (double)h->st.wall_ns / 1e6,
			(unsigned long long)h->st.ambiguous, (unsigned long long)h->st.truncated);
	free(h);
	return true;
}

/* A search still running on t (a target detached, the tracer leaving): told to stop, which it
 * does within a MiB's read, and joined; what it found is not used. */
static void heap_search_cancel(struct targets *ts, struct target *t)
{
	if (!t->heap_search)
		return;
	atomic_store(&t->heap_search->cancel, true);
	heap_search_end(ts, t, true);
}

/* Whether every established TCP connection of t is keyed (its Writes come from its wire) or was
 * seen writing plaintext: only then may its Write probe go, or a connection quiet until now
 * would lose its first Writes (a client's HTTP/2 connection idle since attaching, whose first
 * binds then carried the HPACK entries all later ones refer to). why: the first that is not. */
static bool every_connection_keyed(struct targets *ts, struct target *t, char *why, size_t why_len)
{
	struct keyed_walk w = { .ts = ts, .t = t, .all = true, .why = why, .why_len = why_len };

	if (!t->heap_search) {
		sockets__each_own(t->proc.pid, SOCKDIAG_ESTABLISHED, check_keyed, &w);
		if (w.all || !w.n_silent)
			return w.all;
		/* Silent ones searched for in memory, then all looked at again once that ends. */
		heap_search_start(t, w.silent, w.n_silent);
	}
	if (t->heap_search && !heap_search_end(ts, t, false)) {
		snprintf(why, why_len,
			 "%d connections silent since attaching being searched for in its memory",
			 t->heap_search->n);
		return false;
	}
	w = (struct keyed_walk){ .ts = ts, .t = t, .all = true, .why = why, .why_len = why_len };
	sockets__each_own(t->proc.pid, SOCKDIAG_ESTABLISHED, check_keyed, &w);
	return w.all;
}

void targets__print_wire(const struct targets *ts, FILE *out)
{
	if (!session__wire_delivers(ts->session))
		return;
	for (int i = 0; i < ts->n; i++) {
		const struct target *t = &ts->t[i];

		if (!t->wire || !t->proc.pid)
			continue;
		fprintf(
		    out,
		    "bindtrace: %s pid %d: Writes from the wire (BINDTRACE_TLS_WIRE, by default the "
		    "scheduler's): Write probe "
		    "%s at exit, taken off %u times, put back %u; %llu write(2)s of TLS "
		    "connections without a key (their bytes not decoded); %d connections silent "
		    "since attaching searched for in its memory, %u found (%u searches, %.1f MB "
		    "of heap, %.1f ms)%s%s\n",
		    process_role__name(t->role), t->proc.pid, t->tls.write_off ? "off" : "on",
		    t->write_offs, t->write_ons, (unsigned long long)t->wire_unkeyed,
		    t->n_heap_searched, t->heap_found, t->heap_searches,
		    (double)t->heap_bytes / 1e6, (double)t->heap_ns / 1e6,
		    t->tls.write_off || !t->wire_waiting[0] ? "" : "; it stayed for ",
		    t->tls.write_off ? "" : t->wire_waiting);
	}
}

void targets__wire_tick(struct targets *ts, uint64_t now_ns)
{
	char why[256];

	if (!session__wire_delivers(ts->session))
		return;
	for (int i = 0; i < ts->n; i++) {
		struct target *t = &ts->t[i];
		uint64_t n;
		int fd;

		/* The three roles; a watcher keeps its probes (its reads need them anyway). */
		if (!t->attached || !t->wire || t->tls.secret_index < 0)
			continue;
		n = session__wire_unkeyed(ts->session, t->proc.pid);
		if (n != t->wire_unkeyed) {
			t->wire_unkeyed = n;
			t->wire_quiet_since_ns = now_ns;
			if (!t->tls.write_off)
				continue;
			if (tls_attachment__write_on(&t->tls, why, sizeof(why))) {
				fprintf(stderr, "bindtrace: %s pid %d: Write probe back: %s\n",
					process_role__name(t->role), t->proc.pid, why);
				continue;
			}
			t->write_ons++;
			t->write_on_since_ns = now_ns;
			if (verbose)
				fprintf(
				    stderr,
				    "bindtrace: %s pid %d: a TLS connection without a key wrote: "
				    "Write probe back\n",
				    process_role__name(t->role), t->proc.pid);
			continue;
		}
		if (t->tls.write_off || now_ns - t->wire_quiet_since_ns < TARGETS_WIRE_QUIET_NS ||
		    now_ns - t->write_on_since_ns < TARGETS_WIRE_QUIET_NS ||
		    now_ns < t->wire_next_check_ns)
			continue;
		t->wire_next_check_ns = now_ns + 1000000000ull;
		if (!every_connection_keyed(ts, t, why, sizeof(why))) {
			/* A search running: looked at again at the next tick. */
			if (t->heap_search)
				t->wire_next_check_ns = now_ns;
			if (verbose && strcmp(why, t->wire_waiting) != 0)
				fprintf(stderr, "bindtrace: %s pid %d: Write probe stays: %s\n",
					process_role__name(t->role), t->proc.pid, why);
			snprintf(t->wire_waiting, sizeof(t->wire_waiting), "%s", why);
			continue;
		}
		fd = tls_attachment__write_off(&t->tls);
		if (fd < 0)
			continue;
		/* Off the event loop: the close waits for an RCU grace period (20-150 ms). */
		link_reaper__add(&ts->reaper, NULL, 0, &fd, 1);
		t->write_offs++;
		if (verbose)
			fprintf(stderr,
				"bindtrace: %s pid %d: every connection is keyed: Write probe off "
				"(checked in %.1f ms)\n",
				process_role__name(t->role), t->proc.pid,
				(double)(util__monotonic_ns() - now_ns) / 1e6);
	}
}

/* A traced process that exited (a restarted kube-scheduler, say) is replaced by the process now
 * running the same command, attached afresh; until one appears the role is marked gone. */
void targets__check_restarts(struct targets *ts)
{
	struct process_info now, next;
	struct pollfd alive[TARGETS_MAX];
	bool was_watcher;
	uint64_t now_ns = util__monotonic_ns();
	bool full = now_ns >= ts->next_full_check_ns;
	int i;

	if (full)
		ts->next_full_check_ns = now_ns + FULL_CHECK_NS;
	for (i = 0; i < ts->n; i++) {
		alive[i].fd = ts->t[i].attached ? ts->pidfd[i] : -1; /* -1: not polled */
		alive[i].events = POLLIN;
		alive[i].revents = 0;
	}
	if (!full && ts->n && poll(alive, (nfds_t)ts->n, 0) < 0)
		full = true;
	for (i = 0; i < ts->n; i++) {
		struct target *t = &ts->t[i];
		pid_t old = t->proc.pid;

		/* Still running, says its pidfd: nothing to read. */
		if (!full && t->attached && alive[i].fd >= 0 && alive[i].fd == ts->pidfd[i] &&
		    !alive[i].revents)
			continue;
		if (t->attached && discover__process(t->proc.pid, &now) == 0 &&
		    strcmp(now.exe, t->proc.exe) == 0)
			continue;
		if (t->role == ROLE_WATCHER) {
			if (t->attached)
				detach_target(ts, t);
			continue;
		}
		if (t->attached) {
			fprintf(stderr,
				"bindtrace: %s pid %d exited; waiting for it to come back\n",
				process_role__name(t->role), t->proc.pid);
			detach_target(ts, t);
		}
		if (find_replacement(ts, t, &next))
			continue;
		t->proc = next;
		was_watcher = release_watcher(ts, next.pid);
		if (attach_target(ts, t) == 0) {
			fprintf(stderr, "bindtrace: %s pid %d restarted as pid %d: attached\n",
				process_role__name(t->role), old, t->proc.pid);
			t->failed_pid = 0;
		} else {
			/* It said why; the role stays gone rather than retrying every second. */
			fprintf(stderr, "bindtrace: %s pid %d: not attached; still waiting\n",
				process_role__name(t->role), t->proc.pid);
			t->failed_pid = t->proc.pid;
			detach_target(ts, t);
		}
		if (was_watcher && ts->on.taken_over)
			ts->on.taken_over(ts->on.ctx, t->proc.pid, t);
	}
}

/* Whether p runs the program of a role whose process exited and is awaited back: a restarted
 * kube-scheduler connects to the apiserver before the once-a-second restart check sees it, and
 * taken as a watcher first it was, in test-faults b under load, never taken for its role. */
/* Target i is a role (no watcher) whose process exited and is awaited back: detached, or
 * exited as its pidfd says while the restart check has not run yet (the new process can connect
 * first: test-faults b and c, taken as a watcher, its connections were marked as read by its own
 * probes, and as the scheduler it then read nothing). */
static bool role_awaited(const struct targets *ts, int i)
{
	const struct target *t = &ts->t[i];
	struct pollfd one = { .fd = ts->pidfd[i], .events = POLLIN };

	if (t->role == ROLE_WATCHER)
		return false;
	if (!t->attached)
		return true;
	return one.fd >= 0 && poll(&one, 1, 0) == 1 && (one.revents & POLLIN);
}

static bool awaited_restart(const struct targets *ts, const struct process_info *p)
{
	const char *base = strrchr(p->exe, '/') ? strrchr(p->exe, '/') + 1 : p->exe;
	int i;

	for (i = 0; i < ts->n; i++) {
		const char *name = process_role__name(ts->t[i].role);

		if (strncmp(base, name, strlen(name)) == 0 && role_awaited(ts, i))
			return true;
	}
	return false;
}

bool targets__awaiting(const struct targets *ts)
{
	int i;

	for (i = 0; i < ts->n; i++)
		if (role_awaited(ts, i))
			return true;
	return false;
}

int targets__attach_watcher(struct targets *ts, pid_t pid)
{
	struct target *t = NULL;
	int i, err;

	/* The slot of a watcher that exited is reused: kubectl comes and goes. */
	for (i = 0; i < ts->n && !t; i++)
		if (ts->t[i].role == ROLE_WATCHER && !ts->t[i].attached)
			t = &ts->t[i];
	if (!t && ts->n == TARGETS_MAX)
		return -ENOSPC;
	if (!t)
		t = &ts->t[ts->n];
	memset(t, 0, sizeof(*t));
	t->role = ROLE_WATCHER;
	err = discover__process(pid, &t->proc);
	if (err)
		return err;
	if (awaited_restart(ts, &t->proc))
		return -EAGAIN;
	util__libbpf_quiet(true);
	err = attach_target(ts, t);
	if (!err) {
		if (t == &ts->t[ts->n])
			ts->n++;
		fprintf(stderr, "# watcher %s pid %d (%s): its TLS probes attached\n", t->proc.comm,
			pid, t->go_version);
	} else {
		detach_target(ts, t);
	}
	util__libbpf_quiet(false);
	return err;
}

/* Searches of memory still running: stopped (each within a MiB's read) and joined. */
void targets__stop_searches(struct targets *ts)
{
	for (int i = 0; i < ts->n; i++)
		heap_search_cancel(ts, &ts->t[i]);
}

/* Every target's probes closed at once (see links__close_all): one at a time, exiting took
 * seconds. */
void targets__close(struct targets *ts)
{
	struct bpf_link **all = calloc((size_t)ts->n * (TLSPROBE_MAX_RETS + 5) + 1, sizeof(*all));
	int fds[TARGETS_MAX * (TLSPROBE_MAX_MULTI + 1)];
	size_t n_all = 0, n_fds = 0, n, k;
	int i;

	link_reaper__finish(&ts->reaper);
	targets__stop_searches(ts);
	for (i = 0; i < ts->n; i++) {
		struct target *t = &ts->t[i];
		struct bpf_link **links = target__take_links(t, &n, fds + n_fds, &k);

		pidfd_set(ts, t, -1);
		n_fds += k;
		for (k = 0; links && k < n; k++) {
			if (all && n_all < (size_t)ts->n * (TLSPROBE_MAX_RETS + 5))
				all[n_all++] = links[k];
			else
				bpf_link__destroy(links[k]);
		}
		free(links);
		go_binary__close(t->gb);
		t->gb = NULL;
	}
	/* The session's tracepoints with them: one grace period's wait instead of two. */
	if (ts->session)
		session__close_links(ts->session, all, n_all, fds, n_fds);
	else
		links__close_all(all, n_all, fds, n_fds);
	free(all);
}
