/* A socket's *tls.Conn in a Go process's memory (goheap.h). Its resident heap pages are read a
 * chunk at a time, in passes: the poll.FDs holding a wanted descriptor, the net.conns pointing at
 * them, then up to four times the words pointing at what the last pass found (a tls.Conn's or a
 * wrapper's interface data, a wrapper's pointer). Each tls.Conn so found is then checked whole,
 * by the same walk the BPF does from a Write's receiver, reading the process's memory at each
 * step. Memory held: one chunk and the sets, whatever the heap's size; time: a few passes over
 * its resident pages. */
#include "goheap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util.h"

#define PAGE 4096ull
#define MAX_RANGES 64
#define MAX_REGIONS 4096 /* private anonymous mappings searched */
#define MAX_REGION_BYTES (16ull << 30)
/* Descriptors above this are not looked for (the BPF side's bound too). */
#define FD_LIMIT (1 << 20)
/* tls.Conn.conn's search tree, as bpf/capture.bpf.c's CONN_TREE_NODES: up to three wrappers. */
#define TREE_NODES 40
#define TREE_DEPTH 3
#define GO_KIND_INTERFACE 20
#define CHUNK (1u << 20)
/* Looked at around each word: a wrapper's itab 16 bytes before, a poll.FD's flags 50 after. */
#define BEFORE 16
#define AFTER 56
/* Objects kept per pass (a set that grows past it stops growing: counted). */
#define MAX_FOUND 4096

struct range {
	uint64_t start, end;
};

struct memory {
	pid_t pid;
	struct range *runs; /* resident pages of the heap, adjacent ones joined */
	size_t n, cap;
	uint64_t bytes;
	struct range exe[MAX_RANGES];
	int n_exe;
	uint8_t *chunk; /* CHUNK + BEFORE + AFTER */
	uint64_t truncated;
	const atomic_bool *cancel; /* looked at as each chunk is read */
};

/* Addresses (never 0), each with the descriptor it leads to: open addressing. */
struct addr_set {
	uint64_t *keys;
	int *fds;
	size_t mask, n;
	uint64_t lo, hi; /* bounds of the keys: most words are rejected on them */
};

static int addr_set__init(struct addr_set *a)
{
	size_t slots = 4 * MAX_FOUND;

	memset(a, 0, sizeof(*a));
	a->keys = calloc(slots, sizeof(*a->keys));
	a->fds = calloc(slots, sizeof(*a->fds));
	a->mask = slots - 1;
	a->lo = UINT64_MAX;
	return a->keys && a->fds ? 0 : -ENOMEM;
}

static void addr_set__free(struct addr_set *a)
{
	free(a->keys);
	free(a->fds);
}

static size_t slot_of(const struct addr_set *a, uint64_t addr)
{
	return (size_t)(((addr >> 3) * 0x9e3779b97f4a7c15ull) >> 20) & a->mask;
}

/* false when it is full. */
static bool addr_set__add(struct addr_set *a, uint64_t addr, int fd)
{
	size_t i = slot_of(a, addr);

	while (a->keys[i] && a->keys[i] != addr)
		i = (i + 1) & a->mask;
	if (a->keys[i])
		return true;
	if (a->n >= MAX_FOUND)
		return false;
	a->keys[i] = addr;
	a->fds[i] = fd;
	a->n++;
	if (addr < a->lo)
		a->lo = addr;
	if (addr > a->hi)
		a->hi = addr;
	return true;
}

/* The descriptor addr leads to, or -1. */
static int addr_set__get(const struct addr_set *a, uint64_t addr)
{
	size_t i;

	if (addr < a->lo || addr > a->hi || !addr)
		return -1;
	for (i = slot_of(a, addr); a->keys[i]; i = (i + 1) & a->mask)
		if (a->keys[i] == addr)
			return a->fds[i];
	return -1;
}

static bool in_exe(const struct memory *s, uint64_t addr)
{
	for (int i = 0; i < s->n_exe; i++)
		if (addr >= s->exe[i].start && addr < s->exe[i].end)
			return true;
	return false;
}

