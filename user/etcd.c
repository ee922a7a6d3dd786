/* etcd v3 message decoding over the protobuf walker. Only the first compare, put, range and kv of
 * each message are kept in full; the rest are counted. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "etcd.h"
#include "protobuf.h"
#include "redact.h"

#define COPY(dst, f) pb__copy_string((dst), sizeof(dst), (f)->data, (f)->len)
#define FOR_EACH_FIELD(buf, len, f, err)                                                           \
	for (struct pb_reader r_ = { (buf), (len), 0 }; ((err) = pb_reader__next(&r_, &(f))) == 1;)

static const struct {
	const char *path;
	enum etcd_method method;
} etcd_paths[] = {
	{ "/etcdserverpb.KV/Txn", ETCD_METHOD_TXN },
	{ "/etcdserverpb.KV/Range", ETCD_METHOD_RANGE },
	{ "/etcdserverpb.KV/Put", ETCD_METHOD_PUT },
	{ "/etcdserverpb.KV/DeleteRange", ETCD_METHOD_DELETE_RANGE },
	{ "/etcdserverpb.Watch/Watch", ETCD_METHOD_WATCH },
	{ "/etcdserverpb.Lease/LeaseKeepAlive", ETCD_METHOD_LEASE_KEEPALIVE },
};

enum etcd_method etcd__method_from_path(const char *path)
{
	for (size_t i = 0; i < sizeof(etcd_paths) / sizeof(etcd_paths[0]); i++)
		if (!strcmp(path, etcd_paths[i].path))
			return etcd_paths[i].method;
	return strncmp(path, "/etcdserverpb.", 14) ? ETCD_METHOD_NONE : ETCD_METHOD_OTHER;
}

const char *etcd_method__name(enum etcd_method m)
{
	switch (m) {
	case ETCD_METHOD_TXN:
		return "Txn";
	case ETCD_METHOD_RANGE:
		return "Range";
	case ETCD_METHOD_PUT:
		return "Put";
	case ETCD_METHOD_DELETE_RANGE:
		return "DeleteRange";
	case ETCD_METHOD_WATCH:
		return "Watch";
	case ETCD_METHOD_LEASE_KEEPALIVE:
		return "LeaseKeepAlive";
	case ETCD_METHOD_OTHER:
		return "other";
	default:
		return "none";
	}
}

bool etcd__key_is_secret(const char *key)
{
	return redact__etcd_key_is_secret(key);
}

/* A value: a k8s object unless the key is a secret's. */
static void decode_value(struct etcd_kv *kv, const uint8_t *buf, size_t len)
{
	kv->value_len = (uint32_t)len;
	memset(&kv->value, 0, sizeof(kv->value));
	if (etcd__key_is_secret(kv->key)) {
		kv->value_redacted = true;
		kv->value.kind = K8S_KIND_SECRET;
		snprintf(kv->value.kind_name, sizeof(kv->value.kind_name), "Secret");
		return;
	}
	if (len >= K8S_MAGIC_LEN && !memcmp(buf, K8S_MAGIC, K8S_MAGIC_LEN)) {
		if (k8s__decode_protobuf(buf, len, &kv->value))
			kv->value.kind = K8S_KIND_NONE;
	} else if (len && buf[0] == '{') {
		if (k8s__decode_json((const char *)buf, len, &kv->value, NULL))
			kv->value.kind = K8S_KIND_NONE;
	}
	if (kv->value.kind == K8S_KIND_SECRET)
		kv->value_redacted = true;
}

/* mvccpb.KeyValue; the value is decoded after the key is known (fields may come in any order). */
static int decode_kv(const uint8_t *buf, size_t len, struct etcd_kv *kv)
{
	struct pb_field f;
	const uint8_t *value = NULL;
	size_t value_len = 0;
	int err;

	memset(kv, 0, offsetof(struct etcd_kv, value));
	FOR_EACH_FIELD(buf, len, f, err)
	{
		switch (f.number) {
		case 1:
			if (f.type == PB_WT_LEN)
				COPY(kv->key, &f);
			break;
		case 2:
			kv->create_revision = (int64_t)f.varint;
			break;
		case 3:
			kv->mod_revision = (int64_t)f.varint;
			break;
		case 4:
			kv->version = (int64_t)f.varint;
			break;
		case 5:
			if (f.type == PB_WT_LEN) {
				value = f.data;
				value_len = f.len;
			}
			break;
		case 6:
			kv->lease = (int64_t)f.varint;
			break;
		}
	}
	if (err)
		return err;
	decode_value(kv, value, value_len);
	return 0;
}

static int decode_header(const uint8_t *buf, size_t len, struct etcd_header *h)
{
	struct pb_field f;
	int err;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.type != PB_WT_VARINT)
			continue;
		if (f.number == 1)
			h->cluster_id = f.varint;
		else if (f.number == 2)
			h->member_id = f.varint;
		else if (f.number == 3)
			h->revision = (int64_t)f.varint;
		else if (f.number == 4)
			h->raft_term = f.varint;
	}
	return err;
}

