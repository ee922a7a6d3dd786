/* BINDTRACE_TLS_DECRYPT=1, a measurement (issue 15): the TLS 1.3 records a traced process writes
 * to a connection whose state was read (a tls_keys_event) are decrypted from the bytes its
 * write(2)s move (SOURCE_TLS_WIRE) and compared, byte for byte, with the plaintext its Write
 * probe saw (SOURCE_TLS, DIR_OUT) on the same connection. The step before the Write probe can go:
 * what it shows is whether the wire and the secret alone give the same plaintext, on every
 * connection of every process, with nothing else changed. The plaintext goes nowhere else.
 *
 * Each connection (pid, socket inode) keeps its out direction's tls13 stream, from the secret and
 * sequence number read when its state was, and a window of the Write probe's recent plaintext
 * (up to TLSCHECK_WINDOW bytes, the probe's bytes arrive before the write(2)s that carry them).
 * The first application-data record is aligned with the start of a Write it equals; each later
 * one is compared where that alignment puts it, and one that differs is aligned afresh. */
#ifndef BINDTRACE_TLSCHECK_H
#define BINDTRACE_TLSCHECK_H

#include <stdint.h>
#include <stdio.h>

#include <linux/types.h>

#include "events.h"

#define TLSCHECK_WINDOW (1u << 20)
#define TLSCHECK_MAX_CONNS 8192

struct tlscheck;

struct tlscheck_stats {
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
	uint64_t table_full; /* connections not followed */
};

struct tlscheck *tlscheck__new(void);
void tlscheck__free(struct tlscheck *c);

/* A connection's state, already checked to hold up (session.c's tls_keys_refusal). */
void tlscheck__key(struct tlscheck *c, const struct tls_keys_event *e);
/* The Write probe's plaintext (SOURCE_TLS, DIR_OUT): kept for the comparison. */
void tlscheck__plain(struct tlscheck *c, const struct data_event *e);
/* What a keyed connection's write(2) moved (SOURCE_TLS_WIRE). */
void tlscheck__wire(struct tlscheck *c, const struct data_event *e);

/* Per process (pid) at exit, or all processes summed with pid 0. */
void tlscheck__stats(const struct tlscheck *c, pid_t pid, struct tlscheck_stats *out);
void tlscheck__print(const struct tlscheck *c, FILE *out);

#endif
