/* The subcommands of bindtrace: main() dispatches on the first argument. Each takes the
 * arguments after its own name (argv[0] is the subcommand) and returns the process exit status. */
#ifndef BINDTRACE_COMMANDS_H
#define BINDTRACE_COMMANDS_H

int cmd_trace(int argc, char **argv);	/* default: bind timelines */
int cmd_check(int argc, char **argv);	/* --check / check: kernel and privilege requirements */
int cmd_capture(int argc, char **argv); /* capture: raw TLS/TCP plaintext */
int cmd_inspect(int argc, char **argv); /* inspect BINARY: what goelf finds */
int cmd_decode(int argc, char **argv);	/* decode FILE.jsonl: decode a recorded capture */

/* Before tracing: privileges (root, or CAP_BPF and CAP_PERFMON) and the kernel's BTF. Says what
 * is missing in one line starting with prefix ("bindtrace", "bindtrace: capture") and returns
 * -1; 0 when both are there. */
int selfcheck__preflight(const char *prefix);

#endif
