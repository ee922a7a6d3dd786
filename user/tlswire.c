/* A keyed connection's TLS 1.3 records from its write(2)s: checked against the Write probe's
 * plaintext, delivered in its place. See tlswire.h. */
#include <stdlib.h>
#include <string.h>

#include "tls13.h"
#include "tlswire.h"
#include "util.h"

#define BUCKETS 4096
#define STARTS 256
/* All windows together: a measurement must not take the machine's memory. */
#define WINDOW_BUDGET (256u << 20)

struct window {
	uint8_t *buf;
	size_t cap, len;
	uint64_t start;		 /* probe stream offset of buf[0] */
	uint64_t starts[STARTS]; /* offsets where probe events began, the last STARTS */
	unsigned n_starts;
};

struct check_conn {
	pid_t pid;
	char comm[TASK_COMM_LEN];
	uint64_t conn;
	struct tls13_stream *out;
	uint64_t wire_next; /* the next wire offset expected */
	bool wire_known;
	bool aligned;
	int64_t delta;	      /* probe offset minus decrypted offset, once aligned */
	uint64_t dec_offset;  /* application-data plaintext so far, lost records' too */
	uint64_t next_record; /* wire offset after the last record that opened */
	bool record_known;
	uint64_t last_matched; /* probe offset after the last equal record: where to realign */
	struct window w;
	struct tlswire_stats st; /* this connection's part */
	struct tlswire *owner;
	const struct data_event *wire_ev; /* the wire event being fed */
	/* The TCP sequence number at wire offset seq_at: a write(2) copied as several events gives
	 * each the write's first sequence number (capture.bpf.c emit), so it is taken at the
	 * write's first event and carried on through the others. */
	uint32_t seq_base;
	uint64_t seq_at;
	struct check_conn *next;
};

struct tlswire {
	bool compare; /* keep the Write probe's plaintext and compare the records with it */
	tlswire_deliver_fn deliver;
	void *deliver_ctx;
	struct data_event *out; /* one record's event */
	struct check_conn *buckets[BUCKETS];
	size_t n_conns;
	size_t window_bytes;
	uint64_t table_full; /* connections not followed */
	/* wire bytes of connections without a stream, by pid */
	struct unkeyed {
		pid_t pid;
		char comm[TASK_COMM_LEN];
		uint64_t bytes;
	} unkeyed[64];
	size_t n_unkeyed;
};

static size_t bucket_of(pid_t pid, uint64_t conn)
{
	uint64_t h = conn * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uint32_t)pid;

	return (size_t)((h ^ (h >> 29)) % BUCKETS);
}

static struct check_conn *find(const struct tlswire *c, pid_t pid, uint64_t conn)
{
	struct check_conn *k;

	for (k = c->buckets[bucket_of(pid, conn)]; k; k = k->next)
		if (k->pid == pid && k->conn == conn)
			return k;
	return NULL;
}

struct tlswire *tlswire__new(tlswire_deliver_fn deliver, void *ctx, bool compare)
{
	struct tlswire *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->compare = compare || !deliver;
	c->deliver = deliver;
	c->deliver_ctx = ctx;
	if (deliver) {
		c->out = malloc(sizeof(*c->out) + TLS13_MAX_PLAINTEXT);
		if (!c->out) {
			free(c);
			return NULL;
		}
	}
	return c;
}

void tlswire__free(struct tlswire *c)
{
	if (!c)
		return;
	for (size_t b = 0; b < BUCKETS; b++) {
		struct check_conn *k = c->buckets[b], *next;

		for (; k; k = next) {
			next = k->next;
			tls13_stream__free(k->out);
			free(k->w.buf);
			free(k);
		}
	}
	free(c->out);
	free(c);
}

static uint64_t be64(const uint8_t b[8])
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

