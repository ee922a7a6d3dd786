/* The processes the bind tracer traces: kube-scheduler, kube-apiserver and etcd (found by
 * executable name, or given by pid), and the apiserver's local clients attached as watchers.
 * For each: its Go binary read and validated (goelf), its TLS probes and, for the scheduler, its
 * bind-call probe attached, its pid added to the session's targets; a traced process that exits
 * is replaced by the one that restarts it (same command line preferred; for a pid given on the
 * command line nothing else will do). An exited process's probes go to the link reaper.
 *
 * Attaching reads a binary and places uprobes (tens of milliseconds to seconds): from the start
 * or the poll loop, never from the ring buffer's callback. Listeners are told of each attach and
 * detach, and when a watcher's pid turns out to be a restarted target. */
#ifndef BINDTRACE_TARGETS_H
#define BINDTRACE_TARGETS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "correlate.h"
#include "discover.h"
#include "endpoint.h"
#include "link_reaper.h"
#include "tlsprobe.h"

#define TARGETS_MAX 32
#define TARGETS_PER_ROLE 8

struct session;
struct go_binary;

/* A go_call uprobe's place, found and validated when the binary is read, attached after. */
struct call_site {
	const char *func; /* NULL: the binary has no such function, or it did not validate */
	uint64_t offset;  /* file offset */
	uint64_t cookie;
};

/* A scheduler's go_call probes: at the first of bind_sites that attaches, at queue_site and at
 * giveup_site. With uprobe_multi (tls_programs__multi) one link holds them all: attaching and
 * removing a single uprobe each waited for the kernel (about 5 ms a probe on an idle bed, 80 ms
 * on a restarted scheduler still starting up). */
struct call_probes {
	struct bpf_link *links[3]; /* single uprobes, without uprobe_multi */
	int multi_fd;		   /* the uprobe_multi link, when has_multi */
	bool has_multi;
	bool queue, giveup; /* which of those two are probed (the bind call: call_probe) */
};

/* Connections of one target searched for in its memory, over its life. An etcd holds one per
 * storage client of each apiserver, most of them silent: 61-65 on the test bed, where a cap of 64
 * once left the 65th to keep etcd's Write probe on for good. */
#define TARGETS_HEAP_SEARCHED 1024

struct target {
	enum process_role role;
	struct process_info proc;
	struct go_binary *gb; /* kept open to symbolise stacks */
	uint64_t load_bias;
	char go_version[32];
	char k8s_version[64];	 /* the release (gorelease.h), "" when not Kubernetes or unknown */
	char module_version[64]; /* etcd's release, likewise */
	char commit[72];	 /* vcs.revision, else the stamped commit; "" unknown */
	struct tls_attachment tls;
	/* Read from the binary before anything is attached (targets__attach_all reads every
	 * binary first, then attaches every uprobe in a row). */
	struct tls_sites tls_sites;
	struct call_site bind_sites[2], queue_site, giveup_site;
	/* The executable's file (stat of /proc/PID/exe): processes running the same file share
	 * one opened binary (an HA control plane runs three etcd of one file). A running
	 * executable cannot be written (ETXTBSY), so the same file is the same code. */
	dev_t exe_dev;
	ino_t exe_ino;
	int64_t exe_mtime_ns;
	int64_t exe_size;
	pid_t shares_with; /* the pid whose opened binary it took (0: read its own) */
	/* Its bind call's probe (call_probe: the function probed), and those on
	 * targets__queue_probe and targets__giveup_probe when the binary has them. */
	struct call_probes calls;
	const char *call_probe;
	bool attached;
	uint64_t attach_ns;	/* reading the binary and placing its probes took this long */
	uint64_t attach_cpu_ns; /* and this much of our CPU time */
	bool reads_via_syscall; /* no TLS Read probes: its reads come from its peers (peerfeed.h) */
	bool given;		/* the pid came from --*-pid: its replacement must match exactly */
	uint64_t cmdline_hash;	/* of /proc/PID/cmdline when attached: a restart runs the same */
	pid_t failed_pid;	/* a replacement that could not be attached: not retried */
	/* Its write(2)s copied where its connections are keyed (TARGET_TLS_WIRE: target__wire) */
	bool wire;
	/* targets__wire_tick: the unkeyed write(2) count last read, since when it has not moved,
	 * and when the Write probe was last put on. */
	uint64_t wire_unkeyed, wire_quiet_since_ns, write_on_since_ns, wire_next_check_ns;
	char wire_waiting[256]; /* why the Write probe stayed at the last check */
	uint32_t write_offs, write_ons;
	/* Connections not met since attaching whose *tls.Conn was looked for in its memory
	 * (goheap.h), each once; how many searches, how many found, what they read and took. */
	uint64_t heap_searched[TARGETS_HEAP_SEARCHED];
	int n_heap_searched;
	uint32_t heap_searches, heap_found;
	uint64_t heap_bytes, heap_ns;
	struct heap_search *heap_search; /* running on its own thread, not yet joined */
};

