// SPDX-License-Identifier: GPL-2.0
/* Plaintext of the traced processes' TCP connections, both directions, in order.
 *
 * TLS: uprobes on crypto/tls.(*Conn).Write (entry: the bytes about to be encrypted) and on
 * (*Conn).Read (entry: remember the buffer; every RET: the bytes decrypted into it). Go's register
 * ABI (1.17+): receiver in RAX, the slice in RBX/RCX, the result in RAX, the goroutine in R14.
 * No uretprobes: they break Go's stack copying.
 *
 * Plain TCP: read/write/sendto/recvfrom syscall tracepoints on sockets the TLS probes have not
 * claimed. Both paths emit the same data_event, keyed by the socket's inode, with per-direction
 * offsets kept here so user space can see gaps. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "conns.h"
#include "events.h"

char LICENSE[] SEC("license") = "GPL";

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define S_IFMT 00170000
#define S_IFSOCK 0140000

/* Uprobes attached with pid -1 (`capture --exe`) accept every process of that binary. */
const volatile bool uprobe_any_pid = false;
/* Capture plaintext TCP through syscalls (off: TLS only). */
const volatile bool capture_syscalls = true;
/* Wake the reader only once this much is waiting (0: on every event). Each wakeup is an
 * interrupt-work item in the traced thread and a context switch in the tracer; the reader polls
 * every few milliseconds anyway, and every event carries its own kernel timestamp. */
const volatile __u64 wake_bytes = 0;
/* Count each program's runs, records and bytes per process in probe_hits (measurement: off by
 * default, it costs a hash update per run). */
const volatile bool count_probe_hits = false;
/* BINDTRACE_READ_RET_ONLY=1 (measurement, not the default): (*Conn).Read is probed at its RETs
 * only (one hit per call instead of two), each taking the receiver and buffer from the caller's
 * spill slots (TLS_RET_COOKIE). Without the entry to mark a new call, a trap taken twice (a
 * single-step restarted by a signal) cannot be told from a second Read returning the same count
 * at the same place: a signature of buffer, first bytes and the socket's copied_seq took 835
 * real Reads of repetitive data (tests/cost/bulk) for repeats, so there is no detection here. */
const volatile bool read_ret_only = false;
/* BINDTRACE_TLS_KEYS=1 (a measurement): each connection's TLS 1.3 state read when a probe first
 * meets it (go_conn_fd), where tls_layouts says its binary keeps it (tls_keys_event). */
const volatile bool harvest_tls_keys = false;
/* Writes from the wire (BINDTRACE_TLS_WIRE, and BINDTRACE_TLS_DECRYPT=1, a measurement): the
 * write(2)s of a TARGET_TLS_WIRE process's connections whose state was read are copied as they go
 * to the socket (SOURCE_TLS_WIRE), for user space to decrypt, and their state is read when a probe
 * first meets them or their handshake sets the secret. */
const volatile bool copy_tls_wire = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct conn_key);
	__type(value, struct conn_state);
} conns SEC(".maps");

struct tls_read_key {
	__u32 tgid;
	__u32 pad;
	__u64 goroutine; /* R14 at entry: the same goroutine reaches the RET */
};

struct pending_read {
	__u64 buf;
	__u64 cap;
	__u64 ino;
	__s32 fd;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tls_read_key);
	__type(value, struct pending_read);
} tls_reads SEC(".maps");

struct data_buf {
	__u8 bytes[sizeof(struct data_event) + MAX_CHUNK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct data_buf);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} events SEC(".maps");

/* The wakeup flag for a record of len bytes: the reader is woken by the record that takes what is
 * waiting past wake_bytes, and by no other. Its epoll is level-triggered (it returns at once
 * while anything waits), so a reader that is running, or one that went to sleep with the ring
 * below the mark, loses nothing; at worst (two CPUs crossing at once) it reads at its next poll.
 * Forcing a wakeup for every record above the mark made each one an interrupt-work item for as
 * long as the reader was behind: a tracer held off the CPU for a burst made each uprobe hit's
 * program cost 6.5-7.8 us instead of 2.5 (BPF_ENABLE_STATS, make bench BENCH=scale with
 * BENCH_PAUSE_TRACER=1). reserved: the record is in the ring already (reserved, not output). */
static __always_inline __u64 ringbuf_flags(__u64 len, bool reserved)
{
	__u64 rec = len + BPF_RINGBUF_HDR_SZ, after;

	if (!wake_bytes)
		return 0;
	after = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + (reserved ? 0 : rec);
	return after >= wake_bytes && after - rec < wake_bytes ? BPF_RB_FORCE_WAKEUP
							       : BPF_RB_NO_WAKEUP;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &which);

	if (v)
		*v += n;
}

/* The processes whose fsync(2)s and fdatasync(2)s are timed (etcd's commit point). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGETS);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} fsync_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct target_table);
} target_table SEC(".maps");

/* targets' value bits for tgid (with TARGET_FSYNC from fsync_targets); 0 for a process that is
 * no target. */
static __always_inline __u8 target_bits(__u32 tgid)
{
	struct target_table *t;
	__u32 zero = 0, n;
	__u8 *v, bits;

	t = bpf_map_lookup_elem(&target_table, &zero);
	if (!t)
		return 0;
	if (!t->overflow) {
		n = t->n;
		for (int i = 0; i < FAST_TARGETS; i++)
			if (i < n && t->tgid[i] == tgid)
				return t->bits[i];
		return 0;
	}
	v = bpf_map_lookup_elem(&targets, &tgid);
	if (!v)
		return 0;
	bits = *v;
	if (bpf_map_lookup_elem(&fsync_targets, &tgid))
		bits |= TARGET_FSYNC;
	return bits;
}

static __always_inline bool is_target(__u32 tgid)
{
	return target_bits(tgid) != 0;
}

/* Whether a process with these targets bits has its Writes from its wire. */
static __always_inline bool wire_bits(__u8 bits)
{
	return copy_tls_wire && (bits & TARGET_TLS_WIRE);
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct probe_hit_key);
	__type(value, struct probe_hit_stats);
} probe_hits SEC(".maps");

static __always_inline struct probe_hit_stats *probe_stats(__u32 tgid, __u32 probe)
{
	struct probe_hit_key key = { .tgid = tgid, .probe = probe };
	struct probe_hit_stats zero = {}, *v;

	v = bpf_map_lookup_elem(&probe_hits, &key);
	if (v)
		return v;
	bpf_map_update_elem(&probe_hits, &key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&probe_hits, &key);
}

/* One run of program `probe` in tgid (0 for a process that is not a target). Global functions,
 * verified once on their own: inlined in every program they multiplied the verifier's states
 * (loading took seconds instead of milliseconds). */
__noinline int count_hit(__u32 tgid, __u32 probe)
{
	struct probe_hit_stats *v;

	if (!count_probe_hits)
		return 0;
	v = probe_stats(tgid, probe);
	if (v)
		__sync_fetch_and_add(&v->hits, 1);
	return 0;
}

__noinline int count_emitted(__u32 tgid, __u32 probe, __u64 events, __u64 bytes)
{
	struct probe_hit_stats *v;

	if (!count_probe_hits || !events)
		return 0;
	v = probe_stats(tgid, probe);
	if (v) {
		__sync_fetch_and_add(&v->events, events);
		__sync_fetch_and_add(&v->bytes, bytes);
	}
	return 0;
}

