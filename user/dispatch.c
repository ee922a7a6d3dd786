/* The bind tracer's event dispatch: see dispatch.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "bind_metrics.h"
#include "citation.h"
#include "decode.h"
#include "dispatch.h"
#include "events.h"
#include "goelf.h"
#include "peerfeed.h"
#include "session.h"
#include "sockets.h"
#include "streams.h"
#include "targets.h"
#include "trace_outputs.h"
#include "util.h"
#include "watchers.h"

#define MAX_CONNS 65536
/* A connection idle this long is looked for among its process's sockets (rarely: /proc). */
#define CONN_IDLE_NS 10000000000ull

struct dispatch_conn {
	struct actor who;
	struct conn_decoder *dec;
	struct dispatch *d;
	uint64_t last_ns; /* the last event's time */
};

/* A growing array of fixed-size items: the work the callback leaves for the poll loop. */
struct queue {
	void *items;
	size_t size, n, cap;
};

struct queued_fsync {
	struct actor who;
	struct fsync_event e;
};

struct queued_peer {
	pid_t pid;
	uint64_t conn;
	uint64_t seen_ns; /* the connection's first event */
};

struct known_peer {
	pid_t pid;
	char comm[17];
};

struct dispatch {
	struct dispatch_deps deps;
	struct streams conns; /* per (pid, conn): the dispatch_conn (dir 0 slot) */
	struct streams known; /* per (pid, conn): a known_peer, until its connection shows up */
	struct queue fsyncs, calls, peers;
	struct dispatch_stats stats;
	unsigned gaps_told;	     /* --verbose lines about bytes lost, at most 200 */
	struct peer_feed *peer_feed; /* the reads of processes whose Reads are not probed */
};

static void *queue__push(struct queue *q)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;
		void *more = realloc(q->items, cap * q->size);

		if (!more)
			return NULL;
		q->items = more;
		q->cap = cap;
	}
	return (char *)q->items + q->size * q->n++;
}

static void *queue__at(const struct queue *q, size_t i)
{
	return (char *)q->items + q->size * i;
}

/* What a connection's decoder lost, into the dispatch's counts. */
static void add_decoder_stats(struct dispatch_stats *to, const struct dispatch_conn *cc)
{
	struct conn_decoder_stats st;

	conn_decoder__stats(cc->dec, &st);
	to->streams_evicted += st.streams_evicted;
	to->decode_errors += st.decode_errors;
}

static void dispatch_conn__free(struct dispatch_conn *cc)
{
	conn_decoder__free(cc->dec);
	free(cc);
}

void dispatch__free(struct dispatch *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; d->conns.slots && i < d->conns.cap; i++)
		if (d->conns.slots[i].user)
			dispatch_conn__free(d->conns.slots[i].user);
	for (i = 0; d->known.slots && i < d->known.cap; i++)
		free(d->known.slots[i].user);
	streams__free(&d->conns);
	streams__free(&d->known);
	free(d->fsyncs.items);
	free(d->calls.items);
	free(d->peers.items);
	peer_feed__free(d->peer_feed);
	free(d);
}

struct dispatch *dispatch__new(const struct dispatch_deps *deps)
{
	struct dispatch *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->deps = *deps;
	d->fsyncs.size = sizeof(struct queued_fsync);
	d->calls.size = sizeof(struct call_event);
	d->peers.size = sizeof(struct queued_peer);
	d->peer_feed = peer_feed__new(targets__reads_compare());
	if (d->peer_feed && !streams__init(&d->conns, MAX_CONNS) && !streams__init(&d->known, 1024))
		return d;
	dispatch__free(d);
	errno = ENOMEM;
	return NULL;
}

/* ---- In the ring buffer's callback: record and decode ---- */

static void on_decoded(const struct decoded_msg *msg, void *ctx)
{
	struct dispatch_conn *cc = ctx;
	struct dispatch_deps *deps = &cc->d->deps;

	if (deps->tap)
		deps->tap(&cc->who, msg, deps->tap_ctx);
	trace_outputs__message(deps->outputs, &cc->who, msg);
	correlator__message(deps->corr, &cc->who, msg);
}

