/* The bind correlator.
 *
 * The HTTP legs of a bind (the scheduler's POST .../binding and its response, on both sides)
 * open and close a bind. Everything else it joins — the apiserver's etcd Txn and its response,
 * the same Txn inside etcd, etcd's WAL fsyncs, etcd's watch event back to the apiserver, the
 * apiserver's watch events to every watcher, the scheduler's bind call — is kept in a bounded
 * ring of observations, and resolved when the bind closes (its response seen, plus a linger for
 * the watch events that follow). The joins are exact where the wire allows: an HTTP/2 stream id
 * is the same on both ends of a connection, whose 4-tuple reads reversed on the other end; a
 * Txn's key is the pod's; the write's revision is the pod's resourceVersion and the watch
 * events' mod_revision. Nothing is invented: a stage without its observation is reported
 * missing, with the reason when one is known.
 *
 * The pod's path before its bind (its create and the scheduler's informer reading it) is kept per
 * pod in a bounded table of pending pods (count and age; what is dropped is counted) and moved
 * into the bind when it closes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "citation.h"
#include "conn_reads.h"
#include "strpool.h"
#include "correlate.h"
#include "util.h"

#define MAX_OPEN CORRELATOR_MAX_OPEN
#define MAX_OBS 16384
/* Heads of the observations' chains (see obs_with_key): a power of two. */
#define OBS_BUCKETS 4096
#define MAX_LOSSES 1024
#define MAX_DROP_SPANS 256
#define KEY_MAX 512
#define OBS_USER_AGENT_MAX 128
#define OBS_PATH_MAX 160
#define DEFAULT_MAX_PENDING 8192
#define DEFAULT_PENDING_AGE_NS (600ull * 1000000000ull)
#define MAX_CREATE_TXNS 256 /* create Txns awaiting their response */
#define MAX_NAMELESS 64	    /* creates of generateName'd pods awaiting their 201 */
#define PENDING_STAGES (STAGE_BIND_REQUEST - STAGE_CREATE_REQUEST)
#define MAX_RAFT_OBS 16384 /* raft observations: a bind's entry, acks, commit indexes */
#define MAX_RAFT_LINKS 64  /* (pid, conn, direction): the last ack and commit index kept */
#define MAX_RAFT_PIDS 16   /* etcd processes and the member ids they speak as */
#define MAX_GONE 16	   /* traced processes that exited, remembered */
#define MAX_RAFT_KEYS 8192 /* pod keys and whether their last raft entry had them bound */
#define RAFT_KEY_PROBE 8   /* slots a key may take from its hash's (the oldest is reused) */
/* A bind seen only as its raft entry closes this long after the entry (and the linger): the
 * member's fsync, its MsgAppResp and the commit index come after it, under load 100s of ms. */
#define RAFT_ONLY_WAIT_NS 2000000000ull

enum obs_kind {
	OBS_NONE = 0,
	OBS_TXN_SENT,	     /* apiserver wrote a Txn on a pod key */
	OBS_TXN_RESPONSE_IN, /* apiserver read a Txn response */
	OBS_ETCD_TXN_IN,     /* etcd read a Txn on a pod key */
	OBS_ETCD_TXN_OUT,    /* etcd wrote a Txn response */
	OBS_FSYNC,	     /* etcd fdatasync of its WAL */
	OBS_ETCD_WATCH,	     /* apiserver read an etcd watch event on a pod key */
	OBS_WATCH_SENT,	     /* apiserver wrote a pod watch event */
	OBS_WATCH_RECEIVED,  /* a traced watcher read a pod watch event */
	OBS_CALL,	     /* the scheduler's bind call */
};

struct observation {
	enum obs_kind kind;
	uint64_t first_ns, last_ns;
	uint32_t stream_id;
	struct actor who;
	/* The strings below are held in the correlator's string pool (see strpool.h), each cut
	 * as a char[*_MAX] array would cut it; "" when unset. */
	const char *key;     /* etcd key, or "ns/name" (KEY_MAX) */
	uint64_t key_hash;   /* of key: compared before it */
	int64_t revision;    /* response/watch revision, or a watch event's resourceVersion */
	int64_t compare_rev; /* Txn compare */
	bool succeeded;
	bool prev_known;
	int grpc_status;	/* a Txn's error answer: its gRPC status (>0) */
	const char *node;	/* Txn put / watch event: spec.nodeName (BIND_NAME_MAX); a Txn's
				 * error answer: its grpc-message */
	const char *prev_node;	/* etcd watch: prev_kv's (BIND_NAME_MAX) */
	const char *user_agent; /* (OBS_USER_AGENT_MAX) */
	const char *path;	/* (OBS_PATH_MAX) */
	char encoding[16];
	char event_type[16];
	struct packed_citation *citation; /* OBS_CALL, owned */
	bool cit_queued, cit_giveup;	  /* OBS_CALL: its citation's queued, giveup, object */
	uint64_t cit_object;
	/* Its number (obs_next when added) and, plus one, the number of the observation added
	 * before it in the same chain by key hash and by (pid, conn, stream): 0 ends a chain. */
	uint64_t seq, key_prev, link_prev;
};

/* The observations of one chain still in the ring, newest first (slots). */
struct obs_list {
	uint32_t *slot;
	size_t n;
};

/* A citation as an observation holds it until its bind closes: every field of struct citation
 * but the frames, byte for byte (so fields added to it are kept without a change here), and only
 * the frames the stack had, their function and file names in the correlator's string pool. A
 * struct citation is 16 KiB whatever the stack; the ring holds a call per bind, for as many
 * binds as fit in its 16384 observations (thousands with few watchers): this is what lets that
 * cost follow the stacks' real size. */
#define CITATION_FRAMES_AT offsetof(struct citation, frames)
#define CITATION_AFTER_FRAMES (CITATION_FRAMES_AT + sizeof(((struct citation *)0)->frames))

struct packed_frame {
	uint64_t pc;
	const char *func, *file; /* pooled */
	int line;
};

struct packed_citation {
	unsigned char before[CITATION_FRAMES_AT];
	unsigned char after[sizeof(struct citation) - CITATION_AFTER_FRAMES];
	int n_frames;
	struct packed_frame frames[];
};

/* The part of a bind_timeline an open bind fills; the rest (watchers, citation) is resolved into
 * the correlator's done bind when it closes. Only these bytes of an open bind's slot are ever
 * touched, so idle slots and the unused tail of each cost no memory. */
#define OPEN_PART offsetof(struct bind_timeline, watchers)

struct open_bind {
	bool used;
	uint64_t responded_ns;	/* when the bind's response was first seen */
	uint64_t etcd_watch_ns; /* when the apiserver read etcd's watch event of the pod */
	bool responded;		/* bind_response or bind_response_received seen */
	uint64_t close_after_ns;
	/* obs_next when it opened: over MAX_OBS more since, its own may have been overwritten */
	uint64_t obs_at_open;
	struct bind_timeline t;
};

/* A pod created and not yet bound: its stages before the bind. */
struct pending_pod {
	bool used;
	uint64_t hash;
	uint32_t next; /* the next of its bucket's chain (slot + 1; 0 ends): see pending_find */
	char key[BIND_NS_MAX + BIND_NAME_MAX + 2]; /* "ns/name" */
	uint64_t first_ns;			   /* when it was first seen */
	int64_t create_revision;
	struct stage stages[PENDING_STAGES]; /* by stage_id - STAGE_CREATE_REQUEST */
	/* The apiserver read a request carrying this Pod without its method and path: on a
	 * connection opened before bindtrace attached (HTTP/2 header state unknown). */
	bool headerless;
	/* The apiserver answered with this Pod (not yet bound) without a status it could decode:
	 * on a client connection opened before bindtrace attached, whose request was not
	 * captured (its Reads not probed, its client not traced then). */
	bool headerless_answer;
	/* When the apiserver wrote its create Txn to etcd (else etcd read it); 0 not seen: the
	 * request had been read by then (create_from_reads). */
	uint64_t create_txn_ns;
	/* Which ends decoded its create Txn (CREATE_TXN_SEEN_*): create_txn_ns is the apiserver's
	 * once it is seen there; a create answered with neither says whether the request or its
	 * answer went missing. */
	uint8_t create_txn_seen;
};

#define CREATE_TXN_SEEN_APISERVER 1 /* the apiserver's write of it */
#define CREATE_TXN_SEEN_ETCD 2	    /* etcd's read of it */

/* The apiserver read a create of a generateName'd pod: the name is in its 201, on the same stream
 * of the same connection. */
struct nameless_create {
	pid_t pid;
	uint64_t conn;
	uint32_t stream_id;
	char ns[BIND_NS_MAX];
	struct stage stage;
};

/* A create Txn of a pending pod, on one end of the apiserver-etcd connection, until its answer. */
struct create_txn {
	pid_t pid;
	uint64_t conn;
	uint32_t stream_id;
	uint64_t hash;
	char key[BIND_NS_MAX + BIND_NAME_MAX + 2];
};

/* What raft traffic tells of a bind's entry, as one member saw it (sent: written by who, else
 * read). Only what a bind can use is kept: the pod entries of MsgProp and MsgApp, every ack
 * (MsgAppResp) and commit index (MsgApp, MsgHeartbeat) that moved on its link. */
enum raft_obs_kind {
	ROBS_NONE = 0,
	ROBS_PROP,     /* MsgProp carrying a pod Txn entry */
	ROBS_APP,      /* MsgApp carrying a pod Txn entry: index and term are the entry's */
	ROBS_APP_RESP, /* MsgAppResp (not a reject): index acknowledged */
	ROBS_COMMIT,   /* a leader's message carrying commit = index */
};

struct raft_obs {
	enum raft_obs_kind kind;
	bool sent;
	uint64_t first_ns, last_ns;
	struct actor who;
	uint64_t from, to; /* member ids; the observer's own always known, the other 0 unknown */
	uint64_t index, term;
	uint64_t request_id;
	uint64_t key_hash; /* ROBS_PROP/APP: of the pod key */
	int64_t compare_rev;
	bool binds; /* ROBS_PROP/APP: the entry that set the pod's nodeName (struct raft_key) */
};

/* A pod key as the raft entries have written it: created (or last written) with nodeName "",
 * then the first entry that sets it, the bind, named by its header.ID (the leader's MsgApp to
 * each follower carries it again). */
struct raft_key {
	uint64_t hash;		  /* 0: free */
	uint64_t bind_request_id; /* 0: not bound since the key was seen unbound */
	bool unbound;
	uint64_t used_ns;
};

struct raft_link {
	pid_t pid;
	uint64_t conn;
	bool sent;
	uint64_t last_ack, last_commit;
	uint64_t used_ns;
};

struct raft_pid {
	pid_t pid;
	uint64_t id;
	uint64_t gone_ns; /* its process exited then (correlator__process_gone); 0 running */
};

struct loss {
	pid_t pid;
	uint64_t conn;	  /* 0: ring buffer drop */
	uint64_t from_ns; /* the loss happened in [from_ns, ns] */
	uint64_t ns;
};

/* The watchers' connections whose reads are traced, by their apiserver's end (local, remote),
 * with when the first pod watch event read on each was read. An event sent later on one of them
 * that has no receipt when its bind closes was read late (the apiserver's fan-out can trail
 * etcd's event by over a second in a burst), not by a watcher that is not traced. Open
 * addressing, never emptied: a closed connection's ports would have to come back between the
 * same two addresses to be taken for it. Three quarters full, no more are kept (their missing
 * receipts say "not traced", as before). */
#define RECEIVING_SLOTS 8192

struct receiving_conn {
	uint64_t key; /* 0: empty */
	uint64_t first_ns;
};

/* Binds closed lately, by their pod's key and revision. A watch event of a bind's revision that
 * the apiserver sends after its bind closed goes to a watcher its timeline does not list (in a
 * burst the fan-out can trail etcd's event by more than the linger): such events are counted.
 * Open addressing on the key's hash, at most CLOSED_PROBES slots looked at; a slot is taken
 * again for the same pod or when its bind closed over CLOSED_KEEP_NS before, else the oldest
 * of those looked at is. */
#define CLOSED_SLOTS 8192
#define CLOSED_PROBES 16
#define CLOSED_KEEP_NS 60000000000ull

struct closed_bind {
	uint64_t key_hash; /* 0: empty */
	int64_t revision;
	uint64_t closed_ns;
};

struct correlator {
	struct correlator_options opt;
	bind_done_cb cb;
	void *ctx;
	struct open_bind *binds;
	size_t n_open;
	size_t hi_water; /* binds[hi_water...] have never been used */
	struct observation *obs;
	uint64_t obs_next; /* total ever added; slot = obs_next % MAX_OBS */
	struct receiving_conn receiving[RECEIVING_SLOTS];
	size_t n_receiving;
	struct closed_bind closed[CLOSED_SLOTS];
	/* The newest observation's number plus one in each chain (0: none): closing a bind looks
	 * at the few observations of its pod, of its streams and of etcd's fsyncs, not at the
	 * whole ring (16384 of them, several times per bind). */
	uint64_t key_head[OBS_BUCKETS], link_head[OBS_BUCKETS];
	struct obs_list by_key, by_link; /* the last chain walked of each kind */
	struct bind_timeline done;	 /* the bind being closed, whole */
	struct loss losses[MAX_LOSSES];	 /* gaps, per connection */
	uint64_t loss_next;
	/* Ring buffer drops, kept apart so that a flood of gaps cannot push them out; reads of
	 * the counter one after the other that each found drops make one span. */
	struct loss drop_spans[MAX_DROP_SPANS];
	uint64_t drop_next;
	uint64_t seq;
	struct correlator_stats stats;
	struct pending_pod *pending;
	size_t pending_hi;	/* pending[pending_hi...] have never been used */
	uint32_t *pending_head; /* by hash: the first of a chain of used ones (slot + 1) */
	size_t pending_buckets; /* a power of two */
	uint64_t pending_scan_ns;
	struct create_txn create_txns[MAX_CREATE_TXNS];
	uint64_t create_txn_next;
	struct strpool *strs;	 /* the observations' strings */
	struct citation scratch; /* a queued call's citation, unpacked to be joined */
	struct nameless_create nameless[MAX_NAMELESS];
	uint64_t nameless_next;
	struct conn_reads *reads; /* the apiserver's read(2)s, by connection (create_from_reads) */
	struct raft_obs *robs;
	uint64_t robs_next; /* total ever added; slot = robs_next % MAX_RAFT_OBS */
	struct raft_link raft_links[MAX_RAFT_LINKS];
	struct raft_pid raft_pids[MAX_RAFT_PIDS];
	int n_raft_pids;
	/* Traced processes that exited (correlator__process_gone), the last MAX_GONE. */
	struct {
		pid_t pid;
		uint64_t ns;
	} gone[MAX_GONE];
	unsigned n_gone;
	uint64_t raft_ids[BIND_RAFT_MEMBERS]; /* every member id seen */
	int n_raft_ids;
	struct raft_key *raft_keys; /* MAX_RAFT_KEYS, made at the first pod entry */
	/* The leader as heartbeats name it (the message stream carries from and to; msgappv2's
	 * AppEntries frames do not): for a member that sees only its own MsgApps. */
	uint64_t raft_hb_leader, raft_hb_term;
};

static const char *const stage_names[STAGE_MAX] = {
	[STAGE_CREATE_REQUEST] = "create_request",
	[STAGE_CREATE_TXN_RESPONSE] = "create_txn_response",
	[STAGE_SCHEDULER_INFORMED] = "scheduler_informed",
	[STAGE_BIND_REQUEST] = "bind_request",
	[STAGE_APISERVER_RECEIVED] = "apiserver_received",
	[STAGE_ETCD_TXN_SENT] = "etcd_txn_sent",
	[STAGE_ETCD_TXN_RECEIVED] = "etcd_txn_received",
	[STAGE_ETCD_WAL_FSYNC] = "etcd_wal_fsync",
	[STAGE_ETCD_TXN_RESPONSE] = "etcd_txn_response",
	[STAGE_ETCD_WATCH_EVENT] = "etcd_watch_event",
	[STAGE_BIND_RESPONSE] = "bind_response",
	[STAGE_BIND_RESPONSE_RECEIVED] = "bind_response_received",
};

const char *stage__name(enum stage_id stage)
{
	return stage < STAGE_MAX ? stage_names[stage] : "?";
}

const char *stage_timing__name(enum stage_timing t)
{
	switch (t) {
	case STAGE_TIMED_READ_BY_LAST_READ:
		return "upper_bound_last_read";
	case STAGE_TIMED_READ_BY_TXN:
		return "upper_bound_create_txn";
	default:
		return "message";
	}
}

const char *stage_timing__meaning(enum stage_timing t)
{
	switch (t) {
	case STAGE_TIMED_READ_BY_LAST_READ:
		return "read by then at the latest: the apiserver's last read(2) of the client's "
		       "connection before it wrote the pod's create Txn (its Reads are not probed, the "
		       "client is not traced; the request's arrival is not known more closely)";
	case STAGE_TIMED_READ_BY_TXN:
		return "read by then at the latest: the apiserver wrote the pod's create Txn (no "
		       "read(2) of the client's connection was seen before it; its Reads are not "
		       "probed, the client is not traced)";
	default:
		return "";
	}
}

const char *bind_result__name(enum bind_result result)
{
	switch (result) {
	case BIND_RESULT_BOUND:
		return "bound";
	case BIND_RESULT_CONFLICT:
		return "conflict";
	case BIND_RESULT_NOT_FOUND:
		return "not_found";
	case BIND_RESULT_ERROR:
		return "error";
	case BIND_RESULT_UNSCHEDULABLE:
		return "unschedulable";
	case BIND_RESULT_SCHEDULER_ERROR:
		return "scheduler_error";
	default:
		return "unknown";
	}
}

const char *process_role__name(enum process_role role)
{
	switch (role) {
	case ROLE_SCHEDULER:
		return "kube-scheduler";
	case ROLE_APISERVER:
		return "kube-apiserver";
	case ROLE_ETCD:
		return "etcd";
	case ROLE_WATCHER:
		return "watcher";
	default:
		return "other";
	}
}