/* The TCP socket behind fd in the current process: its inode, and its addresses on first use.
 * Run on every traced call and every target's socket syscall, so the walk to the file is direct
 * loads through the BTF-typed task (bpf_get_current_task_btf: the verifier's fault-handling
 * loads, no helper call) as far as the verifier allows: the fd array is indexed by a variable,
 * which a BTF pointer may not be, so that one entry and what it leads to are helper reads. Ten
 * bpf_probe_read_kernel calls here cost about 0.6 us a call (tlsfix, BPF stats). */
/* The current task's open file fd, NULL when there is none. The walk task -> files -> fdt is
 * loaded directly (BTF pointers); the verifier refuses a variable index into one, so the fd
 * array's entry is a helper read. */
static __always_inline struct file *file_of_fd(int fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct files_struct *files;
	struct file **fds, *f = NULL;
	struct fdtable *fdt;

	if (fd < 0)
		return NULL;
	files = task->files;
	if (!files)
		return NULL;
	fdt = files->fdt;
	if (!fdt || (unsigned int)fd >= fdt->max_fds)
		return NULL;
	fds = fdt->fd;
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]))
		return NULL;
	return f;
}

/* The socket inode number of open file f, 0 when f is no socket. */
static __always_inline __u64 socket_ino(struct file *f)
{
	struct inode *inode = NULL;
	umode_t mode = 0;
	__u64 ino = 0;

	if (!f || bpf_probe_read_kernel(&inode, sizeof(inode), &f->f_inode) || !inode ||
	    bpf_probe_read_kernel(&mode, sizeof(mode), &inode->i_mode) ||
	    (mode & S_IFMT) != S_IFSOCK ||
	    bpf_probe_read_kernel(&ino, sizeof(ino), &inode->i_ino))
		return 0;
	return ino;
}

/* The TCP (stream, IPv4 or IPv6) sock behind socket file f, with its two ends; NULL for any
 * other. */
static __always_inline struct sock *tcp_sock_ends(struct file *f, __u16 *family, __u8 *laddr,
						  __u8 *raddr, __u16 *lport, __u16 *rport)
{
	struct socket *sock = BPF_CORE_READ(f, private_data);
	struct sock *sk;

	if (!sock || BPF_CORE_READ(sock, type) != SOCK_STREAM)
		return NULL;
	sk = BPF_CORE_READ(sock, sk);
	if (!sk)
		return NULL;
	*family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (*family == AF_INET) {
		bpf_core_read(laddr, 4, &sk->__sk_common.skc_rcv_saddr);
		bpf_core_read(raddr, 4, &sk->__sk_common.skc_daddr);
	} else if (*family == AF_INET6) {
		bpf_core_read(laddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_core_read(raddr, 16, &sk->__sk_common.skc_v6_daddr);
	} else {
		return NULL;
	}
	*lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	*rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	return sk;
}

/* The connection state of tgid's open socket file f (made on first sight), NULL when f is no TCP
 * socket. */
static __always_inline struct conn_state *conn_of_file(__u32 tgid, struct file *f, __u64 *ino_out)
{
	struct conn_state fresh = {}, *st;
	struct conn_key key = { .tgid = tgid };
	struct sock *sk;

	key.ino = socket_ino(f);
	if (!key.ino)
		return NULL;
	*ino_out = key.ino;
	st = bpf_map_lookup_elem(&conns, &key);
	if (st)
		return st;
	sk = tcp_sock_ends(f, &fresh.family, fresh.laddr, fresh.raddr, &fresh.lport, &fresh.rport);
	if (!sk)
		return NULL;
	fresh.sk = (__u64)sk;
	bpf_map_update_elem(&conns, &key, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&conns, &key);
}

static __always_inline struct conn_state *conn_of_fd(__u32 tgid, int fd, __u64 *ino_out)
{
	return conn_of_file(tgid, file_of_fd(fd), ino_out);
}

/* The header every record starts with: the current thread, CPU, time and comm. */
static __always_inline void fill_header(struct event_header *h, __u32 type)
{
	__u64 id = bpf_get_current_pid_tgid();

	h->type = type;
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->cpu = bpf_get_smp_processor_id();
	h->ts_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(h->comm, sizeof(h->comm));
}

struct emit_ctx {
	struct data_event *e;
	__u64 src;
	__u64 total;
	__u64 base_offset;
	__u64 events, bytes; /* what went into the ring buffer */
};

/* A full chunk (bulk traffic) is read from the process straight into its ring-buffer record: one
 * copy, not one into the scratch buffer and another into the ring. bpf_ringbuf_reserve() takes
 * only a size the verifier knows, so shorter chunks go the scratch way (a record of
 * sizeof(*e) + MAX_CHUNK for every chunk would fill the ring with padding). true when the chunk
 * was sent or counted as dropped; false when its memory could not be read (the caller sends it
 * empty, as a gap). */
static __always_inline bool emit_full_chunk(struct emit_ctx *c, struct data_event *e, void *src)
{
	struct data_event *r = bpf_ringbuf_reserve(&events, sizeof(*e) + MAX_CHUNK, 0);

	if (!r) {
		count(COUNTER_RINGBUF_DROPS, 1);
		return true;
	}
	if (bpf_probe_read_user(r->data, MAX_CHUNK, src)) {
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		return false;
	}
	e->len = MAX_CHUNK;
	__builtin_memcpy(r, e, sizeof(*e));
	bpf_ringbuf_submit(r, ringbuf_flags(sizeof(*e) + MAX_CHUNK, true));
	c->events++;
	c->bytes += sizeof(*e) + MAX_CHUNK;
	return true;
}

/* One chunk per iteration, computed from the index alone: the callback keeps no state, so the
 * verifier checks it once instead of once per possible progress value. */
static long emit_chunk(__u32 index, struct emit_ctx *c)
{
	struct data_event *e = c->e;
	__u64 done = (__u64)index * MAX_CHUNK;
	__u64 n;
	__u32 len;

	if (done >= c->total)
		return 1;
	n = c->total - done;
	len = n > MAX_CHUNK ? MAX_CHUNK : (__u32)n;
	e->offset = c->base_offset + done;
	if (len == MAX_CHUNK && emit_full_chunk(c, e, (void *)(c->src + done)))
		return 0;
	/* Unreadable memory (paged out) sends the event empty: its bytes show as a gap. */
	if (bpf_probe_read_user(e->data, len, (void *)(c->src + done)))
		len = 0;
	e->len = len;
	if (len > MAX_CHUNK) /* for the verifier: len is already bounded */
		len = MAX_CHUNK;
	if (bpf_ringbuf_output(&events, e, sizeof(*e) + len,
			       ringbuf_flags(sizeof(*e) + len, false))) {
		count(COUNTER_RINGBUF_DROPS, 1);
	} else {
		c->events++;
		c->bytes += sizeof(*e) + len;
	}
	return 0;
}

/* The socket's write_seq, 0 when the state has no sock. */
static __always_inline __u32 write_seq_of(const struct conn_state *st)
{
	struct tcp_sock *tp = (struct tcp_sock *)st->sk;

	return tp ? BPF_CORE_READ(tp, write_seq) : 0;
}

/* Copy `total` bytes at user address src into as many events as needed. The stream offset moves
 * by `total` whatever happens, so a dropped or truncated chunk shows up as a gap. seq: for an out
 * record, the TCP sequence number of its first byte, which the caller has from write_seq_of: a
 * TLS Write is seen before its write(2)s, and so is a keyed connection's wire copy (write_seq
 * then); a plaintext one after its write(2) (write_seq - total). */
static __always_inline void emit(struct conn_state *st, __u64 ino, int fd, __u8 dir, __u8 source,
				 __u64 src, __u64 total, __u32 seq, __u32 probe)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 zero = 0;
	struct emit_ctx c = { .src = src, .total = total };
	struct data_event *e;
	__u64 limit = (__u64)MAX_CHUNK * MAX_CHUNKS_PER_CALL;

	if (!total)
		return;
	e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e)
		return;
	fill_header(&e->hdr, EVENT_DATA);
	e->conn = ino;
	e->fd = fd;
	e->dir = dir;
	e->source = source;
	e->flags = 0;
	e->tcp_seq = 0;
	if (dir == DIR_OUT && st->sk) {
		e->tcp_seq = seq;
		e->flags = DATA_HAS_TCP_SEQ;
	}
	e->family = st->family;
	e->lport = st->lport;
	e->rport = st->rport;
	__builtin_memcpy(e->laddr, st->laddr, sizeof(e->laddr));
	__builtin_memcpy(e->raddr, st->raddr, sizeof(e->raddr));
	dir &= 1;
	if (source == SOURCE_TLS_WIRE) {
		c.base_offset = st->wire_offset;
		st->wire_offset += total;
	} else {
		c.base_offset = st->offset[dir];
		st->offset[dir] += total;
	}
	if (total > limit) {
		count(COUNTER_TRUNCATED, total - limit);
		c.total = limit;
	}
	c.e = e;
	bpf_loop(MAX_CHUNKS_PER_CALL, emit_chunk, &c, 0);
	count_emitted(id >> 32, probe, c.events, c.bytes);
}

