/* The default command: attach to kube-scheduler, kube-apiserver and etcd and print one timeline
 * per pod bind. This file is the plumbing: find and attach the processes, read the ring buffer,
 * feed each connection's bytes to its decoder and the decoded messages, fsyncs and bind calls to
 * the correlator, and hand finished binds to the outputs. */
#include <argp.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bind_metrics.h"
#include "capture.skel.h"
#include "commands.h"
#include "correlate.h"
#include "decode.h"
#include "discover.h"
#include "events.h"
#include "goelf.h"
#include "gorelease.h"
#include "metrics_http.h"
#include "sockdiag.h"
#include "streams.h"
#include "summary.h"
#include "timeline.h"
#include "tlsprobe.h"
#include "trace_outputs.h"
#include "util.h"

#define MAX_TARGETS_PER_ROLE 4
#define MAX_TRACED 32
#define MAX_CONNS 65536
#define POLL_MS 10 /* the ring buffer is read at least this often */

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

/* Closing a uprobe takes the kernel about 0.1 s (it waits for a grace period): an exited
 * process's probes are closed by this thread, so that a kubectl coming and going does not stall
 * the ring buffer for a second. */
struct reap_job {
	struct bpf_link **links;
	size_t n;
	struct reap_job *next;
};

struct link_reaper {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct reap_job *head;
	pthread_t thread;
	bool started, done;
};

struct trace_state {
	struct trace_options opt;
	struct link_reaper reaper;
	struct capture_bpf *skel;
	struct target targets[MAX_TRACED];
	int n_targets;
	pid_t watcher_tried[64]; /* peers already looked at (attached or not a Go TLS program) */
	int n_watcher_tried;
	struct streams streams; /* per (pid, conn, dir): gap tracking */
	struct streams conns;	/* per (pid, conn): the decoder (dir 0 slot) */
	struct correlator *corr;
	struct summary *summary;
	struct trace_outputs *outputs;
	struct bind_metrics *metrics;	       /* --metrics */
	struct metrics_server *metrics_server; /* --metrics */
	int64_t wall_offset_ns;
	uint64_t binds_printed;
	uint64_t drops_seen;
	uint64_t events;
	bool conn_table_full;
	uint64_t conns_closed; /* decoders freed after their socket closed */
	char fd_cache_path[64][256];
	int fd_cache_key[64][2];
};

static volatile sig_atomic_t stopping, reopen_requested;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reopen_requested = 1;
	else
		stopping = 1;
}

enum {
	OPT_CHECK = 0x100,
	OPT_ETCD_PID,
	OPT_APISERVER_PID,
	OPT_SCHEDULER_PID,
	OPT_RINGBUF,
	OPT_SUMMARY,
	OPT_PERFETTO,
	OPT_EVIDENCE,
	OPT_REPORT,
	OPT_POD,
	OPT_NAMESPACE,
	OPT_COUNT,
	OPT_LINGER,
	OPT_NO_WATCHERS,
	OPT_METRICS,
};

