/* One tracing session over the capture BPF object, for `bindtrace` (trace) and `capture` alike:
 * open it, size its ring buffer, load it, attach its tracepoints, read its ring buffer until
 * stopped, sum its counters, and tear it all down.
 *
 * One rule for the tracepoints: every tracepoint program of the object is attached. What they
 * emit is chosen by the maps (targets, fsync_targets: session__add_target) and the options below,
 * never by leaving some unattached. The uprobes (crypto/tls, the scheduler's bind call) are
 * attached by their owners (tlsprobe, targets) on session__bpf() and must be closed before
 * session__close().
 *
 * The ring buffer wakes the reader once an eighth of it is waiting and is read at least every
 * SESSION_POLL_MS otherwise; every event carries its own kernel timestamp. Records are checked
 * (size, payload length) before a handler sees them. Handlers run inside the ring buffer's
 * callback: they record and decode; anything that can block belongs in `between`, which runs
 * after each read. Records that arrive before session__run wait in the ring. */
#ifndef BINDTRACE_SESSION_H
#define BINDTRACE_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

#include "events.h"

/* At most this long between reads: the correlator ticks every 50 ms (trace.c), so reading more
 * often only made more wakeups. At 10 ms the loop itself was 6.9 ms of CPU a second with
 * nothing to read (2.9 at 50), paid through every burst as well. SESSION_POLL_FAST_MS while
 * session__poll_fast says so: while a traced process is awaited back after it exited, so that
 * the checks between reads that find its successor run as often as they did before. */
#define SESSION_POLL_MS 50
#define SESSION_POLL_FAST_MS 10
/* A read takes at most this many records: a reader held off the CPU for seconds (a busy node)
 * finds a backlog of hundreds of thousands, and the steps between reads (the correlator's clock
 * among them) must run while it catches up: read in one go, the binds of a backlog were closed
 * only after all of it, when the ring of observations had long lost their etcd stages. */
#define SESSION_READ_BATCH 4096

struct capture_bpf;
struct bpf_link;

struct session_options {
	const char *name;	     /* starts each error line: "bindtrace", "bindtrace: capture" */
	unsigned long ringbuf_bytes; /* a power of two >= 4096 */
	bool uprobe_any_pid;	     /* TLS uprobes attached for pid -1 take every process */
	bool no_syscall_data;	     /* syscall programs emit no plaintext TCP (TLS only) */
};

/* Called for each record of their type (NULL: ignored); the record lives only for the call.
 * between(between_ctx, now_ns, read_to_ns) is called after each read of the ring buffer, outside
 * its callback: read_to_ns is how far the records read go, now_ns when the read emptied the ring,
 * else (behind, in a backlog) the newest record's time. A clock that decides whether something
 * more is still to come (a bind's linger, a Write's wait for its read) runs on read_to_ns. */
struct session_handlers {
	void (*data)(void *ctx, const struct data_event *e); /* e->len bytes follow */
	void (*fsync)(void *ctx, const struct fsync_event *e);
	void (*call)(void *ctx, const struct call_event *e);
	void (*sock_read)(void *ctx, const struct sock_read_event *e);
	void *ctx;
	void (*between)(void *between_ctx, uint64_t now_ns, uint64_t read_to_ns);
	/* SIGHUP, after the read it came in (NULL: SIGHUP keeps its default action). */
	void (*hangup)(void *between_ctx);
	void *between_ctx;
};

struct session;

/* Mounts tracefs if needed, opens and loads the object, attaches its tracepoints and sets up the
 * ring buffer. NULL after a one-line error on stderr. The tracepoints (etcd's fsyncs among them)
 * are attached here, before the caller attaches any target: they see only the pids put in the
 * targets maps, and a bind met once its scheduler is probed must find its WAL fsync probed too
 * (attached after the targets, the binds of the first moments lacked it: "not observed"). */
struct session *session__open(const struct session_options *opt);
/* The loaded object, for attaching uprobes to its programs. */
struct capture_bpf *session__bpf(struct session *s);

/* pid's syscalls are captured (and its fsyncs timed, with fsync) from now on. 0 or -errno. */
int session__add_target(struct session *s, pid_t pid, bool fsync);
/* The same for a process whose TLS Reads are not probed (TARGET_READS_VIA_SYSCALL: its read(2)s
 * of TLS sockets come as sock_read events; see peerfeed.h), and with wire, one whose keyed
 * connections' write(2)s are copied (TARGET_TLS_WIRE). */
int session__add_target_flags(struct session *s, pid_t pid, bool fsync, bool reads_via_syscall,
			      bool wire);
/* BINDTRACE_TLS_KEYS=1 (a measurement towards decrypting the wire, user/tls13.h): each
 * connection's TLS 1.3 state is read when a probe first meets it, where layout says pid's
 * binary keeps it (user/gotls.h), checked (TLS 1.3 in both halves, a secret of the suite's hash
 * length) and counted; session__print_tls_keys says how many held up, by process. The secrets
 * are never printed. */
