/* The correlator's state stays bounded over a long run, and nothing leaves it unsaid:
 * - more binds in flight than CORRELATOR_MAX_OPEN (their answers never seen): the table holds
 *   at most that many, the oldest are closed early as they are, counted (evicted) and handed to
 *   the outputs, none lost;
 * - binds never answered close on their own after max_open_ns;
 * - a bind answered but whose etcd watch event never comes closes at most 10 s after the answer;
 * - many rounds of binds opened and closed leave nothing open, and the ring of observations
 *   (scheduler bind calls with their citations) does not grow (ASan's leak check at exit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "correlate.h"

#define MS 1000000ull
#define S 1000000000ull
#define T0 (1000 * S)
#define MAX_OPEN_NS (10 * S)
#define LINGER_NS (500 * MS)

struct seen {
	uint64_t binds, unknown, bound;
};

static void on_bind(const struct bind_timeline *t, void *ctx)
{
	struct seen *seen = ctx;

	seen->binds++;
	if (t->result == BIND_RESULT_UNKNOWN)
		seen->unknown++;
	else if (t->result == BIND_RESULT_BOUND)
		seen->bound++;
}

static struct decoded_msg msg;

/* The scheduler's POST pods/NAME/binding (request) or the apiserver's 201 read by it. */
static void binding(struct correlator *c, int pod, bool response, uint64_t ts)
{
	struct actor sched = { .pid = 100, .role = ROLE_SCHEDULER, .conn = 7 };

	memset(&msg, 0, sizeof(msg));
	msg.kind = response ? DECODED_RESPONSE : DECODED_REQUEST;
	msg.proto = CONN_PROTO_H2;
	msg.dir = response ? CONN_DIR_IN : CONN_DIR_OUT;
	msg.stream_id = 1 + 2 * (uint32_t)pod;
	msg.ts_first_ns = ts;
	msg.ts_last_ns = ts + 10000;
	msg.http.grpc_status = -1;
	snprintf(msg.http.method, sizeof(msg.http.method), "POST");
	snprintf(msg.http.path, sizeof(msg.http.path),
		 "/api/v1/namespaces/default/pods/p-%d/binding", pod);
	msg.body_kind = BODY_K8S;
	if (response) {
		msg.http.status = 201;
		msg.body.k8s.kind = K8S_KIND_STATUS;
		msg.body.k8s.status.code = 201;
	} else {
		msg.body.k8s.kind = K8S_KIND_BINDING;
		snprintf(msg.body.k8s.binding.target_name, sizeof(msg.body.k8s.binding.target_name),
			 "node-1");
	}
	correlator__message(c, &sched, &msg);
}

static struct correlator *make(struct seen *seen)
{
	struct correlator_options opt = {
		.linger_ns = LINGER_NS,
		.max_open_ns = MAX_OPEN_NS,
		.attach_ns = T0 - 100 * S,
		.have_scheduler = true,
	};

	memset(seen, 0, sizeof(*seen));
	return correlator__new(&opt, on_bind, seen);
}

/* More in flight than the table holds: the oldest are closed early, counted, not lost. */
static void test_table_full(void)
{
	const int extra = 300, n = CORRELATOR_MAX_OPEN + extra;
	struct correlator_stats st;
	struct seen seen;
	struct correlator *c = make(&seen);
	uint64_t most = 0;
	int i;

	CHECK(c != NULL, "correlator");
	if (!c)
		return;
	for (i = 0; i < n; i++) {
		binding(c, i, false, T0 + (uint64_t)i * 100000); /* 0.1 ms apart: 0.8 s in all */
		correlator__stats(c, &st);
		if (st.open > most)
			most = st.open;
	}
	correlator__stats(c, &st);
	CHECK(most <= CORRELATOR_MAX_OPEN, "at most %d open at once, saw %llu", CORRELATOR_MAX_OPEN,
	      (unsigned long long)most);
	CHECK_INT(st.open, CORRELATOR_MAX_OPEN);
	CHECK_INT(st.evicted, extra);
	CHECK_INT(st.binds, n);
	CHECK_INT(seen.binds, extra); /* the evicted ones reached the outputs */
	CHECK_INT(seen.unknown, extra);
	/* Their time is not up yet: nothing else closes. */
	correlator__tick(c, T0 + S, false);
	correlator__stats(c, &st);
	CHECK_INT(st.open, CORRELATOR_MAX_OPEN);
	/* Past max_open_ns, every one closes on its own: the table is empty again. */
	correlator__tick(c, T0 + S + MAX_OPEN_NS, false);
	correlator__stats(c, &st);
	CHECK_INT(st.open, 0);
	CHECK_INT(seen.binds, n);
	CHECK_INT(st.evicted, extra);
	correlator__free(c);
}

/* Answered, but the apiserver's watch of etcd never shows the write: closed 10 s after. */
static void test_answered_without_watch_event(void)
{
	struct correlator_stats st;
	struct seen seen;
	struct correlator *c = make(&seen);

	CHECK(c != NULL, "correlator");
	if (!c)
		return;
	binding(c, 1, false, T0);
	binding(c, 1, true, T0 + 2 * MS);
	correlator__tick(c, T0 + 9 * S, false);
	correlator__stats(c, &st);
	CHECK_INT(st.open, 1); /* still waiting for the etcd watch event */
	correlator__tick(c, T0 + 2 * MS + 10 * S + 100 * MS, false);
	correlator__stats(c, &st);
	CHECK_INT(st.open, 0);
	CHECK_INT(seen.bound, 1);
	correlator__free(c);
}

/* Binds in rounds, each with the scheduler's bind call (an observation with a citation; more of
 * them than the ring of observations holds): nothing stays open and the ring does not grow.
 * Each bind closed looks through the whole ring (16384 observations), so the rounds are kept
 * small: the ring wraps with the calls of other pods, which cost nothing to close. */
static void test_rounds(void)
{
	const int rounds = 4, per_round = 200, other_calls = 17000;
	struct correlator_stats st;
	struct citation cit = { 0 };
	struct seen seen;
	struct correlator *c = make(&seen);
	uint64_t now = T0;
	int r, i;

	CHECK(c != NULL, "correlator");
	if (!c)
		return;
	/* Calls of binds never seen: the ring wraps, each citation freed as its slot is reused. */
	for (i = 0; i < other_calls; i++) {
		char name[32];

		snprintf(name, sizeof(name), "other-%d", i);
		cit.mono_ns = now;
		correlator__call(c, "default", name, &cit);
		now += 1000;
	}
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < per_round; i++) {
			char name[32];

			snprintf(name, sizeof(name), "p-%d", i);
			cit.mono_ns = now;
			correlator__call(c, "default", name, &cit);
			binding(c, i, false, now);
			if (i % 10 == 0) /* most answers unseen */
				binding(c, i, true, now + MS);
			now += MS;
		}
		now += MAX_OPEN_NS + S;
		correlator__tick(c, now, false);
		correlator__stats(c, &st);
		if (st.open)
			break;
	}
	CHECK_INT(st.open, 0);
	CHECK_INT(st.binds, (uint64_t)rounds * per_round);
	CHECK_INT(seen.binds, (uint64_t)rounds * per_round);
	CHECK_INT(st.evicted, 0);
	correlator__free(c);
}

int main(void)
{
	test_table_full();
	test_answered_without_watch_event();
	test_rounds();
	return check_summary("test_correlate_bounds");
}