struct correlator *correlator__new(const struct correlator_options *opt, bind_done_cb cb, void *ctx)
{
	struct correlator *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->opt = *opt;
	c->cb = cb;
	c->ctx = ctx;
	c->binds = calloc(MAX_OPEN, sizeof(*c->binds));
	c->obs = calloc(MAX_OBS, sizeof(*c->obs));
	c->by_key.slot = calloc(MAX_OBS, sizeof(*c->by_key.slot));
	c->by_link.slot = calloc(MAX_OBS, sizeof(*c->by_link.slot));
	c->robs = calloc(MAX_RAFT_OBS, sizeof(*c->robs));
	if (!c->opt.max_pending)
		c->opt.max_pending = DEFAULT_MAX_PENDING;
	if (!c->opt.pending_max_age_ns)
		c->opt.pending_max_age_ns = DEFAULT_PENDING_AGE_NS;
	c->pending = calloc(c->opt.max_pending, sizeof(*c->pending));
	for (c->pending_buckets = 64; c->pending_buckets < c->opt.max_pending;)
		c->pending_buckets *= 2;
	c->pending_head = calloc(c->pending_buckets, sizeof(*c->pending_head));
	c->strs = strpool__new();
	c->reads = conn_reads__new();
	if (!c->binds || !c->obs || !c->by_key.slot || !c->by_link.slot || !c->robs ||
	    !c->pending || !c->pending_head || !c->strs || !c->reads) {
		correlator__free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

static void packed_citation__free(struct correlator *c, struct packed_citation *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_frames; i++) {
		strpool__put(c->strs, p->frames[i].func);
		strpool__put(c->strs, p->frames[i].file);
	}
	free(p);
}

/* NULL when memory runs out (the call is then kept without its stack). */
static struct packed_citation *citation__pack(struct correlator *c, const struct citation *src)
{
	int n = src->n_frames < 0		  ? 0
		: src->n_frames > BIND_MAX_FRAMES ? BIND_MAX_FRAMES
						  : src->n_frames;
	struct packed_citation *p = malloc(sizeof(*p) + (size_t)n * sizeof(p->frames[0]));
	const struct frame_line *f = src->frames;

	if (!p)
		return NULL;
	memcpy(p->before, src, sizeof(p->before));
	memcpy(p->after, (const char *)src + CITATION_AFTER_FRAMES, sizeof(p->after));
	p->n_frames = n;
	for (int i = 0; i < n; i++) {
		const char *func = strpool__get(c->strs, f[i].func, sizeof(f[i].func));
		const char *file = strpool__get(c->strs, f[i].file, sizeof(f[i].file));

		p->frames[i] = (struct packed_frame){ .pc = f[i].pc,
						      .func = func ? func : "",
						      .file = file ? file : "",
						      .line = f[i].line };
	}
	return p;
}

static void citation__unpack(const struct packed_citation *p, struct citation *out)
{
	memset(out->frames, 0, sizeof(out->frames));
	memcpy(out, p->before, sizeof(p->before));
	memcpy((char *)out + CITATION_AFTER_FRAMES, p->after, sizeof(p->after));
	for (int i = 0; i < p->n_frames; i++) {
		out->frames[i].pc = p->frames[i].pc;
		util__copy(out->frames[i].func, sizeof(out->frames[i].func), p->frames[i].func);
		util__copy(out->frames[i].file, sizeof(out->frames[i].file), p->frames[i].file);
		out->frames[i].line = p->frames[i].line;
	}
}

static void observation__clear(struct correlator *c, struct observation *o)
{
	packed_citation__free(c, o->citation);
	strpool__put(c->strs, o->key);
	strpool__put(c->strs, o->node);
	strpool__put(c->strs, o->prev_node);
	strpool__put(c->strs, o->user_agent);
	strpool__put(c->strs, o->path);
	memset(o, 0, sizeof(*o));
	o->key = o->node = o->prev_node = o->user_agent = o->path = "";
}

/* Sets one of o's pooled strings to src cut to max - 1 bytes ("" when memory runs out). */
static void obs_set(struct correlator *c, const char **field, const char *src, size_t max)
{
	const char *s = strpool__get(c->strs, src, max);

	strpool__put(c->strs, *field);
	*field = s ? s : "";
}

void correlator__free(struct correlator *c)
{
	size_t i;

	if (!c)
		return;
	/* Only the slots ever used hold a citation; the pool's strings go with the pool. Clearing
	 * all 16,384 wrote every page of the ring, most of them never touched before: tens to
	 * hundreds of ms of page faults at exit. */
	for (i = 0; c->obs && i < MAX_OBS && i < c->obs_next; i++)
		packed_citation__free(c, c->obs[i].citation);
	free(c->obs);
	free(c->by_key.slot);
	free(c->by_link.slot);
	strpool__free(c->strs);
	free(c->robs);
	free(c->raft_keys);
	free(c->binds);
	free(c->pending);
	free(c->pending_head);
	conn_reads__free(c->reads);
	free(c);
}

void correlator__stats(const struct correlator *c, struct correlator_stats *stats)
{
	size_t i;

	*stats = c->stats;
	stats->open = c->n_open;
	stats->pending = 0;
	for (i = 0; i < c->pending_hi; i++)
		stats->pending += c->pending[i].used;
}

/* "/api/v1/namespaces/NS/pods/NAME/SUB[?...]": NS and NAME, and whether SUB is the one asked
 * for ("" for the pod itself). */
static bool parse_pod_path(const char *path, const char *sub, char *ns, size_t ns_len, char *name,
			   size_t name_len)
{
	static const char prefix[] = "/api/v1/namespaces/";
	const char *p, *slash, *end;
	size_t n;

	if (strncmp(path, prefix, sizeof(prefix) - 1) != 0)
		return false;
	p = path + sizeof(prefix) - 1;
	slash = strchr(p, '/');
	if (!slash || (size_t)(slash - p) >= ns_len || strncmp(slash, "/pods/", 6) != 0)
		return false;
	memcpy(ns, p, (size_t)(slash - p));
	ns[slash - p] = '\0';
	p = slash + 6;
	end = p + strcspn(p, "/?");
	n = (size_t)(end - p);
	if (!n || n >= name_len)
		return false;
	memcpy(name, p, n);
	name[n] = '\0';
	if (!*sub)
		return *end != '/';
	return *end == '/' && strncmp(end + 1, sub, strlen(sub)) == 0 &&
	       (end[1 + strlen(sub)] == '\0' || end[1 + strlen(sub)] == '?');
}

/* "/registry/pods/NS/NAME" (the namespace cut at 64 bytes), cut to len - 1: without snprintf,
 * as it is made for every pod message. */
static void pod_key(char *out, size_t len, const char *ns, const char *name)
{
	static const char prefix[] = "/registry/pods/";
	size_t n = sizeof(prefix) - 1, k = strnlen(ns, 64);

	if (len < n + k + 2) {
		util__copy(out, len, "");
		return;
	}
	memcpy(out, prefix, n);
	memcpy(out + n, ns, k);
	n += k;
	out[n++] = '/';
	util__copy(out + n, len - n, name);
}

static void set_stage(struct stage *st, const struct actor *who, uint64_t mono, uint64_t first,
		      uint64_t last, uint32_t stream_id)
{
	st->seen = true;
	st->mono_ns = mono;
	st->first_ns = first;
	st->last_ns = last;
	st->stream_id = stream_id;
	st->who = *who;
	st->missing[0] = '\0';
}

static uint64_t key_hash(const char *key)
{
	return util__fnv1a(UTIL_FNV_START, key, strlen(key));
}

/* Chains of observations, newest to oldest: each observation is linked once into the chain
 * of its key's hash and into that of its (pid, conn, stream); a bucket holds every
 * observation whose value falls in it, so the callers still check what they look for. */
static uint64_t link_hash(pid_t pid, uint64_t conn, uint32_t stream_id)
{
	uint64_t h = ((uint64_t)(uint32_t)pid << 32 | stream_id) * 0x9e3779b97f4a7c15ull;

	return (h ^ conn) * 0xff51afd7ed558ccdull;
}

static void obs_chain_add(uint64_t *heads, uint64_t hash, uint64_t *prev, uint64_t seq)
{
	uint64_t *head = &heads[(hash ^ hash >> 32) & (OBS_BUCKETS - 1)];

	*prev = *head;
	*head = seq + 1;
}

/* The chain of a bucket, newest first, into l: numbers below the ring's oldest were
 * overwritten, and the chain ends there (each link goes to an older number). */
static const struct obs_list *obs_chain(const struct correlator *c, const uint64_t *heads,
					uint64_t hash, bool by_key, struct obs_list *l)
{
	uint64_t oldest = c->obs_next > MAX_OBS ? c->obs_next - MAX_OBS : 0;
	uint64_t at = heads[(hash ^ hash >> 32) & (OBS_BUCKETS - 1)];

	l->n = 0;
	while (at && at - 1 >= oldest && l->n < MAX_OBS) {
		const struct observation *o = &c->obs[(at - 1) % MAX_OBS];

		l->slot[l->n++] = (uint32_t)((at - 1) % MAX_OBS);
		at = by_key ? o->key_prev : o->link_prev;
	}
	return l;
}

/* The observations whose key hashes like `hash` (a superset of the key's). */
static const struct obs_list *obs_with_key(struct correlator *c, uint64_t hash)
{
	return obs_chain(c, c->key_head, hash, true, &c->by_key);
}

/* The observations of (pid, conn, stream_id), and others of the same bucket; fsyncs and calls
 * have conn and stream 0. */
static const struct obs_list *obs_on_stream(struct correlator *c, pid_t pid, uint64_t conn,
					    uint32_t stream_id)
{
	return obs_chain(c, c->link_head, link_hash(pid, conn, stream_id), false, &c->by_link);
}

/* etcd pid's WAL fsyncs that may have begun at or after since_ns, from its (pid, 0, 0) chain.
 * They were added in the order they ended (each as its record came, in ring-buffer order), so
 * the walk, newest first, stops at the first one that ended more than FSYNC_ORDER_SLACK_NS
 * before since_ns: every older one ended before it, and began before since_ns. Without that
 * stop every bind walked all the fsyncs the ring still held (5% of the tracer's CPU). */
#define FSYNC_ORDER_SLACK_NS 1000000000ull

static const struct obs_list *fsyncs_since(struct correlator *c, pid_t pid, uint64_t since_ns)
{
	uint64_t oldest = c->obs_next > MAX_OBS ? c->obs_next - MAX_OBS : 0;
	uint64_t hash = link_hash(pid, 0, 0);
	uint64_t at = c->link_head[(hash ^ hash >> 32) & (OBS_BUCKETS - 1)];
	struct obs_list *l = &c->by_link;

	l->n = 0;
	while (at && at - 1 >= oldest && l->n < MAX_OBS) {
		const struct observation *o = &c->obs[(at - 1) % MAX_OBS];

		if (o->kind == OBS_FSYNC && o->who.pid == pid) {
			if (o->last_ns + FSYNC_ORDER_SLACK_NS < since_ns)
				break;
			l->slot[l->n++] = (uint32_t)((at - 1) % MAX_OBS);
		}
		at = o->link_prev;
	}
	return l;
}

/* Every observation of list l, oldest first, as for_each_obs would visit them. */
#define for_each_listed(c, l, o, k) for (k = (l)->n; k-- > 0 && ((o) = &(c)->obs[(l)->slot[k]], 1);)

/* Set once per observation, right after obs_add. */
static void obs_set_key(struct correlator *c, struct observation *o, const char *key)
{
	obs_set(c, &o->key, key, KEY_MAX);
	o->key_hash = key_hash(o->key);
	obs_chain_add(c->key_head, o->key_hash, &o->key_prev, o->seq);
}

static bool obs_key_is(const struct observation *o, const char *key, uint64_t hash)
{
	return o->key_hash == hash && strcmp(o->key, key) == 0;
}

static void close_bind(struct correlator *c, struct open_bind *b);

/* The open bind of this pod still waiting for its response, or a new one. */
static struct open_bind *bind_for(struct correlator *c, const char *ns, const char *name,
				  uint64_t now, bool create)
{
	struct open_bind *free_slot = NULL, *b;
	size_t i;

	for (i = 0; i < c->hi_water; i++) {
		b = &c->binds[i];
		if (!b->used) {
			if (!free_slot)
				free_slot = b;
			continue;
		}
		/* Answered binds too when this was seen before their answer: a request whose
		 * bytes came after a gap is decoded late (test-faults e: the apiserver's read of a
		 * Binding, once a timeline of its own). */
		if (strcmp(b->t.name, name) == 0 && strcmp(b->t.namespace_, ns) == 0 &&
		    (!b->responded || now < b->responded_ns))
			return b;
	}
	if (!create)
		return NULL;
	if (!free_slot && c->hi_water < MAX_OPEN)
		free_slot = &c->binds[c->hi_water++];
	if (!free_slot) {
		/* Full: close the oldest now, as it is. */
		struct open_bind *oldest = NULL;

		for (i = 0; i < MAX_OPEN; i++)
			if (!oldest || c->binds[i].t.opened_ns < oldest->t.opened_ns)
				oldest = &c->binds[i];
		c->stats.evicted++;
		close_bind(c, oldest);
		free_slot = oldest;
	}
	memset(free_slot, 0, offsetof(struct open_bind, t) + OPEN_PART);
	free_slot->used = true;
	free_slot->t.seq = ++c->seq;
	free_slot->t.opened_ns = now;
	free_slot->close_after_ns = now + c->opt.max_open_ns;
	free_slot->obs_at_open = c->obs_next;
	util__copy(free_slot->t.namespace_, sizeof(free_slot->t.namespace_), ns);
	util__copy(free_slot->t.name, sizeof(free_slot->t.name), name);
	c->n_open++;
	c->stats.binds++;
	return free_slot;
}

/* The bind whose response this is: the newest of this pod with its request seen. */
static struct open_bind *bind_for_response(struct correlator *c, const char *ns, const char *name)
{
	struct open_bind *best = NULL, *b;
	size_t i;