bool session__harvests_tls_keys(const struct session *s);
int session__set_tls_layout(struct session *s, pid_t pid, const struct tls_layout *layout);
void session__print_tls_keys(const struct session *s, FILE *out);
/* BINDTRACE_TLS_WIRE set (and not BINDTRACE_TLS_DECRYPT=1): the TARGET_TLS_WIRE processes'
 * keyed connections' Writes come from their wire (tlswire.h). */
bool session__wire_delivers(const struct session *s);
/* Whether BINDTRACE_TLS_WIRE (parsed once, at load) names role (kube-scheduler, kube-apiserver,
 * etcd): unset or empty, the scheduler. */
bool session__wire_role(const struct session *s, const char *role);
/* Whether BINDTRACE_TLS_WIRE was given a value (empty counts as unset, the default). */
bool session__wire_asked(const struct session *s);
/* BINDTRACE_TLS_DECRYPT=1: every target's write(2)s are decrypted and compared, not delivered. */
bool session__decrypts(const struct session *s);
/* Then: how many write(2)s of TLS connections without a key pid made (their plaintext needs
 * the Write probe). */
uint64_t session__wire_unkeyed(const struct session *s, pid_t pid);
/* The capture programs' flags (conns.h CONN_*) of pid's socket ino and how many bytes they saw it
 * write: 0, or -ENOENT when they have not met it. */
int session__conn_flags(const struct session *s, pid_t pid, uint64_t ino, uint32_t *flags,
			uint64_t *written);
/* A connection of pid not met since attaching, and its *tls.Conn found in pid's memory
 * (goheap.h): its first write(2) is keyed from there (the capture's wire_pending). 0 or a
 * negative errno. */
int session__wire_pending_set(struct session *s, pid_t pid, uint64_t ino, uint64_t tls_conn);
/* Whether such an address waits for ino's first write(2). */
bool session__wire_pending(const struct session *s, pid_t pid, uint64_t ino);
void session__remove_target(struct session *s, pid_t pid);

/* Reads the ring buffer into the handlers until SIGINT or SIGTERM, session__stop(), or the
 * CLOCK_MONOTONIC deadline (0: none); then reads what is left. 0, or a negative errno after a
 * one-line error when the ring buffer fails. */
int session__run(struct session *s, const struct session_handlers *handlers, uint64_t deadline_ns);
/* Ends session__run after its current step (from a handler or `between`). */
void session__stop(struct session *s);
/* Reads every SESSION_POLL_FAST_MS at most while fast, else every SESSION_POLL_MS. */
void session__poll_fast(struct session *s, bool fast);
/* Catches SIGINT and SIGTERM from now on (session__run does too): called before the targets are
 * attached, so that one during the attach is not lost (a tracer started in the background by a
 * script inherits SIGINT ignored, until a handler is set) and ends the tracer once the step under
 * way is done. session__stop_requested: whether one came (or session__stop was called). */
void session__catch_signals(void);
bool session__stop_requested(void);

/* How old the newest record of the last read was when it ended (ns; 0 when it read none): about
 * the poll interval at most while the reader keeps up, seconds when it reads a backlog (held off
 * the CPU). */
uint64_t session__read_lag(const struct session *s);
/* When the reading loop last ended a step (a read and the work between reads; monotonic ns, 0
 * before the first): safe from any thread. */
uint64_t session__last_step_ns(const struct session *s);
/* Bytes written to the ring buffer and not yet read (records and their headers), from any
 * thread; the ring's size; its map fd (for another thread's epoll on its wakeups). */
uint64_t session__ring_waiting(const struct session *s);
uint64_t session__ring_size(const struct session *s);
/* The most that waited when a read began (the reading loop's own look: a reader held off the CPU
 * finds its backlog there), for how near the ring came to full. */
uint64_t session__ring_peak(const struct session *s);
int session__ring_fd(const struct session *s);
/* Records read so far. */
uint64_t session__events(const struct session *s);
/* The BPF programs' counters (enum capture_counter), summed over CPUs. */
void session__counters(struct session *s, uint64_t out[COUNTER_MAX]);
/* One of them (COUNTER_RINGBUF_DROPS each tick: one map lookup rather than COUNTER_MAX); 0 when it
 * cannot be read. */
uint64_t session__counter(struct session *s, __u32 counter);

/* With BINDTRACE_PROBE_HITS=1 in the environment (measurement, read when the session opened:
 * it costs a hash update per program run), every capture program's runs, ring buffer records and
 * bytes per process, one line each to out; nothing otherwise. */
void session__print_probe_hits(struct session *s, FILE *out);

/* At exit: closes the tracepoints together with n links and n_fds link fds of the caller's (the
 * targets' uprobes), all at once, and leaves the kernel's grace periods to a child process
 * (links__close_all_detached): each close waits for one, and two batches one after the other
 * waited for two. session__close then has only the BPF object to close. */
void session__close_links(struct session *s, struct bpf_link **links, size_t n, const int *fds,
			  size_t n_fds);

/* Detaches the tracepoints (all at once: links__close_all) and frees everything; NULL is
 * fine. */
void session__close(struct session *s);

#endif
