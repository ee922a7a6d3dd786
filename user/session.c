/* One tracing session: the capture BPF object from open to teardown. See session.h. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <openssl/evp.h>

#include "capture.skel.h"
#include "conns.h"
#include "correlate.h"
#include "link_reaper.h"
#include "session.h"
#include "tls13.h"
#include "tlswire.h"
#include "tlsprobe.h"
#include "util.h"

struct session {
	struct session_options opt;
	struct session_handlers h;
	struct capture_bpf *skel;
	struct ring_buffer *ring;
	/* The ring's consumer and producer positions (read-only: libbpf's reader owns them), for
	 * how much waits unread. */
	const volatile unsigned long *positions;
	size_t page_size;
	struct bpf_link **tracepoints;
	size_t n_tracepoints;
	uint64_t events;
	/* This read's records left before it breaks (see session__run), and its newest record's
	 * time (0: none yet); how old that record was when the read ended (0: nothing read). */
	unsigned batch_left;
	uint64_t newest_ns, lag_ns;
	uint64_t ring_peak;	  /* session__ring_peak */
	_Atomic uint64_t step_ns; /* session__last_step_ns */
	bool poll_fast;
	/* BINDTRACE_TLS_KEYS=1: the connections whose TLS 1.3 state was read, by process. */
	struct tls_keys_count {
		pid_t pid;
		char comm[TASK_COMM_LEN];
		uint64_t conns, valid;
		char refused[96]; /* why the first one that did not hold up did not */
	} tls_keys[MAX_TARGETS];
	size_t n_tls_keys;
	/* Fingerprints of each valid connection's secrets (in, out), to find the two traced ends
	 * of one connection: one end's out secret is the other's in. */
	struct tls_keys_seen {
		uint64_t in, out;
	} * tls_seen;
	size_t n_tls_seen;
	uint64_t tls_pairs;
	struct tlswire *tls_wire; /* copy_tls_wire: Writes from the wire, or _DECRYPT */
	unsigned wire_roles;	  /* BINDTRACE_TLS_WIRE: bits of wire_role_of */
	bool wire_asked;	  /* BINDTRACE_TLS_WIRE given, not empty */
	bool wire_delivers;	  /* keyed connections' Writes from it (not BINDTRACE_TLS_WIRE=0) */
	bool decrypt;		  /* BINDTRACE_TLS_DECRYPT=1: compared with the Write probe */
	unsigned wire_targets;	  /* processes added with TARGET_TLS_WIRE */
	struct target_table fast; /* what the BPF target_table holds */
	uint64_t secret_probe_keys, secret_probe_refused; /* tls_secret's */
};

/* Set by SIGINT/SIGTERM and session__stop, and by SIGHUP: one session runs per process. */
static volatile sig_atomic_t stopping, hangup;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		hangup = 1;
	else
		stopping = 1;
}

/* A known TLS 1.3 suite, and half i's secret of its hash length, not zero. */
static bool suite_known(uint16_t suite)
{
	return suite >= TLS13_AES_128_GCM_SHA256 && suite <= TLS13_CHACHA20_POLY1305_SHA256;
}

static bool secret_holds(const struct tls_keys_event *e, int i, bool *zero)
{
	uint64_t want = e->cipher_suite == TLS13_AES_256_GCM_SHA384 ? 48 : 32;

	*zero = true;
	for (size_t k = 0; k < want; k++)
		*zero &= !e->secret[i][k];
	return e->secret_len[i] == want && !*zero;
}

/* Does what was read at gotls's offsets hold up as a TLS 1.3 connection's state? NULL, or why
 * not. */
static const char *tls_keys_refusal(const struct tls_keys_event *e, char *buf, size_t len)
{
	if (e->vers != 0x0304 || e->version[0] != 0x0304 || e->version[1] != 0x0304) {
		snprintf(buf, len, "versions 0x%04x, in 0x%04x, out 0x%04x", e->vers, e->version[0],
			 e->version[1]);
		return buf;
	}
	if (!suite_known(e->cipher_suite)) {
		snprintf(buf, len, "cipher suite 0x%04x", e->cipher_suite);
		return buf;
	}
	for (int i = 0; i < 2; i++) {
		bool zero;

		/* The sequence numbers are big-endian; a connection's does not reach 2^40. */
		if (!secret_holds(e, i, &zero) || e->seq[i][0] || e->seq[i][1] || e->seq[i][2]) {
			snprintf(buf, len,
				 "%s: secret of %llu bytes%s, sequence bytes %02x%02x%02x",
				 i ? "out" : "in", (unsigned long long)e->secret_len[i],
				 zero ? " (zero)" : "", e->seq[i][0], e->seq[i][1], e->seq[i][2]);
			return buf;
		}
	}
	return NULL;
}

