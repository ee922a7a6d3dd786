/* libFuzzer target: arbitrary bytes as one function's code through x86flow's value-origin pass
 * (the code of a binary bindtrace is pointed at is untrusted input too). Seeds: version.Get of
 * client-go and component-base from upstream kubectl builds, etcd's (*config).parse. */
#include <stddef.h>
#include <stdint.h>

#include "x86flow.h"

static int on_event(const struct x86flow_event *e, void *ctx)
{
	uint64_t *sum = ctx;

	*sum += e->pc + (uint64_t)e->rsp_disp + e->stored.value + e->call_target;
	for (int i = 0; i < X86FLOW_ARG_REGS; i++)
		*sum += e->args[i].value;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct x86flow_stats stats;
	uint64_t sum = 0;

	x86flow__scan(data, size, 0x401000, on_event, &sum, &stats);
	return 0;
}
