/* What vmx/vmx.c shares with the backend's other files: a CPU in VMX
 * operation, the capabilities read at enable time, the current VMCS. The
 * mirror of svm/svm.h. */
#pragma once
#include "vmx/caps.h"
#include "vmx/vmx_vcpu.h"

/* A CPU in VMX operation. */
struct vmx_cpu {
	uint32_t apic_id;
	paddr_t vmxon_region;
	paddr_t current_vmcs; /* what VMPTRLD last made current; 0 for none */
};

/* What this CPU model allows, set once when VMX is first enabled. */
extern struct vmx_caps vmx_caps;
/* The preemption timer's budget in TSC cycles, set with vmx_caps. */
extern uint64_t preemption_budget_tsc;

/* Make the vCPU's VMCS current on this CPU; false if it is active on
 * another. */
bool vmcs_make_current(struct vmx_vcpu *a);
/* The backend's inject_exception. */
void vmx_inject_exception(struct vcpu *v, unsigned vector, uint32_t error_code);
