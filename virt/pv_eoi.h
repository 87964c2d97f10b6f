/* KVM's PV EOI for sprig's vCPUs (virt/kvm_pv.h has the word): before an
 * entry whose only EOI to come would just clear one ISR bit
 * (lapic_eoi_is_plain), sprig sets KVM_PV_EOI_ENABLED in the word the guest
 * named with MSR_KVM_PV_EOI_EN; a Linux guest then clears it instead of
 * writing the APIC's EOI register, and at the next exit sprig finds it
 * cleared and does the EOI (KVM's apic_sync_pv_eoi_to_guest and
 * apic_sync_pv_eoi_from_guest). At every exit the word is settled: nothing
 * of it outlives the vCPU's run, so a snapshot needs only the MSR. */
#pragma once
#include "virt/vm.h"

/* A write of MSR_KVM_PV_EOI_EN (reserved bit 1 already refused): false,
 * nothing changed, when enabling names a word outside guest memory (KVM's
 * #GP: kvm_lapic_set_pv_eoi finds no memslot for it). */
bool pv_eoi_msr_write(struct vcpu *v, uint64_t val);
/* After the exit (or an entry given up): the EOI the guest signalled
 * (kvm_pv_eoi_after_exit). Before the entry, kvm_pv_eoi_before_entry. */
void pv_eoi_after_exit(struct vcpu *v);
