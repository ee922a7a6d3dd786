/* HTTP/2 frame layer. Bytes arrive in arbitrary pieces; a small state machine per direction reads
 * frame headers, hands DATA through without copying, and assembles header blocks for HPACK.
 * Anything implausible sends the direction into resync, which never gives up: it keeps scanning
 * the bytes that follow for two consecutive believable frame headers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "h2.h"

static uint32_t be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

const char *h2_frame_type__name(uint8_t type)
{
	static const char *const names[] = { "DATA",	    "HEADERS",	"PRIORITY",
					     "RST_STREAM",  "SETTINGS", "PUSH_PROMISE",
					     "PING",	    "GOAWAY",	"WINDOW_UPDATE",
					     "CONTINUATION" };
	return type < 10 ? names[type] : "UNKNOWN";
}

bool h2__plausible_frame_header(const uint8_t *h, uint32_t max_frame)
{
	uint32_t len = be24(h);
	uint8_t type = h[3], flags = h[4];
	uint32_t sid_raw = be32(h + 5);
	uint32_t sid = sid_raw & 0x7fffffff;
	static const uint8_t allowed_flags[10] = { 0x09, 0x2d, 0x00, 0x00, 0x01,
						   0x0c, 0x01, 0x00, 0x00, 0x04 };

	if (sid_raw & 0x80000000u)
		return false;
	if (len > (max_frame ? max_frame : H2_RESYNC_MAX_FRAME))
		return false;
	if (type > 9)
		return false;
	if (flags & ~allowed_flags[type])
		return false;
	switch (type) {
	case H2_DATA:
	case H2_HEADERS:
	case H2_CONTINUATION:
	case H2_PUSH_PROMISE:
		return sid != 0;
	case H2_PRIORITY:
		return sid != 0 && len == 5;
	case H2_RST_STREAM:
		return sid != 0 && len == 4;
	case H2_SETTINGS:
		return sid == 0 && len % 6 == 0 && (!(flags & H2_FLAG_ACK) || len == 0);
	case H2_PING:
		return sid == 0 && len == 8;
	case H2_GOAWAY:
		return sid == 0 && len >= 8;
	case H2_WINDOW_UPDATE:
		return len == 4;
	}
	return false;
}

bool h2__looks_like_frames(const uint8_t *buf, size_t len)
{
	if (len < H2_FRAME_HEADER_LEN || !h2__plausible_frame_header(buf, 0))
		return false;
	size_t next = H2_FRAME_HEADER_LEN + be24(buf);
	if (buf[3] == H2_CONTINUATION)
		return false;
	if (next == len)
		return true;
	if (next + H2_FRAME_HEADER_LEN > len)
		return next > len; /* the frame runs past what we have: believe it */
	return h2__plausible_frame_header(buf + next, 0);
}

void h2_conn__init(struct h2_conn *c, const struct h2_callbacks *cb, void *ctx)
{
	c->cb = cb;
	c->ctx = ctx;
	for (int d = 0; d < 2; d++) {
		c->dir[d].state = H2_DIR_START;
		hpack_decoder__reset(&c->dir[d].hpack, false);
	}
}

void h2_conn__begin(struct h2_conn *c, int dir, bool from_start)
{
	struct h2_dir *d = &c->dir[dir];

	hpack_decoder__reset(&d->hpack, from_start);
	d->state = from_start ? H2_DIR_START : H2_DIR_RESYNC;
}

void h2_conn__begin_at_frame(struct h2_conn *c, int dir)
{
	struct h2_dir *d = &c->dir[dir];

	hpack_decoder__reset(&d->hpack, false);
	d->state = H2_DIR_FRAME_HEADER;
	d->hdr_got = 0;
}

void h2_conn__free(struct h2_conn *c)
{
	for (int d = 0; d < 2; d++) {
		free(c->dir[d].block);
		free(c->dir[d].rbuf);
		c->dir[d].block = NULL;
		c->dir[d].block_cap = 0;
		c->dir[d].rbuf = NULL;
		c->dir[d].rcap = 0;
		hpack_decoder__free(&c->dir[d].hpack);
	}
}

