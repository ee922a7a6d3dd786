/* The bind correlator: joins what the decoders saw in kube-scheduler, kube-apiserver and etcd,
 * plus etcd's WAL fsyncs and the scheduler's bind call, into one timeline per pod bind. It knows
 * nothing of bytes or BPF: its inputs are decoded messages annotated with who saw them.
 *
 * Stage timestamps are kernel-observed CLOCK_MONOTONIC ns. A sender's stage is the moment its
 * first byte was handed to crypto/tls (or write(2)); a receiver's stage is the moment the last
 * byte of the message came out of crypto/tls (or read(2)): the earliest the process could act. */
#ifndef BINDTRACE_CORRELATE_H
#define BINDTRACE_CORRELATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "decode.h"
#include "endpoint.h"

#define BIND_NAME_MAX 254
#define BIND_NS_MAX 64
#define BIND_MAX_WATCHERS 16
#define BIND_MAX_FRAMES 48
#define BIND_MAX_TXNS 8
#define BIND_REASON_MAX 160
#define BIND_MAX_WATCH_FRAMES 8
#define BIND_MESSAGE_MAX 1025 /* the scheduler truncates its message at 1024 (NoteLengthLimit) */

enum process_role {
	ROLE_OTHER = 0,
	ROLE_SCHEDULER,
	ROLE_APISERVER,
	ROLE_ETCD,
	ROLE_WATCHER, /* a client of the apiserver traced because it watches pods */
};

/* The pod's path before the bind (create_request .. scheduler_informed) comes first; those stages
 * are read from the correlator's bounded state of pending pods when the bind closes. */
enum stage_id {
	STAGE_CREATE_REQUEST,	   /* the apiserver has read a client's POST of the pod */
	STAGE_CREATE_TXN_RESPONSE, /* etcd's answer to the create (rev = first resourceVersion) */
	STAGE_SCHEDULER_INFORMED,  /* the scheduler's informer has read the ADDED event */
	STAGE_BIND_REQUEST,
	STAGE_APISERVER_RECEIVED,
	STAGE_ETCD_TXN_SENT,
	STAGE_ETCD_TXN_RECEIVED,
	STAGE_ETCD_WAL_FSYNC,
	STAGE_ETCD_TXN_RESPONSE,
	STAGE_ETCD_WATCH_EVENT,
	STAGE_BIND_RESPONSE,
	STAGE_BIND_RESPONSE_RECEIVED,
	STAGE_MAX,
};

enum bind_result {
	BIND_RESULT_UNKNOWN = 0,
	BIND_RESULT_BOUND,	   /* 201 */
	BIND_RESULT_CONFLICT,	   /* 409: already bound, or the update conflicted */
	BIND_RESULT_NOT_FOUND,	   /* 404: the pod is gone */
	BIND_RESULT_ERROR,	   /* any other status */
	BIND_RESULT_UNSCHEDULABLE, /* no Binding: PodScheduled=False (Unschedulable) */
	/* No Binding in this attempt: PodScheduled=False (SchedulerError), the scheduler's
	 * give-up after an error, most often a failed bind; it retries the pod. */
	BIND_RESULT_SCHEDULER_ERROR,
};

/* Whether an entry is the scheduler's status PATCH (PodScheduled=False) rather than a bind:
 * no Binding, no legs, only its bind_request (the PATCH) and the pod's create stages. */
static inline bool bind_result__gave_up(enum bind_result r)
{
	return r == BIND_RESULT_UNSCHEDULABLE || r == BIND_RESULT_SCHEDULER_ERROR;
}

/* Who did something, and on which connection. */
struct actor {
	pid_t pid;
	char comm[17];
	enum process_role role;
	uint64_t conn;		/* the socket's inode */
	struct endpoint local;	/* this process's end of the connection */
	struct endpoint remote; /* the other end */
	pid_t peer_pid; /* the process at the other end, when it is on this host (0: unknown) */
	char peer_comm[17];
};

