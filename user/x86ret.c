/* x86ret: linear decoding of Go functions with Capstone, to place probes only on instruction
 * boundaries. Go code is decodable linearly: the compiler puts jump tables in rodata, never in
 * text, and the linker pads functions with INT3. So a decode from the entry that reaches the end
 * without error has seen every instruction, and a RET it reports is a real RET, not a 0xC3 byte
 * inside an immediate or displacement.
 *
 * Capstone rather than Zydis: Debian ships Capstone as a static library (Zydis only shared), and
 * one decoder for the dynamic and the static build means one way through this code. Every
 * decode here starts from a fresh handle: a handle holds no state between calls that matters,
 * and opening one costs a few allocations against a few hundred instructions decoded.
 *
 * Debian 12's Capstone (4.0.2) does not know a few AVX2/AVX-512/GFNI instructions that Go's
 * hand-written assembly uses (VBROADCASTI128 in x/crypto's chacha20poly1305, VPERMB and
 * VGF2P8AFFINEQB in Go 1.26's GC): a function holding one fails to decode and is refused, never
 * misread. The compiler does not emit them, and every probed function is compiled Go; over whole
 * binaries Capstone and binutils agree on every instruction boundary outside those routines. */
#include "x86ret.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <capstone/capstone.h>

#include "x86dec.h"

int x86ret__scan(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *rets, size_t cap,
		 struct x86ret_scan *scan)
{
	struct x86_decoder d;
	size_t pos = 0;
	int err = 0;

	memset(scan, 0, sizeof(*scan));
	if (x86_decoder__open(&d, true))
		return -ENOMEM;
	while (pos < len) {
		uint64_t at = vaddr + pos;
		const cs_x86 *x86;

		if (!x86_decoder__next(&d, code, len, vaddr, pos)) {
			scan->bad_insn = at;
			err = -EILSEQ;
			goto close_decoder;
		}
		x86 = &d.insn->detail->x86;
		scan->n_insns++;
		if (x86_decoder__in_group(&d, X86_GRP_RET)) {
			if (scan->n_rets < cap)
				rets[scan->n_rets] = at;
			scan->n_rets++;
		} else if (x86_decoder__in_group(&d, X86_GRP_JUMP)) {
			/* Capstone gives a relative branch's target as an absolute immediate. */
			if (x86->op_count >= 1 && x86->operands[0].type == X86_OP_IMM) {
				uint64_t to = (uint64_t)x86->operands[0].imm;

				if ((to < vaddr || to >= vaddr + len) && scan->n_exits++ == 0) {
					scan->first_exit = at;
					scan->first_exit_to = to;
				}
			} else {
				scan->n_indirect_jumps++;
			}
		}
		pos += d.insn->size;
	}
	err = scan->n_rets > cap ? -ENOSPC : 0;
close_decoder:
	x86_decoder__close(&d);
	return err;
}

bool x86ret__is_boundary(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t target)
{
	struct x86_decoder d;
	size_t pos = 0;
	bool ok = true;

	if (target < vaddr || target - vaddr >= len)
		return false;
	if (x86_decoder__open(&d, false))
		return false;
	while (vaddr + pos < target) {
		if (!x86_decoder__next(&d, code, len, vaddr, pos)) {
			ok = false;
			break;
		}
		pos += d.insn->size;
	}
	x86_decoder__close(&d);
	return ok && vaddr + pos == target;
}

/* "mnemonic operands" of the decoded instruction, Intel syntax (Capstone's default). */
static void insn__format(const struct x86_decoder *d, char *text, size_t text_len)
{
	snprintf(text, text_len, "%s%s%s", d->insn->mnemonic, d->insn->op_str[0] ? " " : "",
		 d->insn->op_str);
}

int x86ret__format(const uint8_t *code, size_t len, uint64_t vaddr, char *text, size_t text_len)
{
	struct x86_decoder d;
	int n;

	if (x86_decoder__open(&d, false)) {
		snprintf(text, text_len, "(no decoder)");
		return -ENOMEM;
	}
	if (!len || !x86_decoder__next(&d, code, len, vaddr, 0)) {
		snprintf(text, text_len, "(bad)");
		n = -EILSEQ;
	} else {
		insn__format(&d, text, text_len);
		n = d.insn->size;
	}
	x86_decoder__close(&d);
	return n;
}

/* Is this `cmp REG, [r14+0x10]` with REG rsp or r12: the comparison against g.stackguard0
 * (R14 holds g in ABIInternal code) that opens every Go function that may grow its stack? */
static bool is_stackguard_cmp(const struct x86_decoder *d)
{
	const cs_x86 *x86 = &d->insn->detail->x86;

	if (d->insn->id != X86_INS_CMP || x86->op_count != 2)
		return false;
	if (x86->operands[0].type != X86_OP_REG ||
	    (x86->operands[0].reg != X86_REG_RSP && x86->operands[0].reg != X86_REG_R12))
		return false;
	return x86->operands[1].type == X86_OP_MEM && x86->operands[1].mem.base == X86_REG_R14 &&
	       x86->operands[1].mem.index == X86_REG_INVALID && x86->operands[1].mem.disp == 0x10;
}