size_t h2_conn__heap_bytes(const struct h2_conn *c)
{
	size_t n = 0;

	for (int d = 0; d < 2; d++)
		n += c->dir[d].block_cap + c->dir[d].rcap +
		     hpack_decoder__heap_bytes(&c->dir[d].hpack);
	return n;
}

/* Makes room in the resync buffer for n more bytes, growing it up to H2_RESYNC_BUFFER. Returns
 * the room there is, which may be less than n (none when memory is short). */
static uint32_t rbuf_reserve(struct h2_dir *d, size_t n)
{
	if (d->rcap - d->rlen < n && d->rcap < H2_RESYNC_BUFFER) {
		uint32_t cap = d->rcap ? d->rcap : H2_RESYNC_BUFFER_MIN;
		while (cap < H2_RESYNC_BUFFER && cap - d->rlen < n)
			cap *= 2;
		if (cap > H2_RESYNC_BUFFER)
			cap = H2_RESYNC_BUFFER;
		uint8_t *nb = realloc(d->rbuf, cap);
		if (nb) {
			d->rbuf = nb;
			d->rcap = cap;
		}
	}
	return d->rcap - d->rlen;
}

/* In step again: the resync buffer goes back. */
static void rbuf_release(struct h2_dir *d)
{
	free(d->rbuf);
	d->rbuf = NULL;
	d->rcap = 0;
	d->rlen = 0;
	d->rscan = 0;
	d->npending = 0;
}

/* A header block buffer larger than this is given back once used: none is kept, so an idle
 * connection holds no block buffer (a malloc per header block). */
#define H2_KEEP_BLOCK 0u

static void drop_block(struct h2_dir *d)
{
	d->in_block = false;
	d->block_len = 0;
	d->block_overflow = false;
	if (d->block_cap > H2_KEEP_BLOCK) {
		free(d->block);
		d->block = NULL;
		d->block_cap = 0;
	}
}

/* Switches a direction to resync. The caller puts the bytes to scan into rbuf. */
static void enter_resync(struct h2_conn *c, int dir)
{
	struct h2_dir *d = &c->dir[dir];

	if (d->state != H2_DIR_RESYNC)
		d->resyncs++;
	d->state = H2_DIR_RESYNC;
	d->hdr_got = 0;
	d->npending = 0;
	/* A header block may have been lost: the encoder's table moved on without us. */
	if (d->in_block)
		drop_block(d);
	hpack_decoder__forget(&d->hpack);
	if (c->cb->on_lost)
		c->cb->on_lost(c->ctx, dir, 0);
}

static void header_cb_forward(struct h2_conn *c, int dir, uint32_t sid,
			      const struct hpack_header *h);

struct hcb_ctx {
	struct h2_conn *c;
	int dir;
	uint32_t sid;
};

static int hpack_cb(const struct hpack_header *h, void *ctx)
{
	struct hcb_ctx *x = ctx;
	header_cb_forward(x->c, x->dir, x->sid, h);
	return 0;
}

static void header_cb_forward(struct h2_conn *c, int dir, uint32_t sid,
			      const struct hpack_header *h)
{
	if (c->cb->on_header)
		c->cb->on_header(c->ctx, dir, sid, h);
}

static void finish_block(struct h2_conn *c, int dir, uint64_t ts)
{
	struct h2_dir *d = &c->dir[dir];
	bool damaged = d->block_overflow;

	if (!d->block_overflow) {
		struct hcb_ctx x = { c, dir, d->block_stream };
		if (hpack_decoder__decode(&d->hpack, d->block, d->block_len, hpack_cb, &x)) {
			damaged = true;
			hpack_decoder__forget(&d->hpack);
		}
	} else {
		hpack_decoder__forget(&d->hpack);
	}
	if (!d->block_push) {
		if (c->cb->on_headers_end)
			c->cb->on_headers_end(c->ctx, dir, d->block_stream, d->block_end_stream,
					      damaged, d->block_ts, ts);
		if (d->block_end_stream && c->cb->on_end_stream)
			c->cb->on_end_stream(c->ctx, dir, d->block_stream, ts);
	}
	drop_block(d);
}

