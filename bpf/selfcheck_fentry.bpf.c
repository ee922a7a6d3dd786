// SPDX-License-Identifier: GPL-2.0
/* `bindtrace --check`, fentry: a separate object because some kernels refuse BPF trampolines
 * (EPERM at load) while everything else works, and bindtrace does not depend on them. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "selfcheck.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 self_tgid = 0;

__u64 fentry_hits = 0;

/* A function every kernel has and that a plain fsync(2) reaches. */
SEC("fentry/vfs_fsync_range")
int check_fentry(void *ctx)
{
	if ((bpf_get_current_pid_tgid() >> 32) == self_tgid)
		__sync_fetch_and_add(&fentry_hits, 1);
	return 0;
}
