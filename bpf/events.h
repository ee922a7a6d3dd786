/* Event records shared by the BPF programs and user space: plain data only. */
#ifndef BINDTRACE_EVENTS_H
#define BINDTRACE_EVENTS_H

#define TASK_COMM_LEN 16
#define MAX_TARGETS 64

/* Payload bytes per data event; a larger call becomes several events with continuing offsets. */
#define MAX_CHUNK 16384
/* A single call larger than this is not copied past it: the offsets still advance, so user space
 * sees (and reports) the gap. */
#define MAX_CHUNKS_PER_CALL 256

enum event_type {
	EVENT_FSYNC = 1,
	EVENT_DATA = 2,
	EVENT_CALL = 3,
	EVENT_SOCK_READ = 4,
	EVENT_TLS_KEYS = 5,
};

/* Value bits of the BPF targets map. */
#define TARGET_TRACED 1
/* Its crypto/tls Reads are not probed: its peers' Writes give the plaintext, and each read(2)
 * of a TLS socket is reported (sock_read_event) with the TCP sequence number it reached, to time
 * when the bytes came out. */
#define TARGET_READS_VIA_SYSCALL 2
/* Its Writes come from its wire where its connections are keyed (BINDTRACE_TLS_WIRE; every target
 * with BINDTRACE_TLS_DECRYPT=1): their write(2)s are copied, and its Write probe can go. */
#define TARGET_TLS_WIRE 4
/* Its fsync(2)s and fdatasync(2)s are timed (etcd: the commit point). */
#define TARGET_FSYNC 8

/* The targets, for the programs every process's syscalls run: the first FAST_TARGETS in one array
 * entry, read with a load the JIT inlines and a short scan of a line every syscall keeps in the
 * cache. A hash lookup cost 280-780 ns a call here (a cold bucket and element, stop 60's phase
 * timers): the syscall tracepoints run one for every read(2) and write(2) of the node. With more
 * targets than it holds, `overflow` sends the programs to the targets hash (the whole set). */
#define FAST_TARGETS 8

struct target_table {
	__u32 n;
	__u32 overflow;
	__u32 tgid[FAST_TARGETS];
	__u8 bits[FAST_TARGETS];
};

enum data_dir {
	DIR_OUT = 0, /* written by the traced process */
	DIR_IN = 1,  /* read by the traced process */
};

enum data_source {
	SOURCE_TLS = 1,	    /* crypto/tls plaintext, from uprobes */
	SOURCE_SYSCALL = 2, /* plaintext TCP, from syscall tracepoints */
	/* The TLS records a keyed connection's write(2)s move (BINDTRACE_TLS_DECRYPT=1, a
	 * measurement): ciphertext, checked against the Write probe's plaintext. */
	SOURCE_TLS_WIRE = 3,
};

/* Per-CPU counters of the capture programs, indexed by these. */
enum capture_counter {
	COUNTER_RINGBUF_DROPS,	/* a ring buffer reserve/output failed: bytes lost */
	COUNTER_TRUNCATED,	/* bytes of calls over MAX_CHUNK * MAX_CHUNKS_PER_CALL */
	COUNTER_NO_SOCKET,	/* a TLS call whose socket could not be found */
	COUNTER_READ_UNMATCHED, /* a Read return without its entry (started mid-call) */
	COUNTER_DUPLICATE_HITS, /* a uprobe hit twice for one call (signal during single-step) */
	COUNTER_MAX,
};

/* Which capture program ran, for the per-process hit counts (probe_hits map). */
enum probe_id {
	PROBE_TLS_WRITE,      /* crypto/tls.(*Conn).Write entry */
	PROBE_TLS_READ_ENTRY, /* (*Conn).Read entry */
	PROBE_TLS_READ_RET,   /* a RET of (*Conn).Read */
	PROBE_GO_CALL,	      /* the scheduler's bind call */
	PROBE_SYS_ENTER,      /* the write(2) entry tracepoint (the only entry: stop 33) */
	PROBE_SYS_EXIT,	      /* read/write/sendto/recvfrom exit tracepoints */
	PROBE_FSYNC,	      /* fsync/fdatasync entry and exit */
	PROBE_TLS_SECRET,     /* crypto/tls.(*halfConn).setTrafficSecret entry */
	PROBE_MAX,
};

