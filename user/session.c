/* One tracing session: the capture BPF object from open to teardown. See session.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture.skel.h"
#include "session.h"
#include "util.h"

struct session {
	struct session_options opt;
	struct session_handlers h;
	struct capture_bpf *skel;
	struct ring_buffer *ring;
	struct bpf_link **tracepoints;
	size_t n_tracepoints;
	uint64_t events;
};

/* Set by SIGINT/SIGTERM and session__stop, and by SIGHUP: one session runs per process. */
static volatile sig_atomic_t stopping, hangup;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		hangup = 1;
	else
		stopping = 1;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct event_header *hdr = data;
	const struct data_event *e = data;

	if (size < sizeof(*hdr))
		return 0;
	s->events++;
	switch (hdr->type) {
	case EVENT_DATA:
		if (size >= sizeof(*e) && e->len <= size - sizeof(*e) && s->h.data)
			s->h.data(s->h.ctx, e);
		break;
	case EVENT_FSYNC:
		if (size >= sizeof(struct fsync_event) && s->h.fsync)
			s->h.fsync(s->h.ctx, data);
		break;
	case EVENT_CALL:
		if (size >= sizeof(struct call_event) && s->h.call)
			s->h.call(s->h.ctx, data);
		break;
	}
	return 0;
}

static int attach_tracepoints(struct session *s)
{
	struct bpf_program *prog;
	size_t n = 0;

	bpf_object__for_each_program (prog, s->skel->obj)
		n += bpf_program__type(prog) == BPF_PROG_TYPE_TRACEPOINT;
	s->tracepoints = calloc(n ? n : 1, sizeof(*s->tracepoints));
	if (!s->tracepoints) {
		fprintf(stderr, "%s: out of memory\n", s->opt.name);
		return -ENOMEM;
	}
	bpf_object__for_each_program (prog, s->skel->obj) {
		struct bpf_link *link;

		if (bpf_program__type(prog) != BPF_PROG_TYPE_TRACEPOINT)
			continue;
		link = bpf_program__attach(prog);
		if (!link) {
			int err = -errno;

			fprintf(stderr, "%s: attach %s: %s\n", s->opt.name,
				bpf_program__section_name(prog), strerror(-err));
			return err;
		}
		s->tracepoints[s->n_tracepoints++] = link;
	}
	return 0;
}

static int load(struct session *s)
{
	int err;

	s->skel = capture_bpf__open();
	if (!s->skel) {
		fprintf(stderr, "%s: open BPF object: %s\n", s->opt.name, strerror(errno));
		return -errno;
	}
	bpf_map__set_max_entries(s->skel->maps.events, (__u32)s->opt.ringbuf_bytes);
	s->skel->rodata->wake_bytes = s->opt.ringbuf_bytes / 8;
	s->skel->rodata->uprobe_any_pid = s->opt.uprobe_any_pid;
	s->skel->rodata->capture_syscalls = !s->opt.no_syscall_data;
	err = capture_bpf__load(s->skel);
	if (err)
		fprintf(stderr, "%s: load BPF programs: %s (see bindtrace --check)\n", s->opt.name,
			strerror(-err));
	return err;
}

struct session *session__open(const struct session_options *opt)
{
	struct session *s = calloc(1, sizeof(*s));
	const char *tracefs;
	bool mounted;
	int err;

	if (!s) {
		fprintf(stderr, "%s: out of memory\n", opt->name);
		return NULL;
	}
	s->opt = *opt;
	err = util__ensure_tracefs(&tracefs, &mounted);
	if (err) {
		fprintf(stderr, "%s: tracefs: %s (run as root; see bindtrace --check)\n", opt->name,
			strerror(-err));
		goto fail;
	}
	if (load(s) || attach_tracepoints(s))
		goto fail;
	s->ring = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
	if (!s->ring) {
		fprintf(stderr, "%s: ring buffer: %s\n", opt->name, strerror(errno));
		goto fail;
	}
	return s;
fail:
	session__close(s);
	return NULL;
}

struct capture_bpf *session__bpf(struct session *s)
{
	return s->skel;
}

int session__add_target(struct session *s, pid_t pid, bool fsync)
{
	__u32 key = (__u32)pid;
	__u8 one = 1;
	int err;

	err = bpf_map__update_elem(s->skel->maps.targets, &key, sizeof(key), &one, sizeof(one),
				   BPF_ANY);
	if (!err && fsync)
		err = bpf_map__update_elem(s->skel->maps.fsync_targets, &key, sizeof(key), &one,
					   sizeof(one), BPF_ANY);
	return err;
}

void session__remove_target(struct session *s, pid_t pid)
{
	__u32 key = (__u32)pid;

	bpf_map__delete_elem(s->skel->maps.targets, &key, sizeof(key), 0);
	bpf_map__delete_elem(s->skel->maps.fsync_targets, &key, sizeof(key), 0);
}

int session__run(struct session *s, const struct session_handlers *handlers, uint64_t deadline_ns)
{
	int err = 0;

	s->h = *handlers;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (s->h.hangup)
		signal(SIGHUP, on_signal);
	while (!stopping) {
		uint64_t now;

		err = ring_buffer__poll(s->ring, SESSION_POLL_MS);
		if (err >= 0)
			err = ring_buffer__consume(s->ring); /* what came without a wakeup */
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "%s: ring buffer: %s\n", s->opt.name, strerror(-err));
			return err;
		}
		now = util__monotonic_ns();
		if (s->h.between)
			s->h.between(s->h.between_ctx, now);
		if (hangup && s->h.hangup) {
			hangup = 0;
			s->h.hangup(s->h.between_ctx);
		}
		if (deadline_ns && now >= deadline_ns)
			break;
	}
	ring_buffer__consume(s->ring);
	return 0;
}

void session__stop(struct session *s)
{
	(void)s;
	stopping = 1;
}

uint64_t session__events(const struct session *s)
{
	return s->events;
}

void session__counters(struct session *s, uint64_t out[COUNTER_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), i;
	__u64 *values;
	__u32 k;

	memset(out, 0, sizeof(uint64_t) * COUNTER_MAX);
	if (ncpu <= 0)
		return;
	values = calloc((size_t)ncpu, sizeof(*values));
	if (!values)
		return;
	for (k = 0; k < COUNTER_MAX; k++) {
		if (bpf_map__lookup_elem(s->skel->maps.counters, &k, sizeof(k), values,
					 sizeof(*values) * (size_t)ncpu, 0))
			continue;
		for (i = 0; i < ncpu; i++)
			out[k] += values[i];
	}
	free(values);
}

void session__close(struct session *s)
{
	size_t i;

	if (!s)
		return;
	ring_buffer__free(s->ring);
	for (i = 0; i < s->n_tracepoints; i++)
		bpf_link__destroy(s->tracepoints[i]);
	free(s->tracepoints);
	capture_bpf__destroy(s->skel);
	free(s);
}