void tlswire__key(struct tlswire *c, const struct tls_keys_event *e)
{
	pid_t pid = (pid_t)e->hdr.pid;
	struct check_conn *k = find(c, pid, e->conn);
	struct tls13_stream *out;
	size_t b;

	out = tls13_stream__new(e->cipher_suite, e->secret[1], (size_t)e->secret_len[1],
				be64(e->seq[1]));
	if (!out)
		return;
	/* Read again (its cache entry pushed out): the stream made first goes on, KeyUpdates and
	 * all; the wire copy did not start again. A handshake's application secret (from
	 * setTrafficSecret) replaces one that never opened a record: the state read before it
	 * was the handshake's. */
	if (k) {
		if ((e->flags & TLS_KEYS_OUT_ONLY) && !k->st.records) {
			tls13_stream__free(k->out);
			k->out = out;
		} else {
			tls13_stream__free(out);
		}
		return;
	}
	if (c->n_conns >= TLSWIRE_MAX_CONNS) {
		c->table_full++;
		tls13_stream__free(out);
		return;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		tls13_stream__free(out);
		return;
	}
	k->out = out;
	k->pid = pid;
	k->owner = c;
	k->conn = e->conn;
	util__copy(k->comm, sizeof(k->comm), e->hdr.comm);
	k->st.conns = 1;
	b = bucket_of(pid, e->conn);
	k->next = c->buckets[b];
	c->buckets[b] = k;
	c->n_conns++;
}

/* Room for n more bytes at the window's end, dropping its oldest bytes when it cannot grow. */
static void window_make_room(struct tlswire *c, struct window *w, size_t n)
{
	size_t want = w->len + n, cap = w->cap ? w->cap : 16384, drop;
	uint8_t *grown;

	while (cap < want && cap < TLSWIRE_WINDOW)
		cap *= 2;
	if (cap > TLSWIRE_WINDOW)
		cap = TLSWIRE_WINDOW;
	if (cap > w->cap && c->window_bytes + (cap - w->cap) <= WINDOW_BUDGET) {
		grown = realloc(w->buf, cap);
		if (grown) {
			c->window_bytes += cap - w->cap;
			w->buf = grown;
			w->cap = cap;
		}
	}
	if (want <= w->cap)
		return;
	drop = want - w->cap;
	if (drop > w->len)
		drop = w->len;
	memmove(w->buf, w->buf + drop, w->len - drop);
	w->len -= drop;
	w->start += drop;
}

bool tlswire__plain(struct tlswire *c, const struct data_event *e)
{
	struct check_conn *k = find(c, (pid_t)e->hdr.pid, e->conn);
	struct window *w;
	const uint8_t *data = e->data;
	size_t n = e->len;
	uint64_t at = e->offset;

	if (!k)
		return false;
	if (!n || !c->compare)
		return true;
	w = &k->w;
	if (at > w->start + w->len || at + n < w->start) {
		w->start = at; /* a gap: the window starts again */
		w->len = 0;
	} else if (at < w->start + w->len) {
		size_t seen = (size_t)(w->start + w->len - at); /* already held */

		if (seen >= n)
			return true;
		data += seen;
		n -= seen;
		at += seen;
	}
	w->starts[w->n_starts++ % STARTS] = e->offset;
	window_make_room(c, w, n);
	if (n > w->cap) { /* more than the window holds: its end */
		data += n - w->cap;
		at += n - w->cap;
		n = w->cap;
		w->start = at;
		w->len = 0;
	}
	if (!w->buf)
		return true;
	memcpy(w->buf + w->len, data, n);
	w->len += n;
	return true;
}

/* The probe offset where a record equal to plain begins: a Write's start, not before after.
 * -1 when none of those held has its bytes. */
static int64_t align(const struct window *w, const uint8_t *plain, size_t len, uint64_t after)
{
	int64_t best = -1;
	unsigned n = w->n_starts < STARTS ? w->n_starts : STARTS;

	for (unsigned i = 0; i < n; i++) {
		uint64_t s = w->starts[i];

		if (s < w->start || s < after || s + len > w->start + w->len)
			continue;
		if (best >= 0 && s >= (uint64_t)best)
			continue;
		if (!memcmp(w->buf + (s - w->start), plain, len))
			best = (int64_t)s;
	}
	return best;
}

