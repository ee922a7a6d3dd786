/* The file outputs of the bind tracer: holds the per-bind output's stream (stdout or --output),
 * routes what the tracer sees to --perfetto (perfetto.c), --evidence (evidence.c), --report
 * (report.c) and --otlp (otlp.c), each bind as one bind view, and owns the
 * run's one registry of process identities, which the writers that cite binaries read. Each
 * output is off unless its option is given.
 *
 * Hashing the binaries (some 200 MB for a control plane) runs on a thread per process from
 * trace_outputs__process() on, so attaching is not delayed; the first bind written waits for
 * what is not done yet. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evidence.h"
#include "evidence_quota.h"
#include "identity.h"
#include "otlp.h"
#include "otlp_encode.h"
#include "output_file.h"
#include "perfetto.h"
#include "report.h"
#include "trace_outputs.h"
#include "util.h"

/* Longest a bind stays open in the correlator (max_open_ns in trace.c), plus slack: how long
 * the evidence rings keep events; --linger adds to it. */
#define OUTPUTS_RETENTION_NS (12ull * 1000000000ull)

struct trace_outputs {
	const struct trace_options *opt;
	int64_t wall_offset_ns;
	FILE *output;	    /* --output; NULL without it, or after a failed reopen */
	bool output_failed; /* said once */
	struct perfetto *perfetto;
	struct evidence *evidence;
	struct report *report;
	struct otlp_exporter *otlp;
	struct pb_writer otlp_spans;   /* a bind's spans, encoded for otlp */
	char otlp_node[256];	       /* k8s.node.name of the spans' resources */
	struct identities *identities; /* every traced process, in the order attached */
	int errors;
};

/* --otlp URL, or the OTEL_EXPORTER_OTLP_ variables that turn export on: 0, or -1 after saying
 * why. */
static int open_otlp(struct trace_outputs *o)
{
	struct otlp_config cfg;
	char why[256], what[OTLP_URL_MAX + 200];
	int on;

	on = otlp_config__resolve(&cfg, o->opt->otlp, o->opt->otlp_queue_bytes,
				  o->opt->node[0] ? o->opt->node : NULL, why, sizeof(why));
	if (on < 0) {
		fprintf(stderr, "bindtrace: --otlp: %s\n", why);
		errno = EINVAL;
		return -1;
	}
	if (!on)
		return 0;
	o->otlp = otlp_exporter__start(&cfg);
	if (!o->otlp)
		return -1;
	util__copy(o->otlp_node, sizeof(o->otlp_node), cfg.node);
	otlp_exporter__describe(o->otlp, what, sizeof(what));
	fprintf(stderr, "# otlp: binds exported as traces to %s\n", what);
	return 0;
}

/* A file or pipe gets a buffer that holds many binds: a bind's JSON (5-8 KiB) is larger than
 * stdio's default (4 KiB), so each was a write(2) of its own; the trace flushes once per tick
 * (trace.c). A terminal stays line-buffered. Before anything is written to f. */
#define OUTPUT_BUFFER (256 * 1024)

static void buffer_output(FILE *f)
{
	if (!isatty(fileno(f)))
		setvbuf(f, NULL, _IOFBF, OUTPUT_BUFFER);
}

struct trace_outputs *trace_outputs__new(const struct trace_options *opt, int64_t wall_offset_ns)
{
	struct trace_outputs *o = calloc(1, sizeof(*o));
	int err;

