/* When a connection's read(2)s returned: the last CONN_READS_KEPT per connection of up to
 * CONN_READS_CONNS connections (a bounded table: a new connection takes the slot of the one read
 * least recently among those it may use). Used to time a request whose bytes are not captured
 * (the apiserver's Reads not probed, its client not traced): the last read(2) of its connection
 * that returned before the apiserver acted on it is a time by which the request had been read.
 * Not thread-safe: the ring buffer's callback owns it. */
#ifndef BINDTRACE_CONN_READS_H
#define BINDTRACE_CONN_READS_H

#include <stdint.h>
#include <sys/types.h>

#define CONN_READS_KEPT 32
#define CONN_READS_CONNS 4096

struct conn_reads;

/* NULL when out of memory. The table is allocated at the first read. */
struct conn_reads *conn_reads__new(void);
void conn_reads__free(struct conn_reads *cr);

/* pid's read(2) of conn (its socket's inode) returned at ts_ns (times in order per connection). */
void conn_reads__add(struct conn_reads *cr, pid_t pid, uint64_t conn, uint64_t ts_ns);

/* The latest read(2) of conn by pid that returned at or before ts_ns; 0 when none is known (none
 * seen, or the ones that were have been pushed out by later reads). */
uint64_t conn_reads__last_before(const struct conn_reads *cr, pid_t pid, uint64_t conn,
				 uint64_t ts_ns);

#endif
