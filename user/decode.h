/* One connection's decoder: ordered bytes per direction in, typed messages out.
 *
 * Feed it what the capture saw of a connection, per direction (0: written by the traced process,
 * 1: read by it), with the stream offset of each chunk and its timestamp; report bytes the
 * capture lost with conn_decoder__gap(). It detects HTTP/2 (with or without the preface, or from
 * frames met mid-connection) or HTTP/1.1, which side is the client (unless the caller says, with
 * conn_decoder__set_client_dir()), and gRPC on HTTP/2, and calls back with requests, responses,
 * gRPC messages and watch events whose bodies are decoded as Kubernetes objects or etcd messages.
 * Header values are redacted before they leave; Secrets and values under /registry/secrets/ are
 * never decoded.
 *
 * A connection met mid-way (a tracer attaching to a running control plane) has an HPACK dynamic
 * table the decoder never saw: a :path or content-type from it is unknown. Such a stream is still
 * recognised as gRPC by its DATA, and the etcd method is inferred from the message content when
 * it fits one method's message strictly; a request whose body is a Binding has the pod's
 * .../binding path from the Binding's name and namespace; those messages carry `inferred`.
 *
 * etcd's peer traffic (rafthttp on HTTP/1.1, see raft.h) is recognised by its request path and
 * reported as DECODED_RAFT_MESSAGE, one per raftpb.Message (a pipeline POST /raft body, each
 * message of a stream's response body), with the stream's request and its response head reported
 * too; /raft/snapshot and /raft/probing bodies are counted, not decoded. A stream met mid-way (no
 * request head) is found by its first frame at a chunk start; its messages are complete, not
 * `incomplete`, while what the raft stream does not know yet says so in the message (raft.h).
 *
 * Everything is bounded: header fields and bodies are cut at fixed caps, a connection tracks at
 * most DECODE_MAX_STREAMS streams (the least recently used is dropped), and no memory is
 * allocated per byte: buffers grow per message, to a cap. Memory follows use: a decoder starts at
 * a few KiB and allocates its protocol layer, HPACK tables and streams as they are needed. */
#ifndef BINDTRACE_DECODE_H
#define BINDTRACE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etcd.h"
#include "k8s.h"
#include "raft.h"

/* Open streams tracked per connection; past it the least recently used is dropped and counted
 * (streams_evicted). etcd lets a client open any number of streams, and the apiserver has one
 * Txn open per write in flight (up to its max-requests-inflight and
 * max-mutating-requests-inflight, 600 by default): a 1000-pod bind burst had 152 open at once on
 * its connection to etcd, where a cap of 128 lost a bind's Txn and a watch event. */
#define DECODE_MAX_STREAMS 4096
#define DECODE_MAX_BODY (4u << 20) /* bodies kept whole for decoding */
#define DECODE_METHOD_MAX 16
#define DECODE_PATH_MAX 512
#define DECODE_AUTHORITY_MAX 256
#define DECODE_CONTENT_TYPE_MAX 128
#define DECODE_USER_AGENT_MAX 256
#define DECODE_GRPC_MESSAGE_MAX 256

enum conn_dir {
	CONN_DIR_OUT = 0, /* written by the traced process */
	CONN_DIR_IN = 1,  /* read by it */
};

enum conn_proto {
	CONN_PROTO_UNKNOWN = 0,
	CONN_PROTO_H2,
	CONN_PROTO_HTTP1,
};

enum decoded_kind {
	DECODED_NONE = 0,
	DECODED_REQUEST,      /* an HTTP request, when complete (body decoded) */
	DECODED_RESPONSE,     /* an HTTP response, when complete; a watch response at its headers */
	DECODED_GRPC_REQUEST, /* one gRPC request message */
	DECODED_GRPC_RESPONSE, /* a unary gRPC response at its trailers; a streamed one per message */
	DECODED_WATCH_EVENT,   /* one Kubernetes watch event (one per Table row) */
	DECODED_ETCD_WATCH_EVENT, /* one event of an etcd WatchResponse */
	DECODED_STREAM_RESET,	  /* RST_STREAM on a stream */
	DECODED_GOAWAY,		  /* GOAWAY: streams above stream_id were not processed */
	DECODED_RAFT_MESSAGE,	  /* one raftpb.Message (or part) of etcd's peer traffic */
};

enum decoded_body_kind {
	BODY_NONE = 0,
	BODY_K8S,		  /* body.k8s */
	BODY_K8S_WATCH_EVENT,	  /* body.watch */
	BODY_ETCD_TXN,		  /* body.txn */
	BODY_ETCD_TXN_RESPONSE,	  /* body.txn_response */
	BODY_ETCD_RANGE,	  /* body.range */
	BODY_ETCD_RANGE_RESPONSE, /* body.range_response */
	BODY_ETCD_WATCH_REQUEST,  /* body.watch_request */
	BODY_ETCD_WATCH_RESPONSE, /* body.etcd_watch.response (no events: created, canceled...) */
	BODY_ETCD_WATCH_EVENT,	  /* body.etcd_watch.response + .event */
	BODY_UNDECODED,		  /* present but not understood, compressed, cut or too large */
	BODY_RAFT_MESSAGE,	  /* body.raft */
};

/* The HTTP context of a message: a request carries its own headers, a response or watch event
 * those of the request it answers plus its status. Values are redacted. */
