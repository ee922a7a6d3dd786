/* A bind as OpenTelemetry spans, encoded as OTLP protobuf (opentelemetry-proto's
 * ExportTraceServiceRequest; the field numbers are listed in otlp_encode.c) by hand with the
 * project's protobuf writer. Read through the bind view, like every output; nothing here sends.
 *
 * One trace per bind, the same on every node: the trace id is the first 16 bytes of SHA-256 of
 * "bindtrace/v1/trace/" and the pod's UID (a pod is bound once; its UID is in the Binding, the
 * apiserver's Txn and the raft entry), so tracers that each see part of a bind send spans of one
 * trace without injecting anything into the control plane's traffic. Span ids are derived too
 * (SHA-256, first 8 bytes), so a bind exported twice gives the same spans:
 *
 * - the root span, "bind NS/NAME": the total leg (scheduler's POST to its reading the answer),
 *   sent by the tracer that saw the scheduler's side; its id depends on the UID alone, so
 *   every tracer's leg spans name it as their parent;
 * - a span per leg the view has seen, the path's and each watcher's (fanout, delivery), named
 *   by the leg; its id from the UID, the leg, the watcher's index and the tracer's identity
 *   (node name and the pid of the process that did the leg's end).
 *
 * The view's legs are walked generically: a leg added to the view becomes a span. Attributes
 * follow the semantic conventions: on the resource, the process that did the leg's end
 * (service.name kube-scheduler / kube-apiserver / etcd / the watcher's program,
 * service.instance.id NODE/PID, service.version, process.pid, k8s.node.name the tracer's node);
 * on the spans k8s.pod.name, k8s.namespace.name, k8s.pod.uid, and by what the leg is part of:
 * the Binding POST (http.request.method, url.path, http.response.status_code), etcd's KV/Txn or
 * Watch (rpc.system=grpc, rpc.method), a watch (GET and its path). bindtrace.* attributes carry
 * the leg, its exact duration in ns (a collector may keep only microseconds), the stages it is
 * between. A leg whose end came before its start (possible between processes' clocks read at
 * different points) is sent as a zero-length span at its end, bindtrace.leg.duration_ns
 * saying the signed value.
 *
 * A bind with no UID decoded gets a trace id from NS/NAME and the etcd revision (or, without
 * one, the tracer's node and the bind's open time): it cannot be joined across nodes, and
 * bindtrace.trace_id_from says so. An unschedulable pod (no Binding, no legs) gives no spans. */
#ifndef BINDTRACE_OTLP_ENCODE_H
#define BINDTRACE_OTLP_ENCODE_H

#include <stdint.h>

#include "bindview.h"
#include "protobuf.h"

struct identities;

/* Who is exporting: names the node in resources and in span ids. */
struct otlp_source {
	const char *node;		     /* k8s.node.name: --node, else the host name */
	const struct identities *identities; /* service.version by pid; may be NULL */
};

/* The trace id of a pod's bind. */
void otlp__trace_id(const char *uid, uint8_t id[16]);
/* The root span's id (the same from every tracer). */
void otlp__root_span_id(const char *uid, uint8_t id[8]);

/* Appends the bind's spans to w as ExportTraceServiceRequest fields (resource_spans, one per
 * process that did a leg): requests are made by concatenating such pieces. Returns the number
 * of spans (0: nothing to send), or -errno when w failed. */
int otlp__encode_bind(struct pb_writer *w, const struct bind_view *v,
		      const struct otlp_source *src);

#endif