static void block_append(struct h2_dir *d, const uint8_t *p, size_t n)
{
	if (d->block_overflow)
		return;
	if (d->block_len + n > H2_MAX_HEADER_BLOCK) {
		d->block_overflow = true;
		return;
	}
	if (d->block_len + n > d->block_cap) {
		uint32_t cap = d->block_cap ? d->block_cap : 1024;
		while (cap < d->block_len + n)
			cap *= 2;
		uint8_t *nb = realloc(d->block, cap);
		if (!nb) {
			d->block_overflow = true;
			return;
		}
		d->block = nb;
		d->block_cap = cap;
	}
	memcpy(d->block + d->block_len, p, n);
	d->block_len += (uint32_t)n;
}

/* A complete non-DATA frame whose payload (up to the control cap) is in d->control, or, for
 * header-carrying frames, whose fragment went to the block. */
static void process_frame(struct h2_conn *c, int dir, uint64_t ts)
{
	struct h2_dir *d = &c->dir[dir];
	struct h2_dir *other = &c->dir[!dir];
	const uint8_t *p = d->control;

	switch (d->type) {
	case H2_HEADERS:
	case H2_PUSH_PROMISE:
	case H2_CONTINUATION:
		if (d->flags & H2_FLAG_END_HEADERS)
			finish_block(c, dir, ts);
		break;
	case H2_RST_STREAM:
		if (d->control_len >= 4 && c->cb->on_rst_stream)
			c->cb->on_rst_stream(c->ctx, dir, d->stream_id, be32(p), ts);
		break;
	case H2_SETTINGS:
		if (d->flags & H2_FLAG_ACK)
			break;
		for (uint32_t i = 0; i + 6 <= d->control_len; i += 6) {
			uint16_t id = (uint16_t)(p[i] << 8 | p[i + 1]);
			uint32_t v = be32(p + i + 2);
			if (id == 0x1)
				hpack_decoder__set_settings_size(&other->hpack, v);
			else if (id == 0x5 && v >= 16384 && v <= 0xffffff)
				other->max_frame = v;
		}
		break;
	case H2_GOAWAY:
		if (d->control_len >= 8 && c->cb->on_goaway)
			c->cb->on_goaway(c->ctx, dir, be32(p) & 0x7fffffff, be32(p + 4), ts);
		break;
	default:
		break;
	}
}

/* Starts the frame whose header is in d->hdr. Returns false when it is not believable. */
static bool start_frame(struct h2_conn *c, int dir)
{
	struct h2_dir *d = &c->dir[dir];
	const uint8_t *h = d->hdr;

	d->len = be24(h);
	d->type = h[3];
	d->flags = h[4];
	d->stream_id = be32(h + 5) & 0x7fffffff;
	d->payload_got = 0;
	d->pad_len = 0;
	d->control_len = 0;
	d->data_started = false;
	/* Extension frame types (ALTSVC, ORIGIN, PRIORITY_UPDATE...) are skipped, not feared. */
	if (d->type >= 10 && d->type <= 16 && d->len <= H2_RESYNC_MAX_FRAME)
		return true;
	if (!h2__plausible_frame_header(h, d->max_frame > H2_RESYNC_MAX_FRAME ? d->max_frame : 0))
		return false;
	if (d->in_block && (d->type != H2_CONTINUATION || d->stream_id != d->block_stream))
		return false;
	if (!d->in_block && d->type == H2_CONTINUATION)
		return false;
	if (d->type == H2_HEADERS || d->type == H2_PUSH_PROMISE) {
		drop_block(d);
		d->in_block = true;
		d->block_stream = d->stream_id;
		d->block_end_stream = d->type == H2_HEADERS && (d->flags & H2_FLAG_END_STREAM);
		d->block_push = d->type == H2_PUSH_PROMISE;
		d->block_ts = d->frame_ts;
	}
	return true;
}

/* Bytes of payload before the data/fragment (pad length, priority, promised id). */
static uint32_t payload_prefix(const struct h2_dir *d)
{
	uint32_t n = 0;
	if ((d->type == H2_DATA || d->type == H2_HEADERS || d->type == H2_PUSH_PROMISE) &&
	    (d->flags & H2_FLAG_PADDED))
		n = 1;
	if (d->type == H2_HEADERS && (d->flags & H2_FLAG_PRIORITY))
		n += 5;
	if (d->type == H2_PUSH_PROMISE)
		n += 4;
	return n;
}

