/* peerfeed: a traced writer's Writes become the reader's reads when its read(2)s reach their last
 * byte on the wire, in order, with the reader's own stream offsets; a Write dropped unread shows
 * as a gap; a remote connection whose reader never read queues nothing; which roles read this
 * way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "endpoint.h"
#include "peerfeed.h"

struct got {
	int n;
	uint64_t offset[8];
	uint32_t len[8];
	uint64_t ts[8];
	uint32_t pid[8];
	char first[8];
};

static void deliver(void *ctx, const struct data_event *e)
{
	struct got *g = ctx;

	if (g->n < 8) {
		g->offset[g->n] = e->offset;
		g->len[g->n] = e->len;
		g->ts[g->n] = e->hdr.ts_ns;
		g->pid[g->n] = e->hdr.pid;
		g->first[g->n] = (char)e->data[0];
		CHECK_INT(e->dir, DIR_IN);
	}
	g->n++;
}

/* Writer 127.0.0.1:40000 -> 127.0.0.1:2379 (or from raddr0 for a remote peer). */
static struct data_event *write_ev(uint64_t ts, uint32_t seq, uint64_t offset, const char *text,
				   uint8_t raddr0)
{
	size_t n = strlen(text);
	struct data_event *e = calloc(1, sizeof(*e) + n);

	e->hdr.type = EVENT_DATA;
	e->hdr.pid = 10;
	e->hdr.ts_ns = ts;
	e->dir = DIR_OUT;
	e->source = SOURCE_TLS;
	e->family = 2;
	e->lport = 40000;
	e->rport = 2379;
	e->laddr[0] = 127;
	e->laddr[3] = 1;
	e->raddr[0] = raddr0;
	e->raddr[3] = 1;
	e->offset = offset;
	e->len = (uint32_t)n;
	e->tcp_seq = seq;
	e->flags = DATA_HAS_TCP_SEQ;
	memcpy(e->data, text, n);
	return e;
}

/* A 4 KiB Write of the writer at *seq / *off (TLS record overhead 22), queued; both advanced. */
static void write_next(struct peer_feed *pf, uint64_t ts, uint32_t *seq, uint64_t *off,
		       const char *big)
{
	struct data_event *w = write_ev(ts, *seq, *off, big, 127);

	peer_feed__written(pf, w, false);
	free(w);
	*seq += 4096 + 22;
	*off += 4096;
}

static struct sock_read_event read_ev(uint64_t ts, uint32_t seq_end, uint8_t laddr0)
{
	struct sock_read_event r = { 0 };

	r.hdr.type = EVENT_SOCK_READ;
	r.hdr.pid = 20;
	r.hdr.ts_ns = ts;
	r.conn = 777;
	r.seq_end = seq_end;
	r.family = 2;
	r.lport = 2379;
	r.rport = 40000;
	r.raddr[0] = 127;
	r.raddr[3] = 1;
	r.laddr[0] = laddr0;
	r.laddr[3] = 1;
	return r;
}

