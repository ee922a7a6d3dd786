/* rafthttp framings (pipeline, message stream, msgappv2) and raftpb decoding over the protobuf
 * walker. A stream's frame is gathered into one buffer while its lengths are read one at a time,
 * so the bytes may come cut anywhere; a frame is decoded when it is complete, and a message with
 * many entries is reported in parts of RAFT_MSG_ENTRIES. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protobuf.h"
#include "raft.h"

/* A buffer larger than this is given back after its frame. */
#define RAFT_BUF_KEEP (64u << 10)

#define FOR_EACH_FIELD(buf, len, f, err)                                                           \
	for (struct pb_reader r_ = { (buf), (len), 0 }; ((err) = pb_reader__next(&r_, &(f))) == 1;)

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* Names */

const char *raft_message_type__name(uint32_t type)
{
	static const char *const names[] = {
		"MsgHup",
		"MsgBeat",
		"MsgProp",
		"MsgApp",
		"MsgAppResp",
		"MsgVote",
		"MsgVoteResp",
		"MsgSnap",
		"MsgHeartbeat",
		"MsgHeartbeatResp",
		"MsgUnreachable",
		"MsgSnapStatus",
		"MsgCheckQuorum",
		"MsgTransferLeader",
		"MsgTimeoutNow",
		"MsgReadIndex",
		"MsgReadIndexResp",
		"MsgPreVote",
		"MsgPreVoteResp",
		"MsgStorageAppend",
		"MsgStorageAppendResp",
		"MsgStorageApply",
		"MsgStorageApplyResp",
		"MsgForgetLeader",
	};
	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "MsgUnknown";
}

const char *raft_entry_type__name(uint32_t type)
{
	switch (type) {
	case RAFT_ENTRY_NORMAL:
		return "normal";
	case RAFT_ENTRY_CONF_CHANGE:
		return "conf-change";
	case RAFT_ENTRY_CONF_CHANGE_V2:
		return "conf-change-v2";
	default:
		return "unknown";
	}
}

const char *raft_request__name(enum raft_request req)
{
	static const char *const names[] = {
		"none",	      "undecoded",   "range",	     "put",   "delete-range",	  "txn",
		"compaction", "lease-grant", "lease-revoke", "alarm", "lease-checkpoint", "auth",
		"cluster",    "other",	     "read-index",
	};
	return (unsigned)req < sizeof(names) / sizeof(names[0]) ? names[req] : "?";
}

const char *raft_framing__name(enum raft_framing f)
{
	switch (f) {
	case RAFT_FRAMING_PIPELINE:
		return "pipeline";
	case RAFT_FRAMING_MESSAGE:
		return "message";
	case RAFT_FRAMING_MSGAPPV2:
		return "msgappv2";
	default:
		return "none";
	}
}

/* Paths and ids */

uint64_t raft__parse_id(const char *s, size_t len)
{
	uint64_t v = 0;

	if (!len || len > RAFT_ID_HEX_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (d < 0)
			return 0;
		v = v << 4 | (uint64_t)d;
	}
	return v;
}

bool raft__is_path(const char *path)
{
	return !strncmp(path, "/raft", 5) && (path[5] == 0 || path[5] == '/' || path[5] == '?');
}

enum raft_framing raft__framing_from_path(const char *path, uint64_t *id)
{
	static const struct {
		const char *prefix;
		enum raft_framing framing;
	} streams[] = {
		{ "/raft/stream/msgapp/", RAFT_FRAMING_MSGAPPV2 },
		{ "/raft/stream/message/", RAFT_FRAMING_MESSAGE },
	};

	if (id)
		*id = 0;
	if (!strcmp(path, "/raft") || !strncmp(path, "/raft?", 6))
		return RAFT_FRAMING_PIPELINE;
	for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); i++) {
		size_t n = strlen(streams[i].prefix);
		if (strncmp(path, streams[i].prefix, n))
			continue;
		const char *p = path + n;
		size_t l = strcspn(p, "/?");
		if (id)
			*id = raft__parse_id(p, l);
		return streams[i].framing;
	}
	return RAFT_FRAMING_NONE;
}

/* Entries and InternalRaftRequest */

