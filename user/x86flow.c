/* x86flow: a linear, conservative value-origin pass over one Go function (see x86flow.h). Two
 * passes over the bytes: the first collects the targets of jumps inside the function (where
 * paths join, so what is known must be forgotten), the second follows values and reports. */
#include "x86flow.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "x86dec.h"

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

/* ABIInternal's argument registers, in x86flow's order. */
static const x86_reg arg_regs[X86FLOW_ARG_REGS] = {
	X86_REG_RAX, X86_REG_RBX, X86_REG_RCX, X86_REG_RDI, X86_REG_RSI,
	X86_REG_R8,  X86_REG_R9,  X86_REG_R10, X86_REG_R11,
};

/* Index 0-15 of the 64-bit register enclosing reg (in encoding order), or -1 for anything but
 * a general one. Capstone numbers registers by name, not by encoding, hence the table. */
static int gpr_index(x86_reg reg)
{
	static const x86_reg names[N_GPRS][5] = {
		{ X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH },
		{ X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH },
		{ X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH },
		{ X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH },
		{ X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL },
		{ X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL },
		{ X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL },
		{ X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL },
		{ X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B },
		{ X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B },
		{ X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B },
		{ X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B },
		{ X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B },
		{ X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B },
		{ X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B },
		{ X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B },
	};

	if (reg == X86_REG_INVALID)
		return -1;
	for (int i = 0; i < N_GPRS; i++)
		for (int k = 0; k < 5; k++)
			if (names[i][k] == reg)
				return i;
	return -1;
}

static bool is_gpr64(const cs_x86_op *op)
{
	return op->type == X86_OP_REG && op->size == 8 && gpr_index(op->reg) >= 0;
}

static int xmm_index_of(x86_reg reg)
{
	if (reg < X86_REG_XMM0 || reg > X86_REG_XMM15)
		return -1;
	return (int)(reg - X86_REG_XMM0);
}

static int xmm_index(const cs_x86_op *op)
{
	return op->type == X86_OP_REG ? xmm_index_of(op->reg) : -1;
}

/* A 16-byte move (movups/movdqu/movaps/movdqa): how Go may copy a string header whole. */
static bool is_move16(const cs_insn *insn)
{
	return insn->id == X86_INS_MOVUPS || insn->id == X86_INS_MOVDQU ||
	       insn->id == X86_INS_MOVAPS || insn->id == X86_INS_MOVDQA;
}

/* [base + disp], read, written or only computed by LEA. */
static bool is_mem_based(const cs_x86_op *op, x86_reg base)
{
	return op->type == X86_OP_MEM && op->mem.base == base && op->mem.index == X86_REG_INVALID &&
	       (op->mem.segment == X86_REG_INVALID || op->mem.segment == X86_REG_DS ||
		op->mem.segment == X86_REG_SS);
}

/* The address a RIP-relative operand names: from the end of the instruction. */
static uint64_t rip_target(const cs_insn *insn, const cs_x86_op *op)
{
	return insn->address + insn->size + (uint64_t)op->mem.disp;
}

/* Instructions whose stack write Capstone does not list as an operand. */
static bool pushes(const cs_insn *insn)
{
	switch (insn->id) {
	case X86_INS_PUSH:
	case X86_INS_PUSHF:
	case X86_INS_PUSHFQ:
	case X86_INS_ENTER:
		return true;
	default:
		return false;
	}
}

