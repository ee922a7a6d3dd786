/* tls13: RFC 8448's key and IV vectors; records sealed here with libcrypto (every suite), fed
 * whole, byte by byte and in odd pieces, with a wrong sequence hint, lost bytes, false headers
 * and a KeyUpdate; and the wire of real Go TLS 1.3 connections (tlsfix keylog, one per Go
 * fixture toolchain: directory in argv[1] or $BINDTRACE_GOFIXTURES), decrypted with the secrets
 * of Go's key log and compared with what each side wrote. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "check.h"
#include "slurp.h"
#include "tls13.h"
#include "tlsseal.h"

static int unhex(const char *h, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (h[0] && h[1] && n < cap) {
		unsigned v;

		if (sscanf(h, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
		h += 2;
	}
	return (int)n;
}

static void test_rfc8448(void)
{
	static const struct {
		const char *secret, *key, *iv;
	} v[] = {
		/* RFC 8448 section 3: client and server application traffic secrets. */
		{ "9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5",
		  "17422dda596ed5d9acd890e3c63f5051", "5b78923dee08579033e523d9" },
		{ "a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643",
		  "9f02283b6c9c07efc26bb9f2ac92e356", "cf782b88dd83549aadf1e984" },
	};
	uint8_t secret[32], want[16], got[16];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		unhex(v[i].secret, secret, sizeof(secret));
		unhex(v[i].key, want, 16);
		CHECK_INT(tls13__expand_label(TLS13_AES_128_GCM_SHA256, secret, 32, "key", got, 16),
			  0);
		CHECK(!memcmp(got, want, 16), "key of vector %zu", i);
		unhex(v[i].iv, want, 12);
		CHECK_INT(tls13__expand_label(TLS13_AES_128_GCM_SHA256, secret, 32, "iv", got, 12),
			  0);
		CHECK(!memcmp(got, want, 12), "iv of vector %zu", i);
	}
	CHECK_INT(tls13__expand_label(0x1304, secret, 32, "key", got, 16), -EINVAL);
	CHECK_INT(tls13__expand_label(TLS13_AES_256_GCM_SHA384, secret, 32, "key", got, 16),
		  -EINVAL);
	errno = 0;
	CHECK(!tls13_stream__new(TLS13_AES_128_GCM_SHA256, secret, 31, 0) && errno == EINVAL,
	      "a secret of the wrong length is refused");
}

/* What the stream delivered: application data concatenated, each record noted. */
struct got {
	uint8_t *data;
	size_t len, cap;
	int records, handshakes;
	uint64_t seqs[64];
	uint64_t offsets[64];
};

static void on_record(void *ctx, const struct tls13_record *r)
{
	struct got *g = ctx;

	if (g->records < 64) {
		g->seqs[g->records] = r->seq;
		g->offsets[g->records] = r->offset;
	}
	g->records++;
	if (r->type != TLS13_TYPE_APPLICATION_DATA) {
		g->handshakes++;
		return;
	}
	if (!r->len)
		return;
	if (g->len + r->len > g->cap) {
		g->cap = (g->len + r->len) * 2;
		g->data = realloc(g->data, g->cap);
	}
	memcpy(g->data + g->len, r->plain, r->len);
	g->len += r->len;
}

enum feed_way { WHOLE, BYTES, PIECES };

static void feed(struct tls13_stream *st, const uint8_t *buf, size_t len, enum feed_way way,
		 struct got *g)
{
	size_t i = 0, step = 1;

	if (way == WHOLE) {
		tls13_stream__feed(st, buf, len, on_record, g);
		return;
	}
	while (i < len) {
		size_t n = way == BYTES ? 1 : step;

		if (n > len - i)
			n = len - i;
		tls13_stream__feed(st, buf + i, n, on_record, g);
		i += n;
		step = step * 7 % 5003 + 1; /* 1, 8, 57, 400, ... odd sizes across record ends */
	}
}