static void copy_first_key(const uint8_t *buf, size_t len, char *dst, size_t cap)
{
	struct pb_field f;
	int err;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number == 1 && f.type == PB_WT_LEN) {
			pb__copy_string(dst, cap, f.data, f.len);
			return;
		}
	}
}

static uint64_t request_header_id(const uint8_t *buf, size_t len, int *err)
{
	struct pb_field f;
	uint64_t id = 0;

	FOR_EACH_FIELD(buf, len, f, *err)
	{
		if (f.number == 1 && f.type == PB_WT_VARINT)
			id = f.varint;
	}
	return id;
}

/* The kind of a request field of InternalRaftRequest; NONE for fields that are not requests. */
static enum raft_request request_kind(uint32_t number)
{
	switch (number) {
	case 3:
		return RAFT_REQ_RANGE;
	case 4:
		return RAFT_REQ_PUT;
	case 5:
		return RAFT_REQ_DELETE_RANGE;
	case 6:
		return RAFT_REQ_TXN;
	case 7:
		return RAFT_REQ_COMPACTION;
	case 8:
		return RAFT_REQ_LEASE_GRANT;
	case 9:
		return RAFT_REQ_LEASE_REVOKE;
	case 10:
		return RAFT_REQ_ALARM;
	case 11:
		return RAFT_REQ_LEASE_CHECKPOINT;
	case 1:
	case 100:
		return RAFT_REQ_NONE;
	default:
		if (number >= 1000 && number < 1300)
			return RAFT_REQ_AUTH;
		if (number >= 1300 && number <= 1302)
			return RAFT_REQ_CLUSTER;
		return RAFT_REQ_OTHER;
	}
}

/* InternalRaftRequest into e: its id and its (first) request. */
static int decode_request(const uint8_t *buf, size_t len, struct raft_entry *e)
{
	struct pb_field f;
	uint64_t legacy_id = 0, header_id = 0;
	bool has_header = false;
	int err, err2 = 0;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number == 1) {
			if (f.type != PB_WT_VARINT)
				return -EBADMSG;
			legacy_id = f.varint;
			continue;
		}
		if (f.number == 100) {
			if (f.type != PB_WT_LEN)
				return -EBADMSG;
			has_header = true;
			header_id = request_header_id(f.data, f.len, &err2);
			if (err2)
				return err2;
			continue;
		}
		enum raft_request kind = request_kind(f.number);
		if (f.type != PB_WT_LEN)
			return -EBADMSG;
		if (e->request != RAFT_REQ_NONE)
			continue; /* one request per entry; a second is not etcd's */
		e->request = kind;
		switch (kind) {
		case RAFT_REQ_TXN:
			err2 = etcd__decode_txn_request(f.data, f.len, &e->req.txn);
			break;
		case RAFT_REQ_PUT:
			err2 = etcd__decode_put_request(f.data, f.len, &e->req.put);
			break;
		case RAFT_REQ_RANGE:
		case RAFT_REQ_DELETE_RANGE:
			copy_first_key(f.data, f.len, e->req.key, sizeof(e->req.key));
			break;
		case RAFT_REQ_COMPACTION: {
			/* CompactionRequest{revision = 1, physical = 2} */
			struct pb_field g;
			FOR_EACH_FIELD(f.data, f.len, g, err2)
			{
				if (g.number == 1 && g.type == PB_WT_VARINT)
					e->req.compact_revision = (int64_t)g.varint;
			}
			break;
		}
		default:
			break; /* named only: auth requests hold passwords */
		}
		if (err2)
			return err2;
	}
	if (err)
		return err;
	e->request_id = has_header ? header_id : legacy_id;
	return 0;
}

/* An entry of a message of type msg_type (-1 unknown). MsgReadIndex and MsgReadIndexResp carry
 * the read request's 8-byte id in their entry's data, not an InternalRaftRequest. */
