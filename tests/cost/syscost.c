/* What a syscall costs a process that is not traced: the best of 7 runs of N write(2)s of 64
 * bytes to /dev/null (a syscall the tracer's tracepoints run on) and N getppid(2)s (one they do
 * not: only the slow path every syscall takes while any syscall tracepoint is on), in ns a call.
 * tests/cost/others runs it without and with the tracer. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
	double best_write = 1e9, best_getppid = 1e9;
	char buf[64] = { 0 };
	int fd = open("/dev/null", O_WRONLY);

	if (fd < 0 || n < 1) {
		fprintf(stderr, "usage: syscost [CALLS]  (CALLS >= 1; needs /dev/null)\n");
		return 2;
	}
	for (int run = 0; run < 7; run++) {
		double t0 = now_s(), t1, t2;

		for (long i = 0; i < n; i++)
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				return 1;
		t1 = now_s();
		for (long i = 0; i < n; i++)
			syscall(SYS_getppid);
		t2 = now_s();
		if (t1 - t0 < best_write)
			best_write = t1 - t0;
		if (t2 - t1 < best_getppid)
			best_getppid = t2 - t1;
	}
	printf("write %.1f getppid %.1f\n", best_write / (double)n * 1e9,
	       best_getppid / (double)n * 1e9);
	return 0;
}
