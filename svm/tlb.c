/* ASID assignment and the TLB_CONTROL of each VMRUN. */
#include "svm/tlb.h"
#include "svm/vmcb.h"

void svm_asid_space_init(struct svm_asid_space *s, uint32_t asids, unsigned cpu)
{
	s->limit = asids;
	s->generation = 1;
	s->next = asids;
	s->cpu = cpu;
}

uint8_t svm_asid_assign(struct svm_asid_space *s, struct svm_asid *a, bool *flush_pending,
			bool flush_by_asid)
{
	uint8_t tlb = TLB_CONTROL_NONE;

	if (a->generation != s->generation || a->cpu != s->cpu) {
		if (s->next >= s->limit) {
			s->generation++;
			s->next = 1;
			tlb = TLB_CONTROL_FLUSH_ALL;
		}
		a->asid = s->next++;
		a->generation = s->generation;
		a->cpu = s->cpu;
		/* A recycled ASID may still tag another VM's translations. */
		*flush_pending = true;
	}
	if (*flush_pending && tlb == TLB_CONTROL_NONE)
		tlb = flush_by_asid ? TLB_CONTROL_FLUSH_ASID : TLB_CONTROL_FLUSH_ALL;
	*flush_pending = false;
	return tlb;
}
