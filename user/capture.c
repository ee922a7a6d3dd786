/* `bindtrace capture`: the raw view. Decrypted TLS payloads (crypto/tls
 * uprobes) and plaintext TCP (syscall tracepoints) of chosen processes, per
 * connection and direction, with gaps shown. */
#include <argp.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "capture_json.h"
#include "commands.h"
#include "discover.h"
#include "endpoint.h"
#include "events.h"
#include "outbuf.h"
#include "session.h"
#include "streams.h"
#include "tlsprobe.h"
#include "util.h"

#define MAX_PIDS 64
#define MAX_EXES 8

/* capture copies every byte (the bind tracer keeps only what a bind needs, 4 MiB): two TLS
 * connections moving 2.4 MB each way at loopback speed (tests/cost/bulk) put 19 MB in the ring
 * within 0.15-0.6 s, faster than --json reaches a file; with 4 MiB most runs lost data. */
#define CAPTURE_RINGBUF_DEFAULT (64ul << 20)
/* --json output is written in pieces of about this size (a bulk capture writes tens of MB a
 * second; each write(2) costs a syscall and every tracer's syscall tracepoints) */
#define CAPTURE_JSON_FLUSH_AT (1ul << 20)

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
	/* --json: the comm last seen in its events (a thread may rename itself), quoted */
	char json_comm[TASK_COMM_LEN];
	char json_comm_quoted[CAPTURE_JSON_QUOTED_COMM];
};

struct capture_state {
	const struct capture_options *opt;
	struct session *session;
	struct streams streams;
	struct stat exe_st[MAX_EXES];
	struct tls_attachment *atts;
	int n_atts;
	struct proc_stats procs[MAX_PIDS * 4];
	int n_procs;
	int64_t wall_offset_ns;
	uint64_t next_scan_ns;
	bool stream_table_full;
	bool write_failed;
	/* --json: every line is built in place here and reaches stdout in writes of about
	 * CAPTURE_JSON_FLUSH_AT bytes, and all of it after each read of the ring buffer */
	struct outbuf out;
};

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
	  "Ring buffer size, a power of two >= 4096 (default 67108864: a burst of a few tens "
	  "of MB at loopback speed waits there while the output catches up)",
	  0 },
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

/* One JSON object on its own line of the --json output; takes the reference. */
static void print_json(struct capture_state *st, json_t *o)
{
	char *at, *text;
	size_t room = 4096, n;

	at = o ? outbuf__reserve(&st->out, room) : NULL;
	if (at) {
		n = json_dumpb(o, at, room - 1, JSON_COMPACT);
		if (n && n < room - 1) {
			at[n] = '\n';
			outbuf__commit(&st->out, at + n + 1);
		} else if ((text = json_dumps(o, JSON_COMPACT))) { /* a long one */
			outbuf__append(&st->out, text, strlen(text));
			outbuf__append(&st->out, "\n", 1);
			free(text);
		}
	}
	json_decref(o);
}

/* The quoted comm for e's line: kept per process and quoted again only when it changes. */
static const char *json_comm(struct proc_stats *ps, const struct data_event *e, char *spare)
{
	char comm[TASK_COMM_LEN + 1];

	if (ps && ps->json_comm_quoted[0] && !memcmp(ps->json_comm, e->hdr.comm, TASK_COMM_LEN))
		return ps->json_comm_quoted;
	snprintf(comm, sizeof(comm), "%.16s", e->hdr.comm);
	if (!ps) { /* the process table is full */
		capture_json__quote(comm, spare, CAPTURE_JSON_QUOTED_COMM);
		return spare;
	}
	memcpy(ps->json_comm, e->hdr.comm, TASK_COMM_LEN);
	capture_json__quote(comm, ps->json_comm_quoted, sizeof(ps->json_comm_quoted));
	return ps->json_comm_quoted;
}

/* The gap (if any) and the data line, built in place in the output buffer. */
static void print_json_data(struct capture_state *st, struct proc_stats *ps,
			    const struct data_event *e, const char *laddr, const char *raddr,
			    uint64_t missed)
{
	char spare[CAPTURE_JSON_QUOTED_COMM], *end;

	end = outbuf__reserve(&st->out, CAPTURE_JSON_GAP_SIZE + capture_json__data_size(e->len));
	if (!end)
		return; /* out of memory: said at the next flush */
	if (missed)
		end = capture_json__gap(end, e, missed);
	end = capture_json__data(end, e, st->wall_offset_ns, json_comm(ps, e, spare), laddr, raddr);
	outbuf__commit(&st->out, end);
}

