/* tlswire: a connection's records sealed here (its secret and sequence number as a
 * tls_keys_event carries them) against the Write probe's plaintext: equal bytes counted equal
 * whatever the wire's pieces, a changed byte counted as differing, a record whose Write is not
 * held not compared, lost wire bytes found again, a second key for the same connection ignored,
 * and wire bytes of a connection without a key counted apart. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tls13.h"
#include "tlswire.h"
#include "tlsseal.h"

#define PID 4242
#define CONN 777

static struct data_event *event(uint8_t source, uint64_t offset, const uint8_t *data, size_t len,
				uint64_t conn)
{
	struct data_event *e = calloc(1, sizeof(*e) + len);

	e->hdr.type = EVENT_DATA;
	e->hdr.pid = PID;
	memcpy(e->hdr.comm, "tester", 7);
	e->conn = conn;
	e->offset = offset;
	e->len = (__u32)len;
	e->dir = DIR_OUT;
	e->source = source;
	memcpy(e->data, data, len);
	return e;
}

static void plain(struct tlswire *c, uint64_t offset, const uint8_t *data, size_t len)
{
	struct data_event *e = event(SOURCE_TLS, offset, data, len, CONN);

	tlswire__plain(c, e);
	free(e);
}

/* A wire event of a write(2) whose first byte had TCP sequence number seq. */
static void wire_at(struct tlswire *c, uint64_t offset, const uint8_t *data, size_t len,
		    uint32_t seq)
{
	struct data_event *e = event(SOURCE_TLS_WIRE, offset, data, len, CONN);

	e->tcp_seq = seq;
	tlswire__wire(c, e);
	free(e);
}

/* The wire fed in pieces of `piece` bytes (0: whole), from wire offset at. */
static void wire(struct tlswire *c, uint64_t at, const uint8_t *data, size_t len, size_t piece,
		 uint64_t conn)
{
	for (size_t done = 0; done < len;) {
		size_t n = piece && len - done > piece ? piece : len - done;
		struct data_event *e = event(SOURCE_TLS_WIRE, at + done, data + done, n, conn);

		tlswire__wire(c, e);
		free(e);
		done += n;
	}
}

static void key(struct tlswire *c, const struct sealer *s)
{
	struct tls_keys_event k = { 0 };

	k.hdr.type = EVENT_TLS_KEYS;
	k.hdr.pid = PID;
	memcpy(k.hdr.comm, "tester", 7);
	k.conn = CONN;
	k.vers = 0x0304;
	k.cipher_suite = s->suite;
	k.version[0] = k.version[1] = 0x0304;
	for (int i = 0; i < 8; i++)
		k.seq[1][7 - i] = (uint8_t)(s->seq >> (8 * i));
	k.secret_len[0] = k.secret_len[1] = s->secret_len;
	memcpy(k.secret[1], s->secret, s->secret_len);
	memset(k.secret[0], 0x55, s->secret_len);
	tlswire__key(c, &k);
}

static struct sealer new_sealer(void)
{
	struct sealer s = { .suite = TLS13_AES_128_GCM_SHA256, .secret_len = 32, .seq = 9 };

	for (size_t i = 0; i < s.secret_len; i++)
		s.secret[i] = (uint8_t)(i * 7 + 3);
	sealer_keys(&s);
	return s;
}

static void test_equal(size_t piece)
{
	struct tlswire *c = tlswire__new(NULL, NULL, true);
	struct sealer s = new_sealer();
	static uint8_t a[100], b[3000], w[8192];
	struct tlswire_stats st;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)('a' + i % 26);
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 31);
	key(c, &s);
	/* Two Writes, the second in two probe events; on the wire three records. */
	plain(c, 0, a, sizeof(a));
	plain(c, 100, b, 2000);
	plain(c, 2100, b + 2000, 1000);
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, a, sizeof(a), 0, w + n);
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, b, 1500, 0, w + n);
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, b + 1500, 1500, 3, w + n);
	n += seal(&s, TLS13_TYPE_HANDSHAKE, (const uint8_t *)"\x04\x00\x00\x00", 4, 0, w + n);
	wire(c, 0, w, n, piece, CONN);
	tlswire__stats(c, PID, &st);
	CHECK_INT(st.conns, 1);
	CHECK_INT(st.records, 3);
	CHECK_INT(st.other_records, 1);
	CHECK_INT(st.plain_bytes, 3100);
	CHECK_INT(st.equal, 3100);
	CHECK_INT(st.differ, 0);
	CHECK_INT(st.uncompared, 0);
	CHECK_INT(st.wire_bytes, n);
	CHECK_INT(st.unauthenticated, 0);
	tlswire__free(c);
}

static void test_differ_and_lost(void)
{
	struct tlswire *c = tlswire__new(NULL, NULL, true);
	struct sealer s = new_sealer();
	uint8_t rec[4][200], changed[200], w[4096];
	struct tlswire_stats st;
	size_t n = 0, third;

	for (int r = 0; r < 4; r++)
		for (size_t i = 0; i < sizeof(rec[r]); i++)
			rec[r][i] = (uint8_t)(i ^ (0x11 * (r + 1)));
	memcpy(changed, rec[1], sizeof(changed));
	changed[150] ^= 1;
	key(c, &s);
	key(c, &s); /* read again: ignored */
	plain(c, 0, rec[0], 200);
	plain(c, 200, changed, 200); /* the probe saw something else */
	plain(c, 400, rec[2], 200);
	plain(c, 600, rec[3], 200);
	for (int r = 0; r < 3; r++)
		n += seal(&s, TLS13_TYPE_APPLICATION_DATA, rec[r], 200, 0, w + n);
	third = n;
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, rec[3], 200, 0, w + n);
	wire(c, 0, w, third - 10, 0, CONN); /* the third record's end lost */
	wire(c, third, w + third, n - third, 7, CONN);
	tlswire__stats(c, PID, &st);
	CHECK_INT(st.conns, 1);
	CHECK_INT(st.records, 3);
	CHECK_INT(st.differ, 1);
	CHECK_INT(st.equal, 599);
	CHECK_INT(st.lost_bytes, 10);
	CHECK_INT(st.resyncs, 1);
	CHECK_INT(st.gap_bytes, 200 + 22); /* the third record's header, plaintext, type, tag */
	/* Without a key: counted, not decrypted. */
	wire(c, 0, w, third, 0, CONN + 1);
	tlswire__stats(c, PID, &st);
	CHECK_INT(st.wire_unkeyed, third);
	CHECK_INT(st.records, 3);
	tlswire__free(c);
}

