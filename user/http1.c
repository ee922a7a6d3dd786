/* HTTP/1.1 parser: lines are gathered into a fixed buffer (cut, and the message marked, when too
 * long); bodies are passed through in place. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http1.h"
#include "raft.h"

static const char *const methods[] = { "GET",  "POST",	  "PUT",     "PATCH", "DELETE",
				       "HEAD", "OPTIONS", "CONNECT", "TRACE" };

int http1__sniff(const uint8_t *buf, size_t len)
{
	if (len >= 9 && !memcmp(buf, "HTTP/1.", 7) && (buf[7] == '0' || buf[7] == '1') &&
	    buf[8] == ' ')
		return 2;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		size_t l = strlen(methods[i]);
		if (len > l + 1 && !memcmp(buf, methods[i], l) && buf[l] == ' ' &&
		    (buf[l + 1] == '/' || buf[l + 1] == '*' || isalpha(buf[l + 1])))
			return 1;
	}
	return 0;
}

/* A chunk header (hex size, CRLF, no extensions) at b: 1 with the size and header length, 0
 * not, -1 too few bytes to tell. */
static int chunk_header(const uint8_t *b, size_t n, uint64_t *size_out, size_t *header_len)
{
	uint64_t size = 0;
	size_t j = 0;

	while (j < n && j < 8 && isxdigit(b[j])) {
		size = size * 16 + (isdigit(b[j]) ? b[j] - '0' : (tolower(b[j]) - 'a' + 10));
		j++;
	}
	if (j == n)
		return -1;
	if (!j || j == 8 || b[j] != '\r')
		return 0;
	if (j + 2 > n)
		return -1;
	if (b[j + 1] != '\n')
		return 0;
	*size_out = size;
	*header_len = j + 2;
	return 1;
}

int http1__stream_chunk(const uint8_t *b, size_t n)
{
	uint64_t size;
	size_t j;
	int w = http1__watch_chunk(b, n), r;

	if (w > 0)
		return 1;
	r = chunk_header(b, n, &size, &j);
	if (r <= 0 || !size)
		return r;
	r = raft__frame_start(b + j, n - j, size);
	if (r > 0)
		return 1;
	return w < 0 || r < 0 ? -1 : 0;
}

int http1__watch_chunk(const uint8_t *b, size_t n)
{
	uint64_t size = 0;
	size_t j = 0;
	int r = chunk_header(b, n, &size, &j);

	if (r <= 0)
		return r;
	if (size >= 5 && j + 5 <= n && b[j] == 0) {
		/* A length-prefixed protobuf WatchEvent: {type string = 1, ...}. */
		uint32_t frame = (uint32_t)b[j] << 24 | b[j + 1] << 16 | b[j + 2] << 8 | b[j + 3];
		return frame + 4 == size && b[j + 4] == 0x0a;
	}
	if (size >= 10 && j + 9 <= n && b[j] == '{')
		return !memcmp(b + j, "{\"type\":\"", 9);
	return j + 9 > n ? -1 : 0;
}

void http1_conn__init(struct http1_conn *c, const struct http1_callbacks *cb, void *ctx)
{
	c->cb = cb;
	c->ctx = ctx;
}

void http1_conn__begin(struct http1_conn *c, int dir, bool from_start)
{
	c->dir[dir].state = from_start ? HTTP1_START : HTTP1_RESYNC;
	c->dir[dir].rlen = 0;
	c->dir[dir].resync_at_start = !from_start;
}

static void lost(struct http1_conn *c, int dir)
{
	struct http1_dir *d = &c->dir[dir];
	d->state = HTTP1_RESYNC;
	d->rlen = 0;
	d->line_len = 0;
	d->resync_at_start = false;
	d->resyncs++;
	if (c->cb->on_lost)
		c->cb->on_lost(c->ctx, dir);
}

