/* x86flow: a linear, conservative value-origin pass over one Go function (see x86flow.h). Two
 * passes over the bytes: the first collects the targets of jumps inside the function (where
 * paths join, so what is known must be forgotten), the second follows values and reports. */
#include "x86flow.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#define MAX_SLOTS 256 /* stack slots followed at once; more are simply not followed */
#define N_GPRS 16
#define N_XMMS 16

struct slot {
	int64_t disp;
	struct x86flow_value value;
};

struct flow_state {
	struct x86flow_value regs[N_GPRS];
	struct x86flow_value xmms[N_XMMS]; /* LOAD: the 16 bytes at value (a string header) */
	struct slot slots[MAX_SLOTS];
	size_t n_slots;
};

/* ABIInternal's argument registers as Zydis names them, in x86flow's order. */
static const ZydisRegister arg_regs[X86FLOW_ARG_REGS] = {
	ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RBX, ZYDIS_REGISTER_RCX,
	ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_R8,
	ZYDIS_REGISTER_R9,  ZYDIS_REGISTER_R10, ZYDIS_REGISTER_R11,
};

/* Index 0-15 of the 64-bit register enclosing reg, or -1 for anything but a general one. */
static int gpr_index(ZydisRegister reg)
{
	ZydisRegister r = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);

	if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15)
		return (int)(r - ZYDIS_REGISTER_RAX);
	return -1;
}

static bool is_gpr64(const ZydisDecodedOperand *op)
{
	return op->type == ZYDIS_OPERAND_TYPE_REGISTER && op->reg.value >= ZYDIS_REGISTER_RAX &&
	       op->reg.value <= ZYDIS_REGISTER_R15;
}

static int xmm_index(const ZydisDecodedOperand *op)
{
	if (op->type != ZYDIS_OPERAND_TYPE_REGISTER || op->reg.value < ZYDIS_REGISTER_XMM0 ||
	    op->reg.value > ZYDIS_REGISTER_XMM15)
		return -1;
	return (int)(op->reg.value - ZYDIS_REGISTER_XMM0);
}

/* A 16-byte move (movups/movdqu/movaps/movdqa): how Go may copy a string header whole. */
static bool is_move16(const ZydisDecodedInstruction *insn)
{
	return insn->mnemonic == ZYDIS_MNEMONIC_MOVUPS || insn->mnemonic == ZYDIS_MNEMONIC_MOVDQU ||
	       insn->mnemonic == ZYDIS_MNEMONIC_MOVAPS || insn->mnemonic == ZYDIS_MNEMONIC_MOVDQA;
}

/* [base + disp], read or written (MEM) or only computed by LEA (AGEN). */
static bool is_mem_based(const ZydisDecodedOperand *op, ZydisRegister base)
{
	return op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
	       (op->mem.type == ZYDIS_MEMOP_TYPE_MEM || op->mem.type == ZYDIS_MEMOP_TYPE_AGEN) &&
	       op->mem.base == base && op->mem.index == ZYDIS_REGISTER_NONE &&
	       (op->mem.segment == ZYDIS_REGISTER_NONE || op->mem.segment == ZYDIS_REGISTER_DS ||
		op->mem.segment == ZYDIS_REGISTER_SS);
}

static void state__forget(struct flow_state *s)
{
	memset(s->regs, 0, sizeof(s->regs));
	memset(s->xmms, 0, sizeof(s->xmms));
	s->n_slots = 0;
}

static struct slot *slot__find(struct flow_state *s, int64_t disp)
{
	for (size_t i = 0; i < s->n_slots; i++)
		if (s->slots[i].disp == disp)
			return &s->slots[i];
	return NULL;
}

static void slot__set(struct flow_state *s, int64_t disp, struct x86flow_value v)
{
	struct slot *sl = slot__find(s, disp);

	if (!sl && v.kind == X86FLOW_UNKNOWN)
		return;
	if (!sl) {
		if (s->n_slots == MAX_SLOTS)
			return; /* not followed: a load from it reads as unknown */
		sl = &s->slots[s->n_slots++];
		sl->disp = disp;
	}
	sl->value = v;
}

static int64_t floor8(int64_t v)
{
	return v >= 0 ? v & ~(int64_t)7 : -((-v + 7) & ~(int64_t)7);
}

struct pass {
	x86flow_event_fn on_event;
	void *ctx;
	struct flow_state state;
	uint64_t *targets; /* sorted jump targets inside the function */
	size_t n_targets;
};

static int emit_store(struct pass *p, uint64_t pc, int64_t disp, struct x86flow_value v)
{
	struct x86flow_event e = { .type = X86FLOW_STORE, .pc = pc, .rsp_disp = disp, .stored = v };

	slot__set(&p->state, disp, v);
	return p->on_event(&e, p->ctx);
}

