/* The apiserver's clients on this host (kubectl get -w, a kubelet, a controller) are traced too,
 * so that the watch events they are sent are also seen arriving: a client's TLS probes are
 * attached the first time one of its connections to the apiserver shows up. One that is not a
 * Go TLS program, or is traced already, is left alone, and looked at once.
 *
 * Both calls read /proc and may attach probes: from the start or the poll loop. */
#ifndef BINDTRACE_WATCHERS_H
#define BINDTRACE_WATCHERS_H

#include <stdbool.h>
#include <stdint.h>
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

/* The clients already connected to the apiserver api (when it is attached): each one found on
 * this host is handed to found(ctx, api, conn, peer), so that its connection is named from its
 * first event on (a watch opened before attaching may carry a bind's event first), and is
 * considered as a watcher. */
void watchers__connected(struct watchers *w, pid_t api,
			 void (*found)(void *ctx, pid_t api, uint64_t conn, pid_t peer), void *ctx);

#endif
