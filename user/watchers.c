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
	void (*found)(void *ctx, pid_t api, uint64_t conn, pid_t peer);
	void *ctx;
};

static void on_accepted(void *ctx, uint64_t conn, const struct endpoint *local,
			const struct endpoint *remote)
{
	struct connected *c = ctx;
	pid_t peer = sockets__peer(c->w->sockets, c->api, local, remote, 0);

	if (!peer)
		return;
	if (c->found)
		c->found(c->ctx, c->api, conn, peer);
	if (peer != c->api)
		watchers__consider(c->w, peer);
}

void watchers__connected(struct watchers *w, pid_t api,
			 void (*found)(void *ctx, pid_t api, uint64_t conn, pid_t peer), void *ctx)
{
	struct connected c = { w, api, found, ctx };

	sockets__each_accepted(w->sockets, api, on_accepted, &c);
}
