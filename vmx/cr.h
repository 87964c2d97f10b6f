/* Control-register emulation for VMX (vmx/cr.c). The current VMCS is the
 * vCPU's. The mirror of svm/cr.h. */
#pragma once
#include "vmx/vmx_vcpu.h"

/* The backend's guest_cr0 and guest_cr4. */
uint64_t vmx_guest_cr0(struct vcpu *v);
uint64_t vmx_guest_cr4(struct vcpu *v);
/* The IA-32e-mode-guest entry control, kept equal to EFER.LMA. */
void vmx_set_ia32e_mode(bool on);
/* EFER as the MSR policy let it through. */
void vmx_write_efer(struct vmx_vcpu *a, uint64_t val);
/* A MOV to or from a control register that exited (reason 28). */
void vmx_handle_cr_access(struct vcpu *v, struct vmx_vcpu *a, uint64_t qual, struct vexit *e);
