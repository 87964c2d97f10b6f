/* RDMSR and WRMSR as the guest sees them (virt/msr.c; the policy is in
 * msr_policy.c), and the guest's TSC. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct vcpu;

/* RDMSR and WRMSR exits. Returns true when the instruction completed and RIP may move past
 * it, false when it raised a fault in the guest or stopped the VM. */
bool emulate_rdmsr(struct vcpu *v);
bool emulate_wrmsr(struct vcpu *v);
/* The guest's TSC now (the host's plus its offset): the local APIC's clock. */
uint64_t guest_tsc(const struct vcpu *v);
/* Does this CPU have IA32_TSC_AUX (RDTSCP or RDPID)? */
bool cpu_has_tsc_aux(void);
/* A restored vCPU's paravirtual clock: its structure written anew for this
 * machine's TSC rate, when the guest enabled it. */
void msr_pvclock_resume(struct vcpu *v);
