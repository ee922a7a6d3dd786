/* Event records shared by the BPF programs and user space: plain data only. */
#ifndef BINDTRACE_EVENTS_H
#define BINDTRACE_EVENTS_H

#define TASK_COMM_LEN 16
#define MAX_TARGETS 64

enum event_type {
	EVENT_FSYNC = 1,
};

struct event_header {
	__u32 type;
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 cpu;
	__u64 ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	char comm[TASK_COMM_LEN];
};

/* One fsync(2)/fdatasync(2) by a target, emitted when it returns. */
struct fsync_event {
	struct event_header hdr; /* ts_ns = end */
	__u64 start_ns;
	__s64 ret;
	__s32 fd;
	__u32 datasync; /* 1 = fdatasync, 0 = fsync */
};

#endif
