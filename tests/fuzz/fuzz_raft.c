/* libFuzzer target: the raft decoder. Byte 0 picks the framing (bits 0-1: pipeline, message
 * stream, msgappv2 from its start, msgappv2 met mid-stream) and the piece size (bits 2-7, 0:
 * whole); byte 1 the rest: bit 0 the stream's ids given, bit 1 bytes lost every third piece (the
 * stream then resumes where raft__frame_start() finds a frame, as decode.c does), bit 2 the whole
 * input also as one message and one entry, bit 3 through conn_decoder instead: the input as a
 * pipeline POST body (framing 0) or the chunked body of a stream's response (its pieces as
 * chunks), bit 4 with no request or response head (a stream met mid-way, found by its first
 * chunk). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "raft.h"

volatile size_t fuzz_sink;

static void on_raft(const struct raft_message *m, void *ctx)
{
	(void)ctx;
	fuzz_sink += m->type + m->from + m->to + m->term + m->index + m->commit + m->n_entries;
	for (uint32_t i = 0; i < m->n_entries; i++) {
		const struct raft_entry *e = &m->entries[i];
		fuzz_sink += e->index + e->term + e->request_id;
		if (e->request == RAFT_REQ_TXN)
			fuzz_sink += strlen(e->req.txn.compare_key) + strlen(e->req.txn.put.key);
		else if (e->request == RAFT_REQ_PUT)
			fuzz_sink += strlen(e->req.put.key);
		else if (e->request == RAFT_REQ_RANGE || e->request == RAFT_REQ_DELETE_RANGE)
			fuzz_sink += strlen(e->req.key);
	}
}

static void on_msg(const struct decoded_msg *m, void *ctx)
{
	fuzz_sink += m->kind + m->body_kind;
	if (m->body_kind == BODY_RAFT_MESSAGE)
		on_raft(m->body.raft, ctx);
}

static void fuzz_stream(const uint8_t *data, size_t size, uint8_t mode, uint8_t flags)
{
	static const enum raft_framing framings[] = { RAFT_FRAMING_PIPELINE, RAFT_FRAMING_MESSAGE,
						      RAFT_FRAMING_MSGAPPV2,
						      RAFT_FRAMING_MSGAPPV2 };
	enum raft_framing framing = framings[mode & 3];
	size_t piece = (mode >> 2) ? (mode >> 2) : size;
	struct raft_stream s;

	raft_stream__init(&s, framing);
	if (flags & 1)
		raft_stream__set_ids(&s, 0x1a3179e3dc2de125ull, 0x5607b8ec4f3f845full);
	if ((mode & 3) == 3)
		raft_stream__resume(&s, framing);
	for (size_t o = 0, k = 0; o < size; o += piece, k++) {
		size_t n = size - o < piece ? size - o : piece;
		if ((flags & 2) && k % 3 == 2) {
			raft_stream__lose(&s);
			continue;
		}
		if (s.state == RAFT_S_LOST) {
			int f = raft__frame_start(data + o, n, n);
			if (f <= 0)
				continue;
			raft_stream__resume(&s, (enum raft_framing)f);
		}
		raft_stream__feed(&s, data + o, n, o, on_raft, NULL);
	}
	raft_stream__end(&s, size, on_raft, NULL);
	raft_stream__free(&s);
	if (flags & 4) {
		struct raft_message *m = malloc(sizeof(*m));
		struct raft_entry *e = malloc(sizeof(*e));
		if (m && e) {
			memset(m, 0, sizeof(*m));
			raft__decode_message(data, size, m, on_raft, NULL);
			if (!raft__decode_entry(data, size, e))
				fuzz_sink += e->index + e->request;
		}
		free(m);
		free(e);
	}
}

/* A pipeline POST whose body is the input, in pieces. */
static void fuzz_pipeline(struct conn_decoder *dec, const uint8_t *data, size_t size, size_t piece,
			  uint8_t flags)
{
	char head[256];
	uint64_t off = 0;
	int n = snprintf(head, sizeof(head),
			 "POST /raft HTTP/1.1\r\nContent-Length: %zu\r\nContent-Type: "
			 "application/protobuf\r\n\r\n",
			 size);

	conn_decoder__feed(dec, CONN_DIR_OUT, off, head, (size_t)n, 1);
	off += (size_t)n;
	for (size_t o = 0, k = 0; o < size; o += piece, k++) {
		size_t len = size - o < piece ? size - o : piece;
		if ((flags & 2) && k % 3 == 2)
			conn_decoder__gap(dec, CONN_DIR_OUT, len);
		else
			conn_decoder__feed(dec, CONN_DIR_OUT, off, data + o, len, 2 + o);
		off += len;
	}
	n = snprintf(head, sizeof(head), "HTTP/1.1 204 No Content\r\n\r\n");
	conn_decoder__feed(dec, CONN_DIR_IN, 0, head, (size_t)n, 3 + size);
}

