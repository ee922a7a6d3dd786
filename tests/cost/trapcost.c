// SPDX-License-Identifier: GPL-2.0
/* The bare cost of a uprobe trap on this machine, and what uprobe_multi links change (issue 15):
 * calls a small function in a loop with nothing attached, with a single uprobe running a no-op
 * BPF program, and with the same program through one BPF_TRACE_UPROBE_MULTI link; then attaches
 * and detaches NPROBES probes (one per function) both ways and times it. Last, what a trap
 * costs a caller that reads many pages between two hits (pages_after_trap). Self-contained: the
 * no-op program is two instructions loaded with bpf(BPF_PROG_LOAD); links are made with the raw
 * bpf(BPF_LINK_CREATE) (Debian's libbpf 1.1 has no uprobe_multi wrapper, its headers no
 * constant).
 *
 * Build: cc -O2 -o build/trapcost tests/cost/trapcost.c
 * Run (root): build/trapcost [CALLS [NPROBES]]   (defaults 200000, 64) */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TRACE_UPROBE_MULTI 48 /* enum bpf_attach_type, Linux 6.6+ */

/* bpf_attr's link_create with the uprobe_multi member (Linux 6.6+), laid out as the kernel's. */
struct link_create_uprobe_multi {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad[17];
};

static volatile uint64_t sink;

#define F(i)                                                                                       \
	__attribute__((noinline)) void probe_fn_##i(uint64_t x)                                    \
	{                                                                                          \
		sink += x + i;                                                                     \
		__asm__ volatile("" ::: "memory");                                                 \
	}
#define F8(a) F(a##0) F(a##1) F(a##2) F(a##3) F(a##4) F(a##5) F(a##6) F(a##7)
F8(1) F8(2) F8(3) F8(4) F8(5) F8(6) F8(7) F8(8)
#define P(i) probe_fn_##i,
#define P8(a) P(a##0) P(a##1) P(a##2) P(a##3) P(a##4) P(a##5) P(a##6) P(a##7)
static void (*const fns[])(uint64_t) = { P8(1) P8(2) P8(3) P8(4) P8(5) P8(6) P8(7) P8(8) };
#define NFNS (int)(sizeof(fns) / sizeof(fns[0]))

/* One instruction kind per site: which ones the kernel emulates (one trap) rather than
 * single-steps out of line (a second trap). Go's entry is `cmp rsp, [r14+16]` then a jbe; its RET
 * sites are `ret`. */
__asm__(".text\n"
	".globl site_cmp\n site_cmp: cmp 16(%rsp), %rsp\n jbe 1f\n 1: ret\n"
	".globl site_ret\n site_ret: ret\n"
	".globl site_cmp_near\n site_cmp_near: cmp 16(%rsp), %rsp\n"
	" .byte 0x0f, 0x86, 0x00, 0x00, 0x00, 0x00\n ret\n"
	".globl site_push\n site_push: push %rbp\n pop %rbp\n ret\n"
	".globl site_nop5\n site_nop5: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n ret\n");
void site_cmp(void);
void site_ret(void);
void site_cmp_near(void);
void site_push(void);
void site_nop5(void);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int sys_bpf(int cmd, void *attr, unsigned int size)
{
	return (int)syscall(__NR_bpf, cmd, attr, size);
}

static int load_noop(uint32_t expected_attach_type)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_KPROBE;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (uint64_t)(uintptr_t) "GPL";
	attr.expected_attach_type = expected_attach_type;
	return sys_bpf(BPF_PROG_LOAD, &attr, sizeof(attr));
}

/* File offset of a function of this executable (non-PIE or PIE: through its PT_LOAD). */
static uint64_t file_offset(void *fn)
{
	static Elf64_Ehdr eh;
	static Elf64_Phdr ph[32];
	static uintptr_t base;
	static int loaded;
	uintptr_t vaddr = (uintptr_t)fn;
	int i;

	if (!loaded) {
		int fd = open("/proc/self/exe", O_RDONLY);
		FILE *maps = fopen("/proc/self/maps", "r");
		char line[512];

		if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
		    pread(fd, ph, sizeof(ph[0]) * eh.e_phnum, (off_t)eh.e_phoff) < 0 || !maps) {
			perror("read /proc/self/exe");
			exit(1);
		}
		close(fd);
		base = 0;
		if (eh.e_type == ET_DYN && fgets(line, sizeof(line), maps))
			base = strtoull(line, NULL, 16);
		fclose(maps);
		loaded = 1;
	}
	vaddr -= base;
	for (i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && vaddr >= ph[i].p_vaddr &&
		    vaddr < ph[i].p_vaddr + ph[i].p_filesz)
			return vaddr - ph[i].p_vaddr + ph[i].p_offset;
	fprintf(stderr, "no file offset for %p\n", fn);
	exit(1);
}