static void print_connection(const struct dispatch_conn *cc)
{
	fprintf(stderr, "bindtrace: %s pid %d: connection %s -> %s%s%s (pid %d)\n",
		process_role__name(cc->who.role), cc->who.pid, endpoint__str(&cc->who.local).s,
		endpoint__str(&cc->who.remote).s, cc->who.peer_comm[0] ? ", peer " : "",
		cc->who.peer_comm, cc->who.peer_pid);
}

/* Takes the peer of (pid, conn) when it was known before the connection showed up. */
static bool take_known_peer(struct dispatch *d, struct actor *who)
{
	struct stream *ks = streams__find(&d->known, (uint32_t)who->pid, who->conn, 0);
	struct known_peer *k = ks ? ks->user : NULL;

	if (!k)
		return false;
	who->peer_pid = k->pid;
	util__copy(who->peer_comm, sizeof(who->peer_comm), k->comm);
	free(k);
	streams__del(&d->known, ks);
	return true;
}

struct dispatch_conn *dispatch__conn(struct dispatch *d, const struct actor *who, int client_dir,
				     bool *made)
{
	struct stream *cs = streams__get(&d->conns, (uint32_t)who->pid, who->conn, 0);
	struct dispatch_conn *cc;

	*made = false;
	if (!cs) {
		d->stats.conn_table_full = true;
		return NULL;
	}
	if (cs->user)
		return cs->user;
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return NULL;
	cc->d = d;
	cc->who = *who;
	cc->dec = conn_decoder__new(on_decoded, cc);
	if (!cc->dec) {
		free(cc);
		return NULL;
	}
	conn_decoder__offsets_from_zero(cc->dec);
	if (client_dir >= 0)
		conn_decoder__set_client_dir(cc->dec, client_dir);
	cs->user = cc;
	*made = true;
	return cc;
}

const struct actor *dispatch_conn__who(const struct dispatch_conn *c)
{
	return &c->who;
}

int64_t dispatch__data(struct dispatch *d, struct dispatch_conn *cc, const struct data_event *e)
{
	int64_t missed;

	trace_outputs__data(d->deps.outputs, &cc->who, e);
	cc->last_ns = e->hdr.ts_ns;
	missed = conn_decoder__feed(cc->dec, e->dir, e->offset, e->data, e->len, e->hdr.ts_ns);
	if (missed > 0) {
		bind_metrics__gap(d->deps.metrics, cc->who.role, (uint64_t)missed);
		correlator__loss(d->deps.corr, cc->who.pid, cc->who.conn, e->hdr.ts_ns);
		/* Where a gap came from (--verbose): which side, which way, what brought it. */
		if (verbose && d->gaps_told++ < 200)
			fprintf(stderr,
				"bindtrace: %s pid %d: connection %s -> %s: %lld bytes lost before "
				"offset %llu %s (a %s event of %u bytes, at %llu ns)\n",
				process_role__name(cc->who.role), cc->who.pid,
				endpoint__str(&cc->who.local).s, endpoint__str(&cc->who.remote).s,
				(long long)missed, (unsigned long long)e->offset,
				e->dir == DIR_OUT ? "written" : "read",
				e->source == SOURCE_TLS ? "TLS" : "syscall", e->len,
				(unsigned long long)e->hdr.ts_ns);
	}
	return missed;
}

/* Whether a client of the apiserver reads, or may come to read, through the peer feed: a target
 * that does, or a process that is not one yet but runs a program of a role that does (a restarted
 * scheduler, say, connected before it is attached). */
static bool may_read_from_peers(struct dispatch *d, pid_t pid, const char *comm)
{
	const struct target *t = targets__of(d->deps.targets, pid);

	/* Found as a role's replacement but not attached yet, its flags are not set: it reads as
	 * its role does (test-faults b: a restarted scheduler's first Writes freed here, so the
	 * first pod after the restart lost the watch event that told the scheduler of it). */
	if (t && t->attached)
		return t->reads_via_syscall;
	if (t && (t->role == ROLE_SCHEDULER || t->role == ROLE_ETCD))
		return true;
	return !strcmp(comm, process_role__name(ROLE_SCHEDULER)) ||
	       !strcmp(comm, process_role__name(ROLE_ETCD));
}

