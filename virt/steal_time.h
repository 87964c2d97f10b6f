/* KVM's steal time for sprig's vCPUs (virt/kvm_pv.h has the record): the
 * time a vCPU was runnable but waited while another vCPU had its CPU, which
 * virt/sched.c sees, published in the record the guest named with
 * MSR_KVM_STEAL_TIME each time the vCPU runs after a wait, with the
 * preempted flag while it waits. A TLB flush another vCPU left there
 * meanwhile (PV TLB flush) is posted to v's requests as it is taken up, and
 * its entry flushes: SVM's TLB_CONTROL on its ASID, VMX's INVEPT
 * single-context (which takes the guest's combined mappings too). */
#pragma once
#include "virt/vm.h"

/* A write of MSR_KVM_STEAL_TIME (reserved bits already refused): false,
 * nothing changed, when enabling names a record outside guest memory;
 * else the MSR takes it and an enabled record is written at once. */
bool steal_time_msr_write(struct vcpu *v, uint64_t val);
/* The scheduler's view of v at `now` (host TSC), on v's own CPU: it runs
 * now, waits for the CPU, or neither (halted, waiting for a SIPI). */
void steal_time_sched(struct vcpu *v, bool runs, bool waits, uint64_t now);
