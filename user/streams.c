/* An open-addressing table of streams that doubles as it fills: no allocation per event. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "streams.h"

#define STREAMS_MIN_CAP 64

int streams__init(struct streams *s, size_t cap)
{
	size_t c = 1;

	while (c < cap)
		c <<= 1;
	s->max = c;
	s->cap = c < STREAMS_MIN_CAP ? c : STREAMS_MIN_CAP;
	s->slots = calloc(s->cap, sizeof(*s->slots));
	if (!s->slots)
		return -ENOMEM;
	s->count = 0;
	return 0;
}

void streams__free(struct streams *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

static size_t hash(uint32_t pid, uint64_t conn, uint8_t dir)
{
	uint64_t h =
	    conn * 0x9e3779b97f4a7c15ull ^ ((uint64_t)pid << 1 | dir) * 0xbf58476d1ce4e5b9ull;

	return (size_t)(h ^ (h >> 31));
}

/* Doubles the table, moving every entry to its place in the larger one. */
static int grow(struct streams *s)
{
	size_t cap = s->cap * 2, mask = cap - 1, i;
	struct stream *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++) {
		const struct stream *st = &s->slots[i];
		size_t idx;

		if (!st->used)
			continue;
		idx = hash(st->pid, st->conn, st->dir) & mask;
		while (slots[idx].used)
			idx = (idx + 1) & mask;
		slots[idx] = *st;
	}
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

struct stream *streams__get(struct streams *s, uint32_t pid, uint64_t conn, uint8_t dir)
{
	size_t i, mask = s->cap - 1, idx = hash(pid, conn, dir) & mask;
	struct stream *st;

	for (i = 0; i < s->cap; i++, idx = (idx + 1) & mask) {
		st = &s->slots[idx];
		if (!st->used) {
			/* Keep a quarter free so probes stay short: grow, or refuse at the most. */
			if (s->count + 1 > s->cap - s->cap / 4) {
				if (s->cap >= s->max || grow(s))
					return NULL;
				return streams__get(s, pid, conn, dir);
			}
			st->used = 1;
			st->pos.started = true; /* at 0 */
			st->pid = pid;
			st->conn = conn;
			st->dir = dir;
			s->count++;
			return st;
		}
		if (st->pid == pid && st->conn == conn && st->dir == dir)
			return st;
	}
	return NULL;
}

struct stream *streams__find(struct streams *s, uint32_t pid, uint64_t conn, uint8_t dir)
{
	size_t i, mask = s->cap - 1, idx = hash(pid, conn, dir) & mask;

	for (i = 0; i < s->cap; i++, idx = (idx + 1) & mask) {
		struct stream *st = &s->slots[idx];

		if (!st->used)
			return NULL;
		if (st->pid == pid && st->conn == conn && st->dir == dir)
			return st;
	}
	return NULL;
}

/* Linear probing without tombstones: the entries after the hole that would no longer be found
 * from their home slot are moved back into it (backward-shift deletion). */
void streams__del(struct streams *s, struct stream *st)
{
	size_t mask = s->cap - 1, hole = (size_t)(st - s->slots), i = hole;

	if (!st->used)
		return;
	memset(st, 0, sizeof(*st));
	s->count--;
	for (;;) {
		struct stream *next;
		size_t home;

		i = (i + 1) & mask;
		next = &s->slots[i];
		if (!next->used)
			return;
		home = hash(next->pid, next->conn, next->dir) & mask;
		/* Stays if its home lies cyclically in (hole, i]. */
		if (hole <= i ? (home > hole && home <= i) : (home > hole || home <= i))
			continue;
		s->slots[hole] = *next;
		memset(next, 0, sizeof(*next));
		hole = i;
	}
}

uint64_t stream_pos__advance(struct stream_pos *pos, uint64_t offset, uint64_t len, uint64_t *seen)
{
	uint64_t missed = 0, before = 0;

	if (!pos->started) {
		pos->started = true;
		pos->next_offset = offset;
	}
	if (offset > pos->next_offset)
		missed = offset - pos->next_offset;
	else if (offset < pos->next_offset)
		before = pos->next_offset - offset < len ? pos->next_offset - offset : len;
	if (offset + len > pos->next_offset)
		pos->next_offset = offset + len;
	if (seen)
		*seen = before;
	return missed;
}

uint64_t stream__advance(struct stream *st, uint64_t offset, uint32_t len)
{
	uint64_t missed = stream_pos__advance(&st->pos, offset, len, NULL);

	if (missed) {
		st->gaps++;
		st->gap_bytes += missed;
	}
	st->events++;
	st->bytes += len;
	return missed;
}
