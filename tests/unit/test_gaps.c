/* Gaps are computed in one place, stream_pos__advance: checked against a table of chunk
 * sequences, then through its two users, a capture stream (numbered from 0 at first sight) and a
 * connection decoder (met mid-way unless told its offsets count from 0), which reports each gap
 * to its caller as the return of conn_decoder__feed. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "decode.h"
#include "streams.h"

struct chunk {
	uint64_t offset, len;
	uint64_t missed, seen; /* expected */
};

static const struct {
	const char *name;
	bool from_zero;
	struct chunk chunks[5];
	int n;
} cases[] = {
	{ "in order", true, { { 0, 10, 0, 0 }, { 10, 5, 0, 0 }, { 15, 1, 0, 0 } }, 3 },
	{ "first past 0, counted from 0", true, { { 7, 3, 7, 0 }, { 10, 2, 0, 0 } }, 2 },
	{ "first past 0, met mid-way", false, { { 7, 3, 0, 0 }, { 10, 2, 0, 0 } }, 2 },
	{ "a jump", true, { { 0, 10, 0, 0 }, { 25, 5, 15, 0 }, { 30, 1, 0, 0 } }, 3 },
	{ "sent again", true, { { 0, 10, 0, 0 }, { 0, 10, 0, 10 }, { 10, 4, 0, 0 } }, 3 },
	{ "overlapping", true, { { 0, 10, 0, 0 }, { 6, 10, 0, 4 }, { 16, 1, 0, 0 } }, 3 },
	{ "behind and short", true, { { 0, 10, 0, 0 }, { 2, 3, 0, 3 }, { 10, 1, 0, 0 } }, 3 },
	{ "empty chunks", true, { { 0, 0, 0, 0 }, { 4, 0, 4, 0 }, { 4, 2, 0, 0 } }, 3 },
};

static void check_positions(void)
{
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct stream_pos pos = { .started = cases[c].from_zero };

		for (int i = 0; i < cases[c].n; i++) {
			const struct chunk *k = &cases[c].chunks[i];
			uint64_t seen = 99,
				 missed = stream_pos__advance(&pos, k->offset, k->len, &seen);

			CHECK(missed == k->missed && seen == k->seen,
			      "%s, chunk %d: missed %llu seen %llu, want %llu %llu", cases[c].name,
			      i, (unsigned long long)missed, (unsigned long long)seen,
			      (unsigned long long)k->missed, (unsigned long long)k->seen);
		}
	}
}

static void count(const struct decoded_msg *m, void *ctx)
{
	(void)m;
	(*(int *)ctx)++;
}

/* The same sequences through a decoder: what feed returns is what the position said, and the
 * decoder's statistics add up to it. */
static void check_decoder(void)
{
	static const uint8_t bytes[64];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		int msgs = 0;
		struct conn_decoder *d = conn_decoder__new(count, &msgs);
		struct conn_decoder_stats st;
		uint64_t lost = 0, gaps = 0;

		if (cases[c].from_zero)
			conn_decoder__offsets_from_zero(d);
		for (int i = 0; i < cases[c].n; i++) {
			const struct chunk *k = &cases[c].chunks[i];
			int64_t missed = conn_decoder__feed(d, 1, k->offset, bytes, k->len, 1);

			CHECK(missed == (int64_t)k->missed, "%s, chunk %d: feed says %lld missed",
			      cases[c].name, i, (long long)missed);
			lost += k->missed;
			gaps += k->missed != 0;
		}
		conn_decoder__stats(d, &st);
		CHECK(st.gaps == gaps && st.bytes_lost == lost, "%s: %llu gaps, %llu bytes lost",
		      cases[c].name, (unsigned long long)st.gaps,
		      (unsigned long long)st.bytes_lost);
		conn_decoder__free(d);
	}
}

/* A capture stream starts at 0; a gap the caller reports moves the decoder on, so the chunk
 * after it continues the stream. */
static void check_users(void)
{
	struct streams t;
	struct stream *s;
	struct conn_decoder *d;
	int msgs = 0;

	CHECK_INT(streams__init(&t, 16), 0);
	s = streams__get(&t, 1, 2, 0);
	CHECK(s && stream__advance(s, 5, 5) == 5, "a capture stream counts from 0");
	CHECK(s && stream__advance(s, 10, 5) == 0 && s->gaps == 1 && s->gap_bytes == 5,
	      "and continues");
	streams__free(&t);
	d = conn_decoder__new(count, &msgs);
	CHECK_INT(conn_decoder__gap(d, 0, 100), 0);
	CHECK(conn_decoder__feed(d, 0, 100, "x", 1, 1) == 0, "a reported gap is not found again");
	CHECK(conn_decoder__feed(d, 0, 90, "x", 1, 1) == 0, "behind: nothing missed");
	CHECK(conn_decoder__feed(NULL, 0, 0, "x", 1, 1) == -EINVAL, "no decoder");
	conn_decoder__free(d);
}

int main(void)
{
	check_positions();
	check_decoder();
	check_users();
	return check_summary("gaps");
}
