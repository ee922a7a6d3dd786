/* The bind tracer's options (trace_cli.c): each --*-pid repeatable, --node and --node-address;
 * and bad input (a bad value, a pid given twice, a conflict) refused with exactly one line on
 * stderr (besides argp's "Try ... --help" hint) and exit status 64 (EX_USAGE), from a child
 * process since argp exits. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "trace_cli.h"
#include "util.h"

#define MAX_ARGS 32

static int split(char *line, char **argv)
{
	int argc = 0;
	char *tok, *save = NULL;

	argv[argc++] = (char *)"bindtrace";
	for (tok = strtok_r(line, " ", &save); tok && argc < MAX_ARGS - 1;
	     tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	return argc;
}

/* Parses args (split at spaces) in this process: for inputs that are accepted. */
static void parse_ok(const char *args, struct trace_options *opt)
{
	char line[1024], *argv[MAX_ARGS];
	int argc;

	snprintf(line, sizeof(line), "%s", args);
	argc = split(line, argv);
	trace_cli__parse(argc, argv, opt);
}

/* Parses args in a child: its exit status and the lines it wrote on stderr, argp's hint left
 * out, the first of them in first. */
static int parse_refused(const char *args, int *lines, char *first, size_t cap)
{
	char line[1024], *argv[MAX_ARGS], buf[4096], *p, *nl;
	int fds[2], status, argc;
	ssize_t n, got = 0;
	pid_t pid;

	*lines = 0;
	first[0] = '\0';
	if (pipe(fds))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct trace_options opt;

		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		snprintf(line, sizeof(line), "%s", args);
		argc = split(line, argv);
		trace_cli__parse(argc, argv, &opt);
		_exit(0);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	for (p = buf; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		if (strncmp(p, "Try `bindtrace", 14) != 0 && nl > p) {
			if (!(*lines)++)
				snprintf(first, cap, "%.*s", (int)(nl - p), p);
		}
		if (!*nl)
			break;
	}
	return WEXITSTATUS(status);
}

static void test_accepted(void)
{
	struct trace_options opt;
	char text[ENDPOINT_STRLEN];

	parse_ok("", &opt);
	CHECK_INT(opt.scheduler_pids.n + opt.apiserver_pids.n + opt.etcd_pids.n, 0);
	CHECK_STR(opt.node, "");
	CHECK_INT(opt.n_node_addrs, 0);

	/* Repeats: each pid a target of its role, in the order given. */
	parse_ok("--etcd-pid 101 --etcd-pid 102 --etcd-pid=103 --apiserver-pid 201 "
		 "--scheduler-pid 301 --apiserver-pid 202",
		 &opt);
	CHECK_INT(opt.etcd_pids.n, 3);
	CHECK_INT(opt.etcd_pids.pid[0], 101);
	CHECK_INT(opt.etcd_pids.pid[2], 103);
	CHECK_INT(opt.apiserver_pids.n, 2);
	CHECK_INT(opt.apiserver_pids.pid[1], 202);
	CHECK_INT(opt.scheduler_pids.n, 1);
	CHECK_INT(opt.scheduler_pids.pid[0], 301);

	parse_ok("--node cp-1.example.com --node-address 127.0.0.11 --node-address ::1 "
		 "--node-address 10.0.0.7 --node cp-1.example.com",
		 &opt);
	CHECK_STR(opt.node, "cp-1.example.com");
	CHECK_INT(opt.n_node_addrs, 3);
	CHECK_STR(endpoint__format(&opt.node_addrs[0], text, sizeof(text)), "127.0.0.11:0");
	CHECK_STR(endpoint__format(&opt.node_addrs[1], text, sizeof(text)), "[::1]:0");
	CHECK_INT(opt.node_addrs[2].family, AF_INET);

	/* --node alone names the node; with pids it scopes nothing else. */
	parse_ok("--node node-3 --etcd-pid 7", &opt);
	CHECK_STR(opt.node, "node-3");
	CHECK_INT(opt.etcd_pids.n, 1);

	/* Eight of a role is the most. */
	parse_ok("--etcd-pid 1 --etcd-pid 2 --etcd-pid 3 --etcd-pid 4 --etcd-pid 5 --etcd-pid 6 "
		 "--etcd-pid 7 --etcd-pid 8",
		 &opt);
	CHECK_INT(opt.etcd_pids.n, 8);
}

