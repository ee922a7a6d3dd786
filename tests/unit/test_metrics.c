/* The metrics registry and exposition, the bind metrics fed from a timeline, --metrics address
 * parsing, and the HTTP server answering real requests over loopback (IPv4 and IPv6). With a
 * directory argument, writes the exposition there as exposition.txt for `promtool check
 * metrics` (tests/cli/test-metrics). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bind_metrics.h"
#include "check.h"
#include "metrics.h"
#include "metrics_http.h"
#include "util.h"

static bool contains(const char *text, const char *line)
{
	return text && strstr(text, line) != NULL;
}

static void test_registry(void)
{
	static const char *const labels[] = { "leg", NULL };
	static const char *const two[] = { "a", "b", NULL };
	static const double buckets[] = { 0.001, 0.01, 0.1 };
	static const double bad_buckets[] = { 0.1, 0.01 };
	struct metrics *m = metrics__new();
	struct metric_family *c, *g, *h, *nolabel;
	char *text;
	size_t len;
	int i;

	CHECK(m != NULL, "new");
	c = metrics__family(m, "t_things_total", "Things\\counted\nhere", METRIC_COUNTER, two, NULL,
			    0);
	g = metrics__family(m, "t_level", "A level", METRIC_GAUGE, NULL, NULL, 0);
	h = metrics__family(m, "t_duration_seconds", "Durations", METRIC_HISTOGRAM, labels, buckets,
			    3);
	nolabel =
	    metrics__family(m, "t_plain_seconds", "Plain", METRIC_HISTOGRAM, NULL, buckets, 3);
	CHECK(c && g && h && nolabel, "families");
	CHECK(!metrics__family(m, "0bad", "x", METRIC_GAUGE, NULL, NULL, 0) && errno == EINVAL,
	      "bad name");
	CHECK(!metrics__family(m, "t_h", "x", METRIC_HISTOGRAM, NULL, bad_buckets, 2),
	      "decreasing buckets");
	CHECK(!metrics__family(m, "t_g", "x", METRIC_GAUGE, NULL, buckets, 3), "gauge buckets");
	CHECK(!metrics__family(m, "t_le", "x", METRIC_HISTOGRAM,
			       (const char *const[]){ "le", NULL }, buckets, 3),
	      "le label");

	CHECK_INT(metric__add(c, (const char *[]){ "x\"y", "back\\slash\nnl" }, 2), 0);
	CHECK_INT(metric__add(c, (const char *[]){ "x\"y", "back\\slash\nnl" }, 3), 0);
	CHECK_INT(metric__add(c, (const char *[]){ "x", "y" }, -1), -EINVAL);
	CHECK_INT(metric__observe(c, (const char *[]){ "x", "y" }, 1), -EINVAL);
	CHECK_INT(metric__set(g, NULL, 2.5), 0);
	CHECK_INT(metric__add(g, NULL, -1), 0);
	/* 0.001 is in le=0.001 (le is inclusive); 0.5 only in +Inf. */
	CHECK_INT(metric__observe(h, (const char *[]){ "etcd_commit" }, 0.001), 0);
	CHECK_INT(metric__observe(h, (const char *[]){ "etcd_commit" }, 0.005), 0);
	CHECK_INT(metric__observe(h, (const char *[]){ "etcd_commit" }, 0.5), 0);
	CHECK_INT(metric__touch(h, (const char *[]){ "wal_fsync" }), 0);
	CHECK_INT(metric__touch(nolabel, NULL), 0);
	CHECK_INT(metric__add(h, (const char *[]){ "x" }, 1), -EINVAL);

	text = metrics__render(m, &len);
	CHECK(text && strlen(text) == len, "render");
	CHECK(contains(text, "# HELP t_things_total Things\\\\counted\\nhere\n"), "%s", text);
	CHECK(contains(text, "# TYPE t_things_total counter\n"), "%s", text);
	CHECK(contains(text, "t_things_total{a=\"x\\\"y\",b=\"back\\\\slash\\nnl\"} 5\n"), "%s",
	      text);
	CHECK(contains(text, "# TYPE t_level gauge\nt_level 1.5\n"), "%s", text);
	CHECK(contains(text, "t_duration_seconds_bucket{leg=\"etcd_commit\",le=\"0.001\"} 1\n"),
	      "%s", text);
	CHECK(contains(text, "t_duration_seconds_bucket{leg=\"etcd_commit\",le=\"0.01\"} 2\n"),
	      "%s", text);
	CHECK(contains(text, "t_duration_seconds_bucket{leg=\"etcd_commit\",le=\"0.1\"} 2\n"), "%s",
	      text);
	CHECK(contains(text, "t_duration_seconds_bucket{leg=\"etcd_commit\",le=\"+Inf\"} 3\n"),
	      "%s", text);
	CHECK(contains(text, "t_duration_seconds_sum{leg=\"etcd_commit\"} 0.506"), "%s", text);
	CHECK(contains(text, "t_duration_seconds_count{leg=\"etcd_commit\"} 3\n"), "%s", text);
	CHECK(contains(text, "t_duration_seconds_count{leg=\"wal_fsync\"} 0\n"), "%s", text);
	CHECK(contains(text, "t_plain_seconds_bucket{le=\"+Inf\"} 0\n"), "%s", text);
	free(text);

	/* A full family refuses new series and counts it; existing ones still update. */
	for (i = 0; i < METRICS_MAX_SERIES + 10; i++) {
		char v[16];

		snprintf(v, sizeof(v), "s%d", i);
		metric__set(g, NULL, 0);
		metric__add(c, (const char *[]){ v, "z" }, 1);
	}
	CHECK_INT(metrics__refused(m), 11); /* the two series above, then 256 - 2 more fit */
	CHECK_INT(metric__add(c, (const char *[]){ "s0", "z" }, 1), 0);
	CHECK_INT(metric__add(c, (const char *[]){ "new", "z" }, 1), -ENOSPC);
	metric__reset(c);
	CHECK_INT(metric__add(c, (const char *[]){ "new", "z" }, 1), 0);
	metrics__free(m);
}

