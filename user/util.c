/* Small shared pieces used by several subcommands. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "util.h"

bool verbose;
static bool libbpf_quiet;

void util__libbpf_quiet(bool quiet)
{
	libbpf_quiet = quiet;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	/* Without -v, libbpf says nothing: bindtrace reports each failure itself, on one line
	 * with its context, and libbpf's warnings around it (four lines for a kernel without
	 * BTF) would bury that line. */
	(void)level;
	if (!verbose || libbpf_quiet)
		return 0;
	return vfprintf(stderr, fmt, args);
}

void util__setup_libbpf_log(void)
{
	libbpf_set_print(libbpf_print);
}

static bool has_events(const char *dir)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/events/syscalls", dir);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int util__ensure_tracefs(const char **where, bool *mounted)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	size_t i;

	*mounted = false;
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (has_events(dirs[i])) {
			*where = dirs[i];
			return 0;
		}
	}
	if (mount("nodev", dirs[0], "tracefs", 0, NULL) != 0)
		return -errno;
	if (!has_events(dirs[0]))
		return -ENOENT;
	*where = dirs[0];
	*mounted = true;
	return 0;
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t util__monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t util__realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

int64_t util__wall_offset_ns(void)
{
	/* Bracket the wall-clock read between two monotonic reads; take the midpoint. */
	uint64_t m1 = util__monotonic_ns();
	uint64_t w = util__realtime_ns();
	uint64_t m2 = util__monotonic_ns();

	return (int64_t)(w - (m1 + (m2 - m1) / 2));
}

int util__parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int base64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

long util__base64_decode(const char *in, size_t n, unsigned char *out)
{
	uint32_t acc = 0;
	int bits = 0;
	long o = 0;

	for (size_t i = 0; i < n && in[i] != '='; i++) {
		int v = base64_value((unsigned char)in[i]);

		if (v < 0)
			return -EINVAL;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	return o;
}

void util__base64_print(FILE *out, const unsigned char *p, size_t n)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char buf[4096 + 4];
	size_t i, k = 0;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		buf[k++] = alphabet[v >> 18];
		buf[k++] = alphabet[(v >> 12) & 63];
		buf[k++] = alphabet[(v >> 6) & 63];
		buf[k++] = alphabet[v & 63];
		if (k >= 4096) {
			fwrite(buf, 1, k, out);
			k = 0;
		}
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);

		buf[k++] = alphabet[v >> 18];
		buf[k++] = alphabet[(v >> 12) & 63];
		buf[k++] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		buf[k++] = '=';
	}
	fwrite(buf, 1, k, out);
}

void util__format_addr(char *buf, size_t len, uint16_t family, const uint8_t *addr, uint16_t port)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (family == AF_INET) {
		inet_ntop(AF_INET, addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, port);
	} else {
		inet_ntop(AF_INET6, addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, port);
	}
}
