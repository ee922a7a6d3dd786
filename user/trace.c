/* The default command: attach to the control plane and report what happens on the bind path.
 * Today it traces etcd's WAL fsyncs (the commit point of every bind) through syscall
 * tracepoints; the TLS capture and the per-bind correlation build on the same loop. */
#include <argp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "commands.h"
#include "discover.h"
#include "events.h"
#include "fsync.skel.h"
#include "util.h"

#define MAX_PER_ROLE 8

struct trace_options {
	bool check;
	bool json;
	unsigned long duration_s;
	unsigned long ringbuf_bytes;
	pid_t etcd_pids[MAX_PER_ROLE];
	int n_etcd_pids;
};

struct trace_state {
	const struct trace_options *opt;
	int64_t wall_offset_ns;
	unsigned long long events;
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

enum {
	OPT_CHECK = 0x100,
	OPT_ETCD_PID,
	OPT_APISERVER_PID,
	OPT_SCHEDULER_PID,
	OPT_RINGBUF,
};

static const struct argp_option trace_argp_options[] = {
	{ "check", OPT_CHECK, NULL, 0, "Check kernel features and privileges, then exit", 0 },
	{ "etcd-pid", OPT_ETCD_PID, "PID", 0, "etcd process to trace (default: every 'etcd')", 0 },
	{ "json", 'j', NULL, 0, "One JSON object per line instead of text", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after SECONDS (default: until Ctrl-C)", 0 },
	{ "ringbuf-size", OPT_RINGBUF, "BYTES", 0,
	  "Ring buffer size, a power of two >= 4096 (default 262144)", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's messages", 0 },
	{},
};

static const char trace_doc[] =
    "Trace Kubernetes pod binds on a control-plane node, from the scheduler's POST to the etcd "
    "commit.\v"
    "COMMANDS:\n"
    "  bindtrace [OPTIONS]          trace binds (this page)\n"
    "  bindtrace check              same as --check\n"
    "  bindtrace capture -p PID     raw TLS/TCP plaintext of a process\n"
    "  bindtrace inspect BINARY     what bindtrace finds in a Go binary\n"
    "  bindtrace decode FILE        decode a recorded capture\n"
    "\n"
    "EXAMPLES:\n"
    "  sudo bindtrace --check             # can this machine run bindtrace?\n"
    "  sudo bindtrace                     # trace every etcd on this node until Ctrl-C\n"
    "  sudo bindtrace --etcd-pid 4123 -d 10 --json\n";

static error_t parse_trace_opt(int key, char *arg, struct argp_state *state)
{
	struct trace_options *opt = state->input;
	unsigned long v;

	switch (key) {
	case OPT_CHECK:
		opt->check = true;
		break;
	case OPT_ETCD_PID:
		if (util__parse_ulong(arg, 1, 0x7fffffff, &v))
			argp_error(state, "invalid pid '%s'", arg);
		if (opt->n_etcd_pids == MAX_PER_ROLE)
			argp_error(state, "at most %d --etcd-pid", MAX_PER_ROLE);
		opt->etcd_pids[opt->n_etcd_pids++] = (pid_t)v;
		break;
	case 'j':
		opt->json = true;
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
	case 'v':
		verbose = true;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void fd_path(pid_t pid, int fd, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/fd/%d", pid, fd);
	n = readlink(link, buf, len - 1);
	if (n < 0)
		snprintf(buf, len, "fd %d", fd);
	else
		buf[n] = '\0';
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct trace_state *st = ctx;
	const struct event_header *hdr = data;
	const struct fsync_event *e = data;
	char path[512];

	if (len < sizeof(*hdr) || hdr->type != EVENT_FSYNC || len < sizeof(*e))
		return 0;
	st->events++;
	fd_path((pid_t)hdr->pid, e->fd, path, sizeof(path));
	if (st->opt->json) {
		printf("{\"event\":\"%s\",\"pid\":%u,\"tid\":%u,\"comm\":\"%.16s\",\"fd\":%d,"
		       "\"file\":\"%s\",\"start_mono_ns\":%llu,\"end_mono_ns\":%llu,"
		       "\"start_wall_ns\":%llu,\"ret\":%lld}\n",
		       e->datasync ? "fdatasync" : "fsync", hdr->pid, hdr->tid, hdr->comm, e->fd,
		       path, (unsigned long long)e->start_ns, (unsigned long long)hdr->ts_ns,
		       (unsigned long long)(e->start_ns + st->wall_offset_ns), (long long)e->ret);
	} else {
		printf("%-16llu %-7u %-15.16s %-9s %9.3f  %s\n", (unsigned long long)e->start_ns,
		       hdr->pid, hdr->comm, e->datasync ? "fdatasync" : "fsync",
		       (double)(hdr->ts_ns - e->start_ns) / 1e6, path);
	}
	fflush(stdout);
	return 0;
}

static unsigned long long read_drops(struct fsync_bpf *skel)
{
	int ncpu = libbpf_num_possible_cpus();
	unsigned long long total = 0;
	__u64 *values;
	__u32 zero = 0;
	int i;

	if (ncpu <= 0)
		return 0;
	values = calloc((size_t)ncpu, sizeof(*values));
	if (!values)
		return 0;
	if (bpf_map__lookup_elem(skel->maps.drops, &zero, sizeof(zero), values,
				 sizeof(*values) * (size_t)ncpu, 0) == 0) {
		for (i = 0; i < ncpu; i++)
			total += values[i];
	}
	free(values);
	return total;
}

static int find_targets(struct trace_options *opt, struct process_info *etcd, int *n_etcd)
{
	int i, err, n;

	if (opt->n_etcd_pids) {
		for (i = 0; i < opt->n_etcd_pids; i++) {
			err = discover__process(opt->etcd_pids[i], &etcd[i]);
			if (err) {
				fprintf(stderr, "bindtrace: etcd pid %d: %s\n", opt->etcd_pids[i],
					err == -ESRCH ? "no such process" : strerror(-err));
				return err;
			}
		}
		*n_etcd = opt->n_etcd_pids;
		return 0;
	}
	n = discover__by_exe_name("etcd", etcd, MAX_PER_ROLE);
	if (n < 0) {
		fprintf(stderr, "bindtrace: scanning /proc: %s\n", strerror(-n));
		return n;
	}
	if (n == 0) {
		fprintf(stderr, "bindtrace: no etcd process found (give one with --etcd-pid)\n");
		return -ESRCH;
	}
	*n_etcd = n;
	return 0;
}

int cmd_trace(int argc, char **argv)
{
	static const struct argp argp = {
		trace_argp_options, parse_trace_opt, NULL, trace_doc, NULL, NULL, NULL
	};
	struct trace_options opt = { .ringbuf_bytes = 256 * 1024 };
	struct trace_state st = { .opt = &opt };
	struct process_info etcd[MAX_PER_ROLE];
	struct fsync_bpf *skel = NULL;
	struct ring_buffer *ring = NULL;
	const char *tracefs;
	bool mounted;
	uint64_t deadline = 0;
	unsigned long long drops;
	int n_etcd = 0, err, i;
	__u8 one = 1;

	argp_parse(&argp, argc, argv, 0, NULL, &opt);
	if (opt.check)
		return cmd_check(argc, argv);
	util__setup_libbpf_log();

	if (find_targets(&opt, etcd, &n_etcd))
		return 1;
	err = util__ensure_tracefs(&tracefs, &mounted);
	if (err) {
		fprintf(stderr, "bindtrace: tracefs: %s (run as root; see bindtrace --check)\n",
			strerror(-err));
		return 1;
	}

	skel = fsync_bpf__open();
	if (!skel) {
		fprintf(stderr, "bindtrace: open BPF object: %s\n", strerror(errno));
		return 1;
	}
	bpf_map__set_max_entries(skel->maps.events, (__u32)opt.ringbuf_bytes);
	err = fsync_bpf__load(skel);
	if (err) {
		fprintf(stderr, "bindtrace: load BPF programs: %s (see bindtrace --check)\n",
			strerror(-err));
		goto cleanup;
	}
	for (i = 0; i < n_etcd; i++) {
		__u32 pid = (__u32)etcd[i].pid;

		bpf_map__update_elem(skel->maps.target_pids, &pid, sizeof(pid), &one, sizeof(one),
				     BPF_ANY);
	}
	err = fsync_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "bindtrace: attach fsync tracepoints: %s\n", strerror(-err));
		goto cleanup;
	}
	ring = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &st, NULL);
	if (!ring) {
		err = -errno;
		fprintf(stderr, "bindtrace: ring buffer: %s\n", strerror(errno));
		goto cleanup;
	}
	st.wall_offset_ns = util__wall_offset_ns();

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!opt.json) {
		for (i = 0; i < n_etcd; i++)
			printf("# etcd pid %d (%s) %s\n", etcd[i].pid, etcd[i].comm, etcd[i].exe);
		printf("%-16s %-7s %-15s %-9s %9s  %s\n", "MONO_NS", "PID", "COMM", "SYSCALL", "MS",
		       "FILE");
	}
	fflush(stdout);
	if (opt.duration_s)
		deadline = util__monotonic_ns() + opt.duration_s * 1000000000ull;
	while (!stopping) {
		err = ring_buffer__poll(ring, 100);
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "bindtrace: ring buffer poll: %s\n", strerror(-err));
			goto cleanup;
		}
		if (deadline && util__monotonic_ns() >= deadline)
			break;
	}
	ring_buffer__consume(ring);
	err = 0;
	drops = read_drops(skel);
	if (opt.json)
		printf("{\"event\":\"summary\",\"events\":%llu,\"drops\":%llu}\n", st.events,
		       drops);
	else
		fprintf(stderr, "bindtrace: %llu events, %llu dropped\n", st.events, drops);
cleanup:
	ring_buffer__free(ring);
	fsync_bpf__destroy(skel);
	return err ? 1 : 0;
}
