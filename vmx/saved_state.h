/* A VMX vCPU's saved state (snapshots, clones): the VMCS guest-state fields
 * and what the backend keeps beside the VMCS for the guest; and the checks
 * VM entry would make of it (SDM vol. 3C, 27.3.1 "Checks on the Guest State
 * Area", for an unrestricted guest), made before any of it reaches a VMCS so
 * that a crafted image gets a reason. svm/saved_state.h is its mirror. Pure
 * code, also built for the host. */
#pragma once
#include "virt/backend.h"

/* Segment registers in VMCS order. */
enum vmx_seg { VMX_ES, VMX_CS, VMX_SS, VMX_DS, VMX_FS, VMX_GS, VMX_LDTR, VMX_TR, VMX_SEGS };
/* MSRs the VM-entry MSR-load list switches, in list order. */
enum vmx_switched { VMX_KERNEL_GS_BASE, VMX_STAR, VMX_LSTAR, VMX_CSTAR, VMX_SFMASK,
		    VMX_SWITCHED_MSRS };

struct vmx_saved_state {
	uint64_t selector[VMX_SEGS], limit[VMX_SEGS], access[VMX_SEGS], base[VMX_SEGS];
	uint64_t gdtr_limit, gdtr_base, idtr_limit, idtr_base;
	uint64_t cr0, cr3, cr4, cr0_shadow, cr4_shadow, dr7, rsp, rip, rflags;
	uint64_t pending_dbg, sysenter_cs, sysenter_esp, sysenter_eip, debugctl, efer;
	uint64_t pdpte[4];
	uint64_t interruptibility, activity;
	/* The event the next entry delivers (VM-entry interruption information,
	 * error code, instruction length): paused between an exit and the next
	 * entry, a vCPU may hold one (as KVM's KVM_GET_VCPU_EVENTS keeps it);
	 * lost, an interrupt its APIC moved to in-service would stay there. */
	uint64_t entry_intr_info, entry_error_code, entry_insn_len;
	uint64_t switched_msr[VMX_SWITCHED_MSRS];
	uint64_t cr8, pat;
};

/* What this CPU accepts. */
struct vmx_state_limits {
	unsigned phys_bits;                /* MAXPHYADDR */
	uint64_t cr0_fixed0, cr0_fixed1;   /* IA32_VMX_CR0_FIXED0/1 */
	uint64_t cr4_fixed0, cr4_fixed1;   /* IA32_VMX_CR4_FIXED0/1 */
	uint64_t cr4_allowed;              /* CR4 bits the CPU implements */
	uint64_t efer_allowed;             /* EFER bits a guest may hold */
	uint64_t misc;                     /* IA32_VMX_MISC: activity states */
	unsigned va_bits;                  /* canonical width of bases and MSRs: 57 with LA57 */
};

/* regs hold RIP, RSP and RFLAGS, which virt/ keeps and the run loop writes
 * into the VMCS at every entry (the saved copies of those are not used).
 * The IA-32e-mode-guest entry control follows EFER.LMA. False with a reason. */
bool vmx_saved_state_check(const struct vmx_saved_state *s, const struct vcpu_regs *regs,
			   const struct vmx_state_limits *lim, char *err, size_t errlen);
