/* An SVM vCPU's saved state (snapshots, clones): the VMCB state-save area
 * and the event delivery kept outside it; and the checks VMRUN would make of
 * it (APM vol. 2, 15.5.1 and 15.20), made before any of it reaches a VMCB, so
 * that a crafted image gets a reason rather than a VMEXIT_INVALID. Pure
 * code, also built for the host. vmx/saved_state.h is its mirror. */
#pragma once
#include "svm/vmcb.h"
#include "virt/backend.h"

/* The event state is what KVM's KVM_GET_VCPU_EVENTS keeps: paused between
 * an exit and the next entry, a vCPU may hold an event on its way in (an
 * interrupt its APIC already moved to in-service, or one whose delivery an
 * exit interrupted), an interrupt shadow, or an NMI handler still running.
 * Lost, the interrupt would stay in service forever. */
struct svm_saved_state {
	struct vmcb_save save;
	uint64_t event_inject; /* EVENTINJ: 0, or the event the next VMRUN delivers */
	uint64_t int_state;    /* INT_STATE_SHADOW or 0 */
	uint64_t nmi_masked;   /* 1 while an NMI handler runs (until its IRET), else 0 */
};

/* What this CPU accepts. */
struct svm_state_limits {
	unsigned phys_bits;    /* MAXPHYADDR */
	uint64_t cr4_allowed;  /* CR4 bits the CPU implements */
	uint64_t efer_allowed; /* EFER bits a guest may hold (SVME aside) */
	unsigned va_bits;      /* canonical width of bases and MSRs: 57 with LA57, else 48 */
};

/* regs hold RIP, RSP and RFLAGS, which virt/ keeps and the run loop copies
 * into the save area at every entry. False with a reason. */
bool svm_saved_state_check(const struct svm_saved_state *st, const struct vcpu_regs *regs,
			   const struct svm_state_limits *lim, char *err, size_t errlen);
