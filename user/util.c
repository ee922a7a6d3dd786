/* Small shared pieces used by several subcommands. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <jansson.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

uint64_t util__cpu_ns(void)
{
	return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

int util__each_thread(int (*fn)(pid_t tid, void *ctx), void *ctx)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *d;
	int err = 0, one;

	if (!dir)
		return -errno;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.') {
			one = fn((pid_t)strtol(d->d_name, NULL, 10), ctx);
			if (one && !err)
				err = one;
		}
	closedir(dir);
	return err;
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

int util__parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	static const char units[] = "KMGT";
	unsigned long long v;
	const char *u;
	char *end;
	int shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end && (u = strchr(units, *end & ~0x20))) {
		shift = 10 * (int)(u - units + 1);
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B' || *end == 'b')
			end++;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	v <<= shift;
	if (v < min || v > max)
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

static const char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/* Every 12-bit value as its two base64 characters: half the lookups and stores per 3 bytes
 * (capture --json encodes every byte it captures). Filled before main. */
static char base64_pairs[4096][2];

/* 3 bytes at a time with the pair table; the tail padded. What the vector loop leaves too. */
static size_t base64_encode_scalar(const unsigned char *p, size_t n, char *out)
{
	size_t i, k = 0;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		memcpy(out + k, base64_pairs[v >> 12], 2);
		memcpy(out + k + 2, base64_pairs[v & 4095], 2);
		k += 4;
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);

		out[k++] = base64_alphabet[v >> 18];
		out[k++] = base64_alphabet[(v >> 12) & 63];
		out[k++] = i + 1 < n ? base64_alphabet[(v >> 6) & 63] : '=';
		out[k++] = '=';
	}
	out[k] = '\0';
	return k;
}

#if defined(__x86_64__)
/* 24 bytes into 32 characters per step with AVX2 (the scalar loop does about 1.6 GB/s, which was
 * a quarter of capture --json's CPU): each 128-bit lane takes 12 bytes, spreads every 3 bytes
 * a, b, c over a 32-bit word as b a c b, moves the four 6-bit fields to the low bits of the four
 * bytes with two masks and two 16-bit multiplies, and turns each 0..63 into its character by
 * adding an offset picked by range (A-Z, a-z, 0-9, '+', '/') with a byte shuffle. Reads 28 bytes
 * per step (lane 1 loads 16 bytes from byte 12), so it stops 4 bytes early; returns the bytes of
 * p it encoded (a multiple of 3; out holds 4/3 as many characters). */
__attribute__((target("avx2"))) static size_t base64_encode_avx2(const unsigned char *p, size_t n,
								 char *out)
{
	const __m256i spread = _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10,
						1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
	const __m256i offsets =
	    _mm256_setr_epi8('a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
			     '0' - 52, '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0,
			     'a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
			     '0' - 52, '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0);
	size_t i = 0;

	for (; i + 28 <= n; i += 24, out += 32) {
		__m256i in =
		    _mm256_loadu2_m128i((const __m128i *)(p + i + 12), (const __m128i *)(p + i));
		__m256i w = _mm256_shuffle_epi8(in, spread);
		/* fields 0 and 2 (a >> 2; (b & 15) << 2 | c >> 6): shifted down 10 and 6 bits */
		__m256i hi = _mm256_mulhi_epu16(_mm256_and_si256(w, _mm256_set1_epi32(0x0fc0fc00)),
						_mm256_set1_epi32(0x04000040));
		/* fields 1 and 3 ((a & 3) << 4 | b >> 4; c & 63): shifted up 4 and 8 bits */
		__m256i lo = _mm256_mullo_epi16(_mm256_and_si256(w, _mm256_set1_epi32(0x003f03f0)),
						_mm256_set1_epi32(0x01000010));
		__m256i idx = _mm256_or_si256(hi, lo);
		/* 0..25 -> 13 ('A'), 26..51 -> 0, 52..61 -> 1..10, 62 -> 11, 63 -> 12 */
		__m256i range = _mm256_subs_epu8(idx, _mm256_set1_epi8(51));
		__m256i upper = _mm256_cmpgt_epi8(_mm256_set1_epi8(26), idx);

		range = _mm256_or_si256(range, _mm256_and_si256(upper, _mm256_set1_epi8(13)));
		_mm256_storeu_si256((__m256i *)out,
				    _mm256_add_epi8(idx, _mm256_shuffle_epi8(offsets, range)));
	}
	return i;
}
#endif

static bool base64_avx2;

__attribute__((constructor)) static void base64_pairs__init(void)
{
	for (int v = 0; v < 4096; v++) {
		base64_pairs[v][0] = base64_alphabet[v >> 6];
		base64_pairs[v][1] = base64_alphabet[v & 63];
	}
#if defined(__x86_64__)
	__builtin_cpu_init();
	base64_avx2 = __builtin_cpu_supports("avx2");
#endif
}

size_t util__fmt_ll(char *out, long long v)
{
	/* The magnitude as unsigned: -LLONG_MIN does not fit a long long. */
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	char tmp[20];
	size_t n = 0, len = 0;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		out[len++] = '-';
	while (n)
		out[len++] = tmp[--n];
	return len;
}

size_t util__base64_encode(const unsigned char *p, size_t n, char *out)
{
	size_t done = 0;

#if defined(__x86_64__)
	if (base64_avx2)
		done = base64_encode_avx2(p, n, out);
#endif
	return done / 3 * 4 + base64_encode_scalar(p + done, n - done, out + done / 3 * 4);
}

/* Bytes in the well-formed UTF-8 sequence at p (1 to 4), 0 when there is none: no overlong
 * forms, no surrogates, nothing past U+10FFFF (what jansson accepts). */
static size_t utf8_sequence(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	for (i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
		if (p[i] < lo || p[i] > hi)
			return 0;
	return n;
}

json_t *util__json_string(const char *s)
{
	size_t len = strlen(s), i = 0, n;
	char *copy;
	json_t *j;

	copy = malloc(len + 1);
	if (!copy)
		return NULL;
	while (i < len) {
		n = utf8_sequence((const unsigned char *)s + i);
		if (n) {
			memcpy(copy + i, s + i, n);
			i += n;
		} else {
			copy[i++] = '?';
		}
	}
	copy[len] = '\0';
	j = json_string(copy);
	free(copy);
	return j;
}
