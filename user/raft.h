/* etcd's peer traffic (rafthttp, etcd v3.6 and v3.7) and the raftpb messages it carries, as the
 * capture sees them: the plaintext after crypto/tls, per connection and direction, already taken
 * out of HTTP/1.1 (and its chunked transfer coding) by http1.c and decode.c.
 *
 * Endpoints (all HTTP/1.1; decode.c recognises them by the request path):
 *   POST /raft                     pipeline: the request body is one raw raftpb.Message.
 *   GET  /raft/stream/message/ID   the response body is [u64 BE length][raftpb.Message]...
 *   GET  /raft/stream/msgapp/ID    the response body is msgappv2 frames (below).
 *   POST /raft/snapshot, GET /raft/probing: recognised by decode.c and not decoded here.
 * Stream bodies flow from the server to the dialer: the member that dialed ID's stream receives
 * the messages; the server (named by the request's X-Raft-To) sends them.
 *
 * msgappv2 frames start with a type byte: 0x00 a link heartbeat (1 byte, dropped); 0x01
 * AppEntries: [u64 n] n x [u64 len][raftpb.Entry] [u64 commit], a MsgApp whose term, log term and
 * index are not sent but kept by both ends of the connection (the state); 0x02 App: [u64 len]
 * [raftpb.Message], after which the state is term = its Term and index = its last entry's Index
 * (its Index without entries). After an AppEntries frame of n entries, index += n. A commit-only
 * MsgApp is a 17-byte AppEntries frame (n = 0).
 *
 * Mid-stream and after lost bytes: a stream met mid-way (the tracer attached after the stream
 * began, which is the normal case: streams live as long as the members) has no request head, so
 * decode.c finds its first frame with raft__frame_start() at a chunk start and resumes the stream
 * there (raft_stream__resume()). The msgappv2 state is then unknown: AppEntries frames are still
 * decoded (their entries carry their own Index and Term, and the frame its commit), but the
 * rebuilt MsgApp's term, log term and index are reported unknown (state_known false) until the
 * next App frame sets them; that is not guessed from the entries. The sender and receiver ids of
 * AppEntries come from the request (path and X-Raft-To) or from an App frame; before either they
 * are unknown (ids_known false). After lost bytes (raft_stream__lose()) the partial frame is
 * dropped and the state is unknown again, until an App frame.
 *
 * raftpb: proto2. v3.6 (gogoproto) writes every scalar field, zero or not; v3.7 (protobuf-go with
 * explicit presence) writes the fields the sender set. A field absent is 0. Normal entries carry
 * etcd's InternalRaftRequest: header.ID (field 100, RequestHeader field 1; the legacy ID field 1
 * when there is no header) and one request; a Txn or a Put is decoded with etcd.c (values under
 * /registry/secrets/ are never looked into), auth requests are only named (they hold passwords).
 *
 * Checked against live captures (bindtrace capture of 3-member clusters with peer TLS, etcd
 * v3.7.3 and v3.6.16 built from the module proxy, etcdctl puts and Txns, the leader killed; the
 * fixtures tests/fixtures/raft_*.jsonl come from them) - what held of the wire notes
 * (shared/reference/etcd-raft-wire.md): HTTP/1.1 only; the routes and stream headers; chunked
 * stream bodies from server to dialer; the pipeline's application/protobuf raw Message and its
 * 204; the message stream's link heartbeat of 20 bytes in v3.6 (08 08 10 00 ... 68 00) and 2 in
 * v3.7 (08 08); msgappv2's 1-byte link heartbeat and 17-byte commit-only AppEntries; an App frame
 * at a stream's first MsgApp and at each new term, AppEntries otherwise; MsgProp's bytes in both
 * versions; v3.6 writing every scalar field, v3.7 only those set; InternalRaftRequest fields in
 * ascending order (txn 6, then header 100) and a compare's zero revision still written (28 00);
 * header.ID's top 16 bits the low 16 bits of the member the client called. What did not, or
 * was missing: MsgReadIndex(Resp) carries the read's 8-byte id in Entries[0].Data, not in
 * Context; MsgHeartbeat(Resp) then carries a Context, the read's id in v3.6 but an 8-byte
 * little-endian counter in v3.7; MsgVote's Context is "CampaignTransfer" when the leader hands
 * over (a member stopping, or MsgTimeoutNow); RequestHeader also carries the
 * client's username and auth revision when client certificates map to users (not reported);
 * v3.6 sent MsgApp on the message stream just after a member restarted, before its msgappv2
 * stream was attached; the pipeline carried heartbeats and a proposal while a restarted member's
 * streams were not attached, and GET /raft/probing shared the pipeline's keep-alive connections.
 * Every chunk of the captured streams began at a frame (1247 of 1247 in v3.7, 1198 of 1198 in
 * v3.6): a Flush writes whole frames. Finding a frame mid-stream relies on that; a chunk that
 * does not begin one fails raft__frame_start()'s checks (length bytes, type, protobuf shape) and
 * is skipped, and one that passes them wrongly loses the stream again at its next bad length or
 * type byte.
 *
 * Bounds: a frame (a message, or a whole AppEntries frame) is kept to decode when it is at most
 * RAFT_FRAME_KEEP_MAX bytes, and skipped (its boundaries kept, counted) when larger; a length
 * above RAFT_FRAME_LIMIT (etcd's own read limit) or an entry count above RAFT_APPENTRIES_MAX is not
 * believed: the stream is lost until the owner resumes it. Nothing is allocated per byte: a stream
 * keeps one buffer, grown (doubling) as a frame's bytes arrive, never on a length's word alone,
 * and given back when a large frame is done. */