/* A client of the apiserver that does not read through the peer feed: nothing is queued for it. */
static void no_reader_check(struct dispatch *d, const struct dispatch_conn *cc)
{
	uint64_t freed;

	if (!cc->who.peer_pid || may_read_from_peers(d, cc->who.peer_pid, cc->who.peer_comm))
		return;
	freed = peer_feed__no_reader(d->peer_feed, &cc->who.local, &cc->who.remote);
	if (verbose && freed)
		fprintf(stderr,
			"bindtrace: %s -> %s: %llu bytes queued for its reader freed: pid %d (%s) "
			"does not read through the peer feed\n",
			endpoint__str(&cc->who.local).s, endpoint__str(&cc->who.remote).s,
			(unsigned long long)freed, cc->who.peer_pid, cc->who.peer_comm);
}

/* A traced process's connection seen for the first time: who it is, which end is the client
 * (an accepted one's is the remote), and, for the apiserver's clients on this host, whose it is
 * (known, or queued). */
static struct dispatch_conn *conn_of(struct dispatch *d, const struct target *t,
				     const struct data_event *e)
{
	struct stream *cs = streams__find(&d->conns, e->hdr.pid, e->conn, 0);
	struct actor who = { .pid = t->proc.pid, .role = t->role, .conn = e->conn };
	struct dispatch_conn *cc;
	struct queued_peer *peer;
	bool accepted, made;

	if (cs && cs->user)
		return cs->user;
	util__copy(who.comm, sizeof(who.comm), t->proc.comm);
	endpoint__set(&who.local, e->family, e->laddr, e->lport);
	endpoint__set(&who.remote, e->family, e->raddr, e->rport);
	accepted = sockets__listening_at(d->deps.sockets, t->proc.pid, &who.local, e->hdr.ts_ns);
	cc = dispatch__conn(d, &who, accepted ? CONN_DIR_IN : CONN_DIR_OUT, &made);
	if (!cc || !made)
		return cc;
	/* Its reads come from its own Read probes: nothing its peer writes is kept for it (etcd's
	 * answers to the apiserver, the scheduler's requests). */
	if (!t->reads_via_syscall) {
		uint64_t freed = peer_feed__no_reader(d->peer_feed, &who.remote, &who.local);

		if (verbose && freed)
			fprintf(
			    stderr,
			    "bindtrace: %s -> %s: %llu bytes queued for its reader freed: %s pid "
			    "%d reads through its own probes\n",
			    endpoint__str(&who.remote).s, endpoint__str(&who.local).s,
			    (unsigned long long)freed, process_role__name(t->role), t->proc.pid);
	}
	/* The apiserver's clients on this host, named: the watchers of a bind. */
	if (t->role != ROLE_APISERVER || !accepted) {
		peer = NULL;
	} else if (take_known_peer(d, &cc->who)) {
		peer = NULL;
		no_reader_check(d, cc);
	} else {
		peer = queue__push(&d->peers);
	}
	if (peer) {
		peer->pid = t->proc.pid;
		peer->conn = e->conn;
		peer->seen_ns = e->hdr.ts_ns;
	} else if (verbose) {
		print_connection(cc);
	}
	return cc;
}

/* A data event of a traced process (a Write, a probed Read, or a read released by the peer
 * feed): recorded and decoded. */
static void deliver(void *ctx, const struct data_event *e)
{
	struct dispatch *d = ctx;
	struct target *t = targets__of(d->deps.targets, (pid_t)e->hdr.pid);
	struct dispatch_conn *cc = t ? conn_of(d, t, e) : NULL;

	if (cc)
		dispatch__data(d, cc, e);
}

