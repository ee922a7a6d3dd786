/* Closing a uprobe takes the kernel about 0.1 s (it waits for a grace period): the probes of a
 * process that exited are handed to a thread that closes them, so that a kubectl coming and going
 * does not stall the ring buffer's reader for a second. The thread starts on the first hand-over. */
#ifndef BINDTRACE_LINK_REAPER_H
#define BINDTRACE_LINK_REAPER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct bpf_link;
struct reap_job;

struct link_reaper {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct reap_job *head;
	pthread_t thread;
	bool started, done;
};

void link_reaper__init(struct link_reaper *r);
/* Takes the links (an array of n from malloc, now the reaper's) to close them in the background,
 * or closes them here when no thread can be had. */
void link_reaper__add(struct link_reaper *r, struct bpf_link **links, size_t n);
/* Waits until every link handed over is closed; the reaper takes no more after this. */
void link_reaper__finish(struct link_reaper *r);

#endif
