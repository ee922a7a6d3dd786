/* The golden test: every recorded capture in tests/fixtures replayed the way the tracer takes in
 * its ring buffer — an actor per connection from the record's pid, comm, addresses and socket,
 * then the tracer's own dispatch (dispatch.c: dispatch__conn, dispatch__data, dispatch__fsync):
 * one conn_decoder per connection finding the gaps from the stream offsets, decoded messages to
 * the outputs and the correlator, etcd's fsyncs (`capture --fsync` records) to both, the
 * correlator ticked every 50 ms of capture time
 * with the tracer's linger — and what every writer made of it compared byte for byte with the
 * committed expectations in tests/golden/FIXTURE/: the human timeline (timeline.txt), --summary
 * (summary.txt), --json (timeline.jsonl), --perfetto (trace.json), --report of one pod
 * (report.md, report.md.svg), the --evidence bundle (evidence/, every file), every decoded
 * message as the message writer of the evidence and `decode --json` puts it (messages.jsonl: what
 * the fixtures without a bind yield) and the files' modes (files.txt); replay.txt holds the
 * replay's own counts. It is there so that moving the outputs around can be shown to keep what
 * they write.
 *
 * Deterministic through its inputs, nothing masked: TZ is set to a zone 5 h 30 min east of UTC,
 * since no output may depend on the local one (they print UTC); the wall-clock offset is the
 * capture's own where it recorded wall_ns, else a fixed one; the binaries' identities are read
 * from committed stand-in files (tests/golden/stand-in/) and registered under pids beyond
 * PID_MAX_LIMIT, since the outputs read /proc/PID/exe first and a fixture's pid may be a live
 * process on this host; where the scheduler is in the capture, its bind call is cited from a
 * fixed stack just before each Binding it sends, as the tracer's uprobe on the call would.
 *
 * Runs from the top of the tree. GOLDEN_UPDATE=1 rewrites the expectations from today's outputs
 * (review them with git diff); otherwise a difference prints where each file first differs and a
 * unified diff (GOLDEN_DIFF_LINES lines per file, default 40), and fails. GOLDEN_KEEP=1 keeps
 * the outputs (in $TMPDIR, else /tmp). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "citation.h"
#include "correlate.h"
#include "decode.h"
#include "dispatch.h"
#include "endpoint.h"
#include "message_json.h"
#include "slurp.h"
#include "streams.h"
#include "summary.h"
#include "timeline.h"
#include "trace_outputs.h"
#include "util.h"

#define FIXTURES "tests/fixtures"
#define GOLDEN "tests/golden"
#define STAND_IN GOLDEN "/stand-in"
#define PID_MAX_LIMIT 4194304		  /* the kernel gives no pid at or above 2^22 */
#define TICK_NS 50000000ull		  /* the tracer ticks its correlator every 50 ms */
#define LINGER_MS 500			  /* trace's default --linger */
#define MAX_OPEN_NS 10000000000ull	  /* trace.c's max_open_ns */
#define FIXED_WALL_OFFSET_NS 3723456789ll /* 1 h 2 min 3.456789 s: not a round number */

/* Each fixture, the pod whose --report is written, and how many binds it gives. */
static const struct golden_case {
	const char *fixture; /* tests/fixtures/NAME.jsonl; expectations in tests/golden/NAME/ */
	const char *report_ns, *report_name;
	int binds;
} cases[] = {
	/* The whole path, recorded on the test bed (k8s v1.33.13, etcd v3.6.16) with `bindtrace
	 * capture --json --fsync` of kube-scheduler, kube-apiserver, etcd and a `kubectl get pods
	 * -w`: full-1, full-2 and full-3 bound, each with its Txn, WAL fsync, etcd watch event and
	 * the MODIFIED read by both watchers (the scheduler's informer and kubectl); full-unsched
	 * fits no node; a second Binding of full-1 POSTed by an untraced kubectl gets a 409 (the
	 * apiserver's side alone). Kept: the nine connections that carry them, whole, and etcd's
	 * fsyncs; "client" added from the listening ports. The report: full-1, whose bind the 409
	 * does not replace. */
	{ "bind_full", "default", "full-1", 5 },
	/* bind_full with etcd answering before its WAL fsync ended, as a member of several does
	 * when the others' quorum made the entry durable first (seen on the HA bed): full-1's
	 * fsync ends 2.5 ms after the answer, full-2's begins 1.2 ms after it. Each says so in
	 * place of the fsync stage. */
	{ "bind_late_fsync", "default", "full-1", 5 },
	/* The scheduler's side over HTTP/2: three 201s and a Binding reset before its answer. */
	{ "bind_h2", "default", "web-0", 4 },
	/* The same, caught 1500 bytes into each direction: the tracer takes the missing start of
	 * a stream for lost bytes, so its binds carry a capture gap. */
	{ "bind_h2_midstream", "default", "web-5", 2 },
	/* bind_h2 cut into 37-byte chunks; the report of the Binding that got no answer. */
	{ "bind_h2_split", "default", "late", 4 },
	{ "bind_http1", "default", "web-h1", 1 },
	/* A real capture of kube-apiserver attached mid-connection: its bind, etcd write and
	 * two watchers. */
	{ "bind_midconn", "default", "seamc", 1 },
	/* The apiserver's etcd connection alone: Txns, watch events, a Secret; no Binding, so
	 * no bind (messages.jsonl is what they yield). */
	{ "etcd_gap", NULL, NULL, 0 },
	{ "etcd_txn", NULL, NULL, 0 },
	/* 50 binds (every tenth a 409) and their Txns, and the reset Binding; the report of a
	 * 409. */
	{ "many_binds", "default", "web-9", 51 },
	/* etcd's peer traffic (3 members, peer TLS) from the streams' start in v3.7.3 and
	 * v3.6.16, and met mid-way: raft messages, no bind. */
	{ "raft_midstream", NULL, NULL, 0 },
	{ "raft_v36", NULL, NULL, 0 },
	{ "raft_v37", NULL, NULL, 0 },
	/* Watchers alone: no bind. */
	{ "watch_http1_midway", NULL, NULL, 0 },
	{ "watch_json", NULL, NULL, 0 },
	/* The scheduler's watches made again on a connection met mid-way, their content-type an
	 * HPACK entry never seen: BOOKMARKs read as protobuf. */
	{ "watch_remade_midconn", NULL, NULL, 0 },
	{ "watch_table", NULL, NULL, 0 },
};

