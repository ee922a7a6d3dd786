/* --metrics ADDR: serves a text exposition over HTTP with libevent's evhttp, on its own thread:
 * GET /metrics is what the caller's render function returns (the Prometheus text of the metrics
 * registry, which this file does not know: it only transports), GET /healthz says whether the
 * tracer's loop is alive. The tracer never waits for a client: a scrape only calls the render
 * function (the registry takes its lock while the text is rendered into memory), and everything
 * network-bound happens on the server's thread.
 *
 * Why libevent: Debian ships it (and OpenSSL) as static libraries, so the static build serves
 * HTTP with the same code as the dynamic one; libmicrohttpd's static build needs gnutls, whose
 * static dependencies Debian lacks. libevent's evhttp is also an HTTP client, and with
 * libevent_openssl an HTTPS one: what an OTLP/HTTP exporter needs, again in both builds. */
#ifndef BINDTRACE_METRICS_HTTP_H
#define BINDTRACE_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct metrics_server;

/* Renders what GET /metrics answers: a malloc'd text and its length, or NULL (out of memory:
 * the scrape gets a 500). Called on the server's thread. */
typedef char *(*metrics_render_fn)(void *ctx, size_t *len);

/* Parses ADDR: "IPV4:PORT", "[IPV6]:PORT", "localhost:PORT" (127.0.0.1) or ":PORT" (every
 * address, IPv6 and IPv4). Numeric only: bindtrace resolves no names. 0, or -EINVAL with a
 * reason in why. */
int metrics_addr__parse(const char *text, struct sockaddr_storage *addr, socklen_t *addr_len,
			char *why, size_t why_len);

/* How long the tracer's loop may go without metrics_server__heartbeat() before /healthz says
 * 503. */
#define METRICS_STALL_NS (10ull * 1000000000ull)

/* Binds ADDR and starts serving render(ctx) (ctx is the caller's; it must outlive the server).
 * NULL with errno set after one line "bindtrace: --metrics ADDR: ..." on stderr. */
struct metrics_server *metrics_server__start(const char *addr, metrics_render_fn render, void *ctx);
/* The tracer's loop is alive at monotonic time now_ns (lock-free). */
void metrics_server__heartbeat(struct metrics_server *s, uint64_t now_ns);
/* The bound address as "IP:PORT" or "[IP6]:PORT" (port 0 given: the one the kernel chose). */
const char *metrics_server__address(const struct metrics_server *s);
/* Stops the thread, closes the socket, frees. NULL is fine. */
void metrics_server__stop(struct metrics_server *s);

#endif