/* A timeline with the stages of a bound bind at 1 ms steps, the fsync 0.3 ms, one watcher. */
static void fill_bind(struct bind_timeline *t)
{
	int s;

	memset(t, 0, sizeof(*t));
	t->result = BIND_RESULT_BOUND;
	t->status_code = 201;
	for (s = 0; s < STAGE_MAX; s++) {
		t->stages[s].seen = true;
		t->stages[s].mono_ns = t->stages[s].first_ns = t->stages[s].last_ns =
		    (uint64_t)(1000000000ll + (int64_t)(s - STAGE_BIND_REQUEST) * 1000000ll);
	}
	t->stages[STAGE_ETCD_WAL_FSYNC].first_ns = 1000000000ull + 4000000ull;
	t->stages[STAGE_ETCD_WAL_FSYNC].last_ns = 1000000000ull + 4300000ull;
	t->n_watchers = 1;
	t->watchers[0].sent.seen = true;
	t->watchers[0].sent.mono_ns = 1000000000ull + 6500000ull;
	snprintf(t->watchers[0].received.missing, BIND_REASON_MAX, "the watcher is not traced");
}

static void test_bind_metrics(const char *dir)
{
	struct bind_metrics *bm = bind_metrics__new();
	struct bind_timeline *t = calloc(1, sizeof(*t));
	struct bind_view view;
	char *text;
	size_t len;

	CHECK(bm && t, "new");
	fill_bind(t);
	bind_view__init(&view, t, 0);
	bind_metrics__bind(bm, &view);
	/* A 409: no etcd stages, not counted as missing; the scheduler's read missing. */
	fill_bind(t);
	t->result = BIND_RESULT_CONFLICT;
	t->status_code = 409;
	for (int s = STAGE_ETCD_TXN_SENT; s <= STAGE_ETCD_WATCH_EVENT; s++) {
		t->stages[s].seen = false;
		snprintf(t->stages[s].missing, BIND_REASON_MAX, "no etcd write: 409 Conflict");
	}
	t->stages[STAGE_BIND_RESPONSE_RECEIVED].seen = false;
	snprintf(t->stages[STAGE_BIND_RESPONSE_RECEIVED].missing, BIND_REASON_MAX,
		 "kube-scheduler is not traced");
	t->n_watchers = 0;
	bind_view__init(&view, t, 0);
	bind_metrics__bind(bm, &view);
	bind_metrics__targets_begin(bm);
	bind_metrics__target(bm, ROLE_APISERVER, 4242, true, "v1.33.13", "go1.26.8");
	bind_metrics__target(bm, ROLE_ETCD, 4243, false, "v3.6.16", "go1.26.8");
	bind_metrics__targets_end(bm);
	bind_metrics__bpf_counters(bm, 7, 1024);
	bind_metrics__gap(bm, ROLE_ETCD, 300);

	text = metrics__render(bind_metrics__registry(bm), &len);
	CHECK(contains(text, "bindtrace_binds_total{result=\"bound\"} 1\n"), "%s", text);
	CHECK(contains(text, "bindtrace_binds_total{result=\"conflict\"} 1\n"), "%s", text);
	CHECK(contains(text, "bindtrace_binds_total{result=\"unschedulable\"} 0\n"), "%s", text);
	/* The total, 8 ms, for the bound bind only (the 409's scheduler read is missing). */
	CHECK(contains(text, "bindtrace_bind_duration_seconds_bucket{le=\"0.005\"} 0\n"), "%s",
	      text);
	CHECK(contains(text, "bindtrace_bind_duration_seconds_bucket{le=\"0.01\"} 1\n"), "%s",
	      text);
	CHECK(contains(text, "bindtrace_bind_duration_seconds_count 1\n"), "%s", text);
	CHECK(contains(text, "bindtrace_bind_duration_seconds_bucket{le=\"0.00005\"} 0\n"), "%s",
	      text);
	CHECK(contains(text, "bindtrace_bind_duration_seconds_bucket{le=\"10\"} 1\n"), "%s", text);
	/* wal_fsync 0.3 ms, once; scheduler_to_apiserver 1 ms from both binds. */
	CHECK(contains(text, "bindtrace_bind_leg_duration_seconds_bucket{leg=\"wal_fsync\","
			     "le=\"0.0002\"} 0\n"),
	      "%s", text);
	CHECK(contains(text, "bindtrace_bind_leg_duration_seconds_bucket{leg=\"wal_fsync\","
			     "le=\"0.0005\"} 1\n"),
	      "%s", text);
	CHECK(contains(text, "bindtrace_bind_leg_duration_seconds_count{leg=\"scheduler_to_"
			     "apiserver\"} 2\n"),
	      "%s", text);
	CHECK(contains(text, "bindtrace_bind_leg_duration_seconds_count{leg=\"watch_fanout\"} 1\n"),
	      "%s", text);
	CHECK(
	    contains(text, "bindtrace_bind_leg_duration_seconds_count{leg=\"watch_delivery\"} 0\n"),
	    "%s", text);
	CHECK(contains(text, "bindtrace_missing_stages_total{stage=\"bind_response_received\","
			     "reason=\"not_traced\"} 1\n"),
	      "%s", text);
	CHECK(!contains(text, "no_etcd_write"), "a 409's etcd stages are not counted: %s", text);
	CHECK(contains(text, "bindtrace_target_info{role=\"kube-apiserver\",pid=\"4242\","
			     "version=\"v1.33.13\",go_version=\"go1.26.8\",node=\"\"} 1\n"),
	      "%s", text);
	CHECK(!contains(text, "pid=\"4243\""), "a detached target has no info: %s", text);
	CHECK(contains(text, "bindtrace_target_attached{role=\"etcd\"} 0\n"), "%s", text);
	CHECK(contains(text, "bindtrace_target_attached{role=\"kube-apiserver\"} 1\n"), "%s", text);
	CHECK(contains(text, "bindtrace_ringbuf_drops_total 7\n"), "%s", text);
	CHECK(contains(text, "bindtrace_capture_truncated_bytes_total 1024\n"), "%s", text);
	CHECK(contains(text, "bindtrace_capture_gap_bytes_total{role=\"etcd\"} 300\n"), "%s", text);
	CHECK(contains(text, "bindtrace_build_info{version=\""), "%s", text);

	CHECK_STR(stage__reason_label("etcd is not traced"), "not_traced");
	CHECK_STR(stage__reason_label("ring buffer drops while this bind was in flight"),
		  "ringbuf_drops");
	CHECK_STR(stage__reason_label("the bind began before bindtrace attached"),
		  "started_before_attach");
	CHECK_STR(stage__reason_label("something new"), "other");
	CHECK_STR(stage__reason_label("not on this node (cp-3): no kube-scheduler traced "
				      "here, seen only by a tracer on its node"),
		  "not_on_node");

	/* A restart: the apiserver is now pid 4244; the old pid's info goes. With --node, the
	 * node is a label of each. */
	bind_metrics__set_node(bm, "cp-1");
	bind_metrics__targets_begin(bm);
	bind_metrics__target(bm, ROLE_APISERVER, 4244, true, "v1.33.13", "go1.26.8");
	bind_metrics__targets_end(bm);
	{
		char *after = metrics__render(bind_metrics__registry(bm), &len);

		CHECK(contains(after, "pid=\"4244\"") && !contains(after, "pid=\"4242\""),
		      "after a restart: %s", after);
		CHECK(contains(after, "bindtrace_target_info{role=\"kube-apiserver\",pid=\"4244\","
				      "version=\"v1.33.13\",go_version=\"go1.26.8\",node=\"cp-1\"} "
				      "1\n"),
		      "the node label: %s", after);
		free(after);
	}
	if (dir && text) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/exposition.txt", dir);
		f = fopen(path, "w");
		CHECK(f != NULL, "write %s", path);
		if (f) {
			fputs(text, f);
			fclose(f);
		}
	}
	free(text);
	free(t);
	bind_metrics__free(bm);
}