/* From a *tls.Conn to its socket. tls.Conn.conn (offset 0) is a net.Conn interface {itab, data}.
 * For a *net.TCPConn, data points at conn{fd *netFD}; netFD begins with poll.FD, whose Sysfd is at
 * 16 and whose IsStream, ZeroReadIsEOF, isFile flags are at 48..50 (the same in Go 1.17 to
 * 1.26). Programs often wrap the TCP connection: client-go's connrotation (closableConn{onClose;
 * net.Conn}), cmux's MuxConn{net.Conn}, etcd's limitListenerConn{net.Conn} around
 * keepAliveConn{*net.TCPConn}... each holds the inner connection as an interface at offset 0 or
 * 8, or as a pointer at offset 0. So the pointers form a small ternary tree: node 0 is
 * tls.Conn.conn's data; node i's children 3i+1, 3i+2, 3i+3 are the interface data at offset 0,
 * the interface data at offset 8, and the pointer at offset 0 of the struct it points at. The
 * first node that leads to a poll.FD with the TCP flags and a socket descriptor of this process
 * wins; the answer is cached per *tls.Conn. */
#define CONN_TREE_NODES 40 /* depth 3 */

struct conn_tree {
	__u64 ptr[CONN_TREE_NODES];
};

/* Too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct conn_tree);
} conn_trees SEC(".maps");

struct conn_search {
	struct conn_tree *tree;
	__u32 tgid;
	int fd;
	__u64 ino;
	struct file *file;
	struct conn_state *st;
};

struct tls_conn_key {
	__u32 tgid;
	__u32 pad;
	__u64 tls_conn;
};

/* The socket found for a *tls.Conn. Its inode too: once that connection is closed and its
 * tls.Conn freed, a new one may be allocated at the same address while the old descriptor
 * number belongs to another socket. */
struct tls_conn_fd {
	__s32 fd;
	__u32 pad;
	__u64 ino;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tls_conn_key);
	__type(value, struct tls_conn_fd);
} tls_conn_fds SEC(".maps");

static __always_inline int netfd_socket(__u64 netfd)
{
	__s64 fd = -1;
	__u8 flags[3] = {};

	if (!netfd || bpf_probe_read_user(&fd, sizeof(fd), (void *)(netfd + 16)) || fd < 0 ||
	    fd >= 1 << 20)
		return -1;
	if (bpf_probe_read_user(flags, sizeof(flags), (void *)(netfd + 48)) || flags[0] != 1 ||
	    flags[1] != 1 || flags[2] != 0)
		return -1;
	return (int)fd;
}

/* Is the word at addr an itab, the first half of a non-nil interface value? A struct read as if
 * it held an interface can lead into a neighbouring object of the same size class (etcd's
 * keepAliveConn{*net.TCPConn} is 8 bytes: "its interface at offset 0" would be its own pointer
 * and the next keepAliveConn's) and so to another connection's socket. An itab (Go 1.18 to 1.26)
 * is {Inter, Type, Hash uint32, ...}: Inter is a type of kind Interface (20, in the low 5 bits of
 * the byte at offset 23 of a type) and Hash a copy of Type's Hash (offset 16 of a type). */
#define GO_KIND_INTERFACE 20

static __always_inline bool is_itab_at(__u64 addr)
{
	__u64 itab = 0, inter = 0, type = 0;
	__u32 hash = 0, type_hash = 1;
	__u8 kind = 0;

	if (bpf_probe_read_user(&itab, sizeof(itab), (void *)addr) || !itab ||
	    bpf_probe_read_user(&inter, sizeof(inter), (void *)itab) || !inter ||
	    bpf_probe_read_user(&kind, sizeof(kind), (void *)(inter + 23)) ||
	    (kind & 0x1f) != GO_KIND_INTERFACE ||
	    bpf_probe_read_user(&type, sizeof(type), (void *)(itab + 8)) || !type || type == itab ||
	    type == inter || bpf_probe_read_user(&hash, sizeof(hash), (void *)(itab + 16)) ||
	    bpf_probe_read_user(&type_hash, sizeof(type_hash), (void *)(type + 16)))
		return false;
	return hash == type_hash;
}

static long conn_search_node(__u32 index, struct conn_search *s)
{
	__u64 i = index, parent, iface_data = 0, netfd = 0, node = 0;
	int fd;

	/* Keep the verifier's bounds on the very register used as the index. */
	asm volatile("" : "+r"(i));
	if (i >= CONN_TREE_NODES)
		return 1;
	if (i > 0) {
		__u64 kind = (i - 1) % 3, at = kind == 0 ? 8 : kind == 1 ? 16 : 0;

		parent = (i - 1) / 3;
		asm volatile("" : "+r"(parent));
		if (parent >= CONN_TREE_NODES)
			return 1;
		if (s->tree->ptr[parent] &&
		    (kind == 2 || is_itab_at(s->tree->ptr[parent] + at - 8)) &&
		    !bpf_probe_read_user(&iface_data, sizeof(iface_data),
					 (void *)(s->tree->ptr[parent] + at)))
			node = iface_data;
		s->tree->ptr[i] = node;
	} else {
		node = s->tree->ptr[0];
	}
	if (!node || bpf_probe_read_user(&netfd, sizeof(netfd), (void *)node))
		return 0;
	fd = netfd_socket(netfd);
	if (fd < 0)
		return 0;
	s->file = file_of_fd(fd);
	s->st = conn_of_file(s->tgid, s->file, &s->ino);
	if (!s->st)
		return 0;
	s->fd = fd;
	return 1;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct tls_layout);
} tls_layouts SEC(".maps");

