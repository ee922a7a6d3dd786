/* `bindtrace decode FILE.jsonl`: replays a capture recorded by `bindtrace capture --json` (or a
 * test fixture in the same shape) through one conn_decoder per connection and prints the decoded
 * messages, one per line, for people or as JSON. `--bench` measures decoding alone. */
/* Display lines are cut on purpose when fields are long. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "decode.h"
#include "message_json.h"
#include "redact.h"
#include "util.h"

/* One data or gap record, decoded from its line. */
struct replay_record {
	uint64_t ts_ns;
	uint64_t conn;
	int dir;
	uint64_t offset;
	uint64_t gap; /* a gap record when non-zero */
	uint8_t *data;
	size_t len;
	int pid;
	char comm[32];
	int client_dir; /* from an optional "client": "local" or "remote"; -1 absent */
};

struct replay_conn {
	uint64_t id;
	int pid;
	char comm[32];
	struct conn_decoder *dec;
	struct replay_ctx *ctx;
};

struct replay_ctx {
	conn_decoder_cb cb;
	void *cb_ctx;
	struct replay_conn *cur;
	uint64_t *conn_id; /* decode__replay_file's: the "conn" of each message, when not NULL */
};

/* Parses one line; returns 1 for a record, 0 to skip the line, -EINVAL when malformed. */
static int parse_record(const char *line, size_t n, struct replay_record *r)
{
	json_error_t jerr;
	json_t *o = json_loadb(line, n, 0, &jerr);
	int ret = -EINVAL;

	memset(r, 0, sizeof(*r));
	if (!o)
		return -EINVAL;
	if (!json_is_object(o))
		goto cleanup;
	json_t *conn = json_object_get(o, "conn"), *dir = json_object_get(o, "dir");
	const char *d = json_string_value(dir);
	if (!json_is_integer(conn) || !d)
		goto cleanup;
	r->conn = (uint64_t)json_integer_value(conn);
	r->dir = !strcmp(d, "in") ? 1 : 0;
	r->ts_ns = (uint64_t)json_integer_value(json_object_get(o, "ts_ns"));
	r->pid = (int)json_integer_value(json_object_get(o, "pid"));
	const char *comm = json_string_value(json_object_get(o, "comm"));
	snprintf(r->comm, sizeof(r->comm), "%s", comm ? comm : "");
	/* Which end is the client, when the recorder knew it from the socket: the traced process
	 * ("local": it dialed, its writes are requests) or its peer ("remote": it accepted). */
	const char *client = json_string_value(json_object_get(o, "client"));
	r->client_dir = !client			    ? -1
			: !strcmp(client, "local")  ? CONN_DIR_OUT
			: !strcmp(client, "remote") ? CONN_DIR_IN
						    : -1;
	json_t *gap = json_object_get(o, "gap");
	if (json_is_integer(gap)) {
		r->gap = (uint64_t)json_integer_value(gap);
		ret = r->gap ? 1 : 0;
		goto cleanup;
	}
	r->offset = (uint64_t)json_integer_value(json_object_get(o, "offset"));
	const char *data = json_string_value(json_object_get(o, "data"));
	if (!data)
		goto cleanup;
	size_t dl = strlen(data);
	r->data = malloc(dl / 4 * 3 + 4);
	if (!r->data) {
		ret = -ENOMEM;
		goto cleanup;
	}
	long len = util__base64_decode(data, dl, r->data);
	if (len < 0) {
		free(r->data);
		r->data = NULL;
		goto cleanup;
	}
	r->len = (size_t)len;
	ret = 1;
cleanup:
	json_decref(o);
	return ret;
}

struct replay_set {
	struct replay_record *recs;
	size_t n, cap;
	uint64_t bytes;
};

static void replay_set__free(struct replay_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->recs[i].data);
	free(s->recs);
	memset(s, 0, sizeof(*s));
}

