/* A decoded message as JSON: the message object of the evidence (messages.jsonl), of `bindtrace
 * decode --json` and of the golden test's expectations. Only what the decoders kept goes in:
 * header values they redacted stay redacted, a Secret's data and etcd values under
 * /registry/secrets/ are written as "[redacted]". */
#include <inttypes.h>
#include <stdio.h>

#include <jansson.h>

#include "message_json.h"
#include "redact.h"

static json_t *k8s_json(const struct k8s_object *o)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind",
			      o->kind_name[0] ? o->kind_name : k8s_kind__name(o->kind), "namespace",
			      o->meta.namespace, "name", o->meta.name, "uid", o->meta.uid,
			      "resourceVersion", o->meta.resource_version, "encoding",
			      o->encoding == K8S_ENCODING_JSON ? "json" : "protobuf");

	if (!j)
		return json_null();
	switch (o->kind) {
	case K8S_KIND_POD:
		json_object_set_new(j, "nodeName", json_string(o->pod.node_name));
		json_object_set_new(j, "schedulerName", json_string(o->pod.scheduler_name));
		json_object_set_new(j, "phase", json_string(o->pod.phase));
		if (o->pod.has_scheduled)
			json_object_set_new(j, "podScheduled",
					    json_pack("{s:s, s:s}", "status",
						      o->pod.scheduled_status, "reason",
						      o->pod.scheduled_reason));
		if (o->pod.deleting)
			json_object_set_new(j, "deleting", json_true());
		break;
	case K8S_KIND_BINDING:
		json_object_set_new(j, "target",
				    json_pack("{s:s, s:s}", "kind", o->binding.target_kind, "name",
					      o->binding.target_name));
		break;
	case K8S_KIND_STATUS:
		json_object_set_new(j, "code", json_integer(o->status.code));
		json_object_set_new(j, "status", json_string(o->status.status));
		json_object_set_new(j, "reason", json_string(o->status.reason));
		json_object_set_new(j, "message", json_string(o->status.message));
		break;
	case K8S_KIND_TABLE_ROW:
		json_object_set_new(j, "kind", json_string("TableRow"));
		json_object_set_new(j, "row", json_integer(o->row.index));
		json_object_set_new(j, "nodeName", json_string(o->row.node_name));
		json_object_set_new(j, "status", json_string(o->row.status));
		break;
	case K8S_KIND_SECRET:
		json_object_set_new(j, "data", json_string(REDACTED));
		break;
	default:
		break;
	}
	return j;
}

static json_t *kv_json(const struct etcd_kv *kv)
{
	json_t *j =
	    json_pack("{s:s, s:I, s:I, s:I, s:I}", "key", kv->key, "create_revision",
		      (json_int_t)kv->create_revision, "mod_revision", (json_int_t)kv->mod_revision,
		      "version", (json_int_t)kv->version, "value_len", (json_int_t)kv->value_len);

	if (!j)
		return json_null();
	if (kv->value_redacted || redact__etcd_key_is_secret(kv->key))
		json_object_set_new(j, "value", json_string(REDACTED));
	else if (kv->value.kind != K8S_KIND_NONE)
		json_object_set_new(j, "value", k8s_json(&kv->value));
	return j;
}

static json_t *txn_json(const struct etcd_txn *t)
{
	json_t *j =
	    json_pack("{s:i, s:s, s:i, s:i, s:I}", "compares", (int)t->compares, "compare_key",
		      t->compare_key, "compare_target", t->compare_target, "compare_result",
		      t->compare_result, "compare_revision", (json_int_t)t->compare_revision);

	if (j && t->has_put)
		json_object_set_new(j, "put", kv_json(&t->put));
	if (j && t->has_delete)
		json_object_set_new(j, "delete", json_string(t->delete_key));
	if (j && t->has_else_get)
		json_object_set_new(j, "else_get", json_string(t->else_get_key));
	return j;
}

/* Member and request ids are unsigned 64-bit: hex strings, as etcd writes member ids. */
static json_t *hex_id_json(uint64_t id)
{
	char b[20];

	snprintf(b, sizeof(b), "%" PRIx64, id);
	return json_string(b);
}

