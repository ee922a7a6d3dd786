/* Kubernetes object decoding. Protobuf field numbers are those of k8s.io/api and
 * k8s.io/apimachinery (see shared/reference/bind-path.md); JSON goes through jansson. Secrets are
 * recognised by kind and never looked into. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "k8s.h"
#include "protobuf.h"
#include "util.h"

#define COPY(dst, f) pb__copy_string((dst), sizeof(dst), (f)->data, (f)->len)

const char *k8s_kind__name(enum k8s_kind kind)
{
	switch (kind) {
	case K8S_KIND_POD:
		return "Pod";
	case K8S_KIND_BINDING:
		return "Binding";
	case K8S_KIND_STATUS:
		return "Status";
	case K8S_KIND_TABLE_ROW:
		return "TableRow";
	case K8S_KIND_SECRET:
		return "Secret";
	case K8S_KIND_OTHER:
		return "Other";
	default:
		return "None";
	}
}

static enum k8s_kind kind_from_name(const char *kind)
{
	if (!strcmp(kind, "Pod"))
		return K8S_KIND_POD;
	if (!strcmp(kind, "Binding"))
		return K8S_KIND_BINDING;
	if (!strcmp(kind, "Status"))
		return K8S_KIND_STATUS;
	if (!strcmp(kind, "Secret") || !strcmp(kind, "SecretList"))
		return K8S_KIND_SECRET;
	if (!strcmp(kind, "Table"))
		return K8S_KIND_TABLE_ROW;
	return K8S_KIND_OTHER;
}

/* Walks every field of a message, calling fn for each; -EBADMSG when malformed. */
#define FOR_EACH_FIELD(buf, len, f, err)                                                           \
	for (struct pb_reader r_ = { (buf), (len), 0 }; ((err) = pb_reader__next(&r_, &(f))) == 1;)

static int decode_meta(const uint8_t *buf, size_t len, struct k8s_meta *m, bool *deleting)
{
	struct pb_field f;
	int err;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.type != PB_WT_LEN)
			continue;
		switch (f.number) {
		case 1:
			COPY(m->name, &f);
			m->generated_name = false;
			break;
		case 2:
			if (!m->name[0]) {
				COPY(m->name, &f); /* generateName until the name is set */
				m->generated_name = m->name[0] != '\0';
			}
			break;
		case 3:
			COPY(m->namespace, &f);
			break;
		case 5:
			COPY(m->uid, &f);
			break;
		case 6:
			COPY(m->resource_version, &f);
			break;
		case 9:
			if (deleting)
				*deleting = true;
			break;
		}
	}
	return err;
}

/* A message (K8S_MESSAGE_MAX): one too long is cut at a character's start and ends in "…". */
static void copy_message(char *dst, size_t cap, const uint8_t *src, size_t len)
{
	static const char ellipsis[] = "\xe2\x80\xa6";
	size_t p;

	if (pb__copy_string(dst, cap, src, len) || cap < sizeof(ellipsis) + 1)
		return;
	p = cap - sizeof(ellipsis);
	while (p > 0 && ((unsigned char)dst[p] & 0xc0) == 0x80)
		p--;
	memcpy(dst + p, ellipsis, sizeof(ellipsis));
}

static int decode_pod_condition(const uint8_t *buf, size_t len, struct k8s_pod *pod)
{
	struct pb_field f;
	char type[32] = "", status[16] = "", reason[K8S_REASON_MAX] = "";
	char message[K8S_MESSAGE_MAX] = "";
	int err;

	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.type != PB_WT_LEN)
			continue;
		if (f.number == 1)
			COPY(type, &f);
		else if (f.number == 2)
			COPY(status, &f);
		else if (f.number == 5)
			COPY(reason, &f);
		else if (f.number == 6)
			copy_message(message, sizeof(message), f.data, f.len);
	}
	if (err)
		return err;
	if (!strcmp(type, "PodScheduled")) {
		pod->has_scheduled = true;
		util__copy(pod->scheduled_status, sizeof(pod->scheduled_status), status);
		util__copy(pod->scheduled_reason, sizeof(pod->scheduled_reason), reason);
		util__copy(pod->scheduled_message, sizeof(pod->scheduled_message), message);
	}
	return 0;
}

