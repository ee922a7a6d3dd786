/* `bindtrace --check`: proves each kernel feature bindtrace needs by using it on this process —
 * a uprobe on a function here, a syscall tracepoint, fentry, a ring buffer round trip — rather
 * than trusting feature probes. Prints one line per requirement; exits 1 naming what is missing. */
#include <errno.h>
#include <stdarg.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "commands.h"
#include "selfcheck.skel.h"
#include "selfcheck_fentry.skel.h"
#include "util.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

#include "selfcheck.h"

struct check_state {
	int failed;
	char missing[512];
};

static void report(struct check_state *st, const char *name, int ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void report(struct check_state *st, const char *name, int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%-4s  %-20s ", ok > 0 ? "ok" : ok == 0 ? "FAIL" : "skip", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (ok <= 0)
		st->failed++;
	if (ok == 0) {
		if (strlen(st->missing) + strlen(name) + 3 < sizeof(st->missing)) {
			if (st->missing[0])
				strcat(st->missing, ", ");
			strcat(st->missing, name);
		}
	}
}

static int has_cap(const struct __user_cap_data_struct data[2], int cap)
{
	return !!(data[cap / 32].effective & (1u << (cap % 32)));
}

int selfcheck__preflight(const char *prefix)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data) == 0 && !has_cap(data, CAP_SYS_ADMIN) &&
	    !(has_cap(data, CAP_BPF) && has_cap(data, CAP_PERFMON))) {
		fprintf(stderr,
			"%s: needs root, or CAP_BPF and CAP_PERFMON (CAP_SYS_ADMIN where the "
			"kernel keeps uprobes to it; see bindtrace --check)\n",
			prefix);
		return -1;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		fprintf(stderr,
			"%s: no kernel BTF at /sys/kernel/btf/vmlinux: %s (the kernel needs "
			"CONFIG_DEBUG_INFO_BTF; see bindtrace --check)\n",
			prefix, strerror(errno));
		return -1;
	}
	return 0;
}

/* The uprobe target: noinline and used, so it exists at a stable address in this binary. */
__attribute__((noinline, used)) int bindtrace_check_marker(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

/* File offset of a function of this process, from /proc/self/maps (works for PIE and stripped). */
static long self_file_offset(const void *fn, char *path, size_t path_len)
{
	unsigned long start, end, off, addr = (unsigned long)fn;
	char line[512], perms[8], file[256];
	FILE *maps = fopen("/proc/self/maps", "r");
	long result = -ENOENT;

	if (!maps)
		return -errno;
	while (fgets(line, sizeof(line), maps)) {
		file[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &start, &end, perms, &off, file) <
		    4)
			continue;
		if (addr < start || addr >= end || perms[2] != 'x' || file[0] != '/')
			continue;
		snprintf(path, path_len, "%s", file);
		result = (long)(addr - start + off);
		break;
	}
	fclose(maps);
	return result;
}

static int ring_seen;

static int on_ring(void *ctx, void *data, size_t len)
{
	(void)ctx;
	if (len >= sizeof(__u32) && *(__u32 *)data == SELFCHECK_RING_MAGIC)
		ring_seen++;
	return 0;
}

static void check_privileges(struct check_state *st, int *privileged)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};
	int bpf, perfmon, admin;

	if (syscall(SYS_capget, &hdr, data) != 0) {
		report(st, "privileges", 0, "capget: %s", strerror(errno));
		*privileged = 0;
		return;
	}
	bpf = has_cap(data, CAP_BPF);
	perfmon = has_cap(data, CAP_PERFMON);
	admin = has_cap(data, CAP_SYS_ADMIN);
	*privileged = admin || (bpf && perfmon);
	report(st, "privileges", *privileged,
	       "uid %u, CAP_BPF %s, CAP_PERFMON %s, CAP_SYS_ADMIN %s%s", getuid(),
	       bpf ? "yes" : "no", perfmon ? "yes" : "no", admin ? "yes" : "no",
	       *privileged ? "" : " (need root or CAP_BPF+CAP_PERFMON)");
}