#define TLS_KEYS_SEEN_MAX 16384
/* on_record's answer that ends a read at SESSION_READ_BATCH records: libbpf stops there and
 * returns it, the record itself consumed. */
#define SESSION_READ_BREAK (-EAGAIN)

/* 8 bytes of the secret's SHA-256: enough to match two ends, nothing to decrypt with. */
static uint64_t secret_fingerprint(const __u8 *secret, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	uint64_t fp = 0;

	if (!EVP_Digest(secret, len, md, &md_len, EVP_sha256(), NULL) || md_len < 8)
		return 0;
	memcpy(&fp, md, sizeof(fp));
	return fp;
}

static void match_tls_ends(struct session *s, const struct tls_keys_event *e)
{
	size_t len = e->secret_len[0];
	uint64_t in = secret_fingerprint(e->secret[0], len),
		 out = secret_fingerprint(e->secret[1], len);

	for (size_t i = 0; i < s->n_tls_seen; i++) {
		if (s->tls_seen[i].in == out && s->tls_seen[i].out == in) {
			s->tls_pairs++;
			return;
		}
	}
	if (!s->tls_seen)
		s->tls_seen = calloc(TLS_KEYS_SEEN_MAX, sizeof(*s->tls_seen));
	if (s->tls_seen && s->n_tls_seen < TLS_KEYS_SEEN_MAX)
		s->tls_seen[s->n_tls_seen++] = (struct tls_keys_seen){ .in = in, .out = out };
}

static void count_tls_keys(struct session *s, const struct tls_keys_event *e)
{
	struct tls_keys_count *c = NULL;
	char why[96];
	const char *refused;

	for (size_t i = 0; i < s->n_tls_keys && !c; i++)
		if (s->tls_keys[i].pid == (pid_t)e->hdr.pid)
			c = &s->tls_keys[i];
	if (!c) {
		if (s->n_tls_keys == MAX_TARGETS)
			return;
		c = &s->tls_keys[s->n_tls_keys++];
		c->pid = (pid_t)e->hdr.pid;
		util__copy(c->comm, sizeof(c->comm), e->hdr.comm);
	}
	c->conns++;
	refused = tls_keys_refusal(e, why, sizeof(why));
	if (!refused) {
		c->valid++;
		match_tls_ends(s, e);
		if (s->tls_wire && (e->flags & TLS_KEYS_WIRE))
			tlswire__key(s->tls_wire, e);
	} else if (!c->refused[0])
		util__copy(c->refused, sizeof(c->refused), refused);
}

/* A handshake's application secret for its out half (tls_secret): a TLS 1.3 suite and a secret
 * of its hash length, not zero. */
static void secret_probe_key(struct session *s, const struct tls_keys_event *e)
{
	bool zero;

	s->secret_probe_keys++;
	if (!suite_known(e->cipher_suite) || !secret_holds(e, 1, &zero)) {
		s->secret_probe_refused++;
		return;
	}
	if (s->tls_wire)
		tlswire__key(s->tls_wire, e);
}

