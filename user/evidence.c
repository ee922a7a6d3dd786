/* The evidence bundle: per finished bind the files that let someone else check each of its
 * numbers, picked from what the evidence log (evidence_log.h) kept of the tracer's stream. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bind_json.h"
#include "evidence.h"
#include "evidence_log.h"
#include "evidence_quota.h"
#include "identity.h"
#include "output_file.h"
#include "util.h"

struct evidence {
	char *dir;
	int dir_fd;
	int64_t wall_offset_ns;
	struct evidence_log *log;
	struct evidence_quota *quota; /* NULL: no bound */
	bool failed;		      /* a write failed: said once */
};

/* ---- Open and feed ---- */

static const char readme[] =
    "# bindtrace evidence\n"
    "\n"
    "Written by `bindtrace --evidence`. One directory per traced pod bind, named\n"
    "`NNNN-NAMESPACE-NAME` (NNNN: the bind's sequence number in that run). Everything here is\n"
    "what the kernel showed bindtrace: check each number against it, or against a capture of\n"
    "your own (`bindtrace capture --json`, `bindtrace decode`).\n"
    "\n"
    "Nothing secret is kept: no payload bytes (data events are listed by their metadata only),\n"
    "header values such as Authorization and Cookie were replaced by `[redacted]` when decoded,\n"
    "and Secret objects (and etcd values under /registry/secrets/) are never decoded.\n"
    "\n"
    "## Files of one bind\n"
    "\n"
    "- `bind.json` — the timeline, the same object `bindtrace --json` prints. Each stage has\n"
    "  `mono_ns` (CLOCK_MONOTONIC ns, the clock of bpf_ktime_get_ns), `wall_ns`\n"
    "  (= mono_ns + the offset below), `first_mono_ns`/`last_mono_ns` (the first and last chunk\n"
    "  of the message behind it), the process (`pid`, `comm`), its connection (`conn`: the\n"
    "  socket's inode, `laddr`, `raddr`) and HTTP/2 `stream_id` (HTTP/1.1: request number).\n"
    "  `legs_ns` are differences of stage times; a missing stage says why in `missing`.\n"
    "- `messages.jsonl` — the decoded messages behind the stages, one per line, oldest first:\n"
    "  `stages` (which stages it stands for), `pid`, `comm`, `conn`, `laddr`, `raddr`,\n"
    "  `offsets` (`dir`, `from`, `to`: the byte range of that direction of the connection, from\n"
    "  the first to the last chunk that carried it; `chunks`) and `message` (kind, stream_id,\n"
    "  ts_first_ns, ts_last_ns, method, path, status, body: Binding, Pod, Status, etcd Txn,\n"
    "  TxnResponse, watch events...).\n"
    "- `kernel.jsonl` — the kernel events behind each stage, oldest first: `data` events (`ts_ns`,\n"
    "  `pid`, `tid`, `conn`, `fd`, `dir` out = written by pid / in = read by it, `source` tls =\n"
    "  crypto/tls plaintext from uprobes / syscall = plain TCP, `offset`, `len`), and etcd's\n"
    "  `fsync` events (`start_ns`, `end_ns`, `fd`, `path`, `ret`, `datasync`) while the Txn was\n"
    "  being committed; the one that is the `etcd_wal_fsync` stage says so in `stage`.\n"
    "- `binaries.json` — each traced process's binary: `path`, `size`, `sha256`,\n"
    "  `gnu_build_id`, `go_build_id`, Go version, module versions, build settings, and the text\n"
    "  base bindtrace placed its probes and symbolised stacks against.\n"
    "\n"
    "## How to check each number\n"
    "\n"
    "- A sender's stage (`bind_request`, `etcd_txn_sent`, `etcd_txn_response`, `bind_response`,\n"
    "  `watch_event_sent`) is the moment its first byte was handed to crypto/tls or write(2):\n"
    "  its `mono_ns` equals the `ts_first_ns` of its message in messages.jsonl and the `ts_ns` of\n"
    "  the first `out` data event of that connection listed for it in kernel.jsonl.\n"
    "- A receiver's stage (`apiserver_received`, `etcd_txn_received`, `etcd_watch_event`,\n"
    "  `bind_response_received`, `watch_event_received`) is when the last byte of the message\n"
    "  came out of crypto/tls or read(2): `mono_ns` = the message's `ts_last_ns` = the `ts_ns`\n"
    "  of the last `in` data event listed for it.\n"
    "- `etcd_wal_fsync`: `first_mono_ns`/`last_mono_ns` are the `start_ns`/`end_ns` of the\n"
    "  fdatasync of a file under member/wal/ listed with `\"stage\":\"etcd_wal_fsync\"`.\n"
    "- A leg is the difference of its two stages (`legs_ns` in bind.json); e.g.\n"
    "  `jq '.stages.apiserver_received.mono_ns - .stages.bind_request.mono_ns' bind.json`.\n"
    "- `revision` is the etcd TxnResponse's header revision (messages.jsonl, stage\n"
    "  `etcd_txn_response`), the `mod_revision` of the etcd watch event, and the\n"
    "  resourceVersion of the Pod in the watch events the watchers were sent.\n"
    "- nodeName before -> after: the etcd watch event's `prev_node_name` and the Pod's `nodeName`\n"
    "  in each watcher's event (`watch_event_sent` lines).\n"
    "- The line that issued the bind (`citation` in bind.json) is a PC of the scheduler's\n"
    "  stack symbolised through the pclntab of the binary in binaries.json: check it with\n"
    "  `bindtrace inspect BINARY`, or `go tool addr2line` on an unstripped build of the same\n"
    "  version; check the binary with `sha256sum`, `readelf -n` and `go version -m`.\n"
    "\n"
    "Wall-clock offset of this run (wall ns = mono ns + offset): see `wall_offset_ns` in each\n"
    "bind's `kernel.jsonl` header line.\n"
    "\n"
    "bindtrace keeps recent events per connection in bounded memory (about the last 12 s plus\n"
    "--linger, at most 16384 data events and 4096 messages per connection, 1M data events and\n"
    "64 MB of messages in all). On a very busy connection the oldest go first: a stage whose\n"
    "events were pushed out has fewer lines here, and a message whose chunks were has\n"
    "`\"offsets\": null`. Nothing listed is invented.\n"
    "\n"
    "The directory is kept under a size (`--evidence-max-size`: 1 GiB unless given, 0 for no\n"
    "bound): past it the oldest binds' directories are removed, whole, this run's and earlier\n"
    "runs'. Only the four files above and their directory are ever removed; a directory\n"
    "holding anything else is not touched (nor counted), and neither is anything else here.\n";

