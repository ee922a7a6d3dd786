/* sockdiag against sockets this test opens: its listening port is listed, and the 4-tuple of
 * each end of a loopback connection gives that end's socket inode (fstat's st_ino). */
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
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	getsockname(fd, (struct sockaddr *)&a, &len);
	return ntohs(a.sin_port);
}

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	const uint8_t lo[4] = { 127, 0, 0, 1 };
	uint16_t ports[4096], lport, cport;
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), s, n, i;
	struct stat cst, sst;
	bool found = false;

	CHECK(l >= 0 && c >= 0, "sockets");
	CHECK(bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(l, 1) == 0, "listen");
	lport = local_port(l);
	n = sockdiag__listening_ports(ports, 4096);
	CHECK(n > 0, "listening ports: %d", n);
	for (i = 0; i < n; i++)
		found |= ports[i] == lport;
	CHECK(found, "port %u among the %d listening", lport, n);

	getsockname(l, (struct sockaddr *)&a, &len);
	CHECK(connect(c, (struct sockaddr *)&a, sizeof(a)) == 0, "connect");
	s = accept(l, NULL, NULL);
	CHECK(s >= 0, "accept");
	cport = local_port(c);
	fstat(c, &cst);
	fstat(s, &sst);
	CHECK(sockdiag__inode4(lo, cport, lo, lport) == cst.st_ino, "client end's inode");
	CHECK(sockdiag__inode4(lo, lport, lo, cport) == sst.st_ino, "server end's inode");
	CHECK(sockdiag__inode4(lo, cport, lo, (uint16_t)(lport + 1)) == 0, "no such connection");
	found = false;
	n = sockdiag__listening_ports(ports, 4096);
	for (i = 0; i < n; i++)
		found |= ports[i] == cport;
	CHECK(!found, "a connected port is not listening");
	CHECK(sockdiag__same_netns(getpid()), "own network namespace");
	close(s);
	close(c);
	close(l);
	return check_summary("sockdiag");
}
