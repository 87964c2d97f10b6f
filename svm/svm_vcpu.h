/* A vCPU's SVM state, which v->arch points to. Not for virt/. The mirror of
 * vmx/vmx_vcpu.h. */
#pragma once
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