static void handle_record(struct session *s, void *data, size_t size)
{
	const struct event_header *hdr = data;
	const struct data_event *e = data;

	if (size < sizeof(*hdr))
		return;
	s->events++;
	if (hdr->ts_ns > s->newest_ns)
		s->newest_ns = hdr->ts_ns;
	switch (hdr->type) {
	case EVENT_DATA:
		if (size < sizeof(*e) || e->len > size - sizeof(*e))
			break;
		if (s->tls_wire && e->source == SOURCE_TLS_WIRE) {
			tlswire__wire(s->tls_wire, e);
			break;
		}
		/* From the key on, a connection's Writes come from its wire when delivering. */
		if (s->tls_wire && e->source == SOURCE_TLS && e->dir == DIR_OUT &&
		    tlswire__plain(s->tls_wire, e) && s->wire_delivers)
			break;
		if (s->h.data)
			s->h.data(s->h.ctx, e);
		break;
	case EVENT_FSYNC:
		if (size >= sizeof(struct fsync_event) && s->h.fsync)
			s->h.fsync(s->h.ctx, data);
		break;
	case EVENT_CALL:
		if (size >= sizeof(struct call_event) && s->h.call)
			s->h.call(s->h.ctx, data);
		break;
	case EVENT_SOCK_READ:
		if (size >= sizeof(struct sock_read_event) && s->h.sock_read)
			s->h.sock_read(s->h.ctx, data);
		break;
	case EVENT_TLS_KEYS:
		if (size < sizeof(struct tls_keys_event))
			break;
		if (((const struct tls_keys_event *)data)->flags & TLS_KEYS_OUT_ONLY)
			secret_probe_key(s, data);
		else
			count_tls_keys(s, data);
		break;
	}
}

/* A read stops after SESSION_READ_BATCH records (libbpf's consume would otherwise take the whole
 * backlog in one call, however long), so that the caller's step between reads runs while it
 * catches up. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;

	handle_record(s, data, size);
	return --s->batch_left ? 0 : SESSION_READ_BREAK;
}

static const char *const probe_names[PROBE_MAX] = {
	[PROBE_TLS_WRITE] = "tls_write",
	[PROBE_TLS_READ_ENTRY] = "tls_read_entry",
	[PROBE_TLS_READ_RET] = "tls_read_ret",
	[PROBE_GO_CALL] = "go_call",
	[PROBE_SYS_ENTER] = "sys_enter",
	[PROBE_SYS_EXIT] = "sys_exit",
	[PROBE_FSYNC] = "fsync",
	[PROBE_TLS_SECRET] = "tls_secret",
};

static bool env_on(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

/* The roles whose Writes may come from the wire, named as process_role__name names them (the
 * names targets.c asks with). */
static const enum process_role wire_role_of[] = { ROLE_SCHEDULER, ROLE_APISERVER, ROLE_ETCD };

static bool token_is(const char *p, size_t n, const char *word)
{
	return strlen(word) == n && !strncmp(p, word, n);
}

/* role's bit in wire_roles. */
static unsigned wire_bit(enum process_role role)
{
	for (size_t i = 0; i < sizeof(wire_role_of) / sizeof(wire_role_of[0]); i++)
		if (wire_role_of[i] == role)
			return 1u << i;
	return 0;
}

/* BINDTRACE_TLS_WIRE into bits of wire_role_of: unset or empty, the scheduler's; 0 or
 * none, no one's; 1 or all, every role's; else a comma list of role names. Anything else is
 * refused with one line (a misspelt role was once taken as none, without a word). Empty is the
 * default, as for most variables: `BINDTRACE_TLS_WIRE=$choice` with nothing chosen once turned
 * every Write probe back on, without a word. */