static void pending_push(struct http1_conn *c, const char *method)
{
	if (c->pending_count == HTTP1_MAX_PENDING) {
		c->pending_head = (c->pending_head + 1) % HTTP1_MAX_PENDING;
		c->pending_count--;
	}
	uint32_t i = (c->pending_head + c->pending_count) % HTTP1_MAX_PENDING;
	size_t n = strnlen(method, sizeof(c->pending[i]) - 1);
	memcpy(c->pending[i], method, n);
	c->pending[i][n] = 0;
	c->pending_count++;
}

static const char *pending_pop(struct http1_conn *c)
{
	if (!c->pending_count)
		return NULL;
	const char *m = c->pending[c->pending_head];
	c->pending_head = (c->pending_head + 1) % HTTP1_MAX_PENDING;
	c->pending_count--;
	return m;
}

static void end_message(struct http1_conn *c, int dir, uint64_t ts)
{
	struct http1_dir *d = &c->dir[dir];
	d->state = HTTP1_START;
	d->messages++;
	if (c->cb->on_end)
		c->cb->on_end(c->ctx, dir, ts);
}

/* A complete start line in d->line. Returns false when it is not one. */
static bool start_line(struct http1_conn *c, int dir, uint64_t ts)
{
	struct http1_dir *d = &c->dir[dir];
	struct http1_start s = { 0 };
	char *line = d->line;
	int kind = http1__sniff((const uint8_t *)line, d->line_len);

	if (!kind)
		return false;
	d->chunked = false;
	d->has_length = false;
	d->content_length = 0;
	d->no_body = false;
	d->header_bytes = 0;
	if (kind == 1) {
		char *sp = strchr(line, ' ');
		*sp = 0;
		s.request = true;
		s.method = line;
		s.target = sp + 1;
		char *sp2 = strrchr(sp + 1, ' ');
		if (sp2 && !strncmp(sp2 + 1, "HTTP/", 5))
			*sp2 = 0;
		pending_push(c, s.method);
		d->request = true;
		d->client = true;
	} else {
		s.request = false;
		s.status = atoi(line + 9);
		s.reason = strlen(line) > 13 ? line + 13 : "";
		s.request_method = pending_pop(c);
		if ((s.request_method && !strcmp(s.request_method, "HEAD")) ||
		    (s.status >= 100 && s.status < 200) || s.status == 204 || s.status == 304)
			d->no_body = true;
		d->request = false;
		d->client = false;
	}
	d->known = true;
	if (c->cb->on_start)
		c->cb->on_start(c->ctx, dir, &s, ts);
	return true;
}

static void header_line(struct http1_conn *c, int dir)
{
	struct http1_dir *d = &c->dir[dir];
	char *colon = memchr(d->line, ':', d->line_len);
	if (!colon)
		return;
	size_t nlen = (size_t)(colon - d->line);
	char *v = colon + 1;
	char *end = d->line + d->line_len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t vlen = (size_t)(end - v);
	if (d->state == HTTP1_HEADERS) {
		if (nlen == 14 && !strncasecmp(d->line, "content-length", 14)) {
			d->has_length = true;
			d->content_length = strtoull(v, NULL, 10);
		} else if (nlen == 17 && !strncasecmp(d->line, "transfer-encoding", 17)) {
			char tmp[64];
			snprintf(tmp, sizeof(tmp), "%.*s", (int)vlen, v);
			if (strcasestr(tmp, "chunked"))
				d->chunked = true;
		}
	}
	if (c->cb->on_header)
		c->cb->on_header(c->ctx, dir, d->line, nlen, v, vlen);
}

static void headers_end(struct http1_conn *c, int dir, uint64_t ts)
{
	struct http1_dir *d = &c->dir[dir];
	if (c->cb->on_headers_end)
		c->cb->on_headers_end(c->ctx, dir, ts);
	if (d->no_body) {
		end_message(c, dir, ts);
	} else if (d->chunked) {
		d->state = HTTP1_CHUNK_SIZE;
	} else if (d->has_length) {
		d->remaining = d->content_length;
		d->state = HTTP1_BODY_LENGTH;
		if (!d->remaining)
			end_message(c, dir, ts);
	} else if (d->request) {
		end_message(c, dir, ts);
	} else {
		d->state = HTTP1_BODY_CLOSE;
	}
}

