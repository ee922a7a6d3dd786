/* A whole file read into memory, for the tests that compare or search what the outputs wrote. */
#ifndef BINDTRACE_TEST_SLURP_H
#define BINDTRACE_TEST_SLURP_H

#include <stdio.h>
#include <stdlib.h>

/* The file's bytes, NUL-terminated (len without the NUL); NULL with errno set when it cannot be
 * opened or read. The caller frees. */
static inline char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *more;
	size_t cap = 0, n = 0, got;

	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			more = realloc(buf, cap);
			if (!more) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = more;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
	} while (got);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

#endif