static int wire_roles_parse(const char *name, unsigned *roles, bool *asked)
{
	const char *v = getenv("BINDTRACE_TLS_WIRE");
	const size_t n_names = sizeof(wire_role_of) / sizeof(wire_role_of[0]);

	if (v && !*v)
		v = NULL;
	*asked = v != NULL;
	*roles = v ? 0 : wire_bit(ROLE_SCHEDULER);
	for (const char *p = v; p && *p;) {
		size_t n = strcspn(p, ",");
		bool known = token_is(p, n, "0") || token_is(p, n, "none");

		if (token_is(p, n, "1") || token_is(p, n, "all")) {
			*roles |= (1u << n_names) - 1;
			known = true;
		}
		for (size_t i = 0; i < n_names && !known; i++) {
			if (token_is(p, n, process_role__name(wire_role_of[i]))) {
				*roles |= 1u << i;
				known = true;
			}
		}
		if (!known) {
			fprintf(
			    stderr,
			    "%s: BINDTRACE_TLS_WIRE: '%.*s' is not a role (etcd, kube-apiserver, "
			    "kube-scheduler, all or none)\n",
			    name, (int)n, p);
			return -EINVAL;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

bool session__wire_asked(const struct session *s)
{
	return s->wire_asked;
}

bool session__wire_role(const struct session *s, const char *role)
{
	for (size_t i = 0; i < sizeof(wire_role_of) / sizeof(wire_role_of[0]); i++)
		if (!strcmp(role, process_role__name(wire_role_of[i])))
			return s->wire_roles & (1u << i);
	return false;
}

static void probe_hits__configure(struct capture_bpf *skel, bool wire)
{
	const char *v = getenv("BINDTRACE_PROBE_HITS");
	const char *r = getenv("BINDTRACE_READ_RET_ONLY");

	/* Not the default: see read_ret_only in capture.bpf.c. */
	skel->rodata->read_ret_only = r && *r && strcmp(r, "0") != 0;

	skel->rodata->count_probe_hits = v && *v && strcmp(v, "0") != 0;
	v = getenv("BINDTRACE_TLS_KEYS");
	skel->rodata->harvest_tls_keys = v && *v && strcmp(v, "0") != 0;
	/* Writes from the wire (the scheduler's unless BINDTRACE_TLS_WIRE says otherwise: targets.c's
	 * target__wire) and BINDTRACE_TLS_DECRYPT=1: the TARGET_TLS_WIRE processes' connection
	 * state read and their keyed connections' write(2)s copied (see tlswire.h). */
	skel->rodata->copy_tls_wire = env_on("BINDTRACE_TLS_DECRYPT") || wire;
}

bool session__decrypts(const struct session *s)
{
	return s->decrypt;
}

bool session__wire_delivers(const struct session *s)
{
	return s->wire_delivers;
}

int session__conn_flags(const struct session *s, pid_t pid, uint64_t ino, uint32_t *flags,
			uint64_t *written)
{
	struct conn_key key = { .tgid = (__u32)pid, .ino = ino };
	struct conn_state st;

	if (bpf_map__lookup_elem(s->skel->maps.conns, &key, sizeof(key), &st, sizeof(st), 0))
		return -errno;
	*flags = st.flags;
	*written = st.offset[DIR_OUT];
	return 0;
}

int session__wire_pending_set(struct session *s, pid_t pid, uint64_t ino, uint64_t tls_conn)
{
	struct conn_key key = { .tgid = (__u32)pid, .ino = ino };
	__u64 value = tls_conn;

	if (bpf_map__update_elem(s->skel->maps.wire_pending, &key, sizeof(key), &value,
				 sizeof(value), BPF_ANY))
		return -errno;
	return 0;
}

bool session__wire_pending(const struct session *s, pid_t pid, uint64_t ino)
{
	struct conn_key key = { .tgid = (__u32)pid, .ino = ino };
	__u64 value;

	return bpf_map__lookup_elem(s->skel->maps.wire_pending, &key, sizeof(key), &value,
				    sizeof(value), 0) == 0;
}

uint64_t session__wire_unkeyed(const struct session *s, pid_t pid)
{
	__u32 key = (__u32)pid;
	__u64 n = 0;

	if (bpf_map__lookup_elem(s->skel->maps.wire_unkeyed, &key, sizeof(key), &n, sizeof(n), 0))
		return 0;
	return n;
}

bool session__harvests_tls_keys(const struct session *s)
{
	return s->skel->rodata->harvest_tls_keys;
}

int session__set_tls_layout(struct session *s, pid_t pid, const struct tls_layout *layout)
{
	__u32 key = (__u32)pid;

	return bpf_map__update_elem(s->skel->maps.tls_layouts, &key, sizeof(key), layout,
				    sizeof(*layout), BPF_ANY);
}

void session__print_tls_keys(const struct session *s, FILE *out)
{
	if (s->tls_wire && s->wire_targets) {
		fprintf(out,
			"bindtrace: TLS 1.3 application secrets from setTrafficSecret: %llu, %llu "
			"refused\n",
			(unsigned long long)s->secret_probe_keys,
			(unsigned long long)s->secret_probe_refused);
		tlswire__print(s->tls_wire, out);
	}
	if (!s->skel->rodata->harvest_tls_keys)
		return;
	if (!s->n_tls_keys)
		fprintf(out, "bindtrace: TLS 1.3 state read (BINDTRACE_TLS_KEYS): no connection\n");
	else
		fprintf(
		    out,
		    "bindtrace: TLS 1.3 state read (BINDTRACE_TLS_KEYS): %llu connections whose "
		    "two ends were both read hold the same secrets crosswise\n",
		    (unsigned long long)s->tls_pairs);
	for (size_t i = 0; i < s->n_tls_keys; i++) {
		const struct tls_keys_count *c = &s->tls_keys[i];

		fprintf(out,
			"bindtrace: TLS 1.3 state read (BINDTRACE_TLS_KEYS): pid %d (%s): %llu "
			"connections, %llu valid%s%s\n",
			c->pid, c->comm, (unsigned long long)c->conns, (unsigned long long)c->valid,
			c->refused[0] ? "; the first refused: " : "", c->refused);
	}
}

void session__print_probe_hits(struct session *s, FILE *out)
{
	struct capture_bpf *skel = s->skel;
	struct probe_hit_key key, next, *prev = NULL;
	struct probe_hit_stats v;
	int fd = bpf_map__fd(skel->maps.probe_hits);

	if (!skel->rodata->count_probe_hits)
		return;
	fprintf(out, "%-8s %-16s %-15s %12s %12s %14s\n", "PID", "COMM", "PROBE", "HITS", "RECORDS",
		"RB_BYTES");
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		char comm[32] = "(others)", path[64];
		FILE *f;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) || key.probe >= PROBE_MAX)
			continue;
		if (key.tgid) {
			snprintf(path, sizeof(path), "/proc/%u/comm", key.tgid);
			f = fopen(path, "r");
			if (!f || !fgets(comm, sizeof(comm), f))
				snprintf(comm, sizeof(comm), "?");
			comm[strcspn(comm, "\n")] = '\0';
			if (f)
				fclose(f);
		}
		fprintf(out, "%-8u %-16s %-15s %12llu %12llu %14llu\n", key.tgid, comm,
			probe_names[key.probe], (unsigned long long)v.hits,
			(unsigned long long)v.events, (unsigned long long)v.bytes);
	}
}

