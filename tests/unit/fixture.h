/* Reads a capture in the shape of `bindtrace capture --json` (a test fixture) into records, for
 * tests that feed decoders themselves: per connection, with the client side given or not. */
#ifndef BINDTRACE_TEST_FIXTURE_H
#define BINDTRACE_TEST_FIXTURE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "util.h"

struct fixture_record {
	uint64_t conn;
	int dir;
	int client_dir;
	uint64_t offset;
	uint64_t ts;
	uint8_t *data;
	size_t len;
};

static inline int fixture__load(const char *path, struct fixture_record *recs, int max)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	if (!f)
		return -1;
	while (n < max && getline(&line, &cap, f) > 1) {
		json_t *o = json_loads(line, 0, NULL);
		const char *data = json_string_value(json_object_get(o, "data"));
		const char *client = json_string_value(json_object_get(o, "client"));
		const char *dir = json_string_value(json_object_get(o, "dir"));
		if (!data || !dir) {
			json_decref(o); /* gap records and anything else: not used here */
			continue;
		}
		struct fixture_record *r = &recs[n++];
		r->conn = (uint64_t)json_integer_value(json_object_get(o, "conn"));
		r->dir = !strcmp(dir, "in");
		r->client_dir = client && !strcmp(client, "remote") ? CONN_DIR_IN : CONN_DIR_OUT;
		r->offset = (uint64_t)json_integer_value(json_object_get(o, "offset"));
		r->ts = (uint64_t)json_integer_value(json_object_get(o, "ts_ns"));
		r->data = malloc(strlen(data) / 4 * 3 + 4);
		if (!r->data) {
			json_decref(o);
			n--;
			break;
		}
		long len = util__base64_decode(data, strlen(data), r->data);
		r->len = len > 0 ? (size_t)len : 0;
		json_decref(o);
	}
	free(line);
	fclose(f);
	return n;
}

static inline void fixture__free(struct fixture_record *recs, int n)
{
	for (int i = 0; i < n; i++)
		free(recs[i].data);
}

#endif
