/* x86flow: where the 8-byte values a Go function stores on its stack and passes to calls come
 * from. One linear pass over the function's instructions (decoded with Capstone) follows values
 * that are loaded from a RIP-relative address (`mov r64, [rip+X]`: one word of a package
 * variable), taken as a RIP-relative address (`lea r64, [rip+X]`: a constant's address) or set
 * as an immediate, through register copies (16-byte XMM moves too: a string header copied
 * whole) and RSP-relative stack slots, and reports, in order:
 *   - every store to [rsp+disp], with the origin of each 8-byte word written (unknown for any
 *     write it does not model: a partial or vector store, a zeroing);
 *   - every call, with what the nine ABIInternal integer argument registers hold;
 *   - every other memory write it cannot place (through another base register, rep movs):
 *     such a write may hit any stack slot;
 *   - every return.
 * It is conservative so that an origin it reports holds on the straight-line path to the use:
 * registers and slots are forgotten at every target of a jump inside the function, after every
 * unconditional jump or return, and at every call (Go's ABIInternal saves no registers across a
 * call, and a callee such as duffcopy may write into the frame); any register write it does not
 * model makes that register unknown. Jump tables (indirect jumps) have targets it cannot see:
 * their count is reported, and callers validate what they read from the origins found.
 * Used to find link-time-stamped variables in stripped binaries (gorelease.c). */
#ifndef BINDTRACE_X86FLOW_H
#define BINDTRACE_X86FLOW_H

#include <stddef.h>
#include <stdint.h>

enum x86flow_kind {
	X86FLOW_UNKNOWN,
	X86FLOW_LOAD,	   /* the 8 bytes at address `value` (a RIP-relative load) */
	X86FLOW_ADDRESS,   /* the address `value` itself (a RIP-relative lea) */
	X86FLOW_IMMEDIATE, /* the constant `value` */
};

struct x86flow_value {
	enum x86flow_kind kind;
	uint64_t value;
};

enum x86flow_event_type {
	X86FLOW_STORE,	 /* 8 bytes at [rsp + rsp_disp] now hold `stored` */
	X86FLOW_CALL,	 /* a call, with the argument registers */
	X86FLOW_CLOBBER, /* a memory write that may have hit any stack slot */
	X86FLOW_RETURN,	 /* a RET: the stores before it are what the caller sees */
};

/* Go's ABIInternal integer argument registers, in order. */
enum {
	X86FLOW_RAX,
	X86FLOW_RBX,
	X86FLOW_RCX,
	X86FLOW_RDI,
	X86FLOW_RSI,
	X86FLOW_R8,
	X86FLOW_R9,
	X86FLOW_R10,
	X86FLOW_R11,
	X86FLOW_ARG_REGS
};

struct x86flow_event {
	enum x86flow_event_type type;
	uint64_t pc;				     /* the instruction's address */
	int64_t rsp_disp;			     /* STORE: 8-aligned displacement from RSP */
	struct x86flow_value stored;		     /* STORE */
	uint64_t call_target;			     /* CALL: a direct call's target, else 0 */
	struct x86flow_value args[X86FLOW_ARG_REGS]; /* CALL */
};

struct x86flow_stats {
	size_t n_insns;
	size_t n_indirect_jumps; /* jump tables: targets the pass cannot see */
	uint64_t bad_insn;	 /* where decoding failed (-EILSEQ) */
};

/* Called for each event in instruction order; a non-zero return stops the pass and is returned
 * by x86flow__scan. */
typedef int (*x86flow_event_fn)(const struct x86flow_event *event, void *ctx);

/* Decode code[0..len), loaded at vaddr, as one function and report its events. Returns 0, what
 * on_event returned to stop, -EILSEQ when some bytes do not decode (stats->bad_insn says where)
 * or -ENOMEM. stats may be NULL. */
int x86flow__scan(const uint8_t *code, size_t len, uint64_t vaddr, x86flow_event_fn on_event,
		  void *ctx, struct x86flow_stats *stats);

#endif
