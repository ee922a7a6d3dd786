/* tests/cost/micro: see micro.bpf.c. Usage: micro [CALLS] (200000). Runs the calls twice: with
 * the cache as the calls leave it, then with 64 MiB touched between calls (cold). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "micro.skel.h"

#define MAX_PROGS 32

struct stats {
	const char *name;
	__u64 runs, ns;
};

static int ignore(void *ctx, void *data, size_t len)
{
	(void)ctx, (void)data, (void)len;
	return 0;
}

static int snapshot(struct micro_bpf *skel, struct stats *out)
{
	struct bpf_program *p;
	int n = 0;

	bpf_object__for_each_program(p, skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		if (n == MAX_PROGS)
			break;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			return -1;
		out[n].name = bpf_program__name(p);
		out[n].runs = info.run_cnt;
		out[n].ns = info.run_time_ns;
		n++;
	}
	return n;
}

static void run(struct micro_bpf *skel, struct ring_buffer *rb, long calls, bool cold)
{
	static struct stats before[MAX_PROGS], after[MAX_PROGS];
	size_t junk_len = 64 << 20;
	volatile char *junk = malloc(junk_len);
	char *buf = malloc(4096);
	double empty = 0;
	int n;

	if (!junk || !buf) {
		fprintf(stderr, "micro: out of memory\n");
		exit(1);
	}
	memset((char *)junk, 1, junk_len);
	memset(buf, 7, 4096);
	n = snapshot(skel, before);
	for (long i = 0; i < calls; i++) {
		if (cold)
			for (size_t j = 0; j < junk_len; j += 64 * 7)
				junk[j]++;
		syscall(SYS_getppid, buf);
		if (i % 100 == 0)
			ring_buffer__consume(rb);
	}
	if (n < 0 || snapshot(skel, after) != n) {
		fprintf(stderr, "micro: cannot read the programs' run times\n");
		exit(1);
	}
	printf("%s: %ld calls; ns per operation (the program's mean less p_empty's, over 10)\n",
	       cold ? "cold (64 MiB touched between calls)" : "warm", calls);
	for (int i = 0; i < n; i++) {
		__u64 runs = after[i].runs - before[i].runs;
		double mean = runs ? (double)(after[i].ns - before[i].ns) / runs : 0;

		if (!strcmp(after[i].name, "p_empty")) {
			empty = mean;
			printf("  %-18s %8.0f ns a run\n", after[i].name, mean);
		} else {
			printf("  %-18s %8.1f\n", after[i].name, (mean - empty) / 10);
		}
	}
	free((void *)junk);
	free(buf);
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 200000;
	struct micro_bpf *skel;
	struct ring_buffer *rb;
	__u32 zero = 0, pid = (__u32)getpid();
	__u8 one = 1, value[88] = { 1 };

	if (calls <= 0) {
		fprintf(stderr, "usage: micro [CALLS]\n");
		return 2;
	}
	skel = micro_bpf__open_and_load();
	if (!skel) {
		perror("micro: load");
		return 1;
	}
	bpf_map_update_elem(bpf_map__fd(skel->maps.cfg), &zero, &pid, BPF_ANY);
	for (__u32 k = 100; k < 103; k++)
		bpf_map_update_elem(bpf_map__fd(skel->maps.small_hash), &k, &one, BPF_ANY);
	for (__u64 k = 1; k <= 300; k++)
		bpf_map_update_elem(bpf_map__fd(skel->maps.big_lru), &k, value, BPF_ANY);
	if (micro_bpf__attach(skel)) {
		perror("micro: attach");
		return 1;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.rb), ignore, NULL, NULL);
	if (!rb) {
		perror("micro: ring buffer");
		return 1;
	}
	run(skel, rb, calls, false);
	run(skel, rb, calls, true);
	ring_buffer__free(rb);
	micro_bpf__destroy(skel);
	return 0;
}