	for (i = 0; i < c->hi_water; i++) {
		b = &c->binds[i];
		if (b->used && strcmp(b->t.name, name) == 0 && strcmp(b->t.namespace_, ns) == 0 &&
		    (!best || b->t.opened_ns > best->t.opened_ns))
			best = b;
	}
	return best;
}

static struct observation *obs_add(struct correlator *c, enum obs_kind kind,
				   const struct actor *who, const struct decoded_msg *msg)
{
	struct observation *o = &c->obs[c->obs_next % MAX_OBS];

	observation__clear(c, o);
	o->seq = c->obs_next++;
	o->kind = kind;
	o->who = *who;
	if (msg) {
		o->first_ns = msg->ts_first_ns;
		o->last_ns = msg->ts_last_ns;
		o->stream_id = msg->stream_id;
		obs_set(c, &o->user_agent, msg->http.user_agent, OBS_USER_AGENT_MAX);
		obs_set(c, &o->path, msg->http.path, OBS_PATH_MAX);
	}
	obs_chain_add(c->link_head, link_hash(o->who.pid, o->who.conn, o->stream_id), &o->link_prev,
		      o->seq);
	return o;
}

/* ---- Pending pods: created, not yet bound ---- */

/* Pending pods are chained by their key's hash, so that finding one does not scan them all
 * (a burst of 1000 creations kept up to 1000 of them, and every creation stage looked one up);
 * a slot leaves its chain when it stops being used (pending_drop). */
static uint32_t *pending_bucket(struct correlator *c, uint64_t hash)
{
	return &c->pending_head[(hash ^ hash >> 32) & (c->pending_buckets - 1)];
}

static void pending_drop(struct correlator *c, struct pending_pod *p)
{
	uint32_t *at = pending_bucket(c, p->hash), slot = (uint32_t)(p - c->pending) + 1;

	if (!p->used)
		return;
	while (*at && *at != slot)
		at = &c->pending[*at - 1].next;
	if (*at)
		*at = p->next;
	p->used = false;
	p->next = 0;
}

static struct pending_pod *pending_find(struct correlator *c, const char *key, bool create,
					uint64_t now)
{
	struct pending_pod *free_slot = NULL, *oldest = NULL, *p;
	uint64_t hash = key_hash(key);
	uint32_t *head = pending_bucket(c, hash), at;
	size_t i;

	for (at = *head; at; at = p->next) {
		p = &c->pending[at - 1];
		if (p->hash == hash && strcmp(p->key, key) == 0)
			return p;
	}
	if (!create)
		return NULL;
	for (i = 0; i < c->pending_hi; i++) {
		p = &c->pending[i];
		if (!p->used) {
			free_slot = p;
			break;
		}
		if (!oldest || p->first_ns < oldest->first_ns)
			oldest = p;
	}
	if (!free_slot && c->pending_hi < c->opt.max_pending)
		free_slot = &c->pending[c->pending_hi++];
	if (!free_slot) {
		c->stats.pending_evicted++;
		free_slot = oldest;
		pending_drop(c, free_slot);
	}
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->hash = hash;
	free_slot->first_ns = now;
	util__copy(free_slot->key, sizeof(free_slot->key), key);
	free_slot->next = *head;
	*head = (uint32_t)(free_slot - c->pending) + 1;
	return free_slot;
}

static void pending_set(struct correlator *c, const char *key, enum stage_id s,
			const struct actor *who, const struct decoded_msg *msg, uint64_t mono)
{
	struct pending_pod *p = pending_find(c, key, true, msg->ts_first_ns);

	if (p && !p->stages[s - STAGE_CREATE_REQUEST].seen)
		set_stage(&p->stages[s - STAGE_CREATE_REQUEST], who, mono, msg->ts_first_ns,
			  msg->ts_last_ns, msg->stream_id);
}

/* Pods that stayed pending too long are dropped, and counted (once a second). */
static void pending_expire(struct correlator *c, uint64_t now)
{
	size_t i;

	if (now < c->pending_scan_ns + 1000000000ull)
		return;
	c->pending_scan_ns = now;
	for (i = 0; i < c->pending_hi; i++) {
		struct pending_pod *p = &c->pending[i];

		if (p->used && now > p->first_ns + c->opt.pending_max_age_ns) {
			pending_drop(c, p);
			c->stats.pending_expired++;
		}
	}
}

/* "/api/v1/namespaces/NS/pods[?...]": a create of a pod in NS. */
static bool parse_pods_collection(const char *path, char *ns, size_t ns_len)
{
	static const char prefix[] = "/api/v1/namespaces/";
	const char *p, *slash;

	if (strncmp(path, prefix, sizeof(prefix) - 1) != 0)
		return false;
	p = path + sizeof(prefix) - 1;
	slash = strchr(p, '/');
	if (!slash || slash == p || (size_t)(slash - p) >= ns_len || strncmp(slash, "/pods", 5) ||
	    (slash[5] && slash[5] != '?'))
		return false;
	memcpy(ns, p, (size_t)(slash - p));
	ns[slash - p] = '\0';
	return true;
}

/* The apiserver read a client's POST of a pod (the name from its body: a generateName'd pod has
 * none yet: its request waits for the 201 that names it). */
static void on_create_request(struct correlator *c, const struct actor *who,
			      const struct decoded_msg *msg, const char *ns)
{
	char key[KEY_MAX];

	if (who->role != ROLE_APISERVER || msg->body_kind != BODY_K8S ||
	    msg->body.k8s.kind != K8S_KIND_POD || !msg->body.k8s.meta.name[0])
		return;
	if (msg->body.k8s.meta.generated_name) {
		struct nameless_create *n = &c->nameless[c->nameless_next++ % MAX_NAMELESS];

		n->pid = who->pid;
		n->conn = who->conn;
		n->stream_id = msg->stream_id;
		util__copy(n->ns, sizeof(n->ns),
			   msg->body.k8s.meta.namespace[0] ? msg->body.k8s.meta.namespace : ns);
		set_stage(&n->stage, who, msg->ts_last_ns, msg->ts_first_ns, msg->ts_last_ns,
			  msg->stream_id);
		return;
	}
	snprintf(key, sizeof(key), "%s/%s",
		 msg->body.k8s.meta.namespace[0] ? msg->body.k8s.meta.namespace : ns,
		 msg->body.k8s.meta.name);
	pending_set(c, key, STAGE_CREATE_REQUEST, who, msg, msg->ts_last_ns);
}

/* The apiserver's answer to a create of a generateName'd pod: the created Pod names it. */
static void on_create_response(struct correlator *c, const struct actor *who,
			       const struct decoded_msg *msg)
{
	const struct k8s_meta *m = &msg->body.k8s.meta;
	uint64_t i, n = c->nameless_next;
	char key[KEY_MAX];

	if (msg->body_kind != BODY_K8S || msg->body.k8s.kind != K8S_KIND_POD || !m->name[0] ||
	    m->generated_name)
		return;
	for (i = n > MAX_NAMELESS ? n - MAX_NAMELESS : 0; i < n; i++) {
		struct nameless_create *x = &c->nameless[i % MAX_NAMELESS];
		struct pending_pod *p;

		if (x->pid != who->pid || x->conn != who->conn || x->stream_id != msg->stream_id)
			continue;
		x->pid = 0;
		snprintf(key, sizeof(key), "%s/%s", m->namespace[0] ? m->namespace : x->ns,
			 m->name);
		p = pending_find(c, key, true, x->stage.first_ns);
		if (p && !p->stages[0].seen)
			p->stages[0] = x->stage;
		return;
	}
}

/* The apiserver's 201 to a create of a pod whose request was not captured (its Reads not probed,
 * its client not traced; create_from_reads): the request had been read by the last read(2) of
 * that connection that returned before the pod's create Txn was written, and at the latest by
 * that write. Only that bound is known, and the stage says so (its timing). */
static void on_create_answered(struct correlator *c, const struct actor *who,
			       const struct decoded_msg *msg)
{
	const struct k8s_meta *m = &msg->body.k8s.meta;
	char key[KEY_MAX];
	struct pending_pod *p;
	struct stage *st;
	uint64_t t;

	if (!c->opt.create_from_reads || msg->http.status != 201 || msg->body_kind != BODY_K8S ||
	    msg->body.k8s.kind != K8S_KIND_POD || !m->name[0] || m->generated_name ||
	    !m->namespace[0] || msg->body.k8s.pod.node_name[0])
		return;
	snprintf(key, sizeof(key), "%s/%s", m->namespace, m->name);
	p = pending_find(c, key, false, 0);
	if (!p || p->stages[0].seen || !p->create_txn_ns)
		return;
	st = &p->stages[0];
	t = conn_reads__last_before(c->reads, who->pid, who->conn, p->create_txn_ns);
	set_stage(st, who, t ? t : p->create_txn_ns, t ? t : p->create_txn_ns,
		  t ? t : p->create_txn_ns, msg->stream_id);
	st->timing = t ? STAGE_TIMED_READ_BY_LAST_READ : STAGE_TIMED_READ_BY_TXN;
}

/* A Pod in a request the apiserver read without its method and path: what it was cannot be
 * told, but its pod's create request, if it was one, predates what bindtrace can decode. */
static void on_headerless_pod(struct correlator *c, const struct decoded_msg *msg, bool answer)
{
	const struct k8s_meta *m = &msg->body.k8s.meta;
	char key[KEY_MAX];
	struct pending_pod *p;

	if (!m->name[0] || m->generated_name || !m->namespace[0] || msg->body.k8s.pod.node_name[0])
		return;
	snprintf(key, sizeof(key), "%s/%s", m->namespace, m->name);
	p = pending_find(c, key, !answer, msg->ts_first_ns);
	if (p && answer)
		p->headerless_answer = true;
	else if (p)
		p->headerless = true;
}

/* A Txn that creates a pod (its compare: mod_revision == 0), seen by the apiserver or etcd:
 * remembered by connection and stream until its answer. */
static void note_create_txn(struct correlator *c, const struct actor *who,
			    const struct decoded_msg *msg, const char *etcd_key)
{
	struct create_txn *x = &c->create_txns[c->create_txn_next++ % MAX_CREATE_TXNS];
	bool by_apiserver = who->role == ROLE_APISERVER;
	struct pending_pod *p;

	if (x->pid)
		c->stats.create_txns_pushed_out++; /* this slot's create had no answer yet */
	x->pid = who->pid;
	x->conn = who->conn;
	x->stream_id = msg->stream_id;
	util__copy(x->key, sizeof(x->key), etcd_key + 15);
	x->hash = key_hash(x->key);
	p = pending_find(c, x->key, true, msg->ts_first_ns);
	if (!p)
		return;
	if (!p->create_txn_ns ||
	    (by_apiserver && !(p->create_txn_seen & CREATE_TXN_SEEN_APISERVER)))
		p->create_txn_ns = msg->ts_first_ns;
	p->create_txn_seen |= by_apiserver ? CREATE_TXN_SEEN_APISERVER : CREATE_TXN_SEEN_ETCD;
}

/* etcd's answer to a Txn, when it answers a create: etcd writing it, else the apiserver reading
 * it. One that did not succeed (the pod existed) ends the create's wait and is no stage. */
static void on_create_txn_response(struct correlator *c, const struct actor *who,
				   const struct decoded_msg *msg)
{
	uint64_t i, n = c->create_txn_next;
	struct pending_pod *p;
	struct stage *st;

	for (i = n > MAX_CREATE_TXNS ? n - MAX_CREATE_TXNS : 0; i < n; i++) {
		struct create_txn *x = &c->create_txns[i % MAX_CREATE_TXNS];

		if (x->pid != who->pid || x->conn != who->conn || x->stream_id != msg->stream_id)
			continue;
		x->pid = 0;
		p = pending_find(c, x->key, false, 0);
		if (!p || !msg->body.txn_response.succeeded)
			return;
		st = &p->stages[STAGE_CREATE_TXN_RESPONSE - STAGE_CREATE_REQUEST];
		if (!st->seen || (who->role == ROLE_ETCD && st->who.role != ROLE_ETCD))
			set_stage(st, who, msg->ts_first_ns, msg->ts_first_ns, msg->ts_last_ns,
				  msg->stream_id);
		if (msg->body.txn_response.header.revision)
			p->create_revision = msg->body.txn_response.header.revision;
		return;
	}
}

#define HEADERLESS                                                                                 \
	"read without its method and path: the client's connection predates bindtrace's attach "   \
	"(its HTTP/2 header state is unknown)"

#define HEADERLESS_ANSWER                                                                          \
	"not captured: the apiserver answered with this pod over a client connection that "        \
	"predates bindtrace's attach (its HTTP/2 header state is unknown), and the request was "   \
	"not read there"

/* Why etcd's answer to the pod's create is missing: whether its Txn was decoded, and by which
 * end (the apiserver writing it, etcd reading it). */
static void explain_create_answer(const struct correlator *c, const struct pending_pod *p,
				  struct stage *st)
{
	uint8_t seen = p->create_txn_seen;

	if (!seen)
		util__copy(st->missing, sizeof(st->missing),
			   "the create's Txn to etcd was not decoded at either end");
	else
		snprintf(st->missing, sizeof(st->missing),
			 "etcd's answer not decoded%s (the create's Txn: %s)",
			 c->stats.create_txns_pushed_out
			     ? ", or it came after the Txn was pushed out (counted at exit)"
			     : "",
			 seen == (CREATE_TXN_SEEN_APISERVER | CREATE_TXN_SEEN_ETCD)
			     ? "the apiserver wrote it, etcd read it"
			 : seen == CREATE_TXN_SEEN_APISERVER
			     ? "the apiserver wrote it; etcd's read not decoded"
			     : "etcd read it; the apiserver's write not decoded");
}

/* Moves the pod's pending stages into its bind; a bound pod's state is done with. */
static void resolve_pending(struct correlator *c, struct bind_timeline *t)
{
	char key[KEY_MAX];
	struct pending_pod *p;
	int s;

	snprintf(key, sizeof(key), "%s/%s", t->namespace_, t->name);
	p = pending_find(c, key, false, 0);
	t->created_before_attach = !p || (!p->stages[0].seen && !p->stages[1].seen);
	if (!p)
		return;
	for (s = 0; s < PENDING_STAGES; s++)
		if (p->stages[s].seen)
			t->stages[STAGE_CREATE_REQUEST + s] = p->stages[s];
	if (!p->stages[0].seen && p->headerless)
		util__copy(t->stages[STAGE_CREATE_REQUEST].missing,
			   sizeof(t->stages[STAGE_CREATE_REQUEST].missing), HEADERLESS);
	else if (!p->stages[0].seen && p->headerless_answer)
		util__copy(t->stages[STAGE_CREATE_REQUEST].missing,
			   sizeof(t->stages[STAGE_CREATE_REQUEST].missing), HEADERLESS_ANSWER);
	if (!p->stages[STAGE_CREATE_TXN_RESPONSE - STAGE_CREATE_REQUEST].seen)
		explain_create_answer(c, p, &t->stages[STAGE_CREATE_TXN_RESPONSE]);
	t->create_revision = p->create_revision;
	if (t->result == BIND_RESULT_BOUND)
		pending_drop(c, p);
}

static void on_binding_request(struct correlator *c, const struct actor *who,
			       const struct decoded_msg *msg, const char *ns, const char *name)
{
	bool scheduler = who->role == ROLE_SCHEDULER;
	struct open_bind *b;
	struct stage *st;

	b = bind_for(c, ns, name, msg->ts_first_ns, true);
	if (!b)
		return;
	st = &b->t.stages[scheduler ? STAGE_BIND_REQUEST : STAGE_APISERVER_RECEIVED];
	set_stage(st, who, scheduler ? msg->ts_first_ns : msg->ts_last_ns, msg->ts_first_ns,
		  msg->ts_last_ns, msg->stream_id);
	if (msg->body_kind == BODY_K8S && msg->body.k8s.kind == K8S_KIND_BINDING) {
		util__copy(b->t.node, sizeof(b->t.node), msg->body.k8s.binding.target_name);
		if (msg->body.k8s.meta.uid[0])
			util__copy(b->t.uid, sizeof(b->t.uid), msg->body.k8s.meta.uid);
	}
}

static void on_binding_response(struct correlator *c, const struct actor *who,
				const struct decoded_msg *msg, const char *ns, const char *name)
{
	bool scheduler = who->role == ROLE_SCHEDULER;
	struct open_bind *b = bind_for_response(c, ns, name);
	struct stage *st;

	if (!b) {
		/* The request was not seen: the tracer attached in between (if the answer came
		 * soon enough after attaching for that), or it was lost. Open it anyway. */
		b = bind_for(c, ns, name, msg->ts_first_ns, true);
		if (!b)
			return;
		if (msg->ts_first_ns < c->opt.attach_ns + c->opt.max_open_ns)
			b->t.started_midway = true;
	}
	st = &b->t.stages[scheduler ? STAGE_BIND_RESPONSE_RECEIVED : STAGE_BIND_RESPONSE];
	set_stage(st, who, scheduler ? msg->ts_last_ns : msg->ts_first_ns, msg->ts_first_ns,
		  msg->ts_last_ns, msg->stream_id);
	if (msg->http.status)
		b->t.status_code = msg->http.status;
	/* :status 201 is no static HPACK entry: on a connection met mid-way it can be unknown.
	 * The Status object in the body says it too. */
	if (!b->t.status_code && msg->body_kind == BODY_K8S &&
	    msg->body.k8s.kind == K8S_KIND_STATUS && msg->body.k8s.status.code)
		b->t.status_code = msg->body.k8s.status.code;
	if (msg->body_kind == BODY_K8S && msg->body.k8s.kind == K8S_KIND_STATUS)
		util__copy(b->t.status_reason, sizeof(b->t.status_reason),
			   msg->body.k8s.status.reason[0] ? msg->body.k8s.status.reason
							  : msg->body.k8s.status.status);
	b->responded = true;
	if (!b->responded_ns)
		b->responded_ns = msg->ts_last_ns;
	/* Close once the side that answers last was seen, or the other when that one is not
	 * traced; the watch events that follow get the linger. */
	if (scheduler || !c->opt.have_scheduler)
		b->close_after_ns = msg->ts_last_ns + c->opt.linger_ns;
	else if (b->close_after_ns > msg->ts_last_ns + 10 * c->opt.linger_ns)
		b->close_after_ns = msg->ts_last_ns + 10 * c->opt.linger_ns;
}

/* The failed bind of this pod (answered, not 2xx) that a give-up at now follows, if still open. */
static const struct open_bind *failed_bind_before(const struct correlator *c, const char *ns,
						  const char *name, uint64_t now)
{
	const struct open_bind *best = NULL, *b;
	size_t i;

	for (i = 0; i < c->hi_water; i++) {
		b = &c->binds[i];
		if (b->used && b->responded && b->responded_ns <= now &&
		    !bind_result__gave_up(b->t.result) &&
		    (b->t.status_code < 200 || b->t.status_code > 299) &&
		    strcmp(b->t.name, name) == 0 && strcmp(b->t.namespace_, ns) == 0 &&
		    (!best || b->responded_ns > best->responded_ns))
			best = b;
	}
	return best;
}

/* The scheduler gave up on the pod: it patches the pod's status with PodScheduled=False, reason
 * Unschedulable when it fits no node, SchedulerError after an error (most often a failed bind),
 * and retries the pod later. The request opens the entry; the apiserver's answer (the patched
 * Pod) closes it, and opens it when the request could not be read (its :method and :path came
 * from HPACK entries made before bindtrace attached). */
static void on_unschedulable(struct correlator *c, const struct actor *who,
			     const struct decoded_msg *msg, const char *ns, const char *name,
			     bool response)
{
	const struct k8s_pod *pod;
	struct open_bind *b;

	if (msg->body_kind != BODY_K8S || msg->body.k8s.kind != K8S_KIND_POD)
		return;
	pod = &msg->body.k8s.pod;
	if (!pod->has_scheduled || strcmp(pod->scheduled_status, "False") != 0)
		return;
	b = bind_for(c, ns, name, msg->ts_first_ns, true);
	if (!b)
		return;
	b->t.result = strcmp(pod->scheduled_reason, "SchedulerError") == 0
			  ? BIND_RESULT_SCHEDULER_ERROR
			  : BIND_RESULT_UNSCHEDULABLE;
	if (b->t.result == BIND_RESULT_SCHEDULER_ERROR && !b->t.failed_bind_seq) {
		const struct open_bind *f = failed_bind_before(c, ns, name, msg->ts_first_ns);

		if (f) {
			b->t.failed_bind_seq = f->t.seq;
			b->t.failed_bind_code = f->t.status_code;
		}
	}
	util__copy(b->t.status_reason, sizeof(b->t.status_reason), pod->scheduled_reason);
	if (pod->scheduled_message[0])
		util__copy(b->t.status_message, sizeof(b->t.status_message),
			   pod->scheduled_message);
	if (!b->t.stages[STAGE_BIND_REQUEST].seen || !response)
		set_stage(&b->t.stages[STAGE_BIND_REQUEST], who, msg->ts_first_ns, msg->ts_first_ns,
			  msg->ts_last_ns, msg->stream_id);
	if (response) {
		b->t.status_code = msg->http.status ? msg->http.status : 200;
		b->responded = true;
		b->close_after_ns = msg->ts_last_ns + c->opt.linger_ns;
	} else if (b->close_after_ns > msg->ts_last_ns + 10 * c->opt.linger_ns) {
		b->close_after_ns = msg->ts_last_ns + 10 * c->opt.linger_ns;
	}
}

static void on_http(struct correlator *c, const struct actor *who, const struct decoded_msg *msg)
{
	char ns[BIND_NS_MAX], name[BIND_NAME_MAX];
	bool request = msg->kind == DECODED_REQUEST;

	if (msg->kind != DECODED_REQUEST && msg->kind != DECODED_RESPONSE)
		return;
	/* Only the two ends of the scheduler's connection: requests it writes and the apiserver
	 * reads, responses the apiserver writes and it reads. */
	if (who->role == ROLE_SCHEDULER &&
	    (request ? msg->dir != CONN_DIR_OUT : msg->dir != CONN_DIR_IN))
		return;
	if (who->role == ROLE_APISERVER &&
	    (request ? msg->dir != CONN_DIR_IN : msg->dir != CONN_DIR_OUT))
		return;
	if (strcmp(msg->http.method, "POST") == 0 &&
	    parse_pod_path(msg->http.path, "binding", ns, sizeof(ns), name, sizeof(name))) {
		if (request)
			on_binding_request(c, who, msg, ns, name);
		else
			on_binding_response(c, who, msg, ns, name);
		return;
	}
	if (request && strcmp(msg->http.method, "POST") == 0 &&
	    parse_pods_collection(msg->http.path, ns, sizeof(ns))) {
		on_create_request(c, who, msg, ns);
		return;
	}
	if (who->role == ROLE_APISERVER && !request && msg->http.status == 201 &&
	    msg->body_kind == BODY_K8S && msg->body.k8s.kind == K8S_KIND_POD) {
		if (c->nameless_next)
			on_create_response(c, who, msg);
		on_create_answered(c, who, msg);
		return;
	}
	/* An answer whose status could not be decoded (its connection predates the attach): a
	 * pod whose create was not captured says why. */
	if (who->role == ROLE_APISERVER && !request && !msg->http.status &&
	    c->opt.create_from_reads && msg->body_kind == BODY_K8S &&
	    msg->body.k8s.kind == K8S_KIND_POD) {
		on_headerless_pod(c, msg, true);
		return;
	}
	if (who->role == ROLE_APISERVER && !request && c->nameless_next) {
		on_create_response(c, who, msg);
		return;
	}
	if (who->role == ROLE_APISERVER && request && !msg->http.path[0] &&
	    msg->body_kind == BODY_K8S && msg->body.k8s.kind == K8S_KIND_POD) {
		on_headerless_pod(c, msg, false);
		return;
	}
	if (who->role != ROLE_SCHEDULER || strcmp(msg->http.method, "GET") == 0 ||
	    strcmp(msg->http.method, "POST") == 0)
		return;
	if (parse_pod_path(msg->http.path, "status", ns, sizeof(ns), name, sizeof(name))) {
		on_unschedulable(c, who, msg, ns, name, !request);
	} else if (!msg->http.path[0] && msg->body_kind == BODY_K8S &&
		   msg->body.k8s.kind == K8S_KIND_POD && msg->body.k8s.meta.name[0]) {
		/* Method and path unknown: the Pod in the body names it. */
		on_unschedulable(c, who, msg, msg->body.k8s.meta.namespace, msg->body.k8s.meta.name,
				 !request);
	}
}

static bool is_pod_key(const char *key)
{
	return strncmp(key, "/registry/pods/", 15) == 0;
}

/* A bind write at this node's apiserver with no Binding of the pod open here: another node's
 * apiserver served it. Opened from etcd's watch event (the write's revision, target node and the
 * pod's UID, which names its trace across nodes), closed after the linger with the fan-out to
 * this node's watchers. */
static struct open_bind *served_elsewhere(struct correlator *c, const struct actor *who,
					  const struct decoded_msg *msg,
					  const struct etcd_watch_event *ev, const char *ns,
					  const char *name)
{
	struct open_bind *b = bind_for(c, ns, name, msg->ts_first_ns, true);

	if (!b)
		return NULL;
	b->t.served_elsewhere = true;
	b->t.revision = ev->kv.mod_revision;
	util__copy(b->t.node, sizeof(b->t.node), ev->kv.value.pod.node_name);
	if (ev->kv.value.meta.uid[0])
		util__copy(b->t.uid, sizeof(b->t.uid), ev->kv.value.meta.uid);
	set_stage(&b->t.stages[STAGE_ETCD_WATCH_EVENT], who, msg->ts_last_ns, msg->ts_first_ns,
		  msg->ts_last_ns, msg->stream_id);
	b->t.node_before_known = ev->has_prev_kv;
	util__copy(b->t.node_before, sizeof(b->t.node_before), ev->prev_node_name);
	b->responded = true;
	b->responded_ns = msg->ts_last_ns;
	b->close_after_ns = msg->ts_last_ns + c->opt.linger_ns;
	return b;
}

/* A Txn's answer, as the apiserver read it or as etcd wrote it; NULL from any other side. */
static struct observation *txn_answer_obs(struct correlator *c, const struct actor *who,
					  const struct decoded_msg *msg)
{
	if (who->role == ROLE_APISERVER && msg->dir == CONN_DIR_IN)
		return obs_add(c, OBS_TXN_RESPONSE_IN, who, msg);
	if (who->role == ROLE_ETCD && msg->dir == CONN_DIR_OUT)
		return obs_add(c, OBS_ETCD_TXN_OUT, who, msg);
	return NULL;
}

static void on_grpc(struct correlator *c, const struct actor *who, const struct decoded_msg *msg)
{
	struct observation *o;

	if (msg->kind == DECODED_GRPC_REQUEST && msg->body_kind == BODY_ETCD_TXN) {
		const struct etcd_txn *txn = &msg->body.txn;
		const char *key = txn->has_put ? txn->put.key : txn->compare_key;

		if (!is_pod_key(key))
			return;
		if (who->role == ROLE_APISERVER && msg->dir == CONN_DIR_OUT)
			o = obs_add(c, OBS_TXN_SENT, who, msg);
		else if (who->role == ROLE_ETCD && msg->dir == CONN_DIR_IN)
			o = obs_add(c, OBS_ETCD_TXN_IN, who, msg);
		else
			return;
		obs_set_key(c, o, key);
		o->compare_rev = txn->compare_revision;
		if (txn->has_put && txn->put.value.kind == K8S_KIND_POD)
			obs_set(c, &o->node, txn->put.value.pod.node_name, BIND_NAME_MAX);
		if (txn->has_put && !txn->compare_revision)
			note_create_txn(c, who, msg, key);
		return;
	}
	/* A Txn answered with an error status and no TxnResponse (trailers only). */
	if (msg->kind == DECODED_GRPC_RESPONSE && msg->http.grpc_status > 0 &&
	    msg->body_kind != BODY_ETCD_TXN_RESPONSE &&
	    strcmp(msg->http.path, "/etcdserverpb.KV/Txn") == 0) {
		o = txn_answer_obs(c, who, msg);
		if (!o)
			return;
		o->grpc_status = msg->http.grpc_status;
		obs_set(c, &o->node, msg->http.grpc_message, BIND_NAME_MAX);
		return;
	}
	if (msg->kind == DECODED_GRPC_RESPONSE && msg->body_kind == BODY_ETCD_TXN_RESPONSE) {
		o = txn_answer_obs(c, who, msg);
		if (!o)
			return;
		o->revision = msg->body.txn_response.header.revision;
		o->succeeded = msg->body.txn_response.succeeded;
		on_create_txn_response(c, who, msg);
		return;
	}
	if (msg->kind == DECODED_ETCD_WATCH_EVENT && msg->body_kind == BODY_ETCD_WATCH_EVENT &&
	    who->role == ROLE_APISERVER && msg->dir == CONN_DIR_IN) {
		const struct etcd_watch_event *ev = &msg->body.etcd_watch.event;

		if (!is_pod_key(ev->kv.key))
			return;
		o = obs_add(c, OBS_ETCD_WATCH, who, msg);
		obs_set_key(c, o, ev->kv.key);
		o->revision = ev->kv.mod_revision;
		o->prev_known = ev->has_prev_kv;
		obs_set(c, &o->prev_node, ev->prev_node_name, BIND_NAME_MAX);
		if (ev->kv.value.kind == K8S_KIND_POD)
			obs_set(c, &o->node, ev->kv.value.pod.node_name, BIND_NAME_MAX);
		/* The write of a bind (nodeName "" -> node) reached the apiserver's watch: its
		 * bind may close once the watchers have had their linger. */
		if (o->node[0] && !o->prev_node[0]) {
			char ns[BIND_NS_MAX], name[BIND_NAME_MAX];
			const char *rest = ev->kv.key + 15, *slash = strchr(rest, '/');
			struct open_bind *b;

			if (slash && (size_t)(slash - rest) < sizeof(ns)) {
				memcpy(ns, rest, (size_t)(slash - rest));
				ns[slash - rest] = 0;
				util__copy(name, sizeof(name), slash + 1);
				b = bind_for_response(c, ns, name);
				if (!b && c->opt.node_scope)
					b = served_elsewhere(c, who, msg, ev, ns, name);
				if (b)
					b->etcd_watch_ns = msg->ts_last_ns;
			}
		}
	}
}

static uint64_t conn_key(const struct endpoint *local, const struct endpoint *remote)
{
	uint64_t h = util__fnv1a(util__fnv1a(UTIL_FNV_START, local, sizeof(*local)), remote,
				 sizeof(*remote));

	return h ? h : 1;
}

/* The connection's entry; with add, made when there is none (NULL when the table is full). */
static struct receiving_conn *receiving_find(struct correlator *c, uint64_t key, bool add)
{
	size_t i, h = (size_t)key;