	if (!o)
		return NULL;
	o->opt = opt;
	o->wall_offset_ns = wall_offset_ns;
	o->identities = identities__new();
	if (!o->identities)
		goto fail;
	if (opt->output) {
		o->output = output_file__open_append(opt->output);
		if (!o->output) {
			fprintf(stderr, "bindtrace: --output %s: %s\n", opt->output,
				strerror(errno));
			goto fail;
		}
	}
	buffer_output(o->output ? o->output : stdout);
	if (opt->evidence) {
		o->evidence =
		    evidence__open(opt->evidence, wall_offset_ns,
				   OUTPUTS_RETENTION_NS + (uint64_t)opt->linger_ms * 1000000ull,
				   opt->evidence_max_bytes);
		if (!o->evidence)
			goto fail;
	}
	if (opt->report) {
		o->report = report__open(opt->report, opt->pod_ns, opt->pod_name);
		if (!o->report)
			goto fail;
	}
	if (open_otlp(o))
		goto fail;
	/* Last: it creates its file at once. */
	if (opt->perfetto) {
		o->perfetto = perfetto__open(opt->perfetto, wall_offset_ns);
		if (!o->perfetto)
			goto fail;
	}
	return o;
fail:
	err = errno;
	trace_outputs__free(o);
	errno = err;
	return NULL;
}

FILE *trace_outputs__stream(struct trace_outputs *o)
{
	if (!o || !o->opt->output)
		return stdout;
	return o->output;
}

bool trace_outputs__evidence_stats(const struct trace_outputs *o, struct evidence_quota_stats *s)
{
	return o && o->evidence && evidence__stats(o->evidence, s);
}

static int role_sort_index(const char *role)
{
	if (!strcmp(role, "kube-scheduler"))
		return 1;
	if (!strcmp(role, "kube-apiserver"))
		return 2;
	if (!strcmp(role, "etcd"))
		return 3;
	return 4;
}

void trace_outputs__process(struct trace_outputs *o, const char *role, pid_t pid, const char *exe,
			    const char *go_version, const char *module_version,
			    struct go_binary *gb)
{
	if (!o)
		return;
	if (o->perfetto)
		perfetto__process(o->perfetto, pid, role, role_sort_index(role));
	/* The binary is read only for the outputs that cite it. */
	identities__add(o->identities, role, pid, exe, go_version, module_version, gb,
			o->evidence || o->report);
}

void trace_outputs__data(struct trace_outputs *o, const struct actor *who,
			 const struct data_event *e)
{
	if (o && o->evidence)
		evidence__data(o->evidence, who, e);
}

void trace_outputs__message(struct trace_outputs *o, const struct actor *who,
			    const struct decoded_msg *msg)
{
	if (o && o->evidence)
		evidence__message(o->evidence, who, msg);
}

void trace_outputs__fsync(struct trace_outputs *o, const struct actor *who,
			  const struct fsync_event *e, const char *path)
{
	if (o && o->evidence)
		evidence__fsync(o->evidence, who, e, path);
}

/* The bind's spans (otlp_encode.h) handed to the exporter. */
static void export_spans(struct trace_outputs *o, const struct bind_view *v)
{
	struct otlp_source src = { .node = o->otlp_node, .identities = o->identities };
	size_t len;
	int n;

	pb_writer__reset(&o->otlp_spans);
	n = otlp__encode_bind(&o->otlp_spans, v, &src);
	if (n < 0 || (n > 0 && pb_writer__finish(&o->otlp_spans, &len))) {
		fprintf(stderr, "bindtrace: otlp: %s/%s: out of memory, its spans not sent\n",
			v->t->namespace_, v->t->name);
		return;
	}
	if (n > 0)
		otlp_exporter__send(o->otlp, o->otlp_spans.buf, len, n);
}

void trace_outputs__bind(struct trace_outputs *o, const struct bind_timeline *t)
{
	struct bind_view view;

	if (!o)
		return;
	identities__wait(o->identities);
	/* Read once, the same for every output. */
	bind_view__init(&view, t, o->wall_offset_ns);
	view.tracer_node = o->opt->node;
	if (o->perfetto)
		perfetto__bind(o->perfetto, &view);
	if (o->evidence && evidence__bind(o->evidence, &view, o->identities))
		o->errors++;
	if (o->report && report__bind(o->report, &view, o->identities))
		o->errors++;
	if (o->otlp)
		export_spans(o, &view);
}

bool trace_outputs__otlp_stats(struct trace_outputs *o, struct otlp_stats *s)
{
	if (!o || !o->otlp)
		return false;
	otlp_exporter__stats(o->otlp, s);
	return true;
}

