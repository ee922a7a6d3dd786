/* HTTP/2 frame layer: every frame type, padding, priority, CONTINUATION, PUSH_PROMISE, PING,
 * GOAWAY; resync after garbage and after a gap; each input fed whole and byte by byte. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "h2.h"
#include "h2write.h"

struct events {
	char log[4096];
	size_t len;
};

static void logf_(struct events *e, const char *s)
{
	size_t n = strlen(s);
	if (e->len + n < sizeof(e->log)) {
		memcpy(e->log + e->len, s, n + 1);
		e->len += n;
	}
}

static void on_header(void *ctx, int dir, uint32_t sid, const struct hpack_header *h)
{
	char b[256];
	snprintf(b, sizeof(b), "H%d/%u %.*s=%.*s%s;", dir, sid, (int)h->name_len, h->name,
		 (int)h->value_len, h->value, (h->flags & HPACK_NAME_UNKNOWN) ? "?" : "");
	logf_(ctx, b);
}

static void on_headers_end(void *ctx, int dir, uint32_t sid, bool end, bool damaged, uint64_t a,
			   uint64_t b)
{
	char s[64];
	(void)a;
	(void)b;
	snprintf(s, sizeof(s), "E%d/%u%s%s;", dir, sid, end ? "!" : "", damaged ? "x" : "");
	logf_(ctx, s);
}

static void on_data(void *ctx, int dir, uint32_t sid, const uint8_t *d, size_t n, bool start,
		    uint64_t a, uint64_t b)
{
	char s[256];
	(void)a;
	(void)b;
	(void)start;
	snprintf(s, sizeof(s), "D%d/%u %.*s;", dir, sid, (int)n, (const char *)d);
	/* Byte-by-byte feeding splits DATA: join adjacent pieces of one stream. */
	struct events *e = ctx;
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "D%d/%u ", dir, sid);
	size_t pl = strlen(prefix);
	if (e->len > pl && e->log[e->len - 1] == ';') {
		char *last = e->log + e->len - 1;
		char *p = last;
		while (p > e->log && p[-1] != ';')
			p--;
		if (!strncmp(p, prefix, pl) && e->len + n < sizeof(e->log)) {
			memcpy(last, d, n);
			e->len = (size_t)(last - e->log) + n;
			e->log[e->len++] = ';';
			e->log[e->len] = 0;
			return;
		}
	}
	logf_(ctx, s);
}

static void on_end(void *ctx, int dir, uint32_t sid, uint64_t ts)
{
	char s[32];
	(void)ts;
	snprintf(s, sizeof(s), "Z%d/%u;", dir, sid);
	logf_(ctx, s);
}

static void on_rst(void *ctx, int dir, uint32_t sid, uint32_t err, uint64_t ts)
{
	char s[32];
	(void)ts;
	snprintf(s, sizeof(s), "R%d/%u=%u;", dir, sid, err);
	logf_(ctx, s);
}

static void on_goaway(void *ctx, int dir, uint32_t last, uint32_t err, uint64_t ts)
{
	char s[32];
	(void)ts;
	snprintf(s, sizeof(s), "G%d/%u=%u;", dir, last, err);
	logf_(ctx, s);
}

static void on_lost(void *ctx, int dir, uint32_t sid)
{
	char s[32];
	snprintf(s, sizeof(s), "L%d/%u;", dir, sid);
	logf_(ctx, s);
}

static const struct h2_callbacks cbs = { on_header, on_headers_end, on_data, on_end,
					 on_rst,    on_goaway,	    on_lost };

/* Frame builder */
struct buf {
	uint8_t b[4096];
	size_t n;
};

static void frame(struct buf *o, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
		  size_t len)
{
	o->n += h2w_frame(o->b + o->n, type, flags, sid, p, len);
}

static void raw(struct buf *o, const void *p, size_t len)
{
	memcpy(o->b + o->n, p, len);
	o->n += len;
}

