// SPDX-License-Identifier: GPL-2.0
/* Interned, reference-counted strings: see strpool.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strpool.h"
#include "util.h"

#define MIN_BUCKETS 1024

struct entry {
	struct entry *next;
	uint64_t hash;
	uint32_t refs;
	uint32_t len;
	char s[];
};

struct strpool {
	struct entry **buckets;
	size_t n_buckets; /* a power of two */
	size_t count;
	size_t bytes;
};

static const char empty[1];

static uint64_t hash_of(const char *s, size_t len)
{
	return util__fnv1a(UTIL_FNV_START, s, len);
}

struct strpool *strpool__new(void)
{
	struct strpool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->buckets = calloc(MIN_BUCKETS, sizeof(*p->buckets));
	if (!p->buckets) {
		free(p);
		return NULL;
	}
	p->n_buckets = MIN_BUCKETS;
	return p;
}

void strpool__free(struct strpool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_buckets; i++) {
		struct entry *e = p->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(p->buckets);
	free(p);
}

/* Doubles the bucket array once there are more strings than buckets; staying as it is when
 * memory runs out only makes chains longer. */
static void grow(struct strpool *p)
{
	size_t n = p->n_buckets * 2;
	struct entry **b = calloc(n, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < p->n_buckets; i++) {
		struct entry *e = p->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(p->buckets);
	p->buckets = b;
	p->n_buckets = n;
}

const char *strpool__get(struct strpool *p, const char *src, size_t max)
{
	size_t len = 0;
	uint64_t h;
	struct entry *e;

	if (!src || !max)
		return empty;
	while (len + 1 < max && src[len])
		len++;
	if (!len)
		return empty;
	if (len > UINT32_MAX - 1)
		len = UINT32_MAX - 1;
	h = hash_of(src, len);
	for (e = p->buckets[h & (p->n_buckets - 1)]; e; e = e->next)
		if (e->hash == h && e->len == len && memcmp(e->s, src, len) == 0 &&
		    e->refs < UINT32_MAX) {
			e->refs++;
			return e->s;
		}
	e = malloc(sizeof(*e) + len + 1);
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	e->hash = h;
	e->refs = 1;
	e->len = (uint32_t)len;
	memcpy(e->s, src, len);
	e->s[len] = '\0';
	e->next = p->buckets[h & (p->n_buckets - 1)];
	p->buckets[h & (p->n_buckets - 1)] = e;
	p->count++;
	p->bytes += sizeof(*e) + len + 1;
	if (p->count > p->n_buckets)
		grow(p);
	return e->s;
}

void strpool__put(struct strpool *p, const char *s)
{
	struct entry *e, **link;

	if (!s || s == empty || !*s)
		return;
	e = (struct entry *)(s - offsetof(struct entry, s));
	if (--e->refs)
		return;
	for (link = &p->buckets[e->hash & (p->n_buckets - 1)]; *link; link = &(*link)->next)
		if (*link == e) {
			*link = e->next;
			break;
		}
	p->count--;
	p->bytes -= sizeof(*e) + e->len + 1;
	free(e);
}

size_t strpool__count(const struct strpool *p)
{
	return p->count;
}

size_t strpool__bytes(const struct strpool *p)
{
	return p->bytes;
}
