/* Closing exited processes' uprobes off the event loop: see link_reaper.h. */
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "link_reaper.h"

struct reap_job {
	struct bpf_link **links;
	size_t n;
	struct reap_job *next;
};

void link_reaper__init(struct link_reaper *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
}

static void close_links(struct bpf_link **links, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	free(links);
}

static void *reaper_run(void *arg)
{
	struct link_reaper *r = arg;
	struct reap_job *job;

	for (;;) {
		pthread_mutex_lock(&r->lock);
		while (!r->head && !r->done)
			pthread_cond_wait(&r->cond, &r->lock);
		job = r->head;
		if (job)
			r->head = job->next;
		pthread_mutex_unlock(&r->lock);
		if (!job)
			return NULL;
		close_links(job->links, job->n);
		free(job);
	}
}

void link_reaper__add(struct link_reaper *r, struct bpf_link **links, size_t n)
{
	struct reap_job *job = calloc(1, sizeof(*job));

	pthread_mutex_lock(&r->lock);
	if (job && !r->started && !r->done)
		r->started = pthread_create(&r->thread, NULL, reaper_run, r) == 0;
	if (job && r->started) {
		job->links = links;
		job->n = n;
		job->next = r->head;
		r->head = job;
		pthread_cond_signal(&r->cond);
		links = NULL;
	}
	pthread_mutex_unlock(&r->lock);
	if (links) {
		close_links(links, n);
		free(job);
	}
}

void link_reaper__finish(struct link_reaper *r)
{
	pthread_mutex_lock(&r->lock);
	r->done = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	if (r->started)
		pthread_join(r->thread, NULL);
	r->started = false;
}