enum begin { BEGIN_RESYNC = 0, BEGIN_START = 1, BEGIN_AT_FRAME = 2 };

/* The resync buffer held after the last run, which must be given back once in step. */
static uint32_t last_rcap;

static void run(const struct buf *in, size_t piece, int begin, struct events *e, uint64_t gap_after,
		uint64_t gap)
{
	struct h2_conn *c = calloc(1, sizeof(*c));
	memset(e, 0, sizeof(*e));
	h2_conn__init(c, &cbs, e);
	if (begin == BEGIN_AT_FRAME)
		h2_conn__begin_at_frame(c, 0);
	else
		h2_conn__begin(c, 0, begin == BEGIN_START);
	for (size_t o = 0; o < in->n;) {
		size_t n = piece && piece < in->n - o ? piece : in->n - o;
		if (gap && o <= gap_after && gap_after < o + n)
			n = gap_after - o;
		if (gap && o == gap_after) {
			h2_conn__lose(c, 0, gap);
			o += gap;
			continue;
		}
		h2_conn__feed(c, 0, in->b + o, n, o);
		o += n;
	}
	last_rcap = c->dir[0].state == H2_DIR_RESYNC ? 0 : c->dir[0].rcap;
	h2_conn__free(c);
	free(c);
}

/* on_data that records the DATA frame's content length as the layer reports it. */
static struct h2_conn *len_conn;
static char len_log[256];

static void on_data_len(void *ctx, int dir, uint32_t sid, const uint8_t *d, size_t n, bool start,
			uint64_t a, uint64_t b)
{
	size_t l = strlen(len_log);
	(void)ctx;
	(void)d;
	(void)n;
	(void)a;
	(void)b;
	if (start)
		snprintf(len_log + l, sizeof(len_log) - l, "%u/%u;", sid,
			 h2_conn__data_frame_len(len_conn, dir));
}

static const struct h2_callbacks len_cbs = { .on_data = on_data_len };

