/* The evidence bundle: bounded rings of what the tracer saw per (pid, connection), and per
 * finished bind the files that let someone else check each of its numbers. Nothing here keeps a
 * payload byte: data events are reduced to their metadata on arrival, and decoded messages (whose
 * header values the decoders already redacted, and which never hold Secret data) to JSON. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evidence.h"
#include "identity.h"
#include "message_json.h"
#include "output_file.h"
#include "timeline.h"
#include "util.h"

/* Bounds of what is kept: per connection, the most recent events within the retention time, and
 * in all at most EV_DATA_TOTAL data events (32 bytes each) and EV_MSG_BYTES messages: past
 * those, a connection that adds gives up its own oldest first. */
#define EV_MAX_CONNS 512
#define EV_HASH_BITS 10
#define EV_DATA_PER_CONN 16384
#define EV_MSGS_PER_CONN 4096
#define EV_DATA_TOTAL (1u << 20)
#define EV_MSG_BYTES (64u << 20)
#define EV_FSYNCS 2048
#define EV_MSG_JSON_MAX 8192

/* ---- The rings ---- */

/* Data event metadata: never the bytes. */
struct data_meta {
	uint64_t ts_ns; /* first: the ring's time */
	uint64_t offset;
	uint32_t len;
	uint32_t tid;
	int32_t fd;
	uint8_t dir, source;
};

struct msg_entry {
	uint64_t ts_last_ns; /* first: the ring's time */
	uint64_t ts_first_ns;
	uint64_t off_from, off_to; /* stream offsets of the chunks that carried it */
	uint32_t chunks;	   /* 0: those chunks were no longer in the ring */
	uint32_t stream_id;
	uint8_t dir;
	char *subject; /* "ns/name" of its object or the etcd key; NULL when it names none */
	char *json;
};

struct fsync_meta {
	uint64_t end_ns; /* first: the ring's time */
	uint64_t start_ns;
	int64_t ret;
	pid_t pid;
	uint32_t tid;
	int32_t fd;
	uint32_t datasync;
	char comm[17];
	char path[256];
};

/* A ring of fixed-size elements whose first member is a uint64_t time, growing to max. */
struct ring {
	uint8_t *v;
	size_t elem, head, n, cap, max;
};

static void *ring__at(const struct ring *r, size_t i)
{
	return r->v + ((r->head + i) % r->cap) * r->elem;
}

static uint64_t ring__time(const struct ring *r, size_t i)
{
	uint64_t t;

	memcpy(&t, ring__at(r, i), sizeof(t));
	return t;
}

static void ring__pop(struct ring *r)
{
	r->head = (r->head + 1) % r->cap;
	r->n--;
}

/* A slot for a new element (zeroed), or NULL when memory ran out. The caller has made room
 * (n < max) by popping what it had to release. */
static void *ring__push(struct ring *r)
{
	void *slot;

	if (r->n == r->max)
		return NULL;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16, i;
		uint8_t *v;

		if (cap > r->max)
			cap = r->max;
		v = malloc(cap * r->elem);
		if (!v)
			return NULL;
		for (i = 0; i < r->n; i++)
			memcpy(v + i * r->elem, ring__at(r, i), r->elem);
		free(r->v);
		r->v = v;
		r->cap = cap;
		r->head = 0;
	}
	slot = r->v + ((r->head + r->n) % r->cap) * r->elem;
	memset(slot, 0, r->elem);
	r->n++;
	return slot;
}

struct conn_log {
	bool used;
	pid_t pid;
	uint64_t conn;
	uint64_t last_ns;
	int next; /* hash chain */
	struct actor who;
	struct ring data; /* struct data_meta */
	struct ring msgs; /* struct msg_entry */
};

struct evidence {
	char *dir;
	int dir_fd;
	int64_t wall_offset_ns;
	uint64_t retention_ns;
	struct conn_log conns[EV_MAX_CONNS];
	int buckets[1 << EV_HASH_BITS];
	struct ring fsyncs;
	size_t data_total; /* data events held, all connections */
	size_t msg_bytes;  /* memory of the messages held */
	bool failed;	   /* a write failed: said once */
};

