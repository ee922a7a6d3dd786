/* Closing uprobes and tracepoints costs the kernel an RCU grace period each (0.1-0.3 s here), one
 * close after another. Two ways around it:
 * - links__close_all closes a set of links at once, one thread each, so that their waits overlap
 *   (at exit: 12 syscall tracepoints took 2.4 s one at a time);
 * - the probes of a process that exited are handed to a thread that closes them, so that a
 *   kubectl coming and going does not stall the ring buffer's reader for a second. The thread
 *   starts on the first hand-over. */
#ifndef BINDTRACE_LINK_REAPER_H
#define BINDTRACE_LINK_REAPER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct bpf_link;
struct reap_job;

/* Destroys n links (NULL entries skipped) and closes n_fds link fds made by hand (uprobe_multi;
 * -1 skipped), all at once from threads; one at a time when no thread can be had. Returns when
 * all are closed. */
void links__close_all(struct bpf_link **links, size_t n, const int *fds, size_t n_fds);

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