/* A frame's last payload byte (or its header, when it has none) is in: DATA ends its stream if
 * it says so, any other frame is acted on; then the next frame's header is awaited. */
static void frame_end(struct h2_conn *c, int dir, uint64_t ts)
{
	struct h2_dir *d = &c->dir[dir];

	d->state = H2_DIR_FRAME_HEADER;
	if (d->type == H2_DATA) {
		if ((d->flags & H2_FLAG_END_STREAM) && c->cb->on_end_stream)
			c->cb->on_end_stream(c->ctx, dir, d->stream_id, ts);
	} else {
		process_frame(c, dir, ts);
	}
}

/* Feeds bytes while in step with the frames. Returns how many it consumed: all of them, or up to
 * and including a frame header it could not believe, after which the direction is in resync. */
static size_t feed_sync(struct h2_conn *c, int dir, const uint8_t *buf, size_t len, uint64_t ts,
			bool replay)
{
	struct h2_dir *d = &c->dir[dir];
	const uint8_t *start = buf;

	while (len) {
		switch (d->state) {
		case H2_DIR_START:
			if (buf[0] == 'P') {
				d->state = H2_DIR_PREFACE;
				d->preface_got = 0;
				d->client = true;
			} else {
				d->state = H2_DIR_FRAME_HEADER;
				d->hdr_got = 0;
			}
			break;
		case H2_DIR_PREFACE: {
			size_t n = H2_PREFACE_LEN - d->preface_got;
			if (n > len)
				n = len;
			if (memcmp(buf, &H2_PREFACE[d->preface_got], n)) {
				enter_resync(c, dir);
				if (replay)
					return (size_t)(buf - start);
				d->rlen = 0;
				d->rscan = 0;
				return (size_t)(buf - start);
			}
			d->preface_got += (uint32_t)n;
			buf += n;
			len -= n;
			if (d->preface_got == H2_PREFACE_LEN) {
				d->state = H2_DIR_FRAME_HEADER;
				d->hdr_got = 0;
			}
			break;
		}
		case H2_DIR_FRAME_HEADER: {
			if (!d->hdr_got)
				d->frame_ts = ts;
			size_t n = H2_FRAME_HEADER_LEN - d->hdr_got;
			if (n > len)
				n = len;
			memcpy(d->hdr + d->hdr_got, buf, n);
			d->hdr_got += (uint32_t)n;
			buf += n;
			len -= n;
			if (d->hdr_got < H2_FRAME_HEADER_LEN)
				break;
			d->hdr_got = 0;
			if (!start_frame(c, dir)) {
				/* Scan again from the byte after this header's first. */
				uint8_t hdr[H2_FRAME_HEADER_LEN];
				memcpy(hdr, d->hdr, sizeof(hdr));
				enter_resync(c, dir);
				if (replay)
					return (size_t)(buf - start);
				d->rlen = 0;
				d->rscan = 0;
				if (rbuf_reserve(d, sizeof(hdr) - 1) >= sizeof(hdr) - 1) {
					memcpy(d->rbuf, hdr + 1, sizeof(hdr) - 1);
					d->rlen = sizeof(hdr) - 1;
				}
				return (size_t)(buf - start);
			}
			d->frames++;
			d->state = H2_DIR_PAYLOAD;
			if (d->len == 0)
				frame_end(c, dir, ts);
			break;
		}
		case H2_DIR_PAYLOAD: {
			size_t n = d->len - d->payload_got;
			if (n > len)
				n = len;
			uint32_t prefix = payload_prefix(d);
			/* Walk the piece: prefix bytes, then content, then padding. */
			size_t i = 0;
			while (i < n) {
				uint32_t at = d->payload_got + (uint32_t)i;
				if (at < prefix) {
					if (at == 0 && (d->flags & H2_FLAG_PADDED))
						d->pad_len = buf[i];
					i++;
					continue;
				}
				if (d->pad_len + prefix > d->len)
					break; /* padding longer than the frame: skip it all */
				uint32_t content_end = d->len - d->pad_len;
				if (at >= content_end)
					break;
				size_t m = content_end - at;
				if (m > n - i)
					m = n - i;
				if (d->type == H2_DATA) {
					if (c->cb->on_data)
						c->cb->on_data(c->ctx, dir, d->stream_id, buf + i,
							       m, !d->data_started, d->frame_ts,
							       ts);
					d->data_started = true;
				} else if (d->type == H2_HEADERS || d->type == H2_CONTINUATION ||
					   d->type == H2_PUSH_PROMISE) {
					block_append(d, buf + i, m);
				} else {
					size_t room = H2_MAX_CONTROL_PAYLOAD - d->control_len;
					size_t k = m < room ? m : room;
					memcpy(d->control + d->control_len, buf + i, k);
					d->control_len += (uint32_t)k;
				}
				i += m;
			}
			d->payload_got += (uint32_t)n;
			buf += n;
			len -= n;
			if (d->payload_got == d->len)
				frame_end(c, dir, ts);
			break;
		}
		case H2_DIR_RESYNC:
			return (size_t)(buf - start);
		}
	}
	return (size_t)(buf - start);
}