static int decode_entry(const uint8_t *buf, size_t len, struct raft_entry *e, int msg_type)
{
	struct pb_field f;
	const uint8_t *data = NULL;
	size_t data_len = 0;
	int err;

	memset(e, 0, offsetof(struct raft_entry, req));
	e->req.key[0] = 0;
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number >= 1 && f.number <= 3 && f.type != PB_WT_VARINT)
			return -EBADMSG;
		if (f.number == 4 && f.type != PB_WT_LEN)
			return -EBADMSG;
		switch (f.number) {
		case 1:
			e->type = (uint32_t)f.varint;
			break;
		case 2:
			e->term = f.varint;
			break;
		case 3:
			e->index = f.varint;
			break;
		case 4:
			data = f.data;
			data_len = f.len;
			break;
		}
	}
	if (err)
		return err;
	e->data_len = (uint32_t)data_len;
	if ((msg_type == RAFT_MSG_READ_INDEX || msg_type == RAFT_MSG_READ_INDEX_RESP) &&
	    data_len == 8) {
		e->request = RAFT_REQ_READ_INDEX;
		e->request_id = be64(data);
		return 0;
	}
	if (e->type != RAFT_ENTRY_NORMAL) {
		e->request = RAFT_REQ_UNDECODED;
		return 0;
	}
	if (!data_len)
		return 0;
	if (decode_request(data, data_len, e)) {
		memset(&e->req, 0, sizeof(e->req));
		e->request = RAFT_REQ_UNDECODED;
		e->request_id = 0;
	}
	return 0;
}

int raft__decode_entry(const uint8_t *buf, size_t len, struct raft_entry *e)
{
	return decode_entry(buf, len, e, -1);
}

/* Messages */

static int decode_snapshot(const uint8_t *buf, size_t len, struct raft_message *m)
{
	struct pb_field f, g;
	int err, err2 = 0;

	m->has_snapshot = true;
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number != 2 || f.type != PB_WT_LEN)
			continue;
		/* SnapshotMetadata{conf_state = 1, index = 2, term = 3} */
		FOR_EACH_FIELD(f.data, f.len, g, err2)
		{
			if (g.type != PB_WT_VARINT)
				continue;
			if (g.number == 2)
				m->snapshot_index = g.varint;
			else if (g.number == 3)
				m->snapshot_term = g.varint;
		}
		if (err2)
			return err2;
	}
	return err;
}

/* The message's fields but its entries (counted), into m. */
static int decode_header(const uint8_t *buf, size_t len, struct raft_message *m)
{
	struct pb_field f;
	int err, err2 = 0;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		bool is_len = f.number == 7 || f.number == 9 || f.number == 12 || f.number == 14;
		if (f.number <= 14 && f.type != (is_len ? PB_WT_LEN : PB_WT_VARINT))
			return -EBADMSG;
		switch (f.number) {
		case 1:
			m->type = f.varint > UINT32_MAX ? UINT32_MAX : (uint32_t)f.varint;
			break;
		case 2:
			m->to = f.varint;
			break;
		case 3:
			m->from = f.varint;
			break;
		case 4:
			m->term = f.varint;
			break;
		case 5:
			m->log_term = f.varint;
			break;
		case 6:
			m->index = f.varint;
			break;
		case 7:
			m->entries_total++;
			break;
		case 8:
			m->commit = f.varint;
			break;
		case 9:
			err2 = decode_snapshot(f.data, f.len, m);
			break;
		case 10:
			m->reject = f.varint != 0;
			break;
		case 11:
			m->reject_hint = f.varint;
			break;
		case 12:
			m->context_len = (uint32_t)f.len;
			break;
		case 13:
			m->vote = f.varint;
			break;
		case 14:
			m->responses++;
			break;
		}
		if (err2)
			return err2;
	}
	return err;
}

static void message_reset(struct raft_message *m)
{
	memset(m, 0, offsetof(struct raft_message, entries));
	m->state_known = true;
	m->ids_known = true;
}

/* Reports the part gathered in m (n_entries of them) and starts the next. */
static void emit_part(struct raft_message *m, bool last, raft_message_cb cb, void *ctx)
{
	m->last_part = last;
	if (cb)
		cb(m, ctx);
	m->entries_first += m->n_entries;
	m->n_entries = 0;
}

/* The message's entries through m->entries, in parts. A malformed entry is reported with request
 * RAFT_REQ_UNDECODED and the fields read before the damage. */
