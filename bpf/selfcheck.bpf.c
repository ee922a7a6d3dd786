// SPDX-License-Identifier: GPL-2.0
/* `bindtrace --check`: one tiny program per kernel feature bindtrace relies on. Each counts its
 * hits for the checking process only, so user space can prove the feature works end to end
 * rather than trusting a feature probe. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 self_tgid = 0;

#include "selfcheck.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HIT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} ring SEC(".maps");

static __always_inline void count(__u32 what)
{
	__u64 *n;

	if ((bpf_get_current_pid_tgid() >> 32) != self_tgid)
		return;
	n = bpf_map_lookup_elem(&hits, &what);
	if (n)
		__sync_fetch_and_add(n, 1);
}

SEC("uprobe")
int check_uprobe(void *ctx)
{
	count(HIT_UPROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int check_tracepoint(void *ctx)
{
	__u32 *slot;

	count(HIT_TRACEPOINT);
	if ((bpf_get_current_pid_tgid() >> 32) != self_tgid)
		return 0;
	slot = bpf_ringbuf_reserve(&ring, sizeof(*slot), 0);
	if (!slot)
		return 0;
	*slot = SELFCHECK_RING_MAGIC;
	bpf_ringbuf_submit(slot, 0);
	return 0;
}