/* Is the candidate at pos (a believable header) confirmed by the header after its frame?
 * 1 yes, 0 no, -1 not known yet (the next header lies past what is buffered). */
static int candidate_check(const struct h2_dir *d, uint32_t pos)
{
	const uint8_t *p = d->rbuf + pos;
	uint64_t next = (uint64_t)pos + H2_FRAME_HEADER_LEN + be24(p);

	if (next + H2_FRAME_HEADER_LEN > d->rlen)
		return -1;
	const uint8_t *q = d->rbuf + next;
	return h2__plausible_frame_header(q, 0) &&
	       (q[3] != H2_CONTINUATION || (p[3] == H2_HEADERS && !(p[4] & H2_FLAG_END_HEADERS)));
}

/* Replays rbuf from a confirmed boundary at s. If the replay breaks again, scanning goes on after
 * the bad header, in the same buffer, so nothing recurses and nothing is copied twice. */
static void resync_accept(struct h2_conn *c, int dir, uint32_t s, uint64_t ts)
{
	struct h2_dir *d = &c->dir[dir];
	uint32_t end = d->rlen;

	d->bytes_skipped += s;
	d->npending = 0;
	d->state = H2_DIR_FRAME_HEADER;
	d->hdr_got = 0;
	size_t n = feed_sync(c, dir, d->rbuf + s, end - s, ts, true);
	if (d->state != H2_DIR_RESYNC) {
		d->rlen = 0;
		d->rscan = 0;
		return;
	}
	d->rlen = end;
	d->rscan = s + (uint32_t)n >= H2_FRAME_HEADER_LEN - 1
		       ? s + (uint32_t)n - H2_FRAME_HEADER_LEN + 1
		       : s + 1;
	if (d->rscan <= s)
		d->rscan = s + 1;
}

/* Looks for a frame boundary: a believable frame header whose frame is followed by another.
 * Candidates whose follower is not buffered yet wait in a short list while scanning goes on, so
 * one false candidate with a long length cannot hold the scan up. */
