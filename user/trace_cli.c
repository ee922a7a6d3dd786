/* The bind tracer's command line: see trace_cli.h. */
#include <argp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "trace_cli.h"
#include "util.h"

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
	OPT_OTLP,
	OPT_OTLP_QUEUE,
	OPT_OUTPUT,
	OPT_EVIDENCE_MAX,
	OPT_PROBE_READS,
	OPT_NODE,
	OPT_NODE_ADDRESS,
	OPT_NICE,
};

static const struct argp_option trace_argp_options[] = {
	{ NULL, 0, NULL, 0,
	  "Processes (default: found by executable name; each --*-pid may be repeated, a role "
	  "given by pid is not looked for by name):",
	  1 },
	{ "scheduler-pid", OPT_SCHEDULER_PID, "PID", 0, "A kube-scheduler to trace", 1 },
	{ "apiserver-pid", OPT_APISERVER_PID, "PID", 0, "A kube-apiserver to trace", 1 },
	{ "etcd-pid", OPT_ETCD_PID, "PID", 0, "An etcd member to trace", 1 },
	{ "node", OPT_NODE, "NAME", 0,
	  "The control-plane node traced, named in every output (OTLP k8s.node.name; default: "
	  "the host name there, none elsewhere); with --*-pid and no --node-address its "
	  "processes are the pids given, none looked for by name",
	  1 },
	{ "node-address", OPT_NODE_ADDRESS, "ADDR", 0,
	  "An address of --node (IPv4 or IPv6, repeatable): processes found by name are traced "
	  "only when they listen on or connect from one; what they reach off the node is named as "
	  "not observed",
	  1 },
	{ "no-watchers", OPT_NO_WATCHERS, NULL, 0,
	  "Do not trace the apiserver's clients on this host (kubectl -w...) to see watch events "
	  "arrive",
	  1 },
	{ NULL, 0, NULL, 0, "Output:", 2 },
	{ "json", 'j', NULL, 0, "One JSON object per bind (schema in the README)", 2 },
	{ "summary", OPT_SUMMARY, NULL, 0,
	  "Only the per-leg percentile summary (always printed on exit)", 2 },
	{ "output", OPT_OUTPUT, "FILE", 0,
	  "Append the per-bind output to FILE instead of stdout (0600; SIGHUP reopens it)", 2 },
	{ "perfetto", OPT_PERFETTO, "FILE", 0,
	  "Also write a Chrome trace-event JSON for ui.perfetto.dev", 2 },
	{ "evidence", OPT_EVIDENCE, "DIR", 0,
	  "Also write, per bind, the decoded frames, kernel events and binary identities", 2 },
	{ "evidence-max-size", OPT_EVIDENCE_MAX, "SIZE", 0,
	  "Keep --evidence DIR under SIZE on disk, removing the oldest binds' (K/M/G suffixes; "
	  "default 1G; 0: no bound)",
	  2 },
	{ "report", OPT_REPORT, "FILE", 0,
	  "Write a Markdown report (and FILE.svg waterfall) of the bind given by --pod", 2 },
	{ "metrics", OPT_METRICS, "ADDR", 0,
	  "Serve Prometheus metrics and /healthz on ADDR (127.0.0.1:9464, [::1]:9464, :9464)", 2 },
	{ "otlp", OPT_OTLP, "URL", 0,
	  "Export binds as OpenTelemetry traces over OTLP/HTTP to the collector at URL "
	  "(http://127.0.0.1:4318: spans POSTed to URL/v1/traces; OTEL_EXPORTER_OTLP_* honoured, "
	  "see the README)",
	  2 },
	{ "otlp-queue-size", OPT_OTLP_QUEUE, "BYTES", 0,
	  "Spans held for a slow or absent collector before new ones are dropped (default 8 MiB)",
	  2 },
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
	{ "nice", OPT_NICE, "idle|N", 0,
	  "How the tracer runs once attached. idle (the default): only on CPU time nothing else "
	  "wants (SCHED_IDLE), so a control-plane thread that wakes has a CPU at once. The probes "
	  "run in the traced processes and take their timestamps there, so a tracer that reads "
	  "later times nothing later; a watchdog puts the reader back at the priority started "
	  "with while a quarter of the ring buffer waits unread (with many watchers or a busy "
	  "node, give a larger --ringbuf-size, e.g. 67108864). It needs CAP_SYS_NICE; without it "
	  "the tracer runs as started and says so. N: at nice N instead (-20..19; 0 is the usual "
	  "priority)",
	  4 },
	{ "probe-reads", OPT_PROBE_READS, NULL, 0,
	  "Probe the apiserver's TLS Reads even when its scheduler and etcd are traced (binds "
	  "from schedulers that are not traced, on other nodes; a create's request read as "
	  "it was, not bounded by read(2)s). By default its reads come from the traced "
	  "writers and its read(2)s (README, Performance)",
	  4 },
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
    "  sudo bindtrace --quiet --otlp http://127.0.0.1:4318   # traces to Jaeger / a collector\n"
    "  sudo bindtrace --json --output /var/log/bindtrace.jsonl   # kill -HUP after logrotate\n"
    "  sudo bindtrace --scheduler-pid 812 --apiserver-pid 640 --etcd-pid 590\n"
    "  sudo bindtrace --node cp-1 --node-address 10.0.0.11 --otlp http://jaeger:4318\n"
    "      # one tracer per control-plane node (HA): Jaeger joins each bind's spans\n"
    "  sudo bindtrace --node cp-2 --etcd-pid 590 --etcd-pid 591 --apiserver-pid 640\n";

static bool evidence_max_given;

/* A Kubernetes node name: a DNS subdomain (RFC 1123), lowercase, at most 253 characters. */
static bool node_name_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n > 253 || s[0] == '.' || s[0] == '-' || s[n - 1] == '.' || s[n - 1] == '-')
		return false;
	for (i = 0; i < n; i++) {
		bool alnum = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');

		if (!alnum && s[i] != '-' && s[i] != '.')
			return false;
		/* a label neither starts nor ends with '-', none is empty */
		if (s[i] == '.' && (s[i + 1] == '.' || s[i + 1] == '-' || s[i - 1] == '-'))
			return false;
	}
	return true;
}

