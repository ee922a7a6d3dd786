/* Where a byte stream is, and the one place a gap in it is computed: `capture` accounts its
 * streams with stream_pos__advance() (streams.h), each connection decoder its two directions
 * (decode.c); the bind tracer, which feeds decoders, computes none of its own. Implemented in
 * streams.c. */
#ifndef BINDTRACE_STREAM_POS_H
#define BINDTRACE_STREAM_POS_H

#include <stdbool.h>
#include <stdint.h>

/* Where one direction's bytes are. A position that has not started begins at its first chunk's
 * offset (a connection met mid-way); one started at 0 counts a first chunk past 0 as a gap. */
struct stream_pos {
	uint64_t next_offset; /* where the next chunk should start */
	bool started;
};

/* Accounts a chunk of len bytes at offset: returns how many bytes were missed before it (a gap),
 * 0 when it continues the stream. *seen gets how many of its first bytes were already accounted
 * (a chunk sent again, or overlapping; len when all were), NULL when not wanted. */
uint64_t stream_pos__advance(struct stream_pos *pos, uint64_t offset, uint64_t len, uint64_t *seen);

#endif