static int replay_set__load(struct replay_set *s, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long lineno = 0, bad = 0, first_bad = 0;
	int err = 0;

	if (!f)
		return -errno;
	while ((n = getline(&line, &cap, f)) > 0) {
		struct replay_record r;
		lineno++;
		if (n <= 1)
			continue;
		int ret = parse_record(line, (size_t)n, &r);
		if (ret < 0) {
			/* Counted and said once below: a garbage file is one line, not one per line. */
			if (!bad++)
				first_bad = lineno;
			continue;
		}
		if (!ret)
			continue;
		if (s->n == s->cap) {
			size_t nc = s->cap ? s->cap * 2 : 256;
			struct replay_record *nr = realloc(s->recs, nc * sizeof(*nr));
			if (!nr) {
				free(r.data);
				err = -ENOMEM;
				break;
			}
			s->recs = nr;
			s->cap = nc;
		}
		s->recs[s->n++] = r;
		s->bytes += r.len;
	}
	/* getline() fails the same way at the end and on a read error (a directory: EISDIR). */
	if (!err && ferror(f))
		err = errno ? -errno : -EIO;
	if (!err && bad && !s->n) {
		fprintf(stderr,
			"bindtrace decode: %s: not a capture (none of its %lu lines is a record of "
			"`bindtrace capture --json`)\n",
			path, lineno);
		err = -EINVAL;
	} else if (!err && bad) {
		fprintf(
		    stderr,
		    "bindtrace decode: %s: %lu of %lu lines are not capture records (the first is "
		    "line %lu), skipped\n",
		    path, bad, lineno, first_bad);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return err;
}

static void conn_cb(const struct decoded_msg *m, void *ctx)
{
	struct replay_conn *rc = ctx;
	rc->ctx->cur = rc;
	if (rc->ctx->conn_id)
		*rc->ctx->conn_id = rc->id;
	rc->ctx->cb(m, rc->ctx->cb_ctx);
}

#define MAX_CONNS 4096

/* Feeds every record to its connection's decoder; max_piece > 0 cuts chunks into pieces of at
 * most that many bytes (1: byte by byte), as a capture may. */
static int replay_set__run(const struct replay_set *s, size_t max_piece, struct replay_ctx *rctx,
			   struct conn_decoder_stats *total)
{
	struct replay_conn *conns = calloc(MAX_CONNS, sizeof(*conns));
	size_t nconns = 0;
	int err = 0;

	if (!conns)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		const struct replay_record *r = &s->recs[i];
		struct replay_conn *rc = NULL;
		for (size_t k = 0; k < nconns; k++)
			if (conns[k].id == r->conn) {
				rc = &conns[k];
				break;
			}
		if (!rc) {
			if (nconns == MAX_CONNS) {
				err = -ENOSPC;
				break;
			}
			rc = &conns[nconns++];
			rc->id = r->conn;
			rc->ctx = rctx;
			rc->dec = conn_decoder__new(conn_cb, rc);
			if (!rc->dec) {
				err = -ENOMEM;
				break;
			}
		}
		if (r->pid) {
			rc->pid = r->pid;
			memcpy(rc->comm, r->comm, sizeof(rc->comm));
		}
		if (r->client_dir >= 0)
			conn_decoder__set_client_dir(rc->dec, r->client_dir);
		rctx->cur = rc;
		if (r->gap) {
			conn_decoder__gap(rc->dec, r->dir, r->gap);
			continue;
		}
		size_t step = max_piece ? max_piece : r->len;
		for (size_t o = 0; o < r->len || (!r->len && !o); o += step) {
			size_t n = r->len - o < step ? r->len - o : step;
			conn_decoder__feed(rc->dec, r->dir, r->offset + o, r->data + o, n,
					   r->ts_ns);
			if (!r->len)
				break;
		}
	}
	if (total)
		memset(total, 0, sizeof(*total));
	for (size_t k = 0; k < nconns; k++) {
		if (!conns[k].dec)
			continue;
		rctx->cur = &conns[k];
		conn_decoder__close(conns[k].dec, 0);
		if (total) {
			struct conn_decoder_stats st;
			conn_decoder__stats(conns[k].dec, &st);
			for (int d = 0; d < 2; d++)
				total->bytes[d] += st.bytes[d];
			total->gaps += st.gaps;
			total->bytes_lost += st.bytes_lost;
			total->bytes_skipped += st.bytes_skipped;
			total->resyncs += st.resyncs;
			total->messages += st.messages;
			total->streams_evicted += st.streams_evicted;
			total->decode_errors += st.decode_errors;
		}
		conn_decoder__free(conns[k].dec);
	}
	free(conns);
	return err;
}