/* Every traced writer's Write goes to the peer feed: its reader may read through it (the
 * scheduler and etcd reading the apiserver, an etcd member reading another's raft traffic). What
 * a reader with its own Read probes is sent is not kept: conn_of() says so at its connection's
 * first event. A reader not named yet is waited for long only by the apiserver's Writes (a
 * scheduler idle or stopped since before the tracer started); the others' readers read at once
 * when they read this way (a member), else they are clients nobody traces here (an apiserver of
 * another node on its etcd member). Before, only the apiserver's Writes were queued unless the
 * apiserver itself read this way, so with its Reads probed (the default) no member's raft Write
 * reached another member's reads. */
static void peer_feed_written(struct dispatch *d, const struct data_event *e)
{
	struct target *w = targets__of(d->deps.targets, (pid_t)e->hdr.pid);

	if (w)
		peer_feed__written(d->peer_feed, e, w->role == ROLE_APISERVER);
}

static void on_data(void *ctx, const struct data_event *e)
{
	struct dispatch *d = ctx;

	deliver(d, e);
	if (e->dir == DIR_OUT)
		peer_feed_written(d, e);
	else
		peer_feed__probed_read(d->peer_feed, e);
}

/* A read(2) of a process whose Reads are not probed: the Writes it reached, as its reads. */
static void on_sock_read(void *ctx, const struct sock_read_event *e)
{
	struct dispatch *d = ctx;
	const struct target *t = targets__of(d->deps.targets, (pid_t)e->hdr.pid);

	/* The apiserver's: a create whose client is not traced is timed by them. */
	if (t && t->role == ROLE_APISERVER)
		correlator__conn_read(d->deps.corr, (pid_t)e->hdr.pid, e->conn, e->hdr.ts_ns);
	peer_feed__read(d->peer_feed, e, deliver, d);
}

static void run_fsync(struct dispatch *d, const struct actor *who, const struct fsync_event *e);
static void run_call(struct dispatch *d, const struct call_event *e);

static void on_fsync(void *ctx, const struct fsync_event *e)
{
	struct dispatch *d = ctx;
	struct target *t = targets__of(d->deps.targets, (pid_t)e->hdr.pid);
	struct queued_fsync *q;
	struct actor who = { .pid = (pid_t)e->hdr.pid, .role = ROLE_ETCD };

	if (!t)
		return;
	util__copy(who.comm, sizeof(who.comm), t->proc.comm);
	q = queue__push(&d->fsyncs);
	if (!q) {
		run_fsync(d, &who, e); /* no memory to queue it: now, rather than lose it */
		return;
	}
	q->who = who;
	q->e = *e;
}

static void on_call(void *ctx, const struct call_event *e)
{
	struct dispatch *d = ctx;
	struct target *t = targets__of(d->deps.targets, (pid_t)e->hdr.pid);
	struct call_event *q;

	if (!t || !t->gb)
		return;
	q = queue__push(&d->calls);
	if (q)
		*q = *e;
	else
		run_call(d, e);
}

void dispatch__handlers(struct dispatch *d, struct session_handlers *h)
{
	memset(h, 0, sizeof(*h));
	h->data = on_data;
	h->fsync = on_fsync;
	h->call = on_call;
	h->sock_read = on_sock_read;
	h->ctx = d;
}

/* ---- From the poll loop: what may block ---- */

void dispatch__peer_known(struct dispatch *d, pid_t pid, uint64_t conn, pid_t peer)
{
	struct stream *ks = streams__get(&d->known, (uint32_t)pid, conn, 0);
	struct known_peer *k;
	struct process_info info;

	if (!ks || ks->user || !(k = calloc(1, sizeof(*k))))
		return;
	k->pid = peer;
	if (discover__process(peer, &info) == 0)
		util__copy(k->comm, sizeof(k->comm), info.comm);
	ks->user = k;
}

void dispatch__fsync(struct dispatch *d, const struct actor *who, const struct fsync_event *e,
		     const char *path)
{
	bool wal = strstr(path, "/member/wal/") != NULL;

	trace_outputs__fsync(d->deps.outputs, who, e, path);
	correlator__fsync(d->deps.corr, who, e->start_ns, e->hdr.ts_ns, wal, e->ret);
}

static void run_fsync(struct dispatch *d, const struct actor *who, const struct fsync_event *e)
{
	dispatch__fsync(d, who, e, sockets__fd_path(d->deps.sockets, who->pid, e->fd, e->file_id));
}

