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

#include <jansson.h>

#include "bindview.h"
#include "decode.h"
#include "events.h"

struct go_binary;

#define IDENTITY_PATH_MAX 512
#define IDENTITY_ROLE_MAX 32

/* What a traced process ran: enough for someone else to find the same binary and check it. */
struct process_identity {
	char role[IDENTITY_ROLE_MAX]; /* "kube-scheduler", "kube-apiserver", "etcd" */
	pid_t pid;
	char exe[IDENTITY_PATH_MAX];
	char go_version[64];
	char module_version[64]; /* k8s.io/kubernetes or go.etcd.io/etcd/server/v3 version */
	uint64_t size;
	char sha256[65];		   /* hex; "" when the file could not be read */
	char gnu_build_id[129];		   /* hex of NT_GNU_BUILD_ID; "" when absent */
	char go_build_id[256];		   /* the Go build ID note; "" when absent */
	char why[160];			   /* what could not be read, "" when everything was */
	char read_from[IDENTITY_PATH_MAX]; /* the file hashed */
	json_t *go;			   /* Go facts: versions, modules, text base; NULL: none */
	json_t *detail;			   /* binaries.json entry: all of the above */
};

/* The identity in three steps, so the slow one (hashing a 100 MB binary) can run on another
 * thread: _init takes what the tracer knows and the Go facts from gb (which may be NULL, or
 * closed right after); _read_file hashes and reads the build IDs of the file at path (read
 * through /proc/PID/exe for a live process), touching only id's plain fields; _seal builds
 * id->detail. What cannot be read is said in id->why. _read does all three. Release with
 * process_identity__clear(). */
void process_identity__init(struct process_identity *id, const char *role, pid_t pid,
			    const char *exe, const char *go_version, const char *module_version,
			    struct go_binary *gb);
void process_identity__read_file(struct process_identity *id, const char *path);
void process_identity__seal(struct process_identity *id);
void process_identity__read(struct process_identity *id, const char *role, pid_t pid,
			    const char *exe, const char *path, const char *go_version,
			    const char *module_version, struct go_binary *gb);
void process_identity__clear(struct process_identity *id);
/* SHA-256 of a file as 64 hex digits; 0 or -errno. Exposed for the tests. */
int sha256__file(const char *path, char hex[65], uint64_t *size);

struct evidence;

/* Create dir (0700) if needed and write its README.md. NULL with errno after a one-line
 * "bindtrace: --evidence DIR: ..." on stderr. retention_ns: how long the rings keep events. */
struct evidence *evidence__open(const char *dir, int64_t wall_offset_ns, uint64_t retention_ns);
void evidence__process(struct evidence *ev, const struct process_identity *id);
void evidence__data(struct evidence *ev, const struct actor *who, const struct data_event *e);
void evidence__message(struct evidence *ev, const struct actor *who, const struct decoded_msg *msg);
void evidence__fsync(struct evidence *ev, const struct actor *who, const struct fsync_event *e,
		     const char *path);
/* Write DIR/NNNN-ns-name/. 0, or -errno after a message on stderr. */
int evidence__bind(struct evidence *ev, const struct bind_view *view);
void evidence__close(struct evidence *ev);

#endif
