/* conn_reads: the last read(2) of a connection that returned at or before a time, per (pid,
 * connection); none when it was pushed out of the connection's ring or never seen; a full table
 * gives the least recently read connection's slot to a new one. */
#include "check.h"
#include "conn_reads.h"

int main(void)
{
	struct conn_reads *cr = conn_reads__new();
	uint64_t i;

	CHECK(cr != NULL, "new");
	if (!cr)
		return check_summary("conn_reads");
	CHECK_INT(conn_reads__last_before(cr, 1, 7, 100), 0);
	conn_reads__add(cr, 1, 7, 10);
	conn_reads__add(cr, 1, 7, 20);
	conn_reads__add(cr, 1, 8, 25);
	conn_reads__add(cr, 2, 7, 26);
	conn_reads__add(cr, 1, 7, 30);
	CHECK_INT(conn_reads__last_before(cr, 1, 7, 5), 0);
	CHECK_INT(conn_reads__last_before(cr, 1, 7, 10), 10);
	CHECK_INT(conn_reads__last_before(cr, 1, 7, 29), 20);
	CHECK_INT(conn_reads__last_before(cr, 1, 7, 1000), 30);
	CHECK_INT(conn_reads__last_before(cr, 1, 8, 1000), 25);
	CHECK_INT(conn_reads__last_before(cr, 2, 7, 1000), 26);
	CHECK_INT(conn_reads__last_before(cr, 3, 7, 1000), 0);

	/* 40 more reads of (1, 7): the first ones are pushed out, and nothing before the oldest
	 * kept is claimed. */
	for (i = 0; i < 40; i++)
		conn_reads__add(cr, 1, 7, 100 + i);
	CHECK_INT(conn_reads__last_before(cr, 1, 7, 99), 0);
	CHECK_INT(conn_reads__last_before(cr, 1, 7, 100 + 40 - CONN_READS_KEPT),
		  100 + 40 - CONN_READS_KEPT);
	CHECK_INT(conn_reads__last_before(cr, 1, 7, 1000), 139);

	/* Many more connections than the table holds: each lookup is its own or nothing, and a
	 * connection read just now is still there. */
	for (i = 0; i < 3 * CONN_READS_CONNS; i++) {
		conn_reads__add(cr, 5, 1000 + i, 2000 + i);
		conn_reads__add(cr, 1, 7, 2000 + i);
	}
	CHECK_INT(conn_reads__last_before(cr, 5, 1000 + 3 * CONN_READS_CONNS - 1, 1u << 30),
		  2000 + 3 * CONN_READS_CONNS - 1);
	CHECK_INT(conn_reads__last_before(cr, 1, 7, 1u << 30), 2000 + 3 * CONN_READS_CONNS - 1);
	for (i = 0; i < 3 * CONN_READS_CONNS; i++) {
		uint64_t got = conn_reads__last_before(cr, 5, 1000 + i, 1u << 30);

		if (got && got != 2000 + i)
			CHECK(0, "conn %llu: got %llu", (unsigned long long)(1000 + i),
			      (unsigned long long)got);
	}
	conn_reads__free(cr);
	return check_summary("conn_reads");
}
