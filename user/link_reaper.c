/* Closing links in parallel, and exited processes' uprobes off the event loop: see
 * link_reaper.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "link_reaper.h"

struct closing {
	struct bpf_link *link;
	int fd;
};

static void *close_one(void *arg)
{
	struct closing *c = arg;

	if (c->link)
		bpf_link__destroy(c->link);
	else
		close(c->fd);
	return NULL;
}

void links__close_all(struct bpf_link **links, size_t n, const int *fds, size_t n_fds)
{
	size_t total = n + n_fds, i;
	pthread_t *threads = calloc(total ? total : 1, sizeof(*threads));
	struct closing *c = calloc(total ? total : 1, sizeof(*c));
	bool *started = calloc(total ? total : 1, sizeof(*started));

	for (i = 0; i < total; i++) {
		struct closing one = { i < n ? links[i] : NULL, i < n ? -1 : fds[i - n] };

		if (!one.link && one.fd < 0)
			continue;
		if (threads && c && started) {
			c[i] = one;
			if (pthread_create(&threads[i], NULL, close_one, &c[i]) == 0) {
				started[i] = true;
				continue;
			}
		}
		close_one(&one);
	}
	for (i = 0; threads && c && started && i < total; i++)
		if (started[i])
			pthread_join(threads[i], NULL);
	free(threads);
	free(c);
	free(started);
}

pid_t links__close_all_detached(struct bpf_link **links, size_t n, const int *fds, size_t n_fds)
{
	int done[2], null;
	pid_t child;
	char c;

	if (!n && !n_fds)
		return 0;
	/* The last close of each descriptor is the one that waits: the child closes its copies
	 * only once this process has closed its own, which it learns from the end of this pipe. */
	if (pipe2(done, O_CLOEXEC) != 0) {
		links__close_all(links, n, fds, n_fds);
		return 0;
	}
	/* Nothing buffered may be written twice: once by each process. */
	fflush(NULL);
	child = fork();
	if (child == 0) {
		/* Only this thread exists here: no locks of the others are taken below but
		 * malloc's, which fork leaves usable. */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		/* A pipe reading the tracer's output sees its end when the tracer exits. */
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		close(done[1]);
		while (read(done[0], &c, 1) < 0 && errno == EINTR)
			;
		links__close_all(links, n, fds, n_fds);
		_exit(0);
	}
	close(done[0]);
	/* With the child holding each descriptor, these closes only drop a reference. Without it
	 * (fork failed), they wait. */
	links__close_all(links, n, fds, n_fds);
	close(done[1]);
	return child > 0 ? child : 0;
}

struct reap_job {
	struct bpf_link **links;
	size_t n;
	int fds[8];
	size_t n_fds;
	struct reap_job *next;
};

void link_reaper__init(struct link_reaper *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
}

static void reap_job__close(struct reap_job *job)
{
	links__close_all(job->links, job->n, job->fds, job->n_fds);
	free(job->links);
	free(job);
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
		reap_job__close(job);
	}
}

void link_reaper__add(struct link_reaper *r, struct bpf_link **links, size_t n, const int *fds,
		      size_t n_fds)
{
	struct reap_job *job = calloc(1, sizeof(*job));

	if (!job || n_fds > sizeof(job->fds) / sizeof(job->fds[0])) {
		links__close_all(links, n, fds, n_fds);
		free(links);
		free(job);
		return;
	}
	job->links = links;
	job->n = n;
	if (n_fds)
		memcpy(job->fds, fds, n_fds * sizeof(*fds));
	job->n_fds = n_fds;
	pthread_mutex_lock(&r->lock);
	if (!r->started && !r->done)
		r->started = pthread_create(&r->thread, NULL, reaper_run, r) == 0;
	if (r->started) {
		job->next = r->head;
		r->head = job;
		pthread_cond_signal(&r->cond);
		job = NULL;
	}
	pthread_mutex_unlock(&r->lock);
	if (job)
		reap_job__close(job);
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
