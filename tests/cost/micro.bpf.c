// SPDX-License-Identifier: GPL-2.0
/* What the operations the tracer's programs are made of cost on this machine (tests/cost/micro).
 * Each program runs on the getppid(2) of one process (cfg) and does its operation ten times; its
 * mean run time (kernel.bpf_stats_enabled) less p_empty's, over ten, is one operation's cost.
 * Ten in a row find the lines the first one fetched in the cache: an operation that misses goes
 * to memory once, so run with the caller's cache thrashed between calls to see that. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cfg SEC(".maps");

/* Like the targets hash: 1024 entries, three used. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} small_hash SEC(".maps");

/* Like conns: 65536 entries of 88 bytes, 300 used, looked up at random. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8[88]);
} big_lru SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[1024]);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} rb SEC(".maps");

#define LRU_USED 300
#define COPY 600
#define TEN for (int i = 0; i < 10; i++)

static __always_inline bool mine(void)
{
	__u32 zero = 0, *pid = bpf_map_lookup_elem(&cfg, &zero);

	return pid && *pid == bpf_get_current_pid_tgid() >> 32;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int p_empty(void *ctx)
{
	return mine() ? 0 : 1;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int p_ktime(void *ctx)
{
	__u64 s = 0;

	if (!mine())
		return 0;
	TEN s += bpf_ktime_get_ns();
	return s & 1;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int p_pid_cpu(void *ctx)
{
	__u64 s = 0;

	if (!mine())
		return 0;
	TEN s += bpf_get_current_pid_tgid() + bpf_get_smp_processor_id();
	return s & 1;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int p_comm(void *ctx)
{
	char comm[16];

	if (!mine())
		return 0;
	TEN bpf_get_current_comm(comm, sizeof(comm));
	return comm[0] & 1;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int p_small_hash(void *ctx)
{
	__u32 s = 0;

	if (!mine())
		return 0;
	TEN {
		__u32 k = 100 + i % 3;
		__u8 *v = bpf_map_lookup_elem(&small_hash, &k);

		if (v)
			s += *v;
	}
	return s & 1;
}

/* p_big_lru less p_prandom: the lookups alone. */
SEC("tracepoint/syscalls/sys_enter_getppid")
int p_prandom(void *ctx)
{
	__u32 s = 0;

	if (!mine())
		return 0;
	TEN s += bpf_get_prandom_u32() % LRU_USED;
	return s & 1;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int p_big_lru(void *ctx)
{
	__u32 s = 0;

	if (!mine())
		return 0;
	TEN {
		__u64 k = bpf_get_prandom_u32() % LRU_USED + 1;
		__u8 *v = bpf_map_lookup_elem(&big_lru, &k);

		if (v)
			s += v[0];
	}
	return s & 1;
}

/* The walk conn_of_fd does: task, files, fdtable, the descriptor's file, its inode number. */
SEC("tracepoint/syscalls/sys_enter_getppid")
int p_fd_walk(void *ctx)
{
	__u64 s = 0;

	if (!mine())
		return 0;
	TEN {
		struct task_struct *task = bpf_get_current_task_btf();
		struct files_struct *files = task->files;
		struct inode *inode = NULL;
		struct file *f = NULL;
		struct fdtable *fdt;
		__u64 ino = 0;

		if (!files)
			return 0;
		fdt = files->fdt;
		if (!fdt || fdt->max_fds < 3)
			return 0;
		bpf_probe_read_kernel(&f, sizeof(f), &fdt->fd[i % 3]);
		if (!f || bpf_probe_read_kernel(&inode, sizeof(inode), &f->f_inode) || !inode)
			continue;
		bpf_probe_read_kernel(&ino, sizeof(ino), &inode->i_ino);
		s += ino;
	}
	return s & 1;
}

/* COPY bytes of the caller's buffer (getppid's first argument register). */
SEC("tracepoint/syscalls/sys_enter_getppid")
int p_read_user(void *ctx)
{
	struct pt_regs *regs;
	__u32 zero = 0;
	__u8 *buf;

	if (!mine())
		return 0;
	buf = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	TEN bpf_probe_read_user(buf, COPY, (void *)regs->di);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int p_ringbuf_output(void *ctx)
{
	__u32 zero = 0;
	__u8 *buf;

	if (!mine())
		return 0;
	buf = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf)
		return 0;
	TEN bpf_ringbuf_output(&rb, buf, COPY, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int p_ringbuf_reserve(void *ctx)
{
	if (!mine())
		return 0;
	TEN {
		__u64 *e = bpf_ringbuf_reserve(&rb, 64, 0);

		if (e) {
			e[0] = i;
			bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
		}
	}
	return 0;
}