static void check_btf(struct check_state *st)
{
	struct btf *btf;

	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		report(st, "btf", 0,
		       "/sys/kernel/btf/vmlinux: %s (kernel needs CONFIG_DEBUG_INFO_BTF)",
		       strerror(errno));
		return;
	}
	btf = btf__load_vmlinux_btf();
	if (!btf) {
		report(st, "btf", 0, "/sys/kernel/btf/vmlinux does not parse: %s", strerror(errno));
		return;
	}
	report(st, "btf", 1, "/sys/kernel/btf/vmlinux, %u types", btf__type_cnt(btf));
	btf__free(btf);
}

/* /proc/self/status's Seccomp: 0 none, 1 strict, 2 a filter; -1 unknown. */
static int seccomp_mode(void)
{
	char line[128];
	int mode = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode;
}

static void check_features(struct check_state *st, int privileged)
{
	struct selfcheck_bpf *skel = NULL;
	struct ring_buffer *ring = NULL;
	struct bpf_link *uprobe = NULL, *tracepoint = NULL;
	const char *tracefs = NULL;
	bool mounted = false;
	char exe[256] = "";
	long offset;
	__u64 hits[HIT_MAX] = {};
	__u32 i;
	int err;

	if (!privileged) {
		report(st, "ring buffer", -1, "not checked: needs the privileges above");
		report(st, "uprobes", -1, "not checked: needs the privileges above");
		report(st, "syscall tracepoints", -1, "not checked: needs the privileges above");
		return;
	}
	skel = selfcheck_bpf__open();
	if (!skel) {
		report(st, "bpf", 0, "open BPF object: %s", strerror(errno));
		return;
	}
	skel->rodata->self_tgid = getpid();
	err = selfcheck_bpf__load(skel);
	if (err) {
		/* Refused with the capabilities held: in a container, its runtime's default seccomp
		 * profile allows bpf() only with CAP_SYS_ADMIN (podman's, Docker's). */
		if (err == -EPERM && seccomp_mode() == 2)
			report(
			    st, "bpf", 0,
			    "load BPF programs: %s (a seccomp filter is on: a container runtime's "
			    "default profile allows bpf() only with CAP_SYS_ADMIN, which this "
			    "kernel also needs for uprobes)",
			    strerror(-err));
		else
			report(st, "bpf", 0, "load BPF programs: %s (BPF syscall, JIT, BTF)",
			       strerror(-err));
		goto cleanup;
	}

	ring = ring_buffer__new(bpf_map__fd(skel->maps.ring), on_ring, NULL, NULL);
	if (!ring)
		report(st, "ring buffer", 0, "BPF_MAP_TYPE_RINGBUF: %s", strerror(errno));

	offset = self_file_offset((const void *)bindtrace_check_marker, exe, sizeof(exe));
	if (offset < 0) {
		report(st, "uprobes", 0, "cannot locate this binary's text: %s",
		       strerror((int)-offset));
	} else {
		uprobe = bpf_program__attach_uprobe(skel->progs.check_uprobe, false, getpid(), exe,
						    (size_t)offset);
		/* Since the 2025 fix "perf: Require CAP_SYS_ADMIN for uprobes" (in stable
		 * kernels too) CAP_PERFMON no longer creates uprobes: EACCES. */
		if (!uprobe && errno == EACCES)
			report(st, "uprobes", 0,
			       "attach: %s (this kernel creates uprobes for CAP_SYS_ADMIN only)",
			       strerror(errno));
		else if (!uprobe)
			report(st, "uprobes", 0, "attach: %s (kernel needs CONFIG_UPROBE_EVENTS)",
			       strerror(errno));
	}

	err = util__ensure_tracefs(&tracefs, &mounted);
	if (err) {
		report(st, "syscall tracepoints", 0, "tracefs not available: %s", strerror(-err));
	} else {
		tracepoint = bpf_program__attach(skel->progs.check_tracepoint);
		if (!tracepoint)
			report(st, "syscall tracepoints", 0, "attach sys_enter_getppid: %s",
			       strerror(errno));
	}

	/* Exercise every probe, then read the counters. */
	if (bindtrace_check_marker(1) != 2)
		abort();
	syscall(SYS_getppid);
	if (ring)
		ring_buffer__poll(ring, 100);
	for (i = 0; i < HIT_MAX; i++)
		bpf_map__lookup_elem(skel->maps.hits, &i, sizeof(i), &hits[i], sizeof(hits[i]), 0);

	if (ring)
		report(st, "ring buffer", ring_seen > 0, "%s",
		       ring_seen > 0 ? "record written in BPF and read back"
				     : "no record came back through the ring buffer");
	if (uprobe)
		report(st, "uprobes", hits[HIT_UPROBE] > 0, "%s",
		       hits[HIT_UPROBE] ? "hit on a function of this binary"
					: "attached but never fired");
	if (tracepoint)
		report(st, "syscall tracepoints", hits[HIT_TRACEPOINT] > 0, "tracefs at %s%s; %s",
		       tracefs, mounted ? " (mounted now)" : "",
		       hits[HIT_TRACEPOINT] ? "sys_enter_getppid fired"
					    : "attached but never fired");

cleanup:
	ring_buffer__free(ring);
	bpf_link__destroy(tracepoint);
	bpf_link__destroy(uprobe);
	selfcheck_bpf__destroy(skel);
}

