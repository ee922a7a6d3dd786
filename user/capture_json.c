/* capture --json's data and gap lines, written by hand. See capture_json.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "capture_json.h"
#include "endpoint.h"
#include "util.h"

/* The JSON integers are jansson's json_int_t (long long): a value is printed as that. */
static char *put_int(char *o, int64_t v)
{
	return o + util__fmt_ll(o, (long long)v);
}

static char *put_str(char *o, const char *s)
{
	size_t n = strlen(s);

	memcpy(o, s, n);
	return o + n;
}

/* A string that needs no escaping, in quotes. */
static char *put_plain(char *o, const char *s)
{
	*o++ = '"';
	o = put_str(o, s);
	*o++ = '"';
	return o;
}

int capture_json__quote(const char *s, char *out, size_t size)
{
	json_t *j = util__json_string(s);
	size_t n = j ? json_dumpb(j, out, size, JSON_ENCODE_ANY | JSON_COMPACT) : 0;

	json_decref(j);
	if (!n || n >= size) {
		snprintf(out, size, "\"?\"");
		return j ? -ENOSPC : -ENOMEM;
	}
	out[n] = '\0';
	return 0;
}

size_t capture_json__data_size(size_t len)
{
	/* keys, punctuation and 7 integers of at most 20 digits and a sign: under 384 */
	return 384 + CAPTURE_JSON_QUOTED_COMM + 2 * ENDPOINT_STRLEN + 4 * ((len + 2) / 3);
}

static const char *dir_name(const struct data_event *e)
{
	return e->dir == DIR_OUT ? "out" : "in";
}

char *capture_json__data(char *out, const struct data_event *e, int64_t wall_offset_ns,
			 const char *comm_quoted, const char *laddr, const char *raddr)
{
	char *o = out;

	o = put_str(o, "{\"ts_ns\":");
	o = put_int(o, (int64_t)e->hdr.ts_ns);
	o = put_str(o, ",\"wall_ns\":");
	o = put_int(o, (int64_t)(e->hdr.ts_ns + (uint64_t)wall_offset_ns));
	o = put_str(o, ",\"pid\":");
	o = put_int(o, (int)e->hdr.pid);
	o = put_str(o, ",\"tid\":");
	o = put_int(o, (int)e->hdr.tid);
	o = put_str(o, ",\"comm\":");
	o = put_str(o, comm_quoted);
	o = put_str(o, ",\"conn\":");
	o = put_int(o, (int64_t)e->conn);
	o = put_str(o, ",\"fd\":");
	o = put_int(o, e->fd);
	o = put_str(o, ",\"laddr\":");
	o = put_plain(o, laddr);
	o = put_str(o, ",\"raddr\":");
	o = put_plain(o, raddr);
	o = put_str(o, ",\"dir\":");
	o = put_plain(o, dir_name(e));
	o = put_str(o, ",\"source\":");
	o = put_plain(o, e->source == SOURCE_TLS ? "tls" : "tcp");
	o = put_str(o, ",\"offset\":");
	o = put_int(o, (int64_t)e->offset);
	o = put_str(o, ",\"len\":");
	o = put_int(o, (int)e->len);
	o = put_str(o, ",\"data\":\"");
	o += util__base64_encode(e->data, e->len, o);
	return put_str(o, "\"}\n");
}

char *capture_json__gap(char *out, const struct data_event *e, uint64_t missed)
{
	char *o = out;

	o = put_str(o, "{\"gap\":");
	o = put_int(o, (int64_t)missed);
	o = put_str(o, ",\"ts_ns\":");
	o = put_int(o, (int64_t)e->hdr.ts_ns);
	o = put_str(o, ",\"pid\":");
	o = put_int(o, (int)e->hdr.pid);
	o = put_str(o, ",\"conn\":");
	o = put_int(o, (int64_t)e->conn);
	o = put_str(o, ",\"dir\":");
	o = put_plain(o, dir_name(e));
	o = put_str(o, ",\"offset\":");
	o = put_int(o, (int64_t)(e->offset - missed));
	return put_str(o, "}\n");
}
