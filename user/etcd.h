/* etcd v3 gRPC messages of the bind path (etcdserverpb / mvccpb field numbers, the same in 3.4 and
 * 3.6): TxnRequest and TxnResponse, RangeRequest and RangeResponse, WatchRequest and
 * WatchResponse. Values are decoded as Kubernetes objects; values under /registry/secrets/ are
 * never looked into. */
#ifndef BINDTRACE_ETCD_H
#define BINDTRACE_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s.h"

#define ETCD_KEY_MAX 512

enum etcd_method {
	ETCD_METHOD_NONE = 0,
	ETCD_METHOD_TXN,
	ETCD_METHOD_RANGE,
	ETCD_METHOD_PUT,
	ETCD_METHOD_DELETE_RANGE,
	ETCD_METHOD_WATCH,
	ETCD_METHOD_LEASE_KEEPALIVE,
	ETCD_METHOD_OTHER,
};

/* Compare.target */
enum etcd_compare_target {
	ETCD_TARGET_VERSION = 0,
	ETCD_TARGET_CREATE = 1,
	ETCD_TARGET_MOD = 2,
	ETCD_TARGET_VALUE = 3,
	ETCD_TARGET_LEASE = 4,
};

struct etcd_header {
	uint64_t cluster_id;
	uint64_t member_id;
	int64_t revision;
	uint64_t raft_term;
};

struct etcd_kv {
	char key[ETCD_KEY_MAX];
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
	uint32_t value_len;
	bool value_redacted;	 /* a secret: not decoded */
	struct k8s_object value; /* kind NONE when the value is not a k8s object */
};

struct etcd_txn {
	uint32_t compares, successes, failures;
	/* The first compare: GuaranteedUpdate's If(mod_revision(key) == rev). */
	char compare_key[ETCD_KEY_MAX];
	int32_t compare_target;	  /* enum etcd_compare_target */
	int32_t compare_result;	  /* 0 EQUAL, 1 GREATER, 2 LESS, 3 NOT_EQUAL */
	int64_t compare_revision; /* mod/create revision or version, by target */
	/* The first put of the success branch: Then(Put key value). */
	bool has_put;
	struct etcd_kv put; /* key, lease, value */
	bool has_delete;
	char delete_key[ETCD_KEY_MAX];
	/* The first range of the failure branch: Else(Get key). */
	bool has_else_get;
	char else_get_key[ETCD_KEY_MAX];
};

struct etcd_txn_response {
	struct etcd_header header;
	bool succeeded;
	uint32_t responses;
	/* The first kv of a range response (the Else Get after a failed compare). */
	bool has_kv;
	struct etcd_kv kv;
};

struct etcd_range_request {
	char key[ETCD_KEY_MAX];
	char range_end[ETCD_KEY_MAX];
	int64_t limit;
	int64_t revision;
	bool keys_only;
	bool count_only;
};

struct etcd_range_response {
	struct etcd_header header;
	int64_t count;
	uint32_t kvs;
	bool more;
	bool has_kv;
	struct etcd_kv kv; /* the first */
};

enum etcd_watch_request_kind {
	ETCD_WATCH_CREATE = 1,
	ETCD_WATCH_CANCEL,
	ETCD_WATCH_PROGRESS,
};

struct etcd_watch_request {
	int32_t kind; /* enum etcd_watch_request_kind */
	char key[ETCD_KEY_MAX];
	char range_end[ETCD_KEY_MAX];
	int64_t start_revision;
	int64_t watch_id;
	bool prev_kv;
	bool progress_notify;
};

struct etcd_watch_response {
	struct etcd_header header;
	int64_t watch_id;
	bool created;
	bool canceled;
	bool fragment;
	int64_t compact_revision;
	uint32_t events;
};

struct etcd_watch_event {
	uint32_t index; /* in its WatchResponse */
	int32_t type;	/* 0 PUT, 1 DELETE */
	struct etcd_kv kv;
	bool has_prev_kv;
	int64_t prev_mod_revision;
	char prev_node_name[K8S_NAME_MAX]; /* spec.nodeName of the previous Pod */
};

/* A gRPC path such as "/etcdserverpb.KV/Txn". */
enum etcd_method etcd__method_from_path(const char *path);
const char *etcd_method__name(enum etcd_method method);
/* The gRPC path of a method ("/etcdserverpb.KV/Txn"); "" for NONE and OTHER. */
const char *etcd_method__path(enum etcd_method method);

/* The method of a gRPC message whose :path is unknown (an HPACK entry inserted before capture),
 * from its content alone: TXN, RANGE, PUT, WATCH or LEASE_KEEPALIVE when the message parses
 * strictly as that method's request (or response) with believable keys (printable, starting with
 * '/'), NONE when it does not or when two methods would fit. */
enum etcd_method etcd__infer_request_method(const uint8_t *buf, size_t len);
enum etcd_method etcd__infer_response_method(const uint8_t *buf, size_t len);

int etcd__decode_txn_request(const uint8_t *buf, size_t len, struct etcd_txn *out);
/* A PutRequest into out: key, lease and the value decoded as above (raft entries carry them). */
int etcd__decode_put_request(const uint8_t *buf, size_t len, struct etcd_kv *out);
int etcd__decode_txn_response(const uint8_t *buf, size_t len, struct etcd_txn_response *out);
int etcd__decode_range_request(const uint8_t *buf, size_t len, struct etcd_range_request *out);
int etcd__decode_range_response(const uint8_t *buf, size_t len, struct etcd_range_response *out);
int etcd__decode_watch_request(const uint8_t *buf, size_t len, struct etcd_watch_request *out);

/* Decodes a WatchResponse into *out, calling on_event for each event in order. */
typedef void (*etcd_event_cb)(const struct etcd_watch_response *resp,
			      const struct etcd_watch_event *event, void *ctx);
int etcd__decode_watch_response(const uint8_t *buf, size_t len, struct etcd_watch_response *out,
				etcd_event_cb on_event, void *ctx);

/* Is this key's value a secret that must never be decoded or shown? */
bool etcd__key_is_secret(const char *key);

#endif
