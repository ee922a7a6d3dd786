/* NETLINK_SOCK_DIAG queries for TCP sockets: see sockdiag.h. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "sockdiag.h"

#define TCP_STATE_LISTEN 10

struct diag_request {
	struct nlmsghdr nlh;
	struct inet_diag_req_v2 req;
};

static int diag_open(void)
{
	/* The kernel answers at once; a timeout keeps a surprise from ever stalling the tracer. */
	struct timeval tv = { .tv_sec = 1 };
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int diag_send(int fd, uint8_t family, uint32_t states, const struct inet_diag_sockid *id,
		     int dump)
{
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	struct diag_request r;

	memset(&r, 0, sizeof(r));
	r.nlh.nlmsg_len = sizeof(r);
	r.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	r.nlh.nlmsg_flags = NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0);
	r.req.sdiag_family = family;
	r.req.sdiag_protocol = IPPROTO_TCP;
	r.req.idiag_states = states;
	if (id)
		r.req.id = *id;
	return sendto(fd, &r, sizeof(r), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0 ? -errno : 0;
}

/* Calls fn for each inet_diag_msg of the answer: until NLMSG_DONE for a dump, after the one
 * message (or error) of a lookup. */
static int diag_receive(int fd, void (*fn)(const struct inet_diag_msg *m, void *ctx), void *ctx,
			int dump)
{
	char buf[16384] __attribute__((aligned(8)));

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				return h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error
					   ? e->error
					   : 0;
			}
			if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
			    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
				fn(NLMSG_DATA(h), ctx);
			if (!dump)
				return 0;
		}
	}
}

struct ports {
	uint16_t *ports;
	int n, max;
};

static void add_port(const struct inet_diag_msg *m, void *ctx)
{
	struct ports *p = ctx;
	uint16_t port = ntohs(m->id.idiag_sport);

	for (int i = 0; i < p->n; i++)
		if (p->ports[i] == port)
			return;
	if (p->n < p->max)
		p->ports[p->n++] = port;
}

int sockdiag__listening_ports(uint16_t *ports, int max)
{
	static const uint8_t families[] = { AF_INET, AF_INET6 };
	struct ports p = { ports, 0, max };
	int fd = diag_open(), err = 0;

	if (fd < 0)
		return -errno;
	for (size_t f = 0; f < sizeof(families) && !err; f++) {
		err = diag_send(fd, families[f], 1u << TCP_STATE_LISTEN, NULL, 1);
		if (!err)
			err = diag_receive(fd, add_port, &p, 1);
	}
	close(fd);
	return err ? err : p.n;
}

static void take_inode(const struct inet_diag_msg *m, void *ctx)
{
	*(unsigned long *)ctx = m->idiag_inode;
}

unsigned long sockdiag__inode(int family, const uint8_t *src, uint16_t sport, const uint8_t *dst,
			      uint16_t dport)
{
	size_t alen = family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
	struct inet_diag_sockid id;
	unsigned long inode = 0;
	int fd;

	if (!alen)
		return 0;
	fd = diag_open();
	if (fd < 0)
		return 0;
	memset(&id, 0, sizeof(id));
	memcpy(&id.idiag_src[0], src, alen);
	memcpy(&id.idiag_dst[0], dst, alen);
	id.idiag_sport = htons(sport);
	id.idiag_dport = htons(dport);
	id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (diag_send(fd, (uint8_t)family, ~0u, &id, 0) == 0)
		diag_receive(fd, take_inode, &inode, 0);
	close(fd);
	return inode;
}

int sockdiag__same_netns(int pid)
{
	char path[64];
	struct stat self, other;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	return stat("/proc/self/ns/net", &self) == 0 && stat(path, &other) == 0 &&
	       self.st_ino == other.st_ino && self.st_dev == other.st_dev;
}
