/* bindtrace's own identity: its version (from git tags, stamped at build time by
 * scripts/version-h) and commit, and the versions of what it runs on (libbpf, Capstone,
 * libevent, the kernel). `--version` on every command prints them; the metrics' build info
 * reports them. */
#ifndef BINDTRACE_VERSION_H
#define BINDTRACE_VERSION_H

#include <stdio.h>

/* Static strings, valid for the life of the process. */
const char *bindtrace__version(void);
const char *bindtrace__commit(void);
const char *bindtrace__libbpf_version(void); /* "v1.1" */

/* The running kernel: release and machine ("6.18.0 x86_64"), into buf. */
void bindtrace__kernel(char *buf, size_t len);

/* The --version page: one line per item. */
void bindtrace__print_version(FILE *out);

#endif