static void test_refused(void)
{
	static const struct {
		const char *args;
		const char *says; /* a part of the one line */
	} cases[] = {
		{ "--etcd-pid 0", "invalid pid '0'" },
		{ "--etcd-pid abc", "invalid pid 'abc'" },
		{ "--scheduler-pid 12x", "invalid pid '12x'" },
		{ "--apiserver-pid -5", "invalid pid" },
		{ "--etcd-pid 99999999999", "invalid pid" },
		{ "--etcd-pid 5 --etcd-pid 5", "pid 5 given twice (--etcd-pid, --etcd-pid)" },
		{ "--etcd-pid 5 --apiserver-pid 5",
		  "pid 5 given twice (--apiserver-pid, --etcd-pid)" },
		{ "--etcd-pid 1 --etcd-pid 2 --etcd-pid 3 --etcd-pid 4 --etcd-pid 5 --etcd-pid 6 "
		  "--etcd-pid 7 --etcd-pid 8 --etcd-pid 9",
		  "--etcd-pid given more than 8 times" },
		{ "--node-address 127.0.0.11", "--node-address needs --node NAME" },
		{ "--node cp-1 --node cp-2", "--node given twice ('cp-1', 'cp-2')" },
		{ "--node CP-1", "invalid --node 'CP-1'" },
		{ "--node -cp", "invalid --node '-cp'" },
		{ "--node cp..1", "invalid --node 'cp..1'" },
		{ "--node cp_1", "invalid --node 'cp_1'" },
		{ "--node cp-1 --node-address 127.0.0.1:80",
		  "invalid --node-address '127.0.0.1:80'" },
		{ "--node cp-1 --node-address node-a", "invalid --node-address 'node-a'" },
		{ "--node cp-1 --node-address 0.0.0.0", "a wildcard address names no node" },
		{ "--node cp-1 --node-address ::", "a wildcard address names no node" },
		{ "--node cp-1 --node-address 127.0.0.11 --node-address 127.0.0.11",
		  "--node-address 127.0.0.11 given twice" },
		{ "--node cp-1 --node-address 127.0.0.11 --node-address ::ffff:127.0.0.11",
		  "--node-address ::ffff:127.0.0.11 given twice" },
		{ "--etcd-pid", "requires an argument" },
	};
	char first[512], node[300];
	size_t i;
	int rc, lines;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = parse_refused(cases[i].args, &lines, first, sizeof(first));
		CHECK(rc == 64 && lines == 1 && !strncmp(first, "bindtrace: ", 11) &&
			  strstr(first, cases[i].says),
		      "%s: exit %d, %d lines, first \"%s\" (want 64, 1 line with \"%s\")",
		      cases[i].args, rc, lines, first, cases[i].says);
	}
	/* A name of 254 characters is one too many. */
	memset(node, 'a', 254);
	node[254] = '\0';
	{
		char args[400];

		snprintf(args, sizeof(args), "--node %s", node);
		rc = parse_refused(args, &lines, first, sizeof(first));
		CHECK(rc == 64 && lines == 1 && strstr(first, "invalid --node"), "254: %d %d %s",
		      rc, lines, first);
		node[253] = '\0';
		snprintf(args, sizeof(args), "--node %s", node);
		rc = parse_refused(args, &lines, first, sizeof(first));
		CHECK(rc == 0 && lines == 0, "253 accepted: %d %d %s", rc, lines, first);
	}
	/* And accepted input exits 0 with nothing said. */
	rc = parse_refused("--node cp-1 --node-address 127.0.0.11 --etcd-pid 4", &lines, first,
			   sizeof(first));
	CHECK(rc == 0 && lines == 0, "accepted: exit %d, %d lines: %s", rc, lines, first);
}

int main(void)
{
	program_invocation_name = program_invocation_short_name = (char *)"bindtrace";
	test_accepted();
	test_refused();
	return check_summary("trace_cli");
}
