/* gotls: the table of crypto/tls layouts against what reflect says in real builds (tlsfix
 * layout, one per Go fixture toolchain: directory in argv[1] or $BINDTRACE_GOFIXTURES), and the
 * refusal of releases it does not know. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "gotls.h"

static void test_unknown(void)
{
	struct tls_layout l;

	CHECK_INT(gotls__layout(1, 20, &l), -ENOTSUP);
	CHECK_INT(gotls__layout(1, 27, &l), -ENOTSUP);
	CHECK_INT(gotls__layout(2, 26, &l), -ENOTSUP);
	CHECK_INT(gotls__layout(1, 26, &l), 0);
}

static long field(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);

	return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

static void test_fixtures(const char *fixtures)
{
	DIR *d = opendir(fixtures);
	struct dirent *e;
	int checked = 0;

	CHECK(d, "Go fixtures %s: %s (tests/gofixtures/build)", fixtures, strerror(errno));
	while (d && (e = readdir(d))) {
		char prog[512], cmd[600], line[1024] = "";
		struct tls_layout l;
		json_error_t err;
		struct stat st;
		json_t *o;
		FILE *p;
		int minor;

		if (sscanf(e->d_name, "go1.%d", &minor) != 1 || minor < 21)
			continue;
		snprintf(prog, sizeof(prog), "%s/%s/static/tlsfix", fixtures, e->d_name);
		if (stat(prog, &st))
			continue;
		snprintf(cmd, sizeof(cmd), "'%s' layout", prog);
		p = popen(cmd, "r");
		CHECK(p && fgets(line, sizeof(line), p), "%s layout", prog);
		if (p)
			pclose(p);
		o = json_loads(line, 0, &err);
		CHECK(o, "%s layout: %s", e->d_name, err.text);
		CHECK(!gotls__layout(1, minor, &l), "%s is in the table", e->d_name);
		if (o) {
			CHECK_INT(field(o, "in"), l.conn_in);
			CHECK_INT(field(o, "out"), l.conn_out);
			CHECK_INT(field(o, "vers"), l.conn_vers);
			CHECK_INT(field(o, "cipherSuite"), l.conn_cipher_suite);
			CHECK_INT(field(o, "half_conn.version"), l.half_version);
			CHECK_INT(field(o, "half_conn.seq"), l.half_seq);
			CHECK_INT(field(o, "half_conn.trafficSecret"), l.half_traffic_secret);
			/* out follows in: the two halves are one halfConn apart. */
			CHECK_INT(field(o, "half_conn_size"), l.conn_out - l.conn_in);
			json_decref(o);
			checked++;
		}
	}
	if (d)
		closedir(d);
	CHECK(checked >= 2, "layouts of %d toolchains checked", checked);
	printf("gotls: the layouts of %d Go toolchains checked\n", checked);
}

int main(int argc, char **argv)
{
	const char *fixtures = argc > 1 ? argv[1] : getenv("BINDTRACE_GOFIXTURES");

	test_unknown();
	if (!fixtures) {
		int rc = check_summary("gotls");

		printf(
		    "skip: no Go fixtures given (BINDTRACE_GOFIXTURES or an argument): no layout "
		    "was checked against a real build\n");
		return rc ? rc : 77;
	}
	test_fixtures(fixtures);
	return check_summary("gotls");
}