#ifndef BINDTRACE_RAFT_H
#define BINDTRACE_RAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etcd.h"

#define RAFT_MSG_ENTRIES 8		/* entries in one reported part of a message */
#define RAFT_FRAME_KEEP_MAX (4u << 20)	/* frames kept whole for decoding */
#define RAFT_FRAME_LIMIT (512ull << 20) /* rafthttp's readBytesLimit */
#define RAFT_APPENTRIES_MAX (1u << 20)	/* entries in one AppEntries frame */
#define RAFT_MSGAPPV2_HEADER 9		/* type byte + u64 */
#define RAFT_COMMIT_ONLY_FRAME 17	/* 0x01, n = 0, commit */
#define RAFT_ID_HEX_MAX 16		/* member ids: lowercase hex, no leading zeros */

enum raft_framing {
	RAFT_FRAMING_NONE = 0,
	RAFT_FRAMING_PIPELINE, /* POST /raft: the whole body is one Message */
	RAFT_FRAMING_MESSAGE,  /* /raft/stream/message: [u64 len][Message]... */
	RAFT_FRAMING_MSGAPPV2, /* /raft/stream/msgapp: msgappv2 frames */
};

/* raftpb.MessageType */
enum raft_message_type {
	RAFT_MSG_HUP = 0,
	RAFT_MSG_BEAT = 1,
	RAFT_MSG_PROP = 2,
	RAFT_MSG_APP = 3,
	RAFT_MSG_APP_RESP = 4,
	RAFT_MSG_VOTE = 5,
	RAFT_MSG_VOTE_RESP = 6,
	RAFT_MSG_SNAP = 7,
	RAFT_MSG_HEARTBEAT = 8,
	RAFT_MSG_HEARTBEAT_RESP = 9,
	RAFT_MSG_UNREACHABLE = 10,
	RAFT_MSG_SNAP_STATUS = 11,
	RAFT_MSG_CHECK_QUORUM = 12,
	RAFT_MSG_TRANSFER_LEADER = 13,
	RAFT_MSG_TIMEOUT_NOW = 14,
	RAFT_MSG_READ_INDEX = 15,
	RAFT_MSG_READ_INDEX_RESP = 16,
	RAFT_MSG_PRE_VOTE = 17,
	RAFT_MSG_PRE_VOTE_RESP = 18,
	RAFT_MSG_TYPE_COUNT = 24, /* 19-23 are local (storage) messages, never on the wire */
};

/* raftpb.EntryType */
enum raft_entry_type {
	RAFT_ENTRY_NORMAL = 0,
	RAFT_ENTRY_CONF_CHANGE = 1,
	RAFT_ENTRY_CONF_CHANGE_V2 = 2,
};