static void add_pid(struct argp_state *state, struct trace_pids *p, const char *option,
		    const char *arg)
{
	unsigned long v;

	if (util__parse_ulong(arg, 1, 0x7fffffff, &v))
		argp_error(state, "invalid pid '%s'", arg);
	if (p->n == TRACE_PIDS_PER_ROLE)
		argp_error(state, "%s given more than %d times", option, TRACE_PIDS_PER_ROLE);
	p->pid[p->n++] = (pid_t)v;
}

static void add_node_address(struct argp_state *state, struct trace_options *opt, const char *arg)
{
	static const uint8_t zero[16];
	uint8_t a[16] = { 0 };
	struct endpoint e;
	int i;

	if (inet_pton(AF_INET, arg, a) == 1)
		endpoint__set(&e, AF_INET, a, 0);
	else if (inet_pton(AF_INET6, arg, a) == 1)
		endpoint__set(&e, AF_INET6, a, 0);
	else
		argp_error(state, "invalid --node-address '%s' (an IPv4 or IPv6 address, no port)",
			   arg);
	if (!memcmp(e.addr, zero, sizeof(zero)))
		argp_error(state, "invalid --node-address '%s': a wildcard address names no node",
			   arg);
	for (i = 0; i < opt->n_node_addrs; i++)
		if (endpoint__equal(&opt->node_addrs[i], &e))
			argp_error(state, "--node-address %s given twice", arg);
	if (opt->n_node_addrs == TRACE_NODE_ADDRS)
		argp_error(state, "--node-address given more than %d times", TRACE_NODE_ADDRS);
	opt->node_addrs[opt->n_node_addrs++] = e;
}