static unsigned int conn_hash(pid_t pid, uint64_t conn)
{
	return (unsigned int)(((conn ^ ((uint64_t)(uint32_t)pid << 40)) * 0x9E3779B97F4A7C15ull) >>
			      (64 - EV_HASH_BITS));
}

static size_t msg_entry__bytes(const struct msg_entry *m)
{
	return sizeof(*m) + (m->json ? strlen(m->json) + 1 : 0) +
	       (m->subject ? strlen(m->subject) + 1 : 0);
}

static void conn_log__pop_data(struct evidence *ev, struct conn_log *c)
{
	ring__pop(&c->data);
	ev->data_total--;
}

static void conn_log__pop_msg(struct evidence *ev, struct conn_log *c)
{
	struct msg_entry *m = ring__at(&c->msgs, 0);

	ev->msg_bytes -= msg_entry__bytes(m);
	free(m->subject);
	free(m->json);
	ring__pop(&c->msgs);
}

static void conn_log__reset(struct evidence *ev, struct conn_log *c)
{
	while (c->msgs.n)
		conn_log__pop_msg(ev, c);
	ev->data_total -= c->data.n;
	free(c->data.v);
	free(c->msgs.v);
	memset(c, 0, sizeof(*c));
}

static struct conn_log *conn_log__find(struct evidence *ev, pid_t pid, uint64_t conn)
{
	int i;

	for (i = ev->buckets[conn_hash(pid, conn)]; i >= 0; i = ev->conns[i].next)
		if (ev->conns[i].pid == pid && ev->conns[i].conn == conn)
			return &ev->conns[i];
	return NULL;
}

static void conn_log__unlink(struct evidence *ev, int idx)
{
	struct conn_log *c = &ev->conns[idx];
	int *link = &ev->buckets[conn_hash(c->pid, c->conn)];

	while (*link >= 0 && *link != idx)
		link = &ev->conns[*link].next;
	if (*link == idx)
		*link = c->next;
}

/* The log of (pid, conn), made on first sight; the least recently active one is dropped when
 * the table is full. */
static struct conn_log *conn_log__get(struct evidence *ev, const struct actor *who, uint64_t now)
{
	struct conn_log *c = conn_log__find(ev, who->pid, who->conn);
	unsigned int h;
	int i, victim = -1;

	if (c)
		return c;
	for (i = 0; i < EV_MAX_CONNS; i++) {
		if (!ev->conns[i].used) {
			victim = i;
			break;
		}
		if (victim < 0 || ev->conns[i].last_ns < ev->conns[victim].last_ns)
			victim = i;
	}
	c = &ev->conns[victim];
	if (c->used) {
		conn_log__unlink(ev, victim);
		conn_log__reset(ev, c);
	}
	c->used = true;
	c->pid = who->pid;
	c->conn = who->conn;
	c->who = *who;
	c->last_ns = now;
	c->data.elem = sizeof(struct data_meta);
	c->data.max = EV_DATA_PER_CONN;
	c->msgs.elem = sizeof(struct msg_entry);
	c->msgs.max = EV_MSGS_PER_CONN;
	h = conn_hash(who->pid, who->conn);
	c->next = ev->buckets[h];
	ev->buckets[h] = victim;
	return c;
}

/* Drop what is older than the retention, and the oldest when full or over the totals. */
static void conn_log__trim(struct evidence *ev, struct conn_log *c, uint64_t now)
{
	uint64_t horizon = now > ev->retention_ns ? now - ev->retention_ns : 0;

	while (c->data.n && (c->data.n == c->data.max || ev->data_total >= EV_DATA_TOTAL ||
			     ring__time(&c->data, 0) < horizon))
		conn_log__pop_data(ev, c);
	while (c->msgs.n && (c->msgs.n == c->msgs.max || ev->msg_bytes >= EV_MSG_BYTES ||
			     ring__time(&c->msgs, 0) < horizon))
		conn_log__pop_msg(ev, c);
}

