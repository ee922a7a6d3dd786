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

const char *etcd_method__path(enum etcd_method m)
{
	for (size_t i = 0; i < sizeof(etcd_paths) / sizeof(etcd_paths[0]); i++)
		if (etcd_paths[i].method == m)
			return etcd_paths[i].path;
	return "";
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

int etcd__decode_put_request(const uint8_t *buf, size_t len, struct etcd_kv *kv)
{
	return decode_put(buf, len, kv);
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

/* Fields 1 (key) and 2 (range_end) of RangeRequest and WatchCreateRequest, which name a key
 * range alike: copied when f is one of them and is bytes. Returns whether f was one of them. */
static bool key_range_field(const struct pb_field *f, char key[ETCD_KEY_MAX],
			    char range_end[ETCD_KEY_MAX])
{
	if (f->number != 1 && f->number != 2)
		return false;
	if (f->type == PB_WT_LEN)
		pb__copy_string(f->number == 1 ? key : range_end, ETCD_KEY_MAX, f->data, f->len);
	return true;
}

int etcd__decode_range_request(const uint8_t *buf, size_t len, struct etcd_range_request *r)
{
	struct pb_field f;
	int err;

	memset(r, 0, sizeof(*r));
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (key_range_field(&f, r->key, r->range_end))
			continue;
		switch (f.number) {
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
				if (key_range_field(&g, w->key, w->range_end))
					continue;
				switch (g.number) {
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

/* Inference: strict shape checks of the messages of each method. A message must use only the
 * method's field numbers with their wire types, and carry at least one key the apiserver would
 * write (printable ASCII, starting with '/'); where two methods share a shape, neither is chosen. */

#define INFER_MAX_DEPTH 3 /* a Txn inside a Txn inside a Txn */

static bool plausible_key(const uint8_t *p, size_t n)
{
	if (n < 2 || n >= ETCD_KEY_MAX || p[0] != '/')
		return false;
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x21 || p[i] > 0x7e)
			return false;
	return true;
}

/* The fields of a message, each checked by number against an allowed wire-type mask. Returns
 * the number of fields, or -1 when one is not allowed or the message does not parse. */
struct field_rule {
	uint32_t number;
	uint8_t types; /* 1 << enum pb_wire_type */
};

#define T_VARINT (1u << PB_WT_VARINT)
#define T_LEN (1u << PB_WT_LEN)

static int check_fields(const uint8_t *buf, size_t len, const struct field_rule *rules,
			size_t nrules)
{
	struct pb_reader r = { buf, len, 0 };
	struct pb_field f;
	int n = 0, err;

	while ((err = pb_reader__next(&r, &f)) == 1) {
		size_t i;
		for (i = 0; i < nrules; i++)
			if (rules[i].number == f.number)
				break;
		if (i == nrules || !(rules[i].types & (1u << f.type)))
			return -1;
		n++;
	}
	return err ? -1 : n;
}

/* The first field number `number` of wire type LEN, or NULL. */
static const uint8_t *find_len_field(const uint8_t *buf, size_t len, uint32_t number,
				     size_t *out_len)
{
	struct pb_reader r = { buf, len, 0 };
	struct pb_field f;

	*out_len = 0;
	while (pb_reader__next(&r, &f) == 1)
		if (f.number == number && f.type == PB_WT_LEN) {
			*out_len = f.len;
			return f.data;
		}
	return NULL;
}

static bool has_plausible_key(const uint8_t *buf, size_t len, uint32_t number)
{
	size_t n = 0;
	const uint8_t *k = find_len_field(buf, len, number, &n);
	return k && plausible_key(k, n);
}

static const struct field_rule compare_rules[] = {
	{ 1, T_VARINT }, { 2, T_VARINT }, { 3, T_LEN },	   { 4, T_VARINT }, { 5, T_VARINT },
	{ 6, T_VARINT }, { 7, T_LEN },	  { 8, T_VARINT }, { 64, T_LEN },
};
static const struct field_rule range_rules[] = {
	{ 1, T_LEN },	  { 2, T_LEN },	    { 3, T_VARINT },  { 4, T_VARINT }, { 5, T_VARINT },
	{ 6, T_VARINT },  { 7, T_VARINT },  { 8, T_VARINT },  { 9, T_VARINT }, { 10, T_VARINT },
	{ 11, T_VARINT }, { 12, T_VARINT }, { 13, T_VARINT },
};
static const struct field_rule put_rules[] = {
	{ 1, T_LEN },	 { 2, T_LEN },	  { 3, T_VARINT },
	{ 4, T_VARINT }, { 5, T_VARINT }, { 6, T_VARINT },
};
static const struct field_rule delete_rules[] = {
	{ 1, T_LEN },
	{ 2, T_LEN },
	{ 3, T_VARINT },
};
static const struct field_rule op_rules[] = {
	{ 1, T_LEN },
	{ 2, T_LEN },
	{ 3, T_LEN },
	{ 4, T_LEN },
};
static const struct field_rule txn_rules[] = {
	{ 1, T_LEN },
	{ 2, T_LEN },
	{ 3, T_LEN },
};

#define RULES(r) (r), sizeof(r) / sizeof((r)[0])

static bool txn_request_plausible(const uint8_t *buf, size_t len, int depth);

/* RequestOp: exactly one of range, put, delete_range (each with a key) or a nested txn. */
static bool request_op_plausible(const uint8_t *buf, size_t len, int depth)
{
	struct pb_reader r = { buf, len, 0 };
	struct pb_field f;

	if (check_fields(buf, len, RULES(op_rules)) != 1 || pb_reader__next(&r, &f) != 1)
		return false;
	switch (f.number) {
	case 1:
		return check_fields(f.data, f.len, RULES(range_rules)) > 0 &&
		       has_plausible_key(f.data, f.len, 1);
	case 2:
		return check_fields(f.data, f.len, RULES(put_rules)) > 0 &&
		       has_plausible_key(f.data, f.len, 1);
	case 3:
		return check_fields(f.data, f.len, RULES(delete_rules)) > 0 &&
		       has_plausible_key(f.data, f.len, 1);
	default:
		return depth < INFER_MAX_DEPTH && txn_request_plausible(f.data, f.len, depth + 1);
	}
}

static bool txn_request_plausible(const uint8_t *buf, size_t len, int depth)
{
	struct pb_reader r = { buf, len, 0 };
	struct pb_field f;

	if (check_fields(buf, len, RULES(txn_rules)) < 1)
		return false;
	while (pb_reader__next(&r, &f) == 1) {
		if (f.number == 1) {
			if (check_fields(f.data, f.len, RULES(compare_rules)) < 1 ||
			    !has_plausible_key(f.data, f.len, 3))
				return false;
		} else if (!request_op_plausible(f.data, f.len, depth)) {
			return false;
		}
	}
	return true;
}

/* WatchRequest: one of create_request (with a key), cancel_request, progress_request. */
static bool watch_request_plausible(const uint8_t *buf, size_t len)
{
	static const struct field_rule create_rules[] = {
		{ 1, T_LEN },
		{ 2, T_LEN },
		{ 3, T_VARINT },
		{ 4, T_VARINT },
		{ 5, T_VARINT | T_LEN },
		{ 6, T_VARINT },
		{ 7, T_VARINT },
		{ 8, T_VARINT },
	};
	static const struct field_rule cancel_rules[] = { { 1, T_VARINT } };
	struct pb_reader r = { buf, len, 0 };
	struct pb_field f;

	if (check_fields(buf, len, RULES(txn_rules)) != 1 || pb_reader__next(&r, &f) != 1)
		return false;
	switch (f.number) {
	case 1:
		return check_fields(f.data, f.len, RULES(create_rules)) > 0 &&
		       has_plausible_key(f.data, f.len, 1);
	case 2:
		return check_fields(f.data, f.len, RULES(cancel_rules)) >= 0;
	default:
		return f.len == 0;
	}
}

/* RangeRequest or PutRequest, which share field 1 (key) and 2 (range_end or value). */
static enum etcd_method range_or_put(const uint8_t *buf, size_t len)
{
	size_t klen = 0, vlen = 0;
	const uint8_t *key = find_len_field(buf, len, 1, &klen);
	const uint8_t *v = find_len_field(buf, len, 2, &vlen);
	struct pb_reader r = { buf, len, 0 };
	struct pb_field f;
	bool range_only = false;

	if (!key || !plausible_key(key, klen) || check_fields(buf, len, RULES(range_rules)) < 1)
		return ETCD_METHOD_NONE;
	while (pb_reader__next(&r, &f) == 1)
		if (f.number >= 7)
			range_only = true;
	if (!v)
		return ETCD_METHOD_RANGE; /* a Get, with a limit or revision perhaps */
	/* range_end: "\0" (every key from key on) or the key with its last byte raised (a
	 * prefix). A value: a Kubernetes object. */
	bool range_end = (vlen == 1 && v[0] == 0) ||
			 (vlen == klen && !memcmp(v, key, klen - 1) && v[klen - 1] > key[klen - 1]);
	bool value = (vlen >= K8S_MAGIC_LEN && !memcmp(v, K8S_MAGIC, K8S_MAGIC_LEN)) ||
		     (vlen && v[0] == '{');
	if (range_end && !value)
		return ETCD_METHOD_RANGE;
	if (value && !range_end && !range_only && check_fields(buf, len, RULES(put_rules)) >= 1)
		return ETCD_METHOD_PUT;
	return ETCD_METHOD_NONE;
}

enum etcd_method etcd__infer_request_method(const uint8_t *buf, size_t len)
{
	enum etcd_method m;

	if (!buf || !len)
		return ETCD_METHOD_NONE;
	if (txn_request_plausible(buf, len, 0))
		return ETCD_METHOD_TXN;
	if (watch_request_plausible(buf, len))
		return ETCD_METHOD_WATCH;
	m = range_or_put(buf, len);
	if (m)
		return m;
	/* LeaseKeepAliveRequest{ID=1}: one non-zero varint and nothing else. */
	static const struct field_rule lease_rules[] = { { 1, T_VARINT } };
	struct pb_reader r = { buf, len, 0 };
	struct pb_field f;
	if (check_fields(buf, len, RULES(lease_rules)) == 1 && pb_reader__next(&r, &f) == 1 &&
	    f.varint)
		return ETCD_METHOD_LEASE_KEEPALIVE;
	return ETCD_METHOD_NONE;
}

/* ResponseHeader: varints 1-4, with a revision. */
static bool header_plausible(const uint8_t *buf, size_t len)
{
	static const struct field_rule rules[] = {
		{ 1, T_VARINT },
		{ 2, T_VARINT },
		{ 3, T_VARINT },
		{ 4, T_VARINT },
	};
	struct etcd_header h = { 0 };

	return check_fields(buf, len, RULES(rules)) > 0 && !decode_header(buf, len, &h) &&
	       h.revision > 0;
}

/* KeyValue with a believable key. */
static bool kv_plausible(const uint8_t *buf, size_t len)
{
	static const struct field_rule rules[] = {
		{ 1, T_LEN },	 { 2, T_VARINT }, { 3, T_VARINT },
		{ 4, T_VARINT }, { 5, T_LEN },	  { 6, T_VARINT },
	};
	return check_fields(buf, len, RULES(rules)) > 0 && has_plausible_key(buf, len, 1);
}

/* Every header (1) and kv (kv_field, 0 for none) of a response is believable, and there is a
 * header. */
static bool parts_plausible(const uint8_t *buf, size_t len, uint32_t kv_field)
{
	struct pb_reader r = { buf, len, 0 };
	struct pb_field f;
	bool header = false;

	while (pb_reader__next(&r, &f) == 1) {
		if (f.number == 1 && f.type == PB_WT_LEN) {
			if (!header_plausible(f.data, f.len))
				return false;
			header = true;
		} else if (kv_field && f.number == kv_field && f.type == PB_WT_LEN &&
			   !kv_plausible(f.data, f.len)) {
			return false;
		}
	}
	return header;
}

/* ResponseOp: one response, a RangeResponse (whose kvs the TxnResponse decoder reads), a
 * PutResponse, a DeleteRangeResponse or a nested TxnResponse, each a well-formed message. */
static bool response_op_plausible(const uint8_t *buf, size_t len)
{
	static const struct field_rule range_resp[] = {
		{ 1, T_LEN },
		{ 2, T_LEN },
		{ 3, T_VARINT },
		{ 4, T_VARINT },
	};
	struct pb_reader r = { buf, len, 0 };
	struct pb_field f;

	if (check_fields(buf, len, RULES(op_rules)) != 1 || pb_reader__next(&r, &f) != 1)
		return false;
	if (f.number == 1)
		return check_fields(f.data, f.len, RULES(range_resp)) >= 0 &&
		       parts_plausible(f.data, f.len, 2);
	return pb__valid_message(f.data, f.len);
}

enum etcd_method etcd__infer_response_method(const uint8_t *buf, size_t len)
{
	static const struct field_rule txn_resp[] = { { 1, T_LEN }, { 2, T_VARINT }, { 3, T_LEN } };
	static const struct field_rule range_resp[] = {
		{ 1, T_LEN },
		{ 2, T_LEN },
		{ 3, T_VARINT },
		{ 4, T_VARINT },
	};
	static const struct field_rule watch_resp[] = {
		{ 1, T_LEN },	 { 2, T_VARINT }, { 3, T_VARINT }, { 4, T_VARINT },
		{ 5, T_VARINT }, { 6, T_LEN },	  { 7, T_VARINT }, { 11, T_LEN },
	};
	static const struct field_rule event_rules[] = {
		{ 1, T_VARINT },
		{ 2, T_LEN },
		{ 3, T_LEN },
	};
	struct pb_reader r = { buf, len, 0 };
	struct pb_field f;
	size_t hlen = 0;
	const uint8_t *h;

	if (!buf || !len)
		return ETCD_METHOD_NONE;
	h = find_len_field(buf, len, 1, &hlen);
	if (!h || !parts_plausible(buf, len, 0))
		return ETCD_METHOD_NONE;
	/* TxnResponse: responses (3) are ResponseOps, one response each. */
	if (check_fields(buf, len, RULES(txn_resp)) > 0 && find_len_field(buf, len, 3, &hlen)) {
		bool ok = true;
		while (ok && pb_reader__next(&r, &f) == 1) {
			if (f.number == 2 && f.varint > 1)
				ok = false;
			if (f.number == 3)
				ok = response_op_plausible(f.data, f.len);
		}
		return ok ? ETCD_METHOD_TXN : ETCD_METHOD_NONE;
	}
	/* RangeResponse: at least one kv (2). */
	if (check_fields(buf, len, RULES(range_resp)) > 0 && find_len_field(buf, len, 2, &hlen)) {
		while (pb_reader__next(&r, &f) == 1)
			if (f.number == 2 && !kv_plausible(f.data, f.len))
				return ETCD_METHOD_NONE;
		return ETCD_METHOD_RANGE;
	}
	/* WatchResponse: events, or a field only it has; header plus a 0/1 in field 2 is also a
	 * TxnResponse without responses, so that alone decides nothing. */
	if (check_fields(buf, len, RULES(watch_resp)) < 1)
		return ETCD_METHOD_NONE;
	bool watch_only = false;
	while (pb_reader__next(&r, &f) == 1) {
		switch (f.number) {
		case 2:
			if (f.varint > 1)
				watch_only = true;
			break;
		case 3:
		case 5:
		case 6:
		case 7:
			watch_only = true;
			break;
		case 11: {
			/* Event{type (PUT or DELETE), kv, prev_kv}, with a kv. */
			struct pb_reader er = { f.data, f.len, 0 };
			struct pb_field ef;
			bool has_kv = false;
			if (check_fields(f.data, f.len, RULES(event_rules)) < 1)
				return ETCD_METHOD_NONE;
			while (pb_reader__next(&er, &ef) == 1) {
				if (ef.number == 1 && ef.varint > 1)
					return ETCD_METHOD_NONE;
				if (ef.number != 1 && !kv_plausible(ef.data, ef.len))
					return ETCD_METHOD_NONE;
				has_kv |= ef.number == 2;
			}
			if (!has_kv)
				return ETCD_METHOD_NONE;
			watch_only = true;
			break;
		}
		}
	}
	return watch_only ? ETCD_METHOD_WATCH : ETCD_METHOD_NONE;
}