/* How a stage's time was found. Most are the moment a captured message's last (or first) byte
 * moved; a few can only be bounded, and say so. */
enum stage_timing {
	STAGE_TIMED_MESSAGE = 0, /* its message was captured (see the file comment) */
	/* create_request whose bytes were not captured (the apiserver's Reads not probed, its
	 * client not traced): the apiserver's last read(2) of the client's connection that
	 * returned before it wrote the pod's create Txn to etcd. The request had been read by then:
	 * an upper bound on its arrival, not the arrival. */
	STAGE_TIMED_READ_BY_LAST_READ,
	/* ... no such read(2) known: the create Txn's write itself (a looser upper bound). */
	STAGE_TIMED_READ_BY_TXN,
};

/* "message", "upper_bound_last_read", "upper_bound_create_txn" */
const char *stage_timing__name(enum stage_timing t);
/* One sentence saying what a bounded stage's time stands for; "" for STAGE_TIMED_MESSAGE. */
const char *stage_timing__meaning(enum stage_timing t);

struct stage {
	bool seen;
	uint8_t timing;	    /* enum stage_timing */
	uint64_t mono_ns;   /* the stage's time (see the file comment) */
	uint64_t first_ns;  /* first byte of the message (or fsync start) */
	uint64_t last_ns;   /* last byte of the message (or fsync end) */
	uint32_t stream_id; /* HTTP/2 stream (HTTP/1.1: request number) */
	struct actor who;
	char missing[BIND_REASON_MAX]; /* why it is not there, when !seen */
};

/* One watch event the apiserver sent a watcher about the pod. */
struct watch_frame {
	char type[12];		  /* "ADDED", "MODIFIED", "DELETED" */
	int64_t revision;	  /* the object's resourceVersion */
	uint64_t sent_ns;	  /* the apiserver began writing it */
	uint64_t received_ns;	  /* the watcher had read it; 0: not seen (not traced, or lost) */
	char node[BIND_NAME_MAX]; /* its spec.nodeName */
};

/* Where a watcher's frames begin. */
enum frames_start {
	FRAMES_FROM_ADDED = 0, /* the pod's ADDED on this stream was seen */
	FRAMES_NO_ADDED, /* none: the watch was opened after the create (the pod came in a LIST) */
	FRAMES_BEFORE_ATTACH, /* none: the pod was created before bindtrace attached */
	FRAMES_AGED_OUT,      /* none held: the observation ring had wrapped past them */
};

struct watcher {
	struct stage sent;     /* the apiserver wrote the event on this watcher's stream */
	struct stage received; /* the watcher read it (only for traced watchers) */
	char user_agent[128];
	char path[160];
	char encoding[16]; /* "protobuf", "json", "table" */
	char event_type[16];
	char node_before[BIND_NAME_MAX];
	char node_after[BIND_NAME_MAX];
	bool before_known;
	/* Every frame this watcher was sent about the pod, from its ADDED to the MODIFIED of the
	 * bind (the last): the first BIND_MAX_WATCH_FRAMES - 1 and the last are kept, the others
	 * counted in frames_not_kept. frames_changed counts the frames between the first and the
	 * last whose nodeName differed from the first's (all of them, kept or not); the first
	 * such is changed_at. frames_lost: bytes lost on its connection, or ring buffer drops,
	 * while they came (one may be missing). watcher__frames_check() says it in one line. */
	struct watch_frame frames[BIND_MAX_WATCH_FRAMES];
	int n_frames;
	int frames_not_kept;
	int frames_changed;
	struct watch_frame changed_at;
	enum frames_start frames_start;
	bool frames_lost;
};

