/* --otlp: binds exported as OpenTelemetry traces over OTLP/HTTP (protobuf, POST to the traces
 * endpoint, http or https through libevent's HTTP client and OpenSSL), to a collector, Jaeger,
 * Tempo...  It transports: the caller hands it encoded spans (otlp_encode.h's, made from the
 * bind view by trace_outputs.c), and it knows nothing of binds.
 *
 * Configuration, as OpenTelemetry's SDKs read it: --otlp URL is the collector's base URL
 * (OTEL_EXPORTER_OTLP_ENDPOINT's meaning: "/v1/traces" is appended); without it,
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or OTEL_EXPORTER_OTLP_ENDPOINT turn export on
 * (unless OTEL_SDK_DISABLED=true). Also read, the TRACES_ variant before the general one:
 * _HEADERS (k=v,k2=v2, values percent-decoded; never printed), _COMPRESSION (gzip or none),
 * _TIMEOUT (ms, default 10000), _CERTIFICATE (CA bundle for https; default: the system's),
 * _CLIENT_CERTIFICATE and _CLIENT_KEY (mutual TLS), _PROTOCOL (only http/protobuf).
 *
 * Export never blocks tracing: otlp_exporter__send() queues a bind's encoded spans (a few KiB),
 * or drops them when the queue is full; a thread of its own with its own libevent
 * base sends batches (one request at a time, up to 1 MiB of spans, or what has waited 500 ms),
 * retries a failure the spec calls retryable (no answer, 429, 502, 503, 504) up to 5 times with
 * backoff from 1 s to 16 s, and counts what it gives up. Memory: the queue holds at most
 * queue_bytes of encoded spans, the batch in flight included (--otlp-queue-size, default
 * 8 MiB), plus that batch's gzip copy and libevent's copy of the request (each at most 1 MiB).
 * Every span is counted once: exported (accepted by the collector), or dropped for a reason
 * (queue full, export failed, rejected by the collector in a partial success, or still unsent
 * when the tracer stopped: it waits up to 5 s, or the timeout when shorter, to send them). */
#ifndef BINDTRACE_OTLP_H
#define BINDTRACE_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OTLP_DEFAULT_QUEUE_BYTES (8ul << 20)
#define OTLP_MAX_HEADERS 16
#define OTLP_URL_MAX 1024

struct otlp_config {
	char url[OTLP_URL_MAX]; /* the traces endpoint: base + /v1/traces, or _TRACES_ENDPOINT */
	const char *url_from;	/* "--otlp" or the variable it came from */
	int n_headers;
	struct otlp_header {
		char name[128];
		char value[1024];
	} headers[OTLP_MAX_HEADERS];
	bool gzip;
	unsigned long timeout_ms;
	char ca_file[512], client_cert[512], client_key[512];
	size_t queue_bytes;
	char node[256]; /* k8s.node.name of the spans' resources */
};

/* The configuration from --otlp (cli_url, may be NULL) and the environment; node NULL: the
 * host name. 1 when export is on, 0 when off, -EINVAL with why set (one line, no header value
 * in it) when something is wrong. */
int otlp_config__resolve(struct otlp_config *c, const char *cli_url, size_t queue_bytes,
			 const char *node, char *why, size_t why_len);

struct otlp_stats {
	uint64_t binds;		 /* binds that gave spans */
	uint64_t spans;		 /* spans made (each is then exported or dropped, or queued) */
	uint64_t spans_exported; /* accepted by the collector */
	uint64_t dropped_queue_full, dropped_failed, dropped_rejected, dropped_at_exit;
	uint64_t requests, requests_failed, bytes_sent; /* bytes: request bodies as sent */
	size_t queued_bytes, queue_bytes;		/* now, and the bound */
};

static inline uint64_t otlp_stats__dropped(const struct otlp_stats *s)
{
	return s->dropped_queue_full + s->dropped_failed + s->dropped_rejected + s->dropped_at_exit;
}

struct otlp_exporter;

/* Starts the export thread (nothing is connected until there is something to send). NULL with
 * errno after a one-line message on stderr. */
struct otlp_exporter *otlp_exporter__start(const struct otlp_config *c);
/* A finished bind's n spans (n > 0), encoded as ExportTraceServiceRequest fields (len bytes,
 * copied): queued, or counted as dropped. Never blocks on the network. */
void otlp_exporter__send(struct otlp_exporter *e, const void *spans, size_t len, int n);
void otlp_exporter__stats(struct otlp_exporter *e, struct otlp_stats *s);
/* One line: where to, and how ("http://127.0.0.1:4318/v1/traces (gzip, headers: x-tenant,
 * timeout 10 s, queue 8 MiB)"). */
void otlp_exporter__describe(const struct otlp_exporter *e, char *out, size_t cap);
/* Sends what is queued (waiting up to 5 s, or the timeout when shorter), stops the thread and
 * writes the totals on out as one line (drops are counted and said there; they do not fail
 * the run: a collector that is away is the network's state, not the tracer's error). e may be
 * NULL. */
void otlp_exporter__stop(struct otlp_exporter *e, FILE *out);
void otlp_exporter__free(struct otlp_exporter *e);

#endif
