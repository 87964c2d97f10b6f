/* A vCPU's complete guest state, captured from a paused VM and loaded into a
 * new one: what snapshots store and what VM clones copy. */
#pragma once
#include "virt/vm.h"

#define VCPU_XSAVE_MAX 8192 /* fpu_vcpu_init's area is at most two pages */
/* The APIC ID vm_create gives vCPU 0 (lapic_init in virt/vm.c), the one a
 * state captures: a saved APIC's initial ID must be it. */
#define VCPU_APIC_ID 0

struct vcpu_state {
	char backend[8];       /* "svm" or "vmx": the arch part is the backend's */
	struct vcpu_regs regs;
	uint64_t xcr0;
	uint64_t guest_tsc;    /* the guest's TSC when captured: it resumes there */
	struct vm_uart uart;   /* the emulated COM1, a partial line included */
	struct vm_lost lost;   /* discards the guest has not collected (HC_LOST_RANGES) */
	struct lapic_state apic; /* the local APIC, its timer in guest-TSC time */
	uint32_t xsave_bytes;
	uint32_t arch_bytes;
	uint8_t xsave[VCPU_XSAVE_MAX];
	uint8_t arch[VCPU_ARCH_STATE_MAX] __attribute__((aligned(8))); /* the backend's struct */
};

/* Capture a VM of one vCPU that is not running (ready or paused); false with
 * a reason (a VM of several vCPUs is refused: the image format holds one). */
bool vcpu_state_save(struct vm *vm, struct vcpu_state *st, char *err, size_t errlen);
/* Everything in st that this machine would refuse or that could reach
 * beyond sprig's buffers (state_check.h, the backend's state_check); false
 * with a reason. */
bool vcpu_state_check(const struct vcpu_state *st, char *err, size_t errlen);
/* Load a checked state into a VM created but never run; false with a reason. */
bool vcpu_state_load(struct vm *vm, const struct vcpu_state *st, char *err, size_t errlen);