static __always_inline void read_half(struct tls_keys_event *e, int i, __u64 hc,
				      const struct tls_layout *l)
{
	__u64 slice[2] = {};

	bpf_probe_read_user(&e->version[i], sizeof(e->version[i]), (void *)(hc + l->half_version));
	bpf_probe_read_user(e->seq[i], sizeof(e->seq[i]), (void *)(hc + l->half_seq));
	if (bpf_probe_read_user(slice, sizeof(slice), (void *)(hc + l->half_traffic_secret)))
		return;
	e->secret_len[i] = slice[1];
	/* The two lengths a TLS 1.3 suite's hash gives; anything else is not read. */
	if (slice[1] == 32)
		bpf_probe_read_user(e->secret[i], 32, (void *)slice[0]);
	else if (slice[1] == 48)
		bpf_probe_read_user(e->secret[i], 48, (void *)slice[0]);
}

/* Called where a *tls.Conn is met for the first time (go_conn_fd finds its socket afresh: a new
 * connection, or its address reused by another). wire: tgid's Writes come from its wire. */
static __always_inline bool harvest_keys(__u64 tls_conn, __u32 tgid, int fd, __u64 ino, bool wire)
{
	const struct tls_layout *l;
	struct tls_keys_event *e;
	bool keyed;

	l = bpf_map_lookup_elem(&tls_layouts, &tgid);
	if (!l)
		return false;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(COUNTER_RINGBUF_DROPS, 1);
		return false;
	}
	__builtin_memset(e, 0, sizeof(*e));
	fill_header(&e->hdr, EVENT_TLS_KEYS);
	e->conn = ino;
	e->fd = fd;
	e->flags = wire ? TLS_KEYS_WIRE : 0;
	bpf_probe_read_user(&e->vers, sizeof(e->vers), (void *)(tls_conn + l->conn_vers));
	bpf_probe_read_user(&e->cipher_suite, sizeof(e->cipher_suite),
			    (void *)(tls_conn + l->conn_cipher_suite));
	read_half(e, 0, tls_conn + l->conn_in, l);
	read_half(e, 1, tls_conn + l->conn_out, l);
	/* Keyed (its write(2)s copied) only as TLS 1.3 with an out secret: a handshake not done
	 * yet is keyed by setTrafficSecret (tls_secret), a TLS 1.2 connection never. */
	keyed = e->vers == 0x0304 && (e->secret_len[1] == 32 || e->secret_len[1] == 48);
	bpf_ringbuf_submit(e, ringbuf_flags(sizeof(*e), true));
	return keyed;
}

/* wire: tgid's Writes come from its wire (wire_bits of its targets bits, looked up once per hit
 * by uprobe_target: a second lookup of that map cost each Write of a process without the wire
 * one more cold hash access). file, when not NULL, gets the socket's struct file. */
static __always_inline int go_conn_fd_of(__u64 tls_conn, __u32 tgid, struct conn_state **st,
					 __u64 *ino, struct file **file, bool harvest, bool wire)
{
	struct tls_conn_key key = { .tgid = tgid, .tls_conn = tls_conn };
	struct conn_search s = { .tgid = tgid, .fd = -1 };
	__u32 zero = 0;
	struct tls_conn_fd *cached, found = {};

	cached = bpf_map_lookup_elem(&tls_conn_fds, &key);
	if (cached) {
		int fd = cached->fd;
		__u64 want = cached->ino;
		struct file *f = file_of_fd(fd);

		*st = conn_of_file(tgid, f, ino);
		if (*st && *ino == want) {
			if (file)
				*file = f;
			/* Met before its handshake was done (a client's first Write): read once
			 * more at a later Write, keyed if it is TLS 1.3 with a secret by then. */
			if (harvest && wire && !((*st)->flags & (CONN_KEYED | CONN_KEY_RETRIED))) {
				(*st)->flags |= CONN_KEY_RETRIED;
				if (harvest_keys(tls_conn, tgid, fd, *ino, true))
					(*st)->flags |= CONN_KEYED;
			}
			return fd;
		}
		bpf_map_delete_elem(&tls_conn_fds, &key);
	}
	s.tree = bpf_map_lookup_elem(&conn_trees, &zero);
	if (!s.tree)
		return -1;
	if (!is_itab_at(tls_conn) ||
	    bpf_probe_read_user(&s.tree->ptr[0], sizeof(s.tree->ptr[0]), (void *)(tls_conn + 8)) ||
	    !s.tree->ptr[0])
		return -1;
	bpf_loop(CONN_TREE_NODES, conn_search_node, &s, 0);
	if (s.fd < 0 || !s.st)
		return -1;
	*st = s.st;
	*ino = s.ino;
	if (file)
		*file = s.file;
	found.fd = s.fd;
	found.ino = s.ino;
	bpf_map_update_elem(&tls_conn_fds, &key, &found, BPF_ANY);
	/* The wire copy starts with the state read: its first record is sealed at that seq. */
	if (harvest && (harvest_tls_keys || wire) &&
	    harvest_keys(tls_conn, tgid, s.fd, s.ino, wire))
		s.st->flags |= CONN_KEYED;
	return s.fd;
}

static __always_inline int go_conn_fd(__u64 tls_conn, __u32 tgid, struct conn_state **st,
				      __u64 *ino, bool wire)
{
	return go_conn_fd_of(tls_conn, tgid, st, ino, NULL, true, wire);
}

/* A uprobe whose single-step is interrupted by a signal (Go preempts goroutines with SIGURG)
 * restarts the probed instruction and fires again: the same call seen twice would duplicate its
 * bytes. A TLS Write always writes its ciphertext to the socket before the next Write on that
 * connection can start, and a goroutine's Read RET is always preceded by that Read's entry: so a
 * second Write with the same stack pointer, goroutine and slice before any write(2) on the
 * socket, or a second RET of the goroutine before any entry, is the same call. Keyed by socket
 * and by goroutine, not by thread: goroutines move between threads. */
struct read_ret_sig {
	__u64 sp, ip, n;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tls_read_key);
	__type(value, struct read_ret_sig);
} last_read_ret SEC(".maps");

static __always_inline __u64 mix(__u64 h, __u64 v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

/* Whether a TLS probe's hit in tgid is wanted, with its targets bits in *bits (0 for a process
 * that is no target, taken with uprobe_any_pid). */
static __always_inline bool uprobe_target(__u32 tgid, __u8 *bits)
{
	*bits = target_bits(tgid);
	return *bits || uprobe_any_pid;
}

/* An entry probe on the stack check's branch that is about to go to morestack: the function
 * starts again after it, and that hit is the one to take. */
static __always_inline bool branch_to_morestack(struct pt_regs *ctx)
{
	return (bpf_get_attach_cookie(ctx) & PROBE_COOKIE_AT_BRANCH) &&
	       (ctx->flags & X86_FLAGS_JBE_TAKEN);
}

/* What a TLS Write tells the write(2) that follows it on its thread: that socket is TLS, with
 * nothing for sys_enter_write to do (no plaintext, no wire copy), so it need not look the
 * connection up (1.0-1.4 us a write(2) here: the descriptor table, the inode, the conns hash). Per
 * CPU, taken once, and trusted only by the same thread, not switched out since, on the same
 * descriptor still naming the same open file. */
struct tls_hint {
	__u32 tid;
	__s32 fd;
	__u64 switches; /* the thread's nvcsw + nivcsw at the Write */
	__u64 file;	/* the struct file the descriptor named */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tls_hint);
} tls_hints SEC(".maps");