int decode__replay_file(const char *path, size_t max_piece, conn_decoder_cb cb, void *ctx,
			uint64_t *conn_id, struct conn_decoder_stats *total)
{
	struct replay_set s = { 0 };
	struct replay_ctx rctx = { .cb = cb, .cb_ctx = ctx, .conn_id = conn_id };
	int err = replay_set__load(&s, path);

	if (!err)
		err = replay_set__run(&s, max_piece, &rctx, total);
	replay_set__free(&s);
	return err;
}

/* Output */

struct out_ctx {
	struct replay_ctx *rctx;
	bool json;
	uint64_t t0;
	uint64_t messages;
	uint64_t binds;
	bool header_done;
};

static void describe_k8s(char *b, size_t cap, const struct k8s_object *o)
{
	const struct k8s_meta *mt = &o->meta;

	switch (o->kind) {
	case K8S_KIND_POD:
		snprintf(b, cap, "Pod %s/%s uid=%s rv=%s node=%s%s%s%s%s", mt->namespace, mt->name,
			 mt->uid, mt->resource_version,
			 o->pod.node_name[0] ? o->pod.node_name : "\"\"",
			 o->pod.has_scheduled ? " PodScheduled=" : "",
			 o->pod.has_scheduled ? o->pod.scheduled_status : "",
			 o->pod.scheduled_reason[0] ? "/" : "", o->pod.scheduled_reason);
		break;
	case K8S_KIND_BINDING:
		snprintf(b, cap, "Binding %s/%s uid=%s -> %s %s", mt->namespace, mt->name, mt->uid,
			 o->binding.target_kind, o->binding.target_name);
		break;
	case K8S_KIND_STATUS:
		snprintf(b, cap, "Status %d %s %s \"%s\"", o->status.code, o->status.status,
			 o->status.reason, o->status.message);
		break;
	case K8S_KIND_TABLE_ROW:
		snprintf(b, cap, "TableRow %s/%s uid=%s rv=%s status=%s node=%s", mt->namespace,
			 mt->name, mt->uid, mt->resource_version, o->row.status, o->row.node_name);
		break;
	case K8S_KIND_SECRET:
		snprintf(b, cap, "Secret %s/%s " REDACTED, mt->namespace, mt->name);
		break;
	default:
		snprintf(b, cap, "%s %s/%s", o->kind_name[0] ? o->kind_name : "object",
			 mt->namespace, mt->name);
		break;
	}
}

static void describe_kv(char *b, size_t cap, const struct etcd_kv *kv)
{
	char v[1024] = "";
	if (kv->value_redacted)
		snprintf(v, sizeof(v), REDACTED);
	else if (kv->value.kind != K8S_KIND_NONE)
		describe_k8s(v, sizeof(v), &kv->value);
	else
		snprintf(v, sizeof(v), "%u bytes", kv->value_len);
	snprintf(b, cap, "%s mod_rev=%" PRId64 " [%s]", kv->key, kv->mod_revision, v);
}

