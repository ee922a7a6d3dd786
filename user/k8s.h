/* Kubernetes objects on the wire: the "k8s\0" + runtime.Unknown protobuf envelope, the raw
 * protobuf of Pod, Binding and Status, WatchEvent (protobuf and JSON), JSON objects through
 * jansson, and the Table rows `kubectl get -w` receives. Only the fields the bind path needs are
 * kept, copied into fixed-size fields of a caller's struct: nothing points into the input. */
#ifndef BINDTRACE_K8S_H
#define BINDTRACE_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define K8S_MAGIC "k8s\0"
#define K8S_MAGIC_LEN 4
#define K8S_NAME_MAX 254 /* DNS subdomain (253) + NUL */
#define K8S_NAMESPACE_MAX 64
#define K8S_UID_MAX 40
#define K8S_RV_MAX 24
#define K8S_KIND_MAX 64
#define K8S_REASON_MAX 128
/* A condition's or Status's message: the scheduler cuts its own at 1024 bytes (NoteLengthLimit),
 * so one of its messages is held whole; a longer one (another writer's) is cut, and ends in "…". */
#define K8S_MESSAGE_MAX 1025
#define K8S_WATCH_TYPE_MAX 16
/* Largest object we decode; larger ones keep only their size. */
#define K8S_OBJECT_MAX (4u << 20)

enum k8s_kind {
	K8S_KIND_NONE = 0,
	K8S_KIND_POD,
	K8S_KIND_BINDING,
	K8S_KIND_STATUS,
	K8S_KIND_TABLE_ROW, /* one row of a meta.k8s.io Table (kubectl get -w) */
	K8S_KIND_SECRET,    /* never decoded: its data stays out of every output */
	K8S_KIND_OTHER,	    /* a kind we do not look into; kind_name and meta are set */
};

enum k8s_encoding {
	K8S_ENCODING_NONE = 0,
	K8S_ENCODING_PROTOBUF,
	K8S_ENCODING_JSON,
};

struct k8s_meta {
	char namespace[K8S_NAMESPACE_MAX];
	char name[K8S_NAME_MAX];
	char uid[K8S_UID_MAX];
	char resource_version[K8S_RV_MAX];
	/* name holds the object's generateName: it has no name yet (a create that lets the
	 * apiserver name it; the name is in the created object of the 201). */
	bool generated_name;
};

struct k8s_pod {
	char node_name[K8S_NAME_MAX];
	char scheduler_name[K8S_KIND_MAX];
	char phase[32];
	bool has_scheduled;		       /* a PodScheduled condition is present */
	char scheduled_status[16];	       /* "True", "False", "Unknown" */
	char scheduled_reason[K8S_REASON_MAX]; /* e.g. "Unschedulable" */
	/* Why, as the scheduler wrote it: "0/2 nodes are available: ..." (truncated) */
	char scheduled_message[K8S_MESSAGE_MAX];
	bool deleting; /* deletionTimestamp set */
};

struct k8s_binding {
	char target_kind[K8S_KIND_MAX]; /* "Node" */
	char target_name[K8S_NAME_MAX]; /* the node */
};

struct k8s_status {
	int32_t code;
	char status[16]; /* "Success" / "Failure" */
	char reason[K8S_REASON_MAX];
	char message[K8S_MESSAGE_MAX];
};

struct k8s_table_row {
	uint32_t index; /* row number in its Table */
	uint32_t rows;	/* rows in the Table */
	uint32_t cells;
	char status[32];	      /* the "Status" column */
	char node_name[K8S_NAME_MAX]; /* the "Node" column; "<none>" when unscheduled */
};

struct k8s_object {
	enum k8s_kind kind;
	enum k8s_encoding encoding;
	char api_version[K8S_KIND_MAX];
	char kind_name[K8S_KIND_MAX];
	struct k8s_meta meta;
	union {
		struct k8s_pod pod;
		struct k8s_binding binding;
		struct k8s_status status;
		struct k8s_table_row row;
	};
};

struct k8s_watch_event {
	char type[K8S_WATCH_TYPE_MAX]; /* ADDED, MODIFIED, DELETED, BOOKMARK, ERROR */
	struct k8s_object object;
};

/* State a Table stream keeps between events: the column definitions come with the first. */
struct k8s_table_columns {
	int node; /* index of the "Node" column, -1 unknown */
	int status;
};

static inline void k8s_table_columns__init(struct k8s_table_columns *c)
{
	c->node = -1;
	c->status = -1;
}

/* "k8s\0" + runtime.Unknown with a Pod, Binding, Status... inside. 0 or -EBADMSG. */
int k8s__decode_protobuf(const uint8_t *buf, size_t len, struct k8s_object *out);
/* The raw protobuf of an object whose kind is known. */
int k8s__decode_raw(const char *kind, const uint8_t *buf, size_t len, struct k8s_object *out);
/* One WatchEvent message (after its 4-byte length), with or without the envelope. */
int k8s__decode_watch_event_protobuf(const uint8_t *buf, size_t len, struct k8s_watch_event *out);

/* A JSON object: Pod, Binding, Status, Secret, or a Table (its first row). */
int k8s__decode_json(const char *buf, size_t len, struct k8s_object *out,
		     struct k8s_table_columns *columns);

/* A JSON list as the apiserver writes it (kind, apiVersion, metadata, then items), told from its
 * first bytes so that its items need neither be kept nor parsed (a LIST or a DELETE of a
 * collection answers with thousands of objects: megabytes of body and ten times that as a parsed
 * tree). Returns the length of its head: the top-level members before "items", the last of them
 * followed by the ',' that k8s__json_list_head_close() turns into the object's end. 0: not a list,
 * or one that cannot be told from its head (a "kind" not ending in "List", "items" before "kind",
 * not a JSON object); -EAGAIN: more bytes are needed to tell. Reads at most len bytes. */
long k8s__json_list_head(const char *buf, size_t len);
/* Makes buf[0..head) (a head found by k8s__json_list_head) a JSON object of its own, in place:
 * the ',' after its last member becomes '}'. Returns its new length. */
size_t k8s__json_list_head_close(char *buf, size_t head);

/* A JSON watch event {"type":..,"object":..}. A Table object yields one event per row: on_row is
 * called for each (and out holds the last); without rows, out holds the object. Returns the
 * number of events (>= 1) or -EBADMSG. */
typedef void (*k8s_row_cb)(const struct k8s_watch_event *event, void *ctx);
int k8s__decode_watch_event_json(const char *buf, size_t len, struct k8s_watch_event *out,
				 struct k8s_table_columns *columns, k8s_row_cb on_row, void *ctx);

/* Does this look like the start of a protobuf watch frame (4-byte length + WatchEvent)? */
bool k8s__looks_like_watch_frame(const uint8_t *buf, size_t len);

const char *k8s_kind__name(enum k8s_kind kind);

#endif
