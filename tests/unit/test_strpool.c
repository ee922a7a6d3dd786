/* strpool: one copy per distinct text, cut as a char[max] would cut it, freed with its last
 * reference (the pool empty again after a churn of 200,000 gets and puts over a ring, as the
 * correlator's observations use it). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "strpool.h"

static void check_sharing(void)
{
	struct strpool *p = strpool__new();
	const char *a, *b, *c, *e;

	CHECK(p != NULL, "a pool");
	a = strpool__get(p, "node-a", 254);
	b = strpool__get(p, "node-a", 254);
	c = strpool__get(p, "node-b", 254);
	CHECK(a == b, "one copy of the same text");
	CHECK(a != c && strcmp(c, "node-b") == 0, "another text, another copy");
	CHECK_INT(strpool__count(p), 2);
	e = strpool__get(p, "", 254);
	CHECK(e && !*e, "the empty string");
	CHECK_INT(strpool__count(p), 2);
	CHECK(strpool__get(p, NULL, 10) && !*strpool__get(p, NULL, 10), "NULL reads as \"\"");
	/* cut as util__copy into char[max] cuts: max - 1 bytes */
	b = strpool__get(p, "node-abc", 5);
	CHECK_STR(b, "node");
	CHECK_INT(strpool__count(p), 3);
	strpool__put(p, b);
	strpool__put(p, a);
	CHECK_INT(strpool__count(p), 2);
	b = strpool__get(p, "node-a", 254);
	CHECK_STR(b, "node-a");
	CHECK(b == a, "still the one copy while a reference is held");
	strpool__put(p, a);
	strpool__put(p, b);
	strpool__put(p, c);
	strpool__put(p, e);
	strpool__put(p, NULL);
	CHECK_INT(strpool__count(p), 0);
	CHECK_INT(strpool__bytes(p), 0);
	strpool__free(p);
}

/* A ring of 16384 slots, three strings each, refilled 4 times over with 5000 distinct keys and
 * 7 node names: held strings never exceed what the ring refers to, and none are left. */
static void check_ring(void)
{
	enum { SLOTS = 16384, PER = 3 };
	static const char *ring[SLOTS][PER];
	struct strpool *p = strpool__new();
	char text[64];
	size_t i, j, most = 0;

	for (i = 0; i < 4 * SLOTS; i++) {
		const char **slot = ring[i % SLOTS];

		for (j = 0; j < PER; j++)
			strpool__put(p, slot[j]);
		snprintf(text, sizeof(text), "/registry/pods/default/pod-%zu", i % 5000);
		slot[0] = strpool__get(p, text, 512);
		snprintf(text, sizeof(text), "node-%zu", i % 7);
		slot[1] = strpool__get(p, text, 254);
		slot[2] = strpool__get(p, i % 2 ? "kube-scheduler/v1.37.2" : "", 128);
		CHECK(slot[0] && slot[1] && slot[2], "got %zu", i);
		if (strpool__count(p) > most)
			most = strpool__count(p);
	}
	CHECK(most <= 5000 + 7 + 1, "at most the distinct texts held: %zu", most);
	CHECK_STR(ring[123][0], "/registry/pods/default/pod-4275"); /* i = 3 * 16384 + 123 */
	CHECK_STR(ring[123][2], "kube-scheduler/v1.37.2");
	for (i = 0; i < SLOTS; i++)
		for (j = 0; j < PER; j++)
			strpool__put(p, ring[i][j]);
	CHECK_INT(strpool__count(p), 0);
	strpool__free(p);
}

int main(void)
{
	check_sharing();
	check_ring();
	return check_summary("strpool");
}