struct decoded_http {
	char method[DECODE_METHOD_MAX];
	char path[DECODE_PATH_MAX];
	char authority[DECODE_AUTHORITY_MAX];
	char content_type[DECODE_CONTENT_TYPE_MAX]; /* of this message's body */
	char user_agent[DECODE_USER_AGENT_MAX];
	int status;	 /* :status / status line; 0 unknown */
	int grpc_status; /* -1 when absent */
	char grpc_message[DECODE_GRPC_MESSAGE_MAX];
};

struct decoded_msg {
	enum decoded_kind kind;
	enum conn_proto proto;
	enum conn_dir dir;    /* the direction the message travelled */
	bool from_client;     /* sent by the connection's client */
	bool client_known;    /* from_client is known, not guessed */
	bool inferred;	      /* http.path (an etcd method, a Binding's path) was inferred from the
			       * message content: the :path was an HPACK entry inserted before
			       * capture */
	bool unreliable;      /* the connection started mid-way or lost bytes before this */
	bool incomplete;      /* this message's own bytes or headers were partly lost */
	bool streaming;	      /* a watch or streaming-gRPC response: events follow */
	uint32_t stream_id;   /* HTTP/2 stream; HTTP/1.1: request number on the connection */
	uint64_t ts_first_ns; /* chunk that carried the message's first byte */
	uint64_t ts_last_ns;  /* chunk that completed it */
	uint32_t error_code;  /* STREAM_RESET, GOAWAY */
	struct decoded_http http;
	uint64_t body_len; /* bytes of this message's body (gRPC: of the message) */
	bool body_truncated;
	enum decoded_body_kind body_kind;
	union {
		struct k8s_object k8s;
		struct k8s_watch_event watch;
		struct etcd_txn txn;
		struct etcd_txn_response txn_response;
		struct etcd_range_request range;
		struct etcd_range_response range_response;
		struct etcd_watch_request watch_request;
		struct {
			struct etcd_watch_response response;
			struct etcd_watch_event event;
		} etcd_watch;
		const struct raft_message *raft; /* owned by the decoder, for the call */
	} body;
};

/* The message and everything it points to live only for the call. */
typedef void (*conn_decoder_cb)(const struct decoded_msg *msg, void *ctx);

struct conn_decoder_stats {
	enum conn_proto proto;
	int client_dir; /* -1 unknown */
	uint64_t bytes[2];
	uint64_t gaps;
	uint64_t bytes_lost;	/* reported by gaps */
	uint64_t bytes_skipped; /* not decodable (resync, malformed) */
	uint64_t resyncs;
	uint64_t messages;
	uint64_t streams_evicted;
	uint64_t decode_errors;
};

struct conn_decoder;

/* NULL and errno set on failure. */
struct conn_decoder *conn_decoder__new(conn_decoder_cb cb, void *ctx);
void conn_decoder__free(struct conn_decoder *dec);

/* The caller knows which side is the client from the socket: CONN_DIR_IN when the traced
 * process accepted the connection (the peer's bytes are the client's), CONN_DIR_OUT when it
 * dialed. Before or after the first bytes, this overrides detection from then on: messages get
 * their kind (request or response), from_client and client_known from it. Any other value
 * forgets it and goes back to detection. */
void conn_decoder__set_client_dir(struct conn_decoder *dec, int client_dir);

/* Ordered bytes of one direction. stream_offset is the offset of buf[0] in that direction's byte
 * stream: a jump forward is a gap, bytes already seen are skipped. The first chunk of a direction
 * at offset 0 means the connection is seen from its start; past 0, that it was met mid-way (but
 * see conn_decoder__offsets_from_zero). Returns the bytes missed before this chunk (the gap it
 * shows, 0 when it continues the stream), or -EINVAL. */
int64_t conn_decoder__feed(struct conn_decoder *dec, int dir, uint64_t stream_offset,
			   const void *buf, size_t len, uint64_t ts_ns);
/* The caller numbers each direction's bytes from 0 at the capture's first sight of the
 * connection, as BPF does: a first chunk past 0 then means bytes were lost before it (a gap), not
 * a connection met mid-way. Before the first chunk. */
void conn_decoder__offsets_from_zero(struct conn_decoder *dec);
/* missing_bytes of dir were not captured (ring buffer drops, unreadable user memory). */
int conn_decoder__gap(struct conn_decoder *dec, int dir, uint64_t missing_bytes);
/* The connection closed: completes a response read until close. */
void conn_decoder__close(struct conn_decoder *dec, uint64_t ts_ns);
void conn_decoder__stats(const struct conn_decoder *dec, struct conn_decoder_stats *stats);
/* Bytes the decoder holds on the heap now, itself included. */
size_t conn_decoder__heap_bytes(const struct conn_decoder *dec);

/* Replays a capture file in the shape of `bindtrace capture --json` (one conn_decoder per "conn"),
 * cutting chunks into pieces of at most max_piece bytes when non-zero. When conn_id is not NULL,
 * *conn_id holds the "conn" of each message while cb runs. Fills *total with the summed
 * connection statistics when not NULL. Implemented in cmd_decode.c. */
int decode__replay_file(const char *path, size_t max_piece, conn_decoder_cb cb, void *ctx,
			uint64_t *conn_id, struct conn_decoder_stats *total);

const char *decoded_kind__name(enum decoded_kind kind);
const char *decoded_body_kind__name(enum decoded_body_kind kind);
const char *conn_proto__name(enum conn_proto proto);

#endif