static void report_entries(const uint8_t *buf, size_t len, struct raft_message *m,
			   raft_message_cb cb, void *ctx)
{
	struct pb_field f;
	int err;

	m->entries_first = 0;
	m->n_entries = 0;
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number != 7)
			continue;
		if (m->n_entries == RAFT_MSG_ENTRIES)
			emit_part(m, false, cb, ctx);
		struct raft_entry *e = &m->entries[m->n_entries++];
		if (decode_entry(f.data, f.len, e, (int)m->type))
			e->request = RAFT_REQ_UNDECODED;
	}
	emit_part(m, true, cb, ctx);
}

/* Decodes a whole message into m (framing, ts and ids_known are the caller's). Returns 1 for a
 * link heartbeat (not reported), 0 when reported, -EBADMSG. */
static int decode_message(const uint8_t *buf, size_t len, struct raft_message *m,
			  raft_message_cb cb, void *ctx)
{
	enum raft_framing framing = m->framing;
	uint64_t ts_first = m->ts_first_ns, ts_last = m->ts_last_ns;

	message_reset(m);
	m->framing = framing;
	m->ts_first_ns = ts_first;
	m->ts_last_ns = ts_last;
	m->len = (uint32_t)len;
	if (decode_header(buf, len, m))
		return -EBADMSG;
	/* rafthttp's link heartbeat: MsgHeartbeat from 0 to 0. */
	if (m->type == RAFT_MSG_HEARTBEAT && !m->from && !m->to)
		return 1;
	report_entries(buf, len, m, cb, ctx);
	return 0;
}

int raft__decode_message(const uint8_t *buf, size_t len, struct raft_message *m, raft_message_cb cb,
			 void *ctx)
{
	if (!pb__valid_message(buf, len))
		return -EBADMSG;
	int r = decode_message(buf, len, m, cb, ctx);
	if (r == 1) {
		/* Asked directly: a link heartbeat is a message like any other. */
		report_entries(buf, len, m, cb, ctx);
		r = 0;
	}
	return r;
}

/* The Index of the last entry of a whole message, and whether it has entries. */
static bool last_entry_index(const uint8_t *buf, size_t len, uint64_t *index)
{
	struct pb_field f, g;
	const uint8_t *last = NULL;
	size_t last_len = 0;
	int err;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number == 7 && f.type == PB_WT_LEN) {
			last = f.data;
			last_len = f.len;
		}
	}
	if (!last)
		return false;
	*index = 0;
	FOR_EACH_FIELD(last, last_len, g, err)
	{
		if (g.number == 3 && g.type == PB_WT_VARINT)
			*index = g.varint;
	}
	return true;
}

/* Recognising frames met mid-stream */

/* Do the first n bytes of a protobuf message parse as fields, the last one possibly cut? Only the
 * shape is checked: field numbers and wire types. */
static bool fields_prefix_ok(const uint8_t *b, size_t n)
{
	size_t pos = 0;
	uint64_t tag, v;

	while (pos < n) {
		int r = pb__read_varint(b, n, &pos, &tag);
		if (r == -EAGAIN)
			return true;
		if (r || !(tag >> 3) || (tag >> 3) > PB_MAX_FIELD)
			return false;
		switch (tag & 7) {
		case PB_WT_VARINT:
			r = pb__read_varint(b, n, &pos, &v);
			if (r == -EAGAIN)
				return true;
			if (r)
				return false;
			break;
		case PB_WT_LEN:
			r = pb__read_varint(b, n, &pos, &v);
			if (r == -EAGAIN)
				return true;
			if (r || v > RAFT_FRAME_LIMIT)
				return false;
			if (v >= n - pos)
				return true;
			pos += (size_t)v;
			break;
		case PB_WT_I64:
			if (n - pos <= 8)
				return true;
			pos += 8;
			break;
		case PB_WT_I32:
			if (n - pos <= 4)
				return true;
			pos += 4;
			break;
		default:
			return false;
		}
	}
	return true;
}

/* A Message of msg_len bytes whose first n bytes are b: type first (both encoders write field 1
 * first), a type on the wire (want: one type, or -1 any), and well-formed so far. */
static bool message_start_ok(const uint8_t *b, size_t n, uint64_t msg_len, int want)
{
	if (n < 2 || b[0] != 0x08 || b[1] >= RAFT_MSG_TYPE_COUNT)
		return false;
	if (want >= 0 && b[1] != want)
		return false;
	if (n >= msg_len)
		return pb__valid_message(b, (size_t)msg_len);
	return fields_prefix_ok(b, n);
}