static void compare(struct check_conn *k, const uint8_t *plain, size_t len)
{
	struct window *w = &k->w;
	uint64_t p, end_held = w->start + w->len;
	bool differs = false;
	int64_t s;

	p = (uint64_t)((int64_t)k->dec_offset + k->delta);
	/* Not where the last alignment puts it (the Write probe was off for a while: its offsets
	 * moved on less than the wire's), or never aligned: at the start of a Write it equals. */
	if (!k->aligned || p < w->start || p + len > end_held ||
	    memcmp(w->buf + (p - w->start), plain, len)) {
		s = align(w, plain, len, k->last_matched);
		if (s >= 0) {
			k->aligned = true;
			k->delta = s - (int64_t)k->dec_offset;
			p = (uint64_t)s;
		} else if (!k->aligned) {
			k->st.uncompared += len;
			return;
		}
	}
	for (size_t i = 0; i < len; i++, p++) {
		if (p < w->start || p >= end_held)
			k->st.uncompared++;
		else if (w->buf[p - w->start] == plain[i])
			k->st.equal++;
		else {
			k->st.differ++;
			differs = true;
		}
	}
	if (differs)
		k->aligned = false;
	else
		k->last_matched = p;
}

/* The record as the connection's Write: the wire event's process, socket and addresses; the
 * TCP sequence number of its header (the wire's bytes follow the socket's, one for one, from
 * its write(2)'s first byte: seq_base); the time of the write(2) that completed it. */
static void deliver(struct check_conn *k, const struct tls13_record *r)
{
	struct tlswire *c = k->owner;
	const struct data_event *w = k->wire_ev;
	struct data_event *e = c->out;

	if (!w || r->len > TLS13_MAX_PLAINTEXT)
		return;
	memcpy(e, w, sizeof(*e));
	e->source = SOURCE_TLS;
	e->offset = k->dec_offset;
	e->len = (__u32)r->len;
	e->tcp_seq = k->seq_base + (uint32_t)(r->offset - k->seq_at);
	memcpy(e->data, r->plain, r->len);
	c->deliver(c->deliver_ctx, e);
	k->st.delivered++;
}

static void on_record(void *ctx, const struct tls13_record *r)
{
	struct check_conn *k = ctx;

	/* Records lost in between (bytes lost, a record that did not open): their wire size moves
	 * the plaintext offset on, so that what is delivered after them shows a gap. */
	if (k->record_known && r->offset > k->next_record) {
		k->dec_offset += r->offset - k->next_record;
		k->st.gap_bytes += r->offset - k->next_record;
	}
	k->record_known = true;
	k->next_record = r->offset + r->wire_len;
	if (r->type != TLS13_TYPE_APPLICATION_DATA) {
		k->st.other_records++;
		return;
	}
	k->st.records++;
	k->st.plain_bytes += r->len;
	if (k->owner->compare)
		compare(k, r->plain, r->len);
	if (k->owner->deliver)
		deliver(k, r);
	k->dec_offset += r->len;
}

static void count_unkeyed(struct tlswire *c, const struct data_event *e)
{
	size_t i;

	for (i = 0; i < c->n_unkeyed; i++)
		if (c->unkeyed[i].pid == (pid_t)e->hdr.pid)
			break;
	if (i == c->n_unkeyed) {
		if (i == sizeof(c->unkeyed) / sizeof(c->unkeyed[0]))
			return;
		c->n_unkeyed++;
		c->unkeyed[i].pid = (pid_t)e->hdr.pid;
		util__copy(c->unkeyed[i].comm, sizeof(c->unkeyed[i].comm), e->hdr.comm);
	}
	c->unkeyed[i].bytes += e->len;
}

void tlswire__wire(struct tlswire *c, const struct data_event *e)
{
	struct check_conn *k = find(c, (pid_t)e->hdr.pid, e->conn);
	const uint8_t *data = e->data;
	uint64_t at = e->offset;
	size_t n = e->len;

	if (!k) {
		count_unkeyed(c, e);
		return;
	}
	if (k->wire_known && at < k->wire_next) {
		/* Sent again after a short write: the part already fed goes. */
		if (at + n <= k->wire_next)
			return;
		data += k->wire_next - at;
		n -= (size_t)(k->wire_next - at);
		at = k->wire_next;
	} else if (k->wire_known && at > k->wire_next) {
		tls13_stream__lost(k->out, at - k->wire_next);
	}
	/* Another write(2) (its first event): the sequence number is that of its first byte. */
	if (!k->wire_known || e->tcp_seq != k->seq_base || e->offset < k->seq_at) {
		k->seq_base = e->tcp_seq;
		k->seq_at = e->offset;
	}
	k->wire_known = true;
	k->wire_next = at + n;
	k->st.wire_bytes += n;
	k->wire_ev = e;
	tls13_stream__feed(k->out, data, n, on_record, k);
	k->wire_ev = NULL;
}

