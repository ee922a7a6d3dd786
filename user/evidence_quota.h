/* --evidence-max-size: the evidence directory kept under a size on disk. Each bind's directory is
 * measured when written (what `du` counts: the allocated blocks of its files and of the directory
 * itself) and the oldest binds' directories are removed, whole, until the total is back under
 * the size. The bind just written is never removed, so a single bind larger than the size is kept
 * alone (the total then exceeds it by that bind; it is said in the stats).
 *
 * Only what bindtrace wrote is ever removed: in a bind directory the four files the evidence
 * writes (evidence_quota__files), then the directory if nothing else is left in it. A file or
 * directory someone else put there is never touched nor counted. The bind directories of earlier
 * runs in the same DIR (named NNNN-..., holding nothing but those files) are adopted when the
 * quota opens, oldest first by their time of change, so that the bound holds across restarts. */
#ifndef BINDTRACE_EVIDENCE_QUOTA_H
#define BINDTRACE_EVIDENCE_QUOTA_H

#include <stdint.h>

/* The files a bind's evidence directory holds, NULL-terminated. */
extern const char *const evidence_quota__files[];

struct evidence_quota_stats {
	uint64_t max_bytes;
	uint64_t bytes;		/* the bind directories kept, as measured */
	uint64_t dirs;		/* how many */
	uint64_t adopted;	/* of them, found from earlier runs at open */
	uint64_t removed;	/* bind directories removed to stay under max_bytes */
	uint64_t removed_bytes; /* what they held */
	uint64_t left;		/* removed directories left in place: someone else's file in it */
};

struct evidence_quota;

/* Track the bind directories in dir_fd (not owned) under max_bytes, adopting those of earlier
 * runs. NULL with errno. */
struct evidence_quota *evidence_quota__new(int dir_fd, uint64_t max_bytes);
/* The bind directory name (in dir_fd) was just written: count it, then remove the oldest until
 * the total is at most max_bytes (never name itself). Returns how many were removed. */
unsigned int evidence_quota__add(struct evidence_quota *q, const char *name);
void evidence_quota__stats(const struct evidence_quota *q, struct evidence_quota_stats *s);
void evidence_quota__free(struct evidence_quota *q);

#endif