/* A record whose Write the window no longer holds (or never did) is not compared. */
static void test_uncompared(void)
{
	struct tlswire *c = tlswire__new(NULL, NULL, true);
	struct sealer s = new_sealer();
	uint8_t a[64], w[512];
	struct tlswire_stats st;
	size_t n;

	memset(a, 'x', sizeof(a));
	key(c, &s);
	n = seal(&s, TLS13_TYPE_APPLICATION_DATA, a, sizeof(a), 0, w);
	wire(c, 0, w, n, 0, CONN);
	tlswire__stats(c, PID, &st);
	CHECK_INT(st.records, 1);
	CHECK_INT(st.uncompared, 64);
	CHECK_INT(st.equal + st.differ, 0);
	tlswire__free(c);
}

/* Delivering: each record as a Write, its offset in the plaintext stream (a lost record's wire
 * size moves it on: a gap), its header's TCP sequence number, nothing kept for comparing. */
struct got_write {
	int n;
	uint64_t offset[8];
	uint32_t len[8], seq[8];
};

static void on_write(void *ctx, const struct data_event *e)
{
	struct got_write *g = ctx;

	if (g->n < 8) {
		g->offset[g->n] = e->offset;
		g->len[g->n] = e->len;
		g->seq[g->n] = e->tcp_seq;
		g->n++;
	}
	CHECK(e->source == SOURCE_TLS && e->dir == DIR_OUT, "source %u dir %u", e->source, e->dir);
}

static void test_deliver(void)
{
	struct got_write g = { 0 };
	struct tlswire *c = tlswire__new(on_write, &g, false);
	struct sealer s = new_sealer();
	uint8_t a[100], w[1024];
	size_t n = 0, r1, r2;
	struct data_event *e;
	struct tlswire_stats st;

	memset(a, 'q', sizeof(a));
	key(c, &s);
	e = event(SOURCE_TLS, 0, a, 10, CONN);
	CHECK(tlswire__plain(c, e), "a keyed connection's Write is said to come from the wire");
	free(e);
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, a, 100, 0, w + n);
	r1 = n;
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, a, 50, 0, w + n);
	r2 = n;
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, a, 30, 0, w + n);
	/* The first record from TCP sequence 1000; the second lost; the third from its place. */
	wire_at(c, 0, w, r1, 1000);
	wire_at(c, r2, w + r2, n - r2, 1000 + (uint32_t)r2);
	CHECK_INT(g.n, 2);
	CHECK_INT(g.offset[0], 0);
	CHECK_INT(g.len[0], 100);
	CHECK_INT(g.seq[0], 1000);
	CHECK_INT(g.offset[1], 100 + (r2 - r1)); /* after a gap of the lost record's wire size */
	CHECK_INT(g.len[1], 30);
	CHECK_INT(g.seq[1], 1000 + r2);
	tlswire__stats(c, PID, &st);
	CHECK_INT(st.delivered, 2);
	CHECK_INT(st.equal + st.differ + st.uncompared, 0);
	tlswire__free(c);
}

/* A write(2) copied as several events: each carries the write's first TCP sequence number
 * (capture.bpf.c emit), so a record completed in a later event still gets its own header's. */
static void test_deliver_chunks(void)
{
	struct got_write g = { 0 };
	struct tlswire *c = tlswire__new(on_write, &g, false);
	struct sealer s = new_sealer();
	uint8_t a[100], w[1024];
	size_t n = 0, r1, r2, r3, cut;

	memset(a, 'c', sizeof(a));
	key(c, &s);
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, a, 40, 0, w + n);
	r1 = n;
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, a, 60, 0, w + n);
	r2 = n;
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, a, 20, 0, w + n);
	r3 = n;
	cut = r1 + 10; /* the second record's header in the first event, its end in the second */
	wire_at(c, 0, w, cut, 5000);
	wire_at(c, cut, w + cut, r3 - cut, 5000); /* the same write(2): its first byte's */
	/* The next write(2): its own first sequence number. */
	n += seal(&s, TLS13_TYPE_APPLICATION_DATA, a, 5, 0, w + n);
	wire_at(c, r3, w + r3, n - r3, 5000 + (uint32_t)r3);
	CHECK_INT(g.n, 4);
	CHECK_INT(g.seq[0], 5000);
	CHECK_INT(g.seq[1], 5000 + r1);
	CHECK_INT(g.seq[2], 5000 + r2);
	CHECK_INT(g.seq[3], 5000 + r3);
	CHECK_INT(g.offset[3], 40 + 60 + 20);
	tlswire__free(c);
}

int main(void)
{
	test_equal(0);
	test_equal(1);
	test_equal(333);
	test_differ_and_lost();
	test_uncompared();
	test_deliver();
	test_deliver_chunks();
	return check_summary("test_tlswire");
}