static __always_inline __u64 current_switches(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return task->nvcsw + task->nivcsw;
}

static __always_inline void tls_hint__set(__u32 tid, int fd, struct file *f)
{
	__u32 zero = 0;
	struct tls_hint *h = bpf_map_lookup_elem(&tls_hints, &zero);

	if (h) {
		h->tid = tid;
		h->fd = fd;
		h->switches = current_switches();
		h->file = (__u64)f;
	}
}

/* Whether this write(2) of fd by thread tid is the one a TLS Write's hint is for (taken). */
static __always_inline bool tls_hint__take(__u32 tid, int fd)
{
	__u32 zero = 0;
	struct tls_hint *h = bpf_map_lookup_elem(&tls_hints, &zero);

	if (!h || h->tid != tid || h->fd != fd || h->switches != current_switches())
		return false;
	h->tid = 0;
	return h->file && (__u64)file_of_fd(fd) == h->file;
}

SEC("uprobe")
int BPF_KPROBE(tls_write)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct conn_state *st = NULL;
	struct file *f = NULL;
	__u64 ino = 0, sig, buf, len;
	__u32 seq;
	__u8 bits;
	int fd;

	if (!uprobe_target(tgid, &bits))
		return 0;
	count_hit(tgid, PROBE_TLS_WRITE);
	if (branch_to_morestack(ctx))
		return 0;
	fd = go_conn_fd_of(ctx->ax, tgid, &st, &ino, &f, true, wire_bits(bits));
	if (fd < 0 || !st) {
		count(COUNTER_NO_SOCKET, 1);
		return 0;
	}
	buf = ctx->bx;
	len = ctx->cx;
	/* The socket's write_seq moves with every write(2) of the ciphertext in between. */
	seq = write_seq_of(st);
	sig = mix(mix(mix(mix(mix(1, ctx->sp), ctx->r14), buf), len), seq);
	if (st->last_write_sig == sig) {
		count(COUNTER_DUPLICATE_HITS, 1);
		return 0;
	}
	st->last_write_sig = sig;
	st->flags |= CONN_TLS;
	if (!wire_bits(bits))
		tls_hint__set((__u32)bpf_get_current_pid_tgid(), fd, f);
	emit(st, ino, fd, DIR_OUT, SOURCE_TLS, buf, len, seq, PROBE_TLS_WRITE);
	return 0;
}

/* Go's QUICEncryptionLevelApplication: setTrafficSecret's level for the traffic secrets. */
#define GO_TLS_LEVEL_APPLICATION 3

/* crypto/tls.(*halfConn).setTrafficSecret(suite *cipherSuiteTLS13, level, secret []byte) (Go
 * 1.21+; receiver AX, suite BX, level CX, secret DI/SI): a connection's new application traffic
 * secret, set at the end of its handshake (and at a KeyUpdate). When the half is the out one (the
 * receiver minus the layout's conn_out leads to a *tls.Conn whose socket go_conn_fd finds), its
 * secret with sequence number 0 keys the connection from its first record on (copy_tls_wire):
 * the connections opened after attaching, with no Write probe. */
SEC("uprobe")
int BPF_KPROBE(tls_secret)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct conn_state *st = NULL;
	const struct tls_layout *l;
	struct tls_keys_event *e;
	__u64 ino = 0, len = ctx->si;
	__u16 suite = 0;
	__u8 bits;
	int fd;

	if (!uprobe_target(tgid, &bits))
		return 0;
	count_hit(tgid, PROBE_TLS_SECRET);
	if (branch_to_morestack(ctx) || !wire_bits(bits) || ctx->cx != GO_TLS_LEVEL_APPLICATION ||
	    (len != 32 && len != 48))
		return 0;
	l = bpf_map_lookup_elem(&tls_layouts, &tgid);
	if (!l || ctx->ax < l->conn_out)
		return 0;
	fd = go_conn_fd_of(ctx->ax - l->conn_out, tgid, &st, &ino, NULL, false, wire_bits(bits));
	if (fd < 0 || !st || bpf_probe_read_user(&suite, sizeof(suite), (void *)ctx->bx))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(COUNTER_RINGBUF_DROPS, 1);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	fill_header(&e->hdr, EVENT_TLS_KEYS);
	e->conn = ino;
	e->fd = fd;
	e->flags = TLS_KEYS_OUT_ONLY | TLS_KEYS_WIRE;
	e->cipher_suite = suite;
	e->secret_len[1] = len;
	if (len == 32)
		bpf_probe_read_user(e->secret[1], 32, (void *)ctx->di);
	else
		bpf_probe_read_user(e->secret[1], 48, (void *)ctx->di);
	bpf_ringbuf_submit(e, ringbuf_flags(sizeof(*e), true));
	st->flags |= CONN_TLS | CONN_KEYED;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(tls_read_entry)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct tls_read_key key = { .tgid = tgid, .goroutine = ctx->r14 };
	struct pending_read pr = { .buf = ctx->bx, .cap = ctx->cx };
	struct conn_state *st = NULL;
	__u8 bits;
	int fd;

	if (!uprobe_target(tgid, &bits))
		return 0;
	count_hit(tgid, PROBE_TLS_READ_ENTRY);
	if (branch_to_morestack(ctx))
		return 0;
	/* This goroutine's next RET is a new one (same key layout as last_read_ret's). */
	bpf_map_delete_elem(&last_read_ret, &key);
	fd = go_conn_fd(ctx->ax, tgid, &st, &pr.ino, wire_bits(bits));
	if (fd < 0 || !st) {
		count(COUNTER_NO_SOCKET, 1);
		return 0;
	}
	/* Claim the socket now, before the ciphertext read inside Read reaches the syscall path. */
	st->flags |= CONN_TLS;
	pr.fd = fd;
	bpf_map_update_elem(&tls_reads, &key, &pr, BPF_ANY);
	return 0;
}

/* A Read already blocked when the tracer attached returns without a recorded entry. Its receiver
 * and buffer are still in the caller's spill slots (found in the prologue by user space and
 * passed in the cookie), so its bytes are not lost. */