static const struct argp_option trace_argp_options[] = {
	{ NULL, 0, NULL, 0, "Processes (default: found by executable name):", 1 },
	{ "scheduler-pid", OPT_SCHEDULER_PID, "PID", 0, "The kube-scheduler to trace", 1 },
	{ "apiserver-pid", OPT_APISERVER_PID, "PID", 0, "The kube-apiserver to trace", 1 },
	{ "etcd-pid", OPT_ETCD_PID, "PID", 0, "The etcd to trace", 1 },
	{ "no-watchers", OPT_NO_WATCHERS, NULL, 0,
	  "Do not trace the apiserver's clients on this host (kubectl -w...) to see watch events "
	  "arrive",
	  1 },
	{ NULL, 0, NULL, 0, "Output:", 2 },
	{ "json", 'j', NULL, 0, "One JSON object per bind (schema in the README)", 2 },
	{ "summary", OPT_SUMMARY, NULL, 0,
	  "Only the per-leg percentile summary (always printed on exit)", 2 },
	{ "perfetto", OPT_PERFETTO, "FILE", 0,
	  "Also write a Chrome trace-event JSON for ui.perfetto.dev", 2 },
	{ "evidence", OPT_EVIDENCE, "DIR", 0,
	  "Also write, per bind, the decoded frames, kernel events and binary identities", 2 },
	{ "report", OPT_REPORT, "FILE", 0,
	  "Write a Markdown report (and FILE.svg waterfall) of the bind given by --pod", 2 },
	{ "metrics", OPT_METRICS, "ADDR", 0,
	  "Serve Prometheus metrics and /healthz on ADDR (127.0.0.1:9464, [::1]:9464, :9464)", 2 },
	{ "quiet", 'q', NULL, 0, "No per-bind output (with --metrics or output files)", 2 },
	{ NULL, 0, NULL, 0, "Filters and lifetime:", 3 },
	{ "pod", OPT_POD, "[NS/]NAME", 0, "Only this pod (namespace default: \"default\")", 3 },
	{ "namespace", OPT_NAMESPACE, "NS", 0, "Only pods of this namespace", 3 },
	{ "count", OPT_COUNT, "N", 0, "Exit after N binds", 3 },
	{ "duration", 'd', "SECONDS", 0, "Exit after SECONDS", 3 },
	{ NULL, 0, NULL, 0, "Tuning:", 4 },
	{ "ringbuf-size", OPT_RINGBUF, "BYTES", 0,
	  "Ring buffer size, a power of two >= 4096 (default 4194304)", 4 },
	{ "linger", OPT_LINGER, "MS", 0,
	  "Wait this long after a bind's response for its watch events (default 500)", 4 },
	{ NULL, 0, NULL, 0, "Other:", 5 },
	{ "check", OPT_CHECK, NULL, 0, "Check kernel features and privileges, then exit", 5 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's messages and attach details", 5 },
	{},
};

static const char trace_doc[] =
    "Trace every Kubernetes pod bind on this control-plane node: the scheduler's POST "
    "pods/NAME/binding, the apiserver's etcd Txn, etcd's WAL fsync and answer, and the watch "
    "events to every watcher, with kernel timestamps.\v"
    "COMMANDS:\n"
    "  bindtrace [OPTIONS]          trace binds (this page)\n"
    "  bindtrace check              same as --check\n"
    "  bindtrace capture -p PID     raw TLS/TCP plaintext of processes\n"
    "  bindtrace inspect BINARY     what bindtrace finds in a Go binary\n"
    "  bindtrace decode FILE        decode a capture recorded with `capture --json`\n"
    "\n"
    "EXAMPLES:\n"
    "  sudo bindtrace --check                    # can this machine run bindtrace?\n"
    "  sudo bindtrace                            # every bind until Ctrl-C, then a summary\n"
    "  sudo bindtrace --json > binds.jsonl       # one JSON object per bind\n"
    "  sudo bindtrace --pod default/web-0 --count 1 --report web-0.md\n"
    "  sudo bindtrace --summary -d 60            # percentiles of a minute of binds\n"
    "  sudo bindtrace --perfetto binds.json --evidence ./evidence\n"
    "  sudo bindtrace --quiet --metrics 127.0.0.1:9464   # an agent: Prometheus scrapes it\n"
    "  sudo bindtrace --scheduler-pid 812 --apiserver-pid 640 --etcd-pid 590\n";

static error_t parse_trace_opt(int key, char *arg, struct argp_state *state)
{
	struct trace_options *opt = state->input;
	unsigned long v;
	const char *slash;

	switch (key) {
	case OPT_CHECK:
		opt->check = true;
		break;
	case OPT_SCHEDULER_PID:
	case OPT_APISERVER_PID:
	case OPT_ETCD_PID:
		if (util__parse_ulong(arg, 1, 0x7fffffff, &v))
			argp_error(state, "invalid pid '%s'", arg);
		if (key == OPT_SCHEDULER_PID)
			opt->scheduler_pid = (pid_t)v;
		else if (key == OPT_APISERVER_PID)
			opt->apiserver_pid = (pid_t)v;
		else
			opt->etcd_pid = (pid_t)v;
		break;
	case 'j':
		opt->json = true;
		break;
	case OPT_SUMMARY:
		opt->summary_only = true;
		break;
	case OPT_PERFETTO:
		opt->perfetto = arg;
		break;
	case OPT_EVIDENCE:
		opt->evidence = arg;
		break;
	case OPT_REPORT:
		opt->report = arg;
		break;
	case OPT_METRICS:
		opt->metrics = arg;
		break;
	case 'q':
		opt->quiet = true;
		break;
	case OPT_POD:
		slash = strchr(arg, '/');
		if (slash) {
			if (slash == arg || !slash[1] || strchr(slash + 1, '/') ||
			    (size_t)(slash - arg) >= sizeof(opt->pod_ns))
				argp_error(state, "invalid --pod '%s' (NS/NAME)", arg);
			memcpy(opt->pod_ns, arg, (size_t)(slash - arg));
			opt->pod_ns[slash - arg] = '\0';
			util__copy(opt->pod_name, sizeof(opt->pod_name), slash + 1);
		} else {
			if (!*arg)
				argp_error(state, "invalid --pod ''");
			util__copy(opt->pod_ns, sizeof(opt->pod_ns), "default");
			util__copy(opt->pod_name, sizeof(opt->pod_name), arg);
		}
		break;
	case OPT_NAMESPACE:
		if (!*arg)
			argp_error(state, "invalid --namespace ''");
		util__copy(opt->namespace_, sizeof(opt->namespace_), arg);
		break;
	case OPT_COUNT:
		if (util__parse_ulong(arg, 1, 1ul << 40, &opt->count))
			argp_error(state, "invalid --count '%s' (1 or more)", arg);
		break;
	case 'd':
		if (util__parse_ulong(arg, 1, 86400 * 365, &opt->duration_s))
			argp_error(state, "invalid duration '%s' (seconds, 1 or more)", arg);
		break;
	case OPT_RINGBUF:
		if (util__parse_ulong(arg, 4096, 1ul << 30, &v) || (v & (v - 1)))
			argp_error(state, "invalid ring buffer size '%s' (power of two, 4096..1G)",
				   arg);
		opt->ringbuf_bytes = v;
		break;
	case OPT_NO_WATCHERS:
		opt->watchers = false;
		break;
	case OPT_LINGER:
		if (util__parse_ulong(arg, 0, 600000, &opt->linger_ms))
			argp_error(state, "invalid --linger '%s' (milliseconds)", arg);
		break;
	case 'v':
		verbose = true;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (opt->report && !opt->pod_name[0])
			argp_error(state, "--report needs --pod NS/NAME");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

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
	__u32 pid = (__u32)t->proc.pid;
	__u8 one = 1;
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

	err = bpf_map__update_elem(st->skel->maps.targets, &pid, sizeof(pid), &one, sizeof(one),
				   BPF_ANY);
	if (!err && t->role == ROLE_ETCD)
		err = bpf_map__update_elem(st->skel->maps.fsync_targets, &pid, sizeof(pid), &one,
					   sizeof(one), BPF_ANY);
	if (err) {
		fprintf(stderr, "bindtrace: %s pid %d: BPF map update: %s\n", role_exe[t->role],
			t->proc.pid, strerror(-err));
		return err;
	}
	err = tls_attachment__attach_opened(&t->tls, st->skel, t->proc.pid, path, t->gb, why,
					    sizeof(why));
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
			    st->skel->progs.go_call, t->proc.pid, path, (size_t)off, &uo);
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

static void *reaper__run(void *arg)
{
	struct link_reaper *r = arg;
	struct reap_job *job;
	size_t i;

	for (;;) {
		pthread_mutex_lock(&r->lock);
		while (!r->head && !r->done)
			pthread_cond_wait(&r->cond, &r->lock);
		job = r->head;
		if (job)
			r->head = job->next;
		pthread_mutex_unlock(&r->lock);
		if (!job)
			return NULL;
		for (i = 0; i < job->n; i++)
			bpf_link__destroy(job->links[i]);
		free(job->links);
		free(job);
	}
}

/* Takes the links (an array of n from malloc) to close them in the background, or closes them
 * here when no thread can be had. */
static void reaper__add(struct link_reaper *r, struct bpf_link **links, size_t n)
{
	struct reap_job *job = calloc(1, sizeof(*job));
	size_t i;

	pthread_mutex_lock(&r->lock);
	if (job && !r->started && !r->done)
		r->started = pthread_create(&r->thread, NULL, reaper__run, r) == 0;
	if (job && r->started) {
		job->links = links;
		job->n = n;
		job->next = r->head;
		r->head = job;
		pthread_cond_signal(&r->cond);
		links = NULL;
	}
	pthread_mutex_unlock(&r->lock);
	if (links) {
		for (i = 0; i < n; i++)
			bpf_link__destroy(links[i]);
		free(links);
		free(job);
	}
}

/* Waits until every handed link is closed. */
static void reaper__finish(struct link_reaper *r)
{
	pthread_mutex_lock(&r->lock);
	r->done = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	if (r->started)
		pthread_join(r->thread, NULL);
	r->started = false;
}

/* Probes of a process that is still running are closed at once: new ones may follow on it. Those
 * of one that exited can see nothing more and go to the reaper. */
static void detach_target(struct trace_state *st, struct target *t)
{
	__u32 pid = (__u32)t->proc.pid;
	struct process_info now;
	struct bpf_link **links;

	if ((t->tls.n_links || t->call_link) && discover__process(t->proc.pid, &now) == -ESRCH &&
	    (links = realloc(t->tls.links, (t->tls.n_links + 1) * sizeof(*links)))) {
		size_t n = t->tls.n_links;

		if (t->call_link)
			links[n++] = t->call_link;
		reaper__add(&st->reaper, links, n);
		t->tls.links = NULL;
		t->tls.n_links = 0;
		t->call_link = NULL;
	}
	bpf_link__destroy(t->call_link);
	t->call_link = NULL;
	tls_attachment__detach(&t->tls);
	go_binary__close(t->gb);
	t->gb = NULL;
	bpf_map__delete_elem(st->skel->maps.targets, &pid, sizeof(pid), 0);
	bpf_map__delete_elem(st->skel->maps.fsync_targets, &pid, sizeof(pid), 0);
	t->attached = false;
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

/* The socket inodes open in pid, sorted (n = 0 when it is gone). */
static uint64_t *open_sockets(pid_t pid, size_t *n)
{
	char path[64], link[64];
	uint64_t *inos = NULL, ino;
	size_t cap = 0;
	struct dirent *de;
	DIR *d;

	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		char fdpath[64 + sizeof(de->d_name)];
		ssize_t len;

		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, de->d_name);
		len = readlink(fdpath, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		if (sscanf(link, "socket:[%llu]", (unsigned long long *)&ino) != 1)
			continue;
		if (*n == cap) {
			uint64_t *more = realloc(inos, (cap ? cap * 2 : 256) * sizeof(*inos));
			if (!more)
				break;
			inos = more;
			cap = cap ? cap * 2 : 256;
		}
		inos[(*n)++] = ino;
	}
	closedir(d);
	if (*n)
		qsort(inos, *n, sizeof(*inos), cmp_u64);
	return inos;
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
		uint64_t *open = open_sockets(pid, &n_open);

		for (j = i; j < n_idle; j++) {
			struct stream *cs, *s;
			struct conn_ctx *cc;

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
			for (int dir = 0; dir < 2; dir++) {
				s = streams__find(&st->streams, (uint32_t)pid, idle[j].conn,
						  (uint8_t)dir);
				if (s)
					streams__del(&st->streams, s);
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

static const char *fd_path(struct trace_state *st, pid_t pid, int fd)
{
	int slot = (int)(((unsigned)pid * 31u + (unsigned)fd) % 64);
	char link[64];
	ssize_t n;

	if (st->fd_cache_key[slot][0] == pid && st->fd_cache_key[slot][1] == fd)
		return st->fd_cache_path[slot];
	snprintf(link, sizeof(link), "/proc/%d/fd/%d", pid, fd);
	n = readlink(link, st->fd_cache_path[slot], sizeof(st->fd_cache_path[slot]) - 1);
	if (n < 0)
		n = 0;
	st->fd_cache_path[slot][n] = '\0';
	st->fd_cache_key[slot][0] = pid;
	st->fd_cache_key[slot][1] = fd;
	return st->fd_cache_path[slot];
}

/* Whether local port `port` of pid's network namespace is a listening TCP port: then a
 * connection on it was accepted, and its client is the remote end. The table is re-read at most
 * once a second, when a port is not in it. */
static struct listen_cache {
	pid_t pid;
	uint64_t read_ns;
	uint16_t ports[512];
	int n;
} listen_cache[3 * MAX_TARGETS_PER_ROLE];

static void read_listening(struct listen_cache *lc, pid_t pid)
{
	static const char *const files[] = { "tcp", "tcp6" };
	char path[64], line[512];
	unsigned int port, state;
	size_t f;
	FILE *in;

	lc->n = 0;
	lc->pid = pid;
	lc->read_ns = util__monotonic_ns();
	/* In our network namespace the kernel lists just the listening sockets; reading
	 * /proc/PID/net/tcp walks every socket (thousands in TIME_WAIT on a busy node). */
	if (sockdiag__same_netns(pid)) {
		int n = sockdiag__listening_ports(lc->ports, 512);

		if (n >= 0) {
			lc->n = n;
			return;
		}
	}
	for (f = 0; f < 2; f++) {
		snprintf(path, sizeof(path), "/proc/%d/net/%s", pid, files[f]);
		in = fopen(path, "r");
		if (!in)
			continue;
		while (fgets(line, sizeof(line), in) && lc->n < 512) {
			/* "  0: 0100007F:5CE6 00000000:0000 0A ..." */
			if (sscanf(line, " %*d: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x", &port,
				   &state) != 2)
				continue;
			if (state == 0x0A)
				lc->ports[lc->n++] = (uint16_t)port;
		}
		fclose(in);
	}
}

static bool is_listening(pid_t pid, uint16_t port)
{
	struct listen_cache *lc = NULL;
	size_t i;
	int k;

	for (i = 0; i < sizeof(listen_cache) / sizeof(listen_cache[0]); i++) {
		if (listen_cache[i].pid == pid || !listen_cache[i].pid) {
			lc = &listen_cache[i];
			break;
		}
	}
	/* Full (watchers come and go, targets restart): the table read longest ago is reused,
	 * rather than every new process's connections being taken for outgoing ones. */
	if (!lc) {
		lc = &listen_cache[0];
		for (i = 1; i < sizeof(listen_cache) / sizeof(listen_cache[0]); i++)
			if (listen_cache[i].read_ns < lc->read_ns)
				lc = &listen_cache[i];
	}
	for (int pass = 0; pass < 2; pass++) {
		if (lc->pid != pid || (pass && util__monotonic_ns() - lc->read_ns > 1000000000ull))
			read_listening(lc, pid);
		for (k = 0; k < lc->n; k++)
			if (lc->ports[k] == port)
				return true;
	}
	return false;
}

/* An address as /proc/net/tcp{,6} print it: each 4-byte word of the network-order address as
 * the host reads it, in hex, then ":PORT". */
static void proc_net_addr(char *buf, size_t len, int alen, const __u8 *addr, __u16 port)
{
	size_t k = 0;

	for (int i = 0; i < alen; i += 4) {
		__u32 w;

		memcpy(&w, addr + i, 4);
		k += (size_t)snprintf(buf + k, len - k, "%08X", w);
	}
	snprintf(buf + k, len - k, ":%04X", port);
}

/* The inverse of proc_net_addr for the address part: 4 or 16 bytes into out; 0 if malformed. */
static int parse_proc_net_addr(const char *hex, __u8 *out)
{
	size_t n = strlen(hex);

	if (n != 8 && n != 32)
		return 0;
	for (size_t i = 0; i < n; i += 8) {
		char word[9];
		__u32 w;

		memcpy(word, hex + i, 8);
		word[8] = '\0';
		w = (__u32)strtoul(word, NULL, 16);
		memcpy(out + i / 2, &w, 4);
	}
	return (int)n / 2;
}

/* The inode of pid's socket local -> remote, from /proc/PID/net/tcp (AF_INET) or tcp6
 * (AF_INET6): 0 if none. */
static unsigned long proc_tcp_inode(pid_t pid, int family, const __u8 *local_addr, __u16 local_port,
				    const __u8 *remote_addr, __u16 remote_port)
{
	char path[64], line[512], want_local[48], want_remote[48], local[64], remote[64];
	int alen = family == AF_INET6 ? 16 : 4;
	unsigned long inode = 0, ino;
	FILE *in;

	proc_net_addr(want_local, sizeof(want_local), alen, local_addr, local_port);
	proc_net_addr(want_remote, sizeof(want_remote), alen, remote_addr, remote_port);
	snprintf(path, sizeof(path), "/proc/%d/net/%s", pid, family == AF_INET6 ? "tcp6" : "tcp");
	in = fopen(path, "r");
	if (!in)
		return 0;
	while (fgets(line, sizeof(line), in)) {
		if (sscanf(line, " %*d: %63s %63s %*x %*s %*s %*s %*u %*u %lu", local, remote,
			   &ino) != 3)
			continue;
		if (strcasecmp(local, want_local) == 0 && strcasecmp(remote, want_remote) == 0) {
			inode = ino;
			break;
		}
	}
	fclose(in);
	return inode;
}

/* The inode of the socket laddr:lport -> raddr:rport of pid's network namespace: asked of the
 * kernel when that is ours, else read from /proc/PID/net. An IPv4-mapped IPv6 connection (a
 * client that reached a dual-stack listener over IPv4) has its other end in the IPv4 table. */
static unsigned long socket_inode(pid_t pid, int family, const __u8 *laddr, __u16 lport,
				  const __u8 *raddr, __u16 rport)
{
	static const __u8 v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	unsigned long inode = 0;

	if (sockdiag__same_netns(pid))
		inode = sockdiag__inode(family, laddr, lport, raddr, rport);
	if (!inode)
		inode = proc_tcp_inode(pid, family, laddr, lport, raddr, rport);
	if (!inode && family == AF_INET6 && memcmp(laddr, v4mapped, 12) == 0 &&
	    memcmp(raddr, v4mapped, 12) == 0)
		inode = socket_inode(pid, AF_INET, laddr + 12, lport, raddr + 12, rport);
	return inode;
}

/* The local process at the other end of a TCP connection of pid: the socket whose local and
 * remote addresses are ours swapped (asked of the kernel by its 4-tuple, or found in
 * /proc/PID/net/tcp{,6} when pid is in another network namespace), then its owner among /proc's
 * file descriptors. IPv4 and IPv6; 0 when the peer is elsewhere. */
static void resolve_peer(pid_t pid, __u16 family, const __u8 *laddr, __u16 lport, const __u8 *raddr,
			 __u16 rport, struct actor *who)
{
	char path[300], line[512], link[600], target[64];
	unsigned long inode = 0;
	struct dirent *de, *fe;
	DIR *proc, *fds;

	if (family != AF_INET && family != AF_INET6)
		return;
	inode = socket_inode(pid, family, raddr, rport, laddr, lport);
	if (!inode)
		return;
	snprintf(target, sizeof(target), "socket:[%lu]", inode);
	proc = opendir("/proc");
	if (!proc)
		return;
	while (!who->peer_pid && (de = readdir(proc))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", de->d_name);
		fds = opendir(path);
		if (!fds)
			continue;
		while ((fe = readdir(fds))) {
			ssize_t n;

			if (fe->d_name[0] == '.')
				continue;
			snprintf(link, sizeof(link), "/proc/%s/fd/%s", de->d_name, fe->d_name);
			n = readlink(link, line, sizeof(line) - 1);
			if (n <= 0)
				continue;
			line[n] = '\0';
			if (strcmp(line, target) == 0) {
				struct process_info info;

				who->peer_pid = (pid_t)strtol(de->d_name, NULL, 10);
				if (discover__process(who->peer_pid, &info) == 0)
					util__copy(who->peer_comm, sizeof(who->peer_comm),
						   info.comm);
				break;
			}
		}
		closedir(fds);
	}
	closedir(proc);
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

/* At start: the watchers already connected to the apiserver, so that the first watch events
 * after attaching are seen arriving too. Established connections (IPv4 and IPv6) on a listening
 * port. */
static void trace_connected_watchers(struct trace_state *st, struct target *api)
{
	static const char *const tables[] = { "tcp", "tcp6" };
	char path[64], line[512], link[128], lhex[40], rhex[40];
	unsigned int lport, rport, state;
	unsigned long ino, *inodes = NULL;
	size_t n_inodes = 0, cap = 0, k, f;
	struct dirent *de;
	DIR *fds;
	FILE *in;

	/* The apiserver's own sockets: the netns's table lists every process's. */
	snprintf(path, sizeof(path), "/proc/%d/fd", api->proc.pid);
	fds = opendir(path);
	if (!fds)
		return;
	while ((de = readdir(fds))) {
		ssize_t n;

		snprintf(link, sizeof(link), "%s/%.20s", path, de->d_name);
		n = readlink(link, line, sizeof(line) - 1);
		if (n <= 0)
			continue;
		line[n] = '\0';
		if (sscanf(line, "socket:[%lu]", &ino) != 1)
			continue;
		if (n_inodes == cap) {
			unsigned long *more =
			    realloc(inodes, (cap ? cap * 2 : 256) * sizeof(*more));

			if (!more)
				break;
			inodes = more;
			cap = cap ? cap * 2 : 256;
		}
		inodes[n_inodes++] = ino;
	}
	closedir(fds);
	for (f = 0; f < sizeof(tables) / sizeof(tables[0]); f++) {
		snprintf(path, sizeof(path), "/proc/%d/net/%s", api->proc.pid, tables[f]);
		in = fopen(path, "r");
		while (in && fgets(line, sizeof(line), in)) {
			struct actor who = { 0 };
			__u8 la[16], ra[16];
			bool own = false;
			int alen;

			if (sscanf(
				line,
				" %*d: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x %*s %*s %*s %*u %*u %lu",
				lhex, &lport, rhex, &rport, &state, &ino) != 6 ||
			    state != 0x01 || !is_listening(api->proc.pid, (uint16_t)lport))
				continue;
			for (k = 0; k < n_inodes && !own; k++)
				own = inodes[k] == ino;
			alen = parse_proc_net_addr(lhex, la);
			if (!own || !alen || parse_proc_net_addr(rhex, ra) != alen)
				continue;
			resolve_peer(api->proc.pid, alen == 4 ? AF_INET : AF_INET6, la,
				     (__u16)lport, ra, (__u16)rport, &who);
			if (who.peer_pid && who.peer_pid != api->proc.pid)
				maybe_trace_watcher(st, who.peer_pid);
		}
		if (in)
			fclose(in);
	}
	free(inodes);
}

static void on_decoded(const struct decoded_msg *msg, void *ctx)
{
	struct conn_ctx *cc = ctx;

	trace_outputs__message(cc->st->outputs, &cc->who, msg);
	correlator__message(cc->st->corr, &cc->who, msg);
}

static void on_data(struct trace_state *st, const struct data_event *e)
{
	struct target *t = target_of(st, (pid_t)e->hdr.pid);
	struct stream *s, *cs;
	struct conn_ctx *cc;
	uint64_t missed;

	if (!t)
		return;
	cs = streams__get(&st->conns, e->hdr.pid, e->conn, 0);
	s = streams__get(&st->streams, e->hdr.pid, e->conn, e->dir);
	if (!cs || !s) {
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
		util__format_addr(cc->who.laddr, sizeof(cc->who.laddr), e->family, e->laddr,
				  e->lport);
		util__format_addr(cc->who.raddr, sizeof(cc->who.raddr), e->family, e->raddr,
				  e->rport);
		/* The apiserver's clients on this host, named: the watchers of a bind. */
		if (t->role == ROLE_APISERVER && is_listening(t->proc.pid, e->lport)) {
			resolve_peer(t->proc.pid, e->family, e->laddr, e->lport, e->raddr, e->rport,
				     &cc->who);
			maybe_trace_watcher(st, cc->who.peer_pid);
		}
		if (verbose)
			fprintf(stderr, "bindtrace: %s pid %d: connection %s -> %s%s%s (pid %d)\n",
				role_exe[t->role], t->proc.pid, cc->who.laddr, cc->who.raddr,
				cc->who.peer_comm[0] ? ", peer " : "", cc->who.peer_comm,
				cc->who.peer_pid);
		cc->dec = conn_decoder__new(on_decoded, cc);
		if (!cc->dec) {
			free(cc);
			return;
		}
		/* Which end is the client: an accepted connection's is the remote. */
		conn_decoder__set_client_dir(
		    cc->dec, is_listening(t->proc.pid, e->lport) ? CONN_DIR_IN : CONN_DIR_OUT);
		cs->user = cc;
	}
	missed = stream__advance(s, e->offset, e->len);
	if (missed) {
		bind_metrics__gap(st->metrics, t->role, missed);
		conn_decoder__gap(cc->dec, e->dir, missed);
		correlator__loss(st->corr, t->proc.pid, e->conn, e->hdr.ts_ns);
	}
	trace_outputs__data(st->outputs, &cc->who, e);
	cc->last_ns = e->hdr.ts_ns;
	conn_decoder__feed(cc->dec, e->dir, e->offset, e->data, e->len, e->hdr.ts_ns);
}

static void on_fsync(struct trace_state *st, const struct fsync_event *e)
{
	struct target *t = target_of(st, (pid_t)e->hdr.pid);
	struct actor who = { .pid = (pid_t)e->hdr.pid, .role = ROLE_ETCD };
	const char *path;
	bool wal;

	if (!t)
		return;
	util__copy(who.comm, sizeof(who.comm), t->proc.comm);
	path = fd_path(st, (pid_t)e->hdr.pid, e->fd);
	wal = strstr(path, "/member/wal/") != NULL;
	trace_outputs__fsync(st->outputs, &who, e, path);
	correlator__fsync(st->corr, &who, e->start_ns, e->hdr.ts_ns, wal, e->ret);
}

static void on_call(struct trace_state *st, const struct call_event *e)
{
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

static int on_event(void *ctx, void *data, size_t size)
{
	struct trace_state *st = ctx;
	const struct event_header *hdr = data;

	if (size < sizeof(*hdr))
		return 0;
	st->events++;
	switch (hdr->type) {
	case EVENT_DATA: {
		const struct data_event *e = data;

		if (size >= sizeof(*e) && e->len <= size - sizeof(*e))
			on_data(st, e);
		break;
	}
	case EVENT_FSYNC:
		if (size >= sizeof(struct fsync_event))
			on_fsync(st, data);
		break;
	case EVENT_CALL:
		if (size >= sizeof(struct call_event))
			on_call(st, data);
		break;
	}
	return 0;
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
		stopping = 1;
}

static uint64_t read_drops(struct capture_bpf *skel)
{
	uint64_t counters[COUNTER_MAX];

	capture_counters__read(skel, counters);
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
	capture_counters__read(st->skel, counters);
	bind_metrics__bpf_counters(st->metrics, counters[COUNTER_RINGBUF_DROPS],
				   counters[COUNTER_TRUNCATED]);
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
	static const struct argp argp = {
		trace_argp_options, parse_trace_opt, NULL, trace_doc, NULL, NULL, NULL
	};
	struct trace_state *st;
	struct ring_buffer *ring = NULL;
	struct bpf_link *tp_links[16] = {};
	struct correlator_options copt = {};
	struct correlator_stats cstats;
	struct bpf_program *prog;
	const char *tracefs;
	bool mounted;
	uint64_t start, deadline = 0, next_tick = 0, next_restart_check = 0, next_sweep = 0;
	uint64_t drops_read_ns = 0; /* when the drop counter was last read (0: never) */
	int err = 0, i, n_tp = 0, found = 0;
	int rc = 1;

	st = calloc(1, sizeof(*st));
	if (!st) {
		fprintf(stderr, "bindtrace: out of memory\n");
		return 1;
	}
	pthread_mutex_init(&st->reaper.lock, NULL);
	pthread_cond_init(&st->reaper.cond, NULL);
	st->opt.ringbuf_bytes = 4 * 1024 * 1024;
	st->opt.linger_ms = 500;
	st->opt.watchers = true;
	argp_parse(&argp, argc, argv, 0, NULL, &st->opt);
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
	err = util__ensure_tracefs(&tracefs, &mounted);
	if (err) {
		fprintf(stderr, "bindtrace: tracefs: %s (run as root; see bindtrace --check)\n",
			strerror(-err));
		goto cleanup;
	}
	if (streams__init(&st->streams, MAX_CONNS * 2) || streams__init(&st->conns, MAX_CONNS)) {
		fprintf(stderr, "bindtrace: out of memory\n");
		goto cleanup;
	}
	st->skel = capture_bpf__open();
	if (!st->skel) {
		fprintf(stderr, "bindtrace: open BPF object: %s\n", strerror(errno));
		goto cleanup;
	}
	bpf_map__set_max_entries(st->skel->maps.events, (__u32)st->opt.ringbuf_bytes);
	/* Woken when an eighth of the ring is waiting; otherwise read every POLL_MS. */
	st->skel->rodata->wake_bytes = st->opt.ringbuf_bytes / 8;
	err = capture_bpf__load(st->skel);
	if (err) {
		fprintf(stderr, "bindtrace: load BPF programs: %s (see bindtrace --check)\n",
			strerror(-err));
		goto cleanup;
	}
	/* The syscall tracepoints (etcd's fsyncs among them) before any target: they see only the
	 * pids put in the targets maps, and a bind met once its scheduler is probed must find its
	 * WAL fsync probed too. Attached after the targets, binds of the first moments lacked it
	 * ("not observed") although their request was seen. */
	bpf_object__for_each_program (prog, st->skel->obj) {
		const char *sec = bpf_program__section_name(prog);

		if (strncmp(sec, "tracepoint/", 11) != 0)
			continue;
		tp_links[n_tp] = bpf_program__attach(prog);
		if (!tp_links[n_tp]) {
			fprintf(stderr, "bindtrace: attach %s: %s\n", sec, strerror(errno));
			goto cleanup;
		}
		n_tp++;
	}
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
	ring = ring_buffer__new(bpf_map__fd(st->skel->maps.events), on_event, st, NULL);
	if (!ring) {
		fprintf(stderr, "bindtrace: ring buffer: %s\n", strerror(errno));
		goto cleanup;
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

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if (st->opt.duration_s)
		deadline = util__monotonic_ns() + st->opt.duration_s * 1000000000ull;
	while (!stopping) {
		uint64_t now;

		err = ring_buffer__poll(ring, POLL_MS);
		if (err >= 0)
			err = ring_buffer__consume(ring); /* what came without a wakeup */
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "bindtrace: ring buffer: %s\n", strerror(-err));
			goto cleanup;
		}
		now = util__monotonic_ns();
		if (now >= next_tick) {
			uint64_t drops = read_drops(st->skel);

			if (drops != st->drops_seen) {
				correlator__drops(st->corr, drops_read_ns, now);
				st->drops_seen = drops;
			}
			drops_read_ns = now;
			correlator__tick(st->corr, now, false);
			next_tick = now + 50000000ull;
		}
		if (now >= next_restart_check) {
			check_restarts(st);
			publish_metrics(st);
			next_restart_check = now + 1000000000ull;
		}
		metrics_server__heartbeat(st->metrics_server, now);
		if (reopen_requested) {
			reopen_requested = 0;
			if (trace_outputs__reopen(st->outputs) == 0 && verbose)
				fprintf(stderr, "bindtrace: SIGHUP: output files reopened\n");
		}
		if (now >= next_sweep) {
			sweep_closed(st, now);
			next_sweep = now + 5000000000ull;
		}
		if (deadline && now >= deadline)
			break;
	}
	ring_buffer__consume(ring);
	correlator__tick(st->corr, util__monotonic_ns(), true);
	correlator__stats(st->corr, &cstats);
	summary__print(st->opt.json ? stderr : stdout, st->summary);
	fprintf(stderr,
		"bindtrace: %llu events, %llu ring buffer drops, %llu binds seen (%llu complete, "
		"%llu unschedulable)%s\n",
		(unsigned long long)st->events, (unsigned long long)read_drops(st->skel),
		(unsigned long long)cstats.binds, (unsigned long long)cstats.complete,
		(unsigned long long)cstats.unschedulable,
		st->conn_table_full ? "; connection table full: some traffic not decoded" : "");
	if (verbose)
		fprintf(stderr, "bindtrace: %llu connections closed and their decoders freed\n",
			(unsigned long long)st->conns_closed);
	rc = trace_outputs__finish(st->outputs) ? 1 : 0;
cleanup:
	metrics_server__stop(st->metrics_server);
	bind_metrics__free(st->metrics);
	reaper__finish(&st->reaper);
	ring_buffer__free(ring);
	for (i = 0; i < n_tp; i++)
		bpf_link__destroy(tp_links[i]);
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
	capture_bpf__destroy(st->skel);
	streams__free(&st->streams);
	streams__free(&st->conns);
	free(st);
	return rc;
}
