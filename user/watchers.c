/* Watchers of the apiserver, traced as they show up: see watchers.h. */
#include <errno.h>

#include "watchers.h"

void watchers__consider(struct watchers *w, pid_t pid)
{
	int i;

	if (!w->enabled || pid <= 0 || targets__of(w->targets, pid))
		return;
	for (i = 0; i < w->n_tried && i < WATCHERS_TRIED; i++)
		if (w->tried[i] == pid)
			return;
	if (targets__attach_watcher(w->targets, pid) != -ENOSPC)
		w->tried[w->n_tried++ % WATCHERS_TRIED] = pid;
}

struct connected {
	struct watchers *w;
	pid_t api;
};

static void on_accepted(void *ctx, const struct endpoint *local, const struct endpoint *remote)
{
	struct connected *c = ctx;
	pid_t peer = sockets__peer(c->w->sockets, c->api, local, remote);

	if (peer && peer != c->api)
		watchers__consider(c->w, peer);
}

void watchers__attach_connected(struct watchers *w, pid_t api)
{
	struct connected c = { w, api };

	if (w->enabled)
		sockets__each_accepted(w->sockets, api, on_accepted, &c);
}
