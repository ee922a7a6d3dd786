/* sockdiag against sockets this test opens: its listening port is listed, and the 4-tuple of
 * each end of a loopback connection gives that end's socket inode (fstat's st_ino), over IPv4
 * (127.0.0.1) and IPv6 (::1). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sockdiag.h"

static uint16_t local_port(int fd)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);

	getsockname(fd, (struct sockaddr *)&a, &len);
	return ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
					     : ((struct sockaddr_in *)&a)->sin_port);
}

static bool port_listed(uint16_t port)
{
	uint16_t ports[4096];
	int n = sockdiag__listening_ports(ports, 4096), i;

	for (i = 0; i < n; i++)
		if (ports[i] == port)
			return true;
	return false;
}

/* A listener and a connection on the loopback address of family. */
static void check_family(int family)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr *a = family == AF_INET ? (struct sockaddr *)&a4 : (struct sockaddr *)&a6;
	socklen_t alen = family == AF_INET ? sizeof(a4) : sizeof(a6);
	const char *name = family == AF_INET ? "IPv4" : "IPv6";
	uint8_t lo[16] = { 0 };
	int l = socket(family, SOCK_STREAM, 0), c = socket(family, SOCK_STREAM, 0), s;
	uint16_t lport, cport;
	struct stat cst, sst;

	if (family == AF_INET)
		memcpy(lo, (uint8_t[]){ 127, 0, 0, 1 }, 4);
	else
		lo[15] = 1;
	CHECK(l >= 0 && c >= 0, "%s sockets", name);
	CHECK(bind(l, a, alen) == 0 && listen(l, 1) == 0, "%s listen", name);
	lport = local_port(l);
	CHECK(port_listed(lport), "%s port %u among the listening", name, lport);
	getsockname(l, a, &alen);
	CHECK(connect(c, a, alen) == 0, "%s connect", name);
	s = accept(l, NULL, NULL);
	CHECK(s >= 0, "%s accept", name);
	cport = local_port(c);
	fstat(c, &cst);
	fstat(s, &sst);
	CHECK(sockdiag__inode(family, lo, cport, lo, lport) == cst.st_ino, "%s client end's inode",
	      name);
	CHECK(sockdiag__inode(family, lo, lport, lo, cport) == sst.st_ino, "%s server end's inode",
	      name);
	CHECK(sockdiag__inode(family, lo, cport, lo, (uint16_t)(lport + 1)) == 0,
	      "%s: no such connection", name);
	/* The other family's table does not hold this connection. */
	CHECK(sockdiag__inode(family == AF_INET ? AF_INET6 : AF_INET, lo, cport, lo, lport) == 0,
	      "%s connection not found as the other family", name);
	CHECK(!port_listed(cport), "%s: a connected port is not listening", name);
	close(s);
	close(c);
	close(l);
}

int main(void)
{
	const uint8_t lo[4] = { 127, 0, 0, 1 };

	check_family(AF_INET);
	check_family(AF_INET6);
	CHECK(sockdiag__inode(AF_UNIX, lo, 1, lo, 2) == 0, "another family: none");
	CHECK(sockdiag__same_netns(getpid()), "own network namespace");
	return check_summary("sockdiag");
}