static int decode_pod(const uint8_t *buf, size_t len, struct k8s_object *o)
{
	struct pb_field f, g;
	int err, err2 = 0;

	o->kind = K8S_KIND_POD;
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.type != PB_WT_LEN)
			continue;
		if (f.number == 1) {
			err2 = decode_meta(f.data, f.len, &o->meta, &o->pod.deleting);
		} else if (f.number == 2) {
			FOR_EACH_FIELD(f.data, f.len, g, err2)
			{
				if (g.type != PB_WT_LEN)
					continue;
				if (g.number == 10)
					COPY(o->pod.node_name, &g);
				else if (g.number == 19)
					COPY(o->pod.scheduler_name, &g);
			}
		} else if (f.number == 3) {
			int cond_err = 0;
			FOR_EACH_FIELD(f.data, f.len, g, err2)
			{
				if (g.type != PB_WT_LEN)
					continue;
				if (g.number == 1)
					COPY(o->pod.phase, &g);
				else if (g.number == 2 &&
					 decode_pod_condition(g.data, g.len, &o->pod))
					cond_err = -EBADMSG;
			}
			if (!err2)
				err2 = cond_err;
		}
		if (err2)
			return err2;
	}
	return err;
}

static int decode_binding(const uint8_t *buf, size_t len, struct k8s_object *o)
{
	struct pb_field f, g;
	int err, err2 = 0;

	o->kind = K8S_KIND_BINDING;
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.type != PB_WT_LEN)
			continue;
		if (f.number == 1) {
			err2 = decode_meta(f.data, f.len, &o->meta, NULL);
		} else if (f.number == 2) {
			FOR_EACH_FIELD(f.data, f.len, g, err2)
			{
				if (g.type != PB_WT_LEN)
					continue;
				if (g.number == 1)
					COPY(o->binding.target_kind, &g);
				else if (g.number == 3)
					COPY(o->binding.target_name, &g);
			}
		}
		if (err2)
			return err2;
	}
	return err;
}

static int decode_status(const uint8_t *buf, size_t len, struct k8s_object *o)
{
	struct pb_field f;
	int err;

	o->kind = K8S_KIND_STATUS;
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number == 6 && f.type == PB_WT_VARINT) {
			o->status.code = (int32_t)f.varint;
			continue;
		}
		if (f.type != PB_WT_LEN)
			continue;
		if (f.number == 2)
			COPY(o->status.status, &f);
		else if (f.number == 3)
			COPY(o->status.message, &f);
		else if (f.number == 4)
			COPY(o->status.reason, &f);
	}
	return err;
}

static int decode_other(const uint8_t *buf, size_t len, struct k8s_object *o)
{
	struct pb_field f;
	int err;

	/* Most kinds put ObjectMeta in field 1; keep it when it parses as one. */
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.number == 1 && f.type == PB_WT_LEN) {
			struct k8s_meta m = { 0 };
			if (!decode_meta(f.data, f.len, &m, NULL))
				o->meta = m;
		}
	}
	return err;
}

int k8s__decode_raw(const char *kind, const uint8_t *buf, size_t len, struct k8s_object *o)
{
	if (len > K8S_OBJECT_MAX)
		return -EMSGSIZE;
	util__copy(o->kind_name, sizeof(o->kind_name), kind);
	o->encoding = K8S_ENCODING_PROTOBUF;
	switch (kind_from_name(kind)) {
	case K8S_KIND_POD:
		return decode_pod(buf, len, o);
	case K8S_KIND_BINDING:
		return decode_binding(buf, len, o);
	case K8S_KIND_STATUS:
		return decode_status(buf, len, o);
	case K8S_KIND_SECRET:
		/* Only the metadata: the data never leaves the decoder. */
		o->kind = K8S_KIND_SECRET;
		return decode_other(buf, len, o);
	default:
		o->kind = K8S_KIND_OTHER;
		return decode_other(buf, len, o);
	}
}

