/* Finding the control-plane processes: by executable name, or checking a pid given by the user. */
#ifndef BINDTRACE_DISCOVER_H
#define BINDTRACE_DISCOVER_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

struct process_info {
	pid_t pid;
	char comm[16];
	char exe[4096];
};

/* Fills up to cap processes whose executable's base name is `name` (this process excluded).
 * Returns how many were found, or a negative errno. */
int discover__by_exe_name(const char *name, struct process_info *out, size_t cap);

/* Fills up to cap pids of processes whose executable is the file exe describes (its st_dev and
 * st_ino, from stat() of a path: a hard link of it by another name is the same program, a file
 * put in its place later is not), this process excluded. One stat() per process, nothing
 * allocated: cheap enough to repeat every fraction of a second. How many, or a negative errno. */
int discover__by_exe_file(const struct stat *exe, pid_t *out, size_t cap);

/* Reads a process's comm and exe; -ESRCH when it does not exist. */
int discover__process(pid_t pid, struct process_info *out);

#endif
