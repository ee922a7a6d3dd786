/* The traced processes' sockets and descriptors, from sock_diag and /proc: see sockets.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sockdiag.h"
#include "sockets.h"
#include "util.h"

#define MAX_NETNS 8
#define MAX_TRACKED 64
#define MAX_PORTS 512
#define LISTEN_REFRESH_NS 1000000000ull
#define OWNERS_FRESH_NS 100000000ull	 /* an inode not in the index: read again after */
#define OWNERS_MAX_AGE_NS 10000000000ull /* the index is read again anyway after */
#define FD_CACHE 64
#define TCP_ESTABLISHED 1
#define TCP_LISTEN 10

/* The listening sockets of one network namespace: address and port (a wildcard address for one
 * that listens on all). */
struct listen_table {
	uint64_t netns; /* inode of /proc/PID/ns/net; 0: slot unused */
	bool ours;	/* our own namespace: sock_diag answers for it */
	uint64_t read_ns;
	struct endpoint at[MAX_PORTS];
	int n;
};

struct tracked {
	pid_t pid; /* 0: slot unused */
	int table;
};

struct owner {
	uint64_t inode;
	pid_t pid;
};

struct sockets {
	uint64_t own_netns;
	struct listen_table tables[MAX_NETNS];
	struct tracked tracked[MAX_TRACKED];
	struct owner *owners; /* sorted by inode */
	size_t n_owners;
	uint64_t owners_ns; /* when built; 0: never */
	struct {
		pid_t pid;
		int fd;
		uint64_t file_id; /* what the kernel said fd named when path was read; 0: unknown */
		char path[256];
	} fd_cache[FD_CACHE];
	char fd_path[256]; /* sockets__fd_path's readlink, before it is cached */
};

static uint64_t netns_of(const char *pid_dir)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/ns/net", pid_dir);
	return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

struct sockets *sockets__new(void)
{
	struct sockets *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->own_netns = netns_of("/proc/self");
	return s;
}

void sockets__free(struct sockets *s)
{
	if (!s)
		return;
	free(s->owners);
	free(s);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- /proc, each read in one place ---- */

/* Calls fn with each socket descriptor of pid and its socket's inode; false from fn stops. */
static void each_socket_fd(pid_t pid, bool (*fn)(void *ctx, int fd, uint64_t ino), void *ctx)
{
	char path[64], link[64];
	struct dirent *de;
	uint64_t ino;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		ssize_t len;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		len = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		if (sscanf(link, "socket:[%llu]", (unsigned long long *)&ino) != 1)
			continue;
		if (!fn(ctx, atoi(de->d_name), ino))
			break;
	}
	closedir(d);
}

struct inode_list {
	uint64_t *inos;
	size_t n, cap;
};

static bool add_inode(void *ctx, int fd, uint64_t ino)
{
	struct inode_list *l = ctx;

	(void)fd;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		uint64_t *more = realloc(l->inos, cap * sizeof(*more));

		if (!more)
			return false;
		l->inos = more;
		l->cap = cap;
	}
	l->inos[l->n++] = ino;
	return true;
}

uint64_t *sockets__open_inodes(pid_t pid, size_t *n)
{
	struct inode_list l = { 0 };

	each_socket_fd(pid, add_inode, &l);
	if (l.n)
		qsort(l.inos, l.n, sizeof(*l.inos), cmp_u64);
	*n = l.n;
	return l.inos;
}

struct fds_of {
	const uint64_t *inodes;
	int n, *fds;
};

static bool match_inode(void *ctx, int fd, uint64_t ino)
{
	struct fds_of *f = ctx;

	for (int i = 0; i < f->n; i++)
		if (f->inodes[i] == ino)
			f->fds[i] = fd;
	return true;
}

void sockets__fds_of_inodes(pid_t pid, const uint64_t *inodes, int n, int *fds)
{
	struct fds_of f = { inodes, n, fds };

	for (int i = 0; i < n; i++)
		fds[i] = -1;
	each_socket_fd(pid, match_inode, &f);
}

/* "0100007F" or 32 hex digits as /proc/net/tcp* prints them: 32-bit words in host order. */
static bool proc_address(const char *hex, uint8_t *out, size_t len)
{
	size_t i;

	if (strlen(hex) != len * 2)
		return false;
	for (i = 0; i < len; i += 4) {
		char word[9];
		uint32_t v;

		memcpy(word, hex + i * 2, 8);
		word[8] = '\0';
		v = (uint32_t)strtoul(word, NULL, 16);
		memcpy(out + i, &v, 4);
	}
	return true;
}