/* ---- Files ---- */

static char tmp[256]; /* $TMPDIR/test_golden.XXXXXX */

/* dir/name into buf (PATH_LEN bytes); a path that does not fit fails the test. */
#define PATH_LEN 4096
static char *join(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_LEN, "%s/%s", dir, name);

	CHECK(n > 0 && n < PATH_LEN, "path %s/%s too long", dir, name);
	return buf;
}

/* The regular files under root (and its directories, with a trailing '/', when asked), as
 * paths relative to it, sorted, with their modes. */
struct file_list {
	char **paths;
	int *modes;
	int n;
};

static struct file_list *walking;
static size_t walking_root_len;
static bool walking_dirs;

static int list_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct file_list *l = walking;
	char name[PATH_LEN];

	if (type != FTW_F && !(type == FTW_D && walking_dirs && ftw->level > 0))
		return 0;
	if (snprintf(name, sizeof(name), "%s%s", path + walking_root_len + 1,
		     type == FTW_D ? "/" : "") >= (int)sizeof(name))
		return 0;
	l->paths = realloc(l->paths, (size_t)(l->n + 1) * sizeof(*l->paths));
	l->modes = realloc(l->modes, (size_t)(l->n + 1) * sizeof(*l->modes));
	l->paths[l->n] = strdup(name);
	l->modes[l->n] = (int)(st->st_mode & 07777);
	l->n++;
	return 0;
}

static void file_list__read(struct file_list *l, const char *root, bool dirs)
{
	memset(l, 0, sizeof(*l));
	walking = l;
	walking_dirs = dirs;
	walking_root_len = strlen(root);
	nftw(root, list_one, 16, FTW_PHYS);
	/* Insertion sort of paths and modes together: a few hundred entries. */
	for (int i = 1; i < l->n; i++)
		for (int j = i; j > 0 && strcmp(l->paths[j - 1], l->paths[j]) > 0; j--) {
			char *p = l->paths[j];
			int m = l->modes[j];

			l->paths[j] = l->paths[j - 1];
			l->modes[j] = l->modes[j - 1];
			l->paths[j - 1] = p;
			l->modes[j - 1] = m;
		}
}

static void file_list__free(struct file_list *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->paths[i]);
	free(l->paths);
	free(l->modes);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	return remove(path);
}