/* An msgappv2 AppEntries (0x01) or App (0x02) frame at b: 1, 0, or -1 (more bytes needed). */
static int msgappv2_frame_ok(const uint8_t *b, size_t n)
{
	if (b[0] == 1) {
		if (n < RAFT_MSGAPPV2_HEADER)
			return -1;
		uint64_t count = be64(b + 1);
		if (count > RAFT_APPENTRIES_MAX)
			return 0;
		if (n < RAFT_COMMIT_ONLY_FRAME)
			return -1;
		if (!count)
			return be64(b + 9) < (1ull << 48); /* a commit index */
		uint64_t elen = be64(b + 9);
		if (!elen || elen > RAFT_FRAME_LIMIT)
			return 0;
		if (n == RAFT_COMMIT_ONLY_FRAME)
			return -1;
		/* An Entry: fields 1-3 varints, 4 bytes. */
		uint8_t t = b[17];
		if (t != 0x08 && t != 0x10 && t != 0x18 && t != 0x22)
			return 0;
		size_t have = n - 17;
		if (have >= elen)
			return pb__valid_message(b + 17, (size_t)elen);
		return fields_prefix_ok(b + 17, have);
	}
	if (b[0] == 2) {
		if (n < RAFT_MSGAPPV2_HEADER + 2)
			return -1;
		uint64_t mlen = be64(b + 1);
		if (mlen < 2 || mlen > RAFT_FRAME_LIMIT)
			return 0;
		return message_start_ok(b + 9, n - 9, mlen, RAFT_MSG_APP);
	}
	return 0;
}

int raft__frame_start(const uint8_t *b, size_t n, uint64_t chunk_len)
{
	if (!n)
		return -1;
	if (b[0] == 1 || b[0] == 2) {
		int r = msgappv2_frame_ok(b, n);
		return r > 0 ? RAFT_FRAMING_MSGAPPV2 : r;
	}
	if (b[0] != 0)
		return 0;
	if (chunk_len == 1)
		return RAFT_FRAMING_MSGAPPV2; /* a chunk of one link heartbeat */
	bool more = false;
	/* The message stream: [u64 len][Message]. */
	if (n >= 10) {
		uint64_t mlen = be64(b);
		if (mlen >= 2 && mlen <= RAFT_FRAME_LIMIT &&
		    message_start_ok(b + 8, n - 8, mlen, -1))
			return RAFT_FRAMING_MESSAGE;
	} else {
		more = true;
	}
	/* msgappv2 link heartbeats, then a frame. */
	size_t i = 0;
	while (i < n && i < 8 && b[i] == 0)
		i++;
	if (i == n)
		return -1;
	if (b[i] == 1 || b[i] == 2) {
		int r = msgappv2_frame_ok(b + i, n - i);
		if (r > 0)
			return RAFT_FRAMING_MSGAPPV2;
		more |= r < 0;
	}
	return more ? -1 : 0;
}

/* The stream parser */

void raft_stream__init(struct raft_stream *s, enum raft_framing framing)
{
	memset(s, 0, sizeof(*s));
	s->framing = framing;
	/* From its start, both ends of an msgappv2 stream hold term 0, index 0. */
	s->state_known = true;
}

void raft_stream__free(struct raft_stream *s)
{
	free(s->buf);
	free(s->msg);
	s->buf = NULL;
	s->msg = NULL;
	s->cap = s->len = 0;
}

void raft_stream__set_ids(struct raft_stream *s, uint64_t sender, uint64_t receiver)
{
	s->sender = sender;
	s->receiver = receiver;
	s->ids_known = sender && receiver;
}

size_t raft_stream__heap_bytes(const struct raft_stream *s)
{
	return s->cap + (s->msg ? sizeof(*s->msg) : 0);
}

static void frame_done(struct raft_stream *s)
{
	s->state = RAFT_S_FRAME;
	s->frame_started = false;
	s->number_got = 0;
	s->len = 0;
	s->app_frame = false;
	if (s->cap > RAFT_BUF_KEEP) {
		free(s->buf);
		s->buf = NULL;
		s->cap = 0;
	}
}

