/* A VM's complete guest state, captured from a paused VM and loaded into a
 * new one: what snapshots store and what VM clones copy. */
#pragma once
#include "virt/vm.h"

#define VCPU_XSAVE_MAX 8192 /* fpu_vcpu_init's area is at most two pages */

/* One vCPU's. */
struct vcpu_state {
	char backend[8];       /* "svm" or "vmx": the arch part is the backend's */
	struct vcpu_regs regs;
	uint64_t xcr0;
	uint64_t guest_tsc;    /* the vCPU's TSC when captured: it resumes there */
	struct lapic_state apic; /* the local APIC, its timer in guest-TSC time */
	/* The run loop's (struct vcpu): 0 or 1 each, the rest zero. */
	uint8_t halted;        /* after HLT, waiting for an interrupt */
	uint8_t wait_sipi;     /* an AP after INIT, waiting for a start-up IPI */
	uint8_t reserved[2];
	uint32_t xsave_bytes;
	uint32_t arch_bytes;
	uint8_t xsave[VCPU_XSAVE_MAX];
	uint8_t arch[VCPU_ARCH_STATE_MAX] __attribute__((aligned(8))); /* the backend's struct */
};

/* The VM's: what its vCPUs share, then each vCPU's, vCPU i's APIC ID i. */
struct vm_saved_state {
	uint32_t nr_vcpus;     /* 1 to VM_VCPUS_MAX */
	uint32_t reserved;     /* zero */
	struct vm_uart uart;   /* the emulated COM1, a partial line included */
	struct vm_lost lost;   /* discards the guest has not collected (HC_LOST_RANGES) */
	struct vcpu_state vcpu[];
};

/* The bytes of a state of n vCPUs. */
static inline size_t vm_saved_state_bytes(unsigned n)
{
	return sizeof(struct vm_saved_state) + n * sizeof(struct vcpu_state);
}

/* Capture every vCPU of a VM that is not running (ready or paused) into st,
 * vm_saved_state_bytes(vm->nr_vcpus) long; false with a reason. */
bool vm_state_save(struct vm *vm, struct vm_saved_state *st, char *err, size_t errlen);
/* Everything in st that this machine would refuse or that could reach
 * beyond sprig's buffers (state_check.h, the backend's state_check); false
 * with a reason. st must be vm_saved_state_bytes(st->nr_vcpus) long (an image's
 * header said so, or a VM filled it). */
bool vm_state_check(const struct vm_saved_state *st, char *err, size_t errlen);
/* Load a checked state into a VM created with st->nr_vcpus vCPUs and never
 * run; false with a reason. */
bool vm_state_load(struct vm *vm, const struct vm_saved_state *st, char *err, size_t errlen);