	for (i = 0; i < RECEIVING_SLOTS; i++) {
		struct receiving_conn *r = &c->receiving[(h + i) & (RECEIVING_SLOTS - 1)];

		if (r->key == key)
			return r;
		if (r->key)
			continue;
		if (!add || c->n_receiving >= RECEIVING_SLOTS / 4 * 3)
			return NULL;
		r->key = key;
		c->n_receiving++;
		return r;
	}
	return NULL;
}

/* The slots are found by the hash of the pod's "ns/name" key, the key of its watch events'
 * observations (0 marks a free slot). */
static uint64_t closed_hash(uint64_t key_hash)
{
	return key_hash ? key_hash : 1;
}

static void closed_note(struct correlator *c, const struct bind_timeline *t, uint64_t now)
{
	char key[KEY_MAX];
	uint64_t h;
	struct closed_bind *oldest = NULL;
	size_t i;

	snprintf(key, sizeof(key), "%s/%s", t->namespace_, t->name);
	h = closed_hash(key_hash(key));
	for (i = 0; i < CLOSED_PROBES; i++) {
		struct closed_bind *e = &c->closed[(h + i) & (CLOSED_SLOTS - 1)];

		if (!e->key_hash || e->key_hash == h || now >= e->closed_ns + CLOSED_KEEP_NS) {
			oldest = e;
			break;
		}
		if (!oldest || e->closed_ns < oldest->closed_ns)
			oldest = e;
	}
	oldest->key_hash = h;
	oldest->revision = t->revision;
	oldest->closed_ns = now;
}

/* Whether the bind of this revision of the pod whose key hashes so has closed. */
static bool closed_with(const struct correlator *c, uint64_t key_hash, int64_t revision)
{
	uint64_t h = closed_hash(key_hash);
	size_t i;

	for (i = 0; i < CLOSED_PROBES; i++) {
		const struct closed_bind *e = &c->closed[(h + i) & (CLOSED_SLOTS - 1)];

		if (!e->key_hash)
			return false;
		if (e->key_hash == h && e->revision == revision)
			return true;
	}
	return false;
}

static void on_watch_event(struct correlator *c, const struct actor *who,
			   const struct decoded_msg *msg)
{
	const struct k8s_object *obj = &msg->body.watch.object;
	struct observation *o;
	char key[KEY_MAX];
	bool sent = who->role == ROLE_APISERVER && msg->dir == CONN_DIR_OUT;
	/* Read by any traced process: the scheduler's informer, or the apiserver's own loopback
	 * client (its watches of itself). */
	bool received = msg->dir == CONN_DIR_IN;

	if (msg->body_kind != BODY_K8S_WATCH_EVENT || (!sent && !received))
		return;
	if (obj->kind != K8S_KIND_POD && obj->kind != K8S_KIND_TABLE_ROW)
		return;
	if (!obj->meta.name[0] || !obj->meta.resource_version[0])
		return;
	o = obs_add(c, sent ? OBS_WATCH_SENT : OBS_WATCH_RECEIVED, who, msg);
	if (received) {
		/* Its apiserver's end is this one the other way round. */
		struct receiving_conn *r =
		    receiving_find(c, conn_key(&who->remote, &who->local), true);

		if (r && !r->first_ns)
			r->first_ns = msg->ts_last_ns;
	}
	snprintf(key, sizeof(key), "%s/%s", obj->meta.namespace, obj->meta.name);
	obs_set_key(c, o, key);
	/* The scheduler's informer learns of the new pod: ADDED, not yet bound. */
	if (received && who->role == ROLE_SCHEDULER && obj->kind == K8S_KIND_POD &&
	    !obj->pod.node_name[0] && strcmp(msg->body.watch.type, "ADDED") == 0) {
		struct pending_pod *p = pending_find(c, o->key, true, msg->ts_first_ns);

		pending_set(c, o->key, STAGE_SCHEDULER_INFORMED, who, msg, msg->ts_last_ns);
		if (p && !p->create_revision)
			p->create_revision = strtoll(obj->meta.resource_version, NULL, 10);
	}
	o->revision = strtoll(obj->meta.resource_version, NULL, 10);
	if (sent && o->revision && closed_with(c, o->key_hash, o->revision))
		c->stats.watch_sent_after_close++;
	util__copy(o->event_type, sizeof(o->event_type), msg->body.watch.type);
	if (obj->kind == K8S_KIND_POD) {
		obs_set(c, &o->node, obj->pod.node_name, BIND_NAME_MAX);
		util__copy(o->encoding, sizeof(o->encoding),
			   obj->encoding == K8S_ENCODING_PROTOBUF ? "protobuf" : "json");
	} else {
		obs_set(c, &o->node, strcmp(obj->row.node_name, "<none>") ? obj->row.node_name : "",
			BIND_NAME_MAX);
		snprintf(o->encoding, sizeof(o->encoding), "table");
	}
}

/* ---- Raft: etcd's peer traffic ---- */

static void raft_note_id(struct correlator *c, uint64_t id)
{
	int i;

	if (!id)
		return;
	for (i = 0; i < c->n_raft_ids; i++)
		if (c->raft_ids[i] == id)
			return;
	if (c->n_raft_ids < BIND_RAFT_MEMBERS)
		c->raft_ids[c->n_raft_ids++] = id;
}

/* The member id a traced etcd speaks as (0 unknown); learned from the messages it writes
 * (their From) and reads (their To). */
static uint64_t raft_member_of(const struct correlator *c, pid_t pid)
{
	int i;

	for (i = 0; i < c->n_raft_pids; i++)
		if (c->raft_pids[i].pid == pid)
			return c->raft_pids[i].id;
	return 0;
}

static pid_t raft_pid_of(const struct correlator *c, uint64_t id)
{
	int i;

	for (i = 0; i < c->n_raft_pids; i++)
		if (c->raft_pids[i].id == id)
			return c->raft_pids[i].pid;
	return 0;
}

void correlator__process_gone(struct correlator *c, pid_t pid, uint64_t now_ns)
{
	c->gone[c->n_gone % MAX_GONE].pid = pid;
	c->gone[c->n_gone++ % MAX_GONE].ns = now_ns;
	for (int i = 0; i < c->n_raft_pids; i++)
		if (c->raft_pids[i].pid == pid && !c->raft_pids[i].gone_ns)
			c->raft_pids[i].gone_ns = now_ns;
}

/* When process pid exited (0: running, or not known). */
static uint64_t pid_gone_ns(const struct correlator *c, pid_t pid)
{
	for (unsigned i = 0; i < c->n_gone && i < MAX_GONE; i++)
		if (c->gone[i].pid == pid)
			return c->gone[i].ns;
	return 0;
}

/* When the member's process exited (0: running, or not known). */
static uint64_t raft_gone_ns(const struct correlator *c, uint64_t id)
{
	for (int i = 0; i < c->n_raft_pids; i++)
		if (c->raft_pids[i].id == id)
			return c->raft_pids[i].gone_ns;
	return 0;
}

static void raft_learn_pid(struct correlator *c, pid_t pid, uint64_t id)
{
	int i;

	if (!id)
		return;
	raft_note_id(c, id);
	for (i = 0; i < c->n_raft_pids; i++) {
		if (c->raft_pids[i].pid == pid) {
			c->raft_pids[i].id = id; /* a restarted member reuses no pid; last wins */
			return;
		}
	}
	if (c->n_raft_pids < MAX_RAFT_PIDS)
		c->raft_pids[c->n_raft_pids++] = (struct raft_pid){ .pid = pid, .id = id };
}

/* The link's last ack and commit: a repeat (heartbeats say the same commit ten times a second)
 * is not kept. */
static struct raft_link *raft_link(struct correlator *c, const struct actor *who, bool sent,
				   uint64_t now)
{
	struct raft_link *l, *oldest = NULL;
	int i;

	for (i = 0; i < MAX_RAFT_LINKS; i++) {
		l = &c->raft_links[i];
		if (l->pid == who->pid && l->conn == who->conn && l->sent == sent) {
			l->used_ns = now;
			return l;
		}
		if (!oldest || l->used_ns < oldest->used_ns)
			oldest = l;
	}
	memset(oldest, 0, sizeof(*oldest));
	oldest->pid = who->pid;
	oldest->conn = who->conn;
	oldest->sent = sent;
	oldest->used_ns = now;
	return oldest;
}

static struct raft_obs *robs_add(struct correlator *c, enum raft_obs_kind kind,
				 const struct actor *who, const struct decoded_msg *msg,
				 const struct raft_message *m, uint64_t self)
{
	struct raft_obs *o = &c->robs[c->robs_next++ % MAX_RAFT_OBS];
	bool sent = msg->dir == CONN_DIR_OUT;

	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->sent = sent;
	o->first_ns = msg->ts_first_ns;
	o->last_ns = msg->ts_last_ns;
	o->who = *who;
	o->from = m->ids_known ? m->from : sent ? self : 0;
	o->to = m->ids_known ? m->to : sent ? 0 : self;
	o->term = m->state_known ? m->term : 0;
	c->stats.raft_observations++;
	return o;
}

/* The key's slot: its own, else a free one, else the least recently used of its probe window
 * (a key pushed out while unbound is counted: its bind will not be known from raft alone). */
static struct raft_key *raft_key_slot(struct correlator *c, uint64_t hash)
{
	struct raft_key *k, *victim = NULL;
	int i;

