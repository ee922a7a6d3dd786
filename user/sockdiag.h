/* TCP sockets of this network namespace through NETLINK_SOCK_DIAG: the kernel filters by state
 * and looks up a 4-tuple directly, where /proc/net/tcp walks (and prints) every socket. */
#ifndef BINDTRACE_SOCKDIAG_H
#define BINDTRACE_SOCKDIAG_H

#include <stdint.h>

/* The local ports of listening TCP sockets (IPv4 and IPv6), up to max; -errno on failure. */
int sockdiag__listening_ports(uint16_t *ports, int max);

/* The inode of the TCP socket whose local address is src:sport and remote dst:dport; family is
 * AF_INET (addresses of 4 bytes) or AF_INET6 (16 bytes), addresses in network order, ports in
 * host order; 0 when there is none (or for another family). */
unsigned long sockdiag__inode(int family, const uint8_t *src, uint16_t sport, const uint8_t *dst,
			      uint16_t dport);

/* Is pid in this process's network namespace (so the two functions above see its sockets)? */
int sockdiag__same_netns(int pid);

#endif