/* --output: the file closed and opened again at its path. */
static int reopen_output(struct trace_outputs *o)
{
	int err = 0;

	if (o->output && output_file__close(o->output)) {
		err = -EIO;
		fprintf(stderr, "bindtrace: --output %s: not all was written before reopening\n",
			o->opt->output);
	}
	o->output = output_file__open_append(o->opt->output);
	if (o->output)
		buffer_output(o->output);
	if (!o->output) {
		err = -errno;
		o->errors++;
		if (!o->output_failed)
			fprintf(stderr,
				"bindtrace: --output %s: cannot reopen: %s (binds are not printed "
				"until a SIGHUP reopens it)\n",
				o->opt->output, strerror(-err));
		o->output_failed = true;
	}
	return err;
}

int trace_outputs__reopen(struct trace_outputs *o)
{
	int err = 0, e, i;

	if (o && o->opt->output)
		err = reopen_output(o);
	/* --evidence writes a directory per bind and holds nothing open; --report is written at
	 * exit. */
	if (!o || !o->opt->perfetto)
		return err;
	if (o->perfetto) { /* else an earlier reopen failed: tried again */
		e = perfetto__close(o->perfetto);
		err = err ? err : e;
	}
	o->perfetto = perfetto__open(o->opt->perfetto, o->wall_offset_ns);
	if (!o->perfetto) {
		o->errors++;
		return -errno; /* it said why; binds go on without it */
	}
	/* The new file's tracks named from the registry, as the first file's were. */
	for (i = 0; i < identities__count(o->identities); i++) {
		const struct process_identity *id = identities__at(o->identities, i);

		perfetto__process(o->perfetto, id->pid, id->role, role_sort_index(id->role));
	}
	return err;
}

/* "812 KiB", "3.4 MiB", "1.0 GiB" */
static const char *size_text(uint64_t bytes, char buf[32])
{
	if (bytes < 10ull << 20)
		snprintf(buf, 32, "%" PRIu64 " KiB", (bytes + 1023) >> 10);
	else if (bytes < 10ull << 30)
		snprintf(buf, 32, "%.1f MiB", (double)bytes / (1 << 20));
	else
		snprintf(buf, 32, "%.1f GiB", (double)bytes / (1 << 30));
	return buf;
}

int trace_outputs__finish(struct trace_outputs *o)
{
	struct evidence_quota_stats q;
	char a[32], b[32], c[32];
	int err = 0, e;

	if (!o)
		return 0;
	identities__wait(o->identities);
	if (o->output) {
		if (output_file__close(o->output)) {
			fprintf(stderr, "bindtrace: --output %s: not all was written\n",
				o->opt->output);
			err = -EIO;
		}
		o->output = NULL;
	}
	if (trace_outputs__evidence_stats(o, &q))
		fprintf(
		    stderr,
		    "bindtrace: --evidence %s: %" PRIu64 " binds kept (%s of at most %s), %" PRIu64
		    " removed to stay under it (%s)%s\n",
		    o->opt->evidence, q.dirs, size_text(q.bytes, a), size_text(q.max_bytes, b),
		    q.removed, size_text(q.removed_bytes, c),
		    q.left ? "; some left in place: they hold files bindtrace did not write" : "");
	if (o->perfetto) {
		e = perfetto__close(o->perfetto);
		o->perfetto = NULL;
		err = err ? err : e;
	}
	if (o->report) {
		e = report__finish(o->report);
		err = err ? err : e;
	}
	otlp_exporter__stop(o->otlp, stderr);
	if (!err && o->errors)
		err = -EIO; /* each was said when it happened */
	return err;
}

void trace_outputs__free(struct trace_outputs *o)
{
	if (!o)
		return;
	identities__free(o->identities);
	if (o->output)
		fclose(o->output);
	perfetto__close(o->perfetto);
	evidence__close(o->evidence);
	report__close(o->report);
	otlp_exporter__free(o->otlp);
	pb_writer__free(&o->otlp_spans);
	free(o);
}
