/* sockets__fd_path on this test's own descriptors: a descriptor number closed and opened again
 * for another file names the new file, not the one seen before. (etcd's next WAL segment took
 * the number of a snapshot file it had fsynced and closed; a name kept for (pid, fd) made every
 * later WAL fsync look like another file's, and etcd_wal_fsync went missing for every bind after
 * about 29,000 of a soak.) Once the descriptor is closed, the last name seen answers. With the
 * kernel's file id (fsync_event.file_id) the name read for an id answers for it.
 *
 * Listening ports: a port that began to listen after its namespace's table was read is found by
 * sockets__listening_at for a moment after the read (a restarted etcd's listener: its first
 * connection had been taken for one it made), and not for a moment before it; the address
 * counts, unless the listener's is the wildcard.
 *
 * Peers: the process at the other end of a connection is found for a connection made just after
 * the index of owners was read (a kubectl connecting within 100 ms of another client was never
 * found, so never traced as a watcher). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sockets.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A TCP listener on addr (host order) at a port the kernel picks; its port in *port. */
static int listen_any(uint32_t addr, uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(addr) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

static struct endpoint v4(uint32_t addr, uint16_t port)
{
	struct endpoint e;
	uint8_t a[16] = { (uint8_t)(addr >> 24), (uint8_t)(addr >> 16), (uint8_t)(addr >> 8),
			  (uint8_t)addr };

	endpoint__set(&e, AF_INET, a, port);
	return e;
}

static void check_listening_at(struct sockets *s)
{
	struct endpoint at, other;
	uint64_t before;
	uint16_t port = 0, any_port = 0;
	int fd, any;

	before = mono_ns();
	sockets__track(s, getpid());
	fd = listen_any(INADDR_LOOPBACK, &port);
	CHECK(fd >= 0, "a listener on 127.0.0.1");
	if (fd < 0)
		return;
	at = v4(INADDR_LOOPBACK, port);
	/* The table was read at sockets__track, before the listener. */
	CHECK(!sockets__is_listening(s, getpid(), &at), "port %u not in the table read before",
	      port);
	CHECK(!sockets__listening_at(s, getpid(), &at, before),
	      "asked as of before the read: the table stands");
	CHECK(sockets__listening_at(s, getpid(), &at, mono_ns()),
	      "asked as of now: read again, port %u listens", port);
	CHECK(sockets__is_listening(s, getpid(), &at), "and the table now has it");
	/* The same port on another address: a connection made from it is not an accepted one. */
	other = v4(INADDR_LOOPBACK + 1, port);
	CHECK(!sockets__listening_at(s, getpid(), &other, mono_ns()),
	      "127.0.0.2:%u: nothing listens there", port);
	/* A listener on every address answers for any. */
	any = listen_any(INADDR_ANY, &any_port);
	CHECK(any >= 0, "a listener on 0.0.0.0");
	other = v4(INADDR_LOOPBACK + 4, any_port);
	CHECK(sockets__listening_at(s, getpid(), &other, mono_ns()),
	      "127.0.0.5:%u: the wildcard listener", any_port);
	if (any >= 0)
		close(any);
	close(fd);
	sockets__untrack(s, getpid());
	CHECK(!sockets__listening_at(s, getpid(), &at, mono_ns()), "a pid not tracked: false");
}

/* A connection to the listener lfd: the client's descriptor, the accepted one in *server, and
 * the server's ends in *local and *remote. -1 on failure. */
static int connect_to(int lfd, uint16_t port, int *server, struct endpoint *local,
		      struct endpoint *remote)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) ||
	    (*server = accept(lfd, NULL, NULL)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*local = v4(INADDR_LOOPBACK, port);
	*remote = v4(INADDR_LOOPBACK, ntohs(sa.sin_port));
	return fd;
}

