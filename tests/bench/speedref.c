/*
 * speedref: how fast this machine runs a process that no probe and no tracepoint program
 * touches, window by window (tests/bench/scale's speed reference loop).
 *
 * The bench's control-plane CPU ratio moves by 10-20% between runs on these VMs, and every
 * process moves with it, kube-controller-manager (not probed) too. Whether that is the machine
 * or the tracer decides which ratio to trust. This process does a fixed piece of work in short
 * chunks, at a low duty cycle, and times each chunk on its own thread's CPU clock: two kinds of
 * work, one that only computes (xorshift in registers: the core's speed, and what shares it)
 * and one that chases pointers through a 16 MiB array (the caches and memory). Between chunks
 * it sleeps; it makes no other syscall than the clock reads and the sleep.
 *
 * Usage: speedref FILE [DUTY_PCT]  (DUTY_PCT: share of one core it works, 5 by default)
 * FILE is created and mapped; the counters it holds are updated after every chunk, under a
 * sequence number that is odd while they change (a reader retries then):
 *   u64 seq, chunks, alu_ns, mem_ns, wall_ns, alu_iters, mem_iters, 0
 * (alu_ns and mem_ns: the thread's CPU ns in each kind over all chunks; wall_ns: the chunks'
 * wall-clock ns, which exceed their CPU ns when the thread waited for a CPU inside one).
 * It exits when its parent does, or on SIGTERM/SIGINT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MEM_BYTES (16u << 20)
#define CHUNK_PART_NS 1000000ull /* each kind's work in one chunk, about */

enum { SEQ, CHUNKS, ALU_NS, MEM_NS, WALL_NS, ALU_ITERS, MEM_ITERS, NFIELDS = 8 };

static volatile sig_atomic_t stop;
static volatile uint64_t sink;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t alu_work(uint64_t iters)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (uint64_t i = 0; i < iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

/* The walk goes on where the last chunk left it, through the whole cycle: a chunk that
 * started from the same slot each time would find its path in the caches. */
static uint32_t at;

static uint64_t mem_work(const uint32_t *next, uint64_t steps)
{
	for (uint64_t i = 0; i < steps; i++)
		at = next[at];
	return at;
}

/* One cycle through every slot in a random order (Sattolo's shuffle): each load depends on
 * the one before and the prefetchers cannot guess it. */
static uint32_t *make_chain(void)
{
	uint32_t n = MEM_BYTES / sizeof(uint32_t);
	uint32_t *next = malloc(MEM_BYTES);
	uint64_t r = 88172645463325252ull;

	if (!next)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		next[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j, t;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		j = (uint32_t)(r % i);
		t = next[i];
		next[i] = next[j];
		next[j] = t;
	}
	return next;
}

/* Iterations of fn that take about CHUNK_PART_NS of CPU on this machine now: fixed for the
 * run, so every window's chunks do the same work. */
static uint64_t calibrate(int mem, const uint32_t *next)
{
	uint64_t iters = mem ? 20000 : 100000, best = UINT64_MAX;

	if (mem) /* once round the cycle first, so the calibration meets the memory a chunk does */
		sink += mem_work(next, MEM_BYTES / sizeof(uint32_t));
	for (int round = 0; round < 5; round++) {
		uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID), dt;

		sink += mem ? mem_work(next, iters) : alu_work(iters);
		dt = now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (dt && dt < best)
			best = dt;
	}
	return iters * CHUNK_PART_NS / (best ? best : 1) + 1;
}

int main(int argc, char **argv)
{
	int duty = argc > 2 ? atoi(argv[2]) : 5;
	volatile uint64_t *rec;
	uint32_t *next;
	uint64_t alu_iters, mem_iters;
	struct sigaction sa;
	int fd;

	if (argc < 2 || duty < 1 || duty > 100) {
		fprintf(stderr, "usage: speedref FILE [DUTY_PCT 1-100]\n");
		return 2;
	}
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, NFIELDS * sizeof(uint64_t)) < 0) {
		fprintf(stderr, "speedref: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	rec = mmap(NULL, NFIELDS * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (rec == MAP_FAILED) {
		fprintf(stderr, "speedref: mmap %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	next = make_chain();
	if (!next) {
		fprintf(stderr, "speedref: out of memory\n");
		return 1;
	}
	alu_iters = calibrate(0, next);
	mem_iters = calibrate(1, next);
	rec[ALU_ITERS] = alu_iters;
	rec[MEM_ITERS] = mem_iters;
	while (!stop) {
		uint64_t w0 = now_ns(CLOCK_MONOTONIC), c0, c1, c2, w1;
		struct timespec pause;
		uint64_t rest;

		c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		sink += alu_work(alu_iters);
		c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		sink += mem_work(next, mem_iters);
		c2 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		w1 = now_ns(CLOCK_MONOTONIC);
		__atomic_store_n(&rec[SEQ], rec[SEQ] + 1, __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		rec[CHUNKS] += 1;
		rec[ALU_NS] += c1 - c0;
		rec[MEM_NS] += c2 - c1;
		rec[WALL_NS] += w1 - w0;
		__atomic_store_n(&rec[SEQ], rec[SEQ] + 1, __ATOMIC_RELEASE);
		/* Sleep so the work is duty% of the time. */
		rest = (c2 - c0) * (100 - (uint64_t)duty) / (uint64_t)duty;
		pause.tv_sec = (time_t)(rest / 1000000000ull);
		pause.tv_nsec = (long)(rest % 1000000000ull);
		while (!stop && nanosleep(&pause, &pause) < 0 && errno == EINTR)
			;
	}
	return 0;
}