/* One raft entry: index/term, what it asks and the request's id and key. */
static void describe_raft_entry(char *b, size_t cap, const struct raft_entry *e)
{
	char what[1400] = "", kv[1200];

	switch (e->request) {
	case RAFT_REQ_TXN: {
		const struct etcd_txn *t = &e->req.txn;
		kv[0] = 0;
		if (t->has_put)
			describe_kv(kv, sizeof(kv), &t->put);
		snprintf(what, sizeof(what), " txn if %s(%s)==%" PRId64 " then put %s",
			 t->compare_target == ETCD_TARGET_MOD	    ? "mod"
			 : t->compare_target == ETCD_TARGET_CREATE  ? "create"
			 : t->compare_target == ETCD_TARGET_VERSION ? "version"
								    : "target",
			 t->compare_key, t->compare_revision, t->has_put ? kv : "-");
		break;
	}
	case RAFT_REQ_PUT:
		describe_kv(kv, sizeof(kv), &e->req.put);
		snprintf(what, sizeof(what), " put %s", kv);
		break;
	case RAFT_REQ_RANGE:
	case RAFT_REQ_DELETE_RANGE:
		snprintf(what, sizeof(what), " %s %s", raft_request__name(e->request), e->req.key);
		break;
	case RAFT_REQ_COMPACTION:
		snprintf(what, sizeof(what), " compaction rev=%" PRId64, e->req.compact_revision);
		break;
	case RAFT_REQ_NONE:
		snprintf(what, sizeof(what), "%s", e->data_len ? "" : " empty");
		break;
	default:
		snprintf(what, sizeof(what), " %s (%u bytes)", raft_request__name(e->request),
			 e->data_len);
		break;
	}
	snprintf(b, cap, "[#%" PRIu64 " t%" PRIu64 "%s%s%s%s", e->index, e->term,
		 e->type != RAFT_ENTRY_NORMAL ? " " : "",
		 e->type != RAFT_ENTRY_NORMAL ? raft_entry_type__name(e->type) : "", what, "");
	if (e->request_id) {
		size_t n = strlen(b);
		snprintf(b + n, cap - n, " id=%" PRIx64, e->request_id);
	}
	size_t n = strlen(b);
	snprintf(b + n, cap - n, "]");
}

/* One raft message: from->to type term index commit, its entries. */
static void describe_raft(char *b, size_t cap, const struct raft_message *r)
{
	char from[20] = "?", to[20] = "?", state[96];
	size_t n;

	if (r->ids_known) {
		snprintf(from, sizeof(from), "%" PRIx64, r->from);
		snprintf(to, sizeof(to), "%" PRIx64, r->to);
	}
	if (r->state_known)
		snprintf(state, sizeof(state),
			 "term=%" PRIu64 " index=%" PRIu64 " logterm=%" PRIu64, r->term, r->index,
			 r->log_term);
	else
		snprintf(state, sizeof(state), "term=? index=? logterm=?");
	snprintf(b, cap, "%s->%s %s %s commit=%" PRIu64 "%s%s entries=%u", from, to,
		 raft_message_type__name(r->type), state, r->commit, r->reject ? " reject" : "",
		 r->app_entries ? " (msgappv2)" : "", r->entries_total);
	n = strlen(b);
	if (r->reject && n < cap)
		snprintf(b + n, cap - n, " hint=%" PRIu64, r->reject_hint);
	if (r->entries_first || !r->last_part) {
		n = strlen(b);
		snprintf(b + n, cap - n, " part %u-%u", r->entries_first,
			 r->entries_first + r->n_entries);
	}
	if (r->entries_cut) {
		n = strlen(b);
		snprintf(b + n, cap - n, " (entries not kept: frame too large)");
	}
	for (uint32_t i = 0; i < r->n_entries; i++) {
		char e[1600];
		describe_raft_entry(e, sizeof(e), &r->entries[i]);
		n = strlen(b);
		if (n + 1 < cap)
			snprintf(b + n, cap - n, " %s", e);
	}
}