static int attach_tracepoints(struct session *s)
{
	struct bpf_program *prog;
	size_t n = 0;

	bpf_object__for_each_program (prog, s->skel->obj)
		n += bpf_program__type(prog) == BPF_PROG_TYPE_TRACEPOINT;
	s->tracepoints = calloc(n ? n : 1, sizeof(*s->tracepoints));
	if (!s->tracepoints) {
		fprintf(stderr, "%s: out of memory\n", s->opt.name);
		return -ENOMEM;
	}
	bpf_object__for_each_program (prog, s->skel->obj) {
		struct bpf_link *link;

		if (bpf_program__type(prog) != BPF_PROG_TYPE_TRACEPOINT)
			continue;
		link = bpf_program__attach(prog);
		if (!link) {
			int err = -errno;

			fprintf(stderr, "%s: attach %s: %s\n", s->opt.name,
				bpf_program__section_name(prog), strerror(-err));
			return err;
		}
		s->tracepoints[s->n_tracepoints++] = link;
	}
	return 0;
}

/* A record of a keyed connection as its Write (BINDTRACE_TLS_WIRE=1). */
static void deliver_wire(void *ctx, const struct data_event *e)
{
	struct session *s = ctx;

	if (s->h.data)
		s->h.data(s->h.ctx, e);
}

static int load(struct session *s)
{
	int err;

	err = wire_roles_parse(s->opt.name, &s->wire_roles, &s->wire_asked);
	if (err)
		return err;
	s->skel = capture_bpf__open();
	if (!s->skel) {
		fprintf(stderr, "%s: open BPF object: %s\n", s->opt.name, strerror(errno));
		return -errno;
	}
	bpf_map__set_max_entries(s->skel->maps.events, (__u32)s->opt.ringbuf_bytes);
	s->skel->rodata->wake_bytes = s->opt.ringbuf_bytes / 8;
	s->skel->rodata->uprobe_any_pid = s->opt.uprobe_any_pid;
	s->skel->rodata->capture_syscalls = !s->opt.no_syscall_data;
	probe_hits__configure(s->skel, s->wire_roles != 0);
	if (s->skel->rodata->copy_tls_wire) {
		/* Measuring (every target's write(2)s compared with its Write probe) delivers
		 * nothing: the probes stay. */
		s->decrypt = env_on("BINDTRACE_TLS_DECRYPT");
		s->wire_delivers = !s->decrypt && s->wire_roles;
		s->tls_wire = tlswire__new(s->wire_delivers ? deliver_wire : NULL, s, s->decrypt);
		if (!s->tls_wire) {
			fprintf(stderr, "%s: out of memory\n", s->opt.name);
			return -ENOMEM;
		}
	}
	tls_programs__prepare(s->skel);
	err = capture_bpf__load(s->skel);
	if (err)
		fprintf(stderr, "%s: load BPF programs: %s (see bindtrace --check)\n", s->opt.name,
			strerror(-err));
	return err;
}

