/* A Go process's *tls.Conn for a socket it already holds, found by reading its memory: how a
 * connection opened before the tracer came, and silent since, is keyed for Writes from the wire
 * (issue 15) without waiting for its next crypto/tls Write to hit a uprobe.
 *
 * The memory is read, never written, through process_vm_readv: only the resident pages of its
 * private anonymous mappings (the Go heap, which does not move objects), as /proc/PID/pagemap
 * gives them, so nothing is faulted in; a chunk at a time, so what the tracer holds does not grow
 * with the heap. What is found is what the capture's BPF would find from a Write's receiver
 * (bpf/capture.bpf.c, conn_search_node): tls.Conn.conn is a net.Conn whose data, through at most
 * three wrappers (an interface at offset 0 or 8, or a pointer at offset 0), reaches a net.conn
 * whose *netFD has the descriptor as its poll.FD.Sysfd and the TCP flags. Each interface on the
 * way must hold an itab (in the executable, its interface type of kind Interface, its hash its
 * type's), and the tls.Conn must hold up at gotls's offsets as TLS 1.3: its vers and its out
 * half's version 0x0304, a TLS 1.3 suite, an out traffic secret of 32 or 48 bytes.
 *
 * What it gives is an address for BPF to read from at the socket's next write(2) (the memory
 * changes meanwhile; the records' authentication decides whether what was read there holds). A
 * socket that more than one object answers for (a freed tls.Conn whose stale words still lead to
 * a reused descriptor) is left without: no guess. */
#ifndef BINDTRACE_GOHEAP_H
#define BINDTRACE_GOHEAP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "events.h"

/* The most resident heap searched (each byte is read up to six times: 4-5 ms per MB in all on
 * the test VMs, 15-88 MB of the bench's scheduler in 58-438 ms): a process with more is not
 * searched. */
#define GOHEAP_MAX_BYTES (1ull << 30)

struct goheap_stats {
	uint64_t bytes_read; /* resident heap pages (each pass reads them again) */
	uint64_t netfds;     /* poll.FDs found with a wanted descriptor */
	uint64_t ambiguous;  /* sockets more than one tls.Conn answered for (left at 0) */
	uint64_t truncated;  /* objects not followed: a pass found over 4096 */
	uint64_t wall_ns;
};

/* For each fds[i] (a TCP socket descriptor of pid, running a Go binary whose crypto/tls has
 * layout): found[i], the address of its *tls.Conn, or 0. How many were found, or a negative errno
 * (-EFBIG: more than GOHEAP_MAX_BYTES resident; -ESRCH: pid gone; -ECANCELED: *cancel was set,
 * which it looks at as it reads each MiB; -EPERM...). stats and cancel may be NULL. It touches
 * nothing but its arguments: it may run on a thread of its own (targets.c does). */
int goheap__find_tls_conns(pid_t pid, const struct tls_layout *layout, const int *fds, size_t n,
			   uint64_t *found, struct goheap_stats *stats, const atomic_bool *cancel);

#endif
