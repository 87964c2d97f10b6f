/* An SVM vCPU's saved state (snapshots, clones) is the VMCB state-save area;
 * these are the checks VMRUN would make of it (APM vol. 2, 15.5.1), made
 * before any of it reaches a VMCB, so that a crafted image gets a reason
 * rather than a VMEXIT_INVALID. Pure code, also built for the host. */
#pragma once
#include "svm/vmcb.h"
#include "virt/backend.h"

/* What this CPU accepts. */
struct svm_state_limits {
	unsigned phys_bits;    /* MAXPHYADDR */
	uint64_t cr4_allowed;  /* CR4 bits the CPU implements */
	uint64_t efer_allowed; /* EFER bits a guest may hold (SVME aside) */
	unsigned va_bits;      /* canonical width of bases and MSRs: 57 with LA57, else 48 */
};

/* regs hold RIP, RSP and RFLAGS, which virt/ keeps and the run loop copies
 * into the save area at every entry. False with a reason. */
bool svm_saved_state_check(const struct vmcb_save *s, const struct vcpu_regs *regs,
			   const struct svm_state_limits *lim, char *err, size_t errlen);