struct session *session__open(const struct session_options *opt)
{
	struct session *s = calloc(1, sizeof(*s));
	const char *tracefs;
	uint64_t wall, cpu;
	bool mounted;
	int err;

	if (!s) {
		fprintf(stderr, "%s: out of memory\n", opt->name);
		return NULL;
	}
	s->opt = *opt;
	err = util__ensure_tracefs(&tracefs, &mounted);
	if (err) {
		fprintf(stderr, "%s: tracefs: %s (run as root; see bindtrace --check)\n", opt->name,
			strerror(-err));
		goto fail;
	}
	wall = util__monotonic_ns();
	cpu = util__cpu_ns();
	if (load(s))
		goto fail;
	if (verbose)
		fprintf(stderr,
			"%s: start: BPF object opened and loaded in %.1f ms (CPU %.1f ms)\n",
			opt->name, (double)(util__monotonic_ns() - wall) / 1e6,
			(double)(util__cpu_ns() - cpu) / 1e6);
	if (attach_tracepoints(s))
		goto fail;
	s->ring = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
	if (!s->ring) {
		fprintf(stderr, "%s: ring buffer: %s\n", opt->name, strerror(errno));
		goto fail;
	}
	/* The consumer page, then the producer's: the kernel maps both read-only to anyone. */
	s->page_size = (size_t)sysconf(_SC_PAGESIZE);
	s->positions = mmap(NULL, 2 * s->page_size, PROT_READ, MAP_SHARED,
			    bpf_map__fd(s->skel->maps.events), 0);
	if (s->positions == MAP_FAILED) {
		fprintf(stderr, "%s: ring buffer positions: %s\n", opt->name, strerror(errno));
		s->positions = NULL;
		goto fail;
	}
	return s;
fail:
	session__close(s);
	return NULL;
}

struct capture_bpf *session__bpf(struct session *s)
{
	return s->skel;
}

/* The BPF target_table again from s->fast. Entries are added at the end and a removed one is
 * replaced by the last, so a program reading it while it is rewritten (a plain copy) can miss at
 * most the process being added or removed. */
static int fast_targets__store(struct session *s)
{
	__u32 zero = 0;

	return bpf_map__update_elem(s->skel->maps.target_table, &zero, sizeof(zero), &s->fast,
				    sizeof(s->fast), BPF_ANY);
}

/* After the targets hash changed with more targets than the table holds: the table from it. */
static int fast_targets__rebuild(struct session *s)
{
	struct target_table t = { 0 };
	__u32 key, next, n = 0;
	void *prev = NULL;
	__u8 bits, one;

	while (!bpf_map__get_next_key(s->skel->maps.targets, prev, &next, sizeof(next))) {
		key = next;
		prev = &key;
		if (bpf_map__lookup_elem(s->skel->maps.targets, &key, sizeof(key), &bits,
					 sizeof(bits), 0))
			continue;
		if (!bpf_map__lookup_elem(s->skel->maps.fsync_targets, &key, sizeof(key), &one,
					  sizeof(one), 0))
			bits |= TARGET_FSYNC;
		if (n < FAST_TARGETS) {
			t.tgid[n] = key;
			t.bits[n] = bits;
		}
		n++;
	}
	t.n = n < FAST_TARGETS ? n : FAST_TARGETS;
	t.overflow = n > FAST_TARGETS;
	s->fast = t;
	return fast_targets__store(s);
}