/* The caller chain's PCs to functions and lines; the cited frame is the first caller outside
 * client-go: the line that issued the bind. */
static void symbolise(const struct target *t, const struct call_event *e, struct citation *ci)
{
	const char *func, *file;
	uint32_t i;
	int line;

	for (i = 0; i < e->n_frames && i < MAX_STACK_FRAMES && ci->n_frames < BIND_MAX_FRAMES;
	     i++) {
		struct frame_line *f = &ci->frames[ci->n_frames];
		/* A return address points after the call: look up the call's line. */
		uint64_t pc = i ? e->frames[i] - 1 : e->frames[i];

		if (!e->frames[i])
			break;
		f->pc = e->frames[i];
		if (go_binary__pc_to_line(t->gb, pc, t->load_bias, &func, &file, &line) == 0) {
			util__copy(f->func, sizeof(f->func), func);
			util__copy(f->file, sizeof(f->file), file);
			f->line = line;
		} else {
			util__copy(f->func, sizeof(f->func), "?");
		}
		ci->n_frames++;
	}
	citation__choose(ci);
}

static void copy_name(char *dst, size_t cap, const char *src, size_t len)
{
	size_t n = len < cap ? len : cap - 1;

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void run_call(struct dispatch *d, const struct call_event *e)
{
	struct target *t = targets__of(d->deps.targets, (pid_t)e->hdr.pid);
	struct citation ci = { .known = true, .cited = -1 };
	char ns[BIND_NS_MAX], name[BIND_NAME_MAX];

	if (!t || !t->gb)
		return;
	util__copy(ci.kubernetes_version, sizeof(ci.kubernetes_version), t->k8s_version);
	util__copy(ci.commit, sizeof(ci.commit), t->commit);
	util__copy(ci.go_version, sizeof(ci.go_version), t->go_version);
	ci.queued = e->cookie & CALL_COOKIE_QUEUED;
	ci.giveup = e->cookie & CALL_COOKIE_GIVEUP;
	ci.patch_dispatched = ci.giveup && (e->cookie & CALL_COOKIE_AUX) && e->aux;
	ci.object = e->object;
	if (ci.queued)
		util__copy(ci.probe, sizeof(ci.probe), targets__queue_probe);
	else if (ci.giveup)
		util__copy(ci.probe, sizeof(ci.probe), targets__giveup_probe);
	else
		util__copy(ci.probe, sizeof(ci.probe), t->call_probe ? t->call_probe : "");
	ci.tid = (pid_t)e->hdr.tid;
	ci.goroutine = e->goroutine;
	ci.mono_ns = e->hdr.ts_ns;
	symbolise(t, e, &ci);
	copy_name(ns, sizeof(ns), e->namespace_, e->namespace_len);
	copy_name(name, sizeof(name), e->name, e->name_len);
	correlator__call(d->deps.corr, ns, name, &ci);
}

/* Who is at the other end of a connection the apiserver accepted; traced if it can be. */
static void run_peer(struct dispatch *d, const struct queued_peer *p)
{
	struct stream *cs = streams__find(&d->conns, (uint32_t)p->pid, p->conn, 0);
	struct dispatch_conn *cc = cs ? cs->user : NULL;
	struct process_info info;

	if (!cc)
		return;
	cc->who.peer_pid =
	    sockets__peer(d->deps.sockets, p->pid, &cc->who.local, &cc->who.remote, p->seen_ns);
	if (cc->who.peer_pid && discover__process(cc->who.peer_pid, &info) == 0)
		util__copy(cc->who.peer_comm, sizeof(cc->who.peer_comm), info.comm);
	if (verbose)
		print_connection(cc);
	no_reader_check(d, cc);
	watchers__consider(d->deps.watchers, cc->who.peer_pid);
}

void dispatch__run_queued(struct dispatch *d)
{
	size_t i;

	for (i = 0; i < d->fsyncs.n; i++) {
		struct queued_fsync *q = queue__at(&d->fsyncs, i);

		run_fsync(d, &q->who, &q->e);
	}
	d->fsyncs.n = 0;
	for (i = 0; i < d->calls.n; i++)
		run_call(d, queue__at(&d->calls, i));
	d->calls.n = 0;
	/* Attaching a watcher can take a while: the queue is read by index, not held. */
	for (i = 0; i < d->peers.n; i++) {
		struct queued_peer p = *(struct queued_peer *)queue__at(&d->peers, i);

		run_peer(d, &p);
	}
	d->peers.n = 0;
}

/* ---- Housekeeping ---- */

static void close_conn(struct dispatch *d, pid_t pid, uint64_t conn, uint64_t now)
{
	struct stream *cs = streams__find(&d->conns, (uint32_t)pid, conn, 0);
	struct dispatch_conn *cc = cs ? cs->user : NULL;

	if (!cc)
		return;
	conn_decoder__close(cc->dec, now);
	add_decoder_stats(&d->stats, cc);
	dispatch_conn__free(cc);
	streams__del(&d->conns, cs);
	d->stats.conns_closed++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Idle connections whose socket is no longer open in their process are closed: their decoders
 * and slots are freed, so a long run with many short-lived clients keeps its memory (and the
 * table keeps room). Idle ones only, and each process's descriptors read once, so the /proc scan
 * stays rare. Idle on the records' clock (read_to_ns, how far they have been read): the records
 * read have had nothing of it for CONN_IDLE_NS, however late they are read. */
void dispatch__sweep(struct dispatch *d, uint64_t read_to_ns)
{
	struct queue idle = { .size = sizeof(struct queued_peer) };
	size_t i, j, n_open;

	for (i = 0; d->conns.slots && i < d->conns.cap; i++) {
		struct dispatch_conn *cc = d->conns.slots[i].user;
		struct queued_peer *p;

		if (!cc || read_to_ns < cc->last_ns + CONN_IDLE_NS || !(p = queue__push(&idle)))
			continue;
		p->pid = cc->who.pid;
		p->conn = cc->who.conn;
	}
	for (i = 0; i < idle.n; i++) {
		struct queued_peer *first = queue__at(&idle, i);
		pid_t pid = first->pid;
		uint64_t *open;

		if (!pid)
			continue; /* done with its process already */
		open = sockets__open_inodes(pid, &n_open);
		for (j = i; j < idle.n; j++) {
			struct queued_peer *p = queue__at(&idle, j);

			if (p->pid != pid)
				continue;
			if (!open || !bsearch(&p->conn, open, n_open, sizeof(*open), cmp_u64))
				close_conn(d, pid, p->conn, read_to_ns);
			p->pid = 0;
		}
		free(open);
	}
	free(idle.items);
}

void dispatch__relabel(struct dispatch *d, pid_t pid, enum process_role role, const char *comm,
		       bool reads_via_syscall)
{
	size_t i;

	for (i = 0; d->conns.slots && i < d->conns.cap; i++) {
		struct dispatch_conn *cc = d->conns.slots[i].user;

		if (!cc || cc->who.pid != pid)
			continue;
		cc->who.role = role;
		util__copy(cc->who.comm, sizeof(cc->who.comm), comm);
		/* conn_of said its peer's Writes had no reader here (its reads were its probes'). */
		if (reads_via_syscall)
			peer_feed__reader_reads(d->peer_feed, &cc->who.remote, &cc->who.local);
	}
}

void dispatch__expire(struct dispatch *d, uint64_t now_ns)
{
	peer_feed__expire(d->peer_feed, now_ns);
}

void dispatch__print_peer_feed(const struct dispatch *d, FILE *out)
{
	peer_feed__print(d->peer_feed, out);
}

void dispatch__process_gone(struct dispatch *d, pid_t pid)
{
	peer_feed__reader_gone(d->peer_feed, pid);
}

void dispatch__stats(const struct dispatch *d, struct dispatch_stats *stats)
{
	size_t i;

	*stats = d->stats;
	for (i = 0; d->conns.slots && i < d->conns.cap; i++)
		if (d->conns.slots[i].user)
			add_decoder_stats(stats, d->conns.slots[i].user);
}
