/* Reads of processes whose crypto/tls Reads are not probed, made from their peers' Writes and
 * timed by their own read(2)s (see peerfeed.h). */
#include <stdlib.h>
#include <string.h>

#include "peerfeed.h"
#include "util.h"

#define SLOTS 4096		 /* connection directions at once; a power of two */
#define TLS13_RECORD_OVERHEAD 22 /* header 5, inner content type 1, AEAD tag 16 */
#define TLS_MAX_PLAINTEXT 16384
#define IDLE_NS (600ull * 1000000000ull)
/* A connection whose reader has not read yet (older than the tracer, idle until now, or its
 * reader stopped) keeps this much of its writer's Writes for it. */
#define UNCONFIRMED_MAX_BYTES (4u << 20)

enum slot_state { SLOT_FREE, SLOT_USED, SLOT_DELETED };

struct pending {
	struct pending *next;
	uint32_t needed_end; /* TCP sequence number after the Write's last byte on the wire */
	uint64_t ts_ns;
	uint64_t gap_before; /* bytes of the writer's stream lost just before it (drops) */
	struct data_event e; /* followed by its bytes */
};

/* One direction of a connection, named by the writer's addresses. */
struct conn_key {
	uint16_t family, src_port, dst_port, pad;
	uint8_t src[16], dst[16];
};

struct slot {
	struct conn_key key;
	enum slot_state state;
	bool confirmed;	  /* its reader has read through this path */
	bool no_reader;	  /* its reader is known not to (peer_feed__no_reader) */
	bool reader_gone; /* its reader's process exited (peer_feed__reader_gone) */
	struct pending *head, *tail;
	uint64_t queued_bytes;
	uint64_t last_ns;      /* of the last read or Write */
	uint32_t write_seq;    /* the last Write's first sequence number */
	uint64_t write_offset; /* and its plaintext offset in the writer's stream */
	uint64_t reader_conn;
	uint32_t reader_pid;	/* of its read(2)s */
	uint64_t reader_offset; /* of the next delivered byte in the reader's stream */
	/* The writer's stream: where its next event should begin (writer_next), so that an event
	 * lost to drops before a queued Write is a gap in the reader's stream too. */
	bool writer_known;
	uint32_t writer_pid;
	uint64_t writer_conn, writer_next;
	uint64_t gap_pending; /* lost before the next queued Write */
	bool read_known;      /* read_seq and read_ns hold the last read(2) seen */
	uint32_t read_seq;    /* the sequence number it reached (copied_seq) */
	uint64_t read_ns;
	uint32_t live_index; /* its place in peer_feed.live while SLOT_USED */
};

#define COMPARE_PENDING 256
#define COMPARE_MAX (1 << 16)

struct compare_entry {
	uint32_t pid;
	uint64_t conn, ts;
	uint8_t tail[16];
	uint32_t n;
};

struct compare {
	struct compare_entry pending[COMPARE_PENDING];
	unsigned next;
	int64_t deltas[COMPARE_MAX];
	size_t count;
};

struct peer_feed {
	struct slot slots[SLOTS];
	/* The slots in use, so that expiring (every tick) visits tens of connections rather than
	 * every slot of the table (11% of an idle tracer's CPU went to that scan). */
	uint32_t live[SLOTS];
	uint32_t n_live;
	struct peer_feed_stats stats;
	struct compare *compare;
};

bool peer_feed__reads_via_syscall(enum process_role role, bool have_scheduler, bool have_apiserver,
				  bool have_etcd, bool probe_reads)
{
	switch (role) {
	case ROLE_SCHEDULER:
	case ROLE_ETCD:
		return have_apiserver;
	case ROLE_APISERVER:
		return have_scheduler && have_etcd && !probe_reads;
	default:
		return false;
	}
}