/* Key of the probe_hits map: a tgid (0: processes that are not targets) and a probe_id. */
struct probe_hit_key {
	__u32 tgid;
	__u32 probe;
};

struct probe_hit_stats {
	__u64 hits;   /* times the program ran for this process */
	__u64 events; /* ring buffer records it emitted */
	__u64 bytes;  /* ring buffer bytes (records with their headers) */
};

struct event_header {
	__u32 type;
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 cpu;
	__u64 ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	char comm[TASK_COMM_LEN];
};

/* One fsync(2)/fdatasync(2) by a target, emitted when it returns. */
struct fsync_event {
	struct event_header hdr; /* ts_ns = end */
	__u64 start_ns;
	__s64 ret;
	__s32 fd;
	__u32 datasync; /* 1 = fdatasync, 0 = fsync */
	__u64 file_id;	/* which file fd named, 0 if unknown: see file_id_of in capture.bpf.c */
};

/* Cookie of the (*Conn).Read RET probes: the entry-SP-relative slots where the prologue spilled
 * the receiver, b.ptr and b.len (bytes, each < 256), and a bit saying they were established. */
#define TLS_RET_COOKIE(conn, buf, len)                                                             \
	((1ull << 24) | ((__u64)(len) << 16) | ((__u64)(buf) << 8) | (__u64)(conn))

/* Cookie bit of an entry probe placed on the conditional branch of Go's stack check (`cmp rsp,
 * [r14+16]; jbe morestack`) rather than on the function's first instruction: the kernel emulates
 * a branch instead of single-stepping it out of line, so a hit costs a fraction. The registers
 * are still the entry's; the flags say whether the branch goes to morestack, in which case the
 * function is entered again once the stack has grown, and this hit is skipped. */
#define PROBE_COOKIE_AT_BRANCH (1ull << 40)
/* x86 EFLAGS: jbe is taken when CF or ZF is set. */
#define X86_FLAGS_JBE_TAKEN 0x41

#define MAX_STACK_FRAMES 48
#define CALL_NAME_LEN 128

/* Cookie of a call probe (bpf_get_attach_cookie): which argument register holds the pointer to a
 * Kubernetes object (v1.Binding, v1.Pod) whose ObjectMeta is read. Register numbers follow Go's
 * ABIInternal order: 0 RAX, 1 RBX, 2 RCX, 3 RDI, 4 RSI, 5 R8, 6 R9, 7 R10, 8 R11. */
#define CALL_COOKIE_OBJ_REG(cookie) ((cookie)&0xff)
/* Set on the probe of the function that queues a bind for a dispatcher goroutine. */
#define CALL_COOKIE_QUEUED (1ull << 8)
/* Set on the probe of the function through which the scheduler patches a pod's status when it
 * gives up on it (its failure handler's updatePod). */
#define CALL_COOKIE_GIVEUP (1ull << 9)
/* With CALL_COOKIE_AUX, the register (same numbering, bits 16-23) whose value goes to
 * call_event.aux: updatePod's APICacher interface's type word, zero when it is nil (the
 * scheduler patches the status itself) and set when SchedulerAsyncAPICalls hands the PATCH to a
 * dispatcher goroutine. */
#define CALL_COOKIE_AUX (1ull << 10)
#define CALL_COOKIE_AUX_REG(cookie) (((cookie) >> 16) & 0xff)

/* A probed Go function was entered: the caller chain (frame pointers, PCs as runtime addresses)
 * and the namespace/name of the object it was called for. */