struct evidence *evidence__open(const char *dir, int64_t wall_offset_ns, uint64_t retention_ns,
				uint64_t max_bytes)
{
	struct evidence *ev;
	FILE *f;
	int err;

	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return NULL;
	ev->dir_fd = -1;
	ev->wall_offset_ns = wall_offset_ns;
	ev->log = evidence_log__new(retention_ns);
	ev->dir = strdup(dir);
	if (!ev->dir || !ev->log) {
		err = -ENOMEM;
		goto fail;
	}
	ev->dir_fd = output_dir__create(dir);
	if (ev->dir_fd < 0) {
		err = ev->dir_fd;
		fprintf(stderr,
			"bindtrace: --evidence %s: cannot create or open the directory: %s\n", dir,
			strerror(-err));
		goto fail;
	}
	/* The README is written now: an unwritable directory fails here, not at the first bind. */
	f = output_file__open_at(ev->dir_fd, "README.md", false);
	if (f) {
		fputs(readme, f);
		err = output_file__close(f);
	} else {
		err = -errno;
	}
	if (err) {
		fprintf(stderr, "bindtrace: --evidence %s: cannot write README.md: %s\n", dir,
			strerror(-err));
		goto fail;
	}
	if (max_bytes) {
		ev->quota = evidence_quota__new(ev->dir_fd, max_bytes);
		if (!ev->quota) {
			err = -errno;
			fprintf(stderr, "bindtrace: --evidence %s: cannot read the directory: %s\n",
				dir, strerror(-err));
			goto fail;
		}
	}
	return ev;
fail:
	evidence__close(ev);
	errno = -err;
	return NULL;
}

void evidence__data(struct evidence *ev, const struct actor *who, const struct data_event *e)
{
	evidence_log__data(ev->log, who, e);
}

void evidence__message(struct evidence *ev, const struct actor *who, const struct decoded_msg *msg)
{
	evidence_log__message(ev->log, who, msg);
}

void evidence__fsync(struct evidence *ev, const struct actor *who, const struct fsync_event *e,
		     const char *path)
{
	evidence_log__fsync(ev->log, who, e, path);
}