static int uprobe_pmu_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	int t = -1;

	if (!f || fscanf(f, "%d", &t) != 1)
		t = -1;
	if (f)
		fclose(f);
	return t;
}

static int attach_single(int prog, const char *path, uint64_t off)
{
	struct perf_event_attr pa;
	int pfd;

	memset(&pa, 0, sizeof(pa));
	pa.size = sizeof(pa);
	pa.type = (uint32_t)uprobe_pmu_type();
	pa.config1 = (uint64_t)(uintptr_t)path;
	pa.config2 = off;
	pfd = (int)syscall(__NR_perf_event_open, &pa, getpid(), -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog) || ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0)) {
		int err = -errno;

		close(pfd);
		return err;
	}
	return pfd;
}

static int attach_multi(int prog, const char *path, const uint64_t *offs, uint32_t n)
{
	struct link_create_uprobe_multi a;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)prog;
	a.attach_type = TRACE_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offs;
	a.cnt = n;
	a.pid = (uint32_t)getpid();
	return sys_bpf(BPF_LINK_CREATE, &a, sizeof(a));
}

static double loop_ns(uint64_t calls)
{
	uint64_t t0 = now_ns(), i;

	for (i = 0; i < calls; i++)
		probe_fn_10(i);
	return (double)(now_ns() - t0) / (double)calls;
}

/* Calls of site_cmp_near (Go's entry: the probe sits on its jbe rel32), each followed by a read of one line in each of `pages` pages
 * (the same pages every call, a line at a different offset in each): ns per call. */
static double pages_loop_ns(uint64_t calls, const volatile uint8_t *mem, uint32_t pages)
{
	uint64_t t0 = now_ns(), i, sum = 0;
	uint32_t p;

	for (i = 0; i < calls; i++) {
		site_cmp_near();
		for (p = 0; p < pages; p++)
			sum += mem[(uint64_t)p * 4096 + (p * 64u) % 4096u];
	}
	sink += sum;
	return (double)(now_ns() - t0) / (double)calls;
}

/* What a trap costs beyond itself: a big process touches many pages between two probe hits,
 * and if the trap's round trip through the kernel (and, in a VM, the hypervisor) empties the
 * TLB or the caches, the caller refills them afterwards on its own CPU time, which the bare
 * trap above (a loop that touches nothing) does not show. For each number of pages touched
 * between calls: ns per call unprobed and probed (through `prog` on `off`, the jbe rel32 of
 * site_cmp_near, uprobe_multi when `multi`); the probed less the unprobed, less the bare trap
 * of the first row (no pages), is that cost. */