static void describe_body(char *b, size_t cap, const struct decoded_msg *m)
{
	char x[1200], y[1200];

	b[0] = 0;
	switch (m->body_kind) {
	case BODY_K8S:
		describe_k8s(b, cap, &m->body.k8s);
		break;
	case BODY_K8S_WATCH_EVENT:
		describe_k8s(x, sizeof(x), &m->body.watch.object);
		snprintf(b, cap, "%s %s", m->body.watch.type, x);
		break;
	case BODY_ETCD_TXN: {
		const struct etcd_txn *t = &m->body.txn;
		x[0] = y[0] = 0;
		if (t->has_put)
			describe_kv(x, sizeof(x), &t->put);
		snprintf(b, cap, "Txn if %s(%s)==%" PRId64 " then put %s else get %s",
			 t->compare_target == ETCD_TARGET_MOD ? "mod_revision" : "target",
			 t->compare_key, t->compare_revision, t->has_put ? x : "-",
			 t->has_else_get ? t->else_get_key : "-");
		break;
	}
	case BODY_ETCD_TXN_RESPONSE: {
		const struct etcd_txn_response *t = &m->body.txn_response;
		x[0] = 0;
		if (t->has_kv)
			describe_kv(x, sizeof(x), &t->kv);
		snprintf(b, cap, "TxnResponse rev=%" PRId64 " succeeded=%s%s%s", t->header.revision,
			 t->succeeded ? "true" : "false", t->has_kv ? " got " : "", x);
		break;
	}
	case BODY_ETCD_RANGE:
		snprintf(b, cap, "Range %s%s%s", m->body.range.key,
			 m->body.range.range_end[0] ? ".." : "", m->body.range.range_end);
		break;
	case BODY_ETCD_RANGE_RESPONSE:
		x[0] = 0;
		if (m->body.range_response.has_kv)
			describe_kv(x, sizeof(x), &m->body.range_response.kv);
		snprintf(b, cap, "RangeResponse rev=%" PRId64 " count=%" PRId64 " %s",
			 m->body.range_response.header.revision, m->body.range_response.count, x);
		break;
	case BODY_ETCD_WATCH_REQUEST: {
		const struct etcd_watch_request *w = &m->body.watch_request;
		snprintf(b, cap, "WatchRequest %s %s..%s start_rev=%" PRId64 "%s",
			 w->kind == ETCD_WATCH_CREATE	? "create"
			 : w->kind == ETCD_WATCH_CANCEL ? "cancel"
							: "progress",
			 w->key, w->range_end, w->start_revision, w->prev_kv ? " prev_kv" : "");
		break;
	}
	case BODY_ETCD_WATCH_RESPONSE: {
		const struct etcd_watch_response *w = &m->body.etcd_watch.response;
		snprintf(b, cap, "WatchResponse rev=%" PRId64 " watch_id=%" PRId64 "%s%s",
			 w->header.revision, w->watch_id, w->created ? " created" : "",
			 w->canceled ? " canceled" : "");
		break;
	}
	case BODY_ETCD_WATCH_EVENT: {
		const struct etcd_watch_event *e = &m->body.etcd_watch.event;
		describe_kv(x, sizeof(x), &e->kv);
		snprintf(b, cap, "%s %s rev=%" PRId64 " prev_mod_rev=%" PRId64 " prev_node=%s",
			 e->type ? "DELETE" : "PUT", x, m->body.etcd_watch.response.header.revision,
			 e->prev_mod_revision, e->prev_node_name[0] ? e->prev_node_name : "\"\"");
		break;
	}
	case BODY_RAFT_MESSAGE:
		describe_raft(b, cap, m->body.raft);
		break;
	case BODY_UNDECODED:
		snprintf(b, cap, "(%" PRIu64 " bytes not decoded%s)", m->body_len,
			 m->body_truncated ? ", cut" : "");
		break;
	default:
		break;
	}
}

