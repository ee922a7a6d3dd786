/* SHA-256 of a file, as the identity of a traced binary (binaries.json, the report) that anyone
 * can check with sha256sum. Reads the file whole, in 64 KiB pieces; safe to call from several
 * threads at once. */
#ifndef BINDTRACE_SHA256_H
#define BINDTRACE_SHA256_H

#include <stdint.h>

/* hex: 64 lowercase hex digits and a NUL; size: the bytes read (may be NULL). 0 or -errno. */
int sha256__file(const char *path, char hex[65], uint64_t *size);

#endif