static void rm_tree(const char *root)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int mkdir_parents(const char *path)
{
	char buf[PATH_LEN];

	util__copy(buf, sizeof(buf), path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

static int copy_file(const char *from, const char *to)
{
	size_t len;
	char *text = slurp(from, &len);
	FILE *f;
	int err = 0;

	if (!text)
		return -errno;
	err = mkdir_parents(to);
	f = err ? NULL : fopen(to, "wb");
	if (!f || fwrite(text, 1, len, f) != len)
		err = -EIO;
	if (f && fclose(f))
		err = -EIO;
	free(text);
	return err;
}

/* ---- The replay: each ring buffer event through the tracer's dispatch, without BPF ---- */

struct conn_state {
	struct dispatch_conn *conn; /* the dispatch's: actor and decoder */
	bool seen[2];		    /* a direction's first chunk was fed */
};

struct replay {
	const struct golden_case *gc;
	struct correlator *corr;
	struct trace_outputs *outputs;
	struct summary *summary;
	struct dispatch *dispatch;
	struct streams conns; /* per (pid, conn): the connection's state */
	FILE *timeline, *json, *messages_out;
	json_t *recs; /* the fixture's records */
	int64_t wall_offset_ns;
	uint64_t records, data_bytes, messages, calls, fsyncs;
	uint64_t gap_bytes_recorded, gap_bytes_found, bytes_before_first;
	int n_conns, binds;
};

/* The stack of the scheduler's bind call, as dispatch.c's run_call symbolises it from a -trimpath
 * build of v1.33.13 (the lines are that release's: schedule_one.go:966 is the bind step's call
 * to RunBindPlugins, :309 the binding cycle's call to it), cited by citation__choose as the
 * tracer cites it. */
static const struct frame_line cited_frames[] = {
	{ 0x1c4a2e0, "k8s.io/client-go/kubernetes/typed/core/v1.(*pods).Bind",
	  "k8s.io/client-go/kubernetes/typed/core/v1/pod_expansion.go", 49 },
	{ 0x2f81b93,
	  "k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder.DefaultBinder.Bind",
	  "k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder/default_binder.go", 58 },
	{ 0x2f81d05,
	  "k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder.(*DefaultBinder).Bind",
	  "<autogenerated>", 1 },
	{ 0x2fe0c41,
	  "k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).runBindPlugin",
	  "k8s.io/kubernetes/pkg/scheduler/framework/runtime/framework.go", 1330 },
	{ 0x2fe08b7,
	  "k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).RunBindPlugins",
	  "k8s.io/kubernetes/pkg/scheduler/framework/runtime/framework.go", 1306 },
	{ 0x30127aa, "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).bind",
	  "k8s.io/kubernetes/pkg/scheduler/schedule_one.go", 966 },
	{ 0x3010f13, "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).bindingCycle",
	  "k8s.io/kubernetes/pkg/scheduler/schedule_one.go", 309 },
	{ 0x300f5c8, "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).ScheduleOne.func2",
	  "k8s.io/kubernetes/pkg/scheduler/schedule_one.go", 127 },
	{ 0x4792a1, "runtime.goexit", "runtime/asm_amd64.s", 1700 },
};

/* A Binding the scheduler sends: its bind call came just before (the uprobe on (*pods).Bind). */
static void maybe_call(struct replay *r, const struct actor *who, const struct decoded_msg *m)
{
	struct citation ci = { .known = true };

	if (who->role != ROLE_SCHEDULER || m->kind != DECODED_REQUEST || m->dir != CONN_DIR_OUT ||
	    m->body_kind != BODY_K8S || m->body.k8s.kind != K8S_KIND_BINDING)
		return;
	util__copy(ci.kubernetes_version, sizeof(ci.kubernetes_version), "v1.33.13");
	/* A made-up commit: the writers' handling of one (JSON, "issued at", the report's link). */
	util__copy(ci.commit, sizeof(ci.commit), "0123456789abcdef0123456789abcdef01234567");
	util__copy(ci.go_version, sizeof(ci.go_version), "go1.24.6");
	util__copy(ci.probe, sizeof(ci.probe), cited_frames[0].func);
	ci.tid = who->pid;
	ci.mono_ns = m->ts_first_ns - 4000;
	ci.n_frames = (int)(sizeof(cited_frames) / sizeof(cited_frames[0]));
	memcpy(ci.frames, cited_frames, sizeof(cited_frames));
	citation__choose(&ci);
	correlator__call(r->corr, m->body.k8s.meta.namespace, m->body.k8s.meta.name, &ci);
	r->calls++;
}

/* The dispatch's tap: every decoded message, before the outputs and the correlator have it. */
static void on_decoded(const struct actor *who, const struct decoded_msg *m, void *ctx)
{
	struct replay *r = ctx;
	json_t *j = json_object();

	/* Every decoded message through the message writer the evidence and `decode --json`
	 * share (message_json.h): what the fixtures without a bind yield. */
	json_object_set_new(j, "pid", json_integer(who->pid));
	json_object_set_new(j, "conn", json_integer((json_int_t)who->conn));
	json_object_set_new(j, "message", message_json__new(m));
	json_dumpf(j, r->messages_out, JSON_COMPACT);
	fputc('\n', r->messages_out);
	json_decref(j);
	r->messages++;
	maybe_call(r, who, m);
}

static void on_bind(const struct bind_timeline *t, void *ctx)
{
	struct replay *r = ctx;
	struct bind_view view;

	r->binds++;
	bind_view__init(&view, t, r->wall_offset_ns);
	summary__add(r->summary, &view);
	timeline__print(r->timeline, &view);
	timeline__print_json(r->json, &view);
	trace_outputs__bind(r->outputs, t);
}

static enum process_role role_of(const char *comm)
{
	if (!strcmp(comm, "kube-scheduler"))
		return ROLE_SCHEDULER;
	if (!strcmp(comm, "kube-apiserver"))
		return ROLE_APISERVER;
	if (!strcmp(comm, "etcd"))
		return ROLE_ETCD;
	return ROLE_WATCHER; /* anything else the tracer follows is a watcher it attached to */
}

static const char *str_of(json_t *j, const char *key)
{
	const char *s = json_string_value(json_object_get(j, key));

	return s ? s : "";
}

static uint64_t u64_of(json_t *j, const char *key)
{
	return (uint64_t)json_integer_value(json_object_get(j, key));
}

/* A connection as the tracer's dispatch knows it: the actor from the record (the tracer takes
 * it from its target and the event), which end is the client from the record's "client". */
static struct conn_state *conn_of(struct replay *r, json_t *rec)
{
	uint32_t pid = (uint32_t)u64_of(rec, "pid");
	uint64_t conn = u64_of(rec, "conn");
	struct stream *s = streams__get(&r->conns, pid, conn, 0);
	const char *client = str_of(rec, "client");
	struct actor who = { .pid = (pid_t)pid, .conn = conn };
	struct conn_state *cs;
	bool made;

	CHECK(s != NULL, "%s: connection table", r->gc->fixture);
	if (!s)
		return NULL;
	if (s->user)
		return s->user;
	util__copy(who.comm, sizeof(who.comm), str_of(rec, "comm"));
	who.role = role_of(who.comm);
	CHECK(endpoint__parse(str_of(rec, "laddr"), &who.local) == 0 &&
		  endpoint__parse(str_of(rec, "raddr"), &who.remote) == 0,
	      "%s: a record's addresses", r->gc->fixture);
	cs = calloc(1, sizeof(*cs));
	CHECK(cs != NULL, "%s: out of memory", r->gc->fixture);
	if (!cs)
		return NULL;
	/* The tracer knows which end dialed from its listening ports; a capture says so in
	 * "client" where it knew. Without it the decoder finds out, as `bindtrace decode` does. */
	cs->conn = dispatch__conn(r->dispatch, &who,
				  !strcmp(client, "local")    ? CONN_DIR_OUT
				  : !strcmp(client, "remote") ? CONN_DIR_IN
							      : -1,
				  &made);
	CHECK(cs->conn != NULL && made, "%s: the dispatch's connection (pid %u, conn %" PRIu64 ")",
	      r->gc->fixture, pid, conn);
	if (!cs->conn) {
		free(cs);
		return NULL;
	}
	s->user = cs;
	r->n_conns++;
	return cs;
}

static void replay__data(struct replay *r, json_t *rec)
{
	const char *b64 = str_of(rec, "data");
	int dir = !strcmp(str_of(rec, "dir"), "in") ? 1 : 0;
	struct conn_state *cs = conn_of(r, rec);
	const struct actor *who;
	size_t n = strlen(b64);
	struct data_event *e = calloc(1, sizeof(*e) + n);
	long len;
	int64_t missed;

	if (!cs || !e) {
		free(e);
		return;
	}
	who = dispatch_conn__who(cs->conn);
	len = util__base64_decode(b64, n, e->data);
	CHECK(len >= 0 && (uint64_t)len == u64_of(rec, "len"), "%s: a record's data (%ld bytes)",
	      r->gc->fixture, len);
	if (len < 0)
		len = 0;
	e->hdr.type = EVENT_DATA;
	e->hdr.pid = (__u32)who->pid;
	e->hdr.tid = (__u32)u64_of(rec, "tid");
	e->hdr.ts_ns = u64_of(rec, "ts_ns");
	util__copy(e->hdr.comm, sizeof(e->hdr.comm), who->comm);
	e->conn = who->conn;
	e->offset = u64_of(rec, "offset");
	e->len = (__u32)len;
	e->fd = (__s32)u64_of(rec, "fd");
	e->dir = (__u8)dir;
	e->source = !strcmp(str_of(rec, "source"), "syscall") ? SOURCE_SYSCALL : SOURCE_TLS;
	e->family = who->local.family;
	memcpy(e->laddr, who->local.addr, sizeof(e->laddr));
	memcpy(e->raddr, who->remote.addr, sizeof(e->raddr));
	e->lport = who->local.port;
	e->rport = who->remote.port;
	r->data_bytes += e->len;

	/* dispatch.c's on_data from here: the tracer's own code. */
	missed = dispatch__data(r->dispatch, cs->conn, e);
	if (missed > 0) {
		if (!cs->seen[e->dir])
			r->bytes_before_first += (uint64_t)missed;
		else
			r->gap_bytes_found += (uint64_t)missed;
	}
	cs->seen[e->dir] = true;
	free(e);
}

/* An fsync or fdatasync of a traced etcd, as `capture --json --fsync` records it, to the
 * dispatch as the tracer's poll loop hands it over (the tracer asks only etcd for its fsyncs; the
 * file is the one the capture read from /proc/PID/fd, as the tracer does). */
static void replay__fsync(struct replay *r, json_t *rec)
{
	struct fsync_event e = {};
	struct actor who = { .role = ROLE_ETCD };
	const char *path = str_of(rec, "file");
	size_t i;
	json_t *other;

	who.pid = (pid_t)u64_of(rec, "pid");
	/* A capture names a process's comm on its data events only. */
	json_array_foreach(r->recs, i, other)
	{
		if (json_object_get(other, "comm") && (pid_t)u64_of(other, "pid") == who.pid) {
			util__copy(who.comm, sizeof(who.comm), str_of(other, "comm"));
			break;
		}
	}
	if (role_of(who.comm) != ROLE_ETCD)
		return;
	e.hdr.type = EVENT_FSYNC;
	e.hdr.pid = (__u32)who.pid;
	e.hdr.tid = (__u32)u64_of(rec, "tid");
	e.hdr.ts_ns = u64_of(rec, "ts_ns");
	util__copy(e.hdr.comm, sizeof(e.hdr.comm), who.comm);
	e.start_ns = u64_of(rec, "start_ns");
	e.ret = (__s64)json_integer_value(json_object_get(rec, "ret"));
	e.fd = (__s32)u64_of(rec, "fd");
	e.datasync = !strcmp(str_of(rec, "event"), "fdatasync");
	r->fsyncs++;
	dispatch__fsync(r->dispatch, &who, &e, path);
}

static json_t *fixture__load(const char *path)
{
	json_t *recs = json_array();
	size_t len;
	char *text = slurp(path, &len), *line, *save = NULL;

	CHECK(text != NULL, "read %s: %s", path, strerror(errno));
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		json_error_t jerr;
		json_t *j = json_loads(line, 0, &jerr);

		CHECK(json_is_object(j), "%s: a record: %s", path, jerr.text);
		if (json_is_object(j))
			json_array_append_new(recs, j);
		else
			json_decref(j);
	}
	free(text);
	return recs;
}

/* The binaries the tracer would have attached to: one identity per traced role, from a
 * committed stand-in file, in the order trace.c registers its targets. */
static void register_identities(struct replay *r, json_t *recs)
{
	static const struct {
		enum process_role role;
		const char *go_version, *module_version;
	} roles[] = {
		{ ROLE_SCHEDULER, "go1.24.6", "v1.33.13" },
		{ ROLE_APISERVER, "go1.24.6", "v1.33.13" },
		{ ROLE_ETCD, "go1.23.12", "v3.6.4" },
	};
	size_t i, k;
	json_t *rec;

	for (k = 0; k < sizeof(roles) / sizeof(roles[0]); k++) {
		json_array_foreach(recs, i, rec)
		{
			const char *name = process_role__name(roles[k].role);
			char exe[256];

			if (role_of(str_of(rec, "comm")) != roles[k].role ||
			    !json_object_get(rec, "pid"))
				continue;
			snprintf(exe, sizeof(exe), STAND_IN "/%s", name);
			trace_outputs__process(r->outputs, name,
					       (pid_t)(u64_of(rec, "pid") + PID_MAX_LIMIT), exe,
					       roles[k].go_version, roles[k].module_version, NULL);
			break;
		}
	}
}

static int write_replay_counts(const struct replay *r, const char *path)
{
	struct correlator_stats st;
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	correlator__stats(r->corr, &st);
	fprintf(f, "fixture %s.jsonl\n", r->gc->fixture);
	fprintf(f, "records %" PRIu64 "\n", r->records);
	fprintf(f, "connections %d\n", r->n_conns);
	fprintf(f, "data bytes %" PRIu64 "\n", r->data_bytes);
	fprintf(f, "gap bytes recorded %" PRIu64 ", found from offsets %" PRIu64 "\n",
		r->gap_bytes_recorded, r->gap_bytes_found);
	fprintf(f, "bytes before a stream's first event %" PRIu64 "\n", r->bytes_before_first);
	fprintf(f, "wall offset ns %" PRId64 "\n", r->wall_offset_ns);
	fprintf(f, "messages decoded %" PRIu64 "\n", r->messages);
	fprintf(f, "bind calls cited %" PRIu64 "\n", r->calls);
	if (r->fsyncs)
		fprintf(f, "etcd fsyncs %" PRIu64 "\n", r->fsyncs);
	fprintf(f, "binds %" PRIu64 " (complete %" PRIu64 ", unschedulable %" PRIu64 ")\n",
		st.binds, st.complete, st.unschedulable);
	return fclose(f) ? -errno : 0;
}

/* Replays one fixture into out/; returns the number of binds, or -1. */
static int replay__run(const struct golden_case *gc, const char *out)
{
	char path[PATH_LEN], perfetto[PATH_LEN], evidence[PATH_LEN], report[PATH_LEN], name[256];
	struct correlator_options copt = {};
	struct trace_options opt = {};
	struct replay r = { .gc = gc };
	/* No targets, sockets or watchers: the replay names each connection itself (conn_of). */
	struct dispatch_deps deps = { .tap = on_decoded };
	uint64_t next_tick = 0, last_ts = 0;
	json_t *recs, *rec;
	size_t i;
	int err;

	snprintf(name, sizeof(name), "%s.jsonl", gc->fixture);
	join(path, FIXTURES, name);
	recs = fixture__load(path);
	CHECK(json_array_size(recs) > 0, "%s: records", path);
	if (!json_array_size(recs)) {
		json_decref(recs);
		return -1;
	}
	/* What the tracer would know from attaching: which roles it traces, when it attached (just
	 * before the first event) and the wall clock's offset from CLOCK_MONOTONIC. */
	r.wall_offset_ns = FIXED_WALL_OFFSET_NS;
	json_array_foreach(recs, i, rec)
	{
		enum process_role role = role_of(str_of(rec, "comm"));

		if (!json_object_get(rec, "pid"))
			continue;
		copt.have_scheduler |= role == ROLE_SCHEDULER;
		copt.have_apiserver |= role == ROLE_APISERVER;
		copt.have_etcd |= role == ROLE_ETCD;
	}
	rec = json_array_get(recs, 0);
	copt.attach_ns = u64_of(rec, "ts_ns") - 1;
	if (json_is_integer(json_object_get(rec, "wall_ns")))
		r.wall_offset_ns = (int64_t)(u64_of(rec, "wall_ns") - u64_of(rec, "ts_ns"));
	copt.linger_ns = LINGER_MS * 1000000ull;
	copt.max_open_ns = MAX_OPEN_NS;

	join(perfetto, out, "trace.json");
	join(evidence, out, "evidence");
	join(report, out, "report.md");
	opt.perfetto = perfetto;
	opt.evidence = evidence;
	opt.linger_ms = LINGER_MS;
	if (gc->report_name) {
		opt.report = report;
		util__copy(opt.pod_ns, sizeof(opt.pod_ns), gc->report_ns);
		util__copy(opt.pod_name, sizeof(opt.pod_name), gc->report_name);
	}
	r.outputs = trace_outputs__new(&opt, r.wall_offset_ns);
	r.corr = correlator__new(&copt, on_bind, &r);
	r.summary = summary__new();
	deps.corr = r.corr;
	deps.outputs = r.outputs;
	deps.tap_ctx = &r;
	r.dispatch = r.corr && r.outputs ? dispatch__new(&deps) : NULL;
	join(path, out, "timeline.txt");
	r.timeline = fopen(path, "w");
	join(path, out, "timeline.jsonl");
	r.json = fopen(path, "w");
	join(path, out, "messages.jsonl");
	r.messages_out = fopen(path, "w");
	CHECK(r.outputs && r.corr && r.summary && r.dispatch && r.timeline && r.json &&
		  r.messages_out && !streams__init(&r.conns, 512),
	      "%s: replay set up", gc->fixture);
	if (!r.outputs || !r.corr || !r.summary || !r.dispatch || !r.timeline || !r.json ||
	    !r.messages_out || !r.conns.slots)
		goto cleanup;
	r.recs = recs;
	register_identities(&r, recs);

	json_array_foreach(recs, i, rec)
	{
		uint64_t ts = u64_of(rec, "ts_ns");

		r.records++;
		if (ts >= next_tick) {
			correlator__tick(r.corr, ts, false);
			next_tick = ts + TICK_NS;
		}
		last_ts = ts > last_ts ? ts : last_ts;
		/* A gap the capture noted: the tracer finds it from the next event's offset, and
		 * so does the replay (checked equal below). A stream whose first event is past 0
		 * is one whose start was lost, for the tracer too (stream_pos.h). */
		if (json_is_integer(json_object_get(rec, "gap")))
			r.gap_bytes_recorded += u64_of(rec, "gap");
		else if (json_is_string(json_object_get(rec, "data")))
			replay__data(&r, rec);
		else if (json_is_string(json_object_get(rec, "event")))
			replay__fsync(&r, rec);
	}
	/* The tracer's exit: the rest of the binds flushed. */
	correlator__tick(r.corr, last_ts + TICK_NS, true);
	CHECK(r.gap_bytes_found == r.gap_bytes_recorded,
	      "%s: gaps found from offsets (%" PRIu64 " bytes) are the ones recorded (%" PRIu64 ")",
	      gc->fixture, r.gap_bytes_found, r.gap_bytes_recorded);

	join(path, out, "summary.txt");
	{
		FILE *f = fopen(path, "w");

		CHECK(f != NULL, "%s: %s", path, strerror(errno));
		if (f) {
			summary__print(f, r.summary);
			fclose(f);
		}
	}
	err = trace_outputs__finish(r.outputs);
	CHECK(err == 0 || (err == -ENOENT && !gc->report_name), "%s: outputs finish: %d",
	      gc->fixture, err);
	join(path, out, "replay.txt");
	CHECK_INT(write_replay_counts(&r, path), 0);

cleanup:
	for (i = 0; r.conns.slots && i < r.conns.cap; i++)
		free(r.conns.slots[i].user);
	streams__free(&r.conns);
	dispatch__free(r.dispatch);
	if (r.timeline)
		fclose(r.timeline);
	if (r.json)
		fclose(r.json);
	if (r.messages_out)
		fclose(r.messages_out);
	trace_outputs__free(r.outputs);
	correlator__free(r.corr);
	summary__free(r.summary);
	json_decref(recs);
	return r.binds;
}

/* files.txt: every output file and directory with its mode (the evidence's are 0600 and 0700
 * on purpose; git keeps no such modes, so they are compared through this list). The files the
 * test writes itself follow its umask, fixed at 022. */
static void write_file_modes(const char *out)
{
	struct file_list l;
	char path[PATH_LEN];
	FILE *f;

	file_list__read(&l, out, true);
	join(path, out, "files.txt");
	f = fopen(path, "w");
	for (int i = 0; f && i < l.n; i++)
		fprintf(f, "%04o %s\n", l.modes[i], l.paths[i]);
	CHECK(f && !fclose(f), "%s: %s", path, strerror(errno));
	file_list__free(&l);
}

/* ---- Comparing ---- */

static int diff_lines(void)
{
	const char *s = getenv("GOLDEN_DIFF_LINES");

	return s && atoi(s) > 0 ? atoi(s) : 40;
}

/* The part of line `at` of text around column `col`: at most 60 bytes either side. */
static void show_excerpt(const char *label, const char *text, size_t len, size_t at)
{
	size_t from = at, to = at;

	while (from > 0 && text[from - 1] != '\n' && at - from < 60)
		from--;
	while (to < len && text[to] != '\n' && to - at < 60)
		to++;
	fprintf(stderr, "  %s %s%.*s%s\n", label, from && text[from - 1] != '\n' ? "..." : "",
		(int)(to - from), text + from, to < len && text[to] != '\n' ? "..." : "");
}

/* Where two texts first differ, with some context on each side: the diff of a one-line JSON
 * document is the whole line. */
static void show_first_difference(const char *a, size_t la, const char *b, size_t lb)
{
	size_t i = 0, line = 1, col = 1;

	while (i < la && i < lb && a[i] == b[i]) {
		col = a[i] == '\n' ? 1 : col + 1;
		line += a[i] == '\n';
		i++;
	}
	fprintf(stderr, "  first difference at line %zu, column %zu:\n", line, col);
	show_excerpt("expected:", a, la, i);
	show_excerpt("actual:  ", b, lb, i);
}

/* diff -u of the two files, its first GOLDEN_DIFF_LINES lines each cut at 200 columns. */
static void show_diff(const char *want, const char *got)
{
	char cmd[3 * PATH_LEN + 128], line[65536];
	int shown = 0, max = diff_lines();
	FILE *p;

	snprintf(cmd, sizeof(cmd), "diff -u --label '%s' --label 'actual' '%s' '%s' 2>&1", want,
		 want, got);
	p = popen(cmd, "r");
	if (!p)
		return;
	while (fgets(line, sizeof(line), p)) {
		size_t n = strlen(line);

		if (shown++ >= max)
			continue;
		if (n > 200)
			fprintf(stderr, "%.200s... (%zu more columns)\n", line, n - 200);
		else
			fputs(line, stderr);
	}
	if (shown > max)
		fprintf(stderr, "... (%d more diff lines; GOLDEN_DIFF_LINES=N shows more)\n",
			shown - max);
	pclose(p);
}

/* Every file of got/ equals its twin in want/, and want/ has no file got/ lacks. */
static int compare_trees(const char *want, const char *got, const char *fixture)
{
	struct file_list w, g;
	int i = 0, j = 0, differ = 0;

	file_list__read(&w, want, false);
	file_list__read(&g, got, false);
	CHECK(w.n > 0, "%s: no expectations in %s (GOLDEN_UPDATE=1 writes them)", fixture, want);
	while (i < w.n || j < g.n) {
		int c = i == w.n ? 1 : j == g.n ? -1 : strcmp(w.paths[i], g.paths[j]);
		char a[PATH_LEN], b[PATH_LEN];

		if (c < 0) {
			differ++;
			fprintf(stderr, "golden %s: %s/%s was not written\n", fixture, want,
				w.paths[i++]);
			continue;
		}
		if (c > 0) {
			differ++;
			fprintf(stderr, "golden %s: %s is new (not in %s)\n", fixture, g.paths[j++],
				want);
			continue;
		}
		join(a, want, w.paths[i]);
		join(b, got, g.paths[j]);
		size_t la, lb;
		char *ta = slurp(a, &la), *tb = slurp(b, &lb);

		if (!ta || !tb || la != lb || memcmp(ta, tb, la)) {
			differ++;
			fprintf(stderr, "golden %s: %s differs:\n", fixture, w.paths[i]);
			if (ta && tb)
				show_first_difference(ta, la, tb, lb);
			show_diff(a, b);
		}
		free(ta);
		free(tb);
		i++, j++;
	}
	CHECK(differ == 0, "%s: %d files differ from %s", fixture, differ, want);
	file_list__free(&w);
	file_list__free(&g);
	return w.n ? (differ ? -1 : g.n) : -1;
}

static int update_tree(const char *want, const char *got)
{
	struct file_list g;
	int err = 0;

	rm_tree(want);
	file_list__read(&g, got, false);
	for (int i = 0; i < g.n && !err; i++) {
		char a[PATH_LEN], b[PATH_LEN];

		join(a, want, g.paths[i]);
		join(b, got, g.paths[i]);
		err = copy_file(b, a);
		CHECK(err == 0, "write %s: %s", a, strerror(-err));
	}
	err = err ? err : g.n;
	file_list__free(&g);
	return err;
}

/* Nothing written may depend on where it was written, nor hold the fixtures' secrets (their
 * Authorization token, cookie and Secret value: tests/fixtures/gen). */
static void check_written(const char *out, const char *fixture)
{
	static const char *const secrets[] = {
		"eyJhbGciOiJSUzI1NiJ9",
		"c2VjcmV0LXRva2VuLXZhbHVl",
		"SECRETCOOKIE",
		"SUPERSECRETVALUE",
	};
	struct file_list l;

	file_list__read(&l, out, false);
	for (int i = 0; i < l.n; i++) {
		char p[PATH_LEN];
		char *text;

		join(p, out, l.paths[i]);
		text = slurp(p, NULL);
		CHECK(text && !strstr(text, tmp), "%s: %s names the output directory", fixture,
		      l.paths[i]);
		for (size_t k = 0; text && k < sizeof(secrets) / sizeof(secrets[0]); k++)
			CHECK(!strstr(text, secrets[k]), "%s: %s holds %s", fixture, l.paths[i],
			      secrets[k]);
		free(text);
	}
	file_list__free(&l);
}

/* Every fixture has a case: a new capture gets its expectations too. */
static void check_all_fixtures_covered(void)
{
	DIR *d = opendir(FIXTURES);
	struct dirent *de;
	int n = 0;

	CHECK(d != NULL, "%s: %s (run from the top of the tree)", FIXTURES, strerror(errno));
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name), k;
		bool known = false;

		if (len < 7 || strcmp(de->d_name + len - 6, ".jsonl"))
			continue;
		n++;
		for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
			known |= strlen(cases[k].fixture) == len - 6 &&
				 !strncmp(cases[k].fixture, de->d_name, len - 6);
		CHECK(known, "%s/%s has no golden case", FIXTURES, de->d_name);
	}
	if (d)
		closedir(d);
	CHECK_INT(n, sizeof(cases) / sizeof(cases[0]));
}