static void print_msg(const struct decoded_msg *m, void *ctx)
{
	struct out_ctx *o = ctx;
	struct replay_conn *rc = o->rctx->cur;

	o->messages++;
	if (m->kind == DECODED_REQUEST && m->body_kind == BODY_K8S &&
	    m->body.k8s.kind == K8S_KIND_BINDING)
		o->binds++;
	if (!o->json && !o->t0)
		o->t0 = m->ts_first_ns;
	if (o->json) {
		/* The message object (message_json.h), with the capture's own fields and every flag. */
		json_t *j = message_json__new(m);
		json_t *own =
		    json_pack("{s:I, s:i, s:s, s:i, s:b, s:b, s:b, s:b, s:b}", "conn",
			      (json_int_t)(rc ? rc->id : 0), "pid", rc ? rc->pid : 0, "comm",
			      rc ? rc->comm : "", "stream", (int)m->stream_id, "client_known",
			      m->client_known, "unreliable", m->unreliable, "incomplete",
			      m->incomplete, "streaming", m->streaming, "inferred", m->inferred);
		json_object_del(j, "stream_id");
		json_object_del(j, "path_inferred"); /* "inferred" below */
		json_object_update(j, own);
		json_decref(own);
		char *s = json_dumps(j, JSON_COMPACT);
		if (s)
			puts(s);
		free(s);
		json_decref(j);
		return;
	}
	if (!o->header_done) {
		printf("%-12s %-5s %-3s %-16s %-6s %-6s %s\n", "TIME(ms)", "CONN", "DIR", "KIND",
		       "STREAM", "FLAGS", "DETAIL");
		o->header_done = true;
	}
	char body[16384], head[1024] = "";
	const struct decoded_http *h = &m->http;
	describe_body(body, sizeof(body), m);
	switch (m->kind) {
	case DECODED_REQUEST:
	case DECODED_GRPC_REQUEST:
		snprintf(head, sizeof(head), "%s %s", h->method, h->path);
		break;
	case DECODED_RESPONSE:
	case DECODED_GRPC_RESPONSE:
		if (h->grpc_status >= 0)
			snprintf(head, sizeof(head), "%d grpc-status=%d%s%s (%s %s)", h->status,
				 h->grpc_status, h->grpc_message[0] ? " " : "", h->grpc_message,
				 h->method, h->path);
		else
			snprintf(head, sizeof(head), "%d (%s %s)", h->status, h->method, h->path);
		break;
	case DECODED_STREAM_RESET:
	case DECODED_GOAWAY:
		snprintf(head, sizeof(head), "error=%u", m->error_code);
		break;
	default:
		break;
	}
	printf("%12.3f %-5" PRIu64 " %-3s %-16s %-6u %c%c%c%c%c  %s%s%s\n",
	       (double)(m->ts_first_ns - o->t0) / 1e6, rc ? rc->id : 0, m->dir ? "in" : "out",
	       decoded_kind__name(m->kind), m->stream_id,
	       m->client_known ? (m->from_client ? 'C' : 'S') : (m->from_client ? 'c' : 's'),
	       m->unreliable ? 'U' : '-', m->incomplete ? 'I' : '-', m->streaming ? 'W' : '-',
	       m->inferred ? '~' : '-', head, head[0] && body[0] ? "  " : "", body);
}

static void count_msg(const struct decoded_msg *m, void *ctx)
{
	struct out_ctx *o = ctx;
	o->messages++;
	if (m->kind == DECODED_REQUEST && m->body_kind == BODY_K8S &&
	    m->body.k8s.kind == K8S_KIND_BINDING)
		o->binds++;
}

/* CLI */

struct decode_args {
	const char *path;
	bool json;
	bool bench;
	bool stats;
	long piece;
	double bench_seconds;
};

static const char doc[] =
    "Decode a capture recorded with `bindtrace capture --json`: HTTP/2 and HTTP/1.1 requests, "
    "responses and watch events of Kubernetes, etcd's gRPC calls, and etcd's peer traffic "
    "(raft messages of the rafthttp pipeline and streams).\n"
    "\vOutput: one line per message: time since the first (ms), connection, direction (out: "
    "written by the traced process), kind, HTTP/2 stream, flags (C/S client or server side, "
    "c/s when guessed, U connection unreliable after a gap or a mid-connection start, "
    "I message incomplete, W streaming, ~ etcd method or a Binding's path inferred from the "
    "message because its :path was never seen), and details. A raft message reads FROM->TO TYPE term= index= "
    "logterm= commit= entries=N, then each entry as [#INDEX tTERM request id=REQUEST-ID], a "
    "Txn with its compare and put keys; ? where the stream does not say yet (an msgappv2 "
    "stream met mid-way). --json prints one object per message with "
    "ts_first_ns, ts_last_ns, conn, pid, comm, dir, proto, kind, stream, from_client, "
    "client_known, unreliable, incomplete, streaming, inferred, method, path, authority, "
    "user_agent, content_type, status, grpc_status, body_kind, body_len and body (a raft "
    "message's body: framing, type, from, to, term, log_term, index, commit, reject, "
    "entries_total and entries, ids as hex strings, what is not known left out). A record "
    "may say which end is the client with \"client\": \"local\" (the traced process dialed) or "
    "\"remote\" (it accepted); otherwise the decoder works it out.\n\n"
    "EXAMPLES:\n"
    "  bindtrace decode capture.jsonl          # decoded messages, one per line\n"
    "  bindtrace decode --json capture.jsonl   # as JSON lines\n"
    "  bindtrace capture --json | bindtrace decode -\n"
    "  bindtrace decode --bench capture.jsonl  # decode throughput (MB/s, binds/s)";

