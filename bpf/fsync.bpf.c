// SPDX-License-Identifier: GPL-2.0
/* etcd's commit point: the WAL fdatasync. Syscall tracepoints (no kprobes on these kernels) time
 * every fsync/fdatasync of the target processes; the pid filter runs here, in BPF. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGETS);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} target_pids SEC(".maps");

struct inflight {
	__u64 start_ns;
	__s32 fd;
	__u32 datasync;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tid */
	__type(value, struct inflight);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline int is_target(__u32 tgid)
{
	return bpf_map_lookup_elem(&target_pids, &tgid) != NULL;
}

static __always_inline int on_enter(struct trace_event_raw_sys_enter *ctx, __u32 datasync)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct inflight in = {};

	if (!is_target(id >> 32))
		return 0;
	in.start_ns = bpf_ktime_get_ns();
	in.fd = (__s32)ctx->args[0];
	in.datasync = datasync;
	bpf_map_update_elem(&inflight, &tid, &in, BPF_ANY);
	return 0;
}

static __always_inline int on_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct inflight *in;
	struct fsync_event *e;
	__u32 zero = 0;
	__u64 *dropped;

	in = bpf_map_lookup_elem(&inflight, &tid);
	if (!in)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		dropped = bpf_map_lookup_elem(&drops, &zero);
		if (dropped)
			(*dropped)++;
		bpf_map_delete_elem(&inflight, &tid);
		return 0;
	}
	e->hdr.type = EVENT_FSYNC;
	e->hdr.pid = id >> 32;
	e->hdr.tid = tid;
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.ts_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(e->hdr.comm, sizeof(e->hdr.comm));
	e->start_ns = in->start_ns;
	e->fd = in->fd;
	e->datasync = in->datasync;
	e->ret = ctx->ret;
	bpf_map_delete_elem(&inflight, &tid);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_fdatasync")
int fdatasync_enter(struct trace_event_raw_sys_enter *ctx)
{
	return on_enter(ctx, 1);
}

SEC("tracepoint/syscalls/sys_exit_fdatasync")
int fdatasync_exit(struct trace_event_raw_sys_exit *ctx)
{
	return on_exit(ctx);
}

SEC("tracepoint/syscalls/sys_enter_fsync")
int fsync_enter(struct trace_event_raw_sys_enter *ctx)
{
	return on_enter(ctx, 0);
}

SEC("tracepoint/syscalls/sys_exit_fsync")
int fsync_exit(struct trace_event_raw_sys_exit *ctx)
{
	return on_exit(ctx);
}