static void on_fsync(void *ctx, const struct fsync_event *e)
{
	struct capture_state *st = ctx;
	char link[64], path[512] = "";
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%u/fd/%d", e->hdr.pid, e->fd);
	n = readlink(link, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = '\0';
	if (st->opt->json) {
		print_json(st,
			   json_pack("{s:s, s:I, s:I, s:i, s:i, s:i, s:o, s:I}", "event",
				     e->datasync ? "fdatasync" : "fsync", "ts_ns",
				     (json_int_t)e->hdr.ts_ns, "start_ns", (json_int_t)e->start_ns,
				     "pid", (int)e->hdr.pid, "tid", (int)e->hdr.tid, "fd", e->fd,
				     "file", util__json_string(path), "ret", (json_int_t)e->ret));
		return;
	}
	printf("%llu.%06llu %u/%.16s %s fd %d %s %.3f ms%s\n",
	       (unsigned long long)(e->start_ns / 1000000000ull),
	       (unsigned long long)(e->start_ns % 1000000000ull / 1000), e->hdr.pid, e->hdr.comm,
	       e->datasync ? "fdatasync" : "fsync", e->fd, path,
	       (double)(e->hdr.ts_ns - e->start_ns) / 1e6, e->ret ? " (failed)" : "");
}

static void on_data(void *ctx, const struct data_event *e)
{
	struct capture_state *st = ctx;
	struct proc_stats *ps;
	struct stream *s;
	char laddr[ENDPOINT_STRLEN], raddr[ENDPOINT_STRLEN], comm[17];
	struct endpoint local, remote;
	uint64_t missed;
	size_t shown;

	snprintf(comm, sizeof(comm), "%.16s", e->hdr.comm);
	endpoint__set(&local, e->family, e->laddr, e->lport);
	endpoint__set(&remote, e->family, e->raddr, e->rport);
	endpoint__format(&local, laddr, sizeof(laddr));
	endpoint__format(&remote, raddr, sizeof(raddr));
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
		print_json_data(st, ps, e, laddr, raddr, missed);
		return;
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
}

/* --exe: every process whose executable is the same file (device and inode) as one given. */
static void scan_exe_processes(struct capture_state *st)
{
	pid_t found[256];
	int i, e, count;

	for (e = 0; e < st->opt->n_exes; e++) {
		count = discover__by_exe_file(&st->exe_st[e], found, 256);
		for (i = 0; i < count; i++)
			session__add_target(st->session, found[i], st->opt->fsync);
	}
}

/* The pids exist and the executables can be read: said before anything is loaded. */
static int check_inputs(struct capture_state *st)
{
	const struct capture_options *opt = st->opt;
	struct process_info info;
	int i, err;

	for (i = 0; i < opt->n_pids; i++) {
		err = discover__process(opt->pids[i], &info);
		if (err) {
			fprintf(stderr, "bindtrace: capture: pid %d: %s\n", opt->pids[i],
				err == -ESRCH ? "no such process" : strerror(-err));
			return err;
		}
	}
	for (i = 0; i < opt->n_exes; i++) {
		if (stat(opt->exes[i], &st->exe_st[i]) != 0) {
			err = -errno;
			fprintf(stderr, "bindtrace: capture: %s: %s\n", opt->exes[i],
				strerror(-err));
			return err;
		}
	}
	return 0;
}

/* Each pid's syscalls, and the TLS probes of each pid and executable (not with --no-tls). */
static int attach(struct capture_state *st)
{
	const struct capture_options *opt = st->opt;
	char why[512], path[64];
	int i, err;

	st->atts = calloc((size_t)(opt->n_pids + opt->n_exes), sizeof(*st->atts));
	if (!st->atts)
		return -ENOMEM;
	for (i = 0; i < opt->n_pids; i++) {
		session__add_target(st->session, opt->pids[i], opt->fsync);
		if (opt->no_tls)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/exe", opt->pids[i]);
		err = tls_attachment__attach(&st->atts[st->n_atts], session__bpf(st->session),
					     opt->pids[i], path, why, sizeof(why));
		if (err) {
			fprintf(stderr, "bindtrace: capture: pid %d: %s\n", opt->pids[i], why);
			return err;
		}
		st->n_atts++;
	}
	for (i = 0; i < opt->n_exes && !opt->no_tls; i++) {
		err = tls_attachment__attach(&st->atts[st->n_atts], session__bpf(st->session), -1,
					     opt->exes[i], why, sizeof(why));
		if (err) {
			fprintf(stderr, "bindtrace: capture: %s: %s\n", opt->exes[i], why);
			return err;
		}
		st->n_atts++;
	}
	return 0;
}

static void print_attached(const struct capture_state *st)
{
	const struct tls_attachment *a;
	int i;

	for (i = 0; i < st->n_atts; i++) {
		a = &st->atts[i];
		fprintf(stderr,
			"bindtrace: capture: %s %d %s (%s): Write, Read + %zu RETs, %.1f ms\n",
			a->pid > 0 ? "pid" : "exe", a->pid > 0 ? a->pid : 0, a->binary,
			a->sites.go_version, a->sites.n_read_rets, (double)a->attach_ns / 1e6);
	}
	fprintf(stderr, "bindtrace: capture: running%s; Ctrl-C to stop\n",
		st->opt->tls_only ? " (TLS only)" : "");
}

/* Everything printed so far to stdout: 0 or -errno. */
static int flush_output(struct capture_state *st)
{
	if (st->opt->json)
		return outbuf__flush(&st->out);
	if (fflush(stdout) || ferror(stdout))
		return errno ? -errno : -EIO;
	return 0;
}

/* After each read of the ring buffer: new processes of --exe, and what was printed. */
static void between_reads(void *ctx, uint64_t now, uint64_t read_to)
{
	struct capture_state *st = ctx;
	int err;

	(void)read_to; /* nothing here waits on the records' clock */
	if (st->opt->n_exes && now >= st->next_scan_ns) {
		scan_exe_processes(st);
		st->next_scan_ns = now + 200000000ull;
	}
	err = flush_output(st);
	if (err && !st->write_failed) {
		fprintf(stderr, "bindtrace: capture: writing the output: %s\n", strerror(-err));
		st->write_failed = true;
		session__stop(st->session);
	}
}

static void print_stats(struct capture_state *st)
{
	uint64_t counters[COUNTER_MAX];
	int i;

	session__counters(st->session, counters);
	fprintf(stderr, "%-8s %-16s %10s %14s %14s %8s %12s\n", "PID", "COMM", "EVENTS",
		"BYTES_OUT", "BYTES_IN", "GAPS", "GAP_BYTES");
	for (i = 0; i < st->n_procs; i++) {
		struct proc_stats *p = &st->procs[i];

		fprintf(stderr, "%-8d %-16s %10llu %14llu %14llu %8llu %12llu\n", p->pid, p->comm,
			(unsigned long long)p->events, (unsigned long long)p->bytes_out,
			(unsigned long long)p->bytes_in, (unsigned long long)p->gaps,
			(unsigned long long)p->gap_bytes);
	}
	fprintf(stderr,
		"bindtrace: capture: %llu events; ring buffer drops %llu, truncated bytes %llu, "
		"TLS calls without a socket %llu, Read returns without entry %llu, repeated uprobe "
		"hits ignored %llu%s\n",
		(unsigned long long)session__events(st->session),
		(unsigned long long)counters[COUNTER_RINGBUF_DROPS],
		(unsigned long long)counters[COUNTER_TRUNCATED],
		(unsigned long long)counters[COUNTER_NO_SOCKET],
		(unsigned long long)counters[COUNTER_READ_UNMATCHED],
		(unsigned long long)counters[COUNTER_DUPLICATE_HITS],
		st->stream_table_full ? "; stream table full: some gaps not tracked" : "");
}

int cmd_capture(int argc, char **argv)
{
	static const struct argp argp = {
		capture_argp_options, parse_capture_opt, NULL, capture_doc, NULL, NULL, NULL
	};
	struct capture_options opt = { .ringbuf_bytes = CAPTURE_RINGBUF_DEFAULT, .max_print = 512 };
	struct capture_state st = { .opt = &opt };
	struct session_handlers handlers = { .data = on_data,
					     .fsync = on_fsync,
					     .between = between_reads,
					     .ctx = &st,
					     .between_ctx = &st };
	struct session_options sopt = { .name = "bindtrace: capture" };
	uint64_t deadline;
	int err, i;

	argp_parse(&argp, argc, argv, 0, NULL, &opt);
	util__setup_libbpf_log();
	if (selfcheck__preflight("bindtrace: capture") || check_inputs(&st))
		return 1;
	/* --json: nothing goes through stdio's stdout (an event of MAX_CHUNK bytes is a 22 KB
	 * line) */
	if ((opt.json &&
	     outbuf__init(&st.out, STDOUT_FILENO, CAPTURE_JSON_FLUSH_AT,
			  CAPTURE_JSON_GAP_SIZE + capture_json__data_size(MAX_CHUNK))) ||
	    streams__init(&st.streams, 65536)) {
		fprintf(stderr, "bindtrace: capture: out of memory\n");
		outbuf__free(&st.out);
		return 1;
	}
	sopt.ringbuf_bytes = opt.ringbuf_bytes;
	sopt.uprobe_any_pid = opt.n_exes > 0;
	sopt.no_syscall_data = opt.tls_only;
	st.session = session__open(&sopt);
	err = st.session ? attach(&st) : -EINVAL;
	if (err)
		goto cleanup;
	st.wall_offset_ns = util__wall_offset_ns();
	print_attached(&st);
	between_reads(&st, util__monotonic_ns(), 0);
	deadline = opt.duration_s ? util__monotonic_ns() + opt.duration_s * 1000000000ull : 0;
	err = session__run(st.session, &handlers, deadline);
	between_reads(&st, 0, 0); /* the last lines out, or the error that kept them in */
	if (!err) {
		print_stats(&st);
		session__print_probe_hits(st.session, stderr);
	}
	if (st.write_failed)
		err = -EIO;
cleanup:
	for (i = 0; i < st.n_atts; i++)
		tls_attachment__detach(&st.atts[i]);
	free(st.atts);
	session__close(st.session);
	streams__free(&st.streams);
	outbuf__free(&st.out);
	return err ? 1 : 0;
}
