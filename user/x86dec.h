/* x86dec: one Capstone x86-64 decoder handle and its instruction buffer, shared by the linear
 * passes over Go functions (x86ret, x86flow). Each pass opens its own and closes it when done;
 * nothing is kept between passes. */
#ifndef BINDTRACE_X86DEC_H
#define BINDTRACE_X86DEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <capstone/capstone.h>

struct x86_decoder {
	csh handle;
	cs_insn *insn; /* the last instruction decoded by x86_decoder__next() */
};

/* With operand details (detail) or without (boundaries only: faster). 0 or -ENOMEM; on error
 * nothing is left to close. */
int x86_decoder__open(struct x86_decoder *d, bool detail);

/* Frees what open() took; safe on a zeroed or already closed decoder. */
void x86_decoder__close(struct x86_decoder *d);

/* Decode the instruction at code[pos..len) (loaded at vaddr + pos) into d->insn; false when the
 * bytes there do not decode. */
bool x86_decoder__next(struct x86_decoder *d, const uint8_t *code, size_t len, uint64_t vaddr,
		       size_t pos);

/* Whether d->insn (decoded with detail) is in Capstone group group (X86_GRP_*, CS_GRP_*). */
bool x86_decoder__in_group(const struct x86_decoder *d, unsigned int group);

#endif