static const struct argp_option options[] = {
	{ "json", 'j', NULL, 0, "One JSON object per message", 0 },
	{ "bench", 'b', NULL, 0, "Measure decode throughput on one core; print no messages", 0 },
	{ "bench-seconds", 'B', "SECONDS", 0, "How long --bench runs (default 2, 0.1-600)", 0 },
	{ "stats", 's', NULL, 0, "Print connection statistics at the end (stderr)", 0 },
	{ "piece", 'p', "BYTES", 0,
	  "Feed chunks in pieces of at most BYTES (1: byte by byte), to test reassembly", 0 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct decode_args *a = state->input;
	char *end;

	switch (key) {
	case 'j':
		a->json = true;
		break;
	case 'b':
		a->bench = true;
		break;
	case 's':
		a->stats = true;
		break;
	case 'B':
		errno = 0;
		a->bench_seconds = strtod(arg, &end);
		if (errno || *end || a->bench_seconds < 0.1 || a->bench_seconds > 600)
			argp_error(state, "--bench-seconds: '%s' is not a number from 0.1 to 600",
				   arg);
		break;
	case 'p':
		errno = 0;
		a->piece = strtol(arg, &end, 10);
		if (errno || *end || a->piece < 1 || a->piece > (1 << 30))
			argp_error(state, "--piece: '%s' is not a size from 1 to 1073741824", arg);
		break;
	case ARGP_KEY_ARG:
		if (a->path)
			argp_error(state, "one capture file at a time");
		a->path = arg;
		break;
	case ARGP_KEY_END:
		if (!a->path)
			argp_error(state, "which capture? give FILE.jsonl (or - for stdin)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench(const struct replay_set *s, const struct decode_args *a)
{
	struct out_ctx o = { 0 };
	struct replay_ctx rctx = { .cb = count_msg, .cb_ctx = &o };
	double t0 = now_s(), t;
	unsigned long iters = 0;

	o.rctx = &rctx;
	do {
		int err = replay_set__run(s, (size_t)a->piece, &rctx, NULL);
		if (err)
			return err;
		iters++;
		t = now_s() - t0;
	} while (t < a->bench_seconds);
	double mb = (double)s->bytes * (double)iters / 1e6;
	printf("bench: %lu passes over %" PRIu64 " bytes in %zu records, %.2f s on one core\n",
	       iters, s->bytes, s->n, t);
	printf("bench: %.1f MB/s, %.0f messages/s, %.0f binds/s (%" PRIu64 " binds per pass)\n",
	       mb / t, (double)o.messages / t, (double)o.binds / t, o.binds / iters);
	return 0;
}

int cmd_decode(int argc, char **argv)
{
	struct decode_args a = { .bench_seconds = 2 };
	struct argp argp = { options, parse_opt, "FILE.jsonl", doc, NULL, NULL, NULL };
	struct replay_set s = { 0 };
	struct conn_decoder_stats st;
	int err;

	if (argp_parse(&argp, argc, argv, 0, NULL, &a))
		return 2;
	err = replay_set__load(&s, a.path);
	if (err) {
		if (err != -EINVAL) /* -EINVAL: it said why */
			fprintf(stderr, "bindtrace decode: %s: %s\n", a.path, strerror(-err));
		replay_set__free(&s);
		return 1;
	}
	if (a.bench) {
		err = bench(&s, &a);
		goto cleanup;
	}
	struct out_ctx o = { .json = a.json };
	struct replay_ctx rctx = { .cb = print_msg, .cb_ctx = &o };
	o.rctx = &rctx;
	err = replay_set__run(&s, (size_t)a.piece, &rctx, &st);
	if (!err && a.stats)
		fprintf(stderr,
			"bindtrace decode: %" PRIu64 " messages, %" PRIu64 "+%" PRIu64
			" bytes, %" PRIu64 " gaps (%" PRIu64 " bytes lost), %" PRIu64
			" resyncs, %" PRIu64 " bytes skipped, %" PRIu64 " decode errors\n",
			st.messages, st.bytes[0], st.bytes[1], st.gaps, st.bytes_lost, st.resyncs,
			st.bytes_skipped, st.decode_errors);
cleanup:
	replay_set__free(&s);
	if (err) {
		fprintf(stderr, "bindtrace decode: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