struct call_event {
	struct event_header hdr;
	__u64 goroutine; /* R14 */
	__u64 cookie;
	__u64 object; /* the address of the object read: the call's identity */
	__u64 aux;    /* the register CALL_COOKIE_AUX names; 0 without it */
	__u32 n_frames;
	__u16 namespace_len;
	__u16 name_len;
	char namespace_[CALL_NAME_LEN];
	char name[CALL_NAME_LEN];
	__u64 frames[MAX_STACK_FRAMES]; /* frames[0]: the probed function, [1]: its caller, ... */
};

/* Where Go's crypto/tls keeps a connection's TLS 1.3 state in one binary (user/gotls.c's table,
 * by Go release): offsets in a tls.Conn and in its halfConns. Value of the tls_layouts map, by
 * tgid. */
struct tls_layout {
	__u32 conn_in, conn_out;   /* the halfConns: what it reads, what it writes */
	__u32 conn_vers;	   /* tls.Conn.vers (uint16) */
	__u32 conn_cipher_suite;   /* tls.Conn.cipherSuite (uint16) */
	__u32 half_version;	   /* halfConn.version (uint16) */
	__u32 half_seq;		   /* halfConn.seq ([8]byte, big-endian) */
	__u32 half_traffic_secret; /* halfConn.trafficSecret ([]byte) */
	__u32 pad;
};

#define TLS_KEYS_SECRET_MAX 48
/* From setTrafficSecret's arguments: the out half's new application secret only, its sequence
 * number 0 (the in half, version and vers are not filled). */
#define TLS_KEYS_OUT_ONLY 1
/* The process's Writes come from its wire (TARGET_TLS_WIRE): the keys are for its tlswire. */
#define TLS_KEYS_WIRE 2

/* A connection's TLS 1.3 state read when a probe first meets it (BINDTRACE_TLS_KEYS=1, a
 * measurement): both halves' version, sequence number and traffic secret. The secrets go no
 * further than the tracer's memory. */
struct tls_keys_event {
	struct event_header hdr;
	__u64 conn; /* the socket's inode */
	__s32 fd;
	__u16 vers, cipher_suite;
	__u16 version[2]; /* [0]: in, [1]: out */
	__u32 flags;	  /* TLS_KEYS_OUT_ONLY, TLS_KEYS_WIRE */
	__u8 seq[2][8];
	__u64 secret_len[2];
	__u8 secret[2][TLS_KEYS_SECRET_MAX];
};

/* Bytes a process wrote to or read from a TCP connection, in order within (pid, conn, dir). */
struct data_event {
	struct event_header hdr;
	__u64 conn;   /* the socket's inode number: unique while the socket lives */
	__u64 offset; /* of data[0] within this direction's byte stream, from first sight */
	__u32 len;    /* bytes in data[] */
	__s32 fd;
	__u8 dir;     /* enum data_dir */
	__u8 source;  /* enum data_source */
	__u16 family; /* AF_INET or AF_INET6 */
	__u16 lport;
	__u16 rport;
	__u8 laddr[16]; /* IPv4 in the first 4 bytes */
	__u8 raddr[16];
	/* Writes (DIR_OUT): the TCP sequence number of the first byte on the wire (a TLS Write's:
	 * the socket's write_seq when the Write began; a write(2)'s: write_seq after it minus its
	 * length); valid when DATA_HAS_TCP_SEQ is in flags. */
	__u32 tcp_seq;
	__u32 flags;
	__u8 data[];
};

#define DATA_HAS_TCP_SEQ 1

/* A read(2)/recvfrom(2) of a TLS socket by a TARGET_READS_VIA_SYSCALL process: it returned len
 * ciphertext bytes, ending at TCP sequence number seq_end (the socket's copied_seq after it). */
struct sock_read_event {
	struct event_header hdr; /* ts_ns = when the read returned */
	__u64 conn;
	__u32 seq_end;
	__u32 len;
	__s32 fd;
	__u16 family;
	__u16 lport;
	__u16 rport;
	__u16 pad;
	__u8 laddr[16];
	__u8 raddr[16];
};

#endif
