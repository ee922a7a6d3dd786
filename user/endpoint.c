/* Connection endpoints in binary, printed and parsed with inet_ntop/inet_pton: see endpoint.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "endpoint.h"
#include "util.h"

static const uint8_t v4_mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

void endpoint__set(struct endpoint *e, uint16_t family, const uint8_t addr[16], uint16_t port)
{
	memset(e, 0, sizeof(*e));
	if (family != AF_INET && family != AF_INET6)
		return;
	e->family = family;
	e->port = port;
	memcpy(e->addr, addr, family == AF_INET ? 4 : 16);
}

char *endpoint__format(const struct endpoint *e, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (!len)
		return buf;
	buf[0] = '\0';
	if (e->family != AF_INET && e->family != AF_INET6)
		return buf;
	/* IPv4 by hand: every stage of every bind's JSON has two endpoints, and inet_ntop and
	 * snprintf format through stdio. */
	if (e->family == AF_INET && len >= sizeof("255.255.255.255:65535")) {
		size_t n = 0;
		int i;

		for (i = 0; i < 4; i++) {
			n += util__fmt_ll(buf + n, e->addr[i]);
			buf[n++] = i < 3 ? '.' : ':';
		}
		n += util__fmt_ll(buf + n, e->port);
		buf[n] = '\0';
		return buf;
	}
	if (!inet_ntop(e->family, e->addr, ip, sizeof(ip)))
		return buf;
	snprintf(buf, len, e->family == AF_INET ? "%s:%u" : "[%s]:%u", ip, e->port);
	return buf;
}

struct endpoint_str endpoint__str(const struct endpoint *e)
{
	struct endpoint_str s;

	endpoint__format(e, s.s, sizeof(s.s));
	return s;
}

static int parse_port(const char *p, uint16_t *port)
{
	char *end;
	unsigned long v;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(p, &end, 10);
	if (errno || *end || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int endpoint__parse(const char *text, struct endpoint *e)
{
	char ip[INET6_ADDRSTRLEN];
	struct endpoint out = { 0 };
	const char *colon, *close;
	size_t n;

	if (!*text) {
		*e = out;
		return 0;
	}
	if (text[0] == '[') {
		close = strchr(text, ']');
		if (!close || close[1] != ':')
			return -EINVAL;
		n = (size_t)(close - text - 1);
		colon = close + 1;
		out.family = AF_INET6;
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - text);
		text--; /* no bracket to skip */
		out.family = AF_INET;
	}
	if (n == 0 || n >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, text + 1, n);
	ip[n] = '\0';
	if (inet_pton(out.family, ip, out.addr) != 1 || parse_port(colon + 1, &out.port))
		return -EINVAL;
	*e = out;
	return 0;
}

bool endpoint__ipv4(const struct endpoint *e, uint8_t out[4])
{
	if (e->family == AF_INET) {
		memcpy(out, e->addr, 4);
		return true;
	}
	if (e->family == AF_INET6 && memcmp(e->addr, v4_mapped_prefix, 12) == 0) {
		memcpy(out, e->addr + 12, 4);
		return true;
	}
	return false;
}

bool endpoint__equal(const struct endpoint *a, const struct endpoint *b)
{
	uint8_t a4[4], b4[4];
	bool a_is4, b_is4;

	if (a->port != b->port)
		return false;
	if (!a->family || !b->family)
		return a->family == b->family;
	a_is4 = endpoint__ipv4(a, a4);
	b_is4 = endpoint__ipv4(b, b4);
	if (a_is4 || b_is4)
		return a_is4 && b_is4 && memcmp(a4, b4, 4) == 0;
	return memcmp(a->addr, b->addr, 16) == 0;
}

bool endpoint__same_host(uint16_t family, const uint8_t local[16], const uint8_t remote[16])
{
	static const uint8_t v6_loopback[16] = { [15] = 1 };

	if (memcmp(local, remote, 16) == 0)
		return true;
	if (family == AF_INET)
		return remote[0] == 127;
	if (memcmp(remote, v6_loopback, sizeof(v6_loopback)) == 0)
		return true;
	/* ::ffff:127.x.y.z */
	return memcmp(remote, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0 && remote[12] == 127;
}

bool endpoint__in(const struct endpoint *e, const struct endpoint *addrs, int n)
{
	struct endpoint x = *e;
	int i;

	for (i = 0; i < n; i++) {
		x.port = addrs[i].port;
		if (endpoint__equal(&x, &addrs[i]))
			return true;
	}
	return false;
}