static __always_inline int read_ret_from_spills(struct pt_regs *ctx, __u32 tgid, __s64 n, bool wire)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 sp = ctx->sp, conn = 0, buf = 0, cap = 0, ino = 0;
	struct conn_state *st = NULL;
	int fd;

	if (!(cookie >> 24 & 1))
		return -1;
	if (bpf_probe_read_user(&conn, 8, (void *)(sp + (cookie & 0xff))) ||
	    bpf_probe_read_user(&buf, 8, (void *)(sp + (cookie >> 8 & 0xff))) ||
	    bpf_probe_read_user(&cap, 8, (void *)(sp + (cookie >> 16 & 0xff))))
		return -1;
	if (!conn || !buf || (__u64)n > cap)
		return -1;
	fd = go_conn_fd(conn, tgid, &st, &ino, wire);
	if (fd < 0 || !st)
		return -1;
	st->flags |= CONN_TLS;
	emit(st, ino, fd, DIR_IN, SOURCE_TLS, buf, (__u64)n, 0, PROBE_TLS_READ_RET);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(tls_read_ret)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct tls_read_key key = { .tgid = tgid, .goroutine = ctx->r14 };
	struct conn_key ck = { .tgid = tgid };
	struct pending_read *pr;
	struct conn_state *st;
	__s64 n = (__s64)ctx->ax;
	struct read_ret_sig sig = { .sp = ctx->sp, .ip = ctx->ip, .n = ctx->ax }, *prev;
	__u8 bits;

	if (!uprobe_target(tgid, &bits))
		return 0;
	count_hit(tgid, PROBE_TLS_READ_RET);
	/* Without spill slots in the cookie the entry is probed too (tls_attachment__attach). */
	if (read_ret_only && (bpf_get_attach_cookie(ctx) >> 24 & 1)) {
		if (n > 0 && read_ret_from_spills(ctx, tgid, n, wire_bits(bits)) == 0)
			return 0;
		if (n > 0)
			count(COUNTER_READ_UNMATCHED, 1);
		return 0;
	}
	prev = bpf_map_lookup_elem(&last_read_ret, &key);
	if (prev && prev->sp == sig.sp && prev->ip == sig.ip && prev->n == sig.n) {
		count(COUNTER_DUPLICATE_HITS, 1);
		return 0;
	}
	bpf_map_update_elem(&last_read_ret, &key, &sig, BPF_ANY);
	pr = bpf_map_lookup_elem(&tls_reads, &key);
	if (!pr) {
		if (n > 0 && read_ret_from_spills(ctx, tgid, n, wire_bits(bits)) == 0)
			return 0;
		count(COUNTER_READ_UNMATCHED, 1);
		return 0;
	}
	ck.ino = pr->ino;
	st = bpf_map_lookup_elem(&conns, &ck);
	if (st && n > 0 && (__u64)n <= pr->cap)
		emit(st, pr->ino, pr->fd, DIR_IN, SOURCE_TLS, pr->buf, (__u64)n, 0,
		     PROBE_TLS_READ_RET);
	bpf_map_delete_elem(&tls_reads, &key);
	return 0;
}

/* A read(2) of a TARGET_READS_VIA_SYSCALL process that returned ret > 0 bytes on fd: timed with
 * the TCP sequence number it reached when fd is a TCP socket. Straight from the socket, without
 * the conns hash: a lookup there that misses the cache cost about 0.36 us (tests/cost/micro). */
static __always_inline void emit_sock_read(int fd, __s64 ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct file *f = file_of_fd(fd);
	struct sock_read_event *e;
	struct tcp_sock *tp;
	__u64 ino = socket_ino(f);

	if (!ino)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(COUNTER_RINGBUF_DROPS, 1);
		return;
	}
	__builtin_memset(e->laddr, 0, sizeof(e->laddr));
	__builtin_memset(e->raddr, 0, sizeof(e->raddr));
	tp = (struct tcp_sock *)tcp_sock_ends(f, &e->family, e->laddr, e->raddr, &e->lport,
					      &e->rport);
	if (!tp) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		return;
	}
	fill_header(&e->hdr, EVENT_SOCK_READ);
	e->conn = ino;
	e->seq_end = BPF_CORE_READ(tp, copied_seq);
	e->fd = fd;
	e->pad = 0;
	e->len = (__u32)ret;
	bpf_ringbuf_submit(e, ringbuf_flags(sizeof(*e), true));
	count_emitted(id >> 32, PROBE_SYS_EXIT, 1, sizeof(*e));
}

/* copy_tls_wire: write(2)s of TLS sockets not keyed, by process (their plaintext needs the Write
 * probe: user space puts it back when this grows while it is off). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} wire_unkeyed SEC(".maps");

/* A connection of a wire process that was silent since attaching, and the address of its
 * *tls.Conn that user space found in the process's memory (goheap.h): its first write(2) reads the
 * state there and keys it (key_pending). Its Write probe need not wait for a Write to meet it. */
struct {
	/* LRU: an entry whose connection closes before it writes is never looked up again. */
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct conn_key);
	__type(value, __u64);
} wire_pending SEC(".maps");

/* The state read after the process sealed the records this write(2) carries: its out sequence
 * number is ahead of theirs by their count, which the wire stream's window of sequence numbers
 * covers. A connection whose state does not hold up as TLS 1.3 is taken as TLS without a key,
 * and its write counted as such (its Write probe comes back). */
static __always_inline void key_pending(struct conn_state *st, __u32 tgid, int fd, __u64 ino)
{
	struct conn_key key = { .tgid = tgid, .ino = ino };
	__u64 *found = bpf_map_lookup_elem(&wire_pending, &key), tls_conn;

	if (!found)
		return;
	tls_conn = *found;
	bpf_map_delete_elem(&wire_pending, &key);
	st->flags |= CONN_TLS;
	if (harvest_keys(tls_conn, tgid, fd, ino, true))
		st->flags |= CONN_KEYED;
}

static __always_inline void count_unkeyed(__u32 tgid, __u64 buf)
{
	__u64 one = 1, *n;
	__u8 type = 0;

	/* Application data only: a Go client writes its ClientHello before it has a secret. */
	if (bpf_probe_read_user(&type, 1, (void *)buf) || type != 23)
		return;
	n = bpf_map_lookup_elem(&wire_unkeyed, &tgid);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&wire_unkeyed, &tgid, &one, BPF_NOEXIST);
}

/* A syscall's arguments at its exit. x86-64 keeps the registers a syscall was entered with in the
 * task's pt_regs until it returns to user space, only ax changing (to the result), so the exit
 * reads fd, buffer and count there. Until stop 33 the entry kept them in a hash keyed by thread:
 * an update at every entry, a lookup and a delete at every exit, 1.7 us of each read(2) of a
 * target, and an entry program on every read(2) of every process of the node. */
struct sys_args {
	int fd;
	__u64 buf;
	__u64 count;
};

static __always_inline void sys_args_of_current(struct sys_args *a)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	a->fd = (int)regs->di;
	a->buf = regs->si;
	a->count = regs->dx;
}

/* What a write(2)'s entry found its exit has to do, per CPU. An exit trusts it when it is its own
 * entry's: the same thread, not switched out since (its context-switch counts unchanged), so no
 * other syscall entry ran on this CPU in between, and a hint the thread left on another CPU
 * before cannot pass for it. That is nearly always (a socket write(2) seldom sleeps); then, for
 * the common case (a TLS socket's ciphertext, a process that is no target), it looks nothing up.
 * Any other exit does the whole check. */
#define EXIT_PLAIN 1 /* plaintext: the exit copies what the kernel moved */
#define EXIT_WIRE 2  /* a wire copy: the exit takes back what a short write did not move */

struct write_hint {
	__u32 tid;
	__u32 exit_work; /* EXIT_* */
	__u64 switches;	 /* the thread's nvcsw + nivcsw at the entry */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct write_hint);
} write_hints SEC(".maps");