/* A whole line (without CRLF) is in d->line; act on it by state. */
static void line_done(struct http1_conn *c, int dir, uint64_t ts)
{
	struct http1_dir *d = &c->dir[dir];

	switch (d->state) {
	case HTTP1_START:
		if (!d->line_len)
			return; /* stray CRLF between messages */
		if (!start_line(c, dir, ts)) {
			lost(c, dir);
			return;
		}
		d->state = HTTP1_HEADERS;
		break;
	case HTTP1_HEADERS:
		if (!d->line_len) {
			headers_end(c, dir, ts);
			return;
		}
		d->header_bytes += d->line_len;
		if (d->header_bytes > HTTP1_MAX_HEADERS_BYTES) {
			lost(c, dir);
			return;
		}
		header_line(c, dir);
		break;
	case HTTP1_CHUNK_SIZE: {
		char *end;
		if (!d->line_len || !isxdigit((unsigned char)d->line[0])) {
			lost(c, dir);
			return;
		}
		unsigned long long n = strtoull(d->line, &end, 16);
		if (n > (1ull << 40)) {
			lost(c, dir);
			return;
		}
		d->remaining = n;
		d->state = n ? HTTP1_CHUNK_DATA : HTTP1_TRAILERS;
		d->chunk_start = n != 0;
		break;
	}
	case HTTP1_CHUNK_DATA_END:
		d->state = HTTP1_CHUNK_SIZE;
		break;
	case HTTP1_TRAILERS:
		if (!d->line_len)
			end_message(c, dir, ts);
		else
			header_line(c, dir);
		break;
	default:
		break;
	}
}

/* Resync: a request/status line at a line start, or a chunk header followed by JSON. */
static void resync(struct http1_conn *c, int dir, uint64_t ts)
{
	struct http1_dir *d = &c->dir[dir];
	const uint8_t *b = (const uint8_t *)d->rbuf;

	for (uint32_t i = 0; i < d->rlen; i++) {
		if (i && b[i - 1] != '\n')
			continue;
		size_t left = d->rlen - i;
		if (left < 10 && d->rlen < HTTP1_RESYNC_BUFFER)
			return; /* too few bytes to judge; wait */
		int kind = http1__sniff(b + i, left);
		bool chunk = false;
		uint32_t j = i;
		if (!kind && i == 0 && d->resync_at_start) {
			/* The first bytes seen: a chunk header only if a watch event or a rafthttp
			 * frame follows. */
			int w = http1__stream_chunk(b, left);
			if (w < 0 && d->rlen < HTTP1_RESYNC_BUFFER)
				return;
			chunk = w > 0;
		} else if (!kind && i >= 2 && b[i - 2] == '\r') {
			/* "\r\n" hex "\r\n" then a JSON object or protobuf frame: a chunk header */
			while (j < d->rlen && isxdigit(b[j]) && j - i < 8)
				j++;
			if (j > i && j + 3 <= d->rlen && b[j] == '\r' && b[j + 1] == '\n' &&
			    (b[j + 2] == '{' || b[j + 2] == 0 ||
			     raft__frame_start(b + j + 2, d->rlen - j - 2, 0) > 0))
				chunk = true;
			else if (j > i && j + 3 > d->rlen && d->rlen < HTTP1_RESYNC_BUFFER)
				return;
		}
		if (!kind && !chunk)
			continue;
		uint32_t start = i;
		d->bytes_skipped += start;
		d->line_len = 0;
		if (chunk) {
			struct http1_start s = { .request = false, .resynced_body = true };
			d->chunked = true;
			d->state = HTTP1_CHUNK_SIZE;
			if (c->cb->on_start)
				c->cb->on_start(c->ctx, dir, &s, ts);
			if (c->cb->on_headers_end)
				c->cb->on_headers_end(c->ctx, dir, ts);
		} else {
			d->state = HTTP1_START;
		}
		uint32_t n = d->rlen - start;
		d->rlen = 0;
		/* Replay from the boundary; a replay that breaks again replays at most a few levels
		 * deep before the rest is dropped, so hostile input cannot nest us. */
		if (d->replay_depth >= 4) {
			d->bytes_skipped += n;
			return;
		}
		char *tmp = malloc(n);
		if (!tmp) {
			d->bytes_skipped += n;
			return;
		}
		memcpy(tmp, d->rbuf + start, n);
		d->replay_depth++;
		http1_conn__feed(c, dir, (const uint8_t *)tmp, n, ts);
		d->replay_depth--;
		free(tmp);
		return;
	}
	/* Keep a little to catch a line start split across pieces. */
	d->resync_at_start = false;
	if (d->rlen > 64) {
		uint32_t keep = 64;
		d->bytes_skipped += d->rlen - keep;
		memmove(d->rbuf, d->rbuf + d->rlen - keep, keep);
		d->rlen = keep;
	}
}