int session__add_target_flags(struct session *s, pid_t pid, bool fsync, bool reads_via_syscall,
			      bool wire)
{
	__u32 key = (__u32)pid, i;
	__u8 one = 1, value = TARGET_TRACED | (reads_via_syscall ? TARGET_READS_VIA_SYSCALL : 0) |
			      (wire ? TARGET_TLS_WIRE : 0);
	int err;

	/* The hashes first: a table that overflows sends the programs to them. */
	err = bpf_map__update_elem(s->skel->maps.targets, &key, sizeof(key), &value, sizeof(value),
				   BPF_ANY);
	if (!err && wire)
		s->wire_targets++;
	if (!err && fsync)
		err = bpf_map__update_elem(s->skel->maps.fsync_targets, &key, sizeof(key), &one,
					   sizeof(one), BPF_ANY);
	if (err)
		return err;
	if (fsync)
		value |= TARGET_FSYNC;
	for (i = 0; i < s->fast.n; i++)
		if (s->fast.tgid[i] == key)
			break;
	if (i < s->fast.n) {
		s->fast.bits[i] = value;
	} else if (s->fast.n < FAST_TARGETS && !s->fast.overflow) {
		s->fast.tgid[s->fast.n] = key;
		s->fast.bits[s->fast.n] = value;
		s->fast.n++;
	} else {
		s->fast.overflow = 1;
	}
	return fast_targets__store(s);
}

int session__add_target(struct session *s, pid_t pid, bool fsync)
{
	return session__add_target_flags(s, pid, fsync, false, false);
}

void session__remove_target(struct session *s, pid_t pid)
{
	__u32 key = (__u32)pid, i;

	for (i = 0; i < s->fast.n; i++)
		if (s->fast.tgid[i] == key)
			break;
	if (i < s->fast.n) {
		s->fast.n--;
		s->fast.tgid[i] = s->fast.tgid[s->fast.n];
		s->fast.bits[i] = s->fast.bits[s->fast.n];
		s->fast.tgid[s->fast.n] = 0;
		s->fast.bits[s->fast.n] = 0;
		fast_targets__store(s);
	}
	bpf_map__delete_elem(s->skel->maps.targets, &key, sizeof(key), 0);
	bpf_map__delete_elem(s->skel->maps.fsync_targets, &key, sizeof(key), 0);
	bpf_map__delete_elem(s->skel->maps.tls_layouts, &key, sizeof(key), 0);
	if (s->fast.overflow)
		fast_targets__rebuild(s);
}

/* One read: up to SESSION_READ_BATCH records, waiting up to timeout_ms for the first. 0 or
 * -errno; *behind when it stopped at the batch's end (more may be waiting). */
static int read_batch(struct session *s, int timeout_ms, bool *behind)
{
	uint64_t waiting = session__ring_waiting(s);
	int err;

	if (waiting > s->ring_peak)
		s->ring_peak = waiting;
	s->batch_left = SESSION_READ_BATCH;
	s->newest_ns = 0;
	err = ring_buffer__poll(s->ring, timeout_ms);
	if (err >= 0)
		err = ring_buffer__consume(s->ring); /* what came without a wakeup */
	*behind = err == SESSION_READ_BREAK;
	return *behind || err >= 0 || err == -EINTR ? 0 : err;
}

/* The ring's producer position (how far records were reserved) or consumer position (how far
 * they were read); 0 when the positions are not mapped. */
static unsigned long ring_position(const struct session *s, bool producer)
{
	if (!s->positions)
		return 0;
	return __atomic_load_n(&s->positions[producer ? s->page_size / sizeof(*s->positions) : 0],
			       __ATOMIC_ACQUIRE);
}

/* The step between reads, told how far the records go: now when the read emptied the ring, else
 * the newest record's time (what has been read of a backlog). */
static void between(struct session *s, uint64_t now, bool behind)
{
	s->lag_ns = s->newest_ns && s->newest_ns < now ? now - s->newest_ns : 0;
	if (s->h.between)
		s->h.between(s->h.between_ctx, now,
			     behind && s->newest_ns < now ? s->newest_ns : now);
}