static int decode_compare(const uint8_t *buf, size_t len, struct etcd_txn *t)
{
	struct pb_field f;
	int err;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		switch (f.number) {
		case 1:
			t->compare_result = (int32_t)f.varint;
			break;
		case 2:
			t->compare_target = (int32_t)f.varint;
			break;
		case 3:
			if (f.type == PB_WT_LEN)
				COPY(t->compare_key, &f);
			break;
		case 4: /* version */
		case 5: /* create_revision */
		case 6: /* mod_revision */
		case 8: /* lease */
			if (f.type == PB_WT_VARINT)
				t->compare_revision = (int64_t)f.varint;
			break;
		}
	}
	return err;
}

/* PutRequest into kv (key, value, lease). */
static int decode_put(const uint8_t *buf, size_t len, struct etcd_kv *kv)
{
	struct pb_field f;
	const uint8_t *value = NULL;
	size_t value_len = 0;
	int err;

	memset(kv, 0, offsetof(struct etcd_kv, value));
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number == 1 && f.type == PB_WT_LEN)
			COPY(kv->key, &f);
		else if (f.number == 2 && f.type == PB_WT_LEN) {
			value = f.data;
			value_len = f.len;
		} else if (f.number == 3)
			kv->lease = (int64_t)f.varint;
	}
	if (err)
		return err;
	decode_value(kv, value, value_len);
	return 0;
}

static int first_key(const uint8_t *buf, size_t len, char *dst, size_t cap)
{
	struct pb_field f;
	int err;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number == 1 && f.type == PB_WT_LEN) {
			pb__copy_string(dst, cap, f.data, f.len);
			break;
		}
	}
	return err < 0 ? err : 0;
}

/* RequestOp of the success (else_branch false) or failure branch. */
static int decode_request_op(const uint8_t *buf, size_t len, struct etcd_txn *t, bool failure)
{
	struct pb_field f;
	int err, err2 = 0;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.type != PB_WT_LEN)
			continue;
		if (f.number == 1 && failure && !t->has_else_get) {
			t->has_else_get = true;
			err2 = first_key(f.data, f.len, t->else_get_key, sizeof(t->else_get_key));
		} else if (f.number == 2 && !failure && !t->has_put) {
			t->has_put = true;
			err2 = decode_put(f.data, f.len, &t->put);
		} else if (f.number == 3 && !t->has_delete) {
			t->has_delete = true;
			err2 = first_key(f.data, f.len, t->delete_key, sizeof(t->delete_key));
		}
		if (err2)
			return err2;
	}
	return err;
}

int etcd__decode_txn_request(const uint8_t *buf, size_t len, struct etcd_txn *t)
{
	struct pb_field f;
	int err, err2 = 0;

	memset(t, 0, sizeof(*t));
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.type != PB_WT_LEN)
			return -EBADMSG;
		if (f.number == 1) {
			if (!t->compares++)
				err2 = decode_compare(f.data, f.len, t);
		} else if (f.number == 2) {
			t->successes++;
			err2 = decode_request_op(f.data, f.len, t, false);
		} else if (f.number == 3) {
			t->failures++;
			err2 = decode_request_op(f.data, f.len, t, true);
		}
		if (err2)
			return err2;
	}
	return err;
}

static int decode_range_response_into(const uint8_t *buf, size_t len, struct etcd_header *h,
				      int64_t *count, uint32_t *kvs, bool *more, bool *has_kv,
				      struct etcd_kv *kv)
{
	struct pb_field f;
	int err, err2 = 0;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number == 1 && f.type == PB_WT_LEN && h)
			err2 = decode_header(f.data, f.len, h);
		else if (f.number == 2 && f.type == PB_WT_LEN) {
			if (!(*kvs)++) {
				*has_kv = true;
				err2 = decode_kv(f.data, f.len, kv);
			}
		} else if (f.number == 3 && more)
			*more = f.varint != 0;
		else if (f.number == 4 && count)
			*count = (int64_t)f.varint;
		if (err2)
			return err2;
	}
	return err;
}

int etcd__decode_txn_response(const uint8_t *buf, size_t len, struct etcd_txn_response *t)
{
	struct pb_field f, g;
	int err, err2 = 0;

	memset(t, 0, sizeof(*t));
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number == 1 && f.type == PB_WT_LEN) {
			err2 = decode_header(f.data, f.len, &t->header);
		} else if (f.number == 2 && f.type == PB_WT_VARINT) {
			t->succeeded = f.varint != 0;
		} else if (f.number == 3 && f.type == PB_WT_LEN) {
			t->responses++;
			/* ResponseOp{response_range=1, response_put=2, response_delete_range=3} */
			FOR_EACH_FIELD(f.data, f.len, g, err2)
			{
				if (g.number == 1 && g.type == PB_WT_LEN && !t->has_kv) {
					uint32_t kvs = 0;
					int e = decode_range_response_into(g.data, g.len, NULL,
									   NULL, &kvs, NULL,
									   &t->has_kv, &t->kv);
					if (e)
						return e;
				}
			}
		}
		if (err2)
			return err2;
	}
	return err;
}

