/* What the SVM backend's files share (svm.c, event.c): a vCPU's SVM state and
 * the helpers one file defines and another calls. Not for virt/. The mirror
 * of vmx/vmx_vcpu.h. */
#pragma once
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"
#include "svm/tlb.h"
#include "svm/vmcb.h"
#include "virt/backend.h"

struct svm_vcpu {
	struct vmcb *vmcb;
	paddr_t vmcb_pa;
	struct svm_asid asid;
	uint64_t exit_rip; /* RIP at the last exit: moved means virt/ skipped the instruction */
	/* SVM keeps no NMI blocking of its own (without vNMI): an injected NMI
	 * blocks the next one until the guest's IRET, which is intercepted;
	 * the IRET itself has not run at that exit, so NMIs stay blocked while
	 * RIP still points at it (iret_pending). */
	bool nmi_blocked;
	bool iret_pending;
	uint64_t iret_rip;
	/* Single-stepping (RFLAGS.TF, #DB intercepted) over what keeps a
	 * pending event out: the intercepted IRET, an STI or MOV SS shadow.
	 * step_wanted is svm_event_window's; the rest describes the entry that
	 * stepped: the guest's own TF and DR6 then. */
	bool step_wanted;
	bool stepping;
	bool step_guest_tf;
	uint64_t step_dr6;
};

/* event.c: interrupt and NMI injection, the guest's mode. */
void svm_guest_mode(struct vcpu *v, struct guest_mode *m);
bool svm_irq_allowed(struct vcpu *v);
void svm_inject_irq(struct vcpu *v, uint8_t vector);
bool svm_nmi_allowed(struct vcpu *v);
bool svm_nmi_masked(struct vcpu *v);
void svm_inject_nmi(struct vcpu *v);
void svm_event_window(struct vcpu *v, bool irq, bool nmi);
/* Before an entry: the STI/MOV SS shadow is gone once virt/ skipped the
 * exiting instruction; the single step svm_event_window asked for. */
void svm_prepare_events(struct vcpu *v);
/* After an exit, before it is decoded: whether the intercepted IRET ran,
 * and the guest's RFLAGS without the step's TF. */
void svm_complete_events(struct vcpu *v);
/* cr.c: an intercepted MOV to CR4, after the entry window: false when the
 * write raises #GP (nothing changed); e->kind says the rest. */
bool svm_write_cr4_exit(struct vcpu *v, struct vexit *e);
/* Exits: the IRET intercept, and the single step's #DB. */
void svm_iret_exit(struct svm_vcpu *sv);
void svm_step_trap(struct vcpu *v);
/* The event delivery the exit interrupted (EXITINTINFO): into e->vectoring
 * and e->vector, and queued again (e->requeued) when it is to be. */
void svm_requeue_interrupted_event(struct vmcb_control *c, struct vexit *e);
/* vmcb.c: the VMCB of a new vCPU, INIT, SIPI and boot selectors, the dump,
 * and the save area in snapshots (the backend's ops of those names). */
void svm_vmcb_setup(struct vcpu *v, struct vmcb *vmcb, paddr_t iopm_pa, paddr_t msrpm_pa);
void svm_init_state(struct vcpu *v);
void svm_sipi(struct vcpu *v, uint8_t vector);
void svm_boot_selectors(struct vcpu *v, uint32_t gdt_base, uint16_t gdt_limit, uint16_t cs,
			uint16_t ds);
void svm_dump(struct vcpu *v);
size_t svm_state_save(struct vcpu *v, void *buf);
bool svm_state_check(const void *buf, size_t len, const struct vcpu_regs *regs, char *err,
		     size_t errlen);
bool svm_state_load(struct vcpu *v, const void *buf, size_t len);