static void add(struct tlswire_stats *to, const struct tlswire_stats *s)
{
	to->conns += s->conns;
	to->wire_bytes += s->wire_bytes;
	to->wire_unkeyed += s->wire_unkeyed;
	to->records += s->records;
	to->other_records += s->other_records;
	to->plain_bytes += s->plain_bytes;
	to->equal += s->equal;
	to->differ += s->differ;
	to->uncompared += s->uncompared;
	to->unauthenticated += s->unauthenticated;
	to->before_first += s->before_first;
	to->resyncs += s->resyncs;
	to->given_up_bytes += s->given_up_bytes;
	to->lost_bytes += s->lost_bytes;
	to->table_full += s->table_full;
	to->delivered += s->delivered;
	to->gap_bytes += s->gap_bytes;
}

void tlswire__stats(const struct tlswire *c, pid_t pid, struct tlswire_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t b = 0; b < BUCKETS; b++) {
		for (const struct check_conn *k = c->buckets[b]; k; k = k->next) {
			struct tlswire_stats s = k->st;
			struct tls13_stats t;

			if (pid && k->pid != pid)
				continue;
			tls13_stream__stats(k->out, &t);
			s.unauthenticated = t.unauthenticated;
			s.before_first = t.before_first;
			s.resyncs = t.resyncs;
			s.given_up_bytes = t.given_up_bytes;
			s.lost_bytes = t.lost_bytes;
			add(out, &s);
		}
	}
	for (size_t i = 0; i < c->n_unkeyed; i++)
		if (!pid || c->unkeyed[i].pid == pid)
			out->wire_unkeyed += c->unkeyed[i].bytes;
	if (!pid)
		out->table_full = c->table_full;
}

static void print_line(FILE *out, pid_t pid, const char *comm, const struct tlswire_stats *s)
{
	fprintf(
	    out,
	    "bindtrace: TLS 1.3 decrypted from write(2): pid %d (%s): "
	    "%llu connections, %llu wire bytes, %llu records (%llu bytes) decrypted, %llu bytes "
	    "equal to the Write probe's plaintext, %llu differing, %llu not compared; %llu "
	    "other records, %llu records not authenticated (and %llu of a handshake before the "
	    "first), %llu resyncs, %llu bytes lost, "
	    "%llu given up, %llu wire bytes without a key; %llu records delivered as Writes\n",
	    pid, comm, (unsigned long long)s->conns, (unsigned long long)s->wire_bytes,
	    (unsigned long long)s->records, (unsigned long long)s->plain_bytes,
	    (unsigned long long)s->equal, (unsigned long long)s->differ,
	    (unsigned long long)s->uncompared, (unsigned long long)s->other_records,
	    (unsigned long long)s->unauthenticated, (unsigned long long)s->before_first,
	    (unsigned long long)s->resyncs, (unsigned long long)s->lost_bytes,
	    (unsigned long long)s->given_up_bytes, (unsigned long long)s->wire_unkeyed,
	    (unsigned long long)s->delivered);
}

void tlswire__print(const struct tlswire *c, FILE *out)
{
	pid_t done[256];
	size_t n_done = 0;
	struct tlswire_stats s;

	/* One line per process, in the order their connections hash: each pid once. */
	for (size_t b = 0; b < BUCKETS; b++) {
		for (const struct check_conn *k = c->buckets[b]; k; k = k->next) {
			size_t i;

			for (i = 0; i < n_done && done[i] != k->pid; i++)
				;
			if (i < n_done || n_done == sizeof(done) / sizeof(done[0]))
				continue;
			done[n_done++] = k->pid;
			tlswire__stats(c, k->pid, &s);
			print_line(out, k->pid, k->comm, &s);
		}
	}
	for (size_t i = 0; i < c->n_unkeyed; i++) {
		size_t j;

		for (j = 0; j < n_done && done[j] != c->unkeyed[i].pid; j++)
			;
		if (j < n_done)
			continue;
		tlswire__stats(c, c->unkeyed[i].pid, &s);
		print_line(out, c->unkeyed[i].pid, c->unkeyed[i].comm, &s);
	}
	if (c->table_full)
		fprintf(out,
			"bindtrace: TLS 1.3 decrypted from write(2): %llu "
			"connections not followed (table full)\n",
			(unsigned long long)c->table_full);
}
