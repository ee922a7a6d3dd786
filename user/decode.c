/* The per-connection decoder: detects the protocol, drives the HTTP/2 or HTTP/1.1 layer, keeps a
 * bounded table of streams, routes each stream's body by its headers (or, for streams that began
 * before capture or whose :path was an HPACK entry never seen, by probing at DATA frame starts)
 * to the gRPC framer, the Kubernetes watch framers, the rafthttp framer (raft.c) or a whole-body
 * buffer, and turns complete messages into decoded_msg callbacks. The protocol layer, the stream
 * table's entries and every buffer are allocated when first needed, so an idle connection costs a
 * few KiB. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decode.h"
#include "grpc.h"
#include "h2.h"
#include "http1.h"
#include "redact.h"
#include "stream_pos.h"
#include "util.h"

#define DETECT_MAX 16384
#define DETECT_MIN 512
#define SNIFF_MAX 64
/* A gRPC message that runs past its DATA frame: only believed of a frame this large. */
#define GRPC_SPLIT_FRAME_MIN 4096

enum body_mode {
	BODY_MODE_NONE = 0,   /* not decided yet */
	BODY_MODE_WHOLE,      /* keep the body, decode at its end */
	BODY_MODE_GRPC,	      /* 5-byte framed gRPC messages, each decoded as it completes */
	BODY_MODE_K8S_WATCH,  /* 4-byte framed protobuf WatchEvents */
	BODY_MODE_JSON_LINES, /* newline-delimited JSON watch events */
	BODY_MODE_SNIFF,      /* stream seen mid-way: find a message start at a frame start */
	BODY_MODE_PROBE,      /* head seen but :path unknown: judge the first frame, keep it all */
	BODY_MODE_DISCARD,
	BODY_MODE_RAFT, /* a rafthttp body: pipeline message or stream frames (half.raft) */
	BODY_MODE_LIST, /* a JSON list: its head kept (buf), its items counted, not kept */
};

struct half {
	bool started;
	bool headers; /* its header block was seen */
	bool ended;
	bool lost;	/* bytes of the body were lost: streamed bodies look for a message again */
	bool head_lost; /* its header block was damaged or had unknown :method/:status */
	bool emitted_head;
	enum body_mode mode;
	uint64_t ts_first;
	uint64_t ts_last;
	uint64_t body_len;
	char content_type[DECODE_CONTENT_TYPE_MAX];
	struct lp_framer framer;
	uint8_t *buf;
	uint32_t len;
	uint32_t cap;
	bool truncated;
	bool list_judged; /* BODY_MODE_WHOLE: whether it is a JSON list was decided */
	/* the first bytes of a DATA frame while sniffing or probing */
	uint8_t sniff[SNIFF_MAX];
	uint32_t sniff_len;
	bool sniff_done;	  /* gave up on this frame */
	uint32_t probe_frame_len; /* content length of the frame being probed, 0 unknown */
	struct raft_stream *raft; /* BODY_MODE_RAFT, and kept after a loss for its state */
};

struct stream {
	bool head_unknown; /* no request headers, or no :path: began before capture or lost */
	bool inferred;	   /* http.path and etcd were inferred from a message */
	int request_dir;   /* where the request head was seen, -1 */
	uint32_t id;
	uint64_t last_use;
	struct decoded_http http;
	enum etcd_method etcd;
	bool grpc;
	bool watch;
	bool grpc_streaming;
	bool table;
	bool raft_path;		/* a rafthttp request (/raft...) */
	enum raft_framing raft; /* its message framing, from the path */
	uint64_t raft_receiver; /* streams: the dialer (the id in the path) */
	uint64_t raft_sender;	/* streams: the server (X-Raft-To) */
	struct k8s_table_columns cols;
	int trailers_dir; /* -1; the direction whose trailers are being read */
	struct half half[2];
};

struct conn_decoder {
	conn_decoder_cb cb;
	void *ctx;
	enum conn_proto proto;
	int client_dir;
	bool client_dir_given; /* by the caller: detection does not change it */
	bool unreliable;
	struct stream_pos pos[2]; /* where each direction is: gaps are computed there */
	bool begun[2];
	bool lost_before[2]; /* bytes lost before the protocol layer began */
	/* A direction's first bytes, held until the protocol is detected and it is known how the
	 * direction begins (connection start, a frame boundary, or anywhere). */
	uint64_t detect_offset[2];
	uint32_t detect_scan[2];
	uint8_t *detect[2];
	uint32_t detect_cap[2];
	uint32_t detect_len[2];
	uint64_t detect_ts[2];
	struct h2_conn *h2;
	struct http1_conn *h1;
	uint32_t h1_next_request;
	uint32_t h1_next_response;
	uint32_t h1_current[2];
	uint64_t use_clock;
	/* The open streams, sorted by id (found by binary search); the array grows as they come
	 * (a bind burst keeps hundreds open at once on the apiserver's connection to etcd). A
	 * released stream is freed: an idle connection (a kubelet's, between its Lease renewals)
	 * holds only its open streams. */
	uint32_t nstreams;
	uint32_t streams_cap;
	struct stream **streams;
	/* pending headers of the block being decoded */
	struct decoded_http hdr;
	bool hdr_has_method;
	bool hdr_has_status;
	bool hdr_unknown;
	uint64_t hdr_raft_to; /* X-Raft-To */
	struct conn_decoder_stats stats;
	uint64_t bytes_unhandled;	       /* no memory for the protocol layer */
	struct raft_stream_stats raft_retired; /* of raft streams freed */
};