/* Unwraps "k8s\0" + Unknown: kind and apiVersion into o, raw into *raw. */
static int unwrap(const uint8_t *buf, size_t len, struct k8s_object *o, const uint8_t **raw,
		  size_t *raw_len)
{
	struct pb_field f, g;
	int err, err2 = 0;

	if (len < K8S_MAGIC_LEN || memcmp(buf, K8S_MAGIC, K8S_MAGIC_LEN))
		return -EBADMSG;
	*raw = NULL;
	*raw_len = 0;
	FOR_EACH_FIELD(buf + K8S_MAGIC_LEN, len - K8S_MAGIC_LEN, f, err)
	{
		if (f.type != PB_WT_LEN)
			continue;
		if (f.number == 1) {
			FOR_EACH_FIELD(f.data, f.len, g, err2)
			{
				if (g.type != PB_WT_LEN)
					continue;
				if (g.number == 1)
					COPY(o->api_version, &g);
				else if (g.number == 2)
					COPY(o->kind_name, &g);
			}
			if (err2)
				return err2;
		} else if (f.number == 2) {
			*raw = f.data;
			*raw_len = f.len;
		} else if (f.number == 3 && f.len) {
			/* contentEncoding (e.g. gzip): we do not inflate. */
			return -EPROTONOSUPPORT;
		}
	}
	return err;
}

int k8s__decode_protobuf(const uint8_t *buf, size_t len, struct k8s_object *o)
{
	const uint8_t *raw;
	size_t raw_len;
	char kind[K8S_KIND_MAX];
	int err;

	memset(o, 0, sizeof(*o));
	err = unwrap(buf, len, o, &raw, &raw_len);
	if (err)
		return err;
	if (!raw)
		return -EBADMSG;
	memcpy(kind, o->kind_name, sizeof(kind));
	return k8s__decode_raw(kind, raw, raw_len, o);
}

static bool is_watch_type(const uint8_t *s, size_t n)
{
	static const char *const types[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i]) == n && !memcmp(types[i], s, n))
			return true;
	return false;
}

int k8s__decode_watch_event_protobuf(const uint8_t *buf, size_t len, struct k8s_watch_event *ev)
{
	struct pb_field f, g;
	const uint8_t *raw = NULL;
	size_t raw_len = 0;
	int err, err2 = 0;

	memset(ev, 0, sizeof(*ev));
	if (len >= K8S_MAGIC_LEN && !memcmp(buf, K8S_MAGIC, K8S_MAGIC_LEN)) {
		err = unwrap(buf, len, &ev->object, &raw, &raw_len);
		if (err || !raw)
			return err ? err : -EBADMSG;
		buf = raw;
		len = raw_len;
		raw = NULL;
		raw_len = 0;
	}
	FOR_EACH_FIELD(buf, len, f, err)
	{
		if (f.type != PB_WT_LEN)
			continue;
		if (f.number == 1) {
			if (!is_watch_type(f.data, f.len))
				return -EBADMSG;
			COPY(ev->type, &f);
		} else if (f.number == 2) {
			FOR_EACH_FIELD(f.data, f.len, g, err2)
			{
				if (g.number == 1 && g.type == PB_WT_LEN) {
					raw = g.data;
					raw_len = g.len;
				}
			}
			if (err2)
				return err2;
		}
	}
	if (err || !ev->type[0])
		return err ? err : -EBADMSG;
	if (!raw)
		return 0;
	if (raw_len && raw[0] == '{')
		return k8s__decode_json((const char *)raw, raw_len, &ev->object, NULL);
	return k8s__decode_protobuf(raw, raw_len, &ev->object);
}

