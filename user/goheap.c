/* A socket's *tls.Conn in a Go process's memory: a snapshot of its resident pages, then one pass
 * for the poll.FDs of the wanted descriptors and one for the objects that lead to them
 * (goheap.h). */
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
#define MAX_NETFDS 1024
/* Descriptors above this are not looked for (the BPF side's bound too). */
#define FD_LIMIT (1 << 20)
/* tls.Conn.conn's search tree, as bpf/capture.bpf.c's CONN_TREE_NODES. */
#define TREE_NODES 40
#define GO_KIND_INTERFACE 20

struct range {
	uint64_t start, end;
};

/* Resident bytes of the heap copied from [addr, addr + len). */
struct run {
	uint64_t addr, len;
	const uint8_t *buf;
};

struct snapshot {
	struct run *runs;
	size_t n, cap;
	uint8_t *mem;
	uint64_t bytes;
	struct range exe[MAX_RANGES];
	int n_exe;
	pid_t pid;
	size_t last; /* the run the last read fell in */
};

struct netfd {
	uint64_t addr;
	int fd;
};

static bool in_exe(const struct snapshot *s, uint64_t addr)
{
	for (int i = 0; i < s->n_exe; i++)
		if (addr >= s->exe[i].start && addr < s->exe[i].end)
			return true;
	return false;
}

static const struct run *run_of(struct snapshot *s, uint64_t addr, size_t len)
{
	size_t lo = 0, hi = s->n;
	const struct run *r;

	if (s->last < s->n) {
		r = &s->runs[s->last];
		if (addr >= r->addr && addr - r->addr + len <= r->len)
			return r;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->runs[mid].addr + s->runs[mid].len <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= s->n)
		return NULL;
	r = &s->runs[lo];
	if (addr < r->addr || addr - r->addr + len > r->len)
		return NULL;
	s->last = lo;
	return r;
}

/* From the copy of the heap. */
static bool rd(struct snapshot *s, uint64_t addr, void *out, size_t len)
{
	const struct run *r = run_of(s, addr, len);

	if (!r)
		return false;
	memcpy(out, r->buf + (addr - r->addr), len);
	return true;
}

/* Or, for the executable's words (itabs, types: read only on the few paths that reach a wanted
 * socket), from the process. */
static bool rd_any(struct snapshot *s, uint64_t addr, void *out, size_t len)
{
	struct iovec local = { out, len }, remote = { (void *)(uintptr_t)addr, len };

	if (rd(s, addr, out, len))
		return true;
	return in_exe(s, addr) &&
	       process_vm_readv(s->pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static uint64_t word(struct snapshot *s, uint64_t addr)
{
	uint64_t v = 0;

	return rd(s, addr, &v, sizeof(v)) ? v : 0;
}

static uint64_t word_any(struct snapshot *s, uint64_t addr)
{
	uint64_t v = 0;

	return rd_any(s, addr, &v, sizeof(v)) ? v : 0;
}

/* The regions to copy: private anonymous read-write mappings (the heap, the runtime's own). The
 * executable's (its itabs and types) are only noted. */
struct region {
	uint64_t start, end;
};

static int read_regions(pid_t pid, struct region *out, int max, struct snapshot *s)
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
		if (!heap && !of_exe)
			continue;
		if (of_exe && s->n_exe < MAX_RANGES)
			s->exe[s->n_exe++] = (struct range){ start, end };
		if (heap)
			out[n++] = (struct region){ start, end };
	}
	fclose(f);
	return n;
}

static int add_run(struct snapshot *s, uint64_t addr, uint64_t len)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct run *r = realloc(s->runs, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		s->runs = r;
		s->cap = cap;
	}
	s->runs[s->n++] = (struct run){ .addr = addr, .len = len };
	s->bytes += len;
	return s->bytes > GOHEAP_MAX_BYTES ? -EFBIG : 0;
}

/* The resident pages of each region, as runs of adjacent ones (pagemap bit 63). */
static int find_runs(pid_t pid, const struct region *regions, int n, struct snapshot *s)
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
					err =
					    add_run(s, run_start * PAGE, (page - run_start) * PAGE);
					in_run = false;
					if (err)
						break;
				}
			}
		}
		if (!err && in_run)
			err = add_run(s, run_start * PAGE, (page - run_start) * PAGE);
	}
	close(fd);
	return err;
}

/* Copies the runs; a run that shrank meanwhile keeps what was read before the hole. */
static int copy_runs(pid_t pid, struct snapshot *s)
{
	uint64_t at = 0;

	s->mem = malloc(s->bytes ? s->bytes : 1);
	if (!s->mem)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		struct run *r = &s->runs[i];
		struct iovec local = { s->mem + at, r->len };
		struct iovec remote = { (void *)(uintptr_t)r->addr, r->len };
		ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

		if (got < 0 && errno == ESRCH)
			return -ESRCH;
		r->buf = s->mem + at;
		r->len = got > 0 ? (uint64_t)got & ~7ull : 0;
		at += remote.iov_len;
	}
	return 0;
}

