/* The apiserver's clients on this host (kubectl get -w, a kubelet, a controller) are traced too,
 * so that the watch events they are sent are also seen arriving: a client's TLS probes are
 * attached the first time one of its connections to the apiserver shows up. One that is not a
 * Go TLS program, or is traced already, is left alone, and looked at once.
 *
 * Both calls read /proc and may attach probes: from the start or the poll loop. */
#ifndef BINDTRACE_WATCHERS_H
#define BINDTRACE_WATCHERS_H

#include <stdbool.h>
#include <sys/types.h>

#include "sockets.h"
#include "targets.h"

#define WATCHERS_TRIED 64

struct watchers {
	bool enabled; /* --no-watchers turns it off */
	struct targets *targets;
	struct sockets *sockets;
	pid_t tried[WATCHERS_TRIED]; /* peers already looked at (attached or not Go TLS) */
	int n_tried;
};

/* pid is a local client of a traced apiserver: traced as a watcher, if it can be, the first time. */
void watchers__consider(struct watchers *w, pid_t pid);
/* At start: the clients already connected to the apiserver api, so that the first watch events
 * after attaching are seen arriving too. */
void watchers__attach_connected(struct watchers *w, pid_t api);

#endif