/* fentry is reported but not required: bindtrace uses only tracepoints and uprobes, and some
 * kernels (this project's CI VMs among them) refuse BPF trampolines. */
static void check_fentry(int privileged)
{
	struct selfcheck_fentry_bpf *skel = NULL;
	char path[] = "/tmp/bindtrace-check-XXXXXX";
	int fd = -1, err;

	if (!privileged) {
		printf("%-4s  %-20s %s\n", "info", "fentry",
		       "optional; not checked without privileges");
		return;
	}
	skel = selfcheck_fentry_bpf__open();
	if (!skel) {
		printf("%-4s  %-20s open: %s\n", "info", "fentry", strerror(errno));
		return;
	}
	skel->rodata->self_tgid = getpid();
	util__libbpf_quiet(true);
	err = selfcheck_fentry_bpf__load(skel);
	if (!err)
		err = selfcheck_fentry_bpf__attach(skel);
	util__libbpf_quiet(false);
	if (err) {
		printf("%-4s  %-20s optional, unavailable: %s (BPF trampolines refused); bindtrace "
		       "does not need it\n",
		       "info", "fentry", strerror(-err));
		goto cleanup;
	}
	fd = mkstemp(path);
	if (fd >= 0) {
		fsync(fd);
		unlink(path);
		close(fd);
	}
	printf("%-4s  %-20s %s\n", skel->bss->fentry_hits ? "ok" : "info", "fentry",
	       skel->bss->fentry_hits ? "fentry on vfs_fsync_range fired (optional)"
				      : "attached but never fired (optional)");
cleanup:
	selfcheck_fentry_bpf__destroy(skel);
}

int cmd_check(int argc, char **argv)
{
	struct check_state st = {};
	int privileged = 0;

	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
			verbose = true;
	util__setup_libbpf_log();
	check_privileges(&st, &privileged);
	check_btf(&st);
	check_features(&st, privileged);
	check_fentry(privileged);
	printf("%-4s  %-20s %s\n", "info", "kprobes",
	       "not used: bindtrace needs only tracepoints and uprobes");
	if (st.failed) {
		fprintf(stderr, "bindtrace: check failed: missing %s%s\n", st.missing,
			privileged ? "" : " (run as root, or with CAP_BPF and CAP_PERFMON)");
		return 1;
	}
	printf("all requirements met\n");
	return 0;
}
