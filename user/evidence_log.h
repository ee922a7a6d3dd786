/* What --evidence remembers of the tracer's stream until a bind finishes and picks what its
 * stages point at: per (pid, connection) a ring of data events reduced to their metadata (never
 * a payload byte) and a ring of decoded messages kept as JSON (message_json.h: redacted as
 * decoded), and one ring of etcd's fsyncs.
 *
 * Bounded: per connection the most recent events within the retention time, at most 16384 data
 * events and 4096 messages, in all at most 1M data events and 64 MB of messages, 2048 fsyncs
 * and 512 connections (the least recently active one is dropped for a new one). Past those, a
 * connection that adds gives up its own oldest first; a message over 8 KiB of JSON keeps its
 * framing and says "body_omitted". What a reader gets is never invented, at worst incomplete.
 *
 * Not thread-safe: the tracer's one thread feeds and reads it. Pointers it returns stay valid
 * until the next feed. */
#ifndef BINDTRACE_EVIDENCE_LOG_H
#define BINDTRACE_EVIDENCE_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "correlate.h"
#include "decode.h"
#include "events.h"

/* Data event metadata: never the bytes. */
struct data_meta {
	uint64_t ts_ns; /* first: the ring's time */
	uint64_t offset;
	uint32_t len;
	uint32_t tid;
	int32_t fd;
	uint8_t dir, source;
};

struct msg_entry {
	uint64_t ts_last_ns; /* first: the ring's time */
	uint64_t ts_first_ns;
	uint64_t off_from, off_to; /* stream offsets of the chunks that carried it */
	uint32_t chunks;	   /* 0: those chunks were no longer in the ring */
	uint32_t stream_id;
	uint8_t dir;
	char *subject; /* "ns/name" of its object or the etcd key; NULL when it names none */
	char *json;
};

struct fsync_meta {
	uint64_t end_ns; /* first: the ring's time */
	uint64_t start_ns;
	int64_t ret;
	pid_t pid;
	uint32_t tid;
	int32_t fd;
	uint32_t datasync;
	char comm[17];
	char path[256];
};

struct evidence_log;
struct conn_log;

/* retention_ns: how long events are kept. NULL with errno when out of memory. */
struct evidence_log *evidence_log__new(uint64_t retention_ns);
void evidence_log__free(struct evidence_log *log);

/* Everything the tracer sees, in order. */
void evidence_log__data(struct evidence_log *log, const struct actor *who,
			const struct data_event *e);
void evidence_log__message(struct evidence_log *log, const struct actor *who,
			   const struct decoded_msg *msg);
void evidence_log__fsync(struct evidence_log *log, const struct actor *who,
			 const struct fsync_event *e, const char *path);

/* The log of one connection (NULL when none is held), its events oldest first. */
const struct conn_log *evidence_log__conn(const struct evidence_log *log, pid_t pid, uint64_t conn);
const struct actor *conn_log__who(const struct conn_log *c);
size_t conn_log__n_data(const struct conn_log *c);
const struct data_meta *conn_log__data(const struct conn_log *c, size_t i);
size_t conn_log__n_messages(const struct conn_log *c);
const struct msg_entry *conn_log__message(const struct conn_log *c, size_t i);
/* etcd's fsyncs, oldest first. */
size_t evidence_log__n_fsyncs(const struct evidence_log *log);
const struct fsync_meta *evidence_log__fsync_at(const struct evidence_log *log, size_t i);

#endif
