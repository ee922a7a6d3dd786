/* What a traced process runs, for someone else to find the same binary and check it: its path,
 * size, SHA-256, GNU and Go build IDs, Go and module versions, and the Go facts bindtrace placed
 * its probes by (modules, build settings, text base and how it was validated).
 *
 * The registry (struct identities) holds one identity per traced process, in the order they
 * were added. There is one per run, owned by the output router (trace_outputs.c), which adds
 * each process as it is attached and hands the registry, read-only, to the writers that cite
 * binaries (--evidence, --report); they keep no copy of their own. */
#ifndef BINDTRACE_IDENTITY_H
#define BINDTRACE_IDENTITY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

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

struct identities;

struct identities *identities__new(void);
void identities__free(struct identities *ids);
/* A traced process. With read_binary, its binary is hashed and its build IDs read on a thread
 * of its own from now on (the file the process runs, /proc/PID/exe, else the path exe); without,
 * only what is given is kept. gb (may be NULL) is read before this returns. 0 or -ENOMEM. */
int identities__add(struct identities *ids, const char *role, pid_t pid, const char *exe,
		    const char *go_version, const char *module_version, struct go_binary *gb,
		    bool read_binary);
/* Wait for the binaries still being read: afterwards every identity is complete, its detail
 * built. The router calls it before handing the registry to a writer. */
void identities__wait(struct identities *ids);
/* The identities in the order they were added (ids may be NULL: none). */
int identities__count(const struct identities *ids);
const struct process_identity *identities__at(const struct identities *ids, int i);

#endif