	if (!c->raft_keys) {
		c->raft_keys = calloc(MAX_RAFT_KEYS, sizeof(*c->raft_keys));
		if (!c->raft_keys)
			return NULL;
	}
	for (i = 0; i < RAFT_KEY_PROBE; i++) {
		k = &c->raft_keys[(hash + (uint64_t)i) % MAX_RAFT_KEYS];
		if (k->hash == hash)
			return k;
		if (!victim || (victim->hash && (!k->hash || k->used_ns < victim->used_ns)))
			victim = k;
	}
	if (victim->hash && victim->unbound)
		c->stats.raft_keys_pushed_out++;
	memset(victim, 0, sizeof(*victim));
	victim->hash = hash;
	return victim;
}

/* Whether the pod entry o (of txn) is its bind: the first entry setting nodeName after one that
 * had it empty, or a repeat of that entry (*first false). A key not seen unbound before is not
 * taken for a bind: a later write of a bound pod would look the same. */
static bool raft_key_note(struct correlator *c, const struct raft_obs *o,
			  const struct etcd_txn *txn, uint64_t now, bool *first)
{
	struct raft_key *k;

	*first = false;
	if (txn->put.value.kind != K8S_KIND_POD || !o->request_id)
		return false;
	k = raft_key_slot(c, o->key_hash);
	if (!k)
		return false;
	k->used_ns = now;
	if (!txn->put.value.pod.node_name[0]) {
		k->unbound = true;
		k->bind_request_id = 0;
		return false;
	}
	if (k->bind_request_id)
		return k->bind_request_id == o->request_id;
	if (!k->unbound)
		return false;
	k->unbound = false;
	k->bind_request_id = o->request_id;
	*first = true;
	return true;
}

/* A bind on a node with no apiserver traced: its raft entry is all there is of it here. The
 * trace is the pod's (its UID is in the entry's value), so this member's part joins the spans of
 * the tracers that saw the rest. */
static void raft_only_bind(struct correlator *c, const struct decoded_msg *msg,
			   const struct raft_entry *e)
{
	const struct etcd_txn *txn = &e->req.txn;
	const char *rest = txn->put.key + 15, *slash = strchr(rest, '/');
	char ns[BIND_NS_MAX], name[BIND_NAME_MAX];
	struct open_bind *b;

	if (!slash || (size_t)(slash - rest) >= sizeof(ns))
		return;
	memcpy(ns, rest, (size_t)(slash - rest));
	ns[slash - rest] = 0;
	util__copy(name, sizeof(name), slash + 1);
	b = bind_for(c, ns, name, msg->ts_first_ns, true);
	if (!b)
		return;
	b->t.served_elsewhere = true;
	b->t.raft_only = true;
	b->t.raft_request_id = e->request_id;
	util__copy(b->t.node, sizeof(b->t.node), txn->put.value.pod.node_name);
	util__copy(b->t.uid, sizeof(b->t.uid), txn->put.value.meta.uid);
	b->responded = true;
	b->responded_ns = msg->ts_last_ns;
	b->close_after_ns = msg->ts_last_ns + c->opt.linger_ns + RAFT_ONLY_WAIT_NS;
}

static void on_raft(struct correlator *c, const struct actor *who, const struct decoded_msg *msg)
{
	const struct raft_message *m = msg->body.raft;
	bool sent = msg->dir == CONN_DIR_OUT, first;
	uint64_t self;
	struct raft_obs *o;
	struct raft_link *l;
	uint32_t i;

	if (msg->body_kind != BODY_RAFT_MESSAGE || !m || who->role != ROLE_ETCD)
		return;
	if (m->ids_known && m->from && m->to) {
		raft_learn_pid(c, who->pid, sent ? m->from : m->to);
		raft_note_id(c, sent ? m->to : m->from);
	}
	self = raft_member_of(c, who->pid);
	if (m->type == RAFT_MSG_PROP || m->type == RAFT_MSG_APP) {
		for (i = 0; i < m->n_entries; i++) {
			const struct raft_entry *e = &m->entries[i];
			const struct etcd_txn *txn = &e->req.txn;

			if (e->request != RAFT_REQ_TXN || !txn->has_put ||
			    !is_pod_key(txn->put.key))
				continue;
			o = robs_add(c, m->type == RAFT_MSG_PROP ? ROBS_PROP : ROBS_APP, who, msg,
				     m, self);
			o->index = e->index;
			o->term = e->term;
			o->request_id = e->request_id;
			o->key_hash = key_hash(txn->put.key);
			o->compare_rev = txn->compare_revision;
			o->binds = raft_key_note(c, o, txn, msg->ts_last_ns, &first);
			if (first && c->opt.node_scope && !c->opt.have_apiserver)
				raft_only_bind(c, msg, e);
		}
	}
	if (m->type == RAFT_MSG_HEARTBEAT && m->ids_known && m->from && !sent &&
	    m->term >= c->raft_hb_term) {
		c->raft_hb_leader = m->from;
		c->raft_hb_term = m->term;
	}
	if (m->type == RAFT_MSG_APP_RESP && !m->reject) {
		l = raft_link(c, who, sent, msg->ts_last_ns);
		if (m->index > l->last_ack) {
			l->last_ack = m->index;
			o = robs_add(c, ROBS_APP_RESP, who, msg, m, self);
			o->index = m->index;
		}
	}
	if ((m->type == RAFT_MSG_APP || m->type == RAFT_MSG_HEARTBEAT) && m->commit &&
	    (!m->entries_total || m->last_part)) {
		l = raft_link(c, who, sent, msg->ts_last_ns);
		if (m->commit > l->last_commit) {
			l->last_commit = m->commit;
			o = robs_add(c, ROBS_COMMIT, who, msg, m, self);
			o->index = m->commit;
		}
	}
}

void correlator__message(struct correlator *c, const struct actor *who,
			 const struct decoded_msg *msg)
{
	switch (msg->kind) {
	case DECODED_REQUEST:
	case DECODED_RESPONSE:
		if (who->role == ROLE_SCHEDULER || who->role == ROLE_APISERVER)
			on_http(c, who, msg);
		break;
	case DECODED_GRPC_REQUEST:
	case DECODED_GRPC_RESPONSE:
	case DECODED_ETCD_WATCH_EVENT:
		on_grpc(c, who, msg);
		break;
	case DECODED_WATCH_EVENT:
		on_watch_event(c, who, msg);
		break;
	case DECODED_RAFT_MESSAGE:
		on_raft(c, who, msg);
		break;
	default:
		break;
	}
}

void correlator__fsync(struct correlator *c, const struct actor *who, uint64_t start_ns,
		       uint64_t end_ns, bool is_wal, int64_t ret)
{
	struct observation *o;

	if (!is_wal || ret != 0)
		return;
	o = obs_add(c, OBS_FSYNC, who, NULL);
	o->first_ns = start_ns;
	o->last_ns = end_ns;
}

void correlator__call(struct correlator *c, const char *ns, const char *name,
		      const struct citation *citation)
{
	struct actor none = { 0 };
	struct observation *o = obs_add(c, OBS_CALL, &none, NULL);
	char key[KEY_MAX];

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	obs_set_key(c, o, key);
	o->first_ns = o->last_ns = citation->mono_ns;
	o->citation = citation__pack(c, citation);
	o->cit_queued = citation->queued;
	o->cit_giveup = citation->giveup;
	o->cit_object = citation->object;
}

void correlator__conn_read(struct correlator *c, pid_t pid, uint64_t conn, uint64_t ts_ns)
{
	if (c->opt.create_from_reads)
		conn_reads__add(c->reads, pid, conn, ts_ns);
}

void correlator__loss(struct correlator *c, pid_t pid, uint64_t conn, uint64_t now_ns)
{
	struct loss *l = &c->losses[c->loss_next++ % MAX_LOSSES];

	l->pid = pid;
	l->conn = conn;
	l->from_ns = l->ns = now_ns;
}

void correlator__drops(struct correlator *c, uint64_t since_ns, uint64_t now_ns)
{
	struct loss *l;

	if (c->drop_next) {
		l = &c->drop_spans[(c->drop_next - 1) % MAX_DROP_SPANS];
		if (since_ns <= l->ns) {
			if (now_ns > l->ns)
				l->ns = now_ns;
			return;
		}
	}
	l = &c->drop_spans[c->drop_next++ % MAX_DROP_SPANS];
	l->pid = 0;
	l->conn = 0;
	l->from_ns = since_ns;
	l->ns = now_ns;
}

/* A connection seen from its two ends: each end's local address and port are the other's
 * remote ones (IPv4 or IPv6; an IPv4 end matches its v4-mapped form on a dual-stack socket). */
static bool same_connection(const struct actor *a, const struct actor *b)
{
	return endpoint__equal(&a->local, &b->remote) && endpoint__equal(&a->remote, &b->local);
}

/* A member of several that answered before its own WAL fsync of the entry ended: etcd answers
 * once the entry is committed, that is durable on a quorum, and a follower (or a leader whose
 * followers were quicker) applies a committed entry while its own disk write still runs. The
 * stage stays missing on this member, with the fsync's times against the answer; a single
 * member waits for its own fsync before applying, so this is not seen there. */
static void explain_late_fsync(struct stage *st, const struct observation *fsync,
			       uint64_t answer_ns)
{
	double end_ms = (double)(fsync->last_ns - answer_ns) / 1e6;

	if (fsync->first_ns <= answer_ns)
		snprintf(
		    st->missing, sizeof(st->missing),
		    "answered during this member's WAL fsync (began %.3f ms before, ended %.3f "
		    "ms after the answer): other members had made it durable",
		    (double)(answer_ns - fsync->first_ns) / 1e6, end_ms);
	else
		snprintf(
		    st->missing, sizeof(st->missing),
		    "answered before this member's WAL fsync (began %.3f ms after the answer): "
		    "other members had made it durable",
		    (double)(fsync->first_ns - answer_ns) / 1e6);
}

/* A Txn answered with a gRPC error instead of a TxnResponse. */
static void txn_attempt_error(struct txn_attempt *a, const struct observation *r)
{
	if (a->grpc_status)
		return;
	a->grpc_status = r->grpc_status;
	a->error_ns = r->last_ns;
	util__copy(a->grpc_message, sizeof(a->grpc_message), r->node);
}

/* The etcd member that read the Txn `sent` (same stream, the connection seen from the other
 * end), whether its process exited since, and its error answer if it gave one. */
static void txn_attempt_member(struct correlator *c, const struct obs_list *pod, const char *key,
			       uint64_t hash, const struct observation *sent, struct txn_attempt *a)
{
	const struct observation *in = NULL, *o;
	const struct obs_list *l;
	size_t i;

	for_each_listed(c, pod, o, i)
	{
		if (o->kind == OBS_ETCD_TXN_IN && obs_key_is(o, key, hash) &&
		    o->stream_id == sent->stream_id && same_connection(&o->who, &sent->who)) {
			in = o;
			break;
		}
	}
	a->member_pid = in ? in->who.pid : sent->who.peer_pid;
	if (!a->member_pid)
		return;
	a->member_id = raft_member_of(c, a->member_pid);
	a->member_gone_ns = pid_gone_ns(c, a->member_pid);
	if (!in)
		return;
	l = obs_on_stream(c, in->who.pid, in->who.conn, in->stream_id);
	for_each_listed(c, l, o, i)
	{
		if (o->kind == OBS_ETCD_TXN_OUT && o->grpc_status &&
		    o->stream_id == in->stream_id && o->who.conn == in->who.conn &&
		    o->who.pid == in->who.pid && o->first_ns >= in->first_ns) {
			txn_attempt_error(a, o);
			break;
		}
	}
}

static void resolve_etcd(struct correlator *c, struct bind_timeline *t, uint64_t window_start,
			 uint64_t window_end)
{
	char key[KEY_MAX];
	struct observation *o, *sent = NULL, *in = NULL, *out = NULL, *fs = NULL;
	const struct obs_list *pod, *l;
	size_t i;
	uint64_t hash;

	pod_key(key, sizeof(key), t->namespace_, t->name);
	hash = key_hash(key);
	pod = obs_with_key(c, hash);
	/* Every Txn the apiserver wrote on this pod in the window: the attempts. */
	for_each_listed(c, pod, o, i)
	{
		if (o->kind != OBS_TXN_SENT || !obs_key_is(o, key, hash) ||
		    o->first_ns < window_start || o->first_ns > window_end)
			continue;
		if (t->node[0] && o->node[0] && strcmp(o->node, t->node) != 0)
			continue;
		if (t->n_txns < BIND_MAX_TXNS) {
			struct txn_attempt *a = &t->txns[t->n_txns++];
			struct observation *r;
			size_t j;

			a->sent_ns = o->first_ns;
			a->compare_revision = o->compare_rev;
			txn_attempt_member(c, pod, key, hash, o, a);
			l = obs_on_stream(c, o->who.pid, o->who.conn, o->stream_id);
			for_each_listed(c, l, r, j)
			{
				if (r->kind == OBS_TXN_RESPONSE_IN &&
				    r->stream_id == o->stream_id && r->who.conn == o->who.conn &&
				    r->who.pid == o->who.pid && r->first_ns >= o->first_ns) {
					if (r->grpc_status) {
						txn_attempt_error(a, r);
						break;
					}
					a->responded = true;
					a->response_ns = r->last_ns;
					a->revision = r->revision;
					a->succeeded = r->succeeded;
					break;
				}
			}
		}
		/* The attempt that wrote: the last one, or the one that succeeded. */
		if (!sent || t->txns[t->n_txns - 1].succeeded)
			sent = o;
	}
	if (sent)
		set_stage(&t->stages[STAGE_ETCD_TXN_SENT], &sent->who, sent->first_ns,
			  sent->first_ns, sent->last_ns, sent->stream_id);

	/* The same Txn read by etcd: same HTTP/2 stream, the connection seen from the other end. */
	for_each_listed(c, pod, o, i)
	{
		if (o->kind != OBS_ETCD_TXN_IN || !obs_key_is(o, key, hash))
			continue;
		if (sent ? (o->stream_id == sent->stream_id && same_connection(&o->who, &sent->who))
			 : (o->first_ns >= window_start && o->first_ns <= window_end)) {
			in = o;
			if (sent)
				break;
		}
	}
	if (in) {
		set_stage(&t->stages[STAGE_ETCD_TXN_RECEIVED], &in->who, in->last_ns, in->first_ns,
			  in->last_ns, in->stream_id);
		l = obs_on_stream(c, in->who.pid, in->who.conn, in->stream_id);
		for_each_listed(c, l, o, i)
		{
			if (o->kind == OBS_ETCD_TXN_OUT && !o->grpc_status &&
			    o->stream_id == in->stream_id && o->who.conn == in->who.conn &&
			    o->who.pid == in->who.pid && o->first_ns >= in->first_ns) {
				out = o;
				break;
			}
		}
	}
	if (out) {
		set_stage(&t->stages[STAGE_ETCD_TXN_RESPONSE], &out->who, out->first_ns,
			  out->first_ns, out->last_ns, out->stream_id);
		if (out->succeeded)
			t->revision = out->revision;
	} else if (sent && t->n_txns && t->txns[t->n_txns - 1].succeeded) {
		t->revision = t->txns[t->n_txns - 1].revision;
	}

	/* The WAL fdatasync that made it durable: the first to start after etcd had read the
	 * whole Txn (one that began while it was still reading cannot hold it) and to end before
	 * it answered. */
	if (in && out) {
		const struct observation *late = NULL;

		l = fsyncs_since(c, in->who.pid, in->last_ns);
		for_each_listed(c, l, o, i)
		{
			if (o->kind != OBS_FSYNC || o->who.pid != in->who.pid ||
			    o->first_ns < in->last_ns)
				continue;
			if (o->last_ns <= out->first_ns) {
				if (!fs || o->first_ns < fs->first_ns)
					fs = o;
			} else if (!late || o->first_ns < late->first_ns) {
				late = o;
			}
		}
		if (fs)
			set_stage(&t->stages[STAGE_ETCD_WAL_FSYNC], &fs->who, fs->first_ns,
				  fs->first_ns, fs->last_ns, 0);
		else if (late)
			explain_late_fsync(&t->stages[STAGE_ETCD_WAL_FSYNC], late, out->first_ns);
	}

	/* etcd's watch event of that revision back at the apiserver. */
	if (t->revision) {
		for_each_listed(c, pod, o, i)
		{
			if (o->kind == OBS_ETCD_WATCH && o->revision == t->revision &&
			    obs_key_is(o, key, hash)) {
				set_stage(&t->stages[STAGE_ETCD_WATCH_EVENT], &o->who, o->last_ns,
					  o->first_ns, o->last_ns, o->stream_id);
				t->node_before_known = o->prev_known;
				util__copy(t->node_before, sizeof(t->node_before), o->prev_node);
				break;
			}
		}
	}
}

/* The pod's watch events (sent and received) still in the ring, oldest first: at most this many
 * are looked at per bind (a pod is sent a few per watcher). */
#define MAX_POD_EVENTS 512

/* The observation of a frame on the watcher's end: the same event read from the same stream of
 * the same connection. */
static const struct observation *frame_received(const struct observation *sent,
						const struct observation *const *ev, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (ev[i]->kind == OBS_WATCH_RECEIVED && ev[i]->revision == sent->revision &&
		    ev[i]->stream_id == sent->stream_id && same_connection(&ev[i]->who, &sent->who))
			return ev[i];
	return NULL;
}

static void frame_set(struct watch_frame *f, const struct observation *o,
		      const struct observation *r)
{
	util__copy(f->type, sizeof(f->type), o->event_type);
	f->revision = o->revision;
	f->sent_ns = o->first_ns;
	f->received_ns = r ? r->last_ns : 0;
	util__copy(f->node, sizeof(f->node), o->node);
}

static bool lost_on(struct correlator *c, const struct stage *st, uint64_t from, uint64_t to,
		    bool *drop);

/* Every frame the watcher's stream (the one `bind_ev` came on) was sent about the pod, from its
 * last ADDED up to the bind's event, and what the ones between did to nodeName. */
static void resolve_frames(struct correlator *c, struct bind_timeline *t, struct watcher *w,
			   const struct observation *bind_ev, const struct observation *const *ev,
			   int n)
{
	const struct observation *o, *prev = NULL;
	int i, first = -1, k;
	bool drop = false;
	uint64_t from;

	/* From the last ADDED of this stream at or before the bind's revision. */
	for (i = 0; i < n && ev[i] != bind_ev; i++) {
		o = ev[i];
		if (o->kind == OBS_WATCH_SENT && o->who.pid == bind_ev->who.pid &&
		    o->who.conn == bind_ev->who.conn && o->stream_id == bind_ev->stream_id &&
		    o->revision <= t->revision && strcmp(o->event_type, "ADDED") == 0)
			first = i;
	}
	if (first < 0) {
		uint64_t oldest =
		    c->obs_next > MAX_OBS ? c->obs[c->obs_next % MAX_OBS].first_ns : 0;
		const struct stage *cr = &t->stages[STAGE_CREATE_REQUEST];

		if (t->created_before_attach)
			w->frames_start = FRAMES_BEFORE_ATTACH;
		else if (oldest && (!cr->seen || oldest > cr->first_ns))
			w->frames_start = FRAMES_AGED_OUT;
		else
			w->frames_start = FRAMES_NO_ADDED;
		first = 0;
	}
	for (i = first; i < n; i++) {
		o = ev[i];
		if (o->kind != OBS_WATCH_SENT || o->who.pid != bind_ev->who.pid ||
		    o->who.conn != bind_ev->who.conn || o->stream_id != bind_ev->stream_id ||
		    o->revision > t->revision)
			continue;
		/* A Table and the object it carries are one event. */
		if (prev && prev->revision == o->revision &&
		    !strcmp(prev->event_type, o->event_type))
			continue;
		if (o != bind_ev && o->revision == t->revision)
			continue;
		k = w->n_frames + w->frames_not_kept;
		if (k && o != bind_ev && strcmp(o->node, ev[first]->node) != 0 &&
		    w->frames_start == FRAMES_FROM_ADDED && !w->frames_changed++)
			frame_set(&w->changed_at, o, NULL);
		if (o == bind_ev || w->n_frames < BIND_MAX_WATCH_FRAMES - 1)
			frame_set(&w->frames[w->n_frames++], o, frame_received(o, ev, n));
		else
			w->frames_not_kept++;
		prev = o;
		if (o == bind_ev)
			break;
	}
	/* Losses on this connection while the frames came. */
	from = w->n_frames ? w->frames[0].sent_ns : bind_ev->first_ns;
	if (lost_on(c, &w->sent, from, bind_ev->last_ns, &drop) || drop)
		w->frames_lost = true;
}

/* ---- Raft: the bind's entry through etcd's members ---- */

#define for_each_robs(c, o, i)                                                                     \
	for (i = (c)->robs_next > MAX_RAFT_OBS ? (c)->robs_next - MAX_RAFT_OBS : 0;                \
	     i < (c)->robs_next && ((o) = &(c)->robs[i % MAX_RAFT_OBS], 1); i++)

static void raft_hex(char *out, size_t cap, uint64_t id)
{
	if (id)
		snprintf(out, cap, "%" PRIx64, id);
	else
		util__copy(out, cap, "?");
}

static void raft_stage_missing(struct stage *st, const char *why)
{
	st->seen = false;
	util__copy(st->missing, sizeof(st->missing), why);
}

/* The member's WAL fsync holding the entry, from the main observations (see raft_member_part). */
static const struct observation *raft_fsync(struct correlator *c, pid_t pid, uint64_t start_after,
					    uint64_t end_after)
{
	const struct observation *best = NULL, *o;
	const struct obs_list *l = fsyncs_since(c, pid, start_after);
	size_t i;

	for_each_listed(c, l, o, i)
	{
		if (o->kind != OBS_FSYNC || o->who.pid != pid || o->first_ns < start_after ||
		    o->last_ns < end_after)
			continue;
		if (!best || o->first_ns < best->first_ns)
			best = o;
	}
	return best;
}

/* The entry: the first MsgProp or MsgApp after the answering member read the Txn, carrying the
 * same Txn (the pod's key, the compare's revision) with a header.ID that member made (its top
 * 16 bits are the low 16 of the member's id). */
static const struct raft_obs *raft_find_entry(struct correlator *c, const struct bind_timeline *t,
					      uint64_t hash, bool rev_known, int64_t rev)
{
	const struct stage *in = &t->stages[STAGE_ETCD_TXN_RECEIVED];
	struct raft_obs *o;
	uint64_t i;

	for_each_robs(c, o, i)
	{
		if ((o->kind != ROBS_PROP && o->kind != ROBS_APP) || o->key_hash != hash ||
		    o->first_ns < in->first_ns || (rev_known && o->compare_rev != rev) ||
		    (o->request_id >> 48) != (t->raft.answering & 0xffff))
			continue;
		return o;
	}
	return NULL;
}

/* The members, by id (the outputs list them in that order). A member whose process had exited
 * before the bind began (killed, crashed) takes no part: its pid is not given, its append is
 * said to be impossible and not counted missing. */
static void raft_members(struct correlator *c, struct bind_raft *r, uint64_t since_ns)
{
	int i, j;

	for (i = 0; i < c->n_raft_ids && r->n_members < BIND_RAFT_MEMBERS; i++) {
		struct raft_member_part *p = &r->members[r->n_members++];
		uint64_t gone = raft_gone_ns(c, c->raft_ids[i]);

		p->id = c->raft_ids[i];
		p->pid = raft_pid_of(c, p->id);
		p->gone = gone && gone < since_ns;
		if (p->gone)
			p->pid = 0;
		p->leader = p->id == r->leader;
		p->answered = p->id == r->answering;
		for (j = r->n_members - 1; j > 0 && r->members[j].id < r->members[j - 1].id; j--) {
			struct raft_member_part tmp = r->members[j];

			r->members[j] = r->members[j - 1];
			r->members[j - 1] = tmp;
		}
	}
}

/* Each member's append: the leader's from its MsgApp, a follower's from the MsgApp it read and
 * the MsgAppResp it wrote; the leader reading that MsgAppResp is when it counts. */
static void raft_appends(struct correlator *c, struct bind_raft *r, pid_t leader_pid,
			 const struct raft_obs *app_sent, uint64_t leader_had_ns)
{
	char why[BIND_REASON_MAX], id[24];
	const struct observation *fs;
	struct raft_obs *o;
	uint64_t i;
	int k;

	for (k = 0; k < r->n_members; k++) {
		struct raft_member_part *p = &r->members[k];

		raft_hex(id, sizeof(id), p->id);
		if (!p->pid) {
			snprintf(why, sizeof(why),
				 p->gone
				     ? "member %s is not running: its process had exited before "
				       "this bind"
				     : "member %s is not traced",
				 id);
			raft_stage_missing(&p->appended, why);
			/* Its acknowledgement as the leader read it still counts. */
			for_each_robs(c, o, i)
			{
				if (o->kind == ROBS_APP_RESP && !o->sent && leader_pid &&
				    o->who.pid == leader_pid && o->from == p->id &&
				    o->index >= r->index && app_sent &&
				    o->first_ns >= app_sent->first_ns) {
					p->ack_received_ns = p->ack_ns = o->last_ns;
					break;
				}
			}
			continue;
		} else if (p->leader) {
			/* The first to start after it had the proposal: a Ready holds every
			 * entry appended before it, and a Save starts after its Ready. Not after
			 * its MsgApp: the transport writes it from another goroutine, which under
			 * load runs after the Save's fsync has ended. Without the proposal's
			 * arrival, the first to end after the MsgApp. */
			fs = !app_sent	     ? NULL
			     : leader_had_ns ? raft_fsync(c, p->pid, leader_had_ns, 0)
					     : raft_fsync(c, p->pid, 0, app_sent->first_ns);
			if (fs) {
				set_stage(&p->appended, &fs->who, fs->last_ns, fs->first_ns,
					  fs->last_ns, 0);
				p->ack_ns = fs->last_ns;
			} else {
				raft_stage_missing(
				    &p->appended, app_sent ? "no WAL fsync of the leader after it "
							     "had the entry"
							   : "the leader's MsgApp of the entry was "
							     "not seen");
			}
			continue;
		}
		for_each_robs(c, o, i)
		{
			if (o->kind == ROBS_APP && !o->sent && o->who.pid == p->pid &&
			    o->index == r->index && o->term == r->term) {
				p->app_received_ns = o->last_ns;
				break;
			}
		}
		if (!p->app_received_ns && raft_gone_ns(c, p->id)) {
			/* Killed or crashed during the bind, before the entry reached it. */
			p->gone = true;
			p->pid = 0;
			snprintf(why, sizeof(why),
				 "member %s is not running: its process exited before it read the "
				 "MsgApp",
				 id);
			raft_stage_missing(&p->appended, why);
			continue;
		}
		if (!p->app_received_ns) {
			raft_stage_missing(&p->appended, "its read of the MsgApp was not seen");
			continue;
		}
		fs = raft_fsync(c, p->pid, p->app_received_ns, 0);
		if (fs)
			set_stage(&p->appended, &fs->who, fs->last_ns, fs->first_ns, fs->last_ns,
				  0);
		else
			raft_stage_missing(&p->appended,
					   "no WAL fsync began after it read the MsgApp");
		for_each_robs(c, o, i)
		{
			if (o->kind != ROBS_APP_RESP || o->index < r->index ||
			    o->first_ns < p->app_received_ns)
				continue;
			if (o->sent && o->who.pid == p->pid && !p->ack_sent_ns)
				p->ack_sent_ns = o->first_ns;
			if (!o->sent && o->who.pid == leader_pid && o->from == p->id &&
			    !p->ack_received_ns)
				p->ack_received_ns = o->last_ns;
		}
		p->ack_ns = p->ack_received_ns;
	}
}

/* The quorum: the first r->quorum acknowledgements as the leader counts them (its own at the
 * end of its fsync, a follower's when it read its MsgAppResp). The last of them is when the
 * leader commits: raft_committed; raft_appended ends when the quorum's fsyncs all had. */
static void raft_quorum(struct bind_raft *r, const struct raft_obs *app_sent)
{
	struct raft_member_part *order[BIND_RAFT_MEMBERS], *last;
	char why[BIND_REASON_MAX];
	uint64_t durable = 0;
	int n = 0, i, j;

	for (i = 0; i < r->n_members; i++)
		if (r->members[i].ack_ns)
			order[n++] = &r->members[i];
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && order[j]->ack_ns < order[j - 1]->ack_ns; j--) {
			last = order[j];
			order[j] = order[j - 1];
			order[j - 1] = last;
		}
	if (n < r->quorum || !app_sent) {
		snprintf(why, sizeof(why),
			 "%d of the %d acknowledgements a commit needs were seen%s", n, r->quorum,
			 app_sent ? "" : " (the leader's MsgApp was not seen)");
		raft_stage_missing(&r->appended, why);
		raft_stage_missing(&r->quorum_fsync, why);
		raft_stage_missing(&r->committed, why);
		return;
	}
	for (i = 0; i < r->quorum; i++) {
		order[i]->in_quorum = true;
		if (!order[i]->appended.seen)
			durable = UINT64_MAX;
		else if (durable < order[i]->appended.last_ns)
			durable = order[i]->appended.last_ns;
	}
	last = order[r->quorum - 1];
	/* The leader commits on the acknowledgement that completes the quorum. */
	set_stage(&r->committed, &app_sent->who, last->ack_ns, last->ack_ns, last->ack_ns, 0);
	if (durable != UINT64_MAX)
		set_stage(&r->appended, &app_sent->who, durable, app_sent->first_ns, durable, 0);
	else
		raft_stage_missing(&r->appended, "a WAL fsync of the quorum was not seen");
	if (last->appended.seen)
		r->quorum_fsync = last->appended;
	else
		raft_stage_missing(&r->quorum_fsync, last->appended.missing);
}

