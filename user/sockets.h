/* What the kernel says about the traced processes' sockets and descriptors, each source read in
 * one place and kept for as long as it stays true enough:
 *
 * - the listening TCP sockets (address and port) of each traced process's network namespace (an
 *   accepted connection's client is its remote end): asked of sock_diag in our namespace, read
 *   from /proc/PID/net/tcp and tcp6 in another; read when a process is tracked, then again by
 *   sockets__refresh() once a second, and by sockets__listening_at() on a miss.
 *   sockets__is_listening() only looks at what was read: it does no I/O and is safe in the ring
 *   buffer's callback.
 * - the process at the other end of a local connection (sockets__peer): the socket whose ends are
 *   ours swapped (sock_diag, or /proc/PID/net/tcp*), then its owner in an index of every process's
 *   socket descriptors, built by one scan of /proc/PID/fd and reused for the lookups of the next
 *   100 ms (a batch of them costs one scan), but read again for a connection first seen after it
 *   was read.
 * - a process's open socket inodes (/proc/PID/fd), and the file behind a descriptor (cached).
 *
 * Everything but sockets__is_listening() reads /proc or asks the kernel: call it from the poll
 * loop, not from the ring buffer's callback (sockets__listening_at() does so only on a miss). */
#ifndef BINDTRACE_SOCKETS_H
#define BINDTRACE_SOCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "endpoint.h"

struct sockets;

/* NULL with errno set. */
struct sockets *sockets__new(void);
void sockets__free(struct sockets *s);

/* pid is traced: its namespace's listening ports are read now (if not already) and kept fresh
 * until it is untracked. */
void sockets__track(struct sockets *s, pid_t pid);
void sockets__untrack(struct sockets *s, pid_t pid);
/* Re-reads the listening ports of every namespace last read over a second ago. */
void sockets__refresh(struct sockets *s, uint64_t now_ns);
/* Does a TCP socket listen at local (its port, on its address or on all) in tracked pid's
 * namespace, as last read? The address counts: a connection made from an ephemeral port that
 * another address listens on (a local server on a random port) is no accepted one. No I/O;
 * false for a pid not tracked. */
bool sockets__is_listening(const struct sockets *s, pid_t pid, const struct endpoint *local);
/* The same, as of a moment no earlier than ts_ns (CLOCK_MONOTONIC, as the events' times): when
 * local is not in a table read before then, the table is read again, once (a port opened since:
 * a restarted process's listener). The one lookup that may do I/O in the ring buffer's
 * callback: only on such a miss, so at most once per batch of events newer than the last read
 * (a connection's first event; a process's outgoing connections are the misses). */
bool sockets__listening_at(struct sockets *s, pid_t pid, const struct endpoint *local,
			   uint64_t ts_ns);

/* The process on this host at the other end of pid's connection local -> remote (IPv4, IPv6 or
 * v4-mapped), or 0 when it is elsewhere or gone. seen_ns (CLOCK_MONOTONIC, as the events' times):
 * when the connection was first seen, its first event's time; an index of owners read before
 * then is read again when it lacks the socket. 0: a connection known from the kernel's tables
 * (the first lookup reads the index for it). */
pid_t sockets__peer(struct sockets *s, pid_t pid, const struct endpoint *local,
		    const struct endpoint *remote, uint64_t seen_ns);

/* Calls fn for each established connection of pid (its own sockets only, conn their inode) whose
 * local port is a listening one: the clients it accepted. */
void sockets__each_accepted(struct sockets *s, pid_t pid,
			    void (*fn)(void *ctx, uint64_t conn, const struct endpoint *local,
				       const struct endpoint *remote),
			    void *ctx);

/* Calls fn for each TCP socket of pid's own (not merely of its namespace) in one of states
 * (SOCKDIAG_LISTEN, SOCKDIAG_ESTABLISHED, a mask), read from /proc/PID/net/tcp and tcp6: listening
 * ones with remote unknown; inode is the socket's. Reads /proc: for the start and the poll loop. */
void sockets__each_own(pid_t pid, uint32_t states,
		       void (*fn)(void *ctx, const struct endpoint *local,
				  const struct endpoint *remote, bool listening, uint64_t inode),
		       void *ctx);

/* The socket inodes open in pid, sorted, in a malloc'ed array the caller frees; NULL and *n = 0
 * when there are none or pid is gone. */
uint64_t *sockets__open_inodes(pid_t pid, size_t *n);
/* fds[i]: pid's descriptor of the socket inodes[i], or -1 when it has none open. */
void sockets__fds_of_inodes(pid_t pid, const uint64_t *inodes, int n, int *fds);

/* The file open as pid's descriptor fd ("" when it cannot be read), read from /proc unless
 * file_id, the kernel's word for which file fd named (fsync_event.file_id; 0: unknown), is the
 * one it was read for (descriptor numbers are reused, files renamed); the last name seen for
 * (pid, fd) answers once it is closed. */
const char *sockets__fd_path(struct sockets *s, pid_t pid, int fd, uint64_t file_id);

#endif
