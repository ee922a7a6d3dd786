/* x86ret: linear decoding of Go functions with Zydis, to place probes only on instruction
 * boundaries. Go code is decodable linearly: the compiler puts jump tables in rodata, never in
 * text, and the linker pads functions with INT3. So a decode from the entry that reaches the end
 * without error has seen every instruction, and a RET it reports is a real RET, not a 0xC3 byte
 * inside an immediate or displacement. */
#include "x86ret.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <Zydis/Zydis.h>

static void decoder__init(ZydisDecoder *decoder)
{
	ZydisDecoderInit(decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

int x86ret__scan(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *rets, size_t cap,
		 struct x86ret_scan *scan)
{
	ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	ZydisDecoder decoder;
	size_t pos = 0;

	memset(scan, 0, sizeof(*scan));
	decoder__init(&decoder);
	while (pos < len) {
		uint64_t at = vaddr + pos;

		if (!ZYAN_SUCCESS(
			ZydisDecoderDecodeFull(&decoder, code + pos, len - pos, &insn, operands))) {
			scan->bad_insn = at;
			return -EILSEQ;
		}
		scan->n_insns++;
		if (insn.meta.category == ZYDIS_CATEGORY_RET) {
			if (scan->n_rets < cap)
				rets[scan->n_rets] = at;
			scan->n_rets++;
		} else if (insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
			   insn.meta.category == ZYDIS_CATEGORY_COND_BR) {
			uint64_t to;

			if (operands[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
			    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &operands[0], at, &to))) {
				if ((to < vaddr || to >= vaddr + len) && scan->n_exits++ == 0) {
					scan->first_exit = at;
					scan->first_exit_to = to;
				}
			} else {
				scan->n_indirect_jumps++;
			}
		}
		pos += insn.length;
	}
	return scan->n_rets > cap ? -ENOSPC : 0;
}

bool x86ret__is_boundary(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t target)
{
	ZydisDecodedInstruction insn;
	ZydisDecoderContext context;
	ZydisDecoder decoder;
	size_t pos = 0;

	if (target < vaddr || target - vaddr >= len)
		return false;
	decoder__init(&decoder);
	while (vaddr + pos < target) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, &context, code + pos,
								len - pos, &insn)))
			return false;
		pos += insn.length;
	}
	return vaddr + pos == target;
}

int x86ret__format(const uint8_t *code, size_t len, uint64_t vaddr, char *text, size_t text_len)
{
	ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	ZydisFormatter formatter;
	ZydisDecoder decoder;

	decoder__init(&decoder);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code, len, &insn, operands))) {
		snprintf(text, text_len, "(bad)");
		return -EILSEQ;
	}
	ZydisFormatterInit(&formatter, ZYDIS_FORMATTER_STYLE_INTEL);
	if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&formatter, &insn, operands,
							  insn.operand_count_visible, text,
							  text_len, vaddr, NULL)))
		snprintf(text, text_len, "(unformattable)");
	return insn.length;
}

/* Is this `cmp REG, [r14+0x10]` with REG rsp or r12: the comparison against g.stackguard0
 * (R14 holds g in ABIInternal code) that opens every Go function that may grow its stack? */
static bool is_stackguard_cmp(const ZydisDecodedInstruction *insn,
			      const ZydisDecodedOperand *operands)
{
	if (insn->mnemonic != ZYDIS_MNEMONIC_CMP || insn->operand_count_visible != 2)
		return false;
	if (operands[0].type != ZYDIS_OPERAND_TYPE_REGISTER ||
	    (operands[0].reg.value != ZYDIS_REGISTER_RSP &&
	     operands[0].reg.value != ZYDIS_REGISTER_R12))
		return false;
	return operands[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
	       operands[1].mem.base == ZYDIS_REGISTER_R14 &&
	       operands[1].mem.index == ZYDIS_REGISTER_NONE && operands[1].mem.disp.value == 0x10;
}

bool x86ret__go_stack_check(const uint8_t *code, size_t len, uint64_t vaddr, char *text,
			    size_t text_len)
{
	ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	ZydisFormatter formatter;
	ZydisDecoder decoder;
	size_t pos = 0, used = 0;
	bool found = false;

	if (text_len)
		text[0] = '\0';
	decoder__init(&decoder);
	ZydisFormatterInit(&formatter, ZYDIS_FORMATTER_STYLE_INTEL);
	for (int i = 0; i < 3 && pos < len && !found; i++) {
		char one[96];

		if (!ZYAN_SUCCESS(
			ZydisDecoderDecodeFull(&decoder, code + pos, len - pos, &insn, operands))) {
			snprintf(one, sizeof(one), "(bad)");
			i = 3;
		} else {
			if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(
				&formatter, &insn, operands, insn.operand_count_visible, one,
				sizeof(one), vaddr + pos, NULL)))
				snprintf(one, sizeof(one), "(unformattable)");
			found = is_stackguard_cmp(&insn, operands);
			pos += insn.length;
		}
		if (used < text_len) {
			int n =
			    snprintf(text + used, text_len - used, "%s%s", used ? "; " : "", one);
			used += n > 0 ? (size_t)n : 0;
		}
	}
	return found;
}