/* ---- One bind ---- */

/* A stage of the bind with its name and the direction its message travelled for its process. */
struct stage_ref {
	const char *name;
	int watcher; /* -1 */
	const struct stage *st;
	int dir; /* CONN_DIR_OUT for senders, CONN_DIR_IN for receivers; -1 (fsync) */
	/* The direction of the message found for it, when that is not dir: a stage the correlator
	 * took from the answer (an unschedulable PATCH whose request was unreadable). */
	int found_dir;
};

static int stage_refs(const struct bind_timeline *t, struct stage_ref *out)
{
	static const int dirs[STAGE_MAX] = {
		[STAGE_CREATE_REQUEST] = CONN_DIR_IN,
		[STAGE_CREATE_TXN_RESPONSE] = CONN_DIR_OUT,
		[STAGE_SCHEDULER_INFORMED] = CONN_DIR_IN,
		[STAGE_BIND_REQUEST] = CONN_DIR_OUT,
		[STAGE_APISERVER_RECEIVED] = CONN_DIR_IN,
		[STAGE_ETCD_TXN_SENT] = CONN_DIR_OUT,
		[STAGE_ETCD_TXN_RECEIVED] = CONN_DIR_IN,
		[STAGE_ETCD_WAL_FSYNC] = -1,
		[STAGE_ETCD_TXN_RESPONSE] = CONN_DIR_OUT,
		[STAGE_ETCD_WATCH_EVENT] = CONN_DIR_IN,
		[STAGE_BIND_RESPONSE] = CONN_DIR_OUT,
		[STAGE_BIND_RESPONSE_RECEIVED] = CONN_DIR_IN,
	};
	int s, w, n = 0;

	for (s = 0; s < STAGE_MAX; s++)
		out[n++] = (struct stage_ref){ stage__name((enum stage_id)s), -1, &t->stages[s],
					       dirs[s], -1 };
	for (w = 0; w < t->n_watchers && w < BIND_MAX_WATCHERS; w++) {
		out[n++] = (struct stage_ref){ "watch_event_sent", w, &t->watchers[w].sent,
					       CONN_DIR_OUT, -1 };
		out[n++] = (struct stage_ref){ "watch_event_received", w, &t->watchers[w].received,
					       CONN_DIR_IN, -1 };
	}
	return n;
}

static bool subject_matches(const char *subject, const struct bind_timeline *t)
{
	char want[K8S_NAMESPACE_MAX + K8S_NAME_MAX + 32];

	if (!subject || !subject[0])
		return true;
	snprintf(want, sizeof(want), "%s/%s", t->namespace_, t->name);
	if (!strcmp(subject, want))
		return true;
	snprintf(want, sizeof(want), "/registry/pods/%s/%s", t->namespace_, t->name);
	return !strcmp(subject, want);
}

struct line {
	uint64_t ts;
	uint64_t order; /* ties: as found */
	json_t *j;
};

struct lines {
	struct line *v;
	size_t n, cap;
};

static void lines__add(struct lines *l, uint64_t ts, json_t *j)
{
	if (!j)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct line *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			json_decref(j);
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = (struct line){ ts, l->n, j };
	l->n++;
}