static void pages_after_trap(int prog, int multi, const char *path, uint64_t off, uint64_t calls)
{
	static const uint32_t pages[] = { 0, 16, 128, 1024 };
	uint32_t most = pages[sizeof(pages) / sizeof(pages[0]) - 1];
	uint8_t *mem = mmap(NULL, (size_t)most * 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned int k;

	if (mem == MAP_FAILED) {
		perror("mmap");
		return;
	}
	memset(mem, 1, (size_t)most * 4096);
	printf("what a trap costs the pages its caller reads next (pages read between calls: ns "
	       "per call unprobed / probed):");
	for (k = 0; k < sizeof(pages) / sizeof(pages[0]); k++) {
		uint64_t n = calls / 20 / (1 + pages[k] / 16);
		double without, with;
		int fd;

		pages_loop_ns(n / 10 + 1, mem, pages[k]); /* warm up */
		without = pages_loop_ns(n, mem, pages[k]);
		fd = multi ? attach_multi(prog, path, &off, 1) : attach_single(prog, path, off);
		if (fd < 0) {
			printf(" %u: cannot attach;", pages[k]);
			continue;
		}
		with = pages_loop_ns(n, mem, pages[k]);
		close(fd);
		printf(" %u: %.0f / %.0f (+%.0f);", pages[k], without, with, with - without);
	}
	printf("\n");
	munmap(mem, (size_t)most * 4096);
}

int main(int argc, char **argv)
{
	uint64_t calls = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
	int nprobes = argc > 2 ? atoi(argv[2]) : 64, i, single, multi, fd;
	uint64_t offs[NFNS], t0;
	int fds[NFNS];
	char path[4096];
	ssize_t n;
	double bare, one, many;

	if (nprobes < 1 || nprobes > NFNS)
		nprobes = NFNS;
	n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (n < 0)
		return 1;
	path[n] = '\0';
	for (i = 0; i < NFNS; i++)
		offs[i] = file_offset((void *)fns[i]);
	single = load_noop(0);
	multi = load_noop(TRACE_UPROBE_MULTI);
	if (single < 0) {
		perror("load no-op program");
		return 1;
	}
	loop_ns(calls / 10); /* warm up */
	bare = loop_ns(calls);

	fd = attach_single(single, path, offs[0]);
	if (fd < 0) {
		fprintf(stderr, "uprobe: %s\n", strerror(-fd));
		return 1;
	}
	one = loop_ns(calls / 20);
	close(fd);

	many = -1;
	if (multi >= 0) {
		fd = attach_multi(multi, path, offs, 1);
		if (fd >= 0) {
			many = loop_ns(calls / 20);
			close(fd);
		} else {
			fprintf(stderr, "uprobe_multi link: %s\n", strerror(errno));
		}
	} else {
		fprintf(stderr, "uprobe_multi program load: %s\n", strerror(errno));
	}
	printf("per call: bare %.1f ns, single uprobe + no-op BPF %.0f ns (trap %.0f ns), "
	       "uprobe_multi + no-op BPF %.0f ns (trap %.0f ns)\n",
	       bare, one, one - bare, many, many - bare);
	{
		static const struct {
			const char *name;
			void (*fn)(void);
			int at;
		} sites[] = {
			{ "cmp (Go's entry)", site_cmp, 0 }, { "jbe after it", site_cmp, 5 },
			{ "jbe rel32 (Go's)", site_cmp_near, 5 },
			{ "ret", site_ret, 0 },		       { "push rbp", site_push, 0 },
			{ "nop5", site_nop5, 0 },
		};
		uint64_t k, m = calls / 40, t;

		printf("per hit by probed instruction:");
		for (i = 0; i < (int)(sizeof(sites) / sizeof(sites[0])); i++) {
			fd = attach_single(single, path, file_offset((void *)sites[i].fn) +
							   (uint64_t)sites[i].at);
			if (fd < 0) {
				printf(" %s: %s;", sites[i].name, strerror(-fd));
				continue;
			}
			t = now_ns();
			for (k = 0; k < m; k++)
				sites[i].fn();
			printf(" %s %.0f ns;", sites[i].name, (double)(now_ns() - t) / (double)m);
			close(fd);
		}
		printf("\n");
		/* The tracer attaches through uprobe_multi links where the kernel has them: the same
		 * sites that way. */
		if (multi >= 0) {
			printf("per hit by probed instruction, uprobe_multi:");
			for (i = 0; i < (int)(sizeof(sites) / sizeof(sites[0])); i++) {
				uint64_t off = file_offset((void *)sites[i].fn) + (uint64_t)sites[i].at;

				fd = attach_multi(multi, path, &off, 1);
				if (fd < 0) {
					printf(" %s: %s;", sites[i].name, strerror(errno));
					continue;
				}
				t = now_ns();
				for (k = 0; k < m; k++)
					sites[i].fn();
				printf(" %s %.0f ns;", sites[i].name,
				       (double)(now_ns() - t) / (double)m);
				close(fd);
			}
			printf("\n");
		}
	}
	t0 = file_offset((void *)site_cmp_near) + 5; /* its jbe rel32 */
	if (multi >= 0)
		pages_after_trap(multi, 1, path, t0, calls);
	else
		pages_after_trap(single, 0, path, t0, calls);

	t0 = now_ns();
	for (i = 0; i < nprobes; i++) {
		fds[i] = attach_single(single, path, offs[i]);
		if (fds[i] < 0) {
			fprintf(stderr, "uprobe %d: %s\n", i, strerror(-fds[i]));
			return 1;
		}
	}
	printf("%d single uprobes: attach %.1f ms", nprobes, (double)(now_ns() - t0) / 1e6);
	t0 = now_ns();
	for (i = 0; i < nprobes; i++)
		close(fds[i]);
	printf(", detach %.1f ms\n", (double)(now_ns() - t0) / 1e6);
	if (multi >= 0) {
		t0 = now_ns();
		fd = attach_multi(multi, path, offs, (uint32_t)nprobes);
		if (fd < 0) {
			fprintf(stderr, "uprobe_multi link of %d: %s\n", nprobes, strerror(errno));
			return 1;
		}
		printf("one uprobe_multi link of %d: attach %.1f ms", nprobes,
		       (double)(now_ns() - t0) / 1e6);
		t0 = now_ns();
		close(fd);
		printf(", detach %.1f ms\n", (double)(now_ns() - t0) / 1e6);
	}
	return 0;
}