static void raft_leader_change(struct bind_raft *r, const struct raft_obs *app_other,
			       const struct raft_obs *prop_sent)
{
	char a[24], b[24];

	if (app_other) {
		r->leader_changed = true;
		raft_hex(a, sizeof(a), app_other->from);
		raft_hex(b, sizeof(b), r->leader);
		snprintf(r->change, sizeof(r->change),
			 "leader change: appended at index %" PRIu64 " term %" PRIu64
			 " by %s, then at index %" PRIu64 " term %" PRIu64 " by %s",
			 app_other->index, app_other->term, a, r->index, r->term, b);
	} else if (prop_sent && r->leader && prop_sent->to && prop_sent->to != r->leader) {
		r->leader_changed = true;
		raft_hex(a, sizeof(a), prop_sent->to);
		raft_hex(b, sizeof(b), r->leader);
		snprintf(r->change, sizeof(r->change),
			 "leader change: proposed to %s, appended by %s at term %" PRIu64, a, b,
			 r->term);
	}
}

/* A stage of a member not traced on this node: said so, and not counted (raft_missing). */
static void raft_not_here(struct bind_raft *r, struct stage *st, unsigned bit, const char *what,
			  uint64_t member, const char *node)
{
	char id[24];

	if (st->seen)
		return;
	raft_hex(id, sizeof(id), member);
	snprintf(st->missing, sizeof(st->missing), "%s (member %s) is not on this node%s%.64s",
		 what, id, node && node[0] ? " " : "", node ? node : "");
	r->not_here |= bit;
}

/* The member the client called: header.ID's top 16 bits are its id's low 16. */
static uint64_t raft_answering(const struct correlator *c, uint64_t request_id)
{
	for (int k = 0; k < c->n_raft_ids; k++)
		if ((c->raft_ids[k] & 0xffff) == request_id >> 48)
			return c->raft_ids[k];
	return 0;
}

/* Where the bind's entry (r->request_id) was seen: the first MsgProp written and read; the MsgApp
 * of the last term it was appended at (its index and term go into r), the first written and read
 * at that term, and the first at another term (a leader change). */
struct raft_sightings {
	const struct raft_obs *prop_sent, *prop_recv, *app_first, *app_sent, *app_recv, *app_other;
};

static void raft_sightings(struct correlator *c, struct bind_raft *r, uint64_t hash,
			   struct raft_sightings *e)
{
	struct raft_obs *o;
	uint64_t i;

	memset(e, 0, sizeof(*e));
	for_each_robs(c, o, i)
	{
		if (o->request_id != r->request_id || o->key_hash != hash)
			continue;
		if (o->kind == ROBS_PROP) {
			if (o->sent && !e->prop_sent)
				e->prop_sent = o;
			if (!o->sent && !e->prop_recv)
				e->prop_recv = o;
		} else if (o->kind == ROBS_APP && (!e->app_first || o->term > e->app_first->term)) {
			e->app_first = o;
		}
	}
	if (e->app_first) {
		r->term = e->app_first->term;
		r->index = e->app_first->index;
		for_each_robs(c, o, i)
		{
			if (o->kind != ROBS_APP || o->request_id != r->request_id)
				continue;
			if (o->term != r->term) {
				if (!e->app_other)
					e->app_other = o;
			} else if (o->sent && !e->app_sent) {
				e->app_sent = o;
			} else if (!o->sent && !e->app_recv) {
				e->app_recv = o;
			}
		}
	}
}

/* A bind whose Txn went to another node's member (served elsewhere, or seen only as its raft
 * entry): this node's member's own part, found by the pod's bind entry (struct raft_key). */