void http1_conn__feed(struct http1_conn *c, int dir, const uint8_t *buf, size_t len, uint64_t ts)
{
	struct http1_dir *d;

	if (dir < 0 || dir > 1)
		return;
	d = &c->dir[dir];
	while (len) {
		switch (d->state) {
		case HTTP1_RESYNC: {
			size_t n = HTTP1_RESYNC_BUFFER - d->rlen;
			if (n > len)
				n = len;
			memcpy(d->rbuf + d->rlen, buf, n);
			d->rlen += (uint32_t)n;
			buf += n;
			len -= n;
			resync(c, dir, ts);
			break;
		}
		case HTTP1_BODY_LENGTH:
		case HTTP1_CHUNK_DATA: {
			size_t n = d->remaining < len ? (size_t)d->remaining : len;
			if (c->cb->on_body)
				c->cb->on_body(c->ctx, dir, buf, n, ts);
			d->chunk_start = false;
			d->remaining -= n;
			buf += n;
			len -= n;
			if (!d->remaining) {
				if (d->state == HTTP1_BODY_LENGTH)
					end_message(c, dir, ts);
				else
					d->state = HTTP1_CHUNK_DATA_END;
			}
			break;
		}
		case HTTP1_BODY_CLOSE:
			if (c->cb->on_body)
				c->cb->on_body(c->ctx, dir, buf, len, ts);
			len = 0;
			break;
		default: {
			/* Line-oriented states. */
			const uint8_t *nl = memchr(buf, '\n', len);
			size_t n = nl ? (size_t)(nl - buf) + 1 : len;
			size_t copy = n - (nl ? 1 : 0);
			if (d->line_len + copy >= HTTP1_MAX_LINE) {
				copy = HTTP1_MAX_LINE - 1 - d->line_len;
				d->line_overflow = true;
			}
			memcpy(d->line + d->line_len, buf, copy);
			d->line_len += (uint32_t)copy;
			buf += n;
			len -= n;
			if (nl) {
				if (d->line_len && d->line[d->line_len - 1] == '\r')
					d->line_len--;
				d->line[d->line_len] = 0;
				if (d->line_overflow && d->state == HTTP1_START) {
					d->line_overflow = false;
					d->line_len = 0;
					lost(c, dir);
					break;
				}
				d->line_overflow = false;
				line_done(c, dir, ts);
				d->line_len = 0;
			}
			break;
		}
		}
	}
}

void http1_conn__lose(struct http1_conn *c, int dir, uint64_t missing)
{
	struct http1_dir *d = &c->dir[dir];

	if (!missing)
		return;
	d->bytes_skipped += missing;
	/* Inside a counted body or chunk the boundaries survive a short gap. */
	if ((d->state == HTTP1_BODY_LENGTH || d->state == HTTP1_CHUNK_DATA) &&
	    missing < d->remaining) {
		d->remaining -= missing;
		if (c->cb->on_lost)
			c->cb->on_lost(c->ctx, dir);
		return;
	}
	lost(c, dir);
}

void http1_conn__close(struct http1_conn *c, int dir, uint64_t ts)
{
	if (c->dir[dir].state == HTTP1_BODY_CLOSE)
		end_message(c, dir, ts);
}
