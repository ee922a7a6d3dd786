/* TCP sockets of this network namespace through NETLINK_SOCK_DIAG: the kernel filters by state
 * and looks up a 4-tuple directly, where /proc/net/tcp walks (and prints) every socket. */
#ifndef BINDTRACE_SOCKDIAG_H
#define BINDTRACE_SOCKDIAG_H

#include <stdint.h>

#include "endpoint.h"

/* TCP states, as masks for sockdiag__each. */
#define SOCKDIAG_ESTABLISHED (1u << 1)
#define SOCKDIAG_LISTEN (1u << 10)

struct sockdiag_socket {
	struct endpoint local, remote;
	uint8_t state; /* TCP_ESTABLISHED 1, TCP_LISTEN 10, ... */
	unsigned long inode;
};

/* Calls fn for every TCP socket, IPv4 and IPv6, in one of states (a mask). 0 or -errno. */
int sockdiag__each(uint32_t states, void (*fn)(const struct sockdiag_socket *sock, void *ctx),
		   void *ctx);

/* The local ports of listening TCP sockets (IPv4 and IPv6), up to max; -errno on failure. */
int sockdiag__listening_ports(uint16_t *ports, int max);

/* The inode of the TCP socket whose local end is `local` and remote end `remote`; 0 when there is
 * none. IPv4 ends may be given as v4-mapped IPv6 ones, and are found whatever the family of the
 * socket (an IPv4 client of a dual-stack listener is an AF_INET6 socket on one end only). */
unsigned long sockdiag__inode(const struct endpoint *local, const struct endpoint *remote);

/* Is pid in this process's network namespace (so the two functions above see its sockets)? */
int sockdiag__same_netns(int pid);

#endif