/* What object a message is about, to keep other pods' events on a shared stream out. */
static char *message_subject(const struct decoded_msg *m)
{
	const struct k8s_meta *mt = NULL;
	const char *key = NULL;
	char buf[K8S_NAMESPACE_MAX + K8S_NAME_MAX + 2];

	switch (m->body_kind) {
	case BODY_K8S:
		mt = &m->body.k8s.meta;
		break;
	case BODY_K8S_WATCH_EVENT:
		mt = &m->body.watch.object.meta;
		break;
	case BODY_ETCD_TXN:
		key = m->body.txn.has_put ? m->body.txn.put.key : m->body.txn.compare_key;
		break;
	case BODY_ETCD_TXN_RESPONSE:
		key = m->body.txn_response.has_kv ? m->body.txn_response.kv.key : NULL;
		break;
	case BODY_ETCD_WATCH_EVENT:
		key = m->body.etcd_watch.event.kv.key;
		break;
	default:
		break;
	}
	if (key && key[0])
		return strdup(key);
	if (mt && mt->name[0]) {
		snprintf(buf, sizeof(buf), "%s/%s", mt->namespace, mt->name);
		return strdup(buf);
	}
	return NULL;
}

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
    "`\"offsets\": null`. Nothing listed is invented.\n";

struct evidence *evidence__open(const char *dir, int64_t wall_offset_ns, uint64_t retention_ns)
{
	struct evidence *ev;
	size_t i;
	FILE *f;
	int err;

	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return NULL;
	ev->dir_fd = -1;
	ev->wall_offset_ns = wall_offset_ns;
	ev->retention_ns = retention_ns;
	ev->fsyncs.elem = sizeof(struct fsync_meta);
	ev->fsyncs.max = EV_FSYNCS;
	for (i = 0; i < sizeof(ev->buckets) / sizeof(ev->buckets[0]); i++)
		ev->buckets[i] = -1;
	ev->dir = strdup(dir);
	if (!ev->dir) {
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
	return ev;
fail:
	evidence__close(ev);
	errno = -err;
	return NULL;
}

void evidence__data(struct evidence *ev, const struct actor *who, const struct data_event *e)
{
	struct conn_log *c = conn_log__get(ev, who, e->hdr.ts_ns);
	struct data_meta *d;

	c->last_ns = e->hdr.ts_ns;
	conn_log__trim(ev, c, e->hdr.ts_ns);
	d = ring__push(&c->data);
	if (!d)
		return;
	ev->data_total++;
	d->ts_ns = e->hdr.ts_ns;
	d->offset = e->offset;
	d->len = e->len;
	d->tid = e->hdr.tid;
	d->fd = e->fd;
	d->dir = e->dir;
	d->source = e->source;
}

void evidence__message(struct evidence *ev, const struct actor *who, const struct decoded_msg *msg)
{
	struct conn_log *c = conn_log__get(ev, who, msg->ts_last_ns);
	struct msg_entry *m;
	json_t *j;
	size_t i;

	c->last_ns = msg->ts_last_ns > c->last_ns ? msg->ts_last_ns : c->last_ns;
	conn_log__trim(ev, c, c->last_ns);
	m = ring__push(&c->msgs);
	if (!m)
		return;
	m->ts_first_ns = msg->ts_first_ns;
	m->ts_last_ns = msg->ts_last_ns;
	m->stream_id = msg->stream_id;
	m->dir = (uint8_t)msg->dir;
	/* The chunks that carried it: this direction's data events within its time. */
	for (i = c->data.n; i-- > 0;) {
		const struct data_meta *d = ring__at(&c->data, i);

		if (d->ts_ns < msg->ts_first_ns)
			break;
		if (d->dir != msg->dir || d->ts_ns > msg->ts_last_ns)
			continue;
		if (!m->chunks || d->offset < m->off_from)
			m->off_from = d->offset;
		if (!m->chunks || d->offset + d->len > m->off_to)
			m->off_to = d->offset + d->len;
		m->chunks++;
	}
	m->subject = message_subject(msg);
	j = message_json__new(msg);
	m->json = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (m->json && strlen(m->json) > EV_MSG_JSON_MAX) {
		/* Bounded: a message this large keeps only its framing. */
		free(m->json);
		j = message_json__new(msg);
		json_object_del(j, "body");
		json_object_set_new(j, "body_omitted", json_string("too large for the ring"));
		m->json = json_dumps(j, JSON_COMPACT);
		json_decref(j);
	}
	ev->msg_bytes += msg_entry__bytes(m);
}

void evidence__fsync(struct evidence *ev, const struct actor *who, const struct fsync_event *e,
		     const char *path)
{
	struct fsync_meta *f;

	if (ev->fsyncs.n == ev->fsyncs.max)
		ring__pop(&ev->fsyncs);
	f = ring__push(&ev->fsyncs);
	if (!f)
		return;
	f->end_ns = e->hdr.ts_ns;
	f->start_ns = e->start_ns;
	f->ret = e->ret;
	f->pid = who->pid;
	f->tid = e->hdr.tid;
	f->fd = e->fd;
	f->datasync = e->datasync;
	util__copy(f->comm, sizeof(f->comm), who->comm);
	util__copy(f->path, sizeof(f->path), path ? path : "");
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

/* The messages behind the stages: on the stage's connection and stream, in its time window,
 * about this pod (or about nothing in particular, like a Status). */
static void collect_messages(struct evidence *ev, const struct bind_timeline *t,
			     struct stage_ref *refs, int n_refs, struct lines *out)
{
	struct conn_log *conns[STAGE_MAX + 2 * BIND_MAX_WATCHERS];
	int r, k, n_conns = 0;
	size_t i;

	/* Only the connections the stages name: a bind costs its own messages, not the table. */
	for (r = 0; r < n_refs; r++) {
		const struct stage *st = refs[r].st;
		struct conn_log *c;

		if (!st->seen || refs[r].dir < 0 || !st->who.conn)
			continue;
		c = conn_log__find(ev, st->who.pid, st->who.conn);
		for (k = 0; c && k < n_conns && conns[k] != c; k++)
			;
		if (c && k == n_conns)
			conns[n_conns++] = c;
	}
	for (k = 0; k < n_conns; k++) {
		struct conn_log *c = conns[k];

		for (i = 0; i < c->msgs.n; i++) {
			const struct msg_entry *m = ring__at(&c->msgs, i);
			json_t *stages = NULL, *j, *msg, *off;

			for (r = 0; r < n_refs; r++) {
				const struct stage *st = refs[r].st;

				/* Either direction: the stream and the time say it is this one. */
				if (!st->seen || refs[r].dir < 0 || st->who.pid != c->pid ||
				    st->who.conn != c->conn || st->stream_id != m->stream_id ||
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
			json_object_set_new(j, "pid", json_integer(c->pid));
			json_object_set_new(j, "comm", json_string(c->who.comm));
			json_object_set_new(j, "conn", json_integer((json_int_t)c->conn));
			json_object_set_new(j, "laddr", json_string(c->who.laddr));
			json_object_set_new(j, "raddr", json_string(c->who.raddr));
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

static json_t *data_line(const struct conn_log *c, const struct data_meta *d,
			 const struct stage_ref *r, int64_t wall_offset_ns)
{
	json_t *j = json_object();

	json_object_set_new(j, "event", json_string("data"));
	json_object_set_new(j, "stage", json_string(r->name));
	if (r->watcher >= 0)
		json_object_set_new(j, "watcher", json_integer(r->watcher));
	json_object_set_new(j, "ts_ns", json_integer((json_int_t)d->ts_ns));
	json_object_set_new(j, "wall_ns", json_integer((json_int_t)(d->ts_ns + wall_offset_ns)));
	json_object_set_new(j, "pid", json_integer(c->pid));
	json_object_set_new(j, "tid", json_integer(d->tid));
	json_object_set_new(j, "comm", json_string(c->who.comm));
	json_object_set_new(j, "conn", json_integer((json_int_t)c->conn));
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
		struct conn_log *c;

		if (!st->seen || refs[r].dir < 0 || !st->who.conn)
			continue;
		c = conn_log__find(ev, st->who.pid, st->who.conn);
		if (!c)
			continue;
		for (i = 0; i < c->data.n; i++) {
			const struct data_meta *d = ring__at(&c->data, i);

			if (d->dir == (refs[r].found_dir >= 0 ? refs[r].found_dir : refs[r].dir) &&
			    d->ts_ns >= st->first_ns && d->ts_ns <= st->last_ns)
				lines__add(out, d->ts_ns,
					   data_line(c, d, &refs[r], ev->wall_offset_ns));
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
	for (i = 0; i < ev->fsyncs.n; i++) {
		const struct fsync_meta *f = ring__at(&ev->fsyncs, i);
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

int evidence__bind(struct evidence *ev, const struct bind_view *view, const struct identities *ids)
{
	const struct bind_timeline *t = view->t;
	struct stage_ref refs[STAGE_MAX + 2 * BIND_MAX_WATCHERS];
	struct lines msgs = {}, kernel = {};
	char ns[BIND_NS_MAX], name[BIND_NAME_MAX], sub[BIND_NS_MAX + BIND_NAME_MAX + 48];
	json_t *header = NULL, *bins = NULL;
	const char *what = "";
	int n_refs, sub_fd = -1, attempt, i, err = 0;
	FILE *f;

	sanitize(ns, sizeof(ns), t->namespace_);
	sanitize(name, sizeof(name), t->name);
	/* A directory left by an earlier run with the same number gets a suffix, never reused. */
	for (attempt = 0;; attempt++) {
		if (attempt)
			snprintf(sub, sizeof(sub), "%04" PRIu64 "-%s-%s.%d", t->seq, ns, name,
				 attempt);
		else
			snprintf(sub, sizeof(sub), "%04" PRIu64 "-%s-%s", t->seq, ns, name);
		sub_fd = output_dir__create_at(ev->dir_fd, sub);
		if (sub_fd >= 0)
			break;
		if (sub_fd != -EEXIST || attempt == 99) {
			err = sub_fd;
			what = "create the bind's directory";
			goto report;
		}
	}

	f = output_file__open_at(sub_fd, "bind.json", true);
	if (!f) {
		err = -errno;
		what = "write bind.json";
		goto report;
	}
	timeline__print_json(f, view);
	if (output_file__close(f)) {
		err = -EIO;
		what = "write bind.json";
		goto report;
	}

	n_refs = stage_refs(t, refs);
	collect_messages(ev, t, refs, n_refs, &msgs);
	err = write_lines(sub_fd, "messages.jsonl", &msgs, NULL);
	if (err) {
		what = "write messages.jsonl";
		goto report;
	}
	collect_kernel(ev, t, refs, n_refs, &kernel);
	header = json_pack("{s:s, s:I, s:s}", "event", "header", "wall_offset_ns",
			   (json_int_t)ev->wall_offset_ns, "clock", "CLOCK_MONOTONIC");
	err = write_lines(sub_fd, "kernel.jsonl", &kernel, header);
	if (err) {
		what = "write kernel.jsonl";
		goto report;
	}

	bins = json_array();
	for (i = 0; i < identities__count(ids); i++)
		json_array_append(bins, identities__at(ids, i)->detail);
	f = output_file__open_at(sub_fd, "binaries.json", true);
	if (!f) {
		err = -errno;
		what = "write binaries.json";
		goto report;
	}
	json_dumpf(bins, f, JSON_INDENT(2));
	fputc('\n', f);
	if (output_file__close(f)) {
		err = -EIO;
		what = "write binaries.json";
	}
report:
	if (err && !ev->failed) {
		fprintf(stderr, "bindtrace: --evidence %s: cannot %s for %s/%s: %s\n", ev->dir,
			what, t->namespace_, t->name, strerror(-err));
		ev->failed = true;
	}
	if (sub_fd >= 0)
		close(sub_fd);
	json_decref(header);
	json_decref(bins);
	lines__free(&msgs);
	lines__free(&kernel);
	return err;
}

void evidence__close(struct evidence *ev)
{
	int i;

	if (!ev)
		return;
	for (i = 0; i < EV_MAX_CONNS; i++)
		if (ev->conns[i].used)
			conn_log__reset(ev, &ev->conns[i]);
	free(ev->fsyncs.v);
	if (ev->dir_fd >= 0)
		close(ev->dir_fd);
	free(ev->dir);
	free(ev);
}