bool x86ret__go_stack_check(const uint8_t *code, size_t len, uint64_t vaddr, char *text,
			    size_t text_len)
{
	struct x86_decoder d;
	size_t pos = 0, used = 0;
	bool found = false;

	if (text_len)
		text[0] = '\0';
	if (x86_decoder__open(&d, true)) {
		snprintf(text, text_len, "(no decoder)");
		return false;
	}
	for (int i = 0; i < 3 && pos < len && !found; i++) {
		char one[192];

		if (!x86_decoder__next(&d, code, len, vaddr, pos)) {
			snprintf(one, sizeof(one), "(bad)");
			i = 3;
		} else {
			insn__format(&d, one, sizeof(one));
			found = is_stackguard_cmp(&d);
			pos += d.insn->size;
		}
		if (used < text_len) {
			int n =
			    snprintf(text + used, text_len - used, "%s%s", used ? "; " : "", one);
			used += n > 0 ? (size_t)n : 0;
		}
	}
	x86_decoder__close(&d);
	return found;
}

int x86ret__go_spill_slots(const uint8_t *code, size_t len, int *rax, int *rbx, int *rcx)
{
	struct x86_decoder d;
	size_t pos = 0;
	int64_t below = 0; /* bytes the prologue moved RSP down by, so far */
	int i, found = 0, err = -ENOENT;

	*rax = *rbx = *rcx = 0;
	if (x86_decoder__open(&d, true))
		return -ENOMEM;
	for (i = 0; i < 16 && pos < len; i++) {
		const cs_x86 *x86;
		const cs_x86_op *dst, *src;

		if (!x86_decoder__next(&d, code, len, 0, pos))
			break;
		x86 = &d.insn->detail->x86;
		dst = &x86->operands[0];
		src = &x86->operands[1];
		pos += d.insn->size;
		if (d.insn->id == X86_INS_PUSH) {
			below += 8;
		} else if (d.insn->id == X86_INS_SUB && x86->op_count == 2 &&
			   dst->type == X86_OP_REG && dst->reg == X86_REG_RSP &&
			   src->type == X86_OP_IMM) {
			below += src->imm;
		} else if (d.insn->id == X86_INS_MOV && x86->op_count == 2 &&
			   dst->type == X86_OP_MEM && dst->mem.base == X86_REG_RSP &&
			   dst->mem.index == X86_REG_INVALID && src->type == X86_OP_REG &&
			   dst->size == 8) {
			/* A store above the frame, into the caller's spill area (entry SP + 8...). */
			int64_t slot = dst->mem.disp - below;

			if (slot < 8 || slot > 256)
				continue;
			if (src->reg == X86_REG_RAX && !*rax)
				*rax = (int)slot, found++;
			else if (src->reg == X86_REG_RBX && !*rbx)
				*rbx = (int)slot, found++;
			else if (src->reg == X86_REG_RCX && !*rcx)
				*rcx = (int)slot, found++;
		} else if (x86_decoder__in_group(&d, X86_GRP_CALL) ||
			   x86_decoder__in_group(&d, X86_GRP_RET) ||
			   x86_decoder__in_group(&d, X86_GRP_JUMP)) {
			/* The stack check's branch comes first; anything else ends the prologue. */
			if (i > 2)
				break;
		}
		if (found == 3) {
			err = 0;
			break;
		}
	}
	x86_decoder__close(&d);
	return err;
}

int x86ret__go_stack_check_branch(const uint8_t *code, size_t len, uint64_t *at)
{
	x86_reg compared = X86_REG_RSP;
	struct x86_decoder d;
	const cs_x86 *x86;
	size_t pos = 0;
	int err = -ENOENT;

	if (x86_decoder__open(&d, true))
		return -ENOMEM;
	if (!x86_decoder__next(&d, code, len, 0, pos))
		goto out;
	x86 = &d.insn->detail->x86;
	/* A frame larger than the guard's slack compares rsp-N, computed into r12 first. */
	if (d.insn->id == X86_INS_LEA && x86->op_count == 2 &&
	    x86->operands[0].type == X86_OP_REG && x86->operands[0].reg == X86_REG_R12 &&
	    x86->operands[1].type == X86_OP_MEM && x86->operands[1].mem.base == X86_REG_RSP &&
	    x86->operands[1].mem.index == X86_REG_INVALID) {
		compared = X86_REG_R12;
		pos += d.insn->size;
		if (!x86_decoder__next(&d, code, len, 0, pos))
			goto out;
		x86 = &d.insn->detail->x86;
	}
	/* cmp REG, [r14+16]: the goroutine's stack guard. */
	if (d.insn->id != X86_INS_CMP || x86->op_count != 2 ||
	    x86->operands[0].type != X86_OP_REG || x86->operands[0].reg != compared ||
	    x86->operands[1].type != X86_OP_MEM || x86->operands[1].mem.base != X86_REG_R14 ||
	    x86->operands[1].mem.index != X86_REG_INVALID || x86->operands[1].mem.disp != 16)
		goto out;
	pos += d.insn->size;
	if (!x86_decoder__next(&d, code, len, 0, pos) || d.insn->id != X86_INS_JBE)
		goto out;
	*at = pos;
	err = 0;
out:
	x86_decoder__close(&d);
	return err;
}
