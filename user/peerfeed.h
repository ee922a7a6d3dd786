/* Reads of a process whose crypto/tls Reads are not probed (issue 15's cut). On a control plane
 * whose scheduler, apiserver and etcd are all traced, every byte one of them reads was written by
 * another traced one: the writer's Write probe (or its write(2), for plaintext) already carries
 * the plaintext, so the reader needs no Read uprobe (two traps per Read, or one at its RETs), only
 * the read(2) syscall tracepoint (a fraction of a uprobe's cost) to say when the bytes came out.
 *
 * A traced writer's Write is queued under its connection's addresses with the TCP sequence number
 * of its first byte on the wire; the reader's read(2) of that connection that returned the
 * Write's last byte releases it as the reader's read, timed by that read(2). So a receiver's stage
 * is "the read(2) that returned the last byte" instead of "the Read that returned the last byte":
 * the same moment minus the decryption, or earlier when one read(2) brought several records that
 * the program then reads one by one.
 *
 * A TLS Write's ciphertext length is estimated (TLS 1.3 with AEAD: 22 bytes per record of at most
 * 16 KiB, the fewest records it can take); a Write cut into smaller records (Go's dynamic record
 * sizing at the start of a connection) may be released by a read(2) that came a little early,
 * never late. Writes are queued on connections whose reader has read through this path, and on
 * local ones (both ends on this host) whose reader has not read yet (up to 4 MiB: a reader
 * stopped, or idle since before the tracer started), so that remote untraced clients cost
 * nothing here. Writes not read within PEER_FEED_MAX_AGE_NS, or beyond PEER_FEED_MAX_QUEUED_BYTES
 * per connection, are dropped and the reader's stream moves past them: the decoder sees a gap,
 * counted and shown like any other. Not thread-safe: the ring buffer's callback owns it. */
#ifndef BINDTRACE_PEERFEED_H
#define BINDTRACE_PEERFEED_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "correlate.h"
#include "events.h"

#define PEER_FEED_MAX_AGE_NS (30ull * 1000000000ull)
#define PEER_FEED_MAX_QUEUED_BYTES (32u << 20)

struct peer_feed;

typedef void (*peer_feed_deliver_fn)(void *ctx, const struct data_event *e);

/* Which traced processes take their reads from their peers' Writes: those whose peers that
 * matter to a bind are all traced. The scheduler and etcd talk to the apiserver; the apiserver
 * reads binds from the scheduler and answers from etcd. probe_reads (--probe-reads: binds may
 * come from a scheduler that is not traced, one on another node) keeps the apiserver's Read
 * probes; watchers keep theirs (a watcher may also talk to apiservers that are not traced). */
bool peer_feed__reads_via_syscall(enum process_role role, bool have_scheduler, bool have_apiserver,
				  bool have_etcd, bool probe_reads);

/* compare (BINDTRACE_READS_VIA_SYSCALL_COMPARE=1, measurement): the readers keep their Read
 * probes; peer_feed__read delivers nothing but remembers the last bytes of each Write it would
 * have delivered, peer_feed__probed_read matches them with the probed Read that returned them,
 * and peer_feed__compare_print says how far the read(2)'s time is from the Read's. */
struct peer_feed *peer_feed__new(bool compare);
void peer_feed__free(struct peer_feed *pf);

/* A traced writer's data event (DIR_OUT with DATA_HAS_TCP_SEQ): copied and queued when its
 * connection's reader reads through this path. On a local connection whose reader has not read
 * yet, up to 4 MiB is kept for it when patient (the apiserver's Writes: a scheduler may be idle
 * or stopped for long), else PEER_FEED_BRIEF_BYTES: a reader that reads this way (an etcd member
 * reading another's raft traffic) reads at once, and one that has not read that much is taken not
 * to (an apiserver not traced here, on its etcd member): as peer_feed__no_reader, undone by a
 * read(2) of it. */