struct txn_attempt {
	uint64_t sent_ns, response_ns;
	int64_t compare_revision;
	int64_t revision;
	bool responded;
	bool succeeded;
	/* The etcd process that read it (0: not seen), its member id (0: not known) and when its
	 * process exited (0: running, or not known). */
	pid_t member_pid;
	uint64_t member_id;
	uint64_t member_gone_ns;
	/* An answer with a gRPC error status instead of a TxnResponse (e.g. 14, "etcdserver:
	 * request timed out" after a leader was lost): its status (0: none seen), time, message. */
	int grpc_status;
	uint64_t error_ns;
	char grpc_message[48];
};

struct frame_line {
	uint64_t pc;
	char func[160];
	char file[160];
	int line;
};

struct citation {
	bool known;
	char kubernetes_version[64]; /* the scheduler's release (gorelease.h's rules); "" unknown */
	char commit[72];	     /* its commit (vcs.revision, else stamped); "" unknown */
	char go_version[32];
	char probe[96]; /* the probed function */
	pid_t tid;
	uint64_t goroutine; /* the g's address (R14) */
	uint64_t mono_ns;
	int n_frames;
	struct frame_line frames[BIND_MAX_FRAMES];
	int cited;  /* index of the frame cited as the line that issued the bind (citation.h) */
	int caller; /* its caller in the binding cycle, next to it in the output; 0 none */
	const char *rule; /* which rule chose the cited frame (citation.h), static */
	/* The call's identity: the address of the object the probe read (a *v1.Binding, or the
	 * *v1.Pod for the default binder). */
	uint64_t object;
	bool queued; /* the stack of the queueing call (APICache.BindPod), not of the POST */
	/* The stack at the status PATCH of a pod the scheduler gave up on (its failure handler's
	 * updatePod): an unschedulable pod's citation, never a bind's. */
	bool giveup;
	/* A give-up whose status PATCH updatePod handed to the API cache (SchedulerAsyncAPICalls,
	 * 1.34+): a dispatcher goroutine sends it, the stack is the one that queued it. */
	bool patch_dispatched;
	/* When the POST left a dispatcher goroutine: frames[queued_at...] are the stack that
	 * queued it, taken by thread queue_tid at queue_ns (0: one stack). */
	int queued_at;
	pid_t queue_tid;
	uint64_t queue_goroutine;
	uint64_t queue_ns;
	char queue_probe[96];
};

/* The bind's raft entry, on an etcd of several members whose peer traffic is traced (all of them
 * when they run on this host). Filled when the bind closes; `expected` is false where etcd has no
 * peers in sight (a single member): then none of this is shown and nothing of it is missing.
 *
 * The entry is found by its content: the answering member's InternalRaftRequest carries the
 * apiserver's Txn (the pod's key and the compare's mod_revision) and header.ID, which then
 * follows it through MsgProp, MsgApp and its index. Commit and apply send nothing of their own;
 * what stands for them (correlate.c, resolve_raft):
 * - raft_committed: the acknowledgement that completed the quorum, as the leader got it (its
 *   read of the follower's MsgAppResp, or the end of its own WAL fsync): the leader commits on
 *   it. Its last point is the leader's first message carrying commit >= the entry's index (a
 *   MsgApp or heartbeat), the first the others hear of it (= its time when none was seen).
 * - raft_applied: the answering member learning that commit: a follower's read of such a
 *   message; the leader's, raft_committed's time. It applies from there, asynchronously; the
 *   apply itself sends nothing, and its first sign is the answer (etcd_txn_response). */
#define BIND_RAFT_MEMBERS 7
#define RAFT_NOT_HERE_PROPOSED 1u
#define RAFT_NOT_HERE_APPENDED 2u
#define RAFT_NOT_HERE_QUORUM_FSYNC 4u
#define RAFT_NOT_HERE_COMMITTED 8u
#define RAFT_NOT_HERE_APPLIED 16u