/* An RSP-based write this pass does not model: every 8-byte word it touches becomes unknown. */
static int emit_unknown_stores(struct pass *p, uint64_t pc, int64_t disp, unsigned int bytes)
{
	static const struct x86flow_value unknown = { X86FLOW_UNKNOWN, 0 };
	int err;

	if (!bytes)
		bytes = 8;
	for (int64_t w = floor8(disp); w < disp + (int64_t)bytes; w += 8) {
		err = emit_store(p, pc, w, unknown);
		if (err)
			return err;
	}
	return 0;
}

static int emit_clobber(struct pass *p, uint64_t pc)
{
	struct x86flow_event e = { .type = X86FLOW_CLOBBER, .pc = pc };

	p->state.n_slots = 0;
	return p->on_event(&e, p->ctx);
}

static int emit_call(struct pass *p, uint64_t pc, uint64_t target)
{
	struct x86flow_event e = { .type = X86FLOW_CALL, .pc = pc, .call_target = target };

	for (int i = 0; i < X86FLOW_ARG_REGS; i++)
		e.args[i] = p->state.regs[gpr_index(arg_regs[i])];
	state__forget(&p->state);
	return p->on_event(&e, p->ctx);
}

static bool is_target(const struct pass *p, uint64_t at)
{
	size_t lo = 0, hi = p->n_targets;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->targets[mid] < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->n_targets && p->targets[lo] == at;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Pass 1: the targets of direct jumps that land inside the function. */
static int targets__collect(const uint8_t *code, size_t len, uint64_t vaddr, struct pass *p,
			    struct x86flow_stats *stats)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	ZydisDecoder decoder;
	size_t pos = 0, cap = 0;

	ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	while (pos < len) {
		uint64_t at = vaddr + pos, to;

		if (!ZYAN_SUCCESS(
			ZydisDecoderDecodeFull(&decoder, code + pos, len - pos, &insn, ops))) {
			stats->bad_insn = at;
			return -EILSEQ;
		}
		pos += insn.length;
		if (insn.meta.category != ZYDIS_CATEGORY_UNCOND_BR &&
		    insn.meta.category != ZYDIS_CATEGORY_COND_BR)
			continue;
		if (ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
		    !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[0], at, &to))) {
			stats->n_indirect_jumps++;
			continue;
		}
		if (to < vaddr || to >= vaddr + len)
			continue;
		if (p->n_targets == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			uint64_t *t = realloc(p->targets, ncap * sizeof(*t));

			if (!t)
				return -ENOMEM;
			p->targets = t;
			cap = ncap;
		}
		p->targets[p->n_targets++] = to;
	}
	if (p->n_targets)
		qsort(p->targets, p->n_targets, sizeof(*p->targets), u64_cmp);
	return 0;
}

