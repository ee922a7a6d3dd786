/* One end of a TCP connection as the kernel gives it: address family, address and port, kept in
 * binary. Everything that compares connections compares these; everything that prints one prints
 * it with endpoint__format() (inet_ntop: "127.0.0.1:6443", "[::1]:6443"), so every output spells
 * an address the same way and nothing matches on text.
 *
 * An IPv4 client of a dual-stack (IPv6) listener is seen from the listener's side as the
 * v4-mapped address ::ffff:a.b.c.d and from its own side as a.b.c.d: the two are the same end, and
 * endpoint__equal() says so. Each is printed as the kernel reported it. */
#ifndef BINDTRACE_ENDPOINT_H
#define BINDTRACE_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "[" + the longest inet_ntop IPv6 text (45) + "]:65535" + NUL, rounded up. */
#define ENDPOINT_STRLEN 56

struct endpoint {
	uint16_t family;  /* AF_INET or AF_INET6; 0: not known (printed as "") */
	uint16_t port;	  /* host order */
	uint8_t addr[16]; /* network order; IPv4 in addr[0..3], the rest 0 */
};

/* An endpoint's text, held by value: endpoint__str(&e).s lives until the end of the full
 * expression that calls it (C11 temporary lifetime), long enough for printf or json_string. */
struct endpoint_str {
	char s[ENDPOINT_STRLEN];
};

/* From the kernel's fields (struct data_event: family, 16 address bytes, port). A family other
 * than AF_INET and AF_INET6 gives the unknown endpoint (all 0). */
void endpoint__set(struct endpoint *e, uint16_t family, const uint8_t addr[16], uint16_t port);

/* Writes "a.b.c.d:port", "[v6]:port", or "" for an unknown endpoint, into buf (len >=
 * ENDPOINT_STRLEN never cuts). Returns buf. */
char *endpoint__format(const struct endpoint *e, char *buf, size_t len);
struct endpoint_str endpoint__str(const struct endpoint *e);

/* The inverse of endpoint__format: "a.b.c.d:port" or "[v6]:port"; "" gives the unknown
 * endpoint. 0, or -EINVAL (e untouched) for anything else. For recorded captures and tests. */
int endpoint__parse(const char *text, struct endpoint *e);

/* The same end: same port and address, an IPv4 address equal to its v4-mapped IPv6 form. Two
 * unknown endpoints are equal (a record without addresses matches on its other keys). */
bool endpoint__equal(const struct endpoint *a, const struct endpoint *b);

/* Whether e's address is one of addrs' (ports ignored; IPv4 equal to its v4-mapped form). */
bool endpoint__in(const struct endpoint *e, const struct endpoint *addrs, int n);

/* Whether a connection's two ends are on this host: the remote has the local address, or a
 * loopback one (127/8, ::1, ::ffff:127.x.y.z). Raw addresses (network order, as endpoint.addr):
 * the peer feed asks it of each Write. */
bool endpoint__same_host(uint16_t family, const uint8_t local[16], const uint8_t remote[16]);

/* The IPv4 address of an AF_INET endpoint or of a v4-mapped IPv6 one, in out; false otherwise. */
bool endpoint__ipv4(const struct endpoint *e, uint8_t out[4]);

#endif