const char *decoded_kind__name(enum decoded_kind k)
{
	static const char *const names[] = {
		"none",	       "request",	   "response",	   "grpc-request", "grpc-response",
		"watch-event", "etcd-watch-event", "stream-reset", "goaway",	   "raft-message"
	};
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

const char *decoded_body_kind__name(enum decoded_body_kind k)
{
	static const char *const names[] = { "none",
					     "k8s",
					     "k8s-watch-event",
					     "etcd-txn",
					     "etcd-txn-response",
					     "etcd-range",
					     "etcd-range-response",
					     "etcd-watch-request",
					     "etcd-watch-response",
					     "etcd-watch-event",
					     "undecoded",
					     "raft-message" };
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

const char *conn_proto__name(enum conn_proto p)
{
	return p == CONN_PROTO_H2 ? "h2" : p == CONN_PROTO_HTTP1 ? "http/1.1" : "unknown";
}

/* Streams */

static void half_raft_free(struct half *h)
{
	if (!h->raft)
		return;
	raft_stream__free(h->raft);
	free(h->raft);
	h->raft = NULL;
}

/* A raft stream's counts outlive it in the connection's statistics. */
static void raft_stats_add(struct raft_stream_stats *sum, const struct raft_stream_stats *st)
{
	sum->decode_errors += st->decode_errors;
	sum->lost += st->lost;
	sum->bytes_skipped += st->bytes_skipped;
}

static void half_raft_retire(struct conn_decoder *c, struct half *h)
{
	if (h->raft)
		raft_stats_add(&c->raft_retired, &h->raft->stats);
	half_raft_free(h);
}

static void half_reset(struct half *h)
{
	uint8_t *buf = h->buf;
	uint32_t cap = h->cap;
	struct lp_framer f = h->framer;

	memset(h, 0, sizeof(*h));
	h->buf = buf;
	h->cap = cap;
	h->framer = f;
	h->framer.state = LP_PREFIX;
	h->framer.prefix_got = 0;
	h->framer.got = 0;
	h->framer.messages = 0;
}

static void stream_free_buffers(struct stream *s)
{
	for (int d = 0; d < 2; d++) {
		free(s->half[d].buf);
		s->half[d].buf = NULL;
		s->half[d].cap = 0;
		lp_framer__free(&s->half[d].framer);
		half_raft_free(&s->half[d]);
	}
}

/* Where id is in the sorted table, or where it would go. */
static uint32_t stream_slot(const struct conn_decoder *c, uint32_t id)
{
	uint32_t lo = 0, hi = c->nstreams;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->streams[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void stream_remove(struct conn_decoder *c, uint32_t at)
{
	memmove(&c->streams[at], &c->streams[at + 1],
		(c->nstreams - at - 1) * sizeof(c->streams[0]));
	c->nstreams--;
}

static void stream_release(struct conn_decoder *c, struct stream *s)
{
	uint32_t at = stream_slot(c, s->id);

	half_raft_retire(c, &s->half[0]);
	half_raft_retire(c, &s->half[1]);
	if (at < c->nstreams && c->streams[at] == s)
		stream_remove(c, at);
	stream_free_buffers(s);
	free(s);
}

static struct stream *stream_find(struct conn_decoder *c, uint32_t id)
{
	uint32_t at = stream_slot(c, id);

	if (at == c->nstreams || c->streams[at]->id != id)
		return NULL;
	c->streams[at]->last_use = ++c->use_clock;
	return c->streams[at];
}

/* Room for one more stream: the table grown, or at DECODE_MAX_STREAMS its least recently used
 * stream dropped (counted: its messages may be incomplete). false without memory. */
static bool stream_room(struct conn_decoder *c)
{
	uint32_t i, lru = 0;

	if (c->nstreams < c->streams_cap)
		return true;
	if (c->streams_cap < DECODE_MAX_STREAMS) {
		uint32_t cap = c->streams_cap ? c->streams_cap * 2 : 8;
		struct stream **more = realloc(c->streams, cap * sizeof(*more));

		if (!more)
			return false;
		c->streams = more;
		c->streams_cap = cap;
		return true;
	}
	for (i = 1; i < c->nstreams; i++)
		if (c->streams[i]->last_use < c->streams[lru]->last_use)
			lru = i;
	c->stats.streams_evicted++;
	stream_release(c, c->streams[lru]);
	return true;
}

/* The stream of id, made when there is none (at the cap, in place of the least recently used).
 * NULL only without memory. */
static struct stream *stream_get(struct conn_decoder *c, uint32_t id)
{
	struct stream *s = stream_find(c, id);
	uint32_t at;

	if (s)
		return s;
	if (!stream_room(c) || !(s = calloc(1, sizeof(*s))))
		return NULL;
	at = stream_slot(c, id);
	memmove(&c->streams[at + 1], &c->streams[at], (c->nstreams - at) * sizeof(c->streams[0]));
	c->streams[at] = s;
	c->nstreams++;
	half_reset(&s->half[0]);
	half_reset(&s->half[1]);
	s->id = id;
	s->last_use = ++c->use_clock;
	s->head_unknown = true;
	s->request_dir = -1;
	s->http.grpc_status = -1;
	s->trailers_dir = -1;
	k8s_table_columns__init(&s->cols);
	return s;
}

/* Messages */

static bool dir_is_client(const struct conn_decoder *c, int dir, bool guess)
{
	return c->client_dir >= 0 ? dir == c->client_dir : guess;
}

/* Does dir carry the client's half of s? Without a known client side, the half where its request
 * head was seen is, else the guess stands. */
static bool half_is_client(const struct conn_decoder *c, const struct stream *s, int dir,
			   bool guess)
{
	return dir_is_client(c, dir, s->request_dir >= 0 ? dir == s->request_dir : guess);
}

/* Learns the client side from the traffic, unless the caller said; a decisive sign (a preface, a
 * request line) overrides an earlier guess. */
static void learn_client_dir(struct conn_decoder *c, int client_dir, bool decisive)
{
	if (c->client_dir_given || (c->client_dir >= 0 && !decisive))
		return;
	c->client_dir = client_dir;
}

static bool raft_stream_endpoint(const struct stream *s)
{
	return s->raft == RAFT_FRAMING_MESSAGE || s->raft == RAFT_FRAMING_MSGAPPV2;
}

/* The message being built. It lives only for the callback (decode.h), and no callback feeds a
 * decoder (the dispatch and the replay feed them, one at a time): one per thread serves every
 * decoder, where each connection held one (5.6 KiB: the body union's fixed-size fields). */
static _Thread_local struct decoded_msg msg_scratch;

static struct decoded_msg *msg_begin(struct conn_decoder *c, struct stream *s, int dir,
				     enum decoded_kind kind, bool client_guess)
{
	struct decoded_msg *m = &msg_scratch;

	memset(m, 0, offsetof(struct decoded_msg, body));
	m->kind = kind;
	m->proto = c->proto;
	m->dir = (enum conn_dir)dir;
	m->client_known = c->client_dir >= 0;
	m->from_client = dir_is_client(c, dir, client_guess);
	m->unreliable = c->unreliable;
	m->http.grpc_status = -1;
	if (s) {
		struct half *h = &s->half[dir];
		m->stream_id = s->id;
		m->http = s->http;
		m->incomplete = h->lost || h->head_lost ||
				(s->head_unknown && kind != DECODED_WATCH_EVENT &&
				 kind != DECODED_ETCD_WATCH_EVENT && kind != DECODED_RAFT_MESSAGE);
		m->ts_first_ns = h->ts_first;
		m->ts_last_ns = h->ts_last;
		util__copy(m->http.content_type, sizeof(m->http.content_type), h->content_type);
		m->streaming = s->watch || s->grpc_streaming || raft_stream_endpoint(s) ||
			       (h->raft && h->raft->framing != RAFT_FRAMING_PIPELINE);
		m->inferred = s->inferred;
	}
	return m;
}

static void emit(struct conn_decoder *c, struct decoded_msg *m)
{
	c->stats.messages++;
	if (c->cb)
		c->cb(m, c->ctx);
}

/* Body decoding */

static void decode_k8s_body(struct conn_decoder *c, struct decoded_msg *m, const uint8_t *buf,
			    size_t len, struct k8s_table_columns *cols)
{
	int err;

	m->body_len = len;
	if (!len) {
		m->body_kind = BODY_NONE;
		return;
	}
	if (len >= K8S_MAGIC_LEN && !memcmp(buf, K8S_MAGIC, K8S_MAGIC_LEN))
		err = k8s__decode_protobuf(buf, len, &m->body.k8s);
	else if (buf[0] == '{' || buf[0] == ' ' || buf[0] == '\n')
		err = k8s__decode_json((const char *)buf, len, &m->body.k8s, cols);
	else
		err = -EPROTONOSUPPORT; /* not an object: /metrics text, a log, HTML */
	if (err) {
		c->stats.decode_errors += err != -EPROTONOSUPPORT;
		m->body_kind = BODY_UNDECODED;
		return;
	}
	m->body_kind = BODY_K8S;
}

struct etcd_emit_ctx {
	struct conn_decoder *c;
	struct stream *s;
	int dir;
	uint64_t ts_first, ts_last;
	size_t len;
	bool emitted;
};

static void on_etcd_event(const struct etcd_watch_response *resp, const struct etcd_watch_event *ev,
			  void *ctx)
{
	struct etcd_emit_ctx *x = ctx;
	struct decoded_msg *m = msg_begin(x->c, x->s, x->dir, DECODED_ETCD_WATCH_EVENT, false);

	m->ts_first_ns = x->ts_first;
	m->ts_last_ns = x->ts_last;
	m->body_len = x->len;
	m->body_kind = BODY_ETCD_WATCH_EVENT;
	m->body.etcd_watch.response = *resp;
	m->body.etcd_watch.event = *ev;
	x->emitted = true;
	emit(x->c, m);
}

/* A gRPC stream whose :path is unknown: its etcd method from this message, when the message fits
 * one method's strictly. A request tells more than a response, so a side the connection does not
 * know yet is tried as the client's first. Sets *client to the side the message showed. */
static void infer_method(struct conn_decoder *c, struct stream *s, int dir, const uint8_t *buf,
			 size_t len, bool *client)
{
	bool known = c->client_dir >= 0 || s->request_dir >= 0;
	enum etcd_method m = ETCD_METHOD_NONE;

	if (!known || *client) {
		m = etcd__infer_request_method(buf, len);
		if (m)
			*client = true;
	}
	if (!m && (!known || !*client)) {
		m = etcd__infer_response_method(buf, len);
		if (m)
			*client = false;
	}
	if (!m)
		return;
	s->etcd = m;
	s->inferred = true;
	util__copy(s->http.path, sizeof(s->http.path), etcd_method__path(m));
	s->grpc_streaming = m == ETCD_METHOD_WATCH || m == ETCD_METHOD_LEASE_KEEPALIVE;
	if (*client && s->request_dir < 0)
		s->request_dir = dir;
}

static bool is_lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

/* A pod or namespace name as a path segment: a DNS subdomain (lower-case letters, digits, '-'
 * and '.', a letter or digit at each end), so that nothing taken from a captured body can make
 * a path say more than the Binding did. */
static bool is_path_name(const char *v)
{
	size_t i;

	for (i = 0; v[i]; i++)
		if (!is_lower_alnum(v[i]) && v[i] != '-' && v[i] != '.')
			return false;
	return i > 0 && is_lower_alnum(v[0]) && is_lower_alnum(v[i - 1]);
}

/* A request whose :path is a dynamic entry never seen, with a Binding for its body: the pod's
 * path from the Binding's own name and namespace (the apiserver takes a Binding only by POST,
 * and refuses one whose name is not the path's pod). A scheduler that binds a pod of a name it
 * bound before on the same connection (a pod made again: a StatefulSet's, or a learner's "nginx")
 * sends the path as the entry its encoder made then, before the tracer came: without this, the
 * bind was not seen at all. The stream keeps it for the answer; both carry `inferred`. */
static void infer_binding_path(struct stream *s, struct decoded_msg *m)
{
	const struct k8s_object *o = &m->body.k8s;
	int n;

	if (m->body_kind != BODY_K8S || o->kind != K8S_KIND_BINDING ||
	    (s->http.method[0] && strcmp(s->http.method, "POST") != 0) ||
	    !is_path_name(o->meta.namespace) || !is_path_name(o->meta.name))
		return;
	n = snprintf(s->http.path, sizeof(s->http.path), "/api/v1/namespaces/%s/pods/%s/binding",
		     o->meta.namespace, o->meta.name);
	if (n < 0 || (size_t)n >= sizeof(s->http.path)) {
		s->http.path[0] = '\0';
		return;
	}
	if (!s->http.method[0])
		util__copy(s->http.method, sizeof(s->http.method), "POST");
	s->inferred = true;
	memcpy(m->http.path, s->http.path, sizeof(m->http.path));
	memcpy(m->http.method, s->http.method, sizeof(m->http.method));
	m->inferred = true;
}

/* One whole gRPC message (without its prefix) of stream s travelling in dir. */
static void grpc_message(struct conn_decoder *c, struct stream *s, int dir, const uint8_t *buf,
			 size_t len, bool compressed, uint64_t ts_first, uint64_t ts_last,
			 bool at_trailers)
{
	bool client = half_is_client(c, s, dir, false);
	struct decoded_msg *m;
	int err = 0;

	(void)at_trailers;
	if (buf && !compressed && s->head_unknown && s->etcd == ETCD_METHOD_NONE)
		infer_method(c, s, dir, buf, len, &client);
	enum decoded_kind kind = client ? DECODED_GRPC_REQUEST : DECODED_GRPC_RESPONSE;
	if (!buf || compressed) {
		m = msg_begin(c, s, dir, kind, client);
		m->ts_first_ns = ts_first;
		m->ts_last_ns = ts_last;
		m->body_len = len;
		m->body_truncated = !buf;
		m->body_kind = BODY_UNDECODED;
		emit(c, m);
		return;
	}
	if (s->etcd == ETCD_METHOD_WATCH && !client) {
		struct etcd_emit_ctx x = { c, s, dir, ts_first, ts_last, len, false };
		struct etcd_watch_response resp;
		err = etcd__decode_watch_response(buf, len, &resp, on_etcd_event, &x);
		if (!err && !x.emitted) {
			m = msg_begin(c, s, dir, kind, client);
			m->ts_first_ns = ts_first;
			m->ts_last_ns = ts_last;
			m->body_len = len;
			m->body_kind = BODY_ETCD_WATCH_RESPONSE;
			m->body.etcd_watch.response = resp;
			emit(c, m);
		}
		if (!err)
			return;
	}
	m = msg_begin(c, s, dir, kind, client);
	m->ts_first_ns = ts_first;
	m->ts_last_ns = ts_last;
	m->body_len = len;
	m->body_kind = BODY_UNDECODED;
	if (!err) {
		switch (s->etcd) {
		case ETCD_METHOD_TXN:
			if (client) {
				err = etcd__decode_txn_request(buf, len, &m->body.txn);
				m->body_kind = BODY_ETCD_TXN;
			} else {
				err = etcd__decode_txn_response(buf, len, &m->body.txn_response);
				m->body_kind = BODY_ETCD_TXN_RESPONSE;
			}
			break;
		case ETCD_METHOD_RANGE:
			if (client) {
				err = etcd__decode_range_request(buf, len, &m->body.range);
				m->body_kind = BODY_ETCD_RANGE;
			} else {
				err =
				    etcd__decode_range_response(buf, len, &m->body.range_response);
				m->body_kind = BODY_ETCD_RANGE_RESPONSE;
			}
			break;
		case ETCD_METHOD_WATCH:
			if (client) {
				err = etcd__decode_watch_request(buf, len, &m->body.watch_request);
				m->body_kind = BODY_ETCD_WATCH_REQUEST;
			}
			break;
		default:
			break;
		}
	}
	if (err) {
		c->stats.decode_errors++;
		m->body_kind = BODY_UNDECODED;
	}
	emit(c, m);
}

struct framer_ctx {
	struct conn_decoder *c;
	struct stream *s;
	int dir;
};

static void on_grpc_frame(const struct lp_message *lm, void *ctx)
{
	struct framer_ctx *x = ctx;
	grpc_message(x->c, x->s, x->dir, lm->data, lm->len, lm->compressed, lm->ts_first_ns,
		     lm->ts_last_ns, false);
}

static void on_watch_row(const struct k8s_watch_event *ev, void *ctx)
{
	struct decoded_msg *m = ctx;
	m->body.watch = *ev;
	m->body_kind = BODY_K8S_WATCH_EVENT;
}

struct row_emit_ctx {
	struct conn_decoder *c;
	struct stream *s;
	int dir;
	uint64_t ts_first, ts_last;
	size_t len;
};

static void on_json_row(const struct k8s_watch_event *ev, void *ctx)
{
	struct row_emit_ctx *x = ctx;
	struct decoded_msg *m = msg_begin(x->c, x->s, x->dir, DECODED_WATCH_EVENT, false);
	m->ts_first_ns = x->ts_first;
	m->ts_last_ns = x->ts_last;
	m->body_len = x->len;
	m->body_kind = BODY_K8S_WATCH_EVENT;
	m->body.watch = *ev;
	emit(x->c, m);
}

static void watch_json_line(struct conn_decoder *c, struct stream *s, int dir, const uint8_t *buf,
			    size_t len, uint64_t ts_first, uint64_t ts_last)
{
	struct row_emit_ctx x = { c, s, dir, ts_first, ts_last, len };
	static __thread struct k8s_watch_event ev;

	while (len && (buf[len - 1] == '\r' || buf[len - 1] == ' '))
		len--;
	if (!len)
		return;
	if (k8s__decode_watch_event_json((const char *)buf, len, &ev, &s->cols, on_json_row, &x) <
	    0) {
		c->stats.decode_errors++;
		struct decoded_msg *m = msg_begin(c, s, dir, DECODED_WATCH_EVENT, false);
		m->ts_first_ns = ts_first;
		m->ts_last_ns = ts_last;
		m->body_len = len;
		m->body_kind = BODY_UNDECODED;
		emit(c, m);
	}
}

static void on_k8s_watch_frame(const struct lp_message *lm, void *ctx)
{
	struct framer_ctx *x = ctx;
	struct decoded_msg *m = msg_begin(x->c, x->s, x->dir, DECODED_WATCH_EVENT, false);

	m->ts_first_ns = lm->ts_first_ns;
	m->ts_last_ns = lm->ts_last_ns;
	m->body_len = lm->len;
	m->body_kind = BODY_UNDECODED;
	if (lm->data && !k8s__decode_watch_event_protobuf(lm->data, lm->len, &m->body.watch))
		m->body_kind = BODY_K8S_WATCH_EVENT;
	else
		x->c->stats.decode_errors++;
	(void)on_watch_row;
	emit(x->c, m);
}

/* rafthttp bodies */

static void on_raft_message(const struct raft_message *rm, void *ctx)
{
	struct framer_ctx *x = ctx;
	struct half *h = &x->s->half[x->dir];
	bool client = half_is_client(x->c, x->s, x->dir, rm->framing == RAFT_FRAMING_PIPELINE);
	struct decoded_msg *m = msg_begin(x->c, x->s, x->dir, DECODED_RAFT_MESSAGE, client);

	m->ts_first_ns = rm->ts_first_ns;
	m->ts_last_ns = rm->ts_last_ns;
	m->body_len = rm->len;
	m->body_kind = BODY_RAFT_MESSAGE;
	m->body.raft = rm;
	/* Lost bytes before this message do not make it incomplete: it was read whole. */
	m->incomplete = h->head_lost && rm->framing == RAFT_FRAMING_PIPELINE;
	emit(x->c, m);
}

/* Reads the half's body as rafthttp framing, from its start (the head was seen) or from a frame
 * start found mid-stream (resume: the stream's state is not known). */
static void set_raft_mode(struct stream *s, struct half *h, enum raft_framing framing, bool resume)
{
	if (!h->raft) {
		h->raft = malloc(sizeof(*h->raft));
		if (!h->raft) {
			h->mode = BODY_MODE_DISCARD;
			return;
		}
		raft_stream__init(h->raft, framing);
		if (framing != RAFT_FRAMING_PIPELINE && s->raft_sender && s->raft_receiver)
			raft_stream__set_ids(h->raft, s->raft_sender, s->raft_receiver);
	}
	if (resume)
		raft_stream__resume(h->raft, framing);
	h->mode = BODY_MODE_RAFT;
}

/* A rafthttp request's halves: the pipeline's request body and the streams' response bodies are
 * messages; the rest (snapshots, probes, the streams' requests) is counted, not kept. */
static void choose_raft_mode(struct conn_decoder *c, struct stream *s, int dir)
{
	struct half *h = &s->half[dir];
	bool client = half_is_client(c, s, dir, s->request_dir == dir);

	if (s->raft == RAFT_FRAMING_PIPELINE && client)
		set_raft_mode(s, h, RAFT_FRAMING_PIPELINE, false);
	else if (raft_stream_endpoint(s) && !client && s->http.status == 200)
		set_raft_mode(s, h, s->raft, false);
	else
		h->mode = BODY_MODE_DISCARD;
}

/* A whole body that is a JSON list keeps its head only (k8s__json_list_head): judged on its
 * first LIST_HEAD_MAX bytes. */
#define LIST_HEAD_MAX 4096

static void judge_list(struct half *h)
{
	long head;

	if (h->truncated || !h->len)
		return;
	head = k8s__json_list_head((const char *)h->buf,
				   h->len < LIST_HEAD_MAX ? h->len : LIST_HEAD_MAX);
	if (head == -EAGAIN && h->len < LIST_HEAD_MAX)
		return;
	h->list_judged = true;
	if (head <= 0)
		return;
	h->len = (uint32_t)k8s__json_list_head_close((char *)h->buf, (size_t)head);
	h->mode = BODY_MODE_LIST;
	if (h->cap > LIST_HEAD_MAX) {
		uint8_t *nb = realloc(h->buf, LIST_HEAD_MAX);

		if (nb) {
			h->buf = nb;
			h->cap = LIST_HEAD_MAX;
		}
	}
}

/* Appends to the half's whole-body buffer, growing it per need up to the cap. */
static void half_append(struct half *h, const uint8_t *buf, size_t len, uint32_t cap_max)
{
	if (h->truncated)
		return;
	if ((uint64_t)h->len + len > cap_max) {
		h->truncated = true;
		return;
	}
	if (h->len + len > h->cap) {
		uint32_t cap = h->cap ? h->cap : 1024;
		while (cap < h->len + len)
			cap *= 2;
		uint8_t *nb = realloc(h->buf, cap);
		if (!nb) {
			h->truncated = true;
			return;
		}
		h->buf = nb;
		h->cap = cap;
	}
	memcpy(h->buf + h->len, buf, len);
	h->len += (uint32_t)len;
}

static void set_grpc_mode(struct stream *s, struct half *h)
{
	h->mode = s->grpc_streaming ? BODY_MODE_GRPC : BODY_MODE_WHOLE;
	h->framer.prefix_len = 5;
	lp_framer__resume(&h->framer);
}

/* Decides how a half's body is read, from the stream's headers. */
static void choose_mode(struct conn_decoder *c, struct stream *s, int dir)
{
	struct half *h = &s->half[dir];

	if (s->grpc) {
		set_grpc_mode(s, h);
		return;
	}
	if (s->raft_path) {
		choose_raft_mode(c, s, dir);
		return;
	}
	bool server = !half_is_client(c, s, dir, true);
	bool no_type = !h->content_type[0];

	/* Where neither the path nor the content type says how the body is framed, the first DATA
	 * frame tells: no content type (a dynamic entry inserted before capture: a watch made again
	 * on a connection met mid-way has its content-type sent so), or an unknown path answered in
	 * JSON, which a JSON watch is too (the apiserver adds ";stream=watch" to protobuf only). */
	if ((no_type && (s->head_unknown || (server && s->watch))) ||
	    (server && s->head_unknown && !s->watch && strcasestr(h->content_type, "json"))) {
		h->mode = BODY_MODE_PROBE;
		return;
	}
	if (server && s->watch) {
		if (strcasestr(h->content_type, "protobuf")) {
			h->mode = BODY_MODE_K8S_WATCH;
			h->framer.prefix_len = 4;
		} else {
			h->mode = BODY_MODE_JSON_LINES;
		}
		return;
	}
	h->mode = BODY_MODE_WHOLE;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Do the first n bytes of a DATA frame of frame_len content bytes (0: unknown) start a gRPC
 * message: flag 0 or 1, a length that fits the frame (or a large frame it runs past), the next
 * prefix where the frame holds more, and a body that starts like protobuf? */
static bool grpc_frame_start(const uint8_t *b, size_t n, uint32_t frame_len)
{
	if (n < 5 || b[0] > 1)
		return false;
	uint64_t end = 5 + (uint64_t)be32(b + 1);
	if (frame_len) {
		if (end > frame_len && frame_len < GRPC_SPLIT_FRAME_MIN)
			return false;
		if (end < frame_len && end < n && b[end] > 1)
			return false;
	}
	return grpc__looks_like_message(b, n);
}

/* Mid-way, a frame may begin inside a message (flow control and the frame size cut a streamed
 * body anywhere), and such bytes can pass for a gRPC prefix: a guess whose message ran past its
 * frame swallowed up to GRPC_MESSAGE_MAX of the stream (a Kubernetes watch's next few thousand
 * events). So a message is only guessed at where it ends within its frame, as a watch's messages
 * do; a longer one met mid-way is skipped until the next that fits. */
static bool grpc_fits_frame(const uint8_t *b, size_t n, uint32_t frame_len)
{
	return n >= 5 && frame_len && 5 + (uint64_t)be32(b + 1) <= frame_len;
}

/* A stream seen without its headers: guess what flows from the first bytes of a frame. */
static void sniff(struct conn_decoder *c, struct stream *s, int dir, const uint8_t *buf, size_t len,
		  uint32_t frame_len)
{
	struct half *h = &s->half[dir];
	int raft = 0;

	if (k8s__looks_like_watch_frame(buf, len)) {
		s->watch = true;
		h->mode = BODY_MODE_K8S_WATCH;
		h->framer.prefix_len = 4;
	} else if (len >= 9 && !memcmp(buf, "{\"type\":\"", 9)) {
		s->watch = true;
		h->mode = BODY_MODE_JSON_LINES;
		h->len = 0;
	} else if (c->proto == CONN_PROTO_HTTP1 &&
		   (raft = raft__frame_start(buf, len, frame_len)) > 0 &&
		   (!raft_stream_endpoint(s) || raft == (int)s->raft)) {
		/* A rafthttp stream (etcd's peers), at a chunk that starts a frame. */
		set_raft_mode(s, h, (enum raft_framing)raft, true);
		return;
	} else if (c->proto == CONN_PROTO_H2 &&
		   (len >= 16 || (len >= 5 && len >= 5 + ((size_t)buf[3] << 8 | buf[4]))) &&
		   grpc_fits_frame(buf, len, frame_len) && grpc_frame_start(buf, len, frame_len)) {
		/* Long-lived: a watch, most likely. Its etcd method comes from its messages. */
		s->grpc = true;
		s->grpc_streaming = true;
		h->mode = BODY_MODE_GRPC;
		h->framer.prefix_len = 5;
	} else {
		return;
	}
	lp_framer__resume(&h->framer);
}

/* The first frame of a body whose :path is unknown: a Kubernetes watch, JSON watch lines or gRPC,
 * else a whole body. Unlike sniff(), the body started with this frame, so nothing is dropped. */
static void probe_decide(struct conn_decoder *c, struct stream *s, int dir)
{
	struct half *h = &s->half[dir];
	const uint8_t *b = h->sniff;
	uint32_t n = h->sniff_len;

	if (s->grpc) {
		set_grpc_mode(s, h); /* the other half found it */
		return;
	}
	if (!half_is_client(c, s, dir, false)) {
		if (k8s__looks_like_watch_frame(b, n)) {
			s->watch = true;
			h->mode = BODY_MODE_K8S_WATCH;
			h->framer.prefix_len = 4;
			lp_framer__resume(&h->framer);
			return;
		}
		if (n >= 9 && !memcmp(b, "{\"type\":\"", 9)) {
			s->watch = true;
			h->mode = BODY_MODE_JSON_LINES;
			return;
		}
		int raft =
		    c->proto == CONN_PROTO_HTTP1 ? raft__frame_start(b, n, h->probe_frame_len) : 0;
		if (raft > 0) {
			set_raft_mode(s, h, (enum raft_framing)raft, true);
			return;
		}
	}
	if (grpc_frame_start(b, n, h->probe_frame_len)) {
		s->grpc = true;
		/* Unary or streaming is not known yet: each message as it completes. */
		h->mode = BODY_MODE_GRPC;
		h->framer.prefix_len = 5;
		lp_framer__resume(&h->framer);
		return;
	}
	h->mode = BODY_MODE_WHOLE;
}

/* Enough of the probed frame to judge: the sniff window, the whole frame, or a whole message. */
static bool probe_ready(const struct half *h)
{
	const uint8_t *b = h->sniff;
	uint32_t n = h->sniff_len;

	if (n == SNIFF_MAX || (h->probe_frame_len && n >= h->probe_frame_len))
		return true;
	return n >= 5 && b[0] <= 1 && (uint64_t)n >= 5 + (uint64_t)be32(b + 1);
}

static void half_data(struct conn_decoder *c, struct stream *s, int dir, const uint8_t *buf,
		      size_t len, bool frame_start, uint32_t frame_len, uint64_t ts_first,
		      uint64_t ts);

/* Hands the bytes gathered while sniffing or probing to the mode now chosen. */
static void replay_sniffed(struct conn_decoder *c, struct stream *s, int dir, uint64_t ts_first,
			   uint64_t ts)
{
	struct half *h = &s->half[dir];
	uint8_t tmp[SNIFF_MAX];
	uint32_t t = h->sniff_len;

	memcpy(tmp, h->sniff, t);
	h->sniff_len = 0;
	h->sniff_done = true;
	half_data(c, s, dir, tmp, t, false, 0, ts_first, ts);
	h->body_len -= t;
}

static void half_data(struct conn_decoder *c, struct stream *s, int dir, const uint8_t *buf,
		      size_t len, bool frame_start, uint32_t frame_len, uint64_t ts_first,
		      uint64_t ts)
{
	struct half *h = &s->half[dir];
	struct framer_ctx x = { c, s, dir };

	if (!h->started) {
		h->started = true;
		h->ts_first = ts_first;
	}
	h->ts_last = ts;
	h->body_len += len;
	if (h->mode == BODY_MODE_NONE)
		h->mode = s->head_unknown ? BODY_MODE_SNIFF : BODY_MODE_WHOLE;
	if (h->mode == BODY_MODE_WHOLE && s->grpc && s->grpc_streaming && !h->len && !h->truncated)
		set_grpc_mode(s, h); /* the other half's first message showed a streaming call */
	if (h->lost && frame_start && h->mode != BODY_MODE_WHOLE && h->mode != BODY_MODE_LIST &&
	    h->mode != BODY_MODE_PROBE &&
	    !(h->mode == BODY_MODE_RAFT && h->raft->framing == RAFT_FRAMING_PIPELINE)) {
		/* After lost bytes, a streamed body looks for its next message at a frame start. */
		h->mode = BODY_MODE_SNIFF;
		h->lost = false;
		h->len = 0;
	}
	if (h->mode == BODY_MODE_PROBE) {
		if (frame_start && !h->sniff_len)
			h->probe_frame_len = frame_len;
		size_t n = SNIFF_MAX - h->sniff_len < len ? SNIFF_MAX - h->sniff_len : len;
		memcpy(h->sniff + h->sniff_len, buf, n);
		h->sniff_len += (uint32_t)n;
		buf += n;
		len -= n;
		if (!probe_ready(h))
			return;
		probe_decide(c, s, dir);
		replay_sniffed(c, s, dir, ts_first, ts);
		if (!len)
			return;
	}
	if (h->mode == BODY_MODE_SNIFF) {
		/* Gather the first bytes of the frame (they may come one by one), then judge. */
		if (frame_start) {
			h->sniff_len = 0;
			h->sniff_done = false;
			h->probe_frame_len = frame_len;
		}
		if (h->sniff_done)
			return;
		size_t n = SNIFF_MAX - h->sniff_len < len ? SNIFF_MAX - h->sniff_len : len;
		memcpy(h->sniff + h->sniff_len, buf, n);
		h->sniff_len += (uint32_t)n;
		buf += n;
		len -= n;
		sniff(c, s, dir, h->sniff, h->sniff_len, h->probe_frame_len);
		if (h->mode == BODY_MODE_SNIFF) {
			if (h->sniff_len == SNIFF_MAX)
				h->sniff_done = true;
			return;
		}
		/* Decided: replay what was gathered, then go on with the rest. */
		replay_sniffed(c, s, dir, ts_first, ts);
		if (!len)
			return;
	}
	switch (h->mode) {
	case BODY_MODE_WHOLE:
		half_append(h, buf, len, DECODE_MAX_BODY);
		if (!s->grpc && !h->list_judged)
			judge_list(h);
		break;
	case BODY_MODE_GRPC:
		if (lp_framer__feed(&h->framer, buf, len, ts, on_grpc_frame, &x))
			h->mode = BODY_MODE_SNIFF;
		break;
	case BODY_MODE_K8S_WATCH:
		lp_framer__feed(&h->framer, buf, len, ts, on_k8s_watch_frame, &x);
		break;
	case BODY_MODE_RAFT:
		/* Boundaries lost on a bad frame: look for one at the next chunk start. */
		if (raft_stream__feed(h->raft, buf, len, ts, on_raft_message, &x))
			h->mode = BODY_MODE_SNIFF;
		break;
	case BODY_MODE_JSON_LINES:
		while (len) {
			const uint8_t *nl = memchr(buf, '\n', len);
			size_t n = nl ? (size_t)(nl - buf) + 1 : len;
			if (!h->len)
				h->framer.ts_first_ns = ts;
			half_append(h, buf, nl ? n - 1 : n, K8S_OBJECT_MAX);
			if (nl) {
				if (!h->truncated)
					watch_json_line(c, s, dir, h->buf, h->len,
							h->framer.ts_first_ns, ts);
				h->len = 0;
				h->truncated = false;
			}
			buf += n;
			len -= n;
		}
		break;
	default:
		break;
	}
}

/* The half's message is complete (END_STREAM, or an HTTP/1.1 message end). */
static void half_end(struct conn_decoder *c, struct stream *s, int dir, uint64_t ts)
{
	struct half *h = &s->half[dir];
	bool client = half_is_client(c, s, dir, s->http.method[0] && !s->http.status);
	struct decoded_msg *m;

	if (h->ended)
		return;
	h->ended = true;
	h->ts_last = ts;
	if (!h->started) {
		h->started = true;
		h->ts_first = ts;
	}
	if (h->mode == BODY_MODE_PROBE) {
		/* A body too short to have been judged (or none). */
		if (h->sniff_len) {
			probe_decide(c, s, dir);
			replay_sniffed(c, s, dir, h->ts_first, ts);
		} else if (s->grpc) {
			set_grpc_mode(s, h);
		} else {
			h->mode = BODY_MODE_WHOLE;
		}
		client = half_is_client(c, s, dir, client);
	}
	if (s->grpc) {
		if (h->mode == BODY_MODE_WHOLE || h->mode == BODY_MODE_NONE) {
			/* A unary call: one message, reported at END_STREAM (the response's at its
			 * trailers, with grpc-status). */
			if (h->len >= 5) {
				uint32_t n = (uint32_t)h->buf[1] << 24 | (uint32_t)h->buf[2] << 16 |
					     (uint32_t)h->buf[3] << 8 | h->buf[4];
				bool whole = !h->truncated && (uint64_t)n + 5 <= h->len;
				grpc_message(c, s, dir, whole ? h->buf + 5 : NULL, n,
					     h->buf[0] == 1, h->ts_first, ts, true);
			} else if (!client) {
				/* Trailers-only: an error status without a message. */
				m = msg_begin(c, s, dir, DECODED_GRPC_RESPONSE, false);
				m->ts_last_ns = ts;
				emit(c, m);
			} else if (h->len || h->truncated) {
				m = msg_begin(c, s, dir, DECODED_GRPC_REQUEST, true);
				m->body_kind = BODY_UNDECODED;
				emit(c, m);
			}
		}
		h->len = 0;
		return;
	}
	if (h->mode == BODY_MODE_JSON_LINES && h->len) {
		watch_json_line(c, s, dir, h->buf, h->len, h->framer.ts_first_ns, ts);
		h->len = 0;
		return;
	}
	if (h->mode == BODY_MODE_RAFT) {
		struct framer_ctx x = { c, s, dir };
		raft_stream__end(h->raft, ts, on_raft_message, &x);
		return;
	}
	if (h->mode == BODY_MODE_DISCARD && s->raft_path) {
		/* A rafthttp request or response whose body is not a message. */
		m = msg_begin(c, s, dir, client ? DECODED_REQUEST : DECODED_RESPONSE, client);
		m->ts_last_ns = ts;
		m->body_len = h->body_len;
		m->body_kind = h->body_len ? BODY_UNDECODED : BODY_NONE;
		emit(c, m);
		return;
	}
	if (h->mode != BODY_MODE_WHOLE && h->mode != BODY_MODE_NONE && h->mode != BODY_MODE_LIST)
		return;
	if (!h->headers && s->head_unknown && !h->len)
		return; /* nothing seen of this message */
	m = msg_begin(c, s, dir, client ? DECODED_REQUEST : DECODED_RESPONSE, client);
	m->ts_last_ns = ts;
	m->body_truncated = h->truncated;
	m->body_len = h->body_len;
	if (h->truncated)
		m->body_kind = BODY_UNDECODED;
	else
		decode_k8s_body(c, m, h->buf, h->len, &s->cols);
	if (h->mode == BODY_MODE_LIST)
		m->body_len = h->body_len; /* the head was decoded; the body is the whole list */
	if (!m->client_known && s->request_dir < 0 && m->body_kind == BODY_K8S &&
	    (m->body.k8s.kind == K8S_KIND_BINDING || m->body.k8s.kind == K8S_KIND_STATUS)) {
		/* Neither side nor head known: only clients send Bindings, only servers Status. */
		m->from_client = m->body.k8s.kind == K8S_KIND_BINDING;
		m->kind = m->from_client ? DECODED_REQUEST : DECODED_RESPONSE;
	}
	if (m->kind == DECODED_REQUEST && s->head_unknown && !s->http.path[0])
		infer_binding_path(s, m);
	emit(c, m);
	h->len = 0;
}

static void stream_maybe_done(struct conn_decoder *c, struct stream *s)
{
	if (s->half[0].ended && s->half[1].ended)
		stream_release(c, s);
}

/* Headers */

static bool is_watch_request(const char *path)
{
	const char *q = strchr(path, '?');
	if (strstr(path, "/watch/"))
		return true;
	if (!q)
		return false;
	return strstr(q, "watch=true") || strstr(q, "watch=1");
}

/* A status header's number as atoi reads its first 7 characters (leading blanks, a sign, the
 * digits; 0 without any): on every response, where snprintf and atoi were 1% of the tracer. */
static int small_int(const char *v, size_t len)
{
	size_t i = 0, end = len < 7 ? len : 7;
	bool neg = false;
	int n = 0;

	while (i < end && (v[i] == ' ' || (v[i] >= '\t' && v[i] <= '\r')))
		i++;
	if (i < end && (v[i] == '+' || v[i] == '-'))
		neg = v[i++] == '-';
	for (; i < end && v[i] >= '0' && v[i] <= '9'; i++)
		n = n * 10 + (v[i] - '0');
	return neg ? -n : n;
}

static void header_field(struct conn_decoder *c, const char *name, size_t nlen, const char *value,
			 size_t vlen, unsigned flags)
{
	struct decoded_http *h = &c->hdr;

	if (flags & HPACK_NAME_UNKNOWN) {
		c->hdr_unknown = true;
		return;
	}
#define IS(lit) (nlen == sizeof(lit) - 1 && !strncasecmp(name, lit, nlen))
	if (IS(":method") || IS("method")) {
		redact__header_value(name, nlen, value, vlen, h->method, sizeof(h->method));
		c->hdr_has_method = true;
	} else if (IS(":path")) {
		redact__path(value, vlen, h->path, sizeof(h->path));
	} else if (IS(":authority") || IS("host")) {
		redact__header_value(name, nlen, value, vlen, h->authority, sizeof(h->authority));
	} else if (IS(":status")) {
		h->status = small_int(value, vlen);
		c->hdr_has_status = true;
	} else if (IS("content-type")) {
		redact__header_value(name, nlen, value, vlen, h->content_type,
				     sizeof(h->content_type));
	} else if (IS("user-agent")) {
		redact__header_value(name, nlen, value, vlen, h->user_agent, sizeof(h->user_agent));
	} else if (IS("grpc-status")) {
		h->grpc_status = small_int(value, vlen);
	} else if (IS("x-raft-to")) {
		c->hdr_raft_to = raft__parse_id(value, vlen);
	} else if (IS("grpc-message")) {
		char tmp[DECODE_GRPC_MESSAGE_MAX];
		redact__header_value(name, nlen, value, vlen, tmp, sizeof(tmp));
		grpc__decode_message(tmp, h->grpc_message, sizeof(h->grpc_message));
	}
#undef IS
}

static void header_block_reset(struct conn_decoder *c)
{
	memset(&c->hdr, 0, sizeof(c->hdr));
	c->hdr.grpc_status = -1;
	c->hdr_has_method = false;
	c->hdr_has_status = false;
	c->hdr_unknown = false;
	c->hdr_raft_to = 0;
}

/* A complete header block of stream s in dir. */
static void headers_done(struct conn_decoder *c, struct stream *s, int dir, bool damaged,
			 uint64_t ts_first, uint64_t ts_last)
{
	struct half *h = &s->half[dir];

	if (c->hdr_has_method)
		learn_client_dir(c, dir, false);
	if (c->hdr_has_status)
		learn_client_dir(c, !dir, false);
	if (c->hdr_has_method) {
		/* Request headers. */
		s->request_dir = dir;
		s->inferred = false;
		memcpy(s->http.method, c->hdr.method, sizeof(s->http.method));
		memcpy(s->http.path, c->hdr.path, sizeof(s->http.path));
		memcpy(s->http.authority, c->hdr.authority, sizeof(s->http.authority));
		memcpy(s->http.user_agent, c->hdr.user_agent, sizeof(s->http.user_agent));
		memcpy(h->content_type, c->hdr.content_type, sizeof(h->content_type));
		s->head_unknown = damaged || !c->hdr.path[0];
		s->etcd = etcd__method_from_path(s->http.path);
		/* An etcd path with its content-type a dynamic entry never seen is gRPC too. */
		s->grpc = grpc__is_content_type(c->hdr.content_type) ||
			  (!c->hdr.content_type[0] && s->etcd != ETCD_METHOD_NONE);
		s->grpc_streaming = s->grpc && (s->etcd == ETCD_METHOD_WATCH ||
						s->etcd == ETCD_METHOD_LEASE_KEEPALIVE);
		s->watch = !s->grpc && is_watch_request(s->http.path);
		s->table = strstr(s->http.path, "as=Table") != NULL;
		s->raft_path = !s->grpc && raft__is_path(s->http.path);
		s->raft = s->raft_path ? raft__framing_from_path(s->http.path, &s->raft_receiver)
				       : RAFT_FRAMING_NONE;
		s->raft_sender = c->hdr_raft_to;
		h->headers = true;
		h->started = true;
		h->ts_first = ts_first;
		h->ts_last = ts_last;
		choose_mode(c, s, dir);
		return;
	}
	if (c->hdr_has_status) {
		if (c->hdr.status >= 100 && c->hdr.status < 200)
			return; /* informational */
		s->http.status = c->hdr.status;
		memcpy(h->content_type, c->hdr.content_type, sizeof(h->content_type));
		if (c->hdr.grpc_status >= 0) {
			s->http.grpc_status = c->hdr.grpc_status;
			memcpy(s->http.grpc_message, c->hdr.grpc_message,
			       sizeof(s->http.grpc_message));
		}
		if (!s->grpc && grpc__is_content_type(c->hdr.content_type)) {
			s->grpc = true;
			s->grpc_streaming = s->head_unknown;
		}
		if (strcasestr(c->hdr.content_type, "stream=watch"))
			s->watch = true;
		if (damaged)
			h->head_lost = true;
		h->headers = true;
		h->started = true;
		h->ts_first = ts_first;
		h->ts_last = ts_last;
		choose_mode(c, s, dir);
		if (s->watch || s->grpc_streaming ||
		    (raft_stream_endpoint(s) && c->hdr.status == 200)) {
			/* A streaming response: report its start now, events follow. */
			struct decoded_msg *m = msg_begin(
			    c, s, dir, s->grpc ? DECODED_GRPC_RESPONSE : DECODED_RESPONSE, false);
			m->ts_last_ns = ts_last;
			h->emitted_head = true;
			emit(c, m);
		}
		return;
	}
	if (!h->headers && (damaged || c->hdr_unknown)) {
		/* A head whose :method or :status was an entry we never saw. */
		h->headers = true;
		h->head_lost = true;
		h->started = true;
		h->ts_first = ts_first;
		h->ts_last = ts_last;
		memcpy(h->content_type, c->hdr.content_type, sizeof(h->content_type));
		if (!half_is_client(c, s, dir, false) && !s->grpc &&
		    grpc__is_content_type(c->hdr.content_type))
			s->grpc = true;
		choose_mode(c, s, dir);
		return;
	}
	/* Trailers (or a block we could not read). */
	if (c->hdr.grpc_status >= 0) {
		s->http.grpc_status = c->hdr.grpc_status;
		memcpy(s->http.grpc_message, c->hdr.grpc_message, sizeof(s->http.grpc_message));
	}
	if (!h->headers && (damaged || c->hdr_unknown))
		h->head_lost = true;
	h->ts_last = ts_last;
}

/* HTTP/2 callbacks */

static void h2_on_header(void *ctx, int dir, uint32_t sid, const struct hpack_header *hh)
{
	struct conn_decoder *c = ctx;
	(void)dir;
	(void)sid;
	header_field(c, hh->name, hh->name_len, hh->value, hh->value_len, hh->flags);
}

static void h2_on_headers_end(void *ctx, int dir, uint32_t sid, bool end_stream, bool damaged,
			      uint64_t ts_first, uint64_t ts_last)
{
	struct conn_decoder *c = ctx;
	struct stream *s = stream_get(c, sid);
	(void)end_stream;
	if (s)
		headers_done(c, s, dir, damaged, ts_first, ts_last);
	header_block_reset(c);
}

static void h2_on_data(void *ctx, int dir, uint32_t sid, const uint8_t *data, size_t len,
		       bool frame_start, uint64_t ts_first, uint64_t ts)
{
	struct conn_decoder *c = ctx;
	struct stream *s = stream_get(c, sid);
	if (s)
		half_data(c, s, dir, data, len, frame_start, h2_conn__data_frame_len(c->h2, dir),
			  ts_first, ts);
}

static void h2_on_end_stream(void *ctx, int dir, uint32_t sid, uint64_t ts)
{
	struct conn_decoder *c = ctx;
	struct stream *s = stream_find(c, sid);
	if (!s)
		return;
	half_end(c, s, dir, ts ? ts : s->half[dir].ts_last);
	stream_maybe_done(c, s);
}

static void h2_on_rst_stream(void *ctx, int dir, uint32_t sid, uint32_t error, uint64_t ts)
{
	struct conn_decoder *c = ctx;
	struct stream *s = stream_find(c, sid);
	struct decoded_msg *m = msg_begin(c, s, dir, DECODED_STREAM_RESET, false);

	m->stream_id = sid;
	m->error_code = error;
	m->ts_first_ns = m->ts_last_ns = ts;
	m->incomplete = false;
	emit(c, m);
	if (s)
		stream_release(c, s);
}

static void h2_on_goaway(void *ctx, int dir, uint32_t last, uint32_t error, uint64_t ts)
{
	struct conn_decoder *c = ctx;
	struct decoded_msg *m = msg_begin(c, NULL, dir, DECODED_GOAWAY, false);
	m->stream_id = last;
	m->error_code = error;
	m->ts_first_ns = m->ts_last_ns = ts;
	emit(c, m);
}

static void mark_lost(struct conn_decoder *c, int dir, uint32_t sid)
{
	c->unreliable = true;
	for (uint32_t i = 0; i < c->nstreams; i++) {
		struct stream *s = c->streams[i];
		if (sid && s->id != sid)
			continue;
		s->half[dir].lost = true;
		lp_framer__lose(&s->half[dir].framer);
		if (s->half[dir].raft)
			raft_stream__lose(s->half[dir].raft);
	}
}

static void h2_on_lost(void *ctx, int dir, uint32_t sid)
{
	struct conn_decoder *c = ctx;
	mark_lost(c, dir, sid);
	header_block_reset(c);
}

static const struct h2_callbacks h2_cbs = {
	.on_header = h2_on_header,
	.on_headers_end = h2_on_headers_end,
	.on_data = h2_on_data,
	.on_end_stream = h2_on_end_stream,
	.on_rst_stream = h2_on_rst_stream,
	.on_goaway = h2_on_goaway,
	.on_lost = h2_on_lost,
};

/* HTTP/1.1 callbacks: each request/response pair is a "stream" numbered from 1. */

static void h1_on_start(void *ctx, int dir, const struct http1_start *st, uint64_t ts)
{
	struct conn_decoder *c = ctx;
	uint32_t id;

	header_block_reset(c);
	if (st->resynced_body) {
		/* The rest of a rafthttp stream's body after lost bytes: the same response (it
		 * never ends), which keeps its request's members; the next frame resumes it. */
		struct stream *cur = stream_find(c, c->h1_current[dir]);
		if (cur && cur->half[dir].raft &&
		    cur->half[dir].raft->framing != RAFT_FRAMING_PIPELINE) {
			cur->half[dir].mode = BODY_MODE_SNIFF;
			cur->half[dir].sniff_len = 0;
			cur->half[dir].sniff_done = false;
			return;
		}
	}
	if (st->request) {
		learn_client_dir(c, dir, false);
		id = ++c->h1_next_request;
		util__copy(c->hdr.method, sizeof(c->hdr.method), st->method);
		redact__path(st->target, strlen(st->target), c->hdr.path, sizeof(c->hdr.path));
		c->hdr_has_method = true;
	} else {
		learn_client_dir(c, !dir, false);
		id = ++c->h1_next_response;
		if (id > c->h1_next_request)
			c->h1_next_request = id;
		c->hdr.status = st->status;
		c->hdr_has_status = !st->resynced_body;
	}
	c->h1_current[dir] = id;
	struct stream *s = stream_get(c, id);
	if (!s)
		return;
	s->half[dir].ts_first = ts;
	s->half[dir].started = true;
	if (st->resynced_body) {
		s->half[dir].mode = BODY_MODE_SNIFF;
		s->half[dir].started = false;
	}
}

static void h1_on_header(void *ctx, int dir, const char *name, size_t nlen, const char *value,
			 size_t vlen)
{
	(void)dir;
	header_field(ctx, name, nlen, value, vlen, 0);
}

static void h1_on_headers_end(void *ctx, int dir, uint64_t ts)
{
	struct conn_decoder *c = ctx;
	struct stream *s = stream_find(c, c->h1_current[dir]);
	if (!s)
		return;
	if (c->hdr_has_method || c->hdr_has_status)
		headers_done(c, s, dir, false, s->half[dir].ts_first, ts);
	header_block_reset(c);
}

static void h1_on_body(void *ctx, int dir, const uint8_t *data, size_t len, uint64_t ts)
{
	struct conn_decoder *c = ctx;
	struct stream *s = stream_find(c, c->h1_current[dir]);
	if (!s)
		return;
	/* A chunk is to HTTP/1.1 what a DATA frame is to HTTP/2: where a message of a stream we
	 * resynchronised on may start. */
	bool frame_start = c->h1->dir[dir].chunk_start || !s->half[dir].body_len;
	/* At a chunk's start, the bytes left of it are its size. */
	uint64_t left = c->h1->dir[dir].remaining;
	uint32_t frame_len = c->h1->dir[dir].chunk_start && left <= UINT32_MAX ? (uint32_t)left : 0;
	half_data(c, s, dir, data, len, frame_start, frame_len, ts, ts);
}

static void h1_on_end(void *ctx, int dir, uint64_t ts)
{
	struct conn_decoder *c = ctx;
	struct stream *s = stream_find(c, c->h1_current[dir]);
	if (!s)
		return;
	half_end(c, s, dir, ts);
	stream_maybe_done(c, s);
}

static void h1_on_lost(void *ctx, int dir)
{
	struct conn_decoder *c = ctx;
	mark_lost(c, dir, c->h1_current[dir]);
}

static const struct http1_callbacks h1_cbs = {
	.on_start = h1_on_start,
	.on_header = h1_on_header,
	.on_headers_end = h1_on_headers_end,
	.on_body = h1_on_body,
	.on_end = h1_on_end,
	.on_lost = h1_on_lost,
};

/* Connection */

struct conn_decoder *conn_decoder__new(conn_decoder_cb cb, void *ctx)
{
	struct conn_decoder *c = calloc(1, sizeof(*c));

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->cb = cb;
	c->ctx = ctx;
	c->client_dir = -1;
	header_block_reset(c);
	return c;
}

static void detect_free(struct conn_decoder *c, int dir)
{
	free(c->detect[dir]);
	c->detect[dir] = NULL;
	c->detect_cap[dir] = 0;
	c->detect_len[dir] = 0;
	c->detect_scan[dir] = 0;
}

void conn_decoder__free(struct conn_decoder *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->nstreams; i++) {
		stream_free_buffers(c->streams[i]);
		free(c->streams[i]);
	}
	free(c->streams);
	if (c->h2)
		h2_conn__free(c->h2);
	free(c->h2);
	free(c->h1);
	detect_free(c, 0);
	detect_free(c, 1);
	free(c);
}

void conn_decoder__set_client_dir(struct conn_decoder *c, int client_dir)
{
	if (!c)
		return;
	if (client_dir == CONN_DIR_OUT || client_dir == CONN_DIR_IN) {
		c->client_dir = client_dir;
		c->client_dir_given = true;
	} else {
		c->client_dir = -1;
		c->client_dir_given = false;
	}
}

size_t conn_decoder__heap_bytes(const struct conn_decoder *c)
{
	size_t n = sizeof(*c) + c->streams_cap * sizeof(c->streams[0]);

	for (int d = 0; d < 2; d++)
		n += c->detect_cap[d];
	if (c->h2)
		n += sizeof(*c->h2) + h2_conn__heap_bytes(c->h2);
	if (c->h1)
		n += sizeof(*c->h1);
	for (uint32_t i = 0; i < c->nstreams; i++) {
		const struct stream *s = c->streams[i];
		n += sizeof(*s);
		for (int d = 0; d < 2; d++) {
			n += s->half[d].cap + s->half[d].framer.cap;
			if (s->half[d].raft)
				n += sizeof(*s->half[d].raft) +
				     raft_stream__heap_bytes(s->half[d].raft);
		}
	}
	return n;
}

/* Hands bytes to the protocol layer of a direction that has begun. */
static void proto_feed(struct conn_decoder *c, int dir, const uint8_t *buf, size_t len, uint64_t ts)
{
	if (c->h2)
		h2_conn__feed(c->h2, dir, buf, len, ts);
	else if (c->h1)
		http1_conn__feed(c->h1, dir, buf, len, ts);
	else
		c->bytes_unhandled += len;
}

/* Does an HTTP/2 direction begin with a SETTINGS frame, as the server's first bytes do? */
static bool h2_settings_first(const uint8_t *b, uint32_t n)
{
	return n >= H2_FRAME_HEADER_LEN && b[3] == H2_SETTINGS && b[4] == 0 &&
	       h2__plausible_frame_header(b, 0);
}

/* How an HTTP/2 direction whose first captured byte is at offset 0 but which is not the
 * connection's start begins: 1 at a frame boundary (a first frame that is believable and ends
 * where a write ended or where another believable frame starts), 0 not (resync), -1 not known
 * until more bytes come. A write may begin inside a frame when the writer's buffer split it. */
static int h2_first_frame(const uint8_t *b, uint32_t n)
{
	if (n < H2_FRAME_HEADER_LEN)
		return n >= DETECT_MAX ? 0 : -1;
	if (!h2__plausible_frame_header(b, 0) || b[3] == H2_CONTINUATION)
		return 0;
	uint64_t end = H2_FRAME_HEADER_LEN + ((uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2]);
	if (n == end)
		return 1;
	if (n < end + H2_FRAME_HEADER_LEN)
		return n >= DETECT_MAX ? 1 : -1; /* a frame larger than we hold: believe it */
	return h2__plausible_frame_header(b + end, 0);
}

/* Begins a direction once its first bytes (held in detect[dir]) say how: HTTP/2 at the
 * connection's start (the preface, or the server's SETTINGS), mid-connection at a frame
 * boundary, or anywhere (resync); HTTP/1.1 at the start or not. Returns false while too few
 * bytes are held to tell. */
static bool try_begin(struct conn_decoder *c, int dir)
{
	const uint8_t *b = c->detect[dir];
	uint32_t n = c->detect_len[dir];
	bool at_start = c->detect_offset[dir] == 0 && !c->lost_before[dir];
	bool from_start = at_start;

	if (c->proto == CONN_PROTO_H2 && c->h2) {
		int at_frame = 0;
		if (at_start && n < H2_PREFACE_LEN && !memcmp(b, H2_PREFACE, n))
			return false;
		if (at_start && n >= H2_PREFACE_LEN && !memcmp(b, H2_PREFACE, H2_PREFACE_LEN)) {
			learn_client_dir(c, dir, true);
			h2_conn__begin(c->h2, dir, true);
		} else if (at_start && h2_settings_first(b, n) &&
			   !(c->client_dir >= 0 && dir == c->client_dir)) {
			h2_conn__begin(c->h2, dir, true);
		} else if (at_start && (at_frame = h2_first_frame(b, n)) < 0) {
			return false;
		} else if (at_frame) {
			/* Offset 0 of what the tracer saw, not of the connection: it attached to a
			 * connection opened earlier, at the start of a write. */
			from_start = false;
			h2_conn__begin_at_frame(c->h2, dir);
		} else {
			from_start = false;
			h2_conn__begin(c->h2, dir, false);
		}
	} else if (c->proto == CONN_PROTO_HTTP1 && c->h1) {
		/* Offset 0 of what the tracer saw may be a chunk of a stream begun earlier. */
		if (at_start && !http1__sniff(b, n))
			from_start = false;
		http1_conn__begin(c->h1, dir, from_start);
	}
	if (!from_start)
		c->unreliable = true;
	c->begun[dir] = true;
	/* Hand over what was held; the buffer goes back first, as the feed may take long. */
	uint8_t *held = c->detect[dir];
	c->detect[dir] = NULL;
	c->detect_cap[dir] = 0;
	c->detect_len[dir] = 0;
	c->detect_scan[dir] = 0;
	if (n)
		proto_feed(c, dir, held, n, c->detect_ts[dir]);
	free(held);
	return true;
}

static void proto_begin(struct conn_decoder *c, enum conn_proto proto)
{
	c->proto = proto;
	c->stats.proto = proto;
	if (proto == CONN_PROTO_H2) {
		c->h2 = calloc(1, sizeof(*c->h2));
		if (c->h2)
			h2_conn__init(c->h2, &h2_cbs, c);
	} else {
		c->h1 = calloc(1, sizeof(*c->h1));
		if (c->h1)
			http1_conn__init(c->h1, &h1_cbs, c);
	}
	for (int d = 0; d < 2; d++)
		if (c->detect_len[d])
			try_begin(c, d);
}

/* Looks at the first bytes of a direction to pick the protocol. */
static void detect(struct conn_decoder *c, int dir)
{
	const uint8_t *b = c->detect[dir];
	uint32_t n = c->detect_len[dir];
	bool at_start = c->detect_offset[dir] == 0 && !c->lost_before[dir];

	if (n >= H2_PREFACE_LEN && !memcmp(b, H2_PREFACE, H2_PREFACE_LEN)) {
		learn_client_dir(c, dir, true);
		proto_begin(c, CONN_PROTO_H2);
		return;
	}
	if (n < H2_PREFACE_LEN && !memcmp(b, H2_PREFACE, n) && at_start)
		return; /* wait for the rest of the preface */
	int h1 = http1__sniff(b, n);
	if (h1) {
		learn_client_dir(c, h1 == 1 ? dir : !dir, true);
		proto_begin(c, CONN_PROTO_HTTP1);
		return;
	}
	/* An HTTP/1.1 watch or rafthttp stream met midway, at a chunk (a read or write begins at
	 * one). */
	int chunk = http1__stream_chunk(b, n);
	if (chunk > 0) {
		learn_client_dir(c, !dir, false);
		proto_begin(c, CONN_PROTO_HTTP1);
		return;
	}
	if (chunk < 0 && n < 64 && at_start)
		return;
	if (n >= H2_FRAME_HEADER_LEN && h2__looks_like_frames(b, n)) {
		proto_begin(c, CONN_PROTO_H2);
		return;
	}
	if (n < 16 && at_start)
		return;
	/* Mid-connection: scan for frames; the control plane speaks HTTP/2. */
	if (n >= DETECT_MAX || !at_start) {
		/* Positions already judged stay judged: each byte is looked at once. */
		uint32_t i = c->detect_scan[dir] ? c->detect_scan[dir] : 1;
		for (; i + H2_FRAME_HEADER_LEN <= n; i++) {
			if (h2__looks_like_frames(b + i, n - i)) {
				proto_begin(c, CONN_PROTO_H2);
				return;
			}
			if ((b[i - 1] == '\n') && http1__sniff(b + i, n - i)) {
				proto_begin(c, CONN_PROTO_HTTP1);
				return;
			}
		}
		c->detect_scan[dir] = i;
		if (n >= DETECT_MAX)
			proto_begin(c, CONN_PROTO_H2);
	}
}

/* Appends to the bytes held for a direction that has not begun, growing the buffer up to
 * DETECT_MAX. Returns how many were taken (fewer when memory is short). */
static size_t detect_append(struct conn_decoder *c, int dir, uint64_t off, const uint8_t *buf,
			    size_t len, uint64_t ts)
{
	uint32_t have = c->detect_len[dir];

	if (len > DETECT_MAX - have)
		len = DETECT_MAX - have;
	if (have + len > c->detect_cap[dir]) {
		uint32_t cap = c->detect_cap[dir] ? c->detect_cap[dir] : DETECT_MIN;
		while (cap < have + len)
			cap *= 2;
		uint8_t *nb = realloc(c->detect[dir], cap);
		if (!nb)
			return 0;
		c->detect[dir] = nb;
		c->detect_cap[dir] = cap;
	}
	if (!have) {
		c->detect_ts[dir] = ts;
		c->detect_offset[dir] = off;
	}
	memcpy(c->detect[dir] + have, buf, len);
	c->detect_len[dir] += (uint32_t)len;
	return len;
}

/* missing bytes of dir are lost: whatever was being decoded there cannot be trusted. */
static void lose(struct conn_decoder *c, int dir, uint64_t missing)
{
	c->stats.gaps++;
	c->stats.bytes_lost += missing;
	c->unreliable = true;
	if (c->begun[dir] && c->h2) {
		h2_conn__lose(c->h2, dir, missing);
	} else if (c->begun[dir] && c->h1) {
		http1_conn__lose(c->h1, dir, missing);
	} else if (!c->begun[dir]) {
		/* What was held is cut off from what follows: start over on that. */
		c->detect_len[dir] = 0;
		c->detect_scan[dir] = 0;
		c->lost_before[dir] = true;
	}
}

int conn_decoder__gap(struct conn_decoder *c, int dir, uint64_t missing)
{
	if (!c || dir < 0 || dir > 1)
		return -EINVAL;
	if (!missing)
		return 0;
	c->pos[dir].started = true;
	c->pos[dir].next_offset += missing;
	lose(c, dir, missing);
	return 0;
}

void conn_decoder__offsets_from_zero(struct conn_decoder *c)
{
	if (c)
		c->pos[0].started = c->pos[1].started = true;
}

int64_t conn_decoder__feed(struct conn_decoder *c, int dir, uint64_t off, const void *data,
			   size_t len, uint64_t ts)
{
	const uint8_t *buf = data;
	uint64_t missed, seen;

	if (!c || dir < 0 || dir > 1 || (!buf && len))
		return -EINVAL;
	if (!c->pos[dir].started && off)
		c->unreliable = true; /* met mid-way */
	missed = stream_pos__advance(&c->pos[dir], off, len, &seen);
	if (missed)
		lose(c, dir, missed);
	if (missed > INT64_MAX)
		missed = INT64_MAX; /* only from a forged offset: still "a gap" */
	if (seen >= len)
		return (int64_t)missed;
	buf += seen;
	len -= (size_t)seen;
	c->stats.bytes[dir] += len;
	off = c->pos[dir].next_offset - len;
	/* Hold the first bytes (up to DETECT_MAX) until the protocol is known and how this
	 * direction begins: a preface, or a whole first frame and what follows it. */
	while (len && !c->begun[dir]) {
		size_t n = detect_append(c, dir, off, buf, len, ts);
		if (!n) {
			/* No memory to hold them: begin anywhere with what comes. */
			c->lost_before[dir] = true;
			if (c->proto == CONN_PROTO_UNKNOWN)
				proto_begin(c, CONN_PROTO_H2);
			if (!c->begun[dir])
				try_begin(c, dir);
			break;
		}
		buf += n;
		len -= n;
		off += n;
		if (c->proto == CONN_PROTO_UNKNOWN)
			detect(c, dir);
		else
			try_begin(c, dir);
	}
	if (len && c->begun[dir])
		proto_feed(c, dir, buf, len, ts);
	return (int64_t)missed;
}

void conn_decoder__close(struct conn_decoder *c, uint64_t ts)
{
	if (c && c->proto == CONN_PROTO_HTTP1 && c->h1)
		for (int d = 0; d < 2; d++)
			http1_conn__close(c->h1, d, ts);
}

void conn_decoder__stats(const struct conn_decoder *c, struct conn_decoder_stats *st)
{
	*st = c->stats;
	st->client_dir = c->client_dir;
	st->resyncs = 0;
	st->bytes_skipped = c->bytes_unhandled;
	if (c->h2) {
		st->resyncs += c->h2->dir[0].resyncs + c->h2->dir[1].resyncs;
		st->bytes_skipped += c->h2->dir[0].bytes_skipped + c->h2->dir[1].bytes_skipped;
	}
	if (c->h1) {
		st->resyncs += c->h1->dir[0].resyncs + c->h1->dir[1].resyncs;
		st->bytes_skipped += c->h1->dir[0].bytes_skipped + c->h1->dir[1].bytes_skipped;
	}
	/* Raft frames that did not parse, and raft streams that lost their frames. */
	struct raft_stream_stats raft = c->raft_retired;
	for (uint32_t i = 0; i < c->nstreams; i++)
		for (int d = 0; d < 2; d++)
			if (c->streams[i]->half[d].raft)
				raft_stats_add(&raft, &c->streams[i]->half[d].raft->stats);
	st->decode_errors += raft.decode_errors;
	st->resyncs += raft.lost;
	st->bytes_skipped += raft.bytes_skipped;
}
