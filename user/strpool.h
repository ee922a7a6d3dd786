/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Interned, reference-counted strings.
 *
 * The correlator keeps its last 16384 observations, and most of their text repeats: a bind's
 * dozens of observations share one pod key, and node names, user agents and request paths come
 * from a handful of values. Held as fixed arrays they cost 1.5 KiB an observation (24 MiB in
 * all, whatever the traffic); held here each distinct string is stored once, for as long as
 * something refers to it.
 *
 * Contract:
 * - strpool__get() returns a pointer to a NUL-terminated copy of src cut to at most max - 1
 *   bytes (as util__copy() into a char[max] would), shared with every other holder of the same
 *   text, and takes one reference. The empty string (and NULL src) gives a static "" that holds
 *   no reference. NULL only when memory runs out (errno ENOMEM); callers treat it as "".
 * - strpool__put() drops one reference; the text is freed with its last. NULL and "" are
 *   accepted and do nothing. Putting a pointer not got from this pool is undefined.
 * - The pool's size is bounded by what is held: n live references hold at most n strings.
 * - Single-threaded, as the correlator is.
 */
#ifndef BINDTRACE_STRPOOL_H
#define BINDTRACE_STRPOOL_H

#include <stddef.h>

struct strpool;

struct strpool *strpool__new(void);
/* Frees every string still held; pointers got from the pool are invalid after. */
void strpool__free(struct strpool *p);

const char *strpool__get(struct strpool *p, const char *src, size_t max);
void strpool__put(struct strpool *p, const char *s);

/* Distinct strings held now, and their bytes (text and headers). */
size_t strpool__count(const struct strpool *p);
size_t strpool__bytes(const struct strpool *p);

#endif