static void test_sealed(uint16_t suite)
{
	static uint8_t wire[1 << 20], plain[3 * TLS13_MAX_PLAINTEXT];
	size_t hash_len = suite == TLS13_AES_256_GCM_SHA384 ? 48 : 32,
	       sizes[] = { 1, 0, 100, 16383, 16384, 5000, 3 };
	struct sealer s = { .suite = suite, .secret_len = hash_len, .seq = 7 };
	size_t n = 0, want_len = 0, nrec = sizeof(sizes) / sizeof(sizes[0]), rec_at[8];
	struct tls13_stats stats;

	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)(i * 31 + 7);
	for (size_t i = 0; i < hash_len; i++)
		s.secret[i] = (uint8_t)(i + suite);
	sealer_keys(&s);
	/* A plaintext record first (as a ChangeCipherSpec is), then the encrypted ones. */
	memcpy(wire, "\x14\x03\x03\x00\x01\x01", 6);
	n = 6;
	for (size_t i = 0; i < nrec; i++) {
		rec_at[i] = n;
		n += seal(&s, TLS13_TYPE_APPLICATION_DATA, plain + want_len, sizes[i],
			  i == 2 ? 9 : 0, wire + n);
		want_len += sizes[i];
	}
	for (int way = WHOLE; way <= PIECES; way++) {
		for (int hint = 0; hint < 3; hint++) {
			uint64_t seq_hint = hint == 0 ? 7 : hint == 1 ? 7 + 40 : 0;
			struct tls13_stream *st =
			    tls13_stream__new(suite, s.secret, hash_len, seq_hint);
			struct got g = { 0 };

			CHECK(st, "stream of suite %04x", suite);
			if (!st)
				return;
			feed(st, wire, n, (enum feed_way)way, &g);
			tls13_stream__stats(st, &stats);
			CHECK(g.len == want_len && !memcmp(g.data, plain, want_len),
			      "suite %04x way %d hint %d: %zu of %zu bytes", suite, way, hint,
			      g.len, want_len);
			CHECK_INT(g.records, (int)nrec);
			CHECK_INT(g.seqs[0], 7);
			CHECK_INT(g.offsets[1], rec_at[1]);
			CHECK_INT(stats.skipped_plain, 1);
			CHECK_INT(stats.unauthenticated, 0);
			tls13_stream__free(st);
			free(g.data);
		}
	}
	/* Lost bytes in the fourth record (and a false header in the bytes after them): that
	 * record is gone, the rest comes back. */
	{
		struct tls13_stream *st = tls13_stream__new(suite, s.secret, hash_len, 7);
		size_t cut = rec_at[3] + 3, resume = rec_at[4] - 40;
		size_t head = sizes[0] + sizes[1] + sizes[2];
		struct got g = { 0 };
		uint8_t saved[5];

		memcpy(saved, wire + resume, 5);
		memcpy(wire + resume, "\x17\x03\x03\x00\x20", 5);
		feed(st, wire, cut, WHOLE, &g);
		tls13_stream__lost(st, resume - cut);
		feed(st, wire + resume, n - resume, PIECES, &g);
		tls13_stream__stats(st, &stats);
		CHECK_INT(g.records, (int)nrec - 1);
		CHECK_INT(g.seqs[3], 11);
		CHECK_INT(g.offsets[3], rec_at[4]);
		CHECK(g.len == want_len - sizes[3] && !memcmp(g.data, plain, head) &&
			  !memcmp(g.data + head, plain + head + sizes[3], g.len - head),
		      "suite %04x: after the loss", suite);
		CHECK_INT(stats.resyncs, 1);
		CHECK_INT(stats.lost_bytes, resume - cut);
		memcpy(wire + resume, saved, 5);
		tls13_stream__free(st);
		free(g.data);
	}
	/* A KeyUpdate: the records after it are sealed with the next secret from seq 0. */
	{
		struct tls13_stream *st = tls13_stream__new(suite, s.secret, hash_len, 0);
		struct sealer s2 = s;
		uint8_t next[48];
		struct got g = { 0 };

		s2.seq = 0;
		n = seal(&s2, TLS13_TYPE_APPLICATION_DATA, plain, 10, 0, wire);
		n += seal(&s2, TLS13_TYPE_HANDSHAKE, (const uint8_t *)"\x18\x00\x00\x01\x00", 5, 0,
			  wire + n);
		tls13__expand_label(suite, s2.secret, hash_len, "traffic upd", next, hash_len);
		memcpy(s2.secret, next, hash_len);
		sealer_keys(&s2);
		s2.seq = 0;
		n += seal(&s2, TLS13_TYPE_APPLICATION_DATA, plain + 10, 20, 0, wire + n);
		feed(st, wire, n, BYTES, &g);
		tls13_stream__stats(st, &stats);
		CHECK(g.len == 30 && !memcmp(g.data, plain, 30), "suite %04x: across a KeyUpdate",
		      suite);
		CHECK_INT(stats.key_updates, 1);
		CHECK_INT(g.handshakes, 1);
		tls13_stream__free(st);
		free(g.data);
	}
	/* Another key's records: after TLS13_GIVE_UP of them the stream only counts bytes. */
	{
		uint8_t other[48];
		struct tls13_stream *st;
		struct got g = { 0 };

		memcpy(other, s.secret, hash_len);
		other[0] ^= 1;
		st = tls13_stream__new(suite, other, hash_len, 0);
		s.seq = 0;
		n = 0;
		for (int i = 0; i < TLS13_GIVE_UP + 4; i++)
			n += seal(&s, TLS13_TYPE_APPLICATION_DATA, plain, 50, 0, wire + n);
		feed(st, wire, n, PIECES, &g);
		tls13_stream__stats(st, &stats);
		CHECK_INT(g.records, 0);
		CHECK_INT(stats.before_first, TLS13_GIVE_UP);
		CHECK_INT(stats.unauthenticated, 0);
		CHECK_INT(stats.given_up_bytes, n - TLS13_GIVE_UP * (5 + 51 + TLS13_TAG_LEN));
		tls13_stream__free(st);
	}
	/* Garbage, and records of another key: nothing delivered, nothing read out of bounds. */
	{
		struct tls13_stream *st = tls13_stream__new(suite, s.secret, hash_len, 7);
		struct got g = { 0 };

		for (size_t i = 0; i < 100000; i++)
			wire[i] = (uint8_t)(i * 2654435761u >> 13);
		feed(st, wire, 100000, PIECES, &g);
		CHECK_INT(g.records, 0);
		tls13_stream__free(st);
		free(g.data);
	}
}

