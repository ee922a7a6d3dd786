/* goheap: a child process lays objects out as a Go program's are (a tls.Conn whose conn, directly
 * or through a wrapper's interface, leads to a net.conn whose netFD holds a real socket's
 * descriptor; the itabs in the executable's data), and the parent, reading its memory, must find
 * each tls.Conn at its address. Left at 0: a descriptor two tls.Conns answer for, one whose itab
 * does not hold up, one whose tls.Conn is TLS 1.2, one nothing leads to, and a descriptor with no
 * netFD at all. Then MANY more connections looked for in one search, their descriptors on both
 * sides of 64 (an etcd holds 60-odd silent ones): each found. Needs process_vm_readv on a child
 * (root, or Yama's ptrace_scope at most 1). */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "goheap.h"
#include "gotls.h"

enum { DIRECT, WRAPPED, TWICE, BAD_ITAB, TLS12, NO_CONN, NO_NETFD, CASES };
#define MANY 150

/* Go's abi.Type, as far as the itab check reads it: its hash at 16, its kind at 23. */
struct fake_type {
	uint8_t bytes[48];
};

/* Initialized, so that they are in the executable's file-backed data. */
static struct fake_type net_conn_type = { .bytes = { 1, [23] = 20 } };		    /* Interface */
static struct fake_type tcp_conn_type = { .bytes = { 1, [16] = 0x5a, [23] = 22 } }; /* Pointer */

struct fake_itab {
	const struct fake_type *inter, *type;
	uint32_t hash, pad;
};

static struct fake_itab good_itab = { &net_conn_type, &tcp_conn_type, 0x5a, 0 };
static struct fake_itab bad_itab = { &net_conn_type, &tcp_conn_type, 0x5b, 0 };

static uint8_t *arena, *arena_end;

static void *alloc(size_t n)
{
	void *p = arena;

	arena += (n + 15) & ~(size_t)15;
	return arena <= arena_end ? p : NULL;
}

static void put64(void *at, uint64_t v)
{
	memcpy(at, &v, sizeof(v));
}

static void put16(void *at, uint16_t v)
{
	memcpy(at, &v, sizeof(v));
}

/* A net.conn (its first word the *netFD) whose netFD holds fd, or just the netFD (conn NULL). */
static uint8_t *net_conn(int fd, bool with_conn)
{
	uint8_t *netfd = alloc(64), *conn = alloc(8);

	put64(netfd + 16, (uint64_t)fd);
	netfd[48] = 1; /* IsStream */
	netfd[49] = 1; /* ZeroReadIsEOF */
	netfd[50] = 0; /* isFile */
	put64(conn, (uint64_t)(uintptr_t)netfd);
	return with_conn ? conn : NULL;
}

static uint8_t *tls_conn(const struct tls_layout *l, const struct fake_itab *itab, void *data,
			 uint16_t vers)
{
	uint8_t *c = alloc(2048), *secret = alloc(32);

	memset(secret, 0x42, 32);
	put64(c, (uint64_t)(uintptr_t)itab);
	put64(c + 8, (uint64_t)(uintptr_t)data);
	put16(c + l->conn_vers, vers);
	put16(c + l->conn_cipher_suite, 0x1301);
	put16(c + l->conn_out + l->half_version, vers);
	put64(c + l->conn_out + l->half_traffic_secret, (uint64_t)(uintptr_t)secret);
	put64(c + l->conn_out + l->half_traffic_secret + 8, 32);
	put64(c + l->conn_out + l->half_traffic_secret + 16, 32);
	return c;
}

/* The child: the objects, then their addresses and descriptors to the parent; waits for it. */
static void child(const struct tls_layout *l, int out, int wait_fd)
{
	uint64_t msg[2 * CASES], many[2 * MANY];
	uint8_t *wrapper, *conn;
	int fds[CASES];
	char byte;

	arena = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED)
		_exit(2);
	memset(arena, 0, 1 << 20);
	arena_end = arena + (1 << 20);
	for (int i = 0; i < CASES; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		msg[CASES + i] = (uint64_t)fds[i];
		msg[i] = 0;
	}
	msg[DIRECT] = (uintptr_t)tls_conn(l, &good_itab, net_conn(fds[DIRECT], true), 0x0304);
	/* client-go's connrotation: closableConn{onClose func(); net.Conn}. */
	wrapper = alloc(24);
	put64(wrapper + 8, (uint64_t)(uintptr_t)&good_itab);
	put64(wrapper + 16, (uint64_t)(uintptr_t)net_conn(fds[WRAPPED], true));
	msg[WRAPPED] = (uintptr_t)tls_conn(l, &good_itab, wrapper, 0x0304);
	conn = net_conn(fds[TWICE], true);
	tls_conn(l, &good_itab, conn, 0x0304);
	tls_conn(l, &good_itab, conn, 0x0304);
	tls_conn(l, &bad_itab, net_conn(fds[BAD_ITAB], true), 0x0304);
	tls_conn(l, &good_itab, net_conn(fds[TLS12], true), 0x0303);
	net_conn(fds[NO_CONN], false);
	for (int i = 0; i < MANY; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		many[MANY + i] = (uint64_t)fd;
		many[i] = (uintptr_t)tls_conn(l, &good_itab, net_conn(fd, true), 0x0304);
	}
	if (write(out, msg, sizeof(msg)) != (ssize_t)sizeof(msg) ||
	    write(out, many, sizeof(many)) != (ssize_t)sizeof(many))
		_exit(3);
	(void)!read(wait_fd, &byte, 1);
	_exit(0);
}