int etcd__decode_range_request(const uint8_t *buf, size_t len, struct etcd_range_request *r)
{
	struct pb_field f;
	int err;

	memset(r, 0, sizeof(*r));
	FOR_EACH_FIELD(buf, len, f, err)
	{
		switch (f.number) {
		case 1:
			if (f.type == PB_WT_LEN)
				COPY(r->key, &f);
			break;
		case 2:
			if (f.type == PB_WT_LEN)
				COPY(r->range_end, &f);
			break;
		case 3:
			r->limit = (int64_t)f.varint;
			break;
		case 4:
			r->revision = (int64_t)f.varint;
			break;
		case 8:
			r->keys_only = f.varint != 0;
			break;
		case 9:
			r->count_only = f.varint != 0;
			break;
		}
	}
	return err;
}

int etcd__decode_range_response(const uint8_t *buf, size_t len, struct etcd_range_response *r)
{
	memset(r, 0, sizeof(*r));
	return decode_range_response_into(buf, len, &r->header, &r->count, &r->kvs, &r->more,
					  &r->has_kv, &r->kv);
}

int etcd__decode_watch_request(const uint8_t *buf, size_t len, struct etcd_watch_request *w)
{
	struct pb_field f, g;
	int err, err2 = 0;

	memset(w, 0, sizeof(*w));
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.type != PB_WT_LEN)
			return -EBADMSG;
		if (f.number == 1) {
			w->kind = ETCD_WATCH_CREATE;
			FOR_EACH_FIELD(f.data, f.len, g, err2)
			{
				switch (g.number) {
				case 1:
					if (g.type == PB_WT_LEN)
						COPY(w->key, &g);
					break;
				case 2:
					if (g.type == PB_WT_LEN)
						COPY(w->range_end, &g);
					break;
				case 3:
					w->start_revision = (int64_t)g.varint;
					break;
				case 4:
					w->progress_notify = g.varint != 0;
					break;
				case 6:
					w->prev_kv = g.varint != 0;
					break;
				case 7:
					w->watch_id = (int64_t)g.varint;
					break;
				}
			}
		} else if (f.number == 2) {
			w->kind = ETCD_WATCH_CANCEL;
			FOR_EACH_FIELD(f.data, f.len, g, err2)
			{
				if (g.number == 1)
					w->watch_id = (int64_t)g.varint;
			}
		} else if (f.number == 3) {
			w->kind = ETCD_WATCH_PROGRESS;
		}
		if (err2)
			return err2;
	}
	return err ? err : (w->kind ? 0 : -EBADMSG);
}

static int decode_event(const uint8_t *buf, size_t len, struct etcd_watch_event *ev)
{
	struct pb_field f;
	int err, err2 = 0;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number == 1 && f.type == PB_WT_VARINT) {
			ev->type = (int32_t)f.varint;
		} else if (f.number == 2 && f.type == PB_WT_LEN) {
			err2 = decode_kv(f.data, f.len, &ev->kv);
		} else if (f.number == 3 && f.type == PB_WT_LEN) {
			/* prev_kv: only its revision and node, not a second full object. */
			struct etcd_kv prev;
			ev->has_prev_kv = true;
			err2 = decode_kv(f.data, f.len, &prev);
			ev->prev_mod_revision = prev.mod_revision;
			if (prev.value.kind == K8S_KIND_POD)
				memcpy(ev->prev_node_name, prev.value.pod.node_name,
				       sizeof(ev->prev_node_name));
		}
		if (err2)
			return err2;
	}
	return err;
}

int etcd__decode_watch_response(const uint8_t *buf, size_t len, struct etcd_watch_response *w,
				etcd_event_cb on_event, void *ctx)
{
	struct pb_field f;
	int err, err2 = 0;

	memset(w, 0, sizeof(*w));
	/* Count the events and read the header first: events must carry it when reported. */
	FOR_EACH_FIELD(buf, len, f, err)
	{
		switch (f.number) {
		case 1:
			if (f.type != PB_WT_LEN)
				return -EBADMSG;
			err2 = decode_header(f.data, f.len, &w->header);
			break;
		case 2:
			w->watch_id = (int64_t)f.varint;
			break;
		case 3:
			w->created = f.varint != 0;
			break;
		case 4:
			w->canceled = f.varint != 0;
			break;
		case 5:
			w->compact_revision = (int64_t)f.varint;
			break;
		case 7:
			w->fragment = f.varint != 0;
			break;
		case 11:
			if (f.type != PB_WT_LEN)
				return -EBADMSG;
			w->events++;
			break;
		}
		if (err2)
			return err2;
	}
	if (err || !on_event)
		return err;
	uint32_t index = 0;
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number != 11)
			continue;
		struct etcd_watch_event ev;
		memset(&ev, 0, sizeof(ev));
		ev.index = index++;
		if (decode_event(f.data, f.len, &ev))
			return -EBADMSG;
		on_event(w, &ev, ctx);
	}
	return err;
}
