/* Counters of `bindtrace --check`, shared by its BPF programs and user space. */
#ifndef BINDTRACE_SELFCHECK_H
#define BINDTRACE_SELFCHECK_H

enum selfcheck_hit { HIT_UPROBE, HIT_TRACEPOINT, HIT_MAX };

#define SELFCHECK_RING_MAGIC 0x62696e64 /* "bind" */

#endif
