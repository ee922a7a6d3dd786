/* Small shared pieces: libbpf's log routed through -v, the tracefs mount, monotonic/wall clocks. */
#ifndef BINDTRACE_UTIL_H
#define BINDTRACE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct json_t;

extern bool verbose;

/* Route libbpf's messages to stderr, debug ones only with -v. */
void util__setup_libbpf_log(void);
/* While set (and without -v), libbpf's warnings are not shown either: for expected failures. */
void util__libbpf_quiet(bool quiet);

/* Syscall tracepoints need tracefs; mount it at /sys/kernel/tracing when nothing is mounted.
 * Returns 0 and sets *where (static string), or a negative errno. *mounted tells whether this
 * call mounted it. */
int util__ensure_tracefs(const char **where, bool *mounted);

uint64_t util__monotonic_ns(void);
uint64_t util__realtime_ns(void);
/* CPU time this process has used (all its threads, user and system): for --verbose's step
 * timings, which wall time alone misreads on a loaded machine. */
uint64_t util__cpu_ns(void);
/* Calls fn(tid, ctx) for every thread of this process (/proc/self/task), each even after one
 * failed: 0, or the first negative errno (fn's, or opendir's). */
int util__each_thread(int (*fn)(pid_t tid, void *ctx), void *ctx);
/* Offset to add to a CLOCK_MONOTONIC (bpf_ktime_get_ns) stamp to get wall-clock ns. */
int64_t util__wall_offset_ns(void);

/* Copy a NUL-terminated string into dst[len], cutting it if needed; always terminates. */
static inline void util__copy(char *dst, size_t len, const char *src)
{
	size_t n = 0;

	if (!len)
		return;
	while (n + 1 < len && src[n])
		n++;
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i];
	dst[n] = '\0';
}

/* FNV-1a: the hash h (UTIL_FNV_START to begin) carried on over n bytes at p. */
#define UTIL_FNV_START 1469598103934665603ull
static inline uint64_t util__fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* The value of one hexadecimal digit (either case), or -1 when c is not one. */
static inline int util__hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* n bytes as standard base64 (with padding) into out, which has room for 4 * ((n + 2) / 3) + 1
 * characters; NUL-terminated. Returns the length. */
size_t util__base64_encode(const unsigned char *p, size_t n, char *out);
/* Decode n characters of base64 (standard or URL alphabet, padding optional) into out (room for
 * n * 3 / 4 bytes). Returns the length, or -EINVAL at a character outside the alphabet. */
long util__base64_decode(const char *in, size_t n, unsigned char *out);

/* A JSON string of s (NULL when out of memory): each byte that is not part of well-formed UTF-8
 * becomes '?' (a process or file name is whatever the traced side chose), rather than jansson
 * refusing the whole string. */
struct json_t *util__json_string(const char *s);

/* v in decimal into out (room for 21 characters: "-9223372036854775808"), not terminated.
 * Returns the length. Both JSON writers' numbers (bind_json, capture_json): snprintf was 8% of
 * the tracer's CPU samples in a bind burst, these numbers its largest caller (perf). */
size_t util__fmt_ll(char *out, long long v);

/* Parse a number in [min, max]; returns 0 or -EINVAL. */
int util__parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out);
/* Parse a size in bytes in [min, max]: "1G", "512M", "64K", "1048576" (K, M, G, T are powers of
 * 1024, optionally followed by "B" or "iB"). 0, or -EINVAL. */
int util__parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