struct raft_member_part {
	uint64_t id; /* raft member id (hex in outputs) */
	pid_t pid;   /* 0: its process is not traced */
	bool leader;
	bool answered;	/* the member the apiserver's Txn went to */
	bool in_quorum; /* its acknowledgement (the leader: its fsync) made the quorum */
	bool gone;	/* its process had exited before the bind began: pid 0, no part in it */
	/* raft_appended on this member: its WAL fdatasync holding the entry (first/last: start
	 * and end; time: end). A follower's: the first to start after it read the MsgApp; the
	 * leader's: the first to start after it had the proposal (read the MsgProp, or the Txn).
	 * (A Save that began between that read and raft stepping it would be the one before:
	 * not told apart; microseconds apart when the process gets the CPU.) */
	struct stage appended;
	uint64_t app_received_ns; /* a follower read the MsgApp carrying the entry */
	uint64_t ack_sent_ns;	  /* it wrote MsgAppResp(index >= the entry's) */
	uint64_t ack_received_ns; /* the leader read it */
	uint64_t ack_ns;	  /* the acknowledgement as the leader counts it (0: none seen) */
};

struct bind_raft {
	bool expected; /* the answering member has peers in sight: the stages below count */
	/* Seen from this node's member alone (correlator_options.node_scope): the Txn went to
	 * another node's member (a bind served elsewhere, or one seen only as its raft entry).
	 * The stages of the members not traced here are explained, not counted missing; this
	 * member's own part is in local_* (legs member_append and member_wal_fsync):
	 * - local_had: a follower read the MsgApp carrying the entry; the leader read the MsgProp
	 *   (or, without it, wrote its first MsgApp of the entry);
	 * - local_acked: a follower wrote its MsgAppResp (index >= the entry's); the leader's own
	 *   acknowledgement is the end of its WAL fsync;
	 * - local_fsync: its WAL fsync holding the entry (its member part's raft_appended). */
	bool local;
	uint64_t local_id; /* this node's member */
	struct stage local_had, local_acked, local_fsync;
	unsigned not_here;   /* RAFT_NOT_HERE_*: stages only another node's member could see */
	bool seen;	     /* the entry was found in the peer traffic */
	uint64_t request_id; /* InternalRaftRequest header.ID */
	uint64_t index, term;
	uint64_t leader;    /* member id, 0 unknown */
	uint64_t answering; /* member id, 0 unknown */
	int voters;	    /* members seen in the peer traffic */
	int quorum;	    /* acknowledgements a commit needs */
	/* The entry went through a leader change: proposed to one member and appended by
	 * another, or appended at two terms (then the last is the one shown). */
	bool leader_changed;
	char change[BIND_REASON_MAX];
	struct stage proposed;	   /* follower wrote MsgProp (first) -> leader read it (time) */
	struct stage appended;	   /* leader's first MsgApp write (first) -> quorum's ack (time) */
	struct stage quorum_fsync; /* the fsync of the member whose ack completed the quorum */
	struct stage committed;
	struct stage applied;
	struct raft_member_part members[BIND_RAFT_MEMBERS];
	int n_members;
};

