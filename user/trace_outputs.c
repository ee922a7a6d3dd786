/* The file outputs of the bind tracer. Each is off unless its option is given. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_outputs.h"

struct trace_outputs {
	const struct trace_options *opt;
	int64_t wall_offset_ns;
};

struct trace_outputs *trace_outputs__new(const struct trace_options *opt, int64_t wall_offset_ns)
{
	struct trace_outputs *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->opt = opt;
	o->wall_offset_ns = wall_offset_ns;
	if (opt->perfetto || opt->evidence || opt->report) {
		fprintf(stderr, "bindtrace: --perfetto, --evidence and --report are not built yet\n");
		free(o);
		errno = ENOSYS;
		return NULL;
	}
	return o;
}

void trace_outputs__process(struct trace_outputs *o, const char *role, pid_t pid, const char *exe,
			    const char *go_version, const char *module_version,
			    struct go_binary *gb)
{
	(void)o, (void)role, (void)pid, (void)exe, (void)go_version, (void)module_version, (void)gb;
}

void trace_outputs__data(struct trace_outputs *o, const struct actor *who,
			 const struct data_event *e)
{
	(void)o, (void)who, (void)e;
}

void trace_outputs__message(struct trace_outputs *o, const struct actor *who,
			    const struct decoded_msg *msg)
{
	(void)o, (void)who, (void)msg;
}

void trace_outputs__fsync(struct trace_outputs *o, const struct actor *who,
			  const struct fsync_event *e, const char *path)
{
	(void)o, (void)who, (void)e, (void)path;
}

void trace_outputs__bind(struct trace_outputs *o, const struct bind_timeline *t)
{
	(void)o, (void)t;
}

int trace_outputs__finish(struct trace_outputs *o)
{
	(void)o;
	return 0;
}

void trace_outputs__free(struct trace_outputs *o)
{
	free(o);
}