/* Where the scheduler patches the status of a pod it gives up on (its failure handler calls it). */
extern const char targets__giveup_probe[];

struct targets_listener {
	void (*attached)(void *ctx, const struct target *t);
	void (*detached)(void *ctx, const struct target *t);
	/* pid, traced as a watcher until now, is t (a restarted target), attached as such (unless
	 * t->attached is false: it failed and said why): its connections are t's. */
	void (*taken_over)(void *ctx, pid_t pid, const struct target *t);
	void *ctx;
};

struct targets {
	struct target t[TARGETS_MAX];
	int n;
	/* t[i]'s process while attached (-1: none): it polls readable once the process exits, so
	 * that the restart check reads /proc only then, and once a second for a changed binary. */
	int pidfd[TARGETS_MAX];
	uint64_t next_full_check_ns;
	struct session *session;
	struct link_reaper reaper;
	struct targets_listener on;
	bool probe_reads; /* --probe-reads: the apiserver's TLS Reads stay probed */
	/* --node NAME and its --node-address list: found by name, a process is traced only when
	 * it listens on or connects from one of them (none: every one found). Set before
	 * targets__find. */
	const char *node;
	const struct endpoint *node_addrs;
	int n_node_addrs;
};

/* Where a bind is queued for a dispatcher goroutine (SchedulerAsyncAPICalls, 1.34+):
 * (*APICache).BindPod(binding), the object the dispatcher POSTs. */
extern const char targets__queue_probe[];

/* ", k8s.io/kubernetes v1.37.2 (commit abcdef123456)" for a header line, "" if nothing known. */
const char *target__release_label(const struct target *t, char *buf, size_t len);

void targets__init(struct targets *ts, const struct targets_listener *on);
/* Adds the processes of a role: the n_given pids given (each checked), or when none, those found
 * by executable name (up to TARGETS_PER_ROLE) on the node's addresses when there are any (each
 * left out said with -v). How many, or a negative errno after a one-line error. */
int targets__find(struct targets *ts, enum process_role role, const pid_t *given, int n_given);
/* Whether pid listens on or has a connection from one of the node's addresses (true when none
 * were given). Reads /proc. */
bool targets__on_node(const struct targets *ts, pid_t pid);
/* Attaches every target found, downstream first (etcd, apiserver, scheduler): a bind whose
 * request is seen then finds the rest of its path already probed. 0, or a negative errno after
 * the failing target said why. */
int targets__attach_all(struct targets *ts, struct session *session);
struct target *targets__of(struct targets *ts, pid_t pid);
bool targets__has(const struct targets *ts, enum process_role role);
/* Whether an attached apiserver reads through the peer feed (peerfeed.h). */
bool targets__apiserver_reads_via_syscall(const struct targets *ts);
/* BINDTRACE_READS_VIA_SYSCALL_COMPARE=1 in the environment (measurement): readers through the
 * peer feed keep their Read probes, and the feed compares the two (peer_feed__new). */
bool targets__reads_compare(void);
/* Traces pid as a watcher (a slot of one that exited is reused). 0 when attached; -ENOSPC when
 * every slot is taken (nothing tried); another negative errno when it is not a Go TLS program or
 * is gone (said only with -v). */
int targets__attach_watcher(struct targets *ts, pid_t pid);
/* Exited targets detached, replaced by their restarts when found (called ten times a second):
 * an attached target's /proc entries are read when its pidfd says it exited, or once a second
 * (a pid that ran another binary), else it costs one poll(2) for all. */
void targets__check_restarts(struct targets *ts);
/* Writes from the wire (target__wire): a target's Write probe goes once none of its TLS
 * connections has written without a key for TARGETS_WIRE_QUIET_NS and every established TCP
 * connection it holds is keyed (its Writes come from its write(2)s; new ones are keyed by
 * setTrafficSecret) or was seen writing plaintext. A connection not met since attaching (silent)
 * keeps it (its first Writes would have no key) until its *tls.Conn is found in the process's
 * memory (goheap.h: searched once per such connection, then keyed at its first write(2)). It
 * comes back as soon as one without a key writes (a TLS 1.2 one, one opened while its
 * handshake's secret went unseen), whose first write(2)s are counted, not decoded. */
#define TARGETS_WIRE_QUIET_NS 2000000000ull
void targets__wire_tick(struct targets *ts, uint64_t now_ns);
/* Per target at exit: how its Write probe went and what was written without a key. */
void targets__print_wire(const struct targets *ts, FILE *out);
/* Whether a traced role's process exited and is not replaced yet (or has exited, as its pidfd
 * says, before the check noticed). */
bool targets__awaiting(const struct targets *ts);
/* Searches of the targets' memory still running (goheap.h) stopped unfinished: the tracer is
 * leaving, so that its totals count them. targets__close does it too. */
void targets__stop_searches(struct targets *ts);
/* At exit: everything detached and closed, with the session's tracepoints (session__close_links:
 * the kernel's grace periods are a child process's wait, not the caller's); waits for the
 * reaper. */
void targets__close(struct targets *ts);

#endif