static void lose(struct raft_stream *s)
{
	s->stats.lost++;
	s->state = RAFT_S_LOST;
	s->state_known = false;
	s->frame_started = false;
	s->number_got = 0;
	s->len = 0;
	s->app_frame = false;
}

void raft_stream__lose(struct raft_stream *s)
{
	if (s->state == RAFT_S_LOST)
		return;
	if (s->framing == RAFT_FRAMING_PIPELINE) {
		/* One message per body: what is kept is no longer it. */
		s->keep = false;
		s->stats.lost++;
		return;
	}
	lose(s);
}

void raft_stream__resume(struct raft_stream *s, enum raft_framing framing)
{
	if (framing == RAFT_FRAMING_MESSAGE || framing == RAFT_FRAMING_MSGAPPV2)
		s->framing = framing;
	frame_done(s);
	s->state_known = false;
}

/* Makes room for `more` bytes of the frame; gives up keeping it past RAFT_FRAME_KEEP_MAX or
 * without memory (the frame is then skipped, its boundaries kept). */
static void frame_reserve(struct raft_stream *s, uint64_t more)
{
	if (!s->keep)
		return;
	uint64_t want = (uint64_t)s->len + more;
	if (want > RAFT_FRAME_KEEP_MAX) {
		s->keep = false;
		return;
	}
	if (want <= s->cap)
		return;
	uint64_t cap = s->cap ? s->cap : 256;
	while (cap < want)
		cap *= 2;
	if (cap > RAFT_FRAME_KEEP_MAX)
		cap = RAFT_FRAME_KEEP_MAX;
	uint8_t *nb = realloc(s->buf, (size_t)cap);
	if (!nb) {
		s->keep = false;
		return;
	}
	s->buf = nb;
	s->cap = (uint32_t)cap;
}

static void frame_append(struct raft_stream *s, const uint8_t *p, size_t n)
{
	frame_reserve(s, n);
	if (!s->keep)
		return;
	memcpy(s->buf + s->len, p, n);
	s->len += (uint32_t)n;
}

static struct raft_message *stream_msg(struct raft_stream *s)
{
	if (!s->msg)
		s->msg = calloc(1, sizeof(*s->msg));
	return s->msg;
}

/* Counts what is reported, and keeps the msgappv2 state after an App frame. */
struct report_ctx {
	struct raft_stream *s;
	raft_message_cb cb;
	void *ctx;
};

static void on_part(const struct raft_message *m, void *ctx)
{
	struct report_ctx *x = ctx;

	if (m->last_part)
		x->s->stats.messages++;
	if (x->cb)
		x->cb(m, x->ctx);
}

/* A whole message frame (message stream, App, pipeline) is in s->buf, or was skipped. */
static void message_frame_done(struct raft_stream *s, uint64_t ts, raft_message_cb cb, void *ctx)
{
	struct raft_message *m = stream_msg(s);
	struct report_ctx x = { s, cb, ctx };

	if (!s->keep || !m) {
		s->stats.frames_skipped++;
		s->stats.bytes_skipped += s->frame_len;
		if (s->app_frame)
			s->state_known = false;
		frame_done(s);
		return;
	}
	m->framing = s->framing;
	m->ts_first_ns = s->ts_first_ns;
	m->ts_last_ns = ts;
	if (!pb__valid_message(s->buf, s->len)) {
		s->stats.decode_errors++;
		if (s->app_frame)
			s->state_known = false;
		frame_done(s);
		return;
	}
	int r = decode_message(s->buf, s->len, m, on_part, &x);
	if (r == 1)
		s->stats.link_heartbeats++;
	else if (r < 0)
		s->stats.decode_errors++;
	if (s->app_frame) {
		/* What both ends keep after an App frame. */
		if (r == 0) {
			uint64_t last;
			s->term = m->term;
			s->index = last_entry_index(s->buf, s->len, &last) ? last : m->index;
			s->state_known = true;
			s->sender = m->from;
			s->receiver = m->to;
			s->ids_known = m->from && m->to;
		} else {
			s->state_known = false;
		}
	}
	frame_done(s);
}

