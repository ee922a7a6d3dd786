/* link_reaper: descriptors closed all at once, here or by a child at exit. Pipes stand in for
 * the link descriptors: a pipe's read end sees its end only when every copy of the write end is
 * closed, so it tells whether the child closed its copies too. */
#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "link_reaper.h"

#define N 4

static void make_pipes(int r[N], int w[N])
{
	int i, p[2];

	for (i = 0; i < N; i++) {
		if (pipe(p) != 0) {
			r[i] = w[i] = -1;
			continue;
		}
		r[i] = p[0];
		w[i] = p[1];
	}
}

static bool closed_here(int fd)
{
	return fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

/* Every write end closed everywhere: each read end reads its end (0), without blocking. */
static int ends_seen(const int r[N])
{
	int i, seen = 0;
	char c;

	for (i = 0; i < N; i++) {
		fcntl(r[i], F_SETFL, O_NONBLOCK);
		if (read(r[i], &c, 1) == 0)
			seen++;
		close(r[i]);
	}
	return seen;
}

static void check_close_all(void)
{
	int r[N], w[N], i;

	make_pipes(r, w);
	links__close_all(NULL, 0, w, N);
	for (i = 0; i < N; i++)
		CHECK(closed_here(w[i]), "write end %d closed", i);
	CHECK_INT(ends_seen(r), N);
}

static void check_detached(void)
{
	int r[N], w[N], i, status = -1;
	pid_t child;

	make_pipes(r, w);
	child = links__close_all_detached(NULL, 0, w, N);
	CHECK(child > 0, "a child closes them (pid %d)", (int)child);
	for (i = 0; i < N; i++)
		CHECK(closed_here(w[i]), "write end %d closed here at once", i);
	CHECK(child > 0 && waitpid(child, &status, 0) == child, "the child is waited for");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child exits 0 (status %#x)",
	      status);
	/* Its copies went with it: nothing holds a write end any more. */
	CHECK_INT(ends_seen(r), N);
	/* Nothing to close: no child. */
	CHECK_INT(links__close_all_detached(NULL, 0, NULL, 0), 0);
}

int main(void)
{
	check_close_all();
	check_detached();
	return check_summary("link_reaper");
}