static int line_cmp(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void lines__free(struct lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		json_decref(l->v[i].j);
	free(l->v);
}

static json_t *stage_label(const struct stage_ref *r)
{
	json_t *j = json_object();

	json_object_set_new(j, "stage", json_string(r->name));
	if (r->watcher >= 0)
		json_object_set_new(j, "watcher", json_integer(r->watcher));
	return j;
}

/* The log of the connection a stage was seen on: NULL for the fsync, a stage not seen, or a
 * connection the log no longer holds. */
static const struct conn_log *ref_conn(const struct evidence *ev, const struct stage_ref *r)
{
	const struct stage *st = r->st;

	if (!st->seen || r->dir < 0 || !st->who.conn)
		return NULL;
	return evidence_log__conn(ev->log, st->who.pid, st->who.conn);
}

/* The messages behind the stages: on the stage's connection and stream, in its time window,
 * about this pod (or about nothing in particular, like a Status). */
static void collect_messages(struct evidence *ev, const struct bind_timeline *t,
			     struct stage_ref *refs, int n_refs, struct lines *out)
{
	const struct conn_log *conns[STAGE_MAX + 2 * BIND_MAX_WATCHERS];
	int r, k, n_conns = 0;
	size_t i;

	/* Only the connections the stages name: a bind costs its own messages, not the table. */
	for (r = 0; r < n_refs; r++) {
		const struct conn_log *c = ref_conn(ev, &refs[r]);

		for (k = 0; c && k < n_conns && conns[k] != c; k++)
			;
		if (c && k == n_conns)
			conns[n_conns++] = c;
	}
	for (k = 0; k < n_conns; k++) {
		const struct conn_log *c = conns[k];
		const struct actor *who = conn_log__who(c);

		for (i = 0; i < conn_log__n_messages(c); i++) {
			const struct msg_entry *m = conn_log__message(c, i);
			json_t *stages = NULL, *j, *msg, *off;

			for (r = 0; r < n_refs; r++) {
				const struct stage *st = refs[r].st;

				/* Either direction: the stream and the time say it is this one. */
				if (!st->seen || refs[r].dir < 0 || st->who.pid != who->pid ||
				    st->who.conn != who->conn || st->stream_id != m->stream_id ||
				    m->ts_first_ns > st->last_ns || m->ts_last_ns < st->first_ns ||
				    !subject_matches(m->subject, t))
					continue;
				if (m->dir == refs[r].dir || refs[r].found_dir < 0)
					refs[r].found_dir = m->dir;
				if (!stages)
					stages = json_array();
				json_array_append_new(stages, stage_label(&refs[r]));
			}
			if (!stages)
				continue;
			msg = m->json ? json_loads(m->json, 0, NULL) : NULL;
			j = json_object();
			json_object_set_new(j, "stages", stages);
			json_object_set_new(j, "pid", json_integer(who->pid));
			json_object_set_new(j, "comm", json_string(who->comm));
			json_object_set_new(j, "conn", json_integer((json_int_t)who->conn));
			json_object_set_new(j, "laddr", json_string(endpoint__str(&who->local).s));
			json_object_set_new(j, "raddr", json_string(endpoint__str(&who->remote).s));
			if (m->chunks) {
				off = json_object();
				json_object_set_new(
				    off, "dir", json_string(m->dir == CONN_DIR_OUT ? "out" : "in"));
				json_object_set_new(off, "from",
						    json_integer((json_int_t)m->off_from));
				json_object_set_new(off, "to", json_integer((json_int_t)m->off_to));
				json_object_set_new(off, "chunks", json_integer(m->chunks));
			} else {
				off = json_null();
			}
			json_object_set_new(j, "offsets", off);
			json_object_set_new(j, "message", msg ? msg : json_null());
			lines__add(out, m->ts_first_ns, j);
		}
	}
}

static json_t *data_line(const struct actor *who, const struct data_meta *d,
			 const struct stage_ref *r, int64_t wall_offset_ns)
{
	json_t *j = json_object();

	json_object_set_new(j, "event", json_string("data"));
	json_object_set_new(j, "stage", json_string(r->name));
	if (r->watcher >= 0)
		json_object_set_new(j, "watcher", json_integer(r->watcher));
	json_object_set_new(j, "ts_ns", json_integer((json_int_t)d->ts_ns));
	json_object_set_new(j, "wall_ns", json_integer((json_int_t)(d->ts_ns + wall_offset_ns)));
	json_object_set_new(j, "pid", json_integer(who->pid));
	json_object_set_new(j, "tid", json_integer(d->tid));
	json_object_set_new(j, "comm", json_string(who->comm));
	json_object_set_new(j, "conn", json_integer((json_int_t)who->conn));
	json_object_set_new(j, "fd", json_integer(d->fd));
	json_object_set_new(j, "dir", json_string(d->dir == DIR_OUT ? "out" : "in"));
	json_object_set_new(j, "source", json_string(d->source == SOURCE_TLS ? "tls" : "syscall"));
	json_object_set_new(j, "offset", json_integer((json_int_t)d->offset));
	json_object_set_new(j, "len", json_integer(d->len));
	return j;
}

static json_t *fsync_line(const struct fsync_meta *f, bool is_stage, int64_t wall_offset_ns)
{
	json_t *j = json_object();

	json_object_set_new(j, "event", json_string(f->datasync ? "fdatasync" : "fsync"));
	json_object_set_new(j, "stage", is_stage ? json_string("etcd_wal_fsync") : json_null());
	if (!is_stage)
		json_object_set_new(j, "context", json_string("during etcd_commit"));
	json_object_set_new(j, "start_ns", json_integer((json_int_t)f->start_ns));
	json_object_set_new(j, "end_ns", json_integer((json_int_t)f->end_ns));
	json_object_set_new(j, "start_wall_ns",
			    json_integer((json_int_t)(f->start_ns + wall_offset_ns)));
	json_object_set_new(j, "pid", json_integer(f->pid));
	json_object_set_new(j, "tid", json_integer(f->tid));
	json_object_set_new(j, "comm", json_string(f->comm));
	json_object_set_new(j, "fd", json_integer(f->fd));
	json_object_set_new(j, "path", json_string(f->path));
	json_object_set_new(j, "ret", json_integer((json_int_t)f->ret));
	return j;
}

static void collect_kernel(struct evidence *ev, const struct bind_timeline *t,
			   const struct stage_ref *refs, int n_refs, struct lines *out)
{
	const struct stage *fs = &t->stages[STAGE_ETCD_WAL_FSYNC];
	const struct stage *rx = &t->stages[STAGE_ETCD_TXN_RECEIVED];
	const struct stage *resp = &t->stages[STAGE_ETCD_TXN_RESPONSE];
	uint64_t from = UINT64_MAX, to = 0;
	pid_t etcd = 0;
	size_t i;
	int r;

	for (r = 0; r < n_refs; r++) {
		const struct stage *st = refs[r].st;
		const struct conn_log *c = ref_conn(ev, &refs[r]);

		for (i = 0; c && i < conn_log__n_data(c); i++) {
			const struct data_meta *d = conn_log__data(c, i);

			if (d->dir == (refs[r].found_dir >= 0 ? refs[r].found_dir : refs[r].dir) &&
			    d->ts_ns >= st->first_ns && d->ts_ns <= st->last_ns)
				lines__add(
				    out, d->ts_ns,
				    data_line(conn_log__who(c), d, &refs[r], ev->wall_offset_ns));
		}
	}
	/* etcd's fsyncs while it committed the Txn: the stage's own, and the others for context. */
	if (rx->seen) {
		from = rx->mono_ns;
		etcd = rx->who.pid;
	}
	if (resp->seen) {
		to = resp->mono_ns;
		etcd = etcd ? etcd : resp->who.pid;
	}
	if (fs->seen) {
		from = fs->first_ns < from ? fs->first_ns : from;
		to = fs->last_ns > to ? fs->last_ns : to;
		etcd = fs->who.pid;
	}
	if (from == UINT64_MAX || !to || !etcd)
		return;
	for (i = 0; i < evidence_log__n_fsyncs(ev->log); i++) {
		const struct fsync_meta *f = evidence_log__fsync_at(ev->log, i);
		bool is_stage = fs->seen && f->pid == fs->who.pid && f->start_ns == fs->first_ns &&
				f->end_ns == fs->last_ns;

		if (f->pid != etcd || f->end_ns < from || f->start_ns > to)
			continue;
		lines__add(out, f->start_ns, fsync_line(f, is_stage, ev->wall_offset_ns));
	}
}

/* A name component from the wire: only [A-Za-z0-9._-], never empty. */
static void sanitize(char *out, size_t cap, const char *in)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < cap; i++) {
		char ch = in[i];

		out[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
				 (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_'
			     ? ch
			     : '_';
	}
	out[i] = '\0';
	if (!i)
		util__copy(out, cap, "_");
}

static int write_lines(int dir_fd, const char *name, struct lines *l, json_t *header)
{
	FILE *f = output_file__open_at(dir_fd, name, true);
	size_t i;

	if (!f)
		return -errno;
	if (header) {
		json_dumpf(header, f, JSON_COMPACT);
		fputc('\n', f);
	}
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), line_cmp);
	for (i = 0; i < l->n; i++) {
		json_dumpf(l->v[i].j, f, JSON_COMPACT);
		fputc('\n', f);
	}
	return output_file__close(f);
}