/* A whole AppEntries frame: s->buf holds [u64 n] n x [u64 len][Entry] [u64 commit] when kept. */
static void app_entries_done(struct raft_stream *s, uint64_t total, uint64_t commit, uint64_t ts,
			     raft_message_cb cb, void *ctx)
{
	struct raft_message *m = stream_msg(s);
	struct report_ctx x = { s, cb, ctx };
	bool state_known = s->state_known;

	s->stats.app_entries++;
	if (!m) {
		s->stats.frames_skipped++;
		s->state_known = false;
		frame_done(s);
		return;
	}
	message_reset(m);
	m->framing = RAFT_FRAMING_MSGAPPV2;
	m->app_entries = true;
	m->type = RAFT_MSG_APP;
	m->ids_known = s->ids_known;
	if (s->ids_known) {
		m->from = s->sender;
		m->to = s->receiver;
	}
	m->commit = commit;
	m->entries_total = (uint32_t)total;
	m->len = (uint32_t)(s->frame_len > UINT32_MAX ? UINT32_MAX : s->frame_len);
	m->ts_first_ns = s->ts_first_ns;
	m->ts_last_ns = ts;
	m->entries_cut = !s->keep && total;
	if (m->entries_cut)
		s->stats.frames_skipped++;
	/* The entries, in parts; the state is checked against the first before anything is
	 * reported: its Index follows the state's index. */
	size_t pos = 8;
	bool first = true;
	for (uint64_t i = 0; s->keep && i < total; i++) {
		if (pos + 8 > s->len)
			break;
		uint64_t elen = be64(s->buf + pos);
		pos += 8;
		if (elen > s->len - pos)
			break;
		if (m->n_entries == RAFT_MSG_ENTRIES) {
			m->state_known = state_known;
			if (state_known) {
				m->term = m->log_term = s->term;
				m->index = s->index;
			}
			on_part(m, &x);
			m->entries_first += m->n_entries;
			m->n_entries = 0;
		}
		struct raft_entry *e = &m->entries[m->n_entries++];
		if (raft__decode_entry(s->buf + pos, (size_t)elen, e)) {
			e->request = RAFT_REQ_UNDECODED;
			s->stats.decode_errors++;
		}
		if (first && state_known && e->index != s->index + 1) {
			/* Not what the state says: bytes were lost that the transport did not
			 * notice. Reported without a state rather than with a wrong one. */
			state_known = false;
			s->state_known = false;
		}
		first = false;
		pos += (size_t)elen;
	}
	m->state_known = state_known;
	if (state_known) {
		m->term = m->log_term = s->term;
		m->index = s->index;
		s->index += total;
	} else {
		s->stats.state_unknown++;
	}
	m->last_part = true;
	on_part(m, &x);
	frame_done(s);
}

static void frame_begin(struct raft_stream *s, uint64_t ts)
{
	s->frame_started = true;
	s->ts_first_ns = ts;
	s->keep = true;
	s->len = 0;
	s->frame_len = 0;
	s->number_got = 0;
}

/* A u64 of the frame was read. Returns 0, or -EBADMSG when it cannot be believed. */
static int number_done(struct raft_stream *s, uint64_t v, uint64_t ts, raft_message_cb cb,
		       void *ctx)
{
	switch (s->number_for) {
	case RAFT_NUM_MESSAGE_LEN:
		if (!v || v > RAFT_FRAME_LIMIT)
			return -EBADMSG;
		/* Kept or not is decided now; the buffer grows as the bytes come, not on the
		 * length's word. */
		s->frame_len = v;
		s->need = v;
		s->len = 0;
		s->keep = v <= RAFT_FRAME_KEEP_MAX;
		s->state = RAFT_S_MESSAGE;
		return 0;
	case RAFT_NUM_ENTRY_COUNT:
		if (v > RAFT_APPENTRIES_MAX)
			return -EBADMSG;
		s->entries_left = v;
		s->entries_total = v;
		s->frame_len = 1 + 8 + 8;
		frame_append(s, s->number, 8);
		s->number_for = v ? RAFT_NUM_ENTRY_LEN : RAFT_NUM_COMMIT;
		s->state = RAFT_S_NUMBER;
		return 0;
	case RAFT_NUM_ENTRY_LEN:
		if (v > RAFT_FRAME_LIMIT || s->frame_len + 8 + v > RAFT_FRAME_LIMIT)
			return -EBADMSG;
		s->frame_len += 8 + v;
		frame_append(s, s->number, 8);
		s->need = v;
		s->state = RAFT_S_ENTRY;
		if (!v) {
			/* An empty Entry: nothing to read. */
			s->entries_left--;
			s->number_for = s->entries_left ? RAFT_NUM_ENTRY_LEN : RAFT_NUM_COMMIT;
			s->state = RAFT_S_NUMBER;
		}
		return 0;
	case RAFT_NUM_COMMIT:
		app_entries_done(s, s->entries_total, v, ts, cb, ctx);
		return 0;
	}
	return -EBADMSG;
}

