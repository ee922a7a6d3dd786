/* bindtrace's version and what it was built with. argp prints it for --version on every command
 * through argp_program_version_hook, defined here. */
#include "version.h"

#include <argp.h>
#include <stdio.h>
#include <sys/utsname.h>

#include <bpf/libbpf.h>
#include <capstone/capstone.h>
#include <event2/event.h>

#include "version_stamp.h" /* generated: BINDTRACE_VERSION, BINDTRACE_COMMIT */

const char *bindtrace__version(void)
{
	return BINDTRACE_VERSION;
}

const char *bindtrace__commit(void)
{
	return BINDTRACE_COMMIT;
}

const char *bindtrace__libbpf_version(void)
{
	return libbpf_version_string();
}

void bindtrace__kernel(char *buf, size_t len)
{
	struct utsname u;

	if (uname(&u) == 0)
		snprintf(buf, len, "%s %s", u.release, u.machine);
	else
		snprintf(buf, len, "unknown");
}

void bindtrace__print_version(FILE *out)
{
	char kernel[160];
	int major, minor;

	cs_version(&major, &minor);
	bindtrace__kernel(kernel, sizeof(kernel));
	fprintf(out, "bindtrace %s\n", bindtrace__version());
	fprintf(out, "  commit    %s\n", bindtrace__commit());
	fprintf(out, "  libbpf    %s\n", bindtrace__libbpf_version());
	fprintf(out, "  capstone  %d.%d\n", major, minor);
	fprintf(out, "  libevent  %s\n", event_get_version());
	fprintf(out, "  kernel    %s\n", kernel);
}

static void print_version(FILE *out, struct argp_state *state)
{
	(void)state;
	bindtrace__print_version(out);
}

void (*argp_program_version_hook)(FILE *, struct argp_state *) = print_version;