#define BIND_DIR_MAX (BIND_NS_MAX + BIND_NAME_MAX + 48)

/* DIR/NNNN-ns-name, made anew: a directory left by an earlier run with the same number gets a
 * suffix, never reused. Its fd, or -errno; its name in sub. */
static int bind_dir__create(struct evidence *ev, const struct bind_timeline *t,
			    char sub[BIND_DIR_MAX])
{
	char ns[BIND_NS_MAX], name[BIND_NAME_MAX];
	int attempt, fd;

	sanitize(ns, sizeof(ns), t->namespace_);
	sanitize(name, sizeof(name), t->name);
	for (attempt = 0;; attempt++) {
		if (attempt)
			snprintf(sub, BIND_DIR_MAX, "%04" PRIu64 "-%s-%s.%d", t->seq, ns, name,
				 attempt);
		else
			snprintf(sub, BIND_DIR_MAX, "%04" PRIu64 "-%s-%s", t->seq, ns, name);
		fd = output_dir__create_at(ev->dir_fd, sub);
		if (fd >= 0 || fd != -EEXIST || attempt == 99)
			return fd;
	}
}

/* bind.json: the bind's JSON object, as --json prints it. */
static int write_bind_json(int dir_fd, const struct bind_view *view)
{
	FILE *f = output_file__open_at(dir_fd, "bind.json", true);

	if (!f)
		return -errno;
	bind_json__print(f, view);
	return output_file__close(f);
}