int raft_stream__feed(struct raft_stream *s, const uint8_t *buf, size_t len, uint64_t ts,
		      raft_message_cb cb, void *ctx)
{
	while (len) {
		switch (s->state) {
		case RAFT_S_LOST:
			s->stats.bytes_skipped += len;
			return 0;
		case RAFT_S_FRAME:
			frame_begin(s, ts);
			if (s->framing == RAFT_FRAMING_PIPELINE) {
				s->state = RAFT_S_MESSAGE;
				s->need = UINT64_MAX;
				break;
			}
			if (s->framing == RAFT_FRAMING_MESSAGE) {
				s->state = RAFT_S_NUMBER;
				s->number_for = RAFT_NUM_MESSAGE_LEN;
				break;
			}
			if (s->framing != RAFT_FRAMING_MSGAPPV2)
				goto lost;
			{
				uint8_t t = *buf++;
				len--;
				if (t == 0) {
					s->stats.link_heartbeats++;
					frame_done(s);
				} else if (t == 1) {
					s->state = RAFT_S_NUMBER;
					s->number_for = RAFT_NUM_ENTRY_COUNT;
				} else if (t == 2) {
					s->state = RAFT_S_NUMBER;
					s->number_for = RAFT_NUM_MESSAGE_LEN;
					s->app_frame = true;
				} else {
					goto lost;
				}
			}
			break;
		case RAFT_S_NUMBER: {
			size_t n = 8 - s->number_got;
			if (n > len)
				n = len;
			memcpy(s->number + s->number_got, buf, n);
			s->number_got += (uint8_t)n;
			buf += n;
			len -= n;
			if (s->number_got < 8)
				break;
			s->number_got = 0;
			if (number_done(s, be64(s->number), ts, cb, ctx))
				goto lost;
			break;
		}
		case RAFT_S_MESSAGE: {
			size_t n = s->need < len ? (size_t)s->need : len;
			if (s->framing == RAFT_FRAMING_PIPELINE) {
				s->frame_len += n;
				frame_append(s, buf, n);
				if (!s->keep)
					s->stats.bytes_skipped += n;
				buf += n;
				len -= n;
				break;
			}
			frame_append(s, buf, n);
			s->need -= n;
			buf += n;
			len -= n;
			if (!s->need)
				message_frame_done(s, ts, cb, ctx);
			break;
		}
		case RAFT_S_ENTRY: {
			size_t n = s->need < len ? (size_t)s->need : len;
			frame_append(s, buf, n);
			s->need -= n;
			buf += n;
			len -= n;
			if (!s->need) {
				s->entries_left--;
				s->number_for =
				    s->entries_left ? RAFT_NUM_ENTRY_LEN : RAFT_NUM_COMMIT;
				s->state = RAFT_S_NUMBER;
			}
			break;
		}
		}
	}
	return 0;
lost:
	s->stats.bytes_skipped += len;
	lose(s);
	return -EBADMSG;
}

void raft_stream__end(struct raft_stream *s, uint64_t ts, raft_message_cb cb, void *ctx)
{
	if (s->framing == RAFT_FRAMING_PIPELINE && s->state == RAFT_S_MESSAGE) {
		if (s->frame_len)
			message_frame_done(s, ts, cb, ctx);
		else
			frame_done(s);
		return;
	}
	if (s->frame_started && s->state != RAFT_S_LOST && s->state != RAFT_S_FRAME)
		lose(s);
}