bool k8s__looks_like_watch_frame(const uint8_t *buf, size_t len)
{
	if (len < 4 + 2)
		return false;
	uint32_t n =
	    (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | buf[3];
	if (n < 2 || n > K8S_OBJECT_MAX)
		return false;
	buf += 4;
	len -= 4;
	if (buf[0] != 0x0a || buf[1] < 5 || buf[1] > 8 || len < 2u + buf[1])
		return false;
	return is_watch_type(buf + 2, buf[1]);
}

/* JSON */

static void json_copy_string(char *dst, size_t cap, json_t *v)
{
	const char *s = json_string_value(v);
	if (s)
		pb__copy_string(dst, cap, (const uint8_t *)s, strlen(s));
}

static void json_meta(json_t *meta, struct k8s_meta *m, bool *deleting)
{
	if (!json_is_object(meta))
		return;
	json_copy_string(m->name, sizeof(m->name), json_object_get(meta, "name"));
	if (!m->name[0]) {
		json_copy_string(m->name, sizeof(m->name), json_object_get(meta, "generateName"));
		m->generated_name = m->name[0] != '\0';
	}
	json_copy_string(m->namespace, sizeof(m->namespace), json_object_get(meta, "namespace"));
	json_copy_string(m->uid, sizeof(m->uid), json_object_get(meta, "uid"));
	json_copy_string(m->resource_version, sizeof(m->resource_version),
			 json_object_get(meta, "resourceVersion"));
	if (deleting && json_object_get(meta, "deletionTimestamp"))
		*deleting = true;
}

static void json_pod(json_t *obj, struct k8s_object *o)
{
	json_t *spec = json_object_get(obj, "spec");
	json_t *status = json_object_get(obj, "status");
	json_t *cond;
	size_t i;

	o->kind = K8S_KIND_POD;
	json_meta(json_object_get(obj, "metadata"), &o->meta, &o->pod.deleting);
	json_copy_string(o->pod.node_name, sizeof(o->pod.node_name),
			 json_object_get(spec, "nodeName"));
	json_copy_string(o->pod.scheduler_name, sizeof(o->pod.scheduler_name),
			 json_object_get(spec, "schedulerName"));
	json_copy_string(o->pod.phase, sizeof(o->pod.phase), json_object_get(status, "phase"));
	json_array_foreach(json_object_get(status, "conditions"), i, cond)
	{
		const char *type = json_string_value(json_object_get(cond, "type"));
		if (!type || strcmp(type, "PodScheduled"))
			continue;
		o->pod.has_scheduled = true;
		json_copy_string(o->pod.scheduled_status, sizeof(o->pod.scheduled_status),
				 json_object_get(cond, "status"));
		json_copy_string(o->pod.scheduled_reason, sizeof(o->pod.scheduled_reason),
				 json_object_get(cond, "reason"));
		const char *msg = json_string_value(json_object_get(cond, "message"));

		if (msg)
			copy_message(o->pod.scheduled_message, sizeof(o->pod.scheduled_message),
				     (const uint8_t *)msg, strlen(msg));
	}
}

/* Fills o from row i of a Table; column indexes come from columnDefinitions when present. */
static void json_table_row(json_t *table, size_t i, struct k8s_object *o,
			   struct k8s_table_columns *cols)
{
	json_t *defs = json_object_get(table, "columnDefinitions");
	json_t *rows = json_object_get(table, "rows");
	json_t *row = json_array_get(rows, i);
	json_t *cells = json_object_get(row, "cells");
	json_t *def;
	size_t k;
	int node_col = cols ? cols->node : -1, status_col = cols ? cols->status : -1;

	if (json_array_size(defs)) {
		node_col = status_col = -1;
		json_array_foreach(defs, k, def)
		{
			const char *name = json_string_value(json_object_get(def, "name"));
			if (!name)
				continue;
			if (!strcasecmp(name, "Node"))
				node_col = (int)k;
			else if (!strcasecmp(name, "Status"))
				status_col = (int)k;
		}
		if (cols) {
			cols->node = node_col;
			cols->status = status_col;
		}
	}
	o->kind = K8S_KIND_TABLE_ROW;
	o->row.index = (uint32_t)i;
	o->row.rows = (uint32_t)json_array_size(rows);
	o->row.cells = (uint32_t)json_array_size(cells);
	if (json_array_size(cells)) {
		/* Without definitions, the pod table's default layout: NAME READY STATUS ... NODE. */
		if (node_col < 0 && json_array_size(cells) >= 7)
			node_col = 6;
		if (status_col < 0 && json_array_size(cells) >= 3)
			status_col = 2;
		if (node_col >= 0)
			json_copy_string(o->row.node_name, sizeof(o->row.node_name),
					 json_array_get(cells, (size_t)node_col));
		if (status_col >= 0)
			json_copy_string(o->row.status, sizeof(o->row.status),
					 json_array_get(cells, (size_t)status_col));
		if (!o->meta.name[0])
			json_copy_string(o->meta.name, sizeof(o->meta.name),
					 json_array_get(cells, 0));
	}
	json_meta(json_object_get(json_object_get(row, "object"), "metadata"), &o->meta, NULL);
}

static void json_object_into(json_t *obj, struct k8s_object *o, struct k8s_table_columns *cols)
{
	char kind[K8S_KIND_MAX] = "";

	json_copy_string(kind, sizeof(kind), json_object_get(obj, "kind"));
	memcpy(o->kind_name, kind, sizeof(kind));
	json_copy_string(o->api_version, sizeof(o->api_version),
			 json_object_get(obj, "apiVersion"));
	o->encoding = K8S_ENCODING_JSON;
	switch (kind_from_name(kind)) {
	case K8S_KIND_POD:
		json_pod(obj, o);
		break;
	case K8S_KIND_BINDING: {
		json_t *target = json_object_get(obj, "target");
		o->kind = K8S_KIND_BINDING;
		json_meta(json_object_get(obj, "metadata"), &o->meta, NULL);
		json_copy_string(o->binding.target_kind, sizeof(o->binding.target_kind),
				 json_object_get(target, "kind"));
		json_copy_string(o->binding.target_name, sizeof(o->binding.target_name),
				 json_object_get(target, "name"));
		break;
	}
	case K8S_KIND_STATUS:
		o->kind = K8S_KIND_STATUS;
		o->status.code = (int32_t)json_integer_value(json_object_get(obj, "code"));
		json_copy_string(o->status.status, sizeof(o->status.status),
				 json_object_get(obj, "status"));
		json_copy_string(o->status.reason, sizeof(o->status.reason),
				 json_object_get(obj, "reason"));
		json_copy_string(o->status.message, sizeof(o->status.message),
				 json_object_get(obj, "message"));
		break;
	case K8S_KIND_TABLE_ROW:
		json_table_row(obj, 0, o, cols);
		break;
	case K8S_KIND_SECRET:
		o->kind = K8S_KIND_SECRET;
		json_meta(json_object_get(obj, "metadata"), &o->meta, NULL);
		break;
	default:
		o->kind = K8S_KIND_OTHER;
		json_meta(json_object_get(obj, "metadata"), &o->meta, NULL);
		break;
	}
}

int k8s__decode_json(const char *buf, size_t len, struct k8s_object *o,
		     struct k8s_table_columns *cols)
{
	json_error_t jerr;
	json_t *root;

	memset(o, 0, sizeof(*o));
	if (len > K8S_OBJECT_MAX)
		return -EMSGSIZE;
	root = json_loadb(buf, len, JSON_DISABLE_EOF_CHECK, &jerr);
	if (!root)
		return -EBADMSG;
	if (!json_is_object(root)) {
		json_decref(root);
		return -EBADMSG;
	}
	json_object_into(root, o, cols);
	json_decref(root);
	return 0;
}

/* The JSON scanning below reads structure only (strings, nesting, separators): what a list's
 * head needs. Each returns the index after what it read, -EAGAIN when that runs past len, or
 * -EBADMSG. */
static size_t json_ws(const char *b, size_t i, size_t n)
{
	while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
		i++;
	return i;
}

/* b[i] is the opening '"'. */
static long json_string_end(const char *b, size_t i, size_t n)
{
	for (i++; i < n; i++) {
		if (b[i] == '\\')
			i++;
		else if (b[i] == '"')
			return (long)i + 1;
	}
	return -EAGAIN;
}

#define JSON_SCAN_DEPTH 64

static long json_value_end(const char *b, size_t i, size_t n)
{
	size_t start = i;
	int depth = 0;

	for (; i < n; i++) {
		char ch = b[i];

		if (ch == '"') {
			long e = json_string_end(b, i, n);

			if (e < 0 || !depth)
				return e;
			i = (size_t)e - 1;
		} else if (ch == '{' || ch == '[') {
			if (++depth > JSON_SCAN_DEPTH)
				return -EBADMSG;
		} else if (ch == '}' || ch == ']') {
			if (!depth) /* ends a scalar, or nothing */
				return i > start ? (long)i : -EBADMSG;
			if (--depth == 0)
				return (long)i + 1;
		} else if (!depth &&
			   (ch == ',' || ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')) {
			return i > start ? (long)i : -EBADMSG;
		}
	}
	return -EAGAIN;
}

static bool json_key_is(const char *b, size_t at, size_t end, const char *key)
{
	size_t n = strlen(key);

	/* b[at] is the key's '"', b[end - 1] its closing one. */
	return end - at == n + 2 && !memcmp(b + at + 1, key, n);
}

long k8s__json_list_head(const char *b, size_t n)
{
	bool kind_seen = false, list = false;
	size_t i = json_ws(b, 0, n);
	long e, v;

	if (i == n)
		return -EAGAIN;
	if (b[i++] != '{')
		return 0;
	for (;;) {
		size_t key, member = i;

		i = json_ws(b, i, n);
		if (i == n)
			return -EAGAIN;
		if (b[i] != '"')
			return 0; /* the object's end, or not JSON */
		key = i;
		e = json_string_end(b, i, n);
		if (e < 0)
			return e == -EAGAIN ? -EAGAIN : 0;
		i = json_ws(b, (size_t)e, n);
		if (i == n)
			return -EAGAIN;
		if (b[i] != ':')
			return 0;
		if (json_key_is(b, key, (size_t)e, "items"))
			return kind_seen && list && member > 1 ? (long)member : 0;
		i = json_ws(b, i + 1, n);
		if (i == n)
			return -EAGAIN;
		v = json_value_end(b, i, n);
		if (v < 0)
			return v == -EAGAIN ? -EAGAIN : 0;
		if (json_key_is(b, key, (size_t)e, "kind")) {
			kind_seen = true;
			list = b[i] == '"' && (size_t)v - i >= 6 && !memcmp(b + v - 5, "List\"", 5);
		}
		if (kind_seen && !list)
			return 0;
		i = json_ws(b, (size_t)v, n);
		if (i == n)
			return -EAGAIN;
		if (b[i] != ',')
			return 0; /* ended without items */
		i++;
	}
}

size_t k8s__json_list_head_close(char *buf, size_t head)
{
	while (head && buf[head - 1] != ',')
		head--;
	if (head)
		buf[head - 1] = '}';
	return head;
}

int k8s__decode_watch_event_json(const char *buf, size_t len, struct k8s_watch_event *ev,
				 struct k8s_table_columns *cols, k8s_row_cb on_row, void *ctx)
{
	json_error_t jerr;
	json_t *root, *obj;
	const char *type;
	int n = 1;

	memset(ev, 0, sizeof(*ev));
	if (len > K8S_OBJECT_MAX)
		return -EMSGSIZE;
	root = json_loadb(buf, len, JSON_DISABLE_EOF_CHECK, &jerr);
	if (!root)
		return -EBADMSG;
	type = json_string_value(json_object_get(root, "type"));
	obj = json_object_get(root, "object");
	if (!type || !json_is_object(obj) || !is_watch_type((const uint8_t *)type, strlen(type))) {
		json_decref(root);
		return -EBADMSG;
	}
	util__copy(ev->type, sizeof(ev->type), type);
	json_object_into(obj, &ev->object, cols);
	if (ev->object.kind == K8S_KIND_TABLE_ROW) {
		size_t rows = json_array_size(json_object_get(obj, "rows"));
		for (size_t i = 0; i < rows; i++) {
			memset(&ev->object.meta, 0, sizeof(ev->object.meta));
			memset(&ev->object.row, 0, sizeof(ev->object.row));
			json_table_row(obj, i, &ev->object, cols);
			if (on_row)
				on_row(ev, ctx);
		}
		n = rows ? (int)rows : 1;
		if (!rows && on_row)
			on_row(ev, ctx);
	} else if (on_row) {
		on_row(ev, ctx);
	}
	json_decref(root);
	return n;
}