/* What a Normal entry's InternalRaftRequest asks. */
enum raft_request {
	RAFT_REQ_NONE = 0,     /* no data: the empty entry a new leader appends */
	RAFT_REQ_UNDECODED,    /* data that does not parse, or not a Normal entry */
	RAFT_REQ_RANGE,	       /* req.key */
	RAFT_REQ_PUT,	       /* req.put */
	RAFT_REQ_DELETE_RANGE, /* req.key */
	RAFT_REQ_TXN,	       /* req.txn */
	RAFT_REQ_COMPACTION,   /* req.compact_revision */
	RAFT_REQ_LEASE_GRANT,
	RAFT_REQ_LEASE_REVOKE,
	RAFT_REQ_ALARM,
	RAFT_REQ_LEASE_CHECKPOINT,
	RAFT_REQ_AUTH,	     /* fields 1000-1299: named only, never decoded */
	RAFT_REQ_CLUSTER,    /* 1300-1302: cluster version, member attributes, downgrade */
	RAFT_REQ_OTHER,	     /* a request field this decoder does not know (v2 requests, tests) */
	RAFT_REQ_READ_INDEX, /* MsgReadIndex(Resp): request_id is the read's id (the data) */
};

struct raft_entry {
	uint64_t term;
	uint64_t index;
	uint32_t type; /* enum raft_entry_type */
	uint32_t data_len;
	enum raft_request request;
	/* InternalRaftRequest header.ID: made by the member the client called (top 16 bits: the low
	 * 16 bits of its member id), the key that follows one request from proposal to apply. */
	uint64_t request_id;
	union {
		struct etcd_txn txn;	  /* RAFT_REQ_TXN: first compare, first put (its value) */
		struct etcd_kv put;	  /* RAFT_REQ_PUT: key, lease, value */
		char key[ETCD_KEY_MAX];	  /* RAFT_REQ_RANGE, RAFT_REQ_DELETE_RANGE */
		int64_t compact_revision; /* RAFT_REQ_COMPACTION */
	} req;
};

/* One raftpb.Message, or a part of one: a message with more than RAFT_MSG_ENTRIES entries is
 * reported in several parts that repeat its header, entries_first counting on. */
struct raft_message {
	enum raft_framing framing;
	bool app_entries; /* rebuilt from a msgappv2 AppEntries frame */
	bool state_known; /* term, log_term, index known (always, except AppEntries, see above) */
	bool ids_known;	  /* from and to known (always, except AppEntries, see above) */
	uint32_t type;	  /* enum raft_message_type */
	uint64_t to;
	uint64_t from;
	uint64_t term;
	uint64_t log_term;
	uint64_t index;
	uint64_t commit;
	uint64_t vote;
	bool reject;
	uint64_t reject_hint;
	bool has_snapshot;
	uint64_t snapshot_index;
	uint64_t snapshot_term;
	uint32_t context_len; /* bytes of context (MsgReadIndex: the request's 8-byte id) */
	uint32_t responses;   /* field 14: local messages only */
	uint32_t len;	      /* bytes of the frame's message (AppEntries: of the frame) */
	uint32_t entries_total;
	uint32_t entries_first; /* position of entries[0] among the message's entries */
	uint32_t n_entries;	/* in this part */
	bool last_part;
	bool entries_cut;     /* the frame was too large to keep: entries counted, not decoded */
	uint64_t ts_first_ns; /* chunk that carried the frame's first byte */
	uint64_t ts_last_ns;  /* chunk that completed it */
	struct raft_entry entries[RAFT_MSG_ENTRIES];
};

/* The message and what it points to live only for the call. */
typedef void (*raft_message_cb)(const struct raft_message *m, void *ctx);

enum raft_stream_state {
	RAFT_S_FRAME = 0, /* at a frame start */
	RAFT_S_NUMBER,	  /* reading a u64 (what for: number_for) */
	RAFT_S_MESSAGE,	  /* reading a message's bytes */
	RAFT_S_ENTRY,	  /* reading an AppEntries entry's bytes */
	RAFT_S_LOST,	  /* boundaries lost: nothing is decoded until raft_stream__resume() */
};

enum raft_number {
	RAFT_NUM_MESSAGE_LEN = 0, /* message stream / App: the message's length */
	RAFT_NUM_ENTRY_COUNT,
	RAFT_NUM_ENTRY_LEN,
	RAFT_NUM_COMMIT,
};

struct raft_stream_stats {
	uint64_t messages;	  /* reported (parts not counted twice) */
	uint64_t link_heartbeats; /* dropped */
	uint64_t app_entries;	  /* AppEntries frames */
	uint64_t state_unknown;	  /* of them, reported without term/index */
	uint64_t frames_skipped;  /* too large to keep */
	uint64_t decode_errors;	  /* frames that did not parse (boundaries kept) */
	uint64_t lost;		  /* times the boundaries were lost (bad frame, lost bytes) */
	uint64_t bytes_skipped;	  /* in skipped frames and while lost */
};