static int seq_geq(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

static uint64_t key_hash(const struct conn_key *k)
{
	return util__fnv1a(UTIL_FNV_START, k, sizeof(*k));
}

/* Open addressing with tombstones (SLOT_DELETED), so that forgetting a connection keeps the
 * others findable. */
static struct slot *slot_find(struct peer_feed *pf, const struct conn_key *k, bool create)
{
	uint64_t h = key_hash(k);
	struct slot *reuse = NULL;
	size_t i;

	for (i = 0; i < SLOTS; i++) {
		struct slot *s = &pf->slots[(h + i) & (SLOTS - 1)];

		if (s->state == SLOT_USED && memcmp(&s->key, k, sizeof(*k)) == 0)
			return s;
		if (s->state == SLOT_DELETED && !reuse)
			reuse = s;
		if (s->state == SLOT_FREE) {
			if (!reuse)
				reuse = s;
			break;
		}
	}
	if (!create)
		return NULL;
	if (!reuse) {
		pf->stats.table_full++;
		return NULL;
	}
	memset(reuse, 0, sizeof(*reuse));
	reuse->key = *k;
	reuse->state = SLOT_USED;
	reuse->live_index = pf->n_live;
	pf->live[pf->n_live++] = (uint32_t)(reuse - pf->slots);
	return reuse;
}

static void slot_delete(struct peer_feed *pf, struct slot *s)
{
	uint32_t last = pf->live[--pf->n_live];

	pf->live[s->live_index] = last;
	pf->slots[last].live_index = s->live_index;
	s->state = SLOT_DELETED;
}

struct peer_feed *peer_feed__new(bool compare)
{
	struct peer_feed *pf = calloc(1, sizeof(*pf));

	if (pf && compare) {
		pf->compare = calloc(1, sizeof(*pf->compare));
		if (!pf->compare) {
			free(pf);
			return NULL;
		}
	}
	return pf;
}

static void compare_would_deliver(struct compare *c, const struct data_event *e)
{
	struct compare_entry *x = &c->pending[c->next++ % COMPARE_PENDING];

	x->pid = e->hdr.pid;
	x->conn = e->conn;
	x->ts = e->hdr.ts_ns;
	x->n = e->len < 16 ? e->len : 16;
	memcpy(x->tail, e->data + e->len - x->n, x->n);
}

void peer_feed__probed_read(struct peer_feed *pf, const struct data_event *e)
{
	struct compare *c = pf ? pf->compare : NULL;
	unsigned i;

	if (!c || e->dir != DIR_IN || e->source != SOURCE_TLS || !e->len)
		return;
	for (i = 0; i < COMPARE_PENDING; i++) {
		struct compare_entry *x = &c->pending[i];

		if (x->ts && x->pid == e->hdr.pid && x->conn == e->conn && x->n <= e->len &&
		    memcmp(x->tail, e->data + e->len - x->n, x->n) == 0) {
			if (c->count < COMPARE_MAX)
				c->deltas[c->count++] = (int64_t)e->hdr.ts_ns - (int64_t)x->ts;
			x->ts = 0;
			return;
		}
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

void peer_feed__compare_print(const struct peer_feed *pf, FILE *out)
{
	struct compare *c = pf ? pf->compare : NULL;
	size_t n;

	if (!c)
		return;
	n = c->count;
	if (!n) {
		fprintf(out, "bindtrace: read(2) vs Read RET: nothing matched\n");
		return;
	}
	qsort(c->deltas, n, sizeof(c->deltas[0]), cmp_i64);
	fprintf(out,
		"bindtrace: Read RET minus the read(2) that returned the last byte, over %zu "
		"Writes: min %.1f us, p10 %.1f, p50 %.1f, p90 %.1f, p99 %.1f, max %.1f\n",
		n, c->deltas[0] / 1e3, c->deltas[n / 10] / 1e3, c->deltas[n / 2] / 1e3,
		c->deltas[n * 9 / 10] / 1e3, c->deltas[n * 99 / 100] / 1e3, c->deltas[n - 1] / 1e3);
}

/* Drops the oldest queued Write: the reader's stream moves past its bytes (a gap). */
static void drop_head(struct peer_feed *pf, struct slot *s)
{
	struct pending *p = s->head;

	s->head = p->next;
	if (!s->head)
		s->tail = NULL;
	s->queued_bytes -= p->e.len;
	s->reader_offset += p->gap_before + p->e.len;
	pf->stats.dropped_bytes += p->e.len;
	free(p);
}

void peer_feed__free(struct peer_feed *pf)
{
	size_t i;

	if (!pf)
		return;
	for (i = 0; i < SLOTS; i++)
		while (pf->slots[i].head)
			drop_head(pf, &pf->slots[i]);
	free(pf->compare);
	free(pf);
}

static void key_of_write(struct conn_key *k, const struct data_event *e)
{
	memset(k, 0, sizeof(*k));
	k->family = e->family;
	k->src_port = e->lport;
	k->dst_port = e->rport;
	memcpy(k->src, e->laddr, sizeof(k->src));
	memcpy(k->dst, e->raddr, sizeof(k->dst));
}

static void slot_no_reader(struct peer_feed *pf, struct slot *s);

/* A slot whose reader exited taken by a new connection on the same addresses: everything but
 * its place in the table starts again (its queue was freed when the reader went). */
static void slot_renew(struct slot *s)
{
	struct slot fresh = {
		.key = s->key, .state = s->state, .last_ns = s->last_ns, .live_index = s->live_index
	};

	*s = fresh;
}

/* A reader said not to read this way does after all: its Writes were not kept, so its stream
 * starts at the next one, as one met mid-way. */
static void slot_reader_came(struct peer_feed *pf, struct slot *s)
{
	s->no_reader = false;
	s->writer_known = false;
	pf->stats.reader_came++;
}

void peer_feed__written(struct peer_feed *pf, const struct data_event *e, bool patient)
{
	uint64_t before, upto, overhead = 0;
	struct conn_key k;
	struct pending *p;
	struct slot *s;

	if (!(e->flags & DATA_HAS_TCP_SEQ) || e->dir != DIR_OUT)
		return;
	key_of_write(&k, e);
	/* A local reader may read through this path without having read yet: keep some for it. */
	s = slot_find(pf, &k, endpoint__same_host(e->family, e->laddr, e->raddr));
	if (!s) {
		pf->stats.unread++;
		return;
	}
	s->last_ns = e->hdr.ts_ns;
	/* The same addresses on another socket of the writer: a new connection (the writer's port
	 * used again after the reader exited: an apiserver reconnecting to a restarted etcd), whose
	 * reader is a new process. */
	if (s->reader_gone && s->writer_known && s->writer_conn != e->conn)
		slot_renew(s);
	if (s->reader_gone) {
		pf->stats.reader_exited++;
		pf->stats.reader_exited_bytes += e->len;
		return;
	}
	if (s->no_reader) {
		pf->stats.no_reader++;
		pf->stats.no_reader_bytes += e->len;
		return;
	}
	/* The writer's events follow its stream offsets; one lost to ring-buffer drops (or cut
	 * short) leaves a hole the reader's stream must show as a gap: without it the reader's
	 * decoder took the bytes after it for the bytes it lost (a Binding read with another pod's
	 * HPACK-indexed :path opened a second timeline for that pod). */
	if (!s->writer_known || s->writer_conn != e->conn || s->writer_pid != e->hdr.pid) {
		s->writer_known = true;
		s->writer_conn = e->conn;
		s->writer_pid = e->hdr.pid;
		s->writer_next = e->offset;
	}
	if (e->offset > s->writer_next)
		s->gap_pending += e->offset - s->writer_next;
	if (e->offset + e->len > s->writer_next)
		s->writer_next = e->offset + e->len;
	/* A Write larger than one event comes as several with the same starting sequence. */
	if (e->tcp_seq != s->write_seq || e->offset < s->write_offset) {
		s->write_seq = e->tcp_seq;
		s->write_offset = e->offset;
	}
	if (!s->confirmed && !patient && s->queued_bytes + e->len > PEER_FEED_BRIEF_BYTES) {
		slot_no_reader(pf, s);
		pf->stats.no_reader++;
		pf->stats.no_reader_bytes += e->len;
		return;
	}
	while (s->head && s->queued_bytes + e->len >
			      (s->confirmed ? PEER_FEED_MAX_QUEUED_BYTES : UNCONFIRMED_MAX_BYTES)) {
		drop_head(pf, s);
		pf->stats.overflow++;
	}
	p = malloc(sizeof(*p) + e->len);
	if (!p) {
		s->gap_pending += e->len; /* a gap rather than a silent loss */
		pf->stats.overflow++;
		pf->stats.dropped_bytes += e->len;
		return;
	}
	before = e->offset - s->write_offset;
	upto = before + e->len;
	if (e->source == SOURCE_TLS)
		overhead =
		    (upto + TLS_MAX_PLAINTEXT - 1) / TLS_MAX_PLAINTEXT * TLS13_RECORD_OVERHEAD;
	p->needed_end = e->tcp_seq + (uint32_t)(upto + overhead);
	p->ts_ns = e->hdr.ts_ns;
	p->gap_before = s->gap_pending;
	s->gap_pending = 0;
	p->next = NULL;
	memcpy(&p->e, e, sizeof(*e) + e->len);
	if (s->tail)
		s->tail->next = p;
	else
		s->head = p;
	s->tail = p;
	s->queued_bytes += e->len;
	pf->stats.queued++;
}

void peer_feed__read(struct peer_feed *pf, const struct sock_read_event *r,
		     peer_feed_deliver_fn deliver, void *ctx)
{
	/* The reader's remote end wrote: name the direction by the writer's addresses. */
	struct conn_key k = { .family = r->family, .src_port = r->rport, .dst_port = r->lport };
	uint32_t start = r->seq_end - r->len;
	bool lost;
	struct slot *s;

	pf->stats.reads++;
	memcpy(k.src, r->raddr, sizeof(k.src));
	memcpy(k.dst, r->laddr, sizeof(k.dst));
	s = slot_find(pf, &k, true);
	if (!s)
		return;
	s->last_ns = r->hdr.ts_ns;
	s->confirmed = true;
	if (s->no_reader)
		slot_reader_came(pf, s);
	s->reader_pid = r->hdr.pid;
	if (!s->reader_conn) {
		s->reader_conn = r->conn;
	} else if (s->reader_conn != r->conn) {
		/* A new socket on the same addresses (a port reused): a new stream. */
		while (s->head)
			drop_head(pf, s);
		s->reader_conn = r->conn;
		s->reader_offset = 0;
		s->read_known = false;
	}
	/* A read(2) begins where the last one ended: when it does not, the record of one between
	 * them was lost (ring-buffer drops), and what that one reached was read before this one. */
	lost = r->len && s->read_known && start != s->read_seq && seq_geq(start, s->read_seq);
	while (s->head && seq_geq(r->seq_end, s->head->needed_end)) {
		struct pending *p = s->head;
		struct data_event *e = &p->e;
		uint64_t ts = r->hdr.ts_ns;

		s->head = p->next;
		if (!s->head)
			s->tail = NULL;
		s->queued_bytes -= e->len;
		if (lost && seq_geq(start, p->needed_end)) {
			/* Read by the lost read(2): after its Write and after the last read(2) seen;
			 * timed at the earliest of those, it stays before whatever answered it
			 * (taken at this read(2)'s time, a Binding came after its own response and
			 * opened a second timeline). */
			ts = p->ts_ns > s->read_ns ? p->ts_ns : s->read_ns;
			pf->stats.retimed++;
		}
		e->hdr = r->hdr;
		e->hdr.ts_ns = ts;
		e->hdr.type = EVENT_DATA;
		e->conn = r->conn;
		s->reader_offset += p->gap_before;
		e->offset = s->reader_offset;
		s->reader_offset += e->len;
		e->fd = r->fd;
		e->dir = DIR_IN;
		e->family = r->family;
		e->lport = r->lport;
		e->rport = r->rport;
		memcpy(e->laddr, r->laddr, sizeof(e->laddr));
		memcpy(e->raddr, r->raddr, sizeof(e->raddr));
		e->flags = 0;
		e->tcp_seq = 0;
		if (pf->compare)
			compare_would_deliver(pf->compare, e);
		else
			deliver(ctx, e);
		free(p);
		pf->stats.delivered++;
	}
	s->read_known = true;
	s->read_seq = r->seq_end;
	s->read_ns = r->hdr.ts_ns;
}

uint64_t peer_feed__expire(struct peer_feed *pf, uint64_t now)
{
	uint64_t dropped = 0;
	uint32_t i;

	/* Backwards: deleting moves the last live slot into the place of the one deleted. */
	for (i = pf->n_live; i-- > 0;) {
		struct slot *s = &pf->slots[pf->live[i]];

		while (s->head && s->head->ts_ns + PEER_FEED_MAX_AGE_NS < now) {
			drop_head(pf, s);
			dropped++;
		}
		if (!s->head && s->last_ns + IDLE_NS < now)
			slot_delete(pf, s);
	}
	pf->stats.expired += dropped;
	return dropped;
}

/* The key of the writer's direction of a connection, named by the writer's two ends. */
static struct conn_key key_of_ends(const struct endpoint *local, const struct endpoint *remote)
{
	struct conn_key k = { .family = local->family,
			      .src_port = local->port,
			      .dst_port = remote->port };

	memcpy(k.src, local->addr, sizeof(k.src));
	memcpy(k.dst, remote->addr, sizeof(k.dst));
	return k;
}

uint64_t peer_feed__no_reader(struct peer_feed *pf, const struct endpoint *local,
			      const struct endpoint *remote)
{
	struct conn_key k = key_of_ends(local, remote);
	uint64_t queued;
	struct slot *s;

	/* A remote one without a slot keeps nothing unless its reader reads this way: no slot. */
	s = slot_find(pf, &k, endpoint__same_host(k.family, k.src, k.dst));
	if (!s || s->confirmed)
		return 0;
	queued = s->queued_bytes;
	slot_no_reader(pf, s);
	return queued;
}

void peer_feed__reader_reads(struct peer_feed *pf, const struct endpoint *local,
			     const struct endpoint *remote)
{
	struct conn_key k = key_of_ends(local, remote);
	struct slot *s;

	s = slot_find(pf, &k, false);
	if (!s || !s->no_reader)
		return;
	slot_reader_came(pf, s);
}

static void slot_no_reader(struct peer_feed *pf, struct slot *s)
{
	s->no_reader = true;
	while (s->head) {
		pf->stats.no_reader++;
		pf->stats.no_reader_bytes += s->head->e.len;
		pf->stats.dropped_bytes -= s->head->e.len; /* not a loss: drop_head counts one */
		drop_head(pf, s);
	}
	s->gap_pending = 0;
}

void peer_feed__reader_gone(struct peer_feed *pf, pid_t pid)
{
	for (uint32_t i = 0; i < pf->n_live; i++) {
		struct slot *s = &pf->slots[pf->live[i]];

		if (!s->confirmed || s->reader_pid != (uint32_t)pid)
			continue;
		s->reader_gone = true;
		while (s->head) {
			pf->stats.reader_exited++;
			pf->stats.reader_exited_bytes += s->head->e.len;
			pf->stats.dropped_bytes -= s->head->e.len; /* not a gap: drop_head counts */
			drop_head(pf, s);
		}
		s->gap_pending = 0;
	}
}

void peer_feed__stats(const struct peer_feed *pf, struct peer_feed_stats *out)
{
	*out = pf->stats;
}

/* One connection with Writes still queued (--verbose at exit): whose, how many, and how far its
 * reader's read(2)s got against what the first one needs. */
static void print_waiting(const struct slot *s, uint64_t n, FILE *out)
{
	struct endpoint src, dst;

	endpoint__set(&src, s->key.family, s->key.src, s->key.src_port);
	endpoint__set(&dst, s->key.family, s->key.dst, s->key.dst_port);
	fprintf(out,
		"bindtrace:   %s -> %s: %llu Writes (%llu bytes) waiting; the first needs the "
		"read(2) to reach %u, ",
		endpoint__str(&src).s, endpoint__str(&dst).s, (unsigned long long)n,
		(unsigned long long)s->queued_bytes, s->head->needed_end);
	if (s->read_known)
		fprintf(out, "the reader (pid %u) reached %u\n", s->reader_pid, s->read_seq);
	else
		fprintf(out, "no read(2) of it seen%s\n", s->no_reader ? " (no reader)" : "");
}

void peer_feed__print(const struct peer_feed *pf, FILE *out)
{
	const struct peer_feed_stats *x = &pf->stats;
	uint64_t waiting = 0, waiting_bytes = 0;
	uint32_t i, conns = 0;

	peer_feed__compare_print(pf, out);
	if (!x->reads)
		return;
	for (i = 0; i < pf->n_live; i++) {
		const struct slot *s = &pf->slots[pf->live[i]];
		const struct pending *p;
		uint64_t n = 0;

		for (p = s->head; p; p = p->next)
			n++;
		if (!n)
			continue;
		waiting += n;
		waiting_bytes += s->queued_bytes;
		if (verbose && conns < 8)
			print_waiting(s, n, out);
		conns++;
	}
	fprintf(
	    out,
	    "bindtrace: reads from the writers: %llu read(2)s, %llu Writes delivered, %llu "
	    "dropped unread (%llu bytes shown as gaps), %llu to readers that exited (%llu bytes "
	    "not read), %llu read by a read(2) whose record was lost (timed by their Write), %llu "
	    "not kept for clients that do not read this way (%llu bytes), %llu still waiting for "
	    "their reader at exit (%llu bytes on %u connections)%s\n",
	    (unsigned long long)x->reads, (unsigned long long)x->delivered,
	    (unsigned long long)(x->expired + x->overflow), (unsigned long long)x->dropped_bytes,
	    (unsigned long long)x->reader_exited, (unsigned long long)x->reader_exited_bytes,
	    (unsigned long long)x->retimed, (unsigned long long)x->no_reader,
	    (unsigned long long)x->no_reader_bytes, (unsigned long long)waiting,
	    (unsigned long long)waiting_bytes, conns,
	    x->table_full ? "; connection table full: some reads not followed" : "");
}
