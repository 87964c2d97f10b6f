/* VPID allocation and the flushes a VMX entry needs. */
#include "vmx/tlb.h"

uint16_t vpid_alloc(struct vpid_pool *p)
{
	for (unsigned i = 0; i < VMX_MAX_VPIDS; i++) {
		if (!p->used[i]) {
			p->used[i] = true;
			return (uint16_t)(i + 1);
		}
	}
	return 0;
}

void vpid_free(struct vpid_pool *p, uint16_t vpid)
{
	if (vpid >= 1 && vpid <= VMX_MAX_VPIDS)
		p->used[vpid - 1] = false;
}

struct vmx_tlb_flush vmx_tlb_entry_flush(bool *ept_pending, struct vmx_tlb *t, unsigned cpu)
{
	bool moved = !t->entered || t->cpu != cpu;
	struct vmx_tlb_flush f = { .invept = *ept_pending || moved,
				   .invvpid = t->vpid_flush || (moved && t->vpid) };

	*ept_pending = false;
	t->vpid_flush = false;
	t->entered = true;
	t->cpu = cpu;
	return f;
}
