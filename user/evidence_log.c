/* The evidence's memory: bounded rings per (pid, connection) of data event metadata and
 * decoded messages (as JSON), and one of etcd's fsyncs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence_log.h"
#include "message_json.h"
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

struct evidence_log {
	uint64_t retention_ns;
	struct conn_log conns[EV_MAX_CONNS];
	int buckets[1 << EV_HASH_BITS];
	struct ring fsyncs;
	size_t data_total; /* data events held, all connections */
	size_t msg_bytes;  /* memory of the messages held */
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

static void conn_log__pop_data(struct evidence_log *ev, struct conn_log *c)
{
	ring__pop(&c->data);
	ev->data_total--;
}

static void conn_log__pop_msg(struct evidence_log *ev, struct conn_log *c)
{
	struct msg_entry *m = ring__at(&c->msgs, 0);

	ev->msg_bytes -= msg_entry__bytes(m);
	free(m->subject);
	free(m->json);
	ring__pop(&c->msgs);
}

static void conn_log__reset(struct evidence_log *ev, struct conn_log *c)
{
	while (c->msgs.n)
		conn_log__pop_msg(ev, c);
	ev->data_total -= c->data.n;
	free(c->data.v);
	free(c->msgs.v);
	memset(c, 0, sizeof(*c));
}

static struct conn_log *conn_log__find(struct evidence_log *ev, pid_t pid, uint64_t conn)
{
	int i;

	for (i = ev->buckets[conn_hash(pid, conn)]; i >= 0; i = ev->conns[i].next)
		if (ev->conns[i].pid == pid && ev->conns[i].conn == conn)
			return &ev->conns[i];
	return NULL;
}

static void conn_log__unlink(struct evidence_log *ev, int idx)
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
static struct conn_log *conn_log__get(struct evidence_log *ev, const struct actor *who,
				      uint64_t now)
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
static void conn_log__trim(struct evidence_log *ev, struct conn_log *c, uint64_t now)
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

/* ---- The log ---- */

struct evidence_log *evidence_log__new(uint64_t retention_ns)
{
	struct evidence_log *ev = calloc(1, sizeof(*ev));
	size_t i;

	if (!ev)
		return NULL;
	ev->retention_ns = retention_ns;
	ev->fsyncs.elem = sizeof(struct fsync_meta);
	ev->fsyncs.max = EV_FSYNCS;
	for (i = 0; i < sizeof(ev->buckets) / sizeof(ev->buckets[0]); i++)
		ev->buckets[i] = -1;
	return ev;
}

void evidence_log__free(struct evidence_log *ev)
{
	int i;

	if (!ev)
		return;
	for (i = 0; i < EV_MAX_CONNS; i++)
		if (ev->conns[i].used)
			conn_log__reset(ev, &ev->conns[i]);
	free(ev->fsyncs.v);
	free(ev);
}

void evidence_log__data(struct evidence_log *ev, const struct actor *who,
			const struct data_event *e)
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

void evidence_log__message(struct evidence_log *ev, const struct actor *who,
			   const struct decoded_msg *msg)
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

void evidence_log__fsync(struct evidence_log *ev, const struct actor *who,
			 const struct fsync_event *e, const char *path)
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

/* ---- Reading it ---- */

const struct conn_log *evidence_log__conn(const struct evidence_log *ev, pid_t pid, uint64_t conn)
{
	return conn_log__find((struct evidence_log *)ev, pid, conn);
}

const struct actor *conn_log__who(const struct conn_log *c)
{
	return &c->who;
}

size_t conn_log__n_data(const struct conn_log *c)
{
	return c->data.n;
}

const struct data_meta *conn_log__data(const struct conn_log *c, size_t i)
{
	return ring__at(&c->data, i);
}

size_t conn_log__n_messages(const struct conn_log *c)
{
	return c->msgs.n;
}

const struct msg_entry *conn_log__message(const struct conn_log *c, size_t i)
{
	return ring__at(&c->msgs, i);
}

size_t evidence_log__n_fsyncs(const struct evidence_log *ev)
{
	return ev->fsyncs.n;
}

const struct fsync_meta *evidence_log__fsync_at(const struct evidence_log *ev, size_t i)
{
	return ring__at(&ev->fsyncs, i);
}