/* The sockets in one of states of /proc/PID/net/tcp and tcp6: pid's network namespace. */
static void proc_tcp_each(pid_t pid, uint32_t states,
			  void (*fn)(const struct sockdiag_socket *sock, void *ctx), void *ctx)
{
	static const struct {
		const char *file;
		uint16_t family;
		size_t len;
	} tables[] = { { "tcp", AF_INET, 4 }, { "tcp6", AF_INET6, 16 } };
	char path[64], line[512], local[40], remote[40];
	unsigned int lport, rport, state;
	size_t t;
	FILE *in;

	for (t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		snprintf(path, sizeof(path), "/proc/%d/net/%s", pid, tables[t].file);
		in = fopen(path, "r");
		if (!in)
			continue;
		while (fgets(line, sizeof(line), in)) {
			struct sockdiag_socket sock = { 0 };
			uint8_t la[16] = { 0 }, ra[16] = { 0 };

			/* "  0: 0100007F:5CE6 00000000:0000 0A ... uid timeout inode" */
			if (sscanf(
				line,
				" %*d: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x %*s %*s %*s %*u %*u "
				"%lu",
				local, &lport, remote, &rport, &state, &sock.inode) != 6 ||
			    state > 31 || !(states & (1u << state)) ||
			    !proc_address(local, la, tables[t].len) ||
			    !proc_address(remote, ra, tables[t].len))
				continue;
			endpoint__set(&sock.local, tables[t].family, la, (uint16_t)lport);
			endpoint__set(&sock.remote, tables[t].family, ra, (uint16_t)rport);
			sock.state = (uint8_t)state;
			fn(&sock, ctx);
		}
		fclose(in);
	}
}

/* The TCP sockets in one of states of a namespace: sock_diag in ours (the kernel filters; a
 * /proc table lists every socket, thousands in TIME_WAIT on a busy node), /proc through pid in
 * another. */
static void tcp_each(bool ours, pid_t pid, uint32_t states,
		     void (*fn)(const struct sockdiag_socket *sock, void *ctx), void *ctx)
{
	if (!ours || sockdiag__each(states, fn, ctx) != 0)
		proc_tcp_each(pid, states, fn, ctx);
}

/* ---- Listening ports, per namespace ---- */

static void add_port(const struct sockdiag_socket *sock, void *ctx)
{
	struct listen_table *t = ctx;
	int i;

	for (i = 0; i < t->n; i++)
		if (endpoint__equal(&t->at[i], &sock->local))
			return;
	if (t->n < MAX_PORTS)
		t->at[t->n++] = sock->local;
}

/* 0.0.0.0 or ::: a socket listening there listens on every address. */
static bool wildcard(const struct endpoint *e)
{
	static const uint8_t zero[16];

	return memcmp(e->addr, zero, e->family == AF_INET ? 4 : 16) == 0;
}

static void read_listening(struct listen_table *t, pid_t pid)
{
	t->n = 0;
	t->read_ns = util__monotonic_ns();
	tcp_each(t->ours, pid, SOCKDIAG_LISTEN, add_port, t);
}

static int table_of(struct sockets *s, uint64_t netns)
{
	int i, free_slot = -1;

	for (i = 0; i < MAX_NETNS; i++) {
		if (s->tables[i].netns == netns)
			return i;
		if (!s->tables[i].netns && free_slot < 0)
			free_slot = i;
	}
	return free_slot;
}

static const struct tracked *tracked_of(const struct sockets *s, pid_t pid)
{
	int i;

	for (i = 0; i < MAX_TRACKED; i++)
		if (s->tracked[i].pid == pid)
			return &s->tracked[i];
	return NULL;
}

void sockets__track(struct sockets *s, pid_t pid)
{
	char dir[32];
	uint64_t netns;
	int i, t;

	if (pid <= 0 || tracked_of(s, pid))
		return;
	snprintf(dir, sizeof(dir), "/proc/%d", pid);
	netns = netns_of(dir);
	if (!netns || (t = table_of(s, netns)) < 0)
		return;
	for (i = 0; i < MAX_TRACKED && s->tracked[i].pid; i++)
		;
	if (i == MAX_TRACKED)
		return;
	s->tracked[i].pid = pid;
	s->tracked[i].table = t;
	if (s->tables[t].netns != netns) {
		s->tables[t].netns = netns;
		s->tables[t].ours = netns == s->own_netns;
		read_listening(&s->tables[t], pid);
	}
}

void sockets__untrack(struct sockets *s, pid_t pid)
{
	int i, t;

	for (i = 0; i < MAX_TRACKED; i++) {
		if (s->tracked[i].pid != pid)
			continue;
		t = s->tracked[i].table;
		s->tracked[i].pid = 0;
		for (i = 0; i < MAX_TRACKED; i++)
			if (s->tracked[i].pid && s->tracked[i].table == t)
				return;
		s->tables[t].netns = 0; /* nobody traced there any more */
		return;
	}
}

