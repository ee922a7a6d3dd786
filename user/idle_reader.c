/* The reader that gives way to the control plane while the ring buffer holds: see idle_reader.h. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "idle_reader.h"
#include "session.h"
#include "util.h"

/* The reader catches up once a quarter of the ring waits, and gives way again at a sixteenth.
 * Half, at first, left it too little: beside two busy loops the reader at its own priority had
 * about 14% of a CPU, and a ring half full filled up before it was read down (drops in one of
 * four bursts of 500 binds). */
#define CATCH_UP_AT(size) ((size) / 4)
#define GIVE_WAY_AT(size) ((size) / 16)
/* While a sixteenth waits, the watchdog looks this often: a quarter of a 4 MiB ring fills in
 * 100 ms at 10 MB/s, more than a burst at 1000 kubelets writes. Otherwise at least every
 * WATCH_IDLE_MS: the ring's wakeup at an eighth can be missed (two CPUs' records that cross the
 * mark together each find it crossed already), and a watchdog left asleep then let a ring fill
 * (24,151 drops in one of four bursts beside busy loops). */
#define WATCH_MS 10
#define WATCH_IDLE_MS 50
/* Records waiting, and the reader has not ended a step (a read and the work between reads) for
 * this long: it is starved, and goes back to its priority until it has ended one. Beside a busy
 * loop per CPU a reader under SCHED_IDLE ran so seldom that a `kubectl get -w` started there was
 * attached 1.3-6.2 s later (0.15 s at nice 0), its first binds missing its receipt. A reader that
 * keeps up ends a step at least every SESSION_POLL_MS (50 ms). */
#define STARVED_NS (250 * 1000000ull)

struct idle_reader {
	const struct session *session;
	pid_t reader; /* the reading thread's tid */
	int policy;   /* the one it started with, for catching up */
	struct sched_param param;
	int epoll_fd, stop_fd; /* the watchdog sleeps on the ring's fd and stop_fd */
	pthread_t watchdog;
	bool watching;	      /* the thread runs */
	bool said_refused;    /* the watchdog's one line on a refused catch-up */
	_Atomic bool hold;    /* idle_reader__hold */
	bool stopping;	      /* told to stop: every thread back for good */
	pthread_mutex_t lock; /* what follows */
	bool caught_up;	      /* the reader at its own priority, reading down */
	uint64_t catch_ups, starved, caught_up_ns, caught_up_since_ns;
};

/* The watchdog's one line when the reader could not be put back (idle_reader__can_catch_up
 * said it could at start: the tracer's capabilities changed since). */
static void say_refused(struct idle_reader *r, int err)
{
	if (r->said_refused)
		return;
	r->said_refused = true;
	fprintf(stderr,
		"bindtrace: --nice idle: the reader could not be put back at its priority (%s); "
		"a busy node may fill the ring buffer\n",
		strerror(-err));
}

static int set_policy(pid_t tid, int policy)
{
	struct sched_param param = { 0 };

	return sched_setscheduler(tid, policy, &param) ? -errno : 0;
}

/* tid back at the policy (and its priority) the tracer started with. */
static int set_started_policy(const struct idle_reader *r, pid_t tid)
{
	return sched_setscheduler(tid, r->policy, &r->param) ? -errno : 0;
}

/* A thread that ended since the list was read is no failure. */
static int restore_policy(pid_t tid, void *ctx)
{
	int err = set_started_policy(ctx, tid);

	return err == -ESRCH ? 0 : err;
}

/* The watchdog alone changes the reader's policy: the reader, once SCHED_IDLE, may be held off
 * the CPU at any instruction, so it holds nothing the watchdog waits for. lock guards only the
 * counts, for idle_reader__stats. */
static void *watch(void *arg)
{
	struct idle_reader *r = arg;
	uint64_t size = session__ring_size(r->session);
	struct epoll_event ev;

	for (;;) {
		uint64_t waiting = session__ring_waiting(r->session), now = util__monotonic_ns();
		uint64_t step = session__last_step_ns(r->session);
		bool hold = atomic_load(&r->hold), full = waiting >= CATCH_UP_AT(size);
		bool starved = waiting && step && now > step + STARVED_NS;
		int n, err;

		/* Told to stop (SIGINT, SIGTERM, session__stop, the deadline): every thread back
		 * at the policy it started with, for good, so that a busy node cannot hold the
		 * exit off the CPU. A SIGINT at start, beside a busy loop per CPU, left the reader
		 * under SCHED_IDLE in its first allocations for over 30 s (stop 63), since no step
		 * had begun for it to be seen starved. */
		if (!r->stopping && session__stop_requested()) {
			r->stopping = true;
			err = util__each_thread(restore_policy, r);
			if (err)
				say_refused(r, err);
		}
		/* The reader back at the policy it started with (its nice is kept) until it has
		 * read the ring down and ended a step since, and while it is held there. */
		if (!r->caught_up && (full || hold || starved || r->stopping)) {
			err = set_started_policy(r, r->reader);
			if (err) {
				say_refused(r, err);
			} else {
				pthread_mutex_lock(&r->lock);
				r->caught_up = true;
				r->catch_ups += full;
				r->starved += starved && !full && !hold && !r->stopping;
				r->caught_up_since_ns = now;
				pthread_mutex_unlock(&r->lock);
			}
		} else if (r->caught_up && !hold && !r->stopping && waiting <= GIVE_WAY_AT(size) &&
			   step >= r->caught_up_since_ns && !set_policy(r->reader, SCHED_IDLE)) {
			pthread_mutex_lock(&r->lock);
			r->caught_up = false;
			r->caught_up_ns += now - r->caught_up_since_ns;
			pthread_mutex_unlock(&r->lock);
		}
		/* The ring wakes its sleepers when an eighth of it waits (capture.bpf.c
		 * ringbuf_flags); edge-triggered, so only that wakes this one early. */
		n = epoll_wait(r->epoll_fd, &ev, 1,
			       r->caught_up || waiting >= GIVE_WAY_AT(size) ? WATCH_MS
									    : WATCH_IDLE_MS);
		if (n > 0 && ev.data.fd == r->stop_fd)
			break;
		if (n < 0 && errno != EINTR)
			break;
	}
	return NULL;
}

