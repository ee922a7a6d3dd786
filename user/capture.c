/* `bindtrace capture`: the raw view. Decrypted TLS payloads (crypto/tls
 * uprobes) and plaintext TCP (syscall tracepoints) of chosen processes, per
 * connection and direction, with gaps shown. */
#include <argp.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture.skel.h"
#include "commands.h"
#include "discover.h"
#include "events.h"
#include "streams.h"
#include "tlsprobe.h"
#include "util.h"

#define MAX_PIDS 64
#define MAX_EXES 8

struct capture_options {
	pid_t pids[MAX_PIDS];
	int n_pids;
	const char *exes[MAX_EXES];
	int n_exes;
	bool json;
	bool fsync;
	bool tls_only;
	bool no_tls;
	unsigned long duration_s;
	unsigned long ringbuf_bytes;
	unsigned long max_print;
};

struct proc_stats {
	pid_t pid;
	char comm[17];
	uint64_t events, bytes_out, bytes_in, gaps, gap_bytes;
};

struct capture_state {
	const struct capture_options *opt;
	struct capture_bpf *skel;
	struct streams streams;
	struct proc_stats procs[MAX_PIDS * 4];
	int n_procs;
	int64_t wall_offset_ns;
	uint64_t events;
	bool stream_table_full;
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

enum {
	OPT_EXE = 0x100,
	OPT_TLS_ONLY,
	OPT_NO_TLS,
	OPT_RINGBUF,
	OPT_MAX_PRINT,
	OPT_FSYNC,
};

static const struct argp_option capture_argp_options[] = {
	{ "pid", 'p', "PID", 0, "Process to capture (repeatable)", 0 },
	{ "exe", OPT_EXE, "PATH", 0,
	  "Every process running this executable, including ones started later "
	  "(repeatable)",
	  0 },
	{ "json", 'j', NULL, 0, "One JSON object per event (data in base64)", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after SECONDS (default: until Ctrl-C)", 0 },
	{ "tls-only", OPT_TLS_ONLY, NULL, 0, "Only crypto/tls plaintext, no plaintext TCP", 0 },
	{ "fsync", OPT_FSYNC, NULL, 0,
	  "Also time the processes' fsync/fdatasync calls (etcd's WAL commits)", 0 },
	{ "no-tls", OPT_NO_TLS, NULL, 0,
	  "Only plaintext TCP from syscalls (for programs without Go crypto/tls)", 0 },
	{ "ringbuf-size", OPT_RINGBUF, "BYTES", 0,
	  "Ring buffer size, a power of two >= 4096 (default 4194304)", 0 },
	{ "max-print", OPT_MAX_PRINT, "BYTES", 0,
	  "Human output: show at most BYTES of each event, 0 for all (default 512)", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's messages", 0 },
	{},
};

static const char capture_doc[] =
    "Print what processes send and receive over TCP: the plaintext of Go "
    "crypto/tls "
    "connections, read with uprobes, and plain TCP read from syscalls.\v"
    "Human output: one header line per event (time, pid/comm, connection, "
    "direction, offset, "
    "length), then the bytes as text or a hex dump. A gap line marks bytes "
    "that were lost. On "
    "exit, per-process counts of events, bytes and gaps go to stderr.\n"
    "\n"
    "EXAMPLES:\n"
    "  sudo bindtrace capture -p $(pgrep kube-scheduler)\n"
    "  sudo bindtrace capture --exe /usr/local/bin/kube-apiserver --json > "
    "capture.jsonl\n"
    "  sudo bindtrace capture -p 4123 -p 4124 -d 10 --max-print 0\n"
    "  sudo bindtrace capture -p $(pgrep etcd) --no-tls   # etcd serving "
    "http://\n";

static error_t parse_capture_opt(int key, char *arg, struct argp_state *state)
{
	struct capture_options *opt = state->input;
	unsigned long v;

	switch (key) {
	case 'p':
		if (util__parse_ulong(arg, 1, 0x7fffffff, &v))
			argp_error(state, "invalid pid '%s'", arg);
		if (opt->n_pids == MAX_PIDS)
			argp_error(state, "at most %d pids", MAX_PIDS);
		opt->pids[opt->n_pids++] = (pid_t)v;
		break;
	case OPT_EXE:
		if (opt->n_exes == MAX_EXES)
			argp_error(state, "at most %d --exe", MAX_EXES);
		opt->exes[opt->n_exes++] = arg;
		break;
	case 'j':
		opt->json = true;
		break;
	case 'd':
		if (util__parse_ulong(arg, 1, 86400 * 365, &opt->duration_s))
			argp_error(state, "invalid duration '%s' (seconds, 1 or more)", arg);
		break;
	case OPT_TLS_ONLY:
		opt->tls_only = true;
		break;
	case OPT_NO_TLS:
		opt->no_tls = true;
		break;
	case OPT_FSYNC:
		opt->fsync = true;
		break;
	case OPT_RINGBUF:
		if (util__parse_ulong(arg, 4096, 1ul << 30, &v) || (v & (v - 1)))
			argp_error(state, "invalid ring buffer size '%s' (power of two, 4096..1G)",
				   arg);
		opt->ringbuf_bytes = v;
		break;
	case OPT_MAX_PRINT:
		if (util__parse_ulong(arg, 0, 1ul << 30, &opt->max_print))
			argp_error(state, "invalid --max-print '%s'", arg);
		break;
	case 'v':
		verbose = true;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (!opt->n_pids && !opt->n_exes)
			argp_error(state, "nothing to capture: give -p PID or --exe PATH");
		if (opt->tls_only && opt->no_tls)
			argp_error(state, "--tls-only and --no-tls exclude each other");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static struct proc_stats *proc_stats(struct capture_state *st, pid_t pid, const char *comm)
{
	int i;

	for (i = 0; i < st->n_procs; i++)
		if (st->procs[i].pid == pid)
			return &st->procs[i];
	if (st->n_procs == (int)(sizeof(st->procs) / sizeof(st->procs[0])))
		return NULL;
	st->procs[st->n_procs].pid = pid;
	snprintf(st->procs[st->n_procs].comm, sizeof(st->procs[0].comm), "%s", comm);
	return &st->procs[st->n_procs++];
}

static bool mostly_text(const __u8 *p, size_t n)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++)
		if (!isprint(p[i]) && p[i] != '\n' && p[i] != '\r' && p[i] != '\t')
			bad++;
	return bad * 20 <= n;
}

static void print_bytes(const __u8 *p, size_t n)
{
	size_t i, j;

	if (mostly_text(p, n)) {
		for (i = 0; i < n; i++)
			putchar(isprint(p[i]) || p[i] == '\n' || p[i] == '\t' ? p[i] : '.');
		if (n && p[n - 1] != '\n')
			putchar('\n');
		return;
	}
	for (i = 0; i < n; i += 16) {
		printf("    %08zx  ", i);
		for (j = i; j < i + 16; j++) {
			if (j < n)
				printf("%02x ", p[j]);
			else
				printf("   ");
			if (j == i + 7)
				putchar(' ');
		}
		printf(" |");
		for (j = i; j < i + 16 && j < n; j++)
			putchar(isprint(p[j]) ? p[j] : '.');
		printf("|\n");
	}
}

static void print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void on_fsync(struct capture_state *st, const struct fsync_event *e)
{
	char link[64], path[512] = "";
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%u/fd/%d", e->hdr.pid, e->fd);
	n = readlink(link, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = '\0';
	if (st->opt->json) {
		printf("{\"event\":\"%s\",\"ts_ns\":%llu,\"start_ns\":%llu,\"pid\":%u,\"tid\":%u,"
		       "\"fd\":%d,\"file\":",
		       e->datasync ? "fdatasync" : "fsync", (unsigned long long)e->hdr.ts_ns,
		       (unsigned long long)e->start_ns, e->hdr.pid, e->hdr.tid, e->fd);
		print_json_string(path);
		printf(",\"ret\":%lld}\n", (long long)e->ret);
		return;
	}
	printf("%llu.%06llu %u/%.16s %s fd %d %s %.3f ms%s\n",
	       (unsigned long long)(e->start_ns / 1000000000ull),
	       (unsigned long long)(e->start_ns % 1000000000ull / 1000), e->hdr.pid, e->hdr.comm,
	       e->datasync ? "fdatasync" : "fsync", e->fd, path,
	       (double)(e->hdr.ts_ns - e->start_ns) / 1e6, e->ret ? " (failed)" : "");
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct capture_state *st = ctx;
	const struct data_event *e = data;
	struct proc_stats *ps;
	struct stream *s;
	char laddr[64], raddr[64], comm[17];
	uint64_t missed;
	size_t shown;

	if (size >= sizeof(struct fsync_event) && e->hdr.type == EVENT_FSYNC) {
		st->events++;
		on_fsync(st, data);
		return 0;
	}
	if (size < sizeof(*e) || e->hdr.type != EVENT_DATA || e->len > size - sizeof(*e))
		return 0;
	st->events++;
	snprintf(comm, sizeof(comm), "%.16s", e->hdr.comm);
	util__format_addr(laddr, sizeof(laddr), e->family, e->laddr, e->lport);
	util__format_addr(raddr, sizeof(raddr), e->family, e->raddr, e->rport);
	ps = proc_stats(st, (pid_t)e->hdr.pid, comm);
	s = streams__get(&st->streams, e->hdr.pid, e->conn, e->dir);
	missed = 0;
	if (s)
		missed = stream__advance(s, e->offset, e->len);
	else
		st->stream_table_full = true;
	if (ps) {
		ps->events++;
		if (e->dir == DIR_OUT)
			ps->bytes_out += e->len;
		else
			ps->bytes_in += e->len;
		if (missed) {
			ps->gaps++;
			ps->gap_bytes += missed;
		}
	}

	if (st->opt->json) {
		if (missed) {
			printf("{\"gap\":%llu,\"ts_ns\":%llu,\"pid\":%u,\"conn\":%llu,\"dir\":\"%"
			       "s\","
			       "\"offset\":%llu}\n",
			       (unsigned long long)missed, (unsigned long long)e->hdr.ts_ns,
			       e->hdr.pid, (unsigned long long)e->conn,
			       e->dir == DIR_OUT ? "out" : "in",
			       (unsigned long long)(e->offset - missed));
		}
		printf("{\"ts_ns\":%llu,\"wall_ns\":%llu,\"pid\":%u,\"tid\":%u,\"comm\":",
		       (unsigned long long)e->hdr.ts_ns,
		       (unsigned long long)(e->hdr.ts_ns + st->wall_offset_ns), e->hdr.pid,
		       e->hdr.tid);
		print_json_string(comm);
		printf(",\"conn\":%llu,\"fd\":%d,\"laddr\":\"%s\",\"raddr\":\"%s\",\"dir\":"
		       "\"%s\","
		       "\"source\":\"%s\",\"offset\":%llu,\"len\":%u,\"data\":\"",
		       (unsigned long long)e->conn, e->fd, laddr, raddr,
		       e->dir == DIR_OUT ? "out" : "in", e->source == SOURCE_TLS ? "tls" : "tcp",
		       (unsigned long long)e->offset, e->len);
		util__base64_print(stdout, e->data, e->len);
		printf("\"}\n");
		return 0;
	}
	if (missed)
		printf("--- gap: %llu bytes lost on conn %llu %s before offset %llu\n",
		       (unsigned long long)missed, (unsigned long long)e->conn,
		       e->dir == DIR_OUT ? "out" : "in", (unsigned long long)e->offset);
	printf("%llu.%06llu %u/%s conn %llu fd %d %s %s %s %s offset %llu len %u\n",
	       (unsigned long long)(e->hdr.ts_ns / 1000000000ull),
	       (unsigned long long)(e->hdr.ts_ns % 1000000000ull / 1000), e->hdr.pid, comm,
	       (unsigned long long)e->conn, e->fd, laddr, e->dir == DIR_OUT ? "->" : "<-", raddr,
	       e->source == SOURCE_TLS ? "tls" : "tcp", (unsigned long long)e->offset, e->len);
	shown = e->len;
	if (st->opt->max_print && shown > st->opt->max_print)
		shown = st->opt->max_print;
	print_bytes(e->data, shown);
	if (shown < e->len)
		printf("    ... %zu more bytes (--max-print 0 shows all)\n", e->len - shown);
	return 0;
}

static int add_target(struct capture_bpf *skel, pid_t pid, bool fsync)
{
	__u32 key = (__u32)pid;
	__u8 one = 1;

	if (fsync)
		bpf_map__update_elem(skel->maps.fsync_targets, &key, sizeof(key), &one, sizeof(one),
				     BPF_ANY);
	return bpf_map__update_elem(skel->maps.targets, &key, sizeof(key), &one, sizeof(one),
				    BPF_ANY);
}

/* --exe: every process whose executable is the same file (device and inode) as
 * path. */
static void scan_exe_processes(struct capture_state *st, const struct stat *exe_st, int n)
{
	struct process_info *found;
	struct stat pst;
	char path[64];
	int i, e, count;

	found = calloc(256, sizeof(*found));
	if (!found)
		return;
	for (e = 0; e < n; e++) {
		const char *base = strrchr(st->opt->exes[e], '/');

		count = discover__by_exe_name(base ? base + 1 : st->opt->exes[e], found, 256);
		for (i = 0; i < count; i++) {
			snprintf(path, sizeof(path), "/proc/%d/exe", found[i].pid);
			if (stat(path, &pst) == 0 && pst.st_dev == exe_st[e].st_dev &&
			    pst.st_ino == exe_st[e].st_ino)
				add_target(st->skel, found[i].pid, st->opt->fsync);
		}
	}
	free(found);
}

int cmd_capture(int argc, char **argv)
{
	static const struct argp argp = {
		capture_argp_options, parse_capture_opt, NULL, capture_doc, NULL, NULL, NULL
	};
	struct capture_options opt = { .ringbuf_bytes = 4 * 1024 * 1024, .max_print = 512 };
	struct capture_state st = { .opt = &opt };
	struct tls_attachment *atts = NULL;
	struct stat exe_st[MAX_EXES];
	struct bpf_link *tp_links[16] = {};
	struct ring_buffer *ring = NULL;
	struct process_info info;
	struct bpf_program *prog;
	const char *tracefs;
	char why[512], path[64];
	uint64_t deadline = 0, next_scan = 0, counters[COUNTER_MAX];
	int n_atts = 0, n_tp = 0, err = 0, i;
	bool mounted;

	argp_parse(&argp, argc, argv, 0, NULL, &opt);
	util__setup_libbpf_log();
	if (selfcheck__preflight("bindtrace: capture"))
		return 1;

	for (i = 0; i < opt.n_pids; i++) {
		err = discover__process(opt.pids[i], &info);
		if (err) {
			fprintf(stderr, "bindtrace: capture: pid %d: %s\n", opt.pids[i],
				err == -ESRCH ? "no such process" : strerror(-err));
			return 1;
		}
	}
	for (i = 0; i < opt.n_exes; i++) {
		if (stat(opt.exes[i], &exe_st[i]) != 0) {
			fprintf(stderr, "bindtrace: capture: %s: %s\n", opt.exes[i],
				strerror(errno));
			return 1;
		}
	}
	{
		err = util__ensure_tracefs(&tracefs, &mounted);
		if (err) {
			fprintf(stderr, "bindtrace: capture: tracefs: %s (see bindtrace --check)\n",
				strerror(-err));
			return 1;
		}
	}
	if (streams__init(&st.streams, 65536)) {
		fprintf(stderr, "bindtrace: capture: out of memory\n");
		return 1;
	}

	st.skel = capture_bpf__open();
	if (!st.skel) {
		fprintf(stderr, "bindtrace: capture: open BPF object: %s\n", strerror(errno));
		err = -errno;
		goto cleanup;
	}
	st.skel->rodata->uprobe_any_pid = opt.n_exes > 0;
	st.skel->rodata->capture_syscalls = !opt.tls_only;
	bpf_map__set_max_entries(st.skel->maps.events, (__u32)opt.ringbuf_bytes);
	err = capture_bpf__load(st.skel);
	if (err) {
		fprintf(stderr,
			"bindtrace: capture: load BPF programs: %s (see bindtrace --check)\n",
			strerror(-err));
		goto cleanup;
	}

	atts = calloc((size_t)(opt.n_pids + opt.n_exes), sizeof(*atts));
	if (!atts) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < opt.n_pids; i++) {
		add_target(st.skel, opt.pids[i], opt.fsync);
		if (opt.no_tls)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/exe", opt.pids[i]);
		err = tls_attachment__attach(&atts[n_atts], st.skel, opt.pids[i], path, why,
					     sizeof(why));
		if (err) {
			fprintf(stderr, "bindtrace: capture: pid %d: %s\n", opt.pids[i], why);
			goto cleanup;
		}
		n_atts++;
	}
	for (i = 0; i < opt.n_exes && !opt.no_tls; i++) {
		err = tls_attachment__attach(&atts[n_atts], st.skel, -1, opt.exes[i], why,
					     sizeof(why));
		if (err) {
			fprintf(stderr, "bindtrace: capture: %s: %s\n", opt.exes[i], why);
			goto cleanup;
		}
		n_atts++;
	}
	/* The syscall programs also tell the TLS probes apart from their own repeats: attached
	 * even with --tls-only, where capture_syscalls keeps them from emitting. */
	{
		bpf_object__for_each_program (prog, st.skel->obj) {
			const char *name = bpf_program__name(prog);

			if (strncmp(name, "sys_", 4) != 0 &&
			    !(opt.fsync && (strncmp(name, "fdatasync_", 10) == 0 ||
					    strncmp(name, "fsync_", 6) == 0)))
				continue;
			tp_links[n_tp] = bpf_program__attach(prog);
			if (!tp_links[n_tp]) {
				err = -errno;
				fprintf(stderr, "bindtrace: capture: attach %s: %s\n",
					bpf_program__section_name(prog), strerror(errno));
				goto cleanup;
			}
			n_tp++;
		}
	}
	ring = ring_buffer__new(bpf_map__fd(st.skel->maps.events), on_event, &st, NULL);
	if (!ring) {
		err = -errno;
		fprintf(stderr, "bindtrace: capture: ring buffer: %s\n", strerror(errno));
		goto cleanup;
	}
	st.wall_offset_ns = util__wall_offset_ns();

	for (i = 0; i < n_atts; i++) {
		fprintf(stderr,
			"bindtrace: capture: %s %d %s (%s): Write, Read + %zu RETs, %.1f ms\n",
			atts[i].pid > 0 ? "pid" : "exe", atts[i].pid > 0 ? atts[i].pid : 0,
			atts[i].binary, atts[i].sites.go_version, atts[i].sites.n_read_rets,
			(double)atts[i].attach_ns / 1e6);
	}
	fprintf(stderr, "bindtrace: capture: running%s; Ctrl-C to stop\n",
		opt.tls_only ? " (TLS only)" : "");

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (opt.duration_s)
		deadline = util__monotonic_ns() + opt.duration_s * 1000000000ull;
	while (!stopping) {
		uint64_t now = util__monotonic_ns();

		if (opt.n_exes && now >= next_scan) {
			scan_exe_processes(&st, exe_st, opt.n_exes);
			next_scan = now + 200000000ull;
		}
		err = ring_buffer__poll(ring, 100);
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "bindtrace: capture: ring buffer: %s\n", strerror(-err));
			goto cleanup;
		}
		fflush(stdout);
		if (deadline && util__monotonic_ns() >= deadline)
			break;
	}
	ring_buffer__consume(ring);
	fflush(stdout);
	err = 0;

	capture_counters__read(st.skel, counters);
	fprintf(stderr, "%-8s %-16s %10s %14s %14s %8s %12s\n", "PID", "COMM", "EVENTS",
		"BYTES_OUT", "BYTES_IN", "GAPS", "GAP_BYTES");
	for (i = 0; i < st.n_procs; i++) {
		struct proc_stats *p = &st.procs[i];

		fprintf(stderr, "%-8d %-16s %10llu %14llu %14llu %8llu %12llu\n", p->pid, p->comm,
			(unsigned long long)p->events, (unsigned long long)p->bytes_out,
			(unsigned long long)p->bytes_in, (unsigned long long)p->gaps,
			(unsigned long long)p->gap_bytes);
	}
	fprintf(stderr,
		"bindtrace: capture: %llu events; ring buffer drops %llu, truncated "
		"bytes %llu, "
		"TLS calls without a socket %llu, Read returns without entry %llu, repeated uprobe "
		"hits ignored %llu%s\n",
		(unsigned long long)st.events, (unsigned long long)counters[COUNTER_RINGBUF_DROPS],
		(unsigned long long)counters[COUNTER_TRUNCATED],
		(unsigned long long)counters[COUNTER_NO_SOCKET],
		(unsigned long long)counters[COUNTER_READ_UNMATCHED],
		(unsigned long long)counters[COUNTER_DUPLICATE_HITS],
		st.stream_table_full ? "; stream table full: some gaps not tracked" : "");
cleanup:
	ring_buffer__free(ring);
	for (i = 0; i < n_tp; i++)
		bpf_link__destroy(tp_links[i]);
	for (i = 0; i < n_atts; i++)
		tls_attachment__detach(&atts[i]);
	free(atts);
	capture_bpf__destroy(st.skel);
	streams__free(&st.streams);
	return err ? 1 : 0;
}
