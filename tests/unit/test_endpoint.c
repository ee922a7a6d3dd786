/* Endpoints: the kernel's fields printed as inet_ntop spells them, parsed back to the same bytes,
 * compared as addresses (an IPv4 end equals its v4-mapped IPv6 form; IPv6 addresses that differ
 * only in their middle groups differ). */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "endpoint.h"

static struct endpoint from_kernel(uint16_t family, const char *ip, uint16_t port)
{
	uint8_t addr[16] = { 0 };
	struct endpoint e;

	CHECK(inet_pton(family, ip, addr) == 1, "address %s", ip);
	endpoint__set(&e, family, addr, port);
	return e;
}

static void test_format_parse(void)
{
	static const struct {
		uint16_t family;
		const char *ip;
		uint16_t port;
		const char *text;
	} cases[] = {
		{ AF_INET, "127.0.0.1", 6443, "127.0.0.1:6443" },
		{ AF_INET, "10.96.0.1", 443, "10.96.0.1:443" },
		{ AF_INET, "0.0.0.0", 0, "0.0.0.0:0" },
		{ AF_INET, "255.255.255.255", 65535, "255.255.255.255:65535" },
		{ AF_INET, "192.168.100.9", 80, "192.168.100.9:80" },
		{ AF_INET6, "::1", 6443, "[::1]:6443" },
		{ AF_INET6, "fd00:10:96::1", 2379, "[fd00:10:96::1]:2379" },
		{ AF_INET6, "::ffff:127.0.0.1", 2379, "[::ffff:127.0.0.1]:2379" },
		{ AF_INET6, "2001:db8:1234:5678:9abc:def0:1234:5678", 65535,
		  "[2001:db8:1234:5678:9abc:def0:1234:5678]:65535" },
		{ AF_INET6, "fe80::1:2:3:4", 50000, "[fe80::1:2:3:4]:50000" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct endpoint e = from_kernel(cases[i].family, cases[i].ip, cases[i].port), back;
		char buf[ENDPOINT_STRLEN];

		CHECK_STR(endpoint__format(&e, buf, sizeof(buf)), cases[i].text);
		CHECK_STR(endpoint__str(&e).s, cases[i].text);
		CHECK_INT(endpoint__parse(cases[i].text, &back), 0);
		CHECK(memcmp(&back, &e, sizeof(e)) == 0, "%s parses back to the same bytes",
		      cases[i].text);
	}
}

static void test_unknown_and_bad(void)
{
	static const char *const bad[] = {
		"127.0.0.1", "127.0.0.1:",   "127.0.0.1:65536", "127.0.0.1:-1",	  "127.0.0.1:80x",
		"[::1]",     "[::1]6443",    "::1:6443",	"[127.0.0.1]:80", "[::1:80",
		":80",	     "localhost:80", "[]:80",		"1.2.3.4.5:80",
	};
	struct endpoint e, none = { 0 }, kept;
	uint8_t zero[16] = { 0 };
	char buf[ENDPOINT_STRLEN];
	size_t i;

	endpoint__set(&e, 1 /* AF_UNIX */, zero, 7);
	CHECK(memcmp(&e, &none, sizeof(e)) == 0, "another family is the unknown endpoint");
	CHECK_STR(endpoint__format(&e, buf, sizeof(buf)), "");
	CHECK_INT(endpoint__parse("", &e), 0);
	CHECK(e.family == 0, "\"\" is the unknown endpoint");
	kept = from_kernel(AF_INET, "192.0.2.7", 80);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e = kept;
		CHECK(endpoint__parse(bad[i], &e) == -EINVAL, "\"%s\" refused", bad[i]);
		CHECK(memcmp(&e, &kept, sizeof(e)) == 0, "\"%s\" leaves the endpoint", bad[i]);
	}
	/* A short buffer is cut, terminated. */
	e = from_kernel(AF_INET6, "2001:db8::1", 443);
	CHECK_STR(endpoint__format(&e, buf, 6), "[2001");
	e = from_kernel(AF_INET, "255.255.255.255", 65535);
	CHECK_STR(endpoint__format(&e, buf, 6), "255.2");
}