int main(void)
{
	bool update = getenv("GOLDEN_UPDATE") && strcmp(getenv("GOLDEN_UPDATE"), "0");
	int binds = 0, files = 0, updated = 0;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	setvbuf(stdout, NULL, _IOLBF, 0); /* in order with the diffs on stderr */
	setenv("TZ", "IST-5:30", 1);
	tzset();
	umask(022);
	snprintf(tmp, sizeof(tmp), "%s/test_golden.XXXXXX",
		 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	check_all_fixtures_covered();
	CHECK(access(STAND_IN "/kube-scheduler", R_OK) == 0, "%s: %s", STAND_IN, strerror(errno));
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct golden_case *gc = &cases[k];
		char out[PATH_LEN], want[PATH_LEN];
		int n;

		join(out, tmp, gc->fixture);
		join(want, GOLDEN, gc->fixture);
		CHECK(mkdir(out, 0700) == 0, "mkdir %s: %s", out, strerror(errno));
		n = replay__run(gc, out);
		CHECK(n == gc->binds, "%s: %d binds, want %d", gc->fixture, n, gc->binds);
		binds += n > 0 ? n : 0;
		write_file_modes(out);
		check_written(out, gc->fixture);
		if (update) {
			n = update_tree(want, out);
			updated += n > 0 ? n : 0;
		}
		n = compare_trees(want, out, gc->fixture);
		files += n > 0 ? n : 0;
		if (n >= 0)
			printf("golden %-22s %3d binds, %3d files equal\n", gc->fixture, gc->binds,
			       n);
		else
			printf("golden %-22s %3d binds, DIFFERENT from %s\n", gc->fixture,
			       gc->binds, want);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("golden: %zu fixtures, %d binds, %d files compared%s in %.2f s\n",
	       sizeof(cases) / sizeof(cases[0]), binds, files,
	       update ? " (expectations rewritten first)" : "",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (update)
		printf("golden: %d files written under %s: review them with git diff\n", updated,
		       GOLDEN);
	if (!check_failed && !getenv("GOLDEN_KEEP"))
		rm_tree(tmp);
	else
		fprintf(stderr, "golden: outputs kept in %s\n", tmp);
	return check_summary("golden");
}