static void test_addr_parse(void)
{
	struct sockaddr_storage a;
	socklen_t len;
	char why[160];

	CHECK_INT(metrics_addr__parse("127.0.0.1:9464", &a, &len, why, sizeof(why)), 0);
	CHECK(a.ss_family == AF_INET && ntohs(((struct sockaddr_in *)&a)->sin_port) == 9464, "v4");
	CHECK_INT(metrics_addr__parse("[::1]:9464", &a, &len, why, sizeof(why)), 0);
	CHECK(a.ss_family == AF_INET6 && len == sizeof(struct sockaddr_in6), "v6");
	CHECK_INT(metrics_addr__parse(":9464", &a, &len, why, sizeof(why)), 0);
	CHECK(a.ss_family == AF_INET6, "any");
	CHECK_INT(metrics_addr__parse("localhost:1", &a, &len, why, sizeof(why)), 0);
	CHECK_INT(metrics_addr__parse("example.com:9464", &a, &len, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "numeric") != NULL, "%s", why);
	CHECK_INT(metrics_addr__parse("::1:9464", &a, &len, why, sizeof(why)), -EINVAL);
	CHECK_INT(metrics_addr__parse("[::1]9464", &a, &len, why, sizeof(why)), -EINVAL);
	CHECK_INT(metrics_addr__parse("127.0.0.1:65536", &a, &len, why, sizeof(why)), -EINVAL);
	CHECK_INT(metrics_addr__parse("127.0.0.1:", &a, &len, why, sizeof(why)), -EINVAL);
	CHECK_INT(metrics_addr__parse("9464", &a, &len, why, sizeof(why)), -EINVAL);
}

