/* A vCPU's VMX state, which v->arch points to. Not for virt/. The mirror of
 * svm/svm_vcpu.h. */
#pragma once
#include "virt/backend.h"
#include "vmx/saved_state.h"
#include "vmx/tlb.h"
#include "vmx/vmcs.h"

struct vmx_msr_entry {
	uint32_t index;
	uint32_t reserved;
	uint64_t value;
};

struct vmx_cpu; /* vmx/vmx.h */

/* A vCPU's VMX state, in a frame of its own (the MSR list comes first: it
 * must be 16-byte aligned). */
struct vmx_vcpu {
	struct vmx_msr_entry msrs[VMX_SWITCHED_MSRS];
	paddr_t vmcs;
	struct vmx_cpu *cpu; /* where the VMCS is active and current; NULL once cleared */
	struct vmx_cpu *host_cpu; /* whose GDT, TSS and IDT its host-state fields name */
	struct vmx_tlb tlb;  /* the VPID (0 without) and its pending INVVPID */
	bool launched;
	uint64_t eptp;
	uint64_t pat;        /* kept for the guest to read; EPT leaves ignore it (IPAT) */
	uint64_t exit_rip;   /* RIP at the last exit: moved means virt/ skipped the instruction */
	uint32_t windows;    /* the interrupt/NMI-window exiting controls set in the VMCS */
	bool spin_exits;     /* PAUSE(-loop) exiting set in the VMCS */
	uint64_t host_cr0, host_cr3, host_cr4;
	uint64_t slice_end;  /* TSC at which the preemption timer's budget runs out */
	uint32_t exit_reason;
	uint64_t exit_qualification;
	uint32_t entry_error; /* VM-instruction error of a refused VMLAUNCH/VMRESUME */
};