static __always_inline void write_hint__set(__u32 tid, __u32 exit_work)
{
	__u32 zero = 0;
	struct write_hint *h = bpf_map_lookup_elem(&write_hints, &zero);

	if (h) {
		h->tid = tid;
		h->exit_work = exit_work;
		h->switches = current_switches();
	}
}

/* The hint this exit's own entry left, or NULL. */
static __always_inline struct write_hint *write_hint__own(__u32 tid)
{
	__u32 zero = 0;
	struct write_hint *h = bpf_map_lookup_elem(&write_hints, &zero);

	if (!h || h->tid != tid || h->switches != current_switches())
		return NULL;
	return h;
}

/* A write(2) or sendto(2) at its entry: a keyed connection's bytes are copied here, before a byte
 * reaches the peer (its read(2) cannot come first). Reads have no entry program: all of a read
 * is done at its exit. */
static __always_inline int sys_enter_write_of(__s64 fd, __u64 buf, __u64 count)
{
	__u64 id = bpf_get_current_pid_tgid(), ino = 0;
	struct conn_state *st;
	__u8 bits = target_bits(id >> 32);
	bool target = bits != 0, wire = copy_tls_wire && (bits & TARGET_TLS_WIRE);
	__u32 exit_work = 0;

	count_hit(target ? id >> 32 : 0, PROBE_SYS_ENTER);
	/* Nothing of a process that is no target is captured. The write(2) that follows a TLS
	 * Write carries its ciphertext: nothing to do there either (its hint says so). */
	if (!target || (!wire && tls_hint__take((__u32)id, (int)fd)))
		goto out;
	st = conn_of_fd(id >> 32, (int)fd, &ino);
	if (!st)
		goto out;
	if (capture_syscalls && !(st->flags & CONN_TLS))
		exit_work = EXIT_PLAIN;
	if (!wire)
		goto out;
	if (!(st->flags & CONN_KEYED))
		key_pending(st, id >> 32, (int)fd, ino);
	/* Unless a Write took its plaintext: one met just before the process's wire bit was set
	 * (user space sets it once the Write probe is attached) left its hint for this write(2). */
	if ((st->flags & (CONN_TLS | CONN_KEYED)) == CONN_TLS &&
	    !tls_hint__take((__u32)id, (int)fd))
		count_unkeyed(id >> 32, buf);
	/* What a short write did not move comes again in the next write(2), at the same wire
	 * offsets: the exit takes them back (wire_inflight). */
	if ((st->flags & CONN_KEYED) && count) {
		emit(st, ino, (int)fd, DIR_OUT, SOURCE_TLS_WIRE, buf, count, write_seq_of(st),
		     PROBE_SYS_ENTER);
		st->wire_inflight = count > 0xffffffffull ? 0xffffffffu : (__u32)count;
		exit_work = EXIT_WIRE;
	}
out:
	write_hint__set((__u32)id, exit_work);
	return 0;
}

/* A TLS record header: content type 20..23, version 3.1..3.4. Plaintext HTTP never starts a
 * connection like this (an HTTP/2 frame that did would be over 1 MB). */
static __always_inline bool looks_like_tls(__u64 buf)
{
	__u8 h[3] = {};

	if (bpf_probe_read_user(h, sizeof(h), (void *)buf))
		return false;
	return h[0] >= 20 && h[0] <= 23 && h[1] == 3 && h[2] >= 1 && h[2] <= 4;
}

/* A short write(2) of a keyed connection: its unmoved bytes were copied at entry and come again
 * in the next write(2) at the same wire offsets. A full one (nearly all) looks nothing up. */
static __always_inline void wire_short_write(__u32 tgid, __s64 ret, const struct sys_args *a)
{
	struct conn_state *st;
	__u64 moved = ret > 0 ? (__u64)ret : 0, ino = 0, back;

	if (moved >= a->count)
		return;
	st = conn_of_fd(tgid, a->fd, &ino);
	if (!st || !st->wire_inflight)
		return;
	back = st->wire_inflight > moved ? st->wire_inflight - moved : 0;
	if (st->wire_offset >= back)
		st->wire_offset -= back;
	st->wire_inflight = 0;
}

/* Plain TCP at the syscall's exit: what the kernel moved, with the arguments from the task's
 * registers. A target's socket read(2) is only timed (its TCP sequence number) when its TLS
 * Reads are not probed. */