static void resync_process(struct h2_conn *c, int dir, uint64_t ts)
{
	struct h2_dir *d = &c->dir[dir];

	while (d->state == H2_DIR_RESYNC) {
		int accept = -1;
		/* Pending candidates, oldest first. */
		for (uint32_t i = 0; i < d->npending;) {
			int r = candidate_check(d, d->pending[i]);
			if (r == 1) {
				accept = (int)d->pending[i];
				break;
			}
			if (r == 0) {
				memmove(d->pending + i, d->pending + i + 1,
					(d->npending - i - 1) * sizeof(d->pending[0]));
				d->npending--;
				continue;
			}
			i++;
		}
		while (accept < 0 && d->rscan + H2_FRAME_HEADER_LEN <= d->rlen) {
			uint32_t pos = d->rscan++;
			const uint8_t *p = d->rbuf + pos;
			if (!h2__plausible_frame_header(p, 0) || p[3] == H2_CONTINUATION)
				continue;
			int r = candidate_check(d, pos);
			if (r == 1)
				accept = (int)pos;
			else if (r < 0 && d->npending < H2_RESYNC_PENDING)
				d->pending[d->npending++] = pos;
		}
		if (accept >= 0) {
			resync_accept(c, dir, (uint32_t)accept, ts);
			continue; /* in step, or scanning on after a new break */
		}
		break;
	}
	if (d->state != H2_DIR_RESYNC || d->rlen < H2_RESYNC_BUFFER)
		return;
	/* Full: believe the oldest short pending candidate, else keep only the last half. */
	for (uint32_t i = 0; i < d->npending; i++) {
		if (be24(d->rbuf + d->pending[i]) <= 16384) {
			resync_accept(c, dir, d->pending[i], ts);
			if (d->state != H2_DIR_RESYNC)
				return;
			break;
		}
	}
	if (d->state == H2_DIR_RESYNC && d->rlen == H2_RESYNC_BUFFER) {
		uint32_t drop = d->rlen - H2_RESYNC_BUFFER / 2;
		memmove(d->rbuf, d->rbuf + drop, d->rlen - drop);
		d->rlen -= drop;
		d->rscan = d->rscan > drop ? d->rscan - drop : 0;
		uint32_t k = 0;
		for (uint32_t i = 0; i < d->npending; i++)
			if (d->pending[i] >= drop)
				d->pending[k++] = d->pending[i] - drop;
		d->npending = k;
		d->bytes_skipped += drop;
	}
}

void h2_conn__feed(struct h2_conn *c, int dir, const uint8_t *buf, size_t len, uint64_t ts)
{
	struct h2_dir *d;

	if (dir < 0 || dir > 1)
		return;
	d = &c->dir[dir];
	while (len) {
		if (d->state != H2_DIR_RESYNC) {
			size_t n = feed_sync(c, dir, buf, len, ts, false);
			buf += n;
			len -= n;
			continue;
		}
		size_t n = rbuf_reserve(d, len);
		if (!n && d->rlen) {
			/* No memory to grow: give up what is buffered rather than stall. */
			d->bytes_skipped += d->rlen;
			d->rlen = 0;
			d->rscan = 0;
			d->npending = 0;
			n = rbuf_reserve(d, len);
		}
		if (!n) {
			d->bytes_skipped += len;
			return;
		}
		if (n > len)
			n = len;
		memcpy(d->rbuf + d->rlen, buf, n);
		d->rlen += (uint32_t)n;
		buf += n;
		len -= n;
		resync_process(c, dir, ts);
		if (d->state != H2_DIR_RESYNC)
			rbuf_release(d);
	}
}

uint32_t h2_conn__data_frame_len(const struct h2_conn *c, int dir)
{
	const struct h2_dir *d = &c->dir[dir & 1];
	uint32_t prefix = payload_prefix(d);

	if (d->type != H2_DATA || prefix + d->pad_len > d->len)
		return 0;
	return d->len - prefix - d->pad_len;
}

void h2_conn__lose(struct h2_conn *c, int dir, uint64_t missing)
{
	struct h2_dir *d;

	if (dir < 0 || dir > 1 || !missing)
		return;
	d = &c->dir[dir];
	/* Inside a DATA payload that the gap does not outrun, frame boundaries stay known: skip the
	 * missing bytes and tell the stream its data is incomplete. */
	if (d->state == H2_DIR_PAYLOAD && d->type == H2_DATA && !(d->flags & H2_FLAG_PADDED) &&
	    missing <= d->len - d->payload_got) {
		d->payload_got += (uint32_t)missing;
		d->bytes_skipped += missing;
		if (c->cb->on_lost)
			c->cb->on_lost(c->ctx, dir, d->stream_id);
		if (d->payload_got == d->len) {
			d->state = H2_DIR_FRAME_HEADER;
			if ((d->flags & H2_FLAG_END_STREAM) && c->cb->on_end_stream)
				c->cb->on_end_stream(c->ctx, dir, d->stream_id, 0);
		}
		return;
	}
	d->bytes_skipped += missing;
	enter_resync(c, dir);
	d->rlen = 0;
	d->rscan = 0;
}