/* The process's memory, now. */
static bool rd(struct memory *s, uint64_t addr, void *out, size_t len)
{
	struct iovec local = { out, len }, remote = { (void *)(uintptr_t)addr, len };

	return addr && process_vm_readv(s->pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static uint64_t word(struct memory *s, uint64_t addr)
{
	uint64_t v = 0;

	return rd(s, addr, &v, sizeof(v)) ? v : 0;
}

static uint64_t word_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The regions to read: private anonymous read-write mappings (the heap, the runtime's own). The
 * executable's (its itabs and types) are only noted. */
static int read_regions(pid_t pid, struct range *out, int max, struct memory *s)
{
	char path[64], exe[PATH_MAX], line[PATH_MAX + 128];
	ssize_t exe_len;
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	exe_len = readlink(path, exe, sizeof(exe) - 1);
	if (exe_len <= 0)
		return -errno;
	exe[exe_len] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && n < max) {
		unsigned long long start, end;
		char perms[8], name[PATH_MAX] = "";
		bool heap, of_exe;

		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %4095[^\n]", &start, &end, perms,
			   name) < 3)
			continue;
		/* Text holds no itab. */
		if (perms[0] != 'r' || perms[2] == 'x' || end <= start)
			continue;
		/* The executable's own path, or it with " (deleted)". */
		of_exe = strncmp(name, exe, (size_t)exe_len) == 0 &&
			 (!name[exe_len] || name[exe_len] == ' ');
		heap = !of_exe && perms[1] == 'w' && perms[3] == 'p' &&
		       (!name[0] || strcmp(name, "[heap]") == 0);
		/* Go maps its heap 64 MiB at a time; a bigger mapping (a sanitizer's shadow, terabytes
		 * reserved) would cost its pagemap's reading for nothing. */
		if (heap && end - start > MAX_REGION_BYTES)
			heap = false;
		if (of_exe && s->n_exe < MAX_RANGES)
			s->exe[s->n_exe++] = (struct range){ start, end };
		if (heap)
			out[n++] = (struct range){ start, end };
	}
	fclose(f);
	return n;
}

static int add_run(struct memory *s, uint64_t start, uint64_t end)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct range *r = realloc(s->runs, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		s->runs = r;
		s->cap = cap;
	}
	s->runs[s->n++] = (struct range){ start, end };
	s->bytes += end - start;
	return s->bytes > GOHEAP_MAX_BYTES ? -EFBIG : 0;
}

/* The resident pages of each region, as runs of adjacent ones (pagemap bit 63). */
static int find_runs(pid_t pid, const struct range *regions, int n, struct memory *s)
{
	uint64_t entries[512];
	char path[64];
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (int i = 0; i < n && !err; i++) {
		uint64_t page = regions[i].start / PAGE, last = regions[i].end / PAGE;
		uint64_t run_start = 0;
		bool in_run = false;

		while (page < last && !err) {
			size_t want = last - page < 512 ? (size_t)(last - page) : 512;
			ssize_t got = pread(fd, entries, want * 8, (off_t)(page * 8));

			if (got <= 0) {
				err = got < 0 ? -errno : -EIO;
				break;
			}
			for (size_t k = 0; k < (size_t)got / 8; k++, page++) {
				bool present = entries[k] >> 63;

				if (present && !in_run) {
					run_start = page;
					in_run = true;
				} else if (!present && in_run) {
					err = add_run(s, run_start * PAGE, page * PAGE);
					in_run = false;
					if (err)
						break;
				}
			}
		}
		if (!err && in_run)
			err = add_run(s, run_start * PAGE, page * PAGE);
	}
	close(fd);
	return err;
}

/* Calls fn for each 8-byte word of the resident heap: its address, its bytes, and how far the
 * bytes read around it go (a page gone meanwhile ends its chunk). */
typedef void (*word_fn)(void *ctx, uint64_t addr, const uint8_t *at, const uint8_t *lo,
			const uint8_t *hi);

static int each_word(struct memory *s, word_fn fn, void *ctx)
{
	for (size_t i = 0; i < s->n; i++) {
		uint64_t start = s->runs[i].start, end = s->runs[i].end;

		for (uint64_t at = start; at < end; at += CHUNK) {
			uint64_t from = at - start >= BEFORE ? at - BEFORE : start;
			uint64_t to = end - at > CHUNK + AFTER ? at + CHUNK + AFTER : end;
			struct iovec local = { s->chunk, to - from };
			struct iovec remote = { (void *)(uintptr_t)from, to - from };
			ssize_t got = process_vm_readv(s->pid, &local, 1, &remote, 1, 0);
			const uint8_t *hi;

			if (s->cancel && atomic_load_explicit(s->cancel, memory_order_relaxed))
				return -ECANCELED;
			if (got < 0 && errno == ESRCH)
				return -ESRCH;
			if (got < (ssize_t)(at - from) + 8)
				continue;
			hi = s->chunk + got;
			for (uint64_t w = at; w < at + CHUNK && w + 8 <= from + (uint64_t)got;
			     w += 8)
				fn(ctx, w, s->chunk + (w - from), s->chunk, hi);
		}
	}
	return 0;
}

struct netfd_pass {
	const uint64_t *wanted; /* a bit per descriptor below FD_LIMIT */
	struct addr_set *out;
	struct memory *s;
};

