/* PV EOI (pv_eoi.h). Only v's own CPU touches v->pv_eoi: the MSR write is
 * v's exit, the rest its entries and exits. */
#include "virt/pv_eoi.h"
#include "virt/kvm_pv.h"
#include "virt/sched.h"

bool pv_eoi_msr_write(struct vcpu *v, uint64_t val)
{
	uint8_t word;

	/* Checked as every guest address: guest memory, not MMIO. */
	if ((val & KVM_MSR_ENABLED) && mmu_read_guest(v->mmu, val & ~KVM_MSR_ENABLED, &word, 1))
		return false;
	v->pv_eoi.msr = val; /* nothing pending: the word was settled at this exit */
	return true;
}

void pv_eoi_after_exit(struct vcpu *v)
{
	if (!kvm_pv_eoi_after_exit(&v->pv_eoi, v->mmu))
		return;
	vm_lock(v->vm);
	lapic_eoi(v->apic);
	vm_unlock(v->vm, v);
	v->stats.pv_eois++;
}