/* The secret named label in an NSS key log. */
static int keylog_secret(const char *log, const char *label, uint8_t *out)
{
	const char *p = log;
	size_t l = strlen(label);

	while ((p = strstr(p, label))) {
		if ((p == log || p[-1] == '\n') && p[l] == ' ') {
			const char *sp = strchr(p + l + 1, ' ');

			return sp ? unhex(sp + 1, out, 48) : 0;
		}
		p += l;
	}
	return 0;
}

/* One direction of a real connection: its app data decrypted equals what was written. */
static void check_direction(const char *dir, const char *series, const char *log, uint16_t suite,
			    const char *name, const char *label)
{
	char path[512];
	uint8_t secret[48];
	int secret_len = keylog_secret(log, label, secret);
	size_t wire_len = 0, plain_len = 0;
	char *wire, *plain;
	struct got g = { 0 };
	struct tls13_stats stats = { 0 };
	struct tls13_stream *st;

	snprintf(path, sizeof(path), "%s/%s.wire", dir, name);
	wire = slurp(path, &wire_len);
	snprintf(path, sizeof(path), "%s/%s.plain", dir, name);
	plain = slurp(path, &plain_len);
	CHECK(wire && plain && secret_len > 0, "%s %s: wire, plaintext and %s", series, name,
	      label);
	st = wire && plain && secret_len > 0
		 ? tls13_stream__new(suite, secret, (size_t)secret_len, 0)
		 : NULL;
	if (st) {
		/* Bytes as read(2) may return them: in pieces that do not follow records. */
		feed(st, (const uint8_t *)wire, wire_len, PIECES, &g);
		tls13_stream__stats(st, &stats);
		CHECK(g.len == plain_len && !memcmp(g.data, plain, plain_len),
		      "%s %s: %zu of %zu bytes decrypted (%llu records, %llu not authenticated)",
		      series, name, g.len, plain_len, (unsigned long long)stats.records,
		      (unsigned long long)(stats.unauthenticated + stats.before_first));
		/* The handshake's encrypted records are under the handshake keys, before the first. */
		CHECK(stats.before_first >= 1, "%s %s: handshake records skipped", series, name);
		CHECK_INT(stats.unauthenticated, 0);
		CHECK_INT(stats.resyncs, 0);
		tls13_stream__free(st);
		/* Met mid-way, as a tracer attached to a running connection meets it: from the
		 * middle of a record, the sequence number only roughly known (0 for the ~13th). */
		st = tls13_stream__new(suite, secret, (size_t)secret_len, 0);
		free(g.data);
		memset(&g, 0, sizeof(g));
		tls13_stream__lost(st, wire_len / 2);
		feed(st, (const uint8_t *)wire + wire_len / 2, wire_len - wire_len / 2, PIECES, &g);
		tls13_stream__stats(st, &stats);
		CHECK(g.len > plain_len / 4 && g.len < plain_len &&
			  !memcmp(g.data, plain + plain_len - g.len, g.len),
		      "%s %s mid-way: the last %zu of %zu bytes", series, name, g.len, plain_len);
		CHECK_INT(stats.resyncs, 1);
		tls13_stream__free(st);
	}
	free(g.data);
	free(wire);
	free(plain);
}

