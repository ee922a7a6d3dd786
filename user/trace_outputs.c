/* The file outputs of the bind tracer: routes what the tracer sees to --perfetto (perfetto.c),
 * --evidence (evidence.c) and --report (report.c), and reads each traced binary's identity
 * once for the two that cite it. Each output is off unless its option is given.
 *
 * Hashing the binaries (some 200 MB for a control plane) runs on a thread per process from
 * trace_outputs__process() on, so attaching is not delayed; the first bind written waits for
 * what is not done yet. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence.h"
#include "perfetto.h"
#include "report.h"
#include "trace_outputs.h"

/* Longest a bind stays open in the correlator (max_open_ns in trace.c), plus slack: how long
 * the evidence rings keep events; --linger adds to it. */
#define OUTPUTS_RETENTION_NS (12ull * 1000000000ull)

struct pending_identity {
	struct process_identity id;
	char exe_path[64]; /* /proc/PID/exe */
	pthread_t thread;
	bool running;	 /* thread started, not joined */
	bool registered; /* handed to the outputs */
};

struct trace_outputs {
	const struct trace_options *opt;
	int64_t wall_offset_ns;
	struct perfetto *perfetto;
	struct evidence *evidence;
	struct report *report;
	struct pending_identity **identities;
	int n_identities;
	struct {
		pid_t pid;
		char role[32];
	} * processes; /* to name the tracks of a reopened --perfetto file */
	int n_processes;
	int errors;
};

struct trace_outputs *trace_outputs__new(const struct trace_options *opt, int64_t wall_offset_ns)
{
	struct trace_outputs *o = calloc(1, sizeof(*o));
	int err;

	if (!o)
		return NULL;
	o->opt = opt;
	o->wall_offset_ns = wall_offset_ns;
	if (opt->evidence) {
		o->evidence =
		    evidence__open(opt->evidence, wall_offset_ns,
				   OUTPUTS_RETENTION_NS + (uint64_t)opt->linger_ms * 1000000ull);
		if (!o->evidence)
			goto fail;
	}
	if (opt->report) {
		o->report = report__open(opt->report, opt->pod_ns, opt->pod_name);
		if (!o->report)
			goto fail;
	}
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

static void *identity_thread(void *arg)
{
	struct pending_identity *p = arg;

	/* The file the process runs, even if its path now names another; else that path. */
	process_identity__read_file(&p->id, p->exe_path);
	if (p->id.why[0] && p->id.exe[0])
		process_identity__read_file(&p->id, p->id.exe);
	return NULL;
}

/* Wait for the identities still being read and hand them to the outputs. */
static void identities__register(struct trace_outputs *o)
{
	int i;

	for (i = 0; i < o->n_identities; i++) {
		struct pending_identity *p = o->identities[i];

		if (p->registered)
			continue;
		if (p->running) {
			pthread_join(p->thread, NULL);
			p->running = false;
		}
		process_identity__seal(&p->id);
		if (o->evidence)
			evidence__process(o->evidence, &p->id);
		if (o->report)
			report__process(o->report, &p->id);
		p->registered = true;
	}
}

void trace_outputs__process(struct trace_outputs *o, const char *role, pid_t pid, const char *exe,
			    const char *go_version, const char *module_version,
			    struct go_binary *gb)
{
	struct pending_identity **v, *p;

	if (!o)
		return;
	if (o->perfetto) {
		void *more =
		    realloc(o->processes, (size_t)(o->n_processes + 1) * sizeof(*o->processes));

		perfetto__process(o->perfetto, pid, role, role_sort_index(role));
		if (more) {
			o->processes = more;
			o->processes[o->n_processes].pid = pid;
			snprintf(o->processes[o->n_processes].role,
				 sizeof(o->processes[o->n_processes].role), "%s", role);
			o->n_processes++;
		}
	}
	if (!o->evidence && !o->report)
		return;
	v = realloc(o->identities, (size_t)(o->n_identities + 1) * sizeof(*v));
	if (!v)
		return;
	o->identities = v;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	o->identities[o->n_identities++] = p;
	/* The Go facts now: gb may be closed once this returns. */
	process_identity__init(&p->id, role, pid, exe, go_version, module_version, gb);
	snprintf(p->exe_path, sizeof(p->exe_path), "/proc/%d/exe", (int)pid);
	if (pthread_create(&p->thread, NULL, identity_thread, p) == 0)
		p->running = true;
	else
		identity_thread(p);
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

void trace_outputs__bind(struct trace_outputs *o, const struct bind_timeline *t)
{
	struct bind_view view;

	if (!o)
		return;
	identities__register(o);
	/* Read once, the same for every output. */
	bind_view__init(&view, t, o->wall_offset_ns);
	if (o->perfetto)
		perfetto__bind(o->perfetto, &view);
	if (o->evidence && evidence__bind(o->evidence, &view))
		o->errors++;
	if (o->report && report__bind(o->report, &view))
		o->errors++;
}

int trace_outputs__reopen(struct trace_outputs *o)
{
	int err = 0, i;

	/* --evidence writes a directory per bind and holds nothing open; --report is written at
	 * exit. */
	if (!o || !o->perfetto)
		return 0;
	err = perfetto__close(o->perfetto);
	o->perfetto = perfetto__open(o->opt->perfetto, o->wall_offset_ns);
	if (!o->perfetto) {
		o->errors++;
		return -errno; /* it said why; binds go on without it */
	}
	for (i = 0; i < o->n_processes; i++)
		perfetto__process(o->perfetto, o->processes[i].pid, o->processes[i].role,
				  role_sort_index(o->processes[i].role));
	return err;
}

int trace_outputs__finish(struct trace_outputs *o)
{
	int err = 0, e;

	if (!o)
		return 0;
	identities__register(o);
	if (o->perfetto) {
		e = perfetto__close(o->perfetto);
		o->perfetto = NULL;
		err = err ? err : e;
	}
	if (o->report) {
		e = report__finish(o->report);
		err = err ? err : e;
	}
	if (!err && o->errors)
		err = -EIO; /* each was said when it happened */
	return err;
}

void trace_outputs__free(struct trace_outputs *o)
{
	int i;

	if (!o)
		return;
	for (i = 0; i < o->n_identities; i++) {
		if (o->identities[i]->running)
			pthread_join(o->identities[i]->thread, NULL);
		process_identity__clear(&o->identities[i]->id);
		free(o->identities[i]);
	}
	free(o->identities);
	free(o->processes);
	perfetto__close(o->perfetto);
	evidence__close(o->evidence);
	report__close(o->report);
	free(o);
}