/* poll.FDs holding a wanted descriptor: Sysfd at 16, IsStream, ZeroReadIsEOF and isFile at 48. */
static void netfd_word(void *ctx, uint64_t addr, const uint8_t *at, const uint8_t *lo,
		       const uint8_t *hi)
{
	struct netfd_pass *p = ctx;
	int64_t fd;

	(void)lo;
	if (hi - at < AFTER || at[48] != 1 || at[49] != 1 || at[50] != 0)
		return;
	memcpy(&fd, at + 16, sizeof(fd));
	if (fd < 0 || fd >= FD_LIMIT || !(p->wanted[fd / 64] >> (fd % 64) & 1))
		return;
	if (!addr_set__add(p->out, addr, (int)fd))
		p->s->truncated++;
}

struct pointer_pass {
	const struct addr_set *to; /* what the words found point at */
	struct addr_set *conns;	   /* a pointer at offset 0 of a net.conn (first pass) */
	struct addr_set *nodes;	   /* wrappers: the next pass's targets */
	struct addr_set *tls;	   /* tls.Conns: conn's data at 8, its itab at 0 */
	struct memory *s;
};

static void add(struct memory *s, struct addr_set *set, uint64_t addr, int fd)
{
	if (set && !addr_set__add(set, addr, fd))
		s->truncated++;
}

/* A word pointing at a net.conn or a wrapper X: what may hold it there. */
static void pointer_word(void *ctx, uint64_t addr, const uint8_t *at, const uint8_t *lo,
			 const uint8_t *hi)
{
	struct pointer_pass *p = ctx;
	int fd = addr_set__get(p->to, word_at(at));

	(void)hi;
	if (fd < 0)
		return;
	add(p->s, p->conns, addr, fd);
	add(p->s, p->nodes, addr, fd); /* a struct whose first word is X */
	/* An interface {itab, X}: a tls.Conn's conn, or a wrapper's at offset 0 or 8. */
	if (at - lo >= 8 && in_exe(p->s, word_at(at - 8))) {
		add(p->s, p->tls, addr - 8, fd);
		add(p->s, p->nodes, addr - 8, fd);
		add(p->s, p->nodes, addr - 16, fd);
	}
}

/* The word at addr an itab (bpf/capture.bpf.c's is_itab_at). */
static bool is_itab_at(struct memory *s, uint64_t addr)
{
	uint64_t itab = word(s, addr), inter, type;
	uint32_t hash = 0, type_hash = 1;
	uint8_t kind = 0;

	if (!itab || !in_exe(s, itab))
		return false;
	inter = word(s, itab);
	type = word(s, itab + 8);
	if (!inter || !type || type == itab || type == inter || !rd(s, inter + 23, &kind, 1) ||
	    (kind & 0x1f) != GO_KIND_INTERFACE || !rd(s, itab + 16, &hash, 4) ||
	    !rd(s, type + 16, &type_hash, 4))
		return false;
	return hash == type_hash;
}

/* Where node i's pointer is read in its parent (tree as in the BPF: children 3i+1..3i+3 are the
 * interface data at offset 0, at offset 8, and the pointer at offset 0). */
static uint64_t child_at(uint32_t i, bool *iface)
{
	uint32_t kind = (i - 1) % 3;

	*iface = kind != 2;
	return kind == 0 ? 8 : kind == 1 ? 16 : 0;
}

/* The descriptor tls_conn's conn leads to, each interface on the way an itab; -1 if none. */
static int conn_fd(struct memory *s, uint64_t tls_conn, const struct addr_set *netfds)
{
	uint64_t node[TREE_NODES] = { 0 };

	node[0] = word(s, tls_conn + 8);
	for (uint32_t i = 0; i < TREE_NODES; i++) {
		uint64_t at, p;
		bool iface;
		int fd;

		if (i > 0) {
			p = node[(i - 1) / 3];
			at = child_at(i, &iface);
			/* An itab is in the executable: a cheap test here, the whole one below. */
			if (p && (!iface || in_exe(s, word(s, p + at - 8))))
				node[i] = word(s, p + at);
		}
		if (!node[i] || (node[i] & 7))
			continue;
		fd = addr_set__get(netfds, word(s, node[i]));
		if (fd < 0)
			continue;
		/* The path up to the tls.Conn, each interface checked in full. */
		bool ok = is_itab_at(s, tls_conn);

		for (uint32_t k = i; k > 0 && ok; k = (k - 1) / 3) {
			at = child_at(k, &iface);
			if (iface)
				ok = is_itab_at(s, node[(k - 1) / 3] + at - 8);
		}
		if (ok)
			return fd;
	}
	return -1;
}

