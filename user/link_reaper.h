/* Closing uprobes and tracepoints costs the kernel an RCU grace period each (0.1-0.3 s here), one
 * close after another. Three ways around it:
 * - links__close_all closes a set of links at once, one thread each, so that their waits overlap
 *   (at exit: 12 syscall tracepoints took 2.4 s one at a time);
 * - the probes of a process that exited are handed to a thread that closes them, so that a
 *   kubectl coming and going does not stall the ring buffer's reader for a second. The thread
 *   starts on the first hand-over;
 * - at exit, links__close_all_detached leaves the waits to a child process. */
#ifndef BINDTRACE_LINK_REAPER_H
#define BINDTRACE_LINK_REAPER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct bpf_link;
struct reap_job;

/* Destroys n links (NULL entries skipped) and closes n_fds link fds made by hand (uprobe_multi;
 * -1 skipped), all at once from threads; one at a time when no thread can be had. Returns when
 * all are closed. */
void links__close_all(struct bpf_link **links, size_t n, const int *fds, size_t n_fds);

/* At exit: the same, but the kernel's waits are left to a child process. It is forked holding a
 * copy of every descriptor, closes them all (links__close_all) with its standard streams on
 * /dev/null and Ctrl-C ignored, and exits; this process's own closes then only drop references
 * and return at once, so the tracer exits without waiting the grace periods (0.6-0.8 s idle
 * here). The probes stay in the kernel until the child has closed them, under a second later;
 * what they write then goes nowhere. Without a child (fork failed) it waits as
 * links__close_all does. Returns the child's pid, 0 when there is none. */
pid_t links__close_all_detached(struct bpf_link **links, size_t n, const int *fds, size_t n_fds);

struct link_reaper {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct reap_job *head;
	pthread_t thread;
	bool started, done;
};

void link_reaper__init(struct link_reaper *r);
/* Takes the links (an array of n from malloc, now the reaper's) and n_fds link fds (copied) to
 * close them in the background, or closes them here when no thread can be had. */
void link_reaper__add(struct link_reaper *r, struct bpf_link **links, size_t n, const int *fds,
		      size_t n_fds);
/* Waits until every link handed over is closed; the reaper takes no more after this. */
void link_reaper__finish(struct link_reaper *r);

#endif