static void resolve_raft_local(struct correlator *c, struct bind_timeline *t)
{
	struct bind_raft *r = &t->raft;
	const struct stage *ev = &t->stages[STAGE_ETCD_WATCH_EVENT];
	const struct raft_obs *entry = NULL, *prop_sent = NULL, *prop_recv = NULL, *app_sent = NULL,
			      *app_first = NULL, *app_other = NULL, *app_recv = NULL, *ack = NULL;
	struct raft_member_part *self = NULL;
	struct raft_sightings e;
	const char *node = c->opt.node;
	char key[KEY_MAX];
	struct raft_obs *o;
	uint64_t i, hash;
	pid_t pid, leader_pid = 0;
	int k;

	if (c->n_raft_ids < 2 || !c->n_raft_pids)
		return; /* no member traced here, or no peers in sight */
	pod_key(key, sizeof(key), t->namespace_, t->name);
	hash = key_hash(key);
	for_each_robs(c, o, i)
	{
		if ((o->kind != ROBS_PROP && o->kind != ROBS_APP) || !o->binds ||
		    o->key_hash != hash)
			continue;
		if (t->raft_only ? o->request_id == t->raft_request_id
				 : !ev->seen || o->first_ns <= ev->mono_ns)
			entry = o;
		if (t->raft_only)
			break;
	}
	r->expected = true;
	r->local = true;
	r->voters = c->n_raft_ids;
	r->quorum = r->voters / 2 + 1;
	if (!entry) {
		const char *why = t->raft_only
				      ? "raft observations of this bind were pushed out of "
					"the bounded ring before it closed"
				      : "this node's member's bind entry was not seen";

		if (t->raft_only)
			c->stats.raft_pushed_out++;
		r->local_id = c->raft_pids[0].id;
		raft_members(c, r, t->opened_ns);
		raft_stage_missing(&r->local_had, why);
		raft_stage_missing(&r->local_acked, why);
		raft_stage_missing(&r->local_fsync, why);
		raft_not_here(r, &r->proposed, RAFT_NOT_HERE_PROPOSED, "the leader", 0, node);
		raft_not_here(r, &r->appended, RAFT_NOT_HERE_APPENDED, "the leader", 0, node);
		raft_not_here(r, &r->quorum_fsync, RAFT_NOT_HERE_QUORUM_FSYNC, "the quorum", 0,
			      node);
		raft_not_here(r, &r->committed, RAFT_NOT_HERE_COMMITTED, "the leader", 0, node);
		raft_not_here(r, &r->applied, RAFT_NOT_HERE_APPLIED, "the answering member", 0,
			      node);
		return;
	}
	pid = entry->who.pid;
	r->seen = true;
	r->request_id = entry->request_id;
	r->local_id = raft_member_of(c, pid);
	r->answering = raft_answering(c, r->request_id);
	raft_sightings(c, r, hash, &e);
	prop_sent = e.prop_sent;
	prop_recv = e.prop_recv;
	app_first = e.app_first;
	app_sent = e.app_sent;
	app_recv = e.app_recv;
	app_other = e.app_other;
	/* The leader: this member when it sent the entry (or read its proposal); else the sender
	 * of the MsgApp it read, or, where the frame did not say, the heartbeats' sender. */
	if (app_sent || (prop_recv && !app_recv))
		r->leader = r->local_id;
	else if (app_recv)
		r->leader = app_recv->from ? app_recv->from : c->raft_hb_leader;
	leader_pid = r->leader == r->local_id ? pid : 0;
	raft_members(c, r, t->opened_ns);
	raft_leader_change(r, app_other, prop_sent);
	for (k = 0; k < r->n_members; k++)
		if (r->members[k].id == r->local_id)
			self = &r->members[k];
	if (r->answering == r->leader)
		raft_stage_missing(&r->proposed,
				   "the answering member was the leader: nothing forwarded");
	else if (prop_recv && leader_pid)
		set_stage(&r->proposed, &prop_recv->who, prop_recv->last_ns, prop_recv->first_ns,
			  prop_recv->last_ns, 0);
	else if (leader_pid)
		raft_stage_missing(&r->proposed, "the leader's read of the MsgProp was not seen");
	if (app_first) {
		raft_appends(c, r, leader_pid, app_sent,
			     prop_recv && leader_pid ? prop_recv->last_ns : 0);
		raft_quorum(r, app_sent);
	} else {
		raft_stage_missing(&r->appended, "no MsgApp of the entry seen");
		raft_stage_missing(&r->committed, "no MsgApp of the entry seen");
		raft_stage_missing(&r->quorum_fsync, "no MsgApp of the entry seen");
		if (self)
			raft_stage_missing(&self->appended, "no MsgApp of the entry seen");
	}
	for_each_robs(c, o, i)
	{
		if (leader_pid && r->committed.seen && o->kind == ROBS_COMMIT && o->sent &&
		    o->who.pid == leader_pid && o->index >= r->index &&
		    o->first_ns >= r->committed.mono_ns) {
			r->committed.last_ns = o->first_ns;
			r->committed.who = o->who;
			break;
		}
	}
	/* This member's own part. */
	if (self && self->appended.seen)
		r->local_fsync = self->appended;
	else
		raft_stage_missing(&r->local_fsync, self ? self->appended.missing
							 : "this node's member id is not known");
	if (leader_pid) {
		const struct raft_obs *had = prop_recv ? prop_recv : app_sent;

		if (had)
			set_stage(&r->local_had, &had->who,
				  prop_recv ? had->last_ns : had->first_ns, had->first_ns,
				  had->last_ns, 0);
		else
			raft_stage_missing(&r->local_had, "the entry's MsgProp was not seen");
		if (r->local_fsync.seen)
			set_stage(&r->local_acked, &r->local_fsync.who, r->local_fsync.last_ns,
				  r->local_fsync.last_ns, r->local_fsync.last_ns, 0);
		else
			raft_stage_missing(&r->local_acked, r->local_fsync.missing);
	} else {
		if (app_recv && app_recv->term == r->term)
			set_stage(&r->local_had, &app_recv->who, app_recv->last_ns,
				  app_recv->first_ns, app_recv->last_ns, 0);
		else
			raft_stage_missing(&r->local_had, "its read of the MsgApp was not seen");
		for_each_robs(c, o, i)
		{
			if (r->local_had.seen && o->kind == ROBS_APP_RESP && o->sent &&
			    o->who.pid == pid && o->index >= r->index &&
			    o->first_ns >= r->local_had.mono_ns) {
				ack = o;
				break;
			}
		}
		if (ack)
			set_stage(&r->local_acked, &ack->who, ack->first_ns, ack->first_ns,
				  ack->last_ns, 0);
		else
			raft_stage_missing(&r->local_acked, "its MsgAppResp was not seen");
	}
	/* What only other nodes' members saw. */
	if (!leader_pid) {
		raft_not_here(r, &r->proposed, RAFT_NOT_HERE_PROPOSED, "the leader", r->leader,
			      node);
		raft_not_here(r, &r->committed, RAFT_NOT_HERE_COMMITTED, "the leader", r->leader,
			      node);
	}
	raft_not_here(r, &r->appended, RAFT_NOT_HERE_APPENDED, "a member of the quorum", 0, node);
	if (!r->quorum_fsync.seen)
		raft_not_here(r, &r->quorum_fsync, RAFT_NOT_HERE_QUORUM_FSYNC,
			      "the member that completed the quorum", 0, node);
	if (r->answering != r->local_id)
		raft_not_here(r, &r->applied, RAFT_NOT_HERE_APPLIED, "the answering member",
			      r->answering, node);
	else
		raft_stage_missing(&r->applied, "the Txn's read was not seen on this node");
}

static void resolve_raft_full(struct correlator *c, struct bind_timeline *t)
{
	struct bind_raft *r = &t->raft;
	const struct stage *in = &t->stages[STAGE_ETCD_TXN_RECEIVED];
	const struct raft_obs *entry, *prop_sent = NULL, *prop_recv = NULL, *app_sent = NULL,
				      *app_first = NULL, *app_other = NULL;
	struct raft_sightings e;
	char key[KEY_MAX];
	struct raft_obs *o;
	uint64_t i, hash, had_ns;
	pid_t leader_pid = 0;
	bool rev_known = false;
	int64_t rev = 0;

	memset(r, 0, sizeof(*r));
	if (t->served_elsewhere && !in->seen && t->result == BIND_RESULT_BOUND) {
		resolve_raft_local(c, t);
		return;
	}
	if (!in->seen || t->result != BIND_RESULT_BOUND)
		return;
	r->answering = raft_member_of(c, in->who.pid);
	if (!r->answering || c->n_raft_ids < 2)
		return; /* one member, or its peers not in sight: no raft to show */
	r->expected = true;
	r->voters = c->n_raft_ids;
	r->quorum = r->voters / 2 + 1;
	if (t->n_txns) {
		rev_known = true;
		rev = t->txns[t->n_txns - 1].compare_revision;
	}
	pod_key(key, sizeof(key), t->namespace_, t->name);
	hash = key_hash(key);
	entry = raft_find_entry(c, t, hash, rev_known, rev);
	if (!entry) {
		bool pushed = c->robs_next > MAX_RAFT_OBS &&
			      c->robs[c->robs_next % MAX_RAFT_OBS].first_ns > in->first_ns;
		const char *why = pushed ? "raft observations of this bind were pushed out of the "
					   "bounded ring before it closed"
					 : "the entry was not seen in the peer traffic";

		if (pushed)
			c->stats.raft_pushed_out++;
		raft_members(c, r, t->opened_ns);
		raft_stage_missing(&r->proposed, why);
		raft_stage_missing(&r->appended, why);
		raft_stage_missing(&r->quorum_fsync, why);
		raft_stage_missing(&r->committed, why);
		raft_stage_missing(&r->applied, why);
		for (int k = 0; k < r->n_members; k++)
			raft_stage_missing(&r->members[k].appended, why);
		return;
	}
	r->seen = true;
	r->request_id = entry->request_id;
	/* The entry as appended: by the last term's leader when it was appended more than once. */
	raft_sightings(c, r, hash, &e);
	prop_sent = e.prop_sent;
	prop_recv = e.prop_recv;
	app_first = e.app_first;
	app_sent = e.app_sent;
	app_other = e.app_other;
	if (app_first) {
		r->leader = app_sent ? raft_member_of(c, app_sent->who.pid) : app_first->from;
		if (!r->leader) /* an AppEntries frame met mid-stream: no ids */
			r->leader = c->raft_hb_leader;
		leader_pid = app_sent ? app_sent->who.pid : raft_pid_of(c, r->leader);
	}
	raft_members(c, r, t->opened_ns);
	raft_leader_change(r, app_other, prop_sent);

	/* raft_proposed: the follower's MsgProp, read by the leader. */
	if (r->answering == r->leader)
		raft_stage_missing(&r->proposed,
				   "the answering member was the leader: nothing forwarded");
	else if (prop_recv)
		set_stage(&r->proposed, &prop_recv->who, prop_recv->last_ns,
			  prop_sent ? prop_sent->first_ns : prop_recv->first_ns, prop_recv->last_ns,
			  0);
	else
		raft_stage_missing(&r->proposed, prop_sent ? "the leader's read of the MsgProp "
							     "was not seen"
							   : "no MsgProp of the entry seen");
	if (!app_first) {
		raft_stage_missing(&r->appended, "no MsgApp of the entry seen");
		raft_stage_missing(&r->quorum_fsync, "no MsgApp of the entry seen");
		raft_stage_missing(&r->committed, "no MsgApp of the entry seen");
		raft_stage_missing(&r->applied, "no MsgApp of the entry seen");
		for (int k = 0; k < r->n_members; k++)
			raft_stage_missing(&r->members[k].appended, "no MsgApp of the entry seen");
		return;
	}
	/* When the leader had the entry: it read the MsgProp, or the Txn itself. */
	had_ns = prop_recv ? prop_recv->last_ns : r->answering == r->leader ? in->last_ns : 0;
	raft_appends(c, r, leader_pid, app_sent, had_ns);
	raft_quorum(r, app_sent);

	/* The leader's first message carrying commit >= index: the commit shown to the others
	 * (raft_committed's last point). */
	for_each_robs(c, o, i)
	{
		if (r->committed.seen && o->kind == ROBS_COMMIT && o->sent &&
		    o->who.pid == leader_pid && o->index >= r->index &&
		    o->first_ns >= r->committed.mono_ns) {
			r->committed.last_ns = o->first_ns;
			r->committed.who = o->who;
			break;
		}
	}
	/* raft_applied: the answering member learns the commit (the leader: as it commits). */
	if (r->answering == r->leader) {
		if (r->committed.seen)
			set_stage(&r->applied, &r->committed.who, r->committed.mono_ns,
				  r->committed.mono_ns, r->committed.mono_ns, 0);
		else
			raft_stage_missing(&r->applied, r->committed.missing);
		return;
	}
	for_each_robs(c, o, i)
	{
		if (o->kind == ROBS_COMMIT && !o->sent && o->who.pid == in->who.pid &&
		    o->index >= r->index && (!app_sent || o->first_ns >= app_sent->first_ns)) {
			set_stage(&r->applied, &o->who, o->last_ns, o->first_ns, o->last_ns, 0);
			break;
		}
	}
	if (!r->applied.seen)
		raft_stage_missing(&r->applied,
				   "the answering member's read of the commit index was not seen");
}

static pid_t raft_leader_pid(const struct correlator *c, const struct bind_raft *r)
{
	return r->leader ? raft_pid_of(c, r->leader) : 0;
}

/* With one tracer per node (node_scope), a stage that only a member not traced here could see
 * is said to be elsewhere and not counted: the leader's (proposed, committed), the quorum's
 * (appended, quorum_fsync, when one of its members is not traced here). */
static void resolve_raft(struct correlator *c, struct bind_timeline *t)
{
	struct bind_raft *r = &t->raft;
	bool all_traced = true;
	int k;

	resolve_raft_full(c, t);
	if (!r->expected || r->local || !c->opt.node_scope || !r->seen)
		return;
	for (k = 0; k < r->n_members; k++)
		all_traced &= r->members[k].pid != 0;
	if (!raft_leader_pid(c, r)) {
		raft_not_here(r, &r->proposed, RAFT_NOT_HERE_PROPOSED, "the leader", r->leader,
			      c->opt.node);
		raft_not_here(r, &r->committed, RAFT_NOT_HERE_COMMITTED, "the leader", r->leader,
			      c->opt.node);
		/* Applied is the answering member's read of the leader's commit: here. */
	}
	if (!all_traced) {
		raft_not_here(r, &r->appended, RAFT_NOT_HERE_APPENDED, "a member of the quorum", 0,
			      c->opt.node);
		raft_not_here(r, &r->quorum_fsync, RAFT_NOT_HERE_QUORUM_FSYNC,
			      "the member that completed the quorum", 0, c->opt.node);
	}
}

/* One raft part not seen: counted when it counts, the first such part's reason kept. */
static void raft_part(const struct stage *st, bool counts, int *n, const char **first)
{
	if (!counts || st->seen)
		return;
	if (!*n)
		*first = st->missing[0] ? st->missing : "not observed";
	(*n)++;
}

int bind_timeline__raft_missing(const struct bind_timeline *t, const char **first)
{
	const struct bind_raft *r = &t->raft;
	const char *unused;
	int n = 0, k;

	if (!first)
		first = &unused;
	*first = NULL;
	if (!r->expected)
		return 0;
	if (r->local) {
		/* This member's part; and what the leader counts when it is the leader. */
		raft_part(&r->local_had, true, &n, first);
		raft_part(&r->local_acked, true, &n, first);
		raft_part(&r->local_fsync, true, &n, first);
		raft_part(&r->committed, !(r->not_here & RAFT_NOT_HERE_COMMITTED), &n, first);
		return n;
	}
	raft_part(&r->appended, !(r->not_here & RAFT_NOT_HERE_APPENDED), &n, first);
	raft_part(&r->committed, !(r->not_here & RAFT_NOT_HERE_COMMITTED), &n, first);
	raft_part(&r->applied, !(r->not_here & RAFT_NOT_HERE_APPLIED), &n, first);
	raft_part(&r->proposed,
		  !(r->seen && r->answering == r->leader) &&
		      !(r->not_here & RAFT_NOT_HERE_PROPOSED),
		  &n, first);
	for (k = 0; k < r->n_members; k++)
		raft_part(&r->members[k].appended, r->members[k].pid != 0, &n, first);
	return n;
}

/* A watch event sent with no receipt by the time its bind closed: its watcher is not traced, or,
 * on a connection whose reads were seen since before the event was sent, the watcher had not
 * read it by then (counted). */
static void explain_no_receipt(struct correlator *c, struct watcher *w,
			       const struct observation *sent)
{
	const struct receiving_conn *r =
	    receiving_find(c, conn_key(&sent->who.local, &sent->who.remote), false);

	if (r && r->first_ns <= sent->first_ns) {
		c->stats.receipts_late++;
		snprintf(w->received.missing, sizeof(w->received.missing),
			 "not read by the time the bind closed (the watcher's reads are traced; "
			 "--linger, %llu ms, waits longer)",
			 (unsigned long long)(c->opt.linger_ns / 1000000));
		return;
	}
	snprintf(w->received.missing, sizeof(w->received.missing), "the watcher is not traced");
}

static void resolve_watchers(struct correlator *c, struct bind_timeline *t)
{
	char key[KEY_MAX];
	const struct observation *ev[MAX_POD_EVENTS], *o, *r;
	const struct obs_list *pod;
	struct observation *x;
	uint64_t hash;
	size_t i;
	int k, n = 0, e;

	if (!t->revision)
		return;
	snprintf(key, sizeof(key), "%s/%s", t->namespace_, t->name);
	hash = key_hash(key);
	pod = obs_with_key(c, hash);
	/* The pod's watch events, the newest MAX_POD_EVENTS of them. */
	for_each_listed(c, pod, x, i)
	{
		if ((x->kind != OBS_WATCH_SENT && x->kind != OBS_WATCH_RECEIVED) ||
		    !obs_key_is(x, key, hash))
			continue;
		if (n == MAX_POD_EVENTS) {
			memmove(ev, ev + 1, sizeof(ev) - sizeof(ev[0]));
			n--;
		}
		ev[n++] = x;
	}
	for (e = 0; e < n; e++) {
		struct watcher *w = NULL;

		o = ev[e];
		if (o->kind != OBS_WATCH_SENT || o->revision != t->revision)
			continue;
		/* One watcher per stream: a Table and its object are the same event. */
		for (k = 0; k < t->n_watchers; k++)
			if (t->watchers[k].sent.who.conn == o->who.conn &&
			    t->watchers[k].sent.stream_id == o->stream_id)
				w = &t->watchers[k];
		if (w)
			continue;
		if (t->n_watchers == BIND_MAX_WATCHERS) {
			t->watchers_dropped++;
			continue;
		}
		w = &t->watchers[t->n_watchers++];
		set_stage(&w->sent, &o->who, o->first_ns, o->first_ns, o->last_ns, o->stream_id);
		util__copy(w->user_agent, sizeof(w->user_agent), o->user_agent);
		util__copy(w->path, sizeof(w->path), o->path);
		util__copy(w->encoding, sizeof(w->encoding), o->encoding);
		util__copy(w->event_type, sizeof(w->event_type), o->event_type);
		util__copy(w->node_after, sizeof(w->node_after), o->node);
		w->before_known = t->node_before_known;
		util__copy(w->node_before, sizeof(w->node_before), t->node_before);
		r = frame_received(o, ev, n);
		if (r)
			set_stage(&w->received, &r->who, r->last_ns, r->first_ns, r->last_ns,
				  r->stream_id);
		else
			explain_no_receipt(c, w, o);
		resolve_frames(c, t, w, o, ev, n);
	}
}

static void resolve_citation(struct correlator *c, struct bind_timeline *t)
{
	char key[KEY_MAX];
	struct observation *o, *best = NULL, *queued = NULL;
	const struct obs_list *pod;
	size_t i;
	uint64_t hash, before = t->stages[STAGE_BIND_REQUEST].seen
				    ? t->stages[STAGE_BIND_REQUEST].mono_ns
				    : UINT64_MAX;

	snprintf(key, sizeof(key), "%s/%s", t->namespace_, t->name);
	hash = key_hash(key);
	pod = obs_with_key(c, hash);
	/* A give-up's (unschedulable, scheduler error): its stack, the latest before its status
	 * PATCH. */
	if (bind_result__gave_up(t->result)) {
		for_each_listed(c, pod, o, i)
		{
			if (o->kind == OBS_CALL && o->citation && o->cit_giveup &&
			    obs_key_is(o, key, hash) && o->first_ns <= before)
				best = o;
		}
		if (best)
			citation__unpack(best->citation, &t->citation);
		return;
	}
	/* The POST's call, else (no probe on the POST) the queueing call. */
	for_each_listed(c, pod, o, i)
	{
		if (o->kind == OBS_CALL && o->citation && !o->cit_giveup &&
		    obs_key_is(o, key, hash) && o->first_ns <= before &&
		    (!best || best->cit_queued || !o->cit_queued))
			best = o;
	}
	if (!best)
		return;
	citation__unpack(best->citation, &t->citation);
	if (best->cit_queued || citation__has_bind_step(&t->citation))
		return;
	/* A POST from a dispatcher goroutine: joined with the stack that queued that Binding
	 * (the same object), the latest before the POST. */
	for_each_listed(c, pod, o, i)
	{
		if (o->kind == OBS_CALL && o->citation && o->cit_queued && !o->cit_giveup &&
		    obs_key_is(o, key, hash) && o->first_ns <= best->first_ns &&
		    (!o->cit_object || !best->cit_object || o->cit_object == best->cit_object))
			queued = o;
	}
	if (queued) {
		citation__unpack(queued->citation, &c->scratch);
		citation__join(&t->citation, &c->scratch);
	}
}