static void check_peer(struct sockets *s)
{
	struct endpoint local, remote;
	int lfd, c1, c2, s1 = -1, s2 = -1;
	uint16_t port = 0;
	uint64_t t0;

	lfd = listen_any(INADDR_LOOPBACK, &port);
	CHECK(lfd >= 0, "a listener for the peer lookups");
	if (lfd < 0)
		return;
	c1 = connect_to(lfd, port, &s1, &local, &remote);
	CHECK(c1 >= 0, "a first connection");
	if (c1 >= 0)
		CHECK_INT(sockets__peer(s, getpid(), &local, &remote, mono_ns()), getpid());
	/* Made now, after the index that answered the first was read (well within 100 ms): it
	 * is read again for it. */
	t0 = mono_ns();
	c2 = connect_to(lfd, port, &s2, &local, &remote);
	CHECK(c2 >= 0, "a second connection");
	if (c2 >= 0) {
		CHECK_INT(sockets__peer(s, getpid(), &local, &remote, mono_ns()), getpid());
		CHECK((mono_ns() - t0) < 100000000ull,
		      "the second lookup came within 100 ms of the index read for the first (%.1f "
		      "ms): it was a test of the rule",
		      (double)(mono_ns() - t0) / 1e6);
	}
	/* The client's end: the process is this one too. */
	if (c2 >= 0)
		CHECK_INT(sockets__peer(s, getpid(), &remote, &local, mono_ns()), getpid());
	/* Gone: nothing at the other end. */
	if (c2 >= 0) {
		close(c2);
		close(s2);
		c2 = -1;
		CHECK_INT(sockets__peer(s, getpid(), &local, &remote, mono_ns()), 0);
	}
	if (c1 >= 0) {
		close(c1);
		close(s1);
	}
	close(lfd);
}

/* Open a fresh file named like the template and return its descriptor; its path in *path. */
static int open_temp(char *path, size_t size, const char *name)
{
	int fd;

	snprintf(path, size, "/tmp/bindtrace-test-sockets-%s-XXXXXX", name);
	fd = mkstemp(path);
	return fd;
}

int main(void)
{
	struct sockets *s = sockets__new();
	char a[128], b[128], c[128], d[128];
	const char *got;
	int fa, fb, fc;

	if (!s) {
		fprintf(stderr, "test_sockets: sockets__new failed\n");
		return 1;
	}
	fa = open_temp(a, sizeof(a), "snap");
	CHECK(fa >= 0, "mkstemp %s", a);
	got = sockets__fd_path(s, getpid(), fa, 0);
	CHECK_STR(got, a);

	/* The number is freed and taken by the next open, as etcd's next WAL segment took it. */
	close(fa);
	fb = open_temp(b, sizeof(b), "wal");
	CHECK_INT(fb, fa);
	got = sockets__fd_path(s, getpid(), fb, 0);
	CHECK_STR(got, b);
	/* Asked again (every fsync asks): still the new file. */
	got = sockets__fd_path(s, getpid(), fb, 0);
	CHECK_STR(got, b);

	/* Closed: the last name seen for it answers, for an fsync reported after its close. */
	close(fb);
	got = sockets__fd_path(s, getpid(), fb, 0);
	CHECK_STR(got, b);

	/* Another process's descriptor number does not answer for this one. */
	fc = open_temp(c, sizeof(c), "other");
	got = sockets__fd_path(s, (pid_t)2147483000, fc, 0);
	CHECK_STR(got, "");
	close(fc);

	/* A descriptor never seen and not open: nothing. */
	got = sockets__fd_path(s, getpid(), 1000, 0);
	CHECK_STR(got, "");

	/* With the kernel's file id: the path read for an id answers for it without a readlink
	 * (shown by a descriptor that names another file now but comes with the old id), and
	 * another id reads the path again. */
	fa = open_temp(a, sizeof(a), "wal-1");
	CHECK(fa >= 0, "mkstemp %s", a);
	got = sockets__fd_path(s, getpid(), fa, 0x1234);
	CHECK_STR(got, a);
	close(fa);
	fb = open_temp(d, sizeof(d), "wal-2");
	CHECK_INT(fb, fa);
	got = sockets__fd_path(s, getpid(), fb, 0x1234);
	CHECK_STR(got, a);
	got = sockets__fd_path(s, getpid(), fb, 0x5678);
	CHECK_STR(got, d);
	/* An id of 0 (unknown) never answers from the cache. */
	got = sockets__fd_path(s, getpid(), fb, 0);
	CHECK_STR(got, d);
	close(fb);

	check_listening_at(s);
	check_peer(s);

	unlink(a);
	unlink(b);
	unlink(c);
	unlink(d);
	sockets__free(s);
	return check_summary("test_sockets");
}
