/* A vCPU state as multiboot starts a guest (32-bit protected mode, paging
 * off, flat 4 GiB segments, RIP at entry, the APIC at power-on), in each
 * backend's saved form: the valid starting point that the state-check tests,
 * the fuzz target and mksnap (tests/e2e) break one field of. */
#pragma once
#include "arch/x86/msr.h"
#include "svm/vmcb.h"
#include "virt/vcpu_state.h"
#include "vmx/saved_state.h"

void flat_svm_state(struct vmcb_save *s);
/* With CR0.NE and CR4.VMXE, which VMX fixes to one. */
void flat_vmx_state(struct vmx_saved_state *s);
/* A local APIC at power-on, the bootstrap processor's (lapic_init's state). */
void flat_lapic_state(struct lapic_state *s, uint32_t apic_id);
/* backend "svm" or "vmx"; xsave_bytes the FPU area's size, initial state. */
void flat_vcpu_state(struct vcpu_state *st, const char *backend, uint32_t xsave_bytes,
		     uint64_t entry);
