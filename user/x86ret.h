/* x86ret: the x86-64 instruction facts that probe placement in Go code needs, from Capstone
 * (the one x86 decoder of both the dynamic and the static build).
 * A function's bytes are decoded linearly from its entry to its end (Go emits no data in .text,
 * and pads between functions with INT3), so every address reported here is an instruction
 * boundary by construction: RET sites for return probes (never uretprobes on Go), whether an
 * address is a boundary, and whether an entry starts with Go's register-ABI stack check. */
#ifndef BINDTRACE_X86RET_H
#define BINDTRACE_X86RET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a linear decode of one function found. */
struct x86ret_scan {
	size_t n_insns;
	size_t n_rets;		 /* every RET, even those past the caller's capacity */
	size_t n_exits;		 /* direct jumps to outside the function (tail calls) */
	uint64_t first_exit;	 /* address of the first such jump */
	uint64_t first_exit_to;	 /* and its target */
	size_t n_indirect_jumps; /* jmp reg/mem: Go's jump tables, targets unknown */
	uint64_t bad_insn;	 /* where decoding failed (when the scan returned -EILSEQ) */
};

/* Decode code[0..len), loaded at vaddr, as one function. Writes up to cap RET addresses to rets.
 * Returns 0, -EILSEQ if some bytes do not decode (scan->bad_insn says where) or -ENOSPC if there
 * are more RETs than cap (scan->n_rets says how many). */
int x86ret__scan(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *rets, size_t cap,
		 struct x86ret_scan *scan);

/* Whether target is the start of an instruction when code[0..len) at vaddr is decoded from its
 * first byte. False when target is outside, mid-instruction, or decoding fails before it. */
bool x86ret__is_boundary(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t target);

/* Whether the bytes at a Go function entry begin with the ABIInternal stack-bound check
 * (`cmp rsp, [r14+0x10]`, or `lea r12, [rsp-N]` then `cmp r12, [r14+0x10]`) within the first
 * three instructions. The decoded instructions are written to text (Intel syntax, "; "
 * separated) either way, so a caller can say what it saw. */
bool x86ret__go_stack_check(const uint8_t *code, size_t len, uint64_t vaddr, char *text,
			    size_t text_len);

/* Format the instruction at code (loaded at vaddr) in Intel syntax. Returns its length, or
 * -EILSEQ (text then holds "(bad)"). */
int x86ret__format(const uint8_t *code, size_t len, uint64_t vaddr, char *text, size_t text_len);

/* From the first instructions of a Go function at code: the entry-SP-relative slots where the
 * prologue stores RAX, RBX and RCX (`push rbp; mov rbp, rsp; sub rsp, F; ... mov [rsp+D], reg`),
 * within 16 instructions and before any branch but the stack check's. Returns 0 with all three
 * set, -ENOENT when the prologue is not of that shape, or -ENOMEM. */
int x86ret__go_spill_slots(const uint8_t *code, size_t len, int *rax, int *rbx, int *rcx);

/* From the first instructions of a Go function at code: the offset from the entry of the
 * conditional branch of its stack check (`[lea r12, [rsp-N];] cmp rsp|r12, [r14+16]; jbe`). A
 * uprobe there sees the entry's registers and costs a fraction of one on the first instruction:
 * the kernel emulates a branch instead of single-stepping it out of line. Returns 0 with *at
 * set, -ENOENT for any other prologue, or -ENOMEM. */
int x86ret__go_stack_check_branch(const uint8_t *code, size_t len, uint64_t *at);

#endif
