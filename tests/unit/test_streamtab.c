/* The stream table: entries stay findable through any order of inserts and deletes (linear
 * probing with backward-shift deletion), against a plain array as the model. */
#include <stdlib.h>

#include "check.h"
#include "streams.h"

#define CAP 64
#define KEYS 40 /* under the table's three-quarter limit */

int main(void)
{
	struct streams t;
	bool present[KEYS] = { false };
	unsigned seed = 12345;

	CHECK_INT(streams__init(&t, CAP), 0);
	for (int round = 0; round < 20000; round++) {
		seed = seed * 1103515245 + 12345;
		int k = (int)((seed >> 8) % KEYS);
		/* Keys that collide: few pids, conns spread, both directions. */
		uint32_t pid = 100 + (uint32_t)(k % 3);
		uint64_t conn = 1000 + (uint64_t)k / 2;
		uint8_t dir = (uint8_t)(k & 1);
		struct stream *st = streams__get(&t, pid, conn, dir);

		CHECK(st != NULL, "round %d: key %d has a slot", round, k);
		if (!st)
			break;
		if (present[k]) {
			CHECK(st->events == (uint64_t)k + 1,
			      "round %d: key %d found, not a fresh slot", round, k);
			if ((seed >> 20) & 1) {
				streams__del(&t, st);
				present[k] = false;
			}
		} else {
			CHECK(st->events == 0, "round %d: key %d is fresh", round, k);
			st->events = (uint64_t)k + 1;
			present[k] = true;
		}
		size_t n = 0;
		for (int i = 0; i < KEYS; i++)
			n += present[i];
		CHECK(t.count == n, "round %d: count %zu, want %zu", round, t.count, n);
	}
	/* Every key still present is found where it is. */
	for (int k = 0; k < KEYS; k++) {
		if (!present[k])
			continue;
		struct stream *st = streams__get(&t, 100 + (uint32_t)(k % 3),
						 1000 + (uint64_t)k / 2, (uint8_t)(k & 1));
		CHECK(st && st->events == (uint64_t)k + 1, "key %d at the end", k);
	}
	streams__free(&t);
	return check_summary("streamtab");
}
