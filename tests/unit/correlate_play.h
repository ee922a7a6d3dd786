/* Messages as the decoders hand them to the correlator, for the correlator's unit tests: one
 * pod (default/web-0) bound to node-1, times in microseconds after B. The including test defines
 * nothing of these names itself. */
#ifndef BINDTRACE_TEST_CORRELATE_PLAY_H
#define BINDTRACE_TEST_CORRELATE_PLAY_H

#include <stdio.h>
#include <string.h>

#include "correlate.h"

#define US 1000ull
#define B 1000000000000ull

/* The options of a correlator that traces all three processes and closes a bind as soon as it
 * is complete: the first members of a struct correlator_options initialiser. */
#define PLAY_OPTIONS                                                                               \
	.linger_ns = 1, .max_open_ns = 1ull << 62, .have_scheduler = true, .have_apiserver = true, \
	.have_etcd = true
#define POD_PATH "/api/v1/namespaces/default/pods/web-0/binding"
#define POD_KEY "/registry/pods/default/web-0"
#define REVISION 1234

/* The message being built: one at a time, as the correlator copies what it keeps. */
static struct decoded_msg msg;

static inline struct decoded_msg *message(enum decoded_kind kind, enum conn_dir dir,
					  uint32_t stream, uint64_t first_us, uint64_t last_us)
{
	memset(&msg, 0, sizeof(msg));
	msg.kind = kind;
	msg.proto = CONN_PROTO_H2;
	msg.dir = dir;
	msg.stream_id = stream;
	msg.ts_first_ns = B + first_us * US;
	msg.ts_last_ns = B + last_us * US;
	msg.http.grpc_status = -1;
	return &msg;
}

static inline void binding(struct correlator *c, const struct actor *who, enum decoded_kind kind,
			   enum conn_dir dir, uint64_t first_us, uint64_t last_us)
{
	struct decoded_msg *m = message(kind, dir, 3, first_us, last_us);

	snprintf(m->http.method, sizeof(m->http.method), "POST");
	snprintf(m->http.path, sizeof(m->http.path), POD_PATH);
	m->body_kind = BODY_K8S;
	if (kind == DECODED_REQUEST) {
		m->body.k8s.kind = K8S_KIND_BINDING;
		snprintf(m->body.k8s.meta.uid, sizeof(m->body.k8s.meta.uid),
			 "7c9e6679-7425-40de-944b-e07fc1f90ae7");
		snprintf(m->body.k8s.binding.target_name, sizeof(m->body.k8s.binding.target_name),
			 "node-1");
	} else {
		m->http.status = 201;
		m->body.k8s.kind = K8S_KIND_STATUS;
		m->body.k8s.status.code = 201;
		snprintf(m->body.k8s.status.status, sizeof(m->body.k8s.status.status), "Success");
	}
	correlator__message(c, who, m);
}

#endif
