/* Per-connection, per-direction byte streams as the capture delivers them: where each one is,
 * and the gaps (dropped or unreadable bytes) between events (stream_pos.h). */
#ifndef BINDTRACE_STREAMS_H
#define BINDTRACE_STREAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream_pos.h"

struct stream {
	uint32_t pid;
	uint8_t dir;
	uint8_t used;
	uint64_t conn;
	struct stream_pos pos; /* started at 0: BPF numbers each direction from first sight */
	uint64_t events;
	uint64_t bytes;
	uint64_t gaps;
	uint64_t gap_bytes;
	void *user; /* for the consumer: a decoder, say */
};

struct streams {
	struct stream *slots;
	size_t cap; /* power of two */
	size_t max; /* what cap may grow to */
	size_t count;
};

/* A table for at most three quarters of cap (rounded up to a power of two) streams. It starts
 * small and doubles as it fills, so its memory follows the streams there are (a tracer's 65536
 * connection slots were 4.5 MiB, most of it touched by a thousand connections spread over it).
 * Growing moves the entries: a struct stream * is good until the next streams__get. */
int streams__init(struct streams *s, size_t cap);
void streams__free(struct streams *s);
/* The stream of (pid, conn, dir), created on first use (which may move the others); NULL when
 * the table is full. */
struct stream *streams__get(struct streams *s, uint32_t pid, uint64_t conn, uint8_t dir);

/* The stream of (pid, conn, dir) if there is one. */
struct stream *streams__find(struct streams *s, uint32_t pid, uint64_t conn, uint8_t dir);
/* Forget a stream (its user pointer is the caller's to free first). */
void streams__del(struct streams *s, struct stream *st);

/* Account an event of len bytes at offset; returns how many bytes were missed before it (a gap:
 * dropped events or unreadable memory), 0 when it continues the stream. An offset behind the
 * stream (a re-sent event) returns 0 and is counted as bytes. */
uint64_t stream__advance(struct stream *st, uint64_t offset, uint32_t len);

#endif