void sockets__refresh(struct sockets *s, uint64_t now_ns)
{
	int i;

	for (i = 0; i < MAX_TRACKED; i++) {
		struct listen_table *t = &s->tables[s->tracked[i].table];

		if (s->tracked[i].pid && now_ns >= t->read_ns + LISTEN_REFRESH_NS)
			read_listening(t, s->tracked[i].pid);
	}
}

/* A listener of t at local: on its address, or on all (then the port alone decides). */
static bool in_table(const struct listen_table *t, const struct endpoint *local)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (wildcard(&t->at[i]) ? t->at[i].port == local->port
					: endpoint__equal(&t->at[i], local))
			return true;
	return false;
}

bool sockets__is_listening(const struct sockets *s, pid_t pid, const struct endpoint *local)
{
	const struct tracked *tr = tracked_of(s, pid);

	return tr && in_table(&s->tables[tr->table], local);
}

bool sockets__listening_at(struct sockets *s, pid_t pid, const struct endpoint *local,
			   uint64_t ts_ns)
{
	const struct tracked *tr = tracked_of(s, pid);
	struct listen_table *t;

	if (!tr)
		return false;
	t = &s->tables[tr->table];
	if (in_table(t, local))
		return true;
	/* Read before the moment asked about: the port may have begun listening since (a
	 * restarted etcd: read while it was down, the table lacked its port for up to a second,
	 * and its first connection was taken for one it had made). */
	if (t->read_ns >= ts_ns)
		return false;
	read_listening(t, pid);
	return in_table(t, local);
}

/* ---- Peers ---- */

static int cmp_owner(const void *a, const void *b)
{
	return cmp_u64(&((const struct owner *)a)->inode, &((const struct owner *)b)->inode);
}

/* The index of every process's sockets: one pass over /proc/PID/fd. */
static void build_owners(struct sockets *s)
{
	struct owner *owners = NULL;
	size_t n = 0, cap = 0, k, n_inodes;
	struct dirent *de;
	DIR *proc;

	s->n_owners = 0;
	s->owners_ns = util__monotonic_ns();
	proc = opendir("/proc");
	if (!proc)
		return;
	while ((de = readdir(proc))) {
		pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);
		uint64_t *inodes;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		inodes = sockets__open_inodes(pid, &n_inodes);
		for (k = 0; k < n_inodes; k++) {
			if (n == cap) {
				struct owner *more =
				    realloc(owners, (cap ? cap * 2 : 1024) * sizeof(*owners));

				if (!more)
					break;
				owners = more;
				cap = cap ? cap * 2 : 1024;
			}
			owners[n].inode = inodes[k];
			owners[n++].pid = pid;
		}
		free(inodes);
	}
	closedir(proc);
	if (n)
		qsort(owners, n, sizeof(*owners), cmp_owner);
	free(s->owners);
	s->owners = owners;
	s->n_owners = n;
}

static pid_t owner_of(struct sockets *s, uint64_t inode, uint64_t seen_ns)
{
	struct owner key = { .inode = inode }, *o = NULL;
	uint64_t now = util__monotonic_ns();

	/* A socket's inode number is not reused while it lives, so an index that has it names its
	 * owner: the index is read again only for an inode it lacks, when it is old or was read
	 * before the connection was seen (its socket existed by then, so it may be newer than the
	 * index). Rebuilt for every new connection instead, the apiserver's clients at start cost
	 * a pass over every process's descriptors each (19,000 readlinks at start on a loaded test
	 * bed, where one pass took longer than the index stayed fresh); they were all seen before
	 * the first pass, which answers for them. Until stop 48 an index under 100 ms old was not
	 * read again for a newer connection: a kubectl that connected then was never found, so
	 * never traced as a watcher (2 of 12 started during a bind burst; one of 8 started 30 ms
	 * apart). */
	if (s->owners_ns && now < s->owners_ns + OWNERS_MAX_AGE_NS && s->n_owners)
		o = bsearch(&key, s->owners, s->n_owners, sizeof(key), cmp_owner);
	if (!o &&
	    (!s->owners_ns || now >= s->owners_ns + OWNERS_FRESH_NS || s->owners_ns < seen_ns)) {
		build_owners(s);
		o = s->n_owners ? bsearch(&key, s->owners, s->n_owners, sizeof(key), cmp_owner)
				: NULL;
	}
	return o ? o->pid : 0;
}

struct swapped {
	const struct endpoint *local, *remote;
	unsigned long inode;
};

static void match_swapped(const struct sockdiag_socket *sock, void *ctx)
{
	struct swapped *w = ctx;

	if (!w->inode && endpoint__equal(&sock->local, w->remote) &&
	    endpoint__equal(&sock->remote, w->local))
		w->inode = sock->inode;
}

