/* The stream table: entries stay findable through any order of inserts and deletes (linear
 * probing with backward-shift deletion), against a plain array as the model; it starts small,
 * doubles as it fills, keeping every entry, and refuses past three quarters of its maximum. */
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

	/* Growth: a table for 65536 starts at 64 slots and doubles with its entries. */
	CHECK_INT(streams__init(&t, 65536), 0);
	CHECK_INT(t.cap, 64);
	for (uint64_t k = 0; k < 1000; k++) {
		struct stream *st = streams__get(&t, 7, 5000 + k * 977, 0);

		CHECK(st && !st->events, "conn %llu fresh", (unsigned long long)k);
		if (st)
			st->events = k + 1;
	}
	CHECK_INT(t.count, 1000);
	CHECK_INT(t.cap, 2048); /* 1000 fit in three quarters of 2048, not of 1024 */
	for (uint64_t k = 0; k < 1000; k++) {
		struct stream *st = streams__find(&t, 7, 5000 + k * 977, 0);

		CHECK(st && st->events == k + 1, "conn %llu kept through growth",
		      (unsigned long long)k);
		if (st && k % 2)
			streams__del(&t, st);
	}
	CHECK_INT(t.count, 500);
	for (uint64_t k = 0; k < 1000; k++)
		CHECK((streams__find(&t, 7, 5000 + k * 977, 0) != NULL) == !(k % 2),
		      "conn %llu after deletes", (unsigned long long)k);
	streams__free(&t);
	/* The maximum: three quarters of it, then NULL. */
	CHECK_INT(streams__init(&t, 256), 0);
	int got = 0;
	for (uint64_t k = 0; k < 300; k++)
		got += streams__get(&t, 1, k, 1) != NULL;
	CHECK_INT(got, 192);
	CHECK_INT(t.cap, 256);
	streams__free(&t);
	return check_summary("streamtab");
}
