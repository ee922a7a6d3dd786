/* Minimal table-driven test support for the unit tests: CHECK records a failure with its place and
 * goes on; check_summary() prints "N passed, N failed" and gives the exit status. */
#ifndef BINDTRACE_CHECK_H
#define BINDTRACE_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (cond) {                                                                        \
			check_passed++;                                                            \
		} else {                                                                           \
			check_failed++;                                                            \
			fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond);            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

#define CHECK_STR(got, want)                                                                       \
	CHECK((got) && strcmp((got), (want)) == 0, "got \"%s\", want \"%s\"",                      \
	      (got) ? (got) : "(null)", (want))

#define CHECK_INT(got, want)                                                                       \
	CHECK((long long)(got) == (long long)(want), "got %lld, want %lld", (long long)(got),      \
	      (long long)(want))

static inline int check_summary(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