pid_t sockets__peer(struct sockets *s, pid_t pid, const struct endpoint *local,
		    const struct endpoint *remote, uint64_t seen_ns)
{
	const struct tracked *tr = tracked_of(s, pid);
	struct swapped w = { local, remote, 0 };
	bool ours;

	if (!local->family || !remote->family)
		return 0;
	ours = tr ? s->tables[tr->table].ours : sockdiag__same_netns(pid);
	if (ours)
		w.inode = sockdiag__inode(remote, local);
	else
		proc_tcp_each(pid, ~0u, match_swapped, &w);
	return w.inode ? owner_of(s, w.inode, seen_ns) : 0;
}

struct accepted {
	struct sockets *s;
	pid_t pid;
	uint64_t *own;
	size_t n_own;
	void (*fn)(void *ctx, uint64_t conn, const struct endpoint *local,
		   const struct endpoint *remote);
	void *ctx;
};

static void take_accepted(const struct sockdiag_socket *sock, void *ctx)
{
	struct accepted *a = ctx;
	uint64_t inode = sock->inode;

	if (bsearch(&inode, a->own, a->n_own, sizeof(inode), cmp_u64) &&
	    sockets__is_listening(a->s, a->pid, &sock->local))
		a->fn(a->ctx, inode, &sock->local, &sock->remote);
}

void sockets__each_accepted(struct sockets *s, pid_t pid,
			    void (*fn)(void *ctx, uint64_t conn, const struct endpoint *local,
				       const struct endpoint *remote),
			    void *ctx)
{
	struct accepted a = { .s = s, .pid = pid, .fn = fn, .ctx = ctx };
	const struct tracked *tr;

	sockets__track(s, pid);
	tr = tracked_of(s, pid);
	/* The namespace's table lists every process's sockets: only pid's own count. */
	a.own = sockets__open_inodes(pid, &a.n_own);
	if (tr && a.own)
		tcp_each(s->tables[tr->table].ours, pid, SOCKDIAG_ESTABLISHED, take_accepted, &a);
	free(a.own);
}

/* ---- A process's own sockets ---- */

struct own_each {
	uint64_t *own;
	size_t n_own;
	void (*fn)(void *ctx, const struct endpoint *local, const struct endpoint *remote,
		   bool listening, uint64_t inode);
	void *ctx;
};

static void take_own(const struct sockdiag_socket *sock, void *ctx)
{
	struct own_each *a = ctx;
	uint64_t inode = sock->inode;

	if (bsearch(&inode, a->own, a->n_own, sizeof(inode), cmp_u64))
		a->fn(a->ctx, &sock->local, &sock->remote, sock->state == TCP_LISTEN, inode);
}

void sockets__each_own(pid_t pid, uint32_t states,
		       void (*fn)(void *ctx, const struct endpoint *local,
				  const struct endpoint *remote, bool listening, uint64_t inode),
		       void *ctx)
{
	struct own_each a = { .fn = fn, .ctx = ctx };

	a.own = sockets__open_inodes(pid, &a.n_own);
	if (a.own)
		proc_tcp_each(pid, states, take_own, &a);
	free(a.own);
}

/* ---- Descriptors ---- */

const char *sockets__fd_path(struct sockets *s, pid_t pid, int fd, uint64_t file_id)
{
	unsigned int slot = ((unsigned int)pid * 31u + (unsigned int)fd) % FD_CACHE;
	char link[64];
	ssize_t n;

	/* The kernel said which file the descriptor named (file_id): the path read for that
	 * answers without a readlink, one per fsync otherwise. Without it, read each time: a
	 * descriptor number is reused (etcd's next WAL segment may get the number of a snapshot
	 * file it closed, and a path cached for it would say "not the WAL" for every fsync after),
	 * and the cached path answers only when the descriptor is already closed. */
	if (file_id && s->fd_cache[slot].file_id == file_id && s->fd_cache[slot].pid == pid &&
	    s->fd_cache[slot].fd == fd && s->fd_cache[slot].path[0])
		return s->fd_cache[slot].path;
	snprintf(link, sizeof(link), "/proc/%d/fd/%d", pid, fd);
	n = readlink(link, s->fd_path, sizeof(s->fd_path) - 1);
	if (n > 0) {
		s->fd_path[n] = '\0';
		memcpy(s->fd_cache[slot].path, s->fd_path, (size_t)n + 1);
		s->fd_cache[slot].pid = pid;
		s->fd_cache[slot].fd = fd;
		s->fd_cache[slot].file_id = file_id;
		return s->fd_cache[slot].path;
	}
	if (s->fd_cache[slot].pid == pid && s->fd_cache[slot].fd == fd)
		return s->fd_cache[slot].path;
	return "";
}