struct bind_timeline {
	uint64_t seq;
	enum bind_result result;
	char namespace_[BIND_NS_MAX];
	char name[BIND_NAME_MAX];
	char uid[48];
	char node[BIND_NAME_MAX]; /* the Binding's target */
	int status_code;	  /* of the bind response; 0 unknown */
	char status_reason[128];
	/* An unschedulable pod's: the message of the scheduler's PodScheduled=False condition
	 * ("0/2 nodes are available: ..."), as its status PATCH or the patched Pod carried it. */
	char status_message[BIND_MESSAGE_MAX];
	/* A scheduler_error entry's: the failed bind of this pod it gave up after (that
	 * timeline's seq and status code), 0 when none was seen. */
	uint64_t failed_bind_seq;
	int failed_bind_code;
	int64_t revision;	 /* etcd revision of the write = the pod's resourceVersion */
	int64_t create_revision; /* etcd revision of the pod's create (0 unknown) */
	/* No trace of the pod's creation: it was created before bindtrace attached (or its
	 * pending state was dropped, counted in correlator_stats): its create stages say so and
	 * do not count as missing. */
	bool created_before_attach;
	char node_before[BIND_NAME_MAX]; /* spec.nodeName before the write, from etcd's prev_kv */
	bool node_before_known;
	struct stage stages[STAGE_MAX];
	struct txn_attempt txns[BIND_MAX_TXNS];
	int n_txns;
	/* What may have hidden something: gaps on a connection of this bind, ring buffer drops
	 * while it was open, the tracer attaching after it began. */
	bool gap;
	bool drops;
	bool started_midway;
	/* Seen only as etcd's watch event of the write (nodeName "" -> node) at this node's
	 * apiserver and its fan-out to watchers: another node's apiserver served the Binding
	 * (correlator_options.node_scope). Its other stages are explained, not counted missing. */
	bool served_elsewhere;
	/* Seen only as its raft entry, on this node's etcd member (a node with no apiserver
	 * traced, node_scope): opened by the first entry that sets the pod's nodeName after one
	 * that had it empty; the UID and node are the entry's, the revision is not known (it is
	 * given at apply, and not sent). Also served_elsewhere. */
	bool raft_only;
	uint64_t raft_request_id; /* raft_only: the entry's InternalRaftRequest header.ID */
	int missing;		  /* required stages not seen */
	uint64_t opened_ns;
	/* Last, and filled only when the bind is done (the correlator keeps open binds without
	 * this part: most of the size). */
	struct watcher watchers[BIND_MAX_WATCHERS];
	int n_watchers;
	int watchers_dropped;
	struct citation citation;
	struct bind_raft raft;
};

const char *stage__name(enum stage_id stage);
/* A stage of the pod's path before its bind (create_request, create_txn_response,
 * scheduler_informed). */
static inline bool stage__before_bind(int s)
{
	return s < STAGE_BIND_REQUEST;
}
/* Whether stage s of t, when not seen, counts in t->missing: those that cannot exist for the
 * bind's outcome (an unschedulable pod's, a refused bind's etcd write) are explained, not
 * counted. */
bool stage__counts_missing(const struct bind_timeline *t, enum stage_id s);
/* The parts of t's raft path that count in t->missing beyond its stages (raft expected: each
 * part not seen that the node could see, raft_proposed only when a follower answered, a member's
 * append only when it is traced), and in *first (unless first is NULL) the first such part's
 * reason (NULL if none). */
int bind_timeline__raft_missing(const struct bind_timeline *t, const char **first);
const char *bind_result__name(enum bind_result result);
/* A role's name, which is also the executable its process runs ("kube-scheduler",
 * "kube-apiserver", "etcd"; "watcher" for a traced client of the apiserver, "other"). */
const char *process_role__name(enum process_role role);

struct correlator;
/* Binds in flight at most: one more closes the oldest as it is (counted: evicted). Each also
 * closes on its own after max_open_ns, or once answered after its watch event and the linger
 * (at most 10 s after the answer without that event). */
#define CORRELATOR_MAX_OPEN 8192
typedef void (*bind_done_cb)(const struct bind_timeline *bind, void *ctx);

struct correlator_options {
	uint64_t linger_ns;   /* keep a bind open this long after its last stage (watchers) */
	uint64_t max_open_ns; /* give up on a bind opened this long ago */
	uint64_t attach_ns;   /* when the tracer attached: earlier binds are "started midway" */
	bool have_scheduler, have_apiserver, have_etcd;
	/* The node traced (--node), NULL or "" when not given: a role not traced is then "not on
	 * node NAME" in a stage's reason. Lives as long as the correlator. */
	const char *node;
	/* One tracer per node (--node): a bind write that reaches this node's apiserver through
	 * its etcd watch with no Binding of the pod open here was served by another node's
	 * apiserver; it is emitted as served_elsewhere, with its fan-out to this node's watchers. */
	bool node_scope;
	/* Pods created but not yet bound: at most max_pending (default 8192) for at most
	 * pending_max_age_ns (default 10 min); beyond that the oldest are dropped, and counted. */
	size_t max_pending;
	uint64_t pending_max_age_ns;
	/* The apiserver's TLS Reads are not probed (peerfeed.h): a create whose request no traced
	 * writer gave is timed by the apiserver's read(2)s of its client's connection
	 * (correlator__conn_read) once its 201 names the pod (STAGE_TIMED_READ_BY_*). */
	bool create_from_reads;
};