/* A pid given twice, for one role or two: "pid 42 given twice (--etcd-pid, --etcd-pid)". */
static void check_pids(struct argp_state *state, const struct trace_options *opt)
{
	const struct trace_pids *roles[] = { &opt->scheduler_pids, &opt->apiserver_pids,
					     &opt->etcd_pids };
	const char *names[] = { "--scheduler-pid", "--apiserver-pid", "--etcd-pid" };
	int r, i, q, k;

	for (r = 0; r < 3; r++)
		for (i = 0; i < roles[r]->n; i++)
			for (q = r; q < 3; q++)
				for (k = q == r ? i + 1 : 0; k < roles[q]->n; k++)
					if (roles[r]->pid[i] == roles[q]->pid[k])
						argp_error(state, "pid %d given twice (%s, %s)",
							   roles[r]->pid[i], names[r], names[q]);
}

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
		add_pid(state, &opt->scheduler_pids, "--scheduler-pid", arg);
		break;
	case OPT_APISERVER_PID:
		add_pid(state, &opt->apiserver_pids, "--apiserver-pid", arg);
		break;
	case OPT_ETCD_PID:
		add_pid(state, &opt->etcd_pids, "--etcd-pid", arg);
		break;
	case OPT_NODE:
		if (!node_name_ok(arg))
			argp_error(state,
				   "invalid --node '%s' (a node name: lowercase letters, digits, "
				   "'-' and '.', at most 253)",
				   arg);
		if (opt->node[0] && strcmp(opt->node, arg))
			argp_error(state, "--node given twice ('%s', '%s')", opt->node, arg);
		util__copy(opt->node, sizeof(opt->node), arg);
		break;
	case OPT_NODE_ADDRESS:
		add_node_address(state, opt, arg);
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
	case OPT_EVIDENCE_MAX:
		evidence_max_given = true;
		if (!strcmp(arg, "0"))
			opt->evidence_max_bytes = 0;
		else if (util__parse_size(arg, 64 * 1024, 1ull << 50, &opt->evidence_max_bytes))
			argp_error(state, "invalid --evidence-max-size '%s' (64K or more, or 0)",
				   arg);
		break;
	case OPT_OUTPUT:
		if (!*arg)
			argp_error(state, "invalid --output ''");
		opt->output = arg;
		break;
	case OPT_REPORT:
		opt->report = arg;
		break;
	case OPT_METRICS:
		opt->metrics = arg;
		break;
	case OPT_OTLP:
		opt->otlp = arg;
		break;
	case OPT_OTLP_QUEUE:
		if (util__parse_ulong(arg, 65536, 1ul << 30, &opt->otlp_queue_bytes))
			argp_error(state, "invalid --otlp-queue-size '%s' (bytes, 64 KiB to 1 GiB)",
				   arg);
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
	case OPT_PROBE_READS:
		opt->probe_reads = true;
		break;
	case OPT_NICE: {
		char *end;
		long n;

		opt->nice_given = true;
		opt->nice_idle = !strcmp(arg, "idle");
		if (opt->nice_idle)
			break;
		errno = 0;
		n = strtol(arg, &end, 10);
		if (errno || end == arg || *end || n < -20 || n > 19)
			argp_error(state, "invalid --nice '%s' (-20..19, or idle)", arg);
		opt->nice = (int)n;
		break;
	}
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
		check_pids(state, opt);
		if (opt->n_node_addrs && !opt->node[0])
			argp_error(state, "--node-address needs --node NAME");
		if (opt->report && !opt->pod_name[0])
			argp_error(state, "--report needs --pod NS/NAME");
		if (evidence_max_given && !opt->evidence)
			argp_error(state, "--evidence-max-size needs --evidence DIR");
		if (opt->output && (opt->quiet || opt->summary_only))
			argp_error(state, "--output takes the per-bind output: not with %s",
				   opt->quiet ? "--quiet" : "--summary");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

void trace_cli__parse(int argc, char **argv, struct trace_options *opt)
{
	static const struct argp argp = {
		trace_argp_options, parse_trace_opt, NULL, trace_doc, NULL, NULL, NULL
	};

	memset(opt, 0, sizeof(*opt));
	opt->ringbuf_bytes = 4 * 1024 * 1024;
	opt->linger_ms = 500;
	opt->watchers = true;
	opt->nice_idle = true; /* README, Performance: what it changed */
	opt->evidence_max_bytes = 1ull << 30;
	evidence_max_given = false;
	argp_parse(&argp, argc, argv, 0, NULL, opt);
}