/* A TLS 1.3 connection's state at layout's offsets. */
static bool holds_tls13(struct memory *s, uint64_t c, const struct tls_layout *l)
{
	uint16_t vers = 0, suite = 0, out_version = 0;
	uint64_t secret[3] = { 0 };
	uint8_t byte;

	return rd(s, c + l->conn_vers, &vers, 2) && vers == 0x0304 &&
	       rd(s, c + l->conn_cipher_suite, &suite, 2) && suite >= 0x1301 && suite <= 0x1303 &&
	       rd(s, c + l->conn_out + l->half_version, &out_version, 2) && out_version == 0x0304 &&
	       rd(s, c + l->conn_out + l->half_traffic_secret, secret, sizeof(secret)) &&
	       (secret[1] == 32 || secret[1] == 48) && secret[2] >= secret[1] &&
	       rd(s, secret[0], &byte, 1);
}

int goheap__find_tls_conns(pid_t pid, const struct tls_layout *layout, const int *fds, size_t n,
			   uint64_t *found, struct goheap_stats *stats, const atomic_bool *cancel)
{
	struct range *regions = calloc(MAX_REGIONS, sizeof(*regions));
	struct addr_set netfds = { 0 }, level[2] = { 0 }, tls = { 0 };
	struct memory s = { .pid = pid, .cancel = cancel };
	uint64_t t0 = util__monotonic_ns();
	bool *ambiguous = calloc(n ? n : 1, sizeof(*ambiguous));
	/* The descriptors looked for, as bits: a search may look for hundreds (an etcd holds one
	 * connection per apiserver storage client, most of them silent). */
	uint64_t *wanted = calloc(FD_LIMIT / 64, sizeof(*wanted));
	int n_regions, err = 0, hits = 0;

	memset(found, 0, n * sizeof(*found));
	s.chunk = malloc(CHUNK + BEFORE + AFTER);
	if (!regions || !ambiguous || !wanted || !s.chunk || addr_set__init(&netfds) ||
	    addr_set__init(&level[0]) || addr_set__init(&level[1]) || addr_set__init(&tls)) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t k = 0; k < n; k++)
		if (fds[k] >= 0 && fds[k] < FD_LIMIT)
			wanted[fds[k] / 64] |= 1ull << (fds[k] % 64);
	n_regions = read_regions(pid, regions, MAX_REGIONS, &s);
	err = n_regions < 0 ? n_regions : find_runs(pid, regions, n_regions, &s);
	if (!err) {
		struct netfd_pass np = { wanted, &netfds, &s };

		err = each_word(&s, netfd_word, &np);
	}
	/* The net.conns (their first word the netFD), then what points at the last level found:
	 * tls.Conns and, up to TREE_DEPTH wrappers deep, wrappers. */
	if (!err && netfds.n) {
		struct pointer_pass pp = { &netfds, &level[0], NULL, NULL, &s };

		err = each_word(&s, pointer_word, &pp);
	}
	for (int depth = 0; !err && depth <= TREE_DEPTH && level[depth & 1].n; depth++) {
		struct addr_set *next = &level[(depth + 1) & 1];
		struct pointer_pass pp = { &level[depth & 1], NULL,
					   depth < TREE_DEPTH ? next : NULL, &tls, &s };

		addr_set__free(next);
		if (addr_set__init(next)) {
			err = -ENOMEM;
			break;
		}
		err = each_word(&s, pointer_word, &pp);
	}
	/* Each tls.Conn found checked whole, as the BPF walks from a Write's receiver. */
	for (size_t i = 0; !err && i <= tls.mask; i++) {
		uint64_t c = tls.keys[i];
		int fd;

		if (!c || (fd = conn_fd(&s, c, &netfds)) < 0 || !holds_tls13(&s, c, layout))
			continue;
		for (size_t k = 0; k < n; k++) {
			if (fds[k] != fd)
				continue;
			if (found[k] && found[k] != c)
				ambiguous[k] = true;
			found[k] = c;
		}
	}
	for (size_t k = 0; k < n; k++) {
		if (ambiguous[k])
			found[k] = 0;
		else if (found[k])
			hits++;
	}
cleanup:
	if (stats) {
		stats->bytes_read = s.bytes;
		stats->netfds = netfds.n;
		stats->ambiguous = 0;
		for (size_t k = 0; ambiguous && k < n; k++)
			stats->ambiguous += ambiguous[k];
		stats->truncated = s.truncated;
		stats->wall_ns = util__monotonic_ns() - t0;
	}
	addr_set__free(&tls);
	addr_set__free(&level[1]);
	addr_set__free(&level[0]);
	addr_set__free(&netfds);
	free(ambiguous);
	free(wanted);
	free(s.chunk);
	free(s.runs);
	free(regions);
	return err ? err : hits;
}
