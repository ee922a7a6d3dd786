/* capture --json's hand-written lines are what jansson printed before them: each line is compared
 * byte for byte with jansson's compact dump of the object `capture --json` built per event until
 * it wrote them by hand (same keys, order, integer casts), over payloads of every length up to
 * a few blocks and of MAX_CHUNK, every byte value, IPv4 and IPv6 endpoints, both directions and
 * sources, extreme integers, and comms that need escaping or are not UTF-8. */
#include <jansson.h>
#include <stdlib.h>

#include "capture_json.h"
#include "check.h"
#include "endpoint.h"
#include "util.h"

/* The object print_json_data() built with json_pack before this module, dumped the same way. */
static char *reference_data(const struct data_event *e, int64_t wall, const char *comm,
			    const char *laddr, const char *raddr)
{
	char *b64 = malloc(4 * ((size_t)e->len / 3 + 1) + 1), *out;
	size_t n = util__base64_encode(e->data, e->len, b64);
	json_t *o = json_pack(
	    "{s:I, s:I, s:i, s:i, s:o, s:I, s:i, s:s, s:s, s:s, s:s, s:I, s:i, "
	    "s:s%}",
	    "ts_ns", (json_int_t)e->hdr.ts_ns, "wall_ns", (json_int_t)(e->hdr.ts_ns + wall), "pid",
	    (int)e->hdr.pid, "tid", (int)e->hdr.tid, "comm", util__json_string(comm), "conn",
	    (json_int_t)e->conn, "fd", e->fd, "laddr", laddr, "raddr", raddr, "dir",
	    e->dir == DIR_OUT ? "out" : "in", "source", e->source == SOURCE_TLS ? "tls" : "tcp",
	    "offset", (json_int_t)e->offset, "len", (int)e->len, "data", b64, n);

	out = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	free(b64);
	return out;
}

static char *reference_gap(const struct data_event *e, uint64_t missed)
{
	json_t *o = json_pack("{s:I, s:I, s:i, s:I, s:s, s:I}", "gap", (json_int_t)missed, "ts_ns",
			      (json_int_t)e->hdr.ts_ns, "pid", (int)e->hdr.pid, "conn",
			      (json_int_t)e->conn, "dir", e->dir == DIR_OUT ? "out" : "in",
			      "offset", (json_int_t)(e->offset - missed));
	char *out = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return out;
}

/* One event through both writers; returns whether they agreed. */
static bool same_line(struct data_event *e, int64_t wall, const char *comm, int family)
{
	static const __u8 v6[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34 };
	char laddr[ENDPOINT_STRLEN], raddr[ENDPOINT_STRLEN], quoted[CAPTURE_JSON_QUOTED_COMM];
	struct endpoint local, remote;
	char *line = malloc(capture_json__data_size(e->len) + CAPTURE_JSON_GAP_SIZE), *end;
	char *want = NULL, *want_gap = NULL;
	bool ok;

	e->family = (__u16)family;
	memset(e->laddr, 0, sizeof(e->laddr));
	memcpy(e->laddr, family == 2 ? (const __u8 *)"\x7f\x00\x00\x01" : v6, family == 2 ? 4 : 16);
	memcpy(e->raddr, e->laddr, sizeof(e->raddr));
	endpoint__set(&local, e->family, e->laddr, e->lport);
	endpoint__set(&remote, e->family, e->raddr, e->rport);
	endpoint__format(&local, laddr, sizeof(laddr));
	endpoint__format(&remote, raddr, sizeof(raddr));
	capture_json__quote(comm, quoted, sizeof(quoted));

	end = capture_json__gap(line, e, 7);
	*end = '\0';
	want_gap = reference_gap(e, 7);
	ok = want_gap && strlen(line) == strlen(want_gap) + 1 &&
	     strncmp(line, want_gap, strlen(want_gap)) == 0 && end[-1] == '\n';
	CHECK(ok, "gap line\n got %s want %s", line, want_gap ? want_gap : "(null)");

	end = capture_json__data(line, e, wall, quoted, laddr, raddr);
	CHECK((size_t)(end - line) <= capture_json__data_size(e->len), "len %u: %zu bytes", e->len,
	      (size_t)(end - line));
	*end = '\0';
	want = reference_data(e, wall, comm, laddr, raddr);
	ok = ok && want && strlen(line) == strlen(want) + 1 &&
	     strncmp(line, want, strlen(want)) == 0 && end[-1] == '\n';
	if (!ok)
		fprintf(stderr, "len %u comm \"%s\"\n got  %.300s\n want %.300s\n", e->len, comm,
			line, want ? want : "(null)");
	free(want);
	free(want_gap);
	free(line);
	return ok;
}

int main(void)
{
	static const char *const comms[] = {
		"bulk",	       "kube-apiserver",   "",		 "a\"b\\c",
		"tab\there\n", "\x01\x1f\x7f",	   "\xff\xfeok", "caf\xc3\xa9",
		"\xe2\x82",    "sixteen-chars-xx",
	};
	struct data_event *e = calloc(1, sizeof(*e) + MAX_CHUNK);
	size_t i, len, bad = 0, runs = 0;

	for (i = 0; i < MAX_CHUNK; i++)
		e->data[i] = (__u8)(i * 7 + 3);
	e->hdr.ts_ns = 123456789012345ull;
	e->hdr.pid = 4242;
	e->hdr.tid = 4243;
	e->conn = 987654;
	e->fd = 7;
	e->lport = 443;
	e->rport = 51234;
	e->offset = 1000;
	for (len = 0; len <= 200; len++) {
		e->len = (__u32)len;
		e->dir = len & 1 ? DIR_OUT : DIR_IN;
		e->source = len & 2 ? SOURCE_TLS : SOURCE_SYSCALL;
		runs++;
		bad += !same_line(e, 1700000000000000000ll, comms[len % 10], len & 4 ? 10 : 2);
	}
	CHECK(bad == 0, "%zu of %zu lines (lengths 0..200) differ from jansson's", bad, runs);

	/* the largest event, extreme integers: negative fd and wall offset, values past 2^31 and
	 * 2^63 as json_int_t prints them */
	e->len = MAX_CHUNK;
	e->fd = -1;
	e->hdr.pid = 0xffffffffu;
	e->hdr.tid = 0x80000000u;
	e->conn = ~0ull;
	e->offset = 1ull << 63;
	e->hdr.ts_ns = 0;
	CHECK(same_line(e, -5, "x", 10), "MAX_CHUNK bytes, extreme integers");
	e->hdr.ts_ns = ~0ull;
	e->offset = 0;
	e->len = MAX_CHUNK - 1;
	CHECK(same_line(e, 0, "y", 2), "MAX_CHUNK - 1 bytes, ts_ns 2^64 - 1");

	free(e);
	return check_summary("capture_json");
}
