/* --evidence DIR: per finished bind, a directory with everything behind its numbers — the
 * timeline (bind.json), the decoded messages of the connections and streams of its stages
 * (messages.jsonl), the kernel events behind each stage (kernel.jsonl: data event metadata and
 * fsyncs, never payloads) and the identity of each traced binary (binaries.json) — plus a
 * README.md at the top saying how to check each number.
 *
 * The tracer's stream of data events and decoded messages is kept in bounded rings per (pid,
 * connection), long enough for a bind to finish; a bind picks from them what its stages point at.
 * Files are created 0600 and directories 0700: the evidence describes control-plane traffic. */
#ifndef BINDTRACE_EVIDENCE_H
#define BINDTRACE_EVIDENCE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "bindview.h"
#include "decode.h"
#include "events.h"

struct evidence_quota_stats;
struct identities;

struct evidence;

/* Create dir (0700) if needed and write its README.md. NULL with errno after a one-line
 * "bindtrace: --evidence DIR: ..." on stderr. retention_ns: how long the rings keep events;
 * max_bytes: the bind directories are kept under this size on disk, the oldest removed
 * (evidence_quota.h; 0: no bound). */
struct evidence *evidence__open(const char *dir, int64_t wall_offset_ns, uint64_t retention_ns,
				uint64_t max_bytes);
void evidence__data(struct evidence *ev, const struct actor *who, const struct data_event *e);
void evidence__message(struct evidence *ev, const struct actor *who, const struct decoded_msg *msg);
void evidence__fsync(struct evidence *ev, const struct actor *who, const struct fsync_event *e,
		     const char *path);
/* Write DIR/NNNN-ns-name/; binaries.json lists the registry's identities (complete: the router
 * waited for them). 0, or -errno after a message on stderr. */
int evidence__bind(struct evidence *ev, const struct bind_view *view, const struct identities *ids);
/* The size bound's state: false when there is none. */
bool evidence__stats(const struct evidence *ev, struct evidence_quota_stats *s);
void evidence__close(struct evidence *ev);

#endif