/* On a thread of its own: SCHED_IDLE, then back (the result its exit value). */
static void *try_catch_up(void *arg)
{
	const struct sched_param *param = arg;
	int policy = sched_getscheduler(0), err;

	if (policy < 0)
		return (void *)(intptr_t)-errno;
	err = set_policy(0, SCHED_IDLE);
	if (!err && sched_setscheduler(0, policy, param))
		err = -errno;
	return (void *)(intptr_t)err;
}

int idle_reader__can_catch_up(void)
{
	struct sched_param param;
	pthread_t thread;
	void *result;
	int err;

	if (sched_getparam(0, &param))
		return -errno;
	err = -pthread_create(&thread, NULL, try_catch_up, &param);
	if (err)
		return err;
	pthread_join(thread, &result);
	return (int)(intptr_t)result;
}

void idle_reader__hold(struct idle_reader *r, bool hold)
{
	if (r)
		atomic_store(&r->hold, hold);
}

static int watch_fd(int epoll_fd, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int make_idle(pid_t tid, void *ctx)
{
	(void)ctx;
	return set_policy(tid, SCHED_IDLE);
}

struct idle_reader *idle_reader__start(const struct session *session)
{
	struct idle_reader *r = calloc(1, sizeof(*r));
	pthread_attr_t attr;
	const char *what;
	int err;

	if (!r) {
		fprintf(stderr, "bindtrace: --nice idle: out of memory\n");
		return NULL;
	}
	r->session = session;
	r->reader = gettid();
	r->epoll_fd = r->stop_fd = -1;
	pthread_mutex_init(&r->lock, NULL);
	/* The watchdog keeps the policy the tracer started with. */
	what = "sched_getparam";
	r->policy = sched_getscheduler(0);
	if (r->policy < 0 || sched_getparam(0, &r->param))
		goto fail_errno;
	what = "epoll";
	r->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epoll_fd < 0)
		goto fail_errno;
	r->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (r->stop_fd < 0)
		goto fail_errno;
	err = watch_fd(r->epoll_fd, session__ring_fd(session), EPOLLIN | EPOLLET);
	if (!err)
		err = watch_fd(r->epoll_fd, r->stop_fd, EPOLLIN);
	if (err)
		goto fail;
	what = "SCHED_IDLE";
	err = util__each_thread(make_idle, NULL);
	if (err)
		goto fail;
	what = "watchdog thread";
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, r->policy);
	pthread_attr_setschedparam(&attr, &r->param);
	err = -pthread_create(&r->watchdog, &attr, watch, r);
	pthread_attr_destroy(&attr);
	if (err)
		goto fail;
	r->watching = true;
	pthread_setname_np(r->watchdog, "idle-watchdog");
	return r;
fail_errno:
	err = -errno;
fail:
	fprintf(stderr, "bindtrace: --nice idle: %s: %s\n", what, strerror(-err));
	if (r->policy >= 0) /* read: the reader back at it (it may have been made idle) */
		set_started_policy(r, 0);
	idle_reader__free(r);
	errno = -err;
	return NULL;
}

void idle_reader__stats(struct idle_reader *r, uint64_t now_ns, struct idle_reader_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	out->catch_ups = r->catch_ups;
	out->starved = r->starved;
	out->caught_up_ns = r->caught_up_ns + (r->caught_up ? now_ns - r->caught_up_since_ns : 0);
	pthread_mutex_unlock(&r->lock);
}

void idle_reader__free(struct idle_reader *r)
{
	uint64_t one = 1;

	if (!r)
		return;
	if (r->watching && write(r->stop_fd, &one, sizeof(one)) == sizeof(one))
		pthread_join(r->watchdog, NULL);
	if (r->stop_fd >= 0)
		close(r->stop_fd);
	if (r->epoll_fd >= 0)
		close(r->epoll_fd);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
