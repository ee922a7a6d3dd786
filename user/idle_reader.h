/* `--nice idle`: the tracer reads on CPU time the control plane leaves. Its threads run under
 * SCHED_IDLE: on a node whose CPUs a burst of binds keeps busy, the control plane's threads have
 * a CPU as soon as they wake, instead of waiting for the tracer's slice to end, and the tracer
 * reads in the gaps or after the burst. The records wait in the ring buffer, each with the
 * kernel timestamp its probe took in the traced process, so nothing is timed later.
 *
 * A ring buffer cannot wait for ever, and a SCHED_IDLE thread on CPUs that are never idle may
 * not run for seconds: a watchdog thread at the priority the tracer started with looks at the
 * ring every 50 ms, or when the ring wakes it (an eighth of it waiting unread), and every 10 ms
 * while a sixteenth waits; once a quarter does, or records have waited while the reader ended no
 * step (a read and the work between reads: finding and attaching a new watcher) for 250 ms, it
 * puts the reading thread back at that priority until the reader has read the ring down to a
 * sixteenth and ended a step, then makes it SCHED_IDLE again. The watchdog
 * alone changes the reader's policy: a SCHED_IDLE thread may be held off the CPU anywhere, so the
 * reader holds nothing the watchdog could wait for. What the ring holds is what a node may
 * defer: about 24 KB a bind at 1000 kubelets (README, Performance).
 *
 * One per process, started on the thread that reads the ring buffer. */
#ifndef BINDTRACE_IDLE_READER_H
#define BINDTRACE_IDLE_READER_H

#include <stdbool.h>
#include <stdint.h>

struct session;
struct idle_reader;

/* Every thread of the process (and those it makes later) to SCHED_IDLE, and the watchdog on
 * session's ring buffer started; the calling thread is the reader. NULL with errno set after a
 * one-line error: the watchdog not started, the reader back at its policy (other threads made
 * SCHED_IDLE before the failure stay so). */
struct idle_reader *idle_reader__start(const struct session *session);
/* 0 when a thread made SCHED_IDLE may be put back at the calling thread's policy, else -errno:
 * the kernel lets it only with CAP_SYS_NICE or an RLIMIT_NICE that allows the thread's nice
 * value, and a container's root given no SYS_NICE has neither (EPERM). Without it the watchdog
 * could never catch up. Tried on a thread made for it, which exits: nothing else changes. */
int idle_reader__can_catch_up(void);
/* While hold is true the watchdog keeps the reader at the priority started with, whatever the
 * ring holds: a restarted process awaited, to be found and attached as soon as it runs. NULL
 * is fine. */
void idle_reader__hold(struct idle_reader *r, bool hold);
struct idle_reader_stats {
	uint64_t catch_ups;    /* a quarter of the ring waited */
	uint64_t starved;      /* else: records waiting, and no step of the reader for 250 ms */
	uint64_t caught_up_ns; /* the reader at its own priority, in all (holds included) */
};
/* What the watchdog did until now_ns (all 0 for NULL). */
void idle_reader__stats(struct idle_reader *r, uint64_t now_ns, struct idle_reader_stats *out);
/* Stops the watchdog and frees r (the threads stay under SCHED_IDLE); NULL is fine. */
void idle_reader__free(struct idle_reader *r);

#endif