int main(void)
{
	struct peer_feed *pf = peer_feed__new(false);
	struct peer_feed_stats st;
	struct sock_read_event r;
	struct data_event *w;
	struct got g = { 0 };

	/* Roles: the three read from their peers only when those are traced. */
	CHECK(peer_feed__reads_via_syscall(ROLE_ETCD, false, true, true, false), "etcd");
	CHECK(!peer_feed__reads_via_syscall(ROLE_ETCD, true, false, true, false), "etcd alone");
	CHECK(peer_feed__reads_via_syscall(ROLE_SCHEDULER, true, true, false, false), "sched");
	CHECK(peer_feed__reads_via_syscall(ROLE_APISERVER, true, true, true, false), "apiserver");
	CHECK(!peer_feed__reads_via_syscall(ROLE_APISERVER, true, true, true, true),
	      "--probe-reads keeps the apiserver's Read probes");
	CHECK(!peer_feed__reads_via_syscall(ROLE_APISERVER, false, true, true, false),
	      "apiserver without the scheduler traced");
	CHECK(!peer_feed__reads_via_syscall(ROLE_WATCHER, true, true, true, false), "watcher");

	/* A local connection: the first Write is kept before the reader's first read(2). */
	w = write_ev(100, 1000, 0, "hello", 127);
	peer_feed__written(pf, w, true);
	free(w);
	w = write_ev(200, 1000 + 5 + 22, 5, "world!", 127);
	peer_feed__written(pf, w, true);
	free(w);
	/* A read(2) that has not reached the first Write's last ciphertext byte releases nothing. */
	r = read_ev(300, 1000 + 26, 127);
	peer_feed__read(pf, &r, deliver, &g);
	CHECK_INT(g.n, 0);
	/* One that reached both releases both, in order, timed by it, offsets of the reader. */
	r = read_ev(400, 1000 + 27 + 6 + 22, 127);
	peer_feed__read(pf, &r, deliver, &g);
	CHECK_INT(g.n, 2);
	CHECK_INT(g.offset[0], 0);
	CHECK_INT(g.len[0], 5);
	CHECK_INT(g.offset[1], 5);
	CHECK_INT(g.first[1], 'w');
	CHECK_INT(g.ts[0], 400);
	CHECK_INT(g.pid[1], 20);

	/* A Write never read expires, and the reader's stream moves past it: a gap. */
	w = write_ev(1000, 1055, 11, "lost", 127);
	peer_feed__written(pf, w, true);
	free(w);
	CHECK_INT(peer_feed__expire(pf, 1000 + PEER_FEED_MAX_AGE_NS + 1), 1);
	w = write_ev(PEER_FEED_MAX_AGE_NS + 2000, 1055 + 4 + 22, 15, "next", 127);
	peer_feed__written(pf, w, true);
	free(w);
	r = read_ev(PEER_FEED_MAX_AGE_NS + 3000, 1055 + 4 + 22 + 4 + 22, 127);
	peer_feed__read(pf, &r, deliver, &g);
	CHECK_INT(g.n, 3);
	CHECK_INT(g.offset[2], 11 + 4); /* 4 bytes skipped */

	/* A remote peer that never read here: its Writes are not kept. */
	w = write_ev(5000, 9000, 0, "remote", 10);
	peer_feed__written(pf, w, true);
	free(w);
	peer_feed__stats(pf, &st);
	CHECK_INT(st.unread, 1);
	CHECK_INT(st.delivered, 3);
	CHECK_INT(st.expired, 1);
	CHECK_INT(st.dropped_bytes, 4);
	peer_feed__free(pf);

	/* A read(2) whose record was lost (ring-buffer drops): the next one does not begin where
	 * the last one ended. What the lost one reached is timed by its Write or the last read(2)
	 * seen, whichever came later (never after its answer); the rest by the read(2) that
	 * reached it. */
	pf = peer_feed__new(false);
	memset(&g, 0, sizeof(g));
	w = write_ev(100, 5000, 0, "first", 127);
	peer_feed__written(pf, w, true);
	free(w);
	r = read_ev(150, 5000 + 5 + 22, 127);
	r.len = 5 + 22;
	peer_feed__read(pf, &r, deliver, &g);
	CHECK_INT(g.n, 1);
	CHECK_INT(g.ts[0], 150);
	w = write_ev(200, 5027, 5, "second", 127); /* read by a read(2) that was lost */
	peer_feed__written(pf, w, true);
	free(w);
	w = write_ev(900, 5027 + 6 + 22, 11, "third", 127);
	peer_feed__written(pf, w, true);
	free(w);
	r = read_ev(1000, 5027 + 6 + 22 + 5 + 22, 127);
	r.len = 5 + 22; /* begins after the second Write's bytes: a read between was lost */
	peer_feed__read(pf, &r, deliver, &g);
	CHECK_INT(g.n, 3);
	CHECK_INT(g.first[1], 's');
	CHECK_INT(g.ts[1], 200); /* its Write's time, not 1000 */
	CHECK_INT(g.offset[1], 5);
	CHECK_INT(g.ts[2], 1000);
	/* Read just after the last one seen: timed by that one when its Write came earlier. */
	w = write_ev(1100, 5082, 16, "fourth", 127);
	peer_feed__written(pf, w, true);
	free(w);
	w = write_ev(1150, 5082 + 6 + 22, 22, "fifth", 127);
	peer_feed__written(pf, w, true);
	free(w);
	r = read_ev(1300, 5082 + 6 + 22 + 5 + 22, 127);
	r.len = 5 + 22;
	peer_feed__read(pf, &r, deliver, &g);
	CHECK_INT(g.n, 5);
	CHECK_INT(g.ts[3], 1100);
	CHECK_INT(g.ts[4], 1300);
	/* Consecutive read(2)s: nothing retimed. */
	w = write_ev(1400, 5137, 27, "sixth", 127);
	peer_feed__written(pf, w, true);
	free(w);
	r = read_ev(1500, 5137 + 5 + 22, 127);
	r.len = 5 + 22;
	peer_feed__read(pf, &r, deliver, &g);
	CHECK_INT(g.n, 6);
	CHECK_INT(g.ts[5], 1500);
	peer_feed__stats(pf, &st);
	CHECK_INT(st.retimed, 2);
	peer_feed__free(pf);

	/* A writer's event lost to drops (its offsets jump): the reader's stream jumps too, a gap
	 * its decoder sees, instead of the next bytes taken for the lost ones. */
	pf = peer_feed__new(false);
	memset(&g, 0, sizeof(g));
	w = write_ev(100, 7000, 0, "abc", 127);
	peer_feed__written(pf, w, true);
	free(w);
	w = write_ev(200, 7000 + 3 + 22 + 4 + 22, 7, "xyz", 127); /* "LOST" at 3..6 dropped */
	peer_feed__written(pf, w, true);
	free(w);
	r = read_ev(300, 7000 + 3 + 22 + 4 + 22 + 3 + 22, 127);
	peer_feed__read(pf, &r, deliver, &g);
	CHECK_INT(g.n, 2);
	CHECK_INT(g.offset[0], 0);
	CHECK_INT(g.offset[1], 7);
	CHECK_INT(g.first[1], 'x');
	/* A gap before a Write that then expires unread: the stream moves past both. */
	w = write_ev(400, 7100, 20, "gone", 127); /* 10..19 dropped */
	peer_feed__written(pf, w, true);
	free(w);
	CHECK_INT(peer_feed__expire(pf, 400 + PEER_FEED_MAX_AGE_NS + 1), 1);
	w = write_ev(PEER_FEED_MAX_AGE_NS + 500, 7200, 24, "last", 127);
	peer_feed__written(pf, w, true);
	free(w);
	r = read_ev(PEER_FEED_MAX_AGE_NS + 600, 7200 + 4 + 22, 127);
	peer_feed__read(pf, &r, deliver, &g);
	CHECK_INT(g.n, 3);
	CHECK_INT(g.offset[2], 24);
	peer_feed__free(pf);

	/* A local client known not to read this way (not traced): what was queued for it is freed,
	 * nothing more is queued, and both are counted, not taken for losses. */
	{
		struct endpoint wl, wr;
		uint8_t a[16] = { 127, 0, 0, 1 };
		struct got h = { 0 };

		pf = peer_feed__new(false);
		endpoint__set(&wl, 2, a, 40000);
		endpoint__set(&wr, 2, a, 2379);
		w = write_ev(100, 1000, 0, "kept", 127);
		peer_feed__written(pf, w, true);
		free(w);
		peer_feed__no_reader(pf, &wl, &wr);
		for (int i = 0; i < 1000; i++) {
			w = write_ev(200 + (uint64_t)i, 1026 + 26 * (uint32_t)i,
				     4 + 4 * (uint64_t)i, "more", 127);
			peer_feed__written(pf, w, true);
			free(w);
		}
		peer_feed__stats(pf, &st);
		CHECK_INT(st.queued, 1);
		CHECK_INT(st.no_reader, 1001);
		CHECK_INT(st.no_reader_bytes, 4004);
		CHECK_INT(st.dropped_bytes, 0);
		CHECK_INT(st.overflow + st.expired, 0);
		/* A read(2) of it after all: what comes after is delivered again. */
		r = read_ev(5000, 1026 + 26 * 1000, 127);
		peer_feed__read(pf, &r, deliver, &h);
		CHECK_INT(h.n, 0);
		w = write_ev(6000, 1026 + 26 * 1000, 4004, "late", 127);
		peer_feed__written(pf, w, true);
		free(w);
		r = read_ev(7000, 1026 + 26 * 1001, 127);
		peer_feed__read(pf, &r, deliver, &h);
		CHECK_INT(h.n, 1);
		CHECK_INT(h.first[0], 'l');
		peer_feed__stats(pf, &st);
		CHECK_INT(st.reader_came, 1);
		/* A reader that has read this way keeps its Writes whatever is said of it. */
		peer_feed__no_reader(pf, &wl, &wr);
		w = write_ev(8000, 1026 + 26 * 1001, 4008, "kept", 127);
		peer_feed__written(pf, w, true);
		free(w);
		r = read_ev(9000, 1026 + 26 * 1002, 127);
		peer_feed__read(pf, &r, deliver, &h);
		CHECK_INT(h.n, 2);
		peer_feed__free(pf);
	}
	/* A reader said not to read this way (a watcher reading through its own probes) that is
	 * then traced as one that does (it was the restarted scheduler): the Writes after the
	 * take-over are kept for it, so its first read(2) gets them (after a mere read(2) it would
	 * get nothing: the Write before it was not kept). */
	{
		struct endpoint wl, wr;
		uint8_t a[16] = { 127, 0, 0, 1 };
		struct got h = { 0 };

		pf = peer_feed__new(false);
		endpoint__set(&wl, 2, a, 40000);
		endpoint__set(&wr, 2, a, 2379);
		w = write_ev(100, 1000, 0, "seen", 127);
		peer_feed__written(pf, w, true);
		free(w);
		peer_feed__no_reader(pf, &wl, &wr);
		w = write_ev(200, 1026, 4, "lost", 127);
		peer_feed__written(pf, w, true);
		free(w);
		peer_feed__reader_reads(pf, &wl, &wr);
		w = write_ev(300, 1052, 8, "kept", 127);
		peer_feed__written(pf, w, true);
		free(w);
		r = read_ev(400, 1078, 127);
		peer_feed__read(pf, &r, deliver, &h);
		CHECK_INT(h.n, 1);
		CHECK_INT(h.first[0], 'k');
		CHECK_INT(h.len[0], 4);
		peer_feed__stats(pf, &st);
		CHECK_INT(st.reader_came, 1);
		CHECK_INT(st.no_reader, 2);
		/* Said of a connection nobody marked: nothing changes. */
		peer_feed__reader_reads(pf, &wr, &wl);
		peer_feed__stats(pf, &st);
		CHECK_INT(st.reader_came, 1);
		peer_feed__free(pf);
	}
	/* A remote client said not to read this way takes no slot: nothing would be kept for it
	 * anyway (its Writes count as unread), and the table stays for the connections that matter
	 * (the apiserver marks each of its connections so, those to remote kubelets included). */
	{
		struct endpoint wl, wr;
		uint8_t a[16] = { 127, 0, 0, 1 }, b[16] = { 10, 0, 0, 1 };

		pf = peer_feed__new(false);
		endpoint__set(&wl, 2, a, 40000);
		endpoint__set(&wr, 2, b, 2379);
		peer_feed__no_reader(pf, &wl, &wr);
		w = write_ev(100, 1000, 0, "away", 10);
		peer_feed__written(pf, w, true);
		free(w);
		peer_feed__stats(pf, &st);
		CHECK_INT(st.unread, 1);
		CHECK_INT(st.no_reader, 0);
		CHECK_INT(st.queued, 0);
		peer_feed__free(pf);
	}
	/* Not patient (a writer other than the apiserver): a local reader that has not read
	 * PEER_FEED_BRIEF_BYTES is taken not to read this way (an untraced apiserver on its etcd
	 * member); what was kept is freed, counted as not kept, not as lost; a read(2) of it after
	 * all is followed again. */
	{
		struct got h = { 0 };
		char big[4097];
		uint32_t seq = 1000;
		uint64_t off = 0;
		int i;

		memset(big, 'b', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		pf = peer_feed__new(false);
		for (i = 0; i < 16; i++) /* 64 KiB: all kept */
			write_next(pf, 100 + (uint64_t)i, &seq, &off, big);
		peer_feed__stats(pf, &st);
		CHECK_INT(st.queued, 16);
		CHECK_INT(st.no_reader, 0);
		write_next(pf, 200, &seq, &off, big);
		peer_feed__stats(pf, &st);
		CHECK_INT(st.no_reader, 17);
		CHECK_INT(st.dropped_bytes, 0);
		CHECK_INT(st.overflow + st.expired, 0);
		r = read_ev(300, seq, 127);
		peer_feed__read(pf, &r, deliver, &h);
		CHECK_INT(h.n, 0);
		w = write_ev(400, seq, off, "late", 127);
		peer_feed__written(pf, w, false);
		free(w);
		r = read_ev(500, seq + 4 + 22, 127);
		peer_feed__read(pf, &r, deliver, &h);
		CHECK_INT(h.n, 1);
		CHECK_INT(h.first[0], 'l');
		peer_feed__stats(pf, &st);
		CHECK_INT(st.reader_came, 1);
		peer_feed__free(pf);
	}

	/* Connections come and go (kubectl, restarts): idle ones are forgotten at any place among
	 * those in use while the others keep their queued Writes, and more connections than the
	 * table has slots pass through it over time. */
	{
		struct got h = { 0 };
		uint64_t t = 1000;

		pf = peer_feed__new(false);
		for (int round = 0; round < 3; round++) {
			for (int i = 0; i < 3000; i++) {
				/* Read once, so that each connection is followed and kept. */
				r = read_ev(t, 100, 127);
				r.rport = (uint16_t)(1000 + i);
				peer_feed__read(pf, &r, deliver, &h);
			}
			w = write_ev(t + 10, 100, 0, "keep", 127);
			w->lport = 1000 + 1500;
			peer_feed__written(pf, w, true);
			free(w);
			/* Ten minutes on: every connection but the one with a Write queued is idle;
			 * its Write is not old enough to drop yet (written just now). */
			t += 601ull * 1000000000ull;
			w = write_ev(t, 126, 4, "more", 127);
			w->lport = 1000 + 1500;
			peer_feed__written(pf, w, true);
			free(w);
			CHECK_INT(peer_feed__expire(pf, t), 1); /* "keep": older than 30 s */
			r = read_ev(t + 5, 126 + 26, 127);
			r.rport = 1000 + 1500;
			peer_feed__read(pf, &r, deliver, &h);
			CHECK_INT(h.n, round + 1);
			CHECK_INT(h.first[round], 'm');
			t += 601ull * 1000000000ull;
			CHECK_INT(peer_feed__expire(pf, t), 0);
		}
		peer_feed__stats(pf, &st);
		CHECK_INT(st.table_full, 0);
		CHECK_INT(st.expired, 3);
		peer_feed__free(pf);
	}
	/* A reader that exited (an etcd member killed): what was queued for it and what its peer
	 * writes to it after are not read, which is no gap (test-ha-leader-kill's exit line). */
	{
		char line[1024] = "";
		FILE *f;

		pf = peer_feed__new(false);
		memset(&g, 0, sizeof(g));
		w = write_ev(100, 7000, 0, "ping", 127);
		peer_feed__written(pf, w, true);
		free(w);
		r = read_ev(150, 7000 + 4 + 22, 127);
		peer_feed__read(pf, &r, deliver, &g);
		CHECK_INT(g.n, 1);
		w = write_ev(200, 7026, 4, "queued", 127);
		peer_feed__written(pf, w, true);
		free(w);
		w = write_ev(210, 7026 + 6 + 22, 10, "queued2", 127);
		peer_feed__written(pf, w, true);
		free(w);
		peer_feed__reader_gone(pf, 21); /* another process: nothing */
		peer_feed__stats(pf, &st);
		CHECK_INT(st.reader_exited, 0);
		peer_feed__reader_gone(pf, 20);
		w = write_ev(300, 7026 + 6 + 22 + 7 + 22, 17, "after", 127);
		peer_feed__written(pf, w, true);
		free(w);
		CHECK_INT(peer_feed__expire(pf, 300 + PEER_FEED_MAX_AGE_NS + 1), 0);
		peer_feed__stats(pf, &st);
		CHECK_INT(st.reader_exited, 3);
		CHECK_INT(st.reader_exited_bytes, 6 + 7 + 5);
		CHECK_INT(st.expired + st.overflow, 0);
		CHECK_INT(st.dropped_bytes, 0);
		f = fmemopen(line, sizeof(line) - 1, "w");
		if (f) {
			peer_feed__print(pf, f);
			fclose(f);
		}
		CHECK(strstr(line, "0 dropped unread (0 bytes shown as gaps), 3 to readers that "
				   "exited (18 bytes not read)") != NULL,
		      "the exit line: %s", line);
		/* The writer's port used again by a new connection (another socket) to the reader's
		 * successor: a new stream, kept and read from its start, not taken for Writes to
		 * the process that exited. */
		w = write_ev(400, 90000, 0, "preface", 127);
		w->conn = 4242;
		peer_feed__written(pf, w, true);
		free(w);
		r = read_ev(450, 90000 + 7 + 22, 127);
		r.hdr.pid = 30;
		r.conn = 888;
		memset(&g, 0, sizeof(g));
		peer_feed__read(pf, &r, deliver, &g);
		CHECK_INT(g.n, 1);
		CHECK_INT(g.offset[0], 0);
		CHECK_INT(g.first[0], 'p');
		CHECK_INT(g.pid[0], 30);
		peer_feed__stats(pf, &st);
		CHECK_INT(st.reader_exited, 3);
		peer_feed__free(pf);
	}
	return check_summary("peerfeed");
}
