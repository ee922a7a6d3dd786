/* discover__by_exe_file: a process running the file is found by the file's device and inode,
 * under another name too (a hard link), and not by a different file; this process never is. */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "discover.h"

static bool has(const pid_t *pids, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* A child running path (argv[0] "sleep"), stopped after the checks: its pid. */
static pid_t start(const char *path)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(path, "sleep", "30", (char *)NULL);
		_exit(127);
	}
	/* until the exec is done (the child runs this test's binary before it) */
	char exe[64];
	struct stat self, now;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	stat("/proc/self/exe", &self);
	for (int i = 0; i < 200; i++) {
		if (stat(exe, &now) == 0 && now.st_ino != self.st_ino)
			break;
		usleep(25000);
	}
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	char link[] = "/tmp/bindtrace-discover-XXXXXX", self_exe[64];
	struct stat sleep_st, true_st, self_st;
	pid_t pids[4096], child, linked;
	int n;

	CHECK(stat("/bin/sleep", &sleep_st) == 0 && stat("/bin/true", &true_st) == 0, "stat");
	child = start("/bin/sleep");
	n = discover__by_exe_file(&sleep_st, pids, 4096);
	CHECK(n > 0 && has(pids, n, child), "the sleep child %d among %d found", child, n);
	n = discover__by_exe_file(&true_st, pids, 4096);
	CHECK(n >= 0 && !has(pids, n, child), "not found as /bin/true");

	/* a copy is another file; a hard link of the copy is the same one */
	CHECK(mkdtemp(link) != NULL, "mkdtemp");
	char copy[128], hard[128], cmd[512];
	struct stat copy_st;

	snprintf(copy, sizeof(copy), "%s/a", link);
	snprintf(hard, sizeof(hard), "%s/other-name", link);
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s && ln %s %s", copy, copy, hard);
	CHECK(system(cmd) == 0 && stat(copy, &copy_st) == 0, "%s", cmd);
	linked = start(hard);
	n = discover__by_exe_file(&copy_st, pids, 4096);
	CHECK(n == 1 && pids[0] == linked, "the hard link's process alone (%d found)", n);
	n = discover__by_exe_file(&sleep_st, pids, 4096);
	CHECK(has(pids, n, child) && !has(pids, n, linked), "the copy is not /bin/sleep");
	stop(linked);
	stop(child);
	snprintf(cmd, sizeof(cmd), "rm -r %s", link);
	CHECK(system(cmd) == 0, "%s", cmd);

	snprintf(self_exe, sizeof(self_exe), "/proc/%d/exe", getpid());
	CHECK(stat(self_exe, &self_st) == 0, "stat self");
	n = discover__by_exe_file(&self_st, pids, 4096);
	CHECK(n >= 0 && !has(pids, n, getpid()), "this process is left out");
	return check_summary("discover");
}