static __always_inline int sys_exit(__s64 ret, __u8 dir)
{
	__u64 id = bpf_get_current_pid_tgid(), ino = 0;
	__u32 tgid = id >> 32;
	struct write_hint *hint;
	struct conn_state *st;
	struct sys_args a;
	bool wire_out;
	__u8 bits;

	if (count_probe_hits)
		count_hit(is_target(tgid) ? tgid : 0, PROBE_SYS_EXIT);
	if (dir == DIR_OUT) {
		hint = write_hint__own((__u32)id);
		if (hint && hint->exit_work != EXIT_PLAIN) {
			if (hint->exit_work == EXIT_WIRE) {
				sys_args_of_current(&a);
				wire_short_write(tgid, ret, &a);
			}
			return 0;
		}
	}
	bits = target_bits(tgid);
	wire_out = dir == DIR_OUT && copy_tls_wire && (bits & TARGET_TLS_WIRE);
	if (!bits || (ret <= 0 && !wire_out))
		return 0;
	sys_args_of_current(&a);
	if (wire_out)
		wire_short_write(tgid, ret, &a);
	if (ret <= 0 || !capture_syscalls)
		return 0;
	/* Every socket read of such a process is timed (all its TCP is taken as TLS, as on a
	 * control plane). */
	if (dir == DIR_IN && (bits & TARGET_READS_VIA_SYSCALL)) {
		emit_sock_read(a.fd, ret);
		return 0;
	}
	st = conn_of_fd(tgid, a.fd, &ino);
	if (!st)
		return 0;
	/* The TLS probes may have claimed the socket during the call (a handshake read). A socket
	 * whose first bytes are a TLS record is TLS too, seen before any Read or Write of it
	 * (a server's handshake, or a connection older than the tracer): its ciphertext is not
	 * captured. */
	if (st->flags & CONN_TLS)
		return 0;
	if (st->offset[dir & 1] == 0 && looks_like_tls(a.buf)) {
		st->flags |= CONN_TLS;
		if (wire_out)
			count_unkeyed(tgid, a.buf);
		return 0;
	}
	emit(st, ino, a.fd, dir, SOURCE_SYSCALL, a.buf, (__u64)ret,
	     dir == DIR_OUT ? write_seq_of(st) - (__u32)ret : 0, PROBE_SYS_EXIT);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_write")
int sys_enter_write(struct trace_event_raw_sys_enter *ctx)
{
	return sys_enter_write_of(ctx->args[0], ctx->args[1], ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_exit_write")
int sys_exit_write(struct trace_event_raw_sys_exit *ctx)
{
	return sys_exit(ctx->ret, DIR_OUT);
}

SEC("tracepoint/syscalls/sys_enter_sendto")
int sys_enter_sendto(struct trace_event_raw_sys_enter *ctx)
{
	return sys_enter_write_of(ctx->args[0], ctx->args[1], ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int sys_exit_sendto(struct trace_event_raw_sys_exit *ctx)
{
	return sys_exit(ctx->ret, DIR_OUT);
}

SEC("tracepoint/syscalls/sys_exit_read")
int sys_exit_read(struct trace_event_raw_sys_exit *ctx)
{
	return sys_exit(ctx->ret, DIR_IN);
}

SEC("tracepoint/syscalls/sys_exit_recvfrom")
int sys_exit_recvfrom(struct trace_event_raw_sys_exit *ctx)
{
	return sys_exit(ctx->ret, DIR_IN);
}

/* A Go function on the bind path (client-go's (*pods).Bind, or the default binder) was entered:
 * record who called it, for the citation of the line that issued the bind. At entry the frame
 * pointer still belongs to the caller, so the kernel's frame-pointer walk skips the direct
 * caller; its return address sits at [SP] and is put in frames[1]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct call_event);
} call_scratch SEC(".maps");

static __always_inline void read_go_string(char *dst, __u16 *len_out, __u64 str_addr)
{
	__u64 hdr[2] = {}; /* data pointer, length */
	__u64 n;

	*len_out = 0;
	if (bpf_probe_read_user(hdr, sizeof(hdr), (void *)str_addr) || !hdr[0])
		return;
	n = hdr[1] < CALL_NAME_LEN - 1 ? hdr[1] : CALL_NAME_LEN - 1;
	if (bpf_probe_read_user(dst, n & (CALL_NAME_LEN - 1), (void *)hdr[0]) == 0)
		*len_out = (__u16)n;
}

static __always_inline __u64 go_arg(struct pt_regs *ctx, __u32 reg)
{
	/* Loaded field by field: the verifier refuses a computed offset into the context. */
	__u64 args[9] = { ctx->ax, ctx->bx, ctx->cx,  ctx->di, ctx->si,
			  ctx->r8, ctx->r9, ctx->r10, ctx->r11 };

	return reg < 9 ? args[reg] : 0;
}

SEC("uprobe")
int BPF_KPROBE(go_call)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct call_event *e;
	__u32 zero = 0;
	__u64 obj, ret = 0;
	long n;

	if (!is_target(id >> 32))
		return 0;
	count_hit(id >> 32, PROBE_GO_CALL);
	if (branch_to_morestack(ctx))
		return 0;
	e = bpf_map_lookup_elem(&call_scratch, &zero);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_CALL);
	e->goroutine = ctx->r14;
	e->cookie = cookie;
	n = bpf_get_stack(ctx, e->frames, sizeof(e->frames), BPF_F_USER_STACK);
	e->n_frames = n > 0 ? (__u32)(n / sizeof(__u64)) : 0;
	/* Make room for the direct caller at frames[1]. */
	if (e->n_frames >= 1 && !bpf_probe_read_user(&ret, sizeof(ret), (void *)ctx->sp)) {
		for (int i = MAX_STACK_FRAMES - 1; i > 1; i--)
			e->frames[i] = e->frames[i - 1];
		e->frames[1] = ret;
		if (e->n_frames < MAX_STACK_FRAMES)
			e->n_frames++;
	}
	/* ObjectMeta follows TypeMeta (two strings): Name at +32, Namespace at +64. */
	obj = go_arg(ctx, CALL_COOKIE_OBJ_REG(cookie));
	e->name_len = e->namespace_len = 0;
	e->object = obj;
	e->aux = cookie & CALL_COOKIE_AUX ? go_arg(ctx, CALL_COOKIE_AUX_REG(cookie)) : 0;
	if (obj) {
		read_go_string(e->name, &e->name_len, obj + 32);
		read_go_string(e->namespace_, &e->namespace_len, obj + 64);
	}
	if (bpf_ringbuf_output(&events, e, sizeof(*e), ringbuf_flags(sizeof(*e), false)))
		count(COUNTER_RINGBUF_DROPS, 1);
	else
		count_emitted(id >> 32, PROBE_GO_CALL, 1, sizeof(*e));
	return 0;
}

struct fsync_inflight {
	__u64 start_ns;
	__u64 file_id;
	__s32 fd;
	__u32 datasync;
};

/* Which file descriptor fd names now, as a number that changes when it is another file or the
 * file was renamed (etcd renames a WAL segment after its first fsync), so that user space reads
 * its path only when that number changes: the dentry, its name's hash and length, its parent
 * and the inode number, mixed (no kernel address leaves the kernel as such). 0: unknown. */
static __always_inline __u64 file_id_of(int fd)
{
	struct file *f = file_of_fd(fd);
	struct dentry *de;
	__u64 h;

	if (!f)
		return 0;
	de = BPF_CORE_READ(f, f_path.dentry);
	if (!de)
		return 0;
	h = ((__u64)de ^ BPF_CORE_READ(de, d_name.hash_len)) * 0x9e3779b97f4a7c15ull;
	h = (h ^ (__u64)BPF_CORE_READ(de, d_parent)) * 0xff51afd7ed558ccdull;
	h = (h ^ BPF_CORE_READ(f, f_inode, i_ino)) * 0xc4ceb9fe1a85ec53ull;
	return h ? h : 1;
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tid */
	__type(value, struct fsync_inflight);
} fsync_inflight SEC(".maps");

static __always_inline int fsync_enter(struct trace_event_raw_sys_enter *ctx, __u32 datasync)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;
	struct fsync_inflight in = {};

	if (!(target_bits(tgid) & TARGET_FSYNC))
		return 0;
	count_hit(tgid, PROBE_FSYNC);
	in.start_ns = bpf_ktime_get_ns();
	in.fd = (__s32)ctx->args[0];
	in.file_id = file_id_of(in.fd);
	in.datasync = datasync;
	bpf_map_update_elem(&fsync_inflight, &tid, &in, BPF_ANY);
	return 0;
}

static __always_inline int fsync_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct fsync_inflight *in;
	struct fsync_event *e;

	if (!(target_bits(id >> 32) & TARGET_FSYNC))
		return 0;
	in = bpf_map_lookup_elem(&fsync_inflight, &tid);
	if (!in)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(COUNTER_RINGBUF_DROPS, 1);
		bpf_map_delete_elem(&fsync_inflight, &tid);
		return 0;
	}
	fill_header(&e->hdr, EVENT_FSYNC);
	e->start_ns = in->start_ns;
	e->fd = in->fd;
	e->file_id = in->file_id;
	e->datasync = in->datasync;
	e->ret = ctx->ret;
	bpf_map_delete_elem(&fsync_inflight, &tid);
	bpf_ringbuf_submit(e, ringbuf_flags(sizeof(*e), true));
	count_emitted(id >> 32, PROBE_FSYNC, 1, sizeof(*e));
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_fdatasync")
int fdatasync_enter(struct trace_event_raw_sys_enter *ctx)
{
	return fsync_enter(ctx, 1);
}

SEC("tracepoint/syscalls/sys_exit_fdatasync")
int fdatasync_exit(struct trace_event_raw_sys_exit *ctx)
{
	return fsync_exit(ctx);
}

SEC("tracepoint/syscalls/sys_enter_fsync")
int fsync_enter_tp(struct trace_event_raw_sys_enter *ctx)
{
	return fsync_enter(ctx, 0);
}

SEC("tracepoint/syscalls/sys_exit_fsync")
int fsync_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	return fsync_exit(ctx);
}