/* The input as the chunked body of a stream's response, its pieces as chunks. */
static void fuzz_conn(const uint8_t *data, size_t size, uint8_t mode, uint8_t flags)
{
	static const char *const paths[] = { "/raft/probing",
					     "/raft/stream/message/1a3179e3dc2de125",
					     "/raft/stream/msgapp/1a3179e3dc2de125",
					     "/raft/stream/msgapp/1a3179e3dc2de125" };
	struct conn_decoder *dec = conn_decoder__new(on_msg, NULL);
	size_t piece = (mode >> 2) ? (mode >> 2) : size;
	char head[512];
	uint64_t off[2] = { 0, 0 };
	int n;

	if (!dec)
		return;
	conn_decoder__set_client_dir(dec, CONN_DIR_OUT);
	if ((mode & 3) == 0 && !(flags & 16)) {
		fuzz_pipeline(dec, data, size, piece, flags);
		conn_decoder__free(dec);
		return;
	}
	if (!(flags & 16)) {
		n = snprintf(
		    head, sizeof(head),
		    "GET %s HTTP/1.1\r\nHost: 127.0.0.1:2380\r\nX-Raft-To: 5607b8ec4f3f845f"
		    "\r\nX-Server-From: 1a3179e3dc2de125\r\n\r\n",
		    paths[mode & 3]);
		conn_decoder__feed(dec, CONN_DIR_OUT, off[0], head, (size_t)n, 1);
		off[0] += (size_t)n;
		n = snprintf(head, sizeof(head),
			     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
		conn_decoder__feed(dec, CONN_DIR_IN, off[1], head, (size_t)n, 2);
		off[1] += (size_t)n;
	}
	for (size_t o = 0, k = 0; o < size; o += piece, k++) {
		size_t len = size - o < piece ? size - o : piece;
		char hdr[32];
		n = snprintf(hdr, sizeof(hdr), "%zx\r\n", len);
		if ((flags & 2) && k % 3 == 2) {
			conn_decoder__gap(dec, CONN_DIR_IN, (uint64_t)n + len + 2);
			off[1] += (uint64_t)n + len + 2;
			continue;
		}
		conn_decoder__feed(dec, CONN_DIR_IN, off[1], hdr, (size_t)n, 3 + o);
		off[1] += (size_t)n;
		conn_decoder__feed(dec, CONN_DIR_IN, off[1], data + o, len, 3 + o);
		off[1] += len;
		conn_decoder__feed(dec, CONN_DIR_IN, off[1], "\r\n", 2, 3 + o);
		off[1] += 2;
	}
	conn_decoder__close(dec, size);
	conn_decoder__free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t mode = data[0], flags = data[1];
	if (flags & 8)
		fuzz_conn(data + 2, size - 2, mode, flags);
	else
		fuzz_stream(data + 2, size - 2, mode, flags);
	return 0;
}
