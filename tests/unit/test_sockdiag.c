/* sockdiag against sockets this test opens: its listening port is listed, and the two ends of a
 * loopback connection give each end's socket inode (fstat's st_ino), over IPv4, over IPv6, and
 * between an IPv4 client and a dual-stack IPv6 listener (which sees it as ::ffff:127.0.0.1). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sockdiag.h"

/* One connection: listener l, client c, accepted s, each end as its own process sees it. */
struct conn {
	int l, c, s;
	struct endpoint c_local, c_remote, s_local, s_remote;
};

static void endpoint_of(int fd, bool peer, struct endpoint *e)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	uint8_t addr[16] = { 0 };
	uint16_t port = 0;

	if (peer)
		getpeername(fd, (struct sockaddr *)&a, &len);
	else
		getsockname(fd, (struct sockaddr *)&a, &len);
	if (a.ss_family == AF_INET) {
		memcpy(addr, &((struct sockaddr_in *)&a)->sin_addr, 4);
		port = ntohs(((struct sockaddr_in *)&a)->sin_port);
	} else {
		memcpy(addr, &((struct sockaddr_in6 *)&a)->sin6_addr, 16);
		port = ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
	}
	endpoint__set(e, a.ss_family, addr, port);
}

/* listen on family/listen_at, connect from client_family to connect_to. */
static bool open_conn(struct conn *k, int family, const char *listen_at, int client_family,
		      const char *connect_to)
{
	struct sockaddr_storage a = { 0 };
	socklen_t len;
	int off = 0;

	k->l = socket(family, SOCK_STREAM, 0);
	k->c = socket(client_family, SOCK_STREAM, 0);
	if (family == AF_INET6) {
		setsockopt(k->l, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
		((struct sockaddr_in6 *)&a)->sin6_family = AF_INET6;
		inet_pton(AF_INET6, listen_at, &((struct sockaddr_in6 *)&a)->sin6_addr);
		len = sizeof(struct sockaddr_in6);
	} else {
		((struct sockaddr_in *)&a)->sin_family = AF_INET;
		inet_pton(AF_INET, listen_at, &((struct sockaddr_in *)&a)->sin_addr);
		len = sizeof(struct sockaddr_in);
	}
	if (bind(k->l, (struct sockaddr *)&a, len) || listen(k->l, 1) ||
	    getsockname(k->l, (struct sockaddr *)&a, &len))
		return false;
	if (client_family != family) { /* IPv4 client of a dual-stack listener */
		struct sockaddr_in c = { .sin_family = AF_INET,
					 .sin_port = ((struct sockaddr_in6 *)&a)->sin6_port };

		inet_pton(AF_INET, connect_to, &c.sin_addr);
		if (connect(k->c, (struct sockaddr *)&c, sizeof(c)))
			return false;
	} else {
		if (family == AF_INET6)
			inet_pton(AF_INET6, connect_to, &((struct sockaddr_in6 *)&a)->sin6_addr);
		if (connect(k->c, (struct sockaddr *)&a, len))
			return false;
	}
	k->s = accept(k->l, NULL, NULL);
	if (k->s < 0)
		return false;
	endpoint_of(k->c, false, &k->c_local);
	endpoint_of(k->c, true, &k->c_remote);
	endpoint_of(k->s, false, &k->s_local);
	endpoint_of(k->s, true, &k->s_remote);
	return true;
}

struct find {
	unsigned long inode;
	struct endpoint local, remote;
	bool found;
};

static void find_inode(const struct sockdiag_socket *sock, void *ctx)
{
	struct find *f = ctx;

	if (sock->inode == f->inode) {
		f->found = true;
		f->local = sock->local;
		f->remote = sock->remote;
	}
}

static void check_conn(const char *name, struct conn *k)
{
	struct stat cst, sst;
	struct endpoint wrong = k->s_remote;
	struct find f = { 0 };

	fstat(k->c, &cst);
	fstat(k->s, &sst);
	/* Each end from what the other end sees, swapped: how the tracer finds a peer. */
	CHECK(sockdiag__inode(&k->s_remote, &k->s_local) == cst.st_ino,
	      "%s: client end from the server's view", name);
	CHECK(sockdiag__inode(&k->c_remote, &k->c_local) == sst.st_ino,
	      "%s: server end from the client's view", name);
	CHECK(sockdiag__inode(&k->c_local, &k->c_remote) == cst.st_ino, "%s: client end", name);
	wrong.port++;
	CHECK(sockdiag__inode(&wrong, &k->s_local) == 0, "%s: no such connection", name);
	f.inode = cst.st_ino;
	CHECK(sockdiag__each(SOCKDIAG_ESTABLISHED, find_inode, &f) == 0 && f.found,
	      "%s: the client end among the established", name);
	CHECK(endpoint__equal(&f.local, &k->c_local) && endpoint__equal(&f.remote, &k->c_remote),
	      "%s: with its ends %s -> %s", name, endpoint__str(&f.local).s,
	      endpoint__str(&f.remote).s);
}

static void close_conn(struct conn *k)
{
	close(k->s);
	close(k->c);
	close(k->l);
}

int main(void)
{
	uint16_t ports[4096];
	struct conn k;
	bool found = false;
	int n, i;

	CHECK(open_conn(&k, AF_INET, "127.0.0.1", AF_INET, "127.0.0.1"), "IPv4 connection");
	n = sockdiag__listening_ports(ports, 4096);
	CHECK(n > 0, "listening ports: %d", n);
	for (i = 0; i < n; i++)
		found |= ports[i] == k.s_local.port;
	CHECK(found, "port %u among the %d listening", k.s_local.port, n);
	found = false;
	for (i = 0; i < n; i++)
		found |= ports[i] == k.c_local.port;
	CHECK(!found, "a connected port is not listening");
	check_conn("IPv4", &k);
	close_conn(&k);

	if (open_conn(&k, AF_INET6, "::1", AF_INET6, "::1")) {
		CHECK(k.c_local.family == AF_INET6, "an IPv6 client end");
		check_conn("IPv6", &k);
	} else {
		printf("sockdiag: no IPv6 loopback here: IPv6 cases not run\n");
	}
	close_conn(&k);

	if (open_conn(&k, AF_INET6, "::", AF_INET, "127.0.0.1")) {
		CHECK(k.c_local.family == AF_INET && k.s_local.family == AF_INET6,
		      "an IPv4 client (%s) of a dual-stack listener (%s)",
		      endpoint__str(&k.c_local).s, endpoint__str(&k.s_local).s);
		check_conn("v4-mapped", &k);
	} else {
		printf("sockdiag: no dual-stack listener here: v4-mapped cases not run\n");
	}
	close_conn(&k);
	CHECK(sockdiag__same_netns(getpid()), "own network namespace");
	return check_summary("sockdiag");
}