/* binaries.json: the registry's identities. */
static int write_binaries(int dir_fd, const struct identities *ids)
{
	json_t *bins = json_array();
	FILE *f;
	int i;

	for (i = 0; i < identities__count(ids); i++)
		json_array_append(bins, identities__at(ids, i)->detail);
	f = output_file__open_at(dir_fd, "binaries.json", true);
	if (!f) {
		json_decref(bins);
		return -errno;
	}
	json_dumpf(bins, f, JSON_INDENT(2));
	fputc('\n', f);
	json_decref(bins);
	return output_file__close(f);
}

/* messages.jsonl and kernel.jsonl: what the log kept behind the bind's stages. */
static int write_events(struct evidence *ev, int dir_fd, const struct bind_timeline *t,
			const char **what)
{
	struct stage_ref refs[STAGE_MAX + 2 * BIND_MAX_WATCHERS];
	struct lines msgs = {}, kernel = {};
	json_t *header;
	int n_refs, err;

	n_refs = stage_refs(t, refs);
	collect_messages(ev, t, refs, n_refs, &msgs);
	*what = "write messages.jsonl";
	err = write_lines(dir_fd, "messages.jsonl", &msgs, NULL);
	if (!err) {
		collect_kernel(ev, t, refs, n_refs, &kernel);
		header = json_pack("{s:s, s:I, s:s}", "event", "header", "wall_offset_ns",
				   (json_int_t)ev->wall_offset_ns, "clock", "CLOCK_MONOTONIC");
		*what = "write kernel.jsonl";
		err = write_lines(dir_fd, "kernel.jsonl", &kernel, header);
		json_decref(header);
	}
	lines__free(&msgs);
	lines__free(&kernel);
	return err;
}

int evidence__bind(struct evidence *ev, const struct bind_view *view, const struct identities *ids)
{
	const struct bind_timeline *t = view->t;
	const char *what = "create the bind's directory";
	char sub[BIND_DIR_MAX];
	int dir_fd, err;

	dir_fd = bind_dir__create(ev, t, sub);
	err = dir_fd < 0 ? dir_fd : 0;
	if (!err) {
		what = "write bind.json";
		err = write_bind_json(dir_fd, view);
	}
	if (!err)
		err = write_events(ev, dir_fd, t, &what);
	if (!err) {
		what = "write binaries.json";
		err = write_binaries(dir_fd, ids);
	}
	if (err && !ev->failed) {
		fprintf(stderr, "bindtrace: --evidence %s: cannot %s for %s/%s: %s\n", ev->dir,
			what, t->namespace_, t->name, strerror(-err));
		ev->failed = true;
	}
	if (dir_fd >= 0) {
		close(dir_fd);
		/* Counted even when a write failed: what it holds is on the disk. */
		if (ev->quota)
			evidence_quota__add(ev->quota, sub);
	}
	return err;
}

bool evidence__stats(const struct evidence *ev, struct evidence_quota_stats *s)
{
	if (!ev->quota)
		return false;
	evidence_quota__stats(ev->quota, s);
	return true;
}

void evidence__close(struct evidence *ev)
{
	if (!ev)
		return;
	evidence_log__free(ev->log);
	evidence_quota__free(ev->quota);
	if (ev->dir_fd >= 0)
		close(ev->dir_fd);
	free(ev->dir);
	free(ev);
}
