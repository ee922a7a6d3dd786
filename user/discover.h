/* Finding the control-plane processes: by executable name, or checking a pid given by the user. */
#ifndef BINDTRACE_DISCOVER_H
#define BINDTRACE_DISCOVER_H

#include <stddef.h>
#include <sys/types.h>

struct process_info {
	pid_t pid;
	char comm[16];
	char exe[4096];
};

/* Fills up to cap processes whose executable's base name is `name` (this process excluded).
 * Returns how many were found, or a negative errno. */
int discover__by_exe_name(const char *name, struct process_info *out, size_t cap);

/* Reads a process's comm and exe; -ESRCH when it does not exist. */
int discover__process(pid_t pid, struct process_info *out);

#endif