/* One instruction of pass 2. */
static int step(struct pass *p, const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops,
		uint64_t at)
{
	struct flow_state *s = &p->state;
	const ZydisDecodedOperand *dst = &ops[0], *src = &ops[1];
	bool two = insn->operand_count_visible == 2;
	int err;

	if (insn->meta.category == ZYDIS_CATEGORY_RET) {
		struct x86flow_event e = { .type = X86FLOW_RETURN, .pc = at };

		return p->on_event(&e, p->ctx);
	}
	if (insn->meta.category == ZYDIS_CATEGORY_CALL) {
		uint64_t to = 0;

		if (ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
		    !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(insn, &ops[0], at, &to)))
			to = 0;
		return emit_call(p, at, to);
	}
	if (insn->mnemonic == ZYDIS_MNEMONIC_MOV && two && is_gpr64(dst)) {
		struct x86flow_value v = { X86FLOW_UNKNOWN, 0 };
		uint64_t abs;

		if (is_mem_based(src, ZYDIS_REGISTER_RIP) && src->size == 64 &&
		    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(insn, src, at, &abs))) {
			v = (struct x86flow_value){ X86FLOW_LOAD, abs };
		} else if (is_mem_based(src, ZYDIS_REGISTER_RSP) && src->size == 64) {
			const struct slot *sl = slot__find(s, src->mem.disp.value);

			if (sl)
				v = sl->value;
		} else if (is_gpr64(src)) {
			v = s->regs[gpr_index(src->reg.value)];
		} else if (src->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
			v = (struct x86flow_value){ X86FLOW_IMMEDIATE, src->imm.value.u };
		}
		s->regs[gpr_index(dst->reg.value)] = v;
		return 0;
	}
	/* mov r32, imm32 zero-extends: `mov ebx, 0x5` sets a string's length. */
	if (insn->mnemonic == ZYDIS_MNEMONIC_MOV && two &&
	    dst->type == ZYDIS_OPERAND_TYPE_REGISTER && dst->size == 32 &&
	    src->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && gpr_index(dst->reg.value) >= 0) {
		s->regs[gpr_index(dst->reg.value)] =
		    (struct x86flow_value){ X86FLOW_IMMEDIATE, (uint32_t)src->imm.value.u };
		return 0;
	}
	if (insn->mnemonic == ZYDIS_MNEMONIC_LEA && two && is_gpr64(dst) &&
	    is_mem_based(src, ZYDIS_REGISTER_RIP)) {
		uint64_t abs;

		s->regs[gpr_index(dst->reg.value)] =
		    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(insn, src, at, &abs))
			? (struct x86flow_value){ X86FLOW_ADDRESS, abs }
			: (struct x86flow_value){ X86FLOW_UNKNOWN, 0 };
		return 0;
	}
	if (insn->mnemonic == ZYDIS_MNEMONIC_MOV && two && is_mem_based(dst, ZYDIS_REGISTER_RSP) &&
	    dst->size == 64 && (is_gpr64(src) || src->type == ZYDIS_OPERAND_TYPE_IMMEDIATE)) {
		struct x86flow_value v =
		    is_gpr64(src) ? s->regs[gpr_index(src->reg.value)]
				  : (struct x86flow_value){ X86FLOW_IMMEDIATE, src->imm.value.u };

		return emit_store(p, at, dst->mem.disp.value, v);
	}

	/* 16 bytes through an XMM register: a string header loaded whole, stored as two words. */
	if (is_move16(insn) && two && xmm_index(dst) >= 0) {
		uint64_t abs;

		s->xmms[xmm_index(dst)] =
		    is_mem_based(src, ZYDIS_REGISTER_RIP) && src->size == 128 &&
			    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(insn, src, at, &abs))
			? (struct x86flow_value){ X86FLOW_LOAD, abs }
		    : xmm_index(src) >= 0 ? s->xmms[xmm_index(src)]
					  : (struct x86flow_value){ X86FLOW_UNKNOWN, 0 };
		return 0;
	}
	if (is_move16(insn) && two && is_mem_based(dst, ZYDIS_REGISTER_RSP) && dst->size == 128 &&
	    xmm_index(src) >= 0 && s->xmms[xmm_index(src)].kind == X86FLOW_LOAD) {
		struct x86flow_value lo = s->xmms[xmm_index(src)], hi = lo;

		hi.value += 8;
		err = emit_store(p, at, dst->mem.disp.value, lo);
		return err ? err : emit_store(p, at, dst->mem.disp.value + 8, hi);
	}

	/* Anything else: what it writes becomes unknown. */
	for (unsigned int i = 0; i < insn->operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];

		if (!(op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		if (op->type == ZYDIS_OPERAND_TYPE_REGISTER) {
			int r = gpr_index(op->reg.value);

			if (xmm_index(op) >= 0)
				s->xmms[xmm_index(op)] =
				    (struct x86flow_value){ X86FLOW_UNKNOWN, 0 };
			if (r >= 0 && op->reg.value != ZYDIS_REGISTER_RSP &&
			    !(insn->mnemonic == ZYDIS_MNEMONIC_NOP))
				s->regs[r] = (struct x86flow_value){ X86FLOW_UNKNOWN, 0 };
		} else if (op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
			   op->mem.type == ZYDIS_MEMOP_TYPE_MEM) {
			if (is_mem_based(op, ZYDIS_REGISTER_RIP))
				continue; /* a package variable, not the stack */
			if (is_mem_based(op, ZYDIS_REGISTER_RSP) &&
			    op->visibility == ZYDIS_OPERAND_VISIBILITY_EXPLICIT)
				err = emit_unknown_stores(p, at, op->mem.disp.value, op->size / 8);
			else
				err = emit_clobber(p, at);
			if (err)
				return err;
		}
	}
	return 0;
}

int x86flow__scan(const uint8_t *code, size_t len, uint64_t vaddr, x86flow_event_fn on_event,
		  void *ctx, struct x86flow_stats *stats)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	struct x86flow_stats local;
	ZydisDecoder decoder;
	struct pass *p;
	size_t pos = 0;
	int err;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->on_event = on_event;
	p->ctx = ctx;
	err = targets__collect(code, len, vaddr, p, stats);
	if (err)
		goto cleanup;

	ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	while (pos < len) {
		uint64_t at = vaddr + pos;

		if (!ZYAN_SUCCESS(
			ZydisDecoderDecodeFull(&decoder, code + pos, len - pos, &insn, ops))) {
			stats->bad_insn = at;
			err = -EILSEQ;
			goto cleanup;
		}
		stats->n_insns++;
		if (is_target(p, at))
			state__forget(&p->state);
		err = step(p, &insn, ops, at);
		if (err)
			goto cleanup;
		/* After a jump or return, only a jump reaches the next instruction. */
		if (insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
		    insn.meta.category == ZYDIS_CATEGORY_RET)
			state__forget(&p->state);
		pos += insn.length;
	}
cleanup:
	free(p->targets);
	free(p);
	return err;
}
