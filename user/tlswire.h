/* The TLS 1.3 records a traced process writes to a connection whose state was read (a
 * tls_keys_event) decrypted from the bytes its write(2)s move (SOURCE_TLS_WIRE): the way to the
 * plaintext without a uprobe hit per Write (issue 15).
 *
 * BINDTRACE_TLS_DECRYPT=1 (a measurement): the records are compared, byte for byte, with the
 * plaintext the Write probe saw (SOURCE_TLS, DIR_OUT) on the same connection, and go nowhere
 * else: whether the wire and the secret alone give the same plaintext, on every connection of
 * every process, with nothing else changed.
 *
 * BINDTRACE_TLS_WIRE=1: the records are also delivered as the connection's Writes (a data_event
 * per record: its plaintext, its header's TCP sequence number, the time of the write(2) that
 * completed it), in place of the Write probe's; compared as well only when both are set.
 *
 * Each connection (pid, socket inode) keeps its out direction's tls13 stream, from the secret and
 * sequence number read when its state was, and a window of the Write probe's recent plaintext
 * (up to TLSWIRE_WINDOW bytes, the probe's bytes arrive before the write(2)s that carry them).
 * The first application-data record is aligned with the start of a Write it equals; each later
 * one is compared where that alignment puts it, and one that differs is aligned afresh. */
#ifndef BINDTRACE_TLSWIRE_H
#define BINDTRACE_TLSWIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/types.h>

#include "events.h"

#define TLSWIRE_WINDOW (1u << 20)
#define TLSWIRE_MAX_CONNS 8192

struct tlswire;

struct tlswire_stats {
	uint64_t conns;		/* keyed: a stream made from their state */
	uint64_t wire_bytes;	/* fed to those streams */
	uint64_t wire_unkeyed;	/* write(2) bytes of a connection without a stream */
	uint64_t records;	/* application-data records that authenticated */
	uint64_t other_records; /* handshake, alert: authenticated, not compared */
	uint64_t plain_bytes;	/* in those application-data records */
	uint64_t equal;		/* bytes equal to the Write probe's at their place */
	uint64_t differ;	/* bytes not equal */
	uint64_t uncompared;	/* no probe bytes held there (evicted, lost, not aligned) */
	uint64_t unauthenticated, resyncs, given_up_bytes, lost_bytes; /* the streams' */
	uint64_t before_first; /* not authenticated before any opened: a handshake's flight */
	uint64_t table_full;   /* connections not followed */
	uint64_t delivered;    /* records delivered as Writes */
	uint64_t gap_bytes;    /* wire bytes of records lost between two that opened */
};

/* Called with each record's event (valid during the call). */
typedef void (*tlswire_deliver_fn)(void *ctx, const struct data_event *e);

/* deliver NULL: compare only; compare false: deliver only (the Write probe's plaintext is not
 * kept). */
struct tlswire *tlswire__new(tlswire_deliver_fn deliver, void *ctx, bool compare);
void tlswire__free(struct tlswire *c);

/* A connection's state, already checked to hold up (session.c's tls_keys_refusal). */
void tlswire__key(struct tlswire *c, const struct tls_keys_event *e);
/* The Write probe's plaintext (SOURCE_TLS, DIR_OUT): kept for the comparison. Whether its
 * connection is keyed (its Writes then come from the wire when delivering). */
bool tlswire__plain(struct tlswire *c, const struct data_event *e);
/* What a keyed connection's write(2) moved (SOURCE_TLS_WIRE). */
void tlswire__wire(struct tlswire *c, const struct data_event *e);

/* Per process (pid) at exit, or all processes summed with pid 0. */
void tlswire__stats(const struct tlswire *c, pid_t pid, struct tlswire_stats *out);
void tlswire__print(const struct tlswire *c, FILE *out);

#endif
