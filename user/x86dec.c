/* x86dec: the Capstone handle behind x86ret and x86flow (see x86dec.h). */
#include "x86dec.h"

#include <errno.h>
#include <string.h>

int x86_decoder__open(struct x86_decoder *d, bool detail)
{
	memset(d, 0, sizeof(*d));
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &d->handle) != CS_ERR_OK)
		return -ENOMEM;
	if (detail)
		cs_option(d->handle, CS_OPT_DETAIL, CS_OPT_ON);
	d->insn = cs_malloc(d->handle);
	if (!d->insn) {
		cs_close(&d->handle);
		return -ENOMEM;
	}
	return 0;
}

void x86_decoder__close(struct x86_decoder *d)
{
	if (d->insn)
		cs_free(d->insn, 1);
	if (d->handle)
		cs_close(&d->handle);
	d->insn = NULL;
}

bool x86_decoder__next(struct x86_decoder *d, const uint8_t *code, size_t len, uint64_t vaddr,
		       size_t pos)
{
	const uint8_t *at = code + pos;
	size_t left = len - pos;
	uint64_t addr = vaddr + pos;

	return cs_disasm_iter(d->handle, &at, &left, &addr, d->insn);
}

bool x86_decoder__in_group(const struct x86_decoder *d, unsigned int group)
{
	return cs_insn_group(d->handle, d->insn, group);
}