static void test_data_frame_len(void)
{
	struct buf in = { .n = 0 };
	uint8_t pd[16] = { 4, 'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0 };

	frame(&in, H2_DATA, 0, 1, "abc", 3);
	frame(&in, H2_DATA, H2_FLAG_PADDED, 3, pd, 10); /* 1 + 5 + 4 padding */
	frame(&in, H2_DATA, 0, 5, "0123456789", 10);
	for (size_t piece = 0; piece <= 1; piece++) {
		len_conn = calloc(1, sizeof(*len_conn));
		len_log[0] = 0;
		h2_conn__init(len_conn, &len_cbs, NULL);
		h2_conn__begin(len_conn, 0, true);
		for (size_t o = 0; o < in.n; o += piece ? 1 : in.n)
			h2_conn__feed(len_conn, 0, in.b + o, piece ? 1 : in.n, 0);
		CHECK(!strcmp(len_log, "1/3;3/5;5/10;"), "%s", len_log);
		h2_conn__free(len_conn);
		free(len_conn);
	}
}

int main(void)
{
	struct buf in = { .n = 0 };
	uint8_t hb[512];
	size_t hn;
	struct events e;

	/* A client stream with every frame type. */
	raw(&in, H2_PREFACE, H2_PREFACE_LEN);
	uint8_t settings[12] = { 0, 1, 0, 0, 0x10, 0, 0, 5, 0, 0, 0x40, 0 };
	frame(&in, H2_SETTINGS, 0, 0, settings, sizeof(settings));
	frame(&in, H2_SETTINGS, H2_FLAG_ACK, 0, NULL, 0);
	uint8_t wu[4] = { 0, 0, 0x10, 0 };
	frame(&in, H2_WINDOW_UPDATE, 0, 0, wu, 4);
	/* HEADERS with PADDED and PRIORITY: pad length 3, 5 priority bytes, block, padding */
	hn = 0;
	hb[hn++] = 3;
	memcpy(hb + hn, "\x00\x00\x00\x00\x10", 5);
	hn += 5;
	hb[hn++] = 0x83; /* :method POST */
	hn += h2w_lit(hb + hn, ":path", "/a");
	memset(hb + hn, 0, 3);
	hn += 3;
	frame(&in, H2_HEADERS, H2_FLAG_PADDED | H2_FLAG_PRIORITY, 1, hb, hn);
	/* CONTINUATION finishing the block */
	hn = h2w_lit(hb, "x-one", "1");
	frame(&in, H2_CONTINUATION, H2_FLAG_END_HEADERS, 1, hb, hn);
	uint8_t prio[5] = { 0, 0, 0, 0, 7 };
	frame(&in, H2_PRIORITY, 0, 3, prio, 5);
	/* padded DATA with END_STREAM */
	uint8_t pd[16] = { 4, 'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0 };
	frame(&in, H2_DATA, H2_FLAG_PADDED | H2_FLAG_END_STREAM, 1, pd, 10);
	uint8_t ping[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	frame(&in, H2_PING, 0, 0, ping, 8);
	/* PUSH_PROMISE (promised id 2): its headers are decoded but not reported as a stream head */
	hn = 0;
	memcpy(hb, "\x00\x00\x00\x02", 4);
	hn = 4 + h2w_lit(hb + 4, ":path", "/pushed");
	frame(&in, H2_PUSH_PROMISE, H2_FLAG_END_HEADERS, 1, hb, hn);
	/* an unknown extension frame is skipped */
	frame(&in, 0x0c, 0, 0, "origin", 6);
	frame(&in, H2_DATA, 0, 5, "abc", 3);
	uint8_t rst[4] = { 0, 0, 0, 8 };
	frame(&in, H2_RST_STREAM, 0, 5, rst, 4);
	uint8_t ga[12] = { 0, 0, 0, 5, 0, 0, 0, 0, 'b', 'y', 'e', '!' };
	frame(&in, H2_GOAWAY, 0, 0, ga, sizeof(ga));

	const char *want = "H0/1 :method=POST;H0/1 :path=/a;H0/1 x-one=1;E0/1;D0/1 hello;Z0/1;"
			   "H0/1 :path=/pushed;D0/5 abc;R0/5=8;G0/5=0;";
	static const size_t pieces[] = { 0, 1, 2, 3, 9, 10, 64 };
	for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
		run(&in, pieces[p], true, &e, 0, 0);
		CHECK(!strcmp(e.log, want), "piece %zu:\n got %s\nwant %s", pieces[p], e.log, want);
	}

	/* Mid-connection: garbage (the tail of an earlier frame), then frames. */
	struct buf mid = { .n = 0 };
	raw(&mid, "\x17\x99garbage bytes of some DATA\xff\x00\x01", 31);
	frame(&mid, H2_DATA, 0, 7, "tail", 4);
	hn = 0;
	hb[hn++] = 0xbe; /* dynamic index 62: inserted before capture */
	hb[hn++] = 0x88; /* :status 200 */
	frame(&mid, H2_HEADERS, H2_FLAG_END_HEADERS, 9, hb, hn);
	frame(&mid, H2_DATA, H2_FLAG_END_STREAM, 9, "ok", 2);
	for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
		run(&mid, pieces[p], false, &e, 0, 0);
		CHECK(!strcmp(e.log, "D0/7 tail;H0/9 =?;H0/9 :status=200;E0/9;D0/9 ok;Z0/9;"),
		      "mid piece %zu: %s", pieces[p], e.log);
	}

	/* The resync buffer is given back once in step. */
	run(&mid, 0, BEGIN_RESYNC, &e, 0, 0);
	CHECK_INT(last_rcap, 0);

	/* Mid-connection at a frame boundary (the first write a tracer saw): read from the first
	 * byte, with no follower needed, and unknown dynamic entries tolerated. */
	struct buf at = { .n = 0 };
	hn = 0;
	hb[hn++] = 0xbe; /* dynamic index 62: inserted before capture */
	hb[hn++] = 0x83; /* :method POST */
	hn += h2w_lit(hb + hn, ":path", "/api/v1/namespaces/default/pods/p/binding");
	frame(&at, H2_HEADERS, H2_FLAG_END_HEADERS, 67, hb, hn);
	for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
		run(&at, pieces[p], BEGIN_AT_FRAME, &e, 0, 0);
		CHECK_STR(e.log, "H0/67 =?;H0/67 :method=POST;"
				 "H0/67 :path=/api/v1/namespaces/default/pods/p/binding;E0/67;");
		/* The same bytes taken as the connection's start: an unknown entry is an error. */
		run(&at, pieces[p], BEGIN_START, &e, 0, 0);
		CHECK_STR(e.log, "E0/67x;");
	}
	/* ...and when the first bytes are not a frame after all, it resyncs. */
	for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
		run(&mid, pieces[p], BEGIN_AT_FRAME, &e, 0, 0);
		CHECK(strstr(e.log, "H0/9 =?;H0/9 :status=200;E0/9;D0/9 ok;Z0/9;") != NULL,
		      "at frame, then resync, piece %zu: %s", pieces[p], e.log);
	}

	/* Garbage without any frame: the resync buffer stays at its cap. */
	static struct buf junk;
	junk.n = 0;
	for (size_t i = 0; i < sizeof(junk.b); i++)
		junk.b[junk.n++] = (uint8_t)(0xff - (i & 0x3f));
	{
		struct h2_conn *c = calloc(1, sizeof(*c));
		h2_conn__init(c, &cbs, &e);
		h2_conn__begin(c, 0, false);
		for (int i = 0; i < 40; i++)
			h2_conn__feed(c, 0, junk.b, junk.n, 0);
		CHECK(c->dir[0].rcap <= H2_RESYNC_BUFFER && c->dir[0].rlen <= c->dir[0].rcap,
		      "rcap %u rlen %u", c->dir[0].rcap, c->dir[0].rlen);
		h2_conn__free(c);
		free(c);
	}

	test_data_frame_len();

	/* A gap inside a DATA payload keeps frame boundaries; a gap across frames resyncs. */
	struct buf g = { .n = 0 };
	frame(&g, H2_DATA, 0, 1, "0123456789", 10);
	frame(&g, H2_DATA, H2_FLAG_END_STREAM, 3, "xyz", 3);
	frame(&g, H2_DATA, 0, 5, "after", 5);
	frame(&g, H2_DATA, 0, 7, "more", 4);
	run(&g, 0, true, &e, 12, 4); /* 3 payload bytes of stream 1 lost */
	CHECK(!strcmp(e.log, "D0/1 012;L0/1;D0/1 789;D0/3 xyz;Z0/3;D0/5 after;D0/7 more;"),
	      "gap in payload: %s", e.log);
	run(&g, 0, true, &e, 12, 12); /* runs into the next frame's header */
	CHECK(strstr(e.log, "L0/0;") && strstr(e.log, "D0/5 after;D0/7 more;"), "gap across: %s",
	      e.log);
	run(&g, 1, true, &e, 12, 12);
	CHECK(strstr(e.log, "D0/5 after;D0/7 more;") != NULL, "gap across, bytewise: %s", e.log);

	/* Plausibility */
	uint8_t h[9] = { 0, 0, 8, H2_PING, 0, 0, 0, 0, 0 };
	CHECK(h2__plausible_frame_header(h, 0), "ping");
	h[2] = 7;
	CHECK(!h2__plausible_frame_header(h, 0), "ping of 7 bytes");
	uint8_t d[9] = { 0, 0, 1, H2_DATA, 0x2, 0, 0, 0, 1 };
	CHECK(!h2__plausible_frame_header(d, 0), "DATA with undefined flag");
	return check_summary("h2");
}
