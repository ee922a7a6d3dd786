/* The --metrics server: one libevent base and evhttp on a thread of their own. The listening
 * socket is made here, before the thread starts, so that a bad or busy address fails the
 * command at once; after that only the server's thread touches libevent. It stops when the
 * tracer writes to a pipe the base watches. */
#include "metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "util.h"

struct metrics_server {
	metrics_render_fn render;
	void *render_ctx;
	struct event_base *base;
	struct evhttp *http;
	struct event *stop_event;
	int stop_pipe[2];
	pthread_t thread;
	bool running;
	_Atomic uint64_t heartbeat_ns;
	char address[80];
};

int metrics_addr__parse(const char *text, struct sockaddr_storage *addr, socklen_t *addr_len,
			char *why, size_t why_len)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)addr;
	char host[64];
	const char *colon, *port_text;
	unsigned long port;
	size_t host_len;

	memset(addr, 0, sizeof(*addr));
	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':') {
			snprintf(why, why_len, "an IPv6 address is written [ADDR]:PORT");
			return -EINVAL;
		}
		host_len = (size_t)(close - text - 1);
		if (host_len >= sizeof(host)) {
			snprintf(why, why_len, "address too long");
			return -EINVAL;
		}
		memcpy(host, text + 1, host_len);
		host[host_len] = '\0';
		port_text = close + 2;
		if (inet_pton(AF_INET6, host, &v6->sin6_addr) != 1) {
			snprintf(why, why_len, "'%s' is not a numeric IPv6 address", host);
			return -EINVAL;
		}
		v6->sin6_family = AF_INET6;
		*addr_len = sizeof(*v6);
	} else {
		colon = strrchr(text, ':');
		if (!colon) {
			snprintf(why, why_len, "expected HOST:PORT, [IPV6]:PORT or :PORT");
			return -EINVAL;
		}
		host_len = (size_t)(colon - text);
		if (host_len >= sizeof(host) || memchr(text, ':', host_len)) {
			snprintf(why, why_len, "an IPv6 address is written [ADDR]:PORT");
			return -EINVAL;
		}
		memcpy(host, text, host_len);
		host[host_len] = '\0';
		port_text = colon + 1;
		if (!host[0]) {
			/* Every address: IPv6 with IPv4 mapped in (v4 fallback at bind). */
			v6->sin6_family = AF_INET6;
			v6->sin6_addr = in6addr_any;
			*addr_len = sizeof(*v6);
		} else {
			if (!strcmp(host, "localhost"))
				util__copy(host, sizeof(host), "127.0.0.1");
			if (inet_pton(AF_INET, host, &v4->sin_addr) != 1) {
				snprintf(why, why_len,
					 "'%s' is not a numeric IPv4 address (names are not "
					 "resolved)",
					 host);
				return -EINVAL;
			}
			v4->sin_family = AF_INET;
			*addr_len = sizeof(*v4);
		}
	}
	if (util__parse_ulong(port_text, 0, 65535, &port)) {
		snprintf(why, why_len, "invalid port '%s' (0..65535)", port_text);
		return -EINVAL;
	}
	if (addr->ss_family == AF_INET)
		v4->sin_port = htons((uint16_t)port);
	else
		v6->sin6_port = htons((uint16_t)port);
	return 0;
}

static void format_address(const struct sockaddr_storage *addr, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (addr->ss_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)addr;

		inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(v4->sin_port));
	} else {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)addr;

		inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(v6->sin6_port));
	}
}