static json_t *raft_entry_json(const struct raft_entry *e)
{
	json_t *j =
	    json_pack("{s:I, s:I, s:s, s:i, s:s}", "index", (json_int_t)e->index, "term",
		      (json_int_t)e->term, "type", raft_entry_type__name(e->type), "data_len",
		      (int)e->data_len, "request", raft_request__name(e->request));

	if (!j)
		return json_null();
	if (e->request_id)
		json_object_set_new(j, "request_id", hex_id_json(e->request_id));
	switch (e->request) {
	case RAFT_REQ_TXN:
		json_object_set_new(j, "txn", txn_json(&e->req.txn));
		break;
	case RAFT_REQ_PUT:
		json_object_set_new(j, "put", kv_json(&e->req.put));
		break;
	case RAFT_REQ_RANGE:
	case RAFT_REQ_DELETE_RANGE:
		json_object_set_new(j, "key", json_string(e->req.key));
		break;
	case RAFT_REQ_COMPACTION:
		json_object_set_new(j, "compact_revision",
				    json_integer((json_int_t)e->req.compact_revision));
		break;
	default:
		break;
	}
	return j;
}

/* A raft message (or part): what is not known is absent, not 0. */
static json_t *raft_json(const struct raft_message *r)
{
	json_t *j =
	    json_pack("{s:s, s:s, s:I, s:b, s:i}", "framing", raft_framing__name(r->framing),
		      "type", raft_message_type__name(r->type), "commit", (json_int_t)r->commit,
		      "reject", r->reject, "entries_total", (int)r->entries_total);
	json_t *entries = json_array();

	if (!j || !entries) {
		json_decref(j);
		json_decref(entries);
		return json_null();
	}
	if (r->ids_known) {
		json_object_set_new(j, "from", hex_id_json(r->from));
		json_object_set_new(j, "to", hex_id_json(r->to));
	}
	if (r->state_known) {
		json_object_set_new(j, "term", json_integer((json_int_t)r->term));
		json_object_set_new(j, "log_term", json_integer((json_int_t)r->log_term));
		json_object_set_new(j, "index", json_integer((json_int_t)r->index));
	}
	if (r->app_entries)
		json_object_set_new(j, "app_entries", json_true());
	if (r->reject)
		json_object_set_new(j, "reject_hint", json_integer((json_int_t)r->reject_hint));
	if (r->vote)
		json_object_set_new(j, "vote", hex_id_json(r->vote));
	if (r->has_snapshot) {
		json_object_set_new(j, "snapshot_index",
				    json_integer((json_int_t)r->snapshot_index));
		json_object_set_new(j, "snapshot_term", json_integer((json_int_t)r->snapshot_term));
	}
	if (r->context_len)
		json_object_set_new(j, "context_len", json_integer(r->context_len));
	if (r->entries_first || !r->last_part) {
		json_object_set_new(j, "entries_first", json_integer(r->entries_first));
		json_object_set_new(j, "last_part", json_boolean(r->last_part));
	}
	if (r->entries_cut)
		json_object_set_new(j, "entries_cut", json_true());
	for (uint32_t i = 0; i < r->n_entries; i++)
		json_array_append_new(entries, raft_entry_json(&r->entries[i]));
	json_object_set_new(j, "entries", entries);
	return j;
}