static void test_equal(void)
{
	struct endpoint v4 = from_kernel(AF_INET, "127.0.0.1", 2379),
			mapped = from_kernel(AF_INET6, "::ffff:127.0.0.1", 2379),
			other4 = from_kernel(AF_INET, "127.0.0.2", 2379),
			other_port = from_kernel(AF_INET, "127.0.0.1", 2380),
			loop6 = from_kernel(AF_INET6, "::1", 2379),
			mid1 = from_kernel(AF_INET6, "fd00::1:1", 2379),
			mid2 = from_kernel(AF_INET6, "fd00::2:1", 2379), none = { 0 };
	uint8_t a4[4];

	CHECK(endpoint__equal(&v4, &v4), "itself");
	CHECK(endpoint__equal(&v4, &mapped) && endpoint__equal(&mapped, &v4),
	      "IPv4 and its v4-mapped form");
	CHECK(!endpoint__equal(&v4, &other4), "another address");
	CHECK(!endpoint__equal(&v4, &other_port), "another port");
	CHECK(!endpoint__equal(&mapped, &loop6), "::ffff:127.0.0.1 is not ::1");
	CHECK(!endpoint__equal(&v4, &loop6), "127.0.0.1 is not ::1");
	/* The old text form kept the first and last groups only: these two read the same in it. */
	CHECK(!endpoint__equal(&mid1, &mid2), "fd00::1:1 is not fd00::2:1");
	CHECK(!endpoint__equal(&v4, &none) && !endpoint__equal(&none, &loop6), "unknown");
	CHECK(endpoint__equal(&none, &none), "two unknown endpoints");
	CHECK(endpoint__ipv4(&mapped, a4) && a4[0] == 127 && a4[3] == 1, "unmapped");
	CHECK(!endpoint__ipv4(&loop6, a4), "::1 has no IPv4 form");
}

/* Both ends on this host: the same address, or a loopback remote in any of its forms. */
static void test_same_host(void)
{
	struct endpoint l, r;

	CHECK(endpoint__parse("10.0.0.1:2380", &l) == 0 &&
		  endpoint__parse("10.0.0.1:41000", &r) == 0,
	      "parse");
	CHECK(endpoint__same_host(l.family, l.addr, r.addr), "the same address");
	CHECK(endpoint__parse("10.0.0.2:41000", &r) == 0, "parse");
	CHECK(!endpoint__same_host(l.family, l.addr, r.addr), "another address: another host");
	CHECK(endpoint__parse("127.0.0.1:2379", &l) == 0 &&
		  endpoint__parse("127.0.0.3:2380", &r) == 0,
	      "parse");
	CHECK(endpoint__same_host(l.family, l.addr, r.addr), "127/8 is this host (the HA bed)");
	CHECK(endpoint__parse("[::1]:2379", &l) == 0 && endpoint__parse("[::1]:41000", &r) == 0,
	      "parse");
	CHECK(endpoint__same_host(l.family, l.addr, r.addr), "::1");
	CHECK(endpoint__parse("[fd00::1]:2379", &l) == 0 &&
		  endpoint__parse("[::ffff:127.0.0.2]:2380", &r) == 0,
	      "parse");
	CHECK(endpoint__same_host(l.family, l.addr, r.addr), "v4-mapped loopback");
	CHECK(endpoint__parse("[fd00::2]:2380", &r) == 0, "parse");
	CHECK(!endpoint__same_host(l.family, l.addr, r.addr), "another IPv6 address");
}

int main(void)
{
	test_same_host();
	test_format_parse();
	test_unknown_and_bad();
	test_equal();
	return check_summary("endpoint");
}
