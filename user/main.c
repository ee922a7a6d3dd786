/* bindtrace entry point: picks the subcommand. With no subcommand it traces binds. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

/* Subcommands land one by one; until one is linked in, say so instead of failing to link. */
#pragma weak cmd_capture
#pragma weak cmd_inspect
#pragma weak cmd_decode

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct subcommand subcommands[] = {
	{ "capture", cmd_capture, "print decrypted TLS and plaintext TCP payloads of processes" },
	{ "inspect", cmd_inspect, "show what bindtrace finds in a Go binary, attaching nothing" },
	{ "decode", cmd_decode, "decode a capture recorded with `capture --json`" },
	{ "check", cmd_check, "check the kernel features and privileges bindtrace needs" },
};

int main(int argc, char **argv)
{
	static char name[64];
	size_t i;

	/* The decoders' buffers come and go with every message: glibc would hand a freed top of
	 * the heap back to the kernel and map large ones afresh, and the tracer then paid a page
	 * fault for every page it touched again (7% of its CPU in a 1000-pod burst). Keep them. */
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_MMAP_THRESHOLD, 16 << 20);
	mallopt(M_TOP_PAD, 4 << 20);
	/* argp and error messages name the tool, whatever path or build ran it. */
	program_invocation_name = program_invocation_short_name = "bindtrace";
	if (argc > 1) {
		for (i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
			if (strcmp(argv[1], subcommands[i].name) != 0)
				continue;
			if (!subcommands[i].run) {
				fprintf(stderr, "bindtrace: '%s' is not built into this version\n",
					argv[1]);
				return 2;
			}
			snprintf(name, sizeof(name), "bindtrace %s", subcommands[i].name);
			argv[1] = name;
			return subcommands[i].run(argc - 1, argv + 1);
		}
	}
	argv[0] = (char *)"bindtrace";
	return cmd_trace(argc, argv);
}
