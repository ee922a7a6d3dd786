/* HTTP/2 framing (RFC 9113) for a tracer: both directions of one connection, every frame type,
 * CONTINUATION, padding, SETTINGS, with or without the client preface. It does not keep stream
 * state beyond the header block being assembled; it reports headers (through the tolerant HPACK
 * decoder), DATA payload pieces as they arrive, and stream ends, resets and GOAWAY, to a
 * caller's callbacks. When capture starts mid-connection, or bytes are lost, it scans for a frame
 * boundary (a plausible frame header followed by another) and goes on from there. */
#ifndef BINDTRACE_H2_H
#define BINDTRACE_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpack.h"

#define H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN 24
#define H2_FRAME_HEADER_LEN 9
/* Largest header block (HEADERS + CONTINUATIONs) we assemble; larger ones are skipped. */
#define H2_MAX_HEADER_BLOCK (64u * 1024)
/* Largest non-DATA payload we keep (SETTINGS, GOAWAY...); the rest of one is skipped. Enough
 * for 42 SETTINGS parameters (peers send under 10) and GOAWAY's ids and error code. */
#define H2_MAX_CONTROL_PAYLOAD 256
/* Bytes kept while looking for a frame boundary; the buffer grows to this from
 * H2_RESYNC_BUFFER_MIN and is given back once in step again. */
#define H2_RESYNC_BUFFER (64u * 1024)
#define H2_RESYNC_BUFFER_MIN 4096u
/* Frames longer than this are not believed while resynchronising (SETTINGS_MAX_FRAME_SIZE of Go
 * servers and clients stays well under it). */
#define H2_RESYNC_MAX_FRAME (1u << 20)
#define H2_RESYNC_PENDING 16

enum h2_frame_type {
	H2_DATA = 0,
	H2_HEADERS = 1,
	H2_PRIORITY = 2,
	H2_RST_STREAM = 3,
	H2_SETTINGS = 4,
	H2_PUSH_PROMISE = 5,
	H2_PING = 6,
	H2_GOAWAY = 7,
	H2_WINDOW_UPDATE = 8,
	H2_CONTINUATION = 9,
};

enum h2_flags {
	H2_FLAG_END_STREAM = 0x1,
	H2_FLAG_ACK = 0x1,
	H2_FLAG_END_HEADERS = 0x4,
	H2_FLAG_PADDED = 0x8,
	H2_FLAG_PRIORITY = 0x20,
};

enum h2_dir_state {
	H2_DIR_START = 0, /* nothing seen: a preface, a frame at offset 0, or resync */
	H2_DIR_PREFACE,	  /* inside the client preface */
	H2_DIR_FRAME_HEADER,
	H2_DIR_PAYLOAD,
	H2_DIR_RESYNC, /* looking for a frame boundary */
};

struct h2_callbacks {
	/* One decoded header of the block on stream_id (pseudo-headers included). */
	void (*on_header)(void *ctx, int dir, uint32_t stream_id, const struct hpack_header *h);
	/* The block is complete. damaged: HPACK failed part way (headers seen so far were
	 * reported). push: a PUSH_PROMISE block (promised stream). */
	void (*on_headers_end)(void *ctx, int dir, uint32_t stream_id, bool end_stream,
			       bool damaged, uint64_t ts_first, uint64_t ts_last);
	/* DATA payload without padding. frame_start: these are the first bytes of a frame. */
	void (*on_data)(void *ctx, int dir, uint32_t stream_id, const uint8_t *data, size_t len,
			bool frame_start, uint64_t ts_first, uint64_t ts);
	/* END_STREAM seen (after the DATA or headers that carried it). */
	void (*on_end_stream)(void *ctx, int dir, uint32_t stream_id, uint64_t ts);
	void (*on_rst_stream)(void *ctx, int dir, uint32_t stream_id, uint32_t error_code,
			      uint64_t ts);
	void (*on_goaway)(void *ctx, int dir, uint32_t last_stream_id, uint32_t error_code,
			  uint64_t ts);
	/* Bytes of this direction were lost: data of stream_id (0: of every open stream) is
	 * incomplete. */
	void (*on_lost)(void *ctx, int dir, uint32_t stream_id);
};

struct h2_dir {
	enum h2_dir_state state;
	uint32_t preface_got;
	uint8_t hdr[H2_FRAME_HEADER_LEN];
	uint32_t hdr_got;
	/* the frame being read */
	uint32_t len;
	uint8_t type;
	uint8_t flags;
	uint32_t stream_id;
	uint32_t payload_got;
	uint8_t pad_len;
	uint64_t frame_ts;
	bool data_started;
	/* control frame payload */
	uint8_t control[H2_MAX_CONTROL_PAYLOAD];
	uint32_t control_len;
	/* header block assembly */
	uint8_t *block;
	uint32_t block_len;
	uint32_t block_cap;
	uint32_t block_stream;
	bool block_end_stream;
	bool block_overflow;
	bool in_block;
	bool block_push;
	uint64_t block_ts;
	/* resync */
	uint8_t *rbuf;
	uint32_t rcap;
	uint32_t rlen;
	uint32_t rscan;			     /* next position never looked at */
	uint32_t pending[H2_RESYNC_PENDING]; /* candidates awaiting their follower */
	uint32_t npending;
	uint32_t max_frame; /* from the peer's SETTINGS_MAX_FRAME_SIZE, 0 = default */
	struct hpack_decoder hpack;
	/* counters */
	uint64_t frames;
	uint64_t resyncs;
	uint64_t bytes_skipped;
	bool client; /* sent the preface or requests */
};

struct h2_conn {
	struct h2_dir dir[2];
	const struct h2_callbacks *cb;
	void *ctx;
};

/* Zero-initialise, then init. */
void h2_conn__init(struct h2_conn *c, const struct h2_callbacks *cb, void *ctx);
/* How a direction begins: at offset 0 of the connection (a preface or frames from the very
 * start; HPACK strict) or somewhere in the middle (resync; HPACK tolerant). */
void h2_conn__begin(struct h2_conn *c, int dir, bool from_start);
/* A direction that begins mid-connection but at a frame boundary (the first bytes a tracer saw
 * of a connection opened before it attached are those of a whole write): frames are read from
 * the first byte, HPACK is tolerant. A first header that is not believable still resyncs. */
void h2_conn__begin_at_frame(struct h2_conn *c, int dir);
void h2_conn__feed(struct h2_conn *c, int dir, const uint8_t *buf, size_t len, uint64_t ts);
/* missing bytes were not captured. */
void h2_conn__lose(struct h2_conn *c, int dir, uint64_t missing);
void h2_conn__free(struct h2_conn *c);
/* Inside on_data: the content length (payload less padding) of the DATA frame being read. */
uint32_t h2_conn__data_frame_len(const struct h2_conn *c, int dir);
/* Bytes the connection holds on the heap (header blocks, resync buffers, HPACK tables). */
size_t h2_conn__heap_bytes(const struct h2_conn *c);

/* Is buf (at least 9 bytes) a believable frame header? Exposed for protocol detection. */
bool h2__plausible_frame_header(const uint8_t *buf, uint32_t max_frame);
/* Does buf look like HTTP/2 frames: a plausible header followed by another (or the end)? */
bool h2__looks_like_frames(const uint8_t *buf, size_t len);

const char *h2_frame_type__name(uint8_t type);

#endif