int main(void)
{
	int to_parent[2], to_child[2], fds[CASES];
	uint64_t msg[2 * CASES], found[CASES], many[2 * MANY], many_found[MANY];
	int many_fds[MANY], n_right = 0;
	struct goheap_stats st = { 0 };
	struct tls_layout l;
	atomic_bool cancel = false;
	pid_t pid;
	int n;

	CHECK_INT(gotls__layout(1, 26, &l), 0);
	if (pipe(to_parent) || pipe(to_child))
		return 1;
	pid = fork();
	if (pid == 0) {
		close(to_parent[0]);
		close(to_child[1]);
		child(&l, to_parent[1], to_child[0]);
	}
	close(to_parent[1]);
	close(to_child[0]);
	CHECK(read(to_parent[0], msg, sizeof(msg)) == (ssize_t)sizeof(msg), "the child's objects");
	CHECK(read(to_parent[0], many, sizeof(many)) == (ssize_t)sizeof(many), "the many objects");
	for (int i = 0; i < CASES; i++)
		fds[i] = (int)msg[CASES + i];
	/* A descriptor the child does not have: no netFD leads to it. */
	fds[NO_NETFD] = 1000;

	/* Told to stop before it starts: it says so, nothing found. */
	atomic_store(&cancel, true);
	n = goheap__find_tls_conns(pid, &l, fds, CASES, found, NULL, &cancel);
	CHECK_INT(n, -ECANCELED);
	CHECK_INT(found[DIRECT], 0);
	atomic_store(&cancel, false);

	n = goheap__find_tls_conns(pid, &l, fds, CASES, found, &st, &cancel);
	CHECK_INT(n, 2);
	CHECK(found[DIRECT] && found[DIRECT] == msg[DIRECT], "direct: %#llx, want %#llx",
	      (unsigned long long)found[DIRECT], (unsigned long long)msg[DIRECT]);
	CHECK(found[WRAPPED] && found[WRAPPED] == msg[WRAPPED], "wrapped: %#llx, want %#llx",
	      (unsigned long long)found[WRAPPED], (unsigned long long)msg[WRAPPED]);
	CHECK_INT(found[TWICE], 0);
	CHECK_INT(st.ambiguous, 1);
	CHECK_INT(found[BAD_ITAB], 0);
	CHECK_INT(found[TLS12], 0);
	CHECK_INT(found[NO_CONN], 0);
	CHECK_INT(found[NO_NETFD], 0);
	CHECK(st.netfds >= 6, "netFDs found: %llu", (unsigned long long)st.netfds);
	CHECK(st.bytes_read >= 1 << 20, "bytes read: %llu", (unsigned long long)st.bytes_read);

	for (int i = 0; i < MANY; i++)
		many_fds[i] = (int)many[MANY + i];
	CHECK(many_fds[0] < 64 && many_fds[MANY - 1] > 128, "descriptors %d..%d", many_fds[0],
	      many_fds[MANY - 1]);
	n = goheap__find_tls_conns(pid, &l, many_fds, MANY, many_found, NULL, &cancel);
	CHECK_INT(n, MANY);
	for (int i = 0; i < MANY; i++)
		n_right += many_found[i] && many_found[i] == many[i];
	CHECK_INT(n_right, MANY);

	close(to_child[1]);
	waitpid(pid, NULL, 0);
	/* Gone: said so, nothing found. */
	n = goheap__find_tls_conns(pid, &l, fds, CASES, found, NULL, NULL);
	CHECK(n < 0, "a process that exited: %d", n);
	return check_summary("test_goheap");
}
