/* goelf reads a binary's own bytes even while uprobes are set in it. The kernel writes a uprobe's
 * breakpoint (int3) into every private mapping of the file that may execute, not only into the
 * traced processes: a reader that maps the binary MAP_PRIVATE sees 0xcc at every probe site and
 * decodes the functions wrongly (a Read with "no RET", or RET sites shifted), which is what a
 * second bindtrace, a re-attach after a restart or inspect on a traced binary would meet.
 *
 * The test sets a system-wide uprobe (perf_event_open, no pid filter) at the second instruction of
 * crypto/tls.(*Conn).Read of a Go binary (argv[1], else $BINDTRACE_GOFIXTURES' go1.26 static
 * build, else Debian's /usr/bin/etcd) — a private copy of it, so that no other tracer's probes are
 * in it already — then opens the copy with goelf and compares the bytes and the RET sites with
 * those read before the probe was set. Needs root; exits 77 without it. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "goelf.h"

static const char read_func[] = "crypto/tls.(*Conn).Read";

static const char *pick_binary(int argc, char **argv, char *buf, size_t len)
{
	const char *dir = getenv("BINDTRACE_GOFIXTURES");

	if (argc > 1)
		return argv[1];
	if (dir) {
		snprintf(buf, len, "%s/go1.26/static/tlsfix", dir);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	return "/usr/bin/etcd";
}

/* A private copy of src (its inode is ours alone); 0 or -1. */
static int copy_file(const char *src, char *dst_template)
{
	int in = open(src, O_RDONLY), out = mkstemp(dst_template);
	char chunk[1 << 16];
	ssize_t n;
	int err = 0;

	if (in < 0 || out < 0)
		err = -1;
	while (!err && (n = read(in, chunk, sizeof(chunk))) > 0)
		if (write(out, chunk, (size_t)n) != n)
			err = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return err;
}

static int uprobe_pmu_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	int type = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	return type;
}

/* A uprobe at path+offset on every process (pid -1, cpu 0): fd, or -errno. */
static int uprobe_open(const char *path, uint64_t offset)
{
	struct perf_event_attr attr = { 0 };
	int type = uprobe_pmu_type(), fd;

	if (type < 0)
		return -ENOENT;
	attr.size = sizeof(attr);
	attr.type = (uint32_t)type;
	attr.config1 = (uint64_t)(uintptr_t)path;
	attr.config2 = offset;
	fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* The first bytes and the RET sites of Read, as goelf reads them now. */
static int read_func_state(const char *path, uint8_t *code, size_t len, uint64_t *rets, int cap,
			   uint64_t *second_insn_off)
{
	struct go_binary *gb;
	uint64_t entry, end;
	char why[512];
	int n;

	gb = go_binary__open(path, why, sizeof(why));
	CHECK(gb != NULL, "%s: %s", path, why);
	if (!gb)
		return -1;
	CHECK_INT(go_binary__func(gb, read_func, &entry, &end), 0);
	CHECK_INT(go_binary__read_text(gb, entry, code, len), (ssize_t)len);
	n = go_binary__ret_sites(gb, read_func, rets, (size_t)cap);
	CHECK(n > 0, "%s: %s: %d RETs: %s", path, read_func, n, go_binary__last_error(gb));
	if (second_insn_off) {
		/* Go's prologue: `cmp rsp, [r14+0x10]` is 4 bytes; the jbe after it is a site no
		 * bindtrace probe uses, so the test cannot be confused with a real tracer's. */
		*second_insn_off = (uint64_t)go_binary__file_offset(gb, entry) + 4;
	}
	go_binary__close(gb);
	return n;
}

int main(int argc, char **argv)
{
	uint8_t before[64], after[64];
	uint64_t rets_before[64], rets_after[64], probe_off = 0;
	char buf[1024], path[] = "/tmp/test_goelf_uprobed.XXXXXX";
	const char *src = pick_binary(argc, argv, buf, sizeof(buf));
	int n_before, n_after, fd;

	if (geteuid() != 0) {
		printf("skip: needs root (perf_event_open of a uprobe)\n");
		return 77;
	}
	if (access(src, R_OK) != 0) {
		printf("skip: no Go binary with crypto/tls to probe (%s)\n", src);
		return 77;
	}
	CHECK(copy_file(src, path) == 0, "copy %s to %s: %s", src, path, strerror(errno));
	n_before = read_func_state(path, before, sizeof(before), rets_before, 64, &probe_off);
	if (n_before <= 0) {
		unlink(path);
		return check_summary("test_goelf_uprobed");
	}
	fd = uprobe_open(path, probe_off);
	CHECK(fd >= 0, "uprobe at %s+0x%llx: %s", path, (unsigned long long)probe_off,
	      strerror(fd < 0 ? -fd : 0));
	if (fd < 0) {
		unlink(path);
		return check_summary("test_goelf_uprobed");
	}
	n_after = read_func_state(path, after, sizeof(after), rets_after, 64, NULL);
	close(fd);
	unlink(path);
	CHECK(memcmp(before, after, sizeof(before)) == 0,
	      "%s: goelf reads the uprobe's breakpoint (byte 4: 0x%02x, file: 0x%02x)", path,
	      after[4], before[4]);
	CHECK_INT(n_after, n_before);
	CHECK(n_after == n_before &&
		  memcmp(rets_before, rets_after, (size_t)n_before * sizeof(uint64_t)) == 0,
	      "%s: RET sites differ while a uprobe is set", path);
	return check_summary("test_goelf_uprobed");
}