int session__run(struct session *s, const struct session_handlers *handlers, uint64_t deadline_ns)
{
	bool behind = false;
	int err = 0;

	s->h = *handlers;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (s->h.hangup)
		signal(SIGHUP, on_signal);
	while (!stopping) {
		int wait_ms = s->poll_fast ? SESSION_POLL_FAST_MS : SESSION_POLL_MS;
		uint64_t now;

		err = read_batch(s, behind ? 0 : wait_ms, &behind);
		if (err) {
			fprintf(stderr, "%s: ring buffer: %s\n", s->opt.name, strerror(-err));
			return err;
		}
		now = util__monotonic_ns();
		between(s, now, behind);
		atomic_store_explicit(&s->step_ns, util__monotonic_ns(), memory_order_relaxed);
		if (hangup && s->h.hangup) {
			hangup = 0;
			s->h.hangup(s->h.between_ctx);
		}
		/* The deadline stops it as a signal would (the idle reader's watchdog then puts the
		 * threads back at their priority for the exit). */
		if (deadline_ns && now >= deadline_ns)
			stopping = 1;
	}
	/* What is left: the records in the ring when the loop ended, not those that go on coming
	 * (on a busy node they can come as fast as a slow reader reads them, and it never left);
	 * the step between reads only while a backlog is read (the correlator's clock), as in the
	 * loop. */
	unsigned long upto = ring_position(s, true);
	bool bounded = s->positions != NULL;
	while (!read_batch(s, 0, &behind) && behind && (!bounded || ring_position(s, false) < upto))
		between(s, util__monotonic_ns(), behind);
	return 0;
}

uint64_t session__ring_waiting(const struct session *s)
{
	unsigned long consumer = ring_position(s, false);
	unsigned long producer = ring_position(s, true);

	return producer > consumer ? producer - consumer : 0;
}

int session__ring_fd(const struct session *s)
{
	return bpf_map__fd(s->skel->maps.events);
}

uint64_t session__ring_size(const struct session *s)
{
	return s->opt.ringbuf_bytes;
}

uint64_t session__read_lag(const struct session *s)
{
	return s->lag_ns;
}

uint64_t session__ring_peak(const struct session *s)
{
	return s->ring_peak;
}

uint64_t session__last_step_ns(const struct session *s)
{
	return atomic_load_explicit(&s->step_ns, memory_order_relaxed);
}

void session__stop(struct session *s)
{
	(void)s;
	stopping = 1;
}

void session__poll_fast(struct session *s, bool fast)
{
	s->poll_fast = fast;
}

void session__catch_signals(void)
{
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
}

bool session__stop_requested(void)
{
	return stopping;
}

uint64_t session__events(const struct session *s)
{
	return s->events;
}

uint64_t session__counter(struct session *s, __u32 k)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	__u64 values[256];
	uint64_t sum = 0;

	if (ncpu <= 0 || ncpu > 256 ||
	    bpf_map__lookup_elem(s->skel->maps.counters, &k, sizeof(k), values,
				 sizeof(*values) * (size_t)ncpu, 0))
		return 0;
	for (i = 0; i < ncpu; i++)
		sum += values[i];
	return sum;
}

void session__counters(struct session *s, uint64_t out[COUNTER_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), i;
	__u64 *values;
	__u32 k;

	memset(out, 0, sizeof(uint64_t) * COUNTER_MAX);
	if (ncpu <= 0)
		return;
	values = calloc((size_t)ncpu, sizeof(*values));
	if (!values)
		return;
	for (k = 0; k < COUNTER_MAX; k++) {
		if (bpf_map__lookup_elem(s->skel->maps.counters, &k, sizeof(k), values,
					 sizeof(*values) * (size_t)ncpu, 0))
			continue;
		for (i = 0; i < ncpu; i++)
			out[k] += values[i];
	}
	free(values);
}

void session__close_links(struct session *s, struct bpf_link **links, size_t n, const int *fds,
			  size_t n_fds)
{
	struct bpf_link **all = calloc(n + s->n_tracepoints + 1, sizeof(*all));

	if (!all) {
		links__close_all(links, n, fds, n_fds);
		return; /* the tracepoints are closed by session__close */
	}
	if (n)
		memcpy(all, links, n * sizeof(*all));
	if (s->n_tracepoints)
		memcpy(all + n, s->tracepoints, s->n_tracepoints * sizeof(*all));
	links__close_all_detached(all, n + s->n_tracepoints, fds, n_fds);
	free(all);
	s->n_tracepoints = 0;
}

void session__close(struct session *s)
{
	if (!s)
		return;
	ring_buffer__free(s->ring);
	if (s->positions)
		munmap((void *)s->positions, 2 * s->page_size);
	links__close_all(s->tracepoints, s->n_tracepoints, NULL, 0);
	free(s->tracepoints);
	capture_bpf__destroy(s->skel);
	free(s->tls_seen);
	tlswire__free(s->tls_wire);
	free(s);
}