/* One direction of one rafthttp body. Zero-initialise, then raft_stream__init(); free with
 * raft_stream__free(). */
struct raft_stream {
	enum raft_framing framing;
	enum raft_stream_state state;
	enum raft_number number_for;
	uint8_t number[8];
	uint8_t number_got;
	bool frame_started;
	bool keep;	/* the frame's bytes are kept (not too large) */
	bool app_frame; /* msgappv2: the message being read is an App frame */
	uint64_t need;	/* bytes left of the message or entry being read */
	uint64_t frame_len;
	uint64_t entries_total; /* AppEntries: n */
	uint64_t entries_left;
	uint64_t ts_first_ns;
	/* msgappv2 state and the connection's members */
	bool state_known;
	uint64_t term;
	uint64_t index;
	bool ids_known;
	uint64_t sender;   /* the server: sends the body */
	uint64_t receiver; /* the dialer */
	uint8_t *buf;
	uint32_t len;
	uint32_t cap;
	struct raft_message *msg; /* allocated with the first message reported */
	struct raft_stream_stats stats;
};

void raft_stream__init(struct raft_stream *s, enum raft_framing framing);
void raft_stream__free(struct raft_stream *s);
/* The members of a stream, from its request: the server (X-Raft-To) sends, the dialer (the id in
 * the path) receives. Used for AppEntries frames, which do not carry them. */
void raft_stream__set_ids(struct raft_stream *s, uint64_t sender, uint64_t receiver);
/* Body bytes in order. Calls cb for each message (part) completed. Returns 0, or -EBADMSG when the
 * boundaries were lost on this call (the stream is then RAFT_S_LOST). */
int raft_stream__feed(struct raft_stream *s, const uint8_t *buf, size_t len, uint64_t ts_ns,
		      raft_message_cb cb, void *ctx);
/* The body ended: a pipeline body is decoded whole now; a stream's partial frame is lost. */
void raft_stream__end(struct raft_stream *s, uint64_t ts_ns, raft_message_cb cb, void *ctx);
/* Bytes were lost: the partial frame is dropped, the msgappv2 state is unknown. */
void raft_stream__lose(struct raft_stream *s);
/* The owner found a frame start (raft__frame_start()) where the next bytes begin: decode from
 * there with framing, the msgappv2 state unknown. */
void raft_stream__resume(struct raft_stream *s, enum raft_framing framing);
size_t raft_stream__heap_bytes(const struct raft_stream *s);

/* Decodes one raftpb.Message held whole, calling cb once per part (at least once). Returns 0 or
 * -EBADMSG (cb not called). scratch holds the parts; its framing and ts are the caller's. */
int raft__decode_message(const uint8_t *buf, size_t len, struct raft_message *scratch,
			 raft_message_cb cb, void *ctx);
/* Decodes one raftpb.Entry (with its InternalRaftRequest). Returns 0 or -EBADMSG; a request that
 * does not parse leaves the entry decoded with request RAFT_REQ_UNDECODED. */
int raft__decode_entry(const uint8_t *buf, size_t len, struct raft_entry *out);

/* Does buf (a chunk's first bytes met mid-stream) begin with a believable frame of a rafthttp
 * stream? Returns RAFT_FRAMING_MESSAGE or RAFT_FRAMING_MSGAPPV2, 0 when not, -1 when too few bytes
 * to tell. chunk_len is the size of the chunk buf begins (0 unknown): a 1-byte chunk holding 0x00
 * is a msgappv2 link heartbeat. */
int raft__frame_start(const uint8_t *buf, size_t len, uint64_t chunk_len);

/* The endpoint of a request path: PIPELINE, MESSAGE or MSGAPPV2 for the message endpoints (with
 * the member id in the path in *id when not NULL), NONE otherwise. */
enum raft_framing raft__framing_from_path(const char *path, uint64_t *id);
/* Is this a rafthttp path (/raft, /raft/...)? */
bool raft__is_path(const char *path);
/* A member id as rafthttp writes it (hex); 0 when it is not one. */
uint64_t raft__parse_id(const char *s, size_t len);

const char *raft_message_type__name(uint32_t type);
const char *raft_entry_type__name(uint32_t type);
const char *raft_request__name(enum raft_request req);
const char *raft_framing__name(enum raft_framing framing);

#endif
