/* Steal time (steal_time.h). Only v's own CPU touches v->steal: the MSR
 * write is v's exit, the scheduler's calls come from the CPU's loop. */
#include "virt/steal_time.h"
#include "arch/x86/tsc.h"
#include "virt/kvm_pv.h"

static uint64_t record_gpa(const struct vcpu *v)
{
	return v->steal.msr & ~(KVM_STEAL_RESERVED_MASK | KVM_MSR_ENABLED);
}

/* The wait so far into the record; it no longer says preempted, and a
 * TLB flush another vCPU left there is v's next entry's (PV TLB flush). */
static void record(struct vcpu *v)
{
	struct kvm_steal *s = &v->steal;
	int flushed = kvm_steal_time_record(v->mmu, record_gpa(v), s->waited_ns - s->recorded_ns,
					    &v->kick);

	if (flushed < 0)
		return; /* the memory went (a slot removed): written again later */
	s->recorded_ns = s->waited_ns;
	s->preempted = false;
	v->stats.steal_records++;
	v->stats.pv_tlb_flushes += (uint64_t)flushed;
}

bool steal_time_msr_write(struct vcpu *v, uint64_t val)
{
	uint8_t rec[KVM_STEAL_TIME_SIZE];

	/* Checked as every guest address: guest memory, not MMIO. */
	if ((val & KVM_MSR_ENABLED) &&
	    mmu_read_guest(v->mmu, val & ~(KVM_STEAL_RESERVED_MASK | KVM_MSR_ENABLED), rec,
			   sizeof(rec)))
		return false;
	v->steal.msr = val;
	/* The guest's steal counts from here; the record keeps its own sum. */
	v->steal.recorded_ns = v->steal.waited_ns;
	if (val & KVM_MSR_ENABLED)
		record(v);
	return true;
}

void steal_time_sched(struct vcpu *v, bool runs, bool waits, uint64_t now)
{
	struct kvm_steal *s = &v->steal;

	if (s->wait_tsc) {
		s->waited_ns += tsc_to_ns(now - s->wait_tsc);
		s->wait_tsc = 0;
	}
	if (waits)
		s->wait_tsc = now ? now : 1;
	if (!(s->msr & KVM_MSR_ENABLED))
		return;
	if (runs && (s->waited_ns != s->recorded_ns || s->preempted))
		record(v);
	else if (waits && !s->preempted && !kvm_steal_time_preempt(v->mmu, record_gpa(v)))
		s->preempted = true;
}
