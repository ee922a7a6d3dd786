/* The bind tracer's command line: its options, --help text and checks. Each bad value is one
 * clear line from argp and exit status 64; the defaults are set here. */
#ifndef BINDTRACE_TRACE_CLI_H
#define BINDTRACE_TRACE_CLI_H

#include "trace_outputs.h"

/* Fills opt (defaults first) from the arguments of `bindtrace [OPTIONS]`; exits on bad input. */
void trace_cli__parse(int argc, char **argv, struct trace_options *opt);

#endif