static bool lost_on(struct correlator *c, const struct stage *st, uint64_t from, uint64_t to,
		    bool *drop)
{
	size_t i;
	bool hit = false;

	for (i = 0; i < MAX_LOSSES && i < c->loss_next; i++) {
		const struct loss *l = &c->losses[i];

		if (l->ns < from || l->from_ns > to)
			continue;
		if (!l->conn)
			*drop = true;
		else if (st && st->seen && l->conn == st->who.conn && l->pid == st->who.pid)
			hit = true;
	}
	for (i = 0; i < MAX_DROP_SPANS && i < c->drop_next; i++)
		if (c->drop_spans[i].ns >= from && c->drop_spans[i].from_ns <= to)
			*drop = true;
	return hit;
}

/* A message read before it was written was not that message: with bytes lost, a decoder that
 * found its footing again can give a later frame the stream of one it never saw (test-faults e:
 * a bind_response 15 ms after the scheduler had read it). Only when losses were seen: otherwise
 * an inversion is a defect to show, not to hide. The writer's side goes, as lost; within the
 * apiserver, its read of the request when that came after its Txn (below). */
static void drop_uncaused(struct bind_timeline *t)
{
	static const enum stage_id pairs[][2] = {
		{ STAGE_BIND_REQUEST, STAGE_APISERVER_RECEIVED },
		{ STAGE_ETCD_TXN_SENT, STAGE_ETCD_TXN_RECEIVED },
		{ STAGE_BIND_RESPONSE, STAGE_BIND_RESPONSE_RECEIVED },
	};
	struct stage *rcv = &t->stages[STAGE_APISERVER_RECEIVED];
	struct stage *txn = &t->stages[STAGE_ETCD_TXN_SENT];
	size_t i;

	/* One process's own order: the apiserver sends the bind's Txn only once it has read the
	 * request, so a request read after its Txn went is a later frame given the request's stream
	 * (make test at stop 58: test-faults e). The Txn is found by its key; the read goes, first,
	 * so that it takes no scheduler's write with it below. */
	if (rcv->seen && txn->seen && rcv->mono_ns > txn->mono_ns)
		rcv->seen = false;
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct stage *w = &t->stages[pairs[i][0]], *r = &t->stages[pairs[i][1]];

		if (w->seen && r->seen && w->first_ns > r->last_ns)
			w->seen = false;
	}
}

static bool all_seen(const struct bind_timeline *t)
{
	int s;

	/* The bind's own stages: its create may be long before, or before the attach. */
	for (s = STAGE_BIND_REQUEST; s < STAGE_MAX; s++)
		if (!t->stages[s].seen)
			return false;
	return true;
}

/* A failed bind whose last Txn got no TxnResponse: where it went, what answered instead (a gRPC
 * error) or that none was seen, and an etcd member that exited from 10 s before it on (the dying
 * leader a follower forwarded it to, or the member itself; seen when the tracer noticed, which
 * may be after the answer). Times are from the bind_request. */
static bool explain_unanswered_txn(const struct correlator *c, const struct bind_timeline *t,
				   char *buf, size_t n)
{
	const struct txn_attempt *a = t->n_txns ? &t->txns[t->n_txns - 1] : NULL;
	const struct stage *from = t->stages[STAGE_BIND_REQUEST].seen
				       ? &t->stages[STAGE_BIND_REQUEST]
				       : &t->stages[STAGE_APISERVER_RECEIVED];
	uint64_t t0, gone_ns = a ? a->member_gone_ns : 0;
	pid_t gone_pid = a ? a->member_pid : 0;
	size_t k;
	int len;

	if (!a || a->responded || !from->seen)
		return false;
	t0 = from->mono_ns;
	for (unsigned i = 0; !gone_ns && i < c->n_gone && i < MAX_GONE; i++)
		if (raft_member_of(c, c->gone[i].pid) && c->gone[i].ns + 10000000000ull >= t0) {
			gone_ns = c->gone[i].ns;
			gone_pid = c->gone[i].pid;
		}
	len = snprintf(buf, n, "no etcd write (%d): Txn sent to etcd pid %d at +%.1f ms",
		       t->status_code, (int)a->member_pid, (double)(a->sent_ns - t0) / 1e6);
	k = len >= 0 && (size_t)len < n ? (size_t)len : n - 1;
	/* The exit before the answer: a long gRPC message is what gets cut. */
	if (gone_ns && gone_pid == a->member_pid)
		len = snprintf(buf + k, n - k, "; that member exited (seen at %+.1f ms)",
			       ((double)gone_ns - (double)t0) / 1e6);
	else if (gone_ns)
		len = snprintf(buf + k, n - k, "; member %" PRIx64 " exited (seen at %+.1f ms)",
			       raft_member_of(c, gone_pid), ((double)gone_ns - (double)t0) / 1e6);
	else
		len = 0;
	k += len >= 0 && (size_t)len < n - k ? (size_t)len : n - 1 - k;
	if (a->grpc_status)
		snprintf(buf + k, n - k, "; answered at +%.1f ms: gRPC %d %s",
			 (double)(a->error_ns - t0) / 1e6, a->grpc_status, a->grpc_message);
	else
		snprintf(buf + k, n - k, "; no answer seen");
	return true;
}

/* Answered with success: the pod's write is then awaited in etcd's watch of the apiserver. */
static bool awaits_etcd_watch(const struct open_bind *b)
{
	int code = b->t.status_code;

	return b->responded && !bind_result__gave_up(b->t.result) && code >= 200 && code <= 299;
}

/* How a bind closed, for the reasons of what it lacks. */
struct bind_close {
	/* when the correlator stopped waiting for the bind's stages; a stage lost to the ring
	 * buffer could have been lost any time until then (a process kept off the CPU reads its
	 * answer late) */
	uint64_t closed_ns;
	/* answered 2xx and closed without etcd's watch event of the pod, waited_ns after the
	 * answer */
	bool watch_waited;
	uint64_t waited_ns;
	/* over MAX_OBS observations came since it opened: its own may have been overwritten */
	bool ring_wrapped;
};

static void explain_missing(struct correlator *c, struct bind_timeline *t,
			    const struct bind_close *how)
{
	uint64_t closed_ns = how->closed_ns;
	static const enum process_role stage_role[STAGE_MAX] = {
		[STAGE_CREATE_REQUEST] = ROLE_APISERVER,
		[STAGE_CREATE_TXN_RESPONSE] = ROLE_ETCD,
		[STAGE_SCHEDULER_INFORMED] = ROLE_SCHEDULER,
		[STAGE_BIND_REQUEST] = ROLE_SCHEDULER,
		[STAGE_APISERVER_RECEIVED] = ROLE_APISERVER,
		[STAGE_ETCD_TXN_SENT] = ROLE_APISERVER,
		[STAGE_ETCD_TXN_RECEIVED] = ROLE_ETCD,
		[STAGE_ETCD_WAL_FSYNC] = ROLE_ETCD,
		[STAGE_ETCD_TXN_RESPONSE] = ROLE_ETCD,
		[STAGE_ETCD_WATCH_EVENT] = ROLE_APISERVER,
		[STAGE_BIND_RESPONSE] = ROLE_APISERVER,
		[STAGE_BIND_RESPONSE_RECEIVED] = ROLE_SCHEDULER,
	};
	uint64_t from = UINT64_MAX, to = 0;
	bool drop = false, gap = false;
	int s;

	/* The bind's own window: its create may be long before. */
	for (s = STAGE_BIND_REQUEST; s < STAGE_MAX; s++) {
		if (!t->stages[s].seen)
			continue;
		if (t->stages[s].first_ns < from)
			from = t->stages[s].first_ns;
		if (t->stages[s].last_ns > to)
			to = t->stages[s].last_ns;
	}
	if (from == UINT64_MAX)
		from = to = t->opened_ns;
	to += 1000000000;
	if (closed_ns > to)
		to = closed_ns;
	for (s = STAGE_BIND_REQUEST; s < STAGE_MAX; s++)
		gap |= lost_on(c, &t->stages[s], from - (from > 1000000000 ? 1000000000 : from), to,
			       &drop);
	t->gap |= gap;
	t->drops |= drop;
	if (drop || t->gap)
		drop_uncaused(t);
	/* A request missing while the ring buffer dropped events was lost as far as anyone can
	 * tell: an answer soon after attaching (on_binding_response) does not show that the bind
	 * began before bindtrace did. Stages seen at the attach itself do. */
	if (drop)
		t->started_midway = false;
	/* An answer within a millisecond of attaching without its request, or any stage from
	 * before attach_ns (when every target was attached: a bind under way then met probes still
	 * being placed, whichever of its stages were seen; under load that takes seconds). */
	if ((from < c->opt.attach_ns + 1000000 && !t->stages[STAGE_BIND_REQUEST].seen) ||
	    (from < c->opt.attach_ns && !all_seen(t)))
		t->started_midway = true;

	t->missing = 0;
	for (s = 0; s < STAGE_MAX; s++) {
		struct stage *st = &t->stages[s];
		bool etcd_stage = s >= STAGE_ETCD_TXN_SENT && s <= STAGE_ETCD_WATCH_EVENT;
		char off_node[BIND_REASON_MAX];
		const char *why;

		if (st->seen)
			continue;
		/* A Pod read without method and path: its connection's header state was unknown,
		 * from before the attach, unless bytes were lost meanwhile (then that is why). */
		if (s == STAGE_CREATE_REQUEST && !strncmp(st->missing, HEADERLESS, 13) &&
		    (drop || t->gap))
			snprintf(st->missing, sizeof(st->missing),
				 "read without its method and path: its HTTP/2 header state was "
				 "lost with bytes lost or dropped (%s)",
				 drop ? "ring buffer drops" : "capture gap");
		if (t->raft_only) {
			snprintf(off_node, sizeof(off_node),
				 "served by another node's apiserver: no apiserver traced on "
				 "this node%s%.64s, only its etcd member's raft entry of the write",
				 c->opt.node && c->opt.node[0] ? " " : "",
				 c->opt.node ? c->opt.node : "");
			why = off_node;
		} else if (t->served_elsewhere && !stage__before_bind(s)) {
			snprintf(off_node, sizeof(off_node),
				 "served by another node's apiserver: seen by the tracer on that "
				 "node%s%.64s",
				 c->opt.node && c->opt.node[0] ? ", not on " : "",
				 c->opt.node ? c->opt.node : "");
			why = off_node;
		} else if (stage__before_bind(s) && t->created_before_attach) {
			why = c->stats.pending_evicted || c->stats.pending_expired
				  ? "the pod was created before bindtrace attached, or its pending "
				    "state was dropped (see the pending drops counted)"
				  : "the pod was created before bindtrace attached";
		} else if (t->result == BIND_RESULT_UNSCHEDULABLE && !stage__before_bind(s)) {
			why = "no Binding: the pod fits no node";
		} else if (t->result == BIND_RESULT_SCHEDULER_ERROR && !stage__before_bind(s)) {
			if (t->failed_bind_seq)
				snprintf(off_node, sizeof(off_node),
					 "no Binding in this attempt: the scheduler gave up after "
					 "its bind failed (%d, timeline %" PRIu64
					 "); it will retry "
					 "the pod",
					 t->failed_bind_code, t->failed_bind_seq);
			else
				snprintf(off_node, sizeof(off_node),
					 "no Binding in this attempt: the scheduler gave up after "
					 "an error (%.40s); it will retry the pod",
					 t->status_message[0] ? t->status_message
							      : "SchedulerError");
			why = off_node;
		} else if (etcd_stage && t->status_code && t->status_code != 201 &&
			   explain_unanswered_txn(c, t, off_node, sizeof(off_node))) {
			why = off_node;
		} else if (etcd_stage && t->status_code && t->status_code != 201) {
			why = t->status_code == 409   ? "no etcd write: 409 Conflict"
			      : t->status_code == 404 ? "no etcd write: 404 Not Found"
						      : "no etcd write: the bind failed";
		} else if ((stage_role[s] == ROLE_SCHEDULER && !c->opt.have_scheduler) ||
			   (stage_role[s] == ROLE_APISERVER && !c->opt.have_apiserver) ||
			   (stage_role[s] == ROLE_ETCD && !c->opt.have_etcd)) {
			why = stage_role[s] == ROLE_SCHEDULER	? "kube-scheduler is not traced"
			      : stage_role[s] == ROLE_APISERVER ? "kube-apiserver is not traced"
								: "etcd is not traced";
			if (c->opt.node && c->opt.node[0]) {
				snprintf(
				    off_node, sizeof(off_node),
				    "not on this node (%.64s): no %s traced here, seen only by "
				    "a tracer on its node",
				    c->opt.node, process_role__name(stage_role[s]));
				why = off_node;
			}
		} else if (st->missing[0]) {
			why = st->missing; /* explained where it was looked for */
		} else if (drop) {
			why = "ring buffer drops while this bind was in flight";
		} else if (t->gap) {
			why = "bytes lost on a connection of this bind (capture gap)";
		} else if (t->started_midway) {
			why = "the bind began before bindtrace attached";
		} else if (s == STAGE_ETCD_WATCH_EVENT && how->watch_waited) {
			snprintf(off_node, sizeof(off_node),
				 "not seen in the %.1f s the bind stayed open after its answer",
				 (double)how->waited_ns / 1e9);
			why = off_node;
		} else if (how->ring_wrapped && !stage__before_bind(s)) {
			snprintf(
			    off_node, sizeof(off_node),
			    "not found: over %d observations came while the bind was open (%.1f "
			    "s), and its own may have been pushed out of the correlator's ring",
			    MAX_OBS, (double)(closed_ns - t->opened_ns) / 1e9);
			why = off_node;
		} else {
			why = "not observed";
		}
		util__copy(st->missing, sizeof(st->missing), why);
		if (stage__counts_missing(t, (enum stage_id)s))
			t->missing++;
	}
}

bool stage__counts_missing(const struct bind_timeline *t, enum stage_id s)
{
	bool etcd_stage = s >= STAGE_ETCD_TXN_SENT && s <= STAGE_ETCD_WATCH_EVENT;

	if (t->served_elsewhere) /* raft_only: not even the watch event is on this node */
		return s == STAGE_ETCD_WATCH_EVENT && !t->raft_only;

	if (stage__before_bind(s))
		return !t->created_before_attach;
	if (bind_result__gave_up(t->result) && s != STAGE_BIND_REQUEST)
		return false;
	return !(etcd_stage && t->status_code && t->status_code != 201);
}

static void close_bind(struct correlator *c, struct open_bind *b)
{
	struct bind_timeline *t = &c->done;
	struct bind_close how;
	uint64_t start = UINT64_MAX, end = 0;
	int s;

	memcpy(t, &b->t, OPEN_PART);
	memset((char *)t + OPEN_PART, 0, sizeof(*t) - OPEN_PART);

	if (!bind_result__gave_up(t->result)) {
		for (s = STAGE_BIND_REQUEST; s < STAGE_MAX; s++) {
			if (!t->stages[s].seen)
				continue;
			if (t->stages[s].first_ns < start)
				start = t->stages[s].first_ns;
			if (t->stages[s].last_ns > end)
				end = t->stages[s].last_ns;
		}
		if (start != UINT64_MAX)
			resolve_etcd(c, t, start, end);
		switch (t->status_code) {
		case 0:
			/* etcd's watch event showed the write: bound, whoever answered. */
			t->result = t->served_elsewhere ? BIND_RESULT_BOUND : BIND_RESULT_UNKNOWN;
			break;
		case 200:
		case 201:
			t->result = BIND_RESULT_BOUND;
			break;
		case 404:
			t->result = BIND_RESULT_NOT_FOUND;
			break;
		case 409:
			t->result = BIND_RESULT_CONFLICT;
			break;
		default:
			t->result = BIND_RESULT_ERROR;
		}
	}
	resolve_citation(c, t);
	resolve_pending(c, t);
	/* After the pending state: whether the pod was created before attach tells why a
	 * watcher's frames begin without its ADDED. */
	if (!bind_result__gave_up(t->result))
		resolve_watchers(c, t);
	resolve_raft(c, t);
	how.closed_ns = b->close_after_ns;
	how.watch_waited = awaits_etcd_watch(b) && !b->etcd_watch_ns;
	how.waited_ns = how.closed_ns > b->responded_ns ? how.closed_ns - b->responded_ns : 0;
	how.ring_wrapped = c->obs_next - b->obs_at_open > MAX_OBS;
	if (how.ring_wrapped)
		c->stats.ring_wrapped++;
	explain_missing(c, t, &how);
	if (t->revision && !bind_result__gave_up(t->result))
		closed_note(c, t, how.closed_ns);
	t->missing += bind_timeline__raft_missing(t, NULL);
	if (t->result == BIND_RESULT_UNSCHEDULABLE)
		c->stats.unschedulable++;
	else if (t->result == BIND_RESULT_SCHEDULER_ERROR)
		c->stats.scheduler_errors++;
	else if (!t->missing)
		c->stats.complete++;
	c->cb(t, c->ctx);
	b->used = false;
	c->n_open--;
}

/* A bound pod's write reaches the apiserver's watch of etcd, and from there its watchers, after
 * the bind was answered; under load seconds after. Its bind stays open until that event was read
 * (then the linger, for the watchers), or ETCD_WATCH_WAIT_NS after the answer. */
#define ETCD_WATCH_WAIT_NS 10000000000ull

static bool waiting_for_etcd_watch(struct correlator *c, struct open_bind *b, uint64_t now)
{
	if (!awaits_etcd_watch(b))
		return false;
	if (!b->etcd_watch_ns) {
		if (now >= b->responded_ns + ETCD_WATCH_WAIT_NS)
			return false;
		b->close_after_ns = now + 50000000ull;
		return true;
	}
	if (now >= b->etcd_watch_ns + c->opt.linger_ns)
		return false;
	b->close_after_ns = b->etcd_watch_ns + c->opt.linger_ns;
	return true;
}

void correlator__tick(struct correlator *c, uint64_t now_ns, bool flush)
{
	size_t i;

	pending_expire(c, now_ns);
	for (i = 0; i < c->hi_water && c->n_open; i++) {
		struct open_bind *b = &c->binds[i];

		if (b->used && (flush || now_ns >= b->close_after_ns) &&
		    (flush || !waiting_for_etcd_watch(c, b, now_ns)))
			close_bind(c, b);
	}
}