static bool is_wanted(const int *fds, size_t n, int64_t fd)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] == fd)
			return true;
	return false;
}

/* poll.FDs holding a wanted descriptor: Sysfd at 16, IsStream, ZeroReadIsEOF and isFile at 48. */
static size_t find_netfds(struct snapshot *s, const int *fds, size_t n, struct netfd *out)
{
	size_t found = 0;

	for (size_t i = 0; i < s->n && found < MAX_NETFDS; i++) {
		const struct run *r = &s->runs[i];

		if (r->len < 56)
			continue;
		for (uint64_t off = 0; off + 56 <= r->len && found < MAX_NETFDS; off += 8) {
			int64_t fd;

			memcpy(&fd, r->buf + off + 16, sizeof(fd));
			if (fd < 0 || fd >= FD_LIMIT || r->buf[off + 48] != 1 ||
			    r->buf[off + 49] != 1 || r->buf[off + 50] != 0 ||
			    !is_wanted(fds, n, fd))
				continue;
			out[found++] = (struct netfd){ r->addr + off, (int)fd };
		}
	}
	return found;
}

static int netfd_at(const struct netfd *set, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (set[i].addr == addr)
			return set[i].fd;
	return -1;
}

/* The word at addr an itab (bpf/capture.bpf.c's is_itab_at). */
static bool is_itab_at(struct snapshot *s, uint64_t addr)
{
	uint64_t itab = word(s, addr), inter, type;
	uint32_t hash = 0, type_hash = 1;
	uint8_t kind = 0;

	if (!itab || !in_exe(s, itab))
		return false;
	inter = word_any(s, itab);
	type = word_any(s, itab + 8);
	if (!inter || !type || type == itab || type == inter || !rd_any(s, inter + 23, &kind, 1) ||
	    (kind & 0x1f) != GO_KIND_INTERFACE || !rd_any(s, itab + 16, &hash, 4) ||
	    !rd_any(s, type + 16, &type_hash, 4))
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
static int conn_fd(struct snapshot *s, uint64_t tls_conn, const struct netfd *netfds, size_t n)
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
		fd = netfd_at(netfds, n, word(s, node[i]));
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
static bool holds_tls13(struct snapshot *s, uint64_t c, const struct tls_layout *l)
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
			   uint64_t *found, struct goheap_stats *stats)
{
	struct region *regions = calloc(MAX_REGIONS, sizeof(*regions));
	struct snapshot s = { 0 };
	struct netfd *netfds = NULL;
	uint64_t t0 = util__monotonic_ns();
	size_t n_netfds = 0, hits = 0;
	bool *ambiguous = NULL;
	int n_regions, err;

	memset(found, 0, n * sizeof(*found));
	s.pid = pid;
	if (!regions) {
		err = -ENOMEM;
		goto cleanup;
	}
	n_regions = read_regions(pid, regions, MAX_REGIONS, &s);
	if (n_regions < 0) {
		err = n_regions;
		goto cleanup;
	}
	err = find_runs(pid, regions, n_regions, &s);
	if (!err)
		err = copy_runs(pid, &s);
	if (err)
		goto cleanup;
	netfds = calloc(MAX_NETFDS, sizeof(*netfds));
	ambiguous = calloc(n ? n : 1, sizeof(*ambiguous));
	if (!netfds || !ambiguous) {
		err = -ENOMEM;
		goto cleanup;
	}
	n_netfds = find_netfds(&s, fds, n, netfds);
	for (size_t i = 0; i < s.n && n_netfds; i++) {
		const struct run *r = &s.runs[i];

		for (uint64_t off = 0; off + 16 <= r->len; off += 8) {
			uint64_t w0, w1, c = r->addr + off;
			int fd;

			memcpy(&w0, r->buf + off, 8);
			memcpy(&w1, r->buf + off + 8, 8);
			/* tls.Conn.conn: an itab (in the executable), then its data. */
			if (!w1 || (w1 & 7) || !in_exe(&s, w0))
				continue;
			fd = conn_fd(&s, c, netfds, n_netfds);
			if (fd < 0 || !holds_tls13(&s, c, layout))
				continue;
			for (size_t k = 0; k < n; k++) {
				if (fds[k] != fd)
					continue;
				if (found[k] && found[k] != c)
					ambiguous[k] = true;
				found[k] = c;
			}
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
		stats->netfds = n_netfds;
		stats->ambiguous = 0;
		for (size_t k = 0; ambiguous && k < n; k++)
			stats->ambiguous += ambiguous[k];
		stats->wall_ns = util__monotonic_ns() - t0;
	}
	free(ambiguous);
	free(netfds);
	free(regions);
	free(s.mem);
	free(s.runs);
	return err ? err : (int)hits;
}