/* A listening, non-blocking socket on addr: fd or -errno. */
static int listen_on(struct sockaddr_storage *addr, socklen_t addr_len)
{
	int fd, one = 1, zero = 0;

	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* ":PORT" means both families; an explicit IPv6 address means only it. */
	if (addr->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY,
			   IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)addr)->sin6_addr)
			       ? &zero
			       : &one,
			   sizeof(int));
	if (bind(fd, (struct sockaddr *)addr, addr_len) || listen(fd, 64)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static void reply_text(struct evhttp_request *req, int code, const char *reason,
		       const char *content_type, const char *body, size_t len)
{
	struct evbuffer *buf = evbuffer_new();

	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", content_type);
	if (!buf) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	if (evhttp_request_get_command(req) != EVHTTP_REQ_HEAD)
		evbuffer_add(buf, body, len);
	evhttp_send_reply(req, code, reason, buf);
	evbuffer_free(buf);
}

static void on_metrics(struct evhttp_request *req, void *arg)
{
	struct metrics_server *s = arg;
	size_t len;
	char *text = s->render(s->render_ctx, &len);

	if (!text) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	reply_text(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", text, len);
	free(text);
}

static void on_healthz(struct evhttp_request *req, void *arg)
{
	struct metrics_server *s = arg;
	uint64_t beat = atomic_load(&s->heartbeat_ns), now = util__monotonic_ns();
	char body[128];
	int n;

	if (beat && now - beat < METRICS_STALL_NS) {
		reply_text(req, 200, "OK", "text/plain; charset=utf-8", "ok\n", 3);
		return;
	}
	n = beat ? snprintf(body, sizeof(body), "stalled: the tracing loop last ran %.1f s ago\n",
			    (double)(now - beat) / 1e9)
		 : snprintf(body, sizeof(body), "starting: not attached yet\n");
	reply_text(req, 503, "Service Unavailable", "text/plain; charset=utf-8", body, (size_t)n);
}

static void on_other(struct evhttp_request *req, void *arg)
{
	static const char body[] = "bindtrace: /metrics (Prometheus) and /healthz\n";

	(void)arg;
	reply_text(req, 404, "Not Found", "text/plain; charset=utf-8", body, sizeof(body) - 1);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	struct metrics_server *s = arg;

	(void)fd;
	(void)what;
	event_base_loopbreak(s->base);
}

static void *server__run(void *arg)
{
	struct metrics_server *s = arg;

	event_base_dispatch(s->base);
	return NULL;
}

struct metrics_server *metrics_server__start(const char *text, metrics_render_fn render, void *ctx)
{
	struct metrics_server *s = calloc(1, sizeof(*s));
	struct sockaddr_storage addr, bound;
	socklen_t addr_len, bound_len = sizeof(bound);
	sigset_t all, old_mask;
	char why[160];
	int fd = -1, err;

	if (!s) {
		fprintf(stderr, "bindtrace: --metrics %s: out of memory\n", text);
		errno = ENOMEM;
		return NULL;
	}
	s->stop_pipe[0] = s->stop_pipe[1] = -1;
	s->render = render;
	s->render_ctx = ctx;
	if (metrics_addr__parse(text, &addr, &addr_len, why, sizeof(why))) {
		fprintf(stderr, "bindtrace: --metrics %s: %s\n", text, why);
		err = EINVAL;
		goto fail;
	}
	fd = listen_on(&addr, addr_len);
	if (fd == -EAFNOSUPPORT && addr.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&addr)->sin6_addr)) {
		/* ":PORT" on a host without IPv6. */
		struct sockaddr_in *v4 = (struct sockaddr_in *)&addr;
		uint16_t port = ((struct sockaddr_in6 *)&addr)->sin6_port;

		memset(&addr, 0, sizeof(addr));
		v4->sin_family = AF_INET;
		v4->sin_port = port;
		fd = listen_on(&addr, sizeof(*v4));
	}
	if (fd < 0) {
		fprintf(stderr, "bindtrace: --metrics %s: %s\n", text, strerror(-fd));
		err = -fd;
		goto fail;
	}
	if (getsockname(fd, (struct sockaddr *)&bound, &bound_len) == 0)
		format_address(&bound, s->address, sizeof(s->address));
	if (pipe2(s->stop_pipe, O_CLOEXEC | O_NONBLOCK)) {
		err = errno;
		fprintf(stderr, "bindtrace: --metrics %s: pipe: %s\n", text, strerror(err));
		goto fail;
	}
	s->base = event_base_new();
	s->http = s->base ? evhttp_new(s->base) : NULL;
	s->stop_event = s->base ? event_new(s->base, s->stop_pipe[0], EV_READ, on_stop, s) : NULL;
	if (!s->http || !s->stop_event || event_add(s->stop_event, NULL) ||
	    !evhttp_accept_socket_with_handle(s->http, fd)) {
		fprintf(stderr, "bindtrace: --metrics %s: cannot set up the HTTP server\n", text);
		err = ENOMEM;
		goto fail;
	}
	fd = -1; /* evhttp's now */
	/* A client that stalls is dropped; requests are small GETs. */
	evhttp_set_timeout(s->http, 10);
	evhttp_set_max_headers_size(s->http, 16384);
	evhttp_set_max_body_size(s->http, 4096);
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_cb(s->http, "/metrics", on_metrics, s);
	evhttp_set_cb(s->http, "/healthz", on_healthz, s);
	evhttp_set_gencb(s->http, on_other, s);
	/* The thread starts with every signal blocked: SIGINT, SIGTERM and SIGHUP go to the
	 * tracer's thread, and a client gone mid-reply is EPIPE there, not a SIGPIPE. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old_mask);
	err = pthread_create(&s->thread, NULL, server__run, s);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (err) {
		fprintf(stderr, "bindtrace: --metrics %s: thread: %s\n", text, strerror(err));
		goto fail;
	}
	s->running = true;
	return s;
fail:
	if (fd >= 0)
		close(fd);
	metrics_server__stop(s);
	errno = err;
	return NULL;
}

void metrics_server__heartbeat(struct metrics_server *s, uint64_t now_ns)
{
	if (s)
		atomic_store(&s->heartbeat_ns, now_ns);
}

const char *metrics_server__address(const struct metrics_server *s)
{
	return s->address;
}

void metrics_server__stop(struct metrics_server *s)
{
	if (!s)
		return;
	if (s->running) {
		ssize_t n;

		do
			n = write(s->stop_pipe[1], "x", 1);
		while (n < 0 && errno == EINTR);
		pthread_join(s->thread, NULL);
	}
	if (s->stop_event)
		event_free(s->stop_event);
	if (s->http)
		evhttp_free(s->http);
	if (s->base)
		event_base_free(s->base);
	if (s->stop_pipe[0] >= 0)
		close(s->stop_pipe[0]);
	if (s->stop_pipe[1] >= 0)
		close(s->stop_pipe[1]);
	free(s);
}
