/* What the VMX backend's files share (vmx.c, cr.c): a CPU in VMX operation,
 * a vCPU's VMX state, the capabilities read at enable time, and the helpers
 * that one file defines and another calls. Not for virt/. */
#pragma once
#include "arch/x86/regs.h"
#include "virt/backend.h"
#include "vmx/caps.h"
#include "vmx/saved_state.h"
#include "vmx/tlb.h"
#include "vmx/vmcs.h"

struct vmx_msr_entry {
	uint32_t index;
	uint32_t reserved;
	uint64_t value;
};

/* A CPU in VMX operation. */
struct vmx_cpu {
	uint32_t apic_id;
	paddr_t vmxon_region;
	paddr_t current_vmcs; /* what VMPTRLD last made current; 0 for none */
};

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
	uint64_t host_cr0, host_cr3, host_cr4;
	uint64_t slice_end;  /* TSC at which the preemption timer's budget runs out */
	uint32_t exit_reason;
	uint64_t exit_qualification;
	uint32_t entry_error; /* VM-instruction error of a refused VMLAUNCH/VMRESUME */
};

/* What this CPU model allows, set once when VMX is first enabled. */
extern struct vmx_caps vmx_caps;

/* vmx.c */
void vmx_inject_exception(struct vcpu *v, unsigned vector);

/* event.c: interrupt and NMI injection, the guest's mode. */
void vmx_guest_mode(struct vcpu *v, struct guest_mode *m);
bool vmx_irq_allowed(struct vcpu *v);
void vmx_inject_irq(struct vcpu *v, uint8_t vector);
bool vmx_nmi_allowed(struct vcpu *v);
bool vmx_nmi_masked(struct vcpu *v);
void vmx_inject_nmi(struct vcpu *v);
void vmx_event_window(struct vcpu *v, bool irq, bool nmi);
/* After an exit: the event delivery it interrupted (e->vectoring,
 * e->vector), queued again (e->requeued), and the guest's NMI blocking as
 * that delivery or an interrupted IRET left it. */
void vmx_complete_events(struct vmx_vcpu *a, struct vexit *e);

/* cr.c: control-register emulation. The current VMCS is the vCPU's. */
uint64_t vmx_guest_cr0(struct vcpu *v);
uint64_t vmx_guest_cr4(struct vcpu *v);
/* The IA-32e-mode-guest entry control, kept equal to EFER.LMA. */
void vmx_set_ia32e_mode(bool on);
/* EFER as the MSR policy let it through. */
void vmx_write_efer(struct vmx_vcpu *a, uint64_t val);
/* A MOV to or from a control register that exited (reason 28). */
void vmx_handle_cr_access(struct vcpu *v, struct vmx_vcpu *a, uint64_t qual, struct vexit *e);

/* vmx.c: make the vCPU's VMCS current on this CPU; false if it is active
 * on another. */
bool vmcs_make_current(struct vmx_vcpu *a);

/* vmcs.c: the VMCS of a new vCPU, current on this CPU; false, reported on
 * the console, if a VMWRITE failed. */
bool vmx_vmcs_setup(struct vcpu *v, struct vmx_vcpu *a, paddr_t msr_bitmap);
/* The host-state fields for this CPU (after a move to it); false if a
 * VMWRITE failed. */
bool vmx_vmcs_host_state(struct vmx_vcpu *a);
/* INIT's guest state and a SIPI's CS, in the current VMCS. */
void vmx_vmcs_init_state(void);
void vmx_vmcs_sipi(uint8_t vector);
void vmx_vmcs_boot_selectors(uint32_t gdt_base, uint16_t gdt_limit, uint16_t cs, uint16_t ds);
/* The backend's dump, state_save, state_check and state_load. */
void vmx_dump(struct vcpu *v);
size_t vmx_state_save(struct vcpu *v, void *buf);
bool vmx_state_check(const void *buf, size_t len, const struct vcpu_regs *regs, char *err,
		     size_t errlen);
bool vmx_state_load(struct vcpu *v, const void *buf, size_t len);
