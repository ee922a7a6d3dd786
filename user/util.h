/* Small shared pieces: libbpf's log routed through -v, the tracefs mount, monotonic/wall clocks. */
#ifndef BINDTRACE_UTIL_H
#define BINDTRACE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* Write n bytes as standard base64 (with padding). */
void util__base64_print(FILE *out, const unsigned char *p, size_t n);
/* Decode n characters of base64 (standard or URL alphabet, padding optional) into out (room for
 * n * 3 / 4 bytes). Returns the length, or -EINVAL at a character outside the alphabet. */
long util__base64_decode(const char *in, size_t n, unsigned char *out);

/* "127.0.0.1:443" or "[::1]:443" from a socket address as the BPF events carry it: family AF_INET
 * (the first 4 bytes of addr) or AF_INET6 (16 bytes), network order; port in host order. */
void util__format_addr(char *buf, size_t len, uint16_t family, const uint8_t *addr, uint16_t port);

/* Parse a number in [min, max]; returns 0 or -EINVAL. */
int util__parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out);

#endif