struct correlator *correlator__new(const struct correlator_options *opt, bind_done_cb cb,
				   void *ctx);
void correlator__free(struct correlator *c);

/* A decoded message as seen by `who` (its connection and process). */
void correlator__message(struct correlator *c, const struct actor *who,
			 const struct decoded_msg *msg);
/* An fsync/fdatasync of etcd; is_wal: the file is in member/wal/. */
void correlator__fsync(struct correlator *c, const struct actor *who, uint64_t start_ns,
		       uint64_t end_ns, bool is_wal, int64_t ret);
/* The scheduler entered its bind call for ns/name: the citation of that bind. */
void correlator__call(struct correlator *c, const char *ns, const char *name,
		      const struct citation *citation);
/* A traced process exited (an etcd member killed or crashed): a bind that begins after that
 * does not expect that member's part of its raft entry. */
void correlator__process_gone(struct correlator *c, pid_t pid, uint64_t now_ns);
/* A read(2) of the apiserver's (pid) on conn returned at ts_ns (create_from_reads). */
void correlator__conn_read(struct correlator *c, pid_t pid, uint64_t conn, uint64_t ts_ns);
/* Bytes lost on a connection (a gap), or ring buffer drops (conn 0: anywhere). */
void correlator__loss(struct correlator *c, pid_t pid, uint64_t conn, uint64_t now_ns);
/* Ring buffer drops found at now_ns that were not there at since_ns (when the counter was read
 * before): each happened somewhere in between, so a bind in flight at any time of that span may
 * have lost a stage to them. */
void correlator__drops(struct correlator *c, uint64_t since_ns, uint64_t now_ns);
/* Emit binds whose time is up; all of them when flush. */
void correlator__tick(struct correlator *c, uint64_t now_ns, bool flush);

struct correlator_stats {
	uint64_t binds, complete, unschedulable, open, evicted;
	uint64_t scheduler_errors; /* give-ups after an error (SchedulerError): retried */
	uint64_t pending;	   /* pods created, not yet bound, held now */
	uint64_t pending_evicted;  /* dropped: the pending state was full */
	uint64_t pending_expired;  /* dropped: pending longer than pending_max_age_ns */
	/* Raft: observations of the peer traffic kept (a bounded ring), and binds whose raft
	 * entry's observations had been pushed out of it before they closed. */
	uint64_t raft_observations, raft_pushed_out;
	/* Raft: pods whose state (created unbound, then bound) was pushed out of the bounded
	 * table of pod keys before their bind's entry came: such a bind is not recognised in
	 * the raft traffic alone (raft_only). */
	uint64_t raft_keys_pushed_out;
	/* Watch events a traced watcher had not read by the time their bind closed (read late:
	 * the fan-out trailing etcd's event by more than the linger). */
	uint64_t receipts_late;
	/* Binds that closed after over 16384 observations had come since they opened (the
	 * correlator's ring): their missing stages may have been pushed out of it. */
	uint64_t ring_wrapped;
	/* Watch events of a bind's revision the apiserver sent after its bind had closed: to
	 * watchers its timeline does not list (the fan-out trailing etcd's event by more than the
	 * linger). */
	uint64_t watch_sent_after_close;
	/* Create Txns of pods still unanswered when a later one took their slot (the ring of
	 * MAX_CREATE_TXNS): an answer that came after is not matched to its pod. */
	uint64_t create_txns_pushed_out;
};
void correlator__stats(const struct correlator *c, struct correlator_stats *stats);

#endif
