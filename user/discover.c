/* Finding the processes to trace by walking /proc. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "discover.h"

static int read_comm(pid_t pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(comm, (int)len, f))
		comm[0] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
	return 0;
}

int discover__process(pid_t pid, struct process_info *out)
{
	char path[64];
	ssize_t n;
	int err;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	err = read_comm(pid, out->comm, sizeof(out->comm));
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, out->exe, sizeof(out->exe) - 1);
	if (n < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	out->exe[n] = '\0';
	return 0;
}

/* The next process in /proc other than self: its pid, 0 at the end. */
static pid_t next_pid(DIR *proc, pid_t self)
{
	struct dirent *de;
	pid_t pid;

	while ((de = readdir(proc))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (pid_t)strtol(de->d_name, NULL, 10);
		if (pid != self)
			return pid;
	}
	return 0;
}

int discover__by_exe_name(const char *name, struct process_info *out, size_t cap)
{
	DIR *proc = opendir("/proc");
	struct process_info info;
	const char *base;
	size_t found = 0;
	pid_t pid, self = getpid();

	if (!proc)
		return -errno;
	while (found < cap && (pid = next_pid(proc, self))) {
		if (discover__process(pid, &info) != 0)
			continue;
		/* A replaced binary reads "path (deleted)": still the same program. */
		base = strrchr(info.exe, '/');
		base = base ? base + 1 : info.exe;
		if (strcmp(base, name) != 0 && !(strncmp(base, name, strlen(name)) == 0 &&
						 strcmp(base + strlen(name), " (deleted)") == 0))
			continue;
		out[found++] = info;
	}
	closedir(proc);
	return (int)found;
}

int discover__by_exe_file(const struct stat *exe, pid_t *out, size_t cap)
{
	DIR *proc = opendir("/proc");
	struct stat st;
	char path[64];
	size_t found = 0;
	pid_t pid, self = getpid();

	if (!proc)
		return -errno;
	while (found < cap && (pid = next_pid(proc, self))) {
		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		if (stat(path, &st) == 0 && st.st_dev == exe->st_dev && st.st_ino == exe->st_ino)
			out[found++] = pid;
	}
	closedir(proc);
	return (int)found;
}