static bool is_uncond_jump(const cs_insn *insn)
{
	return insn->id == X86_INS_JMP || insn->id == X86_INS_LJMP;
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
static int targets__collect(struct x86_decoder *d, const uint8_t *code, size_t len, uint64_t vaddr,
			    struct pass *p, struct x86flow_stats *stats)
{
	size_t pos = 0, cap = 0;

	while (pos < len) {
		uint64_t at = vaddr + pos, to;
		const cs_x86 *x86;

		if (!x86_decoder__next(d, code, len, vaddr, pos)) {
			stats->bad_insn = at;
			return -EILSEQ;
		}
		pos += d->insn->size;
		if (!x86_decoder__in_group(d, X86_GRP_JUMP))
			continue;
		x86 = &d->insn->detail->x86;
		/* Capstone gives a relative branch's target as an absolute immediate. */
		if (x86->op_count < 1 || x86->operands[0].type != X86_OP_IMM) {
			stats->n_indirect_jumps++;
			continue;
		}
		to = (uint64_t)x86->operands[0].imm;
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

/* Instructions that only read their operands (their first one included). */
static bool reads_only(const cs_insn *insn)
{
	switch (insn->id) {
	case X86_INS_CMP:
	case X86_INS_TEST:
	case X86_INS_BT:
	case X86_INS_UCOMISS:
	case X86_INS_UCOMISD:
	case X86_INS_COMISS:
	case X86_INS_COMISD:
	case X86_INS_PTEST:
	case X86_INS_VPTEST:
	case X86_INS_PREFETCHT0:
	case X86_INS_PREFETCHT1:
	case X86_INS_PREFETCHT2:
	case X86_INS_PREFETCHNTA:
	case X86_INS_PREFETCHW:
	case X86_INS_NOP:
	case X86_INS_PUSH:
		return true;
	default:
		return false;
	}
}

/* Whether operand i may be written. Capstone 4's access flags miss some stores (movups and
 * movq to memory read as READ), so the first operand, the destination in Intel order, counts as
 * written unless the instruction only reads. */
static bool may_write(const cs_insn *insn, uint8_t i, const cs_x86_op *op)
{
	return (op->access & CS_AC_WRITE) || (i == 0 && !reads_only(insn));
}

/* What an instruction step() does not model writes becomes unknown: registers (explicit or
 * implicit), RSP-based stack words it names, and anything else it stores through forgets the
 * stack slots. */
static int step_unmodelled(struct pass *p, const struct x86_decoder *d, uint64_t at)
{
	static const struct x86flow_value unknown = { X86FLOW_UNKNOWN, 0 };
	const cs_insn *insn = d->insn;
	const cs_x86 *x86 = &insn->detail->x86;
	struct flow_state *s = &p->state;
	int err;

	for (uint8_t i = 0; i < x86->op_count; i++) {
		const cs_x86_op *op = &x86->operands[i];

		if (!may_write(insn, i, op))
			continue;
		if (op->type == X86_OP_REG) {
			int r = gpr_index(op->reg);

			if (xmm_index(op) >= 0)
				s->xmms[xmm_index(op)] = unknown;
			if (r >= 0 && op->reg != X86_REG_RSP && insn->id != X86_INS_NOP)
				s->regs[r] = unknown;
		} else if (op->type == X86_OP_MEM && insn->id != X86_INS_LEA) {
			if (is_mem_based(op, X86_REG_RIP))
				continue; /* a package variable, not the stack */
			if (is_mem_based(op, X86_REG_RSP))
				err = emit_unknown_stores(p, at, op->mem.disp, op->size);
			else
				err = emit_clobber(p, at);
			if (err)
				return err;
		}
	}
	for (uint8_t i = 0; i < insn->detail->regs_write_count; i++) {
		x86_reg reg = (x86_reg)insn->detail->regs_write[i];
		int r = gpr_index(reg);

		if (xmm_index_of(reg) >= 0)
			s->xmms[xmm_index_of(reg)] = unknown;
		if (r >= 0 && reg != X86_REG_RSP)
			s->regs[r] = unknown;
	}
	/* PUSH and the like store below RSP without naming the slot. */
	return pushes(insn) ? emit_clobber(p, at) : 0;
}

/* One instruction of pass 2. */
static int step(struct pass *p, const struct x86_decoder *d, uint64_t at)
{
	const cs_insn *insn = d->insn;
	const cs_x86 *x86 = &insn->detail->x86;
	struct flow_state *s = &p->state;
	const cs_x86_op *dst = &x86->operands[0], *src = &x86->operands[1];
	bool two = x86->op_count == 2;
	int err;

	if (x86_decoder__in_group(d, X86_GRP_RET)) {
		struct x86flow_event e = { .type = X86FLOW_RETURN, .pc = at };

		return p->on_event(&e, p->ctx);
	}
	if (x86_decoder__in_group(d, X86_GRP_CALL)) {
		uint64_t to = 0;

		if (x86->op_count >= 1 && dst->type == X86_OP_IMM)
			to = (uint64_t)dst->imm;
		return emit_call(p, at, to);
	}
	if (insn->id == X86_INS_MOV && two && is_gpr64(dst)) {
		struct x86flow_value v = { X86FLOW_UNKNOWN, 0 };

		if (is_mem_based(src, X86_REG_RIP) && src->size == 8) {
			v = (struct x86flow_value){ X86FLOW_LOAD, rip_target(insn, src) };
		} else if (is_mem_based(src, X86_REG_RSP) && src->size == 8) {
			const struct slot *sl = slot__find(s, src->mem.disp);

			if (sl)
				v = sl->value;
		} else if (is_gpr64(src)) {
			v = s->regs[gpr_index(src->reg)];
		} else if (src->type == X86_OP_IMM) {
			v = (struct x86flow_value){ X86FLOW_IMMEDIATE, (uint64_t)src->imm };
		}
		s->regs[gpr_index(dst->reg)] = v;
		return 0;
	}
	/* mov r32, imm32 zero-extends: `mov ebx, 0x5` sets a string's length. */
	if (insn->id == X86_INS_MOV && two && dst->type == X86_OP_REG && dst->size == 4 &&
	    src->type == X86_OP_IMM && gpr_index(dst->reg) >= 0) {
		s->regs[gpr_index(dst->reg)] =
		    (struct x86flow_value){ X86FLOW_IMMEDIATE, (uint32_t)src->imm };
		return 0;
	}
	if (insn->id == X86_INS_LEA && two && is_gpr64(dst) && is_mem_based(src, X86_REG_RIP)) {
		s->regs[gpr_index(dst->reg)] =
		    (struct x86flow_value){ X86FLOW_ADDRESS, rip_target(insn, src) };
		return 0;
	}
	if (insn->id == X86_INS_MOV && two && is_mem_based(dst, X86_REG_RSP) && dst->size == 8 &&
	    (is_gpr64(src) || src->type == X86_OP_IMM)) {
		struct x86flow_value v =
		    is_gpr64(src) ? s->regs[gpr_index(src->reg)]
				  : (struct x86flow_value){ X86FLOW_IMMEDIATE, (uint64_t)src->imm };

		return emit_store(p, at, dst->mem.disp, v);
	}

	/* 16 bytes through an XMM register: a string header loaded whole, stored as two words. */
	if (is_move16(insn) && two && xmm_index(dst) >= 0) {
		s->xmms[xmm_index(dst)] =
		    is_mem_based(src, X86_REG_RIP) && src->size == 16
			? (struct x86flow_value){ X86FLOW_LOAD, rip_target(insn, src) }
		    : xmm_index(src) >= 0 ? s->xmms[xmm_index(src)]
					  : (struct x86flow_value){ X86FLOW_UNKNOWN, 0 };
		return 0;
	}
	if (is_move16(insn) && two && is_mem_based(dst, X86_REG_RSP) && dst->size == 16 &&
	    xmm_index(src) >= 0 && s->xmms[xmm_index(src)].kind == X86FLOW_LOAD) {
		struct x86flow_value lo = s->xmms[xmm_index(src)], hi = lo;

		hi.value += 8;
		err = emit_store(p, at, dst->mem.disp, lo);
		return err ? err : emit_store(p, at, dst->mem.disp + 8, hi);
	}
	return step_unmodelled(p, d, at);
}

int x86flow__scan(const uint8_t *code, size_t len, uint64_t vaddr, x86flow_event_fn on_event,
		  void *ctx, struct x86flow_stats *stats)
{
	struct x86flow_stats local;
	struct x86_decoder d;
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
	err = x86_decoder__open(&d, true);
	if (err)
		goto free_pass;
	err = targets__collect(&d, code, len, vaddr, p, stats);
	if (err)
		goto cleanup;

	while (pos < len) {
		uint64_t at = vaddr + pos;
		bool ends_path;

		if (!x86_decoder__next(&d, code, len, vaddr, pos)) {
			stats->bad_insn = at;
			err = -EILSEQ;
			goto cleanup;
		}
		stats->n_insns++;
		if (is_target(p, at))
			state__forget(&p->state);
		err = step(p, &d, at);
		if (err)
			goto cleanup;
		/* After a jump or return, only a jump reaches the next instruction. */
		ends_path = is_uncond_jump(d.insn) || x86_decoder__in_group(&d, X86_GRP_RET);
		if (ends_path)
			state__forget(&p->state);
		pos += d.insn->size;
	}
cleanup:
	x86_decoder__close(&d);
free_pass:
	free(p->targets);
	free(p);
	return err;
}
