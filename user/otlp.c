/* The OTLP/HTTP exporter: configuration from --otlp and OTEL_EXPORTER_OTLP_*, a bounded queue
 * filled by the tracer's thread, and a thread of its own that owns a libevent base and the HTTP
 * connection (evhttp's client; OpenSSL's bufferevent for https) and sends the batches. The two
 * threads share only the queue and the counters, under one lock; libevent is touched by the
 * export thread alone, which looks at the queue every 50 ms. */
#include "otlp.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <zlib.h>

#include "protobuf.h"
#include "util.h"
#include "version.h"

#define BATCH_BYTES (1u << 20)	    /* spans in one request, before compression */
#define BATCH_DELAY_NS 500000000ull /* a bind waits at most this long for its batch */
#define TICK_MS 50
#define MAX_ATTEMPTS 5
#define STOP_WAIT_MS 5000ul

/* ---- Configuration ---- */

/* The TRACES_ variable, else the general one, else NULL; *from names the one read. */
static const char *otel_env(const char *suffix, const char **from)
{
	static __thread char name[96];
	const char *v;

	snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_TRACES_%s", suffix);
	v = getenv(name);
	if (!v || !*v) {
		snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_%s", suffix);
		v = getenv(name);
	}
	if (from)
		*from = v && *v ? name : NULL;
	return v && *v ? v : NULL;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* [s, e) trimmed of blanks, percent-decoded into out; false when it does not fit or a %XX is
 * bad, or (for a name) when it holds what a header name cannot. */
static bool header_part(char *out, size_t cap, const char *s, const char *e, bool name)
{
	size_t o = 0;

	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	for (; s < e; s++) {
		int c = (unsigned char)*s;

		if (c == '%') {
			if (e - s < 3 || hexval(s[1]) < 0 || hexval(s[2]) < 0)
				return false;
			c = hexval(s[1]) * 16 + hexval(s[2]);
			s += 2;
		}
		if (c == '\r' || c == '\n' || c == '\0' ||
		    (name && (c <= ' ' || c >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", c))))
			return false;
		if (o + 1 >= cap)
			return false;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return o > 0 || !name;
}

/* "k=v,k2=v2" into c->headers (a later one of the same name replaces it). */
static int parse_headers(struct otlp_config *c, const char *text, const char *from, char *why,
			 size_t why_len)
{
	const char *p = text;
	int n = 0;

	while (*p) {
		const char *end = strchr(p, ','), *eq;
		struct otlp_header h;
		int i;

		if (!end)
			end = p + strlen(p);
		n++;
		eq = memchr(p, '=', (size_t)(end - p));
		if (!eq || !header_part(h.name, sizeof(h.name), p, eq, true) ||
		    !header_part(h.value, sizeof(h.value), eq + 1, end, false)) {
			/* The entry's number, never its text: it may hold a token. */
			snprintf(why, why_len, "%s: entry %d is not NAME=VALUE (percent-encoded)",
				 from, n);
			return -EINVAL;
		}
		for (i = 0; i < c->n_headers; i++)
			if (!strcasecmp(c->headers[i].name, h.name))
				break;
		if (i == c->n_headers) {
			if (c->n_headers == OTLP_MAX_HEADERS) {
				snprintf(why, why_len, "%s: more than %d headers", from,
					 OTLP_MAX_HEADERS);
				return -EINVAL;
			}
			c->n_headers++;
		}
		c->headers[i] = h;
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* An http(s) URL with a host; the traces path as given. */
static int check_url(const char *url, const char *from, char *why, size_t why_len)
{
	struct evhttp_uri *u = evhttp_uri_parse(url);
	const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
	int rc = 0;

	if (!u || !scheme || (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) ||
	    !evhttp_uri_get_host(u) || !*evhttp_uri_get_host(u)) {
		snprintf(why, why_len, "%s: '%.200s' is not an http:// or https:// URL with a host",
			 from, url);
		rc = -EINVAL;
	} else if (evhttp_uri_get_userinfo(u)) {
		snprintf(why, why_len,
			 "%s: credentials in the URL are not supported (use "
			 "OTEL_EXPORTER_OTLP_HEADERS)",
			 from);
		rc = -EINVAL;
	}
	if (u)
		evhttp_uri_free(u);
	return rc;
}

static int copy_path(char *dst, size_t cap, const char *src, const char *what, char *why,
		     size_t why_len)
{
	if (strlen(src) >= cap) {
		snprintf(why, why_len, "%s: path too long", what);
		return -EINVAL;
	}
	util__copy(dst, cap, src);
	return 0;
}

int otlp_config__resolve(struct otlp_config *c, const char *cli_url, size_t queue_bytes,
			 const char *node, char *why, size_t why_len)
{
	const char *v, *from, *base = NULL;
	unsigned long ms;
	int err;

	memset(c, 0, sizeof(*c));
	c->queue_bytes = queue_bytes ? queue_bytes : OTLP_DEFAULT_QUEUE_BYTES;
	c->timeout_ms = 10000;
	if (cli_url) {
		base = cli_url;
		c->url_from = "--otlp";
	} else {
		v = getenv("OTEL_SDK_DISABLED");
		if (v && !strcasecmp(v, "true"))
			return 0;
		if ((v = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) && *v) {
			if (strlen(v) >= sizeof(c->url)) {
				snprintf(why, why_len,
					 "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT too long");
				return -EINVAL;
			}
			util__copy(c->url, sizeof(c->url), v);
			c->url_from = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
		} else if ((v = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) && *v) {
			base = v;
			c->url_from = "OTEL_EXPORTER_OTLP_ENDPOINT";
		} else {
			return 0;
		}
	}
	if (base) {
		size_t n = strlen(base);

		while (n && base[n - 1] == '/')
			n--;
		if (n + sizeof("/v1/traces") > sizeof(c->url)) {
			snprintf(why, why_len, "%s: URL too long", c->url_from);
			return -EINVAL;
		}
		snprintf(c->url, sizeof(c->url), "%.*s/v1/traces", (int)n, base);
		/* A base URL with a query string cannot take a path after it. */
		if (memchr(base, '?', n)) {
			snprintf(why, why_len, "%s: a base URL has no query string", c->url_from);
			return -EINVAL;
		}
	}
	if ((err = check_url(c->url, c->url_from, why, why_len)))
		return err;

	if ((v = otel_env("PROTOCOL", &from)) && strcmp(v, "http/protobuf")) {
		snprintf(why, why_len, "%s=%.40s: bindtrace sends http/protobuf only", from, v);
		return -EINVAL;
	}
	if ((v = getenv("OTEL_EXPORTER_OTLP_HEADERS")) && *v &&
	    (err = parse_headers(c, v, "OTEL_EXPORTER_OTLP_HEADERS", why, why_len)))
		return err;
	if ((v = getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS")) && *v &&
	    (err = parse_headers(c, v, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", why, why_len)))
		return err;
	if ((v = otel_env("COMPRESSION", &from))) {
		if (!strcmp(v, "gzip")) {
			c->gzip = true;
		} else if (strcmp(v, "none")) {
			snprintf(why, why_len, "%s=%.40s: expected gzip or none", from, v);
			return -EINVAL;
		}
	}
	if ((v = otel_env("TIMEOUT", &from))) {
		if (util__parse_ulong(v, 1, 600000, &ms)) {
			snprintf(why, why_len, "%s=%.40s: expected milliseconds, 1 to 600000", from,
				 v);
			return -EINVAL;
		}
		c->timeout_ms = ms;
	}
	if ((v = otel_env("CERTIFICATE", &from)) &&
	    (err = copy_path(c->ca_file, sizeof(c->ca_file), v, from, why, why_len)))
		return err;
	if ((v = otel_env("CLIENT_CERTIFICATE", &from)) &&
	    (err = copy_path(c->client_cert, sizeof(c->client_cert), v, from, why, why_len)))
		return err;
	if ((v = otel_env("CLIENT_KEY", &from)) &&
	    (err = copy_path(c->client_key, sizeof(c->client_key), v, from, why, why_len)))
		return err;
	if (!c->client_cert[0] != !c->client_key[0]) {
		snprintf(why, why_len,
			 "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY go "
			 "together");
		return -EINVAL;
	}
	if (node && *node) {
		util__copy(c->node, sizeof(c->node), node);
	} else if (gethostname(c->node, sizeof(c->node) - 1) || !c->node[0]) {
		util__copy(c->node, sizeof(c->node), "unknown");
	}
	return 1;
}

/* ---- The queue ---- */

struct blob {
	struct blob *next;
	uint64_t queued_ns;
	size_t len;
	int spans;
	uint8_t data[];
};

struct otlp_exporter {
	struct otlp_config cfg;
	/* Parsed once: where to connect and what to ask for. */
	char host[256], path[OTLP_URL_MAX], host_header[300];
	int port;
	bool https;

	pthread_mutex_t lock; /* the queue and the counters */
	struct blob *head, *tail;
	struct otlp_stats stats;
	_Atomic bool stopping;
	uint64_t stop_deadline_ns; /* set before stopping */

	/* The export thread's. */
	pthread_t thread;
	bool started;
	struct event_base *base;
	struct evdns_base *dns; /* libevent's resolver: no glibc NSS (the static build) */
	struct event *tick;
	SSL_CTX *ssl;
	struct evhttp_connection *conn;
	bool conn_broken; /* free and make a new one before the next request */
	struct batch {
		bool active;	/* a batch is being sent or waits for its retry */
		bool in_flight; /* a request is out */
		struct evhttp_request *req;
		uint8_t *body; /* as sent (gzip'd when configured) */
		size_t body_len, raw_len;
		int spans;
		int attempts;
		uint64_t retry_ns; /* not before */
	} batch;
	char error[200]; /* what the last failure was */
	bool failing;	 /* said that export fails; say when it works again */
	bool said_full;	 /* said that the queue is full (once per episode) */
	uint64_t backoff_ns;
};

static void say(const struct otlp_exporter *e, const char *fmt, const char *detail)
{
	fprintf(stderr, "bindtrace: otlp: ");
	fprintf(stderr, fmt, e->cfg.url, detail);
	fputc('\n', stderr);
}

void otlp_exporter__send(struct otlp_exporter *e, const void *spans, size_t len, int n)
{
	struct blob *b;

	if (!e || n <= 0)
		return;
	b = malloc(sizeof(*b) + len);
	pthread_mutex_lock(&e->lock);
	e->stats.binds++;
	e->stats.spans += (uint64_t)n;
	if (!b || e->stats.queued_bytes + len > e->cfg.queue_bytes) {
		e->stats.dropped_queue_full += (uint64_t)n;
		if (!e->said_full) {
			e->said_full = true;
			pthread_mutex_unlock(&e->lock);
			fprintf(stderr,
				"bindtrace: otlp: queue full (%zu bytes): spans dropped until the "
				"collector takes them (counted in the summary and "
				"bindtrace_otlp_spans_dropped_total)\n",
				e->cfg.queue_bytes);
			free(b);
			return;
		}
		pthread_mutex_unlock(&e->lock);
		free(b);
		return;
	}
	memcpy(b->data, spans, len);
	b->len = len;
	b->spans = n;
	b->next = NULL;
	b->queued_ns = util__monotonic_ns();
	if (e->tail)
		e->tail->next = b;
	else
		e->head = b;
	e->tail = b;
	e->stats.queued_bytes += len;
	pthread_mutex_unlock(&e->lock);
}

void otlp_exporter__stats(struct otlp_exporter *e, struct otlp_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	*s = e->stats;
	pthread_mutex_unlock(&e->lock);
}

void otlp_exporter__describe(const struct otlp_exporter *e, char *out, size_t cap)
{
	char headers[256] = "";
	size_t o = 0;

	for (int i = 0; i < e->cfg.n_headers && o < sizeof(headers); i++)
		o += (size_t)snprintf(headers + o, sizeof(headers) - o, "%s%s", i ? " " : "",
				      e->cfg.headers[i].name);
	snprintf(out, cap, "%s (from %s; %s%s%s, timeout %lu ms, queue %zu KiB)", e->cfg.url,
		 e->cfg.url_from, e->cfg.gzip ? "gzip" : "uncompressed",
		 headers[0] ? ", headers: " : "", headers, e->cfg.timeout_ms,
		 e->cfg.queue_bytes >> 10);
}

/* ---- Sending (the export thread) ---- */

static void batch_done(struct otlp_exporter *e)
{
	pthread_mutex_lock(&e->lock);
	e->stats.queued_bytes -= e->batch.raw_len;
	if (e->stats.queued_bytes < e->cfg.queue_bytes / 2)
		e->said_full = false;
	pthread_mutex_unlock(&e->lock);
	free(e->batch.body);
	memset(&e->batch, 0, sizeof(e->batch));
}

static void batch_drop(struct otlp_exporter *e, uint64_t *counter)
{
	pthread_mutex_lock(&e->lock);
	*counter += (uint64_t)e->batch.spans;
	pthread_mutex_unlock(&e->lock);
	batch_done(e);
}

/* gzip of in into a new buffer; NULL when out of memory. */
static uint8_t *gzip_body(const uint8_t *in, size_t len, size_t *out_len)
{
	z_stream z = {};
	uLong cap = compressBound(len) + 32;
	uint8_t *out = malloc(cap);

	if (!out)
		return NULL;
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* Takes up to BATCH_BYTES of queued binds into e->batch: true when there is a batch. */
static bool batch_take(struct otlp_exporter *e, uint64_t now, bool flush)
{
	struct blob *b, *first;
	size_t raw = 0;
	int spans = 0;
	uint8_t *body, *p;

	pthread_mutex_lock(&e->lock);
	first = e->head;
	if (!first || (!flush && e->stats.queued_bytes < BATCH_BYTES &&
		       now - first->queued_ns < BATCH_DELAY_NS)) {
		pthread_mutex_unlock(&e->lock);
		return false;
	}
	for (b = first; b && (raw == 0 || raw + b->len <= BATCH_BYTES); b = b->next)
		raw += b->len;
	/* Detach [first, b). */
	e->head = b;
	if (!b)
		e->tail = NULL;
	pthread_mutex_unlock(&e->lock);

	body = malloc(raw ? raw : 1);
	p = body;
	while (first != b) {
		struct blob *next = first->next;

		if (body)
			memcpy(p, first->data, first->len);
		p += first->len;
		spans += first->spans;
		free(first);
		first = next;
	}
	e->batch = (struct batch){ .active = true, .raw_len = raw, .spans = spans };
	if (body && e->cfg.gzip) {
		e->batch.body = gzip_body(body, raw, &e->batch.body_len);
		free(body);
	} else {
		e->batch.body = body;
		e->batch.body_len = raw;
	}
	if (!e->batch.body) {
		snprintf(e->error, sizeof(e->error), "out of memory for a request");
		batch_drop(e, &e->stats.dropped_failed);
		return false;
	}
	return true;
}

/* The collector's partial success: rejected spans (ExportTraceServiceResponse field 1,
 * ExportTracePartialSuccess field 1). */
static int64_t rejected_spans(struct evbuffer *buf)
{
	size_t len = evbuffer_get_length(buf);
	const uint8_t *data;
	struct pb_reader r, r2;
	struct pb_field f, g;

	if (!len || len > (1u << 20))
		return 0;
	data = evbuffer_pullup(buf, -1);
	if (!data)
		return 0;
	pb_reader__init(&r, data, len);
	while (pb_reader__next(&r, &f) == 1) {
		if (f.number != 1 || f.type != PB_WT_LEN)
			continue;
		pb_reader__init(&r2, f.data, f.len);
		while (pb_reader__next(&r2, &g) == 1)
			if (g.number == 1 && g.type == PB_WT_VARINT)
				return (int64_t)g.varint;
	}
	return 0;
}

static uint64_t backoff_ns(int attempts)
{
	/* 1, 2, 4, 8, 16 s */
	return (1000000000ull << (attempts > 5 ? 4 : attempts - 1));
}

static void on_request_error(enum evhttp_request_error err, void *arg)
{
	struct otlp_exporter *e = arg;
	const char *what = err == EVREQ_HTTP_TIMEOUT	      ? "timed out"
			   : err == EVREQ_HTTP_EOF	      ? "connection closed or refused"
			   : err == EVREQ_HTTP_INVALID_HEADER ? "invalid answer"
			   : err == EVREQ_HTTP_BUFFER_ERROR   ? "connection failed"
			   : err == EVREQ_HTTP_DATA_TOO_LONG  ? "answer too long"
							      : "cancelled";
	unsigned long ssl_err = 0;

	if (e->conn) {
		struct bufferevent *bev = evhttp_connection_get_bufferevent(e->conn);

		if (bev && e->https)
			ssl_err = bufferevent_get_openssl_error(bev);
	}
	if (ssl_err) {
		char buf[160];

		ERR_error_string_n(ssl_err, buf, sizeof(buf));
		snprintf(e->error, sizeof(e->error), "TLS: %s", buf);
	} else {
		snprintf(e->error, sizeof(e->error), "%s", what);
	}
}

static void on_response(struct evhttp_request *req, void *arg)
{
	struct otlp_exporter *e = arg;
	int code = req ? evhttp_request_get_response_code(req) : 0;
	bool retryable = code == 0 || code == 429 || code == 502 || code == 503 || code == 504;

	e->batch.in_flight = false;
	e->batch.req = NULL;
	if (code >= 200 && code < 300) {
		int64_t rejected = rejected_spans(evhttp_request_get_input_buffer(req));

		if (rejected < 0 || rejected > e->batch.spans)
			rejected = e->batch.spans;
		pthread_mutex_lock(&e->lock);
		e->stats.requests++;
		e->stats.bytes_sent += e->batch.body_len;
		e->stats.spans_exported += (uint64_t)(e->batch.spans - rejected);
		e->stats.dropped_rejected += (uint64_t)rejected;
		pthread_mutex_unlock(&e->lock);
		if (e->failing)
			say(e, "%s: exporting again%s", "");
		if (rejected)
			fprintf(stderr,
				"bindtrace: otlp: the collector rejected %" PRId64
				" of %d spans (partial success)\n",
				rejected, e->batch.spans);
		e->failing = false;
		e->backoff_ns = 0;
		batch_done(e);
		return;
	}
	if (code) {
		char body[120] = "";
		struct evbuffer *in = evhttp_request_get_input_buffer(req);
		size_t n = evbuffer_copyout(in, body, sizeof(body) - 1);
		size_t i;

		body[n > 0 ? n : 0] = '\0';
		for (i = 0; body[i]; i++)
			if ((unsigned char)body[i] < 0x20 || (unsigned char)body[i] >= 0x7f)
				body[i] = ' ';
		snprintf(e->error, sizeof(e->error), "HTTP %d%s%s", code, body[0] ? ": " : "",
			 body);
	} else if (!e->error[0]) {
		snprintf(e->error, sizeof(e->error), "no answer (connection refused or reset)");
	}
	e->conn_broken = true;
	pthread_mutex_lock(&e->lock);
	e->stats.requests_failed++;
	pthread_mutex_unlock(&e->lock);
	if (!e->failing) {
		e->failing = true;
		say(e, "%s: %s (spans wait and are retried; dropped ones are counted)", e->error);
	}
	if (retryable && e->batch.attempts < MAX_ATTEMPTS && !atomic_load(&e->stopping)) {
		e->batch.retry_ns = util__monotonic_ns() + backoff_ns(e->batch.attempts);
		return;
	}
	batch_drop(e, atomic_load(&e->stopping) && retryable ? &e->stats.dropped_at_exit
							     : &e->stats.dropped_failed);
}

static struct evhttp_connection *connect_collector(struct otlp_exporter *e)
{
	struct bufferevent *bev;
	struct evhttp_connection *conn;
	struct timeval tv = { .tv_sec = (time_t)(e->cfg.timeout_ms / 1000),
			      .tv_usec = (suseconds_t)(e->cfg.timeout_ms % 1000) * 1000 };

	if (e->https) {
		SSL *ssl = SSL_new(e->ssl);

		if (!ssl)
			return NULL;
		SSL_set_tlsext_host_name(ssl, e->host);
		/* The certificate must name the host (or its address). */
		if (!X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), e->host))
			SSL_set1_host(ssl, e->host);
		bev =
		    bufferevent_openssl_socket_new(e->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
						   BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
		if (!bev) {
			SSL_free(ssl);
			return NULL;
		}
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	} else {
		bev = bufferevent_socket_new(e->base, -1, BEV_OPT_CLOSE_ON_FREE);
		if (!bev)
			return NULL;
	}
	conn = evhttp_connection_base_bufferevent_new(e->base, e->dns, bev, e->host,
						      (ev_uint16_t)e->port);
	if (!conn)
		return NULL;
	evhttp_connection_set_timeout_tv(conn, &tv);
	evhttp_connection_set_retries(conn, 0);
	return conn;
}

static void batch_send(struct otlp_exporter *e)
{
	struct evhttp_request *req;
	struct evkeyvalq *h;
	char ua[64];

	/* A TLS connection is made anew for each request: libevent cannot restart a TLS
	 * bufferevent once the server closed it. */
	if (e->conn && (e->conn_broken || e->https)) {
		evhttp_connection_free(e->conn);
		e->conn = NULL;
	}
	e->conn_broken = false;
	e->error[0] = '\0';
	e->batch.attempts++;
	if (!e->conn)
		e->conn = connect_collector(e);
	req = e->conn ? evhttp_request_new(on_response, e) : NULL;
	if (!req) {
		snprintf(e->error, sizeof(e->error), "cannot make a request (out of memory)");
		on_response(NULL, e);
		return;
	}
	evhttp_request_set_error_cb(req, on_request_error);
	h = evhttp_request_get_output_headers(req);
	evhttp_add_header(h, "Host", e->host_header);
	evhttp_add_header(h, "Content-Type", "application/x-protobuf");
	snprintf(ua, sizeof(ua), "bindtrace/%s", bindtrace__version());
	evhttp_add_header(h, "User-Agent", ua);
	if (e->cfg.gzip)
		evhttp_add_header(h, "Content-Encoding", "gzip");
	for (int i = 0; i < e->cfg.n_headers; i++) {
		evhttp_remove_header(h, e->cfg.headers[i].name);
		evhttp_add_header(h, e->cfg.headers[i].name, e->cfg.headers[i].value);
	}
	evbuffer_add(evhttp_request_get_output_buffer(req), e->batch.body, e->batch.body_len);
	e->batch.in_flight = true;
	e->batch.req = req;
	if (evhttp_make_request(e->conn, req, EVHTTP_REQ_POST, e->path)) {
		/* libevent freed req */
		e->batch.in_flight = false;
		e->batch.req = NULL;
		snprintf(e->error, sizeof(e->error), "cannot send the request");
		on_response(NULL, e);
	}
}

/* Everything left when the time to stop is up: counted as unsent at exit. */
static void drop_all(struct otlp_exporter *e)
{
	struct blob *b;

	if (e->batch.in_flight && e->batch.req) {
		evhttp_cancel_request(e->batch.req);
		e->batch.in_flight = false;
	}
	if (e->batch.active)
		batch_drop(e, &e->stats.dropped_at_exit);
	pthread_mutex_lock(&e->lock);
	while ((b = e->head)) {
		e->head = b->next;
		e->stats.dropped_at_exit += (uint64_t)b->spans;
		e->stats.queued_bytes -= b->len;
		free(b);
	}
	e->tail = NULL;
	pthread_mutex_unlock(&e->lock);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct otlp_exporter *e = arg;
	bool stopping = atomic_load(&e->stopping);
	uint64_t now = util__monotonic_ns();
	bool empty;

	(void)fd;
	(void)what;
	if (stopping) {
		pthread_mutex_lock(&e->lock);
		empty = !e->head;
		pthread_mutex_unlock(&e->lock);
		/* Done, or out of time; a batch waiting for a retry is not retried now: the
		 * collector failed it. */
		if ((empty && !e->batch.active) || now >= e->stop_deadline_ns ||
		    (e->batch.active && !e->batch.in_flight && e->batch.attempts > 0 &&
		     e->failing)) {
			drop_all(e);
			event_base_loopbreak(e->base);
			return;
		}
	}
	if (e->batch.in_flight)
		return;
	if (e->batch.active) {
		if (now >= e->batch.retry_ns || stopping)
			batch_send(e);
		return;
	}
	if (batch_take(e, now, stopping))
		batch_send(e);
}

static void *export_thread(void *arg)
{
	struct otlp_exporter *e = arg;

	event_base_dispatch(e->base);
	return NULL;
}

static int tls_setup(struct otlp_exporter *e)
{
	const struct otlp_config *c = &e->cfg;
	char buf[160];

	e->ssl = SSL_CTX_new(TLS_client_method());
	if (!e->ssl)
		goto fail;
	SSL_CTX_set_min_proto_version(e->ssl, TLS1_2_VERSION);
	SSL_CTX_set_verify(e->ssl, SSL_VERIFY_PEER, NULL);
	if (c->ca_file[0] ? SSL_CTX_load_verify_locations(e->ssl, c->ca_file, NULL) != 1
			  : SSL_CTX_set_default_verify_paths(e->ssl) != 1) {
		ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
		fprintf(stderr, "bindtrace: otlp: CA certificates%s%s: %s\n",
			c->ca_file[0] ? " " : "", c->ca_file, buf);
		return -EINVAL;
	}
	if (c->client_cert[0] &&
	    (SSL_CTX_use_certificate_chain_file(e->ssl, c->client_cert) != 1 ||
	     SSL_CTX_use_PrivateKey_file(e->ssl, c->client_key, SSL_FILETYPE_PEM) != 1 ||
	     SSL_CTX_check_private_key(e->ssl) != 1)) {
		ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
		fprintf(stderr, "bindtrace: otlp: client certificate %s: %s\n", c->client_cert,
			buf);
		return -EINVAL;
	}
	return 0;
fail:
	fprintf(stderr, "bindtrace: otlp: cannot set up TLS\n");
	return -ENOMEM;
}

struct otlp_exporter *otlp_exporter__start(const struct otlp_config *c)
{
	struct otlp_exporter *e = calloc(1, sizeof(*e));
	struct evhttp_uri *u = NULL;
	struct timeval tick = { .tv_sec = 0, .tv_usec = TICK_MS * 1000 };
	sigset_t all, old_mask;
	const char *q;
	int err = ENOMEM;

	if (!e) {
		fprintf(stderr, "bindtrace: otlp: out of memory\n");
		errno = ENOMEM;
		return NULL;
	}
	e->cfg = *c;
	pthread_mutex_init(&e->lock, NULL);
	e->stats.queue_bytes = c->queue_bytes;
	u = evhttp_uri_parse(c->url);
	if (!u) {
		fprintf(stderr, "bindtrace: otlp: cannot parse %s\n", c->url);
		err = EINVAL;
		goto fail;
	}
	e->https = !strcasecmp(evhttp_uri_get_scheme(u), "https");
	util__copy(e->host, sizeof(e->host), evhttp_uri_get_host(u));
	e->port = evhttp_uri_get_port(u);
	if (e->port > 0)
		snprintf(e->host_header, sizeof(e->host_header), "%s%s%s:%d",
			 strchr(e->host, ':') ? "[" : "", e->host, strchr(e->host, ':') ? "]" : "",
			 e->port);
	else
		snprintf(e->host_header, sizeof(e->host_header), "%s%s%s",
			 strchr(e->host, ':') ? "[" : "", e->host, strchr(e->host, ':') ? "]" : "");
	if (e->port <= 0)
		e->port = e->https ? 443 : 80;
	q = evhttp_uri_get_query(u);
	snprintf(e->path, sizeof(e->path), "%s%s%s",
		 evhttp_uri_get_path(u) && *evhttp_uri_get_path(u) ? evhttp_uri_get_path(u) : "/",
		 q ? "?" : "", q ? q : "");
	evhttp_uri_free(u);
	u = NULL;
	if (e->https && (err = -tls_setup(e)))
		goto fail;
	e->base = event_base_new();
	/* /etc/resolv.conf and /etc/hosts; without them, names cannot be resolved but
	 * addresses still work. */
	if (e->base) {
		e->dns = evdns_base_new(e->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
						     EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (!e->dns)
			e->dns = evdns_base_new(e->base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
	}
	e->tick = e->base ? event_new(e->base, -1, EV_PERSIST, on_tick, e) : NULL;
	if (!e->tick || event_add(e->tick, &tick)) {
		fprintf(stderr, "bindtrace: otlp: cannot set up libevent\n");
		goto fail;
	}
	/* The thread starts with every signal blocked: SIGINT, SIGTERM and SIGHUP go to the
	 * tracer's thread, and a collector gone mid-request is EPIPE there, not a SIGPIPE. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old_mask);
	err = pthread_create(&e->thread, NULL, export_thread, e);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (err) {
		fprintf(stderr, "bindtrace: otlp: cannot start its thread: %s\n", strerror(err));
		goto fail;
	}
	e->started = true;
	return e;
fail:
	if (u)
		evhttp_uri_free(u);
	otlp_exporter__free(e);
	errno = err;
	return NULL;
}

void otlp_exporter__stop(struct otlp_exporter *e, FILE *out)
{
	struct otlp_stats s;
	unsigned long wait_ms;

	if (!e || !e->started)
		return;
	wait_ms = e->cfg.timeout_ms < STOP_WAIT_MS ? e->cfg.timeout_ms : STOP_WAIT_MS;
	e->stop_deadline_ns = util__monotonic_ns() + wait_ms * 1000000ull;
	atomic_store(&e->stopping, true);
	pthread_join(e->thread, NULL);
	e->started = false;
	otlp_exporter__stats(e, &s);
	fprintf(out,
		"bindtrace: otlp: %" PRIu64 " spans of %" PRIu64 " binds, %" PRIu64
		" exported to %s in %" PRIu64 " requests (%" PRIu64 " bytes%s), %" PRIu64
		" dropped",
		s.spans, s.binds, s.spans_exported, e->cfg.url, s.requests, s.bytes_sent,
		e->cfg.gzip ? " gzip'd" : "", otlp_stats__dropped(&s));
	if (otlp_stats__dropped(&s))
		fprintf(out,
			" (%" PRIu64 " queue full, %" PRIu64 " export failed, %" PRIu64
			" rejected by the collector, %" PRIu64 " unsent at exit)%s%s",
			s.dropped_queue_full, s.dropped_failed, s.dropped_rejected,
			s.dropped_at_exit, e->error[0] ? "; last error: " : "", e->error);
	fputc('\n', out);
}

void otlp_exporter__free(struct otlp_exporter *e)
{
	struct blob *b;

	if (!e)
		return;
	if (e->started)
		otlp_exporter__stop(e, stderr);
	if (e->conn)
		evhttp_connection_free(e->conn);
	if (e->tick)
		event_free(e->tick);
	if (e->dns)
		evdns_base_free(e->dns, 0);
	if (e->base)
		event_base_free(e->base);
	if (e->ssl)
		SSL_CTX_free(e->ssl);
	while ((b = e->head)) {
		e->head = b->next;
		free(b);
	}
	free(e->batch.body);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
