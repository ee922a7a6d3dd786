/* HTTP/1.1 message parsing for both directions of one connection: request and status lines,
 * headers, bodies by Content-Length, chunked transfer coding (with trailers) or until close.
 * Like the HTTP/2 layer, it reports pieces to callbacks and keeps no bodies. Mid-connection it
 * resynchronises on a request or status line, or on a chunk header of a chunked stream (a
 * Kubernetes watch or an etcd rafthttp stream). */
#ifndef BINDTRACE_HTTP1_H
#define BINDTRACE_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP1_MAX_LINE 8192
#define HTTP1_MAX_HEADERS_BYTES (64u * 1024)
#define HTTP1_MAX_PENDING 32 /* pipelined requests whose responses are awaited */
#define HTTP1_RESYNC_BUFFER 4096

enum http1_state {
	HTTP1_START = 0, /* at the start of a message */
	HTTP1_HEADERS,
	HTTP1_BODY_LENGTH,
	HTTP1_CHUNK_SIZE,
	HTTP1_CHUNK_DATA,
	HTTP1_CHUNK_DATA_END, /* the CRLF after a chunk */
	HTTP1_TRAILERS,
	HTTP1_BODY_CLOSE, /* until the connection closes */
	HTTP1_RESYNC,
};

struct http1_start {
	bool request;
	bool resynced_body; /* found by a chunk header: a message whose start we did not see */
	const char *method; /* requests */
	const char *target;
	int status; /* responses */
	const char *reason;
	const char *request_method; /* responses: the method of the request answered */
};

struct http1_callbacks {
	void (*on_start)(void *ctx, int dir, const struct http1_start *start, uint64_t ts);
	void (*on_header)(void *ctx, int dir, const char *name, size_t name_len, const char *value,
			  size_t value_len);
	void (*on_headers_end)(void *ctx, int dir, uint64_t ts);
	void (*on_body)(void *ctx, int dir, const uint8_t *data, size_t len, uint64_t ts);
	void (*on_end)(void *ctx, int dir, uint64_t ts);
	void (*on_lost)(void *ctx, int dir);
};

struct http1_dir {
	enum http1_state state;
	char line[HTTP1_MAX_LINE];
	uint32_t line_len;
	bool line_overflow;
	uint32_t header_bytes;
	uint64_t remaining; /* body or chunk bytes left */
	bool chunked;
	bool chunk_start; /* the next body bytes begin a chunk */
	bool has_length;
	uint64_t content_length;
	bool request;
	bool no_body; /* HEAD response, 1xx, 204, 304 */
	bool client;  /* sends requests */
	bool known;   /* client or server decided */
	uint64_t messages;
	uint64_t resyncs;
	uint64_t bytes_skipped;
	uint32_t replay_depth;
	bool resync_at_start; /* rbuf begins where a read or write began: a chunk header may too */
	char rbuf[HTTP1_RESYNC_BUFFER];
	uint32_t rlen;
};

struct http1_conn {
	struct http1_dir dir[2];
	/* methods of requests awaiting responses (HEAD responses have no body) */
	char pending[HTTP1_MAX_PENDING][8];
	uint32_t pending_head, pending_count;
	const struct http1_callbacks *cb;
	void *ctx;
};

void http1_conn__init(struct http1_conn *c, const struct http1_callbacks *cb, void *ctx);
/* from_start: the direction is seen from its first byte; else resync first. */
void http1_conn__begin(struct http1_conn *c, int dir, bool from_start);
void http1_conn__feed(struct http1_conn *c, int dir, const uint8_t *buf, size_t len, uint64_t ts);
void http1_conn__lose(struct http1_conn *c, int dir, uint64_t missing);
/* The connection closed in this direction: ends a body read until close. */
void http1_conn__close(struct http1_conn *c, int dir, uint64_t ts);

/* Does buf start with an HTTP/1.x request line or status line? 1 request, 2 response, 0 no. */
int http1__sniff(const uint8_t *buf, size_t len);
/* Does buf start with a chunk of a watch stream met midway: a chunk header, then a
 * length-prefixed protobuf WatchEvent of that size or a JSON {"type":"...? 1 yes, 0 no, -1 too
 * few bytes to tell. */
int http1__watch_chunk(const uint8_t *buf, size_t len);
/* The same for any stream this decoder reads met midway: a watch chunk, or a chunk that starts a
 * rafthttp frame (raft__frame_start()). */
int http1__stream_chunk(const uint8_t *buf, size_t len);

#endif
