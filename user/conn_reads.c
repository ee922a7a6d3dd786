/* Read times by connection (conn_reads.h): open addressing over a fixed table, each slot a ring
 * of the connection's last read times. */
#include <stdbool.h>
#include <stdlib.h>

#include "conn_reads.h"

#define PROBE_SLOTS 8

struct conn_slot {
	pid_t pid; /* 0: free */
	uint64_t conn;
	uint64_t n; /* reads seen; the ring holds the last CONN_READS_KEPT */
	uint64_t ts[CONN_READS_KEPT];
};

struct conn_reads {
	struct conn_slot *slots; /* CONN_READS_CONNS, allocated at the first read */
};

static size_t slot_hash(pid_t pid, uint64_t conn)
{
	uint64_t h = (conn ^ ((uint64_t)(uint32_t)pid << 32)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 40) % CONN_READS_CONNS;
}

static uint64_t slot_latest(const struct conn_slot *s)
{
	return s->n ? s->ts[(s->n - 1) % CONN_READS_KEPT] : 0;
}

struct conn_reads *conn_reads__new(void)
{
	return calloc(1, sizeof(struct conn_reads));
}

void conn_reads__free(struct conn_reads *cr)
{
	if (!cr)
		return;
	free(cr->slots);
	free(cr);
}

static struct conn_slot *slot_find(const struct conn_reads *cr, pid_t pid, uint64_t conn)
{
	size_t h = slot_hash(pid, conn), i;

	if (!cr->slots)
		return NULL;
	for (i = 0; i < PROBE_SLOTS; i++) {
		struct conn_slot *s = &cr->slots[(h + i) % CONN_READS_CONNS];

		if (s->pid == pid && s->conn == conn)
			return s;
	}
	return NULL;
}

void conn_reads__add(struct conn_reads *cr, pid_t pid, uint64_t conn, uint64_t ts_ns)
{
	struct conn_slot *s = NULL, *stalest = NULL;
	size_t h, i;

	if (!pid)
		return;
	if (!cr->slots) {
		cr->slots = calloc(CONN_READS_CONNS, sizeof(*cr->slots));
		if (!cr->slots)
			return;
	}
	s = slot_find(cr, pid, conn);
	if (!s) {
		h = slot_hash(pid, conn);
		for (i = 0; i < PROBE_SLOTS; i++) {
			struct conn_slot *c = &cr->slots[(h + i) % CONN_READS_CONNS];

			if (!c->pid) {
				stalest = c;
				break;
			}
			if (!stalest || slot_latest(c) < slot_latest(stalest))
				stalest = c;
		}
		s = stalest;
		s->pid = pid;
		s->conn = conn;
		s->n = 0;
	}
	s->ts[s->n++ % CONN_READS_KEPT] = ts_ns;
}

uint64_t conn_reads__last_before(const struct conn_reads *cr, pid_t pid, uint64_t conn,
				 uint64_t ts_ns)
{
	const struct conn_slot *s = slot_find(cr, pid, conn);
	uint64_t i, kept;

	if (!s)
		return 0;
	kept = s->n < CONN_READS_KEPT ? s->n : CONN_READS_KEPT;
	for (i = 1; i <= kept; i++) {
		uint64_t t = s->ts[(s->n - i) % CONN_READS_KEPT];

		if (t <= ts_ns)
			return t;
	}
	return 0;
}