static json_t *body_json(const struct decoded_msg *m)
{
	switch (m->body_kind) {
	case BODY_K8S:
		return k8s_json(&m->body.k8s);
	case BODY_K8S_WATCH_EVENT:
		return json_pack("{s:s, s:o}", "type", m->body.watch.type, "object",
				 k8s_json(&m->body.watch.object));
	case BODY_ETCD_TXN:
		return txn_json(&m->body.txn);
	case BODY_RAFT_MESSAGE:
		return raft_json(m->body.raft);
	case BODY_ETCD_TXN_RESPONSE: {
		const struct etcd_txn_response *t = &m->body.txn_response;
		json_t *j = json_pack("{s:I, s:b}", "revision", (json_int_t)t->header.revision,
				      "succeeded", t->succeeded);

		if (j && t->has_kv)
			json_object_set_new(j, "kv", kv_json(&t->kv));
		return j;
	}
	case BODY_ETCD_RANGE:
		return json_pack("{s:s, s:s, s:I}", "key", m->body.range.key, "range_end",
				 m->body.range.range_end, "revision",
				 (json_int_t)m->body.range.revision);
	case BODY_ETCD_RANGE_RESPONSE: {
		json_t *j = json_pack("{s:I, s:I}", "revision",
				      (json_int_t)m->body.range_response.header.revision, "count",
				      (json_int_t)m->body.range_response.count);

		if (j && m->body.range_response.has_kv)
			json_object_set_new(j, "kv", kv_json(&m->body.range_response.kv));
		return j;
	}
	case BODY_ETCD_WATCH_REQUEST:
		return json_pack("{s:i, s:s, s:s, s:I, s:b}", "kind", m->body.watch_request.kind,
				 "key", m->body.watch_request.key, "range_end",
				 m->body.watch_request.range_end, "start_revision",
				 (json_int_t)m->body.watch_request.start_revision, "prev_kv",
				 m->body.watch_request.prev_kv);
	case BODY_ETCD_WATCH_RESPONSE:
	case BODY_ETCD_WATCH_EVENT: {
		const struct etcd_watch_response *w = &m->body.etcd_watch.response;
		json_t *j = json_pack(
		    "{s:I, s:I, s:b, s:b}", "revision", (json_int_t)w->header.revision, "watch_id",
		    (json_int_t)w->watch_id, "created", w->created, "canceled", w->canceled);

		if (j && m->body_kind == BODY_ETCD_WATCH_EVENT) {
			const struct etcd_watch_event *e = &m->body.etcd_watch.event;

			json_object_set_new(j, "type", json_string(e->type ? "DELETE" : "PUT"));
			json_object_set_new(j, "index", json_integer(e->index));
			json_object_set_new(j, "kv", kv_json(&e->kv));
			if (e->has_prev_kv) {
				json_object_set_new(j, "prev_mod_revision",
						    json_integer(e->prev_mod_revision));
				json_object_set_new(j, "prev_node_name",
						    json_string(e->prev_node_name));
			}
		}
		return j;
	}
	default:
		return NULL;
	}
}

json_t *message_json__body(const struct decoded_msg *m)
{
	return body_json(m);
}

json_t *message_json__new(const struct decoded_msg *m)
{
	const struct decoded_http *h = &m->http;
	json_t *j = json_object(), *b;

	json_object_set_new(j, "kind", json_string(decoded_kind__name(m->kind)));
	json_object_set_new(j, "proto", json_string(conn_proto__name(m->proto)));
	json_object_set_new(j, "dir", json_string(m->dir == CONN_DIR_OUT ? "out" : "in"));
	json_object_set_new(j, "from_client", json_boolean(m->from_client));
	json_object_set_new(j, "stream_id", json_integer(m->stream_id));
	json_object_set_new(j, "ts_first_ns", json_integer((json_int_t)m->ts_first_ns));
	json_object_set_new(j, "ts_last_ns", json_integer((json_int_t)m->ts_last_ns));
	if (m->unreliable)
		json_object_set_new(j, "unreliable", json_true());
	if (m->incomplete)
		json_object_set_new(j, "incomplete", json_true());
	if (m->streaming)
		json_object_set_new(j, "streaming", json_true());
	if (h->method[0])
		json_object_set_new(j, "method", json_string(h->method));
	if (h->path[0])
		json_object_set_new(j, "path", json_string(h->path));
	/* The :path was an HPACK entry made before the tracer came: the path above is the etcd
	 * method or the Binding's pod that the message itself shows. */
	if (m->inferred)
		json_object_set_new(j, "path_inferred", json_true());
	if (h->authority[0])
		json_object_set_new(j, "authority", json_string(h->authority));
	if (h->user_agent[0])
		json_object_set_new(j, "user_agent", json_string(h->user_agent));
	if (h->content_type[0])
		json_object_set_new(j, "content_type", json_string(h->content_type));
	if (h->status)
		json_object_set_new(j, "status", json_integer(h->status));
	if (h->grpc_status >= 0) {
		json_object_set_new(j, "grpc_status", json_integer(h->grpc_status));
		json_object_set_new(j, "grpc_message", json_string(h->grpc_message));
	}
	if (m->kind == DECODED_STREAM_RESET || m->kind == DECODED_GOAWAY)
		json_object_set_new(j, "error_code", json_integer(m->error_code));
	json_object_set_new(j, "body_kind", json_string(decoded_body_kind__name(m->body_kind)));
	json_object_set_new(j, "body_len", json_integer((json_int_t)m->body_len));
	if (m->body_truncated)
		json_object_set_new(j, "body_truncated", json_true());
	b = body_json(m);
	if (b)
		json_object_set_new(j, "body", b);
	return j;
}
