/* What svm/svm.c shares with the backend's other files: a CPU with SVM
 * enabled, and exception injection. The mirror of vmx/vmx.h. */
#pragma once
#include "svm/tlb.h"
#include "virt/backend.h"

/* Per physical CPU, in a frame of its own that this_cpu()->virt points to. */
struct svm_cpu {
	paddr_t hsave_pa;     /* VM_HSAVE_PA: where VMRUN keeps the host's state */
	paddr_t host_vmcb_pa; /* VMSAVE/VMLOAD area for the host's hidden state */
	struct svm_asid_space asids;
};

/* This CPU's SVM state; NULL before SVM is enabled on it. */
struct svm_cpu *svm_this_cpu(void);
/* The backend's inject_exception. */
void svm_inject_exception(struct vcpu *v, unsigned vector, uint32_t error_code);