static void test_go(const char *fixtures)
{
	int tried = 0;
	DIR *d = opendir(fixtures);
	struct dirent *e;

	CHECK(d, "Go fixtures %s: %s (tests/gofixtures/build)", fixtures, strerror(errno));
	while (d && (e = readdir(d))) {
		char prog[512], dir[] = "/tmp/bindtrace-tls13.XXXXXX", path[600], *log, *suite_s;
		struct stat st;
		pid_t pid;
		int status = -1;
		uint16_t suite;

		if (strncmp(e->d_name, "go1.", 4) || !strcmp(e->d_name, "go1.16"))
			continue;
		snprintf(prog, sizeof(prog), "%s/%s/static/tlsfix", fixtures, e->d_name);
		if (stat(prog, &st) || !mkdtemp(dir))
			continue;
		pid = fork();
		if (pid == 0) {
			execl(prog, prog, "keylog", "-out", dir, (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s keylog exit %d", prog,
		      status);
		snprintf(path, sizeof(path), "%s/keylog", dir);
		log = slurp(path, NULL);
		snprintf(path, sizeof(path), "%s/suite", dir);
		suite_s = slurp(path, NULL);
		suite = suite_s ? (uint16_t)strtoul(suite_s, NULL, 16) : 0;
		CHECK(log && suite >= 0x1301 && suite <= 0x1303, "%s: key log and a TLS 1.3 suite",
		      e->d_name);
		if (log && suite) {
			check_direction(dir, e->d_name, log, suite, "c2s",
					"CLIENT_TRAFFIC_SECRET_0");
			check_direction(dir, e->d_name, log, suite, "s2c",
					"SERVER_TRAFFIC_SECRET_0");
			tried++;
		}
		free(log);
		free(suite_s);
		for (const char *f = "c2s.wire\0s2c.wire\0c2s.plain\0s2c.plain\0keylog\0suite\0";
		     *f; f += strlen(f) + 1) {
			snprintf(path, sizeof(path), "%s/%s", dir, f);
			unlink(path);
		}
		rmdir(dir);
	}
	if (d)
		closedir(d);
	CHECK(tried >= 2, "real Go connections decrypted with %d toolchains' fixtures", tried);
	printf("tls13: real Go TLS 1.3 connections of %d toolchains decrypted\n", tried);
}

int main(int argc, char **argv)
{
	const char *fixtures = argc > 1 ? argv[1] : getenv("BINDTRACE_GOFIXTURES");

	test_rfc8448();
	test_sealed(TLS13_AES_128_GCM_SHA256);
	test_sealed(TLS13_AES_256_GCM_SHA384);
	test_sealed(TLS13_CHACHA20_POLY1305_SHA256);
	if (!fixtures) {
		/* Not a pass: the checks against real Go connections did not run. */
		int rc = check_summary("tls13");

		printf("skip: no Go fixtures given (BINDTRACE_GOFIXTURES or an argument): real Go "
		       "connections were not decrypted\n");
		return rc ? rc : 77;
	}
	test_go(fixtures);
	return check_summary("tls13");
}