/* One HTTP/1.0 request to addr ("IP:PORT" or "[IP6]:PORT"); the whole answer, malloc'd. */
static char *http_get(const char *addr, const char *request)
{
	struct sockaddr_storage sa;
	socklen_t len;
	char why[160], *out = NULL;
	size_t size = 0;
	FILE *mem;
	ssize_t n;
	int fd;

	if (metrics_addr__parse(addr, &sa, &len, why, sizeof(why)))
		return NULL;
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, len)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (write(fd, request, strlen(request)) < 0) {
		close(fd);
		return NULL;
	}
	mem = open_memstream(&out, &size);
	for (;;) {
		char buf[4096];

		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		fwrite(buf, 1, (size_t)n, mem);
	}
	fclose(mem);
	close(fd);
	return out;
}

static void test_server(const char *listen_addr)
{
	struct bind_metrics *bm = bind_metrics__new();
	struct metrics_server *s;
	char *r;

	s = metrics_server__start(listen_addr, bind_metrics__render, bm);
	CHECK(s != NULL, "start on %s", listen_addr);
	if (!s) {
		bind_metrics__free(bm);
		return;
	}
	r = http_get(metrics_server__address(s), "GET /healthz HTTP/1.0\r\n\r\n");
	CHECK(r && strstr(r, " 503 ") && strstr(r, "starting"), "healthz before a beat: %s", r);
	free(r);
	metrics_server__heartbeat(s, util__monotonic_ns());
	r = http_get(metrics_server__address(s), "GET /healthz HTTP/1.0\r\n\r\n");
	CHECK(r && strstr(r, " 200 ") && strstr(r, "\r\n\r\nok\n"), "healthz: %s", r);
	free(r);
	metrics_server__heartbeat(s, util__monotonic_ns() - METRICS_STALL_NS - 1);
	r = http_get(metrics_server__address(s), "GET /healthz HTTP/1.0\r\n\r\n");
	CHECK(r && strstr(r, " 503 ") && strstr(r, "stalled"), "stalled healthz: %s", r);
	free(r);
	r = http_get(metrics_server__address(s), "GET /metrics HTTP/1.0\r\n\r\n");
	CHECK(r && strstr(r, " 200 ") && strstr(r, "text/plain; version=0.0.4") &&
		  strstr(r, "# TYPE bindtrace_binds_total counter"),
	      "metrics: %.300s", r);
	free(r);
	r = http_get(metrics_server__address(s), "GET /nope HTTP/1.0\r\n\r\n");
	CHECK(r && strstr(r, " 404 "), "404: %.200s", r);
	free(r);
	r = http_get(metrics_server__address(s), "POST /metrics HTTP/1.0\r\n\r\n");
	/* evhttp answers a method it was told not to allow with 501. */
	CHECK(r && strstr(r, " 501 "), "POST refused: %.200s", r);
	free(r);
	metrics_server__stop(s);
	bind_metrics__free(bm);
}

static void test_server_errors(void)
{
	struct bind_metrics *bm = bind_metrics__new();
	struct metrics_server *a, *b;

	CHECK(!metrics_server__start("nonsense", bind_metrics__render, bm) && errno == EINVAL,
	      "bad address");
	a = metrics_server__start("127.0.0.1:0", bind_metrics__render, bm);
	CHECK(a != NULL, "first");
	if (a) {
		b = metrics_server__start(metrics_server__address(a), bind_metrics__render, bm);
		CHECK(!b && errno == EADDRINUSE, "the same port twice: %s", strerror(errno));
		metrics_server__stop(b);
	}
	metrics_server__stop(a);
	bind_metrics__free(bm);
}

int main(int argc, char **argv)
{
	test_registry();
	test_bind_metrics(argc > 1 ? argv[1] : NULL);
	test_addr_parse();
	test_server("127.0.0.1:0");
	test_server("[::1]:0");
	test_server_errors();
	return check_summary("metrics");
}