#define PEER_FEED_BRIEF_BYTES (64u << 10)
void peer_feed__written(struct peer_feed *pf, const struct data_event *e, bool patient);

/* A read by a TARGET_READS_VIA_SYSCALL process: each queued Write on its connection whose last
 * byte it has reached is passed to deliver as a data event of the reader (DIR_IN, the reader's
 * pid, socket, addresses, its own stream offsets, the read's time), in order. A read(2) that
 * does not begin where the last one on its connection ended shows that the record of one between
 * them was lost (ring-buffer drops): the Writes that lost one reached are timed at the earliest
 * it can have been (their Write, or the last read(2) seen, whichever came later), so that a
 * request is never placed after its answer. */
void peer_feed__read(struct peer_feed *pf, const struct sock_read_event *r,
		     peer_feed_deliver_fn deliver, void *ctx);

/* Drops Writes older than PEER_FEED_MAX_AGE_NS at time now (the reader moves past them: a gap),
 * and forgets connections idle for ten minutes. Returns how many Writes were dropped. */
/* A probed Read (DIR_IN, SOURCE_TLS) in compare mode; nothing otherwise. */
void peer_feed__probed_read(struct peer_feed *pf, const struct data_event *e);
void peer_feed__compare_print(const struct peer_feed *pf, FILE *out);

uint64_t peer_feed__expire(struct peer_feed *pf, uint64_t now);

/* The writer's connection, named by the writer's local and remote ends, is read by a process
 * known not to read through this path (one not traced, or traced with its own Read probes: a
 * watcher): what is queued for it is freed and nothing more is queued for it (counted in
 * no_reader), so that the local clients nobody traces (controllers, kubelets on a test bed,
 * kubectl) cost nothing here. A read(2) of it that shows up after all undoes this (counted in
 * reader_came). Returns the bytes it freed. */
uint64_t peer_feed__no_reader(struct peer_feed *pf, const struct endpoint *writer_local,
			      const struct endpoint *writer_remote);
/* The reader of that connection reads this way from now on (a watcher, which read through its
 * own Read probes, was the restarted scheduler and is traced as such): what peer_feed__no_reader
 * said is undone before its first read(2), so the Writes from here on are kept for it (those
 * freed before are not: its stream goes on as one met mid-way). Counted in reader_came. */
void peer_feed__reader_reads(struct peer_feed *pf, const struct endpoint *writer_local,
			     const struct endpoint *writer_remote);

struct peer_feed_stats {
	uint64_t queued;    /* Writes queued for a reader */
	uint64_t delivered; /* ... released by its read(2)s */
	uint64_t expired;   /* ... dropped unread after PEER_FEED_MAX_AGE_NS */
	uint64_t overflow;  /* ... dropped over PEER_FEED_MAX_QUEUED_BYTES */
	uint64_t dropped_bytes;
	uint64_t unread;     /* Writes on connections whose reader reads through its probes */
	uint64_t reads;	     /* read(2)s seen */
	uint64_t retimed;    /* Writes read by a read(2) whose record was lost (drops) */
	uint64_t table_full; /* connections not followed: table full */
	uint64_t no_reader;  /* Writes not queued, or freed: their reader does not read this way */
	uint64_t no_reader_bytes;
	uint64_t reader_came; /* a read(2) or a take-over on a connection said to have no such
			       * reader */
	/* Writes to a reader whose process exited (an etcd member killed): not read, not a gap;
	 * those queued then, and those written to it after. */
	uint64_t reader_exited, reader_exited_bytes;
};
/* Process pid exited: the Writes queued for it as a reader are freed, and those that follow on
 * its connections are not queued (counted in reader_exited, not as gaps). */
void peer_feed__reader_gone(struct peer_feed *pf, pid_t pid);
void peer_feed__stats(const struct peer_feed *pf, struct peer_feed_stats *out);
/* One line of those counts to out when any read went through this path, and the comparison in
 * compare mode. */
void peer_feed__print(const struct peer_feed *pf, FILE *out);

#endif
